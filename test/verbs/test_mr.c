/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory regions (doc/guides/memory.md): what ibv_reg_mr(3) and ibv_rereg_mr(3) refuse
 * and with which errno, that accepted regions' pages are locked, that keys and QP
 * numbers are not predictable, and that a deregistered key stays refused.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "verbs_test.h"

#define LW IBV_ACCESS_LOCAL_WRITE
#define RW (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE)
/* DPV_MAX_MR_SIZE, the longest region a device registers. */
#define MAX_MR_SIZE (64ull << 30)

static size_t page(void)
{
	return (size_t)getpagesize();
}

static void *map(size_t len, int prot)
{
	void *p = mmap(NULL, len, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	assert_true(p != MAP_FAILED);
	return p;
}

/* ibv_reg_mr() must fail with @p err. */
static void expect_refused(void *addr, size_t len, int access, int err)
{
	struct ibv_mr *mr;

	errno = 0;
	mr = ibv_reg_mr(A.pd, addr, len, access);
	if (mr != NULL)
		ibv_dereg_mr(mr);
	assert_null(mr);
	assert_int_equal(errno, err);
}

static void reg_refuses_a_range_that_wraps(void **state)
{
	(void)state;
	expect_refused((void *)(UINTPTR_MAX - page() + 1), 2 * page(), 0, EINVAL);
	expect_refused((void *)page(), SIZE_MAX, LW, EINVAL);
	expect_refused((void *)(UINTPTR_MAX - 15), 16, 0, EINVAL);
}

static void reg_refuses_a_range_longer_than_the_cap(void **state)
{
	void *buf = new_buf(64);

	(void)state;
	expect_refused(buf, MAX_MR_SIZE + 1, 0, ENOMEM);
	expect_refused(buf, (size_t)1 << 62, IBV_ACCESS_REMOTE_READ, ENOMEM);
}

static void reg_refuses_memory_that_is_not_mapped(void **state)
{
	char *p = map(3 * page(), PROT_READ | PROT_WRITE);
	struct ibv_mr *mr;

	(void)state;
	assert_int_equal(munmap(p + page(), page()), 0);
	expect_refused(p, 3 * page(), 0, EFAULT);
	expect_refused(p + page() - 1, 2, LW, EFAULT);
	expect_refused(p + page(), 1, 0, EFAULT);
	expect_refused(p + page() / 2, page(), RW, EFAULT);
	/* The mapped pages on either side are fine on their own. */
	mr = ibv_reg_mr(A.pd, p, page(), RW);
	assert_non_null(mr);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	mr = ibv_reg_mr(A.pd, p + 2 * page(), page(), RW);
	assert_non_null(mr);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	munmap(p, page());
	munmap(p + 2 * page(), page());
}

static void reg_refuses_write_access_to_a_read_only_mapping(void **state)
{
	char *ro = map(2 * page(), PROT_READ);
	char *none = map(page(), PROT_NONE);
	struct ibv_mr *mr;

	(void)state;
	expect_refused(ro, 2 * page(), LW, EFAULT);
	expect_refused(ro + 10, 10, RW, EFAULT);
	expect_refused(ro, page(), LW | IBV_ACCESS_REMOTE_ATOMIC, EFAULT);
	expect_refused(none, page(), 0, EFAULT);
	/* Reading is all a region without write rights is used for. */
	mr = ibv_reg_mr(A.pd, ro, 2 * page(), IBV_ACCESS_REMOTE_READ);
	assert_non_null(mr);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	munmap(ro, 2 * page());
	munmap(none, page());
}

static void rereg_makes_the_same_checks_and_leaves_the_region_as_it_was(void **state)
{
	char *rw = map(2 * page(), PROT_READ | PROT_WRITE);
	char *ro = map(page(), PROT_READ);
	struct ibv_mr *mr, *romr;

	(void)state;
	assert_int_equal(munmap(rw + page(), page()), 0);
	mr = ibv_reg_mr(A.pd, rw, page(), RW);
	assert_non_null(mr);
	errno = 0;
	assert_int_equal(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, rw, 2 * page(),
				      0), IBV_REREG_MR_ERR_INPUT);
	assert_int_equal(errno, EFAULT);
	errno = 0;
	assert_int_equal(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL,
				      (void *)(UINTPTR_MAX - 15), 32, 0), IBV_REREG_MR_ERR_INPUT);
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_int_equal(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, rw,
				      MAX_MR_SIZE + 1, 0), IBV_REREG_MR_ERR_INPUT);
	assert_int_equal(errno, ENOMEM);
	/* read-only memory under the region's write rights */
	errno = 0;
	assert_int_equal(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, ro, page(), 0),
			 IBV_REREG_MR_ERR_INPUT);
	assert_int_equal(errno, EFAULT);
	assert_ptr_equal(mr->addr, rw);
	assert_int_equal(mr->length, page());
	/* with the write rights dropped in the same call, it is accepted */
	assert_int_equal(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION |
				      IBV_REREG_MR_CHANGE_ACCESS, NULL, ro, page(),
				      IBV_ACCESS_REMOTE_READ), 0);
	assert_ptr_equal(mr->addr, ro);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	/* write rights asked for on read-only memory */
	romr = ibv_reg_mr(A.pd, ro, page(), 0);
	assert_non_null(romr);
	errno = 0;
	assert_int_equal(ibv_rereg_mr(romr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, LW),
			 IBV_REREG_MR_ERR_INPUT);
	assert_int_equal(errno, EFAULT);
	assert_int_equal(ibv_dereg_mr(romr), 0);
	munmap(rw, page());
	munmap(ro, page());
}

/* VmLck of /proc/self/status, in kB. */
static long vm_locked_kb(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kb = -1;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "VmLck: %ld kB", &kb) == 1)
			break;
	fclose(f);
	assert_true(kb >= 0);
	return kb;
}

static void accepted_regions_are_locked_and_shared_pages_stay_locked(void **state)
{
	const size_t len = 1u << 20; /* within the default RLIMIT_MEMLOCK of 8 MiB */
	char *p = map(len, PROT_READ | PROT_WRITE);
	long before = vm_locked_kb();
	struct ibv_mr *whole, *half;

	(void)state;
	/* Where RLIMIT_MEMLOCK leaves no room a region is registered unlocked, and
	 * AddressSanitizer's runtime makes mlock(2) do nothing: either way there is nothing
	 * to see in VmLck. */
	if (mlock(p, len) != 0 || vm_locked_kb() < before + (long)(len >> 10)) {
		whole = ibv_reg_mr(A.pd, p, len, RW);
		assert_non_null(whole);
		assert_int_equal(ibv_dereg_mr(whole), 0);
		munmap(p, len);
		skip();
	}
	munlock(p, len);
	whole = ibv_reg_mr(A.pd, p, len, RW);
	assert_non_null(whole);
	assert_true(vm_locked_kb() >= before + (long)(len >> 10));
	half = ibv_reg_mr(B.pd, p, len / 2, LW);
	assert_non_null(half);
	assert_true(vm_locked_kb() >= before + (long)(len >> 10));
	/* one munlock would unlock the half the other region still covers */
	assert_int_equal(ibv_dereg_mr(whole), 0);
	assert_true(vm_locked_kb() >= before + (long)(len >> 11));
	assert_true(vm_locked_kb() < before + (long)(len >> 10));
	assert_int_equal(ibv_dereg_mr(half), 0);
	assert_true(vm_locked_kb() <= before);
	munmap(p, len);
}

/* Keys of @p n regions registered one after another on @p s. */
static void keys_of(struct side *s, uint32_t *keys, int n)
{
	for (int i = 0; i < n; i++) {
		keys[i] = new_mr(s, 64, LW)->lkey;
		assert_int_not_equal(keys[i], 0);
	}
}

static void keys_of_successive_regions_are_not_predictable(void **state)
{
	enum { N = 32 };
	uint32_t a[N], b[N];
	int steady = 0, same = 0;

	(void)state;
	keys_of(&A, a, N);
	keys_of(&B, b, N);
	for (int i = 1; i < N; i++) {
		/* Equal steps would make every key the last plus a constant. */
		steady += a[i] - a[i - 1] == a[1] - a[0];
		same += a[i] == b[i];
	}
	assert_true(steady < 4);
	assert_true(same < 4);
	for (int i = 0; i < N; i++)
		for (int j = 0; j < i; j++)
			assert_int_not_equal(a[i], a[j]);
	/* Not the 0x100, 0x200, ... of a counter. */
	assert_true((a[0] & 0xff0000ffu) != 0 || (a[1] & 0xff0000ffu) != 0);
}

static void a_deregistered_key_is_refused_and_not_handed_out_again(void **state)
{
	enum { N = 2000 };
	const struct conn_opts o = {.access = IBV_ACCESS_REMOTE_WRITE, .timeout = 14,
				    .retry_cnt = 7, .max_rd_atomic = 16,
				    .max_dest_rd_atomic = 16};
	struct ibv_mr *smr = new_mr(&A, 256, LW), *rmr;
	struct ibv_mr **more = calloc(N, sizeof(*more));
	struct ibv_wc wc;
	struct rc_pair p;
	void *buf = new_buf(256);
	uint32_t stale;

	(void)state;
	assert_non_null(more);
	rc_pair(&p, &o);
	rmr = ibv_reg_mr(B.pd, buf, 256, RW);
	assert_non_null(rmr);
	stale = rmr->rkey;
	assert_int_equal(ibv_dereg_mr(rmr), 0);
	/* Registrations and deregistrations after it: the key comes back in none. */
	for (int i = 0; i < N; i++) {
		more[i] = ibv_reg_mr(B.pd, buf, 256, RW);
		assert_non_null(more[i]);
		assert_int_not_equal(more[i]->rkey, stale);
		if (i % 2 == 1) {
			assert_int_equal(ibv_dereg_mr(more[i]), 0);
			more[i] = NULL;
		}
	}
	fill_pattern(smr->addr, 256, 7);
	assert_int_equal(post_rdma(p.a, IBV_WR_RDMA_WRITE, 1, smr->addr, 256, smr->lkey,
				   (uintptr_t)buf, stale), 0);
	expect_wc(p.acq, &wc);
	assert_int_equal(wc.status, IBV_WC_REM_ACCESS_ERR);
	for (int i = 0; i < 256; i++)
		assert_int_equal(((uint8_t *)buf)[i], 0);
	for (int i = 0; i < N; i++)
		if (more[i] != NULL)
			assert_int_equal(ibv_dereg_mr(more[i]), 0);
	free(more);
}

static void qp_numbers_of_successive_qps_are_not_sequential(void **state)
{
	enum { N = 16 };
	struct ibv_cq *cq = new_cq(&A, 4, NULL, NULL);
	uint32_t qpn[N];
	int steps_of_one = 0;

	(void)state;
	for (int i = 0; i < N; i++) {
		qpn[i] = new_qp(&A, IBV_QPT_RC, cq, cq, NULL, 1, 1)->qp_num;
		assert_true(qpn[i] >= 2);
	}
	for (int i = 1; i < N; i++)
		steps_of_one += qpn[i] == qpn[i - 1] + 1;
	assert_true(steps_of_one < 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		VT(reg_refuses_a_range_that_wraps),
		VT(reg_refuses_a_range_longer_than_the_cap),
		VT(reg_refuses_memory_that_is_not_mapped),
		VT(reg_refuses_write_access_to_a_read_only_mapping),
		VT(rereg_makes_the_same_checks_and_leaves_the_region_as_it_was),
		VT(accepted_regions_are_locked_and_shared_pages_stay_locked),
		VT(keys_of_successive_regions_are_not_predictable),
		VT(a_deregistered_key_is_refused_and_not_handed_out_again),
		VT(qp_numbers_of_successive_qps_are_not_sequential),
	};

	sides_env_defaults("0");
	return SIDES_RUN_GROUP("mr", tests);
}
