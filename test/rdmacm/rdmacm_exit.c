/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A program that disconnects and exits at once (as rping's client does), its DREQ lost
 * on the wire: between real processes over memif, a peer (the memif client, the active
 * side) connects to a server (the memif server, the passive side, which waits for
 * nothing but the disconnection), drops every frame it sends (its faults port, put in
 * force with dpv_dev_set_faults()) while it calls rdma_disconnect(), takes the faults
 * away, destroys its id and returns from main(). Its exit must keep the device running
 * until the DREQ, sent again after the CM's wait, has its DREP: the server gets
 * DISCONNECTED no sooner than that wait and within a few, answers with its DREP, gets
 * TIMEWAIT_EXIT and has no CM id left; the peer exits 0, its faults port having dropped
 * exactly the one DREQ. Without that, the server would wait for ever.
 *
 * The short CM timing of rdmacm_kill: DPV_CM_RESPONSE_TIMEOUT=17, DPV_CM_RETRIES=3,
 * DPV_CM_PACKET_LIFE_TIME=12 (a wait of 537 + 2 x 17 ms). The drop-in keeps its DPDK to
 * itself, so this program links the static libraries of the same code (it reaches the
 * device's faults port); each process starts its own EAL (this one calls no library).
 * The EAL arguments of the memory mode come in DPV_EAL_ARGS; the memif port of each
 * process is added to them here.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>
#include <sys/wait.h>

#include "dpv_engine.h"
#include "dpv_faults.h"
#include "dpv_verbs.h"
#include "rdmacm_test.h"
#include "verbs_priv.h"

#define IP_SERVER "10.208.0.1"
#define IP_PEER "10.208.0.2"
#define PORT 7302
#define WAIT_MS 15000
/* One CM wait: 4.096 us x 2^17 + 2 x 4.096 us x 2^12. */
#define CM_WAIT_NS ((4096ull << 17) + 2 * (4096ull << 12))

static const struct rdma_conn_param conn_param = {
	.responder_resources = 1, .initiator_depth = 1, .retry_count = 3, .rnr_retry_count = 7};

static struct rdma_cm_id *with_qp(struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr a = {
		.cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1},
		.qp_type = IBV_QPT_RC,
	};

	if (rdma_create_qp(id, NULL, &a) != 0) {
		fprintf(stderr, "rdma_create_qp: %s\n", strerror(errno));
		exit(1);
	}
	return id;
}

static void expect_ack(struct rdma_event_channel *ch, enum rdma_cm_event_type type, int line)
{
	struct rdma_cm_event *ev = expect_event(ch, type, NULL, 0, WAIT_MS, line);

	if (ev != NULL)
		rdma_ack_cm_event(ev);
}

#define EXPECT_ACK(ch, type) expect_ack(ch, type, __LINE__)

/* The server: accepts, then waits for the disconnection alone. */
static int server(int report)
{
	struct rdma_event_channel *ch = channel();
	struct sockaddr_in sin = sin_of(IP_SERVER, PORT);
	struct dpv_verbs_cm_id ids[4];
	struct rdma_cm_id *l, *id;
	struct rdma_cm_event *ev;
	struct ibv_context *ctx;
	uint64_t t0;
	int n;

	if (rdma_create_id(ch, &l, NULL, RDMA_PS_TCP) != 0 ||
	    rdma_bind_addr(l, (struct sockaddr *)&sin) != 0 || rdma_listen(l, 4) != 0) {
		fprintf(stderr, "server: listen: %s\n", strerror(errno));
		return 1;
	}
	say(report, 'L');
	ev = expect_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST, NULL, 0, WAIT_MS, __LINE__);
	if (ev == NULL)
		return 1;
	id = ev->id;
	ctx = id->verbs;
	rdma_ack_cm_event(ev);
	with_qp(id);
	CHECK(rdma_accept(id, (struct rdma_conn_param *)&conn_param) == 0, "rdma_accept: %s",
	      strerror(errno));
	EXPECT_ACK(ch, RDMA_CM_EVENT_ESTABLISHED);
	/* The peer disconnects once it hears this; its first DREQ is lost. */
	say(report, 'E');
	t0 = now_ns();
	EXPECT_ACK(ch, RDMA_CM_EVENT_DISCONNECTED);
	fprintf(stderr, "server: DISCONNECTED after %.3f s\n", (now_ns() - t0) / 1e9);
	CHECK(now_ns() - t0 >= CM_WAIT_NS * 9 / 10,
	      "DISCONNECTED after %.3f s: before the resend of the lost DREQ", (now_ns() - t0) / 1e9);
	CHECK(rdma_disconnect(id) == 0, "rdma_disconnect (DREP): %s", strerror(errno));
	EXPECT_ACK(ch, RDMA_CM_EVENT_TIMEWAIT_EXIT);
	rdma_destroy_qp(id);
	CHECK(rdma_destroy_id(id) == 0, "rdma_destroy_id");
	CHECK(rdma_destroy_id(l) == 0, "rdma_destroy_id of the listener");
	n = dpv_verbs_query_cm(ctx, ids, 4);
	CHECK(n == 0, "%d CM ids left (the first %s)", n, n > 0 ? ids[0].state : "");
	rdma_destroy_event_channel(ch);
	return failures ? 1 : 0;
}

/* The peer: connects, disconnects with its DREQ lost, and exits. */
static int peer(int cmd)
{
	struct rdma_event_channel *ch = channel();
	struct sockaddr_in dst = sin_of(IP_SERVER, PORT);
	struct dpv_faults_stats st;
	struct rdma_cm_id *id = new_id(ch);
	struct dpv_dev *dev;
	char why[128];

	CHECK(hear(cmd, WAIT_MS) == 'G', "no word that the server listens");
	CHECK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 5000) == 0,
	      "rdma_resolve_addr: %s", strerror(errno));
	EXPECT_ACK(ch, RDMA_CM_EVENT_ADDR_RESOLVED);
	CHECK(rdma_resolve_route(id, 2000) == 0, "rdma_resolve_route: %s", strerror(errno));
	EXPECT_ACK(ch, RDMA_CM_EVENT_ROUTE_RESOLVED);
	with_qp(id);
	CHECK(rdma_connect(id, (struct rdma_conn_param *)&conn_param) == 0, "rdma_connect: %s",
	      strerror(errno));
	EXPECT_ACK(ch, RDMA_CM_EVENT_ESTABLISHED);
	CHECK(hear(cmd, WAIT_MS) == 'E', "no word that the server is established");
	dev = to_ctx(id->verbs)->dev;
	CHECK(dpv_dev_set_faults(dev, "loss=1,dir=tx", why, sizeof(why)) == 0, "faults: %s", why);
	CHECK(rdma_disconnect(id) == 0, "rdma_disconnect: %s", strerror(errno));
	/* The DREQ went out (and was dropped) inside the call. */
	CHECK(dpv_dev_faults_stats(dev, &st) == 0 && st.tx.dropped == 1,
	      "the faults port dropped %llu frames, not the one DREQ",
	      (unsigned long long)st.tx.dropped);
	CHECK(dpv_dev_set_faults(dev, "loss=0", why, sizeof(why)) == 0, "faults: %s", why);
	rdma_destroy_qp(id);
	CHECK(rdma_destroy_id(id) == 0, "rdma_destroy_id");
	rdma_destroy_event_channel(ch);
	return failures ? 1 : 0;
}

static struct child start(const char *sock, bool is_server)
{
	int to[2], from[2];
	struct child c;
	char eal[1024];

	if (pipe(to) != 0 || pipe(from) != 0) {
		perror("pipe");
		exit(1);
	}
	snprintf(eal, sizeof(eal),
		 "%s --vdev=net_memif0,role=%s,socket=%s,socket-abstract=no "
		 "--file-prefix=dpvexit-%d-%d",
		 getenv("DPV_EAL_ARGS"), is_server ? "server" : "client", sock, (int)getpid(),
		 is_server);
	c.pid = fork();
	if (c.pid < 0) {
		perror("fork");
		exit(1);
	}
	if (c.pid == 0) {
		close(to[1]);
		close(from[0]);
		setenv("DPV_EAL_ARGS", eal, 1);
		setenv("DPV_PORT_IPV4", is_server ? IP_SERVER : IP_PEER, 1);
		/* The peer's port behind a faults wrapper that loses nothing until told. */
		if (!is_server)
			setenv("DPV_FAULTS", "loss=0", 1);
		/* exit(), not _exit(): the program's exit hooks are under test. */
		exit(is_server ? server(from[1]) : peer(to[0]));
	}
	close(to[0]);
	close(from[1]);
	c.cmd = to[1];
	c.report = from[0];
	return c;
}

int main(void)
{
	char dir[] = "/tmp/dpv-rdmacm-exit.XXXXXX", sock[64];
	struct child s, p;
	bool ok = true;

	if (getenv("DPV_EAL_ARGS") == NULL || mkdtemp(dir) == NULL) {
		fprintf(stderr, "want DPV_EAL_ARGS (the memory mode's) and a /tmp\n");
		return 1;
	}
	snprintf(sock, sizeof(sock), "%s/memif.sock", dir);
	setenv("DPV_CM_RESPONSE_TIMEOUT", "17", 1);
	setenv("DPV_CM_RETRIES", "3", 1);
	setenv("DPV_CM_PACKET_LIFE_TIME", "12", 1);
	s = start(sock, true);
	p = start(sock, false);
	ok = hear(s.report, WAIT_MS) == 'L' && ok;
	say(p.cmd, 'G');
	ok = hear(s.report, WAIT_MS) == 'E' && ok;
	say(p.cmd, 'E');
	ok = reap(&p, 0, "the peer", WAIT_MS) && ok;
	ok = reap(&s, 0, "the server", WAIT_MS) && ok;
	unlink(sock);
	rmdir(dir);
	fprintf(stderr, "%s\n", ok ? "ok" : "FAIL");
	return ok ? 0 : 1;
}
