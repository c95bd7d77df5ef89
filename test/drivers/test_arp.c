/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * drivers/: the neighbour table against hostile peers, on two ethdev ports joined back
 * to back (a ring pair): spoofed ARP cannot fill it for good, a peer's new MAC is
 * followed, entries age and are asked again, a full table evicts but never drops held
 * frames, and every mbuf goes back to its pool.
 * EAL arguments come from the command line (meson passes the memory mode).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <rte_arp.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_ip.h>

#include "dpv_port.h"
#include "ports.h"

#define POOL 2047u
#define BURST 32u

static struct dpv_port a, b;

static int ports_up(void **state)
{
	(void)state;
	return ring_pair_up("arp0", &a, RTE_IPV4(127, 0, 11, 1), &b, RTE_IPV4(127, 0, 11, 2),
			    POOL);
}

static int ports_down(void **state)
{
	(void)state;
	ring_pair_down(&a, &b);
	return 0;
}

/* An ARP frame as any host on the link could forge it, from @p from's pool. */
static struct rte_mbuf *arp_frame(struct dpv_port *from, uint16_t op,
				  const struct rte_ether_addr *sha, uint32_t sip, uint32_t tip)
{
	static const struct rte_ether_addr bcast = {.addr_bytes = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff}};
	struct rte_mbuf *m = rte_pktmbuf_alloc(from->pool);
	struct rte_ether_hdr *eth;
	struct rte_arp_hdr *arp;

	assert_non_null(m);
	assert_non_null(rte_pktmbuf_append(m, 60));
	eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	memset(eth, 0, 60);
	rte_ether_addr_copy(&bcast, &eth->dst_addr);
	rte_ether_addr_copy(sha, &eth->src_addr);
	eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP);
	arp = (struct rte_arp_hdr *)(eth + 1);
	arp->arp_hardware = rte_cpu_to_be_16(RTE_ARP_HRD_ETHER);
	arp->arp_protocol = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	arp->arp_hlen = RTE_ETHER_ADDR_LEN;
	arp->arp_plen = 4;
	arp->arp_opcode = rte_cpu_to_be_16(op);
	rte_ether_addr_copy(sha, &arp->arp_data.arp_sha);
	arp->arp_data.arp_sip = rte_cpu_to_be_32(sip);
	arp->arp_data.arp_tip = rte_cpu_to_be_32(tip);
	return m;
}

static void raw_send(struct dpv_port *from, struct rte_mbuf *m)
{
	assert_int_equal(from->ops->tx_burst(from, &m, 1), 1);
}

/* Poll both ports a while (ARP is handled inside dpv_port_rx) until @p want IPv4
 * frames reached @p to; IPv4 frames anywhere are freed. @return frames @p to got. */
static unsigned int pump(struct dpv_port *to, unsigned int want)
{
	unsigned int got = 0;

	for (int i = 0; i < 5000 && (got < want || i < 20); i++) {
		struct rte_mbuf *rx[BURST];
		uint16_t k;

		k = dpv_port_rx(&a, rx, BURST);
		if (to == &a)
			got += k;
		rte_pktmbuf_free_bulk(rx, k);
		k = dpv_port_rx(&b, rx, BURST);
		if (to == &b)
			got += k;
		rte_pktmbuf_free_bulk(rx, k);
		dpv_port_arp_tick(&a, rte_get_tsc_cycles());
		dpv_port_arp_tick(&b, rte_get_tsc_cycles());
		if (got < want)
			rte_delay_us(100);
	}
	return got;
}

static unsigned int held_frames(const struct dpv_port *p)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < DPV_ARP_ENTRIES; i++)
		n += p->arp[i].held;
	return n;
}

static bool in_table(const struct dpv_port *p, uint32_t ip)
{
	for (unsigned int i = 0; i < DPV_ARP_ENTRIES; i++)
		if (p->arp[i].ip == ip)
			return true;
	return false;
}

static void a_flood_of_spoofed_arp_leaves_room_for_a_new_peer(void **state)
{
	struct rte_mbuf *m;
	uint64_t requests;

	(void)state;
	srand(7);
	/* 1,000 requests from distinct random senders: every other one asks for b, the
	 * rest for random addresses. b answers those for it, learns senders while it has
	 * free slots, and counts the rest. */
	for (unsigned int i = 0; i < 1000; i++) {
		struct rte_ether_addr sha;
		uint32_t sip = RTE_IPV4(10, 0, 0, 0) | ((uint32_t)(rand() & 0x3fff) << 10) | i;
		uint32_t tip = i % 2 == 0 ? b.ipv4 : RTE_IPV4(10, 200, 0, 0) | (uint32_t)(rand() & 0xffff);

		rte_eth_random_addr(sha.addr_bytes);
		raw_send(&a, arp_frame(&a, RTE_ARP_OP_REQUEST, &sha, sip, tip));
		if (i % BURST == BURST - 1)
			pump(NULL, 0);
	}
	pump(NULL, 0);
	assert_int_equal(b.stats.arp_replies_sent, 500);
	assert_int_equal(b.stats.arp_learned, DPV_ARP_ENTRIES);
	assert_int_equal(b.arp_n, DPV_ARP_ENTRIES);
	assert_int_equal(b.stats.arp_ignored_unsolicited, 1000 - DPV_ARP_ENTRIES);
	assert_int_equal(b.stats.arp_evicted, 0);
	/* The table is full of fresh entries, yet b reaches a new peer: one spoofed entry
	 * goes. */
	m = ipv4_frame(&b, a.ipv4, 0);
	assert_int_equal(dpv_port_tx(&b, &m, 1), 0); /* held while ARP runs */
	assert_int_equal(pump(&a, 1), 1);
	assert_int_equal(b.stats.arp_evicted, 1);
	assert_int_equal(b.stats.arp_table_full, 0);
	assert_true(in_table(&b, a.ipv4));
	/* Another flood for b's address cannot push a out: nothing in the table is stale. */
	requests = b.stats.arp_requests_sent;
	for (unsigned int i = 0; i < 300; i++) {
		struct rte_ether_addr sha;

		rte_eth_random_addr(sha.addr_bytes);
		raw_send(&a, arp_frame(&a, RTE_ARP_OP_REQUEST, &sha,
				       RTE_IPV4(10, 100, 0, 0) | (i + 1), b.ipv4));
		if (i % BURST == BURST - 1)
			pump(NULL, 0);
	}
	pump(NULL, 0);
	assert_int_equal(b.stats.arp_ignored_unsolicited, 1000 - DPV_ARP_ENTRIES + 300);
	assert_int_equal(b.stats.arp_evicted, 1);
	m = ipv4_frame(&b, a.ipv4, 0);
	assert_int_equal(dpv_port_tx(&b, &m, 1), 1); /* resolved: out at once */
	assert_int_equal(pump(&a, 1), 1);
	assert_int_equal(b.stats.arp_requests_sent, requests);
}

static void unsolicited_arp_from_strangers_is_not_learned(void **state)
{
	static const struct rte_ether_addr stranger = {.addr_bytes = {0x02, 0, 0, 0, 0x11, 0x99}};
	static const struct rte_ether_addr group = {.addr_bytes = {0x01, 0, 0x5e, 0, 0, 1}};
	uint64_t ignored = a.stats.arp_ignored_unsolicited, invalid = a.stats.arp_invalid;
	uint16_t n = a.arp_n;

	(void)state;
	/* a reply nobody asked for, a gratuitous ARP, a request for someone else */
	raw_send(&b, arp_frame(&b, RTE_ARP_OP_REPLY, &stranger, RTE_IPV4(127, 0, 11, 99), a.ipv4));
	raw_send(&b, arp_frame(&b, RTE_ARP_OP_REQUEST, &stranger, RTE_IPV4(127, 0, 11, 98),
			       RTE_IPV4(127, 0, 11, 98)));
	raw_send(&b, arp_frame(&b, RTE_ARP_OP_REQUEST, &stranger, RTE_IPV4(127, 0, 11, 97),
			       RTE_IPV4(127, 0, 11, 96)));
	/* a sender claiming a's own address, and one with a group MAC */
	raw_send(&b, arp_frame(&b, RTE_ARP_OP_REQUEST, &stranger, a.ipv4, a.ipv4));
	raw_send(&b, arp_frame(&b, RTE_ARP_OP_REQUEST, &group, RTE_IPV4(127, 0, 11, 95), a.ipv4));
	pump(NULL, 0);
	assert_int_equal(a.stats.arp_ignored_unsolicited, ignored + 3);
	assert_int_equal(a.stats.arp_invalid, invalid + 2);
	assert_int_equal(a.arp_n, n);
}

static void a_peer_changing_its_mac_by_gratuitous_arp_is_followed(void **state)
{
	static const struct rte_ether_addr moved = {.addr_bytes = {0x02, 0, 0, 0, 0x22, 0x02}};
	struct rte_ether_addr mac;
	struct rte_mbuf *m, *rx[4];
	uint64_t changed = a.stats.arp_mac_changed;
	uint16_t k = 0;

	(void)state;
	/* a learned b from b's request in the first test */
	assert_true(dpv_port_resolve(&a, b.ipv4, &mac));
	assert_true(rte_is_same_ether_addr(&mac, &b.mac));
	raw_send(&b, arp_frame(&b, RTE_ARP_OP_REQUEST, &moved, b.ipv4, b.ipv4));
	pump(NULL, 0);
	assert_true(dpv_port_resolve(&a, b.ipv4, &mac));
	assert_true(rte_is_same_ether_addr(&mac, &moved));
	assert_int_equal(a.stats.arp_mac_changed, changed + 1);
	m = ipv4_frame(&a, b.ipv4, 0);
	assert_int_equal(dpv_port_tx(&a, &m, 1), 1);
	for (int i = 0; i < 1000 && k == 0; i++)
		k = dpv_port_rx(&b, rx, 4);
	assert_int_equal(k, 1);
	assert_true(rte_is_same_ether_addr(&rte_pktmbuf_mtod(rx[0], struct rte_ether_hdr *)->dst_addr,
					   &moved));
	rte_pktmbuf_free(rx[0]);
	/* and back, announced as a gratuitous reply */
	raw_send(&b, arp_frame(&b, RTE_ARP_OP_REPLY, &b.mac, b.ipv4, b.ipv4));
	pump(NULL, 0);
	assert_true(dpv_port_resolve(&a, b.ipv4, &mac));
	assert_true(rte_is_same_ether_addr(&mac, &b.mac));
	assert_int_equal(a.stats.arp_mac_changed, changed + 2);
}

static void an_entry_past_its_lifetime_is_used_while_asked_again(void **state)
{
	static const struct rte_ether_addr ghost_mac = {.addr_bytes = {0x02, 0, 0, 0, 0x33, 0x50}};
	const uint32_t ghost = RTE_IPV4(127, 0, 11, 50);
	uint64_t requests, expired = a.stats.arp_expired;
	struct rte_ether_addr mac;
	struct rte_mbuf *m;
	bool resolved = true;

	(void)state;
	assert_int_equal(dpv_port_set_arp_lifetime(&a, 0), EINVAL);
	assert_int_equal(dpv_port_set_arp_lifetime(&a, DPV_ARP_LIFETIME_MS_MAX + 1), EINVAL);
	assert_int_equal(dpv_port_set_arp_lifetime(&a, 300), 0);
	raw_send(&b, arp_frame(&b, RTE_ARP_OP_REPLY, &b.mac, b.ipv4, b.ipv4));
	pump(NULL, 0);
	rte_delay_ms(350);
	/* Stale: still used, frames go out at once, and one unicast request goes out. */
	requests = a.stats.arp_requests_sent;
	assert_true(dpv_port_resolve(&a, b.ipv4, &mac));
	assert_int_equal(a.stats.arp_requests_sent, requests + 1);
	assert_int_equal(a.stats.arp_expired, expired + 1);
	m = ipv4_frame(&a, b.ipv4, 0);
	assert_int_equal(dpv_port_tx(&a, &m, 1), 1);
	assert_int_equal(pump(&b, 1), 1); /* b's reply confirms it */
	assert_true(dpv_port_resolve(&a, b.ipv4, &mac));
	assert_int_equal(a.stats.arp_requests_sent, requests + 1);
	assert_int_equal(a.stats.arp_unreachable, 0);

	/* A neighbour that stops answering: a resolves it, it answers once, then is gone.
	 * Past its lifetime it is asked DPV_ARP_PROBES times, then unresolved again. */
	assert_false(dpv_port_resolve(&a, ghost, &mac));
	raw_send(&b, arp_frame(&b, RTE_ARP_OP_REPLY, &ghost_mac, ghost, a.ipv4));
	pump(NULL, 0);
	assert_true(dpv_port_resolve(&a, ghost, &mac));
	assert_true(rte_is_same_ether_addr(&mac, &ghost_mac));
	rte_delay_ms(350);
	requests = a.stats.arp_requests_sent;
	for (int i = 0; i < 400 && resolved; i++) {
		resolved = dpv_port_resolve(&a, ghost, &mac);
		pump(NULL, 0);
		rte_delay_ms(5);
	}
	assert_false(resolved);
	assert_int_equal(a.stats.arp_unreachable, 1);
	/* DPV_ARP_PROBES unicast requests, then a broadcast one */
	assert_int_equal(a.stats.arp_requests_sent, requests + DPV_ARP_PROBES + 1);
	/* Frames for it are held now, and leave when it answers again. */
	m = ipv4_frame(&a, ghost, 0);
	assert_int_equal(dpv_port_tx(&a, &m, 1), 0);
	assert_int_equal(held_frames(&a), 1);
	raw_send(&b, arp_frame(&b, RTE_ARP_OP_REPLY, &ghost_mac, ghost, a.ipv4));
	assert_int_equal(pump(&b, 1), 1);
	assert_int_equal(held_frames(&a), 0);
	assert_int_equal(dpv_port_set_arp_lifetime(&a, DPV_ARP_LIFETIME_MS_DEFAULT), 0);
}

static void a_full_table_evicts_but_never_drops_held_frames(void **state)
{
	const unsigned int targets = DPV_ARP_ENTRIES + 44;
	uint64_t evicted = a.stats.arp_evicted, drops = a.stats.arp_unresolved_drops;
	unsigned int idle = a.arp_n, sent = 0;

	(void)state;
	/* Every entry a has now holds no frames: each goes for a neighbour that needs a
	 * slot. Once all 256 hold frames, the rest have nowhere to wait. */
	assert_int_equal(held_frames(&a), 0);
	for (unsigned int i = 0; i < targets; i++) {
		struct rte_mbuf *m = ipv4_frame(&a, RTE_IPV4(127, 1, i >> 8, i & 0xff), 0);

		assert_int_equal(dpv_port_tx(&a, &m, 1), 0);
		if (i % BURST == BURST - 1)
			pump(NULL, 0); /* b drains the broadcast requests */
	}
	assert_int_equal(a.stats.arp_evicted, evicted + idle);
	assert_int_equal(a.stats.arp_table_full, targets - DPV_ARP_ENTRIES);
	assert_int_equal(a.stats.arp_unresolved_drops, drops + targets - DPV_ARP_ENTRIES);
	assert_int_equal(held_frames(&a), DPV_ARP_ENTRIES);
	/* All of them answer (at b's MAC): every held frame reaches b. */
	for (unsigned int i = 0; i < DPV_ARP_ENTRIES; i++) {
		raw_send(&b, arp_frame(&b, RTE_ARP_OP_REPLY, &b.mac,
				       RTE_IPV4(127, 1, i >> 8, i & 0xff), a.ipv4));
		if (i % BURST == BURST - 1)
			sent += pump(&b, 0);
	}
	sent += pump(&b, DPV_ARP_ENTRIES - sent);
	assert_int_equal(sent, DPV_ARP_ENTRIES);
	assert_int_equal(held_frames(&a), 0);
}

/* Frames for a neighbour that never answers wait DPV_ARP_SOLICIT requests, then are
 * dropped and counted; the entry holds nothing and may be evicted. */
static void frames_for_a_silent_neighbour_are_dropped_in_the_end(void **state)
{
	const uint32_t silent = RTE_IPV4(127, 9, 9, 9);
	uint64_t gap = rte_get_tsc_hz() / 1000 * DPV_ARP_RETRY_MS, now = rte_get_tsc_cycles();
	uint64_t drops = a.stats.arp_unresolved_drops, reqs = a.stats.arp_requests_sent;
	unsigned int held0 = held_frames(&a);

	(void)state;
	for (int i = 0; i < 4; i++) {
		struct rte_mbuf *m = ipv4_frame(&a, silent, 0);

		assert_int_equal(dpv_port_tx(&a, &m, 1), 0);
	}
	assert_int_equal(held_frames(&a), held0 + 4);
	/* The clock of the ticks runs ahead of the port's: one retry interval a tick. */
	for (unsigned int i = 1; i <= DPV_ARP_SOLICIT; i++) {
		struct rte_mbuf *rx[BURST];

		dpv_port_arp_tick(&a, now + i * gap);
		rte_pktmbuf_free_bulk(rx, dpv_port_rx(&b, rx, BURST));
		assert_int_equal(held_frames(&a), held0 + 4);
		assert_int_equal(a.stats.arp_unresolved_drops, drops);
	}
	assert_int_equal(a.stats.arp_requests_sent, reqs + DPV_ARP_SOLICIT);
	dpv_port_arp_tick(&a, now + (DPV_ARP_SOLICIT + 1) * gap);
	assert_int_equal(held_frames(&a), held0);
	assert_int_equal(a.stats.arp_unresolved_drops, drops + 4);
	assert_int_equal(a.stats.arp_requests_sent, reqs + DPV_ARP_SOLICIT);
}

static void every_mbuf_returns_to_its_pool(void **state)
{
	(void)state;
	pump(NULL, 0);
	assert_int_equal(a.backlog_n, 0);
	assert_int_equal(b.backlog_n, 0);
	assert_int_equal(held_frames(&a) + held_frames(&b), 0);
	assert_int_equal(rte_mempool_avail_count(a.pool), POOL);
	assert_int_equal(rte_mempool_avail_count(b.pool), POOL);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_flood_of_spoofed_arp_leaves_room_for_a_new_peer),
		cmocka_unit_test(unsolicited_arp_from_strangers_is_not_learned),
		cmocka_unit_test(a_peer_changing_its_mac_by_gratuitous_arp_is_followed),
		cmocka_unit_test(an_entry_past_its_lifetime_is_used_while_asked_again),
		cmocka_unit_test(a_full_table_evicts_but_never_drops_held_frames),
		cmocka_unit_test(frames_for_a_silent_neighbour_are_dropped_in_the_end),
		cmocka_unit_test(every_mbuf_returns_to_its_pool),
	};

	eal_args_keep(argc, argv);
	return cmocka_run_group_tests_name("arp", tests, ports_up, ports_down);
}
