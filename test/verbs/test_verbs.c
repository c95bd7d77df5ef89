/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The verbs suite: one process, the two ports of one in-process ring pair (dpv0 and
 * dpv1) connected to each other, driven only through <infiniband/verbs.h>. The DPV_*
 * settings come from the environment (meson gives each run its progress and memory
 * mode); a run by hand gets the inline, --no-huge defaults below. A run asked for
 * hugepages exits 77 (skipped) when the machine has none free.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_verbs.h"

#define SKIP 77


/* The groups, in the order a run without arguments runs them all. */
static const struct {
	const char *name;
	int (*run)(void);
} groups[] = {
	{"device", run_device_tests},   {"rc", run_rc_tests},
	{"srq", run_srq_tests},         {"tm", run_tm_tests},
	{"ud", run_ud_tests},           {"errors", run_error_tests},
	{"channel", run_channel_tests}, {"misuse", run_misuse_tests},
	{"capture", run_capture_tests}, {"compat", run_compat_tests},
	{"threads", run_thread_tests},   {"td", run_td_tests},
	{"timestamp", run_timestamp_tests},
};

static bool asked(int argc, char **argv, const char *name)
{
	int i;

	if (argc < 2)
		return true;
	for (i = 1; i < argc; i++)
		if (strcmp(argv[i], name) == 0)
			return true;
	return false;
}

/*
 * test_verbs [GROUP...]: every group, or only those named (test/vm runs "tm" on two
 * PCI NICs, where the whole suite takes too long under emulation).
 */
int main(int argc, char **argv)
{
	const char *eal, *ipv4;
	int failed = 0, i, j;
	size_t g;

	for (i = 1; i < argc; i++) {
		for (g = 0; g < sizeof(groups) / sizeof(groups[0]); g++)
			if (strcmp(argv[i], groups[g].name) == 0)
				break;
		if (g == sizeof(groups) / sizeof(groups[0])) {
			fprintf(stderr, "no group %s; the groups:", argv[i]);
			for (j = 0; j < (int)(sizeof(groups) / sizeof(groups[0])); j++)
				fprintf(stderr, " %s", groups[j].name);
			fprintf(stderr, "\n");
			return 2;
		}
	}
	sides_env_defaults("0");
	eal = getenv("DPV_EAL_ARGS");
	ipv4 = getenv("DPV_PORT_IPV4");
	if (strstr(eal, "--no-huge") == NULL && !hugepages_free()) {
		printf("no free hugepages: skipped (the --no-huge runs cover the suite)\n");
		return SKIP;
	}
	if (!sides_open(ipv4))
		failed = 1;
	else
		for (g = 0; g < sizeof(groups) / sizeof(groups[0]); g++)
			if (asked(argc, argv, groups[g].name))
				failed += groups[g].run();
	sides_close();
	return failed ? 1 : 0;
}
