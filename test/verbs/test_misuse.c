/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Careless callers: what a program that misuses verbs gets, as the man pages say it
 * must: a CQ too small for its completions overruns loudly (IBV_EVENT_CQ_ERR, its QPs
 * in ERR with IBV_EVENT_QP_FATAL), a CQ reports at least the entries asked for, a
 * destroy of an object still in use is EBUSY, an access violation at the responder
 * raises IBV_EVENT_QP_ACCESS_ERR there and an invalid request IBV_EVENT_QP_REQ_ERR, and
 * a NULL scatter list is EINVAL at post time.
 */
#include <errno.h>
#include <string.h>

#include "dpv_verbs.h"
#include "test_verbs.h"

#define LW IBV_ACCESS_LOCAL_WRITE

/* Wait up to @p ms for an async event of @p type about @p obj (a CQ, QP or SRQ);
 * events about other objects (left by earlier tests) are taken and skipped. */
static bool wait_event_of(struct ibv_context *ctx, enum ibv_event_type type, const void *obj,
			  unsigned int ms)
{
	uint64_t end = now_ms() + ms;
	struct ibv_async_event ev;
	bool found;

	for (;;) {
		uint64_t now = now_ms();

		if (now > end || !wait_async_event(ctx, &ev, (unsigned int)(end - now)))
			return false;
		found = ev.event_type == type &&
			(type == IBV_EVENT_CQ_ERR ? (const void *)ev.element.cq
			 : type == IBV_EVENT_SRQ_ERR ? (const void *)ev.element.srq
						     : (const void *)ev.element.qp) == obj;
		ibv_ack_async_event(&ev);
		if (found)
			return true;
	}
}

static int post_write_key(struct ibv_qp *qp, uint64_t wr_id, struct ibv_mr *smr,
			  struct ibv_mr *rmr, uint32_t rkey)
{
	struct ibv_sge sge = {.addr = (uintptr_t)smr->addr, .length = 64, .lkey = smr->lkey};
	struct ibv_send_wr wr = {
		.wr_id = wr_id,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
		.wr = {.rdma = {.remote_addr = (uintptr_t)rmr->addr, .rkey = rkey}},
	};
	struct ibv_send_wr *bad = NULL;

	return ibv_post_send(qp, &wr, &bad);
}

static int post_write(struct ibv_qp *qp, uint64_t wr_id, struct ibv_mr *smr, struct ibv_mr *rmr)
{
	return post_write_key(qp, wr_id, smr, rmr, rmr->rkey);
}

/*
 * 20 signaled WRITEs into a CQ of 4 entries, nobody polling: the 4 that fit are
 * there, the first one that did not fit raises CQ_ERR (once), the QP goes to ERR with
 * QP_FATAL, the overflows are counted, and a WR posted after flushes once polled room
 * lets its completion in.
 */
static void misuse_cq_overrun_cq_err_and_qp_fatal(void **state)
{
	struct ibv_cq *cq, *bcq;
	struct ibv_qp *qa, *qb;
	struct ibv_mr *smr, *rmr;
	struct ibv_wc wc[8];
	uint64_t before;
	int n;

	(void)state;
	cq = new_cq(&A, 4, NULL, NULL);
	assert_int_equal(cq->cqe, 4);
	bcq = new_cq(&B, 16, NULL, NULL);
	qa = new_qp(&A, IBV_QPT_RC, cq, cq, NULL, 32, 4);
	qb = new_qp(&B, IBV_QPT_RC, bcq, bcq, NULL, 32, 4);
	connect_rc(qa, qb, &conn_default);
	smr = new_mr(&A, 64, LW);
	rmr = new_mr(&B, 64, LW | IBV_ACCESS_REMOTE_WRITE);
	before = dev_xstat(A.ctx, "xport.cq_overflows");
	for (int i = 0; i < 20; i++)
		assert_int_equal(post_write(qa, (uint64_t)i, smr, rmr), 0);
	assert_true(wait_event_of(A.ctx, IBV_EVENT_CQ_ERR, cq, WAIT_MS));
	assert_true(wait_event_of(A.ctx, IBV_EVENT_QP_FATAL, qa, WAIT_MS));
	assert_int_equal(qp_state_of(qa), IBV_QPS_ERR);
	/* 16 completions were lost (the 4th onwards of 20, successes or flushes): each
	 * counted, none silent. */
	assert_int_equal(dev_xstat(A.ctx, "xport.cq_overflows") - before, 16);
	n = poll_wc(cq, wc, 4);
	assert_int_equal(n, 4);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
		assert_int_equal(wc[i].wr_id, (uint64_t)i);
	}
	expect_quiet(cq);
	/* A WR posted in ERR flushes into the room polling made. */
	assert_int_equal(post_write(qa, 100, smr, rmr), 0);
	expect_wc(cq, wc);
	assert_int_equal(wc[0].status, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(wc[0].wr_id, 100);
	/* Overrunning it again is counted, but CQ_ERR came once. */
	for (int i = 0; i < 6; i++)
		assert_int_equal(post_write(qa, 200 + (uint64_t)i, smr, rmr), 0);
	assert_false(wait_event_of(A.ctx, IBV_EVENT_CQ_ERR, cq, QUIET_MS));
	assert_int_equal(dev_xstat(A.ctx, "xport.cq_overflows") - before, 18);
	/* The peer saw nothing of it: its QP is still up. */
	assert_int_equal(qp_state_of(qb), IBV_QPS_RTS);
}

/*
 * The CQ of a TM SRQ overrun by its messages: CQ_ERR for the CQ, SRQ_ERR for the SRQ
 * (its completions were lost), QP_FATAL for the QP that received them; the SRQ takes no
 * more receive WRs.
 */
static void misuse_tm_cq_overrun_srq_err(void **state)
{
	struct ibv_cq_ex *cq;
	struct ibv_srq *srq;
	struct ibv_cq *acq, *bcq;
	struct ibv_qp *qa, *qb;
	struct ibv_mr *smr, *rmr;
	struct ibv_sge sge;
	struct ibv_recv_wr rwr, *rbad;

	(void)state;
	cq = new_cq_ex(&B, 4, IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_TM_INFO);
	srq = new_tm_srq(&B, cq, 32, 16, 16);
	acq = new_cq(&A, 64, NULL, NULL);
	bcq = new_cq(&B, 16, NULL, NULL);
	qa = new_qp(&A, IBV_QPT_RC, acq, acq, NULL, 32, 4);
	qb = new_qp(&B, IBV_QPT_RC, bcq, bcq, srq, 0, 0);
	connect_rc(qa, qb, &conn_default);
	smr = new_mr(&A, 64, LW);
	rmr = new_mr(&B, 16 * 64, LW);
	for (int i = 0; i < 16; i++)
		assert_int_equal(post_srq_recv(srq, (uint64_t)i, (uint8_t *)rmr->addr + i * 64, 64,
					       rmr->lkey), 0);
	/* Untagged SENDs: each takes an SRQ WR and completes into the TM SRQ's CQ. */
	for (int i = 0; i < 12; i++)
		assert_int_equal(post_send(qa, IBV_WR_SEND, (uint64_t)i, smr->addr, 8, smr->lkey, 0),
				 0);
	assert_true(wait_event_of(B.ctx, IBV_EVENT_CQ_ERR, ibv_cq_ex_to_cq(cq), WAIT_MS));
	assert_true(wait_event_of(B.ctx, IBV_EVENT_SRQ_ERR, srq, WAIT_MS));
	assert_int_equal(qp_state_of(qb), IBV_QPS_ERR);
	sge = (struct ibv_sge){(uintptr_t)rmr->addr, 64, rmr->lkey};
	rwr = (struct ibv_recv_wr){.wr_id = 99, .sg_list = &sge, .num_sge = 1};
	rbad = NULL;
	assert_int_equal(ibv_post_srq_recv(srq, &rwr, &rbad), EINVAL);
	assert_ptr_equal(rbad, &rwr);
}

/* ibv_create_cq(3): cq->cqe is at least what was asked for. */
static void misuse_cqe_at_least_asked(void **state)
{
	static const int sizes[] = {1, 2, 3, 4, 5, 7, 8, 9, 16, 100, 1000, 1024, 4097};

	(void)state;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct ibv_cq *cq = new_cq(&A, sizes[i], NULL, NULL);

		if (cq->cqe < sizes[i])
			fail_msg("asked for %d entries, cqe %d", sizes[i], cq->cqe);
	}
}

/* ibv_alloc_pd(3): EBUSY while an MR, QP, SRQ or AH is on the PD. */
static void misuse_dealloc_pd_busy(void **state)
{
	struct ibv_cq *cq = new_cq(&A, 4, NULL, NULL);
	struct ibv_qp_init_attr qattr = {
		.send_cq = cq,
		.recv_cq = cq,
		.cap = {.max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1},
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_srq_init_attr sattr = {.attr = {.max_wr = 4, .max_sge = 1}};
	struct ibv_ah_attr aattr = {
		.is_global = 1,
		.port_num = 1,
		.grh = {.dgid = B.gid, .sgid_index = 0, .hop_limit = 64},
	};
	void *buf = new_buf(64);
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_qp *qp;
	struct ibv_srq *srq;
	struct ibv_ah *ah;

	(void)state;
	pd = ibv_alloc_pd(A.ctx);
	assert_non_null(pd);
	/* Each kind of user alone. */
	mr = ibv_reg_mr(pd, buf, 64, LW);
	assert_non_null(mr);
	assert_int_equal(ibv_dealloc_pd(pd), EBUSY);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	qp = ibv_create_qp(pd, &qattr);
	assert_non_null(qp);
	assert_int_equal(ibv_dealloc_pd(pd), EBUSY);
	assert_int_equal(ibv_destroy_qp(qp), 0);
	srq = ibv_create_srq(pd, &sattr);
	assert_non_null(srq);
	assert_int_equal(ibv_dealloc_pd(pd), EBUSY);
	assert_int_equal(ibv_destroy_srq(srq), 0);
	ah = ibv_create_ah(pd, &aattr);
	assert_non_null(ah);
	assert_int_equal(ibv_dealloc_pd(pd), EBUSY);
	assert_int_equal(ibv_destroy_ah(ah), 0);
	/* All four: busy until the last is gone. */
	mr = ibv_reg_mr(pd, buf, 64, LW);
	qp = ibv_create_qp(pd, &qattr);
	srq = ibv_create_srq(pd, &sattr);
	ah = ibv_create_ah(pd, &aattr);
	assert_true(mr != NULL && qp != NULL && srq != NULL && ah != NULL);
	assert_int_equal(ibv_dealloc_pd(pd), EBUSY);
	assert_int_equal(ibv_destroy_qp(qp), 0);
	assert_int_equal(ibv_dealloc_pd(pd), EBUSY);
	assert_int_equal(ibv_destroy_ah(ah), 0);
	assert_int_equal(ibv_dealloc_pd(pd), EBUSY);
	assert_int_equal(ibv_destroy_srq(srq), 0);
	assert_int_equal(ibv_dealloc_pd(pd), EBUSY);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	/* An MR of another PD does not hold this one. */
	mr = ibv_reg_mr(A.pd, buf, 64, LW);
	assert_non_null(mr);
	assert_int_equal(ibv_dealloc_pd(pd), 0);
	assert_int_equal(ibv_dereg_mr(mr), 0);
}

/* ibv_destroy_cq(3): EBUSY while a QP (or a TM SRQ) uses the CQ. */
static void misuse_destroy_cq_busy(void **state)
{
	struct ibv_qp_init_attr qattr = {
		.cap = {.max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1},
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_cq *scq, *rcq;
	struct ibv_cq_ex *tcq;
	struct ibv_qp *qp;

	(void)state;
	scq = ibv_create_cq(A.ctx, 4, NULL, NULL, 0);
	rcq = ibv_create_cq(A.ctx, 4, NULL, NULL, 0);
	assert_true(scq != NULL && rcq != NULL);
	qattr.send_cq = scq;
	qattr.recv_cq = rcq;
	qp = ibv_create_qp(A.pd, &qattr);
	assert_non_null(qp);
	assert_int_equal(ibv_destroy_cq(scq), EBUSY);
	assert_int_equal(ibv_destroy_cq(rcq), EBUSY);
	assert_int_equal(ibv_destroy_qp(qp), 0);
	assert_int_equal(ibv_destroy_cq(scq), 0);
	assert_int_equal(ibv_destroy_cq(rcq), 0);
	/* The CQ of a TM SRQ; teardown destroys the SRQ first, then the CQ. */
	tcq = new_cq_ex(&A, 16, IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_TM_INFO);
	new_tm_srq(&A, tcq, 16, 16, 16);
	assert_int_equal(ibv_destroy_cq(ibv_cq_ex_to_cq(tcq)), EBUSY);
}

/* ibv_destroy_srq(3): EBUSY while a QP is attached. */
static void misuse_destroy_srq_busy(void **state)
{
	struct ibv_cq *cq = new_cq(&A, 4, NULL, NULL);
	struct ibv_srq_init_attr sattr = {.attr = {.max_wr = 4, .max_sge = 1}};
	struct ibv_qp_init_attr qattr = {
		.send_cq = cq,
		.recv_cq = cq,
		.cap = {.max_send_wr = 1, .max_send_sge = 1},
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_srq *srq;
	struct ibv_qp *qp;

	(void)state;
	srq = ibv_create_srq(A.pd, &sattr);
	assert_non_null(srq);
	qattr.srq = srq;
	qp = ibv_create_qp(A.pd, &qattr);
	assert_non_null(qp);
	assert_int_equal(ibv_destroy_srq(srq), EBUSY);
	assert_int_equal(ibv_destroy_qp(qp), 0);
	assert_int_equal(ibv_destroy_srq(srq), 0);
}

/* ibv_create_comp_channel(3): destroying a channel fails while a CQ uses it. */
static void misuse_destroy_channel_busy(void **state)
{
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;

	(void)state;
	ch = ibv_create_comp_channel(A.ctx);
	assert_non_null(ch);
	cq = ibv_create_cq(A.ctx, 4, NULL, ch, 0);
	assert_non_null(cq);
	assert_int_equal(ibv_destroy_comp_channel(ch), EBUSY);
	assert_int_equal(ibv_destroy_cq(cq), 0);
	assert_int_equal(ibv_destroy_comp_channel(ch), 0);
}

/*
 * A WRITE with a bad R_Key: the requester gets REM_ACCESS_ERR, and the responder's
 * program, which has no completion to learn it from, gets IBV_EVENT_QP_ACCESS_ERR
 * about its QP (IBTA 11.6.3), not QP_FATAL.
 */
static void misuse_bad_rkey_write_access_err_at_responder(void **state)
{
	struct ibv_mr *smr, *rmr;
	struct ibv_wc wc;
	struct rc_pair p;

	(void)state;
	rc_pair(&p, &conn_default);
	smr = new_mr(&A, 64, LW);
	rmr = new_mr(&B, 64, LW | IBV_ACCESS_REMOTE_WRITE);
	assert_int_equal(post_write_key(p.a, 1, smr, rmr, rmr->rkey + 1), 0);
	expect_wc(p.acq, &wc);
	assert_int_equal(wc.status, IBV_WC_REM_ACCESS_ERR);
	assert_true(wait_event_of(B.ctx, IBV_EVENT_QP_ACCESS_ERR, p.b, WAIT_MS));
	assert_int_equal(qp_state_of(p.b), IBV_QPS_ERR);
	assert_false(wait_event_of(B.ctx, IBV_EVENT_QP_FATAL, p.b, QUIET_MS));
}

/*
 * Two READs at a responder that accepts one outstanding (max_dest_rd_atomic 1, the
 * requester told it may have 16): the second is an invalid request (IBTA 9.5), and the
 * responder's program gets IBV_EVENT_QP_REQ_ERR about its QP.
 */
static void misuse_too_many_reads_req_err_at_responder(void **state)
{
	struct ibv_sge sge[2];
	struct ibv_send_wr wr[2], *bad = NULL;
	struct ibv_mr *smr, *rmr;
	struct ibv_cq *acq, *bcq;
	struct ibv_qp *qa, *qb;
	struct conn_opts o = {.access = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE,
			      .timeout = 14, .retry_cnt = 7, .max_rd_atomic = 16};

	(void)state;
	acq = new_cq(&A, 16, NULL, NULL);
	bcq = new_cq(&B, 16, NULL, NULL);
	qa = new_qp(&A, IBV_QPT_RC, acq, acq, NULL, 16, 4);
	qb = new_qp(&B, IBV_QPT_RC, bcq, bcq, NULL, 16, 4);
	/* the requester may have 16 READs outstanding, the responder takes 1 */
	o.max_dest_rd_atomic = 16;
	rc_to_rts_at(qa, qb, &o, 0x300, 0x300);
	o.max_dest_rd_atomic = 1;
	rc_to_rts_at(qb, qa, &o, 0x300, 0x300);
	smr = new_mr(&A, 128, LW);
	rmr = new_mr(&B, 128, LW | IBV_ACCESS_REMOTE_READ);
	memset(wr, 0, sizeof(wr));
	for (int i = 0; i < 2; i++) {
		sge[i] = (struct ibv_sge){.addr = (uintptr_t)smr->addr + 64 * (unsigned int)i,
					  .length = 64, .lkey = smr->lkey};
		wr[i].wr_id = (uint64_t)i + 1;
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = 1;
		wr[i].opcode = IBV_WR_RDMA_READ;
		wr[i].send_flags = IBV_SEND_SIGNALED;
		wr[i].wr.rdma.remote_addr = (uintptr_t)rmr->addr + 64 * (unsigned int)i;
		wr[i].wr.rdma.rkey = rmr->rkey;
		wr[i].next = i == 0 ? &wr[1] : NULL;
	}
	assert_int_equal(ibv_post_send(qa, wr, &bad), 0);
	assert_true(wait_event_of(B.ctx, IBV_EVENT_QP_REQ_ERR, qb, WAIT_MS));
	assert_int_equal(qp_state_of(qb), IBV_QPS_ERR);
	assert_false(wait_event_of(B.ctx, IBV_EVENT_QP_FATAL, qb, QUIET_MS));
}

/* A NULL sg_list with num_sge > 0 is EINVAL with the WR in *bad_wr, on every post
 * verb (doc/guides/srq.md §3 for TAG_ADD), and an earlier good WR stays posted. */
static void misuse_null_sg_list_einval(void **state)
{
	struct ibv_send_wr swr = {.wr_id = 1, .num_sge = 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED};
	struct ibv_recv_wr rwr = {.wr_id = 2, .num_sge = 1}, *rbad;
	struct ibv_ops_wr op = {.wr_id = 3, .opcode = IBV_WR_TAG_ADD,
				.tm = {.add = {.recv_wr_id = 4, .num_sge = 1, .tag = 5,
					       .mask = ~0ull}}};
	struct ibv_send_wr *sbad;
	struct ibv_ops_wr *obad;
	struct ibv_cq_ex *tcq;
	struct ibv_srq *srq;
	struct ibv_mr *mr;
	struct rc_pair p;

	(void)state;
	rc_pair(&p, &conn_default);
	mr = new_mr(&B, 64, LW);
	sbad = NULL;
	assert_int_equal(ibv_post_send(p.a, &swr, &sbad), EINVAL);
	assert_ptr_equal(sbad, &swr);
	swr.send_flags |= IBV_SEND_INLINE;
	sbad = NULL;
	assert_int_equal(ibv_post_send(p.a, &swr, &sbad), EINVAL);
	assert_ptr_equal(sbad, &swr);
	rbad = NULL;
	assert_int_equal(ibv_post_recv(p.b, &rwr, &rbad), EINVAL);
	assert_ptr_equal(rbad, &rwr);
	/* After a good receive: it stays posted, the bad one is returned. */
	{
		struct ibv_sge sge = {.addr = (uintptr_t)mr->addr, .length = 64, .lkey = mr->lkey};
		struct ibv_recv_wr good = {.wr_id = 9, .sg_list = &sge, .num_sge = 1, .next = &rwr};

		rbad = NULL;
		assert_int_equal(ibv_post_recv(p.b, &good, &rbad), EINVAL);
		assert_ptr_equal(rbad, &rwr);
	}
	srq = new_srq(&B, 16, 1);
	rbad = NULL;
	assert_int_equal(ibv_post_srq_recv(srq, &rwr, &rbad), EINVAL);
	assert_ptr_equal(rbad, &rwr);
	tcq = new_cq_ex(&B, 16, IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_TM_INFO);
	srq = new_tm_srq(&B, tcq, 16, 16, 16);
	obad = NULL;
	assert_int_equal(ibv_post_srq_ops(srq, &op, &obad), EINVAL);
	assert_ptr_equal(obad, &op);
	/* Nothing reached the wire: the good receive is still there for a SEND. */
	assert_int_equal(post_send(p.a, IBV_WR_SEND, 7, NULL, 0, 0, IBV_SEND_SIGNALED), 0);
	expect_send_ok(p.acq, 7, IBV_WC_SEND);
	{
		struct ibv_wc wc;

		expect_wc(p.bcq, &wc);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.wr_id, 9);
	}
}

int run_misuse_tests(void)
{
	const struct CMUnitTest tests[] = {
		VT(misuse_cq_overrun_cq_err_and_qp_fatal),
		VT(misuse_tm_cq_overrun_srq_err),
		VT(misuse_cqe_at_least_asked),
		VT(misuse_dealloc_pd_busy),
		VT(misuse_destroy_cq_busy),
		VT(misuse_destroy_srq_busy),
		VT(misuse_destroy_channel_busy),
		VT(misuse_bad_rkey_write_access_err_at_responder),
		VT(misuse_too_many_reads_req_err_at_responder),
		VT(misuse_null_sg_list_einval),
	};

	return cmocka_run_group_tests_name("misuse", tests, NULL, NULL);
}
