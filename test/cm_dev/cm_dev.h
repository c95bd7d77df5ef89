/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the tests of the device's CM (dpv_dev_cm_*()) share: EAL from the command line,
 * devices of ring pairs driven by the test's thread alone, short CM timeouts, and
 * bounded waits for events. Errors of the set-up are returned, the waits assert.
 */
#ifndef CM_DEV_H
#define CM_DEV_H

#include <stdint.h>

#include <rte_ethdev.h>

#include "dpv_engine.h"

/* How long a test waits for one event at most. */
#define CM_DEV_WAIT_MS 3000u

/* 16.8 ms answers, 1 ms one way, three retries, 20 ms of TIMEWAIT. */
extern const struct dpv_dev_cm_timing cm_dev_quick;
/* Each wait of cm_dev_quick for an answer (4.096 us * 2^12 + 2 * 4.096 us * 2^8), in
 * ms, and the sends of a MAD nobody answers. */
#define CM_DEV_QUICK_WAIT_MS ((4096ull * 4096 + 2 * 4096ull * 256) / 1000000)
#define CM_DEV_QUICK_SENDS (1u + cm_dev_quick.max_retries)

/* A REQ's QP from B's side, a REP's from A's: distinct values in every field. */
extern const struct dpv_dev_cm_param cm_dev_param_b;
extern const struct dpv_dev_cm_param cm_dev_param_a;

/* Keep the command line (main()), then rte_eal_init() with it and inline progress by
 * this thread only (group set-up). 0, or -1. */
void cm_dev_args_keep(int argc, char **argv);
int cm_dev_eal_up(void);
/* cm_dev_eal_up() as a group set-up. */
int cm_dev_up(void **state);

/* Devices @p na (@p ip_a) and @p nb (@p ip_b) on the ends of ring pair @p ring, with
 * @p timing; @p faults_a / @p faults_b a faults port's parameters or NULL. 0, or -1. */
int cm_dev_pair(const char *ring, const char *na, uint32_t ip_a, const char *faults_a,
		const char *nb, uint32_t ip_b, const char *faults_b,
		const struct dpv_dev_cm_timing *timing, struct dpv_dev **a, struct dpv_dev **b);

/* Close a device of cm_dev_pair() before the group's end. */
void cm_dev_close(struct dpv_dev *dev);

/* Group teardown: close the devices of cm_dev_pair() still open, then EAL. */
int cm_dev_down(void **state);

/* One round of every device's progress. */
void cm_dev_drive(void);

/* The next event of @p dev, driving every device while none comes. */
struct dpv_dev_cm_event cm_dev_next(struct dpv_dev *dev);

/* The next event of @p dev is @p type, of connection @p id. */
struct dpv_dev_cm_event cm_dev_expect(struct dpv_dev *dev, enum dpv_cm_event type, uint32_t id);

/* The next event of @p x or @p y, and which had it. */
struct dpv_dev_cm_event cm_dev_next_of(struct dpv_dev *x, struct dpv_dev *y,
				       struct dpv_dev **from);

/* A connection from @p active to the listener of @p service_id on @p passive (at
 * @p passive_ip), established both ways: the REQ with cm_dev_param_b, the REP with
 * cm_dev_param_a; its IDs on each side. Asserts every step. */
void cm_dev_connected(struct dpv_dev *active, struct dpv_dev *passive, uint32_t passive_ip,
		      uint64_t service_id, uint32_t *active_id, uint32_t *passive_id);

/* No event on @p dev while the devices run @p ms more. */
void cm_dev_no_event(struct dpv_dev *dev, uint32_t ms);

/* MADs the device has sent from QP 1. */
uint64_t cm_dev_tx_gsi(const struct dpv_dev *dev);

/* CM ids the device holds (dpv_dev_cm_list()). */
uint32_t cm_dev_ids(struct dpv_dev *dev);

/* The two calls DPDK exports for its drivers (ethdev_driver.h, which Debian does not
 * install): a port's device by name, and an event raised on it, as a driver raises
 * RTE_ETH_EVENT_INTR_RMV for a NIC unplugged. */
struct rte_eth_dev;
struct rte_eth_dev *rte_eth_dev_allocated(const char *name);
int rte_eth_dev_callback_process(struct rte_eth_dev *dev, enum rte_eth_event_type event,
				 void *ret_param);

/* The ethdev of @p dev's port (asserts). */
struct rte_eth_dev *cm_dev_eth(struct dpv_dev *dev);

/* The RDMA_PS_TCP and RDMA_PS_UDP service IDs of @p port. */
uint64_t cm_dev_tcp(uint16_t port);
uint64_t cm_dev_udp(uint16_t port);

#endif /* CM_DEV_H */
