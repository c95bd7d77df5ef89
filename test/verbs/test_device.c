/* SPDX-License-Identifier: BSD-3-Clause */
/* Devices and ports: the list, query_device_ex's tag-matching caps, port, GID, P_Key. */
#include <string.h>

#include "test_verbs.h"

static void device_list_has_dpv0_and_dpv1(void **state)
{
	struct ibv_device **again;
	int n = -1;

	(void)state;
	assert_int_equal(dev_count, 2);
	assert_string_equal(ibv_get_device_name(dev_list[0]), "dpv0");
	assert_string_equal(ibv_get_device_name(dev_list[1]), "dpv1");
	assert_null(dev_list[2]);
	assert_int_equal(dev_list[0]->node_type, IBV_NODE_CA);
	/* A second call lists the same devices. */
	again = ibv_get_device_list(&n);
	assert_non_null(again);
	assert_int_equal(n, 2);
	assert_ptr_equal(again[0], dev_list[0]);
	assert_ptr_equal(again[1], dev_list[1]);
	assert_null(again[2]);
	ibv_free_device_list(again);
}

static void query_device_ex_reports_tm_caps(void **state)
{
	struct ibv_device_attr_ex attr;

	(void)state;
	memset(&attr, 0xa5, sizeof(attr));
	assert_int_equal(ibv_query_device_ex(A.ctx, NULL, &attr), 0);
	assert_int_equal(attr.tm_caps.flags & IBV_TM_CAP_RC, IBV_TM_CAP_RC);
	assert_true(attr.tm_caps.max_num_tags >= 1048575u);
	assert_int_equal(attr.tm_caps.max_rndv_hdr_size, 64);
	assert_true(attr.tm_caps.max_ops >= 1);
	assert_true(attr.tm_caps.max_sge >= 1);
	assert_int_equal(attr.orig_attr.phys_port_cnt, 1);
	assert_true(attr.orig_attr.max_srq > 0);
	assert_true(attr.orig_attr.max_srq_wr > 0);
	assert_true(attr.orig_attr.max_srq_sge >= 1);
	assert_true(attr.orig_attr.max_qp_wr > 0);
	/* What ibv_reg_mr() and the READ limits enforce (test_mr.c, test_misuse.c). */
	assert_true(attr.orig_attr.max_mr_size == 64ull << 30);
	assert_int_equal(attr.orig_attr.max_qp_rd_atom, 16);
	assert_int_equal(attr.orig_attr.max_qp_init_rd_atom, 16);
}

static void query_port_active_ethernet_with_active_mtu(void **state)
{
	struct ibv_port_attr attr;

	(void)state;
	for (int i = 0; i < 2; i++) {
		struct side *s = i ? &B : &A;

		memset(&attr, 0xa5, sizeof(attr));
		assert_int_equal(ibv_query_port(s->ctx, 1, &attr), 0);
		assert_int_equal(attr.state, IBV_PORT_ACTIVE);
		assert_int_equal(attr.link_layer, IBV_LINK_LAYER_ETHERNET);
		/* A ring-pair port has the Ethernet MTU of 1500: RoCEv2 fits 1024 bytes. */
		assert_int_equal(attr.active_mtu, TEST_MTU);
		assert_true(attr.max_mtu >= attr.active_mtu);
		assert_true(attr.gid_tbl_len >= 1);
		assert_true(attr.pkey_tbl_len >= 1);
	}
	assert_int_not_equal(ibv_query_port(A.ctx, 2, &attr), 0);
}

static void expect_mapped(const union ibv_gid *gid, uint32_t ipv4)
{
	static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	assert_memory_equal(gid->raw, prefix, sizeof(prefix));
	assert_int_equal(gid->raw[12], ipv4 >> 24);
	assert_int_equal(gid->raw[13], (ipv4 >> 16) & 0xff);
	assert_int_equal(gid->raw[14], (ipv4 >> 8) & 0xff);
	assert_int_equal(gid->raw[15], ipv4 & 0xff);
}

static void query_gid_index0_is_ipv4_mapped(void **state)
{
	struct ibv_gid_entry entry;
	union ibv_gid gid;

	(void)state;
	assert_int_equal(ibv_query_gid(A.ctx, 1, 0, &gid), 0);
	expect_mapped(&gid, A.ipv4);
	assert_int_equal(ibv_query_gid(B.ctx, 1, 0, &gid), 0);
	expect_mapped(&gid, B.ipv4);
	assert_int_equal(ibv_query_gid_ex(A.ctx, 1, 0, &entry, 0), 0);
	expect_mapped(&entry.gid, A.ipv4);
	assert_int_equal(entry.gid_type, IBV_GID_TYPE_ROCE_V2);
	assert_int_not_equal(ibv_query_gid(A.ctx, 1, 1, &gid), 0);
}

static void query_pkey_index0_is_default(void **state)
{
	__be16 pkey = 0;

	(void)state;
	assert_int_equal(ibv_query_pkey(A.ctx, 1, 0, &pkey), 0);
	assert_int_equal(be16toh(pkey), 0xffff);
	assert_int_equal(ibv_query_pkey(B.ctx, 1, 0, &pkey), 0);
	assert_int_equal(be16toh(pkey), 0xffff);
	assert_int_not_equal(ibv_query_pkey(A.ctx, 1, 1, &pkey), 0);
}

int run_device_tests(void)
{
	const struct CMUnitTest tests[] = {
		VT(device_list_has_dpv0_and_dpv1),
		VT(query_device_ex_reports_tm_caps),
		VT(query_port_active_ethernet_with_active_mtu),
		VT(query_gid_index0_is_ipv4_mapped),
		VT(query_pkey_index0_is_default),
	};

	return cmocka_run_group_tests_name("device", tests, NULL, NULL);
}
