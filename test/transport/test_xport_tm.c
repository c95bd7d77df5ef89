/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/transport, tag matching on the transport: expected and unexpected eager messages,
 * no-tag and op completions, rendezvous READs and their FIN, the op lanes' doorbell.
 */
#include <stdlib.h>
#include <string.h>

#include <infiniband/tm_types.h>

#include "xport_test.h"

struct tm_env {
	struct dpv_srq *srq;
	struct dpv_cq *cq;
	struct end a, b;
	uint32_t ks, kr;
	uint8_t *sbuf, *rbuf;
};

static void tm_open(struct tm_env *t)
{
	struct dpv_tm_config cfg = {.max_num_tags = 64, .max_ops = 64, .max_sge = 1};
	struct dpv_srq_init si = {.pd = PD, .max_wr = 64, .max_sge = 1, .lanes = 1, .tm = &cfg};

	assert_int_equal(dpv_cq_create(xb, 256, &t->cq), 0);
	si.cq = t->cq;
	assert_int_equal(dpv_srq_create(xb, &si, &t->srq), 0);
	assert_non_null(t->srq->tm);
	rc_pair(&t->a, &t->b, false, t->srq, NULL, 7);
	t->sbuf = malloc(16384);
	t->rbuf = calloc(1, 16384);
	t->ks = mr_reg(ta, t->sbuf, 16384, 0);
	t->kr = mr_reg(tb, t->rbuf, 16384, DPV_ACCESS_LOCAL_WRITE);
}

static void tm_close(struct tm_env *t)
{
	end_close(&t->a);
	end_close(&t->b);
	dpv_srq_destroy(xb, t->srq);
	dpv_cq_destroy(t->cq);
	mr_dereg(ta, t->ks);
	mr_dereg(tb, t->kr);
	free(t->sbuf);
	free(t->rbuf);
}

/* Post one op as lib/verbs does: dpv_tm_post, then the op lane; the device runs it. */
static uint32_t tm_post(struct tm_env *t, uint8_t opcode, uint8_t flags, uint64_t tag,
			uint32_t handle, uint32_t off, uint32_t len, uint64_t wr_id)
{
	struct dpv_tm_sge sge = {(uintptr_t)(t->rbuf + off), len, t->kr};
	struct dpv_tm_op op = {
		.wr_id = wr_id, .tag = tag, .mask = DPV_TM_MASK_EXACT, .recv_wr_id = wr_id + 1000,
		.sg_list = &sge, .num_sge = 1, .handle = handle, .opcode = opcode, .flags = flags,
	};

	assert_int_equal(dpv_tm_post(t->srq->tm, &op), 0);
	op.sg_list = NULL;
	assert_int_equal(dpv_ring_enqueue_burst(t->srq->tm_ops.lane[0], &op, 1), 1);
	assert_int_equal(dpv_xport_srq_ops(t->srq, 16), 1);
	return op.handle;
}

/* Read the SRQ's CQ as the poll side does: release what ends an entry, skip hidden. */
static int tm_poll(struct tm_env *t, struct dpv_cqe *out, int want)
{
	int got = 0;

	for (int round = 0; round < ROUNDS && got < want; round++) {
		struct dpv_cqe c;

		if (dpv_ring_dequeue_burst(t->cq->ring, &c, 1) == 0) {
			pump_once();
			continue;
		}
		if (c.flags & DPV_WC_F_TM_RELEASE)
			assert_int_equal(dpv_tm_release(t->srq->tm, c.tm_handle), 0);
		if (!(c.flags & DPV_WC_F_HIDDEN))
			out[got++] = c;
	}
	return got;
}

static void tm_send(struct tm_env *t, uint8_t tmh_op, uint64_t tag, uint32_t ctx, uint32_t len)
{
	struct dpv_swqe w = swqe(DPV_WR_SEND, tag);
	struct ibv_tmh *h = (struct ibv_tmh *)t->sbuf;

	h->opcode = tmh_op;
	memset(h->reserved, 0, sizeof(h->reserved));
	h->app_ctx = rte_cpu_to_be_32(ctx);
	h->tag = rte_cpu_to_be_64(tag);
	fill_pattern(t->sbuf + sizeof(*h), len - sizeof(*h), (uint32_t)tag);
	swqe_sge(&w, t->sbuf, len, t->ks);
	w.flags = 0;
	post_send(t->a.qp, &w);
}

/* A rendezvous offer: TMH, RVH naming @p len bytes at @p va (rkey @p rkey), then
 * @p app_len bytes of application header, from 64-byte slot @p slot of sbuf (the
 * device reads a WQE's buffer when it sends it). */
static void tm_send_rndv(struct tm_env *t, uint32_t slot, uint64_t tag, uint32_t ctx,
			 const void *va, uint32_t len, uint32_t rkey, uint32_t app_len)
{
	struct dpv_swqe w = swqe(DPV_WR_SEND, tag);
	uint8_t *buf = t->sbuf + 64 * slot;
	struct ibv_tmh *h = (struct ibv_tmh *)buf;
	struct ibv_rvh *rvh = (struct ibv_rvh *)(buf + sizeof(*h));

	h->opcode = IBV_TMH_RNDV;
	memset(h->reserved, 0, sizeof(h->reserved));
	h->app_ctx = rte_cpu_to_be_32(ctx);
	h->tag = rte_cpu_to_be_64(tag);
	rvh->va = rte_cpu_to_be_64((uintptr_t)va);
	rvh->rkey = rte_cpu_to_be_32(rkey);
	rvh->len = rte_cpu_to_be_32(len);
	fill_pattern(buf + sizeof(*h) + sizeof(*rvh), app_len, (uint32_t)tag);
	swqe_sge(&w, buf, sizeof(*h) + sizeof(*rvh) + app_len, t->ks);
	w.flags = 0;
	post_send(t->a.qp, &w);
}

static void tm_expected_eager_single_and_multi_packet(void **state)
{
	struct tm_env t;
	struct dpv_cqe c[2];
	uint32_t h1, h2;

	(void)state;
	tm_open(&t);
	h1 = tm_post(&t, DPV_TM_OP_ADD, DPV_TM_OP_F_SIGNALED, 7, 0, 0, 4096, 1);
	h2 = tm_post(&t, DPV_TM_OP_ADD, 0, 8, 0, 4096, 8192, 2);
	assert_int_equal(tm_poll(&t, c, 1), 1);
	assert_int_equal(c[0].opcode, DPV_WC_TM_ADD);
	assert_int_equal(c[0].status, DPV_WC_SUCCESS);
	assert_int_equal(c[0].wr_id, 1);
	/* one packet: one completion with the match and the data */
	tm_send(&t, IBV_TMH_EAGER, 7, 0xabcd, 16 + 300);
	assert_int_equal(tm_poll(&t, c, 1), 1);
	assert_int_equal(c[0].status, DPV_WC_SUCCESS);
	assert_int_equal(c[0].opcode, DPV_WC_TM_RECV);
	assert_int_equal(c[0].flags, DPV_WC_F_TM_MATCH | DPV_WC_F_TM_DATA_VALID |
			 DPV_WC_F_TM_RELEASE);
	assert_int_equal(c[0].wr_id, 1001);
	assert_int_equal(c[0].tm_tag, 7);
	assert_int_equal(c[0].tm_priv, 0xabcd);
	assert_int_equal(c[0].tm_handle, h1);
	assert_int_equal(c[0].byte_len, 300);
	assert_int_equal(c[0].qp_num, t.b.qp->qpn);
	assert_memory_equal(t.rbuf, t.sbuf + 16, 300);
	/* five packets: MATCH at the first, DATA_VALID at the last */
	tm_send(&t, IBV_TMH_EAGER, 8, 0x55, 16 + 5000);
	assert_int_equal(tm_poll(&t, c, 2), 2);
	assert_int_equal(c[0].flags, DPV_WC_F_TM_MATCH);
	assert_int_equal(c[0].tm_tag, 8);
	assert_int_equal(c[0].wr_id, 1002);
	assert_int_equal(c[1].status, DPV_WC_SUCCESS);
	assert_int_equal(c[1].flags, DPV_WC_F_TM_DATA_VALID | DPV_WC_F_TM_RELEASE);
	assert_int_equal(c[1].tm_handle, h2);
	assert_int_equal(c[1].byte_len, 5000);
	assert_memory_equal(t.rbuf + 4096, t.sbuf + 16, 5000);
	/* a DEL racing the message that consumed its entry fails with TM_ERR, even
	 * unsignaled (posted before the poll side has seen the entry's end) */
	h1 = tm_post(&t, DPV_TM_OP_ADD, 0, 9, 0, 0, 64, 3);
	tm_send(&t, IBV_TMH_EAGER, 9, 0, 16 + 10);
	pump(20);
	tm_post(&t, DPV_TM_OP_DEL, 0, 0, h1, 0, 0, 4);
	assert_int_equal(tm_poll(&t, c, 2), 2);
	assert_int_equal(c[0].opcode, DPV_WC_TM_RECV);
	assert_int_equal(c[1].opcode, DPV_WC_TM_DEL);
	assert_int_equal(c[1].status, DPV_WC_TM_ERR);
	assert_int_equal(c[1].wr_id, 4);
	assert_int_equal(stats(xb).tm_expected >= 3, 1);
	tm_close(&t);
}

static void tm_unexpected_no_tag_and_op_completions(void **state)
{
	struct tm_env t;
	struct dpv_rwqe r;
	struct dpv_cqe c[2];
	uint32_t h;

	(void)state;
	tm_open(&t);
	r = rwqe(50, t.rbuf + 8192, 4096, t.kr);
	post_srq(t.srq, 0, &r);
	r = rwqe(51, t.rbuf + 12288, 4096, t.kr);
	post_srq(t.srq, 0, &r);
	/* no entry for tag 3: unexpected, whole message into the ordinary WR */
	tm_send(&t, IBV_TMH_EAGER, 3, 0x77, 16 + 2000);
	assert_int_equal(tm_poll(&t, c, 1), 1);
	assert_int_equal(c[0].status, DPV_WC_SUCCESS);
	assert_int_equal(c[0].opcode, DPV_WC_TM_RECV);
	assert_int_equal(c[0].flags, 0);
	assert_int_equal(c[0].tm_tag, 0);
	assert_int_equal(c[0].wr_id, 50);
	assert_int_equal(c[0].byte_len, 16 + 2000);
	assert_memory_equal(t.rbuf + 8192, t.sbuf, 16 + 2000);
	/* NO_TAG: ordinary WR, whole message */
	tm_send(&t, IBV_TMH_NO_TAG, 0, 0, 16 + 40);
	assert_int_equal(tm_poll(&t, c, 1), 1);
	assert_int_equal(c[0].opcode, DPV_WC_TM_NO_TAG);
	assert_int_equal(c[0].wr_id, 51);
	assert_int_equal(c[0].byte_len, 56);
	/* U = 1, S = 0: an ADD reports SYNC_REQ; a SYNC with S = 1 clears it */
	h = tm_post(&t, DPV_TM_OP_ADD, DPV_TM_OP_F_SIGNALED, 1, 0, 0, 64, 5);
	assert_int_equal(tm_poll(&t, c, 1), 1);
	assert_int_equal(c[0].flags, DPV_WC_F_TM_SYNC_REQ);
	{
		struct dpv_tm_op op = {.wr_id = 6, .opcode = DPV_TM_OP_SYNC, .unexpected_cnt = 1,
				       .flags = DPV_TM_OP_F_SIGNALED | DPV_TM_OP_F_SYNC};

		assert_int_equal(dpv_tm_post(t.srq->tm, &op), 0);
		assert_int_equal(dpv_ring_enqueue_burst(t.srq->tm_ops.lane[0], &op, 1), 1);
		assert_int_equal(dpv_xport_srq_ops(t.srq, 16), 1);
	}
	assert_int_equal(tm_poll(&t, c, 1), 1);
	assert_int_equal(c[0].opcode, DPV_WC_TM_SYNC);
	assert_int_equal(c[0].flags, 0);
	/* a signaled DEL: TM_DEL with the release; an unsignaled one: hidden release */
	tm_post(&t, DPV_TM_OP_DEL, DPV_TM_OP_F_SIGNALED, 0, h, 0, 0, 7);
	assert_int_equal(tm_poll(&t, c, 1), 1);
	assert_int_equal(c[0].opcode, DPV_WC_TM_DEL);
	assert_int_equal(c[0].status, DPV_WC_SUCCESS);
	assert_int_equal(c[0].flags, DPV_WC_F_TM_RELEASE);
	h = tm_post(&t, DPV_TM_OP_ADD, 0, 2, 0, 0, 64, 8);
	tm_post(&t, DPV_TM_OP_DEL, 0, 0, h, 0, 0, 9);
	assert_int_equal(tm_poll(&t, c, 1), 0);
	{
		struct dpv_tm_stats ts;

		dpv_tm_stats_get(t.srq->tm, &ts);
		assert_int_equal(ts.allocated, 0);
	}
	/* no ordinary WR and no entry: RNR NAK, then the message lands once one comes */
	tm_send(&t, IBV_TMH_EAGER, 4, 0, 16 + 8);
	pump(50);
	assert_int_equal(tm_poll(&t, c, 1), 0);
	r = rwqe(52, t.rbuf, 64, t.kr);
	post_srq(t.srq, 0, &r);
	assert_int_equal(tm_poll(&t, c, 1), 1);
	assert_int_equal(c[0].wr_id, 52);
	assert_int_equal(c[0].opcode, DPV_WC_TM_RECV);
	assert_int_equal(stats(xb).tm_unexpected >= 2, 1);
	tm_close(&t);
}

static void tm_rendezvous_and_too_long_eager(void **state)
{
	struct tm_env t;
	struct dpv_cqe c[2];
	uint32_t h;

	(void)state;
	tm_open(&t);
	/* rendezvous data longer than the entry's buffer is left to software: headers
	 * placed, RNDV_INCOMPLETE */
	h = tm_post(&t, DPV_TM_OP_ADD, 0, 11, 0, 0, 4096, 1);
	tm_send_rndv(&t, 0, 11, 0x99, NULL, 4097, 0, 8);
	assert_int_equal(tm_poll(&t, c, 1), 1);
	assert_int_equal(c[0].status, DPV_WC_TM_RNDV_INCOMPLETE);
	assert_int_equal(c[0].flags, DPV_WC_F_TM_MATCH | DPV_WC_F_TM_DATA_VALID |
			 DPV_WC_F_TM_RELEASE);
	assert_int_equal(c[0].tm_handle, h);
	assert_int_equal(c[0].tm_priv, 0x99);
	assert_int_equal(c[0].byte_len, 40);
	assert_memory_equal(t.rbuf, t.sbuf, 40);
	/* more than the entry's buffer: LOC_LEN_ERR, entry released */
	h = tm_post(&t, DPV_TM_OP_ADD, 0, 12, 0, 0, 100, 2);
	tm_send(&t, IBV_TMH_EAGER, 12, 0, 16 + 3000);
	assert_int_equal(tm_poll(&t, c, 2), 2);
	assert_int_equal(c[0].flags, DPV_WC_F_TM_MATCH);
	assert_int_equal(c[1].status, DPV_WC_LOC_LEN_ERR);
	assert_int_equal(c[1].flags & DPV_WC_F_TM_RELEASE, DPV_WC_F_TM_RELEASE);
	assert_int_equal(c[1].tm_handle, h);
	assert_int_equal(poll_n(t.a.scq, c, 1), 1);
	assert_int_equal(c[0].status, DPV_WC_REM_INV_REQ_ERR);
	tm_close(&t);
}

/*
 * doc/guides/rendezvous.md: an expected rendezvous whose data fits the entry's buffer
 * is read by the device over the QP the offer came on: MATCH, the READ, a FIN to the
 * sender (a 16-byte SEND with IBV_TMH_FIN, the tag and app_ctx) and DATA_VALID with
 * byte_len the data's length. Several at once complete in the order of their offers.
 */
static void tm_rendezvous_reads_then_fin(void **state)
{
	enum { N = 3, LEN = 5000 };
	struct tm_env t;
	struct dpv_cqe all[2 * N], c[2 * N], f[N];
	uint8_t *src = malloc(N * LEN), fin[N][32];
	struct ibv_tmh *ft;
	struct dpv_rwqe r;
	uint32_t ksrc, kfin, h[N];
	int i, nm, nd;

	(void)state;
	tm_open(&t);
	ksrc = mr_reg(ta, src, N * LEN, DPV_ACCESS_REMOTE_READ);
	kfin = mr_reg(ta, fin, sizeof(fin), DPV_ACCESS_LOCAL_WRITE);
	fill_pattern(src, N * LEN, 77);
	for (i = 0; i < N; i++) {
		r = rwqe(500 + i, fin[i], sizeof(fin[i]), kfin);
		post_recv(t.a.qp, &r);
		h[i] = tm_post(&t, DPV_TM_OP_ADD, 0, 20 + i, 0, (uint32_t)i * LEN, LEN, 10 * i);
	}
	for (i = 0; i < N; i++)
		tm_send_rndv(&t, (uint32_t)i, 20 + i, 0x700 + i, src + i * LEN, LEN - i, ksrc, i * 8);
	assert_int_equal(tm_poll(&t, all, 2 * N), 2 * N);
	/* Each kind in the order of the offers (a READ may end before a later offer's
	 * MATCH). */
	for (i = 0, nm = 0, nd = 0; i < 2 * N; i++)
		c[all[i].flags & DPV_WC_F_TM_MATCH ? nm++ : N + nd++] = all[i];
	assert_int_equal(nm, N);
	/* The sender's FINs, one a rendezvous, in its receive queue. */
	assert_int_equal(poll_n(t.a.rcq, f, N), N);
	for (i = 0; i < N; i++) {
		assert_int_equal(c[i].status, DPV_WC_SUCCESS);
		assert_int_equal(c[i].opcode, DPV_WC_TM_RECV);
		assert_int_equal(c[i].flags, DPV_WC_F_TM_MATCH);
		assert_int_equal(c[i].wr_id, 10 * i + 1000);
		assert_int_equal(c[i].tm_tag, 20 + i);
		assert_int_equal(c[i].tm_priv, 0x700 + i);
		assert_int_equal(c[N + i].status, DPV_WC_SUCCESS);
		assert_int_equal(c[N + i].opcode, DPV_WC_TM_RECV);
		assert_int_equal(c[N + i].flags, DPV_WC_F_TM_DATA_VALID | DPV_WC_F_TM_RELEASE);
		assert_int_equal(c[N + i].tm_handle, h[i]);
		assert_int_equal(c[N + i].wr_id, 10 * i + 1000);
		assert_int_equal(c[N + i].byte_len, LEN - i);
		assert_int_equal(c[N + i].tm_tag, 0);
		assert_memory_equal(t.rbuf + i * LEN, src + i * LEN, LEN - i);
		ft = (struct ibv_tmh *)fin[i];
		assert_int_equal(f[i].status, DPV_WC_SUCCESS);
		assert_int_equal(f[i].wr_id, 500 + i);
		assert_int_equal(f[i].opcode, DPV_WC_RECV);
		assert_int_equal(f[i].byte_len, sizeof(*ft));
		assert_int_equal(ft->opcode, IBV_TMH_FIN);
		assert_int_equal(rte_be_to_cpu_32(ft->app_ctx), 0x700 + i);
		assert_int_equal(rte_be_to_cpu_64(ft->tag), 20 + i);
	}
	assert_int_equal(stats(xb).tm_rndv_reads, N);
	assert_int_equal(stats(xb).tm_rndv_bytes, N * LEN - (N * (N - 1)) / 2);
	tm_close(&t);
	mr_dereg(ta, ksrc);
	mr_dereg(ta, kfin);
	free(src);
}

/* The device's poll runs a TM SRQ's ops once its posters rang, and an op whose
 * completion finds the CQ full waits for room without another ring. */
static void tm_ops_run_when_rung_and_wait_out_a_full_cq(void **state)
{
	struct dpv_tm_config cfg = {.max_num_tags = 8, .max_ops = 16, .max_sge = 1};
	struct dpv_srq_init si = {.pd = PD, .max_wr = 8, .max_sge = 1, .lanes = 1, .tm = &cfg};
	struct dpv_tm_op op = {.opcode = DPV_TM_OP_SYNC, .flags = DPV_TM_OP_F_SIGNALED};
	struct dpv_cqe c[8];
	struct dpv_srq *srq;
	struct dpv_cq *cq;
	uint32_t cap;

	(void)state;
	assert_int_equal(dpv_cq_create(xb, 4, &cq), 0);
	cap = cq->ring->mask + 1;
	si.cq = cq;
	assert_int_equal(dpv_srq_create(xb, &si, &srq), 0);
	for (uint32_t i = 0; i < cap + 2; i++) {
		op.wr_id = 500 + i;
		assert_int_equal(dpv_tm_post(srq->tm, &op), 0);
		assert_int_equal(dpv_ring_enqueue_burst(srq->tm_ops.lane[0], &op, 1), 1);
	}
	/* Not rung: the poll does not look at the lanes. */
	assert_int_equal(dpv_xport_tm_ops(xb, 64), 0);
	dpv_srq_ops_ring(srq);
	assert_int_equal(dpv_xport_tm_ops(xb, 64), cap);
	assert_int_equal(dpv_xport_tm_ops(xb, 64), 0);
	assert_int_equal(dpv_ring_dequeue_burst(cq->ring, c, 8), cap);
	for (uint32_t i = 0; i < cap; i++)
		assert_int_equal(c[i].wr_id, 500 + i);
	/* Room again: the two left run on the next polls, with no new ring. */
	assert_int_equal(dpv_xport_tm_ops(xb, 64), 2);
	assert_int_equal(dpv_xport_tm_ops(xb, 64), 0);
	assert_int_equal(dpv_ring_dequeue_burst(cq->ring, c, 8), 2);
	assert_int_equal(c[0].wr_id, 500 + cap);
	assert_int_equal(c[1].wr_id, 501 + cap);
	assert_int_equal(dpv_tm_ops_outstanding(srq->tm), 0);
	dpv_srq_destroy(xb, srq);
	dpv_cq_destroy(cq);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(tm_expected_eager_single_and_multi_packet),
		cmocka_unit_test(tm_unexpected_no_tag_and_op_completions),
		cmocka_unit_test(tm_rendezvous_and_too_long_eager),
		cmocka_unit_test(tm_rendezvous_reads_then_fin),
		cmocka_unit_test(tm_ops_run_when_rung_and_wait_out_a_full_cq),
	};

	return XPORT_RUN_GROUP("transport_tm", tests, argc, argv) ? 1 : 0;
}
