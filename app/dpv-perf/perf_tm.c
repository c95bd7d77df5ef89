/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpv-perf tm: matching throughput of lib/tm (dpv_tm) against the linear reference
 * model (tm_ref), side by side, on identical operation sequences.
 *
 * Three scenarios, each at several list depths D:
 *  - exact:    D entries with exact masks and distinct random tags. One op is an
 *              EAGER message carrying one of the listed tags (the match consumes the
 *              entry), the release of its handle, and the ADD (post + exec) of the same
 *              tag again, so the list stays at D entries.
 *  - wild1%:   as exact, but 1% of the entries are MPI-like wildcards and 1% of the
 *              messages match only a wildcard.
 *  - steady:   D resident entries that never match; one op is the ADD of a fresh tag,
 *              the message that matches it (found behind the D others) and the release.
 *
 * Everything random is generated before the clock starts; the clock is read around
 * batches of ops. Every result is checked while measuring, so a wrong engine fails the
 * run instead of printing a number.
 */
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/tm_types.h>

#include "dpv_tm.h"
#include "tm_ref.h"

#include "perf.h"

#define TM_CMD "tm"

#define TM_MAX_DEPTHS 16
#define TM_MAX_REPS 100
#define TM_DEFAULT_REPS 5
#define TM_DEFAULT_MIN_TIME 0.2
#define TM_QUICK_REPS 3
#define TM_QUICK_MIN_TIME 0.01
/* Ops a rep needs besides its time, so that a slow cell still averages over a few. */
#define TM_MIN_OPS 8
/* Messages generated per cell; longer runs replay them (the list has moved on). */
#define TM_SEQ_LEN (UINT32_C(1) << 20)
/* Largest burst of messages decided at once (a port's rx burst). */
#define TM_BURST_MAX 32u
/* Largest batch between two clock reads. */
#define TM_BATCH_MAX (UINT32_C(1) << 16)
#define TM_DEFAULT_SEED UINT64_C(0x7a6d5eed2024)

/* The wild1% scenario: the share of wildcard entries and of messages aimed at one. */
#define TM_WILD_PERCENT 1
/* Below this depth 1% of the list rounds to nothing: the list has no wildcard. */
#define TM_WILD_MIN_DEPTH 64
/*
 * Tags follow MPI's usual layout: bits 0..15 the message tag, 16..31 the source rank,
 * 32..63 the communicator. Wildcard entries set bit 63 and have a communicator of
 * their own; exact entries have bit 63 clear. So a message aimed at an exact entry
 * matches it alone, and one aimed at a wildcard matches that wildcard alone, and the
 * expected result of every message is known.
 */
#define TM_WILD_BIT (UINT64_C(1) << 63)
/* Every mask an entry has: exact, then the wildcards. */
static const uint64_t tm_masks[] = {
	DPV_TM_MASK_EXACT,
	~UINT64_C(0xffff),      /* MPI_ANY_TAG */
	~UINT64_C(0xffff0000),  /* MPI_ANY_SOURCE */
	~UINT64_C(0xffffffff),  /* both */
};
#define TM_NB_MASKS (sizeof(tm_masks) / sizeof(tm_masks[0]))
/*
 * A message names its slot and the slot's mask (an index in tm_masks), so that giving
 * the entry back reads only the message arrays, which are walked in order: the timed
 * loop's own memory traffic stays small next to the implementation's.
 */
#define TM_MCLASS_SHIFT 28
#define TM_SLOT_MASK ((UINT32_C(1) << TM_MCLASS_SHIFT) - 1)

/* recv_wr_id of slot s's entry: TM_WRID_BASE + s; of steady's fresh tag k: + k. */
#define TM_WRID_BASE UINT64_C(0x5eed000000000000)

enum tm_scenario {
	TM_SC_EXACT,
	TM_SC_WILD,
	TM_SC_STEADY,
	TM_NB_SC,
};

static const char *const tm_sc_names[TM_NB_SC] = {
	[TM_SC_EXACT] = "exact",
	[TM_SC_WILD] = "wild1%",
	[TM_SC_STEADY] = "steady",
};

/* The entries every implementation is filled with, and the messages it then receives. */
struct tm_cell {
	enum tm_scenario sc;
	uint32_t depth;    /* as requested */
	uint32_t nslots;   /* entries added at setup */
	uint32_t nwild;    /* of them, wildcards */
	uint64_t *slot_tag;
	uint8_t *slot_mclass;  /* index in tm_masks */
	/* Message k carries tag in_tag[k]; in steady, a fresh tag ADDed just before it. */
	uint64_t *in_tag;
	/*
	 * exact, wild1%: message k must match the slot in the low bits of in_slot[k],
	 * whose entry has mask tm_masks[in_slot[k] >> TM_MCLASS_SHIFT] and tag
	 * in_tag[k] & mask (an entry's tag has no bits outside its mask).
	 */
	uint32_t *in_slot;
	/*
	 * exact, wild1%: messages arrive in bursts of this many (a power of two, up to
	 * 32, at most an eighth of the depth), as a port delivers them; no two messages
	 * of one burst want the same entry. steady: 1.
	 */
	uint32_t burst;
};

/* One implementation's calls, over an opaque object. */
struct tm_impl {
	int (*create)(const struct dpv_tm_config *cfg, void **obj);
	void (*destroy)(void *obj);
	int (*post)(void *obj, struct dpv_tm_op *op);
	void (*exec)(void *obj, const struct dpv_tm_op *op, struct dpv_tm_cqe *cqe);
	void (*match)(void *obj, const struct dpv_tm_tmh *tmh, bool srq_wr_available,
		      struct dpv_tm_match *m);
	/* A burst of messages decided in arrival order, srq_wrs ordinary WRs at hand. */
	void (*match_burst)(void *obj, const struct dpv_tm_tmh *tmh, uint32_t n,
			    uint32_t srq_wrs, struct dpv_tm_match *m);
	int (*release)(void *obj, uint32_t handle);
};

/* One implementation running one cell. */
struct tm_run {
	const struct tm_cell *cell;
	const char *name;
	void *obj;
	uint64_t cursor;       /* messages received so far */
	uint32_t *slot_handle; /* the handle each slot's entry has now */
};

typedef int (*tm_batch_fn)(struct tm_run *run, uint32_t n);

/* An implementation as dpv-perf drives it: its calls, specialised batch loops. */
struct tm_side {
	const char *name;
	const struct tm_impl *impl;
	tm_batch_fn cycle;   /* exact, wild1% */
	tm_batch_fn fresh;   /* steady */
};

/* The buffer of every entry: matching never touches it, posting copies it. */
static const struct dpv_tm_sge tm_sge = { .addr = 0x10000, .length = 4096, .lkey = 1 };

static int
eng_create(const struct dpv_tm_config *cfg, void **obj)
{
	struct dpv_tm *tm;
	int rc;

	rc = dpv_tm_create(cfg, &tm);
	if (rc == 0)
		*obj = tm;
	return rc;
}

static void
eng_destroy(void *obj)
{
	dpv_tm_destroy(obj);
}

static inline int
eng_post(void *obj, struct dpv_tm_op *op)
{
	return dpv_tm_post(obj, op);
}

static inline void
eng_exec(void *obj, const struct dpv_tm_op *op, struct dpv_tm_cqe *cqe)
{
	dpv_tm_exec(obj, op, cqe);
}

static inline void
eng_match(void *obj, const struct dpv_tm_tmh *tmh, bool avail, struct dpv_tm_match *m)
{
	dpv_tm_match(obj, tmh, avail, m);
}

static inline void
eng_match_burst(void *obj, const struct dpv_tm_tmh *tmh, uint32_t n, uint32_t srq_wrs,
		struct dpv_tm_match *m)
{
	dpv_tm_match_burst(obj, tmh, n, srq_wrs, m);
}

static inline int
eng_release(void *obj, uint32_t handle)
{
	return dpv_tm_release(obj, handle);
}

static int
ref_create(const struct dpv_tm_config *cfg, void **obj)
{
	struct tm_ref *ref;
	int rc;

	rc = tm_ref_create(cfg, &ref);
	if (rc == 0)
		*obj = ref;
	return rc;
}

static void
ref_destroy(void *obj)
{
	tm_ref_destroy(obj);
}

static inline int
ref_post(void *obj, struct dpv_tm_op *op)
{
	return tm_ref_post(obj, op);
}

static inline void
ref_exec(void *obj, const struct dpv_tm_op *op, struct dpv_tm_cqe *cqe)
{
	tm_ref_exec(obj, op, cqe);
}

static inline void
ref_match(void *obj, const struct dpv_tm_tmh *tmh, bool avail, struct dpv_tm_match *m)
{
	tm_ref_match(obj, tmh, avail, m);
}

/* The linear list has nothing to fetch ahead: a burst is its messages in turn. */
static inline void
ref_match_burst(void *obj, const struct dpv_tm_tmh *tmh, uint32_t n, uint32_t srq_wrs,
		struct dpv_tm_match *m)
{
	for (uint32_t i = 0; i < n; i++) {
		tm_ref_match(obj, &tmh[i], srq_wrs > 0, &m[i]);
		if (m[i].kind == DPV_TM_NO_TAG || m[i].kind == DPV_TM_UNEXPECTED)
			srq_wrs--;
	}
}

static inline int
ref_release(void *obj, uint32_t handle)
{
	return tm_ref_release(obj, handle);
}

static const struct tm_impl tm_engine_impl = {
	.create = eng_create,
	.destroy = eng_destroy,
	.post = eng_post,
	.exec = eng_exec,
	.match = eng_match,
	.match_burst = eng_match_burst,
	.release = eng_release,
};

static const struct tm_impl tm_ref_impl = {
	.create = ref_create,
	.destroy = ref_destroy,
	.post = ref_post,
	.exec = ref_exec,
	.match = ref_match,
	.match_burst = ref_match_burst,
	.release = ref_release,
};

/* splitmix64: small, seedable, good enough to spread tags and pick slots. */
static uint64_t
rng_next(uint64_t *state)
{
	uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

/* Uniform in [0, n). */
static uint32_t
rng_below(uint64_t *state, uint32_t n)
{
	return (uint32_t)(((rng_next(state) >> 32) * n) >> 32);
}

/*
 * A bijection of [0, m] for m = 2^b - 1: xor-shifts and odd multipliers modulo 2^b are
 * each invertible, so distinct indices give distinct tags without a duplicate check.
 */
static uint64_t
tag_of(uint64_t i, uint64_t key, uint64_t m)
{
	uint64_t x = (i + key) & m;

	x ^= x >> 31;
	x = (x * UINT64_C(0x7fb5d329728ea185)) & m;
	x ^= x >> 27;
	x = (x * UINT64_C(0x81dadef4bc2dd44d)) & m;
	x ^= x >> 33;
	return x;
}

static uint32_t
wild_count(enum tm_scenario sc, uint32_t depth)
{
	uint32_t w;

	if (sc != TM_SC_WILD || depth < TM_WILD_MIN_DEPTH)
		return 0;
	w = (uint32_t)(((uint64_t)depth * TM_WILD_PERCENT + 50) / 100);
	return w > 0 ? w : 1;
}

/*
 * Entries a steady cell keeps resident. The engine holds at most
 * DPV_TM_MAX_TAGS_LIMIT entries and the fresh one needs room.
 */
static uint32_t
steady_resident(uint32_t depth)
{
	return depth < DPV_TM_MAX_TAGS_LIMIT ? depth : DPV_TM_MAX_TAGS_LIMIT - 1;
}

static uint32_t
burst_of(enum tm_scenario sc, uint32_t nslots)
{
	uint32_t b = 1;

	if (sc == TM_SC_STEADY)
		return 1;
	while (b < TM_BURST_MAX && b * 2 * 8 <= nslots)
		b *= 2;
	return b;
}

/* Whether slot s is already wanted by an earlier message of message i's burst. */
static bool
in_burst(const struct tm_cell *c, uint32_t i, uint32_t s)
{
	for (uint32_t j = i - i % c->burst; j < i; j++)
		if ((c->in_slot[j] & TM_SLOT_MASK) == s)
			return true;
	return false;
}

static void
cell_free(struct tm_cell *c)
{
	free(c->slot_tag);
	free(c->slot_mclass);
	free(c->in_slot);
	free(c->in_tag);
	memset(c, 0, sizeof(*c));
}

/* The wild1% entries: which slots are wildcards, and the messages' slots. */
static int
cell_gen_wild(struct tm_cell *c, uint64_t *rng, uint64_t key)
{
	uint32_t *perm, *exact, nexact, i, j, t, s, mc;
	uint64_t mask;
	int rc = -1;

	perm = malloc((size_t)c->nslots * sizeof(*perm));
	exact = malloc((size_t)c->nslots * sizeof(*exact));
	if (perm == NULL || exact == NULL)
		goto out;
	for (i = 0; i < c->nslots; i++)
		perm[i] = i;
	/* The first nwild places of a partial shuffle are the wildcard slots. */
	for (i = 0; i < c->nwild; i++) {
		j = i + rng_below(rng, c->nslots - i);
		t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
		s = perm[i];
		mc = 1 + rng_below(rng, TM_NB_MASKS - 1);
		c->slot_mclass[s] = (uint8_t)mc;
		c->slot_tag[s] = (TM_WILD_BIT | ((uint64_t)i << 32) | (rng_next(rng) >> 32)) &
				 tm_masks[mc];
	}
	nexact = 0;
	for (s = 0; s < c->nslots; s++) {
		if (c->slot_mclass[s] != 0)
			continue;
		c->slot_tag[s] = tag_of(nexact, key, ~TM_WILD_BIT);
		exact[nexact++] = s;
	}
	for (i = 0; i < TM_SEQ_LEN; i++) {
		do {
			if (c->nwild > 0 && rng_below(rng, 100) < TM_WILD_PERCENT) {
				s = perm[rng_below(rng, c->nwild)];
				mask = tm_masks[c->slot_mclass[s]];
				c->in_tag[i] = c->slot_tag[s] | (rng_next(rng) & ~mask);
			} else {
				s = exact[rng_below(rng, nexact)];
				c->in_tag[i] = c->slot_tag[s];
			}
		} while (in_burst(c, i, s));
		c->in_slot[i] = s | (uint32_t)c->slot_mclass[s] << TM_MCLASS_SHIFT;
	}
	rc = 0;
out:
	free(perm);
	free(exact);
	return rc;
}

static int
cell_gen(struct tm_cell *c, enum tm_scenario sc, uint32_t depth, uint64_t seed)
{
	uint64_t rng, key;
	uint32_t i;

	memset(c, 0, sizeof(*c));
	c->sc = sc;
	c->depth = depth;
	c->nslots = sc == TM_SC_STEADY ? steady_resident(depth) : depth;
	c->nwild = wild_count(sc, depth);
	c->burst = burst_of(sc, c->nslots);
	/* Each cell's data depends on the seed, the scenario and the depth only. */
	rng = seed ^ ((uint64_t)sc << 56) ^ ((uint64_t)depth << 20);
	rng_next(&rng);
	key = rng_next(&rng);
	c->slot_tag = malloc((size_t)(c->nslots ? c->nslots : 1) * sizeof(*c->slot_tag));
	c->slot_mclass = calloc(c->nslots ? c->nslots : 1, sizeof(*c->slot_mclass));
	c->in_tag = malloc((size_t)TM_SEQ_LEN * sizeof(*c->in_tag));
	if (sc != TM_SC_STEADY)
		c->in_slot = malloc((size_t)TM_SEQ_LEN * sizeof(*c->in_slot));
	if (c->slot_tag == NULL || c->slot_mclass == NULL || c->in_tag == NULL ||
	    (sc != TM_SC_STEADY && c->in_slot == NULL))
		goto nomem;
	if (sc != TM_SC_WILD)
		for (i = 0; i < c->nslots; i++)
			c->slot_tag[i] = tag_of(i, key, UINT64_MAX);
	switch (sc) {
	case TM_SC_EXACT:
		for (i = 0; i < TM_SEQ_LEN; i++) {
			do
				c->in_slot[i] = rng_below(&rng, c->nslots);
			while (in_burst(c, i, c->in_slot[i]));
			c->in_tag[i] = c->slot_tag[c->in_slot[i]];
		}
		break;
	case TM_SC_WILD:
		if (cell_gen_wild(c, &rng, key) != 0)
			goto nomem;
		break;
	default:
		/* Fresh tags continue the residents' indices, so they differ from all. */
		for (i = 0; i < TM_SEQ_LEN; i++)
			c->in_tag[i] = tag_of((uint64_t)c->nslots + i, key, UINT64_MAX);
		break;
	}
	return 0;
nomem:
	perf_error("tm: out of memory generating the %s cell of depth %" PRIu32,
		   tm_sc_names[sc], depth);
	cell_free(c);
	return -1;
}

static __attribute__((cold, noinline)) int
tm_wrong(const struct tm_run *run, const char *what, uint64_t got, uint64_t want)
{
	perf_error("tm: %s gave a wrong result: scenario %s, depth %" PRIu32
		   ", message #%" PRIu64 ": %s is %#" PRIx64 ", expected %#" PRIx64,
		   run->name, tm_sc_names[run->cell->sc], run->cell->depth, run->cursor,
		   what, got, want);
	return -1;
}

/*
 * exact and wild1%: n messages (a multiple of the cell's burst), decided a burst at a
 * time as a port delivers them, then each matched entry released and added again.
 * Inlined into one copy per implementation so each calls its functions directly.
 */
static inline __attribute__((always_inline)) int
batch_cycle(const struct tm_impl *impl, struct tm_run *run, uint32_t n)
{
	const struct tm_cell *c = run->cell;
	struct dpv_tm_tmh tmh[TM_BURST_MAX];
	struct dpv_tm_match m[TM_BURST_MAX];
	struct dpv_tm_op op = {
		.opcode = DPV_TM_OP_ADD,
		.sg_list = &tm_sge,
		.num_sge = 1,
	};
	struct dpv_tm_cqe cqe;
	uint32_t b = c->burst, i, j, k, s;
	uint64_t mask;
	int rc;

	for (i = 0; i < n; i += b) {
		for (j = 0; j < b; j++) {
			tmh[j].opcode = IBV_TMH_EAGER;
			tmh[j].tag = c->in_tag[(uint32_t)(run->cursor + j) & (TM_SEQ_LEN - 1)];
		}
		/* Every message must match: no ordinary WR is offered. */
		impl->match_burst(run->obj, tmh, b, 0, m);
		for (j = 0; j < b; j++) {
			k = (uint32_t)run->cursor & (TM_SEQ_LEN - 1);
			s = c->in_slot[k] & TM_SLOT_MASK;
			mask = tm_masks[c->in_slot[k] >> TM_MCLASS_SHIFT];
			if (__builtin_expect(m[j].kind != DPV_TM_EXPECTED_EAGER, 0))
				return tm_wrong(run, "match kind", m[j].kind, DPV_TM_EXPECTED_EAGER);
			if (__builtin_expect(m[j].recv_wr_id != TM_WRID_BASE + s, 0))
				return tm_wrong(run, "match recv_wr_id", m[j].recv_wr_id,
						TM_WRID_BASE + s);
			if (__builtin_expect(m[j].handle != run->slot_handle[s], 0))
				return tm_wrong(run, "match handle", m[j].handle, run->slot_handle[s]);
			rc = impl->release(run->obj, m[j].handle);
			if (__builtin_expect(rc != 0, 0))
				return tm_wrong(run, "release", (uint64_t)rc, 0);
			op.tag = tmh[j].tag & mask;
			op.mask = mask;
			op.recv_wr_id = TM_WRID_BASE + s;
			rc = impl->post(run->obj, &op);
			if (__builtin_expect(rc != 0, 0))
				return tm_wrong(run, "ADD post", (uint64_t)rc, 0);
			impl->exec(run->obj, &op, &cqe);
			if (__builtin_expect(cqe.status != DPV_TM_ST_SUCCESS, 0))
				return tm_wrong(run, "ADD status", cqe.status, DPV_TM_ST_SUCCESS);
			run->slot_handle[s] = op.handle;
			run->cursor++;
		}
	}
	return 0;
}

/* steady: n fresh tags, each added, matched behind the residents, and released. */
static inline __attribute__((always_inline)) int
batch_fresh(const struct tm_impl *impl, struct tm_run *run, uint32_t n)
{
	const struct tm_cell *c = run->cell;
	struct dpv_tm_tmh tmh = { .opcode = IBV_TMH_EAGER };
	struct dpv_tm_op op = {
		.opcode = DPV_TM_OP_ADD,
		.mask = DPV_TM_MASK_EXACT,
		.sg_list = &tm_sge,
		.num_sge = 1,
	};
	struct dpv_tm_match m;
	struct dpv_tm_cqe cqe;
	uint32_t i, k;
	int rc;

	for (i = 0; i < n; i++) {
		k = (uint32_t)run->cursor & (TM_SEQ_LEN - 1);
		op.tag = c->in_tag[k];
		op.recv_wr_id = TM_WRID_BASE + k;
		rc = impl->post(run->obj, &op);
		if (__builtin_expect(rc != 0, 0))
			return tm_wrong(run, "ADD post", (uint64_t)rc, 0);
		impl->exec(run->obj, &op, &cqe);
		if (__builtin_expect(cqe.status != DPV_TM_ST_SUCCESS, 0))
			return tm_wrong(run, "ADD status", cqe.status, DPV_TM_ST_SUCCESS);
		tmh.tag = op.tag;
		impl->match(run->obj, &tmh, true, &m);
		if (__builtin_expect(m.kind != DPV_TM_EXPECTED_EAGER, 0))
			return tm_wrong(run, "match kind", m.kind, DPV_TM_EXPECTED_EAGER);
		if (__builtin_expect(m.recv_wr_id != op.recv_wr_id, 0))
			return tm_wrong(run, "match recv_wr_id", m.recv_wr_id, op.recv_wr_id);
		if (__builtin_expect(m.handle != op.handle, 0))
			return tm_wrong(run, "match handle", m.handle, op.handle);
		rc = impl->release(run->obj, m.handle);
		if (__builtin_expect(rc != 0, 0))
			return tm_wrong(run, "release", (uint64_t)rc, 0);
		run->cursor++;
	}
	return 0;
}

static int
eng_cycle(struct tm_run *run, uint32_t n)
{
	return batch_cycle(&tm_engine_impl, run, n);
}

static int
eng_fresh(struct tm_run *run, uint32_t n)
{
	return batch_fresh(&tm_engine_impl, run, n);
}

static int
ref_cycle(struct tm_run *run, uint32_t n)
{
	return batch_cycle(&tm_ref_impl, run, n);
}

static int
ref_fresh(struct tm_run *run, uint32_t n)
{
	return batch_fresh(&tm_ref_impl, run, n);
}

enum { TM_ENGINE, TM_REF, TM_NB_SIDES };

static const struct tm_side tm_sides[TM_NB_SIDES] = {
	[TM_ENGINE] = { "engine", &tm_engine_impl, eng_cycle, eng_fresh },
	[TM_REF] = { "reference", &tm_ref_impl, ref_cycle, ref_fresh },
};

/* Create an implementation and add the cell's entries (not timed). */
static int
run_setup(struct tm_run *run, const struct tm_side *side, const struct tm_cell *c)
{
	struct dpv_tm_config cfg = {
		.max_num_tags = c->sc == TM_SC_STEADY ? c->nslots + 1 : c->nslots,
		.max_ops = 16,
		.max_sge = 1,
	};
	struct dpv_tm_op op = { .opcode = DPV_TM_OP_ADD, .sg_list = &tm_sge, .num_sge = 1 };
	struct dpv_tm_cqe cqe;
	uint32_t s;
	int rc;

	memset(run, 0, sizeof(*run));
	run->cell = c;
	run->name = side->name;
	run->slot_handle = malloc((size_t)(c->nslots ? c->nslots : 1) *
				  sizeof(*run->slot_handle));
	if (run->slot_handle == NULL) {
		perf_error("tm: out of memory for the %s", side->name);
		return -1;
	}
	rc = side->impl->create(&cfg, &run->obj);
	if (rc != 0) {
		perf_error("tm: creating the %s with %" PRIu32 " tags: %s", side->name,
			   cfg.max_num_tags, strerror(rc));
		run->obj = NULL;
		return -1;
	}
	for (s = 0; s < c->nslots; s++) {
		op.tag = c->slot_tag[s];
		op.mask = tm_masks[c->slot_mclass[s]];
		op.recv_wr_id = TM_WRID_BASE + s;
		rc = side->impl->post(run->obj, &op);
		if (rc == 0)
			side->impl->exec(run->obj, &op, &cqe);
		if (rc != 0 || cqe.status != DPV_TM_ST_SUCCESS) {
			perf_error("tm: %s: ADD #%" PRIu32 " of the %s setup at depth %" PRIu32
				   " failed (post %d, status %d)", side->name, s,
				   tm_sc_names[c->sc], c->depth, rc, rc == 0 ? cqe.status : -1);
			return -1;
		}
		run->slot_handle[s] = op.handle;
	}
	return 0;
}

static void
run_teardown(struct tm_run *run, const struct tm_side *side)
{
	if (run->obj != NULL)
		side->impl->destroy(run->obj);
	free(run->slot_handle);
	memset(run, 0, sizeof(*run));
}

/* One rep's measurement. */
struct tm_rep {
	uint64_t ops;
	uint64_t ns;
};

/*
 * Run batches until the rep has lasted min_ns and done TM_MIN_OPS ops. Batches start
 * at one op (the reference at a million entries takes milliseconds per op) and double
 * while a batch is short next to the budget, so clock reads stay rare.
 */
static int
measure_rep(struct tm_run *run, tm_batch_fn fn, uint64_t min_ns, struct tm_rep *rep)
{
	uint64_t t0, t, prev, ops = 0;
	uint32_t batch = run->cell->burst; /* batches are whole bursts */

	t0 = perf_now_ns();
	prev = t0;
	for (;;) {
		if (fn(run, batch) != 0)
			return -1;
		ops += batch;
		t = perf_now_ns();
		if (t - t0 >= min_ns && ops >= TM_MIN_OPS)
			break;
		if ((t - prev) * 32 < min_ns && batch < TM_BATCH_MAX)
			batch *= 2;
		prev = t;
	}
	rep->ops = ops;
	rep->ns = t > t0 ? t - t0 : 1;
	return 0;
}

/* One implementation's results in one cell. */
struct tm_side_res {
	struct tm_rep reps[TM_MAX_REPS];
	double med_mops;   /* million ops per second */
	double med_ns;     /* ns per op */
};

struct tm_cell_res {
	enum tm_scenario sc;
	uint32_t depth;
	uint32_t resident;  /* entries in the list besides the one a message matches */
	uint32_t nwild;
	struct tm_side_res side[TM_NB_SIDES];
	double speedup;
};

struct tm_opts {
	bool json;
	bool quick;
	uint32_t depths[TM_MAX_DEPTHS];
	unsigned int nb_depths;
	uint32_t reps;
	double min_time;
	uint64_t seed;
};

static double
rep_mops(const struct tm_rep *r)
{
	return (double)r->ops * 1e3 / (double)r->ns;
}

static double
rep_ns(const struct tm_rep *r)
{
	return (double)r->ns / (double)r->ops;
}

static void
side_medians(struct tm_side_res *sr, uint32_t reps)
{
	double v[TM_MAX_REPS];
	uint32_t r;

	for (r = 0; r < reps; r++)
		v[r] = rep_mops(&sr->reps[r]);
	sr->med_mops = perf_median(v, reps);
	for (r = 0; r < reps; r++)
		v[r] = rep_ns(&sr->reps[r]);
	sr->med_ns = perf_median(v, reps);
}

/* Both implementations in one cell, their reps interleaved so drifts hit both alike. */
static int
measure_cell(const struct tm_opts *o, enum tm_scenario sc, uint32_t depth,
	     struct tm_cell_res *res)
{
	struct tm_run runs[TM_NB_SIDES];
	uint64_t min_ns = (uint64_t)(o->min_time * 1e9);
	struct tm_cell cell;
	unsigned int i;
	uint32_t r;
	int rc = -1;

	memset(runs, 0, sizeof(runs));
	if (cell_gen(&cell, sc, depth, o->seed) != 0)
		return -1;
	res->sc = sc;
	res->depth = depth;
	res->resident = sc == TM_SC_STEADY ? cell.nslots : cell.nslots - 1;
	res->nwild = cell.nwild;
	for (i = 0; i < TM_NB_SIDES; i++)
		if (run_setup(&runs[i], &tm_sides[i], &cell) != 0)
			goto out;
	for (r = 0; r < o->reps; r++) {
		for (i = 0; i < TM_NB_SIDES; i++) {
			if (measure_rep(&runs[i], sc == TM_SC_STEADY ? tm_sides[i].fresh :
				       tm_sides[i].cycle, min_ns, &res->side[i].reps[r]) != 0)
				goto out;
		}
	}
	for (i = 0; i < TM_NB_SIDES; i++)
		side_medians(&res->side[i], o->reps);
	res->speedup = res->side[TM_ENGINE].med_mops / res->side[TM_REF].med_mops;
	rc = 0;
out:
	for (i = 0; i < TM_NB_SIDES; i++)
		run_teardown(&runs[i], &tm_sides[i]);
	cell_free(&cell);
	return rc;
}

/* The targets the engine is held to. */
enum tm_target_kind { TM_TGT_MOPS, TM_TGT_SPEEDUP };

struct tm_target {
	const char *name;
	enum tm_scenario sc;
	uint32_t depth;
	enum tm_target_kind kind;
	double threshold;
};

static const struct tm_target tm_targets[] = {
	{ "exact depth 65536: engine >= 30 Mmatch/s", TM_SC_EXACT, 65536, TM_TGT_MOPS, 30.0 },
	{ "exact depth 65536: engine >= 1000x reference", TM_SC_EXACT, 65536, TM_TGT_SPEEDUP,
	  1000.0 },
	{ "exact depth 1: engine no slower than reference", TM_SC_EXACT, 1, TM_TGT_SPEEDUP,
	  1.0 },
};
#define TM_NB_TARGETS (sizeof(tm_targets) / sizeof(tm_targets[0]))

/* The target's value, or NULL-like false when no cell measured it. */
static bool
target_value(const struct tm_target *t, const struct tm_cell_res *res, unsigned int n,
	     double *val)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		if (res[i].sc != t->sc || res[i].depth != t->depth)
			continue;
		*val = t->kind == TM_TGT_MOPS ? res[i].side[TM_ENGINE].med_mops : res[i].speedup;
		return true;
	}
	return false;
}

static const char *
target_verdict(const struct tm_target *t, const struct tm_cell_res *res, unsigned int n,
	       double *val)
{
	if (!target_value(t, res, n, val))
		return "NOT MEASURED";
	return *val >= t->threshold ? "PASS" : "MISS";
}

static const struct perf_table_col tm_cols[] = {
	{ "scenario", 8 },
	{ "depth", 8 },
	{ "engine Mmatch/s", 15 },
	{ "engine ns/op", 12 },
	{ "ref Mmatch/s", 12 },
	{ "ref ns/op", 12 },
	{ "speedup", 10 },
};
#define TM_NB_COLS (sizeof(tm_cols) / sizeof(tm_cols[0]))

static void
table_intro(const struct tm_opts *o)
{
	unsigned int i;

	printf("dpv-perf tm: tag matching, dpv_tm (engine) vs tm_ref (linear reference)\n"
	       "  exact, wild1%%: one op = an EAGER message matched (consuming its entry) +\n"
	       "    the handle released + the same tag ADDed again (post + exec,\n"
	       "    unsignaled), so the list stays at <depth> entries; the whole cycle is\n"
	       "    timed. wild1%%: 1%% of the entries are wildcards (none below depth %d)\n"
	       "    and 1%% of the messages match only a wildcard.\n"
	       "  steady: one op = ADD of a fresh tag + its message matched behind <depth>\n"
	       "    resident entries + release.\n"
	       "  Mmatch/s = million ops per second. Median of %" PRIu32 " reps; a rep runs\n"
	       "    >= %.3f s and >= %d ops. seed %#" PRIx64 ", depths",
	       TM_WILD_MIN_DEPTH, o->reps, o->min_time, TM_MIN_OPS, o->seed);
	for (i = 0; i < o->nb_depths; i++)
		printf("%c%" PRIu32, i == 0 ? ' ' : ',', o->depths[i]);
	printf("\n\n");
	perf_table_header(stdout, tm_cols, TM_NB_COLS);
}

static void
table_row(const struct tm_cell_res *r)
{
	char cells[TM_NB_COLS][PERF_CELL_LEN];

	snprintf(cells[0], sizeof(cells[0]), "%s", tm_sc_names[r->sc]);
	snprintf(cells[1], sizeof(cells[1]), "%" PRIu32 "%s",
		 r->sc == TM_SC_STEADY ? r->resident : r->depth,
		 r->sc == TM_SC_STEADY && r->resident != r->depth ? "*" : "");
	snprintf(cells[2], sizeof(cells[2]), "%.3f", r->side[TM_ENGINE].med_mops);
	snprintf(cells[3], sizeof(cells[3]), "%.1f", r->side[TM_ENGINE].med_ns);
	snprintf(cells[4], sizeof(cells[4]), "%.4f", r->side[TM_REF].med_mops);
	snprintf(cells[5], sizeof(cells[5]), "%.1f", r->side[TM_REF].med_ns);
	snprintf(cells[6], sizeof(cells[6]), "%.2fx", r->speedup);
	perf_table_row(stdout, tm_cols, TM_NB_COLS, cells);
}

static void
table_outro(const struct tm_cell_res *res, unsigned int n)
{
	const struct tm_target *t;
	const char *verdict;
	unsigned int i;
	double val = 0;

	for (i = 0; i < n; i++) {
		if (res[i].sc == TM_SC_STEADY && res[i].resident != res[i].depth) {
			printf("* steady at depth %" PRIu32 ": %" PRIu32 " resident entries, "
			       "as the fresh one needs room within the %u-entry limit.\n",
			       res[i].depth, res[i].resident, DPV_TM_MAX_TAGS_LIMIT);
			break;
		}
	}
	printf("\ntargets:\n");
	for (i = 0; i < TM_NB_TARGETS; i++) {
		t = &tm_targets[i];
		verdict = target_verdict(t, res, n, &val);
		if (strcmp(verdict, "NOT MEASURED") == 0)
			printf("  %-50s %12s  %s\n", t->name, "-", verdict);
		else if (t->kind == TM_TGT_MOPS)
			printf("  %-50s %10.2f M  %s\n", t->name, val, verdict);
		else
			printf("  %-50s %11.2fx  %s\n", t->name, val, verdict);
	}
}

static void
json_side(struct perf_json *j, const char *key, const struct tm_side_res *sr,
	  uint32_t reps)
{
	uint32_t r;

	perf_json_object_begin(j, key);
	perf_json_double(j, "median_mops", sr->med_mops);
	perf_json_double(j, "median_ns_per_op", sr->med_ns);
	perf_json_array_begin(j, "reps");
	for (r = 0; r < reps; r++) {
		perf_json_object_begin(j, NULL);
		perf_json_u64(j, "ops", sr->reps[r].ops);
		perf_json_u64(j, "ns", sr->reps[r].ns);
		perf_json_double(j, "mops", rep_mops(&sr->reps[r]));
		perf_json_double(j, "ns_per_op", rep_ns(&sr->reps[r]));
		perf_json_object_end(j);
	}
	perf_json_array_end(j);
	perf_json_object_end(j);
}

static void
json_report(const struct tm_opts *o, const struct tm_cell_res *res, unsigned int n)
{
	const struct tm_target *t;
	struct perf_json j;
	const char *verdict;
	char buf[32];
	unsigned int i;
	double val;

	perf_json_init(&j, stdout);
	perf_json_object_begin(&j, NULL);
	perf_json_str(&j, "benchmark", "tm");
	perf_json_object_begin(&j, "config");
	perf_json_array_begin(&j, "depths");
	for (i = 0; i < o->nb_depths; i++)
		perf_json_u64(&j, NULL, o->depths[i]);
	perf_json_array_end(&j);
	perf_json_u64(&j, "reps", o->reps);
	perf_json_double(&j, "min_time_s", o->min_time);
	perf_json_u64(&j, "min_ops", TM_MIN_OPS);
	perf_json_bool(&j, "quick", o->quick);
	/* As text: a 64-bit seed does not survive JSON readers that use doubles. */
	snprintf(buf, sizeof(buf), "%#" PRIx64, o->seed);
	perf_json_str(&j, "seed", buf);
	perf_json_u64(&j, "wild_percent", TM_WILD_PERCENT);
	perf_json_u64(&j, "wild_min_depth", TM_WILD_MIN_DEPTH);
	perf_json_array_begin(&j, "wild_masks");
	for (i = 1; i < TM_NB_MASKS; i++) {
		snprintf(buf, sizeof(buf), "%#018" PRIx64, tm_masks[i]);
		perf_json_str(&j, NULL, buf);
	}
	perf_json_array_end(&j);
	perf_json_str(&j, "op_cycle", "match EAGER + release + ADD (post + exec), timed whole");
	perf_json_str(&j, "op_steady", "ADD fresh tag (post + exec) + match + release");
	perf_json_str(&j, "mops", "million ops per second");
	perf_json_object_end(&j);
	perf_json_array_begin(&j, "cells");
	for (i = 0; i < n; i++) {
		perf_json_object_begin(&j, NULL);
		perf_json_str(&j, "scenario", tm_sc_names[res[i].sc]);
		perf_json_u64(&j, "depth", res[i].depth);
		/* Entries in the list besides the one each message matches. */
		perf_json_u64(&j, "resident", res[i].resident);
		perf_json_u64(&j, "wildcards", res[i].nwild);
		json_side(&j, "engine", &res[i].side[TM_ENGINE], o->reps);
		json_side(&j, "reference", &res[i].side[TM_REF], o->reps);
		perf_json_double(&j, "speedup", res[i].speedup);
		perf_json_object_end(&j);
	}
	perf_json_array_end(&j);
	perf_json_array_begin(&j, "targets");
	for (i = 0; i < TM_NB_TARGETS; i++) {
		t = &tm_targets[i];
		val = 0;
		verdict = target_verdict(t, res, n, &val);
		perf_json_object_begin(&j, NULL);
		perf_json_str(&j, "name", t->name);
		perf_json_str(&j, "scenario", tm_sc_names[t->sc]);
		perf_json_u64(&j, "depth", t->depth);
		perf_json_str(&j, "metric", t->kind == TM_TGT_MOPS ? "engine_mops" : "speedup");
		perf_json_double(&j, "threshold", t->threshold);
		if (strcmp(verdict, "NOT MEASURED") == 0)
			perf_json_double(&j, "value", NAN);
		else
			perf_json_double(&j, "value", val);
		perf_json_str(&j, "verdict", verdict);
		perf_json_object_end(&j);
	}
	perf_json_array_end(&j);
	perf_json_object_end(&j);
	perf_json_finish(&j);
}

static void
tm_help(void)
{
	printf("usage: dpv-perf tm [--json] [--depths D,D,...] [--reps N] [--min-time S]\n"
	       "                   [--quick] [--seed N]\n\n"
	       "Matching throughput of the dpv_tm engine and of the linear reference model,\n"
	       "side by side, at each list depth, in three scenarios:\n"
	       "  exact   entries with exact masks; a message matches one, which is released\n"
	       "          and ADDed again (the list keeps its depth)\n"
	       "  wild1%%  as exact with 1%% wildcard entries and 1%% of messages for them\n"
	       "  steady  ADD of a fresh tag, its message, release, behind <depth> entries\n\n"
	       "  --json          one JSON object on stdout instead of the table\n"
	       "  --depths LIST   list depths, 1..%u (default 1,64,1024,65536,1048575)\n"
	       "  --reps N        repetitions per cell, median reported, 1..%d (default %d)\n"
	       "  --min-time S    seconds each repetition lasts at least (default %.1f)\n"
	       "  --quick         a short run for the test suite: %d reps of %.2f s\n"
	       "                  (explicit --reps / --min-time still apply)\n"
	       "  --seed N        seed of the tags and message order (default %#" PRIx64 ")\n"
	       "  --help          this text\n\n"
	       "Every result is checked; a wrong one fails the run with exit status 1.\n"
	       "A missed target is reported as MISS with exit status 0.\n",
	       DPV_TM_MAX_TAGS_LIMIT, TM_MAX_REPS, TM_DEFAULT_REPS, TM_DEFAULT_MIN_TIME,
	       TM_QUICK_REPS, TM_QUICK_MIN_TIME, TM_DEFAULT_SEED);
}

enum { OPT_JSON = 256, OPT_DEPTHS, OPT_REPS, OPT_MIN_TIME, OPT_QUICK, OPT_SEED };

/* The options as given, before --quick fills in the others. */
struct tm_args {
	struct tm_opts *o;
	bool reps_set, min_time_set;
};

static int
tm_opt(void *ctx, int c, const char *arg)
{
	struct tm_args *a = ctx;
	struct tm_opts *o = a->o;
	int n;

	switch (c) {
	case OPT_JSON:
		o->json = true;
		break;
	case OPT_DEPTHS:
		n = perf_parse_u32_list(arg, 1, DPV_TM_MAX_TAGS_LIMIT, o->depths, TM_MAX_DEPTHS);
		if (n < 0)
			return perf_usage_error(TM_CMD, "--depths '%s': expected up to %d "
						"comma-separated depths in 1..%u", arg,
						TM_MAX_DEPTHS, DPV_TM_MAX_TAGS_LIMIT);
		o->nb_depths = (unsigned int)n;
		break;
	case OPT_REPS:
		if (perf_parse_u32(arg, 1, TM_MAX_REPS, &o->reps) != 0)
			return perf_usage_error(TM_CMD, "--reps '%s': expected 1..%d", arg,
						TM_MAX_REPS);
		a->reps_set = true;
		break;
	case OPT_MIN_TIME:
		if (perf_parse_seconds(arg, 0, 3600, &o->min_time) != 0)
			return perf_usage_error(TM_CMD, "--min-time '%s': expected seconds in "
						"0..3600", arg);
		a->min_time_set = true;
		break;
	case OPT_QUICK:
		o->quick = true;
		break;
	case OPT_SEED:
		if (perf_parse_u64(arg, &o->seed) != 0)
			return perf_usage_error(TM_CMD, "--seed '%s': expected an unsigned 64-bit "
						"number", arg);
		break;
	}
	return 0;
}

/* 0 to run, -1 after --help, or PERF_EXIT_USAGE. */
static int
parse_opts(int argc, char **argv, struct tm_opts *o)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, OPT_JSON },
		{ "depths", required_argument, NULL, OPT_DEPTHS },
		{ "reps", required_argument, NULL, OPT_REPS },
		{ "min-time", required_argument, NULL, OPT_MIN_TIME },
		{ "quick", no_argument, NULL, OPT_QUICK },
		{ "seed", required_argument, NULL, OPT_SEED },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static const uint32_t default_depths[] = { 1, 64, 1024, 65536, DPV_TM_MAX_TAGS_LIMIT };
	struct tm_args a = { .o = o };
	int rc;

	memset(o, 0, sizeof(*o));
	memcpy(o->depths, default_depths, sizeof(default_depths));
	o->nb_depths = sizeof(default_depths) / sizeof(default_depths[0]);
	o->reps = TM_DEFAULT_REPS;
	o->min_time = TM_DEFAULT_MIN_TIME;
	o->seed = TM_DEFAULT_SEED;
	rc = perf_getopts(TM_CMD, argc, argv, longopts, tm_help, tm_opt, &a);
	if (rc != 0)
		return rc;
	if (o->quick && !a.reps_set)
		o->reps = TM_QUICK_REPS;
	if (o->quick && !a.min_time_set)
		o->min_time = TM_QUICK_MIN_TIME;
	return 0;
}

static int
tm_main(int argc, char **argv)
{
	struct tm_cell_res *res;
	struct tm_opts o;
	unsigned int n = 0, d;
	int sc, rc;

	rc = parse_opts(argc, argv, &o);
	if (rc != 0)
		return rc < 0 ? PERF_EXIT_OK : rc;
	res = calloc((size_t)TM_NB_SC * o.nb_depths, sizeof(*res));
	if (res == NULL) {
		perf_error("tm: out of memory");
		return PERF_EXIT_FAIL;
	}
	if (!o.json)
		table_intro(&o);
	for (sc = 0; sc < TM_NB_SC; sc++) {
		for (d = 0; d < o.nb_depths; d++) {
			if (measure_cell(&o, sc, o.depths[d], &res[n]) != 0) {
				free(res);
				return PERF_EXIT_FAIL;
			}
			if (!o.json)
				table_row(&res[n]);
			n++;
		}
	}
	if (o.json)
		json_report(&o, res, n);
	else
		table_outro(res, n);
	free(res);
	return PERF_EXIT_OK;
}

const struct perf_cmd perf_cmd_tm = {
	.name = TM_CMD,
	.summary = "tag matching: dpv_tm engine vs the linear reference, by list depth",
	.run = tm_main,
};
