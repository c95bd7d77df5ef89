/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The ethdev port: any rte_ethdev port (a VFIO-bound NIC whose BARs DPDK maps, memif,
 * ring, af_packet, af_xdp, pcap), one RX and one TX queue, polled by the port's owner.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_dev.h>
#include <rte_devargs.h>
#include <rte_ethdev.h>
#include <rte_kvargs.h>

#include "dpv_port.h"

#define RX_DESC 1024
#define TX_DESC 1024
/* How long opening a port waits for its link at the least (a memif client's takes about
 * 1 ms), whatever dpv_port_set_link_wait() says. */
#define LINK_WAIT_MS 100
/* How long a memif client's link may stay down before it connects to its server again. */
#define RECONNECT_MS 500
/* How long a memif client's open goes on after its link came up (join_settle()). */
#define JOIN_SETTLE_MS 250

/* What the open needs of a memif port's devargs. */
struct memif_args {
	bool client;                  /**< role=client (memif's default is server) */
	char socket[108];             /**< socket=, by default /run/memif.sock */
	bool abstract;                /**< socket-abstract=, by default yes */
};

/*
 * Read the devargs of a memif port (DPDK's kvargs, as the PMD reads them). false for
 * any other port, and for a memif whose devargs do not parse (its probe took them, so
 * it is a server with the defaults).
 */
static bool memif_args_of(const struct rte_eth_dev_info *info, struct memif_args *m)
{
	const struct rte_devargs *da;
	struct rte_kvargs *kv;
	const char *v;

	*m = (struct memif_args){.socket = "/run/memif.sock", .abstract = true};
	if (strcmp(info->driver_name, "net_memif") != 0 || info->device == NULL)
		return false;
	da = rte_dev_devargs(info->device);
	if (da == NULL || da->args == NULL)
		return true;
	kv = rte_kvargs_parse(da->args, NULL);
	if (kv == NULL)
		return true;
	v = rte_kvargs_get(kv, "role");
	m->client = v != NULL && strcmp(v, "client") == 0;
	v = rte_kvargs_get(kv, "socket");
	if (v != NULL && strlen(v) < sizeof(m->socket))
		strcpy(m->socket, v);
	v = rte_kvargs_get(kv, "socket-abstract");
	m->abstract = v == NULL || strcmp(v, "no") != 0;
	rte_kvargs_free(kv);
	return true;
}

/* __SO_ACCEPTCON in /proc/net/unix's Flags: a listening socket. */
#define UNIX_LISTENING 0x10000ul

/*
 * Whether something listens on a memif client's socket (abstract unless
 * socket-abstract=no), as this network namespace's /proc/net/unix lists it ("@name" for
 * an abstract one). True when the file cannot be read: the start then says what it
 * finds.
 */
static bool memif_server_listening(const struct memif_args *m)
{
	char want[112], line[512], path[112];
	unsigned long flags;
	bool found = false;
	FILE *f;

	snprintf(want, sizeof(want), "%s%s", m->abstract ? "@" : "", m->socket);
	f = fopen("/proc/net/unix", "r");
	if (f == NULL)
		return true;
	/* Num RefCount Protocol Flags Type St Inode Path */
	while (!found && fgets(line, sizeof(line), f) != NULL)
		found = sscanf(line, "%*s %*s %*s %lx %*s %*s %*s %111s", &flags, path) == 2 &&
			(flags & UNIX_LISTENING) && strcmp(path, want) == 0;
	fclose(f);
	return found;
}

/*
 * A memif client connects to its server's socket as its port starts, once: with no
 * server listening there yet, DPDK 22.11's memif fails the start, and the open with
 * it. The server's program may be starting at the same moment (ucx_perftest's two
 * sides after their TCP handshake, mpirun's ranks), or a little later, so a memif
 * client waits for its server's socket, checking every 10 ms for at most
 * dpv_port_set_link_wait() milliseconds, before it starts; wait_link() then waits for
 * the link. A server in another network namespace is not seen: the client waits the
 * whole time, then starts.
 */
static void wait_server(const struct memif_args *m)
{
	uint64_t ms = rte_get_timer_hz() / 1000, start = rte_get_timer_cycles();
	uint64_t wait = (uint64_t)dpv_port_link_wait() * ms;

	while (!memif_server_listening(m) && rte_get_timer_cycles() - start < wait)
		rte_delay_us_sleep(10 * 1000);
}

/*
 * Let a link that is coming up come up before the device is used, as NIC drivers'
 * users wait after starting a port: for dpv_port_set_link_wait() milliseconds, and at
 * least LINK_WAIT_MS. A memif client is up once its handshake with the server is done,
 * and until then the server can send it nothing: with no wait, the first ARP reply
 * could be lost (a 200 ms retry), ibv_devinfo said PORT_DOWN, and a program that ends
 * at once (ibv_devinfo) left mid-handshake, which makes a DPDK 22.11 memif server panic
 * ("Error adding fd ... epoll_ctl"). A memif server whose port is not started yet (its
 * program is still on its way to ibv_open_device()) turns a client away ("ID not
 * found") and the client never asks again: a memif client @p reconnect, still down
 * after RECONNECT_MS, connects again, its port stopped and started.
 * @return 0 with @p up set, or the errno of a restart that failed (the server is gone)
 */
static int wait_link(uint16_t ethdev_port, bool reconnect, bool *up)
{
	uint64_t ms = rte_get_timer_hz() / 1000, start = rte_get_timer_cycles(), asked = start;
	uint64_t wait = RTE_MAX(dpv_port_link_wait(), (uint32_t)LINK_WAIT_MS) * ms;
	struct rte_eth_link link;
	int ret;

	for (;;) {
		uint64_t now;

		*up = rte_eth_link_get_nowait(ethdev_port, &link) == 0 &&
		      link.link_status == RTE_ETH_LINK_UP;
		now = rte_get_timer_cycles();
		if (*up || now - start >= wait)
			return 0;
		if (reconnect && now - asked >= RECONNECT_MS * ms) {
			ret = rte_eth_dev_stop(ethdev_port);
			if (ret == 0)
				ret = rte_eth_dev_start(ethdev_port);
			if (ret != 0)
				return -ret;
			asked = now;
		}
		rte_delay_us_sleep(1000);
	}
}

/*
 * A memif link comes up when the client joins a server that is already running, and
 * often that server's program is waiting in its own open for this very link before it
 * goes on to listen for its peer (perftest checks that its port is ACTIVE before it
 * listens on TCP, and its client connects once, right after its own check). Both
 * links come up within microseconds of each other, so with nothing more the two
 * programs race, and the client's connection is refused about every other time. The
 * client, which came second, lets the server's program go first: its open returns
 * JOIN_SETTLE_MS after its link came up. The server's open returns at once.
 */
static void join_settle(bool memif_client, bool up)
{
	if (up && memif_client)
		rte_delay_us_sleep(JOIN_SETTLE_MS * 1000);
}

static int ethdev_open(struct dpv_port *port, const char *args, unsigned int pool_size)
{
	struct rte_eth_conf conf;
	struct rte_eth_dev_info info;
	char *end;
	unsigned long id;
	uint16_t rxd = RX_DESC, txd = TX_DESC, mtu = RTE_ETHER_MTU;
	struct memif_args memif;
	bool up, memif_client;
	int ret;

	errno = 0;
	id = strtoul(args, &end, 10);
	if (errno != 0 || end == args || *end != '\0' || id >= RTE_MAX_ETHPORTS)
		return EINVAL;
	if (!rte_eth_dev_is_valid_port((uint16_t)id))
		return ENODEV;
	port->ethdev_port = (uint16_t)id;
	port->socket = rte_eth_dev_socket_id(port->ethdev_port);
	if (port->socket < 0)
		port->socket = (int)rte_socket_id();
	ret = rte_eth_dev_info_get(port->ethdev_port, &info);
	if (ret != 0)
		return -ret;
	memif_client = memif_args_of(&info, &memif) && memif.client;
	/* DPDK 22.11's af_xdp PMD registers as its UMEM the span from the pool's first
	 * chunk, populated_size x object size long: an mbuf outside it is a descriptor
	 * the kernel refuses (tx_invalid_descs), a frame lost. Its pool is packed. */
	ret = dpv_port_make_pool(port, pool_size, strcmp(info.driver_name, "net_af_xdp") == 0);
	if (ret != 0)
		return ret;

	memset(&conf, 0, sizeof(conf));
	ret = rte_eth_dev_configure(port->ethdev_port, 1, 1, &conf);
	if (ret == 0)
		ret = rte_eth_dev_adjust_nb_rx_tx_desc(port->ethdev_port, &rxd, &txd);
	if (ret == 0)
		ret = rte_eth_rx_queue_setup(port->ethdev_port, 0, rxd, (unsigned int)port->socket,
					     NULL, port->pool);
	if (ret == 0)
		ret = rte_eth_tx_queue_setup(port->ethdev_port, 0, txd, (unsigned int)port->socket,
					     NULL);
	if (ret == 0 && memif_client)
		wait_server(&memif);
	if (ret == 0) {
		ret = rte_eth_dev_start(port->ethdev_port);
		/* memif's -1: no server took the connection. */
		if (ret != 0 && memif_client)
			ret = ECONNREFUSED;
	}
	if (ret != 0) {
		rte_mempool_free(port->pool);
		port->pool = NULL;
		return ret < 0 ? -ret : ret;
	}
	/* Some virtual ports (ring) report no MTU; Ethernet's 1500 is then the answer. */
	if (rte_eth_dev_get_mtu(port->ethdev_port, &mtu) != 0 || mtu == 0)
		mtu = RTE_ETHER_MTU;
	port->mtu = mtu;
	rte_eth_macaddr_get(port->ethdev_port, &port->mac);
	/* Ports without a MAC of their own (ring) get a locally administered one. */
	if (rte_is_zero_ether_addr(&port->mac)) {
		rte_eth_random_addr(port->mac.addr_bytes);
	}
	rte_eth_promiscuous_enable(port->ethdev_port);
	ret = wait_link(port->ethdev_port, memif_client, &up);
	if (ret != 0) {
		rte_eth_dev_stop(port->ethdev_port);
		rte_mempool_free(port->pool);
		port->pool = NULL;
		return ret;
	}
	join_settle(memif_client, up);
	return 0;
}

static uint16_t ethdev_rx(struct dpv_port *port, struct rte_mbuf **pkts, uint16_t n)
{
	return rte_eth_rx_burst(port->ethdev_port, 0, pkts, n);
}

static uint16_t ethdev_tx(struct dpv_port *port, struct rte_mbuf **pkts, uint16_t n)
{
	return rte_eth_tx_burst(port->ethdev_port, 0, pkts, n);
}

static void ethdev_link(struct dpv_port *port, bool *up, uint32_t *speed_mbps)
{
	struct rte_eth_link link;

	if (rte_eth_link_get_nowait(port->ethdev_port, &link) != 0) {
		*up = false;
		*speed_mbps = 0;
		return;
	}
	*up = link.link_status == RTE_ETH_LINK_UP;
	/* A PMD that cannot tell its speed (virtio-net without VIRTIO_NET_F_SPEED_DUPLEX,
	 * QEMU's) says RTE_ETH_SPEED_NUM_UNKNOWN, UINT32_MAX: as a speed it read as the
	 * fastest link there is (ibv_devinfo showed a virtio NIC at 25 Gbps). */
	*speed_mbps = link.link_speed == RTE_ETH_SPEED_NUM_UNKNOWN ? 0 : link.link_speed;
}

static void ethdev_close(struct dpv_port *port)
{
	rte_eth_dev_stop(port->ethdev_port);
}

const struct dpv_port_ops dpv_ethdev_ops = {
	.name = "ethdev",
	.open = ethdev_open,
	.rx_burst = ethdev_rx,
	.tx_burst = ethdev_tx,
	.link = ethdev_link,
	.close = ethdev_close,
};
