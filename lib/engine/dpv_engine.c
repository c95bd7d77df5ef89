/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_pause.h>
#include <rte_service_component.h>

#include "dpv_engine.h"
#include "dpv_engine_cm.h"
#include "dpv_faults.h"

/* Mbufs per port pool: rx descriptors, tx in flight, ARP holds, and headroom for the
 * frames the transport keeps (none on a lossless link). */
#define PORT_POOL_SIZE 8191u

static struct dpv_dev *devs[DPV_MAX_DEVS];
static unsigned int n_devs;
static pthread_mutex_t devs_lock = PTHREAD_MUTEX_INITIALIZER;

/* What a dedicated lcore runs: every device handed to it, so one lcore can be the
 * firmware of all the ports of a process (DPV_PROGRESS=lcore:N opens each on N). */
struct lcore_loop {
	struct dpv_dev *devs[DPV_MAX_DEVS];
	uint32_t n;      /* devices in devs; the loop returns when it reads 0 (atomic) */
	uint64_t passes; /* passes the loop made over devs (atomic) */
};

static struct lcore_loop lcore_loops[RTE_MAX_LCORE];
static pthread_mutex_t lcore_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * The helper thread, one per process, for every inline device. It drives a device
 * whose app_visits it has seen unchanged for helper_idle_cycles: the application
 * computes, sleeps, or is the passive side of one-sided transfers, and the device must
 * still ACK, answer READs and run its timers as a NIC would. A device whose
 * application it finds there look after look is looked at less and less often (up to
 * HELPER_ACTIVE_GAP_MAX_MS apart), so that a program that polls all the time has
 * next to no helper on any core: the helper runs on EAL's control-thread cores, which
 * on a host whose cores all poll are another program's polling cores. Arming a CQ
 * (dpv_engine_helper_kick()) wakes it and makes it drive every inline device on every
 * pass until their applications come back, so that events come while the application
 * sleeps in ibv_get_cq_event() or epoll_wait().
 * helper_lock serialises starting and stopping it; the thread itself reads only
 * atomics.
 */
static pthread_mutex_t helper_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned int helper_refs;      /* completion channels (atomic for the thread) */
static uint32_t helper_idle_us = DPV_INLINE_IDLE_US_DEFAULT;
static uint64_t helper_idle_cycles;   /* helper_idle_us in TSC cycles (atomic) */
static bool helper_running;
static bool helper_exited;            /* past exit(): never started again */
static bool helper_exit_hook;
static pthread_t helper_thread;
static bool helper_stop;              /* atomic */
static uint32_t helper_pass;          /* odd while the thread walks devs (atomic) */
/* A futex word: 1 after dpv_engine_helper_kick(), 0 once the helper has taken it. */
static uint32_t helper_kick;
static uint32_t helper_waiting;       /* the thread sleeps on helper_kick (atomic) */

static void helper_reconcile(void);

int dpv_dev_open(const char *name, uint16_t ethdev_port, uint32_t ipv4, struct dpv_dev **out)
{
	return dpv_dev_open_faults(name, ethdev_port, ipv4, NULL, out);
}

int dpv_dev_open_faults(const char *name, uint16_t ethdev_port, uint32_t ipv4,
			const char *faults, struct dpv_dev **out)
{
	char args[DPV_FAULTS_SPEC_MAX + 16];
	struct dpv_dev *dev;
	uint32_t speed;
	int ret;

	if (n_devs >= DPV_MAX_DEVS)
		return ENOSPC;
	dev = rte_zmalloc("dpv_dev", sizeof(*dev), RTE_CACHE_LINE_SIZE);
	if (dev == NULL)
		return ENOMEM;
	snprintf(dev->name, sizeof(dev->name), "%s", name);
	snprintf(dev->port.name, sizeof(dev->port.name), "%s", name);
	dev->port.ipv4 = ipv4;
	if (faults == NULL || faults[0] == '\0') {
		snprintf(args, sizeof(args), "%u", ethdev_port);
		ret = dpv_port_open(&dev->port, "ethdev", args, PORT_POOL_SIZE);
	} else if (strlen(faults) >= DPV_FAULTS_SPEC_MAX) {
		ret = EINVAL;
	} else {
		/* The faults driver opens the ethdev port under it, as "ethdev" would. */
		snprintf(args, sizeof(args), "%s@ethdev:%u", faults, ethdev_port);
		ret = dpv_port_open(&dev->port, "faults", args, PORT_POOL_SIZE);
	}
	if (ret != 0) {
		rte_free(dev);
		return ret;
	}
	dev->port.ops->link(&dev->port, &dev->link_up, &speed);
	ret = dpv_mr_table_create(dev->port.socket, &dev->mrs);
	if (ret != 0)
		goto fail;
	ret = dpv_xport_create(&dev->port, dev->mrs, &dev->xport);
	if (ret != 0)
		goto fail;
	dev->tm_count = dpv_xport_tm_count(dev->xport);
	ret = dpv_dev_cm_open(dev);
	if (ret != 0) {
		dpv_xport_destroy(dev->xport);
		goto fail;
	}
	pthread_mutex_lock(&devs_lock);
	devs[n_devs] = dev;
	/* Published after the device is whole: dpv_engine_progress() reads without lock. */
	__atomic_store_n(&n_devs, n_devs + 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&devs_lock);
	*out = dev;
	return 0;
fail:
	dpv_mr_table_destroy(dev->mrs);
	dpv_port_close(&dev->port);
	rte_free(dev);
	return ret;
}

/* Take a device off its lcore's loop; when the loop may no longer touch it, return. */
static void lcore_loop_remove(struct dpv_dev *dev)
{
	struct lcore_loop *l = &lcore_loops[dev->lcore];
	uint32_t i, n;
	uint64_t pass;

	pthread_mutex_lock(&lcore_lock);
	n = l->n;
	for (i = 0; i < n && l->devs[i] != dev; i++)
		;
	if (i < n) {
		/* The loop reads the array while it changes: every slot is read whole. */
		__atomic_store_n(&l->devs[i], l->devs[n - 1], __ATOMIC_RELAXED);
		__atomic_store_n(&l->n, n - 1, __ATOMIC_SEQ_CST);
		if (n == 1) {
			rte_eal_wait_lcore(dev->lcore);
		} else {
			/* The pass under way may still hold the old array; the one after it
			 * started after the store above. */
			pass = __atomic_load_n(&l->passes, __ATOMIC_SEQ_CST);
			while (__atomic_load_n(&l->passes, __ATOMIC_SEQ_CST) < pass + 2)
				sched_yield();
		}
	}
	pthread_mutex_unlock(&lcore_lock);
}

static void dev_stop_progress(struct dpv_dev *dev)
{
	if (dev->mode == DPV_PROGRESS_LCORE) {
		lcore_loop_remove(dev);
	} else if (dev->mode == DPV_PROGRESS_SERVICE) {
		rte_service_component_runstate_set(dev->service_id, 0);
		while (rte_service_may_be_active(dev->service_id) == 1)
			rte_pause();
		rte_service_component_unregister(dev->service_id);
	}
	dev->mode = DPV_PROGRESS_INLINE;
}

uint64_t dpv_dev_linger_until(struct dpv_dev *dev, const uint32_t *skip_ips,
			      unsigned int n_skip)
{
	uint64_t until;

	if (!__atomic_load_n(&dev->link_up, __ATOMIC_RELAXED))
		return 0;
	dpv_dev_own(dev);
	until = dpv_xport_linger_until(dev->xport, skip_ips, n_skip);
	dpv_dev_disown(dev);
	return until;
}

void dpv_dev_linger(struct dpv_dev *dev, const uint32_t *skip_ips, unsigned int n_skip,
		    uint32_t max_ms)
{
	const uint64_t start = rte_get_tsc_cycles(),
		       at_most = rte_get_tsc_hz() / 1000 * max_ms;
	uint64_t until = dpv_dev_linger_until(dev, skip_ips, n_skip), now = start;

	while (until != 0 && (int64_t)(until - now) > 0 && now - start < at_most) {
		struct timespec ts = {0, 100000};

		if (dev->mode == DPV_PROGRESS_INLINE && dpv_dev_try_own(dev)) {
			dpv_dev_poll(dev);
			dpv_dev_release(dev);
		}
		nanosleep(&ts, NULL);
		now = rte_get_tsc_cycles();
		until = dpv_dev_linger_until(dev, skip_ips, n_skip);
	}
}

void dpv_dev_close(struct dpv_dev *dev)
{
	uint32_t pass, linger_ms;
	unsigned int i;

	if (dev == NULL)
		return;
	/* Before the device is owned for good below: a removal callback under way takes
	 * it, and is waited for. A removal told from now on is not heard: the CM goes with
	 * the device anyway. */
	dpv_dev_cm_unhook(dev);
	dpv_dev_own(dev);
	linger_ms = dpv_xport_linger_ms(dev->xport);
	dpv_dev_disown(dev);
	dpv_dev_linger(dev, NULL, 0, 2 * linger_ms);
	dev_stop_progress(dev);
	pthread_mutex_lock(&devs_lock);
	for (i = 0; i < n_devs && devs[i] != dev; i++)
		;
	if (i < n_devs) {
		/* Keep the array dense; progress() may be reading: own the device first. */
		dpv_dev_own(dev);
		memmove(&devs[i], &devs[i + 1], sizeof(devs[0]) * (n_devs - i - 1));
		__atomic_store_n(&n_devs, n_devs - 1, __ATOMIC_SEQ_CST);
		/* A helper pass that began before the store may still hold the pointer (it
		 * finds the device owned, but it reads it): wait that pass out. One that
		 * begins after it reads the shorter array. */
		pass = __atomic_load_n(&helper_pass, __ATOMIC_SEQ_CST);
		if (pass & 1)
			while (__atomic_load_n(&helper_pass, __ATOMIC_SEQ_CST) == pass)
				sched_yield();
	}
	pthread_mutex_unlock(&devs_lock);
	helper_reconcile();
	dpv_dev_cm_close(dev);
	dpv_xport_destroy(dev->xport);
	dpv_port_close(&dev->port);
	dpv_mr_table_destroy(dev->mrs);
	rte_free(dev);
}

void dpv_dev_own(struct dpv_dev *dev)
{
	__atomic_add_fetch(&dev->control_waiting, 1, __ATOMIC_ACQ_REL);
	while (!dpv_dev_try_own(dev))
		sched_yield();
	__atomic_sub_fetch(&dev->control_waiting, 1, __ATOMIC_ACQ_REL);
}

void dpv_dev_disown(struct dpv_dev *dev)
{
	dpv_dev_release(dev);
}

/* A port state change is an unaffiliated asynchronous event (IBTA 11.6.3.3): told
 * through link_event when the link is seen to have changed. */
static void link_check(struct dpv_dev *dev)
{
	uint32_t speed;
	bool up;

	dpv_port_link(&dev->port, &up, &speed);
	if (up == dev->link_up)
		return;
	dev->link_up = up;
	if (dev->link_event != NULL)
		dev->link_event(dev, up, dev->link_arg);
}

/* The timers of dpv_dev_poll(), once in many polls: out of line. */
static __attribute__((noinline)) void dev_tick(struct dpv_dev *dev)
{
	uint64_t now = rte_get_tsc_cycles();

	dev->tick_wait = 0;
	dpv_xport_tick(dev->xport, now);
	dpv_port_arp_tick(&dev->port, now);
	/* The CM's timers at their earliest deadline only: nothing runs for
	 * connections that wait for nothing. */
	if (now >= dev->cm_next_tsc)
		dpv_dev_cm_tick(dev, now);
	if (now >= dev->link_next_tsc) {
		link_check(dev);
		dev->link_next_tsc = now + rte_get_tsc_hz() / 1000 * DPV_LINK_CHECK_MS;
	}
}

uint32_t dpv_dev_poll(struct dpv_dev *dev)
{
	struct rte_mbuf *pkts[DPV_RX_BURST];
	uint32_t work;
	uint16_t n;

	/* Tag ops first: an ADD posted before a message arrived is in the list when the
	 * message is matched, rather than one iteration later. */
	work = __atomic_load_n(dev->tm_count, __ATOMIC_ACQUIRE) != 0 ?
		       dpv_xport_tm_ops(dev->xport, 64) : 0;
	n = dpv_port_rx(&dev->port, pkts, DPV_RX_BURST);
	if (n) {
		dpv_xport_rx(dev->xport, pkts, n);
		work += n;
	}
	work += dpv_xport_tx(dev->xport, 64);
	/* Timers every 64 polls, once the port has no more frames waiting: an ACK still
	 * in the receive queue is not a peer's silence, and a device that was not polled
	 * for a while would otherwise time out what is acknowledged in its queue. A
	 * receive queue that never empties delays them 1024 polls at the most. */
	if ((++dev->tick_wait >= 64 && n < DPV_RX_BURST) || dev->tick_wait >= 1024)
		dev_tick(dev);
	dev->stats.polls++;
	if (work)
		dev->stats.busy_polls++;
	return work;
}

/* One inline visit of @p dev: try-lock it and poll it when got. @return work done */
static inline uint32_t progress_one(struct dpv_dev *dev)
{
	uint32_t work;
	bool owned;

	if (dev->mode != DPV_PROGRESS_INLINE ||
	    __atomic_load_n(&dev->control_waiting, __ATOMIC_RELAXED) != 0)
		return 0;
	owned = dpv_dev_try_own(dev);
	/* Counted also when the device is owned: if the helper holds it, the change
	 * makes it let go, so the application's next call gets it. A load and a
	 * store (not a locked add: racing threads may lose a count, but the value
	 * changes all the same) on the line the try-lock has just written; no clock
	 * read. */
	__atomic_store_n(&dev->app_visits,
			 __atomic_load_n(&dev->app_visits, __ATOMIC_RELAXED) + 1,
			 __ATOMIC_RELAXED);
	if (!owned)
		return 0;
	work = dpv_dev_poll(dev);
	dpv_dev_release(dev);
	return work;
}

uint32_t dpv_engine_progress(void)
{
	return dpv_engine_progress_dev(NULL);
}

uint32_t dpv_engine_progress_dev(struct dpv_dev *first)
{
	unsigned int n = __atomic_load_n(&n_devs, __ATOMIC_ACQUIRE);
	uint32_t work = 0;

	/* The device whose CQ or QP the caller uses first: what it waits for is there
	 * one device's poll sooner. The others are driven all the same, right after. */
	if (first != NULL)
		work = progress_one(first);
	for (unsigned int i = 0; i < n; i++)
		if (devs[i] != first)
			work += progress_one(devs[i]);
	return work;
}

/* The loop of a dedicated lcore or service: poll while holding the flag, and let a
 * waiting control thread in between iterations. */
static int dev_loop_once(struct dpv_dev *dev)
{
	if (__atomic_load_n(&dev->control_waiting, __ATOMIC_RELAXED) != 0 || !dpv_dev_try_own(dev))
		return -EAGAIN;
	dpv_dev_poll(dev);
	dpv_dev_release(dev);
	return 0;
}

static int lcore_main(void *arg)
{
	struct lcore_loop *l = arg;
	struct dpv_dev *dev;
	uint32_t i, n;
	bool polled;

	while ((n = __atomic_load_n(&l->n, __ATOMIC_SEQ_CST)) > 0) {
		polled = false;
		for (i = 0; i < n; i++) {
			dev = __atomic_load_n(&l->devs[i], __ATOMIC_RELAXED);
			polled |= dev_loop_once(dev) == 0;
		}
		__atomic_add_fetch(&l->passes, 1, __ATOMIC_SEQ_CST);
		if (!polled)
			rte_pause();
	}
	return 0;
}

int dpv_dev_start_lcore(struct dpv_dev *dev, unsigned int lcore)
{
	struct lcore_loop *l;
	int ret = 0;

	if (dev->mode != DPV_PROGRESS_INLINE)
		return EBUSY;
	if (lcore >= RTE_MAX_LCORE || !rte_lcore_is_enabled(lcore) ||
	    lcore == rte_get_main_lcore())
		return EINVAL;
	l = &lcore_loops[lcore];
	pthread_mutex_lock(&lcore_lock);
	/* A loop already there takes the device; else the lcore must be free for one. */
	if (l->n == 0 && rte_eal_get_lcore_state(lcore) != WAIT) {
		ret = EINVAL;
		goto out;
	}
	dev->lcore = lcore;
	dev->mode = DPV_PROGRESS_LCORE;
	__atomic_store_n(&l->devs[l->n], dev, __ATOMIC_RELAXED);
	__atomic_store_n(&l->n, l->n + 1, __ATOMIC_SEQ_CST);
	if (l->n == 1 && rte_eal_remote_launch(lcore_main, l, lcore) != 0) {
		__atomic_store_n(&l->n, 0, __ATOMIC_SEQ_CST);
		dev->mode = DPV_PROGRESS_INLINE;
		ret = EINVAL;
	}
out:
	pthread_mutex_unlock(&lcore_lock);
	if (ret == 0)
		helper_reconcile(); /* the last inline device may have gone */
	return ret;
}

static int32_t dev_service_run(void *arg)
{
	return dev_loop_once(arg) == 0 ? 0 : -EAGAIN;
}

int dpv_dev_start_service(struct dpv_dev *dev)
{
	static uint32_t next_service_lcore;
	uint32_t lcores[RTE_MAX_LCORE], lcore;
	struct rte_service_spec spec;
	int32_t n;
	int ret;

	if (dev->mode != DPV_PROGRESS_INLINE)
		return EBUSY;
	memset(&spec, 0, sizeof(spec));
	snprintf(spec.name, sizeof(spec.name), "dpverbs_%s", dev->name);
	spec.callback = dev_service_run;
	spec.callback_userdata = dev;
	spec.socket_id = dev->port.socket;
	ret = rte_service_component_register(&spec, &dev->service_id);
	if (ret != 0)
		return -ret;
	rte_service_component_runstate_set(dev->service_id, 1);
	rte_service_runstate_set(dev->service_id, 1);
	/* Run it on EAL's service lcores (-s / -S), devices spread over them in turn; a
	 * program without any maps the service itself. */
	n = rte_service_lcore_list(lcores, RTE_MAX_LCORE);
	if (n > 0) {
		lcore = lcores[next_service_lcore++ % (uint32_t)n];
		rte_service_map_lcore_set(dev->service_id, lcore, 1);
		ret = rte_service_lcore_start(lcore);
		if (ret != 0 && ret != -EALREADY) {
			rte_service_component_runstate_set(dev->service_id, 0);
			rte_service_component_unregister(dev->service_id);
			return -ret;
		}
	}
	dev->mode = DPV_PROGRESS_SERVICE;
	helper_reconcile(); /* the last inline device may have gone */
	return 0;
}

/* Sleep @p ns, or until dpv_engine_helper_kick(): the helper's only way of waiting, so
 * every wait is short or cut short. */
static void helper_sleep(uint64_t ns)
{
	struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};

	__atomic_store_n(&helper_waiting, 1, __ATOMIC_SEQ_CST);
	/* Returns at once when a kick came since the pass took the last one. */
	syscall(SYS_futex, &helper_kick, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
	__atomic_store_n(&helper_waiting, 0, __ATOMIC_RELAXED);
}

void dpv_engine_helper_kick(void)
{
	/* The exchange orders the kick before the load: the helper either sees the word
	 * set before it sleeps, or is seen waiting here. */
	if (__atomic_exchange_n(&helper_kick, 1, __ATOMIC_SEQ_CST) == 0 &&
	    __atomic_load_n(&helper_waiting, __ATOMIC_SEQ_CST) != 0)
		syscall(SYS_futex, &helper_kick, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* The longest the helper sleeps at once: what stopping it may wait. */
#define HELPER_MAX_SLEEP_NS 10000000u
/* Its sleep between passes while it drives a device that had nothing to do: keeps an
 * event-driven program's latency, or a passive side's answers, in tens of
 * microseconds without taking a core. */
#define HELPER_IDLE_SLEEP_NS 20000u
/* A device it drives for an absent application that stays quiet this many passes in a
 * row (a few milliseconds) gets the sleep doubled on each further quiet pass, up to
 * HELPER_QUIET_SLEEP_MAX_NS: a process that waits for seconds with nothing coming
 * would otherwise spend a good share of a core on wake-ups.
 * A frame that comes then waits up to a millisecond, far inside any ACK timeout;
 * the first pass with work goes back to the short sleep. */
#define HELPER_QUIET_PASSES 64u
#define HELPER_QUIET_SLEEP_MAX_NS 1000000u
/* A device whose application was there at each of the last n looks is looked at
 * again the idle interval times 2^n later, up to this: the helper of a program that
 * polls all the time wakes a few hundred times a second instead of once per idle
 * interval, and steps in at most this long after the program's last call, inside the
 * ACK timeouts peers use. */
#define HELPER_ACTIVE_GAP_MAX_MS 10u
#define HELPER_ACTIVE_SHIFT_MAX 16u
/* Looks in a row without a kick that find the application driving a device end the
 * drive-every-pass of a kick: it polls its CQs itself. */
#define HELPER_EAGER_LOOKS 3u

/* The idle interval while a channel exists but the interval is 0: absent applications
 * still get their events. */
#define HELPER_CHANNEL_IDLE_US 500u

/*
 * Whether the helper drives @p dev on this pass (at @p now, the idle interval @p idle
 * cycles); if not, lowers @p wait to when it looks again. @p kicked: a CQ was armed
 * since the last pass.
 */
static bool helper_wants(struct dpv_dev *dev, uint64_t now, uint64_t idle, uint64_t max_gap,
			 bool kicked, uint64_t *wait)
{
	uint32_t visits = __atomic_load_n(&dev->app_visits, __ATOMIC_RELAXED);
	uint64_t since, gap;

	if (kicked)
		dev->helper_eager = true;
	if (visits != dev->helper_seen_visits) {
		/* The application was here since the last look. */
		dev->helper_seen_visits = visits;
		dev->helper_seen_tsc = now;
		if (dev->helper_streak < HELPER_ACTIVE_SHIFT_MAX)
			dev->helper_streak++;
		if (!kicked && dev->helper_streak >= HELPER_EAGER_LOOKS)
			dev->helper_eager = false;
	} else {
		dev->helper_streak = 0;
	}
	if (dev->helper_eager)
		return true;
	since = now - dev->helper_seen_tsc;
	if (since >= idle)
		return true;
	gap = idle << dev->helper_streak;
	if (gap > max_gap)
		gap = max_gap > idle ? max_gap : idle;
	if (gap - since < *wait)
		*wait = gap - since;
	return false;
}

static void *helper_main(void *arg)
{
	const uint64_t hz = rte_get_tsc_hz(), max_gap = hz / 1000 * HELPER_ACTIVE_GAP_MAX_MS;
	uint64_t quiet_sleep = HELPER_IDLE_SLEEP_NS;
	uint32_t quiet_passes = 0;

	(void)arg;
	while (!__atomic_load_n(&helper_stop, __ATOMIC_ACQUIRE)) {
		const bool channels = __atomic_load_n(&helper_refs, __ATOMIC_RELAXED) > 0;
		const bool kicked = __atomic_exchange_n(&helper_kick, 0, __ATOMIC_ACQ_REL) != 0;
		uint64_t idle = __atomic_load_n(&helper_idle_cycles, __ATOMIC_RELAXED);
		uint64_t now = rte_get_tsc_cycles(), wait = hz / 100;
		bool drove = false, eager = false;
		uint32_t work = 0;
		unsigned int n;

		if (idle == 0 && channels)
			idle = hz / 1000000u * HELPER_CHANNEL_IDLE_US;
		__atomic_add_fetch(&helper_pass, 1, __ATOMIC_SEQ_CST);
		n = __atomic_load_n(&n_devs, __ATOMIC_SEQ_CST);
		for (unsigned int i = 0; i < n; i++) {
			struct dpv_dev *dev = devs[i];

			if (dev->mode != DPV_PROGRESS_INLINE || idle == 0 ||
			    !helper_wants(dev, now, idle, max_gap, kicked && channels, &wait))
				continue;
			eager |= dev->helper_eager;
			if (__atomic_load_n(&dev->control_waiting, __ATOMIC_RELAXED) != 0 ||
			    !dpv_dev_try_own(dev))
				continue;
			work += dpv_dev_poll(dev);
			dev->stats.helper_polls++;
			dpv_dev_release(dev);
			drove = true;
		}
		__atomic_add_fetch(&helper_pass, 1, __ATOMIC_SEQ_CST);
		if (work != 0 || !drove) {
			quiet_passes = 0;
			quiet_sleep = HELPER_IDLE_SLEEP_NS;
		}
		if (work != 0)
			continue;
		if (eager) {
			helper_sleep(HELPER_IDLE_SLEEP_NS);
		} else if (drove) {
			if (++quiet_passes > HELPER_QUIET_PASSES && quiet_sleep < HELPER_QUIET_SLEEP_MAX_NS)
				quiet_sleep *= 2;
			helper_sleep(quiet_sleep < HELPER_QUIET_SLEEP_MAX_NS ? quiet_sleep
									 : HELPER_QUIET_SLEEP_MAX_NS);
		} else {
			/* Nothing to drive: sleep until the first device is to be looked at. */
			uint64_t ns = wait * 1000000000u / hz;

			helper_sleep(ns < HELPER_MAX_SLEEP_NS ? ns + 1000 : HELPER_MAX_SLEEP_NS);
		}
	}
	return NULL;
}

static bool any_inline_device(void)
{
	bool any = false;

	pthread_mutex_lock(&devs_lock);
	for (unsigned int i = 0; i < n_devs; i++)
		any |= devs[i]->mode == DPV_PROGRESS_INLINE;
	pthread_mutex_unlock(&devs_lock);
	return any;
}

static void helper_stop_thread(void)
{
	__atomic_store_n(&helper_stop, true, __ATOMIC_RELEASE);
	dpv_engine_helper_kick(); /* out of its sleep now */
	pthread_join(helper_thread, NULL);
	helper_running = false;
}

/* At exit the helper must not poll devices while the process tears down, and it
 * is joined so no thread outlives the program's own (valgrind, ASan). */
static void helper_at_exit(void)
{
	pthread_mutex_lock(&helper_lock);
	helper_exited = true;
	if (helper_running)
		helper_stop_thread();
	pthread_mutex_unlock(&helper_lock);
}

/* A child of fork() has no helper thread, whatever its parent had: it must not join
 * one at exit. */
static void helper_forget_in_child(void)
{
	helper_running = false;
	pthread_mutex_init(&helper_lock, NULL);
}

/* Start or stop the thread as what needs it says (helper_lock held). */
static int helper_reconcile_locked(void)
{
	bool want = !helper_exited &&
		    (helper_refs > 0 || (helper_idle_us > 0 && any_inline_device()));
	int ret;

	__atomic_store_n(&helper_idle_cycles,
			 (uint64_t)helper_idle_us * rte_get_tsc_hz() / 1000000u, __ATOMIC_RELAXED);
	if (want == helper_running)
		return 0;
	if (!want) {
		helper_stop_thread();
		return 0;
	}
	if (!helper_exit_hook) {
		/* Without these the thread still works; it is only not joined at exit. */
		helper_exit_hook = true;
		(void)atexit(helper_at_exit);
		(void)pthread_atfork(NULL, NULL, helper_forget_in_child);
	}
	__atomic_store_n(&helper_stop, false, __ATOMIC_RELEASE);
	__atomic_store_n(&helper_kick, 0, __ATOMIC_RELAXED);
	/* A control thread: on the cores EAL does not run lcores on, not on the
	 * application's. */
	ret = rte_ctrl_thread_create(&helper_thread, "dpv-helper", NULL, helper_main, NULL);
	if (ret != 0)
		return ret < 0 ? -ret : ret;
	helper_running = true;
	return 0;
}

static void helper_reconcile(void)
{
	pthread_mutex_lock(&helper_lock);
	helper_reconcile_locked();
	pthread_mutex_unlock(&helper_lock);
}

int dpv_engine_helper_get(void)
{
	int ret;

	pthread_mutex_lock(&helper_lock);
	__atomic_store_n(&helper_refs, helper_refs + 1, __ATOMIC_RELAXED);
	ret = helper_reconcile_locked();
	if (ret != 0)
		__atomic_store_n(&helper_refs, helper_refs - 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&helper_lock);
	return ret;
}

void dpv_engine_helper_put(void)
{
	pthread_mutex_lock(&helper_lock);
	if (helper_refs > 0) {
		__atomic_store_n(&helper_refs, helper_refs - 1, __ATOMIC_RELAXED);
		helper_reconcile_locked();
	}
	pthread_mutex_unlock(&helper_lock);
}

int dpv_engine_set_inline_idle_us(uint32_t us)
{
	int ret;

	if (us > DPV_INLINE_IDLE_US_MAX)
		return EINVAL;
	pthread_mutex_lock(&helper_lock);
	helper_idle_us = us;
	ret = helper_reconcile_locked();
	pthread_mutex_unlock(&helper_lock);
	return ret;
}

uint32_t dpv_engine_inline_idle_us(void)
{
	uint32_t us;

	pthread_mutex_lock(&helper_lock);
	us = helper_idle_us;
	pthread_mutex_unlock(&helper_lock);
	return us;
}

unsigned int dpv_engine_devices(struct dpv_dev **out, unsigned int max)
{
	unsigned int i;

	pthread_mutex_lock(&devs_lock);
	for (i = 0; i < n_devs && i < max; i++)
		out[i] = devs[i];
	pthread_mutex_unlock(&devs_lock);
	return i;
}
