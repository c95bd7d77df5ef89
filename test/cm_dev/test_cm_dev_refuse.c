/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The device's CM against a peer the test plays by hand: device R's GSI is the test's
 * (dpv_xport_set_gsi()), so every MAD device A sends is caught whole and R's MADs are
 * built here. Exact MADs for the MRA of a duplicate REQ and of a duplicate REP (service
 * timeout DPV_DEV_CM_MRA_TIMEOUT), REJ Invalid Class Version, REJ No Resources when the
 * table is full, REJ Invalid Service ID from a listener that went away, and SIDR_REP
 * Unsupported Version.
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
#include "dpv_cm_ip.h"
#include "helpers.h"

#define IP_A RTE_IPV4(127, 0, 24, 1)
#define IP_R RTE_IPV4(127, 0, 24, 2)
#define GUID_R 0x0002c9030000abcdull
#define QPN_R 0x000777u
#define CAUGHT_MAX 512u

static struct dpv_dev *A, *R;

/* What A sent to R. */
static uint8_t caught[CAUGHT_MAX][DPV_CM_MAD_LEN];
static unsigned int n_caught, n_taken;

static void catch_mad(void *arg, uint32_t src_ip, const uint8_t *mad)
{
	(void)arg;
	if (src_ip == IP_A && n_caught < CAUGHT_MAX)
		memcpy(caught[n_caught++], mad, DPV_CM_MAD_LEN);
}

/* The next MAD A sent, unpacked; waits for it. */
static struct dpv_cm_msg next_mad(const uint8_t **raw)
{
	struct dpv_cm_msg m;
	uint64_t t0 = now_ms();

	while (n_taken == n_caught) {
		assert_true(now_ms() - t0 < CM_DEV_WAIT_MS);
		cm_dev_drive();
	}
	if (raw != NULL)
		*raw = caught[n_taken];
	assert_int_equal(dpv_cm_unpack(caught[n_taken++], DPV_CM_MAD_LEN, &m), 0);
	return m;
}

/* No MAD from A while the devices run @p ms. */
static void no_mad(uint32_t ms)
{
	uint64_t t0 = now_ms();

	while (now_ms() - t0 < ms)
		cm_dev_drive();
	assert_int_equal(n_caught, n_taken);
}

/* R sends @p mad to A (with the port's room, as a device's CM would retry). */
static void r_send_raw(const uint8_t *mad)
{
	int ret;

	for (;;) {
		dpv_dev_own(R);
		ret = dpv_xport_gsi_send(R->xport, IP_A, mad, DPV_CM_MAD_LEN);
		dpv_dev_disown(R);
		if (ret != EAGAIN)
			break;
		cm_dev_drive();
	}
	assert_int_equal(ret, 0);
}

static void r_send(const struct dpv_cm_msg *m)
{
	uint8_t mad[DPV_CM_MAD_LEN];

	assert_int_equal(dpv_cm_pack(m, mad), 0);
	r_send_raw(mad);
}

/* R's REQ of communication ID @p id for @p sid. */
static struct dpv_cm_msg r_req(uint32_t id, uint64_t sid)
{
	struct dpv_cm_msg m;

	memset(&m, 0, sizeof(m));
	m.hdr.attr_id = DPV_CM_ATTR_REQ;
	m.hdr.tid = 0xabc0000000000000ull | id;
	m.req.local_comm_id = id;
	m.req.service_id = sid;
	m.req.local_ca_guid = GUID_R;
	m.req.local_qpn = QPN_R;
	m.req.starting_psn = 0x1234;
	m.req.remote_cm_response_timeout = 12;
	m.req.local_cm_response_timeout = 12;
	m.req.max_cm_retries = 3;
	m.req.pkey = 0xffff;
	m.req.path_mtu = 3;
	dpv_cm_gid_from_ipv4(IP_R, m.req.primary.local_gid);
	dpv_cm_gid_from_ipv4(IP_A, m.req.primary.remote_gid);
	return m;
}

static void expect_mra(const struct dpv_cm_msg *m, uint64_t tid, uint32_t local, uint32_t remote,
		       uint8_t mraed)
{
	assert_int_equal(m->hdr.attr_id, DPV_CM_ATTR_MRA);
	assert_true(m->hdr.tid == tid);
	assert_int_equal(m->mra.local_comm_id, local);
	assert_int_equal(m->mra.remote_comm_id, remote);
	assert_int_equal(m->mra.message_mraed, mraed);
	assert_int_equal(m->mra.service_timeout, DPV_DEV_CM_MRA_TIMEOUT);
}

static void expect_rej(const struct dpv_cm_msg *m, uint64_t tid, uint32_t local, uint32_t remote,
		       uint16_t reason)
{
	assert_int_equal(m->hdr.attr_id, DPV_CM_ATTR_REJ);
	assert_true(m->hdr.tid == tid);
	assert_int_equal(m->rej.local_comm_id, local);
	assert_int_equal(m->rej.remote_comm_id, remote);
	assert_int_equal(m->rej.message_rejected, DPV_CM_REF_REQ);
	assert_int_equal(m->rej.reason, reason);
}

static void duplicate_req_before_the_answer_gets_an_mra(void **state)
{
	struct dpv_cm_msg req = r_req(0x5001, cm_dev_tcp(7100)), m, mra, rtu, drep;
	const uint8_t *raw;
	uint8_t first[DPV_CM_MAD_LEN];
	struct dpv_dev_cm_event ev;
	uint32_t lid, aid;

	(void)state;
	assert_int_equal(dpv_dev_cm_listen(A, cm_dev_tcp(7100), &lid), 0);
	r_send(&req);
	ev = cm_dev_next(A);
	assert_int_equal(ev.type, DPV_CM_EV_CONNECT_REQUEST);
	aid = ev.id;
	no_mad(30); /* a REQ answered in time gets no MRA */

	r_send(&req); /* R's retry: A's consumer has not answered */
	mra = next_mad(&raw);
	memcpy(first, raw, sizeof(first));
	expect_mra(&mra, req.hdr.tid, aid, 0x5001, DPV_CM_REF_REQ);
	r_send(&req);
	next_mad(&raw);
	assert_memory_equal(raw, first, DPV_CM_MAD_LEN);
	cm_dev_no_event(A, 0);

	assert_int_equal(dpv_dev_cm_accept(A, aid, &cm_dev_param_a), 0);
	m = next_mad(NULL);
	assert_int_equal(m.hdr.attr_id, DPV_CM_ATTR_REP);
	assert_true(m.hdr.tid == req.hdr.tid);
	assert_int_equal(m.rep.local_comm_id, aid);
	assert_int_equal(m.rep.remote_comm_id, 0x5001);
	assert_int_equal(m.rep.local_qpn, cm_dev_param_a.qpn);

	memset(&rtu, 0, sizeof(rtu));
	rtu.hdr.attr_id = DPV_CM_ATTR_RTU;
	rtu.hdr.tid = req.hdr.tid;
	rtu.rtu.local_comm_id = 0x5001;
	rtu.rtu.remote_comm_id = aid;
	r_send(&rtu);
	cm_dev_expect(A, DPV_CM_EV_ESTABLISHED, aid);
	assert_int_equal(dpv_dev_cm_disconnect(A, aid), 0);
	m = next_mad(NULL);
	assert_int_equal(m.hdr.attr_id, DPV_CM_ATTR_DREQ);
	assert_int_equal(m.dreq.remote_qpn, QPN_R);
	memset(&drep, 0, sizeof(drep));
	drep.hdr.attr_id = DPV_CM_ATTR_DREP;
	drep.hdr.tid = m.hdr.tid;
	drep.drep.local_comm_id = 0x5001;
	drep.drep.remote_comm_id = aid;
	r_send(&drep);
	cm_dev_expect(A, DPV_CM_EV_DISCONNECTED, aid);
	cm_dev_expect(A, DPV_CM_EV_TIMEWAIT_EXIT, aid);
	assert_int_equal(dpv_dev_cm_unlisten(A, lid), 0);
	no_mad(0);
}

static void duplicate_rep_before_the_rtu_gets_an_mra_of_the_rep(void **state)
{
	struct dpv_cm_msg req, rep, mra, m, dreq;
	struct dpv_dev_cm_event ev;
	uint32_t bid;

	(void)state;
	assert_int_equal(dpv_dev_cm_connect(A, IP_R, cm_dev_tcp(7101), &cm_dev_param_b, &bid), 0);
	req = next_mad(NULL);
	assert_int_equal(req.hdr.attr_id, DPV_CM_ATTR_REQ);
	assert_int_equal(req.req.local_comm_id, bid);

	memset(&rep, 0, sizeof(rep));
	rep.hdr.attr_id = DPV_CM_ATTR_REP;
	rep.hdr.tid = req.hdr.tid;
	rep.rep.local_comm_id = 0x6001;
	rep.rep.remote_comm_id = bid;
	rep.rep.local_qpn = QPN_R;
	rep.rep.starting_psn = 0x4321;
	rep.rep.local_ca_guid = GUID_R;
	r_send(&rep);
	ev = cm_dev_expect(A, DPV_CM_EV_CONNECT_RESPONSE, bid);
	assert_int_equal(ev.remote_qpn, QPN_R);
	r_send(&rep); /* R's retry: A's consumer has not established */
	mra = next_mad(NULL);
	expect_mra(&mra, req.hdr.tid, bid, 0x6001, DPV_CM_REF_REP);
	r_send(&rep);
	m = next_mad(NULL);
	assert_memory_equal(&m, &mra, sizeof(m));

	assert_int_equal(dpv_dev_cm_establish(A, bid), 0);
	cm_dev_expect(A, DPV_CM_EV_ESTABLISHED, bid);
	m = next_mad(NULL);
	assert_int_equal(m.hdr.attr_id, DPV_CM_ATTR_RTU);
	assert_int_equal(m.rtu.local_comm_id, bid);
	assert_int_equal(m.rtu.remote_comm_id, 0x6001);

	memset(&dreq, 0, sizeof(dreq));
	dreq.hdr.attr_id = DPV_CM_ATTR_DREQ;
	dreq.hdr.tid = 0x77;
	dreq.dreq.local_comm_id = 0x6001;
	dreq.dreq.remote_comm_id = bid;
	dreq.dreq.remote_qpn = cm_dev_param_b.qpn;
	r_send(&dreq);
	cm_dev_expect(A, DPV_CM_EV_DISCONNECTED, bid);
	assert_int_equal(dpv_dev_cm_disconnect(A, bid), 0);
	m = next_mad(NULL);
	assert_int_equal(m.hdr.attr_id, DPV_CM_ATTR_DREP);
	assert_true(m.hdr.tid == 0x77);
	cm_dev_expect(A, DPV_CM_EV_TIMEWAIT_EXIT, bid);
	no_mad(0);
}

static void req_of_another_class_version_gets_rej_31(void **state)
{
	struct dpv_cm_msg req = r_req(0x5101, cm_dev_tcp(7102)), m, sreq;
	const uint64_t refused = A->stats.cm_rx_refused;
	uint8_t mad[DPV_CM_MAD_LEN];

	(void)state;
	assert_int_equal(dpv_cm_pack(&req, mad), 0);
	mad[2] = 1;
	r_send_raw(mad);
	m = next_mad(NULL);
	expect_rej(&m, req.hdr.tid, 0, 0x5101, DPV_CM_REJ_INVALID_CLASS_VERSION);
	assert_int_equal(m.rej.ari_length, 1);
	assert_int_equal(m.rej.ari[0], DPV_CM_CLASS_VERSION);
	assert_int_equal(A->stats.cm_rx_refused - refused, 1);

	memset(&sreq, 0, sizeof(sreq));
	sreq.hdr.attr_id = DPV_CM_ATTR_SIDR_REQ;
	sreq.hdr.tid = 0x99;
	sreq.sidr_req.request_id = 0x5102;
	sreq.sidr_req.service_id = cm_dev_udp(7102);
	assert_int_equal(dpv_cm_pack(&sreq, mad), 0);
	mad[2] = 3;
	r_send_raw(mad);
	m = next_mad(NULL);
	assert_int_equal(m.hdr.attr_id, DPV_CM_ATTR_SIDR_REP);
	assert_true(m.hdr.tid == 0x99);
	assert_int_equal(m.sidr_rep.request_id, 0x5102);
	assert_true(m.sidr_rep.service_id == cm_dev_udp(7102));
	assert_int_equal(m.sidr_rep.status, DPV_CM_SIDR_UNSUPPORTED_VERSION);
	assert_int_equal(m.sidr_rep.info_length, 1);
	assert_int_equal(m.sidr_rep.info[0], DPV_CM_CLASS_VERSION);
	assert_int_equal(A->stats.cm_rx_refused - refused, 2);
	cm_dev_no_event(A, 10);
	assert_int_equal(cm_dev_ids(A), 0);
}

/* The listener and DPV_DEV_CM_MAX - 1 connections waiting for their consumer: the next
 * REQ finds no room and gets REJ No Resources, and so does a SIDR_REQ (SIDR_REP
 * Rejected); a connect of A's own is ENOSPC. Rejecting them all empties the table. */
static void full_table_answers_rej_no_resources(void **state)
{
	const uint64_t refused = A->stats.cm_rx_refused;
	uint32_t ids[DPV_DEV_CM_MAX], lid, id, i;
	struct dpv_cm_msg req, m, sreq;
	struct dpv_dev_cm_event ev;

	(void)state;
	assert_int_equal(dpv_dev_cm_listen(A, cm_dev_tcp(7103), &lid), 0);
	for (i = 0; i < DPV_DEV_CM_MAX - 1; i++) {
		req = r_req(0x7000 + i, cm_dev_tcp(7103));
		r_send(&req);
		ev = cm_dev_next(A);
		assert_int_equal(ev.type, DPV_CM_EV_CONNECT_REQUEST);
		ids[i] = ev.id;
	}
	assert_int_equal(cm_dev_ids(A), DPV_DEV_CM_MAX);
	assert_int_equal(dpv_dev_cm_connect(A, IP_R, cm_dev_tcp(1), &cm_dev_param_b, &id), ENOSPC);
	assert_int_equal(dpv_dev_cm_listen(A, cm_dev_tcp(1), &id), ENOSPC);
	assert_int_equal(dpv_dev_cm_sidr_request(A, IP_R, cm_dev_udp(1), NULL, 0, &id), ENOSPC);
	no_mad(10);

	req = r_req(0x7fff, cm_dev_tcp(7103));
	r_send(&req);
	m = next_mad(NULL);
	expect_rej(&m, req.hdr.tid, 0, 0x7fff, DPV_CM_REJ_NO_RESOURCES);
	assert_int_equal(m.rej.ari_length, 0);
	memset(&sreq, 0, sizeof(sreq));
	sreq.hdr.attr_id = DPV_CM_ATTR_SIDR_REQ;
	sreq.hdr.tid = 0x98;
	sreq.sidr_req.request_id = 0x7ffe;
	sreq.sidr_req.service_id = cm_dev_tcp(7103);
	r_send(&sreq);
	m = next_mad(NULL);
	assert_int_equal(m.hdr.attr_id, DPV_CM_ATTR_SIDR_REP);
	assert_int_equal(m.sidr_rep.request_id, 0x7ffe);
	assert_int_equal(m.sidr_rep.status, DPV_CM_SIDR_REJECT);
	assert_int_equal(A->stats.cm_rx_refused - refused, 2);
	cm_dev_no_event(A, 10);

	for (i = 0; i < DPV_DEV_CM_MAX - 1; i++) {
		assert_int_equal(dpv_dev_cm_reject(A, ids[i], NULL, 0), 0);
		m = next_mad(NULL);
		expect_rej(&m, 0xabc0000000000000ull | (0x7000 + i), ids[i], 0x7000 + i,
			   DPV_CM_REJ_CONSUMER_DEFINED);
	}
	assert_int_equal(cm_dev_ids(A), 1);
	assert_int_equal(dpv_dev_cm_unlisten(A, lid), 0);
	assert_int_equal(cm_dev_ids(A), 0);
	no_mad(10);
}

/* A listener that went away answers REJ (Invalid Service ID) at once; the
 * connections it gave stay and are answered by their consumer. */
static void vanished_listener_answers_rej(void **state)
{
	struct dpv_cm_msg req = r_req(0x5201, cm_dev_tcp(7104)), again, m;
	struct dpv_dev_cm_event ev;
	uint32_t lid;

	(void)state;
	assert_int_equal(dpv_dev_cm_listen(A, cm_dev_tcp(7104), &lid), 0);
	r_send(&req);
	ev = cm_dev_next(A);
	assert_int_equal(ev.type, DPV_CM_EV_CONNECT_REQUEST);
	assert_int_equal(dpv_dev_cm_unlisten(A, lid), 0);
	again = r_req(0x5202, cm_dev_tcp(7104));
	r_send(&again);
	m = next_mad(NULL);
	expect_rej(&m, again.hdr.tid, 0, 0x5202, DPV_CM_REJ_INVALID_SERVICE_ID);
	assert_int_equal(dpv_dev_cm_reject(A, ev.id, "bye", 3), 0);
	m = next_mad(NULL);
	expect_rej(&m, req.hdr.tid, ev.id, 0x5201, DPV_CM_REJ_CONSUMER_DEFINED);
	assert_memory_equal(m.rej.private_data, "bye", 3);
	cm_dev_no_event(A, 10);
	assert_int_equal(cm_dev_ids(A), 0);
}

static int devices_up(void **state)
{
	(void)state;
	if (cm_dev_eal_up() != 0 || cm_dev_pair("cmraw", "dpv0", IP_A, NULL, "dpv1", IP_R, NULL,
						 &cm_dev_quick, &A, &R) != 0)
		return -1;
	/* R's MADs are the test's. */
	dpv_dev_own(R);
	dpv_xport_set_gsi(R->xport, catch_mad, NULL);
	dpv_dev_disown(R);
	return 0;
}


int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(duplicate_req_before_the_answer_gets_an_mra),
		cmocka_unit_test(duplicate_rep_before_the_rtu_gets_an_mra_of_the_rep),
		cmocka_unit_test(req_of_another_class_version_gets_rej_31),
		cmocka_unit_test(full_table_answers_rej_no_resources),
		cmocka_unit_test(vanished_listener_answers_rej),
	};

	cm_dev_args_keep(argc, argv);
	return cmocka_run_group_tests_name("cm_dev_refuse", tests, devices_up, cm_dev_down) ? 1
												 : 0;
}
