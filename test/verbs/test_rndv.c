/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tag-matching rendezvous (doc/guides/srq.md §4) through <infiniband/verbs.h>, one
 * process: senders on dpv0 (A) send a header (struct ibv_tmh with IBV_TMH_RNDV, struct
 * ibv_rvh naming their data, an application header) to RC QPs of dpv1 (B) attached to
 * a TM SRQ. A header that matches an entry big enough makes the device RDMA-READ the
 * data into the entry's buffers and send the sender a 16-byte FIN; the entry completes
 * twice, MATCH at once and DATA_VALID once the data has landed and the FIN is queued
 * (doc/guides/rendezvous.md).
 *
 * Checked: the completions exactly (status, opcode, wc_flags, wr_id, byte_len, tag,
 * app_ctx, QP), every byte of the data and nothing written past it, the FIN as the
 * sender receives it (on an RQ, a basic SRQ, a TM SRQ) and when it has no receive yet,
 * sizes from 0 B to 16 MiB, entries of several SGEs, buffers too small for the data or
 * for the header or not writable, reads the sender's side refuses, senders that go
 * away, receiver QPs moved to ERR and entries deleted while their read is in flight,
 * unexpected rendezvous that software finishes with its own READ and FIN, many
 * rendezvous in flight on one QP (beyond the 64 the device runs at once) and across
 * the QPs of one SRQ, and a mix with eager, unexpected and NO_TAG messages. With
 * DPV_FAULTS set (meson runs it so) the program runs instead a few dozen rendezvous of
 * 64 KiB to 1 MiB and a hundred small ones over a link that loses, reorders and
 * duplicates frames.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/tm_types.h>

#include "dpv_verbs.h"
#include "verbs_test.h"

#define LW IBV_ACCESS_LOCAL_WRITE
#define RR IBV_ACCESS_REMOTE_READ
#define RW IBV_ACCESS_REMOTE_WRITE
#define TMH_LEN ((uint32_t)sizeof(struct ibv_tmh))
#define RVH_LEN ((uint32_t)sizeof(struct ibv_rvh))
#define HDR_LEN (TMH_LEN + RVH_LEN)
/* The application header a rendezvous may carry: max_rndv_hdr_size (64) - 32. */
#define APP_MAX 32u
#define EXACT UINT64_MAX
#define SIG IBV_OPS_SIGNALED
#define TM_FLAGS (IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID | IBV_WC_TM_SYNC_REQ)
#define WC_EX_FLAGS (IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM | \
		     IBV_WC_EX_WITH_SRC_QP | IBV_WC_EX_WITH_TM_INFO)
#define MAXQ 4u
/* The senders' message slots: a rendezvous header, or an eager message. */
#define SLOT 4096u
#define SLOTS 128u
/* FIN receive buffers: more than the 16 bytes of a FIN, so byte_len says what came. */
#define FSLOT 64u
#define FSLOTS 256u
/* Ordinary SRQ WRs of the receivers' TM SRQ (unexpected messages). */
#define PLAIN 1024u
#define PLAINS 16u
/* Bytes after each entry's data that must stay zero. */
#define TAIL 64u
#define MAXEV 1024u
#define FIN_WR 7000u
#define PLAIN_WR 900u
/* How long a batch of rendezvous may take before the test fails. */
#define BATCH_MS 10000u
/* First PSNs: a 16 MiB read crosses the 24-bit wrap. */
#define PSN_S 0xfffff0u
#define PSN_R 0xffe000u

/* The RC attributes of one sender-receiver pair. */
struct link {
	unsigned int s_access;     /* the sender QP's qp_access_flags */
	uint8_t s_dest_rd_atomic;  /* the sender's max_dest_rd_atomic */
	uint8_t s_timeout;         /* the sender's local ACK timeout exponent */
	uint8_t r_rd_atomic;       /* the receiver's max_rd_atomic: its READs in flight */
	uint8_t r_timeout;         /* the receiver's (its READs' and FINs') timeout */
	uint8_t r_retry;           /* and retry_cnt */
};

#define LINK_DEFAULT {RR | RW, 16, 14, 16, 14, 7}
static const struct link link_default = LINK_DEFAULT;
/* Over the faults port the timeouts of test_loss.c (16.8 ms, 7 retries), and a few
 * READs in flight per QP. */
static const struct link link_lossy = {RR | RW, 16, 12, 4, 12, 7};

/* Where the senders receive their FINs. */
enum fin_to { FIN_RQ, FIN_SRQ, FIN_TM_SRQ };

struct rv_opts {
	unsigned int nq;
	enum fin_to fin;
	uint32_t r_max_send_wr;    /* the receiver QPs' send queue */
	uint32_t max_num_tags;
	struct link link;
};

static const struct rv_opts opts_default = {
	.nq = 1, .fin = FIN_RQ, .r_max_send_wr = 16, .max_num_tags = 128, .link = LINK_DEFAULT,
};

struct rv {
	unsigned int nq;
	enum fin_to fin;
	/* B, receiving */
	struct ibv_cq_ex *cq;      /* the TM SRQ's CQ: receives and ops */
	struct ibv_cq *rsq;        /* the receiver QPs' send CQ */
	struct ibv_srq *srq;
	struct ibv_qp *r[MAXQ];
	struct ibv_mr *pmr;        /* ordinary SRQ WRs' buffers */
	/* A, sending */
	struct ibv_cq *ssq;        /* the sender QPs' send CQ */
	struct ibv_cq *frq;        /* their receive CQ (FIN_RQ, FIN_SRQ) */
	struct ibv_cq_ex *fcq;     /* their TM SRQ's CQ (FIN_TM_SRQ) */
	struct ibv_srq *fsrq;      /* their SRQ (FIN_SRQ, FIN_TM_SRQ) */
	struct ibv_qp *s[MAXQ];
	struct ibv_mr *hmr;        /* message slots */
	struct ibv_mr *fmr;        /* FIN receive buffers */
	unsigned int next_slot, next_fin;
};

/* Completions gathered by collect(), in the order they were polled. */
static struct {
	struct wc_ex rx[MAXEV];    /* the TM SRQ's CQ */
	struct wc_ex fin[MAXEV];   /* the senders' receives */
	struct wc_ex snd[MAXEV];   /* the senders' sends */
	unsigned int nrx, nfin, nsnd;
} seen;

/* ---- set-up ---- */

static void connect_link(struct ibv_qp *s, struct ibv_qp *r, const struct link *l)
{
	const struct conn_opts so = {
		.access = l->s_access, .rnr_retry = 7, .min_rnr_timer = 1,
		.timeout = l->s_timeout, .retry_cnt = 7, .max_rd_atomic = 16,
		.max_dest_rd_atomic = l->s_dest_rd_atomic,
	};
	const struct conn_opts ro = {
		.access = RR | RW, .rnr_retry = 7, .min_rnr_timer = 1,
		.timeout = l->r_timeout, .retry_cnt = l->r_retry, .max_rd_atomic = l->r_rd_atomic,
		.max_dest_rd_atomic = 16,
	};

	rc_to_rts_at(s, r, &so, PSN_S, PSN_R);
	rc_to_rts_at(r, s, &ro, PSN_R, PSN_S);
}

static struct ibv_srq *tm_srq(struct side *s, struct ibv_cq_ex *cq, uint32_t max_num_tags)
{
	struct ibv_srq_init_attr_ex attr = {
		.attr = {.max_wr = 256, .max_sge = 4},
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
			     IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_TM,
		.srq_type = IBV_SRQT_TM,
		.pd = s->pd,
		.cq = ibv_cq_ex_to_cq(cq),
		.tm_cap = {.max_num_tags = max_num_tags, .max_ops = 256},
	};
	struct ibv_srq *srq = ibv_create_srq_ex(s->ctx, &attr);

	assert_non_null(srq);
	track_srq(srq);
	return srq;
}

static struct ibv_cq *fin_recv_cq(struct rv *t)
{
	return t->fcq != NULL ? ibv_cq_ex_to_cq(t->fcq) : t->frq;
}

/* Sender-receiver pair @p q, connected with @p l. */
static void rv_pair(struct rv *t, unsigned int q, uint32_t r_max_send_wr, const struct link *l)
{
	t->s[q] = new_qp(&A, IBV_QPT_RC, t->ssq, fin_recv_cq(t), t->fsrq, 128, 128);
	t->r[q] = new_qp(&B, IBV_QPT_RC, t->rsq, ibv_cq_ex_to_cq(t->cq), t->srq, r_max_send_wr, 0);
	connect_link(t->s[q], t->r[q], l);
	if (q >= t->nq)
		t->nq = q + 1;
}

static void rv_setup(struct rv *t, const struct rv_opts *o)
{
	memset(t, 0, sizeof(*t));
	memset(&seen, 0, sizeof(seen));
	t->fin = o->fin;
	t->cq = new_cq_ex(&B, 1024, WC_EX_FLAGS);
	t->rsq = new_cq(&B, 256, NULL, NULL);
	t->srq = tm_srq(&B, t->cq, o->max_num_tags);
	t->ssq = new_cq(&A, 512, NULL, NULL);
	switch (o->fin) {
	case FIN_RQ:
		t->frq = new_cq(&A, 512, NULL, NULL);
		break;
	case FIN_SRQ:
		t->frq = new_cq(&A, 512, NULL, NULL);
		t->fsrq = new_srq(&A, 256, 1);
		break;
	case FIN_TM_SRQ:
		t->fcq = new_cq_ex(&A, 512, WC_EX_FLAGS);
		t->fsrq = tm_srq(&A, t->fcq, 1);
		break;
	}
	for (unsigned int q = 0; q < o->nq; q++)
		rv_pair(t, q, o->r_max_send_wr, &o->link);
	t->hmr = new_mr(&A, SLOTS * SLOT, LW);
	t->fmr = new_mr(&A, FSLOTS * FSLOT, LW);
	t->pmr = new_mr(&B, PLAINS * PLAIN, LW);
}

static uint8_t *fbuf(struct rv *t, unsigned int slot)
{
	return (uint8_t *)t->fmr->addr + (size_t)slot * FSLOT;
}

static uint8_t *pbuf(struct rv *t, unsigned int i)
{
	return (uint8_t *)t->pmr->addr + (size_t)i * PLAIN;
}

static bool all_zero(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != 0)
			return false;
	return true;
}

/* Wait for @p qp to reach @p want (driving the devices meanwhile). */
static void wait_state(struct ibv_qp *qp, enum ibv_qp_state want)
{
	uint64_t end = now_ms() + WAIT_MS;
	enum ibv_qp_state st;

	while ((st = qp_state_of(qp)) != want && now_ms() < end)
		progress();
	if (st != want)
		fail_msg("QP %#x: state %d, want %d", qp->qp_num, st, want);
}

/* ---- posting ---- */

/* A FIN receive for sender @p q, on its RQ or the senders' SRQ; returns its wr_id. */
static uint64_t post_fin(struct rv *t, unsigned int q)
{
	unsigned int slot = t->next_fin++ % FSLOTS;
	uint8_t *buf = fbuf(t, slot);

	memset(buf, 0, FSLOT);
	if (t->fsrq != NULL)
		assert_int_equal(post_srq_recv(t->fsrq, FIN_WR + slot, buf, FSLOT, t->fmr->lkey), 0);
	else
		assert_int_equal(post_recv(t->s[q], FIN_WR + slot, buf, FSLOT, t->fmr->lkey), 0);
	return FIN_WR + slot;
}

static void post_plain(struct rv *t, unsigned int i)
{
	assert_int_equal(post_srq_recv(t->srq, PLAIN_WR + i, pbuf(t, i), PLAIN, t->pmr->lkey), 0);
}

static uint8_t *next_slot(struct rv *t)
{
	return (uint8_t *)t->hmr->addr + (size_t)(t->next_slot++ % SLOTS) * SLOT;
}

/* Sender @p q sends a rendezvous header naming @p len bytes at @p va / @p rkey, with
 * @p app bytes of application header (a pattern of the tag); the SEND's wr_id is
 * @p wr_id. Returns the message as sent. */
static const uint8_t *send_rndv(struct rv *t, unsigned int q, uint64_t tag, uint32_t app_ctx,
				uint64_t va, uint32_t rkey, uint32_t len, uint32_t app,
				uint64_t wr_id)
{
	uint8_t *m = next_slot(t);
	struct ibv_tmh *h = (void *)m;
	struct ibv_rvh *r = (void *)(m + TMH_LEN);

	memset(m, 0, HDR_LEN);
	h->opcode = IBV_TMH_RNDV;
	h->app_ctx = htobe32(app_ctx);
	h->tag = htobe64(tag);
	r->va = htobe64(va);
	r->rkey = htobe32(rkey);
	r->len = htobe32(len);
	fill_pattern(m + HDR_LEN, app, (uint32_t)tag);
	assert_int_equal(post_send(t->s[q], IBV_WR_SEND, wr_id, m, HDR_LEN + app, t->hmr->lkey,
				   IBV_SEND_SIGNALED), 0);
	return m;
}

/* Sender @p q sends a TMH with @p op and @p len bytes of pattern @p seed after it. */
static void send_tm(struct rv *t, unsigned int q, uint8_t op, uint64_t tag, uint32_t app_ctx,
		    uint32_t len, uint32_t seed, uint64_t wr_id)
{
	uint8_t *m = next_slot(t);
	struct ibv_tmh *h = (void *)m;

	assert_true(len <= SLOT - TMH_LEN);
	memset(h, 0, TMH_LEN);
	h->opcode = op;
	h->app_ctx = htobe32(app_ctx);
	h->tag = htobe64(tag);
	fill_pattern(m + TMH_LEN, len, seed);
	assert_int_equal(post_send(t->s[q], IBV_WR_SEND, wr_id, m, TMH_LEN + len, t->hmr->lkey,
				   IBV_SEND_SIGNALED), 0);
}

static int try_add(struct rv *t, uint64_t tag, struct ibv_sge *sge, int num_sge,
		   uint64_t recv_wr_id, uint32_t *handle)
{
	struct ibv_ops_wr op, *bad = NULL;
	struct wc_ex wc;
	int ret;

	memset(&op, 0, sizeof(op));
	op.wr_id = recv_wr_id | 1ull << 40;
	op.opcode = IBV_WR_TAG_ADD;
	op.flags = SIG;
	op.tm.handle = UINT32_MAX;
	op.tm.add.recv_wr_id = recv_wr_id;
	op.tm.add.sg_list = sge;
	op.tm.add.num_sge = num_sge;
	op.tm.add.tag = tag;
	op.tm.add.mask = EXACT;
	ret = ibv_post_srq_ops(t->srq, &op, &bad);
	if (ret != 0) {
		assert_ptr_equal(bad, &op);
		return ret;
	}
	*handle = op.tm.handle;
	/* Executed before anything is sent to it: the entry is in the list. */
	expect_ex(t->cq, &wc);
	if (wc.status != IBV_WC_SUCCESS)
		fail_msg("ADD of tag %#" PRIx64 ": %s", tag, ibv_wc_status_str(wc.status));
	assert_int_equal(wc.opcode, IBV_WC_TM_ADD);
	assert_int_equal(wc.wr_id, op.wr_id);
	assert_int_equal(wc.wc_flags & IBV_WC_TM_SYNC_REQ, 0);
	return 0;
}

/* An entry of one buffer; returns its handle. */
static uint32_t add_buf(struct rv *t, uint64_t tag, void *addr, uint32_t len, uint32_t lkey,
			uint64_t recv_wr_id)
{
	struct ibv_sge sge = {(uintptr_t)addr, len, lkey};
	uint32_t handle = UINT32_MAX;

	assert_int_equal(try_add(t, tag, &sge, 1, recv_wr_id, &handle), 0);
	return handle;
}

static int post_del(struct rv *t, uint32_t handle, uint64_t wr_id)
{
	struct ibv_ops_wr op, *bad = NULL;

	memset(&op, 0, sizeof(op));
	op.wr_id = wr_id;
	op.opcode = IBV_WR_TAG_DEL;
	op.flags = SIG;
	op.tm.handle = handle;
	return ibv_post_srq_ops(t->srq, &op, &bad);
}

/* ---- completions ---- */

static void fail_wc(const char *what, const struct wc_ex *w)
{
	fail_msg("%s: wr_id %" PRIu64 " status %s opcode %d flags %#x byte_len %u qp %#x "
		 "tag %#" PRIx64 " priv %#x", what, w->wr_id, ibv_wc_status_str(w->status),
		 w->opcode, w->wc_flags, w->byte_len, w->qp_num, w->tm.tag, w->tm.priv);
}

/* The first completion of a matched rendezvous: SUCCESS, TM_RECV, MATCH alone. */
static void check_match(const struct wc_ex *w, struct ibv_qp *r, uint64_t wr_id, uint64_t tag,
			uint32_t app_ctx)
{
	if (w->status != IBV_WC_SUCCESS || w->opcode != IBV_WC_TM_RECV ||
	    w->wc_flags != IBV_WC_TM_MATCH || w->wr_id != wr_id || w->tm.tag != tag ||
	    w->tm.priv != app_ctx || w->qp_num != r->qp_num)
		fail_wc("want MATCH", w);
}

/* The second: SUCCESS, TM_RECV, DATA_VALID alone, byte_len the data's, no tag info. */
static void check_data_valid(const struct wc_ex *w, struct ibv_qp *r, uint64_t wr_id,
			     uint32_t len)
{
	if (w->status != IBV_WC_SUCCESS || w->opcode != IBV_WC_TM_RECV ||
	    w->wc_flags != IBV_WC_TM_DATA_VALID || w->wr_id != wr_id || w->byte_len != len ||
	    w->tm.tag != 0 || w->tm.priv != 0 || w->qp_num != r->qp_num)
		fail_wc("want DATA_VALID", w);
}

static void expect_match(struct rv *t, unsigned int q, uint64_t wr_id, uint64_t tag,
			 uint32_t app_ctx)
{
	struct wc_ex w;

	expect_ex(t->cq, &w);
	check_match(&w, t->r[q], wr_id, tag, app_ctx);
}

static void expect_data_valid(struct rv *t, unsigned int q, uint64_t wr_id, uint32_t len)
{
	struct wc_ex w;

	expect_ex(t->cq, &w);
	check_data_valid(&w, t->r[q], wr_id, len);
}

static void to_wc_ex(const struct ibv_wc *wc, struct wc_ex *w)
{
	memset(w, 0, sizeof(*w));
	w->wr_id = wc->wr_id;
	w->status = wc->status;
	w->opcode = wc->opcode;
	w->wc_flags = wc->wc_flags;
	w->byte_len = wc->byte_len;
	w->qp_num = wc->qp_num;
	w->src_qp = wc->src_qp;
}

/* One receive completion of the senders (their FIN receives). */
static void expect_fin_wc(struct rv *t, struct wc_ex *w)
{
	struct ibv_wc wc;

	if (t->fcq != NULL) {
		expect_ex(t->fcq, w);
		return;
	}
	expect_wc(t->frq, &wc);
	to_wc_ex(&wc, w);
}

/* A FIN as a sender receives it: an ordinary receive of 16 bytes (IBV_WC_RECV, or
 * IBV_WC_TM_NO_TAG on a TM SRQ) holding struct ibv_tmh {IBV_TMH_FIN, app_ctx, tag}.
 * Returns the tag. */
static uint64_t check_fin(struct rv *t, const struct wc_ex *w, uint32_t *app_ctx)
{
	const struct ibv_tmh *h;
	unsigned int slot;

	if (w->status != IBV_WC_SUCCESS || w->byte_len != TMH_LEN ||
	    w->opcode != (t->fin == FIN_TM_SRQ ? IBV_WC_TM_NO_TAG : IBV_WC_RECV) ||
	    (w->wc_flags & TM_FLAGS) != 0 || w->wr_id < FIN_WR || w->wr_id >= FIN_WR + FSLOTS)
		fail_wc("want a FIN", w);
	slot = (unsigned int)(w->wr_id - FIN_WR);
	h = (const void *)fbuf(t, slot);
	if (h->opcode != IBV_TMH_FIN)
		fail_msg("FIN receive %" PRIu64 ": TMH opcode %u", w->wr_id, h->opcode);
	assert_true(all_zero(fbuf(t, slot) + TMH_LEN, FSLOT - TMH_LEN));
	*app_ctx = be32toh(h->app_ctx);
	return be64toh(h->tag);
}

static void expect_fin(struct rv *t, unsigned int q, uint64_t tag, uint32_t app_ctx)
{
	uint32_t got_ctx;
	struct wc_ex w;

	expect_fin_wc(t, &w);
	assert_int_equal(check_fin(t, &w, &got_ctx), tag);
	assert_int_equal(got_ctx, app_ctx);
	assert_int_equal(w.qp_num, t->s[q]->qp_num);
}

/* Append what an extended CQ holds to @p out (at most @p room). */
static unsigned int drain_ex(struct ibv_cq_ex *cq, struct wc_ex *out, unsigned int room)
{
	struct ibv_poll_cq_attr attr = {.comp_mask = 0};
	unsigned int got = 0;
	int ret;

	if (room == 0)
		return 0;
	ret = ibv_start_poll(cq, &attr);
	if (ret == ENOENT)
		return 0;
	assert_int_equal(ret, 0);
	do
		read_ex(cq, &out[got++]);
	while (got < room && ibv_next_poll(cq) == 0);
	ibv_end_poll(cq);
	return got;
}

static unsigned int drain(struct ibv_cq *cq, struct wc_ex *out, unsigned int room)
{
	struct ibv_wc wc[32];
	int n = ibv_poll_cq(cq, room < 32 ? (int)room : 32, wc);

	assert_true(n >= 0);
	for (int i = 0; i < n; i++)
		to_wc_ex(&wc[i], &out[i]);
	return (unsigned int)n;
}

/* When run_msgs() sent its first header. */
static uint64_t batch_start;

/* Completions that come within @p ms more, printed with the time since the batch's
 * first header. */
static void print_late(struct rv *t, uint64_t ms)
{
	unsigned int n = 0;
	struct wc_ex w;

	for (uint64_t end = now_ms() + ms; now_ms() < end;) {
		if (drain_ex(t->cq, &w, 1) == 1)
			printf("# %" PRIu64 " ms: late on the TM SRQ's CQ (%u): wr_id %" PRIu64
			       " status %s flags %#x qp %#x\n", now_ms() - batch_start, ++n,
			       w.wr_id, ibv_wc_status_str(w.status), w.wc_flags, w.qp_num);
		if ((t->fcq != NULL ? drain_ex(t->fcq, &w, 1) : drain(t->frq, &w, 1)) == 1)
			printf("# %" PRIu64 " ms: late at a sender (%u): wr_id %" PRIu64
			       " status %s qp %#x\n", now_ms() - batch_start, ++n, w.wr_id,
			       ibv_wc_status_str(w.status), w.qp_num);
	}
}

/* For a batch that did not end: what completes in 15 s more (it may be late rather
 * than lost), then what the devices and QPs counted. */
static void print_counters(struct rv *t)
{
	static const char *const names[] = {
		"qp.tx_packets", "qp.rx_packets", "qp.retrans_timeout", "qp.retrans_read",
		"qp.retrans_seq_nak", "qp.retrans_rnr", "qp.retrans_probe", "qp.ack_timeouts",
		"qp.timer_deferred",
		"qp.retry_exceeded", "qp.seq_naks_sent", "qp.seq_naks_received",
		"qp.rnr_naks_sent", "qp.rnr_naks_received", "qp.dup_requests",
		"qp.dup_responses", "qp.ghost_responses", "qp.out_of_seq",
		"qp.dup_reads_dropped", "qp.resp_queue_full",
	};
	struct dpv_verbs_tm_state st;

	print_late(t, 15000);
	printf("# B: tm_rndv_reads=%" PRIu64 " tm_rndv_bytes=%" PRIu64 " tm_rndv_failed=%"
	       PRIu64 " cq_overflows=%" PRIu64 "; A: cq_overflows=%" PRIu64 "\n",
	       dev_xstat(B.ctx, "xport.tm_rndv_reads"), dev_xstat(B.ctx, "xport.tm_rndv_bytes"),
	       dev_xstat(B.ctx, "xport.tm_rndv_failed"), dev_xstat(B.ctx, "xport.cq_overflows"),
	       dev_xstat(A.ctx, "xport.cq_overflows"));
	for (unsigned int q = 0; q < t->nq; q++)
		for (unsigned int k = 0; k < 2; k++) {
			struct ibv_qp *qp = k == 0 ? t->s[q] : t->r[q];

			printf("# %s %u (QP %#x, state %d):", k == 0 ? "sender" : "receiver", q,
			       qp->qp_num, qp_state_of(qp));
			for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
				printf(" %s=%" PRIu64, names[i] + 3, qp_xstat(qp, names[i]));
			printf("\n");
		}
	if (dpv_verbs_tm_query(t->srq, &st) == 0)
		printf("# the TM SRQ: %u entries listed, %u handles allocated\n", st.listed,
		       st.allocated);
}

/* Poll the receivers' CQ and the senders' two until they hold @p rx, @p fin and @p snd
 * completions, or fail after @p ms. */
static void collect(struct rv *t, unsigned int rx, unsigned int fin, unsigned int snd,
		    uint64_t ms)
{
	uint64_t end = now_ms() + ms;

	assert_true(rx <= MAXEV && fin <= MAXEV && snd <= MAXEV);
	while (seen.nrx < rx || seen.nfin < fin || seen.nsnd < snd) {
		seen.nrx += drain_ex(t->cq, seen.rx + seen.nrx, rx - seen.nrx);
		if (t->fcq != NULL)
			seen.nfin += drain_ex(t->fcq, seen.fin + seen.nfin, fin - seen.nfin);
		else
			seen.nfin += drain(t->frq, seen.fin + seen.nfin, fin - seen.nfin);
		seen.nsnd += drain(t->ssq, seen.snd + seen.nsnd, snd - seen.nsnd);
		if (now_ms() > end) {
			print_counters(t);
			fail_msg("after %" PRIu64 " ms: %u of %u receiver completions, %u of %u "
				 "FINs, %u of %u sends", ms, seen.nrx, rx, seen.nfin, fin,
				 seen.nsnd, snd);
		}
	}
}

/* ---- batches of expected rendezvous ---- */

struct msg {
	unsigned int q;            /* the pair it goes over */
	uint64_t tag;
	uint32_t app_ctx;
	uint32_t len;
	uint32_t app;              /* application header bytes */
	uint8_t *src;              /* the sender's data, in an MR with REMOTE_READ */
	uint32_t rkey;
	uint8_t *dst;              /* the entry's buffer: len + TAIL bytes */
	uint32_t lkey;
	/* filled by run_msgs() */
	uint64_t wr_id;            /* the entry's recv_wr_id and the header SEND's wr_id */
	uint32_t handle;
	bool matched, valid, fin;
};

/* Lay @p n messages of lengths len[i] out in @p src and @p dst (one after the other,
 * 64-byte aligned, TAIL bytes apart at the receiver), over pairs q = i % nq. */
static void lay_out(struct msg *m, unsigned int n, const uint32_t *len, unsigned int nq,
		    struct ibv_mr *src, struct ibv_mr *dst)
{
	size_t so = 0, d = 0;

	for (unsigned int i = 0; i < n; i++) {
		memset(&m[i], 0, sizeof(m[i]));
		m[i].q = i % nq;
		m[i].tag = 0x5a00000000ull + i * 0x10001ull;
		m[i].app_ctx = 0xc0de0000u + i;
		m[i].len = len[i];
		m[i].app = i % (APP_MAX + 1);
		m[i].src = (uint8_t *)src->addr + so;
		m[i].rkey = src->rkey;
		m[i].dst = (uint8_t *)dst->addr + d;
		m[i].lkey = dst->lkey;
		so += (len[i] + 63u) & ~(size_t)63;
		d += ((len[i] + 63u) & ~(size_t)63) + TAIL;
		assert_true(so <= src->length && d <= dst->length);
	}
}

static size_t src_bytes(const uint32_t *len, unsigned int n)
{
	size_t s = 0;

	for (unsigned int i = 0; i < n; i++)
		s += (len[i] + 63u) & ~(size_t)63;
	return s ? s : 64;
}

static size_t dst_bytes(const uint32_t *len, unsigned int n)
{
	return src_bytes(len, n) + (size_t)n * TAIL;
}

static struct msg *msg_of(struct msg *m, unsigned int n, uint64_t wr_id)
{
	if (wr_id < 1000 || wr_id >= 1000 + n)
		return NULL;
	return &m[wr_id - 1000];
}

/*
 * Every message's entry added, its FIN receive posted and its header sent (in index
 * order, so the headers of one pair arrive in index order); then every completion
 * checked: per pair, MATCHes in header order, DATA_VALIDs in header order each after
 * its MATCH, FINs in header order, sends successful; every byte of each entry's data
 * and the TAIL after it zero; and nothing more arrives.
 *
 * With @p hold, the FIN receives are posted only once @p hold headers have been matched
 * and no more within QUIET_MS: a rendezvous whose FIN is not acknowledged holds its
 * place among the 64 a QP runs (doc/guides/rendezvous.md), so the next header waits.
 */
static void run_msgs(struct rv *t, struct msg *m, unsigned int n, unsigned int hold)
{
	int last_match[MAXQ], last_valid[MAXQ], last_fin[MAXQ], last_send[MAXQ];

	assert_true(n <= MAXEV / 2);
	for (unsigned int i = 0; i < n; i++) {
		fill_pattern(m[i].src, m[i].len, (uint32_t)m[i].tag + 1);
		memset(m[i].dst, 0, (size_t)m[i].len + TAIL);
		m[i].wr_id = 1000 + i;
		m[i].handle = add_buf(t, m[i].tag, m[i].dst, m[i].len + TAIL, m[i].lkey,
				      m[i].wr_id);
	}
	for (unsigned int i = 0; i < n && hold == 0; i++)
		post_fin(t, m[i].q);
	seen.nrx = seen.nfin = seen.nsnd = 0;
	batch_start = now_ms();
	for (unsigned int i = 0; i < n; i++)
		send_rndv(t, m[i].q, m[i].tag, m[i].app_ctx, (uintptr_t)m[i].src, m[i].rkey,
			  m[i].len, m[i].app, m[i].wr_id);
	if (hold != 0) {
		uint64_t end = now_ms() + BATCH_MS;
		unsigned int matched = 0;

		while (matched < hold || now_ms() < end) {
			unsigned int got = drain_ex(t->cq, seen.rx + seen.nrx, 2 * n - seen.nrx);

			for (unsigned int e = seen.nrx; e < seen.nrx + got; e++)
				matched += seen.rx[e].wc_flags == IBV_WC_TM_MATCH;
			seen.nrx += got;
			/* Once @p hold are in, watch QUIET_MS for one more. */
			if (matched == hold && end > now_ms() + QUIET_MS)
				end = now_ms() + QUIET_MS;
			if (matched < hold && now_ms() > end) {
				print_counters(t);
				fail_msg("%u of the first %u headers matched", matched, hold);
			}
		}
		if (matched != hold)
			fail_msg("%u headers matched, beyond the %u a QP runs at once", matched,
				 hold);
		for (unsigned int i = 0; i < n; i++)
			post_fin(t, m[i].q);
	}
	collect(t, 2 * n, n, n, BATCH_MS);

	for (unsigned int q = 0; q < MAXQ; q++)
		last_match[q] = last_valid[q] = last_fin[q] = last_send[q] = -1;
	for (unsigned int e = 0; e < seen.nsnd; e++) {
		const struct wc_ex *w = &seen.snd[e];
		struct msg *x = msg_of(m, n, w->wr_id);

		if (x == NULL || w->status != IBV_WC_SUCCESS || w->opcode != IBV_WC_SEND ||
		    (int)(x - m) <= last_send[x->q])
			fail_wc("want the header's SEND, in order", w);
		last_send[x->q] = (int)(x - m);
	}
	for (unsigned int e = 0; e < seen.nrx; e++) {
		const struct wc_ex *w = &seen.rx[e];
		struct msg *x = msg_of(m, n, w->wr_id);
		int i;

		if (x == NULL)
			fail_wc("not an entry's", w);
		i = (int)(x - m);
		if (!x->matched) {
			check_match(w, t->r[x->q], x->wr_id, x->tag, x->app_ctx);
			if (i <= last_match[x->q])
				fail_wc("MATCH out of header order", w);
			last_match[x->q] = i;
			x->matched = true;
		} else if (!x->valid) {
			check_data_valid(w, t->r[x->q], x->wr_id, x->len);
			if (i <= last_valid[x->q])
				fail_wc("DATA_VALID out of header order", w);
			last_valid[x->q] = i;
			x->valid = true;
		} else {
			fail_wc("a third completion", w);
		}
	}
	for (unsigned int e = 0; e < seen.nfin; e++) {
		const struct wc_ex *w = &seen.fin[e];
		uint32_t ctx;
		uint64_t tag = check_fin(t, w, &ctx);
		struct msg *x = NULL;

		for (unsigned int i = 0; i < n && x == NULL; i++)
			if (m[i].tag == tag)
				x = &m[i];
		if (x == NULL || x->fin || ctx != x->app_ctx || w->qp_num != t->s[x->q]->qp_num ||
		    (int)(x - m) <= last_fin[x->q])
			fail_msg("FIN of tag %#" PRIx64 " app_ctx %#x on QP %#x: not the next one "
				 "expected", tag, ctx, w->qp_num);
		last_fin[x->q] = (int)(x - m);
		x->fin = true;
	}
	for (unsigned int i = 0; i < n; i++) {
		if (memcmp(m[i].dst, m[i].src, m[i].len) != 0)
			fail_msg("rendezvous %u (%u bytes): data differs", i, m[i].len);
		if (!all_zero(m[i].dst + m[i].len, TAIL))
			fail_msg("rendezvous %u (%u bytes): written past the data", i, m[i].len);
		/* The entry ended with its DATA_VALID: its handle is free. */
		assert_int_equal(post_del(t, m[i].handle, 1), EINVAL);
	}
	expect_quiet_ex(t->cq);
	expect_quiet(t->ssq);
	if (t->fcq != NULL)
		expect_quiet_ex(t->fcq);
	else
		expect_quiet(t->frq);
}

/* Messages of the given lengths over pairs i % nq, each from and into buffers of its
 * own. */
static void batch(struct rv *t, const uint32_t *len, unsigned int n, unsigned int hold)
{
	struct msg *m = new_buf(n * sizeof(*m));
	struct ibv_mr *src = new_mr(&A, src_bytes(len, n), RR);
	struct ibv_mr *dst = new_mr(&B, dst_bytes(len, n), LW);

	lay_out(m, n, len, t->nq, src, dst);
	run_msgs(t, m, n, hold);
}

/* ---- one expected rendezvous, step by step ---- */

/* A rendezvous of @p len bytes with the full application header into a buffer larger
 * than the data: the SEND's completion, MATCH, the FIN, DATA_VALID, in that order where
 * one CQ holds them, every byte checked. */
static void expected_step_by_step(enum fin_to fin, uint32_t len)
{
	struct rv_opts o = opts_default;
	const uint64_t tag = 0x0123456789abcdefull;
	const uint32_t ctx = 0xfeedf00d;
	struct ibv_mr *src, *dst;
	uint64_t fin_wr;
	struct rv t;

	o.fin = fin;
	rv_setup(&t, &o);
	src = new_mr(&A, len, RR);
	dst = new_mr(&B, (size_t)len + 4096, LW);
	fill_pattern(src->addr, len, 41);
	add_buf(&t, tag, dst->addr, len + 4096, dst->lkey, 77);
	fin_wr = post_fin(&t, 0);
	send_rndv(&t, 0, tag, ctx, (uintptr_t)src->addr, src->rkey, len, APP_MAX, 5);
	expect_send_ok(t.ssq, 5, IBV_WC_SEND);
	expect_match(&t, 0, 77, tag, ctx);
	expect_fin(&t, 0, tag, ctx);
	assert_int_equal(fin_wr, FIN_WR);
	expect_data_valid(&t, 0, 77, len);
	assert_memory_equal(dst->addr, src->addr, len);
	/* Neither the application header nor anything else past the data. */
	assert_true(all_zero((uint8_t *)dst->addr + len, 4096));
	expect_quiet_ex(t.cq);
	expect_quiet(t.ssq);
	if (t.fcq != NULL)
		expect_quiet_ex(t.fcq);
	else
		expect_quiet(t.frq);
	assert_int_equal(qp_state_of(t.r[0]), IBV_QPS_RTS);
	assert_int_equal(qp_state_of(t.s[0]), IBV_QPS_RTS);
}

static void rndv_expected_fin_to_sender_rq(void **state)
{
	(void)state;
	expected_step_by_step(FIN_RQ, 300007);
}

static void rndv_expected_fin_to_sender_basic_srq(void **state)
{
	(void)state;
	expected_step_by_step(FIN_SRQ, 300007);
}

static void rndv_expected_fin_to_sender_tm_srq_as_no_tag(void **state)
{
	(void)state;
	expected_step_by_step(FIN_TM_SRQ, 300007);
}

static void rndv_receiver_qp_without_send_queue(void **state)
{
	static const uint32_t len[] = {200000, 1, 70000};
	struct rv_opts o = opts_default;
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;
	struct rv t;

	(void)state;
	o.r_max_send_wr = 0;
	rv_setup(&t, &o);
	assert_int_equal(ibv_query_qp(t.r[0], &attr, IBV_QP_CAP, &init), 0);
	assert_int_equal(attr.cap.max_send_wr, 0);
	batch(&t, len, 3, 0);
}

/* The sender has no receive for the FIN at first: the receive completes DATA_VALID as
 * the FIN is queued, without waiting for its acknowledgement
 * (doc/guides/rendezvous.md); the FIN is RNR NAKed and sent again (rnr_retry 7: until
 * it is taken) and reaches the sender once it posts a receive; the QP goes on. */
static void rndv_data_valid_does_not_wait_for_the_fins_ack(void **state)
{
	const uint32_t len = 100000;
	struct ibv_mr *src, *dst;
	uint64_t end;
	struct rv t;

	(void)state;
	rv_setup(&t, &opts_default);
	src = new_mr(&A, len, RR);
	dst = new_mr(&B, len, LW);
	fill_pattern(src->addr, len, 49);
	add_buf(&t, 0x91, dst->addr, len, dst->lkey, 140);
	send_rndv(&t, 0, 0x91, 0x9, (uintptr_t)src->addr, src->rkey, len, 0, 1);
	expect_send_ok(t.ssq, 1, IBV_WC_SEND);
	expect_match(&t, 0, 140, 0x91, 0x9);
	expect_data_valid(&t, 0, 140, len);
	assert_memory_equal(dst->addr, src->addr, len);
	/* Without a receive at the sender the FIN is refused, again and again. */
	end = now_ms() + WAIT_MS;
	while (qp_xstat(t.r[0], "qp.rnr_naks_received") == 0 && now_ms() < end)
		progress();
	assert_true(qp_xstat(t.r[0], "qp.rnr_naks_received") >= 1);
	expect_quiet(t.frq);
	post_fin(&t, 0);
	expect_fin(&t, 0, 0x91, 0x9);
	assert_int_equal(qp_state_of(t.r[0]), IBV_QPS_RTS);
	expect_quiet_ex(t.cq);
}

/* ---- sizes and buffers ---- */

static void rndv_sizes_0_b_to_1_mib(void **state)
{
	static const uint32_t len[] = {
		0, 1, 2, 63, TEST_MTU_BYTES - 1, TEST_MTU_BYTES, TEST_MTU_BYTES + 1,
		3 * TEST_MTU_BYTES + 7, 4096, 65535, 65536, 65537, 1000003, 1u << 20,
	};
	struct rv t;

	(void)state;
	rv_setup(&t, &opts_default);
	batch(&t, len, sizeof(len) / sizeof(len[0]), 0);
}

static void rndv_16_mib(void **state)
{
	static const uint32_t len[] = {16u << 20};
	struct rv t;

	(void)state;
	rv_setup(&t, &opts_default);
	batch(&t, len, 1, 0);
}

/* A zero-length rendezvous into an entry without buffers: still MATCH, FIN, DATA_VALID. */
static void rndv_zero_length_into_entry_without_sges(void **state)
{
	const uint64_t tag = 0x77;
	struct ibv_mr *src;
	uint32_t handle;
	struct rv t;

	(void)state;
	rv_setup(&t, &opts_default);
	src = new_mr(&A, 64, RR);
	assert_int_equal(try_add(&t, tag, NULL, 0, 88, &handle), 0);
	post_fin(&t, 0);
	send_rndv(&t, 0, tag, 3, (uintptr_t)src->addr, src->rkey, 0, 8, 1);
	expect_send_ok(t.ssq, 1, IBV_WC_SEND);
	expect_match(&t, 0, 88, tag, 3);
	expect_fin(&t, 0, tag, 3);
	expect_data_valid(&t, 0, 88, 0);
	expect_quiet_ex(t.cq);
}

static void rndv_into_entry_of_several_sges(void **state)
{
	const uint32_t len = 100000, l0 = 1000, l1 = 5000, l2 = 17;
	const uint32_t l3 = len - l0 - l1 - l2 + 100;
	const uint64_t tag = 0x5e5e;
	struct ibv_mr *src, *b1, *b2;
	struct ibv_sge sge[4];
	uint8_t *p1, *p2, *s;
	uint32_t handle;
	struct rv t;

	(void)state;
	rv_setup(&t, &opts_default);
	src = new_mr(&A, len, RR);
	b1 = new_mr(&B, 4096, LW);
	b2 = new_mr(&B, 8192 + l3 + 64, LW);
	p1 = b1->addr;
	p2 = b2->addr;
	s = src->addr;
	fill_pattern(s, len, 42);
	/* Two regions, out of address order, a piece of 17 bytes among them. */
	sge[0] = (struct ibv_sge){(uintptr_t)p1, l0, b1->lkey};
	sge[1] = (struct ibv_sge){(uintptr_t)p2, l1, b2->lkey};
	sge[2] = (struct ibv_sge){(uintptr_t)(p1 + 2048), l2, b1->lkey};
	sge[3] = (struct ibv_sge){(uintptr_t)(p2 + 8192), l3, b2->lkey};
	assert_int_equal(try_add(&t, tag, sge, 4, 99, &handle), 0);
	post_fin(&t, 0);
	send_rndv(&t, 0, tag, 4, (uintptr_t)s, src->rkey, len, 0, 1);
	expect_send_ok(t.ssq, 1, IBV_WC_SEND);
	expect_match(&t, 0, 99, tag, 4);
	expect_fin(&t, 0, tag, 4);
	expect_data_valid(&t, 0, 99, len);
	assert_memory_equal(p1, s, l0);
	assert_memory_equal(p2, s + l0, l1);
	assert_memory_equal(p1 + 2048, s + l0 + l1, l2);
	assert_memory_equal(p2 + 8192, s + l0 + l1 + l2, len - l0 - l1 - l2);
	assert_true(all_zero(p1 + l0, 2048 - l0));
	assert_true(all_zero(p1 + 2048 + l2, 4096 - 2048 - l2));
	assert_true(all_zero(p2 + l1, 8192 - l1));
	assert_true(all_zero(p2 + 8192 + (len - l0 - l1 - l2), 100 + 64));
}

/* Buffers for fewer than len bytes: one completion, RNDV_INCOMPLETE, the whole header
 * message placed, no read, no FIN; the QP goes on. */
static void rndv_buffer_smaller_than_data_rndv_incomplete(void **state)
{
	const uint32_t len = 4000, cap = 1000, msg = HDR_LEN + APP_MAX;
	const uint64_t tag = 0x1717;
	struct ibv_mr *src, *dst;
	const uint8_t *sent;
	uint64_t reads;
	uint32_t handle;
	struct wc_ex w;
	struct rv t;

	(void)state;
	rv_setup(&t, &opts_default);
	src = new_mr(&A, len, RR);
	dst = new_mr(&B, 4096, LW);
	fill_pattern(src->addr, len, 43);
	reads = dev_xstat(B.ctx, "xport.tm_rndv_reads");
	handle = add_buf(&t, tag, dst->addr, cap, dst->lkey, 66);
	post_fin(&t, 0);
	sent = send_rndv(&t, 0, tag, 0x3131, (uintptr_t)src->addr, src->rkey, len, APP_MAX, 1);
	expect_send_ok(t.ssq, 1, IBV_WC_SEND);
	expect_ex(t.cq, &w);
	if (w.status != IBV_WC_TM_RNDV_INCOMPLETE || w.opcode != IBV_WC_TM_RECV ||
	    w.wc_flags != (IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID) || w.wr_id != 66 ||
	    w.tm.tag != tag || w.tm.priv != 0x3131 || w.byte_len != msg ||
	    w.qp_num != t.r[0]->qp_num)
		fail_wc("want RNDV_INCOMPLETE with the header message", &w);
	assert_memory_equal(dst->addr, sent, msg);
	assert_true(all_zero((uint8_t *)dst->addr + msg, 4096 - msg));
	expect_quiet_ex(t.cq);
	expect_quiet(t.frq);
	assert_int_equal(dev_xstat(B.ctx, "xport.tm_rndv_reads"), reads);
	assert_int_equal(post_del(&t, handle, 2), EINVAL);
	/* The QP takes the next rendezvous as usual; the FIN receive posted above is the
	 * one this one's FIN takes. */
	assert_int_equal(qp_state_of(t.r[0]), IBV_QPS_RTS);
	add_buf(&t, tag + 1, dst->addr, 4096, dst->lkey, 67);
	send_rndv(&t, 0, tag + 1, 5, (uintptr_t)src->addr, src->rkey, len, 0, 2);
	expect_send_ok(t.ssq, 2, IBV_WC_SEND);
	expect_match(&t, 0, 67, tag + 1, 5);
	expect_fin(&t, 0, tag + 1, 5);
	expect_data_valid(&t, 0, 67, len);
	assert_memory_equal(dst->addr, src->addr, len);
}

/* Buffers smaller than the header message itself: as an eager message too long. */
static void rndv_buffer_smaller_than_header_loc_len_err(void **state)
{
	const uint32_t len = 4000, cap = 40;
	const uint64_t tag = 0x1818;
	struct ibv_mr *src, *dst;
	uint32_t handle;
	struct ibv_wc swc;
	struct wc_ex w;
	struct rv t;

	(void)state;
	rv_setup(&t, &opts_default);
	src = new_mr(&A, len, RR);
	dst = new_mr(&B, 4096, LW);
	handle = add_buf(&t, tag, dst->addr, cap, dst->lkey, 55);
	post_fin(&t, 0);
	send_rndv(&t, 0, tag, 1, (uintptr_t)src->addr, src->rkey, len, APP_MAX, 1);
	expect_ex(t.cq, &w);
	if (w.status != IBV_WC_LOC_LEN_ERR || w.wr_id != 55)
		fail_wc("want LOC_LEN_ERR", &w);
	expect_wc(t.ssq, &swc);
	assert_int_equal(swc.wr_id, 1);
	assert_int_equal(swc.status, IBV_WC_REM_INV_REQ_ERR);
	expect_quiet_ex(t.cq);
	assert_int_equal(post_del(&t, handle, 2), EINVAL);
	assert_true(all_zero((uint8_t *)dst->addr + cap, 4096 - cap));
	/* No FIN: the sender's receive is at most flushed with its QP. */
	for (uint64_t end = now_ms() + 2 * QUIET_MS; now_ms() < end;)
		if (ibv_poll_cq(t.frq, 1, &swc) == 1)
			assert_int_equal(swc.status, IBV_WC_WR_FLUSH_ERR);
}

/* An entry whose buffer the device may not write (an MR without LOCAL_WRITE): the
 * header fails as an eager message into it would, LOC_PROT_ERR with no MATCH before
 * it, the sender NAKed (REM_OP_ERR); no read, no FIN. */
static void rndv_entry_buffer_without_local_write_loc_prot_err(void **state)
{
	const uint32_t len = 4000;
	struct ibv_mr *src, *dst;
	uint64_t reads;
	uint32_t handle;
	struct ibv_wc swc;
	struct wc_ex w;
	struct rv t;

	(void)state;
	rv_setup(&t, &opts_default);
	src = new_mr(&A, len, RR);
	dst = new_mr(&B, len, 0);
	reads = dev_xstat(B.ctx, "xport.tm_rndv_reads");
	handle = add_buf(&t, 0x1919, dst->addr, len, dst->lkey, 56);
	post_fin(&t, 0);
	send_rndv(&t, 0, 0x1919, 1, (uintptr_t)src->addr, src->rkey, len, 0, 1);
	expect_ex(t.cq, &w);
	if (w.status != IBV_WC_LOC_PROT_ERR || w.wr_id != 56)
		fail_wc("want LOC_PROT_ERR", &w);
	expect_wc(t.ssq, &swc);
	assert_int_equal(swc.wr_id, 1);
	assert_int_equal(swc.status, IBV_WC_REM_OP_ERR);
	expect_quiet_ex(t.cq);
	wait_state(t.r[0], IBV_QPS_ERR);
	wait_state(t.s[0], IBV_QPS_ERR);
	assert_int_equal(post_del(&t, handle, 2), EINVAL);
	assert_true(all_zero(dst->addr, len));
	assert_int_equal(dev_xstat(B.ctx, "xport.tm_rndv_reads"), reads);
	for (uint64_t end = now_ms() + 2 * QUIET_MS; now_ms() < end;)
		if (ibv_poll_cq(t.frq, 1, &swc) == 1)
			assert_int_equal(swc.status, IBV_WC_WR_FLUSH_ERR);
}

/* ---- reads that fail ---- */

enum bad_read { BAD_RKEY, MR_WITHOUT_REMOTE_READ, QP_WITHOUT_REMOTE_READ, BEYOND_THE_MR };

/*
 * The sender's side refuses the READ: MATCH, then one REM_ACCESS_ERR completion of the
 * entry, both QPs in ERR, the sender's FIN receive flushed, nothing written. The entry
 * is released: its handle is free, and of an SRQ whose tag list was full, one ADD fits
 * again (and one only); a new pair on the SRQ completes a rendezvous into it.
 */
static void read_refused(enum bad_read how)
{
	const uint32_t len = 50000;
	struct rv_opts o = opts_default;
	struct ibv_mr *src, *good, *dst;
	uint32_t rkey, handle, spare, again;
	uint64_t failed;
	struct ibv_sge sge;
	struct ibv_wc swc;
	struct wc_ex w;
	struct rv t;

	o.max_num_tags = 2;
	if (how == QP_WITHOUT_REMOTE_READ)
		o.link.s_access = RW;
	rv_setup(&t, &o);
	src = new_mr(&A, len, how == MR_WITHOUT_REMOTE_READ ? LW | RW : RR);
	good = new_mr(&A, len, RR);
	dst = new_mr(&B, len, LW);
	fill_pattern(src->addr, len, 44);
	fill_pattern(good->addr, len, 45);
	rkey = how == BAD_RKEY ? src->rkey ^ 0x00ff0000u : src->rkey;
	failed = dev_xstat(B.ctx, "xport.tm_rndv_failed");
	handle = add_buf(&t, 0x51, dst->addr, len, dst->lkey, 100);
	spare = add_buf(&t, 0x52, dst->addr, len, dst->lkey, 101);
	sge = (struct ibv_sge){(uintptr_t)dst->addr, len, dst->lkey};
	assert_int_equal(try_add(&t, 0x53, &sge, 1, 102, &again), ENOMEM);
	post_fin(&t, 0);
	/* Beyond the MR: its last half and as much again. */
	send_rndv(&t, 0, 0x51, 0xabc, (uintptr_t)src->addr + (how == BEYOND_THE_MR ? len / 2 : 0),
		  rkey, len, 0, 1);
	expect_send_ok(t.ssq, 1, IBV_WC_SEND);
	expect_match(&t, 0, 100, 0x51, 0xabc);
	expect_ex(t.cq, &w);
	if (w.status != IBV_WC_REM_ACCESS_ERR || w.wr_id != 100)
		fail_wc("want REM_ACCESS_ERR of the entry", &w);
	assert_int_equal(dev_xstat(B.ctx, "xport.tm_rndv_failed"), failed + 1);
	expect_quiet_ex(t.cq);
	wait_state(t.r[0], IBV_QPS_ERR);
	wait_state(t.s[0], IBV_QPS_ERR);
	expect_wc(t.frq, &swc);
	assert_int_equal(swc.status, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(swc.wr_id, FIN_WR);
	assert_true(all_zero(dst->addr, len));
	assert_int_equal(post_del(&t, handle, 2), EINVAL);
	/* Its place in the tag list is free again, once. */
	assert_int_equal(try_add(&t, 0x53, &sge, 1, 102, &again), 0);
	assert_int_equal(try_add(&t, 0x54, &sge, 1, 103, &handle), ENOMEM);
	(void)spare;
	rv_pair(&t, 1, 16, &link_default);
	post_fin(&t, 1);
	send_rndv(&t, 1, 0x53, 0xdef, (uintptr_t)good->addr, good->rkey, len, 0, 2);
	expect_send_ok(t.ssq, 2, IBV_WC_SEND);
	expect_match(&t, 1, 102, 0x53, 0xdef);
	expect_fin(&t, 1, 0x53, 0xdef);
	expect_data_valid(&t, 1, 102, len);
	assert_memory_equal(dst->addr, good->addr, len);
}

static void rndv_bad_rkey_rem_access_err_entry_released(void **state)
{
	(void)state;
	read_refused(BAD_RKEY);
}

static void rndv_sender_mr_without_remote_read_rem_access_err(void **state)
{
	(void)state;
	read_refused(MR_WITHOUT_REMOTE_READ);
}

static void rndv_sender_qp_without_remote_read_rem_access_err(void **state)
{
	(void)state;
	read_refused(QP_WITHOUT_REMOTE_READ);
}

static void rndv_data_beyond_the_senders_mr_rem_access_err(void **state)
{
	(void)state;
	read_refused(BEYOND_THE_MR);
}

/* ---- QPs that go away mid-read ---- */

/* Big enough that a read is still in flight when the test acts after the MATCH. */
#define LONG_READ (8u << 20)

/*
 * The sender's QP is destroyed (or moved to ERR) once its header has been matched: the
 * receiver's READ (or FIN) is never answered and, after its QP's retries (timeout 10,
 * 4 ms; retry_cnt 2), the entry completes RETRY_EXC_ERR and the QP is in ERR.
 */
static void peer_gone(bool destroy)
{
	struct rv_opts o = opts_default;
	struct ibv_mr *src, *dst;
	struct ibv_qp_init_attr qa;
	uint32_t handle;
	struct ibv_wc swc;
	struct wc_ex w;
	struct rv t;

	o.nq = 0;
	o.link.r_timeout = 10;
	o.link.r_retry = 2;
	rv_setup(&t, &o);
	src = new_mr(&A, LONG_READ, RR);
	dst = new_mr(&B, LONG_READ, LW);
	fill_pattern(src->addr, LONG_READ, 46);
	/* A sender QP teardown does not know of, so that the test can destroy it. */
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = t.ssq;
	qa.recv_cq = t.frq;
	qa.cap = (struct ibv_qp_cap){.max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1,
				     .max_recv_sge = 1};
	qa.qp_type = IBV_QPT_RC;
	t.s[0] = ibv_create_qp(A.pd, &qa);
	assert_non_null(t.s[0]);
	t.r[0] = new_qp(&B, IBV_QPT_RC, t.rsq, ibv_cq_ex_to_cq(t.cq), t.srq, 16, 0);
	t.nq = 1;
	connect_link(t.s[0], t.r[0], &o.link);
	handle = add_buf(&t, 0x61, dst->addr, LONG_READ, dst->lkey, 110);
	post_fin(&t, 0);
	send_rndv(&t, 0, 0x61, 0x1, (uintptr_t)src->addr, src->rkey, LONG_READ, 0, 1);
	expect_send_ok(t.ssq, 1, IBV_WC_SEND);
	expect_match(&t, 0, 110, 0x61, 0x1);
	if (destroy) {
		assert_int_equal(ibv_destroy_qp(t.s[0]), 0);
	} else {
		qp_to_err(t.s[0]);
		expect_wc(t.frq, &swc);
		assert_int_equal(swc.status, IBV_WC_WR_FLUSH_ERR);
	}
	expect_ex(t.cq, &w);
	if (w.status != IBV_WC_RETRY_EXC_ERR || w.wr_id != 110)
		fail_wc("want RETRY_EXC_ERR of the entry", &w);
	expect_quiet_ex(t.cq);
	wait_state(t.r[0], IBV_QPS_ERR);
	assert_true(qp_xstat(t.r[0], "qp.retry_exceeded") >= 1);
	assert_int_equal(post_del(&t, handle, 2), EINVAL);
	if (!destroy)
		assert_int_equal(ibv_destroy_qp(t.s[0]), 0);
}

static void rndv_sender_qp_destroyed_mid_read_retry_exc_err(void **state)
{
	(void)state;
	peer_gone(true);
}

static void rndv_sender_qp_to_err_mid_read_retry_exc_err(void **state)
{
	(void)state;
	peer_gone(false);
}

static void rndv_receiver_qp_to_err_mid_read_wr_flush_err(void **state)
{
	struct ibv_mr *src, *dst;
	uint32_t handle;
	struct wc_ex w;
	struct rv t;

	(void)state;
	rv_setup(&t, &opts_default);
	src = new_mr(&A, LONG_READ, RR);
	dst = new_mr(&B, LONG_READ, LW);
	handle = add_buf(&t, 0x71, dst->addr, LONG_READ, dst->lkey, 120);
	post_fin(&t, 0);
	send_rndv(&t, 0, 0x71, 0x2, (uintptr_t)src->addr, src->rkey, LONG_READ, 0, 1);
	expect_send_ok(t.ssq, 1, IBV_WC_SEND);
	expect_match(&t, 0, 120, 0x71, 0x2);
	qp_to_err(t.r[0]);
	expect_ex(t.cq, &w);
	if (w.status != IBV_WC_WR_FLUSH_ERR || w.wr_id != 120)
		fail_wc("want WR_FLUSH_ERR of the entry", &w);
	expect_quiet_ex(t.cq);
	assert_int_equal(post_del(&t, handle, 2), EINVAL);
	/* No FIN reaches the sender. */
	expect_quiet(t.frq);
}

/* A DEL of an entry whose read is in flight fails; the data still lands. */
static void rndv_del_mid_read_tm_err_data_still_valid(void **state)
{
	const uint32_t len = 2u << 20;
	struct ibv_mr *src, *dst;
	bool del = false, valid = false;
	uint32_t handle;
	struct wc_ex w;
	struct rv t;

	(void)state;
	rv_setup(&t, &opts_default);
	src = new_mr(&A, len, RR);
	dst = new_mr(&B, len + TAIL, LW);
	fill_pattern(src->addr, len, 47);
	handle = add_buf(&t, 0x81, dst->addr, len + TAIL, dst->lkey, 130);
	post_fin(&t, 0);
	send_rndv(&t, 0, 0x81, 0x3, (uintptr_t)src->addr, src->rkey, len, 0, 1);
	expect_send_ok(t.ssq, 1, IBV_WC_SEND);
	expect_match(&t, 0, 130, 0x81, 0x3);
	assert_int_equal(post_del(&t, handle, 131), 0);
	/* The DEL's completion and the data's, in whichever order the device ends them. */
	for (int i = 0; i < 2; i++) {
		expect_ex(t.cq, &w);
		if (w.wr_id == 131 && !del) {
			if (w.status != IBV_WC_TM_ERR || w.opcode != IBV_WC_TM_DEL)
				fail_wc("want the DEL to fail with TM_ERR", &w);
			del = true;
		} else if (!valid) {
			check_data_valid(&w, t.r[0], 130, len);
			valid = true;
		} else {
			fail_wc("a third completion", &w);
		}
	}
	expect_fin(&t, 0, 0x81, 0x3);
	assert_memory_equal(dst->addr, src->addr, len);
	assert_true(all_zero((uint8_t *)dst->addr + len, TAIL));
	expect_quiet_ex(t.cq);
	assert_int_equal(post_del(&t, handle, 132), EINVAL);
}

/* ---- unexpected rendezvous ---- */

/* Software finishes an unexpected rendezvous whose header is in plain WR @p i: READ
 * over the receiver QP @p q into @p into, then a FIN of its own. Returns the length. */
static uint32_t finish_by_software(struct rv *t, unsigned int q, unsigned int i,
				   struct ibv_mr *into, uint64_t wr_id)
{
	const struct ibv_tmh *h = (const void *)pbuf(t, i);
	const struct ibv_rvh *r = (const void *)(pbuf(t, i) + TMH_LEN);
	uint32_t len = be32toh(r->len);
	struct ibv_mr *fin = new_mr(&B, TMH_LEN, LW);
	struct ibv_tmh *f = fin->addr;

	assert_int_equal(h->opcode, IBV_TMH_RNDV);
	assert_true(len <= into->length);
	assert_int_equal(post_rdma(t->r[q], IBV_WR_RDMA_READ, wr_id, into->addr, len,
				   into->lkey, be64toh(r->va), be32toh(r->rkey)), 0);
	expect_send_ok(t->rsq, wr_id, IBV_WC_RDMA_READ);
	memset(f, 0, TMH_LEN);
	f->opcode = IBV_TMH_FIN;
	f->app_ctx = h->app_ctx;
	f->tag = h->tag;
	assert_int_equal(post_send(t->r[q], IBV_WR_SEND, wr_id + 1, f, TMH_LEN, fin->lkey,
				   IBV_SEND_SIGNALED), 0);
	expect_send_ok(t->rsq, wr_id + 1, IBV_WC_SEND);
	return len;
}

static void rndv_unexpected_whole_header_software_reads_and_fins(void **state)
{
	const uint32_t len = 200003, msg = HDR_LEN + APP_MAX;
	const uint64_t tag = 0x9999;
	struct dpv_verbs_tm_state st0, st1;
	struct ibv_mr *src, *into;
	const uint8_t *sent;
	uint64_t reads;
	struct wc_ex w;
	struct rv t;

	(void)state;
	rv_setup(&t, &opts_default);
	src = new_mr(&A, len, RR);
	into = new_mr(&B, len, LW);
	fill_pattern(src->addr, len, 48);
	assert_int_equal(dpv_verbs_tm_query(t.srq, &st0), 0);
	reads = dev_xstat(B.ctx, "xport.tm_rndv_reads");
	post_plain(&t, 0);
	post_fin(&t, 0);
	sent = send_rndv(&t, 0, tag, 0x4242, (uintptr_t)src->addr, src->rkey, len, APP_MAX, 1);
	expect_send_ok(t.ssq, 1, IBV_WC_SEND);
	expect_ex(t.cq, &w);
	if (w.status != IBV_WC_SUCCESS || w.opcode != IBV_WC_TM_RECV || w.wc_flags != 0 ||
	    w.wr_id != PLAIN_WR || w.byte_len != msg || w.tm.tag != 0 || w.tm.priv != 0 ||
	    w.qp_num != t.r[0]->qp_num)
		fail_wc("want an unexpected message in the plain WR", &w);
	assert_memory_equal(pbuf(&t, 0), sent, msg);
	assert_true(all_zero(pbuf(&t, 0) + msg, PLAIN - msg));
	assert_int_equal(dpv_verbs_tm_query(t.srq, &st1), 0);
	assert_int_equal(st1.unexpected, st0.unexpected + 1);
	assert_int_equal(st1.unexpected_msgs, st0.unexpected_msgs + 1);
	/* The device neither read nor sent a FIN. */
	expect_quiet(t.frq);
	assert_int_equal(dev_xstat(B.ctx, "xport.tm_rndv_reads"), reads);
	assert_int_equal(finish_by_software(&t, 0, 0, into, 10), len);
	assert_memory_equal(into->addr, src->addr, len);
	expect_fin(&t, 0, tag, 0x4242);
	expect_quiet_ex(t.cq);
}

/* ---- many in flight ---- */

static void lengths(uint32_t *len, unsigned int n, uint32_t base, uint32_t step)
{
	for (unsigned int i = 0; i < n; i++)
		len[i] = base + i * step;
}

static void many_on_one_qp(unsigned int n, uint8_t rd_atomic, unsigned int hold)
{
	struct rv_opts o = opts_default;
	uint32_t len[128];
	struct rv t;

	assert_true(n <= 128);
	o.link.r_rd_atomic = rd_atomic;
	rv_setup(&t, &o);
	lengths(len, n, 1000, 1531);
	batch(&t, len, n, hold);
	printf("# %u rendezvous, max_rd_atomic %u: receiver rnr_naks_sent %" PRIu64
	       ", sender rnr_naks_received %" PRIu64 "\n", n, rd_atomic,
	       qp_xstat(t.r[0], "qp.rnr_naks_sent"), qp_xstat(t.s[0], "qp.rnr_naks_received"));
	if (hold != 0)
		assert_true(qp_xstat(t.r[0], "qp.rnr_naks_sent") >= 1);
}

static void rndv_40_in_flight_on_one_qp_max_rd_atomic_4(void **state)
{
	(void)state;
	many_on_one_qp(40, 4, 0);
}

static void rndv_max_rd_atomic_0_reads_one_at_a_time(void **state)
{
	(void)state;
	many_on_one_qp(8, 0, 0);
}

/* More headers than the device runs at once per QP (64): with no FIN receive at the
 * sender none of the first 64 can end, so the 65th header is RNR NAKed, and is not
 * matched; once the sender posts its receives, every rendezvous completes, in order. */
static void rndv_100_headers_on_one_qp_beyond_the_64_it_runs(void **state)
{
	(void)state;
	many_on_one_qp(100, 4, 64);
}

static void rndv_across_4_qps_of_one_srq(void **state)
{
	struct rv_opts o = opts_default;
	uint32_t len[48];
	struct rv t;

	(void)state;
	o.nq = 4;
	o.link.r_rd_atomic = 4;
	rv_setup(&t, &o);
	lengths(len, 48, 777, 2311);
	batch(&t, len, 48, 0);
}

/* ---- a mix ---- */

/*
 * On one QP, in this order: eager expected (one packet), rendezvous expected, eager
 * unexpected, rendezvous unexpected, eager expected (three packets), rendezvous
 * expected, NO_TAG. The completions of arrival (all but the rendezvous' DATA_VALIDs)
 * come in that order; each DATA_VALID after its MATCH, the two in header order; the
 * unexpected rendezvous is finished by software; every byte checked.
 */
static void rndv_mixed_with_eager_unexpected_and_no_tag(void **state)
{
	const size_t stride = 128 * 1024;
	const uint32_t rlen[2] = {100000, 3000}, ulen = 70000, elen[2] = {200, 3000};
	const uint64_t etag[2] = {0xe0, 0xe4}, rtag[2] = {0xa1, 0xa5};
	struct dpv_verbs_tm_state st0, st1;
	struct ibv_mr *src, *dst, *into;
	unsigned int arrival = 0, valid = 0;
	uint8_t *rsrc[2], *rdst[2], *edst[2], *usrc;
	struct wc_ex w;
	struct rv t;

	(void)state;
	rv_setup(&t, &opts_default);
	src = new_mr(&A, 3 * stride, RR);
	dst = new_mr(&B, 4 * stride, LW);
	into = new_mr(&B, ulen, LW);
	rsrc[0] = src->addr;
	rsrc[1] = rsrc[0] + stride;
	usrc = rsrc[1] + stride;
	rdst[0] = dst->addr;
	rdst[1] = rdst[0] + stride;
	edst[0] = rdst[1] + stride;
	edst[1] = edst[0] + stride;
	for (int i = 0; i < 2; i++) {
		fill_pattern(rsrc[i], rlen[i], 50 + i);
		add_buf(&t, etag[i], edst[i], 4096, dst->lkey, 200 + i);
		add_buf(&t, rtag[i], rdst[i], rlen[i] + TAIL, dst->lkey, 300 + i);
	}
	fill_pattern(usrc, ulen, 52);
	post_plain(&t, 0);
	post_plain(&t, 1);
	post_plain(&t, 2);
	for (int i = 0; i < 3; i++)
		post_fin(&t, 0);
	assert_int_equal(dpv_verbs_tm_query(t.srq, &st0), 0);
	send_tm(&t, 0, IBV_TMH_EAGER, etag[0], 10, elen[0], 60, 1);
	send_rndv(&t, 0, rtag[0], 11, (uintptr_t)rsrc[0], src->rkey, rlen[0], 12, 2);
	send_tm(&t, 0, IBV_TMH_EAGER, 0xbad1, 12, 500, 61, 3);
	send_rndv(&t, 0, 0xbad2, 13, (uintptr_t)usrc, src->rkey, ulen, 0, 4);
	send_tm(&t, 0, IBV_TMH_EAGER, etag[1], 14, elen[1], 62, 5);
	send_rndv(&t, 0, rtag[1], 15, (uintptr_t)rsrc[1], src->rkey, rlen[1], APP_MAX, 6);
	send_tm(&t, 0, IBV_TMH_NO_TAG, 0, 16, 100, 63, 7);
	for (uint64_t i = 1; i <= 7; i++)
		expect_send_ok(t.ssq, i, IBV_WC_SEND);
	/* Eight completions of arrival and two DATA_VALIDs. */
	while (arrival + valid < 10) {
		expect_ex(t.cq, &w);
		if (w.wc_flags == IBV_WC_TM_DATA_VALID && w.wr_id >= 300 && w.wr_id <= 301) {
			assert_int_equal(w.wr_id, 300 + valid);
			check_data_valid(&w, t.r[0], w.wr_id, rlen[valid]);
			/* after its MATCH: the first at arrival 1, the second at arrival 6 */
			assert_true(arrival > (valid == 0 ? 1u : 6u));
			valid++;
			continue;
		}
		switch (arrival) {
		case 0:
		case 5:
			if (w.status != IBV_WC_SUCCESS || w.opcode != IBV_WC_TM_RECV ||
			    (w.wc_flags & TM_FLAGS) != (arrival == 0 ? IBV_WC_TM_MATCH |
							 IBV_WC_TM_DATA_VALID : IBV_WC_TM_DATA_VALID) ||
			    w.wr_id != (arrival == 0 ? 200u : 201u))
				fail_wc("want the eager message's (last) completion", &w);
			assert_int_equal(w.byte_len, elen[arrival == 0 ? 0 : 1]);
			if (arrival == 0) {
				assert_int_equal(w.tm.tag, etag[0]);
				assert_int_equal(w.tm.priv, 10);
			}
			break;
		case 1:
			check_match(&w, t.r[0], 300, rtag[0], 11);
			break;
		case 2:
		case 3:
			if (w.status != IBV_WC_SUCCESS || w.opcode != IBV_WC_TM_RECV ||
			    w.wc_flags != 0 || w.wr_id != PLAIN_WR + arrival - 2)
				fail_wc("want an unexpected message", &w);
			assert_int_equal(w.byte_len, arrival == 2 ? TMH_LEN + 500 : HDR_LEN);
			break;
		case 4:
			if (w.status != IBV_WC_SUCCESS || w.opcode != IBV_WC_TM_RECV ||
			    (w.wc_flags & TM_FLAGS) != IBV_WC_TM_MATCH || w.wr_id != 201 ||
			    w.tm.tag != etag[1] || w.tm.priv != 14)
				fail_wc("want the multi-packet eager message's MATCH", &w);
			break;
		case 6:
			check_match(&w, t.r[0], 301, rtag[1], 15);
			break;
		case 7:
			if (w.status != IBV_WC_SUCCESS || w.opcode != IBV_WC_TM_NO_TAG ||
			    w.wr_id != PLAIN_WR + 2 || w.byte_len != TMH_LEN + 100)
				fail_wc("want the NO_TAG message", &w);
			break;
		default:
			fail_wc("one completion too many", &w);
		}
		arrival++;
	}
	assert_true(check_pattern(edst[0], elen[0], 60));
	assert_true(check_pattern(edst[1], elen[1], 62));
	assert_true(check_pattern(pbuf(&t, 0) + TMH_LEN, 500, 61));
	assert_true(check_pattern(pbuf(&t, 2) + TMH_LEN, 100, 63));
	for (int i = 0; i < 2; i++) {
		assert_memory_equal(rdst[i], rsrc[i], rlen[i]);
		assert_true(all_zero(rdst[i] + rlen[i], TAIL));
	}
	assert_int_equal(dpv_verbs_tm_query(t.srq, &st1), 0);
	assert_int_equal(st1.unexpected, st0.unexpected + 2);
	expect_fin(&t, 0, rtag[0], 11);
	expect_fin(&t, 0, rtag[1], 15);
	assert_int_equal(finish_by_software(&t, 0, 1, into, 20), ulen);
	assert_memory_equal(into->addr, usrc, ulen);
	expect_fin(&t, 0, 0xbad2, 13);
	expect_quiet_ex(t.cq);
}

/* ---- over a lossy link (DPV_FAULTS) ---- */

static void rndv_over_a_lossy_link(void **state)
{
	enum { N = 36, SMALL = 120 };
	struct rv_opts o = opts_default;
	uint32_t len[N], small[SMALL], x = 12345;
	struct rv t;

	(void)state;
	o.nq = 2;
	o.link = link_lossy;
	rv_setup(&t, &o);
	for (unsigned int i = 0; i < N; i++) {
		x = x * 1103515245u + 12345u;
		len[i] = (64u << 10) + (x >> 8) % ((1u << 20) - (64u << 10) + 1);
	}
	batch(&t, len, N, 0);
	/* Many small ones, whose headers and FINs are a good part of the frames lost. */
	for (unsigned int i = 0; i < SMALL; i++) {
		x = x * 1103515245u + 12345u;
		small[i] = 1 + (x >> 8) % 8192;
	}
	batch(&t, small, SMALL, 0);
	printf("# %u rendezvous of 64 KiB..1 MiB and %u of 1 B..8 KiB: dropped %" PRIu64 "+%" PRIu64
	       ", duplicated %" PRIu64 "+%" PRIu64 ", reordered %" PRIu64 "+%" PRIu64
	       "; receivers retrans_read %" PRIu64 "+%" PRIu64 ", senders retrans_packets %"
	       PRIu64 "+%" PRIu64 "\n", N, SMALL,
	       dev_xstat(A.ctx, "faults.tx.dropped"), dev_xstat(B.ctx, "faults.tx.dropped"),
	       dev_xstat(A.ctx, "faults.tx.duplicated"), dev_xstat(B.ctx, "faults.tx.duplicated"),
	       dev_xstat(A.ctx, "faults.tx.reordered"), dev_xstat(B.ctx, "faults.tx.reordered"),
	       qp_xstat(t.r[0], "qp.retrans_read"), qp_xstat(t.r[1], "qp.retrans_read"),
	       qp_xstat(t.s[0], "qp.retrans_packets"), qp_xstat(t.s[1], "qp.retrans_packets"));
	/* The link did lose frames: the run tested recovery. */
	assert_true(dev_xstat(A.ctx, "faults.tx.dropped") + dev_xstat(B.ctx, "faults.tx.dropped") >
		    0);
	assert_int_equal(qp_xstat(t.r[0], "qp.retry_exceeded") +
			 qp_xstat(t.r[1], "qp.retry_exceeded"), 0);
}

int main(void)
{
	const struct CMUnitTest clean[] = {
		VT(rndv_expected_fin_to_sender_rq),
		VT(rndv_expected_fin_to_sender_basic_srq),
		VT(rndv_expected_fin_to_sender_tm_srq_as_no_tag),
		VT(rndv_receiver_qp_without_send_queue),
		VT(rndv_data_valid_does_not_wait_for_the_fins_ack),
		VT(rndv_sizes_0_b_to_1_mib),
		VT(rndv_16_mib),
		VT(rndv_zero_length_into_entry_without_sges),
		VT(rndv_into_entry_of_several_sges),
		VT(rndv_buffer_smaller_than_data_rndv_incomplete),
		VT(rndv_buffer_smaller_than_header_loc_len_err),
		VT(rndv_entry_buffer_without_local_write_loc_prot_err),
		VT(rndv_bad_rkey_rem_access_err_entry_released),
		VT(rndv_sender_mr_without_remote_read_rem_access_err),
		VT(rndv_sender_qp_without_remote_read_rem_access_err),
		VT(rndv_data_beyond_the_senders_mr_rem_access_err),
		VT(rndv_sender_qp_destroyed_mid_read_retry_exc_err),
		VT(rndv_sender_qp_to_err_mid_read_retry_exc_err),
		VT(rndv_receiver_qp_to_err_mid_read_wr_flush_err),
		VT(rndv_del_mid_read_tm_err_data_still_valid),
		VT(rndv_unexpected_whole_header_software_reads_and_fins),
		VT(rndv_40_in_flight_on_one_qp_max_rd_atomic_4),
		VT(rndv_max_rd_atomic_0_reads_one_at_a_time),
		VT(rndv_100_headers_on_one_qp_beyond_the_64_it_runs),
		VT(rndv_across_4_qps_of_one_srq),
		VT(rndv_mixed_with_eager_unexpected_and_no_tag),
	};
	const struct CMUnitTest faulty[] = {
		VT(rndv_over_a_lossy_link),
	};
	bool lossy = faults_on();

	sides_env_defaults("0");
	return lossy ? SIDES_RUN_GROUP("rndv_faults", faulty) : SIDES_RUN_GROUP("rndv", clean);
}
