/* SPDX-License-Identifier: BSD-3-Clause */
/* The helpers of verbs_test.h. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dpv_verbs.h"
#include "verbs_test.h"

#define PSN_A 0xfffff0u
#define PSN_B 0xffffe8u
#define MAX_OBJECTS 512

struct side A, B;
struct ibv_device **dev_list;
int dev_count;

const struct conn_opts conn_default = {
	.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
	.rnr_retry = 7,
	.min_rnr_timer = 1,
	.timeout = 14,
	.retry_cnt = 7,
	.max_rd_atomic = 16,
	.max_dest_rd_atomic = 16,
};

enum obj_kind { OBJ_MEM, OBJ_MR, OBJ_CQ, OBJ_CHANNEL, OBJ_SRQ, OBJ_QP, OBJ_AH, OBJ_TD, OBJ_PD,
		OBJ_MW, OBJ_XRCD };

static struct {
	enum obj_kind kind;
	void *p;
} objects[MAX_OBJECTS];
static int n_objects;

static void track(enum obj_kind kind, void *p)
{
	assert_true(n_objects < MAX_OBJECTS);
	objects[n_objects].kind = kind;
	objects[n_objects].p = p;
	n_objects++;
}

void track_srq(struct ibv_srq *srq)
{
	track(OBJ_SRQ, srq);
}

void track_pd(struct ibv_pd *pd)
{
	track(OBJ_PD, pd);
}

static int destroy_one(enum obj_kind kind, void *p)
{
	switch (kind) {
	case OBJ_MEM:
		free(p);
		return 0;
	case OBJ_MR:
		return ibv_dereg_mr(p);
	case OBJ_CQ:
		return ibv_destroy_cq(p);
	case OBJ_CHANNEL:
		return ibv_destroy_comp_channel(p);
	case OBJ_SRQ:
		return ibv_destroy_srq(p);
	case OBJ_QP:
		return ibv_destroy_qp(p);
	case OBJ_AH:
		return ibv_destroy_ah(p);
	case OBJ_TD:
		return ibv_dealloc_td(p);
	case OBJ_PD:
		return ibv_dealloc_pd(p);
	case OBJ_MW:
		return ibv_dealloc_mw(p);
	case OBJ_XRCD:
		return ibv_close_xrcd(p);
	}
	return EINVAL;
}

int teardown_objects(void **state)
{
	int failed = 0;

	(void)state;
	while (n_objects > 0) {
		n_objects--;
		if (destroy_one(objects[n_objects].kind, objects[n_objects].p) != 0)
			failed++;
	}
	/* A destroy that fails means the device kept a reference it should not have. */
	return failed ? -1 : 0;
}

void *new_buf(size_t len)
{
	size_t n = (len + 63) & ~(size_t)63;
	void *p = aligned_alloc(64, n ? n : 64);

	assert_non_null(p);
	memset(p, 0, n ? n : 64);
	track(OBJ_MEM, p);
	return p;
}

struct ibv_mr *new_mr(struct side *s, size_t len, unsigned int access)
{
	void *buf = new_buf(len);
	struct ibv_mr *mr = ibv_reg_mr(s->pd, buf, len, (int)access);

	assert_non_null(mr);
	track(OBJ_MR, mr);
	return mr;
}

struct ibv_mw *new_mw(struct side *s, enum ibv_mw_type type)
{
	struct ibv_mw *mw = ibv_alloc_mw(s->pd, type);

	assert_non_null(mw);
	track(OBJ_MW, mw);
	return mw;
}

struct ibv_cq *new_cq(struct side *s, int cqe, struct ibv_comp_channel *ch, void *cq_context)
{
	struct ibv_cq *cq = ibv_create_cq(s->ctx, cqe, cq_context, ch, 0);

	assert_non_null(cq);
	track(OBJ_CQ, cq);
	return cq;
}

struct ibv_cq_ex *new_cq_ex_in(struct side *s, uint32_t cqe, uint64_t wc_flags,
			       struct ibv_pd *parent_domain)
{
	struct ibv_cq_init_attr_ex attr = {
		.cqe = cqe,
		.wc_flags = wc_flags,
		.comp_mask = parent_domain != NULL ? IBV_CQ_INIT_ATTR_MASK_PD : 0,
		.parent_domain = parent_domain,
	};
	struct ibv_cq_ex *cq = ibv_create_cq_ex(s->ctx, &attr);

	assert_non_null(cq);
	track(OBJ_CQ, ibv_cq_ex_to_cq(cq));
	return cq;
}

struct ibv_cq_ex *new_cq_ex(struct side *s, uint32_t cqe, uint64_t wc_flags)
{
	return new_cq_ex_in(s, cqe, wc_flags, NULL);
}

struct ibv_td *new_td(struct side *s)
{
	struct ibv_td_init_attr attr = {.comp_mask = 0};
	struct ibv_td *td = ibv_alloc_td(s->ctx, &attr);

	assert_non_null(td);
	track(OBJ_TD, td);
	return td;
}

struct ibv_pd *new_parent_domain(struct side *s, struct ibv_td *td)
{
	struct ibv_parent_domain_init_attr attr = {.pd = s->pd, .td = td};
	struct ibv_pd *pd = ibv_alloc_parent_domain(s->ctx, &attr);

	assert_non_null(pd);
	track(OBJ_PD, pd);
	return pd;
}

struct ibv_comp_channel *new_channel(struct side *s)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(s->ctx);

	assert_non_null(ch);
	track(OBJ_CHANNEL, ch);
	return ch;
}

struct ibv_srq *new_srq(struct side *s, uint32_t max_wr, uint32_t max_sge)
{
	struct ibv_srq_init_attr attr = {
		.attr = {.max_wr = max_wr, .max_sge = max_sge},
	};
	struct ibv_srq *srq = ibv_create_srq(s->pd, &attr);

	assert_non_null(srq);
	track(OBJ_SRQ, srq);
	return srq;
}

struct ibv_srq *new_tm_srq(struct side *s, struct ibv_cq_ex *cq, uint32_t max_wr,
			   uint32_t max_num_tags, uint32_t max_ops)
{
	struct ibv_srq_init_attr_ex attr = {
		.attr = {.max_wr = max_wr, .max_sge = 1},
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
			     IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_TM,
		.srq_type = IBV_SRQT_TM,
		.pd = s->pd,
		.cq = ibv_cq_ex_to_cq(cq),
		.tm_cap = {.max_num_tags = max_num_tags, .max_ops = max_ops},
	};
	struct ibv_srq *srq = ibv_create_srq_ex(s->ctx, &attr);

	assert_non_null(srq);
	track(OBJ_SRQ, srq);
	return srq;
}

struct ibv_qp *new_qp(struct side *s, enum ibv_qp_type type, struct ibv_cq *send_cq,
		      struct ibv_cq *recv_cq, struct ibv_srq *srq, uint32_t max_send_wr,
		      uint32_t max_recv_wr)
{
	struct ibv_qp_init_attr attr = {
		.send_cq = send_cq,
		.recv_cq = recv_cq,
		.srq = srq,
		.cap = {
			.max_send_wr = max_send_wr,
			.max_recv_wr = srq != NULL ? 0 : max_recv_wr,
			.max_send_sge = 4,
			.max_recv_sge = srq != NULL ? 0 : 4,
			.max_inline_data = 64,
		},
		.qp_type = type,
	};
	struct ibv_qp *qp = ibv_create_qp(s->pd, &attr);

	assert_non_null(qp);
	track(OBJ_QP, qp);
	assert_int_equal(qp->state, IBV_QPS_RESET);
	return qp;
}

struct ibv_ah *new_ah(struct side *s, const struct side *to)
{
	struct ibv_ah_attr attr = {
		.is_global = 1,
		.port_num = 1,
		.grh = {.dgid = to->gid, .sgid_index = 0, .hop_limit = 64},
	};
	struct ibv_ah *ah = ibv_create_ah(s->pd, &attr);

	assert_non_null(ah);
	track(OBJ_AH, ah);
	return ah;
}

struct ibv_qp_ex *new_qp_ex(struct side *s, enum ibv_qp_type type, struct ibv_cq *cq,
			    uint32_t max_send_wr, uint64_t send_ops)
{
	struct ibv_qp_init_attr_ex attr = {
		.send_cq = cq,
		.recv_cq = cq,
		.cap = {.max_send_wr = max_send_wr, .max_recv_wr = 4, .max_send_sge = 4,
			.max_recv_sge = 4, .max_inline_data = 64},
		.qp_type = type,
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = s->pd,
		.send_ops_flags = send_ops,
	};
	struct ibv_qp *qp = ibv_create_qp_ex(s->ctx, &attr);

	assert_non_null(qp);
	track(OBJ_QP, qp);
	assert_int_equal(qp->state, IBV_QPS_RESET);
	return ibv_qp_to_qp_ex(qp);
}

struct ibv_xrcd *new_xrcd(struct side *s)
{
	struct ibv_xrcd_init_attr attr = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.fd = -1,
		.oflags = O_CREAT,
	};
	struct ibv_xrcd *x = ibv_open_xrcd(s->ctx, &attr);

	assert_non_null(x);
	track(OBJ_XRCD, x);
	return x;
}

struct ibv_srq *new_xrc_srq(struct side *s, struct ibv_xrcd *xrcd, struct ibv_cq *cq,
			    uint32_t max_wr)
{
	struct ibv_srq_init_attr_ex attr = {
		.attr = {.max_wr = max_wr, .max_sge = 1},
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
			     IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ,
		.srq_type = IBV_SRQT_XRC,
		.pd = s->pd,
		.xrcd = xrcd,
		.cq = cq,
	};
	struct ibv_srq *srq = ibv_create_srq_ex(s->ctx, &attr);

	assert_non_null(srq);
	track(OBJ_SRQ, srq);
	return srq;
}

struct ibv_qp *new_xrc_ini(struct side *s, struct ibv_cq *cq, uint32_t max_send_wr)
{
	struct ibv_qp_init_attr_ex attr = {
		.send_cq = cq,
		.cap = {.max_send_wr = max_send_wr, .max_send_sge = 1, .max_inline_data = 64},
		.qp_type = IBV_QPT_XRC_SEND,
		.comp_mask = IBV_QP_INIT_ATTR_PD,
		.pd = s->pd,
	};
	struct ibv_qp *qp = ibv_create_qp_ex(s->ctx, &attr);

	assert_non_null(qp);
	track(OBJ_QP, qp);
	return qp;
}

struct ibv_qp *new_xrc_tgt(struct side *s, struct ibv_xrcd *xrcd)
{
	struct ibv_qp_init_attr_ex attr = {
		.qp_type = IBV_QPT_XRC_RECV,
		.comp_mask = IBV_QP_INIT_ATTR_XRCD,
		.xrcd = xrcd,
	};
	struct ibv_qp *qp = ibv_create_qp_ex(s->ctx, &attr);

	assert_non_null(qp);
	track(OBJ_QP, qp);
	return qp;
}

/* ---- connections ---- */

struct side *side_of(struct ibv_qp *qp)
{
	return qp->context == A.ctx ? &A : &B;
}

uint32_t psn_of(const struct side *s)
{
	return s == &A ? PSN_A : PSN_B;
}

static void expect_rts(struct ibv_qp *qp, int ret, const char *step)
{
	if (ret != 0)
		fail_msg("QP %u to %s: %s", qp->qp_num, step, strerror(ret));
	assert_int_equal(qp->state, IBV_QPS_RTS);
}

static struct qp_peer peer_at(struct ibv_qp *peer, uint32_t psn)
{
	return (struct qp_peer){.qpn = peer->qp_num, .gid = side_of(peer)->gid, .psn = psn};
}

void rc_to_rts_at(struct ibv_qp *qp, struct ibv_qp *peer, const struct conn_opts *o,
		  uint32_t sq_psn, uint32_t rq_psn)
{
	struct qp_peer to = peer_at(peer, rq_psn);
	const char *step = NULL;

	expect_rts(qp, rc_qp_to_rts(qp, sq_psn, &to, o, &step), step);
}

void rc_to_rts(struct ibv_qp *qp, struct ibv_qp *peer, const struct conn_opts *o)
{
	rc_to_rts_at(qp, peer, o, psn_of(side_of(qp)), psn_of(side_of(peer)));
}

void connect_rc(struct ibv_qp *qa, struct ibv_qp *qb, const struct conn_opts *o)
{
	rc_to_rts(qa, qb, o);
	rc_to_rts(qb, qa, o);
}

void connect_uc(struct ibv_qp *qa, struct ibv_qp *qb, unsigned int access)
{
	struct conn_opts o = conn_default;

	o.access = access;
	struct qp_peer to_b = peer_at(qb, psn_of(side_of(qb)));
	struct qp_peer to_a = peer_at(qa, psn_of(side_of(qa)));
	const char *step = NULL;

	expect_rts(qa, uc_qp_to_rts(qa, psn_of(side_of(qa)), &to_b, &o, &step), step);
	expect_rts(qb, uc_qp_to_rts(qb, psn_of(side_of(qb)), &to_a, &o, &step), step);
}

void rc_pair(struct rc_pair *p, const struct conn_opts *o)
{
	p->acq = new_cq(&A, 256, NULL, NULL);
	p->bcq = new_cq(&B, 256, NULL, NULL);
	p->a = new_qp(&A, IBV_QPT_RC, p->acq, p->acq, NULL, 64, 64);
	p->b = new_qp(&B, IBV_QPT_RC, p->bcq, p->bcq, NULL, 64, 64);
	connect_rc(p->a, p->b, o);
}

void ud_to_rts(struct ibv_qp *qp, uint32_t qkey)
{
	const char *step = NULL;

	expect_rts(qp, ud_qp_to_rts(qp, qkey, psn_of(side_of(qp)), &step), step);
}

enum ibv_qp_state qp_state_of(struct ibv_qp *qp)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;

	assert_int_equal(ibv_query_qp(qp, &attr, IBV_QP_STATE, &init), 0);
	return attr.qp_state;
}

void qp_to_err(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_ERR};

	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
	assert_int_equal(qp->state, IBV_QPS_ERR);
}

/* ---- posting ---- */

/* A send WR of one SGE, signaled or as @p flags say. */
static void one_sge_wr(struct ibv_send_wr *wr, struct ibv_sge *sge, enum ibv_wr_opcode op,
		       uint64_t wr_id, const void *addr, uint32_t len, uint32_t lkey,
		       unsigned int flags)
{
	*sge = (struct ibv_sge){.addr = (uintptr_t)addr, .length = len, .lkey = lkey};
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = wr_id;
	wr->sg_list = sge;
	wr->num_sge = 1;
	wr->opcode = op;
	wr->send_flags = flags;
}

/* ibv_post_send() of @p wr alone: a refused WR is the one *bad_wr names. */
static int post_one(struct ibv_qp *qp, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad = NULL;
	int ret = ibv_post_send(qp, wr, &bad);

	if (ret != 0)
		assert_ptr_equal(bad, wr);
	return ret;
}

int post_send_imm(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id, const void *addr,
		  uint32_t len, uint32_t lkey, uint32_t imm_host, uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sge;
	struct ibv_send_wr wr;

	one_sge_wr(&wr, &sge, op, wr_id, addr, len, lkey, IBV_SEND_SIGNALED);
	wr.imm_data = htobe32(imm_host);
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return post_one(qp, &wr);
}

int post_send(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id, const void *addr,
	      uint32_t len, uint32_t lkey, unsigned int flags)
{
	struct ibv_sge sge;
	struct ibv_send_wr wr;

	one_sge_wr(&wr, &sge, op, wr_id, addr, len, lkey, flags);
	return post_one(qp, &wr);
}

int post_atomic(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id, uint64_t *local,
		uint32_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey, uint64_t compare_add,
		uint64_t swap, unsigned int flags)
{
	struct ibv_sge sge;
	struct ibv_send_wr wr;

	one_sge_wr(&wr, &sge, op, wr_id, local, len, lkey, IBV_SEND_SIGNALED | flags);
	wr.wr.atomic.remote_addr = raddr;
	wr.wr.atomic.rkey = rkey;
	wr.wr.atomic.compare_add = compare_add;
	wr.wr.atomic.swap = swap;
	return post_one(qp, &wr);
}

int post_rdma(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id, const void *addr,
	      uint32_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey)
{
	return post_send_imm(qp, op, wr_id, addr, len, lkey, 0, raddr, rkey);
}

int post_recv(struct ibv_qp *qp, uint64_t wr_id, void *addr, uint32_t len, uint32_t lkey)
{
	struct ibv_sge sge = {.addr = (uintptr_t)addr, .length = len, .lkey = lkey};
	struct ibv_recv_wr wr = {.wr_id = wr_id, .sg_list = &sge, .num_sge = 1}, *bad = NULL;
	int ret = ibv_post_recv(qp, &wr, &bad);

	if (ret != 0)
		assert_ptr_equal(bad, &wr);
	return ret;
}

int post_srq_recv(struct ibv_srq *srq, uint64_t wr_id, void *addr, uint32_t len, uint32_t lkey)
{
	struct ibv_sge sge = {.addr = (uintptr_t)addr, .length = len, .lkey = lkey};
	struct ibv_recv_wr wr = {.wr_id = wr_id, .sg_list = &sge, .num_sge = 1}, *bad = NULL;
	int ret = ibv_post_srq_recv(srq, &wr, &bad);

	if (ret != 0)
		assert_ptr_equal(bad, &wr);
	return ret;
}

int post_tag_add(struct ibv_srq *srq, uint64_t wr_id, uint64_t recv_wr_id, void *addr,
		 uint32_t len, uint32_t lkey, uint64_t tag, uint64_t mask, unsigned int flags,
		 uint32_t unexpected_cnt, uint32_t *handle)
{
	struct ibv_sge sge = {.addr = (uintptr_t)addr, .length = len, .lkey = lkey};
	struct ibv_ops_wr op, *bad = NULL;
	int ret;

	memset(&op, 0, sizeof(op));
	op.wr_id = wr_id;
	op.opcode = IBV_WR_TAG_ADD;
	op.flags = flags;
	op.tm.unexpected_cnt = unexpected_cnt;
	op.tm.handle = UINT32_MAX;
	op.tm.add.recv_wr_id = recv_wr_id;
	op.tm.add.sg_list = &sge;
	op.tm.add.num_sge = 1;
	op.tm.add.tag = tag;
	op.tm.add.mask = mask;
	ret = ibv_post_srq_ops(srq, &op, &bad);
	if (ret != 0)
		assert_ptr_equal(bad, &op);
	else if (handle != NULL)
		*handle = op.tm.handle; /* doc/guides/srq.md §3: before the call returns */
	return ret;
}

/* ---- polling ---- */

static uint64_t find_xstat(const struct dpv_verbs_xstat *xs, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (strcmp(xs[i].name, name) == 0)
			return xs[i].value;
	fail_msg("no counter %s", name);
	return 0;
}

uint64_t dev_xstat(struct ibv_context *ctx, const char *name)
{
	struct dpv_verbs_xstat xs[512];
	int n = dpv_verbs_query_xstats(ctx, xs, 512);

	assert_true(n > 0 && n <= 512);
	return find_xstat(xs, n, name);
}

uint64_t qp_xstat(struct ibv_qp *qp, const char *name)
{
	struct dpv_verbs_xstat xs[64];
	int n = dpv_verbs_query_qp_xstats(qp, xs, 64);

	assert_true(n > 0 && n <= 64);
	return find_xstat(xs, n, name);
}

void progress(void)
{
	struct ibv_wc wc;

	assert_int_equal(ibv_poll_cq(A.idle_cq, 1, &wc), 0);
}

static int poll_for(struct ibv_cq *cq, struct ibv_wc *wc, int n, uint64_t ms)
{
	uint64_t end = now_ms() + ms;
	int got = 0, ret;

	while (got < n) {
		ret = ibv_poll_cq(cq, n - got, wc + got);
		assert_true(ret >= 0);
		got += ret;
		if (ret == 0 && now_ms() > end)
			break;
	}
	return got;
}

int poll_wc(struct ibv_cq *cq, struct ibv_wc *wc, int n)
{
	return poll_for(cq, wc, n, WAIT_MS);
}

void expect_wc(struct ibv_cq *cq, struct ibv_wc *wc)
{
	assert_int_equal(poll_wc(cq, wc, 1), 1);
}

void expect_quiet(struct ibv_cq *cq)
{
	struct ibv_wc wc;
	int got = poll_for(cq, &wc, 1, QUIET_MS);

	if (got != 0)
		fail_msg("unexpected completion: wr_id %" PRIu64 " status %s opcode %d",
			 wc.wr_id, ibv_wc_status_str(wc.status), wc.opcode);
}

void expect_send_ok(struct ibv_cq *cq, uint64_t wr_id, enum ibv_wc_opcode opcode)
{
	struct ibv_wc wc;

	expect_wc(cq, &wc);
	if (wc.status != IBV_WC_SUCCESS)
		fail_msg("send wr_id %" PRIu64 ": %s", wc.wr_id, ibv_wc_status_str(wc.status));
	assert_int_equal(wc.wr_id, wr_id);
	assert_int_equal(wc.opcode, opcode);
}

void read_ex(struct ibv_cq_ex *cq, struct wc_ex *w)
{
	memset(w, 0, sizeof(*w));
	w->wr_id = cq->wr_id;
	w->status = cq->status;
	w->opcode = ibv_wc_read_opcode(cq);
	w->wc_flags = ibv_wc_read_wc_flags(cq);
	w->byte_len = ibv_wc_read_byte_len(cq);
	w->qp_num = ibv_wc_read_qp_num(cq);
	w->src_qp = ibv_wc_read_src_qp(cq);
	ibv_wc_read_tm_info(cq, &w->tm);
}

static int poll_ex_for(struct ibv_cq_ex *cq, struct wc_ex *wc, int n, uint64_t ms)
{
	struct ibv_poll_cq_attr attr = {.comp_mask = 0};
	uint64_t end = now_ms() + ms;
	int got = 0, ret;

	while (got < n) {
		ret = ibv_start_poll(cq, &attr);
		if (ret == ENOENT) {
			if (now_ms() > end)
				break;
			continue;
		}
		assert_int_equal(ret, 0);
		read_ex(cq, &wc[got++]);
		while (got < n && ibv_next_poll(cq) == 0)
			read_ex(cq, &wc[got++]);
		ibv_end_poll(cq);
	}
	return got;
}

int poll_ex(struct ibv_cq_ex *cq, struct wc_ex *wc, int n)
{
	return poll_ex_for(cq, wc, n, WAIT_MS);
}

void expect_ex(struct ibv_cq_ex *cq, struct wc_ex *wc)
{
	assert_int_equal(poll_ex(cq, wc, 1), 1);
}

void expect_quiet_ex(struct ibv_cq_ex *cq)
{
	struct wc_ex wc;

	if (poll_ex_for(cq, &wc, 1, QUIET_MS) != 0)
		fail_msg("unexpected completion: wr_id %" PRIu64 " status %s opcode %d flags %#x",
			 wc.wr_id, ibv_wc_status_str(wc.status), wc.opcode, wc.wc_flags);
}

bool wait_async_event(struct ibv_context *ctx, struct ibv_async_event *ev, unsigned int ms)
{
	uint64_t end = now_ms() + ms;
	struct pollfd pfd = {.fd = ctx->async_fd, .events = POLLIN};

	for (;;) {
		pfd.revents = 0;
		if (poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLIN))
			break;
		if (now_ms() > end)
			return false;
		progress();
	}
	assert_int_equal(ibv_get_async_event(ctx, ev), 0);
	return true;
}

static bool parse_ipv4(const char *s, uint32_t *out)
{
	unsigned int a, b, c, d;

	if (sscanf(s, "%u.%u.%u.%u", &a, &b, &c, &d) != 4 || a > 255 || b > 255 || c > 255 ||
	    d > 255)
		return false;
	*out = a << 24 | b << 16 | c << 8 | d;
	return true;
}

static bool open_side(struct side *s, const char *name, struct ibv_device *dev)
{
	s->name = name;
	s->dev = dev;
	s->ctx = ibv_open_device(dev);
	if (s->ctx == NULL) {
		perror("ibv_open_device");
		return false;
	}
	s->pd = ibv_alloc_pd(s->ctx);
	s->idle_cq = ibv_create_cq(s->ctx, 1, NULL, NULL, 0);
	if (s->pd == NULL || s->idle_cq == NULL || ibv_query_gid(s->ctx, 1, 0, &s->gid) != 0) {
		fprintf(stderr, "%s: cannot set up PD, CQ or GID\n", name);
		return false;
	}
	return true;
}

static void close_side(struct side *s)
{
	if (s->ctx == NULL)
		return;
	if (s->idle_cq != NULL)
		ibv_destroy_cq(s->idle_cq);
	if (s->pd != NULL)
		ibv_dealloc_pd(s->pd);
	ibv_close_device(s->ctx);
}

bool sides_open(const char *ipv4)
{
	if (!parse_ipv4(ipv4, &A.ipv4) || strchr(ipv4, ',') == NULL ||
	    !parse_ipv4(strchr(ipv4, ',') + 1, &B.ipv4)) {
		fprintf(stderr, "DPV_PORT_IPV4=%s: want two addresses\n", ipv4);
		return false;
	}
	dev_list = ibv_get_device_list(&dev_count);
	if (dev_list == NULL || dev_count != 2) {
		fprintf(stderr, "want 2 devices (DPV_RING_PAIRS=1), got %d\n",
			dev_list != NULL ? dev_count : -1);
		return false;
	}
	return open_side(&A, "dpv0", dev_list[0]) && open_side(&B, "dpv1", dev_list[1]);
}

void sides_close(void)
{
	close_side(&B);
	close_side(&A);
	if (dev_list != NULL)
		ibv_free_device_list(dev_list);
	dev_list = NULL;
}

bool faults_on(void)
{
	const char *f = getenv("DPV_FAULTS");

	return f != NULL && f[0] != '\0';
}

void sides_env_defaults(const char *cores)
{
	char eal[160];

	snprintf(eal, sizeof(eal), "-l %s --no-pci --no-huge --no-shconf -m 512 --no-telemetry "
		 "--log-level=lib.eal:error", cores);
	setenv("DPV_EAL_ARGS", eal, 0);
	setenv("DPV_RING_PAIRS", "1", 0);
	setenv("DPV_PORT_IPV4", "127.0.20.1,127.0.20.2", 0);
}

int sides_run_group(const char *name, const struct CMUnitTest *tests, size_t n)
{
	int failed;

	if (!sides_open(getenv("DPV_PORT_IPV4"))) {
		sides_close();
		return 1;
	}
	failed = _cmocka_run_group_tests(name, tests, n, NULL, NULL);
	sides_close();
	return failed ? 1 : 0;
}
