/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Captures into pcapng files (dpv_capture.h): owner threads copy and queue, one writer
 * thread per file writes.
 */
/* rte_pcapng is experimental in DPDK 22.11: its calls are allowed in this file only. */
#define ALLOW_EXPERIMENTAL_API
#define _GNU_SOURCE /* pthread_setname_np: the writer is named in ps and gdb */

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_pcapng.h>
#include <rte_ring.h>

#include "dpv_capture.h"

/* Copies in flight per source: what its ring holds, and a batch the writer holds. */
#define POOL_PER_SOURCE (DPV_CAPTURE_RING + DPV_CAPTURE_BATCH)
/* How long the writer sleeps when every ring is empty: a ring of DPV_CAPTURE_RING
 * frames drained every millisecond keeps up with two million frames a second. */
#define WRITER_IDLE_NS 1000000L

struct dpv_capture_source {
	struct dpv_capture *cap;
	struct rte_ring *ring;     /* copies, owner thread to writer */
	struct rte_mempool *pool;  /* the copies */
	uint16_t ethdev_port;
	char name[32];
	/* For the statistics block at the end (owner writes, read after it stops). */
	uint64_t frames, dropped;
};

struct dpv_capture {
	rte_pcapng_t *png;         /* owns the file descriptor */
	pthread_t writer;
	uint32_t stop;             /* atomic: the writer drains and returns */
	int write_errno;           /* the writer's first failure; read after the join */
	uint64_t start_ns;         /* wall clock at open, ns since the epoch */
	uint64_t start_tsc;        /* the TSC then */
	uint64_t tsc_hz;
	/* The ethdev ports that have an interface in the file: those of the process when
	 * rte_pcapng_fdopen() wrote them. */
	uint64_t has_interface[(RTE_MAX_ETHPORTS + 63) / 64];
	uint32_t n_sources;        /* atomic: sources [0, n) exist */
	uint32_t live;             /* sources not removed */
	struct dpv_capture_source *sources[DPV_CAPTURE_MAX_SOURCES];
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Write what one ring holds, a batch at a time. @return copies written. */
static unsigned int drain(struct dpv_capture *c, struct dpv_capture_source *s)
{
	struct rte_mbuf *batch[DPV_CAPTURE_BATCH];
	unsigned int n, total = 0;

	while ((n = rte_ring_sc_dequeue_burst(s->ring, (void **)batch, DPV_CAPTURE_BATCH,
					       NULL)) != 0) {
		if (c->write_errno == 0 &&
		    rte_pcapng_write_packets(c->png, batch, (uint16_t)n) < 0)
			c->write_errno = rte_errno != 0 ? rte_errno : EIO;
		/* rte_pcapng_write_packets() of DPDK 22.11 leaves the copies to us. */
		rte_pktmbuf_free_bulk(batch, n);
		total += n;
	}
	return total;
}

static void *writer_main(void *arg)
{
	struct dpv_capture *c = arg;

	for (;;) {
		bool stopping = __atomic_load_n(&c->stop, __ATOMIC_ACQUIRE);
		uint32_t n = __atomic_load_n(&c->n_sources, __ATOMIC_ACQUIRE);
		unsigned int wrote = 0;

		for (uint32_t i = 0; i < n; i++)
			wrote += drain(c, c->sources[i]);
		/* Stop was seen before this pass began: the pass took everything queued. */
		if (stopping)
			return NULL;
		if (wrote == 0) {
			struct timespec ts = {0, WRITER_IDLE_NS};

			nanosleep(&ts, NULL);
		}
	}
}

static void free_capture(struct dpv_capture *c)
{
	for (uint32_t i = 0; i < c->n_sources; i++) {
		rte_ring_free(c->sources[i]->ring);
		rte_mempool_free(c->sources[i]->pool);
		free(c->sources[i]);
	}
	if (c->png != NULL)
		rte_pcapng_close(c->png);
	free(c);
}

static int add_source(struct dpv_capture *c, const char *name, uint16_t ethdev_port,
		      struct dpv_capture_source **out)
{
	static uint32_t seq;
	struct dpv_capture_source *s;
	char rname[RTE_RING_NAMESIZE];
	uint32_t id;

	if (c->n_sources == DPV_CAPTURE_MAX_SOURCES)
		return ENOSPC;
	if (ethdev_port >= RTE_MAX_ETHPORTS ||
	    !(c->has_interface[ethdev_port / 64] & (1ull << (ethdev_port % 64))))
		return ENODEV;
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return ENOMEM;
	/* Ring and pool names are global to the process: made unique here. */
	id = __atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED);
	snprintf(rname, sizeof(rname), "dpvcap%u", id);
	s->ring = rte_ring_create(rname, DPV_CAPTURE_RING, SOCKET_ID_ANY,
				  RING_F_SP_ENQ | RING_F_SC_DEQ | RING_F_EXACT_SZ);
	/* The default (multi-thread) pool ops: the owner of a port takes copies and the
	 * writer frees them, and under inline progress the owner changes threads. */
	s->pool = rte_pktmbuf_pool_create(rname, POOL_PER_SOURCE, 0, 0,
					  (uint16_t)rte_pcapng_mbuf_size(RTE_MBUF_DEFAULT_BUF_SIZE),
					  SOCKET_ID_ANY);
	if (s->ring == NULL || s->pool == NULL) {
		rte_ring_free(s->ring);
		rte_mempool_free(s->pool);
		free(s);
		return ENOMEM;
	}
	s->cap = c;
	s->ethdev_port = ethdev_port;
	snprintf(s->name, sizeof(s->name), "%s", name);
	c->sources[c->n_sources] = s;
	c->live++;
	/* The writer reads the sources below n_sources: published whole. */
	__atomic_store_n(&c->n_sources, c->n_sources + 1, __ATOMIC_RELEASE);
	*out = s;
	return 0;
}

/* pcapng (draft-tuexen-opsawg-pcapng): an interface description block, and its
 * if_name option. */
#define PCAPNG_IDB 1u
#define PCAPNG_OPT_END 0u
#define PCAPNG_OPT_IF_NAME 2u
#define PCAPNG_HEADER_MAX 65536

static uint32_t pad4(uint32_t n)
{
	return (n + 3u) & ~3u;
}

/*
 * Rebuild interface description block @p in (@p len bytes, host byte order: this
 * process wrote it) into @p out with @p name as its if_name, the other options kept.
 * @return the new block's length, or 0 if @p in is not well formed.
 */
static uint32_t rename_idb(const uint8_t *in, uint32_t len, const char *name, uint8_t *out)
{
	uint32_t o = 16, w = 16, nlen = (uint32_t)strlen(name);
	uint16_t opt[2];

	memcpy(out, in, 16); /* type, length, link type, reserved, snap length */
	opt[0] = PCAPNG_OPT_IF_NAME;
	opt[1] = (uint16_t)nlen;
	memcpy(out + w, opt, 4);
	memset(out + w + 4, 0, pad4(nlen));
	memcpy(out + w + 4, name, nlen);
	w += 4 + pad4(nlen);
	while (o + 4 <= len - 4) {
		memcpy(opt, in + o, 4);
		if (opt[0] == PCAPNG_OPT_END)
			break;
		if (o + 4 + pad4(opt[1]) > len - 4)
			return 0;
		if (opt[0] != PCAPNG_OPT_IF_NAME) {
			memcpy(out + w, in + o, 4 + pad4(opt[1]));
			w += 4 + pad4(opt[1]);
		}
		o += 4 + pad4(opt[1]);
	}
	memset(out + w, 0, 4); /* opt_endofopt */
	w += 4;
	w += 4; /* the trailing length */
	memcpy(out + 4, &w, 4);
	memcpy(out + w - 4, &w, 4);
	return w;
}

/*
 * Name the file's interfaces after dpverbs' devices: read back the header that
 * rte_pcapng_fdopen() wrote (the section header, then an interface per port, in port
 * order), rewrite it with each interface's if_name from @p names, and go on writing
 * after it. A file that is not a regular one, or a header not as expected, keeps the
 * library's names.
 */
static void name_interfaces(int fd, const char *path, const char *const *names)
{
	uint32_t end, off = 0, w = 0, len, type, idb = 0;
	uint16_t ports[RTE_MAX_ETHPORTS], n_ports = 0, port;
	uint8_t *in = NULL, *out = NULL;
	struct stat st;
	int rfd = -1;
	off_t cur;

	if (names == NULL || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
		return;
	cur = lseek(fd, 0, SEEK_CUR);
	if (cur <= 0 || cur > PCAPNG_HEADER_MAX)
		return;
	end = (uint32_t)cur;
	RTE_ETH_FOREACH_DEV(port)
		ports[n_ports++] = port;
	in = malloc(end);
	/* Each name may add its length and an option header to its block. */
	out = malloc(end + (size_t)n_ports * (4 + 64));
	if (in == NULL || out == NULL)
		goto done;
	/* fd only writes (a FIFO opened for reading too would be its own reader). */
	rfd = open(path, O_RDONLY | O_CLOEXEC);
	if (rfd < 0 || pread(rfd, in, end, 0) != (ssize_t)end)
		goto done;
	while (off + 12 <= end) {
		memcpy(&type, in + off, 4);
		memcpy(&len, in + off + 4, 4);
		if (len < 12 || len % 4 != 0 || len > end - off)
			goto done;
		if (type == PCAPNG_IDB && idb < n_ports && names[ports[idb]] != NULL &&
		    strlen(names[ports[idb]]) <= 64 && len >= 20) {
			uint32_t n = rename_idb(in + off, len, names[ports[idb]], out + w);

			if (n == 0)
				goto done;
			w += n;
		} else {
			memcpy(out + w, in + off, len);
			w += len;
		}
		idb += type == PCAPNG_IDB;
		off += len;
	}
	if (off != end)
		goto done;
	/* The header is rewritten whole or, failing that, left as the library wrote it. */
	if (pwrite(fd, out, w, 0) == (ssize_t)w) {
		if (w < end && ftruncate(fd, w) != 0)
			goto done;
		lseek(fd, w, SEEK_SET);
	} else if (pwrite(fd, in, end, 0) == (ssize_t)end) {
		lseek(fd, end, SEEK_SET);
	}
done:
	if (rfd >= 0)
		close(rfd);
	free(in);
	free(out);
}

int dpv_capture_open(const char *path, const char *comment, const char *const *port_names,
		     const char *name, uint16_t ethdev_port, struct dpv_capture_source **out)
{
	struct dpv_capture *c = calloc(1, sizeof(*c));
	uint16_t port;
	int fd, ret;

	if (c == NULL)
		return ENOMEM;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		ret = errno;
		free(c);
		return ret;
	}
	RTE_ETH_FOREACH_DEV(port)
		c->has_interface[port / 64] |= 1ull << (port % 64);
	rte_errno = 0;
	errno = 0;
	c->png = rte_pcapng_fdopen(fd, NULL, NULL, "dpverbs", comment);
	if (c->png == NULL) {
		/* A failed write leaves errno; a failed allocation, rte_errno. */
		ret = rte_errno != 0 ? rte_errno : errno != 0 ? errno : EIO;
		close(fd);
		free(c);
		return ret;
	}
	name_interfaces(fd, path, port_names);
	c->start_tsc = rte_get_tsc_cycles();
	c->start_ns = now_ns();
	c->tsc_hz = rte_get_tsc_hz();
	ret = add_source(c, name, ethdev_port, out);
	if (ret == 0) {
		ret = pthread_create(&c->writer, NULL, writer_main, c);
		if (ret == 0)
			pthread_setname_np(c->writer, "dpv-capture");
		else
			*out = NULL;
	}
	if (ret != 0)
		free_capture(c);
	return ret;
}

int dpv_capture_add(struct dpv_capture_source *other, const char *name,
		    uint16_t ethdev_port, struct dpv_capture_source **out)
{
	return add_source(other->cap, name, ethdev_port, out);
}

bool dpv_capture_same(const struct dpv_capture_source *a, const struct dpv_capture_source *b)
{
	return a->cap == b->cap;
}

/*
 * The wall-clock time of a TSC reading, in ns. DPDK 22.11's rte_pcapng calibrates its
 * own TSC clock in a constructor, before EAL has measured the TSC, and stamps frames
 * centuries off (and every thread that copies updates that clock unlocked); the
 * capture keeps its own clock from the time it was opened and stamps the copies.
 */
static uint64_t tsc_to_ns(const struct dpv_capture *c, uint64_t tsc)
{
	uint64_t d = tsc - c->start_tsc;

	return c->start_ns + d / c->tsc_hz * 1000000000u + d % c->tsc_hz * 1000000000u / c->tsc_hz;
}

/* The timestamp of a copy: the fields of its enhanced packet block (pcapng 4.3). */
static void stamp(struct rte_mbuf *m, uint64_t ns)
{
	uint32_t *epb = rte_pktmbuf_mtod(m, uint32_t *);

	epb[3] = (uint32_t)(ns >> 32);
	epb[4] = (uint32_t)ns;
}

uint16_t dpv_capture_frames(struct dpv_capture_source *s, struct rte_mbuf *const *pkts,
			    uint16_t n, bool out)
{
	const enum rte_pcapng_direction dir = out ? RTE_PCAPNG_DIRECTION_OUT :
						    RTE_PCAPNG_DIRECTION_IN;
	struct rte_mbuf *copies[DPV_CAPTURE_BATCH];
	uint64_t tsc = rte_get_tsc_cycles(), ns = tsc_to_ns(s->cap, tsc);
	uint16_t total = 0;

	while (n != 0) {
		uint16_t k = n < DPV_CAPTURE_BATCH ? n : DPV_CAPTURE_BATCH, got = 0, queued;

		for (uint16_t i = 0; i < k; i++) {
			struct rte_mbuf *m = rte_pcapng_copy(s->ethdev_port, 0, pkts[i], s->pool,
							     UINT32_MAX, tsc, dir);

			if (m != NULL) {
				stamp(m, ns);
				copies[got++] = m;
			}
		}
		queued = (uint16_t)rte_ring_sp_enqueue_burst(s->ring, (void **)copies, got, NULL);
		if (queued != got)
			rte_pktmbuf_free_bulk(copies + queued, got - queued);
		s->frames += queued;
		s->dropped += k - queued;
		total += queued;
		pkts += k;
		n -= k;
	}
	return total;
}

int dpv_capture_remove(struct dpv_capture_source *s)
{
	struct dpv_capture *c = s->cap;
	uint64_t end;
	int ret;

	if (--c->live != 0)
		return 0;
	__atomic_store_n(&c->stop, 1, __ATOMIC_RELEASE);
	pthread_join(c->writer, NULL);
	end = now_ns();
	for (uint32_t i = 0; i < c->n_sources; i++) {
		struct dpv_capture_source *x = c->sources[i];

		if (c->write_errno == 0 &&
		    rte_pcapng_write_stats(c->png, x->ethdev_port, x->name, c->start_ns, end,
					   x->frames, x->dropped) < 0)
			c->write_errno = errno != 0 ? errno : EIO;
	}
	ret = c->write_errno;
	free_capture(c);
	return ret;
}
