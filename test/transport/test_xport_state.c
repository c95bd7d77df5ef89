/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/transport, the QP state table (IBTA 10.3) and the errors that move a QP to ERR:
 * bad keys, short receives, flushes, SQD, QP numbers running out.
 */
#include <errno.h>
#include <string.h>

#include "xport_test.h"

static void bad_rkey_gives_rem_access_err_and_ends_the_responder(void **state)
{
	uint8_t src[100] = {0}, dst[100] = {0};
	uint32_t ks = mr_reg(ta, src, sizeof(src), 0);
	uint32_t kd = mr_reg(tb, dst, sizeof(dst), DPV_ACCESS_LOCAL_WRITE | DPV_ACCESS_REMOTE_WRITE);
	struct dpv_swqe w = swqe(DPV_WR_RDMA_WRITE, 1);
	struct dpv_rwqe r = rwqe(9, dst, sizeof(dst), kd);
	uint64_t errs = stats(xb).access_errors;
	struct dpv_cqe c[2];
	struct end a, b;

	(void)state;
	rc_pair(&a, &b, false, NULL, NULL, 7);
	post_recv(b.qp, &r);
	swqe_sge(&w, src, sizeof(src), ks);
	w.remote_addr = (uintptr_t)dst + 1; /* one byte past the region at its end */
	w.rkey = kd;
	post_send(a.qp, &w);
	w.wr_id = 2;
	post_send(a.qp, &w);
	assert_int_equal(poll_n(a.scq, c, 2), 2);
	assert_int_equal(c[0].status, DPV_WC_REM_ACCESS_ERR);
	assert_int_equal(c[1].status, DPV_WC_WR_FLUSH_ERR);
	assert_int_equal(stats(xb).access_errors, errs + 1);
	assert_int_equal(b.qp->attr.state, DPV_QPS_ERR);
	assert_int_equal(b.fatal, 1);
	/* the responder's posted receive is flushed */
	assert_int_equal(poll_n(b.rcq, c, 1), 1);
	assert_int_equal(c[0].wr_id, 9);
	assert_int_equal(c[0].status, DPV_WC_WR_FLUSH_ERR);
	end_close(&a);
	end_close(&b);

	/* a READ on a region without remote read, and a key of another PD */
	rc_pair(&a, &b, false, NULL, NULL, 7);
	w = swqe(DPV_WR_RDMA_READ, 3);
	w.remote_addr = (uintptr_t)dst;
	w.rkey = kd;
	swqe_sge(&w, src, sizeof(src), mr_reg(ta, src, sizeof(src), DPV_ACCESS_LOCAL_WRITE));
	post_send(a.qp, &w);
	assert_int_equal(poll_n(a.scq, c, 1), 1);
	assert_int_equal(c[0].status, DPV_WC_REM_ACCESS_ERR);
	end_close(&a);
	end_close(&b);
	rc_pair(&a, &b, false, NULL, NULL, 7);
	w = swqe(DPV_WR_RDMA_WRITE, 4);
	w.remote_addr = (uintptr_t)dst;
	w.rkey = mr_reg_pd(tb, dst, sizeof(dst), DPV_ACCESS_REMOTE_WRITE, PD + 1);
	swqe_sge(&w, src, sizeof(src), ks);
	post_send(a.qp, &w);
	assert_int_equal(poll_n(a.scq, c, 1), 1);
	assert_int_equal(c[0].status, DPV_WC_REM_ACCESS_ERR);
	pair_close(&a, &b, ks, kd);
}

static void bad_lkey_on_a_receive_gives_loc_prot_err(void **state)
{
	uint8_t src[100] = {0}, dst[100] = {0};
	uint32_t ks = mr_reg(ta, src, sizeof(src), 0);
	uint32_t kd = mr_reg(tb, dst, sizeof(dst), 0); /* no LOCAL_WRITE */
	struct dpv_swqe w = swqe(DPV_WR_SEND, 1);
	struct dpv_rwqe r = rwqe(2, dst, sizeof(dst), kd);
	struct dpv_cqe c;
	struct end a, b;

	(void)state;
	rc_pair(&a, &b, false, NULL, NULL, 7);
	post_recv(b.qp, &r);
	swqe_sge(&w, src, sizeof(src), ks);
	post_send(a.qp, &w);
	assert_int_equal(poll_n(b.rcq, &c, 1), 1);
	assert_int_equal(c.wr_id, 2);
	assert_int_equal(c.status, DPV_WC_LOC_PROT_ERR);
	assert_int_equal(b.qp->attr.state, DPV_QPS_ERR);
	assert_int_equal(poll_n(a.scq, &c, 1), 1);
	assert_int_equal(c.status, DPV_WC_REM_OP_ERR);
	end_close(&a);
	end_close(&b);

	/* and a send whose own lkey is bad fails locally, in order, then flushes */
	rc_pair(&a, &b, false, NULL, NULL, 7);
	{
		struct dpv_cqe cc[3];

		r = rwqe(5, dst, sizeof(dst), mr_reg(tb, dst, sizeof(dst), DPV_ACCESS_LOCAL_WRITE));
		post_recv(b.qp, &r);
		post_send(a.qp, &w);
		w.wr_id = 7;
		w.sge[0].lkey = ks + 1;
		post_send(a.qp, &w);
		w.wr_id = 8;
		w.sge[0].lkey = ks;
		post_send(a.qp, &w);
		assert_int_equal(poll_n(a.scq, cc, 3), 3);
		assert_int_equal(cc[0].status, DPV_WC_SUCCESS);
		assert_int_equal(cc[1].wr_id, 7);
		assert_int_equal(cc[1].status, DPV_WC_LOC_PROT_ERR);
		assert_int_equal(cc[2].status, DPV_WC_WR_FLUSH_ERR);
	}
	pair_close(&a, &b, ks, kd);
}

static void too_small_receive_gives_loc_len_err_and_rem_inv_req_err(void **state)
{
	uint8_t src[3000] = {0}, dst[2000] = {0};
	uint32_t ks = mr_reg(ta, src, sizeof(src), 0);
	uint32_t kd = mr_reg(tb, dst, sizeof(dst), DPV_ACCESS_LOCAL_WRITE);
	struct dpv_swqe w = swqe(DPV_WR_SEND, 1);
	struct dpv_rwqe r = rwqe(2, dst, sizeof(dst), kd);
	struct dpv_cqe c;
	struct end a, b;

	(void)state;
	rc_pair(&a, &b, false, NULL, NULL, 7);
	post_recv(b.qp, &r);
	swqe_sge(&w, src, sizeof(src), ks);
	post_send(a.qp, &w);
	assert_int_equal(poll_n(b.rcq, &c, 1), 1);
	assert_int_equal(c.status, DPV_WC_LOC_LEN_ERR);
	assert_int_equal(poll_n(a.scq, &c, 1), 1);
	assert_int_equal(c.status, DPV_WC_REM_INV_REQ_ERR);
	assert_int_equal(a.qp->attr.state, DPV_QPS_ERR);
	assert_int_equal(b.qp->attr.state, DPV_QPS_ERR);
	pair_close(&a, &b, ks, kd);
}

static void err_state_flushes_posted_and_later_work(void **state)
{
	uint8_t buf[64] = {0};
	uint32_t k = mr_reg(ta, buf, sizeof(buf), DPV_ACCESS_LOCAL_WRITE);
	struct dpv_qp_attr at = {.state = DPV_QPS_ERR};
	struct dpv_swqe w = swqe(DPV_WR_SEND, 1);
	struct dpv_rwqe r = rwqe(2, buf, sizeof(buf), k);
	struct dpv_cqe c[4];
	struct end a;

	(void)state;
	end_open(&a, xa, DPV_QPT_RC, NULL, NULL);
	post_recv(a.qp, &r);
	post_recv(a.qp, &r);
	swqe_sge(&w, buf, sizeof(buf), k);
	post_send(a.qp, &w); /* in RESET: not processed */
	pump(2);
	assert_int_equal(cq_left(a.scq), 0);
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, DPV_QP_STATE), 0);
	assert_int_equal(dpv_ring_dequeue_burst(a.scq->ring, c, 4), 1);
	assert_int_equal(c[0].status, DPV_WC_WR_FLUSH_ERR);
	assert_int_equal(c[0].wr_id, 1);
	assert_int_equal(dpv_ring_dequeue_burst(a.rcq->ring, c, 4), 2);
	assert_int_equal(c[1].status, DPV_WC_WR_FLUSH_ERR);
	assert_int_equal(c[1].opcode, DPV_WC_RECV);
	/* posted in ERR: flushed by the device at its next pass */
	post_send(a.qp, &w);
	post_recv(a.qp, &r);
	assert_int_equal(poll_n(a.scq, c, 1), 1);
	assert_int_equal(c[0].status, DPV_WC_WR_FLUSH_ERR);
	assert_int_equal(poll_n(a.rcq, c, 1), 1);
	assert_int_equal(c[0].status, DPV_WC_WR_FLUSH_ERR);
	/* ERR -> RESET empties without completions, and the QP can come up again */
	at.state = DPV_QPS_RESET;
	post_send(a.qp, &w);
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, DPV_QP_STATE), 0);
	assert_int_equal(dpv_ring_used(a.qp->sq), 0);
	assert_int_equal(cq_left(a.scq), 0);
	end_close(&a);
	mr_dereg(ta, k);
}

static void state_machine_refuses_what_ibta_refuses(void **state)
{
	const uint32_t init_rc = DPV_QP_STATE | DPV_QP_PKEY_INDEX | DPV_QP_PORT | DPV_QP_ACCESS_FLAGS;
	const uint32_t rtr_rc = DPV_QP_STATE | DPV_QP_AV | DPV_QP_PATH_MTU | DPV_QP_DEST_QPN |
				DPV_QP_RQ_PSN | DPV_QP_MAX_DEST_RD_ATOMIC | DPV_QP_MIN_RNR_TIMER;
	const uint32_t rts_rc = DPV_QP_STATE | DPV_QP_SQ_PSN | DPV_QP_TIMEOUT | DPV_QP_RETRY_CNT |
				DPV_QP_RNR_RETRY | DPV_QP_MAX_QP_RD_ATOMIC;
	struct dpv_qp_attr at;
	struct end a, u;

	(void)state;
	memset(&at, 0, sizeof(at));
	end_open(&a, xa, DPV_QPT_RC, NULL, NULL);
	end_open(&u, xa, DPV_QPT_UD, NULL, NULL);
	at.state = DPV_QPS_RTR;
	at.path_mtu = MTU_1024;
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, rtr_rc), EINVAL);  /* RESET -> RTR */
	at.state = DPV_QPS_INIT;
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, init_rc & ~DPV_QP_ACCESS_FLAGS), EINVAL);
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, init_rc | DPV_QP_QKEY), EINVAL);
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, init_rc | (1u << 30)), EINVAL);
	at.pkey_index = 1;
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, init_rc), EINVAL);
	at.pkey_index = 0;
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, init_rc), 0);
	assert_int_equal(a.qp->attr.state, DPV_QPS_INIT);
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, DPV_QP_ACCESS_FLAGS), 0); /* INIT->INIT */
	at.state = DPV_QPS_RTS;
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, rts_rc), EINVAL);  /* INIT -> RTS */
	at.state = DPV_QPS_RTR;
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, rtr_rc & ~DPV_QP_PATH_MTU), EINVAL);
	at.path_mtu = 6;
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, rtr_rc), EINVAL);
	at.path_mtu = MTU_1024;
	at.min_rnr_timer = 32;
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, rtr_rc), EINVAL);
	at.min_rnr_timer = 12;
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, rtr_rc), 0);
	at.state = DPV_QPS_RTS;
	at.rnr_retry = 8;
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, rts_rc), EINVAL);
	at.rnr_retry = 7;
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, rts_rc & ~DPV_QP_SQ_PSN), EINVAL);
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, rts_rc), 0);
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, DPV_QP_MIN_RNR_TIMER), 0); /* RTS->RTS */
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, DPV_QP_PATH_MTU), EINVAL);
	at.state = DPV_QPS_SQE; /* RC has no SQE */
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, DPV_QP_STATE), EINVAL);
	at.state = DPV_QPS_INIT;
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, DPV_QP_STATE), EINVAL);
	at.state = DPV_QPS_SQD;
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, DPV_QP_STATE), 0);
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, DPV_QP_STATE | DPV_QP_RNR_RETRY), 0);
	at.state = DPV_QPS_RTS;
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, DPV_QP_STATE), 0);
	at.state = 7;
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, DPV_QP_STATE), EINVAL);
	at.state = DPV_QPS_ERR;
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, DPV_QP_STATE), 0);
	at.state = DPV_QPS_RTS;
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, DPV_QP_STATE), EINVAL);  /* ERR -> RTS */
	at.state = DPV_QPS_RESET;
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, DPV_QP_STATE), 0);
	at.state = DPV_QPS_INIT;
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, init_rc), 0);

	/* UD: a Q_Key, no path */
	at.state = DPV_QPS_INIT;
	assert_int_equal(dpv_qp_modify(xa, u.qp, &at, init_rc), EINVAL);
	assert_int_equal(dpv_qp_modify(xa, u.qp, &at, DPV_QP_STATE | DPV_QP_PKEY_INDEX |
				       DPV_QP_PORT | DPV_QP_QKEY), 0);
	at.state = DPV_QPS_RTR;
	assert_int_equal(dpv_qp_modify(xa, u.qp, &at, DPV_QP_STATE | DPV_QP_AV), EINVAL);
	assert_int_equal(dpv_qp_modify(xa, u.qp, &at, DPV_QP_STATE), 0);
	at.state = DPV_QPS_RTS;
	assert_int_equal(dpv_qp_modify(xa, u.qp, &at, DPV_QP_STATE), EINVAL); /* no SQ_PSN */
	assert_int_equal(dpv_qp_modify(xa, u.qp, &at, DPV_QP_STATE | DPV_QP_SQ_PSN), 0);

	{
		/* creation limits */
		/* IBV_QPT_RAW_PACKET: not a type of the transport */
		struct dpv_qp_init bad = {.type = 8, .send_cq = a.scq, .recv_cq = a.rcq};
		struct dpv_qp *qp;

		assert_int_equal(dpv_qp_create(xa, &bad, &qp), EINVAL);
		bad.type = DPV_QPT_RC;
		bad.max_send_sge = DPV_MAX_SGE + 1;
		assert_int_equal(dpv_qp_create(xa, &bad, &qp), EINVAL);
		bad.max_send_sge = 1;
		bad.max_send_wr = DPV_MAX_QP_WR + 1;
		assert_int_equal(dpv_qp_create(xa, &bad, &qp), EINVAL);
		bad.max_send_wr = 0;
		assert_int_equal(dpv_qp_create(xa, &bad, &qp), 0);
		assert_null(qp->sq);
		assert_ptr_equal(dpv_xport_qp(xa, qp->qpn), qp);
		dpv_qp_destroy(xa, qp);
		assert_null(dpv_xport_qp(xa, 0));
		assert_null(dpv_xport_qp(xa, 1u << 23));
	}
	end_close(&a);
	end_close(&u);
}

static void qp_numbers_run_out_with_enospc(void **state)
{
	static struct dpv_qp *qps[DPV_MAX_QP];
	struct dpv_qp_init init = {.type = DPV_QPT_UD, .pd = PD, .max_send_wr = 1,
				   .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1};
	struct dpv_cq *cq;
	struct dpv_qp *qp;
	static bool seen[DPV_MAX_QP];
	uint32_t n = 0, freed, steps_of_one = 0;

	(void)state;
	assert_int_equal(dpv_cq_create(xb, 1, &cq), 0);
	init.send_cq = init.recv_cq = cq;
	while (dpv_qp_create(xb, &init, &qps[n]) == 0) {
		assert_true(qps[n]->qpn >= 2 && qps[n]->qpn < DPV_MAX_QP);
		assert_false(seen[qps[n]->qpn]);
		seen[qps[n]->qpn] = true;
		if (n > 0 && qps[n]->qpn == qps[n - 1]->qpn + 1)
			steps_of_one++;
		n++;
	}
	/* numbers 0 and 1 are reserved; xb holds no other QP now */
	assert_int_equal(n, DPV_MAX_QP - 2);
	/* in a random order, not counted up */
	assert_true(steps_of_one < n / 64);
	assert_int_equal(dpv_qp_create(xb, &init, &qp), ENOSPC);
	/* a freed number comes back, and only when no other is free */
	freed = qps[100]->qpn;
	dpv_qp_destroy(xb, qps[100]);
	assert_int_equal(dpv_qp_create(xb, &init, &qps[100]), 0);
	assert_int_equal(qps[100]->qpn, freed);
	for (uint32_t i = 0; i < n; i++)
		dpv_qp_destroy(xb, qps[i]);
	assert_int_equal(dpv_qp_create(xb, &init, &qp), 0);
	assert_int_not_equal(qp->qpn, freed);
	dpv_qp_destroy(xb, qp);
	assert_int_equal(dpv_cq_create(xb, 0, &cq), EINVAL);
	assert_int_equal(dpv_cq_create(xb, DPV_MAX_CQE + 1, &cq), EINVAL);
	dpv_cq_destroy(init.send_cq);
}

static void sqd_drains_then_rts_resumes(void **state)
{
	uint8_t src[64] = {0}, dst[64] = {0};
	uint32_t ks = mr_reg(ta, src, sizeof(src), 0);
	uint32_t kd = mr_reg(tb, dst, sizeof(dst), DPV_ACCESS_LOCAL_WRITE);
	struct dpv_qp_attr at = {.state = DPV_QPS_SQD};
	struct dpv_swqe w = swqe(DPV_WR_SEND, 1);
	struct dpv_rwqe r = rwqe(2, dst, sizeof(dst), kd);
	struct dpv_cqe c;
	struct end a, b;

	(void)state;
	rc_pair(&a, &b, false, NULL, NULL, 7);
	post_recv(b.qp, &r);
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, DPV_QP_STATE), 0);
	swqe_sge(&w, src, sizeof(src), ks);
	post_send(a.qp, &w);
	assert_int_equal(cq_left(b.rcq), 0);
	at.state = DPV_QPS_RTS;
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, DPV_QP_STATE), 0);
	assert_int_equal(poll_n(b.rcq, &c, 1), 1);
	assert_int_equal(poll_n(a.scq, &c, 1), 1);
	assert_int_equal(c.status, DPV_WC_SUCCESS);
	pair_close(&a, &b, ks, kd);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(bad_rkey_gives_rem_access_err_and_ends_the_responder),
		cmocka_unit_test(bad_lkey_on_a_receive_gives_loc_prot_err),
		cmocka_unit_test(too_small_receive_gives_loc_len_err_and_rem_inv_req_err),
		cmocka_unit_test(err_state_flushes_posted_and_later_work),
		cmocka_unit_test(state_machine_refuses_what_ibta_refuses),
		cmocka_unit_test(qp_numbers_run_out_with_enospc),
		cmocka_unit_test(sqd_drains_then_rts_resumes),
	};

	return XPORT_RUN_GROUP("transport_state", tests, argc, argv) ? 1 : 0;
}
