/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <string.h>

#include "dpv_queue.h"

static size_t header_size(void)
{
	return (sizeof(struct dpv_ring) + DPV_CACHE_LINE - 1) & ~(size_t)(DPV_CACHE_LINE - 1);
}

size_t dpv_ring_memsize(uint32_t count, uint32_t slot_size)
{
	size_t slots;

	if (count == 0 || count > DPV_RING_MAX_COUNT || (count & (count - 1)) != 0 ||
	    slot_size == 0 || slot_size % 8 != 0)
		return 0;
	slots = (size_t)count * slot_size;
	return header_size() + ((slots + DPV_CACHE_LINE - 1) & ~(size_t)(DPV_CACHE_LINE - 1));
}

struct dpv_ring *dpv_ring_init(void *mem, uint32_t count, uint32_t slot_size)
{
	struct dpv_ring *r = mem;

	if (mem == NULL || ((uintptr_t)mem & (DPV_CACHE_LINE - 1)) != 0 ||
	    dpv_ring_memsize(count, slot_size) == 0) {
		errno = EINVAL;
		return NULL;
	}
	memset(r, 0, sizeof(*r));
	r->mask = count - 1;
	r->slot_size = slot_size;
	r->slots = (uint8_t *)mem + header_size();
	return r;
}

/* Copy n slots between a flat array and the ring starting at index idx, in at most two
 * pieces (the ring wraps once at most). */
static void copy_in(struct dpv_ring *r, uint32_t idx, const uint8_t *src, uint32_t n)
{
	uint32_t off = idx & r->mask, first = r->mask + 1 - off;

	if (first > n)
		first = n;
	memcpy(dpv_ring_slot(r, idx), src, (size_t)first * r->slot_size);
	if (n > first)
		memcpy(r->slots, src + (size_t)first * r->slot_size,
		       (size_t)(n - first) * r->slot_size);
}

static void copy_out(const struct dpv_ring *r, uint32_t idx, uint8_t *dst, uint32_t n)
{
	uint32_t off = idx & r->mask, first = r->mask + 1 - off;

	if (first > n)
		first = n;
	memcpy(dst, dpv_ring_slot(r, idx), (size_t)first * r->slot_size);
	if (n > first)
		memcpy(dst + (size_t)first * r->slot_size, r->slots,
		       (size_t)(n - first) * r->slot_size);
}

uint32_t dpv_ring_enqueue_burst(struct dpv_ring *r, const void *objs, uint32_t n)
{
	uint32_t first;

	n = dpv_ring_reserve(r, n, &first);
	if (n) {
		copy_in(r, first, objs, n);
		dpv_ring_commit(r, n);
	}
	return n;
}

uint32_t dpv_ring_dequeue_burst(struct dpv_ring *r, void *objs, uint32_t n)
{
	uint32_t first;

	n = dpv_ring_peek(r, n, &first);
	if (n) {
		copy_out(r, first, objs, n);
		dpv_ring_release(r, n);
	}
	return n;
}

int dpv_lanes_init(struct dpv_lanes *l, void *mem, uint32_t nlanes, uint32_t count,
		   uint32_t slot_size)
{
	size_t each = dpv_ring_memsize(count, slot_size);
	uint32_t i;

	if (nlanes == 0 || nlanes > DPV_LANES_MAX || each == 0 || mem == NULL ||
	    ((uintptr_t)mem & (DPV_CACHE_LINE - 1)) != 0)
		return EINVAL;
	l->nlanes = nlanes;
	l->next = 0;
	for (i = 0; i < nlanes; i++)
		l->lane[i] = dpv_ring_init((uint8_t *)mem + each * i, count, slot_size);
	return 0;
}

/* The lanes from l->next on, in turn, until @p budget slots are done or @p fn refuses
 * one. Out of line: the calls through @p fn need a frame that the common empty drain
 * does without. */
static __attribute__((noinline)) uint32_t
lanes_drain(struct dpv_lanes *l, uint32_t budget, bool (*fn)(void *slot, uint32_t lane, void *arg),
	    void *arg)
{
	const uint32_t nlanes = l->nlanes, start = l->next;
	uint32_t done = 0, visited, lane = start, n, i, first = 0;
	struct dpv_ring *r;

	for (visited = 0; visited < nlanes && done < budget; visited++) {
		r = l->lane[lane];
		/* Most lanes of a drain are empty (one thread posts): one look, no peek. */
		n = __atomic_load_n(&r->prod_tail, __ATOMIC_ACQUIRE) == r->cons_head
			    ? 0
			    : dpv_ring_peek(r, budget - done, &first);
		for (i = 0; i < n; i++) {
			if (!fn(dpv_ring_slot(r, first + i), lane, arg)) {
				dpv_ring_release(r, i);
				l->next = lane;
				return done + i;
			}
		}
		if (n)
			dpv_ring_release(r, n);
		done += n;
		if (++lane == nlanes)
			lane = 0;
	}
	l->next = start + 1 == nlanes ? 0 : start + 1;
	return done;
}

uint32_t dpv_lanes_drain(struct dpv_lanes *l, uint32_t budget,
			 bool (*fn)(void *slot, uint32_t lane, void *arg), void *arg)
{
	const uint32_t nlanes = l->nlanes, start = l->next;
	struct dpv_ring *const *r = l->lane, *const *end = l->lane + nlanes;

	/* Most drains find every lane empty: one look at each producer index, in array
	 * order (the order matters only to lanes_drain()), without a call and without
	 * the store of the consumer's cached index that dpv_ring_peek() makes. */
	for (; r != end; r++)
		if (__atomic_load_n(&(*r)->prod_tail, __ATOMIC_ACQUIRE) != (*r)->cons_head)
			return lanes_drain(l, budget, fn, arg);
	l->next = start + 1 == nlanes ? 0 : start + 1;
	return 0;
}
