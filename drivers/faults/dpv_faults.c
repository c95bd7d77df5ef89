/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The faults port: a wrapper around another port that loses, reorders, duplicates,
 * corrupts and delays frames on a seed (the grammar and the counters are in
 * dpv_faults.h).
 *
 * Each direction keeps its frames in one min-heap ordered by (due time, arrival
 * number): a frame that is neither delayed nor held is due at once and leaves in
 * arrival order, a delayed one when its time comes, with jitter possibly before a
 * frame that arrived earlier. Frames leave on every rx and tx burst call, because
 * the engine calls rx on every poll but tx only when it has something to send.
 * Nothing is allocated per frame except the copy a duplicate needs (from the port's
 * own pool).
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_malloc.h>

#include "dpv_faults.h"
#include "dpv_wire.h"

/* Frames taken from the wrapped port per rx call, and handed to it per tx call. */
#define BURST 64

struct held {
	uint64_t due;  /* TSC */
	uint64_t seq;  /* arrival number: equal due times leave in arrival order */
	struct rte_mbuf *m;
};

struct fault_dir {
	bool on;
	bool bad;                 /* Gilbert-Elliott state */
	uint64_t rng[4];          /* xoshiro256** */
	uint64_t seq;
	struct rte_mbuf *slot;    /* the frame held for reordering */
	uint64_t slot_due;
	uint64_t slot_tsc;
	uint32_t slot_left;       /* frames still to overtake it */
	uint32_t n;               /* frames in heap */
	struct dpv_faults_dir_stats st;
	struct held heap[DPV_FAULTS_HOLD];
};

struct faults {
	struct dpv_faults_spec spec;
	uint64_t delay_cyc, jitter_cyc, reorder_max_cyc;
	struct fault_dir tx, rx;
	struct dpv_port inner;
};

/* ---- the spec ---- */

static const char keys_list[] =
	"loss, burst, reorder, reorder_gap, dup, corrupt, delay_us, jitter_us, seed, dir";

static void say(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (why == NULL || len == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
}

static bool parse_prob(const char *s, double *out)
{
	char *end;
	double v;

	if (*s == '\0' || isspace((unsigned char)*s))
		return false;
	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || *end != '\0' || isnan(v) || v < 0.0 || v > 1.0)
		return false;
	*out = v;
	return true;
}

static bool parse_uint(const char *s, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!isdigit((unsigned char)*s))
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || *end != '\0' || v > max)
		return false;
	*out = v;
	return true;
}

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

/* One key=value into @p s; false with @p why filled when it is wrong. */
static bool parse_pair(char *key, char *val, struct dpv_faults_spec *s, char *why, size_t len)
{
	double *prob = NULL;
	uint64_t v;

	if (strcmp(key, "loss") == 0)
		prob = &s->loss;
	else if (strcmp(key, "reorder") == 0)
		prob = &s->reorder;
	else if (strcmp(key, "dup") == 0)
		prob = &s->dup;
	else if (strcmp(key, "corrupt") == 0)
		prob = &s->corrupt;
	if (prob != NULL) {
		if (parse_prob(val, prob))
			return true;
		say(why, len, "%s=%s: want a probability from 0 to 1 (0.01 is one frame in 100)",
		    key, val);
		return false;
	}
	if (strcmp(key, "burst") == 0) {
		char *g = val, *b = strchr(g, ':'), *l = b != NULL ? strchr(b + 1, ':') : NULL;

		if (b != NULL && l != NULL) {
			*b++ = '\0';
			*l++ = '\0';
		}
		if (b != NULL && l != NULL && parse_prob(g, &s->burst_enter) &&
		    parse_prob(b, &s->burst_exit) && parse_prob(l, &s->burst_loss) &&
		    s->burst_exit > 0.0)
			return true;
		if (b != NULL && l != NULL) {
			b[-1] = ':';
			l[-1] = ':';
		}
		say(why, len, "burst=%s: want three probabilities good-to-bad:bad-to-good:"
		    "loss-in-bad from 0 to 1, the second above 0 (for example 0.001:0.3:0.5)",
		    val);
		return false;
	}
	if (strcmp(key, "reorder_gap") == 0) {
		if (parse_uint(val, 64, &v) && v >= 1) {
			s->reorder_gap = (uint32_t)v;
			return true;
		}
		say(why, len, "reorder_gap=%s: want a number of frames from 1 to 64", val);
		return false;
	}
	if (strcmp(key, "delay_us") == 0 || strcmp(key, "jitter_us") == 0) {
		if (parse_uint(val, 1000000, &v)) {
			*(key[0] == 'd' ? &s->delay_us : &s->jitter_us) = (uint32_t)v;
			return true;
		}
		say(why, len, "%s=%s: want microseconds from 0 to 1000000", key, val);
		return false;
	}
	if (strcmp(key, "seed") == 0) {
		if (parse_uint(val, UINT64_MAX, &s->seed))
			return true;
		say(why, len, "seed=%s: want a whole number from 0 to 18446744073709551615", val);
		return false;
	}
	if (strcmp(key, "dir") == 0) {
		if (strcmp(val, "tx") == 0)
			s->dir = DPV_FAULTS_TX;
		else if (strcmp(val, "rx") == 0)
			s->dir = DPV_FAULTS_RX;
		else if (strcmp(val, "both") == 0)
			s->dir = DPV_FAULTS_BOTH;
		else {
			say(why, len, "dir=%s: want tx, rx or both", val);
			return false;
		}
		return true;
	}
	say(why, len, "unknown key \"%s\" (the keys are %s)", key, keys_list);
	return false;
}

int dpv_faults_parse(const char *spec, struct dpv_faults_spec *out, char *why,
		     size_t why_len)
{
	struct dpv_faults_spec s = {.reorder_gap = 2, .seed = 1, .dir = DPV_FAULTS_BOTH};
	char buf[DPV_FAULTS_SPEC_MAX], *save = NULL, *tok;

	if (spec == NULL)
		spec = "";
	if (strlen(spec) >= sizeof(buf)) {
		say(why, why_len, "the spec is %zu characters long, at most %u are read",
		    strlen(spec), DPV_FAULTS_SPEC_MAX - 1);
		return EINVAL;
	}
	snprintf(buf, sizeof(buf), "%s", spec);
	for (tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');

		tok = trim(tok);
		if (*tok == '\0')
			continue;
		if (eq == NULL) {
			say(why, why_len, "\"%s\" has no value: write key=value, for example "
			    "loss=0.01 (the keys are %s)", tok, keys_list);
			return EINVAL;
		}
		*eq = '\0';
		if (!parse_pair(trim(tok), trim(eq + 1), &s, why, why_len))
			return EINVAL;
	}
	if (s.jitter_us > s.delay_us) {
		say(why, why_len, "jitter_us=%u is more than delay_us=%u: a frame cannot leave "
		    "before it came; raise delay_us or lower jitter_us", s.jitter_us, s.delay_us);
		return EINVAL;
	}
	*out = s;
	return 0;
}

/* ---- the generator: xoshiro256** seeded by splitmix64, one per direction ---- */

static uint64_t splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static inline uint64_t next(struct fault_dir *d)
{
	uint64_t *s = d->rng, r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return r;
}

/* True with probability @p p; draws nothing when p is 0. */
static inline bool chance(struct fault_dir *d, double p)
{
	return p > 0.0 && (double)(next(d) >> 11) * 0x1.0p-53 < p;
}

/* ---- the hold queue ---- */

static inline bool before(const struct held *a, const struct held *b)
{
	return a->due < b->due || (a->due == b->due && a->seq < b->seq);
}

static bool heap_push(struct fault_dir *d, const struct held *h)
{
	uint32_t i;

	if (d->n == DPV_FAULTS_HOLD)
		return false;
	for (i = d->n++; i > 0; i = (i - 1) / 2) {
		if (!before(h, &d->heap[(i - 1) / 2]))
			break;
		d->heap[i] = d->heap[(i - 1) / 2];
	}
	d->heap[i] = *h;
	return true;
}

static struct held heap_pop(struct fault_dir *d)
{
	struct held top = d->heap[0], last = d->heap[--d->n];
	uint32_t i = 0, c;

	if (d->n == 0)
		return top;
	while ((c = 2 * i + 1) < d->n) {
		if (c + 1 < d->n && before(&d->heap[c + 1], &d->heap[c]))
			c++;
		if (!before(&d->heap[c], &last))
			break;
		d->heap[i] = d->heap[c];
		i = c;
	}
	d->heap[i] = last;
	return top;
}

static inline bool due(const struct fault_dir *d, uint64_t now)
{
	return d->n > 0 && d->heap[0].due <= now;
}

/* A full queue drops the frame rather than let it pass: passing would break the
 * delay asked for and reorder frames nobody asked to reorder. */
static void hold(struct fault_dir *d, struct rte_mbuf *m, uint64_t due_tsc)
{
	struct held h = {.due = due_tsc, .seq = d->seq++, .m = m};

	if (!heap_push(d, &h)) {
		rte_pktmbuf_free(m);
		d->st.overflow++;
	}
}

static void release_slot(struct fault_dir *d, uint64_t due_tsc)
{
	hold(d, d->slot, RTE_MAX(due_tsc, d->slot_due));
	d->slot = NULL;
}

/* When traffic stops, a frame held for reordering leaves anyway: no frame is lost
 * for want of later ones. */
static void slot_timeout(const struct faults *f, struct fault_dir *d, uint64_t now)
{
	if (d->slot != NULL && now - d->slot_tsc >= f->reorder_max_cyc)
		release_slot(d, now);
}

/* ---- corruption ---- */

static inline uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/* Length of a RoCEv2 frame from Ethernet to the end of its ICRC, or 0 for anything
 * else (ARP, other IPv4, a frame too short to hold a BTH and an ICRC). */
static uint32_t roce_len(const struct rte_mbuf *m)
{
	uint8_t buf[DPV_WIRE_BTH_OFF];
	const uint8_t *h, *ip;
	uint32_t pkt = rte_pktmbuf_pkt_len(m), len;

	if (pkt < DPV_WIRE_BTH_OFF + DPV_WIRE_BTH_LEN + DPV_WIRE_ICRC_LEN)
		return 0;
	h = rte_pktmbuf_read(m, 0, sizeof(buf), buf);
	ip = h + DPV_WIRE_ETH_LEN;
	if (get16(h + 12) != DPV_WIRE_ETHERTYPE_IPV4 || ip[0] != 0x45 || ip[9] != IPPROTO_UDP ||
	    get16(ip + DPV_WIRE_IPV4_LEN + 2) != DPV_WIRE_UDP_PORT)
		return 0;
	len = DPV_WIRE_ETH_LEN + get16(ip + 2);
	if (len > pkt || len < DPV_WIRE_BTH_OFF + DPV_WIRE_BTH_LEN + DPV_WIRE_ICRC_LEN)
		return 0;
	return len;
}

static bool shared(const struct rte_mbuf *m)
{
	for (; m != NULL; m = m->next)
		if (RTE_MBUF_CLONED(m) || RTE_MBUF_HAS_EXTBUF(m) || rte_mbuf_refcnt_read(m) != 1)
			return true;
	return false;
}

/*
 * Flip one bit the ICRC covers, so the receiver's ICRC check, and only it, refuses
 * the frame. Left alone: BTH byte 0 (the opcode: another one changes which headers
 * are parsed), byte 1 (pad count and TVer, checked before the ICRC) and byte 4
 * (FECN/BECN/resv6, masked out of the ICRC: a flip there goes unseen). A frame whose
 * data someone else also holds is copied first, so only this one is damaged.
 */
static struct rte_mbuf *corrupt(struct faults *f, struct fault_dir *d, struct rte_mbuf *m,
				uint32_t len)
{
	const uint32_t first = DPV_WIRE_BTH_OFF + 2, masked = DPV_WIRE_BTH_OFF + 4;
	struct rte_mbuf *seg;
	uint64_t r;
	uint32_t off;

	if (shared(m)) {
		struct rte_mbuf *c = rte_pktmbuf_copy(m, f->inner.pool, 0, UINT32_MAX);

		if (c == NULL)
			return m;
		rte_pktmbuf_free(m);
		m = c;
	}
	r = next(d) % ((uint64_t)(len - first - 1) * 8);
	off = first + (uint32_t)(r / 8);
	if (off >= masked)
		off++;
	for (seg = m; off >= seg->data_len; seg = seg->next)
		off -= seg->data_len;
	*rte_pktmbuf_mtod_offset(seg, uint8_t *, off) ^= (uint8_t)(1u << (r % 8));
	d->st.corrupted++;
	return m;
}

/* ---- the data path ---- */

/* Decide one frame's fate, in a fixed order: loss, burst loss, duplicate, corrupt,
 * delay, reorder. The duplicate is copied before the corruption, so it is intact. */
static void fault(struct faults *f, struct fault_dir *d, struct rte_mbuf *m, uint64_t now)
{
	const struct dpv_faults_spec *s = &f->spec;
	struct rte_mbuf *copy = NULL;
	uint64_t due_tsc = now;
	uint32_t len;

	d->st.seen++;
	if (chance(d, s->loss)) {
		rte_pktmbuf_free(m);
		d->st.dropped++;
		return;
	}
	if (s->burst_enter > 0.0) {
		d->bad = d->bad ? !chance(d, s->burst_exit) : chance(d, s->burst_enter);
		if (d->bad && chance(d, s->burst_loss)) {
			rte_pktmbuf_free(m);
			d->st.burst_dropped++;
			return;
		}
	}
	if (chance(d, s->dup)) {
		copy = rte_pktmbuf_copy(m, f->inner.pool, 0, UINT32_MAX);
		if (copy != NULL)
			d->st.duplicated++;
	}
	if (s->corrupt > 0.0 && (len = roce_len(m)) != 0 && chance(d, s->corrupt))
		m = corrupt(f, d, m, len);
	if (f->delay_cyc > 0) {
		due_tsc += f->delay_cyc - f->jitter_cyc;
		if (f->jitter_cyc > 0)
			due_tsc += next(d) % (2 * f->jitter_cyc + 1);
		d->st.delayed++;
	}
	/* Drawn for every frame, held or not, so that when a held frame leaves (which a
	 * timeout can decide) changes no later decision. One frame is held at a time: a
	 * new one sends the one before on its way. */
	if (chance(d, s->reorder)) {
		if (d->slot != NULL)
			release_slot(d, due_tsc);
		d->slot = m;
		d->slot_due = due_tsc;
		d->slot_tsc = now;
		d->slot_left = s->reorder_gap;
		d->st.reordered++;
	} else {
		hold(d, m, due_tsc);
	}
	if (copy != NULL)
		hold(d, copy, due_tsc);
	if (d->slot != NULL && m != d->slot && --d->slot_left == 0)
		release_slot(d, due_tsc);
}

/* Hand the tx frames that are due to the wrapped port; what it refuses waits. */
static void tx_service(struct faults *f, uint64_t now)
{
	struct fault_dir *d = &f->tx;
	struct held h[BURST];
	struct rte_mbuf *m[BURST];
	uint16_t k, sent;

	slot_timeout(f, d, now);
	while (due(d, now)) {
		for (k = 0; k < BURST && due(d, now); k++) {
			h[k] = heap_pop(d);
			m[k] = h[k].m;
		}
		sent = f->inner.ops->tx_burst(&f->inner, m, k);
		for (uint16_t i = sent; i < k; i++)
			heap_push(d, &h[i]);
		if (sent < k)
			break;
	}
}

static uint16_t faults_rx(struct dpv_port *port, struct rte_mbuf **pkts, uint16_t n)
{
	struct faults *f = port->priv;
	struct fault_dir *d = &f->rx;
	struct rte_mbuf *in[BURST];
	uint64_t now = rte_get_tsc_cycles();
	uint16_t got, out = 0;

	if (f->tx.on)
		tx_service(f, now);
	if (!d->on)
		return f->inner.ops->rx_burst(&f->inner, pkts, n);
	/* What is due goes first, and only as many new frames are taken as there is room
	 * left for: duplicates then cannot pile up in the queue while the caller keeps
	 * asking for full bursts. */
	while (out < n && due(d, now))
		pkts[out++] = heap_pop(d).m;
	got = out < n ? f->inner.ops->rx_burst(&f->inner, in, RTE_MIN(n - out, BURST)) : 0;
	for (uint16_t i = 0; i < got; i++)
		fault(f, d, in[i], now);
	slot_timeout(f, d, now);
	while (out < n && due(d, now))
		pkts[out++] = heap_pop(d).m;
	return out;
}

/* Takes every frame while the wrapped port takes what is due: lost ones are gone as on
 * a wire, the others held or sent. While frames that are due wait for the wrapped
 * port, it takes none, so the caller keeps them and feels the wrapped port's
 * back-pressure: the hold is for delays, not a queue in front of a full port. */
static uint16_t faults_tx(struct dpv_port *port, struct rte_mbuf **pkts, uint16_t n)
{
	struct faults *f = port->priv;
	uint64_t now;

	if (!f->tx.on)
		return f->inner.ops->tx_burst(&f->inner, pkts, n);
	now = rte_get_tsc_cycles();
	tx_service(f, now);
	if (due(&f->tx, now))
		return 0;
	for (uint16_t i = 0; i < n; i++)
		fault(f, &f->tx, pkts[i], now);
	tx_service(f, now);
	return n;
}

static void faults_link(struct dpv_port *port, bool *up, uint32_t *speed_mbps)
{
	struct faults *f = port->priv;

	f->inner.ops->link(&f->inner, up, speed_mbps);
}

static void dir_init(struct fault_dir *d, uint64_t seed, unsigned int bit, unsigned int dirs)
{
	uint64_t x = seed ^ (bit * 0x5851f42d4c957f2dull);

	d->on = (dirs & bit) != 0;
	for (unsigned int i = 0; i < 4; i++)
		d->rng[i] = splitmix(&x);
}

static void dir_free(struct fault_dir *d)
{
	while (d->n > 0)
		rte_pktmbuf_free(heap_pop(d).m);
	rte_pktmbuf_free(d->slot);
	d->slot = NULL;
}

/* The spec in force, and what follows from it; held frames and counters stay. */
static void spec_apply(struct faults *f, const struct dpv_faults_spec *s)
{
	const double us = (double)rte_get_tsc_hz() / 1e6;

	f->spec = *s;
	f->delay_cyc = (uint64_t)(s->delay_us * us);
	f->jitter_cyc = (uint64_t)(s->jitter_us * us);
	f->reorder_max_cyc = (uint64_t)(DPV_FAULTS_REORDER_MAX_US * us);
	dir_init(&f->tx, s->seed, DPV_FAULTS_TX, s->dir);
	dir_init(&f->rx, s->seed, DPV_FAULTS_RX, s->dir);
}

static int faults_open(struct dpv_port *port, const char *args, unsigned int pool_size)
{
	const char *at = strchr(args, '@'), *colon = at != NULL ? strchr(at + 1, ':') : NULL;
	char spec[DPV_FAULTS_SPEC_MAX], driver[32], why[256];
	struct dpv_faults_spec s;
	struct faults *f;
	int ret;

	if (colon == NULL || (size_t)(colon - at - 1) >= sizeof(driver) ||
	    (size_t)(at - args) >= sizeof(spec)) {
		RTE_LOG(ERR, USER1, "dpverbs: %s: faults port arguments \"%s\": want "
			"<spec>@<driver>:<arguments>, for example loss=0.01@ethdev:0\n",
			port->name, args);
		return EINVAL;
	}
	snprintf(spec, sizeof(spec), "%.*s", (int)(at - args), args);
	snprintf(driver, sizeof(driver), "%.*s", (int)(colon - at - 1), at + 1);
	if (dpv_faults_parse(spec, &s, why, sizeof(why)) != 0) {
		RTE_LOG(ERR, USER1, "dpverbs: %s: faults: %s\n", port->name, why);
		return EINVAL;
	}
	f = rte_zmalloc("dpv_faults", sizeof(*f), RTE_CACHE_LINE_SIZE);
	if (f == NULL)
		return ENOMEM;
	snprintf(f->inner.name, sizeof(f->inner.name), "%s", port->name);
	f->inner.ipv4 = port->ipv4;
	ret = dpv_port_open(&f->inner, driver, colon + 1, pool_size);
	if (ret != 0) {
		rte_free(f);
		return ret;
	}
	spec_apply(f, &s);
	port->priv = f;
	port->ethdev_port = f->inner.ethdev_port;
	port->socket = f->inner.socket;
	port->mtu = f->inner.mtu;
	port->mac = f->inner.mac;
	port->pool = f->inner.pool;
	return 0;
}

static void faults_close(struct dpv_port *port)
{
	struct faults *f = port->priv;

	if (f == NULL)
		return;
	dir_free(&f->tx);
	dir_free(&f->rx);
	dpv_port_close(&f->inner);
	/* The pool was the wrapped port's, freed with it just now. */
	port->pool = NULL;
	port->priv = NULL;
	rte_free(f);
}

int dpv_faults_set(struct dpv_port *port, const struct dpv_faults_spec *spec)
{
	if (port->ops != &dpv_faults_ops || port->priv == NULL)
		return ENODEV;
	spec_apply(port->priv, spec);
	return 0;
}

int dpv_faults_stats(const struct dpv_port *port, struct dpv_faults_stats *st)
{
	const struct faults *f;

	if (port->ops != &dpv_faults_ops || port->priv == NULL)
		return ENODEV;
	f = port->priv;
	st->tx = f->tx.st;
	st->rx = f->rx.st;
	return 0;
}

const struct dpv_port_ops dpv_faults_ops = {
	.name = "faults",
	.open = faults_open,
	.rx_burst = faults_rx,
	.tx_burst = faults_tx,
	.link = faults_link,
	.close = faults_close,
};
