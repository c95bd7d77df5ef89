/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The completer (IBTA 9.7.5.2 and 9.9): reads ACKs, NAKs and READ responses on the
 * requester side, completes send WQEs in order, places READ data, waits out RNR NAKs
 * and goes back N after a PSN sequence error NAK.
 */
#include <rte_cycles.h>

#include "dpv_xport_priv.h"

/* Everything up to @p psn is acknowledged. Forward progress renews the RNR retry
 * budget (IBTA 9.7.5.2: the count is of retries without progress). */
static void ack_upto(struct xp_qp *q, uint32_t psn)
{
	if (dpv_wire_psn_diff(psn, q->una) >= 0) {
		q->una = psn_add(psn, 1);
		q->rnr_left = q->qp.attr.rnr_retry;
	}
}

void xp_comp_acked(struct dpv_xport *x, struct xp_qp *q)
{
	struct dpv_ring *sq = q->qp.sq;
	uint8_t st;

	if (sq == NULL)
		return;
	while (idx_diff(q->wqe_hi, sq->cons_head) > 0) {
		const struct dpv_swqe *w = dpv_ring_slot(sq, sq->cons_head);
		const struct xp_swqe_meta *m = &q->meta[sq->cons_head & sq->mask];

		/* IBTA 9.7.5.2: a READ completes with its last response, not with an ACK. */
		if (w->opcode == DPV_WR_RDMA_READ ? !m->rd_done
		    : dpv_wire_psn_diff(psn_add(m->first_psn, m->npkts - 1), q->una) >= 0)
			break;
		xp_complete_swqe(x, q, DPV_WC_SUCCESS);
	}
	/* After a go-back, an acknowledgement can overtake the resend point. */
	if (idx_diff(sq->cons_head, q->next_wqe) > 0) {
		q->next_wqe = sq->cons_head;
		q->next_off = 0;
		q->psn = idx_diff(q->wqe_hi, sq->cons_head) > 0
				 ? q->meta[sq->cons_head & sq->mask].first_psn
				 : q->psn_hi;
	}
	/* A WQE the requester refused fails in its turn, and ends the QP (IBTA 10.3.1). */
	if (q->blocked_err != 0 && sq->cons_head == q->next_wqe && q->next_off == 0) {
		st = q->blocked_err;
		q->blocked_err = 0;
		xp_complete_swqe(x, q, st);
		xp_qp_error(x, q, false);
	}
}

/* The oldest outstanding WQE fails with @p status; the QP goes to Error, which flushes
 * the rest (IBTA 9.9). */
static void fail_head(struct dpv_xport *x, struct xp_qp *q, uint8_t status)
{
	struct dpv_ring *sq = q->qp.sq;

	if (idx_diff(q->wqe_hi, sq->cons_head) > 0)
		xp_complete_swqe(x, q, status);
	xp_qp_error(x, q, false);
}

static void rnr_nak_rx(struct dpv_xport *x, struct xp_qp *q, uint32_t psn, uint8_t code)
{
	x->stats.rnr_naks_received++;
	if (q->rnr_wait)
		return;
	/* rnr_retry 7 means retry for ever (IBTA 9.7.5.2). */
	if (q->qp.attr.rnr_retry != 7) {
		if (q->rnr_left == 0) {
			fail_head(x, q, DPV_WC_RNR_RETRY_EXC_ERR);
			return;
		}
		q->rnr_left--;
	}
	x->stats.rnr_retries++;
	xp_req_rewind(q, psn);
	/* The wait is the one the responder asked for: its min_rnr_timer (IBTA Table 45). */
	q->rnr_wait = true;
	q->rnr_deadline = rte_get_tsc_cycles() + xp_rnr_cycles(x, code);
	x->rnr_waiting++;
}

static void ack_rx(struct dpv_xport *x, struct xp_qp *q, const struct dpv_wire_pkt *p)
{
	uint8_t syn = p->aeth_syndrome;
	uint32_t psn = p->psn;

	/* IBTA 9.9: an acknowledgement of a PSN never sent is a ghost: ignored. */
	if (dpv_wire_psn_diff(psn, q->psn_hi) >= 0) {
		x->stats.rx_out_of_seq++;
		return;
	}
	if ((syn & 0xe0) == DPV_AETH_ACK) {
		ack_upto(q, psn);
		xp_comp_acked(x, q);
		return;
	}
	/* A NAK names the PSN it refuses; every PSN before it is acknowledged. One older
	 * than anything outstanding is stale: ignored. */
	if (dpv_wire_psn_diff(psn, q->una) < 0) {
		x->stats.rx_dup++;
		return;
	}
	ack_upto(q, psn_add(psn, DPV_WIRE_PSN_MASK));
	xp_comp_acked(x, q);
	if (q->qp.attr.state == DPV_QPS_ERR)
		return;
	if ((syn & 0xe0) == DPV_AETH_RNR_NAK) {
		rnr_nak_rx(x, q, psn, syn & 0x1f);
		return;
	}
	if ((syn & 0xe0) != (DPV_AETH_NAK_PSN_SEQ & 0xe0)) {
		x->stats.rx_bad[DPV_WIRE_E_OPCODE]++;
		return;
	}
	x->stats.naks_received++;
	switch (syn) {
	case DPV_AETH_NAK_PSN_SEQ:
		xp_req_rewind(q, psn);
		break;
	case DPV_AETH_NAK_REM_ACCESS:
		fail_head(x, q, DPV_WC_REM_ACCESS_ERR);
		break;
	case DPV_AETH_NAK_REM_OP:
		fail_head(x, q, DPV_WC_REM_OP_ERR);
		break;
	default:
		/* Invalid request, invalid RD request and reserved codes. */
		fail_head(x, q, DPV_WC_REM_INV_REQ_ERR);
		break;
	}
}

/* IBTA 9.7.5.2: READ responses arrive in order for the oldest READ not yet complete;
 * each is checked against what that READ expects before its data lands. */
static void read_resp_rx(struct dpv_xport *x, struct xp_qp *q, const struct dpv_wire_pkt *p,
			 const uint8_t *payload)
{
	struct dpv_ring *sq = q->qp.sq;
	const struct dpv_swqe *w = NULL;
	struct xp_swqe_meta *m = NULL;
	uint32_t i, plen;
	int32_t d;
	uint8_t st;

	for (i = sq->cons_head; idx_diff(q->wqe_hi, i) > 0; i++) {
		w = dpv_ring_slot(sq, i);
		m = &q->meta[i & sq->mask];
		if (w->opcode == DPV_WR_RDMA_READ && !m->rd_done)
			break;
	}
	if (idx_diff(q->wqe_hi, i) <= 0) {
		x->stats.rx_dup++;
		return;
	}
	d = dpv_wire_psn_diff(p->psn, psn_add(m->first_psn, m->rd_pkts));
	if (d != 0) {
		/* Behind: a duplicate. Ahead: a lost response, which this lossless
		 * link does not produce (the retransmit timer of a later one will). */
		if (d < 0)
			x->stats.rx_dup++;
		else
			x->stats.rx_out_of_seq++;
		return;
	}
	/* A READ response acknowledges every request before the READ (IBTA 9.7.5.2). */
	ack_upto(q, psn_add(m->first_psn, DPV_WIRE_PSN_MASK));
	xp_comp_acked(x, q);
	if (q->qp.attr.state == DPV_QPS_ERR || sq->cons_head != i)
		return;
	plen = m->len - m->rd_pkts * q->mtu;
	if (plen > q->mtu)
		plen = q->mtu;
	if (p->opcode != xp_read_resp_opcode(m->rd_pkts, m->npkts) || p->payload_len != plen) {
		fail_head(x, q, DPV_WC_BAD_RESP_ERR);
		return;
	}
	st = xp_sgl_scatter(x, w->sge, w->num_sge, q->qp.init.pd, (uint64_t)m->rd_pkts * q->mtu,
			    payload, plen);
	if (st != DPV_WC_SUCCESS) {
		x->stats.access_errors++;
		fail_head(x, q, st);
		return;
	}
	if (++m->rd_pkts < m->npkts)
		return;
	m->rd_done = true;
	if (m->req_sent) {
		m->req_sent = false;
		q->reads_out--;
	}
	ack_upto(q, psn_add(m->first_psn, m->npkts - 1));
	xp_comp_acked(x, q);
}

void xp_comp_rx(struct dpv_xport *x, struct xp_qp *q, const struct dpv_wire_pkt *p,
		const uint8_t *frame)
{
	uint8_t st = q->qp.attr.state;

	/* IBTA 10.3.1: responses mean something only to a requester (RTS, SQD). */
	if ((st != DPV_QPS_RTS && st != DPV_QPS_SQD) || q->qp.sq == NULL) {
		x->stats.rx_bad_state++;
		return;
	}
	if (p->opcode == DPV_OP_RC_ACK)
		ack_rx(x, q, p);
	else
		read_resp_rx(x, q, p, frame + p->hdr_len);
}
