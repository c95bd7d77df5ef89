/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tm_diff: the differential test of lib/tm against the reference model.
 *
 *   tm_diff [--self-check] [--trace] [--config N] STEPS [SEED]
 *
 * Runs at least STEPS steps in total, split evenly over a fixed set of configurations (or only
 * configuration N), each with its own seed derived from SEED (default 1). On the first
 * divergence it prints the seed, the configuration, the step and both answers, and
 * exits 1; `--config N --trace` with the same STEPS and SEED then replays that run
 * step by step.
 *
 * --self-check feeds the reference a deliberately wrong input (see tm_drive_cfg.mutant)
 * and succeeds only when every configuration detects the divergence: the proof that
 * the comparison can fail.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tm_drive.h"
#include "tm_ref.h"

/*
 * From degenerate to roomy: one-entry lists and one-op queues, lists that fill at
 * once, a small sync threshold, many SGEs, and longer lists where handles are
 * reused long after release.
 */
static const struct tm_drive_cfg configs[] = {
	{ .tm = { .max_num_tags = 1, .max_ops = 1, .max_sge = 1, .sync_threshold = 1 },
	  .tag_pool = 2 },
	{ .tm = { .max_num_tags = 4, .max_ops = 4, .max_sge = 1 }, .tag_pool = 4 },
	{ .tm = { .max_num_tags = 8, .max_ops = 16, .max_sge = 4, .sync_threshold = 2 },
	  .tag_pool = 4 },
	{ .tm = { .max_num_tags = 16, .max_ops = 3, .max_sge = DPV_TM_MAX_SGE_LIMIT,
		  .sync_threshold = 1 }, .tag_pool = 6 },
	{ .tm = { .max_num_tags = 32, .max_ops = 8, .max_sge = 2, .sync_threshold = 5 },
	  .tag_pool = 3 },
	{ .tm = { .max_num_tags = 64, .max_ops = 64, .max_sge = 2, .sync_threshold = 8 },
	  .tag_pool = 8 },
	{ .tm = { .max_num_tags = 256, .max_ops = 128, .max_sge = 3 }, .tag_pool = 12 },
	{ .tm = { .max_num_tags = 512, .max_ops = 32, .max_sge = 2, .sync_threshold = 3 },
	  .tag_pool = TM_DRIVE_MAX_TAG_POOL },
	{ .tm = { .max_num_tags = 1000, .max_ops = 1024, .max_sge = 1,
		  .sync_threshold = 32 }, .tag_pool = 16 },
};

#define NCONFIGS (sizeof(configs) / sizeof(configs[0]))

static void
usage(void)
{
	fprintf(stderr, "usage: tm_diff [--self-check] [--trace] [--config N] STEPS [SEED]\n");
	exit(2);
}

static uint64_t
parse_u64(const char *s)
{
	char *end;
	unsigned long long v;

	v = strtoull(s, &end, 0);
	if (*s == '\0' || *end != '\0')
		usage();
	return v;
}

/* Both refuse every capacity of 0 or above its limit. */
static bool
check_create(void)
{
	static const struct dpv_tm_config bad[] = {
		{ .max_num_tags = 0, .max_ops = 1, .max_sge = 1 },
		{ .max_num_tags = DPV_TM_MAX_TAGS_LIMIT + 1, .max_ops = 1, .max_sge = 1 },
		{ .max_num_tags = 1, .max_ops = 0, .max_sge = 1 },
		{ .max_num_tags = 1, .max_ops = DPV_TM_MAX_OPS_LIMIT + 1, .max_sge = 1 },
		{ .max_num_tags = 1, .max_ops = 1, .max_sge = 0 },
		{ .max_num_tags = 1, .max_ops = 1, .max_sge = DPV_TM_MAX_SGE_LIMIT + 1 },
		{ .max_num_tags = UINT32_MAX, .max_ops = UINT32_MAX, .max_sge = UINT32_MAX },
	};
	struct dpv_tm *tm = NULL;
	struct tm_ref *ref = NULL;
	int re, rr;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		re = dpv_tm_create(&bad[i], &tm);
		rr = tm_ref_create(&bad[i], &ref);
		if (re != EINVAL || rr != EINVAL) {
			fprintf(stderr, "tm_diff: create {%" PRIu32 ", %" PRIu32 ", %" PRIu32
				"}: engine %d, reference %d, want EINVAL\n", bad[i].max_num_tags,
				bad[i].max_ops, bad[i].max_sge, re, rr);
			return false;
		}
	}
	return true;
}

/*
 * Run one configuration. Returns 1 on divergence, 0 when the steps ran out, -1 when
 * the run could not start.
 */
static int
run(const struct tm_drive_cfg *cfg, size_t idx, uint64_t base_seed, uint64_t steps,
    bool trace, bool quiet, uint64_t *at)
{
	uint64_t seed = base_seed * 1000003u + idx;
	struct tm_drive *d;
	struct tm_src src;
	uint64_t i;
	bool ok = true;

	tm_src_init_seed(&src, seed);
	d = tm_drive_create(cfg, &src);
	if (d == NULL)
		return -1;
	if (trace)
		tm_drive_trace(d, stdout);
	for (i = 0; ok && i < steps; i++)
		ok = tm_drive_step(d, &src);
	if (ok)
		ok = tm_drive_finish(d);
	*at = tm_drive_steps(d) - 1;
	if (!ok && !quiet) {
		fprintf(stderr, "tm_diff: seed %" PRIu64 " config %zu (its seed %" PRIu64 "): ",
			base_seed, idx, seed);
		tm_drive_report(d, stderr);
		fprintf(stderr, "replay: tm_diff --config %zu --trace %" PRIu64 " %" PRIu64 "\n",
			idx, steps * NCONFIGS, base_seed);
	}
	tm_drive_destroy(d);
	return ok ? 0 : 1;
}

int
main(int argc, char **argv)
{
	uint64_t total = 0, seed = 1, steps, at;
	bool self_check = false, trace = false, have_total = false, have_seed = false;
	size_t first = 0, last = NCONFIGS, c;
	struct tm_drive_cfg cfg;
	struct timespec t0, t1;
	int i, rc, detected = 0;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--self-check") == 0) {
			self_check = true;
		} else if (strcmp(argv[i], "--trace") == 0) {
			trace = true;
		} else if (strcmp(argv[i], "--config") == 0 && i + 1 < argc) {
			first = parse_u64(argv[++i]);
			if (first >= NCONFIGS)
				usage();
			last = first + 1;
		} else if (!have_total) {
			total = parse_u64(argv[i]);
			have_total = true;
		} else if (!have_seed) {
			seed = parse_u64(argv[i]);
			have_seed = true;
		} else {
			usage();
		}
	}
	if (!have_total || total == 0)
		usage();
	/* every configuration runs as many steps whether or not --config picks it */
	steps = (total + NCONFIGS - 1) / NCONFIGS;
	if (!self_check && !check_create())
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (c = first; c < last; c++) {
		cfg = configs[c];
		cfg.mutant = self_check;
		rc = run(&cfg, c, seed, steps, trace, self_check, &at);
		if (rc < 0)
			return 1;
		if (self_check) {
			printf("tm_diff: self-check config %zu: %s at step %" PRIu64 "\n", c,
			       rc ? "divergence detected" : "NOT detected", at);
			detected += rc;
		} else if (rc) {
			return 1;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (self_check) {
		if ((size_t)detected != last - first) {
			fprintf(stderr, "tm_diff: the comparison missed a wrong reference\n");
			return 1;
		}
		return 0;
	}
	printf("tm_diff: %" PRIu64 " steps over %zu configuration(s) (seed %" PRIu64
	       "), no divergence, %.2f s\n", steps * (last - first), last - first, seed,
	       (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	return 0;
}
