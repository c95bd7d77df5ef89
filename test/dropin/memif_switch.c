/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * memif_switch: an Ethernet switch of memif ports, for tests that join more than two
 * processes over memif (a memif link joins two). It knows nothing of dpverbs.
 *
 *   memif_switch N DIR
 *
 * makes N memif ports in the server role, their sockets DIR/port0.sock ..
 * DIR/port<N-1>.sock, and forwards every frame that arrives on one of them as a
 * learning switch does: to the port where its destination MAC was last seen as a
 * source, else (broadcast, or not seen yet) to every other port. Its EAL runs on core 0
 * without hugepages, PCI or telemetry, with a file prefix of its own. Once its ports
 * are started it prints "memif_switch: N ports" and flushes; on SIGTERM, SIGINT or
 * SIGHUP it stops and prints its counters as NAME VALUE lines. When nothing arrives it
 * sleeps 20 us between polls, so it does not take a core from the processes it joins.
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#define MAX_PORTS 16
#define MACS 64
#define BURST 32

static volatile sig_atomic_t stop;
static struct {
	struct rte_ether_addr mac;
	uint16_t port;
} table[MACS];
static unsigned int n_macs;
static uint64_t forwarded, flooded, dropped;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* The table's entry of @p mac, or MACS when it has none. */
static unsigned int entry_of(const struct rte_ether_addr *mac)
{
	unsigned int i;

	for (i = 0; i < n_macs; i++)
		if (rte_is_same_ether_addr(&table[i].mac, mac))
			return i;
	return MACS;
}

static int port_of(const struct rte_ether_addr *mac)
{
	unsigned int i = entry_of(mac);

	return i < MACS ? table[i].port : -1;
}

static void learn(const struct rte_ether_addr *mac, uint16_t port)
{
	unsigned int i = entry_of(mac);

	if (i == MACS && n_macs < MACS) {
		i = n_macs++;
		table[i].mac = *mac;
	}
	if (i < MACS)
		table[i].port = port;
}

static void send_one(uint16_t port, struct rte_mbuf *m)
{
	if (rte_eth_tx_burst(port, 0, &m, 1) != 1) {
		rte_pktmbuf_free(m);
		dropped++;
	}
}

int main(int argc, char **argv)
{
	char *eal[8 + MAX_PORTS], prefix[64], vdev[MAX_PORTS][320];
	struct rte_mempool *pool;
	struct rte_mbuf *pkts[BURST];
	unsigned int n, i;
	int e = 0;

	if (argc != 3 || (n = (unsigned int)atoi(argv[1])) < 2 || n > MAX_PORTS) {
		fprintf(stderr, "usage: %s N DIR (2 <= N <= %d)\n", argv[0], MAX_PORTS);
		return 2;
	}
	snprintf(prefix, sizeof(prefix), "--file-prefix=memifsw%d", (int)getpid());
	eal[e++] = argv[0];
	eal[e++] = "-l";
	eal[e++] = "0";
	eal[e++] = "--no-huge";
	eal[e++] = "--no-shconf";
	eal[e++] = "--no-pci";
	eal[e++] = "--no-telemetry";
	eal[e++] = prefix;
	for (i = 0; i < n; i++) {
		snprintf(vdev[i], sizeof(vdev[i]),
			 "--vdev=net_memif%u,role=server,id=0,socket=%s/port%u.sock,socket-abstract=no",
			 i, argv[2], i);
		eal[e++] = vdev[i];
	}
	if (rte_eal_init(e, eal) < 0 || rte_eth_dev_count_avail() != n) {
		fprintf(stderr, "memif_switch: EAL or its %u memif ports did not start\n", n);
		return 1;
	}
	pool = rte_pktmbuf_pool_create("memifsw", 8191, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
				       (int)rte_socket_id());
	if (pool == NULL)
		return 1;
	for (i = 0; i < n; i++) {
		struct rte_eth_conf conf;

		memset(&conf, 0, sizeof(conf));
		if (rte_eth_dev_configure((uint16_t)i, 1, 1, &conf) != 0 ||
		    rte_eth_rx_queue_setup((uint16_t)i, 0, 1024, (unsigned int)rte_socket_id(), NULL,
					   pool) != 0 ||
		    rte_eth_tx_queue_setup((uint16_t)i, 0, 1024, (unsigned int)rte_socket_id(),
					   NULL) != 0 ||
		    rte_eth_dev_start((uint16_t)i) != 0) {
			fprintf(stderr, "memif_switch: port %u would not start\n", i);
			return 1;
		}
	}
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	signal(SIGHUP, on_signal);
	printf("memif_switch: %u ports\n", n);
	fflush(stdout);
	while (!stop) {
		unsigned int moved = 0;

		for (i = 0; i < n; i++) {
			uint16_t got = rte_eth_rx_burst((uint16_t)i, 0, pkts, BURST);

			moved += got;
			for (uint16_t k = 0; k < got; k++) {
				struct rte_ether_hdr *eh =
					rte_pktmbuf_mtod(pkts[k], struct rte_ether_hdr *);
				int to;

				learn(&eh->src_addr, (uint16_t)i);
				to = rte_is_unicast_ether_addr(&eh->dst_addr) ?
					     port_of(&eh->dst_addr) : -1;
				if (to == (int)i) {
					rte_pktmbuf_free(pkts[k]);
					dropped++;
				} else if (to >= 0) {
					send_one((uint16_t)to, pkts[k]);
					forwarded++;
				} else {
					/* Every other port: one reference each. */
					rte_mbuf_refcnt_update(pkts[k], (int16_t)(n - 2));
					for (unsigned int p = 0; p < n; p++)
						if (p != i)
							send_one((uint16_t)p, pkts[k]);
					flooded++;
				}
			}
		}
		if (moved == 0)
			usleep(20);
	}
	printf("forwarded %" PRIu64 "\nflooded %" PRIu64 "\ndropped %" PRIu64 "\n", forwarded,
	       flooded, dropped);
	for (i = 0; i < n; i++)
		rte_eth_dev_stop((uint16_t)i);
	rte_eal_cleanup();
	return 0;
}
