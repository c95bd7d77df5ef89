/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Inside the drop-in librdmacm: the state its files share. Not installed.
 *
 * The library opens every device of the drop-in libibverbs once (rdma_get_devices()
 * keeps them open, as rdma-core's does) and gives each an eventfd that the device's CM
 * writes when it queues an event (dpv_verbs_cm_set_notify(), on the thread that drives
 * the device: the program's, or the engine's helper while the program sleeps). An event
 * channel's fd is an epoll set of those eventfds and one of its own, readable while the
 * channel holds an event; rdma_get_cm_event() moves the devices' events to the channels
 * of their ids, under one lock, and sleeps on the set when there is none.
 */
#ifndef DPV_RDMACM_PRIV_H
#define DPV_RDMACM_PRIV_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <rdma/rdma_cma.h>

#include "verbs_cm.h"

/* What an id is in its connection's life. */
enum cma_state {
	CMA_IDLE,
	CMA_ADDR_BOUND,      /* rdma_bind_addr() */
	CMA_ADDR_QUERY,      /* rdma_resolve_addr(): the devices' ARP under way */
	CMA_ADDR_RESOLVED,
	CMA_ROUTE_RESOLVED,
	CMA_LISTEN,
	CMA_CONNECT,         /* REQ sent */
	CMA_RESPONSE,        /* CONNECT_RESPONSE given to a program without a QP */
	CMA_REQUEST,         /* a CONNECT_REQUEST not answered yet */
	CMA_ACCEPTED,        /* REP sent */
	CMA_ESTABLISHED,
	CMA_PEER_DISCONNECTED, /* DISCONNECTED by the peer's DREQ: a DREP is owed */
	CMA_DISCONNECTING,   /* DREQ or DREP sent */
	CMA_DONE,            /* the device's connection is gone */
};

struct cma_event {
	struct rdma_cm_event ev;
	struct cma_event *next;
	struct cma_id *owner;         /* taken: the id it counts for (a CONNECT_REQUEST's
	                                 listener), whose destroy waits for its ack */
	uint8_t pdata[DPV_CM_REP_PDATA_LEN];
};

struct cma_channel {
	struct rdma_event_channel ch; /* ch.fd: the epoll set */
	int efd;                      /* readable while the queue holds an event */
	struct cma_event *head, *tail;
	int waiters;                  /* threads inside rdma_get_cm_event() */
	bool dead;                    /* destroyed */
	struct cma_channel *next;     /* cma.channels, or cma.spare */
};

struct cma_id {
	struct rdma_cm_id id;
	enum cma_state state;
	int dev;                    /* index in cma.ctx, -1 while not on a device */
	uint32_t conn;              /* the device CM's connection */
	uint32_t listen[DPV_MAX_DEVS]; /* CMA_LISTEN: the listener on each device, 0 none */
	uint32_t resolve[DPV_MAX_DEVS]; /* CMA_ADDR_QUERY: each device's resolution, 0 none */
	struct cma_id *listener;    /* a passive id's */
	int backlog, pending;       /* CMA_LISTEN: CONNECT_REQUESTs queued, not yet taken */
	bool sync;                  /* the channel is the library's (rdma_create_id(NULL)) */
	bool active;                /* rdma_connect() made its connection */
	bool passive;               /* made for a CONNECT_REQUEST: it holds no port */
	bool reuseaddr;
	bool established_by_call;   /* rdma_establish(): swallow the device's ESTABLISHED */
	uint8_t tos, ack_timeout;
	uint32_t psn;               /* this side's REQ or REP's Starting PSN: the QP's rq_psn */
	uint32_t remote_qpn;
	uint32_t remote_psn;        /* the peer's REQ or REP's Starting PSN: the QP's sq_psn */
	uint32_t qkey;              /* a UD id's Q_Key, once its QP or an answer set it */
	uint8_t responder_resources, initiator_depth; /* this side's, for the QP */
	uint8_t retry_count, rnr_retry_count;
	uint8_t rep_pdata[DPV_CM_REP_PDATA_LEN]; /* the REP's, for ESTABLISHED */
	struct ibv_sa_path_rec path;
	/* rdma_create_ep(): what rdma_get_request() gives the ids of a passive one. */
	bool has_ep_attr;
	struct ibv_qp_init_attr ep_attr;
	struct ibv_pd *ep_pd;
	bool own_cqs;               /* send_cq, recv_cq and their channels are ours */
	struct rdma_cm_event *sync_event; /* the last event of a sync id, kept for it */
	uint32_t taken, acked;      /* its events rdma_get_cm_event() gave, and acked */
	struct cma_id *next;        /* cma.ids */
};

struct cma {
	pthread_mutex_t lock;
	int n;
	struct ibv_context *ctx[DPV_MAX_DEVS];
	struct ibv_pd *pd[DPV_MAX_DEVS];    /* each device's PD, its ids' id.pd */
	int efd[DPV_MAX_DEVS];
	struct ibv_device_attr attr[DPV_MAX_DEVS];
	struct cma_id *ids;
	struct cma_channel *channels;
	/* Destroyed channels no thread waits in, for channel_new() to use again: a
	 * thread may still call into one it had (it finds it dead), so none is freed. */
	struct cma_channel *spare;
	uint16_t next_port;
	pthread_cond_t acked;       /* an event was acked (rdma_destroy_id() waits) */
};

extern struct cma cma;

/* Open the devices once: 0, or -1 with errno. */
int cma_init(void);

/* -1 with errno @p e, as the library's calls fail. */
static inline int cma_err(int e)
{
	errno = e;
	return -1;
}

static inline struct cma_channel *cma_chan(struct rdma_event_channel *ch)
{
	return (struct cma_channel *)(void *)ch;
}

/* rdmacm_event.c: channels and events. Those named "under cma.lock" want it held. */
struct cma_channel *cma_channel_new(void);
/* Queue @p e on @p c and make its fd readable (under cma.lock). */
void cma_chan_push(struct cma_channel *c, struct cma_event *e);
/* After events were taken out of @p c's queue (under cma.lock). */
void cma_chan_settle(struct cma_channel *c);
/* Queue an event without private data for @p c: 0, or -1 with errno ENOMEM. */
int cma_post(struct cma_id *c, enum rdma_cm_event_type type, int status);
/* The same under cma.lock: false when there is no memory for it. */
bool cma_post_locked(struct cma_id *c, enum rdma_cm_event_type type, int status);
/* Move the id's QP to the error state, if it has one. */
void cma_qp_error(struct cma_id *c);
/* Move every device's events to their ids' channels (under cma.lock). */
void cma_dispatch(void);

static inline struct cma_id *to_cid(struct rdma_cm_id *id)
{
	return (struct cma_id *)(void *)id;
}

/* A UD id (RDMA_PS_UDP, RDMA_PS_IPOIB): SIDR resolves it, no connection is made. */
static inline bool cma_ud(const struct cma_id *c)
{
	return c->id.qp_type == IBV_QPT_UD;
}

/* A UD id's Q_Key, RDMA_UDP_QKEY when none was set yet, as the kernel's RDMA CM gives
 * an RDMA_PS_UDP id (an RDMA_PS_IPOIB one's would be its IPoIB broadcast group's,
 * which a RoCE port has none of). */
uint32_t cma_qkey(struct cma_id *c);

/* A random Starting PSN (24 bits) for an id's REQ or REP. */
uint32_t cma_new_psn(void);

/* Wait on a sync id's channel for its next event; 0 when it is @p want with status 0,
 * else -1 with errno as rdma-core's library sets it. */
int cma_sync_wait(struct cma_id *c, enum rdma_cm_event_type want);

/* rdma_cm.c's QP state moves (the rdma_init_qp_attr() values). */
int cma_modify_qp(struct cma_id *c, enum ibv_qp_state state);

/* Give up @p c's resolutions on every device but @p keep (-1: all), under cma.lock. */
void cma_resolve_cancel(struct cma_id *c, int keep);
/* Put @p c on device @p dev: its context, PD and port (under cma.lock). */
void cma_set_dev(struct cma_id *c, int dev);
/* @p c's address resolved by device @p dev: the id on it, its source the port's
 * address, and ADDR_RESOLVED queued (under cma.lock); false when there is no memory
 * for the event. */
bool cma_addr_resolved(struct cma_id *c, int dev);

#endif /* DPV_RDMACM_PRIV_H */
