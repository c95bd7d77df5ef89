/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The ground every DPDK part of dpverbs stands on: EAL starts in the memory mode it is
 * given (hugepages, or --no-huge), a mempool is created on the port's socket, and a
 * burst sent on a net_ring port comes back whole. Run by meson once with hugepages and
 * once with --no-huge; exits 77 (skipped) when asked for hugepages the machine lacks.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "helpers.h"

#define BURST 32
#define SKIP 77


static int want_hugepages(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--no-huge") == 0)
			return 0;
	return 1;
}

int main(int argc, char **argv)
{
	struct rte_eth_conf conf = {0};
	struct rte_mbuf *tx[BURST], *rx[BURST];
	struct rte_mempool *mp;
	uint16_t port = 0, sent, got = 0;
	int tries, i, ret, socket;

	if (want_hugepages(argc, argv) && !hugepages_free()) {
		printf("no free hugepages: skipped (the --no-huge run still covers EAL)\n");
		return SKIP;
	}
	ret = rte_eal_init(argc, argv);
	if (ret < 0) {
		fprintf(stderr, "rte_eal_init: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	if (rte_eth_dev_count_avail() < 1) {
		fprintf(stderr, "no ethdev port: pass --vdev=net_ring0\n");
		return 1;
	}
	socket = rte_eth_dev_socket_id(port);
	if (socket < 0)
		socket = (int)rte_socket_id();
	mp = rte_pktmbuf_pool_create("env_pool", 1023, 32, 0, RTE_MBUF_DEFAULT_BUF_SIZE, socket);
	if (mp == NULL) {
		fprintf(stderr, "mempool: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	if (rte_eth_dev_configure(port, 1, 1, &conf) != 0 ||
	    rte_eth_rx_queue_setup(port, 0, 256, (unsigned int)socket, NULL, mp) != 0 ||
	    rte_eth_tx_queue_setup(port, 0, 256, (unsigned int)socket, NULL) != 0 ||
	    rte_eth_dev_start(port) != 0) {
		fprintf(stderr, "port %u setup failed\n", port);
		return 1;
	}
	if (rte_pktmbuf_alloc_bulk(mp, tx, BURST) != 0) {
		fprintf(stderr, "mbuf alloc failed\n");
		return 1;
	}
	for (i = 0; i < BURST; i++) {
		char *d = rte_pktmbuf_append(tx[i], 64);

		memset(d, i, 64);
	}
	sent = rte_eth_tx_burst(port, 0, tx, BURST);
	for (tries = 0; tries < 1000 && got < sent; tries++)
		got += rte_eth_rx_burst(port, 0, rx + got, BURST - got);
	ret = sent == BURST && got == BURST ? 0 : 1;
	for (i = 0; i < got; i++) {
		const uint8_t *d = rte_pktmbuf_mtod(rx[i], const uint8_t *);

		if (rte_pktmbuf_pkt_len(rx[i]) != 64 || d[0] != i || d[63] != i)
			ret = 1;
		rte_pktmbuf_free(rx[i]);
	}
	for (i = got; i < sent; i++)
		rte_pktmbuf_free(tx[i]);
	printf("sent %u, received %u back: %s\n", sent, got, ret == 0 ? "ok" : "FAILED");
	rte_eth_dev_stop(port);
	rte_eth_dev_close(port);
	rte_mempool_free(mp);
	rte_eal_cleanup();
	return ret;
}
