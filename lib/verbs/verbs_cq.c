/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Completion queues (ibv_create_cq(3), ibv_create_cq_ex(3), ibv_poll_cq(3)) and
 * completion channels (ibv_create_comp_channel(3), ibv_get_cq_event(3)).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <rte_byteorder.h>
#include <rte_cycles.h>

#include "verbs_priv.h"

static const enum ibv_wc_status wc_status[] = {
	[DPV_WC_SUCCESS] = IBV_WC_SUCCESS,
	[DPV_WC_LOC_LEN_ERR] = IBV_WC_LOC_LEN_ERR,
	[DPV_WC_LOC_QP_OP_ERR] = IBV_WC_LOC_QP_OP_ERR,
	[DPV_WC_LOC_PROT_ERR] = IBV_WC_LOC_PROT_ERR,
	[DPV_WC_WR_FLUSH_ERR] = IBV_WC_WR_FLUSH_ERR,
	[DPV_WC_BAD_RESP_ERR] = IBV_WC_BAD_RESP_ERR,
	[DPV_WC_LOC_ACCESS_ERR] = IBV_WC_LOC_ACCESS_ERR,
	[DPV_WC_REM_INV_REQ_ERR] = IBV_WC_REM_INV_REQ_ERR,
	[DPV_WC_REM_ACCESS_ERR] = IBV_WC_REM_ACCESS_ERR,
	[DPV_WC_REM_OP_ERR] = IBV_WC_REM_OP_ERR,
	[DPV_WC_RETRY_EXC_ERR] = IBV_WC_RETRY_EXC_ERR,
	[DPV_WC_RNR_RETRY_EXC_ERR] = IBV_WC_RNR_RETRY_EXC_ERR,
	[DPV_WC_GENERAL_ERR] = IBV_WC_GENERAL_ERR,
	[DPV_WC_TM_ERR] = IBV_WC_TM_ERR,
	[DPV_WC_TM_RNDV_INCOMPLETE] = IBV_WC_TM_RNDV_INCOMPLETE,
	[DPV_WC_MW_BIND_ERR] = IBV_WC_MW_BIND_ERR,
};

static const enum ibv_wc_opcode wc_opcode[] = {
	[DPV_WC_SEND] = IBV_WC_SEND,
	[DPV_WC_RDMA_WRITE] = IBV_WC_RDMA_WRITE,
	[DPV_WC_RDMA_READ] = IBV_WC_RDMA_READ,
	[DPV_WC_RECV] = IBV_WC_RECV,
	[DPV_WC_RECV_RDMA_WITH_IMM] = IBV_WC_RECV_RDMA_WITH_IMM,
	[DPV_WC_TM_ADD] = IBV_WC_TM_ADD,
	[DPV_WC_TM_DEL] = IBV_WC_TM_DEL,
	[DPV_WC_TM_SYNC] = IBV_WC_TM_SYNC,
	[DPV_WC_TM_RECV] = IBV_WC_TM_RECV,
	[DPV_WC_TM_NO_TAG] = IBV_WC_TM_NO_TAG,
	[DPV_WC_COMP_SWAP] = IBV_WC_COMP_SWAP,
	[DPV_WC_FETCH_ADD] = IBV_WC_FETCH_ADD,
	[DPV_WC_BIND_MW] = IBV_WC_BIND_MW,
	[DPV_WC_LOCAL_INV] = IBV_WC_LOCAL_INV,
	[DPV_WC_ATOMIC_WRITE] = IBV_WC_ATOMIC_WRITE,
};

static unsigned int wc_flags_of(uint8_t f)
{
	return (f & DPV_WC_F_GRH ? IBV_WC_GRH : 0) | (f & DPV_WC_F_IMM ? IBV_WC_WITH_IMM : 0) |
	       (f & DPV_WC_F_TM_SYNC_REQ ? IBV_WC_TM_SYNC_REQ : 0) |
	       (f & DPV_WC_F_TM_MATCH ? IBV_WC_TM_MATCH : 0) |
	       (f & DPV_WC_F_TM_DATA_VALID ? IBV_WC_TM_DATA_VALID : 0) |
	       (f & DPV_WC_F_INV ? IBV_WC_WITH_INV : 0);
}

/*
 * The SL of a completion. RoCE carries no LRH, so no SL; for a UD receive a RoCE device
 * (mlx5) reports in the field the kind of packet whose network header fills the GRH
 * slot: bit 3 set for a UDP-encapsulated one (RoCEv2), bits 2:0 its L3 header, 2 for
 * IPv4. Software that reads the slot learns from it where the addresses are: UCX's UD
 * transport compares the destination address at the slot's end with its own, the last
 * 4 bytes for IPv4 and the last 16 otherwise, and drops what does not match. Every UD
 * packet dpverbs receives is RoCEv2 over IPv4 (its GRH slot: 20 zero bytes, then the
 * IPv4 header).
 */
#define DPV_WC_SL_ROCEV2_IPV4 (0x8u | 0x2u)

static uint8_t sl_of(uint8_t f)
{
	return f & DPV_WC_F_GRH ? DPV_WC_SL_ROCEV2_IPV4 : 0;
}

/* Give a TM handle back when the application has seen its entry's end; an SRQ
 * destroyed since has nothing to give it back to. */
static void tm_release(struct dpv_cq_v *cq, const struct dpv_cqe *e)
{
	dpv_xport_tm_release(cq->ctx->dev->xport, e->srq_id, e->tm_handle);
}

/*
 * The next completion the application may see, or NULL: hidden ones (lib/tm's handle
 * releases, the completions of a QP reset since) are acted on and skipped. The slot
 * stays in the ring until cq_consume().
 */
static const struct dpv_cqe *cq_peek(struct dpv_cq_v *cq)
{
	struct dpv_ring *r = cq->cq->ring;
	const struct dpv_cqe *e;
	uint32_t first;

	while (dpv_ring_peek(r, 1, &first) == 1) {
		e = dpv_ring_slot(r, first);
		if (!(e->flags & DPV_WC_F_HIDDEN))
			return e;
		if (e->flags & DPV_WC_F_TM_RELEASE)
			tm_release(cq, e);
		dpv_ring_release(r, 1);
	}
	return NULL;
}

static void cq_consume(struct dpv_cq_v *cq, const struct dpv_cqe *e)
{
	if (e->flags & DPV_WC_F_TM_RELEASE)
		tm_release(cq, e);
	dpv_ring_release(cq->cq->ring, 1);
}

static void wc_of(const struct dpv_cqe *e, struct ibv_wc *wc)
{
	wc->wr_id = e->wr_id;
	wc->status = wc_status[e->status];
	wc->opcode = wc_opcode[e->opcode];
	wc->vendor_err = e->vendor_err;
	wc->byte_len = e->byte_len;
	wc->imm_data = rte_cpu_to_be_32(e->imm);
	wc->qp_num = e->qp_num;
	wc->src_qp = e->src_qp;
	wc->wc_flags = wc_flags_of(e->flags);
	wc->pkey_index = 0;
	wc->slid = 0;
	wc->sl = sl_of(e->flags);
	wc->dlid_path_bits = 0;
}

/* Up to @p n completions into @p wc: one look at the producer's index for all that are
 * ready, one release for all taken (hidden ones acted on and skipped, as cq_peek()). */
static int cq_take(struct dpv_cq_v *cq, int n, struct ibv_wc *wc)
{
	struct dpv_ring *r = cq->cq->ring;
	bool fast = dpv_vlock(&cq->poll_lock);
	uint32_t first, ready, i;
	int got = 0;

	ready = dpv_ring_peek(r, (uint32_t)n, &first);
	for (i = 0; i < ready && got < n; i++) {
		const struct dpv_cqe *e = dpv_ring_slot(r, first + i);

		if (e->flags & DPV_WC_F_TM_RELEASE)
			tm_release(cq, e);
		if (!(e->flags & DPV_WC_F_HIDDEN))
			wc_of(e, &wc[got++]);
	}
	if (i)
		dpv_ring_release(r, i);
	dpv_vunlock(&cq->poll_lock, fast);
	return got;
}

/*
 * Completions already in the CQ are returned at once, as a NIC's CQ is read without
 * waiting on the device; the device is driven when the caller would otherwise get
 * nothing, the poll loop of a program that waits. What the device has to do meanwhile
 * (an ACK come in) is done by that next poll or post.
 */
int dpv_verbs_poll_cq(struct ibv_cq *ibcq, int n, struct ibv_wc *wc)
{
	struct dpv_cq_v *cq = to_cq(ibcq);
	int got;

	if (n < 0)
		return -EINVAL;
	got = cq_take(cq, n, wc);
	if (got == 0 && n > 0) {
		dpv_engine_progress_dev(cq->ctx->dev);
		got = cq_take(cq, n, wc);
	}
	return got;
}

/* ---- the extended CQ's iterator: start_poll / next_poll / end_poll ---- */

static int cq_ex_load(struct dpv_cq_v *cq)
{
	const struct dpv_cqe *e = cq_peek(cq);

	if (e == NULL)
		return ENOENT;
	cq->cur = *e;
	cq_consume(cq, e);
	cq->ibcq.status = wc_status[cq->cur.status];
	cq->ibcq.wr_id = cq->cur.wr_id;
	return 0;
}

static int cq_ex_start_poll(struct ibv_cq_ex *ibcq, struct ibv_poll_cq_attr *attr)
{
	struct dpv_cq_v *cq = to_cq_ex(ibcq);
	bool fast;

	if (attr != NULL && attr->comp_mask != 0)
		return EINVAL;
	/* As dpv_verbs_poll_cq(): the device is driven when the CQ holds nothing. */
	fast = dpv_vlock(&cq->poll_lock);
	if (cq_ex_load(cq) == 0)
		goto held;
	dpv_vunlock(&cq->poll_lock, fast);
	dpv_engine_progress_dev(cq->ctx->dev);
	fast = dpv_vlock(&cq->poll_lock);
	if (cq_ex_load(cq) != 0) {
		dpv_vunlock(&cq->poll_lock, fast); /* ENOENT: no end_poll follows */
		return ENOENT;
	}
held:
	cq->poll_fast = fast; /* the holder's, for ibv_end_poll() */
	return 0;
}

static int cq_ex_next_poll(struct ibv_cq_ex *ibcq)
{
	return cq_ex_load(to_cq_ex(ibcq));
}

static void cq_ex_end_poll(struct ibv_cq_ex *ibcq)
{
	struct dpv_cq_v *cq = to_cq_ex(ibcq);

	dpv_vunlock(&cq->poll_lock, cq->poll_fast);
}

static enum ibv_wc_opcode cq_ex_read_opcode(struct ibv_cq_ex *c)
{
	return wc_opcode[to_cq_ex(c)->cur.opcode];
}

static uint32_t cq_ex_read_vendor_err(struct ibv_cq_ex *c)
{
	return to_cq_ex(c)->cur.vendor_err;
}

static uint32_t cq_ex_read_byte_len(struct ibv_cq_ex *c)
{
	return to_cq_ex(c)->cur.byte_len;
}

static __be32 cq_ex_read_imm_data(struct ibv_cq_ex *c)
{
	return rte_cpu_to_be_32(to_cq_ex(c)->cur.imm);
}

static uint32_t cq_ex_read_qp_num(struct ibv_cq_ex *c)
{
	return to_cq_ex(c)->cur.qp_num;
}

static uint32_t cq_ex_read_src_qp(struct ibv_cq_ex *c)
{
	return to_cq_ex(c)->cur.src_qp;
}

static unsigned int cq_ex_read_wc_flags(struct ibv_cq_ex *c)
{
	return wc_flags_of(to_cq_ex(c)->cur.flags);
}

static uint32_t cq_ex_read_zero32(struct ibv_cq_ex *c)
{
	(void)c;
	return 0;
}

static uint8_t cq_ex_read_sl(struct ibv_cq_ex *c)
{
	return sl_of(to_cq_ex(c)->cur.flags);
}

static uint8_t cq_ex_read_zero8(struct ibv_cq_ex *c)
{
	(void)c;
	return 0;
}

/* The device clock is the TSC (hca_core_clock, verbs_device.c): the stamp as it is. */
static uint64_t cq_ex_read_completion_ts(struct ibv_cq_ex *c)
{
	return to_cq_ex(c)->cur.ts;
}

/* One reading of the TSC and of CLOCK_REALTIME together, taken when the first CQ asks
 * for wall-clock stamps: each stamp is that moment plus the TSC's cycles since, so the
 * stamps follow the TSC's rate, not later steps or slewing of the system clock. */
static struct {
	uint64_t tsc, ns, hz;
} wall;
static pthread_once_t wall_once = PTHREAD_ONCE_INIT;

static void wall_init(void)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	wall.tsc = rte_get_tsc_cycles();
	wall.ns = (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
	wall.hz = rte_get_tsc_hz();
}

static uint64_t cycles_to_ns(uint64_t cycles)
{
	return cycles / wall.hz * 1000000000u + cycles % wall.hz * 1000000000u / wall.hz;
}

static uint64_t cq_ex_read_completion_wallclock_ns(struct ibv_cq_ex *c)
{
	uint64_t ts = to_cq_ex(c)->cur.ts;

	return ts >= wall.tsc ? wall.ns + cycles_to_ns(ts - wall.tsc)
			      : wall.ns - cycles_to_ns(wall.tsc - ts);
}

static void cq_ex_read_tm_info(struct ibv_cq_ex *c, struct ibv_wc_tm_info *info)
{
	const struct dpv_cqe *e = &to_cq_ex(c)->cur;

	info->tag = e->tm_tag;
	info->priv = e->tm_priv;
}

/* ---- creation, notification, channels ---- */

#define WC_STAMP_FLAGS (IBV_WC_EX_WITH_COMPLETION_TIMESTAMP | \
			IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)
#define SUPPORTED_WC_FLAGS (IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | \
			    IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP | \
			    IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL | \
			    IBV_WC_EX_WITH_DLID_PATH_BITS | IBV_WC_EX_WITH_TM_INFO | \
			    WC_STAMP_FLAGS)

/* Every IBV_WC_EX_WITH_* bit rdma-core 44 defines (the last is the wall clock's). */
#define WC_FLAGS_KNOWN (((uint64_t)IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK << 1) - 1)

/* Called by the device, when armed, after it wrote a completion. */
static void cq_notify(struct dpv_cq *dcq, void *arg)
{
	struct dpv_cq_v *cq = arg;
	struct dpv_channel *ch;
	uint64_t one = 1;

	(void)dcq;
	ch = to_channel(cq->ibcq.channel);
	pthread_mutex_lock(&ch->lock);
	if (ch->tail - ch->head < DPV_CHANNEL_QUEUE) {
		ch->pending[ch->tail++ % DPV_CHANNEL_QUEUE] = (struct ibv_cq *)(void *)&cq->ibcq;
		if (write(ch->ibch.fd, &one, sizeof(one)) != sizeof(one))
			ch->lost++;
	} else {
		ch->lost++;
	}
	pthread_mutex_unlock(&ch->lock);
}

/* Called by the device at the CQ's first overrun (ibv_get_async_event(3): CQ_ERR). */
static void cq_error(struct dpv_cq *dcq, void *arg)
{
	struct dpv_cq_v *cq = arg;

	(void)dcq;
	dpv_verbs_async_event(cq->ctx, IBV_EVENT_CQ_ERR, ibv_cq_ex_to_cq(&cq->ibcq));
}

/*
 * ibv_create_cq_ex(3)'s request, as providers judge it: EINVAL for no entries or more
 * than the device has, a completion vector it does not have, or bits libibverbs does
 * not define; EOPNOTSUPP for what is defined but dpverbs does not offer: CVLAN and
 * flow tags in wc_flags, IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN
 * (dpverbs' CQ overrun is always reported: errors.md). IBV_CQ_INIT_ATTR_MASK_PD needs a
 * parent domain of the same context (ibv_alloc_parent_domain(3)): EINVAL for none or
 * a plain PD.
 */
static int check_cq_attr(struct ibv_context *context, const struct ibv_cq_init_attr_ex *attr)
{
	const uint32_t flags = (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) ? attr->flags : 0;

	if (attr->cqe == 0 || attr->cqe > DPV_MAX_CQE || attr->comp_vector != 0 ||
	    (attr->wc_flags & ~WC_FLAGS_KNOWN) != 0 ||
	    (attr->comp_mask & ~(uint32_t)(IBV_CQ_INIT_ATTR_MASK_FLAGS |
					   IBV_CQ_INIT_ATTR_MASK_PD)) != 0 ||
	    (flags & ~(uint32_t)(IBV_CREATE_CQ_ATTR_SINGLE_THREADED |
				 IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN)) != 0)
		return EINVAL;
	if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) &&
	    (attr->parent_domain == NULL || attr->parent_domain->context != context ||
	     to_pd(attr->parent_domain)->protection == NULL))
		return EINVAL;
	if ((attr->wc_flags & ~SUPPORTED_WC_FLAGS) != 0 ||
	    (flags & IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN))
		return EOPNOTSUPP;
	return 0;
}

struct ibv_cq_ex *dpv_verbs_create_cq_ex(struct ibv_context *context,
					 struct ibv_cq_init_attr_ex *attr)
{
	struct dpv_context *c = to_ctx(context);
	struct dpv_cq_v *cq;
	struct ibv_pd *parent;
	bool custom;
	int ret;

	ret = check_cq_attr(context, attr);
	if (ret != 0) {
		errno = ret;
		return NULL;
	}
	parent = (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) ? attr->parent_domain : NULL;
	cq = dpv_verbs_obj_alloc(parent, sizeof(*cq), DPV_VERBS_RES_TYPE_CQ, &custom);
	if (cq == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	cq->custom_mem = custom;
	ret = dpv_cq_create(c->dev->xport, attr->cqe, &cq->cq);
	if (ret != 0) {
		dpv_verbs_obj_free(parent, cq, DPV_VERBS_RES_TYPE_CQ, custom);
		errno = ret;
		return NULL;
	}
	cq->ctx = c;
	cq->wc_flags = attr->wc_flags;
	/* Only a CQ with a channel is ever armed (ibv_req_notify_cq(3)): the others
	 * spare their completions the fence of dpv_cq_push(). */
	if (attr->channel != NULL) {
		cq->cq->notify = cq_notify;
		cq->cq->notify_arg = cq;
	}
	cq->cq->error_event = cq_error;
	cq->cq->error_arg = cq;
	if (attr->channel != NULL)
		__atomic_add_fetch(&to_channel(attr->channel)->users, 1, __ATOMIC_RELAXED);
	if (parent != NULL) {
		cq->parent = to_pd(parent);
		__atomic_add_fetch(&cq->parent->users, 1, __ATOMIC_RELAXED);
	}
	/* ibv_create_cq_ex(3): a single-threaded CQ, or one under a thread domain, is
	 * polled by one thread at a time: no lock. */
	if (((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	     (attr->flags & IBV_CREATE_CQ_ATTR_SINGLE_THREADED)) ||
	    (cq->parent != NULL && cq->parent->td != NULL))
		dpv_vlock_init_none(&cq->poll_lock);
	else
		dpv_vlock_init(&cq->poll_lock);
	cq->ibcq.context = context;
	cq->ibcq.channel = attr->channel;
	cq->ibcq.cq_context = attr->cq_context;
	cq->ibcq.handle = cq->cq->id;
	/* Every slot of the ring holds a completion (ibv_create_cq(3): at least cqe). */
	cq->ibcq.cqe = (int)dpv_ring_count(cq->cq->ring);
	pthread_mutex_init(&cq->ibcq.mutex, NULL);
	pthread_cond_init(&cq->ibcq.cond, NULL);
	cq->ibcq.start_poll = cq_ex_start_poll;
	cq->ibcq.next_poll = cq_ex_next_poll;
	cq->ibcq.end_poll = cq_ex_end_poll;
	cq->ibcq.read_opcode = cq_ex_read_opcode;
	cq->ibcq.read_vendor_err = cq_ex_read_vendor_err;
	cq->ibcq.read_byte_len = cq_ex_read_byte_len;
	cq->ibcq.read_imm_data = cq_ex_read_imm_data;
	cq->ibcq.read_qp_num = cq_ex_read_qp_num;
	cq->ibcq.read_src_qp = cq_ex_read_src_qp;
	cq->ibcq.read_wc_flags = cq_ex_read_wc_flags;
	cq->ibcq.read_slid = cq_ex_read_zero32;
	cq->ibcq.read_sl = cq_ex_read_sl;
	cq->ibcq.read_dlid_path_bits = cq_ex_read_zero8;
	cq->ibcq.read_tm_info = cq_ex_read_tm_info;
	if (attr->wc_flags & WC_STAMP_FLAGS) {
		if (attr->wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)
			pthread_once(&wall_once, wall_init);
		cq->ibcq.read_completion_ts = cq_ex_read_completion_ts;
		cq->ibcq.read_completion_wallclock_ns = cq_ex_read_completion_wallclock_ns;
		cq->cq->stamp = true;
	}
	return &cq->ibcq;
}

struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
			     struct ibv_comp_channel *channel, int comp_vector)
{
	struct ibv_cq_init_attr_ex attr = {
		.cqe = cqe > 0 ? (uint32_t)cqe : 0,
		.cq_context = cq_context,
		.channel = channel,
		.comp_vector = comp_vector >= 0 ? (uint32_t)comp_vector : UINT32_MAX,
	};
	struct ibv_cq_ex *cq = dpv_verbs_create_cq_ex(context, &attr);

	return cq != NULL ? ibv_cq_ex_to_cq(cq) : NULL;
}

int ibv_destroy_cq(struct ibv_cq *ibcq)
{
	struct dpv_cq_v *cq = to_cq(ibcq);
	struct dpv_dev *dev = cq->ctx->dev;

	/* ibv_destroy_cq(3): EBUSY while a QP or SRQ uses it. */
	if (cq->users != 0)
		return EBUSY;
	dpv_dev_own(dev);
	dpv_cq_destroy(cq->cq);
	dpv_dev_disown(dev);
	if (ibcq->channel != NULL)
		__atomic_sub_fetch(&to_channel(ibcq->channel)->users, 1, __ATOMIC_RELAXED);
	if (cq->parent != NULL)
		__atomic_sub_fetch(&cq->parent->users, 1, __ATOMIC_RELAXED);
	dpv_vlock_destroy(&cq->poll_lock);
	dpv_verbs_obj_free(cq->parent != NULL ? &cq->parent->ibpd : NULL, cq, DPV_VERBS_RES_TYPE_CQ,
			   cq->custom_mem);
	return 0;
}

int dpv_verbs_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct dpv_cq_v *cq = to_cq(ibcq);

	if (ibcq->channel == NULL)
		return EINVAL;
	/* Sequentially consistent, against dpv_cq_push()'s fence: the arming is seen by
	 * a completion committed after the caller's next poll found the CQ empty. */
	__atomic_store_n(&cq->cq->armed, solicited_only ? 2u : 1u, __ATOMIC_SEQ_CST);
	/* Its application may sleep now: the helper drives the devices until it is back. */
	dpv_engine_helper_kick();
	return 0;
}

/*
 * ibv_resize_cq(3): at least @p cqe entries (a power of two), the unpolled completions
 * kept in order. The device is owned and the CQ's pollers held off while its ring is
 * replaced: not to be called between ibv_start_poll and ibv_end_poll on it.
 * @return 0; EINVAL @p cqe below 1, above the device's max_cqe, or fewer than the
 * completions the CQ holds; ENOMEM, the CQ as it was.
 */
int ibv_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct dpv_cq_v *cq = to_cq(ibcq);
	struct dpv_dev *dev = cq->ctx->dev;
	bool fast;
	int ret;

	if (cqe <= 0)
		return EINVAL;
	dpv_dev_own(dev);
	fast = dpv_vlock(&cq->poll_lock);
	ret = dpv_cq_resize(dev->xport, cq->cq, (uint32_t)cqe);
	if (ret == 0)
		ibcq->cqe = (int)dpv_ring_count(cq->cq->ring);
	dpv_vunlock(&cq->poll_lock, fast);
	dpv_dev_disown(dev);
	return ret;
}

struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
	struct dpv_channel *ch = calloc(1, sizeof(*ch));
	int ret;

	if (ch == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	ch->ibch.context = context;
	ch->ibch.fd = eventfd(0, EFD_CLOEXEC);
	if (ch->ibch.fd < 0) {
		free(ch);
		return NULL;
	}
	/* While a channel exists, events must come without anyone polling. */
	ret = dpv_engine_helper_get();
	if (ret != 0) {
		close(ch->ibch.fd);
		free(ch);
		errno = ret;
		return NULL;
	}
	pthread_mutex_init(&ch->lock, NULL);
	return &ch->ibch;
}

int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	struct dpv_channel *ch = to_channel(channel);

	/* ibv_create_comp_channel(3): it fails while a CQ uses it (libibverbs: EBUSY). */
	if (__atomic_load_n(&ch->users, __ATOMIC_RELAXED) != 0)
		return EBUSY;
	dpv_engine_helper_put();
	close(channel->fd);
	pthread_mutex_destroy(&ch->lock);
	free(ch);
	return 0;
}

int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq, void **cq_context)
{
	struct dpv_channel *ch = to_channel(channel);
	uint64_t n;

	if (read(channel->fd, &n, sizeof(n)) != sizeof(n))
		return -1;
	pthread_mutex_lock(&ch->lock);
	*cq = ch->pending[ch->head++ % DPV_CHANNEL_QUEUE];
	/* One read may have counted several events: leave the rest readable. */
	if (ch->tail != ch->head) {
		uint64_t rest = ch->tail - ch->head;

		if (write(channel->fd, &rest, sizeof(rest)) != sizeof(rest))
			ch->lost++;
	}
	pthread_mutex_unlock(&ch->lock);
	*cq_context = (*cq)->cq_context;
	return 0;
}

void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	pthread_mutex_lock(&cq->mutex);
	cq->comp_events_completed += nevents;
	pthread_cond_signal(&cq->cond);
	pthread_mutex_unlock(&cq->mutex);
}
