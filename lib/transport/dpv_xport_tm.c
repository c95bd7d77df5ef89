/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tag-matching rendezvous (doc/guides/rendezvous.md, srq.md §4). The header of an
 * expected rendezvous message (TMH RNDV, then the RVH naming the data at the sender)
 * matched an entry whose buffers hold the data: the responder reports the match and
 * queues, on the QP the header came on, an RDMA READ of the data into the entry's
 * buffers; when its last response has landed, the FIN (a SEND of a FIN TMH) to the
 * sender is queued and the receive completes with DATA_VALID.
 *
 * The READ and the FIN are WQEs of the device's own, in the QP's device ring (xq)
 * between the application's WQEs: the requester sends them, retransmits them and
 * completes them in order like any other (IBTA 9.7), so a lossy link, RNR on the
 * sender's side, max_rd_atomic and the retry limits apply to them as to the
 * application's. Their completions come here instead of the send CQ. A rendezvous
 * holds one slot of the ring, for its READ and then its FIN, and a QP runs at most
 * XP_RNDV_MAX at once (the responder RNR NAKs the header of one more).
 *
 * The entry travels in the READ's WQE, in fields that an RC READ does not use
 * otherwise: the tag in compare_add, the data length in swap, app_ctx in imm and the
 * entry's handle in ud_remote_qkey.
 */
#include <string.h>

#include "dpv_xport_priv.h"

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
		w->compare_add = r->tm_tag;
		w->swap = r->rvh.len;
		w->imm = r->tm_priv;
		w->ud_remote_qkey = r->tm_handle;
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
	cqe->tm_handle = w->ud_remote_qkey;
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
			dpv_tm_write_fin(fin->inline_data, w->imm, w->compare_add);
			xq_commit(q);
			cqe.flags |= DPV_WC_F_TM_DATA_VALID;
			cqe.byte_len = (uint32_t)w->swap;
			x->stats.tm_rndv_bytes += w->swap;
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
