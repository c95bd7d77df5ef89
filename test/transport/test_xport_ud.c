/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/transport, UD: the GRH a receive gets, Q_Key checks, messages above the MTU.
 */
#include "xport_test.h"

static void ud_send_places_the_grh_and_checks_the_qkey(void **state)
{
	uint8_t src[200] = {0}, dst[DPV_UD_GRH_LEN + 200] = {0};
	uint32_t ks = mr_reg(ta, src, sizeof(src), 0);
	uint32_t kd = mr_reg(tb, dst, sizeof(dst), DPV_ACCESS_LOCAL_WRITE);
	struct dpv_swqe w = swqe(DPV_WR_SEND_WITH_IMM, 4);
	struct dpv_rwqe r = rwqe(5, dst, sizeof(dst), kd);
	uint64_t bad_qkey = stats(xb).rx_bad_qkey;
	struct dpv_cqe c;
	struct end a, b;

	(void)state;
	end_open(&a, xa, DPV_QPT_UD, NULL, NULL);
	end_open(&b, xb, DPV_QPT_UD, NULL, NULL);
	ud_up(&a, 0x1111);
	ud_up(&b, 0x2222);
	fill_pattern(src, sizeof(src), 4);
	post_recv(b.qp, &r);
	w.imm = 99;
	w.ud_dst_ip = pb.ipv4;
	w.ud_remote_qpn = b.qp->qpn;
	w.ud_remote_qkey = 0x2222;
	swqe_sge(&w, src, sizeof(src), ks);
	post_send(a.qp, &w);
	/* UD completes once sent */
	assert_int_equal(poll_n(a.scq, &c, 1), 1);
	assert_int_equal(c.status, DPV_WC_SUCCESS);
	assert_int_equal(poll_n(b.rcq, &c, 1), 1);
	assert_int_equal(c.status, DPV_WC_SUCCESS);
	assert_int_equal(c.opcode, DPV_WC_RECV);
	assert_int_equal(c.byte_len, DPV_UD_GRH_LEN + sizeof(src));
	assert_int_equal(c.flags, DPV_WC_F_GRH | DPV_WC_F_IMM);
	assert_int_equal(c.imm, 99);
	assert_int_equal(c.src_qp, a.qp->qpn);
	assert_int_equal(c.qp_num, b.qp->qpn);
	for (int i = 0; i < 20; i++)
		assert_int_equal(dst[i], 0);
	assert_int_equal(dst[20], 0x45);
	assert_int_equal(rte_be_to_cpu_32(*(uint32_t *)(dst + 20 + 12)), pa.ipv4);
	assert_int_equal(rte_be_to_cpu_32(*(uint32_t *)(dst + 20 + 16)), pb.ipv4);
	assert_memory_equal(dst + DPV_UD_GRH_LEN, src, sizeof(src));
	/* a wrong Q_Key is dropped and counted; the top bit means "the QP's own" */
	post_recv(b.qp, &r);
	w.ud_remote_qkey = 0x3333;
	post_send(a.qp, &w);
	assert_int_equal(poll_n(a.scq, &c, 1), 1);
	assert_int_equal(cq_left(b.rcq), 0);
	assert_int_equal(stats(xb).rx_bad_qkey, bad_qkey + 1);
	w.ud_remote_qkey = 0x80000000u;
	post_send(a.qp, &w);
	assert_int_equal(poll_n(a.scq, &c, 1), 1);
	assert_int_equal(cq_left(b.rcq), 0);
	assert_int_equal(stats(xb).rx_bad_qkey, bad_qkey + 2);
	/* b's own Q_Key is 0x2222: set a's to it and use the top bit */
	{
		struct dpv_qp_attr at = {.qkey = 0x2222};

		assert_int_equal(dpv_qp_modify(xa, a.qp, &at, DPV_QP_QKEY), 0);
	}
	post_send(a.qp, &w);
	assert_int_equal(poll_n(b.rcq, &c, 1), 1);
	assert_int_equal(c.status, DPV_WC_SUCCESS);
	/* a message above the MTU fails locally and puts the QP in SQE; RTS again works */
	w.num_sge = 0;
	w.length = 0;
	{
		static uint8_t big[2000];
		uint32_t kbig = mr_reg(ta, big, sizeof(big), 0);
		struct dpv_qp_attr at = {.state = DPV_QPS_RTS};

		swqe_sge(&w, big, sizeof(big), kbig);
		post_send(a.qp, &w);
		assert_int_equal(poll_n(a.scq, &c, 1), 1);
		assert_int_equal(poll_n(a.scq, &c, 1), 1);
		assert_int_equal(c.status, DPV_WC_LOC_LEN_ERR);
		assert_int_equal(a.qp->attr.state, DPV_QPS_SQE);
		assert_int_equal(dpv_qp_modify(xa, a.qp, &at, DPV_QP_STATE), 0);
		mr_dereg(ta, kbig);
	}
	pair_close(&a, &b, ks, kd);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(ud_send_places_the_grh_and_checks_the_qkey),
	};

	return XPORT_RUN_GROUP("transport_ud", tests, argc, argv) ? 1 : 0;
}
