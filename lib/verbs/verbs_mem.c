/* SPDX-License-Identifier: BSD-3-Clause */
/* Protection domains and memory regions (ibv_alloc_pd(3), ibv_reg_mr(3)). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "verbs_priv.h"

static pthread_mutex_t mr_lock = PTHREAD_MUTEX_INITIALIZER;

struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	struct dpv_context *c = to_ctx(context);
	struct dpv_pd *pd = calloc(1, sizeof(*pd));

	if (pd == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	pd->ibpd.context = context;
	pthread_mutex_lock(&context->mutex);
	pd->id = ++c->next_pd;
	pthread_mutex_unlock(&context->mutex);
	pd->ibpd.handle = pd->id;
	return &pd->ibpd;
}

/*
 * ibv_alloc_pd(3): EBUSY while an MR, QP, SRQ or AH is on the PD. QPs, SRQs and AHs
 * count themselves in users; the MRs are looked up in the device's key table (a
 * control-path scan, under the lock registration takes), so no count has to follow
 * ibv_rereg_mr(3)'s change of PD.
 */
int ibv_dealloc_pd(struct ibv_pd *pd)
{
	const struct dpv_mr_table *t = to_ctx(pd->context)->dev->mrs;
	const struct dpv_mr *mr;
	bool busy = __atomic_load_n(&to_pd(pd)->users, __ATOMIC_ACQUIRE) != 0;

	pthread_mutex_lock(&mr_lock);
	for (uint32_t i = 1; i < DPV_MAX_MR && !busy; i++) {
		mr = __atomic_load_n(&t->slot[i], __ATOMIC_ACQUIRE);
		busy = mr != NULL && container_of(mr, struct dpv_mr_v, mr)->ibmr.pd == pd;
	}
	pthread_mutex_unlock(&mr_lock);
	if (busy)
		return EBUSY;
	free(to_pd(pd));
	return 0;
}

/* A free key slot (1.. DPV_MAX_MR-1; 0 stays unused so key 0 is never valid). */
static int slot_alloc(struct dpv_mr_table *t, uint32_t *slot)
{
	for (uint32_t i = 1; i < DPV_MAX_MR; i++) {
		if (__atomic_load_n(&t->slot[i], __ATOMIC_ACQUIRE) == NULL) {
			*slot = i;
			return 0;
		}
	}
	return ENOMEM;
}

struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
				unsigned int access)
{
	struct dpv_context *c = to_ctx(pd->context);
	struct dpv_mr_table *t = c->dev->mrs;
	struct dpv_mr_v *m;
	uint32_t slot;
	int ret;

	if (!dpv_verbs_access_ok(access) || iova != (uintptr_t)addr ||
	    (addr == NULL && length > 0)) {
		errno = EINVAL;
		return NULL;
	}
	m = calloc(1, sizeof(*m));
	if (m == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_lock(&mr_lock);
	ret = slot_alloc(t, &slot);
	if (ret != 0) {
		pthread_mutex_unlock(&mr_lock);
		free(m);
		errno = ret;
		return NULL;
	}
	m->slot = slot;
	m->mr.addr = (uintptr_t)addr;
	m->mr.length = length;
	m->mr.lkey = slot << 8 | t->gen[slot];
	m->mr.rkey = m->mr.lkey;
	m->mr.access = dpv_verbs_access_kept(access);
	m->mr.pd = to_pd(pd)->id;
	/* The region is whole before the device can find it. */
	__atomic_store_n(&t->slot[slot], &m->mr, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&mr_lock);
	m->ibmr.context = pd->context;
	m->ibmr.pd = pd;
	m->ibmr.addr = addr;
	m->ibmr.length = length;
	m->ibmr.handle = slot;
	m->ibmr.lkey = m->mr.lkey;
	m->ibmr.rkey = m->mr.rkey;
	return &m->ibmr;
}

#undef ibv_reg_mr
struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, (uintptr_t)addr, (unsigned int)access);
}

#undef ibv_reg_mr_iova
struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
			       int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, iova, (unsigned int)access);
}

int ibv_dereg_mr(struct ibv_mr *mr)
{
	struct dpv_context *c = to_ctx(mr->context);
	struct dpv_mr_table *t = c->dev->mrs;
	struct dpv_mr_v *m = to_mr(mr);

	/* Owning the device means no packet is being copied through the region. */
	dpv_dev_own(c->dev);
	pthread_mutex_lock(&mr_lock);
	__atomic_store_n(&t->slot[m->slot], NULL, __ATOMIC_RELEASE);
	t->gen[m->slot]++; /* a stale key never finds the slot's next region */
	pthread_mutex_unlock(&mr_lock);
	dpv_dev_disown(c->dev);
	free(m);
	return 0;
}
