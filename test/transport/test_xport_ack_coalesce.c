/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/transport, ACK coalescing (IBTA 9.7.6.1): the requester asks for an ACK only
 * where one is needed, the responder acknowledges what did not ask after
 * XP_UNASKED_MAX (64) requests or 100 us of quiet, and a lossy link still completes
 * everything.
 */
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_mbuf.h>

#include "xport_test.h"

#define MTU 1024u /* the fixture's path MTU */

static struct dpv_swqe send_of(const uint8_t *src, uint32_t len, uint32_t ks, uint64_t id,
			       bool signaled)
{
	struct dpv_swqe w = swqe(DPV_WR_SEND, id);

	swqe_sge(&w, src, len, ks);
	if (!signaled)
		w.flags &= ~DPV_WR_F_SIGNALED;
	return w;
}

/* Seven unsignaled SENDs and a signaled one, posted together: one AckReq (the
 * signaled one's), one ACK for all eight, nothing unasked. */
static void unsignaled_sends_ask_once_at_the_signaled_one(void **state)
{
	uint8_t src[8], dst[8 * 8];
	uint32_t ks = mr_reg(ta, src, sizeof(src), 0);
	uint32_t kd = mr_reg(tb, dst, sizeof(dst), DPV_ACCESS_LOCAL_WRITE);
	struct dpv_xport_stats sa, sb;
	struct dpv_cqe c[8];
	struct dpv_swqe w;
	struct end a, b;
	uint32_t i;

	(void)state;
	rc_pair(&a, &b, false, NULL, NULL, 7);
	fill_pattern(src, sizeof(src), 3);
	for (i = 0; i < 8; i++) {
		struct dpv_rwqe r = rwqe(100 + i, dst + 8 * i, 8, kd);

		post_recv(b.qp, &r);
	}
	sa = stats(xa);
	sb = stats(xb);
	for (i = 0; i < 8; i++) {
		w = send_of(src, sizeof(src), ks, i, i == 7);
		post_send(a.qp, &w);
	}
	assert_int_equal(poll_n(b.rcq, c, 8), 8);
	assert_int_equal(poll_n(a.scq, c, 1), 1);
	assert_int_equal(c[0].wr_id, 7);
	assert_int_equal(c[0].status, DPV_WC_SUCCESS);
	assert_int_equal(DELTA(xa, ackreq_sent, sa), 1);
	assert_int_equal(DELTA(xb, acks_sent, sb), 1);
	assert_int_equal(DELTA(xb, acks_unasked, sb), 0);
	assert_int_equal(DELTA(xb, acks_coalesced, sb), 0);
	assert_int_equal(DELTA(xa, retrans_packets, sa), 0);
	for (i = 0; i < 8; i++)
		assert_memory_equal(dst + 8 * i, src, 8);
	pair_close(&a, &b, ks, kd);
}

/* A signaled WRITE of 100 packets asks once, at its last; the responder acknowledges
 * the first 64 on its own, then the last: two answers, one of them unasked (or
 * coalesced into the last one's when both fall in one received burst). */
static void the_responder_acks_after_64_unasked_packets(void **state)
{
	const uint32_t len = 100 * MTU;
	uint8_t *src = malloc(len), *dst = calloc(1, len);
	uint32_t ks = mr_reg(ta, src, len, 0);
	uint32_t kd = mr_reg(tb, dst, len, DPV_ACCESS_LOCAL_WRITE | DPV_ACCESS_REMOTE_WRITE);
	struct dpv_xport_stats sa, sb;
	struct dpv_swqe w = swqe(DPV_WR_RDMA_WRITE, 1);
	struct end a, b;

	(void)state;
	rc_pair(&a, &b, false, NULL, NULL, 7);
	fill_pattern(src, len, 9);
	swqe_sge(&w, src, len, ks);
	w.remote_addr = (uint64_t)(uintptr_t)dst;
	w.rkey = kd;
	sa = stats(xa);
	sb = stats(xb);
	exchange(&a, &b, &w, false);
	assert_memory_equal(dst, src, len);
	assert_int_equal(DELTA(xa, ackreq_sent, sa), 1);
	assert_int_equal(DELTA(xb, acks_unasked, sb), 1);
	assert_int_equal(DELTA(xb, acks_sent, sb) + DELTA(xb, acks_coalesced, sb), 2);
	assert_int_equal(DELTA(xa, retrans_packets, sa), 0);
	pair_close(&a, &b, ks, kd);
	free(src);
	free(dst);
}

/* Three unsignaled SENDs and nothing after them: no AckReq, no ACK at once; 100 us of
 * quiet later the responder's tick acknowledges them, before the requester's probe
 * (1 ms) would ask. A round in which the process was held off its core past the probe
 * (a loaded host) proves nothing either way and is run again; without the tick every
 * round ends in the probe. */
static void quiet_unasked_packets_are_acked_by_the_tick(void **state)
{
	uint8_t src[8], dst[3 * 8];
	uint32_t ks = mr_reg(ta, src, sizeof(src), 0);
	uint32_t kd = mr_reg(tb, dst, sizeof(dst), DPV_ACCESS_LOCAL_WRITE);
	struct dpv_xport_stats sa, sb;
	struct dpv_cqe c[3];
	struct dpv_swqe w;
	struct end a, b;
	uint64_t end;
	uint32_t i, round;

	(void)state;
	rc_pair(&a, &b, false, NULL, NULL, 7);
	fill_pattern(src, sizeof(src), 4);
	for (round = 0;; round++) {
		assert_true(round < 20);
		for (i = 0; i < 3; i++) {
			struct dpv_rwqe r = rwqe(200 + i, dst + 8 * i, 8, kd);

			post_recv(b.qp, &r);
		}
		sa = stats(xa);
		sb = stats(xb);
		for (i = 0; i < 3; i++) {
			w = send_of(src, sizeof(src), ks, i, false);
			post_send(a.qp, &w);
		}
		assert_int_equal(poll_n(b.rcq, c, 3), 3);
		assert_int_equal(DELTA(xa, ackreq_sent, sa), 0);
		/* Until the ACK or the probe, whichever comes first. */
		end = rte_get_tsc_cycles() + rte_get_tsc_hz();
		while (DELTA(xb, acks_unasked, sb) == 0 && DELTA(xa, retrans_probe, sa) == 0 &&
		       rte_get_tsc_cycles() < end)
			pump_once();
		if (DELTA(xa, retrans_probe, sa) == 0)
			break;
		/* Held off: let the probe's answer settle, then the next round. */
		end = rte_get_tsc_cycles() + rte_get_tsc_hz() / 100;
		while (rte_get_tsc_cycles() < end)
			pump_once();
		assert_int_equal(cq_left(a.scq), 0);
	}
	/* a little more for anything else that would wrongly come */
	end = rte_get_tsc_cycles() + rte_get_tsc_hz() / 2000;
	while (rte_get_tsc_cycles() < end)
		pump_once();
	assert_int_equal(DELTA(xb, acks_unasked, sb), 1);
	assert_int_equal(DELTA(xb, acks_sent, sb), 1);
	assert_int_equal(DELTA(xa, ackreq_sent, sa), 0);
	assert_int_equal(DELTA(xa, retrans_packets, sa), 0);
	assert_int_equal(cq_left(a.scq), 0);
	/* the slots are free again: a signaled SEND after them completes alone */
	{
		struct dpv_rwqe r = rwqe(203, dst, 8, kd);

		post_recv(b.qp, &r);
	}
	w = send_of(src, sizeof(src), ks, 9, true);
	exchange(&a, &b, &w, true);
	pair_close(&a, &b, ks, kd);
}

/* 400 SENDs, one in sixteen signaled, over a link that loses 5 % of the frames both
 * ways: every receive and every signaled completion comes, in order. */
static void unsignaled_stream_over_loss_completes(void **state)
{
	enum { N = 400, EVERY = 16, WIN = 24 };
	uint8_t src[64], dst[64];
	uint32_t ks = mr_reg(ta, src, sizeof(src), 0);
	uint32_t kd = mr_reg(tb, dst, sizeof(dst), DPV_ACCESS_LOCAL_WRITE);
	struct dpv_xport_stats sa, sb;
	uint32_t posted = 0, recvd = 0, done = 0, rposted = 0;
	struct dpv_cqe c;
	struct end a, b;
	uint64_t end, dropped;

	(void)state;
	rc_pair(&a, &b, false, NULL, NULL, 7);
	fill_pattern(src, sizeof(src), 5);
	sa = stats(xa);
	sb = stats(xb);
	lossy_link(50000, 0, 0, 11);
	end = rte_get_tsc_cycles() + rte_get_tsc_hz() * 20;
	while ((recvd < N || done < N / EVERY) && rte_get_tsc_cycles() < end) {
		while (rposted < N && rposted - recvd < 32) {
			struct dpv_rwqe r = rwqe(rposted, dst, sizeof(dst), kd);

			post_recv(b.qp, &r);
			rposted++;
		}
		/* at most WIN WQEs outstanding: the SQ holds 64 */
		while (posted < N && posted - done * EVERY < WIN) {
			struct dpv_swqe w = send_of(src, sizeof(src), ks, posted,
						    posted % EVERY == EVERY - 1);

			post_send(a.qp, &w);
			posted++;
		}
		pump_once();
		while (dpv_ring_dequeue_burst(b.rcq->ring, &c, 1) == 1) {
			assert_int_equal(c.status, DPV_WC_SUCCESS);
			assert_int_equal(c.wr_id, recvd);
			recvd++;
		}
		while (dpv_ring_dequeue_burst(a.scq->ring, &c, 1) == 1) {
			assert_int_equal(c.status, DPV_WC_SUCCESS);
			assert_int_equal(c.wr_id, done * EVERY + EVERY - 1);
			done++;
		}
	}
	dropped = lossy_a.dropped + lossy_b.dropped;
	lossy_link(0, 0, 0, 0);
	assert_int_equal(recvd, N);
	assert_int_equal(done, N / EVERY);
	assert_true(dropped > 0);
	assert_true(DELTA(xa, retrans_packets, sa) > 0);
	/* fewer asks than messages, and what was not asked was acknowledged anyway */
	assert_true(DELTA(xa, ackreq_sent, sa) < N);
	assert_true(DELTA(xb, acks_sent, sb) > 0);
	pump(200);
	pair_close(&a, &b, ks, kd);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(unsignaled_sends_ask_once_at_the_signaled_one),
		cmocka_unit_test(the_responder_acks_after_64_unasked_packets),
		cmocka_unit_test(quiet_unasked_packets_are_acked_by_the_tick),
		cmocka_unit_test(unsignaled_stream_over_loss_completes),
	};

	return XPORT_RUN_GROUP("transport_ack_coalesce", tests, argc, argv) ? 1 : 0;
}
