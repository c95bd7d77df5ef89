/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What rdma-core's providers answer and programs written against them rely on (its
 * pyverbs suite checks each): a vendor id that is no maker's; a command FD, inert;
 * EOPNOTSUPP, not EINVAL, for a valid request dpverbs does not offer; on-demand paging;
 * the extended send API (ibv_wr_*); ibv_resize_cq; a QP moved to RESET leaves no completion behind in its
 * CQs; the port's link changes come as IBV_EVENT_PORT_ACTIVE and IBV_EVENT_PORT_ERR.
 * The link is turned down and up with DPDK's rte_eth_dev_set_link_down/up on the ring
 * port under the device, as a cable would.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <rte_ethdev.h>

#include "test_verbs.h"

#define LW IBV_ACCESS_LOCAL_WRITE

static void vendor_id_is_no_makers_oui(void **state)
{
	struct ibv_device_attr attr;
	struct ibv_device_attr_ex ex;

	(void)state;
	assert_int_equal(ibv_query_device(A.ctx, &attr), 0);
	assert_int_equal(attr.vendor_id, 0xffffff);
	assert_int_equal(ibv_query_device_ex(B.ctx, NULL, &ex), 0);
	assert_int_equal(ex.orig_attr.vendor_id, 0xffffff);
}

/* The capability flags say what the device does: it NAKs for RNR, raises port events
 * (link_changes_are_port_events) and has memory windows of type 1 and 2B (test_mw.c);
 * it does not resize an SRQ, nor has type 2A windows, and says so. */
static void cap_flags_are_true(void **state)
{
	struct ibv_srq_init_attr init = {.attr = {.max_wr = 16, .max_sge = 1}};
	struct ibv_srq_attr sa = {.max_wr = 32};
	struct ibv_device_attr attr;
	struct ibv_srq *srq;

	(void)state;
	assert_int_equal(ibv_query_device(A.ctx, &attr), 0);
	assert_true(attr.device_cap_flags & IBV_DEVICE_RC_RNR_NAK_GEN);
	assert_true(attr.device_cap_flags & IBV_DEVICE_PORT_ACTIVE_EVENT);
	assert_false(attr.device_cap_flags & IBV_DEVICE_SRQ_RESIZE);
	assert_true(attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW);
	assert_true(attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B);
	assert_false(attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2A);
	assert_true(attr.max_mw > 0);
	srq = ibv_create_srq(A.pd, &init);
	assert_non_null(srq);
	assert_int_equal(ibv_modify_srq(srq, &sa, IBV_SRQ_MAX_WR), EINVAL);
	assert_int_equal(ibv_destroy_srq(srq), 0);
}

/* The context's cmd_fd is a descriptor a program can dup() and poll(), which takes no
 * command, and importing through it is refused as a valid request not offered. */
static void cmd_fd_is_inert_and_import_refused(void **state)
{
	struct pollfd pfd = {.fd = A.ctx->cmd_fd, .events = POLLIN | POLLOUT};
	char byte = 0;
	int fd;

	(void)state;
	assert_true(A.ctx->cmd_fd >= 0);
	assert_int_not_equal(A.ctx->cmd_fd, B.ctx->cmd_fd);
	assert_int_equal(poll(&pfd, 1, 0), 0);
	errno = 0;
	assert_int_equal(read(A.ctx->cmd_fd, &byte, 1), -1);
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_int_equal(write(A.ctx->cmd_fd, &byte, 1), -1);
	assert_int_equal(errno, EINVAL);
	fd = dup(A.ctx->cmd_fd);
	assert_true(fd >= 0);
	errno = 0;
	assert_null(ibv_import_device(fd));
	assert_int_equal(errno, EOPNOTSUPP);
	assert_int_equal(close(fd), 0);
}

static int create_qp_errno(struct ibv_qp_init_attr_ex *attr)
{
	struct ibv_qp *qp;

	errno = 0;
	qp = ibv_create_qp_ex(A.ctx, attr);
	if (qp == NULL)
		return errno;
	assert_int_equal(ibv_destroy_qp(qp), 0);
	return 0;
}

static void qp_init(struct ibv_qp_init_attr_ex *attr, struct ibv_cq *cq, enum ibv_qp_type t)
{
	memset(attr, 0, sizeof(*attr));
	attr->qp_type = t;
	attr->send_cq = cq;
	attr->recv_cq = cq;
	attr->cap.max_send_wr = 4;
	attr->cap.max_recv_wr = 4;
	attr->cap.max_send_sge = 1;
	attr->cap.max_recv_sge = 1;
	attr->comp_mask = IBV_QP_INIT_ATTR_PD;
	attr->pd = A.pd;
}

static void create_qp_ex_unsupported_is_eopnotsupp(void **state)
{
	struct ibv_cq *cq = new_cq(&A, 16, NULL, NULL);
	struct ibv_qp_init_attr_ex attr;

	(void)state;
	/* Send ops of the extended send API that a QP of that type does not have. */
	qp_init(&attr, cq, IBV_QPT_RC);
	attr.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	attr.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_ATOMIC_WRITE;
	assert_int_equal(create_qp_errno(&attr), 0);
	attr.send_ops_flags = IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV |
			      IBV_QP_EX_WITH_SEND_WITH_INV;
	assert_int_equal(create_qp_errno(&attr), 0);
	attr.send_ops_flags = IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
	assert_int_equal(create_qp_errno(&attr), 0);
	qp_init(&attr, cq, IBV_QPT_UC);
	attr.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	attr.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_READ;
	assert_int_equal(create_qp_errno(&attr), EOPNOTSUPP);
	attr.send_ops_flags = IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
	assert_int_equal(create_qp_errno(&attr), EOPNOTSUPP);
	attr.send_ops_flags = IBV_QP_EX_WITH_ATOMIC_WRITE;
	assert_int_equal(create_qp_errno(&attr), EOPNOTSUPP);
	attr.send_ops_flags = IBV_QP_EX_WITH_SEND_WITH_INV;
	assert_int_equal(create_qp_errno(&attr), EOPNOTSUPP);
	attr.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM;
	assert_int_equal(create_qp_errno(&attr), 0);
	qp_init(&attr, cq, IBV_QPT_UD);
	attr.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	attr.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE;
	assert_int_equal(create_qp_errno(&attr), EOPNOTSUPP);
	attr.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_ATOMIC_WRITE;
	assert_int_equal(create_qp_errno(&attr), EOPNOTSUPP);
	attr.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;
	assert_int_equal(create_qp_errno(&attr), 0);
	/* Creation flags: none offered, but asking for none is asking for nothing. */
	qp_init(&attr, cq, IBV_QPT_UD);
	attr.comp_mask |= IBV_QP_INIT_ATTR_CREATE_FLAGS;
	assert_int_equal(create_qp_errno(&attr), 0);
	attr.create_flags = IBV_QP_CREATE_BLOCK_SELF_MCAST_LB;
	assert_int_equal(create_qp_errno(&attr), EOPNOTSUPP);
	/* QP types of the verbs that dpverbs does not have, whatever else is asked. */
	qp_init(&attr, cq, IBV_QPT_RAW_PACKET);
	attr.comp_mask |= IBV_QP_INIT_ATTR_MAX_TSO_HEADER;
	attr.max_tso_header = 64;
	assert_int_equal(create_qp_errno(&attr), EOPNOTSUPP);
	qp_init(&attr, cq, IBV_QPT_RC);
	attr.comp_mask |= IBV_QP_INIT_ATTR_RX_HASH;
	assert_int_equal(create_qp_errno(&attr), EOPNOTSUPP);
	/* What is not a request at all stays EINVAL. */
	qp_init(&attr, cq, IBV_QPT_RC);
	attr.comp_mask |= 1u << 20;
	assert_int_equal(create_qp_errno(&attr), EINVAL);
	qp_init(&attr, cq, (enum ibv_qp_type)200);
	assert_int_equal(create_qp_errno(&attr), EINVAL);
	qp_init(&attr, cq, IBV_QPT_RC);
	attr.comp_mask = 0;
	assert_int_equal(create_qp_errno(&attr), EINVAL);
}

/* The inline room a QP reports at create and in ibv_query_qp, for what it asked. */
static uint32_t inline_room_of(struct ibv_cq *cq, uint32_t max_send_sge, uint32_t max_inline)
{
	struct ibv_qp_init_attr init = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = max_send_sge,
			.max_recv_sge = 1, .max_inline_data = max_inline},
	};
	struct ibv_qp_init_attr qinit;
	struct ibv_qp_attr qattr;
	struct ibv_qp *qp = ibv_create_qp(A.pd, &init);

	assert_non_null(qp);
	assert_int_equal(ibv_query_qp(qp, &qattr, IBV_QP_CAP, &qinit), 0);
	assert_int_equal(qattr.cap.max_inline_data, init.cap.max_inline_data);
	assert_int_equal(qinit.cap.max_inline_data, init.cap.max_inline_data);
	assert_int_equal(ibv_destroy_qp(qp), 0);
	return init.cap.max_inline_data;
}

/* ibv_create_qp(3): the caps come back as the QP has them. The inline room is at least
 * what the scatter list describes, 16 bytes an SGE, as rxe makes it (up to the
 * device's 256), and a SEND of that many bytes inline goes through on a QP that asked
 * for none (rdma_xclient posts one); a byte more is EINVAL. */
static void inline_room_rounded_up_and_reported(void **state)
{
	struct ibv_cq *acq = new_cq(&A, 16, NULL, NULL), *bcq = new_cq(&B, 16, NULL, NULL);
	struct ibv_qp_init_attr init = {
		.send_cq = acq, .recv_cq = acq, .qp_type = IBV_QPT_RC, .sq_sig_all = 1,
		.cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1},
	};
	struct ibv_mr *rmr = new_mr(&B, 64, LW);
	char msg[17], *r = rmr->addr;
	struct ibv_qp *a, *b;
	struct ibv_wc wc;

	(void)state;
	assert_int_equal(inline_room_of(acq, 1, 0), 16);
	assert_int_equal(inline_room_of(acq, 4, 0), 64);
	assert_int_equal(inline_room_of(acq, 4, 100), 100);
	assert_int_equal(inline_room_of(acq, 16, 0), 256);
	assert_int_equal(inline_room_of(acq, 0, 0), 0);
	init.cap.max_inline_data = 257;
	errno = 0;
	assert_null(ibv_create_qp(A.pd, &init));
	assert_int_equal(errno, EINVAL);
	init.cap.max_inline_data = 0;
	a = ibv_create_qp(A.pd, &init);
	assert_non_null(a);
	assert_int_equal(init.cap.max_inline_data, 16);
	b = new_qp(&B, IBV_QPT_RC, bcq, bcq, NULL, 8, 8);
	connect_rc(a, b, &conn_default);
	fill_pattern(msg, sizeof(msg), 7);
	assert_int_equal(post_recv(b, 1, r, 64, rmr->lkey), 0);
	assert_int_equal(post_send(a, IBV_WR_SEND, 2, msg, 17, 0, IBV_SEND_INLINE), EINVAL);
	assert_int_equal(post_send(a, IBV_WR_SEND, 3, msg, 16, 0, IBV_SEND_INLINE), 0);
	memset(msg, 0, sizeof(msg)); /* copied at the post */
	expect_send_ok(acq, 3, IBV_WC_SEND);
	expect_wc(bcq, &wc);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.byte_len, 16);
	fill_pattern(msg, 16, 7);
	assert_memory_equal(r, msg, 16);
	expect_quiet(acq);
	assert_int_equal(ibv_destroy_qp(a), 0);
}

/* An RC QP on A with the extended send API, connected to a plain one on B. */
static struct ibv_qp_ex *qp_ex_pair(struct ibv_cq *acq, struct ibv_cq *bcq, struct ibv_qp **b)
{
	struct ibv_qp_init_attr_ex attr;
	struct ibv_qp *a;

	qp_init(&attr, acq, IBV_QPT_RC);
	attr.cap.max_inline_data = 64;
	attr.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	attr.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
			      IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_READ |
			      IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
			      IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
	a = ibv_create_qp_ex(A.ctx, &attr);
	assert_non_null(a);
	*b = new_qp(&B, IBV_QPT_RC, bcq, bcq, NULL, 8, 8);
	connect_rc(a, *b, &(struct conn_opts){.access = IBV_ACCESS_REMOTE_WRITE |
						  IBV_ACCESS_REMOTE_READ |
						  IBV_ACCESS_REMOTE_ATOMIC,
						  .timeout = 14, .retry_cnt = 7, .max_rd_atomic = 16,
						  .max_dest_rd_atomic = 16});
	return ibv_qp_to_qp_ex(a);
}

/* ibv_wr_post(3): one batch of a SEND, an inline SEND with immediate, a WRITE and a
 * READ arrives whole and in order; a batch with a bad call posts nothing. */
static void qp_ex_batch_posts_in_order(void **state)
{
	struct ibv_cq *acq = new_cq(&A, 16, NULL, NULL), *bcq = new_cq(&B, 16, NULL, NULL);
	struct ibv_mr *smr = new_mr(&A, 4096, LW);
	struct ibv_mr *rmr = new_mr(&B, 4096, LW | IBV_ACCESS_REMOTE_WRITE |
				    IBV_ACCESS_REMOTE_READ);
	char *s = smr->addr, *r = rmr->addr, inl[16];
	struct ibv_qp *b;
	struct ibv_qp_ex *x = qp_ex_pair(acq, bcq, &b);
	struct ibv_wc wc[4];

	(void)state;
	assert_non_null(x);
	fill_pattern(s, 1024, 1);
	fill_pattern(r + 2048, 512, 2);
	fill_pattern(inl, sizeof(inl), 3);
	assert_int_equal(post_recv(b, 1, r, 256, rmr->lkey), 0);
	assert_int_equal(post_recv(b, 2, r + 256, 256, rmr->lkey), 0);
	ibv_wr_start(x);
	x->wr_id = 11;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, smr->lkey, (uintptr_t)s, 200);
	x->wr_id = 12;
	ibv_wr_send_imm(x, htobe32(0x1234));
	ibv_wr_set_inline_data(x, inl, sizeof(inl));
	memset(inl, 0, sizeof(inl)); /* copied by the call */
	x->wr_id = 13;
	ibv_wr_rdma_write(x, rmr->rkey, (uintptr_t)r + 1024);
	ibv_wr_set_sge(x, smr->lkey, (uintptr_t)s, 1024);
	x->wr_id = 14;
	ibv_wr_rdma_read(x, rmr->rkey, (uintptr_t)r + 2048);
	ibv_wr_set_sge(x, smr->lkey, (uintptr_t)s + 2048, 512);
	assert_int_equal(ibv_wr_complete(x), 0);
	assert_int_equal(poll_wc(acq, wc, 4), 4);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
		assert_int_equal(wc[i].wr_id, 11 + i);
	}
	assert_int_equal(poll_wc(bcq, wc, 2), 2);
	assert_int_equal(wc[0].wr_id, 1);
	assert_int_equal(wc[0].byte_len, 200);
	assert_int_equal(wc[1].wr_id, 2);
	assert_int_equal(wc[1].byte_len, sizeof(inl));
	assert_true(wc[1].wc_flags & IBV_WC_WITH_IMM);
	assert_int_equal(be32toh(wc[1].imm_data), 0x1234);
	assert_true(check_pattern(r, 200, 1));
	assert_true(check_pattern(r + 256, sizeof(inl), 3));
	assert_true(check_pattern(r + 1024, 1024, 1));
	assert_true(check_pattern(s + 2048, 512, 2));
	/* A setter before any WR: the batch fails with EINVAL and posts nothing. */
	ibv_wr_start(x);
	ibv_wr_set_sge(x, smr->lkey, (uintptr_t)s, 8);
	x->wr_id = 15;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, smr->lkey, (uintptr_t)s, 8);
	assert_int_equal(ibv_wr_complete(x), EINVAL);
	expect_quiet(acq);
	/* ibv_wr_abort() drops the batch. */
	ibv_wr_start(x);
	ibv_wr_send(x);
	ibv_wr_set_sge(x, smr->lkey, (uintptr_t)s, 8);
	ibv_wr_abort(x);
	expect_quiet(acq);
	assert_int_equal(ibv_destroy_qp(&x->qp_base), 0);
}

/* ibv_wr_atomic_fetch_add(3) and ibv_wr_atomic_cmp_swp(3) in one batch: each returns
 * the value it found into its 8-byte buffer, and the compare-and-swap sees the add. */
static void qp_ex_atomics(void **state)
{
	struct ibv_cq *acq = new_cq(&A, 16, NULL, NULL), *bcq = new_cq(&B, 16, NULL, NULL);
	struct ibv_mr *lmr = new_mr(&A, 4096, LW);
	struct ibv_mr *rmr = new_mr(&B, 4096, LW | IBV_ACCESS_REMOTE_ATOMIC);
	uint64_t *l = lmr->addr, *r = rmr->addr;
	struct ibv_qp *b;
	struct ibv_qp_ex *x = qp_ex_pair(acq, bcq, &b);
	struct ibv_wc wc[2];

	(void)state;
	assert_non_null(x);
	r[0] = 40;
	l[0] = l[1] = 0xdead;
	ibv_wr_start(x);
	x->wr_id = 21;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_atomic_fetch_add(x, rmr->rkey, (uintptr_t)r, 2);
	ibv_wr_set_sge(x, lmr->lkey, (uintptr_t)&l[0], 8);
	x->wr_id = 22;
	ibv_wr_atomic_cmp_swp(x, rmr->rkey, (uintptr_t)r, 42, 7);
	ibv_wr_set_sge(x, lmr->lkey, (uintptr_t)&l[1], 8);
	assert_int_equal(ibv_wr_complete(x), 0);
	assert_int_equal(poll_wc(acq, wc, 2), 2);
	assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
	assert_int_equal(wc[0].opcode, IBV_WC_FETCH_ADD);
	assert_int_equal(wc[0].wr_id, 21);
	assert_int_equal(wc[1].status, IBV_WC_SUCCESS);
	assert_int_equal(wc[1].opcode, IBV_WC_COMP_SWAP);
	assert_int_equal(wc[1].wr_id, 22);
	assert_int_equal(l[0], 40);
	assert_int_equal(l[1], 42);
	assert_int_equal(r[0], 7);
	assert_int_equal(ibv_destroy_qp(&x->qp_base), 0);
}

static int reg_mr_errno(void *buf, unsigned int access)
{
	struct ibv_mr *mr;

	errno = 0;
	mr = ibv_reg_mr(A.pd, buf, 4096, (int)access);
	if (mr == NULL)
		return errno;
	assert_int_equal(ibv_dereg_mr(mr), 0);
	return 0;
}

static void reg_mr_unsupported_access_is_eopnotsupp(void **state)
{
	void *buf = new_buf(4096);
	struct ibv_mr *mr;

	(void)state;
	assert_int_equal(reg_mr_errno(buf, LW | IBV_ACCESS_ZERO_BASED), EOPNOTSUPP);
	/* Memory windows are offered (test_mw.c). */
	assert_int_equal(reg_mr_errno(buf, LW | IBV_ACCESS_MW_BIND), 0);
	/* A hint about the pages changes nothing: accepted. */
	assert_int_equal(reg_mr_errno(buf, LW | IBV_ACCESS_HUGETLB), 0);
	/* Undefined bits, and remote write without local write, stay EINVAL. */
	assert_int_equal(reg_mr_errno(buf, LW | (1u << 12)), EINVAL);
	assert_int_equal(reg_mr_errno(buf, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_MW_BIND), EINVAL);
	/* ibv_rereg_mr(3) judges the new access alike, and leaves the region as it was. */
	mr = new_mr(&A, 4096, LW);
	errno = 0;
	assert_int_equal(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
				      LW | IBV_ACCESS_ZERO_BASED), IBV_REREG_MR_ERR_INPUT);
	assert_int_equal(errno, EOPNOTSUPP);
	/* A pinned region does not become an on-demand one. */
	errno = 0;
	assert_int_equal(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
				      LW | IBV_ACCESS_ON_DEMAND), IBV_REREG_MR_ERR_INPUT);
	assert_int_equal(errno, EOPNOTSUPP);
	assert_int_equal(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
				      LW | IBV_ACCESS_REMOTE_READ), 0);
}

/* On-demand paging: the caps say so, a region's pages need not be present (nor
 * locked), an implicit region covers the address space, prefetching is advice. */
static void on_demand_regions(void **state)
{
	const size_t len = 64 * 1024;
	struct ibv_device_attr_ex ex;
	struct ibv_cq *acq = new_cq(&A, 16, NULL, NULL), *bcq = new_cq(&B, 16, NULL, NULL);
	struct ibv_qp *a = new_qp(&A, IBV_QPT_RC, acq, acq, NULL, 8, 8);
	struct ibv_qp *b = new_qp(&B, IBV_QPT_RC, bcq, bcq, NULL, 8, 8);
	struct ibv_mr *src = new_mr(&B, len, LW), *odp, *implicit, *pinned;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *q = new_buf(4096);
	struct ibv_sge sge;
	struct ibv_wc wc;

	(void)state;
	assert_true(p != MAP_FAILED);
	assert_int_equal(ibv_query_device_ex(A.ctx, NULL, &ex), 0);
	assert_int_equal(ex.odp_caps.general_caps, IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT);
	assert_true(ex.odp_caps.per_transport_caps.rc_odp_caps & IBV_ODP_SUPPORT_WRITE);
	assert_true(ex.odp_caps.per_transport_caps.ud_odp_caps & IBV_ODP_SUPPORT_RECV);
	/* Pages never touched: the device's WRITE faults them in. */
	odp = ibv_reg_mr(A.pd, p, len, LW | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_ON_DEMAND);
	assert_non_null(odp);
	/* The QP takes the region's access word; what is only a region's means nothing. */
	connect_rc(a, b, &(struct conn_opts){.access = IBV_ACCESS_REMOTE_WRITE |
						  IBV_ACCESS_ON_DEMAND | IBV_ACCESS_HUGETLB,
						  .timeout = 14, .retry_cnt = 7, .max_rd_atomic = 16,
						  .max_dest_rd_atomic = 16});
	fill_pattern(src->addr, len, 31);
	assert_int_equal(post_rdma(b, IBV_WR_RDMA_WRITE, 1, src->addr, (uint32_t)len, src->lkey,
				   (uintptr_t)p, odp->rkey), 0);
	expect_send_ok(bcq, 1, IBV_WC_RDMA_WRITE);
	assert_true(check_pattern(p, len, 31));
	/* Prefetching: within the region, for writing a writable one; not a pinned one's. */
	sge = (struct ibv_sge){.addr = (uintptr_t)p, .length = (uint32_t)len, .lkey = odp->lkey};
	assert_int_equal(ibv_advise_mr(A.pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
				       IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1), 0);
	assert_int_equal(ibv_advise_mr(A.pd, IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT, 0, &sge, 1), 0);
	assert_int_equal(ibv_advise_mr(A.pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 1u << 3, &sge, 1),
			 EINVAL);
	assert_int_equal(ibv_advise_mr(A.pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &sge, 0), EINVAL);
	sge.length = (uint32_t)len + 1;
	assert_int_equal(ibv_advise_mr(A.pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &sge, 1), EFAULT);
	sge.length = 8;
	sge.lkey ^= 0x100;
	assert_int_equal(ibv_advise_mr(A.pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &sge, 1), EFAULT);
	pinned = new_mr(&A, 4096, IBV_ACCESS_REMOTE_READ);
	sge = (struct ibv_sge){.addr = (uintptr_t)pinned->addr, .length = 8, .lkey = pinned->lkey};
	assert_int_equal(ibv_advise_mr(A.pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &sge, 1), EINVAL);
	/* An implicit region: address 0, length SIZE_MAX; any address is in it. */
	implicit = ibv_reg_mr(A.pd, NULL, SIZE_MAX, LW | IBV_ACCESS_ON_DEMAND);
	assert_non_null(implicit);
	assert_int_equal(implicit->length, SIZE_MAX);
	memset(q, 0, 64);
	assert_int_equal(post_recv(a, 2, q, 64, implicit->lkey), 0);
	assert_int_equal(post_send(b, IBV_WR_SEND, 3, src->addr, 64, src->lkey,
				   IBV_SEND_SIGNALED), 0);
	expect_send_ok(bcq, 3, IBV_WC_SEND);
	expect_wc(acq, &wc);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_true(check_pattern(q, 64, 31));
	sge = (struct ibv_sge){.addr = (uintptr_t)q, .length = 64, .lkey = implicit->lkey};
	assert_int_equal(ibv_advise_mr(A.pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, 0, &sge, 1), 0);
	/* Not implicit without ON_DEMAND. */
	assert_null(ibv_reg_mr(A.pd, NULL, SIZE_MAX, LW));
	assert_int_equal(ibv_dereg_mr(implicit), 0);
	assert_int_equal(ibv_dereg_mr(odp), 0);
	assert_int_equal(munmap(p, len), 0);
}

static int create_cq_errno(uint64_t wc_flags, uint32_t comp_mask, uint32_t flags)
{
	struct ibv_cq_init_attr_ex attr = {
		.cqe = 16,
		.wc_flags = wc_flags,
		.comp_mask = comp_mask,
		.flags = flags,
	};
	struct ibv_cq_ex *cq;

	errno = 0;
	cq = ibv_create_cq_ex(A.ctx, &attr);
	if (cq == NULL)
		return errno;
	assert_int_equal(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)), 0);
	return 0;
}

static void create_cq_ex_unsupported_is_eopnotsupp(void **state)
{
	static const uint64_t not_offered[] = {IBV_WC_EX_WITH_CVLAN, IBV_WC_EX_WITH_FLOW_TAG};

	(void)state;
	assert_int_equal(create_cq_errno(IBV_WC_STANDARD_FLAGS | IBV_WC_EX_WITH_TM_INFO |
					 IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |
					 IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK, 0, 0), 0);
	for (size_t i = 0; i < sizeof(not_offered) / sizeof(not_offered[0]); i++)
		assert_int_equal(create_cq_errno(IBV_WC_EX_WITH_BYTE_LEN | not_offered[i], 0, 0),
				 EOPNOTSUPP);
	assert_int_equal(create_cq_errno(0, IBV_CQ_INIT_ATTR_MASK_FLAGS,
					 IBV_CREATE_CQ_ATTR_SINGLE_THREADED), 0);
	assert_int_equal(create_cq_errno(0, IBV_CQ_INIT_ATTR_MASK_FLAGS,
					 IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN), EOPNOTSUPP);
	/* Undefined bits stay EINVAL. */
	assert_int_equal(create_cq_errno(1ull << 40, 0, 0), EINVAL);
	assert_int_equal(create_cq_errno(0, IBV_CQ_INIT_ATTR_MASK_FLAGS, 1u << 7), EINVAL);
	assert_int_equal(create_cq_errno(0, 1u << 9, 0), EINVAL);
}

/* ibv_resize_cq(3): larger and smaller, the unpolled completions kept in order; not
 * below what it holds. */
static void resize_cq_keeps_its_completions(void **state)
{
	struct ibv_cq *acq = new_cq(&A, 16, NULL, NULL), *bcq = new_cq(&B, 2, NULL, NULL);
	struct ibv_qp *a = new_qp(&A, IBV_QPT_RC, acq, acq, NULL, 16, 16);
	struct ibv_qp *b = new_qp(&B, IBV_QPT_RC, bcq, bcq, NULL, 16, 16);
	struct ibv_mr *smr = new_mr(&A, 256, LW), *rmr = new_mr(&B, 4096, LW);
	struct ibv_device_attr da;
	struct ibv_wc wc[8];
	int i;

	(void)state;
	assert_int_equal(ibv_query_device(B.ctx, &da), 0);
	assert_int_equal(bcq->cqe, 2);
	connect_rc(a, b, &conn_default);
	assert_int_equal(ibv_resize_cq(bcq, 7), 0);
	assert_int_equal(bcq->cqe, 8);
	for (i = 0; i < 5; i++) {
		assert_int_equal(post_recv(b, 100 + i, (char *)rmr->addr + 256 * i, 256, rmr->lkey), 0);
		assert_int_equal(post_send(a, IBV_WR_SEND, i, smr->addr, 16, smr->lkey,
					   IBV_SEND_SIGNALED), 0);
	}
	/* Acknowledged, so all five receive completions are in bcq, unpolled. */
	assert_int_equal(poll_wc(acq, wc, 5), 5);
	errno = 0;
	assert_int_equal(ibv_resize_cq(bcq, 4), EINVAL);
	assert_int_equal(bcq->cqe, 8);
	assert_int_equal(ibv_resize_cq(bcq, 0), EINVAL);
	assert_int_equal(ibv_resize_cq(bcq, da.max_cqe + 1), EINVAL);
	assert_int_equal(ibv_resize_cq(bcq, 64), 0);
	assert_int_equal(bcq->cqe, 64);
	assert_int_equal(poll_wc(bcq, wc, 2), 2);
	assert_int_equal(ibv_resize_cq(bcq, 3), 0);
	assert_int_equal(bcq->cqe, 4);
	assert_int_equal(poll_wc(bcq, wc + 2, 3), 3);
	for (i = 0; i < 5; i++) {
		assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
		assert_int_equal(wc[i].wr_id, 100 + i);
	}
	expect_quiet(bcq);
	/* The resized ring takes new completions. */
	assert_int_equal(post_recv(b, 200, rmr->addr, 256, rmr->lkey), 0);
	assert_int_equal(post_send(a, IBV_WR_SEND, 9, smr->addr, 16, smr->lkey, IBV_SEND_SIGNALED),
			 0);
	expect_wc(bcq, wc);
	assert_int_equal(wc[0].wr_id, 200);
	expect_send_ok(acq, 9, IBV_WC_SEND);
}

static void to_reset(struct ibv_qp *qp)
{
	struct ibv_qp_attr attr = {.qp_state = IBV_QPS_RESET};

	assert_int_equal(ibv_modify_qp(qp, &attr, IBV_QP_STATE), 0);
	assert_int_equal(qp_state_of(qp), IBV_QPS_RESET);
}

/* Completions a QP's CQ holds for it, unpolled, are gone once the QP is RESET; those
 * of another QP on the same CQ stay. */
static void reset_takes_the_qps_completions_out_of_its_cqs(void **state)
{
	struct ibv_cq *acq = new_cq(&A, 16, NULL, NULL), *bcq = new_cq(&B, 16, NULL, NULL);
	struct ibv_qp *a1 = new_qp(&A, IBV_QPT_RC, acq, acq, NULL, 8, 8);
	struct ibv_qp *a2 = new_qp(&A, IBV_QPT_RC, acq, acq, NULL, 8, 8);
	struct ibv_qp *b1 = new_qp(&B, IBV_QPT_RC, bcq, bcq, NULL, 8, 8);
	struct ibv_qp *b2 = new_qp(&B, IBV_QPT_RC, bcq, bcq, NULL, 8, 8);
	struct ibv_mr *smr = new_mr(&A, 256, LW), *rmr = new_mr(&B, 256, LW);
	struct ibv_wc wc[4];

	(void)state;
	connect_rc(a1, b1, &conn_default);
	connect_rc(a2, b2, &conn_default);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(post_recv(i ? b2 : b1, 10 + i, (char *)rmr->addr + 128 * i, 128,
					   rmr->lkey), 0);
		assert_int_equal(post_send(i ? a2 : a1, IBV_WR_SEND, 20 + i, smr->addr, 64,
					   smr->lkey, IBV_SEND_SIGNALED), 0);
	}
	/* An RC SEND completes once acknowledged, which the responder does after writing
	 * its receive completion: once both sends are in, bcq holds both receives. */
	assert_int_equal(poll_wc(acq, wc, 2), 2);
	assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
	assert_int_equal(wc[1].status, IBV_WC_SUCCESS);
	to_reset(b1);
	assert_int_equal(poll_wc(bcq, wc, 1), 1);
	assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
	assert_int_equal(wc[0].qp_num, b2->qp_num);
	assert_int_equal(wc[0].wr_id, 11);
	expect_quiet(bcq);

	/* The send side: a1's completion, in acq and not polled, is gone with the reset;
	 * the channel's event says it was written. */
	{
		struct ibv_comp_channel *ch = new_channel(&A);
		struct ibv_cq *scq = new_cq(&A, 16, ch, NULL), *ev_cq = NULL;
		struct ibv_qp *a3 = new_qp(&A, IBV_QPT_RC, scq, acq, NULL, 8, 8);
		struct ibv_qp *b3 = new_qp(&B, IBV_QPT_RC, bcq, bcq, NULL, 8, 8);
		struct pollfd pfd = {.fd = ch->fd, .events = POLLIN};
		void *ev_ctx = NULL;

		connect_rc(a3, b3, &conn_default);
		assert_int_equal(ibv_req_notify_cq(scq, 0), 0);
		assert_int_equal(post_recv(b3, 12, rmr->addr, 128, rmr->lkey), 0);
		assert_int_equal(post_send(a3, IBV_WR_SEND, 22, smr->addr, 64, smr->lkey,
					   IBV_SEND_SIGNALED), 0);
		assert_int_equal(poll(&pfd, 1, (int)WAIT_MS), 1);
		assert_int_equal(ibv_get_cq_event(ch, &ev_cq, &ev_ctx), 0);
		assert_ptr_equal(ev_cq, scq);
		ibv_ack_cq_events(scq, 1);
		to_reset(a3);
		expect_quiet(scq);
		/* The other side of the connection keeps what it completed. */
		expect_wc(bcq, wc);
		assert_int_equal(wc[0].qp_num, b3->qp_num);
		assert_int_equal(wc[0].wr_id, 12);
	}
}

/* The DPDK port under a device: its dev_path is "dpdk-port-<id>". */
static uint16_t ethdev_port_of(const struct side *s)
{
	unsigned int id;

	assert_int_equal(sscanf(s->dev->dev_path, "dpdk-port-%u", &id), 1);
	return (uint16_t)id;
}

static void expect_port_event(struct ibv_context *ctx, enum ibv_event_type type)
{
	struct ibv_async_event ev;

	assert_true(wait_async_event(ctx, &ev, WAIT_MS));
	assert_int_equal(ev.event_type, type);
	assert_int_equal(ev.element.port_num, 1);
	ibv_ack_async_event(&ev);
}

static bool async_pending(struct ibv_context *ctx)
{
	struct pollfd pfd = {.fd = ctx->async_fd, .events = POLLIN};

	return poll(&pfd, 1, 0) == 1;
}

/* Every context open on the device hears of a link change, once; the other device,
 * whose link did not change, hears nothing. */
static void link_changes_are_port_events(void **state)
{
	uint16_t port = ethdev_port_of(&A);
	struct ibv_context *second = ibv_open_device(A.dev);
	struct ibv_port_attr pa;
	uint64_t end;

	(void)state;
	assert_non_null(second);
	assert_int_equal(rte_eth_dev_set_link_down(port), 0);
	expect_port_event(A.ctx, IBV_EVENT_PORT_ERR);
	expect_port_event(second, IBV_EVENT_PORT_ERR);
	assert_int_equal(ibv_query_port(A.ctx, 1, &pa), 0);
	assert_int_equal(pa.state, IBV_PORT_DOWN);
	assert_int_equal(rte_eth_dev_set_link_up(port), 0);
	expect_port_event(A.ctx, IBV_EVENT_PORT_ACTIVE);
	expect_port_event(second, IBV_EVENT_PORT_ACTIVE);
	assert_int_equal(ibv_query_port(A.ctx, 1, &pa), 0);
	assert_int_equal(pa.state, IBV_PORT_ACTIVE);
	/* No second event for one change, and none for B. */
	end = now_ms() + QUIET_MS;
	while (now_ms() < end)
		progress();
	assert_false(async_pending(A.ctx));
	assert_false(async_pending(second));
	assert_false(async_pending(B.ctx));
	assert_int_equal(ibv_close_device(second), 0);
}

int run_compat_tests(void)
{
	const struct CMUnitTest tests[] = {
		VT(vendor_id_is_no_makers_oui),
		VT(cmd_fd_is_inert_and_import_refused),
		VT(create_qp_ex_unsupported_is_eopnotsupp),
		VT(inline_room_rounded_up_and_reported),
		VT(qp_ex_batch_posts_in_order),
		VT(qp_ex_atomics),
		VT(cap_flags_are_true),
		VT(reg_mr_unsupported_access_is_eopnotsupp),
		VT(on_demand_regions),
		VT(create_cq_ex_unsupported_is_eopnotsupp),
		VT(resize_cq_keeps_its_completions),
		VT(reset_takes_the_qps_completions_out_of_its_cqs),
		VT(link_changes_are_port_events),
	};

	return cmocka_run_group_tests_name("compat", tests, NULL, NULL);
}
