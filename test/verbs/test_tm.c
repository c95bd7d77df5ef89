/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tag-matching SRQs, doc/guides/srq.md §2-§5: creation, ibv_post_srq_ops, matching of RC
 * SENDs that start with struct ibv_tmh, completions read through ibv_start_poll /
 * ibv_next_poll / ibv_end_poll and ibv_wc_read_tm_info (and the legacy ibv_poll_cq),
 * and the phase rules. The sender is an ordinary RC QP on dpv0; the receiving QP on
 * dpv1 has no send queue (doc/guides/srq.md §2 allows max_send_wr 0).
 */
#include <errno.h>
#include <string.h>

#include <infiniband/tm_types.h>

#include "dpv_verbs.h"
#include "test_verbs.h"

#define LW IBV_ACCESS_LOCAL_WRITE
#define TMH_LEN ((uint32_t)sizeof(struct ibv_tmh))
#define EXACT UINT64_MAX
#define TM_FLAGS (IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID | IBV_WC_TM_SYNC_REQ)
#define SIG IBV_OPS_SIGNALED
#define BUF 4096u
#define WC_EX_FLAGS (IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM | \
		     IBV_WC_EX_WITH_SRC_QP | IBV_WC_EX_WITH_TM_INFO)

struct tmq {
	struct ibv_cq_ex *cq;  /* the TM SRQ's CQ, on B */
	struct ibv_srq *srq;
	struct rc_pair p;      /* a: sender on A; b: on B, attached to srq */
	struct ibv_mr *smr;    /* sender's buffer */
	struct ibv_mr *tmr;    /* tag entries' buffers: BUF bytes each */
	struct ibv_mr *umr;    /* ordinary SRQ WRs' buffers: BUF bytes each */
};

static void tm_setup(struct tmq *t, uint32_t max_num_tags, uint32_t max_ops)
{
	t->cq = new_cq_ex(&B, 256, WC_EX_FLAGS);
	t->srq = new_tm_srq(&B, t->cq, 64, max_num_tags, max_ops);
	t->p.acq = new_cq(&A, 256, NULL, NULL);
	t->p.bcq = new_cq(&B, 16, NULL, NULL);
	t->p.a = new_qp(&A, IBV_QPT_RC, t->p.acq, t->p.acq, NULL, 64, 16);
	t->p.b = new_qp(&B, IBV_QPT_RC, t->p.bcq, ibv_cq_ex_to_cq(t->cq), t->srq, 0, 0);
	connect_rc(t->p.a, t->p.b, &conn_default);
	t->smr = new_mr(&A, 65536, LW);
	t->tmr = new_mr(&B, 16 * BUF, LW);
	t->umr = new_mr(&B, 16 * BUF, LW);
}

static uint8_t *tbuf(struct tmq *t, unsigned int i)
{
	return (uint8_t *)t->tmr->addr + i * BUF;
}

static uint8_t *ubuf(struct tmq *t, unsigned int i)
{
	return (uint8_t *)t->umr->addr + i * BUF;
}

/* An ordinary SRQ WR into unexpected buffer @p i, wr_id 900 + i. */
static void post_plain(struct tmq *t, unsigned int i)
{
	assert_int_equal(post_srq_recv(t->srq, 900 + i, ubuf(t, i), BUF, t->umr->lkey), 0);
}

/* A tagged message: TMH, then @p len bytes of pattern @p seed; waits for its ACK. */
static void tm_send(struct tmq *t, uint8_t op, uint32_t app_ctx, uint64_t tag, uint32_t len,
		    uint32_t seed)
{
	struct ibv_tmh *h = t->smr->addr;

	memset(h, 0, sizeof(*h));
	h->opcode = op;
	h->app_ctx = htobe32(app_ctx);
	h->tag = htobe64(tag);
	fill_pattern((uint8_t *)t->smr->addr + TMH_LEN, len, seed);
	assert_int_equal(post_send(t->p.a, IBV_WR_SEND, seed, t->smr->addr, TMH_LEN + len,
				   t->smr->lkey, IBV_SEND_SIGNALED), 0);
	expect_send_ok(t->p.acq, seed, IBV_WC_SEND);
}

static int tm_add(struct tmq *t, uint64_t tag, uint64_t mask, unsigned int buf, uint32_t len,
		  uint64_t wr_id, int flags, uint32_t unexpected_cnt, uint32_t *handle)
{
	return post_tag_add(t->srq, wr_id, 500 + buf, tbuf(t, buf), len, t->tmr->lkey, tag, mask,
			    (unsigned int)flags, unexpected_cnt, handle);
}

static int tm_op(struct tmq *t, enum ibv_ops_wr_opcode opcode, uint32_t handle, uint64_t wr_id,
		 int flags, uint32_t unexpected_cnt)
{
	struct ibv_ops_wr op, *bad = NULL;
	int ret;

	memset(&op, 0, sizeof(op));
	op.wr_id = wr_id;
	op.opcode = opcode;
	op.flags = flags;
	op.tm.handle = handle;
	op.tm.unexpected_cnt = unexpected_cnt;
	ret = ibv_post_srq_ops(t->srq, &op, &bad);
	if (ret != 0)
		assert_ptr_equal(bad, &op);
	return ret;
}

/* The next completion must be op @p opcode of @p wr_id with @p status. */
static void expect_op(struct tmq *t, enum ibv_wc_opcode opcode, uint64_t wr_id,
		      enum ibv_wc_status status, struct wc_ex *wc)
{
	expect_ex(t->cq, wc);
	if (wc->status != status)
		fail_msg("op wr_id %" PRIu64 ": status %s, want %s", wc->wr_id,
			 ibv_wc_status_str(wc->status), ibv_wc_status_str(status));
	assert_int_equal(wc->opcode, opcode);
	assert_int_equal(wc->wr_id, wr_id);
}

/* The next completion must be an eager message of @p len bytes matched in entry @p buf. */
static void expect_matched(struct tmq *t, unsigned int buf, uint64_t tag, uint32_t app_ctx,
			   uint32_t len, uint32_t seed)
{
	struct wc_ex wc;

	expect_ex(t->cq, &wc);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_TM_RECV);
	assert_int_equal(wc.wr_id, 500 + buf);
	assert_int_equal(wc.wc_flags & TM_FLAGS, IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID);
	/* byte_len and the buffer exclude the TMH. */
	assert_int_equal(wc.byte_len, len);
	assert_int_equal(wc.tm.tag, tag);
	assert_int_equal(wc.tm.priv, app_ctx);
	assert_int_equal(wc.qp_num, t->p.b->qp_num);
	assert_true(check_pattern(tbuf(t, buf), len, seed));
	assert_int_equal(tbuf(t, buf)[len], 0);
}

/* The next completion must be an unexpected message placed whole in plain WR @p i. */
static void expect_unexpected(struct tmq *t, unsigned int i, uint64_t tag, uint32_t len,
			      uint32_t seed)
{
	const struct ibv_tmh *h = (const void *)ubuf(t, i);
	struct wc_ex wc;

	expect_ex(t->cq, &wc);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_TM_RECV);
	assert_int_equal(wc.wr_id, 900 + i);
	assert_int_equal(wc.wc_flags & (IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID), 0);
	assert_int_equal(wc.byte_len, TMH_LEN + len);
	assert_int_equal(wc.tm.tag, 0);
	assert_int_equal(wc.tm.priv, 0);
	assert_int_equal(wc.qp_num, t->p.b->qp_num);
	assert_int_equal(h->opcode, IBV_TMH_EAGER);
	assert_int_equal(be64toh(h->tag), tag);
	assert_true(check_pattern(ubuf(t, i) + TMH_LEN, len, seed));
}

/* ---- creation and post-time rules (§2, §3) ---- */

static void tm_srq_create_refuses_caps_above_device_caps(void **state)
{
	struct ibv_srq_init_attr_ex attr;
	struct ibv_device_attr_ex dev;
	struct ibv_cq_ex *cq;
	struct ibv_srq *srq;

	(void)state;
	assert_int_equal(ibv_query_device_ex(B.ctx, NULL, &dev), 0);
	cq = new_cq_ex(&B, 16, WC_EX_FLAGS);
	memset(&attr, 0, sizeof(attr));
	attr.attr.max_wr = 16;
	attr.attr.max_sge = 1;
	attr.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_CQ |
			 IBV_SRQ_INIT_ATTR_TM;
	attr.srq_type = IBV_SRQT_TM;
	attr.pd = B.pd;
	attr.cq = ibv_cq_ex_to_cq(cq);
	attr.tm_cap.max_num_tags = dev.tm_caps.max_num_tags + 1;
	attr.tm_cap.max_ops = dev.tm_caps.max_ops;
	errno = 0;
	assert_null(ibv_create_srq_ex(B.ctx, &attr));
	assert_int_equal(errno, EINVAL);
	attr.tm_cap.max_num_tags = dev.tm_caps.max_num_tags;
	attr.tm_cap.max_ops = dev.tm_caps.max_ops + 1;
	errno = 0;
	assert_null(ibv_create_srq_ex(B.ctx, &attr));
	assert_int_equal(errno, EINVAL);
	/* Exactly the caps is fine. */
	attr.tm_cap.max_ops = dev.tm_caps.max_ops;
	srq = ibv_create_srq_ex(B.ctx, &attr);
	assert_non_null(srq);
	track_srq(srq);
}

static void tm_ops_on_basic_srq_einval(void **state)
{
	struct ibv_ops_wr op, *bad = NULL;
	struct ibv_srq *srq;

	(void)state;
	srq = new_srq(&B, 8, 1);
	memset(&op, 0, sizeof(op));
	op.opcode = IBV_WR_TAG_SYNC;
	assert_int_equal(ibv_post_srq_ops(srq, &op, &bad), EINVAL);
	assert_ptr_equal(bad, &op);
}

static void tm_ops_unknown_opcode_einval(void **state)
{
	struct tmq t;

	(void)state;
	tm_setup(&t, 16, 16);
	assert_int_equal(tm_op(&t, (enum ibv_ops_wr_opcode)77, 0, 1, SIG, 0), EINVAL);
	expect_quiet_ex(t.cq);
}

static void tm_del_of_unallocated_handle_einval(void **state)
{
	struct tmq t;

	(void)state;
	tm_setup(&t, 16, 16);
	assert_int_equal(tm_op(&t, IBV_WR_TAG_DEL, 3, 1, SIG, 0), EINVAL);
	assert_int_equal(tm_op(&t, IBV_WR_TAG_DEL, 123456, 1, SIG, 0), EINVAL);
	expect_quiet_ex(t.cq);
}

static void tm_add_num_sge_above_max_einval_earlier_ops_stay(void **state)
{
	struct ibv_ops_wr op[3], *bad = NULL;
	struct ibv_sge sge[2];
	struct wc_ex wc;
	struct tmq t;

	(void)state;
	tm_setup(&t, 16, 16);
	sge[0] = (struct ibv_sge){(uintptr_t)tbuf(&t, 0), 64, t.tmr->lkey};
	sge[1] = (struct ibv_sge){(uintptr_t)tbuf(&t, 1), 64, t.tmr->lkey};
	memset(op, 0, sizeof(op));
	for (int i = 0; i < 3; i++) {
		op[i].wr_id = 40 + i;
		op[i].opcode = IBV_WR_TAG_ADD;
		op[i].flags = SIG;
		op[i].tm.add.tag = 40 + i;
		op[i].tm.add.recv_wr_id = 500;
		op[i].tm.add.mask = EXACT;
		op[i].tm.add.sg_list = sge;
		op[i].tm.add.num_sge = 1;
		op[i].next = i < 2 ? &op[i + 1] : NULL;
	}
	op[1].tm.add.num_sge = 2; /* the SRQ was created with max_sge 1 */
	assert_int_equal(ibv_post_srq_ops(t.srq, op, &bad), EINVAL);
	assert_ptr_equal(bad, &op[1]);
	expect_op(&t, IBV_WC_TM_ADD, 40, IBV_WC_SUCCESS, &wc);
	expect_quiet_ex(t.cq);
	/* Only op[0]'s entry exists: a message tagged 42 is unexpected. */
	post_plain(&t, 0);
	tm_send(&t, IBV_TMH_EAGER, 0, 42, 10, 1);
	expect_unexpected(&t, 0, 42, 10, 1);
	tm_send(&t, IBV_TMH_EAGER, 0, 40, 10, 2);
	expect_matched(&t, 0, 40, 0, 10, 2);
}

static void tm_list_full_enomem_at_exactly_max_num_tags(void **state)
{
	enum { TAGS = 60 }; /* not a power of two: the count is exact */
	struct ibv_ops_wr op[TAGS + 1], *bad = NULL;
	uint32_t handle;
	struct wc_ex wc;
	struct tmq t;

	(void)state;
	tm_setup(&t, TAGS, 2 * TAGS);
	memset(op, 0, sizeof(op));
	for (int i = 0; i <= TAGS; i++) {
		/* Zero-length entries are legal (doc/guides/srq.md §3). */
		op[i].wr_id = i;
		op[i].opcode = IBV_WR_TAG_ADD;
		op[i].tm.handle = UINT32_MAX;
		op[i].tm.add.tag = 1000 + i;
		op[i].tm.add.recv_wr_id = 3000 + i;
		op[i].tm.add.mask = EXACT;
		op[i].tm.add.num_sge = 0;
		op[i].next = i < TAGS ? &op[i + 1] : NULL;
	}
	assert_int_equal(ibv_post_srq_ops(t.srq, op, &bad), ENOMEM);
	assert_ptr_equal(bad, &op[TAGS]);
	for (int i = 0; i < TAGS; i++)
		for (int j = 0; j < i; j++)
			assert_int_not_equal(op[i].tm.handle, op[j].tm.handle);
	assert_int_equal(tm_add(&t, 1, EXACT, 0, 64, 1, SIG, 0, &handle), ENOMEM);
	/* An entry's end frees its handle: one more ADD fits, and no second. */
	assert_int_equal(tm_op(&t, IBV_WR_TAG_DEL, op[5].tm.handle, 7, SIG, 0), 0);
	expect_op(&t, IBV_WC_TM_DEL, 7, IBV_WC_SUCCESS, &wc);
	assert_int_equal(tm_add(&t, 2, EXACT, 0, 64, 2, 0, 0, &handle), 0);
	assert_int_equal(tm_add(&t, 3, EXACT, 0, 64, 3, 0, 0, &handle), ENOMEM);
	/* A zero-length entry takes a message with no payload after the TMH. */
	tm_send(&t, IBV_TMH_EAGER, 9, 1000 + 6, 0, 4);
	expect_ex(t.cq, &wc);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_TM_RECV);
	assert_int_equal(wc.wr_id, 3006);
	assert_int_equal(wc.wc_flags & TM_FLAGS, IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID);
	assert_int_equal(wc.byte_len, 0);
	assert_int_equal(wc.tm.tag, 1006);
	assert_int_equal(wc.tm.priv, 9);
}

static void tm_max_ops_outstanding_enomem(void **state)
{
	enum { OPS = 8, CQE = 4, N = OPS + CQE + 1 };
	struct ibv_ops_wr op[N], *bad = NULL;
	struct wc_ex wc[N];
	struct ibv_cq_ex *cq;
	struct ibv_srq *srq;
	long idx;

	(void)state;
	/* Signaled ops need room in the CQ to execute: with nobody polling, at most CQE of
	 * them leave the outstanding count while the list is posted. */
	cq = new_cq_ex(&B, CQE, WC_EX_FLAGS);
	srq = new_tm_srq(&B, cq, 16, 16, OPS);
	memset(op, 0, sizeof(op));
	for (int i = 0; i < N; i++) {
		op[i].wr_id = i;
		op[i].opcode = IBV_WR_TAG_SYNC;
		op[i].flags = SIG;
		op[i].next = i < N - 1 ? &op[i + 1] : NULL;
	}
	assert_int_equal(ibv_post_srq_ops(srq, op, &bad), ENOMEM);
	idx = bad - op;
	assert_true(idx >= OPS && idx <= OPS + CQE);
	/* Every op before the refused one runs, in order. */
	for (long i = 0; i < idx; i++) {
		expect_ex(cq, &wc[i]);
		assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
		assert_int_equal(wc[i].opcode, IBV_WC_TM_SYNC);
		assert_int_equal(wc[i].wr_id, i);
	}
	expect_quiet_ex(cq);
}

/* ---- matching (§4) ---- */

static void tm_expected_eager_single_packet(void **state)
{
	const uint64_t tag = 0x1122334455667788ull;
	uint32_t handle = UINT32_MAX;
	struct wc_ex wc;
	struct tmq t;

	(void)state;
	tm_setup(&t, 16, 16);
	assert_int_equal(tm_add(&t, tag, EXACT, 0, BUF, 1, SIG, 0, &handle), 0);
	assert_int_not_equal(handle, UINT32_MAX);
	expect_op(&t, IBV_WC_TM_ADD, 1, IBV_WC_SUCCESS, &wc);
	assert_int_equal(wc.wc_flags & IBV_WC_TM_SYNC_REQ, 0);
	tm_send(&t, IBV_TMH_EAGER, 0xa1b2c3d4, tag, 200, 11);
	expect_matched(&t, 0, tag, 0xa1b2c3d4, 200, 11);
	expect_quiet_ex(t.cq);
}

/*
 * §2: one CQ carries the completions of twenty TM SRQs (a device runs 64, on any
 * CQs): each matches its own messages, and each gets back the handle of every entry
 * whose completion is polled. One entry each, so a second ADD finds room only if the
 * first entry came back to its own SRQ.
 */
static void tm_srqs_twenty_on_one_cq_match_and_release_their_own(void **state)
{
	enum { N = 20 };
	struct tmq t[N];
	uint32_t handle;
	struct wc_ex wc;

	(void)state;
	tm_setup(&t[0], 1, 16);
	for (int i = 1; i < N; i++) {
		t[i] = t[0];
		t[i].srq = new_tm_srq(&B, t[0].cq, 64, 1, 16);
		t[i].p.a = new_qp(&A, IBV_QPT_RC, t[0].p.acq, t[0].p.acq, NULL, 64, 16);
		t[i].p.b = new_qp(&B, IBV_QPT_RC, t[0].p.bcq, ibv_cq_ex_to_cq(t[0].cq), t[i].srq,
				  0, 0);
		connect_rc(t[i].p.a, t[i].p.b, &conn_default);
	}
	for (uint32_t round = 0; round < 2; round++) {
		for (uint32_t i = 0; i < N; i++) {
			const uint64_t tag = 0x100 * round + i;

			memset(tbuf(&t[i], 0), 0, BUF); /* every SRQ's entry is buffer 0 */
			assert_int_equal(tm_add(&t[i], tag, EXACT, 0, BUF, i, SIG, 0, &handle), 0);
			expect_op(&t[i], IBV_WC_TM_ADD, i, IBV_WC_SUCCESS, &wc);
			tm_send(&t[i], IBV_TMH_EAGER, i, tag, 100 + i, i + 1);
			expect_matched(&t[i], 0, tag, i, 100 + i, i + 1);
		}
	}
	expect_quiet_ex(t[0].cq);
}

static void tm_expected_eager_through_legacy_poll_cq(void **state)
{
	uint32_t handle;
	struct ibv_wc wc;
	struct tmq t;

	(void)state;
	tm_setup(&t, 16, 16);
	assert_int_equal(tm_add(&t, 77, EXACT, 0, BUF, 1, SIG, 0, &handle), 0);
	expect_wc(ibv_cq_ex_to_cq(t.cq), &wc);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_TM_ADD);
	assert_int_equal(wc.wr_id, 1);
	tm_send(&t, IBV_TMH_EAGER, 5, 77, 300, 12);
	expect_wc(ibv_cq_ex_to_cq(t.cq), &wc);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_TM_RECV);
	assert_int_equal(wc.wr_id, 500);
	assert_int_equal(wc.wc_flags & TM_FLAGS, IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID);
	assert_int_equal(wc.byte_len, 300);
	assert_int_equal(wc.qp_num, t.p.b->qp_num);
	assert_true(check_pattern(tbuf(&t, 0), 300, 12));
	/* The entry ended with that completion: its handle is free again. */
	assert_int_equal(tm_op(&t, IBV_WR_TAG_DEL, handle, 2, SIG, 0), EINVAL);
}

static void tm_expected_eager_multi_packet_match_then_data_valid(void **state)
{
	const uint32_t len = 3 * TEST_MTU_BYTES;
	uint32_t handle;
	struct wc_ex wc;
	struct tmq t;

	(void)state;
	tm_setup(&t, 16, 16);
	assert_int_equal(tm_add(&t, 0xbeef, EXACT, 2, BUF, 1, 0, 0, &handle), 0);
	tm_send(&t, IBV_TMH_EAGER, 0x5151, 0xbeef, len, 13);
	expect_ex(t.cq, &wc);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_TM_RECV);
	assert_int_equal(wc.wr_id, 502);
	assert_int_equal(wc.wc_flags & TM_FLAGS, IBV_WC_TM_MATCH);
	assert_int_equal(wc.tm.tag, 0xbeef);
	assert_int_equal(wc.tm.priv, 0x5151);
	expect_ex(t.cq, &wc);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_TM_RECV);
	assert_int_equal(wc.wr_id, 502);
	assert_int_equal(wc.wc_flags & (IBV_WC_TM_DATA_VALID | IBV_WC_TM_SYNC_REQ),
			 IBV_WC_TM_DATA_VALID);
	assert_int_equal(wc.byte_len, len);
	assert_true(check_pattern(tbuf(&t, 2), len, 13));
	assert_int_equal(tbuf(&t, 2)[len], 0);
	expect_quiet_ex(t.cq);
}

static void tm_unexpected_takes_plain_wr_whole_message(void **state)
{
	struct tmq t;

	(void)state;
	tm_setup(&t, 16, 16);
	post_plain(&t, 0);
	post_plain(&t, 1);
	tm_send(&t, IBV_TMH_EAGER, 3, 0x55, 100, 14);
	expect_unexpected(&t, 0, 0x55, 100, 14);
	tm_send(&t, IBV_TMH_EAGER, 3, 0x56, 0, 15);
	expect_unexpected(&t, 1, 0x56, 0, 15);
	expect_quiet_ex(t.cq);
}

static void tm_no_tag_takes_plain_wr_whole_message(void **state)
{
	const struct ibv_tmh *h;
	uint32_t handle;
	struct wc_ex wc;
	struct tmq t;

	(void)state;
	tm_setup(&t, 16, 16);
	/* A listed entry whose tag the NO_TAG header carries is not consumed. */
	assert_int_equal(tm_add(&t, 0x66, EXACT, 0, BUF, 1, 0, 0, &handle), 0);
	post_plain(&t, 0);
	tm_send(&t, IBV_TMH_NO_TAG, 0, 0x66, 150, 16);
	expect_ex(t.cq, &wc);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_TM_NO_TAG);
	assert_int_equal(wc.wr_id, 900);
	assert_int_equal(wc.wc_flags & TM_FLAGS, 0);
	assert_int_equal(wc.byte_len, TMH_LEN + 150);
	h = (const void *)ubuf(&t, 0);
	assert_int_equal(h->opcode, IBV_TMH_NO_TAG);
	assert_true(check_pattern(ubuf(&t, 0) + TMH_LEN, 150, 16));
	tm_send(&t, IBV_TMH_EAGER, 0, 0x66, 10, 17);
	expect_matched(&t, 0, 0x66, 0, 10, 17);
}

static void tm_short_or_unknown_tmh_is_no_tag(void **state)
{
	uint32_t handle;
	struct wc_ex wc;
	struct tmq t;

	(void)state;
	tm_setup(&t, 16, 16);
	assert_int_equal(tm_add(&t, 0, 0, 0, BUF, 1, 0, 0, &handle), 0); /* matches any tag */
	post_plain(&t, 0);
	post_plain(&t, 1);
	/* Shorter than a TMH. */
	fill_pattern(t.smr->addr, 8, 18);
	((uint8_t *)t.smr->addr)[0] = IBV_TMH_EAGER;
	assert_int_equal(post_send(t.p.a, IBV_WR_SEND, 1, t.smr->addr, 8, t.smr->lkey,
				   IBV_SEND_SIGNALED), 0);
	expect_send_ok(t.p.acq, 1, IBV_WC_SEND);
	expect_ex(t.cq, &wc);
	assert_int_equal(wc.opcode, IBV_WC_TM_NO_TAG);
	assert_int_equal(wc.wr_id, 900);
	assert_int_equal(wc.byte_len, 8);
	/* An opcode that is neither EAGER nor RNDV. */
	tm_send(&t, 0x7f, 0, 5, 20, 19);
	expect_ex(t.cq, &wc);
	assert_int_equal(wc.opcode, IBV_WC_TM_NO_TAG);
	assert_int_equal(wc.wr_id, 901);
	assert_int_equal(wc.byte_len, TMH_LEN + 20);
	expect_quiet_ex(t.cq);
}

static void tm_wildcard_earliest_added_wins(void **state)
{
	uint32_t h[6];
	struct tmq t;

	(void)state;
	tm_setup(&t, 16, 16);
	/* Wildcard first, then exact, then match-all: one message each, in add order. */
	assert_int_equal(tm_add(&t, 0x100, 0xff00, 0, BUF, 1, 0, 0, &h[0]), 0);
	assert_int_equal(tm_add(&t, 0x142, EXACT, 1, BUF, 2, 0, 0, &h[1]), 0);
	assert_int_equal(tm_add(&t, 0, 0, 2, BUF, 3, 0, 0, &h[2]), 0);
	tm_send(&t, IBV_TMH_EAGER, 1, 0x142, 40, 21);
	expect_matched(&t, 0, 0x142, 1, 40, 21);
	tm_send(&t, IBV_TMH_EAGER, 2, 0x142, 40, 22);
	expect_matched(&t, 1, 0x142, 2, 40, 22);
	tm_send(&t, IBV_TMH_EAGER, 3, 0x142, 40, 23);
	expect_matched(&t, 2, 0x142, 3, 40, 23);
	/* Exact first, then a wildcard that also matches: the exact one wins. */
	assert_int_equal(tm_add(&t, 0x7, EXACT, 3, BUF, 4, 0, 0, &h[3]), 0);
	assert_int_equal(tm_add(&t, 0, 0, 4, BUF, 5, 0, 0, &h[4]), 0);
	tm_send(&t, IBV_TMH_EAGER, 4, 0x7, 40, 24);
	expect_matched(&t, 3, 0x7, 4, 40, 24);
	/* The mask decides: 0x242 is outside 0x1XX, and goes to the match-all entry. */
	assert_int_equal(tm_add(&t, 0x100, 0xff00, 5, BUF, 6, 0, 0, &h[5]), 0);
	tm_send(&t, IBV_TMH_EAGER, 5, 0x242, 40, 25);
	expect_matched(&t, 4, 0x242, 5, 40, 25);
	tm_send(&t, IBV_TMH_EAGER, 6, 0x1ff, 40, 26);
	expect_matched(&t, 5, 0x1ff, 6, 40, 26);
	expect_quiet_ex(t.cq);
}

static void tm_eager_larger_than_buffer_loc_len_err(void **state)
{
	struct ibv_wc swc;
	uint32_t handle;
	struct wc_ex wc;
	struct tmq t;

	(void)state;
	tm_setup(&t, 16, 16);
	assert_int_equal(tm_add(&t, 0x99, EXACT, 0, 64, 1, 0, 0, &handle), 0);
	fill_pattern((uint8_t *)t.smr->addr + TMH_LEN, 200, 27);
	memset(t.smr->addr, 0, TMH_LEN);
	((struct ibv_tmh *)t.smr->addr)->opcode = IBV_TMH_EAGER;
	((struct ibv_tmh *)t.smr->addr)->tag = htobe64(0x99);
	assert_int_equal(post_send(t.p.a, IBV_WR_SEND, 1, t.smr->addr, TMH_LEN + 200,
				   t.smr->lkey, IBV_SEND_SIGNALED), 0);
	expect_ex(t.cq, &wc);
	assert_int_equal(wc.status, IBV_WC_LOC_LEN_ERR);
	assert_int_equal(wc.opcode, IBV_WC_TM_RECV);
	assert_int_equal(wc.wr_id, 500);
	/* Not silent at the sender either. */
	expect_wc(t.p.acq, &swc);
	assert_int_equal(swc.wr_id, 1);
	assert_int_equal(swc.status, IBV_WC_REM_INV_REQ_ERR);
	/* The entry was released with its error completion. */
	assert_int_equal(tm_op(&t, IBV_WR_TAG_DEL, handle, 2, SIG, 0), EINVAL);
	for (int i = 64; i < 128; i++)
		assert_int_equal(tbuf(&t, 0)[i], 0);
}

static void tm_rndv_small_buffer_places_headers_rndv_incomplete(void **state)
{
	const uint32_t hdr = 16, total = TMH_LEN + sizeof(struct ibv_rvh) + hdr;
	struct ibv_mr *data;
	struct ibv_tmh *h;
	struct ibv_rvh *r;
	uint32_t handle;
	struct wc_ex wc;
	struct tmq t;

	(void)state;
	tm_setup(&t, 16, 16);
	data = new_mr(&A, 4096, IBV_ACCESS_REMOTE_READ);
	assert_int_equal(tm_add(&t, 0x4444, EXACT, 0, 256, 1, 0, 0, &handle), 0);
	h = t.smr->addr;
	r = (void *)(h + 1);
	memset(h, 0, total);
	h->opcode = IBV_TMH_RNDV;
	h->app_ctx = htobe32(0x3131);
	h->tag = htobe64(0x4444);
	r->va = htobe64((uintptr_t)data->addr);
	r->rkey = htobe32(data->rkey);
	r->len = htobe32(4096); /* more than the 256-byte entry holds */
	fill_pattern(r + 1, hdr, 28);
	assert_int_equal(post_send(t.p.a, IBV_WR_SEND, 1, h, total, t.smr->lkey,
				   IBV_SEND_SIGNALED), 0);
	expect_send_ok(t.p.acq, 1, IBV_WC_SEND);
	expect_ex(t.cq, &wc);
	assert_int_equal(wc.status, IBV_WC_TM_RNDV_INCOMPLETE);
	assert_int_equal(wc.opcode, IBV_WC_TM_RECV);
	assert_int_equal(wc.wr_id, 500);
	assert_int_equal(wc.wc_flags & (IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID),
			 IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID);
	assert_int_equal(wc.tm.tag, 0x4444);
	assert_int_equal(wc.tm.priv, 0x3131);
	/* Headers placed so software can finish the transfer. */
	assert_memory_equal(tbuf(&t, 0), h, total);
}

/* ---- ops and phases (§3, §5) ---- */

static void tm_add_not_eligible_until_sync_reports_unexpected(void **state)
{
	uint32_t handle;
	struct wc_ex wc;
	struct tmq t;

	(void)state;
	tm_setup(&t, 16, 16);
	for (unsigned int i = 0; i < 3; i++)
		post_plain(&t, i);
	tm_send(&t, IBV_TMH_EAGER, 0, 7, 30, 31);
	expect_unexpected(&t, 0, 7, 30, 31); /* U = 1 */
	/* Executed with S = 0 != U: need = 1, and the completion asks for a SYNC. */
	assert_int_equal(tm_add(&t, 7, EXACT, 0, BUF, 1, SIG, 0, &handle), 0);
	expect_op(&t, IBV_WC_TM_ADD, 1, IBV_WC_SUCCESS, &wc);
	assert_int_equal(wc.wc_flags & IBV_WC_TM_SYNC_REQ, IBV_WC_TM_SYNC_REQ);
	tm_send(&t, IBV_TMH_EAGER, 0, 7, 30, 32);
	expect_unexpected(&t, 1, 7, 30, 32); /* skipped; U = 2 */
	/* S = 0 is still below need. */
	assert_int_equal(tm_op(&t, IBV_WR_TAG_SYNC, 0, 2, SIG | IBV_OPS_TM_SYNC, 0), 0);
	expect_op(&t, IBV_WC_TM_SYNC, 2, IBV_WC_SUCCESS, &wc);
	tm_send(&t, IBV_TMH_EAGER, 0, 7, 30, 33);
	expect_unexpected(&t, 2, 7, 30, 33); /* U = 3 */
	/* S = 1 >= need: eligible. An unsignaled SYNC writes no completion. */
	assert_int_equal(tm_op(&t, IBV_WR_TAG_SYNC, 0, 3, IBV_OPS_TM_SYNC, 1), 0);
	expect_quiet_ex(t.cq);
	tm_send(&t, IBV_TMH_EAGER, 0x77, 7, 30, 34);
	expect_matched(&t, 0, 7, 0x77, 30, 34);
}

static void tm_add_with_sync_equal_to_u_is_eligible_at_once(void **state)
{
	uint32_t handle;
	struct wc_ex wc;
	struct tmq t;

	(void)state;
	tm_setup(&t, 16, 16);
	post_plain(&t, 0);
	tm_send(&t, IBV_TMH_EAGER, 0, 8, 20, 35);
	expect_unexpected(&t, 0, 8, 20, 35); /* U = 1 */
	assert_int_equal(tm_add(&t, 8, EXACT, 0, BUF, 1, SIG | IBV_OPS_TM_SYNC, 1, &handle), 0);
	expect_op(&t, IBV_WC_TM_ADD, 1, IBV_WC_SUCCESS, &wc);
	assert_int_equal(wc.wc_flags & IBV_WC_TM_SYNC_REQ, 0);
	tm_send(&t, IBV_TMH_EAGER, 0, 8, 20, 36);
	expect_matched(&t, 0, 8, 0, 20, 36);
}

static void tm_del_removes_entry_then_handle_is_free(void **state)
{
	uint32_t handle;
	struct wc_ex wc;
	struct tmq t;

	(void)state;
	tm_setup(&t, 16, 16);
	assert_int_equal(tm_add(&t, 9, EXACT, 0, BUF, 1, 0, 0, &handle), 0);
	assert_int_equal(tm_op(&t, IBV_WR_TAG_DEL, handle, 2, SIG, 0), 0);
	expect_op(&t, IBV_WC_TM_DEL, 2, IBV_WC_SUCCESS, &wc);
	assert_int_equal(wc.wc_flags & IBV_WC_TM_SYNC_REQ, 0);
	/* Gone from the list, and its handle with it. */
	post_plain(&t, 0);
	tm_send(&t, IBV_TMH_EAGER, 0, 9, 10, 37);
	expect_unexpected(&t, 0, 9, 10, 37);
	assert_int_equal(tm_op(&t, IBV_WR_TAG_DEL, handle, 3, SIG, 0), EINVAL);
	for (int i = 0; i < 10; i++)
		assert_int_equal(tbuf(&t, 0)[i], 0);
}

/* A DEL that the device executes after a message consumed the entry. */
static void del_after_consumption(int flags)
{
	uint32_t handle;
	struct wc_ex wc;
	struct tmq t;

	tm_setup(&t, 16, 16);
	assert_int_equal(tm_add(&t, 10, EXACT, 0, BUF, 1, 0, 0, &handle), 0);
	tm_send(&t, IBV_TMH_EAGER, 0, 10, 10, 38); /* acknowledged: consumed */
	/* Not polled yet, so the handle is still allocated and the DEL is legal. */
	assert_int_equal(tm_op(&t, IBV_WR_TAG_DEL, handle, 2, flags, 0), 0);
	expect_matched(&t, 0, 10, 0, 10, 38);
	expect_op(&t, IBV_WC_TM_DEL, 2, IBV_WC_TM_ERR, &wc);
	expect_quiet_ex(t.cq);
	assert_int_equal(tm_op(&t, IBV_WR_TAG_DEL, handle, 3, SIG, 0), EINVAL);
}

static void tm_del_racing_consumption_completes_tm_err(void **state)
{
	(void)state;
	del_after_consumption(SIG);
}

static void tm_unsignaled_del_racing_consumption_still_reports_tm_err(void **state)
{
	(void)state;
	del_after_consumption(0);
}

static void tm_del_after_match_of_multi_packet_tm_err(void **state)
{
	uint32_t handle;
	struct wc_ex wc;
	struct tmq t;

	(void)state;
	tm_setup(&t, 16, 16);
	assert_int_equal(tm_add(&t, 11, EXACT, 0, BUF, 1, 0, 0, &handle), 0);
	tm_send(&t, IBV_TMH_EAGER, 0, 11, 2000, 39);
	expect_ex(t.cq, &wc);
	assert_int_equal(wc.wc_flags & TM_FLAGS, IBV_WC_TM_MATCH);
	assert_int_equal(tm_op(&t, IBV_WR_TAG_DEL, handle, 2, SIG, 0), 0);
	expect_ex(t.cq, &wc);
	assert_int_equal(wc.wc_flags & IBV_WC_TM_DATA_VALID, IBV_WC_TM_DATA_VALID);
	expect_op(&t, IBV_WC_TM_DEL, 2, IBV_WC_TM_ERR, &wc);
}

static void tm_unsignaled_ops_write_no_completion(void **state)
{
	uint32_t handle;
	struct tmq t;

	(void)state;
	tm_setup(&t, 16, 16);
	assert_int_equal(tm_add(&t, 12, EXACT, 0, BUF, 1, 0, 0, &handle), 0);
	assert_int_equal(tm_op(&t, IBV_WR_TAG_DEL, handle, 2, 0, 0), 0);
	assert_int_equal(tm_op(&t, IBV_WR_TAG_SYNC, 0, 3, 0, 0), 0);
	expect_quiet_ex(t.cq);
	/* The unsignaled DEL ended the entry: gone, handle free. */
	post_plain(&t, 0);
	tm_send(&t, IBV_TMH_EAGER, 0, 12, 10, 40);
	expect_unexpected(&t, 0, 12, 10, 40);
	assert_int_equal(tm_op(&t, IBV_WR_TAG_DEL, handle, 4, SIG, 0), EINVAL);
}

static void tm_freed_handles_reused_oldest_first(void **state)
{
	uint32_t h[4], again[2], fresh;
	struct wc_ex wc;
	struct tmq t;

	(void)state;
	tm_setup(&t, 4, 16);
	for (int i = 0; i < 4; i++)
		assert_int_equal(tm_add(&t, 60 + i, EXACT, i, BUF, i, 0, 0, &h[i]), 0);
	assert_int_equal(tm_op(&t, IBV_WR_TAG_DEL, h[1], 1, SIG, 0), 0);
	expect_op(&t, IBV_WC_TM_DEL, 1, IBV_WC_SUCCESS, &wc);
	assert_int_equal(tm_op(&t, IBV_WR_TAG_DEL, h[2], 2, SIG, 0), 0);
	expect_op(&t, IBV_WC_TM_DEL, 2, IBV_WC_SUCCESS, &wc);
	assert_int_equal(tm_add(&t, 70, EXACT, 4, BUF, 3, 0, 0, &again[0]), 0);
	assert_int_equal(tm_add(&t, 71, EXACT, 5, BUF, 4, 0, 0, &again[1]), 0);
	assert_int_equal(again[0], h[1]);
	assert_int_equal(again[1], h[2]);
	/* With handles to spare, a freed one is not handed out again at once. */
	tm_setup(&t, 16, 16);
	assert_int_equal(tm_add(&t, 80, EXACT, 0, BUF, 5, 0, 0, &h[0]), 0);
	assert_int_equal(tm_op(&t, IBV_WR_TAG_DEL, h[0], 6, SIG, 0), 0);
	expect_op(&t, IBV_WC_TM_DEL, 6, IBV_WC_SUCCESS, &wc);
	assert_int_equal(tm_add(&t, 81, EXACT, 1, BUF, 7, 0, 0, &fresh), 0);
	assert_int_not_equal(fresh, h[0]);
}

static void tm_del_completion_asks_for_sync_when_s_differs_from_u(void **state)
{
	uint32_t handle;
	struct wc_ex wc;
	struct tmq t;

	(void)state;
	tm_setup(&t, 16, 16);
	assert_int_equal(tm_add(&t, 90, EXACT, 0, BUF, 1, 0, 0, &handle), 0);
	post_plain(&t, 0);
	tm_send(&t, IBV_TMH_EAGER, 0, 91, 4, 41);
	expect_unexpected(&t, 0, 91, 4, 41); /* U = 1, S = 0 */
	assert_int_equal(tm_op(&t, IBV_WR_TAG_DEL, handle, 2, SIG, 0), 0);
	expect_op(&t, IBV_WC_TM_DEL, 2, IBV_WC_SUCCESS, &wc);
	assert_int_equal(wc.wc_flags & IBV_WC_TM_SYNC_REQ, IBV_WC_TM_SYNC_REQ);
	/* Once software reports S = U the next op's completion no longer asks. */
	assert_int_equal(tm_add(&t, 92, EXACT, 1, BUF, 3, SIG | IBV_OPS_TM_SYNC, 1, &handle), 0);
	expect_op(&t, IBV_WC_TM_ADD, 3, IBV_WC_SUCCESS, &wc);
	assert_int_equal(wc.wc_flags & IBV_WC_TM_SYNC_REQ, 0);
}

/* Every completion waiting on @p cq, without waiting for more. */
static int drain_ex(struct ibv_cq_ex *cq, struct wc_ex *wc, int max)
{
	struct ibv_poll_cq_attr attr = {.comp_mask = 0};
	int got = 0;

	if (ibv_start_poll(cq, &attr) != 0)
		return 0;
	do {
		wc[got].status = cq->status;
		wc[got].wr_id = cq->wr_id;
		wc[got].opcode = ibv_wc_read_opcode(cq);
		wc[got].wc_flags = ibv_wc_read_wc_flags(cq);
		got++;
	} while (got < max && ibv_next_poll(cq) == 0);
	ibv_end_poll(cq);
	return got;
}

static void tm_unexpected_asks_for_sync_beyond_threshold(void **state)
{
	/* doc/guides/srq.md §5: U - S above the hardware's 2^14 (the default) sets SYNC_REQ. */
	enum { THRESHOLD = 16384, N = THRESHOLD + 2, WINDOW = 32 };
	uint32_t sent = 0, acked = 0, got = 0;
	uint64_t end = now_ms() + 20 * WAIT_MS;
	struct ibv_tmh *h;
	struct ibv_wc swc[WINDOW];
	struct wc_ex wc[WINDOW];
	struct tmq t;
	int n;

	(void)state;
	tm_setup(&t, 16, 16);
	h = t.smr->addr;
	memset(h, 0, sizeof(*h));
	h->opcode = IBV_TMH_EAGER;
	h->tag = htobe64(0xabc);
	while (got < N) {
		assert_true(now_ms() < end);
		while (sent < N && sent - got < WINDOW && sent - acked < WINDOW) {
			/* Every message lands in the same buffer: only completions matter. */
			assert_int_equal(post_srq_recv(t.srq, sent, ubuf(&t, 0), BUF,
						       t.umr->lkey), 0);
			assert_int_equal(post_send(t.p.a, IBV_WR_SEND, sent, h, TMH_LEN,
						   t.smr->lkey, IBV_SEND_SIGNALED), 0);
			sent++;
		}
		n = ibv_poll_cq(t.p.acq, WINDOW, swc);
		assert_true(n >= 0);
		for (int i = 0; i < n; i++)
			assert_int_equal(swc[i].status, IBV_WC_SUCCESS);
		acked += (uint32_t)n;
		n = drain_ex(t.cq, wc, WINDOW);
		for (int i = 0; i < n; i++, got++) {
			/* The (got + 1)-th unexpected message: U = got + 1, S = 0. */
			assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
			assert_int_equal(wc[i].opcode, IBV_WC_TM_RECV);
			assert_int_equal(wc[i].wr_id, got);
			assert_int_equal(wc[i].wc_flags & (IBV_WC_TM_MATCH |
							   IBV_WC_TM_DATA_VALID), 0);
			if (got + 1 > THRESHOLD)
				assert_int_equal(wc[i].wc_flags & IBV_WC_TM_SYNC_REQ,
						 IBV_WC_TM_SYNC_REQ);
			else
				assert_int_equal(wc[i].wc_flags & IBV_WC_TM_SYNC_REQ, 0);
		}
	}
}

/* ---- introspection (dpv_verbs.h) ---- */

/* dpv_verbs_tm_query() and dpv_verbs_tm_tags() show what the device holds: entries
 * listed and their eligibility, U and S, and refuse a basic SRQ. */
static void tm_introspection_shows_tag_list_and_phases(void **state)
{
	struct dpv_verbs_tm_tag tags[8];
	struct dpv_verbs_tm_state st;
	struct ibv_srq *basic;
	struct tmq t;
	struct wc_ex wc;
	uint32_t h0, h1, h2;

	(void)state;
	tm_setup(&t, 16, 8);
	basic = new_srq(&B, 4, 1);
	assert_int_equal(dpv_verbs_tm_query(basic, &st), EINVAL);
	assert_int_equal(dpv_verbs_tm_query(NULL, &st), EINVAL);
	assert_int_equal(dpv_verbs_tm_query(t.srq, NULL), EINVAL);
	assert_int_equal(dpv_verbs_tm_tags(basic, 0, tags, 8), -EINVAL);
	assert_int_equal(dpv_verbs_tm_tags(t.srq, 0, NULL, 8), -EINVAL);
	assert_int_equal(dpv_verbs_tm_tags(t.srq, 0, NULL, 0), 0);

	assert_int_equal(tm_add(&t, 0x10, EXACT, 0, BUF, 1, SIG, 0, &h0), 0);
	assert_int_equal(tm_add(&t, 0x20, 0xf0, 1, 256, 2, SIG, 0, &h1), 0);
	expect_op(&t, IBV_WC_TM_ADD, 1, IBV_WC_SUCCESS, &wc);
	expect_op(&t, IBV_WC_TM_ADD, 2, IBV_WC_SUCCESS, &wc);
	post_plain(&t, 0);
	tm_send(&t, IBV_TMH_EAGER, 7, 0x99, 8, 3);
	expect_unexpected(&t, 0, 0x99, 8, 3);
	/* Added after one unexpected message and without a SYNC: not eligible yet. */
	assert_int_equal(tm_add(&t, 0x30, EXACT, 2, 64, 4, SIG, 0, &h2), 0);
	expect_op(&t, IBV_WC_TM_ADD, 4, IBV_WC_SUCCESS, &wc);
	assert_true(wc.wc_flags & IBV_WC_TM_SYNC_REQ);

	memset(&st, 0xa5, sizeof(st));
	assert_int_equal(dpv_verbs_tm_query(t.srq, &st), 0);
	assert_int_equal(st.max_num_tags, 16);
	assert_int_equal(st.max_ops, 8);
	assert_int_equal(st.listed, 3);
	assert_int_equal(st.allocated, 3);
	assert_int_equal(st.ops_outstanding, 0);
	assert_int_equal(st.unexpected, 1);
	assert_int_equal(st.synced, 0);
	assert_int_equal(st.adds, 3);
	assert_int_equal(st.unexpected_msgs, 1);
	assert_int_equal(st.expected, 0);

	memset(tags, 0xa5, sizeof(tags));
	assert_int_equal(dpv_verbs_tm_tags(t.srq, 0, tags, 8), 3);
	assert_int_equal(tags[0].handle, h0);
	assert_int_equal(tags[0].tag, 0x10);
	assert_int_equal(tags[0].mask, EXACT);
	assert_int_equal(tags[0].recv_wr_id, 500);
	assert_int_equal(tags[0].addr, (uintptr_t)tbuf(&t, 0));
	assert_int_equal(tags[0].length, BUF);
	assert_int_equal(tags[0].lkey, t.tmr->lkey);
	assert_int_equal(tags[0].total_length, BUF);
	assert_int_equal(tags[0].num_sge, 1);
	assert_int_equal(tags[0].eligible, 1);
	assert_int_equal(tags[1].handle, h1);
	assert_int_equal(tags[1].mask, 0xf0);
	assert_int_equal(tags[1].length, 256);
	assert_int_equal(tags[2].handle, h2);
	assert_int_equal(tags[2].need, 1);
	assert_int_equal(tags[2].eligible, 0);
	assert_true(tags[2].seq > tags[1].seq && tags[1].seq > tags[0].seq);
	/* In pieces, from a handle on. */
	assert_int_equal(dpv_verbs_tm_tags(t.srq, 0, tags, 1), 1);
	assert_int_equal(tags[0].handle, h0);
	assert_int_equal(dpv_verbs_tm_tags(t.srq, h0 + 1, tags, 8), 2);
	assert_int_equal(tags[0].handle, h1);

	/* A match takes its entry out of the list; a SYNC makes the last one eligible. */
	tm_send(&t, IBV_TMH_EAGER, 8, 0x10, 16, 5);
	expect_matched(&t, 0, 0x10, 8, 16, 5);
	assert_int_equal(tm_op(&t, IBV_WR_TAG_SYNC, 0, 6, SIG | IBV_OPS_TM_SYNC, 1), 0);
	expect_op(&t, IBV_WC_TM_SYNC, 6, IBV_WC_SUCCESS, &wc);
	assert_int_equal(dpv_verbs_tm_query(t.srq, &st), 0);
	assert_int_equal(st.listed, 2);
	assert_int_equal(st.allocated, 2);
	assert_int_equal(st.synced, 1);
	assert_int_equal(st.expected, 1);
	assert_int_equal(st.syncs, 1);
	assert_int_equal(dpv_verbs_tm_tags(t.srq, 0, tags, 8), 2);
	assert_int_equal(tags[0].handle, h1);
	assert_int_equal(tags[1].handle, h2);
	assert_int_equal(tags[1].eligible, 1);
}

int run_tm_tests(void)
{
	const struct CMUnitTest tests[] = {
		VT(tm_srq_create_refuses_caps_above_device_caps),
		VT(tm_ops_on_basic_srq_einval),
		VT(tm_ops_unknown_opcode_einval),
		VT(tm_del_of_unallocated_handle_einval),
		VT(tm_add_num_sge_above_max_einval_earlier_ops_stay),
		VT(tm_list_full_enomem_at_exactly_max_num_tags),
		VT(tm_max_ops_outstanding_enomem),
		VT(tm_expected_eager_single_packet),
		VT(tm_srqs_twenty_on_one_cq_match_and_release_their_own),
		VT(tm_expected_eager_through_legacy_poll_cq),
		VT(tm_expected_eager_multi_packet_match_then_data_valid),
		VT(tm_unexpected_takes_plain_wr_whole_message),
		VT(tm_no_tag_takes_plain_wr_whole_message),
		VT(tm_short_or_unknown_tmh_is_no_tag),
		VT(tm_wildcard_earliest_added_wins),
		VT(tm_eager_larger_than_buffer_loc_len_err),
		VT(tm_rndv_small_buffer_places_headers_rndv_incomplete),
		VT(tm_add_not_eligible_until_sync_reports_unexpected),
		VT(tm_add_with_sync_equal_to_u_is_eligible_at_once),
		VT(tm_del_removes_entry_then_handle_is_free),
		VT(tm_del_racing_consumption_completes_tm_err),
		VT(tm_unsignaled_del_racing_consumption_still_reports_tm_err),
		VT(tm_del_after_match_of_multi_packet_tm_err),
		VT(tm_unsignaled_ops_write_no_completion),
		VT(tm_freed_handles_reused_oldest_first),
		VT(tm_del_completion_asks_for_sync_when_s_differs_from_u),
		VT(tm_unexpected_asks_for_sync_beyond_threshold),
		VT(tm_introspection_shows_tag_list_and_phases),
	};

	return cmocka_run_group_tests_name("tm", tests, NULL, NULL);
}
