/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared receive queues and tag-matching SRQs (ibv_create_srq(3), ibv_create_srq_ex(3),
 * ibv_post_srq_recv(3), ibv_post_srq_ops(3)); doc/guides/srq.md §1-§3.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "verbs_priv.h"

static uint32_t next_lane;
static __thread uint32_t my_lane = UINT32_MAX;

uint32_t dpv_verbs_lane(uint32_t n)
{
	if (my_lane == UINT32_MAX)
		my_lane = __atomic_fetch_add(&next_lane, 1, __ATOMIC_RELAXED);
	return my_lane % n;
}

static void srq_limit(struct dpv_srq *dsrq, void *arg)
{
	struct dpv_srq_v *srq = arg;

	(void)dsrq;
	dpv_verbs_async_event(srq->ctx, IBV_EVENT_SRQ_LIMIT_REACHED, &srq->ibsrq);
}

static void srq_error(struct dpv_srq *dsrq, void *arg)
{
	struct dpv_srq_v *srq = arg;

	(void)dsrq;
	dpv_verbs_async_event(srq->ctx, IBV_EVENT_SRQ_ERR, &srq->ibsrq);
}

struct ibv_srq *dpv_verbs_create_srq_ex(struct ibv_context *context,
					struct ibv_srq_init_attr_ex *attr)
{
	struct dpv_context *c = to_ctx(context);
	const uint32_t known = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
			       IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_TM;
	enum ibv_srq_type type = attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE ? attr->srq_type :
									    IBV_SRQT_BASIC;
	struct dpv_tm_config tm;
	struct dpv_srq_init init;
	struct dpv_srq_v *srq;
	bool custom;
	struct dpv_cq_v *cq = NULL;
	int ret;

	if ((attr->comp_mask & ~known) != 0 || !(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) ||
	    attr->pd == NULL) {
		errno = EINVAL;
		return NULL;
	}
	if (type != IBV_SRQT_BASIC && type != IBV_SRQT_TM && type != IBV_SRQT_XRC) {
		errno = EINVAL;
		return NULL;
	}
	if (attr->attr.max_wr == 0 || attr->attr.max_wr > DPV_MAX_SRQ_WR ||
	    attr->attr.max_sge == 0 || attr->attr.max_sge > DPV_MAX_SGE ||
	    attr->attr.srq_limit > attr->attr.max_wr) {
		errno = EINVAL;
		return NULL;
	}
	memset(&init, 0, sizeof(init));
	if (type == IBV_SRQT_TM) {
		/* doc/guides/srq.md §2: TM needs its CQ and caps within tm_caps. */
		if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_CQ) || attr->cq == NULL ||
		    !(attr->comp_mask & IBV_SRQ_INIT_ATTR_TM) || attr->tm_cap.max_num_tags == 0 ||
		    attr->tm_cap.max_num_tags > DPV_TM_MAX_TAGS_LIMIT ||
		    attr->tm_cap.max_ops == 0 || attr->tm_cap.max_ops > DPV_VERBS_TM_MAX_OPS ||
		    attr->attr.max_sge > DPV_TM_MAX_SGE_LIMIT) {
			errno = EINVAL;
			return NULL;
		}
		cq = to_cq(attr->cq);
		memset(&tm, 0, sizeof(tm));
		tm.max_num_tags = attr->tm_cap.max_num_tags;
		tm.max_ops = attr->tm_cap.max_ops;
		tm.max_sge = attr->attr.max_sge;
		init.tm = &tm;
		init.cq = cq->cq;
	} else if (type == IBV_SRQT_XRC) {
		/* doc/guides/srq.md §7: an XRC SRQ is in an XRC domain and completes into
		 * its own CQ. */
		if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_CQ) || attr->cq == NULL ||
		    !(attr->comp_mask & IBV_SRQ_INIT_ATTR_XRCD) || attr->xrcd == NULL ||
		    attr->xrcd->context != context) {
			errno = EINVAL;
			return NULL;
		}
		cq = to_cq(attr->cq);
		init.cq = cq->cq;
		init.xrcd = to_xrcd(attr->xrcd)->id;
	}
	srq = dpv_verbs_obj_alloc(attr->pd, sizeof(*srq), DPV_VERBS_RES_TYPE_SRQ, &custom);
	if (srq == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	srq->custom_mem = custom;
	init.pd = to_pd(attr->pd)->id;
	init.max_wr = attr->attr.max_wr;
	init.max_sge = attr->attr.max_sge;
	init.lanes = DPV_VERBS_SRQ_LANES;
	init.limit = attr->attr.srq_limit;
	ret = dpv_srq_create(c->dev->xport, &init, &srq->srq);
	if (ret != 0) {
		dpv_verbs_obj_free(attr->pd, srq, DPV_VERBS_RES_TYPE_SRQ, custom);
		errno = ret;
		return NULL;
	}
	srq->ctx = c;
	srq->tm = type == IBV_SRQT_TM;
	srq->xrcd = type == IBV_SRQT_XRC ? attr->xrcd : NULL;
	if (srq->xrcd != NULL)
		__atomic_add_fetch(&to_xrcd(srq->xrcd)->users, 1, __ATOMIC_RELEASE);
	srq->max_sge = attr->attr.max_sge;
	srq->srq->limit_event = srq_limit;
	srq->srq->error_event = srq_error;
	srq->srq->event_arg = srq;
	/* Under a thread domain neither lock is taken (ibv_alloc_td(3)); otherwise the
	 * one thread that posts pays no locked instruction. */
	if (dpv_verbs_pd_td(attr->pd) != NULL) {
		for (uint32_t i = 0; i < DPV_VERBS_SRQ_LANES; i++)
			dpv_vlock_init_none(&srq->lane_lock[i]);
		dpv_vlock_init_none(&srq->ops_lock);
	} else {
		for (uint32_t i = 0; i < DPV_VERBS_SRQ_LANES; i++)
			dpv_vlock_init(&srq->lane_lock[i]);
		dpv_vlock_init(&srq->ops_lock);
	}
	dpv_dev_own(c->dev);
	if (cq != NULL)
		cq->users++;
	srq->next_on_dev = c->device->srqs;
	c->device->srqs = srq;
	dpv_dev_disown(c->dev);
	__atomic_add_fetch(&to_pd(attr->pd)->users, 1, __ATOMIC_RELAXED);
	srq->ibsrq.context = context;
	srq->ibsrq.srq_context = attr->srq_context;
	srq->ibsrq.pd = attr->pd;
	srq->ibsrq.handle = srq->srq->id;
	pthread_mutex_init(&srq->ibsrq.mutex, NULL);
	pthread_cond_init(&srq->ibsrq.cond, NULL);
	srq->cq = attr->cq;
	attr->attr.max_wr = srq->srq->max_wr;
	return &srq->ibsrq;
}

struct ibv_srq *ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	struct ibv_srq_init_attr_ex ex;
	struct ibv_srq *srq;

	memset(&ex, 0, sizeof(ex));
	ex.srq_context = attr->srq_context;
	ex.attr = attr->attr;
	ex.comp_mask = IBV_SRQ_INIT_ATTR_PD;
	ex.pd = pd;
	srq = dpv_verbs_create_srq_ex(pd->context, &ex);
	if (srq != NULL)
		attr->attr = ex.attr;
	return srq;
}

int ibv_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr, int mask)
{
	struct dpv_srq_v *srq = to_srq(ibsrq);

	/* Resizing is not offered (no IBV_DEVICE_SRQ_RESIZE): IBV_SRQ_MAX_WR is EINVAL. */
	if (mask != IBV_SRQ_LIMIT || attr->srq_limit > srq->srq->max_wr)
		return EINVAL;
	/* Arms the one-shot SRQ_LIMIT_REACHED event (doc/guides/srq.md §1). */
	__atomic_store_n(&srq->srq->limit, attr->srq_limit, __ATOMIC_RELEASE);
	return 0;
}

int ibv_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr)
{
	struct dpv_srq_v *srq = to_srq(ibsrq);

	attr->max_wr = srq->srq->max_wr;
	attr->max_sge = srq->max_sge;
	attr->srq_limit = __atomic_load_n(&srq->srq->limit, __ATOMIC_ACQUIRE);
	return 0;
}

int ibv_destroy_srq(struct ibv_srq *ibsrq)
{
	struct dpv_srq_v *srq = to_srq(ibsrq);
	struct dpv_dev *dev = srq->ctx->dev;

	/* ibv_destroy_srq(3): EBUSY while a QP is attached. */
	if (srq->users != 0)
		return EBUSY;
	dpv_dev_own(dev);
	if (srq->tm || srq->xrcd != NULL)
		to_cq(srq->cq)->users--;
	if (srq->xrcd != NULL)
		__atomic_sub_fetch(&to_xrcd(srq->xrcd)->users, 1, __ATOMIC_RELEASE);
	for (struct dpv_srq_v **p = &srq->ctx->device->srqs; *p != NULL; p = &(*p)->next_on_dev) {
		if (*p == srq) {
			*p = srq->next_on_dev;
			break;
		}
	}
	dpv_srq_destroy(dev->xport, srq->srq);
	dpv_dev_disown(dev);
	for (uint32_t i = 0; i < DPV_VERBS_SRQ_LANES; i++)
		dpv_vlock_destroy(&srq->lane_lock[i]);
	dpv_vlock_destroy(&srq->ops_lock);
	__atomic_sub_fetch(&to_pd(ibsrq->pd)->users, 1, __ATOMIC_RELAXED);
	dpv_verbs_obj_free(ibsrq->pd, srq, DPV_VERBS_RES_TYPE_SRQ, srq->custom_mem);
	return 0;
}

int dpv_verbs_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
			    struct ibv_recv_wr **bad)
{
	struct dpv_srq_v *srq = to_srq(ibsrq);
	uint32_t lane = dpv_verbs_lane(DPV_VERBS_SRQ_LANES), first, n = 0;
	struct dpv_ring *r = srq->srq->lanes.lane[lane];
	int ret = 0;
	bool fast;

	fast = dpv_vlock(&srq->lane_lock[lane]);
	for (; wr != NULL; wr = wr->next, n++) {
		/* doc/guides/srq.md §1: post-time checks, in list order; earlier WRs stay
		 * posted. */
		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > srq->max_sge || __atomic_load_n(&srq->srq->error, __ATOMIC_ACQUIRE) ||
		    (wr->num_sge > 0 && wr->sg_list == NULL)) {
			ret = EINVAL;
			break;
		}
		if (__atomic_load_n(&srq->srq->posted, __ATOMIC_ACQUIRE) + n >= srq->srq->max_wr ||
		    dpv_ring_reserve(r, n + 1, &first) < n + 1) {
			ret = ENOMEM;
			break;
		}
		dpv_verbs_write_rwqe(wr, dpv_ring_slot(r, first + n));
	}
	if (n) {
		/* Counted before they are visible, so the device never sees posted < 0. */
		__atomic_add_fetch(&srq->srq->posted, n, __ATOMIC_ACQ_REL);
		dpv_ring_commit(r, n);
	}
	dpv_vunlock(&srq->lane_lock[lane], fast);
	if (ret != 0)
		*bad = wr;
	return ret;
}

/* ---- tag matching: ibv_post_srq_ops(3) onto lib/tm ---- */

static int tm_op_of(const struct dpv_srq_v *srq, const struct ibv_ops_wr *wr,
		    struct dpv_tm_op *op, struct dpv_tm_sge *sges)
{
	memset(op, 0, sizeof(*op));
	op->wr_id = wr->wr_id;
	if (wr->flags & ~(IBV_OPS_SIGNALED | IBV_OPS_TM_SYNC))
		return EINVAL;
	op->flags = (wr->flags & IBV_OPS_SIGNALED ? DPV_TM_OP_F_SIGNALED : 0) |
		    (wr->flags & IBV_OPS_TM_SYNC ? DPV_TM_OP_F_SYNC : 0);
	op->unexpected_cnt = wr->tm.unexpected_cnt;
	switch (wr->opcode) {
	case IBV_WR_TAG_ADD:
		if (wr->tm.add.num_sge < 0 || (uint32_t)wr->tm.add.num_sge > srq->max_sge ||
		    (wr->tm.add.num_sge > 0 && wr->tm.add.sg_list == NULL))
			return EINVAL;
		op->opcode = DPV_TM_OP_ADD;
		op->tag = wr->tm.add.tag;
		op->mask = wr->tm.add.mask;
		op->recv_wr_id = wr->tm.add.recv_wr_id;
		op->num_sge = (uint32_t)wr->tm.add.num_sge;
		for (int i = 0; i < wr->tm.add.num_sge; i++) {
			sges[i].addr = wr->tm.add.sg_list[i].addr;
			sges[i].length = wr->tm.add.sg_list[i].length;
			sges[i].lkey = wr->tm.add.sg_list[i].lkey;
		}
		op->sg_list = sges;
		return 0;
	case IBV_WR_TAG_DEL:
		op->opcode = DPV_TM_OP_DEL;
		op->handle = wr->tm.handle;
		return 0;
	case IBV_WR_TAG_SYNC:
		op->opcode = DPV_TM_OP_SYNC;
		return 0;
	default:
		return EINVAL;
	}
}

int dpv_verbs_post_srq_ops(struct ibv_srq *ibsrq, struct ibv_ops_wr *wr,
			   struct ibv_ops_wr **bad)
{
	const struct ibv_ops_wr *first_wr = wr;
	struct dpv_srq_v *srq = to_srq(ibsrq);
	struct dpv_tm_sge sges[DPV_TM_MAX_SGE_LIMIT];
	uint32_t lane, first;
	struct dpv_ring *r;
	struct dpv_tm_op op;
	int ret = 0;
	bool fast;

	if (!srq->tm) {
		*bad = wr;
		return EINVAL;
	}
	lane = dpv_verbs_lane(DPV_VERBS_SRQ_LANES);
	r = srq->srq->tm_ops.lane[lane];
	/* The post side of lib/tm is one thread at a time; ops of one thread stay in
	 * their lane, so the device runs them in the order this thread posted them. */
	fast = dpv_vlock(&srq->ops_lock);
	for (; wr != NULL; wr = wr->next) {
		ret = tm_op_of(srq, wr, &op, sges);
		if (ret == 0)
			ret = dpv_tm_post(srq->srq->tm, &op);
		if (ret != 0)
			break;
		/* Every lane holds max_ops, and lib/tm just counted this op within it. */
		dpv_ring_reserve(r, 1, &first);
		op.sg_list = NULL; /* copied into the entry by dpv_tm_post() */
		*(struct dpv_tm_op *)dpv_ring_slot(r, first) = op;
		dpv_ring_commit(r, 1);
		if (wr->opcode == IBV_WR_TAG_ADD)
			wr->tm.handle = op.handle; /* doc/guides/srq.md §3: synchronously */
	}
	dpv_vunlock(&srq->ops_lock, fast);
	if (wr != first_wr)
		dpv_srq_ops_ring(srq->srq);
	if (ret != 0)
		*bad = wr;
	/* The ops wait for the device's next poll, which runs them before the frames it
	 * receives (an ADD is in the list for any message that poll finds), as the poll
	 * that looks for their completions. A full list or op queue drives the device
	 * all the same, for a program that retries the post instead of polling. */
	if (ret != 0)
		dpv_engine_progress_dev(srq->ctx->dev);
	return ret;
}
