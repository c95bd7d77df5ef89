/* SPDX-License-Identifier: BSD-3-Clause */
/* RC between dpv0 and dpv1: SEND, SEND_WITH_IMM, RDMA WRITE (WITH_IMM), RDMA READ. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dpv_verbs.h"
#include "test_verbs.h"

#define LW IBV_ACCESS_LOCAL_WRITE

/* One SEND of @p len bytes from @p from to @p to's receive buffer, checked whole. */
static void send_and_check(struct ibv_qp *from, struct ibv_cq *from_cq, struct ibv_qp *to,
			   struct ibv_cq *to_cq, uint32_t len, uint32_t seed)
{
	struct ibv_mr *smr = new_mr(side_of(from), len, LW);
	struct ibv_mr *rmr = new_mr(side_of(to), len + 64, LW);
	struct ibv_wc wc;
	static const uint8_t zero[64];

	fill_pattern(smr->addr, len, seed);
	assert_int_equal(post_recv(to, 1000 + seed, rmr->addr, len + 64, rmr->lkey), 0);
	assert_int_equal(post_send(from, IBV_WR_SEND, 2000 + seed, smr->addr, len, smr->lkey,
				   IBV_SEND_SIGNALED), 0);
	expect_wc(to_cq, &wc);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_RECV);
	assert_int_equal(wc.wr_id, 1000 + seed);
	assert_int_equal(wc.byte_len, len);
	assert_int_equal(wc.qp_num, to->qp_num);
	assert_int_equal(wc.src_qp, from->qp_num);
	assert_int_equal(wc.wc_flags & IBV_WC_WITH_IMM, 0);
	assert_true(check_pattern(rmr->addr, len, seed));
	/* Nothing beyond the message was written. */
	assert_memory_equal((uint8_t *)rmr->addr + len, zero, sizeof(zero));
	expect_send_ok(from_cq, 2000 + seed, IBV_WC_SEND);
	expect_quiet(to_cq);
	expect_quiet(from_cq);
}

static void rc_send_small_both_ways(void **state)
{
	struct rc_pair p;

	(void)state;
	rc_pair(&p, &conn_default);
	send_and_check(p.a, p.acq, p.b, p.bcq, 100, 1);
	send_and_check(p.b, p.bcq, p.a, p.acq, 1, 2);
	send_and_check(p.a, p.acq, p.b, p.bcq, TEST_MTU_BYTES, 3);
}

static void rc_send_64k_multi_packet_into_two_sges(void **state)
{
	const uint32_t len = 65536, half = len / 2;
	struct ibv_mr *smr, *rmr;
	struct ibv_recv_wr wr, *bad = NULL;
	struct ibv_sge sge[2];
	struct rc_pair p;
	struct ibv_wc wc;

	(void)state;
	rc_pair(&p, &conn_default);
	smr = new_mr(&A, len, LW);
	rmr = new_mr(&B, len + 4096, LW);
	fill_pattern(smr->addr, len, 64);
	/* The second half lands 4 KiB further on: the scatter list is followed. */
	sge[0] = (struct ibv_sge){(uintptr_t)rmr->addr, half, rmr->lkey};
	sge[1] = (struct ibv_sge){(uintptr_t)rmr->addr + half + 4096, half, rmr->lkey};
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 7;
	wr.sg_list = sge;
	wr.num_sge = 2;
	assert_int_equal(ibv_post_recv(p.b, &wr, &bad), 0);
	assert_int_equal(post_send(p.a, IBV_WR_SEND, 8, smr->addr, len, smr->lkey,
				   IBV_SEND_SIGNALED), 0);
	expect_wc(p.bcq, &wc);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, len);
	assert_int_equal(wc.wr_id, 7);
	assert_memory_equal(rmr->addr, smr->addr, half);
	assert_memory_equal((uint8_t *)rmr->addr + half + 4096, (uint8_t *)smr->addr + half, half);
	for (uint32_t i = half; i < half + 4096; i++)
		assert_int_equal(((uint8_t *)rmr->addr)[i], 0);
	expect_send_ok(p.acq, 8, IBV_WC_SEND);
}

static void rc_send_with_imm_in_network_order(void **state)
{
	struct ibv_mr *smr, *rmr;
	struct rc_pair p;
	struct ibv_wc wc;

	(void)state;
	rc_pair(&p, &conn_default);
	smr = new_mr(&A, 64, LW);
	rmr = new_mr(&B, 64, LW);
	memcpy(smr->addr, "immediate", 10);
	assert_int_equal(post_recv(p.b, 1, rmr->addr, 64, rmr->lkey), 0);
	assert_int_equal(post_send_imm(p.a, IBV_WR_SEND_WITH_IMM, 2, smr->addr, 10, smr->lkey,
				       0x12345678, 0, 0), 0);
	expect_wc(p.bcq, &wc);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_RECV);
	assert_int_equal(wc.byte_len, 10);
	assert_int_equal(wc.wc_flags & IBV_WC_WITH_IMM, IBV_WC_WITH_IMM);
	/* imm_data is big-endian in ibv_wc as in ibv_send_wr. */
	assert_int_equal(wc.imm_data, htobe32(0x12345678));
	assert_string_equal(rmr->addr, "immediate");
	expect_send_ok(p.acq, 2, IBV_WC_SEND);
}

static void rc_rdma_write_lands_without_receive_completion(void **state)
{
	const uint32_t len = 5000, off = 100;
	struct ibv_mr *smr, *rmr;
	struct rc_pair p;

	(void)state;
	rc_pair(&p, &conn_default);
	smr = new_mr(&A, len, LW);
	rmr = new_mr(&B, 8192, LW | IBV_ACCESS_REMOTE_WRITE);
	fill_pattern(smr->addr, len, 5);
	assert_int_equal(post_rdma(p.a, IBV_WR_RDMA_WRITE, 3, smr->addr, len, smr->lkey,
				   (uintptr_t)rmr->addr + off, rmr->rkey), 0);
	expect_send_ok(p.acq, 3, IBV_WC_RDMA_WRITE);
	assert_true(check_pattern((uint8_t *)rmr->addr + off, len, 5));
	assert_int_equal(((uint8_t *)rmr->addr)[off - 1], 0);
	assert_int_equal(((uint8_t *)rmr->addr)[off + len], 0);
	expect_quiet(p.bcq);
}

static void rc_rdma_write_with_imm_consumes_a_receive(void **state)
{
	const uint32_t len = 3000;
	struct ibv_mr *smr, *rmr;
	struct ibv_recv_wr wr, *bad = NULL;
	struct rc_pair p;
	struct ibv_wc wc;

	(void)state;
	rc_pair(&p, &conn_default);
	smr = new_mr(&A, len, LW);
	rmr = new_mr(&B, len, LW | IBV_ACCESS_REMOTE_WRITE);
	fill_pattern(smr->addr, len, 6);
	/* The data goes where the RETH says: the receive needs no buffer. */
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 44;
	assert_int_equal(ibv_post_recv(p.b, &wr, &bad), 0);
	assert_int_equal(post_send_imm(p.a, IBV_WR_RDMA_WRITE_WITH_IMM, 4, smr->addr, len,
				       smr->lkey, 0xcafef00d, (uintptr_t)rmr->addr, rmr->rkey), 0);
	expect_wc(p.bcq, &wc);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	assert_int_equal(wc.wr_id, 44);
	assert_int_equal(wc.wc_flags & IBV_WC_WITH_IMM, IBV_WC_WITH_IMM);
	assert_int_equal(be32toh(wc.imm_data), 0xcafef00d);
	assert_int_equal(wc.byte_len, len);
	assert_int_equal(wc.qp_num, p.b->qp_num);
	assert_true(check_pattern(rmr->addr, len, 6));
	expect_send_ok(p.acq, 4, IBV_WC_RDMA_WRITE);
}

static void rc_rdma_read_multi_packet(void **state)
{
	const uint32_t len = 10000;
	struct ibv_mr *lmr, *rmr;
	struct rc_pair p;
	struct ibv_wc wc;

	(void)state;
	rc_pair(&p, &conn_default);
	lmr = new_mr(&A, len, LW);
	rmr = new_mr(&B, len, IBV_ACCESS_REMOTE_READ);
	fill_pattern(rmr->addr, len, 7);
	assert_int_equal(post_rdma(p.a, IBV_WR_RDMA_READ, 5, lmr->addr, len, lmr->lkey,
				   (uintptr_t)rmr->addr, rmr->rkey), 0);
	expect_wc(p.acq, &wc);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_RDMA_READ);
	assert_int_equal(wc.wr_id, 5);
	assert_int_equal(wc.byte_len, len);
	assert_true(check_pattern(lmr->addr, len, 7));
	expect_quiet(p.bcq);
}

static void rc_send_inline_buffer_reusable_at_once(void **state)
{
	struct ibv_mr *rmr;
	struct rc_pair p;
	struct ibv_wc wc;
	char msg[48];

	(void)state;
	rc_pair(&p, &conn_default);
	rmr = new_mr(&B, 64, LW);
	assert_int_equal(post_recv(p.b, 1, rmr->addr, 64, rmr->lkey), 0);
	fill_pattern(msg, sizeof(msg), 8);
	/* No MR: inline data is copied at post time. */
	assert_int_equal(post_send(p.a, IBV_WR_SEND, 2, msg, sizeof(msg), 0,
				   IBV_SEND_SIGNALED | IBV_SEND_INLINE), 0);
	memset(msg, 0, sizeof(msg));
	expect_wc(p.bcq, &wc);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, sizeof(msg));
	assert_true(check_pattern(rmr->addr, sizeof(msg), 8));
	expect_send_ok(p.acq, 2, IBV_WC_SEND);
}

/* Inline data of every small length, around the 8 and 16 bytes at which the post
 * copies it in words rather than by memcpy(), arrives byte for byte and no longer. */
static void rc_send_inline_small_lengths_arrive_whole(void **state)
{
	static const uint32_t lens[] = {1, 7, 8, 9, 12, 15, 16, 17, 24};
	struct ibv_mr *rmr;
	struct rc_pair p;
	struct ibv_wc wc;
	uint8_t msg[32];
	size_t i;

	(void)state;
	rc_pair(&p, &conn_default);
	rmr = new_mr(&B, 64, LW);
	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		memset(rmr->addr, 0xee, 64);
		assert_int_equal(post_recv(p.b, 1, rmr->addr, 64, rmr->lkey), 0);
		fill_pattern(msg, sizeof(msg), (uint32_t)i + 20);
		assert_int_equal(post_send(p.a, IBV_WR_SEND, 2, msg, lens[i], 0,
					   IBV_SEND_SIGNALED | IBV_SEND_INLINE), 0);
		expect_wc(p.bcq, &wc);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.byte_len, lens[i]);
		assert_memory_equal(rmr->addr, msg, lens[i]);
		assert_int_equal(((uint8_t *)rmr->addr)[lens[i]], 0xee);
		expect_send_ok(p.acq, 2, IBV_WC_SEND);
	}
}

static void rc_many_large_messages_in_flight(void **state)
{
	enum { N = 16, LEN = 65536 };
	struct ibv_mr *smr, *rmr;
	struct ibv_wc wc[N];
	struct rc_pair p;
	int i;

	(void)state;
	rc_pair(&p, &conn_default);
	smr = new_mr(&A, (size_t)N * LEN, LW);
	rmr = new_mr(&B, (size_t)N * LEN, LW);
	for (i = 0; i < N; i++) {
		fill_pattern((uint8_t *)smr->addr + (size_t)i * LEN, LEN, 100 + i);
		assert_int_equal(post_recv(p.b, i, (uint8_t *)rmr->addr + (size_t)i * LEN, LEN,
					   rmr->lkey), 0);
	}
	/* More packets than the requester keeps unacknowledged: the window moves on. */
	for (i = 0; i < N; i++)
		assert_int_equal(post_send(p.a, IBV_WR_SEND, i, (uint8_t *)smr->addr +
					   (size_t)i * LEN, LEN, smr->lkey, IBV_SEND_SIGNALED), 0);
	assert_int_equal(poll_wc(p.bcq, wc, N), N);
	for (i = 0; i < N; i++) {
		assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
		assert_int_equal(wc[i].wr_id, i);
		assert_int_equal(wc[i].byte_len, LEN);
		assert_true(check_pattern((uint8_t *)rmr->addr + (size_t)i * LEN, LEN, 100 + i));
	}
	assert_int_equal(poll_wc(p.acq, wc, N), N);
	for (i = 0; i < N; i++) {
		assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
		assert_int_equal(wc[i].wr_id, i);
	}
}

/* The packets @p qp has sent, less those sent again. */
static uint64_t new_packets(struct ibv_qp *qp)
{
	return qp_xstat(qp, "qp.tx_packets") - qp_xstat(qp, "qp.retrans_packets");
}

/* Wait, without calling verbs, until @p qp has sent @p n packets: a device on an lcore
 * or service core, or the inline helper thread, sends them. */
static uint64_t wait_packets(struct ibv_qp *qp, uint64_t n)
{
	uint64_t end = now_ms() + WAIT_MS;

	while (new_packets(qp) < n && now_ms() < end)
		usleep(1000);
	return new_packets(qp);
}

static bool inline_progress(void)
{
	const char *mode = getenv("DPV_PROGRESS");

	return mode == NULL || strcmp(mode, "inline") == 0;
}

/* The helper's idle time as the environment set it (dpv_verbs_set_inline_idle_us()). */
static uint32_t idle_us_of_env(void)
{
	const char *idle = getenv("DPV_INLINE_IDLE_US");

	return idle != NULL ? (uint32_t)atoi(idle) : 500;
}

/* An RC QP on A of @p depth send WRs whose peer, B's QP, stays in RESET and drops what
 * A sends: no ACK, so every WR A posts stays unfinished (its tail loss probes send the
 * last packet again, counted in qp.retrans_packets). No ACK timer (timeout 0): the WRs
 * stay unfinished however slow the host, and the QP never gives up on them and
 * flushes the rest. */
static struct ibv_qp *unacked_rc(uint32_t depth)
{
	struct ibv_cq *acq = new_cq(&A, 256, NULL, NULL), *bcq = new_cq(&B, 4, NULL, NULL);
	struct ibv_qp *a = new_qp(&A, IBV_QPT_RC, acq, acq, NULL, depth, 1);
	struct ibv_qp *b = new_qp(&B, IBV_QPT_RC, bcq, bcq, NULL, 4, 1);
	struct conn_opts o = conn_default;

	o.timeout = 0;
	rc_to_rts(a, b, &o);
	return a;
}

/* ibv_post_send() sends at once while fewer than 16 WRs of the QP are unfinished; past
 * that its WRs wait for the next poll, or for the helper thread when the program calls
 * no verbs (architecture.md, "Inline progress and the helper thread"). */
static void rc_post_past_16_unfinished_waits_for_a_poll(void **state)
{
	enum { N = 20, MORE = 4 };
	bool inl = inline_progress();
	struct ibv_qp *a = unacked_rc(64);
	struct ibv_mr *mr = new_mr(&A, 64, LW);
	int i;

	(void)state;
	/* The helper must not step in while the posts are counted. */
	if (inl)
		assert_int_equal(dpv_verbs_set_inline_idle_us(1000000), 0);
	for (i = 0; i < N; i++)
		assert_int_equal(post_send(a, IBV_WR_SEND, i, mr->addr, 8, mr->lkey,
					   IBV_SEND_SIGNALED), 0);
	if (!inl) {
		/* The device's own core sends them all. */
		assert_int_equal(wait_packets(a, N), N);
		return;
	}
	assert_int_equal(new_packets(a), 16);
	progress();
	assert_int_equal(new_packets(a), N);
	/* Posts no poll follows: the helper sends them once the program is idle. */
	for (i = 0; i < MORE; i++)
		assert_int_equal(post_send(a, IBV_WR_SEND, N + i, mr->addr, 8, mr->lkey,
					   IBV_SEND_SIGNALED), 0);
	assert_int_equal(new_packets(a), N);
	assert_int_equal(dpv_verbs_set_inline_idle_us(idle_us_of_env()), 0);
	if (idle_us_of_env() != 0)
		assert_int_equal(wait_packets(a, N + MORE), N + MORE);
}

/* A post that fails drives the device all the same: a program that retries a post on
 * ENOMEM, without polling, still has what it posted before sent (and, with ACKs, its
 * SQ emptied). As above, nothing A posts finishes. */
static void rc_post_that_fails_drives_the_device(void **state)
{
	struct ibv_qp *a = unacked_rc(32);
	struct ibv_mr *mr = new_mr(&A, 64, LW);
	uint32_t posted = 0;
	int ret = 0;

	(void)state;
	assert_int_equal(dpv_verbs_set_inline_idle_us(1000000), 0);
	while (posted < 4096 && (ret = post_send(a, IBV_WR_SEND, posted, mr->addr, 8, mr->lkey,
						 IBV_SEND_SIGNALED)) == 0)
		posted++;
	assert_int_equal(ret, ENOMEM);
	/* The SQ holds at least the 32 asked for; past 16 the posts were left for a poll,
	 * and the one that failed sent them. */
	assert_true(posted >= 32);
	if (inline_progress())
		assert_int_equal(new_packets(a), posted);
	else /* the device's own core sends them */
		assert_int_equal(wait_packets(a, posted), posted);
	assert_int_equal(dpv_verbs_set_inline_idle_us(idle_us_of_env()), 0);
}

static void rc_rdma_read_one_mib(void **state)
{
	const uint32_t len = 1u << 20;
	struct ibv_mr *lmr, *rmr;
	struct rc_pair p;
	struct ibv_wc wc;

	(void)state;
	rc_pair(&p, &conn_default);
	lmr = new_mr(&A, len, LW);
	rmr = new_mr(&B, len, IBV_ACCESS_REMOTE_READ);
	fill_pattern(rmr->addr, len, 9);
	assert_int_equal(post_rdma(p.a, IBV_WR_RDMA_READ, 1, lmr->addr, len, lmr->lkey,
				   (uintptr_t)rmr->addr, rmr->rkey), 0);
	expect_wc(p.acq, &wc);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, len);
	assert_true(check_pattern(lmr->addr, len, 9));
}

/* The value of counter @p name among @p n, or UINT64_MAX if it is not there. */
static uint64_t xstat(const struct dpv_verbs_xstat *xs, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (strcmp(xs[i].name, name) == 0)
			return xs[i].value;
	return UINT64_MAX;
}

/* dpv_verbs_query_xstats(): a count on request, the same names every time, each once,
 * and values that follow what the QP and the device did. */
static void rc_counters_by_name_per_device_and_qp(void **state)
{
	struct dpv_verbs_xstat dev0[256], dev1[256], qa[64];
	int n, n1, nq;
	struct rc_pair p;

	(void)state;
	rc_pair(&p, &conn_default);
	n = dpv_verbs_query_xstats(A.ctx, NULL, 0);
	assert_true(n > 30 && n <= 256);
	assert_int_equal(dpv_verbs_query_xstats(A.ctx, dev0, (unsigned int)n), n);
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++)
			assert_string_not_equal(dev0[i].name, dev0[j].name);
	nq = dpv_verbs_query_qp_xstats(p.a, NULL, 0);
	assert_int_equal(xstat(qa, dpv_verbs_query_qp_xstats(p.a, qa, 64), "qp.tx_packets"), 0);
	send_and_check(p.a, p.acq, p.b, p.bcq, 3000, 31);
	n1 = dpv_verbs_query_xstats(A.ctx, dev1, 256);
	assert_int_equal(n1, n);
	for (int i = 0; i < n; i++)
		assert_string_equal(dev0[i].name, dev1[i].name);
	assert_int_equal(dpv_verbs_query_qp_xstats(p.a, qa, 64), nq);
	/* three request packets out, and each packet sent again counted as sent and as
	 * resent (a slow host, an emulated NIC, can let a tail loss probe fire: reliability.md);
	 * one ACK (coalesced) or more back */
	assert_int_equal(xstat(qa, nq, "qp.tx_packets"), 3 + xstat(qa, nq, "qp.retrans_packets"));
	assert_true(xstat(qa, nq, "qp.rx_packets") >= 1);
	assert_true(xstat(dev1, n, "qp.tx_packets") - xstat(dev0, n, "qp.tx_packets") >= 3);
	assert_true(xstat(dev1, n, "port.tx_frames") - xstat(dev0, n, "port.tx_frames") >= 3);
	assert_true(xstat(dev1, n, "xport.rx_bad_icrc") != UINT64_MAX);
	/* the lingering of destroyed QPs (reliability.md) is counted with the rest */
	assert_true(xstat(dev1, n, "xport.linger_qps") != UINT64_MAX);
	assert_true(xstat(dev1, n, "xport.linger_acks") != UINT64_MAX);
	/* and QP 1 and the device's CM (cm.md): nothing of it in RC traffic */
	assert_int_equal(xstat(dev1, n, "xport.rx_gsi"), 0);
	assert_int_equal(xstat(dev1, n, "xport.rx_gsi_dropped"), 0);
	assert_int_equal(xstat(dev1, n, "xport.tx_gsi"), 0);
	assert_int_equal(xstat(dev1, n, "engine.cm_rx_refused"), 0);
	assert_int_equal(xstat(dev1, n, "engine.cm_tx_failed"), 0);
	assert_int_equal(xstat(dev1, n, "engine.cm_events_lost"), 0);
	assert_true(xstat(dev1, n, "engine.polls") > xstat(dev0, n, "engine.polls"));
	/* a short array gets what fits and the whole count */
	assert_int_equal(dpv_verbs_query_xstats(A.ctx, dev1, 2), n);
	assert_string_equal(dev1[0].name, dev0[0].name);
	assert_int_equal(dpv_verbs_query_xstats(NULL, dev1, 2), -EINVAL);
	assert_int_equal(dpv_verbs_query_xstats(A.ctx, NULL, 2), -EINVAL);
	assert_int_equal(dpv_verbs_query_qp_xstats(NULL, qa, 2), -EINVAL);
}

static void rc_qp_reset_and_reconnect(void **state)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_RESET};
	struct rc_pair p;

	(void)state;
	rc_pair(&p, &conn_default);
	send_and_check(p.a, p.acq, p.b, p.bcq, 3000, 20);
	assert_int_equal(ibv_modify_qp(p.a, &a, IBV_QP_STATE), 0);
	assert_int_equal(ibv_modify_qp(p.b, &a, IBV_QP_STATE), 0);
	assert_int_equal(p.a->state, IBV_QPS_RESET);
	connect_rc(p.a, p.b, &conn_default);
	send_and_check(p.a, p.acq, p.b, p.bcq, 3000, 21);
	send_and_check(p.b, p.bcq, p.a, p.acq, 100, 22);
}

static void rc_two_qps_of_one_device(void **state)
{
	struct ibv_cq *cq1, *cq2;
	struct ibv_qp *q1, *q2;

	(void)state;
	/* dpv0 to dpv0: the frames never leave the device. */
	cq1 = new_cq(&A, 64, NULL, NULL);
	cq2 = new_cq(&A, 64, NULL, NULL);
	q1 = new_qp(&A, IBV_QPT_RC, cq1, cq1, NULL, 16, 16);
	q2 = new_qp(&A, IBV_QPT_RC, cq2, cq2, NULL, 16, 16);
	connect_rc(q1, q2, &conn_default);
	send_and_check(q1, cq1, q2, cq2, 5000, 30);
	send_and_check(q2, cq2, q1, cq1, 10, 31);
}

int run_rc_tests(void)
{
	const struct CMUnitTest tests[] = {
		VT(rc_send_small_both_ways),
		VT(rc_send_64k_multi_packet_into_two_sges),
		VT(rc_send_with_imm_in_network_order),
		VT(rc_rdma_write_lands_without_receive_completion),
		VT(rc_rdma_write_with_imm_consumes_a_receive),
		VT(rc_rdma_read_multi_packet),
		VT(rc_send_inline_buffer_reusable_at_once),
		VT(rc_send_inline_small_lengths_arrive_whole),
		VT(rc_many_large_messages_in_flight),
		VT(rc_post_past_16_unfinished_waits_for_a_poll),
		VT(rc_post_that_fails_drives_the_device),
		VT(rc_rdma_read_one_mib),
		VT(rc_counters_by_name_per_device_and_qp),
		VT(rc_qp_reset_and_reconnect),
		VT(rc_two_qps_of_one_device),
	};

	return cmocka_run_group_tests_name("rc", tests, NULL, NULL);
}
