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

/* The value of @p key in a devargs string into @p buf; false when it is not there or
 * does not fit. */
static bool devarg(const char *args, const char *key, char *buf, size_t n)
{
	size_t klen = strlen(key), len;
	const char *p = args, *v, *e;

	while (p != NULL && *p != '\0') {
		if (strncmp(p, key, klen) == 0 && p[klen] == '=') {
			v = p + klen + 1;
			e = strchr(v, ',');
			len = e != NULL ? (size_t)(e - v) : strlen(v);
			if (len >= n)
				return false;
			memcpy(buf, v, len);
			buf[len] = '\0';
			return true;
		}
		p = strchr(p, ',');
		if (p != NULL)
			p++;
	}
	return false;
}

/* __SO_ACCEPTCON in /proc/net/unix's Flags: a listening socket. */
#define UNIX_LISTENING 0x10000ul

/*
 * Whether something listens on a memif client's socket (devargs socket=, by default
 * /run/memif.sock, abstract unless socket-abstract=no), as this network namespace's
 * /proc/net/unix lists it ("@name" for an abstract one). True when the file cannot be
 * read: the start then says what it finds.
 */
static bool memif_server_listening(const struct rte_eth_dev_info *info)
{
	char sock[108] = "/run/memif.sock", abstract[8] = "yes", want[112], line[512];
	char path[112];
	const struct rte_devargs *da = rte_dev_devargs(info->device);
	unsigned long flags;
	bool found = false;
	FILE *f;

	if (da != NULL && da->args != NULL) {
		devarg(da->args, "socket", sock, sizeof(sock));
		devarg(da->args, "socket-abstract", abstract, sizeof(abstract));
	}
	snprintf(want, sizeof(want), "%s%s", strcmp(abstract, "no") == 0 ? "" : "@", sock);
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
static void wait_server(const struct rte_eth_dev_info *info)
{
	uint64_t ms = rte_get_timer_hz() / 1000, start = rte_get_timer_cycles();
	uint64_t wait = (uint64_t)dpv_port_link_wait() * ms;

	while (!memif_server_listening(info) && rte_get_timer_cycles() - start < wait)
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
	if (ret == 0 && memif_client(&info))
		wait_server(&info);
	if (ret == 0) {
		ret = rte_eth_dev_start(port->ethdev_port);
		/* memif's -1: no server took the connection. */
		if (ret != 0 && memif_client(&info))
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
