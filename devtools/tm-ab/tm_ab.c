/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tm_ab: two builds of lib/tm (A and B, their dpv_tm_* symbols renamed A_dpv_tm_* and
 * B_dpv_tm_* by tm-ab.sh) and the reference model, in one process, on the exact cycle
 * of `dpv-perf tm` (a burst of messages matched, then each entry released and added
 * again). Reps of A, B and the reference alternate, so a drift of the machine hits all
 * three; the medians and their ratios are printed. For deciding whether a change to
 * lib/tm is faster when the machine's noise is as large as the change.
 *
 *   tm_ab DEPTH [REPS [OPS_PER_REP [noref]]]     (env B=n forces the burst size)
 *
 * Env CLOCK=cpu times each rep by the process's CPU time instead of the wall clock: on
 * a machine whose cores other processes share, the time this process waited for a
 * core then does not count (what the others do to the caches still does).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <infiniband/tm_types.h>

#include "dpv_tm.h"
#include "tm_ref.h"

#define DECLARE_SIDE(P)                                                                    \
	int P##dpv_tm_create(const struct dpv_tm_config *, struct dpv_tm **);               \
	int P##dpv_tm_post(struct dpv_tm *, struct dpv_tm_op *);                            \
	void P##dpv_tm_exec(struct dpv_tm *, const struct dpv_tm_op *, struct dpv_tm_cqe *); \
	void P##dpv_tm_match_burst(struct dpv_tm *, const struct dpv_tm_tmh *, uint32_t,     \
				   uint32_t, struct dpv_tm_match *);                        \
	int P##dpv_tm_release(struct dpv_tm *, uint32_t);
DECLARE_SIDE(A_)
DECLARE_SIDE(B_)

struct side {
	const char *name;
	int (*create)(const struct dpv_tm_config *, void **);
	int (*post)(void *, struct dpv_tm_op *);
	void (*exec)(void *, const struct dpv_tm_op *, struct dpv_tm_cqe *);
	void (*match_burst)(void *, const struct dpv_tm_tmh *, uint32_t, uint32_t,
			    struct dpv_tm_match *);
	int (*release)(void *, uint32_t);
};

static void ref_match_burst(void *o, const struct dpv_tm_tmh *t, uint32_t n, uint32_t w,
			    struct dpv_tm_match *m)
{
	for (uint32_t i = 0; i < n; i++)
		tm_ref_match(o, &t[i], w > 0, &m[i]);
}

#define SIDE(N, P) { N, (void *)P##dpv_tm_create, (void *)P##dpv_tm_post, \
	(void *)P##dpv_tm_exec, (void *)P##dpv_tm_match_burst, (void *)P##dpv_tm_release }
static const struct side sides[3] = {
	SIDE("A", A_),
	SIDE("B", B_),
	{ "ref", (void *)tm_ref_create, (void *)tm_ref_post, (void *)tm_ref_exec,
	  ref_match_burst, (void *)tm_ref_release },
};

/* The mask each re-ADD carries; not a constant, so the compiler stores it with the
 * tag as dpv-perf's cycle does. */
uint64_t cycle_mask[1] = { DPV_TM_MASK_EXACT };

#define SEQ_LEN (1u << 20)
static const struct dpv_tm_sge sge = { .addr = 0x10000, .length = 4096, .lkey = 1 };

static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* The clock of each rep: CLOCK_MONOTONIC, or with CLOCK=cpu the process's CPU time. */
static clockid_t rep_clock = CLOCK_MONOTONIC;

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(rep_clock, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	uint32_t depth, burst = 1, i, j, k, nsides;
	uint64_t rng = 0x7a6d5eed2024ull, ops, cursor[3] = { 0 };
	uint32_t *seq, *handles[3];
	double *ns[3], med[3];
	uint64_t *tags;
	void *obj[3];
	int reps;

	if (argc < 2 || (depth = (uint32_t)strtoul(argv[1], NULL, 0)) == 0 ||
	    depth > DPV_TM_MAX_TAGS_LIMIT) {
		fprintf(stderr, "usage: %s DEPTH [REPS [OPS_PER_REP [noref]]]\n", argv[0]);
		return 2;
	}
	reps = argc > 2 ? atoi(argv[2]) : 21;
	ops = argc > 3 ? strtoull(argv[3], NULL, 0) : (depth >= 1024 ? 2000000 : 200000);
	nsides = argc > 4 ? 2 : 3;
	if (reps < 1)
		reps = 1;
	while (burst < 32 && burst * 2 <= depth / 8)
		burst *= 2;
	if (getenv("B") != NULL)
		burst = (uint32_t)atoi(getenv("B"));
	if (getenv("CLOCK") != NULL) {
		if (strcmp(getenv("CLOCK"), "cpu") == 0) {
			rep_clock = CLOCK_PROCESS_CPUTIME_ID;
		} else if (strcmp(getenv("CLOCK"), "wall") != 0) {
			fprintf(stderr, "CLOCK=%s: want cpu or wall\n", getenv("CLOCK"));
			return 2;
		}
	}
	if (burst < 1 || burst > 32 || burst > depth) {
		fprintf(stderr, "burst %u: want 1..32 and at most the depth\n", burst);
		return 2;
	}
	tags = malloc(sizeof(*tags) * depth);
	seq = malloc(sizeof(*seq) * SEQ_LEN);
	if (tags == NULL || seq == NULL)
		return 1;
	for (i = 0; i < depth; i++)
		tags[i] = rng_next(&rng) >> 1;
	/* Messages pick entries at random; no entry twice within one burst. */
	for (i = 0; i < SEQ_LEN; i += burst)
		for (j = 0; j < burst; j++) {
again:
			seq[i + j] = (uint32_t)(rng_next(&rng) % depth);
			for (k = 0; k < j; k++)
				if (seq[i + k] == seq[i + j])
					goto again;
		}
	for (k = 0; k < 3; k++) {
		struct dpv_tm_config cfg = { .max_num_tags = depth, .max_ops = 16, .max_sge = 1 };

		handles[k] = malloc(sizeof(*handles[k]) * depth);
		ns[k] = malloc(sizeof(*ns[k]) * (size_t)reps);
		if (handles[k] == NULL || ns[k] == NULL || sides[k].create(&cfg, &obj[k]) != 0)
			return 1;
		for (i = 0; i < depth; i++) {
			struct dpv_tm_op op = { .opcode = DPV_TM_OP_ADD, .tag = tags[i],
						.mask = DPV_TM_MASK_EXACT, .recv_wr_id = i,
						.sg_list = &sge, .num_sge = 1 };
			struct dpv_tm_cqe cqe;

			if (sides[k].post(obj[k], &op) != 0)
				return 1;
			sides[k].exec(obj[k], &op, &cqe);
			handles[k][i] = op.handle;
		}
	}
	for (int r = 0; r < reps; r++) {
		for (k = 0; k < nsides; k++) {
			/* The reference scans half the list per message: fewer ops. */
			uint64_t n = k == 2 && depth >= 1024 ? ops / (depth / 16) : ops;
			struct dpv_tm_op op = { .opcode = DPV_TM_OP_ADD, .mask = DPV_TM_MASK_EXACT,
						.sg_list = &sge, .num_sge = 1 };
			struct dpv_tm_tmh tmh[32];
			struct dpv_tm_match m[32];
			struct dpv_tm_cqe cqe;
			double t0;

			n = (n + burst - 1) / burst * burst;
			t0 = now_ns();
			for (uint64_t x = 0; x < n; x += burst) {
				for (j = 0; j < burst; j++) {
					tmh[j].opcode = IBV_TMH_EAGER;
					tmh[j].tag = tags[seq[(cursor[k] + j) & (SEQ_LEN - 1)]];
				}
				sides[k].match_burst(obj[k], tmh, burst, 0, m);
				for (j = 0; j < burst; j++) {
					uint32_t s = seq[cursor[k] & (SEQ_LEN - 1)];

					if (m[j].kind != DPV_TM_EXPECTED_EAGER || m[j].recv_wr_id != s ||
					    m[j].handle != handles[k][s] ||
					    sides[k].release(obj[k], m[j].handle) != 0) {
						fprintf(stderr, "%s: wrong result at message %" PRIu64 "\n",
							sides[k].name, cursor[k]);
						return 1;
					}
					/* As dpv-perf fills it: tag and mask together. */
					op.tag = tmh[j].tag & cycle_mask[0];
					op.mask = cycle_mask[0];
					op.recv_wr_id = s;
					if (sides[k].post(obj[k], &op) != 0)
						return 1;
					sides[k].exec(obj[k], &op, &cqe);
					handles[k][s] = op.handle;
					cursor[k]++;
				}
			}
			ns[k][r] = (now_ns() - t0) / (double)n;
		}
	}
	for (k = 0; k < nsides; k++) {
		qsort(ns[k], (size_t)reps, sizeof(double), cmp_double);
		med[k] = ns[k][reps / 2];
	}
	printf("depth %u burst %u reps %d%s: A %.2f ns  B %.2f ns  B/A %.3f", depth, burst, reps,
	       rep_clock == CLOCK_MONOTONIC ? "" : " (cpu time)", med[0], med[1], med[1] / med[0]);
	if (nsides == 3)
		printf("  ref %.2f ns  ref/A %.3f  ref/B %.3f", med[2], med[2] / med[0],
		       med[2] / med[1]);
	printf("\n");
	return 0;
}
