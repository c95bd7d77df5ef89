/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Queue pairs (ibv_create_qp(3), ibv_modify_qp(3), ibv_query_qp(3), ibv_post_send(3),
 * ibv_post_recv(3)) and address handles (ibv_create_ah(3)).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_byteorder.h>

#include "verbs_priv.h"

/*
 * The QP's state as the device last set it: the device moves a QP to ERR on its own
 * (error completions, RNR retries exhausted), so ibv_qp.state, which the facade sets
 * at ibv_modify_qp(), can be behind. A byte the owner writes; a stale read only
 * delays by one post what the device already decided.
 */
static enum ibv_qp_state qp_state(const struct dpv_qp_v *qp)
{
	return (enum ibv_qp_state)__atomic_load_n(&qp->qp->attr.state, __ATOMIC_ACQUIRE);
}

/* The device moved the QP to ERR on its own: the affiliated asynchronous error of its
 * kind (IBTA 11.6.3, ibv_get_async_event(3)). */
static void qp_fatal(struct dpv_qp *dqp, void *arg)
{
	static const enum ibv_event_type event[] = {
		[DPV_QP_EV_FATAL] = IBV_EVENT_QP_FATAL,
		[DPV_QP_EV_REQ_ERR] = IBV_EVENT_QP_REQ_ERR,
		[DPV_QP_EV_ACCESS_ERR] = IBV_EVENT_QP_ACCESS_ERR,
	};
	struct dpv_qp_v *qp = arg;
	enum ibv_event_type type = IBV_EVENT_QP_FATAL;

	if (dqp->event != DPV_QP_EV_NONE && dqp->event < RTE_DIM(event))
		type = event[dqp->event];
	qp->ibqp.state = IBV_QPS_ERR;
	dpv_verbs_async_event(qp->ctx, type, &qp->ibqp);
}

static int check_caps(const struct ibv_qp_cap *cap, bool srq)
{
	if (cap->max_send_wr > DPV_MAX_QP_WR || cap->max_send_sge > DPV_MAX_SGE ||
	    cap->max_inline_data > DPV_MAX_INLINE)
		return EINVAL;
	if (!srq && (cap->max_recv_wr > DPV_MAX_QP_WR || cap->max_recv_sge > DPV_MAX_SGE))
		return EINVAL;
	return 0;
}

/*
 * The inline room a QP gets: what it asked for, at least as much as its scatter list
 * describes (an ibv_sge's 16 bytes per entry), as rxe rounds it, up to DPV_MAX_INLINE.
 * Every send WQE of the transport holds DPV_MAX_INLINE bytes, so the room costs nothing;
 * rounding up keeps programs that post a small SEND inline on a QP that asked for no
 * room (rdma_xclient) working as on a kernel provider, and the QP reports the room back.
 */
static uint32_t inline_room(const struct ibv_qp_cap *cap)
{
	uint64_t sgl = (uint64_t)cap->max_send_sge * sizeof(struct ibv_sge);

	return (uint32_t)RTE_MIN(RTE_MAX((uint64_t)cap->max_inline_data, sgl),
				 (uint64_t)DPV_MAX_INLINE);
}

/* The comp_mask bits of ibv_qp_init_attr_ex that rdma-core 44 defines. */
#define QP_INIT_ATTR_KNOWN (IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_XRCD | \
			    IBV_QP_INIT_ATTR_CREATE_FLAGS | IBV_QP_INIT_ATTR_MAX_TSO_HEADER | \
			    IBV_QP_INIT_ATTR_IND_TABLE | IBV_QP_INIT_ATTR_RX_HASH | \
			    IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)

/*
 * ibv_create_qp_ex(3)'s request, as a provider judges it: EINVAL for what is not a
 * request at all (bits or QP types libibverbs does not define, no PD, no CQs, caps
 * beyond the device's; an XRC target without its XRC domain), EOPNOTSUPP for a valid
 * one dpverbs does not offer: raw packet and driver QPs, creation flags, TSO, RSS, an
 * XRC domain on a QP other than an XRC target, and send ops of the extended send API
 * the QP type does not carry. IBV_QP_INIT_ATTR_CREATE_FLAGS with no flag asks for
 * nothing: accepted. Its caps are rewritten for an XRC QP (no receive side).
 */
static int check_init_attr(struct ibv_context *context, struct ibv_qp_init_attr_ex *attr)
{
	switch (attr->qp_type) {
	case IBV_QPT_RC:
	case IBV_QPT_UC:
	case IBV_QPT_UD:
		break;
	case IBV_QPT_XRC_SEND:
		/* doc/guides/srq.md §7: a send queue only; the receive side's caps and
		 * CQ mean nothing to it. */
		attr->cap.max_recv_wr = 0;
		attr->cap.max_recv_sge = 0;
		if (attr->srq != NULL)
			return EINVAL;
		break;
	case IBV_QPT_XRC_RECV:
		/* Receives only, into XRC SRQs of its domain: no PD, CQ, SRQ or queue
		 * of its own. */
		if ((attr->comp_mask & ~QP_INIT_ATTR_KNOWN) != 0 ||
		    !(attr->comp_mask & IBV_QP_INIT_ATTR_XRCD) || attr->xrcd == NULL ||
		    attr->xrcd->context != context || attr->srq != NULL)
			return EINVAL;
		if ((attr->comp_mask & (IBV_QP_INIT_ATTR_MAX_TSO_HEADER |
					IBV_QP_INIT_ATTR_IND_TABLE | IBV_QP_INIT_ATTR_RX_HASH |
					IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)) != 0 ||
		    ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && attr->create_flags != 0))
			return EOPNOTSUPP;
		memset(&attr->cap, 0, sizeof(attr->cap));
		return 0;
	case IBV_QPT_RAW_PACKET:
	case IBV_QPT_DRIVER:
		return EOPNOTSUPP;
	default:
		return EINVAL;
	}
	if ((attr->comp_mask & ~QP_INIT_ATTR_KNOWN) != 0 ||
	    !(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || attr->pd == NULL)
		return EINVAL;
	if ((attr->comp_mask & (IBV_QP_INIT_ATTR_XRCD | IBV_QP_INIT_ATTR_MAX_TSO_HEADER |
				IBV_QP_INIT_ATTR_IND_TABLE | IBV_QP_INIT_ATTR_RX_HASH)) != 0 ||
	    ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && attr->create_flags != 0) ||
	    ((attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
	     dpv_verbs_qp_ex_check(attr->qp_type, attr->send_ops_flags) != 0))
		return EOPNOTSUPP;
	if (attr->send_cq == NULL || (attr->recv_cq == NULL && attr->qp_type != IBV_QPT_XRC_SEND) ||
	    check_caps(&attr->cap, attr->srq != NULL) != 0 ||
	    (attr->srq != NULL && attr->qp_type != IBV_QPT_RC && to_srq(attr->srq)->tm))
		return EINVAL;
	return 0;
}

struct ibv_qp *dpv_verbs_create_qp_ex(struct ibv_context *context,
				      struct ibv_qp_init_attr_ex *attr)
{
	struct dpv_context *c = to_ctx(context);
	struct dpv_qp_init init;
	struct ibv_cq *send_cq, *recv_cq;
	struct dpv_qp_v *qp;
	struct ibv_pd *pd;
	bool custom, tgt;
	int ret;

	ret = check_init_attr(context, attr);
	if (ret != 0) {
		errno = ret;
		return NULL;
	}
	tgt = attr->qp_type == IBV_QPT_XRC_RECV;
	pd = tgt ? NULL : attr->pd;
	qp = dpv_verbs_obj_alloc(pd, sizeof(*qp), DPV_VERBS_RES_TYPE_QP, &custom);
	if (qp == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	qp->custom_mem = custom;
	memset(&init, 0, sizeof(init));
	init.type = attr->qp_type == IBV_QPT_UC ? DPV_QPT_UC
		    : attr->qp_type == IBV_QPT_UD ? DPV_QPT_UD : DPV_QPT_RC;
	init.xrc = tgt ? DPV_XRC_TGT : attr->qp_type == IBV_QPT_XRC_SEND ? DPV_XRC_INI
								      : DPV_XRC_NONE;
	init.xrcd = tgt ? to_xrcd(attr->xrcd)->id : 0;
	init.pd = pd != NULL ? to_pd(pd)->id : 0;
	/* An XRC initiator has no receive side: its send CQ stands in for the CQ the
	 * transport's RC QP names. */
	send_cq = tgt ? NULL : attr->send_cq;
	recv_cq = tgt ? NULL : attr->qp_type == IBV_QPT_XRC_SEND ? attr->send_cq : attr->recv_cq;
	init.max_send_wr = attr->cap.max_send_wr;
	init.max_recv_wr = attr->srq != NULL ? 0 : attr->cap.max_recv_wr;
	init.max_send_sge = attr->cap.max_send_sge;
	init.max_recv_sge = attr->cap.max_recv_sge;
	init.max_inline = inline_room(&attr->cap);
	init.sq_sig_all = attr->sq_sig_all != 0;
	init.send_cq = send_cq != NULL ? to_cq(send_cq)->cq : NULL;
	init.recv_cq = recv_cq != NULL ? to_cq(recv_cq)->cq : NULL;
	init.srq = attr->srq != NULL ? to_srq(attr->srq)->srq : NULL;
	dpv_dev_own(c->dev);
	ret = dpv_qp_create(c->dev->xport, &init, &qp->qp);
	if (ret == 0) {
		if (send_cq != NULL)
			to_cq(send_cq)->users++;
		if (recv_cq != NULL)
			to_cq(recv_cq)->users++;
		if (attr->srq != NULL)
			to_srq(attr->srq)->users++;
		if (pd != NULL)
			__atomic_add_fetch(&to_pd(pd)->users, 1, __ATOMIC_RELAXED);
		if (tgt)
			__atomic_add_fetch(&to_xrcd(attr->xrcd)->users, 1, __ATOMIC_RELEASE);
	}
	dpv_dev_disown(c->dev);
	if (ret != 0) {
		dpv_verbs_obj_free(pd, qp, DPV_VERBS_RES_TYPE_QP, custom);
		errno = ret == ENOSPC ? ENOMEM : ret;
		return NULL;
	}
	qp->ctx = c;
	qp->max_inline = init.max_inline;
	qp->max_send_sge = init.max_send_sge;
	qp->max_recv_sge = init.max_recv_sge;
	/* Report what the QP really has (ibv_create_qp(3): the caps are updated). */
	attr->cap.max_send_wr = qp->qp->sq != NULL ? dpv_ring_count(qp->qp->sq) : 0;
	if (attr->srq == NULL)
		attr->cap.max_recv_wr = qp->qp->rq != NULL ? dpv_ring_count(qp->qp->rq) : 0;
	attr->cap.max_inline_data = qp->max_inline;
	qp->qp->fatal_event = qp_fatal;
	qp->qp->fatal_arg = qp;
	if (pd != NULL && dpv_verbs_pd_td(pd) != NULL) {
		dpv_vlock_init_none(&qp->sq_lock);
		dpv_vlock_init_none(&qp->rq_lock);
	} else {
		dpv_vlock_init(&qp->sq_lock);
		dpv_vlock_init(&qp->rq_lock);
	}
	qp->ibqp.context = context;
	qp->ibqp.qp_context = attr->qp_context;
	qp->ibqp.pd = pd;
	qp->ibqp.send_cq = send_cq;
	qp->ibqp.recv_cq = recv_cq;
	qp->ibqp.srq = attr->srq;
	qp->ibqp.handle = qp->qp->qpn;
	qp->ibqp.qp_num = qp->qp->qpn;
	qp->ibqp.state = IBV_QPS_RESET;
	qp->ibqp.qp_type = attr->qp_type;
	pthread_mutex_init(&qp->ibqp.mutex, NULL);
	pthread_cond_init(&qp->ibqp.cond, NULL);
	if (tgt) {
		qp->xrcd = attr->xrcd;
		dpv_verbs_xrc_tgt_add(qp);
	}
	if ((attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
	    dpv_verbs_qp_ex_init(qp) != 0) {
		ibv_destroy_qp(&qp->ibqp);
		errno = ENOMEM;
		return NULL;
	}
	return &qp->ibqp;
}

struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr_ex ex;
	struct ibv_qp *qp;

	memset(&ex, 0, sizeof(ex));
	ex.qp_context = attr->qp_context;
	ex.send_cq = attr->send_cq;
	ex.recv_cq = attr->recv_cq;
	ex.srq = attr->srq;
	ex.cap = attr->cap;
	ex.qp_type = attr->qp_type;
	ex.sq_sig_all = attr->sq_sig_all;
	ex.comp_mask = IBV_QP_INIT_ATTR_PD;
	ex.pd = pd;
	qp = dpv_verbs_create_qp_ex(pd->context, &ex);
	if (qp != NULL)
		attr->cap = ex.cap;
	return qp;
}

int ibv_destroy_qp(struct ibv_qp *ibqp)
{
	struct dpv_qp_v *qp = to_qp(ibqp);
	struct dpv_dev *dev = qp->ctx->dev;

	/* An XRC target lives on while handles of ibv_open_qp(3) hold it. */
	if (qp->xrcd != NULL) {
		qp = dpv_verbs_xrc_tgt_release(qp);
		if (qp == NULL)
			return 0;
		ibqp = &qp->ibqp;
	}
	dpv_dev_own(dev);
	dpv_verbs_mw_qp_gone(dev, ibqp->qp_num);
	dpv_qp_destroy(dev->xport, qp->qp);
	if (ibqp->send_cq != NULL)
		to_cq(ibqp->send_cq)->users--;
	if (ibqp->recv_cq != NULL)
		to_cq(ibqp->recv_cq)->users--;
	if (ibqp->srq != NULL)
		to_srq(ibqp->srq)->users--;
	if (ibqp->pd != NULL)
		__atomic_sub_fetch(&to_pd(ibqp->pd)->users, 1, __ATOMIC_RELAXED);
	if (qp->xrcd != NULL)
		__atomic_sub_fetch(&to_xrcd(qp->xrcd)->users, 1, __ATOMIC_RELEASE);
	dpv_dev_disown(dev);
	dpv_vlock_destroy(&qp->sq_lock);
	dpv_vlock_destroy(&qp->rq_lock);
	dpv_verbs_qp_ex_fini(qp);
	dpv_verbs_obj_free(ibqp->pd, qp, DPV_VERBS_RES_TYPE_QP, qp->custom_mem);
	return 0;
}

/* The IBV_QP_* bits dpverbs acts on; the rest are refused (ibv_modify_qp(3): EINVAL). */
#define MODIFY_MASK (IBV_QP_STATE | IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | \
		     IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY | IBV_QP_AV | \
		     IBV_QP_PATH_MTU | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | \
		     IBV_QP_RQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER | \
		     IBV_QP_SQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_DEST_QPN)

/*
 * A QP's access flags are ibv_reg_mr(3)'s IBV_ACCESS_* bits, of which a QP acts on the
 * remote ones (IBTA 10.2.3: which incoming RDMA operations it allows). Programs often
 * give their QPs the access word of their MRs; the bits that only mean something to a
 * region (on demand, huge pages, relaxed ordering...) mean nothing to a QP and, as
 * providers do, are taken and dropped. Bits libibverbs does not define are EINVAL.
 */
#define QP_ACCESS_DEFINED (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND | \
			   IBV_ACCESS_ZERO_BASED | IBV_ACCESS_ON_DEMAND | IBV_ACCESS_HUGETLB | \
			   IBV_ACCESS_RELAXED_ORDERING | IBV_ACCESS_OPTIONAL_RANGE)
#define QP_ACCESS_KEPT (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

/* An address vector's destination: RoCEv2 needs a global route to an IPv4-mapped GID. */
static int av_of(const struct ibv_ah_attr *ah, uint32_t *dst_ip, uint8_t *tos, uint8_t *ttl)
{
	if (!ah->is_global || !dpv_verbs_gid_ipv4(&ah->grh.dgid, dst_ip) ||
	    (ah->port_num != 0 && ah->port_num != 1) || ah->grh.sgid_index != 0)
		return EINVAL;
	*tos = ah->grh.traffic_class;
	*ttl = ah->grh.hop_limit ? ah->grh.hop_limit : 64;
	return 0;
}

/*
 * A QP moved to RESET leaves no completion behind (ibv_modify_qp(3): RESET is a QP
 * just created): those its CQs hold and the application has not polled are taken out,
 * on every CQ it completes into (send, receive, and its TM SRQ's), as rdma-core's
 * providers clean their CQs. The caller owns the device, so nothing is produced into
 * them meanwhile; each CQ's poll lock keeps its pollers out while its slots are marked.
 */
static void clean_cqs(struct dpv_qp_v *qp)
{
	struct ibv_cq *cqs[3] = {qp->ibqp.send_cq, qp->ibqp.recv_cq, NULL};

	if (qp->ibqp.srq != NULL && to_srq(qp->ibqp.srq)->tm)
		cqs[2] = to_srq(qp->ibqp.srq)->cq;
	for (int i = 0; i < 3; i++) {
		struct dpv_cq_v *cq;
		bool fast;

		if (cqs[i] == NULL || (i > 0 && cqs[i] == cqs[0]) || (i > 1 && cqs[i] == cqs[1]))
			continue;
		cq = to_cq(cqs[i]);
		fast = dpv_vlock(&cq->poll_lock);
		dpv_cq_clean(cq->cq, qp->qp->qpn);
		dpv_vunlock(&cq->poll_lock, fast);
	}
}

int ibv_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask)
{
	struct dpv_qp_v *qp = to_qp(ibqp);
	struct dpv_dev *dev = qp->ctx->dev;
	struct dpv_qp_attr a;
	uint32_t mask = (uint32_t)attr_mask;
	bool was_reset;
	int ret;

	if ((mask & ~MODIFY_MASK) != 0 || ((mask & IBV_QP_PORT) && attr->port_num != 1) ||
	    ((mask & IBV_QP_CUR_STATE) && attr->cur_qp_state != qp_state(qp)) ||
	    ((mask & IBV_QP_ACCESS_FLAGS) && (attr->qp_access_flags & ~QP_ACCESS_DEFINED) != 0))
		return EINVAL;
	memset(&a, 0, sizeof(a));
	a.state = (uint8_t)attr->qp_state;
	a.path_mtu = (uint8_t)attr->path_mtu;
	a.timeout = attr->timeout;
	a.retry_cnt = attr->retry_cnt;
	a.rnr_retry = attr->rnr_retry;
	a.min_rnr_timer = attr->min_rnr_timer;
	a.access = attr->qp_access_flags & QP_ACCESS_KEPT;
	a.qkey = attr->qkey;
	a.dest_qpn = attr->dest_qp_num;
	a.rq_psn = attr->rq_psn;
	a.sq_psn = attr->sq_psn;
	a.pkey_index = attr->pkey_index;
	a.max_rd_atomic = attr->max_rd_atomic;
	a.max_dest_rd_atomic = attr->max_dest_rd_atomic;
	if ((mask & IBV_QP_AV) && av_of(&attr->ah_attr, &a.dst_ip, &a.tos, &a.ttl) != 0)
		return EINVAL;
	mask &= ~(uint32_t)IBV_QP_CUR_STATE;
	dpv_dev_own(dev);
	was_reset = qp->qp->attr.state == DPV_QPS_RESET;
	ret = dpv_qp_modify(dev->xport, qp->qp, &a, mask);
	if (ret == 0) {
		ibqp->state = (enum ibv_qp_state)qp->qp->attr.state;
		if (ibqp->state == IBV_QPS_RESET && !was_reset)
			clean_cqs(qp);
	}
	dpv_dev_disown(dev);
	return ret;
}

int ibv_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask,
		 struct ibv_qp_init_attr *init_attr)
{
	struct dpv_qp_v *qp = to_qp(ibqp);
	const struct dpv_qp_attr *a = &qp->qp->attr;

	(void)attr_mask; /* everything is cheap to report */
	memset(attr, 0, sizeof(*attr));
	attr->qp_state = (enum ibv_qp_state)a->state;
	attr->cur_qp_state = attr->qp_state;
	attr->path_mtu = (enum ibv_mtu)a->path_mtu;
	attr->path_mig_state = IBV_MIG_MIGRATED;
	attr->qkey = a->qkey;
	attr->rq_psn = a->rq_psn;
	attr->sq_psn = a->sq_psn;
	attr->dest_qp_num = a->dest_qpn;
	attr->qp_access_flags = a->access;
	attr->cap.max_send_wr = qp->qp->sq != NULL ? dpv_ring_count(qp->qp->sq) : 0;
	attr->cap.max_recv_wr = qp->qp->rq != NULL ? dpv_ring_count(qp->qp->rq) : 0;
	attr->cap.max_send_sge = qp->max_send_sge;
	attr->cap.max_recv_sge = qp->max_recv_sge;
	attr->cap.max_inline_data = qp->max_inline;
	if (a->dst_ip != 0) {
		attr->ah_attr.is_global = 1;
		dpv_verbs_gid_of(a->dst_ip, &attr->ah_attr.grh.dgid);
		attr->ah_attr.grh.traffic_class = a->tos;
		attr->ah_attr.grh.hop_limit = a->ttl;
		attr->ah_attr.port_num = 1;
	}
	attr->pkey_index = a->pkey_index;
	attr->sq_draining = 0;
	attr->max_rd_atomic = a->max_rd_atomic;
	attr->max_dest_rd_atomic = a->max_dest_rd_atomic;
	attr->min_rnr_timer = a->min_rnr_timer;
	attr->port_num = 1;
	attr->timeout = a->timeout;
	attr->retry_cnt = a->retry_cnt;
	attr->rnr_retry = a->rnr_retry;
	if (init_attr != NULL) {
		memset(init_attr, 0, sizeof(*init_attr));
		init_attr->qp_context = ibqp->qp_context;
		init_attr->send_cq = ibqp->send_cq;
		init_attr->recv_cq = ibqp->recv_cq;
		init_attr->srq = ibqp->srq;
		init_attr->cap = attr->cap;
		init_attr->qp_type = ibqp->qp_type;
		init_attr->sq_sig_all = qp->qp->init.sq_sig_all;
	}
	return 0;
}

/* ---- posting ---- */

static const uint8_t wr_opcode[] = {
	[IBV_WR_SEND] = DPV_WR_SEND + 1,
	[IBV_WR_SEND_WITH_IMM] = DPV_WR_SEND_WITH_IMM + 1,
	[IBV_WR_RDMA_WRITE] = DPV_WR_RDMA_WRITE + 1,
	[IBV_WR_RDMA_WRITE_WITH_IMM] = DPV_WR_RDMA_WRITE_WITH_IMM + 1,
	[IBV_WR_RDMA_READ] = DPV_WR_RDMA_READ + 1,
	[IBV_WR_ATOMIC_CMP_AND_SWP] = DPV_WR_ATOMIC_CMP_SWP + 1,
	[IBV_WR_ATOMIC_FETCH_AND_ADD] = DPV_WR_ATOMIC_FETCH_ADD + 1,
	[IBV_WR_LOCAL_INV] = DPV_WR_LOCAL_INV + 1,
	[IBV_WR_BIND_MW] = DPV_WR_BIND_MW + 1,
	[IBV_WR_SEND_WITH_INV] = DPV_WR_SEND_WITH_INV + 1,
	[IBV_WR_ATOMIC_WRITE] = DPV_WR_ATOMIC_WRITE + 1,
};

/* The opcodes a QP type carries (IBTA 9.7.7, 9.8: UC has no READ, atomics or SEND with
 * Invalidate, UD sends only); a provider refuses the others at post with EINVAL. */
static bool opcode_fits(enum ibv_qp_type type, uint8_t op)
{
	switch (type) {
	case IBV_QPT_RC:
		return true;
	case IBV_QPT_XRC_SEND:
		return op != DPV_WR_ATOMIC_WRITE;
	case IBV_QPT_UC:
		return op != DPV_WR_RDMA_READ && op != DPV_WR_ATOMIC_CMP_SWP &&
		       op != DPV_WR_ATOMIC_FETCH_ADD && op != DPV_WR_SEND_WITH_INV &&
		       op != DPV_WR_ATOMIC_WRITE;
	default:
		return op == DPV_WR_SEND || op == DPV_WR_SEND_WITH_IMM;
	}
}

/* An atomic write (IBTA 1.5) WR: one of the extended API's batch (ibv_wr_atomic_write()
 * put its 8 bytes in wr.atomic.swap), with no scatter list. ibv_post_send(3)'s WR has no
 * field for the 8 bytes: there the opcode is EINVAL. */
static bool atomic_write_ok(const struct dpv_qp_v *qp, const struct ibv_send_wr *wr)
{
	const struct dpv_wr_batch *b = qp->batch;

	return b != NULL && (uintptr_t)wr >= (uintptr_t)b->wr &&
	       (uintptr_t)wr < (uintptr_t)(b->wr + b->cap) && wr->num_sge == 0;
}

#define MW_OPS (1u << DPV_WR_BIND_MW | 1u << DPV_WR_LOCAL_INV | 1u << DPV_WR_SEND_WITH_INV)

/*
 * The memory-window WRs of ibv_post_send(3): BIND_MW (bind_mw.mw, its new key's tag in
 * bind_mw.rkey, bind_info: dpv_verbs_bind_wqe()), LOCAL_INV and SEND_WITH_INV
 * (invalidate_rkey). A bind or local invalidation carries no data: EINVAL with
 * IBV_SEND_INLINE, or for a bind without a window of this context.
 */
static __attribute__((noinline)) int write_mw_swqe(const struct ibv_send_wr *wr,
						   struct dpv_swqe *w, uint8_t op)
{
	w->imm = wr->invalidate_rkey;
	if (op == DPV_WR_SEND_WITH_INV)
		return 0;
	if (w->flags & DPV_WR_F_INLINE)
		return EINVAL;
	w->num_sge = 0;
	w->length = 0;
	if (op == DPV_WR_LOCAL_INV)
		return 0;
	if (wr->bind_mw.mw == NULL)
		return EINVAL;
	return dpv_verbs_bind_wqe(wr->bind_mw.mw, wr->bind_mw.rkey, &wr->bind_mw.bind_info, w);
}

/* Check one send WR and write it into its SQ slot. */
static int write_swqe(struct dpv_qp_v *qp, const struct ibv_send_wr *wr, struct dpv_swqe *w)
{
	bool ud = qp->ibqp.qp_type == IBV_QPT_UD;
	uint64_t total = 0;
	bool atomic;
	uint8_t op;
	int i;

	if ((unsigned int)wr->opcode >= sizeof(wr_opcode) || wr_opcode[wr->opcode] == 0)
		return EINVAL;
	op = wr_opcode[wr->opcode] - 1;
	if (!opcode_fits(qp->ibqp.qp_type, op))
		return EINVAL;
	atomic = op == DPV_WR_ATOMIC_CMP_SWP || op == DPV_WR_ATOMIC_FETCH_ADD;
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->max_send_sge ||
	    (wr->num_sge > 0 && wr->sg_list == NULL))
		return EINVAL;
	if (wr->send_flags & ~(IBV_SEND_FENCE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED |
			       IBV_SEND_INLINE))
		return EINVAL;
	for (i = 0; i < wr->num_sge; i++)
		total += wr->sg_list[i].length;
	if (total > UINT32_MAX)
		return EINVAL;
	/* ibv_post_send(3): an atomic's scatter list is the one 8-byte buffer that gets
	 * the remote value; never inline. */
	if (atomic && (wr->num_sge != 1 || total != sizeof(uint64_t) ||
		       (wr->send_flags & IBV_SEND_INLINE)))
		return EINVAL;
	w->wr_id = wr->wr_id;
	w->opcode = op;
	w->flags = (wr->send_flags & IBV_SEND_SIGNALED ? DPV_WR_F_SIGNALED : 0) |
		   (wr->send_flags & IBV_SEND_SOLICITED ? DPV_WR_F_SOLICITED : 0) |
		   (wr->send_flags & IBV_SEND_FENCE ? DPV_WR_F_FENCE : 0);
	w->length = (uint32_t)total;
	w->imm = rte_be_to_cpu_32(wr->imm_data);
	if (wr->send_flags & IBV_SEND_INLINE) {
		if (op == DPV_WR_RDMA_READ || total > qp->max_inline)
			return EINVAL;
		w->flags |= DPV_WR_F_INLINE;
		w->num_sge = 0;
		if (wr->num_sge == 1) { /* the common case, without the loop's offsets */
			memcpy(w->inline_data, (void *)(uintptr_t)wr->sg_list[0].addr, total);
		} else {
			for (i = 0, total = 0; i < wr->num_sge; i++) {
				memcpy(w->inline_data + total,
				       (void *)(uintptr_t)wr->sg_list[i].addr,
				       wr->sg_list[i].length);
				total += wr->sg_list[i].length;
			}
		}
	} else {
		w->num_sge = (uint8_t)wr->num_sge;
		for (i = 0; i < wr->num_sge; i++) {
			w->sge[i].addr = wr->sg_list[i].addr;
			w->sge[i].length = wr->sg_list[i].length;
			w->sge[i].lkey = wr->sg_list[i].lkey;
		}
	}
	if (qp->ibqp.qp_type == IBV_QPT_XRC_SEND)
		w->xrc_srqn = wr->qp_type.xrc.remote_srqn;
	if (ud) {
		struct dpv_ah *ah;

		if (wr->wr.ud.ah == NULL)
			return EINVAL;
		ah = to_ah(wr->wr.ud.ah);
		w->ud_dst_ip = ah->dst_ip;
		w->ud_tos = ah->tos;
		w->ud_ttl = ah->ttl;
		w->ud_remote_qpn = wr->wr.ud.remote_qpn;
		w->ud_remote_qkey = wr->wr.ud.remote_qkey;
	} else if (atomic) {
		w->remote_addr = wr->wr.atomic.remote_addr;
		w->rkey = wr->wr.atomic.rkey;
		w->compare_add = wr->wr.atomic.compare_add;
		w->swap = wr->wr.atomic.swap;
	} else if (op != DPV_WR_SEND && op != DPV_WR_SEND_WITH_IMM) {
		if (unlikely((1u << op) & MW_OPS))
			return write_mw_swqe(wr, w, op);
		/* An atomic write is checked here, not with the opcode: a SEND pays for
		 * none of it. */
		if (op == DPV_WR_ATOMIC_WRITE) {
			if (!atomic_write_ok(qp, wr))
				return EINVAL;
			w->remote_addr = wr->wr.atomic.remote_addr;
			w->rkey = wr->wr.atomic.rkey;
			w->swap = wr->wr.atomic.swap;
		} else {
			w->remote_addr = wr->wr.rdma.remote_addr;
			w->rkey = wr->wr.rdma.rkey;
		}
	}
	return 0;
}

/* Whether write_send1() takes @p wr: a SEND of one buffer on an RC or UC QP (an XRC WR
 * names its SRQ, a UD one its address: write_swqe()), with
 * no flag the general path would refuse. */
static inline bool send1_fits(const struct dpv_qp_v *qp, const struct ibv_send_wr *wr)
{
	return wr->opcode == IBV_WR_SEND && wr->num_sge == 1 && wr->sg_list != NULL &&
	       qp->max_send_sge != 0 && qp->ibqp.qp_type < IBV_QPT_UD && /* RC, UC */
	       !(wr->send_flags & ~(IBV_SEND_FENCE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED |
				    IBV_SEND_INLINE));
}

/* A copy of up to 16 bytes (inline data of a small message) in two overlapping words
 * where it has 8 or more, without the call memcpy() of a length known only at run
 * time costs. */
static inline void copy_small(uint8_t *dst, const uint8_t *src, uint32_t len)
{
	if (len >= 8 && len <= 16) {
		memcpy(dst, src, 8);
		memcpy(dst + len - 8, src + len - 8, 8);
	} else {
		memcpy(dst, src, len);
	}
}

/* write_swqe() for the WR of send1_fits(): the same checks and the same slot, without
 * the opcode table, the scatter loops and the remote fields a SEND has none of. */
static inline int write_send1(const struct dpv_qp_v *qp, const struct ibv_send_wr *wr,
			      struct dpv_swqe *w)
{
	const struct ibv_sge *sge = wr->sg_list;

	if ((wr->send_flags & IBV_SEND_INLINE) && sge->length > qp->max_inline)
		return EINVAL;
	w->wr_id = wr->wr_id;
	w->opcode = DPV_WR_SEND;
	w->flags = (wr->send_flags & IBV_SEND_SIGNALED ? DPV_WR_F_SIGNALED : 0) |
		   (wr->send_flags & IBV_SEND_SOLICITED ? DPV_WR_F_SOLICITED : 0) |
		   (wr->send_flags & IBV_SEND_FENCE ? DPV_WR_F_FENCE : 0) |
		   (wr->send_flags & IBV_SEND_INLINE ? DPV_WR_F_INLINE : 0);
	w->length = sge->length;
	w->imm = rte_be_to_cpu_32(wr->imm_data);
	if (wr->send_flags & IBV_SEND_INLINE) {
		w->num_sge = 0;
		copy_small(w->inline_data, (const uint8_t *)(uintptr_t)sge->addr, sge->length);
	} else {
		w->num_sge = 1;
		w->sge[0].addr = sge->addr;
		w->sge[0].length = sge->length;
		w->sge[0].lkey = sge->lkey;
	}
	return 0;
}

/*
 * ibv_post_send() drives the device, and so sends what it posted at once, when fewer
 * than this many WRs of the QP were unfinished (posted, not completed) before it. With
 * more in flight, the program learns of their completions only from a later
 * ibv_poll_cq() (or ibv_start_poll()), which drives the device: the new WRs wait in
 * the SQ until then and leave with those posted meanwhile, one burst on the port and
 * one pass of the device for the lot instead of one a post. A streaming sender
 * (perftest's window of 128) so sends in bursts, and a ping-pong, request-response or
 * small batch (up to this many in flight) as soon as it posts. A post that fails
 * (ENOMEM: the SQ is full) drives the device all the same, for a program that retries
 * the post instead of polling. A program that posts more than this many and then stops
 * calling verbs has its last WRs sent by the helper thread, after
 * DPV_INLINE_IDLE_US (doc/guides/configuration.md, "Progress and cores").
 */
#define POST_DRIVE_BELOW 16u

int dpv_verbs_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	struct dpv_qp_v *qp = to_qp(ibqp);
	struct dpv_ring *sq = qp->qp->sq;
	uint32_t first, n = 0, busy;
	int ret = 0;
	bool fast;

	/* A QP sends from RTS on (and flushes in ERR); before, posting is an error. */
	if (qp_state(qp) < IBV_QPS_RTS || sq == NULL) {
		*bad = wr;
		return EINVAL;
	}
	fast = dpv_vlock(&qp->sq_lock);
	busy = sq->prod_tail - __atomic_load_n(&sq->cons_head, __ATOMIC_ACQUIRE);
	for (; wr != NULL; wr = wr->next, n++) {
		if (dpv_ring_reserve(sq, n + 1, &first) < n + 1) {
			ret = ENOMEM;
			break;
		}
		ret = likely(send1_fits(qp, wr)) ? write_send1(qp, wr, dpv_ring_slot(sq, first + n)) :
						   write_swqe(qp, wr, dpv_ring_slot(sq, first + n));
		if (ret != 0)
			break;
	}
	/* WRs before the bad one stay posted. */
	if (n) {
		dpv_ring_commit(sq, n);
		dpv_qp_doorbell(qp->qp);
	}
	dpv_vunlock(&qp->sq_lock, fast);
	if (ret != 0)
		*bad = wr;
	if (busy < POST_DRIVE_BELOW || ret != 0)
		dpv_engine_progress_dev(qp->ctx->dev);
	return ret;
}

int dpv_verbs_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct dpv_qp_v *qp = to_qp(ibqp);
	struct dpv_ring *rq = qp->qp->rq;
	uint32_t first, n = 0;
	int ret = 0;
	bool fast;

	/* An XRC QP has no RQ (doc/guides/srq.md §7). */
	if (ibqp->srq != NULL || rq == NULL || qp_state(qp) == IBV_QPS_RESET) {
		*bad = wr;
		return EINVAL;
	}
	fast = dpv_vlock(&qp->rq_lock);
	for (; wr != NULL; wr = wr->next, n++) {
		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->max_recv_sge ||
		    (wr->num_sge > 0 && wr->sg_list == NULL)) {
			ret = EINVAL;
			break;
		}
		if (dpv_ring_reserve(rq, n + 1, &first) < n + 1) {
			ret = ENOMEM;
			break;
		}
		dpv_verbs_write_rwqe(wr, dpv_ring_slot(rq, first + n));
	}
	/* The doorbell lets a QP in ERR flush what was posted after it entered ERR. */
	if (n) {
		dpv_ring_commit(rq, n);
		dpv_qp_doorbell(qp->qp);
	}
	dpv_vunlock(&qp->rq_lock, fast);
	if (ret != 0)
		*bad = wr;
	return ret;
}

/* ---- address handles ---- */

struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct dpv_ah *ah = calloc(1, sizeof(*ah));

	if (ah == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	if (av_of(attr, &ah->dst_ip, &ah->tos, &ah->ttl) != 0) {
		free(ah);
		errno = EINVAL;
		return NULL;
	}
	ah->ibah.context = pd->context;
	ah->ibah.pd = pd;
	__atomic_add_fetch(&to_pd(pd)->users, 1, __ATOMIC_RELAXED);
	return &ah->ibah;
}

int ibv_destroy_ah(struct ibv_ah *ah)
{
	__atomic_sub_fetch(&to_pd(ah->pd)->users, 1, __ATOMIC_RELAXED);
	free(to_ah(ah));
	return 0;
}
