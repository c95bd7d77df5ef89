/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * dpv_engine: the device. One dpv_dev per port: the port, its transport, its key
 * table, and the poll loop that moves work between rings, transport and port.
 *
 * Ownership. A device's state has one owner thread at a time. The owner is whoever
 * holds the device's owner flag:
 *  - `inline` progress (the default): any thread that polls a CQ or posts a WR calls
 *    dpv_engine_progress(), which try-locks every device no lcore owns and runs one
 *    poll iteration on each it gets: never a wait. While a CQ is armed for events and
 *    nobody polls, a helper thread does the same and sleeps briefly when idle. And
 *    as a NIC answers its peers without its host, the same helper drives a device
 *    that no thread has driven for dpv_engine_set_inline_idle_us() microseconds
 *    (ACKs, READ responses, retransmit and RNR timers), and lets go as soon as an
 *    application thread comes back.
 *  - `lcore`: a dedicated EAL lcore (or an rte_service on a service core) runs the loop
 *    and holds the flag between iterations; application threads only touch rings.
 * The control path (creating and modifying objects) takes the flag with
 * dpv_dev_own(), which waits; it is never on a hot path.
 */
#ifndef DPV_ENGINE_H
#define DPV_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dpv_cm.h"
#include "dpv_faults.h"
#include "dpv_port.h"
#include "dpv_xport.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Devices per process. */
#define DPV_MAX_DEVS 32u
/** Frames per rx burst. */
#define DPV_RX_BURST 32u
/** How often a device looks at its port's link (milliseconds), as a NIC watches its
 * PHY: a change is seen this long after it at the latest, while the device is driven.
 * Not at every poll: for some drivers (af_packet, tap) asking is a system call. */
#define DPV_LINK_CHECK_MS 10u

enum dpv_progress_mode {
	DPV_PROGRESS_INLINE = 0,
	DPV_PROGRESS_LCORE,
	DPV_PROGRESS_SERVICE,
};

/** Engine counters of one device (owner writes; a stale snapshot elsewhere). */
struct dpv_dev_stats {
	uint64_t polls;       /**< poll iterations */
	uint64_t busy_polls;  /**< iterations that found work */
	uint64_t helper_polls; /**< iterations the helper thread ran (of polls) */
	/* The connection manager (dpv_dev_cm_*()): */
	uint64_t cm_rx_refused;  /**< GSI MADs dpv_cm_unpack() refused, or that found no
	                              free connection */
	uint64_t cm_tx_failed;   /**< MADs the port could not take (dpv_xport_gsi_send()):
	                              the CM's retries stand for them */
	uint64_t cm_events_lost; /**< events that found the event queue full */
	uint64_t cm_resent;      /**< REQs, REPs, DREQs and SIDR_REQs sent again because
	                              the wait for their answer ran out */
};

struct dpv_dev_cm;

struct dpv_dev {
	char name[16];               /**< dpv0, dpv1, ... */
	struct dpv_port port;
	struct dpv_xport *xport;
	const uint32_t *tm_count;    /**< dpv_xport_tm_count() of xport: polls skip the
	                                  TM ops while it is 0 */
	struct dpv_mr_table *mrs;    /**< the transport's key table: made at open, destroyed
	                                  at close after the transport */
	uint32_t owner;              /**< 0 free, 1 owned (atomic) */
	/** Bumped by every dpv_engine_progress() that drives the device or finds it
	 * owned (relaxed atomic; beside owner, on the line the try-lock writes anyway):
	 * while it does not change, the application is away. */
	uint32_t app_visits;
	uint32_t control_waiting;    /**< a control thread wants the flag (atomic) */
	uint8_t mode;                /**< enum dpv_progress_mode */
	uint32_t lcore;              /**< DPV_PROGRESS_LCORE: the lcore */
	uint32_t service_id;         /**< DPV_PROGRESS_SERVICE: the service */
	struct dpv_dev_stats stats;
	uint32_t tick_wait;          /**< owner: polls since the timers last ran */
	/** The link as the device last saw it (owner; set at open), looked at every
	 * DPV_LINK_CHECK_MS as the timers run. */
	bool link_up;
	uint64_t link_next_tsc;      /**< owner: when it looks next */
	/** Called by the owner when the link went up or down since it last looked (lib/verbs
	 * raises IBV_EVENT_PORT_ACTIVE / IBV_EVENT_PORT_ERR); set before the device is
	 * driven, or while it is owned. */
	void (*link_event)(struct dpv_dev *dev, bool up, void *arg);
	void *link_arg;
	struct dpv_dev_cm *cm;       /**< the connection manager (dpv_engine_cm.c) */
	uint64_t cm_next_tsc;        /**< owner: when the CM's timers run next (TSC) */
	uint32_t helper_seen_visits; /**< helper thread only: app_visits when last read */
	uint64_t helper_seen_tsc;    /**< helper thread only: TSC when it last changed */
	uint8_t helper_streak;       /**< helper thread only: looks in a row that found the
	                                  application there */
	bool helper_eager;           /**< helper thread only: a CQ was armed since the
	                                  application was last seen: drive every pass */
};

/**
 * Open a device on an ethdev port (control thread, after rte_eal_init()).
 * @param name   "dpvN"
 * @param ethdev_port DPDK port id
 * @param ipv4   the port's address, host order
 * @return 0; ENODEV no such port; ENOMEM; or the port's or transport's errno.
 */
int dpv_dev_open(const char *name, uint16_t ethdev_port, uint32_t ipv4, struct dpv_dev **out);

/**
 * Open a device as dpv_dev_open() does, its port the faults driver (dpv_faults.h)
 * wrapping the ethdev port, so what it sends and receives is lost, reordered,
 * duplicated, corrupted or delayed as @p faults says (control thread).
 * @param faults  a spec as dpv_faults_parse() reads it; NULL or "": no wrapper, the
 *                same as dpv_dev_open()
 * @return as dpv_dev_open(); EINVAL @p faults is not a valid spec.
 */
int dpv_dev_open_faults(const char *name, uint16_t ethdev_port, uint32_t ipv4,
			const char *faults, struct dpv_dev **out);

/**
 * Close a device (control thread): runs it on while it lingers (dpv_dev_linger() for
 * every peer, at most twice dpv_xport_linger_ms()), then stops its lcore or service,
 * closes transport and port. A removal of the port (the CM's, below) told while it
 * closes is waited for if it has begun, and not heard otherwise.
 */
void dpv_dev_close(struct dpv_dev *dev);

/**
 * Until when the device must run for its peers (control thread, not the owner: it
 * takes the device for the look, dpv_dev_own()): dpv_xport_linger_until(), a peer may
 * still resend a request whose acknowledgement it lost; 0 when nothing lingers, or when
 * the link is down (nothing a peer resends can come, and a memif link goes down when
 * the peer's process ends).
 * @param skip_ips, n_skip as dpv_xport_linger_until()
 * @return a TSC value, or 0
 */
uint64_t dpv_dev_linger_until(struct dpv_dev *dev, const uint32_t *skip_ips,
			      unsigned int n_skip);

/**
 * Run the device while it lingers (control thread): until dpv_dev_linger_until() is
 * past, at most @p max_ms. An inline device is driven here (the owner flag taken for
 * each poll, so the program's other threads and the helper go on too); an lcore or
 * service device runs on its own meanwhile. Returns at once when nothing lingers: a
 * device with no RC QP destroyed after a recent request costs nothing here.
 * @param skip_ips, n_skip as dpv_xport_linger_until()
 */
void dpv_dev_linger(struct dpv_dev *dev, const uint32_t *skip_ips, unsigned int n_skip,
		    uint32_t max_ms);

/** Try to become the owner; never waits. */
static inline bool dpv_dev_try_own(struct dpv_dev *dev)
{
	uint32_t free_flag = 0;

	return __atomic_compare_exchange_n(&dev->owner, &free_flag, 1, false,
					   __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

/** Give up ownership. */
static inline void dpv_dev_release(struct dpv_dev *dev)
{
	__atomic_store_n(&dev->owner, 0, __ATOMIC_RELEASE);
}

/** Become the owner, waiting for the current one (control path only). */
void dpv_dev_own(struct dpv_dev *dev);

/** Give up ownership taken with dpv_dev_own(). */
void dpv_dev_disown(struct dpv_dev *dev);

/**
 * One poll iteration (owner only): receive a burst and hand it to the transport, run
 * the TM SRQs' ops, send what the QPs may send, run timers and ARP.
 * @return units of work done (0: idle)
 */
uint32_t dpv_dev_poll(struct dpv_dev *dev);

/**
 * Drive every inline-mode device of the process once (any thread): try-lock each,
 * poll the ones it gets. Cheap when there is nothing to do.
 * @return units of work done
 */
uint32_t dpv_engine_progress(void);

/**
 * dpv_engine_progress() with @p first driven before the others (any thread): the
 * device of the CQ polled or the queue posted to. Every other inline-mode device is
 * driven on the same call, so two devices used from one thread never wait on each
 * other. @p first NULL: dpv_engine_progress().
 * @return units of work done
 */
uint32_t dpv_engine_progress_dev(struct dpv_dev *first);

/**
 * Hand a device to a dedicated lcore (control thread): the lcore loops dpv_dev_poll()
 * over every device handed to it, each until its dpv_dev_close().
 * @return 0; EINVAL not a worker lcore, or one busy with something else; EBUSY already
 *         not inline.
 */
int dpv_dev_start_lcore(struct dpv_dev *dev, unsigned int lcore);

/**
 * Hand a device to an rte_service (control thread). When EAL has service lcores (its
 * -s / -S options), the service is mapped to one of them (devices in turn) and the
 * lcore started; otherwise the program maps it (rte_service_map_lcore_set).
 * @return 0; EBUSY not inline any more; or the errno of registering or starting.
 */
int dpv_dev_start_service(struct dpv_dev *dev);

/**
 * Ask for the helper thread that drives inline devices while completion channels
 * wait (control path): while any call is not released, it runs even with an idle
 * interval of 0, and after dpv_engine_helper_kick() it drives every inline device on
 * every pass until the application drives it again. Counted: each call needs a
 * dpv_engine_helper_put().
 * @return 0 or an errno from starting the thread.
 */
int dpv_engine_helper_get(void);

/** Release a dpv_engine_helper_get(); with the last one the helper goes back to
 * driving only idle devices (dpv_engine_set_inline_idle_us()), or stops. */
void dpv_engine_helper_put(void);

/**
 * Tell the helper thread that a CQ was armed for events (ibv_req_notify_cq(); any
 * thread, never waits): while a completion channel holds it (dpv_engine_helper_get()),
 * it wakes, and drives every inline device on every pass until the device's
 * application is seen driving it again. A locked exchange; a system call (a futex
 * wake) only when the helper sleeps and no kick is pending.
 */
void dpv_engine_helper_kick(void);

/** Microseconds without a driver before the helper drives an inline device, by default. */
#define DPV_INLINE_IDLE_US_DEFAULT 500u
/** The largest interval dpv_engine_set_inline_idle_us() takes (one second). */
#define DPV_INLINE_IDLE_US_MAX 1000000u

/**
 * Set how long an inline device may go without a thread driving it before the helper
 * thread drives it (control thread; any time, for every inline device of the process).
 * The helper is the thread of dpv_engine_helper_get(): one per process. It runs while
 * some device is inline and @p us is not 0 (or a completion channel holds it), and
 * stops when the last inline device goes to an lcore or a service, or is closed, and at
 * exit. An application thread never waits for it: dpv_engine_progress() bumps the
 * device's app_visits whether it gets the device or finds it owned, and the helper
 * leaves a device alone until it has seen app_visits unchanged for @p us (it steps in
 * between one and two intervals after the application's last call).
 * @param us microseconds, 0 (no helper for idle devices) to DPV_INLINE_IDLE_US_MAX
 * @return 0; EINVAL @p us too large; or an errno from starting the thread.
 */
int dpv_engine_set_inline_idle_us(uint32_t us);

/** The interval dpv_engine_set_inline_idle_us() set (any thread). */
uint32_t dpv_engine_inline_idle_us(void);

/** The devices of the process, in the order they were opened. */
unsigned int dpv_engine_devices(struct dpv_dev **devs, unsigned int max);

/*
 * The port calls the facade needs (dpv_engine_port.c): lib/verbs reaches a device's
 * port only through these, for its link, its capture, its counters, its neighbours
 * and the settings of the ports it opens. The types and limits they carry are the
 * port layer's (dpv_port.h, dpv_capture.h, dpv_faults.h).
 */

/** What a device's port is: set by dpv_dev_open(), unchanged until dpv_dev_close(). */
struct dpv_dev_port_info {
	uint16_t ethdev_port;      /**< DPDK port id */
	uint16_t mtu;              /**< IP MTU of the link */
	uint32_t ipv4;             /**< host order */
	struct rte_ether_addr mac;
};

/**
 * What the device's port is (any thread).
 * @param[out] info  its DPDK port, MTU, address and MAC
 */
void dpv_dev_port_info(const struct dpv_dev *dev, struct dpv_dev_port_info *info);

/**
 * The port's link now, asked of its driver (any thread; for some drivers, af_packet
 * and tap, a system call).
 * @param[out] up          whether the link is up
 * @param[out] speed_mbps  its speed in Mb/s, 0 when the port cannot tell
 */
void dpv_dev_link(struct dpv_dev *dev, bool *up, uint32_t *speed_mbps);

/**
 * The port's counters, in the device's memory (any thread): the owner writes them as
 * it runs, so a reader loads each field whole (a relaxed 64-bit atomic load); the set
 * is not one instant's.
 * @return the counters, as long as the device is open
 */
const struct dpv_port_stats *dpv_dev_port_stats(const struct dpv_dev *dev);

/**
 * The counters of the faults wrapper (dpv_dev_open_faults()) around the device's port
 * (any thread; a possibly stale snapshot, exact on the owner thread).
 * @param[out] st  the counters, per direction
 * @return 0; ENODEV the device's port has no faults wrapper.
 */
int dpv_dev_faults_stats(const struct dpv_dev *dev, struct dpv_faults_stats *st);

/**
 * Put a new faults spec in force on the device's faults wrapper, from the next frame
 * on, as dpv_faults_set() (for benchmarks that measure one link at several loss
 * rates). Control thread: the call takes the device (dpv_dev_own()) for the change.
 * @param spec  a spec as dpv_faults_parse() reads it
 * @param[out] why  on EINVAL, the sentence dpv_faults_parse() wrote (may be NULL)
 * @param why_len   bytes at @p why
 * @return 0; EINVAL @p spec is not valid; ENODEV the port has no faults wrapper.
 */
int dpv_dev_set_faults(struct dpv_dev *dev, const char *spec, char *why, size_t why_len);

/**
 * The MAC of neighbour @p ip (host order) from the port's ARP table, as
 * dpv_port_resolve(): when it is not known, an ARP request goes out (at most one per
 * DPV_ARP_RETRY_MS), and a caller that asks again once the device has been driven
 * finds the answer. Control thread: the call takes the device for the look
 * (dpv_dev_own()), never the owner.
 * @param[out] mac  the neighbour's MAC, when known
 * @return whether it is known
 */
bool dpv_dev_resolve(struct dpv_dev *dev, uint32_t ip, struct rte_ether_addr *mac);

/**
 * How long the port trusts a neighbour's MAC after its last ARP, as
 * dpv_port_set_arp_lifetime() (control thread, while no thread drives the device:
 * after dpv_dev_open(), before its progress mode is set).
 * @param ms  1..DPV_ARP_LIFETIME_MS_MAX
 * @return 0; EINVAL @p ms out of range (the lifetime is unchanged).
 */
int dpv_dev_set_arp_lifetime(struct dpv_dev *dev, uint32_t ms);

/**
 * How long dpv_dev_open() waits for its port's link to come up, for the devices opened
 * from now on, as dpv_port_set_link_wait(): the open returns as soon as the link is up,
 * and opens the device whether it came up or not. Control thread.
 * @param ms  0 (only the driver's own 100 ms, the default) to DPV_LINK_WAIT_MS_MAX;
 *            more is taken as the maximum
 */
void dpv_engine_set_link_wait(uint32_t ms);

/**
 * Check a fault spec as dpv_dev_open_faults() will read it (dpv_faults_parse()), so
 * that configuration refuses a bad one before anything starts. Any thread; no EAL.
 * @param spec  the spec; NULL or "" is one with no faults
 * @param[out] why  on EINVAL, one sentence saying what is wrong (may be NULL)
 * @param why_len   bytes at @p why
 * @return 0; EINVAL as dpv_faults_parse().
 */
int dpv_engine_check_faults(const char *spec, char *why, size_t why_len);

/**
 * Create two DPDK ports joined back to back by two rte_rings, as dpv_port_ring_pair():
 * what one sends the other receives, two devices in one process without a kernel or a
 * socket. Control thread, after rte_eal_init().
 * @param name    unique name stem ("pair0": ports pair0_a and pair0_b)
 * @param socket  NUMA node for the rings
 * @param[out] a, b  their DPDK port ids
 * @return 0; EEXIST @p name in use; ENOMEM.
 */
int dpv_engine_ring_pair(const char *name, int socket, uint16_t *a, uint16_t *b);

/**
 * Start capturing every frame the device's port sends or receives into a new pcapng
 * file at @p path (dpv_capture_open(): created or truncated), the device its first
 * source, named after the device. The capture starts between two poll iterations: the
 * call takes the device (dpv_dev_own()). Control thread, the device not capturing;
 * the dpv_dev_capture_*() calls of devices that share a file are serialised by the
 * caller.
 * @param comment     the file's section comment (may be NULL)
 * @param port_names  the interface name of each DPDK port, indexed by port id (may
 *                    be NULL: dpv_capture_open())
 * @return 0; or dpv_capture_open()'s errno (ENOMEM, EAGAIN, the file's errno).
 */
int dpv_dev_capture_open(struct dpv_dev *dev, const char *path, const char *comment,
			 const char *const *port_names);

/**
 * Start capturing the device's frames into the file device @p other captures into
 * (dpv_capture_add()), as dpv_dev_capture_open() starts it. Control thread, the device
 * not capturing, @p other capturing.
 * @return 0; ENOSPC the file has DPV_CAPTURE_MAX_SOURCES sources already; ENODEV the
 *         device's DPDK port came up after the file was made; ENOMEM.
 */
int dpv_dev_capture_join(struct dpv_dev *dev, const struct dpv_dev *other);

/** Whether the device captures now (any thread; a snapshot). */
bool dpv_dev_capturing(const struct dpv_dev *dev);

/** Whether devices @p a and @p b both capture, into the same file (control thread). */
bool dpv_dev_capture_same(const struct dpv_dev *a, const struct dpv_dev *b);

/**
 * Stop the device's capture (control thread, the device capturing): the device takes
 * no frame more (the call takes it, dpv_dev_own()), what it queued is written, and
 * with the file's last source the file is finished and closed (dpv_capture_remove()).
 * @return 0, or the errno of the first write to the file that failed.
 */
int dpv_dev_capture_stop(struct dpv_dev *dev);

/*
 * The connection manager of a device (dpv_engine_cm.c): lib/cm's state machines run
 * over the device's GSI (QP 1, dpv_xport_set_gsi()), for what a librdmacm needs. Each
 * device has its own table of DPV_DEV_CM_MAX connections and listeners, made at
 * dpv_dev_open() and freed at dpv_dev_close(). Received MADs are handled on the owner
 * thread as they come; the CM's timers (resends, TIMEWAIT) run from dpv_dev_poll() at
 * the earliest deadline, with the transport's. The calls below are the control path:
 * each takes the device (dpv_dev_own()), never call one from the owner thread.
 *
 * A connection is named by its local communication ID (never 0). It is gone, and its
 * ID with it, once its last event is queued: REJECTED or UNREACHABLE on the active
 * side, TIMEWAIT_EXIT after a disconnect or a rejected REP, or a REQ rejected with
 * dpv_dev_cm_reject(). Private data is the MADs' own, as the consumer gives it: the
 * IP CM header of a librdmacm REQ (dpv_cm_ip.h) is the consumer's to write and read.
 *
 * UD ids (RDMA_PS_UDP, RDMA_PS_IPOIB) resolve a service ID to the peer's UD QP with
 * SIDR (IBTA 12.11): dpv_dev_cm_sidr_request() on the active side, whose one event is
 * ESTABLISHED with the peer's QP number and Q_Key, or UNREACHABLE; on the passive side
 * a listener's SIDR_REQ is a CONNECT_REQUEST with @c ud set, answered with
 * dpv_dev_cm_sidr_accept() or dpv_dev_cm_reject(). A SIDR request is gone with its
 * event (active side) or its answer (passive side).
 *
 * A REQ (or REP) the consumer has not answered when it comes again is acknowledged
 * with an MRA whose service timeout is DPV_DEV_CM_MRA_TIMEOUT, as Linux's CM does; a
 * REQ or SIDR_REQ that finds the table full is refused (REJ No Resources, SIDR_REP
 * Rejected), one of another CM class version gets REJ Invalid Class Version.
 *
 * A port removed (DPDK's RTE_ETH_EVENT_INTR_RMV for the device's ethdev port: a NIC
 * unplugged) takes the CM with it, as the kernel's RDMA CM loses a device that is
 * unregistered: every connection, listener and resolution ends there without a MAD
 * or an event of its own, one DEVICE_REMOVAL event (@c id 0) is queued, MADs that
 * still come are dropped, and the calls that would start something fail with ENODEV.
 */

/** Connections and listeners of one device at most. */
#define DPV_DEV_CM_MAX 256u
/** Events a device holds for dpv_dev_cm_get_event() at most; one more is lost
 *  (cm_events_lost). */
#define DPV_DEV_CM_EVENTS 512u

/** The CM's timeouts (IBTA 12.7): exponents of 4.096 us. */
struct dpv_dev_cm_timing {
	uint8_t response_timeout; /**< 0..31: the CM response time this side announces in
	                               its REQ for both ends (Local and Remote CM Response
	                               Timeout) */
	uint8_t max_retries;      /**< 0..15: the REQ's Max CM Retries */
	uint8_t packet_life_time; /**< 0..31: one way across the path */
	uint64_t timewait_ns;     /**< how long TIMEWAIT keeps a connection's IDs */
};

/** The timing of a device until dpv_dev_cm_set_timing(): Linux's RDMA CM's for RoCE,
 *  a response timeout of 20 (4.3 s), 15 retries, a packet life time of 16 (268 ms); and
 *  a TIMEWAIT of two packet life times. */
#define DPV_DEV_CM_RESPONSE_TIMEOUT_DEFAULT 20u
#define DPV_DEV_CM_MAX_RETRIES_DEFAULT 15u
#define DPV_DEV_CM_PACKET_LIFE_TIME_DEFAULT 16u
/** The service timeout of the MRAs a device sends: Linux's, 4.096 us * 2^24 (68.7 s). */
#define DPV_DEV_CM_MRA_TIMEOUT 24u

/**
 * Set the CM timing of the connections that start from now on (control thread).
 * @return 0; EINVAL a field beyond its range.
 */
int dpv_dev_cm_set_timing(struct dpv_dev *dev, const struct dpv_dev_cm_timing *t);

/** The device's CM timing now (control thread): its defaults, or the last
 *  dpv_dev_cm_set_timing()'s. */
void dpv_dev_cm_get_timing(struct dpv_dev *dev, struct dpv_dev_cm_timing *t);

/** Address resolutions a device runs at once, at most. */
#define DPV_DEV_CM_RESOLVES 64u

/**
 * Resolve @p ip through the device's port, as librdmacm's rdma_resolve_addr() wants it
 * (control thread): the call returns at once, and the device, on whichever thread
 * drives it, asks ARP (dpv_port_resolve(), again each DPV_ARP_RETRY_MS) until the
 * neighbour answers or @p timeout_ms has passed. Then comes one event, @p *id's:
 * ADDR_RESOLVED (@c peer_ip the address; the port's own address is resolved at once)
 * or ADDR_ERROR. The resolution is gone with its event, or with
 * dpv_dev_cm_resolve_cancel().
 * @param ip  host order, not 0
 * @param id  out: the resolution's ID (never 0), which only its event and
 *            dpv_dev_cm_resolve_cancel() name
 * @return 0; EINVAL @p ip is 0; ENOSPC DPV_DEV_CM_RESOLVES are under way; ENODEV the
 *         port was removed.
 */
int dpv_dev_cm_resolve(struct dpv_dev *dev, uint32_t ip, uint32_t timeout_ms, uint32_t *id);

/**
 * Give up a resolution of dpv_dev_cm_resolve() (control thread): no event comes for it
 * from now on (one queued already stays queued).
 * @return 0; ENOENT no such resolution under way.
 */
int dpv_dev_cm_resolve_cancel(struct dpv_dev *dev, uint32_t id);

/** The local QP of a connection, as a REQ (dpv_dev_cm_connect()) or a REP
 *  (dpv_dev_cm_accept()) carries it. */
struct dpv_dev_cm_param {
	uint32_t qpn;                /**< 24 bits */
	/** 24 bits: the Starting PSN of the REQ or REP, which its receiver's QP sends from
	 *  first: the local QP's rq_psn, as Linux's CM readies its QPs. */
	uint32_t psn;
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t retry_count;         /**< 0..7 (REQ) */
	uint8_t rnr_retry_count;     /**< 0..7 */
	const void *private_data;
	uint8_t private_data_len;    /**< at most 92 in a REQ, 196 in a REP */
};

/** An event of a connection (dpv_dev_cm_get_event()). */
struct dpv_dev_cm_event {
	enum dpv_cm_event type;  /**< DPV_CM_EV_*: librdmacm's events of the same name */
	uint32_t id;             /**< the connection; an ADDR_ event's resolution */
	uint32_t listen_id;      /**< CONNECT_REQUEST: the listener it came to */
	uint32_t peer_ip;        /**< IPv4, host order */
	uint64_t service_id;
	uint16_t rej_reason;     /**< REJECTED: the REJ's reason (enum dpv_cm_rej_reason) */
	bool ud;                 /**< the event of a SIDR request (a UD id's) */
	/** CONNECT_REQUEST: the REQ's; CONNECT_RESPONSE: the REP's; ESTABLISHED of a SIDR
	 *  request: the SIDR_REP's QP. */
	uint32_t remote_qpn;
	uint32_t remote_psn;     /**< the REQ's or REP's Starting PSN: the local QP's sq_psn */
	uint32_t remote_qkey;    /**< ESTABLISHED of a SIDR request: the SIDR_REP's Q_Key */
	/** UNREACHABLE of a SIDR request: the SIDR_REP's status (enum dpv_cm_sidr_status,
	 *  never Success), or 0 when no SIDR_REP came within the retries. */
	uint8_t sidr_status;
	uint8_t responder_resources;
	uint8_t initiator_depth;
	/** CONNECT_REQUEST, CONNECT_RESPONSE, REJECTED, and a SIDR request's ESTABLISHED
	 *  or UNREACHABLE after a SIDR_REP: the MAD's private data (all of its field: a
	 *  MAD does not say how much of it the sender used). */
	uint8_t private_data_len;
	uint8_t private_data[DPV_CM_SIDR_REQ_PDATA_LEN]; /**< a SIDR_REQ's, the longest */
};

/**
 * Listen on @p service_id: REQs for it give CONNECT_REQUEST events (control thread).
 * @param[out] id  the listener
 * @return 0; EADDRINUSE the device has a listener on it; ENOSPC the table is full;
 *         ENODEV the port was removed.
 */
int dpv_dev_cm_listen(struct dpv_dev *dev, uint64_t service_id, uint32_t *id);

/**
 * Stop listening (control thread): REQs for its service ID get a REJ (Invalid Service
 * ID) from now on; connections it gave stay.
 * @return 0; ENOENT @p id is not a listener of the device.
 */
int dpv_dev_cm_unlisten(struct dpv_dev *dev, uint32_t id);

/**
 * Connect (control thread): send a REQ for @p service_id to @p dst_ip's QP 1, with the
 * device's timing (dpv_dev_cm_set_timing()), the port's active MTU, IPv4-mapped GIDs.
 * Then come CONNECT_RESPONSE (take the REP's QP and PSN, then dpv_dev_cm_establish()),
 * REJECTED, or UNREACHABLE when every retry went unanswered.
 * @param[out] id  the connection
 * @return 0; EINVAL a field of @p p beyond its width; ENOSPC the table is full;
 *         ENODEV the port was removed.
 */
int dpv_dev_cm_connect(struct dpv_dev *dev, uint32_t dst_ip, uint64_t service_id,
		       const struct dpv_dev_cm_param *p, uint32_t *id);

/**
 * Accept a CONNECT_REQUEST with a REP (control thread); ESTABLISHED follows with the
 * peer's RTU.
 * @return 0; ENOENT no such connection; EINVAL it is not waiting for an answer, or a
 *         field of @p p beyond its width.
 */
int dpv_dev_cm_accept(struct dpv_dev *dev, uint32_t id, const struct dpv_dev_cm_param *p);

/**
 * Reject a CONNECT_REQUEST, or a CONNECT_RESPONSE, with a REJ (Consumer Defined) and
 * up to 148 bytes of private data; a SIDR request's CONNECT_REQUEST with a SIDR_REP
 * (status Rejected) and up to 136 bytes (control thread).
 * @return 0; ENOENT no such connection; EINVAL it waits for no answer, or @p len is
 *         too long, or @p pdata NULL with a length.
 */
int dpv_dev_cm_reject(struct dpv_dev *dev, uint32_t id, const void *pdata, uint8_t len);

/**
 * Active side, after CONNECT_RESPONSE: the QP is ready, send the RTU (control thread).
 * ESTABLISHED is queued at once.
 * @return 0; ENOENT no such connection; EINVAL no REP is waiting.
 */
int dpv_dev_cm_establish(struct dpv_dev *dev, uint32_t id);

/**
 * Disconnect (control thread): an established connection sends a DREQ (DISCONNECTED
 * follows with the DREP, or when the DREQ's retries are spent); after the peer's
 * DISCONNECTED, the DREP is sent. Both end in TIMEWAIT_EXIT.
 * @return 0; ENOENT no such connection; EINVAL it is not established nor disconnected
 *         by its peer.
 */
int dpv_dev_cm_disconnect(struct dpv_dev *dev, uint32_t id);

/**
 * Resolve @p service_id at @p dst_ip to a UD QP (control thread): send a SIDR_REQ with
 * up to 216 bytes of private data (a librdmacm UD id's carries the IP CM header of
 * dpv_cm_ip.h first), waiting and retrying with the device's timing
 * (dpv_dev_cm_set_timing(): its response timeout and Max CM Retries). Then comes one
 * event, with @c ud set: ESTABLISHED with the peer's QP number and Q_Key, or
 * UNREACHABLE (sidr_status: the SIDR_REP's status, 0 when every retry went
 * unanswered). The request is gone with it.
 * @param[out] id  the request
 * @return 0; EINVAL @p len above 216, or @p pdata NULL with a length; ENOSPC the
 *         table is full; ENODEV the port was removed.
 */
int dpv_dev_cm_sidr_request(struct dpv_dev *dev, uint32_t dst_ip, uint64_t service_id,
			    const void *pdata, uint8_t len, uint32_t *id);

/**
 * Accept a SIDR request's CONNECT_REQUEST (control thread): a SIDR_REP (Success) with
 * the local UD QP's number and Q_Key and up to 136 bytes of private data. The request
 * is gone with it (no event follows).
 * @return 0; ENOENT no such connection; EINVAL it is not a SIDR request waiting for
 *         its answer, @p qpn wider than 24 bits, @p len above 136, or @p pdata NULL
 *         with a length.
 */
int dpv_dev_cm_sidr_accept(struct dpv_dev *dev, uint32_t id, uint32_t qpn, uint32_t qkey,
			   const void *pdata, uint8_t len);

/**
 * Whether a DREQ of the device waits for its DREP (control thread, not the owner: it
 * takes the device for the look, dpv_dev_own()): a connection in DREQ_SENT, whose
 * DREQ is sent again until the DREP comes or its retries are spent. False while the
 * link is down (no DREP can come, and a memif link goes down when the peer's process
 * ends). A process that ends keeps such a device running (the drop-in's exit hook), so
 * that its last DREQ, lost on the wire, still reaches a peer that waits for nothing
 * else and would never learn of the disconnection.
 * @param skip_ips, n_skip  IPv4 addresses (host order) whose DREQs do not count: the
 *        process's own devices, which end with it
 */
bool dpv_dev_cm_dreq_waits(struct dpv_dev *dev, const uint32_t *skip_ips, unsigned int n_skip);

/** One connection, listener, SIDR request or address resolution of a device
 *  (dpv_dev_cm_list()). */
struct dpv_dev_cm_info {
	uint32_t id;             /**< local communication ID (a SIDR request's request ID,
	                              a resolution's ID) */
	uint32_t remote_id;      /**< the peer's, once known (0 before) */
	enum dpv_cm_state state; /**< dpv_cm_state_name() prints it */
	bool ud;                 /**< a SIDR request */
	uint32_t peer_ip;        /**< IPv4, host order; 0 for a listener */
	uint32_t listen_id;      /**< a passive connection's listener; 0 otherwise */
	uint64_t service_id;
	uint32_t local_qpn;      /**< as the REQ or REP (or SIDR_REP) carried it; 0 before */
	uint32_t remote_qpn;
	uint8_t retries;         /**< sends again of the MAD awaiting an answer */
	bool resolving;          /**< an address resolution under way (dpv_dev_cm_resolve()):
	                              @c peer_ip its address, @c state and the rest 0 */
};

/** What dpv_dev_cm_list() can list: the connections and the resolutions. */
#define DPV_DEV_CM_LIST_MAX (DPV_DEV_CM_MAX + DPV_DEV_CM_RESOLVES)

/** A printable name of @p f's state: "ADDR_QUERY" for a resolution, else
 *  dpv_cm_state_name()'s (any thread). */
const char *dpv_dev_cm_info_state(const struct dpv_dev_cm_info *f);

/**
 * List the device's CM ids (control thread, or any thread that may take the device:
 * telemetry's): up to @p max into @p info, the connections in the order of their table
 * slots, then the address resolutions under way (at most DPV_DEV_CM_LIST_MAX in all).
 * @param[out] n  how many the device has (may be above @p max)
 * @return 0; EINVAL @p info NULL with @p max above 0.
 */
int dpv_dev_cm_list(struct dpv_dev *dev, struct dpv_dev_cm_info *info, uint32_t max,
		    uint32_t *n);

/**
 * Take the oldest event of the device's connections (control thread).
 * @return 0 and @p ev; EAGAIN none queued.
 */
int dpv_dev_cm_get_event(struct dpv_dev *dev, struct dpv_dev_cm_event *ev);

/** Called when the CM has queued an event (or found its queue full), on the thread
 *  that queued it: the owner, holding the device. It must not call into the device. */
typedef void dpv_dev_cm_notify_fn(void *arg);

/**
 * Have @p fn called with @p arg whenever an event is queued for
 * dpv_dev_cm_get_event(), so that a consumer that sleeps (an event channel's file
 * descriptor) learns of it while some other thread drives the device (control thread).
 * @param fn  NULL: no call from now on
 */
void dpv_dev_cm_set_notify(struct dpv_dev *dev, dpv_dev_cm_notify_fn *fn, void *arg);

#ifdef __cplusplus
}
#endif

#endif /* DPV_ENGINE_H */
