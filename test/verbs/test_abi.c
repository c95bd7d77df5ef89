/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The rest of libibverbs' ABI (lib/verbs/verbs_abi.c). First, before EAL starts, what
 * needs no device: rate tables, kernel-struct conversions, the sysfs helpers, fork
 * status, import. Then on dpv0 and dpv1 of one ring pair ("A" and "B"): the GID type
 * and table, an AH built from a received datagram's GRH that carries a reply back,
 * neighbour MACs, re-registration of MRs seen from the wire, and the documented errors
 * of what dpverbs does not support.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <infiniband/sa.h>
#include <rdma/ib_user_sa.h>
#include <rdma/ib_user_verbs.h>

#include "verbs_test.h"
/* Only for the prototypes of the exported functions no installed header declares. */
#include "verbs_priv.h"

#define LW IBV_ACCESS_LOCAL_WRITE
#define RW IBV_ACCESS_REMOTE_WRITE
#define GRH 40u
#define QKEY 0x22220000u

/* ==== without a device ==== */

/* Each rate with its nominal Gb/s times 10, and whether it is a multiple of 2.5 Gb/s
 * for libibverbs (FDR and EDR lanes are not). */
static const struct {
	enum ibv_rate rate;
	int gbps10;
	bool has_mult;
} rates[] = {
	{IBV_RATE_2_5_GBPS, 25, true}, {IBV_RATE_5_GBPS, 50, true},
	{IBV_RATE_10_GBPS, 100, true}, {IBV_RATE_20_GBPS, 200, true},
	{IBV_RATE_30_GBPS, 300, true}, {IBV_RATE_40_GBPS, 400, true},
	{IBV_RATE_60_GBPS, 600, true}, {IBV_RATE_80_GBPS, 800, true},
	{IBV_RATE_120_GBPS, 1200, true}, {IBV_RATE_14_GBPS, 140, false},
	{IBV_RATE_56_GBPS, 560, false}, {IBV_RATE_112_GBPS, 1120, false},
	{IBV_RATE_168_GBPS, 1680, false}, {IBV_RATE_25_GBPS, 250, false},
	{IBV_RATE_100_GBPS, 1000, false}, {IBV_RATE_200_GBPS, 2000, false},
	{IBV_RATE_300_GBPS, 3000, false}, {IBV_RATE_28_GBPS, 280, true},
	{IBV_RATE_50_GBPS, 500, true}, {IBV_RATE_400_GBPS, 4000, true},
	{IBV_RATE_600_GBPS, 6000, true}, {IBV_RATE_800_GBPS, 8000, true},
	{IBV_RATE_1200_GBPS, 12000, true},
};

#define N_RATES (sizeof(rates) / sizeof(rates[0]))

static void rate_mult_table_round_trips(void **state)
{
	(void)state;
	for (size_t i = 0; i < N_RATES; i++) {
		int mult = ibv_rate_to_mult(rates[i].rate);

		if (!rates[i].has_mult) {
			assert_int_equal(mult, -1);
			continue;
		}
		/* A multiple of 2.5 Gb/s, rounded down (28 Gb/s is 11). */
		assert_int_equal(mult, rates[i].gbps10 / 25);
		assert_int_equal(mult_to_ibv_rate(mult), rates[i].rate);
	}
	assert_int_equal(ibv_rate_to_mult(IBV_RATE_5_GBPS), 2);
	assert_int_equal(ibv_rate_to_mult(IBV_RATE_MAX), -1);
	assert_int_equal(ibv_rate_to_mult((enum ibv_rate)99), -1);
	assert_int_equal(mult_to_ibv_rate(3), IBV_RATE_MAX);
	assert_int_equal(mult_to_ibv_rate(0), IBV_RATE_MAX);
	assert_int_equal(mult_to_ibv_rate(-1), IBV_RATE_MAX);
}

static void rate_mbps_table_round_trips(void **state)
{
	(void)state;
	for (size_t i = 0; i < N_RATES; i++) {
		int mbps = ibv_rate_to_mbps(rates[i].rate);
		int nominal = rates[i].gbps10 * 100;

		/* The data rate is the nominal one, or a little above (64b/66b lanes). */
		assert_true(mbps >= nominal - nominal / 100 && mbps <= nominal + nominal / 10);
		assert_int_equal(mbps_to_ibv_rate(mbps), rates[i].rate);
	}
	assert_int_equal(ibv_rate_to_mbps(IBV_RATE_5_GBPS), 5000);
	assert_int_equal(ibv_rate_to_mbps(IBV_RATE_14_GBPS), 14062);
	assert_int_equal(ibv_rate_to_mbps(IBV_RATE_25_GBPS), 25781);
	assert_int_equal(ibv_rate_to_mbps(IBV_RATE_100_GBPS), 103125);
	assert_int_equal(ibv_rate_to_mbps(IBV_RATE_50_GBPS), 53125);
	assert_int_equal(ibv_rate_to_mbps(IBV_RATE_1200_GBPS), 1275000);
	assert_int_equal(ibv_rate_to_mbps(IBV_RATE_MAX), -1);
	assert_int_equal(ibv_rate_to_mbps((enum ibv_rate)99), -1);
	assert_int_equal(mbps_to_ibv_rate(25000), IBV_RATE_MAX);
	assert_int_equal(mbps_to_ibv_rate(0), IBV_RATE_MAX);
}

static void fill_kern_ah(struct ib_uverbs_ah_attr *k, uint8_t base)
{
	for (int i = 0; i < 16; i++)
		k->grh.dgid[i] = (uint8_t)(base + i);
	k->grh.flow_label = 0x000abcd0u + base;
	k->grh.sgid_index = (uint8_t)(base + 20);
	k->grh.hop_limit = (uint8_t)(base + 21);
	k->grh.traffic_class = (uint8_t)(base + 22);
	k->dlid = (uint16_t)(0x1200 + base);
	k->sl = (uint8_t)(base + 23);
	k->src_path_bits = (uint8_t)(base + 24);
	k->static_rate = (uint8_t)(base + 25);
	k->is_global = 1;
	k->port_num = (uint8_t)(base + 26);
}

static void expect_ah_from_kern(const struct ibv_ah_attr *a, uint8_t base)
{
	for (int i = 0; i < 16; i++)
		assert_int_equal(a->grh.dgid.raw[i], (uint8_t)(base + i));
	assert_int_equal(a->grh.flow_label, 0x000abcd0u + base);
	assert_int_equal(a->grh.sgid_index, (uint8_t)(base + 20));
	assert_int_equal(a->grh.hop_limit, (uint8_t)(base + 21));
	assert_int_equal(a->grh.traffic_class, (uint8_t)(base + 22));
	assert_int_equal(a->dlid, 0x1200 + base);
	assert_int_equal(a->sl, (uint8_t)(base + 23));
	assert_int_equal(a->src_path_bits, (uint8_t)(base + 24));
	assert_int_equal(a->static_rate, (uint8_t)(base + 25));
	assert_int_equal(a->is_global, 1);
	assert_int_equal(a->port_num, (uint8_t)(base + 26));
}

static void copy_ah_attr_from_kern_field_by_field(void **state)
{
	struct ib_uverbs_ah_attr k;
	struct ibv_ah_attr a;

	(void)state;
	memset(&k, 0, sizeof(k));
	memset(&a, 0xaa, sizeof(a));
	fill_kern_ah(&k, 0x30);
	ibv_copy_ah_attr_from_kern(&a, &k);
	expect_ah_from_kern(&a, 0x30);
}

static void copy_qp_attr_from_kern_field_by_field(void **state)
{
	struct ib_uverbs_qp_attr k;
	struct ibv_qp_attr a;

	(void)state;
	memset(&k, 0, sizeof(k));
	k.qp_attr_mask = 0xffffffffu;
	k.qp_state = IBV_QPS_RTS;
	k.cur_qp_state = IBV_QPS_RTR;
	k.path_mtu = IBV_MTU_2048;
	k.path_mig_state = IBV_MIG_REARM;
	k.qkey = 0x11111111u;
	k.rq_psn = 0x222222u;
	k.sq_psn = 0x333333u;
	k.dest_qp_num = 0x444444u;
	k.qp_access_flags = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
	fill_kern_ah(&k.ah_attr, 0x40);
	fill_kern_ah(&k.alt_ah_attr, 0x80);
	k.max_send_wr = 101;
	k.max_recv_wr = 102;
	k.max_send_sge = 103;
	k.max_recv_sge = 104;
	k.max_inline_data = 105;
	k.pkey_index = 106;
	k.alt_pkey_index = 107;
	k.en_sqd_async_notify = 108;
	k.sq_draining = 109;
	k.max_rd_atomic = 110;
	k.max_dest_rd_atomic = 111;
	k.min_rnr_timer = 112;
	k.port_num = 113;
	k.timeout = 114;
	k.retry_cnt = 115;
	k.rnr_retry = 116;
	k.alt_port_num = 117;
	k.alt_timeout = 118;
	memset(&a, 0xaa, sizeof(a));
	ibv_copy_qp_attr_from_kern(&a, &k);
	assert_int_equal(a.qp_state, IBV_QPS_RTS);
	assert_int_equal(a.cur_qp_state, IBV_QPS_RTR);
	assert_int_equal(a.path_mtu, IBV_MTU_2048);
	assert_int_equal(a.path_mig_state, IBV_MIG_REARM);
	assert_int_equal(a.qkey, 0x11111111u);
	assert_int_equal(a.rq_psn, 0x222222u);
	assert_int_equal(a.sq_psn, 0x333333u);
	assert_int_equal(a.dest_qp_num, 0x444444u);
	assert_int_equal(a.qp_access_flags, IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
	assert_int_equal(a.cap.max_send_wr, 101);
	assert_int_equal(a.cap.max_recv_wr, 102);
	assert_int_equal(a.cap.max_send_sge, 103);
	assert_int_equal(a.cap.max_recv_sge, 104);
	assert_int_equal(a.cap.max_inline_data, 105);
	expect_ah_from_kern(&a.ah_attr, 0x40);
	expect_ah_from_kern(&a.alt_ah_attr, 0x80);
	assert_int_equal(a.pkey_index, 106);
	assert_int_equal(a.alt_pkey_index, 107);
	assert_int_equal(a.en_sqd_async_notify, 108);
	assert_int_equal(a.sq_draining, 109);
	assert_int_equal(a.max_rd_atomic, 110);
	assert_int_equal(a.max_dest_rd_atomic, 111);
	assert_int_equal(a.min_rnr_timer, 112);
	assert_int_equal(a.port_num, 113);
	assert_int_equal(a.timeout, 114);
	assert_int_equal(a.retry_cnt, 115);
	assert_int_equal(a.rnr_retry, 116);
	assert_int_equal(a.alt_port_num, 117);
	assert_int_equal(a.alt_timeout, 118);
	/* What the kernel's struct does not carry is left alone. */
	assert_int_equal(a.rate_limit, 0xaaaaaaaau);
}

static void fill_kern_path(struct ib_user_path_rec *k)
{
	memset(k, 0, sizeof(*k));
	for (int i = 0; i < 16; i++) {
		k->dgid[i] = (uint8_t)(0x10 + i);
		k->sgid[i] = (uint8_t)(0x50 + i);
	}
	k->dlid = htobe16(0x0102);
	k->slid = htobe16(0x0304);
	k->raw_traffic = 1;
	k->flow_label = htobe32(0x00056789u);
	k->reversible = 1;
	k->mtu = IBV_MTU_4096;
	k->pkey = htobe16(0x8001);
	k->hop_limit = 61;
	k->traffic_class = 62;
	k->numb_path = 63;
	k->sl = 9;
	k->mtu_selector = 2;
	k->rate_selector = 1;
	k->rate = IBV_RATE_40_GBPS;
	k->packet_life_time_selector = 3;
	k->packet_life_time = 18;
	k->preference = 64;
}

static void copy_path_rec_from_and_to_kern_field_by_field(void **state)
{
	struct ib_user_path_rec k, back;
	struct ibv_sa_path_rec p;

	(void)state;
	fill_kern_path(&k);
	memset(&p, 0xaa, sizeof(p));
	ibv_copy_path_rec_from_kern(&p, &k);
	for (int i = 0; i < 16; i++) {
		assert_int_equal(p.dgid.raw[i], 0x10 + i);
		assert_int_equal(p.sgid.raw[i], 0x50 + i);
	}
	assert_int_equal(be16toh(p.dlid), 0x0102);
	assert_int_equal(be16toh(p.slid), 0x0304);
	assert_int_equal(p.raw_traffic, 1);
	assert_int_equal(be32toh(p.flow_label), 0x00056789u);
	assert_int_equal(p.reversible, 1);
	assert_int_equal(p.mtu, IBV_MTU_4096);
	assert_int_equal(be16toh(p.pkey), 0x8001);
	assert_int_equal(p.hop_limit, 61);
	assert_int_equal(p.traffic_class, 62);
	assert_int_equal(p.numb_path, 63);
	assert_int_equal(p.sl, 9);
	assert_int_equal(p.mtu_selector, 2);
	assert_int_equal(p.rate_selector, 1);
	assert_int_equal(p.rate, IBV_RATE_40_GBPS);
	assert_int_equal(p.packet_life_time_selector, 3);
	assert_int_equal(p.packet_life_time, 18);
	assert_int_equal(p.preference, 64);
	/* And back: the very same kernel record, every byte. */
	memset(&back, 0xaa, sizeof(back));
	ibv_copy_path_rec_to_kern(&back, &p);
	assert_memory_equal(&back, &k, sizeof(k));
}

/* The default needs a process that has not asked yet: the answer is decided once. */
static void sysfs_path_default_then_env(void **state)
{
	pid_t pid;
	int status;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		unsetenv("SYSFS_PATH");
		_exit(strcmp(ibv_get_sysfs_path(), "/sys") == 0 ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);

	setenv("SYSFS_PATH", "/tmp/dpv-sysfs//", 1);
	assert_string_equal(ibv_get_sysfs_path(), "/tmp/dpv-sysfs");
	/* Decided at the first call. */
	setenv("SYSFS_PATH", "/elsewhere", 1);
	assert_string_equal(ibv_get_sysfs_path(), "/tmp/dpv-sysfs");
	unsetenv("SYSFS_PATH");
}

static void write_file(const char *dir, const char *name, const char *content)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(content, 1, strlen(content), f), strlen(content));
	assert_int_equal(fclose(f), 0);
}

static void remove_file(const char *dir, const char *name)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	unlink(path);
}

static void read_sysfs_file_strips_newline(void **state)
{
	char dir[] = "/tmp/dpv-abi-XXXXXX", buf[16];

	(void)state;
	assert_non_null(mkdtemp(dir));
	write_file(dir, "nl", "RoCE v2\n");
	write_file(dir, "plain", "abc");
	write_file(dir, "empty", "");
	write_file(dir, "fits", "0123456789abcde\n"); /* 15 + newline: exactly 16 */
	write_file(dir, "full", "0123456789abcdef");  /* 16, no room for the NUL */
	write_file(dir, "long", "0123456789abcdef\n");

	memset(buf, 'x', sizeof(buf));
	assert_int_equal(ibv_read_sysfs_file(dir, "nl", buf, sizeof(buf)), 7);
	assert_string_equal(buf, "RoCE v2");
	memset(buf, 'x', sizeof(buf));
	assert_int_equal(ibv_read_sysfs_file(dir, "plain", buf, sizeof(buf)), 3);
	assert_string_equal(buf, "abc");
	assert_int_equal(ibv_read_sysfs_file(dir, "empty", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "");
	assert_int_equal(ibv_read_sysfs_file(dir, "fits", buf, sizeof(buf)), 15);
	assert_string_equal(buf, "0123456789abcde");
	errno = 0;
	assert_int_equal(ibv_read_sysfs_file(dir, "full", buf, sizeof(buf)), -1);
	assert_int_equal(errno, ERANGE);
	errno = 0;
	assert_int_equal(ibv_read_sysfs_file(dir, "long", buf, sizeof(buf)), -1);
	assert_int_equal(errno, ERANGE);
	errno = 0;
	assert_int_equal(ibv_read_sysfs_file(dir, "missing", buf, sizeof(buf)), -1);
	assert_int_equal(errno, ENOENT);
	errno = 0;
	assert_int_equal(ibv_read_sysfs_file(dir, "nl", buf, 0), -1);
	assert_int_equal(errno, EINVAL);

	remove_file(dir, "nl");
	remove_file(dir, "plain");
	remove_file(dir, "empty");
	remove_file(dir, "fits");
	remove_file(dir, "full");
	remove_file(dir, "long");
	assert_int_equal(rmdir(dir), 0);
}

static void fork_needs_nothing(void **state)
{
	char buf[4096];

	(void)state;
	assert_int_equal(ibv_is_fork_initialized(), IBV_FORK_UNNEEDED);
	assert_int_equal(ibv_fork_init(), 0);
	assert_int_equal(ibv_is_fork_initialized(), IBV_FORK_UNNEEDED);
	assert_int_equal(ibv_dontfork_range(buf, sizeof(buf)), 0);
	assert_int_equal(ibv_dofork_range(buf, sizeof(buf)), 0);
}

static void import_device_is_unsupported(void **state)
{
	(void)state;
	errno = 0;
	assert_null(ibv_import_device(0));
	assert_int_equal(errno, EOPNOTSUPP);
}

static int run_pure_tests(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(rate_mult_table_round_trips),
		cmocka_unit_test(rate_mbps_table_round_trips),
		cmocka_unit_test(copy_ah_attr_from_kern_field_by_field),
		cmocka_unit_test(copy_qp_attr_from_kern_field_by_field),
		cmocka_unit_test(copy_path_rec_from_and_to_kern_field_by_field),
		cmocka_unit_test(sysfs_path_default_then_env),
		cmocka_unit_test(read_sysfs_file_strips_newline),
		cmocka_unit_test(fork_needs_nothing),
		cmocka_unit_test(import_device_is_unsupported),
	};

	return cmocka_run_group_tests_name("abi_no_device", tests, NULL, NULL);
}

/* ==== on dpv0 and dpv1 ==== */

static void gid_type_is_roce_v2(void **state)
{
	enum ibv_gid_type_sysfs type = (enum ibv_gid_type_sysfs)7;

	(void)state;
	assert_int_equal(ibv_query_gid_type(A.ctx, 1, 0, &type), 0);
	assert_int_equal(type, IBV_GID_TYPE_SYSFS_ROCE_V2);
	assert_int_equal(IBV_GID_TYPE_SYSFS_ROCE_V2, 1); /* the ABI's value */
	errno = 0;
	assert_int_equal(ibv_query_gid_type(A.ctx, 1, 1, &type), -1);
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_int_equal(ibv_query_gid_type(A.ctx, 2, 0, &type), -1);
	assert_int_equal(errno, EINVAL);
}

static void gid_table_lists_the_one_gid(void **state)
{
	struct ibv_gid_entry e[4];
	unsigned char wide[2][sizeof(struct ibv_gid_entry) + 8];
	struct ibv_gid_entry w;

	(void)state;
	memset(e, 0xff, sizeof(e));
	assert_int_equal(ibv_query_gid_table(B.ctx, e, 4, 0), 1);
	assert_memory_equal(e[0].gid.raw, B.gid.raw, 16);
	assert_int_equal(e[0].gid_index, 0);
	assert_int_equal(e[0].port_num, 1);
	assert_int_equal(e[0].gid_type, IBV_GID_TYPE_ROCE_V2);
	assert_int_equal(e[0].ndev_ifindex, 0);
	assert_int_equal(e[1].gid_index, 0xffffffffu); /* nothing past the count */

	/* A newer caller's longer entries: the stride is theirs, the tail zeroed. */
	memset(wide, 0xff, sizeof(wide));
	assert_int_equal(_ibv_query_gid_table(A.ctx, (struct ibv_gid_entry *)(void *)wide, 2, 0,
					      sizeof(wide[0])), 1);
	memcpy(&w, wide[0], sizeof(w));
	assert_memory_equal(w.gid.raw, A.gid.raw, 16);
	for (size_t i = sizeof(w); i < sizeof(wide[0]); i++)
		assert_int_equal(wide[0][i], 0);
	assert_int_equal(wide[1][0], 0xff);

	assert_int_equal(ibv_query_gid_table(A.ctx, e, 0, 0), -EINVAL);
	assert_int_equal(ibv_query_gid_table(A.ctx, e, 4, 1), -EINVAL);
	assert_int_equal(_ibv_query_gid_table(A.ctx, e, 4, 0, sizeof(e[0]) - 4), -EINVAL);
}

struct ud {
	struct ibv_cq *acq, *bcq;
	struct ibv_qp *a, *b;
	struct ibv_mr *amr, *bmr;
};

static void ud_setup(struct ud *u)
{
	u->acq = new_cq(&A, 16, NULL, NULL);
	u->bcq = new_cq(&B, 16, NULL, NULL);
	u->a = new_qp(&A, IBV_QPT_UD, u->acq, u->acq, NULL, 8, 8);
	u->b = new_qp(&B, IBV_QPT_UD, u->bcq, u->bcq, NULL, 8, 8);
	ud_to_rts(u->a, QKEY);
	ud_to_rts(u->b, QKEY);
	u->amr = new_mr(&A, 4096, LW);
	u->bmr = new_mr(&B, 4096, LW);
}

static int ud_post(struct ibv_qp *qp, struct ibv_ah *ah, uint32_t remote_qpn, uint64_t wr_id,
		   const void *addr, uint32_t len, uint32_t lkey)
{
	struct ibv_sge sge = {(uintptr_t)addr, len, lkey};
	struct ibv_send_wr wr, *bad = NULL;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = remote_qpn;
	wr.wr.ud.remote_qkey = QKEY;
	return ibv_post_send(qp, &wr, &bad);
}

/* A datagram A to B whose AH asks for traffic class @p tclass; B's completion and the
 * GRH area it received. */
static void ud_a_to_b(struct ud *u, uint8_t tclass, struct ibv_wc *wc, uint8_t **grh)
{
	struct ibv_ah_attr attr = {
		.is_global = 1,
		.port_num = 1,
		.grh = {.dgid = B.gid, .hop_limit = 9, .traffic_class = tclass},
	};
	struct ibv_ah *ah = ibv_create_ah(A.pd, &attr);
	uint8_t *abuf = u->amr->addr, *bbuf = u->bmr->addr;
	int ret;

	assert_non_null(ah);
	fill_pattern(abuf, 100, 71);
	assert_int_equal(post_recv(u->b, 10, bbuf, GRH + 1024, u->bmr->lkey), 0);
	ret = ud_post(u->a, ah, u->b->qp_num, 11, abuf, 100, u->amr->lkey);
	assert_int_equal(ibv_destroy_ah(ah), 0); /* the WQE holds the address */
	assert_int_equal(ret, 0);
	expect_wc(u->bcq, wc);
	assert_int_equal(wc->status, IBV_WC_SUCCESS);
	assert_int_equal(wc->wc_flags & IBV_WC_GRH, IBV_WC_GRH);
	assert_int_equal(wc->src_qp, u->a->qp_num);
	assert_true(check_pattern(bbuf + GRH, 100, 71));
	expect_send_ok(u->acq, 11, IBV_WC_SEND);
	*grh = bbuf;
}

static void ah_from_wc_carries_the_reply_back(void **state)
{
	struct ibv_ah_attr attr;
	struct ibv_wc wc, awc;
	struct ibv_ah *reply;
	uint8_t *grh, *abuf, *bbuf;
	struct ud u;

	(void)state;
	ud_setup(&u);
	/* DSCP 10 with a Congestion Experienced mark: the reply keeps only the DSCP. */
	ud_a_to_b(&u, 0x2b, &wc, &grh);

	memset(&attr, 0xaa, sizeof(attr));
	assert_int_equal(ibv_init_ah_from_wc(B.ctx, 1, &wc, (struct ibv_grh *)(void *)grh,
					     &attr), 0);
	assert_int_equal(attr.is_global, 1);
	assert_memory_equal(attr.grh.dgid.raw, A.gid.raw, 16);
	assert_int_equal(attr.grh.sgid_index, 0);
	assert_int_equal(attr.grh.hop_limit, 0xff);
	assert_int_equal(attr.grh.traffic_class, 0x28);
	assert_int_equal(attr.grh.flow_label, 0);
	assert_int_equal(attr.port_num, 1);
	assert_int_equal(attr.dlid, 0);
	assert_int_equal(attr.sl, 0);

	/* The reply, on an AH made from the completion, reaches the sender's QP. */
	reply = ibv_create_ah_from_wc(B.pd, &wc, (struct ibv_grh *)(void *)grh, 1);
	assert_non_null(reply);
	abuf = u.amr->addr;
	bbuf = u.bmr->addr;
	memset(abuf, 0, 4096);
	fill_pattern(bbuf + 2048, 300, 72);
	assert_int_equal(post_recv(u.a, 20, abuf, GRH + 1024, u.amr->lkey), 0);
	assert_int_equal(ud_post(u.b, reply, wc.src_qp, 21, bbuf + 2048, 300, u.bmr->lkey), 0);
	expect_wc(u.acq, &awc);
	assert_int_equal(ibv_destroy_ah(reply), 0);
	assert_int_equal(awc.status, IBV_WC_SUCCESS);
	assert_int_equal(awc.wr_id, 20);
	assert_int_equal(awc.byte_len, GRH + 300);
	assert_int_equal(awc.src_qp, u.b->qp_num);
	assert_true(check_pattern(abuf + GRH, 300, 72));
	/* It came from B with the DSCP and the largest hop limit (IPv4 TOS and TTL). */
	assert_int_equal(abuf[21], 0x28);
	assert_int_equal(abuf[28], 0xff);
	assert_memory_equal(abuf + 32, B.gid.raw + 12, 4);
	expect_send_ok(u.bcq, 21, IBV_WC_SEND);
}

static void ah_from_wc_needs_an_ipv4_grh_to_a_local_gid(void **state)
{
	struct ibv_ah_attr attr;
	struct ibv_wc wc, nogrh;
	struct ibv_grh g;
	uint8_t *grh, *raw = (uint8_t *)&g;
	struct ud u;

	(void)state;
	ud_setup(&u);
	ud_a_to_b(&u, 0, &wc, &grh);
	assert_int_equal(sizeof(g), GRH);

	/* A completion without a GRH (IBV_WC_GRH unset) has no address to answer. */
	nogrh = wc;
	nogrh.wc_flags &= ~(unsigned int)IBV_WC_GRH;
	memcpy(&g, grh, GRH);
	errno = 0;
	assert_int_equal(ibv_init_ah_from_wc(B.ctx, 1, &nogrh, &g, &attr), -1);
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_null(ibv_create_ah_from_wc(B.pd, &nogrh, &g, 1));
	assert_int_equal(errno, EINVAL);
	/* No IPv4 header in bytes 20..39. */
	raw[20] = 0x60;
	errno = 0;
	assert_int_equal(ibv_init_ah_from_wc(B.ctx, 1, &wc, &g, &attr), -1);
	assert_int_equal(errno, EINVAL);
	/* Sent to an address that is no GID of this port. */
	memcpy(&g, grh, GRH);
	raw[39] ^= 0x40;
	errno = 0;
	assert_int_equal(ibv_init_ah_from_wc(B.ctx, 1, &wc, &g, &attr), -1);
	assert_int_equal(errno, EINVAL);
	/* No port 2. */
	memcpy(&g, grh, GRH);
	errno = 0;
	assert_int_equal(ibv_init_ah_from_wc(B.ctx, 2, &wc, &g, &attr), -1);
	assert_int_equal(errno, EINVAL);
	/* The untouched copy still works. */
	assert_int_equal(ibv_init_ah_from_wc(B.ctx, 1, &wc, &g, &attr), 0);
}

/* A port's MAC from its node GUID (an EUI-64 made of the MAC). */
static void mac_of(const struct side *s, uint8_t mac[6])
{
	__be64 guid = ibv_get_device_guid(s->dev);
	uint8_t g[8];

	memcpy(g, &guid, sizeof(g));
	assert_int_equal(g[3], 0xff);
	assert_int_equal(g[4], 0xfe);
	mac[0] = g[0] ^ 2;
	mac[1] = g[1];
	mac[2] = g[2];
	mac[3] = g[5];
	mac[4] = g[6];
	mac[5] = g[7];
}

static void resolve_eth_l2_finds_neighbour_macs(void **state)
{
	struct ibv_ah_attr attr = {.is_global = 1, .port_num = 1};
	uint8_t mac[6], want_a[6], want_b[6];
	uint16_t vid = 0;
	uint64_t t0;

	(void)state;
	mac_of(&A, want_a);
	mac_of(&B, want_b);
	assert_memory_not_equal(want_a, want_b, 6);

	attr.grh.dgid = B.gid;
	memset(mac, 0, sizeof(mac));
	assert_int_equal(ibv_resolve_eth_l2_from_gid(A.ctx, &attr, mac, &vid), 0);
	assert_memory_equal(mac, want_b, 6);
	assert_int_equal(vid, 0xffff); /* untagged */
	attr.grh.dgid = A.gid;
	assert_int_equal(ibv_resolve_eth_l2_from_gid(B.ctx, &attr, mac, NULL), 0);
	assert_memory_equal(mac, want_a, 6);
	assert_int_equal(ibv_resolve_eth_l2_from_gid(A.ctx, &attr, mac, NULL), 0);
	assert_memory_equal(mac, want_a, 6);

	attr.is_global = 0;
	assert_int_equal(ibv_resolve_eth_l2_from_gid(A.ctx, &attr, mac, NULL), -EINVAL);
	attr.is_global = 1;
	attr.grh.sgid_index = 1;
	assert_int_equal(ibv_resolve_eth_l2_from_gid(A.ctx, &attr, mac, NULL), -EINVAL);
	attr.grh.sgid_index = 0;
	memset(attr.grh.dgid.raw, 0, 16);
	attr.grh.dgid.raw[0] = 0xfe;
	assert_int_equal(ibv_resolve_eth_l2_from_gid(A.ctx, &attr, mac, NULL), -EINVAL);

	/* Nobody answers ARP for an address next to B's: given up after its wait. */
	attr.grh.dgid = B.gid;
	attr.grh.dgid.raw[15] ^= 0x40;
	t0 = now_ms();
	assert_int_equal(ibv_resolve_eth_l2_from_gid(A.ctx, &attr, mac, NULL), -EHOSTUNREACH);
	assert_true(now_ms() - t0 >= 2900);
}

/* B writes @p len bytes of pattern @p seed to @p raddr with @p rkey; the status. */
static enum ibv_wc_status write_from_b(struct rc_pair *p, struct ibv_mr *src, uint64_t wr_id,
				       uint64_t raddr, uint32_t rkey, uint32_t len,
				       uint32_t seed)
{
	struct ibv_wc wc;

	fill_pattern(src->addr, len, seed);
	assert_int_equal(post_rdma(p->b, IBV_WR_RDMA_WRITE, wr_id, src->addr, len, src->lkey,
				   raddr, rkey), 0);
	expect_wc(p->bcq, &wc);
	assert_int_equal(wc.wr_id, wr_id);
	return wc.status;
}

static void expect_mr(const struct ibv_mr *mr, void *addr, size_t length, struct ibv_pd *pd,
		      uint32_t lkey, uint32_t rkey)
{
	assert_ptr_equal(mr->addr, addr);
	assert_int_equal(mr->length, length);
	assert_ptr_equal(mr->pd, pd);
	assert_int_equal(mr->lkey, lkey);
	assert_int_equal(mr->rkey, rkey);
}

static void rereg_access_grants_and_takes_back_remote_write(void **state)
{
	struct ibv_mr *mr, *src;
	struct rc_pair p;
	uint32_t lkey, rkey;

	(void)state;
	rc_pair(&p, &conn_default);
	mr = new_mr(&A, 4096, LW);
	src = new_mr(&B, 4096, LW);
	lkey = mr->lkey;
	rkey = mr->rkey;
	assert_int_equal(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, LW | RW), 0);
	expect_mr(mr, mr->addr, 4096, A.pd, lkey, rkey);
	assert_int_equal(write_from_b(&p, src, 1, (uintptr_t)mr->addr + 64, rkey, 512, 81),
			 IBV_WC_SUCCESS);
	assert_true(check_pattern((uint8_t *)mr->addr + 64, 512, 81));

	assert_int_equal(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, LW), 0);
	assert_int_equal(write_from_b(&p, src, 2, (uintptr_t)mr->addr + 64, rkey, 512, 82),
			 IBV_WC_REM_ACCESS_ERR);
	assert_true(check_pattern((uint8_t *)mr->addr + 64, 512, 81));
}

static void rereg_translation_moves_the_range_under_the_same_key(void **state)
{
	struct ibv_mr *mr, *src;
	struct rc_pair p;
	uint8_t *old, *fresh;
	uint32_t rkey;

	(void)state;
	rc_pair(&p, &conn_default);
	mr = new_mr(&A, 4096, LW | RW);
	src = new_mr(&B, 4096, LW);
	old = mr->addr;
	fresh = new_buf(8192);
	rkey = mr->rkey;
	assert_int_equal(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, fresh + 256,
				      2048, 0), 0);
	expect_mr(mr, fresh + 256, 2048, A.pd, rkey, rkey);
	assert_int_equal(write_from_b(&p, src, 1, (uintptr_t)fresh + 256 + 100, rkey, 1000, 83),
			 IBV_WC_SUCCESS);
	assert_true(check_pattern(fresh + 356, 1000, 83));
	/* Past the new end, and the old range, are no longer the key's. */
	assert_int_equal(write_from_b(&p, src, 2, (uintptr_t)fresh + 256 + 2000, rkey, 100, 84),
			 IBV_WC_REM_ACCESS_ERR);
	for (int i = 0; i < 4096; i++)
		assert_int_equal(old[i], 0);
	rc_pair(&p, &conn_default);
	assert_int_equal(write_from_b(&p, src, 3, (uintptr_t)old, rkey, 100, 85),
			 IBV_WC_REM_ACCESS_ERR);
	for (int i = 0; i < 4096; i++)
		assert_int_equal(old[i], 0);
}

static void rereg_pd_moves_the_region_between_domains(void **state)
{
	struct ibv_pd *other = ibv_alloc_pd(A.ctx);
	struct ibv_mr *mr, *src;
	struct rc_pair p;
	uint32_t rkey;

	(void)state;
	assert_non_null(other);
	rc_pair(&p, &conn_default); /* A's QP is in A.pd */
	mr = new_mr(&A, 4096, LW | RW);
	src = new_mr(&B, 4096, LW);
	rkey = mr->rkey;
	assert_int_equal(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, other, NULL, 0, 0), 0);
	expect_mr(mr, mr->addr, 4096, other, rkey, rkey);
	assert_int_equal(write_from_b(&p, src, 1, (uintptr_t)mr->addr, rkey, 64, 86),
			 IBV_WC_REM_ACCESS_ERR);
	assert_false(check_pattern(mr->addr, 64, 86));

	assert_int_equal(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, A.pd, NULL, 0, 0), 0);
	rc_pair(&p, &conn_default);
	assert_int_equal(write_from_b(&p, src, 2, (uintptr_t)mr->addr, rkey, 64, 87),
			 IBV_WC_SUCCESS);
	assert_true(check_pattern(mr->addr, 64, 87));
	assert_int_equal(ibv_dealloc_pd(other), 0);
}

static void rereg_bad_input_leaves_the_region_as_it_was(void **state)
{
	struct {
		int flags;
		struct ibv_pd *pd;
		bool addr;
		size_t length;
		int access;
	} bad[] = {
		{1 << 3, NULL, false, 0, 0},
		{-1, NULL, false, 0, 0},
		{IBV_REREG_MR_CHANGE_PD, NULL /* A's */, false, 0, LW}, /* access, no flag */
		{IBV_REREG_MR_CHANGE_ACCESS, NULL, false, 0, RW}, /* remote write needs local */
		{IBV_REREG_MR_CHANGE_ACCESS, NULL, false, 0, LW | (1 << 12)}, /* undefined bit */
		{IBV_REREG_MR_CHANGE_PD, NULL, false, 0, 0},
		{IBV_REREG_MR_CHANGE_PD, NULL /* B's */, false, 0, 0},
		{IBV_REREG_MR_CHANGE_TRANSLATION, NULL, false, 64, 0},
		{IBV_REREG_MR_CHANGE_TRANSLATION, NULL, true, 0, 0},
	};
	struct ibv_mr *mr, *dst;
	struct rc_pair p;
	struct ibv_wc wc;
	uint32_t lkey;
	void *addr;

	(void)state;
	bad[2].pd = A.pd;
	bad[6].pd = B.pd;
	mr = new_mr(&A, 4096, LW);
	addr = mr->addr;
	lkey = mr->lkey;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		assert_int_equal(ibv_rereg_mr(mr, bad[i].flags, bad[i].pd,
					      bad[i].addr ? addr : NULL, bad[i].length,
					      bad[i].access), IBV_REREG_MR_ERR_INPUT);
		assert_int_equal(errno, EINVAL);
		expect_mr(mr, addr, 4096, A.pd, lkey, lkey);
	}
	/* Nothing asked, nothing changed. */
	assert_int_equal(ibv_rereg_mr(mr, 0, NULL, NULL, 0, 0), 0);
	expect_mr(mr, addr, 4096, A.pd, lkey, lkey);
	/* The old region still works: a SEND from it. */
	rc_pair(&p, &conn_default);
	dst = new_mr(&B, 4096, LW);
	fill_pattern(addr, 200, 88);
	assert_int_equal(post_recv(p.b, 1, dst->addr, 4096, dst->lkey), 0);
	assert_int_equal(post_send(p.a, IBV_WR_SEND, 2, addr, 200, lkey, IBV_SEND_SIGNALED), 0);
	expect_wc(p.bcq, &wc);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_true(check_pattern(dst->addr, 200, 88));
	expect_send_ok(p.acq, 2, IBV_WC_SEND);
}

static void unsupported_verbs_say_so(void **state)
{
	struct ibv_cq *cq = new_cq(&A, 4, NULL, NULL);
	struct ibv_qp *ud = new_qp(&A, IBV_QPT_UD, cq, cq, NULL, 4, 4);
	struct ibv_qp *rc = new_qp(&A, IBV_QPT_RC, cq, cq, NULL, 4, 4);
	struct ibv_mr *mr = new_mr(&A, 64, LW);
	struct ibv_ece ece = {0};
	union ibv_gid mgid;
	char buf[64];

	(void)state;
	memset(&mgid, 0, sizeof(mgid));
	mgid.raw[0] = 0xff;
	assert_int_equal(ibv_attach_mcast(ud, &mgid, 0xc001), EOPNOTSUPP);
	assert_int_equal(ibv_detach_mcast(ud, &mgid, 0xc001), EOPNOTSUPP);
	assert_int_equal(ibv_set_ece(rc, &ece), EOPNOTSUPP);
	assert_int_equal(ibv_query_ece(rc, &ece), EOPNOTSUPP);
	errno = 0;
	assert_null(ibv_qp_to_qp_ex(rc));
	assert_int_equal(errno, EOPNOTSUPP);
	errno = 0;
	assert_null(ibv_import_pd(A.ctx, A.pd->handle));
	assert_int_equal(errno, EOPNOTSUPP);
	errno = 0;
	assert_null(ibv_import_mr(A.pd, mr->handle));
	assert_int_equal(errno, EOPNOTSUPP);
	errno = 0;
	assert_null(ibv_import_dm(A.ctx, 1));
	assert_int_equal(errno, EOPNOTSUPP);
	errno = 0;
	assert_null(ibv_reg_dmabuf_mr(A.pd, 0, 4096, 0, 0, LW));
	assert_int_equal(errno, EOPNOTSUPP);
	/* Unimporting what was never imported frees nothing: the MR is deregistered by
	 * the teardown, the PD stays the suite's. */
	ibv_unimport_mr(mr);
	ibv_unimport_pd(A.pd);
	ibv_unimport_dm(NULL);
	assert_int_equal(mr->lkey, mr->rkey);
	/* Polling data is never promised in order (memcpy's store order). */
	assert_int_equal(ibv_query_qp_data_in_order(rc, IBV_WR_RDMA_WRITE, 0), 0);
	assert_int_equal(ibv_query_qp_data_in_order(rc, IBV_WR_SEND, 0), 0);
	assert_int_equal(ibv_query_qp_data_in_order(rc, IBV_WR_RDMA_READ, 0), 0);
	/* A dpverbs device has no sysfs directory to read. */
	assert_int_equal(ibv_read_sysfs_file(A.dev->ibdev_path, "node_type", buf, sizeof(buf)),
			 -1);
}

static int run_device_abi_tests(void)
{
	const struct CMUnitTest tests[] = {
		VT(gid_type_is_roce_v2),
		VT(gid_table_lists_the_one_gid),
		VT(ah_from_wc_carries_the_reply_back),
		VT(ah_from_wc_needs_an_ipv4_grh_to_a_local_gid),
		VT(rereg_access_grants_and_takes_back_remote_write),
		VT(rereg_translation_moves_the_range_under_the_same_key),
		VT(rereg_pd_moves_the_region_between_domains),
		VT(rereg_bad_input_leaves_the_region_as_it_was),
		VT(unsupported_verbs_say_so),
		VT(resolve_eth_l2_finds_neighbour_macs),
	};

	return cmocka_run_group_tests_name("abi_device", tests, NULL, NULL);
}

int main(void)
{
	const char *ipv4;
	int failed;

	/* Before EAL: these need no device, and one of them forks. */
	failed = run_pure_tests();

	sides_env_defaults("0");
	ipv4 = getenv("DPV_PORT_IPV4");
	if (!sides_open(ipv4))
		failed++;
	else
		failed += run_device_abi_tests();
	sides_close();
	return failed ? 1 : 0;
}
