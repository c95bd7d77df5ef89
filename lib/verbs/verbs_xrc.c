/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * XRC domains (ibv_open_xrcd(3), ibv_close_xrcd(3)), the number of an XRC SRQ
 * (ibv_get_srq_num(3)) and the handles of ibv_open_qp(3) on a domain's target QPs;
 * doc/guides/srq.md §7. The XRC SRQs and QPs themselves are made by verbs_srq.c and
 * verbs_qp.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "verbs_priv.h"

/* The process's XRC domains: a domain opened through a file is found again by the
 * file's inode, on the same device, as the kernel's are. */
static pthread_mutex_t xrcds_lock = PTHREAD_MUTEX_INITIALIZER;
static struct dpv_xrcd_v *xrcds;
static uint32_t next_xrcd_id = 1;

struct ibv_xrcd *dpv_verbs_open_xrcd(struct ibv_context *context,
				     struct ibv_xrcd_init_attr *attr)
{
	const uint32_t need = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
	struct dpv_context *c = to_ctx(context);
	struct dpv_xrcd_v *x;
	struct stat st;

	if ((attr->comp_mask & ~(uint32_t)(IBV_XRCD_INIT_ATTR_RESERVED - 1)) != 0) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if ((attr->comp_mask & need) != need || (attr->oflags & ~(O_CREAT | O_EXCL)) != 0 ||
	    (attr->fd == -1 && !(attr->oflags & O_CREAT))) {
		errno = EINVAL;
		return NULL;
	}
	if (attr->fd != -1 && fstat(attr->fd, &st) != 0) {
		errno = EBADF;
		return NULL;
	}
	pthread_mutex_lock(&xrcds_lock);
	for (x = attr->fd != -1 ? xrcds : NULL; x != NULL; x = x->next)
		if (x->inode && x->device == c->device && x->dev == st.st_dev &&
		    x->ino == st.st_ino)
			break;
	if (x != NULL) {
		if ((attr->oflags & (O_CREAT | O_EXCL)) == (O_CREAT | O_EXCL)) {
			pthread_mutex_unlock(&xrcds_lock);
			errno = EEXIST;
			return NULL;
		}
		x->refs++;
		pthread_mutex_unlock(&xrcds_lock);
		return &x->ibxrcd;
	}
	/* ibv_open_xrcd(3): without O_CREAT only a domain that exists is opened. */
	if (!(attr->oflags & O_CREAT) || (x = calloc(1, sizeof(*x))) == NULL) {
		pthread_mutex_unlock(&xrcds_lock);
		errno = attr->oflags & O_CREAT ? ENOMEM : EINVAL;
		return NULL;
	}
	x->device = c->device;
	x->id = next_xrcd_id++;
	x->refs = 1;
	if (attr->fd != -1) {
		x->inode = true;
		x->dev = st.st_dev;
		x->ino = st.st_ino;
	}
	x->next = xrcds;
	xrcds = x;
	pthread_mutex_unlock(&xrcds_lock);
	x->ibxrcd.context = context;
	return &x->ibxrcd;
}

int dpv_verbs_close_xrcd(struct ibv_xrcd *ibxrcd)
{
	struct dpv_xrcd_v *x = to_xrcd(ibxrcd), **p;

	pthread_mutex_lock(&xrcds_lock);
	/* ibv_close_xrcd(3): the last close fails while an SRQ or a QP is in it. */
	if (x->refs == 1 && __atomic_load_n(&x->users, __ATOMIC_ACQUIRE) != 0) {
		pthread_mutex_unlock(&xrcds_lock);
		return EBUSY;
	}
	if (--x->refs > 0) {
		pthread_mutex_unlock(&xrcds_lock);
		return 0;
	}
	for (p = &xrcds; *p != NULL; p = &(*p)->next) {
		if (*p == x) {
			*p = x->next;
			break;
		}
	}
	pthread_mutex_unlock(&xrcds_lock);
	free(x);
	return 0;
}

int dpv_verbs_get_srq_num(struct ibv_srq *ibsrq, uint32_t *srq_num)
{
	struct dpv_srq_v *srq = container_of(ibsrq, struct dpv_srq_v, ibsrq);

	/* Only an XRC SRQ has a number a peer names (in the XRCETH). */
	if (srq->xrcd == NULL)
		return EINVAL;
	*srq_num = srq->srq->xrc_srqn;
	return 0;
}

void dpv_verbs_xrc_tgt_add(struct dpv_qp_v *qp)
{
	struct dpv_xrcd_v *x = to_xrcd(qp->xrcd);

	pthread_mutex_lock(&xrcds_lock);
	qp->next_tgt = x->tgts;
	x->tgts = qp;
	pthread_mutex_unlock(&xrcds_lock);
}

struct dpv_qp_v *dpv_verbs_xrc_tgt_release(struct dpv_qp_v *qp)
{
	struct dpv_xrcd_v *x = to_xrcd(qp->xrcd);
	struct dpv_qp_v *tgt = qp->opened_of != NULL ? qp->opened_of : qp, **p;

	pthread_mutex_lock(&xrcds_lock);
	if (qp != tgt) {
		for (p = &tgt->opened; *p != NULL; p = &(*p)->next_open) {
			if (*p == qp) {
				*p = qp->next_open;
				break;
			}
		}
	} else {
		tgt->closed = true;
	}
	/* The QP's asynchronous events go to a handle that is still there: its creator's
	 * while it has it, else an opened one (and, the last one gone, to the creator's
	 * again, which stays allocated until the QP is destroyed below). */
	if (tgt->closed) {
		dpv_dev_own(tgt->ctx->dev);
		tgt->qp->fatal_arg = tgt->opened != NULL ? tgt->opened : tgt;
		dpv_dev_disown(tgt->ctx->dev);
	}
	if (qp != tgt) {
		pthread_mutex_destroy(&qp->ibqp.mutex);
		pthread_cond_destroy(&qp->ibqp.cond);
		free(qp);
	}
	if (!tgt->closed || tgt->opened != NULL) {
		pthread_mutex_unlock(&xrcds_lock);
		return NULL;
	}
	for (p = &x->tgts; *p != NULL; p = &(*p)->next_tgt) {
		if (*p == tgt) {
			*p = tgt->next_tgt;
			break;
		}
	}
	pthread_mutex_unlock(&xrcds_lock);
	return tgt;
}

/*
 * ibv_open_qp(3): another handle on a target QP of the domain, made by this process on
 * the same device. The QP lives until its creator's handle and every opened one are
 * destroyed. Its asynchronous events go to the creator's handle, or once that is
 * destroyed to one of the opened ones.
 */
struct ibv_qp *dpv_verbs_open_qp(struct ibv_context *context, struct ibv_qp_open_attr *attr)
{
	const uint32_t need = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD | IBV_QP_OPEN_ATTR_TYPE;
	struct dpv_context *c = to_ctx(context);
	struct dpv_qp_v *tgt, *qp;

	if ((attr->comp_mask & ~(uint32_t)(IBV_QP_OPEN_ATTR_RESERVED - 1)) != 0) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if ((attr->comp_mask & need) != need || attr->xrcd == NULL ||
	    attr->qp_type != IBV_QPT_XRC_RECV) {
		errno = EINVAL;
		return NULL;
	}
	qp = calloc(1, sizeof(*qp));
	if (qp == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_lock(&xrcds_lock);
	for (tgt = to_xrcd(attr->xrcd)->tgts; tgt != NULL; tgt = tgt->next_tgt)
		if (tgt->ibqp.qp_num == attr->qp_num && !tgt->closed && tgt->ctx->dev == c->dev)
			break;
	if (tgt == NULL) {
		pthread_mutex_unlock(&xrcds_lock);
		free(qp);
		errno = EINVAL; /* ibv_open_qp(3): no such QP in the domain */
		return NULL;
	}
	qp->opened_of = tgt;
	qp->next_open = tgt->opened;
	tgt->opened = qp;
	pthread_mutex_unlock(&xrcds_lock);
	qp->ctx = c;
	qp->qp = tgt->qp;
	qp->xrcd = attr->xrcd;
	dpv_vlock_init_none(&qp->sq_lock);
	dpv_vlock_init_none(&qp->rq_lock);
	qp->ibqp.context = context;
	qp->ibqp.qp_context = attr->comp_mask & IBV_QP_OPEN_ATTR_CONTEXT ? attr->qp_context : NULL;
	qp->ibqp.handle = tgt->ibqp.handle;
	qp->ibqp.qp_num = tgt->ibqp.qp_num;
	qp->ibqp.state = (enum ibv_qp_state)__atomic_load_n(&tgt->qp->attr.state, __ATOMIC_ACQUIRE);
	qp->ibqp.qp_type = IBV_QPT_XRC_RECV;
	pthread_mutex_init(&qp->ibqp.mutex, NULL);
	pthread_cond_init(&qp->ibqp.cond, NULL);
	return &qp->ibqp;
}
