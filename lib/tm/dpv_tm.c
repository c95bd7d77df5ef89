/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The tag-matching engine. See doc/guides/tm.md for the picture; in short:
 *
 * Every entry lives in one chain of one hash table, keyed by (tag & mask, mask).
 * Exact entries (mask all ones) and the wildcard entries of up to DPV_TM_MASK_CLASSES
 * distinct masks ("mask classes") are found by one bucket lookup per live mask; the
 * wildcard entries of any further masks sit in an overflow list searched linearly.
 * Chains and the overflow list are appended to at ADD time, so each is in add order,
 * and every entry carries a sequence number: the earliest eligible entry among the
 * candidates of each class and of the overflow list is the MPI-ordered winner.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/tm_types.h>

#include "dpv_tm.h"

/* Distinct wildcard masks that get a hash class; MPI uses a handful (any source, any
 * tag, both), so more classes would only lengthen every lookup. */
#define DPV_TM_MASK_CLASSES 8u
/* While the list holds at most this many entries (and since it was last empty), it is
 * an array of handles in add order, scanned linearly: at such depths hashing and chain
 * links cost more than the scan. The ADD that would exceed it moves every entry into
 * the hash chains, in add order; the list goes back to the array when it empties. */
#define DPV_TM_SMALL_MAX 8u
/* Capacity (entries of 64 bytes) above which an ADD prefetches the entry of a later
 * ADD: 4096 entries are 256 KiB, about what a core's L2 holds beside other data. */
#define DPV_TM_PREFETCH_ABOVE 4096u
/* How many ADDs ahead an ADD prefetches the entry it will fill. */
#define DPV_TM_PREFETCH_AHEAD 8u
/* Messages of a burst whose memory is fetched together (and whose chains are kept). */
#define DPV_TM_BURST_CHUNK 32u
#define CLASS_EXACT 0xfeu
#define CLASS_OVERFLOW 0xffu
#define NIL UINT32_MAX

enum entry_state {
	ENTRY_IDLE = 0, /* never added, or its last life ended in a consumed/deleted state */
	ENTRY_LISTED,
	ENTRY_CONSUMED,
	ENTRY_DELETED,
};

/* One tag-list entry, one cache line. Fields marked (post) are written by the post
 * side while the handle is allocated but not yet executed; the rest by the device. */
struct tm_entry {
	uint64_t tag;        /* (post) */
	uint64_t mask;       /* (post) */
	uint64_t recv_wr_id; /* (post) */
	uint64_t seq;        /* add order */
	/* (post) the scatter list when max_sge is 1 (TM-SRQs post one buffer per tag):
	 * posting and matching then touch this line only. */
	struct dpv_tm_sge sge;
	uint32_t next;       /* chain or overflow list */
	uint32_t prev;
	uint32_t need;       /* U when the ADD executed */
	uint8_t num_sge;     /* (post) at most DPV_TM_MAX_SGE_LIMIT */
	uint8_t state;       /* enum entry_state */
	uint8_t cls;         /* mask class, CLASS_EXACT or CLASS_OVERFLOW */
	uint8_t allocated;   /* post sets, poll clears (atomic, acquire/release) */
} __attribute__((aligned(64)));

_Static_assert(sizeof(struct tm_entry) == 64, "one entry, one cache line");
_Static_assert(DPV_TM_MAX_SGE_LIMIT <= UINT8_MAX, "num_sge fits its field");

struct mask_class {
	uint64_t mask;
	uint32_t refs; /* entries listed in this class; 0: slot free */
};

struct dpv_tm {
	/* Read-only after create. */
	struct dpv_tm_config cfg;
	uint32_t bucket_shift;  /* 64 - log2(buckets) */
	uint32_t free_mask;     /* free ring size - 1 */
	bool prefetch_adds;     /* the entries outgrow the caches closest to the core */
	struct tm_entry *entries;
	struct dpv_tm_sge *sges; /* max_sge per entry; NULL when max_sge is 1 */
	uint32_t *free_ring;     /* handles, FIFO */

	/* Post side. */
	uint32_t free_head __attribute__((aligned(64)));
	uint32_t ops_posted;

	/* Poll side. */
	uint32_t free_tail __attribute__((aligned(64)));

	/* Device side. */
	uint32_t ops_done __attribute__((aligned(64)));
	uint32_t u; /* unexpected messages */
	uint32_t s; /* last reported software count */
	uint64_t next_seq; /* also the count of ADDs executed */
	uint32_t listed;
	bool small;        /* the list is small[0 .. listed), oldest first */
	uint32_t small_list[DPV_TM_SMALL_MAX];
	uint32_t nclasses; /* mask classes with refs > 0 */
	struct mask_class classes[DPV_TM_MASK_CLASSES];
	uint32_t overflow_head; /* a circular list, as the chains */
	/* Chain heads. A chain is circular and doubly linked (its head's prev is its
	 * tail), so a head is 4 bytes: half the memory of a head/tail pair, so fewer of
	 * a large list's chain heads miss the caches. */
	uint32_t *buckets;
	/* A bit per chain, set while the chain holds a wildcard entry of a mask class: a
	 * message looks up every live class, and the chains it looks at are nearly always
	 * without wildcards (most hold nothing, the rest exact entries), which this tells
	 * from a small array instead of a chain head and an entry each. */
	uint64_t *wild_chains;
	uint64_t n_dels, n_del_errors, n_syncs;
	uint64_t n_expected, n_unexpected, n_no_tag, n_rnr;
};

static inline uint32_t load_acquire(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline void store_release(uint32_t *p, uint32_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

static inline bool eligible(const struct dpv_tm *tm, const struct tm_entry *e)
{
	return (int32_t)(tm->s - e->need) >= 0;
}

static inline uint32_t bucket_of(const struct dpv_tm *tm, uint64_t key, uint64_t mask)
{
	/* One multiply-shift (Fibonacci hashing): its top bits depend on every bit of the
	 * input, so structured MPI tags (fields in fixed bit ranges) spread over all
	 * chains. Adding the mask puts each class of one tag in a different chain. It is
	 * on the critical path of every ADD and match, so it stays this short. */
	return (uint32_t)(((key + mask) * 0x9e3779b97f4a7c15ULL) >> tm->bucket_shift);
}

static uint32_t log2_ceil(uint32_t v)
{
	uint32_t b = 0;

	while ((1u << b) < v)
		b++;
	return b;
}

int dpv_tm_create(const struct dpv_tm_config *cfg, struct dpv_tm **out)
{
	struct dpv_tm *tm;
	uint32_t n, bits, i;

	if (cfg == NULL || out == NULL || cfg->max_num_tags == 0 ||
	    cfg->max_num_tags > DPV_TM_MAX_TAGS_LIMIT || cfg->max_ops == 0 ||
	    cfg->max_ops > DPV_TM_MAX_OPS_LIMIT || cfg->max_sge == 0 ||
	    cfg->max_sge > DPV_TM_MAX_SGE_LIMIT)
		return EINVAL;

	tm = aligned_alloc(64, sizeof(*tm));
	if (tm == NULL)
		return ENOMEM;
	memset(tm, 0, sizeof(*tm));
	tm->cfg = *cfg;
	if (tm->cfg.sync_threshold == 0)
		tm->cfg.sync_threshold = DPV_TM_DEFAULT_SYNC_THRESHOLD;
	n = cfg->max_num_tags;

	/* Eight times as many chains as entries (at least 16; a 4-byte head each, half
	 * an entry's size): an entry shares its chain with another one time in eight, so
	 * a lookup rarely visits an entry it does not want and an unlink or an ADD rarely
	 * touches another entry. Four per entry cost time per message at every depth;
	 * sixteen or 32 gain nothing more (doc/guides/tm.md). */
	bits = log2_ceil(n < 2 ? 16 : 8 * n);
	tm->bucket_shift = 64 - bits;
	tm->free_mask = (1u << log2_ceil(n)) - 1;
	tm->prefetch_adds = n > DPV_TM_PREFETCH_ABOVE;

	tm->entries = aligned_alloc(64, sizeof(*tm->entries) * n);
	if (cfg->max_sge > 1)
		tm->sges = calloc((size_t)n * cfg->max_sge, sizeof(*tm->sges));
	tm->free_ring = malloc(sizeof(*tm->free_ring) * (tm->free_mask + 1));
	tm->buckets = malloc(sizeof(*tm->buckets) << bits);
	tm->wild_chains = calloc((((size_t)1 << bits) + 63) / 64, sizeof(*tm->wild_chains));
	if (tm->entries == NULL || (cfg->max_sge > 1 && tm->sges == NULL) || tm->free_ring == NULL ||
	    tm->buckets == NULL || tm->wild_chains == NULL) {
		dpv_tm_destroy(tm);
		return ENOMEM;
	}
	memset(tm->entries, 0, sizeof(*tm->entries) * n);
	memset(tm->buckets, 0xff, sizeof(*tm->buckets) << bits);
	/* Slots past n hold handle 0 until the ring wraps: every slot always names a
	 * valid handle, so post may prefetch the entry of a slot a few ahead. */
	for (i = 0; i <= tm->free_mask; i++)
		tm->free_ring[i] = i < n ? i : 0;
	tm->free_head = 0;
	tm->free_tail = n;
	tm->overflow_head = NIL;
	tm->small = true;
	*out = tm;
	return 0;
}

void dpv_tm_destroy(struct dpv_tm *tm)
{
	if (tm == NULL)
		return;
	free(tm->entries);
	free(tm->sges);
	free(tm->free_ring);
	free(tm->buckets);
	free(tm->wild_chains);
	free(tm);
}

static inline struct dpv_tm_sge *entry_sges(const struct dpv_tm *tm, uint32_t h)
{
	/* A predictable branch instead of a multiply on the way of every ADD and match. */
	if (tm->sges == NULL)
		return &tm->entries[h].sge;
	return &tm->sges[(size_t)h * tm->cfg.max_sge];
}

static bool handle_allocated(const struct dpv_tm *tm, uint32_t h)
{
	return h < tm->cfg.max_num_tags && __atomic_load_n(&tm->entries[h].allocated, __ATOMIC_ACQUIRE);
}

/*
 * One scatter entry, a field at a time: callers (the verbs facade) fill an SGE field by
 * field just before posting, and a 16-byte load of it could not be forwarded from
 * those narrower stores still in the store buffer. No call to memcpy either, so that
 * post makes no call and saves no registers.
 */
static inline __attribute__((always_inline)) void sge_copy(struct dpv_tm_sge *d,
							    const struct dpv_tm_sge *s)
{
	uint64_t addr = s->addr;
	uint32_t length = s->length, lkey = s->lkey;

	__asm__("" : "+r"(addr), "+r"(length), "+r"(lkey));
	d->addr = addr;
	d->length = length;
	d->lkey = lkey;
}

int dpv_tm_post(struct dpv_tm *tm, struct dpv_tm_op *op)
{
	uint32_t posted = tm->ops_posted, head, tail, h, i, nsge;
	const struct dpv_tm_sge *sgl;
	uint64_t tag, mask;
	struct dpv_tm_sge *sg;
	struct tm_entry *e;

	if ((op->flags & ~(DPV_TM_OP_F_SIGNALED | DPV_TM_OP_F_SYNC)) != 0)
		return EINVAL;
	if (op->opcode != DPV_TM_OP_ADD) {
		if ((op->opcode != DPV_TM_OP_DEL && op->opcode != DPV_TM_OP_SYNC) ||
		    (op->opcode == DPV_TM_OP_DEL && !handle_allocated(tm, op->handle)))
			return EINVAL;
		if (posted - load_acquire(&tm->ops_done) >= tm->cfg.max_ops)
			return ENOMEM;
		store_release(&tm->ops_posted, posted + 1);
		return 0;
	}
	/* ADD, the op of every receive: checked, then one entry filled. The scatter list
	 * is read once: the entry's stores may alias @p op for all the compiler knows. */
	nsge = op->num_sge;
	sgl = op->sg_list;
	if (nsge > tm->cfg.max_sge || (nsge > 0 && sgl == NULL))
		return EINVAL;
	head = tm->free_head;
	tail = load_acquire(&tm->free_tail);
	if (posted - load_acquire(&tm->ops_done) >= tm->cfg.max_ops || head == tail)
		return ENOMEM;
	h = tm->free_ring[head & tm->free_mask];
	store_release(&tm->free_head, head + 1);
	/* Handles are reused oldest first, so with many handles free the entry an ADD
	 * fills has long left the cache: start fetching the one a few ADDs ahead. With
	 * few free (a full list), the handle was freed a moment ago and is in the cache,
	 * and the slot a few ahead names no handle that will be used soon. */
	if (tm->prefetch_adds && tail - head > DPV_TM_PREFETCH_AHEAD)
		__builtin_prefetch(&tm->entries[tm->free_ring[(head + DPV_TM_PREFETCH_AHEAD) &
							       tm->free_mask]], 1);
	e = &tm->entries[h];
	tag = op->tag;
	mask = op->mask;
	/* Keep these two loads 8 bytes each: a caller fills op->tag just before posting,
	 * and one 16-byte load of tag and mask would find the tag still in the store
	 * buffer, in a narrower store it cannot be forwarded from, and wait. */
	__asm__("" : "+r"(tag), "+r"(mask));
	e->tag = tag;
	e->mask = mask;
	e->recv_wr_id = op->recv_wr_id;
	e->num_sge = (uint8_t)nsge;
	/* One buffer into the entry, a TM-SRQ's every ADD, without the loop. */
	if (nsge == 1 && tm->sges == NULL) {
		sge_copy(&e->sge, sgl);
	} else {
		sg = entry_sges(tm, h);
		for (i = 0; i < nsge; i++)
			sge_copy(&sg[i], &sgl[i]);
	}
	__atomic_store_n(&e->allocated, 1, __ATOMIC_RELEASE);
	op->handle = h;
	store_release(&tm->ops_posted, posted + 1);
	return 0;
}

int dpv_tm_release(struct dpv_tm *tm, uint32_t handle)
{
	if (!handle_allocated(tm, handle))
		return EINVAL;
	__atomic_store_n(&tm->entries[handle].allocated, 0, __ATOMIC_RELEASE);
	tm->free_ring[tm->free_tail & tm->free_mask] = handle;
	store_release(&tm->free_tail, tm->free_tail + 1);
	return 0;
}

/* Device side from here on. */

/* The class of a wildcard mask; out of line, so exact ADDs do not pay for its loop. */
static __attribute__((noinline)) uint8_t class_for_wild(struct dpv_tm *tm, uint64_t mask)
{
	uint32_t i, spare = DPV_TM_MASK_CLASSES;

	for (i = 0; i < DPV_TM_MASK_CLASSES; i++) {
		if (tm->classes[i].refs == 0) {
			if (spare == DPV_TM_MASK_CLASSES)
				spare = i;
		} else if (tm->classes[i].mask == mask) {
			return (uint8_t)i;
		}
	}
	if (spare == DPV_TM_MASK_CLASSES)
		return CLASS_OVERFLOW;
	tm->classes[spare].mask = mask;
	tm->nclasses++;
	return (uint8_t)spare;
}

/* Append @p h to the circular list (a chain, or the overflow list) whose head is
 * *@p head. */
static inline __attribute__((always_inline)) void circ_append(struct tm_entry *entries, uint32_t *head,
							       uint32_t h)
{
	struct tm_entry *e = &entries[h];
	uint32_t first = *head, last;

	if (first == NIL) {
		e->next = h;
		e->prev = h;
		*head = h;
		return;
	}
	last = entries[first].prev;
	e->prev = last;
	e->next = first;
	entries[last].next = h;
	entries[first].prev = h;
}

/* Take @p h out of the circular list whose head is *@p head. */
static inline __attribute__((always_inline)) void circ_remove(struct tm_entry *entries, uint32_t *head,
							       uint32_t h)
{
	struct tm_entry *e = &entries[h];

	if (e->next == h) {
		*head = NIL;
		return;
	}
	entries[e->prev].next = e->next;
	entries[e->next].prev = e->prev;
	if (*head == h)
		*head = e->next;
}

/* Out of line: the ADD path of a short list then saves no registers for it. */
static __attribute__((noinline)) void hash_link(struct dpv_tm *tm, uint32_t h)
{
	struct tm_entry *e = &tm->entries[h];
	uint32_t b;

	if (e->mask == DPV_TM_MASK_EXACT) {
		e->cls = CLASS_EXACT;
		circ_append(tm->entries, &tm->buckets[bucket_of(tm, e->tag, DPV_TM_MASK_EXACT)], h);
		return;
	}
	e->cls = class_for_wild(tm, e->mask);
	if (e->cls == CLASS_OVERFLOW) {
		circ_append(tm->entries, &tm->overflow_head, h);
	} else {
		tm->classes[e->cls].refs++;
		b = bucket_of(tm, e->tag & e->mask, e->mask);
		circ_append(tm->entries, &tm->buckets[b], h);
		tm->wild_chains[b / 64] |= 1ull << (b % 64);
	}
}

/* The list outgrows the array with the ADD of @p h: every entry, oldest first, into
 * the hash chains, then @p h. */
static __attribute__((noinline)) void small_to_hash(struct dpv_tm *tm, uint32_t h)
{
	uint32_t i;

	for (i = 0; i < DPV_TM_SMALL_MAX; i++)
		hash_link(tm, tm->small_list[i]);
	tm->small = false;
	hash_link(tm, h);
}

/* List entry @p h (its need and seq set). Last in dpv_tm_exec(), so that the calls
 * here are tail calls and the ADD path saves no registers. */
static inline __attribute__((always_inline)) void entry_link(struct dpv_tm *tm, uint32_t h)
{
	uint32_t listed = tm->listed;

	tm->entries[h].state = ENTRY_LISTED;
	tm->listed = listed + 1;
	if (tm->small) {
		if (listed < DPV_TM_SMALL_MAX)
			tm->small_list[listed] = h;
		else
			small_to_hash(tm, h);
		return;
	}
	hash_link(tm, h);
}

/* Remove position @p pos of the array (the list is small). */
static inline __attribute__((always_inline)) void small_remove(struct dpv_tm *tm, uint32_t pos)
{
	for (; pos + 1 < tm->listed; pos++)
		tm->small_list[pos] = tm->small_list[pos + 1];
}

/* A wildcard entry has left chain @p b: clear its bit if no other is left there. Out
 * of line, as wildcard ADDs are. */
static __attribute__((noinline)) void wild_chain_check(struct dpv_tm *tm, uint32_t b)
{
	uint32_t first = tm->buckets[b], h = first;

	if (first != NIL)
		do {
			if (tm->entries[h].cls != CLASS_EXACT)
				return;
			h = tm->entries[h].next;
		} while (h != first);
	tm->wild_chains[b / 64] &= ~(1ull << (b % 64));
}

/* Take entry @p h out of the hash chains (or the overflow list). */
static inline __attribute__((always_inline)) void hash_unlink(struct dpv_tm *tm, uint32_t h)
{
	struct tm_entry *e = &tm->entries[h];
	uint32_t b;

	if (e->cls == CLASS_OVERFLOW) {
		circ_remove(tm->entries, &tm->overflow_head, h);
	} else {
		b = bucket_of(tm, e->tag & e->mask, e->mask);
		circ_remove(tm->entries, &tm->buckets[b], h);
		if (e->cls != CLASS_EXACT) {
			wild_chain_check(tm, b);
			if (--tm->classes[e->cls].refs == 0)
				tm->nclasses--;
		}
	}
}

/* Entry @p h has left the list; its state becomes @p new_state. */
static inline __attribute__((always_inline)) void entry_unlisted(struct dpv_tm *tm, uint32_t h,
								    uint8_t new_state)
{
	tm->entries[h].state = new_state;
	/* Emptied: every chain is empty and no class is in use, so the array takes over. */
	if (--tm->listed == 0)
		tm->small = true;
}

/* End entry @p h's listing (a DEL or a match; @p pos is its place in the small list,
 * or NIL to look it up there). */
static inline __attribute__((always_inline)) void entry_unlink(struct dpv_tm *tm, uint32_t h,
								  uint32_t pos, uint8_t new_state)
{
	if (tm->small) {
		if (pos == NIL)
			for (pos = 0; tm->small_list[pos] != h; pos++)
				;
		small_remove(tm, pos);
	} else {
		hash_unlink(tm, h);
	}
	entry_unlisted(tm, h, new_state);
}

/* DEL and SYNC: out of line, so that the ADD path saves no registers it does not use. */
static __attribute__((noinline)) void exec_del_sync(struct dpv_tm *tm, const struct dpv_tm_op *op,
						   struct dpv_tm_cqe *cqe, bool signaled)
{
	*cqe = (struct dpv_tm_cqe){ .wr_id = op->wr_id, .opcode = op->opcode, .visible = signaled };
	if (op->opcode == DPV_TM_OP_DEL) {
		cqe->handle = op->handle;
		if (tm->entries[op->handle].state == ENTRY_LISTED) {
			entry_unlink(tm, op->handle, NIL, ENTRY_DELETED);
			cqe->release = true;
			tm->n_dels++;
		} else {
			/* Consumed by a message first, or already deleted
			 * (doc/guides/srq.md §3). */
			cqe->status = DPV_TM_ST_TM_ERR;
			cqe->visible = true;
			tm->n_del_errors++;
		}
		if (tm->s != tm->u)
			cqe->flags |= DPV_TM_CQE_F_SYNC_REQ;
	} else {
		tm->n_syncs++;
	}
	store_release(&tm->ops_done, tm->ops_done + 1);
}

void dpv_tm_exec(struct dpv_tm *tm, const struct dpv_tm_op *op, struct dpv_tm_cqe *cqe)
{
	bool signaled = (op->flags & DPV_TM_OP_F_SIGNALED) != 0;
	struct tm_entry *e;
	uint32_t h;

	if (op->flags & DPV_TM_OP_F_SYNC)
		tm->s = op->unexpected_cnt;
	if (op->opcode != DPV_TM_OP_ADD) {
		exec_del_sync(tm, op, cqe, signaled);
		return;
	}
	h = op->handle;
	/* Field by field, as a match result: a struct literal zeroes it all first. */
	cqe->wr_id = op->wr_id;
	cqe->handle = h;
	cqe->opcode = DPV_TM_OP_ADD;
	cqe->status = DPV_TM_ST_SUCCESS;
	cqe->flags = tm->s != tm->u ? DPV_TM_CQE_F_SYNC_REQ : 0;
	cqe->visible = signaled;
	cqe->release = false;
	/* The op's slot is free now; the list below is the device's own. */
	store_release(&tm->ops_done, tm->ops_done + 1);
	e = &tm->entries[h];
	e->need = tm->u;
	e->seq = tm->next_seq++;
	entry_link(tm, h);
}

bool dpv_tm_tmh_is_rndv(const struct dpv_tm_tmh *tmh)
{
	return tmh->opcode == IBV_TMH_RNDV;
}

/* Big-endian fields of the TMH and RVH, at any alignment: one load and a byte swap,
 * not a loop over the bytes (every tagged message parses a TMH). */
static inline uint64_t be64_read(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	return v;
}

static inline uint32_t be32_read(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	v = __builtin_bswap32(v);
#endif
	return v;
}

static void be_write(uint8_t *p, uint64_t v, unsigned int n)
{
	unsigned int i;

	for (i = n; i-- > 0; v >>= 8)
		p[i] = (uint8_t)v;
}

bool dpv_tm_parse_rvh(const void *payload, size_t len, struct dpv_tm_rvh *rvh)
{
	const uint8_t *p = (const uint8_t *)payload + sizeof(struct ibv_tmh);

	_Static_assert(sizeof(struct ibv_rvh) == DPV_TM_RVH_SIZE, "RVH on the wire");
	if (len < sizeof(struct ibv_tmh) + sizeof(struct ibv_rvh)) {
		memset(rvh, 0, sizeof(*rvh));
		return false;
	}
	rvh->va = be64_read(p + offsetof(struct ibv_rvh, va));
	rvh->rkey = be32_read(p + offsetof(struct ibv_rvh, rkey));
	rvh->len = be32_read(p + offsetof(struct ibv_rvh, len));
	return true;
}

void dpv_tm_write_fin(void *buf, uint32_t app_ctx, uint64_t tag)
{
	uint8_t *p = buf;

	memset(p, 0, sizeof(struct ibv_tmh));
	p[offsetof(struct ibv_tmh, opcode)] = IBV_TMH_FIN;
	be_write(p + offsetof(struct ibv_tmh, app_ctx), app_ctx, 4);
	be_write(p + offsetof(struct ibv_tmh, tag), tag, 8);
}

void dpv_tm_parse_tmh(const void *payload, size_t len, struct dpv_tm_tmh *tmh)
{
	const uint8_t *p = payload;

	if (len < sizeof(struct ibv_tmh)) {
		tmh->opcode = IBV_TMH_NO_TAG;
		tmh->app_ctx = 0;
		tmh->tag = 0;
		return;
	}
	tmh->opcode = p[offsetof(struct ibv_tmh, opcode)];
	tmh->app_ctx = be32_read(p + offsetof(struct ibv_tmh, app_ctx));
	tmh->tag = be64_read(p + offsetof(struct ibv_tmh, tag));
}

/* The earliest eligible entry of class @p mask (all ones: the exact class) whose
 * tag & mask is @p key, in chain @p b (the chain of that key and mask). */
static inline __attribute__((always_inline)) uint32_t find_in_chain(const struct dpv_tm *tm,
								     uint32_t b, uint64_t key,
								     uint64_t mask)
{
	const struct tm_entry *e;
	uint32_t first = tm->buckets[b], h = first;

	if (first == NIL)
		return NIL;
	do {
		e = &tm->entries[h];
		if (e->mask == mask && (e->tag & mask) == key && eligible(tm, e))
			return h;
		h = e->next;
	} while (h != first);
	return NIL;
}

/* The earliest eligible entry of one wildcard mask class for @p tag. */
static inline __attribute__((always_inline)) uint32_t find_in_class(const struct dpv_tm *tm, uint64_t tag, uint64_t mask)
{
	uint64_t key = tag & mask;
	uint32_t b = bucket_of(tm, key, mask);

	if ((tm->wild_chains[b / 64] & (1ull << (b % 64))) == 0)
		return NIL;
	return find_in_chain(tm, b, key, mask);
}

/* The wildcard classes and the overflow list, for a tag whose exact candidate is best.
 * Out of line: lists without wildcards never pay for it. */
static __attribute__((noinline)) uint32_t find_wild(const struct dpv_tm *tm, uint64_t tag,
						      uint32_t best)
{
	const struct tm_entry *e;
	uint32_t h, i, seen;

	for (i = 0, seen = 0; seen < tm->nclasses; i++) {
		if (tm->classes[i].refs == 0)
			continue;
		seen++;
		h = find_in_class(tm, tag, tm->classes[i].mask);
		if (h != NIL && (best == NIL || tm->entries[h].seq < tm->entries[best].seq))
			best = h;
	}
	/* The overflow list is in add order: nothing past the best so far can win. */
	h = tm->overflow_head;
	if (h == NIL)
		return best;
	do {
		e = &tm->entries[h];
		if (best != NIL && e->seq > tm->entries[best].seq)
			break;
		if (((tag ^ e->tag) & e->mask) == 0 && eligible(tm, e))
			return h;
		h = e->next;
	} while (h != tm->overflow_head);
	return best;
}

/* The small list: the position of the first eligible entry in add order, or NIL. */
static inline __attribute__((always_inline)) uint32_t find_small(const struct dpv_tm *tm, uint64_t tag)
{
	const struct tm_entry *e;
	uint32_t i;

	for (i = 0; i < tm->listed; i++) {
		e = &tm->entries[tm->small_list[i]];
		if (((tag ^ e->tag) & e->mask) == 0 && eligible(tm, e))
			return i;
	}
	return NIL;
}

/* The decision for one message; inlined into both the single and the burst call. */
static inline __attribute__((always_inline)) void match_one(struct dpv_tm *tm,
							       const struct dpv_tm_tmh *tmh,
							       bool srq_wr_available,
							       struct dpv_tm_match *m, uint32_t b,
							       bool small_only, bool exact_only)
{
	bool tagged = tmh->opcode == IBV_TMH_EAGER || tmh->opcode == IBV_TMH_RNDV;
	struct tm_entry *e;
	uint32_t h, pos = NIL, x;

	/* An expected match is written field by field: a whole-struct store zeroes the
	 * struct first and then overwrites it, which shows at depth 1, where the whole
	 * cycle is short. */
	if (tagged) {
		if (small_only || tm->small) {
			pos = find_small(tm, tmh->tag);
			h = pos != NIL ? tm->small_list[pos] : NIL;
		} else {
			/* @p b: the exact chain of the tag (NIL: not computed yet). */
			if (b == NIL)
				b = bucket_of(tm, tmh->tag, DPV_TM_MASK_EXACT);
			x = find_in_chain(tm, b, tmh->tag, DPV_TM_MASK_EXACT);
			h = x;
			if (!exact_only &&
			    __builtin_expect(tm->nclasses != 0 || tm->overflow_head != NIL, 0))
				h = find_wild(tm, tmh->tag, x);
			if (h != NIL && h == x) {
				/* An exact entry, whose chain is known. */
				e = &tm->entries[h];
				circ_remove(tm->entries, &tm->buckets[b], h);
				entry_unlisted(tm, h, ENTRY_CONSUMED);
				goto expected;
			}
		}
		if (h != NIL) {
			e = &tm->entries[h];
			entry_unlink(tm, h, pos, ENTRY_CONSUMED);
expected:
			m->kind = tmh->opcode == IBV_TMH_EAGER ? DPV_TM_EXPECTED_EAGER
							       : DPV_TM_EXPECTED_RNDV;
			m->flags = 0;
			m->handle = h;
			m->recv_wr_id = e->recv_wr_id;
			m->sg_list = entry_sges(tm, h);
			m->num_sge = e->num_sge;
			tm->n_expected++;
			return;
		}
	}
	if (!srq_wr_available) {
		*m = (struct dpv_tm_match){ .kind = DPV_TM_RNR };
		tm->n_rnr++;
		return;
	}
	if (!tagged) {
		*m = (struct dpv_tm_match){ .kind = DPV_TM_NO_TAG };
		tm->n_no_tag++;
		return;
	}
	tm->u++;
	tm->n_unexpected++;
	*m = (struct dpv_tm_match){
		.kind = DPV_TM_UNEXPECTED,
		.flags = tm->u - tm->s > tm->cfg.sync_threshold ? DPV_TM_CQE_F_SYNC_REQ : 0,
	};
}

void dpv_tm_match(struct dpv_tm *tm, const struct dpv_tm_tmh *tmh, bool srq_wr_available,
		  struct dpv_tm_match *m)
{
	match_one(tm, tmh, srq_wr_available, m, NIL, false, false);
}

/* One chunk of a burst of a hashed list; @p exact_only: the list holds no wildcard
 * entry (no mask class in use, the overflow list empty). */
static inline __attribute__((always_inline)) void match_chunk(struct dpv_tm *tm,
								 const struct dpv_tm_tmh *tmh,
								 uint32_t k, uint32_t *srq_wrs,
								 struct dpv_tm_match *m,
								 bool exact_only)
{
	uint32_t b[DPV_TM_BURST_CHUNK], j, h;

	/* Bring in every message's exact-class chain head, then the entries they name,
	 * so the misses of a chunk overlap instead of adding up; the chains found are
	 * kept for the matching. Matching itself stays in arrival order: a message sees
	 * the list as the messages before it left it. */
	for (j = 0; j < k; j++) {
		b[j] = bucket_of(tm, tmh[j].tag, DPV_TM_MASK_EXACT);
		__builtin_prefetch(&tm->buckets[b[j]]);
	}
	for (j = 0; j < k; j++) {
		h = tm->buckets[b[j]];
		if (h != NIL)
			__builtin_prefetch(&tm->entries[h]);
	}
	for (j = 0; j < k; j++) {
		/* A match of an earlier message can empty the list (small again). */
		match_one(tm, &tmh[j], *srq_wrs > 0, &m[j], tm->small ? NIL : b[j], false,
			  exact_only);
		if (m[j].kind == DPV_TM_NO_TAG || m[j].kind == DPV_TM_UNEXPECTED)
			(*srq_wrs)--;
	}
}

/* A burst of a hashed list. Out of line: short bursts and lists do not set up its
 * frame. */
static __attribute__((noinline)) void match_burst_hashed(struct dpv_tm *tm,
							 const struct dpv_tm_tmh *tmh, uint32_t n,
							 uint32_t srq_wrs, struct dpv_tm_match *m)
{
	uint32_t i, k;

	/* Matching only takes entries out, so a list without wildcards at the start of
	 * the burst stays without them to its end: its messages look at their exact
	 * chains only, with no test for wildcards per message. */
	if (tm->nclasses == 0 && tm->overflow_head == NIL) {
		for (i = 0; i < n; i += k) {
			k = n - i < DPV_TM_BURST_CHUNK ? n - i : DPV_TM_BURST_CHUNK;
			match_chunk(tm, &tmh[i], k, &srq_wrs, &m[i], true);
		}
		return;
	}
	for (i = 0; i < n; i += k) {
		k = n - i < DPV_TM_BURST_CHUNK ? n - i : DPV_TM_BURST_CHUNK;
		match_chunk(tm, &tmh[i], k, &srq_wrs, &m[i], false);
	}
}

/* Bursts of two or more, and any burst for a hashed list. */
static __attribute__((noinline)) void match_burst_any(struct dpv_tm *tm,
						      const struct dpv_tm_tmh *tmh, uint32_t n,
						      uint32_t srq_wrs, struct dpv_tm_match *m)
{
	uint32_t i;

	if (n >= 4 && !tm->small) {
		match_burst_hashed(tm, tmh, n, srq_wrs, m);
		return;
	}
	for (i = 0; i < n; i++) {
		match_one(tm, &tmh[i], srq_wrs > 0, &m[i], NIL, false, false);
		if (m[i].kind == DPV_TM_NO_TAG || m[i].kind == DPV_TM_UNEXPECTED)
			srq_wrs--;
	}
}

void dpv_tm_match_burst(struct dpv_tm *tm, const struct dpv_tm_tmh *tmh, uint32_t n,
			uint32_t srq_wrs, struct dpv_tm_match *m)
{
	/* One message for a short list (a latency-bound receiver's usual burst): no loop
	 * and no hashed code here, so this path saves no registers. */
	if (n == 1 && tm->small) {
		match_one(tm, tmh, srq_wrs > 0, m, NIL, true, false);
		return;
	}
	match_burst_any(tm, tmh, n, srq_wrs, m);
}

uint32_t dpv_tm_unexpected(const struct dpv_tm *tm)
{
	return tm->u;
}

uint32_t dpv_tm_synced(const struct dpv_tm *tm)
{
	return tm->s;
}

void dpv_tm_stats_get(const struct dpv_tm *tm, struct dpv_tm_stats *st)
{
	st->adds = tm->next_seq;
	st->dels = tm->n_dels;
	st->del_errors = tm->n_del_errors;
	st->syncs = tm->n_syncs;
	st->expected = tm->n_expected;
	st->unexpected = tm->n_unexpected;
	st->no_tag = tm->n_no_tag;
	st->rnr = tm->n_rnr;
	st->listed = tm->listed;
	st->allocated = tm->cfg.max_num_tags -
			(load_acquire(&tm->free_tail) - load_acquire(&tm->free_head));
}

uint32_t dpv_tm_entries(const struct dpv_tm *tm, uint32_t from, struct dpv_tm_entry_info *out,
			uint32_t n)
{
	uint32_t got = 0;

	for (uint32_t h = from; h < tm->cfg.max_num_tags && got < n; h++) {
		const struct tm_entry *e = &tm->entries[h];
		const struct dpv_tm_sge *sg;
		struct dpv_tm_entry_info *o;

		if (e->state != ENTRY_LISTED)
			continue;
		o = &out[got++];
		sg = entry_sges(tm, h);
		*o = (struct dpv_tm_entry_info){
			.handle = h, .need = e->need, .seq = e->seq, .tag = e->tag,
			.mask = e->mask, .recv_wr_id = e->recv_wr_id, .num_sge = e->num_sge,
			.eligible = eligible(tm, e),
		};
		if (e->num_sge > 0)
			o->sge = sg[0];
		for (uint32_t i = 0; i < e->num_sge; i++)
			o->length += sg[i].length;
	}
	return got;
}

uint32_t dpv_tm_ops_outstanding(const struct dpv_tm *tm)
{
	return load_acquire(&tm->ops_posted) - load_acquire(&tm->ops_done);
}

const struct dpv_tm_config *dpv_tm_config_get(const struct dpv_tm *tm)
{
	return &tm->cfg;
}
