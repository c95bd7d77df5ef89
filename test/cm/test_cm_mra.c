/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The MRAs lib/cm sends of itself (IBTA 12.6.6), as Linux's CM does for the RDMA CM:
 * none for a message answered in time, one when a REQ or a REP comes again before the
 * consumer answered, with the connection's service timeout, and the same MRA for every
 * duplicate after it. Between the two hosts of cm_hosts.h, exact MADs and waits.
 */
#include "cm_hosts.h"

#define MRA_WAIT (dpv_cm_timeout_ns(MRA_TO) + RTT)

/* The MRA @p o carries: every field. */
static void expect_mra(const struct dpv_cm_out *o, uint64_t tid, uint32_t local, uint32_t remote,
		       uint8_t mraed)
{
	static const uint8_t zero[DPV_CM_MRA_PDATA_LEN];

	assert_true(o->send);
	assert_int_equal(o->event, DPV_CM_EV_NONE);
	assert_int_equal(o->mad.hdr.attr_id, DPV_CM_ATTR_MRA);
	assert_true(o->mad.hdr.tid == tid);
	assert_int_equal(o->mad.mra.local_comm_id, local);
	assert_int_equal(o->mad.mra.remote_comm_id, remote);
	assert_int_equal(o->mad.mra.message_mraed, mraed);
	assert_int_equal(o->mad.mra.service_timeout, MRA_TO);
	assert_memory_equal(o->mad.mra.private_data, zero, sizeof(zero));
}

static void req_answered_in_time_gets_no_mra(void **state)
{
	struct dpv_cm_rep rep = rep_template();
	struct dpv_cm_out o, ev;

	(void)state;
	connect_and_request(T0);
	/* the consumer answers before A's REQ times out: the REP is the only MAD */
	assert_int_equal(dpv_cm_accept(&b.conn, &rep, T0 + REQ_WAIT - 1, &o), 0);
	assert_int_equal(o.mad.hdr.attr_id, DPV_CM_ATTR_REP);
	assert_false(b.conn.has_answer);
	assert_int_equal(deliver(&o, &a, T0 + REQ_WAIT - 1, &ev), 0);
	assert_int_equal(ev.event, DPV_CM_EV_CONNECT_RESPONSE);
	assert_false(ev.send);
}

static void duplicate_req_before_the_answer_gets_an_mra(void **state)
{
	struct dpv_cm_rep rep = rep_template();
	struct dpv_cm_out req_out, again, mra, o, ev;
	uint64_t t = T0 + REQ_WAIT;

	(void)state;
	req_out = connect_and_request(T0);
	/* B's consumer is slow: A's REQ times out and comes again */
	dpv_cm_timer(&a.conn, t, &again);
	assert_memory_equal(&again.mad, &req_out.mad, sizeof(again.mad));
	assert_int_equal(deliver(&again, &b, t, &mra), 0);
	expect_mra(&mra, req_out.mad.hdr.tid, b.conn.local_id, a.conn.local_id, DPV_CM_REF_REQ);
	assert_int_equal(dpv_cm_state(&b.conn), DPV_CM_MRA_REQ_SENT);
	assert_true(dpv_cm_deadline(&b.conn) == DPV_CM_NO_DEADLINE);

	/* A waits the MRA's service timeout now, not its REQ's */
	assert_int_equal(deliver(&mra, &a, t, &ev), 0);
	assert_false(ev.send);
	assert_int_equal(ev.event, DPV_CM_EV_NONE);
	assert_int_equal(dpv_cm_state(&a.conn), DPV_CM_MRA_REQ_RCVD);
	assert_true(dpv_cm_deadline(&a.conn) == t + MRA_WAIT);
	dpv_cm_timer(&a.conn, t + REQ_WAIT, &o);
	assert_false(o.send);

	/* every further duplicate gets the same MRA */
	assert_int_equal(deliver(&again, &b, t, &o), 0);
	assert_memory_equal(&o.mad, &mra.mad, sizeof(o.mad));

	/* the consumer answers: the handshake goes on as ever */
	assert_int_equal(dpv_cm_accept(&b.conn, &rep, t, &o), 0);
	assert_int_equal(deliver(&o, &a, t, &ev), 0);
	assert_int_equal(ev.event, DPV_CM_EV_CONNECT_RESPONSE);
	assert_int_equal(dpv_cm_rtu(&a.conn, NULL, 0, &o), 0);
	assert_int_equal(deliver(&o, &b, t, &ev), 0);
	assert_int_equal(ev.event, DPV_CM_EV_ESTABLISHED);
	assert_int_equal(a.conn.retries, 1);
}

static void duplicate_rep_before_the_rtu_gets_an_mra_of_the_rep(void **state)
{
	struct dpv_cm_rep rep = rep_template();
	struct dpv_cm_out req_out, rep_out, again, mra, o, ev;
	uint64_t t = T0 + REP_WAIT;

	(void)state;
	req_out = connect_and_request(T0);
	assert_int_equal(dpv_cm_accept(&b.conn, &rep, T0, &rep_out), 0);
	assert_int_equal(deliver(&rep_out, &a, T0, &ev), 0);
	assert_int_equal(ev.event, DPV_CM_EV_CONNECT_RESPONSE);
	/* A's consumer is slow: B's REP times out and comes again */
	dpv_cm_timer(&b.conn, t, &again);
	assert_memory_equal(&again.mad, &rep_out.mad, sizeof(again.mad));
	assert_int_equal(deliver(&again, &a, t, &mra), 0);
	expect_mra(&mra, req_out.mad.hdr.tid, a.conn.local_id, b.conn.local_id, DPV_CM_REF_REP);
	assert_int_equal(dpv_cm_state(&a.conn), DPV_CM_MRA_REP_SENT);

	assert_int_equal(deliver(&mra, &b, t, &ev), 0);
	assert_false(ev.send);
	assert_int_equal(dpv_cm_state(&b.conn), DPV_CM_MRA_REP_RCVD);
	assert_true(dpv_cm_deadline(&b.conn) == t + MRA_WAIT);

	assert_int_equal(deliver(&again, &a, t, &o), 0);
	assert_memory_equal(&o.mad, &mra.mad, sizeof(o.mad));
	assert_int_equal(dpv_cm_state(&a.conn), DPV_CM_MRA_REP_SENT);

	assert_int_equal(dpv_cm_rtu(&a.conn, NULL, 0, &o), 0);
	assert_int_equal(o.event, DPV_CM_EV_ESTABLISHED);
	assert_int_equal(deliver(&o, &b, t, &ev), 0);
	assert_int_equal(ev.event, DPV_CM_EV_ESTABLISHED);
	assert_int_equal(b.conn.retries, 1);
}

/* After the MRA of the REP the consumer may still reject it: REJ of the REP. */
static void rep_rejected_after_its_mra(void **state)
{
	struct dpv_cm_rep rep = rep_template();
	struct dpv_cm_out rep_out, again, o, ev;
	uint64_t t = T0 + REP_WAIT;

	(void)state;
	connect_and_request(T0);
	assert_int_equal(dpv_cm_accept(&b.conn, &rep, T0, &rep_out), 0);
	assert_int_equal(deliver(&rep_out, &a, T0, &ev), 0);
	dpv_cm_timer(&b.conn, t, &again);
	assert_int_equal(deliver(&again, &a, t, &o), 0);
	assert_int_equal(dpv_cm_state(&a.conn), DPV_CM_MRA_REP_SENT);
	assert_int_equal(dpv_cm_reject(&a.conn, DPV_CM_REJ_CONSUMER_DEFINED, NULL, 0, t, &o), 0);
	assert_int_equal(o.mad.rej.message_rejected, DPV_CM_REF_REP);
	assert_int_equal(dpv_cm_state(&a.conn), DPV_CM_TIMEWAIT);
	assert_int_equal(deliver(&o, &b, t, &ev), 0);
	assert_int_equal(ev.event, DPV_CM_EV_REJECTED);
	assert_int_equal(ev.rej_reason, DPV_CM_REJ_CONSUMER_DEFINED);
	assert_int_equal(dpv_cm_state(&b.conn), DPV_CM_TIMEWAIT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(req_answered_in_time_gets_no_mra, setup, teardown),
		cmocka_unit_test_setup_teardown(duplicate_req_before_the_answer_gets_an_mra, setup,
						teardown),
		cmocka_unit_test_setup_teardown(duplicate_rep_before_the_rtu_gets_an_mra_of_the_rep,
						setup, teardown),
		cmocka_unit_test_setup_teardown(rep_rejected_after_its_mra, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
