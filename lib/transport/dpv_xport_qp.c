/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Queue pairs: creation, QP numbers, the state machine of IBTA 10.3.1 with the
 * attributes ibv_modify_qp(3) requires and allows per transition, and the flushes
 * of the Error state (IBTA 10.3.1.x "Error": every outstanding and newly posted WQE
 * completes with a flush error).
 */
#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include <rte_ether.h>
#include <rte_malloc.h>
#include <rte_random.h>

#include "dpv_xport_priv.h"

#define QP_ALL_MASKS (DPV_QP_STATE | DPV_QP_ACCESS_FLAGS | DPV_QP_PKEY_INDEX | DPV_QP_PORT | \
		      DPV_QP_QKEY | DPV_QP_AV | DPV_QP_PATH_MTU | DPV_QP_TIMEOUT |          \
		      DPV_QP_RETRY_CNT | DPV_QP_RNR_RETRY | DPV_QP_RQ_PSN |                 \
		      DPV_QP_MAX_QP_RD_ATOMIC | DPV_QP_MIN_RNR_TIMER | DPV_QP_SQ_PSN |      \
		      DPV_QP_MAX_DEST_RD_ATOMIC | DPV_QP_DEST_QPN)

#define ACCESS_ALL (DPV_ACCESS_LOCAL_WRITE | DPV_ACCESS_REMOTE_WRITE | \
		    DPV_ACCESS_REMOTE_READ | DPV_ACCESS_REMOTE_ATOMIC)

static struct dpv_ring *qp_ring(int socket, uint32_t wr, uint32_t slot_size)
{
	uint32_t count = xp_pow2_at_least(wr);
	void *mem = xp_ring_alloc(socket, count, slot_size, 1);

	return mem != NULL ? dpv_ring_init(mem, count, slot_size) : NULL;
}

_Static_assert(DPV_MAX_QP == 1u << 12, "qpn_permute() is a 12-bit permutation");

/* A permutation of 0 .. DPV_MAX_QP-1 keyed by @p key: four Feistel rounds over two 6-bit
 * halves. Any round function makes a Feistel network a bijection. */
static uint32_t qpn_permute(uint32_t key, uint32_t c)
{
	uint32_t l = c >> 6, r = c & 63u;

	for (int i = 0; i < 4; i++) {
		uint32_t k = key >> (6 * i) & 63u;
		uint32_t f = ((r ^ k) * 37u + (r >> 3) + k) & 63u;
		uint32_t t = r;

		r = l ^ f;
		l = t;
	}
	return l << 6 | r;
}

/*
 * QP numbers come in the order of a random permutation of the QP number space (its key
 * drawn with getrandom(2) at the device's first QP), so a peer cannot guess the number
 * of the next QP from the last. next_qpn counts through the permutation: the whole
 * space goes round before a number is reused, so a late packet for a destroyed QP is
 * unlikely to find a new one. Numbers 0 and 1 are skipped.
 */
static int qpn_alloc(struct dpv_xport *x, uint32_t *qpn)
{
	uint32_t k, c, n;

	if (x->qpn_key == 0) {
		uint32_t key = 0;

		if (getrandom(&key, sizeof(key), 0) != sizeof(key))
			key = (uint32_t)rte_rand();
		x->qpn_key = key | 1u << 31; /* nonzero: drawn */
	}
	for (k = 0; k < DPV_MAX_QP; k++) {
		c = (x->next_qpn + k) % DPV_MAX_QP;
		n = qpn_permute(x->qpn_key, c);
		if (n >= 2 && x->qps[n] == NULL) {
			*qpn = n;
			x->next_qpn = (c + 1) % DPV_MAX_QP;
			return 0;
		}
	}
	return ENOSPC;
}

static void qp_free(struct xp_qp *q)
{
	if (q->xq != q->qp.sq)
		rte_free(q->xq);
	rte_free(q->qp.sq);
	rte_free(q->qp.rq);
	rte_free(q->meta);
	rte_free(q);
}

int dpv_qp_create(struct dpv_xport *x, const struct dpv_qp_init *init, struct dpv_qp **out)
{
	const int socket = x->port->socket;
	struct xp_qp *q;
	uint32_t qpn;

	const bool tgt = init->xrc == DPV_XRC_TGT;

	if ((init->type != DPV_QPT_RC && init->type != DPV_QPT_UC && init->type != DPV_QPT_UD) ||
	    init->max_send_wr > DPV_MAX_QP_WR || init->max_recv_wr > DPV_MAX_QP_WR ||
	    init->max_send_sge > DPV_MAX_SGE || init->max_recv_sge > DPV_MAX_SGE ||
	    init->max_inline > DPV_MAX_INLINE || (!tgt && init->send_cq == NULL) ||
	    (!tgt && init->recv_cq == NULL) ||
	    (init->srq != NULL && init->srq->tm != NULL && init->type != DPV_QPT_RC) ||
	    init->xrc > DPV_XRC_TGT ||
	    (init->xrc != DPV_XRC_NONE && (init->type != DPV_QPT_RC || init->srq != NULL)) ||
	    (tgt && (init->xrcd == 0 || init->max_send_wr != 0)))
		return EINVAL;
	if (qpn_alloc(x, &qpn) != 0)
		return ENOSPC;
	q = rte_zmalloc_socket("dpv_qp", sizeof(*q), DPV_CACHE_LINE, socket);
	if (q == NULL)
		return ENOMEM;
	q->qp.qpn = qpn;
	q->qp.db_word = &x->db[qpn / 64];
	q->qp.db_summary = &x->db_summary;
	q->timed_idx = XP_TIMED_NONE;
	q->quiet_idx = XP_TIMED_NONE;
	q->qp.init = *init;
	q->qp.attr.state = DPV_QPS_RESET;
	q->qp.xport_state = q;
	xp_qp_set_mtu(q, xp_active_mtu(x->port));
	q->op_base = init->xrc != DPV_XRC_NONE ? DPV_WIRE_OP_XRC
		     : init->type == DPV_QPT_UC ? DPV_WIRE_OP_UC
		     : init->type == DPV_QPT_UD ? DPV_WIRE_OP_UD : DPV_WIRE_OP_RC;
	if (init->max_send_wr > 0) {
		q->qp.sq = qp_ring(socket, init->max_send_wr, sizeof(struct dpv_swqe));
		if (q->qp.sq == NULL)
			goto nomem;
	}
	q->xq = q->qp.sq;
	/* doc/guides/rendezvous.md: on a TM SRQ the device sends READs and FINs of its
	 * own, also when the application sends nothing. */
	if (init->srq != NULL && init->srq->tm != NULL) {
		q->xq = qp_ring(socket, (q->qp.sq != NULL ? dpv_ring_count(q->qp.sq) : 0) +
					XP_RNDV_MAX, sizeof(struct dpv_swqe));
		if (q->xq == NULL)
			goto nomem;
	}
	if (q->xq != NULL) {
		q->meta = rte_zmalloc_socket("dpv_sq_meta", sizeof(*q->meta) *
					     dpv_ring_count(q->xq), DPV_CACHE_LINE, socket);
		if (q->meta == NULL)
			goto nomem;
	}
	/* A QP without an SRQ always has an RQ ring, so lib/verbs never meets a NULL one;
	 * with max_recv_wr 0 it holds nothing that lib/verbs lets through. An XRC QP has
	 * none: an initiator receives nothing, a target into the SRQ of each request. */
	if (init->srq == NULL && init->xrc == DPV_XRC_NONE) {
		q->qp.rq = qp_ring(socket, init->max_recv_wr ? init->max_recv_wr : 1,
				   sizeof(struct dpv_rwqe));
		if (q->qp.rq == NULL)
			goto nomem;
	}
	x->qps[qpn] = q;
	q->live_idx = x->nlive;
	x->live[x->nlive++] = q;
	*out = &q->qp;
	return 0;
nomem:
	qp_free(q);
	return ENOMEM;
}

/* No timer runs for a QP that stops being a requester. */
static void timers_end(struct dpv_xport *x, struct xp_qp *q)
{
	q->rnr_wait = false;
	q->rd_gap = false;
	q->rd_reask = false;
	xp_timer_stop(x, q);
}

static void ring_drop_all(struct dpv_ring *r)
{
	uint32_t first;

	if (r != NULL)
		dpv_ring_release(r, dpv_ring_peek(r, dpv_ring_count(r), &first));
}

/* Requester state back to "nothing sent", from the SQ's current head. */
static void req_restart(struct xp_qp *q)
{
	uint32_t head = q->xq != NULL ? q->xq->cons_head : 0;

	q->next_wqe = head;
	q->wqe_hi = head;
	q->next_off = 0;
	q->reads_out = 0;
	q->blocked_err = 0;
	q->since_ackreq = 0;
	q->cwnd = q->ssthresh = XP_WINDOW;
	q->cwnd_acc = 0;
	memset(q->rd_ahead, 0, sizeof(q->rd_ahead));
	q->rd_hi = psn_add(q->psn, DPV_WIRE_PSN_MASK);
}

/* IBTA 10.3.1: Reset empties the work queues without completions. */
static void qp_reset(struct dpv_xport *x, struct xp_qp *q)
{
	xp_resp_abort(x, q, false);
	timers_end(x, q);
	xp_rndv_drop(x, q);
	ring_drop_all(q->qp.sq);
	ring_drop_all(q->qp.rq);
	if (q->qp.sq != NULL)
		q->sq_fed = q->qp.sq->cons_head;
	req_restart(q);
	q->psn = q->psn_hi = q->una = 0;
	q->epsn = q->msn = 0;
	q->nak_sent = false;
	q->uc_drop = false;
	xp_resp_atomics_clear(q);
}

void xp_complete_swqe(struct dpv_xport *x, struct xp_qp *q, uint8_t status)
{
	static const uint8_t wc_opcode[] = {
		[DPV_WR_SEND] = DPV_WC_SEND,
		[DPV_WR_SEND_WITH_IMM] = DPV_WC_SEND,
		[DPV_WR_RDMA_WRITE] = DPV_WC_RDMA_WRITE,
		[DPV_WR_RDMA_WRITE_WITH_IMM] = DPV_WC_RDMA_WRITE,
		[DPV_WR_RDMA_READ] = DPV_WC_RDMA_READ,
		[DPV_WR_ATOMIC_CMP_SWP] = DPV_WC_COMP_SWAP,
		[DPV_WR_ATOMIC_FETCH_ADD] = DPV_WC_FETCH_ADD,
		[DPV_WR_BIND_MW] = DPV_WC_BIND_MW,
		[DPV_WR_LOCAL_INV] = DPV_WC_LOCAL_INV,
		[DPV_WR_SEND_WITH_INV] = DPV_WC_SEND,
		[DPV_WR_ATOMIC_WRITE] = DPV_WC_ATOMIC_WRITE,
	};
	struct dpv_ring *sq = q->xq;
	uint32_t head = sq->cons_head;
	const struct dpv_swqe *w = xp_swqe(q, head);
	/* IBTA 10.8: unsignaled WQEs complete silently unless they fail. */
	const bool signal = status != DPV_WC_SUCCESS || q->qp.init.sq_sig_all ||
			    (w->flags & DPV_WR_F_SIGNALED);
	struct dpv_swqe dev;
	struct dpv_cqe cqe;

	if (xp_xq_dev(q, head)) {
		/* Copied out first: the FIN that follows a READ may take the slot. */
		memcpy(&dev, w, offsetof(struct dpv_swqe, pad2));
		dpv_ring_release(sq, 1);
		xp_rndv_wqe_done(x, q, &dev, status);
		return;
	}
	if (signal) {
		memset(&cqe, 0, sizeof(cqe));
		cqe.wr_id = w->wr_id;
		cqe.status = status;
		cqe.opcode = w->opcode < RTE_DIM(wc_opcode) ? wc_opcode[w->opcode] : DPV_WC_SEND;
		cqe.qp_num = q->qp.qpn;
		if (status == DPV_WC_SUCCESS)
			cqe.byte_len = q->meta[head & sq->mask].len;
	}
	if (status == DPV_WC_WR_FLUSH_ERR)
		XP_CNT(x, q, flushed_wrs);
	/* The slot is free before the completion is visible: a poster on another thread
	 * that has seen the completion may post again at once (ibv_post_send(3) promises
	 * the room). */
	xp_swqe_release(q, 1);
	if (signal)
		xp_cq_put(x, q->qp.init.send_cq, &cqe, false);
}

static void flush_rq(struct dpv_xport *x, struct xp_qp *q)
{
	struct dpv_ring *rq = q->qp.rq;
	uint32_t first, n, i;
	struct dpv_cqe cqe;

	/* IBTA 10.3.1: a shared RQ belongs to the SRQ, not to this QP: never flushed here. */
	if (rq == NULL)
		return;
	n = dpv_ring_peek(rq, dpv_ring_count(rq), &first);
	for (i = 0; i < n; i++) {
		memset(&cqe, 0, sizeof(cqe));
		cqe.wr_id = ((const struct dpv_rwqe *)dpv_ring_slot(rq, first + i))->wr_id;
		cqe.status = DPV_WC_WR_FLUSH_ERR;
		cqe.opcode = DPV_WC_RECV;
		cqe.qp_num = q->qp.qpn;
		/* Free before visible, as a send WQE's slot (xp_complete_swqe()). */
		dpv_ring_release(rq, 1);
		xp_cq_put(x, q->qp.init.recv_cq, &cqe, false);
		XP_CNT(x, q, flushed_wrs);
	}
}

static void flush_sq(struct dpv_xport *x, struct xp_qp *q)
{
	uint32_t first;

	if (q->xq == NULL)
		return;
	/* The application's WQEs not yet in the device ring are flushed through it, in
	 * their order. */
	for (xp_xq_feed(q); dpv_ring_peek(q->xq, 1, &first) != 0; xp_xq_feed(q))
		xp_complete_swqe(x, q, DPV_WC_WR_FLUSH_ERR);
	req_restart(q);
}

void xp_qp_flush_new(struct dpv_xport *x, struct xp_qp *q)
{
	flush_sq(x, q);
	if (q->qp.attr.state == DPV_QPS_ERR)
		flush_rq(x, q);
}

void xp_qp_error_mark(struct xp_qp *q)
{
	if (q->qp.attr.state == DPV_QPS_ERR)
		return;
	q->error_marked = true;
	q->qp.attr.state = DPV_QPS_ERR;
}

void xp_qp_error(struct dpv_xport *x, struct xp_qp *q, uint8_t event)
{
	if (q->qp.attr.state == DPV_QPS_ERR && !q->error_marked)
		return;
	q->error_marked = false;
	q->qp.attr.state = DPV_QPS_ERR;
	timers_end(x, q);
	flush_sq(x, q);
	xp_resp_abort(x, q, true);
	flush_rq(x, q);
	if (event != DPV_QP_EV_NONE && q->qp.fatal_event != NULL) {
		q->qp.event = event;
		q->qp.fatal_event(&q->qp, q->qp.fatal_arg);
	}
}

/* ibv_modify_qp(3) for UC: RC's connection attributes (AV, path MTU, destination QP,
 * PSNs, access), none of its reliability ones (timeout, retries, RNR, READ/atomic
 * resources), and the SQE state of UD. */
static bool uc_transition_masks(uint8_t cur, uint8_t next, uint32_t *req, uint32_t *opt)
{
	switch (cur << 4 | next) {
	case DPV_QPS_RESET << 4 | DPV_QPS_INIT:
		*req |= DPV_QP_PKEY_INDEX | DPV_QP_PORT | DPV_QP_ACCESS_FLAGS;
		return true;
	case DPV_QPS_INIT << 4 | DPV_QPS_INIT:
		*opt = DPV_QP_PKEY_INDEX | DPV_QP_PORT | DPV_QP_ACCESS_FLAGS;
		return true;
	case DPV_QPS_INIT << 4 | DPV_QPS_RTR:
		*req |= DPV_QP_AV | DPV_QP_PATH_MTU | DPV_QP_DEST_QPN | DPV_QP_RQ_PSN;
		*opt = DPV_QP_ACCESS_FLAGS | DPV_QP_PKEY_INDEX;
		return true;
	case DPV_QPS_RTR << 4 | DPV_QPS_RTS:
		*req |= DPV_QP_SQ_PSN;
		*opt = DPV_QP_ACCESS_FLAGS;
		return true;
	case DPV_QPS_RTS << 4 | DPV_QPS_RTS:
	case DPV_QPS_SQD << 4 | DPV_QPS_RTS:
	case DPV_QPS_SQE << 4 | DPV_QPS_RTS:
		*opt = DPV_QP_ACCESS_FLAGS;
		return true;
	case DPV_QPS_RTS << 4 | DPV_QPS_SQD:
		return true;
	case DPV_QPS_SQD << 4 | DPV_QPS_SQD:
		*opt = DPV_QP_PKEY_INDEX | DPV_QP_PORT | DPV_QP_AV | DPV_QP_ACCESS_FLAGS;
		return true;
	default:
		return false;
	}
}

/* IBTA 10.3.1 / ibv_modify_qp(3): the attributes a transition requires and those it
 * allows, per QP type. false: the transition does not exist. */
static bool transition_masks(uint8_t type, uint8_t cur, uint8_t next, uint32_t *req,
			     uint32_t *opt)
{
	const bool rc = type == DPV_QPT_RC;

	*req = cur != next ? DPV_QP_STATE : 0;
	*opt = 0;
	if (next == DPV_QPS_RESET || next == DPV_QPS_ERR)
		return true;
	if (type == DPV_QPT_UC)
		return uc_transition_masks(cur, next, req, opt);
	switch (cur << 4 | next) {
	case DPV_QPS_RESET << 4 | DPV_QPS_INIT:
		*req |= DPV_QP_PKEY_INDEX | DPV_QP_PORT |
			(rc ? DPV_QP_ACCESS_FLAGS : DPV_QP_QKEY);
		return true;
	case DPV_QPS_INIT << 4 | DPV_QPS_INIT:
		*opt = DPV_QP_PKEY_INDEX | DPV_QP_PORT | (rc ? DPV_QP_ACCESS_FLAGS : DPV_QP_QKEY);
		return true;
	case DPV_QPS_INIT << 4 | DPV_QPS_RTR:
		if (rc) {
			*req |= DPV_QP_AV | DPV_QP_PATH_MTU | DPV_QP_DEST_QPN | DPV_QP_RQ_PSN |
				DPV_QP_MAX_DEST_RD_ATOMIC | DPV_QP_MIN_RNR_TIMER;
			*opt = DPV_QP_ACCESS_FLAGS | DPV_QP_PKEY_INDEX;
		} else {
			*opt = DPV_QP_PKEY_INDEX | DPV_QP_QKEY;
		}
		return true;
	case DPV_QPS_RTR << 4 | DPV_QPS_RTS:
		*req |= DPV_QP_SQ_PSN;
		if (rc) {
			*req |= DPV_QP_TIMEOUT | DPV_QP_RETRY_CNT | DPV_QP_RNR_RETRY |
				DPV_QP_MAX_QP_RD_ATOMIC;
			*opt = DPV_QP_ACCESS_FLAGS | DPV_QP_MIN_RNR_TIMER;
		} else {
			*opt = DPV_QP_QKEY;
		}
		return true;
	case DPV_QPS_RTS << 4 | DPV_QPS_RTS:
	case DPV_QPS_SQD << 4 | DPV_QPS_RTS:
		*opt = rc ? DPV_QP_ACCESS_FLAGS | DPV_QP_MIN_RNR_TIMER : DPV_QP_QKEY;
		return true;
	case DPV_QPS_RTS << 4 | DPV_QPS_SQD:
		return true;
	case DPV_QPS_SQD << 4 | DPV_QPS_SQD:
		*opt = rc ? DPV_QP_PKEY_INDEX | DPV_QP_PORT | DPV_QP_AV | DPV_QP_TIMEOUT |
				    DPV_QP_RETRY_CNT | DPV_QP_RNR_RETRY | DPV_QP_MAX_QP_RD_ATOMIC |
				    DPV_QP_MAX_DEST_RD_ATOMIC | DPV_QP_ACCESS_FLAGS |
				    DPV_QP_MIN_RNR_TIMER
			  : DPV_QP_PKEY_INDEX | DPV_QP_QKEY;
		return true;
	case DPV_QPS_SQE << 4 | DPV_QPS_RTS:
		/* IBTA 10.3.1: Send Queue Error exists for UD (and UC) only. */
		*opt = DPV_QP_QKEY;
		return !rc;
	default:
		return false;
	}
}

/* XRC's halves (IBTA 9.3.6; the kernel's ib_modify_qp_is_ok() table): RC's masks, less
 * what a half without the other side needs. An initiator receives no requests: its
 * access flags, responder resources and RNR timer are optional. A target sends none:
 * its retry counts and READ/atomic depth are optional. */
static bool xrc_transition_masks(uint8_t type, uint8_t xrc, uint8_t cur, uint8_t next,
				 uint32_t *req, uint32_t *opt)
{
	uint32_t relax = 0;

	if (!transition_masks(type, cur, next, req, opt))
		return false;
	if (xrc == DPV_XRC_INI && cur == DPV_QPS_RESET && next == DPV_QPS_INIT)
		relax = DPV_QP_ACCESS_FLAGS;
	else if (xrc == DPV_XRC_INI && cur == DPV_QPS_INIT && next == DPV_QPS_RTR)
		relax = DPV_QP_MAX_DEST_RD_ATOMIC | DPV_QP_MIN_RNR_TIMER;
	else if (xrc == DPV_XRC_TGT && cur == DPV_QPS_RTR && next == DPV_QPS_RTS)
		relax = DPV_QP_RETRY_CNT | DPV_QP_RNR_RETRY | DPV_QP_MAX_QP_RD_ATOMIC;
	*req &= ~relax;
	*opt |= relax;
	return true;
}

static bool attr_values_ok(const struct dpv_qp_attr *a, uint32_t mask)
{
	if ((mask & DPV_QP_PATH_MTU) && (a->path_mtu < 1 || a->path_mtu > 5))
		return false;
	if ((mask & DPV_QP_MIN_RNR_TIMER) && a->min_rnr_timer > 31)
		return false;
	if ((mask & DPV_QP_TIMEOUT) && a->timeout > 31)
		return false;
	if ((mask & DPV_QP_RETRY_CNT) && a->retry_cnt > 7)
		return false;
	if ((mask & DPV_QP_RNR_RETRY) && a->rnr_retry > 7)
		return false;
	/* One partition: the default P_Key at index 0. */
	if ((mask & DPV_QP_PKEY_INDEX) && a->pkey_index != 0)
		return false;
	if ((mask & DPV_QP_ACCESS_FLAGS) && (a->access & ~ACCESS_ALL) != 0)
		return false;
	if ((mask & DPV_QP_DEST_QPN) && a->dest_qpn > DPV_WIRE_QPN_MASK)
		return false;
	if ((mask & DPV_QP_MAX_QP_RD_ATOMIC) && a->max_rd_atomic > DPV_MAX_RD_ATOMIC)
		return false;
	if ((mask & DPV_QP_MAX_DEST_RD_ATOMIC) && a->max_dest_rd_atomic > DPV_MAX_RD_ATOMIC)
		return false;
	return true;
}

static void attr_apply(struct dpv_qp_attr *cur, const struct dpv_qp_attr *a, uint32_t mask)
{
	if (mask & DPV_QP_ACCESS_FLAGS)
		cur->access = a->access;
	if (mask & DPV_QP_PKEY_INDEX)
		cur->pkey_index = a->pkey_index;
	if (mask & DPV_QP_QKEY)
		cur->qkey = a->qkey;
	if (mask & DPV_QP_AV) {
		cur->dst_ip = a->dst_ip;
		cur->tos = a->tos;
		cur->ttl = a->ttl;
	}
	if (mask & DPV_QP_PATH_MTU)
		cur->path_mtu = a->path_mtu;
	if (mask & DPV_QP_TIMEOUT)
		cur->timeout = a->timeout;
	if (mask & DPV_QP_RETRY_CNT)
		cur->retry_cnt = a->retry_cnt;
	if (mask & DPV_QP_RNR_RETRY)
		cur->rnr_retry = a->rnr_retry;
	if (mask & DPV_QP_RQ_PSN)
		cur->rq_psn = a->rq_psn & DPV_WIRE_PSN_MASK;
	if (mask & DPV_QP_MIN_RNR_TIMER)
		cur->min_rnr_timer = a->min_rnr_timer;
	if (mask & DPV_QP_SQ_PSN)
		cur->sq_psn = a->sq_psn & DPV_WIRE_PSN_MASK;
	if (mask & DPV_QP_DEST_QPN)
		cur->dest_qpn = a->dest_qpn;
	if (mask & DPV_QP_MAX_QP_RD_ATOMIC)
		cur->max_rd_atomic = a->max_rd_atomic;
	if (mask & DPV_QP_MAX_DEST_RD_ATOMIC)
		cur->max_dest_rd_atomic = a->max_dest_rd_atomic;
}

/* IBTA: the local ACK timeout is 4.096 us x 2^timeout, 0 meaning none (an infinite
 * timer); the device runs at least DPV_ACK_TIMEOUT_MIN. */
static uint64_t ack_cycles_of(const struct dpv_xport *x, uint8_t timeout)
{
	uint8_t e = timeout > DPV_ACK_TIMEOUT_MIN ? timeout : DPV_ACK_TIMEOUT_MIN;

	if (timeout == 0)
		return 0;
	return (x->tsc_hz * 4096u / 1000000000u) << e;
}

int dpv_qp_modify(struct dpv_xport *x, struct dpv_qp *qp, const struct dpv_qp_attr *attr,
		  uint32_t mask)
{
	struct xp_qp *q = to_xqp(qp);
	uint8_t cur = qp->attr.state, next;
	uint32_t req, opt, active;

	next = (mask & DPV_QP_STATE) ? attr->state : cur;
	if (next > DPV_QPS_ERR || (mask & ~QP_ALL_MASKS) != 0 ||
	    !xrc_transition_masks(qp->init.type, qp->init.xrc, cur, next, &req, &opt) ||
	    (mask & req) != req || (mask & ~(req | opt | DPV_QP_STATE)) != 0 ||
	    !attr_values_ok(attr, mask))
		return EINVAL;
	attr_apply(&qp->attr, attr, mask);
	xp_conn_tmpl_init(x, q);
	if ((mask & DPV_QP_RNR_RETRY) && next != DPV_QPS_RESET)
		q->rnr_left = qp->attr.rnr_retry;
	if ((mask & DPV_QP_RETRY_CNT) && next != DPV_QPS_RESET) {
		q->retry_left = qp->attr.retry_cnt;
		q->defer_left = XP_DEFER_MAX;
	}
	if (mask & DPV_QP_TIMEOUT) {
		q->ack_cycles = ack_cycles_of(x, qp->attr.timeout);
		/* A probe an eighth of the timeout on, and within 1 ms. */
		q->probe_cycles = q->ack_cycles / 8 < x->tsc_hz / 1000 ? q->ack_cycles / 8
									: x->tsc_hz / 1000;
	}
	/* A state or attribute change may let the QP send (SQD to RTS) or flush. */
	xp_kick(q);
	if (next == cur)
		return 0;
	switch (next) {
	case DPV_QPS_RESET:
		qp_reset(x, q);
		break;
	case DPV_QPS_ERR:
		xp_qp_error(x, q, DPV_QP_EV_NONE);
		/* The flush may have found a CQ full. */
		if (unlikely(x->cq_overrun))
			xp_cq_overruns(x);
		return 0;
	case DPV_QPS_RTR:
		/* A path MTU above the port's active MTU runs at the active MTU: a larger
		 * packet could not leave the port, and both ends clamp alike. */
		active = xp_active_mtu(x->port);
		xp_qp_set_mtu(q, qp->init.type != DPV_QPT_UD &&
					 (256u << (qp->attr.path_mtu - 1)) < active
				 ? 256u << (qp->attr.path_mtu - 1)
				 : active);
		q->epsn = qp->attr.rq_psn;
		q->msn = 0;
		q->nak_sent = false;
		q->uc_drop = false;
		q->op = XP_OP_NONE;
		xp_resp_atomics_clear(q);
		/* Ask for the peer's MAC now, as a RoCE NIC resolves it at this transition,
		 * so that the first message does not wait for ARP. */
		if (qp->init.type != DPV_QPT_UD) {
			struct rte_ether_addr mac;

			dpv_port_resolve(x->port, qp->attr.dst_ip, &mac);
		}
		break;
	case DPV_QPS_RTS:
		if (cur == DPV_QPS_RTR) {
			q->psn = q->psn_hi = q->una = qp->attr.sq_psn;
			req_restart(q);
		}
		break;
	default:
		break;
	}
	qp->attr.state = next;
	return 0;
}

void dpv_qp_destroy(struct dpv_xport *x, struct dpv_qp *qp)
{
	struct xp_qp *q = to_xqp(qp), *last;

	xp_linger_qp(x, q);
	xp_resp_abort(x, q, false);
	timers_end(x, q);
	xp_rndv_drop(x, q);
	x->qps[qp->qpn] = NULL;
	last = x->live[--x->nlive];
	x->live[q->live_idx] = last;
	last->live_idx = q->live_idx;
	if (x->cursor >= x->nlive)
		x->cursor = 0;
	qp_free(q);
}

const struct dpv_qp_stats *dpv_qp_stats_ref(const struct dpv_qp *qp)
{
	const struct xp_qp *q = qp->xport_state;

	return &q->stats;
}
