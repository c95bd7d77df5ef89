/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * dpv_queue: the lockless rings between application threads and the device.
 *
 * A dpv_ring is single-producer / single-consumer with fixed-size slots (SQ and SRQ
 * WQEs, TM ops, CQEs). Producer and consumer indices sit on their own cache lines, and
 * each side caches the other's index so that a burst touches the shared line once.
 * Slots are written and read in place (reserve/commit, peek/release): no copy through
 * a temporary. A dpv_lanes is a set of rings, one per posting core, that one consumer
 * (the device) drains in turn, so many threads post without sharing a cache line.
 *
 * Pure C11 atomics: no EAL, no allocation (the caller supplies the memory, from
 * rte_malloc_socket() on the port's NUMA node in the device), no system call.
 *
 * Threads: one thread at a time may produce and one thread at a time may consume on a
 * ring; they may be different threads. Nothing else is shared.
 */
#ifndef DPV_QUEUE_H
#define DPV_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DPV_CACHE_LINE 64u
/** Largest ring: 2^24 slots. */
#define DPV_RING_MAX_COUNT (1u << 24)

struct dpv_ring {
	/* Read-only after init. */
	uint32_t mask;       /**< slots - 1 */
	uint32_t slot_size;  /**< bytes, a multiple of 8 */
	uint8_t *slots;
	/* Producer's line. */
	uint32_t prod_tail __attribute__((aligned(DPV_CACHE_LINE))); /**< published */
	uint32_t prod_cached_head; /**< producer's last view of cons_head */
	/* Consumer's line. */
	uint32_t cons_head __attribute__((aligned(DPV_CACHE_LINE))); /**< published */
	uint32_t cons_cached_tail; /**< consumer's last view of prod_tail */
} __attribute__((aligned(DPV_CACHE_LINE)));

/**
 * Bytes of memory a ring of @p count slots of @p slot_size bytes needs (ring header
 * and slots, cache-line aligned).
 * @return 0 if count is not a power of two in 1..DPV_RING_MAX_COUNT, or slot_size is
 *         0 or not a multiple of 8.
 */
size_t dpv_ring_memsize(uint32_t count, uint32_t slot_size);

/**
 * Lay a ring out in @p mem (DPV_CACHE_LINE aligned, dpv_ring_memsize() bytes).
 * Before either side uses it.
 * @return the ring, or NULL (errno EINVAL) for bad sizes or a misaligned @p mem.
 */
struct dpv_ring *dpv_ring_init(void *mem, uint32_t count, uint32_t slot_size);

/** Slots in the ring. */
static inline uint32_t dpv_ring_count(const struct dpv_ring *r)
{
	return r->mask + 1;
}

/** Address of slot @p idx (any 32-bit index: it wraps). */
static inline void *dpv_ring_slot(const struct dpv_ring *r, uint32_t idx)
{
	return r->slots + (size_t)(idx & r->mask) * r->slot_size;
}

/**
 * Producer: how many slots are free, at most @p want (reads the consumer's index only
 * when the cached view says fewer than @p want are free).
 * @param[out] first  index of the first free slot (pass to dpv_ring_slot())
 */
static inline uint32_t dpv_ring_reserve(struct dpv_ring *r, uint32_t want, uint32_t *first)
{
	uint32_t tail = r->prod_tail;
	uint32_t free = r->prod_cached_head + r->mask + 1 - tail;

	if (free < want) {
		r->prod_cached_head = __atomic_load_n(&r->cons_head, __ATOMIC_ACQUIRE);
		free = r->prod_cached_head + r->mask + 1 - tail;
	}
	*first = tail;
	return free < want ? free : want;
}

/** Producer: publish @p n slots written after dpv_ring_reserve(). */
static inline void dpv_ring_commit(struct dpv_ring *r, uint32_t n)
{
	__atomic_store_n(&r->prod_tail, r->prod_tail + n, __ATOMIC_RELEASE);
}

/**
 * Consumer: how many slots are ready, at most @p want.
 * @param[out] first  index of the first ready slot
 */
static inline uint32_t dpv_ring_peek(struct dpv_ring *r, uint32_t want, uint32_t *first)
{
	uint32_t head = r->cons_head;
	uint32_t ready = r->cons_cached_tail - head;

	if (ready < want) {
		r->cons_cached_tail = __atomic_load_n(&r->prod_tail, __ATOMIC_ACQUIRE);
		ready = r->cons_cached_tail - head;
	}
	*first = head;
	return ready < want ? ready : want;
}

/** Consumer: give back @p n slots read after dpv_ring_peek(). */
static inline void dpv_ring_release(struct dpv_ring *r, uint32_t n)
{
	__atomic_store_n(&r->cons_head, r->cons_head + n, __ATOMIC_RELEASE);
}

/**
 * Producer: copy up to @p n slots from @p objs (slot_size bytes each) into the ring.
 * @return how many were enqueued (0 .. n).
 */
uint32_t dpv_ring_enqueue_burst(struct dpv_ring *r, const void *objs, uint32_t n);

/**
 * Consumer: copy up to @p n ready slots out into @p objs.
 * @return how many were dequeued (0 .. n).
 */
uint32_t dpv_ring_dequeue_burst(struct dpv_ring *r, void *objs, uint32_t n);

/** Slots ready for the consumer (exact from the consumer, a snapshot elsewhere). */
static inline uint32_t dpv_ring_used(const struct dpv_ring *r)
{
	return __atomic_load_n(&r->prod_tail, __ATOMIC_ACQUIRE) -
	       __atomic_load_n(&r->cons_head, __ATOMIC_ACQUIRE);
}

/** Most lanes of one dpv_lanes. */
#define DPV_LANES_MAX 128u

/** One ring per producer lane, drained by one consumer. */
struct dpv_lanes {
	uint32_t nlanes;
	uint32_t next; /**< consumer: lane to drain first next time (fairness) */
	struct dpv_ring *lane[DPV_LANES_MAX];
};

/**
 * Lay out @p nlanes rings of @p count slots of @p slot_size bytes each in @p mem,
 * which holds nlanes * dpv_ring_memsize(count, slot_size) bytes, cache-line aligned.
 * @return 0; EINVAL for nlanes of 0 or above DPV_LANES_MAX, bad sizes or alignment.
 */
int dpv_lanes_init(struct dpv_lanes *l, void *mem, uint32_t nlanes, uint32_t count,
		   uint32_t slot_size);

/**
 * Consumer: call @p fn on up to @p budget ready slots, visiting lanes in turn from the
 * one after the lane that led last time, so no lane starves. Slots of one lane are
 * handed over in the order they were produced; @p fn returns false to stop early (the
 * slot it refused stays ready).
 * @return slots consumed.
 */
uint32_t dpv_lanes_drain(struct dpv_lanes *l, uint32_t budget,
			 bool (*fn)(void *slot, uint32_t lane, void *arg), void *arg);

#ifdef __cplusplus
}
#endif

#endif /* DPV_QUEUE_H */
