/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tag-matching rendezvous between two processes (doc/guides/srq.md §4), written against
 * <infiniband/verbs.h> only, as any verbs program is, and run on the drop-in.
 *
 *   rndv_peer -p PORT [options]          the receiver: a TM SRQ, listens on TCP PORT
 *   rndv_peer -p PORT [options] HOST     the sender: connects to HOST:PORT
 *
 * The two sides exchange QP numbers, PSNs and GIDs over TCP, as ibverbs' pingpongs do,
 * and connect Q RC QP pairs. Both derive the same schedule of N messages from the seed:
 *
 *   eager   a tagged eager SEND (0 bytes .. --eager-max) into an entry added for it
 *   rndv    a rendezvous header (TMH, RVH, 0..32 bytes of application header) whose
 *           entry holds the data: the receiver's device reads it and sends the FIN
 *   ueager  an eager message whose tag the receiver never adds: it lands in an
 *           ordinary SRQ WR and the receiver copies it out
 *   urndv   a rendezvous header whose tag the receiver never adds: the receiver READs
 *           the data from va/rkey itself and sends the FIN itself
 *   small   a rendezvous header whose entry holds only the headers: one
 *           IBV_WC_TM_RNDV_INCOMPLETE completion, then the receiver finishes as for urndv
 *
 * Every message ends in the buffer the receiver meant for it (its slot), and every byte
 * of it is checked against a pattern of the message number and the offset, as are the
 * headers the device places; the bytes after it, poisoned before, must be untouched,
 * and the sender's source must be as it filled it once the FIN has come. The receiver
 * adds the tags of the expected messages of its window and tells the sender over TCP
 * how far it may send: up to the first message whose entry is not yet eligible (§5: an
 * ADD that completed without IBV_WC_TM_SYNC_REQ, or followed by one, makes it so; when
 * the last one asked for a SYNC, a probe ADD of a tag no message has asks again).
 * Checked exactly: status, opcode, wc_flags, wr_id, byte_len, tag and app_ctx of every
 * completion (doc/guides/srq.md §4), the order of each QP's completions,
 * the FIN at the sender (16 bytes, IBV_TMH_FIN, the message's tag and app_ctx, on the
 * QP that should send it), and that no message is lost or arrives twice. The run ends
 * with a handshake over TCP once each side has all its completions, so neither
 * destroys its QPs while the other still waits for an acknowledgement; completions that
 * come meanwhile are failures (duplicates). A watchdog fails the run instead of letting
 * it hang. Exit status 0 only when everything checked.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <infiniband/tm_types.h>
#include <infiniband/verbs.h>

#include "verbs_connect.h"

#define MAX_QPS 8
#define TMH_LEN ((uint32_t)sizeof(struct ibv_tmh))
#define RVH_LEN ((uint32_t)sizeof(struct ibv_rvh))
#define HDR_MAX 32u            /* application header: max_rndv_hdr_size - TMH - RVH */
#define GUARD 64u              /* bytes after a message that must stay untouched */
#define POISON 0xa5
#define TAG_SALT 0x52dd0000u   /* the high half of every tag */
#define HELLO_MAGIC 0x52444e5650454552ull
#define BOUNCE_LEN (TMH_LEN + 8192u)
#define SMALL_LEN 256u          /* a small entry's buffer and its guard */

/* wr_id spaces: the low 32 bits a message or buffer number. */
#define ID_ENTRY (1ull << 56)
#define ID_BOUNCE (2ull << 56)
#define ID_ADD (3ull << 56)
#define ID_PROBE (4ull << 56)
#define ID_READ (5ull << 56)
#define ID_FIN (6ull << 56)
#define ID_SEND (7ull << 56)
#define ID_FINBUF (8ull << 56)
#define ID_KIND(id) ((id) & (0xffull << 56))
#define ID_NUM(id) ((uint32_t)(id))

enum kind { K_EAGER, K_RNDV, K_UEAGER, K_URNDV, K_SMALL, K_COUNT };
static const char *const kind_name[K_COUNT] = {"eager", "rndv", "ueager", "urndv", "small"};

struct msg {
	uint32_t len;       /* payload (eager) or rendezvous length */
	uint32_t entry_len; /* the buffer of its entry (eager, rndv, small) */
	uint8_t kind;
	uint8_t qp;
	uint8_t hdr_len;    /* rendezvous application header */
};

struct opts {
	const char *host, *dev;
	int port, gid_index, timeout_s;
	uint8_t ack_timeout;
	uint32_t n, nqp, seed, rndv_min, rndv_max, eager_max, window, corrupt;
	unsigned int mix[K_COUNT];
	bool incomplete_ok, lossy, corrupt_set;
};

static struct opts o = {
	.gid_index = 0, .timeout_s = 50, .ack_timeout = 16, .n = 1000, .nqp = 3, .seed = 1,
	.rndv_min = 65536, .rndv_max = 16u << 20, .eager_max = 4096, .window = 16,
	.mix = {30, 35, 15, 15, 5},
};

static const char *role = "?";
static int sock = -1;
static struct timespec t0;

static double elapsed(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9;
}

static void tcp_send(uint32_t type, uint32_t value);

/* A check that did not hold: say what, tell the peer, and end. */
static void __attribute__((noreturn, format(printf, 1, 2))) die(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "FAIL: %s: ", role);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (sock >= 0)
		tcp_send('F', 0);
	exit(1);
}

#define CHECK(cond, ...)                                                                   \
	do {                                                                               \
		if (!(cond))                                                               \
			die(__VA_ARGS__);                                                  \
	} while (0)

/* The last resort: a blocking call that never returned. */
static void on_alarm(int sig)
{
	static const char m[] = "FAIL: watchdog: the run did not end in time\n";

	(void)sig;
	if (write(2, m, sizeof(m) - 1) < 0)
		_exit(1);
	_exit(1);
}

/* ---- the schedule and the pattern ---- */

static uint64_t rng_state;

static uint64_t rnd(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint32_t rnd_below(uint32_t n)
{
	return n == 0 ? 0 : (uint32_t)(rnd() % n);
}

/* Log-uniform in [lo, hi], any byte count, and each bound now and then. */
static uint32_t rndv_size(void)
{
	double u;
	uint32_t v;

	switch (rnd_below(16)) {
	case 0:
		return o.rndv_min;
	case 1:
		return o.rndv_max;
	default:
		break;
	}
	u = (double)(rnd() >> 11) / (double)(1ull << 53);
	v = (uint32_t)((double)o.rndv_min * exp(u * log((double)o.rndv_max /
									       o.rndv_min)));
	if (v < o.rndv_min)
		v = o.rndv_min;
	return v > o.rndv_max ? o.rndv_max : v;
}

static uint32_t eager_size(void)
{
	if (rnd_below(4) == 0)
		return rnd_below(17); /* a few bytes, 0 among them */
	return rnd_below(o.eager_max + 1);
}

static struct msg *schedule(void)
{
	struct msg *s = calloc(o.n, sizeof(*s));
	unsigned int total = 0, r, k;

	CHECK(s != NULL, "no memory for %u messages", o.n);
	for (k = 0; k < K_COUNT; k++)
		total += o.mix[k];
	rng_state = o.seed * 0x2545f4914f6cdd1dull + 1;
	for (uint32_t m = 0; m < o.n; m++) {
		r = rnd_below(total);
		for (k = 0; r >= o.mix[k]; k++)
			r -= o.mix[k];
		s[m].kind = (uint8_t)k;
		s[m].qp = (uint8_t)rnd_below(o.nqp);
		s[m].hdr_len = (uint8_t)rnd_below(HDR_MAX + 1);
		s[m].len = (k == K_EAGER || k == K_UEAGER) ? eager_size() : rndv_size();
		/* The entry: exactly the data, or a little more; for small, the headers. */
		s[m].entry_len = s[m].len + (rnd_below(4) == 0 ? 0 : rnd_below(256));
		if (k == K_SMALL)
			s[m].entry_len = TMH_LEN + RVH_LEN + s[m].hdr_len + rnd_below(8);
	}
	return s;
}

/* What both sides must agree on for their schedules to be the same. */
static uint64_t params_hash(void)
{
	uint64_t h = 1469598103934665603ull;
	uint64_t v[] = {o.n, o.nqp, o.seed, o.rndv_min, o.rndv_max, o.eager_max,
			o.incomplete_ok, o.lossy, o.mix[0], o.mix[1], o.mix[2], o.mix[3],
			o.mix[4]};

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		h = (h ^ v[i]) * 1099511628211ull;
	return h;
}

static uint64_t pat_word(uint32_t m, uint64_t k)
{
	uint64_t x = ((uint64_t)m << 40 | (uint64_t)m >> 24) ^ (k * 0x9e3779b97f4a7c15ull);

	return x ^ (x >> 29) ^ o.seed;
}

static void fill(uint8_t *p, uint32_t m, uint32_t len)
{
	uint64_t k, w;

	for (k = 0; (k + 1) * 8 <= len; k++) {
		w = pat_word(m, k);
		memcpy(p + k * 8, &w, 8);
	}
	w = pat_word(m, k);
	memcpy(p + k * 8, &w, len - k * 8);
}

/* The first offset that is not the pattern of message @p m, or -1. */
static int64_t check_pattern(const uint8_t *p, uint32_t m, uint32_t len)
{
	uint64_t k, w, got;
	uint32_t i, tail;

	for (k = 0; (k + 1) * 8 <= len; k++) {
		w = pat_word(m, k);
		memcpy(&got, p + k * 8, 8);
		if (got != w)
			break;
	}
	tail = (k + 1) * 8 <= len ? 8 : len - (uint32_t)(k * 8);
	if (k * 8 >= len)
		return -1;
	w = pat_word(m, k);
	for (i = 0; i < tail; i++)
		if (p[k * 8 + i] != ((const uint8_t *)&w)[i])
			return (int64_t)(k * 8 + i);
	/* Equal in its tail: the word loop stopped at the end. */
	return -1;
}

static uint64_t tag_of(uint32_t m)
{
	return (uint64_t)TAG_SALT << 32 | m;
}

static uint32_t ctx_of(uint32_t m)
{
	return ~m * 2654435761u;
}

/* The application header of message @p m: the pattern of a number no message has. */
static uint32_t hdr_seed(uint32_t m)
{
	return m | 0x80000000u;
}

static bool is_rndv(const struct msg *s)
{
	return s->kind == K_RNDV || s->kind == K_URNDV || s->kind == K_SMALL;
}

/* ---- the TCP connection ---- */

static uint8_t rx_buf[64];
static size_t rx_have;

static void tcp_send(uint32_t type, uint32_t value)
{
	uint32_t f[2] = {htobe32(type), htobe32(value)};
	int s = sock;

	sock = -1; /* no second try from die() */
	if (send(s, f, sizeof(f), MSG_NOSIGNAL) != (ssize_t)sizeof(f))
		die("TCP send: %s", strerror(errno));
	sock = s;
}

/* One frame from the peer, if one has come: type, or 0. */
static uint32_t tcp_poll(uint32_t *value)
{
	uint32_t f[2];
	ssize_t r;

	r = recv(sock, rx_buf + rx_have, sizeof(rx_buf) - rx_have, MSG_DONTWAIT);
	if (r == 0) {
		sock = -1;
		die("the peer closed the TCP connection");
	}
	if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
		die("TCP recv: %s", strerror(errno));
	if (r > 0)
		rx_have += (size_t)r;
	if (rx_have < sizeof(f))
		return 0;
	memcpy(f, rx_buf, sizeof(f));
	memmove(rx_buf, rx_buf + sizeof(f), rx_have - sizeof(f));
	rx_have -= sizeof(f);
	*value = be32toh(f[1]);
	if (be32toh(f[0]) == 'F') {
		sock = -1;
		die("the peer failed (its output says why)");
	}
	return be32toh(f[0]);
}

static void full_io(bool out, void *buf, size_t len)
{
	uint8_t *p = buf;
	size_t done = 0;
	ssize_t r;

	while (done < len) {
		struct pollfd pfd = {.fd = sock, .events = out ? POLLOUT : POLLIN};

		if (poll(&pfd, 1, 1000) == 0) {
			CHECK(elapsed() < o.timeout_s, "watchdog: the TCP exchange took %d s",
			      o.timeout_s);
			continue;
		}
		r = out ? send(sock, p + done, len - done, MSG_NOSIGNAL)
			: recv(sock, p + done, len - done, 0);
		CHECK(r > 0, "TCP exchange: %s", r == 0 ? "the peer closed" : strerror(errno));
		done += (size_t)r;
	}
}

static void tcp_connect(void)
{
	struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *ai;
	char port[16];
	int one = 1, ret;

	snprintf(port, sizeof(port), "%d", o.port);
	if (o.host == NULL) {
		struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)o.port),
					.sin_addr.s_addr = htonl(INADDR_ANY)};
		int l = socket(AF_INET, SOCK_STREAM, 0);

		CHECK(l >= 0, "socket: %s", strerror(errno));
		setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		CHECK(bind(l, (struct sockaddr *)&a, sizeof(a)) == 0, "bind to TCP port %d: %s",
		      o.port, strerror(errno));
		CHECK(listen(l, 1) == 0, "listen: %s", strerror(errno));
		for (;;) {
			struct pollfd pfd = {.fd = l, .events = POLLIN};

			if (poll(&pfd, 1, 1000) > 0)
				break;
			CHECK(elapsed() < o.timeout_s, "watchdog: no sender connected in %d s",
			      o.timeout_s);
		}
		sock = accept(l, NULL, NULL);
		CHECK(sock >= 0, "accept: %s", strerror(errno));
		close(l);
	} else {
		ret = getaddrinfo(o.host, port, &hints, &ai);
		CHECK(ret == 0, "%s: %s", o.host, gai_strerror(ret));
		sock = socket(AF_INET, SOCK_STREAM, 0);
		CHECK(sock >= 0, "socket: %s", strerror(errno));
		ret = connect(sock, ai->ai_addr, ai->ai_addrlen);
		freeaddrinfo(ai);
		if (ret != 0) {
			int e = errno, s = sock;

			sock = -1;
			close(s);
			die("connect to %s:%d: %s", o.host, o.port, strerror(e));
		}
	}
	setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* ---- verbs set-up ---- */

struct hello {
	uint64_t magic, params;
	uint32_t nqp, mtu;
	uint32_t qpn[MAX_QPS], psn[MAX_QPS];
	uint8_t gid[16];
};

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_qp *qps[MAX_QPS];
static uint32_t my_psn[MAX_QPS];
static struct hello peer;
static enum ibv_mtu mtu;

static void open_device(void)
{
	struct ibv_device **list;
	struct ibv_port_attr pa;
	int n, i;

	list = ibv_get_device_list(&n);
	CHECK(list != NULL && n > 0, "no verbs device (%s)", list == NULL ? strerror(errno) : "none");
	for (i = 0; i < n; i++)
		if (o.dev == NULL || strcmp(ibv_get_device_name(list[i]), o.dev) == 0)
			break;
	CHECK(i < n, "no device %s", o.dev);
	ctx = ibv_open_device(list[i]);
	CHECK(ctx != NULL, "ibv_open_device(%s): %s", ibv_get_device_name(list[i]),
	      strerror(errno));
	ibv_free_device_list(list);
	pd = ibv_alloc_pd(ctx);
	CHECK(pd != NULL, "ibv_alloc_pd: %s", strerror(errno));
	CHECK(ibv_query_port(ctx, 1, &pa) == 0, "ibv_query_port: %s", strerror(errno));
	mtu = pa.active_mtu;
}

static uint32_t mtu_bytes(enum ibv_mtu m)
{
	return 128u << m;
}

static struct ibv_mr *reg(void *p, size_t len, int access)
{
	struct ibv_mr *mr = ibv_reg_mr(pd, p, len, access);

	CHECK(mr != NULL, "ibv_reg_mr(%zu bytes): %s", len, strerror(errno));
	return mr;
}

static uint8_t *region(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	CHECK(p != MAP_FAILED, "mmap(%zu): %s", len, strerror(errno));
	memset(p, POISON, len); /* and no page faults in the run */
	return p;
}

/* Both sides' QP numbers, PSNs and GIDs; the schedules must be the same. */
static void exchange(void)
{
	struct hello me = {.magic = htobe64(HELLO_MAGIC), .params = htobe64(params_hash()),
			   .nqp = htobe32(o.nqp), .mtu = htobe32(mtu)};
	union ibv_gid gid;

	CHECK(ibv_query_gid(ctx, 1, o.gid_index, &gid) == 0, "ibv_query_gid(%d): %s",
	      o.gid_index, strerror(errno));
	memcpy(me.gid, gid.raw, 16);
	for (uint32_t i = 0; i < o.nqp; i++) {
		me.qpn[i] = htobe32(qps[i]->qp_num);
		me.psn[i] = htobe32(my_psn[i]);
	}
	full_io(true, &me, sizeof(me));
	full_io(false, &peer, sizeof(peer));
	CHECK(be64toh(peer.magic) == HELLO_MAGIC, "the peer is not an rndv_peer");
	CHECK(be64toh(peer.params) == params_hash() && be32toh(peer.nqp) == o.nqp,
	      "the peer was given other options (count, seed, QPs, sizes, mix, flags)");
	if (be32toh(peer.mtu) < (uint32_t)mtu)
		mtu = (enum ibv_mtu)be32toh(peer.mtu);
	for (uint32_t i = 0; i < o.nqp; i++) {
		peer.qpn[i] = be32toh(peer.qpn[i]);
		peer.psn[i] = be32toh(peer.psn[i]);
	}
}

/* INIT, RTR, RTS (ibv_modify_qp(3)); the receiver's QP i reads with max_rd_atomic
 * @p rd_atomic, the sender's answers up to 16. */
static void connect_qp(uint32_t i, int access, uint8_t rd_atomic)
{
	const struct conn_opts c = {
		.access = (unsigned int)access, .rnr_retry = 7,
		.min_rnr_timer = 12, /* 0.64 ms */
		.timeout = o.ack_timeout, .retry_cnt = 7, .max_rd_atomic = rd_atomic,
		.max_dest_rd_atomic = 16, .sgid_index = (uint8_t)o.gid_index, .mtu = mtu,
	};
	struct qp_peer to = {.qpn = peer.qpn[i], .psn = peer.psn[i]};
	const char *step = "";
	int ret;

	memcpy(to.gid.raw, peer.gid, 16);
	ret = rc_qp_to_rts(qps[i], my_psn[i], &to, &c, &step);
	CHECK(ret == 0, "QP %u to %s: %s", i, step, strerror(ret));
}

/* PSNs just below the 2^24 wrap, so that the run crosses it. */
static void pick_psns(uint32_t salt)
{
	for (uint32_t i = 0; i < o.nqp; i++)
		my_psn[i] = (0xffffff - 300 * i - salt * 4096 - (o.seed & 0xff)) & 0xffffff;
}

static void watchdog(const char *what, const char *state)
{
	if (elapsed() >= o.timeout_s)
		die("watchdog: %s after %d s: %s", what, o.timeout_s, state);
}

/* The end: each side tells the other it has every completion, and waits to hear the
 * same, polling meanwhile (@p idle must find nothing: a completion now is one too many). */
static bool peer_done;

/* The peer's frame saying it has every completion, which may come while this side
 * still waits for its own last ones. */
static void peer_end(uint32_t t, uint32_t v)
{
	CHECK(t == 'D' && v == o.n && !peer_done, "the peer ended with frame %c %u", (char)t, v);
	peer_done = true;
}

static void finish(void (*idle)(void))
{
	uint32_t v, t;

	tcp_send('D', o.n);
	while (!peer_done) {
		t = tcp_poll(&v);
		if (t != 0)
			peer_end(t, v);
		idle();
		watchdog("waiting for the peer's end", "every message done here");
	}
}

/* ================= the receiver ================= */

enum rstate { R_NONE, R_ADDED, R_LISTED, R_MATCHED, R_SOFT, R_DONE };

struct rmsg {
	uint8_t st;
	bool eligible, first_seen;
	uint32_t op;      /* the number of its ADD among the ops */
	uint32_t handle;
	uint32_t s;       /* the S its ADD carried */
};

struct job {              /* a rendezvous the receiver's software finishes */
	uint32_t m, rkey, len;
	uint64_t va;
	uint8_t qp;       /* the QP that reads and sends the FIN */
	uint8_t stage;    /* 0 READ to post, 1 READ posted, 2 FIN to post, 3 FIN posted */
};

static struct {
	struct msg *s;
	struct rmsg *r;
	struct ibv_cq_ex *cq;   /* the SRQ's */
	struct ibv_cq *scq;     /* the QPs' send CQ: software READs and FINs */
	struct ibv_srq *srq;
	uint8_t *slots, *bounce, *small, *fin;
	struct ibv_mr *slots_mr, *bounce_mr, *small_mr, *fin_mr;
	size_t slot_len;
	uint32_t nbounce, low, next_add, credit, credit_sent, done;
	uint32_t ops_posted, ops_done_seen, elig_op, last_add_op, probes, probe_pending;
	uint32_t probe_handle, probe_s;
	uint32_t sync_req_s;        /* the S of the latest ADD answered with SYNC_REQ */
	uint32_t unexpected_seen;   /* S of doc/guides/srq.md §5 */
	uint32_t sq_cap[MAX_QPS], sq_used[MAX_QPS];
	uint32_t last_first[MAX_QPS], last_dv[MAX_QPS];
	struct job *jobs;
	uint32_t njobs;
	uint64_t bytes, counts[K_COUNT], incomplete, soft_reads, dev_reads, dev_bytes;
} R;

static uint8_t *slot_of(uint32_t m)
{
	return R.slots + (size_t)(m % o.window) * R.slot_len;
}

/* How many bytes after message @p m in its slot must stay as they were: the rest of
 * its entry's buffer, if the entry is the slot, and GUARD more. */
static uint32_t guard_len(const struct msg *s)
{
	return (s->kind == K_EAGER || s->kind == K_RNDV ? s->entry_len - s->len : 0) + GUARD;
}

/* Software reads and FINs go over the message's QP, or QP 1 when it has no send queue. */
static uint8_t soft_qp(uint8_t qp)
{
	return qp == 0 && o.nqp > 1 ? 1 : qp;
}

static void r_setup(void)
{
	struct ibv_srq_init_attr_ex sa;
	struct ibv_cq_init_attr_ex ca;
	struct ibv_device_attr_ex dev;
	uint32_t cqe;

	R.s = schedule();
	R.r = calloc(o.n, sizeof(*R.r));
	R.jobs = calloc(o.window, sizeof(*R.jobs));
	CHECK(R.r != NULL && R.jobs != NULL, "no memory");
	CHECK(ibv_query_device_ex(ctx, NULL, &dev) == 0, "ibv_query_device_ex: %s",
	      strerror(errno));
	CHECK(dev.tm_caps.flags & IBV_TM_CAP_RC, "the device offers no tag matching on RC");
	CHECK(dev.tm_caps.max_rndv_hdr_size >= TMH_LEN + RVH_LEN + HDR_MAX,
	      "max_rndv_hdr_size %u", dev.tm_caps.max_rndv_hdr_size);
	R.slot_len = ((size_t)(o.rndv_max > o.eager_max ? o.rndv_max : o.eager_max) + 256 +
		      GUARD + 63) & ~(size_t)63;
	R.slots = region(R.slot_len * o.window);
	R.slots_mr = reg(R.slots, R.slot_len * o.window, IBV_ACCESS_LOCAL_WRITE);
	R.sync_req_s = UINT32_MAX;
	R.nbounce = 2 * o.window + 16;
	R.bounce = region((size_t)R.nbounce * BOUNCE_LEN);
	R.bounce_mr = reg(R.bounce, (size_t)R.nbounce * BOUNCE_LEN, IBV_ACCESS_LOCAL_WRITE);
	R.small = region((size_t)o.window * SMALL_LEN);
	R.small_mr = reg(R.small, (size_t)o.window * SMALL_LEN, IBV_ACCESS_LOCAL_WRITE);
	R.fin = region((size_t)o.window * TMH_LEN);
	R.fin_mr = reg(R.fin, (size_t)o.window * TMH_LEN, 0);

	cqe = 4 * o.window + R.nbounce + 64;
	memset(&ca, 0, sizeof(ca));
	ca.cqe = cqe;
	ca.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP |
		      IBV_WC_EX_WITH_TM_INFO;
	R.cq = ibv_create_cq_ex(ctx, &ca);
	CHECK(R.cq != NULL, "ibv_create_cq_ex with IBV_WC_EX_WITH_TM_INFO: %s", strerror(errno));
	R.scq = ibv_create_cq(ctx, 2 * o.window * o.nqp + 64, NULL, NULL, 0);
	CHECK(R.scq != NULL, "ibv_create_cq: %s", strerror(errno));

	memset(&sa, 0, sizeof(sa));
	sa.attr.max_wr = R.nbounce;
	sa.attr.max_sge = 1;
	sa.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_CQ |
		       IBV_SRQ_INIT_ATTR_TM;
	sa.srq_type = IBV_SRQT_TM;
	sa.pd = pd;
	sa.cq = ibv_cq_ex_to_cq(R.cq);
	sa.tm_cap.max_num_tags = o.window + 8;
	sa.tm_cap.max_ops = 2 * o.window + 64;
	R.srq = ibv_create_srq_ex(ctx, &sa);
	CHECK(R.srq != NULL, "ibv_create_srq_ex (TM, %u tags, %u ops): %s",
	      sa.tm_cap.max_num_tags, sa.tm_cap.max_ops, strerror(errno));
	for (uint32_t i = 0; i < R.nbounce; i++) {
		struct ibv_sge sge = {(uintptr_t)(R.bounce + (size_t)i * BOUNCE_LEN), BOUNCE_LEN,
				      R.bounce_mr->lkey};
		struct ibv_recv_wr wr = {.wr_id = ID_BOUNCE | i, .sg_list = &sge, .num_sge = 1}, *bad;

		int ret = ibv_post_srq_recv(R.srq, &wr, &bad);

		CHECK(ret == 0, "ibv_post_srq_recv: %s", strerror(ret));
	}
	/* QP 0 has no send queue (srq.md §2: the device reads for it); the others a small
	 * one, for the software's READs and FINs. */
	for (uint32_t i = 0; i < o.nqp; i++) {
		struct ibv_qp_init_attr qa;

		memset(&qa, 0, sizeof(qa));
		qa.send_cq = R.scq;
		qa.recv_cq = ibv_cq_ex_to_cq(R.cq);
		qa.srq = R.srq;
		qa.qp_type = IBV_QPT_RC;
		qa.cap.max_send_wr = i == 0 ? 0 : 2 + 2 * i;
		qa.cap.max_send_sge = 1;
		qps[i] = ibv_create_qp(pd, &qa);
		CHECK(qps[i] != NULL, "ibv_create_qp(RC on the TM SRQ, max_send_wr %u): %s",
		      qa.cap.max_send_wr, strerror(errno));
		R.sq_cap[i] = qa.cap.max_send_wr;
		R.last_first[i] = R.last_dv[i] = UINT32_MAX;
	}
	pick_psns(1);
}

static bool expected_kind(uint8_t k)
{
	return k == K_EAGER || k == K_RNDV || k == K_SMALL;
}

static void r_state(char *b, size_t n)
{
	snprintf(b, n, "%u of %u messages done, window from %u, credit %u, tags added to %u, "
		 "%u unexpected seen, %u software rendezvous in progress, ops %u posted, "
		 "eligible to op %u", R.done, o.n, R.low, R.credit_sent, R.next_add,
		 R.unexpected_seen, R.njobs, R.ops_posted, R.elig_op);
}

static int post_op(struct ibv_ops_wr *op)
{
	struct ibv_ops_wr *bad = NULL;
	int ret;

	op->flags |= IBV_OPS_TM_SYNC;
	op->tm.unexpected_cnt = R.unexpected_seen;
	ret = ibv_post_srq_ops(R.srq, op, &bad);
	CHECK(ret == 0 || ret == ENOMEM, "ibv_post_srq_ops(%s): %s",
	      op->opcode == IBV_WR_TAG_ADD ? "ADD" : "DEL", strerror(ret));
	if (ret == 0)
		R.ops_posted++;
	return ret;
}

/* ADDs for the expected messages of the window; a probe ADD when the last one left the
 * entries ineligible (srq.md §5: only an ADD's completion says whether S == U). */
static void r_add(void)
{
	struct ibv_ops_wr op;
	struct ibv_sge sge;

	while (R.next_add < o.n && R.next_add < R.low + o.window) {
		uint32_t m = R.next_add;
		const struct msg *s = &R.s[m];

		if (expected_kind(s->kind)) {
			uint8_t *buf = s->kind == K_SMALL ? R.small + (size_t)(m % o.window) * SMALL_LEN
							  : slot_of(m);

			if (s->kind == K_SMALL)
				memset(buf, POISON, SMALL_LEN);
			memset(slot_of(m) + s->len, POISON, guard_len(s));
			sge.addr = (uintptr_t)buf;
			sge.length = s->entry_len;
			sge.lkey = s->kind == K_SMALL ? R.small_mr->lkey : R.slots_mr->lkey;
			memset(&op, 0, sizeof(op));
			op.wr_id = ID_ADD | m;
			op.opcode = IBV_WR_TAG_ADD;
			op.flags = IBV_OPS_SIGNALED;
			op.tm.add.recv_wr_id = ID_ENTRY | m;
			op.tm.add.sg_list = &sge;
			op.tm.add.num_sge = 1;
			op.tm.add.tag = tag_of(m);
			op.tm.add.mask = UINT64_MAX;
			if (post_op(&op) != 0)
				return;
			R.r[m].st = R_ADDED;
			R.r[m].handle = op.tm.handle;
			R.r[m].s = op.tm.unexpected_cnt;
			R.r[m].op = R.ops_posted;
			R.last_add_op = R.ops_posted;
		} else {
			memset(slot_of(m) + s->len, POISON, guard_len(s));
		}
		R.next_add++;
	}
	/* Again only once software has seen more unexpected messages: with the same S the
	 * answer would be the same. */
	if (R.elig_op < R.last_add_op && R.ops_done_seen == R.last_add_op &&
	    !R.probe_pending && R.unexpected_seen != R.sync_req_s) {
		memset(&op, 0, sizeof(op));
		op.wr_id = ID_PROBE | R.probes;
		op.opcode = IBV_WR_TAG_ADD;
		op.flags = IBV_OPS_SIGNALED;
		op.tm.add.tag = (uint64_t)(TAG_SALT + 1) << 32 | R.probes; /* no message's */
		op.tm.add.mask = UINT64_MAX;
		if (post_op(&op) == 0) {
			R.probe_pending = R.ops_posted;
			R.probe_handle = op.tm.handle;
			R.probe_s = op.tm.unexpected_cnt;
			R.last_add_op = R.ops_posted;
			R.probes++;
		}
	}
}

/* How far the sender may go: up to the first expected message not yet eligible. */
static void r_credit(void)
{
	while (R.credit < o.n && R.credit < R.low + o.window) {
		const struct rmsg *r = &R.r[R.credit];

		if (expected_kind(R.s[R.credit].kind) && !(r->st >= R_LISTED && r->eligible))
			break;
		R.credit++;
	}
	if (R.credit != R.credit_sent) {
		tcp_send('K', R.credit);
		R.credit_sent = R.credit;
	}
}

static void r_done(uint32_t m)
{
	CHECK(R.r[m].st != R_DONE, "message %u done twice", m);
	R.r[m].st = R_DONE;
	R.done++;
	R.bytes += R.s[m].len;
	R.counts[R.s[m].kind]++;
	while (R.low < o.n && R.r[R.low].st == R_DONE)
		R.low++;
}

/* Every byte of message @p m in its slot, and the guard after it untouched. */
static void r_check_data(uint32_t m, const char *how)
{
	const struct msg *s = &R.s[m];
	const uint8_t *p = slot_of(m);
	int64_t bad = check_pattern(p, m, s->len);

	CHECK(bad < 0, "message %u (%s, %u bytes, %s): byte %" PRId64 " is 0x%02x, not the "
	      "pattern", m, kind_name[s->kind], s->len, how, bad, p[bad]);
	for (uint32_t i = 0; i < guard_len(s); i++)
		CHECK(p[s->len + i] == POISON, "message %u (%s, %u bytes, entry of %u, %s): byte %u "
		      "after its end was written (0x%02x)", m, kind_name[s->kind], s->len,
		      s->entry_len, how, i, p[s->len + i]);
}

/* The header message of rendezvous @p m as the sender built it, at @p p. */
static void r_check_rndv_hdr(uint32_t m, const uint8_t *p, uint32_t byte_len, uint64_t *va,
			     uint32_t *rkey, const char *how)
{
	const struct msg *s = &R.s[m];
	struct ibv_tmh h;
	struct ibv_rvh v;
	int64_t bad;

	CHECK(byte_len == TMH_LEN + RVH_LEN + s->hdr_len, "message %u (%s): %s byte_len %u, "
	      "want %u (TMH, RVH, %u bytes of application header)", m, kind_name[s->kind], how,
	      byte_len, TMH_LEN + RVH_LEN + s->hdr_len, s->hdr_len);
	memcpy(&h, p, sizeof(h));
	memcpy(&v, p + TMH_LEN, sizeof(v));
	CHECK(h.opcode == IBV_TMH_RNDV && be64toh(h.tag) == tag_of(m) &&
	      be32toh(h.app_ctx) == ctx_of(m), "message %u (%s): %s: the TMH placed is not the "
	      "sender's (opcode %u, tag 0x%" PRIx64 ", app_ctx 0x%x)", m, kind_name[s->kind], how,
	      h.opcode, be64toh(h.tag), be32toh(h.app_ctx));
	CHECK(be32toh(v.len) == s->len, "message %u: %s: RVH len %u, want %u", m, how,
	      be32toh(v.len), s->len);
	bad = check_pattern(p + TMH_LEN + RVH_LEN, hdr_seed(m), s->hdr_len);
	CHECK(bad < 0, "message %u: %s: application header byte %" PRId64 " is wrong", m, how,
	      bad);
	*va = be64toh(v.va);
	*rkey = be32toh(v.rkey);
}

static void r_job(uint32_t m, uint64_t va, uint32_t rkey, uint8_t qp)
{
	struct job *j;

	CHECK(R.njobs < o.window, "more software rendezvous than the window holds");
	j = &R.jobs[R.njobs++];
	*j = (struct job){.m = m, .va = va, .rkey = rkey, .len = R.s[m].len, .qp = soft_qp(qp)};
	R.r[m].st = R_SOFT;
	R.soft_reads++;
}

/* READs and FINs of the software's rendezvous, as their QPs' send queues take them. */
static void r_jobs(void)
{
	for (uint32_t i = 0; i < R.njobs; i++) {
		struct job *j = &R.jobs[i];
		struct ibv_send_wr wr, *bad;
		struct ibv_sge sge;
		int ret;

		if ((j->stage != 0 && j->stage != 2) || R.sq_used[j->qp] >= R.sq_cap[j->qp])
			continue;
		memset(&wr, 0, sizeof(wr));
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.send_flags = IBV_SEND_SIGNALED;
		if (j->stage == 0) {
			sge = (struct ibv_sge){(uintptr_t)slot_of(j->m), j->len, R.slots_mr->lkey};
			wr.wr_id = ID_READ | j->m;
			wr.opcode = IBV_WR_RDMA_READ;
			wr.wr.rdma.remote_addr = j->va;
			wr.wr.rdma.rkey = j->rkey;
		} else {
			struct ibv_tmh *h = (void *)(R.fin + (size_t)(j->m % o.window) * TMH_LEN);

			memset(h, 0, sizeof(*h));
			h->opcode = IBV_TMH_FIN;
			h->app_ctx = htobe32(ctx_of(j->m));
			h->tag = htobe64(tag_of(j->m));
			sge = (struct ibv_sge){(uintptr_t)h, TMH_LEN, R.fin_mr->lkey};
			wr.wr_id = ID_FIN | j->m;
			wr.opcode = IBV_WR_SEND;
		}
		ret = ibv_post_send(qps[j->qp], &wr, &bad);
		CHECK(ret == 0, "message %u: ibv_post_send(%s) on QP %u: %s", j->m,
		      j->stage == 0 ? "RDMA READ" : "FIN", j->qp, strerror(ret));
		R.sq_used[j->qp]++;
		j->stage++;
	}
}

static struct job *r_job_of(uint32_t m)
{
	for (uint32_t i = 0; i < R.njobs; i++)
		if (R.jobs[i].m == m)
			return &R.jobs[i];
	die("a send completion for message %u, which has no software rendezvous", m);
}

static void r_poll_send(void)
{
	struct ibv_wc wc[16];
	int n = ibv_poll_cq(R.scq, 16, wc);

	CHECK(n >= 0, "ibv_poll_cq: %d", n);
	for (int i = 0; i < n; i++) {
		uint32_t m = ID_NUM(wc[i].wr_id);
		struct job *j;

		CHECK(ID_KIND(wc[i].wr_id) == ID_READ || ID_KIND(wc[i].wr_id) == ID_FIN,
		      "a send completion of wr_id 0x%" PRIx64 ", never posted", wc[i].wr_id);
		CHECK(m < o.n, "a send completion for message %u", m);
		j = r_job_of(m);
		CHECK(wc[i].status == IBV_WC_SUCCESS, "message %u: the software's %s ended with "
		      "%s", m, j->stage == 1 ? "RDMA READ" : "FIN", ibv_wc_status_str(wc[i].status));
		CHECK(wc[i].qp_num == qps[j->qp]->qp_num, "message %u: a completion on QP 0x%x, "
		      "posted on 0x%x", m, wc[i].qp_num, qps[j->qp]->qp_num);
		R.sq_used[j->qp]--;
		if (ID_KIND(wc[i].wr_id) == ID_READ) {
			CHECK(j->stage == 1 && wc[i].opcode == IBV_WC_RDMA_READ, "message %u: "
			      "opcode %d for its READ (stage %u)", m, wc[i].opcode, j->stage);
			r_check_data(m, "read by software");
			j->stage = 2;
		} else {
			CHECK(j->stage == 3 && wc[i].opcode == IBV_WC_SEND, "message %u: opcode %d "
			      "for its FIN (stage %u)", m, wc[i].opcode, j->stage);
			r_done(m);
			*j = R.jobs[--R.njobs];
		}
	}
}

/* Per QP, messages take their first completion in the order they were sent. */
static void r_first(uint32_t m, uint32_t qpn)
{
	const struct msg *s = &R.s[m];
	uint32_t *last = &R.last_first[s->qp];

	CHECK(qpn == qps[s->qp]->qp_num, "message %u (%s): completion for QP 0x%x, sent on "
	      "0x%x", m, kind_name[s->kind], qpn, qps[s->qp]->qp_num);
	CHECK(!R.r[m].first_seen, "message %u (%s) arrived twice", m, kind_name[s->kind]);
	CHECK(*last == UINT32_MAX || *last < m, "message %u (%s) on QP %u completed after "
	      "message %u, sent after it on that QP", m, kind_name[s->kind], s->qp, *last);
	*last = m;
	R.r[m].first_seen = true;
}

struct rwc {
	uint64_t wr_id;
	enum ibv_wc_status status;
	enum ibv_wc_opcode opcode;
	unsigned int flags;
	uint32_t byte_len, qp_num;
	struct ibv_wc_tm_info tm;
};

static void r_unexpected(const struct rwc *w)
{
	uint32_t b = ID_NUM(w->wr_id), m;
	uint8_t *p = R.bounce + (size_t)b * BOUNCE_LEN;
	struct ibv_sge sge = {(uintptr_t)p, BOUNCE_LEN, R.bounce_mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = w->wr_id, .sg_list = &sge, .num_sge = 1}, *bad;
	const struct msg *s;
	struct ibv_tmh h;
	uint64_t va;
	uint32_t rkey;
	int ret;

	CHECK(b < R.nbounce, "an SRQ completion of wr_id 0x%" PRIx64 ", never posted", w->wr_id);
	CHECK(w->status == IBV_WC_SUCCESS, "an unexpected message ended with %s",
	      ibv_wc_status_str(w->status));
	CHECK(w->opcode == IBV_WC_TM_RECV && w->flags == 0, "an ordinary SRQ WR completed with "
	      "opcode %d, wc_flags 0x%x (want IBV_WC_TM_RECV, no flags)", w->opcode, w->flags);
	CHECK(w->tm.tag == 0 && w->tm.priv == 0, "an unexpected message's tag info is not zero "
	      "(0x%" PRIx64 ", 0x%x)", w->tm.tag, w->tm.priv);
	CHECK(w->byte_len >= TMH_LEN, "an unexpected message of %u bytes", w->byte_len);
	memcpy(&h, p, sizeof(h));
	m = (uint32_t)be64toh(h.tag);
	CHECK(be64toh(h.tag) >> 32 == TAG_SALT && m < o.n, "an unexpected message with tag "
	      "0x%" PRIx64 ", none of ours", be64toh(h.tag));
	s = &R.s[m];
	CHECK(s->kind == K_UEAGER || s->kind == K_URNDV, "message %u (%s, %u bytes) arrived "
	      "unexpected, though its entry was eligible (srq.md §4)", m, kind_name[s->kind],
	      s->len);
	CHECK(m < R.credit_sent, "message %u arrived before the sender was told it may send it",
	      m);
	CHECK(be32toh(h.app_ctx) == ctx_of(m) && h.reserved[0] == 0 && h.reserved[1] == 0 &&
	      h.reserved[2] == 0, "message %u: its TMH is not the sender's", m);
	r_first(m, w->qp_num);
	R.unexpected_seen++;
	if (s->kind == K_UEAGER) {
		int64_t bad_at;

		CHECK(h.opcode == IBV_TMH_EAGER, "message %u: TMH opcode %u, want EAGER", m,
		      h.opcode);
		CHECK(w->byte_len == TMH_LEN + s->len, "message %u (ueager): byte_len %u, want "
		      "%u (TMH and %u bytes)", m, w->byte_len, TMH_LEN + s->len, s->len);
		bad_at = check_pattern(p + TMH_LEN, m, s->len);
		CHECK(bad_at < 0, "message %u (ueager): byte %" PRId64 " placed in the SRQ WR is "
		      "wrong", m, bad_at);
		memcpy(slot_of(m), p + TMH_LEN, s->len);
		r_check_data(m, "copied out of an SRQ WR");
		r_done(m);
	} else {
		r_check_rndv_hdr(m, p, w->byte_len, &va, &rkey, "unexpected, in an SRQ WR");
		r_job(m, va, rkey, s->qp);
	}
	ret = ibv_post_srq_recv(R.srq, &wr, &bad);
	CHECK(ret == 0, "ibv_post_srq_recv: %s", strerror(ret));
}

static void r_expected(const struct rwc *w)
{
	uint32_t m = ID_NUM(w->wr_id);
	const unsigned int MD = IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID;
	const struct msg *s;
	struct rmsg *r;
	bool one_packet;
	uint8_t *p;
	uint64_t va;
	uint32_t rkey;

	CHECK(m < o.n, "an entry completion for message %u", m);
	s = &R.s[m];
	r = &R.r[m];
	CHECK(w->opcode == IBV_WC_TM_RECV, "message %u (%s): opcode %d, want IBV_WC_TM_RECV", m,
	      kind_name[s->kind], w->opcode);
	CHECK(r->st == R_LISTED || r->st == R_MATCHED, "message %u (%s): a completion (flags "
	      "0x%x, %s) in state %u", m, kind_name[s->kind], w->flags,
	      ibv_wc_status_str(w->status), r->st);
	if (r->st == R_LISTED) {
		CHECK(w->flags & IBV_WC_TM_MATCH, "message %u (%s): first completion without "
		      "IBV_WC_TM_MATCH (flags 0x%x)", m, kind_name[s->kind], w->flags);
		CHECK(w->tm.tag == tag_of(m) && w->tm.priv == ctx_of(m), "message %u (%s): tag "
		      "0x%" PRIx64 " app_ctx 0x%x, want 0x%" PRIx64 ", 0x%x", m, kind_name[s->kind],
		      w->tm.tag, w->tm.priv, tag_of(m), ctx_of(m));
		r_first(m, w->qp_num);
	}
	CHECK(w->qp_num == qps[s->qp]->qp_num, "message %u: completion for QP 0x%x", m,
	      w->qp_num);
	switch (s->kind) {
	case K_EAGER:
		CHECK(w->status == IBV_WC_SUCCESS, "message %u (eager, %u bytes): %s", m, s->len,
		      ibv_wc_status_str(w->status));
		one_packet = TMH_LEN + s->len <= mtu_bytes(mtu);
		if (r->st == R_LISTED && one_packet) {
			CHECK(w->flags == MD, "message %u (eager, one packet): wc_flags 0x%x, want "
			      "MATCH | DATA_VALID", m, w->flags);
		} else if (r->st == R_LISTED) {
			CHECK(w->flags == IBV_WC_TM_MATCH, "message %u (eager, %u bytes): first "
			      "wc_flags 0x%x, want MATCH", m, s->len, w->flags);
			r->st = R_MATCHED;
			return;
		} else {
			CHECK(w->flags == IBV_WC_TM_DATA_VALID, "message %u (eager, %u bytes): "
			      "second wc_flags 0x%x, want DATA_VALID", m, s->len, w->flags);
		}
		CHECK(w->byte_len == s->len, "message %u (eager): byte_len %u, want %u", m,
		      w->byte_len, s->len);
		r_check_data(m, "eager, in its entry");
		r_done(m);
		return;
	case K_SMALL:
		CHECK(w->status == IBV_WC_TM_RNDV_INCOMPLETE && w->flags == MD, "message %u "
		      "(rendezvous of %u bytes, entry of %u): %s, wc_flags 0x%x; want "
		      "IBV_WC_TM_RNDV_INCOMPLETE, MATCH | DATA_VALID", m, s->len, s->entry_len,
		      ibv_wc_status_str(w->status), w->flags);
		p = R.small + (size_t)(m % o.window) * SMALL_LEN;
		r_check_rndv_hdr(m, p, w->byte_len, &va, &rkey, "placed in its small entry");
		for (uint32_t i = w->byte_len; i < s->entry_len + GUARD; i++)
			CHECK(p[i] == POISON, "message %u (small): byte %u of its entry, after the "
			      "headers, was written", m, i);
		R.incomplete++;
		r_job(m, va, rkey, s->qp);
		return;
	default:
		break;
	}
	/* K_RNDV */
	if (r->st == R_LISTED && w->status == IBV_WC_TM_RNDV_INCOMPLETE && o.incomplete_ok) {
		CHECK(w->flags == MD, "message %u (rndv): RNDV_INCOMPLETE with wc_flags 0x%x", m,
		      w->flags);
		r_check_rndv_hdr(m, slot_of(m), w->byte_len, &va, &rkey, "placed in its entry");
		memset(slot_of(m), POISON, TMH_LEN + RVH_LEN + s->hdr_len);
		R.incomplete++;
		r_job(m, va, rkey, s->qp);
		return;
	}
	if (r->st == R_LISTED) {
		CHECK(w->status == IBV_WC_SUCCESS && w->flags == IBV_WC_TM_MATCH, "message %u "
		      "(rendezvous of %u bytes, entry of %u): first completion %s, wc_flags 0x%x; "
		      "want SUCCESS, MATCH", m, s->len, s->entry_len, ibv_wc_status_str(w->status),
		      w->flags);
		r->st = R_MATCHED;
		return;
	}
	CHECK(w->status == IBV_WC_SUCCESS && w->flags == IBV_WC_TM_DATA_VALID, "message %u "
	      "(rendezvous of %u bytes): second completion %s, wc_flags 0x%x; want SUCCESS, "
	      "DATA_VALID", m, s->len, ibv_wc_status_str(w->status), w->flags);
	CHECK(w->byte_len == s->len, "message %u (rndv): byte_len %u, want %u", m, w->byte_len,
	      s->len);
	CHECK(w->tm.tag == 0 && w->tm.priv == 0, "message %u (rndv): DATA_VALID with tag info "
	      "0x%" PRIx64 ", 0x%x, want zero", m, w->tm.tag, w->tm.priv);
	CHECK(R.last_dv[s->qp] == UINT32_MAX || R.last_dv[s->qp] < m, "message %u (rndv) on "
	      "QP %u: its data came after that of message %u, whose header came after it", m,
	      s->qp, R.last_dv[s->qp]);
	R.last_dv[s->qp] = m;
	r_check_data(m, "read by the device");
	R.dev_reads++;
	R.dev_bytes += s->len;
	r_done(m);
}

static void r_op(const struct rwc *w)
{
	uint32_t m = ID_NUM(w->wr_id), op, carried;

	CHECK(w->opcode == IBV_WC_TM_ADD && w->status == IBV_WC_SUCCESS, "ADD wr_id 0x%" PRIx64
	      ": opcode %d, %s", w->wr_id, w->opcode, ibv_wc_status_str(w->status));
	CHECK((w->flags & ~(unsigned int)IBV_WC_TM_SYNC_REQ) == 0, "ADD: wc_flags 0x%x",
	      w->flags);
	if (ID_KIND(w->wr_id) == ID_PROBE) {
		struct ibv_ops_wr del;

		CHECK(R.probe_pending != 0, "a probe ADD completed twice");
		op = R.probe_pending;
		carried = R.probe_s;
		R.probe_pending = 0;
		/* Its tag is no message's: gone again at once, unsignaled. */
		memset(&del, 0, sizeof(del));
		del.wr_id = w->wr_id;
		del.opcode = IBV_WR_TAG_DEL;
		del.tm.handle = R.probe_handle;
		while (post_op(&del) != 0)
			watchdog("posting a DEL", "the op queue full");
	} else {
		CHECK(m < o.n && R.r[m].st == R_ADDED, "ADD completion for message %u (state %u)",
		      m, m < o.n ? R.r[m].st : 0);
		R.r[m].st = R_LISTED;
		op = R.r[m].op;
		carried = R.r[m].s;
	}
	CHECK(op > R.ops_done_seen, "ADD completions out of order (op %u after op %u)", op,
	      R.ops_done_seen);
	R.ops_done_seen = op;
	if (w->flags & IBV_WC_TM_SYNC_REQ) {
		R.sync_req_s = carried;
	} else {
		/* S == U when it ran: every entry added up to it is eligible. */
		R.elig_op = op;
		for (uint32_t i = R.low; i < R.next_add; i++)
			if (R.r[i].st >= R_LISTED && R.r[i].op <= op)
				R.r[i].eligible = true;
	}
}

static void r_poll(void)
{
	struct ibv_poll_cq_attr attr = {.comp_mask = 0};
	struct rwc w[32];
	int n = 0, ret;

	ret = ibv_start_poll(R.cq, &attr);
	if (ret == ENOENT)
		return;
	CHECK(ret == 0, "ibv_start_poll: %s", strerror(ret));
	do {
		w[n].wr_id = R.cq->wr_id;
		w[n].status = R.cq->status;
		w[n].opcode = ibv_wc_read_opcode(R.cq);
		w[n].flags = ibv_wc_read_wc_flags(R.cq);
		w[n].byte_len = ibv_wc_read_byte_len(R.cq);
		w[n].qp_num = ibv_wc_read_qp_num(R.cq);
		ibv_wc_read_tm_info(R.cq, &w[n].tm);
		n++;
	} while (n < 32 && (ret = ibv_next_poll(R.cq)) == 0);
	ibv_end_poll(R.cq);
	CHECK(ret == 0 || ret == ENOENT, "ibv_next_poll: %s", strerror(ret));
	for (int i = 0; i < n; i++) {
		switch (ID_KIND(w[i].wr_id)) {
		case ID_BOUNCE:
			r_unexpected(&w[i]);
			break;
		case ID_ENTRY:
			r_expected(&w[i]);
			break;
		case ID_ADD:
		case ID_PROBE:
			r_op(&w[i]);
			break;
		default:
			die("an SRQ CQ completion of wr_id 0x%" PRIx64 " (opcode %d, %s), never "
			    "posted", w[i].wr_id, w[i].opcode, ibv_wc_status_str(w[i].status));
		}
	}
}

static void r_idle(void)
{
	struct ibv_poll_cq_attr attr = {.comp_mask = 0};
	struct ibv_wc wc;
	int ret = ibv_start_poll(R.cq, &attr);

	if (ret == 0) {
		uint64_t id = R.cq->wr_id;
		enum ibv_wc_opcode op = ibv_wc_read_opcode(R.cq);

		ibv_end_poll(R.cq);
		die("after the last message: a completion of wr_id 0x%" PRIx64 " opcode %d", id, op);
	}
	CHECK(ibv_poll_cq(R.scq, 1, &wc) == 0, "after the last message: a send completion of "
	      "wr_id 0x%" PRIx64, wc.wr_id);
}

static int receiver(void)
{
	char st[512];
	uint32_t t, v;

	r_setup();
	tcp_connect();
	exchange();
	for (uint32_t i = 0; i < o.nqp; i++)
		connect_qp(i, IBV_ACCESS_LOCAL_WRITE, (uint8_t)(i == 0 ? 0 : i > 5 ? 16 : 1 << (i - 1)));
	printf("receiver: %u QPs (QP 0 without a send queue), window %u, MTU %u, %u messages\n",
	       o.nqp, o.window, mtu_bytes(mtu), o.n);
	while (R.done < o.n || R.njobs > 0) {
		r_add();
		r_poll();
		r_credit();
		r_jobs();
		r_poll_send();
		t = tcp_poll(&v);
		if (t != 0)
			peer_end(t, v);
		if (elapsed() >= o.timeout_s) {
			r_state(st, sizeof(st));
			watchdog("the run", st);
		}
	}
	CHECK(R.unexpected_seen == R.counts[K_UEAGER] + R.counts[K_URNDV], "%u unexpected "
	      "messages seen, %" PRIu64 " scheduled", R.unexpected_seen,
	      R.counts[K_UEAGER] + R.counts[K_URNDV]);
	finish(r_idle);
	printf("receiver: ok: %u messages (%" PRIu64 " eager, %" PRIu64 " rndv, %" PRIu64
	       " ueager, %" PRIu64 " urndv, %" PRIu64 " small), %" PRIu64 " bytes checked, "
	       "%" PRIu64 " rendezvous read by the device (%" PRIu64 " bytes), %" PRIu64
	       " finished by software (%" PRIu64 " after RNDV_INCOMPLETE), %u probes, %.2f s\n",
	       o.n, R.counts[K_EAGER], R.counts[K_RNDV], R.counts[K_UEAGER], R.counts[K_URNDV],
	       R.counts[K_SMALL], R.bytes, R.dev_reads, R.dev_bytes, R.soft_reads, R.incomplete,
	       R.probes, elapsed());
	return 0;
}

/* ================= the sender ================= */

static struct {
	struct msg *s;
	struct ibv_cq *cq;      /* sends and FIN receives of every QP: one order */
	uint8_t *slots, *hdrs, *fins;
	struct ibv_mr *slots_mr, *hdrs_mr, *fins_mr;
	size_t slot_len;
	uint32_t window, nfin, next, low, credit, done, sq_used[MAX_QPS];
	uint8_t *st;            /* bit 0 sent, bit 1 SEND completed, bit 2 FIN */
	uint64_t bytes, fins_got, fin_first;
} S;

static void s_post_fin_recv(uint32_t qp, uint32_t i)
{
	uint8_t *p = S.fins + ((size_t)qp * S.nfin + i) * 64;
	struct ibv_sge sge = {(uintptr_t)p, 64, S.fins_mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = ID_FINBUF | qp << 16 | i, .sg_list = &sge,
				 .num_sge = 1}, *bad;
	int ret;

	memset(p, 0, 64);
	ret = ibv_post_recv(qps[qp], &wr, &bad);
	CHECK(ret == 0, "ibv_post_recv on QP %u: %s", qp, strerror(ret));
}

static void s_setup(void)
{
	S.s = schedule();
	S.st = calloc(o.n, 1);
	CHECK(S.st != NULL, "no memory");
	S.window = o.window;
	S.slot_len = ((size_t)(o.rndv_max > o.eager_max + TMH_LEN ? o.rndv_max
								 : o.eager_max + TMH_LEN) + 63) &
		     ~(size_t)63;
	S.slots = region(S.slot_len * S.window);
	S.slots_mr = reg(S.slots, S.slot_len * S.window,
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	S.hdrs = region((size_t)S.window * 64);
	S.hdrs_mr = reg(S.hdrs, (size_t)S.window * 64, 0);
	S.nfin = S.window + 4;
	S.fins = region((size_t)o.nqp * S.nfin * 64);
	S.fins_mr = reg(S.fins, (size_t)o.nqp * S.nfin * 64, IBV_ACCESS_LOCAL_WRITE);
	S.cq = ibv_create_cq(ctx, (int)(o.nqp * (S.window + S.nfin) + 16), NULL, NULL, 0);
	CHECK(S.cq != NULL, "ibv_create_cq: %s", strerror(errno));
	for (uint32_t i = 0; i < o.nqp; i++) {
		struct ibv_qp_init_attr qa;

		memset(&qa, 0, sizeof(qa));
		qa.send_cq = S.cq;
		qa.recv_cq = S.cq;
		qa.qp_type = IBV_QPT_RC;
		qa.cap.max_send_wr = S.window;
		qa.cap.max_recv_wr = S.nfin;
		qa.cap.max_send_sge = 1;
		qa.cap.max_recv_sge = 1;
		qps[i] = ibv_create_qp(pd, &qa);
		CHECK(qps[i] != NULL, "ibv_create_qp: %s", strerror(errno));
	}
	pick_psns(2);
}

static uint8_t *s_slot(uint32_t m)
{
	return S.slots + (size_t)(m % S.window) * S.slot_len;
}

static void s_send(uint32_t m)
{
	const struct msg *s = &S.s[m];
	uint8_t *p = s_slot(m);
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	struct ibv_tmh *h;
	struct ibv_rvh *v;
	int ret;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = ID_SEND | m;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	if (is_rndv(s)) {
		fill(p, m, s->len);
		if (o.corrupt_set && o.corrupt == m)
			p[s->len / 2] ^= 0x10;
		h = (void *)(S.hdrs + (size_t)(m % S.window) * 64);
		v = (void *)(h + 1);
		memset(h, 0, sizeof(*h));
		h->opcode = IBV_TMH_RNDV;
		v->va = htobe64((uintptr_t)p);
		v->rkey = htobe32(S.slots_mr->rkey);
		v->len = htobe32(s->len);
		fill((uint8_t *)(v + 1), hdr_seed(m), s->hdr_len);
		sge = (struct ibv_sge){(uintptr_t)h, TMH_LEN + RVH_LEN + s->hdr_len,
				       S.hdrs_mr->lkey};
	} else {
		h = (void *)p;
		memset(h, 0, sizeof(*h));
		h->opcode = IBV_TMH_EAGER;
		fill(p + TMH_LEN, m, s->len);
		if (o.corrupt_set && o.corrupt == m && s->len > 0)
			p[TMH_LEN + s->len / 2] ^= 0x10;
		sge = (struct ibv_sge){(uintptr_t)p, TMH_LEN + s->len, S.slots_mr->lkey};
	}
	h->app_ctx = htobe32(ctx_of(m));
	h->tag = htobe64(tag_of(m));
	ret = ibv_post_send(qps[s->qp], &wr, &bad);
	CHECK(ret == 0, "message %u: ibv_post_send on QP %u: %s", m, s->qp, strerror(ret));
	S.sq_used[s->qp]++;
	S.st[m] = 1;
}

static void s_done_check(uint32_t m)
{
	const struct msg *s = &S.s[m];

	if (!(S.st[m] & 2) || (is_rndv(s) && !(S.st[m] & 4)))
		return;
	if (is_rndv(s) && !(o.corrupt_set && o.corrupt == m)) {
		/* Read, never written: the source is as it was filled. */
		int64_t bad = check_pattern(s_slot(m), m, s->len);

		CHECK(bad < 0, "message %u (%s, %u bytes): byte %" PRId64 " of its source changed "
		      "while the receiver read it", m, kind_name[s->kind], s->len, bad);
	}
	S.done++;
	S.bytes += s->len;
	S.st[m] |= 8;
	while (S.low < o.n && (S.st[S.low] & 8))
		S.low++;
}

static void s_fin(const struct ibv_wc *wc)
{
	uint32_t qp = (uint32_t)(wc->wr_id >> 16) & 0xff, i = (uint32_t)wc->wr_id & 0xffff, m;
	const uint8_t *p = S.fins + ((size_t)qp * S.nfin + i) * 64;
	const struct msg *s;
	struct ibv_tmh h;
	uint8_t want_qp;

	CHECK(qp < o.nqp && i < S.nfin, "a receive of wr_id 0x%" PRIx64 ", never posted",
	      wc->wr_id);
	CHECK(wc->status == IBV_WC_SUCCESS, "a FIN receive on QP %u ended with %s", qp,
	      ibv_wc_status_str(wc->status));
	CHECK(wc->opcode == IBV_WC_RECV && (wc->wc_flags & ~(unsigned int)IBV_WC_GRH) == 0,
	      "a FIN receive: opcode %d, wc_flags 0x%x (want IBV_WC_RECV)", wc->opcode,
	      wc->wc_flags);
	CHECK(wc->byte_len == TMH_LEN, "a FIN of %u bytes, want %u", wc->byte_len, TMH_LEN);
	CHECK(wc->qp_num == qps[qp]->qp_num, "a FIN receive of QP %u for QP 0x%x", qp,
	      wc->qp_num);
	for (uint32_t b = TMH_LEN; b < 64; b++)
		CHECK(p[b] == 0, "a FIN receive on QP %u: byte %u of its buffer, after the 16 of the "
		      "FIN, was written", qp, b);
	memcpy(&h, p, sizeof(h));
	m = (uint32_t)be64toh(h.tag);
	CHECK(h.opcode == IBV_TMH_FIN && h.reserved[0] == 0 && h.reserved[1] == 0 &&
	      h.reserved[2] == 0, "a FIN with TMH opcode %u", h.opcode);
	CHECK(be64toh(h.tag) >> 32 == TAG_SALT && m < o.n, "a FIN for tag 0x%" PRIx64
	      ", none of ours", be64toh(h.tag));
	s = &S.s[m];
	CHECK(is_rndv(s), "a FIN for message %u, an eager one", m);
	CHECK(be32toh(h.app_ctx) == ctx_of(m), "the FIN of message %u: app_ctx 0x%x, want 0x%x",
	      m, be32toh(h.app_ctx), ctx_of(m));
	CHECK(S.st[m] & 1, "the FIN of message %u, not sent yet", m);
	CHECK(!(S.st[m] & 4), "a second FIN for message %u (%s)", m, kind_name[s->kind]);
	/* The device sends the FIN of an expected rendezvous on its QP; the receiver's
	 * software its own, on the QP it read over. */
	want_qp = (s->kind == K_RNDV && !o.incomplete_ok) ? s->qp : soft_qp(s->qp);
	CHECK(qp == want_qp || (s->kind == K_RNDV && o.incomplete_ok && qp == s->qp),
	      "the FIN of message %u (%s, sent on QP %u) came on QP %u, want %u", m,
	      kind_name[s->kind], s->qp, qp, want_qp);
	if (!(S.st[m] & 2)) {
		S.fin_first++;
		CHECK(o.lossy, "the FIN of message %u (%s) came before its SEND's completion",
		      m, kind_name[s->kind]);
	}
	S.st[m] |= 4;
	S.fins_got++;
	s_post_fin_recv(qp, i);
	s_done_check(m);
}

static void s_poll(void)
{
	struct ibv_wc wc[16];
	int n = ibv_poll_cq(S.cq, 16, wc);

	CHECK(n >= 0, "ibv_poll_cq: %d", n);
	for (int i = 0; i < n; i++) {
		uint32_t m = ID_NUM(wc[i].wr_id);

		if (ID_KIND(wc[i].wr_id) == ID_FINBUF) {
			s_fin(&wc[i]);
			continue;
		}
		CHECK(ID_KIND(wc[i].wr_id) == ID_SEND && m < o.n, "a completion of wr_id 0x%"
		      PRIx64 ", never posted", wc[i].wr_id);
		CHECK(wc[i].status == IBV_WC_SUCCESS, "message %u (%s) on QP %u: its SEND ended "
		      "with %s", m, kind_name[S.s[m].kind], S.s[m].qp,
		      ibv_wc_status_str(wc[i].status));
		CHECK(wc[i].opcode == IBV_WC_SEND && wc[i].qp_num == qps[S.s[m].qp]->qp_num,
		      "message %u: opcode %d on QP 0x%x", m, wc[i].opcode, wc[i].qp_num);
		CHECK(S.st[m] == 1 || S.st[m] == 5, "message %u: a second SEND completion", m);
		S.st[m] |= 2;
		S.sq_used[S.s[m].qp]--;
		s_done_check(m);
	}
}

static void s_idle(void)
{
	struct ibv_wc wc;

	CHECK(ibv_poll_cq(S.cq, 1, &wc) == 0, "after the last message: a completion of wr_id "
	      "0x%" PRIx64 " (%s)", wc.wr_id, ibv_wc_status_str(wc.status));
}

static int sender(void)
{
	char st[256];
	uint32_t t, v;

	s_setup();
	tcp_connect();
	exchange();
	for (uint32_t i = 0; i < o.nqp; i++) {
		connect_qp(i, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ, 1);
		for (uint32_t j = 0; j < S.nfin; j++)
			s_post_fin_recv(i, j);
	}
	printf("sender: %u QPs, window %u, MTU %u, %u messages\n", o.nqp, S.window,
	       mtu_bytes(mtu), o.n);
	while (S.done < o.n) {
		while ((t = tcp_poll(&v)) != 0) {
			if (t == 'D') {
				peer_end(t, v);
				continue;
			}
			CHECK(t == 'K' && v > S.credit && v <= o.n && !peer_done, "frame %c %u "
			      "from the receiver (credit %u)", (char)t, v, S.credit);
			S.credit = v;
		}
		while (S.next < S.credit && S.next < S.low + S.window &&
		       S.sq_used[S.s[S.next].qp] < S.window)
			s_send(S.next++);
		s_poll();
		if (elapsed() >= o.timeout_s) {
			snprintf(st, sizeof(st), "%u of %u messages done (lowest not done %u, state "
				 "%u), %u sent, credit %u, %" PRIu64 " FINs", S.done, o.n, S.low,
				 S.low < o.n ? S.st[S.low] : 0, S.next, S.credit, S.fins_got);
			watchdog("the run", st);
		}
	}
	finish(s_idle);
	printf("sender: ok: %u messages, %" PRIu64 " bytes, %" PRIu64 " FINs (%" PRIu64
	       " before their SEND's completion), %.2f s, %.1f MB/s\n", o.n, S.bytes, S.fins_got,
	       S.fin_first, elapsed(), (double)S.bytes / elapsed() / 1e6);
	return 0;
}

/* ================= options ================= */

static void usage(void)
{
	fprintf(stderr,
		"usage: rndv_peer -p PORT [options] [HOST]   (no HOST: the receiver)\n"
		"  -n N            messages (%u)\n"
		"  -S SEED         the schedule's seed (%u)\n"
		"  -q QPS          RC QP pairs, 1..%d (%u)\n"
		"  -w WINDOW       messages in flight (%u)\n"
		"  --rndv-min B, --rndv-max B   rendezvous sizes (%u, %u)\n"
		"  --eager-max B   eager sizes (%u)\n"
		"  --mix E,R,UE,UR,S   shares of eager, rndv, ueager, urndv, small (30,35,15,15,5)\n"
		"  -d DEV, -g GID  device (the first), GID index (0)\n"
		"  -t SECONDS      watchdog (%d)\n"
		"  -T TIMEOUT      the QPs' local ACK timeout, 4.096 us x 2^TIMEOUT (%u)\n"
		"  --incomplete-ok an expected rendezvous may end in IBV_WC_TM_RNDV_INCOMPLETE\n"
		"                  (a device without rendezvous reads): software finishes it\n"
		"  --lossy         the link loses frames: a FIN may come before its SEND's ACK\n"
		"  --corrupt M     (sender) change one byte of message M: the receiver must fail\n",
		o.n, o.seed, MAX_QPS, o.nqp, o.window, o.rndv_min, o.rndv_max, o.eager_max,
		o.timeout_s, o.ack_timeout);
	exit(2);
}

static uint32_t num(const char *s)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno != 0 || *end != '\0' || end == s || v > UINT32_MAX)
		usage();
	return (uint32_t)v;
}

static void parse(int argc, char **argv)
{
	static const struct option lo[] = {
		{"rndv-min", required_argument, NULL, 'a'},
		{"rndv-max", required_argument, NULL, 'b'},
		{"eager-max", required_argument, NULL, 'e'},
		{"mix", required_argument, NULL, 'x'},
		{"incomplete-ok", no_argument, NULL, 'I'},
		{"lossy", no_argument, NULL, 'L'},
		{"corrupt", required_argument, NULL, 'C'},
		{NULL, 0, NULL, 0},
	};
	unsigned int total = 0;
	int c;

	while ((c = getopt_long(argc, argv, "p:n:S:q:w:d:g:t:T:", lo, NULL)) != -1) {
		switch (c) {
		case 'p': o.port = (int)num(optarg); break;
		case 'n': o.n = num(optarg); break;
		case 'S': o.seed = num(optarg); break;
		case 'q': o.nqp = num(optarg); break;
		case 'w': o.window = num(optarg); break;
		case 'd': o.dev = optarg; break;
		case 'g': o.gid_index = (int)num(optarg); break;
		case 't': o.timeout_s = (int)num(optarg); break;
		case 'T': o.ack_timeout = (uint8_t)num(optarg); break;
		case 'a': o.rndv_min = num(optarg); break;
		case 'b': o.rndv_max = num(optarg); break;
		case 'e': o.eager_max = num(optarg); break;
		case 'I': o.incomplete_ok = true; break;
		case 'L': o.lossy = true; break;
		case 'C': o.corrupt = num(optarg); o.corrupt_set = true; break;
		case 'x':
			if (sscanf(optarg, "%u,%u,%u,%u,%u", &o.mix[0], &o.mix[1], &o.mix[2],
				   &o.mix[3], &o.mix[4]) != 5)
				usage();
			break;
		default: usage();
		}
	}
	if (optind + 1 == argc)
		o.host = argv[optind];
	else if (optind != argc)
		usage();
	for (int k = 0; k < K_COUNT; k++)
		total += o.mix[k];
	if (o.port <= 0 || o.port > 65535 || o.n == 0 || o.nqp == 0 || o.nqp > MAX_QPS ||
	    o.window == 0 || o.window > 64 || o.rndv_min < 64 || o.rndv_min > o.rndv_max ||
	    o.eager_max > BOUNCE_LEN - TMH_LEN || total == 0 || o.timeout_s <= 0 ||
	    o.ack_timeout > 31)
		usage();
}

int main(int argc, char **argv)
{
	clock_gettime(CLOCK_MONOTONIC, &t0);
	parse(argc, argv);
	role = o.host == NULL ? "receiver" : "sender";
	signal(SIGALRM, on_alarm);
	alarm((unsigned int)o.timeout_s + 10);
	open_device();
	return o.host == NULL ? receiver() : sender();
}
