/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Configuration: dpverbs' settings, from the environment first, then the DPV_CONFIG
 * file (an INI file: rte_cfgfile), each refused with words a person can act on; EAL
 * start-up for programs that did not start it; and the progress mode a setting names.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cfgfile.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_service.h>

#include "verbs_priv.h"

#define MAX_EAL_ARGS 64

struct dpv_verbs_conf dpv_verbs_conf = {.inline_idle_us = DPV_INLINE_IDLE_US_DEFAULT,
					 .arp_lifetime_ms = DPV_ARP_LIFETIME_MS_DEFAULT,
					 .link_wait_ms = DPV_LINK_WAIT_MS_DEFAULT,
					 .linger_ms = DPV_LINGER_MS_DEFAULT,
					 .fault_guard = 1};

/* Say what is wrong once, in words a person can act on. */
void dpv_verbs_complain(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void dpv_verbs_complain(const char *fmt, ...)
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
 * refuses (dpv_engine_check_faults()) is refused here, before anything starts.
 * @p section NULL: from DPV_FAULTS.
 */
static int take_faults(char *dst, const char *spec, const char *section, const char *path)
{
	char why[256];

	if (spec == NULL || dst[0] != '\0')
		return 0;
	if (dpv_engine_check_faults(spec, why, sizeof(why)) != 0) {
		if (section == NULL)
			dpv_verbs_complain("DPV_FAULTS: %s", why);
		else
			dpv_verbs_complain("faults in [%s] of %s: %s", section, path, why);
		return EINVAL;
	}
	snprintf(dst, DPV_FAULTS_SPEC_MAX, "%s", spec);
	return 0;
}

/* DPV_FAULTS alone: what a DPDK-native program's devices read of the configuration. */
int dpv_verbs_load_faults_env(void)
{
	return take_faults(dpv_verbs_conf.faults, getenv("DPV_FAULTS"), NULL, NULL);
}

/* Each port's own spec, [portN] faults, from the INI file. */
static int load_port_faults(struct rte_cfgfile *cf, const char *path)
{
	for (unsigned int i = 0; i < DPV_MAX_DEVS; i++) {
		char sec[16];

		snprintf(sec, sizeof(sec), "port%u", i);
		if (take_faults(dpv_verbs_conf.port_faults[i],
				rte_cfgfile_get_entry(cf, sec, "faults"), sec, path) != 0)
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
			dpv_verbs_complain("%s=%s: want %s, %lu to %lu", env, value, what, min,
					   max);
		else
			dpv_verbs_complain("%s = %s in [dpverbs] of %s: want %s, %lu to %lu", key,
					   value, path, what, min, max);
		return EINVAL;
	}
	*out = (uint32_t)v;
	return 0;
}

/* Environment first; the INI file fills what the environment left unset. */
int dpv_verbs_load_config(void)
{
	const char *path = getenv("DPV_CONFIG"), *v;
	struct rte_cfgfile *cf;
	char ring_pairs[16] = "", idle_us[16] = "", arp_ms[16] = "", wait_ms[16] = "",
	     linger_ms[16] = "", guard[16] = "";
	bool idle_from_env, arp_from_env, wait_from_env, linger_from_env, guard_from_env;

	copy_setting(dpv_verbs_conf.eal_args, sizeof(dpv_verbs_conf.eal_args),
		     getenv("DPV_EAL_ARGS"));
	copy_setting(dpv_verbs_conf.ipv4, sizeof(dpv_verbs_conf.ipv4), getenv("DPV_PORT_IPV4"));
	copy_setting(dpv_verbs_conf.progress, sizeof(dpv_verbs_conf.progress),
		     getenv("DPV_PROGRESS"));
	copy_setting(dpv_verbs_conf.capture, sizeof(dpv_verbs_conf.capture), getenv("DPV_CAPTURE"));
	copy_setting(ring_pairs, sizeof(ring_pairs), getenv("DPV_RING_PAIRS"));
	copy_setting(idle_us, sizeof(idle_us), getenv("DPV_INLINE_IDLE_US"));
	copy_setting(arp_ms, sizeof(arp_ms), getenv("DPV_ARP_LIFETIME_MS"));
	copy_setting(wait_ms, sizeof(wait_ms), getenv("DPV_LINK_WAIT_MS"));
	copy_setting(linger_ms, sizeof(linger_ms), getenv("DPV_LINGER_MS"));
	copy_setting(guard, sizeof(guard), getenv("DPV_FAULT_GUARD"));
	idle_from_env = idle_us[0] != '\0';
	arp_from_env = arp_ms[0] != '\0';
	wait_from_env = wait_ms[0] != '\0';
	linger_from_env = linger_ms[0] != '\0';
	guard_from_env = guard[0] != '\0';
	if (take_faults(dpv_verbs_conf.faults, getenv("DPV_FAULTS"), NULL, NULL) != 0)
		return EINVAL;
	if (path != NULL && path[0] != '\0') {
		cf = rte_cfgfile_load(path, 0);
		if (cf == NULL) {
			dpv_verbs_complain("cannot read DPV_CONFIG file %s: %s", path,
					   strerror(errno));
			return EINVAL;
		}
		copy_setting(dpv_verbs_conf.eal_args, sizeof(dpv_verbs_conf.eal_args),
			     rte_cfgfile_get_entry(cf, "dpverbs", "eal_args"));
		copy_setting(dpv_verbs_conf.progress, sizeof(dpv_verbs_conf.progress),
			     rte_cfgfile_get_entry(cf, "dpverbs", "progress"));
		copy_setting(dpv_verbs_conf.capture, sizeof(dpv_verbs_conf.capture),
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
		copy_setting(guard, sizeof(guard),
			     rte_cfgfile_get_entry(cf, "dpverbs", "fault_guard"));
		if ((dpv_verbs_conf.faults[0] == '\0' && load_port_faults(cf, path) != 0) ||
		    take_faults(dpv_verbs_conf.faults,
				rte_cfgfile_get_entry(cf, "dpverbs", "faults"), "dpverbs",
				path) != 0) {
			rte_cfgfile_close(cf);
			return EINVAL;
		}
		/* [port0] ipv4 = ..., [port1] ...: joined into the same list as the env */
		if (dpv_verbs_conf.ipv4[0] == '\0') {
			for (unsigned int i = 0; i < DPV_MAX_DEVS; i++) {
				char sec[16];
				size_t len = strlen(dpv_verbs_conf.ipv4);

				snprintf(sec, sizeof(sec), "port%u", i);
				v = rte_cfgfile_get_entry(cf, sec, "ipv4");
				if (v == NULL)
					break;
				snprintf(dpv_verbs_conf.ipv4 + len,
					 sizeof(dpv_verbs_conf.ipv4) - len, "%s%s", i ? "," : "",
					 v);
			}
		}
		rte_cfgfile_close(cf);
	}
	if (ring_pairs[0] != '\0') {
		char *end;
		unsigned long n = strtoul(ring_pairs, &end, 10);

		if (*end != '\0' || n > DPV_MAX_DEVS / 2) {
			dpv_verbs_complain("DPV_RING_PAIRS=%s: want a number of port pairs, 0..%u",
					   ring_pairs, DPV_MAX_DEVS / 2);
			return EINVAL;
		}
		dpv_verbs_conf.ring_pairs = (unsigned int)n;
	}
	if (take_number(idle_us, idle_from_env, "DPV_INLINE_IDLE_US", "inline_idle_us", path,
			"the microseconds an inline device may go undriven before the helper "
			"thread drives it (0: never)", 0, DPV_INLINE_IDLE_US_MAX,
			&dpv_verbs_conf.inline_idle_us) != 0 ||
	    take_number(arp_ms, arp_from_env, "DPV_ARP_LIFETIME_MS", "arp_lifetime_ms", path,
			"the milliseconds a neighbour's MAC is trusted after its last ARP", 1,
			DPV_ARP_LIFETIME_MS_MAX, &dpv_verbs_conf.arp_lifetime_ms) != 0 ||
	    take_number(wait_ms, wait_from_env, "DPV_LINK_WAIT_MS", "link_wait_ms", path,
			"the milliseconds opening a device waits for its port's link (0: no "
			"wait)", 0, DPV_LINK_WAIT_MS_MAX, &dpv_verbs_conf.link_wait_ms) != 0 ||
	    take_number(linger_ms, linger_from_env, "DPV_LINGER_MS", "linger_ms", path,
			"the milliseconds a destroyed RC QP acknowledges its peer's resends at "
			"most (0: not at all)", 0, DPV_LINGER_MS_MAX,
			&dpv_verbs_conf.linger_ms) != 0 ||
	    take_number(guard, guard_from_env, "DPV_FAULT_GUARD", "fault_guard", path,
			"whether dpverbs' SIGSEGV / SIGBUS handler guards its copies (0: no "
			"handler)", 0, 1, &dpv_verbs_conf.fault_guard) != 0)
		return EINVAL;
	return 0;
}

/*
 * Whether the EAL arguments carry option @p opt: alone, as "opt=value", or for a short
 * option its value glued on, as EAL's getopt takes it ("-a0000:03:00.0").
 */
bool dpv_verbs_eal_has(const char *opt)
{
	size_t n = strlen(opt);
	bool short_opt = n == 2 && opt[0] == '-' && opt[1] != '-';
	const char *p = dpv_verbs_conf.eal_args;

	while ((p = strstr(p, opt)) != NULL) {
		if ((p == dpv_verbs_conf.eal_args || isspace((unsigned char)p[-1])) &&
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

int dpv_verbs_start_eal(void)
{
	char buf[DPV_VERBS_CONFIG_LEN], *argv[MAX_EAL_ARGS + 1], *save = NULL, *tok;
	const char *why;
	int argc = 0;

	if (dpv_verbs_conf.eal_args[0] == '\0') {
		dpv_verbs_complain(
			"no EAL arguments: set DPV_EAL_ARGS (for example \"-l 0 --no-huge "
			"--vdev=net_memif0,role=server\") or eal_args in the [dpverbs] section "
			"of the DPV_CONFIG file");
		return ENODEV;
	}
	snprintf(buf, sizeof(buf), "%s", dpv_verbs_conf.eal_args);
	argv[argc++] = (char *)"dpverbs";
	/* EAL's start-up chatter would bury dpverbs' own message; a --log-level among
	 * the arguments comes later and wins. */
	argv[argc++] = (char *)"--log-level=warning";
	for (tok = strtok_r(buf, " \t\n", &save); tok != NULL; tok = strtok_r(NULL, " \t\n", &save)) {
		if (argc == MAX_EAL_ARGS) {
			dpv_verbs_complain("more than %d EAL arguments", MAX_EAL_ARGS);
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
		if (!dpv_verbs_eal_has("--no-huge") && !dpv_verbs_eal_has("--in-memory") &&
		    hugepages_missing())
			dpv_verbs_complain(
				"EAL did not start with \"%s\": %s: this machine has no free "
				"hugepages or no hugetlbfs mount; reserve and mount them (see "
				"doc/guides/configuration.md) or add --no-huge",
				dpv_verbs_conf.eal_args, why);
		else
			dpv_verbs_complain(
				"EAL did not start with \"%s\": %s (the EAL messages above say "
				"which argument)",
				dpv_verbs_conf.eal_args, why);
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
int dpv_verbs_port_ipv4(unsigned int index, uint32_t *ipv4)
{
	char buf[DPV_VERBS_CONFIG_LEN], *save = NULL, *tok;
	unsigned int i = 0;

	snprintf(buf, sizeof(buf), "%s", dpv_verbs_conf.ipv4);
	for (tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save), i++) {
		while (isspace((unsigned char)*tok))
			tok++;
		if (i == index) {
			if (parse_ipv4(tok, ipv4) != 0) {
				dpv_verbs_complain("DPV_PORT_IPV4: \"%s\" is not an IPv4 address",
						   tok);
				return EINVAL;
			}
			return 0;
		}
	}
	dpv_verbs_complain("no IPv4 address for DPDK port %u: list one per port in DPV_PORT_IPV4 "
			   "(comma-separated, in port-id order)", index);
	return EINVAL;
}

/* The fault spec of a device: its port's own ([portN] faults), else every port's. */
const char *dpv_verbs_faults_of(const struct dpv_device *d)
{
	if (d->index < DPV_MAX_DEVS && dpv_verbs_conf.port_faults[d->index][0] != '\0')
		return dpv_verbs_conf.port_faults[d->index];
	return dpv_verbs_conf.faults;
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
			dpv_verbs_complain(
				"DPV_PROGRESS=%s: lcore %s is not a free EAL worker lcore (give "
				"EAL one with -l)",
				mode, mode + 6);
		return ret;
	}
	if (strcmp(mode, "service") == 0) {
		if (rte_service_lcore_count() <= 0) {
			dpv_verbs_complain(
				"DPV_PROGRESS=service: EAL has no service core to run the device "
				"on: give it one with -s <coremask> or -S <corelist>");
			return EINVAL;
		}
		ret = dpv_dev_start_service(dev);
		if (ret != 0)
			dpv_verbs_complain("DPV_PROGRESS=service: cannot register the service: %s",
					   strerror(ret));
		return ret;
	}
	dpv_verbs_complain("DPV_PROGRESS=%s: want inline, lcore:<id> or service", mode);
	return EINVAL;
}
