/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/transport, the key table: what dpv_mr_check() lets through and the generations of
 * dpv_mr_gen().
 */
#include <string.h>

#include "xport_test.h"

static void mr_check_covers_key_pd_range_and_access(void **state)
{
	static uint8_t buf[4096];
	uint32_t k = mr_reg(ta, buf, sizeof(buf), DPV_ACCESS_LOCAL_WRITE);
	uintptr_t b = (uintptr_t)buf;

	(void)state;
	assert_non_null(dpv_mr_check(ta, k, PD, b, sizeof(buf), 0));
	assert_non_null(dpv_mr_check(ta, k, PD, b + 4095, 1, DPV_ACCESS_LOCAL_WRITE));
	assert_non_null(dpv_mr_check(ta, k, PD, b + 4096, 0, 0));
	assert_null(dpv_mr_check(ta, k, PD, b + 4095, 2, 0));
	assert_null(dpv_mr_check(ta, k, PD, b - 1, 1, 0));
	assert_null(dpv_mr_check(ta, k, PD, b + 8, UINT64_MAX, 0));
	assert_null(dpv_mr_check(ta, k, PD + 1, b, 1, 0));
	assert_null(dpv_mr_check(ta, k, PD, b, 1, DPV_ACCESS_REMOTE_READ));
	assert_null(dpv_mr_check(ta, k + 1, PD, b, 1, 0));       /* other generation */
	assert_null(dpv_mr_check(ta, 0xffffff00u, PD, b, 1, 0)); /* beyond the table */
	mr_dereg(ta, k);
	assert_null(dpv_mr_check(ta, k, PD, b, 1, 0));
	assert_int_equal(dpv_xport_active_mtu(xa), MTU_1024); /* 1500-byte link */
}

/* dpv_mr_gen(): every use of a slot a distinct generation, and the next one not the
 * last plus one (nor the same for two slots, or two secrets). */
static void mr_gen_permutes_and_does_not_step(void **state)
{
	static uint8_t seen[65536];
	unsigned int steps = 0, same_slot = 0, same_secret = 0;

	(void)state;
	memset(seen, 0, sizeof(seen));
	for (uint32_t n = 0; n < 65536; n++) {
		uint16_t g = dpv_mr_gen(0x0123456789abcdefull, 77, (uint16_t)n);

		assert_int_equal(seen[g], 0);
		seen[g] = 1;
		steps += dpv_mr_gen(0x0123456789abcdefull, 77, (uint16_t)(n + 1)) == (uint16_t)(g + 1);
		same_slot += dpv_mr_gen(0x0123456789abcdefull, 78, (uint16_t)n) == g;
		same_secret += dpv_mr_gen(0xfedcba9876543210ull, 77, (uint16_t)n) == g;
	}
	/* As for a random permutation: about one in 65,536 of each by chance. */
	assert_true(steps < 16);
	assert_true(same_slot < 16);
	assert_true(same_secret < 16);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(mr_check_covers_key_pd_range_and_access),
		cmocka_unit_test(mr_gen_permutes_and_does_not_step),
	};

	return XPORT_RUN_GROUP("transport_mr", tests, argc, argv) ? 1 : 0;
}
