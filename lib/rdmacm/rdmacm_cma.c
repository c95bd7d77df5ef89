/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The connection calls of <rdma/rdma_cma.h> over the devices' CM: the devices opened
 * once, ids, addresses, and the connection's life, with the QP moved through its
 * states as the kernel's RDMA CM moves it. The events are rdmacm_event.c's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>

#include "dpv_cm_ip.h"
#include "rdmacm_priv.h"

struct cma cma = {.lock = PTHREAD_MUTEX_INITIALIZER, .acked = PTHREAD_COND_INITIALIZER};

static pthread_once_t cma_once = PTHREAD_ONCE_INIT;
static int cma_init_err;

/* The first port rdma_bind_addr() gives for port 0: Linux's ephemeral range. */
#define CMA_PORT_FIRST 32768u
/* The local ACK timeout a connection's QP gets (4.096 us x 2^14, 67 ms), as Linux's
 * RDMA CM gives a RoCE QP, unless RDMA_OPTION_ID_ACK_TIMEOUT says otherwise. */
#define CMA_ACK_TIMEOUT 14u
/* The RNR NAK timer of the receive side (IBTA's code 12: 0.64 ms), as Linux's. */
#define CMA_MIN_RNR_TIMER 12u

static void notify(void *arg)
{
	const uint64_t one = 1;

	/* An eventfd's counter only saturates; a failed write leaves it readable. */
	(void)!write(*(int *)arg, &one, sizeof(one));
}

static void conn_drop(struct cma_id *c);

/* At exit, what the kernel's RDMA CM does for the ids of a process that ends: each
 * connection is ended on the wire (a DREQ, the DREP owed, a REJ for a request not
 * answered), so the peer hears of it now, not after its retries. The drop-in
 * libibverbs' own exit hook, registered before this one and so run after it, keeps
 * the devices running until those MADs are out. A thread that holds the lock at exit
 * (inside a call) is not waited for long. */
static void cma_exit(void)
{
	const struct timespec pause = {.tv_nsec = 1000000};
	int i;

	for (i = 0; i < 100 && pthread_mutex_trylock(&cma.lock) != 0; i++)
		nanosleep(&pause, NULL);
	if (i == 100)
		return;
	cma_dispatch();
	for (struct cma_id *c = cma.ids; c != NULL; c = c->next)
		conn_drop(c);
	pthread_mutex_unlock(&cma.lock);
}

static void cma_open(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	int i, n = 0;

	if (list == NULL) {
		cma_init_err = errno ? errno : ENODEV;
		return;
	}
	for (i = 0; list[i] != NULL && n < (int)DPV_MAX_DEVS; i++) {
		struct ibv_context *ctx = ibv_open_device(list[i]);

		if (ctx == NULL)
			continue;
		cma.efd[n] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		/* The device's PD, every id's on it (rdma_cm_id.pd, as rdma-core sets it
		 * when an id gets a device): UCX makes its QPs on it. */
		cma.pd[n] = cma.efd[n] < 0 ? NULL : ibv_alloc_pd(ctx);
		if (cma.pd[n] == NULL || ibv_query_device(ctx, &cma.attr[n]) != 0) {
			if (cma.pd[n] != NULL)
				ibv_dealloc_pd(cma.pd[n]);
			if (cma.efd[n] >= 0)
				close(cma.efd[n]);
			ibv_close_device(ctx);
			continue;
		}
		cma.ctx[n] = ctx;
		dpv_verbs_cm_set_notify(ctx, notify, &cma.efd[n]);
		n++;
	}
	ibv_free_device_list(list);
	cma.n = n;
	cma.next_port = CMA_PORT_FIRST;
	if (n == 0)
		cma_init_err = ENODEV;
	else
		atexit(cma_exit);
}

int cma_init(void)
{
	pthread_once(&cma_once, cma_open);
	return cma_init_err ? cma_err(cma_init_err) : 0;
}

static int dev_of_ip(uint32_t ip)
{
	for (int i = 0; i < cma.n; i++)
		if (dpv_verbs_cm_ipv4(cma.ctx[i]) == ip)
			return i;
	return -1;
}

/* ---- ids ---- */

int rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id, void *context,
		   enum rdma_port_space ps)
{
	struct cma_channel *own = NULL;
	struct cma_id *c;

	if (id == NULL)
		return cma_err(EINVAL);
	if (cma_init() != 0)
		return -1;
	/* RDMA_PS_IB names IB addresses, which a RoCE port has none of. */
	if (ps != RDMA_PS_TCP && ps != RDMA_PS_UDP && ps != RDMA_PS_IPOIB)
		return cma_err(EPROTONOSUPPORT);
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return cma_err(ENOMEM);
	if (channel == NULL) {
		own = cma_channel_new();
		if (own == NULL) {
			free(c);
			return -1;
		}
		channel = &own->ch;
		c->sync = true;
	}
	c->id.channel = channel;
	c->id.context = context;
	c->id.ps = ps;
	c->id.qp_type = ps == RDMA_PS_TCP ? IBV_QPT_RC : IBV_QPT_UD;
	c->dev = -1;
	c->ack_timeout = CMA_ACK_TIMEOUT;
	pthread_mutex_lock(&cma.lock);
	c->next = cma.ids;
	cma.ids = c;
	pthread_mutex_unlock(&cma.lock);
	*id = &c->id;
	return 0;
}

/* Answer for the device's connection of an id that goes away (under cma.lock). */
static void conn_drop(struct cma_id *c)
{
	struct ibv_context *ctx = c->dev >= 0 ? cma.ctx[c->dev] : NULL;

	switch (c->state) {
	case CMA_ADDR_QUERY:
		/* What the devices still queue for it finds no id (dispatch_one()). */
		cma_resolve_cancel(c, -1);
		break;
	case CMA_LISTEN:
		for (int i = 0; i < cma.n; i++)
			if (c->listen[i] != 0)
				(void)dpv_verbs_cm_unlisten(cma.ctx[i], c->listen[i]);
		break;
	case CMA_REQUEST:
	case CMA_RESPONSE:
		(void)dpv_verbs_cm_reject(ctx, c->conn, NULL, 0);
		break;
	case CMA_ESTABLISHED:
	case CMA_PEER_DISCONNECTED:
		(void)dpv_verbs_cm_disconnect(ctx, c->conn);
		break;
	default:
		/* REQ or REP out: what comes for it finds no id (dispatch_one()). */
		break;
	}
	c->state = CMA_DONE;
}

static void unlink_id(struct cma_id *c)
{
	for (struct cma_id **p = &cma.ids; *p != NULL; p = &(*p)->next)
		if (*p == c) {
			*p = c->next;
			return;
		}
}

int rdma_destroy_id(struct rdma_cm_id *id)
{
	struct cma_id *c = to_cid(id);
	struct cma_channel *ch = cma_chan(id->channel);
	struct cma_event **e, *dead;

	/* As librdmacm's: the events the program took for the id are acked first, so
	 * the thread handling one (rping's event thread) is done with what the id's
	 * context points to before the program frees it. The ones not taken go. */
	if (c->sync_event != NULL) {
		rdma_ack_cm_event(c->sync_event);
		c->sync_event = NULL;
	}
	pthread_mutex_lock(&cma.lock);
	while (c->acked != c->taken)
		pthread_cond_wait(&cma.acked, &cma.lock);
	cma_dispatch();
	conn_drop(c);
	unlink_id(c);
	/* Its events not yet taken go with it; so do the ids of a listener's untaken
	 * CONNECT_REQUESTs, which the program never saw: their REQs get a REJ. */
	for (e = &ch->head; *e != NULL;) {
		if ((*e)->ev.id == id || (*e)->ev.listen_id == id) {
			dead = *e;
			*e = dead->next;
			if (dead->ev.event == RDMA_CM_EVENT_CONNECT_REQUEST &&
			    dead->ev.listen_id != id)
				to_cid(dead->ev.listen_id)->pending--;
			if (dead->ev.event == RDMA_CM_EVENT_CONNECT_REQUEST && dead->ev.id != id) {
				conn_drop(to_cid(dead->ev.id));
				unlink_id(to_cid(dead->ev.id));
				free(dead->ev.id);
			}
			free(dead);
		} else {
			e = &(*e)->next;
		}
	}
	cma_chan_settle(ch);
	/* Ids a listener gave keep living on their own. */
	for (struct cma_id *k = cma.ids; k != NULL; k = k->next)
		if (k->listener == c)
			k->listener = NULL;
	pthread_mutex_unlock(&cma.lock);
	if (c->sync)
		rdma_destroy_event_channel(id->channel);
	free(c);
	return 0;
}

/* ---- addresses ---- */

/* Whether @p port of @p ip is taken in @p self's port space: each has its ports, as
 * the kernel's RDMA CM keeps them. */
static bool port_in_use(uint32_t ip, uint16_t port, const struct cma_id *self)
{
	for (const struct cma_id *k = cma.ids; k != NULL; k = k->next) {
		uint32_t kip = ntohl(k->id.route.addr.src_sin.sin_addr.s_addr);

		if (k == self || k->passive || k->id.ps != self->id.ps ||
		    k->id.route.addr.src_addr.sa_family != AF_INET ||
		    ntohs(k->id.route.addr.src_sin.sin_port) != port)
			continue;
		if (kip == ip || kip == INADDR_ANY || ip == INADDR_ANY)
			return !(k->reuseaddr && self->reuseaddr && k->state != CMA_LISTEN);
	}
	return false;
}

/* Bind @p c to @p ip and @p port (0: a free one), under cma.lock. */
static int bind_locked(struct cma_id *c, uint32_t ip, uint16_t port)
{
	int dev = -1;

	if (ip != INADDR_ANY) {
		dev = dev_of_ip(ip);
		if (dev < 0)
			return EADDRNOTAVAIL;
	}
	if (port == 0) {
		for (unsigned int tries = 0; tries < 65536u - CMA_PORT_FIRST; tries++) {
			uint16_t p = cma.next_port;

			cma.next_port = p == 65535 ? (uint16_t)CMA_PORT_FIRST : (uint16_t)(p + 1);
			if (!port_in_use(ip, p, c)) {
				port = p;
				break;
			}
		}
		if (port == 0)
			return EADDRINUSE;
	} else if (port_in_use(ip, port, c)) {
		return EADDRINUSE;
	}
	c->id.route.addr.src_sin.sin_family = AF_INET;
	c->id.route.addr.src_sin.sin_addr.s_addr = htonl(ip);
	c->id.route.addr.src_sin.sin_port = htons(port);
	if (dev >= 0)
		cma_set_dev(c, dev);
	c->state = CMA_ADDR_BOUND;
	return 0;
}

int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	struct cma_id *c = to_cid(id);
	const struct sockaddr_in *sin = (const struct sockaddr_in *)(const void *)addr;
	int ret;

	if (addr == NULL || c->state != CMA_IDLE)
		return cma_err(EINVAL);
	if (addr->sa_family != AF_INET)
		return cma_err(EAFNOSUPPORT);
	pthread_mutex_lock(&cma.lock);
	ret = bind_locked(c, ntohl(sin->sin_addr.s_addr), ntohs(sin->sin_port));
	pthread_mutex_unlock(&cma.lock);
	return ret ? cma_err(ret) : 0;
}

void cma_set_dev(struct cma_id *c, int dev)
{
	c->dev = dev;
	c->id.verbs = cma.ctx[dev];
	c->id.pd = cma.pd[dev];
	c->id.port_num = 1;
}

bool cma_addr_resolved(struct cma_id *c, int dev)
{
	cma_set_dev(c, dev);
	c->id.route.addr.src_sin.sin_addr.s_addr = htonl(dpv_verbs_cm_ipv4(cma.ctx[dev]));
	c->state = CMA_ADDR_RESOLVED;
	return cma_post_locked(c, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
}

void cma_resolve_cancel(struct cma_id *c, int keep)
{
	for (int i = 0; i < cma.n; i++)
		if (i != keep && c->resolve[i] != 0) {
			(void)dpv_verbs_cm_resolve_cancel(cma.ctx[i], c->resolve[i]);
			c->resolve[i] = 0;
		}
}

/* Start @p c's resolution of @p dst (under cma.lock), as the kernel's RDMA CM does it:
 * the call returns at once and the answer is an event. An address of a device's own
 * port is resolved now; else each device the id may use (its bound one, or all) asks
 * its port's ARP, the first to learn the address gives the id its device, and
 * ADDR_ERROR comes when none has within @p timeout_ms (rdmacm_event.c). */
static int resolve_start(struct cma_id *c, uint32_t dst, int timeout_ms)
{
	const uint32_t ms = timeout_ms > 0 ? (uint32_t)timeout_ms : 0;
	int dev = dev_of_ip(dst), started = 0, err = ENODEV;

	if (dev >= 0 && (c->dev < 0 || c->dev == dev))
		return cma_addr_resolved(c, dev) ? 0 : ENOMEM;
	for (int i = 0; i < cma.n; i++) {
		int ret;

		if (c->dev >= 0 && c->dev != i)
			continue;
		ret = dpv_verbs_cm_resolve(cma.ctx[i], dst, ms, &c->resolve[i]);
		if (ret == 0)
			started++;
		else
			err = ret;
	}
	if (started == 0) {
		/* No device can ask: the answer is the same event, now. */
		return cma_post_locked(c, RDMA_CM_EVENT_ADDR_ERROR, -err) ? 0 : ENOMEM;
	}
	c->state = CMA_ADDR_QUERY;
	return 0;
}

int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src_addr,
		      struct sockaddr *dst_addr, int timeout_ms)
{
	struct cma_id *c = to_cid(id);
	const struct sockaddr_in *dst = (const struct sockaddr_in *)(const void *)dst_addr;
	uint32_t ip;
	int ret = 0;

	if (dst_addr == NULL || (c->state != CMA_IDLE && c->state != CMA_ADDR_BOUND))
		return cma_err(EINVAL);
	if (dst_addr->sa_family != AF_INET || (src_addr && src_addr->sa_family != AF_INET))
		return cma_err(EAFNOSUPPORT);
	ip = ntohl(dst->sin_addr.s_addr);
	if (ip == INADDR_ANY)
		return cma_err(EINVAL);
	pthread_mutex_lock(&cma.lock);
	if (src_addr != NULL && c->state == CMA_IDLE) {
		const struct sockaddr_in *s = (const struct sockaddr_in *)(const void *)src_addr;

		ret = bind_locked(c, ntohl(s->sin_addr.s_addr), ntohs(s->sin_port));
	} else if (c->state == CMA_IDLE) {
		ret = bind_locked(c, INADDR_ANY, 0);
	}
	if (ret == 0) {
		memcpy(&c->id.route.addr.dst_sin, dst, sizeof(*dst));
		ret = resolve_start(c, ip, timeout_ms);
	}
	pthread_mutex_unlock(&cma.lock);
	if (ret)
		return cma_err(ret);
	return c->sync ? cma_sync_wait(c, RDMA_CM_EVENT_ADDR_RESOLVED) : 0;
}

int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	struct cma_id *c = to_cid(id);
	struct ibv_sa_path_rec *p = &c->path;
	struct dpv_dev_cm_timing t;
	struct ibv_port_attr pa;

	(void)timeout_ms;
	if (c->state != CMA_ADDR_RESOLVED)
		return cma_err(EINVAL);
	if (ibv_query_port(c->id.verbs, 1, &pa) != 0)
		return -1;
	/* RoCEv2's path: IPv4-mapped GIDs, no LIDs, the port's MTU. */
	memset(p, 0, sizeof(*p));
	dpv_cm_gid_from_ipv4(ntohl(c->id.route.addr.src_sin.sin_addr.s_addr), p->sgid.raw);
	dpv_cm_gid_from_ipv4(ntohl(c->id.route.addr.dst_sin.sin_addr.s_addr), p->dgid.raw);
	p->hop_limit = 64;
	p->traffic_class = c->tos;
	p->reversible = 1;
	p->numb_path = 1;
	p->pkey = htons(0xffff);
	p->mtu_selector = 2;
	p->mtu = pa.active_mtu;
	/* The device's, which its REQs announce too (DPV_CM_PACKET_LIFE_TIME). */
	dpv_verbs_cm_get_timing(c->id.verbs, &t);
	p->packet_life_time = t.packet_life_time;
	c->id.route.path_rec = p;
	c->id.route.num_paths = 1;
	c->state = CMA_ROUTE_RESOLVED;
	if (cma_post(c, RDMA_CM_EVENT_ROUTE_RESOLVED, 0) != 0)
		return -1;
	return c->sync ? cma_sync_wait(c, RDMA_CM_EVENT_ROUTE_RESOLVED) : 0;
}

__be16 rdma_get_src_port(struct rdma_cm_id *id)
{
	return id->route.addr.src_sin.sin_port;
}

__be16 rdma_get_dst_port(struct rdma_cm_id *id)
{
	return id->route.addr.dst_sin.sin_port;
}

struct ibv_context **rdma_get_devices(int *num_devices)
{
	struct ibv_context **l;

	if (cma_init() != 0) {
		if (num_devices)
			*num_devices = 0;
		return NULL;
	}
	l = calloc((size_t)cma.n + 1, sizeof(*l));
	if (l == NULL)
		return NULL;
	memcpy(l, cma.ctx, (size_t)cma.n * sizeof(*l));
	if (num_devices)
		*num_devices = cma.n;
	return l;
}

void rdma_free_devices(struct ibv_context **list)
{
	free(list);
}

/* ---- the connection ---- */

static uint8_t clamp(uint8_t v, int max)
{
	return (int)v > max ? (uint8_t)max : v;
}

uint32_t cma_new_psn(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return ((uint32_t)t.tv_nsec ^ (uint32_t)rand()) & 0xffffffu;
}

int rdma_listen(struct rdma_cm_id *id, int backlog)
{
	struct cma_id *c = to_cid(id);
	/* RDMA_PS_* are the port spaces' numbers of the service ID. */
	uint64_t sid = dpv_cm_ip_service_id((enum dpv_cm_ps)id->ps,
					    ntohs(id->route.addr.src_sin.sin_port));
	int ret = 0;

	if (c->state != CMA_ADDR_BOUND)
		return cma_err(EINVAL);
	pthread_mutex_lock(&cma.lock);
	for (int i = 0; i < cma.n && ret == 0; i++)
		if (c->dev < 0 || c->dev == i)
			ret = dpv_verbs_cm_listen(cma.ctx[i], sid, &c->listen[i]);
	if (ret != 0) {
		for (int i = 0; i < cma.n; i++)
			if (c->listen[i] != 0)
				(void)dpv_verbs_cm_unlisten(cma.ctx[i], c->listen[i]);
		memset(c->listen, 0, sizeof(c->listen));
	} else {
		c->state = CMA_LISTEN;
		c->backlog = backlog;
		c->pending = 0;
	}
	pthread_mutex_unlock(&cma.lock);
	return ret ? cma_err(ret) : 0;
}

uint32_t cma_qkey(struct cma_id *c)
{
	if (c->qkey == 0)
		c->qkey = RDMA_UDP_QKEY;
	return c->qkey;
}

/* The IP CM header of a REQ or SIDR_REQ of @p id into @p pdata, the consumer's
 * @p param private data after it. */
static void ip_pdata(struct rdma_cm_id *id, const struct rdma_conn_param *param,
		     uint8_t *pdata, size_t len)
{
	struct dpv_cm_ip_hdr h = {.ip_version = 4};

	h.src_port = ntohs(id->route.addr.src_sin.sin_port);
	dpv_cm_gid_from_ipv4(ntohl(id->route.addr.src_sin.sin_addr.s_addr), h.src);
	dpv_cm_gid_from_ipv4(ntohl(id->route.addr.dst_sin.sin_addr.s_addr), h.dst);
	(void)dpv_cm_ip_hdr_pack(&h, pdata, len);
	if (param != NULL && param->private_data_len)
		memcpy(pdata + DPV_CM_IP_HDR_LEN, param->private_data, param->private_data_len);
}

/* After a REQ or SIDR_REQ went out (@p ret 0) or did not, under cma.lock, which it
 * gives up: rdma_connect()'s return. */
static int connect_sent(struct cma_id *c, int ret)
{
	if (ret == 0) {
		c->state = CMA_CONNECT;
		c->active = true;
	}
	pthread_mutex_unlock(&cma.lock);
	if (ret != 0)
		return cma_err(ret);
	return c->sync ? cma_sync_wait(c, RDMA_CM_EVENT_ESTABLISHED) : 0;
}

/* rdma_connect() of a UD id: a SIDR_REQ, whose answer is ESTABLISHED or UNREACHABLE;
 * the id needs no QP for it, as the kernel's does not. */
static int sidr_connect(struct cma_id *c, const struct rdma_conn_param *param)
{
	struct rdma_cm_id *id = &c->id;
	uint8_t pdata[DPV_CM_SIDR_REQ_PDATA_LEN] = {0};
	uint8_t len = DPV_CM_IP_HDR_LEN;

	if (param != NULL) {
		if (param->private_data_len > DPV_CM_SIDR_REQ_PDATA_LEN - DPV_CM_IP_HDR_LEN ||
		    (param->private_data_len && param->private_data == NULL))
			return cma_err(EINVAL);
		len = (uint8_t)(len + param->private_data_len);
	}
	ip_pdata(id, param, pdata, sizeof(pdata));
	pthread_mutex_lock(&cma.lock);
	return connect_sent(c, dpv_verbs_cm_sidr_request(
				       id->verbs, ntohl(id->route.addr.dst_sin.sin_addr.s_addr),
				       dpv_cm_ip_service_id((enum dpv_cm_ps)id->ps,
							    ntohs(id->route.addr.dst_sin.sin_port)),
				       pdata, len, &c->conn));
}

int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *param)
{
	struct cma_id *c = to_cid(id);
	struct ibv_device_attr *da;
	uint8_t pdata[DPV_CM_REQ_PDATA_LEN] = {0};
	struct dpv_dev_cm_param p = {0};
	uint32_t dst;

	if (c->state != CMA_ROUTE_RESOLVED)
		return cma_err(EINVAL);
	if (cma_ud(c))
		return sidr_connect(c, param);
	if (param != NULL && param->private_data_len > DPV_CM_REQ_PDATA_LEN - DPV_CM_IP_HDR_LEN)
		return cma_err(EINVAL);
	if (id->qp == NULL && (param == NULL || param->qp_num == 0))
		return cma_err(EINVAL);
	da = &cma.attr[c->dev];
	dst = ntohl(id->route.addr.dst_sin.sin_addr.s_addr);
	ip_pdata(id, param, pdata, sizeof(pdata));
	c->responder_resources = param ? clamp(param->responder_resources, da->max_qp_rd_atom) :
					 (uint8_t)da->max_qp_rd_atom;
	c->initiator_depth = param ? clamp(param->initiator_depth, da->max_qp_init_rd_atom) :
				     (uint8_t)da->max_qp_init_rd_atom;
	c->retry_count = param ? clamp(param->retry_count, 7) : 7;
	c->rnr_retry_count = param ? clamp(param->rnr_retry_count, 7) : 7;
	c->psn = cma_new_psn();
	p.qpn = id->qp ? id->qp->qp_num : param->qp_num;
	p.psn = c->psn;
	p.responder_resources = c->responder_resources;
	p.initiator_depth = c->initiator_depth;
	p.retry_count = c->retry_count;
	p.rnr_retry_count = c->rnr_retry_count;
	p.private_data = pdata;
	p.private_data_len = sizeof(pdata);
	pthread_mutex_lock(&cma.lock);
	return connect_sent(c, dpv_verbs_cm_connect(
				       id->verbs, dst,
				       dpv_cm_ip_service_id(DPV_CM_PS_TCP,
							    ntohs(id->route.addr.dst_sin.sin_port)),
				       &p, &c->conn));
}

int rdma_establish(struct rdma_cm_id *id)
{
	struct cma_id *c = to_cid(id);
	int ret;

	if (c->state != CMA_RESPONSE || id->qp != NULL)
		return cma_err(EINVAL);
	pthread_mutex_lock(&cma.lock);
	c->established_by_call = true;
	ret = dpv_verbs_cm_establish(id->verbs, c->conn);
	pthread_mutex_unlock(&cma.lock);
	return ret ? cma_err(ret) : 0;
}

/* rdma_accept() of a UD id's CONNECT_REQUEST: a SIDR_REP (Success) with the QP's
 * number (@p param's without a QP) and the id's Q_Key (rdma_conn_param carries none:
 * rdma-core's library hands the kernel 0, the default). No event follows, nor a
 * connection. */
static int sidr_accept(struct cma_id *c, const struct rdma_conn_param *param)
{
	struct rdma_cm_id *id = &c->id;
	uint32_t qkey;
	int ret;

	if (param != NULL && (param->private_data_len > DPV_CM_SIDR_REP_PDATA_LEN ||
			      (param->private_data_len && param->private_data == NULL)))
		return cma_err(EINVAL);
	if (id->qp == NULL && (param == NULL || param->qp_num == 0))
		return cma_err(EINVAL);
	qkey = cma_qkey(c);
	pthread_mutex_lock(&cma.lock);
	ret = dpv_verbs_cm_sidr_accept(id->verbs, c->conn, id->qp ? id->qp->qp_num : param->qp_num,
				       qkey, param ? param->private_data : NULL,
				       param ? param->private_data_len : 0);
	if (ret == 0)
		c->state = CMA_DONE;
	pthread_mutex_unlock(&cma.lock);
	return ret ? cma_err(ret) : 0;
}

int rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *param)
{
	struct cma_id *c = to_cid(id);
	struct ibv_device_attr *da = c->dev >= 0 ? &cma.attr[c->dev] : NULL;
	struct dpv_dev_cm_param p = {0};
	int ret;

	if (c->state != CMA_REQUEST)
		return cma_err(EINVAL);
	if (cma_ud(c))
		return sidr_accept(c, param);
	if (param != NULL && param->private_data_len > DPV_CM_REP_PDATA_LEN)
		return cma_err(EINVAL);
	if (id->qp == NULL && (param == NULL || param->qp_num == 0))
		return cma_err(EINVAL);
	c->responder_resources = param ? clamp(param->responder_resources, da->max_qp_rd_atom) :
					 (uint8_t)da->max_qp_rd_atom;
	c->initiator_depth = param ? clamp(param->initiator_depth, da->max_qp_init_rd_atom) :
				     (uint8_t)da->max_qp_init_rd_atom;
	c->rnr_retry_count = param ? clamp(param->rnr_retry_count, 7) : 7;
	c->retry_count = 7;
	if (id->qp != NULL &&
	    (cma_modify_qp(c, IBV_QPS_RTR) != 0 || cma_modify_qp(c, IBV_QPS_RTS) != 0))
		return -1;
	p.qpn = id->qp ? id->qp->qp_num : param->qp_num;
	p.psn = c->psn;
	p.responder_resources = c->responder_resources;
	p.initiator_depth = c->initiator_depth;
	p.rnr_retry_count = c->rnr_retry_count;
	if (param != NULL) {
		p.private_data = param->private_data;
		p.private_data_len = param->private_data_len;
	}
	pthread_mutex_lock(&cma.lock);
	ret = dpv_verbs_cm_accept(id->verbs, c->conn, &p);
	if (ret == 0)
		c->state = CMA_ACCEPTED;
	pthread_mutex_unlock(&cma.lock);
	if (ret != 0)
		return cma_err(ret);
	return c->sync ? cma_sync_wait(c, RDMA_CM_EVENT_ESTABLISHED) : 0;
}

int rdma_reject(struct rdma_cm_id *id, const void *private_data, uint8_t private_data_len)
{
	struct cma_id *c = to_cid(id);
	int ret;

	if (c->state != CMA_REQUEST && c->state != CMA_RESPONSE)
		return cma_err(EINVAL);
	/* A UD id's answer is a SIDR_REP (Rejected), whose field is shorter than a REJ's. */
	if (private_data_len > (cma_ud(c) ? DPV_CM_SIDR_REP_PDATA_LEN : DPV_CM_REJ_PDATA_LEN) ||
	    (private_data_len && private_data == NULL))
		return cma_err(EINVAL);
	pthread_mutex_lock(&cma.lock);
	ret = dpv_verbs_cm_reject(id->verbs, c->conn, private_data, private_data_len);
	if (ret == 0)
		c->state = CMA_DONE;
	pthread_mutex_unlock(&cma.lock);
	return ret ? cma_err(ret) : 0;
}

int rdma_disconnect(struct rdma_cm_id *id)
{
	struct cma_id *c = to_cid(id);
	int ret;

	pthread_mutex_lock(&cma.lock);
	/* The connection may have moved while the program took no event: an RTU, a
	 * DREQ (a program that polls its CQ and disconnects takes none). */
	cma_dispatch();
	if (c->state != CMA_ESTABLISHED && c->state != CMA_PEER_DISCONNECTED) {
		pthread_mutex_unlock(&cma.lock);
		return cma_err(EINVAL);
	}
	cma_qp_error(c);
	ret = dpv_verbs_cm_disconnect(id->verbs, c->conn);
	/* The device's connection lives on to its TIMEWAIT_EXIT. */
	if (ret == 0)
		c->state = CMA_DISCONNECTING;
	pthread_mutex_unlock(&cma.lock);
	return ret ? cma_err(ret) : 0;
}

int rdma_notify(struct rdma_cm_id *id, enum ibv_event_type event)
{
	(void)event;
	/* The device's CM takes the RTU as the connection's start; data before it is
	 * no event of its own here. */
	return to_cid(id)->state == CMA_IDLE ? cma_err(EINVAL) : 0;
}

int rdma_migrate_id(struct rdma_cm_id *id, struct rdma_event_channel *channel)
{
	struct cma_id *c = to_cid(id);
	struct cma_channel *old = cma_chan(id->channel), *own = NULL, *to;
	struct cma_event **e, *m;
	bool was_sync = c->sync;

	if (channel == NULL) {
		own = cma_channel_new();
		if (own == NULL)
			return -1;
		channel = &own->ch;
	}
	to = cma_chan(channel);
	pthread_mutex_lock(&cma.lock);
	/* Its events not yet taken go along. */
	for (e = &old->head; *e != NULL;) {
		if ((*e)->ev.id == id) {
			m = *e;
			*e = m->next;
			cma_chan_push(to, m);
		} else {
			e = &(*e)->next;
		}
	}
	cma_chan_settle(old);
	id->channel = channel;
	c->sync = own != NULL;
	pthread_mutex_unlock(&cma.lock);
	if (was_sync)
		rdma_destroy_event_channel(&old->ch);
	return 0;
}

int rdma_set_option(struct rdma_cm_id *id, int level, int optname, void *optval,
		    size_t optlen)
{
	struct cma_id *c = to_cid(id);

	if (optval == NULL)
		return cma_err(EINVAL);
	if (level == RDMA_OPTION_IB)
		return cma_err(optname == RDMA_OPTION_IB_PATH ? EOPNOTSUPP : ENOSYS);
	if (level != RDMA_OPTION_ID)
		return cma_err(ENOSYS);
	switch (optname) {
	case RDMA_OPTION_ID_TOS:
		if (optlen != sizeof(uint8_t))
			return cma_err(EINVAL);
		c->tos = *(uint8_t *)optval;
		return 0;
	case RDMA_OPTION_ID_REUSEADDR:
		if (optlen != sizeof(int))
			return cma_err(EINVAL);
		c->reuseaddr = *(int *)optval != 0;
		return 0;
	case RDMA_OPTION_ID_AFONLY:
		/* Only IPv4 is bound: the flag changes nothing. */
		return optlen == sizeof(int) ? 0 : cma_err(EINVAL);
	case RDMA_OPTION_ID_ACK_TIMEOUT:
		if (optlen != sizeof(uint8_t) || *(uint8_t *)optval > 31)
			return cma_err(EINVAL);
		c->ack_timeout = *(uint8_t *)optval;
		return 0;
	default:
		return cma_err(ENOSYS);
	}
}

int rdma_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *attr, int *mask)
{
	struct cma_id *c = to_cid(id);
	struct ibv_port_attr pa;

	if (attr == NULL || mask == NULL || id->verbs == NULL)
		return cma_err(EINVAL);
	if (cma_ud(c)) {
		/* As rdma-core moves a UD QP (ucma_init_ud_qp()): the Q_Key at INIT, no
		 * peer at RTR, a send PSN of 0 at RTS. */
		*mask = IBV_QP_STATE;
		switch (attr->qp_state) {
		case IBV_QPS_INIT:
			attr->pkey_index = 0;
			attr->port_num = 1;
			attr->qkey = cma_qkey(c);
			*mask |= IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY;
			return 0;
		case IBV_QPS_RTR:
			return 0;
		case IBV_QPS_RTS:
			attr->sq_psn = 0;
			*mask |= IBV_QP_SQ_PSN;
			return 0;
		default:
			return cma_err(EINVAL);
		}
	}
	switch (attr->qp_state) {
	case IBV_QPS_INIT:
		attr->pkey_index = 0;
		attr->port_num = 1;
		attr->qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
					IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
		*mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
		return 0;
	case IBV_QPS_RTR:
		if (c->state != CMA_REQUEST && c->state != CMA_CONNECT && c->state != CMA_RESPONSE)
			return cma_err(EINVAL);
		if (ibv_query_port(id->verbs, 1, &pa) != 0)
			return -1;
		memset(&attr->ah_attr, 0, sizeof(attr->ah_attr));
		attr->ah_attr.is_global = 1;
		attr->ah_attr.port_num = 1;
		attr->ah_attr.grh.sgid_index = 0;
		attr->ah_attr.grh.hop_limit = 64;
		attr->ah_attr.grh.traffic_class = c->tos;
		dpv_cm_gid_from_ipv4(ntohl(id->route.addr.dst_sin.sin_addr.s_addr),
				     attr->ah_attr.grh.dgid.raw);
		attr->path_mtu = pa.active_mtu;
		attr->dest_qp_num = c->remote_qpn;
		/* The Starting PSN of a REQ or REP is the PSN its sender expects to receive
		 * first, its peer's first send PSN: Linux's CM readies its QPs so (the active
		 * side's rq_psn from its REQ, sq_psn from the REP; the passive side's sq_psn
		 * from the REQ, rq_psn from its REP), and so does iPXE's. */
		attr->rq_psn = c->psn;
		attr->max_dest_rd_atomic = c->responder_resources;
		attr->min_rnr_timer = CMA_MIN_RNR_TIMER;
		*mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		return 0;
	case IBV_QPS_RTS:
		if (c->state != CMA_REQUEST && c->state != CMA_CONNECT && c->state != CMA_RESPONSE)
			return cma_err(EINVAL);
		attr->sq_psn = c->remote_psn;
		attr->timeout = c->ack_timeout;
		attr->retry_cnt = c->retry_count;
		attr->rnr_retry = c->rnr_retry_count;
		attr->max_rd_atomic = c->initiator_depth;
		*mask = IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
		return 0;
	default:
		return cma_err(EINVAL);
	}
}

int cma_modify_qp(struct cma_id *c, enum ibv_qp_state state)
{
	struct ibv_qp_attr a = {.qp_state = state};
	int mask, ret;

	if (rdma_init_qp_attr(&c->id, &a, &mask) != 0)
		return -1;
	ret = ibv_modify_qp(c->id.qp, &a, mask);
	return ret ? cma_err(ret) : 0;
}
