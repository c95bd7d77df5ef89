/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * SIDR between two devices of a ring pair (dpv_dev_cm_sidr_request(), UD ids): A
 * listens on an RDMA_PS_UDP service, B resolves it. Accepted: B's ESTABLISHED carries
 * A's QP number and Q_Key; rejected, to a service nobody listens on, to an address
 * nobody answers: UNREACHABLE with the SIDR_REP's status (0 after the retries). Every
 * event once, the MADs counted, the ids gone with their last event.
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

#define IP_A RTE_IPV4(127, 0, 23, 1)
#define IP_B RTE_IPV4(127, 0, 23, 2)
#define IP_NOBODY RTE_IPV4(127, 0, 23, 77)
#define QPN_A 0x000d0du
#define QKEY_A 0x11223344u

static struct dpv_dev *A, *B;

static void sidr_resolves_the_qp_and_qkey(void **state)
{
	static const uint8_t zero[DPV_CM_SIDR_REQ_PDATA_LEN];
	const uint64_t a0 = cm_dev_tx_gsi(A), b0 = cm_dev_tx_gsi(B);
	struct dpv_dev_cm_event ev;
	uint32_t lid, aid, bid;

	(void)state;
	assert_int_equal(dpv_dev_cm_listen(A, cm_dev_udp(7000), &lid), 0);
	assert_int_equal(dpv_dev_cm_sidr_request(B, IP_A, cm_dev_udp(7000), "where", 5, &bid), 0);
	assert_int_not_equal(bid, 0);

	ev = cm_dev_next(A);
	assert_int_equal(ev.type, DPV_CM_EV_CONNECT_REQUEST);
	assert_true(ev.ud);
	assert_int_equal(ev.listen_id, lid);
	assert_int_equal(ev.peer_ip, IP_B);
	assert_true(ev.service_id == cm_dev_udp(7000));
	assert_int_equal(ev.private_data_len, DPV_CM_SIDR_REQ_PDATA_LEN);
	assert_memory_equal(ev.private_data, "where", 5);
	assert_memory_equal(ev.private_data + 5, zero, DPV_CM_SIDR_REQ_PDATA_LEN - 5);
	aid = ev.id;
	assert_int_equal(cm_dev_ids(A), 2); /* the listener and the request */
	/* an RC answer does not serve a SIDR request */
	assert_int_equal(dpv_dev_cm_accept(A, aid, &cm_dev_param_a), EINVAL);
	assert_int_equal(dpv_dev_cm_sidr_accept(A, aid, 1u << 24, QKEY_A, NULL, 0), EINVAL);
	assert_int_equal(dpv_dev_cm_sidr_accept(A, aid, QPN_A, QKEY_A, "here", 4), 0);
	assert_int_equal(dpv_dev_cm_sidr_accept(A, aid, QPN_A, QKEY_A, NULL, 0), ENOENT);
	assert_int_equal(cm_dev_ids(A), 1);

	ev = cm_dev_expect(B, DPV_CM_EV_ESTABLISHED, bid);
	assert_true(ev.ud);
	assert_int_equal(ev.peer_ip, IP_A);
	assert_int_equal(ev.remote_qpn, QPN_A);
	assert_int_equal(ev.remote_qkey, QKEY_A);
	assert_int_equal(ev.sidr_status, 0);
	assert_int_equal(ev.private_data_len, DPV_CM_SIDR_REP_PDATA_LEN);
	assert_memory_equal(ev.private_data, "here", 4);
	assert_int_equal(cm_dev_ids(B), 0);
	/* one SIDR_REQ, one SIDR_REP: nothing sent again */
	assert_int_equal(cm_dev_tx_gsi(B) - b0, 1);
	assert_int_equal(cm_dev_tx_gsi(A) - a0, 1);
	assert_int_equal(dpv_dev_cm_disconnect(B, bid), ENOENT);
	cm_dev_no_event(A, 30);
	cm_dev_no_event(B, 0);
	assert_int_equal(dpv_dev_cm_unlisten(A, lid), 0);
}

static void sidr_rejected_is_unreachable_with_its_status(void **state)
{
	struct dpv_dev_cm_event ev;
	uint8_t big[DPV_CM_SIDR_REP_PDATA_LEN + 1];
	uint32_t lid, bid;

	(void)state;
	memset(big, 0, sizeof(big));
	assert_int_equal(dpv_dev_cm_listen(A, cm_dev_udp(7001), &lid), 0);
	assert_int_equal(dpv_dev_cm_sidr_request(B, IP_A, cm_dev_udp(7001), NULL, 0, &bid), 0);
	ev = cm_dev_next(A);
	assert_int_equal(ev.type, DPV_CM_EV_CONNECT_REQUEST);
	assert_true(ev.ud);
	assert_int_equal(dpv_dev_cm_reject(A, ev.id, big, sizeof(big)), EINVAL);
	assert_int_equal(dpv_dev_cm_reject(A, ev.id, "full", 4), 0);
	ev = cm_dev_expect(B, DPV_CM_EV_UNREACHABLE, bid);
	assert_true(ev.ud);
	assert_int_equal(ev.sidr_status, DPV_CM_SIDR_REJECT);
	assert_int_equal(ev.remote_qpn, 0);
	assert_memory_equal(ev.private_data, "full", 4);
	assert_int_equal(dpv_dev_cm_unlisten(A, lid), 0);
	/* the listener is gone: Service ID Not Supported */
	assert_int_equal(dpv_dev_cm_sidr_request(B, IP_A, cm_dev_udp(7001), NULL, 0, &bid), 0);
	ev = cm_dev_expect(B, DPV_CM_EV_UNREACHABLE, bid);
	assert_int_equal(ev.sidr_status, DPV_CM_SIDR_UNSUPPORTED);
	cm_dev_no_event(A, 30);
	assert_int_equal(cm_dev_ids(A), 0);
	assert_int_equal(cm_dev_ids(B), 0);
}

/* Nobody answers: 1 + Max CM Retries SIDR_REQs, then UNREACHABLE with status 0. */
static void sidr_to_nobody_is_unreachable_after_the_retries(void **state)
{
	/* each wait: 4.096 us * 2^12 + 2 * 4.096 us * 2^8 */
	const uint64_t wait_ms = (4096ull * 4096 + 2 * 4096ull * 256) / 1000000;
	const uint64_t b0 = cm_dev_tx_gsi(B);
	struct dpv_dev_cm_event ev;
	uint64_t t0 = now_ms();
	uint32_t bid;

	(void)state;
	assert_int_equal(dpv_dev_cm_sidr_request(B, IP_NOBODY, cm_dev_udp(7002), NULL, 0, &bid), 0);
	ev = cm_dev_expect(B, DPV_CM_EV_UNREACHABLE, bid);
	assert_true(now_ms() - t0 >= (1 + cm_dev_quick.max_retries) * wait_ms);
	assert_true(ev.ud);
	assert_int_equal(ev.sidr_status, 0);
	assert_int_equal(ev.private_data_len, 0);
	assert_int_equal(cm_dev_tx_gsi(B) - b0, 1 + cm_dev_quick.max_retries);
	assert_int_equal(cm_dev_ids(B), 0);
	cm_dev_no_event(B, 30);
}

static void bad_sidr_params_are_refused(void **state)
{
	uint8_t big[DPV_CM_SIDR_REQ_PDATA_LEN + 1];
	uint32_t id;

	(void)state;
	memset(big, 0, sizeof(big));
	assert_int_equal(dpv_dev_cm_sidr_request(B, IP_A, cm_dev_udp(1), big, sizeof(big), &id),
			 EINVAL);
	assert_int_equal(dpv_dev_cm_sidr_request(B, IP_A, cm_dev_udp(1), NULL, 1, &id), EINVAL);
	assert_int_equal(dpv_dev_cm_sidr_accept(A, 12345, 1, 1, NULL, 0), ENOENT);
	assert_int_equal(dpv_dev_cm_sidr_accept(A, 12345, 1, 1, big, DPV_CM_SIDR_REP_PDATA_LEN + 1),
			 EINVAL);
	assert_int_equal(dpv_dev_cm_list(A, NULL, 1, &id), EINVAL);
}

static int devices_up(void **state)
{
	(void)state;
	return cm_dev_eal_up() == 0 && cm_dev_pair("cmsidr", "dpv0", IP_A, NULL, "dpv1", IP_B, NULL,
						    &cm_dev_quick, &A, &B) == 0
		       ? 0
		       : -1;
}


int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(sidr_resolves_the_qp_and_qkey),
		cmocka_unit_test(sidr_rejected_is_unreachable_with_its_status),
		cmocka_unit_test(sidr_to_nobody_is_unreachable_after_the_retries),
		cmocka_unit_test(bad_sidr_params_are_refused),
	};

	cm_dev_args_keep(argc, argv);
	return cmocka_run_group_tests_name("cm_dev_sidr", tests, devices_up, cm_dev_down) ? 1 : 0;
}
