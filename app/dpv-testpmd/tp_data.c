/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The data path by hand: receives, tag ops, SEND / WRITE / READ, polling, and the TM
 * SRQ views (tag list, unexpected messages, phases).
 *
 * Every command that makes the device act waits until it has: a send until it is
 * acknowledged (so the receiver's completion is in its CQ when the command returns),
 * a tag op until the device has executed it. A script therefore reads the same on
 * every run. Completions a wait finds that are not its own are kept for `poll cq`.
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/tm_types.h>

#include "dpv_verbs.h"
#include "testpmd.h"

/* Polls of an empty CQ after which `poll cq` stops looking: each drives the devices,
 * and what a finished command caused is in the CQ long before. */
#define POLL_EMPTY_ROUNDS 64u

void tp_progress(void)
{
	struct ibv_wc wc;

	for (unsigned int i = 0; i < tp.n_devs; i++)
		(void)ibv_poll_cq(tp.dev[i].idle_cq, 1, &wc);
}

static void wc_of_legacy(const struct ibv_wc *w, struct tp_wc *o)
{
	*o = (struct tp_wc){
		.wr_id = w->wr_id, .status = w->status, .opcode = w->opcode,
		.wc_flags = w->wc_flags, .byte_len = w->byte_len, .qp_num = w->qp_num,
		.src_qp = w->src_qp, .imm = be32toh(w->imm_data),
	};
}

static void wc_of_ex(struct ibv_cq_ex *cq, struct tp_wc *o)
{
	struct ibv_wc_tm_info tm = {0};

	*o = (struct tp_wc){
		.wr_id = cq->wr_id, .status = cq->status, .opcode = ibv_wc_read_opcode(cq),
		.wc_flags = ibv_wc_read_wc_flags(cq), .byte_len = ibv_wc_read_byte_len(cq),
		.qp_num = ibv_wc_read_qp_num(cq), .src_qp = ibv_wc_read_src_qp(cq),
		.has_tm = true,
	};
	if (o->wc_flags & IBV_WC_WITH_IMM)
		o->imm = be32toh(ibv_wc_read_imm_data(cq));
	if (o->wc_flags & IBV_WC_TM_MATCH) {
		ibv_wc_read_tm_info(cq, &tm);
		o->tag = tm.tag;
		o->app_ctx = tm.priv;
	}
}

/* Poll the device's CQ itself, without the stash. */
static int cq_poll_dev(struct tp_obj *c, struct tp_wc *wc, int n)
{
	int got = 0;

	if (c->u.cq.cq_ex == NULL) {
		struct ibv_wc w[16];
		int k = ibv_poll_cq(c->u.cq.cq, n < 16 ? n : 16, w);

		for (int i = 0; i < k; i++)
			wc_of_legacy(&w[i], &wc[got++]);
		return k < 0 ? k : got;
	}
	{
		struct ibv_poll_cq_attr attr = {0};
		struct ibv_cq_ex *cq = c->u.cq.cq_ex;
		int ret = ibv_start_poll(cq, &attr);

		if (ret == ENOENT)
			return 0;
		if (ret != 0)
			return -ret;
		do {
			wc_of_ex(cq, &wc[got++]);
		} while (got < n && ibv_next_poll(cq) == 0);
		ibv_end_poll(cq);
	}
	return got;
}

int tp_cq_take(uint32_t cq_id, struct tp_wc *wc, int n)
{
	struct tp_obj *c = &tp.obj[TP_CQ][cq_id];
	int got = 0;

	while (got < n && c->u.cq.stash_n > 0) {
		wc[got++] = c->u.cq.stash[c->u.cq.stash_head];
		c->u.cq.stash_head = (c->u.cq.stash_head + 1) % TP_CQ_STASH;
		c->u.cq.stash_n--;
	}
	if (got < n) {
		int k = cq_poll_dev(c, wc + got, n - got);

		if (k > 0)
			got += k;
	}
	return got;
}

static void stash(uint32_t cq_id, const struct tp_wc *wc)
{
	struct tp_obj *c = &tp.obj[TP_CQ][cq_id];

	if (c->u.cq.stash_n == TP_CQ_STASH) {
		tp_err("poll", ENOSPC, "cq %u: %u completions waiting; poll cq %u", cq_id,
		       TP_CQ_STASH, cq_id);
		return;
	}
	c->u.cq.stash[(c->u.cq.stash_head + c->u.cq.stash_n) % TP_CQ_STASH] = *wc;
	c->u.cq.stash_n++;
}

/* Wait for the completion @p wr_id on @p cq_id, keeping the others. */
static int wait_wc(uint32_t cq_id, uint64_t wr_id, struct tp_wc *out)
{
	uint64_t deadline = tp_now_ms() + TP_WAIT_MS;
	struct tp_obj *c = &tp.obj[TP_CQ][cq_id];
	struct tp_wc wc[16];

	while (tp_now_ms() < deadline) {
		int k = cq_poll_dev(c, wc, 16);

		for (int i = 0; i < k; i++) {
			if (wc[i].wr_id == wr_id) {
				*out = wc[i];
				for (int j = i + 1; j < k; j++)
					stash(cq_id, &wc[j]);
				return 0;
			}
			stash(cq_id, &wc[i]);
		}
		if (k <= 0)
			tp_progress();
	}
	return ETIMEDOUT;
}

static const char *opcode_name(enum ibv_wc_opcode op)
{
	switch (op) {
	case IBV_WC_SEND: return "SEND";
	case IBV_WC_RDMA_WRITE: return "RDMA_WRITE";
	case IBV_WC_RDMA_READ: return "RDMA_READ";
	case IBV_WC_COMP_SWAP: return "COMP_SWAP";
	case IBV_WC_FETCH_ADD: return "FETCH_ADD";
	case IBV_WC_ATOMIC_WRITE: return "ATOMIC_WRITE";
	case IBV_WC_BIND_MW: return "BIND_MW";
	case IBV_WC_LOCAL_INV: return "LOCAL_INV";
	case IBV_WC_TSO: return "TSO";
	case IBV_WC_RECV: return "RECV";
	case IBV_WC_RECV_RDMA_WITH_IMM: return "RECV_RDMA_WITH_IMM";
	case IBV_WC_TM_ADD: return "TM_ADD";
	case IBV_WC_TM_DEL: return "TM_DEL";
	case IBV_WC_TM_SYNC: return "TM_SYNC";
	case IBV_WC_TM_RECV: return "TM_RECV";
	case IBV_WC_TM_NO_TAG: return "TM_NO_TAG";
	default: return "OPCODE?";
	}
}

static void flags_str(unsigned int f, char *buf, size_t len)
{
	static const struct {
		unsigned int bit;
		const char *name;
	} names[] = {
		{IBV_WC_GRH, "GRH"}, {IBV_WC_WITH_IMM, "WITH_IMM"},
		{IBV_WC_IP_CSUM_OK, "IP_CSUM_OK"}, {IBV_WC_WITH_INV, "WITH_INV"},
		{IBV_WC_TM_SYNC_REQ, "TM_SYNC_REQ"}, {IBV_WC_TM_MATCH, "TM_MATCH"},
		{IBV_WC_TM_DATA_VALID, "TM_DATA_VALID"},
	};
	size_t off = 0;

	buf[0] = '\0';
	for (unsigned int i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (f & names[i].bit)
			off += (size_t)snprintf(buf + off, len - off, "%s%s", off ? "|" : "",
						names[i].name);
	if (off == 0)
		snprintf(buf, len, "-");
}

/*
 * A FIN the device of a rendezvous' receiver sent (a 16-byte TMH of opcode FIN, in an
 * ordinary receive): the peer has read the data, so the buffer this console offered
 * with that tag and app_ctx on that QP is free again, the oldest such one (FINs come in
 * the order of their headers).
 */
static void fin_account(const struct ibv_tmh *h, uint32_t qp_num, char *note, size_t len)
{
	uint64_t tag = be64toh(h->tag);
	uint32_t ctx = be32toh(h->app_ctx);
	struct tp_buf *found = NULL;

	for (uint32_t i = 1; i <= TP_MAX_OBJS; i++) {
		struct tp_obj *q = &tp.obj[TP_QP][i];

		if (!q->used)
			continue;
		for (struct tp_buf *d = q->u.qp.bufs; d != NULL; d = d->next)
			if (d->rndv && d->busy && d->rndv_qp_num == qp_num && d->rndv_tag == tag &&
			    d->rndv_ctx == ctx && (found == NULL || d->id < found->id))
				found = d;
	}
	if (found == NULL) {
		snprintf(note, len, " (FIN: tag 0x%" PRIx64 ", app_ctx %u)", tag, ctx);
		return;
	}
	found->busy = false;
	found->rndv = false;
	snprintf(note, len, " (FIN: tag 0x%" PRIx64 ", app_ctx %u: the peer read the %u bytes "
		 "offered)", tag, ctx, found->rndv_len);
}

/* What the console learns from a completion it shows: its buffers are free again,
 * an unexpected message joins the SRQ's list, a SYNC request is counted. */
static void wc_account(uint32_t cq_id, const struct tp_wc *wc, char *note, size_t len)
{
	struct tp_buf *b = tp_buf_find(wc->wr_id);
	struct tp_obj *s = NULL;

	note[0] = '\0';
	for (uint32_t i = 1; i <= TP_MAX_OBJS && s == NULL; i++)
		if (tp.obj[TP_SRQ][i].used && tp.obj[TP_SRQ][i].u.srq.tm &&
		    tp.obj[TP_SRQ][i].u.srq.cq_id == cq_id)
			s = &tp.obj[TP_SRQ][i];
	if (b != NULL && b->srq != 0)
		s = &tp.obj[TP_SRQ][b->srq];
	if (s != NULL && (wc->wc_flags & IBV_WC_TM_SYNC_REQ))
		s->u.srq.sync_reqs++;
	if (b == NULL)
		return;
	if (!b->is_tag && wc->status == IBV_WC_SUCCESS &&
	    (wc->opcode == IBV_WC_RECV || wc->opcode == IBV_WC_TM_NO_TAG) &&
	    wc->byte_len == sizeof(struct ibv_tmh) && ((const struct ibv_tmh *)b->addr)->opcode ==
	    IBV_TMH_FIN) {
		b->busy = false;
		fin_account(b->addr, wc->qp_num, note, len);
		return;
	}
	if (b->is_tag) {
		/* The entry ends with its data (or an error); a MATCH alone is not the end. */
		if (wc->opcode == IBV_WC_TM_RECV && (wc->status != IBV_WC_SUCCESS ||
						     (wc->wc_flags & IBV_WC_TM_DATA_VALID)))
			b->busy = false;
		if (wc->opcode == IBV_WC_TM_DEL && wc->status == IBV_WC_SUCCESS)
			b->busy = false;
		snprintf(note, len, " (tag 0x%" PRIx64 "'s entry, handle %u)", b->tag, b->handle);
		return;
	}
	b->busy = false;
	if (s != NULL && wc->opcode == IBV_WC_TM_RECV && wc->status == IBV_WC_SUCCESS &&
	    !(wc->wc_flags & (IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID))) {
		const struct ibv_tmh *h = b->addr;
		struct tp_unexp *u = &s->u.srq.unexp[s->u.srq.n_unexp % TP_UNEXP_MAX];

		*u = (struct tp_unexp){
			.ordinal = s->u.srq.unexp_seen++, .qp_num = wc->qp_num,
			.byte_len = wc->byte_len,
		};
		if (wc->byte_len >= sizeof(*h)) {
			u->tmh_op = h->opcode;
			u->app_ctx = be32toh(h->app_ctx);
			u->tag = be64toh(h->tag);
		}
		s->u.srq.n_unexp++;
		snprintf(note, len, " (unexpected #%u: tag 0x%" PRIx64 ", app_ctx %u, in a receive "
			 "of srq %u)", u->ordinal + 1, u->tag, u->app_ctx,
			 (uint32_t)(s - &tp.obj[TP_SRQ][0]));
	}
}

void tp_wc_print(uint32_t cq_id, const struct tp_wc *wc)
{
	char flags[96], note[160], tm[64] = "";

	wc_account(cq_id, wc, note, sizeof(note));
	flags_str(wc->wc_flags, flags, sizeof(flags));
	if (wc->wc_flags & IBV_WC_TM_MATCH)
		snprintf(tm, sizeof(tm), " tag 0x%" PRIx64 " app_ctx %u", wc->tag, wc->app_ctx);
	else if (wc->wc_flags & IBV_WC_WITH_IMM)
		snprintf(tm, sizeof(tm), " imm 0x%x", wc->imm);
	tp_out("cq %u: wr_id %" PRIu64 " %s %s flags %s byte_len %u qp_num %u%s%s", cq_id,
	       wc->wr_id, opcode_name(wc->opcode), ibv_wc_status_str(wc->status), flags,
	       wc->byte_len, wc->qp_num, tm, note);
}

int tp_cmd_poll(const struct tp_args *a)
{
	static const char *const wv[] = {"max", "wait", NULL};
	uint64_t max, wait, deadline;
	struct tp_wc wc[16];
	uint32_t cq, empty = 0, got = 0;

	if (a->n < 2 || strcmp(a->w[1], "cq") != 0)
		return tp_err("poll", EINVAL, "poll cq <cq> [max <n>] [wait <n>]");
	if (tp_get("poll", TP_CQ, a->n > 2 ? a->w[2] : NULL, &cq) == NULL)
		return -1;
	if (tp_opts_check("poll", a, 3, wv, NULL) != 0 ||
	    tp_opt_u64("poll", a, 3, "max", 1, 1u << 20, 64, &max) != 0 ||
	    tp_opt_u64("poll", a, 3, "wait", 0, max, 0, &wait) != 0)
		return -1;
	/* wait: for completions another process causes, which no command here waited for. */
	deadline = tp_now_ms() + 2 * TP_WAIT_MS;
	while (got < max && (empty < POLL_EMPTY_ROUNDS || got < wait)) {
		uint32_t want = max - got < 16 ? (uint32_t)(max - got) : 16;
		int k = tp_cq_take(cq, wc, (int)want);

		if (k <= 0) {
			empty++;
			tp_progress();
			if (got < wait && tp_now_ms() > deadline)
				return tp_err("poll", ETIMEDOUT, "cq %u: %u of %" PRIu64 " completions "
					      "in %u ms", cq, got, wait, 2 * TP_WAIT_MS);
			continue;
		}
		empty = 0;
		for (int i = 0; i < k; i++)
			tp_wc_print(cq, &wc[i]);
		got += (uint32_t)k;
	}
	if (got == 0)
		tp_out("cq %u: no completion", cq);
	return 0;
}

/* ---- receives ---- */

/*
 * A buffer of @p len bytes for a receive (@p is_tag false) or a tag entry: one whose
 * last use has ended (its completion polled) if the list has one, else a new one; first
 * in @p list either way. Reusing them keeps a long session's registrations to what is
 * posted at once.
 */
static struct tp_buf *buf_get(struct ibv_pd *pd, uint32_t len, struct tp_buf **list, bool is_tag)
{
	for (struct tp_buf **pp = list; *pp != NULL; pp = &(*pp)->next) {
		struct tp_buf *b = *pp;

		if (b->busy || b->len != len || b->is_tag != is_tag || b->tag == UINT64_MAX)
			continue;
		*pp = b->next;
		b->next = *list;
		*list = b;
		tp_buf_renew(b);
		return b;
	}
	return tp_buf_new(pd, len, list);
}

int tp_cmd_post(const struct tp_args *a)
{
	const char *cmd = "post";
	bool srq_mode = a->n > 1 && strcmp(a->w[1], "srq_recv") == 0;
	struct tp_buf **list;
	struct tp_obj *o;
	uint64_t count, size;
	struct ibv_pd *pd;
	uint32_t id;

	if (a->n < 2 || (!srq_mode && strcmp(a->w[1], "recv") != 0))
		return tp_err(cmd, EINVAL, "post srq_recv <srq> <count> <size> | post recv <qp> "
			      "<count> <size>");
	o = tp_get(cmd, srq_mode ? TP_SRQ : TP_QP, a->n > 2 ? a->w[2] : NULL, &id);
	if (o == NULL)
		return -1;
	if (a->n != 5)
		return tp_err(cmd, EINVAL, "needs <count> and <size>: post %s %s 8 4096", a->w[1],
			      a->w[2]);
	if (tp_num(cmd, "count", a->w[3], 1, 1u << 20, &count) != 0 ||
	    tp_num(cmd, "size", a->w[4], 0, TP_MAX_BUF, &size) != 0)
		return -1;
	if (count * size > TP_MAX_POST)
		return tp_err(cmd, ENOMEM, "%" PRIu64 " x %" PRIu64 " bytes: at most %u MiB a post",
			      count, size, TP_MAX_POST >> 20);
	if (!srq_mode && o->u.qp.srq_id != 0)
		return tp_err(cmd, EINVAL, "qp %u takes its receives from srq %u: post srq_recv %u",
			      id, o->u.qp.srq_id, o->u.qp.srq_id);
	pd = tp.obj[TP_PD][o->pd_id].u.pd;
	list = srq_mode ? &o->u.srq.bufs : &o->u.qp.bufs;
	for (uint64_t i = 0; i < count; i++) {
		struct tp_buf *b = buf_get(pd, (uint32_t)size, list, false);
		struct ibv_recv_wr wr = {0}, *bad;
		struct ibv_sge sge;
		int ret;

		if (b == NULL)
			return tp_err(cmd, ENOMEM, "no memory for buffer %" PRIu64 " (%" PRIu64
				      " posted)", i + 1, i);
		b->srq = srq_mode ? id : 0;
		sge = (struct ibv_sge){(uintptr_t)b->addr, (uint32_t)size, b->mr->lkey};
		wr.wr_id = b->id;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		ret = srq_mode ? ibv_post_srq_recv(o->u.srq.srq, &wr, &bad) :
				 ibv_post_recv(o->u.qp.qp, &wr, &bad);
		if (ret != 0) {
			*list = b->next;
			b->next = NULL;
			tp_bufs_free(&b);
			if (ret == ENOMEM)
				return tp_err(cmd, ENOMEM, "%s %u is full after %" PRIu64 " (it holds "
					      "%u): poll some completions first", srq_mode ? "srq" : "qp",
					      id, i, srq_mode ? o->u.srq.max_wr : o->u.qp.max_recv_wr);
			return tp_err(cmd, ret, "%s %u refused receive %" PRIu64, srq_mode ? "srq" :
				      "qp", id, i + 1);
		}
		b->busy = true;
	}
	tp_out("posted %" PRIu64 " receives of %" PRIu64 " bytes on %s %u", count, size,
	       srq_mode ? "srq" : "qp", id);
	return 0;
}

/* ---- tag ops ---- */

/* Wait until the device has executed every op posted on @p s. */
static int ops_drain(struct tp_obj *s)
{
	uint64_t deadline = tp_now_ms() + TP_WAIT_MS;
	struct dpv_verbs_tm_state st;

	do {
		if (dpv_verbs_tm_query(s->u.srq.srq, &st) != 0)
			return EINVAL;
		if (st.ops_outstanding == 0)
			return 0;
		tp_progress();
	} while (tp_now_ms() < deadline);
	return ETIMEDOUT;
}

static int tm_post(const char *cmd, uint32_t id, struct tp_obj *s, struct ibv_ops_wr *op)
{
	struct dpv_verbs_tm_state st;
	struct ibv_ops_wr *bad = NULL;
	int ret = ibv_post_srq_ops(s->u.srq.srq, op, &bad);

	if (ret == EINVAL && !s->u.srq.tm)
		return tp_err(cmd, EINVAL, "srq %u is a basic SRQ: tag ops need a tag-matching one "
			      "(create srq <pd> tm <cq>)", id);
	if (ret == EINVAL && op->opcode == IBV_WR_TAG_DEL)
		return tp_err(cmd, EINVAL, "handle %u of srq %u is not allocated (show tags %u "
			      "lists the entries)", op->tm.handle, id, id);
	if (ret == ENOMEM && dpv_verbs_tm_query(s->u.srq.srq, &st) == 0 &&
	    st.allocated == st.max_num_tags)
		return tp_err(cmd, ENOMEM, "the tag list of srq %u is full (max_num_tags %u): "
			      "tag del an entry, or poll the completions of consumed ones", id,
			      st.max_num_tags);
	if (ret == ENOMEM)
		return tp_err(cmd, ENOMEM, "srq %u has max_ops ops outstanding: poll its cq", id);
	if (ret != 0)
		return tp_err(cmd, ret, "srq %u refused the op", id);
	ret = ops_drain(s);
	if (ret != 0) {
		tp_err(cmd, ret, "posted, but the device did not execute it within %u ms",
		       TP_WAIT_MS);
		return 1;
	}
	return 0;
}

static int tag_add(const struct tp_args *a, uint32_t id, struct tp_obj *s)
{
	static const char *const wv[] = {"mask", "size", "sync", NULL}, *const fl[] = {"signaled",
										    NULL};
	const char *cmd = "tag add";
	uint64_t tag, mask, size, sync;
	struct ibv_ops_wr op;
	struct ibv_sge sge;
	struct tp_buf *b;
	int ret;

	if (a->n < 4)
		return tp_err(cmd, EINVAL, "needs a tag: tag add %u 0x10", id);
	if (tp_num(cmd, "tag", a->w[3], 0, UINT64_MAX, &tag) != 0 ||
	    tp_opts_check(cmd, a, 4, wv, fl) != 0 ||
	    tp_opt_u64(cmd, a, 4, "mask", 0, UINT64_MAX, UINT64_MAX, &mask) != 0 ||
	    tp_opt_u64(cmd, a, 4, "size", 0, TP_MAX_BUF, 4096, &size) != 0 ||
	    tp_opt_u64(cmd, a, 4, "sync", 0, UINT32_MAX, 0, &sync) != 0)
		return -1;
	b = buf_get(tp.obj[TP_PD][s->pd_id].u.pd, (uint32_t)size, &s->u.srq.bufs, true);
	if (b == NULL)
		return tp_err(cmd, ENOMEM, "no memory for a buffer of %" PRIu64 " bytes", size);
	b->is_tag = true;
	b->tag = tag;
	memset(&op, 0, sizeof(op));
	sge = (struct ibv_sge){(uintptr_t)b->addr, (uint32_t)size, b->mr->lkey};
	op.wr_id = b->id;
	op.opcode = IBV_WR_TAG_ADD;
	op.flags = tp_opt_flag(a, 4, "signaled") ? IBV_OPS_SIGNALED : 0;
	if (tp_opt_flag(a, 4, "sync")) {
		op.flags |= IBV_OPS_TM_SYNC;
		op.tm.unexpected_cnt = (uint32_t)sync;
	}
	op.tm.add.recv_wr_id = b->id;
	op.tm.add.sg_list = &sge;
	op.tm.add.num_sge = 1;
	op.tm.add.tag = tag;
	op.tm.add.mask = mask;
	ret = tm_post(cmd, id, s, &op);
	if (ret < 0) {
		/* Refused at post: the entry never existed, nor will the device write it. */
		s->u.srq.bufs = b->next;
		b->next = NULL;
		tp_bufs_free(&b);
		return -1;
	}
	if (op.flags & IBV_OPS_TM_SYNC)
		s->u.srq.sw_count = (uint32_t)sync;
	b->handle = op.tm.handle;
	b->busy = true;
	if (ret != 0)
		return -1;
	tp_out("srq %u: tag 0x%" PRIx64 " mask 0x%" PRIx64 " added, handle %u, %" PRIu64
	       "-byte buffer, wr_id %" PRIu64, id, tag, mask, op.tm.handle, size, b->id);
	return 0;
}

int tp_cmd_tag(const struct tp_args *a)
{
	static const char *const fl[] = {"signaled", NULL};
	const char *cmd = a->n > 1 && strcmp(a->w[1], "add") == 0 ? "tag add" :
			  a->n > 1 && strcmp(a->w[1], "del") == 0 ? "tag del" :
			  a->n > 1 && strcmp(a->w[1], "sync") == 0 ? "tag sync" : NULL;
	struct ibv_ops_wr op;
	struct tp_obj *s;
	uint64_t v;
	uint32_t id;

	if (cmd == NULL)
		return tp_err("tag", EINVAL, "tag add|del|sync <srq> ... (help tm)");
	if ((s = tp_get(cmd, TP_SRQ, a->n > 2 ? a->w[2] : NULL, &id)) == NULL)
		return -1;
	if (strcmp(a->w[1], "add") == 0)
		return tag_add(a, id, s);
	if (a->n < 4)
		return tp_err(cmd, EINVAL, "needs a %s: %s %u 0", a->w[1][0] == 'd' ? "handle" :
			      "count", cmd, id);
	memset(&op, 0, sizeof(op));
	if (a->w[1][0] == 'd') {
		if (tp_num(cmd, "handle", a->w[3], 0, UINT32_MAX, &v) != 0 ||
		    tp_opts_check(cmd, a, 4, NULL, fl) != 0)
			return -1;
		op.opcode = IBV_WR_TAG_DEL;
		op.tm.handle = (uint32_t)v;
		op.flags = tp_opt_flag(a, 4, "signaled") ? IBV_OPS_SIGNALED : 0;
		for (struct tp_buf *b = s->u.srq.bufs; b != NULL; b = b->next)
			if (b->is_tag && b->busy && b->handle == v)
				op.wr_id = b->id;
		if (tm_post(cmd, id, s, &op) != 0)
			return -1;
		tp_out("srq %u: DEL of handle %" PRIu64 " executed; %s", id, v,
		       op.flags ? "its completion says whether the entry was still listed" :
		       "a TM_ERR completion follows if a message had taken the entry");
		return 0;
	}
	if (tp_num(cmd, "count", a->w[3], 0, UINT32_MAX, &v) != 0 ||
	    tp_opts_check(cmd, a, 4, NULL, NULL) != 0)
		return -1;
	op.opcode = IBV_WR_TAG_SYNC;
	op.wr_id = tp_next_id();
	op.flags = IBV_OPS_SIGNALED | IBV_OPS_TM_SYNC;
	op.tm.unexpected_cnt = (uint32_t)v;
	if (tm_post(cmd, id, s, &op) != 0)
		return -1;
	s->u.srq.sw_count = (uint32_t)v;
	tp_out("srq %u: synced, S = %" PRIu64, id, v);
	return 0;
}

/* ---- sends ---- */

/* The QP's send buffer, at least @p len bytes. */
static struct tp_buf *send_buf(struct tp_obj *q, uint32_t len)
{
	for (struct tp_buf *b = q->u.qp.bufs; b != NULL; b = b->next)
		if (!b->busy && b->srq == 0 && b->len >= len && b->tag == UINT64_MAX)
			return b;
	{
		struct tp_buf *b = tp_buf_new(tp.obj[TP_PD][q->pd_id].u.pd, len < 4096 ? 4096 : len,
					     &q->u.qp.bufs);

		if (b != NULL)
			b->tag = UINT64_MAX; /* marks a send buffer */
		return b;
	}
}

static int post_and_wait(const char *cmd, uint32_t id, struct tp_obj *q, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;
	struct tp_wc wc;
	int ret;

	if (q->u.qp.type == IBV_QPT_UD) {
		if (q->u.qp.ah == NULL)
			return tp_err(cmd, ENOTCONN, "UD qp %u has no destination: connect %u <qp>",
				      id, id);
		wr->wr.ud.ah = q->u.qp.ah;
		wr->wr.ud.remote_qpn = q->u.qp.remote_qpn;
		wr->wr.ud.remote_qkey = 0x11111111;
	}
	wr->wr_id = tp_next_id();
	wr->send_flags |= IBV_SEND_SIGNALED;
	ret = ibv_post_send(q->u.qp.qp, wr, &bad);
	if (ret == ENOMEM)
		return tp_err(cmd, ENOMEM, "the send queue of qp %u is full (send %u): poll cq %u",
			      id, q->u.qp.max_send_wr, q->u.qp.send_cq);
	if (ret != 0)
		return tp_err(cmd, ret, "qp %u refused the WR", id);
	ret = wait_wc(q->u.qp.send_cq, wr->wr_id, &wc);
	if (ret != 0)
		return tp_err(cmd, ret, "no completion in %u ms (does the receiver have a receive "
			      "posted? its completion will show in poll cq %u)", TP_WAIT_MS,
			      q->u.qp.send_cq);
	if (wc.status != IBV_WC_SUCCESS) {
		tp_wc_print(q->u.qp.send_cq, &wc);
		return tp_err(cmd, EIO, "completed with %s; qp %u is now %s",
			      ibv_wc_status_str(wc.status), id, tp_qp_state_name(q->u.qp.qp));
	}
	return 0;
}

/* A QP that can send: it exists, is connected, is in RTS. */
static struct tp_obj *sender(const char *cmd, const char *w, uint32_t *id)
{
	struct tp_obj *q = tp_get(cmd, TP_QP, w, id);
	enum ibv_qp_state st;

	if (q == NULL)
		return NULL;
	st = tp_qp_state(q->u.qp.qp);
	if (st != IBV_QPS_RTS) {
		tp_err(cmd, EINVAL, "qp %u is in state %s, not RTS: connect it first%s", *id,
		       tp_qp_state_name(q->u.qp.qp), st == IBV_QPS_ERR ?
		       " (an error ended it: destroy and create it again)" : "");
		return NULL;
	}
	if (q->u.qp.max_send_wr == 0) {
		tp_err(cmd, EINVAL, "qp %u has no send queue (send 0)", *id);
		return NULL;
	}
	return q;
}

/* Whether @p q has a receive posted (its RQ or its SRQ) that a FIN can land in. */
static bool has_receive(const struct tp_obj *q)
{
	const struct tp_buf *b = q->u.qp.srq_id != 0 ? tp.obj[TP_SRQ][q->u.qp.srq_id].u.srq.bufs :
				 q->u.qp.bufs;

	for (; b != NULL; b = b->next)
		if (b->busy && !b->is_tag && b->tag != UINT64_MAX)
			return true;
	return false;
}

int tp_cmd_send(const struct tp_args *a)
{
	static const char *const wv[] = {"size", "count", "tag", "imm", NULL};
	static const char *const fl[] = {"eager", "rndv", "notag", NULL};
	const char *cmd = "send";
	uint64_t size, count, tag = 0, imm = 0;
	bool tagged, with_imm, rndv, notag;
	uint8_t tmh_op = IBV_TMH_EAGER;
	struct tp_obj *q;
	uint32_t id;

	if ((q = sender(cmd, a->n > 1 ? a->w[1] : NULL, &id)) == NULL)
		return -1;
	if (tp_opts_check(cmd, a, 2, wv, fl) != 0 ||
	    tp_opt_u64(cmd, a, 2, "size", 0, TP_MAX_BUF, 64, &size) != 0 ||
	    tp_opt_u64(cmd, a, 2, "count", 1, 1u << 20, 1, &count) != 0 ||
	    tp_opt_u64(cmd, a, 2, "imm", 0, UINT32_MAX, 0, &imm) != 0)
		return -1;
	tagged = tp_opt_flag(a, 2, "tag");
	with_imm = tp_opt_flag(a, 2, "imm");
	rndv = tp_opt_flag(a, 2, "rndv");
	notag = tp_opt_flag(a, 2, "notag");
	if (tagged && tp_opt_u64(cmd, a, 2, "tag", 0, UINT64_MAX, 0, &tag) != 0)
		return -1;
	if ((rndv || notag || tp_opt_flag(a, 2, "eager")) && !tagged)
		return tp_err(cmd, EINVAL, "eager, rndv and notag go with tag <t>: send %u tag 0x10 "
			      "eager", id);
	if (rndv + notag + tp_opt_flag(a, 2, "eager") > 1)
		return tp_err(cmd, EINVAL, "one of eager, rndv, notag");
	if (rndv)
		tmh_op = IBV_TMH_RNDV;
	else if (notag)
		tmh_op = IBV_TMH_NO_TAG;
	for (uint64_t i = 0; i < count; i++) {
		struct ibv_send_wr wr = {0};
		struct ibv_sge sge;
		uint32_t len = (uint32_t)size;
		struct tp_buf *b, *data = NULL;
		uint8_t *p;

		if (tagged)
			len = rndv ? (uint32_t)(sizeof(struct ibv_tmh) + sizeof(struct ibv_rvh)) :
				     (uint32_t)(sizeof(struct ibv_tmh) + size);
		b = send_buf(q, len);
		if (b == NULL)
			return tp_err(cmd, ENOMEM, "no memory for a %u-byte send buffer", len);
		p = b->addr;
		if (tagged) {
			struct ibv_tmh *h = (struct ibv_tmh *)p;

			memset(h, 0, sizeof(*h));
			h->opcode = tmh_op;
			h->app_ctx = htobe32((uint32_t)(i + 1));
			h->tag = htobe64(tag);
			p += sizeof(*h);
		}
		if (rndv) {
			/* The data the receiver would read: a registered buffer of its own. */
			struct ibv_rvh *r = (struct ibv_rvh *)p;

			b->busy = true;
			data = send_buf(q, (uint32_t)size);
			b->busy = false;
			if (data == NULL)
				return tp_err(cmd, ENOMEM, "no memory for %" PRIu64 " bytes", size);
			for (uint64_t k = 0; k < size; k++)
				((uint8_t *)data->addr)[k] = (uint8_t)(k + i);
			/* The receiver's device reads it after the header's ACK: it stays
			 * this offer's until the FIN (wc_account()). */
			data->busy = data->rndv = true;
			data->rndv_tag = tag;
			data->rndv_ctx = (uint32_t)(i + 1);
			data->rndv_len = (uint32_t)size;
			data->rndv_qp_num = q->u.qp.qp->qp_num;
			r->va = htobe64((uintptr_t)data->addr);
			r->rkey = htobe32(data->mr->rkey);
			r->len = htobe32((uint32_t)size);
		} else {
			for (uint64_t k = 0; k < size; k++)
				p[k] = (uint8_t)(k + i);
		}
		sge = (struct ibv_sge){(uintptr_t)b->addr, len, b->mr->lkey};
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = with_imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND;
		wr.imm_data = htobe32((uint32_t)imm);
		if (post_and_wait(cmd, id, q, &wr) != 0) {
			if (data != NULL)
				data->busy = data->rndv = false;
			return -1;
		}
	}
	if (rndv)
		tp_out("qp %u: sent %" PRIu64 " rendezvous header%s (TMH + RVH), tag 0x%" PRIx64
		       ", %" PRIu64 " bytes offered: the receiver's device reads them and answers "
		       "with a FIN, a receive of qp %u%s", id, count, count == 1 ? "" : "s", tag,
		       size, id, has_receive(q) ? "" : " (none is posted: post one, until then "
		       "the FIN is RNR NAKed)");
	else if (tagged)
		tp_out("qp %u: sent %" PRIu64 " %s message%s, tag 0x%" PRIx64 ", %" PRIu64
		       " bytes after the TMH", id, count, notag ? "no-tag" : "eager",
		       count == 1 ? "" : "s", tag, size);
	else
		tp_out("qp %u: sent %" PRIu64 " message%s of %" PRIu64 " bytes", id, count,
		       count == 1 ? "" : "s", size);
	return 0;
}

/* A remote buffer: an MR id of this console, or addr:rkey from the peer's console. */
static int remote_of(const char *cmd, const char *w, uint64_t *addr, uint32_t *rkey,
		     uint64_t *len)
{
	const char *colon = w != NULL ? strchr(w, ':') : NULL;
	uint64_t v;

	if (colon != NULL) {
		char a_str[TP_WORD_MAX];

		snprintf(a_str, sizeof(a_str), "%.*s", (int)(colon - w), w);
		if (tp_num(cmd, "remote address", a_str, 0, UINT64_MAX, addr) != 0 ||
		    tp_num(cmd, "rkey", colon + 1, 0, UINT32_MAX, &v) != 0)
			return -1;
		*rkey = (uint32_t)v;
		*len = UINT64_MAX;
		return 0;
	}
	{
		struct tp_obj *m = tp_get(cmd, TP_MR, w, NULL);

		if (m == NULL)
			return -1;
		*addr = (uintptr_t)m->u.mr.mr->addr;
		*rkey = m->u.mr.mr->rkey;
		*len = m->u.mr.mr->length;
	}
	return 0;
}

int tp_cmd_rdma(const struct tp_args *a)
{
	static const char *const wv_w[] = {"size", "imm", NULL}, *const wv_r[] = {"size", NULL};
	bool is_write = strcmp(a->w[0], "write") == 0;
	const char *cmd = a->w[0];
	uint64_t raddr, rlen, size, imm;
	struct ibv_send_wr wr = {0};
	struct tp_obj *q, *m;
	struct ibv_sge sge;
	uint32_t id, mid, rkey;

	if ((q = sender(cmd, a->n > 1 ? a->w[1] : NULL, &id)) == NULL)
		return -1;
	if ((m = tp_get(cmd, TP_MR, a->n > 2 ? a->w[2] : NULL, &mid)) == NULL)
		return -1;
	if (a->n < 4)
		return tp_err(cmd, EINVAL, "needs the remote buffer: an mr id or <addr>:<rkey>");
	if (remote_of(cmd, a->w[3], &raddr, &rkey, &rlen) != 0 ||
	    tp_opts_check(cmd, a, 4, is_write ? wv_w : wv_r, NULL) != 0 ||
	    tp_opt_u64(cmd, a, 4, "size", 0, m->u.mr.mr->length, m->u.mr.mr->length < rlen ?
		       m->u.mr.mr->length : rlen, &size) != 0 ||
	    tp_opt_u64(cmd, a, 4, "imm", 0, UINT32_MAX, 0, &imm) != 0)
		return -1;
	if (m->dev != q->dev)
		return tp_err(cmd, EINVAL, "mr %u is on %s, qp %u on %s: use an MR of the QP's "
			      "device", mid, tp.dev[m->dev].name, id, tp.dev[q->dev].name);
	if (m->pd_id != q->pd_id)
		return tp_err(cmd, EINVAL, "mr %u is on pd %u, qp %u on pd %u", mid, m->pd_id, id,
			      q->pd_id);
	sge = (struct ibv_sge){(uintptr_t)m->u.mr.mr->addr, (uint32_t)size, m->u.mr.mr->lkey};
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = !is_write ? IBV_WR_RDMA_READ :
		    tp_opt_flag(a, 4, "imm") ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE;
	wr.imm_data = htobe32((uint32_t)imm);
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	if (post_and_wait(cmd, id, q, &wr) != 0)
		return -1;
	tp_out("qp %u: %s %" PRIu64 " bytes %s 0x%" PRIx64 " (rkey 0x%x) %s mr %u", id,
	       is_write ? "wrote" : "read", size, is_write ? "to" : "from", raddr, rkey,
	       is_write ? "from" : "into", mid);
	return 0;
}

/* ---- TM SRQ views ---- */

static struct tp_obj *tm_srq(const char *cmd, const struct tp_args *a, uint32_t *id)
{
	struct tp_obj *s = tp_get(cmd, TP_SRQ, a->n > 2 ? a->w[2] : NULL, id);

	if (s == NULL)
		return NULL;
	if (!s->u.srq.tm) {
		tp_err(cmd, EINVAL, "srq %u is a basic SRQ: it has no tag list", *id);
		return NULL;
	}
	return s;
}

int tp_show_tags(const char *cmd, const struct tp_args *a)
{
	struct dpv_verbs_tm_tag tags[64];
	struct dpv_verbs_tm_state st;
	struct tp_obj *s;
	uint32_t id, from = 0;
	int n, ret;

	if ((s = tm_srq(cmd, a, &id)) == NULL)
		return -1;
	ret = dpv_verbs_tm_query(s->u.srq.srq, &st);
	if (ret != 0)
		return tp_err(cmd, ret, "srq %u could not be read", id);
	tp_out("srq %u: %u listed of %u, U %u, S %u", id, st.listed, st.max_num_tags,
	       st.unexpected, st.synced);
	if (st.listed == 0)
		return 0;
	tp_out("  %-6s %-18s %-18s %-8s %-10s %-5s %s", "handle", "tag", "mask", "eligible",
	       "phase", "order", "buffer");
	while ((n = dpv_verbs_tm_tags(s->u.srq.srq, from, tags, 64)) > 0) {
		for (int i = 0; i < n; i++) {
			char phase[24];

			snprintf(phase, sizeof(phase), "need S>=%u", tags[i].need);
			tp_out("  %-6u 0x%-16" PRIx64 " 0x%-16" PRIx64 " %-8s %-10s %-5" PRIu64
			       " %u bytes at 0x%" PRIx64, tags[i].handle, tags[i].tag, tags[i].mask,
			       tags[i].eligible ? "yes" : "no", phase, tags[i].seq,
			       (uint32_t)tags[i].total_length, tags[i].addr);
		}
		if (n < 64)
			break;
		from = tags[n - 1].handle + 1;
	}
	if (n < 0)
		return tp_err(cmd, -n, "srq %u could not be read", id);
	return 0;
}

int tp_show_unexpected(const char *cmd, const struct tp_args *a)
{
	struct tp_obj *s;
	uint32_t id, first, shown = 0;

	if ((s = tm_srq(cmd, a, &id)) == NULL)
		return -1;
	tp_out("srq %u: %u unexpected message%s polled, %u reported processed (S)", id,
	       s->u.srq.unexp_seen, s->u.srq.unexp_seen == 1 ? "" : "s", s->u.srq.sw_count);
	first = s->u.srq.n_unexp > TP_UNEXP_MAX ? s->u.srq.n_unexp - TP_UNEXP_MAX : 0;
	for (uint32_t i = first; i < s->u.srq.n_unexp; i++) {
		const struct tp_unexp *u = &s->u.srq.unexp[i % TP_UNEXP_MAX];
		bool pending = (int32_t)(u->ordinal - s->u.srq.sw_count) >= 0;

		if (!pending)
			continue;
		tp_out("  #%u: qp_num %u, %u bytes, TMH %s, tag 0x%" PRIx64 ", app_ctx %u",
		       u->ordinal + 1, u->qp_num, u->byte_len,
		       u->tmh_op == IBV_TMH_EAGER ? "EAGER" : u->tmh_op == IBV_TMH_RNDV ? "RNDV" :
		       "other", u->tag, u->app_ctx);
		shown++;
	}
	if (shown == 0)
		tp_out("  (none waiting for a SYNC)");
	else
		tp_out("  tag sync %u %u reports them processed", id, s->u.srq.unexp_seen);
	return 0;
}

int tp_show_phase(const char *cmd, const struct tp_args *a)
{
	struct dpv_verbs_tm_state st;
	struct tp_obj *s;
	uint32_t id;
	int ret;

	if ((s = tm_srq(cmd, a, &id)) == NULL)
		return -1;
	ret = dpv_verbs_tm_query(s->u.srq.srq, &st);
	if (ret != 0)
		return tp_err(cmd, ret, "srq %u could not be read", id);
	tp_out("srq %u: U %u (unexpected so far), S %u (reported processed), U - S %d%s", id,
	       st.unexpected, st.synced, (int32_t)(st.unexpected - st.synced),
	       st.unexpected != st.synced ? ": new ADDs wait for a SYNC" : ": in phase");
	tp_out("  sync requests outstanding: %d (completions with TM_SYNC_REQ polled: %u)",
	       (int32_t)(st.unexpected - st.synced), s->u.srq.sync_reqs);
	tp_out("  tag list: %u listed, %u allocated of %u; ops: %u outstanding of %u", st.listed,
	       st.allocated, st.max_num_tags, st.ops_outstanding, st.max_ops);
	return 0;
}
