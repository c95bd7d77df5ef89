/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Completion timestamps (ibv_create_cq_ex(3): IBV_WC_EX_WITH_COMPLETION_TIMESTAMP and
 * _WALLCLOCK, ibv_query_rt_values_ex(3), doc/guides/timestamps.md): the device's clock
 * as ibv_query_device_ex() reports it, its raw value, and the stamps of send, receive and tag-matching completions, each between the clock
 * read before the post and after the poll, the receive's no later than the send's
 * (its ACK comes after it).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <infiniband/tm_types.h>
#include <rte_cycles.h>

#include "test_verbs.h"

#define LW IBV_ACCESS_LOCAL_WRITE
#define STAMP IBV_WC_EX_WITH_COMPLETION_TIMESTAMP
#define WALL IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK
/* The wall clock's stamps are the TSC's cycles since one reading of both clocks, taken
 * when the process's first CQ asked for them, at EAL's measure of the TSC's rate: the
 * system clock may have been slewed since, and that measure (taken under valgrind too)
 * may be off by a fraction of a percent, so the two drift apart with the time since.
 * Allowed: 10 ms, and 1 % of the time since this program started, before any CQ. */
#define WALL_SLACK_NS 10000000u
static uint64_t started_ns;

static uint64_t wall_now(void);

__attribute__((constructor)) static void note_start(void)
{
	started_ns = wall_now();
}

static uint64_t wall_slack(uint64_t now)
{
	return WALL_SLACK_NS + (now - started_ns) / 100;
}

struct stamp {
	uint64_t wr_id;
	enum ibv_wc_status status;
	enum ibv_wc_opcode opcode;
	uint64_t ts, wall_ns;
};

static uint64_t raw_clock(struct side *s)
{
	struct ibv_values_ex v = {.comp_mask = IBV_VALUES_MASK_RAW_CLOCK};

	assert_int_equal(ibv_query_rt_values_ex(s->ctx, &v), 0);
	assert_int_equal(v.raw_clock.tv_sec, 0);
	return (uint64_t)v.raw_clock.tv_nsec;
}

static uint64_t wall_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* One completion of @p cq, its stamps read as its flags @p wc_flags ask. */
static void expect_stamp(struct ibv_cq_ex *cq, uint64_t wc_flags, struct stamp *st)
{
	struct ibv_poll_cq_attr attr = {.comp_mask = 0};
	uint64_t end = now_ms() + WAIT_MS;
	int ret;

	/* As the fixture's poll_ex() waits, with the stamps read before ibv_end_poll(). */
	while ((ret = ibv_start_poll(cq, &attr)) == ENOENT && now_ms() <= end)
		;
	assert_int_equal(ret, 0);
	memset(st, 0, sizeof(*st));
	st->wr_id = cq->wr_id;
	st->status = cq->status;
	st->opcode = ibv_wc_read_opcode(cq);
	if (wc_flags & STAMP)
		st->ts = ibv_wc_read_completion_ts(cq);
	if (wc_flags & WALL)
		st->wall_ns = ibv_wc_read_completion_wallclock_ns(cq);
	ibv_end_poll(cq);
	assert_int_equal(st->status, IBV_WC_SUCCESS);
}

static void device_clock_is_reported(void **state)
{
	struct ibv_device_attr_ex a;
	struct ibv_values_ex v = {.comp_mask = IBV_VALUES_MASK_RAW_CLOCK | (1u << 5)};
	uint64_t c0, c1;

	(void)state;
	memset(&a, 0, sizeof(a));
	assert_int_equal(ibv_query_device_ex(A.ctx, NULL, &a), 0);
	/* The clock is the TSC (doc/guides/timestamps.md): its rate in kHz, 64 bits. */
	assert_true(a.completion_timestamp_mask == UINT64_MAX);
	assert_true(a.hca_core_clock == rte_get_tsc_hz() / 1000);
	/* ibv_query_rt_values_ex(3): a bit it does not define is EINVAL. */
	assert_int_equal(ibv_query_rt_values_ex(A.ctx, &v), EINVAL);
	v.comp_mask = 0;
	assert_int_equal(ibv_query_rt_values_ex(A.ctx, &v), 0);
	c0 = rte_get_tsc_cycles();
	c1 = raw_clock(&A);
	assert_true(c1 >= c0 && raw_clock(&B) >= c1); /* the TSC, every device's */
}

static void rc_send_and_receive_are_stamped(void **state)
{
	struct ibv_cq_ex *scq = new_cq_ex(&A, 16, IBV_WC_STANDARD_FLAGS | STAMP | WALL);
	struct ibv_cq_ex *rcq = new_cq_ex(&B, 16, IBV_WC_STANDARD_FLAGS | STAMP);
	struct ibv_qp *a = new_qp(&A, IBV_QPT_RC, ibv_cq_ex_to_cq(scq), ibv_cq_ex_to_cq(scq),
				  NULL, 16, 16);
	struct ibv_qp *b = new_qp(&B, IBV_QPT_RC, ibv_cq_ex_to_cq(rcq), ibv_cq_ex_to_cq(rcq),
				  NULL, 16, 16);
	struct ibv_mr *smr = new_mr(&A, 4096, LW), *rmr = new_mr(&B, 4096, LW);
	struct stamp s, r;
	uint64_t t0, t1, w0, w1;

	(void)state;
	connect_rc(a, b, &conn_default);
	assert_int_equal(post_recv(b, 1, rmr->addr, 4096, rmr->lkey), 0);
	w0 = wall_now();
	t0 = raw_clock(&A);
	assert_int_equal(post_send(a, IBV_WR_SEND, 2, smr->addr, 64, smr->lkey,
				   IBV_SEND_SIGNALED), 0);
	expect_stamp(rcq, IBV_WC_STANDARD_FLAGS | STAMP, &r);
	expect_stamp(scq, IBV_WC_STANDARD_FLAGS | STAMP | WALL, &s);
	t1 = raw_clock(&A);
	w1 = wall_now();
	assert_int_equal(r.opcode, IBV_WC_RECV);
	assert_int_equal(s.opcode, IBV_WC_SEND);
	assert_true(t0 <= r.ts && r.ts <= s.ts && s.ts <= t1);
	assert_true(s.wall_ns + wall_slack(w1) >= w0 && s.wall_ns <= w1 + wall_slack(w1));
	/* The legacy poll of a stamping CQ still gives its completions. */
	assert_int_equal(post_recv(b, 3, rmr->addr, 4096, rmr->lkey), 0);
	assert_int_equal(post_send(a, IBV_WR_SEND, 4, smr->addr, 8, smr->lkey,
				   IBV_SEND_SIGNALED), 0);
	expect_send_ok(ibv_cq_ex_to_cq(scq), 4, IBV_WC_SEND);
	expect_send_ok(ibv_cq_ex_to_cq(rcq), 3, IBV_WC_RECV);
}

/* A tag-matching SRQ's CQ stamps its TM operations' completions and its matched
 * receives alike. */
static void tm_completions_are_stamped(void **state)
{
	const uint64_t flags = IBV_WC_STANDARD_FLAGS | IBV_WC_EX_WITH_TM_INFO | STAMP;
	struct ibv_cq_ex *tcq = new_cq_ex(&A, 64, flags);
	struct ibv_srq *srq = new_tm_srq(&A, tcq, 16, 16, 16);
	struct ibv_cq *bcq = new_cq(&B, 16, NULL, NULL);
	struct ibv_qp *a = new_qp(&A, IBV_QPT_RC, ibv_cq_ex_to_cq(tcq), ibv_cq_ex_to_cq(tcq),
				  srq, 0, 0);
	struct ibv_qp *b = new_qp(&B, IBV_QPT_RC, bcq, bcq, NULL, 16, 16);
	struct ibv_mr *tmr = new_mr(&A, 4096, LW), *smr = new_mr(&B, 4096, LW);
	struct ibv_tmh *h = smr->addr;
	struct stamp add, recv;
	uint64_t t0, t1;

	(void)state;
	connect_rc(a, b, &conn_default);
	t0 = raw_clock(&A);
	assert_int_equal(post_tag_add(srq, 5, 6, tmr->addr, 4096, tmr->lkey, 0x7a6, UINT64_MAX,
				      IBV_OPS_SIGNALED, 0, NULL), 0);
	expect_stamp(tcq, flags, &add);
	assert_int_equal(add.opcode, IBV_WC_TM_ADD);
	memset(h, 0, sizeof(*h));
	h->opcode = IBV_TMH_EAGER;
	h->tag = htobe64(0x7a6);
	assert_int_equal(post_send(b, IBV_WR_SEND, 7, smr->addr, sizeof(*h) + 32, smr->lkey,
				   IBV_SEND_SIGNALED), 0);
	expect_send_ok(bcq, 7, IBV_WC_SEND);
	expect_stamp(tcq, flags, &recv);
	t1 = raw_clock(&A);
	assert_int_equal(recv.opcode, IBV_WC_TM_RECV);
	assert_int_equal(recv.wr_id, 6);
	assert_true(t0 <= add.ts && add.ts <= recv.ts && recv.ts <= t1);
}

int run_timestamp_tests(void)
{
	const struct CMUnitTest tests[] = {
		VT(device_clock_is_reported),
		VT(rc_send_and_receive_are_stamped),
		VT(tm_completions_are_stamped),
	};

	return cmocka_run_group_tests_name("timestamp", tests, NULL, NULL);
}
