/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RC loss recovery seen through <infiniband/verbs.h>: one process, dpv0 (A) and dpv1
 * (B) of one ring pair, with the faults port of DPV_FAULTS between them (or none: the
 * loss-free control run). At least 100,000 messages of mixed sizes, 1 B to 4 MiB, of
 * every kind (SEND, SEND_WITH_IMM, RDMA_WRITE, RDMA_WRITE_WITH_IMM, RDMA_READ, and
 * tagged eager SENDs matched in a TM-SRQ) run on several streams at once, both
 * directions, each with WINDOW work requests in flight.
 *
 * A stream is one sender QP and one receiver QP with a pair of byte rings, L at the
 * sender and R at the receiver; message k of a stream takes the same offset in both.
 * The data source (L, or R for a READ) holds a pattern of (stream, k) with k and the
 * stream in its first 8 bytes; the destination is poisoned first, GUARD bytes past the
 * end included. Checked for every message: each completion arrives once, in posting
 * order, with the status, wr_id, opcode, byte_len, immediate, tag and app_ctx the
 * message implies; the destination holds exactly the message's bytes and the guard is
 * untouched. At the end: every posted WR completed exactly once and no completion more
 * comes; the transport's counters say every tagged message was matched once and none
 * went unexpected, nothing overflowed, no retry count was exceeded; on a lossy run
 * that retransmissions happened, on the control run that none did; and once every
 * object is destroyed the devices' mbuf pools hold all their mbufs again.
 *
 * Options: --messages N (100000), --deadline S (the run fails after S seconds, 60),
 * --timeout T (the QPs' local ACK timeout exponent, 10: 4.2 ms), --seed N,
 * --reads LEN (every RC message an RDMA READ of LEN bytes; the TM streams keep their
 * mix): READ recovery on its own, long responses out of sequence and asked again.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/tm_types.h>
#include <rte_mempool.h>

#include "dpv_verbs.h"
#include "verbs_test.h"

/* Work requests each stream keeps in flight. */
#define WINDOW 16u
/* Bytes of each of a stream's two rings: room for the largest message and more. */
#define RING_BYTES (12u << 20)
#define MAX_LEN (4u << 20)
/* Poisoned bytes after each destination, checked untouched. */
#define GUARD 64u
#define POISON 0xe5
#define TMH_LEN ((uint32_t)sizeof(struct ibv_tmh))
#define TM_FLAGS (IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID | IBV_WC_TM_SYNC_REQ)
#define WC_EX_FLAGS (IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM | \
		     IBV_WC_EX_WITH_SRC_QP | IBV_WC_EX_WITH_TM_INFO)
#define ACC (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)
/* Two bidirectional RC pairs and one TM stream each way. */
#define RC_PAIRS 2u
#define N_STREAMS (2u * RC_PAIRS + 2u)

enum kind { K_SEND, K_SEND_IMM, K_WRITE, K_WRITE_IMM, K_READ, K_TM, N_KINDS };

static const char *const kind_names[N_KINDS] = {
	"SEND", "SEND_IMM", "WRITE", "WRITE_IMM", "READ", "TM_EAGER",
};

/* The size mix: a bucket of lengths (log-uniform inside) per share of the messages,
 * mostly small, with a tail of large ones; the last bucket's messages are one in
 * LARGE_EVERY and every third of them is exactly MAX_LEN. */
struct bucket {
	uint32_t lo, hi;
	uint32_t per_mille;
};

static const struct bucket buckets[] = {
	{1, 64, 400},
	{65, 1024, 300},
	{1025, 16384, 200},
	{16385, 262144, 95},
	{262145, 1048576, 5},
};
#define N_BUCKETS (sizeof(buckets) / sizeof(buckets[0]))
#define LARGE_EVERY 2000u

struct msg {
	uint32_t len;
	uint8_t kind;
	bool has_ring;   /* holds its bytes of the stream's rings */
	bool send_done;
	bool recv_done;
	bool matched;    /* TM: the MATCH completion of a multi-packet message came */
	uint32_t off;
	uint32_t need;
	uint64_t pass;   /* the pass over the streams that staged it */
};

struct stream {
	unsigned int id;
	char name[16];
	struct side *snd, *rcv;
	struct ibv_qp *sqp, *rqp;
	struct ibv_cq *scq;
	struct ibv_cq *rcq;       /* RC streams */
	struct ibv_cq_ex *tcq;    /* TM streams: the TM SRQ's CQ */
	struct ibv_srq *srq;
	struct ibv_mr *lmr, *rmr;
	struct ibv_mr *hmr;       /* TM headers, one per window slot */
	struct msg *m;
	uint32_t n;
	uint32_t staged;          /* messages whose data and receive are in place */
	uint32_t posted;          /* messages sent; the next one's sequence number */
	uint32_t retired;         /* messages completed and checked */
	uint32_t next_scqe;       /* the message the next send completion is for */
	uint32_t next_rcqe;       /* the first message that may own the next receive one */
	uint32_t head, tail;      /* ring: next free offset, oldest held offset */
	uint64_t sends, recvs, send_cqes, recv_cqes, tm_adds, tm_cqes;
};

static struct stream streams[N_STREAMS];
static struct opts {
	uint32_t messages;
	uint32_t deadline_s;
	uint8_t timeout;
	uint64_t seed;
	uint32_t read_len;  /* --reads: every RC message a READ of this length; 0: the mix */
} opt = {100000, 60, 10, 1, 0};
static uint64_t deadline_at, run_start;
/* Passes of the main loop over every stream. */
static uint64_t pass;

/* ---- data ---- */

static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static uint64_t rng_state;

static uint64_t rnd(void)
{
	rng_state += 0x9e3779b97f4a7c15ull;
	return mix64(rng_state);
}

static uint32_t rnd_between(uint32_t lo, uint32_t hi)
{
	return lo + (uint32_t)(rnd() % ((uint64_t)hi - lo + 1));
}

/* Log-uniform in [lo, hi]: as many messages of 2-4 KiB as of 2-4 MiB in a bucket. */
static uint32_t rnd_log(uint32_t lo, uint32_t hi)
{
	unsigned int bits_lo = 32u - (unsigned int)__builtin_clz(lo);
	unsigned int bits_hi = 32u - (unsigned int)__builtin_clz(hi);
	unsigned int b = (unsigned int)rnd_between(bits_lo, bits_hi);
	uint32_t from = b == bits_lo ? lo : 1u << (b - 1);
	uint32_t to = b == bits_hi ? hi : (1u << b) - 1;

	return rnd_between(from, to);
}

static uint64_t seed_of(const struct stream *s, uint32_t seq)
{
	return (uint64_t)s->id << 32 | seq;
}

static uint32_t header_of(const struct stream *s)
{
	return 0x5a17e000u | s->id;
}

/* The message's bytes: its sequence number and stream first, then a pattern. */
static void fill_msg(uint8_t *p, uint32_t len, const struct stream *s, uint32_t seq)
{
	uint64_t seed = seed_of(s, seq), w;
	uint32_t i = 0, h[2] = {seq, header_of(s)};

	for (; i + 8 <= len; i += 8) {
		w = mix64(seed ^ (uint64_t)i << 40);
		memcpy(p + i, &w, 8);
	}
	if (i < len) {
		w = mix64(seed ^ (uint64_t)i << 40);
		memcpy(p + i, &w, len - i);
	}
	if (len >= 8)
		memcpy(p, h, 8);
}

/* The first byte of @p p that is not message (s, seq), or len. */
static uint32_t first_bad(const uint8_t *p, uint32_t len, const struct stream *s, uint32_t seq)
{
	uint64_t seed = seed_of(s, seq), w;
	uint32_t h[2] = {seq, header_of(s)}, at = 0;

	if (len >= 8) {
		for (; at < 8; at++)
			if (p[at] != ((const uint8_t *)h)[at])
				return at;
	}
	for (; at < len; at += 8) {
		uint32_t n = len - at < 8 ? len - at : 8;

		w = mix64(seed ^ (uint64_t)at << 40);
		if (memcmp(p + at, &w, n) != 0)
			for (uint32_t j = 0; j < n; j++)
				if (p[at + j] != ((const uint8_t *)&w)[j])
					return at + j;
	}
	return len;
}

/* What the run did so far, printed when it fails. */
static void dump_state(void);
#define FAIL(...) \
	do { \
		dump_state(); \
		fail_msg(__VA_ARGS__); \
	} while (0)

/* ---- the streams ---- */

static bool needs_recv(uint8_t kind)
{
	return kind == K_SEND || kind == K_SEND_IMM || kind == K_WRITE_IMM || kind == K_TM;
}

static uint32_t imm_of(const struct stream *s, uint32_t seq)
{
	return (uint32_t)s->id << 24 | (seq & 0xffffffu);
}

static uint64_t tag_of(const struct stream *s, uint32_t seq)
{
	return (uint64_t)(0x7a00u | s->id) << 40 | seq;
}

static uint32_t app_ctx_of(const struct stream *s, uint32_t seq)
{
	return seq ^ 0xc0de0000u ^ (uint32_t)s->id << 12;
}

static struct ibv_mr *ring_mr(struct side *side)
{
	return new_mr(side, RING_BYTES, ACC);
}

static void stream_init(struct stream *s, unsigned int id, struct side *snd, struct side *rcv)
{
	memset(s, 0, sizeof(*s));
	s->id = id;
	s->snd = snd;
	s->rcv = rcv;
	snprintf(s->name, sizeof(s->name), "%u %s->%s", id, snd == &A ? "A" : "B",
		 rcv == &A ? "A" : "B");
	s->lmr = ring_mr(snd);
	s->rmr = ring_mr(rcv);
}

static const struct conn_opts *loss_conn(void)
{
	static struct conn_opts o;

	o = conn_default;
	o.timeout = opt.timeout;
	return &o;
}

/* Two RC streams over one pair of QPs, one each way; every QP has a send CQ and a
 * receive CQ of its own, so each stream's completions come in its own order. */
static void rc_streams(struct stream *ab, struct stream *ba, unsigned int id)
{
	struct ibv_cq *sa = new_cq(&A, 2 * WINDOW, NULL, NULL);
	struct ibv_cq *ra = new_cq(&A, 2 * WINDOW, NULL, NULL);
	struct ibv_cq *sb = new_cq(&B, 2 * WINDOW, NULL, NULL);
	struct ibv_cq *rb = new_cq(&B, 2 * WINDOW, NULL, NULL);
	struct ibv_qp *qa = new_qp(&A, IBV_QPT_RC, sa, ra, NULL, WINDOW, WINDOW);
	struct ibv_qp *qb = new_qp(&B, IBV_QPT_RC, sb, rb, NULL, WINDOW, WINDOW);

	connect_rc(qa, qb, loss_conn());
	stream_init(ab, id, &A, &B);
	ab->sqp = qa, ab->scq = sa, ab->rqp = qb, ab->rcq = rb;
	stream_init(ba, id + 1, &B, &A);
	ba->sqp = qb, ba->scq = sb, ba->rqp = qa, ba->rcq = ra;
}

/* A TM stream: an RC sender on @p snd, a receiving QP without a send queue attached
 * to a TM SRQ on @p rcv. */
static void tm_stream(struct stream *s, unsigned int id, struct side *snd, struct side *rcv)
{
	struct ibv_cq *scq = new_cq(snd, 2 * WINDOW, NULL, NULL);
	struct ibv_cq *unused = new_cq(rcv, 4, NULL, NULL);

	stream_init(s, id, snd, rcv);
	s->tcq = new_cq_ex(rcv, 4 * WINDOW, WC_EX_FLAGS);
	s->srq = new_tm_srq(rcv, s->tcq, 16, 4 * WINDOW, 4 * WINDOW);
	s->scq = scq;
	s->sqp = new_qp(snd, IBV_QPT_RC, scq, scq, NULL, WINDOW, 1);
	s->rqp = new_qp(rcv, IBV_QPT_RC, unused, ibv_cq_ex_to_cq(s->tcq), s->srq, 0, 0);
	connect_rc(s->sqp, s->rqp, loss_conn());
	s->hmr = new_mr(snd, WINDOW * TMH_LEN, IBV_ACCESS_LOCAL_WRITE);
}

/* Lengths and kinds of every stream's messages, and the mix printed. */
static void make_messages(void)
{
	uint64_t count[N_BUCKETS + 1][N_KINDS] = {{0}}, bytes = 0, n_large = 0;
	uint32_t per = opt.messages / N_STREAMS, extra = opt.messages % N_STREAMS;

	rng_state = opt.seed;
	for (unsigned int i = 0; i < N_STREAMS; i++) {
		struct stream *s = &streams[i];

		s->n = per + (i < extra ? 1 : 0);
		s->m = calloc(s->n, sizeof(*s->m));
		assert_non_null(s->m);
		for (uint32_t k = 0; k < s->n; k++) {
			struct msg *m = &s->m[k];
			unsigned int b = N_BUCKETS;

			m->kind = s->tcq != NULL ? K_TM : (uint8_t)(rnd() % K_TM);
			if (opt.read_len != 0 && s->tcq == NULL) {
				m->kind = K_READ;
				m->len = opt.read_len;
				for (b = 0; b < N_BUCKETS && opt.read_len > buckets[b].hi; b++)
					;
			} else if (rnd() % LARGE_EVERY == 0) {
				m->len = n_large++ % 3 == 0 ? MAX_LEN : rnd_log(1048577, MAX_LEN);
			} else {
				uint32_t r = (uint32_t)(rnd() % 1000), acc = 0;

				for (b = 0; b < N_BUCKETS - 1; b++) {
					acc += buckets[b].per_mille;
					if (r < acc)
						break;
				}
				m->len = rnd_log(buckets[b].lo, buckets[b].hi);
			}
			count[b][m->kind]++;
			bytes += m->len;
		}
	}
	printf("# %u messages, %.1f MiB, on %u streams (%u RC each way on %u QP pairs, 1 TM "
	       "each way), %u WRs in flight per stream:\n#   %-19s", opt.messages,
	       (double)bytes / (1 << 20), N_STREAMS, RC_PAIRS, RC_PAIRS, WINDOW, "length");
	for (unsigned int k = 0; k < N_KINDS; k++)
		printf(" %9s", kind_names[k]);
	printf("\n");
	for (unsigned int b = 0; b <= N_BUCKETS; b++) {
		char range[32];

		if (b < N_BUCKETS)
			snprintf(range, sizeof(range), "%u..%u", buckets[b].lo, buckets[b].hi);
		else
			snprintf(range, sizeof(range), "1048577..%u", MAX_LEN);
		printf("#   %-19s", range);
		for (unsigned int k = 0; k < N_KINDS; k++)
			printf(" %9" PRIu64, count[b][k]);
		printf("\n");
	}
}

/* Take @p need bytes at the head of the ring; false when they are still held. */
static bool ring_take(struct stream *s, uint32_t need, uint32_t *off)
{
	/* Called for the message after the last staged one. */
	bool empty = s->retired == s->staged;

	if (empty)
		s->head = s->tail = 0;
	if (empty || s->head > s->tail) {
		if (s->head + need <= RING_BYTES) {
			*off = s->head;
		} else if (need < s->tail) {
			*off = 0;
		} else {
			return false;
		}
	} else if (s->head + need < s->tail) {
		*off = s->head;
	} else {
		return false;
	}
	s->head = *off + need;
	return true;
}

static uint8_t *src_of(struct stream *s, const struct msg *m)
{
	return (uint8_t *)(m->kind == K_READ ? s->rmr->addr : s->lmr->addr) + m->off;
}

static uint8_t *dst_of(struct stream *s, const struct msg *m)
{
	return (uint8_t *)(m->kind == K_READ ? s->lmr->addr : s->rmr->addr) + m->off;
}

static int post_the_recv(struct stream *s, struct msg *m, uint32_t seq)
{
	struct ibv_sge sge = {(uintptr_t)dst_of(s, m), m->len + GUARD, s->rmr->lkey};

	if (s->tcq != NULL) {
		/* No unexpected message ever comes: software has seen all 0 of them, so the
		 * entry may match at once. */
		int ret = post_tag_add(s->srq, seq, seq, dst_of(s, m), m->len + GUARD, s->rmr->lkey,
				       tag_of(s, seq), UINT64_MAX, IBV_OPS_TM_SYNC, 0, NULL);

		if (ret == 0)
			s->tm_adds++;
		return ret;
	}
	{
		struct ibv_recv_wr wr = {.wr_id = seq, .sg_list = &sge, .num_sge = 1}, *bad;

		/* A WRITE_WITH_IMM's data goes where its RETH says: the receive needs no
		 * buffer. */
		if (m->kind == K_WRITE_IMM)
			wr.num_sge = 0;
		s->recvs++;
		return ibv_post_recv(s->rqp, &wr, &bad);
	}
}

static void post_the_send(struct stream *s, struct msg *m, uint32_t seq)
{
	static const enum ibv_wr_opcode ops[N_KINDS] = {
		IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE_WITH_IMM,
		IBV_WR_RDMA_READ, IBV_WR_SEND,
	};
	struct ibv_sge sge[2];
	struct ibv_send_wr wr, *bad = NULL;
	int ret;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = seq;
	wr.opcode = ops[m->kind];
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = sge;
	wr.num_sge = 1;
	sge[0] = (struct ibv_sge){(uintptr_t)s->lmr->addr + m->off, m->len, s->lmr->lkey};
	if (m->kind == K_SEND_IMM || m->kind == K_WRITE_IMM)
		wr.imm_data = htobe32(imm_of(s, seq));
	if (m->kind == K_WRITE || m->kind == K_WRITE_IMM || m->kind == K_READ) {
		wr.wr.rdma.remote_addr = (uintptr_t)s->rmr->addr + m->off;
		wr.wr.rdma.rkey = s->rmr->rkey;
	}
	/* Small SENDs inline every other time: copied at post time, the same bytes. */
	if ((m->kind == K_SEND || m->kind == K_SEND_IMM) && m->len <= 64 && (seq & 1))
		wr.send_flags |= IBV_SEND_INLINE;
	if (m->kind == K_TM) {
		struct ibv_tmh *h = (struct ibv_tmh *)s->hmr->addr + seq % WINDOW;

		memset(h, 0, sizeof(*h));
		h->opcode = IBV_TMH_EAGER;
		h->app_ctx = htobe32(app_ctx_of(s, seq));
		h->tag = htobe64(tag_of(s, seq));
		sge[1] = sge[0];
		sge[0] = (struct ibv_sge){(uintptr_t)h, TMH_LEN, s->hmr->lkey};
		wr.num_sge = 2;
	}
	ret = ibv_post_send(s->sqp, &wr, &bad);
	if (ret != 0)
		FAIL("stream %s: ibv_post_send of message %u (%s, %u bytes): %s", s->name, seq,
			 kind_names[m->kind], m->len, strerror(ret));
	s->sends++;
}

/*
 * Stage the stream's next message if its window and ring have room: its data written,
 * its destination poisoned, its receive (or tag) posted. False if there is no room,
 * or the TM SRQ has every op outstanding.
 */
static bool stage_next(struct stream *s)
{
	uint32_t seq = s->staged;
	struct msg *m;
	int ret;

	if (seq == s->n || seq - s->retired >= WINDOW)
		return false;
	m = &s->m[seq];
	if (!m->has_ring) {
		uint32_t need = (m->len + GUARD + 63u) & ~63u;

		if (!ring_take(s, need, &m->off))
			return false;
		m->need = need;
		m->has_ring = true;
		fill_msg(src_of(s, m), m->len, s, seq);
		memset(dst_of(s, m), POISON, need);
	}
	if (needs_recv(m->kind)) {
		ret = post_the_recv(s, m, seq);
		/* Every op of the TM SRQ outstanding: the device has not run them yet. */
		if (ret == ENOMEM && s->tcq != NULL)
			return false;
		if (ret != 0)
			FAIL("stream %s: posting the receive of message %u: %s", s->name, seq,
				 strerror(ret));
	}
	m->pass = pass;
	s->staged++;
	return true;
}

/*
 * Send the next staged message once a full pass over the streams has gone by since
 * its receive was posted: the receiving device has seen it by then (a receive posted
 * just before its message would race it, and an RNR NAK is not what this test is
 * about).
 */
static bool send_next(struct stream *s)
{
	if (s->posted == s->staged || pass < s->m[s->posted].pass + 2)
		return false;
	post_the_send(s, &s->m[s->posted], s->posted);
	s->posted++;
	return true;
}

static void check_data(struct stream *s, uint32_t seq)
{
	const struct msg *m = &s->m[seq];
	const uint8_t *d = dst_of(s, m);
	uint32_t bad = first_bad(d, m->len, s, seq);

	if (bad != m->len) {
		uint32_t h[2];

		memcpy(h, d, 8);
		FAIL("stream %s: message %u (%s, %u bytes) differs at byte %u (0x%02x); its "
			 "first 8 bytes say message %u of stream 0x%08x", s->name, seq,
			 kind_names[m->kind], m->len, bad, d[bad], h[0], h[1]);
	}
	for (uint32_t i = m->len; i < m->len + GUARD; i++)
		if (d[i] != POISON)
			FAIL("stream %s: message %u (%s, %u bytes) wrote byte %u past its end",
				 s->name, seq, kind_names[m->kind], m->len, i - m->len);
}

static void retire(struct stream *s)
{
	while (s->retired < s->posted) {
		struct msg *m = &s->m[s->retired];

		if (!m->send_done || (needs_recv(m->kind) && !m->recv_done))
			break;
		check_data(s, s->retired);
		s->retired++;
		/* The oldest holder of ring bytes: staged, or taking them still. */
		if (s->retired < s->n && s->m[s->retired].has_ring)
			s->tail = s->m[s->retired].off;
	}
}

static void on_send_wc(struct stream *s, const struct ibv_wc *wc)
{
	static const enum ibv_wc_opcode ops[N_KINDS] = {
		IBV_WC_SEND, IBV_WC_SEND, IBV_WC_RDMA_WRITE, IBV_WC_RDMA_WRITE, IBV_WC_RDMA_READ,
		IBV_WC_SEND,
	};
	uint32_t seq = s->next_scqe;
	const struct msg *m;

	if (seq >= s->posted)
		FAIL("stream %s: a send completion (wr_id %" PRIu64 ", %s) with nothing "
			 "outstanding", s->name, wc->wr_id, ibv_wc_status_str(wc->status));
	m = &s->m[seq];
	if (wc->status != IBV_WC_SUCCESS || wc->wr_id != seq)
		FAIL("stream %s: send completion of wr_id %" PRIu64 " status %s (vendor_err "
			 "%u), want wr_id %u (%s, %u bytes) status success", s->name, wc->wr_id,
			 ibv_wc_status_str(wc->status), wc->vendor_err, seq, kind_names[m->kind],
			 m->len);
	assert_int_equal(wc->opcode, ops[m->kind]);
	assert_int_equal(wc->qp_num, s->sqp->qp_num);
	if (m->kind == K_READ)
		assert_int_equal(wc->byte_len, m->len);
	s->m[seq].send_done = true;
	s->next_scqe++;
	s->send_cqes++;
}

/* The message the next receive-side completion must be for. */
static uint32_t next_recv_seq(struct stream *s, uint64_t wr_id, const char *what)
{
	while (s->next_rcqe < s->posted && !needs_recv(s->m[s->next_rcqe].kind))
		s->next_rcqe++;
	if (s->next_rcqe >= s->posted)
		FAIL("stream %s: a %s (wr_id %" PRIu64 ") with no receive outstanding",
			 s->name, what, wr_id);
	return s->next_rcqe;
}

static void on_recv_wc(struct stream *s, const struct ibv_wc *wc)
{
	uint32_t seq = next_recv_seq(s, wc->wr_id, "receive completion");
	const struct msg *m = &s->m[seq];
	bool imm = m->kind == K_SEND_IMM || m->kind == K_WRITE_IMM;

	if (wc->status != IBV_WC_SUCCESS || wc->wr_id != seq)
		FAIL("stream %s: receive completion of wr_id %" PRIu64 " status %s, want "
			 "wr_id %u (%s, %u bytes) status success", s->name, wc->wr_id,
			 ibv_wc_status_str(wc->status), seq, kind_names[m->kind], m->len);
	assert_int_equal(wc->opcode, m->kind == K_WRITE_IMM ? IBV_WC_RECV_RDMA_WITH_IMM :
							    IBV_WC_RECV);
	if (wc->byte_len != m->len)
		FAIL("stream %s: message %u (%s): byte_len %u, sent %u", s->name, seq,
			 kind_names[m->kind], wc->byte_len, m->len);
	assert_int_equal(wc->qp_num, s->rqp->qp_num);
	assert_int_equal(!!(wc->wc_flags & IBV_WC_WITH_IMM), imm);
	if (imm)
		assert_int_equal(be32toh(wc->imm_data), imm_of(s, seq));
	s->m[seq].recv_done = true;
	s->next_rcqe++;
	s->recv_cqes++;
}

/* A tagged message's completions: one with MATCH and DATA_VALID when it is one packet,
 * else MATCH when its first packet matched and DATA_VALID when it has all landed. */
static void on_tm_wc(struct stream *s, const struct wc_ex *wc)
{
	uint32_t seq = next_recv_seq(s, wc->wr_id, "TM completion");
	struct msg *m = &s->m[seq];
	bool one = TMH_LEN + m->len <= TEST_MTU_BYTES;
	unsigned int want = one ? IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID :
			    m->matched ? IBV_WC_TM_DATA_VALID : IBV_WC_TM_MATCH;

	if (wc->status != IBV_WC_SUCCESS || wc->wr_id != seq ||
	    wc->opcode != IBV_WC_TM_RECV || (wc->wc_flags & TM_FLAGS) != want)
		FAIL("stream %s: TM completion wr_id %" PRIu64 " status %s opcode %d flags "
			 "%#x, want wr_id %u (%u bytes) success TM_RECV flags %#x", s->name,
			 wc->wr_id, ibv_wc_status_str(wc->status), wc->opcode, wc->wc_flags, seq,
			 m->len, want);
	assert_int_equal(wc->qp_num, s->rqp->qp_num);
	if (want & IBV_WC_TM_MATCH) {
		assert_int_equal(wc->tm.tag, tag_of(s, seq));
		assert_int_equal(wc->tm.priv, app_ctx_of(s, seq));
	}
	s->tm_cqes++;
	if (!(want & IBV_WC_TM_DATA_VALID)) {
		m->matched = true;
		return;
	}
	if (wc->byte_len != m->len)
		FAIL("stream %s: tagged message %u: byte_len %u, sent %u", s->name, seq,
			 wc->byte_len, m->len);
	m->recv_done = true;
	s->next_rcqe++;
	s->recv_cqes++;
}

/* Take what the stream's CQs hold; the number of completions taken. */
static int poll_stream(struct stream *s)
{
	struct ibv_wc wc[32];
	int n, got = 0;

	n = ibv_poll_cq(s->scq, 32, wc);
	assert_true(n >= 0);
	for (int i = 0; i < n; i++)
		on_send_wc(s, &wc[i]);
	got += n;
	if (s->rcq != NULL) {
		n = ibv_poll_cq(s->rcq, 32, wc);
		assert_true(n >= 0);
		for (int i = 0; i < n; i++)
			on_recv_wc(s, &wc[i]);
		got += n;
	} else {
		struct ibv_poll_cq_attr attr = {.comp_mask = 0};
		struct wc_ex w;

		n = ibv_start_poll(s->tcq, &attr);
		if (n == 0) {
			do {
				read_ex(s->tcq, &w);
				on_tm_wc(s, &w);
				got++;
			} while (ibv_next_poll(s->tcq) == 0);
			ibv_end_poll(s->tcq);
		} else {
			assert_int_equal(n, ENOENT);
		}
	}
	retire(s);
	return got;
}

/* ---- counters ---- */

#define MAX_XSTATS 256

struct xstats {
	int n;
	struct dpv_verbs_xstat xs[MAX_XSTATS];
};

static void xstats_read(struct side *side, struct xstats *x)
{
	x->n = dpv_verbs_query_xstats(side->ctx, x->xs, MAX_XSTATS);
	assert_true(x->n > 0 && x->n <= MAX_XSTATS);
}

static uint64_t xval(const struct xstats *x, const char *name)
{
	for (int i = 0; i < x->n; i++)
		if (strcmp(x->xs[i].name, name) == 0)
			return x->xs[i].value;
	return 0;
}

/* The counter's growth since @p before, summed over both devices. */
static uint64_t grew(const struct xstats before[2], const struct xstats after[2],
		     const char *name)
{
	return xval(&after[0], name) - xval(&before[0], name) + xval(&after[1], name) -
	       xval(&before[1], name);
}

/* mbufs of the device's pool not in it (nor in a core's cache). */
static unsigned int mbufs_out(const char *dev)
{
	char name[RTE_MEMPOOL_NAMESIZE];
	struct rte_mempool *mp;

	snprintf(name, sizeof(name), "dpv_%s", dev);
	mp = rte_mempool_lookup(name);
	if (mp == NULL)
		fail_msg("no mbuf pool %s", name);
	return mp->size - rte_mempool_avail_count(mp);
}

/* The non-zero protocol counters of each stream's two QPs. */
static void dump_qp_counters(void)
{
	struct dpv_verbs_xstat xs[64];

	for (unsigned int i = 0; i < N_STREAMS; i++) {
		const struct stream *s = &streams[i];
		struct ibv_qp *qps[2] = {s->sqp, s->rqp};

		printf("#   stream %s:", s->name);
		for (unsigned int q = 0; q < 2; q++) {
			int n = dpv_verbs_query_qp_xstats(qps[q], xs, 64);

			printf(" %s", q == 0 ? "sender" : "| receiver");
			for (int j = 0; j < n && j < 64; j++)
				if (xs[j].value != 0 && strcmp(xs[j].name, "qp.tx_packets") != 0 &&
				    strcmp(xs[j].name, "qp.rx_packets") != 0)
					printf(" %s=%" PRIu64, xs[j].name + 3, xs[j].value);
		}
		printf("\n");
	}
}

static void dump_progress(void)
{
	for (unsigned int i = 0; i < N_STREAMS; i++) {
		const struct stream *s = &streams[i];

		printf("#   stream %s: %u staged, %u sent of %u, %u checked, next send completion for %u, "
		       "next receive for %u\n", s->name, s->staged, s->posted, s->n, s->retired,
		       s->next_scqe, s->next_rcqe);
	}
}

static void dump_state(void)
{
	struct xstats x[2];

	printf("# the run so far, after %" PRIu64 " ms:\n", now_ms() - run_start);
	dump_progress();
	xstats_read(&A, &x[0]);
	xstats_read(&B, &x[1]);
	printf("#   counters of A | B, those not 0:");
	for (int i = 0; i < x[0].n; i++)
		if (x[0].xs[i].value != 0 || xval(&x[1], x[0].xs[i].name) != 0)
			printf("%s %s=%" PRIu64 "|%" PRIu64, i % 4 == 0 ? "\n#    " : "",
			       x[0].xs[i].name, x[0].xs[i].value, xval(&x[1], x[0].xs[i].name));
	printf("\n");
	dump_qp_counters();
	fflush(stdout);
}

static const char *const shown[] = {
	"faults.tx.dropped", "faults.rx.dropped", "faults.tx.reordered", "faults.rx.reordered",
	"faults.tx.duplicated", "faults.rx.duplicated", "faults.tx.corrupted",
	"faults.rx.corrupted", "port.tx_frames", "port.tx_dropped", "port.tx_deferred",
	"xport.rx_bad_icrc", "xport.tx_no_mbuf", "qp.retrans_timeout", "qp.retrans_seq_nak",
	"qp.retrans_rnr", "qp.retrans_read", "qp.retrans_probe", "qp.retrans_packets",
	"qp.ack_timeouts", "qp.retries_spent", "qp.retry_resets", "qp.retry_exceeded",
	"qp.rnr_retry_exceeded", "qp.dup_requests", "qp.dup_responses",
	"qp.out_of_seq", "qp.seq_naks_sent", "qp.rnr_naks_sent", "qp.dup_reads_dropped",
	"qp.resp_queue_full", "qp.flushed_wrs", "xport.tm_expected", "xport.tm_unexpected",
	"xport.cq_overflows", "xport.access_errors",
};

static void many_messages_with_faults(void **state)
{
	struct xstats before[2], after[2];
	unsigned int out_a, out_b;
	uint64_t start, elapsed, bytes = 0, tm_msgs = 0, ms;
	uint64_t retrans, end;
	bool lossy = faults_on(), busy;

	(void)state;
	for (unsigned int p = 0; p < RC_PAIRS; p++)
		rc_streams(&streams[2 * p], &streams[2 * p + 1], 2 * p);
	tm_stream(&streams[2 * RC_PAIRS], 2 * RC_PAIRS, &A, &B);
	tm_stream(&streams[2 * RC_PAIRS + 1], 2 * RC_PAIRS + 1, &B, &A);
	make_messages();
	for (unsigned int i = 0; i < N_STREAMS; i++)
		for (uint32_t k = 0; k < streams[i].n; k++) {
			bytes += streams[i].m[k].len;
			tm_msgs += streams[i].m[k].kind == K_TM;
		}
	/* What the devices hold with nothing in flight: they must be back to it. */
	for (ms = now_ms() + 20; now_ms() < ms;)
		progress();
	out_a = mbufs_out("dpv0");
	out_b = mbufs_out("dpv1");
	xstats_read(&A, &before[0]);
	xstats_read(&B, &before[1]);
	printf("# DPV_FAULTS=%s, DPV_PROGRESS=%s, QP timeout %u, deadline %u s\n",
	       lossy ? getenv("DPV_FAULTS") : "(none)",
	       getenv("DPV_PROGRESS") ? getenv("DPV_PROGRESS") : "inline", opt.timeout,
	       opt.deadline_s);
	fflush(stdout);

	start = run_start = now_ms();
	deadline_at = start + opt.deadline_s * 1000ull;
	do {
		busy = false;
		pass++;
		for (unsigned int i = 0; i < N_STREAMS; i++) {
			struct stream *s = &streams[i];

			while (stage_next(s))
				;
			while (send_next(s))
				;
			poll_stream(s);
			busy |= s->retired < s->n;
		}
		if (busy && now_ms() > deadline_at) {
			printf("# deadline passed after %u s:\n", opt.deadline_s);
			FAIL("the messages did not all complete within %u s", opt.deadline_s);
		}
	} while (busy);
	elapsed = now_ms() - start;

	/* Nothing more comes. */
	for (end = now_ms() + QUIET_MS; now_ms() < end;)
		for (unsigned int i = 0; i < N_STREAMS; i++)
			if (poll_stream(&streams[i]) != 0)
				fail_msg("stream %s: a completion after every message completed",
					 streams[i].name);
	xstats_read(&A, &after[0]);
	xstats_read(&B, &after[1]);
	printf("# %u messages (%.1f MiB) in %" PRIu64 ".%03" PRIu64 " s: %.0f messages/s, "
	       "%.1f MiB/s\n", opt.messages, (double)bytes / (1 << 20), elapsed / 1000,
	       elapsed % 1000, opt.messages * 1000.0 / (double)(elapsed ? elapsed : 1),
	       (double)bytes / (1 << 20) * 1000.0 / (double)(elapsed ? elapsed : 1));
	printf("# counters (A + B):");
	for (unsigned int i = 0; i < sizeof(shown) / sizeof(shown[0]); i++)
		printf("%s %s=%" PRIu64, i % 4 == 0 ? "\n#  " : "", shown[i],
		       grew(before, after, shown[i]));
	printf("\n");
	dump_qp_counters();

	/* Every posted WR completed exactly once. */
	for (unsigned int i = 0; i < N_STREAMS; i++) {
		const struct stream *s = &streams[i];

		assert_int_equal(s->retired, s->n);
		assert_int_equal(s->send_cqes, s->sends);
		assert_int_equal(s->sends, s->n);
		assert_int_equal(s->recv_cqes, s->recvs + s->tm_adds);
	}
	/* Every tagged message matched its entry, once. */
	assert_int_equal(grew(before, after, "xport.tm_expected"), tm_msgs);
	assert_int_equal(grew(before, after, "xport.tm_unexpected"), 0);
	assert_int_equal(grew(before, after, "xport.tm_no_tag"), 0);
	assert_int_equal(grew(before, after, "qp.retry_exceeded"), 0);
	assert_int_equal(grew(before, after, "qp.rnr_retry_exceeded"), 0);
	assert_int_equal(grew(before, after, "qp.flushed_wrs"), 0);
	assert_int_equal(grew(before, after, "xport.cq_overflows"), 0);
	assert_int_equal(grew(before, after, "xport.access_errors"), 0);
	retrans = grew(before, after, "qp.retrans_timeout") +
		  grew(before, after, "qp.retrans_seq_nak") + grew(before, after, "qp.retrans_read");
	if (lossy) {
		/* The faults were there, and the transport recovered from them. */
		assert_true(grew(before, after, "faults.tx.dropped") +
				    grew(before, after, "faults.rx.dropped") > 0);
		assert_true(retrans > 0);
		assert_true(grew(before, after, "qp.retrans_packets") > 0);
		/* At 0.1 % too, the number of READs and frames makes a lost READ request or
		 * response and a duplicated request all but certain. */
		assert_true(grew(before, after, "qp.retrans_read") > 0);
		assert_true(grew(before, after, "qp.dup_requests") > 0);
		if (strstr(getenv("DPV_FAULTS"), "corrupt=") != NULL)
			assert_true(grew(before, after, "xport.rx_bad_icrc") > 0);
	} else {
		/* A link that loses nothing: not one retransmission, timeout or NAK. What
		 * may be sent twice is a tail loss probe's one packet, when this busy
		 * process left a device unpolled for a millisecond. */
		assert_int_equal(retrans, 0);
		assert_true(grew(before, after, "qp.retrans_packets") <=
			    grew(before, after, "qp.retrans_probe"));
		assert_int_equal(grew(before, after, "qp.ack_timeouts"), 0);
		assert_true(grew(before, after, "qp.dup_requests") <=
			    grew(before, after, "qp.retrans_probe"));
		assert_int_equal(grew(before, after, "qp.out_of_seq"), 0);
		assert_int_equal(grew(before, after, "qp.seq_naks_sent"), 0);
		assert_int_equal(grew(before, after, "xport.rx_bad_icrc"), 0);
	}

	/* Every object destroyed, the pools get all their mbufs back: nothing kept. */
	assert_int_equal(teardown_objects(NULL), 0);
	for (end = now_ms() + WAIT_MS; now_ms() < end;) {
		if (mbufs_out("dpv0") <= out_a && mbufs_out("dpv1") <= out_b)
			break;
		progress();
	}
	printf("# mbufs out of the pools: dpv0 %u, dpv1 %u (before the run %u, %u)\n",
	       mbufs_out("dpv0"), mbufs_out("dpv1"), out_a, out_b);
	assert_true(mbufs_out("dpv0") <= out_a);
	assert_true(mbufs_out("dpv1") <= out_b);
	for (unsigned int i = 0; i < N_STREAMS; i++) {
		free(streams[i].m);
		streams[i].m = NULL;
	}
}

static void usage(const char *prog)
{
	fprintf(stderr, "usage: %s [--messages N] [--deadline SECONDS] [--timeout EXP] "
		"[--seed N] [--reads LEN]\n", prog);
}

int main(int argc, char **argv)
{
	static const struct option longs[] = {
		{"messages", required_argument, NULL, 'n'},
		{"deadline", required_argument, NULL, 'd'},
		{"timeout", required_argument, NULL, 't'},
		{"seed", required_argument, NULL, 's'},
		{"reads", required_argument, NULL, 'r'},
		{NULL, 0, NULL, 0},
	};
	const struct CMUnitTest tests[] = {
		VT(many_messages_with_faults),
	};
	int c;

	while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
		switch (c) {
		case 'n':
			opt.messages = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'd':
			opt.deadline_s = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 't':
			opt.timeout = (uint8_t)strtoul(optarg, NULL, 0);
			break;
		case 's':
			opt.seed = strtoull(optarg, NULL, 0);
			break;
		case 'r':
			opt.read_len = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		default:
			usage(argv[0]);
			return 2;
		}
	}
	if (opt.messages < N_STREAMS || opt.deadline_s == 0 || opt.timeout > 31 ||
	    opt.read_len > MAX_LEN) {
		usage(argv[0]);
		return 2;
	}
	sides_env_defaults("0");
	return SIDES_RUN_GROUP("loss", tests);
}
