/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The extended send API (ibv_wr_post(3)): a QP created with
 * IBV_QP_INIT_ATTR_SEND_OPS_FLAGS builds WRs with ibv_wr_start(), ibv_wr_send()...,
 * ibv_wr_set_sge()... and posts them with ibv_wr_complete(). The calls between start
 * and complete collect ibv_send_wr's into the QP's batch (inline data copied at once,
 * so the caller's buffer is free when the call returns); ibv_wr_complete() posts the
 * batch as one ibv_post_send() list, so every check and errno of ibv_post_send(3)
 * applies, and a batch with a bad call posts nothing and returns that call's errno.
 * Threads: as ibv_wr_post(3) says, one thread between start and complete of a QP.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "verbs_priv.h"

/* What dpverbs' RC, UC and UD QPs send (ibv_post_send(3)'s opcodes they take). */
#define UC_OPS (IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM | \
		IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | \
		IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV)
#define RC_OPS (UC_OPS | IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | \
		IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_SEND_WITH_INV | \
		IBV_QP_EX_WITH_ATOMIC_WRITE)
#define UD_OPS (IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM)
/* XRC's initiator: RC's operations but the atomic write, which dpverbs sends on RC
 * only (lib/wire has no XRC opcode for it). */
#define XRC_OPS (RC_OPS & ~(uint64_t)IBV_QP_EX_WITH_ATOMIC_WRITE)

static struct dpv_qp_v *to_qp_x(struct ibv_qp_ex *q)
{
	return container_of(q, struct dpv_qp_v, ibqpx);
}

int dpv_verbs_qp_ex_check(enum ibv_qp_type type, uint64_t ops)
{
	uint64_t offered = type == IBV_QPT_RC ? RC_OPS : type == IBV_QPT_UC ? UC_OPS
			   : type == IBV_QPT_XRC_SEND ? XRC_OPS : UD_OPS;

	return (ops & ~offered) != 0 ? EOPNOTSUPP : 0;
}

/* The WR being built, or NULL before the first ibv_wr_<op>() of the batch. */
static struct ibv_send_wr *cur(struct dpv_qp_v *qp)
{
	struct dpv_wr_batch *b = qp->batch;

	return b->n > 0 ? &b->wr[b->n - 1] : NULL;
}

static struct ibv_send_wr *begin(struct ibv_qp_ex *x, enum ibv_wr_opcode op)
{
	struct dpv_wr_batch *b = to_qp_x(x)->batch;
	struct ibv_send_wr *wr;

	if (b->n == b->cap) {
		/* More than the SQ holds: ibv_post_send(3) would say ENOMEM. */
		if (b->err == 0)
			b->err = ENOMEM;
		return NULL;
	}
	wr = &b->wr[b->n];
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = x->wr_id;
	wr->send_flags = x->wr_flags;
	wr->opcode = op;
	wr->sg_list = &b->sge[(size_t)b->n * b->sge_per_wr];
	b->n++;
	return wr;
}

static void wr_send(struct ibv_qp_ex *x)
{
	begin(x, IBV_WR_SEND);
}

static void wr_send_imm(struct ibv_qp_ex *x, __be32 imm)
{
	struct ibv_send_wr *wr = begin(x, IBV_WR_SEND_WITH_IMM);

	if (wr != NULL)
		wr->imm_data = imm;
}

static void wr_rdma(struct ibv_qp_ex *x, enum ibv_wr_opcode op, uint32_t rkey,
		    uint64_t raddr, __be32 imm)
{
	struct ibv_send_wr *wr = begin(x, op);

	if (wr == NULL)
		return;
	wr->wr.rdma.rkey = rkey;
	wr->wr.rdma.remote_addr = raddr;
	wr->imm_data = imm;
}

static void wr_rdma_write(struct ibv_qp_ex *x, uint32_t rkey, uint64_t raddr)
{
	wr_rdma(x, IBV_WR_RDMA_WRITE, rkey, raddr, 0);
}

static void wr_rdma_write_imm(struct ibv_qp_ex *x, uint32_t rkey, uint64_t raddr, __be32 imm)
{
	wr_rdma(x, IBV_WR_RDMA_WRITE_WITH_IMM, rkey, raddr, imm);
}

static void wr_rdma_read(struct ibv_qp_ex *x, uint32_t rkey, uint64_t raddr)
{
	wr_rdma(x, IBV_WR_RDMA_READ, rkey, raddr, 0);
}

static void wr_atomic(struct ibv_qp_ex *x, enum ibv_wr_opcode op, uint32_t rkey,
		      uint64_t raddr, uint64_t compare_add, uint64_t swap)
{
	struct ibv_send_wr *wr = begin(x, op);

	if (wr == NULL)
		return;
	wr->wr.atomic.rkey = rkey;
	wr->wr.atomic.remote_addr = raddr;
	wr->wr.atomic.compare_add = compare_add;
	wr->wr.atomic.swap = swap;
}

static void wr_atomic_cmp_swp(struct ibv_qp_ex *x, uint32_t rkey, uint64_t raddr,
			      uint64_t compare, uint64_t swap)
{
	wr_atomic(x, IBV_WR_ATOMIC_CMP_AND_SWP, rkey, raddr, compare, swap);
}

static void wr_atomic_fetch_add(struct ibv_qp_ex *x, uint32_t rkey, uint64_t raddr,
				uint64_t add)
{
	wr_atomic(x, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, raddr, add, 0);
}

/* IBTA 1.5: the 8 bytes of @p atomic_wire, as they are to lie in remote memory, stored
 * at @p raddr in one store. The WR carries them in wr.atomic.swap (a copy: the caller's
 * buffer is free on return), which only this batch's WRs may do (write_swqe()). */
static void wr_atomic_write(struct ibv_qp_ex *x, uint32_t rkey, uint64_t raddr,
			    const void *atomic_wire)
{
	struct ibv_send_wr *wr = begin(x, IBV_WR_ATOMIC_WRITE);

	if (wr == NULL)
		return;
	wr->wr.atomic.rkey = rkey;
	wr->wr.atomic.remote_addr = raddr;
	memcpy(&wr->wr.atomic.swap, atomic_wire, sizeof(wr->wr.atomic.swap));
}

/* Memory windows (ibv_wr_post(3)): as ibv_post_send(3)'s BIND_MW, LOCAL_INV and
 * SEND_WITH_INV, whose checks they get at ibv_wr_complete(). */
static void wr_bind_mw(struct ibv_qp_ex *x, struct ibv_mw *mw, uint32_t rkey,
		       const struct ibv_mw_bind_info *info)
{
	struct ibv_send_wr *wr = begin(x, IBV_WR_BIND_MW);

	if (wr == NULL)
		return;
	wr->bind_mw.mw = mw;
	wr->bind_mw.rkey = rkey;
	wr->bind_mw.bind_info = *info;
}

static void wr_local_inv(struct ibv_qp_ex *x, uint32_t invalidate_rkey)
{
	struct ibv_send_wr *wr = begin(x, IBV_WR_LOCAL_INV);

	if (wr != NULL)
		wr->invalidate_rkey = invalidate_rkey;
}

static void wr_send_inv(struct ibv_qp_ex *x, uint32_t invalidate_rkey)
{
	struct ibv_send_wr *wr = begin(x, IBV_WR_SEND_WITH_INV);

	if (wr != NULL)
		wr->invalidate_rkey = invalidate_rkey;
}

/* A setter with no WR begun, or one that breaks the QP's caps: the batch fails. */
static struct ibv_send_wr *setter(struct dpv_qp_v *qp, bool ok)
{
	struct ibv_send_wr *wr = cur(qp);

	if ((wr == NULL || !ok) && qp->batch->err == 0)
		qp->batch->err = EINVAL;
	return ok ? wr : NULL;
}

static void wr_set_ud_addr(struct ibv_qp_ex *x, struct ibv_ah *ah, uint32_t qpn, uint32_t qkey)
{
	struct dpv_qp_v *qp = to_qp_x(x);
	struct ibv_send_wr *wr = setter(qp, qp->ibqp.qp_type == IBV_QPT_UD);

	if (wr == NULL)
		return;
	wr->wr.ud.ah = ah;
	wr->wr.ud.remote_qpn = qpn;
	wr->wr.ud.remote_qkey = qkey;
}

static void wr_set_xrc_srqn(struct ibv_qp_ex *x, uint32_t remote_srqn)
{
	struct dpv_qp_v *qp = to_qp_x(x);
	struct ibv_send_wr *wr = setter(qp, qp->ibqp.qp_type == IBV_QPT_XRC_SEND);

	if (wr != NULL)
		wr->qp_type.xrc.remote_srqn = remote_srqn;
}

static void wr_set_sge_list(struct ibv_qp_ex *x, size_t n, const struct ibv_sge *sg)
{
	struct dpv_qp_v *qp = to_qp_x(x);
	struct ibv_send_wr *wr = setter(qp, n <= qp->max_send_sge);

	if (wr == NULL)
		return;
	memcpy(wr->sg_list, sg, n * sizeof(*sg));
	wr->num_sge = (int)n;
	wr->send_flags &= ~(unsigned int)IBV_SEND_INLINE;
}

static void wr_set_sge(struct ibv_qp_ex *x, uint32_t lkey, uint64_t addr, uint32_t length)
{
	const struct ibv_sge sge = {.addr = addr, .length = length, .lkey = lkey};

	wr_set_sge_list(x, 1, &sge);
}

static void wr_set_inline_data_list(struct ibv_qp_ex *x, size_t n, const struct ibv_data_buf *buf)
{
	struct dpv_qp_v *qp = to_qp_x(x);
	size_t total = 0;
	struct ibv_send_wr *wr;
	uint8_t *to;

	for (size_t i = 0; i < n; i++)
		total += buf[i].length;
	wr = setter(qp, total <= qp->max_inline);
	if (wr == NULL)
		return;
	to = &qp->batch->inl[(size_t)(wr - qp->batch->wr) * qp->max_inline];
	wr->sg_list[0].addr = (uintptr_t)to;
	wr->sg_list[0].length = (uint32_t)total;
	wr->sg_list[0].lkey = 0;
	for (size_t i = 0; i < n; i++) {
		memcpy(to, buf[i].addr, buf[i].length);
		to += buf[i].length;
	}
	wr->num_sge = total > 0 ? 1 : 0;
	wr->send_flags |= IBV_SEND_INLINE;
}

static void wr_set_inline_data(struct ibv_qp_ex *x, void *addr, size_t length)
{
	const struct ibv_data_buf buf = {.addr = addr, .length = length};

	wr_set_inline_data_list(x, 1, &buf);
}

static void wr_start(struct ibv_qp_ex *x)
{
	struct dpv_wr_batch *b = to_qp_x(x)->batch;

	b->n = 0;
	b->err = 0;
}

static int wr_complete(struct ibv_qp_ex *x)
{
	struct dpv_qp_v *qp = to_qp_x(x);
	struct dpv_wr_batch *b = qp->batch;
	struct ibv_send_wr *bad = NULL;
	int ret = b->err;

	if (ret == 0 && b->n > 0) {
		for (uint32_t i = 0; i + 1 < b->n; i++)
			b->wr[i].next = &b->wr[i + 1];
		b->wr[b->n - 1].next = NULL;
		ret = dpv_verbs_post_send(&qp->ibqp, b->wr, &bad);
	}
	b->n = 0;
	b->err = 0;
	return ret;
}

static void wr_abort(struct ibv_qp_ex *x)
{
	wr_start(x);
}

int dpv_verbs_qp_ex_init(struct dpv_qp_v *qp)
{
	struct ibv_qp_ex *x = &qp->ibqpx;
	struct dpv_wr_batch *b = calloc(1, sizeof(*b));
	uint32_t cap = qp->qp->sq != NULL ? dpv_ring_count(qp->qp->sq) : 0;
	uint32_t sge = qp->max_send_sge > 0 ? qp->max_send_sge : 1;

	if (b == NULL)
		return ENOMEM;
	/* A WR of inline data takes one SGE even on a QP created with none. */
	b->sge_per_wr = sge;
	b->cap = cap;
	b->wr = calloc(cap, sizeof(*b->wr));
	b->sge = calloc((size_t)cap * sge, sizeof(*b->sge));
	b->inl = qp->max_inline > 0 ? calloc(cap, qp->max_inline) : NULL;
	qp->batch = b;
	if (b->wr == NULL || b->sge == NULL || (qp->max_inline > 0 && b->inl == NULL)) {
		dpv_verbs_qp_ex_fini(qp);
		return ENOMEM;
	}
	x->wr_send = wr_send;
	x->wr_send_imm = wr_send_imm;
	if (qp->ibqp.qp_type != IBV_QPT_UD) {
		x->wr_rdma_write = wr_rdma_write;
		x->wr_rdma_write_imm = wr_rdma_write_imm;
		x->wr_bind_mw = wr_bind_mw;
		x->wr_local_inv = wr_local_inv;
	}
	if (qp->ibqp.qp_type == IBV_QPT_RC || qp->ibqp.qp_type == IBV_QPT_XRC_SEND) {
		x->wr_send_inv = wr_send_inv;
		x->wr_rdma_read = wr_rdma_read;
		x->wr_atomic_cmp_swp = wr_atomic_cmp_swp;
		x->wr_atomic_fetch_add = wr_atomic_fetch_add;
	}
	if (qp->ibqp.qp_type == IBV_QPT_RC)
		x->wr_atomic_write = wr_atomic_write;
	x->wr_set_ud_addr = wr_set_ud_addr;
	x->wr_set_xrc_srqn = wr_set_xrc_srqn;
	x->wr_set_sge = wr_set_sge;
	x->wr_set_sge_list = wr_set_sge_list;
	x->wr_set_inline_data = wr_set_inline_data;
	x->wr_set_inline_data_list = wr_set_inline_data_list;
	x->wr_start = wr_start;
	x->wr_complete = wr_complete;
	x->wr_abort = wr_abort;
	return 0;
}

void dpv_verbs_qp_ex_fini(struct dpv_qp_v *qp)
{
	struct dpv_wr_batch *b = qp->batch;

	if (b == NULL)
		return;
	free(b->wr);
	free(b->sge);
	free(b->inl);
	free(b);
	qp->batch = NULL;
}
