/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpv-perf link: one side of a round (perf_link.h). The process starts EAL itself on
 * its one core with two ports on the link: the raw port, driven with rte_eth_tx_burst /
 * rte_eth_rx_burst and nothing else, and the verbs device's port, opened with
 * dpv_verbs_open_port(). Both sides walk the same plan (lk_plan()); for every case each
 * makes its objects (CQ, QP or TM-SRQ, registered buffers), the two swap what the
 * other needs (QP number, address, rkey) over the control socket, connect, meet, run
 * the case and meet again to swap verdicts: a wrong payload or completion on either
 * side fails the round. Side A measures and writes one struct lk_result a case.
 *
 * Every payload is checked: latency payloads byte by byte on arrival, stream messages
 * by their sequence number, bandwidth buffers byte by byte after the case.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <infiniband/tm_types.h>
#include <rte_byteorder.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_udp.h>

#include "dpv_verbs.h"
#include "perf_link.h"
#include "perf_verbs.h"

/* An RC SEND-only packet's headers around its payload: Eth, IPv4, UDP, BTH; ICRC. */
#define LK_HDR_LEN (RTE_ETHER_HDR_LEN + 20u + 8u + 12u)
#define LK_ICRC_LEN 4u
#define LK_SLOT 1024u
#define LK_LAT_RQ 64u
#define LK_RATE_RQ 512u
#define LK_BW_RQ 128u
#define LK_CQ_DEPTH 4096
#define LK_MAX_INLINE 256u
/* READs a QP has in flight in the READ and rendezvous cases: the device's maximum, as
 * ib_read_bw and UCX ask. */
#define LK_RD_ATOMIC 16u
/* One WR in so many asks for a completion (and the last one of a case). */
#define LK_SIGNAL_EVERY 16u
#define LK_TM_SPARE_WRS 16u
/* Rendezvous headers in flight, and tags ADDed ahead of the receives done. The sender
 * waits for FINs, which the receiver's device sends whether or not its application has
 * caught up: while the application is off its core (the helper thread drives the device
 * meanwhile) the device can run up to LK_RNDV_AHEAD - LK_RNDV_WINDOW rendezvous ahead of
 * it before a header finds no tag; such a header is unexpected, and the case fails. */
#define LK_RNDV_WINDOW 16u
#define LK_RNDV_AHEAD 4096u
#define LK_TM_TAGS LK_RNDV_AHEAD
#define LK_TM_OPS 64u
#define LK_SPARE_WRID UINT64_C(0x5ba4e00000000000)
#define LK_RAW_POOL 8191u
#define LK_RAW_BURST 32u
/* rte_pause()s before a raw port whose ring was full is asked again. */
#define LK_TX_BACKOFF 64u
#define LK_LINK_WAIT_S 20.0
/* A stream's receiver gives up this long after its last frame, once A has sent all. */
#define LK_QUIET_NS UINT64_C(10000000)

/* What the sides swap over the control socket. */
struct lk_msg {
	uint32_t qpn;
	uint32_t rkey;
	uint64_t addr;
	uint64_t val, val2;
	int32_t status;      /* 0, or -1: this side failed the case */
	uint8_t mac[6];
	union ibv_gid gid;
};

struct lk_side {
	const struct lk_opts *o;
	unsigned int me;
	int ctl, out;
	uint16_t vport, rport;
	struct rte_mempool *pool;
	struct rte_ether_addr mac, peer_mac;
	uint8_t hdr[LK_HDR_LEN];
	struct pv_dev dev;
	union ibv_gid peer_gid;
	double us_per_cycle;
	uint64_t *samples;
	char mode[32];       /* the progress mode for dpv_verbs_set_progress() */
};

/* One verbs case's objects and progress. */
struct lk_ctx {
	struct lk_side *sd;
	const struct lk_case *c;
	struct pv_side s;
	uint64_t peer_addr;
	uint32_t peer_rkey;
	uint32_t rq_depth, recv_len;
	uint64_t acked;      /* WRs known complete: one past the last signaled one done */
	uint64_t fins, matches, valid;
};

const double lk_cdf_q[] = {
	0.0, 0.05, 0.10, 0.15, 0.20, 0.25, 0.30, 0.35, 0.40, 0.45, 0.50, 0.55, 0.60, 0.65,
	0.70, 0.75, 0.80, 0.85, 0.90, 0.91, 0.92, 0.93, 0.94, 0.95, 0.96, 0.97, 0.98, 0.99,
	0.991, 0.992, 0.993, 0.994, 0.995, 0.996, 0.997, 0.998, 0.999,
	0.9991, 0.9992, 0.9993, 0.9994, 0.9995, 0.9996, 0.9997, 0.9998, 0.9999,
	0.99995, 0.99999, 1.0,
};
_Static_assert(sizeof(lk_cdf_q) == LK_CDF_N * sizeof(lk_cdf_q[0]), "LK_CDF_N quantiles");
/* Where p50, p99 and p99.9 are in lk_cdf_q. */
#define LK_Q_P50 10u
#define LK_Q_P99 27u
#define LK_Q_P999 36u

static const char *const lk_side_names[2] = { "A", "B" };

static __attribute__((format(printf, 2, 3))) int
side_fail(const struct lk_side *sd, const char *fmt, ...)
{
	char msg[320];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	perf_error("%s: side %s: %s", LK_CMD, lk_side_names[sd->me], msg);
	return -1;
}

/* ---- the control socket ---- */

static int
ctl_write(struct lk_side *sd, const struct lk_msg *m)
{
	const uint8_t *p = (const uint8_t *)m;
	size_t left = sizeof(*m);
	ssize_t n;

	while (left > 0) {
		n = write(sd->ctl, p, left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return side_fail(sd, "control socket: %s", strerror(errno));
		p += n;
		left -= (size_t)n;
	}
	return 0;
}

static int
ctl_read(struct lk_side *sd, struct lk_msg *m)
{
	uint8_t *p = (uint8_t *)m;
	size_t left = sizeof(*m);
	ssize_t n;

	while (left > 0) {
		n = read(sd->ctl, p, left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0)
			return side_fail(sd, "the peer closed the control socket");
		if (n < 0)
			return side_fail(sd, "control socket: %s", strerror(errno));
		p += n;
		left -= (size_t)n;
	}
	return 0;
}

/* Whether the peer's next message is there, without waiting. */
static bool
ctl_ready(struct lk_side *sd)
{
	struct lk_msg m;

	return recv(sd->ctl, &m, sizeof(m), MSG_PEEK | MSG_DONTWAIT) == (ssize_t)sizeof(m);
}

/* Send @p mine, receive the peer's into @p theirs; a peer that failed fails this too. */
static int
ctl_swap(struct lk_side *sd, const struct lk_msg *mine, struct lk_msg *theirs)
{
	struct lk_msg dummy;

	if (theirs == NULL)
		theirs = &dummy;
	if (ctl_write(sd, mine) != 0 || ctl_read(sd, theirs) != 0)
		return -1;
	if (theirs->status != 0)
		return mine->status != 0 ? -1 : side_fail(sd, "the peer failed the case");
	return mine->status;
}

/* ---- payload: byte k of a message is seed + 7k (mod 256) ---- */

static uint8_t lk_ramp[256 + LK_SLOT];

static inline const uint8_t *
pat_of(uint64_t seq, unsigned int dir)
{
	uint8_t base = (uint8_t)(seq * 131 + dir * 0x5b);

	/* 7 * 183 = 1 (mod 256): base = 7t for t = 183 base. */
	return lk_ramp + (uint8_t)(base * 183);
}

static void
data_fill(uint8_t *p, size_t len, uint64_t seed)
{
	for (size_t k = 0; k < len; k++)
		p[k] = (uint8_t)(seed + 7 * k);
}

/* The offset of the first wrong byte of a bandwidth buffer, or -1. */
static int64_t
data_check(const uint8_t *p, size_t len, uint64_t seed)
{
	for (size_t k = 0; k < len; k++)
		if (p[k] != (uint8_t)(seed + 7 * k))
			return (int64_t)k;
	return -1;
}

static inline uint64_t
case_seed(const struct lk_case *c)
{
	return c->size * 31u + (uint64_t)c->kind;
}

/* ---- the raw port ---- */

static int
raw_open(struct lk_side *sd)
{
	struct rte_eth_conf conf;
	int ret;

	sd->pool = rte_pktmbuf_pool_create("lkraw", LK_RAW_POOL, 256, 0,
					   RTE_MBUF_DEFAULT_BUF_SIZE, (int)rte_socket_id());
	if (sd->pool == NULL)
		return side_fail(sd, "no mbuf pool for the raw port: %s",
				 rte_strerror(rte_errno));
	memset(&conf, 0, sizeof(conf));
	ret = rte_eth_dev_configure(sd->rport, 1, 1, &conf);
	if (ret == 0)
		ret = rte_eth_rx_queue_setup(sd->rport, 0, 1024, rte_socket_id(), NULL, sd->pool);
	if (ret == 0)
		ret = rte_eth_tx_queue_setup(sd->rport, 0, 1024, rte_socket_id(), NULL);
	if (ret == 0)
		ret = rte_eth_dev_start(sd->rport);
	if (ret == 0)
		ret = rte_eth_macaddr_get(sd->rport, &sd->mac);
	if (ret != 0)
		return side_fail(sd, "raw port %u: %s", sd->rport, strerror(-ret));
	return 0;
}

static int
raw_link_wait(struct lk_side *sd)
{
	struct rte_eth_link link;
	uint64_t deadline;

	deadline = perf_now_ns() + (uint64_t)(LK_LINK_WAIT_S * 1e9);
	for (;;) {
		memset(&link, 0, sizeof(link));
		if (rte_eth_link_get_nowait(sd->rport, &link) == 0 && link.link_status)
			return 0;
		if (perf_now_ns() > deadline)
			return side_fail(sd, "the raw port's link is not up after %.0f s",
					 LK_LINK_WAIT_S);
		rte_delay_us_sleep(1000);
	}
}

static void
raw_close(struct lk_side *sd)
{
	if (sd->pool == NULL)
		return;
	rte_eth_dev_stop(sd->rport);
	rte_eth_dev_close(sd->rport);
	rte_mempool_free(sd->pool);
	sd->pool = NULL;
}

/* The raw ports' addresses, apart from the verbs devices'. */
static inline uint32_t
raw_ipv4(unsigned int side)
{
	return RTE_IPV4(10, 79, 1, 1 + side);
}

/* The headers of a frame of @p frame_len bytes to the peer, RoCEv2's UDP port. */
static void
raw_template(struct lk_side *sd, uint32_t frame_len)
{
	struct rte_ether_hdr *eth = (struct rte_ether_hdr *)sd->hdr;
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(eth + 1);
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);
	uint32_t ip_len = frame_len - RTE_ETHER_HDR_LEN;

	memset(sd->hdr, 0, sizeof(sd->hdr));
	rte_ether_addr_copy(&sd->peer_mac, &eth->dst_addr);
	rte_ether_addr_copy(&sd->mac, &eth->src_addr);
	eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	ip->version_ihl = RTE_IPV4_VHL_DEF;
	ip->total_length = rte_cpu_to_be_16((uint16_t)ip_len);
	ip->time_to_live = 64;
	ip->next_proto_id = IPPROTO_UDP;
	ip->src_addr = rte_cpu_to_be_32(raw_ipv4(sd->me));
	ip->dst_addr = rte_cpu_to_be_32(raw_ipv4(1 - sd->me));
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	udp->src_port = rte_cpu_to_be_16(49152);
	udp->dst_port = rte_cpu_to_be_16(4791);
	udp->dgram_len = rte_cpu_to_be_16((uint16_t)(ip_len - 20));
}

static void
raw_drain(struct lk_side *sd)
{
	struct rte_mbuf *m[LK_RAW_BURST];
	uint16_t n;

	while ((n = rte_eth_rx_burst(sd->rport, 0, m, LK_RAW_BURST)) != 0)
		rte_pktmbuf_free_bulk(m, n);
}

/* A frame of @p len bytes: headers, the sequence number, then (if @p fill) its pattern. */
static inline struct rte_mbuf *
raw_frame(struct lk_side *sd, uint32_t len, uint64_t seq, bool fill)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(sd->pool);
	uint8_t *d;

	if (m == NULL)
		return NULL;
	d = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)len);
	memcpy(d, sd->hdr, LK_HDR_LEN);
	memcpy(d + LK_HDR_LEN, &seq, sizeof(seq));
	if (fill)
		memcpy(d + LK_HDR_LEN + 8, pat_of(seq, sd->me), len - LK_HDR_LEN - 8);
	return m;
}

static int
raw_send(struct lk_side *sd, struct rte_mbuf **m, uint16_t n)
{
	uint64_t deadline = 0;
	uint32_t calls = 0;
	uint16_t sent = 0;

	while (sent < n) {
		sent += rte_eth_tx_burst(sd->rport, 0, m + sent, n - sent);
		if (sent == n)
			break;
		/* A full ring: asking again at once only fights the receiver for the
		 * ring's cache lines. */
		for (unsigned int k = 0; k < LK_TX_BACKOFF; k++)
			rte_pause();
		if (deadline == 0)
			deadline = pv_deadline();
		if (pv_stalled(deadline, &calls)) {
			rte_pktmbuf_free_bulk(m + sent, n - sent);
			return side_fail(sd, "the raw port does not take frames");
		}
	}
	return 0;
}

/*
 * Whether @p m comes from the peer's raw port. A port shared with others (af_packet on
 * an interface that the verbs device and the kernel use too) sees their frames as well.
 */
static inline bool
raw_from_peer(const struct lk_side *sd, const struct rte_mbuf *m)
{
	const struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, const struct rte_ether_hdr *);
	const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)(eth + 1);

	return m->data_len >= LK_HDR_LEN + 8 &&
	       eth->ether_type == rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4) &&
	       ip->src_addr == rte_cpu_to_be_32(raw_ipv4(1 - sd->me));
}

/* Wait for the peer's frame @p seq of @p len bytes and check all of it. */
static int
raw_recv_one(struct lk_side *sd, uint32_t len, uint64_t seq)
{
	uint64_t deadline = 0, got;
	uint32_t calls = 0;
	struct rte_mbuf *m;
	const uint8_t *d;
	bool ok;

	uint32_t plen;

	for (;;) {
		if (rte_eth_rx_burst(sd->rport, 0, &m, 1) == 1) {
			if (raw_from_peer(sd, m))
				break;
			rte_pktmbuf_free(m);
			continue;
		}
		if (deadline == 0)
			deadline = pv_deadline();
		if (pv_stalled(deadline, &calls))
			return side_fail(sd, "raw frame %" PRIu64 " never came", seq);
	}
	d = rte_pktmbuf_mtod(m, const uint8_t *);
	plen = m->pkt_len;
	memcpy(&got, d + LK_HDR_LEN, sizeof(got));
	ok = plen == len && m->nb_segs == 1 && got == seq &&
	     memcmp(d + LK_HDR_LEN + 8, pat_of(seq, 1 - sd->me), len - LK_HDR_LEN - 8) == 0;
	rte_pktmbuf_free(m);
	if (!ok)
		return side_fail(sd, "raw frame %" PRIu64 ": %u bytes, sequence %" PRIu64
				 ", or its payload wrong (%u bytes expected)", seq, plen, got, len);
	return 0;
}

/* ---- results ---- */

static int
write_result(struct lk_side *sd, const struct lk_result *r)
{
	if (write(sd->out, r, sizeof(*r)) != (ssize_t)sizeof(*r))
		return side_fail(sd, "cannot report a result: %s", strerror(errno));
	return 0;
}

/* The quantiles of the round trips in sd->samples (cycles), as one-way microseconds. */
static void
lat_result(struct lk_side *sd, uint32_t n, struct lk_result *r)
{
	uint64_t v[LK_CDF_N];

	perf_ranks_u64(sd->samples, n, lk_cdf_q, LK_CDF_N, v);
	for (unsigned int i = 0; i < LK_CDF_N; i++)
		r->cdf[i] = (double)v[i] * sd->us_per_cycle / 2;
	r->min = r->cdf[0];
	r->p50 = r->cdf[LK_Q_P50];
	r->p99 = r->cdf[LK_Q_P99];
	r->p999 = r->cdf[LK_Q_P999];
	r->max = r->cdf[LK_CDF_N - 1];
	r->done = n;
}

/* ---- raw cases ---- */

static int
raw_pp(struct lk_side *sd, const struct lk_case *c, struct lk_result *r)
{
	uint64_t total = sd->o->warmup + c->count, t0;
	struct rte_mbuf *m;

	raw_template(sd, c->size);
	for (uint64_t i = 0; i < total; i++) {
		if (sd->me == 1 && raw_recv_one(sd, c->size, i) != 0)
			return -1;
		t0 = rte_rdtsc();
		m = raw_frame(sd, c->size, i, true);
		if (m == NULL)
			return side_fail(sd, "no mbuf left");
		if (raw_send(sd, &m, 1) != 0)
			return -1;
		if (sd->me == 0) {
			if (raw_recv_one(sd, c->size, i) != 0)
				return -1;
			if (i >= sd->o->warmup)
				sd->samples[i - sd->o->warmup] = rte_rdtsc() - t0;
		}
	}
	if (sd->me == 0)
		lat_result(sd, (uint32_t)c->count, r);
	return 0;
}

/*
 * A sends the frames, then says so (its message of the swap after the case); B counts
 * those that come, in order, and times them.
 */
static int
raw_stream(struct lk_side *sd, const struct lk_case *c, struct lk_msg *mine)
{
	struct rte_mbuf *m[LK_RAW_BURST];
	uint64_t seq = 0, got = 0, t_first = 0, t_last = 0, t_wait = 0, idle = 0, now, want;
	uint16_t n, i;

	raw_template(sd, c->size);
	if (sd->me == 0) {
		while (seq < c->count) {
			n = (uint16_t)RTE_MIN((uint64_t)LK_RAW_BURST, c->count - seq);
			for (i = 0; i < n; i++) {
				m[i] = raw_frame(sd, c->size, seq++, false);
				if (m[i] == NULL) {
					rte_pktmbuf_free_bulk(m, i);
					return side_fail(sd, "no mbuf left");
				}
			}
			if (raw_send(sd, m, n) != 0)
				return -1;
		}
		return 0;
	}
	want = 0;
	for (;;) {
		n = rte_eth_rx_burst(sd->rport, 0, m, LK_RAW_BURST);
		now = perf_now_ns();
		if (n == 0) {
			/* A lossy port lost the rest: A has said it sent all, and nothing
			 * more came for a while. */
			if (++idle % 1024 == 0 && now - t_last > LK_QUIET_NS && ctl_ready(sd))
				break;
			if (t_wait == 0)
				t_wait = now;
			if (got == 0 && now - t_wait > (uint64_t)(PV_STALL_SECONDS * 1e9))
				break;
			continue;
		}
		for (i = 0; i < n; i++) {
			uint64_t s;
			uint32_t plen = m[i]->pkt_len;

			if (!raw_from_peer(sd, m[i]))
				continue;
			memcpy(&s, rte_pktmbuf_mtod_offset(m[i], const uint8_t *, LK_HDR_LEN),
			       sizeof(s));
			/* A lossy port may drop frames, never reorder or change them. */
			if (plen != c->size || s < want || s >= c->count) {
				rte_pktmbuf_free_bulk(m, n);
				return side_fail(sd, "raw stream: frame of %u bytes, sequence %"
						 PRIu64 " after %" PRIu64, plen, s, want);
			}
			if (got++ == 0)
				t_first = now;
			t_last = now;
			want = s + 1;
		}
		rte_pktmbuf_free_bulk(m, n);
		if (want == c->count)
			break;
	}
	if (got < 2)
		return side_fail(sd, "raw stream: %" PRIu64 " frames of %" PRIu64 " came", got,
				 c->count);
	mine->val = got;
	mine->val2 = t_last - t_first;
	return 0;
}

/* ---- verbs: objects ---- */

static inline uint8_t *
slot(const struct lk_ctx *x, uint32_t j)
{
	return pv_slot(&x->s, j, LK_SLOT);
}

static int
post_recv(struct lk_ctx *x, uint32_t j)
{
	bool data = x->c->kind == LK_SEND_BW;
	struct ibv_sge sge = {
		.addr = data ? (uintptr_t)x->s.data : (uintptr_t)slot(x, 1 + j),
		.length = x->recv_len,
		.lkey = data ? x->s.data_mr->lkey : x->s.slot_mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = j, .sg_list = &sge, .num_sge = 1 }, *bad;
	int ret = ibv_post_recv(x->s.qp, &wr, &bad);

	if (ret != 0)
		return side_fail(x->sd, "ibv_post_recv: %s", strerror(ret));
	return 0;
}

static bool
kind_is_tm(const struct lk_ctx *x)
{
	/* The rendezvous sender's QP has an RQ: the FINs come there. */
	return x->c->kind == LK_TM_LAT || (x->c->kind == LK_RNDV_BW && x->sd->me == 1);
}

/* Side objects of a verbs case, and the peer's QP number, address and rkey. */
static int
ctx_setup(struct lk_ctx *x, struct lk_side *sd, const struct lk_case *c)
{
	const unsigned int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				 IBV_ACCESS_REMOTE_READ;
	uint32_t rq = 0, sq = sd->o->window + LK_SIGNAL_EVERY;
	struct lk_msg mine = { 0 }, theirs;
	size_t data_len = 0;

	memset(x, 0, sizeof(*x));
	x->sd = sd;
	x->c = c;
	switch (c->kind) {
	case LK_SEND_LAT:
	case LK_TM_LAT:
		rq = LK_LAT_RQ;
		x->recv_len = c->size;
		break;
	case LK_SEND_RATE:
		rq = LK_RATE_RQ;
		x->recv_len = c->size;
		break;
	case LK_SEND_BW:
		rq = LK_BW_RQ;
		x->recv_len = c->size;
		data_len = c->size;
		break;
	case LK_RNDV_BW:
		rq = 2 * LK_RNDV_WINDOW;
		x->recv_len = sizeof(struct ibv_tmh);
		data_len = c->size;
		break;
	case LK_WRITE_BW:
	case LK_READ_BW:
		data_len = c->size;
		break;
	default:
		break;
	}
	x->rq_depth = rq;
	if (pv_alloc_mr(LK_CMD, &sd->dev, (size_t)(RTE_MAX(rq, LK_LAT_RQ) + 1) * LK_SLOT,
			(int)acc, &x->s.slots, &x->s.slot_mr) != 0)
		return -1;
	if (data_len > 0 && pv_alloc_mr(LK_CMD, &sd->dev, data_len, (int)acc, &x->s.data,
					&x->s.data_mr) != 0)
		return -1;
	if (kind_is_tm(x)) {
		if (pv_side_tm_srq(LK_CMD, &x->s, &sd->dev, LK_CQ_DEPTH, LK_TM_SPARE_WRS,
				   LK_TM_TAGS, LK_TM_OPS) != 0)
			return -1;
		for (uint32_t j = 0; j < LK_TM_SPARE_WRS; j++) {
			struct ibv_sge sge = { .addr = (uintptr_t)slot(x, 1 + j),
					       .length = LK_SLOT, .lkey = x->s.slot_mr->lkey };
			struct ibv_recv_wr wr = { .wr_id = LK_SPARE_WRID | j, .sg_list = &sge,
						  .num_sge = 1 }, *bad;
			int ret = ibv_post_srq_recv(x->s.srq, &wr, &bad);

			if (ret != 0)
				return side_fail(sd, "ibv_post_srq_recv: %s", strerror(ret));
		}
	} else if (pv_side_cq(LK_CMD, &x->s, &sd->dev, LK_CQ_DEPTH) != 0) {
		return -1;
	}
	if (pv_side_qp(LK_CMD, &x->s, &sd->dev, sq, rq > 0 ? rq : 1, LK_MAX_INLINE, acc) != 0)
		return -1;
	if (!kind_is_tm(x))
		for (uint32_t j = 0; j < rq; j++)
			if (post_recv(x, j) != 0)
				return -1;
	mine.qpn = x->s.qp->qp_num;
	if (c->kind == LK_WRITE_LAT) {
		mine.addr = (uintptr_t)slot(x, 1);
		mine.rkey = x->s.slot_mr->rkey;
	} else if (x->s.data != NULL) {
		mine.addr = (uintptr_t)x->s.data;
		mine.rkey = x->s.data_mr->rkey;
	}
	if (ctl_swap(sd, &mine, &theirs) != 0)
		return -1;
	x->peer_addr = theirs.addr;
	x->peer_rkey = theirs.rkey;
	return pv_rc_connect_rd(x->s.qp, theirs.qpn, &sd->peer_gid,
				(c->kind == LK_READ_BW || c->kind == LK_RNDV_BW) ? LK_RD_ATOMIC : 1);
}

/* ---- verbs: completions ---- */

static int
wc_wrong(struct lk_ctx *x, const char *what, int status, int opcode, uint64_t wr_id,
	 uint32_t len)
{
	return side_fail(x->sd, "%s completion: status %s, opcode %d, wr_id %#" PRIx64
			 ", byte_len %u", what, ibv_wc_status_str((enum ibv_wc_status)status),
			 opcode, wr_id, len);
}

/* A signaled SEND or WRITE done: every WR up to it is. */
static inline void
send_done(struct lk_ctx *x, uint64_t wr_id)
{
	x->acked = wr_id + 1;
	x->s.sig_done++;
}

/* A receive into the RQ: checked by kind, then posted again. */
static int
recv_done(struct lk_ctx *x, const struct ibv_wc *wc)
{
	uint32_t j = (uint32_t)(x->s.recvs % x->rq_depth);
	const uint8_t *p = slot(x, 1 + j);
	const struct ibv_tmh *tmh = (const struct ibv_tmh *)(const void *)p;
	uint64_t seq = x->s.recvs;
	bool ok = wc->wr_id == j && wc->byte_len == x->recv_len;

	if (ok && x->c->kind == LK_SEND_LAT)
		ok = memcmp(p, pat_of(seq, 1 - x->sd->me), x->recv_len) == 0;
	else if (ok && x->c->kind == LK_SEND_RATE)
		ok = memcmp(p, &seq, sizeof(seq)) == 0;
	else if (ok && x->c->kind == LK_RNDV_BW)
		ok = tmh->opcode == IBV_TMH_FIN &&
		     tmh->tag == rte_cpu_to_be_64(UINT64_C(0x7a60000000000000) | x->fins);
	if (!ok)
		return side_fail(x->sd, "receive %" PRIu64 ": wr_id %" PRIu64 ", byte_len %u "
				 "or payload wrong (%u, %u expected)", seq, wc->wr_id,
				 wc->byte_len, j, x->recv_len);
	if (x->c->kind == LK_RNDV_BW)
		x->fins++;
	x->s.recvs++;
	return post_recv(x, j);
}

/* Poll side @p x's ordinary CQ once. @return completions seen, or -1. */
static int
rc_poll(struct lk_ctx *x)
{
	struct ibv_wc wc[16];
	int got = ibv_poll_cq(x->s.cq, 16, wc), i;

	if (got < 0)
		return side_fail(x->sd, "ibv_poll_cq: %d", got);
	for (i = 0; i < got; i++) {
		if (wc[i].status != IBV_WC_SUCCESS)
			return wc_wrong(x, "a", wc[i].status, wc[i].opcode, wc[i].wr_id,
					wc[i].byte_len);
		if (wc[i].opcode == IBV_WC_SEND || wc[i].opcode == IBV_WC_RDMA_WRITE ||
		    wc[i].opcode == IBV_WC_RDMA_READ)
			send_done(x, wc[i].wr_id);
		else if (wc[i].opcode != IBV_WC_RECV || recv_done(x, &wc[i]) != 0)
			return wc[i].opcode != IBV_WC_RECV ?
			       wc_wrong(x, "an unexpected", wc[i].status, wc[i].opcode,
					wc[i].wr_id, wc[i].byte_len) : -1;
	}
	return got;
}

static inline uint64_t
tm_tag(uint64_t seq)
{
	return UINT64_C(0x7a60000000000000) | seq;
}

/* ADD tag @p seq. @return 0, -1 (failed, said why), or 1 when @p may_wait and the SRQ
 * has its max_ops outstanding: the device has not run them yet, and a poll lets it. */
static int
tm_add(struct lk_ctx *x, uint64_t seq, void *buf, uint32_t len, uint32_t lkey, bool may_wait)
{
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = len, .lkey = lkey };
	struct ibv_ops_wr op = {
		.wr_id = seq,
		.opcode = IBV_WR_TAG_ADD,
		.tm.add = { .recv_wr_id = seq, .sg_list = &sge, .num_sge = 1,
			    .tag = tm_tag(seq), .mask = UINT64_MAX },
	}, *bad;
	int ret = ibv_post_srq_ops(x->s.srq, &op, &bad);

	if (ret == ENOMEM && may_wait)
		return 1;
	if (ret != 0)
		return side_fail(x->sd, "ibv_post_srq_ops(TAG_ADD %" PRIu64 "): %s", seq,
				 strerror(ret));
	return 0;
}

/*
 * One tagged completion. The eager ping-pong's receive is one completion (MATCH and
 * DATA_VALID); a rendezvous has two, MATCH then DATA_VALID once the READ is done.
 */
static int
tm_wc(struct lk_ctx *x, struct ibv_cq_ex *cq)
{
	enum ibv_wc_opcode op = ibv_wc_read_opcode(cq);
	unsigned int flags;
	struct ibv_wc_tm_info info;
	uint32_t len;
	uint64_t seq;

	if (cq->status != IBV_WC_SUCCESS)
		return wc_wrong(x, "a tagged", cq->status, op, cq->wr_id, 0);
	if (op == IBV_WC_SEND) {
		send_done(x, cq->wr_id);
		return 0;
	}
	flags = ibv_wc_read_wc_flags(cq);
	len = ibv_wc_read_byte_len(cq);
	ibv_wc_read_tm_info(cq, &info);
	if (op != IBV_WC_TM_RECV)
		return wc_wrong(x, "a tagged", cq->status, op, cq->wr_id, len);
	if (x->c->kind == LK_TM_LAT) {
		seq = x->s.recvs;
		if ((flags & (IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID)) !=
		    (IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID) || cq->wr_id != seq ||
		    len != x->c->size || info.tag != tm_tag(seq) ||
		    memcmp(slot(x, 1 + (uint32_t)(seq % LK_LAT_RQ)), pat_of(seq, 1 - x->sd->me),
			   len) != 0)
			return side_fail(x->sd, "tagged receive %" PRIu64 ": flags %#x, wr_id %#"
					 PRIx64 ", byte_len %u, tag %#" PRIx64 " or payload wrong "
					 "(a wr_id %#" PRIx64 "|n: no tag matched)", seq, flags,
					 cq->wr_id, len, info.tag, LK_SPARE_WRID);
		x->s.recvs++;
		return 0;
	}
	/* An unexpected header (no MATCH, no DATA_VALID): software would finish it; here
	 * it means the receiver's application fell LK_RNDV_AHEAD behind its device. */
	if ((flags & (IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID)) == 0)
		return side_fail(x->sd, "rendezvous %" PRIu64 ": a header came before its tag "
				 "(%" PRIu64 " done): unexpected", x->matches, x->valid);
	if (flags & IBV_WC_TM_MATCH) {
		if (cq->wr_id != x->matches || info.tag != tm_tag(x->matches))
			return side_fail(x->sd, "rendezvous %" PRIu64 ": MATCH of wr_id %#" PRIx64
					 ", tag %#" PRIx64, x->matches, cq->wr_id, info.tag);
		x->matches++;
	}
	if (flags & IBV_WC_TM_DATA_VALID) {
		if (cq->wr_id != x->valid || len != x->c->size || x->valid >= x->matches)
			return side_fail(x->sd, "rendezvous %" PRIu64 ": DATA_VALID of wr_id %#"
					 PRIx64 ", %u bytes", x->valid, cq->wr_id, len);
		x->valid++;
	}
	return 0;
}

/* Poll side @p x's extended CQ once. @return 0 or -1. */
static int
tm_poll(struct lk_ctx *x)
{
	struct ibv_poll_cq_attr attr = { .comp_mask = 0 };
	int ret, rc = 0;

	ret = ibv_start_poll(x->s.cqx, &attr);
	if (ret == ENOENT)
		return 0;
	if (ret != 0)
		return side_fail(x->sd, "ibv_start_poll: %s", strerror(ret));
	do
		rc = tm_wc(x, x->s.cqx);
	while (rc == 0 && (ret = ibv_next_poll(x->s.cqx)) == 0);
	ibv_end_poll(x->s.cqx);
	if (rc == 0 && ret != ENOENT)
		return side_fail(x->sd, "ibv_next_poll: %s", strerror(ret));
	return rc;
}

static inline int
ctx_poll(struct lk_ctx *x)
{
	return x->s.cqx != NULL ? tm_poll(x) : (rc_poll(x) < 0 ? -1 : 0);
}

/*
 * Post WR number x->s.sends: a SEND of slot 0 (or of the data buffer), or a WRITE to the
 * peer. Signaled every LK_SIGNAL_EVERY and when @p last; a full SQ is polled, never an
 * error.
 */
static int
post_one(struct lk_ctx *x, enum ibv_wr_opcode opcode, void *buf, uint32_t len, uint32_t lkey,
	 uint64_t raddr, bool last)
{
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = len, .lkey = lkey };
	struct ibv_send_wr wr = {
		.wr_id = x->s.sends, .sg_list = &sge, .num_sge = 1, .opcode = opcode,
	}, *bad;
	uint64_t deadline = 0;
	uint32_t calls = 0;
	int ret;

	if (len <= LK_MAX_INLINE && opcode != IBV_WR_RDMA_READ)
		wr.send_flags |= IBV_SEND_INLINE;
	if (last || x->s.sends % LK_SIGNAL_EVERY == LK_SIGNAL_EVERY - 1)
		wr.send_flags |= IBV_SEND_SIGNALED;
	if (opcode == IBV_WR_RDMA_WRITE || opcode == IBV_WR_RDMA_READ) {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = x->peer_rkey;
	}
	while ((ret = ibv_post_send(x->s.qp, &wr, &bad)) == ENOMEM) {
		if (ctx_poll(x) != 0)
			return -1;
		if (deadline == 0)
			deadline = pv_deadline();
		if (pv_stalled(deadline, &calls))
			return side_fail(x->sd, "the send queue stays full");
	}
	if (ret != 0)
		return side_fail(x->sd, "ibv_post_send: %s", strerror(ret));
	x->s.sends++;
	return 0;
}

/* Poll until *@p v reaches @p want (a counter of @p x). */
static int
poll_until(struct lk_ctx *x, const uint64_t *v, uint64_t want, const char *what)
{
	uint64_t deadline = 0, last = *v;
	uint32_t calls = 0;

	while (*v < want) {
		if (ctx_poll(x) != 0)
			return -1;
		if (*v >= want)
			break;
		/* A stall is a wait without progress, however long the case. */
		if (deadline == 0 || *v != last) {
			deadline = pv_deadline();
			last = *v;
		}
		if (pv_stalled(deadline, &calls))
			return side_fail(x->sd, "%s: %" PRIu64 " of %" PRIu64 " after %.0f s",
					 what, *v, want, PV_STALL_SECONDS);
	}
	return 0;
}

/* Drive the device until the peer's next control message is there. */
static int
poll_until_peer(struct lk_ctx *x)
{
	/* B sees nothing of WRITEs: only a run gone wrong lasts this long. */
	uint64_t deadline = perf_now_ns() + (uint64_t)(600 * 1e9);

	for (uint32_t i = 1;; i++) {
		if (ctx_poll(x) != 0)
			return -1;
		if ((i & 255) == 0 && ctl_ready(x->sd))
			return 0;
		if ((i & 4095) == 0 && perf_now_ns() > deadline)
			return side_fail(x->sd, "the peer never said it was done");
	}
}

/* ---- verbs: latency ---- */

/* Wait for the peer's message @p seq to have been received. */
static int
recv_wait(struct lk_ctx *x, uint64_t seq)
{
	return poll_until(x, &x->s.recvs, seq + 1, "the peer's message");
}

static int
send_one(struct lk_ctx *x, uint64_t seq)
{
	uint32_t len = x->c->size;

	memcpy(slot(x, 0), pat_of(seq, x->sd->me), len);
	return post_one(x, IBV_WR_SEND, slot(x, 0), len, x->s.slot_mr->lkey, 0, false);
}

/* Wait for the peer's WRITE @p seq into slot 1: its last 8 bytes are seq + 1. */
static int
write_wait(struct lk_ctx *x, uint64_t seq)
{
	uint32_t len = x->c->size, calls = 0;
	volatile uint64_t *mark = (volatile uint64_t *)(void *)(slot(x, 1) + len - 8);
	uint64_t deadline = 0;

	while (*mark != seq + 1) {
		if (ctx_poll(x) != 0)
			return -1;
		if (deadline == 0)
			deadline = pv_deadline();
		if (pv_stalled(deadline, &calls))
			return side_fail(x->sd, "WRITE %" PRIu64 " never landed", seq);
	}
	if (len > 8 && memcmp(slot(x, 1), pat_of(seq, 1 - x->sd->me), len - 8) != 0)
		return side_fail(x->sd, "WRITE %" PRIu64 ": payload wrong", seq);
	return 0;
}

static int
write_one(struct lk_ctx *x, uint64_t seq)
{
	uint32_t len = x->c->size;
	uint64_t mark = seq + 1;

	memcpy(slot(x, 0), pat_of(seq, x->sd->me), len - 8);
	memcpy(slot(x, 0) + len - 8, &mark, 8);
	return post_one(x, IBV_WR_RDMA_WRITE, slot(x, 0), len, x->s.slot_mr->lkey, x->peer_addr,
			false);
}

/* Each side ADDs the tag of the message it waits for before the one it answers. */
static int
tagged_one(struct lk_ctx *x, uint64_t seq)
{
	uint32_t len = x->c->size, hl = (uint32_t)sizeof(struct ibv_tmh);
	struct ibv_tmh *tmh = (struct ibv_tmh *)(void *)slot(x, 0);
	uint64_t next = seq + x->sd->me;

	if (tm_add(x, next, slot(x, 1 + (uint32_t)(next % LK_LAT_RQ)), len,
		   x->s.slot_mr->lkey, false) != 0)
		return -1;
	memset(tmh, 0, sizeof(*tmh));
	tmh->opcode = IBV_TMH_EAGER;
	tmh->app_ctx = rte_cpu_to_be_32((uint32_t)seq);
	tmh->tag = rte_cpu_to_be_64(tm_tag(seq));
	memcpy(slot(x, 0) + hl, pat_of(seq, x->sd->me), len);
	return post_one(x, IBV_WR_SEND, slot(x, 0), hl + len, x->s.slot_mr->lkey, 0, false);
}

/*
 * A verbs ping-pong: B waits for message i and answers it; A times from its message i
 * to the answer. @p send posts this side's message, @p wait waits for the peer's.
 */
static int
verbs_pp(struct lk_ctx *x, struct lk_result *r, int (*send)(struct lk_ctx *, uint64_t),
	 int (*wait)(struct lk_ctx *, uint64_t))
{
	struct lk_side *sd = x->sd;
	uint64_t total = sd->o->warmup + x->c->count, t0;

	for (uint64_t i = 0; i < total; i++) {
		if (sd->me == 1 && wait(x, i) != 0)
			return -1;
		t0 = rte_rdtsc();
		if (send(x, i) != 0)
			return -1;
		if (sd->me == 0) {
			if (wait(x, i) != 0)
				return -1;
			if (i >= sd->o->warmup)
				sd->samples[i - sd->o->warmup] = rte_rdtsc() - t0;
		}
	}
	if (sd->me == 0)
		lat_result(sd, (uint32_t)x->c->count, r);
	return 0;
}

/* ---- verbs: message rate and bandwidth ---- */

/* A's window of WRs: post @p count, at most o->window unfinished, wait for all. */
static int
stream_post(struct lk_ctx *x, enum ibv_wr_opcode opcode, uint32_t len)
{
	uint64_t count = x->c->count, deadline = 0;
	uint32_t window = x->sd->o->window, calls = 0;
	bool data = x->s.data != NULL;
	uint8_t *buf = data ? x->s.data : slot(x, 0);
	uint32_t lkey = data ? x->s.data_mr->lkey : x->s.slot_mr->lkey;

	while (x->s.sends < count) {
		if (x->s.sends - x->acked >= window) {
			if (ctx_poll(x) != 0)
				return -1;
			if (deadline == 0)
				deadline = pv_deadline();
			if (pv_stalled(deadline, &calls))
				return side_fail(x->sd, "no completion for %.0f s",
						 PV_STALL_SECONDS);
			continue;
		}
		deadline = 0;
		if (!data)
			memcpy(buf, &x->s.sends, sizeof(x->s.sends));
		if (post_one(x, opcode, buf, len, lkey, x->peer_addr, x->s.sends + 1 == count) != 0)
			return -1;
	}
	return poll_until(x, &x->acked, count, "completions");
}

/* The rendezvous sender: TMH(RNDV) + RVH headers, one per FIN back, at most a window. */
static int
rndv_post(struct lk_ctx *x)
{
	uint64_t count = x->c->count;
	uint32_t hl = (uint32_t)(sizeof(struct ibv_tmh) + sizeof(struct ibv_rvh));
	struct ibv_tmh *tmh = (struct ibv_tmh *)(void *)slot(x, 0);
	struct ibv_rvh *rvh = (struct ibv_rvh *)(tmh + 1);

	while (x->s.sends < count) {
		if (x->s.sends - x->fins >= LK_RNDV_WINDOW) {
			if (poll_until(x, &x->fins, x->fins + 1, "FINs") != 0)
				return -1;
			continue;
		}
		memset(tmh, 0, sizeof(*tmh));
		tmh->opcode = IBV_TMH_RNDV;
		tmh->app_ctx = rte_cpu_to_be_32((uint32_t)x->s.sends);
		tmh->tag = rte_cpu_to_be_64(tm_tag(x->s.sends));
		rvh->va = rte_cpu_to_be_64((uintptr_t)x->s.data);
		rvh->rkey = rte_cpu_to_be_32(x->s.data_mr->rkey);
		rvh->len = rte_cpu_to_be_32(x->c->size);
		if (post_one(x, IBV_WR_SEND, slot(x, 0), hl, x->s.slot_mr->lkey, 0,
			     x->s.sends + 1 == count) != 0)
			return -1;
	}
	if (poll_until(x, &x->fins, count, "FINs") != 0)
		return -1;
	return poll_until(x, &x->acked, count, "completions");
}

/* The rendezvous receiver: LK_RNDV_AHEAD tags ahead of the messages, one more per one done. */
static int
rndv_recv(struct lk_ctx *x)
{
	uint64_t count = x->c->count, added = 0, deadline = 0, last = 0;
	uint32_t calls = 0;
	bool told = false;

	while (x->valid < count) {
		while (added < count && added < x->valid + LK_RNDV_AHEAD) {
			int rc = tm_add(x, added, x->s.data, x->c->size, x->s.data_mr->lkey, true);

			if (rc < 0)
				return -1;
			if (rc > 0)
				break;
			added++;
		}
		if (!told) {
			/* The first tags are in: the sender may start. */
			struct lk_msg go = { 0 };

			told = true;
			if (ctl_write(x->sd, &go) != 0)
				return -1;
		}
		if (tm_poll(x) != 0)
			return -1;
		if (deadline == 0 || x->valid != last) {
			deadline = pv_deadline();
			last = x->valid;
		}
		if (pv_stalled(deadline, &calls))
			return side_fail(x->sd, "rendezvous: %" PRIu64 " of %" PRIu64 " done",
					 x->valid, count);
	}
	return 0;
}

/*
 * A message rate or bandwidth case. A times from its first post to the last
 * completion (rendezvous: the last FIN, the receiver's READ done); B takes part, then
 * checks what it received (A, for READs: B's buffer is the source, filled before B says
 * go); the two swap verdicts and B's count.
 */
static int
stream_case(struct lk_ctx *x, struct lk_result *r)
{
	struct lk_side *sd = x->sd;
	const struct lk_case *c = x->c;
	struct lk_msg mine = { 0 }, theirs;
	uint64_t t0, t1 = 0, seed = case_seed(c);
	int rc = 0;
	int64_t bad;

	if (sd->me == 0) {
		if (c->kind == LK_READ_BW)
			memset(x->s.data, 0, c->size);
		else if (x->s.data != NULL)
			data_fill(x->s.data, c->size, seed);
		if ((c->kind == LK_RNDV_BW || c->kind == LK_READ_BW) && ctl_read(sd, &theirs) != 0)
			return -1;
		t0 = perf_now_ns();
		switch (c->kind) {
		case LK_SEND_RATE:
		case LK_SEND_BW:
			rc = stream_post(x, IBV_WR_SEND, c->size);
			break;
		case LK_WRITE_BW:
			rc = stream_post(x, IBV_WR_RDMA_WRITE, c->size);
			break;
		case LK_READ_BW:
			rc = stream_post(x, IBV_WR_RDMA_READ, c->size);
			break;
		default:
			rc = rndv_post(x);
			break;
		}
		t1 = perf_now_ns();
		if (rc == 0 && c->kind == LK_READ_BW &&
		    (bad = data_check(x->s.data, c->size, seed)) >= 0)
			rc = side_fail(sd, "%s of %u bytes: byte %" PRId64 " wrong",
				       lk_kind_name(c->kind), c->size, bad);
		mine.status = rc;
		if (ctl_swap(sd, &mine, &theirs) != 0)
			return -1;
		r->done = theirs.val;
		r->rate = (double)c->count * 1e9 / (double)(t1 - t0);
		r->mbps = r->rate * c->size / 1e6;
		return 0;
	}
	switch (c->kind) {
	case LK_SEND_RATE:
	case LK_SEND_BW:
		rc = poll_until(x, &x->s.recvs, c->count, "receives");
		break;
	case LK_WRITE_BW:
		rc = poll_until_peer(x);
		break;
	case LK_READ_BW: {
		struct lk_msg go = { 0 };

		data_fill(x->s.data, c->size, seed);
		rc = ctl_write(sd, &go) != 0 ? -1 : poll_until_peer(x);
		break;
	}
	default:
		rc = rndv_recv(x);
		break;
	}
	if (rc == 0 && x->s.data != NULL && c->kind != LK_READ_BW && (bad = data_check(x->s.data, c->size, seed)) >= 0)
		rc = side_fail(sd, "%s of %u bytes: byte %" PRId64 " wrong", lk_kind_name(c->kind),
			       c->size, bad);
	mine.status = rc;
	mine.val = c->kind == LK_RNDV_BW ? x->valid :
		   c->kind == LK_WRITE_BW || c->kind == LK_READ_BW ? c->count : x->s.recvs;
	return ctl_swap(sd, &mine, &theirs);
}

/* ---- one round ---- */

/*
 * Nanoseconds the inline helper thread ("dpv-helper", the name dpverbs gives it) of
 * this process has been on a CPU (/proc/self/task/<tid>/schedstat), 0 while there is
 * none. Looked up afresh each time: the thread starts and ends with its devices.
 */
static uint64_t
helper_cpu_ns(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	char path[300], comm[32];
	unsigned long long ns = 0;
	FILE *f;

	if (d == NULL)
		return 0;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		f = fopen(path, "r");
		if (f == NULL)
			continue;
		if (fgets(comm, sizeof(comm), f) == NULL)
			comm[0] = '\0';
		fclose(f);
		if (strncmp(comm, "dpv-helper", 10) != 0)
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/schedstat", e->d_name);
		f = fopen(path, "r");
		if (f != NULL) {
			if (fscanf(f, "%llu", &ns) != 1)
				ns = 0;
			fclose(f);
		}
		break;
	}
	closedir(d);
	return ns;
}

static int
verbs_case(struct lk_side *sd, const struct lk_case *c, struct lk_result *r)
{
	struct lk_ctx x;
	struct lk_msg mine = { 0 }, theirs;
	uint64_t t0, h0;
	int rc;

	rc = ctx_setup(&x, sd, c);
	if (rc == 0 && c->kind == LK_TM_LAT && sd->me == 1)
		rc = tm_add(&x, 0, slot(&x, 1), c->size, x.s.slot_mr->lkey, false);
	mine.status = rc;
	/* Both sides connected (and B's first tag ADDed) before the first message. */
	rc = ctl_swap(sd, &mine, NULL);
	h0 = helper_cpu_ns();
	t0 = perf_now_ns();
	if (rc == 0) {
		switch (c->kind) {
		case LK_SEND_LAT:
			rc = verbs_pp(&x, r, send_one, recv_wait);
			break;
		case LK_WRITE_LAT:
			rc = verbs_pp(&x, r, write_one, write_wait);
			break;
		case LK_TM_LAT:
			rc = verbs_pp(&x, r, tagged_one, recv_wait);
			break;
		default:
			rc = stream_case(&x, r);
			break;
		}
	}
	if (rc == 0) {
		/* The peer's last messages are acknowledged before its QP goes; the two
		 * sides' helper times travel with it. */
		mine.status = 0;
		mine.val = helper_cpu_ns() - h0;
		mine.val2 = perf_now_ns() - t0;
		rc = ctl_swap(sd, &mine, &theirs);
		if (rc == 0 && sd->me == 0) {
			r->helper_pct[0] = 100.0 * (double)mine.val / (double)mine.val2;
			r->helper_pct[1] = 100.0 * (double)theirs.val / (double)theirs.val2;
		}
	}
	return rc | pv_side_teardown(&x.s);
}

static int
helper_idle(struct lk_side *sd, uint32_t us)
{
	int ret = dpv_verbs_set_inline_idle_us(us);

	if (ret != 0)
		return side_fail(sd, "dpv_verbs_set_inline_idle_us(%u): %s", us, strerror(ret));
	return 0;
}

static int
raw_case(struct lk_side *sd, const struct lk_case *c, struct lk_result *r)
{
	struct lk_msg mine = { 0 }, theirs;
	int rc;

	/*
	 * Nothing but the raw port while it runs: the device has nothing to do, and its
	 * inline helper thread would drive it every idle period, on the polling core.
	 */
	rc = helper_idle(sd, 0);
	raw_drain(sd);
	mine.status = rc;
	if (ctl_swap(sd, &mine, NULL) != 0)
		return -1;
	if (c->kind == LK_RAW_PP) {
		rc = raw_pp(sd, c, r);
		mine.status = rc | helper_idle(sd, sd->o->idle_us);
		return ctl_swap(sd, &mine, NULL);
	}
	rc = raw_stream(sd, c, &mine);
	mine.status = rc | helper_idle(sd, sd->o->idle_us);
	if (ctl_swap(sd, &mine, &theirs) != 0)
		return -1;
	if (sd->me == 0) {
		r->done = theirs.val;
		r->rate = (double)(theirs.val - 1) * 1e9 / (double)theirs.val2;
		r->mbps = r->rate * (c->size - LK_HDR_LEN - LK_ICRC_LEN) / 1e6;
	}
	return 0;
}

/* dpv_verbs_open_port() waits for no link: wait for the port to be ACTIVE. */
static int
verbs_link_wait(struct lk_side *sd)
{
	uint64_t deadline = perf_now_ns() + (uint64_t)(LK_LINK_WAIT_S * 1e9);
	struct ibv_port_attr pa;

	for (;;) {
		if (ibv_query_port(sd->dev.ctx, 1, &pa) == 0 && pa.state == IBV_PORT_ACTIVE)
			return 0;
		if (perf_now_ns() > deadline)
			return side_fail(sd, "%s: the port is not ACTIVE after %.0f s", sd->dev.name,
					 LK_LINK_WAIT_S);
		rte_delay_us_sleep(1000);
	}
}

static int
side_open(struct lk_side *sd, unsigned int round)
{
	const struct lk_opts *o = sd->o;
	char cores[128], prefix[64], vdev[2][512];
	char *argv[24], *save = NULL;
	int argc = 0, ret;
	struct lk_msg mine = { 0 }, theirs;
	char name[2][64];

	/* lcore:N and service:N progress run on a worker (or service) lcore of this
	 * process's EAL. */
	lk_eal_cores(o, sd->me, cores, sizeof(cores), sd->mode, sizeof(sd->mode));
	snprintf(prefix, sizeof(prefix), "%s-%u%c", o->prefix, round, 'a' + sd->me);
	snprintf(vdev[0], sizeof(vdev[0]), "--vdev=%s", o->vdev[sd->me]);
	snprintf(vdev[1], sizeof(vdev[1]), "--vdev=%s", o->raw_vdev[sd->me]);
	argv[argc++] = (char *)(uintptr_t)"dpv-perf-link";
	for (char *t = strtok_r(cores, " ", &save); t != NULL; t = strtok_r(NULL, " ", &save))
		argv[argc++] = t;
	argv[argc++] = (char *)(uintptr_t)"--file-prefix";
	argv[argc++] = prefix;
	argv[argc++] = (char *)(uintptr_t)"--no-pci";
	argv[argc++] = (char *)(uintptr_t)"--no-telemetry";
	argv[argc++] = (char *)(uintptr_t)"--log-level=lib.eal:error";
	if (o->huge) {
		argv[argc++] = (char *)(uintptr_t)"--in-memory";
		argv[argc++] = (char *)(uintptr_t)"-m256";
	} else {
		argv[argc++] = (char *)(uintptr_t)"--no-huge";
		argv[argc++] = (char *)(uintptr_t)"--no-shconf";
		argv[argc++] = (char *)(uintptr_t)"-m512";
	}
	argv[argc++] = vdev[0];
	argv[argc++] = vdev[1];
	argv[argc] = NULL;
	if (sd->me == 1 && ctl_read(sd, &theirs) != 0)
		return -1;
	if (rte_eal_init(argc, argv) < 0)
		return side_fail(sd, "rte_eal_init: %s", rte_strerror(rte_errno));
	for (unsigned int i = 0; i < 2; i++) {
		const char *d = i == 0 ? o->vdev[sd->me] : o->raw_vdev[sd->me];

		snprintf(name[i], sizeof(name[i]), "%.*s", (int)strcspn(d, ","), d);
	}
	if (rte_eth_dev_get_port_by_name(name[0], &sd->vport) != 0 ||
	    rte_eth_dev_get_port_by_name(name[1], &sd->rport) != 0)
		return side_fail(sd, "no ethdev port %s or %s", name[0], name[1]);
	sd->us_per_cycle = 1e6 / (double)rte_get_tsc_hz();
	if (helper_idle(sd, o->idle_us) != 0)
		return -1;
	sd->dev.ctx = dpv_verbs_open_port(sd->vport, RTE_IPV4(10, 79, 0, 1 + sd->me));
	if (sd->dev.ctx == NULL)
		return side_fail(sd, "dpv_verbs_open_port(%u): %s", sd->vport, strerror(errno));
	snprintf(sd->dev.name, sizeof(sd->dev.name), "%s", ibv_get_device_name(sd->dev.ctx->device));
	if (strcmp(sd->mode, "inline") != 0) {
		ret = dpv_verbs_set_progress(sd->dev.ctx, sd->mode);
		if (ret != 0)
			return side_fail(sd, "dpv_verbs_set_progress(%s): %s", sd->mode,
					 strerror(ret));
	}
	sd->dev.pd = ibv_alloc_pd(sd->dev.ctx);
	if (sd->dev.pd == NULL || ibv_query_gid(sd->dev.ctx, 1, 0, &sd->dev.gid) != 0)
		return side_fail(sd, "ibv_alloc_pd or ibv_query_gid: %s", strerror(errno));
	if (raw_open(sd) != 0)
		return -1;
	/* B's ports join A's (a memif client, its server): A's first. */
	if (sd->me == 0 && ctl_write(sd, &mine) != 0)
		return -1;
	if (verbs_link_wait(sd) != 0 || raw_link_wait(sd) != 0)
		return -1;
	memcpy(mine.mac, sd->mac.addr_bytes, 6);
	mine.gid = sd->dev.gid;
	if (ctl_swap(sd, &mine, &theirs) != 0)
		return -1;
	memcpy(sd->peer_mac.addr_bytes, theirs.mac, 6);
	sd->peer_gid = theirs.gid;
	return 0;
}

int
lk_side_run(const struct lk_opts *o, unsigned int me, unsigned int round, int ctl, int out)
{
	struct lk_case cases[64];
	struct lk_side sd = { .o = o, .me = me, .ctl = ctl, .out = out };
	unsigned int n = lk_plan(o, cases, 64), i;
	struct lk_result r;
	int rc = 0;

	for (i = 0; i < sizeof(lk_ramp); i++)
		lk_ramp[i] = (uint8_t)(i * 7);
	sd.samples = calloc(o->lat_iters, sizeof(*sd.samples));
	if (sd.samples == NULL)
		return side_fail(&sd, "out of memory"), PERF_EXIT_FAIL;
	if (side_open(&sd, round) != 0)
		rc = -1;
	for (i = 0; rc == 0 && i < n; i++) {
		memset(&r, 0, sizeof(r));
		r.c = cases[i];
		r.helper_pct[0] = r.helper_pct[1] = NAN;
		if (cases[i].kind == LK_RAW_PP || cases[i].kind == LK_RAW_STREAM)
			rc = raw_case(&sd, &cases[i], &r);
		else
			rc = verbs_case(&sd, &cases[i], &r);
		if (rc == 0 && me == 0)
			rc = write_result(&sd, &r);
	}
	raw_close(&sd);
	if (sd.dev.pd != NULL)
		rc |= pv_destroyed("ibv_dealloc_pd", ibv_dealloc_pd(sd.dev.pd));
	if (sd.dev.ctx != NULL)
		rc |= pv_destroyed("ibv_close_device", ibv_close_device(sd.dev.ctx));
	free(sd.samples);
	return rc == 0 ? PERF_EXIT_OK : PERF_EXIT_FAIL;
}
