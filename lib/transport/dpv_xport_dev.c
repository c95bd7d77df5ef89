/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The device: creation and destruction, the receive demux that checks each frame (IBTA
 * 9.6, A17.4) and hands it to the responder, the completer or UD / UC receive, the
 * transmit rounds over the QPs whose doorbells rang, building and sending frames (and
 * the loopback of frames a device sends itself), and the timers that dpv_xport_tick()
 * runs (IBTA 9.7.6).
 */
#include <errno.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>

#include "dpv_xport_priv.h"

/* ---- frames ---- */

uint32_t xp_active_mtu(const struct dpv_port *port)
{
	/* RoCEv2 bytes around a payload inside the IP MTU: IPv4, UDP, BTH, the largest
	 * extension headers (RETH + ImmDt), ICRC. */
	const uint32_t ip_over = DPV_WIRE_IPV4_LEN + DPV_WIRE_UDP_LEN + DPV_WIRE_BTH_LEN +
				 DPV_WIRE_RETH_LEN + DPV_WIRE_IMM_LEN + DPV_WIRE_ICRC_LEN;
	uint32_t room = UINT32_MAX, mtu;

	if (port->pool != NULL)
		room = rte_pktmbuf_data_room_size(port->pool) - RTE_PKTMBUF_HEADROOM;
	for (mtu = 4096; mtu > 256; mtu >>= 1)
		if (mtu + ip_over <= port->mtu && DPV_WIRE_ETH_LEN + mtu + ip_over <= room)
			break;
	return mtu;
}

uint8_t dpv_xport_active_mtu(const struct dpv_xport *x)
{
	uint32_t mtu = xp_active_mtu(x->port);
	uint8_t n = 1;

	while ((256u << (n - 1)) < mtu)
		n++;
	return n;
}

/* IBTA A17.5.1.2: the UDP source port carries flow entropy. One hash of the two QP
 * numbers, the same both ways, so a connection is one flow in each direction. */
static uint16_t flow_sport(uint32_t a, uint32_t b)
{
	uint32_t h = ((a + b) ^ ((a ^ b) << 13)) * 2654435761u;

	return (uint16_t)(0xc000u | ((h >> 16) & 0x3fffu));
}

/* The fields of a packet that are its connection's: the same for every packet between
 * two QPs. */
static void pkt_conn(const struct dpv_port *port, struct dpv_wire_pkt *p, uint32_t dst_ip,
		     uint32_t src_qpn, uint32_t dest_qpn, uint8_t tos, uint8_t ttl)
{
	/* The port fills the destination MAC from ARP; a frame to ourselves never leaves. */
	if (dst_ip == port->ipv4)
		memcpy(p->dst_mac, port->mac.addr_bytes, 6);
	memcpy(p->src_mac, port->mac.addr_bytes, 6);
	p->src_ip = port->ipv4;
	p->dst_ip = dst_ip;
	p->tos = tos;
	p->ttl = ttl != 0 ? ttl : 64;
	p->udp_sport = flow_sport(src_qpn, dest_qpn);
	p->pkey = DPV_WIRE_PKEY_DEFAULT;
	p->dest_qp = dest_qpn & DPV_WIRE_QPN_MASK;
}

void xp_pkt_init(struct dpv_xport *x, struct dpv_wire_pkt *p, uint8_t opcode, uint32_t dst_ip,
		 uint32_t src_qpn, uint32_t dest_qpn, uint32_t psn, uint8_t tos, uint8_t ttl)
{
	memset(p, 0, sizeof(*p));
	pkt_conn(x->port, p, dst_ip, src_qpn, dest_qpn, tos, ttl);
	p->ip_id = x->ip_id++;
	p->opcode = opcode;
	p->psn = psn & DPV_WIRE_PSN_MASK;
}

void xp_conn_tmpl_init(struct dpv_xport *x, struct xp_qp *q)
{
	const struct dpv_qp_attr *a = &q->qp.attr;
	struct dpv_wire_pkt p;

	memset(&p, 0, sizeof(p));
	pkt_conn(x->port, &p, a->dst_ip, q->qp.qpn, a->dest_qpn, a->tos, a->ttl);
	dpv_wire_tmpl_init(&q->tmpl, &p);
}

/* A fresh mbuf for a frame; NULL (counted) when the pool is empty. The MTU is clamped
 * to what one mbuf holds (xp_active_mtu()), so any frame's headers fit. */
static inline struct rte_mbuf *frame_mbuf(struct dpv_xport *x)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(x->port->pool);

	if (unlikely(m == NULL))
		x->stats.tx_no_mbuf++;
	return m;
}

/* The headers of @p m are written, @p hl bytes (0: refused): the frame takes its
 * length, or the mbuf goes back to the pool. */
static inline struct rte_mbuf *frame_sized(struct dpv_xport *x, struct rte_mbuf *m,
					   uint32_t hl, uint32_t payload_len, uint8_t **payload)
{
	const uint32_t flen = hl + payload_len + dpv_wire_pad_len(payload_len) + DPV_WIRE_ICRC_LEN;

	if (unlikely(hl == 0 || flen > rte_pktmbuf_tailroom(m))) {
		/* A bug, not a state: the MTU is clamped to what one mbuf holds. */
		rte_pktmbuf_free(m);
		x->stats.tx_no_mbuf++;
		return NULL;
	}
	m->data_len = (uint16_t)flen;
	m->pkt_len = flen;
	*payload = rte_pktmbuf_mtod_offset(m, uint8_t *, hl);
	return m;
}

struct rte_mbuf *xp_frame_alloc(struct dpv_xport *x, struct dpv_wire_pkt *p,
				uint32_t payload_len, uint8_t **payload)
{
	struct rte_mbuf *m = frame_mbuf(x);

	if (m == NULL)
		return NULL;
	return frame_sized(x, m, dpv_wire_write_headers(rte_pktmbuf_mtod(m, void *), p,
							  payload_len),
			   payload_len, payload);
}

struct rte_mbuf *xp_conn_frame(struct dpv_xport *x, struct xp_qp *q, struct dpv_wire_pkt *p,
			       uint32_t payload_len, uint8_t **payload)
{
	struct rte_mbuf *m = frame_mbuf(x);

	if (m == NULL)
		return NULL;
	p->ip_id = x->ip_id++;
	return frame_sized(x, m, dpv_wire_tmpl_write(rte_pktmbuf_mtod(m, void *), &q->tmpl, p,
						     payload_len),
			   payload_len, payload);
}

void xp_tx_flush(struct dpv_xport *x)
{
	if (x->ntx == 0)
		return;
	dpv_port_tx(x->port, x->txb, x->ntx);
	x->ntx = 0;
}

void xp_frame_send(struct dpv_xport *x, struct rte_mbuf *m, uint32_t dst_ip)
{
	dpv_wire_finish(rte_pktmbuf_mtod(m, void *), rte_pktmbuf_data_len(m));
	x->stats.tx_packets++;
	if (dst_ip == x->port->ipv4) {
		/* Two QPs of one device: the frame is received here, never sent. */
		if (x->loop_tail - x->loop_head == XP_LOOPQ) {
			x->stats.tx_dropped++;
			rte_pktmbuf_free(m);
			return;
		}
		x->loopq[x->loop_tail++ & (XP_LOOPQ - 1)] = m;
		return;
	}
	x->txb[x->ntx++] = m;
	if (x->ntx == XP_TXB)
		xp_tx_flush(x);
}

/* ---- the device ---- */

int dpv_xport_create(struct dpv_port *port, struct dpv_mr_table *mrs, struct dpv_xport **out)
{
	struct dpv_xport *x;

	x = rte_zmalloc_socket("dpv_xport", sizeof(*x), DPV_CACHE_LINE, port->socket);
	if (x == NULL)
		return ENOMEM;
	x->port = port;
	x->mrs = mrs;
	x->next_qpn = 2;
	x->tsc_hz = rte_get_tsc_hz();
	x->quiet_cycles = x->tsc_hz / 1000000 * XP_QUIET_US;
	x->now = rte_get_tsc_cycles();
	xp_linger_init(x);
	*out = x;
	return 0;
}

void dpv_xport_destroy(struct dpv_xport *x)
{
	if (x == NULL)
		return;
	while (x->nlive > 0)
		dpv_qp_destroy(x, &x->live[x->nlive - 1]->qp);
	xp_tx_flush(x);
	while (x->loop_head != x->loop_tail)
		rte_pktmbuf_free(x->loopq[x->loop_head++ & (XP_LOOPQ - 1)]);
	rte_free(x);
}

struct dpv_qp *dpv_xport_qp(struct dpv_xport *x, uint32_t qpn)
{
	return qpn < DPV_MAX_QP && x->qps[qpn] != NULL ? &x->qps[qpn]->qp : NULL;
}

void dpv_xport_stats_get(const struct dpv_xport *x, struct dpv_xport_stats *st)
{
	memcpy(st, &x->stats, sizeof(*st));
}

const struct dpv_xport_stats *dpv_xport_stats_ref(const struct dpv_xport *x)
{
	return &x->stats;
}

/* The RC opcodes of a request (bit set), as one mask over IBTA Table 38's RC rows:
 * SEND, WRITE, READ REQUEST, CMP_SWAP, FETCH_ADD, SEND with Invalidate, ATOMIC WRITE. */
#define RC_REQUEST_MASK \
	(((1u << (DPV_OP_RC_READ_REQUEST + 1)) - 1) | 1u << DPV_OP_RC_CMP_SWAP | \
	 1u << DPV_OP_RC_FETCH_ADD | 1u << DPV_OP_RC_SEND_LAST_INV | 1u << DPV_OP_RC_SEND_ONLY_INV | \
	 1u << DPV_OP_RC_ATOMIC_WRITE)

static bool rc_request(uint8_t opcode)
{
	return opcode < 32 && (RC_REQUEST_MASK >> opcode & 1u);
}

/* A frame for an XRC QP: RC's checks and state machines once its opcode is RC's. */
static void xrc_rx(struct dpv_xport *x, struct xp_qp *q, struct dpv_wire_pkt *p,
		   const uint8_t *frame)
{
	bool request;

	if (p->src_ip != q->qp.attr.dst_ip && q->qp.attr.dst_ip != 0) {
		x->stats.rx_bad_src++;
		return;
	}
	/* IBTA 9.6: the opcode's transport must be the QP's; an initiator takes only
	 * responses (it has no receive side), a target only requests (it sends none). */
	if (DPV_WIRE_OP_TRANSPORT(p->opcode) != DPV_WIRE_OP_XRC) {
		x->stats.rx_bad[DPV_WIRE_E_OPCODE]++;
		return;
	}
	p->opcode -= DPV_WIRE_OP_XRC;
	request = rc_request(p->opcode);
	if ((!request && p->opcode > DPV_OP_RC_FETCH_ADD) ||
	    request != (q->qp.init.xrc == DPV_XRC_TGT)) {
		x->stats.rx_bad[DPV_WIRE_E_OPCODE]++;
		return;
	}
	if (request) {
		q->req_tsc = x->now;
		xp_resp_rx(x, q, p, frame);
	} else {
		xp_comp_rx(x, q, p, frame);
	}
}

/* A frame for no QP of the device (QP 1 is never an application QP's: the GSI's
 * frames come here), or for a UD, UC or XRC QP. */
static __attribute__((noinline)) void rx_other(struct dpv_xport *x, struct xp_qp *q,
					       struct dpv_wire_pkt *p, const uint8_t *frame)
{
	if (q == NULL) {
		if (p->dest_qp == DPV_GSI_QPN)
			xp_gsi_rx(x, p, frame);
		else if (!xp_linger_rx(x, p))
			x->stats.rx_unknown_qp++;
		return;
	}
	if (q->op_base == DPV_WIRE_OP_XRC) {
		xrc_rx(x, q, p, frame);
		return;
	}
	if (q->qp.init.type == DPV_QPT_UD) {
		if (p->opcode != DPV_OP_UD_SEND_ONLY && p->opcode != DPV_OP_UD_SEND_ONLY_IMM)
			x->stats.rx_bad[DPV_WIRE_E_OPCODE]++;
		else
			xp_ud_rx(x, q, p, frame);
		return;
	}
	/* UC: the peer's address as for RC (rx_one()). */
	if (p->src_ip != q->qp.attr.dst_ip && q->qp.attr.dst_ip != 0)
		x->stats.rx_bad_src++;
	/* IBTA 9.6: the opcode's transport must be the QP's. */
	else if (DPV_WIRE_OP_TRANSPORT(p->opcode) != DPV_WIRE_OP_UC)
		x->stats.rx_bad[DPV_WIRE_E_OPCODE]++;
	else
		xp_uc_rx(x, q, p, frame);
}

/* One received frame: checked (IBTA 9.6 packet checks, A17.4 for RoCEv2) and handed to
 * the responder (requests) or the completer (responses). */
static void rx_one(struct dpv_xport *x, struct rte_mbuf *m)
{
	struct dpv_wire_pkt p;
	enum dpv_wire_err err;
	const uint8_t *frame;
	struct xp_qp *q;

	x->stats.rx_packets++;
	if (unlikely(m->nb_segs > 1) && rte_pktmbuf_linearize(m) != 0) {
		x->stats.rx_bad[DPV_WIRE_E_SHORT]++;
		return;
	}
	frame = rte_pktmbuf_mtod(m, const uint8_t *);
	err = dpv_wire_parse_rx(frame, rte_pktmbuf_data_len(m), &p);
	if (unlikely(err != DPV_WIRE_OK)) {
		x->stats.rx_bad[err]++;
		return;
	}
	if (unlikely(p.dst_ip != x->port->ipv4)) {
		x->stats.rx_bad[DPV_WIRE_E_NOT_ROCE]++;
		return;
	}
	/* IBTA 9.6 (P_Key check): one partition, the default, in either membership. */
	if (unlikely((p.pkey & 0x7fff) != (DPV_WIRE_PKEY_DEFAULT & 0x7fff))) {
		x->stats.rx_bad_pkey++;
		return;
	}
	q = p.dest_qp < DPV_MAX_QP ? x->qps[p.dest_qp] : NULL;
	if (unlikely(q == NULL || q->op_base != DPV_WIRE_OP_RC)) {
		rx_other(x, q, &p, frame);
		return;
	}
	/* An RC or UC QP talks to one peer (its AH): frames from any other address are not
	 * its connection's, whatever their QPN and PSN say (rxe checks the same). A QP that
	 * has no peer yet leaves the refusal to its state check. */
	if (unlikely(p.src_ip != q->qp.attr.dst_ip && q->qp.attr.dst_ip != 0)) {
		x->stats.rx_bad_src++;
		return;
	}
	/* IBTA 9.6: the opcode's transport must be the QP's. */
	if (rc_request(p.opcode)) {
		q->req_tsc = x->now; /* how long it lingers when destroyed */
		xp_resp_rx(x, q, &p, frame);
	} else if (likely(p.opcode <= DPV_OP_RC_FETCH_ADD)) {
		xp_comp_rx(x, q, &p, frame);
	} else {
		x->stats.rx_bad[DPV_WIRE_E_OPCODE]++;
	}
}

/* What the frames received so far caused goes out: the coalesced ACKs, the frames
 * batched. */
static inline void rx_flush(struct dpv_xport *x)
{
	if (x->nack != 0)
		xp_resp_flush_acks(x);
	if (x->ntx != 0)
		xp_tx_flush(x);
}

/* Frames in, each freed when done with; every XP_RX_CHUNK of them, and after the
 * last, what they caused goes out. */
static void rx_burst(struct dpv_xport *x, struct rte_mbuf **pkts, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		rx_one(x, pkts[i]);
		/* rx_one() left every frame in one segment: freed inline, without the
		 * chain walk. */
		if (likely(pkts[i]->nb_segs == 1))
			rte_pktmbuf_free_seg(pkts[i]);
		else
			rte_pktmbuf_free(pkts[i]);
		if (unlikely(i % XP_RX_CHUNK == XP_RX_CHUNK - 1))
			rx_flush(x);
	}
	rx_flush(x);
}

/* Receive what the device sent itself, until nothing more comes back. */
static __attribute__((noinline)) void loop_drain_all(struct dpv_xport *x)
{
	struct rte_mbuf *chunk[XP_RX_CHUNK];
	uint32_t n;

	while (x->loop_head != x->loop_tail) {
		for (n = 0; n < XP_RX_CHUNK && x->loop_head != x->loop_tail; n++)
			chunk[n] = x->loopq[x->loop_head++ & (XP_LOOPQ - 1)];
		rx_burst(x, chunk, n);
	}
}

static inline void loop_drain(struct dpv_xport *x)
{
	if (x->loop_head != x->loop_tail)
		loop_drain_all(x);
}

void dpv_xport_rx(struct dpv_xport *x, struct rte_mbuf **pkts, uint16_t n)
{
	x->now = rte_get_tsc_cycles();
	x->announce_on = true;
	rx_burst(x, pkts, n);
	loop_drain(x);
	x->announce_on = false;
	if (x->nannounce != 0)
		xp_cq_announce(x);
	if (unlikely(x->cq_overrun))
		xp_cq_overruns(x);
}

/* Inlined in both callers: the requester's per-packet look pays no extra call. */
static inline uint32_t port_room(struct dpv_xport *x, uint32_t dst)
{
	uint32_t room;

	if (dst == x->port->ipv4)
		return UINT32_MAX;
	room = dpv_port_tx_room(x->port, dst);
	if (room <= x->ntx) {
		/* Frames batched here are not the port's yet: hand them over first, or
		 * each QP to this neighbour would count on the same room. */
		xp_tx_flush(x);
		return dpv_port_tx_room(x->port, dst);
	}
	return room - x->ntx;
}

uint32_t xp_port_room(struct dpv_xport *x, uint32_t dst)
{
	return port_room(x, dst);
}

uint32_t xp_dst_room(struct dpv_xport *x, struct xp_qp *q, uint32_t dst)
{
	uint32_t room = port_room(x, dst);

	if (room == 0)
		xp_kick(q);
	return room;
}

/* What one QP sends in one visit. */
static uint32_t qp_tx(struct dpv_xport *x, struct xp_qp *q, uint32_t quota)
{
	uint32_t sent = 0;

	switch (q->qp.attr.state) {
	case DPV_QPS_ERR:
	case DPV_QPS_SQE:
		xp_qp_flush_new(x, q);
		if (q->qp.attr.state == DPV_QPS_ERR)
			return 0;
		break;
	case DPV_QPS_RTR:
	case DPV_QPS_RTS:
	case DPV_QPS_SQD:
		sent = xp_resp_tx(x, q, quota);
		if (q->qp.attr.state != DPV_QPS_RTR && q->qp.attr.state != DPV_QPS_ERR)
			sent += xp_req_tx(x, q, quota - sent);
		break;
	default:
		break;
	}
	return sent;
}

/* Take the doorbells rung so far: a bit per QP in @p ready, a bit per word in the
 * return value. */
static uint64_t db_take(struct dpv_xport *x, uint64_t *ready)
{
	uint64_t sum, s;
	uint32_t w;

	if (__atomic_load_n(&x->db_summary, __ATOMIC_RELAXED) == 0)
		return 0;
	sum = __atomic_exchange_n(&x->db_summary, 0, __ATOMIC_ACQUIRE);
	for (s = sum; s != 0; s &= s - 1) {
		w = (uint32_t)__builtin_ctzll(s);
		ready[w] = __atomic_exchange_n(&x->db[w], 0, __ATOMIC_ACQUIRE);
		if (ready[w] == 0)
			sum &= ~(1ull << w);
	}
	return sum;
}

/* The next QP number at or after @p from (cyclically) with its bit in @p ready, taken
 * out of it. @p sum is not 0. */
static inline uint32_t db_next(uint64_t *ready, uint64_t *sum, uint32_t from)
{
	uint32_t w = from >> 6, b;
	uint64_t s = *sum, m = 0, later;

	/* One QP rang, a latency-bound program's usual round: there is no order to keep. */
	if ((s & (s - 1)) == 0) {
		w = (uint32_t)__builtin_ctzll(s);
		m = ready[w];
		if ((m & (m - 1)) == 0) {
			ready[w] = 0;
			*sum = 0;
			return w << 6 | (uint32_t)__builtin_ctzll(m);
		}
		m = 0;
		w = from >> 6;
	}
	if (s >> w & 1)
		m = ready[w] & (~0ull << (from & 63));
	if (m == 0) {
		/* A later word, else the first word from the start (w's lower bits too). */
		later = s & (~1ull << w);
		w = (uint32_t)__builtin_ctzll(later != 0 ? later : s);
		m = ready[w];
	}
	b = (uint32_t)__builtin_ctzll(m);
	/* Only bit b leaves the word: m may be the word less the QPs before @p from,
	 * whose doorbells stay for a later turn. */
	ready[w] &= ~(1ull << b);
	if (ready[w] == 0)
		*sum = s & ~(1ull << w);
	return w << 6 | b;
}

/* One QP's turn: up to a quantum of @p left. */
static inline uint32_t qp_turn(struct dpv_xport *x, uint32_t qpn, uint32_t left)
{
	const uint32_t quota = left < XP_QUANTUM ? left : XP_QUANTUM;
	struct xp_qp *q = x->qps[qpn];
	uint64_t no_mbuf;
	uint32_t n;

	x->db_next = (qpn + 1) & (DPV_MAX_QP - 1);
	if (unlikely(q == NULL))
		return 0;
	no_mbuf = x->stats.tx_no_mbuf;
	n = qp_tx(x, q, quota);
	/* Full quantum: more may wait. No mbuf: try again next time. */
	if (n == quota || x->stats.tx_no_mbuf != no_mbuf)
		xp_kick(q);
	if (unlikely(x->loop_tail - x->loop_head >= XP_LOOPQ / 2)) {
		xp_tx_flush(x);
		loop_drain(x);
	}
	return n;
}

/* dpv_xport_tx() with a doorbell rung or something waiting. Out of line: its frame
 * (the ready words of every QP) is not the common empty poll's. */
static __attribute__((noinline)) uint32_t tx_rounds(struct dpv_xport *x, uint32_t budget)
{
	uint64_t ready[DPV_MAX_QP / 64], sum;
	uint32_t sent = 0, progress, n, w;

	x->now = rte_get_tsc_cycles();
	/* Rounds over the QPs whose doorbell rang, each a quantum in turn, from where the
	 * last call stopped; a QP that used its whole quantum rings again for the next
	 * round. What the budget leaves is rung back for the next call. */
	while (sent < budget && (sum = db_take(x, ready)) != 0) {
		progress = 0;
		do {
			n = qp_turn(x, db_next(ready, &sum, x->db_next), budget - sent);
			sent += n;
			progress += n;
		} while (sum != 0 && sent < budget);
		for (; sum != 0; sum &= sum - 1) {
			w = (uint32_t)__builtin_ctzll(sum);
			__atomic_fetch_or(&x->db[w], ready[w], __ATOMIC_RELAXED);
			__atomic_fetch_or(&x->db_summary, 1ull << w, __ATOMIC_RELEASE);
		}
		if (progress == 0)
			break;
	}
	xp_tx_flush(x);
	if (x->loop_head != x->loop_tail)
		loop_drain(x);
	if (unlikely(x->cq_overrun))
		xp_cq_overruns(x);
	return sent;
}

uint32_t dpv_xport_tx(struct dpv_xport *x, uint32_t budget)
{
	/* No doorbell rang and nothing waits: the common poll, without a clock read. */
	if (__atomic_load_n(&x->db_summary, __ATOMIC_RELAXED) == 0 && x->ntx == 0 &&
	    x->loop_head == x->loop_tail && likely(!x->cq_overrun))
		return 0;
	return tx_rounds(x, budget);
}

/* IBTA Table 45: the RNR NAK timer field, in units of 10 microseconds. */
static const uint32_t rnr_timer_10us[32] = {
	65536, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192,
	256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576,
	32768, 49152,
};

uint64_t xp_rnr_cycles(const struct dpv_xport *x, uint8_t code)
{
	return x->tsc_hz / 100000 * rnr_timer_10us[code & 31];
}

void xp_timer_start(struct dpv_xport *x, struct xp_qp *q)
{
	if (q->timed_idx != XP_TIMED_NONE)
		return;
	q->timed_idx = x->ntimed;
	x->timed[x->ntimed++] = q;
}

void xp_timer_stop(struct dpv_xport *x, struct xp_qp *q)
{
	struct xp_qp *last;

	if (q->timed_idx == XP_TIMED_NONE)
		return;
	last = x->timed[--x->ntimed];
	x->timed[q->timed_idx] = last;
	last->timed_idx = q->timed_idx;
	q->timed_idx = XP_TIMED_NONE;
}

/* One QP's timer: the RNR wait ends, or the ACK timer fires; a QP with nothing
 * outstanding leaves the list (its timer restarts with its next packet). */
static void timer_run(struct dpv_xport *x, struct xp_qp *q, uint64_t now)
{
	const uint8_t st = q->qp.attr.state;
	const bool due = (int64_t)(now - q->deadline) >= 0;

	if (st != DPV_QPS_RTS && st != DPV_QPS_SQD) {
		q->rnr_wait = false;
		xp_timer_stop(x, q);
		return;
	}
	if (q->rnr_wait) {
		if (!due)
			return;
		q->rnr_wait = false;
		q->deadline = now + q->ack_cycles;
		xp_kick(q);
	} else if (q->una == q->psn_hi || q->ack_cycles == 0) {
		xp_timer_stop(x, q);
	} else if (due && q->defer_left > 0 &&
		   dpv_port_tx_room(x->port, q->qp.attr.dst_ip) == 0) {
		/* The port holds the packets back (its TX queue is full, the link drains
		 * slower than it is fed): the wait is ours, not the peer's silence. A link
		 * that never drains still ends the QP, XP_DEFER_MAX timeouts later. */
		q->defer_left--;
		q->deadline = now + q->ack_cycles;
		XP_CNT(x, q, timer_deferred);
	} else if (due) {
		xp_comp_timeout(x, q);
	} else if (now - q->probe_tsc >= q->probe_cycles << q->probes &&
		   (q->psn == q->psn_hi || dpv_wire_psn_diff(q->psn, q->una) >= (int32_t)q->cwnd)) {
		xp_comp_probe(x, q);
	}
}

void dpv_xport_tick(struct dpv_xport *x, uint64_t now)
{
	uint32_t i;

	x->now = now;
	/* From the end: a QP that leaves the list takes the last one's place. */
	for (i = x->ntimed; i-- > 0;)
		timer_run(x, x->timed[i], now);
	if (x->nquiet != 0) {
		xp_resp_ack_tick(x);
		if (x->ntx != 0)
			xp_tx_flush(x);
	}
	if (unlikely(x->cq_overrun))
		xp_cq_overruns(x);
}
