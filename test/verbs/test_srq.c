/* SPDX-License-Identifier: BSD-3-Clause */
/* Shared receive queues: doc/guides/srq.md §1, one test per rule. */
#include <errno.h>
#include <poll.h>
#include <string.h>

#include "test_verbs.h"

#define LW IBV_ACCESS_LOCAL_WRITE
#define NQP 16
/* Not a power of two: a ring rounded up must not let more in. */
#define MAX_WR 6

/* An RC pair whose B end takes its receives from @p srq; @p bcq, if not NULL, is shared. */
static void srq_pair(struct rc_pair *p, struct ibv_srq *srq, struct ibv_cq *bcq,
		     const struct conn_opts *o)
{
	p->acq = new_cq(&A, 256, NULL, NULL);
	p->bcq = bcq != NULL ? bcq : new_cq(&B, 256, NULL, NULL);
	p->a = new_qp(&A, IBV_QPT_RC, p->acq, p->acq, NULL, 64, 16);
	p->b = new_qp(&B, IBV_QPT_RC, p->bcq, p->bcq, srq, 16, 0);
	connect_rc(p->a, p->b, o);
}

/* Send @p len bytes of pattern @p seed from A to B and wait for the sender's completion. */
static void send_one(struct rc_pair *p, struct ibv_mr *smr, uint32_t len, uint32_t seed)
{
	fill_pattern(smr->addr, len, seed);
	assert_int_equal(post_send(p->a, IBV_WR_SEND, seed, smr->addr, len, smr->lkey,
				   IBV_SEND_SIGNALED), 0);
	expect_send_ok(p->acq, seed, IBV_WC_SEND);
}

/* How many more WRs @p srq (of @p max_wr) takes before ENOMEM: max_wr minus those posted. */
static uint32_t srq_room(struct ibv_srq *srq, uint32_t max_wr, struct ibv_mr *mr)
{
	uint32_t n = 0;
	int ret;

	while ((ret = post_srq_recv(srq, 900 + n, mr->addr, 64, mr->lkey)) == 0) {
		n++;
		assert_true(n <= max_wr);
	}
	assert_int_equal(ret, ENOMEM);
	return n;
}

static void srq_shared_by_16_qps_reports_each_qp_num(void **state)
{
	struct ibv_mr *rmr, *smr[NQP];
	struct rc_pair p[NQP];
	struct ibv_srq *srq;
	struct ibv_cq *bcq;
	struct ibv_wc wc[NQP];
	uint32_t k, j;

	(void)state;
	srq = new_srq(&B, 64, 1);
	bcq = new_cq(&B, 256, NULL, NULL);
	for (k = 0; k < NQP; k++) {
		srq_pair(&p[k], srq, bcq, &conn_default);
		smr[k] = new_mr(&A, 256, LW);
	}
	rmr = new_mr(&B, 2 * NQP * 256, LW);
	for (j = 0; j < 2 * NQP; j++)
		assert_int_equal(post_srq_recv(srq, j, (uint8_t *)rmr->addr + j * 256, 256,
					       rmr->lkey), 0);
	/* Two rounds of one message per QP; WRs are consumed in the order they were posted. */
	for (int round = 0; round < 2; round++) {
		bool seen[NQP] = {false};

		for (k = 0; k < NQP; k++) {
			fill_pattern(smr[k]->addr, 100 + k, k + 100 * round);
			((uint8_t *)smr[k]->addr)[0] = (uint8_t)k;
			assert_int_equal(post_send(p[k].a, IBV_WR_SEND, k, smr[k]->addr, 100 + k,
						   smr[k]->lkey, IBV_SEND_SIGNALED), 0);
		}
		assert_int_equal(poll_wc(bcq, wc, NQP), NQP);
		for (j = 0; j < NQP; j++) {
			uint8_t *buf = (uint8_t *)rmr->addr + wc[j].wr_id * 256;

			assert_int_equal(wc[j].status, IBV_WC_SUCCESS);
			assert_int_equal(wc[j].opcode, IBV_WC_RECV);
			assert_int_equal(wc[j].wr_id, round * NQP + j);
			k = buf[0];
			assert_true(k < NQP);
			assert_false(seen[k]);
			seen[k] = true;
			/* The QP the message came in on, not an SRQ number. */
			assert_int_equal(wc[j].qp_num, p[k].b->qp_num);
			assert_int_equal(wc[j].src_qp, p[k].a->qp_num);
			assert_int_equal(wc[j].byte_len, 100 + k);
			assert_memory_equal(buf + 1, (uint8_t *)smr[k]->addr + 1, 99 + k);
		}
		for (k = 0; k < NQP; k++)
			expect_send_ok(p[k].acq, k, IBV_WC_SEND);
	}
	expect_quiet(bcq);
}

static void srq_post_einval_num_sge_above_max_keeps_earlier(void **state)
{
	struct ibv_recv_wr wr[3], *bad = NULL;
	struct ibv_sge sge[2];
	struct ibv_mr *mr, *smr;
	struct ibv_srq *srq;
	struct rc_pair p;
	struct ibv_wc wc;

	(void)state;
	srq = new_srq(&B, MAX_WR, 1);
	mr = new_mr(&B, 4096, LW);
	sge[0] = (struct ibv_sge){(uintptr_t)mr->addr, 64, mr->lkey};
	sge[1] = (struct ibv_sge){(uintptr_t)mr->addr + 64, 64, mr->lkey};
	memset(wr, 0, sizeof(wr));
	for (int i = 0; i < 3; i++) {
		wr[i].wr_id = 10 + i;
		wr[i].sg_list = sge;
		wr[i].num_sge = 1;
		wr[i].next = i < 2 ? &wr[i + 1] : NULL;
	}
	wr[1].num_sge = 2; /* above max_sge 1 */
	assert_int_equal(ibv_post_srq_recv(srq, wr, &bad), EINVAL);
	assert_ptr_equal(bad, &wr[1]);
	/* wr[0] stays posted, wr[2] was never posted: room for exactly MAX_WR - 1 more. */
	assert_int_equal(srq_room(srq, MAX_WR, mr), MAX_WR - 1);
	srq_pair(&p, srq, NULL, &conn_default);
	smr = new_mr(&A, 64, LW);
	send_one(&p, smr, 32, 1);
	expect_wc(p.bcq, &wc);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 10);
}

static void srq_post_negative_num_sge_einval(void **state)
{
	struct ibv_recv_wr wr, *bad = NULL;
	struct ibv_srq *srq;
	struct ibv_mr *mr;

	(void)state;
	srq = new_srq(&B, MAX_WR, 1);
	mr = new_mr(&B, 64, LW);
	memset(&wr, 0, sizeof(wr));
	wr.num_sge = -1;
	assert_int_equal(ibv_post_srq_recv(srq, &wr, &bad), EINVAL);
	assert_ptr_equal(bad, &wr);
	assert_int_equal(srq_room(srq, MAX_WR, mr), MAX_WR);
}

static void srq_post_enomem_at_max_wr_outstanding(void **state)
{
	struct ibv_recv_wr wr[MAX_WR + 1], *bad = NULL;
	struct ibv_mr *mr, *smr;
	struct ibv_sge sge;
	struct ibv_srq *srq;
	struct rc_pair p;
	struct ibv_wc wc;

	(void)state;
	srq = new_srq(&B, MAX_WR, 1);
	mr = new_mr(&B, 64, LW);
	sge = (struct ibv_sge){(uintptr_t)mr->addr, 64, mr->lkey};
	memset(wr, 0, sizeof(wr));
	for (int i = 0; i <= MAX_WR; i++) {
		wr[i].wr_id = 20 + i;
		wr[i].sg_list = &sge;
		wr[i].num_sge = 1;
		wr[i].next = i < MAX_WR ? &wr[i + 1] : NULL;
	}
	assert_int_equal(ibv_post_srq_recv(srq, wr, &bad), ENOMEM);
	assert_ptr_equal(bad, &wr[MAX_WR]);
	assert_int_equal(srq_room(srq, MAX_WR, mr), 0);
	/* A consumed WR makes room for exactly one. */
	srq_pair(&p, srq, NULL, &conn_default);
	smr = new_mr(&A, 64, LW);
	send_one(&p, smr, 16, 2);
	expect_wc(p.bcq, &wc);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 20);
	assert_int_equal(srq_room(srq, MAX_WR, mr), 1);
}

static void srq_zero_length_receive(void **state)
{
	struct ibv_recv_wr wr, *bad = NULL;
	struct ibv_srq *srq;
	struct rc_pair p;
	struct ibv_wc wc;

	(void)state;
	srq = new_srq(&B, 8, 1);
	srq_pair(&p, srq, NULL, &conn_default);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 77;
	wr.num_sge = 0;
	assert_int_equal(ibv_post_srq_recv(srq, &wr, &bad), 0);
	assert_int_equal(post_send(p.a, IBV_WR_SEND, 78, NULL, 0, 0, IBV_SEND_SIGNALED), 0);
	expect_wc(p.bcq, &wc);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_RECV);
	assert_int_equal(wc.wr_id, 77);
	assert_int_equal(wc.byte_len, 0);
	assert_int_equal(wc.qp_num, p.b->qp_num);
	expect_send_ok(p.acq, 78, IBV_WC_SEND);
}

/*
 * A message landing in a WR whose buffer fails the key check: LOC_PROT_ERR on the
 * receive, an error at the sender, and the SRQ's other WRs serve other QPs.
 */
static void expect_loc_prot_err(struct ibv_srq *srq, struct ibv_mr *good)
{
	struct rc_pair p, q;
	struct ibv_mr *smr;
	struct ibv_wc wc;

	srq_pair(&p, srq, NULL, &conn_default);
	smr = new_mr(&A, 64, LW);
	fill_pattern(smr->addr, 50, 3);
	assert_int_equal(post_send(p.a, IBV_WR_SEND, 5, smr->addr, 50, smr->lkey,
				   IBV_SEND_SIGNALED), 0);
	expect_wc(p.bcq, &wc);
	assert_int_equal(wc.status, IBV_WC_LOC_PROT_ERR);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.qp_num, p.b->qp_num);
	expect_wc(p.acq, &wc);
	assert_int_equal(wc.wr_id, 5);
	assert_int_equal(wc.status, IBV_WC_REM_OP_ERR);
	/* The next WR, a good one, serves another QP of the SRQ. */
	assert_int_equal(post_srq_recv(srq, 2, good->addr, 64, good->lkey), 0);
	srq_pair(&q, srq, NULL, &conn_default);
	assert_int_equal(post_send(q.a, IBV_WR_SEND, 6, smr->addr, 50, smr->lkey,
				   IBV_SEND_SIGNALED), 0);
	expect_wc(q.bcq, &wc);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 2);
	assert_true(check_pattern(good->addr, 50, 3));
	expect_send_ok(q.acq, 6, IBV_WC_SEND);
}

static void srq_bad_lkey_gives_loc_prot_err(void **state)
{
	struct ibv_srq *srq = new_srq(&B, 8, 1);
	struct ibv_mr *mr = new_mr(&B, 4096, LW);

	(void)state;
	/* Posting does not check keys (doc/guides/srq.md §1): the landing does. */
	assert_int_equal(post_srq_recv(srq, 1, mr->addr, 64, mr->lkey + 1), 0);
	expect_loc_prot_err(srq, mr);
}

static void srq_range_outside_mr_gives_loc_prot_err(void **state)
{
	struct ibv_srq *srq = new_srq(&B, 8, 1);
	struct ibv_mr *mr = new_mr(&B, 4096, LW);

	(void)state;
	assert_int_equal(post_srq_recv(srq, 1, (uint8_t *)mr->addr + 4096 - 10, 100, mr->lkey),
			 0);
	expect_loc_prot_err(srq, mr);
}

static void srq_mr_without_local_write_gives_loc_prot_err(void **state)
{
	struct ibv_srq *srq = new_srq(&B, 8, 1);
	struct ibv_mr *ro = new_mr(&B, 4096, 0);
	struct ibv_mr *mr = new_mr(&B, 4096, LW);

	(void)state;
	assert_int_equal(post_srq_recv(srq, 1, ro->addr, 64, ro->lkey), 0);
	expect_loc_prot_err(srq, mr);
	for (int i = 0; i < 64; i++)
		assert_int_equal(((uint8_t *)ro->addr)[i], 0);
}

static void srq_rdma_write_with_imm_consumes_srq_wr(void **state)
{
	struct ibv_mr *smr, *rmr;
	struct ibv_srq *srq;
	struct rc_pair p;
	struct ibv_wc wc;

	(void)state;
	srq = new_srq(&B, 8, 1);
	srq_pair(&p, srq, NULL, &conn_default);
	smr = new_mr(&A, 2000, LW);
	rmr = new_mr(&B, 2000, LW | IBV_ACCESS_REMOTE_WRITE);
	fill_pattern(smr->addr, 2000, 10);
	assert_int_equal(post_srq_recv(srq, 31, NULL, 0, 0), 0);
	assert_int_equal(post_send_imm(p.a, IBV_WR_RDMA_WRITE_WITH_IMM, 32, smr->addr, 2000,
				       smr->lkey, 0x01020304, (uintptr_t)rmr->addr, rmr->rkey), 0);
	expect_wc(p.bcq, &wc);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	assert_int_equal(wc.wr_id, 31);
	assert_int_equal(wc.qp_num, p.b->qp_num);
	assert_int_equal(wc.src_qp, p.a->qp_num);
	assert_int_equal(wc.wc_flags & IBV_WC_WITH_IMM, IBV_WC_WITH_IMM);
	assert_int_equal(be32toh(wc.imm_data), 0x01020304);
	assert_true(check_pattern(rmr->addr, 2000, 10));
	expect_send_ok(p.acq, 32, IBV_WC_RDMA_WRITE);
}

static bool async_pending(struct ibv_context *ctx)
{
	struct pollfd pfd = {.fd = ctx->async_fd, .events = POLLIN};

	return poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLIN);
}

static void drain_async(struct ibv_context *ctx)
{
	struct ibv_async_event ev;

	while (async_pending(ctx)) {
		assert_int_equal(ibv_get_async_event(ctx, &ev), 0);
		ibv_ack_async_event(&ev);
	}
}

static void srq_limit_event_fires_once_below_limit(void **state)
{
	struct ibv_srq_attr attr = {.srq_limit = 4};
	struct ibv_async_event ev;
	struct ibv_mr *rmr, *smr;
	struct ibv_srq *srq;
	struct rc_pair p;
	struct ibv_wc wc;
	uint32_t i;

	(void)state;
	drain_async(B.ctx);
	srq = new_srq(&B, 16, 1);
	rmr = new_mr(&B, 8 * 64, LW);
	smr = new_mr(&A, 64, LW);
	for (i = 0; i < 8; i++)
		assert_int_equal(post_srq_recv(srq, i, (uint8_t *)rmr->addr + i * 64, 64,
					       rmr->lkey), 0);
	assert_int_equal(ibv_modify_srq(srq, &attr, IBV_SRQ_LIMIT), 0);
	memset(&attr, 0, sizeof(attr));
	assert_int_equal(ibv_query_srq(srq, &attr), 0);
	assert_int_equal(attr.srq_limit, 4);
	srq_pair(&p, srq, NULL, &conn_default);
	/* 8 -> 4 posted: not below the limit yet. */
	for (i = 0; i < 4; i++) {
		send_one(&p, smr, 8, i);
		expect_wc(p.bcq, &wc);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
	}
	assert_false(wait_async_event(B.ctx, &ev, QUIET_MS));
	/* 4 -> 3: below. */
	send_one(&p, smr, 8, 4);
	expect_wc(p.bcq, &wc);
	assert_true(wait_async_event(B.ctx, &ev, WAIT_MS));
	assert_int_equal(ev.event_type, IBV_EVENT_SRQ_LIMIT_REACHED);
	assert_ptr_equal(ev.element.srq, srq);
	ibv_ack_async_event(&ev);
	/* One-shot: disarmed, and a further drop says nothing. */
	assert_int_equal(ibv_query_srq(srq, &attr), 0);
	assert_int_equal(attr.srq_limit, 0);
	send_one(&p, smr, 8, 5);
	expect_wc(p.bcq, &wc);
	assert_false(wait_async_event(B.ctx, &ev, QUIET_MS));
}

static void srq_empty_rnr_then_delivered_when_wr_posted(void **state)
{
	struct ibv_mr *rmr, *smr;
	struct ibv_srq *srq;
	struct rc_pair p;
	struct ibv_wc wc;

	(void)state;
	srq = new_srq(&B, 8, 1);
	srq_pair(&p, srq, NULL, &conn_default); /* rnr_retry 7: for ever */
	rmr = new_mr(&B, 256, LW);
	smr = new_mr(&A, 256, LW);
	fill_pattern(smr->addr, 200, 9);
	assert_int_equal(post_send(p.a, IBV_WR_SEND, 1, smr->addr, 200, smr->lkey,
				   IBV_SEND_SIGNALED), 0);
	/* RNR NAKs and retries meanwhile: nothing completes, nothing is dropped. */
	expect_quiet(p.acq);
	expect_quiet(p.bcq);
	assert_int_equal(post_srq_recv(srq, 2, rmr->addr, 256, rmr->lkey), 0);
	expect_wc(p.bcq, &wc);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 2);
	assert_int_equal(wc.byte_len, 200);
	assert_true(check_pattern(rmr->addr, 200, 9));
	expect_send_ok(p.acq, 1, IBV_WC_SEND);
}

static void srq_empty_rnr_retry_exceeded(void **state)
{
	struct conn_opts o = conn_default;
	struct ibv_srq *srq;
	struct ibv_mr *smr;
	struct rc_pair p;
	struct ibv_wc wc;

	(void)state;
	o.rnr_retry = 2;
	srq = new_srq(&B, 8, 1);
	srq_pair(&p, srq, NULL, &o);
	smr = new_mr(&A, 64, LW);
	assert_int_equal(post_send(p.a, IBV_WR_SEND, 3, smr->addr, 64, smr->lkey,
				   IBV_SEND_SIGNALED), 0);
	expect_wc(p.acq, &wc);
	assert_int_equal(wc.wr_id, 3);
	assert_int_equal(wc.status, IBV_WC_RNR_RETRY_EXC_ERR);
	expect_quiet(p.bcq);
}

int run_srq_tests(void)
{
	const struct CMUnitTest tests[] = {
		VT(srq_shared_by_16_qps_reports_each_qp_num),
		VT(srq_post_einval_num_sge_above_max_keeps_earlier),
		VT(srq_post_negative_num_sge_einval),
		VT(srq_post_enomem_at_max_wr_outstanding),
		VT(srq_zero_length_receive),
		VT(srq_rdma_write_with_imm_consumes_srq_wr),
		VT(srq_bad_lkey_gives_loc_prot_err),
		VT(srq_range_outside_mr_gives_loc_prot_err),
		VT(srq_mr_without_local_write_gives_loc_prot_err),
		VT(srq_limit_event_fires_once_below_limit),
		VT(srq_empty_rnr_then_delivered_when_wr_posted),
		VT(srq_empty_rnr_retry_exceeded),
	};

	return cmocka_run_group_tests_name("srq", tests, NULL, NULL);
}
