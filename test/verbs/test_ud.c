/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * UD between dpv0 and dpv1 through an address handle on an IPv4-mapped GID; the
 * 40-byte GRH rule of doc/guides/srq.md §1: the IPv4 header in bytes 20..39, the payload
 * at offset 40, byte_len counting the 40 bytes, IBV_WC_GRH set, and the SL a RoCE device
 * reports for such a packet (RoCEv2 over IPv4, lib/verbs/verbs_cq.c), which tells a
 * reader of the slot where the addresses are.
 */
#include <string.h>

#include "test_verbs.h"

#define LW IBV_ACCESS_LOCAL_WRITE
#define GRH 40u
#define QKEY 0x11110000u
/* IPv4 + UDP + BTH + DETH before the payload (ImmDt too, with immediate), ICRC after. */
#define ROCE_UD_OVERHEAD (20u + 8u + 12u + 8u + 4u)
/* ibv_wc.sl of a UD receive: UDP-encapsulated (bit 3), L3 header IPv4 (2). */
#define SL_ROCEV2_IPV4 0xau

struct ud {
	struct ibv_cq *acq, *bcq;
	struct ibv_qp *a, *b;
	struct ibv_ah *ah;       /* A to B */
	struct ibv_mr *smr, *rmr;
};

static void ud_setup(struct ud *u, struct ibv_srq *srq)
{
	u->acq = new_cq(&A, 64, NULL, NULL);
	u->bcq = new_cq(&B, 64, NULL, NULL);
	u->a = new_qp(&A, IBV_QPT_UD, u->acq, u->acq, NULL, 16, 16);
	u->b = new_qp(&B, IBV_QPT_UD, u->bcq, u->bcq, srq, 16, 16);
	ud_to_rts(u->a, QKEY);
	ud_to_rts(u->b, QKEY);
	u->ah = new_ah(&A, &B);
	u->smr = new_mr(&A, 1024, LW);
	u->rmr = new_mr(&B, 4096, LW);
}

static int ud_send(struct ud *u, uint64_t wr_id, uint32_t len, uint32_t qkey, bool imm,
		   uint32_t imm_host)
{
	struct ibv_sge sge = {(uintptr_t)u->smr->addr, len, u->smr->lkey};
	struct ibv_send_wr wr, *bad = NULL;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.imm_data = htobe32(imm_host);
	wr.wr.ud.ah = u->ah;
	wr.wr.ud.remote_qpn = u->b->qp_num;
	wr.wr.ud.remote_qkey = qkey;
	return ibv_post_send(u->a, &wr, &bad);
}

static uint32_t be32_at(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Bytes 20..39 of the GRH slot: the IPv4 header of the datagram, A to B. */
static void expect_ipv4_header(const uint8_t *grh, uint32_t payload_len, bool imm)
{
	const uint8_t *ip = grh + 20;
	uint32_t sum = 0;

	assert_int_equal(ip[0], 0x45);
	assert_int_equal((uint32_t)ip[2] << 8 | ip[3],
			 payload_len + ROCE_UD_OVERHEAD + (imm ? 4u : 0u));
	assert_int_equal(ip[9], 17); /* UDP */
	assert_int_equal(be32_at(ip + 12), A.ipv4);
	assert_int_equal(be32_at(ip + 16), B.ipv4);
	for (int i = 0; i < 20; i += 2)
		sum += (uint32_t)ip[i] << 8 | ip[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	assert_int_equal(sum, 0xffff);
}

static void ud_send_recv_grh_holds_ipv4_header(void **state)
{
	const uint32_t len = 100;
	struct ibv_wc wc;
	struct ud u;
	uint8_t *buf;

	(void)state;
	ud_setup(&u, NULL);
	buf = u.rmr->addr;
	fill_pattern(u.smr->addr, len, 51);
	assert_int_equal(post_recv(u.b, 1, buf, GRH + 512, u.rmr->lkey), 0);
	assert_int_equal(ud_send(&u, 2, len, QKEY, false, 0), 0);
	expect_wc(u.bcq, &wc);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_RECV);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.byte_len, GRH + len);
	assert_int_equal(wc.wc_flags & IBV_WC_GRH, IBV_WC_GRH);
	assert_int_equal(wc.wc_flags & IBV_WC_WITH_IMM, 0);
	assert_int_equal(wc.sl, SL_ROCEV2_IPV4);
	assert_int_equal(wc.qp_num, u.b->qp_num);
	assert_int_equal(wc.src_qp, u.a->qp_num);
	expect_ipv4_header(buf, len, false);
	assert_true(check_pattern(buf + GRH, len, 51));
	assert_int_equal(buf[GRH + len], 0);
	expect_send_ok(u.acq, 2, IBV_WC_SEND);
}

static void ud_srq_send_with_imm_grh(void **state)
{
	const uint32_t len = 700;
	struct ibv_srq *srq;
	struct ibv_wc wc;
	struct ud u;
	uint8_t *buf;

	(void)state;
	srq = new_srq(&B, 8, 1);
	ud_setup(&u, srq);
	buf = u.rmr->addr;
	fill_pattern(u.smr->addr, len, 52);
	assert_int_equal(post_srq_recv(srq, 3, buf, 4096, u.rmr->lkey), 0);
	assert_int_equal(ud_send(&u, 4, len, QKEY, true, 0xfeedf00d), 0);
	expect_wc(u.bcq, &wc);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 3);
	assert_int_equal(wc.byte_len, GRH + len);
	assert_int_equal(wc.wc_flags & (IBV_WC_GRH | IBV_WC_WITH_IMM),
			 IBV_WC_GRH | IBV_WC_WITH_IMM);
	assert_int_equal(be32toh(wc.imm_data), 0xfeedf00d);
	assert_int_equal(wc.sl, SL_ROCEV2_IPV4);
	assert_int_equal(wc.qp_num, u.b->qp_num);
	assert_int_equal(wc.src_qp, u.a->qp_num);
	expect_ipv4_header(buf, len, true);
	assert_true(check_pattern(buf + GRH, len, 52));
	expect_send_ok(u.acq, 4, IBV_WC_SEND);
}

static void ud_wrong_qkey_is_dropped(void **state)
{
	struct ibv_wc wc;
	struct ud u;

	(void)state;
	ud_setup(&u, NULL);
	assert_int_equal(post_recv(u.b, 1, u.rmr->addr, 4096, u.rmr->lkey), 0);
	fill_pattern(u.smr->addr, 10, 53);
	assert_int_equal(ud_send(&u, 2, 10, QKEY + 1, false, 0), 0);
	/* UD is unacknowledged: the sender completes, the receiver never sees it. */
	expect_send_ok(u.acq, 2, IBV_WC_SEND);
	expect_quiet(u.bcq);
	/* The receive is still there for the next good datagram. */
	fill_pattern(u.smr->addr, 20, 54);
	assert_int_equal(ud_send(&u, 3, 20, QKEY, false, 0), 0);
	expect_wc(u.bcq, &wc);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.byte_len, GRH + 20);
	assert_true(check_pattern((uint8_t *)u.rmr->addr + GRH, 20, 54));
	expect_send_ok(u.acq, 3, IBV_WC_SEND);
}

int run_ud_tests(void)
{
	const struct CMUnitTest tests[] = {
		VT(ud_send_recv_grh_holds_ipv4_header),
		VT(ud_srq_send_with_imm_grh),
		VT(ud_wrong_qkey_is_dropped),
	};

	return cmocka_run_group_tests_name("ud", tests, NULL, NULL);
}
