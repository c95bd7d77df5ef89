/* SPDX-License-Identifier: BSD-3-Clause */
/* The shared fixture of the device CM tests (cm_dev.h). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <rte_eal.h>

#include "cm_dev.h"
#include "dpv_cm_ip.h"
#include "helpers.h"

const struct dpv_dev_cm_timing cm_dev_quick = {
	.response_timeout = 12,
	.max_retries = 3,
	.packet_life_time = 8,
	.timewait_ns = 20000000,
};

const struct dpv_dev_cm_param cm_dev_param_b = {
	.qpn = 0x000123,
	.psn = 0x456789,
	.responder_resources = 4,
	.initiator_depth = 2,
	.retry_count = 7,
	.rnr_retry_count = 7,
	.private_data = "hello",
	.private_data_len = 5,
};

const struct dpv_dev_cm_param cm_dev_param_a = {
	.qpn = 0x000abc,
	.psn = 0x0fedcb,
	.responder_resources = 2,
	.initiator_depth = 4,
	.rnr_retry_count = 7,
	.private_data = "welcome",
	.private_data_len = 7,
};

static char **eal_argv;
static int eal_argc;

/* The devices cm_dev_pair() opened and nobody closed yet. */
#define OPENED_MAX 16
static struct dpv_dev *opened[OPENED_MAX];

void cm_dev_args_keep(int argc, char **argv)
{
	eal_argc = argc;
	eal_argv = argv;
}

int cm_dev_eal_up(void)
{
	if (rte_eal_init(eal_argc, eal_argv) < 0)
		return -1;
	/* Only this thread drives the devices. */
	return dpv_engine_set_inline_idle_us(0) == 0 ? 0 : -1;
}

int cm_dev_up(void **state)
{
	(void)state;
	return cm_dev_eal_up();
}

static int dev_open(const char *name, uint16_t port, uint32_t ip, const char *faults,
		    struct dpv_dev **dev)
{
	int ret = faults != NULL ? dpv_dev_open_faults(name, port, ip, faults, dev)
				 : dpv_dev_open(name, port, ip, dev);

	for (int i = 0; ret == 0 && i < OPENED_MAX; i++) {
		if (opened[i] == NULL) {
			opened[i] = *dev;
			return 0;
		}
	}
	return ret == 0 ? -1 : ret;
}

void cm_dev_close(struct dpv_dev *dev)
{
	for (int i = 0; i < OPENED_MAX; i++)
		if (opened[i] == dev)
			opened[i] = NULL;
	dpv_dev_close(dev);
}

int cm_dev_down(void **state)
{
	(void)state;
	for (int i = 0; i < OPENED_MAX; i++)
		if (opened[i] != NULL)
			cm_dev_close(opened[i]);
	return rte_eal_cleanup() == 0 ? 0 : -1;
}

int cm_dev_pair(const char *ring, const char *na, uint32_t ip_a, const char *faults_a,
		const char *nb, uint32_t ip_b, const char *faults_b,
		const struct dpv_dev_cm_timing *timing, struct dpv_dev **a, struct dpv_dev **b)
{
	uint16_t pa, pb;

	if (dpv_engine_ring_pair(ring, 0, &pa, &pb) != 0 ||
	    dev_open(na, pa, ip_a, faults_a, a) != 0 || dev_open(nb, pb, ip_b, faults_b, b) != 0)
		return -1;
	return dpv_dev_cm_set_timing(*a, timing) == 0 && dpv_dev_cm_set_timing(*b, timing) == 0
		       ? 0
		       : -1;
}

void cm_dev_drive(void)
{
	dpv_engine_progress();
}

struct dpv_dev_cm_event cm_dev_next(struct dpv_dev *dev)
{
	struct dpv_dev_cm_event ev;
	uint64_t t0 = now_ms();

	while (dpv_dev_cm_get_event(dev, &ev) == EAGAIN) {
		assert_true(now_ms() - t0 < CM_DEV_WAIT_MS);
		cm_dev_drive();
	}
	return ev;
}

struct dpv_dev_cm_event cm_dev_expect(struct dpv_dev *dev, enum dpv_cm_event type, uint32_t id)
{
	struct dpv_dev_cm_event ev = cm_dev_next(dev);

	assert_int_equal(ev.type, type);
	assert_int_equal(ev.id, id);
	return ev;
}

struct dpv_dev_cm_event cm_dev_next_of(struct dpv_dev *x, struct dpv_dev *y,
				       struct dpv_dev **from)
{
	struct dpv_dev_cm_event ev;
	uint64_t t0 = now_ms();

	for (;;) {
		if (dpv_dev_cm_get_event(x, &ev) == 0) {
			*from = x;
			return ev;
		}
		if (dpv_dev_cm_get_event(y, &ev) == 0) {
			*from = y;
			return ev;
		}
		assert_true(now_ms() - t0 < CM_DEV_WAIT_MS);
		cm_dev_drive();
	}
}

void cm_dev_no_event(struct dpv_dev *dev, uint32_t ms)
{
	struct dpv_dev_cm_event ev;
	uint64_t t0 = now_ms();

	while (now_ms() - t0 < ms)
		cm_dev_drive();
	assert_int_equal(dpv_dev_cm_get_event(dev, &ev), EAGAIN);
}

void cm_dev_connected(struct dpv_dev *active, struct dpv_dev *passive, uint32_t passive_ip,
		      uint64_t service_id, uint32_t *active_id, uint32_t *passive_id)
{
	struct dpv_dev_cm_event ev;

	assert_int_equal(dpv_dev_cm_connect(active, passive_ip, service_id, &cm_dev_param_b,
					    active_id),
			 0);
	ev = cm_dev_next(passive);
	assert_int_equal(ev.type, DPV_CM_EV_CONNECT_REQUEST);
	*passive_id = ev.id;
	assert_int_equal(dpv_dev_cm_accept(passive, *passive_id, &cm_dev_param_a), 0);
	cm_dev_expect(active, DPV_CM_EV_CONNECT_RESPONSE, *active_id);
	assert_int_equal(dpv_dev_cm_establish(active, *active_id), 0);
	cm_dev_expect(active, DPV_CM_EV_ESTABLISHED, *active_id);
	cm_dev_expect(passive, DPV_CM_EV_ESTABLISHED, *passive_id);
}

uint64_t cm_dev_tx_gsi(const struct dpv_dev *dev)
{
	return dpv_xport_stats_ref(dev->xport)->tx_gsi;
}

uint32_t cm_dev_ids(struct dpv_dev *dev)
{
	uint32_t n;

	assert_int_equal(dpv_dev_cm_list(dev, NULL, 0, &n), 0);
	return n;
}

struct rte_eth_dev *cm_dev_eth(struct dpv_dev *dev)
{
	char name[RTE_ETH_NAME_MAX_LEN];
	struct dpv_dev_port_info info;
	struct rte_eth_dev *eth;

	dpv_dev_port_info(dev, &info);
	assert_int_equal(rte_eth_dev_get_name_by_port(info.ethdev_port, name), 0);
	eth = rte_eth_dev_allocated(name);
	assert_non_null(eth);
	return eth;
}

uint64_t cm_dev_tcp(uint16_t port)
{
	return dpv_cm_ip_service_id(DPV_CM_PS_TCP, port);
}

uint64_t cm_dev_udp(uint16_t port)
{
	return dpv_cm_ip_service_id(DPV_CM_PS_UDP, port);
}
