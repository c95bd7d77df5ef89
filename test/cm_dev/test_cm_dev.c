/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The engine's connection manager between two devices of a ring pair: CM MADs on
 * QP 1 over RoCEv2, lib/cm's state machines behind them, the events of dpv_engine.h.
 * A listens, B connects; the handshake and the release, a refusal, an address nobody
 * answers, and the same handshake over a faults port at 5 % loss. The CM's timeouts
 * are short (dpv_dev_cm_set_timing()) so each test takes well under a second.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <rte_eal.h>
#include <rte_ip.h>

#include "cm_dev.h"
#include "helpers.h"

#define IP_A RTE_IPV4(127, 0, 21, 1)
#define IP_B RTE_IPV4(127, 0, 21, 2)
#define IP_C RTE_IPV4(127, 0, 22, 1)
#define IP_D RTE_IPV4(127, 0, 22, 2)
/* On the ring pair's subnet, and nobody's. */
#define IP_NOBODY RTE_IPV4(127, 0, 21, 77)
#define LOSSY_CONNS 10

static struct dpv_dev *A, *B, *C, *D;

/* REQ, REP, RTU: both sides' events exactly; then DREQ, DREP and both TIMEWAIT exits;
 * five MADs in all. */
static void listen_connect_accept_disconnect(void **state)
{
	const uint64_t a0 = cm_dev_tx_gsi(A), b0 = cm_dev_tx_gsi(B);
	struct dpv_dev_cm_event ev;
	uint32_t lid, aid, bid;

	(void)state;
	assert_int_equal(dpv_dev_cm_listen(A, cm_dev_tcp(7471), &lid), 0);
	assert_int_equal(dpv_dev_cm_listen(A, cm_dev_tcp(7471), &aid), EADDRINUSE);
	assert_int_equal(dpv_dev_cm_connect(B, IP_A, cm_dev_tcp(7471), &cm_dev_param_b, &bid), 0);
	assert_int_not_equal(bid, 0);

	ev = cm_dev_next(A);
	assert_int_equal(ev.type, DPV_CM_EV_CONNECT_REQUEST);
	assert_int_equal(ev.listen_id, lid);
	aid = ev.id;
	assert_int_not_equal(aid, 0);
	assert_int_not_equal(aid, lid);
	assert_int_equal(ev.peer_ip, IP_B);
	assert_true(ev.service_id == cm_dev_tcp(7471));
	assert_int_equal(ev.remote_qpn, cm_dev_param_b.qpn);
	assert_int_equal(ev.remote_psn, cm_dev_param_b.psn);
	assert_int_equal(ev.responder_resources, 4);
	assert_int_equal(ev.initiator_depth, 2);
	assert_int_equal(ev.private_data_len, DPV_CM_REQ_PDATA_LEN);
	assert_memory_equal(ev.private_data, "hello", 5);
	assert_int_equal(ev.private_data[5], 0);
	assert_int_equal(dpv_dev_cm_accept(A, aid, &cm_dev_param_a), 0);
	assert_int_equal(dpv_dev_cm_accept(A, aid, &cm_dev_param_a), EINVAL);

	ev = cm_dev_expect(B, DPV_CM_EV_CONNECT_RESPONSE, bid);
	assert_int_equal(ev.peer_ip, IP_A);
	assert_int_equal(ev.remote_qpn, cm_dev_param_a.qpn);
	assert_int_equal(ev.remote_psn, cm_dev_param_a.psn);
	assert_int_equal(ev.private_data_len, DPV_CM_REP_PDATA_LEN);
	assert_memory_equal(ev.private_data, "welcome", 7);
	assert_int_equal(dpv_dev_cm_establish(B, bid), 0);
	cm_dev_expect(B, DPV_CM_EV_ESTABLISHED, bid);
	cm_dev_expect(A, DPV_CM_EV_ESTABLISHED, aid);
	/* REQ and RTU from B, the REP from A: nothing sent again */
	assert_int_equal(cm_dev_tx_gsi(B) - b0, 2);
	assert_int_equal(cm_dev_tx_gsi(A) - a0, 1);

	assert_int_equal(dpv_dev_cm_disconnect(B, bid), 0);
	cm_dev_expect(A, DPV_CM_EV_DISCONNECTED, aid);
	assert_int_equal(dpv_dev_cm_disconnect(A, aid), 0);
	cm_dev_expect(B, DPV_CM_EV_DISCONNECTED, bid);
	cm_dev_expect(B, DPV_CM_EV_TIMEWAIT_EXIT, bid);
	cm_dev_expect(A, DPV_CM_EV_TIMEWAIT_EXIT, aid);
	assert_int_equal(cm_dev_tx_gsi(B) - b0, 3);
	assert_int_equal(cm_dev_tx_gsi(A) - a0, 2);
	/* the connections are gone with their last event; the listener stays */
	assert_int_equal(dpv_dev_cm_disconnect(B, bid), ENOENT);
	assert_int_equal(dpv_dev_cm_disconnect(A, aid), ENOENT);
	cm_dev_no_event(A, 50);
	cm_dev_no_event(B, 0);
	assert_int_equal(dpv_dev_cm_unlisten(A, aid), ENOENT);
	assert_int_equal(dpv_dev_cm_unlisten(A, lid), 0);
	assert_int_equal(dpv_dev_cm_unlisten(A, lid), ENOENT);
}

/* Nobody listens on the service: the peer's CM answers REJ (Invalid Service ID), at
 * once, also after a listener went away. */
static void connect_to_no_listener_is_rejected(void **state)
{
	struct dpv_dev_cm_event ev;
	uint32_t lid, bid;

	(void)state;
	assert_int_equal(dpv_dev_cm_connect(B, IP_A, cm_dev_tcp(9999), &cm_dev_param_b, &bid), 0);
	ev = cm_dev_expect(B, DPV_CM_EV_REJECTED, bid);
	assert_int_equal(ev.rej_reason, DPV_CM_REJ_INVALID_SERVICE_ID);
	assert_int_equal(dpv_dev_cm_establish(B, bid), ENOENT);

	assert_int_equal(dpv_dev_cm_listen(A, cm_dev_tcp(9998), &lid), 0);
	assert_int_equal(dpv_dev_cm_unlisten(A, lid), 0);
	assert_int_equal(dpv_dev_cm_connect(B, IP_A, cm_dev_tcp(9998), &cm_dev_param_b, &bid), 0);
	ev = cm_dev_expect(B, DPV_CM_EV_REJECTED, bid);
	assert_int_equal(ev.rej_reason, DPV_CM_REJ_INVALID_SERVICE_ID);
	cm_dev_no_event(A, 30);
}

/* The listener's consumer says no: REJ (Consumer Defined) with its private data. */
static void consumer_reject_carries_reason_and_private_data(void **state)
{
	struct dpv_dev_cm_event ev;
	uint32_t lid, bid;

	(void)state;
	assert_int_equal(dpv_dev_cm_listen(A, cm_dev_tcp(7472), &lid), 0);
	assert_int_equal(dpv_dev_cm_connect(B, IP_A, cm_dev_tcp(7472), &cm_dev_param_b, &bid), 0);
	ev = cm_dev_next(A);
	assert_int_equal(ev.type, DPV_CM_EV_CONNECT_REQUEST);
	assert_int_equal(dpv_dev_cm_reject(A, ev.id, "busy", 4), 0);
	assert_int_equal(dpv_dev_cm_accept(A, ev.id, &cm_dev_param_a), ENOENT);
	ev = cm_dev_expect(B, DPV_CM_EV_REJECTED, bid);
	assert_int_equal(ev.rej_reason, DPV_CM_REJ_CONSUMER_DEFINED);
	assert_int_equal(ev.private_data_len, DPV_CM_REJ_PDATA_LEN);
	assert_memory_equal(ev.private_data, "busy", 4);
	assert_int_equal(dpv_dev_cm_unlisten(A, lid), 0);
	cm_dev_no_event(A, 30);
	cm_dev_no_event(B, 0);
}

/* An address nobody answers: the REQ goes 1 + Max CM Retries times, then UNREACHABLE,
 * after the retries' waits and not before. */
static void connect_to_nobody_is_unreachable_after_the_retries(void **state)
{
	/* each wait: 4.096 us * 2^12 + 2 * 4.096 us * 2^8 */
	const uint64_t wait_ms = (4096ull * 4096 + 2 * 4096ull * 256) / 1000000;
	const uint64_t resent0 = B->stats.cm_resent;
	uint64_t t0 = now_ms();
	uint32_t bid;

	(void)state;
	assert_int_equal(dpv_dev_cm_connect(B, IP_NOBODY, cm_dev_tcp(7473), &cm_dev_param_b, &bid), 0);
	cm_dev_expect(B, DPV_CM_EV_UNREACHABLE, bid);
	assert_true(now_ms() - t0 >= (1 + cm_dev_quick.max_retries) * wait_ms);
	/* Each resend counted once (engine.cm_resent); the REJ Timeout after them is not. */
	assert_int_equal(B->stats.cm_resent - resent0, cm_dev_quick.max_retries);
	assert_int_equal(dpv_dev_cm_disconnect(B, bid), ENOENT);
	cm_dev_no_event(B, 30);
}

static void bad_params_are_refused(void **state)
{
	struct dpv_dev_cm_param p = cm_dev_param_b;
	struct dpv_dev_cm_timing t = cm_dev_quick;
	uint32_t id;

	(void)state;
	p.qpn = 1u << 24;
	assert_int_equal(dpv_dev_cm_connect(B, IP_A, cm_dev_tcp(1), &p, &id), EINVAL);
	p = cm_dev_param_b;
	p.private_data_len = DPV_CM_REQ_PDATA_LEN + 1;
	assert_int_equal(dpv_dev_cm_connect(B, IP_A, cm_dev_tcp(1), &p, &id), EINVAL);
	t.max_retries = 16;
	assert_int_equal(dpv_dev_cm_set_timing(B, &t), EINVAL);
	assert_int_equal(dpv_dev_cm_accept(A, 12345, &cm_dev_param_a), ENOENT);
	assert_int_equal(dpv_dev_cm_reject(A, 12345, NULL, 0), ENOENT);
	assert_int_equal(dpv_dev_cm_establish(A, 12345), ENOENT);
}

/* At 5 % loss each way, every connection establishes and is released, each event
 * once: lib/cm's retries stand for the MADs lost. */
static void lossy_link_still_establishes(void **state)
{
	int est[2] = {0, 0}, disc[2] = {0, 0}, gone[2] = {0, 0};
	struct dpv_dev_cm_param p = cm_dev_param_b;
	uint32_t lid, cid[LOSSY_CONNS];
	struct dpv_dev_cm_event ev;
	struct dpv_dev *from;
	int i, s;

	(void)state;
	assert_int_equal(dpv_dev_cm_listen(D, cm_dev_tcp(7474), &lid), 0);
	for (i = 0; i < LOSSY_CONNS; i++) {
		p.qpn = 0x100 + (uint32_t)i;
		assert_int_equal(dpv_dev_cm_connect(C, IP_D, cm_dev_tcp(7474), &p, &cid[i]), 0);
	}
	while (est[0] < LOSSY_CONNS || est[1] < LOSSY_CONNS) {
		ev = cm_dev_next_of(C, D, &from);
		s = from == D;
		if (ev.type == DPV_CM_EV_CONNECT_REQUEST && s) {
			assert_true(ev.remote_qpn >= 0x100 && ev.remote_qpn < 0x100 + LOSSY_CONNS);
			assert_int_equal(dpv_dev_cm_accept(D, ev.id, &cm_dev_param_a), 0);
		} else if (ev.type == DPV_CM_EV_CONNECT_RESPONSE && !s) {
			assert_int_equal(dpv_dev_cm_establish(C, ev.id), 0);
		} else if (ev.type == DPV_CM_EV_ESTABLISHED) {
			est[s]++;
		} else {
			fail_msg("%s: event %d", s ? "D" : "C", ev.type);
		}
	}
	for (i = 0; i < LOSSY_CONNS; i++)
		assert_int_equal(dpv_dev_cm_disconnect(C, cid[i]), 0);
	while (gone[0] < LOSSY_CONNS || gone[1] < LOSSY_CONNS) {
		ev = cm_dev_next_of(C, D, &from);
		s = from == D;
		if (ev.type == DPV_CM_EV_DISCONNECTED) {
			disc[s]++;
			if (s)
				assert_int_equal(dpv_dev_cm_disconnect(D, ev.id), 0);
		} else if (ev.type == DPV_CM_EV_TIMEWAIT_EXIT) {
			gone[s]++;
		} else {
			fail_msg("%s: event %d", s ? "D" : "C", ev.type);
		}
	}
	assert_int_equal(disc[0], LOSSY_CONNS);
	assert_int_equal(disc[1], LOSSY_CONNS);
	assert_int_equal(est[0], LOSSY_CONNS);
	assert_int_equal(est[1], LOSSY_CONNS);
	assert_int_equal(dpv_dev_cm_unlisten(D, lid), 0);
	cm_dev_no_event(C, 50);
	cm_dev_no_event(D, 0);
	/* the loss was there */
	{
		struct dpv_faults_stats fc, fd;

		assert_int_equal(dpv_dev_faults_stats(C, &fc), 0);
		assert_int_equal(dpv_dev_faults_stats(D, &fd), 0);
		assert_true(fc.tx.dropped + fc.rx.dropped + fd.tx.dropped + fd.rx.dropped > 0);
	}
	/* and MADs were sent again: a REQ, an RTU and a DREQ for each connection from C,
	 * a REP and a DREP from D, on a lossless link */
	assert_true(cm_dev_tx_gsi(C) + cm_dev_tx_gsi(D) > 5 * LOSSY_CONNS);
}

static int devices_up(void **state)
{
	struct dpv_dev_cm_timing lossy = cm_dev_quick;

	(void)state;
	/* More retries where MADs are lost: each is lost with 10 % at most. */
	lossy.max_retries = 8;
	return cm_dev_eal_up() == 0 &&
			       cm_dev_pair("cmpair0", "dpv0", IP_A, NULL, "dpv1", IP_B, NULL,
					   &cm_dev_quick, &A, &B) == 0 &&
			       cm_dev_pair("cmpair1", "dpv2", IP_C, "loss=0.05,seed=3", "dpv3", IP_D,
					   "loss=0.05,seed=4", &lossy, &C, &D) == 0
		       ? 0
		       : -1;
}


int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(listen_connect_accept_disconnect),
		cmocka_unit_test(connect_to_no_listener_is_rejected),
		cmocka_unit_test(consumer_reject_carries_reason_and_private_data),
		cmocka_unit_test(connect_to_nobody_is_unreachable_after_the_retries),
		cmocka_unit_test(bad_params_are_refused),
		cmocka_unit_test(lossy_link_still_establishes),
	};

	cm_dev_args_keep(argc, argv);
	return cmocka_run_group_tests_name("cm_dev", tests, devices_up, cm_dev_down) ? 1 : 0;
}
