/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The QP, SRQ and endpoint calls of <rdma/rdma_cma.h> (rdma_create_qp(),
 * rdma_create_ep(), rdma_getaddrinfo(), rdma_get_request()...): verbs objects made for
 * an id on its device, as rdma-core's librdmacm makes them, the QP moved to INIT at
 * once and through RTR and RTS by the connection (rdmacm_cma.c).
 */
#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>

#include "rdmacm_priv.h"

/* How long rdma_create_ep() waits for an address or route (rdma-core's own wait). */
#define CMA_EP_TIMEOUT_MS 2000

static void destroy_cqs(struct cma_id *c)
{
	struct rdma_cm_id *id = &c->id;

	if (!c->own_cqs)
		return;
	if (id->recv_cq != NULL && id->recv_cq != id->send_cq)
		ibv_destroy_cq(id->recv_cq);
	if (id->send_cq != NULL)
		ibv_destroy_cq(id->send_cq);
	if (id->recv_cq_channel != NULL)
		ibv_destroy_comp_channel(id->recv_cq_channel);
	if (id->send_cq_channel != NULL)
		ibv_destroy_comp_channel(id->send_cq_channel);
	id->send_cq = id->recv_cq = NULL;
	id->send_cq_channel = id->recv_cq_channel = NULL;
	c->own_cqs = false;
}

/* A CQ and its completion channel for each side the caller left without one. */
static int create_cqs(struct cma_id *c, uint32_t send_size, uint32_t recv_size)
{
	struct rdma_cm_id *id = &c->id;

	c->own_cqs = true;
	if (recv_size) {
		id->recv_cq_channel = ibv_create_comp_channel(id->verbs);
		if (id->recv_cq_channel == NULL)
			goto fail;
		id->recv_cq = ibv_create_cq(id->verbs, (int)recv_size, id, id->recv_cq_channel, 0);
		if (id->recv_cq == NULL)
			goto fail;
	}
	if (send_size) {
		id->send_cq_channel = ibv_create_comp_channel(id->verbs);
		if (id->send_cq_channel == NULL)
			goto fail;
		id->send_cq = ibv_create_cq(id->verbs, (int)send_size, id, id->send_cq_channel, 0);
		if (id->send_cq == NULL)
			goto fail;
	}
	return 0;
fail:
	destroy_cqs(c);
	return cma_err(ENOMEM);
}

int rdma_create_qp_ex(struct rdma_cm_id *id, struct ibv_qp_init_attr_ex *attr)
{
	struct cma_id *c = to_cid(id);
	struct ibv_qp *qp;

	if (attr == NULL || id->verbs == NULL || id->qp != NULL)
		return cma_err(EINVAL);
	/* An RC QP on an RDMA_PS_TCP id, a UD one on a UD id. */
	if (attr->qp_type != id->qp_type)
		return cma_err(EOPNOTSUPP);
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || attr->pd == NULL) {
		attr->pd = cma.pd[c->dev];
		attr->comp_mask |= IBV_QP_INIT_ATTR_PD;
	}
	if (attr->pd->context != id->verbs)
		return cma_err(EINVAL);
	if (attr->srq == NULL)
		attr->srq = id->srq;
	if ((attr->send_cq == NULL || attr->recv_cq == NULL) &&
	    create_cqs(c, attr->send_cq ? 0 : attr->cap.max_send_wr,
		       attr->recv_cq ? 0 : attr->cap.max_recv_wr) != 0)
		return -1;
	if (attr->send_cq == NULL)
		attr->send_cq = id->send_cq;
	if (attr->recv_cq == NULL)
		attr->recv_cq = id->recv_cq;
	qp = ibv_create_qp_ex(id->verbs, attr);
	if (qp == NULL) {
		destroy_cqs(c);
		return -1;
	}
	id->qp = qp;
	id->pd = attr->pd;
	id->qp_type = attr->qp_type;
	/* Ready for receives at once, as rdma-core's is; a UD QP for sends too, it needs
	 * nothing of a peer. */
	if (cma_modify_qp(c, IBV_QPS_INIT) != 0 ||
	    (cma_ud(c) && (cma_modify_qp(c, IBV_QPS_RTR) != 0 ||
			   cma_modify_qp(c, IBV_QPS_RTS) != 0))) {
		int e = errno;

		ibv_destroy_qp(qp);
		id->qp = NULL;
		destroy_cqs(c);
		return cma_err(e);
	}
	return 0;
}

int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr_ex ex;
	int ret;

	if (attr == NULL)
		return cma_err(EINVAL);
	memset(&ex, 0, sizeof(ex));
	memcpy(&ex, attr, sizeof(*attr));
	ex.comp_mask = pd ? IBV_QP_INIT_ATTR_PD : 0;
	ex.pd = pd;
	ret = rdma_create_qp_ex(id, &ex);
	if (ret == 0) {
		/* The caller reads back the CQs and sizes made for it. */
		attr->send_cq = ex.send_cq;
		attr->recv_cq = ex.recv_cq;
		attr->srq = ex.srq;
		attr->cap = ex.cap;
	}
	return ret;
}

void rdma_destroy_qp(struct rdma_cm_id *id)
{
	if (id->qp == NULL)
		return;
	ibv_destroy_qp(id->qp);
	id->qp = NULL;
	destroy_cqs(to_cid(id));
}

int rdma_create_srq_ex(struct rdma_cm_id *id, struct ibv_srq_init_attr_ex *attr)
{
	struct ibv_srq_init_attr a;
	struct ibv_pd *pd;

	if (attr == NULL || id->verbs == NULL || id->srq != NULL)
		return cma_err(EINVAL);
	/* The drop-in makes no XRC ids (RDMA_PS_IB, which rdma_getaddrinfo() refuses), so no
	 * id has the XRC domain an XRC SRQ would need. */
	if ((attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) && attr->srq_type != IBV_SRQT_BASIC)
		return cma_err(EOPNOTSUPP);
	pd = (attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) && attr->pd ? attr->pd :
	     cma.pd[to_cid(id)->dev];
	memset(&a, 0, sizeof(a));
	a.srq_context = attr->srq_context;
	a.attr = attr->attr;
	id->srq = ibv_create_srq(pd, &a);
	if (id->srq == NULL)
		return -1;
	attr->attr = a.attr;
	id->pd = pd;
	return 0;
}

int rdma_create_srq(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	struct ibv_srq_init_attr_ex ex;
	int ret;

	if (attr == NULL)
		return cma_err(EINVAL);
	memset(&ex, 0, sizeof(ex));
	ex.srq_context = attr->srq_context;
	ex.attr = attr->attr;
	ex.comp_mask = pd ? IBV_SRQ_INIT_ATTR_PD : 0;
	ex.pd = pd;
	ret = rdma_create_srq_ex(id, &ex);
	if (ret == 0)
		attr->attr = ex.attr;
	return ret;
}

void rdma_destroy_srq(struct rdma_cm_id *id)
{
	if (id->srq == NULL)
		return;
	ibv_destroy_srq(id->srq);
	id->srq = NULL;
}

/* ---- addresses by name ---- */

static int gai_errno(int e)
{
	switch (e) {
	case EAI_MEMORY:
		return ENOMEM;
	case EAI_FAMILY:
		return EAFNOSUPPORT;
	case EAI_SERVICE:
	case EAI_SOCKTYPE:
	case EAI_BADFLAGS:
		return EINVAL;
	case EAI_SYSTEM:
		return errno;
	default:
		return EADDRNOTAVAIL;
	}
}

static struct sockaddr *copy_sin(const struct sockaddr_in *s)
{
	struct sockaddr_in *d = malloc(sizeof(*d));

	if (d != NULL)
		memcpy(d, s, sizeof(*d));
	return (struct sockaddr *)d;
}

int rdma_getaddrinfo(const char *node, const char *service, const struct rdma_addrinfo *hints,
		     struct rdma_addrinfo **res)
{
	struct addrinfo h = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *ai = NULL;
	struct rdma_addrinfo *r;
	struct sockaddr_in sin;
	bool passive = hints && (hints->ai_flags & RAI_PASSIVE);
	int ps = hints && hints->ai_port_space ? hints->ai_port_space : RDMA_PS_TCP;
	int qp_type = ps == RDMA_PS_TCP ? IBV_QPT_RC : IBV_QPT_UD;
	int ret;

	if (res == NULL || (node == NULL && service == NULL))
		return cma_err(EINVAL);
	if (hints != NULL && hints->ai_family != AF_UNSPEC && hints->ai_family != AF_INET)
		return cma_err(EAFNOSUPPORT);
	if (ps != RDMA_PS_TCP && ps != RDMA_PS_UDP && ps != RDMA_PS_IPOIB)
		return cma_err(EPROTONOSUPPORT);
	/* A port space's ids take one QP type: RC for RDMA_PS_TCP, UD for the others. */
	if (hints != NULL && hints->ai_qp_type != 0 && hints->ai_qp_type != qp_type)
		return cma_err(EOPNOTSUPP);
	if (hints != NULL && (hints->ai_flags & RAI_NUMERICHOST))
		h.ai_flags |= AI_NUMERICHOST;
	if (passive)
		h.ai_flags |= AI_PASSIVE;
	ret = getaddrinfo(node, service, &h, &ai);
	if (ret != 0)
		return cma_err(gai_errno(ret));
	memcpy(&sin, ai->ai_addr, sizeof(sin));
	freeaddrinfo(ai);
	r = calloc(1, sizeof(*r));
	if (r == NULL)
		return cma_err(ENOMEM);
	r->ai_flags = hints ? hints->ai_flags : 0;
	r->ai_family = AF_INET;
	r->ai_qp_type = qp_type;
	r->ai_port_space = ps;
	if (passive) {
		r->ai_src_addr = copy_sin(&sin);
		r->ai_src_len = sizeof(sin);
	} else {
		r->ai_dst_addr = copy_sin(&sin);
		r->ai_dst_len = sizeof(sin);
		if (hints != NULL && hints->ai_src_addr != NULL &&
		    hints->ai_src_addr->sa_family == AF_INET) {
			r->ai_src_addr =
				copy_sin((const struct sockaddr_in *)(const void *)hints->ai_src_addr);
			r->ai_src_len = sizeof(sin);
		}
	}
	if ((passive && r->ai_src_addr == NULL) || (!passive && r->ai_dst_addr == NULL)) {
		rdma_freeaddrinfo(r);
		return cma_err(ENOMEM);
	}
	*res = r;
	return 0;
}

void rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
	while (res != NULL) {
		struct rdma_addrinfo *n = res->ai_next;

		free(res->ai_src_addr);
		free(res->ai_dst_addr);
		free(res->ai_src_canonname);
		free(res->ai_dst_canonname);
		free(res->ai_route);
		free(res->ai_connect);
		free(res);
		res = n;
	}
}

/* ---- endpoints ---- */

int rdma_create_ep(struct rdma_cm_id **id, struct rdma_addrinfo *res, struct ibv_pd *pd,
		   struct ibv_qp_init_attr *qp_init_attr)
{
	struct rdma_cm_id *cid;
	struct cma_id *c;
	int e;

	if (id == NULL || res == NULL)
		return cma_err(EINVAL);
	if (rdma_create_id(NULL, &cid, NULL, (enum rdma_port_space)res->ai_port_space) != 0)
		return -1;
	c = to_cid(cid);
	/* The QP's type is the address's, as rdma-core's rdma_create_ep() sets it. */
	if (qp_init_attr != NULL)
		qp_init_attr->qp_type = (enum ibv_qp_type)res->ai_qp_type;
	if (res->ai_flags & RAI_PASSIVE) {
		if (rdma_bind_addr(cid, res->ai_src_addr) != 0)
			goto fail;
		if (qp_init_attr != NULL) {
			c->has_ep_attr = true;
			c->ep_attr = *qp_init_attr;
			c->ep_pd = pd;
		}
		*id = cid;
		return 0;
	}
	if (rdma_resolve_addr(cid, res->ai_src_addr, res->ai_dst_addr, CMA_EP_TIMEOUT_MS) != 0 ||
	    rdma_resolve_route(cid, CMA_EP_TIMEOUT_MS) != 0)
		goto fail;
	if (qp_init_attr != NULL && rdma_create_qp(cid, pd, qp_init_attr) != 0)
		goto fail;
	*id = cid;
	return 0;
fail:
	e = errno;
	rdma_destroy_id(cid);
	return cma_err(e);
}

void rdma_destroy_ep(struct rdma_cm_id *id)
{
	rdma_destroy_qp(id);
	rdma_destroy_srq(id);
	rdma_destroy_id(id);
}

int rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **id)
{
	struct cma_id *l = to_cid(listen), *c;
	struct ibv_qp_init_attr a;
	struct rdma_cm_event *ev;

	if (id == NULL || !l->sync || l->state != CMA_LISTEN)
		return cma_err(EINVAL);
	for (;;) {
		if (rdma_get_cm_event(listen->channel, &ev) != 0)
			return -1;
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
			break;
		rdma_ack_cm_event(ev);
	}
	c = to_cid(ev->id);
	/* The new id works as its listener does: synchronously. */
	if (rdma_migrate_id(&c->id, NULL) != 0)
		goto fail;
	if (l->has_ep_attr) {
		a = l->ep_attr;
		if (rdma_create_qp(&c->id, l->ep_pd, &a) != 0)
			goto fail;
	}
	c->sync_event = ev;
	c->id.event = ev;
	*id = &c->id;
	return 0;
fail:
	{
		int e = errno;

		(void)rdma_reject(&c->id, NULL, 0);
		rdma_destroy_id(&c->id);
		rdma_ack_cm_event(ev);
		return cma_err(e);
	}
}
