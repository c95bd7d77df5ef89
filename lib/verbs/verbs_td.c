/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Thread domains and parent domains (ibv_alloc_td(3), ibv_alloc_parent_domain(3)).
 *
 * A thread domain is the program's promise that one thread at a time uses each object
 * made under it. A parent domain carries one (or none) over a protection domain and is
 * interchangeable with that PD: it has the PD's id, so memory registered through either
 * is reached by QPs made with either. QPs, SRQs and CQs made with a parent domain that
 * has a thread domain take no lock when they are posted to or polled
 * (doc/guides/verbs.md, "Thread domains").
 */
#include <errno.h>
#include <stdlib.h>

#include "verbs_priv.h"

/* ibv_alloc_td(3): no attribute is defined, so any comp_mask bit is EINVAL. */
struct ibv_td *dpv_verbs_alloc_td(struct ibv_context *context, struct ibv_td_init_attr *attr)
{
	struct dpv_td *td;

	if (attr == NULL || attr->comp_mask != 0) {
		errno = EINVAL;
		return NULL;
	}
	td = calloc(1, sizeof(*td));
	if (td == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	td->ibtd.context = context;
	return &td->ibtd;
}

/* ibv_dealloc_td(3): EBUSY while a parent domain holds it. */
int dpv_verbs_dealloc_td(struct ibv_td *ibtd)
{
	struct dpv_td *td = container_of(ibtd, struct dpv_td, ibtd);

	if (__atomic_load_n(&td->users, __ATOMIC_ACQUIRE) != 0)
		return EBUSY;
	free(td);
	return 0;
}

/*
 * ibv_alloc_parent_domain(3): EINVAL for no PD, a PD or thread domain of another
 * context, a parent domain as the PD, or comp_mask bits libibverbs does not define;
 * IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS without both alloc and free.
 */
struct ibv_pd *dpv_verbs_alloc_parent_domain(struct ibv_context *context,
					     struct ibv_parent_domain_init_attr *attr)
{
	const uint32_t known = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
			       IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
	struct dpv_pd *pd, *parent;
	struct dpv_td *td;

	if (attr == NULL || attr->pd == NULL || attr->pd->context != context ||
	    (attr->comp_mask & ~known) != 0 ||
	    (attr->td != NULL && attr->td->context != context)) {
		errno = EINVAL;
		return NULL;
	}
	pd = to_pd(attr->pd);
	if (pd->protection != NULL) {
		errno = EINVAL;
		return NULL;
	}
	if ((attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) &&
	    (attr->alloc == NULL || attr->free == NULL)) {
		errno = EINVAL;
		return NULL;
	}
	parent = calloc(1, sizeof(*parent));
	if (parent == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	td = attr->td != NULL ? container_of(attr->td, struct dpv_td, ibtd) : NULL;
	parent->ibpd.context = context;
	parent->ibpd.handle = pd->id;
	parent->id = pd->id;
	parent->protection = pd;
	parent->td = td;
	if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) {
		parent->alloc = attr->alloc;
		parent->free = attr->free;
	}
	if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT)
		parent->pd_context = attr->pd_context;
	__atomic_add_fetch(&pd->users, 1, __ATOMIC_RELAXED);
	if (td != NULL)
		__atomic_add_fetch(&td->users, 1, __ATOMIC_RELAXED);
	return &parent->ibpd;
}

int dpv_verbs_parent_dealloc(struct dpv_pd *parent)
{
	if (parent->td != NULL)
		__atomic_sub_fetch(&parent->td->users, 1, __ATOMIC_RELEASE);
	__atomic_sub_fetch(&parent->protection->users, 1, __ATOMIC_RELEASE);
	free(parent);
	return 0;
}

void *dpv_verbs_obj_alloc(struct ibv_pd *ibpd, size_t size, uint32_t type, bool *custom)
{
	struct dpv_pd *pd = ibpd != NULL ? to_pd(ibpd) : NULL;
	void *p;

	*custom = false;
	if (pd != NULL && pd->alloc != NULL) {
		/* ibv_alloc_parent_domain(3): the callback zeroes what it gives. */
		p = pd->alloc(ibpd, pd->pd_context, size, DPV_CACHE_LINE, type);
		if (p != IBV_ALLOCATOR_USE_DEFAULT) {
			*custom = p != NULL;
			return p;
		}
	}
	return calloc(1, size);
}

void dpv_verbs_obj_free(struct ibv_pd *ibpd, void *p, uint32_t type, bool custom)
{
	if (custom)
		to_pd(ibpd)->free(ibpd, to_pd(ibpd)->pd_context, p, type);
	else
		free(p);
}
