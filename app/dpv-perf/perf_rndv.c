/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpv-perf rndv: the bandwidth of a tag-matching rendezvous next to the RDMA READ it is
 * made of, and the round trip of a small message, all on one RC QP pair between dpv0
 * (the sender, an ordinary RQ) and dpv1 (the receiver, its QP on a TM SRQ):
 *  rndv   dpv1 has ADDed the tag with a buffer of <size> bytes; dpv0 SENDs a TMH of
 *         opcode IBV_TMH_RNDV and a struct ibv_rvh naming <size> bytes of its memory;
 *         dpv1's device matches it (TM_RECV, MATCH), RDMA-READs the data, SENDs the FIN
 *         and, once the FIN is acknowledged, completes TM_RECV DATA_VALID. Timed from
 *         the header's post to the last of: the header SEND's completion and the FIN's
 *         receive at dpv0, MATCH and DATA_VALID at dpv1.
 *  read   dpv1 posts an RDMA READ of the same <size> bytes from the same source into
 *         the same buffer, over the same QP; timed from the post to its completion.
 *  small  a 16-byte SEND (a TMH of opcode NO_TAG, the size of a FIN) from dpv0 into an
 *         ordinary WR of dpv1's TM SRQ and a 16-byte SEND back into dpv0's RQ; timed
 *         from the first post to the answer's receive.
 * A rendezvous adds to its read one message each way (header out, FIN back) and the
 * FIN's acknowledgement, so the target it is held to is rndv <= read + small.
 *
 * One thread drives both sides with inline progress (every poll runs the engines of
 * both devices). The three kinds alternate in blocks (the order rotates from one rep to
 * the next), so a drift of the machine hits all of them alike. Each message's data is
 * stamped at its start, middle and end (every byte with --check) and checked after it
 * has landed, outside the timed interval.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/tm_types.h>
#include <rte_byteorder.h>

#include "perf_verbs.h"

#define RV_CMD "rndv"

#define RV_MAX_SIZES 16u
#define RV_MIN_SIZE 64u
#define RV_MAX_SIZE (256u << 20)
#define RV_DEFAULT_SIZES "65536,262144,1048576,4194304,16777216"
#define RV_QUICK_SIZES "65536,1048576"
#define RV_DEFAULT_REPS 9u
#define RV_QUICK_REPS 3u
#define RV_MAX_REPS 10000u
/* A block of one kind moves about this many bytes (one message at least). */
#define RV_BLOCK_BYTES (16u << 20)
#define RV_QUICK_BLOCK_BYTES (1u << 20)
#define RV_SMALL_PER_BLOCK 64u
#define RV_QUICK_SMALL_PER_BLOCK 16u
/* Small slots: slot 0 sends, 1..RV_RECV_DEPTH receive (dpv0's RQ, dpv1's SRQ WRs). */
#define RV_SLOT 64u
#define RV_RECV_DEPTH 32u
#define RV_SQ_DEPTH 64u
#define RV_CQ_DEPTH 512
#define RV_MAX_INLINE 64u
/* One small SEND in so many asks for a completion; a full SQ is reaped. */
#define RV_SIGNAL_EVERY 16u
#define RV_TAGS 16u
#define RV_OPS 16u
#define RV_SMALL_LEN ((uint32_t)sizeof(struct ibv_tmh))
#define RV_HDR_LEN ((uint32_t)(sizeof(struct ibv_tmh) + sizeof(struct ibv_rvh)))
#define RV_TAG_BASE UINT64_C(0x52d0000000000000)
/* wr_id: the kind in the top byte, the message number below. */
#define RV_WRID(k, seq) ((uint64_t)(k) << 56 | (seq))
#define RV_SPARE_KIND 0x5bu

enum rv_kind { RV_RNDV, RV_READ, RV_SMALL, RV_NB_KINDS };

static const char *const rv_kind_names[RV_NB_KINDS] = {
	[RV_RNDV] = "rndv", [RV_READ] = "read", [RV_SMALL] = "small",
};

struct rv_opts {
	bool json;
	bool check;
	bool quick;
	uint32_t sizes[RV_MAX_SIZES];
	unsigned int nb_sizes;
	uint32_t reps;
	uint32_t block_bytes;
	uint32_t small_per_block;
};

/* What one message is waiting for. */
struct rv_wait {
	enum rv_kind kind;
	uint64_t seq;
	uint32_t len;
	bool sent, fin, match, data_valid, read_done, small_in, reply;
	bool repost_srq, post_reply;
};

struct rv_result {
	uint32_t size;
	uint32_t msgs;                          /* messages of rndv and read per block */
	double mbps[RV_NB_KINDS];               /* medians over reps (small: none) */
	double us[RV_NB_KINDS];                 /* per message (small: per round trip) */
	double bw_ratio;                        /* rndv MB/s / read MB/s */
	double bound_us;                        /* read + small */
	/* Of each rep's own blocks, so that a drift between reps cancels out: medians of
	 * read / rndv (the bandwidth ratio) and of rndv - read - small. */
	double paired_ratio;
	double excess_us;
	bool met;                               /* excess_us <= 0 */
};

struct rv {
	const struct rv_opts *o;
	struct pv_dev dev[2];
	/* 0: dpv0, the sender (a CQ, an RQ); 1: dpv1, the receiver (a TM SRQ, its
	 * receives consumed are of its ordinary WRs) */
	struct pv_side side[2];
	uint32_t max_size;
	uint64_t seq[RV_NB_KINDS];
	uint64_t bytes_checked;
	double *samples[RV_NB_KINDS]; /* per rep: ns per message */
	double *paired;               /* per rep: scratch for the paired figures */
	struct rv_result res[RV_MAX_SIZES];
};

static __attribute__((cold, noinline)) int
rv_wrong(const struct rv_wait *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int
rv_wrong(const struct rv_wait *w, const char *fmt, ...)
{
	char msg[320];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	perf_error("%s: %s of %" PRIu32 " bytes, message %" PRIu64 ": %s", RV_CMD,
		   rv_kind_names[w->kind], w->len, w->seq, msg);
	return -1;
}

static inline uint64_t
rv_tag(uint64_t seq)
{
	return RV_TAG_BASE | seq;
}

/*
 * ---- data: word i of message (kind, seq) is a value no other message has there ----
 * Stamps cover the first, middle and last 8 bytes; --check writes and reads every byte.
 */
static inline uint64_t
pat_word(enum rv_kind k, uint64_t seq, uint64_t i)
{
	return (seq << 32 | (uint64_t)k << 28) ^ (i * UINT64_C(0x9e3779b97f4a7c15));
}

static inline void
stamp_offsets(uint32_t len, uint32_t off[3])
{
	off[0] = 0;
	off[1] = (len / 2) & ~7u;
	off[2] = len - 8;
}

static void
data_fill(const struct rv *p, uint8_t *src, uint8_t *dst, enum rv_kind k, uint64_t seq,
	  uint32_t len)
{
	uint32_t off[3], i;
	uint64_t v;

	if (p->o->check) {
		for (i = 0; i + 8 <= len; i += 8) {
			v = pat_word(k, seq, i / 8);
			memcpy(src + i, &v, 8);
		}
		v = pat_word(k, seq, i / 8);
		memcpy(src + i, &v, len - i);
		/* Every destination byte differs from what the message brings. */
		for (i = 0; i < len; i++)
			dst[i] = (uint8_t)~src[i];
		return;
	}
	stamp_offsets(len, off);
	for (i = 0; i < 3; i++) {
		v = pat_word(k, seq, off[i] / 8 + (off[i] & 7));
		memcpy(src + off[i], &v, 8);
		v = ~v;
		memcpy(dst + off[i], &v, 8);
	}
}

/* The first wrong byte's offset, or -1. */
static int64_t
data_check(struct rv *p, const uint8_t *src, const uint8_t *dst, enum rv_kind k,
	   uint64_t seq, uint32_t len)
{
	uint32_t off[3], i;
	uint64_t v;

	if (p->o->check) {
		p->bytes_checked += len;
		/* The source holds this message's pattern, the buffer held its complement. */
		if (memcmp(src, dst, len) == 0)
			return -1;
		for (i = 0; i < len; i++)
			if (src[i] != dst[i])
				return i;
		return -1;
	}
	stamp_offsets(len, off);
	p->bytes_checked += 24;
	for (i = 0; i < 3; i++) {
		v = pat_word(k, seq, off[i] / 8 + (off[i] & 7));
		if (memcmp(dst + off[i], &v, 8) != 0)
			return off[i];
	}
	return -1;
}

/* ---- setup ---- */

static inline uint8_t *
slot(const struct pv_side *s, uint32_t j)
{
	return pv_slot(s, j, RV_SLOT);
}

static int
post_rq(struct pv_side *s, uint32_t j)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)slot(s, 1 + j), .length = RV_SLOT, .lkey = s->slot_mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = j, .sg_list = &sge, .num_sge = 1 }, *bad;

	if (s->srq != NULL) {
		wr.wr_id = RV_WRID(RV_SPARE_KIND, j);
		return ibv_post_srq_recv(s->srq, &wr, &bad);
	}
	return ibv_post_recv(s->qp, &wr, &bad);
}

static int
rv_setup(struct rv *p)
{
	/* The sender's data is read by the receiver's device, so REMOTE_READ there. */
	static const int data_access[2] = {
		IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ, IBV_ACCESS_LOCAL_WRITE,
	};
	int ret;

	for (unsigned int i = 0; i < 2; i++)
		if (pv_alloc_mr(RV_CMD, &p->dev[i], (size_t)(1 + RV_RECV_DEPTH) * RV_SLOT,
				IBV_ACCESS_LOCAL_WRITE, &p->side[i].slots,
				&p->side[i].slot_mr) != 0 ||
		    pv_alloc_mr(RV_CMD, &p->dev[i], p->max_size, data_access[i],
				&p->side[i].data, &p->side[i].data_mr) != 0)
			return -1;
	if (pv_side_cq(RV_CMD, &p->side[0], &p->dev[0], RV_CQ_DEPTH) != 0 ||
	    pv_side_tm_srq(RV_CMD, &p->side[1], &p->dev[1], RV_CQ_DEPTH, RV_RECV_DEPTH, RV_TAGS,
			   RV_OPS) != 0)
		return -1;
	for (unsigned int i = 0; i < 2; i++) {
		struct pv_side *s = &p->side[i];

		/* dpv0's QP is read from (its data), dpv1's reads. */
		if (pv_side_qp(RV_CMD, s, &p->dev[i], RV_SQ_DEPTH, RV_RECV_DEPTH, RV_MAX_INLINE,
			       i == 0 ? IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ :
			       IBV_ACCESS_LOCAL_WRITE) != 0)
			return -1;
		for (uint32_t j = 0; j < RV_RECV_DEPTH; j++) {
			ret = post_rq(s, j);
			if (ret != 0) {
				perf_error("%s: %s(%s): %s", RV_CMD, s->srq != NULL ?
					   "ibv_post_srq_recv" : "ibv_post_recv", p->dev[i].name,
					   strerror(ret));
				return -1;
			}
		}
	}
	return pv_connect_pair(p->side, p->dev);
}

static int
rv_teardown(struct rv *p)
{
	return pv_side_teardown(&p->side[0]) | pv_side_teardown(&p->side[1]);
}

/* ---- posting ---- */

static int poll_sender(struct rv *p, struct rv_wait *w);

/* A SEND of @p len bytes from slot 0 of side @p i; a full SQ is reaped, never an error. */
static int
post_small_send(struct rv *p, unsigned int i, uint32_t len, uint64_t wr_id, bool signaled,
		struct rv_wait *w)
{
	struct pv_side *s = &p->side[i];
	struct ibv_sge sge = { .addr = (uintptr_t)slot(s, 0), .length = len,
			       .lkey = s->slot_mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = wr_id,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_INLINE,
	}, *bad;
	uint64_t deadline = 0;
	uint32_t calls = 0;
	int ret;

	if (signaled || s->sends % RV_SIGNAL_EVERY == RV_SIGNAL_EVERY - 1)
		wr.send_flags |= IBV_SEND_SIGNALED;
	while ((ret = ibv_post_send(s->qp, &wr, &bad)) == ENOMEM) {
		/* The SQ holds unacknowledged SENDs: the poll that reaps them runs both engines. */
		if (poll_sender(p, w) != 0)
			return -1;
		if (deadline == 0)
			deadline = pv_deadline();
		if (pv_stalled(deadline, &calls))
			return rv_wrong(w, "the send queue of %s stays full", p->dev[i].name);
	}
	if (ret != 0)
		return rv_wrong(w, "ibv_post_send(%s): %s", p->dev[i].name, strerror(ret));
	s->sends++;
	if (wr.send_flags & IBV_SEND_SIGNALED)
		s->sig_posted++;
	return 0;
}

/* ---- completions ---- */

/* A send completion of side @p s: an unwaited small SEND, or the awaited header. */
static int
send_done(struct pv_side *s, struct rv_wait *w, uint64_t wr_id, enum ibv_wc_status st,
	  bool *is_header)
{
	if (st != IBV_WC_SUCCESS)
		return rv_wrong(w, "send completion wr_id %#" PRIx64 ": status %s", wr_id,
				ibv_wc_status_str(st));
	s->sig_done++;
	*is_header = w->kind == RV_RNDV && wr_id == RV_WRID(RV_RNDV, w->seq);
	return 0;
}

/* One completion of dpv0's CQ: SENDs, and the FIN or the small answer in its RQ. */
static int
sender_wc(struct rv *p, struct rv_wait *w, const struct ibv_wc *wc)
{
	struct pv_side *s = &p->side[0];
	uint32_t j = (uint32_t)(s->recvs % RV_RECV_DEPTH);
	const struct ibv_tmh *tmh;
	bool header;
	int ret;

	/* An error completion's opcode is undefined: its wr_id says what it was. */
	if (wc->status != IBV_WC_SUCCESS)
		return rv_wrong(w, "dpv0 completion wr_id %#" PRIx64 ": status %s", wc->wr_id,
				ibv_wc_status_str(wc->status));
	if (wc->opcode == IBV_WC_SEND) {
		if (send_done(s, w, wc->wr_id, wc->status, &header) != 0)
			return -1;
		/* Before the FIN, unless the header's ACK was lost: the READ that follows
		 * it acknowledges nothing of dpv0's, and the FIN may come first then. */
		if (header)
			w->sent = true;
		return 0;
	}
	if (wc->opcode != IBV_WC_RECV || wc->wr_id != j || wc->byte_len != RV_SMALL_LEN ||
	    wc->qp_num != s->qp->qp_num)
		return rv_wrong(w, "dpv0 receive completion: opcode %d, wr_id %" PRIu64
				", byte_len %u, qp %u; expected RECV, %u, %u, %u",
				(int)wc->opcode, wc->wr_id, wc->byte_len, wc->qp_num, j,
				RV_SMALL_LEN, s->qp->qp_num);
	tmh = (const struct ibv_tmh *)(const void *)slot(s, 1 + j);
	if (w->kind == RV_RNDV) {
		if (w->fin || tmh->opcode != IBV_TMH_FIN ||
		    tmh->app_ctx != rte_cpu_to_be_32((uint32_t)w->seq) ||
		    tmh->tag != rte_cpu_to_be_64(rv_tag(w->seq)))
			return rv_wrong(w, "dpv0 received opcode %u, app_ctx %u, tag %#" PRIx64
					"%s; expected the FIN (opcode %u), %u, %#" PRIx64,
					tmh->opcode, rte_be_to_cpu_32(tmh->app_ctx),
					rte_be_to_cpu_64(tmh->tag), w->fin ? " (a second one)" : "",
					IBV_TMH_FIN, (uint32_t)w->seq, rv_tag(w->seq));
		w->fin = true;
	} else if (w->kind == RV_SMALL) {
		if (w->reply || tmh->opcode != IBV_TMH_NO_TAG ||
		    tmh->app_ctx != rte_cpu_to_be_32((uint32_t)~w->seq))
			return rv_wrong(w, "dpv0 received opcode %u, app_ctx %#x%s; expected "
					"the answer (opcode %u, %#x)", tmh->opcode,
					rte_be_to_cpu_32(tmh->app_ctx),
					w->reply ? " (a second one)" : "", IBV_TMH_NO_TAG,
					(uint32_t)~w->seq);
		w->reply = true;
	} else {
		return rv_wrong(w, "dpv0 received a message during a READ");
	}
	s->recvs++;
	ret = post_rq(s, j);
	if (ret != 0)
		return rv_wrong(w, "ibv_post_recv(dpv0): %s", strerror(ret));
	return 0;
}

static int
poll_sender(struct rv *p, struct rv_wait *w)
{
	struct ibv_wc wc[4];
	int got, i;

	got = ibv_poll_cq(p->side[0].cq, 4, wc);
	if (got < 0)
		return rv_wrong(w, "ibv_poll_cq(dpv0): %d", got);
	for (i = 0; i < got; i++)
		if (sender_wc(p, w, &wc[i]) != 0)
			return -1;
	return 0;
}

/* The tagged receive completions of a rendezvous at dpv1. */
static int
receiver_tm_recv(struct rv *p, struct rv_wait *w, struct ibv_cq_ex *cq)
{
	enum ibv_wc_status st = cq->status;
	unsigned int flags = ibv_wc_read_wc_flags(cq);
	uint32_t len = ibv_wc_read_byte_len(cq);
	struct ibv_wc_tm_info info;

	(void)p;
	ibv_wc_read_tm_info(cq, &info);
	if (w->kind == RV_RNDV && st == IBV_WC_TM_RNDV_INCOMPLETE)
		return rv_wrong(w, "dpv1 completed the matched rendezvous %s, flags %#x: its "
				"device does not make the rendezvous read", ibv_wc_status_str(st),
				flags);
	if (w->kind != RV_RNDV || st != IBV_WC_SUCCESS || cq->wr_id != w->seq)
		return rv_wrong(w, "dpv1 TM_RECV completion: status %s, flags %#x, wr_id %#"
				PRIx64 "; expected success, wr_id %#" PRIx64 " (a wr_id %#x<<56|n "
				"is an ordinary WR: the header found no tag); so far MATCH %s, "
				"FIN at dpv0 %s, header SEND completed %s",
				ibv_wc_status_str(st), flags, cq->wr_id, w->seq, RV_SPARE_KIND,
				w->match ? "yes" : "no", w->fin ? "yes" : "no",
				w->sent ? "yes" : "no");
	if (!w->match) {
		if (flags != IBV_WC_TM_MATCH || info.tag != rv_tag(w->seq) ||
		    info.priv != (uint32_t)w->seq)
			return rv_wrong(w, "dpv1's first completion: flags %#x, tag %#" PRIx64
					", priv %u; expected exactly MATCH (%#x), %#" PRIx64 ", %u",
					flags, info.tag, info.priv, IBV_WC_TM_MATCH,
					rv_tag(w->seq), (uint32_t)w->seq);
		w->match = true;
		return 0;
	}
	if (w->data_valid || flags != IBV_WC_TM_DATA_VALID || len != w->len || info.tag != 0 ||
	    info.priv != 0)
		return rv_wrong(w, "dpv1's second completion: flags %#x, byte_len %u, tag %#"
				PRIx64 ", priv %u%s; expected exactly DATA_VALID (%#x), %u, 0, 0",
				flags, len, info.tag, info.priv,
				w->data_valid ? " (a third one)" : "", IBV_WC_TM_DATA_VALID, w->len);
	w->data_valid = true;
	return 0;
}

/* One completion of dpv1's CQ. Posts it calls for wait until the poll ends. */
static int
receiver_wc(struct rv *p, struct rv_wait *w)
{
	struct pv_side *s = &p->side[1];
	struct ibv_cq_ex *cq = s->cqx;
	enum ibv_wc_opcode op = ibv_wc_read_opcode(cq);
	uint32_t j = (uint32_t)(s->recvs % RV_RECV_DEPTH);
	const struct ibv_tmh *tmh;
	bool header;

	switch (op) {
	case IBV_WC_SEND:
		return send_done(s, w, cq->wr_id, cq->status, &header);
	case IBV_WC_RDMA_READ:
		if (cq->status != IBV_WC_SUCCESS || w->kind != RV_READ ||
		    cq->wr_id != RV_WRID(RV_READ, w->seq) || w->read_done)
			return rv_wrong(w, "dpv1 READ completion: status %s, wr_id %#" PRIx64
					"; expected success, %#" PRIx64,
					ibv_wc_status_str(cq->status), cq->wr_id,
					RV_WRID(RV_READ, w->seq));
		w->read_done = true;
		return 0;
	case IBV_WC_TM_RECV:
		return receiver_tm_recv(p, w, cq);
	case IBV_WC_TM_NO_TAG:
		if (cq->status != IBV_WC_SUCCESS || w->kind != RV_SMALL || w->small_in ||
		    cq->wr_id != RV_WRID(RV_SPARE_KIND, j) ||
		    ibv_wc_read_byte_len(cq) != RV_SMALL_LEN)
			return rv_wrong(w, "dpv1 NO_TAG completion: status %s, wr_id %#" PRIx64
					", byte_len %u; expected success, %#" PRIx64 ", %u",
					ibv_wc_status_str(cq->status), cq->wr_id,
					ibv_wc_read_byte_len(cq), RV_WRID(RV_SPARE_KIND, j),
					RV_SMALL_LEN);
		tmh = (const struct ibv_tmh *)(const void *)slot(s, 1 + j);
		if (tmh->opcode != IBV_TMH_NO_TAG ||
		    tmh->app_ctx != rte_cpu_to_be_32((uint32_t)w->seq))
			return rv_wrong(w, "dpv1 received opcode %u, app_ctx %u; expected %u, %u",
					tmh->opcode, rte_be_to_cpu_32(tmh->app_ctx),
					IBV_TMH_NO_TAG, (uint32_t)w->seq);
		s->recvs++;
		w->small_in = w->repost_srq = w->post_reply = true;
		return 0;
	default:
		if (op == IBV_WC_TM_ADD && cq->status == IBV_WC_SUCCESS)
			return 0;
		return rv_wrong(w, "dpv1 completion: opcode %d, status %s, wr_id %#" PRIx64,
				(int)op, ibv_wc_status_str(cq->status), cq->wr_id);
	}
}

static int
poll_receiver(struct rv *p, struct rv_wait *w)
{
	struct ibv_poll_cq_attr attr = { .comp_mask = 0 };
	struct pv_side *s = &p->side[1];
	struct ibv_tmh *tmh;
	int ret, rc;

	ret = ibv_start_poll(s->cqx, &attr);
	if (ret == ENOENT)
		return 0;
	if (ret != 0)
		return rv_wrong(w, "ibv_start_poll(dpv1): %s", strerror(ret));
	do
		rc = receiver_wc(p, w);
	while (rc == 0 && (ret = ibv_next_poll(s->cqx)) == 0);
	ibv_end_poll(s->cqx);
	if (rc != 0)
		return -1;
	if (ret != ENOENT)
		return rv_wrong(w, "ibv_next_poll(dpv1): %s", strerror(ret));
	if (w->repost_srq) {
		w->repost_srq = false;
		ret = post_rq(s, (uint32_t)((s->recvs - 1) % RV_RECV_DEPTH));
		if (ret != 0)
			return rv_wrong(w, "ibv_post_srq_recv(dpv1): %s", strerror(ret));
	}
	if (w->post_reply) {
		w->post_reply = false;
		tmh = (struct ibv_tmh *)(void *)slot(s, 0);
		memset(tmh, 0, sizeof(*tmh));
		tmh->opcode = IBV_TMH_NO_TAG;
		tmh->app_ctx = rte_cpu_to_be_32((uint32_t)~w->seq);
		if (post_small_send(p, 1, RV_SMALL_LEN, RV_WRID(RV_SMALL, w->seq), false, w) != 0)
			return -1;
	}
	return 0;
}

static bool
rv_done(const struct rv_wait *w)
{
	switch (w->kind) {
	case RV_RNDV:
		return w->sent && w->fin && w->match && w->data_valid;
	case RV_READ:
		return w->read_done;
	default:
		return w->reply;
	}
}

static int
rv_wait_done(struct rv *p, struct rv_wait *w)
{
	uint64_t deadline = pv_deadline();
	uint32_t calls = 0;

	while (!rv_done(w)) {
		if (poll_receiver(p, w) != 0 || poll_sender(p, w) != 0)
			return -1;
		if (pv_stalled(deadline, &calls))
			return rv_wrong(w, "stalled: header sent %d, MATCH %d, FIN %d, DATA_VALID "
					"%d, READ %d, small in %d, answer %d", w->sent, w->match,
					w->fin, w->data_valid, w->read_done, w->small_in, w->reply);
	}
	return 0;
}

/*
 * ---- one message of each kind: the ns it took, or -1 ----
 * Never inlined, so that a profiler run (valgrind --tool=callgrind --toggle-collect=
 * rndv_one) counts one kind's instructions alone.
 */

static __attribute__((noinline)) int64_t
rndv_one(struct rv *p, uint32_t len)
{
	struct pv_side *a = &p->side[0], *b = &p->side[1];
	struct rv_wait w = { .kind = RV_RNDV, .seq = p->seq[RV_RNDV], .len = len };
	struct ibv_sge sge = { .addr = (uintptr_t)b->data, .length = len,
			       .lkey = b->data_mr->lkey };
	struct ibv_ops_wr op = {
		.wr_id = w.seq,
		.opcode = IBV_WR_TAG_ADD,
		.tm.add = {
			.recv_wr_id = w.seq,
			.sg_list = &sge,
			.num_sge = 1,
			.tag = rv_tag(w.seq),
			.mask = UINT64_MAX,
		},
	}, *bad;
	struct ibv_tmh *tmh = (struct ibv_tmh *)(void *)slot(a, 0);
	struct ibv_rvh *rvh = (struct ibv_rvh *)(tmh + 1);
	uint64_t t0, t1;
	int64_t wrong;
	int ret;

	data_fill(p, a->data, b->data, RV_RNDV, w.seq, len);
	ret = ibv_post_srq_ops(b->srq, &op, &bad);
	if (ret != 0)
		return rv_wrong(&w, "ibv_post_srq_ops(dpv1, TAG_ADD): %s", strerror(ret));
	memset(tmh, 0, sizeof(*tmh));
	tmh->opcode = IBV_TMH_RNDV;
	tmh->app_ctx = rte_cpu_to_be_32((uint32_t)w.seq);
	tmh->tag = rte_cpu_to_be_64(rv_tag(w.seq));
	rvh->va = rte_cpu_to_be_64((uintptr_t)a->data);
	rvh->rkey = rte_cpu_to_be_32(a->data_mr->rkey);
	rvh->len = rte_cpu_to_be_32(len);
	t0 = perf_now_ns();
	if (post_small_send(p, 0, RV_HDR_LEN, RV_WRID(RV_RNDV, w.seq), true, &w) != 0 ||
	    rv_wait_done(p, &w) != 0)
		return -1;
	t1 = perf_now_ns();
	wrong = data_check(p, a->data, b->data, RV_RNDV, w.seq, len);
	if (wrong >= 0)
		return rv_wrong(&w, "byte %" PRId64 " of the buffer wrong after DATA_VALID", wrong);
	p->seq[RV_RNDV]++;
	return (int64_t)(t1 - t0);
}

static __attribute__((noinline)) int64_t
read_one(struct rv *p, uint32_t len)
{
	struct pv_side *a = &p->side[0], *b = &p->side[1];
	struct rv_wait w = { .kind = RV_READ, .seq = p->seq[RV_READ], .len = len };
	struct ibv_sge sge = { .addr = (uintptr_t)b->data, .length = len,
			       .lkey = b->data_mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = RV_WRID(RV_READ, w.seq),
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_RDMA_READ,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = (uintptr_t)a->data, .rkey = a->data_mr->rkey },
	}, *bad;
	uint64_t t0, t1;
	int64_t wrong;
	int ret;

	data_fill(p, a->data, b->data, RV_READ, w.seq, len);
	t0 = perf_now_ns();
	ret = ibv_post_send(b->qp, &wr, &bad);
	if (ret != 0)
		return rv_wrong(&w, "ibv_post_send(dpv1, RDMA_READ): %s", strerror(ret));
	if (rv_wait_done(p, &w) != 0)
		return -1;
	t1 = perf_now_ns();
	wrong = data_check(p, a->data, b->data, RV_READ, w.seq, len);
	if (wrong >= 0)
		return rv_wrong(&w, "byte %" PRId64 " of the buffer wrong after the READ", wrong);
	p->seq[RV_READ]++;
	return (int64_t)(t1 - t0);
}

static __attribute__((noinline)) int64_t
small_one(struct rv *p)
{
	struct pv_side *a = &p->side[0];
	struct rv_wait w = { .kind = RV_SMALL, .seq = p->seq[RV_SMALL], .len = RV_SMALL_LEN };
	struct ibv_tmh *tmh = (struct ibv_tmh *)(void *)slot(a, 0);
	uint64_t t0, t1;

	memset(tmh, 0, sizeof(*tmh));
	tmh->opcode = IBV_TMH_NO_TAG;
	tmh->app_ctx = rte_cpu_to_be_32((uint32_t)w.seq);
	t0 = perf_now_ns();
	if (post_small_send(p, 0, RV_SMALL_LEN, RV_WRID(RV_SMALL, w.seq), false, &w) != 0 ||
	    rv_wait_done(p, &w) != 0)
		return -1;
	t1 = perf_now_ns();
	p->bytes_checked += 2 * RV_SMALL_LEN;
	p->seq[RV_SMALL]++;
	return (int64_t)(t1 - t0);
}

/* Wait for the signaled small SENDs still unacknowledged on both sides. */
static int
rv_quiesce(struct rv *p)
{
	struct rv_wait w = { .kind = RV_SMALL, .seq = p->seq[RV_SMALL], .reply = true };
	uint64_t deadline = pv_deadline();
	uint32_t calls = 0;

	while (p->side[0].sig_done < p->side[0].sig_posted ||
	       p->side[1].sig_done < p->side[1].sig_posted) {
		if (poll_receiver(p, &w) != 0 || poll_sender(p, &w) != 0)
			return -1;
		if (pv_stalled(deadline, &calls))
			return rv_wrong(&w, "signaled SENDs never completed");
	}
	return 0;
}

/* ---- measuring ---- */

/* A block of @p n messages of kind @p k: their mean ns per message, or -1. */
static double
run_block(struct rv *p, enum rv_kind k, uint32_t size, uint32_t n)
{
	uint64_t sum = 0;
	int64_t ns;

	for (uint32_t i = 0; i < n; i++) {
		ns = k == RV_RNDV ? rndv_one(p, size) : k == RV_READ ? read_one(p, size) :
		     small_one(p);
		if (ns < 0)
			return -1;
		sum += (uint64_t)ns;
	}
	return (double)sum / n;
}

static int
measure_size(struct rv *p, unsigned int si)
{
	struct rv_result *r = &p->res[si];
	uint32_t size = p->o->sizes[si];
	uint32_t n[RV_NB_KINDS];
	double ns;
	int k;

	r->size = size;
	r->msgs = p->o->block_bytes / size > 0 ? p->o->block_bytes / size : 1;
	n[RV_RNDV] = n[RV_READ] = r->msgs;
	n[RV_SMALL] = p->o->small_per_block;
	/* One block of each kind unmeasured: first touches of queues and caches. */
	for (k = 0; k < RV_NB_KINDS; k++)
		if (run_block(p, k, size, n[k]) < 0)
			return -1;
	for (uint32_t rep = 0; rep < p->o->reps; rep++) {
		for (int i = 0; i < RV_NB_KINDS; i++) {
			k = (int)((rep + (uint32_t)i) % RV_NB_KINDS);
			ns = run_block(p, k, size, n[k]);
			if (ns < 0)
				return -1;
			p->samples[k][rep] = ns;
		}
	}
	if (rv_quiesce(p) != 0)
		return -1;
	/* The paired figures first: perf_median() sorts the samples. */
	for (uint32_t rep = 0; rep < p->o->reps; rep++)
		p->paired[rep] = p->samples[RV_READ][rep] / p->samples[RV_RNDV][rep];
	r->paired_ratio = perf_median(p->paired, p->o->reps);
	for (uint32_t rep = 0; rep < p->o->reps; rep++)
		p->paired[rep] = p->samples[RV_RNDV][rep] - p->samples[RV_READ][rep] -
				 p->samples[RV_SMALL][rep];
	r->excess_us = perf_median(p->paired, p->o->reps) / 1e3;
	for (k = 0; k < RV_NB_KINDS; k++) {
		r->us[k] = perf_median(p->samples[k], p->o->reps) / 1e3;
		/* Bytes per microsecond are MB/s (10^6 bytes a second). */
		r->mbps[k] = k == RV_SMALL ? 0 : size / r->us[k];
	}
	r->bw_ratio = r->mbps[RV_RNDV] / r->mbps[RV_READ];
	r->bound_us = r->us[RV_READ] + r->us[RV_SMALL];
	r->met = r->excess_us <= 0;
	return 0;
}

/* ---- output ---- */

static const struct perf_table_col rv_cols[] = {
	{ "size", 9 },
	{ "msgs", 5 },
	{ "rndv MB/s", 10 },
	{ "read MB/s", 10 },
	{ "rndv/read", 9 },
	{ "rndv us", 10 },
	{ "read us", 10 },
	{ "small us", 8 },
	{ "bound us", 10 },
	{ "paired", 6 },
	{ "excess us", 9 },
	{ "target", 6 },
};
#define RV_NB_COLS (sizeof(rv_cols) / sizeof(rv_cols[0]))

static void
table_report(const struct rv *p, bool defaulted)
{
	char cells[RV_NB_COLS][PERF_CELL_LEN];
	unsigned int si;

	printf("dpv-perf rndv: tag-matching rendezvous next to the RDMA READ it is made of,\n"
	       "one RC QP pair %s (sender, RQ) -> %s (receiver, TM SRQ)\n"
	       "  rndv   TAG_ADD at the receiver first; then the sender's SEND of TMH(RNDV) +\n"
	       "         RVH until DATA_VALID at the receiver and the FIN at the sender\n"
	       "  read   an RDMA READ of the same bytes by the receiver, post to completion\n"
	       "  small  a 16-byte SEND each way (the size of a FIN), post to the answer\n"
	       "  target rndv <= read + small: met when excess us, the median over reps of\n"
	       "         each rep's rndv - read - small, is <= 0 (paired: the median of each\n"
	       "         rep's rndv/read bandwidth ratio; bound us = read us + small us)\n"
	       "  Medians over %" PRIu32 " reps; a rep is a block of each kind (msgs messages\n"
	       "  of rndv and read, about %" PRIu32 " bytes, and %" PRIu32 " small round trips),\n"
	       "  the kinds in an order that rotates; one block each unmeasured first.\n"
	       "  MB/s = 10^6 bytes/s, us per message. Data checked: %s.\n"
	       "  One thread drives both devices in one process.\n",
	       p->dev[0].name, p->dev[1].name, p->o->reps, p->o->block_bytes,
	       p->o->small_per_block, p->o->check ? "every byte" : "first, middle, last 8 bytes");
	pv_print_setup(defaulted);
	perf_table_header(stdout, rv_cols, RV_NB_COLS);
	for (si = 0; si < p->o->nb_sizes; si++) {
		const struct rv_result *r = &p->res[si];

		snprintf(cells[0], sizeof(cells[0]), "%" PRIu32, r->size);
		snprintf(cells[1], sizeof(cells[1]), "%" PRIu32, r->msgs);
		snprintf(cells[2], sizeof(cells[2]), "%.1f", r->mbps[RV_RNDV]);
		snprintf(cells[3], sizeof(cells[3]), "%.1f", r->mbps[RV_READ]);
		snprintf(cells[4], sizeof(cells[4]), "%.3f", r->bw_ratio);
		snprintf(cells[5], sizeof(cells[5]), "%.1f", r->us[RV_RNDV]);
		snprintf(cells[6], sizeof(cells[6]), "%.1f", r->us[RV_READ]);
		snprintf(cells[7], sizeof(cells[7]), "%.2f", r->us[RV_SMALL]);
		snprintf(cells[8], sizeof(cells[8]), "%.1f", r->bound_us);
		snprintf(cells[9], sizeof(cells[9]), "%.3f", r->paired_ratio);
		snprintf(cells[10], sizeof(cells[10]), "%.1f", r->excess_us);
		snprintf(cells[11], sizeof(cells[11]), "%s", r->met ? "met" : "missed");
		perf_table_row(stdout, rv_cols, RV_NB_COLS, cells);
	}
}

static void
json_report(const struct rv *p, bool defaulted)
{
	struct perf_json j;
	unsigned int si;
	bool all = true;

	perf_json_init(&j, stdout);
	perf_json_object_begin(&j, NULL);
	perf_json_str(&j, "benchmark", "rndv");
	perf_json_object_begin(&j, "config");
	perf_json_u64(&j, "reps", p->o->reps);
	perf_json_u64(&j, "block_bytes", p->o->block_bytes);
	perf_json_u64(&j, "small_per_block", p->o->small_per_block);
	perf_json_u64(&j, "small_len", RV_SMALL_LEN);
	perf_json_u64(&j, "header_len", RV_HDR_LEN);
	perf_json_bool(&j, "check_every_byte", p->o->check);
	perf_json_bool(&j, "quick", p->o->quick);
	perf_json_str(&j, "rndv", "post of the TMH(RNDV)+RVH SEND to DATA_VALID at the "
		      "receiver and the FIN at the sender");
	perf_json_str(&j, "read", "RDMA READ of the same bytes, same QP, post to completion");
	perf_json_str(&j, "small", "16-byte SEND each way, post to the answer's receive");
	perf_json_str(&j, "target", "rndv <= read + small: excess_us, the median over reps of "
		      "each rep's rndv - read - small, <= 0");
	perf_json_str(&j, "figures", "medians over reps of per-block means; MB/s = 10^6 B/s");
	perf_json_str(&j, "threads", "one thread drives both sides in one process");
	pv_json_setup(&j, p->dev, defaulted);
	perf_json_object_end(&j);
	perf_json_array_begin(&j, "sizes");
	for (si = 0; si < p->o->nb_sizes; si++) {
		const struct rv_result *r = &p->res[si];

		perf_json_object_begin(&j, NULL);
		perf_json_u64(&j, "size", r->size);
		perf_json_u64(&j, "msgs_per_block", r->msgs);
		perf_json_double(&j, "rndv_mbps", r->mbps[RV_RNDV]);
		perf_json_double(&j, "read_mbps", r->mbps[RV_READ]);
		perf_json_double(&j, "rndv_us", r->us[RV_RNDV]);
		perf_json_double(&j, "read_us", r->us[RV_READ]);
		perf_json_double(&j, "small_us", r->us[RV_SMALL]);
		perf_json_double(&j, "bw_ratio", r->bw_ratio);
		perf_json_double(&j, "bound_us", r->bound_us);
		perf_json_double(&j, "paired_bw_ratio", r->paired_ratio);
		perf_json_double(&j, "excess_us", r->excess_us);
		perf_json_double(&j, "rndv_minus_read_us", r->us[RV_RNDV] - r->us[RV_READ]);
		perf_json_bool(&j, "target_met", r->met);
		perf_json_object_end(&j);
		all = all && r->met;
	}
	perf_json_array_end(&j);
	perf_json_u64(&j, "messages_rndv", p->seq[RV_RNDV]);
	perf_json_u64(&j, "messages_read", p->seq[RV_READ]);
	perf_json_u64(&j, "round_trips_small", p->seq[RV_SMALL]);
	perf_json_u64(&j, "bytes_checked", p->bytes_checked);
	perf_json_bool(&j, "target_met", all);
	perf_json_object_end(&j);
	perf_json_finish(&j);
}

static void
rv_help(void)
{
	printf("usage: dpv-perf rndv [--json] [--sizes LIST] [--reps N] [--check] [--quick]\n\n"
	       "Tag-matching rendezvous bandwidth next to a plain RDMA READ of the same size\n"
	       "over the same RC QP pair (dpv0 sender, dpv1 receiver on a TM SRQ), and a\n"
	       "16-byte SEND round trip on the same QPs: MB/s and us per message (medians\n"
	       "over reps), the ratio rndv/read, and the target rndv <= read + small.\n\n"
	       "  --json          one JSON object on stdout instead of the table\n"
	       "  --sizes LIST    comma-separated bytes, %u..%u (default %s)\n"
	       "  --reps N        measured blocks of each kind per size, 1..%u (default %u)\n"
	       "  --check         write and check every byte (default: 24 bytes a message)\n"
	       "  --quick         sizes %s, %u reps, blocks of %u bytes (a smoke test)\n"
	       "  --help          this text\n\n",
	       RV_MIN_SIZE, RV_MAX_SIZE, RV_DEFAULT_SIZES, RV_MAX_REPS, RV_DEFAULT_REPS,
	       RV_QUICK_SIZES, RV_QUICK_REPS, RV_QUICK_BLOCK_BYTES);
	pv_help_setup();
	printf("A wrong completion or byte fails the run with exit status 1 (a missed target\n"
	       "does not). 2: a bad command line.\n");
}

enum { OPT_JSON = 256, OPT_SIZES, OPT_REPS, OPT_CHECK, OPT_QUICK };

static int
parse_sizes(const char *s, struct rv_opts *o)
{
	int n = perf_parse_u32_list(s, RV_MIN_SIZE, RV_MAX_SIZE, o->sizes, RV_MAX_SIZES);

	if (n < 0)
		return perf_usage_error(RV_CMD, "--sizes '%s': expected at most %u comma-"
					"separated sizes of %u..%u bytes", s, RV_MAX_SIZES,
					RV_MIN_SIZE, RV_MAX_SIZE);
	o->nb_sizes = (unsigned int)n;
	return 0;
}

/* The options as given, before --quick fills in the others. */
struct rv_args {
	struct rv_opts *o;
	const char *sizes;
	bool reps_set;
};

static int
rv_opt(void *ctx, int c, const char *arg)
{
	struct rv_args *a = ctx;

	switch (c) {
	case OPT_JSON:
		a->o->json = true;
		break;
	case OPT_SIZES:
		a->sizes = arg;
		break;
	case OPT_REPS:
		if (perf_parse_u32(arg, 1, RV_MAX_REPS, &a->o->reps) != 0)
			return perf_usage_error(RV_CMD, "--reps '%s': expected 1..%u", arg,
						RV_MAX_REPS);
		a->reps_set = true;
		break;
	case OPT_CHECK:
		a->o->check = true;
		break;
	case OPT_QUICK:
		a->o->quick = true;
		break;
	}
	return 0;
}

/* 0 to run, -1 after --help, or PERF_EXIT_USAGE. */
static int
parse_opts(int argc, char **argv, struct rv_opts *o)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, OPT_JSON },
		{ "sizes", required_argument, NULL, OPT_SIZES },
		{ "reps", required_argument, NULL, OPT_REPS },
		{ "check", no_argument, NULL, OPT_CHECK },
		{ "quick", no_argument, NULL, OPT_QUICK },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct rv_args a = { .o = o };
	int rc;

	memset(o, 0, sizeof(*o));
	o->reps = RV_DEFAULT_REPS;
	rc = perf_getopts(RV_CMD, argc, argv, longopts, rv_help, rv_opt, &a);
	if (rc != 0)
		return rc;
	/* --quick sets what the other options have not. */
	if (a.sizes == NULL)
		a.sizes = o->quick ? RV_QUICK_SIZES : RV_DEFAULT_SIZES;
	if (parse_sizes(a.sizes, o) != 0)
		return PERF_EXIT_USAGE;
	if (o->quick && !a.reps_set)
		o->reps = RV_QUICK_REPS;
	o->block_bytes = o->quick ? RV_QUICK_BLOCK_BYTES : RV_BLOCK_BYTES;
	o->small_per_block = o->quick ? RV_QUICK_SMALL_PER_BLOCK : RV_SMALL_PER_BLOCK;
	return 0;
}

static int
rv_main(int argc, char **argv)
{
	struct rv_opts o;
	struct rv *p;
	bool defaulted;
	unsigned int si;
	int rc, k;

	rc = parse_opts(argc, argv, &o);
	if (rc != 0)
		return rc < 0 ? PERF_EXIT_OK : rc;
	p = calloc(1, sizeof(*p));
	if (p == NULL) {
		perf_error("%s: out of memory", RV_CMD);
		return PERF_EXIT_FAIL;
	}
	p->o = &o;
	for (si = 0; si < o.nb_sizes; si++)
		if (o.sizes[si] > p->max_size)
			p->max_size = o.sizes[si];
	rc = PERF_EXIT_FAIL;
	for (k = 0; k < RV_NB_KINDS; k++) {
		p->samples[k] = calloc(o.reps, sizeof(*p->samples[k]));
		if (p->samples[k] == NULL) {
			perf_error("%s: out of memory", RV_CMD);
			goto out;
		}
	}
	p->paired = calloc(o.reps, sizeof(*p->paired));
	if (p->paired == NULL) {
		perf_error("%s: out of memory", RV_CMD);
		goto out;
	}
	defaulted = pv_env_defaults();
	if (pv_open_pair(p->dev) != 0 || rv_setup(p) != 0)
		goto out;
	for (si = 0; si < o.nb_sizes; si++)
		if (measure_size(p, si) != 0)
			goto out;
	if (o.json)
		json_report(p, defaulted);
	else
		table_report(p, defaulted);
	rc = PERF_EXIT_OK;
out:
	if ((rv_teardown(p) | pv_close_pair(p->dev)) != 0)
		rc = PERF_EXIT_FAIL;
	for (k = 0; k < RV_NB_KINDS; k++)
		free(p->samples[k]);
	free(p->paired);
	free(p);
	return rc;
}

const struct perf_cmd perf_cmd_rndv = {
	.name = RV_CMD,
	.summary = "rendezvous MB/s vs the RDMA READ it is made of, target rndv <= read + small",
	.run = rv_main,
};
