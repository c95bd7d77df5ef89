/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The device's CM over faults ports at 1 % loss each way: 64 REQs to one device at
 * once, a third to a listener that accepts, a third to one that rejects, a third to a
 * service nobody listens on, and 16 SIDR requests. Every one ends exactly once as the
 * wire would have it without loss (ESTABLISHED, REJECTED with its reason), none hangs;
 * the established ones are released with each event once on both sides. The CM's
 * retries stand for the MADs lost, and a lost REJ brings the REQ, and so the consumer's
 * CONNECT_REQUEST, again.
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

#define IP_C RTE_IPV4(127, 0, 27, 1)
#define IP_D RTE_IPV4(127, 0, 27, 2)
#define CONNS 64
#define SIDRS 16
#define QKEY_D 0x0badcafeu

enum kind { TO_ACCEPT, TO_REJECT, TO_NOBODY };

static struct dpv_dev *C, *D;

static enum kind kind_of(int i)
{
	return (enum kind)(i % 3);
}

static uint64_t service_of(enum kind k)
{
	return cm_dev_tcp((uint16_t)(7400 + k));
}

static int index_of(const uint32_t *ids, int n, uint32_t id)
{
	int i;

	for (i = 0; i < n; i++)
		if (ids[i] == id)
			return i;
	return -1;
}

static void every_request_ends_once_at_one_percent_loss(void **state)
{
	uint32_t cid[CONNS], sidr[SIDRS], did[CONNS], lid[2], sidr_lid;
	int ended[CONNS], sidr_ended[SIDRS], d_est[CONNS], d_gone[CONNS], c_disc[CONNS],
		c_gone[CONNS];
	int n_did = 0, pending = CONNS + SIDRS, established = 0, i, j;
	struct dpv_dev_cm_param p = cm_dev_param_b;
	struct dpv_faults_stats fc, fd;
	struct dpv_dev_cm_event ev;
	struct dpv_dev *from;

	(void)state;
	memset(ended, 0, sizeof(ended));
	memset(sidr_ended, 0, sizeof(sidr_ended));
	memset(d_est, 0, sizeof(d_est));
	memset(d_gone, 0, sizeof(d_gone));
	memset(c_disc, 0, sizeof(c_disc));
	memset(c_gone, 0, sizeof(c_gone));
	assert_int_equal(dpv_dev_cm_listen(D, service_of(TO_ACCEPT), &lid[TO_ACCEPT]), 0);
	assert_int_equal(dpv_dev_cm_listen(D, service_of(TO_REJECT), &lid[TO_REJECT]), 0);
	assert_int_equal(dpv_dev_cm_listen(D, cm_dev_udp(7400), &sidr_lid), 0);
	for (i = 0; i < CONNS; i++) {
		p.qpn = 0x2000 + (uint32_t)i;
		assert_int_equal(dpv_dev_cm_connect(C, IP_D, service_of(kind_of(i)), &p, &cid[i]), 0);
	}
	for (i = 0; i < SIDRS; i++)
		assert_int_equal(dpv_dev_cm_sidr_request(C, IP_D, cm_dev_udp(7400), NULL, 0, &sidr[i]),
				 0);

	while (pending > 0 || established < (CONNS + 2) / 3) {
		ev = cm_dev_next_of(C, D, &from);
		if (from == D) {
			switch (ev.type) {
			case DPV_CM_EV_CONNECT_REQUEST:
				if (ev.ud) {
					assert_int_equal(ev.listen_id, sidr_lid);
					assert_int_equal(dpv_dev_cm_sidr_accept(D, ev.id, 0x333, QKEY_D,
										NULL, 0),
							 0);
				} else if (ev.listen_id == lid[TO_REJECT]) {
					assert_int_equal(dpv_dev_cm_reject(D, ev.id, NULL, 0), 0);
				} else {
					assert_int_equal(ev.listen_id, lid[TO_ACCEPT]);
					did[n_did++] = ev.id;
					assert_int_equal(dpv_dev_cm_accept(D, ev.id, &cm_dev_param_a), 0);
				}
				break;
			case DPV_CM_EV_ESTABLISHED:
				j = index_of(did, n_did, ev.id);
				assert_true(j >= 0);
				d_est[j]++;
				established++;
				break;
			default:
				fail_msg("D: event %d of %#x", ev.type, ev.id);
			}
			continue;
		}
		if (ev.ud) {
			j = index_of(sidr, SIDRS, ev.id);
			assert_true(j >= 0);
			assert_int_equal(ev.type, DPV_CM_EV_ESTABLISHED);
			assert_int_equal(ev.remote_qpn, 0x333);
			assert_int_equal(ev.remote_qkey, QKEY_D);
			sidr_ended[j]++;
			pending--;
			continue;
		}
		i = index_of(cid, CONNS, ev.id);
		assert_true(i >= 0);
		switch (ev.type) {
		case DPV_CM_EV_CONNECT_RESPONSE:
			assert_int_equal(kind_of(i), TO_ACCEPT);
			assert_int_equal(dpv_dev_cm_establish(C, ev.id), 0);
			break;
		case DPV_CM_EV_ESTABLISHED:
			assert_int_equal(kind_of(i), TO_ACCEPT);
			ended[i]++;
			pending--;
			break;
		case DPV_CM_EV_REJECTED:
			assert_int_not_equal(kind_of(i), TO_ACCEPT);
			assert_int_equal(ev.rej_reason, kind_of(i) == TO_REJECT
								? DPV_CM_REJ_CONSUMER_DEFINED
								: DPV_CM_REJ_INVALID_SERVICE_ID);
			ended[i]++;
			pending--;
			break;
		default:
			fail_msg("C: event %d of %#x", ev.type, ev.id);
		}
	}
	for (i = 0; i < CONNS; i++)
		assert_int_equal(ended[i], 1);
	for (i = 0; i < SIDRS; i++)
		assert_int_equal(sidr_ended[i], 1);
	assert_int_equal(n_did, (CONNS + 2) / 3);
	for (i = 0; i < n_did; i++)
		assert_int_equal(d_est[i], 1);

	/* release the established ones: each side's events once */
	for (i = 0; i < CONNS; i += 3)
		assert_int_equal(dpv_dev_cm_disconnect(C, cid[i]), 0);
	for (pending = 2 * n_did; pending > 0;) {
		ev = cm_dev_next_of(C, D, &from);
		if (from == D) {
			j = index_of(did, n_did, ev.id);
			assert_true(j >= 0);
			if (ev.type == DPV_CM_EV_DISCONNECTED) {
				assert_int_equal(dpv_dev_cm_disconnect(D, ev.id), 0);
			} else {
				assert_int_equal(ev.type, DPV_CM_EV_TIMEWAIT_EXIT);
				d_gone[j]++;
				pending--;
			}
			continue;
		}
		i = index_of(cid, CONNS, ev.id);
		assert_true(i >= 0 && kind_of(i) == TO_ACCEPT);
		if (ev.type == DPV_CM_EV_DISCONNECTED) {
			c_disc[i]++;
		} else {
			assert_int_equal(ev.type, DPV_CM_EV_TIMEWAIT_EXIT);
			c_gone[i]++;
			pending--;
		}
	}
	for (i = 0; i < n_did; i++)
		assert_int_equal(d_gone[i], 1);
	for (i = 0; i < CONNS; i += 3) {
		assert_int_equal(c_disc[i], 1);
		assert_int_equal(c_gone[i], 1);
	}
	assert_int_equal(dpv_dev_cm_unlisten(D, lid[TO_ACCEPT]), 0);
	assert_int_equal(dpv_dev_cm_unlisten(D, lid[TO_REJECT]), 0);
	assert_int_equal(dpv_dev_cm_unlisten(D, sidr_lid), 0);
	cm_dev_no_event(C, 50);
	cm_dev_no_event(D, 0);
	assert_int_equal(cm_dev_ids(C), 0);
	assert_int_equal(cm_dev_ids(D), 0);
	/* the loss was there */
	assert_int_equal(dpv_dev_faults_stats(C, &fc), 0);
	assert_int_equal(dpv_dev_faults_stats(D, &fd), 0);
	assert_true(fc.tx.dropped + fc.rx.dropped + fd.tx.dropped + fd.rx.dropped > 0);
}

static int devices_up(void **state)
{
	struct dpv_dev_cm_timing lossy = cm_dev_quick;

	(void)state;
	/* Nine sends of a MAD, each lost with 2 % at most. */
	lossy.max_retries = 8;
	return cm_dev_eal_up() == 0 &&
			       cm_dev_pair("cmlossy", "dpv0", IP_C, "loss=0.01,seed=5", "dpv1", IP_D,
					   "loss=0.01,seed=6", &lossy, &C, &D) == 0
		       ? 0
		       : -1;
}


int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_request_ends_once_at_one_percent_loss),
	};

	cm_dev_args_keep(argc, argv);
	return cmocka_run_group_tests_name("cm_dev_lossy", tests, devices_up, cm_dev_down) ? 1 : 0;
}
