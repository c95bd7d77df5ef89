/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Async events: the queue of each context that ibv_get_async_event() reads, with its
 * file descriptor, and the port events every context of a device hears.
 */
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "verbs_priv.h"

/* Called by the device's owner when its link went up or down: every open context of
 * the device hears of it (ibv_get_async_event(3): IBV_EVENT_PORT_ACTIVE, _PORT_ERR). */
void dpv_verbs_port_event(struct dpv_dev *dev, bool up, void *arg)
{
	struct dpv_device *d = arg;

	(void)dev;
	pthread_mutex_lock(&d->contexts_lock);
	for (struct dpv_context *c = d->contexts; c != NULL; c = c->next_on_device)
		dpv_verbs_async_event(c, up ? IBV_EVENT_PORT_ACTIVE : IBV_EVENT_PORT_ERR, NULL);
	pthread_mutex_unlock(&d->contexts_lock);
}

void dpv_verbs_async_event(struct dpv_context *c, enum ibv_event_type type, void *obj)
{
	uint64_t one = 1;

	pthread_mutex_lock(&c->async_lock);
	if (c->async_tail - c->async_head < DPV_ASYNC_QUEUE) {
		c->async_q[c->async_tail % DPV_ASYNC_QUEUE] = (struct dpv_async_event){type, obj};
		c->async_tail++;
		if (write(c->vctx.context.async_fd, &one, sizeof(one)) != sizeof(one))
			c->async_lost++;
	} else {
		c->async_lost++;
	}
	pthread_mutex_unlock(&c->async_lock);
}

int ibv_get_async_event(struct ibv_context *context, struct ibv_async_event *event)
{
	struct dpv_context *c = to_ctx(context);
	struct dpv_async_event ev;
	uint64_t n;

	/* Blocks like the kernel's async fd; the engine helper keeps devices moving. */
	if (read(context->async_fd, &n, sizeof(n)) != sizeof(n))
		return -1;
	pthread_mutex_lock(&c->async_lock);
	ev = c->async_q[c->async_head % DPV_ASYNC_QUEUE];
	c->async_head++;
	/* Several events may be counted by one read: re-arm the fd for the rest. */
	if (c->async_tail != c->async_head) {
		uint64_t rest = c->async_tail - c->async_head;

		if (write(context->async_fd, &rest, sizeof(rest)) != sizeof(rest))
			c->async_lost++;
	}
	pthread_mutex_unlock(&c->async_lock);
	memset(event, 0, sizeof(*event));
	event->event_type = ev.type;
	switch (ev.type) {
	case IBV_EVENT_SRQ_LIMIT_REACHED:
	case IBV_EVENT_SRQ_ERR:
		event->element.srq = ev.obj;
		break;
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		event->element.qp = ev.obj;
		break;
	case IBV_EVENT_CQ_ERR:
		event->element.cq = ev.obj;
		break;
	default:
		event->element.port_num = 1;
		break;
	}
	return 0;
}

void ibv_ack_async_event(struct ibv_async_event *event)
{
	(void)event;
}
