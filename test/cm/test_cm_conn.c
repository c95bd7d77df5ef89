/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The CM state machine of dpv_cm.h, row by row of its table, between the two hosts of
 * cm_hosts.h. The MRAs a duplicate gets are test_cm_mra.c's, SIDR test_cm_sidr.c's.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cm_hosts.h"

static void establishment_exact_mads_and_events(void **state)
{
	struct dpv_cm_req req = req_template();
	struct dpv_cm_rep rep = rep_template();
	struct dpv_cm_out req_out, o, ev;
	const struct dpv_cm_msg *m;
	uint64_t req_tid;

	(void)state;
	assert_int_equal(dpv_cm_connect(&a.conn, &req, T0, &req_out), 0);
	assert_int_equal(dpv_cm_state(&a.conn), DPV_CM_REQ_SENT);
	assert_int_equal(req_out.event, DPV_CM_EV_NONE);
	assert_int_equal(dpv_cm_deadline(&a.conn), T0 + REQ_WAIT);
	m = &req_out.mad;
	assert_int_equal(m->hdr.attr_id, DPV_CM_ATTR_REQ);
	assert_int_equal(m->req.local_comm_id, a.conn.local_id);
	assert_int_equal(m->req.local_ca_guid, GUID_A);
	assert_int_equal(m->req.service_id, 0x0000000001061c06ull);
	assert_int_equal(m->req.local_qpn, QPN_A);
	assert_memory_equal(m->req.private_data + 36, "hello", 5);
	req_tid = m->hdr.tid;
	assert_int_equal(req_tid >> 32, a.conn.local_id);

	/* B: the listener's REQ to the free connection. */
	assert_int_equal(deliver(&req_out, &b, T0, &ev), 0);
	assert_int_equal(ev.event, DPV_CM_EV_CONNECT_REQUEST);
	assert_int_equal(ev.msg->req.local_comm_id, a.conn.local_id);
	assert_int_equal(dpv_cm_deadline(&b.conn), DPV_CM_NO_DEADLINE);
	assert_int_equal(dpv_cm_state(&b.listener), DPV_CM_LISTEN);

	assert_int_equal(dpv_cm_accept(&b.conn, &rep, T0 + 5, &o), 0);
	assert_int_equal(dpv_cm_state(&b.conn), DPV_CM_REP_SENT);
	assert_int_equal(dpv_cm_deadline(&b.conn), T0 + 5 + REP_WAIT);
	assert_int_equal(o.mad.hdr.attr_id, DPV_CM_ATTR_REP);
	assert_int_equal(o.mad.hdr.tid, req_tid);
	assert_int_equal(o.mad.rep.local_comm_id, b.conn.local_id);
	assert_int_equal(o.mad.rep.remote_comm_id, a.conn.local_id);
	assert_int_equal(o.mad.rep.local_ca_guid, GUID_B);
	assert_int_equal(o.mad.rep.local_qpn, QPN_B);

	assert_int_equal(deliver(&o, &a, T0 + 10, &ev), 0);
	assert_false(ev.send);
	assert_int_equal(ev.event, DPV_CM_EV_CONNECT_RESPONSE);
	assert_memory_equal(ev.msg->rep.private_data, "welcome", 7);
	assert_int_equal(dpv_cm_state(&a.conn), DPV_CM_REP_RCVD);
	assert_int_equal(dpv_cm_deadline(&a.conn), DPV_CM_NO_DEADLINE);

	assert_int_equal(dpv_cm_rtu(&a.conn, "go", 2, &o), 0);
	assert_int_equal(o.event, DPV_CM_EV_ESTABLISHED);
	assert_int_equal(o.mad.hdr.attr_id, DPV_CM_ATTR_RTU);
	assert_int_equal(o.mad.hdr.tid, req_tid);
	assert_int_equal(o.mad.rtu.local_comm_id, a.conn.local_id);
	assert_int_equal(o.mad.rtu.remote_comm_id, b.conn.local_id);
	assert_memory_equal(o.mad.rtu.private_data, "go", 2);
	assert_int_equal(dpv_cm_state(&a.conn), DPV_CM_ESTABLISHED);

	assert_int_equal(deliver(&o, &b, T0 + 20, &ev), 0);
	assert_false(ev.send);
	assert_int_equal(ev.event, DPV_CM_EV_ESTABLISHED);
	assert_int_equal(dpv_cm_state(&b.conn), DPV_CM_ESTABLISHED);
	assert_int_equal(dpv_cm_deadline(&b.conn), DPV_CM_NO_DEADLINE);
}

static void release_dreq_drep_timewait_exit(void **state)
{
	struct dpv_cm_out dreq, o, ev;
	uint64_t t = T0 + 100;

	(void)state;
	establish();
	assert_int_equal(dpv_cm_disconnect(&a.conn, "bye", 3, t, &dreq), 0);
	assert_int_equal(dpv_cm_state(&a.conn), DPV_CM_DREQ_SENT);
	assert_int_equal(dpv_cm_deadline(&a.conn), t + REQ_WAIT);
	assert_int_equal(dreq.mad.hdr.attr_id, DPV_CM_ATTR_DREQ);
	assert_int_equal(dreq.mad.dreq.remote_qpn, QPN_B);
	assert_int_equal(dreq.mad.dreq.local_comm_id, a.conn.local_id);
	assert_int_equal(dreq.mad.dreq.remote_comm_id, b.conn.local_id);
	assert_int_not_equal(dreq.mad.hdr.tid, a.conn.tid); /* its own, not the REQ's */

	assert_int_equal(deliver(&dreq, &b, t, &ev), 0);
	assert_false(ev.send);
	assert_int_equal(ev.event, DPV_CM_EV_DISCONNECTED);
	assert_memory_equal(ev.msg->dreq.private_data, "bye", 3);
	assert_int_equal(dpv_cm_state(&b.conn), DPV_CM_DREQ_RCVD);

	assert_int_equal(dpv_cm_disconnect(&b.conn, NULL, 0, t + 1, &o), 0);
	assert_int_equal(o.mad.hdr.attr_id, DPV_CM_ATTR_DREP);
	assert_int_equal(o.mad.hdr.tid, dreq.mad.hdr.tid);
	assert_int_equal(o.event, DPV_CM_EV_NONE);
	assert_int_equal(dpv_cm_state(&b.conn), DPV_CM_TIMEWAIT);
	assert_int_equal(dpv_cm_deadline(&b.conn), t + 1 + TIMEWAIT_NS);

	assert_int_equal(deliver(&o, &a, t + 2, &ev), 0);
	assert_false(ev.send);
	assert_int_equal(ev.event, DPV_CM_EV_DISCONNECTED);
	assert_int_equal(dpv_cm_state(&a.conn), DPV_CM_TIMEWAIT);
	assert_int_equal(dpv_cm_deadline(&a.conn), t + 2 + TIMEWAIT_NS);

	/* TIMEWAIT holds to its deadline exactly. */
	dpv_cm_timer(&a.conn, t + 1 + TIMEWAIT_NS, &o);
	assert_false(o.send);
	assert_int_equal(o.event, DPV_CM_EV_NONE);
	assert_int_equal(dpv_cm_state(&a.conn), DPV_CM_TIMEWAIT);
	dpv_cm_timer(&a.conn, t + 2 + TIMEWAIT_NS, &o);
	assert_false(o.send);
	assert_int_equal(o.event, DPV_CM_EV_TIMEWAIT_EXIT);
	assert_int_equal(dpv_cm_state(&a.conn), DPV_CM_IDLE);
	assert_int_equal(dpv_cm_deadline(&a.conn), DPV_CM_NO_DEADLINE);
	dpv_cm_timer(&b.conn, t + 1 + TIMEWAIT_NS, &o);
	assert_int_equal(o.event, DPV_CM_EV_TIMEWAIT_EXIT);
	assert_int_equal(dpv_cm_state(&b.conn), DPV_CM_IDLE);
}

static void req_retried_max_cm_retries_times_then_unreachable(void **state)
{
	struct dpv_cm_req req = req_template();
	struct dpv_cm_out first, o;
	uint64_t t = T0;
	unsigned int sends = 1, i;

	(void)state;
	assert_int_equal(dpv_cm_connect(&a.conn, &req, t, &first), 0);
	for (i = 0; i < RETRIES; i++) {
		dpv_cm_timer(&a.conn, t + REQ_WAIT - 1, &o);
		assert_false(o.send);
		t += REQ_WAIT;
		dpv_cm_timer(&a.conn, t, &o);
		assert_true(o.send);
		sends++;
		/* The same REQ, transaction ID included. */
		assert_memory_equal(&o.mad, &first.mad, sizeof(o.mad));
		assert_int_equal(o.event, DPV_CM_EV_NONE);
		assert_int_equal(dpv_cm_deadline(&a.conn), t + REQ_WAIT);
	}
	assert_int_equal(sends, 1 + RETRIES);
	t += REQ_WAIT;
	dpv_cm_timer(&a.conn, t, &o);
	assert_int_equal(o.event, DPV_CM_EV_UNREACHABLE);
	assert_null(o.msg);
	assert_int_equal(dpv_cm_state(&a.conn), DPV_CM_IDLE);
	assert_int_equal(dpv_cm_deadline(&a.conn), DPV_CM_NO_DEADLINE);
	/* A REJ (Timeout) tells a peer that did take the REQ; its ARI is our GUID. */
	assert_true(o.send);
	assert_int_equal(o.mad.hdr.attr_id, DPV_CM_ATTR_REJ);
	assert_int_equal(o.mad.hdr.tid, first.mad.hdr.tid);
	assert_int_equal(o.mad.rej.reason, DPV_CM_REJ_TIMEOUT);
	assert_int_equal(o.mad.rej.message_rejected, DPV_CM_REF_REQ);
	assert_int_equal(o.mad.rej.local_comm_id, a.conn.local_id);
	assert_int_equal(o.mad.rej.remote_comm_id, 0);
	assert_int_equal(o.mad.rej.ari_length, 8);
	assert_memory_equal(o.mad.rej.ari, "\x00\x02\xc9\x03\x00\x00\x0a\x0a", 8);
	/* Nothing more: the clock has stopped. */
	dpv_cm_timer(&a.conn, t + 10 * REQ_WAIT, &o);
	assert_false(o.send);
	assert_int_equal(o.event, DPV_CM_EV_NONE);
}

/* The REQ timed out at A after B took it: B finds its connection by A's ID and the
 * GUID in the ARI, and learns the connection is gone. */
static void req_timeout_rej_reaches_the_passive_side_by_ari(void **state)
{
	struct dpv_cm_out o, ev;
	uint64_t t = T0;
	unsigned int i;

	(void)state;
	connect_and_request(t);
	for (i = 0; i <= RETRIES; i++) {
		t += REQ_WAIT;
		dpv_cm_timer(&a.conn, t, &o);
	}
	assert_int_equal(o.event, DPV_CM_EV_UNREACHABLE);
	assert_int_equal(deliver(&o, &b, t, &ev), 0);
	assert_int_equal(ev.event, DPV_CM_EV_REJECTED);
	assert_int_equal(ev.rej_reason, DPV_CM_REJ_TIMEOUT);
	assert_int_equal(dpv_cm_state(&b.conn), DPV_CM_IDLE);
}

static void mra_replaces_the_wait_and_answers_the_duplicate_req(void **state)
{
	struct dpv_cm_out req_out, mra, o, ev;
	uint64_t t = T0 + 50;

	(void)state;
	req_out = connect_and_request(T0);
	assert_int_equal(dpv_cm_mra(&b.conn, 20, "wait", 4, &mra), 0);
	assert_int_equal(dpv_cm_state(&b.conn), DPV_CM_MRA_REQ_SENT);
	assert_int_equal(mra.mad.hdr.attr_id, DPV_CM_ATTR_MRA);
	assert_int_equal(mra.mad.hdr.tid, req_out.mad.hdr.tid);
	assert_int_equal(mra.mad.mra.message_mraed, DPV_CM_REF_REQ);
	assert_int_equal(mra.mad.mra.service_timeout, 20);
	assert_int_equal(mra.mad.mra.local_comm_id, b.conn.local_id);
	assert_int_equal(mra.mad.mra.remote_comm_id, a.conn.local_id);

	assert_int_equal(deliver(&mra, &a, t, &ev), 0);
	assert_false(ev.send);
	assert_int_equal(ev.event, DPV_CM_EV_NONE);
	assert_int_equal(dpv_cm_state(&a.conn), DPV_CM_MRA_REQ_RCVD);
	assert_int_equal(dpv_cm_deadline(&a.conn), t + dpv_cm_timeout_ns(20) + RTT);
	/* The REQ's own wait has passed: nothing happens before the MRA's. */
	dpv_cm_timer(&a.conn, T0 + REQ_WAIT, &o);
	assert_false(o.send);
	/* A duplicate of the REQ gets the MRA again. */
	assert_int_equal(deliver(&req_out, &b, t, &o), 0);
	assert_true(o.send);
	assert_memory_equal(&o.mad, &mra.mad, sizeof(o.mad));
	/* The MRA's wait ends: the REQ again, counted as a retry. */
	dpv_cm_timer(&a.conn, t + dpv_cm_timeout_ns(20) + RTT, &o);
	assert_true(o.send);
	assert_int_equal(o.mad.hdr.attr_id, DPV_CM_ATTR_REQ);
	assert_int_equal(a.conn.retries, 1);
	assert_int_equal(dpv_cm_state(&a.conn), DPV_CM_REQ_SENT);
}

static void rep_retried_then_rej_timeout_to_the_active_side(void **state)
{
	struct dpv_cm_rep rep = rep_template();
	struct dpv_cm_out req_out, rep_out, o, ev;
	uint64_t t = T0;
	unsigned int i;

	(void)state;
	req_out = connect_and_request(t);
	assert_int_equal(dpv_cm_accept(&b.conn, &rep, t, &rep_out), 0);
	assert_int_equal(deliver(&rep_out, &a, t, &ev), 0);
	assert_int_equal(ev.event, DPV_CM_EV_CONNECT_RESPONSE);
	/* A duplicate REQ in REP_SENT gets the REP again. */
	assert_int_equal(deliver(&req_out, &b, t, &o), 0);
	assert_memory_equal(&o.mad, &rep_out.mad, sizeof(o.mad));
	/* A duplicate REP in REP_RCVD gets an MRA (test_cm_mra.c), not delivered here. */
	assert_int_equal(deliver(&rep_out, &a, t, &o), 0);
	assert_int_equal(o.mad.hdr.attr_id, DPV_CM_ATTR_MRA);
	assert_int_equal(o.event, DPV_CM_EV_NONE);
	/* A never sends its RTU: B sends the REP 1 + RETRIES times. */
	for (i = 0; i < RETRIES; i++) {
		t += REP_WAIT;
		dpv_cm_timer(&b.conn, t, &o);
		assert_memory_equal(&o.mad, &rep_out.mad, sizeof(o.mad));
	}
	t += REP_WAIT;
	dpv_cm_timer(&b.conn, t, &o);
	assert_int_equal(o.event, DPV_CM_EV_UNREACHABLE);
	assert_int_equal(o.mad.hdr.attr_id, DPV_CM_ATTR_REJ);
	assert_int_equal(o.mad.rej.reason, DPV_CM_REJ_TIMEOUT);
	assert_int_equal(o.mad.rej.message_rejected, DPV_CM_REF_REP);
	assert_int_equal(o.mad.rej.remote_comm_id, a.conn.local_id);
	assert_int_equal(dpv_cm_state(&b.conn), DPV_CM_TIMEWAIT);
	assert_int_equal(dpv_cm_deadline(&b.conn), t + TIMEWAIT_NS);
	assert_int_equal(deliver(&o, &a, t, &ev), 0);
	assert_int_equal(ev.event, DPV_CM_EV_REJECTED);
	assert_int_equal(ev.rej_reason, DPV_CM_REJ_TIMEOUT);
	assert_int_equal(dpv_cm_state(&a.conn), DPV_CM_TIMEWAIT);
}

static void duplicate_rep_when_established_gets_the_rtu_again(void **state)
{
	struct dpv_cm_rep rep = rep_template();
	struct dpv_cm_out rep_out, rtu, o, ev;

	(void)state;
	connect_and_request(T0);
	assert_int_equal(dpv_cm_accept(&b.conn, &rep, T0, &rep_out), 0);
	assert_int_equal(deliver(&rep_out, &a, T0, &ev), 0);
	assert_int_equal(dpv_cm_rtu(&a.conn, NULL, 0, &rtu), 0);
	/* The RTU was lost: B's REP comes again. */
	dpv_cm_timer(&b.conn, T0 + REP_WAIT, &o);
	assert_int_equal(deliver(&o, &a, T0 + REP_WAIT, &ev), 0);
	assert_true(ev.send);
	assert_int_equal(ev.event, DPV_CM_EV_NONE);
	assert_memory_equal(&ev.mad, &rtu.mad, sizeof(ev.mad));
	assert_int_equal(deliver(&ev, &b, T0 + REP_WAIT, &o), 0);
	assert_int_equal(o.event, DPV_CM_EV_ESTABLISHED);
}

static void data_before_rtu_establishes_and_the_late_rtu_is_ignored(void **state)
{
	struct dpv_cm_rep rep = rep_template();
	struct dpv_cm_out rep_out, rtu, o, ev;

	(void)state;
	connect_and_request(T0);
	assert_int_equal(dpv_cm_accept(&b.conn, &rep, T0, &rep_out), 0);
	assert_int_equal(deliver(&rep_out, &a, T0, &ev), 0);
	assert_int_equal(dpv_cm_rtu(&a.conn, NULL, 0, &rtu), 0);
	assert_int_equal(dpv_cm_established(&b.conn, &o), 0);
	assert_false(o.send);
	assert_int_equal(o.event, DPV_CM_EV_ESTABLISHED);
	assert_int_equal(dpv_cm_state(&b.conn), DPV_CM_ESTABLISHED);
	assert_int_equal(dpv_cm_deadline(&b.conn), DPV_CM_NO_DEADLINE);
	assert_int_equal(deliver(&rtu, &b, T0, &o), 0);
	assert_false(o.send);
	assert_int_equal(o.event, DPV_CM_EV_NONE);
	assert_int_equal(dpv_cm_established(&b.conn, &o), EINVAL);
}

static void passive_consumer_rejects_with_private_data(void **state)
{
	struct dpv_cm_out req_out, o, ev;

	(void)state;
	req_out = connect_and_request(T0);
	assert_int_equal(dpv_cm_reject(&b.conn, DPV_CM_REJ_CONSUMER_DEFINED, "no", 2, T0, &o), 0);
	assert_int_equal(dpv_cm_state(&b.conn), DPV_CM_IDLE);
	assert_int_equal(o.mad.hdr.attr_id, DPV_CM_ATTR_REJ);
	assert_int_equal(o.mad.hdr.tid, req_out.mad.hdr.tid);
	assert_int_equal(o.mad.rej.message_rejected, DPV_CM_REF_REQ);
	assert_int_equal(o.mad.rej.reason, 28);
	assert_int_equal(o.mad.rej.local_comm_id, b.conn.local_id);
	assert_int_equal(o.mad.rej.remote_comm_id, a.conn.local_id);
	assert_int_equal(deliver(&o, &a, T0, &ev), 0);
	assert_false(ev.send);
	assert_int_equal(ev.event, DPV_CM_EV_REJECTED);
	assert_int_equal(ev.rej_reason, 28);
	assert_memory_equal(ev.msg->rej.private_data, "no", 2);
	assert_int_equal(dpv_cm_state(&a.conn), DPV_CM_IDLE);
	assert_int_equal(dpv_cm_deadline(&a.conn), DPV_CM_NO_DEADLINE);
}

static void active_consumer_rejects_the_rep(void **state)
{
	struct dpv_cm_rep rep = rep_template();
	struct dpv_cm_out rep_out, o, ev;

	(void)state;
	connect_and_request(T0);
	assert_int_equal(dpv_cm_accept(&b.conn, &rep, T0, &rep_out), 0);
	assert_int_equal(deliver(&rep_out, &a, T0, &ev), 0);
	assert_int_equal(dpv_cm_reject(&a.conn, DPV_CM_REJ_CONSUMER_DEFINED, NULL, 0, T0, &o), 0);
	assert_int_equal(o.mad.rej.message_rejected, DPV_CM_REF_REP);
	assert_int_equal(dpv_cm_state(&a.conn), DPV_CM_TIMEWAIT);
	assert_int_equal(deliver(&o, &b, T0, &ev), 0);
	assert_int_equal(ev.event, DPV_CM_EV_REJECTED);
	assert_int_equal(dpv_cm_state(&b.conn), DPV_CM_TIMEWAIT);
	assert_int_equal(dpv_cm_deadline(&b.conn), T0 + TIMEWAIT_NS);
}

static void no_listener_answers_rej_invalid_service_id(void **state)
{
	struct dpv_cm_req req = req_template();
	struct dpv_cm_out req_out, o, ev;

	(void)state;
	/* The listener is gone. */
	assert_int_equal(dpv_cm_table_remove(&b.t, &b.listener), 0);
	assert_int_equal(dpv_cm_connect(&a.conn, &req, T0, &req_out), 0);
	assert_int_equal(deliver(&req_out, &b, T0, &o), 0);
	assert_true(o.send);
	assert_int_equal(o.event, DPV_CM_EV_NONE);
	assert_int_equal(o.mad.hdr.attr_id, DPV_CM_ATTR_REJ);
	assert_int_equal(o.mad.hdr.tid, req_out.mad.hdr.tid);
	assert_int_equal(o.mad.rej.reason, DPV_CM_REJ_INVALID_SERVICE_ID);
	assert_int_equal(o.mad.rej.message_rejected, DPV_CM_REF_REQ);
	assert_int_equal(o.mad.rej.local_comm_id, 0);
	assert_int_equal(o.mad.rej.remote_comm_id, a.conn.local_id);
	assert_int_equal(dpv_cm_state(&b.conn), DPV_CM_IDLE);
	assert_int_equal(deliver(&o, &a, T0, &ev), 0);
	assert_int_equal(ev.event, DPV_CM_EV_REJECTED);
	assert_int_equal(ev.rej_reason, 8);
	assert_int_equal(dpv_cm_state(&a.conn), DPV_CM_IDLE);
}

static void stale_req_rep_rtu_in_timewait_get_rej_stale(void **state)
{
	struct dpv_cm_rep rep = rep_template();
	struct dpv_cm_out req_out, rep_out, rtu, o, ev;

	(void)state;
	req_out = connect_and_request(T0);
	assert_int_equal(dpv_cm_accept(&b.conn, &rep, T0, &rep_out), 0);
	assert_int_equal(deliver(&rep_out, &a, T0, &ev), 0);
	assert_int_equal(dpv_cm_rtu(&a.conn, NULL, 0, &rtu), 0);
	assert_int_equal(deliver(&rtu, &b, T0, &ev), 0);
	/* Both release; both in TIMEWAIT. */
	assert_int_equal(dpv_cm_disconnect(&a.conn, NULL, 0, T0, &o), 0);
	assert_int_equal(deliver(&o, &b, T0, &ev), 0);
	assert_int_equal(dpv_cm_disconnect(&b.conn, NULL, 0, T0, &o), 0);
	assert_int_equal(deliver(&o, &a, T0, &ev), 0);
	assert_int_equal(dpv_cm_state(&a.conn), DPV_CM_TIMEWAIT);
	assert_int_equal(dpv_cm_state(&b.conn), DPV_CM_TIMEWAIT);

	assert_int_equal(deliver(&req_out, &b, T0 + 1, &o), 0);
	assert_int_equal(o.mad.hdr.attr_id, DPV_CM_ATTR_REJ);
	assert_int_equal(o.mad.rej.reason, DPV_CM_REJ_STALE_CONN);
	assert_int_equal(o.mad.rej.message_rejected, DPV_CM_REF_REQ);
	assert_int_equal(o.mad.rej.remote_comm_id, a.conn.local_id);
	assert_int_equal(deliver(&rep_out, &a, T0 + 1, &o), 0);
	assert_int_equal(o.mad.rej.reason, DPV_CM_REJ_STALE_CONN);
	assert_int_equal(o.mad.rej.message_rejected, DPV_CM_REF_REP);
	assert_int_equal(o.mad.rej.local_comm_id, a.conn.local_id);
	assert_int_equal(o.mad.rej.remote_comm_id, b.conn.local_id);
	assert_int_equal(deliver(&rtu, &b, T0 + 1, &o), 0);
	assert_int_equal(o.mad.rej.reason, DPV_CM_REJ_STALE_CONN);
	assert_int_equal(o.mad.rej.message_rejected, DPV_CM_REF_OTHER);
	/* None of them moved TIMEWAIT. */
	assert_int_equal(dpv_cm_state(&a.conn), DPV_CM_TIMEWAIT);
	assert_int_equal(dpv_cm_state(&b.conn), DPV_CM_TIMEWAIT);
	assert_int_equal(dpv_cm_deadline(&b.conn), T0 + TIMEWAIT_NS);
}

static void stale_rep_rtu_for_an_unknown_id_get_rej_stale(void **state)
{
	struct dpv_cm_rep rep = rep_template();
	struct dpv_cm_out rep_out, rtu, o, ev;

	(void)state;
	connect_and_request(T0);
	assert_int_equal(dpv_cm_accept(&b.conn, &rep, T0, &rep_out), 0);
	assert_int_equal(deliver(&rep_out, &a, T0, &ev), 0);
	assert_int_equal(dpv_cm_rtu(&a.conn, NULL, 0, &rtu), 0);
	/* Both connections are gone from their tables: the IDs are unknown now. */
	assert_int_equal(dpv_cm_table_remove(&a.t, &a.conn), 0);
	assert_int_equal(dpv_cm_table_remove(&b.t, &b.conn), 0);
	assert_int_equal(deliver(&rep_out, &a, T0, &o), 0);
	assert_int_equal(o.mad.rej.reason, DPV_CM_REJ_STALE_CONN);
	assert_int_equal(o.mad.rej.message_rejected, DPV_CM_REF_REP);
	assert_int_equal(o.mad.rej.local_comm_id, rep_out.mad.rep.remote_comm_id);
	assert_int_equal(o.mad.rej.remote_comm_id, rep_out.mad.rep.local_comm_id);
	assert_int_equal(deliver(&rtu, &b, T0, &o), 0);
	assert_int_equal(o.mad.rej.reason, DPV_CM_REJ_STALE_CONN);
	assert_int_equal(o.mad.rej.message_rejected, DPV_CM_REF_OTHER);
}

static void simultaneous_dreqs_each_answered_with_drep(void **state)
{
	struct dpv_cm_out da, db, o, ev;

	(void)state;
	establish();
	assert_int_equal(dpv_cm_disconnect(&a.conn, NULL, 0, T0, &da), 0);
	assert_int_equal(dpv_cm_disconnect(&b.conn, NULL, 0, T0, &db), 0);
	assert_int_equal(deliver(&da, &b, T0 + 1, &o), 0);
	assert_int_equal(o.event, DPV_CM_EV_DISCONNECTED);
	assert_int_equal(o.mad.hdr.attr_id, DPV_CM_ATTR_DREP);
	assert_int_equal(o.mad.hdr.tid, da.mad.hdr.tid);
	assert_int_equal(dpv_cm_state(&b.conn), DPV_CM_TIMEWAIT);
	assert_int_equal(deliver(&o, &a, T0 + 2, &ev), 0);
	assert_int_equal(ev.event, DPV_CM_EV_DISCONNECTED);
	assert_int_equal(dpv_cm_state(&a.conn), DPV_CM_TIMEWAIT);
	/* B's DREQ reaches A in TIMEWAIT: a DREP, no second event. */
	assert_int_equal(deliver(&db, &a, T0 + 3, &o), 0);
	assert_true(o.send);
	assert_int_equal(o.event, DPV_CM_EV_NONE);
	assert_int_equal(o.mad.hdr.attr_id, DPV_CM_ATTR_DREP);
	assert_int_equal(o.mad.hdr.tid, db.mad.hdr.tid);
	assert_int_equal(deliver(&o, &b, T0 + 4, &ev), 0);
	assert_false(ev.send);
	assert_int_equal(ev.event, DPV_CM_EV_NONE);
}

static void dreq_retried_then_disconnected(void **state)
{
	struct dpv_cm_out dreq, o;
	uint64_t t = T0;
	unsigned int i, sends = 1;

	(void)state;
	establish();
	assert_int_equal(dpv_cm_disconnect(&a.conn, NULL, 0, t, &dreq), 0);
	for (i = 0; i < RETRIES; i++) {
		t += REQ_WAIT;
		dpv_cm_timer(&a.conn, t, &o);
		assert_memory_equal(&o.mad, &dreq.mad, sizeof(o.mad));
		sends++;
	}
	assert_int_equal(sends, 1 + RETRIES);
	t += REQ_WAIT;
	dpv_cm_timer(&a.conn, t, &o);
	assert_false(o.send);
	assert_int_equal(o.event, DPV_CM_EV_DISCONNECTED);
	assert_int_equal(dpv_cm_state(&a.conn), DPV_CM_TIMEWAIT);
	assert_int_equal(dpv_cm_deadline(&a.conn), t + TIMEWAIT_NS);
	/* A DREQ for a connection that is gone: a DREP all the same. */
	assert_int_equal(dpv_cm_table_remove(&b.t, &b.conn), 0);
	assert_int_equal(deliver(&dreq, &b, t, &o), 0);
	assert_int_equal(o.mad.hdr.attr_id, DPV_CM_ATTR_DREP);
	assert_int_equal(o.mad.drep.local_comm_id, dreq.mad.dreq.remote_comm_id);
	assert_int_equal(o.mad.drep.remote_comm_id, a.conn.local_id);
}

static void calls_in_the_wrong_state_are_einval(void **state)
{
	struct dpv_cm_req req = req_template();
	struct dpv_cm_rep rep = rep_template();
	struct dpv_cm_out o;
	struct dpv_cm_conn fresh;
	struct dpv_cm_params p = {GUID_A, PLT, TIMEWAIT_NS, MRA_TO};

	(void)state;
	assert_int_equal(dpv_cm_rtu(&a.conn, NULL, 0, &o), EINVAL);
	assert_int_equal(dpv_cm_accept(&a.conn, &rep, T0, &o), EINVAL);
	assert_int_equal(dpv_cm_mra(&a.conn, 1, NULL, 0, &o), EINVAL);
	assert_int_equal(dpv_cm_reject(&a.conn, 28, NULL, 0, T0, &o), EINVAL);
	assert_int_equal(dpv_cm_disconnect(&a.conn, NULL, 0, T0, &o), EINVAL);
	assert_int_equal(dpv_cm_established(&a.conn, &o), EINVAL);
	assert_int_equal(dpv_cm_listen(&b.listener, service_id), EINVAL);
	/* No local ID yet. */
	dpv_cm_init(&fresh, &p);
	assert_int_equal(dpv_cm_connect(&fresh, &req, T0, &o), EINVAL);
	/* A field too wide. */
	req.local_qpn = 0x1000000;
	assert_int_equal(dpv_cm_connect(&a.conn, &req, T0, &o), EINVAL);
	assert_false(o.send);
	assert_int_equal(dpv_cm_state(&a.conn), DPV_CM_IDLE);
	req = req_template();
	connect_and_request(T0);
	assert_int_equal(dpv_cm_connect(&a.conn, &req, T0, &o), EINVAL);
	assert_int_equal(dpv_cm_disconnect(&a.conn, NULL, 0, T0, &o), EINVAL);
	assert_int_equal(dpv_cm_rtu(&a.conn, NULL, 0, &o), EINVAL);
	/* Private data longer than the message's, a service timeout above 5 bits. */
	assert_int_equal(dpv_cm_mra(&b.conn, 32, NULL, 0, &o), EINVAL);
	assert_int_equal(dpv_cm_reject(&b.conn, 28, "x", DPV_CM_REJ_PDATA_LEN + 1, T0, &o), EINVAL);
	assert_int_equal(dpv_cm_state(&b.conn), DPV_CM_REQ_RCVD);
}

static void unexpected_mads_are_eproto_and_change_nothing(void **state)
{
	struct dpv_cm_rep rep = rep_template();
	struct dpv_cm_out req_out, rep_out, rtu, o, ev;
	struct dpv_cm_msg m;

	(void)state;
	req_out = connect_and_request(T0);
	/* A REQ to the active side's own connection: not its peer's. */
	assert_int_equal(dpv_cm_input(&a.conn, &req_out.mad, T0, &o), EPROTO);
	assert_int_equal(dpv_cm_accept(&b.conn, &rep, T0, &rep_out), 0);
	/* An RTU before the REP: A is in REQ_SENT. */
	memset(&m, 0, sizeof(m));
	m.hdr.attr_id = DPV_CM_ATTR_RTU;
	m.rtu.local_comm_id = b.conn.local_id;
	m.rtu.remote_comm_id = a.conn.local_id;
	assert_int_equal(dpv_cm_input(&a.conn, &m, T0, &o), EPROTO);
	assert_false(o.send);
	assert_int_equal(o.event, DPV_CM_EV_NONE);
	assert_int_equal(dpv_cm_state(&a.conn), DPV_CM_REQ_SENT);
	/* A REP naming another connection. */
	m = rep_out.mad;
	m.rep.remote_comm_id ^= 1;
	assert_int_equal(dpv_cm_input(&a.conn, &m, T0, &o), EPROTO);
	assert_int_equal(deliver(&rep_out, &a, T0, &ev), 0);
	assert_int_equal(dpv_cm_rtu(&a.conn, NULL, 0, &rtu), 0);
	assert_int_equal(deliver(&rtu, &b, T0, &ev), 0);
	/* A DREQ for a QP that is not the receiver's. */
	assert_int_equal(dpv_cm_disconnect(&a.conn, NULL, 0, T0, &o), 0);
	m = o.mad;
	m.dreq.remote_qpn = QPN_A;
	assert_int_equal(dpv_cm_input(&b.conn, &m, T0, &ev), EPROTO);
	assert_int_equal(dpv_cm_state(&b.conn), DPV_CM_ESTABLISHED);
	/* A DREP nobody asked for. */
	memset(&m, 0, sizeof(m));
	m.hdr.attr_id = DPV_CM_ATTR_DREP;
	m.drep.local_comm_id = a.conn.local_id;
	m.drep.remote_comm_id = b.conn.local_id;
	assert_int_equal(dpv_cm_input(&b.conn, &m, T0, &ev), EPROTO);
	/* MADs no connection takes and nobody answers. */
	m.hdr.attr_id = DPV_CM_ATTR_SIDR_REP;
	assert_int_equal(dpv_cm_input(&b.conn, &m, T0, &ev), EPROTO);
	assert_int_equal(dpv_cm_answer_unmatched(&m, &ev), ENOENT);
	m.hdr.attr_id = DPV_CM_ATTR_MRA;
	assert_int_equal(dpv_cm_answer_unmatched(&m, &ev), ENOENT);
	assert_false(ev.send);
	assert_int_equal(dpv_cm_state(&b.conn), DPV_CM_ESTABLISHED);
}

/* The connections driven to each state a REJ may meet, one call at a time. */
enum step { STEP_REQ, STEP_REQ_RCVD, STEP_MRA, STEP_MRA_RCVD, STEP_REP, STEP_REP_RCVD,
	    STEP_MRA_REP, STEP_RTU, STEP_RTU_RCVD };

static struct dpv_cm_out last;

/* An MRA of the REP, as a kernel active side sends one (dpv_cm_mra() is passive only). */
static struct dpv_cm_out mra_of_rep(uint8_t service_timeout)
{
	struct dpv_cm_out o;

	memset(&o, 0, sizeof(o));
	o.send = true;
	o.mad.hdr.attr_id = DPV_CM_ATTR_MRA;
	o.mad.hdr.tid = a.conn.tid;
	o.mad.mra.local_comm_id = a.conn.local_id;
	o.mad.mra.remote_comm_id = b.conn.local_id;
	o.mad.mra.message_mraed = DPV_CM_REF_REP;
	o.mad.mra.service_timeout = service_timeout;
	return o;
}

static void run_to(enum step upto)
{
	struct dpv_cm_req req = req_template();
	struct dpv_cm_rep rep = rep_template();
	struct dpv_cm_out ev;
	enum step s;

	for (s = STEP_REQ; s <= upto; s++) {
		switch (s) {
		case STEP_REQ:
			assert_int_equal(dpv_cm_connect(&a.conn, &req, T0, &last), 0);
			break;
		case STEP_REQ_RCVD:
			assert_int_equal(deliver(&last, &b, T0, &ev), 0);
			break;
		case STEP_MRA:
			assert_int_equal(dpv_cm_mra(&b.conn, 20, NULL, 0, &last), 0);
			break;
		case STEP_MRA_RCVD:
			assert_int_equal(deliver(&last, &a, T0, &ev), 0);
			break;
		case STEP_REP:
			assert_int_equal(dpv_cm_accept(&b.conn, &rep, T0, &last), 0);
			break;
		case STEP_REP_RCVD:
			assert_int_equal(deliver(&last, &a, T0, &ev), 0);
			break;
		case STEP_MRA_REP:
			ev = mra_of_rep(20);
			assert_int_equal(deliver(&ev, &b, T0, &ev), 0);
			break;
		case STEP_RTU:
			assert_int_equal(dpv_cm_rtu(&a.conn, NULL, 0, &last), 0);
			break;
		case STEP_RTU_RCVD:
			assert_int_equal(deliver(&last, &b, T0, &ev), 0);
			break;
		}
	}
}

static void rej_in_each_state(void **state)
{
	static const struct {
		enum step upto;
		bool to_a;
		enum dpv_cm_state before, after;
	} rows[] = {
		{STEP_REQ, true, DPV_CM_REQ_SENT, DPV_CM_IDLE},
		{STEP_MRA_RCVD, true, DPV_CM_MRA_REQ_RCVD, DPV_CM_IDLE},
		{STEP_REQ_RCVD, false, DPV_CM_REQ_RCVD, DPV_CM_IDLE},
		{STEP_MRA, false, DPV_CM_MRA_REQ_SENT, DPV_CM_IDLE},
		{STEP_REP_RCVD, true, DPV_CM_REP_RCVD, DPV_CM_TIMEWAIT},
		{STEP_REP, false, DPV_CM_REP_SENT, DPV_CM_TIMEWAIT},
		{STEP_MRA_REP, false, DPV_CM_MRA_REP_RCVD, DPV_CM_TIMEWAIT},
		{STEP_RTU, true, DPV_CM_ESTABLISHED, DPV_CM_TIMEWAIT},
		{STEP_RTU_RCVD, false, DPV_CM_ESTABLISHED, DPV_CM_TIMEWAIT},
	};
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct host *to = rows[i].to_a ? &a : &b, *peer = rows[i].to_a ? &b : &a;
		struct dpv_cm_out rej, ev;

		/* Each row from a fresh pair of hosts (the runner set up the first). */
		if (i > 0) {
			teardown(state);
			setup(state);
		}
		run_to(rows[i].upto);
		assert_int_equal(dpv_cm_state(&to->conn), rows[i].before);
		memset(&rej, 0, sizeof(rej));
		rej.send = true;
		rej.mad.hdr.attr_id = DPV_CM_ATTR_REJ;
		rej.mad.rej.local_comm_id = peer->conn.local_id;
		rej.mad.rej.remote_comm_id = to->conn.local_id;
		rej.mad.rej.reason = DPV_CM_REJ_CONSUMER_DEFINED;
		memcpy(rej.mad.rej.private_data, "why", 3);
		assert_int_equal(deliver(&rej, to, T0 + 7, &ev), 0);
		assert_false(ev.send);
		assert_int_equal(ev.event, DPV_CM_EV_REJECTED);
		assert_int_equal(ev.rej_reason, DPV_CM_REJ_CONSUMER_DEFINED);
		assert_memory_equal(ev.msg->rej.private_data, "why", 3);
		assert_int_equal(dpv_cm_state(&to->conn), rows[i].after);
		assert_int_equal(dpv_cm_deadline(&to->conn), rows[i].after == DPV_CM_TIMEWAIT ?
				 T0 + 7 + TIMEWAIT_NS : DPV_CM_NO_DEADLINE);
		/* The same REJ again finds nothing to reject. */
		assert_int_equal(deliver(&rej, to, T0 + 8, &ev), EPROTO);
	}
}

static void mra_of_the_rep_replaces_its_wait(void **state)
{
	struct dpv_cm_out mra = mra_of_rep(22), o, ev;
	struct dpv_cm_out rep_out;

	(void)state;
	run_to(STEP_REP);
	rep_out = last;
	assert_int_equal(deliver(&mra, &b, T0 + 3, &ev), 0);
	assert_false(ev.send);
	assert_int_equal(ev.event, DPV_CM_EV_NONE);
	assert_int_equal(dpv_cm_state(&b.conn), DPV_CM_MRA_REP_RCVD);
	assert_int_equal(dpv_cm_deadline(&b.conn), T0 + 3 + dpv_cm_timeout_ns(22) + RTT);
	dpv_cm_timer(&b.conn, T0 + REP_WAIT, &o);
	assert_false(o.send);
	/* A second MRA of the REP: B waits already. */
	assert_int_equal(deliver(&mra, &b, T0 + 4, &ev), EPROTO);
	/* The MRA's wait ends: the REP again, counted as a retry. */
	dpv_cm_timer(&b.conn, T0 + 3 + dpv_cm_timeout_ns(22) + RTT, &o);
	assert_memory_equal(&o.mad, &rep_out.mad, sizeof(o.mad));
	assert_int_equal(b.conn.retries, 1);
	assert_int_equal(dpv_cm_state(&b.conn), DPV_CM_REP_SENT);
}

static void dreq_before_the_rtu_releases_the_passive_side(void **state)
{
	struct dpv_cm_out o, ev;

	(void)state;
	run_to(STEP_RTU); /* the RTU is lost */
	assert_int_equal(dpv_cm_disconnect(&a.conn, NULL, 0, T0, &o), 0);
	assert_int_equal(deliver(&o, &b, T0, &ev), 0);
	assert_int_equal(ev.event, DPV_CM_EV_DISCONNECTED);
	assert_int_equal(dpv_cm_state(&b.conn), DPV_CM_DREQ_RCVD);
	/* The REP is not sent again: its clock has stopped. */
	assert_int_equal(dpv_cm_deadline(&b.conn), DPV_CM_NO_DEADLINE);
	assert_int_equal(deliver(&o, &b, T0, &ev), 0); /* the DREQ again: nothing */
	assert_false(ev.send);
	assert_int_equal(dpv_cm_disconnect(&b.conn, NULL, 0, T0, &o), 0);
	assert_int_equal(o.mad.hdr.attr_id, DPV_CM_ATTR_DREP);
	assert_int_equal(deliver(&o, &a, T0, &ev), 0);
	assert_int_equal(ev.event, DPV_CM_EV_DISCONNECTED);
	assert_int_equal(dpv_cm_state(&a.conn), DPV_CM_TIMEWAIT);
	assert_int_equal(dpv_cm_state(&b.conn), DPV_CM_TIMEWAIT);
}

static void state_names(void **state)
{
	(void)state;
	assert_string_equal(dpv_cm_state_name(DPV_CM_IDLE), "IDLE");
	assert_string_equal(dpv_cm_state_name(DPV_CM_MRA_REP_RCVD), "MRA_REP_RCVD");
	assert_string_equal(dpv_cm_state_name(DPV_CM_TIMEWAIT), "TIMEWAIT");
	assert_string_equal(dpv_cm_state_name((enum dpv_cm_state)99), "?");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(establishment_exact_mads_and_events, setup, teardown),
		cmocka_unit_test_setup_teardown(release_dreq_drep_timewait_exit, setup, teardown),
		cmocka_unit_test_setup_teardown(req_retried_max_cm_retries_times_then_unreachable,
						setup, teardown),
		cmocka_unit_test_setup_teardown(req_timeout_rej_reaches_the_passive_side_by_ari,
						setup, teardown),
		cmocka_unit_test_setup_teardown(mra_replaces_the_wait_and_answers_the_duplicate_req,
						setup, teardown),
		cmocka_unit_test_setup_teardown(rep_retried_then_rej_timeout_to_the_active_side,
						setup, teardown),
		cmocka_unit_test_setup_teardown(duplicate_rep_when_established_gets_the_rtu_again,
						setup, teardown),
		cmocka_unit_test_setup_teardown(data_before_rtu_establishes_and_the_late_rtu_is_ignored,
						setup, teardown),
		cmocka_unit_test_setup_teardown(passive_consumer_rejects_with_private_data, setup,
						teardown),
		cmocka_unit_test_setup_teardown(active_consumer_rejects_the_rep, setup, teardown),
		cmocka_unit_test_setup_teardown(no_listener_answers_rej_invalid_service_id, setup,
						teardown),
		cmocka_unit_test_setup_teardown(stale_req_rep_rtu_in_timewait_get_rej_stale, setup,
						teardown),
		cmocka_unit_test_setup_teardown(stale_rep_rtu_for_an_unknown_id_get_rej_stale, setup,
						teardown),
		cmocka_unit_test_setup_teardown(simultaneous_dreqs_each_answered_with_drep, setup,
						teardown),
		cmocka_unit_test_setup_teardown(dreq_retried_then_disconnected, setup, teardown),
		cmocka_unit_test_setup_teardown(calls_in_the_wrong_state_are_einval, setup, teardown),
		cmocka_unit_test_setup_teardown(unexpected_mads_are_eproto_and_change_nothing, setup,
						teardown),
		cmocka_unit_test_setup_teardown(rej_in_each_state, setup, teardown),
		cmocka_unit_test_setup_teardown(mra_of_the_rep_replaces_its_wait, setup, teardown),
		cmocka_unit_test_setup_teardown(dreq_before_the_rtu_releases_the_passive_side, setup,
						teardown),
		cmocka_unit_test(state_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
