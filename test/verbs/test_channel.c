/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Completion channels: ibv_req_notify_cq arms a CQ once; the next completion (or the
 * next solicited one) makes the channel's fd readable without anyone polling, and
 * ibv_get_cq_event / ibv_ack_cq_events hand the event out.
 */
#include <poll.h>
#include <string.h>

#include "test_verbs.h"

#define LW IBV_ACCESS_LOCAL_WRITE

struct chan {
	struct ibv_comp_channel *ch;
	struct rc_pair p;     /* p.bcq reports to ch */
	struct ibv_mr *smr, *rmr;
	int cq_context;       /* its address is the CQ's context */
};

static void chan_setup(struct chan *c)
{
	c->ch = new_channel(&B);
	c->p.acq = new_cq(&A, 64, NULL, NULL);
	c->p.bcq = new_cq(&B, 64, c->ch, &c->cq_context);
	c->p.a = new_qp(&A, IBV_QPT_RC, c->p.acq, c->p.acq, NULL, 16, 16);
	c->p.b = new_qp(&B, IBV_QPT_RC, c->p.bcq, c->p.bcq, NULL, 16, 16);
	connect_rc(c->p.a, c->p.b, &conn_default);
	c->smr = new_mr(&A, 64, LW);
	c->rmr = new_mr(&B, 64, LW);
}

/* Wait on the channel's fd only: this thread drives nothing meanwhile. */
static bool fd_readable(struct ibv_comp_channel *ch, int ms)
{
	struct pollfd pfd = {.fd = ch->fd, .events = POLLIN};

	return poll(&pfd, 1, ms) == 1 && (pfd.revents & POLLIN);
}

static void chan_send(struct chan *c, uint64_t wr_id, unsigned int flags)
{
	assert_int_equal(post_recv(c->p.b, wr_id, c->rmr->addr, 64, c->rmr->lkey), 0);
	assert_int_equal(post_send(c->p.a, IBV_WR_SEND, wr_id, c->smr->addr, 32, c->smr->lkey,
				   IBV_SEND_SIGNALED | flags), 0);
}

static void expect_event(struct chan *c)
{
	struct ibv_cq *cq = NULL;
	void *ctx = NULL;

	assert_true(fd_readable(c->ch, (int)WAIT_MS));
	assert_int_equal(ibv_get_cq_event(c->ch, &cq, &ctx), 0);
	assert_ptr_equal(cq, c->p.bcq);
	assert_ptr_equal(ctx, &c->cq_context);
	ibv_ack_cq_events(cq, 1);
}

static void expect_recv(struct chan *c, uint64_t wr_id)
{
	struct ibv_wc wc;

	expect_wc(c->p.bcq, &wc);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, wr_id);
	expect_send_ok(c->p.acq, wr_id, IBV_WC_SEND);
}

static void channel_event_once_per_arming(void **state)
{
	struct chan c;

	(void)state;
	chan_setup(&c);
	assert_int_equal(ibv_req_notify_cq(c.p.bcq, 0), 0);
	chan_send(&c, 1, 0);
	expect_event(&c);
	expect_recv(&c, 1);
	/* Not re-armed: the next completion raises no event. */
	chan_send(&c, 2, 0);
	expect_recv(&c, 2);
	assert_false(fd_readable(c.ch, (int)QUIET_MS));
	/* Re-armed: it does again. */
	assert_int_equal(ibv_req_notify_cq(c.p.bcq, 0), 0);
	chan_send(&c, 3, 0);
	expect_event(&c);
	expect_recv(&c, 3);
	assert_false(fd_readable(c.ch, (int)QUIET_MS));
}

static void channel_solicited_only_waits_for_solicited(void **state)
{
	struct chan c;

	(void)state;
	chan_setup(&c);
	assert_int_equal(ibv_req_notify_cq(c.p.bcq, 1), 0);
	chan_send(&c, 1, 0);
	expect_recv(&c, 1);
	assert_false(fd_readable(c.ch, (int)QUIET_MS));
	chan_send(&c, 2, IBV_SEND_SOLICITED);
	expect_event(&c);
	expect_recv(&c, 2);
}

static void channel_solicited_only_wakes_on_error_completion(void **state)
{
	struct ibv_wc wc;
	struct chan c;

	(void)state;
	chan_setup(&c);
	assert_int_equal(post_recv(c.p.b, 5, c.rmr->addr, 64, c.rmr->lkey), 0);
	assert_int_equal(ibv_req_notify_cq(c.p.bcq, 1), 0);
	qp_to_err(c.p.b);
	expect_event(&c);
	expect_wc(c.p.bcq, &wc);
	assert_int_equal(wc.wr_id, 5);
	assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);
}

/* A burst of completions into an armed CQ: one event for the arming, raised once the
 * burst is in (the device reads the arming once a received burst); with solicited-only
 * arming, by the burst's one solicited message, whichever place it has in it. */
static void channel_burst_of_completions(void **state)
{
	enum { N = 8 };
	struct ibv_send_wr wr[N], *bad;
	struct ibv_sge sge[N];
	struct chan c;
	int i, round;

	(void)state;
	chan_setup(&c);
	for (round = 0; round < 3; round++) {
		/* 0: any completion; 1: solicited only, the last solicited; 2: the first. */
		assert_int_equal(ibv_req_notify_cq(c.p.bcq, round != 0), 0);
		for (i = 0; i < N; i++) {
			assert_int_equal(post_recv(c.p.b, 100 * round + i, c.rmr->addr, 64,
						   c.rmr->lkey), 0);
			sge[i] = (struct ibv_sge){.addr = (uintptr_t)c.smr->addr, .length = 32,
						  .lkey = c.smr->lkey};
			wr[i] = (struct ibv_send_wr){.wr_id = 100 * round + i, .sg_list = &sge[i],
						     .num_sge = 1, .opcode = IBV_WR_SEND,
						     .send_flags = IBV_SEND_SIGNALED,
						     .next = i + 1 < N ? &wr[i + 1] : NULL};
		}
		if (round == 1)
			wr[N - 1].send_flags |= IBV_SEND_SOLICITED;
		if (round == 2)
			wr[0].send_flags |= IBV_SEND_SOLICITED;
		assert_int_equal(ibv_post_send(c.p.a, wr, &bad), 0);
		expect_event(&c);
		for (i = 0; i < N; i++)
			expect_recv(&c, 100 * round + i);
		assert_false(fd_readable(c.ch, (int)QUIET_MS));
	}
}

int run_channel_tests(void)
{
	const struct CMUnitTest tests[] = {
		VT(channel_event_once_per_arming),
		VT(channel_solicited_only_waits_for_solicited),
		VT(channel_solicited_only_wakes_on_error_completion),
		VT(channel_burst_of_completions),
	};

	return cmocka_run_group_tests_name("channel", tests, NULL, NULL);
}
