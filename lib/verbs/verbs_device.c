/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Devices: configuration (environment, then DPV_CONFIG's INI file), EAL start-up for
 * programs that did not start it, one verbs device per DPDK port, contexts, device and
 * port queries, async events.
 */
#include <ctype.h>
#include <stddef.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <rte_cfgfile.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_service.h>

#include "dpv_verbs.h"
#include "verbs_priv.h"

#define MAX_EAL_ARGS 64
#define CONFIG_LEN 1024

static pthread_mutex_t devices_lock = PTHREAD_MUTEX_INITIALIZER;
static struct dpv_device *devices[DPV_MAX_DEVS];
static unsigned int n_devices;
static bool devices_listed;
static int list_errno;

static struct {
	char eal_args[CONFIG_LEN];
	char ipv4[CONFIG_LEN];
	char progress[64];
	char capture[CONFIG_LEN];
	char faults[DPV_FAULTS_SPEC_MAX];   /* every port's, unless it has its own */
	char port_faults[DPV_MAX_DEVS][DPV_FAULTS_SPEC_MAX]; /* [portN] faults */
	unsigned int ring_pairs;
	uint32_t inline_idle_us;
	uint32_t arp_lifetime_ms;
	uint32_t link_wait_ms;
	uint32_t linger_ms;
} conf = {.inline_idle_us = DPV_INLINE_IDLE_US_DEFAULT,
	  .arp_lifetime_ms = DPV_ARP_LIFETIME_MS_DEFAULT,
	  .link_wait_ms = DPV_LINK_WAIT_MS_DEFAULT,
	  .linger_ms = DPV_LINGER_MS_DEFAULT};

/* Say what is wrong once, in words a person can act on. */
static void complain(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void complain(const char *fmt, ...)
{
	va_list ap;

	fputs("dpverbs: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void copy_setting(char *dst, size_t n, const char *src)
{
	if (src != NULL && dst[0] == '\0')
		snprintf(dst, n, "%s", src);
}

/*
 * Take a fault spec into @p dst unless it holds one already; a spec the faults driver
 * refuses (dpv_engine_check_faults()) is refused here, before anything starts. @p section NULL: from DPV_FAULTS.
 */
static int take_faults(char *dst, const char *spec, const char *section, const char *path)
{
	char why[256];

	if (spec == NULL || dst[0] != '\0')
		return 0;
	if (dpv_engine_check_faults(spec, why, sizeof(why)) != 0) {
		if (section == NULL)
			complain("DPV_FAULTS: %s", why);
		else
			complain("faults in [%s] of %s: %s", section, path, why);
		return EINVAL;
	}
	snprintf(dst, DPV_FAULTS_SPEC_MAX, "%s", spec);
	return 0;
}

/* Each port's own spec, [portN] faults, from the INI file. */
static int load_port_faults(struct rte_cfgfile *cf, const char *path)
{
	for (unsigned int i = 0; i < DPV_MAX_DEVS; i++) {
		char sec[16];

		snprintf(sec, sizeof(sec), "port%u", i);
		if (take_faults(conf.port_faults[i], rte_cfgfile_get_entry(cf, sec, "faults"), sec,
				path) != 0)
			return EINVAL;
	}
	return 0;
}

/*
 * A number setting, from the environment (@p env) or the file's [dpverbs] @p key: @p min
 * to @p max, else refused with what it means (@p what) and EINVAL.
 */
static int take_number(const char *value, bool from_env, const char *env, const char *key,
		       const char *path, const char *what, unsigned long min, unsigned long max,
		       uint32_t *out)
{
	char *end;
	unsigned long v;

	if (value[0] == '\0')
		return 0;
	errno = 0;
	v = strtoul(value, &end, 10);
	if (!isdigit((unsigned char)value[0]) || *end != '\0' || errno != 0 || v < min ||
	    v > max) {
		if (from_env)
			complain("%s=%s: want %s, %lu to %lu", env, value, what, min, max);
		else
			complain("%s = %s in [dpverbs] of %s: want %s, %lu to %lu", key, value, path,
				 what, min, max);
		return EINVAL;
	}
	*out = (uint32_t)v;
	return 0;
}

/* Environment first; the INI file fills what the environment left unset. */
static int load_config(void)
{
	const char *path = getenv("DPV_CONFIG"), *v;
	struct rte_cfgfile *cf;
	char ring_pairs[16] = "", idle_us[16] = "", arp_ms[16] = "", wait_ms[16] = "",
	     linger_ms[16] = "";
	bool idle_from_env, arp_from_env, wait_from_env, linger_from_env;

	copy_setting(conf.eal_args, sizeof(conf.eal_args), getenv("DPV_EAL_ARGS"));
	copy_setting(conf.ipv4, sizeof(conf.ipv4), getenv("DPV_PORT_IPV4"));
	copy_setting(conf.progress, sizeof(conf.progress), getenv("DPV_PROGRESS"));
	copy_setting(conf.capture, sizeof(conf.capture), getenv("DPV_CAPTURE"));
	copy_setting(ring_pairs, sizeof(ring_pairs), getenv("DPV_RING_PAIRS"));
	copy_setting(idle_us, sizeof(idle_us), getenv("DPV_INLINE_IDLE_US"));
	copy_setting(arp_ms, sizeof(arp_ms), getenv("DPV_ARP_LIFETIME_MS"));
	copy_setting(wait_ms, sizeof(wait_ms), getenv("DPV_LINK_WAIT_MS"));
	copy_setting(linger_ms, sizeof(linger_ms), getenv("DPV_LINGER_MS"));
	idle_from_env = idle_us[0] != '\0';
	arp_from_env = arp_ms[0] != '\0';
	wait_from_env = wait_ms[0] != '\0';
	linger_from_env = linger_ms[0] != '\0';
	if (take_faults(conf.faults, getenv("DPV_FAULTS"), NULL, NULL) != 0)
		return EINVAL;
	if (path != NULL && path[0] != '\0') {
		cf = rte_cfgfile_load(path, 0);
		if (cf == NULL) {
			complain("cannot read DPV_CONFIG file %s: %s", path, strerror(errno));
			return EINVAL;
		}
		copy_setting(conf.eal_args, sizeof(conf.eal_args),
			     rte_cfgfile_get_entry(cf, "dpverbs", "eal_args"));
		copy_setting(conf.progress, sizeof(conf.progress),
			     rte_cfgfile_get_entry(cf, "dpverbs", "progress"));
		copy_setting(conf.capture, sizeof(conf.capture),
			     rte_cfgfile_get_entry(cf, "dpverbs", "capture"));
		copy_setting(ring_pairs, sizeof(ring_pairs),
			     rte_cfgfile_get_entry(cf, "dpverbs", "ring_pairs"));
		copy_setting(idle_us, sizeof(idle_us),
			     rte_cfgfile_get_entry(cf, "dpverbs", "inline_idle_us"));
		copy_setting(arp_ms, sizeof(arp_ms),
			     rte_cfgfile_get_entry(cf, "dpverbs", "arp_lifetime_ms"));
		copy_setting(wait_ms, sizeof(wait_ms),
			     rte_cfgfile_get_entry(cf, "dpverbs", "link_wait_ms"));
		copy_setting(linger_ms, sizeof(linger_ms),
			     rte_cfgfile_get_entry(cf, "dpverbs", "linger_ms"));
		if ((conf.faults[0] == '\0' && load_port_faults(cf, path) != 0) ||
		    take_faults(conf.faults, rte_cfgfile_get_entry(cf, "dpverbs", "faults"),
				"dpverbs", path) != 0) {
			rte_cfgfile_close(cf);
			return EINVAL;
		}
		/* [port0] ipv4 = ..., [port1] ...: joined into the same list as the env */
		if (conf.ipv4[0] == '\0') {
			for (unsigned int i = 0; i < DPV_MAX_DEVS; i++) {
				char sec[16];
				size_t len = strlen(conf.ipv4);

				snprintf(sec, sizeof(sec), "port%u", i);
				v = rte_cfgfile_get_entry(cf, sec, "ipv4");
				if (v == NULL)
					break;
				snprintf(conf.ipv4 + len, sizeof(conf.ipv4) - len, "%s%s",
					 i ? "," : "", v);
			}
		}
		rte_cfgfile_close(cf);
	}
	if (ring_pairs[0] != '\0') {
		char *end;
		unsigned long n = strtoul(ring_pairs, &end, 10);

		if (*end != '\0' || n > DPV_MAX_DEVS / 2) {
			complain("DPV_RING_PAIRS=%s: want a number of port pairs, 0..%u",
				 ring_pairs, DPV_MAX_DEVS / 2);
			return EINVAL;
		}
		conf.ring_pairs = (unsigned int)n;
	}
	if (take_number(idle_us, idle_from_env, "DPV_INLINE_IDLE_US", "inline_idle_us", path,
			"the microseconds an inline device may go undriven before the helper "
			"thread drives it (0: never)", 0, DPV_INLINE_IDLE_US_MAX,
			&conf.inline_idle_us) != 0 ||
	    take_number(arp_ms, arp_from_env, "DPV_ARP_LIFETIME_MS", "arp_lifetime_ms", path,
			"the milliseconds a neighbour's MAC is trusted after its last ARP", 1,
			DPV_ARP_LIFETIME_MS_MAX, &conf.arp_lifetime_ms) != 0 ||
	    take_number(wait_ms, wait_from_env, "DPV_LINK_WAIT_MS", "link_wait_ms", path,
			"the milliseconds opening a device waits for its port's link (0: no "
			"wait)", 0, DPV_LINK_WAIT_MS_MAX, &conf.link_wait_ms) != 0 ||
	    take_number(linger_ms, linger_from_env, "DPV_LINGER_MS", "linger_ms", path,
			"the milliseconds a destroyed RC QP acknowledges its peer's resends at "
			"most (0: not at all)", 0, DPV_LINGER_MS_MAX, &conf.linger_ms) != 0)
		return EINVAL;
	return 0;
}

/*
 * Whether the EAL arguments carry option @p opt: alone, as "opt=value", or for a short
 * option its value glued on, as EAL's getopt takes it ("-a0000:03:00.0").
 */
static bool eal_has(const char *opt)
{
	size_t n = strlen(opt);
	bool short_opt = n == 2 && opt[0] == '-' && opt[1] != '-';
	const char *p = conf.eal_args;

	while ((p = strstr(p, opt)) != NULL) {
		if ((p == conf.eal_args || isspace((unsigned char)p[-1])) &&
		    (short_opt || p[n] == '\0' || p[n] == '=' || isspace((unsigned char)p[n])))
			return true;
		p += n;
	}
	return false;
}

/* Whether this machine lacks the hugepage memory EAL needs without --no-huge. */
static bool hugepages_missing(void)
{
	unsigned long free_pages = 0;
	bool mounted = false;
	char line[256];
	FILE *f;

	f = fopen("/proc/meminfo", "r");
	if (f != NULL) {
		while (fgets(line, sizeof(line), f) != NULL)
			if (sscanf(line, "HugePages_Free: %lu", &free_pages) == 1)
				break;
		fclose(f);
	}
	f = fopen("/proc/mounts", "r");
	if (f != NULL) {
		while (fgets(line, sizeof(line), f) != NULL)
			if (strstr(line, " hugetlbfs ") != NULL)
				mounted = true;
		fclose(f);
	}
	return free_pages == 0 || !mounted;
}

static int start_eal(void)
{
	char buf[CONFIG_LEN], *argv[MAX_EAL_ARGS + 1], *save = NULL, *tok;
	const char *why;
	int argc = 0;

	if (conf.eal_args[0] == '\0') {
		complain("no EAL arguments: set DPV_EAL_ARGS (for example \"-l 0 --no-huge "
			 "--vdev=net_memif0,role=server\") or eal_args in the [dpverbs] section "
			 "of the DPV_CONFIG file");
		return ENODEV;
	}
	snprintf(buf, sizeof(buf), "%s", conf.eal_args);
	argv[argc++] = (char *)"dpverbs";
	/* EAL's start-up chatter would bury dpverbs' own message; a --log-level among
	 * the arguments comes later and wins. */
	argv[argc++] = (char *)"--log-level=warning";
	for (tok = strtok_r(buf, " \t\n", &save); tok != NULL; tok = strtok_r(NULL, " \t\n", &save)) {
		if (argc == MAX_EAL_ARGS) {
			complain("more than %d EAL arguments", MAX_EAL_ARGS);
			return EINVAL;
		}
		argv[argc++] = tok;
	}
	argv[argc] = NULL;
	rte_errno = 0;
	if (rte_eal_init(argc, argv) < 0) {
		if (rte_errno == EALREADY)
			return 0; /* the program started EAL itself: use its ports */
		/* Some EAL failures (a --file-prefix another process holds) set no code. */
		why = rte_errno != 0 ? rte_strerror(rte_errno) : "failed";
		if (!eal_has("--no-huge") && !eal_has("--in-memory") && hugepages_missing())
			complain("EAL did not start with \"%s\": %s: this machine has no free "
				 "hugepages or no hugetlbfs mount; reserve and mount them (see "
				 "doc/guides/configuration.md) or add --no-huge", conf.eal_args,
				 why);
		else
			complain("EAL did not start with \"%s\": %s (the EAL messages above say "
				 "which argument)", conf.eal_args, why);
		return ENODEV;
	}
	return 0;
}

static int parse_ipv4(const char *s, uint32_t *out)
{
	unsigned int a, b, c, d;
	char tail;

	if (sscanf(s, "%u.%u.%u.%u%c", &a, &b, &c, &d, &tail) != 4 || a > 255 || b > 255 ||
	    c > 255 || d > 255)
		return EINVAL;
	*out = a << 24 | b << 16 | c << 8 | d;
	return 0;
}

/* The IPv4 address of the index-th port from the comma-separated list. */
static int port_ipv4(unsigned int index, uint32_t *ipv4)
{
	char buf[CONFIG_LEN], *save = NULL, *tok;
	unsigned int i = 0;

	snprintf(buf, sizeof(buf), "%s", conf.ipv4);
	for (tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save), i++) {
		while (isspace((unsigned char)*tok))
			tok++;
		if (i == index) {
			if (parse_ipv4(tok, ipv4) != 0) {
				complain("DPV_PORT_IPV4: \"%s\" is not an IPv4 address", tok);
				return EINVAL;
			}
			return 0;
		}
	}
	complain("no IPv4 address for DPDK port %u: list one per port in DPV_PORT_IPV4 "
		 "(comma-separated, in port-id order)", index);
	return EINVAL;
}

static int add_device(uint16_t port, uint32_t ipv4)
{
	struct dpv_device *d = calloc(1, sizeof(*d));

	if (d == NULL)
		return ENOMEM;
	d->index = n_devices;
	d->ibdev.node_type = IBV_NODE_CA;
	d->ibdev.transport_type = IBV_TRANSPORT_IB;
	snprintf(d->ibdev.name, sizeof(d->ibdev.name), "dpv%u", n_devices);
	snprintf(d->ibdev.dev_name, sizeof(d->ibdev.dev_name), "dpv%u", n_devices);
	snprintf(d->ibdev.dev_path, sizeof(d->ibdev.dev_path), "dpdk-port-%u", port);
	snprintf(d->ibdev.ibdev_path, sizeof(d->ibdev.ibdev_path), "dpdk-port-%u", port);
	d->ethdev_port = port;
	d->ipv4 = ipv4;
	pthread_mutex_init(&d->contexts_lock, NULL);
	devices[n_devices++] = d;
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
	ret = load_config();
	if (ret == 0)
		ret = start_eal();
	for (unsigned int p = 0; ret == 0 && p < conf.ring_pairs; p++) {
		char name[24];

		snprintf(name, sizeof(name), "dpvpair%u", p);
		ret = dpv_engine_ring_pair(name, (int)rte_socket_id(), &a, &b);
		if (ret != 0)
			complain("cannot create ring pair %u: %s", p, strerror(ret));
	}
	if (ret != 0)
		return ret;
	RTE_ETH_FOREACH_DEV(port) {
		if (i == DPV_MAX_DEVS)
			break;
		ret = port_ipv4(i, &ipv4);
		if (ret == 0)
			ret = add_device(port, ipv4);
		if (ret != 0)
			return ret;
		i++;
	}
	if (i == 0 && (eal_has("--vdev") || eal_has("-a") || eal_has("--allow"))) {
		complain("EAL started but none of the ports its arguments name came up (the "
			 "messages above say why: a memif socket already in use, an interface "
			 "that does not exist, a PCI device not bound to vfio-pci): \"%s\"",
			 conf.eal_args);
		return ENODEV;
	}
	if (i == 0) {
		complain("EAL started but found no DPDK port: add --vdev=... (memif, af_packet, "
			 "af_xdp, ring) or bind a NIC to vfio-pci, or set DPV_RING_PAIRS");
		return ENODEV;
	}
	return 0;
}

struct ibv_device **ibv_get_device_list(int *num_devices)
{
	struct ibv_device **list;
	unsigned int i;

	pthread_mutex_lock(&devices_lock);
	if (!devices_listed) {
		list_errno = list_devices();
		devices_listed = true;
	}
	list = calloc(n_devices + 1, sizeof(*list));
	if (list != NULL)
		for (i = 0; i < n_devices; i++)
			list[i] = &devices[i]->ibdev;
	pthread_mutex_unlock(&devices_lock);
	if (list == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	if (num_devices != NULL)
		*num_devices = (int)n_devices;
	if (n_devices == 0)
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

	pthread_mutex_lock(&devices_lock);
	for (unsigned int i = 0; i < n_devices && d == NULL; i++)
		if (devices[i]->dev != NULL && strcmp(devices[i]->ibdev.name, name) == 0)
			d = devices[i];
	pthread_mutex_unlock(&devices_lock);
	return d;
}

unsigned int dpv_verbs_opened_devices(struct dpv_device **out, unsigned int max)
{
	unsigned int n = 0;

	pthread_mutex_lock(&devices_lock);
	for (unsigned int i = 0; i < n_devices && n < max; i++)
		if (devices[i]->dev != NULL)
			out[n++] = devices[i];
	pthread_mutex_unlock(&devices_lock);
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

static __be64 node_guid(const struct dpv_dev *dev)
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
		return node_guid(d->dev);
	/* Not opened (ibv_devices lists without opening): the ethdev has its MAC from
	 * probe on, the one the open keeps. A port without a MAC of its own (ring) gets
	 * one only when opened. */
	if (rte_eth_macaddr_get(d->ethdev_port, &mac) != 0 || rte_is_zero_ether_addr(&mac))
		return 0;
	return guid_of_mac(&mac);
}

/* A device that writes DPV_CAPTURE's file, which every device the process opens writes;
 * once every device of it has stopped, devices opened later are not captured (the file
 * is not made anew). */
static struct dpv_dev *env_capture;
static bool env_capture_over;

/* The pcapng section comment: which DPDK port each device is (the file names its
 * interfaces after DPDK ports), and which devices the capture started with. */
static void capture_comment(char *buf, size_t n, const char *captured)
{
	size_t len = (size_t)snprintf(buf, n, "dpverbs %s, pid %d:", DPV_VERSION, (int)getpid());

	for (unsigned int i = 0; i < n_devices && len < n; i++)
		len += (size_t)snprintf(buf + len, n - len, " %s is DPDK port %u%s",
					devices[i]->ibdev.name, devices[i]->ethdev_port,
					i + 1 < n_devices ? "," : ";");
	if (len < n)
		snprintf(buf + len, n - len, " captured: %s", captured);
}

/* The device name of each ethdev port that has one, for the capture file's interfaces
 * (devices_lock held). */
static const char *const *capture_port_names(const char *names[RTE_MAX_ETHPORTS])
{
	for (unsigned int i = 0; i < RTE_MAX_ETHPORTS; i++)
		names[i] = NULL;
	for (unsigned int i = 0; i < n_devices; i++)
		if (devices[i]->ethdev_port < RTE_MAX_ETHPORTS)
			names[devices[i]->ethdev_port] = devices[i]->ibdev.name;
	return names;
}

/* Stop a device's capture (devices_lock held). @return as dpv_dev_capture_stop() */
static int stop_capture(struct dpv_dev *dev)
{
	if (dev == env_capture) {
		/* The file lives while any device writes it: keep another one to join. */
		env_capture = NULL;
		for (unsigned int i = 0; i < n_devices && env_capture == NULL; i++) {
			struct dpv_dev *o = devices[i]->dev;

			if (o != NULL && o != dev && dpv_dev_capture_same(o, dev))
				env_capture = o;
		}
		env_capture_over = env_capture == NULL;
	}
	return dpv_dev_capture_stop(dev);
}

/*
 * At exit, finish the captures, so their files are whole: devices live as long as the
 * process and nothing else would close them. Runs after linger(), so the capture sees
 * the last frames.
 */
static void finish_captures(void)
{
	pthread_mutex_lock(&devices_lock);
	for (unsigned int i = 0; i < n_devices; i++) {
		struct dpv_dev *dev = devices[i]->dev;
		int ret;

		if (dev == NULL || !dpv_dev_capturing(dev))
			continue;
		ret = stop_capture(dev);
		if (ret != 0)
			complain("%s: the capture file misses frames: writing it failed: %s",
				 devices[i]->ibdev.name, strerror(ret));
	}
	pthread_mutex_unlock(&devices_lock);
}

/* How long devices keep running at exit once nothing comes or goes, and at most. */
#define LINGER_QUIET_MS 20
#define LINGER_MAX_MS 500

/* Frames in and out of every open device; -1 when none has sent anything. */
static int64_t frames_moved(void)
{
	int64_t n = 0;
	bool sent = false;

	for (unsigned int i = 0; i < n_devices; i++) {
		const struct dpv_dev *dev = devices[i]->dev;

		if (dev != NULL) {
			const struct dpv_port_stats *st = dpv_dev_port_stats(dev);
			uint64_t tx = __atomic_load_n(&st->tx_frames, __ATOMIC_RELAXED);

			n += (int64_t)(tx + __atomic_load_n(&st->rx_frames, __ATOMIC_RELAXED));
			sent |= tx != 0;
		}
	}
	return sent ? n : -1;
}

/* The addresses of the process's devices (devices_lock held): peers whose QPs end with
 * the process, and whose devices it drives as long as it lives. */
static unsigned int own_ips(uint32_t *ips)
{
	for (unsigned int i = 0; i < n_devices; i++)
		ips[i] = devices[i]->ipv4;
	return n_devices;
}

/* Whether a device still answers for QPs whose peers are not in this process
 * (dpv_dev_linger_until()). */
static bool any_lingers(uint64_t now)
{
	uint32_t own[DPV_MAX_DEVS];
	unsigned int n = own_ips(own), i;

	for (i = 0; i < n_devices; i++) {
		uint64_t until;

		if (devices[i]->dev == NULL)
			continue;
		until = dpv_dev_linger_until(devices[i]->dev, own, n);
		if (until != 0 && (int64_t)(until - now) > 0)
			return true;
	}
	return false;
}

/*
 * At exit, let what the devices sent reach their peers: a NIC has put a program's
 * last ACKs on the wire before the program sees the completions they answer, but a
 * port's TX ring lives in this process, and a memif peer reads from this process's
 * memory and drops what it had not read when the process goes. A program that exits
 * right after its last completion (ibv_srq_pingpong) took the ACKs of its last
 * receives with it. Its peer's requester then resends, but to QPs that are gone, and its
 * WQEs end in RETRY_EXC_ERR: retransmission cannot mend what the process took away.
 * So the devices run on (their lcore or service, or here) until nothing has come or
 * gone for LINGER_QUIET_MS, which also answers a peer's last resends, and while a QP
 * lingers (reliability.md, "Lingering QPs": an ACK lost on the wire is answered again
 * when its peer resends, within about twice its ACK timeout), at most LINGER_MAX_MS or
 * twice DPV_LINGER_MS.
 */
static void linger(void)
{
	const uint64_t ms = rte_get_tsc_hz() / 1000;
	const uint64_t quiet_for = LINGER_QUIET_MS * ms,
		       at_most = (conf.linger_ms * 2 > LINGER_MAX_MS ? conf.linger_ms * 2
								     : LINGER_MAX_MS) * ms;
	uint64_t start = rte_get_tsc_cycles(), quiet = start, now = start;
	int64_t moved, last;

	pthread_mutex_lock(&devices_lock);
	last = frames_moved();
	while (last >= 0 && (now - quiet < quiet_for || any_lingers(now)) &&
	       now - start < at_most) {
		struct timespec ts = {0, 100000};

		dpv_engine_progress();
		nanosleep(&ts, NULL);
		now = rte_get_tsc_cycles();
		moved = frames_moved();
		if (moved != last) {
			last = moved;
			quiet = now;
		}
	}
	pthread_mutex_unlock(&devices_lock);
}

/* DPV_CAPTURE=<file.pcapng>: every frame of every device of the process goes to that
 * one file, each device's port an interface of it (devices_lock held). */
static int start_env_capture(struct dpv_device *d)
{
	const char *names[RTE_MAX_ETHPORTS];
	char comment[512];
	int ret;

	if (conf.capture[0] == '\0' || env_capture_over)
		return 0;
	if (env_capture != NULL) {
		ret = dpv_dev_capture_join(d->dev, env_capture);
	} else {
		capture_comment(comment, sizeof(comment), "every device it opens (DPV_CAPTURE)");
		ret = dpv_dev_capture_open(d->dev, conf.capture, comment, capture_port_names(names));
		if (ret == 0)
			env_capture = d->dev;
	}
	if (ret != 0)
		complain("DPV_CAPTURE: cannot capture %s into %s: %s", d->ibdev.name,
			 conf.capture, strerror(ret));
	return ret;
}

/* The fault spec of a device: its port's own ([portN] faults), else every port's. */
static const char *faults_of(const struct dpv_device *d)
{
	if (d->index < DPV_MAX_DEVS && conf.port_faults[d->index][0] != '\0')
		return conf.port_faults[d->index];
	return conf.faults;
}

/* Called by the device's owner when its link went up or down: every open context of
 * the device hears of it (ibv_get_async_event(3): IBV_EVENT_PORT_ACTIVE, _PORT_ERR). */
static void port_event(struct dpv_dev *dev, bool up, void *arg)
{
	struct dpv_device *d = arg;

	(void)dev;
	pthread_mutex_lock(&d->contexts_lock);
	for (struct dpv_context *c = d->contexts; c != NULL; c = c->next_on_device)
		dpv_verbs_async_event(c, up ? IBV_EVENT_PORT_ACTIVE : IBV_EVENT_PORT_ERR, NULL);
	pthread_mutex_unlock(&d->contexts_lock);
}

/*
 * Open the device's port unless it is open. Opening a port waits up to @p link_wait_ms
 * for its link (dpv_engine_set_link_wait()): a program that checks its port right after
 * opening it (perftest) finds it ACTIVE when its peer comes within that time, and DOWN,
 * the truth, when not, which is then said once.
 */
static int open_dev(struct dpv_device *d, uint32_t link_wait_ms)
{
	static bool linger_hook, capture_hook;
	uint32_t speed;
	bool up;
	int ret = 0;

	pthread_mutex_lock(&devices_lock);
	if (d->dev == NULL) {
		dpv_engine_set_link_wait(link_wait_ms);
		ret = dpv_dev_open_faults(d->ibdev.name, d->ethdev_port, d->ipv4, faults_of(d),
					  &d->dev);
		if (ret == 0 && link_wait_ms > 0) {
			dpv_dev_link(d->dev, &up, &speed);
			if (!up)
				complain("%s: the link of DPDK port %u is still down after %u ms "
					 "(DPV_LINK_WAIT_MS): the port is DOWN until it comes up "
					 "(a memif server's when its client connects)",
					 d->ibdev.name, d->ethdev_port, link_wait_ms);
		}
		if (ret != 0)
			complain("%s: cannot open DPDK port %u: %s", d->ibdev.name, d->ethdev_port,
				 strerror(ret));
		/* Before the linger hook: atexit runs it after, the capture sees it all. */
		if (ret == 0 && !capture_hook)
			capture_hook = atexit(finish_captures) == 0;
		if (ret == 0)
			ret = start_env_capture(d);
		/* Before the progress mode: nobody polls the port yet. */
		if (ret == 0) {
			d->dev->link_event = port_event;
			d->dev->link_arg = d;
			ret = dpv_dev_set_arp_lifetime(d->dev, conf.arp_lifetime_ms);
		}
		if (ret == 0) {
			dpv_dev_own(d->dev);
			ret = dpv_xport_set_linger_ms(d->dev->xport, conf.linger_ms);
			dpv_dev_disown(d->dev);
		}
		if (ret == 0)
			ret = dpv_verbs_apply_progress(d->dev, conf.progress);
		/* After the mode: a device that went to an lcore or a service needs no
		 * helper. */
		if (ret == 0) {
			ret = dpv_engine_set_inline_idle_us(conf.inline_idle_us);
			if (ret != 0)
				complain("%s: cannot start the helper thread of inline progress: %s",
					 d->ibdev.name, strerror(ret));
		}
		/* Before the linger hook: atexit runs it after, the dump counts the last frames. */
		if (ret == 0)
			dpv_verbs_stats_dump_at_exit(d->ibdev.name, d->dev);
		if (ret == 0 && !linger_hook)
			linger_hook = atexit(linger) == 0;
	}
	pthread_mutex_unlock(&devices_lock);
	return ret;
}

int dpv_verbs_apply_progress(struct dpv_dev *dev, const char *mode)
{
	char *end;
	unsigned long lcore;
	int ret;

	if (mode == NULL || mode[0] == '\0' || strcmp(mode, "inline") == 0)
		return 0;
	if (strncmp(mode, "lcore:", 6) == 0) {
		lcore = strtoul(mode + 6, &end, 10);
		ret = *end == '\0' ? dpv_dev_start_lcore(dev, (unsigned int)lcore) : EINVAL;
		if (ret != 0)
			complain("DPV_PROGRESS=%s: lcore %s is not a free EAL worker lcore (give "
				 "EAL one with -l)", mode, mode + 6);
		return ret;
	}
	if (strcmp(mode, "service") == 0) {
		if (rte_service_lcore_count() <= 0) {
			complain("DPV_PROGRESS=service: EAL has no service core to run the device "
				 "on: give it one with -s <coremask> or -S <corelist>");
			return EINVAL;
		}
		ret = dpv_dev_start_service(dev);
		if (ret != 0)
			complain("DPV_PROGRESS=service: cannot register the service: %s",
				 strerror(ret));
		return ret;
	}
	complain("DPV_PROGRESS=%s: want inline, lcore:<id> or service", mode);
	return EINVAL;
}

static void fill_ops(struct dpv_context *c)
{
	struct verbs_context *v = &c->vctx;

	v->context.ops.poll_cq = dpv_verbs_poll_cq;
	v->context.ops.req_notify_cq = dpv_verbs_req_notify_cq;
	v->context.ops.post_srq_recv = dpv_verbs_post_srq_recv;
	v->context.ops.post_send = dpv_verbs_post_send;
	v->context.ops.post_recv = dpv_verbs_post_recv;
	v->query_port = dpv_verbs_query_port;
	v->post_srq_ops = dpv_verbs_post_srq_ops;
	v->create_cq_ex = dpv_verbs_create_cq_ex;
	v->query_device_ex = dpv_verbs_query_device_ex;
	v->create_qp_ex = dpv_verbs_create_qp_ex;
	v->create_srq_ex = dpv_verbs_create_srq_ex;
	v->advise_mr = dpv_verbs_advise_mr;
	v->sz = sizeof(*v);
	v->context.abi_compat = __VERBS_ABI_IS_EXTENDED;
}

struct ibv_context *dpv_verbs_context_new(struct ibv_device *device, struct dpv_dev *dev)
{
	struct dpv_context *c = calloc(1, sizeof(*c));

	if (c == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	c->device = container_of(device, struct dpv_device, ibdev);
	c->dev = dev;
	c->vctx.context.device = device;
	/* rdma-core's cmd_fd is the command file of a kernel RDMA device, which dpverbs
	 * has none of. Programs dup(), fstat() or poll() it (to share the context with
	 * ibv_import_device(3), which dpverbs refuses with EOPNOTSUPP), so it is a real
	 * descriptor, and an inert one: an empty epoll set, which never polls readable
	 * and on which read() and write() fail with EINVAL. */
	c->vctx.context.cmd_fd = epoll_create1(EPOLL_CLOEXEC);
	c->vctx.context.num_comp_vectors = 1;
	c->vctx.context.async_fd = eventfd(0, EFD_CLOEXEC);
	if (c->vctx.context.async_fd < 0 || c->vctx.context.cmd_fd < 0) {
		if (c->vctx.context.async_fd >= 0)
			close(c->vctx.context.async_fd);
		if (c->vctx.context.cmd_fd >= 0)
			close(c->vctx.context.cmd_fd);
		free(c);
		return NULL;
	}
	pthread_mutex_init(&c->vctx.context.mutex, NULL);
	pthread_mutex_init(&c->async_lock, NULL);
	fill_ops(c);
	pthread_mutex_lock(&c->device->contexts_lock);
	c->next_on_device = c->device->contexts;
	c->device->contexts = c;
	pthread_mutex_unlock(&c->device->contexts_lock);
	return &c->vctx.context;
}

struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	struct dpv_device *d = container_of(device, struct dpv_device, ibdev);
	int ret = open_dev(d, conf.link_wait_ms);

	if (ret != 0) {
		errno = ret;
		return NULL;
	}
	return dpv_verbs_context_new(device, d->dev);
}

int ibv_close_device(struct ibv_context *context)
{
	struct dpv_context *c = to_ctx(context);
	uint32_t own[DPV_MAX_DEVS];
	struct dpv_context **pp;
	unsigned int n_own;
	bool last;

	pthread_mutex_lock(&c->device->contexts_lock);
	for (pp = &c->device->contexts; *pp != c; pp = &(*pp)->next_on_device)
		;
	*pp = c->next_on_device;
	last = c->device->contexts == NULL;
	pthread_mutex_unlock(&c->device->contexts_lock);
	/* As a NIC's firmware goes on answering after the program let go of it: the peers
	 * of the QPs it destroyed last may still resend what they lost the ACK of
	 * (reliability.md, "Lingering QPs"). Nothing to do, no wait, when none was
	 * destroyed after a recent request, or when their peers are the process's own
	 * devices (their QPs resend only while it drives them, and it drives this one as
	 * long). Not under contexts_lock: the owner takes it for a port event. */
	if (last) {
		pthread_mutex_lock(&devices_lock);
		n_own = own_ips(own);
		pthread_mutex_unlock(&devices_lock);
		dpv_dev_linger(c->dev, own, n_own, 2 * conf.linger_ms);
	}
	close(context->cmd_fd);
	close(context->async_fd);
	pthread_mutex_destroy(&c->async_lock);
	free(c);
	return 0;
}

static void fill_device_attr(const struct dpv_dev *dev, struct ibv_device_attr *a)
{
	memset(a, 0, sizeof(*a));
	snprintf(a->fw_ver, sizeof(a->fw_ver), "dpverbs %s", DPV_VERSION);
	a->node_guid = node_guid(dev);
	a->sys_image_guid = a->node_guid;
	a->max_mr_size = DPV_MAX_MR_SIZE;
	a->page_size_cap = 4096;
	/* IEEE OUIs name the makers of hardware; a device of software has none. It
	 * reports 0xffffff, as rdma-core's other software RoCE device (rxe) does, which
	 * is no maker's OUI: programs that act on a vendor (a Mellanox or Amazon device)
	 * find none here, and those that take 0 for "no device" do not. */
	a->vendor_id = 0xffffff;
	a->hw_ver = 1;
	a->max_qp = DPV_MAX_QP - 2;
	a->max_qp_wr = DPV_MAX_QP_WR;
	/* No IBV_DEVICE_SRQ_RESIZE: ibv_modify_srq() does not resize (verbs_srq.c). */
	a->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_PORT_ACTIVE_EVENT |
			      IBV_DEVICE_CHANGE_PHY_PORT;
	a->max_sge = DPV_MAX_SGE;
	a->max_sge_rd = DPV_MAX_SGE;
	a->max_cq = 65536;
	a->max_cqe = DPV_MAX_CQE;
	a->max_mr = DPV_MAX_MR;
	a->max_pd = 65536;
	a->max_qp_rd_atom = DPV_MAX_RD_ATOMIC;
	a->max_qp_init_rd_atom = DPV_MAX_RD_ATOMIC;
	a->max_res_rd_atom = DPV_MAX_RD_ATOMIC * (DPV_MAX_QP - 2);
	/* Atomics execute on the device's owner thread, one at a time: atomic among the
	 * atomics this device executes, which is what IBV_ATOMIC_HCA promises. */
	a->atomic_cap = IBV_ATOMIC_HCA;
	a->max_srq = 65536;
	a->max_srq_wr = DPV_MAX_SRQ_WR;
	a->max_srq_sge = DPV_MAX_SGE;
	a->max_pkeys = 1;
	a->local_ca_ack_delay = 15;
	a->phys_port_cnt = 1;
}

int ibv_query_device(struct ibv_context *context, struct ibv_device_attr *attr)
{
	fill_device_attr(to_ctx(context)->dev, attr);
	return 0;
}

int dpv_verbs_query_device_ex(struct ibv_context *context,
			      const struct ibv_query_device_ex_input *input,
			      struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ibv_device_attr_ex a;

	if (input != NULL && input->comp_mask != 0)
		return EINVAL;
	if (attr_size < sizeof(attr->orig_attr))
		return EINVAL;
	memset(&a, 0, sizeof(a));
	fill_device_attr(to_ctx(context)->dev, &a.orig_attr);
	a.tm_caps.max_rndv_hdr_size = 64;
	a.tm_caps.max_num_tags = DPV_TM_MAX_TAGS_LIMIT;
	a.tm_caps.flags = IBV_TM_CAP_RC;
	a.tm_caps.max_ops = DPV_VERBS_TM_MAX_OPS;
	a.tm_caps.max_sge = DPV_MAX_SGE < DPV_TM_MAX_SGE_LIMIT ? DPV_MAX_SGE : DPV_TM_MAX_SGE_LIMIT;
	/* On-demand paging (verbs_mem.c): the device copies with the CPU, which faults a
	 * region's pages in as it touches them; implicit regions cover the address space. */
	a.odp_caps.general_caps = IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT;
	a.odp_caps.per_transport_caps.rc_odp_caps = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
						    IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ |
						    IBV_ODP_SUPPORT_ATOMIC |
						    IBV_ODP_SUPPORT_SRQ_RECV;
	a.odp_caps.per_transport_caps.ud_odp_caps = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
						    IBV_ODP_SUPPORT_SRQ_RECV;
	a.phys_port_cnt_ex = 1;
	memcpy(attr, &a, attr_size < sizeof(a) ? attr_size : sizeof(a));
	return 0;
}

int dpv_verbs_query_port(struct ibv_context *context, uint8_t port_num,
			 struct ibv_port_attr *attr, size_t attr_len)
{
	struct dpv_dev *dev = to_ctx(context)->dev;
	struct ibv_port_attr a;
	bool up;
	uint32_t speed;

	if (port_num != 1)
		return EINVAL;
	memset(&a, 0, sizeof(a));
	dpv_dev_link(dev, &up, &speed);
	a.state = up ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
	/* What the transport really sends: the link's IP MTU and one mbuf bound it. */
	a.active_mtu = (enum ibv_mtu)dpv_xport_active_mtu(dev->xport);
	a.max_mtu = a.active_mtu;
	a.gid_tbl_len = 1;
	a.port_cap_flags = IBV_PORT_CM_SUP;
	a.max_msg_sz = 1u << 31;
	a.pkey_tbl_len = 1;
	a.max_vl_num = 1;
	a.active_width = 1;      /* 1X */
	/* 1X SDR below 10 Gb/s and for a speed the port cannot tell (0), as the kernel's
	 * RoCE drivers report 1 GbE and an unknown speed (ib_get_eth_speed()). */
	a.active_speed = speed >= 25000 ? 32 : speed >= 10000 ? 8 : 1;
	a.phys_state = up ? 5 : 3; /* LinkUp / Disabled */
	a.link_layer = IBV_LINK_LAYER_ETHERNET;
	memcpy(attr, &a, attr_len < sizeof(a) ? attr_len : sizeof(a));
	return 0;
}

#undef ibv_query_port
int ibv_query_port(struct ibv_context *context, uint8_t port_num,
		   struct _compat_ibv_port_attr *port_attr)
{
	/* The old ABI's struct ends before the fields rdma-core added later (flags,
	 * port_cap_flags2): fill no more than that. */
	return dpv_verbs_query_port(context, port_num, (struct ibv_port_attr *)port_attr,
				    offsetof(struct ibv_port_attr, flags));
}

void dpv_verbs_gid_of(uint32_t ipv4, union ibv_gid *gid)
{
	memset(gid, 0, sizeof(*gid));
	gid->raw[10] = 0xff;
	gid->raw[11] = 0xff;
	gid->raw[12] = (uint8_t)(ipv4 >> 24);
	gid->raw[13] = (uint8_t)(ipv4 >> 16);
	gid->raw[14] = (uint8_t)(ipv4 >> 8);
	gid->raw[15] = (uint8_t)ipv4;
}

bool dpv_verbs_gid_ipv4(const union ibv_gid *gid, uint32_t *ipv4)
{
	static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	if (memcmp(gid->raw, prefix, sizeof(prefix)) != 0)
		return false;
	*ipv4 = (uint32_t)gid->raw[12] << 24 | (uint32_t)gid->raw[13] << 16 |
		(uint32_t)gid->raw[14] << 8 | gid->raw[15];
	return true;
}

int ibv_query_gid(struct ibv_context *context, uint8_t port_num, int index, union ibv_gid *gid)
{
	struct dpv_dev_port_info info;

	if (port_num != 1 || index != 0) {
		errno = EINVAL;
		return -1;
	}
	dpv_dev_port_info(to_ctx(context)->dev, &info);
	dpv_verbs_gid_of(info.ipv4, gid);
	return 0;
}

int _ibv_query_gid_ex(struct ibv_context *context, uint32_t port_num, uint32_t gid_index,
		      struct ibv_gid_entry *entry, uint32_t flags, size_t entry_size)
{
	struct dpv_dev_port_info info;

	if (flags != 0 || port_num != 1 || gid_index != 0 || entry_size < sizeof(*entry))
		return EINVAL;
	memset(entry, 0, sizeof(*entry));
	dpv_dev_port_info(to_ctx(context)->dev, &info);
	dpv_verbs_gid_of(info.ipv4, &entry->gid);
	entry->gid_index = 0;
	entry->port_num = 1;
	entry->gid_type = IBV_GID_TYPE_ROCE_V2;
	return 0;
}

int ibv_query_pkey(struct ibv_context *context, uint8_t port_num, int index, __be16 *pkey)
{
	(void)context;
	if (port_num != 1 || index != 0) {
		errno = EINVAL;
		return -1;
	}
	*pkey = 0xffff;
	return 0;
}

int ibv_get_pkey_index(struct ibv_context *context, uint8_t port_num, __be16 pkey)
{
	(void)context;
	return port_num == 1 && pkey == 0xffff ? 0 : -1;
}

/* ---- async events ---- */

void dpv_verbs_async_event(struct dpv_context *c, enum ibv_event_type type, void *obj)
{
	uint64_t one = 1;

	pthread_mutex_lock(&c->async_lock);
	if (c->async_tail - c->async_head < DPV_ASYNC_QUEUE) {
		c->async_q[c->async_tail % DPV_ASYNC_QUEUE] = (struct dpv_async_event){type, obj};
		c->async_tail++;
		if (write(c->vctx.context.async_fd, &one, sizeof(one)) != sizeof(one))
			c->async_lost++;
	} else {
		c->async_lost++;
	}
	pthread_mutex_unlock(&c->async_lock);
}

int ibv_get_async_event(struct ibv_context *context, struct ibv_async_event *event)
{
	struct dpv_context *c = to_ctx(context);
	struct dpv_async_event ev;
	uint64_t n;

	/* Blocks like the kernel's async fd; the engine helper keeps devices moving. */
	if (read(context->async_fd, &n, sizeof(n)) != sizeof(n))
		return -1;
	pthread_mutex_lock(&c->async_lock);
	ev = c->async_q[c->async_head % DPV_ASYNC_QUEUE];
	c->async_head++;
	/* Several events may be counted by one read: re-arm the fd for the rest. */
	if (c->async_tail != c->async_head) {
		uint64_t rest = c->async_tail - c->async_head;

		if (write(context->async_fd, &rest, sizeof(rest)) != sizeof(rest))
			c->async_lost++;
	}
	pthread_mutex_unlock(&c->async_lock);
	memset(event, 0, sizeof(*event));
	event->event_type = ev.type;
	switch (ev.type) {
	case IBV_EVENT_SRQ_LIMIT_REACHED:
	case IBV_EVENT_SRQ_ERR:
		event->element.srq = ev.obj;
		break;
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		event->element.qp = ev.obj;
		break;
	case IBV_EVENT_CQ_ERR:
		event->element.cq = ev.obj;
		break;
	default:
		event->element.port_num = 1;
		break;
	}
	return 0;
}

void ibv_ack_async_event(struct ibv_async_event *event)
{
	(void)event;
}

int ibv_fork_init(void)
{
	return 0;
}

/* ---- DPDK-native programs (dpv_verbs.h) ---- */

struct ibv_context *dpv_verbs_open_port(uint16_t port_id, uint32_t ipv4)
{
	struct dpv_device *d = NULL;
	int ret = 0;

	if (!rte_eth_dev_is_valid_port(port_id)) {
		errno = ENODEV;
		return NULL;
	}
	if (ipv4 == 0) {
		errno = EINVAL;
		return NULL;
	}
	dpv_verbs_telemetry_register();
	pthread_mutex_lock(&devices_lock);
	/* The program started EAL itself: ibv_get_device_list() lists what it opened. */
	devices_listed = true;
	/* Of the configuration only DPV_FAULTS applies: no file is read. */
	ret = take_faults(conf.faults, getenv("DPV_FAULTS"), NULL, NULL);
	for (unsigned int i = 0; i < n_devices; i++)
		if (devices[i]->ethdev_port == port_id)
			d = devices[i];
	if (ret == 0 && d == NULL) {
		if (n_devices == DPV_MAX_DEVS)
			ret = ENOSPC;
		else
			ret = add_device(port_id, ipv4);
		if (ret == 0)
			d = devices[n_devices - 1];
	}
	pthread_mutex_unlock(&devices_lock);
	/* A program that starts EAL itself waits for its ports' links as it likes. */
	if (ret == 0)
		ret = open_dev(d, 0);
	if (ret != 0) {
		errno = ret;
		return NULL;
	}
	return dpv_verbs_context_new(&d->ibdev, d->dev);
}

int dpv_verbs_set_progress(struct ibv_context *context, const char *mode)
{
	return dpv_verbs_apply_progress(to_ctx(context)->dev, mode);
}

int dpv_verbs_set_inline_idle_us(uint32_t us)
{
	int ret;

	pthread_mutex_lock(&devices_lock);
	ret = dpv_engine_set_inline_idle_us(us);
	if (ret == 0)
		conf.inline_idle_us = us; /* devices opened later keep it */
	pthread_mutex_unlock(&devices_lock);
	return ret;
}

int dpv_verbs_query_engine(struct ibv_context *context, struct dpv_verbs_engine_stats *stats)
{
	const struct dpv_dev *dev = to_ctx(context)->dev;

	if (stats == NULL)
		return EINVAL;
	/* The owner writes them: a snapshot, each counter read whole. */
	stats->polls = __atomic_load_n(&dev->stats.polls, __ATOMIC_RELAXED);
	stats->busy_polls = __atomic_load_n(&dev->stats.busy_polls, __ATOMIC_RELAXED);
	stats->helper_polls = __atomic_load_n(&dev->stats.helper_polls, __ATOMIC_RELAXED);
	return 0;
}

int dpv_verbs_capture_start(struct ibv_context *context, const char *path)
{
	const char *names[RTE_MAX_ETHPORTS];
	struct dpv_context *c;
	char comment[512];
	int ret;

	if (context == NULL || path == NULL || path[0] == '\0')
		return EINVAL;
	c = to_ctx(context);
	pthread_mutex_lock(&devices_lock);
	if (dpv_dev_capturing(c->dev)) {
		ret = EBUSY;
	} else {
		capture_comment(comment, sizeof(comment), c->device->ibdev.name);
		ret = dpv_dev_capture_open(c->dev, path, comment, capture_port_names(names));
	}
	pthread_mutex_unlock(&devices_lock);
	return ret;
}

int dpv_verbs_capture_stop(struct ibv_context *context)
{
	struct dpv_context *c;
	int ret;

	if (context == NULL)
		return EINVAL;
	c = to_ctx(context);
	pthread_mutex_lock(&devices_lock);
	ret = dpv_dev_capturing(c->dev) ? stop_capture(c->dev) : ENOENT;
	pthread_mutex_unlock(&devices_lock);
	return ret;
}
