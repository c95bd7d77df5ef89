/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Several threads on one QP and one CQ (verbs is thread-safe): four threads post
 * SENDs to one send queue and poll the one CQ of their completions, two threads post
 * receives to the peer's receive queue and poll its CQ. Every message arrives once,
 * every send completes once, and no post fails but for a full queue. The main thread
 * posts and polls alone first, so the queues' locks are biased to it (verbs_lock.h)
 * when the others come in and take the bias away while it posts.
 * cmocka asserts on the main thread only: the others count what went wrong.
 */
#include <pthread.h>

#include "test_verbs.h"

#define SENDERS 4u             /* the main thread and three more */
#define RECEIVERS 2u
#define PER_SENDER 500u
#define TOTAL (SENDERS * PER_SENDER)
#define RUN_MS 30000u          /* the whole run, valgrind included */

struct run {
	struct rc_pair p;
	struct ibv_mr *mr_a;   /* the 8 bytes every SEND sends */
	struct ibv_mr *mr_b;   /* the buffer all receives share */
	uint64_t deadline;
	uint32_t send_done;    /* send completions, all threads (atomic) */
	uint32_t recv_done;    /* receive completions (atomic) */
	uint32_t errors;       /* anything unexpected (atomic) */
	uint8_t seen[TOTAL + 1]; /* receipts of each message, by its number (atomic) */
};

static struct run run;

struct sender {
	pthread_t thread;
	uint32_t id;
};

static void count_error(void)
{
	__atomic_add_fetch(&run.errors, 1, __ATOMIC_RELAXED);
}

static bool late(void)
{
	return now_ms() > run.deadline;
}

/* Send completions of any thread's SENDs, as many as there are now. */
static void reap_sends(void)
{
	struct ibv_wc wc[8];
	int got = ibv_poll_cq(run.p.acq, 8, wc);

	if (got < 0) {
		count_error();
		return;
	}
	for (int i = 0; i < got; i++)
		if (wc[i].status != IBV_WC_SUCCESS || wc[i].opcode != IBV_WC_SEND)
			count_error();
	__atomic_add_fetch(&run.send_done, (uint32_t)got, __ATOMIC_RELAXED);
}

static int send_one(uint32_t sender, uint32_t seq)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)run.mr_a->addr, .length = 8, .lkey = run.mr_a->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = (uint64_t)sender << 32 | seq,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_SEND_WITH_IMM,
		.send_flags = IBV_SEND_SIGNALED,
		.imm_data = htobe32(sender * PER_SENDER + seq),
	}, *bad;
	int ret;

	while ((ret = ibv_post_send(run.p.a, &wr, &bad)) == ENOMEM && !late())
		reap_sends();
	return ret;
}

static void *sender_main(void *arg)
{
	const struct sender *s = arg;

	for (uint32_t seq = 0; seq < PER_SENDER; seq++) {
		if (send_one(s->id, seq) != 0) {
			count_error();
			return NULL;
		}
	}
	while (__atomic_load_n(&run.send_done, __ATOMIC_RELAXED) < TOTAL + 1 && !late())
		reap_sends();
	return NULL;
}

static int repost(void)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)run.mr_b->addr, .length = 8, .lkey = run.mr_b->lkey,
	};
	struct ibv_recv_wr wr = {.sg_list = &sge, .num_sge = 1}, *bad;

	return ibv_post_recv(run.p.b, &wr, &bad);
}

/* Take receives, mark each message, give the receive queue one WR back for each. */
static void *receiver_main(void *arg)
{
	struct ibv_wc wc[8];

	(void)arg;
	while (__atomic_load_n(&run.recv_done, __ATOMIC_RELAXED) < TOTAL + 1 && !late()) {
		int got = ibv_poll_cq(run.p.bcq, 8, wc);

		for (int i = 0; i < got; i++) {
			uint32_t id = be32toh(wc[i].imm_data);

			if (wc[i].status != IBV_WC_SUCCESS || wc[i].opcode != IBV_WC_RECV ||
			    !(wc[i].wc_flags & IBV_WC_WITH_IMM) || id >= TOTAL + 1 ||
			    repost() != 0)
				count_error();
			else
				__atomic_add_fetch(&run.seen[id], 1, __ATOMIC_RELAXED);
		}
		if (got > 0)
			__atomic_add_fetch(&run.recv_done, (uint32_t)got, __ATOMIC_RELAXED);
		else if (got < 0)
			count_error();
	}
	return NULL;
}

static void threads_share_a_qp_and_its_cqs(void **state)
{
	struct sender senders[SENDERS];
	pthread_t receivers[RECEIVERS];
	struct ibv_wc wc;

	(void)state;
	memset(&run, 0, sizeof(run));
	rc_pair(&run.p, &conn_default);
	run.mr_a = new_mr(&A, 8, IBV_ACCESS_LOCAL_WRITE);
	run.mr_b = new_mr(&B, 8, IBV_ACCESS_LOCAL_WRITE);
	/* The receive queue full, then one message from the main thread alone: the
	 * locks of both queues and both CQs are the main thread's. */
	for (unsigned int i = 0; i < 64; i++)
		assert_int_equal(repost(), 0);
	run.deadline = now_ms() + RUN_MS;
	assert_int_equal(send_one(SENDERS, 0), 0);
	expect_send_ok(run.p.acq, (uint64_t)SENDERS << 32, IBV_WC_SEND);
	expect_wc(run.p.bcq, &wc);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(be32toh(wc.imm_data), SENDERS * PER_SENDER);
	assert_int_equal(repost(), 0);
	run.send_done = 1;
	run.recv_done = 1;

	for (unsigned int i = 0; i < RECEIVERS; i++)
		assert_int_equal(pthread_create(&receivers[i], NULL, receiver_main, NULL), 0);
	for (uint32_t i = 1; i < SENDERS; i++) {
		senders[i].id = i;
		assert_int_equal(pthread_create(&senders[i].thread, NULL, sender_main,
						&senders[i]), 0);
	}
	senders[0].id = 0;
	sender_main(&senders[0]);
	for (uint32_t i = 1; i < SENDERS; i++)
		pthread_join(senders[i].thread, NULL);
	for (unsigned int i = 0; i < RECEIVERS; i++)
		pthread_join(receivers[i], NULL);

	assert_int_equal(run.errors, 0);
	assert_int_equal(run.send_done, TOTAL + 1);
	assert_int_equal(run.recv_done, TOTAL + 1);
	for (uint32_t id = 0; id < TOTAL; id++)
		assert_int_equal(run.seen[id], 1);
	assert_int_equal(run.seen[TOTAL], 0); /* the first, taken by the main thread */
	expect_quiet(run.p.acq);
	expect_quiet(run.p.bcq);
}

int run_thread_tests(void)
{
	const struct CMUnitTest tests[] = {
		VT(threads_share_a_qp_and_its_cqs),
	};

	return cmocka_run_group_tests_name("threads", tests, NULL, NULL);
}
