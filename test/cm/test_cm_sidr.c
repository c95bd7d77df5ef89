/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Service ID resolution (IBTA 12.11) between the two hosts of cm_hosts.h, B listening
 * on an RDMA_PS_UDP service: the SIDR_REQ and SIDR_REP with every field the machine
 * sets, the events of both sides, duplicates, stale replies, the retries counted on
 * the fake clock, and the calls' errors.
 */
#include <errno.h>

#include "cm_hosts.h"

#define QKEY_B 0x01234567u

static uint64_t udp_sid;

static int sidr_setup(void **state)
{
	struct dpv_cm_params pb = {GUID_B, PLT, TIMEWAIT_NS, MRA_TO};

	setup(state);
	/* B's listener moves to a UDP port's service. */
	udp_sid = dpv_cm_ip_service_id(DPV_CM_PS_UDP, 7174);
	assert_int_equal(dpv_cm_table_remove(&b.t, &b.listener), 0);
	dpv_cm_init(&b.listener, &pb);
	assert_int_equal(dpv_cm_table_add(&b.t, &b.listener), 0);
	assert_int_equal(dpv_cm_listen(&b.listener, udp_sid), 0);
	return 0;
}

static struct dpv_cm_sidr_req sidr_req_template(void)
{
	struct dpv_cm_sidr_req r;

	memset(&r, 0, sizeof(r));
	r.request_id = 0xdeadbeef; /* the machine's own ID replaces it */
	r.pkey = 0xffff;
	r.service_id = udp_sid;
	memcpy(r.private_data + 36, "query", 5);
	return r;
}

/* A sends its SIDR_REQ at T0; B takes it: CONNECT_REQUEST. Returns the SIDR_REQ. */
static struct dpv_cm_out request(void)
{
	struct dpv_cm_sidr_req req = sidr_req_template();
	struct dpv_cm_out o, ev;

	assert_int_equal(dpv_cm_sidr_request(&a.conn, &req, REMOTE_TO, RETRIES, T0, &o), 0);
	assert_int_equal(deliver(&o, &b, T0, &ev), 0);
	assert_false(ev.send);
	assert_int_equal(ev.event, DPV_CM_EV_CONNECT_REQUEST);
	assert_ptr_equal(ev.msg, &b.rx);
	assert_int_equal(dpv_cm_state(&b.conn), DPV_CM_SIDR_REQ_RCVD);
	return o;
}

static void sidr_resolves_exact_mads_and_events(void **state)
{
	struct dpv_cm_sidr_req req = sidr_req_template();
	struct dpv_cm_sidr_rep rep;
	struct dpv_cm_out req_out, o, ev;
	const struct dpv_cm_msg *m;

	(void)state;
	assert_int_equal(dpv_cm_sidr_request(&a.conn, &req, REMOTE_TO, RETRIES, T0, &req_out), 0);
	assert_int_equal(dpv_cm_state(&a.conn), DPV_CM_SIDR_REQ_SENT);
	assert_int_equal(req_out.event, DPV_CM_EV_NONE);
	assert_true(dpv_cm_deadline(&a.conn) == T0 + REQ_WAIT);
	m = &req_out.mad;
	assert_int_equal(m->hdr.attr_id, DPV_CM_ATTR_SIDR_REQ);
	assert_int_equal(m->sidr_req.request_id, a.conn.local_id);
	assert_int_equal(m->hdr.tid >> 32, a.conn.local_id);
	assert_int_equal(m->sidr_req.pkey, 0xffff);
	assert_true(m->sidr_req.service_id == 0x0000000001111c06ull);
	assert_memory_equal(m->sidr_req.private_data + 36, "query", 5);

	assert_int_equal(deliver(&req_out, &b, T0, &ev), 0);
	assert_int_equal(ev.event, DPV_CM_EV_CONNECT_REQUEST);
	assert_false(ev.send);
	assert_int_equal(ev.msg->sidr_req.request_id, a.conn.local_id);
	assert_memory_equal(ev.msg->sidr_req.private_data + 36, "query", 5);
	assert_int_equal(dpv_cm_state(&b.conn), DPV_CM_SIDR_REQ_RCVD);
	assert_true(dpv_cm_deadline(&b.conn) == DPV_CM_NO_DEADLINE);
	/* the request again while B's consumer decides: dropped, it answers once */
	assert_int_equal(deliver(&req_out, &b, T0, &o), 0);
	assert_false(o.send);
	assert_int_equal(o.event, DPV_CM_EV_NONE);

	memset(&rep, 0, sizeof(rep));
	rep.status = DPV_CM_SIDR_SUCCESS;
	rep.qpn = QPN_B;
	rep.qkey = QKEY_B;
	memcpy(rep.private_data, "answer", 6);
	assert_int_equal(dpv_cm_sidr_reply(&b.conn, &rep, &o), 0);
	assert_int_equal(dpv_cm_state(&b.conn), DPV_CM_IDLE);
	assert_int_equal(o.event, DPV_CM_EV_NONE);
	m = &o.mad;
	assert_int_equal(m->hdr.attr_id, DPV_CM_ATTR_SIDR_REP);
	assert_true(m->hdr.tid == req_out.mad.hdr.tid);
	assert_int_equal(m->sidr_rep.request_id, a.conn.local_id);
	assert_true(m->sidr_rep.service_id == udp_sid);
	assert_int_equal(m->sidr_rep.status, DPV_CM_SIDR_SUCCESS);
	assert_int_equal(m->sidr_rep.qpn, QPN_B);
	assert_int_equal(m->sidr_rep.qkey, QKEY_B);

	assert_int_equal(deliver(&o, &a, T0, &ev), 0);
	assert_false(ev.send);
	assert_int_equal(ev.event, DPV_CM_EV_ESTABLISHED);
	assert_ptr_equal(ev.msg, &a.rx);
	assert_int_equal(ev.msg->sidr_rep.qpn, QPN_B);
	assert_int_equal(ev.msg->sidr_rep.qkey, QKEY_B);
	assert_memory_equal(ev.msg->sidr_rep.private_data, "answer", 6);
	assert_int_equal(dpv_cm_state(&a.conn), DPV_CM_IDLE);
	assert_int_equal(a.conn.remote_qpn, QPN_B);
	assert_true(dpv_cm_deadline(&a.conn) == DPV_CM_NO_DEADLINE);
	/* the reply again: nobody waits for it */
	assert_int_equal(deliver(&o, &a, T0, &ev), EPROTO);
	assert_false(ev.send);
	assert_int_equal(ev.event, DPV_CM_EV_NONE);
}

/* Any status but Success is UNREACHABLE, with the SIDR_REP to read it from. */
static void sidr_rejected_is_unreachable_with_the_status(void **state)
{
	struct dpv_cm_sidr_rep rep;
	struct dpv_cm_out o, ev;

	(void)state;
	request();
	memset(&rep, 0, sizeof(rep));
	rep.status = DPV_CM_SIDR_REJECT;
	memcpy(rep.private_data, "no", 2);
	assert_int_equal(dpv_cm_sidr_reply(&b.conn, &rep, &o), 0);
	assert_int_equal(deliver(&o, &a, T0, &ev), 0);
	assert_int_equal(ev.event, DPV_CM_EV_UNREACHABLE);
	assert_int_equal(ev.msg->sidr_rep.status, DPV_CM_SIDR_REJECT);
	assert_memory_equal(ev.msg->sidr_rep.private_data, "no", 2);
	assert_int_equal(dpv_cm_state(&a.conn), DPV_CM_IDLE);
}

/* Nobody answers: the SIDR_REQ goes 1 + RETRIES times, then UNREACHABLE without a MAD. */
static void sidr_retried_then_unreachable(void **state)
{
	struct dpv_cm_sidr_req req = sidr_req_template();
	struct dpv_cm_out req_out, o;
	uint64_t t = T0;
	unsigned int i;

	(void)state;
	assert_int_equal(dpv_cm_sidr_request(&a.conn, &req, REMOTE_TO, RETRIES, t, &req_out), 0);
	dpv_cm_timer(&a.conn, t + REQ_WAIT - 1, &o);
	assert_false(o.send);
	for (i = 0; i < RETRIES; i++) {
		t += REQ_WAIT;
		dpv_cm_timer(&a.conn, t, &o);
		assert_memory_equal(&o.mad, &req_out.mad, sizeof(o.mad));
		assert_int_equal(o.event, DPV_CM_EV_NONE);
		assert_int_equal(a.conn.retries, i + 1);
	}
	t += REQ_WAIT;
	dpv_cm_timer(&a.conn, t, &o);
	assert_false(o.send);
	assert_int_equal(o.event, DPV_CM_EV_UNREACHABLE);
	assert_null(o.msg);
	assert_int_equal(dpv_cm_state(&a.conn), DPV_CM_IDLE);
	assert_true(dpv_cm_deadline(&a.conn) == DPV_CM_NO_DEADLINE);
}

/* A service nobody listens on: SIDR_REP Service ID Not Supported, UNREACHABLE. */
static void sidr_for_no_listener_is_unsupported(void **state)
{
	struct dpv_cm_sidr_req req = sidr_req_template();
	struct dpv_cm_out o, ans, ev;

	(void)state;
	req.service_id = dpv_cm_ip_service_id(DPV_CM_PS_UDP, 9);
	assert_int_equal(dpv_cm_sidr_request(&a.conn, &req, REMOTE_TO, RETRIES, T0, &o), 0);
	assert_int_equal(deliver(&o, &b, T0, &ans), 0);
	assert_int_equal(ans.event, DPV_CM_EV_NONE);
	assert_int_equal(ans.mad.hdr.attr_id, DPV_CM_ATTR_SIDR_REP);
	assert_true(ans.mad.hdr.tid == o.mad.hdr.tid);
	assert_int_equal(ans.mad.sidr_rep.request_id, a.conn.local_id);
	assert_true(ans.mad.sidr_rep.service_id == req.service_id);
	assert_int_equal(ans.mad.sidr_rep.status, DPV_CM_SIDR_UNSUPPORTED);
	assert_int_equal(ans.mad.sidr_rep.qpn, 0);
	assert_int_equal(dpv_cm_state(&b.conn), DPV_CM_IDLE);
	assert_int_equal(deliver(&ans, &a, T0, &ev), 0);
	assert_int_equal(ev.event, DPV_CM_EV_UNREACHABLE);
	assert_int_equal(ev.msg->sidr_rep.status, DPV_CM_SIDR_UNSUPPORTED);
}

/* A reply for another request of the same ID (another transaction) or for an ID of an
 * older generation finds nobody; requests of two peers with one ID are two requests. */
static void stale_replies_and_two_peers(void **state)
{
	struct dpv_cm_params pb = {GUID_B, PLT, TIMEWAIT_NS, MRA_TO};
	struct dpv_cm_sidr_rep rep;
	struct dpv_cm_out req_out, o, ev;
	struct dpv_cm_conn other;
	struct dpv_cm_msg stale;
	uint32_t id;

	(void)state;
	req_out = request();
	memset(&rep, 0, sizeof(rep));
	rep.qpn = QPN_B;
	assert_int_equal(dpv_cm_sidr_reply(&b.conn, &rep, &o), 0);
	stale = o.mad;
	stale.hdr.tid ^= 1;
	assert_int_equal(dpv_cm_input(&a.conn, &stale, T0, &ev), EPROTO);
	assert_int_equal(dpv_cm_state(&a.conn), DPV_CM_SIDR_REQ_SENT);
	assert_int_equal(deliver(&o, &a, T0, &ev), 0);
	assert_int_equal(ev.event, DPV_CM_EV_ESTABLISHED);

	/* the slot's next connection has a new ID: the old reply is nobody's */
	id = a.conn.local_id;
	assert_int_equal(dpv_cm_table_remove(&a.t, &a.conn), 0);
	assert_int_equal(dpv_cm_table_add(&a.t, &a.conn), 0);
	assert_int_not_equal(a.conn.local_id, id);
	assert_null(dpv_cm_table_route(&a.t, &o.mad));
	assert_int_equal(dpv_cm_answer_unmatched(&o.mad, &ev), ENOENT);

	/* B: the same request ID from A and from another address are told apart */
	assert_int_equal(dpv_cm_table_remove(&b.t, &b.conn), 0);
	assert_int_equal(dpv_cm_table_add(&b.t, &b.conn), 0);
	assert_int_equal(deliver(&req_out, &b, T0, &ev), 0);
	assert_int_equal(ev.event, DPV_CM_EV_CONNECT_REQUEST);
	dpv_cm_init(&other, &pb);
	assert_int_equal(dpv_cm_table_add(&b.t, &other), 0);
	assert_ptr_equal(dpv_cm_table_find_sidr(&b.t, id, ADDR_A), &b.conn);
	assert_null(dpv_cm_table_find_sidr(&b.t, id, ADDR_B));
	assert_int_equal(dpv_cm_sidr_req_received(&other, &b.listener, &b.rx, ADDR_B, &ev), 0);
	assert_ptr_equal(dpv_cm_table_find_sidr(&b.t, id, ADDR_B), &other);
	assert_ptr_equal(dpv_cm_table_find_sidr(&b.t, id, ADDR_A), &b.conn);
	/* and neither is taken for a REQ's connection */
	assert_null(dpv_cm_table_find_remote(&b.t, id, ADDR_A));
}

static void calls_in_the_wrong_state_are_einval(void **state)
{
	struct dpv_cm_sidr_req req = sidr_req_template();
	struct dpv_cm_sidr_rep rep;
	struct dpv_cm_out o, ev;

	(void)state;
	memset(&rep, 0, sizeof(rep));
	assert_int_equal(dpv_cm_sidr_request(&a.conn, &req, 32, RETRIES, T0, &o), EINVAL);
	assert_int_equal(dpv_cm_sidr_request(&a.conn, &req, REMOTE_TO, 16, T0, &o), EINVAL);
	assert_int_equal(dpv_cm_sidr_reply(&b.conn, &rep, &o), EINVAL); /* no request */
	assert_int_equal(dpv_cm_sidr_req_received(&b.conn, &b.listener, &b.rx, ADDR_A, &ev),
			 EINVAL); /* b.rx holds no SIDR_REQ */
	request();
	assert_int_equal(dpv_cm_sidr_request(&a.conn, &req, REMOTE_TO, RETRIES, T0, &o), EINVAL);
	assert_int_equal(dpv_cm_accept(&b.conn, &(struct dpv_cm_rep){0}, T0, &o), EINVAL);
	rep.qpn = 1u << 24;
	assert_int_equal(dpv_cm_sidr_reply(&b.conn, &rep, &o), EINVAL);
	assert_false(o.send);
	assert_int_equal(dpv_cm_state(&b.conn), DPV_CM_SIDR_REQ_RCVD);
	assert_string_equal(dpv_cm_state_name(DPV_CM_SIDR_REQ_SENT), "SIDR_REQ_SENT");
	assert_string_equal(dpv_cm_state_name(DPV_CM_SIDR_REQ_RCVD), "SIDR_REQ_RCVD");
	assert_string_equal(dpv_cm_state_name(DPV_CM_MRA_REP_SENT), "MRA_REP_SENT");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(sidr_resolves_exact_mads_and_events, sidr_setup,
						teardown),
		cmocka_unit_test_setup_teardown(sidr_rejected_is_unreachable_with_the_status,
						sidr_setup, teardown),
		cmocka_unit_test_setup_teardown(sidr_retried_then_unreachable, sidr_setup, teardown),
		cmocka_unit_test_setup_teardown(sidr_for_no_listener_is_unsupported, sidr_setup,
						teardown),
		cmocka_unit_test_setup_teardown(stale_replies_and_two_peers, sidr_setup, teardown),
		cmocka_unit_test_setup_teardown(calls_in_the_wrong_state_are_einval, sidr_setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
