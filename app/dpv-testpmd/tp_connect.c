/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Connections: two QPs of this console, or a QP here and one in a console of another
 * process. Across processes the consoles trade QP number, PSN and GID over TCP, one
 * line each way, as the ibverbs-utils do; the `connect` side sends first.
 */
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "testpmd.h"

/* How long `listen` waits for its peer, and `connect ... peer` for a listener. */
#define PEER_WAIT_MS 30000u

/* "QPN:PSN:GID" with the GID in 32 hex digits: what one side tells the other. */
struct peer_info {
	uint32_t qpn;
	uint32_t psn;
	union ibv_gid gid;
};

static int rc_rtr_rts(const char *cmd, struct tp_obj *q, uint32_t id, const struct peer_info *p)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ,
	};
	int ret;

	ret = ibv_modify_qp(q->u.qp.qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			    IBV_QP_ACCESS_FLAGS);
	if (ret == 0) {
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RTR;
		a.path_mtu = IBV_MTU_1024;
		a.dest_qp_num = p->qpn;
		a.rq_psn = p->psn;
		a.max_dest_rd_atomic = 1;
		a.min_rnr_timer = 1;
		a.ah_attr.is_global = 1;
		a.ah_attr.port_num = 1;
		a.ah_attr.grh.dgid = p->gid;
		a.ah_attr.grh.hop_limit = 64;
		ret = ibv_modify_qp(q->u.qp.qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				    IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
				    IBV_QP_MIN_RNR_TIMER);
	}
	if (ret == 0) {
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RTS;
		a.timeout = 14;
		a.retry_cnt = 7;
		a.rnr_retry = 7;
		a.sq_psn = q->u.qp.sq_psn;
		a.max_rd_atomic = 1;
		ret = ibv_modify_qp(q->u.qp.qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				    IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
	}
	if (ret != 0)
		return tp_err(cmd, ret, "qp %u did not reach RTS (it is %s)", id,
			      tp_qp_state_name(q->u.qp.qp));
	return 0;
}

static int ud_target(const char *cmd, struct tp_obj *q, uint32_t id, const struct peer_info *p)
{
	struct ibv_ah_attr ah = {.is_global = 1, .port_num = 1,
				 .grh = {.dgid = p->gid, .hop_limit = 64}};

	if (q->u.qp.ah != NULL)
		ibv_destroy_ah(q->u.qp.ah);
	q->u.qp.ah = ibv_create_ah(tp.obj[TP_PD][q->pd_id].u.pd, &ah);
	if (q->u.qp.ah == NULL)
		return tp_err(cmd, errno, "no address handle for qp %u's destination", id);
	q->u.qp.remote_qpn = p->qpn;
	return 0;
}

static void info_of(const struct tp_obj *q, struct peer_info *i)
{
	i->qpn = q->u.qp.qp->qp_num;
	i->psn = q->u.qp.sq_psn;
	i->gid = tp.dev[q->dev].gid;
}

/* A QP that may be connected now: RC in RESET, or UD. */
static struct tp_obj *connectable(const char *cmd, const char *w, uint32_t *id)
{
	struct tp_obj *q = tp_get(cmd, TP_QP, w, id);

	if (q == NULL || q->u.qp.type == IBV_QPT_UD)
		return q;
	if (tp_qp_state(q->u.qp.qp) != IBV_QPS_RESET) {
		tp_err(cmd, EINVAL, "qp %u is %s, not RESET: an RC QP connects once (destroy and "
		       "create it to connect again)", *id, tp_qp_state_name(q->u.qp.qp));
		return NULL;
	}
	return q;
}

static int connect_one(const char *cmd, struct tp_obj *q, uint32_t id, const struct peer_info *p)
{
	return q->u.qp.type == IBV_QPT_RC ? rc_rtr_rts(cmd, q, id, p) : ud_target(cmd, q, id, p);
}

int tp_connect_local(uint32_t qa, uint32_t qb)
{
	struct tp_obj *a = &tp.obj[TP_QP][qa], *b = &tp.obj[TP_QP][qb];
	struct peer_info ia, ib;

	if (a->u.qp.type != b->u.qp.type)
		return tp_err("connect", EINVAL, "qp %u and qp %u are of different types", qa, qb);
	if (a->dev == b->dev)
		return tp_err("connect", EINVAL, "qp %u and qp %u are both on %s: connect QPs of "
			      "two devices", qa, qb, tp.dev[a->dev].name);
	info_of(a, &ia);
	info_of(b, &ib);
	if (connect_one("connect", a, qa, &ib) != 0 || connect_one("connect", b, qb, &ia) != 0)
		return -1;
	tp_out("qp %u (%s, qp_num %u) <-> qp %u (%s, qp_num %u): connected", qa,
	       tp.dev[a->dev].name, ia.qpn, qb, tp.dev[b->dev].name, ib.qpn);
	return 0;
}

static void info_line(const struct peer_info *i, char *buf, size_t len)
{
	size_t off = (size_t)snprintf(buf, len, "%06x:%06x:", i->qpn, i->psn);

	for (unsigned int k = 0; k < 16; k++)
		off += (size_t)snprintf(buf + off, len - off, "%02x", i->gid.raw[k]);
	snprintf(buf + off, len - off, "\n");
}

static int info_parse(const char *s, struct peer_info *i)
{
	unsigned int qpn, psn, b;

	if (sscanf(s, "%6x:%6x:", &qpn, &psn) != 2 || strlen(s) < 14 + 32)
		return -1;
	for (unsigned int k = 0; k < 16; k++) {
		if (sscanf(s + 14 + 2 * k, "%2x", &b) != 1)
			return -1;
		i->gid.raw[k] = (uint8_t)b;
	}
	i->qpn = qpn;
	i->psn = psn;
	return 0;
}

/* One line from @p fd within the deadline, the devices driven meanwhile. */
static int read_line(int fd, char *buf, size_t len, uint64_t deadline)
{
	size_t n = 0;

	while (n + 1 < len) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		ssize_t r;

		if (tp_now_ms() > deadline)
			return ETIMEDOUT;
		if (poll(&p, 1, 10) == 0) {
			tp_progress();
			continue;
		}
		r = read(fd, buf + n, 1);
		if (r <= 0)
			return r == 0 ? ECONNRESET : errno;
		if (buf[n++] == '\n')
			break;
	}
	buf[n] = '\0';
	return 0;
}

static int write_all(int fd, const char *s)
{
	size_t len = strlen(s), off = 0;

	while (off < len) {
		ssize_t w = write(fd, s + off, len - off);

		if (w <= 0)
			return errno != 0 ? errno : EIO;
		off += (size_t)w;
	}
	return 0;
}

static int connect_peer(const char *cmd, struct tp_obj *q, uint32_t id, const char *hostport)
{
	char host[TP_WORD_MAX], line[128];
	const char *colon = hostport != NULL ? strrchr(hostport, ':') : NULL;
	struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *res;
	uint64_t deadline = tp_now_ms() + PEER_WAIT_MS;
	struct peer_info mine, theirs;
	int fd = -1, ret;

	if (colon == NULL || colon == hostport || colon[1] == '\0')
		return tp_err(cmd, EINVAL, "peer <host>:<port>, e.g. peer 127.0.0.1:18515");
	snprintf(host, sizeof(host), "%.*s", (int)(colon - hostport), hostport);
	ret = getaddrinfo(host, colon + 1, &hints, &res);
	if (ret != 0)
		return tp_err(cmd, EHOSTUNREACH, "%s: %s", hostport, gai_strerror(ret));
	/* The listener may not be up yet: try again until the deadline. */
	for (;;) {
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd < 0)
			break;
		if (connect(fd, res->ai_addr, res->ai_addrlen) == 0)
			break;
		ret = errno;
		close(fd);
		fd = -1;
		if (ret != ECONNREFUSED || tp_now_ms() > deadline) {
			freeaddrinfo(res);
			return tp_err(cmd, ret, "no console listens on %s (`listen` there first)",
				      hostport);
		}
		tp_progress();
		usleep(20000);
	}
	freeaddrinfo(res);
	if (fd < 0)
		return tp_err(cmd, errno, "no socket");
	info_of(q, &mine);
	info_line(&mine, line, sizeof(line));
	ret = write_all(fd, line);
	if (ret == 0)
		ret = read_line(fd, line, sizeof(line), deadline);
	if (ret == 0 && info_parse(line, &theirs) != 0)
		ret = EPROTO;
	if (ret != 0) {
		close(fd);
		return tp_err(cmd, ret, "the exchange with %s failed", hostport);
	}
	ret = connect_one(cmd, q, id, &theirs);
	if (ret == 0)
		ret = write_all(fd, "ready\n") != 0 ? -1 : 0;
	close(fd);
	if (ret != 0)
		return -1;
	tp_out("qp %u (qp_num %u) <-> peer %s qp_num %u: connected", id, mine.qpn, hostport,
	       theirs.qpn);
	return 0;
}

int tp_cmd_connect(const struct tp_args *a)
{
	const char *cmd = "connect";
	struct tp_obj *q;
	uint32_t qa, qb;

	if ((q = connectable(cmd, a->n > 1 ? a->w[1] : NULL, &qa)) == NULL)
		return -1;
	if (a->n > 2 && strcmp(a->w[2], "peer") == 0) {
		if (a->n != 4)
			return tp_err(cmd, EINVAL, "connect <qp> peer <host>:<port>");
		return connect_peer(cmd, q, qa, a->w[3]);
	}
	if (a->n != 3)
		return tp_err(cmd, EINVAL, "connect <qp> <qp> | connect <qp> peer <host>:<port>");
	if (connectable(cmd, a->w[2], &qb) == NULL)
		return -1;
	if (qa == qb)
		return tp_err(cmd, EINVAL, "a QP connects to another QP");
	return tp_connect_local(qa, qb);
}

void tp_listen_close(void)
{
	if (tp.listen_fd >= 0)
		close(tp.listen_fd);
	tp.listen_fd = -1;
}

/* The QP `listen` connects when none is named: the one RC QP still in RESET. */
static struct tp_obj *only_unconnected(const char *cmd, uint32_t *id)
{
	uint32_t found = 0, n = 0;

	for (uint32_t i = 1; i <= TP_MAX_OBJS; i++) {
		const struct tp_obj *q = &tp.obj[TP_QP][i];

		if (q->used && q->u.qp.type == IBV_QPT_RC &&
		    tp_qp_state(q->u.qp.qp) == IBV_QPS_RESET) {
			found = i;
			n++;
		}
	}
	if (n != 1) {
		tp_err(cmd, EINVAL, "%s RC QP in RESET: name the one to connect, listen <port> <qp>",
		       n == 0 ? "no" : "more than one");
		return NULL;
	}
	*id = found;
	return &tp.obj[TP_QP][found];
}

int tp_cmd_listen(const struct tp_args *a)
{
	const char *cmd = "listen";
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY)};
	uint64_t deadline, port;
	struct peer_info mine, theirs;
	char line[128];
	struct tp_obj *q;
	uint32_t id;
	int fd, ret, one = 1;

	if (a->n < 2 || tp_num(cmd, "port", a->w[1], 0, 65535, &port) != 0)
		return a->n < 2 ? tp_err(cmd, EINVAL, "listen <port> [<qp>]") : -1;
	if (a->n > 3)
		return tp_err(cmd, EINVAL, "listen <port> [<qp>]");
	if (a->n == 3) {
		if ((q = connectable(cmd, a->w[2], &id)) == NULL)
			return -1;
	} else if ((q = only_unconnected(cmd, &id)) == NULL) {
		return -1;
	}
	/* Port 0: one the kernel picks, printed for the peer (a script reads it there). */
	if (tp.listen_fd < 0 || (port != 0 && tp.listen_port != port)) {
		tp_listen_close();
		tp.listen_fd = socket(AF_INET, SOCK_STREAM, 0);
		if (tp.listen_fd < 0)
			return tp_err(cmd, errno, "no socket");
		setsockopt(tp.listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		sa.sin_port = htons((uint16_t)port);
		if (bind(tp.listen_fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
		    listen(tp.listen_fd, 1) != 0) {
			ret = errno;
			tp_listen_close();
			return tp_err(cmd, ret, "TCP port %" PRIu64 " is not free: pick another",
				      port);
		}
		{
			socklen_t len = sizeof(sa);

			if (getsockname(tp.listen_fd, (struct sockaddr *)&sa, &len) == 0)
				port = ntohs(sa.sin_port);
		}
		tp.listen_port = (uint16_t)port;
	}
	port = tp.listen_port;
	tp_out("listening on TCP port %" PRIu64 " for the peer of qp %u", port, id);
	deadline = tp_now_ms() + PEER_WAIT_MS;
	for (;;) {
		struct pollfd p = {.fd = tp.listen_fd, .events = POLLIN};

		if (poll(&p, 1, 10) > 0)
			break;
		tp_progress();
		if (tp_now_ms() > deadline)
			return tp_err(cmd, ETIMEDOUT, "no peer came in %u s", PEER_WAIT_MS / 1000);
	}
	fd = accept(tp.listen_fd, NULL, NULL);
	if (fd < 0)
		return tp_err(cmd, errno, "accept failed");
	info_of(q, &mine);
	ret = read_line(fd, line, sizeof(line), deadline);
	if (ret == 0 && info_parse(line, &theirs) != 0)
		ret = EPROTO;
	if (ret == 0 && connect_one(cmd, q, id, &theirs) != 0) {
		close(fd);
		return -1;
	}
	if (ret == 0) {
		info_line(&mine, line, sizeof(line));
		ret = write_all(fd, line);
	}
	/* The peer says "ready" once its side is in RTS too. */
	if (ret == 0)
		ret = read_line(fd, line, sizeof(line), deadline);
	close(fd);
	if (ret != 0)
		return tp_err(cmd, ret, "the exchange with the peer failed");
	tp_out("qp %u (qp_num %u) <-> peer qp_num %u: connected", id, mine.qpn, theirs.qpn);
	return 0;
}
