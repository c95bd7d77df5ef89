/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The device list: one verbs device per DPDK port, named dpv0, dpv1, ... in port-id
 * order, listed once per process (configuration, EAL, ring pairs, then the ports) or
 * as a DPDK-native program opens its ports; device names, indexes and GUIDs.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_ethdev.h>
#include <rte_lcore.h>

#include "verbs_priv.h"

pthread_mutex_t dpv_verbs_devices_lock = PTHREAD_MUTEX_INITIALIZER;
struct dpv_device *dpv_verbs_devices[DPV_MAX_DEVS];
unsigned int dpv_verbs_n_devices;
static bool devices_listed;
static int list_errno;

static int add_device(uint16_t port, uint32_t ipv4)
{
	struct dpv_device *d = calloc(1, sizeof(*d));

	if (d == NULL)
		return ENOMEM;
	d->index = dpv_verbs_n_devices;
	d->ibdev.node_type = IBV_NODE_CA;
	d->ibdev.transport_type = IBV_TRANSPORT_IB;
	snprintf(d->ibdev.name, sizeof(d->ibdev.name), "dpv%u", dpv_verbs_n_devices);
	snprintf(d->ibdev.dev_name, sizeof(d->ibdev.dev_name), "dpv%u", dpv_verbs_n_devices);
	snprintf(d->ibdev.dev_path, sizeof(d->ibdev.dev_path), "dpdk-port-%u", port);
	snprintf(d->ibdev.ibdev_path, sizeof(d->ibdev.ibdev_path), "dpdk-port-%u", port);
	d->ethdev_port = port;
	d->ipv4 = ipv4;
	pthread_mutex_init(&d->contexts_lock, NULL);
	dpv_verbs_devices[dpv_verbs_n_devices++] = d;
	return 0;
}

/* Once per process: configuration, EAL, one device per port. */
static int list_devices(void)
{
	uint16_t port, a, b;
	unsigned int i = 0;
	uint32_t ipv4;
	int ret;

	/* Before EAL starts its telemetry thread: a client finds the commands at once. */
	dpv_verbs_telemetry_register();
	ret = dpv_verbs_load_config();
	if (ret == 0)
		ret = dpv_verbs_start_eal();
	for (unsigned int p = 0; ret == 0 && p < dpv_verbs_conf.ring_pairs; p++) {
		char name[24];

		snprintf(name, sizeof(name), "dpvpair%u", p);
		ret = dpv_engine_ring_pair(name, (int)rte_socket_id(), &a, &b);
		if (ret != 0)
			dpv_verbs_complain("cannot create ring pair %u: %s", p, strerror(ret));
	}
	if (ret != 0)
		return ret;
	RTE_ETH_FOREACH_DEV(port) {
		if (i == DPV_MAX_DEVS)
			break;
		ret = dpv_verbs_port_ipv4(i, &ipv4);
		if (ret == 0)
			ret = add_device(port, ipv4);
		if (ret != 0)
			return ret;
		i++;
	}
	if (i == 0 && (dpv_verbs_eal_has("--vdev") || dpv_verbs_eal_has("-a") ||
		       dpv_verbs_eal_has("--allow"))) {
		dpv_verbs_complain(
			"EAL started but none of the ports its arguments name came up (the "
			"messages above say why: a memif socket already in use, an interface "
			"that does not exist, a PCI device not bound to vfio-pci): \"%s\"",
			dpv_verbs_conf.eal_args);
		return ENODEV;
	}
	if (i == 0) {
		dpv_verbs_complain(
			"EAL started but found no DPDK port: add --vdev=... (memif, af_packet, "
			"af_xdp, ring) or bind a NIC to vfio-pci, or set DPV_RING_PAIRS");
		return ENODEV;
	}
	return 0;
}

struct ibv_device **ibv_get_device_list(int *num_devices)
{
	struct ibv_device **list;
	unsigned int i;

	pthread_mutex_lock(&dpv_verbs_devices_lock);
	if (!devices_listed) {
		list_errno = list_devices();
		devices_listed = true;
	}
	list = calloc(dpv_verbs_n_devices + 1, sizeof(*list));
	if (list != NULL)
		for (i = 0; i < dpv_verbs_n_devices; i++)
			list[i] = &dpv_verbs_devices[i]->ibdev;
	pthread_mutex_unlock(&dpv_verbs_devices_lock);
	if (list == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	if (num_devices != NULL)
		*num_devices = (int)dpv_verbs_n_devices;
	if (dpv_verbs_n_devices == 0)
		errno = list_errno ? list_errno : ENODEV;
	return list;
}

void ibv_free_device_list(struct ibv_device **list)
{
	free(list);
}

struct dpv_device *dpv_verbs_device_named(const char *name)
{
	struct dpv_device *d = NULL;

	pthread_mutex_lock(&dpv_verbs_devices_lock);
	for (unsigned int i = 0; i < dpv_verbs_n_devices && d == NULL; i++)
		if (dpv_verbs_devices[i]->dev != NULL &&
		    strcmp(dpv_verbs_devices[i]->ibdev.name, name) == 0)
			d = dpv_verbs_devices[i];
	pthread_mutex_unlock(&dpv_verbs_devices_lock);
	return d;
}

unsigned int dpv_verbs_opened_devices(struct dpv_device **out, unsigned int max)
{
	unsigned int n = 0;

	pthread_mutex_lock(&dpv_verbs_devices_lock);
	for (unsigned int i = 0; i < dpv_verbs_n_devices && n < max; i++)
		if (dpv_verbs_devices[i]->dev != NULL)
			out[n++] = dpv_verbs_devices[i];
	pthread_mutex_unlock(&dpv_verbs_devices_lock);
	return n;
}

const char *ibv_get_device_name(struct ibv_device *device)
{
	return device->name;
}

int ibv_get_device_index(struct ibv_device *device)
{
	return (int)container_of(device, struct dpv_device, ibdev)->index;
}

/* The node GUID: the port's MAC as an EUI-64 (as RoCE devices do). */
static __be64 guid_of_mac(const struct rte_ether_addr *mac)
{
	const uint8_t *m = mac->addr_bytes;
	uint8_t g[8] = {m[0] ^ 2, m[1], m[2], 0xff, 0xfe, m[3], m[4], m[5]};
	__be64 v;

	memcpy(&v, g, sizeof(v));
	return v;
}

__be64 dpv_verbs_node_guid(const struct dpv_dev *dev)
{
	struct dpv_dev_port_info info;

	dpv_dev_port_info(dev, &info);
	return guid_of_mac(&info.mac);
}

__be64 ibv_get_device_guid(struct ibv_device *device)
{
	struct dpv_device *d = container_of(device, struct dpv_device, ibdev);
	struct rte_ether_addr mac;

	if (d->dev != NULL)
		return dpv_verbs_node_guid(d->dev);
	/* Not opened (ibv_devices lists without opening): the ethdev has its MAC from
	 * probe on, the one the open keeps. A port without a MAC of its own (ring) gets
	 * one only when opened. */
	if (rte_eth_macaddr_get(d->ethdev_port, &mac) != 0 || rte_is_zero_ether_addr(&mac))
		return 0;
	return guid_of_mac(&mac);
}

/* The device of DPDK port @p port_id for a DPDK-native program (dpv_verbs_open_port()):
 * the one listed for it already, or a new one with address @p ipv4. */
int dpv_verbs_device_of_port(uint16_t port_id, uint32_t ipv4, struct dpv_device **out)
{
	struct dpv_device *d = NULL;
	int ret;

	pthread_mutex_lock(&dpv_verbs_devices_lock);
	/* The program started EAL itself: ibv_get_device_list() lists what it opened. */
	devices_listed = true;
	/* Of the configuration only DPV_FAULTS applies: no file is read. */
	ret = dpv_verbs_load_faults_env();
	for (unsigned int i = 0; i < dpv_verbs_n_devices; i++)
		if (dpv_verbs_devices[i]->ethdev_port == port_id)
			d = dpv_verbs_devices[i];
	if (ret == 0 && d == NULL) {
		if (dpv_verbs_n_devices == DPV_MAX_DEVS)
			ret = ENOSPC;
		else
			ret = add_device(port_id, ipv4);
		if (ret == 0)
			d = dpv_verbs_devices[dpv_verbs_n_devices - 1];
	}
	pthread_mutex_unlock(&dpv_verbs_devices_lock);
	*out = d;
	return ret;
}
