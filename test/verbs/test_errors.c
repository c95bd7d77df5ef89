/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Error completions: each failure shows as a completion with the status the verbs
 * man pages and IBTA give it, at the side that must learn of it; a QP that failed is
 * in ERR and flushes what it still holds.
 */
#include <string.h>

#include "test_verbs.h"

#define LW IBV_ACCESS_LOCAL_WRITE

static void expect_status(struct ibv_cq *cq, uint64_t wr_id, enum ibv_wc_status status)
{
	struct ibv_wc wc;

	expect_wc(cq, &wc);
	if (wc.status != status)
		fail_msg("wr_id %" PRIu64 ": %s, want %s", wc.wr_id, ibv_wc_status_str(wc.status),
			 ibv_wc_status_str(status));
	assert_int_equal(wc.wr_id, wr_id);
}

/* A QP the device moved to ERR on its own says so in ibv_query_qp (soon: the device
 * may write the completion a moment before it changes the state). */
static void expect_err_state(struct ibv_qp *qp)
{
	uint64_t end = now_ms() + WAIT_MS;
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;

	do {
		assert_int_equal(ibv_query_qp(qp, &attr, IBV_QP_STATE, &init), 0);
		if (attr.qp_state == IBV_QPS_ERR)
			return;
		progress();
	} while (now_ms() <= end);
	fail_msg("QP %u in state %d, want ERR", qp->qp_num, attr.qp_state);
}

static void err_rdma_write_bad_rkey_rem_access_err(void **state)
{
	struct ibv_mr *smr, *rmr;
	struct rc_pair p;

	(void)state;
	rc_pair(&p, &conn_default);
	smr = new_mr(&A, 256, LW);
	rmr = new_mr(&B, 256, LW | IBV_ACCESS_REMOTE_WRITE);
	fill_pattern(smr->addr, 256, 61);
	assert_int_equal(post_rdma(p.a, IBV_WR_RDMA_WRITE, 1, smr->addr, 256, smr->lkey,
				   (uintptr_t)rmr->addr, rmr->rkey + 1), 0);
	expect_status(p.acq, 1, IBV_WC_REM_ACCESS_ERR);
	expect_err_state(p.a);
	for (int i = 0; i < 256; i++)
		assert_int_equal(((uint8_t *)rmr->addr)[i], 0);
	expect_quiet(p.bcq);
}

static void err_rdma_write_beyond_mr_rem_access_err(void **state)
{
	struct ibv_mr *smr, *rmr;
	struct rc_pair p;

	(void)state;
	rc_pair(&p, &conn_default);
	smr = new_mr(&A, 256, LW);
	rmr = new_mr(&B, 256, LW | IBV_ACCESS_REMOTE_WRITE);
	assert_int_equal(post_rdma(p.a, IBV_WR_RDMA_WRITE, 1, smr->addr, 256, smr->lkey,
				   (uintptr_t)rmr->addr + 1, rmr->rkey), 0);
	expect_status(p.acq, 1, IBV_WC_REM_ACCESS_ERR);
}

static void err_send_bad_lkey_loc_prot_err(void **state)
{
	struct ibv_mr *smr, *rmr;
	struct rc_pair p;

	(void)state;
	rc_pair(&p, &conn_default);
	smr = new_mr(&A, 256, LW);
	rmr = new_mr(&B, 256, LW);
	assert_int_equal(post_recv(p.b, 1, rmr->addr, 256, rmr->lkey), 0);
	assert_int_equal(post_send(p.a, IBV_WR_SEND, 2, smr->addr, 64, smr->lkey + 1,
				   IBV_SEND_SIGNALED), 0);
	expect_status(p.acq, 2, IBV_WC_LOC_PROT_ERR);
	expect_err_state(p.a);
	/* Nothing left the sender. */
	expect_quiet(p.bcq);
}

static void err_recv_too_small_loc_len_err_and_rem_inv_req_err(void **state)
{
	struct ibv_mr *smr, *rmr;
	struct rc_pair p;

	(void)state;
	rc_pair(&p, &conn_default);
	smr = new_mr(&A, 256, LW);
	rmr = new_mr(&B, 256, LW);
	assert_int_equal(post_recv(p.b, 1, rmr->addr, 64, rmr->lkey), 0);
	assert_int_equal(post_send(p.a, IBV_WR_SEND, 2, smr->addr, 200, smr->lkey,
				   IBV_SEND_SIGNALED), 0);
	expect_status(p.bcq, 1, IBV_WC_LOC_LEN_ERR);
	expect_status(p.acq, 2, IBV_WC_REM_INV_REQ_ERR);
	expect_err_state(p.a);
	expect_err_state(p.b);
	/* Nothing beyond the 64 bytes of the receive was written. */
	for (int i = 64; i < 256; i++)
		assert_int_equal(((uint8_t *)rmr->addr)[i], 0);
}

static void err_rnr_retry_exceeded_without_receive(void **state)
{
	struct conn_opts o = conn_default;
	struct ibv_mr *smr;
	struct rc_pair p;

	(void)state;
	o.rnr_retry = 0;
	rc_pair(&p, &o);
	smr = new_mr(&A, 64, LW);
	assert_int_equal(post_send(p.a, IBV_WR_SEND, 3, smr->addr, 64, smr->lkey,
				   IBV_SEND_SIGNALED), 0);
	expect_status(p.acq, 3, IBV_WC_RNR_RETRY_EXC_ERR);
	expect_err_state(p.a);
	expect_quiet(p.bcq);
}

static void err_receives_flushed_when_qp_goes_to_err(void **state)
{
	struct ibv_mr *rmr;
	struct rc_pair p;

	(void)state;
	rc_pair(&p, &conn_default);
	rmr = new_mr(&B, 4 * 64, LW);
	for (int i = 0; i < 3; i++)
		assert_int_equal(post_recv(p.b, 10 + i, (uint8_t *)rmr->addr + 64 * i, 64,
					   rmr->lkey), 0);
	qp_to_err(p.b);
	for (int i = 0; i < 3; i++)
		expect_status(p.bcq, 10 + i, IBV_WC_WR_FLUSH_ERR);
	/* Posted in ERR: flushed too. */
	assert_int_equal(post_recv(p.b, 13, (uint8_t *)rmr->addr + 192, 64, rmr->lkey), 0);
	expect_status(p.bcq, 13, IBV_WC_WR_FLUSH_ERR);
	expect_quiet(p.bcq);
}

static void err_sends_flushed_when_qp_goes_to_err(void **state)
{
	struct ibv_mr *smr;
	struct rc_pair p;

	(void)state;
	rc_pair(&p, &conn_default); /* rnr_retry 7: the first send waits for ever */
	smr = new_mr(&A, 64, LW);
	assert_int_equal(post_send(p.a, IBV_WR_SEND, 1, smr->addr, 64, smr->lkey,
				   IBV_SEND_SIGNALED), 0);
	/* Unsignaled, but a flushed WR always completes. */
	assert_int_equal(post_send(p.a, IBV_WR_SEND, 2, smr->addr, 64, smr->lkey, 0), 0);
	expect_quiet(p.acq);
	qp_to_err(p.a);
	expect_status(p.acq, 1, IBV_WC_WR_FLUSH_ERR);
	expect_status(p.acq, 2, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(post_send(p.a, IBV_WR_SEND, 3, smr->addr, 64, smr->lkey,
				   IBV_SEND_SIGNALED), 0);
	expect_status(p.acq, 3, IBV_WC_WR_FLUSH_ERR);
	expect_quiet(p.acq);
	expect_quiet(p.bcq);
}

int run_error_tests(void)
{
	const struct CMUnitTest tests[] = {
		VT(err_rdma_write_bad_rkey_rem_access_err),
		VT(err_rdma_write_beyond_mr_rem_access_err),
		VT(err_send_bad_lkey_loc_prot_err),
		VT(err_recv_too_small_loc_len_err_and_rem_inv_req_err),
		VT(err_rnr_retry_exceeded_without_receive),
		VT(err_receives_flushed_when_qp_goes_to_err),
		VT(err_sends_flushed_when_qp_goes_to_err),
	};

	return cmocka_run_group_tests_name("errors", tests, NULL, NULL);
}
