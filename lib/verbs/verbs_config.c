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
					 .fault_guard = 1,
					 .cm_response_timeout = DPV_DEV_CM_RESPONSE_TIMEOUT_DEFAULT,
					 .cm_retries = DPV_DEV_CM_MAX_RETRIES_DEFAULT,
					 .cm_packet_life_time = DPV_DEV_CM_PACKET_LIFE_TIME_DEFAULT};

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

/* A setting kept as the text it was given: copied as it is. */
struct text_setting {
	const char *env; /* its environment variable */
	const char *key; /* its key in [dpverbs] of the file */
	char *dst;
	size_t size;
};

/* A number setting: @p min to @p max, else refused with what it means (@p what). */
struct number_setting {
	const char *env;
	const char *key;
	const char *what;
	unsigned long min, max;
	uint32_t *dst;
};

static const struct text_setting text_settings[] = {
	{"DPV_EAL_ARGS", "eal_args", dpv_verbs_conf.eal_args, sizeof(dpv_verbs_conf.eal_args)},
	{"DPV_PORT_IPV4", NULL, dpv_verbs_conf.ipv4, sizeof(dpv_verbs_conf.ipv4)},
	{"DPV_PROGRESS", "progress", dpv_verbs_conf.progress, sizeof(dpv_verbs_conf.progress)},
	{"DPV_CAPTURE", "capture", dpv_verbs_conf.capture, sizeof(dpv_verbs_conf.capture)},
};

static const struct number_setting number_settings[] = {
	{"DPV_RING_PAIRS", "ring_pairs", "a number of port pairs", 0, DPV_MAX_DEVS / 2,
	 &dpv_verbs_conf.ring_pairs},
	{"DPV_INLINE_IDLE_US", "inline_idle_us",
	 "the microseconds an inline device may go undriven before the helper thread drives "
	 "it (0: never)",
	 0, DPV_INLINE_IDLE_US_MAX, &dpv_verbs_conf.inline_idle_us},
	{"DPV_ARP_LIFETIME_MS", "arp_lifetime_ms",
	 "the milliseconds a neighbour's MAC is trusted after its last ARP", 1,
	 DPV_ARP_LIFETIME_MS_MAX, &dpv_verbs_conf.arp_lifetime_ms},
	{"DPV_LINK_WAIT_MS", "link_wait_ms",
	 "the milliseconds opening a device waits for its port's link (0: no wait)", 0,
	 DPV_LINK_WAIT_MS_MAX, &dpv_verbs_conf.link_wait_ms},
	{"DPV_LINGER_MS", "linger_ms",
	 "the milliseconds a destroyed RC QP acknowledges its peer's resends at most (0: not "
	 "at all)",
	 0, DPV_LINGER_MS_MAX, &dpv_verbs_conf.linger_ms},
	{"DPV_FAULT_GUARD", "fault_guard",
	 "whether dpverbs' SIGSEGV / SIGBUS handler guards its copies (0: no handler)", 0, 1,
	 &dpv_verbs_conf.fault_guard},
	{"DPV_CM_RESPONSE_TIMEOUT", "cm_response_timeout",
	 "the CM's response timeout as IBTA's exponent (4.096 us x 2^t)", 0, 31,
	 &dpv_verbs_conf.cm_response_timeout},
	{"DPV_CM_RETRIES", "cm_retries", "the times the CM sends a REQ, REP or DREQ again", 0,
	 15, &dpv_verbs_conf.cm_retries},
	{"DPV_CM_PACKET_LIFE_TIME", "cm_packet_life_time",
	 "the CM's packet life time as IBTA's exponent (4.096 us x 2^t)", 0, 31,
	 &dpv_verbs_conf.cm_packet_life_time},
};

#define N_NUMBERS (sizeof(number_settings) / sizeof(number_settings[0]))

/*
 * Take number setting @p s from @p value: from the environment (@p from_env) or the
 * file @p path. 0 (also for no value), or EINVAL said in the words of where it came
 * from.
 */
static int take_number(const struct number_setting *s, const char *value, bool from_env,
		       const char *path)
{
	char *end;
	unsigned long v;

	if (value == NULL || value[0] == '\0')
		return 0;
	errno = 0;
	v = strtoul(value, &end, 10);
	if (!isdigit((unsigned char)value[0]) || *end != '\0' || errno != 0 || v < s->min ||
	    v > s->max) {
		if (from_env)
			dpv_verbs_complain("%s=%s: want %s, %lu to %lu", s->env, value, s->what,
					   s->min, s->max);
		else
			dpv_verbs_complain("%s = %s in [dpverbs] of %s: want %s, %lu to %lu",
					   s->key, value, path, s->what, s->min, s->max);
		return EINVAL;
	}
	*s->dst = (uint32_t)v;
	return 0;
}

/* [port0] ipv4 = ..., [port1] ...: joined into the list DPV_PORT_IPV4 would give. */
static void load_port_ipv4(struct rte_cfgfile *cf)
{
	for (unsigned int i = 0; i < DPV_MAX_DEVS; i++) {
		size_t len = strlen(dpv_verbs_conf.ipv4);
		const char *v;
		char sec[16];

		snprintf(sec, sizeof(sec), "port%u", i);
		v = rte_cfgfile_get_entry(cf, sec, "ipv4");
		if (v == NULL)
			break;
		snprintf(dpv_verbs_conf.ipv4 + len, sizeof(dpv_verbs_conf.ipv4) - len, "%s%s",
			 i ? "," : "", v);
	}
}

/* Environment first; the INI file fills what the environment left unset. */
int dpv_verbs_load_config(void)
{
	const char *path = getenv("DPV_CONFIG");
	bool set_by_env[N_NUMBERS];
	struct rte_cfgfile *cf;

	for (size_t i = 0; i < RTE_DIM(text_settings); i++)
		copy_setting(text_settings[i].dst, text_settings[i].size,
			     getenv(text_settings[i].env));
	for (size_t i = 0; i < N_NUMBERS; i++) {
		const char *v = getenv(number_settings[i].env);

		set_by_env[i] = v != NULL && v[0] != '\0';
		if (take_number(&number_settings[i], v, true, path) != 0)
			return EINVAL;
	}
	if (take_faults(dpv_verbs_conf.faults, getenv("DPV_FAULTS"), NULL, NULL) != 0)
		return EINVAL;
	if (path == NULL || path[0] == '\0')
		return 0;
	cf = rte_cfgfile_load(path, 0);
	if (cf == NULL) {
		dpv_verbs_complain("cannot read DPV_CONFIG file %s: %s", path, strerror(errno));
		return EINVAL;
	}
	for (size_t i = 0; i < RTE_DIM(text_settings); i++)
		if (text_settings[i].key != NULL)
			copy_setting(text_settings[i].dst, text_settings[i].size,
				     rte_cfgfile_get_entry(cf, "dpverbs", text_settings[i].key));
	for (size_t i = 0; i < N_NUMBERS; i++) {
		if (!set_by_env[i] &&
		    take_number(&number_settings[i],
				rte_cfgfile_get_entry(cf, "dpverbs", number_settings[i].key),
				false, path) != 0)
			goto refused;
	}
	if ((dpv_verbs_conf.faults[0] == '\0' && load_port_faults(cf, path) != 0) ||
	    take_faults(dpv_verbs_conf.faults, rte_cfgfile_get_entry(cf, "dpverbs", "faults"),
			"dpverbs", path) != 0)
		goto refused;
	if (dpv_verbs_conf.ipv4[0] == '\0')
		load_port_ipv4(cf);
	rte_cfgfile_close(cf);
	return 0;
refused:
	rte_cfgfile_close(cf);
	return EINVAL;
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

/* TIMEWAIT is two packet life times, as the device's default is (dpv_engine.h). */
int dpv_verbs_apply_cm_timing(struct dpv_dev *dev)
{
	const struct dpv_dev_cm_timing t = {
		.response_timeout = (uint8_t)dpv_verbs_conf.cm_response_timeout,
		.max_retries = (uint8_t)dpv_verbs_conf.cm_retries,
		.packet_life_time = (uint8_t)dpv_verbs_conf.cm_packet_life_time,
		.timewait_ns = 2 * dpv_cm_timeout_ns((uint8_t)dpv_verbs_conf.cm_packet_life_time),
	};

	return dpv_dev_cm_set_timing(dev, &t);
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
