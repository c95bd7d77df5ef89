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

int dpv_capture_open(const char *path, const char *comment, const char *name,
		     uint16_t ethdev_port, struct dpv_capture_source **out)
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
