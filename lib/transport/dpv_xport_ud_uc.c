/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * UD receive (IBTA 9.8): the Q_Key check, the GRH slot and the datagram placed whole
 * or not at all; and UC receive (IBTA 9.7.7): PSNs without acknowledgements, a message
 * lost whole on a gap, WRITEs dropped where RC would NAK. Both place into receive WQEs
 * as the RC responder does (xp_recv_place(), xp_recv_done() in dpv_xport_resp.c).
 */
#include <string.h>

#include "dpv_xport_priv.h"

/* ---- UD receive (IBTA 9.8; doc/guides/srq.md §1 for the GRH) ---- */

void xp_ud_rx(struct dpv_xport *x, struct xp_qp *q, const struct dpv_wire_pkt *p,
	      const uint8_t *frame)
{
	uint8_t st = q->qp.attr.state, grh[DPV_UD_GRH_LEN];
	struct xp_recv *r = &q->rcv;

	if (st != DPV_QPS_RTR && st != DPV_QPS_RTS && st != DPV_QPS_SQD && st != DPV_QPS_SQE) {
		x->stats.rx_bad_state++;
		return;
	}
	XP_CNT(x, q, rx_packets);
	/* IBTA 9.6 (Q_Key check): a datagram whose Q_Key is not the QP's is dropped. */
	if (p->deth_qkey != q->qp.attr.qkey) {
		x->stats.rx_bad_qkey++;
		return;
	}
	/* UD has no RNR: a datagram with no receive WQE is dropped. */
	if (!xp_take_recv(x, q, r)) {
		x->stats.rx_ud_dropped++;
		return;
	}
	/* RoCEv2 over IPv4: the 40-byte GRH slot holds 20 zero bytes, then the IPv4 header,
	 * as other RoCE devices write it; the payload always starts at offset 40. */
	memset(grh, 0, DPV_UD_GRH_LEN - DPV_WIRE_IPV4_LEN);
	memcpy(grh + DPV_UD_GRH_LEN - DPV_WIRE_IPV4_LEN, frame + DPV_WIRE_ETH_LEN,
	       DPV_WIRE_IPV4_LEN);
	st = xp_recv_place(x, r, grh, DPV_UD_GRH_LEN);
	if (st == DPV_WC_SUCCESS)
		st = xp_recv_place(x, r, frame + p->hdr_len, p->payload_len);
	if (st != DPV_WC_SUCCESS) {
		/* IBTA 10.3.1: a receive completed in error moves the QP to Error. */
		if (st == DPV_WC_LOC_PROT_ERR)
			x->stats.access_errors++;
		xp_qp_error_mark(q);
		xp_recv_done(x, q, st, NULL, DPV_WC_RECV, p->deth_src_qp, DPV_WC_F_GRH);
		xp_qp_error(x, q, DPV_QP_EV_NONE);
		return;
	}
	xp_recv_done(x, q, DPV_WC_SUCCESS, p, DPV_WC_RECV, p->deth_src_qp, DPV_WC_F_GRH);
}

/* ---- UC receive (IBTA 9.7.7) ---- */

/*
 * The message in progress is lost (a PSN gap, or an opcode that cannot continue it):
 * nothing of it completes, and the packets up to the next first packet are dropped. A
 * receive WQE the message had taken stays with the QP, emptied, for the next SEND, so
 * receive WQEs are still used in the order they were posted.
 */
static void uc_drop_msg(struct dpv_xport *x, struct xp_qp *q)
{
	if (!q->uc_drop)
		XP_CNT(x, q, uc_msgs_dropped);
	q->uc_drop = true;
	q->op = XP_OP_NONE;
	q->rcv.msg_len = 0;
}

/* The receive WQE of a SEND, or of a WRITE with immediate: the one a lost message left,
 * else the next posted. */
static bool uc_take_recv(struct dpv_xport *x, struct xp_qp *q)
{
	return q->rcv.active || xp_take_recv(x, q, &q->rcv);
}

static void uc_send_rx(struct dpv_xport *x, struct xp_qp *q, const struct dpv_wire_pkt *p,
		       uint8_t op, const uint8_t *payload)
{
	uint8_t st;

	/* No RNR on UC: a message that finds no receive WQE is dropped. */
	if (xp_op_first(op)) {
		if (!uc_take_recv(x, q)) {
			uc_drop_msg(x, q);
			return;
		}
		q->op = XP_OP_SEND;
	}
	st = xp_recv_place(x, &q->rcv, payload, p->payload_len);
	if (st != DPV_WC_SUCCESS) {
		/* IBTA 10.3.1: a receive completed in error moves the QP to Error. */
		if (st == DPV_WC_LOC_PROT_ERR)
			x->stats.access_errors++;
		xp_qp_error_mark(q);
		xp_recv_done(x, q, st, NULL, DPV_WC_RECV, q->qp.attr.dest_qpn, 0);
		xp_qp_error(x, q, DPV_QP_EV_NONE);
		return;
	}
	if (xp_op_last(op)) {
		q->op = XP_OP_NONE;
		xp_recv_done(x, q, DPV_WC_SUCCESS, p, DPV_WC_RECV, q->qp.attr.dest_qpn, 0);
	}
}

/* A WRITE the responder may not place (key, range, rights, length, memory gone) is
 * dropped whole: UC has no NAK to say so (IBTA 9.7.7). */
static void uc_write_rx(struct dpv_xport *x, struct xp_qp *q, const struct dpv_wire_pkt *p,
			uint8_t op, const uint8_t *payload)
{
	const bool imm = op == DPV_OP_RC_WRITE_ONLY_IMM || op == DPV_OP_RC_WRITE_LAST_IMM;
	struct xp_write *w = &q->wr;

	if (xp_op_first(op)) {
		if (!xp_write_allowed(x, q, p->reth_rkey, p->reth_va, p->reth_len)) {
			x->stats.access_errors++;
			uc_drop_msg(x, q);
			return;
		}
		w->va = p->reth_va;
		w->rkey = p->reth_rkey;
		w->len = p->reth_len;
		w->done = 0;
		q->op = XP_OP_WRITE;
	}
	if (p->payload_len > w->len - w->done ||
	    (xp_op_last(op) && w->done + p->payload_len != w->len)) {
		uc_drop_msg(x, q);
		return;
	}
	if (p->payload_len != 0) {
		if (!xp_write_allowed(x, q, w->rkey, w->va + w->done, p->payload_len) ||
		    !xp_copy(x, (void *)(uintptr_t)(w->va + w->done), payload, p->payload_len)) {
			x->stats.access_errors++;
			uc_drop_msg(x, q);
			return;
		}
		w->done += p->payload_len;
	}
	if (!xp_op_last(op))
		return;
	q->op = XP_OP_NONE;
	if (imm) {
		if (!uc_take_recv(x, q)) {
			/* The data is placed; only the completion has nowhere to go. */
			XP_CNT(x, q, uc_msgs_dropped);
			return;
		}
		q->rcv.msg_len = w->len;
		xp_recv_done(x, q, DPV_WC_SUCCESS, p, DPV_WC_RECV_RDMA_WITH_IMM,
			     q->qp.attr.dest_qpn, 0);
	}
}

/*
 * IBTA 9.7.7: UC has PSNs and no acknowledgements. A packet at the expected PSN goes on
 * with its message; one ahead of it means packets were lost: the message in progress is
 * dropped, and a first (or only) packet starts the next one from its PSN, while any
 * other is dropped with the rest of its message. A UC sender never sends a PSN twice,
 * so a packet behind the expected PSN is a copy the link made, or one it delayed past
 * the packets after it: dropped (dup_requests), and the message in progress goes on.
 * Nothing is NAKed or resent; the drops are counted (out_of_seq for the packets ahead,
 * uc_msgs_dropped for the messages).
 */
void xp_uc_rx(struct dpv_xport *x, struct xp_qp *q, const struct dpv_wire_pkt *p,
	      const uint8_t *frame)
{
	const uint8_t op = p->opcode & 0x1f; /* the RC opcode of the same packet kind */
	const uint8_t *payload = frame + p->hdr_len;
	uint8_t st = q->qp.attr.state;
	bool first = xp_op_first(op);
	int32_t d;

	if (st != DPV_QPS_RTR && st != DPV_QPS_RTS && st != DPV_QPS_SQD && st != DPV_QPS_SQE) {
		x->stats.rx_bad_state++;
		return;
	}
	XP_CNT(x, q, rx_packets);
	d = dpv_wire_psn_diff(p->psn, q->epsn);
	if (d < 0) {
		XP_CNT(x, q, dup_requests);
		return;
	}
	if (d > 0) {
		XP_CNT(x, q, out_of_seq);
		if (q->op != XP_OP_NONE || !first)
			uc_drop_msg(x, q);
	}
	q->epsn = psn_add(p->psn, 1);
	if (first) {
		/* A first packet while a message is in progress: that message's last
		 * packet was lost along with nothing else in between. */
		if (q->op != XP_OP_NONE)
			uc_drop_msg(x, q);
		q->uc_drop = false;
	} else if (q->uc_drop) {
		return;
	} else if (!xp_op_in_sequence(q->op, op)) {
		uc_drop_msg(x, q);
		return;
	}
	if (p->payload_len > q->mtu) {
		uc_drop_msg(x, q);
		return;
	}
	if (op <= DPV_OP_RC_SEND_ONLY_IMM)
		uc_send_rx(x, q, p, op, payload);
	else
		uc_write_rx(x, q, p, op, payload);
}
