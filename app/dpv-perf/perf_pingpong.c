/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpv-perf pingpong: one-way latency (round trip / 2) of a small message between two
 * ports of one process, three ways side by side in one run:
 *  raw  a frame of the size an RC SEND of <size> bytes has on the wire, bounced between
 *       the two ethdev ports of a ring pair with rte_eth_tx_burst / rte_eth_rx_burst:
 *       no verbs, no transport. The floor the other two stand on.
 *  rc   an RC SEND through verbs from dpv0 to dpv1 and back: ibv_post_send, then
 *       ibv_poll_cq until the receive completes, ibv_post_recv to give the buffer back.
 *  tm   a tagged eager message through a tag-matching SRQ on each side: the receiver
 *       has ADDed the tag (ibv_post_srq_ops) before the sender's SEND, whose payload
 *       starts with struct ibv_tmh (EAGER); the completion must be a match.
 *
 * One thread drives both sides: it posts for one device, then polls the other; with
 * inline progress every poll (and every post of a SEND or a TM op) runs the engines of
 * both devices, so a round trip holds the work of both devices and of both
 * applications, serialised.
 *
 * The verbs devices own ethdev ports 0 and 1 once opened, so the raw baseline runs on
 * a ring pair of its own that dpv-perf creates (dpv_verbs_ring_pair()) after
 * ibv_get_device_list() has started EAL, set up with DPDK's own calls: the same ring PMD and the same thread, and
 * the three ways can be measured in interleaved blocks, so a drift of the machine hits
 * all three alike.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/tm_types.h>
#include <rte_byteorder.h>
#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_ip.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_udp.h>

#include "dpv_verbs.h"
#include "perf_verbs.h"

#define PP_CMD "pingpong"

#define PP_DEFAULT_SIZE 8u
/* A tagged message (16-byte TMH + payload) must fit one packet of the 1024-byte MTU. */
#define PP_MAX_SIZE 1008u
#define PP_DEFAULT_ITERS 1000000u
#define PP_DEFAULT_WARMUP 1000u
#define PP_MAX_ITERS 100000000u
/* Iterations of one way before the next way's turn. */
#define PP_BLOCK 1000u
/* Receives each RC QP keeps posted; tagged buffers cycle through as many slots. */
#define PP_RECV_DEPTH 64u
#define PP_SLOT 1024u
#define PP_SQ_DEPTH 256u
#define PP_CQ_DEPTH 1024
/* One SEND in so many asks for a completion, as latency-minded programs do. */
#define PP_SIGNAL_EVERY 16u
#define PP_MAX_INLINE 256u
/* Ordinary WRs on each TM-SRQ: a message that consumed one was not matched. */
#define PP_TM_SPARE_WRS 16u
#define PP_TM_TAGS 64u
#define PP_TM_OPS 64u
#define PP_SPARE_WRID UINT64_C(0x5ba4e00000000000)
#define PP_RAW_POOL 1024u

/* What an RC SEND-only packet adds around its payload: Eth, IPv4, UDP, BTH; ICRC. */
#define PP_HDR_LEN (RTE_ETHER_HDR_LEN + 20u + 8u + 12u)
#define PP_ICRC_LEN 4u

enum pp_mode { PP_RAW, PP_RC, PP_TM, PP_NB_MODES };

static const char *const pp_mode_names[PP_NB_MODES] = {
	[PP_RAW] = "raw", [PP_RC] = "rc", [PP_TM] = "tm",
};

static const char *const pp_mode_descr[PP_NB_MODES] = {
	[PP_RAW] = "ethdev tx_burst/rx_burst, no verbs",
	[PP_RC] = "RC SEND / RECV through verbs",
	[PP_TM] = "tagged eager SEND into a TM-SRQ",
};

struct pp_opts {
	bool json;
	uint32_t ways;   /* bit m: way m runs (--ways) */
	uint32_t size;
	uint32_t iters;
	uint32_t warmup;
	bool td;         /* --td: the verbs ways' objects under a thread domain */
	bool stamp;      /* --stamp: the verbs ways' CQs stamp their completions */
};

/* One port of the raw baseline: an ethdev port, one queue each way. */
struct pp_raw_port {
	uint16_t ethdev_port;
	struct rte_mempool *pool;
	struct rte_ether_addr mac;
	uint32_t ipv4;
};

/* The raw baseline: a ring pair of its own. */
struct pp_raw {
	struct pp_raw_port *port[2];
	uint32_t frame_len;
	uint8_t hdr[2][PP_HDR_LEN];   /* the frame's headers, each direction */
};

/*
 * The rc or tm way: one side a device, a CQ (tm: a TM-SRQ and its extended CQ) and
 * slots (0: send; 1..PP_RECV_DEPTH: receive).
 */
struct pp_way {
	struct pv_side side[2];
	bool inline_send;
};

struct pp {
	const struct pp_opts *o;
	struct pv_dev dev[2];
	struct pp_raw raw;
	struct pp_way rc, tm;
	uint64_t seq[PP_NB_MODES];    /* round trips done, warm-up included */
	uint64_t *cycles[PP_NB_MODES];/* rdtsc cycles of each measured round trip */
	uint32_t nsamples[PP_NB_MODES];
	uint16_t raw_port_id[2];
};

struct pp_stats {
	double p50, p99, p999, min, max, mean; /* microseconds, one way */
};

/*
 * ---- payload: every byte depends on the round trip and the direction ----
 * Byte k of a payload is base + 7k (mod 256), base drawn from the round trip and the
 * direction. 7 is odd, so base = 7t for t = base * 183 (7 * 183 = 1 mod 256), and the
 * payload is pp_ramp[t .. t + size) with pp_ramp[i] = 7i: filling and checking are a
 * memcpy and a memcmp, as cheap as an application's own copies, the same in every way.
 */
static uint8_t pp_ramp[256 + PP_MAX_SIZE];

static void
ramp_init(void)
{
	for (uint32_t i = 0; i < sizeof(pp_ramp); i++)
		pp_ramp[i] = (uint8_t)(i * 7);
}

static inline const uint8_t *
pat_of(uint64_t seq, unsigned int dir)
{
	uint8_t base = (uint8_t)(seq * 131 + dir * 0x5b);

	return pp_ramp + (uint8_t)(base * 183);
}

static inline void
pat_fill(uint8_t *p, uint32_t size, uint64_t seq, unsigned int dir)
{
	memcpy(p, pat_of(seq, dir), size);
}

/* The offset of the first wrong byte, or -1. */
static inline int64_t
pat_check(const uint8_t *p, uint32_t size, uint64_t seq, unsigned int dir)
{
	const uint8_t *want = pat_of(seq, dir);

	if (__builtin_expect(memcmp(p, want, size) == 0, 1))
		return -1;
	for (uint32_t k = 0; k < size; k++)
		if (p[k] != want[k])
			return k;
	return -1;
}

static __attribute__((cold, noinline)) int
pp_wrong(enum pp_mode m, uint64_t seq, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int
pp_wrong(enum pp_mode m, uint64_t seq, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	perf_error("%s: %s, round trip %" PRIu64 ": %s", PP_CMD, pp_mode_names[m], seq, msg);
	return -1;
}

/* ---- raw ---- */

static void
raw_template(struct pp_raw *r, unsigned int from, uint32_t size)
{
	struct rte_ether_hdr *eth = (struct rte_ether_hdr *)r->hdr[from];
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(eth + 1);
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);
	uint32_t ip_len = PP_HDR_LEN - RTE_ETHER_HDR_LEN + size + PP_ICRC_LEN;

	memset(r->hdr[from], 0, PP_HDR_LEN);
	rte_ether_addr_copy(&r->port[1 - from]->mac, &eth->dst_addr);
	rte_ether_addr_copy(&r->port[from]->mac, &eth->src_addr);
	eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	ip->version_ihl = RTE_IPV4_VHL_DEF;
	ip->total_length = rte_cpu_to_be_16((uint16_t)ip_len);
	ip->time_to_live = 64;
	ip->next_proto_id = IPPROTO_UDP;
	ip->src_addr = rte_cpu_to_be_32(r->port[from]->ipv4);
	ip->dst_addr = rte_cpu_to_be_32(r->port[1 - from]->ipv4);
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	udp->src_port = rte_cpu_to_be_16(49152);
	udp->dst_port = rte_cpu_to_be_16(4791);
	udp->dgram_len = rte_cpu_to_be_16((uint16_t)(ip_len - 20));
}

/* Start ethdev port @p id with a pool of PP_RAW_POOL mbufs. @return 0 or an errno */
static int
raw_port_open(struct pp_raw_port *rp, uint16_t id, unsigned int i)
{
	struct rte_eth_conf conf;
	char name[RTE_MEMPOOL_NAMESIZE];
	int ret;

	snprintf(name, sizeof(name), "perfraw%u", i);
	rp->ethdev_port = id;
	rp->pool = rte_pktmbuf_pool_create(name, PP_RAW_POOL, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
					   (int)rte_socket_id());
	if (rp->pool == NULL)
		return ENOMEM;
	memset(&conf, 0, sizeof(conf));
	ret = rte_eth_dev_configure(id, 1, 1, &conf);
	if (ret == 0)
		ret = rte_eth_rx_queue_setup(id, 0, 1024, rte_socket_id(), NULL, rp->pool);
	if (ret == 0)
		ret = rte_eth_tx_queue_setup(id, 0, 1024, rte_socket_id(), NULL);
	if (ret == 0)
		ret = rte_eth_dev_start(id);
	if (ret == 0)
		ret = rte_eth_macaddr_get(id, &rp->mac);
	if (ret != 0) {
		rte_mempool_free(rp->pool);
		return -ret;
	}
	/* A ring port has no MAC of its own: a locally administered one. */
	if (rte_is_zero_ether_addr(&rp->mac))
		rte_eth_random_addr(rp->mac.addr_bytes);
	return 0;
}

static int
raw_setup(struct pp *p)
{
	static const uint32_t ipv4[2] = { RTE_IPV4(127, 0, 20, 3), RTE_IPV4(127, 0, 20, 4) };
	struct pp_raw *r = &p->raw;
	int ret;

	ret = dpv_verbs_ring_pair("dpvperf_raw", &p->raw_port_id[0], &p->raw_port_id[1]);
	if (ret != 0) {
		perf_error("%s: cannot create the raw baseline's ring pair: %s", PP_CMD,
			   strerror(ret));
		return -1;
	}
	for (unsigned int i = 0; i < 2; i++) {
		r->port[i] = calloc(1, sizeof(*r->port[i]));
		if (r->port[i] == NULL) {
			perf_error("%s: out of memory", PP_CMD);
			return -1;
		}
		r->port[i]->ipv4 = ipv4[i];
		ret = raw_port_open(r->port[i], p->raw_port_id[i], i);
		if (ret != 0) {
			perf_error("%s: cannot open ethdev port %u for the raw baseline: %s",
				   PP_CMD, p->raw_port_id[i], strerror(ret));
			free(r->port[i]);
			r->port[i] = NULL;
			return -1;
		}
	}
	r->frame_len = PP_HDR_LEN + p->o->size + PP_ICRC_LEN;
	raw_template(r, 0, p->o->size);
	raw_template(r, 1, p->o->size);
	return 0;
}

static void
raw_teardown(struct pp *p)
{
	struct rte_mbuf *m[32];
	uint16_t n;

	for (unsigned int i = 0; i < 2; i++) {
		if (p->raw.port[i] == NULL)
			continue;
		while ((n = rte_eth_rx_burst(p->raw.port[i]->ethdev_port, 0, m, 32)) != 0)
			rte_pktmbuf_free_bulk(m, n);
		rte_eth_dev_stop(p->raw.port[i]->ethdev_port);
		rte_mempool_free(p->raw.port[i]->pool);
		free(p->raw.port[i]);
		p->raw.port[i] = NULL;
	}
}

static inline int
raw_send(struct pp *p, unsigned int from, uint64_t seq)
{
	struct pp_raw *r = &p->raw;
	uint64_t deadline = 0;
	uint32_t calls = 0;
	struct rte_mbuf *m;
	uint8_t *d;

	m = rte_pktmbuf_alloc(r->port[from]->pool);
	if (m == NULL)
		return pp_wrong(PP_RAW, seq, "no mbuf left in port %u's pool", from);
	d = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)r->frame_len);
	memcpy(d, r->hdr[from], PP_HDR_LEN);
	pat_fill(d + PP_HDR_LEN, p->o->size, seq, from);
	memset(d + PP_HDR_LEN + p->o->size, 0, PP_ICRC_LEN);
	while (rte_eth_tx_burst(r->port[from]->ethdev_port, 0, &m, 1) == 0) {
		if (deadline == 0)
			deadline = pv_deadline();
		if (pv_stalled(deadline, &calls)) {
			rte_pktmbuf_free(m);
			return pp_wrong(PP_RAW, seq, "port %u does not take a frame", from);
		}
	}
	return 0;
}

static inline int
raw_recv(struct pp *p, unsigned int at, uint64_t seq)
{
	struct pp_raw *r = &p->raw;
	uint64_t deadline = 0;
	uint32_t calls = 0;
	struct rte_mbuf *m;
	int64_t bad;

	while (rte_eth_rx_burst(r->port[at]->ethdev_port, 0, &m, 1) == 0) {
		if (deadline == 0)
			deadline = pv_deadline();
		if (pv_stalled(deadline, &calls))
			return pp_wrong(PP_RAW, seq, "no frame reached port %u", at);
	}
	if (m->pkt_len != r->frame_len || m->nb_segs != 1) {
		rte_pktmbuf_free(m);
		return pp_wrong(PP_RAW, seq, "port %u received a frame of %u bytes in %u "
				"segments, expected %u in 1", at, m->pkt_len, m->nb_segs,
				r->frame_len);
	}
	bad = pat_check(rte_pktmbuf_mtod_offset(m, const uint8_t *, PP_HDR_LEN), p->o->size,
			seq, 1 - at);
	rte_pktmbuf_free(m);
	if (bad >= 0)
		return pp_wrong(PP_RAW, seq, "payload byte %" PRId64 " wrong at port %u", bad, at);
	return 0;
}

static int
raw_round_trip(struct pp *p, uint64_t seq)
{
	if (raw_send(p, 0, seq) != 0 || raw_recv(p, 1, seq) != 0 || raw_send(p, 1, seq) != 0 ||
	    raw_recv(p, 0, seq) != 0)
		return -1;
	return 0;
}

/* ---- rc and tm: the verbs sides ---- */

static inline uint8_t *
slot(const struct pv_side *s, uint32_t j)
{
	return pv_slot(s, j, PP_SLOT);
}

static int
side_buffers(struct pv_side *s, const struct pv_dev *d)
{
	return pv_alloc_mr(PP_CMD, d, (size_t)(PP_RECV_DEPTH + 1) * PP_SLOT,
			   IBV_ACCESS_LOCAL_WRITE, &s->slots, &s->slot_mr);
}

/* @return 0, or -1 when an object would not go. */
static int
way_teardown(struct pp_way *w)
{
	return pv_side_teardown(&w->side[0]) | pv_side_teardown(&w->side[1]);
}

static int
rc_post_recv(struct pv_side *s, uint32_t j, uint32_t size)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)slot(s, 1 + j), .length = size, .lkey = s->slot_mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = j, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(s->qp, &wr, &bad);
}

static int
qp_create(struct pp_way *w, struct pp *p, unsigned int i)
{
	return pv_side_qp(PP_CMD, &w->side[i], &p->dev[i], PP_SQ_DEPTH, PP_RECV_DEPTH,
			  PP_MAX_INLINE, IBV_ACCESS_LOCAL_WRITE);
}

static int
rc_setup(struct pp *p)
{
	struct pp_way *w = &p->rc;
	int ret;

	w->inline_send = p->o->size <= PP_MAX_INLINE;
	for (unsigned int i = 0; i < 2; i++) {
		struct pv_side *s = &w->side[i];

		if (side_buffers(s, &p->dev[i]) != 0 ||
		    pv_side_cq(PP_CMD, s, &p->dev[i], PP_CQ_DEPTH) != 0 || qp_create(w, p, i) != 0)
			return -1;
		for (uint32_t j = 0; j < PP_RECV_DEPTH; j++) {
			ret = rc_post_recv(s, j, p->o->size);
			if (ret != 0) {
				perf_error("%s: ibv_post_recv(%s): %s", PP_CMD, p->dev[i].name,
					   strerror(ret));
				return -1;
			}
		}
	}
	return pv_connect_pair(w->side, p->dev);
}

/* A send completion of side @p s (the only kind its CQ may hold before its receive). */
static inline int
send_wc(enum pp_mode m, struct pv_side *s, uint64_t seq, enum ibv_wc_status st,
	enum ibv_wc_opcode op)
{
	if (st != IBV_WC_SUCCESS || op != IBV_WC_SEND)
		return pp_wrong(m, seq, "completion: status %s, opcode %d (a SEND expected)",
				ibv_wc_status_str(st), (int)op);
	s->sig_done++;
	return 0;
}

/* Send slot 0 of side @p s, @p len bytes; a full SQ is waited for, never an error. */
static int
way_send(struct pp_way *w, enum pp_mode m, struct pv_side *s, uint32_t len, uint64_t seq)
{
	struct ibv_sge sge = { .addr = (uintptr_t)slot(s, 0), .length = len, .lkey = s->slot_mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = s->sends,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_SEND,
	}, *bad;
	struct ibv_wc wc;
	uint64_t deadline = 0;
	uint32_t calls = 0;
	int ret, got;

	if (w->inline_send)
		wr.send_flags |= IBV_SEND_INLINE;
	if (s->sends % PP_SIGNAL_EVERY == PP_SIGNAL_EVERY - 1)
		wr.send_flags |= IBV_SEND_SIGNALED;
	while ((ret = ibv_post_send(s->qp, &wr, &bad)) == ENOMEM) {
		/* Unacknowledged SENDs fill the SQ: reap what has completed. */
		got = ibv_poll_cq(s->cq, 1, &wc);
		if (got == 1 && send_wc(m, s, seq, wc.status, wc.opcode) != 0)
			return -1;
		if (deadline == 0)
			deadline = pv_deadline();
		if (got == 0 && pv_stalled(deadline, &calls))
			return pp_wrong(m, seq, "the send queue stays full");
	}
	if (ret != 0)
		return pp_wrong(m, seq, "ibv_post_send: %s", strerror(ret));
	s->sends++;
	if (wr.send_flags & IBV_SEND_SIGNALED)
		s->sig_posted++;
	return 0;
}

/* Wait for side @p s's next receive: the message of round trip @p seq from @p dir. */
static int
rc_recv(struct pp *p, struct pv_side *s, uint64_t seq, unsigned int dir)
{
	uint32_t size = p->o->size, j, calls = 0;
	uint64_t deadline = 0;
	struct ibv_wc wc[4];
	bool done = false;
	int got, i, ret;
	int64_t bad;

	while (!done) {
		got = ibv_poll_cq(s->cq, 4, wc);
		if (got < 0)
			return pp_wrong(PP_RC, seq, "ibv_poll_cq: %d", got);
		for (i = 0; i < got; i++) {
			if (wc[i].opcode == IBV_WC_SEND || wc[i].status != IBV_WC_SUCCESS) {
				if (send_wc(PP_RC, s, seq, wc[i].status, wc[i].opcode) != 0)
					return -1;
				continue;
			}
			j = (uint32_t)(s->recvs % PP_RECV_DEPTH);
			if (done || wc[i].opcode != IBV_WC_RECV || wc[i].byte_len != size ||
			    wc[i].wr_id != j || wc[i].qp_num != s->qp->qp_num)
				return pp_wrong(PP_RC, seq, "receive completion: opcode %d, "
						"byte_len %u, wr_id %" PRIu64 ", qp %u%s; expected "
						"RECV, %u, %u, %u", (int)wc[i].opcode,
						wc[i].byte_len, wc[i].wr_id, wc[i].qp_num,
						done ? " (a second one)" : "", size, j,
						s->qp->qp_num);
			bad = pat_check(slot(s, 1 + j), size, seq, dir);
			if (bad >= 0)
				return pp_wrong(PP_RC, seq, "payload byte %" PRId64 " wrong", bad);
			s->recvs++;
			ret = rc_post_recv(s, j, size);
			if (ret != 0)
				return pp_wrong(PP_RC, seq, "ibv_post_recv: %s", strerror(ret));
			done = true;
		}
		if (!done) {
			if (deadline == 0)
				deadline = pv_deadline();
			if (pv_stalled(deadline, &calls))
				return pp_wrong(PP_RC, seq, "no receive completion");
		}
	}
	return 0;
}

static int
rc_round_trip(struct pp *p, uint64_t seq)
{
	struct pv_side *a = &p->rc.side[0], *b = &p->rc.side[1];
	uint32_t size = p->o->size;

	pat_fill(slot(a, 0), size, seq, 0);
	if (way_send(&p->rc, PP_RC, a, size, seq) != 0 || rc_recv(p, b, seq, 0) != 0)
		return -1;
	pat_fill(slot(b, 0), size, seq, 1);
	if (way_send(&p->rc, PP_RC, b, size, seq) != 0 || rc_recv(p, a, seq, 1) != 0)
		return -1;
	return 0;
}

/* ---- tm ---- */

/* The tag of round trip @p seq's message in direction @p dir (0: dpv0 to dpv1). */
static inline uint64_t
tm_tag(uint64_t seq, unsigned int dir)
{
	return UINT64_C(0x7a60000000000000) | seq << 1 | dir;
}

static int
tm_setup(struct pp *p)
{
	struct pp_way *w = &p->tm;
	struct ibv_recv_wr rwr, *rbad;
	struct ibv_sge sge;
	int ret;

	w->inline_send = sizeof(struct ibv_tmh) + p->o->size <= PP_MAX_INLINE;
	for (unsigned int i = 0; i < 2; i++) {
		struct pv_side *s = &w->side[i];

		if (side_buffers(s, &p->dev[i]) != 0 ||
		    pv_side_tm_srq(PP_CMD, s, &p->dev[i], PP_CQ_DEPTH, PP_TM_SPARE_WRS, PP_TM_TAGS,
				   PP_TM_OPS) != 0)
			return -1;
		/* Spares for a message that finds no tag: using one is a wrong result. */
		for (uint32_t j = 0; j < PP_TM_SPARE_WRS; j++) {
			sge = (struct ibv_sge){ .addr = (uintptr_t)slot(s, 1 + j),
						.length = PP_SLOT, .lkey = s->slot_mr->lkey };
			rwr = (struct ibv_recv_wr){ .wr_id = PP_SPARE_WRID | j, .sg_list = &sge,
						    .num_sge = 1 };
			ret = ibv_post_srq_recv(s->srq, &rwr, &rbad);
			if (ret != 0) {
				perf_error("%s: ibv_post_srq_recv(%s, TM-SRQ): %s", PP_CMD,
					   p->dev[i].name, strerror(ret));
				return -1;
			}
		}
		if (qp_create(w, p, i) != 0)
			return -1;
	}
	return pv_connect_pair(w->side, p->dev);
}

/* Side @p s ADDs the tag of round trip @p seq's message in direction @p dir. */
static int
tm_add(struct pp *p, struct pv_side *s, uint64_t seq, unsigned int dir)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)slot(s, 1 + (uint32_t)(seq % PP_RECV_DEPTH)),
		.length = p->o->size,
		.lkey = s->slot_mr->lkey,
	};
	struct ibv_ops_wr op = {
		.wr_id = seq,
		.opcode = IBV_WR_TAG_ADD,
		.tm.add = {
			.recv_wr_id = seq,
			.sg_list = &sge,
			.num_sge = 1,
			.tag = tm_tag(seq, dir),
			.mask = UINT64_MAX,
		},
	}, *bad;
	int ret;

	ret = ibv_post_srq_ops(s->srq, &op, &bad);
	if (ret != 0)
		return pp_wrong(PP_TM, seq, "ibv_post_srq_ops(TAG_ADD): %s", strerror(ret));
	return 0;
}

/* Side @p s sends round trip @p seq's tagged message in direction @p dir. */
static int
tm_send(struct pp *p, struct pv_side *s, uint64_t seq, unsigned int dir)
{
	struct ibv_tmh *tmh = (struct ibv_tmh *)(void *)slot(s, 0);

	memset(tmh, 0, sizeof(*tmh));
	tmh->opcode = IBV_TMH_EAGER;
	tmh->app_ctx = rte_cpu_to_be_32((uint32_t)seq);
	tmh->tag = rte_cpu_to_be_64(tm_tag(seq, dir));
	pat_fill(slot(s, 0) + sizeof(*tmh), p->o->size, seq, dir);
	return way_send(&p->tm, PP_TM, s, (uint32_t)sizeof(*tmh) + p->o->size, seq);
}

/* One completion of side @p s's CQ; *matched when it is the awaited tagged receive. */
static int
tm_completion(struct pp *p, struct pv_side *s, uint64_t seq, unsigned int dir,
	      bool *matched)
{
	struct ibv_cq_ex *cq = s->cqx;
	enum ibv_wc_opcode op = ibv_wc_read_opcode(cq);
	unsigned int flags, want = IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID;
	struct ibv_wc_tm_info info;
	uint32_t len;
	int64_t bad;

	if (op == IBV_WC_SEND)
		return send_wc(PP_TM, s, seq, cq->status, op);
	flags = ibv_wc_read_wc_flags(cq);
	len = ibv_wc_read_byte_len(cq);
	if (cq->status != IBV_WC_SUCCESS || op != IBV_WC_TM_RECV || *matched ||
	    (flags & want) != want || cq->wr_id != seq || len != p->o->size)
		return pp_wrong(PP_TM, seq, "completion: status %s, opcode %d, flags %#x, "
				"wr_id %#" PRIx64 ", byte_len %u%s; expected success, TM_RECV, "
				"MATCH|DATA_VALID, wr_id %#" PRIx64 ", %u (a wr_id of %#" PRIx64
				"|n is a spare WR: the message was not matched)",
				ibv_wc_status_str(cq->status), (int)op, flags, cq->wr_id, len,
				*matched ? " (a second one)" : "", seq, p->o->size,
				PP_SPARE_WRID);
	ibv_wc_read_tm_info(cq, &info);
	if (info.tag != tm_tag(seq, dir) || info.priv != (uint32_t)seq)
		return pp_wrong(PP_TM, seq, "tm_info: tag %#" PRIx64 ", priv %u; expected %#"
				PRIx64 ", %u", info.tag, info.priv, tm_tag(seq, dir),
				(uint32_t)seq);
	bad = pat_check(slot(s, 1 + (uint32_t)(seq % PP_RECV_DEPTH)), p->o->size, seq, dir);
	if (bad >= 0)
		return pp_wrong(PP_TM, seq, "payload byte %" PRId64 " wrong", bad);
	s->recvs++;
	*matched = true;
	return 0;
}

/* Wait for side @p s's tagged receive of round trip @p seq in direction @p dir. */
static int
tm_recv(struct pp *p, struct pv_side *s, uint64_t seq, unsigned int dir)
{
	struct ibv_poll_cq_attr attr = { .comp_mask = 0 };
	uint64_t deadline = 0;
	bool matched = false;
	uint32_t calls = 0;
	int ret, rc;

	while (!matched) {
		ret = ibv_start_poll(s->cqx, &attr);
		if (ret == ENOENT) {
			if (deadline == 0)
				deadline = pv_deadline();
			if (pv_stalled(deadline, &calls))
				return pp_wrong(PP_TM, seq, "no tagged receive completion");
			continue;
		}
		if (ret != 0)
			return pp_wrong(PP_TM, seq, "ibv_start_poll: %s", strerror(ret));
		do
			rc = tm_completion(p, s, seq, dir, &matched);
		while (rc == 0 && (ret = ibv_next_poll(s->cqx)) == 0);
		ibv_end_poll(s->cqx);
		if (rc != 0)
			return -1;
		if (ret != ENOENT)
			return pp_wrong(PP_TM, seq, "ibv_next_poll: %s", strerror(ret));
	}
	return 0;
}

/*
 * dpv0 ADDs the tag of the answer it will get, then sends; dpv1 finds the match, ADDs
 * the tag of the next round trip's message and answers; dpv0 finds its match. Each
 * side posts its receive before the message it answers, as MPI programs do, so no
 * message is ever unexpected (the tag of round trip 0 is ADDed at the first call).
 */
static int
tm_round_trip(struct pp *p, uint64_t seq)
{
	struct pv_side *a = &p->tm.side[0], *b = &p->tm.side[1];

	if (seq == 0 && tm_add(p, b, 0, 0) != 0)
		return -1;
	if (tm_add(p, a, seq, 1) != 0 || tm_send(p, a, seq, 0) != 0 ||
	    tm_recv(p, b, seq, 0) != 0 || tm_add(p, b, seq + 1, 0) != 0 ||
	    tm_send(p, b, seq, 1) != 0 || tm_recv(p, a, seq, 1) != 0)
		return -1;
	return 0;
}

/* Wait for the signaled SENDs still in flight on a way (they complete with ACKs). */
static int
way_quiesce(struct pp *p, struct pp_way *w, enum pp_mode m)
{
	struct ibv_wc wc;
	uint32_t calls = 0;
	uint64_t deadline = pv_deadline();
	int got;

	for (unsigned int i = 0; i < 2; i++) {
		struct pv_side *s = &w->side[i];

		while (s->sig_done < s->sig_posted) {
			got = ibv_poll_cq(s->cq, 1, &wc);
			if (got == 1 && send_wc(m, s, p->seq[m], wc.status, wc.opcode) != 0)
				return -1;
			if (got < 0 || (got == 0 && pv_stalled(deadline, &calls)))
				return pp_wrong(m, p->seq[m], "%" PRIu64 " of %" PRIu64 " signaled "
						"sends never completed", s->sig_posted - s->sig_done,
						s->sig_posted);
		}
	}
	return 0;
}

/* ---- measuring ---- */

typedef int (*pp_rt_fn)(struct pp *p, uint64_t seq);

static const pp_rt_fn pp_round_trips[PP_NB_MODES] = {
	[PP_RAW] = raw_round_trip, [PP_RC] = rc_round_trip, [PP_TM] = tm_round_trip,
};

/* @p n round trips of mode @p m; their cycles are kept when @p keep. */
static int
run_block(struct pp *p, enum pp_mode m, uint32_t n, bool keep)
{
	pp_rt_fn rt = pp_round_trips[m];
	uint64_t t0, t1;

	for (uint32_t i = 0; i < n; i++) {
		t0 = rte_rdtsc_precise();
		if (rt(p, p->seq[m]) != 0)
			return -1;
		t1 = rte_rdtsc_precise();
		p->seq[m]++;
		if (keep)
			p->cycles[m][p->nsamples[m]++] = t1 - t0;
	}
	return 0;
}

static inline bool
way_on(const struct pp *p, enum pp_mode m)
{
	return (p->o->ways & (1u << m)) != 0;
}

/*
 * The warm-up and the measured blocks of every way that runs, and nothing else: never
 * inlined, so that callgrind's --toggle-collect=measure counts the round trips alone,
 * without EAL's start-up, the setup or the percentiles (doc/guides/verbs-perf.md).
 */
static __attribute__((noinline)) int
measure(struct pp *p)
{
	uint32_t done = 0, n;
	int m;

	for (m = 0; m < PP_NB_MODES; m++)
		if (way_on(p, m) && run_block(p, m, p->o->warmup, false) != 0)
			return -1;
	while (done < p->o->iters) {
		n = p->o->iters - done < PP_BLOCK ? p->o->iters - done : PP_BLOCK;
		for (m = 0; m < PP_NB_MODES; m++)
			if (way_on(p, m) && run_block(p, m, n, true) != 0)
				return -1;
		done += n;
	}
	if ((way_on(p, PP_RC) && way_quiesce(p, &p->rc, PP_RC) != 0) ||
	    (way_on(p, PP_TM) && way_quiesce(p, &p->tm, PP_TM) != 0))
		return -1;
	return 0;
}

static void
stats_of(uint64_t *v, uint32_t n, struct pp_stats *st)
{
	static const double q[3] = { 0.50, 0.99, 0.999 };
	/* One way = round trip / 2, in microseconds. */
	double k = 1e6 / 2 / (double)rte_get_tsc_hz(), sum = 0;
	uint64_t lo = v[0], hi = v[0], r[3];

	/* Whole cycle counts: the sum is exact in any order. */
	for (uint32_t i = 0; i < n; i++) {
		sum += (double)v[i];
		lo = v[i] < lo ? v[i] : lo;
		hi = v[i] > hi ? v[i] : hi;
	}
	perf_ranks_u64(v, n, q, 3, r);
	st->p50 = (double)r[0] * k;
	st->p99 = (double)r[1] * k;
	st->p999 = (double)r[2] * k;
	st->min = (double)lo * k;
	st->max = (double)hi * k;
	st->mean = sum / n * k;
}

/* ---- output ---- */

static const struct perf_table_col pp_cols[] = {
	{ "way", 5 },
	{ "p50 us", 8 },
	{ "p99 us", 8 },
	{ "p99.9 us", 9 },
	{ "min us", 8 },
	{ "max us", 9 },
	{ "mean us", 8 },
};
#define PP_NB_COLS (sizeof(pp_cols) / sizeof(pp_cols[0]))

static void
table_report(const struct pp *p, const struct pp_stats *st, bool defaulted)
{
	char cells[PP_NB_COLS][PERF_CELL_LEN];
	int m;

	printf("dpv-perf pingpong: one-way latency = round trip / 2, %" PRIu32 "-byte "
	       "messages, %s <-> %s\n", p->o->size, p->dev[0].name, p->dev[1].name);
	if (way_on(p, PP_RAW))
		printf("  raw  a %" PRIu32 "-byte frame (what an RC SEND of %" PRIu32 " bytes is "
		       "on the wire) bounced\n"
		       "       between ethdev ports %u and %u, a ring pair dpv-perf creates for it\n"
		       "       (the devices own the ports of theirs): mbuf alloc + headers and\n"
		       "       payload written + tx_burst, rx_burst + payload checked + free; no "
		       "verbs\n", p->raw.frame_len, p->o->size, p->raw_port_id[0],
		       p->raw_port_id[1]);
	if (way_on(p, PP_RC))
		printf("  rc   RC SEND (%s, 1 in %u signaled) + poll_cq + post_recv\n",
		       p->rc.inline_send ? "inline" : "from the MR", PP_SIGNAL_EVERY);
	if (way_on(p, PP_TM))
		printf("  tm   TAG_ADD by the receiver first, then an EAGER SEND (16-byte TMH +\n"
		       "       payload) matched in a TM-SRQ; completions read with ibv_start_poll\n");
	printf("  One thread drives both sides, single process: it posts for one device and\n"
	       "  polls the other; with inline progress (the default) that poll runs both\n"
	       "  engines, so each round trip holds the work of both devices and both\n"
	       "  programs. Every payload byte, completion status, opcode, length, wr_id\n"
	       "  (and tag) is checked. Ways alternate in blocks of %u round trips; %" PRIu32
	       "\n  warm-up round trips each are not counted; %" PRIu32 " measured each, "
	       "rdtsc at\n  %.3f GHz, nearest-rank percentiles.\n",
	       PP_BLOCK, p->o->warmup, p->o->iters, (double)rte_get_tsc_hz() / 1e9);
	pv_print_setup(defaulted);
	perf_table_header(stdout, pp_cols, PP_NB_COLS);
	for (m = 0; m < PP_NB_MODES; m++) {
		if (!way_on(p, m))
			continue;
		snprintf(cells[0], sizeof(cells[0]), "%s", pp_mode_names[m]);
		snprintf(cells[1], sizeof(cells[1]), "%.3f", st[m].p50);
		snprintf(cells[2], sizeof(cells[2]), "%.3f", st[m].p99);
		snprintf(cells[3], sizeof(cells[3]), "%.3f", st[m].p999);
		snprintf(cells[4], sizeof(cells[4]), "%.3f", st[m].min);
		snprintf(cells[5], sizeof(cells[5]), "%.3f", st[m].max);
		snprintf(cells[6], sizeof(cells[6]), "%.3f", st[m].mean);
		perf_table_row(stdout, pp_cols, PP_NB_COLS, cells);
	}
	if (!way_on(p, PP_RAW) || p->o->ways == 1u << PP_RAW)
		return;
	printf("\nratios to raw:   p50      p99    p99.9\n");
	for (m = PP_RC; m < PP_NB_MODES; m++)
		if (way_on(p, m))
			printf("  %-5s %8.1fx %8.1fx %8.1fx\n", pp_mode_names[m],
			       st[m].p50 / st[PP_RAW].p50, st[m].p99 / st[PP_RAW].p99,
			       st[m].p999 / st[PP_RAW].p999);
}

static void
json_report(const struct pp *p, const struct pp_stats *st, bool defaulted)
{
	struct perf_json j;
	char key[16];
	int m;

	perf_json_init(&j, stdout);
	perf_json_object_begin(&j, NULL);
	perf_json_str(&j, "benchmark", "pingpong");
	perf_json_object_begin(&j, "config");
	perf_json_u64(&j, "size", p->o->size);
	perf_json_u64(&j, "iters", p->o->iters);
	perf_json_u64(&j, "warmup", p->o->warmup);
	perf_json_u64(&j, "block", PP_BLOCK);
	if (way_on(p, PP_RAW)) {
		perf_json_u64(&j, "raw_frame_len", p->raw.frame_len);
		perf_json_u64(&j, "raw_port_a", p->raw_port_id[0]);
		perf_json_u64(&j, "raw_port_b", p->raw_port_id[1]);
	}
	if (way_on(p, PP_RC))
		perf_json_bool(&j, "rc_inline", p->rc.inline_send);
	if (way_on(p, PP_TM))
		perf_json_bool(&j, "tm_inline", p->tm.inline_send);
	perf_json_u64(&j, "signal_every", PP_SIGNAL_EVERY);
	perf_json_bool(&j, "thread_domain", p->o->td);
	perf_json_bool(&j, "timestamps", p->o->stamp);
	perf_json_double(&j, "tsc_hz", (double)rte_get_tsc_hz());
	perf_json_str(&j, "latency", "round trip / 2, microseconds, nearest-rank percentiles");
	perf_json_str(&j, "threads", "one thread drives both sides in one process (inline "
		      "progress)");
	pv_json_setup(&j, p->dev, defaulted);
	perf_json_object_end(&j);
	perf_json_object_begin(&j, "ways");
	for (m = 0; m < PP_NB_MODES; m++) {
		if (!way_on(p, m))
			continue;
		perf_json_object_begin(&j, pp_mode_names[m]);
		perf_json_str(&j, "what", pp_mode_descr[m]);
		perf_json_u64(&j, "samples", p->nsamples[m]);
		perf_json_double(&j, "p50_us", st[m].p50);
		perf_json_double(&j, "p99_us", st[m].p99);
		perf_json_double(&j, "p99_9_us", st[m].p999);
		perf_json_double(&j, "min_us", st[m].min);
		perf_json_double(&j, "max_us", st[m].max);
		perf_json_double(&j, "mean_us", st[m].mean);
		perf_json_object_end(&j);
	}
	perf_json_object_end(&j);
	perf_json_object_begin(&j, "ratios_to_raw");
	for (m = PP_RC; m < PP_NB_MODES; m++) {
		if (!way_on(p, PP_RAW) || !way_on(p, m))
			continue;
		snprintf(key, sizeof(key), "%s", pp_mode_names[m]);
		perf_json_object_begin(&j, key);
		perf_json_double(&j, "p50", st[m].p50 / st[PP_RAW].p50);
		perf_json_double(&j, "p99", st[m].p99 / st[PP_RAW].p99);
		perf_json_double(&j, "p99_9", st[m].p999 / st[PP_RAW].p999);
		perf_json_object_end(&j);
	}
	perf_json_object_end(&j);
	perf_json_object_end(&j);
	perf_json_finish(&j);
}

static void
pp_help(void)
{
	printf("usage: dpv-perf pingpong [--json] [--ways LIST] [--size N] [--iters N]\n"
	       "                         [--warmup N] [--td] [--stamp]\n\n"
	       "One-way latency (round trip / 2) between two ports of one process, three ways\n"
	       "side by side: raw ethdev frames (no verbs), RC SEND through verbs (dpv0 <->\n"
	       "dpv1), and tagged eager messages through a TM-SRQ on each side. p50, p99,\n"
	       "p99.9 in microseconds and the ratios rc/raw and tm/raw. One thread drives\n"
	       "both sides (inline progress).\n\n"
	       "  --json          one JSON object on stdout instead of the table\n"
	       "  --ways LIST     the ways to run, comma-separated: raw, rc, tm (default all)\n"
	       "  --size N        payload bytes, 1..%u (default %u)\n"
	       "  --iters N       measured round trips of each way, 1..%u (default %u)\n"
	       "  --warmup N      round trips of each way not measured, 0..%u (default %u)\n"
	       "  --td            the rc and tm ways' QPs, CQs and SRQs under a thread domain\n"
	       "                  (ibv_alloc_td, ibv_alloc_parent_domain): no locks taken\n"
	       "  --stamp         the rc and tm ways' CQs stamp every completion\n"
	       "                  (IBV_WC_EX_WITH_COMPLETION_TIMESTAMP)\n"
	       "  --help          this text\n\n",
	       PP_MAX_SIZE, PP_DEFAULT_SIZE, PP_MAX_ITERS, PP_DEFAULT_ITERS, PP_MAX_ITERS,
	       PP_DEFAULT_WARMUP);
	pv_help_setup();
	printf("Every payload and completion is checked; a wrong one fails the run with exit\n"
	       "status 1. 2: a bad command line.\n");
}

enum { OPT_JSON = 256, OPT_WAYS, OPT_SIZE, OPT_ITERS, OPT_WARMUP, OPT_TD, OPT_STAMP };

/* @p arg, a comma-separated list of way names, into o->ways. @return 0 or -1. */
static int
parse_ways(const char *arg, struct pp_opts *o)
{
	const char *s = arg, *end;
	size_t len;
	int m;

	o->ways = 0;
	do {
		end = strchr(s, ',');
		len = end != NULL ? (size_t)(end - s) : strlen(s);
		for (m = 0; m < PP_NB_MODES; m++)
			if (strlen(pp_mode_names[m]) == len && strncmp(s, pp_mode_names[m], len) == 0)
				break;
		if (m == PP_NB_MODES)
			return -1;
		o->ways |= 1u << m;
		s = end + 1;
	} while (end != NULL);
	return 0;
}

static int
pp_opt(void *ctx, int c, const char *arg)
{
	struct pp_opts *o = ctx;

	switch (c) {
	case OPT_JSON:
		o->json = true;
		break;
	case OPT_WAYS:
		if (parse_ways(arg, o) != 0)
			return perf_usage_error(PP_CMD, "--ways '%s': expected a comma-separated "
						"list of raw, rc, tm", arg);
		break;
	case OPT_SIZE:
		if (perf_parse_u32(arg, 1, PP_MAX_SIZE, &o->size) != 0)
			return perf_usage_error(PP_CMD, "--size '%s': expected 1..%u bytes (a "
						"tagged message must fit one 1024-byte packet)",
						arg, PP_MAX_SIZE);
		break;
	case OPT_ITERS:
		if (perf_parse_u32(arg, 1, PP_MAX_ITERS, &o->iters) != 0)
			return perf_usage_error(PP_CMD, "--iters '%s': expected 1..%u", arg,
						PP_MAX_ITERS);
		break;
	case OPT_WARMUP:
		if (perf_parse_u32(arg, 0, PP_MAX_ITERS, &o->warmup) != 0)
			return perf_usage_error(PP_CMD, "--warmup '%s': expected 0..%u", arg,
						PP_MAX_ITERS);
		break;
	case OPT_TD:
		o->td = true;
		break;
	case OPT_STAMP:
		o->stamp = true;
		break;
	}
	return 0;
}

/* 0 to run, -1 after --help, or PERF_EXIT_USAGE. */
static int
parse_opts(int argc, char **argv, struct pp_opts *o)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, OPT_JSON },
		{ "ways", required_argument, NULL, OPT_WAYS },
		{ "size", required_argument, NULL, OPT_SIZE },
		{ "iters", required_argument, NULL, OPT_ITERS },
		{ "warmup", required_argument, NULL, OPT_WARMUP },
		{ "td", no_argument, NULL, OPT_TD },
		{ "stamp", no_argument, NULL, OPT_STAMP },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};

	memset(o, 0, sizeof(*o));
	o->ways = (1u << PP_NB_MODES) - 1;
	o->size = PP_DEFAULT_SIZE;
	o->iters = PP_DEFAULT_ITERS;
	o->warmup = PP_DEFAULT_WARMUP;
	return perf_getopts(PP_CMD, argc, argv, longopts, pp_help, pp_opt, o);
}

static int
pp_main(int argc, char **argv)
{
	struct pp_stats st[PP_NB_MODES];
	struct pp_opts o;
	struct pp *p;
	bool defaulted;
	int rc, m;

	rc = parse_opts(argc, argv, &o);
	if (rc != 0)
		return rc < 0 ? PERF_EXIT_OK : rc;
	p = calloc(1, sizeof(*p));
	if (p == NULL) {
		perf_error("%s: out of memory", PP_CMD);
		return PERF_EXIT_FAIL;
	}
	p->o = &o;
	ramp_init();
	rc = PERF_EXIT_FAIL;
	for (m = 0; m < PP_NB_MODES; m++) {
		p->cycles[m] = malloc((size_t)o.iters * sizeof(*p->cycles[m]));
		if (p->cycles[m] == NULL) {
			perf_error("%s: out of memory for %" PRIu32 " samples", PP_CMD, o.iters);
			goto out;
		}
	}
	defaulted = pv_env_defaults();
	/* The devices first: ibv_get_device_list() starts EAL and lists ports 0 and 1. */
	if (pv_open_pair(p->dev) != 0)
		goto out;
	p->dev[0].wc_flags = p->dev[1].wc_flags =
		p->o->stamp ? IBV_WC_EX_WITH_COMPLETION_TIMESTAMP : 0;
	if ((p->o->td && pv_use_td(p->dev) != 0) ||
	    (way_on(p, PP_RAW) && raw_setup(p) != 0) ||
	    (way_on(p, PP_RC) && rc_setup(p) != 0) || (way_on(p, PP_TM) && tm_setup(p) != 0) ||
	    measure(p) != 0)
		goto out;
	for (m = 0; m < PP_NB_MODES; m++)
		if (way_on(p, m))
			stats_of(p->cycles[m], p->nsamples[m], &st[m]);
	if (o.json)
		json_report(p, st, defaulted);
	else
		table_report(p, st, defaulted);
	rc = PERF_EXIT_OK;
out:
	if ((way_teardown(&p->tm) | way_teardown(&p->rc)) != 0)
		rc = PERF_EXIT_FAIL;
	raw_teardown(p);
	if (pv_close_pair(p->dev) != 0)
		rc = PERF_EXIT_FAIL;
	for (m = 0; m < PP_NB_MODES; m++)
		free(p->cycles[m]);
	free(p);
	return rc;
}

const struct perf_cmd perf_cmd_pingpong = {
	.name = PP_CMD,
	.summary = "latency p50/p99/p99.9: raw ethdev vs RC SEND vs tagged eager (TM-SRQ)",
	.run = pp_main,
};
