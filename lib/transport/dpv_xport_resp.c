/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The responder (IBTA 9.7.5.1): checks each request's PSN against the expected PSN,
 * places SENDs into receive WQEs (the QP's RQ, its SRQ, or what a tag-matching SRQ's
 * tag list matched, dpv_xport_tm.c), executes RDMA WRITEs, READs, atomics and atomic
 * writes against the key table, and answers with ACKs, NAKs, READ responses and atomic
 * acknowledgements in PSN order. UD and UC receive (dpv_xport_ud_uc.c) place through
 * xp_recv_place() and xp_recv_done() here.
 */
#include <string.h>

#include <rte_mbuf.h>

#include "dpv_xport_priv.h"

#define ACK_SYNDROME (DPV_AETH_ACK | XP_AETH_CREDITS_INVALID)

static bool respq_empty(const struct xp_qp *q)
{
	return q->resp_head == q->resp_tail;
}

static struct xp_resp *respq_push(struct xp_qp *q)
{
	struct xp_resp *e;

	if (q->resp_tail - q->resp_head == XP_RESPQ)
		return NULL;
	e = &q->respq[q->resp_tail++ & (XP_RESPQ - 1)];
	memset(e, 0, sizeof(*e));
	return e;
}

/* An entry ahead of everything queued but the duplicate READs already there, which
 * keep their order: what a requester asks for again is what it lacks now, and the
 * responses queued for the READs after it (which it keeps) need not go first. */
static struct xp_resp *respq_push_front(struct xp_qp *q)
{
	uint32_t k = 0, i;
	struct xp_resp *e;

	if (q->resp_tail - q->resp_head == XP_RESPQ)
		return NULL;
	while (q->resp_head + k != q->resp_tail) {
		e = &q->respq[(q->resp_head + k) & (XP_RESPQ - 1)];
		if (e->kind != XP_RESP_READ || !e->dup)
			break;
		k++;
	}
	q->resp_head--;
	for (i = 0; i < k; i++)
		q->respq[(q->resp_head + i) & (XP_RESPQ - 1)] =
			q->respq[(q->resp_head + i + 1) & (XP_RESPQ - 1)];
	e = &q->respq[(q->resp_head + k) & (XP_RESPQ - 1)];
	memset(e, 0, sizeof(*e));
	return e;
}

/*
 * An ACK or NAK behind queued READ responses. A newer one replaces one still at the
 * tail (IBTA 9.7.5.1: a later ACK acknowledges every earlier request; a NAK, sequence
 * or RNR, names the expected PSN and so acknowledges everything before it), so the
 * queue holds at most one between each two READs, however often a requester resends
 * into a full receive queue.
 */
static void respq_ack(struct dpv_xport *x, struct xp_qp *q, uint32_t psn, uint8_t syndrome)
{
	struct xp_resp *e = NULL;

	if (!respq_empty(q)) {
		e = &q->respq[(q->resp_tail - 1) & (XP_RESPQ - 1)];
		if (e->kind != XP_RESP_ACK)
			e = NULL;
	}
	if (e == NULL)
		e = respq_push(q);
	/* Sized for the READs a QP accepts, new and duplicate, with one ACK between each
	 * two: never full. Were it, the requester's timer would recover the answer. */
	if (e == NULL) {
		XP_CNT(x, q, resp_queue_full);
		return;
	}
	xp_kick(q);
	e->kind = XP_RESP_ACK;
	e->psn = psn;
	e->syndrome = syndrome;
	e->msn = q->msn;
}

static bool ack_frame(struct dpv_xport *x, struct xp_qp *q, uint32_t psn, uint8_t syndrome,
		      uint32_t msn)
{
	const struct dpv_qp_attr *a = &q->qp.attr;
	struct dpv_wire_pkt p;
	struct rte_mbuf *m;
	uint8_t *payload;

	p.opcode = DPV_OP_RC_ACK | q->op_base;
	p.solicited = false;
	p.ack_req = false;
	p.psn = psn;
	p.aeth_syndrome = syndrome;
	p.aeth_msn = msn & DPV_WIRE_PSN_MASK;
	m = xp_conn_frame(x, q, &p, 0, &payload);
	if (m == NULL)
		return false;
	xp_frame_send(x, m, a->dst_ip);
	XP_CNT(x, q, tx_packets);
	if (syndrome == ACK_SYNDROME)
		XP_CNT(x, q, acks_sent);
	return true;
}

/* The coalesced ACK of a QP leaves before anything else the QP answers. */
static void ack_flush_one(struct dpv_xport *x, struct xp_qp *q)
{
	if (!q->ack_pending)
		return;
	q->ack_pending = false;
	if (!ack_frame(x, q, q->ack_psn, ACK_SYNDROME, q->msn))
		respq_ack(x, q, q->ack_psn, ACK_SYNDROME);
}

void xp_resp_flush_acks(struct dpv_xport *x)
{
	uint32_t i;

	for (i = 0; i < x->nack; i++)
		ack_flush_one(x, x->ackq[i]);
	x->nack = 0;
}

/*
 * Answer a request. A plain ACK with nothing queued waits for the end of the received
 * burst and coalesces with later ones (IBTA 9.7.5.1); anything else goes out in order
 * behind what the QP has queued, at once when nothing is.
 */
static void respond(struct dpv_xport *x, struct xp_qp *q, uint32_t psn, uint8_t syndrome)
{
	/* Any answer acknowledges every request before it (a NAK those before its PSN). */
	q->unasked = 0;
	if (syndrome == ACK_SYNDROME && respq_empty(q)) {
		if (q->ack_pending) {
			XP_CNT(x, q, acks_coalesced);
		} else {
			if (x->nack == XP_ACKQ) {
				if (!ack_frame(x, q, psn, syndrome, q->msn))
					respq_ack(x, q, psn, syndrome);
				return;
			}
			x->ackq[x->nack++] = q;
			q->ack_pending = true;
		}
		q->ack_psn = psn;
		return;
	}
	ack_flush_one(x, q);
	if (respq_empty(q) && ack_frame(x, q, psn, syndrome, q->msn))
		return;
	respq_ack(x, q, psn, syndrome);
}

static void quiet_stop(struct dpv_xport *x, struct xp_qp *q)
{
	struct xp_qp *last;

	if (q->quiet_idx == XP_TIMED_NONE)
		return;
	last = x->quiet[--x->nquiet];
	x->quiet[q->quiet_idx] = last;
	last->quiet_idx = q->quiet_idx;
	q->quiet_idx = XP_TIMED_NONE;
}

/*
 * A request at @p psn placed without AckReq: IBTA 9.7.6.1 lets the responder
 * acknowledge it with a later ACK, which covers everything before it. It is
 * acknowledged after XP_UNASKED_MAX of them, else when XP_QUIET_US pass with no
 * ACK (xp_resp_ack_tick()), so the requester never waits on its timers for it.
 */
static void unasked(struct dpv_xport *x, struct xp_qp *q, uint32_t psn)
{
	if (++q->unasked >= XP_UNASKED_MAX) {
		XP_CNT(x, q, acks_unasked);
		respond(x, q, psn, ACK_SYNDROME);
		return;
	}
	q->quiet_deadline = x->now + x->quiet_cycles;
	if (q->quiet_idx == XP_TIMED_NONE) {
		q->quiet_idx = x->nquiet;
		x->quiet[x->nquiet++] = q;
	}
}

void xp_resp_ack_tick(struct dpv_xport *x)
{
	uint32_t i;

	/* From the end: a QP that leaves the list takes the last one's place. A QP
	 * acknowledged since it joined leaves now. */
	for (i = x->nquiet; i-- > 0;) {
		struct xp_qp *q = x->quiet[i];
		const uint8_t st = q->qp.attr.state;

		if (q->unasked != 0 && (int64_t)(x->now - q->quiet_deadline) < 0)
			continue;
		if (q->unasked != 0 &&
		    (st == DPV_QPS_RTR || st == DPV_QPS_RTS || st == DPV_QPS_SQD)) {
			XP_CNT(x, q, acks_unasked);
			respond(x, q, psn_add(q->epsn, DPV_WIRE_PSN_MASK), ACK_SYNDROME);
		}
		q->unasked = 0;
		quiet_stop(x, q);
	}
	if (x->nack != 0)
		xp_resp_flush_acks(x);
}

/* IBTA 9.7.5.1 (RNR NAK): nothing of the request is consumed; the requester waits
 * the time this QP's min_rnr_timer names and resends from this PSN. */
static void rnr_nak(struct dpv_xport *x, struct xp_qp *q, uint32_t psn)
{
	XP_CNT(x, q, rnr_naks_sent);
	q->nak_sent = true;
	q->nak_hi = psn;
	q->nak_drops = 0;
	respond(x, q, psn, DPV_AETH_RNR_NAK | (q->qp.attr.min_rnr_timer & 0x1f));
}

/*
 * IBTA 9.9: a NAK of the error classes ends the connection at the responder. The
 * NAK leaves at once (the queue behind it is dropped with the QP); @p fatal when no
 * completion tells the application: the affiliated asynchronous error of IBTA 11.6.3
 * is then the syndrome's own kind, an access violation (QP_ACCESS_ERR) or an invalid
 * request (QP_REQ_ERR), else a catastrophic one (QP_FATAL).
 */
static void nak_fatal(struct dpv_xport *x, struct xp_qp *q, uint32_t psn, uint8_t syndrome,
		      bool fatal)
{
	uint8_t event = DPV_QP_EV_NONE;

	if (fatal)
		event = syndrome == DPV_AETH_NAK_REM_ACCESS ? DPV_QP_EV_ACCESS_ERR
			: syndrome == DPV_AETH_NAK_INV_REQ ? DPV_QP_EV_REQ_ERR
							   : DPV_QP_EV_FATAL;
	ack_flush_one(x, q);
	XP_CNT(x, q, naks_sent);
	q->unasked = 0;
	ack_frame(x, q, psn, syndrome, q->msn);
	xp_qp_error(x, q, event);
}

/* A remote access violation (a key, range or right the request lacks, or memory gone
 * from under its region): counted, NAKed, the connection ended. */
static void access_nak(struct dpv_xport *x, struct xp_qp *q, uint32_t psn, bool fatal)
{
	x->stats.access_errors++;
	nak_fatal(x, q, psn, DPV_AETH_NAK_REM_ACCESS, fatal);
}

/* ---- placing a message into a receive WQE ---- */

uint8_t xp_recv_place_any(struct dpv_xport *x, struct xp_recv *r, const uint8_t *data,
			  uint32_t len)
{
	uint32_t off = r->msg_len, s = 0;
	uint64_t dst;

	if (len > UINT32_MAX - off)
		return DPV_WC_LOC_LEN_ERR;
	r->msg_len += len;
	if (off + len <= r->skip)
		return DPV_WC_SUCCESS;
	if (off < r->skip)
		s = r->skip - off;
	dst = (uint64_t)off + s - r->skip;
	if (dst + (len - s) > r->cap)
		return DPV_WC_LOC_LEN_ERR;
	/* One buffer (a tag's, behind its TMH): the piece's place is known, as in
	 * xp_recv_place(), without the scatter loop. Nothing to place checks nothing,
	 * as in the loop. */
	if (r->num_sge == 1 && len > s)
		return xp_recv_place_one(x, r, r->sge[0].addr + dst, data + s, len - s);
	return xp_sgl_scatter(x, r->sge, r->num_sge, r->pd, dst, data + s, len - s);
}

/* The opcodes that carry ImmDt, by their low five bits, which say the operation
 * whatever the transport (IBTA Table 38): RC's values stand for UC's and UD's too; and
 * RC's SENDs with an IETH in its place, whose R_Key the completion reports. */
#define IMM_OPS                                                                    \
	(1u << DPV_OP_RC_SEND_LAST_IMM | 1u << DPV_OP_RC_SEND_ONLY_IMM |           \
	 1u << DPV_OP_RC_WRITE_LAST_IMM | 1u << DPV_OP_RC_WRITE_ONLY_IMM |         \
	 1u << DPV_OP_RC_SEND_LAST_INV | 1u << DPV_OP_RC_SEND_ONLY_INV)

/* The completion of the receive in progress; it ends it. */
void xp_recv_done(struct dpv_xport *x, struct xp_qp *q, uint8_t status,
		  const struct dpv_wire_pkt *p, uint8_t wc_opcode, uint32_t src_qp,
		  uint8_t flags)
{
	struct xp_recv *r = &q->rcv;
	struct dpv_cqe cqe = {
		.wr_id = r->wr_id,
		.status = status,
		.opcode = wc_opcode,
		.qp_num = q->qp.qpn,
		.src_qp = src_qp,
		.byte_len = r->msg_len - (r->msg_len > r->skip ? r->skip : r->msg_len),
		.flags = flags,
	};

	switch (r->kind) {
	case XP_RECV_PLAIN:
		break;
	case XP_RECV_TM_EAGER:
	case XP_RECV_TM_RNDV:
	case XP_RECV_TM_RNDV_READ:
		cqe.opcode = DPV_WC_TM_RECV;
		cqe.tm_tag = r->tm_tag;
		cqe.tm_priv = r->tm_priv;
		cqe.tm_handle = r->tm_handle;
		cqe.srq_id = q->qp.init.srq->id;
		/* The entry ends with this completion, whatever its status. */
		cqe.flags |= DPV_WC_F_TM_RELEASE;
		if (status == DPV_WC_SUCCESS)
			cqe.flags |= r->flags | DPV_WC_F_TM_DATA_VALID;
		/* A buffer too small for the rendezvous data gets the headers, and software
		 * finishes the transfer itself (doc/guides/rendezvous.md). */
		if (r->kind == XP_RECV_TM_RNDV && status == DPV_WC_SUCCESS)
			cqe.status = DPV_WC_TM_RNDV_INCOMPLETE;
		break;
	case XP_RECV_TM_UNEXPECTED:
		cqe.opcode = DPV_WC_TM_RECV;
		cqe.flags |= r->flags;
		break;
	case XP_RECV_TM_NO_TAG:
		cqe.opcode = DPV_WC_TM_NO_TAG;
		break;
	default:
		break;
	}
	if (p != NULL && (IMM_OPS >> (p->opcode & 0x1f) & 1u)) {
		cqe.flags |= p->opcode == DPV_OP_RC_SEND_LAST_INV ||
				     p->opcode == DPV_OP_RC_SEND_ONLY_INV
			     ? DPV_WC_F_INV : DPV_WC_F_IMM;
		cqe.imm = cqe.flags & DPV_WC_F_INV ? rte_cpu_to_be_32(p->imm) : p->imm;
	}
	r->active = false;
	xp_cq_put(x, xp_recv_cq(q), &cqe, p != NULL && p->solicited);
}

void xp_resp_abort(struct dpv_xport *x, struct xp_qp *q, bool flush)
{
	struct xp_recv *r = &q->rcv;
	struct dpv_cqe cqe;

	if (r->active) {
		if (flush) {
			xp_recv_done(x, q, DPV_WC_WR_FLUSH_ERR, NULL, DPV_WC_RECV,
				     q->qp.attr.dest_qpn, 0);
		} else if (r->kind == XP_RECV_TM_EAGER || r->kind == XP_RECV_TM_RNDV ||
			   r->kind == XP_RECV_TM_RNDV_READ) {
			/* No completion after a reset, but the matched entry must come back. */
			memset(&cqe, 0, sizeof(cqe));
			cqe.opcode = DPV_WC_TM_RECV;
			cqe.tm_handle = r->tm_handle;
			cqe.srq_id = q->qp.init.srq->id;
			cqe.flags = DPV_WC_F_HIDDEN | DPV_WC_F_TM_RELEASE;
			xp_cq_put(x, xp_recv_cq(q), &cqe, false);
		}
		r->active = false;
	}
	q->op = XP_OP_NONE;
	q->resp_head = q->resp_tail = 0;
	q->resp_reads = 0;
	q->resp_dup_reads = 0;
	q->ack_pending = false;
	q->nak_sent = false;
	q->unasked = 0;
	quiet_stop(x, q);
}

/* The receive of a failed message completes in error and the QP ends (IBTA 9.9:
 * a too-long message is an invalid request, a protection failure an operational one). */
static void recv_fail(struct dpv_xport *x, struct xp_qp *q, const struct dpv_wire_pkt *p,
		      uint8_t status)
{
	if (status == DPV_WC_LOC_PROT_ERR)
		x->stats.access_errors++;
	xp_qp_error_mark(q);
	xp_recv_done(x, q, status, NULL, DPV_WC_RECV, q->qp.attr.dest_qpn, 0);
	nak_fatal(x, q, p->psn,
		  status == DPV_WC_LOC_LEN_ERR ? DPV_AETH_NAK_INV_REQ : DPV_AETH_NAK_REM_OP, false);
}

/* ---- RC requests ---- */

/* Inlined into both its callers: the SEND path pays no call for send_inv_rx()'s use. */
static inline __attribute__((always_inline)) void
send_rx(struct dpv_xport *x, struct xp_qp *q, const struct dpv_wire_pkt *p,
	const uint8_t *payload)
{
	const struct dpv_srq *srq = q->qp.init.srq;
	uint8_t st;

	if (xp_op_first(p->opcode)) {
		if (srq != NULL && srq->tm != NULL ? !xp_tm_start(x, q, p, payload) :
						     !xp_take_recv(x, q, &q->rcv)) {
			rnr_nak(x, q, p->psn);
			return;
		}
		q->op = XP_OP_SEND;
	}
	st = xp_recv_place(x, &q->rcv, payload, p->payload_len);
	/* The buffers a rendezvous reads into are checked as an eager message's would
	 * be, so the sender hears of a bad one alike. */
	if (st == DPV_WC_SUCCESS && xp_op_last(p->opcode) && q->rcv.kind == XP_RECV_TM_RNDV_READ)
		st = xp_rndv_check(x, q);
	if (st != DPV_WC_SUCCESS) {
		recv_fail(x, q, p, st);
		return;
	}
	q->epsn = psn_add(q->epsn, 1);
	if (xp_op_last(p->opcode)) {
		q->msn++;
		q->op = XP_OP_NONE;
		if (q->rcv.kind == XP_RECV_TM_RNDV_READ)
			xp_rndv_start(x, q);
		else
			xp_recv_done(x, q, DPV_WC_SUCCESS, p, DPV_WC_RECV, q->qp.attr.dest_qpn, 0);
	}
	if (p->ack_req)
		respond(x, q, p->psn, ACK_SYNDROME);
	else
		unasked(x, q, p->psn);
}

/*
 * IBTA 9.4.3 / 10.6.7.2.5: a SEND with Invalidate unbinds the window its IETH names
 * once the responder accepts the message's last packet (ePSN moves past it): a packet
 * refused for want of a receive WQE, and sent again, invalidates once, and a duplicate
 * never comes here. A key that names no type 2 window bound through this QP is an
 * invalid request, checked before anything of the packet is placed.
 */
static void send_inv_rx(struct dpv_xport *x, struct xp_qp *q, const struct dpv_wire_pkt *p,
			const uint8_t *payload)
{
	struct dpv_mw *mw = dpv_mw_inv_target(x->mrs, p->imm, q->qp.init.pd, q->qp.qpn);
	const uint32_t epsn = q->epsn;

	if (mw == NULL) {
		x->stats.access_errors++;
		nak_fatal(x, q, p->psn, DPV_AETH_NAK_INV_REQ, !q->rcv.active);
		return;
	}
	send_rx(x, q, p, payload);
	if (q->epsn != epsn)
		dpv_mw_unbind(mw);
}

/* IBTA 9.4 / 10.6: an RDMA WRITE needs the QP's remote-write permission and an
 * R_Key covering the range with remote write; a zero-length one checks no key. */
bool xp_write_allowed(const struct dpv_xport *x, const struct xp_qp *q, uint32_t rkey,
		      uint64_t va, uint32_t len)
{
	return (q->qp.attr.access & DPV_ACCESS_REMOTE_WRITE) &&
	       (len == 0 || xp_rkey_ok(x, q, rkey, va, len, DPV_ACCESS_REMOTE_WRITE));
}

static void write_rx(struct dpv_xport *x, struct xp_qp *q, const struct dpv_wire_pkt *p,
		     const uint8_t *payload)
{
	const bool imm = p->opcode == DPV_OP_RC_WRITE_ONLY_IMM ||
			 p->opcode == DPV_OP_RC_WRITE_LAST_IMM;
	struct xp_write *w = &q->wr;

	if (xp_op_first(p->opcode) &&
	    !xp_write_allowed(x, q, p->reth_rkey, p->reth_va, p->reth_len)) {
		access_nak(x, q, p->psn, true);
		return;
	}
	/* WRITE_WITH_IMM consumes a receive WQE at its last packet (IBTA 9.4); with none
	 * the packet is refused whole, so the retry finds everything as it was. */
	if (imm && !xp_take_recv(x, q, &q->rcv)) {
		rnr_nak(x, q, p->psn);
		return;
	}
	if (xp_op_first(p->opcode)) {
		w->va = p->reth_va;
		w->rkey = p->reth_rkey;
		w->len = p->reth_len;
		w->done = 0;
		q->op = XP_OP_WRITE;
	}
	/* IBTA 9.7.5.1: the packets must add up to the RETH's length, not more. */
	if (p->payload_len > w->len - w->done ||
	    (xp_op_last(p->opcode) && w->done + p->payload_len != w->len)) {
		nak_fatal(x, q, p->psn, DPV_AETH_NAK_INV_REQ, !q->rcv.active);
		return;
	}
	if (p->payload_len != 0) {
		if (!xp_write_allowed(x, q, w->rkey, w->va + w->done, p->payload_len) ||
		    !xp_copy(x, (void *)(uintptr_t)(w->va + w->done), payload, p->payload_len)) {
			access_nak(x, q, p->psn, !q->rcv.active);
			return;
		}
		w->done += p->payload_len;
	}
	q->epsn = psn_add(q->epsn, 1);
	if (xp_op_last(p->opcode)) {
		q->msn++;
		q->op = XP_OP_NONE;
		if (imm) {
			q->rcv.msg_len = w->len;
			xp_recv_done(x, q, DPV_WC_SUCCESS, p, DPV_WC_RECV_RDMA_WITH_IMM,
				     q->qp.attr.dest_qpn, 0);
		}
	}
	if (p->ack_req)
		respond(x, q, p->psn, ACK_SYNDROME);
	else
		unasked(x, q, p->psn);
}

static bool read_allowed(const struct dpv_xport *x, const struct xp_qp *q,
			 const struct dpv_wire_pkt *p)
{
	return (q->qp.attr.access & DPV_ACCESS_REMOTE_READ) &&
	       (p->reth_len == 0 || xp_rkey_ok(x, q, p->reth_rkey, p->reth_va, p->reth_len,
					       DPV_ACCESS_REMOTE_READ));
}

/* A response entry for the request at @p psn, counted as a first answer or a repeat;
 * the callers checked that a slot is free, and the queue holds every READ and atomic a
 * QP accepts. The caller fills what its kind carries, then kicks the QP. */
static struct xp_resp *resp_queue(struct xp_qp *q, uint8_t kind, uint32_t psn, bool dup)
{
	struct xp_resp *e = respq_push(q);

	e->kind = kind;
	e->psn = psn;
	e->msn = q->msn;
	e->dup = dup;
	if (dup)
		q->resp_dup_reads++;
	else
		q->resp_reads++;
	return e;
}

/* Queue the responses to a READ. */
static void read_queue(struct xp_qp *q, const struct dpv_wire_pkt *p)
{
	struct xp_resp *e = resp_queue(q, XP_RESP_READ, p->psn, false);

	e->va = p->reth_va;
	e->rkey = p->reth_rkey;
	e->len = p->reth_len;
	xp_kick(q);
}

/* IBTA 9.4 / 9.7.5.1: a READ is checked at once and answered, in PSN order, by
 * dpv_xport_tx(); it uses one PSN per response packet. */
static void read_rx(struct dpv_xport *x, struct xp_qp *q, const struct dpv_wire_pkt *p)
{
	if (!read_allowed(x, q, p)) {
		access_nak(x, q, p->psn, true);
		return;
	}
	/* IBTA 9.5: more READs outstanding than max_dest_rd_atomic grants, or longer
	 * than a message can be, is an invalid request. */
	if (q->resp_reads >= q->qp.attr.max_dest_rd_atomic || p->reth_len > (1u << 31)) {
		nak_fatal(x, q, p->psn, DPV_AETH_NAK_INV_REQ, true);
		return;
	}
	ack_flush_one(x, q);
	q->msn++;
	read_queue(q, p);
	q->epsn = psn_add(q->epsn, xp_npkts(q, p->reth_len));
}

/* ---- atomics (IBTA 9.4.5) ---- */

void xp_resp_atomics_clear(struct xp_qp *q)
{
	memset(q->atomics, 0, sizeof(q->atomics));
	q->atomic_next = 0;
}

/* Queue an ATOMIC ACKNOWLEDGE carrying @p orig. */
static void atomic_queue(struct xp_qp *q, uint32_t psn, uint64_t orig, bool dup)
{
	resp_queue(q, XP_RESP_ATOMIC, psn, dup)->orig = orig;
	xp_kick(q);
}

/* Keep the result of the atomic (or atomic write) at @p psn in the replay cache. It
 * holds the last max_dest_rd_atomic results (more than 0 where an atomic executes): as
 * many as the requester may have outstanding, so every duplicate it can send finds its
 * own. A result kept from 2^24 PSNs ago under the same PSN is not it: it goes. */
static void atomic_keep(struct xp_qp *q, uint32_t psn, uint64_t orig)
{
	struct xp_atomic_res *r;

	for (uint32_t i = 0; i < DPV_MAX_RD_ATOMIC; i++)
		if (q->atomics[i].psn == psn)
			q->atomics[i].valid = false;
	r = &q->atomics[q->atomic_next++ % q->qp.attr.max_dest_rd_atomic];
	r->valid = true;
	r->psn = psn;
	r->orig = orig;
}

/* IBTA 1.5: the answer to an atomic write, an RDMA READ response ONLY of no data. */
static void atomic_write_queue(struct xp_qp *q, uint32_t psn, bool dup)
{
	resp_queue(q, XP_RESP_READ, psn, dup);
	xp_kick(q);
}

/*
 * IBTA 9.4.5: an atomic needs the QP's remote-atomic permission and an R_Key whose
 * region covers the 8 bytes with remote atomic; its address must be 8-byte aligned
 * (an invalid request otherwise), and it takes one of the max_dest_rd_atomic
 * resources, as a READ does, until its acknowledgement is out. It executes at once, in
 * PSN order with everything else the QP receives, and its result is kept for a
 * duplicate of the request (duplicate_rx()).
 */
static void atomic_rx(struct dpv_xport *x, struct xp_qp *q, const struct dpv_wire_pkt *p)
{
	const uint8_t slots = q->qp.attr.max_dest_rd_atomic;
	const bool cas = p->opcode == DPV_OP_RC_CMP_SWAP;
	uint64_t orig;

	if ((p->atomic_va & 7) != 0 || q->resp_reads >= slots) {
		nak_fatal(x, q, p->psn, DPV_AETH_NAK_INV_REQ, true);
		return;
	}
	if (!(q->qp.attr.access & DPV_ACCESS_REMOTE_ATOMIC) ||
	    !xp_rkey_ok(x, q, p->atomic_rkey, p->atomic_va, sizeof(orig),
			DPV_ACCESS_REMOTE_ATOMIC) ||
	    !xp_atomic(x, p->atomic_va, cas, cas ? p->atomic_compare : p->atomic_swap_add,
		       p->atomic_swap_add, &orig)) {
		access_nak(x, q, p->psn, true);
		return;
	}
	atomic_keep(q, p->psn, orig);
	ack_flush_one(x, q);
	q->msn++;
	atomic_queue(q, p->psn, orig, false);
	q->epsn = psn_add(q->epsn, 1);
}

/*
 * IBTA 1.5: an atomic write carries 8 bytes (its RETH says 8) to an 8-byte aligned
 * address (an invalid request otherwise); it needs the QP's remote-write permission and
 * an R_Key whose region covers the 8 bytes with remote write, as a WRITE does. It takes
 * one of the max_dest_rd_atomic resources, as an atomic does, until its answer (an RDMA
 * READ response of no data) is out, and stores the 8 bytes in one store, in PSN order
 * with everything else the QP receives: a reader of the word sees the old value or the
 * new one, never a mix. A duplicate is answered again and not stored again
 * (atomic_dup_rx()): a store repeated after later ones would undo them.
 */
static void atomic_write_rx(struct dpv_xport *x, struct xp_qp *q, const struct dpv_wire_pkt *p,
			    const uint8_t *payload)
{
	uint64_t val;

	if (p->reth_len != sizeof(val) || p->payload_len != sizeof(val) ||
	    (p->reth_va & 7) != 0 || q->resp_reads >= q->qp.attr.max_dest_rd_atomic) {
		nak_fatal(x, q, p->psn, DPV_AETH_NAK_INV_REQ, true);
		return;
	}
	memcpy(&val, payload, sizeof(val));
	if (!xp_write_allowed(x, q, p->reth_rkey, p->reth_va, sizeof(val)) ||
	    !xp_atomic_store(x, p->reth_va, val)) {
		access_nak(x, q, p->psn, true);
		return;
	}
	atomic_keep(q, p->psn, 0);
	ack_flush_one(x, q);
	q->msn++;
	atomic_write_queue(q, p->psn, false);
	q->epsn = psn_add(q->epsn, 1);
}

/*
 * A duplicate atomic (IBTA 9.4.5): the requester lost the acknowledgement, or went back
 * N past the atomic. Executing it again would add twice or swap what it swapped: the
 * result kept when it executed is sent again instead. One whose acknowledgement is
 * still queued needs nothing; one older than the cache, or with no response slot
 * left, is dropped (the requester's timer asks again, or the QP ends in RETRY_EXC_ERR).
 */
static void atomic_dup_rx(struct dpv_xport *x, struct xp_qp *q, const struct dpv_wire_pkt *p)
{
	const uint32_t slots = q->qp.attr.max_dest_rd_atomic;
	const bool aw = p->opcode == DPV_OP_RC_ATOMIC_WRITE;
	uint32_t i;

	for (i = q->resp_head; i != q->resp_tail; i++) {
		const struct xp_resp *e = &q->respq[i & (XP_RESPQ - 1)];

		if (e->psn == p->psn && (aw ? e->kind == XP_RESP_READ && e->len == 0
					    : e->kind == XP_RESP_ATOMIC))
			return;
	}
	for (i = 0; i < slots && i < DPV_MAX_RD_ATOMIC; i++) {
		const struct xp_atomic_res *r = &q->atomics[i];

		if (!r->valid || r->psn != p->psn)
			continue;
		if (q->resp_dup_reads >= DPV_MAX_RD_ATOMIC)
			break;
		XP_CNT(x, q, atomic_replays);
		ack_flush_one(x, q);
		if (aw)
			atomic_write_queue(q, p->psn, true);
		else
			atomic_queue(q, p->psn, r->orig, true);
		return;
	}
	XP_CNT(x, q, dup_atomics_dropped);
}

/* The responses of a duplicate READ, for @p len bytes from @p va at @p psn: ahead of
 * the responses queued (respq_push_front()). */
static void read_dup_queue(struct xp_qp *q, uint32_t psn, uint64_t va, uint32_t rkey,
			   uint32_t len, uint32_t msn)
{
	struct xp_resp *e = respq_push_front(q);

	e->kind = XP_RESP_READ;
	e->psn = psn;
	e->msn = msn;
	e->dup = true;
	e->va = va;
	e->rkey = rkey;
	e->len = len;
	q->resp_dup_reads++;
	xp_kick(q);
}

/*
 * A duplicate READ @p p whose PSN falls in a READ whose responses are still queued
 * asks again for what the requester lacks of it: of that range, what went out already
 * goes again, alone and first; what is still to go goes in its turn, once. The entry
 * itself goes on where it was, so the responses after the range, and the ACKs and
 * READs queued behind it, are not sent twice.
 * @return true when a queued READ took it; false: the duplicate is answered anew.
 */
static bool read_restart(struct dpv_xport *x, struct xp_qp *q, const struct dpv_wire_pkt *p)
{
	uint32_t i, n, sent, want;
	int32_t d;

	for (i = q->resp_head; i != q->resp_tail; i++) {
		const struct xp_resp *e = &q->respq[i & (XP_RESPQ - 1)];

		if (e->kind != XP_RESP_READ)
			continue;
		n = xp_npkts(q, e->len);
		d = dpv_wire_psn_diff(p->psn, e->psn);
		if (d < 0 || (uint32_t)d >= n)
			continue;
		/* Every response but a READ's last is a full MTU, and the entry leaves
		 * the queue with its last. */
		sent = e->sent >> q->mtu_shift;
		if ((uint32_t)d >= sent)
			return true;
		want = xp_npkts(q, p->reth_len);
		if (want > sent - (uint32_t)d)
			want = sent - (uint32_t)d;
		if (q->resp_dup_reads >= XP_DUP_READS) {
			XP_CNT(x, q, dup_reads_dropped);
			return true;
		}
		n = e->len - (uint32_t)d * q->mtu;
		read_dup_queue(q, p->psn, e->va + (uint64_t)d * q->mtu, e->rkey,
			       n < want * q->mtu ? n : want * q->mtu, e->msn);
		return true;
	}
	return false;
}

/*
 * IBTA 9.7.5.1 (duplicate requests): a duplicate READ is answered again from memory as
 * it is now; any other duplicate is acknowledged again with the latest PSN, so a
 * requester whose ACK was lost moves on.
 */
static void duplicate_rx(struct dpv_xport *x, struct xp_qp *q, const struct dpv_wire_pkt *p)
{
	XP_CNT(x, q, dup_requests);
	if (p->opcode == DPV_OP_RC_CMP_SWAP || p->opcode == DPV_OP_RC_FETCH_ADD ||
	    p->opcode == DPV_OP_RC_ATOMIC_WRITE) {
		atomic_dup_rx(x, q, p);
		return;
	}
	if (p->opcode == DPV_OP_RC_READ_REQUEST) {
		if (!read_allowed(x, q, p)) {
			x->stats.access_errors++;
			return;
		}
		if (read_restart(x, q, p))
			return;
		/* With no slot for it, the duplicate is dropped: the requester's probe or
		 * timer asks again. */
		if (q->resp_dup_reads >= XP_DUP_READS || p->reth_len > (1u << 31)) {
			XP_CNT(x, q, dup_reads_dropped);
			return;
		}
		ack_flush_one(x, q);
		read_dup_queue(q, p->psn, p->reth_va, p->reth_rkey, p->reth_len, q->msn);
		return;
	}
	if (p->ack_req)
		respond(x, q, psn_add(q->epsn, DPV_WIRE_PSN_MASK), ACK_SYNDROME);
}

/* The XRC SRQ a request to a target QP names, made the QP's for it; false: none of
 * the QP's XRC domain has that number (an XRC domain violation). */
static bool xrc_srq_take(struct dpv_xport *x, struct xp_qp *q, const struct dpv_wire_pkt *p)
{
	struct dpv_srq *srq = xp_xrc_srq(x, q->qp.init.xrcd, p->xrc_srqn);

	if (srq == NULL)
		return false;
	/* A message in progress stays in the SRQ it started in. */
	if (q->rcv.active && srq != q->qp.init.srq)
		return false;
	q->qp.init.srq = srq;
	q->qp.init.pd = srq->pd;
	return true;
}

void xp_resp_rx(struct dpv_xport *x, struct xp_qp *q, const struct dpv_wire_pkt *p,
		const uint8_t *frame)
{
	const uint8_t *payload = frame + p->hdr_len;
	uint8_t st = q->qp.attr.state;
	int32_t d;

	/* IBTA 10.3.1: the responder runs from RTR on. */
	if (st != DPV_QPS_RTR && st != DPV_QPS_RTS && st != DPV_QPS_SQD) {
		x->stats.rx_bad_state++;
		return;
	}
	XP_CNT(x, q, rx_packets);
	d = dpv_wire_psn_diff(p->psn, q->epsn);
	if (d < 0) {
		duplicate_rx(x, q, p);
		return;
	}
	if (d > 0) {
		/* IBTA 9.7.5.1: one PSN sequence error NAK; after a NAK (or an RNR NAK)
		 * the packets already in flight behind it are dropped silently. Where
		 * silence would leave the wait to the requester's ACK timer, the NAK goes
		 * again: for a packet at or below the highest one dropped since (the
		 * requester went back again, and ePSN was lost once more), and after
		 * XP_RENAK_DROPS packets dropped (the NAK itself was lost). */
		XP_CNT(x, q, out_of_seq);
		if (!q->nak_sent || dpv_wire_psn_diff(p->psn, q->nak_hi) <= 0 ||
		    ++q->nak_drops >= XP_RENAK_DROPS) {
			q->nak_sent = true;
			q->nak_drops = 0;
			XP_CNT(x, q, naks_sent);
			XP_CNT(x, q, seq_naks_sent);
			respond(x, q, q->epsn, DPV_AETH_NAK_PSN_SEQ);
		}
		q->nak_hi = p->psn;
		return;
	}
	q->nak_sent = false;
	if (!xp_op_in_sequence(q->op, p->opcode) || p->payload_len > q->mtu) {
		nak_fatal(x, q, p->psn, DPV_AETH_NAK_INV_REQ, !q->rcv.active);
		return;
	}
	/* XRC (IBTA 9.3.6): each request names its XRC SRQ, which must be of the target
	 * QP's XRC domain; it gives the receive WQE and the PD memory is checked against. */
	if (unlikely(q->op_base == DPV_WIRE_OP_XRC) && !xrc_srq_take(x, q, p)) {
		access_nak(x, q, p->psn, !q->rcv.active);
		return;
	}
	switch (p->opcode) {
	case DPV_OP_RC_SEND_FIRST:
	case DPV_OP_RC_SEND_MIDDLE:
	case DPV_OP_RC_SEND_LAST:
	case DPV_OP_RC_SEND_LAST_IMM:
	case DPV_OP_RC_SEND_ONLY:
	case DPV_OP_RC_SEND_ONLY_IMM:
		send_rx(x, q, p, payload);
		break;
	case DPV_OP_RC_SEND_LAST_INV:
	case DPV_OP_RC_SEND_ONLY_INV:
		send_inv_rx(x, q, p, payload);
		break;
	case DPV_OP_RC_READ_REQUEST:
		read_rx(x, q, p);
		break;
	case DPV_OP_RC_CMP_SWAP:
	case DPV_OP_RC_FETCH_ADD:
		atomic_rx(x, q, p);
		break;
	case DPV_OP_RC_ATOMIC_WRITE:
		atomic_write_rx(x, q, p, payload);
		break;
	default:
		write_rx(x, q, p, payload);
		break;
	}
}

/* ---- responses out ---- */

/* One READ response packet (IBTA 9.4): AETH on the first, last and only ones. The
 * key is checked again per packet: the region may have gone since the request. */
static bool read_resp_pkt(struct dpv_xport *x, struct xp_qp *q, struct xp_resp *e)
{
	const struct dpv_qp_attr *a = &q->qp.attr;
	uint32_t n = xp_npkts(q, e->len), i = e->sent >> q->mtu_shift, plen = e->len - e->sent;
	uint32_t psn = psn_add(e->psn, i);
	struct dpv_wire_pkt p;
	struct rte_mbuf *m;
	uint8_t *payload;

	if (plen > q->mtu)
		plen = q->mtu;
	xp_pkt_init(x, &p, xp_read_resp_opcode(i, n) | q->op_base, a->dst_ip, q->qp.qpn,
		    a->dest_qpn, psn, a->tos, a->ttl);
	p.aeth_syndrome = ACK_SYNDROME;
	p.aeth_msn = e->msn & DPV_WIRE_PSN_MASK;
	if (plen != 0 &&
	    !xp_rkey_ok(x, q, e->rkey, e->va + e->sent, plen, DPV_ACCESS_REMOTE_READ)) {
		access_nak(x, q, psn, true);
		return false;
	}
	m = xp_frame_alloc(x, &p, plen, &payload);
	if (m == NULL)
		return false;
	if (plen != 0 && !xp_copy(x, payload, (const void *)(uintptr_t)(e->va + e->sent), plen)) {
		rte_pktmbuf_free(m);
		access_nak(x, q, psn, true);
		return false;
	}
	xp_frame_send(x, m, a->dst_ip);
	XP_CNT(x, q, tx_packets);
	e->sent += plen;
	if (i == n - 1) {
		q->resp_head++;
		if (e->dup)
			q->resp_dup_reads--;
		else
			q->resp_reads--;
	}
	return true;
}

/* IBTA 9.4.5: the ATOMIC ACKNOWLEDGE: an ACK's AETH, then the value found. */
static bool atomic_ack_frame(struct dpv_xport *x, struct xp_qp *q, const struct xp_resp *e)
{
	const struct dpv_qp_attr *a = &q->qp.attr;
	struct dpv_wire_pkt p;
	struct rte_mbuf *m;
	uint8_t *payload;

	xp_pkt_init(x, &p, DPV_OP_RC_ATOMIC_ACK | q->op_base, a->dst_ip, q->qp.qpn, a->dest_qpn,
		    e->psn, a->tos, a->ttl);
	p.aeth_syndrome = ACK_SYNDROME;
	p.aeth_msn = e->msn & DPV_WIRE_PSN_MASK;
	p.atomic_orig = e->orig;
	m = xp_frame_alloc(x, &p, 0, &payload);
	if (m == NULL)
		return false;
	xp_frame_send(x, m, a->dst_ip);
	XP_CNT(x, q, tx_packets);
	return true;
}

/* xp_resp_tx() with something queued. Out of line: the common visit has nothing. */
static __attribute__((noinline)) uint32_t resp_tx(struct dpv_xport *x, struct xp_qp *q,
						  uint32_t quota)
{
	uint32_t sent = 0, room;

	/* The port's back-pressure holds READ responses as it holds requests: a long
	 * READ would otherwise fill the TX queue and lose what it drops. */
	room = xp_dst_room(x, q, q->qp.attr.dst_ip);
	if (quota > room)
		quota = room;

	while (sent < quota && !respq_empty(q)) {
		struct xp_resp *e = &q->respq[q->resp_head & (XP_RESPQ - 1)];

		if (e->kind == XP_RESP_ACK) {
			if (!ack_frame(x, q, e->psn, e->syndrome, e->msn))
				break;
			q->resp_head++;
		} else if (e->kind == XP_RESP_ATOMIC) {
			if (!atomic_ack_frame(x, q, e))
				break;
			q->resp_head++;
			if (e->dup)
				q->resp_dup_reads--;
			else
				q->resp_reads--;
		} else if (!read_resp_pkt(x, q, e)) {
			break;
		}
		sent++;
	}
	/* Stopped by the port's room, not by the visit's quota: nothing else may visit the
	 * QP again (an ACK kicks it only for its requester's sake), so it rings again
	 * itself. */
	if (sent == quota && !respq_empty(q))
		xp_kick(q);
	return sent;
}

uint32_t xp_resp_tx(struct dpv_xport *x, struct xp_qp *q, uint32_t quota)
{
	return respq_empty(q) ? 0 : resp_tx(x, q, quota);
}
