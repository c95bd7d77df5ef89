/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A peer whose device closes (dpv_dev_close(): its CM ends without a MAD) during the
 * handshake and after it, each on a ring pair of its own: the survivor learns it from
 * its retries alone, after 1 + Max CM Retries sends of its MAD and their waits and not
 * before: UNREACHABLE for a REQ or a REP, DISCONNECTED for a DREQ; then its ids are
 * gone (after TIMEWAIT where the connection had one).
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

#define IP_S RTE_IPV4(127, 0, 26, 1)
#define IP_P RTE_IPV4(127, 0, 26, 2)


/* The survivor S and the peer P of a ring pair of their own. */
static void pair(const char *ring, struct dpv_dev **s, struct dpv_dev **p)
{
	assert_int_equal(cm_dev_pair(ring, "dpv_s", IP_S, NULL, "dpv_p", IP_P, NULL, &cm_dev_quick,
				     s, p),
			 0);
}

/* The peer got the REQ and closed before it answered: UNREACHABLE. */
static void peer_gone_before_the_rep(void **state)
{
	struct dpv_dev *s, *p;
	struct dpv_dev_cm_event ev;
	uint32_t lid, sid;
	uint64_t t0, s0;

	(void)state;
	pair("cmgone0", &s, &p);
	assert_int_equal(dpv_dev_cm_listen(p, cm_dev_tcp(7300), &lid), 0);
	s0 = cm_dev_tx_gsi(s);
	t0 = now_ms();
	assert_int_equal(dpv_dev_cm_connect(s, IP_P, cm_dev_tcp(7300), &cm_dev_param_b, &sid), 0);
	ev = cm_dev_next(p);
	assert_int_equal(ev.type, DPV_CM_EV_CONNECT_REQUEST);
	cm_dev_close(p);
	cm_dev_expect(s, DPV_CM_EV_UNREACHABLE, sid);
	assert_true(now_ms() - t0 >= CM_DEV_QUICK_SENDS * CM_DEV_QUICK_WAIT_MS);
	/* the REQs, and the REJ (Timeout) that tells a peer that is still there */
	assert_int_equal(cm_dev_tx_gsi(s) - s0, CM_DEV_QUICK_SENDS + 1);
	assert_int_equal(cm_dev_ids(s), 0);
	cm_dev_no_event(s, 30);
	cm_dev_close(s);
}

/* The active peer got the REP and closed before its RTU: the REP is sent again, then
 * UNREACHABLE, and the connection's TIMEWAIT ends it. */
static void peer_gone_before_the_rtu(void **state)
{
	struct dpv_dev *s, *p;
	struct dpv_dev_cm_event ev;
	uint32_t lid, pid, sid;
	uint64_t t0, s0;

	(void)state;
	pair("cmgone1", &s, &p);
	assert_int_equal(dpv_dev_cm_listen(s, cm_dev_tcp(7301), &lid), 0);
	assert_int_equal(dpv_dev_cm_connect(p, IP_S, cm_dev_tcp(7301), &cm_dev_param_b, &pid), 0);
	ev = cm_dev_next(s);
	assert_int_equal(ev.type, DPV_CM_EV_CONNECT_REQUEST);
	sid = ev.id;
	s0 = cm_dev_tx_gsi(s);
	t0 = now_ms();
	assert_int_equal(dpv_dev_cm_accept(s, sid, &cm_dev_param_a), 0);
	cm_dev_expect(p, DPV_CM_EV_CONNECT_RESPONSE, pid);
	cm_dev_close(p);
	cm_dev_expect(s, DPV_CM_EV_UNREACHABLE, sid);
	assert_true(now_ms() - t0 >= CM_DEV_QUICK_SENDS * CM_DEV_QUICK_WAIT_MS);
	assert_int_equal(cm_dev_tx_gsi(s) - s0, CM_DEV_QUICK_SENDS + 1);
	assert_int_equal(cm_dev_ids(s), 2);
	cm_dev_expect(s, DPV_CM_EV_TIMEWAIT_EXIT, sid);
	assert_int_equal(cm_dev_ids(s), 1);
	assert_int_equal(dpv_dev_cm_unlisten(s, lid), 0);
	cm_dev_no_event(s, 30);
	cm_dev_close(s);
}

/* Established, then the peer closes: the survivor's DREQ goes unanswered,
 * DISCONNECTED after its retries, then TIMEWAIT_EXIT. */
static void peer_gone_after_the_handshake(void **state)
{
	struct dpv_dev *s, *p;
	uint32_t lid, pid, sid;
	uint64_t t0, s0;

	(void)state;
	pair("cmgone2", &s, &p);
	assert_int_equal(dpv_dev_cm_listen(p, cm_dev_tcp(7302), &lid), 0);
	cm_dev_connected(s, p, IP_P, cm_dev_tcp(7302), &sid, &pid);
	cm_dev_close(p);
	s0 = cm_dev_tx_gsi(s);
	t0 = now_ms();
	assert_int_equal(dpv_dev_cm_disconnect(s, sid), 0);
	cm_dev_expect(s, DPV_CM_EV_DISCONNECTED, sid);
	assert_true(now_ms() - t0 >= CM_DEV_QUICK_SENDS * CM_DEV_QUICK_WAIT_MS);
	assert_int_equal(cm_dev_tx_gsi(s) - s0, CM_DEV_QUICK_SENDS);
	cm_dev_expect(s, DPV_CM_EV_TIMEWAIT_EXIT, sid);
	assert_int_equal(cm_dev_ids(s), 0);
	cm_dev_no_event(s, 30);
	cm_dev_close(s);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(peer_gone_before_the_rep),
		cmocka_unit_test(peer_gone_before_the_rtu),
		cmocka_unit_test(peer_gone_after_the_handshake),
	};

	cm_dev_args_keep(argc, argv);
	return cmocka_run_group_tests_name("cm_dev_gone", tests, cm_dev_up, cm_dev_down) ? 1 : 0;
}
