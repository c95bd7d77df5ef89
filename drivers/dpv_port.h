/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * dpv_port: the one interface between the device and a wire.
 *
 * A port moves bursts of rte_mbuf frames in and out, has a MAC and an IPv4 address,
 * answers ARP for its address and resolves its neighbours' MACs with ARP. Drivers
 * register an ops table by name (ethdev: any rte_ethdev port; faults: a fault-injecting
 * wrapper around another port, dpv_faults.h); DPDK's ethdev owns the hardware
 * underneath (VFIO, BARs, interrupts).
 *
 * Threads: dpv_port_open()/close() from a control thread while no one polls the port.
 * Everything else only from the port's owner thread (the device engine): no locks.
 */
#ifndef DPV_PORT_H
#define DPV_PORT_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_ether.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "dpv_capture.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Neighbours a port remembers. */
#define DPV_ARP_ENTRIES 256u
/** Frames a port holds per unresolved neighbour while ARP runs. */
#define DPV_ARP_HOLD 16u
/** Milliseconds between ARP requests for a neighbour that has not answered. */
#define DPV_ARP_RETRY_MS 200u
/**
 * Broadcast requests a neighbour may leave unanswered while frames wait for it; at the
 * next one due, the frames are dropped (port.arp_unresolved_drops) instead, as Linux's
 * FAILED state drops its queue: about 3 s. A frame sent to it later asks again.
 */
#define DPV_ARP_SOLICIT 15u
/**
 * Milliseconds a neighbour's MAC is trusted after the neighbour last sent us ARP (Linux's
 * base_reachable_time). An entry older than that is stale: it is still used, and asked
 * again (DPV_ARP_PROBES unicast requests, DPV_ARP_RETRY_MS apart) before it is dropped.
 */
#define DPV_ARP_LIFETIME_MS_DEFAULT 30000u
/** The longest lifetime dpv_port_set_arp_lifetime() takes: a day. */
#define DPV_ARP_LIFETIME_MS_MAX 86400000u
/** Unanswered unicast requests after which a stale neighbour is unresolved again. */
#define DPV_ARP_PROBES 3u
/** Frames a port keeps when its driver's TX queue is full, to send on the next call. */
#define DPV_PORT_TX_BACKLOG 256u
/**
 * Milliseconds ibv_open_device() waits for a port's link, by default: long enough for
 * two programs started by hand, one after the other, over a link that comes up only
 * when both ends run (a memif server waits for its client).
 */
#define DPV_LINK_WAIT_MS_DEFAULT 10000u
/** The longest wait dpv_port_set_link_wait() takes: ten minutes. */
#define DPV_LINK_WAIT_MS_MAX 600000u

struct dpv_port;

/** What a driver implements. */
struct dpv_port_ops {
	const char *name;
	/**
	 * Open from a driver-specific argument string: fill port->mac, mtu, socket and
	 * make the pool with dpv_port_make_pool() once the socket is known.
	 */
	int (*open)(struct dpv_port *port, const char *args, unsigned int pool_size);
	uint16_t (*rx_burst)(struct dpv_port *port, struct rte_mbuf **pkts, uint16_t n);
	uint16_t (*tx_burst)(struct dpv_port *port, struct rte_mbuf **pkts, uint16_t n);
	/** Link state now: up, speed in Mb/s (0 when the port cannot tell). */
	void (*link)(struct dpv_port *port, bool *up, uint32_t *speed_mbps);
	void (*close)(struct dpv_port *port);
};

/** Port counters (owner thread writes; others may read a stale snapshot). */
struct dpv_port_stats {
	uint64_t rx_frames, tx_frames;
	/** driver bursts that moved at least one frame: frames per burst is how well
	 *  the device batches what it hands the port */
	uint64_t rx_bursts, tx_bursts;
	uint64_t tx_dropped;   /**< frames lost: the TX backlog was full */
	uint64_t tx_deferred;  /**< frames the TX queue refused, kept in the backlog */
	/** frames the backlog held when the link was seen down (dpv_port_link()): dropped,
	 *  not sent to whoever is on the link when it returns */
	uint64_t tx_link_down_drops;
	uint64_t rx_not_ipv4;  /**< frames neither ARP nor IPv4: dropped */
	uint64_t arp_requests_sent, arp_replies_sent;
	uint64_t arp_learned;          /**< neighbours resolved, or whose MAC changed */
	uint64_t arp_unresolved_drops; /**< frames dropped when ARP hold or table ran out */
	uint64_t arp_invalid;          /**< ARP frames malformed or naming a bogus sender */
	/** ARP from an unknown sender not taken into the table: a reply or gratuitous ARP
	 *  we did not ask for, a request for another address, or a request for ours while
	 *  no slot was free or stale */
	uint64_t arp_ignored_unsolicited;
	uint64_t arp_mac_changed;      /**< a known neighbour announced another MAC */
	uint64_t arp_expired;          /**< entries used past their lifetime: asked again */
	uint64_t arp_unreachable;      /**< stale entries that did not answer: unresolved */
	uint64_t arp_evicted;          /**< entries dropped to make room for another */
	uint64_t arp_table_full;       /**< a neighbour needed a slot and every entry held frames */
	uint64_t capture_frames;       /**< frames copied into a capture (dpv_capture.h) */
	uint64_t capture_dropped;      /**< frames a capture could not keep up with */
};

/** A neighbour; the table is open-addressed by IPv4 address, ip 0 marks a free slot. */
struct dpv_arp_entry {
	uint32_t ip;
	struct rte_ether_addr mac;
	bool resolved;
	bool unsolicited;          /**< learned from a request for us, never used since */
	uint8_t held;
	uint8_t probes;            /**< requests unanswered: unicast ones since the entry
	                                went stale, or broadcast ones while unresolved */
	uint64_t last_request_tsc;
	uint64_t confirmed_tsc;    /**< when the neighbour last sent us ARP */
	uint64_t used_tsc;         /**< when a frame or a caller last asked for it (LRU) */
	struct rte_mbuf *hold[DPV_ARP_HOLD];
};

struct dpv_port {
	const struct dpv_port_ops *ops;
	void *priv;               /**< the driver's */
	char name[32];            /**< dpv0, dpv1... */
	uint16_t ethdev_port;     /**< DPDK port id (ethdev driver) */
	int socket;               /**< NUMA node of the port */
	uint16_t mtu;             /**< IP MTU of the link */
	struct rte_ether_addr mac;
	uint32_t ipv4;            /**< host order */
	struct rte_mempool *pool; /**< mbufs on the port's socket */
	struct dpv_port_stats stats;
	/** When set, every frame sent or received is copied here (dpv_capture.h). Set and
	 *  cleared by the owner thread, or by a control thread that owns the device. */
	struct dpv_capture_source *capture;
	struct dpv_arp_entry arp[DPV_ARP_ENTRIES];
	uint16_t arp_n;            /**< entries in use */
	uint64_t arp_lifetime_tsc; /**< 0: DPV_ARP_LIFETIME_MS_DEFAULT */
	/** The earliest an ARP retry can be due (0: look at the next tick); past it,
	 *  dpv_port_arp_tick() scans the table and sets it again. */
	uint64_t arp_due_tsc;
	uint16_t backlog_n;       /**< frames in backlog, oldest first */
	struct rte_mbuf *backlog[DPV_PORT_TX_BACKLOG];
};

/** The ethdev driver: any rte_ethdev port, by DPDK port id. */
extern const struct dpv_port_ops dpv_ethdev_ops;

/** Register another driver (before opening its ports); names are unique. */
void dpv_port_register(const struct dpv_port_ops *ops);

/** The registered driver of that name, or NULL. */
const struct dpv_port_ops *dpv_port_driver(const char *name);

/**
 * Open a port with a driver.
 * @param port     zeroed by the caller; name, ipv4 set by the caller
 * @param driver   "ethdev" or "faults"
 * @param args     driver's arguments ("ethdev": the DPDK port id; "faults":
 *                 <spec>@<driver>:<arguments>, dpv_faults.h)
 * @param pool_size mbufs in the port's pool
 * @return 0; ENODEV unknown driver or port; EINVAL bad arguments; ENOMEM no pool;
 *         ECONNREFUSED a memif client that no server took (none listening on its
 *         socket within dpv_port_set_link_wait()'s time); or the driver's errno.
 */
int dpv_port_open(struct dpv_port *port, const char *driver, const char *args,
		  unsigned int pool_size);

/**
 * For drivers: create port->pool with @p size mbufs on port->socket. @p packed: the
 * objects side by side in a single memory chunk, for a port that registers the pool's
 * span with the kernel (af_xdp) and does not DMA by physical address.
 * @return 0 or ENOMEM (for a packed pool, with a message when EAL's memory holds no
 *         single chunk that large)
 */
int dpv_port_make_pool(struct dpv_port *port, unsigned int size, bool packed);

/**
 * Create two ethdev ports joined back to back by two rte_rings, so what one sends the
 * other receives: two devices in one process without a kernel or a socket (a memif
 * pair cannot meet within one process in DPDK 22.11: both ends share one socket
 * object there).
 * @param name    unique name stem ("pair0": ports pair0_a and pair0_b)
 * @param socket  NUMA node for the rings
 * @param[out] a, b  their ethdev port ids
 * @return 0; EEXIST name in use; ENOMEM.
 */
int dpv_port_ring_pair(const char *name, int socket, uint16_t *a, uint16_t *b);

/** Close a port: frees held frames and the pool, removes its capture source. */
void dpv_port_close(struct dpv_port *port);

/** The part of dpv_port_rx() after the driver's burst, for the @p got frames it
 *  returned (at least one). Owner thread. @return frames kept in @p pkts */
uint16_t dpv_port_rx_sort(struct dpv_port *port, struct rte_mbuf **pkts, uint16_t got);
/** Hand the backlog's frames to the driver, oldest first (part of dpv_port_rx() and
 *  dpv_port_tx()). Owner thread. @return whether the backlog is empty now */
bool dpv_port_backlog_flush(struct dpv_port *port);

/**
 * Receive IPv4 frames: ARP frames are answered and learned from and not returned;
 * anything else that is not IPv4 is dropped and counted.
 * What ARP may change in the table: any ARP from a known neighbour (a reply, a request,
 * a gratuitous ARP) refreshes its entry and takes its MAC; an unknown sender is added
 * only by a request for our address, and only into a free slot or over a stale entry
 * that holds no frames; anything else from an unknown sender is counted
 * (arp_ignored_unsolicited) and not learned. Received IPv4 frames do not refresh entries.
 * Owner thread. Inline: most polls of a busy-polling device find nothing, and then
 * cost only the driver's burst, without a call of their own.
 * @return frames in @p pkts (the caller frees them)
 */
static inline uint16_t dpv_port_rx(struct dpv_port *port, struct rte_mbuf **pkts, uint16_t n)
{
	uint16_t got;

	if (__builtin_expect(port->backlog_n != 0, 0))
		dpv_port_backlog_flush(port);
	got = port->ops->rx_burst(port, pkts, n);
	return got == 0 ? 0 : dpv_port_rx_sort(port, pkts, got);
}

/**
 * Send IPv4 frames whose Ethernet destination is to be resolved: each frame's
 * destination MAC is filled from the ARP table from its IPv4 destination; frames to
 * neighbours not yet resolved are held (DPV_ARP_HOLD per neighbour) and an ARP
 * request goes out; they leave when the reply arrives. Frames the driver's TX queue
 * refuses wait in the port's backlog (DPV_PORT_TX_BACKLOG) and go first on the next
 * call, or the next dpv_port_rx(). The port takes ownership of every frame: sent,
 * held, kept, or freed and counted (tx_dropped, arp_unresolved_drops).
 * @return frames sent now
 */
uint16_t dpv_port_tx(struct dpv_port *port, struct rte_mbuf **pkts, uint16_t n);

/**
 * The link state now, from the driver (owner thread): @p up, and the speed in Mb/s (0
 * when the driver cannot tell). A link seen down drops the frames the TX backlog holds
 * and counts them (tx_link_down_drops): they were meant for the peer that was there,
 * and the peer when the link returns may be another one, or one that has forgotten
 * the connection they belong to. The transport resends what a reliable peer misses.
 */
void dpv_port_link(struct dpv_port *port, bool *up, uint32_t *speed_mbps);

/**
 * How many frames to @p dst_ip (host order) dpv_port_tx() takes now without dropping
 * any: 0 while the TX backlog holds frames the driver has not taken yet (the port's
 * back-pressure: a sender waits and asks again), else the room in the backlog, or,
 * while the neighbour is unresolved, the room in its ARP hold (and an ARP request goes
 * out, as dpv_port_resolve()). A neighbour resolved and in use is answered without a
 * clock read: its frames' dpv_port_tx() marks it used and asks again when it is stale.
 * Owner thread.
 */
uint32_t dpv_port_tx_room(struct dpv_port *port, uint32_t dst_ip);

/**
 * Re-send ARP requests for neighbours still unresolved that hold frames, and the unicast
 * requests of stale neighbours being asked again (call from the poll loop). Before the
 * earliest retry is due it returns after one comparison: nothing is scanned while no
 * neighbour waits for an answer. Owner thread.
 */
void dpv_port_arp_tick(struct dpv_port *port, uint64_t now_tsc);

/**
 * MAC of a neighbour if known. A neighbour not in the table gets an entry: a free slot,
 * or else the least recently used entry that holds no frames is evicted (entries learned
 * from a request for us and never used first; arp_evicted), so a full table never stops
 * a new neighbour from being resolved; when every entry holds frames, arp_table_full.
 * A stale entry (older than the ARP lifetime) is still returned while it is asked again.
 * @return true and @p mac set, or false (an ARP request goes out when none went out in
 *         the last DPV_ARP_RETRY_MS, so a caller that keeps asking recovers from loss)
 */
bool dpv_port_resolve(struct dpv_port *port, uint32_t ip, struct rte_ether_addr *mac);

/**
 * How long a neighbour's MAC is trusted after its last ARP (DPV_ARP_LIFETIME_MS_DEFAULT
 * until set); entries already in the table age by the new lifetime from now on.
 * Owner thread, or a control thread while nobody polls the port.
 * @param ms  1..DPV_ARP_LIFETIME_MS_MAX
 * @return 0, or EINVAL for @p ms out of range (the lifetime is unchanged)
 */
int dpv_port_set_arp_lifetime(struct dpv_port *port, uint32_t ms);

/**
 * How long opening a port waits for its link to come up, for the ports opened from now
 * on (0, the default: only the driver's own 100 ms). The open returns as soon as the
 * link is up, and opens the port whether it came up or not. A control thread, before
 * it opens ports; an open on another thread at the same time may see either value.
 * @param ms  0..DPV_LINK_WAIT_MS_MAX; more is taken as the maximum
 */
void dpv_port_set_link_wait(uint32_t ms);

/** What dpv_port_set_link_wait() set (any thread). */
uint32_t dpv_port_link_wait(void);

#ifdef __cplusplus
}
#endif

#endif /* DPV_PORT_H */
