/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A destroyed RC QP lingers, as a TCP endpoint in TIME_WAIT does. Its responder may
 * have sent the acknowledgement of the peer's last request into a loss: the peer, whose
 * data was delivered, resends it, finds no QP, and its WQE ends in RETRY_EXC_ERR (IBTA
 * drops a packet for no QP). A NIC whose program exits right after its last completion
 * would report a delivered message as failed. So, for a while after the destroy, the
 * device keeps what the responder knew (QP number, peer, expected PSN, MSN), and a
 * duplicate from that peer for that QP number (a PSN behind the expected one) is
 * acknowledged again with the expected PSN - 1, as the live responder does (IBTA
 * 9.7.5.1, duplicate requests). Anything else for the number is dropped as before
 * (rx_unknown_qp): a new request was not delivered, and a READ or an atomic would need
 * memory or results the QP took with it.
 *
 * How long: about twice the QP's local ACK timeout, which the peer's retry timer is
 * near (its tail loss probes, when the peer is dpverbs, come sooner), at most
 * DPV_LINGER_MS. A record lives that period after the last request the QP received, a
 * QP idle that long gets none, and a duplicate answered keeps it on for another period,
 * at most two after that request. The engine keeps the device running while a record
 * lives when the program closes it or exits (dpv_xport_linger_until()).
 */
#include <errno.h>
#include <string.h>

#include <rte_mbuf.h>

#include "dpv_xport_priv.h"

/* How long a QP with local ACK timer @p ack_cycles lingers. */
static uint64_t period_of(const struct dpv_xport *x, uint64_t ack_cycles)
{
	const uint64_t max = x->linger.max_cycles;

	if (ack_cycles == 0 || ack_cycles > max / 2)
		return max;
	return 2 * ack_cycles;
}

static uint64_t ms_cycles(const struct dpv_xport *x, uint32_t ms)
{
	return x->tsc_hz / 1000 * ms;
}

void xp_linger_init(struct dpv_xport *x)
{
	x->linger.ms = DPV_LINGER_MS_DEFAULT;
	x->linger.max_cycles = ms_cycles(x, DPV_LINGER_MS_DEFAULT);
}

int dpv_xport_set_linger_ms(struct dpv_xport *x, uint32_t ms)
{
	if (ms > DPV_LINGER_MS_MAX)
		return EINVAL;
	x->linger.ms = ms;
	x->linger.max_cycles = ms_cycles(x, ms);
	if (ms == 0)
		memset(x->linger.rec, 0, sizeof(x->linger.rec));
	return 0;
}

uint32_t dpv_xport_linger_ms(const struct dpv_xport *x)
{
	return x->linger.ms;
}

static bool live(const struct xp_linger_rec *r, uint64_t now)
{
	return r->until != 0 && (int64_t)(r->until - now) > 0;
}

/* A connected RC QP: its responder answers requests (IBTA 10.3.1, RTR on). */
static bool connected(const struct xp_qp *q)
{
	const uint8_t st = q->qp.attr.state;

	return q->qp.init.type == DPV_QPT_RC &&
	       (st == DPV_QPS_RTR || st == DPV_QPS_RTS || st == DPV_QPS_SQD);
}

/* When @p q would stop lingering counted from its last request; 0: it need not. */
static uint64_t qp_until(const struct dpv_xport *x, const struct xp_qp *q, uint64_t now,
			 uint64_t *period)
{
	uint64_t p, until;

	if (x->linger.max_cycles == 0 || !connected(q) || q->req_tsc == 0)
		return 0;
	p = period_of(x, q->ack_cycles);
	until = q->req_tsc + p;
	if ((int64_t)(until - now) <= 0)
		return 0;
	*period = p;
	return until;
}

void xp_linger_qp(struct dpv_xport *x, const struct xp_qp *q)
{
	const uint64_t now = rte_get_tsc_cycles();
	struct xp_linger_rec *r = NULL;
	uint64_t until, period = 0;
	uint32_t i;

	until = qp_until(x, q, now, &period);
	if (until == 0)
		return;
	/* Its number's old record, else a free slot, else the one that ends first. */
	for (i = 0; i < XP_LINGER_MAX; i++) {
		struct xp_linger_rec *c = &x->linger.rec[i];

		if (live(c, now) && c->qpn == q->qp.qpn) {
			r = c;
			break;
		}
		if (r == NULL ||
		    (live(r, now) && (!live(c, now) || (int64_t)(c->until - r->until) < 0)))
			r = c;
	}
	r->until = until;
	r->end = q->req_tsc + 2 * period;
	r->period = period;
	r->qpn = q->qp.qpn;
	r->peer_ip = q->qp.attr.dst_ip;
	r->peer_qpn = q->qp.attr.dest_qpn;
	r->epsn = q->epsn;
	r->msn = q->msn;
	r->tos = q->qp.attr.tos;
	r->ttl = q->qp.attr.ttl;
	x->stats.linger_qps++;
}

/* IBTA 9.7.5.1: the duplicate is acknowledged with the latest PSN, expected - 1. */
static bool ack_again(struct dpv_xport *x, const struct xp_linger_rec *r)
{
	struct dpv_wire_pkt p;
	struct rte_mbuf *m;
	uint8_t *payload;

	xp_pkt_init(x, &p, DPV_OP_RC_ACK, r->peer_ip, r->qpn, r->peer_qpn,
		    psn_add(r->epsn, DPV_WIRE_PSN_MASK), r->tos, r->ttl);
	p.aeth_syndrome = DPV_AETH_ACK | XP_AETH_CREDITS_INVALID;
	p.aeth_msn = r->msn & DPV_WIRE_PSN_MASK;
	m = xp_frame_alloc(x, &p, 0, &payload);
	if (m == NULL)
		return false;
	xp_frame_send(x, m, r->peer_ip);
	x->stats.linger_acks++;
	return true;
}

bool xp_linger_rx(struct dpv_xport *x, const struct dpv_wire_pkt *p)
{
	struct xp_linger_rec *r;
	uint32_t i;

	/* Only SENDs and WRITEs that ask for an ACK, as the live responder answers a
	 * duplicate of them; the last packet of every message and every resend the
	 * peer's timer or probe makes asks for one. */
	if (x->linger.max_cycles == 0 || p->opcode >= DPV_OP_RC_READ_REQUEST || !p->ack_req)
		return false;
	for (i = 0; i < XP_LINGER_MAX; i++) {
		r = &x->linger.rec[i];
		if (r->qpn != p->dest_qp || r->peer_ip != p->src_ip || !live(r, x->now))
			continue;
		if (dpv_wire_psn_diff(p->psn, r->epsn) >= 0 || !ack_again(x, r))
			return false;
		/* The ACK may be lost too: the peer resends within its timeout. */
		r->until = (int64_t)(x->now + r->period - r->end) < 0 ? x->now + r->period
								     : r->end;
		return true;
	}
	return false;
}

static bool skipped(uint32_t ip, const uint32_t *skip_ips, unsigned int n_skip)
{
	for (unsigned int k = 0; k < n_skip; k++)
		if (skip_ips[k] == ip)
			return true;
	return false;
}

static uint64_t later(uint64_t a, uint64_t b)
{
	return a == 0 || (int64_t)(b - a) > 0 ? b : a;
}

uint64_t dpv_xport_linger_until(const struct dpv_xport *x, const uint32_t *skip_ips,
				unsigned int n_skip)
{
	const uint64_t now = rte_get_tsc_cycles();
	uint64_t latest = 0, until, period;
	uint32_t i;

	if (x->linger.max_cycles == 0)
		return 0;
	for (i = 0; i < XP_LINGER_MAX; i++) {
		const struct xp_linger_rec *r = &x->linger.rec[i];

		if (live(r, now) && !skipped(r->peer_ip, skip_ips, n_skip))
			latest = later(latest, r->until);
	}
	/* A live QP answers its peer as long as the device runs: the same period after
	 * its last request. */
	for (i = 0; i < x->nlive; i++) {
		const struct xp_qp *q = x->live[i];

		until = qp_until(x, q, now, &period);
		if (until != 0 && !skipped(q->qp.attr.dst_ip, skip_ips, n_skip))
			latest = later(latest, until);
	}
	return latest;
}
