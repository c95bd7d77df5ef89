/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * XRC through <infiniband/verbs.h> (doc/guides/srq.md §7): XRC domains opened and
 * closed (ibv_open_xrcd(3)), XRC SRQs and their numbers (ibv_get_srq_num(3)), initiator
 * and target QPs, and handles opened on a target (ibv_open_qp(3)) that keep it after
 * its creator's is destroyed; messages from one initiator into the SRQs a target's domain holds,
 * each completing on its SRQ's CQ; WRITE, READ and atomics through a target, checked
 * against the PD of the SRQ the request names; the errors of a request that names an
 * SRQ of no domain or another one. With DPV_FAULTS set (meson runs it so), the same
 * messages over a link that loses, duplicates and reorders frames arrive once each.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "verbs_test.h"

#define LW IBV_ACCESS_LOCAL_WRITE
#define RWA (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
	     IBV_ACCESS_REMOTE_ATOMIC)

/* An initiator on A connected to a target on B whose domain holds two XRC SRQs, each
 * with its own CQ. */
struct xrc_link {
	struct ibv_cq *acq, *cq1, *cq2;
	struct ibv_xrcd *xrcd;
	struct ibv_srq *srq1, *srq2;
	uint32_t srqn1, srqn2;
	struct ibv_qp *ini, *tgt;
};

static const struct conn_opts *xrc_conn(void)
{
	static struct conn_opts o;

	o = conn_default;
	o.timeout = 12; /* 16.8 ms: the lossy runs recover sooner */
	o.access |= IBV_ACCESS_REMOTE_ATOMIC;
	return &o;
}

static void xrc_link(struct xrc_link *l)
{
	l->acq = new_cq(&A, 256, NULL, NULL);
	l->cq1 = new_cq(&B, 256, NULL, NULL);
	l->cq2 = new_cq(&B, 256, NULL, NULL);
	l->xrcd = new_xrcd(&B);
	l->srq1 = new_xrc_srq(&B, l->xrcd, l->cq1, 64);
	l->srq2 = new_xrc_srq(&B, l->xrcd, l->cq2, 64);
	assert_int_equal(ibv_get_srq_num(l->srq1, &l->srqn1), 0);
	assert_int_equal(ibv_get_srq_num(l->srq2, &l->srqn2), 0);
	assert_int_not_equal(l->srqn1, l->srqn2);
	l->ini = new_xrc_ini(&A, l->acq, 64);
	l->tgt = new_xrc_tgt(&B, l->xrcd);
	connect_rc(l->ini, l->tgt, xrc_conn());
}

/* One signaled XRC WR of @p op for SRQ @p srqn: a SEND (with immediate 0x1234) of
 * @p len bytes at @p addr, or a WRITE, READ or FETCH_ADD (of 5) at @p raddr. */
static int xrc_post(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id, uint32_t srqn,
		    const void *addr, uint32_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sge = {.addr = (uintptr_t)addr, .length = len, .lkey = lkey};
	struct ibv_send_wr wr = {
		.wr_id = wr_id,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
		.imm_data = htobe32(0x1234u),
	}, *bad = NULL;

	wr.qp_type.xrc.remote_srqn = srqn;
	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = rkey;
		wr.wr.atomic.compare_add = 5;
	} else {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rkey;
	}
	return ibv_post_send(qp, &wr, &bad);
}

static int xrc_send(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id, uint32_t srqn,
		    const void *addr, uint32_t len, uint32_t lkey)
{
	return xrc_post(qp, op, wr_id, srqn, addr, len, lkey, 0, 0);
}

/* ---- what the device reports, domains, SRQs and QPs ---- */

static void device_reports_xrc(void **state)
{
	struct ibv_device_attr_ex attr;

	(void)state;
	assert_int_equal(ibv_query_device_ex(A.ctx, NULL, &attr), 0);
	assert_true(attr.orig_attr.device_cap_flags & IBV_DEVICE_XRC);
	assert_true(attr.xrc_odp_caps & IBV_ODP_SUPPORT_SRQ_RECV);
}

static struct ibv_xrcd *open_xrcd(int fd, int oflags, uint32_t comp_mask, int *err)
{
	struct ibv_xrcd_init_attr attr = {.comp_mask = comp_mask, .fd = fd, .oflags = oflags};
	struct ibv_xrcd *x;

	errno = 0;
	x = ibv_open_xrcd(B.ctx, &attr);
	*err = x == NULL ? errno : 0;
	return x;
}

static void xrcd_open_and_close(void **state)
{
	const uint32_t both = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
	char path[] = "/tmp/dpv-xrcd-XXXXXX";
	struct ibv_xrcd *x1, *x2;
	struct ibv_srq *srq;
	struct ibv_cq *cq;
	int fd, err;

	(void)state;
	assert_null(open_xrcd(-1, 0, both, &err));
	assert_int_equal(err, EINVAL);
	assert_null(open_xrcd(-1, O_CREAT, IBV_XRCD_INIT_ATTR_FD, &err));
	assert_int_equal(err, EINVAL);
	assert_null(open_xrcd(-1, O_CREAT, both | IBV_XRCD_INIT_ATTR_RESERVED, &err));
	assert_int_equal(err, EOPNOTSUPP);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	/* Without O_CREAT a file opens only the domain it already has. */
	assert_null(open_xrcd(fd, 0, both, &err));
	assert_int_equal(err, EINVAL);
	x1 = open_xrcd(fd, O_CREAT, both, &err);
	assert_non_null(x1);
	x2 = open_xrcd(fd, 0, both, &err);
	assert_ptr_equal(x1, x2);
	assert_null(open_xrcd(fd, O_CREAT | O_EXCL, both, &err));
	assert_int_equal(err, EEXIST);
	/* The last close fails while an SRQ is in the domain. */
	cq = new_cq(&B, 16, NULL, NULL);
	srq = new_xrc_srq(&B, x1, cq, 4);
	assert_int_equal(ibv_close_xrcd(x2), 0);
	assert_int_equal(ibv_close_xrcd(x1), EBUSY);
	(void)srq;
	teardown_objects(NULL);
	assert_int_equal(ibv_close_xrcd(x1), 0);
	close(fd);
}

static void xrc_srq_and_qp_refusals(void **state)
{
	struct ibv_cq *cq = new_cq(&B, 16, NULL, NULL);
	struct ibv_xrcd *x = new_xrcd(&B);
	struct ibv_srq_init_attr_ex sa = {
		.attr = {.max_wr = 4, .max_sge = 1},
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_XRCD,
		.srq_type = IBV_SRQT_XRC,
		.pd = B.pd,
		.xrcd = x,
	};
	struct ibv_qp_init_attr_ex qa = {
		.qp_type = IBV_QPT_XRC_RECV,
		.comp_mask = 0,
	};
	struct ibv_recv_wr rwr = {.wr_id = 1}, *rbad;
	struct ibv_srq *basic = new_srq(&B, 4, 1);
	struct ibv_qp *ini = new_xrc_ini(&B, cq, 4), *tgt = new_xrc_tgt(&B, x);
	uint32_t n;

	(void)state;
	/* An XRC SRQ needs its CQ and its domain. */
	errno = 0;
	assert_null(ibv_create_srq_ex(B.ctx, &sa));
	assert_int_equal(errno, EINVAL);
	sa.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_CQ;
	sa.cq = cq;
	errno = 0;
	assert_null(ibv_create_srq_ex(B.ctx, &sa));
	assert_int_equal(errno, EINVAL);
	/* Only an XRC SRQ has a number. */
	assert_int_equal(ibv_get_srq_num(basic, &n), EINVAL);
	/* A target needs its domain. */
	errno = 0;
	assert_null(ibv_create_qp_ex(B.ctx, &qa));
	assert_int_equal(errno, EINVAL);
	/* Neither half has a receive queue of its own; a target has no send queue. */
	assert_int_equal(ibv_post_recv(ini, &rwr, &rbad), EINVAL);
	assert_int_equal(ibv_post_recv(tgt, &rwr, &rbad), EINVAL);
	assert_null(tgt->send_cq);
	assert_null(tgt->pd);
}

static struct ibv_qp *open_tgt(struct ibv_xrcd *x, uint32_t num, enum ibv_qp_type type,
			       int *err)
{
	struct ibv_qp_open_attr attr = {
		.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD | IBV_QP_OPEN_ATTR_TYPE |
			     IBV_QP_OPEN_ATTR_CONTEXT,
		.qp_num = num,
		.xrcd = x,
		.qp_context = &B,
		.qp_type = type,
	};
	struct ibv_qp *qp;

	errno = 0;
	qp = ibv_open_qp(B.ctx, &attr);
	*err = qp == NULL ? errno : 0;
	return qp;
}

static void an_opened_target_outlives_its_creators_handle(void **state)
{
	struct ibv_mr *src = new_mr(&A, 64, LW), *dst = new_mr(&B, 64, LW);
	struct ibv_cq *acq = new_cq(&A, 16, NULL, NULL), *bcq = new_cq(&B, 16, NULL, NULL);
	struct ibv_xrcd *x = new_xrcd(&B), *other = new_xrcd(&B);
	struct ibv_srq *srq = new_xrc_srq(&B, x, bcq, 4);
	struct ibv_qp *ini = new_xrc_ini(&A, acq, 4), *tgt, *h;
	struct ibv_qp_init_attr_ex ta = {
		.qp_type = IBV_QPT_XRC_RECV,
		.comp_mask = IBV_QP_INIT_ATTR_XRCD,
		.xrcd = x,
	};
	struct ibv_async_event ev;
	struct ibv_wc wc;
	uint32_t n;
	int err;

	(void)state;
	tgt = ibv_create_qp_ex(B.ctx, &ta);
	assert_non_null(tgt);
	/* No such QP in the domain (another domain's number, no number, not a target). */
	assert_null(open_tgt(other, tgt->qp_num, IBV_QPT_XRC_RECV, &err));
	assert_int_equal(err, EINVAL);
	assert_null(open_tgt(x, tgt->qp_num + 1, IBV_QPT_XRC_RECV, &err));
	assert_int_equal(err, EINVAL);
	assert_null(open_tgt(x, tgt->qp_num, IBV_QPT_RC, &err));
	assert_int_equal(err, EINVAL);
	h = open_tgt(x, tgt->qp_num, IBV_QPT_XRC_RECV, &err);
	assert_non_null(h);
	assert_int_equal(h->qp_num, tgt->qp_num);
	assert_ptr_equal(h->qp_context, &B);
	/* The creator's handle goes; the QP stays for the opened one, which runs it. */
	assert_int_equal(ibv_destroy_qp(tgt), 0);
	connect_rc(ini, h, xrc_conn());
	assert_int_equal(ibv_get_srq_num(srq, &n), 0);
	assert_int_equal(post_srq_recv(srq, 7, dst->addr, 64, dst->lkey), 0);
	memcpy(src->addr, "opened", 6);
	assert_int_equal(xrc_send(ini, IBV_WR_SEND, 1, n, src->addr, 6, src->lkey), 0);
	expect_send_ok(acq, 1, IBV_WC_SEND);
	expect_wc(bcq, &wc);
	assert_int_equal(wc.wr_id, 7);
	assert_int_equal(wc.qp_num, h->qp_num);
	assert_memory_equal(dst->addr, "opened", 6);
	/* Its asynchronous events now go to the opened handle. */
	assert_int_equal(xrc_send(ini, IBV_WR_SEND, 2, 0xabcde, src->addr, 6, src->lkey), 0);
	expect_wc(acq, &wc);
	assert_int_equal(wc.status, IBV_WC_REM_ACCESS_ERR);
	assert_true(wait_async_event(B.ctx, &ev, WAIT_MS));
	assert_int_equal(ev.event_type, IBV_EVENT_QP_ACCESS_ERR);
	assert_ptr_equal(ev.element.qp, h);
	ibv_ack_async_event(&ev);
	/* The domain is in use while the QP is. */
	assert_int_equal(ibv_close_xrcd(x), EBUSY);
	assert_int_equal(ibv_destroy_qp(h), 0);
	/* Gone with its last handle. */
	assert_null(open_tgt(x, n, IBV_QPT_XRC_RECV, &err));
}

/* ---- messages ---- */

static void sends_land_in_the_srq_they_name(void **state)
{
	struct ibv_mr *src = new_mr(&A, 8192, LW), *dst = new_mr(&B, 16384, LW);
	uint8_t *s = src->addr, *d = dst->addr;
	struct ibv_wc wc;
	struct xrc_link l;
	int i;

	(void)state;
	xrc_link(&l);
	for (i = 0; i < 8192; i++)
		s[i] = (uint8_t)(i * 13 + 1);
	for (i = 0; i < 4; i++) {
		assert_int_equal(post_srq_recv(l.srq1, 100 + i, d + i * 4096, 4096, dst->lkey), 0);
	}
	assert_int_equal(post_srq_recv(l.srq2, 200, d + 4 * 4096 - 1, 1, dst->lkey), 0);
	/* Into SRQ 2 first, then 3 KiB (three packets) and 8 bytes into SRQ 1. */
	assert_int_equal(xrc_send(l.ini, IBV_WR_SEND, 1, l.srqn1, s, 3000, src->lkey), 0);
	assert_int_equal(xrc_send(l.ini, IBV_WR_SEND_WITH_IMM, 2, l.srqn1, s + 100, 8,
				  src->lkey), 0);
	expect_send_ok(l.acq, 1, IBV_WC_SEND);
	expect_send_ok(l.acq, 2, IBV_WC_SEND);
	expect_wc(l.cq1, &wc);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 100);
	assert_int_equal(wc.byte_len, 3000);
	assert_int_equal(wc.qp_num, l.tgt->qp_num);
	assert_memory_equal(d, s, 3000);
	expect_wc(l.cq1, &wc);
	assert_int_equal(wc.wr_id, 101);
	assert_int_equal(wc.byte_len, 8);
	assert_true(wc.wc_flags & IBV_WC_WITH_IMM);
	assert_int_equal(be32toh(wc.imm_data), 0x1234u);
	assert_memory_equal(d + 4096, s + 100, 8);
	expect_quiet(l.cq2);
	assert_int_equal(xrc_send(l.ini, IBV_WR_SEND, 3, l.srqn2, s + 7, 1, src->lkey), 0);
	expect_send_ok(l.acq, 3, IBV_WC_SEND);
	expect_wc(l.cq2, &wc);
	assert_int_equal(wc.wr_id, 200);
	assert_int_equal(wc.byte_len, 1);
	assert_int_equal(d[4 * 4096 - 1], s[7]);
	expect_quiet(l.cq1);
}

static void write_read_and_atomic_through_a_target(void **state)
{
	struct ibv_mr *src = new_mr(&A, 4096, LW), *mem = new_mr(&B, 4096, RWA);
	uint8_t *s = src->addr, *m = mem->addr;
	uint64_t *word = (uint64_t *)(m + 2048);
	struct xrc_link l;
	int i;

	(void)state;
	xrc_link(&l);
	for (i = 0; i < 2048; i++)
		s[i] = (uint8_t)(i * 7 + 3);
	*word = 40;
	assert_int_equal(xrc_post(l.ini, IBV_WR_RDMA_WRITE, 1, l.srqn1, s, 2048, src->lkey,
				  (uintptr_t)m, mem->rkey), 0);
	expect_send_ok(l.acq, 1, IBV_WC_RDMA_WRITE);
	assert_memory_equal(m, s, 2048);
	memset(s + 2048, 0, 2048);
	assert_int_equal(xrc_post(l.ini, IBV_WR_RDMA_READ, 2, l.srqn2, s + 2048, 2048, src->lkey,
				  (uintptr_t)m, mem->rkey), 0);
	expect_send_ok(l.acq, 2, IBV_WC_RDMA_READ);
	assert_memory_equal(s + 2048, m, 2048);
	assert_int_equal(xrc_post(l.ini, IBV_WR_ATOMIC_FETCH_AND_ADD, 3, l.srqn1, s, 8,
				  src->lkey, (uintptr_t)word, mem->rkey), 0);
	expect_send_ok(l.acq, 3, IBV_WC_FETCH_ADD);
	assert_true(*(uint64_t *)s == 40);
	assert_true(*word == 45);
	/* No receive was taken. */
	expect_quiet(l.cq1);
	expect_quiet(l.cq2);
}

/* A request naming @p srqn ends the connection with a remote access error (an XRC
 * domain violation), and the target raises QP_ACCESS_ERR. */
static void expect_domain_violation(struct xrc_link *l, uint32_t srqn)
{
	struct ibv_mr *src = new_mr(&A, 64, LW);
	struct ibv_async_event ev;
	struct ibv_wc wc;

	assert_int_equal(xrc_send(l->ini, IBV_WR_SEND, 9, srqn, src->addr, 8, src->lkey), 0);
	expect_wc(l->acq, &wc);
	assert_int_equal(wc.wr_id, 9);
	assert_int_equal(wc.status, IBV_WC_REM_ACCESS_ERR);
	assert_true(wait_async_event(B.ctx, &ev, WAIT_MS));
	assert_int_equal(ev.event_type, IBV_EVENT_QP_ACCESS_ERR);
	assert_ptr_equal(ev.element.qp, l->tgt);
	ibv_ack_async_event(&ev);
	assert_int_equal(qp_state_of(l->tgt), IBV_QPS_ERR);
}

static void a_request_for_no_srq_is_a_remote_access_error(void **state)
{
	struct xrc_link l;

	(void)state;
	xrc_link(&l);
	expect_domain_violation(&l, 0xabcde); /* a number no SRQ has */
}

static void a_request_for_another_domains_srq_is_a_remote_access_error(void **state)
{
	struct ibv_cq *cq = new_cq(&B, 16, NULL, NULL);
	struct ibv_xrcd *other = new_xrcd(&B);
	struct ibv_srq *srq = new_xrc_srq(&B, other, cq, 4);
	struct xrc_link l;
	uint32_t n;

	(void)state;
	xrc_link(&l);
	assert_int_equal(ibv_get_srq_num(srq, &n), 0);
	assert_int_equal(post_srq_recv(srq, 1, new_buf(64), 64, 0), 0);
	expect_domain_violation(&l, n);
	expect_quiet(cq);
}

/* An SRQ destroyed after a target last received into it: its number names nothing
 * any more, and the target answers a request for it as for a number never given. */
static void a_destroyed_srqs_number_names_nothing(void **state)
{
	struct ibv_mr *src = new_mr(&A, 64, LW), *dst = new_mr(&B, 64, LW);
	struct ibv_srq_init_attr_ex sa = {
		.attr = {.max_wr = 4, .max_sge = 1},
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
			     IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ,
		.srq_type = IBV_SRQT_XRC,
		.pd = B.pd,
	};
	struct ibv_srq *srq;
	struct xrc_link l;
	struct ibv_wc wc;
	uint32_t n;

	(void)state;
	xrc_link(&l);
	sa.xrcd = l.xrcd;
	sa.cq = l.cq2;
	srq = ibv_create_srq_ex(B.ctx, &sa);
	assert_non_null(srq);
	assert_int_equal(ibv_get_srq_num(srq, &n), 0);
	assert_int_equal(post_srq_recv(srq, 5, dst->addr, 64, dst->lkey), 0);
	assert_int_equal(xrc_send(l.ini, IBV_WR_SEND, 1, n, src->addr, 8, src->lkey), 0);
	expect_send_ok(l.acq, 1, IBV_WC_SEND);
	expect_wc(l.cq2, &wc);
	assert_int_equal(wc.wr_id, 5);
	assert_int_equal(ibv_destroy_srq(srq), 0);
	expect_domain_violation(&l, n);
}

/* Over the faults port: every message lands once, in its SRQ, in order. */
static void messages_over_a_lossy_link_land_once(void **state)
{
	struct ibv_mr *src = new_mr(&A, 4096, LW), *dst = new_mr(&B, 64 * 2048, LW);
	uint8_t *s = src->addr, *d = dst->addr;
	struct ibv_wc wc;
	struct xrc_link l;
	int i, done = 0;

	(void)state;
	xrc_link(&l);
	for (i = 0; i < 4096; i++)
		s[i] = (uint8_t)(i * 5 + 11);
	for (i = 0; i < 64; i++)
		assert_int_equal(post_srq_recv(i % 2 ? l.srq2 : l.srq1, (uint64_t)i,
					       d + i * 2048, 2048, dst->lkey), 0);
	for (i = 0; i < 64; i++)
		assert_int_equal(xrc_send(l.ini, IBV_WR_SEND, (uint64_t)i, i % 2 ? l.srqn2 : l.srqn1,
					  s + i, 1500, src->lkey), 0);
	for (i = 0; i < 64; i++)
		expect_send_ok(l.acq, (uint64_t)i, IBV_WC_SEND);
	for (i = 0; i < 64; i++) {
		expect_wc(i % 2 ? l.cq2 : l.cq1, &wc);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.wr_id, (uint64_t)i);
		assert_int_equal(wc.byte_len, 1500);
		assert_memory_equal(d + i * 2048, s + i, 1500);
		done++;
	}
	assert_int_equal(done, 64);
	expect_quiet(l.cq1);
	expect_quiet(l.cq2);
	printf("xrc over faults: %" PRIu64 " retransmitted, %" PRIu64 " duplicates at the "
	       "target\n", qp_xstat(l.ini, "qp.retrans_packets"),
	       qp_xstat(l.tgt, "qp.dup_requests"));
	/* The link did lose frames: the run recovered, it was not spared. */
	assert_true(dev_xstat(A.ctx, "faults.tx.dropped") +
		    dev_xstat(B.ctx, "faults.tx.dropped") > 0);
}

int main(void)
{
	const struct CMUnitTest clean[] = {
		VT(device_reports_xrc),
		VT(xrcd_open_and_close),
		VT(xrc_srq_and_qp_refusals),
		VT(an_opened_target_outlives_its_creators_handle),
		VT(sends_land_in_the_srq_they_name),
		VT(write_read_and_atomic_through_a_target),
		VT(a_request_for_no_srq_is_a_remote_access_error),
		VT(a_request_for_another_domains_srq_is_a_remote_access_error),
		VT(a_destroyed_srqs_number_names_nothing),
	};
	const struct CMUnitTest lossy[] = {
		VT(messages_over_a_lossy_link_land_once),
	};

	sides_env_defaults("0");
	return faults_on() ? SIDES_RUN_GROUP("xrc_faults", lossy) : SIDES_RUN_GROUP("xrc", clean);
}
