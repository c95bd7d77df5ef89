/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The device's CM at scale, between two devices of a ring pair: 64 connections to one
 * listener at once, each established and released with every event once and every MAD
 * sent once (a REQ the port could not take at first, the ARP hold full, sent again once
 * and counted so: engine.cm_resent); then 1,000 connect/disconnect cycles after which
 * the table holds what it held before, each cycle's IDs in the same slots (a new
 * generation each time), nothing sent again, and the heap not a byte larger.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <rte_eal.h>
#include <rte_ip.h>
#include <rte_malloc.h>

#include "cm_dev.h"
#include "helpers.h"

#define IP_A RTE_IPV4(127, 0, 25, 1)
#define IP_B RTE_IPV4(127, 0, 25, 2)
#define CONNS 64
#define CYCLES 1000

static struct dpv_dev *A, *B;

/* Answers in 268 ms: no REQ or REP is sent again while 64 handshakes run at once. */
static const struct dpv_dev_cm_timing patient = {
	.response_timeout = 16,
	.max_retries = 3,
	.packet_life_time = 8,
	.timewait_ns = 20000000,
};

static int index_of(const uint32_t *ids, int n, uint32_t id)
{
	int i;

	for (i = 0; i < n; i++)
		if (ids[i] == id)
			return i;
	fail_msg("id %#x unknown", id);
	return -1;
}

static void sixty_four_connections_to_one_listener(void **state)
{
	uint32_t lid, bid[CONNS], aid[CONNS];
	int est[2][CONNS], disc[2][CONNS], gone[2][CONNS], n_aid = 0, done = 0, i, s;
	const uint64_t a0 = cm_dev_tx_gsi(A), b0 = cm_dev_tx_gsi(B);
	const uint64_t resent_a = A->stats.cm_resent, resent_b = B->stats.cm_resent;
	const uint64_t failed_a = A->stats.cm_tx_failed, failed_b = B->stats.cm_tx_failed;
	struct dpv_dev_cm_param p = cm_dev_param_b;
	struct dpv_dev_cm_event ev;
	struct dpv_dev *from;

	(void)state;
	memset(est, 0, sizeof(est));
	memset(disc, 0, sizeof(disc));
	memset(gone, 0, sizeof(gone));
	assert_int_equal(dpv_dev_cm_set_timing(A, &patient), 0);
	assert_int_equal(dpv_dev_cm_set_timing(B, &patient), 0);
	assert_int_equal(dpv_dev_cm_listen(A, cm_dev_tcp(7200), &lid), 0);
	for (i = 0; i < CONNS; i++) {
		p.qpn = 0x1000 + (uint32_t)i;
		assert_int_equal(dpv_dev_cm_connect(B, IP_A, cm_dev_tcp(7200), &p, &bid[i]), 0);
	}
	assert_int_equal(cm_dev_ids(B), CONNS);
	while (done < 2 * CONNS) {
		ev = cm_dev_next_of(A, B, &from);
		s = from == A;
		if (s && ev.type == DPV_CM_EV_CONNECT_REQUEST) {
			assert_int_equal(ev.listen_id, lid);
			assert_true(ev.remote_qpn >= 0x1000 && ev.remote_qpn < 0x1000 + CONNS);
			aid[n_aid++] = ev.id;
			assert_int_equal(dpv_dev_cm_accept(A, ev.id, &cm_dev_param_a), 0);
		} else if (!s && ev.type == DPV_CM_EV_CONNECT_RESPONSE) {
			assert_int_equal(dpv_dev_cm_establish(B, ev.id), 0);
		} else if (ev.type == DPV_CM_EV_ESTABLISHED) {
			est[s][index_of(s ? aid : bid, s ? n_aid : CONNS, ev.id)]++;
			done++;
		} else {
			fail_msg("%s: event %d", s ? "A" : "B", ev.type);
		}
	}
	assert_int_equal(n_aid, CONNS);
	assert_int_equal(cm_dev_ids(A), 1 + CONNS);
	for (i = 0; i < CONNS; i++) {
		assert_int_equal(est[0][i], 1);
		assert_int_equal(est[1][i], 1);
		assert_int_equal(dpv_dev_cm_disconnect(B, bid[i]), 0);
	}
	for (done = 0; done < 2 * CONNS;) {
		ev = cm_dev_next_of(A, B, &from);
		s = from == A;
		i = index_of(s ? aid : bid, CONNS, ev.id);
		if (ev.type == DPV_CM_EV_DISCONNECTED) {
			disc[s][i]++;
			if (s)
				assert_int_equal(dpv_dev_cm_disconnect(A, ev.id), 0);
		} else if (ev.type == DPV_CM_EV_TIMEWAIT_EXIT) {
			gone[s][i]++;
			done++;
		} else {
			fail_msg("%s: event %d", s ? "A" : "B", ev.type);
		}
	}
	for (i = 0; i < CONNS; i++) {
		assert_int_equal(disc[0][i], 1);
		assert_int_equal(disc[1][i], 1);
		assert_int_equal(gone[0][i], 1);
		assert_int_equal(gone[1][i], 1);
	}
	/* REQ, RTU and DREQ from B, REP and DREP from A, each once */
	assert_int_equal(cm_dev_tx_gsi(B) - b0, 3 * CONNS);
	assert_int_equal(cm_dev_tx_gsi(A) - a0, 2 * CONNS);
	assert_int_equal(cm_dev_ids(A), 1);
	assert_int_equal(cm_dev_ids(B), 0);
	/* A MAD sent again (engine.cm_resent) for each the port could not take: the REQs
	 * that found the ARP hold full while the first ones resolved A. */
	assert_int_equal(A->stats.cm_resent - resent_a, A->stats.cm_tx_failed - failed_a);
	assert_int_equal(B->stats.cm_resent - resent_b, B->stats.cm_tx_failed - failed_b);
	assert_int_equal(dpv_dev_cm_unlisten(A, lid), 0);
	cm_dev_no_event(A, 30);
	cm_dev_no_event(B, 0);
	assert_int_equal(dpv_dev_cm_set_timing(A, &cm_dev_quick), 0);
	assert_int_equal(dpv_dev_cm_set_timing(B, &cm_dev_quick), 0);
}

/* One connection established and released; its IDs on both sides. */
static void cycle(uint32_t *aid, uint32_t *bid)
{
	cm_dev_connected(B, A, IP_A, cm_dev_tcp(7201), bid, aid);
	assert_int_equal(dpv_dev_cm_disconnect(B, *bid), 0);
	cm_dev_expect(A, DPV_CM_EV_DISCONNECTED, *aid);
	assert_int_equal(dpv_dev_cm_disconnect(A, *aid), 0);
	cm_dev_expect(B, DPV_CM_EV_DISCONNECTED, *bid);
	cm_dev_expect(B, DPV_CM_EV_TIMEWAIT_EXIT, *bid);
	cm_dev_expect(A, DPV_CM_EV_TIMEWAIT_EXIT, *aid);
}

static size_t heap_bytes(void)
{
	struct rte_malloc_socket_stats s;

	assert_int_equal(rte_malloc_get_socket_stats(0, &s), 0);
	return s.heap_allocsz_bytes;
}

static void thousand_cycles_leave_nothing_behind(void **state)
{
	struct dpv_dev_cm_timing brief = patient;
	uint32_t lid, aid, bid, aid0, bid0, prev_a, prev_b;
	const uint64_t resent0 = A->stats.cm_resent + B->stats.cm_resent;
	uint64_t a0, b0;
	size_t heap0;
	int i;

	(void)state;
	brief.timewait_ns = 100000;
	assert_int_equal(dpv_dev_cm_set_timing(A, &brief), 0);
	assert_int_equal(dpv_dev_cm_set_timing(B, &brief), 0);
	assert_int_equal(dpv_dev_cm_listen(A, cm_dev_tcp(7201), &lid), 0);
	cycle(&aid0, &bid0);
	heap0 = heap_bytes();
	a0 = cm_dev_tx_gsi(A);
	b0 = cm_dev_tx_gsi(B);
	prev_a = aid0;
	prev_b = bid0;
	for (i = 1; i < CYCLES; i++) {
		cycle(&aid, &bid);
		/* the same slot each time, in a new generation */
		assert_int_equal(aid & 0xffff, aid0 & 0xffff);
		assert_int_equal(bid & 0xffff, bid0 & 0xffff);
		assert_int_not_equal(aid, prev_a);
		assert_int_not_equal(bid, prev_b);
		prev_a = aid;
		prev_b = bid;
		assert_int_equal(cm_dev_ids(A), 1);
		assert_int_equal(cm_dev_ids(B), 0);
	}
	assert_int_equal(cm_dev_tx_gsi(B) - b0, 3 * (CYCLES - 1));
	assert_int_equal(cm_dev_tx_gsi(A) - a0, 2 * (CYCLES - 1));
	assert_int_equal(heap_bytes(), heap0);
	assert_int_equal(A->stats.cm_events_lost + B->stats.cm_events_lost, 0);
	assert_int_equal(A->stats.cm_resent + B->stats.cm_resent, resent0);
	assert_int_equal(dpv_dev_cm_unlisten(A, lid), 0);
	cm_dev_no_event(A, 10);
	cm_dev_no_event(B, 0);
	assert_int_equal(dpv_dev_cm_set_timing(A, &cm_dev_quick), 0);
	assert_int_equal(dpv_dev_cm_set_timing(B, &cm_dev_quick), 0);
}

static int devices_up(void **state)
{
	(void)state;
	return cm_dev_eal_up() == 0 && cm_dev_pair("cmscale", "dpv0", IP_A, NULL, "dpv1", IP_B,
						    NULL, &cm_dev_quick, &A, &B) == 0
		       ? 0
		       : -1;
}


int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(sixty_four_connections_to_one_listener),
		cmocka_unit_test(thousand_cycles_leave_nothing_behind),
	};

	cm_dev_args_keep(argc, argv);
	return cmocka_run_group_tests_name("cm_dev_scale", tests, devices_up, cm_dev_down) ? 1 : 0;
}
