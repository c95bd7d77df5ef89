/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The events of the drop-in librdmacm: event channels (an epoll set of the devices'
 * eventfds and one of their own), the devices' CM events moved to the channels of
 * their ids (a CONNECT_REQUEST becomes a new id, a REP readies the QP and sends the
 * RTU), rdma_get_cm_event() and what goes with it. rdmacm_priv.h says how an event
 * reaches a channel.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <arpa/inet.h>

#include "dpv_cm_ip.h"
#include "rdmacm_priv.h"

/* A channel no thread waits in, for cma_channel_new(). */
static void spare(struct cma_channel *c)
{
	pthread_mutex_lock(&cma.lock);
	c->dead = true;
	c->next = cma.spare;
	cma.spare = c;
	pthread_mutex_unlock(&cma.lock);
}

/* What a thread in rdma_get_cm_event() on a destroyed channel does (with cma.lock,
 * which it gives up): as a read() on rdma-core's channel, whose file is closed, it
 * never returns; the id's events are gone with the channel. rping's event thread waits
 * there while its main thread destroys the channel and exits. */
static void park(void)
{
	pthread_mutex_unlock(&cma.lock);
	for (;;)
		pause();
}

struct cma_channel *cma_channel_new(void)
{
	struct epoll_event e = {.events = EPOLLIN};
	struct cma_channel *c;
	int i;

	pthread_mutex_lock(&cma.lock);
	c = cma.spare;
	if (c != NULL) {
		cma.spare = c->next;
		memset(c, 0, sizeof(*c));
	}
	pthread_mutex_unlock(&cma.lock);
	if (c == NULL)
		c = calloc(1, sizeof(*c));
	if (c == NULL)
		return NULL;
	c->ch.fd = epoll_create1(EPOLL_CLOEXEC);
	c->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (c->ch.fd < 0 || c->efd < 0 || epoll_ctl(c->ch.fd, EPOLL_CTL_ADD, c->efd, &e) != 0)
		goto fail;
	for (i = 0; i < cma.n; i++)
		if (epoll_ctl(c->ch.fd, EPOLL_CTL_ADD, cma.efd[i], &e) != 0)
			goto fail;
	pthread_mutex_lock(&cma.lock);
	c->next = cma.channels;
	cma.channels = c;
	pthread_mutex_unlock(&cma.lock);
	return c;
fail:
	i = errno;
	if (c->ch.fd >= 0)
		close(c->ch.fd);
	if (c->efd >= 0)
		close(c->efd);
	spare(c);
	errno = i;
	return NULL;
}

struct rdma_event_channel *rdma_create_event_channel(void)
{
	struct cma_channel *c;

	if (cma_init() != 0)
		return NULL;
	c = cma_channel_new();
	return c ? &c->ch : NULL;
}

void rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	struct cma_channel *c = cma_chan(channel), **p;
	struct cma_event *e;

	pthread_mutex_lock(&cma.lock);
	for (p = &cma.channels; *p != NULL; p = &(*p)->next)
		if (*p == c) {
			*p = c->next;
			break;
		}
	while ((e = c->head) != NULL) {
		c->head = e->next;
		free(e);
	}
	close(c->efd);
	close(c->ch.fd);
	c->dead = true;
	/* Else the last thread waiting in it makes it a spare. */
	if (c->waiters == 0) {
		c->next = cma.spare;
		cma.spare = c;
	}
	pthread_mutex_unlock(&cma.lock);
}

/* Under cma.lock. */
void cma_chan_push(struct cma_channel *c, struct cma_event *e)
{
	const uint64_t one = 1;

	e->next = NULL;
	if (c->tail != NULL)
		c->tail->next = e;
	else
		c->head = e;
	c->tail = e;
	(void)!write(c->efd, &one, sizeof(one));
}

/* Under cma.lock. */
static struct cma_event *chan_pop(struct cma_channel *c)
{
	struct cma_event *e = c->head;
	uint64_t v;

	if (e == NULL)
		return NULL;
	c->head = e->next;
	if (c->head == NULL) {
		c->tail = NULL;
		(void)!read(c->efd, &v, sizeof(v));
	}
	return e;
}

/* After events were taken out of @p c's queue anywhere (under cma.lock): its tail
 * again, and its fd no longer readable when none is left. */
void cma_chan_settle(struct cma_channel *c)
{
	uint64_t v;

	c->tail = NULL;
	for (struct cma_event *e = c->head; e != NULL; e = e->next)
		c->tail = e;
	if (c->head == NULL)
		(void)!read(c->efd, &v, sizeof(v));
}

/* Queue an event of @p c (under cma.lock): false when there is no memory for it. */
static bool post(struct cma_id *c, enum rdma_cm_event_type type, int status,
		 const uint8_t *pdata, uint8_t len)
{
	struct cma_event *e = calloc(1, sizeof(*e));

	if (e == NULL)
		return false;
	e->ev.id = &c->id;
	e->ev.event = type;
	e->ev.status = status;
	if (len) {
		memcpy(e->pdata, pdata, len);
		e->ev.param.conn.private_data = e->pdata;
		e->ev.param.conn.private_data_len = len;
	}
	cma_chan_push(cma_chan(c->id.channel), e);
	return true;
}

bool cma_post_locked(struct cma_id *c, enum rdma_cm_event_type type, int status)
{
	return post(c, type, status, NULL, 0);
}

int cma_post(struct cma_id *c, enum rdma_cm_event_type type, int status)
{
	bool ok;

	pthread_mutex_lock(&cma.lock);
	ok = post(c, type, status, NULL, 0);
	pthread_mutex_unlock(&cma.lock);
	return ok ? 0 : cma_err(ENOMEM);
}

static struct cma_id *find_conn(int dev, uint32_t conn)
{
	for (struct cma_id *c = cma.ids; c != NULL; c = c->next)
		if (c->dev == dev && c->conn == conn && c->state != CMA_LISTEN &&
		    c->state != CMA_DONE)
			return c;
	return NULL;
}

static struct cma_id *find_listener(int dev, uint32_t listen)
{
	for (struct cma_id *c = cma.ids; c != NULL; c = c->next)
		if (c->state == CMA_LISTEN && c->listen[dev] == listen)
			return c;
	return NULL;
}

void cma_qp_error(struct cma_id *c)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_ERR};

	if (c->id.qp != NULL)
		(void)ibv_modify_qp(c->id.qp, &a, IBV_QP_STATE);
}

/* A CONNECT_REQUEST for a listener of the program (under cma.lock). */
static void conn_request(int dev, const struct dpv_dev_cm_event *e)
{
	struct ibv_context *ctx = cma.ctx[dev];
	struct cma_id *l = find_listener(dev, e->listen_id), *c;
	struct dpv_cm_ip_hdr h;
	struct cma_event *ev;
	uint32_t src;

	if (l == NULL || (l->backlog > 0 && l->pending >= l->backlog) ||
	    dpv_cm_ip_hdr_unpack(e->private_data, e->private_data_len, &h) != 0 ||
	    h.ip_version != 4 || !dpv_cm_gid_to_ipv4(h.src, &src) ||
	    (c = calloc(1, sizeof(*c))) == NULL) {
		(void)dpv_verbs_cm_reject(ctx, e->id, NULL, 0);
		return;
	}
	ev = calloc(1, sizeof(*ev));
	if (ev == NULL) {
		free(c);
		(void)dpv_verbs_cm_reject(ctx, e->id, NULL, 0);
		return;
	}
	c->id.verbs = ctx;
	c->id.pd = cma.pd[dev];
	c->id.channel = l->id.channel;
	c->id.context = l->id.context;
	c->id.ps = l->id.ps;
	c->id.port_num = 1;
	c->id.qp_type = l->id.qp_type;
	c->id.route.addr.src_sin.sin_family = AF_INET;
	c->id.route.addr.src_sin.sin_addr.s_addr = htonl(dpv_verbs_cm_ipv4(ctx));
	c->id.route.addr.src_sin.sin_port = l->id.route.addr.src_sin.sin_port;
	c->id.route.addr.dst_sin.sin_family = AF_INET;
	c->id.route.addr.dst_sin.sin_addr.s_addr = htonl(e->peer_ip);
	c->id.route.addr.dst_sin.sin_port = htons(h.src_port);
	c->state = CMA_REQUEST;
	c->passive = true;
	c->dev = dev;
	c->conn = e->id;
	c->listener = l;
	c->sync = false;
	c->tos = l->tos;
	c->ack_timeout = l->ack_timeout;
	c->remote_qpn = e->remote_qpn;
	c->remote_psn = e->remote_psn;
	/* The REP's Starting PSN, chosen now: a program that readies its own QP with
	 * rdma_init_qp_attr() before rdma_accept() (rping -q) gets the rq_psn the REP
	 * will carry. */
	c->psn = cma_new_psn();
	c->next = cma.ids;
	cma.ids = c;
	l->pending++;
	ev->ev.id = &c->id;
	ev->ev.listen_id = &l->id;
	ev->ev.event = RDMA_CM_EVENT_CONNECT_REQUEST;
	/* The consumer sees its own bytes: the IP CM header stripped, the length the
	 * field's rest, as the kernel reports it. */
	if (e->ud) {
		/* A SIDR_REQ names no QP: the kernel's event has no QP number, Q_Key nor
		 * address handle, the program answers the sender of what it receives. */
		memcpy(ev->pdata, e->private_data + DPV_CM_IP_HDR_LEN,
		       DPV_CM_SIDR_REQ_PDATA_LEN - DPV_CM_IP_HDR_LEN);
		ev->ev.param.ud.private_data = ev->pdata;
		ev->ev.param.ud.private_data_len = DPV_CM_SIDR_REQ_PDATA_LEN - DPV_CM_IP_HDR_LEN;
		cma_chan_push(cma_chan(l->id.channel), ev);
		return;
	}
	memcpy(ev->pdata, e->private_data + DPV_CM_IP_HDR_LEN,
	       DPV_CM_REQ_PDATA_LEN - DPV_CM_IP_HDR_LEN);
	ev->ev.param.conn.private_data = ev->pdata;
	ev->ev.param.conn.private_data_len = DPV_CM_REQ_PDATA_LEN - DPV_CM_IP_HDR_LEN;
	/* The peer's responder resources are what this side may initiate, and back. */
	ev->ev.param.conn.responder_resources = e->initiator_depth;
	ev->ev.param.conn.initiator_depth = e->responder_resources;
	ev->ev.param.conn.qp_num = e->remote_qpn;
	cma_chan_push(cma_chan(l->id.channel), ev);
}

/* The REP of an active id: ready its QP and send the RTU (under cma.lock). */
static void conn_response(struct cma_id *c, const struct dpv_dev_cm_event *e)
{
	struct ibv_context *ctx = cma.ctx[c->dev];
	struct cma_event *ev;

	c->remote_qpn = e->remote_qpn;
	c->remote_psn = e->remote_psn;
	memcpy(c->rep_pdata, e->private_data, sizeof(c->rep_pdata));
	if (c->id.qp != NULL) {
		if (cma_modify_qp(c, IBV_QPS_RTR) != 0 || cma_modify_qp(c, IBV_QPS_RTS) != 0) {
			(void)dpv_verbs_cm_reject(ctx, c->conn, NULL, 0);
			cma_qp_error(c);
			c->state = CMA_DONE;
			(void)post(c, RDMA_CM_EVENT_CONNECT_ERROR, -errno, NULL, 0);
			return;
		}
		/* ESTABLISHED comes from the device at once, with the REP's data. */
		(void)dpv_verbs_cm_establish(ctx, c->conn);
		return;
	}
	c->state = CMA_RESPONSE;
	ev = calloc(1, sizeof(*ev));
	if (ev == NULL)
		return;
	ev->ev.id = &c->id;
	ev->ev.event = RDMA_CM_EVENT_CONNECT_RESPONSE;
	memcpy(ev->pdata, e->private_data, DPV_CM_REP_PDATA_LEN);
	ev->ev.param.conn.private_data = ev->pdata;
	ev->ev.param.conn.private_data_len = DPV_CM_REP_PDATA_LEN;
	ev->ev.param.conn.responder_resources = e->initiator_depth;
	ev->ev.param.conn.initiator_depth = e->responder_resources;
	ev->ev.param.conn.qp_num = e->remote_qpn;
	cma_chan_push(cma_chan(c->id.channel), ev);
}

/* The one event of a UD id's SIDR request (under cma.lock), as the kernel's RDMA CM
 * gives it (cma_sidr_rep_handler()): ESTABLISHED with the peer's QP, Q_Key and an
 * address handle's attributes for it; UNREACHABLE with the SIDR_REP's status, or
 * -ETIMEDOUT when none came; ADDR_ERROR -EINVAL when the SIDR_REP's Q_Key is 0 or not
 * the one the id's QP took. Each that a SIDR_REP gave carries its private data. */
static void sidr_answer(struct cma_id *c, const struct dpv_dev_cm_event *e)
{
	struct ibv_ah_attr *ah;
	struct cma_event *ev;

	c->state = CMA_DONE;
	ev = calloc(1, sizeof(*ev));
	if (ev == NULL)
		return;
	ev->ev.id = &c->id;
	if (e->type != DPV_CM_EV_ESTABLISHED) {
		ev->ev.event = RDMA_CM_EVENT_UNREACHABLE;
		ev->ev.status = e->sidr_status ? e->sidr_status : -ETIMEDOUT;
	} else if (e->remote_qkey == 0 || (c->qkey != 0 && c->qkey != e->remote_qkey)) {
		ev->ev.event = RDMA_CM_EVENT_ADDR_ERROR;
		ev->ev.status = -EINVAL;
	} else {
		c->qkey = e->remote_qkey;
		ev->ev.event = RDMA_CM_EVENT_ESTABLISHED;
		ev->ev.param.ud.qp_num = e->remote_qpn;
		ev->ev.param.ud.qkey = e->remote_qkey;
		/* RoCEv2's: a GRH to the peer's IPv4-mapped GID from GID index 0. */
		ah = &ev->ev.param.ud.ah_attr;
		ah->is_global = 1;
		ah->port_num = 1;
		ah->grh.sgid_index = 0;
		ah->grh.hop_limit = 64;
		ah->grh.traffic_class = c->tos;
		dpv_cm_gid_from_ipv4(ntohl(c->id.route.addr.dst_sin.sin_addr.s_addr),
				     ah->grh.dgid.raw);
	}
	if (e->type == DPV_CM_EV_ESTABLISHED || e->sidr_status != 0) {
		memcpy(ev->pdata, e->private_data, DPV_CM_SIDR_REP_PDATA_LEN);
		ev->ev.param.ud.private_data = ev->pdata;
		ev->ev.param.ud.private_data_len = DPV_CM_SIDR_REP_PDATA_LEN;
	}
	cma_chan_push(cma_chan(c->id.channel), ev);
}

/* Device @p dev's answer to a resolution of rdma_resolve_addr() (under cma.lock): the
 * first device that resolves the address is the id's, the others give up; ADDR_ERROR
 * once the last has failed, the id bound again as it was (the kernel's returns to
 * ADDR_BOUND), so the program may try again. A cancelled resolution's answer finds no
 * id. */
static void addr_answer(int dev, const struct dpv_dev_cm_event *e)
{
	struct cma_id *c;
	int left = 0;

	for (c = cma.ids; c != NULL; c = c->next)
		if (c->state == CMA_ADDR_QUERY && c->resolve[dev] == e->id)
			break;
	if (c == NULL)
		return;
	c->resolve[dev] = 0;
	if (e->type == DPV_CM_EV_ADDR_RESOLVED) {
		cma_resolve_cancel(c, -1);
		(void)cma_addr_resolved(c, dev);
		return;
	}
	for (int i = 0; i < cma.n; i++)
		left += c->resolve[i] != 0;
	if (left == 0) {
		c->state = CMA_ADDR_BOUND;
		(void)post(c, RDMA_CM_EVENT_ADDR_ERROR, -ETIMEDOUT, NULL, 0);
	}
}

/* Device @p dev's port was removed (under cma.lock): as the kernel's RDMA CM tells of
 * an unregistered device, every id on it gets DEVICE_REMOVAL (its QP in the error
 * state, whatever the id's state was), after which it may only be destroyed; the
 * device's CM has let go of their connections already. A listener on every device
 * keeps listening on the others, and an unbound id's resolution goes on on them. */
static void device_removed(int dev)
{
	for (struct cma_id *c = cma.ids; c != NULL; c = c->next) {
		if (c->state == CMA_LISTEN && c->dev < 0) {
			c->listen[dev] = 0;
			continue;
		}
		if (c->dev != dev) {
			if (c->state == CMA_ADDR_QUERY && c->resolve[dev] != 0) {
				struct dpv_dev_cm_event e = {.type = DPV_CM_EV_ADDR_ERROR,
							     .id = c->resolve[dev]};

				addr_answer(dev, &e);
			}
			continue;
		}
		if (c->state == CMA_ADDR_QUERY)
			cma_resolve_cancel(c, -1);
		cma_qp_error(c);
		c->state = CMA_DONE;
		(void)post(c, RDMA_CM_EVENT_DEVICE_REMOVAL, 0, NULL, 0);
	}
}

/* One event of device @p dev (under cma.lock), on whichever thread takes events. An
 * event leaves the id's QP alone, as rdma-core's does (the kernel's CM never sees a
 * QP made in user space): the program may have destroyed it with ibv_destroy_qp()
 * already, as rping does while its event thread takes the DISCONNECTED. */
static void dispatch_one(int dev, const struct dpv_dev_cm_event *e)
{
	struct ibv_context *ctx = cma.ctx[dev];
	struct cma_id *c;

	if (e->type == DPV_CM_EV_CONNECT_REQUEST) {
		conn_request(dev, e);
		return;
	}
	if (e->type == DPV_CM_EV_ADDR_RESOLVED || e->type == DPV_CM_EV_ADDR_ERROR) {
		addr_answer(dev, e);
		return;
	}
	if (e->type == DPV_CM_EV_DEVICE_REMOVAL) {
		device_removed(dev);
		return;
	}
	c = find_conn(dev, e->id);
	if (e->ud) {
		/* A destroyed id's request is gone with its answer: nothing is owed. */
		if (c != NULL && c->active)
			sidr_answer(c, e);
		return;
	}
	if (c == NULL) {
		/* The id went away meanwhile: answer for it, as a destroyed kernel id does. */
		if (e->type == DPV_CM_EV_CONNECT_RESPONSE)
			(void)dpv_verbs_cm_reject(ctx, e->id, NULL, 0);
		else if (e->type == DPV_CM_EV_ESTABLISHED || e->type == DPV_CM_EV_DISCONNECTED)
			(void)dpv_verbs_cm_disconnect(ctx, e->id);
		return;
	}
	switch (e->type) {
	case DPV_CM_EV_CONNECT_RESPONSE:
		conn_response(c, e);
		break;
	case DPV_CM_EV_ESTABLISHED:
		c->state = CMA_ESTABLISHED;
		if (c->established_by_call)
			break;
		if (c->active)
			(void)post(c, RDMA_CM_EVENT_ESTABLISHED, 0, c->rep_pdata,
				   DPV_CM_REP_PDATA_LEN);
		else
			(void)post(c, RDMA_CM_EVENT_ESTABLISHED, 0, NULL, 0);
		break;
	case DPV_CM_EV_REJECTED:
		c->state = CMA_DONE;
		(void)post(c, RDMA_CM_EVENT_REJECTED, e->rej_reason, e->private_data,
			   DPV_CM_REJ_PDATA_LEN);
		break;
	case DPV_CM_EV_UNREACHABLE:
		c->state = CMA_DONE;
		(void)post(c, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT, NULL, 0);
		break;
	case DPV_CM_EV_DISCONNECTED:
		if (c->state != CMA_DISCONNECTING)
			c->state = CMA_PEER_DISCONNECTED;
		(void)post(c, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, 0);
		break;
	case DPV_CM_EV_TIMEWAIT_EXIT:
		c->state = CMA_DONE;
		(void)post(c, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0, NULL, 0);
		break;
	default:
		break;
	}
}

/* Move every device's events to their channels (under cma.lock), so an id's state is
 * its connection's. The eventfd is read before the queue, so an event queued after
 * the look makes it readable again. */
void cma_dispatch(void)
{
	struct dpv_dev_cm_event e;
	uint64_t v;

	for (int i = 0; i < cma.n; i++) {
		if (read(cma.efd[i], &v, sizeof(v)) != (ssize_t)sizeof(v))
			continue;
		while (dpv_verbs_cm_get_event(cma.ctx[i], &e) == 0)
			dispatch_one(i, &e);
	}
}

int rdma_get_cm_event(struct rdma_event_channel *channel, struct rdma_cm_event **event)
{
	struct cma_channel *ch = cma_chan(channel);
	struct pollfd p = {.fd = channel->fd, .events = POLLIN};
	struct cma_event *e;
	int fl, ret = 0;

	if (event == NULL)
		return cma_err(EINVAL);
	pthread_mutex_lock(&cma.lock);
	if (ch->dead)
		park();
	ch->waiters++;
	for (;;) {
		cma_dispatch();
		e = chan_pop(ch);
		if (e != NULL) {
			if (e->ev.event == RDMA_CM_EVENT_CONNECT_REQUEST) {
				to_cid(e->ev.listen_id)->pending--;
				e->owner = to_cid(e->ev.listen_id);
			} else {
				e->owner = to_cid(e->ev.id);
			}
			e->owner->taken++;
			*event = &e->ev;
			break;
		}
		fl = fcntl(channel->fd, F_GETFL);
		if (fl >= 0 && (fl & O_NONBLOCK)) {
			ret = cma_err(EAGAIN);
			break;
		}
		pthread_mutex_unlock(&cma.lock);
		if (poll(&p, 1, -1) < 0 && errno != EINTR)
			return -1;
		pthread_mutex_lock(&cma.lock);
		if (ch->dead) {
			if (--ch->waiters == 0) {
				ch->next = cma.spare;
				cma.spare = ch;
			}
			park();
		}
	}
	ch->waiters--;
	pthread_mutex_unlock(&cma.lock);
	return ret;
}

int rdma_ack_cm_event(struct rdma_cm_event *event)
{
	struct cma_event *e = (struct cma_event *)(void *)event;

	if (event == NULL)
		return cma_err(EINVAL);
	pthread_mutex_lock(&cma.lock);
	if (e->owner != NULL) {
		e->owner->acked++;
		pthread_cond_broadcast(&cma.acked);
	}
	pthread_mutex_unlock(&cma.lock);
	free(e);
	return 0;
}

int cma_sync_wait(struct cma_id *c, enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev;
	int status;
	enum rdma_cm_event_type got;

	if (c->sync_event != NULL) {
		rdma_ack_cm_event(c->sync_event);
		c->sync_event = NULL;
	}
	if (rdma_get_cm_event(c->id.channel, &ev) != 0)
		return -1;
	/* Kept for the program to read (rdma-core's id->event), until the next call. */
	c->sync_event = ev;
	c->id.event = ev;
	status = ev->status;
	got = ev->event;
	if (got == want && status == 0)
		return 0;
	if (got == RDMA_CM_EVENT_REJECTED)
		return cma_err(ECONNREFUSED);
	if (status < 0)
		return cma_err(-status);
	return cma_err(status ? status : EPROTO);
}

const char *rdma_event_str(enum rdma_cm_event_type event)
{
	static const char *const s[] = {
		[RDMA_CM_EVENT_ADDR_RESOLVED] = "RDMA_CM_EVENT_ADDR_RESOLVED",
		[RDMA_CM_EVENT_ADDR_ERROR] = "RDMA_CM_EVENT_ADDR_ERROR",
		[RDMA_CM_EVENT_ROUTE_RESOLVED] = "RDMA_CM_EVENT_ROUTE_RESOLVED",
		[RDMA_CM_EVENT_ROUTE_ERROR] = "RDMA_CM_EVENT_ROUTE_ERROR",
		[RDMA_CM_EVENT_CONNECT_REQUEST] = "RDMA_CM_EVENT_CONNECT_REQUEST",
		[RDMA_CM_EVENT_CONNECT_RESPONSE] = "RDMA_CM_EVENT_CONNECT_RESPONSE",
		[RDMA_CM_EVENT_CONNECT_ERROR] = "RDMA_CM_EVENT_CONNECT_ERROR",
		[RDMA_CM_EVENT_UNREACHABLE] = "RDMA_CM_EVENT_UNREACHABLE",
		[RDMA_CM_EVENT_REJECTED] = "RDMA_CM_EVENT_REJECTED",
		[RDMA_CM_EVENT_ESTABLISHED] = "RDMA_CM_EVENT_ESTABLISHED",
		[RDMA_CM_EVENT_DISCONNECTED] = "RDMA_CM_EVENT_DISCONNECTED",
		[RDMA_CM_EVENT_DEVICE_REMOVAL] = "RDMA_CM_EVENT_DEVICE_REMOVAL",
		[RDMA_CM_EVENT_MULTICAST_JOIN] = "RDMA_CM_EVENT_MULTICAST_JOIN",
		[RDMA_CM_EVENT_MULTICAST_ERROR] = "RDMA_CM_EVENT_MULTICAST_ERROR",
		[RDMA_CM_EVENT_ADDR_CHANGE] = "RDMA_CM_EVENT_ADDR_CHANGE",
		[RDMA_CM_EVENT_TIMEWAIT_EXIT] = "RDMA_CM_EVENT_TIMEWAIT_EXIT",
	};

	if ((unsigned int)event < sizeof(s) / sizeof(s[0]))
		return s[event];
	return "UNKNOWN EVENT";
}
