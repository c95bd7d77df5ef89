/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The connection calls of <rdma/rdma_cma.h> over the devices' CM: event channels, ids,
 * addresses, and the connection's life, with the QP moved through its states as the
 * kernel's RDMA CM moves it. rdmacm_priv.h says how events reach a channel.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>

#include "dpv_cm_ip.h"
#include "rdmacm_priv.h"

struct cma cma = {.lock = PTHREAD_MUTEX_INITIALIZER};

static pthread_once_t cma_once = PTHREAD_ONCE_INIT;
static int cma_init_err;

/* The first port rdma_bind_addr() gives for port 0: Linux's ephemeral range. */
#define CMA_PORT_FIRST 32768u
/* The local ACK timeout a connection's QP gets (4.096 us x 2^14, 67 ms), as Linux's
 * RDMA CM gives a RoCE QP, unless RDMA_OPTION_ID_ACK_TIMEOUT says otherwise. */
#define CMA_ACK_TIMEOUT 14u
/* The RNR NAK timer of the receive side (IBTA's code 12: 0.64 ms), as Linux's. */
#define CMA_MIN_RNR_TIMER 12u

static int err(int e)
{
	errno = e;
	return -1;
}

static void notify(void *arg)
{
	const uint64_t one = 1;

	/* An eventfd's counter only saturates; a failed write leaves it readable. */
	(void)!write(*(int *)arg, &one, sizeof(one));
}

static void conn_drop(struct cma_id *c);
static void dispatch(void);

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
	dispatch();
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
		if (cma.efd[n] < 0 || ibv_query_device(ctx, &cma.attr[n]) != 0) {
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
	return cma_init_err ? err(cma_init_err) : 0;
}

static int dev_of_ip(uint32_t ip)
{
	for (int i = 0; i < cma.n; i++)
		if (dpv_verbs_cm_ipv4(cma.ctx[i]) == ip)
			return i;
	return -1;
}

/* ---- event channels ---- */

static struct cma_channel *to_chan(struct rdma_event_channel *ch)
{
	return (struct cma_channel *)(void *)ch;
}

/* A channel no thread waits in, for channel_new(). */
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

static struct cma_channel *channel_new(void)
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
	c = channel_new();
	return c ? &c->ch : NULL;
}

void rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	struct cma_channel *c = to_chan(channel), **p;
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
static void chan_push(struct cma_channel *c, struct cma_event *e)
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
static void chan_settle(struct cma_channel *c)
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
	chan_push(to_chan(c->id.channel), e);
	return true;
}

static int post_locked(struct cma_id *c, enum rdma_cm_event_type type, int status)
{
	bool ok;

	pthread_mutex_lock(&cma.lock);
	ok = post(c, type, status, NULL, 0);
	pthread_mutex_unlock(&cma.lock);
	return ok ? 0 : err(ENOMEM);
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

static void qp_error(struct cma_id *c)
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
	c->id.channel = l->id.channel;
	c->id.context = l->id.context;
	c->id.ps = l->id.ps;
	c->id.port_num = 1;
	c->id.qp_type = IBV_QPT_RC;
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
	c->next = cma.ids;
	cma.ids = c;
	l->pending++;
	/* The consumer sees its own bytes: the IP CM header stripped, the length the
	 * field's rest, as the kernel reports it. */
	memcpy(ev->pdata, e->private_data + DPV_CM_IP_HDR_LEN,
	       DPV_CM_REQ_PDATA_LEN - DPV_CM_IP_HDR_LEN);
	ev->ev.id = &c->id;
	ev->ev.listen_id = &l->id;
	ev->ev.event = RDMA_CM_EVENT_CONNECT_REQUEST;
	ev->ev.param.conn.private_data = ev->pdata;
	ev->ev.param.conn.private_data_len = DPV_CM_REQ_PDATA_LEN - DPV_CM_IP_HDR_LEN;
	/* The peer's responder resources are what this side may initiate, and back. */
	ev->ev.param.conn.responder_resources = e->initiator_depth;
	ev->ev.param.conn.initiator_depth = e->responder_resources;
	ev->ev.param.conn.qp_num = e->remote_qpn;
	chan_push(to_chan(l->id.channel), ev);
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
			qp_error(c);
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
	chan_push(to_chan(c->id.channel), ev);
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
	c = find_conn(dev, e->id);
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
static void dispatch(void)
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
	struct cma_channel *ch = to_chan(channel);
	struct pollfd p = {.fd = channel->fd, .events = POLLIN};
	struct cma_event *e;
	int fl, ret = 0;

	if (event == NULL)
		return err(EINVAL);
	pthread_mutex_lock(&cma.lock);
	if (ch->dead)
		park();
	ch->waiters++;
	for (;;) {
		dispatch();
		e = chan_pop(ch);
		if (e != NULL) {
			if (e->ev.event == RDMA_CM_EVENT_CONNECT_REQUEST)
				to_cid(e->ev.listen_id)->pending--;
			*event = &e->ev;
			break;
		}
		fl = fcntl(channel->fd, F_GETFL);
		if (fl >= 0 && (fl & O_NONBLOCK)) {
			ret = err(EAGAIN);
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
	if (event == NULL)
		return err(EINVAL);
	free((struct cma_event *)(void *)event);
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
		return err(ECONNREFUSED);
	if (status < 0)
		return err(-status);
	return err(status ? status : EPROTO);
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

/* ---- ids ---- */

int rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id, void *context,
		   enum rdma_port_space ps)
{
	struct cma_channel *own = NULL;
	struct cma_id *c;

	if (id == NULL)
		return err(EINVAL);
	if (cma_init() != 0)
		return -1;
	/* The UD port spaces need SIDR, and RDMA_PS_IB IB addresses: neither is here. */
	if (ps != RDMA_PS_TCP)
		return err(EPROTONOSUPPORT);
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return err(ENOMEM);
	if (channel == NULL) {
		own = channel_new();
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
	c->id.qp_type = IBV_QPT_RC;
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
	struct cma_channel *ch = to_chan(id->channel);
	struct cma_event **e, *dead;

	pthread_mutex_lock(&cma.lock);
	dispatch();
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
	chan_settle(ch);
	/* Ids a listener gave keep living on their own. */
	for (struct cma_id *k = cma.ids; k != NULL; k = k->next)
		if (k->listener == c)
			k->listener = NULL;
	pthread_mutex_unlock(&cma.lock);
	if (c->sync_event != NULL)
		rdma_ack_cm_event(c->sync_event);
	if (c->sync)
		rdma_destroy_event_channel(id->channel);
	free(c);
	return 0;
}

/* ---- addresses ---- */

static bool port_in_use(uint32_t ip, uint16_t port, const struct cma_id *self)
{
	for (const struct cma_id *k = cma.ids; k != NULL; k = k->next) {
		uint32_t kip = ntohl(k->id.route.addr.src_sin.sin_addr.s_addr);

		if (k == self || k->passive || k->id.route.addr.src_addr.sa_family != AF_INET ||
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
	if (dev >= 0) {
		c->dev = dev;
		c->id.verbs = cma.ctx[dev];
		c->id.port_num = 1;
	}
	c->state = CMA_ADDR_BOUND;
	return 0;
}

int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	struct cma_id *c = to_cid(id);
	const struct sockaddr_in *sin = (const struct sockaddr_in *)(const void *)addr;
	int ret;

	if (addr == NULL || c->state != CMA_IDLE)
		return err(EINVAL);
	if (addr->sa_family != AF_INET)
		return err(EAFNOSUPPORT);
	pthread_mutex_lock(&cma.lock);
	ret = bind_locked(c, ntohl(sin->sin_addr.s_addr), ntohs(sin->sin_port));
	pthread_mutex_unlock(&cma.lock);
	return ret ? err(ret) : 0;
}

static uint64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000u + (uint64_t)t.tv_nsec / 1000000u;
}

/* The device that reaches @p dst: a bound id's own, else one whose port has the
 * address or whose ARP learns it within @p timeout_ms; -1 when none does. */
static int find_route(const struct cma_id *c, uint32_t dst, int timeout_ms)
{
	const uint64_t end = now_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0);
	const struct timespec pause = {.tv_nsec = 1000000};
	int dev = dev_of_ip(dst);

	if (c->dev >= 0 && dev != c->dev)
		dev = -1;
	if (dev >= 0)
		return dev;
	for (;;) {
		for (int i = 0; i < cma.n; i++)
			if ((c->dev < 0 || c->dev == i) && dpv_verbs_cm_reaches(cma.ctx[i], dst))
				return i;
		if (now_ms() >= end)
			return -1;
		nanosleep(&pause, NULL);
	}
}

int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src_addr,
		      struct sockaddr *dst_addr, int timeout_ms)
{
	struct cma_id *c = to_cid(id);
	const struct sockaddr_in *dst = (const struct sockaddr_in *)(const void *)dst_addr;
	uint32_t ip;
	int dev, ret = 0;

	if (dst_addr == NULL || (c->state != CMA_IDLE && c->state != CMA_ADDR_BOUND))
		return err(EINVAL);
	if (dst_addr->sa_family != AF_INET || (src_addr && src_addr->sa_family != AF_INET))
		return err(EAFNOSUPPORT);
	ip = ntohl(dst->sin_addr.s_addr);
	if (ip == INADDR_ANY)
		return err(EINVAL);
	pthread_mutex_lock(&cma.lock);
	if (src_addr != NULL && c->state == CMA_IDLE) {
		const struct sockaddr_in *s = (const struct sockaddr_in *)(const void *)src_addr;

		ret = bind_locked(c, ntohl(s->sin_addr.s_addr), ntohs(s->sin_port));
	} else if (c->state == CMA_IDLE) {
		ret = bind_locked(c, INADDR_ANY, 0);
	}
	pthread_mutex_unlock(&cma.lock);
	if (ret)
		return err(ret);
	dev = find_route(c, ip, timeout_ms);
	memcpy(&c->id.route.addr.dst_sin, dst, sizeof(*dst));
	if (dev < 0) {
		if (post_locked(c, RDMA_CM_EVENT_ADDR_ERROR, -ETIMEDOUT) != 0)
			return -1;
		return c->sync ? cma_sync_wait(c, RDMA_CM_EVENT_ADDR_RESOLVED) : 0;
	}
	c->dev = dev;
	c->id.verbs = cma.ctx[dev];
	c->id.port_num = 1;
	c->id.route.addr.src_sin.sin_addr.s_addr = htonl(dpv_verbs_cm_ipv4(cma.ctx[dev]));
	c->state = CMA_ADDR_RESOLVED;
	if (post_locked(c, RDMA_CM_EVENT_ADDR_RESOLVED, 0) != 0)
		return -1;
	return c->sync ? cma_sync_wait(c, RDMA_CM_EVENT_ADDR_RESOLVED) : 0;
}

int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	struct cma_id *c = to_cid(id);
	struct ibv_sa_path_rec *p = &c->path;
	struct ibv_port_attr pa;

	(void)timeout_ms;
	if (c->state != CMA_ADDR_RESOLVED)
		return err(EINVAL);
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
	p->packet_life_time = DPV_DEV_CM_PACKET_LIFE_TIME_DEFAULT;
	c->id.route.path_rec = p;
	c->id.route.num_paths = 1;
	c->state = CMA_ROUTE_RESOLVED;
	if (post_locked(c, RDMA_CM_EVENT_ROUTE_RESOLVED, 0) != 0)
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

static uint32_t new_psn(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return ((uint32_t)t.tv_nsec ^ (uint32_t)rand()) & 0xffffffu;
}

int rdma_listen(struct rdma_cm_id *id, int backlog)
{
	struct cma_id *c = to_cid(id);
	uint64_t sid = dpv_cm_ip_service_id(DPV_CM_PS_TCP, ntohs(id->route.addr.src_sin.sin_port));
	int ret = 0;

	if (c->state != CMA_ADDR_BOUND)
		return err(EINVAL);
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
	return ret ? err(ret) : 0;
}

int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *param)
{
	struct cma_id *c = to_cid(id);
	struct ibv_device_attr *da;
	uint8_t pdata[DPV_CM_REQ_PDATA_LEN] = {0};
	struct dpv_dev_cm_param p = {0};
	struct dpv_cm_ip_hdr h = {.ip_version = 4};
	uint32_t dst;
	int ret;

	if (c->state != CMA_ROUTE_RESOLVED)
		return err(EINVAL);
	if (param != NULL && param->private_data_len > DPV_CM_REQ_PDATA_LEN - DPV_CM_IP_HDR_LEN)
		return err(EINVAL);
	if (id->qp == NULL && (param == NULL || param->qp_num == 0))
		return err(EINVAL);
	da = &cma.attr[c->dev];
	dst = ntohl(id->route.addr.dst_sin.sin_addr.s_addr);
	h.src_port = ntohs(id->route.addr.src_sin.sin_port);
	dpv_cm_gid_from_ipv4(ntohl(id->route.addr.src_sin.sin_addr.s_addr), h.src);
	dpv_cm_gid_from_ipv4(dst, h.dst);
	(void)dpv_cm_ip_hdr_pack(&h, pdata, sizeof(pdata));
	c->responder_resources = param ? clamp(param->responder_resources, da->max_qp_rd_atom) :
					 (uint8_t)da->max_qp_rd_atom;
	c->initiator_depth = param ? clamp(param->initiator_depth, da->max_qp_init_rd_atom) :
				     (uint8_t)da->max_qp_init_rd_atom;
	c->retry_count = param ? clamp(param->retry_count, 7) : 7;
	c->rnr_retry_count = param ? clamp(param->rnr_retry_count, 7) : 7;
	if (param != NULL && param->private_data_len)
		memcpy(pdata + DPV_CM_IP_HDR_LEN, param->private_data, param->private_data_len);
	c->psn = new_psn();
	p.qpn = id->qp ? id->qp->qp_num : param->qp_num;
	p.psn = c->psn;
	p.responder_resources = c->responder_resources;
	p.initiator_depth = c->initiator_depth;
	p.retry_count = c->retry_count;
	p.rnr_retry_count = c->rnr_retry_count;
	p.private_data = pdata;
	p.private_data_len = sizeof(pdata);
	pthread_mutex_lock(&cma.lock);
	ret = dpv_verbs_cm_connect(id->verbs, dst,
				   dpv_cm_ip_service_id(DPV_CM_PS_TCP,
							ntohs(id->route.addr.dst_sin.sin_port)),
				   &p, &c->conn);
	if (ret == 0) {
		c->state = CMA_CONNECT;
		c->active = true;
	}
	pthread_mutex_unlock(&cma.lock);
	if (ret != 0)
		return err(ret);
	return c->sync ? cma_sync_wait(c, RDMA_CM_EVENT_ESTABLISHED) : 0;
}

int rdma_establish(struct rdma_cm_id *id)
{
	struct cma_id *c = to_cid(id);
	int ret;

	if (c->state != CMA_RESPONSE || id->qp != NULL)
		return err(EINVAL);
	pthread_mutex_lock(&cma.lock);
	c->established_by_call = true;
	ret = dpv_verbs_cm_establish(id->verbs, c->conn);
	pthread_mutex_unlock(&cma.lock);
	return ret ? err(ret) : 0;
}

int rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *param)
{
	struct cma_id *c = to_cid(id);
	struct ibv_device_attr *da = c->dev >= 0 ? &cma.attr[c->dev] : NULL;
	struct dpv_dev_cm_param p = {0};
	int ret;

	if (c->state != CMA_REQUEST)
		return err(EINVAL);
	if (param != NULL && param->private_data_len > DPV_CM_REP_PDATA_LEN)
		return err(EINVAL);
	if (id->qp == NULL && (param == NULL || param->qp_num == 0))
		return err(EINVAL);
	c->responder_resources = param ? clamp(param->responder_resources, da->max_qp_rd_atom) :
					 (uint8_t)da->max_qp_rd_atom;
	c->initiator_depth = param ? clamp(param->initiator_depth, da->max_qp_init_rd_atom) :
				     (uint8_t)da->max_qp_init_rd_atom;
	c->rnr_retry_count = param ? clamp(param->rnr_retry_count, 7) : 7;
	c->retry_count = 7;
	c->psn = new_psn();
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
		return err(ret);
	return c->sync ? cma_sync_wait(c, RDMA_CM_EVENT_ESTABLISHED) : 0;
}

int rdma_reject(struct rdma_cm_id *id, const void *private_data, uint8_t private_data_len)
{
	struct cma_id *c = to_cid(id);
	int ret;

	if (c->state != CMA_REQUEST && c->state != CMA_RESPONSE)
		return err(EINVAL);
	if (private_data_len > DPV_CM_REJ_PDATA_LEN ||
	    (private_data_len && private_data == NULL))
		return err(EINVAL);
	pthread_mutex_lock(&cma.lock);
	ret = dpv_verbs_cm_reject(id->verbs, c->conn, private_data, private_data_len);
	if (ret == 0)
		c->state = CMA_DONE;
	pthread_mutex_unlock(&cma.lock);
	return ret ? err(ret) : 0;
}

int rdma_disconnect(struct rdma_cm_id *id)
{
	struct cma_id *c = to_cid(id);
	int ret;

	pthread_mutex_lock(&cma.lock);
	/* The connection may have moved while the program took no event: an RTU, a
	 * DREQ (a program that polls its CQ and disconnects takes none). */
	dispatch();
	if (c->state != CMA_ESTABLISHED && c->state != CMA_PEER_DISCONNECTED) {
		pthread_mutex_unlock(&cma.lock);
		return err(EINVAL);
	}
	qp_error(c);
	ret = dpv_verbs_cm_disconnect(id->verbs, c->conn);
	/* The device's connection lives on to its TIMEWAIT_EXIT. */
	if (ret == 0)
		c->state = CMA_DISCONNECTING;
	pthread_mutex_unlock(&cma.lock);
	return ret ? err(ret) : 0;
}

int rdma_notify(struct rdma_cm_id *id, enum ibv_event_type event)
{
	(void)event;
	/* The device's CM takes the RTU as the connection's start; data before it is
	 * no event of its own here. */
	return to_cid(id)->state == CMA_IDLE ? err(EINVAL) : 0;
}

int rdma_migrate_id(struct rdma_cm_id *id, struct rdma_event_channel *channel)
{
	struct cma_id *c = to_cid(id);
	struct cma_channel *old = to_chan(id->channel), *own = NULL, *to;
	struct cma_event **e, *m;
	bool was_sync = c->sync;

	if (channel == NULL) {
		own = channel_new();
		if (own == NULL)
			return -1;
		channel = &own->ch;
	}
	to = to_chan(channel);
	pthread_mutex_lock(&cma.lock);
	/* Its events not yet taken go along. */
	for (e = &old->head; *e != NULL;) {
		if ((*e)->ev.id == id) {
			m = *e;
			*e = m->next;
			chan_push(to, m);
		} else {
			e = &(*e)->next;
		}
	}
	chan_settle(old);
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
		return err(EINVAL);
	if (level == RDMA_OPTION_IB)
		return err(optname == RDMA_OPTION_IB_PATH ? EOPNOTSUPP : ENOSYS);
	if (level != RDMA_OPTION_ID)
		return err(ENOSYS);
	switch (optname) {
	case RDMA_OPTION_ID_TOS:
		if (optlen != sizeof(uint8_t))
			return err(EINVAL);
		c->tos = *(uint8_t *)optval;
		return 0;
	case RDMA_OPTION_ID_REUSEADDR:
		if (optlen != sizeof(int))
			return err(EINVAL);
		c->reuseaddr = *(int *)optval != 0;
		return 0;
	case RDMA_OPTION_ID_AFONLY:
		/* Only IPv4 is bound: the flag changes nothing. */
		return optlen == sizeof(int) ? 0 : err(EINVAL);
	case RDMA_OPTION_ID_ACK_TIMEOUT:
		if (optlen != sizeof(uint8_t) || *(uint8_t *)optval > 31)
			return err(EINVAL);
		c->ack_timeout = *(uint8_t *)optval;
		return 0;
	default:
		return err(ENOSYS);
	}
}

int rdma_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *attr, int *mask)
{
	struct cma_id *c = to_cid(id);
	struct ibv_port_attr pa;

	if (attr == NULL || mask == NULL || id->verbs == NULL)
		return err(EINVAL);
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
			return err(EINVAL);
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
		attr->rq_psn = c->remote_psn;
		attr->max_dest_rd_atomic = c->responder_resources;
		attr->min_rnr_timer = CMA_MIN_RNR_TIMER;
		*mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		return 0;
	case IBV_QPS_RTS:
		if (c->state != CMA_REQUEST && c->state != CMA_CONNECT && c->state != CMA_RESPONSE)
			return err(EINVAL);
		attr->sq_psn = c->psn;
		attr->timeout = c->ack_timeout;
		attr->retry_cnt = c->retry_count;
		attr->rnr_retry = c->rnr_retry_count;
		attr->max_rd_atomic = c->initiator_depth;
		*mask = IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
		return 0;
	default:
		return err(EINVAL);
	}
}

int cma_modify_qp(struct cma_id *c, enum ibv_qp_state state)
{
	struct ibv_qp_attr a = {.qp_state = state};
	int mask, ret;

	if (rdma_init_qp_attr(&c->id, &a, &mask) != 0)
		return -1;
	ret = ibv_modify_qp(c->id.qp, &a, mask);
	return ret ? err(ret) : 0;
}
