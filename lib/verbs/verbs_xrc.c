/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * XRC domains (ibv_open_xrcd(3), ibv_close_xrcd(3)) and the number of an XRC SRQ
 * (ibv_get_srq_num(3)); doc/guides/srq.md §4. The XRC SRQs and QPs themselves are
 * made by verbs_srq.c and verbs_qp.c.
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
