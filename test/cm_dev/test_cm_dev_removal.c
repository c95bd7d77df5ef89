/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A device whose port is removed: DPDK's RTE_ETH_EVENT_INTR_RMV on its ethdev port,
 * raised here as a driver raises it for a NIC unplugged (rte_eth_dev_callback_process(),
 * which DPDK exports to its drivers). Its CM goes with the port, as the kernel's RDMA
 * CM loses an unregistered device: one DEVICE_REMOVAL event (id 0) and no other, not
 * even for the resolution under way; no id left; no MAD sent from then on, and none
 * answered, so the peer's DREQ times out into DISCONNECTED; every call that would
 * start something ENODEV; a second removal event tells nothing new.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_ip.h>

#include "cm_dev.h"
#include "helpers.h"

#define IP_A RTE_IPV4(127, 0, 27, 1)
#define IP_B RTE_IPV4(127, 0, 27, 2)
#define IP_NOBODY RTE_IPV4(127, 0, 27, 77)


static void remove_port(struct dpv_dev *dev)
{
	(void)rte_eth_dev_callback_process(cm_dev_eth(dev), RTE_ETH_EVENT_INTR_RMV, NULL);
}

static void removed_with_a_connection(void **state)
{
	struct dpv_dev *a, *b;
	uint32_t lid, aid, bid, rid, id;
	uint64_t a0, t0;

	(void)state;
	assert_int_equal(cm_dev_pair("cmrmv0", "dpv_a", IP_A, NULL, "dpv_b", IP_B, NULL,
				     &cm_dev_quick, &a, &b),
			 0);
	assert_int_equal(dpv_dev_cm_listen(a, cm_dev_tcp(7500), &lid), 0);
	cm_dev_connected(b, a, IP_A, cm_dev_tcp(7500), &bid, &aid);
	assert_int_equal(dpv_dev_cm_resolve(a, IP_NOBODY, 100, &rid), 0);
	assert_int_equal(cm_dev_ids(a), 3); /* the listener, the connection, the resolution */

	remove_port(a);
	a0 = cm_dev_tx_gsi(a);
	cm_dev_expect(a, DPV_CM_EV_DEVICE_REMOVAL, 0);
	/* Not even the resolution's ADDR_ERROR, past its timeout. */
	cm_dev_no_event(a, 200);
	assert_int_equal(cm_dev_ids(a), 0);
	assert_int_equal(dpv_dev_cm_listen(a, cm_dev_tcp(7501), &id), ENODEV);
	assert_int_equal(dpv_dev_cm_connect(a, IP_B, cm_dev_tcp(7501), &cm_dev_param_a, &id),
			 ENODEV);
	assert_int_equal(dpv_dev_cm_sidr_request(a, IP_B, cm_dev_udp(7501), NULL, 0, &id),
			 ENODEV);
	assert_int_equal(dpv_dev_cm_resolve(a, IP_B, 100, &id), ENODEV);
	assert_int_equal(dpv_dev_cm_resolve_cancel(a, rid), ENOENT);
	assert_int_equal(dpv_dev_cm_disconnect(a, aid), ENOENT);

	/* The peer's DREQ finds nobody: DISCONNECTED after its retries. */
	t0 = now_ms();
	assert_int_equal(dpv_dev_cm_disconnect(b, bid), 0);
	cm_dev_expect(b, DPV_CM_EV_DISCONNECTED, bid);
	assert_true(now_ms() - t0 >= CM_DEV_QUICK_SENDS * CM_DEV_QUICK_WAIT_MS);
	cm_dev_expect(b, DPV_CM_EV_TIMEWAIT_EXIT, bid);
	assert_int_equal(cm_dev_tx_gsi(a), a0);

	remove_port(a);
	cm_dev_no_event(a, 30);
	cm_dev_close(a);
	cm_dev_close(b);
}

/* A resolution answered by the peer's port, and one nobody answers, on a device whose
 * port stays: ADDR_RESOLVED with the address, ADDR_ERROR no sooner than the timeout,
 * a cancelled one no event; the device's room for resolutions given back each time. */
static void resolutions(void **state)
{
	struct dpv_dev *a, *b;
	struct dpv_dev_cm_event ev;
	uint32_t id, gone;
	uint64_t t0;

	(void)state;
	assert_int_equal(cm_dev_pair("cmrmv1", "dpv_a", IP_A, NULL, "dpv_b", IP_B, NULL,
				     &cm_dev_quick, &a, &b),
			 0);
	assert_int_equal(dpv_dev_cm_resolve(a, 0, 100, &id), EINVAL);
	assert_int_equal(dpv_dev_cm_resolve(a, IP_B, 1000, &id), 0);
	ev = cm_dev_expect(a, DPV_CM_EV_ADDR_RESOLVED, id);
	assert_int_equal(ev.peer_ip, IP_B);
	/* The port's own address: the event at once, within the call. */
	assert_int_equal(dpv_dev_cm_resolve(a, IP_A, 0, &id), 0);
	ev = cm_dev_expect(a, DPV_CM_EV_ADDR_RESOLVED, id);
	t0 = now_ms();
	assert_int_equal(dpv_dev_cm_resolve(a, IP_NOBODY, 150, &id), 0);
	ev = cm_dev_expect(a, DPV_CM_EV_ADDR_ERROR, id);
	assert_true(now_ms() - t0 >= 150);
	assert_int_equal(ev.peer_ip, IP_NOBODY);
	for (uint32_t i = 0; i < 2 * DPV_DEV_CM_RESOLVES; i++) {
		assert_int_equal(dpv_dev_cm_resolve(a, IP_NOBODY, 50, &gone), 0);
		assert_int_equal(dpv_dev_cm_resolve_cancel(a, gone), 0);
	}
	assert_int_equal(dpv_dev_cm_resolve_cancel(a, gone), ENOENT);
	cm_dev_no_event(a, 100);
	for (uint32_t i = 0; i < DPV_DEV_CM_RESOLVES; i++)
		assert_int_equal(dpv_dev_cm_resolve(a, IP_NOBODY, 10000, &gone), 0);
	assert_int_equal(dpv_dev_cm_resolve(a, IP_NOBODY, 10000, &id), ENOSPC);
	cm_dev_close(a);
	cm_dev_close(b);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(resolutions),
		cmocka_unit_test(removed_with_a_connection),
	};

	cm_dev_args_keep(argc, argv);
	return cmocka_run_group_tests_name("cm_dev_removal", tests, cm_dev_up, cm_dev_down) ? 1 : 0;
}
