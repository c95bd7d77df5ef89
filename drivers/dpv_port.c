/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The driver registry and what every port does the same way: ARP (RFC 826) for its
 * IPv4 address and its neighbours.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rte_arp.h>
#include <rte_byteorder.h>
#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_ip.h>
#include <rte_mbuf_pool_ops.h>

#include "dpv_faults.h"
#include "dpv_port.h"

#define MAX_DRIVERS 8

/* dpv_port_set_link_wait(): read by the drivers' open. */
static uint32_t link_wait_ms;

/* The built-in drivers are named here, not registered from constructors, so a static
 * link pulls them in without whole-archive tricks. */
static const struct dpv_port_ops *drivers[MAX_DRIVERS] = {
	&dpv_ethdev_ops,
	&dpv_faults_ops,
};

void dpv_port_register(const struct dpv_port_ops *ops)
{
	for (unsigned int i = 0; i < MAX_DRIVERS; i++) {
		if (drivers[i] == NULL) {
			drivers[i] = ops;
			return;
		}
	}
}

const struct dpv_port_ops *dpv_port_driver(const char *name)
{
	for (unsigned int i = 0; i < MAX_DRIVERS && drivers[i] != NULL; i++)
		if (strcmp(drivers[i]->name, name) == 0)
			return drivers[i];
	return NULL;
}

int dpv_port_make_pool(struct dpv_port *port, unsigned int size, bool packed)
{
	struct rte_pktmbuf_pool_private priv = {
		.mbuf_data_room_size = RTE_MBUF_DEFAULT_BUF_SIZE,
		.mbuf_priv_size = 0,
	};
	char name[RTE_MEMPOOL_NAMESIZE];
	struct rte_mempool *mp;

	snprintf(name, sizeof(name), "dpv_%.20s", port->name);
	if (!packed) {
		port->pool = rte_pktmbuf_pool_create(name, size, 256, 0,
						     RTE_MBUF_DEFAULT_BUF_SIZE, port->socket);
		return port->pool != NULL ? 0 : ENOMEM;
	}
	/* Objects side by side (RTE_MEMPOOL_F_NO_IOVA_CONTIG: no gaps at page
	 * boundaries, for a port that does not DMA by physical address), in one chunk:
	 * exactly populated_size x object size from the first object on. */
	mp = rte_mempool_create_empty(name, size,
				      sizeof(struct rte_mbuf) + RTE_MBUF_DEFAULT_BUF_SIZE, 256,
				      sizeof(priv), port->socket, RTE_MEMPOOL_F_NO_IOVA_CONTIG);
	if (mp == NULL)
		return ENOMEM;
	if (rte_mempool_set_ops_byname(mp, rte_mbuf_best_mempool_ops(), NULL) != 0)
		goto fail;
	rte_pktmbuf_pool_init(mp, &priv);
	if (rte_mempool_populate_default(mp) < 0 || mp->nb_mem_chunks != 1 ||
	    mp->populated_size != size)
		goto fail;
	rte_mempool_obj_iter(mp, rte_pktmbuf_init, NULL);
	port->pool = mp;
	return 0;
fail:
	RTE_LOG(ERR, USER1, "dpverbs: %s: no single-chunk pool of %u mbufs for af_xdp "
		"(EAL memory too fragmented or too small: raise -m)\n", port->name, size);
	rte_mempool_free(mp);
	return ENOMEM;
}

int dpv_port_open(struct dpv_port *port, const char *driver, const char *args,
		  unsigned int pool_size)
{
	port->ops = dpv_port_driver(driver);
	if (port->ops == NULL)
		return ENODEV;
	return port->ops->open(port, args, pool_size);
}

void dpv_port_close(struct dpv_port *port)
{
	for (unsigned int i = 0; i < DPV_ARP_ENTRIES; i++) {
		struct dpv_arp_entry *e = &port->arp[i];

		rte_pktmbuf_free_bulk(e->hold, e->held);
		e->held = 0;
	}
	rte_pktmbuf_free_bulk(port->backlog, port->backlog_n);
	port->backlog_n = 0;
	if (port->capture != NULL)
		dpv_capture_remove(port->capture);
	port->capture = NULL;
	if (port->ops != NULL)
		port->ops->close(port);
	rte_mempool_free(port->pool);
	port->pool = NULL;
}

/* Copy frames into the capture before a PMD (a ring pair hands mbufs over) takes them. */
static void capture(struct dpv_port *port, struct rte_mbuf *const *pkts, uint16_t n, bool out)
{
	uint16_t queued = dpv_capture_frames(port->capture, pkts, n, out);

	port->stats.capture_frames += queued;
	port->stats.capture_dropped += n - queued;
}

static unsigned int arp_home(uint32_t ip)
{
	return (ip * 2654435761u) >> 24; /* 256 entries */
}

static struct dpv_arp_entry *arp_find(struct dpv_port *port, uint32_t ip)
{
	unsigned int h = arp_home(ip);

	for (unsigned int probe = 0; probe < DPV_ARP_ENTRIES; probe++) {
		struct dpv_arp_entry *e = &port->arp[(h + probe) % DPV_ARP_ENTRIES];

		if (e->ip == ip)
			return e;
		if (e->ip == 0)
			return NULL;
	}
	return NULL;
}

static uint64_t arp_lifetime(struct dpv_port *port)
{
	if (port->arp_lifetime_tsc == 0)
		port->arp_lifetime_tsc = rte_get_tsc_hz() / 1000 * DPV_ARP_LIFETIME_MS_DEFAULT;
	return port->arp_lifetime_tsc;
}

int dpv_port_set_arp_lifetime(struct dpv_port *port, uint32_t ms)
{
	if (ms == 0 || ms > DPV_ARP_LIFETIME_MS_MAX)
		return EINVAL;
	port->arp_lifetime_tsc = rte_get_tsc_hz() / 1000 * ms;
	return 0;
}

void dpv_port_set_link_wait(uint32_t ms)
{
	__atomic_store_n(&link_wait_ms, RTE_MIN(ms, DPV_LINK_WAIT_MS_MAX), __ATOMIC_RELAXED);
}

uint32_t dpv_port_link_wait(void)
{
	return __atomic_load_n(&link_wait_ms, __ATOMIC_RELAXED);
}

static bool arp_stale(struct dpv_port *port, const struct dpv_arp_entry *e, uint64_t now)
{
	return e->resolved && now - e->confirmed_tsc >= arp_lifetime(port);
}

/*
 * Free a slot that holds no frames. Lookups stop at the first free slot, so the entries
 * after it in the probe run move back into the hole when their home slot allows
 * (backward-shift deletion): no tombstones pile up under churn.
 */
static void arp_remove(struct dpv_port *port, struct dpv_arp_entry *e)
{
	unsigned int hole = (unsigned int)(e - port->arp), j = hole;

	memset(e, 0, sizeof(*e));
	for (;;) {
		struct dpv_arp_entry *n;
		unsigned int home;

		j = (j + 1) % DPV_ARP_ENTRIES;
		n = &port->arp[j];
		if (n->ip == 0)
			break;
		home = arp_home(n->ip);
		/* n may sit in the hole when the hole lies between n's home and n */
		if ((j - home + DPV_ARP_ENTRIES) % DPV_ARP_ENTRIES >=
		    (j - hole + DPV_ARP_ENTRIES) % DPV_ARP_ENTRIES) {
			port->arp[hole] = *n;
			memset(n, 0, sizeof(*n));
			hole = j;
		}
	}
	port->arp_n--;
}

/*
 * The entry to give up for a new neighbour: never one holding frames (they would be
 * lost); entries learned from a request for us and never used go first, since a flood
 * of spoofed requests makes exactly those; then the least recently used. @p stale_only:
 * only entries past their lifetime.
 */
static struct dpv_arp_entry *arp_victim(struct dpv_port *port, uint64_t now, bool stale_only)
{
	struct dpv_arp_entry *best = NULL;

	for (unsigned int i = 0; i < DPV_ARP_ENTRIES; i++) {
		struct dpv_arp_entry *e = &port->arp[i];

		if (e->ip == 0 || e->held != 0 || (stale_only && !arp_stale(port, e, now)))
			continue;
		if (best == NULL || (e->unsolicited && !best->unsolicited) ||
		    (e->unsolicited == best->unsolicited && e->used_tsc < best->used_tsc))
			best = e;
	}
	return best;
}

/*
 * A new entry for @p ip (not in the table). A full table gives up an entry to
 * arp_victim(): any for a neighbour we need (@p unsolicited false), only a stale one
 * for a sender that merely asked for us. @return the entry, or NULL.
 */
static struct dpv_arp_entry *arp_insert(struct dpv_port *port, uint32_t ip, uint64_t now,
					bool unsolicited)
{
	struct dpv_arp_entry *e;
	unsigned int h;

	if (port->arp_n == DPV_ARP_ENTRIES) {
		e = arp_victim(port, now, unsolicited);
		if (e == NULL) {
			if (unsolicited)
				port->stats.arp_ignored_unsolicited++;
			else
				port->stats.arp_table_full++;
			return NULL;
		}
		arp_remove(port, e);
		port->stats.arp_evicted++;
	}
	h = arp_home(ip);
	for (unsigned int probe = 0;; probe++) {
		e = &port->arp[(h + probe) % DPV_ARP_ENTRIES];
		if (e->ip == 0)
			break;
	}
	memset(e, 0, sizeof(*e));
	e->ip = ip;
	e->unsolicited = unsolicited;
	e->used_tsc = now;
	port->arp_n++;
	return e;
}

static void arp_send(struct dpv_port *port, uint16_t op, const struct rte_ether_addr *dst_mac,
		     uint32_t target_ip, const struct rte_ether_addr *target_mac)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(port->pool);
	struct rte_ether_hdr *eth;
	struct rte_arp_hdr *arp;

	if (m == NULL)
		return;
	/* Padded to Ethernet's 60-byte minimum: virtual ports do not pad for us. */
	eth = (struct rte_ether_hdr *)rte_pktmbuf_append(m, RTE_ETHER_MIN_LEN - RTE_ETHER_CRC_LEN);
	memset(eth, 0, RTE_ETHER_MIN_LEN - RTE_ETHER_CRC_LEN);
	arp = (struct rte_arp_hdr *)(eth + 1);
	rte_ether_addr_copy(dst_mac, &eth->dst_addr);
	rte_ether_addr_copy(&port->mac, &eth->src_addr);
	eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP);
	arp->arp_hardware = rte_cpu_to_be_16(RTE_ARP_HRD_ETHER);
	arp->arp_protocol = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	arp->arp_hlen = RTE_ETHER_ADDR_LEN;
	arp->arp_plen = 4;
	arp->arp_opcode = rte_cpu_to_be_16(op);
	rte_ether_addr_copy(&port->mac, &arp->arp_data.arp_sha);
	arp->arp_data.arp_sip = rte_cpu_to_be_32(port->ipv4);
	rte_ether_addr_copy(target_mac, &arp->arp_data.arp_tha);
	arp->arp_data.arp_tip = rte_cpu_to_be_32(target_ip);
	if (port->capture != NULL)
		capture(port, &m, 1, true);
	if (port->ops->tx_burst(port, &m, 1) == 1) {
		port->stats.tx_frames++;
		port->stats.tx_bursts++;
		if (op == RTE_ARP_OP_REQUEST)
			port->stats.arp_requests_sent++;
		else
			port->stats.arp_replies_sent++;
	} else {
		rte_pktmbuf_free(m);
		port->stats.tx_dropped++;
	}
}

static uint64_t arp_retry_gap(void)
{
	return rte_get_tsc_hz() / 1000 * DPV_ARP_RETRY_MS;
}

/* A retry of @p e may be due at @p at: the tick looks then, not before. */
static void arp_arm(struct dpv_port *port, uint64_t at)
{
	if (at < port->arp_due_tsc)
		port->arp_due_tsc = at;
}

static void arp_request(struct dpv_port *port, struct dpv_arp_entry *e, uint64_t now)
{
	static const struct rte_ether_addr bcast = {.addr_bytes = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff}};
	static const struct rte_ether_addr zero;

	e->last_request_tsc = now;
	arp_arm(port, now + arp_retry_gap());
	if (e->probes < UINT8_MAX)
		e->probes++;
	arp_send(port, RTE_ARP_OP_REQUEST, &bcast, e->ip, &zero);
}

/*
 * A stale entry: ask the MAC we know directly, as Linux's PROBE state does (RFC 1122
 * 2.3.2.1), every DPV_ARP_RETRY_MS; after DPV_ARP_PROBES unanswered the neighbour is
 * unresolved again and asked by broadcast, which also finds a peer that moved to
 * another MAC without telling us.
 */
static void arp_probe(struct dpv_port *port, struct dpv_arp_entry *e, uint64_t now)
{
	static const struct rte_ether_addr zero;

	if (e->probes != 0 && now - e->last_request_tsc < arp_retry_gap())
		return;
	if (e->probes == 0)
		port->stats.arp_expired++;
	if (e->probes == DPV_ARP_PROBES) {
		e->resolved = false;
		e->probes = 0;
		port->stats.arp_unreachable++;
		arp_request(port, e, now);
		return;
	}
	e->probes++;
	e->last_request_tsc = now;
	arp_arm(port, now + arp_retry_gap());
	arp_send(port, RTE_ARP_OP_REQUEST, &e->mac, e->ip, &zero);
}

bool dpv_port_backlog_flush(struct dpv_port *port)
{
	uint16_t sent;

	if (port->backlog_n == 0)
		return true;
	sent = port->ops->tx_burst(port, port->backlog, port->backlog_n);
	port->stats.tx_frames += sent;
	port->stats.tx_bursts += sent != 0;
	port->backlog_n -= sent;
	if (sent != 0 && port->backlog_n != 0)
		memmove(port->backlog, port->backlog + sent,
			port->backlog_n * sizeof(port->backlog[0]));
	return port->backlog_n == 0;
}

/* What the driver did not take of @p pkts (@p sent of @p n went out) waits in order
 * behind the backlog; only a full backlog drops. Out of line: a driver that takes the
 * whole burst never gets here. */
static __attribute__((noinline)) uint16_t
send_keep(struct dpv_port *port, struct rte_mbuf **pkts, uint16_t n, uint16_t sent)
{
	uint16_t keep = n - sent;

	if (keep > DPV_PORT_TX_BACKLOG - port->backlog_n)
		keep = DPV_PORT_TX_BACKLOG - port->backlog_n;
	memcpy(port->backlog + port->backlog_n, pkts + sent, keep * sizeof(pkts[0]));
	port->backlog_n += keep;
	port->stats.tx_deferred += keep;
	if (sent + keep < n) {
		port->stats.tx_dropped += n - sent - keep;
		rte_pktmbuf_free_bulk(pkts + sent + keep, n - sent - keep);
	}
	return sent;
}

/* A NIC's TX queue is full while its peer is slower than we are: new frames go behind
 * what the backlog still holds. */
static uint16_t send_now(struct dpv_port *port, struct rte_mbuf **pkts, uint16_t n)
{
	uint16_t sent;

	if (n == 0)
		return 0;
	if (unlikely(port->capture != NULL))
		capture(port, pkts, n, true);
	if (unlikely(port->backlog_n != 0) && !dpv_port_backlog_flush(port))
		return send_keep(port, pkts, n, 0);
	sent = port->ops->tx_burst(port, pkts, n);
	port->stats.tx_frames += sent;
	port->stats.tx_bursts += sent != 0;
	if (likely(sent == n))
		return sent;
	return send_keep(port, pkts, n, sent);
}

void dpv_port_link(struct dpv_port *port, bool *up, uint32_t *speed_mbps)
{
	port->ops->link(port, up, speed_mbps);
	if (*up || port->backlog_n == 0)
		return;
	port->stats.tx_link_down_drops += port->backlog_n;
	rte_pktmbuf_free_bulk(port->backlog, port->backlog_n);
	port->backlog_n = 0;
}

/* arp_use() for an entry @p e (arp_find()'s answer) that is missing, unresolved or
 * stale. */
static __attribute__((noinline)) struct dpv_arp_entry *
arp_use_slow(struct dpv_port *port, uint32_t ip, uint64_t now, struct dpv_arp_entry *e)
{
	if (e == NULL)
		e = arp_insert(port, ip, now, false);
	if (e == NULL)
		return NULL;
	e->used_tsc = now;
	e->unsolicited = false;
	if (e->resolved) {
		if (arp_stale(port, e, now))
			arp_probe(port, e, now);
		return e;
	}
	/* Ask again every DPV_ARP_RETRY_MS while someone keeps asking: a lost request or
	 * reply must not leave the neighbour unknown for good. */
	if (e->last_request_tsc == 0 ||
	    now - e->last_request_tsc >= arp_retry_gap())
		arp_request(port, e, now);
	return e;
}

/*
 * The entry a frame or a caller needs for @p ip: found, or made (arp_insert()); marks it
 * used, asks again for a stale or unresolved one. @return the entry (its MAC valid when
 * resolved), or NULL when the table has no room. Every frame sent asks: a neighbour
 * resolved and fresh, the common answer, is found and marked without a call.
 */
static inline struct dpv_arp_entry *arp_use(struct dpv_port *port, uint32_t ip, uint64_t now)
{
	struct dpv_arp_entry *e = arp_find(port, ip);

	if (likely(e != NULL && e->resolved && !arp_stale(port, e, now))) {
		e->used_tsc = now;
		e->unsolicited = false;
		return e;
	}
	return arp_use_slow(port, ip, now, e);
}

uint32_t dpv_port_tx_room(struct dpv_port *port, uint32_t dst_ip)
{
	struct rte_ether_addr mac;
	struct dpv_arp_entry *e;
	uint32_t room;

	if (unlikely(port->backlog_n != 0) && !dpv_port_backlog_flush(port))
		return 0;
	room = DPV_PORT_TX_BACKLOG;
	/* A neighbour resolved and asked for before, the common answer, has room without
	 * a clock read: the frames sent to it mark it used and find it stale
	 * (dpv_port_tx()'s arp_use()). Anything else asks ARP here, so that a first
	 * request goes out before a frame waits. */
	e = arp_find(port, dst_ip);
	if (likely(e != NULL && e->resolved && !e->unsolicited))
		return room;
	if (!dpv_port_resolve(port, dst_ip, &mac)) {
		e = arp_find(port, dst_ip);
		room = e != NULL ? DPV_ARP_HOLD - e->held : 0;
	}
	return room;
}

/* The neighbour of @p e sent ARP: it is there, at @p mac; what waited for it leaves. */
static void arp_confirm(struct dpv_port *port, struct dpv_arp_entry *e,
			const struct rte_ether_addr *mac, uint64_t now)
{
	if (!e->resolved || !rte_is_same_ether_addr(&e->mac, mac)) {
		if (e->resolved)
			port->stats.arp_mac_changed++;
		rte_ether_addr_copy(mac, &e->mac);
		e->resolved = true;
		port->stats.arp_learned++;
	}
	e->confirmed_tsc = now;
	e->probes = 0;
	for (unsigned int i = 0; i < e->held; i++)
		rte_ether_addr_copy(mac, &rte_pktmbuf_mtod(e->hold[i], struct rte_ether_hdr *)->dst_addr);
	send_now(port, e->hold, e->held);
	e->held = 0;
}

static void arp_input(struct dpv_port *port, struct rte_mbuf *m)
{
	const struct rte_arp_hdr *arp;
	struct dpv_arp_entry *e;
	uint32_t sip, tip;
	uint64_t now;
	bool request;

	if (rte_pktmbuf_data_len(m) < sizeof(struct rte_ether_hdr) + sizeof(*arp)) {
		port->stats.arp_invalid++;
		return;
	}
	arp = rte_pktmbuf_mtod_offset(m, const struct rte_arp_hdr *, sizeof(struct rte_ether_hdr));
	if (arp->arp_hardware != rte_cpu_to_be_16(RTE_ARP_HRD_ETHER) ||
	    arp->arp_protocol != rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4) ||
	    arp->arp_hlen != RTE_ETHER_ADDR_LEN || arp->arp_plen != 4) {
		port->stats.arp_invalid++;
		return;
	}
	sip = rte_be_to_cpu_32(arp->arp_data.arp_sip);
	tip = rte_be_to_cpu_32(arp->arp_data.arp_tip);
	request = arp->arp_opcode == rte_cpu_to_be_16(RTE_ARP_OP_REQUEST);
	/* A sender claiming our address or a group MAC is never a neighbour; sender 0 is a
	 * host probing for an address (RFC 5227), answered and not learned. */
	if (sip == port->ipv4 || !rte_is_unicast_ether_addr(&arp->arp_data.arp_sha)) {
		port->stats.arp_invalid++;
		return;
	}
	if (sip != 0) {
		now = rte_get_tsc_cycles();
		e = arp_find(port, sip);
		/* RFC 826 merges a known sender from any ARP; an unknown one is added only
		 * when it asks for us (we are about to talk to it), and then only into room
		 * that costs no other neighbour a fresh entry, so spoofed senders cannot
		 * push out the peers we talk to. */
		if (e == NULL && request && tip == port->ipv4)
			e = arp_insert(port, sip, now, true);
		else if (e == NULL)
			port->stats.arp_ignored_unsolicited++;
		if (e != NULL)
			arp_confirm(port, e, &arp->arp_data.arp_sha, now);
	}
	if (request && tip == port->ipv4)
		arp_send(port, RTE_ARP_OP_REPLY, &arp->arp_data.arp_sha, sip,
			 &arp->arp_data.arp_sha);
}

/* A received frame that is not IPv4: ARP is answered and learned from, anything else
 * counted; freed either way. Out of line, so that a burst of IPv4 frames pays nothing
 * for ARP. */
static __attribute__((noinline)) void rx_other(struct dpv_port *port, struct rte_mbuf *m)
{
	if (rte_pktmbuf_data_len(m) >= sizeof(struct rte_ether_hdr) &&
	    rte_pktmbuf_mtod(m, struct rte_ether_hdr *)->ether_type ==
		    rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP))
		arp_input(port, m);
	else
		port->stats.rx_not_ipv4++;
	rte_pktmbuf_free(m);
}

uint16_t dpv_port_rx_sort(struct dpv_port *port, struct rte_mbuf **pkts, uint16_t got)
{
	uint16_t kept = 0;

	port->stats.rx_frames += got;
	port->stats.rx_bursts++;
	if (unlikely(port->capture != NULL))
		capture(port, pkts, got, false);
	for (uint16_t i = 0; i < got; i++) {
		struct rte_mbuf *m = pkts[i];

		if (likely(rte_pktmbuf_data_len(m) >= sizeof(struct rte_ether_hdr) &&
			   rte_pktmbuf_mtod(m, struct rte_ether_hdr *)->ether_type ==
				   rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4)))
			pkts[kept++] = m;
		else
			rx_other(port, m);
	}
	return kept;
}

bool dpv_port_resolve(struct dpv_port *port, uint32_t ip, struct rte_ether_addr *mac)
{
	struct dpv_arp_entry *e;

	if (ip == port->ipv4) {
		rte_ether_addr_copy(&port->mac, mac);
		return true;
	}
	e = arp_use(port, ip, rte_get_tsc_cycles());
	if (e == NULL || !e->resolved)
		return false;
	rte_ether_addr_copy(&e->mac, mac);
	return true;
}

uint16_t dpv_port_tx(struct dpv_port *port, struct rte_mbuf **pkts, uint16_t n)
{
	uint64_t now = rte_get_tsc_cycles();
	uint16_t ready = 0;

	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
		const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)(eth + 1);
		uint32_t dst = rte_be_to_cpu_32(ip->dst_addr);
		struct dpv_arp_entry *e;

		if (dst == port->ipv4) {
			rte_ether_addr_copy(&port->mac, &eth->dst_addr);
			pkts[ready++] = m;
			continue;
		}
		e = arp_use(port, dst, now);
		if (e != NULL && e->resolved) {
			rte_ether_addr_copy(&e->mac, &eth->dst_addr);
			pkts[ready++] = m;
		} else if (e != NULL && e->held < DPV_ARP_HOLD) {
			/* The request went out before anything was held: its retry is due
			 * now that a frame waits for it. */
			if (e->held == 0)
				arp_arm(port, e->last_request_tsc + arp_retry_gap());
			e->hold[e->held++] = m;
		} else {
			port->stats.arp_unresolved_drops++;
			rte_pktmbuf_free(m);
		}
	}
	return send_now(port, pkts, ready);
}

void dpv_port_arp_tick(struct dpv_port *port, uint64_t now_tsc)
{
	uint64_t gap, next = UINT64_MAX;

	if (now_tsc < port->arp_due_tsc)
		return;
	gap = arp_retry_gap();
	for (unsigned int i = 0; i < DPV_ARP_ENTRIES; i++) {
		struct dpv_arp_entry *e = &port->arp[i];

		if (e->ip == 0)
			continue;
		if (!e->resolved && e->held > 0 && now_tsc - e->last_request_tsc >= gap) {
			if (e->probes < DPV_ARP_SOLICIT) {
				arp_request(port, e, now_tsc);
			} else {
				/* Nobody answers: what waits is dropped, not kept for good, and
				 * the entry (holding nothing now) may give its slot to another. */
				port->stats.arp_unresolved_drops += e->held;
				rte_pktmbuf_free_bulk(e->hold, e->held);
				e->held = 0;
				e->probes = 0;
			}
		} else if (e->resolved && e->probes > 0) {
			arp_probe(port, e, now_tsc);
		}
		/* What still waits for an answer is looked at again a retry later. */
		if ((!e->resolved && e->held > 0) || (e->resolved && e->probes > 0))
			next = RTE_MIN(next, e->last_request_tsc + gap);
	}
	port->arp_due_tsc = next;
}
