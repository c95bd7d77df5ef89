/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Two hosts for the tests of the CM state machine: each a table with one connection
 * and (host B) a listener; every MAD goes packed and unpacked between them as the wire
 * would carry it, and is routed by the receiving table as a device routes it. The
 * clock is the test's: timeouts and retries are counted exactly.
 */
#ifndef CM_HOSTS_H
#define CM_HOSTS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "dpv_cm.h"
#include "dpv_cm_ip.h"

#define GUID_A 0x0002c90300000a0aull
#define GUID_B 0x0002c90300000b0bull
#define QPN_A 0x000111u
#define QPN_B 0x000222u
#define PLT 10u           /* packet life time exponent */
#define REMOTE_TO 16u     /* the REQ's Remote CM Response Timeout: B's response time */
#define LOCAL_TO 14u      /* the REQ's Local CM Response Timeout: A's response time */
#define RETRIES 3u
#define TIMEWAIT_NS 1000000000ull
#define MRA_TO 18u        /* the service timeout of our MRAs */
#define T0 1000000ull

/* The wait after a REQ (B answers) and after a REP (A answers). */
#define RTT (2 * dpv_cm_timeout_ns(PLT))
#define REQ_WAIT (dpv_cm_timeout_ns(REMOTE_TO) + RTT)
#define REP_WAIT (dpv_cm_timeout_ns(LOCAL_TO) + RTT)

struct host {
	struct dpv_cm_table t;
	struct dpv_cm_conn conn;
	struct dpv_cm_conn listener;
	struct dpv_cm_msg rx; /* the last MAD it received, as unpacked from the wire */
};

/* The two hosts, and their addresses as a SIDR request's passive side knows its sender. */
static struct host a, b;
static uint64_t service_id;
#define ADDR_A 0x7f001e01u
#define ADDR_B 0x7f001e02u

static inline int setup(void **state)
{
	struct dpv_cm_params pa = {GUID_A, PLT, TIMEWAIT_NS, MRA_TO};
	struct dpv_cm_params pb = {GUID_B, PLT, TIMEWAIT_NS, MRA_TO};

	(void)state;
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	service_id = dpv_cm_ip_service_id(DPV_CM_PS_TCP, 7174);
	assert_int_equal(dpv_cm_table_init(&a.t, 4), 0);
	assert_int_equal(dpv_cm_table_init(&b.t, 4), 0);
	dpv_cm_init(&a.conn, &pa);
	dpv_cm_init(&b.conn, &pb);
	dpv_cm_init(&b.listener, &pb);
	assert_int_equal(dpv_cm_table_add(&a.t, &a.conn), 0);
	assert_int_equal(dpv_cm_table_add(&b.t, &b.listener), 0);
	assert_int_equal(dpv_cm_table_add(&b.t, &b.conn), 0);
	assert_int_equal(dpv_cm_listen(&b.listener, service_id), 0);
	return 0;
}

static inline int teardown(void **state)
{
	(void)state;
	dpv_cm_table_fini(&a.t);
	dpv_cm_table_fini(&b.t);
	return 0;
}

/* The MAD of @p o across the wire into @p to->rx. */
static inline const struct dpv_cm_msg *wire(const struct dpv_cm_out *o, struct host *to)
{
	uint8_t mad[DPV_CM_MAD_LEN];

	assert_true(o->send);
	assert_int_equal(dpv_cm_pack(&o->mad, mad), 0);
	assert_int_equal(dpv_cm_unpack(mad, sizeof(mad), &to->rx), 0);
	return &to->rx;
}

/* Deliver @p o's MAD to host @p to as its device would: a SIDR_REQ's duplicate to its
 * connection, then route, the listener's REQ or SIDR_REQ to the free connection, a MAD
 * nobody owns to dpv_cm_answer_unmatched(). */
static inline int deliver(const struct dpv_cm_out *o, struct host *to, uint64_t now,
		   struct dpv_cm_out *res)
{
	const struct dpv_cm_msg *m = wire(o, to);
	struct dpv_cm_conn *c = dpv_cm_table_route(&to->t, m);

	uint64_t from = to == &a ? ADDR_B : ADDR_A;
	struct dpv_cm_conn *dup;

	if (m->hdr.attr_id == DPV_CM_ATTR_SIDR_REQ &&
	    (dup = dpv_cm_table_find_sidr(&to->t, m->sidr_req.request_id, from)) != NULL)
		return dpv_cm_input(dup, m, now, res);
	if (c == NULL)
		return dpv_cm_answer_unmatched(m, res);
	if (c->state == DPV_CM_LISTEN && m->hdr.attr_id == DPV_CM_ATTR_SIDR_REQ)
		return dpv_cm_sidr_req_received(&to->conn, c, m, from, res);
	if (c->state == DPV_CM_LISTEN)
		return dpv_cm_req_received(&to->conn, c, m, res);
	return dpv_cm_input(c, m, now, res);
}

static inline struct dpv_cm_req req_template(void)
{
	struct dpv_cm_req r;

	memset(&r, 0, sizeof(r));
	r.service_id = service_id;
	r.local_qkey = 0;
	r.local_qpn = QPN_A;
	r.responder_resources = 4;
	r.initiator_depth = 4;
	r.remote_cm_response_timeout = REMOTE_TO;
	r.transport = DPV_CM_TRANSPORT_RC;
	r.starting_psn = 0x123456;
	r.local_cm_response_timeout = LOCAL_TO;
	r.retry_count = 7;
	r.pkey = 0xffff;
	r.path_mtu = 3;
	r.rnr_retry_count = 7;
	r.max_cm_retries = RETRIES;
	dpv_cm_gid_from_ipv4(0x7f001e01, r.primary.local_gid);
	dpv_cm_gid_from_ipv4(0x7f001e02, r.primary.remote_gid);
	r.primary.hop_limit = 64;
	r.primary.local_ack_timeout = 14;
	memcpy(r.private_data + 36, "hello", 5);
	return r;
}

static inline struct dpv_cm_rep rep_template(void)
{
	struct dpv_cm_rep r;

	memset(&r, 0, sizeof(r));
	r.local_qpn = QPN_B;
	r.starting_psn = 0x654321;
	r.responder_resources = 4;
	r.initiator_depth = 4;
	r.rnr_retry_count = 7;
	memcpy(r.private_data, "welcome", 7);
	return r;
}

/* A sends its REQ at @p now; B takes it: CONNECT_REQUEST. Returns the REQ. */
static inline struct dpv_cm_out connect_and_request(uint64_t now)
{
	struct dpv_cm_req req = req_template();
	struct dpv_cm_out req_out, ev;

	assert_int_equal(dpv_cm_connect(&a.conn, &req, now, &req_out), 0);
	assert_int_equal(deliver(&req_out, &b, now, &ev), 0);
	assert_false(ev.send);
	assert_int_equal(ev.event, DPV_CM_EV_CONNECT_REQUEST);
	assert_ptr_equal(ev.msg, &b.rx);
	assert_int_equal(dpv_cm_state(&b.conn), DPV_CM_REQ_RCVD);
	return req_out;
}

/* The whole establishment; returns at ESTABLISHED on both sides, at time T0. */
static inline void establish(void)
{
	struct dpv_cm_rep rep = rep_template();
	struct dpv_cm_out o, ev;

	connect_and_request(T0);
	assert_int_equal(dpv_cm_accept(&b.conn, &rep, T0, &o), 0);
	assert_int_equal(deliver(&o, &a, T0, &ev), 0);
	assert_int_equal(ev.event, DPV_CM_EV_CONNECT_RESPONSE);
	assert_int_equal(dpv_cm_rtu(&a.conn, NULL, 0, &o), 0);
	assert_int_equal(deliver(&o, &b, T0, &ev), 0);
	assert_int_equal(ev.event, DPV_CM_EV_ESTABLISHED);
	assert_int_equal(dpv_cm_state(&a.conn), DPV_CM_ESTABLISHED);
	assert_int_equal(dpv_cm_state(&b.conn), DPV_CM_ESTABLISHED);
}

#endif /* CM_HOSTS_H */
