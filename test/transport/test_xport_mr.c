/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/transport, the key table: what dpv_mr_check() lets through, the generations of
 * dpv_mr_gen(), and memory windows as entries of the table (dpv_mw_*()).
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

/* A window is an entry of the table that no region look-up finds; bound, its key alone
 * opens its range with its rights (type 2: for its QP), and the bind's rules hold. */
static void mw_entries_bind_check_and_invalidate(void **state)
{
	static uint8_t buf[4096];
	const uint32_t rw = DPV_ACCESS_REMOTE_WRITE | DPV_ACCESS_REMOTE_READ;
	uint32_t k = mr_reg(ta, buf, sizeof(buf), DPV_ACCESS_LOCAL_WRITE | DPV_ACCESS_MW_BIND);
	uint32_t plain = mr_reg(ta, buf, sizeof(buf), DPV_ACCESS_LOCAL_WRITE);
	struct dpv_mw w1 = {.type = 1, .mr = {.pd = PD}}, w2 = {.type = 2, .mr = {.pd = PD}};
	const uintptr_t b = (uintptr_t)buf;
	uint32_t slot = 0, regions = 0, key;

	(void)state;
	assert_int_equal(dpv_mw_register(ta, &w1), 0);
	assert_int_equal(dpv_mw_register(ta, &w2), 0);
	while (dpv_mr_next(ta, &slot) != NULL)
		regions++;
	assert_int_equal(regions, 2);
	assert_null(dpv_mr_find(ta, w1.mr.rkey));
	/* not bound: refused; bound: its range, its rights, any QP for type 1 */
	assert_null(dpv_mw_check(ta, w1.mr.rkey, PD, 5, b, 8, 0));
	key = (w1.mr.rkey & ~0xffu) | 0x42u;
	assert_int_equal(dpv_mw_bind(ta, key, k, b + 1024, 1024, rw, PD, 5), DPV_WC_SUCCESS);
	assert_int_equal(w1.mr.rkey, key);
	assert_int_equal(dpv_mr_find(ta, k)->windows, 1);
	assert_non_null(dpv_mw_check(ta, key, PD, 6, b + 1024, 1024, DPV_ACCESS_REMOTE_WRITE));
	assert_null(dpv_mw_check(ta, key, PD, 6, b + 1023, 8, 0));
	assert_null(dpv_mw_check(ta, key, PD, 6, b + 2044, 8, 0));
	assert_null(dpv_mw_check(ta, key, PD, 6, b + 1024, 8, DPV_ACCESS_REMOTE_ATOMIC));
	assert_null(dpv_mw_check(ta, key ^ 1u, PD, 6, b + 1024, 8, 0));
	assert_null(dpv_mw_check(ta, key, PD + 1, 6, b + 1024, 8, 0));
	/* a window's key is never a region's */
	assert_null(dpv_mr_check(ta, key, PD, b + 1024, 8, 0));
	/* type 1 is not invalidated, only rebound; length 0 unbinds */
	assert_null(dpv_mw_inv_target(ta, key, PD, 5));
	assert_int_equal(dpv_mw_bind(ta, key + 1, 0, 0, 0, 0, PD, 5), DPV_WC_SUCCESS);
	assert_null(dpv_mw_check(ta, key + 1, PD, 5, b + 1024, 8, 0));
	assert_int_equal(dpv_mr_find(ta, k)->windows, 0);
	/* the bind's rules: MW_BIND, local write for remote write, the range, the PD, the
	 * window named by its index and generation */
	key = w2.mr.rkey;
	assert_int_equal(dpv_mw_bind(ta, key, plain, b, 8, rw, PD, 5), DPV_WC_MW_BIND_ERR);
	assert_int_equal(dpv_mw_bind(ta, key, k, b + 4090, 8, rw, PD, 5), DPV_WC_MW_BIND_ERR);
	assert_int_equal(dpv_mw_bind(ta, key, k, b, 0, rw, PD, 5), DPV_WC_MW_BIND_ERR);
	assert_int_equal(dpv_mw_bind(ta, key, k, b, 8, rw, PD + 1, 5), DPV_WC_MW_BIND_ERR);
	assert_int_equal(dpv_mw_bind(ta, key ^ 0x100u, k, b, 8, rw, PD, 5), DPV_WC_MW_BIND_ERR);
	assert_int_equal(dpv_mw_bind(ta, key, k, b, 8, rw, PD, 5), DPV_WC_SUCCESS);
	assert_int_equal(dpv_mw_bind(ta, key + 1, k, b, 8, rw, PD, 5), DPV_WC_MW_BIND_ERR);
	/* type 2B: its QP only; invalidated by its key, on its QP */
	assert_non_null(dpv_mw_check(ta, key, PD, 5, b, 8, DPV_ACCESS_REMOTE_READ));
	assert_null(dpv_mw_check(ta, key, PD, 6, b, 8, 0));
	assert_null(dpv_mw_inv_target(ta, key, PD, 6));
	assert_null(dpv_mw_inv_target(ta, key + 1, PD, 5));
	dpv_mw_unbind(dpv_mw_inv_target(ta, key, PD, 5));
	assert_null(dpv_mw_check(ta, key, PD, 5, b, 8, 0));
	assert_null(dpv_mw_inv_target(ta, key, PD, 5));
	/* deregistered: its slot's next key differs, and the region is free of it */
	assert_int_equal(dpv_mw_bind(ta, key, k, b, 8, rw, PD, 5), DPV_WC_SUCCESS);
	dpv_mw_deregister(ta, &w2);
	assert_int_equal(dpv_mr_find(ta, k)->windows, 0);
	assert_null(dpv_mw_check(ta, key, PD, 5, b, 8, 0));
	assert_int_equal(dpv_mw_bind(ta, key, k, b, 8, rw, PD, 5), DPV_WC_MW_BIND_ERR);
	dpv_mw_deregister(ta, &w1);
	mr_dereg(ta, plain);
	mr_dereg(ta, k);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(mr_check_covers_key_pd_range_and_access),
		cmocka_unit_test(mr_gen_permutes_and_does_not_step),
		cmocka_unit_test(mw_entries_bind_check_and_invalidate),
	};

	return XPORT_RUN_GROUP("transport_mr", tests, argc, argv) ? 1 : 0;
}
