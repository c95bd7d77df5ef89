/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A port removed while its device closes: DPDK tells RTE_ETH_EVENT_INTR_RMV on a thread
 * of its own (EAL's interrupt thread for a NIC unplugged) just as dpv_dev_close() takes
 * the CM's removal callback off the port. The close waits for a callback under way
 * (rte_eth_dev_callback_unregister() answers EAGAIN until it has returned), and the
 * callback takes the device: the close must not hold the device while it waits.
 *
 * The removal is raised from inside the close, at its unregister of the callback
 * (the linker's --wrap of rte_eth_dev_callback_unregister()), and the unregister goes
 * on once the callback has run or waits for the device. Both threads end, within
 * CM_DEV_WAIT_MS: a close that held the device would wait for the callback forever.
 */
#define _GNU_SOURCE /* pthread_timedjoin_np() */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>
#include <rte_ethdev.h>
#include <rte_ip.h>

#include "cm_dev.h"
#include "helpers.h"

#define IP_A RTE_IPV4(127, 0, 28, 1)
#define IP_B RTE_IPV4(127, 0, 28, 2)
#define IP_NOBODY RTE_IPV4(127, 0, 28, 77)

/* The removal the next unregister of @c rmv_dev's callback raises. */
static struct rte_eth_dev *rmv_eth;
static struct dpv_dev *rmv_dev;
static bool rmv_armed;
static bool rmv_raised;
static bool rmv_done;
static pthread_t rmv_thread;

static void *remover(void *arg)
{
	(void)arg;
	(void)rte_eth_dev_callback_process(rmv_eth, RTE_ETH_EVENT_INTR_RMV, NULL);
	__atomic_store_n(&rmv_done, true, __ATOMIC_RELEASE);
	return NULL;
}

int __real_rte_eth_dev_callback_unregister(uint16_t port_id, enum rte_eth_event_type event,
					   rte_eth_dev_cb_fn cb_fn, void *cb_arg);
int __wrap_rte_eth_dev_callback_unregister(uint16_t port_id, enum rte_eth_event_type event,
					   rte_eth_dev_cb_fn cb_fn, void *cb_arg);

int __wrap_rte_eth_dev_callback_unregister(uint16_t port_id, enum rte_eth_event_type event,
					   rte_eth_dev_cb_fn cb_fn, void *cb_arg)
{
	if (event == RTE_ETH_EVENT_INTR_RMV && cb_arg == rmv_dev &&
	    __atomic_exchange_n(&rmv_armed, false, __ATOMIC_ACQ_REL) &&
	    pthread_create(&rmv_thread, NULL, remover, NULL) == 0) {
		__atomic_store_n(&rmv_raised, true, __ATOMIC_RELEASE);
		/* Until the callback has run, or waits for the device (dpv_dev_own()). */
		while (!__atomic_load_n(&rmv_done, __ATOMIC_ACQUIRE) &&
		       __atomic_load_n(&rmv_dev->control_waiting, __ATOMIC_ACQUIRE) == 0)
			sched_yield();
	}
	return __real_rte_eth_dev_callback_unregister(port_id, event, cb_fn, cb_arg);
}

static void *closer(void *arg)
{
	cm_dev_close(arg);
	return NULL;
}

static struct timespec wait_until(void)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	t.tv_sec += CM_DEV_WAIT_MS / 1000;
	return t;
}

static void close_removing(void **state)
{
	struct dpv_dev *a, *b;
	struct timespec until;
	uint32_t lid, rid;
	pthread_t c;

	(void)state;
	assert_int_equal(cm_dev_pair("cmcrm0", "dpv_a", IP_A, NULL, "dpv_b", IP_B, NULL,
				     &cm_dev_quick, &a, &b),
			 0);
	/* Something for the removal to take: a listener and a resolution. */
	assert_int_equal(dpv_dev_cm_listen(a, cm_dev_tcp(7700), &lid), 0);
	assert_int_equal(dpv_dev_cm_resolve(a, IP_NOBODY, 10000, &rid), 0);
	rmv_eth = cm_dev_eth(a);
	rmv_dev = a;
	__atomic_store_n(&rmv_armed, true, __ATOMIC_RELEASE);
	assert_int_equal(pthread_create(&c, NULL, closer, a), 0);
	until = wait_until();
	assert_int_equal(pthread_timedjoin_np(c, NULL, &until), 0);
	assert_true(__atomic_load_n(&rmv_raised, __ATOMIC_ACQUIRE));
	until = wait_until();
	assert_int_equal(pthread_timedjoin_np(rmv_thread, NULL, &until), 0);
	cm_dev_close(b);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(close_removing),
	};

	cm_dev_args_keep(argc, argv);
	return cmocka_run_group_tests_name("cm_dev_close_removing", tests, cm_dev_up,
					   cm_dev_down)
		       ? 1
		       : 0;
}
