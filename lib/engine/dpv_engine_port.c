/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The port calls the facade needs (dpv_engine.h): a device's link, capture, counters,
 * neighbours, and the settings of the ports it opens. The engine owns the port's
 * state, so what touches it while the device runs takes the device first.
 */
#include "dpv_engine.h"

void dpv_dev_port_info(const struct dpv_dev *dev, struct dpv_dev_port_info *info)
{
	info->ethdev_port = dev->port.ethdev_port;
	info->mtu = dev->port.mtu;
	info->ipv4 = dev->port.ipv4;
	info->mac = dev->port.mac;
}

void dpv_dev_link(struct dpv_dev *dev, bool *up, uint32_t *speed_mbps)
{
	dev->port.ops->link(&dev->port, up, speed_mbps);
}

const struct dpv_port_stats *dpv_dev_port_stats(const struct dpv_dev *dev)
{
	return &dev->port.stats;
}

int dpv_dev_faults_stats(const struct dpv_dev *dev, struct dpv_faults_stats *st)
{
	return dpv_faults_stats(&dev->port, st);
}

int dpv_dev_set_faults(struct dpv_dev *dev, const char *spec, char *why, size_t why_len)
{
	struct dpv_faults_spec s;
	int ret;

	if (dpv_faults_parse(spec, &s, why, why_len) != 0)
		return EINVAL;
	/* The wrapper's generators and queues are device state: its owner's alone. */
	dpv_dev_own(dev);
	ret = dpv_faults_set(&dev->port, &s);
	dpv_dev_disown(dev);
	return ret;
}

bool dpv_dev_resolve(struct dpv_dev *dev, uint32_t ip, struct rte_ether_addr *mac)
{
	bool known;

	/* The ARP table is device state: its owner's alone. */
	dpv_dev_own(dev);
	known = dpv_port_resolve(&dev->port, ip, mac);
	dpv_dev_disown(dev);
	return known;
}

int dpv_dev_set_arp_lifetime(struct dpv_dev *dev, uint32_t ms)
{
	return dpv_port_set_arp_lifetime(&dev->port, ms);
}

void dpv_engine_set_link_wait(uint32_t ms)
{
	dpv_port_set_link_wait(ms);
}

int dpv_engine_check_faults(const char *spec, char *why, size_t why_len)
{
	struct dpv_faults_spec s;

	return dpv_faults_parse(spec, &s, why, why_len);
}

int dpv_engine_ring_pair(const char *name, int socket, uint16_t *a, uint16_t *b)
{
	return dpv_port_ring_pair(name, socket, a, b);
}

/* Hand a source to the device's port (or take it back, NULL) between two of its poll
 * iterations: the owner thread reads port.capture unlocked. */
static void set_port_capture(struct dpv_dev *dev, struct dpv_capture_source *s)
{
	dpv_dev_own(dev);
	dev->port.capture = s;
	dpv_dev_disown(dev);
}

int dpv_dev_capture_open(struct dpv_dev *dev, const char *path, const char *comment,
			 const char *const *port_names)
{
	struct dpv_capture_source *s;
	int ret;

	/* The file is made before the device is touched: it runs on meanwhile. */
	ret = dpv_capture_open(path, comment, port_names, dev->name, dev->port.ethdev_port, &s);
	if (ret == 0)
		set_port_capture(dev, s);
	return ret;
}

int dpv_dev_capture_join(struct dpv_dev *dev, const struct dpv_dev *other)
{
	struct dpv_capture_source *s;
	int ret;

	ret = dpv_capture_add(other->port.capture, dev->name, dev->port.ethdev_port, &s);
	if (ret == 0)
		set_port_capture(dev, s);
	return ret;
}

bool dpv_dev_capturing(const struct dpv_dev *dev)
{
	return __atomic_load_n(&dev->port.capture, __ATOMIC_RELAXED) != NULL;
}

bool dpv_dev_capture_same(const struct dpv_dev *a, const struct dpv_dev *b)
{
	return a->port.capture != NULL && b->port.capture != NULL &&
	       dpv_capture_same(a->port.capture, b->port.capture);
}

int dpv_dev_capture_stop(struct dpv_dev *dev)
{
	struct dpv_capture_source *s = dev->port.capture;

	set_port_capture(dev, NULL);
	return dpv_capture_remove(s);
}
