/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of lib/tm against dpv_tm.h: one test per rule of doc/guides/srq.md §3 (ops),
 * §4 (matching) and §5 (phases), each named after the rule it proves. Results the
 * engine writes (cqes, match decisions, parsed TMHs) are poisoned first, so a field the
 * engine forgets to fill fails the test instead of passing on a lucky zero.
 */
#include <endian.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <infiniband/tm_types.h>

#include "dpv_tm.h"

#define POISON 0xa5

/* A tag no test ever adds: messages carrying it are unexpected unless a wildcard is listed. */
#define ABSENT_TAG 0xabad1deaabad1deaull

#define SIG DPV_TM_OP_F_SIGNALED
#define SYNC DPV_TM_OP_F_SYNC

static struct dpv_tm *
tm_new(uint32_t max_num_tags, uint32_t max_ops, uint32_t max_sge, uint32_t sync_threshold)
{
	struct dpv_tm_config cfg = {
		.max_num_tags = max_num_tags,
		.max_ops = max_ops,
		.max_sge = max_sge,
		.sync_threshold = sync_threshold,
	};
	struct dpv_tm *tm = NULL;

	assert_int_equal(dpv_tm_create(&cfg, &tm), 0);
	assert_non_null(tm);
	return tm;
}

static struct dpv_tm_op
op_add(uint64_t tag, uint64_t mask, uint64_t recv_wr_id, uint8_t flags)
{
	return (struct dpv_tm_op){
		.wr_id = ~recv_wr_id,
		.tag = tag,
		.mask = mask,
		.recv_wr_id = recv_wr_id,
		.handle = UINT32_MAX,
		.opcode = DPV_TM_OP_ADD,
		.flags = flags,
	};
}

static struct dpv_tm_op
op_del(uint32_t handle, uint8_t flags)
{
	return (struct dpv_tm_op){
		.wr_id = 0xde1e7e00000000ull | handle,
		.handle = handle,
		.opcode = DPV_TM_OP_DEL,
		.flags = flags,
	};
}

static struct dpv_tm_op
op_sync(uint32_t s, uint8_t flags)
{
	return (struct dpv_tm_op){
		.wr_id = 0x5c000000000ull | s,
		.unexpected_cnt = s,
		.opcode = DPV_TM_OP_SYNC,
		.flags = flags,
	};
}

static struct dpv_tm_cqe
exec_op(struct dpv_tm *tm, const struct dpv_tm_op *op)
{
	struct dpv_tm_cqe cqe;

	memset(&cqe, POISON, sizeof(cqe));
	dpv_tm_exec(tm, op, &cqe);
	return cqe;
}

/* Post an op that must be accepted and execute it at once. */
static struct dpv_tm_cqe
run_op(struct dpv_tm *tm, struct dpv_tm_op *op)
{
	assert_int_equal(dpv_tm_post(tm, op), 0);
	return exec_op(tm, op);
}

static void
assert_cqe(const struct dpv_tm_cqe *cqe, const struct dpv_tm_op *op, uint8_t status,
	   uint8_t flags, bool visible, bool release)
{
	assert_int_equal(cqe->wr_id, op->wr_id);
	assert_int_equal(cqe->opcode, op->opcode);
	assert_int_equal(cqe->handle, op->opcode == DPV_TM_OP_SYNC ? 0 : op->handle);
	assert_int_equal(cqe->status, status);
	assert_int_equal(cqe->flags, flags);
	assert_int_equal(cqe->visible, visible);
	assert_int_equal(cqe->release, release);
}

/* A signaled ADD that must succeed while S == U; returns the entry's handle. */
static uint32_t
add_entry(struct dpv_tm *tm, uint64_t tag, uint64_t mask, uint64_t recv_wr_id)
{
	struct dpv_tm_op op = op_add(tag, mask, recv_wr_id, SIG);
	struct dpv_tm_cqe cqe = run_op(tm, &op);

	assert_cqe(&cqe, &op, DPV_TM_ST_SUCCESS, 0, true, false);
	return op.handle;
}

/* A signaled DEL of a listed entry, then the poll side's release of its handle. */
static void
del_entry(struct dpv_tm *tm, uint32_t handle)
{
	struct dpv_tm_op op = op_del(handle, SIG);
	struct dpv_tm_cqe cqe = run_op(tm, &op);

	assert_int_equal(cqe.status, DPV_TM_ST_SUCCESS);
	assert_true(cqe.release);
	assert_int_equal(dpv_tm_release(tm, handle), 0);
}

/* Report S with a signaled SYNC op. */
static void
report_s(struct dpv_tm *tm, uint32_t s)
{
	struct dpv_tm_op op = op_sync(s, SIG | SYNC);
	struct dpv_tm_cqe cqe = run_op(tm, &op);

	assert_cqe(&cqe, &op, DPV_TM_ST_SUCCESS, 0, true, false);
	assert_int_equal(dpv_tm_synced(tm), s);
}

static struct dpv_tm_match
deliver(struct dpv_tm *tm, uint8_t tmh_opcode, uint64_t tag, bool srq_wr_available)
{
	struct dpv_tm_tmh tmh = { .opcode = tmh_opcode, .app_ctx = 0x600d, .tag = tag };
	struct dpv_tm_match m;

	memset(&m, POISON, sizeof(m));
	dpv_tm_match(tm, &tmh, srq_wr_available, &m);
	return m;
}

static void
assert_expected(const struct dpv_tm_match *m, uint8_t kind, uint32_t handle,
		uint64_t recv_wr_id)
{
	assert_int_equal(m->kind, kind);
	assert_int_equal(m->flags, 0);
	assert_int_equal(m->handle, handle);
	assert_int_equal(m->recv_wr_id, recv_wr_id);
}

static void
assert_not_expected(const struct dpv_tm_match *m, uint8_t kind, uint8_t flags)
{
	assert_int_equal(m->kind, kind);
	assert_int_equal(m->flags, flags);
	assert_int_equal(m->handle, 0);
	assert_int_equal(m->recv_wr_id, 0);
	assert_null(m->sg_list);
	assert_int_equal(m->num_sge, 0);
}

/* An EAGER message of @p tag that must match @p handle. */
static void
match_entry(struct dpv_tm *tm, uint64_t tag, uint32_t handle, uint64_t recv_wr_id)
{
	struct dpv_tm_match m = deliver(tm, IBV_TMH_EAGER, tag, true);

	assert_expected(&m, DPV_TM_EXPECTED_EAGER, handle, recv_wr_id);
}

/* An EAGER message of @p tag that must be unexpected, with SYNC_REQ as given. */
static void
match_none(struct dpv_tm *tm, uint64_t tag, uint8_t flags)
{
	uint32_t u = dpv_tm_unexpected(tm);
	struct dpv_tm_match m = deliver(tm, IBV_TMH_EAGER, tag, true);

	assert_not_expected(&m, DPV_TM_UNEXPECTED, flags);
	assert_int_equal(dpv_tm_unexpected(tm), u + 1);
}

static void
push_unexpected(struct dpv_tm *tm, unsigned int n)
{
	while (n-- > 0) {
		struct dpv_tm_match m = deliver(tm, IBV_TMH_EAGER, ABSENT_TAG, true);

		assert_int_equal(m.kind, DPV_TM_UNEXPECTED);
	}
}

static struct dpv_tm_stats
stats(const struct dpv_tm *tm)
{
	struct dpv_tm_stats st;

	memset(&st, POISON, sizeof(st));
	dpv_tm_stats_get(tm, &st);
	return st;
}

/* xorshift64*: a fixed, portable sequence so a failure replays identically. */
static uint64_t
rng_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

/* ---- creation ---- */

static void
create_rejects_bad_config(void **state)
{
	static const struct dpv_tm_config bad[] = {
		{ .max_num_tags = 0, .max_ops = 1, .max_sge = 1 },
		{ .max_num_tags = DPV_TM_MAX_TAGS_LIMIT + 1, .max_ops = 1, .max_sge = 1 },
		{ .max_num_tags = UINT32_MAX, .max_ops = 1, .max_sge = 1 },
		{ .max_num_tags = 1, .max_ops = 0, .max_sge = 1 },
		{ .max_num_tags = 1, .max_ops = DPV_TM_MAX_OPS_LIMIT + 1, .max_sge = 1 },
		{ .max_num_tags = 1, .max_ops = UINT32_MAX, .max_sge = 1 },
		{ .max_num_tags = 1, .max_ops = 1, .max_sge = 0 },
		{ .max_num_tags = 1, .max_ops = 1, .max_sge = DPV_TM_MAX_SGE_LIMIT + 1 },
	};
	static const struct dpv_tm_config good[] = {
		{ .max_num_tags = 1, .max_ops = 1, .max_sge = 1 },
		{ .max_num_tags = 1, .max_ops = DPV_TM_MAX_OPS_LIMIT,
		  .max_sge = DPV_TM_MAX_SGE_LIMIT, .sync_threshold = UINT32_MAX },
	};
	struct dpv_tm *tm;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		tm = NULL;
		assert_int_equal(dpv_tm_create(&bad[i], &tm), EINVAL);
	}
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		tm = NULL;
		assert_int_equal(dpv_tm_create(&good[i], &tm), 0);
		assert_non_null(tm);
		assert_int_equal(dpv_tm_unexpected(tm), 0);
		assert_int_equal(dpv_tm_synced(tm), 0);
		dpv_tm_destroy(tm);
	}
}

static void
destroy_accepts_null(void **state)
{
	(void)state;
	dpv_tm_destroy(NULL);
}

/* ---- §3: handles ---- */

static void
add_returns_handle_synchronously(void **state)
{
	struct dpv_tm *tm = tm_new(4, 4, 1, 0);
	struct dpv_tm_op a = op_add(1, DPV_TM_MASK_EXACT, 10, SIG);
	struct dpv_tm_op b = op_add(2, DPV_TM_MASK_EXACT, 20, SIG);
	struct dpv_tm_cqe cqe;
	struct dpv_tm_stats st;

	(void)state;
	a.handle = 0xdeadbeef;
	assert_int_equal(dpv_tm_post(tm, &a), 0);
	assert_int_equal(a.handle, 0);
	b.handle = 0xdeadbeef;
	assert_int_equal(dpv_tm_post(tm, &b), 0);
	assert_int_equal(b.handle, 1);
	st = stats(tm);
	assert_int_equal(st.allocated, 2);
	assert_int_equal(st.listed, 0);

	cqe = exec_op(tm, &a);
	assert_cqe(&cqe, &a, DPV_TM_ST_SUCCESS, 0, true, false);
	cqe = exec_op(tm, &b);
	assert_cqe(&cqe, &b, DPV_TM_ST_SUCCESS, 0, true, false);
	assert_int_equal(stats(tm).listed, 2);
	dpv_tm_destroy(tm);
}

static void
add_not_matchable_until_exec(void **state)
{
	struct dpv_tm *tm = tm_new(4, 4, 1, 0);
	struct dpv_tm_op a = op_add(7, DPV_TM_MASK_EXACT, 70, SIG);

	(void)state;
	assert_int_equal(dpv_tm_post(tm, &a), 0);
	match_none(tm, 7, 0);
	exec_op(tm, &a);
	report_s(tm, 1);
	match_entry(tm, 7, a.handle, 70);
	dpv_tm_destroy(tm);
}

static void
handles_reused_oldest_first_after_release(void **state)
{
	struct dpv_tm *tm = tm_new(4, 4, 1, 0);
	uint32_t h0, h1;

	(void)state;
	h0 = add_entry(tm, 100, DPV_TM_MASK_EXACT, 0);
	h1 = add_entry(tm, 101, DPV_TM_MASK_EXACT, 1);
	assert_int_equal(h0, 0);
	assert_int_equal(h1, 1);
	/* Free queue now 2, 3, then 0 at its tail: 0 must wait behind both. */
	del_entry(tm, h0);
	assert_int_equal(add_entry(tm, 102, DPV_TM_MASK_EXACT, 2), 2);
	assert_int_equal(add_entry(tm, 103, DPV_TM_MASK_EXACT, 3), 3);
	assert_int_equal(add_entry(tm, 104, DPV_TM_MASK_EXACT, 4), 0);
	/* Released in the order 3, 1: reused in that order. */
	del_entry(tm, 3);
	del_entry(tm, 1);
	assert_int_equal(add_entry(tm, 105, DPV_TM_MASK_EXACT, 5), 3);
	assert_int_equal(add_entry(tm, 106, DPV_TM_MASK_EXACT, 6), 1);
	dpv_tm_destroy(tm);
}

static void
handle_not_reused_before_release(void **state)
{
	struct dpv_tm *tm = tm_new(2, 4, 1, 0);
	struct dpv_tm_op del, add;
	struct dpv_tm_cqe cqe;
	uint32_t h0, h1;

	(void)state;
	h0 = add_entry(tm, 1, DPV_TM_MASK_EXACT, 10);
	h1 = add_entry(tm, 2, DPV_TM_MASK_EXACT, 20);
	/* Deleted, its cqe not yet consumed by the poll side. */
	del = op_del(h0, SIG);
	cqe = run_op(tm, &del);
	assert_true(cqe.release);
	/* Consumed by a message, its last completion not yet polled. */
	match_entry(tm, 2, h1, 20);
	assert_int_equal(stats(tm).listed, 0);
	assert_int_equal(stats(tm).allocated, 2);

	add = op_add(3, DPV_TM_MASK_EXACT, 30, SIG);
	assert_int_equal(dpv_tm_post(tm, &add), ENOMEM);
	assert_int_equal(dpv_tm_release(tm, h1), 0);
	assert_int_equal(add_entry(tm, 3, DPV_TM_MASK_EXACT, 30), h1);
	add = op_add(4, DPV_TM_MASK_EXACT, 40, SIG);
	assert_int_equal(dpv_tm_post(tm, &add), ENOMEM);
	assert_int_equal(dpv_tm_release(tm, h0), 0);
	assert_int_equal(add_entry(tm, 4, DPV_TM_MASK_EXACT, 40), h0);
	dpv_tm_destroy(tm);
}

static void
del_of_unallocated_handle_is_einval(void **state)
{
	struct dpv_tm *tm = tm_new(4, 4, 1, 0);
	static const uint32_t bad[] = { 0, 1, 3, 4, 5, UINT32_MAX };
	struct dpv_tm_op del;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		del = op_del(bad[i], SIG);
		assert_int_equal(dpv_tm_post(tm, &del), EINVAL);
	}
	assert_int_equal(add_entry(tm, 1, DPV_TM_MASK_EXACT, 10), 0);
	/* Handle 1 is still free while 0 is allocated. */
	del = op_del(1, SIG);
	assert_int_equal(dpv_tm_post(tm, &del), EINVAL);
	del = op_del(0, SIG);
	assert_int_equal(dpv_tm_post(tm, &del), 0);
	dpv_tm_destroy(tm);
}

static void
del_after_release_is_einval(void **state)
{
	struct dpv_tm *tm = tm_new(4, 4, 1, 0);
	struct dpv_tm_op del;
	uint32_t h;

	(void)state;
	h = add_entry(tm, 1, DPV_TM_MASK_EXACT, 10);
	del_entry(tm, h);
	del = op_del(h, SIG);
	assert_int_equal(dpv_tm_post(tm, &del), EINVAL);

	h = add_entry(tm, 2, DPV_TM_MASK_EXACT, 20);
	match_entry(tm, 2, h, 20);
	/* Consumed but not released: a DEL is still legal (and will fail at exec). */
	del = op_del(h, SIG);
	assert_int_equal(dpv_tm_post(tm, &del), 0);
	exec_op(tm, &del);
	assert_int_equal(dpv_tm_release(tm, h), 0);
	del = op_del(h, SIG);
	assert_int_equal(dpv_tm_post(tm, &del), EINVAL);
	dpv_tm_destroy(tm);
}

static void
release_of_unallocated_is_einval(void **state)
{
	struct dpv_tm *tm = tm_new(4, 4, 1, 0);
	uint32_t h;

	(void)state;
	assert_int_equal(dpv_tm_release(tm, 0), EINVAL);
	assert_int_equal(dpv_tm_release(tm, 4), EINVAL);
	assert_int_equal(dpv_tm_release(tm, UINT32_MAX), EINVAL);
	h = add_entry(tm, 1, DPV_TM_MASK_EXACT, 10);
	assert_int_equal(dpv_tm_release(tm, h + 1), EINVAL);
	match_entry(tm, 1, h, 10);
	assert_int_equal(dpv_tm_release(tm, h), 0);
	assert_int_equal(dpv_tm_release(tm, h), EINVAL);
	assert_int_equal(stats(tm).allocated, 0);
	dpv_tm_destroy(tm);
}

/* ---- §3: post-time checks ---- */

static void
list_full_add_is_enomem_and_exact_capacity(void **state)
{
	struct dpv_tm *tm = tm_new(8, 16, 1, 0);
	struct dpv_tm_op ops[8], extra;
	uint32_t i;

	(void)state;
	/* Full at post time, before the device has executed any of them. */
	for (i = 0; i < 8; i++) {
		ops[i] = op_add(i, DPV_TM_MASK_EXACT, i, SIG);
		assert_int_equal(dpv_tm_post(tm, &ops[i]), 0);
		assert_int_equal(ops[i].handle, i);
	}
	extra = op_add(8, DPV_TM_MASK_EXACT, 8, SIG);
	assert_int_equal(dpv_tm_post(tm, &extra), ENOMEM);
	for (i = 0; i < 8; i++)
		exec_op(tm, &ops[i]);
	assert_int_equal(dpv_tm_post(tm, &extra), ENOMEM);
	assert_int_equal(stats(tm).allocated, 8);
	assert_int_equal(stats(tm).listed, 8);
	del_entry(tm, 5);
	assert_int_equal(add_entry(tm, 8, DPV_TM_MASK_EXACT, 8), 5);
	assert_int_equal(dpv_tm_post(tm, &extra), ENOMEM);
	dpv_tm_destroy(tm);
}

static void
ops_full_is_enomem_until_exec(void **state)
{
	struct dpv_tm *tm = tm_new(16, 3, 1, 0);
	struct dpv_tm_op ops[3], add, del, sync;
	uint32_t h;

	(void)state;
	h = add_entry(tm, 1, DPV_TM_MASK_EXACT, 10);
	ops[0] = op_add(2, DPV_TM_MASK_EXACT, 20, 0);
	ops[1] = op_sync(0, SYNC);
	ops[2] = op_del(h, 0);
	assert_int_equal(dpv_tm_post(tm, &ops[0]), 0);
	assert_int_equal(dpv_tm_post(tm, &ops[1]), 0);
	assert_int_equal(dpv_tm_post(tm, &ops[2]), 0);

	add = op_add(3, DPV_TM_MASK_EXACT, 30, SIG);
	del = op_del(ops[0].handle, SIG);
	sync = op_sync(0, SIG);
	assert_int_equal(dpv_tm_post(tm, &add), ENOMEM);
	assert_int_equal(dpv_tm_post(tm, &del), ENOMEM);
	assert_int_equal(dpv_tm_post(tm, &sync), ENOMEM);
	assert_int_equal(stats(tm).allocated, 2);

	/* Executing one op frees exactly one slot, whatever the op. */
	exec_op(tm, &ops[0]);
	assert_int_equal(dpv_tm_post(tm, &sync), 0);
	assert_int_equal(dpv_tm_post(tm, &add), ENOMEM);
	exec_op(tm, &ops[1]);
	exec_op(tm, &ops[2]);
	assert_int_equal(dpv_tm_post(tm, &add), 0);
	assert_int_equal(dpv_tm_post(tm, &del), 0);
	assert_int_equal(dpv_tm_post(tm, &add), ENOMEM);
	dpv_tm_destroy(tm);
}

static void
unknown_opcode_is_einval(void **state)
{
	static const uint8_t bad[] = { 0, 4, 5, 0x7f, 0xff };
	struct dpv_tm *tm = tm_new(4, 4, 1, 0);
	struct dpv_tm_op op;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		op = op_add(1, DPV_TM_MASK_EXACT, 1, SIG);
		op.opcode = bad[i];
		assert_int_equal(dpv_tm_post(tm, &op), EINVAL);
	}
	assert_int_equal(stats(tm).allocated, 0);
	dpv_tm_destroy(tm);
}

static void
unknown_flag_is_einval(void **state)
{
	struct dpv_tm *tm = tm_new(4, 4, 1, 0);
	struct dpv_tm_op op;
	unsigned int bit;

	(void)state;
	for (bit = 2; bit < 8; bit++) {
		op = op_add(1, DPV_TM_MASK_EXACT, 1, (uint8_t)(SIG | (1u << bit)));
		assert_int_equal(dpv_tm_post(tm, &op), EINVAL);
		op = op_sync(0, (uint8_t)(SYNC | (1u << bit)));
		assert_int_equal(dpv_tm_post(tm, &op), EINVAL);
	}
	assert_int_equal(stats(tm).allocated, 0);
	dpv_tm_destroy(tm);
}

static void
num_sge_above_max_is_einval(void **state)
{
	struct dpv_tm_sge sge[DPV_TM_MAX_SGE_LIMIT + 1] = { { 0x1000, 64, 7 } };
	struct dpv_tm *tm = tm_new(4, 4, 2, 0);
	struct dpv_tm_op op;

	(void)state;
	op = op_add(1, DPV_TM_MASK_EXACT, 1, SIG);
	op.sg_list = sge;
	op.num_sge = 3;
	assert_int_equal(dpv_tm_post(tm, &op), EINVAL);
	op.num_sge = UINT32_MAX;
	assert_int_equal(dpv_tm_post(tm, &op), EINVAL);
	op.num_sge = 2;
	assert_int_equal(dpv_tm_post(tm, &op), 0);
	dpv_tm_destroy(tm);

	tm = tm_new(4, 4, DPV_TM_MAX_SGE_LIMIT, 0);
	op = op_add(1, DPV_TM_MASK_EXACT, 1, SIG);
	op.sg_list = sge;
	op.num_sge = DPV_TM_MAX_SGE_LIMIT + 1;
	assert_int_equal(dpv_tm_post(tm, &op), EINVAL);
	op.num_sge = DPV_TM_MAX_SGE_LIMIT;
	assert_int_equal(dpv_tm_post(tm, &op), 0);
	dpv_tm_destroy(tm);
}

static void
null_sg_list_with_sge_is_einval(void **state)
{
	struct dpv_tm *tm = tm_new(4, 4, 2, 0);
	struct dpv_tm_op op;

	(void)state;
	op = op_add(1, DPV_TM_MASK_EXACT, 1, SIG);
	op.sg_list = NULL;
	op.num_sge = 1;
	assert_int_equal(dpv_tm_post(tm, &op), EINVAL);
	assert_int_equal(stats(tm).allocated, 0);
	dpv_tm_destroy(tm);
}

static void
zero_sge_add_is_legal(void **state)
{
	const struct dpv_tm_sge empty = { .addr = 0x2000, .length = 0, .lkey = 9 };
	struct dpv_tm *tm = tm_new(4, 4, 1, 0);
	struct dpv_tm_op op;
	struct dpv_tm_match m;

	(void)state;
	op = op_add(1, DPV_TM_MASK_EXACT, 11, SIG);
	op.sg_list = NULL;
	op.num_sge = 0;
	run_op(tm, &op);
	m = deliver(tm, IBV_TMH_EAGER, 1, true);
	assert_expected(&m, DPV_TM_EXPECTED_EAGER, op.handle, 11);
	assert_int_equal(m.num_sge, 0);

	/* A zero-length buffer is just as legal. */
	op = op_add(2, DPV_TM_MASK_EXACT, 22, SIG);
	op.sg_list = &empty;
	op.num_sge = 1;
	run_op(tm, &op);
	m = deliver(tm, IBV_TMH_EAGER, 2, true);
	assert_expected(&m, DPV_TM_EXPECTED_EAGER, op.handle, 22);
	assert_int_equal(m.num_sge, 1);
	assert_non_null(m.sg_list);
	assert_int_equal(m.sg_list[0].addr, 0x2000);
	assert_int_equal(m.sg_list[0].length, 0);
	assert_int_equal(m.sg_list[0].lkey, 9);
	dpv_tm_destroy(tm);
}

static void
einval_precedes_enomem(void **state)
{
	struct dpv_tm_sge sge[2] = { { 0x1000, 8, 1 }, { 0x2000, 8, 1 } };
	struct dpv_tm *tm = tm_new(1, 1, 1, 0);
	struct dpv_tm_op pending = op_add(1, DPV_TM_MASK_EXACT, 1, SIG);
	struct dpv_tm_op op;

	(void)state;
	/* Ops full and tag list full at once. */
	assert_int_equal(dpv_tm_post(tm, &pending), 0);

	op = op_sync(0, SIG);
	op.opcode = 9;
	assert_int_equal(dpv_tm_post(tm, &op), EINVAL);
	op = op_sync(0, 0x80);
	assert_int_equal(dpv_tm_post(tm, &op), EINVAL);
	op = op_add(2, DPV_TM_MASK_EXACT, 2, SIG);
	op.sg_list = sge;
	op.num_sge = 2;
	assert_int_equal(dpv_tm_post(tm, &op), EINVAL);
	op.sg_list = NULL;
	op.num_sge = 1;
	assert_int_equal(dpv_tm_post(tm, &op), EINVAL);
	op = op_del(1, SIG);
	assert_int_equal(dpv_tm_post(tm, &op), EINVAL);
	op = op_sync(0, SIG);
	assert_int_equal(dpv_tm_post(tm, &op), ENOMEM);
	op = op_add(2, DPV_TM_MASK_EXACT, 2, SIG);
	assert_int_equal(dpv_tm_post(tm, &op), ENOMEM);
	dpv_tm_destroy(tm);
}

static void
assert_stats_equal(const struct dpv_tm_stats *a, const struct dpv_tm_stats *b)
{
	assert_int_equal(a->adds, b->adds);
	assert_int_equal(a->dels, b->dels);
	assert_int_equal(a->del_errors, b->del_errors);
	assert_int_equal(a->syncs, b->syncs);
	assert_int_equal(a->expected, b->expected);
	assert_int_equal(a->unexpected, b->unexpected);
	assert_int_equal(a->no_tag, b->no_tag);
	assert_int_equal(a->rnr, b->rnr);
	assert_int_equal(a->listed, b->listed);
	assert_int_equal(a->allocated, b->allocated);
}

static void
error_changes_nothing(void **state)
{
	struct dpv_tm_sge sge[2] = { { 0x1000, 8, 1 }, { 0x2000, 8, 1 } };
	struct dpv_tm *tm = tm_new(2, 2, 1, 0);
	struct dpv_tm_op bad[6], a, b, s1, s2, s3;
	struct dpv_tm_stats before, after;
	size_t i;

	(void)state;
	bad[0] = op_sync(77, SYNC);
	bad[0].opcode = 0;
	bad[1] = op_sync(77, SYNC | 0x40);
	bad[2] = op_add(1, DPV_TM_MASK_EXACT, 1, SIG | SYNC);
	bad[2].unexpected_cnt = 77;
	bad[2].sg_list = sge;
	bad[2].num_sge = 2;
	bad[3] = op_add(1, DPV_TM_MASK_EXACT, 1, SIG | SYNC);
	bad[3].unexpected_cnt = 77;
	bad[3].num_sge = 1;
	bad[4] = op_del(0, SIG | SYNC);
	bad[4].unexpected_cnt = 77;
	bad[5] = op_del(2, SIG | SYNC);
	bad[5].unexpected_cnt = 77;
	before = stats(tm);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(dpv_tm_post(tm, &bad[i]), EINVAL);
	after = stats(tm);
	assert_stats_equal(&before, &after);
	assert_int_equal(dpv_tm_synced(tm), 0);

	/* No handle and no op slot was taken by the failures. */
	a = op_add(1, DPV_TM_MASK_EXACT, 1, SIG);
	b = op_add(2, DPV_TM_MASK_EXACT, 2, SIG);
	assert_int_equal(dpv_tm_post(tm, &a), 0);
	assert_int_equal(dpv_tm_post(tm, &b), 0);
	assert_int_equal(a.handle, 0);
	assert_int_equal(b.handle, 1);

	/* ENOMEM for want of an op slot. */
	s1 = op_sync(55, SIG | SYNC);
	before = stats(tm);
	assert_int_equal(dpv_tm_post(tm, &s1), ENOMEM);
	after = stats(tm);
	assert_stats_equal(&before, &after);
	exec_op(tm, &a);
	exec_op(tm, &b);
	assert_int_equal(dpv_tm_synced(tm), 0);

	/* ENOMEM for want of a handle. */
	before = stats(tm);
	a = op_add(3, DPV_TM_MASK_EXACT, 3, SIG);
	assert_int_equal(dpv_tm_post(tm, &a), ENOMEM);
	after = stats(tm);
	assert_stats_equal(&before, &after);
	s1 = op_sync(0, SIG);
	s2 = op_sync(0, SIG);
	s3 = op_sync(0, SIG);
	assert_int_equal(dpv_tm_post(tm, &s1), 0);
	assert_int_equal(dpv_tm_post(tm, &s2), 0);
	assert_int_equal(dpv_tm_post(tm, &s3), ENOMEM);
	exec_op(tm, &s1);
	exec_op(tm, &s2);
	match_entry(tm, 1, 0, 1);
	match_entry(tm, 2, 1, 2);
	dpv_tm_destroy(tm);
}

/* ---- §3: completions ---- */

static void
unsignaled_success_writes_no_visible_cqe(void **state)
{
	struct dpv_tm *tm = tm_new(4, 4, 1, 0);
	struct dpv_tm_op add = op_add(1, DPV_TM_MASK_EXACT, 10, 0);
	struct dpv_tm_op del, sync = op_sync(0, 0);
	struct dpv_tm_cqe cqe;

	(void)state;
	cqe = run_op(tm, &add);
	assert_cqe(&cqe, &add, DPV_TM_ST_SUCCESS, 0, false, false);
	cqe = run_op(tm, &sync);
	assert_cqe(&cqe, &sync, DPV_TM_ST_SUCCESS, 0, false, false);
	del = op_del(add.handle, 0);
	cqe = run_op(tm, &del);
	assert_cqe(&cqe, &del, DPV_TM_ST_SUCCESS, 0, false, true);
	dpv_tm_destroy(tm);
}

static void
signaled_ops_complete_with_wr_id(void **state)
{
	struct dpv_tm *tm = tm_new(4, 4, 1, 0);
	struct dpv_tm_op add = op_add(1, DPV_TM_MASK_EXACT, 10, SIG);
	struct dpv_tm_op del, sync = op_sync(0, SIG);
	struct dpv_tm_cqe cqe;

	(void)state;
	add_entry(tm, 0, DPV_TM_MASK_EXACT, 0);
	add.wr_id = 0x1122334455667788ull;
	cqe = run_op(tm, &add);
	assert_int_equal(add.handle, 1);
	assert_cqe(&cqe, &add, DPV_TM_ST_SUCCESS, 0, true, false);
	sync.wr_id = 0x8877665544332211ull;
	cqe = run_op(tm, &sync);
	assert_cqe(&cqe, &sync, DPV_TM_ST_SUCCESS, 0, true, false);
	del = op_del(add.handle, SIG);
	del.wr_id = UINT64_MAX;
	cqe = run_op(tm, &del);
	assert_cqe(&cqe, &del, DPV_TM_ST_SUCCESS, 0, true, true);
	dpv_tm_destroy(tm);
}

static void
del_racing_consumption_is_tm_err_even_unsignaled(void **state)
{
	struct dpv_tm *tm = tm_new(4, 4, 1, 0);
	struct dpv_tm_op del;
	struct dpv_tm_cqe cqe;
	struct dpv_tm_stats st;
	uint32_t h;

	(void)state;
	add_entry(tm, 0, DPV_TM_MASK_EXACT, 0);
	h = add_entry(tm, 5, DPV_TM_MASK_EXACT, 50);
	del = op_del(h, 0);
	assert_int_equal(dpv_tm_post(tm, &del), 0);
	match_entry(tm, 5, h, 50);
	cqe = exec_op(tm, &del);
	assert_cqe(&cqe, &del, DPV_TM_ST_TM_ERR, 0, true, false);
	st = stats(tm);
	assert_int_equal(st.del_errors, 1);
	assert_int_equal(st.dels, 0);
	assert_int_equal(st.allocated, 2);
	/* The handle ends with the consumed entry's last completion. */
	assert_int_equal(dpv_tm_release(tm, h), 0);
	assert_int_equal(stats(tm).allocated, 1);
	dpv_tm_destroy(tm);
}

static void
del_twice_second_is_tm_err(void **state)
{
	struct dpv_tm *tm = tm_new(4, 4, 1, 0);
	struct dpv_tm_op d1, d2;
	struct dpv_tm_cqe c1, c2;
	uint32_t h;

	(void)state;
	h = add_entry(tm, 5, DPV_TM_MASK_EXACT, 50);
	d1 = op_del(h, SIG);
	d2 = op_del(h, 0);
	assert_int_equal(dpv_tm_post(tm, &d1), 0);
	assert_int_equal(dpv_tm_post(tm, &d2), 0);
	c1 = exec_op(tm, &d1);
	c2 = exec_op(tm, &d2);
	assert_cqe(&c1, &d1, DPV_TM_ST_SUCCESS, 0, true, true);
	assert_cqe(&c2, &d2, DPV_TM_ST_TM_ERR, 0, true, false);
	assert_int_equal(stats(tm).dels, 1);
	assert_int_equal(stats(tm).del_errors, 1);
	assert_int_equal(dpv_tm_release(tm, h), 0);
	assert_int_equal(dpv_tm_release(tm, h), EINVAL);
	dpv_tm_destroy(tm);
}

static void
unsignaled_del_releases_via_hidden_cqe(void **state)
{
	struct dpv_tm *tm = tm_new(3, 4, 1, 0);
	struct dpv_tm_op del;
	struct dpv_tm_cqe cqe;
	uint32_t h;

	(void)state;
	h = add_entry(tm, 5, DPV_TM_MASK_EXACT, 50);
	del = op_del(h, 0);
	cqe = run_op(tm, &del);
	assert_cqe(&cqe, &del, DPV_TM_ST_SUCCESS, 0, false, true);
	match_none(tm, 5, 0);
	assert_int_equal(stats(tm).allocated, 1);
	assert_int_equal(dpv_tm_release(tm, h), 0);
	assert_int_equal(stats(tm).allocated, 0);
	report_s(tm, 1);
	assert_int_equal(add_entry(tm, 1, DPV_TM_MASK_EXACT, 1), 1);
	assert_int_equal(add_entry(tm, 2, DPV_TM_MASK_EXACT, 2), 2);
	assert_int_equal(add_entry(tm, 3, DPV_TM_MASK_EXACT, 3), h);
	dpv_tm_destroy(tm);
}

static void
del_posted_before_add_executes(void **state)
{
	struct dpv_tm *tm = tm_new(4, 4, 1, 0);
	struct dpv_tm_op add = op_add(5, DPV_TM_MASK_EXACT, 50, SIG);
	struct dpv_tm_op del;
	struct dpv_tm_cqe cqe;

	(void)state;
	assert_int_equal(dpv_tm_post(tm, &add), 0);
	del = op_del(add.handle, SIG);
	assert_int_equal(dpv_tm_post(tm, &del), 0);
	exec_op(tm, &add);
	cqe = exec_op(tm, &del);
	assert_cqe(&cqe, &del, DPV_TM_ST_SUCCESS, 0, true, true);
	match_none(tm, 5, 0);
	dpv_tm_destroy(tm);
}

static void
sync_op_never_sets_sync_req(void **state)
{
	struct dpv_tm *tm = tm_new(4, 4, 1, 1);
	struct dpv_tm_op sync;
	struct dpv_tm_cqe cqe;

	(void)state;
	push_unexpected(tm, 5);
	sync = op_sync(0, SIG);
	cqe = run_op(tm, &sync);
	assert_cqe(&cqe, &sync, DPV_TM_ST_SUCCESS, 0, true, false);
	sync = op_sync(2, SIG | SYNC);
	cqe = run_op(tm, &sync);
	assert_cqe(&cqe, &sync, DPV_TM_ST_SUCCESS, 0, true, false);
	assert_int_equal(dpv_tm_synced(tm), 2);
	dpv_tm_destroy(tm);
}

/* ---- §4: matching ---- */

static void
exact_match_rule_xor_mask(void **state)
{
	struct dpv_tm *tm = tm_new(8, 8, 1, 0);
	uint32_t h;

	(void)state;
	/* Bits of e.tag outside the mask are ignored: the XOR rule, not T & mask == e.tag. */
	h = add_entry(tm, 0x12345678ffffffffull, 0xffffffff00000000ull, 1);
	match_none(tm, 0x12345679ffffffffull, 0);
	match_none(tm, 0x92345678ffffffffull, 0);
	report_s(tm, 2);
	match_entry(tm, 0x1234567800000000ull, h, 1);

	h = add_entry(tm, 0xfedcba9876543210ull, DPV_TM_MASK_EXACT, 2);
	match_none(tm, 0xfedcba9876543211ull, 0);
	match_none(tm, 0x7edcba9876543210ull, 0);
	report_s(tm, 4);
	match_entry(tm, 0xfedcba9876543210ull, h, 2);
	dpv_tm_destroy(tm);
}

static void
wildcard_mask_matches(void **state)
{
	struct dpv_tm *tm = tm_new(8, 8, 1, 0);
	uint32_t any, low;

	(void)state;
	any = add_entry(tm, 0x5555, 0, 1);
	match_entry(tm, ABSENT_TAG, any, 1);
	any = add_entry(tm, 0, 0, 2);
	match_entry(tm, 0, any, 2);

	/* Only the low byte counts. */
	low = add_entry(tm, 0x42, 0xff, 3);
	match_none(tm, 0x43, 0);
	report_s(tm, 1);
	match_entry(tm, 0xffffffffffffff42ull, low, 3);
	dpv_tm_destroy(tm);
}

static void
earliest_added_wins_exact_then_wildcard(void **state)
{
	struct dpv_tm *tm = tm_new(8, 8, 1, 0);
	uint32_t exact, wild;

	(void)state;
	exact = add_entry(tm, 0x77, DPV_TM_MASK_EXACT, 1);
	wild = add_entry(tm, 0, 0, 2);
	match_entry(tm, 0x77, exact, 1);
	match_entry(tm, 0x77, wild, 2);
	match_none(tm, 0x77, 0);
	dpv_tm_destroy(tm);
}

static void
earliest_added_wins_wildcard_then_exact(void **state)
{
	struct dpv_tm *tm = tm_new(8, 8, 1, 0);
	uint32_t exact, wild, partial;

	(void)state;
	wild = add_entry(tm, 0x700, 0xf00, 1);
	exact = add_entry(tm, 0x777, DPV_TM_MASK_EXACT, 2);
	partial = add_entry(tm, 0x77, 0xff, 3);
	match_entry(tm, 0x777, wild, 1);
	match_entry(tm, 0x777, exact, 2);
	match_entry(tm, 0x777, partial, 3);
	match_none(tm, 0x777, 0);
	dpv_tm_destroy(tm);
}

/*
 * MPI order holds whatever the list's depth: short lists are kept differently from long
 * ones (lib/tm switches when a list grows past a few entries and back when it empties),
 * so the earliest-added rule is checked while the list grows through the switch, while
 * it drains, and again after it has emptied.
 */
static void
earliest_added_wins_as_the_list_grows_and_empties(void **state)
{
	struct dpv_tm *tm = tm_new(64, 64, 1, 0);
	uint32_t h[40];
	unsigned int round, i;

	(void)state;
	for (round = 0; round < 2; round++) {
		/* Even entries are wildcards (any low byte), odd ones exact: every message
		 * 0x5500 | i matches all the wildcards still listed and its own exact entry. */
		for (i = 0; i < 40; i++)
			h[i] = add_entry(tm, 0x5500 | i, i % 2 ? DPV_TM_MASK_EXACT : ~0xffull,
					 100 * round + i);
		/* Odd messages, in order: the oldest wildcard always precedes the exact one. */
		for (i = 1; i < 40; i += 2)
			match_entry(tm, 0x5500 | i, h[i - 1], 100 * round + i - 1);
		/* Only the exact entries are left: each message finds its own. */
		for (i = 39; i < 40; i -= 2)
			match_entry(tm, 0x5500 | i, h[i], 100 * round + i);
		for (i = 0; i < 40; i++)
			assert_int_equal(dpv_tm_release(tm, h[i]), 0);
	}
	match_none(tm, 0x5501, 0);
	dpv_tm_destroy(tm);
}

static void
each_entry_matches_once(void **state)
{
	struct dpv_tm *tm = tm_new(4, 4, 1, 0);
	uint32_t h;

	(void)state;
	h = add_entry(tm, 9, DPV_TM_MASK_EXACT, 90);
	match_entry(tm, 9, h, 90);
	match_none(tm, 9, 0);
	assert_int_equal(stats(tm).listed, 0);
	report_s(tm, 1);
	h = add_entry(tm, 0, 0, 91);
	match_entry(tm, 3, h, 91);
	match_none(tm, 3, 0);
	dpv_tm_destroy(tm);
}

static void
eager_and_rndv_kinds(void **state)
{
	struct dpv_tm *tm = tm_new(4, 4, 1, 0);
	struct dpv_tm_match m;
	uint32_t a, b;

	(void)state;
	a = add_entry(tm, 1, DPV_TM_MASK_EXACT, 10);
	b = add_entry(tm, 1, DPV_TM_MASK_EXACT, 11);
	m = deliver(tm, IBV_TMH_RNDV, 1, true);
	assert_expected(&m, DPV_TM_EXPECTED_RNDV, a, 10);
	m = deliver(tm, IBV_TMH_EAGER, 1, true);
	assert_expected(&m, DPV_TM_EXPECTED_EAGER, b, 11);
	m = deliver(tm, IBV_TMH_RNDV, 1, true);
	assert_not_expected(&m, DPV_TM_UNEXPECTED, 0);
	assert_int_equal(stats(tm).expected, 2);
	dpv_tm_destroy(tm);
}

static void
matched_entry_returns_buffers_and_wr_id(void **state)
{
	struct dpv_tm_sge sge[DPV_TM_MAX_SGE_LIMIT];
	struct dpv_tm *tm = tm_new(4, 4, DPV_TM_MAX_SGE_LIMIT, 0);
	struct dpv_tm_op op;
	struct dpv_tm_match m;
	uint32_t i;

	(void)state;
	for (i = 0; i < DPV_TM_MAX_SGE_LIMIT; i++)
		sge[i] = (struct dpv_tm_sge){ 0x100000000ull * (i + 1) + i, 100 + i, 0xa000 + i };
	add_entry(tm, 1, DPV_TM_MASK_EXACT, 1);
	op = op_add(0xcafe, DPV_TM_MASK_EXACT, 0xfeedfacecafebeefull, SIG);
	op.sg_list = sge;
	op.num_sge = DPV_TM_MAX_SGE_LIMIT;
	run_op(tm, &op);
	m = deliver(tm, IBV_TMH_EAGER, 0xcafe, true);
	assert_expected(&m, DPV_TM_EXPECTED_EAGER, op.handle, 0xfeedfacecafebeefull);
	assert_int_equal(m.handle, 1);
	assert_int_equal(m.num_sge, DPV_TM_MAX_SGE_LIMIT);
	assert_non_null(m.sg_list);
	for (i = 0; i < DPV_TM_MAX_SGE_LIMIT; i++) {
		assert_int_equal(m.sg_list[i].addr, sge[i].addr);
		assert_int_equal(m.sg_list[i].length, sge[i].length);
		assert_int_equal(m.sg_list[i].lkey, sge[i].lkey);
	}
	dpv_tm_destroy(tm);
}

static void
sg_list_copied_at_post(void **state)
{
	struct dpv_tm_sge sge[2] = { { 0x1000, 10, 1 }, { 0x2000, 20, 2 } };
	struct dpv_tm *tm = tm_new(4, 4, 2, 0);
	struct dpv_tm_op op = op_add(3, DPV_TM_MASK_EXACT, 30, SIG);
	struct dpv_tm_match m;

	(void)state;
	op.sg_list = sge;
	op.num_sge = 2;
	assert_int_equal(dpv_tm_post(tm, &op), 0);
	/* The caller's array is free for reuse as soon as the post returns. */
	memset(sge, 0xee, sizeof(sge));
	exec_op(tm, &op);
	m = deliver(tm, IBV_TMH_EAGER, 3, true);
	assert_expected(&m, DPV_TM_EXPECTED_EAGER, op.handle, 30);
	assert_ptr_not_equal(m.sg_list, sge);
	assert_int_equal(m.num_sge, 2);
	assert_int_equal(m.sg_list[0].addr, 0x1000);
	assert_int_equal(m.sg_list[0].length, 10);
	assert_int_equal(m.sg_list[0].lkey, 1);
	assert_int_equal(m.sg_list[1].addr, 0x2000);
	assert_int_equal(m.sg_list[1].length, 20);
	assert_int_equal(m.sg_list[1].lkey, 2);
	dpv_tm_destroy(tm);
}

static void
no_tag_consumes_srq_wr(void **state)
{
	struct dpv_tm *tm = tm_new(4, 4, 1, 1);
	struct dpv_tm_match m;
	uint32_t any;

	(void)state;
	any = add_entry(tm, 0, 0, 1);
	m = deliver(tm, IBV_TMH_NO_TAG, 0, true);
	assert_not_expected(&m, DPV_TM_NO_TAG, 0);
	assert_int_equal(dpv_tm_unexpected(tm), 0);
	assert_int_equal(stats(tm).listed, 1);
	assert_int_equal(stats(tm).no_tag, 1);
	match_entry(tm, 0, any, 1);
	dpv_tm_destroy(tm);
}

static void
fin_and_unknown_opcodes_are_no_tag(void **state)
{
	static const uint8_t opcodes[] = { IBV_TMH_FIN, 4, 0x7f, 0xff };
	struct dpv_tm *tm = tm_new(4, 4, 1, 0);
	struct dpv_tm_match m;
	uint32_t any;
	size_t i;

	(void)state;
	any = add_entry(tm, 0, 0, 1);
	for (i = 0; i < sizeof(opcodes) / sizeof(opcodes[0]); i++) {
		m = deliver(tm, opcodes[i], 0, true);
		assert_not_expected(&m, DPV_TM_NO_TAG, 0);
	}
	assert_int_equal(dpv_tm_unexpected(tm), 0);
	assert_int_equal(stats(tm).no_tag, 4);
	assert_int_equal(stats(tm).listed, 1);
	match_entry(tm, 0, any, 1);
	dpv_tm_destroy(tm);
}

static void
no_tag_never_sets_sync_req(void **state)
{
	struct dpv_tm *tm = tm_new(4, 4, 1, 1);
	struct dpv_tm_match m;

	(void)state;
	push_unexpected(tm, 5);
	m = deliver(tm, IBV_TMH_NO_TAG, 0, true);
	assert_not_expected(&m, DPV_TM_NO_TAG, 0);
	m = deliver(tm, IBV_TMH_FIN, 0, true);
	assert_not_expected(&m, DPV_TM_NO_TAG, 0);
	assert_int_equal(dpv_tm_unexpected(tm), 5);
	dpv_tm_destroy(tm);
}

static void
short_payload_is_no_tag(void **state)
{
	uint8_t buf[DPV_TM_TMH_SIZE];
	struct dpv_tm_tmh tmh;
	size_t len;

	(void)state;
	memset(buf, 0x11, sizeof(buf));
	buf[0] = IBV_TMH_EAGER;
	for (len = 0; len < DPV_TM_TMH_SIZE; len++) {
		memset(&tmh, POISON, sizeof(tmh));
		dpv_tm_parse_tmh(buf, len, &tmh);
		assert_int_equal(tmh.opcode, IBV_TMH_NO_TAG);
		assert_int_equal(tmh.app_ctx, 0);
		assert_int_equal(tmh.tag, 0);
	}
	memset(&tmh, POISON, sizeof(tmh));
	dpv_tm_parse_tmh(NULL, 0, &tmh);
	assert_int_equal(tmh.opcode, IBV_TMH_NO_TAG);
	memset(&tmh, POISON, sizeof(tmh));
	dpv_tm_parse_tmh(buf, DPV_TM_TMH_SIZE, &tmh);
	assert_int_equal(tmh.opcode, IBV_TMH_EAGER);
	assert_int_equal(tmh.tag, 0x1111111111111111ull);
}

static void
parse_tmh_big_endian_fields(void **state)
{
	static const uint8_t raw[DPV_TM_TMH_SIZE + 4] = {
		IBV_TMH_RNDV, 0xaa, 0xbb, 0xcc,
		0x01, 0x02, 0x03, 0x04,
		0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80,
		0xde, 0xad, 0xbe, 0xef,
	};
	struct ibv_tmh wire;
	struct dpv_tm_tmh tmh;

	(void)state;
	memset(&tmh, POISON, sizeof(tmh));
	dpv_tm_parse_tmh(raw, sizeof(raw), &tmh);
	assert_int_equal(tmh.opcode, IBV_TMH_RNDV);
	assert_int_equal(tmh.app_ctx, 0x01020304);
	assert_int_equal(tmh.tag, 0x1020304050607080ull);

	/* The same through rdma-core's own struct. */
	assert_int_equal(sizeof(wire), DPV_TM_TMH_SIZE);
	memset(&wire, 0, sizeof(wire));
	wire.opcode = IBV_TMH_EAGER;
	wire.app_ctx = htobe32(0xcafef00d);
	wire.tag = htobe64(0x0123456789abcdefull);
	memset(&tmh, POISON, sizeof(tmh));
	dpv_tm_parse_tmh(&wire, sizeof(wire), &tmh);
	assert_int_equal(tmh.opcode, IBV_TMH_EAGER);
	assert_int_equal(tmh.app_ctx, 0xcafef00d);
	assert_int_equal(tmh.tag, 0x0123456789abcdefull);
}

static void
parse_tmh_reports_unknown_opcode_as_read(void **state)
{
	uint8_t raw[DPV_TM_TMH_SIZE] = { 0x7e, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 6 };
	struct dpv_tm_tmh tmh;

	(void)state;
	memset(&tmh, POISON, sizeof(tmh));
	dpv_tm_parse_tmh(raw, sizeof(raw), &tmh);
	assert_int_equal(tmh.opcode, 0x7e);
	assert_int_equal(tmh.app_ctx, 5);
	assert_int_equal(tmh.tag, 6);
	raw[0] = IBV_TMH_FIN;
	dpv_tm_parse_tmh(raw, sizeof(raw), &tmh);
	assert_int_equal(tmh.opcode, IBV_TMH_FIN);
}

static void
unexpected_counts_u(void **state)
{
	struct dpv_tm *tm = tm_new(4, 4, 1, 0);
	struct dpv_tm_match m;
	uint32_t h;

	(void)state;
	assert_int_equal(dpv_tm_unexpected(tm), 0);
	m = deliver(tm, IBV_TMH_EAGER, 1, true);
	assert_not_expected(&m, DPV_TM_UNEXPECTED, 0);
	m = deliver(tm, IBV_TMH_RNDV, 1, true);
	assert_not_expected(&m, DPV_TM_UNEXPECTED, 0);
	assert_int_equal(dpv_tm_unexpected(tm), 2);
	assert_int_equal(dpv_tm_synced(tm), 0);

	report_s(tm, 2);
	h = add_entry(tm, 7, DPV_TM_MASK_EXACT, 70);
	match_none(tm, 8, 0);
	assert_int_equal(dpv_tm_unexpected(tm), 3);
	/* An expected message does not count. */
	match_entry(tm, 7, h, 70);
	assert_int_equal(dpv_tm_unexpected(tm), 3);
	assert_int_equal(stats(tm).unexpected, 3);
	dpv_tm_destroy(tm);
}

static void
rnr_when_no_srq_wr_changes_nothing(void **state)
{
	struct dpv_tm *tm = tm_new(4, 4, 1, 1);
	struct dpv_tm_op add = op_add(7, DPV_TM_MASK_EXACT, 70, SIG);
	struct dpv_tm_match m;
	struct dpv_tm_stats before, after;

	(void)state;
	push_unexpected(tm, 3);
	/* An entry that would match but is not yet eligible (need 3, S 0). */
	run_op(tm, &add);
	before = stats(tm);
	m = deliver(tm, IBV_TMH_EAGER, 7, false);
	assert_not_expected(&m, DPV_TM_RNR, 0);
	m = deliver(tm, IBV_TMH_RNDV, ABSENT_TAG, false);
	assert_not_expected(&m, DPV_TM_RNR, 0);
	m = deliver(tm, IBV_TMH_NO_TAG, 7, false);
	assert_not_expected(&m, DPV_TM_RNR, 0);
	m = deliver(tm, IBV_TMH_FIN, 7, false);
	assert_not_expected(&m, DPV_TM_RNR, 0);
	after = stats(tm);
	assert_int_equal(after.rnr, before.rnr + 4);
	after.rnr = before.rnr;
	assert_stats_equal(&before, &after);
	assert_int_equal(dpv_tm_unexpected(tm), 3);

	/* The retried message is now counted; the entry is still there. */
	match_none(tm, 7, DPV_TM_CQE_F_SYNC_REQ);
	report_s(tm, 3);
	match_entry(tm, 7, add.handle, 70);
	dpv_tm_destroy(tm);
}

static void
expected_match_needs_no_srq_wr(void **state)
{
	struct dpv_tm *tm = tm_new(4, 4, 1, 0);
	struct dpv_tm_match m;
	uint32_t h;

	(void)state;
	h = add_entry(tm, 7, DPV_TM_MASK_EXACT, 70);
	m = deliver(tm, IBV_TMH_RNDV, 7, false);
	assert_expected(&m, DPV_TM_EXPECTED_RNDV, h, 70);
	assert_int_equal(stats(tm).rnr, 0);
	dpv_tm_destroy(tm);
}

/* ---- §5: phases ---- */

static void
add_not_eligible_until_sync_reaches_need(void **state)
{
	struct dpv_tm *tm = tm_new(4, 4, 1, 0);
	struct dpv_tm_op add = op_add(7, DPV_TM_MASK_EXACT, 70, SIG);
	struct dpv_tm_cqe cqe;

	(void)state;
	push_unexpected(tm, 2);
	cqe = run_op(tm, &add);
	assert_cqe(&cqe, &add, DPV_TM_ST_SUCCESS, DPV_TM_CQE_F_SYNC_REQ, true, false);
	match_none(tm, 7, 0);
	report_s(tm, 1);
	match_none(tm, 7, 0);
	/* need was recorded at exec (U = 2), not moved by later unexpected messages. */
	report_s(tm, 2);
	match_entry(tm, 7, add.handle, 70);
	dpv_tm_destroy(tm);
}

static void
add_with_sync_equal_u_eligible_at_once(void **state)
{
	struct dpv_tm *tm = tm_new(4, 4, 1, 0);
	struct dpv_tm_op add = op_add(7, DPV_TM_MASK_EXACT, 70, SIG | SYNC);
	struct dpv_tm_cqe cqe;

	(void)state;
	push_unexpected(tm, 2);
	add.unexpected_cnt = 2;
	cqe = run_op(tm, &add);
	assert_cqe(&cqe, &add, DPV_TM_ST_SUCCESS, 0, true, false);
	assert_int_equal(dpv_tm_synced(tm), 2);
	match_entry(tm, 7, add.handle, 70);

	/* A report short of U leaves the new entry ineligible and asks for a SYNC. */
	add = op_add(8, DPV_TM_MASK_EXACT, 80, SIG | SYNC);
	add.unexpected_cnt = 1;
	cqe = run_op(tm, &add);
	assert_cqe(&cqe, &add, DPV_TM_ST_SUCCESS, DPV_TM_CQE_F_SYNC_REQ, true, false);
	assert_int_equal(dpv_tm_synced(tm), 1);
	match_none(tm, 8, 0);
	dpv_tm_destroy(tm);
}

static void
ineligible_entry_can_be_deleted(void **state)
{
	struct dpv_tm *tm = tm_new(4, 4, 1, 0);
	struct dpv_tm_op add = op_add(7, DPV_TM_MASK_EXACT, 70, SIG);
	struct dpv_tm_op del;
	struct dpv_tm_cqe cqe;

	(void)state;
	push_unexpected(tm, 1);
	run_op(tm, &add);
	match_none(tm, 7, 0);
	/* Software found the message in its unexpected list and takes the entry back. */
	del = op_del(add.handle, SIG);
	cqe = run_op(tm, &del);
	assert_cqe(&cqe, &del, DPV_TM_ST_SUCCESS, DPV_TM_CQE_F_SYNC_REQ, true, true);
	assert_int_equal(dpv_tm_release(tm, add.handle), 0);
	report_s(tm, 2);
	match_none(tm, 7, 0);
	assert_int_equal(stats(tm).listed, 0);
	dpv_tm_destroy(tm);
}

static void
sync_req_on_add_del_when_s_ne_u(void **state)
{
	struct dpv_tm *tm = tm_new(4, 4, 1, 0);
	struct dpv_tm_op add, del;
	struct dpv_tm_cqe cqe;

	(void)state;
	push_unexpected(tm, 1);
	add = op_add(7, DPV_TM_MASK_EXACT, 70, SIG);
	cqe = run_op(tm, &add);
	assert_cqe(&cqe, &add, DPV_TM_ST_SUCCESS, DPV_TM_CQE_F_SYNC_REQ, true, false);
	del = op_del(add.handle, SIG);
	cqe = run_op(tm, &del);
	assert_cqe(&cqe, &del, DPV_TM_ST_SUCCESS, DPV_TM_CQE_F_SYNC_REQ, true, true);
	assert_int_equal(dpv_tm_release(tm, add.handle), 0);

	/* Also on a DEL that fails, and on unsignaled ops. */
	report_s(tm, 1);
	add = op_add(8, DPV_TM_MASK_EXACT, 80, 0);
	cqe = run_op(tm, &add);
	assert_cqe(&cqe, &add, DPV_TM_ST_SUCCESS, 0, false, false);
	match_entry(tm, 8, add.handle, 80);
	push_unexpected(tm, 1);
	del = op_del(add.handle, 0);
	cqe = run_op(tm, &del);
	assert_cqe(&cqe, &del, DPV_TM_ST_TM_ERR, DPV_TM_CQE_F_SYNC_REQ, true, false);
	dpv_tm_destroy(tm);
}

static void
no_sync_req_when_s_eq_u(void **state)
{
	struct dpv_tm *tm = tm_new(4, 4, 1, 0);
	struct dpv_tm_op add, del;
	struct dpv_tm_cqe cqe;

	(void)state;
	add = op_add(7, DPV_TM_MASK_EXACT, 70, SIG);
	cqe = run_op(tm, &add);
	assert_cqe(&cqe, &add, DPV_TM_ST_SUCCESS, 0, true, false);
	push_unexpected(tm, 3);
	report_s(tm, 3);
	del = op_del(add.handle, SIG);
	cqe = run_op(tm, &del);
	assert_cqe(&cqe, &del, DPV_TM_ST_SUCCESS, 0, true, true);
	assert_int_equal(dpv_tm_release(tm, add.handle), 0);
	add = op_add(8, DPV_TM_MASK_EXACT, 80, SIG);
	cqe = run_op(tm, &add);
	assert_cqe(&cqe, &add, DPV_TM_ST_SUCCESS, 0, true, false);
	dpv_tm_destroy(tm);
}

static void
sync_flag_applies_before_the_op(void **state)
{
	struct dpv_tm *tm = tm_new(4, 4, 1, 0);
	struct dpv_tm_op add, del;
	struct dpv_tm_cqe cqe;
	uint32_t h;

	(void)state;
	h = add_entry(tm, 7, DPV_TM_MASK_EXACT, 70);
	push_unexpected(tm, 4);
	/* The DEL's own report makes S == U before its SYNC_REQ is decided. */
	del = op_del(h, SIG | SYNC);
	del.unexpected_cnt = 4;
	cqe = run_op(tm, &del);
	assert_cqe(&cqe, &del, DPV_TM_ST_SUCCESS, 0, true, true);
	assert_int_equal(dpv_tm_synced(tm), 4);
	assert_int_equal(dpv_tm_release(tm, h), 0);
	/* And a report that moves S away from U sets it. */
	add = op_add(8, DPV_TM_MASK_EXACT, 80, SIG);
	run_op(tm, &add);
	del = op_del(add.handle, SIG | SYNC);
	del.unexpected_cnt = 3;
	cqe = run_op(tm, &del);
	assert_cqe(&cqe, &del, DPV_TM_ST_SUCCESS, DPV_TM_CQE_F_SYNC_REQ, true, true);
	assert_int_equal(dpv_tm_synced(tm), 3);
	dpv_tm_destroy(tm);
}

static void
unexpected_cnt_ignored_without_sync_flag(void **state)
{
	struct dpv_tm *tm = tm_new(4, 4, 1, 0);
	struct dpv_tm_op op;
	struct dpv_tm_cqe cqe;

	(void)state;
	op = op_sync(9, SIG);
	cqe = run_op(tm, &op);
	assert_cqe(&cqe, &op, DPV_TM_ST_SUCCESS, 0, true, false);
	assert_int_equal(dpv_tm_synced(tm), 0);
	op = op_add(7, DPV_TM_MASK_EXACT, 70, SIG);
	op.unexpected_cnt = 9;
	cqe = run_op(tm, &op);
	assert_cqe(&cqe, &op, DPV_TM_ST_SUCCESS, 0, true, false);
	assert_int_equal(dpv_tm_synced(tm), 0);
	match_entry(tm, 7, op.handle, 70);
	dpv_tm_destroy(tm);
}

static void
sync_req_on_unexpected_above_threshold(void **state)
{
	struct dpv_tm *tm = tm_new(4, 4, 1, 3);

	(void)state;
	match_none(tm, 1, 0);
	match_none(tm, 1, 0);
	match_none(tm, 1, 0);
	/* U - S = 4 > 3 */
	match_none(tm, 1, DPV_TM_CQE_F_SYNC_REQ);
	match_none(tm, 1, DPV_TM_CQE_F_SYNC_REQ);
	report_s(tm, 5);
	match_none(tm, 1, 0);
	match_none(tm, 1, 0);
	match_none(tm, 1, 0);
	match_none(tm, 1, DPV_TM_CQE_F_SYNC_REQ);
	dpv_tm_destroy(tm);
}

static void
sync_threshold_zero_means_default(void **state)
{
	struct dpv_tm *tm = tm_new(4, 4, 1, 0);
	struct dpv_tm_match m;
	uint32_t i;

	(void)state;
	for (i = 1; i <= DPV_TM_DEFAULT_SYNC_THRESHOLD; i++) {
		m = deliver(tm, IBV_TMH_EAGER, ABSENT_TAG, true);
		assert_int_equal(m.kind, DPV_TM_UNEXPECTED);
		assert_int_equal(m.flags, 0);
	}
	match_none(tm, ABSENT_TAG, DPV_TM_CQE_F_SYNC_REQ);
	dpv_tm_destroy(tm);
}

static void
counters_wrap_modulo_2_32(void **state)
{
	struct dpv_tm *tm = tm_new(8, 8, 1, 4);
	struct dpv_tm_op add;
	struct dpv_tm_cqe cqe;

	(void)state;
	/*
	 * U moves only by messages, so it cannot be driven across 2^32 in a unit test; S is
	 * reported, so placing S just below 2^32 while U is small puts the pair on the two
	 * sides of the wrap, which modulo 2^32 is the same as U having counted across it.
	 * S = 2^32 - 3, U = 0: the device is 3 ahead of software.
	 */
	report_s(tm, UINT32_MAX - 2);
	add = op_add(1, DPV_TM_MASK_EXACT, 10, SIG);
	cqe = run_op(tm, &add);
	assert_cqe(&cqe, &add, DPV_TM_ST_SUCCESS, DPV_TM_CQE_F_SYNC_REQ, true, false);
	/* need 0, S - need = -3: not eligible, though S > need as plain unsigned values. */
	match_none(tm, ABSENT_TAG, 0); /* U = 1, U - S = 4: not above 4 */
	match_none(tm, 1, DPV_TM_CQE_F_SYNC_REQ); /* U = 2, U - S = 5 */
	assert_int_equal(dpv_tm_unexpected(tm), 2);

	/* S crosses 2^32 and reaches need = 0: eligible. */
	report_s(tm, 0);
	match_entry(tm, 1, add.handle, 10);

	/* An entry whose need (2) is ahead of S = 2^32 - 1 waits until S catches up. */
	report_s(tm, UINT32_MAX);
	add = op_add(2, DPV_TM_MASK_EXACT, 20, SIG);
	cqe = run_op(tm, &add);
	assert_cqe(&cqe, &add, DPV_TM_ST_SUCCESS, DPV_TM_CQE_F_SYNC_REQ, true, false);
	match_none(tm, 2, 0); /* U = 3, U - S = 4 */
	report_s(tm, 1);
	match_none(tm, 2, 0);
	report_s(tm, 2);
	match_entry(tm, 2, add.handle, 20);
	dpv_tm_destroy(tm);
}

static void
eligibility_is_signed_32bit_distance(void **state)
{
	struct dpv_tm *tm = tm_new(8, 8, 1, 0);
	uint32_t h;

	(void)state;
	h = add_entry(tm, 1, DPV_TM_MASK_EXACT, 10); /* need 0 */
	/* S - need = 2^31 reads as negative: the entry is not eligible. */
	report_s(tm, 0x80000000u);
	match_none(tm, 1, DPV_TM_CQE_F_SYNC_REQ); /* U - S = 2^31 + 1 */
	report_s(tm, 0x7fffffffu);
	match_entry(tm, 1, h, 10);
	dpv_tm_destroy(tm);
}

/* ---- order and scale ---- */

static void
wildcards_of_many_masks_earliest_wins(void **state)
{
	enum { K = 40 };
	const uint64_t t = 0x0123456789abcdefull;
	struct dpv_tm *tm = tm_new(2 * K, 4, 1, 0);
	uint32_t h[K];
	uint32_t i, round;

	(void)state;
	/* Every third entry exact, the others each with a mask of its own, all matching t. */
	for (round = 0; round < 2; round++) {
		for (i = 0; i < K; i++) {
			uint64_t bit = 1ull << ((i * 7 + round) % 64);

			if (i % 3 == 2)
				h[i] = add_entry(tm, t, DPV_TM_MASK_EXACT, i);
			else
				h[i] = add_entry(tm, t ^ bit, ~bit, i);
		}
		/* Holes in the middle, then the rest in add order. */
		del_entry(tm, h[1]);
		del_entry(tm, h[2]);
		del_entry(tm, h[K / 2]);
		for (i = 0; i < K; i++)
			if (i != 1 && i != 2 && i != K / 2)
				match_entry(tm, t, h[i], i);
		match_none(tm, t, 0);
		report_s(tm, round + 1);
		for (i = 0; i < K; i++)
			if (i != 1 && i != 2 && i != K / 2)
				assert_int_equal(dpv_tm_release(tm, h[i]), 0);
	}
	dpv_tm_destroy(tm);
}

/*
 * Wildcards of one mask and one key share a chain, with exact entries of the same
 * tags beside them in a list long enough to be hashed: when one wildcard leaves the
 * chain (matched or deleted), the others there are still found, and once the last
 * has gone a message of that key is unexpected while the exact entries still match.
 */
static void
wildcards_sharing_a_chain_found_until_the_last_leaves(void **state)
{
	enum { FILL = 16 };
	const uint64_t any_low = 0xffffffffffffff00ull, key = 0x4200;
	struct dpv_tm *tm = tm_new(64, 4, 1, 0);
	uint32_t w[3], x[FILL], i;

	(void)state;
	for (i = 0; i < FILL; i++)
		x[i] = add_entry(tm, key | (i + 0x10), DPV_TM_MASK_EXACT, 100 + i);
	for (i = 0; i < 3; i++)
		w[i] = add_entry(tm, key, any_low, i);
	/* The exact entries were added first: they win their own tags. */
	match_entry(tm, key | 0x10, x[0], 100);
	/* The oldest wildcard goes by a match, the middle one by a DEL. */
	match_entry(tm, key | 0x01, w[0], 0);
	del_entry(tm, w[1]);
	match_entry(tm, key | 0x02, w[2], 2);
	match_none(tm, key | 0x03, 0);
	for (i = 1; i < FILL; i++)
		match_entry(tm, key | (i + 0x10), x[i], 100 + i);
	dpv_tm_destroy(tm);
}

static void
ineligible_wildcards_of_many_masks_skipped(void **state)
{
	enum { K = 24 };
	const uint64_t t = 0xfedcba9876543210ull;
	struct dpv_tm *tm = tm_new(K, 4, 1, 0);
	struct dpv_tm_op add[K];
	struct dpv_tm_cqe cqe;
	uint32_t i;

	(void)state;
	push_unexpected(tm, 1);
	for (i = 0; i < K; i++) {
		uint64_t bit = 1ull << (i * 5 % 64);

		add[i] = op_add(t ^ bit, ~bit, i, SIG);
		cqe = run_op(tm, &add[i]);
		assert_cqe(&cqe, &add[i], DPV_TM_ST_SUCCESS, DPV_TM_CQE_F_SYNC_REQ, true, false);
	}
	/* need 1, S 0: none of them may take the message. */
	match_none(tm, t, 0);
	assert_int_equal(stats(tm).listed, K);
	report_s(tm, 1);
	for (i = 0; i < K; i++)
		match_entry(tm, t, add[i].handle, i);
	match_none(tm, t, 0);
	dpv_tm_destroy(tm);
}

static void
many_same_tag_fifo(void **state)
{
	enum { K = 200 };
	struct dpv_tm *tm = tm_new(K, 4, 1, 0);
	uint32_t h[K];
	uint32_t i;

	(void)state;
	for (i = 0; i < K; i++)
		h[i] = add_entry(tm, 0x5a5a, DPV_TM_MASK_EXACT, 1000 + i);
	for (i = 0; i < K; i++) {
		struct dpv_tm_match m = deliver(tm, (i & 1) ? IBV_TMH_RNDV : IBV_TMH_EAGER,
						0x5a5a, true);

		assert_expected(&m, (i & 1) ? DPV_TM_EXPECTED_RNDV : DPV_TM_EXPECTED_EAGER,
				h[i], 1000 + i);
	}
	match_none(tm, 0x5a5a, 0);
	dpv_tm_destroy(tm);
}

static void
del_from_middle_keeps_order(void **state)
{
	enum { K = 10 };
	struct dpv_tm *tm = tm_new(K, 4, 1, 0);
	uint32_t h[K];
	uint32_t i;

	(void)state;
	for (i = 0; i < K; i++)
		h[i] = add_entry(tm, 0x33, (i % 3 == 0) ? 0xff : DPV_TM_MASK_EXACT, i);
	del_entry(tm, h[0]);
	del_entry(tm, h[4]);
	del_entry(tm, h[5]);
	del_entry(tm, h[9]);
	for (i = 0; i < K; i++)
		if (i != 0 && i != 4 && i != 5 && i != 9)
			match_entry(tm, 0x33, h[i], i);
	match_none(tm, 0x33, 0);
	dpv_tm_destroy(tm);
}

static void
max_tags_limit_1048575_creates_and_fills(void **state)
{
	const uint32_t n = DPV_TM_MAX_TAGS_LIMIT;
	struct dpv_tm *tm = tm_new(n, 1, 1, 0);
	struct dpv_tm_op op;
	struct dpv_tm_cqe cqe;
	uint32_t i;

	(void)state;
	for (i = 0; i < n; i++) {
		op = op_add((uint64_t)i << 20, DPV_TM_MASK_EXACT, i, 0);
		assert_int_equal(dpv_tm_post(tm, &op), 0);
		assert_int_equal(op.handle, i);
		dpv_tm_exec(tm, &op, &cqe);
		assert_int_equal(cqe.status, DPV_TM_ST_SUCCESS);
	}
	op = op_add(0, DPV_TM_MASK_EXACT, 0, SIG);
	assert_int_equal(dpv_tm_post(tm, &op), ENOMEM);
	assert_int_equal(stats(tm).listed, n);
	assert_int_equal(stats(tm).allocated, n);

	match_entry(tm, (uint64_t)(n - 1) << 20, n - 1, n - 1);
	match_entry(tm, 0, 0, 0);
	match_entry(tm, (uint64_t)524287 << 20, 524287, 524287);
	match_none(tm, ((uint64_t)n << 20) | 1, 0);
	del_entry(tm, 12345);
	assert_int_equal(dpv_tm_release(tm, 0), 0);
	report_s(tm, 1);
	assert_int_equal(add_entry(tm, 7, DPV_TM_MASK_EXACT, 7), 12345);
	assert_int_equal(add_entry(tm, 8, DPV_TM_MASK_EXACT, 8), 0);
	assert_int_equal(dpv_tm_post(tm, &op), ENOMEM);
	dpv_tm_destroy(tm);
}

/*
 * hash_collisions_keep_order: a model of the rules (list in add order, eligibility,
 * FIFO handle queue) checked against every decision of the engine, on tags built to
 * collide in any plausible hash of exact tags, mixed with wildcards of many masks and
 * duplicates.
 */
enum { HC_TAGS = 2048, HC_ENTS = 65536, HC_STEPS = 40000 };

struct hc_ent {
	uint64_t tag;
	uint64_t mask;
	uint32_t need;
	uint32_t handle;
	bool listed;
	bool allocated;
};

struct hc_model {
	struct hc_ent ent[HC_ENTS];
	uint32_t n_ent;
	uint32_t listed[HC_TAGS]; /* ent indices in add order */
	uint32_t n_listed;
	uint32_t alloc[HC_TAGS];  /* ent indices whose handle is allocated */
	uint32_t n_alloc;
	uint32_t freeq[HC_TAGS];  /* handle FIFO */
	uint32_t free_head;
	uint32_t n_free;
	uint32_t u;
	uint32_t s;
};

static uint64_t
hc_exact_tag(uint64_t *rng)
{
	uint64_t k = rng_next(rng) % 48;

	switch (rng_next(rng) % 5) {
	case 0:
		return k << 32;              /* differ only in the high word */
	case 1:
		return k << 58;              /* differ only in the top bits */
	case 2:
		return k << 12;              /* a page-size stride */
	case 3:
		return k * 0x9e3779b97f4a7c15ull; /* golden-ratio multiples */
	default:
		return k;                    /* small integers */
	}
}

static void
hc_wildcard(uint64_t *rng, uint64_t *tag, uint64_t *mask)
{
	uint64_t k = rng_next(rng) % 48;
	uint64_t junk = rng_next(rng);

	/* Tags carry bits outside their mask: only the XOR rule ignores them. */
	switch (rng_next(rng) % 8) {
	case 0:
	case 1:
		*mask = 0xffffffff00000000ull;
		*tag = (k << 32) | (junk & 0xffffffffull);
		break;
	case 2:
	case 3:
		*mask = 0x00000000ffffffffull;
		*tag = k | (junk & 0xffffffff00000000ull);
		break;
	case 4:
	case 5:
		*mask = 0xfc00000000000000ull;
		*tag = (k << 58) | (junk & ~0xfc00000000000000ull);
		break;
	case 6:
		*mask = 0xfffull;
		*tag = (k & 0xfff) | (junk & ~0xfffull);
		break;
	default:
		/* Many distinct masks, more than any small set of per-mask indexes holds. */
		*mask = (rng_next(rng) % 16 == 0) ? 0 : ~(0xfull << (4 * (k % 16)));
		*tag = k << 12;
		break;
	}
}

static void
hc_free_handle(struct dpv_tm *tm, struct hc_model *md, uint32_t alloc_pos)
{
	struct hc_ent *e = &md->ent[md->alloc[alloc_pos]];

	assert_int_equal(dpv_tm_release(tm, e->handle), 0);
	e->allocated = false;
	md->freeq[(md->free_head + md->n_free) % HC_TAGS] = e->handle;
	md->n_free++;
	md->alloc[alloc_pos] = md->alloc[--md->n_alloc];
}

static void
hc_unlist(struct hc_model *md, uint32_t pos)
{
	md->ent[md->listed[pos]].listed = false;
	memmove(&md->listed[pos], &md->listed[pos + 1],
		(md->n_listed - pos - 1) * sizeof(md->listed[0]));
	md->n_listed--;
}

static void
hc_add(struct dpv_tm *tm, struct hc_model *md, uint64_t *rng)
{
	struct hc_ent *e = &md->ent[md->n_ent];
	struct dpv_tm_op op;
	struct dpv_tm_cqe cqe;

	if (rng_next(rng) % 6 == 0) {
		hc_wildcard(rng, &e->tag, &e->mask);
	} else {
		e->tag = hc_exact_tag(rng);
		e->mask = DPV_TM_MASK_EXACT;
	}
	/* Most ADDs report S = U; the others leave entries waiting for a later report. */
	op = op_add(e->tag, e->mask, md->n_ent, 0);
	if (rng_next(rng) % 8 != 0) {
		op.flags = SYNC;
		op.unexpected_cnt = md->u;
		md->s = md->u;
	}
	cqe = run_op(tm, &op);
	assert_int_equal(op.handle, md->freeq[md->free_head]);
	assert_int_equal(cqe.status, DPV_TM_ST_SUCCESS);
	assert_int_equal(cqe.flags, md->s != md->u ? DPV_TM_CQE_F_SYNC_REQ : 0);
	e->need = md->u;
	md->free_head = (md->free_head + 1) % HC_TAGS;
	md->n_free--;
	e->handle = op.handle;
	e->listed = true;
	e->allocated = true;
	md->listed[md->n_listed++] = md->n_ent;
	md->alloc[md->n_alloc++] = md->n_ent;
	md->n_ent++;
}

/*
 * Deliver @p tag and check the engine against the model's earliest matching entry.
 * Returns the consumed entry's index in ent[], or HC_ENTS when the message was unexpected.
 */
static uint32_t
hc_deliver(struct dpv_tm *tm, struct hc_model *md, uint64_t tag)
{
	struct dpv_tm_match m = deliver(tm, IBV_TMH_EAGER, tag, true);
	uint32_t consumed, i;

	for (i = 0; i < md->n_listed; i++) {
		const struct hc_ent *e = &md->ent[md->listed[i]];

		if (((tag ^ e->tag) & e->mask) == 0 && (int32_t)(md->s - e->need) >= 0)
			break;
	}
	if (i == md->n_listed) {
		assert_int_equal(m.kind, DPV_TM_UNEXPECTED);
		md->u++;
		assert_int_equal(m.flags, md->u - md->s > DPV_TM_DEFAULT_SYNC_THRESHOLD ?
				 DPV_TM_CQE_F_SYNC_REQ : 0);
		return HC_ENTS;
	}
	assert_int_equal(m.kind, DPV_TM_EXPECTED_EAGER);
	assert_int_equal(m.recv_wr_id, md->listed[i]);
	assert_int_equal(m.handle, md->ent[md->listed[i]].handle);
	consumed = md->listed[i];
	hc_unlist(md, i);
	return consumed;
}

static void
hc_message(struct dpv_tm *tm, struct hc_model *md, uint64_t *rng)
{
	uint32_t consumed, i;
	uint64_t tag;

	if (md->n_listed > 0 && rng_next(rng) % 4 != 0)
		tag = md->ent[md->listed[rng_next(rng) % md->n_listed]].tag;
	else
		tag = hc_exact_tag(rng) ^ ((rng_next(rng) % 8 == 0) ? rng_next(rng) : 0);
	consumed = hc_deliver(tm, md, tag);
	/* Mostly the poll side ends a consumed entry soon; the rest stay for DEL races. */
	if (consumed == HC_ENTS || rng_next(rng) % 4 == 0)
		return;
	for (i = 0; md->alloc[i] != consumed; i++)
		;
	hc_free_handle(tm, md, i);
}

static void
hc_del(struct dpv_tm *tm, struct hc_model *md, uint64_t *rng)
{
	uint32_t pos = rng_next(rng) % md->n_alloc;
	struct hc_ent *e = &md->ent[md->alloc[pos]];
	struct dpv_tm_op op = op_del(e->handle, 0);
	struct dpv_tm_cqe cqe = run_op(tm, &op);
	uint32_t i;

	assert_int_equal(cqe.flags, md->s != md->u ? DPV_TM_CQE_F_SYNC_REQ : 0);
	if (!e->listed) {
		/* Consumed earlier: the poll side releases on the match's completion. */
		assert_int_equal(cqe.status, DPV_TM_ST_TM_ERR);
		assert_false(cqe.release);
		hc_free_handle(tm, md, pos);
		return;
	}
	assert_int_equal(cqe.status, DPV_TM_ST_SUCCESS);
	assert_true(cqe.release);
	for (i = 0; md->listed[i] != md->alloc[pos]; i++)
		;
	hc_unlist(md, i);
	hc_free_handle(tm, md, pos);
}

static void
hash_collisions_keep_order(void **state)
{
	struct hc_model *md = calloc(1, sizeof(*md));
	struct dpv_tm *tm = tm_new(HC_TAGS, 16, 1, 0);
	uint64_t rng = 0x243f6a8885a308d3ull;
	struct dpv_tm_stats st;
	uint32_t i, step;

	(void)state;
	assert_non_null(md);
	for (i = 0; i < HC_TAGS; i++)
		md->freeq[i] = i;
	md->n_free = HC_TAGS;
	for (i = 0; i < HC_TAGS * 3 / 4; i++)
		hc_add(tm, md, &rng);
	for (step = 0; step < HC_STEPS && md->n_ent < HC_ENTS; step++) {
		uint64_t r = rng_next(&rng) % 100;

		if (r < 50 && md->n_free > 0) {
			hc_add(tm, md, &rng);
		} else if (r < 80) {
			hc_message(tm, md, &rng);
		} else if (r < 90 && md->n_alloc > 0) {
			hc_del(tm, md, &rng);
		} else {
			/* The poll side ends a consumed entry (not necessarily the oldest). */
			i = (uint32_t)(rng_next(&rng) % (md->n_alloc + 1));
			for (; i < md->n_alloc; i++)
				if (!md->ent[md->alloc[i]].listed) {
					hc_free_handle(tm, md, i);
					break;
				}
		}
	}
	/* Drain with listed entries' own tags, all eligible: each message consumes one. */
	report_s(tm, md->u);
	md->s = md->u;
	while (md->n_listed > 0)
		hc_deliver(tm, md, md->ent[md->listed[rng_next(&rng) % md->n_listed]].tag);
	st = stats(tm);
	assert_int_equal(st.listed, md->n_listed);
	assert_int_equal(st.allocated, md->n_alloc);
	assert_int_equal(dpv_tm_unexpected(tm), md->u);
	dpv_tm_destroy(tm);
	free(md);
}

static void
stats_count_events(void **state)
{
	struct dpv_tm *tm = tm_new(8, 8, 1, 0);
	struct dpv_tm_op add, del, sync;
	struct dpv_tm_stats st;
	struct dpv_tm_match m;
	struct dpv_tm_tmh tmh;
	uint8_t short_msg[4] = { IBV_TMH_EAGER, 0, 0, 0 };
	uint32_t a, b, c;

	(void)state;
	st = stats(tm);
	assert_int_equal(st.adds + st.dels + st.del_errors + st.syncs, 0);
	assert_int_equal(st.expected + st.unexpected + st.no_tag + st.rnr, 0);
	assert_int_equal(st.listed + st.allocated, 0);

	a = add_entry(tm, 1, DPV_TM_MASK_EXACT, 1);
	b = add_entry(tm, 2, DPV_TM_MASK_EXACT, 2);
	c = add_entry(tm, 3, DPV_TM_MASK_EXACT, 3);
	add = op_add(4, DPV_TM_MASK_EXACT, 4, 0);
	assert_int_equal(dpv_tm_post(tm, &add), 0);
	st = stats(tm);
	assert_int_equal(st.adds, 3);
	assert_int_equal(st.listed, 3);
	assert_int_equal(st.allocated, 4);
	exec_op(tm, &add);
	st = stats(tm);
	assert_int_equal(st.adds, 4);
	assert_int_equal(st.listed, 4);

	match_entry(tm, 1, a, 1);
	del_entry(tm, b);
	del = op_del(a, 0);
	run_op(tm, &del);
	assert_int_equal(dpv_tm_release(tm, a), 0);
	sync = op_sync(0, SIG | SYNC);
	run_op(tm, &sync);
	/* A TM_SYNC report on an ADD does not make it a SYNC op. */
	add = op_add(5, DPV_TM_MASK_EXACT, 5, SIG | SYNC);
	run_op(tm, &add);

	push_unexpected(tm, 2);
	m = deliver(tm, IBV_TMH_NO_TAG, 0, true);
	assert_int_equal(m.kind, DPV_TM_NO_TAG);
	m = deliver(tm, IBV_TMH_FIN, 0, true);
	assert_int_equal(m.kind, DPV_TM_NO_TAG);
	dpv_tm_parse_tmh(short_msg, sizeof(short_msg), &tmh);
	memset(&m, POISON, sizeof(m));
	dpv_tm_match(tm, &tmh, true, &m);
	assert_int_equal(m.kind, DPV_TM_NO_TAG);
	m = deliver(tm, IBV_TMH_EAGER, ABSENT_TAG, false);
	assert_int_equal(m.kind, DPV_TM_RNR);
	m = deliver(tm, IBV_TMH_NO_TAG, 0, false);
	assert_int_equal(m.kind, DPV_TM_RNR);
	match_entry(tm, 3, c, 3);

	st = stats(tm);
	assert_int_equal(st.adds, 5);
	assert_int_equal(st.dels, 1);
	assert_int_equal(st.del_errors, 1);
	assert_int_equal(st.syncs, 1);
	assert_int_equal(st.expected, 2);
	assert_int_equal(st.unexpected, 2);
	assert_int_equal(st.no_tag, 3);
	assert_int_equal(st.rnr, 2);
	assert_int_equal(st.listed, 2);
	assert_int_equal(st.allocated, 3);
	dpv_tm_destroy(tm);
}

/*
 * dpv_tm_match_burst() decides a burst as dpv_tm_match() would one message after the
 * other: a message sees the list as the earlier ones left it (two messages of one tag
 * take two entries in add order), and ordinary SRQ WRs run out mid-burst into RNR.
 */
static void
match_burst_decides_in_arrival_order(void **state)
{
	struct dpv_tm *tm = tm_new(16, 16, 1, 0);
	struct dpv_tm_tmh tmh[6];
	struct dpv_tm_match m[6];
	uint32_t h1, h2, u;

	(void)state;
	h1 = add_entry(tm, 7, DPV_TM_MASK_EXACT, 701);
	h2 = add_entry(tm, 7, DPV_TM_MASK_EXACT, 702);
	tmh[0] = (struct dpv_tm_tmh){ .opcode = IBV_TMH_EAGER, .tag = 7 };
	tmh[1] = (struct dpv_tm_tmh){ .opcode = IBV_TMH_RNDV, .tag = 7 };
	tmh[2] = (struct dpv_tm_tmh){ .opcode = IBV_TMH_EAGER, .tag = 7 };   /* none left */
	tmh[3] = (struct dpv_tm_tmh){ .opcode = IBV_TMH_NO_TAG };
	tmh[4] = (struct dpv_tm_tmh){ .opcode = IBV_TMH_EAGER, .tag = 9 };   /* no WR left */
	tmh[5] = (struct dpv_tm_tmh){ .opcode = IBV_TMH_NO_TAG };
	u = dpv_tm_unexpected(tm);
	memset(m, POISON, sizeof(m));
	dpv_tm_match_burst(tm, tmh, 6, 2, m);
	assert_expected(&m[0], DPV_TM_EXPECTED_EAGER, h1, 701);
	assert_expected(&m[1], DPV_TM_EXPECTED_RNDV, h2, 702);
	assert_not_expected(&m[2], DPV_TM_UNEXPECTED, 0);
	assert_not_expected(&m[3], DPV_TM_NO_TAG, 0);
	assert_not_expected(&m[4], DPV_TM_RNR, 0);
	assert_not_expected(&m[5], DPV_TM_RNR, 0);
	assert_int_equal(dpv_tm_unexpected(tm), u + 1);
	dpv_tm_destroy(tm);
}

/* Enough exact entries (tags FILL_TAG + i) that the list is hashed, not a short array. */
#define FILL_TAG 0x100000ull
#define FILL_N 10u

static void
fill_hashed(struct dpv_tm *tm, uint32_t *h)
{
	for (uint32_t i = 0; i < FILL_N; i++)
		h[i] = add_entry(tm, FILL_TAG + i, DPV_TM_MASK_EXACT, 900 + i);
}

/*
 * A burst on a hashed list of exact entries only keeps §4 and §5: two messages of one
 * tag take its two entries in add order, an entry added after an unexpected message
 * is skipped until S reaches it, and ordinary SRQ WRs run out mid-burst into RNR.
 */
static void
match_burst_exact_list_keeps_order_and_phases(void **state)
{
	struct dpv_tm *tm = tm_new(64, 16, 1, 0);
	uint32_t fill[FILL_N], h7a, h7b, h8, u;
	struct dpv_tm_tmh tmh[6];
	struct dpv_tm_match m[6];

	(void)state;
	fill_hashed(tm, fill);
	h7a = add_entry(tm, 7, DPV_TM_MASK_EXACT, 701);
	h7b = add_entry(tm, 7, DPV_TM_MASK_EXACT, 702);
	match_none(tm, ABSENT_TAG, 0);
	{
		/* U is 1 and S 0: this entry needs S = 1. */
		struct dpv_tm_op op = op_add(8, DPV_TM_MASK_EXACT, 801, SIG);
		struct dpv_tm_cqe cqe = run_op(tm, &op);

		assert_cqe(&cqe, &op, DPV_TM_ST_SUCCESS, DPV_TM_CQE_F_SYNC_REQ, true, false);
		h8 = op.handle;
	}
	tmh[0] = (struct dpv_tm_tmh){ .opcode = IBV_TMH_EAGER, .tag = 7 };
	tmh[1] = (struct dpv_tm_tmh){ .opcode = IBV_TMH_RNDV, .tag = 7 };
	tmh[2] = (struct dpv_tm_tmh){ .opcode = IBV_TMH_EAGER, .tag = 7 };   /* none left */
	tmh[3] = (struct dpv_tm_tmh){ .opcode = IBV_TMH_EAGER, .tag = 8 };   /* not eligible */
	tmh[4] = (struct dpv_tm_tmh){ .opcode = IBV_TMH_NO_TAG };
	tmh[5] = (struct dpv_tm_tmh){ .opcode = IBV_TMH_EAGER, .tag = FILL_TAG }; /* no WR left */
	u = dpv_tm_unexpected(tm);
	memset(m, POISON, sizeof(m));
	dpv_tm_match_burst(tm, tmh, 6, 3, m);
	assert_expected(&m[0], DPV_TM_EXPECTED_EAGER, h7a, 701);
	assert_expected(&m[1], DPV_TM_EXPECTED_RNDV, h7b, 702);
	assert_not_expected(&m[2], DPV_TM_UNEXPECTED, 0);
	assert_not_expected(&m[3], DPV_TM_UNEXPECTED, 0);
	assert_not_expected(&m[4], DPV_TM_NO_TAG, 0);
	assert_expected(&m[5], DPV_TM_EXPECTED_EAGER, fill[0], 900);
	assert_int_equal(dpv_tm_unexpected(tm), u + 2);

	/* Once S reaches its need, the entry of tag 8 matches within a burst. */
	report_s(tm, 1);
	tmh[0] = (struct dpv_tm_tmh){ .opcode = IBV_TMH_EAGER, .tag = 8 };
	tmh[1] = (struct dpv_tm_tmh){ .opcode = IBV_TMH_EAGER, .tag = FILL_TAG + 1 };
	tmh[2] = (struct dpv_tm_tmh){ .opcode = IBV_TMH_EAGER, .tag = 8 };   /* none left */
	tmh[3] = (struct dpv_tm_tmh){ .opcode = IBV_TMH_EAGER, .tag = FILL_TAG + 2 };
	memset(m, POISON, sizeof(m));
	dpv_tm_match_burst(tm, tmh, 4, 0, m);
	assert_expected(&m[0], DPV_TM_EXPECTED_EAGER, h8, 801);
	assert_expected(&m[1], DPV_TM_EXPECTED_EAGER, fill[1], 901);
	assert_not_expected(&m[2], DPV_TM_RNR, 0);
	assert_expected(&m[3], DPV_TM_EXPECTED_EAGER, fill[2], 902);
	dpv_tm_destroy(tm);
}

/*
 * A burst on a hashed list that holds a wildcard entry: the earliest-added entry that
 * matches wins, exact or wildcard, and once the burst has consumed the wildcard, a
 * later message of the burst no longer finds it.
 */
static void
match_burst_wildcard_list_earliest_added_wins(void **state)
{
	struct dpv_tm *tm = tm_new(64, 16, 1, 0);
	uint32_t fill[FILL_N], he1, hw, he2, u;
	struct dpv_tm_tmh tmh[5];
	struct dpv_tm_match m[5];

	(void)state;
	fill_hashed(tm, fill);
	he1 = add_entry(tm, 0x701, DPV_TM_MASK_EXACT, 1);
	hw = add_entry(tm, 0x700, 0xff00, 2);
	he2 = add_entry(tm, 0x701, DPV_TM_MASK_EXACT, 3);
	for (uint32_t i = 0; i < 3; i++)
		tmh[i] = (struct dpv_tm_tmh){ .opcode = IBV_TMH_EAGER, .tag = 0x701 };
	tmh[3] = (struct dpv_tm_tmh){ .opcode = IBV_TMH_EAGER, .tag = 0x702 };
	tmh[4] = (struct dpv_tm_tmh){ .opcode = IBV_TMH_EAGER, .tag = FILL_TAG + 3 };
	u = dpv_tm_unexpected(tm);
	memset(m, POISON, sizeof(m));
	dpv_tm_match_burst(tm, tmh, 5, 1, m);
	assert_expected(&m[0], DPV_TM_EXPECTED_EAGER, he1, 1);
	assert_expected(&m[1], DPV_TM_EXPECTED_EAGER, hw, 2);
	assert_expected(&m[2], DPV_TM_EXPECTED_EAGER, he2, 3);
	assert_not_expected(&m[3], DPV_TM_UNEXPECTED, 0);
	assert_expected(&m[4], DPV_TM_EXPECTED_EAGER, fill[3], 903);
	assert_int_equal(dpv_tm_unexpected(tm), u + 1);
	dpv_tm_destroy(tm);
}

/* dpv_tm_entries() lists exactly the entries in the tag list, with what they hold: not
 * an ADD still unexecuted, nor a matched or deleted entry, and eligibility as §5 says. */
static void
entries_report_the_listed_entries(void **state)
{
	struct dpv_tm *tm = tm_new(64, 16, 2, 0);
	struct dpv_tm_sge sg[2] = {{.addr = 0x1000, .length = 100, .lkey = 7},
				   {.addr = 0x2000, .length = 28, .lkey = 7}};
	struct dpv_tm_entry_info info[8];
	struct dpv_tm_op pending;
	uint32_t h0, h1, h2, h3;

	(void)state;
	assert_int_equal(dpv_tm_config_get(tm)->max_num_tags, 64);
	assert_int_equal(dpv_tm_entries(tm, 0, info, 8), 0);
	h0 = add_entry(tm, 10, DPV_TM_MASK_EXACT, 100);
	h1 = add_entry(tm, 11, 0xff00, 101);
	h2 = add_entry(tm, 12, DPV_TM_MASK_EXACT, 102);
	/* Unexpected, then an ADD that needs S = 1. */
	match_none(tm, ABSENT_TAG, 0);
	{
		struct dpv_tm_op op = op_add(13, DPV_TM_MASK_EXACT, 103, 0);

		op.sg_list = sg;
		op.num_sge = 2;
		assert_int_equal(dpv_tm_post(tm, &op), 0);
		exec_op(tm, &op);
		h3 = op.handle;
	}
	pending = op_add(14, DPV_TM_MASK_EXACT, 104, 0);
	assert_int_equal(dpv_tm_post(tm, &pending), 0);
	assert_int_equal(dpv_tm_ops_outstanding(tm), 1);
	match_entry(tm, 10, h0, 100);
	del_entry(tm, h2);

	memset(info, POISON, sizeof(info));
	assert_int_equal(dpv_tm_entries(tm, 0, info, 8), 2);
	assert_int_equal(info[0].handle, h1);
	assert_int_equal(info[0].tag, 11);
	assert_int_equal(info[0].mask, 0xff00);
	assert_int_equal(info[0].recv_wr_id, 101);
	assert_int_equal(info[0].need, 0);
	assert_int_equal(info[0].seq, 1);
	assert_int_equal(info[0].num_sge, 0);
	assert_int_equal(info[0].length, 0);
	assert_int_equal(info[0].sge.addr, 0);
	assert_true(info[0].eligible);
	assert_int_equal(info[1].handle, h3);
	assert_int_equal(info[1].need, 1);
	assert_int_equal(info[1].seq, 3);
	assert_int_equal(info[1].num_sge, 2);
	assert_int_equal(info[1].length, 128);
	assert_int_equal(info[1].sge.addr, 0x1000);
	assert_int_equal(info[1].sge.lkey, 7);
	assert_false(info[1].eligible);
	/* From a handle on, and no more than asked. */
	assert_int_equal(dpv_tm_entries(tm, h1 + 1, info, 8), 1);
	assert_int_equal(info[0].handle, h3);
	assert_int_equal(dpv_tm_entries(tm, 0, info, 1), 1);
	assert_int_equal(info[0].handle, h1);
	assert_int_equal(dpv_tm_entries(tm, 64, info, 8), 0);

	report_s(tm, 1);
	exec_op(tm, &pending);
	assert_int_equal(dpv_tm_ops_outstanding(tm), 0);
	assert_int_equal(dpv_tm_entries(tm, 0, info, 8), 3);
	assert_true(info[1].eligible);
	assert_int_equal(info[2].handle, pending.handle);
	assert_int_equal(info[2].tag, 14);
	dpv_tm_destroy(tm);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(create_rejects_bad_config),
		cmocka_unit_test(destroy_accepts_null),
		cmocka_unit_test(add_returns_handle_synchronously),
		cmocka_unit_test(add_not_matchable_until_exec),
		cmocka_unit_test(handles_reused_oldest_first_after_release),
		cmocka_unit_test(handle_not_reused_before_release),
		cmocka_unit_test(del_of_unallocated_handle_is_einval),
		cmocka_unit_test(del_after_release_is_einval),
		cmocka_unit_test(release_of_unallocated_is_einval),
		cmocka_unit_test(list_full_add_is_enomem_and_exact_capacity),
		cmocka_unit_test(ops_full_is_enomem_until_exec),
		cmocka_unit_test(unknown_opcode_is_einval),
		cmocka_unit_test(unknown_flag_is_einval),
		cmocka_unit_test(num_sge_above_max_is_einval),
		cmocka_unit_test(null_sg_list_with_sge_is_einval),
		cmocka_unit_test(zero_sge_add_is_legal),
		cmocka_unit_test(einval_precedes_enomem),
		cmocka_unit_test(error_changes_nothing),
		cmocka_unit_test(unsignaled_success_writes_no_visible_cqe),
		cmocka_unit_test(signaled_ops_complete_with_wr_id),
		cmocka_unit_test(del_racing_consumption_is_tm_err_even_unsignaled),
		cmocka_unit_test(del_twice_second_is_tm_err),
		cmocka_unit_test(unsignaled_del_releases_via_hidden_cqe),
		cmocka_unit_test(del_posted_before_add_executes),
		cmocka_unit_test(sync_op_never_sets_sync_req),
		cmocka_unit_test(exact_match_rule_xor_mask),
		cmocka_unit_test(wildcard_mask_matches),
		cmocka_unit_test(earliest_added_wins_exact_then_wildcard),
		cmocka_unit_test(earliest_added_wins_wildcard_then_exact),
		cmocka_unit_test(earliest_added_wins_as_the_list_grows_and_empties),
		cmocka_unit_test(each_entry_matches_once),
		cmocka_unit_test(eager_and_rndv_kinds),
		cmocka_unit_test(matched_entry_returns_buffers_and_wr_id),
		cmocka_unit_test(sg_list_copied_at_post),
		cmocka_unit_test(no_tag_consumes_srq_wr),
		cmocka_unit_test(fin_and_unknown_opcodes_are_no_tag),
		cmocka_unit_test(no_tag_never_sets_sync_req),
		cmocka_unit_test(short_payload_is_no_tag),
		cmocka_unit_test(parse_tmh_big_endian_fields),
		cmocka_unit_test(parse_tmh_reports_unknown_opcode_as_read),
		cmocka_unit_test(unexpected_counts_u),
		cmocka_unit_test(rnr_when_no_srq_wr_changes_nothing),
		cmocka_unit_test(expected_match_needs_no_srq_wr),
		cmocka_unit_test(add_not_eligible_until_sync_reaches_need),
		cmocka_unit_test(add_with_sync_equal_u_eligible_at_once),
		cmocka_unit_test(ineligible_entry_can_be_deleted),
		cmocka_unit_test(sync_req_on_add_del_when_s_ne_u),
		cmocka_unit_test(no_sync_req_when_s_eq_u),
		cmocka_unit_test(sync_flag_applies_before_the_op),
		cmocka_unit_test(unexpected_cnt_ignored_without_sync_flag),
		cmocka_unit_test(sync_req_on_unexpected_above_threshold),
		cmocka_unit_test(sync_threshold_zero_means_default),
		cmocka_unit_test(counters_wrap_modulo_2_32),
		cmocka_unit_test(eligibility_is_signed_32bit_distance),
		cmocka_unit_test(wildcards_of_many_masks_earliest_wins),
		cmocka_unit_test(wildcards_sharing_a_chain_found_until_the_last_leaves),
		cmocka_unit_test(ineligible_wildcards_of_many_masks_skipped),
		cmocka_unit_test(many_same_tag_fifo),
		cmocka_unit_test(del_from_middle_keeps_order),
		cmocka_unit_test(max_tags_limit_1048575_creates_and_fills),
		cmocka_unit_test(hash_collisions_keep_order),
		cmocka_unit_test(stats_count_events),
		cmocka_unit_test(match_burst_decides_in_arrival_order),
		cmocka_unit_test(match_burst_exact_list_keeps_order_and_phases),
		cmocka_unit_test(match_burst_wildcard_list_earliest_added_wins),
		cmocka_unit_test(entries_report_the_listed_entries),
	};

	return cmocka_run_group_tests_name("tm_rules", tests, NULL, NULL);
}
