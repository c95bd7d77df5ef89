/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The device's copies through registered memory (dpv_xport_guard.c): every length up
 * to past the short copy's limit, at every alignment of source and destination, copies
 * exactly its bytes and touches nothing beside them; a copy whose source or
 * destination is not mapped (wholly, or from a page boundary on) returns false and is
 * counted, with the bytes before the boundary copied, and the thread goes on.
 * No EAL: the copies need none.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "dpv_xport_priv.h"

#ifdef XP_COPY_SHORT_MAX
#define LIMIT XP_COPY_SHORT_MAX
#else
#define LIMIT 128u
#endif
/* Lengths past the limit take the long copy: both sides of the boundary are tried. */
#define MAX_LEN (LIMIT + 40u)
#define ALIGNS 16u
#define GUARD 0xeeu

/* The device whose mem_faults counts the faults: nothing else of it is used. */
static struct dpv_xport *x;

static int setup(void **state)
{
	(void)state;
	x = calloc(1, sizeof(*x));
	return x == NULL ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	free(x);
	return 0;
}

static void every_length_and_alignment(void **state)
{
	uint8_t src[MAX_LEN + ALIGNS], dst[MAX_LEN + 2 * ALIGNS];
	uint32_t len, sa, da, i;

	(void)state;
	for (i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i * 7 + 1);
	for (len = 0; len <= MAX_LEN; len++)
		for (sa = 0; sa < ALIGNS; sa++)
			for (da = 0; da < ALIGNS; da++) {
				memset(dst, GUARD, sizeof(dst));
				assert_true(xp_copy(x, dst + ALIGNS / 2 + da, src + sa, len));
				for (i = 0; i < sizeof(dst); i++) {
					uint32_t off = i - (ALIGNS / 2 + da);
					uint8_t want = i >= ALIGNS / 2 + da && off < len ?
						src[sa + off] : GUARD;

					if (dst[i] != want)
						fail_msg("len %u src+%u dst+%u: byte %u is %#x, not %#x",
							 len, sa, da, i, dst[i], want);
				}
			}
	assert_int_equal(x->stats.mem_faults, 0);
}

/* Two pages, the second made inaccessible: a copy that reaches into it faults there. */
static uint8_t *half_mapped(long page)
{
	uint8_t *p = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			  -1, 0);

	assert_true(p != MAP_FAILED);
	assert_int_equal(mprotect(p + page, page, PROT_NONE), 0);
	return p;
}

static void faults_return_false_and_count(void **state)
{
	const long page = sysconf(_SC_PAGESIZE);
	static const uint32_t lens[] = { 1, 3, 4, 7, 8, 15, 16, 17, 64, LIMIT, LIMIT + 1, 4096 };
	uint8_t *p = half_mapped(page), buf[8192];
	uint64_t faults = x->stats.mem_faults;
	uint32_t i;

	(void)state;
	dpv_xport_fault_guard();
	memset(buf, 0x5a, sizeof(buf));
	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		/* Wholly inaccessible, both ways. */
		assert_false(xp_copy(x, buf, p + page, lens[i]));
		assert_false(xp_copy(x, p + page, buf, lens[i]));
		faults += 2;
		assert_int_equal(x->stats.mem_faults, faults);
	}
	/* Into the boundary: what lies before it is copied, at least up to the last
	 * 16 bytes before it, then the copy stops. */
	memset(p, 0, (size_t)page);
	assert_false(xp_copy(x, p + page - 64, buf, LIMIT));
	assert_int_equal(x->stats.mem_faults, faults + 1);
	for (i = 0; i < 48; i++)
		assert_int_equal(p[page - 64 + i], 0x5a);
	/* The thread goes on copying. */
	assert_true(xp_copy(x, p, buf, LIMIT));
	assert_memory_equal(p, buf, LIMIT);
	assert_int_equal(munmap(p, 2 * page), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_length_and_alignment),
		cmocka_unit_test(faults_return_false_and_count),
	};
	return cmocka_run_group_tests_name("xport_copy", tests, setup, teardown);
}
