/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory regions (IBTA 10.6), as Linux rxe's rxe_mr.c keeps them: the key table of a
 * device, its slots and key generations, registration and deregistration on the
 * control path, and the check the device makes of every key a WQE or a peer names
 * (the key, the PD, the range, the access). Memory windows (IBTA 10.6.7) are entries of
 * the same table, bound and invalidated here too. lib/verbs checks and pins the pages and
 * gives ibv_reg_mr(3) its shape; the table is written here only.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/random.h>

#include <rte_malloc.h>
#include <rte_random.h>

#include "dpv_xport_priv.h"

/**
 * Key table of one device (this file owns it: every access goes through the dpv_mr_*()
 * calls of dpv_xport.h). A registered region's pointer is published (release) once the
 * region is whole, and the device reads it (acquire). A deregistered key's slot is
 * NULL, and its generation changes at reuse, so a stale key never finds a new region.
 * Slot 0 is never used, so key 0 is never valid. A table all zeros is an empty one:
 * its secrets are drawn at its first registration.
 */
struct dpv_mr_table {
	struct dpv_mr *slot[DPV_MAX_MR];
	uint16_t gen[DPV_MAX_MR];       /**< each slot's use count (dpv_mr_gen() of it) */
	uint64_t gen_secret;            /**< the key of dpv_mr_gen() */
	uint16_t free_slot[DPV_MAX_MR]; /**< ring of free slot indexes, oldest first */
	uint32_t free_head;             /**< ring index of the next slot to hand out */
	uint32_t free_count;
	uint32_t windows;               /**< memory windows in the table */
	bool seeded;                    /**< gen and free_slot drawn */
};

_Static_assert(DPV_MAX_MR == 1u << 16, "dpv_mr_key() holds a 16-bit slot index");

int dpv_mr_table_create(int socket, struct dpv_mr_table **out)
{
	struct dpv_mr_table *t = rte_zmalloc_socket("dpv_mrs", sizeof(*t), DPV_CACHE_LINE, socket);

	if (t == NULL)
		return ENOMEM;
	*out = t;
	return 0;
}

void dpv_mr_table_destroy(struct dpv_mr_table *t)
{
	rte_free(t);
}

/* ---- keys ---- */

/* @p len random bytes: getrandom(2), or rte_rand() where the kernel has none. */
static void random_bytes(void *buf, size_t len)
{
	uint8_t *p = buf;

	while (len > 0) {
		ssize_t n = getrandom(p, len, 0);

		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			for (; len > 0; len--)
				*p++ = (uint8_t)rte_rand();
			return;
		}
		p += n;
		len -= (size_t)n;
	}
}

/*
 * Draw a table's key secrets once, at its first registration: every slot's first
 * generation and the order free slots are handed out in (a Fisher-Yates shuffle of
 * 1 .. DPV_MAX_MR-1). ENOMEM if the shuffle's random numbers cannot be held.
 */
static int table_seed(struct dpv_mr_table *t)
{
	const uint32_t n = DPV_MAX_MR - 1;
	uint32_t *r = malloc(n * sizeof(*r));

	if (r == NULL)
		return ENOMEM;
	random_bytes(t->gen, sizeof(t->gen));
	random_bytes(&t->gen_secret, sizeof(t->gen_secret));
	random_bytes(r, n * sizeof(*r));
	for (uint32_t i = 0; i < n; i++)
		t->free_slot[i] = (uint16_t)(i + 1);
	for (uint32_t i = n - 1; i > 0; i--) {
		uint32_t j = r[i] % (i + 1);
		uint16_t s = t->free_slot[i];

		t->free_slot[i] = t->free_slot[j];
		t->free_slot[j] = s;
	}
	free(r);
	t->free_head = 0;
	t->free_count = n;
	t->seeded = true;
	return 0;
}

/* The least recently freed slot; ENOMEM when every slot holds a region. */
static int slot_alloc(struct dpv_mr_table *t, uint32_t *slot)
{
	if (!t->seeded && table_seed(t) != 0)
		return ENOMEM;
	if (t->free_count == 0)
		return ENOMEM;
	*slot = t->free_slot[t->free_head];
	t->free_head = (t->free_head + 1) % DPV_MAX_MR;
	t->free_count--;
	return 0;
}

static void slot_free(struct dpv_mr_table *t, uint32_t slot)
{
	t->free_slot[(t->free_head + t->free_count) % DPV_MAX_MR] = (uint16_t)slot;
	t->free_count++;
}

/* ---- registration (control path) ---- */

int dpv_mr_register(struct dpv_mr_table *t, struct dpv_mr *mr)
{
	uint32_t slot;
	int ret;

	ret = slot_alloc(t, &slot);
	if (ret != 0)
		return ret;
	mr->lkey = dpv_mr_key(slot, dpv_mr_gen(t->gen_secret, slot, t->gen[slot]));
	mr->rkey = mr->lkey;
	mr->windows = 0;
	/* The region is whole before the device can find it. */
	__atomic_store_n(&t->slot[slot], mr, __ATOMIC_RELEASE);
	return 0;
}

void dpv_mr_deregister(struct dpv_mr_table *t, struct dpv_mr *mr)
{
	uint32_t slot = dpv_mr_key_slot(mr->lkey);

	__atomic_store_n(&t->slot[slot], NULL, __ATOMIC_RELEASE);
	t->gen[slot]++; /* a stale key never finds the slot's next region */
	slot_free(t, slot);
}

const struct dpv_mr *dpv_mr_find(const struct dpv_mr_table *t, uint32_t key)
{
	const struct dpv_mr *mr = __atomic_load_n(&t->slot[dpv_mr_key_slot(key)],
						  __ATOMIC_ACQUIRE);

	return mr != NULL && mr->lkey == key ? mr : NULL;
}

const struct dpv_mr *dpv_mr_next(const struct dpv_mr_table *t, uint32_t *slot)
{
	const struct dpv_mr *mr;

	while (++*slot < DPV_MAX_MR) {
		mr = __atomic_load_n(&t->slot[*slot], __ATOMIC_ACQUIRE);
		/* A window's entry (lkey 0) is no region. */
		if (mr != NULL && mr->lkey != 0)
			return mr;
	}
	return NULL;
}

/* ---- the device's check (IBTA 10.6: the key, the PD, the range, the access) ---- */

const struct dpv_mr *dpv_mr_check(const struct dpv_mr_table *t, uint32_t key, uint32_t pd,
				  uint64_t addr, uint64_t len, uint32_t access)
{
	const struct dpv_mr *mr;
	uint32_t idx = dpv_mr_key_slot(key);

	mr = __atomic_load_n(&t->slot[idx], __ATOMIC_ACQUIRE);
	/* The whole key must match: it carries the generation, so a stale or guessed key
	 * does not name the region in its slot. */
	if (mr == NULL || mr->lkey != key || mr->pd != pd || (mr->access & access) != access)
		return NULL;
	if (len == 0)
		return mr;
	if (addr < mr->addr || len > mr->length || addr - mr->addr > mr->length - len)
		return NULL;
	return mr;
}

/* ---- memory windows (IBTA 10.6.7) ---- */

int dpv_mw_register(struct dpv_mr_table *t, struct dpv_mw *mw)
{
	uint32_t slot;
	int ret;

	ret = slot_alloc(t, &slot);
	if (ret != 0)
		return ret;
	mw->mr.lkey = 0;
	mw->mr.rkey = dpv_mr_key(slot, dpv_mr_gen(t->gen_secret, slot, t->gen[slot]));
	mw->mr.addr = mw->mr.length = 0;
	mw->mr.access = 0;
	mw->mr.windows = 0;
	mw->region = NULL;
	mw->qpn = 0;
	__atomic_store_n(&t->slot[slot], &mw->mr, __ATOMIC_RELEASE);
	t->windows++;
	return 0;
}

void dpv_mw_unbind(struct dpv_mw *mw)
{
	if (mw->region != NULL)
		mw->region->windows--;
	mw->region = NULL;
	mw->mr.addr = mw->mr.length = 0;
	mw->mr.access = 0;
}

void dpv_mw_deregister(struct dpv_mr_table *t, struct dpv_mw *mw)
{
	uint32_t slot = dpv_mr_key_slot(mw->mr.rkey);

	dpv_mw_unbind(mw);
	__atomic_store_n(&t->slot[slot], NULL, __ATOMIC_RELEASE);
	t->gen[slot]++;
	slot_free(t, slot);
	t->windows--;
}

void dpv_mw_unbind_qp(struct dpv_mr_table *t, uint32_t qpn)
{
	for (uint32_t slot = 1; t->windows != 0 && slot < DPV_MAX_MR; slot++) {
		struct dpv_mr *e = t->slot[slot];
		struct dpv_mw *mw;

		if (e == NULL || e->lkey != 0)
			continue;
		mw = container_of(e, struct dpv_mw, mr);
		if (mw->type == 2 && mw->region != NULL && mw->qpn == qpn)
			dpv_mw_unbind(mw);
	}
}

/* The window in the slot @p key names, whatever its tag; NULL if the slot holds none. */
static struct dpv_mw *mw_of(const struct dpv_mr_table *t, uint32_t key)
{
	struct dpv_mr *e = __atomic_load_n(&t->slot[dpv_mr_key_slot(key)], __ATOMIC_ACQUIRE);

	if (e == NULL || e->lkey != 0)
		return NULL;
	return container_of(e, struct dpv_mw, mr);
}

const struct dpv_mr *dpv_mw_check(const struct dpv_mr_table *t, uint32_t key, uint32_t pd,
				  uint32_t qpn, uint64_t addr, uint64_t len, uint32_t access)
{
	const struct dpv_mw *mw = mw_of(t, key);

	/* IBTA 10.6.7.2 / C10-82: the whole key, the rights the bind gave, the window's PD
	 * and, for type 2B, the QP it was bound through. */
	if (mw == NULL || mw->region == NULL || mw->mr.rkey != key || mw->mr.pd != pd ||
	    (mw->type == 2 && mw->qpn != qpn) || (mw->mr.access & access) != access)
		return NULL;
	if (len == 0)
		return &mw->mr;
	if (addr < mw->mr.addr || len > mw->mr.length || addr - mw->mr.addr > mw->mr.length - len)
		return NULL;
	/* ibv_rereg_mr(3) may have moved the region since the bind: the window opens only
	 * what the region still holds. */
	if (addr < mw->region->addr || len > mw->region->length ||
	    addr - mw->region->addr > mw->region->length - len)
		return NULL;
	return &mw->mr;
}

uint8_t dpv_mw_bind(struct dpv_mr_table *t, uint32_t key, uint32_t lkey, uint64_t addr,
		    uint64_t len, uint32_t access, uint32_t pd, uint32_t qpn)
{
	struct dpv_mw *mw = mw_of(t, key);
	struct dpv_mr *mr;

	/* The window named by index and generation: the tag (bits 7..0) is the new one. */
	if (mw == NULL || (mw->mr.rkey & ~0xffu) != (key & ~0xffu) || mw->mr.pd != pd)
		return DPV_WC_MW_BIND_ERR;
	/* o10-37.2.30: a type 2 window is bound once, until it is invalidated. */
	if (mw->type == 2 && mw->region != NULL)
		return DPV_WC_MW_BIND_ERR;
	/* A type 1 window bound with no length is unbound (ibv_bind_mw(3)). */
	if (mw->type == 1 && len == 0) {
		dpv_mw_unbind(mw);
		mw->mr.rkey = key;
		return DPV_WC_SUCCESS;
	}
	mr = __atomic_load_n(&t->slot[dpv_mr_key_slot(lkey)], __ATOMIC_ACQUIRE);
	/* C10-72..C10-75: a region of the PD, bindable, writable by the device where the
	 * window grants remote writes or atomics, that holds the range; o10-37.2.40: a
	 * type 2 window is not bound empty. */
	if (mr == NULL || mr->lkey != lkey || mr->pd != pd ||
	    !(mr->access & DPV_ACCESS_MW_BIND) ||
	    ((access & (DPV_ACCESS_REMOTE_WRITE | DPV_ACCESS_REMOTE_ATOMIC)) &&
	     !(mr->access & DPV_ACCESS_LOCAL_WRITE)) ||
	    len == 0 || addr < mr->addr || len > mr->length || addr - mr->addr > mr->length - len)
		return DPV_WC_MW_BIND_ERR;
	dpv_mw_unbind(mw);
	mw->region = mr;
	mr->windows++;
	mw->mr.addr = addr;
	mw->mr.length = len;
	mw->mr.access = access & (DPV_ACCESS_REMOTE_WRITE | DPV_ACCESS_REMOTE_READ |
				  DPV_ACCESS_REMOTE_ATOMIC);
	mw->qpn = qpn;
	mw->mr.rkey = key;
	return DPV_WC_SUCCESS;
}

struct dpv_mw *dpv_mw_inv_target(const struct dpv_mr_table *t, uint32_t key, uint32_t pd,
				 uint32_t qpn)
{
	struct dpv_mw *mw = mw_of(t, key);

	/* IBTA 10.6.7.2.5: a type 1 window is unbound by a bind, never invalidated. */
	if (mw == NULL || mw->type != 2 || mw->region == NULL || mw->mr.rkey != key ||
	    mw->mr.pd != pd || mw->qpn != qpn)
		return NULL;
	return mw;
}
