/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/transport, loss, go-back-N and duplicates: a mixed stream both ways on a lossy
 * link, a lost packet resent after a sequence NAK, 1 MiB messages over loss, duplicates
 * acknowledged and READs answered again, a destroyed QP that lingers.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_mbuf.h>

#include "xport_test.h"

static unsigned int mbufs_free(void)
{
	return rte_mempool_avail_count(pa.pool) + rte_mempool_avail_count(pb.pool);
}

/* mixed_stream() where 5 % of the frames are lost both ways, 1 % duplicated and 2 %
 * reordered: everything arrives once and in order, and the counters show how. */
static void mixed_stream_survives_loss_duplication_and_reordering(void **state)
{
	struct dpv_xport_stats sa = stats(xa), sb = stats(xb), za, zb;
	unsigned int free0 = mbufs_free();
	uint64_t dropped, duplicated, reordered;

	(void)state;
	rc_timeout = 10;
	lossy_link(50000, 10000, 20000, 5);
	mixed_stream(7);
	dropped = lossy_a.dropped + lossy_b.dropped;
	duplicated = lossy_a.duplicated + lossy_b.duplicated;
	reordered = lossy_a.reordered + lossy_b.reordered;
	lossy_link(0, 0, 0, 0);
	rc_timeout = 14;
	za = stats(xa);
	zb = stats(xb);
	assert_true(dropped > 100 && duplicated > 10 && reordered > 10);
	/* recovered by every means: sequence NAKs, tail loss probes, READs asked again */
	assert_true(za.qps.retrans_seq_nak - sa.qps.retrans_seq_nak > 0);
	assert_true(zb.qps.retrans_seq_nak - sb.qps.retrans_seq_nak > 0);
	assert_true(za.qps.retrans_probe + zb.qps.retrans_probe >
		    sa.qps.retrans_probe + sb.qps.retrans_probe);
	assert_true(za.qps.retrans_read + zb.qps.retrans_read >
		    sa.qps.retrans_read + sb.qps.retrans_read);
	assert_true(za.qps.dup_requests + zb.qps.dup_requests >
		    sa.qps.dup_requests + sb.qps.dup_requests);
	assert_int_equal(za.qps.retry_exceeded + zb.qps.retry_exceeded,
			 sa.qps.retry_exceeded + sb.qps.retry_exceeded);
	/* no mbuf kept anywhere */
	pump(20);
	assert_int_equal(mbufs_free(), free0);
}

static int hook_count, hook_drop_at;

static bool drop_one(struct rte_mbuf *m)
{
	(void)m;
	return hook_count++ != hook_drop_at;
}

static void lost_packet_is_resent_after_a_sequence_nak(void **state)
{
	const uint32_t len = 10 * 1024;
	uint8_t *src = malloc(len), *dst = calloc(1, len);
	uint32_t ks = mr_reg(ta, src, len, 0);
	uint32_t kd = mr_reg(tb, dst, len, DPV_ACCESS_LOCAL_WRITE);
	struct dpv_swqe w = swqe(DPV_WR_SEND, 1);
	struct dpv_rwqe r = rwqe(2, dst, len, kd);
	struct dpv_xport_stats sa = stats(xa), sb = stats(xb);
	struct dpv_cqe c;
	struct end a, b;

	(void)state;
	rc_pair(&a, &b, false, NULL, NULL, 7);
	fill_pattern(src, len, 31);
	post_recv(b.qp, &r);
	swqe_sge(&w, src, len, ks);
	post_send(a.qp, &w);
	hook_count = 0;
	hook_drop_at = 3;
	b_rx_hook = drop_one;
	assert_int_equal(poll_n(b.rcq, &c, 1), 1);
	b_rx_hook = NULL;
	assert_int_equal(c.status, DPV_WC_SUCCESS);
	assert_int_equal(c.byte_len, len);
	assert_memory_equal(dst, src, len);
	assert_int_equal(poll_n(a.scq, &c, 1), 1);
	assert_int_equal(c.status, DPV_WC_SUCCESS);
	/* one NAK for the gap, however many packets arrived behind it */
	assert_int_equal(stats(xb).qps.naks_sent - sb.qps.naks_sent, 1);
	assert_true(stats(xb).qps.out_of_seq - sb.qps.out_of_seq >= 1);
	assert_int_equal(stats(xa).qps.naks_received - sa.qps.naks_received, 1);
	/* 10 packets, then the resend from the lost one */
	assert_int_equal(stats(xa).tx_packets - sa.tx_packets -
				 (stats(xa).qps.retrans_probe - sa.qps.retrans_probe),
			 10 + 7);
	pair_close(&a, &b, ks, kd);
	free(src);
	free(dst);
}

/* 1 MiB SEND, WRITE and READ over a link losing 2 % each way, duplicating and
 * reordering 1 %: a lost READ response is asked for again, at once (retrans_read) or by
 * the tail probe when the responses past it are slow to come (retrans_probe: under
 * valgrind the probe's millisecond often passes first); test_xport_read_loss.c counts
 * each way exactly. */
static void one_mib_messages_over_a_lossy_link(void **state)
{
	const uint32_t len = 1u << 20;
	uint8_t *src = malloc(len), *dst = calloc(1, len), *back = calloc(1, len);
	uint32_t ks = mr_reg(ta, src, len, DPV_ACCESS_REMOTE_READ);
	uint32_t kd = mr_reg(tb, dst, len, ACCESS_ALL);
	uint32_t kb = mr_reg(ta, back, len, DPV_ACCESS_LOCAL_WRITE);
	struct dpv_rwqe r = rwqe(2, dst, len, kd);
	struct dpv_xport_stats sa = stats(xa), sb = stats(xb);
	unsigned int free0 = mbufs_free();
	struct dpv_swqe w;
	struct end a, b;

	(void)state;
	rc_timeout = 10;
	rc_pair(&a, &b, false, NULL, NULL, 7);
	rc_timeout = 14;
	fill_pattern(src, len, 77);
	lossy_link(20000, 10000, 10000, 9);
	for (uint64_t k = 0; k < 2; k++) {
		memset(dst, 0, len);
		post_recv(b.qp, &r);
		w = swqe(DPV_WR_SEND, 10 * k + 1);
		swqe_sge(&w, src, len, ks);
		exchange(&a, &b, &w, true);
		assert_memory_equal(dst, src, len);
		memset(dst, 0, len);
		w = swqe(DPV_WR_RDMA_WRITE, 10 * k + 2);
		w.remote_addr = (uintptr_t)dst;
		w.rkey = kd;
		swqe_sge(&w, src, len, ks);
		exchange(&a, &b, &w, false);
		assert_memory_equal(dst, src, len);
		memset(back, 0, len);
		w = swqe(DPV_WR_RDMA_READ, 10 * k + 3);
		w.remote_addr = (uintptr_t)dst;
		w.rkey = kd;
		swqe_sge(&w, back, len, kb);
		exchange(&a, &b, &w, false);
		assert_memory_equal(back, src, len);
	}
	lossy_link(0, 0, 0, 0);
	assert_true(DELTA(xa, retrans_seq_nak, sa) > 0);
	assert_true(DELTA(xa, retrans_read, sa) + DELTA(xa, retrans_probe, sa) > 0);
	assert_true(DELTA(xb, dup_requests, sb) > 0);
	assert_int_equal(DELTA(xa, retry_exceeded, sa), 0);
	end_close(&a);
	end_close(&b);
	pump(20);
	assert_int_equal(mbufs_free(), free0);
	mr_dereg(ta, ks);
	mr_dereg(tb, kd);
	mr_dereg(ta, kb);
	free(src);
	free(dst);
	free(back);
}

static void duplicates_are_acknowledged_and_reads_answered_again(void **state)
{
	uint8_t src[3000] = {0}, dst[3000] = {0}, back[3000] = {0};
	uint32_t ks = mr_reg(ta, src, sizeof(src), DPV_ACCESS_REMOTE_READ);
	uint32_t kd = mr_reg(tb, dst, sizeof(dst), ACCESS_ALL);
	uint32_t kb = mr_reg(ta, back, sizeof(back), DPV_ACCESS_LOCAL_WRITE);
	struct dpv_swqe w = swqe(DPV_WR_SEND, 1);
	struct dpv_rwqe r = rwqe(2, dst, sizeof(dst), kd);
	struct dpv_xport_stats sb;
	struct dpv_cqe c;
	struct end a, b;

	(void)state;
	rc_pair(&a, &b, false, NULL, NULL, 7);
	fill_pattern(src, sizeof(src), 12);
	post_recv(b.qp, &r);
	post_recv(b.qp, &r);
	swqe_sge(&w, src, sizeof(src), ks);
	hook_saved = NULL;
	hook_dup_opcode = DPV_OP_RC_SEND_LAST;
	b_rx_hook = keep_a_copy;
	post_send(a.qp, &w);
	assert_int_equal(poll_n(a.scq, &c, 1), 1);
	b_rx_hook = NULL;
	assert_non_null(hook_saved);
	/* the last packet again: acknowledged, not delivered twice */
	sb = stats(xb);
	dpv_xport_rx(xb, &hook_saved, 1);
	pump(10);
	assert_int_equal(stats(xb).qps.dup_requests - sb.qps.dup_requests, 1);
	assert_int_equal(poll_n(b.rcq, &c, 1), 1);
	assert_int_equal(cq_left(b.rcq), 0);
	assert_int_equal(cq_left(a.scq), 0);
	/* a READ request again: answered again, the completer drops what it has */
	w = swqe(DPV_WR_RDMA_READ, 3);
	w.remote_addr = (uintptr_t)dst;
	w.rkey = kd;
	swqe_sge(&w, back, sizeof(back), kb);
	hook_saved = NULL;
	hook_dup_opcode = DPV_OP_RC_READ_REQUEST;
	b_rx_hook = keep_a_copy;
	post_send(a.qp, &w);
	assert_int_equal(poll_n(a.scq, &c, 1), 1);
	b_rx_hook = NULL;
	assert_int_equal(c.status, DPV_WC_SUCCESS);
	assert_memory_equal(back, src, sizeof(back));
	sb = stats(xa);
	dpv_xport_rx(xb, &hook_saved, 1);
	pump(10);
	assert_int_equal(stats(xa).qps.dup_responses - sb.qps.dup_responses, 3);
	assert_int_equal(cq_left(a.scq), 0);
	assert_int_equal(a.qp->attr.state, DPV_QPS_RTS);
	assert_int_equal(b.qp->attr.state, DPV_QPS_RTS);
	pair_close(&a, &b, ks, kd);
	mr_dereg(ta, kb);
}

/* Device A drops every ACK (and NAK) it receives while set. */
static bool drop_acks(struct rte_mbuf *m)
{
	struct dpv_wire_pkt p;

	return dpv_wire_parse(rte_pktmbuf_mtod(m, const uint8_t *), rte_pktmbuf_data_len(m),
			      &p) != DPV_WIRE_OK ||
	       p.opcode != DPV_OP_RC_ACK;
}

/* b receives a's SEND, every ACK of it is lost, and b's QP is destroyed at once, as a
 * program destroys its QPs after its last completion; then a's resends get through,
 * those that come within @p hold_ms after the destroy excepted. Returns a's
 * completion. */
static struct dpv_cqe send_then_destroy_the_receiver(struct end *a, struct end *b, uint8_t *src,
						     uint8_t *dst, uint32_t len, uint64_t wr_id,
						     uint32_t hold_ms)
{
	uint32_t ks = mr_reg(ta, src, len, 0), kd = mr_reg(tb, dst, len, ACCESS_ALL);
	struct dpv_rwqe r = rwqe(wr_id, dst, len, kd);
	struct dpv_swqe w = swqe(DPV_WR_SEND, wr_id);
	struct dpv_cqe c;

	memset(dst, 0, len);
	post_recv(b->qp, &r);
	swqe_sge(&w, src, len, ks);
	a_rx_hook = drop_acks;
	post_send(a->qp, &w);
	assert_int_equal(poll_n(b->rcq, &c, 1), 1);
	assert_int_equal(c.status, DPV_WC_SUCCESS);
	assert_memory_equal(dst, src, len);
	end_close(b);
	pump_port(&pa, xa); /* the ACK on its way is lost too */
	if (hold_ms != 0)
		drop_next(false, DPV_OP_RC_SEND_ONLY, 0)->until =
			rte_get_tsc_cycles() + rte_get_tsc_hz() / 1000 * hold_ms;
	a_rx_hook = NULL;
	assert_int_equal(poll_n(a->scq, &c, 1), 1);
	b_rx_hook = NULL;
	mr_dereg(ta, ks);
	mr_dereg(tb, kd);
	return c;
}

/* TIME_WAIT for RC (dpv_xport_linger.c). A QP destroyed right after its last receive
 * may take the only ACK of it into a loss: its peer, whose SEND was delivered, resends
 * it to a QP number that has no QP. The destroyed QP's record acknowledges the
 * duplicate again, and the peer's SEND completes with success; without the record
 * (DPV_LINGER_MS 0) it ends in RETRY_EXC_ERR. A new request for the number is no
 * duplicate: dropped, counted in rx_unknown_qp, and its WQE ends in RETRY_EXC_ERR;
 * so does a duplicate that comes after the record has ended. A QP destroyed with no
 * request for a period leaves no record, and nothing to wait for. */
static void destroyed_qp_acknowledges_duplicates_while_it_lingers(void **state)
{
	uint8_t src[64], dst[64];
	struct dpv_xport_stats sa, sb;
	uint32_t ks = mr_reg(ta, src, sizeof(src), 0);
	struct dpv_swqe w;
	struct dpv_cqe c;
	struct end a, b;
	uint64_t t;

	(void)state;
	fill_pattern(src, sizeof(src), 5);
	/* Records of earlier cases end. */
	assert_int_equal(dpv_xport_set_linger_ms(xb, 0), 0);
	assert_int_equal(dpv_xport_set_linger_ms(xb, 1000), 0);
	assert_int_equal(dpv_xport_linger_ms(xb), 1000);
	assert_int_equal(dpv_xport_set_linger_ms(xb, DPV_LINGER_MS_MAX + 1), EINVAL);

	/* connected and idle: no record, nothing to wait for */
	sb = stats(xb);
	rc_pair(&a, &b, false, NULL, NULL, 7);
	end_close(&b);
	end_close(&a);
	assert_int_equal(stats(xb).linger_qps - sb.linger_qps, 0);
	assert_int_equal(dpv_xport_linger_until(xb, NULL, 0), 0);

	/* the ACK lost, the receiver destroyed: the record answers the resend. Timeout
	 * 16 (268 ms): a record of 537 ms, so a test process held off its core for a
	 * while still finds it live; one retry, so what follows ends in 0.54 s. */
	rc_timeout = 16;
	rc_retry_cnt = 1;
	rc_pair(&a, &b, false, NULL, NULL, 7);
	sa = stats(xa);
	sb = stats(xb);
	c = send_then_destroy_the_receiver(&a, &b, src, dst, sizeof(dst), 1, 0);
	assert_int_equal(c.status, DPV_WC_SUCCESS);
	assert_int_equal(c.wr_id, 1);
	assert_int_equal(stats(xb).linger_qps - sb.linger_qps, 1);
	assert_true(stats(xb).linger_acks - sb.linger_acks >= 1);
	assert_int_equal(DELTA(xa, retry_exceeded, sa), 0);
	assert_true(DELTA(xa, retrans_packets, sa) >= 1);
	assert_int_equal(a.qp->attr.state, DPV_QPS_RTS);
	/* the device has to run on for it, unless its peer is the process's own */
	t = dpv_xport_linger_until(xb, NULL, 0);
	assert_true(t != 0 && (int64_t)(t - rte_get_tsc_cycles()) > 0);
	assert_int_equal(dpv_xport_linger_until(xb, &pa.ipv4, 1), 0);

	/* a new SEND to the number is no duplicate: dropped and counted, never acked */
	sa = stats(xa);
	sb = stats(xb);
	w = swqe(DPV_WR_SEND, 2);
	swqe_sge(&w, src, sizeof(src), ks);
	post_send(a.qp, &w);
	assert_int_equal(poll_n(a.scq, &c, 1), 1);
	assert_int_equal(c.status, DPV_WC_RETRY_EXC_ERR);
	assert_int_equal(c.wr_id, 2);
	assert_int_equal(stats(xb).linger_acks - sb.linger_acks, 0);
	assert_true(stats(xb).rx_unknown_qp - sb.rx_unknown_qp >= 1);
	assert_int_equal(DELTA(xa, retry_exceeded, sa), 1);
	end_close(&a);

	/* without the record (linger 0) the delivered SEND fails: the test's control */
	rc_timeout = 12; /* 16.8 ms, three retries: 67 ms to fail */
	rc_retry_cnt = 3;
	assert_int_equal(dpv_xport_set_linger_ms(xb, 0), 0);
	rc_pair(&a, &b, false, NULL, NULL, 7);
	sb = stats(xb);
	c = send_then_destroy_the_receiver(&a, &b, src, dst, sizeof(dst), 3, 0);
	assert_int_equal(c.status, DPV_WC_RETRY_EXC_ERR);
	assert_int_equal(stats(xb).linger_qps - sb.linger_qps, 0);
	assert_true(stats(xb).rx_unknown_qp - sb.rx_unknown_qp >= 1);
	end_close(&a);

	/* a record of 10 ms ends at most 20 ms after the last request: resends held back
	 * for 30 ms after the destroy find it ended (the timer's at 33.6 and 50.4 ms get
	 * through), and the SEND fails as without one */
	assert_int_equal(dpv_xport_set_linger_ms(xb, 10), 0);
	rc_pair(&a, &b, false, NULL, NULL, 7);
	sb = stats(xb);
	c = send_then_destroy_the_receiver(&a, &b, src, dst, sizeof(dst), 4, 30);
	assert_int_equal(c.status, DPV_WC_RETRY_EXC_ERR);
	assert_int_equal(stats(xb).linger_qps - sb.linger_qps, 1);
	assert_int_equal(stats(xb).linger_acks - sb.linger_acks, 0);
	assert_true(stats(xb).rx_unknown_qp - sb.rx_unknown_qp >= 1);
	end_close(&a);

	rc_timeout = 14;
	rc_retry_cnt = 7;
	assert_int_equal(dpv_xport_set_linger_ms(xb, 0), 0);
	assert_int_equal(dpv_xport_set_linger_ms(xb, DPV_LINGER_MS_DEFAULT), 0);
	mr_dereg(ta, ks);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(mixed_stream_survives_loss_duplication_and_reordering),
		cmocka_unit_test(lost_packet_is_resent_after_a_sequence_nak),
		cmocka_unit_test(one_mib_messages_over_a_lossy_link),
		cmocka_unit_test(destroyed_qp_acknowledges_duplicates_while_it_lingers),
		cmocka_unit_test(duplicates_are_acknowledged_and_reads_answered_again),
	};

	return XPORT_RUN_GROUP("transport_loss", tests, argc, argv) ? 1 : 0;
}
