/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The requests a CM refuses before any connection takes them: a REQ or SIDR_REQ of
 * another class version (REJ Invalid Class Version, SIDR_REP Unsupported Version, with
 * the version we speak), and one the passive side has no room for (REJ No Resources,
 * SIDR_REP Rejected). Each answer exactly, and as the active side of cm_hosts.h takes it.
 */
#include <errno.h>

#include "cm_hosts.h"

/* A's REQ as the wire carries it, with class version @p v. */
static void req_mad(uint8_t mad[DPV_CM_MAD_LEN], uint8_t v, struct dpv_cm_out *req_out)
{
	struct dpv_cm_req req = req_template();

	assert_int_equal(dpv_cm_connect(&a.conn, &req, T0, req_out), 0);
	assert_int_equal(dpv_cm_pack(&req_out->mad, mad), 0);
	mad[2] = v;
}

static void req_of_another_class_version_gets_rej_31(void **state)
{
	uint8_t mad[DPV_CM_MAD_LEN], ans[DPV_CM_MAD_LEN];
	struct dpv_cm_out req_out, o, ev;
	struct dpv_cm_msg m;

	(void)state;
	req_mad(mad, 1, &req_out);
	assert_int_equal(dpv_cm_unpack(mad, sizeof(mad), &m), EPROTONOSUPPORT);
	assert_int_equal(dpv_cm_answer_version(mad, sizeof(mad), &o), 0);
	assert_true(o.send);
	assert_int_equal(o.event, DPV_CM_EV_NONE);
	assert_int_equal(o.mad.hdr.attr_id, DPV_CM_ATTR_REJ);
	assert_true(o.mad.hdr.tid == req_out.mad.hdr.tid);
	assert_int_equal(o.mad.rej.local_comm_id, 0);
	assert_int_equal(o.mad.rej.remote_comm_id, a.conn.local_id);
	assert_int_equal(o.mad.rej.message_rejected, DPV_CM_REF_REQ);
	assert_int_equal(o.mad.rej.reason, DPV_CM_REJ_INVALID_CLASS_VERSION);
	assert_int_equal(o.mad.rej.ari_length, 1);
	assert_int_equal(o.mad.rej.ari[0], DPV_CM_CLASS_VERSION);
	/* the answer is of our version, and the active side takes it */
	assert_int_equal(dpv_cm_pack(&o.mad, ans), 0);
	assert_int_equal(ans[2], DPV_CM_CLASS_VERSION);
	assert_int_equal(deliver(&o, &a, T0, &ev), 0);
	assert_int_equal(ev.event, DPV_CM_EV_REJECTED);
	assert_int_equal(ev.rej_reason, DPV_CM_REJ_INVALID_CLASS_VERSION);
	assert_int_equal(dpv_cm_state(&a.conn), DPV_CM_IDLE);
	/* a higher version is refused the same way */
	mad[2] = 3;
	assert_int_equal(dpv_cm_answer_version(mad, sizeof(mad), &o), 0);
	assert_int_equal(o.mad.rej.reason, DPV_CM_REJ_INVALID_CLASS_VERSION);
}

static void sidr_req_of_another_class_version_gets_unsupported_version(void **state)
{
	struct dpv_cm_sidr_req req;
	uint8_t mad[DPV_CM_MAD_LEN];
	struct dpv_cm_out o, ans;

	(void)state;
	memset(&req, 0, sizeof(req));
	req.service_id = dpv_cm_ip_service_id(DPV_CM_PS_UDP, 4791);
	assert_int_equal(dpv_cm_sidr_request(&a.conn, &req, REMOTE_TO, RETRIES, T0, &o), 0);
	assert_int_equal(dpv_cm_pack(&o.mad, mad), 0);
	mad[2] = 1;
	assert_int_equal(dpv_cm_answer_version(mad, sizeof(mad), &ans), 0);
	assert_int_equal(ans.mad.hdr.attr_id, DPV_CM_ATTR_SIDR_REP);
	assert_true(ans.mad.hdr.tid == o.mad.hdr.tid);
	assert_int_equal(ans.mad.sidr_rep.request_id, a.conn.local_id);
	assert_true(ans.mad.sidr_rep.service_id == req.service_id);
	assert_int_equal(ans.mad.sidr_rep.status, DPV_CM_SIDR_UNSUPPORTED_VERSION);
	assert_int_equal(ans.mad.sidr_rep.info_length, 1);
	assert_int_equal(ans.mad.sidr_rep.info[0], DPV_CM_CLASS_VERSION);
}

/* Only a request of the CM class in base version 1 is answered; the rest is dropped. */
static void other_mads_of_another_version_get_no_answer(void **state)
{
	uint8_t mad[DPV_CM_MAD_LEN];
	struct dpv_cm_msg m;
	struct dpv_cm_out o;

	(void)state;
	memset(&m, 0, sizeof(m));
	m.hdr.attr_id = DPV_CM_ATTR_REQ;
	m.hdr.tid = 77;
	m.req = req_template();
	m.req.local_comm_id = 0x1234;
	assert_int_equal(dpv_cm_pack(&m, mad), 0);
	assert_int_equal(dpv_cm_answer_version(mad, sizeof(mad), &o), ENOENT); /* our version */
	assert_false(o.send);
	mad[2] = 1;
	assert_int_equal(dpv_cm_answer_version(mad, sizeof(mad), &o), 0);
	assert_int_equal(dpv_cm_answer_version(mad, sizeof(mad) - 1, &o), ENOENT);
	mad[0] = 2;
	assert_int_equal(dpv_cm_answer_version(mad, sizeof(mad), &o), ENOENT);
	mad[0] = DPV_CM_BASE_VERSION;
	mad[1] = 0x04;
	assert_int_equal(dpv_cm_answer_version(mad, sizeof(mad), &o), ENOENT);
	mad[1] = DPV_CM_MGMT_CLASS;
	mad[3] = 0x01; /* Get */
	assert_int_equal(dpv_cm_answer_version(mad, sizeof(mad), &o), ENOENT);
	/* a REP of another version */
	memset(&m, 0, sizeof(m));
	m.hdr.attr_id = DPV_CM_ATTR_REP;
	m.rep = rep_template();
	assert_int_equal(dpv_cm_pack(&m, mad), 0);
	mad[2] = 1;
	assert_int_equal(dpv_cm_answer_version(mad, sizeof(mad), &o), ENOENT);
	assert_false(o.send);
}

static void full_passive_side_answers_rej_no_resources(void **state)
{
	struct dpv_cm_sidr_req sreq;
	struct dpv_cm_out req_out, o, ev;
	struct dpv_cm_req req = req_template();

	(void)state;
	assert_int_equal(dpv_cm_connect(&a.conn, &req, T0, &req_out), 0);
	assert_int_equal(dpv_cm_answer_no_resources(&req_out.mad, &o), 0);
	assert_true(o.send);
	assert_int_equal(o.mad.hdr.attr_id, DPV_CM_ATTR_REJ);
	assert_true(o.mad.hdr.tid == req_out.mad.hdr.tid);
	assert_int_equal(o.mad.rej.local_comm_id, 0);
	assert_int_equal(o.mad.rej.remote_comm_id, a.conn.local_id);
	assert_int_equal(o.mad.rej.message_rejected, DPV_CM_REF_REQ);
	assert_int_equal(o.mad.rej.reason, DPV_CM_REJ_NO_RESOURCES);
	assert_int_equal(o.mad.rej.ari_length, 0);
	assert_int_equal(deliver(&o, &a, T0, &ev), 0);
	assert_int_equal(ev.event, DPV_CM_EV_REJECTED);
	assert_int_equal(ev.rej_reason, DPV_CM_REJ_NO_RESOURCES);

	memset(&sreq, 0, sizeof(sreq));
	sreq.service_id = dpv_cm_ip_service_id(DPV_CM_PS_UDP, 4791);
	assert_int_equal(dpv_cm_sidr_request(&a.conn, &sreq, REMOTE_TO, RETRIES, T0, &req_out), 0);
	assert_int_equal(dpv_cm_answer_no_resources(&req_out.mad, &o), 0);
	assert_int_equal(o.mad.hdr.attr_id, DPV_CM_ATTR_SIDR_REP);
	assert_int_equal(o.mad.sidr_rep.request_id, a.conn.local_id);
	assert_int_equal(o.mad.sidr_rep.status, DPV_CM_SIDR_REJECT);
	assert_int_equal(deliver(&o, &a, T0, &ev), 0);
	assert_int_equal(ev.event, DPV_CM_EV_UNREACHABLE);

	/* nothing else is refused so */
	o.mad.hdr.attr_id = DPV_CM_ATTR_REP;
	assert_int_equal(dpv_cm_answer_no_resources(&o.mad, &ev), ENOENT);
	assert_false(ev.send);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(req_of_another_class_version_gets_rej_31, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			sidr_req_of_another_class_version_gets_unsupported_version, setup, teardown),
		cmocka_unit_test_setup_teardown(other_mads_of_another_version_get_no_answer, setup,
						teardown),
		cmocka_unit_test_setup_teardown(full_passive_side_answers_rej_no_resources, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
