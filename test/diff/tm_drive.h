/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * tm_drive: runs dpv_tm and the reference model tm_ref side by side, one operation at
 * a time, and compares everything they report.
 *
 * The operations are drawn from a byte source: a seeded pseudo-random generator for
 * the differential test (tm_diff), the fuzzer's input for fuzz_tm. Both programs share
 * this driver, so a byte string the fuzzer finds replays the same way everywhere.
 *
 * The driver plays the application: it posts ADD / DEL / SYNC ops (valid and
 * invalid), carries accepted ops to the device side and executes them later in posting
 * order, delivers incoming messages, and releases ended handles in random order. It
 * never makes a call the contract forbids (releasing an entry still in the list), so
 * any disagreement is a bug in one of the two implementations.
 */
#ifndef TM_DRIVE_H
#define TM_DRIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "dpv_tm.h"

/** Where the driver's choices come from: a byte string, or a seeded generator. */
struct tm_src {
	const uint8_t *data; /**< NULL: generator */
	size_t len;
	size_t pos;
	uint64_t state;      /**< generator state */
	uint64_t bits;       /**< generator bytes not handed out yet */
	unsigned int nbits;  /**< how many bytes of @p bits are left */
};

/** A source reading @p len bytes, then zeros (see tm_src_empty()). */
static inline void
tm_src_init_bytes(struct tm_src *s, const uint8_t *data, size_t len)
{
	*s = (struct tm_src){ .data = data, .len = len };
}

/** An endless source seeded with @p seed. */
static inline void
tm_src_init_seed(struct tm_src *s, uint64_t seed)
{
	*s = (struct tm_src){ .state = seed };
}

/** A byte source has no more input (never true for a generator). */
static inline bool
tm_src_empty(const struct tm_src *s)
{
	return s->data != NULL && s->pos >= s->len;
}

/* splitmix64: one multiply-xorshift round per word, good enough to pick test cases. */
static inline uint64_t
tm_src_next_word(struct tm_src *s)
{
	uint64_t z = (s->state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline uint8_t
tm_src_u8(struct tm_src *s)
{
	uint8_t b;

	if (s->data != NULL)
		return s->pos < s->len ? s->data[s->pos++] : 0;
	if (s->nbits == 0) {
		s->bits = tm_src_next_word(s);
		s->nbits = 8;
	}
	b = (uint8_t)s->bits;
	s->bits >>= 8;
	s->nbits--;
	return b;
}

static inline uint64_t
tm_src_u64(struct tm_src *s)
{
	uint64_t v = 0;
	int i;

	if (s->data == NULL)
		return tm_src_next_word(s);
	for (i = 0; i < 8; i++)
		v = (v << 8) | tm_src_u8(s);
	return v;
}

/** A value below @p n (n > 0); one byte when n <= 256. */
static inline uint32_t
tm_src_below(struct tm_src *s, uint32_t n)
{
	if (n <= 256)
		return tm_src_u8(s) % n;
	return (uint32_t)(tm_src_u64(s) % n);
}

/** Most distinct tags a driver uses. */
#define TM_DRIVE_MAX_TAG_POOL 64u

/** What a driver runs against. */
struct tm_drive_cfg {
	struct dpv_tm_config tm; /**< given to both implementations */
	uint32_t tag_pool;       /**< distinct tags (1 .. TM_DRIVE_MAX_TAG_POOL); few: collisions */
	/**
	 * Feed the reference wrong input on purpose (every ADD's mask without bit 0), so
	 * that a run proves the comparison catches a wrong match decision.
	 */
	bool mutant;
};

/** Read a configuration from the source (the fuzzer's first bytes). */
void tm_drive_cfg_from_src(struct tm_src *s, struct tm_drive_cfg *cfg);

struct tm_drive;

/**
 * Create both implementations and the driver's bookkeeping.
 * @param src  draws the tag pool
 * @return NULL when either implementation refuses the configuration or memory runs out
 *   (the reason is printed on stderr).
 */
struct tm_drive *tm_drive_create(const struct tm_drive_cfg *cfg, struct tm_src *src);

void tm_drive_destroy(struct tm_drive *d);

/**
 * Apply one operation chosen from @p src to both implementations and compare.
 * @return true when they agree; false on the first divergence (see tm_drive_report()).
 */
bool tm_drive_step(struct tm_drive *d, struct tm_src *src);

/**
 * Execute every pending op and release every ended handle, comparing as usual, so
 * that a run ends in a state where every handle is either free or still listed.
 */
bool tm_drive_finish(struct tm_drive *d);

/** Steps applied so far. */
uint64_t tm_drive_steps(const struct tm_drive *d);

/** Print the divergence and the last steps that led to it. */
void tm_drive_report(const struct tm_drive *d, FILE *f);

/** Print every step as it is applied (NULL stops). */
void tm_drive_trace(struct tm_drive *d, FILE *f);

#endif /* TM_DRIVE_H */
