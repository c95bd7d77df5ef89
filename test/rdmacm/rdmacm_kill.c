/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A peer killed with SIGKILL, through the drop-in librdmacm, between real processes
 * over memif, or over af_packet on a veth pair between two network namespaces: a
 * survivor (the memif server, or on the veth end of the first namespace; the active
 * side, alive throughout) and peers that come one after the other (memif clients, or
 * on the veth end of the second namespace; the passive side), each killed as a crash
 * kills a process: no at-exit DREQ or REJ. This process starts them all
 * and calls no library itself (EAL is not for forked processes). Every process has
 * the short CM timing of DPV_CM_RESPONSE_TIMEOUT=17, DPV_CM_RETRIES=3,
 * DPV_CM_PACKET_LIFE_TIME=12: each wait for an answer (537 + 2 x 17 ms) four times; the
 * first wait is long enough that a peer killed as it takes the request is dead before
 * the REQ's first resend, which would have it answer an MRA (a 68.7 s wait).
 *   handshake  the peer takes the CONNECT_REQUEST and is killed before it accepts: the
 *              survivor gets UNREACHABLE (-ETIMEDOUT) after the REQ's four waits, and
 *              nothing more;
 *   connected  a SEND goes across, then the peer is killed: the survivor's next SEND
 *              ends in IBV_WC_RETRY_EXC_ERR (not a hang), its rdma_disconnect() gets
 *              DISCONNECTED after the DREQ's four waits, then TIMEWAIT_EXIT;
 *   no leak    after each, the survivor destroys its QP and id and its device has no
 *              CM id left (dpv_verbs_query_cm()); then a fresh peer connects, a SEND
 *              goes across, both disconnect with every event, and the device's list
 *              is empty at the end.
 * The EAL arguments of the memory mode come in DPV_EAL_ARGS; the port of each process
 * is added to them here: memif by default, or, with the arguments
 *   afpacket NETNS_SURVIVOR IFACE_SURVIVOR NETNS_PEER IFACE_PEER
 * (rdmacm_kill.sh makes them), net_af_packet on IFACE in the network namespace NETNS
 * (ip-netns(8)'s name), which the process enters before it starts EAL. The peers then
 * share their veth end's MAC; their addresses differ, and a device takes no RoCEv2
 * frame that is not to its own.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <rdma/rdma_cma.h>
#include <sys/wait.h>

#include "dpv_verbs.h"
#include "rdmacm_test.h"

#define IP_SURVIVOR "10.207.0.1"
/* Each peer its own address and MAC, as a new host is: the MADs the survivor sent its
 * dead predecessor while the link was down (the REQ's and DREQ's resends, the REJ of
 * the REQ's time out) may reach the next peer once its link is up, and are not for
 * it. */
static const char *const peer_ip[] = {"10.207.0.2", "10.207.0.3", "10.207.0.4"};
static const char *const peer_mac[] = {"02:dd:07:00:00:02", "02:dd:07:00:00:03",
				       "02:dd:07:00:00:04"};
#define PORT 7301
/* Generous bounds for a loaded machine; the default timing would take 77 s. */
#define WAIT_MS 15000
/* The CM's four waits of (4.096 us x 2^17 + 2 x 4.096 us x 2^12): the least the
 * survivor must wait for UNREACHABLE or DISCONNECTED (its first MAD is sent just
 * after the clock starts). */
#define CM_GIVE_UP_NS (4ull * ((4096ull << 17) + 2 * (4096ull << 12)))
#define MSG_LEN 64

/* What a peer does with the connection request it gets. */
enum peer_mode { PEER_DIE_AT_REQUEST, PEER_DIE_CONNECTED, PEER_LIVE };

/* ---- events ---- */

#define EXPECT(ch, type, status) expect_event(ch, type, NULL, status, WAIT_MS, __LINE__)

static void expect_ack(struct rdma_event_channel *ch, enum rdma_cm_event_type type, int line)
{
	struct rdma_cm_event *ev = expect_event(ch, type, NULL, 0, WAIT_MS, line);

	if (ev != NULL)
		rdma_ack_cm_event(ev);
}

#define EXPECT_ACK(ch, type) expect_ack(ch, type, __LINE__)

/* No event more on @p ch for a while: nothing follows the last one. */
static void expect_none(struct rdma_event_channel *ch, int line)
{
	struct rdma_cm_event *ev = next_event(ch, 300);

	if (ev != NULL) {
		fprintf(stderr, "FAIL line %d: an event more: %s\n", line, rdma_event_str(ev->event));
		failures++;
		rdma_ack_cm_event(ev);
	}
}

#define EXPECT_NONE(ch) expect_none(ch, __LINE__)

/* ---- a connection's QP and its messages ---- */

struct conn {
	struct rdma_cm_id *id;
	struct ibv_mr *mr;
	char buf[MSG_LEN];
};

static void conn_qp(struct conn *k)
{
	struct ibv_qp_init_attr a = {
		.cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1},
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = 1,
	};

	if (rdma_create_qp(k->id, NULL, &a) != 0) {
		fprintf(stderr, "rdma_create_qp: %s\n", strerror(errno));
		exit(1);
	}
	k->mr = ibv_reg_mr(k->id->pd, k->buf, sizeof(k->buf), IBV_ACCESS_LOCAL_WRITE);
	if (k->mr == NULL) {
		fprintf(stderr, "ibv_reg_mr: %s\n", strerror(errno));
		exit(1);
	}
}

static void conn_recv(struct conn *k)
{
	struct ibv_sge sge = {.addr = (uintptr_t)k->buf, .length = MSG_LEN, .lkey = k->mr->lkey};
	struct ibv_recv_wr wr = {.sg_list = &sge, .num_sge = 1}, *bad;

	CHECK(ibv_post_recv(k->id->qp, &wr, &bad) == 0, "ibv_post_recv");
}

static void conn_send(struct conn *k, const char *text)
{
	struct ibv_sge sge = {.addr = (uintptr_t)k->buf, .length = MSG_LEN, .lkey = k->mr->lkey};
	struct ibv_send_wr wr = {.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND}, *bad;

	snprintf(k->buf, sizeof(k->buf), "%s", text);
	CHECK(ibv_post_send(k->id->qp, &wr, &bad) == 0, "ibv_post_send");
}

/* The next completion of @p cq within WAIT_MS: 1, or 0 for none (a hang). */
static int conn_poll(struct ibv_cq *cq, struct ibv_wc *wc)
{
	uint64_t end = now_ns() + WAIT_MS * 1000000ull;

	do {
		int n = ibv_poll_cq(cq, 1, wc);

		if (n != 0)
			return n;
	} while (now_ns() < end);
	return 0;
}

static void conn_end(struct conn *k)
{
	CHECK(ibv_dereg_mr(k->mr) == 0, "ibv_dereg_mr");
	rdma_destroy_qp(k->id);
	CHECK(rdma_destroy_id(k->id) == 0, "rdma_destroy_id: %s", strerror(errno));
}

/* The CM ids of @p ctx's device: their number, each printed (none is expected). */
static int cm_ids(struct ibv_context *ctx)
{
	struct dpv_verbs_cm_id ids[8];
	int n = dpv_verbs_query_cm(ctx, ids, 8);

	for (int i = 0; i < n && i < 8; i++)
		fprintf(stderr, "  cm id %u: %s\n", ids[i].id, ids[i].state);
	return n;
}

static const struct rdma_conn_param conn_param = {
	.responder_resources = 1, .initiator_depth = 1, .retry_count = 3, .rnr_retry_count = 7};

/* ---- a peer: the passive side (a memif client over memif) ---- */

static int peer(enum peer_mode mode, const char *ip, int report)
{
	struct rdma_event_channel *ch = channel();
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(PORT)};
	struct rdma_cm_id *l;
	struct rdma_cm_event *ev;
	struct conn k = {0};
	struct ibv_wc wc;

	inet_pton(AF_INET, ip, &sin.sin_addr);
	if (rdma_create_id(ch, &l, NULL, RDMA_PS_TCP) != 0 ||
	    rdma_bind_addr(l, (struct sockaddr *)&sin) != 0 || rdma_listen(l, 4) != 0) {
		fprintf(stderr, "peer: listen: %s\n", strerror(errno));
		return 1;
	}
	say(report, 'L');
	ev = EXPECT(ch, RDMA_CM_EVENT_CONNECT_REQUEST, 0);
	if (ev == NULL)
		return 1;
	if (mode == PEER_DIE_AT_REQUEST)
		raise(SIGKILL); /* before any answer, before the REQ's first resend */
	k.id = ev->id;
	rdma_ack_cm_event(ev);
	conn_qp(&k);
	conn_recv(&k);
	CHECK(rdma_accept(k.id, (struct rdma_conn_param *)&conn_param) == 0, "rdma_accept: %s",
	      strerror(errno));
	EXPECT_ACK(ch, RDMA_CM_EVENT_ESTABLISHED);
	CHECK(conn_poll(k.id->recv_cq, &wc) == 1 && wc.status == IBV_WC_SUCCESS,
	      "the survivor's message: status %d", wc.status);
	CHECK(strcmp(k.buf, "before") == 0, "received \"%.*s\"", MSG_LEN, k.buf);
	say(report, 'E');
	if (mode == PEER_DIE_CONNECTED) {
		pause(); /* until the SIGKILL */
		return 1;
	}
	EXPECT_ACK(ch, RDMA_CM_EVENT_DISCONNECTED);
	CHECK(rdma_disconnect(k.id) == 0, "rdma_disconnect (DREP): %s", strerror(errno));
	EXPECT_ACK(ch, RDMA_CM_EVENT_TIMEWAIT_EXIT);
	conn_end(&k);
	CHECK(rdma_destroy_id(l) == 0, "rdma_destroy_id of the listener");
	rdma_destroy_event_channel(ch);
	return failures ? 1 : 0;
}

/* ---- the survivor: the active side (the memif server over memif) ---- */

/* An id connecting to peer @p n with a QP, its request sent. */
static void survivor_connect(struct rdma_event_channel *ch, struct conn *k, int n)
{
	struct sockaddr_in dst = {.sin_family = AF_INET, .sin_port = htons(PORT)};

	inet_pton(AF_INET, peer_ip[n], &dst.sin_addr);
	if (rdma_create_id(ch, &k->id, NULL, RDMA_PS_TCP) != 0) {
		fprintf(stderr, "rdma_create_id: %s\n", strerror(errno));
		exit(1);
	}
	CHECK(rdma_resolve_addr(k->id, NULL, (struct sockaddr *)&dst, 5000) == 0,
	      "rdma_resolve_addr: %s", strerror(errno));
	EXPECT_ACK(ch, RDMA_CM_EVENT_ADDR_RESOLVED);
	CHECK(rdma_resolve_route(k->id, 2000) == 0, "rdma_resolve_route: %s", strerror(errno));
	EXPECT_ACK(ch, RDMA_CM_EVENT_ROUTE_RESOLVED);
	conn_qp(k);
	CHECK(rdma_connect(k->id, (struct rdma_conn_param *)&conn_param) == 0, "rdma_connect: %s",
	      strerror(errno));
}

static void survivor_handshake(struct rdma_event_channel *ch, struct ibv_context **ctx)
{
	struct conn k = {0};
	struct rdma_cm_event *ev;
	uint64_t t0;

	survivor_connect(ch, &k, 0);
	t0 = now_ns();
	*ctx = k.id->verbs;
	ev = EXPECT(ch, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT);
	if (ev != NULL) {
		fprintf(stderr, "UNREACHABLE after %.3f s\n", (now_ns() - t0) / 1e9);
		CHECK(now_ns() - t0 >= CM_GIVE_UP_NS * 9 / 10,
		      "UNREACHABLE after %.3f s, before the REQ's retries", (now_ns() - t0) / 1e9);
		rdma_ack_cm_event(ev);
	}
	EXPECT_NONE(ch);
	conn_end(&k);
	CHECK(cm_ids(*ctx) == 0, "CM ids left after the peer killed in the handshake");
}

/* A connection to peer @p n, established, a SEND gone across. */
static void survivor_up(struct rdma_event_channel *ch, struct conn *k, int n)
{
	struct ibv_wc wc;

	survivor_connect(ch, k, n);
	EXPECT_ACK(ch, RDMA_CM_EVENT_ESTABLISHED);
	conn_send(k, "before");
	CHECK(conn_poll(k->id->send_cq, &wc) == 1 && wc.status == IBV_WC_SUCCESS,
	      "the SEND to live peer %d: status %d", n, wc.status);
}

static void survivor_connected(struct rdma_event_channel *ch, int cmd, int report)
{
	struct ibv_context *ctx;
	struct conn k = {0};
	struct ibv_wc wc;
	uint64_t t0;

	survivor_up(ch, &k, 1);
	ctx = k.id->verbs;
	say(report, 'S');
	CHECK(hear(cmd, WAIT_MS) == 'K', "no word of the peer's death");
	conn_send(&k, "after");
	CHECK(conn_poll(k.id->send_cq, &wc) == 1 && wc.status == IBV_WC_RETRY_EXC_ERR,
	      "the SEND to the dead peer: status %s", ibv_wc_status_str(wc.status));
	CHECK(rdma_disconnect(k.id) == 0, "rdma_disconnect: %s", strerror(errno));
	t0 = now_ns();
	EXPECT_ACK(ch, RDMA_CM_EVENT_DISCONNECTED);
	fprintf(stderr, "DISCONNECTED after %.3f s\n", (now_ns() - t0) / 1e9);
	CHECK(now_ns() - t0 >= CM_GIVE_UP_NS * 9 / 10,
	      "DISCONNECTED after %.3f s, before the DREQ's retries", (now_ns() - t0) / 1e9);
	EXPECT_ACK(ch, RDMA_CM_EVENT_TIMEWAIT_EXIT);
	EXPECT_NONE(ch);
	conn_end(&k);
	CHECK(cm_ids(ctx) == 0, "CM ids left after the connected peer killed");
}

static void survivor_fresh(struct rdma_event_channel *ch)
{
	struct ibv_context *ctx;
	struct conn k = {0};

	survivor_up(ch, &k, 2);
	ctx = k.id->verbs;
	CHECK(rdma_disconnect(k.id) == 0, "rdma_disconnect: %s", strerror(errno));
	EXPECT_ACK(ch, RDMA_CM_EVENT_DISCONNECTED);
	EXPECT_ACK(ch, RDMA_CM_EVENT_TIMEWAIT_EXIT);
	EXPECT_NONE(ch);
	conn_end(&k);
	CHECK(cm_ids(ctx) == 0, "CM ids left at the end");
}

/* Each step when the starter says 'G' (its peer listens); 'D' after each. */
static int survivor(int cmd, int report)
{
	struct rdma_event_channel *ch = channel(); /* opens the device */
	struct ibv_context *ctx;

	CHECK(hear(cmd, WAIT_MS) == 'G', "no first peer");
	survivor_handshake(ch, &ctx);
	say(report, 'D');
	CHECK(hear(cmd, WAIT_MS) == 'G', "no second peer");
	survivor_connected(ch, cmd, report);
	say(report, 'D');
	CHECK(hear(cmd, WAIT_MS) == 'G', "no third peer");
	survivor_fresh(ch);
	rdma_destroy_event_channel(ch);
	say(report, 'D');
	return failures ? 1 : 0;
}

/* ---- the starter ---- */

/* The af_packet link: the namespace and veth end of the survivor ([0]) and the peers'
 * ([1]); netns[0] NULL for memif. */
static const char *netns[2], *iface[2];

/* Enter the network namespace @p name (ip-netns(8)'s), or end the process. */
static void enter_netns(const char *name)
{
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "/var/run/netns/%s", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) {
		fprintf(stderr, "network namespace %s: %s\n", name, strerror(errno));
		_exit(1);
	}
	close(fd);
}

/* Start the survivor (@p n -1) or peer @p n of @p mode, with its port. */
static struct child start(const char *sock, int n, enum peer_mode mode)
{
	int to[2], from[2];
	struct child c;
	char eal[1024];

	if (pipe(to) != 0 || pipe(from) != 0) {
		perror("pipe");
		exit(1);
	}
	if (netns[0] != NULL)
		snprintf(eal, sizeof(eal),
			 "%s --vdev=net_af_packet0,iface=%s,framecnt=4096 --file-prefix=dpvkill-%d-%d",
			 getenv("DPV_EAL_ARGS"), iface[n >= 0], (int)getpid(), n + 1);
	else
		snprintf(eal, sizeof(eal),
			 "%s --vdev=net_memif0,role=%s,socket=%s,socket-abstract=no,mac=%s "
			 "--file-prefix=dpvkill-%d-%d",
			 getenv("DPV_EAL_ARGS"), n < 0 ? "server" : "client", sock,
			 n < 0 ? "02:dd:07:00:00:01" : peer_mac[n], (int)getpid(), n + 1);
	c.pid = fork();
	if (c.pid < 0) {
		perror("fork");
		exit(1);
	}
	if (c.pid == 0) {
		close(to[1]);
		close(from[0]);
		if (netns[0] != NULL)
			enter_netns(netns[n >= 0]);
		setenv("DPV_EAL_ARGS", eal, 1);
		setenv("DPV_PORT_IPV4", n < 0 ? IP_SURVIVOR : peer_ip[n], 1);
		_exit(n < 0 ? survivor(to[0], from[1]) : peer(mode, peer_ip[n], from[1]));
	}
	close(to[0]);
	close(from[1]);
	c.cmd = to[1];
	c.report = from[0];
	return c;
}

int main(int argc, char **argv)
{
	char dir[] = "/tmp/dpv-rdmacm-kill.XXXXXX", sock[64];
	struct child s, p;
	bool ok = true;

	if (argc == 6 && strcmp(argv[1], "afpacket") == 0) {
		netns[0] = argv[2], iface[0] = argv[3], netns[1] = argv[4], iface[1] = argv[5];
	} else if (argc != 1) {
		fprintf(stderr, "usage: %s [afpacket NETNS_SURVIVOR IFACE_SURVIVOR NETNS_PEER "
			"IFACE_PEER]\n", argv[0]);
		return 2;
	}
	if (getenv("DPV_EAL_ARGS") == NULL || mkdtemp(dir) == NULL) {
		fprintf(stderr, "want DPV_EAL_ARGS (the memory mode's) and a /tmp\n");
		return 1;
	}
	snprintf(sock, sizeof(sock), "%s/memif.sock", dir);
	setenv("DPV_CM_RESPONSE_TIMEOUT", "17", 1);
	setenv("DPV_CM_RETRIES", "3", 1);
	setenv("DPV_CM_PACKET_LIFE_TIME", "12", 1);
	s = start(sock, -1, PEER_LIVE);

	/* The handshake: the peer kills itself as it takes the request. */
	p = start(sock, 0, PEER_DIE_AT_REQUEST);
	ok = hear(p.report, WAIT_MS) == 'L' && ok;
	say(s.cmd, 'G');
	ok = reap(&p, SIGKILL, "the peer killed at the request", WAIT_MS) && ok;
	ok = hear(s.report, WAIT_MS) == 'D' && ok;
	fprintf(stderr, "handshake: %s\n", ok ? "ok" : "FAIL");

	/* Connected: the peer killed by us once a message went across. */
	p = start(sock, 1, PEER_DIE_CONNECTED);
	ok = hear(p.report, WAIT_MS) == 'L' && ok;
	say(s.cmd, 'G');
	ok = hear(s.report, WAIT_MS) == 'S' && hear(p.report, WAIT_MS) == 'E' && ok;
	kill(p.pid, SIGKILL);
	ok = reap(&p, SIGKILL, "the peer killed connected", WAIT_MS) && ok;
	say(s.cmd, 'K');
	ok = hear(s.report, WAIT_MS) == 'D' && ok;
	fprintf(stderr, "connected: %s\n", ok ? "ok" : "FAIL");

	/* A fresh peer, to the end. */
	p = start(sock, 2, PEER_LIVE);
	ok = hear(p.report, WAIT_MS) == 'L' && ok;
	say(s.cmd, 'G');
	ok = hear(s.report, WAIT_MS) == 'D' && ok;
	ok = reap(&p, 0, "the fresh peer", WAIT_MS) && ok;
	ok = reap(&s, 0, "the survivor", WAIT_MS) && ok;
	fprintf(stderr, "fresh peer: %s\n", ok ? "ok" : "FAIL");
	unlink(sock);
	rmdir(dir);
	return ok ? 0 : 1;
}
