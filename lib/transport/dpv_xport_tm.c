/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tag matching on the device side (doc/guides/srq.md §4): the device's table of TM
 * SRQs by id, the execution of their posted ops, the match of a SEND's first packet
 * against the tag list, the completions of tag entries, the release of an entry's
 * handle by the poll side, and the rendezvous.
 *
 * Rendezvous (doc/guides/rendezvous.md). The header of an expected rendezvous message
 * (TMH RNDV, then the RVH naming the data at the sender) matched an entry whose
 * buffers hold the data: the responder reports the match and queues, on the QP the
 * header came on, an RDMA READ of the data into the entry's buffers; when its last
 * response has landed, the FIN (a SEND of a FIN TMH) to the sender is queued and the
 * receive completes with DATA_VALID.
 *
 * The READ and the FIN are WQEs of the device's own, in the QP's device ring (xq)
 * between the application's WQEs: the requester sends them, retransmits them and
 * completes them in order like any other (IBTA 9.7), so a lossy link, RNR on the
 * sender's side, max_rd_atomic and the retry limits apply to them as to the
 * application's. Their completions come here instead of the send CQ. A rendezvous
 * holds one slot of the ring, for its READ and then its FIN, and a QP runs at most
 * XP_RNDV_MAX at once (the responder RNR NAKs the header of one more).
 *
 * The entry travels in the READ's WQE, in its rndv fields.
 */
#include <errno.h>
#include <string.h>

#include "dpv_xport_priv.h"

/* ---- the TM SRQs of a device, by id ---- */

static struct dpv_srq **tm_slot(struct dpv_xport *x, uint32_t id)
{
	return &x->tm_srqs.by_id[id % DPV_MAX_TM_SRQ];
}

int xp_tm_srq_add(struct dpv_xport *x, struct dpv_srq *srq)
{
	struct xp_tm_srqs *t = &x->tm_srqs;

	rte_spinlock_lock(&t->lock);
	if (t->n == DPV_MAX_TM_SRQ) {
		rte_spinlock_unlock(&t->lock);
		return ENOMEM;
	}
	/* Ids stay unique (CQs and SRQs draw from one counter): the id moves on to one
	 * whose slot is free. */
	while (*tm_slot(x, srq->id) != NULL)
		srq->id = __atomic_fetch_add(&x->next_id, 1, __ATOMIC_RELAXED);
	__atomic_store_n(tm_slot(x, srq->id), srq, __ATOMIC_RELEASE);
	t->live[t->n] = srq;
	__atomic_store_n(&t->n, t->n + 1, __ATOMIC_RELEASE);
	rte_spinlock_unlock(&t->lock);
	return 0;
}

void xp_tm_srq_del(struct dpv_xport *x, struct dpv_srq *srq)
{
	struct xp_tm_srqs *t = &x->tm_srqs;

	rte_spinlock_lock(&t->lock);
	if (*tm_slot(x, srq->id) == srq) {
		__atomic_store_n(tm_slot(x, srq->id), NULL, __ATOMIC_RELEASE);
		for (uint32_t i = 0; i < t->n; i++) {
			if (t->live[i] == srq) {
				t->live[i] = t->live[t->n - 1];
				__atomic_store_n(&t->n, t->n - 1, __ATOMIC_RELEASE);
				break;
			}
		}
	}
	rte_spinlock_unlock(&t->lock);
}

int dpv_xport_tm_release(struct dpv_xport *x, uint32_t srq_id, uint32_t handle)
{
	const struct dpv_srq *srq = __atomic_load_n(tm_slot(x, srq_id), __ATOMIC_ACQUIRE);

	if (srq == NULL || srq->id != srq_id)
		return ENOENT;
	return dpv_tm_release(srq->tm, handle);
}

/* ---- TM ops (ibv_post_srq_ops(3) onto lib/tm) ---- */

/* Op execution (@p arg: the SRQ): a TM op's completion needs a CQ slot, checked before
 * it runs so that an op whose completion could not be written stays posted. */
static bool srq_exec_one(void *slot, uint32_t lane, void *arg)
{
	static const uint8_t wc_opcode[] = {
		[DPV_TM_OP_ADD] = DPV_WC_TM_ADD,
		[DPV_TM_OP_DEL] = DPV_WC_TM_DEL,
		[DPV_TM_OP_SYNC] = DPV_WC_TM_SYNC,
	};
	struct dpv_srq *srq = arg;
	const struct dpv_tm_op *op = slot;
	struct dpv_tm_cqe t;
	struct dpv_cqe cqe;
	uint32_t first;

	(void)lane;
	if (dpv_ring_reserve(srq->cq->ring, 1, &first) == 0) {
		srq->ops_left = true;
		return false;
	}
	dpv_tm_exec(srq->tm, op, &t);
	if (!t.visible && !t.release)
		return true;
	/* Ops run before the poll's receive burst reads the clock: a stamp wants it now. */
	if (unlikely(srq->cq->stamp))
		srq->xport->now = rte_get_tsc_cycles();
	memset(&cqe, 0, sizeof(cqe));
	cqe.wr_id = t.wr_id;
	cqe.tm_handle = t.handle;
	cqe.srq_id = srq->id;
	cqe.opcode = t.opcode < RTE_DIM(wc_opcode) ? wc_opcode[t.opcode] : DPV_WC_TM_SYNC;
	cqe.status = t.status == DPV_TM_ST_SUCCESS ? DPV_WC_SUCCESS : DPV_WC_TM_ERR;
	if (t.flags & DPV_TM_CQE_F_SYNC_REQ)
		cqe.flags |= DPV_WC_F_TM_SYNC_REQ;
	if (t.release)
		cqe.flags |= DPV_WC_F_TM_RELEASE;
	/* An unsignaled DEL still ends its entry: the poll side releases and skips it. */
	if (!t.visible)
		cqe.flags |= DPV_WC_F_HIDDEN;
	xp_cq_put(srq->xport, srq->cq, &cqe, false);
	return true;
}

/* The ops of an SRQ whose posters rang. Taking the doorbell is a full barrier (a
 * locked exchange): a poster's commit and ring that come after it are seen by this
 * drain or leave the doorbell set for the next. A drain that ends short of its budget
 * has taken every lane's ops but for one that a full CQ stopped; that, or the budget
 * spent, rings it again. */
static uint32_t srq_ops(struct dpv_srq *srq, uint32_t budget)
{
	uint32_t done;

	if (__atomic_load_n(&srq->ops_rung, __ATOMIC_RELAXED) == 0)
		return 0;
	__atomic_exchange_n(&srq->ops_rung, 0, __ATOMIC_ACQ_REL);
	done = dpv_lanes_drain(&srq->tm_ops, budget, srq_exec_one, srq);
	if (done == budget || srq->ops_left) {
		srq->ops_left = false;
		dpv_srq_ops_ring(srq);
	}
	return done;
}

uint32_t dpv_xport_srq_ops(struct dpv_srq *srq, uint32_t budget)
{
	return srq->tm != NULL ? dpv_lanes_drain(&srq->tm_ops, budget, srq_exec_one, srq) : 0;
}

/* Two TM SRQs or more: apart, so that the loop's registers are saved only for them. */
static __attribute__((noinline)) uint32_t srq_ops_each(struct dpv_srq *const *live, uint32_t n,
						      uint32_t budget)
{
	uint32_t work = 0;

	for (uint32_t i = 0; i < n; i++)
		work += srq_ops(live[i], budget);
	return work;
}

/* Once per poll: a device with no TM SRQ pays a load, one with one a jump. */
uint32_t dpv_xport_tm_ops(struct dpv_xport *x, uint32_t budget)
{
	const struct xp_tm_srqs *t = &x->tm_srqs;
	uint32_t n = __atomic_load_n(&t->n, __ATOMIC_ACQUIRE);

	if (n > 1)
		return srq_ops_each(t->live, n, budget);
	return n == 1 ? srq_ops(t->live[0], budget) : 0;
}

const uint32_t *dpv_xport_tm_count(const struct dpv_xport *x)
{
	return &x->tm_srqs.n;
}

/* ---- matching a message (doc/guides/srq.md §4) ---- */

void xp_tm_cqe(struct dpv_xport *x, struct xp_qp *q, uint8_t status, uint8_t flags)
{
	const struct xp_recv *r = &q->rcv;
	struct dpv_cqe cqe;

	memset(&cqe, 0, sizeof(cqe));
	cqe.wr_id = r->wr_id;
	cqe.status = status;
	cqe.opcode = DPV_WC_TM_RECV;
	cqe.flags = flags;
	cqe.qp_num = q->qp.qpn;
	cqe.src_qp = q->qp.attr.dest_qpn;
	cqe.tm_tag = r->tm_tag;
	cqe.tm_priv = r->tm_priv;
	cqe.tm_handle = r->tm_handle;
	cqe.srq_id = q->qp.init.srq->id;
	xp_cq_put(x, xp_recv_cq(q), &cqe, false);
}

bool xp_tm_start(struct dpv_xport *x, struct xp_qp *q, const struct dpv_wire_pkt *p,
		 const uint8_t *payload)
{
	struct dpv_srq *srq = q->qp.init.srq;
	struct xp_recv *r = &q->rcv;
	struct dpv_tm_tmh tmh;
	struct dpv_tm_match m;
	uint32_t i;

	dpv_tm_parse_tmh(payload, p->payload_len, &tmh);
	/* A rendezvous the QP has no room to run waits at the sender: it may match. */
	if (dpv_tm_tmh_is_rndv(&tmh) && q->rv_active >= XP_RNDV_MAX) {
		return false;
	}
	dpv_tm_match(srq->tm, &tmh, xp_srq_ready(srq), &m);
	switch (m.kind) {
	case DPV_TM_RNR:
		return false;
	case DPV_TM_NO_TAG:
		xp_take_recv(x, q, r);
		r->kind = XP_RECV_TM_NO_TAG;
		x->stats.tm_no_tag++;
		return true;
	case DPV_TM_UNEXPECTED:
		xp_take_recv(x, q, r);
		r->kind = XP_RECV_TM_UNEXPECTED;
		r->flags = (m.flags & DPV_TM_CQE_F_SYNC_REQ) ? DPV_WC_F_TM_SYNC_REQ : 0;
		x->stats.tm_unexpected++;
		return true;
	default:
		break;
	}
	memset(r, 0, offsetof(struct xp_recv, sge));
	r->active = true;
	r->pd = srq->pd;
	r->wr_id = m.recv_wr_id;
	r->num_sge = m.num_sge < DPV_MAX_SGE ? m.num_sge : DPV_MAX_SGE;
	for (i = 0; i < r->num_sge; i++) {
		r->sge[i].addr = m.sg_list[i].addr;
		r->sge[i].length = m.sg_list[i].length;
		r->sge[i].lkey = m.sg_list[i].lkey;
		r->cap += m.sg_list[i].length;
	}
	r->tm_handle = m.handle;
	r->tm_tag = tmh.tag;
	r->tm_priv = tmh.app_ctx;
	x->stats.tm_expected++;
	if (m.kind == DPV_TM_EXPECTED_RNDV) {
		r->flags = DPV_WC_F_TM_MATCH;
		/* doc/guides/rendezvous.md: the device reads data that fits the buffer (and
		 * one READ, IBTA 9.4: at most 2^31 bytes), and places none of the header
		 * message. Data that does not fit leaves the whole header message (TMH,
		 * RVH, application header) to software. */
		if (dpv_tm_parse_rvh(payload, p->payload_len, &r->rvh) && r->rvh.len <= r->cap &&
		    r->rvh.len <= 1u << 31) {
			r->kind = XP_RECV_TM_RNDV_READ;
			r->skip = UINT32_MAX;
		} else {
			r->kind = XP_RECV_TM_RNDV;
		}
		return true;
	}
	r->kind = XP_RECV_TM_EAGER;
	r->skip = DPV_TM_TMH_SIZE;
	/* doc/guides/srq.md §4: a message of more than one packet reports the match at
	 * once (a DEL of the entry fails from now on) and its data at the last packet. */
	if (p->opcode == DPV_OP_RC_SEND_FIRST)
		xp_tm_cqe(x, q, DPV_WC_SUCCESS, DPV_WC_F_TM_MATCH);
	else
		r->flags = DPV_WC_F_TM_MATCH;
	return true;
}

/* ---- rendezvous ---- */


static struct dpv_swqe *xq_push(struct xp_qp *q, uint8_t origin, const struct xp_recv *r)
{
	struct dpv_swqe *w;
	uint32_t first;

	/* Never full (xq holds XP_RNDV_MAX slots more than the SQ, and each rendezvous
	 * holds one): a ring that were would drop the completion, not the memory. */
	if (dpv_ring_reserve(q->xq, 1, &first) != 1)
		return NULL;
	w = dpv_ring_slot(q->xq, first);
	memset(w, 0, offsetof(struct dpv_swqe, pad2));
	w->origin = origin;
	if (r != NULL) {
		w->wr_id = r->wr_id;
		w->rndv.tag = r->tm_tag;
		w->rndv.len = r->rvh.len;
		w->rndv.app_ctx = r->tm_priv;
		w->rndv.handle = r->tm_handle;
	}
	return w;
}

static void xq_commit(struct xp_qp *q)
{
	dpv_ring_commit(q->xq, 1);
	xp_kick(q);
}

/* A rendezvous completion on the SRQ's CQ for the entry @p w carries. */
static void rndv_cqe(const struct xp_qp *q, const struct dpv_swqe *w, struct dpv_cqe *cqe)
{
	memset(cqe, 0, sizeof(*cqe));
	cqe->wr_id = w->wr_id;
	cqe->opcode = DPV_WC_TM_RECV;
	cqe->qp_num = q->qp.qpn;
	cqe->src_qp = q->qp.attr.dest_qpn;
	cqe->tm_handle = w->rndv.handle;
	cqe->srq_id = q->qp.init.srq->id;
}

uint8_t xp_rndv_check(const struct dpv_xport *x, const struct xp_qp *q)
{
	const struct xp_recv *r = &q->rcv;
	uint32_t left = r->rvh.len, i, n;

	for (i = 0; i < r->num_sge && left > 0; i++) {
		n = r->sge[i].length < left ? r->sge[i].length : left;
		if (n != 0 && dpv_mr_check(x->mrs, r->sge[i].lkey, r->pd, r->sge[i].addr, n,
					   DPV_ACCESS_LOCAL_WRITE) == NULL)
			return DPV_WC_LOC_PROT_ERR;
		left -= n;
	}
	return DPV_WC_SUCCESS;
}

void xp_rndv_start(struct dpv_xport *x, struct xp_qp *q)
{
	struct xp_recv *r = &q->rcv;
	uint32_t left = r->rvh.len, i, n = 0;
	struct dpv_swqe *w;

	r->active = false;
	w = xq_push(q, XP_WQE_RNDV_READ, r);
	if (w == NULL) {
		x->stats.tm_rndv_failed++;
		xp_tm_cqe(x, q, DPV_WC_GENERAL_ERR, DPV_WC_F_TM_RELEASE);
		return;
	}
	xp_tm_cqe(x, q, DPV_WC_SUCCESS, DPV_WC_F_TM_MATCH);
	/* IBTA 9.4: one READ of the whole length, into as much of the entry's scatter
	 * list as the data fills (the requester checks its keys when it starts it). */
	w->opcode = DPV_WR_RDMA_READ;
	w->remote_addr = r->rvh.va;
	w->rkey = r->rvh.rkey;
	w->length = r->rvh.len;
	for (i = 0; i < r->num_sge && left > 0; i++) {
		w->sge[n] = r->sge[i];
		if (w->sge[n].length > left)
			w->sge[n].length = left;
		left -= w->sge[n].length;
		n++;
	}
	w->num_sge = (uint8_t)n;
	q->rv_active++;
	x->stats.tm_rndv_reads++;
	xq_commit(q);
}

void xp_rndv_wqe_done(struct dpv_xport *x, struct xp_qp *q, const struct dpv_swqe *w,
		      uint8_t status)
{
	struct dpv_swqe *fin;
	struct dpv_cqe cqe;

	/* The FIN ends the rendezvous' hold on the ring. It tells the sender, whose QP
	 * ends with it when it fails (RETRY_EXC_ERR, a flush): the receive has completed
	 * already. */
	if (w->origin == XP_WQE_RNDV_FIN) {
		q->rv_active--;
		return;
	}
	rndv_cqe(q, w, &cqe);
	cqe.status = status;
	/* The entry ends with this completion, whatever its status. */
	cqe.flags = DPV_WC_F_TM_RELEASE;
	if (status == DPV_WC_SUCCESS) {
		/* The data has landed: the sender may have its buffer back, and the
		 * receive is complete. The slot the READ held is free, so the FIN finds
		 * one. */
		fin = xq_push(q, XP_WQE_RNDV_FIN, NULL);
		if (fin != NULL) {
			fin->opcode = DPV_WR_SEND;
			fin->flags = DPV_WR_F_INLINE;
			fin->length = DPV_TM_TMH_SIZE;
			dpv_tm_write_fin(fin->inline_data, w->rndv.app_ctx, w->rndv.tag);
			xq_commit(q);
			cqe.flags |= DPV_WC_F_TM_DATA_VALID;
			cqe.byte_len = w->rndv.len;
			x->stats.tm_rndv_bytes += w->rndv.len;
		} else {
			cqe.status = DPV_WC_GENERAL_ERR;
		}
	}
	if (cqe.status != DPV_WC_SUCCESS) {
		x->stats.tm_rndv_failed++;
		q->rv_active--;
	}
	xp_cq_put(x, xp_recv_cq(q), &cqe, false);
}

void xp_rndv_drop(struct dpv_xport *x, struct xp_qp *q)
{
	struct dpv_ring *xq = q->xq;
	uint32_t first, n, i;
	struct dpv_cqe cqe;

	if (xq == q->qp.sq)
		return;
	n = dpv_ring_peek(xq, dpv_ring_count(xq), &first);
	for (i = 0; i < n; i++) {
		const struct dpv_swqe *w = dpv_ring_slot(xq, first + i);

		/* A FIN's entry was given back with its DATA_VALID. */
		if (!xp_xq_dev(q, first + i) || w->origin != XP_WQE_RNDV_READ)
			continue;
		/* No completion after a reset, but the entry must come back. */
		rndv_cqe(q, w, &cqe);
		cqe.flags = DPV_WC_F_HIDDEN | DPV_WC_F_TM_RELEASE;
		xp_cq_put(x, xp_recv_cq(q), &cqe, false);
	}
	dpv_ring_release(xq, n);
	q->rv_active = 0;
}
