/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The transport's objects below the QP: CQs (IBTA 11.4.2) and SRQs (IBTA 10.2). The
 * key table is dpv_xport_mr.c's, the TM SRQs' table and their ops dpv_xport_tm.c's,
 * the device's loops dpv_xport_dev.c's, the guarded copies dpv_xport_guard.c's.
 */
#include <errno.h>
#include <string.h>

#include <rte_malloc.h>

#include "dpv_xport_priv.h"

/* ---- completion queues (IBTA 11.4.2) ---- */

void *xp_ring_alloc(int socket, uint32_t count, uint32_t slot_size, uint32_t nrings)
{
	size_t each = dpv_ring_memsize(count, slot_size);

	if (each == 0)
		return NULL;
	return rte_malloc_socket("dpv_ring", each * nrings, DPV_CACHE_LINE, socket);
}

int dpv_cq_create(struct dpv_xport *x, uint32_t cqe, struct dpv_cq **out)
{
	struct dpv_cq *cq;
	uint32_t count;
	void *mem;

	if (cqe == 0 || cqe > DPV_MAX_CQE)
		return EINVAL;
	count = xp_pow2_at_least(cqe);
	cq = rte_zmalloc_socket("dpv_cq", sizeof(*cq), DPV_CACHE_LINE, x->port->socket);
	mem = xp_ring_alloc(x->port->socket, count, sizeof(struct dpv_cqe), 1);
	if (cq == NULL || mem == NULL) {
		rte_free(cq);
		rte_free(mem);
		return ENOMEM;
	}
	cq->ring = dpv_ring_init(mem, count, sizeof(struct dpv_cqe));
	cq->id = __atomic_fetch_add(&x->next_id, 1, __ATOMIC_RELAXED);
	*out = cq;
	return 0;
}

void dpv_cq_destroy(struct dpv_cq *cq)
{
	if (cq == NULL)
		return;
	rte_free(cq->ring);
	rte_free(cq);
}

int dpv_cq_resize(struct dpv_xport *x, struct dpv_cq *cq, uint32_t cqe)
{
	struct dpv_ring *old = cq->ring, *r;
	uint32_t head = __atomic_load_n(&old->cons_head, __ATOMIC_ACQUIRE);
	uint32_t used = __atomic_load_n(&old->prod_tail, __ATOMIC_ACQUIRE) - head;
	uint32_t count;
	void *mem;

	if (cqe == 0 || cqe > DPV_MAX_CQE)
		return EINVAL;
	count = xp_pow2_at_least(cqe);
	if (count < used)
		return EINVAL;
	if (count == dpv_ring_count(old))
		return 0;
	mem = xp_ring_alloc(x->port->socket, count, sizeof(struct dpv_cqe), 1);
	if (mem == NULL)
		return ENOMEM;
	r = dpv_ring_init(mem, count, sizeof(struct dpv_cqe));
	for (uint32_t i = 0; i < used; i++)
		memcpy(dpv_ring_slot(r, i), dpv_ring_slot(old, head + i), sizeof(struct dpv_cqe));
	dpv_ring_commit(r, used);
	cq->ring = r;
	rte_free(old);
	return 0;
}

/* dpv_cq_push() without the arming's check, which the caller makes after it. */
static bool cq_write(struct dpv_cq *cq, const struct dpv_cqe *cqe)
{
	uint32_t first;

	if (dpv_ring_reserve(cq->ring, 1, &first) == 0) {
		cq->overflows++;
		return false;
	}
	memcpy(dpv_ring_slot(cq->ring, first), cqe, sizeof(*cqe));
	dpv_ring_commit(cq->ring, 1);
	return true;
}

/* After a full fence that follows the completions' commit: tell the CQ's notify when
 * it is armed for them. */
static void cq_notify_armed(struct dpv_cq *cq, bool solicited)
{
	/* IBTA 11.4.2: an arming fires once, on any completion or (solicited-only) on
	 * the next solicited one; it is cleared before the call so the callee may re-arm. */
	uint32_t armed = __atomic_load_n(&cq->armed, __ATOMIC_ACQUIRE);

	if (armed == 1 || (armed == 2 && solicited)) {
		__atomic_store_n(&cq->armed, 0, __ATOMIC_RELEASE);
		cq->notify(cq, cq->notify_arg);
	}
}

bool dpv_cq_push(struct dpv_cq *cq, const struct dpv_cqe *cqe, bool solicited)
{
	if (!cq_write(cq, cqe))
		return false;
	if (cq->notify == NULL)
		return true;
	/* The application arms, then polls; the device commits, then reads the arming.
	 * Each side stores, then loads what the other stores: without a full fence on
	 * both, x86's store buffer lets both loads see the old values, and the
	 * application sleeps on a completion that sits in its CQ unannounced. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	cq_notify_armed(cq, solicited);
	return true;
}

/* The fence of dpv_cq_push() once for every CQ of the burst: it drains the store
 * buffer of all the burst's work, which a fence a completion paid again and again. */
void xp_cq_announce(struct dpv_xport *x)
{
	uint32_t i, n = x->nannounce;

	x->nannounce = 0;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	for (i = 0; i < n; i++)
		cq_notify_armed(x->announce[i].cq, x->announce[i].solicited);
}

/* Put @p cq on the burst's list of CQs to announce; false when it is full. */
static bool announce_later(struct dpv_xport *x, struct dpv_cq *cq, bool solicited)
{
	uint32_t i;

	for (i = 0; i < x->nannounce; i++) {
		if (x->announce[i].cq == cq) {
			x->announce[i].solicited |= solicited;
			return true;
		}
	}
	if (i == XP_ANNOUNCE)
		return false;
	x->announce[i].cq = cq;
	x->announce[i].solicited = solicited;
	x->nannounce = (uint8_t)(i + 1);
	return true;
}

uint32_t dpv_cq_clean(struct dpv_cq *cq, uint32_t qpn)
{
	struct dpv_ring *r = cq->ring;
	uint32_t head = __atomic_load_n(&r->cons_head, __ATOMIC_ACQUIRE);
	uint32_t tail = __atomic_load_n(&r->prod_tail, __ATOMIC_ACQUIRE);
	uint32_t n = 0;

	for (uint32_t i = head; i != tail; i++) {
		struct dpv_cqe *e = dpv_ring_slot(r, i);

		/* The SRQ's own tag operations (ADD, DEL, SYNC) are no QP's. */
		if (e->qp_num != qpn || (e->flags & DPV_WC_F_HIDDEN) || e->opcode == DPV_WC_TM_ADD ||
		    e->opcode == DPV_WC_TM_DEL || e->opcode == DPV_WC_TM_SYNC)
			continue;
		e->flags |= DPV_WC_F_HIDDEN;
		n++;
	}
	return n;
}

void xp_cq_put(struct dpv_xport *x, struct dpv_cq *cq, const struct dpv_cqe *cqe,
	       bool solicited)
{
	struct dpv_cqe stamped;
	bool written;

	/* The burst's time, read once at its start: stamping costs a CQ that asks for it
	 * a copy, and no clock read. */
	if (unlikely(cq->stamp)) {
		stamped = *cqe;
		stamped.ts = x->now;
		cqe = &stamped;
	}
	/* IBTA 11.4.2: a completion in error wakes a solicited-only waiter too. */
	solicited = solicited || cqe->status != DPV_WC_SUCCESS;
	if (cq->notify != NULL && x->announce_on) {
		written = cq_write(cq, cqe);
		if (written && !announce_later(x, cq, solicited)) {
			__atomic_thread_fence(__ATOMIC_SEQ_CST);
			cq_notify_armed(cq, solicited);
		}
	} else {
		written = dpv_cq_push(cq, cqe, solicited);
	}
	if (!written) {
		/* The completion is lost: the CQ says so once (CQ_ERR), and its QPs end
		 * (xp_cq_overruns()), so the application cannot miss it. */
		x->stats.cq_overflows++;
		x->cq_overrun = true;
		if (!cq->error) {
			cq->error = true;
			if (cq->error_event != NULL)
				cq->error_event(cq, cq->error_arg);
		}
	}
}

/* A TM SRQ whose CQ overran lost completions of its messages (its ops wait for room
 * instead): it goes to error, once, and says so (IBV_EVENT_SRQ_ERR), as its QPs do
 * with QP_FATAL. */
static void srq_overrun(struct dpv_srq *srq)
{
	if (srq->cq == NULL || !srq->cq->error || __atomic_load_n(&srq->error, __ATOMIC_RELAXED))
		return;
	__atomic_store_n(&srq->error, true, __ATOMIC_RELEASE);
	if (srq->error_event != NULL)
		srq->error_event(srq, srq->event_arg);
}

/* IBTA 11.4.2.2 and ibv_get_async_event(3): a QP whose CQ overran is in error and
 * raises QP_FATAL; what it still holds flushes into the CQ as the application frees
 * room. The flushes may overrun again: rounds until one moves no QP. */
void xp_cq_overruns(struct dpv_xport *x)
{
	struct xp_qp *q;
	uint32_t i;

	while (x->cq_overrun) {
		x->cq_overrun = false;
		for (i = 0; i < x->nlive; i++) {
			q = x->live[i];
			if (q->qp.init.srq != NULL)
				srq_overrun(q->qp.init.srq);
			if (q->qp.attr.state != DPV_QPS_RESET && q->qp.attr.state != DPV_QPS_ERR &&
			    q->qp.init.xrc != DPV_XRC_TGT &&
			    (q->qp.init.send_cq->error || xp_recv_cq(q)->error))
				xp_qp_error(x, q, DPV_QP_EV_FATAL);
		}
	}
}

/* ---- shared receive queues (IBTA 10.2) ---- */

/* An XRC SRQ takes the lowest free number; last, so that the device finds it whole. */
static int xrc_srq_add(struct dpv_xport *x, struct dpv_srq *srq)
{
	uint32_t n;

	rte_spinlock_lock(&x->xrc_lock);
	for (n = 0; n < DPV_MAX_XRC_SRQ && x->xrc_srqs[n] != NULL; n++)
		;
	if (n < DPV_MAX_XRC_SRQ) {
		srq->xrc_srqn = n;
		__atomic_store_n(&x->xrc_srqs[n], srq, __ATOMIC_RELEASE);
	}
	rte_spinlock_unlock(&x->xrc_lock);
	return n < DPV_MAX_XRC_SRQ ? 0 : ENOMEM;
}

/* The owner takes an XRC SRQ out of its table and from the target QPs that last
 * received into it: the message one of them was placing completes flushed. */
static void xrc_srq_del(struct dpv_xport *x, struct dpv_srq *srq)
{
	struct xp_qp *q;
	uint32_t i;

	if (srq->xrcd == 0 || x->xrc_srqs[srq->xrc_srqn] != srq)
		return;
	for (i = 0; i < x->nlive; i++) {
		q = x->live[i];
		if (q->qp.init.srq != srq)
			continue;
		if (q->rcv.active)
			xp_resp_abort(x, q, true);
		q->qp.init.srq = NULL;
	}
	rte_spinlock_lock(&x->xrc_lock);
	__atomic_store_n(&x->xrc_srqs[srq->xrc_srqn], NULL, __ATOMIC_RELEASE);
	rte_spinlock_unlock(&x->xrc_lock);
}

struct dpv_srq *xp_xrc_srq(struct dpv_xport *x, uint32_t xrcd, uint32_t srqn)
{
	struct dpv_srq *srq;

	if (srqn >= DPV_MAX_XRC_SRQ)
		return NULL;
	srq = __atomic_load_n(&x->xrc_srqs[srqn], __ATOMIC_ACQUIRE);
	return srq != NULL && srq->xrcd == xrcd ? srq : NULL;
}

int dpv_srq_create(struct dpv_xport *x, const struct dpv_srq_init *init, struct dpv_srq **out)
{
	struct dpv_srq *srq;
	uint32_t count;
	void *mem;
	int ret;

	if (init->max_wr == 0 || init->max_wr > DPV_MAX_SRQ_WR || init->max_sge == 0 ||
	    init->max_sge > DPV_MAX_SGE || init->lanes == 0 || init->lanes > DPV_LANES_MAX ||
	    init->limit > init->max_wr || (init->tm != NULL && init->cq == NULL) ||
	    (init->xrcd != 0 && (init->cq == NULL || init->tm != NULL)))
		return EINVAL;
	srq = rte_zmalloc_socket("dpv_srq", sizeof(*srq), DPV_CACHE_LINE, x->port->socket);
	if (srq == NULL)
		return ENOMEM;
	srq->id = __atomic_fetch_add(&x->next_id, 1, __ATOMIC_RELAXED);
	srq->xport = x;
	srq->pd = init->pd;
	srq->max_wr = init->max_wr;
	srq->max_sge = init->max_sge;
	srq->limit = init->limit;
	srq->cq = init->cq;
	srq->xrcd = init->xrcd;
	/* Every lane holds max_wr, so that only the SRQ-wide count (lib/verbs checks it
	 * against max_wr) refuses a post, whichever thread posts. */
	count = xp_pow2_at_least(init->max_wr);
	mem = xp_ring_alloc(x->port->socket, count, sizeof(struct dpv_rwqe), init->lanes);
	if (mem == NULL) {
		ret = ENOMEM;
		goto fail;
	}
	ret = dpv_lanes_init(&srq->lanes, mem, init->lanes, count, sizeof(struct dpv_rwqe));
	if (ret != 0) {
		rte_free(mem);
		goto fail;
	}
	if (init->tm != NULL) {
		ret = dpv_tm_create(init->tm, &srq->tm);
		if (ret != 0)
			goto fail;
		count = xp_pow2_at_least(init->tm->max_ops);
		mem = xp_ring_alloc(x->port->socket, count, sizeof(struct dpv_tm_op), init->lanes);
		if (mem == NULL) {
			ret = ENOMEM;
			goto fail;
		}
		ret = dpv_lanes_init(&srq->tm_ops, mem, init->lanes, count,
				     sizeof(struct dpv_tm_op));
		if (ret != 0) {
			rte_free(mem);
			goto fail;
		}
		/* Last: the device and the poll side find it whole. */
		ret = xp_tm_srq_add(x, srq);
		if (ret != 0)
			goto fail;
	}
	if (init->xrcd != 0) {
		ret = xrc_srq_add(x, srq);
		if (ret != 0)
			goto fail;
	}
	*out = srq;
	return 0;
fail:
	dpv_srq_destroy(x, srq);
	return ret;
}

void dpv_srq_destroy(struct dpv_xport *x, struct dpv_srq *srq)
{
	if (srq == NULL)
		return;
	xp_tm_srq_del(x, srq);
	xrc_srq_del(x, srq);
	/* Lanes were laid out in one block starting at lane 0. */
	if (srq->lanes.nlanes)
		rte_free(srq->lanes.lane[0]);
	if (srq->tm_ops.nlanes)
		rte_free(srq->tm_ops.lane[0]);
	dpv_tm_destroy(srq->tm);
	rte_free(srq);
}

bool xp_srq_ready(struct dpv_srq *srq)
{
	uint32_t i, first;

	for (i = 0; i < srq->lanes.nlanes; i++)
		if (dpv_ring_peek(srq->lanes.lane[i], 1, &first) != 0)
			return true;
	return false;
}

static void recv_copy(struct xp_recv *r, const struct dpv_rwqe *w, uint32_t pd)
{
	uint32_t i;

	r->wr_id = w->wr_id;
	/* lib/verbs refuses more than max_sge at post; a slot never makes the device read
	 * beyond its own array. */
	r->num_sge = w->num_sge < DPV_MAX_SGE ? w->num_sge : DPV_MAX_SGE;
	r->cap = 0;
	for (i = 0; i < r->num_sge; i++) {
		r->sge[i] = w->sge[i];
		r->cap += w->sge[i].length;
	}
	r->pd = pd;
}

static bool srq_take_one(void *slot, uint32_t lane, void *arg)
{
	struct xp_recv *r = arg;

	(void)lane;
	recv_copy(r, slot, r->pd);
	return true;
}

bool xp_take_recv(struct dpv_xport *x, struct xp_qp *q, struct xp_recv *r)
{
	struct dpv_srq *srq = q->qp.init.srq;
	uint32_t first, posted, limit;

	(void)x;
	memset(r, 0, offsetof(struct xp_recv, sge));
	if (srq == NULL) {
		if (dpv_ring_peek(q->qp.rq, 1, &first) == 0)
			return false;
		recv_copy(r, dpv_ring_slot(q->qp.rq, first), q->qp.init.pd);
		dpv_ring_release(q->qp.rq, 1);
		r->active = true;
		return true;
	}
	/* The SRQ's lanes are drained in turn; each lane is FIFO (doc/guides/srq.md §1). */
	r->pd = srq->pd;
	if (dpv_lanes_drain(&srq->lanes, 1, srq_take_one, r) == 0)
		return false;
	r->active = true;
	posted = __atomic_sub_fetch(&srq->posted, 1, __ATOMIC_ACQ_REL);
	/* The SRQ limit (ibv_modify_srq(3)) is one-shot: the device disarms it as it fires. */
	limit = __atomic_load_n(&srq->limit, __ATOMIC_ACQUIRE);
	if (limit != 0 && posted < limit) {
		__atomic_store_n(&srq->limit, 0, __ATOMIC_RELEASE);
		if (srq->limit_event != NULL)
			srq->limit_event(srq, srq->event_arg);
	}
	return true;
}

struct dpv_cq *xp_recv_cq(const struct xp_qp *q)
{
	const struct dpv_srq *srq = q->qp.init.srq;

	/* doc/guides/srq.md §2: the CQ of a TM SRQ receives every completion of its
	 * messages, as an XRC SRQ's does (§7); a basic SRQ has none. */
	return srq != NULL && srq->cq != NULL ? srq->cq : q->qp.init.recv_cq;
}
