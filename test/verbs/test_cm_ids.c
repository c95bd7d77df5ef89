/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpv_verbs_query_cm(): the CM ids of a device as a verbs program (the console, the
 * telemetry) sees them, on dpv0 ("A") and dpv1 ("B") of one ring pair. The ids are
 * made with the device's CM calls (dpv_engine.h), which no verbs call makes yet: a
 * listener, a connection on each side in the middle of its handshake, a SIDR request;
 * every field exactly, the count beyond the room given, the errors.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dpv_cm_ip.h"
#include "dpv_verbs.h"
#include "verbs_test.h"
/* The engine device behind a context, whose CM makes the ids. */
#include "verbs_priv.h"

static struct dpv_dev *dev_of(struct side *s)
{
	return to_ctx(s->ctx)->dev;
}

/* The next CM event of @p s, driving both devices while none comes. */
static struct dpv_dev_cm_event next_event(struct side *s)
{
	struct dpv_dev_cm_event ev;
	struct ibv_wc wc;
	uint64_t t0 = now_ms();

	while (dpv_dev_cm_get_event(dev_of(s), &ev) == EAGAIN) {
		assert_true(now_ms() - t0 < WAIT_MS);
		(void)ibv_poll_cq(A.idle_cq, 1, &wc);
		(void)ibv_poll_cq(B.idle_cq, 1, &wc);
	}
	return ev;
}

static void ids_in_the_middle_of_a_handshake(void **state)
{
	const struct dpv_dev_cm_param p = {.qpn = 0x4242, .psn = 1, .retry_count = 7};
	const uint64_t sid = dpv_cm_ip_service_id(DPV_CM_PS_TCP, 7500);
	struct dpv_verbs_cm_id ids[4];
	struct dpv_dev_cm_event ev;
	uint32_t lid, bid, aid;

	(void)state;
	assert_int_equal(dpv_verbs_query_cm(A.ctx, NULL, 0), 0);
	assert_int_equal(dpv_dev_cm_listen(dev_of(&A), sid, &lid), 0);
	assert_int_equal(dpv_dev_cm_connect(dev_of(&B), A.ipv4, sid, &p, &bid), 0);
	ev = next_event(&A);
	assert_int_equal(ev.type, DPV_CM_EV_CONNECT_REQUEST);
	aid = ev.id;

	memset(ids, 0xee, sizeof(ids));
	assert_int_equal(dpv_verbs_query_cm(A.ctx, ids, 4), 2);
	/* the listener took the first slot, its connection the next */
	assert_int_equal(ids[0].id, lid);
	assert_string_equal(ids[0].state, "LISTEN");
	assert_int_equal(ids[0].ud, 0);
	assert_int_equal(ids[0].peer_ipv4, 0);
	assert_int_equal(ids[0].listen_id, 0);
	assert_true(ids[0].service_id == sid);
	assert_int_equal(ids[0].remote_qpn, 0);
	assert_int_equal(ids[1].id, aid);
	assert_string_equal(ids[1].state, "REQ_RCVD");
	assert_int_equal(ids[1].remote_id, bid);
	assert_int_equal(ids[1].peer_ipv4, B.ipv4);
	assert_int_equal(ids[1].listen_id, lid);
	assert_true(ids[1].service_id == sid);
	assert_int_equal(ids[1].local_qpn, 0);
	assert_int_equal(ids[1].remote_qpn, 0x4242);
	assert_int_equal(ids[1].retries, 0);
	assert_int_equal(ids[2].id, 0xeeeeeeee); /* nothing written beyond the ids */

	assert_int_equal(dpv_verbs_query_cm(B.ctx, ids, 4), 1);
	assert_int_equal(ids[0].id, bid);
	assert_string_equal(ids[0].state, "REQ_SENT");
	assert_int_equal(ids[0].remote_id, 0);
	assert_int_equal(ids[0].peer_ipv4, A.ipv4);
	assert_int_equal(ids[0].local_qpn, 0x4242);
	assert_true(ids[0].service_id == sid);

	/* less room than ids: the count, and the first ones */
	memset(ids, 0xee, sizeof(ids));
	assert_int_equal(dpv_verbs_query_cm(A.ctx, ids, 1), 2);
	assert_int_equal(ids[0].id, lid);
	assert_int_equal(ids[1].id, 0xeeeeeeee);

	assert_int_equal(dpv_dev_cm_reject(dev_of(&A), aid, NULL, 0), 0);
	ev = next_event(&B);
	assert_int_equal(ev.type, DPV_CM_EV_REJECTED);
	assert_int_equal(dpv_verbs_query_cm(B.ctx, NULL, 0), 0);
	assert_int_equal(dpv_dev_cm_unlisten(dev_of(&A), lid), 0);
	assert_int_equal(dpv_verbs_query_cm(A.ctx, NULL, 0), 0);
}

static void a_sidr_request_is_a_ud_id(void **state)
{
	const uint64_t sid = dpv_cm_ip_service_id(DPV_CM_PS_UDP, 7501);
	struct dpv_verbs_cm_id ids[2];
	struct dpv_dev_cm_event ev;
	uint32_t lid, bid;

	(void)state;
	assert_int_equal(dpv_dev_cm_listen(dev_of(&A), sid, &lid), 0);
	assert_int_equal(dpv_dev_cm_sidr_request(dev_of(&B), A.ipv4, sid, NULL, 0, &bid), 0);
	ev = next_event(&A);
	assert_int_equal(ev.type, DPV_CM_EV_CONNECT_REQUEST);
	assert_int_equal(dpv_verbs_query_cm(B.ctx, ids, 2), 1);
	assert_int_equal(ids[0].id, bid);
	assert_string_equal(ids[0].state, "SIDR_REQ_SENT");
	assert_int_equal(ids[0].ud, 1);
	assert_int_equal(dpv_verbs_query_cm(A.ctx, ids, 2), 2);
	assert_string_equal(ids[1].state, "SIDR_REQ_RCVD");
	assert_int_equal(ids[1].ud, 1);
	assert_int_equal(ids[1].remote_id, bid);
	assert_int_equal(ids[1].peer_ipv4, B.ipv4);
	assert_int_equal(dpv_dev_cm_sidr_accept(dev_of(&A), ev.id, 0x99, 0x1234, NULL, 0), 0);
	ev = next_event(&B);
	assert_int_equal(ev.type, DPV_CM_EV_ESTABLISHED);
	assert_int_equal(dpv_verbs_query_cm(B.ctx, NULL, 0), 0);
	assert_int_equal(dpv_verbs_query_cm(A.ctx, NULL, 0), 1);
	assert_int_equal(dpv_dev_cm_unlisten(dev_of(&A), lid), 0);
}

static void errors(void **state)
{
	struct dpv_verbs_cm_id id;

	(void)state;
	assert_int_equal(dpv_verbs_query_cm(NULL, &id, 1), -EINVAL);
	assert_int_equal(dpv_verbs_query_cm(A.ctx, NULL, 1), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(ids_in_the_middle_of_a_handshake),
		cmocka_unit_test(a_sidr_request_is_a_ud_id),
		cmocka_unit_test(errors),
	};
	int failed = 1;

	sides_env_defaults("0");
	if (sides_open(getenv("DPV_PORT_IPV4")))
		failed = cmocka_run_group_tests_name("cm_ids", tests, NULL, NULL);
	sides_close();
	return failed ? 1 : 0;
}
