/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The ethdev port: any rte_ethdev port (a VFIO-bound NIC whose BARs DPDK maps, memif,
 * ring, af_packet, af_xdp, pcap), one RX and one TX queue, polled by the port's owner.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_dev.h>
#include <rte_devargs.h>
#include <rte_ethdev.h>

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

/* Whether the port is a memif client (devargs role=client; memif's default is server). */
static bool memif_client(const struct rte_eth_dev_info *info)
{
	const struct rte_devargs *da;
	const char *p;

	if (strcmp(info->driver_name, "net_memif") != 0 || info->device == NULL)
		return false;
	da = rte_dev_devargs(info->device);
	if (da == NULL || da->args == NULL)
		return false;
	for (p = da->args; (p = strstr(p, "role=client")) != NULL; p++)
		if ((p == da->args || p[-1] == ',') && (p[11] == '\0' || p[11] == ','))
			return true;
	return false;
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
static void join_settle(const struct rte_eth_dev_info *info, bool up)
{
	if (up && memif_client(info))
		rte_delay_us_sleep(JOIN_SETTLE_MS * 1000);
}

static int ethdev_open(struct dpv_port *port, const char *args, unsigned int pool_size)
{
	struct rte_eth_conf conf;
	struct rte_eth_dev_info info;
	char *end;
	unsigned long id;
	uint16_t rxd = RX_DESC, txd = TX_DESC, mtu = RTE_ETHER_MTU;
	bool up;
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
	if (ret == 0)
		ret = rte_eth_dev_start(port->ethdev_port);
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
	ret = wait_link(port->ethdev_port, memif_client(&info), &up);
	if (ret != 0) {
		rte_eth_dev_stop(port->ethdev_port);
		rte_mempool_free(port->pool);
		port->pool = NULL;
		return ret;
	}
	join_settle(&info, up);
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
	*speed_mbps = link.link_speed;
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
