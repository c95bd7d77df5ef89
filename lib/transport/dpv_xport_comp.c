/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The completer (IBTA 9.7.5.2 and 9.9): reads ACKs, NAKs, READ responses and atomic
 * acknowledgements on the requester side (and the READ responses of no data that
 * answer atomic writes), completes send WQEs in order, places READ data and atomics'
 * original values, waits out RNR NAKs,
 * goes back N after a PSN sequence error NAK or a local ACK timeout (IBTA 9.7.6.1),
 * asks again for READ responses that went missing, and fails the oldest WQE when the
 * retries run out.
 */
#include "dpv_xport_priv.h"

/* Everything up to @p psn is acknowledged. Forward progress (an ACK, a NAK or a READ
 * response that moves the oldest unacknowledged PSN) renews the retry budgets (IBTA
 * 9.7.5.2, 9.7.6.1: retry_cnt and rnr_retry count retries without progress) and
 * restarts the local ACK timer; a duplicate, or a response out of sequence, moves
 * nothing, so it neither renews nor spends them. */
static void ack_upto(struct dpv_xport *x, struct xp_qp *q, uint32_t psn)
{
	int32_t k = dpv_wire_psn_diff(psn, q->una) + 1;

	if (k > 0) {
		/* The window grows: by what is acknowledged below ssthresh, by one packet
		 * per window acknowledged above it. */
		if (q->cwnd < q->ssthresh) {
			q->cwnd += (uint32_t)k;
		} else {
			q->cwnd_acc += (uint32_t)k;
			while (q->cwnd_acc >= q->cwnd) {
				q->cwnd_acc -= q->cwnd;
				q->cwnd++;
			}
		}
		if (q->cwnd >= XP_WINDOW) {
			q->cwnd = XP_WINDOW;
			q->cwnd_acc = 0;
		}
		q->una = psn_add(psn, 1);
		q->probe_tsc = x->now;
		q->probes = 0;
		q->rnr_left = q->qp.attr.rnr_retry;
		if (q->retry_left != q->qp.attr.retry_cnt)
			XP_CNT(x, q, retry_resets);
		q->retry_left = q->qp.attr.retry_cnt;
		q->defer_left = XP_DEFER_MAX;
		q->deadline = x->now + q->ack_cycles;
		q->retry_tsc = x->now;
	}
}

/* The PSNs of the oldest READ or atomic before @p lim are lost: ask again for the
 * missing responses among them (IBTA 9.7.5.2: the responder takes each request as a
 * duplicate), each once: the requests go on their own, before anything new, and
 * nothing sent after them is sent again (xp_req_tx()). @p exp: the response it
 * expects. */
static void reask_upto(struct dpv_xport *x, struct xp_qp *q, uint32_t exp, uint32_t lim)
{
	if (!q->rd_gap) {
		q->rd_gap = true;
		q->rd_asked = exp;
		q->rd_lim = lim;
		q->rd_ask_tsc = x->now;
	} else if (dpv_wire_psn_diff(lim, q->rd_lim) > 0) {
		q->rd_lim = lim;
	}
	if (dpv_wire_psn_diff(q->rd_lim, q->rd_asked) > 0) {
		q->rd_reask = true;
		xp_kick(q);
	}
}

/* While a re-ask is outstanding the probe that asks again comes after twice the time
 * re-asks have taken to be answered, not after probe_cycles: a re-ask or its answer
 * lost again costs a round trip or two. */
void xp_comp_reask_wait(struct dpv_xport *x, struct xp_qp *q)
{
	const uint64_t full = q->probe_cycles << q->probes, w = 2 * q->rd_srtt;

	if (q->rd_gap && w != 0 && w < full)
		q->probe_tsc = x->now + w - full;
}

/* The oldest WQE is an incomplete READ or atomic: nothing at or after its first missing
 * response is acknowledged, whatever an ACK says. An ACK beyond it means the responder
 * has answered it and gone on, so the responses were lost (IBTA 9.7.5.2, implied NAK):
 * ask for them again (a duplicate atomic is answered from the responder's replay
 * cache, not executed again). */
static void read_hold(struct dpv_xport *x, struct xp_qp *q)
{
	struct dpv_ring *sq = q->xq;
	const struct dpv_swqe *w = xp_swqe(q, sq->cons_head);
	const struct xp_swqe_meta *m = &q->meta[sq->cons_head & sq->mask];
	uint32_t missing;

	if (!xp_wr_answered(w->opcode) || m->rd_done)
		return;
	missing = psn_add(m->first_psn, m->rd_pkts);
	if (dpv_wire_psn_diff(q->una, missing) <= 0)
		return;
	q->una = missing;
	reask_upto(x, q, missing, psn_add(m->first_psn, m->npkts));
}

void xp_comp_acked(struct dpv_xport *x, struct xp_qp *q)
{
	struct dpv_ring *sq = q->xq;
	uint32_t quiet = 0; /* acknowledged silent WQEs from cons_head on, not yet released */
	uint8_t st;

	if (sq == NULL)
		return;
	while (idx_diff(q->wqe_hi, sq->cons_head + quiet) > 0) {
		const uint32_t idx = sq->cons_head + quiet;
		const struct dpv_swqe *w = xp_swqe(q, idx);
		const struct xp_swqe_meta *m = &q->meta[idx & sq->mask];

		/* IBTA 9.7.5.2: a READ completes with its last response, an atomic with its
		 * ATOMIC ACKNOWLEDGE, not with an ACK. */
		if (xp_wr_answered(w->opcode) ? !m->rd_done
		    : dpv_wire_psn_diff(psn_add(m->first_psn, m->npkts - 1), q->una) >= 0)
			break;
		/* IBTA 10.8: an unsignaled WQE that succeeds completes silently, so its slot
		 * is all there is to give back: a run of them at once, before the next
		 * completion is written (xp_complete_swqe() frees before it shows). The
		 * device's own WQEs (a TM SRQ's READs and FINs) end their own way. */
		if (!(w->flags & DPV_WR_F_SIGNALED) && !q->qp.init.sq_sig_all && !xp_xq_dev(q, idx)) {
			quiet++;
			continue;
		}
		if (quiet != 0) {
			xp_swqe_release(q, quiet);
			quiet = 0;
		}
		xp_complete_swqe(x, q, DPV_WC_SUCCESS);
	}
	if (quiet != 0)
		xp_swqe_release(q, quiet);
	if (idx_diff(q->wqe_hi, sq->cons_head) > 0)
		read_hold(x, q);
	/* After a go-back, an acknowledgement can overtake the resend point: what the
	 * peer has is not sent again. */
	if (idx_diff(sq->cons_head, q->next_wqe) > 0) {
		q->next_wqe = sq->cons_head;
		q->next_off = 0;
		q->psn = idx_diff(q->wqe_hi, sq->cons_head) > 0
				 ? q->meta[sq->cons_head & sq->mask].first_psn
				 : q->psn_hi;
	}
	if (dpv_wire_psn_diff(q->una, q->psn) > 0 && dpv_wire_psn_diff(q->una, q->psn_hi) < 0)
		xp_req_rewind(q, q->una);
	/* A WQE the requester refused fails in its turn, and ends the QP (IBTA 10.3.1). */
	if (q->blocked_err != 0 && sq->cons_head == q->next_wqe && q->next_off == 0) {
		st = q->blocked_err;
		q->blocked_err = 0;
		xp_qp_error_mark(q);
		xp_complete_swqe(x, q, st);
		xp_qp_error(x, q, DPV_QP_EV_NONE);
	}
}

/*
 * The oldest outstanding WQE fails with @p status; the QP goes to Error, which flushes
 * the rest (IBTA 9.9). @p event: the QP went to Error on the requester's own account
 * (its retries ran out), and the application hears of it as IBV_EVENT_QP_FATAL too.
 */
static void fail_head(struct dpv_xport *x, struct xp_qp *q, uint8_t status, bool event)
{
	struct dpv_ring *sq = q->xq;

	xp_qp_error_mark(q);
	if (idx_diff(q->wqe_hi, sq->cons_head) > 0)
		xp_complete_swqe(x, q, status);
	xp_qp_error(x, q, event ? DPV_QP_EV_FATAL : DPV_QP_EV_NONE);
}

/* A loss: the window halves (a timeout: starts again from XP_CWND_MIN). */
static void window_shrink(struct xp_qp *q, bool timeout)
{
	q->ssthresh = q->cwnd / 2 > XP_CWND_MIN ? q->cwnd / 2 : XP_CWND_MIN;
	q->cwnd = timeout ? XP_CWND_MIN : q->ssthresh;
	q->cwnd_acc = 0;
}

/* One retry of retry_cnt (IBTA 9.7.6.1): an attempt that made no progress since the
 * last one (a timeout, or a sequence error NAK a timeout period after the last
 * progress); with none left the oldest WQE fails with RETRY_EXC_ERR and the QP ends.
 * @return false then. */
static bool retry_charge(struct dpv_xport *x, struct xp_qp *q)
{
	if (q->retry_left == 0) {
		XP_CNT(x, q, retry_exceeded);
		fail_head(x, q, DPV_WC_RETRY_EXC_ERR, true);
		return false;
	}
	XP_CNT(x, q, retries_spent);
	q->retry_left--;
	q->retry_tsc = x->now;
	return true;
}

void xp_comp_timeout(struct dpv_xport *x, struct xp_qp *q)
{
	XP_CNT(x, q, ack_timeouts);
	if (!retry_charge(x, q))
		return;
	window_shrink(q, true);
	XP_CNT(x, q, retrans_timeout);
	q->rd_gap = false;
	q->rd_reask = false;
	xp_req_rewind(q, q->una);
	q->deadline = x->now + q->ack_cycles;
}

/*
 * A tail loss probe: while the requester can send nothing new (everything sent, or
 * the window full) and nothing is acknowledged, the last packet it sent goes again
 * with AckReq, probe_cycles after the last progress, then twice as long after each
 * probe that drew nothing new. It costs one packet, and the ACK or NAK it draws ends
 * the wait long before the ACK timer would when the last packet, the last ACK or a NAK
 * was lost: with a small window and coalesced ACKs one lost frame holds the whole
 * window back. A READ asked again for a gap whose missing response has not come (the
 * re-asks, or their answers, were lost again) is asked again for the gaps still open.
 * A probe spends no retry.
 */
void xp_comp_probe(struct dpv_xport *x, struct xp_qp *q)
{
	q->probe_tsc = x->now;
	if (q->probes < 16)
		q->probes++;
	XP_CNT(x, q, retrans_probe);
	if (q->rd_gap) {
		q->rd_asked = q->una;
		q->rd_ask_tsc = x->now;
		q->rd_reask = true;
		q->rd_probed = true;
		xp_kick(q);
		return;
	}
	q->ackreq_next = true;
	xp_req_rewind(q, psn_add(q->psn, DPV_WIRE_PSN_MASK));
}

static void rnr_nak_rx(struct dpv_xport *x, struct xp_qp *q, uint32_t psn, uint8_t code)
{
	XP_CNT(x, q, rnr_naks_received);
	if (q->rnr_wait)
		return;
	/* rnr_retry 7 means retry for ever (IBTA 9.7.5.2). */
	if (q->qp.attr.rnr_retry != 7) {
		if (q->rnr_left == 0) {
			XP_CNT(x, q, rnr_retry_exceeded);
			fail_head(x, q, DPV_WC_RNR_RETRY_EXC_ERR, true);
			return;
		}
		q->rnr_left--;
	}
	XP_CNT(x, q, retrans_rnr);
	xp_req_rewind(q, psn);
	/* The wait is the one the responder asked for: its min_rnr_timer (IBTA Table 45).
	 * The ACK timer stands still meanwhile and restarts when the wait ends. */
	q->rnr_wait = true;
	q->deadline = x->now + xp_rnr_cycles(x, code);
	xp_timer_start(x, q);
}

/* A NAK (out of line: the ACK is ack_rx()'s common case). */
static __attribute__((noinline)) void nak_rx(struct dpv_xport *x, struct xp_qp *q,
					     uint32_t psn, uint8_t syn)
{
	/* A NAK names the PSN it refuses; every PSN before it is acknowledged. One older
	 * than anything outstanding is stale: ignored. */
	if (dpv_wire_psn_diff(psn, q->una) < 0) {
		XP_CNT(x, q, dup_responses);
		return;
	}
	ack_upto(x, q, psn_add(psn, DPV_WIRE_PSN_MASK));
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
	XP_CNT(x, q, naks_received);
	switch (syn) {
	case DPV_AETH_NAK_PSN_SEQ:
		/* IBTA 9.7.5.2.2: go back N. Sequence errors without progress count
		 * against retry_cnt as timeouts do, so a path that loses every resend
		 * ends; one at most per timeout period, as the responder NAKs again
		 * while a pass of resends is still under way. */
		XP_CNT(x, q, seq_naks_received);
		if (q->ack_cycles != 0 && x->now - q->retry_tsc >= q->ack_cycles &&
		    !retry_charge(x, q))
			break;
		XP_CNT(x, q, retrans_seq_nak);
		window_shrink(q, false);
		xp_req_rewind(q, psn);
		break;
	case DPV_AETH_NAK_REM_ACCESS:
		fail_head(x, q, DPV_WC_REM_ACCESS_ERR, false);
		break;
	case DPV_AETH_NAK_REM_OP:
		fail_head(x, q, DPV_WC_REM_OP_ERR, false);
		break;
	default:
		/* Invalid request, invalid RD request and reserved codes. */
		fail_head(x, q, DPV_WC_REM_INV_REQ_ERR, false);
		break;
	}
}

static void ack_rx(struct dpv_xport *x, struct xp_qp *q, const struct dpv_wire_pkt *p)
{
	uint8_t syn = p->aeth_syndrome;
	uint32_t psn = p->psn;

	/* IBTA 9.9: an acknowledgement of a PSN never sent is a ghost: ignored. */
	if (unlikely(dpv_wire_psn_diff(psn, q->psn_hi) >= 0)) {
		XP_CNT(x, q, ghost_responses);
		return;
	}
	if (unlikely((syn & 0xe0) != DPV_AETH_ACK)) {
		nak_rx(x, q, psn, syn);
		return;
	}
	if (dpv_wire_psn_diff(psn, q->una) < 0)
		XP_CNT(x, q, dup_responses);
	ack_upto(x, q, psn);
	xp_comp_acked(x, q);
}

static bool is_last_resp(uint8_t op)
{
	return op == DPV_OP_RC_READ_RESP_LAST || op == DPV_OP_RC_READ_RESP_ONLY;
}

/* The READ or atomic a response answers is done: its resource is free again. */
static void answered(struct dpv_xport *x, struct xp_qp *q, struct xp_swqe_meta *m)
{
	m->rd_done = true;
	if (m->req_sent) {
		m->req_sent = false;
		q->reads_out--;
	}
	xp_comp_acked(x, q);
}

/* IBTA 9.4.5: the ATOMIC ACKNOWLEDGE of the atomic at the head: the value the responder
 * found goes into the WQE's 8-byte buffer, in host order as the responder's memory
 * held it. */
static void atomic_ack_rx(struct dpv_xport *x, struct xp_qp *q, const struct dpv_wire_pkt *p,
			  const struct dpv_swqe *w, struct xp_swqe_meta *m)
{
	uint64_t orig = p->atomic_orig;
	uint8_t st;

	if (p->opcode != DPV_OP_RC_ATOMIC_ACK) {
		fail_head(x, q, DPV_WC_BAD_RESP_ERR, false);
		return;
	}
	st = xp_sgl_scatter(x, w->sge, w->num_sge, q->qp.init.pd, 0, &orig, sizeof(orig));
	if (st != DPV_WC_SUCCESS) {
		x->stats.access_errors++;
		fail_head(x, q, st, false);
		return;
	}
	ack_upto(x, q, p->psn);
	m->rd_pkts = 1;
	answered(x, q, m);
}

/* IBTA 1.5: the answer to the atomic write at the head, an RDMA READ response ONLY of no
 * data; anything else is a bad response. */
static void atomic_write_resp_rx(struct dpv_xport *x, struct xp_qp *q,
				 const struct dpv_wire_pkt *p, struct xp_swqe_meta *m)
{
	if (p->opcode != DPV_OP_RC_READ_RESP_ONLY || p->payload_len != 0) {
		fail_head(x, q, DPV_WC_BAD_RESP_ERR, false);
		return;
	}
	ack_upto(x, q, p->psn);
	m->rd_pkts = 1;
	answered(x, q, m);
}

/* Place READ response @p idx of the READ @p w, @p m (checked against what that response
 * must be: its length, and that the READ's last one is last). false: the WQE failed. */
static bool read_place(struct dpv_xport *x, struct xp_qp *q, const struct dpv_wire_pkt *p,
		       const uint8_t *payload, const struct dpv_swqe *w,
		       const struct xp_swqe_meta *m, uint32_t idx)
{
	uint32_t plen = m->len - idx * q->mtu;
	void *dst;
	uint8_t st;

	if (plen > q->mtu)
		plen = q->mtu;
	/* Responses to a READ asked again start with FIRST mid-message, and those to a
	 * gap asked for alone end with LAST there; those to the first request may still
	 * be on their way: what must hold is the length of each and that the READ's last
	 * one is last. */
	if (p->opcode == DPV_OP_RC_ATOMIC_ACK ||
	    (idx == m->npkts - 1 && !is_last_resp(p->opcode)) || p->payload_len != plen) {
		fail_head(x, q, DPV_WC_BAD_RESP_ERR, false);
		return false;
	}
	dst = xp_sgl_span(x, w->sge, w->num_sge, m->pd, DPV_ACCESS_LOCAL_WRITE,
			  (uint64_t)idx * q->mtu, plen);
	if (dst != NULL)
		st = xp_copy(x, dst, payload, plen) ? DPV_WC_SUCCESS : DPV_WC_LOC_PROT_ERR;
	else
		st = xp_sgl_scatter(x, w->sge, w->num_sge, m->pd, (uint64_t)idx * q->mtu,
				    payload, plen);
	if (st != DPV_WC_SUCCESS) {
		x->stats.access_errors++;
		fail_head(x, q, st, false);
		return false;
	}
	return true;
}

static void ahead_flip(struct xp_qp *q, uint32_t psn)
{
	const uint32_t b = psn % XP_RD_AHEAD;

	q->rd_ahead[b / 64] ^= 1ull << (b % 64);
}

/* The oldest READ or atomic @p m lacks the response it expects: ask again for what the
 * link has lost, not merely delayed: the PSNs XP_RD_REORDER or more behind the highest
 * response come, every one of a READ whose last response has come, or the response of
 * an atomic a later one has passed. */
static void read_gap(struct dpv_xport *x, struct xp_qp *q, const struct dpv_swqe *w,
		     const struct xp_swqe_meta *m)
{
	const uint32_t exp = psn_add(m->first_psn, m->rd_pkts);
	const uint32_t end = psn_add(m->first_psn, m->npkts);
	int32_t hi = dpv_wire_psn_diff(q->rd_hi, exp);

	if (hi < 0)
		return;
	if (xp_wr_atomic(w->opcode) || dpv_wire_psn_diff(q->rd_hi, end) >= -1)
		reask_upto(x, q, exp, end);
	else if (hi >= (int32_t)XP_RD_REORDER)
		reask_upto(x, q, exp, psn_add(q->rd_hi, 1u - XP_RD_REORDER));
}

/* A READ response ahead of the one expected: placed in the READ it belongs to (the
 * oldest, or one after it) and remembered by PSN. false: the WQE failed. */
static bool read_ahead(struct dpv_xport *x, struct xp_qp *q, const struct dpv_wire_pkt *p,
		       const uint8_t *payload, uint32_t from)
{
	for (uint32_t j = from; idx_diff(q->wqe_hi, j) > 0; j++) {
		const struct dpv_swqe *w = xp_swqe(q, j);
		const struct xp_swqe_meta *m = &q->meta[j & q->xq->mask];
		int32_t d = dpv_wire_psn_diff(p->psn, m->first_psn);

		if (d < 0)
			return true;
		if ((uint32_t)d >= m->npkts)
			continue;
		/* An atomic's result is taken in its turn only. */
		if (w->opcode != DPV_WR_RDMA_READ || m->rd_done || (uint32_t)d < m->rd_pkts)
			return true;
		if (!read_place(x, q, p, payload, w, m, (uint32_t)d))
			return false;
		ahead_flip(q, p->psn);
		return true;
	}
	return true;
}

/* The oldest READ took its expected response: it and the READs after it take in turn
 * the responses kept ahead, complete when all have come (each response acknowledges
 * its own PSN and every request before it: the window moves with a long READ, and the
 * timer restarts), and the next READ still short of one is asked again for it if it is
 * lost. */
static void read_follow(struct dpv_xport *x, struct xp_qp *q)
{
	for (;;) {
		uint32_t i = xp_rd_head(q, q->xq->cons_head);
		const struct dpv_swqe *w;
		struct xp_swqe_meta *m;

		if (q->qp.attr.state == DPV_QPS_ERR)
			return;
		if (idx_diff(q->wqe_hi, i) <= 0) {
			/* No READ outstanding: no gap either. */
			q->rd_gap = false;
			q->rd_reask = false;
			return;
		}
		w = xp_swqe(q, i);
		m = &q->meta[i & q->xq->mask];
		while (m->rd_pkts < m->npkts && xp_rd_ahead_test(q, psn_add(m->first_psn, m->rd_pkts))) {
			ahead_flip(q, psn_add(m->first_psn, m->rd_pkts));
			m->rd_pkts++;
		}
		/* Every gap asked for has come. */
		if (q->rd_gap &&
		    dpv_wire_psn_diff(psn_add(m->first_psn, m->rd_pkts), q->rd_asked) >= 0) {
			q->rd_gap = false;
			q->rd_reask = false;
		}
		if (m->rd_pkts < m->npkts) {
			if (m->rd_pkts != 0)
				ack_upto(x, q, psn_add(m->first_psn, m->rd_pkts - 1));
			read_gap(x, q, w, m);
			xp_comp_reask_wait(x, q);
			return;
		}
		ack_upto(x, q, psn_add(m->first_psn, m->rd_pkts - 1));
		answered(x, q, m);
	}
}

/* IBTA 9.7.5.2: READ responses and atomic acknowledgements are taken in order for the
 * oldest READ or atomic not yet complete; each is checked against what that WQE
 * expects before its data lands. A READ response ahead of the next one expected, by
 * less than XP_RD_AHEAD PSNs, is placed and kept (rd_ahead), whichever READ it is of,
 * so a response the link only delayed costs nothing and one it lost costs a re-ask
 * of that one (read_gap()). */
static __attribute__((noinline)) void read_resp_rx(struct dpv_xport *x, struct xp_qp *q,
						   const struct dpv_wire_pkt *p,
						   const uint8_t *payload)
{
	struct dpv_ring *sq = q->xq;
	uint32_t i = xp_rd_head(q, sq->cons_head);
	const struct dpv_swqe *w;
	struct xp_swqe_meta *m;
	int32_t d;

	if (idx_diff(q->wqe_hi, i) <= 0) {
		XP_CNT(x, q, dup_responses);
		return;
	}
	w = xp_swqe(q, i);
	m = &q->meta[i & sq->mask];
	d = dpv_wire_psn_diff(p->psn, psn_add(m->first_psn, m->rd_pkts));
	/* Behind, or ahead and kept already: a duplicate (an answer to a READ asked
	 * again, or a copy the link made). */
	if (d < 0 || (d > 0 && d < (int32_t)XP_RD_AHEAD && xp_rd_ahead_test(q, p->psn))) {
		XP_CNT(x, q, dup_responses);
		return;
	}
	if (dpv_wire_psn_diff(p->psn, q->rd_hi) > 0)
		q->rd_hi = p->psn;
	/* A READ response acknowledges every request before the READ (IBTA 9.7.5.2). */
	ack_upto(x, q, psn_add(m->first_psn, DPV_WIRE_PSN_MASK));
	xp_comp_acked(x, q);
	if (q->qp.attr.state == DPV_QPS_ERR || sq->cons_head != i)
		return;
	if (d > 0) {
		XP_CNT(x, q, out_of_seq);
		if (d < (int32_t)XP_RD_AHEAD && !read_ahead(x, q, p, payload, i))
			return;
		read_gap(x, q, w, m);
		return;
	}
	/* The answer to the oldest re-ask outstanding (or the response it asked for,
	 * delayed): how long re-asks take, and the next one's wait starts. */
	if (q->rd_gap) {
		uint64_t rtt = x->now - q->rd_ask_tsc;

		q->rd_srtt = q->rd_srtt == 0 ? rtt : (7 * q->rd_srtt + rtt) / 8;
		q->rd_ask_tsc = x->now;
	}
	if (xp_wr_atomic(w->opcode)) {
		atomic_ack_rx(x, q, p, w, m);
	} else if (w->opcode == DPV_WR_ATOMIC_WRITE) {
		atomic_write_resp_rx(x, q, p, m);
	} else {
		if (!read_place(x, q, p, payload, w, m, m->rd_pkts))
			return;
		m->rd_pkts++;
	}
	read_follow(x, q);
}

/* Whether the requester of an RC QP on its own send queue, in RTS, has anything left
 * to send now that an ACK came: a WQE not yet (or not wholly) sent, which the window,
 * a fence or the READ slots may have held back, a go-back's resends (next_wqe moves
 * back with them) or READ gaps to ask for. New WQEs ring their own doorbell. */
static bool req_waiting(struct xp_qp *q)
{
	struct dpv_ring *sq = q->xq;
	uint32_t head, ready;

	if (q->xq != q->qp.sq || q->qp.attr.state != DPV_QPS_RTS || q->rd_reask)
		return true;
	ready = dpv_ring_peek(sq, dpv_ring_count(sq), &head);
	return idx_diff(head + ready, q->next_wqe) > 0;
}

void xp_comp_rx(struct dpv_xport *x, struct xp_qp *q, const struct dpv_wire_pkt *p,
		const uint8_t *frame)
{
	uint8_t st = q->qp.attr.state;

	/* IBTA 10.3.1: responses mean something only to a requester (RTS, SQD). */
	if ((st != DPV_QPS_RTS && st != DPV_QPS_SQD) || q->xq == NULL) {
		x->stats.rx_bad_state++;
		return;
	}
	XP_CNT(x, q, rx_packets);
	if (p->opcode == DPV_OP_RC_ACK) {
		ack_rx(x, q, p);
		/* An ACK may open the window, end a fence or free a READ slot: the QP is
		 * visited if its requester has anything it held back. */
		if (req_waiting(q))
			xp_kick(q);
		return;
	}
	read_resp_rx(x, q, p, frame + p->hdr_len);
	xp_kick(q);
}
