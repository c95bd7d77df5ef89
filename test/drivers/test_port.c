/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * drivers/: two ethdev ports joined back to back (a ring pair) resolve each other with ARP, hold frames while they do,
 * answer ARP for their own address only, and drop and count what is not IPv4.
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
#include <unistd.h>

#include <cmocka.h>
#include <rte_arp.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_ip.h>

#include "dpv_port.h"
#include "ports.h"

static struct dpv_port a, b;

static int ports_up(void **state)
{
	(void)state;
	return ring_pair_up("pair0", &a, RTE_IPV4(127, 0, 10, 1), &b, RTE_IPV4(127, 0, 10, 2),
			    2047);
}

static int ports_down(void **state)
{
	(void)state;
	ring_pair_down(&a, &b);
	return 0;
}

/* Poll both ports (ARP is answered inside dpv_port_rx) until b has IPv4 frames. */
static uint16_t pump(struct rte_mbuf **got, uint16_t max)
{
	uint16_t n = 0;

	for (int i = 0; i < 2000 && n == 0; i++) {
		struct rte_mbuf *junk[8];
		uint16_t k = dpv_port_rx(&a, junk, 8);

		rte_pktmbuf_free_bulk(junk, k);
		n = dpv_port_rx(&b, got, max);
		dpv_port_arp_tick(&a, rte_get_tsc_cycles());
		rte_delay_us(100);
	}
	return n;
}

static void frames_wait_for_arp_then_arrive_with_the_right_mac(void **state)
{
	struct rte_mbuf *tx[3], *rx[8];
	uint16_t n;

	(void)state;
	for (int i = 0; i < 3; i++)
		tx[i] = ipv4_frame(&a, b.ipv4, (uint8_t)(10 + i));
	/* b is unknown: all three are held and one ARP request leaves */
	assert_int_equal(dpv_port_tx(&a, tx, 3), 0);
	assert_int_equal(a.stats.arp_requests_sent, 1);
	n = pump(rx, 8);
	assert_int_equal(n, 3);
	for (int i = 0; i < n; i++) {
		const struct rte_ether_hdr *eth = rte_pktmbuf_mtod(rx[i], struct rte_ether_hdr *);

		assert_true(rte_is_same_ether_addr(&eth->dst_addr, &b.mac));
		assert_int_equal(((const uint8_t *)(eth + 1))[sizeof(struct rte_ipv4_hdr)], 10 + i);
	}
	rte_pktmbuf_free_bulk(rx, n);
	assert_int_equal(b.stats.arp_replies_sent, 1);
	assert_int_equal(a.stats.arp_learned, 1);
	/* b learned a from the request addressed to it */
	assert_int_equal(b.stats.arp_learned, 1);
}

static void resolved_neighbours_go_out_at_once(void **state)
{
	struct rte_mbuf *tx = ipv4_frame(&a, b.ipv4, 99), *rx[4];
	struct rte_ether_addr mac;

	(void)state;
	assert_true(dpv_port_resolve(&a, b.ipv4, &mac));
	assert_true(rte_is_same_ether_addr(&mac, &b.mac));
	assert_int_equal(dpv_port_tx(&a, &tx, 1), 1);
	assert_int_equal(pump(rx, 4), 1);
	rte_pktmbuf_free(rx[0]);
}

/* A burst is one driver call that moved frames: frames per burst tell how well the
 * device batches; an empty poll is no burst. */
static void bursts_count_driver_calls_that_moved_frames(void **state)
{
	struct rte_mbuf *tx[5], *rx[8];
	uint64_t tx_bursts = a.stats.tx_bursts, tx_frames = a.stats.tx_frames;
	uint64_t rx_bursts = b.stats.rx_bursts, rx_frames = b.stats.rx_frames;
	struct rte_ether_addr mac;

	(void)state;
	assert_true(dpv_port_resolve(&a, b.ipv4, &mac));
	assert_int_equal(dpv_port_rx(&b, rx, 8), 0);
	assert_int_equal(b.stats.rx_bursts, rx_bursts);
	for (int i = 0; i < 5; i++)
		tx[i] = ipv4_frame(&a, b.ipv4, (uint8_t)i);
	assert_int_equal(dpv_port_tx(&a, tx, 5), 5);
	assert_int_equal(a.stats.tx_bursts - tx_bursts, 1);
	assert_int_equal(a.stats.tx_frames - tx_frames, 5);
	assert_int_equal(dpv_port_rx(&b, rx, 8), 5);
	rte_pktmbuf_free_bulk(rx, 5);
	assert_int_equal(b.stats.rx_bursts - rx_bursts, 1);
	assert_int_equal(b.stats.rx_frames - rx_frames, 5);
}

static void arp_for_another_address_is_not_answered(void **state)
{
	uint64_t replies = b.stats.arp_replies_sent;
	struct rte_mbuf *tx = ipv4_frame(&a, RTE_IPV4(127, 0, 10, 77), 1), *rx[4];

	(void)state;
	assert_int_equal(dpv_port_tx(&a, &tx, 1), 0); /* held */
	assert_int_equal(pump(rx, 4), 0);
	assert_int_equal(b.stats.arp_replies_sent, replies);
}

static void non_ipv4_frames_are_dropped_and_counted(void **state)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(a.pool), *rx[4];
	struct rte_ether_hdr *eth;
	uint64_t before = b.stats.rx_not_ipv4;

	(void)state;
	assert_non_null(m);
	eth = (struct rte_ether_hdr *)rte_pktmbuf_append(m, 60);
	memset(eth, 0, 60);
	rte_ether_addr_copy(&b.mac, &eth->dst_addr);
	eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV6);
	assert_int_equal(a.ops->tx_burst(&a, &m, 1), 1);
	assert_int_equal(pump(rx, 4), 0);
	assert_int_equal(b.stats.rx_not_ipv4, before + 1);
}

/* One block of a pcapng file written on this machine (its byte order). */
struct png_block {
	uint32_t type, len;
	uint8_t body[4096];
};

static bool png_next(FILE *f, struct png_block *b)
{
	uint32_t head[2];

	if (fread(head, sizeof(uint32_t), 2, f) != 2)
		return false;
	b->type = head[0];
	b->len = head[1];
	assert_true(b->len >= 12 && b->len - 8 <= sizeof(b->body) && b->len % 4 == 0);
	assert_int_equal(fread(b->body, 1, b->len - 8, f), b->len - 8);
	return true;
}

/* The EPB flags option (code 2): 1 inbound, 2 outbound. */
static uint32_t epb_direction(const struct png_block *b)
{
	uint32_t caplen, off, code, len, flags;

	memcpy(&caplen, b->body + 12, 4);
	off = 20 + ((caplen + 3) & ~3u);
	while (off + 4 <= b->len - 12) {
		code = (uint32_t)b->body[off] | (uint32_t)b->body[off + 1] << 8;
		len = (uint32_t)b->body[off + 2] | (uint32_t)b->body[off + 3] << 8;
		if (code == 2) {
			memcpy(&flags, b->body + off + 4, 4);
			return flags & 3;
		}
		off += 4 + ((len + 3) & ~3u);
	}
	return 0;
}

static void capture_records_frames_sent_and_received(void **state)
{
	char path[] = "/tmp/dpv-capture-XXXXXX";
	struct rte_mbuf *tx = ipv4_frame(&a, b.ipv4, 42), *rx[4];
	const uint32_t flen = sizeof(struct rte_ether_hdr) + sizeof(struct rte_ipv4_hdr) + 8;
	uint64_t a_before = a.stats.capture_frames, b_before = b.stats.capture_frames;
	/* What else the ports move meanwhile (a's ARP requests for the neighbour an
	 * earlier test left unanswered go out every DPV_ARP_RETRY_MS) is captured too. */
	uint64_t a_moved = a.stats.tx_frames + a.stats.rx_frames;
	uint64_t b_moved = b.stats.tx_frames + b.stats.rx_frames;
	unsigned int arps = 0;
	struct dpv_capture_source *sa, *sb;
	struct png_block *blk = malloc(sizeof(*blk));
	unsigned int idbs = 0, epbs = 0, isbs = 0;
	uint32_t ifid, caplen;
	uint16_t port;
	int fd = mkstemp(path);
	FILE *f;

	(void)state;
	assert_non_null(blk);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(dpv_capture_open(path, "test_port", NULL, "a", a.ethdev_port, &sa), 0);
	assert_int_equal(dpv_capture_add(sa, "b", b.ethdev_port, &sb), 0);
	assert_true(dpv_capture_same(sa, sb));
	a.capture = sa;
	b.capture = sb;
	assert_int_equal(dpv_port_tx(&a, &tx, 1), 1);
	assert_int_equal(pump(rx, 4), 1);
	rte_pktmbuf_free(rx[0]);
	a.capture = NULL;
	b.capture = NULL;
	a_moved = a.stats.tx_frames + a.stats.rx_frames - a_moved;
	b_moved = b.stats.tx_frames + b.stats.rx_frames - b_moved;
	assert_true(a_moved >= 1 && b_moved >= 1);
	assert_int_equal(a.stats.capture_frames, a_before + a_moved);
	assert_int_equal(b.stats.capture_frames, b_before + b_moved);
	assert_int_equal(dpv_capture_remove(sa), 0);
	assert_int_equal(dpv_capture_remove(sb), 0);
	/* A section, an interface per DPDK port, the frame a sent (out, on a's port) and
	 * the frame b received (in, on b's), and a statistics block per source. */
	f = fopen(path, "rb");
	assert_non_null(f);
	assert_true(png_next(f, blk));
	assert_int_equal(blk->type, 0x0a0d0d0a);
	while (png_next(f, blk)) {
		switch (blk->type) {
		case 1:
			idbs++;
			break;
		case 6:
			if (blk->body[20 + 12] == 0x08 && blk->body[20 + 13] == 0x06) {
				arps++;
				break;
			}
			memcpy(&ifid, blk->body, 4);
			memcpy(&caplen, blk->body + 12, 4);
			assert_int_equal(caplen, flen);
			assert_memory_equal(blk->body + 20, b.mac.addr_bytes, 6);
			assert_int_equal(blk->body[20 + flen - 8], 42);
			/* Interfaces follow the ports in order (every port of this test). */
			port = epbs == 0 ? a.ethdev_port : b.ethdev_port;
			assert_int_equal(ifid, port);
			assert_int_equal(epb_direction(blk), epbs == 0 ? 2 : 1);
			epbs++;
			break;
		case 5:
			isbs++;
			break;
		default:
			fail_msg("block type %u", blk->type);
		}
	}
	assert_int_equal(idbs, rte_eth_dev_count_avail());
	assert_int_equal(epbs, 2);
	assert_int_equal(epbs + arps, a_moved + b_moved);
	assert_int_equal(isbs, 2);
	fclose(f);
	free(blk);
	unlink(path);
}

static void capture_of_a_path_that_cannot_be_made_says_why(void **state)
{
	char path[] = "/tmp/dpv-capture-XXXXXX";
	struct dpv_capture_source *s;
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(dpv_capture_open("/nonexistent-dir/x.pcapng", NULL, NULL, "a", a.ethdev_port,
					  &s), ENOENT);
	/* A port without an interface in the file (none by that id) is refused. */
	assert_int_equal(dpv_capture_open(path, NULL, NULL, "a", RTE_MAX_ETHPORTS - 1, &s), ENODEV);
	unlink(path);
}

static void unknown_driver_and_bad_port_are_refused(void **state)
{
	struct dpv_port p;

	(void)state;
	memset(&p, 0, sizeof(p));
	strcpy(p.name, "dpvX");
	assert_int_equal(dpv_port_open(&p, "nosuch", "0", 511), ENODEV);
	assert_int_equal(dpv_port_open(&p, "ethdev", "12x", 511), EINVAL);
	assert_int_equal(dpv_port_open(&p, "ethdev", "31", 511), ENODEV);
	assert_int_equal(dpv_port_ring_pair("pair0", 0, &p.ethdev_port, &p.ethdev_port), EEXIST);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(frames_wait_for_arp_then_arrive_with_the_right_mac),
		cmocka_unit_test(resolved_neighbours_go_out_at_once),
		cmocka_unit_test(bursts_count_driver_calls_that_moved_frames),
		cmocka_unit_test(arp_for_another_address_is_not_answered),
		cmocka_unit_test(non_ipv4_frames_are_dropped_and_counted),
		cmocka_unit_test(capture_records_frames_sent_and_received),
		cmocka_unit_test(capture_of_a_path_that_cannot_be_made_says_why),
		cmocka_unit_test(unknown_driver_and_bad_port_are_refused),
	};

	eal_args_keep(argc, argv);
	return cmocka_run_group_tests_name("port", tests, ports_up, ports_down);
}
