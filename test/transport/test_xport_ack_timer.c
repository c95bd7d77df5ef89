/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/transport, the local ACK timer: a lost last packet, ACK, NAK or READ response
 * recovered, and a vanished peer ending in RETRY_EXC_ERR within the bound.
 */
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_mbuf.h>

#include "xport_test.h"

static bool drop_all(struct rte_mbuf *m)
{
	(void)m;
	return false;
}

static void lost_last_packet_ack_nak_and_read_responses_are_recovered(void **state)
{
	const uint32_t len = 3000;
	uint8_t *src = malloc(len), *dst = calloc(1, len), *back = calloc(1, len);
	uint32_t ks = mr_reg(ta, src, len, DPV_ACCESS_REMOTE_READ);
	uint32_t kd = mr_reg(tb, dst, len, ACCESS_ALL);
	uint32_t kb = mr_reg(ta, back, len, DPV_ACCESS_LOCAL_WRITE);
	struct dpv_rwqe r = rwqe(2, dst, len, kd);
	struct dpv_xport_stats sa, sb;
	struct dropper *d, *d2;
	struct dpv_swqe w;
	struct end a, b;

	(void)state;
	/* The probe comes 1 ms after the last progress, the ACK timer 67 ms after it
	 * (timeout 14): a test process held off its core for a while still sees the
	 * probe first. */
	rc_pair(&a, &b, false, NULL, NULL, 7);
	fill_pattern(src, len, 41);

	/* the last packet of a SEND: nothing after it shows the gap; the tail loss probe
	 * sends it again before the ACK timer would */
	pump(200); /* what the case before still had in flight */
	sa = stats(xa);
	post_recv(b.qp, &r);
	w = swqe(DPV_WR_SEND, 1);
	swqe_sge(&w, src, len, ks);
	d = drop_next(false, DPV_OP_RC_SEND_LAST, 0);
	exchange(&a, &b, &w, true);
	assert_int_equal(d->done, 1);
	assert_memory_equal(dst, src, len);
	assert_true(DELTA(xa, retrans_probe, sa) >= 1);
	assert_int_equal(DELTA(xa, ack_timeouts, sa), 0);

	/* the same, and every probe lost too: the ACK timer resends */
	pump(200); /* what the case before still had in flight */
	sa = stats(xa);
	post_recv(b.qp, &r);
	w = swqe(DPV_WR_SEND, 2);
	swqe_sge(&w, src, len, ks);
	d = drop_next(false, DPV_OP_RC_SEND_LAST, 0);
	/* the timer runs 67 ms: every copy goes for 80 ms */
	d->until = rte_get_tsc_cycles() + rte_get_tsc_hz() * 80 / 1000;
	exchange(&a, &b, &w, true);
	assert_true(d->done >= 2);
	assert_memory_equal(dst, src, len);
	assert_true(DELTA(xa, retrans_probe, sa) >= 1);
	assert_true(DELTA(xa, ack_timeouts, sa) >= 1 && DELTA(xa, retrans_timeout, sa) >= 1);

	/* the ACK: the probe is a duplicate, acknowledged and not placed again */
	pump(200); /* what the case before still had in flight */
	sa = stats(xa);
	sb = stats(xb);
	post_recv(b.qp, &r);
	w = swqe(DPV_WR_SEND, 3);
	swqe_sge(&w, src, 100, ks);
	d = drop_next(true, DPV_OP_RC_ACK, 0);
	exchange(&a, &b, &w, true);
	assert_int_equal(d->done, 1);
	assert_true(DELTA(xa, retrans_probe, sa) >= 1);
	assert_true(DELTA(xb, dup_requests, sb) >= 1);
	assert_int_equal(cq_left(b.rcq), 0);

	/* a NAK: a middle packet is lost, and so is the NAK that says so; the probe, out
	 * of sequence behind what was dropped, draws the NAK again */
	pump(200); /* what the case before still had in flight */
	sa = stats(xa);
	sb = stats(xb);
	post_recv(b.qp, &r);
	w = swqe(DPV_WR_SEND, 4);
	swqe_sge(&w, src, len, ks);
	d = drop_next(false, DPV_OP_RC_SEND_MIDDLE, 0);
	d2 = drop_next(true, DPV_OP_RC_ACK, 0); /* a NAK is an ACK-opcode frame */
	d2->naks_only = true;
	exchange(&a, &b, &w, true);
	assert_int_equal(d->done, 1);
	assert_int_equal(d2->done, 1);
	assert_memory_equal(dst, src, len);
	assert_true(DELTA(xb, seq_naks_sent, sb) >= 2);
	assert_true(DELTA(xa, retrans_seq_nak, sa) >= 1);
	assert_int_equal(DELTA(xa, ack_timeouts, sa), 0);

	/* a READ response in the middle: the gap asks for the rest again, no timer */
	pump(200); /* what the case before still had in flight */
	sa = stats(xa);
	w = swqe(DPV_WR_RDMA_READ, 5);
	w.remote_addr = (uintptr_t)src;
	w.rkey = ks;
	(void)kd;
	swqe_sge(&w, back, len, kb);
	w.remote_addr = (uintptr_t)dst;
	w.rkey = kd;
	d = drop_next(true, DPV_OP_RC_READ_RESP_MIDDLE, 0);
	exchange(&a, &b, &w, false);
	assert_int_equal(d->done, 1);
	assert_memory_equal(back, dst, len);
	assert_true(DELTA(xa, retrans_read, sa) >= 1);
	assert_int_equal(DELTA(xa, ack_timeouts, sa), 0);

	/* the last READ response: the probe asks for it again */
	pump(200); /* what the case before still had in flight */
	sa = stats(xa);
	memset(back, 0, len);
	w.wr_id = 6;
	d = drop_next(true, DPV_OP_RC_READ_RESP_LAST, 0);
	exchange(&a, &b, &w, false);
	assert_int_equal(d->done, 1);
	assert_memory_equal(back, dst, len);
	assert_true(DELTA(xa, retrans_probe, sa) >= 1);
	assert_int_equal(DELTA(xa, ack_timeouts, sa), 0);

	a_rx_hook = b_rx_hook = NULL;
	assert_int_equal(a.qp->attr.state, DPV_QPS_RTS);
	assert_int_equal(b.qp->attr.state, DPV_QPS_RTS);
	pair_close(&a, &b, ks, kd);
	mr_dereg(ta, kb);
	free(src);
	free(dst);
	free(back);
}

/* IBTA 9.7.6.1: with no answer at all, the head WR fails with RETRY_EXC_ERR after
 * retry_cnt retries of the local ACK timeout, not before; the rest is flushed in
 * order and the QP is in ERR, with the fatal event. */
static void vanished_peer_gives_retry_exc_err_within_the_bound(void **state)
{
	/* 4.096 us << 12: 16.8 ms; three retries: four timeouts before the error */
	const double t_ms = 4.096e-3 * (1 << 12), bound_ms = 4 * t_ms;
	uint8_t src[64] = {0};
	uint32_t ks = mr_reg(ta, src, sizeof(src), 0);
	struct dpv_xport_stats sa = stats(xa);
	struct dpv_cqe c[3];
	struct end a, b;
	uint64_t t0, t1;
	double ms;

	(void)state;
	rc_timeout = 12;
	rc_retry_cnt = 3;
	rc_pair(&a, &b, false, NULL, NULL, 7);
	rc_timeout = 14;
	rc_retry_cnt = 7;
	b_rx_hook = drop_all;
	for (uint64_t i = 0; i < 3; i++) {
		struct dpv_swqe w = swqe(DPV_WR_SEND, 10 + i);

		swqe_sge(&w, src, sizeof(src), ks);
		post_send(a.qp, &w);
	}
	t0 = rte_get_tsc_cycles();
	assert_int_equal(poll_n(a.scq, c, 1), 1);
	t1 = rte_get_tsc_cycles();
	assert_int_equal(poll_n(a.scq, c + 1, 2), 2);
	b_rx_hook = NULL;
	ms = (double)(t1 - t0) * 1e3 / (double)rte_get_tsc_hz();
	assert_int_equal(c[0].status, DPV_WC_RETRY_EXC_ERR);
	assert_int_equal(c[0].wr_id, 10);
	assert_int_equal(c[1].status, DPV_WC_WR_FLUSH_ERR);
	assert_int_equal(c[1].wr_id, 11);
	assert_int_equal(c[2].status, DPV_WC_WR_FLUSH_ERR);
	assert_int_equal(c[2].wr_id, 12);
	/* not before the bound; after it by no more than a scheduling hiccup */
	assert_true(ms >= bound_ms * 0.99);
	assert_true(ms < bound_ms + 1000);
	assert_int_equal(DELTA(xa, ack_timeouts, sa), 4);
	assert_int_equal(DELTA(xa, retrans_timeout, sa), 3);
	assert_int_equal(DELTA(xa, retry_exceeded, sa), 1);
	assert_int_equal(DELTA(xa, flushed_wrs, sa), 2);
	assert_int_equal(a.qp->attr.state, DPV_QPS_ERR);
	assert_int_equal(a.fatal, 1);
	end_close(&a);
	end_close(&b);
	mr_dereg(ta, ks);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(lost_last_packet_ack_nak_and_read_responses_are_recovered),
		cmocka_unit_test(vanished_peer_gives_retry_exc_err_within_the_bound),
	};

	return XPORT_RUN_GROUP("transport_ack_timer", tests, argc, argv) ? 1 : 0;
}
