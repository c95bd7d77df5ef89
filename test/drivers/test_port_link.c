/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * drivers/: the TX backlog across the link. Frames the driver's TX queue refused wait
 * in the port's backlog; a link seen down (dpv_port_link()) drops and counts them, so
 * none reaches whoever is on the link when it comes back; a link seen up keeps them.
 * One end of a ring pair fills its ring (b does not read), its link is set down and up
 * with rte_eth_dev_set_link_down()/up().
 * EAL arguments come from the command line (meson passes the memory mode).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <rte_ethdev.h>
#include <rte_ip.h>

#include "dpv_port.h"
#include "ports.h"

/* Frames the backlog holds in each test: refused by a full ring. */
#define KEPT 5u
/* More mbufs than the ring pair's ring holds, and the frames kept beside them. */
#define POOL 8191u

static struct dpv_port a, b;

static int ports_up(void **state)
{
	(void)state;
	return ring_pair_up("pair0", &a, RTE_IPV4(127, 0, 11, 1), &b, RTE_IPV4(127, 0, 11, 2),
			    POOL);
}

static int ports_down(void **state)
{
	(void)state;
	ring_pair_down(&a, &b);
	return 0;
}

static uint8_t mark_of(const struct rte_mbuf *m)
{
	return *rte_pktmbuf_mtod_offset(m, const uint8_t *,
					sizeof(struct rte_ether_hdr) + sizeof(struct rte_ipv4_hdr));
}

/* Everything b has received, freed; @p mark counts those that carry it. */
static uint64_t drain_b(uint8_t mark, uint64_t *marked)
{
	struct rte_mbuf *got[32];
	uint64_t n = 0;
	uint16_t k;

	*marked = 0;
	while ((k = dpv_port_rx(&b, got, 32)) != 0) {
		for (uint16_t i = 0; i < k; i++)
			*marked += mark_of(got[i]) == mark;
		rte_pktmbuf_free_bulk(got, k);
		n += k;
	}
	return n;
}

/* a sends frames with @p mark to its own address (no ARP) until KEPT wait in its
 * backlog behind the full ring. @return the frames the ring took. */
static uint64_t fill_backlog(uint8_t mark)
{
	uint64_t deferred = a.stats.tx_deferred, frames = a.stats.tx_frames;

	while (a.stats.tx_deferred - deferred < KEPT) {
		struct rte_mbuf *m = ipv4_frame(&a, a.ipv4, mark);

		dpv_port_tx(&a, &m, 1);
	}
	assert_int_equal(a.backlog_n, KEPT);
	return a.stats.tx_frames - frames;
}

/* The test's frames gone: b has read all, a's backlog is empty, the link is up. */
static int link_up_and_empty(void **state)
{
	uint64_t marked;

	(void)state;
	if (rte_eth_dev_set_link_up(a.ethdev_port) != 0)
		return -1;
	drain_b(0, &marked);
	dpv_port_rx(&a, NULL, 0);
	drain_b(0, &marked);
	return a.backlog_n == 0 ? 0 : -1;
}

static void backlog_is_dropped_when_the_link_goes_down(void **state)
{
	uint64_t taken, drops = a.stats.tx_link_down_drops, marked;
	struct rte_mbuf *m;
	uint32_t speed;
	bool up = true;

	(void)state;
	taken = fill_backlog(1);
	assert_int_equal(rte_eth_dev_set_link_down(a.ethdev_port), 0);
	dpv_port_link(&a, &up, &speed);
	assert_false(up);
	assert_int_equal(a.backlog_n, 0);
	assert_int_equal(a.stats.tx_link_down_drops - drops, KEPT);

	/* The link returns: b gets what the ring took before, then only what is new. */
	assert_int_equal(rte_eth_dev_set_link_up(a.ethdev_port), 0);
	dpv_port_link(&a, &up, &speed);
	assert_true(up);
	assert_int_equal(drain_b(1, &marked), taken);
	assert_int_equal(marked, taken);
	m = ipv4_frame(&a, a.ipv4, 2);
	assert_int_equal(dpv_port_tx(&a, &m, 1), 1);
	assert_int_equal(drain_b(2, &marked), 1);
	assert_int_equal(marked, 1);
	assert_int_equal(a.stats.tx_link_down_drops - drops, KEPT);
}

static void backlog_is_kept_while_the_link_is_up(void **state)
{
	uint64_t taken, drops = a.stats.tx_link_down_drops, marked, frames;
	uint32_t speed;
	bool up = false;

	(void)state;
	taken = fill_backlog(3);
	dpv_port_link(&a, &up, &speed);
	assert_true(up);
	assert_int_equal(a.backlog_n, KEPT);
	assert_int_equal(drain_b(3, &marked), taken);

	/* Room in the ring again: the backlog goes out first, on the next receive. */
	frames = a.stats.tx_frames;
	dpv_port_rx(&a, NULL, 0);
	assert_int_equal(a.backlog_n, 0);
	assert_int_equal(a.stats.tx_frames - frames, KEPT);
	assert_int_equal(drain_b(3, &marked), KEPT);
	assert_int_equal(marked, KEPT);
	assert_int_equal(a.stats.tx_link_down_drops, drops);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(backlog_is_dropped_when_the_link_goes_down,
					  link_up_and_empty),
		cmocka_unit_test_teardown(backlog_is_kept_while_the_link_is_up,
					  link_up_and_empty),
	};

	eal_args_keep(argc, argv);
	return cmocka_run_group_tests_name("port_link", tests, ports_up, ports_down);
}
