/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The requester (IBTA 9.7 and 9.8): reads send WQEs in place from the SQ ring,
 * checks them (local keys and ranges), segments them by the path MTU into request
 * packets with consecutive PSNs, and sets AckReq where an ACK is needed (ack_wanted()).
 * RC WQEs stay in their slots until the completer acknowledges them (a READ or an
 * atomic until its response came); UC and UD WQEs complete as soon as their last
 * packet is out (IBTA 9.7.7, 9.8: they are unacknowledged).
 */
#include <string.h>

#include "dpv_xport_priv.h"

/* Not a status: swqe_check()'s answer for a WQE the requester does itself. */
#define XP_WC_LOCAL_OP 0xffu

/* The memory-window opcodes, out of the way of the others: SEND with Invalidate is RC's
 * (and XRC's) only (IBTA Table 38); a bind or local invalidation is done by the
 * requester itself (XP_WC_LOCAL_OP), on RC and UC. Any other opcode is no WQE's. */
static __attribute__((noinline)) uint8_t mw_opcode_check(uint8_t type, uint8_t opcode)
{
	if (opcode == DPV_WR_SEND_WITH_INV)
		return type == DPV_QPT_RC ? DPV_WC_SUCCESS : DPV_WC_LOC_QP_OP_ERR;
	if (xp_wr_local(opcode))
		return type == DPV_QPT_UD ? DPV_WC_LOC_QP_OP_ERR : XP_WC_LOCAL_OP;
	return DPV_WC_LOC_QP_OP_ERR;
}

/* The keys of a WQE's scatter list (IBTA 10.6), and its length in @p total. Out of
 * line: an inline WQE's check then saves no registers for the loop and its calls. */
static __attribute__((noinline)) uint8_t sgl_check(const struct dpv_xport *x,
						   const struct dpv_swqe *w, uint32_t pd,
						   uint64_t *total)
{
	uint32_t i, access;

	if (w->num_sge > DPV_MAX_SGE)
		return DPV_WC_LOC_QP_OP_ERR;
	access = xp_wr_answered(w->opcode) ? DPV_ACCESS_LOCAL_WRITE : 0;
	for (i = 0; i < w->num_sge; i++) {
		*total += w->sge[i].length;
		if (w->sge[i].length != 0 &&
		    dpv_mr_check(x->mrs, w->sge[i].lkey, pd, w->sge[i].addr, w->sge[i].length,
				 access) == NULL)
			return DPV_WC_LOC_PROT_ERR;
	}
	return DPV_WC_SUCCESS;
}

/* IBTA 10.8: what the device checks when it starts a WQE. The scatter list of a READ,
 * and the 8 bytes that get an atomic's original value, are written by the device, so
 * they need LOCAL_WRITE (IBTA 10.6). Inlined into its callers, one per message. */
static inline __attribute__((always_inline)) uint8_t swqe_check(const struct dpv_xport *x,
								 struct xp_qp *q,
								 const struct dpv_swqe *w,
								 uint32_t pd, uint32_t *len)
{
	const uint8_t type = q->qp.init.type;
	uint64_t total = 0;
	uint8_t st;

	switch (w->opcode) {
	case DPV_WR_SEND:
	case DPV_WR_SEND_WITH_IMM:
		break;
	case DPV_WR_RDMA_WRITE:
	case DPV_WR_RDMA_WRITE_WITH_IMM:
		if (type == DPV_QPT_UD)
			return DPV_WC_LOC_QP_OP_ERR;
		break;
	case DPV_WR_RDMA_READ:
	case DPV_WR_ATOMIC_CMP_SWP:
	case DPV_WR_ATOMIC_FETCH_ADD:
	case DPV_WR_ATOMIC_WRITE:
		if (type != DPV_QPT_RC)
			return DPV_WC_LOC_QP_OP_ERR;
		break;
	default:
		st = mw_opcode_check(type, w->opcode);
		if (st != DPV_WC_SUCCESS)
			return st;
		break;
	}
	/* IBTA 1.5: an atomic write's 8 bytes travel in the WQE; it has no local buffer. */
	if (w->opcode == DPV_WR_ATOMIC_WRITE) {
		*len = sizeof(w->swap);
		return DPV_WC_SUCCESS;
	}
	if (w->flags & DPV_WR_F_INLINE) {
		if (xp_wr_answered(w->opcode))
			return DPV_WC_LOC_QP_OP_ERR;
		if (w->length > DPV_MAX_INLINE)
			return DPV_WC_LOC_LEN_ERR;
		total = w->length;
	} else {
		st = sgl_check(x, w, pd, &total);
		if (st != DPV_WC_SUCCESS)
			return st;
	}
	/* IBTA 9.4: a message is at most 2^31 bytes; a UD message is one packet (9.8); an
	 * atomic's local buffer is the 64-bit value (9.4.5). */
	if (total > (1u << 31) || (type == DPV_QPT_UD && total > q->mtu) ||
	    (xp_wr_atomic(w->opcode) && total != sizeof(uint64_t)))
		return DPV_WC_LOC_LEN_ERR;
	*len = (uint32_t)total;
	return DPV_WC_SUCCESS;
}

/* Inlined into both packet builders, as a call would cost a short message more than
 * its copy. */
static inline __attribute__((always_inline)) uint8_t gather(struct dpv_xport *x,
							     const struct dpv_swqe *w, uint32_t pd,
							     uint32_t off, uint8_t *dst, uint32_t n)
{
	const void *src;

	if (w->flags & DPV_WR_F_INLINE) {
		/* The WQE's own bytes, which cannot fault: the short copy only because it
		 * costs a small message less than a call of memcpy(). */
#ifdef XP_COPY_SHORT_MAX
		if (n <= XP_COPY_SHORT_MAX) {
			xp_copy_short(dst, w->inline_data + off, n);
			return DPV_WC_SUCCESS;
		}
#endif
		memcpy(dst, w->inline_data + off, n);
		return DPV_WC_SUCCESS;
	}
	src = xp_sgl_span(x, w->sge, w->num_sge, pd, 0, off, n);
	if (src != NULL)
		return xp_copy(x, dst, src, n) ? DPV_WC_SUCCESS : DPV_WC_LOC_PROT_ERR;
	return xp_sgl_gather(x, w->sge, w->num_sge, pd, off, dst, n);
}

/* @p n PSNs went out from q->psn. The local ACK timer runs while any PSN is
 * unacknowledged (IBTA 9.7.6.1); a resent packet is counted as one. Inline: once per
 * packet, shorter than a call's cost. */
static inline void psn_sent(struct dpv_xport *x, struct xp_qp *q, uint32_t n)
{
	if (dpv_wire_psn_diff(q->psn, q->psn_hi) < 0)
		XP_CNT(x, q, retrans_packets);
	XP_CNT(x, q, tx_packets);
	q->psn = psn_add(q->psn, n);
	if (dpv_wire_psn_diff(q->psn, q->psn_hi) > 0)
		q->psn_hi = q->psn;
	if (q->timed_idx == XP_TIMED_NONE && q->ack_cycles != 0) {
		q->deadline = x->now + q->ack_cycles;
		q->probe_tsc = q->retry_tsc = x->now;
		xp_timer_start(x, q);
	}
}

/* The RC opcode of packet i of n of a SEND or WRITE; UC's are the same with the UC
 * transport bits (IBTA Table 38). A SEND with Invalidate is RC's only, its IETH on its
 * last packet. */
static inline uint8_t send_opcode(uint8_t wr, uint32_t i, uint32_t n)
{
	const bool imm = wr == DPV_WR_SEND_WITH_IMM || wr == DPV_WR_RDMA_WRITE_WITH_IMM;

	if (wr == DPV_WR_SEND || wr == DPV_WR_SEND_WITH_IMM) {
		if (n == 1)
			return imm ? DPV_OP_RC_SEND_ONLY_IMM : DPV_OP_RC_SEND_ONLY;
		if (i == 0)
			return DPV_OP_RC_SEND_FIRST;
		if (i == n - 1)
			return imm ? DPV_OP_RC_SEND_LAST_IMM : DPV_OP_RC_SEND_LAST;
		return DPV_OP_RC_SEND_MIDDLE;
	}
	if (unlikely(wr == DPV_WR_SEND_WITH_INV))
		return n == 1 ? DPV_OP_RC_SEND_ONLY_INV : i == 0 ? DPV_OP_RC_SEND_FIRST
			: i == n - 1 ? DPV_OP_RC_SEND_LAST_INV : DPV_OP_RC_SEND_MIDDLE;
	if (n == 1)
		return imm ? DPV_OP_RC_WRITE_ONLY_IMM : DPV_OP_RC_WRITE_ONLY;
	if (i == 0)
		return DPV_OP_RC_WRITE_FIRST;
	if (i == n - 1)
		return imm ? DPV_OP_RC_WRITE_LAST_IMM : DPV_OP_RC_WRITE_LAST;
	return DPV_OP_RC_WRITE_MIDDLE;
}

/*
 * IBTA 9.7.6.1: whether the SEND or WRITE packet at q->psn sets AckReq. The responder
 * acknowledges the packets that ask, and on its own after XP_UNASKED_MAX that do not or
 * XP_QUIET_US of quiet (dpv_xport_resp.c), so an ACK is asked for only where waiting
 * for those would cost: a packet sent again (a go-back, a probe), the last packet of a
 * message whose completion the application wants, of the device's own WQE (a
 * rendezvous'), of one that drains the QP (SQD), or of one that takes the SQ to half
 * full with WQEs not acknowledged, whose slots the application waits for; and every
 * half window, so the window moves (the responder's own bound comes first at a full
 * window). Every ACK acknowledges all before it.
 */
static inline bool ack_wanted(struct dpv_xport *x, struct xp_qp *q, const struct dpv_swqe *w,
			      bool last)
{
	const bool ask = q->ackreq_next || dpv_wire_psn_diff(q->psn, q->psn_hi) < 0 ||
			 ++q->since_ackreq >= (q->cwnd >= 2 ? q->cwnd / 2 : 1) ||
			 (last && ((w->flags & DPV_WR_F_SIGNALED) || q->qp.init.sq_sig_all ||
				   q->qp.attr.state != DPV_QPS_RTS || xp_xq_dev(q, q->next_wqe) ||
				   (uint32_t)idx_diff(q->next_wqe + 1, q->xq->cons_head) >=
					   dpv_ring_count(q->qp.sq) / 2));

	if (ask) {
		q->since_ackreq = 0;
		q->ackreq_next = false;
		XP_CNT(x, q, ackreq_sent);
	}
	return ask;
}

/* One SEND or WRITE packet of next_wqe at next_off. Inlined into RC's and UC's
 * transmit loops: one call less per packet. */
static inline __attribute__((always_inline)) bool send_data_pkt(struct dpv_xport *x,
								 struct xp_qp *q,
								 const struct dpv_swqe *w,
								 const struct xp_swqe_meta *m)
{
	const struct dpv_qp_attr *a = &q->qp.attr;
	const bool uc = q->op_base == DPV_WIRE_OP_UC;
	uint32_t i = q->next_off >> q->mtu_shift, plen = m->len - q->next_off;
	bool last = i == m->npkts - 1;
	struct dpv_wire_pkt p;
	struct rte_mbuf *mb;
	uint8_t *payload, st;

	if (plen > q->mtu)
		plen = q->mtu;
	p.opcode = send_opcode(w->opcode, i, m->npkts) | q->op_base;
	p.xrc_srqn = w->xrc_srqn;
	p.psn = q->psn;
	/* IBTA 9.2: the solicited event rides on the last packet of a message that
	 * completes a receive (SEND, WRITE with immediate). UC asks for no ACK (9.7.7). */
	p.ack_req = !uc && ack_wanted(x, q, w, last);
	p.solicited = last && (w->flags & DPV_WR_F_SOLICITED) && w->opcode != DPV_WR_RDMA_WRITE;
	p.imm = w->imm;
	if (i == 0) {
		p.reth_va = w->remote_addr;
		p.reth_rkey = w->rkey;
		p.reth_len = m->len;
	}
	mb = xp_conn_frame(x, q, &p, plen, &payload);
	if (mb == NULL)
		return false;
	st = gather(x, w, m->pd, q->next_off, payload, plen);
	if (st != DPV_WC_SUCCESS) {
		/* The region went away under a started message: the WQE fails where it is. */
		rte_pktmbuf_free(mb);
		x->stats.access_errors++;
		q->blocked_err = st;
		return false;
	}
	xp_frame_send(x, mb, a->dst_ip);
	psn_sent(x, q, 1);
	q->next_off += plen;
	if (last) {
		q->next_wqe++;
		q->next_off = 0;
	}
	return true;
}

/* A READ or atomic request went out. It holds one of the max_rd_atomic resources from
 * its first sending until its response is in, however often it is sent again: the
 * responder may have executed it (and an atomic's result must still be in the
 * responder's replay cache when the request comes again). */
static void req_out(struct xp_qp *q, struct xp_swqe_meta *m)
{
	if (!m->req_sent) {
		m->req_sent = true;
		q->reads_out++;
	}
}

/* A packet with no payload to the QP's peer. false: no mbuf, nothing sent. */
static bool send_bare(struct dpv_xport *x, struct xp_qp *q, struct dpv_wire_pkt *p)
{
	uint8_t *payload;
	struct rte_mbuf *mb = xp_frame_alloc(x, p, 0, &payload);

	if (mb == NULL)
		return false;
	xp_frame_send(x, mb, q->qp.attr.dst_ip);
	return true;
}

/* The request of next_wqe, which takes @p npsn PSNs, went out: its WQE is outstanding. */
static void request_sent(struct dpv_xport *x, struct xp_qp *q, struct xp_swqe_meta *m,
			 uint32_t npsn)
{
	XP_CNT(x, q, ackreq_sent);
	psn_sent(x, q, npsn);
	req_out(q, m);
	q->next_wqe++;
	q->next_off = 0;
}

/* Send a READ or atomic request, a packet with no payload that takes @p npsn PSNs,
 * and mark its WQE outstanding. false: no mbuf, nothing sent. */
static bool send_request(struct dpv_xport *x, struct xp_qp *q, struct xp_swqe_meta *m,
			 struct dpv_wire_pkt *p, uint32_t npsn)
{
	if (!send_bare(x, q, p))
		return false;
	request_sent(x, q, m, npsn);
	return true;
}

/* IBTA 9.4: a READ request at @p psn for @p len bytes from @p off of the message; it
 * takes one PSN per response packet. */
static void read_req_pkt(struct dpv_xport *x, struct xp_qp *q, const struct dpv_swqe *w,
			 uint32_t psn, uint32_t off, uint32_t len, struct dpv_wire_pkt *p)
{
	const struct dpv_qp_attr *a = &q->qp.attr;

	xp_pkt_init(x, p, DPV_OP_RC_READ_REQUEST | q->op_base, a->dst_ip, q->qp.qpn, a->dest_qpn,
		    psn, a->tos, a->ttl);
	p->xrc_srqn = w->xrc_srqn;
	p->ack_req = true;
	p->reth_va = w->remote_addr + off;
	p->reth_rkey = w->rkey;
	p->reth_len = len;
}

/* IBTA 9.4.5: an atomic is one request packet with an AtomicETH, and one PSN; its
 * ATOMIC ACKNOWLEDGE carries the value the responder found. */
static void atomic_req_pkt(struct dpv_xport *x, struct xp_qp *q, const struct dpv_swqe *w,
			   uint32_t psn, struct dpv_wire_pkt *p)
{
	const struct dpv_qp_attr *a = &q->qp.attr;
	const bool cas = w->opcode == DPV_WR_ATOMIC_CMP_SWP;

	xp_pkt_init(x, p, (cas ? DPV_OP_RC_CMP_SWAP : DPV_OP_RC_FETCH_ADD) | q->op_base, a->dst_ip,
		    q->qp.qpn, a->dest_qpn, psn, a->tos, a->ttl);
	p->xrc_srqn = w->xrc_srqn;
	p->ack_req = true;
	p->atomic_va = w->remote_addr;
	p->atomic_rkey = w->rkey;
	p->atomic_swap_add = cas ? w->swap : w->compare_add;
	p->atomic_compare = cas ? w->compare_add : 0;
}

/* IBTA 1.5: an atomic write is one request packet at @p psn, a RETH for 8 bytes and the
 * 8 bytes, with AckReq; its answer is an RDMA READ response of no data. false: no
 * mbuf, nothing sent. */
static bool send_atomic_write(struct dpv_xport *x, struct xp_qp *q, const struct dpv_swqe *w,
			      uint32_t psn)
{
	const struct dpv_qp_attr *a = &q->qp.attr;
	struct dpv_wire_pkt p;
	struct rte_mbuf *mb;
	uint8_t *payload;

	xp_pkt_init(x, &p, DPV_OP_RC_ATOMIC_WRITE, a->dst_ip, q->qp.qpn, a->dest_qpn, psn,
		    a->tos, a->ttl);
	p.ack_req = true;
	p.reth_va = w->remote_addr;
	p.reth_rkey = w->rkey;
	p.reth_len = sizeof(w->swap);
	mb = xp_frame_alloc(x, &p, sizeof(w->swap), &payload);
	if (mb == NULL)
		return false;
	memcpy(payload, &w->swap, sizeof(w->swap));
	xp_frame_send(x, mb, a->dst_ip);
	return true;
}

/* The READ or atomic request of next_wqe, for the rest of a READ from next_off. */
static bool send_answered_req(struct dpv_xport *x, struct xp_qp *q, const struct dpv_swqe *w,
			      struct xp_swqe_meta *m)
{
	struct dpv_wire_pkt p;

	if (w->opcode == DPV_WR_ATOMIC_WRITE) {
		if (!send_atomic_write(x, q, w, q->psn))
			return false;
		request_sent(x, q, m, 1);
		return true;
	}
	if (w->opcode != DPV_WR_RDMA_READ) {
		atomic_req_pkt(x, q, w, q->psn, &p);
		return send_request(x, q, m, &p, 1);
	}
	read_req_pkt(x, q, w, q->psn, q->next_off, m->len - q->next_off, &p);
	return send_request(x, q, m, &p, xp_npkts(q, m->len - q->next_off));
}

/* A re-ask went out (@p probed: a probe's, which counts as one in retrans_probe). */
static void reask_sent(struct dpv_xport *x, struct xp_qp *q, bool probed)
{
	XP_CNT(x, q, tx_packets);
	XP_CNT(x, q, ackreq_sent);
	XP_CNT(x, q, retrans_packets);
	if (!probed)
		XP_CNT(x, q, retrans_read);
}

/* One re-ask: the request @p p at an old PSN, taking none. false: no mbuf. */
static bool send_reask_pkt(struct dpv_xport *x, struct xp_qp *q, struct dpv_wire_pkt *p,
			   bool probed)
{
	if (!send_bare(x, q, p))
		return false;
	reask_sent(x, q, probed);
	return true;
}

/*
 * The oldest READ lacks responses the link lost (rd_reask, dpv_xport_comp.c): each gap
 * from rd_asked to rd_lim is asked for again alone, one request at the PSN of its first
 * missing response for the responses up to the next one placed (xp_qp.rd_ahead), which
 * the responder takes as a duplicate READ for that range (IBTA 9.7.5.1); up to
 * XP_REASK_BURST of them, and @p quota. Nothing sent after them goes again: the
 * responder goes on with the responses it was sending, and the requester keeps what
 * comes. An atomic (or atomic write) whose answer was lost is sent again alike
 * (answered from the replay cache). @return the requests sent. Not inlined: it runs
 * after a loss only, and inlined into rc_tx() it costs the send path of every message.
 */
static __attribute__((noinline)) uint32_t send_reasks(struct dpv_xport *x, struct xp_qp *q,
						     uint32_t quota)
{
	uint32_t i = xp_rd_head(q, q->xq->cons_head), sent = 0, a, b, end, first;
	const struct xp_swqe_meta *m;
	const struct dpv_swqe *w;
	const bool probed = q->rd_probed;
	struct dpv_wire_pkt p;

	q->rd_reask = false;
	q->rd_probed = false;
	if (idx_diff(q->wqe_hi, i) <= 0)
		return 0;
	w = xp_swqe(q, i);
	m = &q->meta[i & q->xq->mask];
	first = psn_add(m->first_psn, m->rd_pkts);
	if (dpv_wire_psn_diff(q->rd_asked, first) < 0)
		q->rd_asked = first;
	if (q->rd_asked == first)
		xp_comp_reask_wait(x, q);
	if (w->opcode != DPV_WR_RDMA_READ) {
		bool ok;

		if (q->rd_asked != first)
			return 0;
		if (w->opcode == DPV_WR_ATOMIC_WRITE) {
			ok = send_atomic_write(x, q, w, first);
			if (ok)
				reask_sent(x, q, probed);
		} else {
			atomic_req_pkt(x, q, w, first, &p);
			ok = send_reask_pkt(x, q, &p, probed);
		}
		if (!ok) {
			q->rd_reask = true;
			q->rd_probed = probed;
			return 0;
		}
		q->rd_asked = psn_add(first, 1);
		return 1;
	}
	end = psn_add(m->first_psn, m->npkts);
	if (dpv_wire_psn_diff(q->rd_lim, end) > 0)
		q->rd_lim = end;
	a = q->rd_asked;
	while (dpv_wire_psn_diff(q->rd_lim, a) > 0) {
		if (xp_rd_ahead_test(q, a)) {
			a = psn_add(a, 1);
			continue;
		}
		if (sent == quota || sent == XP_REASK_BURST) {
			q->rd_reask = true;
			xp_kick(q);
			break;
		}
		/* The gap ends at the next response placed, or where what is known
		 * lost ends: the responses behind that may still be on their way. */
		for (b = psn_add(a, 1); b != end && b != q->rd_lim && !xp_rd_ahead_test(q, b);
		     b = psn_add(b, 1))
			;
		{
			const uint32_t off = (uint32_t)dpv_wire_psn_diff(a, m->first_psn) * q->mtu;
			const uint32_t len = (uint32_t)dpv_wire_psn_diff(b, a) * q->mtu;

			read_req_pkt(x, q, w, a, off, m->len - off < len ? m->len - off : len, &p);
		}
		if (!send_reask_pkt(x, q, &p, probed)) {
			q->rd_reask = true;
			break;
		}
		sent++;
		a = b;
	}
	q->rd_asked = a;
	q->rd_probed = q->rd_reask && probed;
	return sent;
}

/*
 * IBTA 10.6.7.2: a bind or local invalidation runs when the requester reaches it, after
 * everything posted before it has started and before anything after it does. It takes
 * no PSN and is never sent, so nothing is done twice when the requester goes back N:
 * an RC one is complete when every PSN before its place is acknowledged (npkts 0 at
 * the next PSN, xp_comp_acked()), a UC one at once. A failure ends the QP in its turn,
 * as a WQE refused at its start does. false: rc_tx() stops this visit; the QP is
 * kicked for the WQEs behind it.
 */
static __attribute__((noinline)) bool local_op(struct dpv_xport *x, struct xp_qp *q,
					       const struct dpv_swqe *w, struct xp_swqe_meta *m)
{
	uint8_t st = DPV_WC_SUCCESS;
	struct dpv_mw *mw;

	if (w->opcode == DPV_WR_BIND_MW)
		st = dpv_mw_bind(x->mrs, w->rkey, w->imm, w->remote_addr, w->compare_add,
				 (uint32_t)w->swap, q->qp.init.pd, q->qp.qpn);
	else if ((mw = dpv_mw_inv_target(x->mrs, w->imm, q->qp.init.pd, q->qp.qpn)) != NULL)
		dpv_mw_unbind(mw);
	else
		st = DPV_WC_LOC_QP_OP_ERR;
	if (st != DPV_WC_SUCCESS) {
		q->blocked_err = st;
		return false;
	}
	m->first_psn = q->psn;
	m->len = 0;
	m->npkts = 0;
	m->rd_pkts = 0;
	m->rd_done = false;
	m->req_sent = false;
	if (idx_diff(q->next_wqe + 1, q->wqe_hi) > 0)
		q->wqe_hi = q->next_wqe + 1;
	q->next_wqe++;
	if (q->qp.init.type == DPV_QPT_UC)
		xp_complete_swqe(x, q, DPV_WC_SUCCESS);
	else
		xp_comp_acked(x, q);
	xp_kick(q);
	return false;
}

/* Start next_wqe: check it and give it its PSNs. false: it cannot start now. Inlined
 * into RC's and UC's transmit loops, once per message each. */
static inline __attribute__((always_inline)) bool rc_start(struct dpv_xport *x, struct xp_qp *q,
							    const struct dpv_swqe *w,
							    struct xp_swqe_meta *m)
{
	uint32_t len = 0;
	uint8_t st;

	/* IBTA 10.3.1 (SQD): the drain lets started messages finish, starts none. */
	if (q->qp.attr.state == DPV_QPS_SQD)
		return false;
	/* IBTA 10.8: a fenced WQE waits for the READs before it. */
	if ((w->flags & DPV_WR_F_FENCE) && q->reads_out > 0)
		return false;
	/* A rendezvous READ lands in a tag entry's buffers: the SRQ's. */
	m->pd = xp_xq_dev(q, q->next_wqe) ? q->qp.init.srq->pd : q->qp.init.pd;
	st = swqe_check(x, q, w, m->pd, &len);
	if (st != DPV_WC_SUCCESS) {
		if (st == XP_WC_LOCAL_OP)
			return local_op(x, q, w, m);
		if (st == DPV_WC_LOC_PROT_ERR)
			x->stats.access_errors++;
		/* Completions stay in order: the WQE fails when the completer reaches it. */
		q->blocked_err = st;
		return false;
	}
	m->first_psn = q->psn;
	m->len = len;
	m->npkts = xp_wr_atomic(w->opcode) ? 1 : xp_npkts(q, len);
	m->rd_pkts = 0;
	m->rd_done = false;
	m->req_sent = false;
	if (idx_diff(q->next_wqe + 1, q->wqe_hi) > 0)
		q->wqe_hi = q->next_wqe + 1;
	return true;
}

void xp_xq_feed(struct xp_qp *q)
{
	struct dpv_ring *sq = q->qp.sq;
	uint32_t head, n, first, i;

	if (q->xq == sq || sq == NULL)
		return;
	/* WQEs keep their SQ slots until they complete: sq_fed is within the ready ones,
	 * and the device ring has room for every one of them. */
	n = dpv_ring_peek(sq, dpv_ring_count(sq), &head) - (q->sq_fed - head);
	if (n == 0)
		return;
	n = dpv_ring_reserve(q->xq, n, &first);
	for (i = 0; i < n; i++) {
		struct dpv_swqe *d = dpv_ring_slot(q->xq, first + i);

		d->origin = XP_WQE_APP;
		d->wr_id = q->sq_fed + i;
	}
	dpv_ring_commit(q->xq, n);
	q->sq_fed += n;
}

/* The RC requester's packets, up to @p quota, for the WQEs before @p end and the
 * re-asks. Out of line: a visit with nothing to send (after an ACK, say) pays only for
 * the look in xp_req_tx(). */
static __attribute__((noinline)) uint32_t rc_tx(struct dpv_xport *x, struct xp_qp *q,
						uint32_t quota, uint32_t end)
{
	struct dpv_ring *sq = q->xq;
	uint32_t room, sent = 0;

	room = xp_dst_room(x, q, q->qp.attr.dst_ip);
	if (quota > room)
		quota = room;
	if (q->rd_reask && quota > 0)
		sent = send_reasks(x, q, quota);
	while (sent < quota && q->blocked_err == 0 && idx_diff(end, q->next_wqe) > 0) {
		const struct dpv_swqe *w = xp_swqe(q, q->next_wqe);
		struct xp_swqe_meta *m = &q->meta[q->next_wqe & sq->mask];

		if (q->next_off == 0 && idx_diff(q->wqe_hi, q->next_wqe) > 0) {
			/* Going back N: a WQE already started keeps its PSNs; a READ whose
			 * responses are all in, or an atomic whose result came, is not asked
			 * for again. */
			if ((xp_wr_answered(w->opcode) && m->rd_done) || m->npkts == 0) {
				q->psn = psn_add(m->first_psn, m->npkts);
				q->next_wqe++;
				continue;
			}
		} else if (q->next_off == 0 && !rc_start(x, q, w, m)) {
			break;
		}
		if (dpv_wire_psn_diff(q->psn, q->una) >= (int32_t)q->cwnd)
			break;
		if (xp_wr_answered(w->opcode)) {
			const uint32_t max_rd = q->qp.attr.max_rd_atomic ? q->qp.attr.max_rd_atomic : 1u;

			/* IBTA 9.5: no more READs and atomics in flight than max_rd_atomic
			 * (the responder's resources); 0 runs as 1, so one never waits for
			 * ever. One sent before goes again whatever the count. */
			if ((!m->req_sent && q->reads_out >= max_rd) ||
			    !send_answered_req(x, q, w, m))
				break;
		} else if (!send_data_pkt(x, q, w, m)) {
			break;
		}
		sent++;
	}
	if (q->blocked_err != 0)
		xp_comp_acked(x, q);
	return sent;
}

/* UD (IBTA 9.8): one packet a message, DETH with the Q_Key and our QP, completed
 * once sent. A local error puts the QP in SQE (IBTA 10.3.1), where the rest of the SQ
 * is flushed until the QP is moved back to RTS. */
static __attribute__((noinline)) uint32_t ud_tx(struct dpv_xport *x, struct xp_qp *q,
						uint32_t quota)
{
	struct dpv_ring *sq = q->xq;
	uint32_t head, len, sent = 0;
	struct dpv_wire_pkt p;
	struct rte_mbuf *mb;
	uint8_t *payload, st;

	while (sent < quota && q->qp.attr.state == DPV_QPS_RTS &&
	       dpv_ring_peek(sq, 1, &head) != 0) {
		const struct dpv_swqe *w = dpv_ring_slot(sq, head);

		st = swqe_check(x, q, w, q->qp.init.pd, &len);
		if (st == DPV_WC_SUCCESS) {
			if (xp_dst_room(x, q, w->ud_dst_ip) == 0)
				break;
			xp_pkt_init(x, &p, w->opcode == DPV_WR_SEND_WITH_IMM ?
					       DPV_OP_UD_SEND_ONLY_IMM : DPV_OP_UD_SEND_ONLY,
				    w->ud_dst_ip, q->qp.qpn, w->ud_remote_qpn, q->psn, w->ud_tos,
				    w->ud_ttl);
			/* IBTA controlled Q_Keys: a WR Q_Key with the top bit set means the QP's own. */
			p.deth_qkey = (w->ud_remote_qkey & 0x80000000u) ? q->qp.attr.qkey
									 : w->ud_remote_qkey;
			p.deth_src_qp = q->qp.qpn;
			p.imm = w->imm;
			p.solicited = (w->flags & DPV_WR_F_SOLICITED) != 0;
			mb = xp_frame_alloc(x, &p, len, &payload);
			if (mb == NULL)
				break;
			st = gather(x, w, q->qp.init.pd, 0, payload, len);
			if (st == DPV_WC_SUCCESS) {
				xp_frame_send(x, mb, w->ud_dst_ip);
				XP_CNT(x, q, tx_packets);
				q->psn = psn_add(q->psn, 1);
				q->meta[head & sq->mask].len = len;
				xp_complete_swqe(x, q, DPV_WC_SUCCESS);
				sent++;
				continue;
			}
			rte_pktmbuf_free(mb);
		}
		if (st == DPV_WC_LOC_PROT_ERR)
			x->stats.access_errors++;
		/* SQE before the completion is visible (xp_qp_error_mark()). */
		q->qp.attr.state = DPV_QPS_SQE;
		xp_complete_swqe(x, q, st);
		xp_qp_flush_new(x, q);
	}
	return sent;
}

/*
 * UC (IBTA 9.7.7): the messages of RC's SENDs and WRITEs, with PSNs but no ACK: a WQE
 * completes when its last packet is out, and nothing is sent again. A local error
 * puts the QP in SQE, as for UD.
 */
static __attribute__((noinline)) uint32_t uc_tx(struct dpv_xport *x, struct xp_qp *q,
						uint32_t quota)
{
	struct dpv_ring *sq = q->xq;
	uint32_t head, ready, room, sent = 0;
	uint8_t st;

	if (q->qp.attr.state != DPV_QPS_RTS && q->qp.attr.state != DPV_QPS_SQD)
		return 0;
	ready = dpv_ring_peek(sq, dpv_ring_count(sq), &head);
	if (idx_diff(head + ready, q->next_wqe) <= 0)
		return 0;
	room = xp_dst_room(x, q, q->qp.attr.dst_ip);
	if (quota > room)
		quota = room;
	while (sent < quota && q->blocked_err == 0 && idx_diff(head + ready, q->next_wqe) > 0) {
		const struct dpv_swqe *w = dpv_ring_slot(sq, q->next_wqe);
		struct xp_swqe_meta *m = &q->meta[q->next_wqe & sq->mask];

		if (q->next_off == 0 && !rc_start(x, q, w, m))
			break;
		if (!send_data_pkt(x, q, w, m))
			break;
		sent++;
		if (q->next_off == 0)
			xp_complete_swqe(x, q, DPV_WC_SUCCESS);
	}
	if (q->blocked_err != 0) {
		st = q->blocked_err;
		/* The message that failed is ended: the next one starts with a first
		 * packet, which tells the responder to drop what it holds of this one. */
		q->next_wqe++;
		q->next_off = 0;
		/* SQE before the completion is visible (xp_qp_error_mark()). */
		q->qp.attr.state = DPV_QPS_SQE;
		xp_complete_swqe(x, q, st);
		xp_qp_flush_new(x, q);
	}
	return sent;
}

uint32_t xp_req_tx(struct dpv_xport *x, struct xp_qp *q, uint32_t quota)
{
	uint32_t head, ready;

	if (q->xq == NULL || q->rnr_wait || quota == 0)
		return 0;
	if (q->qp.init.type == DPV_QPT_UD)
		return ud_tx(x, q, quota);
	if (q->qp.init.type == DPV_QPT_UC)
		return uc_tx(x, q, quota);
	if (q->blocked_err != 0)
		return 0;
	if (q->xq != q->qp.sq)
		xp_xq_feed(q);
	ready = dpv_ring_peek(q->xq, dpv_ring_count(q->xq), &head);
	if (idx_diff(head + ready, q->next_wqe) <= 0 && !q->rd_reask)
		return 0;
	return rc_tx(x, q, quota, head + ready);
}

/*
 * Go back to @p psn (IBTA 9.7.5.2: go-back-N after a NAK, a timeout or an RNR NAK):
 * the WQE holding it is resent from the packet with that PSN; a READ is asked again
 * for the part not yet received. Forward, within what was sent, it skips what an
 * acknowledgement says the peer has.
 */
void xp_req_rewind(struct xp_qp *q, uint32_t psn)
{
	struct dpv_ring *sq = q->xq;
	struct xp_swqe_meta *m;
	uint32_t i;
	int32_t d;

	if (sq == NULL || dpv_wire_psn_diff(psn, q->psn_hi) > 0)
		return;
	for (i = sq->cons_head; idx_diff(q->wqe_hi, i) > 0; i++) {
		m = &q->meta[i & sq->mask];
		d = dpv_wire_psn_diff(psn, m->first_psn);
		if (d >= 0 && (uint32_t)d < m->npkts)
			break;
	}
	if (idx_diff(q->wqe_hi, i) <= 0)
		return;
	m = &q->meta[i & sq->mask];
	/* A READ is asked again for all it lacks, whatever PSN of it the go-back names
	 * (a tail loss probe names its last): from its first response not placed. Its
	 * request is one packet at the oldest PSN it lacks, so the window lets it go. One
	 * (or an atomic) whose responses are all in is not asked again: the go-back starts
	 * with the WQE after it. */
	q->next_wqe = i;
	if (xp_wr_answered(xp_swqe(q, i)->opcode)) {
		psn = psn_add(m->first_psn, m->rd_pkts);
		if (m->rd_done)
			q->next_wqe = i + 1;
	}
	q->next_off = q->next_wqe == i ? (uint32_t)dpv_wire_psn_diff(psn, m->first_psn) * q->mtu
				       : 0;
	q->psn = psn;
	q->blocked_err = 0;
	q->since_ackreq = 0;
	xp_kick(q);
}
