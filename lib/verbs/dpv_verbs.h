/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * dpverbs' own calls beside rdma-core's verbs API (<infiniband/verbs.h>), for
 * DPDK-native programs that start EAL themselves and want a port as a verbs device.
 * Verbs programs need none of this: ibv_get_device_list() starts EAL from DPV_EAL_ARGS
 * (or the DPV_CONFIG file) and lists one device per DPDK port (doc/guides).
 */
#ifndef DPV_VERBS_H
#define DPV_VERBS_H

#include <stdint.h>

#include <infiniband/verbs.h>

#ifdef __cplusplus
extern "C" {
#endif

/** dpverbs' version, as query_device reports it in fw_ver. */
#define DPV_VERSION "0.1.0"

/** Most TM ops outstanding on one TM SRQ (tm_caps.max_ops). */
#define DPV_VERBS_TM_MAX_OPS 4096u

/**
 * The resource_type a parent domain's alloc() and free() (ibv_alloc_parent_domain(3))
 * are called with for the memory of a QP, a CQ and an SRQ made with it: the driver id
 * RDMA_DRIVER_UNKNOWN (0, dpverbs has no kernel driver) in the upper 32 bits, these
 * codes in the lower. The memory is the object's verbs-side state, its locks among
 * it; the rings of its queues stay in DPDK's memory on the port's NUMA node.
 */
#define DPV_VERBS_RES_TYPE_QP 1u
#define DPV_VERBS_RES_TYPE_CQ 2u
#define DPV_VERBS_RES_TYPE_SRQ 3u

struct dpv_dev;

/**
 * Open DPDK port @p port_id, already probed by the program's own rte_eal_init(), as a
 * verbs device with IPv4 address @p ipv4 (host order), and return a context on it.
 * The device is named "dpvN" in the order devices are opened; close the context with
 * ibv_close_device() (the device stays open for the life of the process).
 *
 * Control thread, after rte_eal_init().
 * A port opened before keeps its first address. Once a program opens ports this way,
 * ibv_get_device_list() lists those and starts nothing. Of dpverbs' settings only
 * DPV_FAULTS is read here: when set, the device's port is the faults driver over the
 * ethdev port (doc/guides/configuration.md). The first device opened installs
 * dpverbs' SIGSEGV / SIGBUS handler unless dpv_verbs_set_fault_guard() said no.
 * @return the context, or NULL with errno: ENODEV no such port, EINVAL ipv4 0 or a
 *         DPV_FAULTS spec that is not valid, ENOSPC too many devices, ENOMEM, or the
 *         port's errno.
 */
struct ibv_context *dpv_verbs_open_port(uint16_t port_id, uint32_t ipv4);

/**
 * Create two DPDK ports joined back to back by two rte_rings (DPDK's ring PMD), so that
 * what one sends the other receives: two devices in one process without a NIC, a
 * kernel or a socket, to open with dpv_verbs_open_port() (a memif pair cannot meet
 * within one process in DPDK 22.11). What DPV_RING_PAIRS makes for the programs whose
 * EAL ibv_get_device_list() starts. The rings are on the caller's NUMA socket.
 *
 * Control thread, after rte_eal_init().
 * @param name  a name stem unique in the process: the ports are "<name>_a" and
 *              "<name>_b"
 * @param[out] port_a, port_b  their DPDK port ids
 * @return 0; EINVAL @p name NULL or empty, or @p port_a or @p port_b NULL; EEXIST
 *         @p name in use; ENOMEM.
 */
int dpv_verbs_ring_pair(const char *name, uint16_t *port_a, uint16_t *port_b);

/**
 * Move a device's progress to @p mode: "inline" (the default: threads that poll or
 * post drive it), "lcore:<id>" (a dedicated EAL worker lcore), or "service" (an
 * rte_service the program maps to a service core). What DPV_PROGRESS does for devices
 * that ibv_get_device_list() opens.
 *
 * Control thread.
 * @return 0; EINVAL bad mode or lcore; EBUSY not inline any more; ENOTSUP.
 */
int dpv_verbs_set_progress(struct ibv_context *context, const char *mode);

/**
 * Set how many microseconds an inline device may go without a thread of the program
 * driving it (polling a CQ, posting a WR) before dpverbs' helper thread drives it, so
 * that it keeps ACKing, answering RDMA READs and running its timers while the program
 * computes or sleeps; 0 turns that off. What DPV_INLINE_IDLE_US (or inline_idle_us in
 * the DPV_CONFIG file) does for programs that ibv_get_device_list() starts; every
 * inline device of the process, and those opened later, take it.
 *
 * Control thread.
 * @param us 0 to 1000000; 500 unless set
 * @return 0; EINVAL @p us too large; or an errno from starting the thread.
 */
int dpv_verbs_set_inline_idle_us(uint32_t us);

/**
 * Choose whether dpverbs installs its SIGSEGV / SIGBUS handler (the fault guard; on
 * unless this says no): what DPV_FAULT_GUARD (or fault_guard in the DPV_CONFIG file)
 * does for programs that ibv_get_device_list() starts, where those settings, when
 * given, win over this call.
 *
 * With the guard (@p on 1), the handler is installed for the whole process when the
 * first device opens. A fault inside the device's copy through registered memory (the
 * program unmapped it, or took rights from it, before ibv_dereg_mr()) then ends that
 * access with an error completion (IBV_WC_LOC_PROT_ERR, or a NAK the peer sees as
 * IBV_WC_REM_ACCESS_ERR), counted in "xport.mem_faults"; any other fault goes on to the
 * handler that was installed before dpverbs' (the default action if none). A handler
 * the program installs afterwards replaces dpverbs' and takes that protection away.
 * Without it (@p on 0), dpverbs installs no handler: the same fault is the process's,
 * as any bad access is (SIGSEGV or SIGBUS: by default the process ends).
 * doc/guides/memory.md has the details.
 *
 * Control thread, before the first dpv_verbs_open_port(): the choice holds for the
 * life of the process once a device has opened.
 * @param on 1: install the handler (the default); 0: install none
 * @return 0; EINVAL @p on neither 0 nor 1; EBUSY a device has opened already.
 */
int dpv_verbs_set_fault_guard(int on);

/** Counters of a device's engine (dpv_verbs_query_engine()). */
struct dpv_verbs_engine_stats {
	uint64_t polls;        /**< poll iterations, by any thread */
	uint64_t busy_polls;   /**< iterations that found work */
	uint64_t helper_polls; /**< iterations the helper thread ran (included in polls) */
};

/**
 * Read the engine counters of @p context's device (any thread; a snapshot).
 * @return 0; EINVAL @p stats NULL.
 */
int dpv_verbs_query_engine(struct ibv_context *context, struct dpv_verbs_engine_stats *stats);

/** One counter: its name ("qp.retrans_timeout", "port.tx_frames", ...) and value. */
struct dpv_verbs_xstat {
	char name[48];
	uint64_t value;
};

/**
 * Every counter of the device behind @p context, by name, as DPDK's xstats: the port
 * ("port.*": frames, TX backlog, ARP), the faults wrapper when DPV_FAULTS is set
 * ("faults.tx.*", "faults.rx.*"), the transport ("xport.*": frames, drops by reason,
 * refusals), the protocol counters summed over every QP the device ever had ("qp.*":
 * retransmits by cause, timeouts, duplicates, NAKs sent and received, flushed WRs) and
 * the engine ("engine.*"). doc/guides/reliability.md says what each counts. The names
 * and their order are the same on every call.
 *
 * Any thread. The values are read while the device runs: each is current, the set is
 * not one instant's.
 * @param xs  room for @p n counters (NULL when @p n is 0: ask for the count)
 * @return the number of counters, which may exceed @p n (then only @p n are written);
 *         -EINVAL if @p context is NULL or @p xs NULL with @p n not 0.
 */
int dpv_verbs_query_xstats(struct ibv_context *context, struct dpv_verbs_xstat *xs,
			   unsigned int n);

/**
 * The protocol counters of one QP ("qp.*", the same names as the device's sums), as
 * dpv_verbs_query_xstats(). Any thread, while the QP exists.
 * @return the number of counters; -EINVAL if @p qp is NULL or @p xs NULL with @p n
 *         not 0.
 */
int dpv_verbs_query_qp_xstats(struct ibv_qp *qp, struct dpv_verbs_xstat *xs, unsigned int n);

/** One CM id of a device (dpv_verbs_query_cm()): a listener, a connection in any
 *  state of IBTA 12.9, a SIDR request, or an address resolution under way
 *  (rdma_resolve_addr(): state "ADDR_QUERY", the address in peer_ipv4, the rest 0)
 *  (doc/guides/cm.md). */
struct dpv_verbs_cm_id {
	uint32_t id;          /**< local communication ID (a SIDR request's request ID, a
	                           resolution's ID) */
	uint32_t remote_id;   /**< the peer's communication ID, once known (0 before) */
	char state[16];       /**< "LISTEN", "REQ_SENT", "ESTABLISHED", "TIMEWAIT",
	                           "ADDR_QUERY", ... */
	uint8_t ud;           /**< 1: a SIDR request (UD id) */
	uint8_t retries;      /**< sends again of the MAD that awaits an answer */
	uint32_t peer_ipv4;   /**< the peer's address, host order; 0 for a listener */
	uint32_t listen_id;   /**< a passive connection's listener; 0 otherwise */
	uint64_t service_id;  /**< the IP port space and port (0x0106 << 16 | port: TCP) */
	uint32_t local_qpn;   /**< as the REQ, REP or SIDR_REP carried it; 0 before */
	uint32_t remote_qpn;
};

/**
 * The CM ids of @p context's device, in the order of their local IDs' table slots, then
 * its address resolutions under way (any thread: the device is held for the copy,
 * microseconds). A snapshot.
 * @param ids  room for @p n ids (NULL when @p n is 0: ask for the count)
 * @return the number of ids the device has, which may exceed @p n (then only @p n are
 *         written); -EINVAL if @p context is NULL or @p ids NULL with @p n not 0;
 *         -ENOMEM.
 */
int dpv_verbs_query_cm(struct ibv_context *context, struct dpv_verbs_cm_id *ids,
		       unsigned int n);

/*
 * Capture: every frame a device's port sends or receives, into a pcapng file that
 * tshark and Wireshark read (doc/guides/telemetry.md). What DPV_CAPTURE does for every
 * device of a verbs program, started and stopped while the device runs.
 */

/**
 * Start writing every frame the port of @p context's device sends or receives, from
 * now on, to a pcapng file at @p path (created, or truncated), stamped with the time
 * the device handled it and its direction. The frames are copied on the device's
 * owner thread and written in batches by a thread of the capture's own, so a slow file
 * never stalls the device: frames the writer cannot keep up with are dropped and
 * counted ("port.capture_dropped" in dpv_verbs_query_xstats()).
 *
 * Any thread but the device's owner (a console's thread, the program's control
 * thread): the device keeps running; the capture starts between two of its poll
 * iterations.
 * @return 0; EINVAL @p context or @p path NULL or @p path empty; EBUSY a capture of
 *         this device runs already (DPV_CAPTURE's, or an earlier call's); ENOMEM no
 *         memory for the capture's buffers (EAL memory: about 5 MiB); EAGAIN no thread
 *         for its writer; or the errno of creating or writing @p path (EACCES, ENOENT,
 *         ENOSPC...).
 */
int dpv_verbs_capture_start(struct ibv_context *context, const char *path);

/**
 * Stop the capture of @p context's device (dpv_verbs_capture_start()'s or
 * DPV_CAPTURE's): the device captures nothing more, every frame it captured (all it
 * sent and received, but those counted as dropped) is in the file when the call
 * returns, and the file is closed. A DPV_CAPTURE file that other devices still write
 * stays open until the last of them stops; this device's frames are written by then.
 *
 * Any thread but the device's owner, as dpv_verbs_capture_start().
 * @return 0; EINVAL @p context NULL; ENOENT no capture of this device runs; or the
 *         errno of a write to the file that failed while it ran (the frames from then
 *         on are missing from it).
 */
int dpv_verbs_capture_stop(struct ibv_context *context);

/*
 * Introspection of tag-matching SRQs: what the device holds, for a console, a debugger
 * or a test. Not for a fast path: each call takes the device from its engine for the
 * time it reads (as creating an object does).
 */

/** The state of a TM SRQ's tag list and phases (dpv_verbs_tm_query()). */
struct dpv_verbs_tm_state {
	uint32_t max_num_tags;    /**< tm_cap.max_num_tags it was created with */
	uint32_t max_ops;         /**< tm_cap.max_ops */
	uint32_t listed;          /**< entries in the tag list */
	uint32_t allocated;       /**< handles allocated (listed, and those whose end the
	                               application has not yet polled, or whose ADD the
	                               device has not yet run) */
	uint32_t ops_outstanding; /**< ops posted and not yet executed */
	uint32_t unexpected;      /**< U: messages the device deemed unexpected (doc/guides/tm.md) */
	uint32_t synced;          /**< S: the last count software reported with TM_SYNC */
	uint64_t adds;            /**< ADDs executed */
	uint64_t dels;            /**< DELs executed successfully */
	uint64_t del_errors;      /**< DELs that completed with IBV_WC_TM_ERR */
	uint64_t syncs;           /**< SYNC ops executed */
	uint64_t expected;        /**< messages matched to an entry */
	uint64_t unexpected_msgs; /**< messages deemed unexpected (U, 64 bits) */
	uint64_t no_tag;          /**< NO_TAG messages (and unknown TMH opcodes) */
	uint64_t rnr;             /**< messages refused for want of an ordinary SRQ WR */
};

/**
 * Read the phase counters and tag-list figures of TM SRQ @p srq.
 *
 * A control thread (the thread that creates objects), not one that is inside a verbs
 * call: the call waits until the device's engine finishes its current iteration and
 * holds the device while it reads, so the figures are one instant's.
 * @return 0; EINVAL @p srq or @p st NULL, or @p srq not a TM SRQ.
 */
int dpv_verbs_tm_query(struct ibv_srq *srq, struct dpv_verbs_tm_state *st);

/** One entry of a TM SRQ's tag list (dpv_verbs_tm_tags()). */
struct dpv_verbs_tm_tag {
	uint32_t handle;      /**< what IBV_WR_TAG_ADD returned in tm.handle */
	uint32_t need;        /**< U when the ADD executed: eligible once S reaches it */
	uint64_t seq;         /**< add order (0 for the device's first ADD of the SRQ) */
	uint64_t tag;
	uint64_t mask;
	uint64_t recv_wr_id;
	uint64_t addr;        /**< the first buffer: address, length, lkey */
	uint32_t length;
	uint32_t lkey;
	uint64_t total_length; /**< bytes of the whole scatter list */
	uint32_t num_sge;
	uint8_t eligible;     /**< 1: a message may match it now (S >= need) */
};

/**
 * The entries in the tag list of TM SRQ @p srq now (ADDs the device has run whose
 * entries are neither matched nor deleted), in handle order, from handle @p from on.
 * To read a long list in pieces, call again with @p from the last handle + 1.
 *
 * A control thread, as dpv_verbs_tm_query(); the call visits every handle up to the
 * last it reports (a million at most), holding the device meanwhile.
 * @param tags room for @p n entries
 * @return the number written (fewer than @p n: the list holds no more); -EINVAL if
 *         @p srq is NULL or not a TM SRQ, or @p tags NULL with @p n not 0.
 */
int dpv_verbs_tm_tags(struct ibv_srq *srq, uint32_t from, struct dpv_verbs_tm_tag *tags,
		      unsigned int n);

#ifdef __cplusplus
}
#endif

#endif /* DPV_VERBS_H */
