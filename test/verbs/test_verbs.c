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

#include "verbs_test.h"

#define SKIP 77

static const char default_eal[] = "-l 0 --no-pci --no-huge --no-shconf -m 512 --no-telemetry "
				  "--log-level=lib.eal:error";
static const char default_ipv4[] = "127.0.20.1,127.0.20.2";

static bool hugepages_free(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[128];
	long n = 0;

	if (f == NULL)
		return false;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "HugePages_Free: %ld", &n) == 1)
			break;
	fclose(f);
	return n > 0;
}

static bool parse_ipv4(const char *s, uint32_t *out)
{
	unsigned int a, b, c, d;

	if (sscanf(s, "%u.%u.%u.%u", &a, &b, &c, &d) != 4 || a > 255 || b > 255 || c > 255 ||
	    d > 255)
		return false;
	*out = a << 24 | b << 16 | c << 8 | d;
	return true;
}

static bool open_side(struct side *s, const char *name, struct ibv_device *dev)
{
	s->name = name;
	s->dev = dev;
	s->ctx = ibv_open_device(dev);
	if (s->ctx == NULL) {
		perror("ibv_open_device");
		return false;
	}
	s->pd = ibv_alloc_pd(s->ctx);
	s->idle_cq = ibv_create_cq(s->ctx, 1, NULL, NULL, 0);
	if (s->pd == NULL || s->idle_cq == NULL || ibv_query_gid(s->ctx, 1, 0, &s->gid) != 0) {
		fprintf(stderr, "%s: cannot set up PD, CQ or GID\n", name);
		return false;
	}
	return true;
}

static void close_side(struct side *s)
{
	if (s->ctx == NULL)
		return;
	if (s->idle_cq != NULL)
		ibv_destroy_cq(s->idle_cq);
	if (s->pd != NULL)
		ibv_dealloc_pd(s->pd);
	ibv_close_device(s->ctx);
}

int main(void)
{
	const char *eal, *ipv4;
	int failed = 0;

	setenv("DPV_EAL_ARGS", default_eal, 0);
	setenv("DPV_RING_PAIRS", "1", 0);
	setenv("DPV_PORT_IPV4", default_ipv4, 0);
	eal = getenv("DPV_EAL_ARGS");
	ipv4 = getenv("DPV_PORT_IPV4");
	if (strstr(eal, "--no-huge") == NULL && !hugepages_free()) {
		printf("no free hugepages: skipped (the --no-huge runs cover the suite)\n");
		return SKIP;
	}
	if (!parse_ipv4(ipv4, &A.ipv4) || strchr(ipv4, ',') == NULL ||
	    !parse_ipv4(strchr(ipv4, ',') + 1, &B.ipv4)) {
		fprintf(stderr, "DPV_PORT_IPV4=%s: want two addresses\n", ipv4);
		return 1;
	}
	dev_list = ibv_get_device_list(&dev_count);
	if (dev_list == NULL || dev_count != 2) {
		fprintf(stderr, "want 2 devices (DPV_RING_PAIRS=1), got %d\n",
			dev_list != NULL ? dev_count : -1);
		return 1;
	}
	if (!open_side(&A, "dpv0", dev_list[0]) || !open_side(&B, "dpv1", dev_list[1]))
		failed = 1;
	if (!failed) {
		failed += run_device_tests();
		failed += run_rc_tests();
		failed += run_srq_tests();
		failed += run_tm_tests();
		failed += run_ud_tests();
		failed += run_error_tests();
		failed += run_channel_tests();
	}
	close_side(&B);
	close_side(&A);
	ibv_free_device_list(dev_list);
	return failed ? 1 : 0;
}
