/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The connection manager of a device: lib/cm's state machines and table over the
 * transport's GSI. Received MADs are unpacked, routed and fed to their connection in
 * the GSI handler (owner thread); the control calls of dpv_engine.h take the device
 * and drive the same connections. Whatever a call gives back (a MAD, an event) is
 * handled by one function, cm_out(), and a connection that has returned to IDLE is
 * freed there, after its last event. Address resolutions (dpv_dev_cm_resolve()) are
 * the device's too: a small table of their own, looked at from the same timers.
 */
#include <errno.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_malloc.h>

#include "dpv_cm_ip.h"
#include "dpv_engine_cm.h"

struct cm_conn {
	struct dpv_cm_conn c;  /* first: the table's pointer is the connection's */
	uint32_t peer_ip;
	uint32_t listen_id;    /* a passive connection's listener */
	uint32_t next_free;    /* index of the next free connection, with used false */
	bool used;
	bool ud;               /* a SIDR request's */
};

/* How often a resolution under way looks at the port's ARP table: an answer is seen
 * this long after it came, at the latest, while the device is driven. */
#define RESOLVE_LOOK_US 1000u

/* An address resolution under way (id 0: a free slot). */
struct cm_resolve {
	uint32_t id;
	uint32_t ip;
	uint64_t deadline_tsc;
};

struct dpv_dev_cm {
	struct dpv_cm_table table;
	struct dpv_dev_cm_timing timing;
	uint64_t guid;
	uint64_t hz;
	uint32_t free_head;    /* DPV_DEV_CM_MAX: none free */
	uint32_t ev_head, ev_tail;
	dpv_dev_cm_notify_fn *notify;  /* dpv_dev_cm_set_notify() */
	void *notify_arg;
	bool removed;          /* the port was removed: nothing starts, MADs are dropped */
	bool rmv_registered;   /* the ethdev's RTE_ETH_EVENT_INTR_RMV callback is ours */
	uint32_t resolve_seq;  /* the last resolution's ID */
	struct cm_resolve resolve[DPV_DEV_CM_RESOLVES];
	struct cm_conn conns[DPV_DEV_CM_MAX];
	struct dpv_dev_cm_event ev[DPV_DEV_CM_EVENTS];
	/* then the table's memory (dpv_cm_table_memsize()) */
};

/* The CM's clock: nanoseconds of the TSC, so the poll loop compares TSC values only. */
static uint64_t tsc_ns(const struct dpv_dev_cm *cm, uint64_t tsc)
{
	return (uint64_t)((unsigned __int128)tsc * 1000000000u / cm->hz);
}

/* The first TSC value whose tsc_ns() is at least @p ns. */
static uint64_t ns_tsc(const struct dpv_dev_cm *cm, uint64_t ns)
{
	unsigned __int128 t = ((unsigned __int128)ns * cm->hz + 999999999u) / 1000000000u;

	return t > UINT64_MAX ? UINT64_MAX : (uint64_t)t;
}

static uint64_t now_ns(const struct dpv_dev_cm *cm)
{
	return tsc_ns(cm, rte_get_tsc_cycles());
}

/* The node GUID of RoCE: the port MAC as a modified EUI-64, as Linux gives a RoCE
 * device. */
static uint64_t mac_guid(const struct rte_ether_addr *mac)
{
	const uint8_t *b = mac->addr_bytes;

	return (uint64_t)(b[0] ^ 2u) << 56 | (uint64_t)b[1] << 48 | (uint64_t)b[2] << 40 |
	       (uint64_t)0xfffe << 24 | (uint64_t)b[3] << 16 | (uint64_t)b[4] << 8 | b[5];
}

static struct cm_conn *conn_new(struct dpv_dev_cm *cm)
{
	struct dpv_cm_params prm = {
		.local_ca_guid = cm->guid,
		.packet_life_time = cm->timing.packet_life_time,
		.timewait_ns = cm->timing.timewait_ns,
		.mra_timeout = DPV_DEV_CM_MRA_TIMEOUT,
	};
	struct cm_conn *k;

	if (cm->free_head == DPV_DEV_CM_MAX)
		return NULL;
	k = &cm->conns[cm->free_head];
	cm->free_head = k->next_free;
	dpv_cm_init(&k->c, &prm);
	/* The table has a slot for every connection of the pool: the add cannot fail. */
	(void)dpv_cm_table_add(&cm->table, &k->c);
	k->peer_ip = 0;
	k->listen_id = 0;
	k->used = true;
	k->ud = false;
	return k;
}

static void conn_free(struct dpv_dev_cm *cm, struct cm_conn *k)
{
	(void)dpv_cm_table_remove(&cm->table, &k->c);
	k->used = false;
	k->next_free = cm->free_head;
	cm->free_head = (uint32_t)(k - cm->conns);
}

static struct cm_conn *conn_find(struct dpv_dev_cm *cm, uint32_t id)
{
	return (struct cm_conn *)dpv_cm_table_find(&cm->table, id);
}

static void mad_send(struct dpv_dev *dev, uint32_t ip, const struct dpv_cm_msg *m)
{
	uint8_t mad[DPV_CM_MAD_LEN];

	/* lib/cm hands out only MADs that pack. */
	if (dpv_cm_pack(m, mad) != 0 ||
	    dpv_xport_gsi_send(dev->xport, ip, mad, DPV_CM_MAD_LEN) != 0)
		dev->stats.cm_tx_failed++;
}

static void pdata(struct dpv_dev_cm_event *e, const uint8_t *p, uint8_t len)
{
	memcpy(e->private_data, p, len);
	e->private_data_len = len;
}

static void event_put(struct dpv_dev *dev, const struct cm_conn *k, const struct dpv_cm_out *o)
{
	struct dpv_dev_cm *cm = dev->cm;
	const struct dpv_cm_msg *m = o->msg;
	struct dpv_dev_cm_event *e;

	if (cm->ev_tail - cm->ev_head == DPV_DEV_CM_EVENTS) {
		dev->stats.cm_events_lost++;
		return;
	}
	e = &cm->ev[cm->ev_tail++ % DPV_DEV_CM_EVENTS];
	memset(e, 0, sizeof(*e));
	e->type = o->event;
	e->id = k->c.local_id;
	e->listen_id = k->listen_id;
	e->peer_ip = k->peer_ip;
	e->service_id = k->c.service_id;
	e->rej_reason = o->rej_reason;
	e->ud = k->ud;
	if (m == NULL)
		return;
	switch (m->hdr.attr_id) {
	case DPV_CM_ATTR_REQ:
		e->remote_qpn = m->req.local_qpn;
		e->remote_psn = m->req.starting_psn;
		e->responder_resources = m->req.responder_resources;
		e->initiator_depth = m->req.initiator_depth;
		pdata(e, m->req.private_data, DPV_CM_REQ_PDATA_LEN);
		break;
	case DPV_CM_ATTR_REP:
		e->remote_qpn = m->rep.local_qpn;
		e->remote_psn = m->rep.starting_psn;
		e->responder_resources = m->rep.responder_resources;
		e->initiator_depth = m->rep.initiator_depth;
		pdata(e, m->rep.private_data, DPV_CM_REP_PDATA_LEN);
		break;
	case DPV_CM_ATTR_REJ:
		pdata(e, m->rej.private_data, DPV_CM_REJ_PDATA_LEN);
		break;
	case DPV_CM_ATTR_SIDR_REQ:
		pdata(e, m->sidr_req.private_data, DPV_CM_SIDR_REQ_PDATA_LEN);
		break;
	case DPV_CM_ATTR_SIDR_REP:
		if (m->sidr_rep.status == DPV_CM_SIDR_SUCCESS) {
			e->remote_qpn = m->sidr_rep.qpn;
			e->remote_qkey = m->sidr_rep.qkey;
		} else {
			e->sidr_status = m->sidr_rep.status;
		}
		pdata(e, m->sidr_rep.private_data, DPV_CM_SIDR_REP_PDATA_LEN);
		break;
	default:
		break;
	}
}

/* Queue an event of the device's own (no connection's) and tell the consumer. */
static void event_dev(struct dpv_dev *dev, enum dpv_cm_event type, uint32_t id, uint32_t ip)
{
	struct dpv_dev_cm *cm = dev->cm;
	struct dpv_dev_cm_event *e;

	if (cm->ev_tail - cm->ev_head == DPV_DEV_CM_EVENTS) {
		dev->stats.cm_events_lost++;
	} else {
		e = &cm->ev[cm->ev_tail++ % DPV_DEV_CM_EVENTS];
		memset(e, 0, sizeof(*e));
		e->type = type;
		e->id = id;
		e->peer_ip = ip;
	}
	if (cm->notify != NULL)
		cm->notify(cm->notify_arg);
}

static void next_deadline(struct dpv_dev *dev, const struct cm_conn *k)
{
	uint64_t d = dpv_cm_deadline(&k->c);

	if (d != DPV_CM_NO_DEADLINE && ns_tsc(dev->cm, d) < dev->cm_next_tsc)
		dev->cm_next_tsc = ns_tsc(dev->cm, d);
}

/* What a call of lib/cm gave for @p k: the MAD out, the event, the connection's end. */
static void cm_out(struct dpv_dev *dev, struct cm_conn *k, const struct dpv_cm_out *o)
{
	if (o->send)
		mad_send(dev, k->peer_ip, &o->mad);
	if (o->event != DPV_CM_EV_NONE) {
		event_put(dev, k, o);
		if (dev->cm->notify != NULL)
			dev->cm->notify(dev->cm->notify_arg);
	}
	if (dpv_cm_state(&k->c) == DPV_CM_IDLE)
		conn_free(dev->cm, k);
	else
		next_deadline(dev, k);
}

/* A new REQ or SIDR_REQ for listener @p l: a connection of its own takes it. With
 * none free it is refused (REJ No Resources, SIDR_REP Rejected): its sender may try
 * again later. */
static void gsi_new(struct dpv_dev *dev, struct dpv_cm_conn *l, const struct dpv_cm_msg *m,
		    uint32_t src_ip)
{
	struct dpv_dev_cm *cm = dev->cm;
	struct dpv_cm_out o;
	struct cm_conn *k = conn_new(cm);
	int ret;

	if (k == NULL) {
		dev->stats.cm_rx_refused++;
		if (dpv_cm_answer_no_resources(m, &o) == 0)
			mad_send(dev, src_ip, &o.mad);
		return;
	}
	k->peer_ip = src_ip;
	k->listen_id = l->local_id;
	if (m->hdr.attr_id == DPV_CM_ATTR_SIDR_REQ) {
		k->ud = true;
		ret = dpv_cm_sidr_req_received(&k->c, l, m, src_ip, &o);
	} else {
		ret = dpv_cm_req_received(&k->c, l, m, &o);
	}
	if (ret != 0) {
		conn_free(cm, k);
		return;
	}
	cm_out(dev, k, &o);
}

/* The GSI handler (owner thread, inside dpv_xport_rx()). */
static void gsi_rx(void *arg, uint32_t src_ip, const uint8_t *mad)
{
	struct dpv_dev *dev = arg;
	struct dpv_dev_cm *cm = dev->cm;
	struct dpv_cm_conn *c = NULL;
	struct dpv_cm_out o;
	struct dpv_cm_msg m;
	int ret;

	/* A removed port hears nothing: what the driver still hands over is not for us. */
	if (cm->removed)
		return;
	ret = dpv_cm_unpack(mad, DPV_CM_MAD_LEN, &m);
	if (ret != 0) {
		dev->stats.cm_rx_refused++;
		/* A request of another class version is told the version we speak. */
		if (ret == EPROTONOSUPPORT && dpv_cm_answer_version(mad, DPV_CM_MAD_LEN, &o) == 0)
			mad_send(dev, src_ip, &o.mad);
		return;
	}
	/* A SIDR_REQ names no CA: its duplicates are known by the sender's address. */
	if (m.hdr.attr_id == DPV_CM_ATTR_SIDR_REQ)
		c = dpv_cm_table_find_sidr(&cm->table, m.sidr_req.request_id, src_ip);
	if (c == NULL)
		c = dpv_cm_table_route(&cm->table, &m);
	if (c == NULL) {
		if (dpv_cm_answer_unmatched(&m, &o) == 0)
			mad_send(dev, src_ip, &o.mad);
		return;
	}
	if (dpv_cm_state(c) == DPV_CM_LISTEN) {
		gsi_new(dev, c, &m, src_ip);
		return;
	}
	if (dpv_cm_input(c, &m, now_ns(cm), &o) == 0)
		cm_out(dev, (struct cm_conn *)c, &o);
}

/* The port is gone (owner): the CM with it, as dpv_engine.h says. */
static void cm_remove(struct dpv_dev *dev)
{
	struct dpv_dev_cm *cm = dev->cm;
	uint32_t i;

	if (cm->removed)
		return;
	cm->removed = true;
	for (i = 0; i < DPV_DEV_CM_MAX; i++)
		if (cm->conns[i].used)
			conn_free(cm, &cm->conns[i]);
	memset(cm->resolve, 0, sizeof(cm->resolve));
	event_dev(dev, DPV_CM_EV_DEVICE_REMOVAL, 0, 0);
}

/* RTE_ETH_EVENT_INTR_RMV of the device's ethdev port, on the thread that tells it (EAL's
 * interrupt thread): it takes the device as the control path does. */
static int port_removed(uint16_t port, enum rte_eth_event_type type, void *arg, void *param)
{
	struct dpv_dev *dev = arg;

	(void)port;
	(void)type;
	(void)param;
	dpv_dev_own(dev);
	cm_remove(dev);
	dpv_dev_disown(dev);
	return 0;
}

/* Look at resolution @p r at @p now (owner): its event when the port's ARP knows the
 * address or its time is up, else when to look again. */
static void resolve_look(struct dpv_dev *dev, struct cm_resolve *r, uint64_t now)
{
	struct dpv_dev_cm *cm = dev->cm;
	struct rte_ether_addr mac;
	uint64_t next;

	if (r->ip == dev->port.ipv4 || dpv_port_resolve(&dev->port, r->ip, &mac)) {
		event_dev(dev, DPV_CM_EV_ADDR_RESOLVED, r->id, r->ip);
		r->id = 0;
	} else if (now >= r->deadline_tsc) {
		event_dev(dev, DPV_CM_EV_ADDR_ERROR, r->id, r->ip);
		r->id = 0;
	} else {
		next = now + ns_tsc(cm, RESOLVE_LOOK_US * 1000ull);
		if (next > r->deadline_tsc)
			next = r->deadline_tsc;
		if (next < dev->cm_next_tsc)
			dev->cm_next_tsc = next;
	}
}

int dpv_dev_cm_open(struct dpv_dev *dev)
{
	/* In the device's memory on its node, as the rest of the device is: the table
	 * too (no heap block of its own). */
	struct dpv_dev_cm *cm = rte_zmalloc_socket(
		"dpv_cm", sizeof(*cm) + dpv_cm_table_memsize(DPV_DEV_CM_MAX), RTE_CACHE_LINE_SIZE,
		dev->port.socket);
	uint32_t i;

	if (cm == NULL)
		return ENOMEM;
	(void)dpv_cm_table_init_at(&cm->table, DPV_DEV_CM_MAX, cm + 1);
	cm->hz = rte_get_tsc_hz();
	cm->guid = mac_guid(&dev->port.mac);
	cm->timing.response_timeout = DPV_DEV_CM_RESPONSE_TIMEOUT_DEFAULT;
	cm->timing.max_retries = DPV_DEV_CM_MAX_RETRIES_DEFAULT;
	cm->timing.packet_life_time = DPV_DEV_CM_PACKET_LIFE_TIME_DEFAULT;
	cm->timing.timewait_ns = 2 * dpv_cm_timeout_ns(DPV_DEV_CM_PACKET_LIFE_TIME_DEFAULT);
	for (i = 0; i < DPV_DEV_CM_MAX; i++)
		cm->conns[i].next_free = i + 1;
	cm->free_head = 0;
	dev->cm = cm;
	dev->cm_next_tsc = UINT64_MAX;
	dpv_xport_set_gsi(dev->xport, gsi_rx, dev);
	/* A port whose driver cannot tell of its removal is never removed: no error. */
	cm->rmv_registered = rte_eth_dev_callback_register(dev->port.ethdev_port,
							   RTE_ETH_EVENT_INTR_RMV, port_removed,
							   dev) == 0;
	return 0;
}

void dpv_dev_cm_unhook(struct dpv_dev *dev)
{
	if (dev->cm == NULL || !dev->cm->rmv_registered)
		return;
	/*
	 * EAGAIN while the callback runs: until it is done. It takes the device
	 * (port_removed()), so the caller must not hold it: dpv_dev_close() keeps the
	 * device owned from the moment it leaves the engine's list until it is freed, and
	 * a removal told in between would wait for it while it waited here.
	 */
	while (rte_eth_dev_callback_unregister(dev->port.ethdev_port, RTE_ETH_EVENT_INTR_RMV,
					       port_removed, dev) == -EAGAIN)
		rte_pause();
	dev->cm->rmv_registered = false;
}

void dpv_dev_cm_close(struct dpv_dev *dev)
{
	if (dev->cm == NULL)
		return;
	dpv_xport_set_gsi(dev->xport, NULL, NULL);
	rte_free(dev->cm);
	dev->cm = NULL;
}

void dpv_dev_cm_tick(struct dpv_dev *dev, uint64_t now_tsc)
{
	struct dpv_dev_cm *cm = dev->cm;
	const uint64_t now = tsc_ns(cm, now_tsc);
	struct dpv_cm_out o;
	uint32_t i;

	dev->cm_next_tsc = UINT64_MAX;
	for (i = 0; i < DPV_DEV_CM_MAX; i++) {
		struct cm_conn *k = &cm->conns[i];

		if (!k->used)
			continue;
		if (dpv_cm_deadline(&k->c) <= now) {
			const uint8_t retries = k->c.retries;

			dpv_cm_timer(&k->c, now, &o);
			dev->stats.cm_resent += k->c.retries != retries;
			cm_out(dev, k, &o);
		} else {
			next_deadline(dev, k);
		}
	}
	for (i = 0; i < DPV_DEV_CM_RESOLVES; i++)
		if (cm->resolve[i].id != 0)
			resolve_look(dev, &cm->resolve[i], now_tsc);
}

static bool skipped_ip(uint32_t ip, const uint32_t *skip_ips, unsigned int n_skip)
{
	for (unsigned int i = 0; i < n_skip; i++)
		if (skip_ips[i] == ip)
			return true;
	return false;
}

bool dpv_dev_cm_dreq_waits(struct dpv_dev *dev, const uint32_t *skip_ips, unsigned int n_skip)
{
	struct dpv_dev_cm *cm = dev->cm;
	bool waits = false;

	if (!__atomic_load_n(&dev->link_up, __ATOMIC_RELAXED))
		return false;
	dpv_dev_own(dev);
	for (uint32_t i = 0; i < DPV_DEV_CM_MAX && !waits; i++) {
		const struct cm_conn *k = &cm->conns[i];

		waits = k->used && dpv_cm_state(&k->c) == DPV_CM_DREQ_SENT &&
			!skipped_ip(k->peer_ip, skip_ips, n_skip);
	}
	dpv_dev_disown(dev);
	return waits;
}

int dpv_dev_cm_set_timing(struct dpv_dev *dev, const struct dpv_dev_cm_timing *t)
{
	if (t->response_timeout > 31 || t->max_retries > 15 || t->packet_life_time > 31)
		return EINVAL;
	dpv_dev_own(dev);
	dev->cm->timing = *t;
	dpv_dev_disown(dev);
	return 0;
}

void dpv_dev_cm_get_timing(struct dpv_dev *dev, struct dpv_dev_cm_timing *t)
{
	dpv_dev_own(dev);
	*t = dev->cm->timing;
	dpv_dev_disown(dev);
}

int dpv_dev_cm_resolve(struct dpv_dev *dev, uint32_t ip, uint32_t timeout_ms, uint32_t *id)
{
	struct dpv_dev_cm *cm = dev->cm;
	struct cm_resolve *r = NULL;
	uint64_t now;
	int ret = 0;
	uint32_t i;

	if (ip == 0)
		return EINVAL;
	dpv_dev_own(dev);
	for (i = 0; i < DPV_DEV_CM_RESOLVES && r == NULL; i++)
		if (cm->resolve[i].id == 0)
			r = &cm->resolve[i];
	if (cm->removed) {
		ret = ENODEV;
	} else if (r == NULL) {
		ret = ENOSPC;
	} else {
		if (++cm->resolve_seq == 0)
			cm->resolve_seq = 1;
		now = rte_get_tsc_cycles();
		r->id = cm->resolve_seq;
		r->ip = ip;
		r->deadline_tsc = now + ns_tsc(cm, (uint64_t)timeout_ms * 1000000u);
		*id = r->id;
		/* The first ARP request goes now; an answer known already is the event. */
		resolve_look(dev, r, now);
	}
	dpv_dev_disown(dev);
	return ret;
}

int dpv_dev_cm_resolve_cancel(struct dpv_dev *dev, uint32_t id)
{
	struct dpv_dev_cm *cm = dev->cm;
	int ret = ENOENT;

	if (id == 0)
		return ENOENT;
	dpv_dev_own(dev);
	for (uint32_t i = 0; i < DPV_DEV_CM_RESOLVES; i++)
		if (cm->resolve[i].id == id) {
			cm->resolve[i].id = 0;
			ret = 0;
		}
	dpv_dev_disown(dev);
	return ret;
}

int dpv_dev_cm_listen(struct dpv_dev *dev, uint64_t service_id, uint32_t *id)
{
	struct dpv_dev_cm *cm = dev->cm;
	struct cm_conn *k;
	int ret = 0;

	dpv_dev_own(dev);
	if (cm->removed) {
		ret = ENODEV;
	} else if (dpv_cm_table_find_listener(&cm->table, service_id) != NULL) {
		ret = EADDRINUSE;
	} else if ((k = conn_new(cm)) == NULL) {
		ret = ENOSPC;
	} else {
		(void)dpv_cm_listen(&k->c, service_id);
		*id = k->c.local_id;
	}
	dpv_dev_disown(dev);
	return ret;
}

int dpv_dev_cm_unlisten(struct dpv_dev *dev, uint32_t id)
{
	struct cm_conn *k;
	int ret = ENOENT;

	dpv_dev_own(dev);
	k = conn_find(dev->cm, id);
	if (k != NULL && dpv_cm_state(&k->c) == DPV_CM_LISTEN) {
		conn_free(dev->cm, k);
		ret = 0;
	}
	dpv_dev_disown(dev);
	return ret;
}

static bool param_ok(const struct dpv_dev_cm_param *p, uint8_t max_pdata)
{
	return p->qpn <= 0xffffff && p->psn <= 0xffffff && p->retry_count <= 7 &&
	       p->rnr_retry_count <= 7 && p->private_data_len <= max_pdata &&
	       (p->private_data != NULL || p->private_data_len == 0);
}

/* A connection of its own sends @p req, or @p sidr (a SIDR request), to @p dst_ip
 * (the device owned). */
static int active_start(struct dpv_dev *dev, uint32_t dst_ip, const struct dpv_cm_req *req,
			const struct dpv_cm_sidr_req *sidr, uint32_t *id)
{
	struct dpv_dev_cm *cm = dev->cm;
	struct dpv_cm_out o;
	struct cm_conn *k;
	int ret;

	if (cm->removed)
		return ENODEV;
	k = conn_new(cm);
	if (k == NULL)
		return ENOSPC;
	k->peer_ip = dst_ip;
	k->ud = sidr != NULL;
	if (sidr != NULL)
		ret = dpv_cm_sidr_request(&k->c, sidr, cm->timing.response_timeout,
					  cm->timing.max_retries, now_ns(cm), &o);
	else
		ret = dpv_cm_connect(&k->c, req, now_ns(cm), &o);
	if (ret != 0) {
		conn_free(cm, k);
		return ret;
	}
	*id = k->c.local_id;
	cm_out(dev, k, &o);
	return 0;
}

int dpv_dev_cm_connect(struct dpv_dev *dev, uint32_t dst_ip, uint64_t service_id,
		       const struct dpv_dev_cm_param *p, uint32_t *id)
{
	struct dpv_dev_cm *cm = dev->cm;
	struct dpv_cm_req r;
	int ret;

	if (!param_ok(p, DPV_CM_REQ_PDATA_LEN))
		return EINVAL;
	memset(&r, 0, sizeof(r));
	r.service_id = service_id;
	r.local_qpn = p->qpn;
	r.starting_psn = p->psn;
	r.responder_resources = p->responder_resources;
	r.initiator_depth = p->initiator_depth;
	r.retry_count = p->retry_count;
	r.rnr_retry_count = p->rnr_retry_count;
	r.transport = DPV_CM_TRANSPORT_RC;
	r.pkey = DPV_WIRE_PKEY_DEFAULT;
	r.path_mtu = dpv_xport_active_mtu(dev->xport);
	/* A routed RoCEv2 path: IPv4-mapped GIDs, no LIDs, not subnet-local. */
	dpv_cm_gid_from_ipv4(dev->port.ipv4, r.primary.local_gid);
	dpv_cm_gid_from_ipv4(dst_ip, r.primary.remote_gid);
	r.primary.hop_limit = 64;
	if (p->private_data_len)
		memcpy(r.private_data, p->private_data, p->private_data_len);
	dpv_dev_own(dev);
	r.remote_cm_response_timeout = cm->timing.response_timeout;
	r.local_cm_response_timeout = cm->timing.response_timeout;
	r.max_cm_retries = cm->timing.max_retries;
	r.primary.local_ack_timeout =
		cm->timing.packet_life_time < 31 ? cm->timing.packet_life_time + 1 : 31;
	ret = active_start(dev, dst_ip, &r, NULL, id);
	dpv_dev_disown(dev);
	return ret;
}

int dpv_dev_cm_sidr_request(struct dpv_dev *dev, uint32_t dst_ip, uint64_t service_id,
			    const void *pdata, uint8_t len, uint32_t *id)
{
	struct dpv_cm_sidr_req r;
	int ret;

	if (len > DPV_CM_SIDR_REQ_PDATA_LEN || (pdata == NULL && len != 0))
		return EINVAL;
	memset(&r, 0, sizeof(r));
	r.service_id = service_id;
	r.pkey = DPV_WIRE_PKEY_DEFAULT;
	if (len)
		memcpy(r.private_data, pdata, len);
	dpv_dev_own(dev);
	ret = active_start(dev, dst_ip, NULL, &r, id);
	dpv_dev_disown(dev);
	return ret;
}

/* A consumer's call on one connection (not a listener). */
struct conn_call {
	enum { CALL_ACCEPT, CALL_REJECT, CALL_ESTABLISH, CALL_DISCONNECT, CALL_SIDR_REPLY } op;
	const struct dpv_cm_rep *rep;       /* ACCEPT */
	const struct dpv_cm_sidr_rep *sidr_rep; /* SIDR_REPLY */
	const void *pdata;                  /* REJECT */
	uint8_t len;
};

/* The consumer's reject: a SIDR_REP (Rejected) to a SIDR request, a REJ (Consumer
 * Defined) to the others. */
static int conn_reject(struct cm_conn *k, const struct conn_call *call, uint64_t now,
		       struct dpv_cm_out *o)
{
	struct dpv_cm_sidr_rep r;

	if (dpv_cm_state(&k->c) != DPV_CM_SIDR_REQ_RCVD)
		return dpv_cm_reject(&k->c, DPV_CM_REJ_CONSUMER_DEFINED, call->pdata, call->len,
				     now, o);
	if (call->len > DPV_CM_SIDR_REP_PDATA_LEN)
		return EINVAL;
	memset(&r, 0, sizeof(r));
	r.status = DPV_CM_SIDR_REJECT;
	if (call->len)
		memcpy(r.private_data, call->pdata, call->len);
	return dpv_cm_sidr_reply(&k->c, &r, o);
}

static int conn_call(struct dpv_dev *dev, uint32_t id, const struct conn_call *call)
{
	struct dpv_cm_out o;
	struct cm_conn *k;
	uint64_t now;
	int ret = ENOENT;

	dpv_dev_own(dev);
	k = conn_find(dev->cm, id);
	if (k == NULL || dpv_cm_state(&k->c) == DPV_CM_LISTEN)
		goto out;
	now = now_ns(dev->cm);
	switch (call->op) {
	case CALL_ACCEPT:
		ret = dpv_cm_accept(&k->c, call->rep, now, &o);
		break;
	case CALL_REJECT:
		ret = conn_reject(k, call, now, &o);
		break;
	case CALL_SIDR_REPLY:
		ret = dpv_cm_sidr_reply(&k->c, call->sidr_rep, &o);
		break;
	case CALL_ESTABLISH:
		ret = dpv_cm_rtu(&k->c, NULL, 0, &o);
		break;
	case CALL_DISCONNECT:
		ret = dpv_cm_disconnect(&k->c, NULL, 0, now, &o);
		break;
	}
	if (ret == 0)
		cm_out(dev, k, &o);
out:
	dpv_dev_disown(dev);
	return ret;
}

int dpv_dev_cm_accept(struct dpv_dev *dev, uint32_t id, const struct dpv_dev_cm_param *p)
{
	struct conn_call call = {.op = CALL_ACCEPT};
	struct dpv_cm_rep r;

	if (!param_ok(p, DPV_CM_REP_PDATA_LEN))
		return EINVAL;
	memset(&r, 0, sizeof(r));
	r.local_qpn = p->qpn;
	r.starting_psn = p->psn;
	r.responder_resources = p->responder_resources;
	r.initiator_depth = p->initiator_depth;
	r.rnr_retry_count = p->rnr_retry_count;
	if (p->private_data_len)
		memcpy(r.private_data, p->private_data, p->private_data_len);
	call.rep = &r;
	return conn_call(dev, id, &call);
}

int dpv_dev_cm_reject(struct dpv_dev *dev, uint32_t id, const void *pdata, uint8_t len)
{
	struct conn_call call = {.op = CALL_REJECT, .pdata = pdata, .len = len};

	if (pdata == NULL && len != 0)
		return EINVAL;
	return conn_call(dev, id, &call);
}

int dpv_dev_cm_sidr_accept(struct dpv_dev *dev, uint32_t id, uint32_t qpn, uint32_t qkey,
			   const void *pdata, uint8_t len)
{
	struct conn_call call = {.op = CALL_SIDR_REPLY};
	struct dpv_cm_sidr_rep r;

	if (qpn > 0xffffff || len > DPV_CM_SIDR_REP_PDATA_LEN || (pdata == NULL && len != 0))
		return EINVAL;
	memset(&r, 0, sizeof(r));
	r.status = DPV_CM_SIDR_SUCCESS;
	r.qpn = qpn;
	r.qkey = qkey;
	if (len)
		memcpy(r.private_data, pdata, len);
	call.sidr_rep = &r;
	return conn_call(dev, id, &call);
}

int dpv_dev_cm_establish(struct dpv_dev *dev, uint32_t id)
{
	struct conn_call call = {.op = CALL_ESTABLISH};

	return conn_call(dev, id, &call);
}

int dpv_dev_cm_disconnect(struct dpv_dev *dev, uint32_t id)
{
	struct conn_call call = {.op = CALL_DISCONNECT};

	return conn_call(dev, id, &call);
}

int dpv_dev_cm_get_event(struct dpv_dev *dev, struct dpv_dev_cm_event *ev)
{
	struct dpv_dev_cm *cm = dev->cm;
	int ret = EAGAIN;

	dpv_dev_own(dev);
	if (cm->ev_head != cm->ev_tail) {
		*ev = cm->ev[cm->ev_head++ % DPV_DEV_CM_EVENTS];
		ret = 0;
	}
	dpv_dev_disown(dev);
	return ret;
}

int dpv_dev_cm_list(struct dpv_dev *dev, struct dpv_dev_cm_info *info, uint32_t max,
		    uint32_t *n)
{
	const struct dpv_dev_cm *cm = dev->cm;
	uint32_t i, got = 0;

	if (info == NULL && max != 0)
		return EINVAL;
	dpv_dev_own(dev);
	/* The table's slots in order: the order of the local IDs' slots. */
	for (i = 0; i < cm->table.cap; i++) {
		const struct cm_conn *k = (const struct cm_conn *)cm->table.slot[i];

		if (k == NULL)
			continue;
		if (got < max) {
			struct dpv_dev_cm_info *f = &info[got];

			f->id = k->c.local_id;
			f->remote_id = k->c.remote_id;
			f->state = dpv_cm_state(&k->c);
			f->ud = k->ud;
			f->peer_ip = k->peer_ip;
			f->listen_id = k->listen_id;
			f->service_id = k->c.service_id;
			f->local_qpn = k->c.local_qpn;
			f->remote_qpn = k->c.remote_qpn;
			f->retries = k->c.retries;
		}
		got++;
	}
	/* The resolutions too: an id of rdma_resolve_addr() is one while it waits. */
	for (i = 0; i < DPV_DEV_CM_RESOLVES; i++) {
		const struct cm_resolve *r = &cm->resolve[i];

		if (r->id == 0)
			continue;
		if (got < max) {
			memset(&info[got], 0, sizeof(info[got]));
			info[got].id = r->id;
			info[got].peer_ip = r->ip;
			info[got].resolving = true;
		}
		got++;
	}
	dpv_dev_disown(dev);
	*n = got;
	return 0;
}

const char *dpv_dev_cm_info_state(const struct dpv_dev_cm_info *f)
{
	return f->resolving ? "ADDR_QUERY" : dpv_cm_state_name(f->state);
}

void dpv_dev_cm_set_notify(struct dpv_dev *dev, dpv_dev_cm_notify_fn *fn, void *arg)
{
	dpv_dev_own(dev);
	dev->cm->notify = fn;
	dev->cm->notify_arg = arg;
	dpv_dev_disown(dev);
}
