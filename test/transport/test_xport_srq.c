/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/transport, shared receive queues and receiver-not-ready: an SRQ of 16 QPs, its
 * limit event, RNR NAKs and their retry count, a responder bounded while it NAKs.
 */
#include <stdlib.h>
#include <string.h>

#include "xport_test.h"

#define SRQ_QPS 16

#define SRQ_MSGS 4

static void srq_shared_by_16_qps_reports_each_qp(void **state)
{
	struct dpv_srq_init si = {.pd = PD, .max_wr = 256, .max_sge = 1, .lanes = 2};
	static uint8_t rbuf[SRQ_QPS * SRQ_MSGS][64];
	uint8_t sbuf[SRQ_QPS][64] = {0};
	struct end a[SRQ_QPS], b[SRQ_QPS];
	struct dpv_cqe c[SRQ_QPS * SRQ_MSGS];
	int seen[SRQ_QPS] = {0};
	struct dpv_srq *srq;
	struct dpv_cq *rcq;
	uint32_t kr, ks;

	(void)state;
	assert_int_equal(dpv_cq_create(xb, 1024, &rcq), 0);
	assert_int_equal(dpv_srq_create(xb, &si, &srq), 0);
	kr = mr_reg(tb, rbuf, sizeof(rbuf), DPV_ACCESS_LOCAL_WRITE);
	ks = mr_reg(ta, sbuf, sizeof(sbuf), 0);
	for (int i = 0; i < SRQ_QPS * SRQ_MSGS; i++) {
		struct dpv_rwqe r = rwqe((uint64_t)i, rbuf[i], 64, kr);

		post_srq(srq, (uint32_t)i % 2, &r);
	}
	for (int q = 0; q < SRQ_QPS; q++) {
		rc_pair(&a[q], &b[q], false, srq, rcq, 7);
		assert_null(b[q].qp->rq);
		memset(sbuf[q], q, sizeof(sbuf[q]));
		for (int m = 0; m < SRQ_MSGS; m++) {
			struct dpv_swqe w = swqe(DPV_WR_SEND, (uint64_t)m);

			swqe_sge(&w, sbuf[q], (uint32_t)(10 + q), ks);
			post_send(a[q].qp, &w);
		}
	}
	assert_int_equal(poll_n(rcq, c, SRQ_QPS * SRQ_MSGS), SRQ_QPS * SRQ_MSGS);
	for (int i = 0; i < SRQ_QPS * SRQ_MSGS; i++) {
		int q = -1;

		assert_int_equal(c[i].status, DPV_WC_SUCCESS);
		for (int k = 0; k < SRQ_QPS; k++)
			if (b[k].qp->qpn == c[i].qp_num)
				q = k;
		assert_true(q >= 0);
		assert_int_equal(c[i].src_qp, a[q].qp->qpn);
		assert_int_equal(c[i].byte_len, 10 + q);
		assert_int_equal(rbuf[c[i].wr_id][0], q);
		seen[q]++;
	}
	for (int q = 0; q < SRQ_QPS; q++)
		assert_int_equal(seen[q], SRQ_MSGS);
	assert_int_equal(srq->posted, 0);
	for (int q = 0; q < SRQ_QPS; q++) {
		/* ERR on a QP of an SRQ flushes nothing of the SRQ */
		struct dpv_qp_attr at = {.state = DPV_QPS_ERR};
		struct dpv_rwqe r = rwqe(1000, rbuf[0], 64, kr);

		if (q == 0)
			post_srq(srq, 0, &r);
		assert_int_equal(dpv_qp_modify(xb, b[q].qp, &at, DPV_QP_STATE), 0);
		end_close(&a[q]);
		end_close(&b[q]);
	}
	assert_int_equal(cq_left(rcq), 0);
	assert_int_equal(srq->posted, 1);
	dpv_srq_destroy(xb, srq);
	dpv_cq_destroy(rcq);
	mr_dereg(tb, kr);
	mr_dereg(ta, ks);
}

static int limit_events;

static void on_limit(struct dpv_srq *srq, void *arg)
{
	(void)srq;
	(void)arg;
	limit_events++;
}

static void srq_limit_fires_once_below_the_limit(void **state)
{
	struct dpv_srq_init si = {.pd = PD, .max_wr = 16, .max_sge = 1, .lanes = 1, .limit = 4};
	uint8_t rbuf[8][32] = {0}, sbuf[8] = {0};
	uint32_t kr = mr_reg(tb, rbuf, sizeof(rbuf), DPV_ACCESS_LOCAL_WRITE);
	uint32_t ks = mr_reg(ta, sbuf, sizeof(sbuf), 0);
	struct dpv_cqe c[8];
	struct dpv_srq *srq;
	struct end a, b;

	(void)state;
	assert_int_equal(dpv_srq_create(xb, &si, &srq), 0);
	srq->limit_event = on_limit;
	limit_events = 0;
	for (int i = 0; i < 6; i++) {
		struct dpv_rwqe r = rwqe((uint64_t)i, rbuf[i], 32, kr);

		post_srq(srq, 0, &r);
	}
	rc_pair(&a, &b, false, srq, NULL, 7);
	for (int i = 0; i < 4; i++) {
		struct dpv_swqe w = swqe(DPV_WR_SEND, (uint64_t)i);

		swqe_sge(&w, sbuf, sizeof(sbuf), ks);
		post_send(a.qp, &w);
		assert_int_equal(poll_n(b.rcq, c, 1), 1);
		/* 6 posted: the third message leaves 3 < 4 */
		assert_int_equal(limit_events, i >= 2 ? 1 : 0);
	}
	assert_int_equal(srq->limit, 0);
	assert_int_equal(srq->posted, 2);
	end_close(&a);
	end_close(&b);
	dpv_srq_destroy(xb, srq);
	mr_dereg(tb, kr);
	mr_dereg(ta, ks);
}

static void rnr_nak_then_success_when_a_receive_comes(void **state)
{
	uint8_t src[100] = {0}, dst[100] = {0};
	uint32_t ks = mr_reg(ta, src, sizeof(src), 0);
	uint32_t kd = mr_reg(tb, dst, sizeof(dst), DPV_ACCESS_LOCAL_WRITE);
	struct dpv_swqe w = swqe(DPV_WR_SEND, 1);
	struct dpv_rwqe r = rwqe(2, dst, sizeof(dst), kd);
	struct dpv_xport_stats sa = stats(xa), sb = stats(xb);
	struct dpv_cqe c;
	struct end a, b;

	(void)state;
	rc_pair(&a, &b, false, NULL, NULL, 7);
	fill_pattern(src, sizeof(src), 6);
	swqe_sge(&w, src, sizeof(src), ks);
	post_send(a.qp, &w);
	w.wr_id = 3;
	post_send(a.qp, &w);
	pump(200);
	assert_int_equal(cq_left(a.scq), 0);
	assert_true(stats(xb).qps.rnr_naks_sent > sb.qps.rnr_naks_sent);
	assert_true(stats(xa).qps.retrans_rnr > sa.qps.retrans_rnr);
	post_recv(b.qp, &r);
	r.wr_id = 4;
	post_recv(b.qp, &r);
	assert_int_equal(poll_n(b.rcq, &c, 1), 1);
	assert_int_equal(c.status, DPV_WC_SUCCESS);
	assert_int_equal(c.wr_id, 2);
	assert_int_equal(poll_n(b.rcq, &c, 1), 1);
	assert_int_equal(c.wr_id, 4);
	assert_memory_equal(dst, src, sizeof(src));
	assert_int_equal(poll_n(a.scq, &c, 1), 1);
	assert_int_equal(c.wr_id, 1);
	assert_int_equal(c.status, DPV_WC_SUCCESS);
	assert_int_equal(poll_n(a.scq, &c, 1), 1);
	assert_int_equal(c.wr_id, 3);
	pair_close(&a, &b, ks, kd);
}

static void rnr_retry_zero_fails_with_rnr_retry_exc_err(void **state)
{
	uint8_t src[100] = {0};
	uint32_t ks = mr_reg(ta, src, sizeof(src), 0);
	struct dpv_swqe w = swqe(DPV_WR_SEND, 1);
	struct dpv_cqe c[2];
	struct end a, b;

	(void)state;
	rc_pair(&a, &b, false, NULL, NULL, 0);
	swqe_sge(&w, src, sizeof(src), ks);
	post_send(a.qp, &w);
	w.wr_id = 2;
	post_send(a.qp, &w);
	assert_int_equal(poll_n(a.scq, c, 2), 2);
	assert_int_equal(c[0].wr_id, 1);
	assert_int_equal(c[0].status, DPV_WC_RNR_RETRY_EXC_ERR);
	assert_int_equal(c[1].wr_id, 2);
	assert_int_equal(c[1].status, DPV_WC_WR_FLUSH_ERR);
	assert_int_equal(a.qp->attr.state, DPV_QPS_ERR);
	/* nothing was consumed at the responder, which stays up */
	assert_int_equal(b.qp->attr.state, DPV_QPS_RTS);
	end_close(&a);
	end_close(&b);
	mr_dereg(ta, ks);
}

/* A long READ's responses fill the responder's queue; SENDs without a receive behind
 * it are RNR NAKed again and again while the responses go out, then another READ
 * comes. The NAKs replace each other in the queue (it overflowed, and crashed, when
 * each took a slot), and everything completes once receives are posted. */
static void read_then_rnr_naks_then_read_keep_the_responder_bounded(void **state)
{
	const uint32_t rlen = 256u << 10, nsend = 60;
	uint8_t *src = malloc(rlen), *back = calloc(1, 2 * rlen), *dst = calloc(nsend, 64);
	uint8_t msg[64] = {0};
	uint32_t ks = mr_reg(tb, src, rlen, DPV_ACCESS_REMOTE_READ);
	uint32_t kb = mr_reg(ta, back, 2 * rlen, DPV_ACCESS_LOCAL_WRITE);
	uint32_t kd = mr_reg(tb, dst, nsend * 64, DPV_ACCESS_LOCAL_WRITE);
	uint32_t km = mr_reg(ta, msg, sizeof(msg), 0);
	struct dpv_xport_stats sb = stats(xb);
	struct dpv_cqe c;
	struct dpv_swqe w;
	struct end a, b;

	(void)state;
	rc_pair(&a, &b, false, NULL, NULL, 7);
	fill_pattern(src, rlen, 8);
	w = swqe(DPV_WR_RDMA_READ, 0);
	w.remote_addr = (uintptr_t)src;
	w.rkey = ks;
	swqe_sge(&w, back, rlen, kb);
	post_send(a.qp, &w);
	for (uint32_t i = 0; i < nsend; i++) {
		w = swqe(DPV_WR_SEND, 1 + i);
		swqe_sge(&w, msg, sizeof(msg), km);
		post_send(a.qp, &w);
	}
	w = swqe(DPV_WR_RDMA_READ, 1 + nsend);
	w.remote_addr = (uintptr_t)src;
	w.rkey = ks;
	swqe_sge(&w, back + rlen, rlen, kb);
	post_send(a.qp, &w);
	pump(3000);
	assert_true(DELTA(xb, rnr_naks_sent, sb) > 0);
	assert_int_equal(DELTA(xb, resp_queue_full, sb), 0);
	for (uint32_t i = 0; i < nsend; i++) {
		struct dpv_rwqe r = rwqe(100 + i, dst + 64 * i, 64, kd);

		post_recv(b.qp, &r);
	}
	for (uint32_t i = 0; i < nsend + 2; i++) {
		assert_int_equal(poll_n(a.scq, &c, 1), 1);
		assert_int_equal(c.status, DPV_WC_SUCCESS);
		assert_int_equal(c.wr_id, i);
	}
	for (uint32_t i = 0; i < nsend; i++) {
		assert_int_equal(poll_n(b.rcq, &c, 1), 1);
		assert_int_equal(c.status, DPV_WC_SUCCESS);
	}
	assert_memory_equal(back, src, rlen);
	assert_memory_equal(back + rlen, src, rlen);
	assert_int_equal(a.qp->attr.state, DPV_QPS_RTS);
	assert_int_equal(b.qp->attr.state, DPV_QPS_RTS);
	end_close(&a);
	end_close(&b);
	mr_dereg(tb, ks);
	mr_dereg(ta, kb);
	mr_dereg(tb, kd);
	mr_dereg(ta, km);
	free(src);
	free(back);
	free(dst);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(srq_shared_by_16_qps_reports_each_qp),
		cmocka_unit_test(srq_limit_fires_once_below_the_limit),
		cmocka_unit_test(rnr_nak_then_success_when_a_receive_comes),
		cmocka_unit_test(rnr_retry_zero_fails_with_rnr_retry_exc_err),
		cmocka_unit_test(read_then_rnr_naks_then_read_keep_the_responder_bounded),
	};

	return XPORT_RUN_GROUP("transport_srq", tests, argc, argv) ? 1 : 0;
}
