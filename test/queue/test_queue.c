/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/queue: sizes are checked, order is FIFO across wrap-around, a full ring refuses
 * and recovers, and two (or five) threads hammering rings lose, duplicate, reorder or
 * tear nothing. DPV_QUEUE_HAMMER (environment) scales the hammer tests' message count.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dpv_queue.h"

/* A 64-byte slot whose words all derive from its sequence number: a slot read before
 * the producer finished writing it fails the check. */
struct msg {
	uint64_t seq;
	uint64_t lane;
	uint64_t fill[6];
};

static void msg_make(struct msg *m, uint64_t seq, uint64_t lane)
{
	m->seq = seq;
	m->lane = lane;
	for (int i = 0; i < 6; i++)
		m->fill[i] = seq * 0x9e3779b97f4a7c15ULL + (uint64_t)i + lane;
}

static int msg_ok(const struct msg *m)
{
	for (int i = 0; i < 6; i++)
		if (m->fill[i] != m->seq * 0x9e3779b97f4a7c15ULL + (uint64_t)i + m->lane)
			return 0;
	return 1;
}

static uint64_t hammer_count(void)
{
	const char *s = getenv("DPV_QUEUE_HAMMER");

	return s != NULL ? strtoull(s, NULL, 10) : 2000000;
}

static struct dpv_ring *ring_new(uint32_t count, uint32_t slot)
{
	void *mem = NULL;

	assert_int_equal(posix_memalign(&mem, DPV_CACHE_LINE, dpv_ring_memsize(count, slot)), 0);
	return dpv_ring_init(mem, count, slot);
}

static void sizes_must_be_powers_of_two_and_8_byte_slots(void **state)
{
	void *mem = NULL;

	(void)state;
	assert_int_equal(dpv_ring_memsize(0, 8), 0);
	assert_int_equal(dpv_ring_memsize(3, 8), 0);
	assert_int_equal(dpv_ring_memsize(DPV_RING_MAX_COUNT * 2, 8), 0);
	assert_int_equal(dpv_ring_memsize(8, 0), 0);
	assert_int_equal(dpv_ring_memsize(8, 12), 0);
	assert_true(dpv_ring_memsize(8, 64) >= 8 * 64 + sizeof(struct dpv_ring));
	assert_int_equal(posix_memalign(&mem, DPV_CACHE_LINE, 4096), 0);
	errno = 0;
	assert_null(dpv_ring_init(mem, 6, 8));
	assert_int_equal(errno, EINVAL);
	assert_null(dpv_ring_init((uint8_t *)mem + 8, 8, 8)); /* misaligned */
	assert_non_null(dpv_ring_init(mem, 8, 8));
	free(mem);
}

static void fifo_order_survives_wrap_around(void **state)
{
	struct dpv_ring *r = ring_new(8, sizeof(struct msg));
	struct msg in[5], out[5];
	uint64_t next_in = 0, next_out = 0;
	uint32_t n, i;

	(void)state;
	for (int round = 0; round < 100; round++) {
		for (i = 0; i < 5; i++)
			msg_make(&in[i], next_in + i, 0);
		n = dpv_ring_enqueue_burst(r, in, 5);
		assert_int_equal(n, 5);
		next_in += n;
		n = dpv_ring_dequeue_burst(r, out, 5);
		assert_int_equal(n, 5);
		for (i = 0; i < n; i++) {
			assert_true(msg_ok(&out[i]));
			assert_int_equal(out[i].seq, next_out++);
		}
	}
	free(r);
}

static void full_ring_refuses_then_recovers(void **state)
{
	struct dpv_ring *r = ring_new(4, 8);
	uint64_t v[6] = {1, 2, 3, 4, 5, 6}, o[6];
	uint32_t first;

	(void)state;
	assert_int_equal(dpv_ring_enqueue_burst(r, v, 6), 4);
	assert_int_equal(dpv_ring_reserve(r, 1, &first), 0);
	assert_int_equal(dpv_ring_used(r), 4);
	assert_int_equal(dpv_ring_dequeue_burst(r, o, 1), 1);
	assert_int_equal(o[0], 1);
	assert_int_equal(dpv_ring_enqueue_burst(r, v + 4, 2), 1);
	assert_int_equal(dpv_ring_dequeue_burst(r, o, 6), 4);
	assert_int_equal(o[0], 2);
	assert_int_equal(o[3], 5);
	assert_int_equal(dpv_ring_dequeue_burst(r, o, 1), 0);
	free(r);
}

static void in_place_reserve_and_peek(void **state)
{
	struct dpv_ring *r = ring_new(4, 8);
	uint32_t first, n;

	(void)state;
	n = dpv_ring_reserve(r, 3, &first);
	assert_int_equal(n, 3);
	for (uint32_t i = 0; i < n; i++)
		*(uint64_t *)dpv_ring_slot(r, first + i) = 100 + i;
	assert_int_equal(dpv_ring_peek(r, 4, &first), 0); /* not committed yet */
	dpv_ring_commit(r, n);
	assert_int_equal(dpv_ring_peek(r, 4, &first), 3);
	assert_int_equal(*(uint64_t *)dpv_ring_slot(r, first + 2), 102);
	dpv_ring_release(r, 2);
	assert_int_equal(dpv_ring_peek(r, 4, &first), 1);
	assert_int_equal(*(uint64_t *)dpv_ring_slot(r, first), 102);
	free(r);
}

struct hammer {
	struct dpv_ring *r;
	uint64_t count;
	uint64_t lane;
};

static void *produce(void *arg)
{
	struct hammer *h = arg;
	struct msg batch[17];
	uint64_t sent = 0;
	uint32_t want, n, i, first;
	unsigned int seed = (unsigned int)h->lane + 1;

	while (sent < h->count) {
		want = 1 + (uint32_t)(rand_r(&seed) % 17);
		if (want > h->count - sent)
			want = (uint32_t)(h->count - sent);
		if (rand_r(&seed) & 1) {
			for (i = 0; i < want; i++)
				msg_make(&batch[i], sent + i, h->lane);
			n = dpv_ring_enqueue_burst(h->r, batch, want);
		} else {
			n = dpv_ring_reserve(h->r, want, &first);
			for (i = 0; i < n; i++)
				msg_make(dpv_ring_slot(h->r, first + i), sent + i, h->lane);
			dpv_ring_commit(h->r, n);
		}
		sent += n;
		if (n == 0)
			sched_yield(); /* 2 cores, 5 threads: let the consumer run */
	}
	return NULL;
}

static void two_threads_lose_nothing_and_tear_nothing(void **state)
{
	struct dpv_ring *r = ring_new(256, sizeof(struct msg));
	struct hammer h = {r, hammer_count(), 0};
	struct msg out[32];
	uint64_t expect = 0, bad = 0;
	pthread_t t;
	uint32_t n, i;

	(void)state;
	assert_int_equal(pthread_create(&t, NULL, produce, &h), 0);
	while (expect < h.count) {
		n = dpv_ring_dequeue_burst(r, out, 1 + (uint32_t)(expect % 32));
		if (n == 0)
			sched_yield();
		for (i = 0; i < n; i++) {
			if (out[i].seq != expect || !msg_ok(&out[i]))
				bad++;
			expect++;
		}
	}
	pthread_join(t, NULL);
	assert_int_equal(bad, 0);
	assert_int_equal(dpv_ring_used(r), 0);
	free(r);
}

struct drain_state {
	uint64_t next[4];
	uint64_t bad;
	uint64_t total;
};

static bool check_slot(void *slot, uint32_t lane, void *arg)
{
	struct drain_state *d = arg;
	struct msg *m = slot;

	if (m->lane != lane || m->seq != d->next[lane] || !msg_ok(m))
		d->bad++;
	d->next[lane]++;
	d->total++;
	return true;
}

static void lanes_keep_per_lane_order_under_four_producers(void **state)
{
	const uint32_t nlanes = 4;
	struct dpv_lanes l;
	struct hammer h[4];
	pthread_t t[4];
	struct drain_state d = {{0}, 0, 0};
	uint64_t per_lane = hammer_count() / 4;
	void *mem = NULL;
	uint32_t i;

	(void)state;
	assert_int_equal(posix_memalign(&mem, DPV_CACHE_LINE,
					nlanes * dpv_ring_memsize(64, sizeof(struct msg))), 0);
	assert_int_equal(dpv_lanes_init(&l, mem, nlanes, 64, sizeof(struct msg)), 0);
	for (i = 0; i < nlanes; i++) {
		h[i] = (struct hammer){l.lane[i], per_lane, i};
		assert_int_equal(pthread_create(&t[i], NULL, produce, &h[i]), 0);
	}
	while (d.total < per_lane * nlanes)
		if (dpv_lanes_drain(&l, 48, check_slot, &d) == 0)
			sched_yield();
	for (i = 0; i < nlanes; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(d.next[i], per_lane);
	}
	assert_int_equal(d.bad, 0);
	free(mem);
}

static bool refuse_third(void *slot, uint32_t lane, void *arg)
{
	uint32_t *seen = arg;

	(void)slot;
	(void)lane;
	return ++*seen != 3;
}

static void drain_stops_where_the_callback_refuses(void **state)
{
	struct dpv_lanes l;
	void *mem = NULL;
	uint64_t v[5] = {0};
	uint32_t seen = 0;

	(void)state;
	assert_int_equal(posix_memalign(&mem, DPV_CACHE_LINE, 2 * dpv_ring_memsize(8, 8)), 0);
	assert_int_equal(dpv_lanes_init(&l, mem, 0, 8, 8), EINVAL);
	assert_int_equal(dpv_lanes_init(&l, mem, DPV_LANES_MAX + 1, 8, 8), EINVAL);
	assert_int_equal(dpv_lanes_init(&l, mem, 2, 8, 8), 0);
	assert_int_equal(dpv_ring_enqueue_burst(l.lane[0], v, 5), 5);
	assert_int_equal(dpv_lanes_drain(&l, 16, refuse_third, &seen), 2);
	assert_int_equal(dpv_ring_used(l.lane[0]), 3); /* the refused slot stays */
	free(mem);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(sizes_must_be_powers_of_two_and_8_byte_slots),
		cmocka_unit_test(fifo_order_survives_wrap_around),
		cmocka_unit_test(full_ring_refuses_then_recovers),
		cmocka_unit_test(in_place_reserve_and_peek),
		cmocka_unit_test(two_threads_lose_nothing_and_tear_nothing),
		cmocka_unit_test(lanes_keep_per_lane_order_under_four_producers),
		cmocka_unit_test(drain_stops_where_the_callback_refuses),
	};

	return cmocka_run_group_tests_name("queue", tests, NULL, NULL);
}
