/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/transport, UC (IBTA 9.7.7): what its set-up refuses, SENDs and WRITEs without ACKs, a lost
 * packet losing its message only, READs and atomics refused.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "xport_test.h"

/* UC takes neither RC's responder resources nor its timers, and needs its PSNs. */
static void uc_set_up_refuses_rc_attributes(void **state)
{
	struct dpv_qp_attr rtr = {.state = DPV_QPS_RTR, .path_mtu = MTU_1024, .rq_psn = PSN0};
	struct dpv_qp_attr rts = {.state = DPV_QPS_RTS, .sq_psn = PSN0, .timeout = 14};
	struct end a, b;

	(void)state;
	end_open(&a, xa, DPV_QPT_UC, NULL, NULL);
	end_open(&b, xb, DPV_QPT_UC, NULL, NULL);
	uc_up_to(&a, pb.ipv4, b.qp->qpn, DPV_QPS_INIT);
	rtr.dest_qpn = b.qp->qpn;
	rtr.dst_ip = pb.ipv4;
	assert_int_equal(dpv_qp_modify(xa, a.qp, &rtr, DPV_QP_STATE | DPV_QP_AV |
				       DPV_QP_PATH_MTU | DPV_QP_DEST_QPN | DPV_QP_RQ_PSN |
				       DPV_QP_MAX_DEST_RD_ATOMIC), EINVAL);
	assert_int_equal(dpv_qp_modify(xa, a.qp, &rtr, DPV_QP_STATE | DPV_QP_AV |
				       DPV_QP_PATH_MTU | DPV_QP_DEST_QPN), EINVAL);
	uc_up_to(&a, pb.ipv4, b.qp->qpn, DPV_QPS_RTR);
	assert_int_equal(dpv_qp_modify(xa, a.qp, &rts, DPV_QP_STATE | DPV_QP_SQ_PSN |
				       DPV_QP_TIMEOUT), EINVAL);
	assert_int_equal(dpv_qp_modify(xa, a.qp, &rts, DPV_QP_STATE), EINVAL);
	uc_up_to(&a, pb.ipv4, b.qp->qpn, DPV_QPS_RTS);
	assert_int_equal(a.qp->attr.state, DPV_QPS_RTS);
	end_close(&a);
	end_close(&b);
}

/* SENDs of one and of several packets, a WRITE and a WRITE with immediate, into an RQ
 * and into an SRQ: the sender completes when its packets are out, the receiver sends
 * nothing back. */
static void uc_send_and_write_complete_without_acks(void **state)
{
	const uint32_t len = 5000;
	uint8_t *src = malloc(len), *dst = calloc(2, len);
	uint32_t ks = mr_reg(ta, src, len, 0);
	uint32_t kd = mr_reg(tb, dst, 2 * len, DPV_ACCESS_LOCAL_WRITE | DPV_ACCESS_REMOTE_WRITE);
	struct dpv_srq_init si = {.pd = PD, .max_wr = 8, .max_sge = 1, .lanes = 1};
	struct dpv_rwqe r;
	struct dpv_srq *srq;
	struct dpv_cqe c[4];
	struct dpv_swqe w;
	struct end a, b;

	(void)state;
	fill_pattern(src, len, 3);
	assert_int_equal(dpv_srq_create(xb, &si, &srq), 0);
	for (int k = 0; k < 2; k++) {
		uc_pair(&a, &b, k == 0 ? NULL : srq);
		memset(dst, 0, 2 * len);
		r = rwqe(7, dst, len, kd);
		if (k == 0) {
			post_recv(b.qp, &r);
			post_recv(b.qp, &r);
		} else {
			post_srq(srq, 0, &r);
			post_srq(srq, 0, &r);
		}
		hook_saved = NULL;
		hook_dup_opcode = DPV_OP_UC_SEND_ONLY;
		b_rx_hook = keep_a_copy;
		w = swqe(DPV_WR_SEND, 1);
		swqe_sge(&w, src, 10, ks);
		post_send(a.qp, &w);
		w = swqe(DPV_WR_SEND_WITH_IMM, 2);
		w.imm = 0x01020304;
		swqe_sge(&w, src, len, ks);
		post_send(a.qp, &w);
		w = swqe(DPV_WR_RDMA_WRITE, 3);
		w.remote_addr = (uintptr_t)dst + len;
		w.rkey = kd;
		swqe_sge(&w, src, len, ks);
		post_send(a.qp, &w);
		w.wr_id = 4;
		w.opcode = DPV_WR_RDMA_WRITE_WITH_IMM;
		w.imm = 9;
		w.length = 0;
		w.num_sge = 0;
		post_send(a.qp, &w);
		assert_int_equal(poll_n(a.scq, c, 4), 4);
		b_rx_hook = NULL;
		for (int i = 0; i < 4; i++) {
			assert_int_equal(c[i].wr_id, (uint64_t)i + 1);
			assert_int_equal(c[i].status, DPV_WC_SUCCESS);
		}
		assert_int_equal(c[2].opcode, DPV_WC_RDMA_WRITE);
		assert_int_equal(c[2].byte_len, len);
		assert_int_equal(poll_n(b.rcq, c, 2), 2);
		assert_int_equal(c[0].byte_len, 10);
		assert_int_equal(c[0].opcode, DPV_WC_RECV);
		assert_int_equal(c[1].byte_len, len);
		assert_int_equal(c[1].flags & DPV_WC_F_IMM, DPV_WC_F_IMM);
		assert_int_equal(c[1].imm, 0x01020304);
		assert_memory_equal(dst, src, len);
		assert_memory_equal(dst + len, src, len);
		/* the WRITE with immediate found no receive WQE left: counted, no RNR */
		assert_int_equal(cq_left(b.rcq), 0);
		assert_int_equal(dpv_qp_stats_ref(b.qp)->tx_packets, 0);
		assert_int_equal(dpv_qp_stats_ref(b.qp)->uc_msgs_dropped, 1);
		/* the first SEND again, as a link may copy it: behind the expected PSN,
		 * dropped, not delivered twice */
		assert_non_null(hook_saved);
		if (k == 0)
			post_recv(b.qp, &r);
		else
			post_srq(srq, 0, &r);
		dpv_xport_rx(xb, &hook_saved, 1);
		assert_int_equal(cq_left(b.rcq), 0);
		assert_int_equal(dpv_qp_stats_ref(b.qp)->dup_requests, 1);
		assert_int_equal(a.qp->attr.state, DPV_QPS_RTS);
		end_close(&a);
		end_close(&b);
	}
	dpv_srq_destroy(xb, srq);
	mr_dereg(ta, ks);
	mr_dereg(tb, kd);
	free(src);
	free(dst);
}

/* A lost packet ends its message at the receiver, silently on the wire and counted:
 * the middle of a SEND, the first packet of a SEND, the last of a WRITE. The receive
 * WQE the lost SEND had goes to the next one; the messages after arrive whole. */
static void uc_lost_packet_drops_its_message_only(void **state)
{
	const uint32_t len = 3000;
	uint8_t *src = malloc(len), *dst = calloc(3, len);
	uint32_t ks = mr_reg(ta, src, len, 0);
	uint32_t kd = mr_reg(tb, dst, 3 * len, DPV_ACCESS_LOCAL_WRITE | DPV_ACCESS_REMOTE_WRITE);
	const struct {
		uint8_t wr, drop;
	} cases[] = {
		{DPV_WR_SEND, DPV_OP_UC_SEND_MIDDLE},
		{DPV_WR_SEND, DPV_OP_UC_SEND_FIRST},
		{DPV_WR_RDMA_WRITE, DPV_OP_UC_WRITE_LAST},
	};
	struct dpv_qp_stats s0;
	struct dropper *d;
	struct dpv_cqe c[2];
	struct dpv_swqe w;
	struct end a, b;

	(void)state;
	fill_pattern(src, len, 8);
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct dpv_rwqe r0 = rwqe(10, dst, len, kd), r1 = rwqe(11, dst + len, len, kd);

		uc_pair(&a, &b, NULL);
		memset(dst, 0, 3 * len);
		post_recv(b.qp, &r0);
		post_recv(b.qp, &r1);
		s0 = *dpv_qp_stats_ref(b.qp);
		d = drop_next(false, cases[k].drop, 0);
		for (uint64_t i = 0; i < 2; i++) {
			w = swqe(cases[k].wr, i);
			if (cases[k].wr == DPV_WR_RDMA_WRITE) {
				w.remote_addr = (uintptr_t)dst + (2 - i) * len;
				w.rkey = kd;
			}
			swqe_sge(&w, src, len, ks);
			post_send(a.qp, &w);
		}
		assert_int_equal(poll_n(a.scq, c, 2), 2);
		assert_int_equal(c[0].status, DPV_WC_SUCCESS);
		assert_int_equal(c[1].status, DPV_WC_SUCCESS);
		pump(20);
		b_rx_hook = NULL;
		assert_int_equal(d->done, 1);
		if (cases[k].wr == DPV_WR_SEND) {
			/* the second message, in the first receive WQE; the second WQE waits */
			assert_int_equal(poll_n(b.rcq, c, 1), 1);
			assert_int_equal(c[0].wr_id, 10);
			assert_int_equal(c[0].status, DPV_WC_SUCCESS);
			assert_int_equal(c[0].byte_len, len);
			assert_memory_equal(dst, src, len);
		} else {
			/* the first WRITE is short of its last packet, the second whole */
			assert_memory_equal(dst + len, src, len);
			assert_int_equal(dst[3 * len - 1], 0);
		}
		assert_int_equal(cq_left(b.rcq), 0);
		assert_int_equal(dpv_qp_stats_ref(b.qp)->uc_msgs_dropped - s0.uc_msgs_dropped, 1);
		assert_int_equal(dpv_qp_stats_ref(b.qp)->out_of_seq - s0.out_of_seq, 1);
		assert_int_equal(dpv_qp_stats_ref(b.qp)->tx_packets, 0);
		assert_int_equal(dpv_qp_stats_ref(a.qp)->retrans_packets, 0);
		end_close(&a);
		end_close(&b);
	}
	mr_dereg(ta, ks);
	mr_dereg(tb, kd);
	free(src);
	free(dst);
}

/* UC has no READ and no atomics (IBTA Table 38): such a WQE fails locally and the QP
 * goes to SQE (IBTA 10.3.1), from which RTS takes it back. A WRITE to a region that
 * does not allow it is dropped without a word to the sender. */
static void uc_refuses_read_and_atomics_and_drops_bad_writes(void **state)
{
	uint64_t val = 0, *remote = calloc(1, sizeof(*remote));
	uint32_t kl = mr_reg(ta, &val, sizeof(val), DPV_ACCESS_LOCAL_WRITE);
	uint32_t kr = mr_reg(tb, remote, sizeof(*remote), DPV_ACCESS_LOCAL_WRITE);
	uint64_t errs = stats(xb).access_errors;
	struct dpv_qp_attr at;
	struct dpv_cqe c[2];
	struct dpv_swqe w;
	struct end a, b;

	(void)state;
	uc_pair(&a, &b, NULL);
	w = swqe(DPV_WR_RDMA_READ, 1);
	w.remote_addr = (uintptr_t)remote;
	w.rkey = kr;
	swqe_sge(&w, &val, sizeof(val), kl);
	post_send(a.qp, &w);
	w = swqe(DPV_WR_SEND, 2);
	post_send(a.qp, &w);
	assert_int_equal(poll_n(a.scq, c, 2), 2);
	assert_int_equal(c[0].status, DPV_WC_LOC_QP_OP_ERR);
	assert_int_equal(c[1].status, DPV_WC_WR_FLUSH_ERR);
	assert_int_equal(a.qp->attr.state, DPV_QPS_SQE);
	memset(&at, 0, sizeof(at));
	at.state = DPV_QPS_RTS;
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, DPV_QP_STATE), 0);
	w = atomic_wqe(DPV_WR_ATOMIC_FETCH_ADD, 3, remote, kr, 1, 0, &val, kl);
	post_send(a.qp, &w);
	assert_int_equal(poll_n(a.scq, c, 1), 1);
	assert_int_equal(c[0].status, DPV_WC_LOC_QP_OP_ERR);
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, DPV_QP_STATE), 0);
	/* a WRITE to a region without remote write: the sender completes, nothing lands */
	w = swqe(DPV_WR_RDMA_WRITE, 4);
	w.remote_addr = (uintptr_t)remote;
	w.rkey = kr;
	val = 77;
	swqe_sge(&w, &val, sizeof(val), kl);
	post_send(a.qp, &w);
	assert_int_equal(poll_n(a.scq, c, 1), 1);
	assert_int_equal(c[0].status, DPV_WC_SUCCESS);
	pump(20);
	assert_true(*remote == 0);
	assert_int_equal(stats(xb).access_errors, errs + 1);
	assert_int_equal(b.qp->attr.state, DPV_QPS_RTS);
	assert_int_equal(dpv_qp_stats_ref(b.qp)->uc_msgs_dropped, 1);
	end_close(&a);
	end_close(&b);
	mr_dereg(ta, kl);
	mr_dereg(tb, kr);
	free(remote);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(uc_set_up_refuses_rc_attributes),
		cmocka_unit_test(uc_send_and_write_complete_without_acks),
		cmocka_unit_test(uc_lost_packet_drops_its_message_only),
		cmocka_unit_test(uc_refuses_read_and_atomics_and_drops_bad_writes),
	};

	return XPORT_RUN_GROUP("transport_uc", tests, argc, argv) ? 1 : 0;
}
