/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the drop-in librdmacm exports for rdma-core's ABI but dpverbs does not offer:
 * multicast (no multicast groups on a dpverbs port), ECE (no vendor options), and the
 * rsockets. Each answers at once as rdma-core's library does for a case it does not
 * support: -1 with errno ENOSYS for a call it lacks, EOPNOTSUPP for an option a device
 * lacks, EBADF for an rsocket call on a descriptor (none can be an rsocket here, since
 * rsocket() makes none). rpoll() and rselect() poll the program's own descriptors, as
 * rdma-core's do for those that are not rsockets.
 */
#include <errno.h>
#include <poll.h>
#include <sys/select.h>

#include <rdma/rsocket.h>

#include "rdmacm_priv.h"

int rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr, void *context)
{
	(void)id, (void)addr, (void)context;
	return cma_err(ENOSYS);
}

int rdma_join_multicast_ex(struct rdma_cm_id *id, struct rdma_cm_join_mc_attr_ex *mc_join_attr,
			   void *context)
{
	(void)id, (void)mc_join_attr, (void)context;
	return cma_err(ENOSYS);
}

int rdma_leave_multicast(struct rdma_cm_id *id, struct sockaddr *addr)
{
	/* No group was joined. */
	(void)id, (void)addr;
	return cma_err(EADDRNOTAVAIL);
}

int rdma_set_local_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	(void)id, (void)ece;
	return cma_err(EOPNOTSUPP);
}

int rdma_get_remote_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	(void)id, (void)ece;
	return cma_err(EOPNOTSUPP);
}

int rdma_reject_ece(struct rdma_cm_id *id, const void *private_data, uint8_t private_data_len)
{
	/* No ECE was offered, so the reject is a plain one. */
	return rdma_reject(id, private_data, private_data_len);
}

int rsocket(int domain, int type, int protocol)
{
	(void)domain, (void)type, (void)protocol;
	return cma_err(ENOSYS);
}

int rbind(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	(void)socket, (void)addr, (void)addrlen;
	return cma_err(EBADF);
}

int rlisten(int socket, int backlog)
{
	(void)socket, (void)backlog;
	return cma_err(EBADF);
}

int raccept(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	(void)socket, (void)addr, (void)addrlen;
	return cma_err(EBADF);
}

int rconnect(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	(void)socket, (void)addr, (void)addrlen;
	return cma_err(EBADF);
}

int rshutdown(int socket, int how)
{
	(void)socket, (void)how;
	return cma_err(EBADF);
}

int rclose(int socket)
{
	(void)socket;
	return cma_err(EBADF);
}

ssize_t rrecv(int socket, void *buf, size_t len, int flags)
{
	(void)socket, (void)buf, (void)len, (void)flags;
	return cma_err(EBADF);
}

ssize_t rrecvfrom(int socket, void *buf, size_t len, int flags, struct sockaddr *src_addr,
		  socklen_t *addrlen)
{
	(void)socket, (void)buf, (void)len, (void)flags, (void)src_addr, (void)addrlen;
	return cma_err(EBADF);
}

ssize_t rrecvmsg(int socket, struct msghdr *msg, int flags)
{
	(void)socket, (void)msg, (void)flags;
	return cma_err(EBADF);
}

ssize_t rsend(int socket, const void *buf, size_t len, int flags)
{
	(void)socket, (void)buf, (void)len, (void)flags;
	return cma_err(EBADF);
}

ssize_t rsendto(int socket, const void *buf, size_t len, int flags,
		const struct sockaddr *dest_addr, socklen_t addrlen)
{
	(void)socket, (void)buf, (void)len, (void)flags, (void)dest_addr, (void)addrlen;
	return cma_err(EBADF);
}

ssize_t rsendmsg(int socket, const struct msghdr *msg, int flags)
{
	(void)socket, (void)msg, (void)flags;
	return cma_err(EBADF);
}

ssize_t rread(int socket, void *buf, size_t count)
{
	(void)socket, (void)buf, (void)count;
	return cma_err(EBADF);
}

ssize_t rreadv(int socket, const struct iovec *iov, int iovcnt)
{
	(void)socket, (void)iov, (void)iovcnt;
	return cma_err(EBADF);
}

ssize_t rwrite(int socket, const void *buf, size_t count)
{
	(void)socket, (void)buf, (void)count;
	return cma_err(EBADF);
}

ssize_t rwritev(int socket, const struct iovec *iov, int iovcnt)
{
	(void)socket, (void)iov, (void)iovcnt;
	return cma_err(EBADF);
}

int rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	return poll(fds, nfds, timeout);
}

int rselect(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds,
	    struct timeval *timeout)
{
	return select(nfds, readfds, writefds, exceptfds, timeout);
}

int rgetpeername(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	(void)socket, (void)addr, (void)addrlen;
	return cma_err(EBADF);
}

int rgetsockname(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	(void)socket, (void)addr, (void)addrlen;
	return cma_err(EBADF);
}

int rsetsockopt(int socket, int level, int optname, const void *optval, socklen_t optlen)
{
	(void)socket, (void)level, (void)optname, (void)optval, (void)optlen;
	return cma_err(EBADF);
}

int rgetsockopt(int socket, int level, int optname, void *optval, socklen_t *optlen)
{
	(void)socket, (void)level, (void)optname, (void)optval, (void)optlen;
	return cma_err(EBADF);
}

int rfcntl(int socket, int cmd, ...)
{
	(void)socket, (void)cmd;
	return cma_err(EBADF);
}

off_t riomap(int socket, void *buf, size_t len, int prot, int flags, off_t offset)
{
	(void)socket, (void)buf, (void)len, (void)prot, (void)flags, (void)offset;
	return cma_err(EBADF);
}

int riounmap(int socket, void *buf, size_t len)
{
	(void)socket, (void)buf, (void)len;
	return cma_err(EBADF);
}

size_t riowrite(int socket, const void *buf, size_t count, off_t offset, int flags)
{
	(void)socket, (void)buf, (void)count, (void)offset, (void)flags;
	errno = EBADF;
	return 0;
}
