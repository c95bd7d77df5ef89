/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The drop-in librdmacm's API, linked as a program built against rdma-core links it:
 * one process, the two devices of a ring pair (dpv0 127.0.22.1, dpv1 127.0.22.2), a
 * passive id on dpv0 and active ids on dpv1. Events are taken without blocking, and
 * the channel's fd must become readable by itself when the peer's MAD comes (no
 * library call meanwhile: the engine's helper thread drives the devices); every
 * event must come in its order with its fields, and none more:
 *   connect  ADDR_RESOLVED, ROUTE_RESOLVED (the id has its device's PD), CONNECT_REQUEST
 *            with the client's 56 bytes
 *            (the IP CM header stripped), ESTABLISHED on both sides with the server's
 *            196, a message over the QPs the CM moved to RTS, DISCONNECTED on both,
 *            TIMEWAIT_EXIT on both; the limits of private data (EINVAL);
 *   no listener  REJECTED with reason 8 (Invalid Service ID), as the kernel's gives;
 *   reject   REJECTED with reason 28 (Consumer Defined) and the server's 148 bytes;
 *            on a UD id UNREACHABLE with status 2 (SIDR Rejected) and 136 bytes;
 *   backlog  a REQ beyond the listener's backlog REJECTED (28), and the untaken one
 *            when the listener goes;
 *   cycles   1,000 connections without QPs (CONNECT_RESPONSE, rdma_establish()) made
 *            and ended, every event each time, the heap not growing;
 *   addresses    rdma_resolve_addr() returns at once and the answer is an event, on a
 *            blocking channel too: ADDR_RESOLVED once the port's ARP learns the server,
 *            ADDR_ERROR (-ETIMEDOUT) for an address no device reaches no sooner than the
 *            timeout, after which the id resolves again; an id destroyed while its
 *            resolution runs gets nothing and holds nothing (more of them than a device
 *            resolves at once); a synchronous id's call returns with the answer;
 *   route    the path record's packet life time the configured DPV_CM_PACKET_LIFE_TIME;
 *   destroy  rdma_destroy_id() returns only once the events taken for the id are
 *            acked (another thread holding the id's DISCONNECTED);
 *   non-blocking EAGAIN on an empty channel with O_NONBLOCK;
 *   UD ids   RDMA_PS_UDP and RDMA_PS_IPOIB: the QP in RTS with RDMA_UDP_QKEY,
 *            CONNECT_REQUEST with the client's 180 bytes and no QP, ESTABLISHED on
 *            the client only with the server's QP, Q_Key, 136 bytes and an ah_attr
 *            over which a SEND with immediate reaches the server's QP; a port nobody
 *            listens on UNREACHABLE with status 1 (Service ID Not Supported), the
 *            ports of each port space its own; a synchronous UD id of
 *            rdma_getaddrinfo() and rdma_create_ep() whose rdma_connect() returns
 *            with the answer (the server's QP number in id->event, or errno 2 for a
 *            SIDR_REP Rejected);
 *   not offered  RDMA_PS_IB, multicast and rsockets answer at once with their errno.
 */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <rdma/rdma_cma.h>
#include <rdma/rsocket.h>

#include "dpv_verbs.h"
#include "rdmacm_test.h"

#define IP_SERVER "127.0.22.1"
#define IP_CLIENT "127.0.22.2"
#define WAIT_MS 10000
/* Connections made and ended by test_cycles(), at most one each CYCLE_MIN_US: the
 * ones still in TIMEWAIT (two packet life times, 537 ms at the default's) stay below
 * the 256 a device's CM holds. */
#define CYCLES 1000
#define CYCLE_MIN_US 3000

/* The channel's fd must become readable by itself: nobody calls the library while
 * the device's CM queues the event (the helper thread drives the device). */
static void readable(struct rdma_event_channel *ch, int line)
{
	struct pollfd p = {.fd = ch->fd, .events = POLLIN};

	if (poll(&p, 1, WAIT_MS) != 1 || !(p.revents & POLLIN)) {
		fprintf(stderr, "FAIL line %d: the channel's fd not readable within %d ms\n", line,
			WAIT_MS);
		failures++;
	}
}

#define READABLE(ch) readable(ch, __LINE__)

#define EXPECT(ch, type, id) expect_event(ch, type, id, ANY_STATUS, WAIT_MS, __LINE__)

static void expect_ack(struct rdma_event_channel *ch, enum rdma_cm_event_type type,
		       struct rdma_cm_id *id, int line)
{
	struct rdma_cm_event *ev = expect_event(ch, type, id, ANY_STATUS, WAIT_MS, line);

	if (ev != NULL)
		rdma_ack_cm_event(ev);
}

#define EXPECT_ACK(ch, type, id) expect_ack(ch, type, id, __LINE__)

static void expect_empty(struct rdma_event_channel *ch, int line)
{
	struct rdma_cm_event *ev;

	if (rdma_get_cm_event(ch, &ev) == 0) {
		fprintf(stderr, "FAIL line %d: an event more: %s\n", line, rdma_event_str(ev->event));
		failures++;
		rdma_ack_cm_event(ev);
	} else if (errno != EAGAIN) {
		fprintf(stderr, "FAIL line %d: errno %d, want EAGAIN\n", line, errno);
		failures++;
	}
}

#define EXPECT_EMPTY(ch) expect_empty(ch, __LINE__)

/* The packet life time the devices were given (DPV_CM_PACKET_LIFE_TIME), else the
 * CM's default. */
static unsigned int packet_life_time(void)
{
	const char *v = getenv("DPV_CM_PACKET_LIFE_TIME");

	return v != NULL ? (unsigned int)atoi(v) : 16u;
}

/* An active id of port space @p ps on dpv1, its address and route resolved to the
 * server's @p port. */
static struct rdma_cm_id *client_ps(struct rdma_event_channel *ch, uint16_t port,
				    enum rdma_port_space ps)
{
	struct sockaddr_in src = sin_of(IP_CLIENT, 0), dst = sin_of(IP_SERVER, port);
	struct rdma_cm_id *id;

	if (rdma_create_id(ch, &id, NULL, ps) != 0) {
		fprintf(stderr, "rdma_create_id: %s\n", strerror(errno));
		exit(1);
	}
	CHECK(rdma_resolve_addr(id, (struct sockaddr *)&src, (struct sockaddr *)&dst, 2000) == 0,
	      "%s", strerror(errno));
	EXPECT_ACK(ch, RDMA_CM_EVENT_ADDR_RESOLVED, id);
	CHECK(rdma_resolve_route(id, 2000) == 0, "%s", strerror(errno));
	EXPECT_ACK(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, id);
	CHECK(id->route.num_paths == 1 && id->route.path_rec != NULL &&
		      id->route.path_rec->packet_life_time == packet_life_time(),
	      "the path's packet life time %u, want %u",
	      id->route.path_rec ? id->route.path_rec->packet_life_time : 0u,
	      packet_life_time());
	return id;
}

static struct rdma_cm_id *client(struct rdma_event_channel *ch, uint16_t port)
{
	return client_ps(ch, port, RDMA_PS_TCP);
}

static struct rdma_cm_id *listener_ps(struct rdma_event_channel *ch, uint16_t port,
				      enum rdma_port_space ps)
{
	struct sockaddr_in a = sin_of(IP_SERVER, port);
	struct rdma_cm_id *id;

	if (rdma_create_id(ch, &id, NULL, ps) != 0 ||
	    rdma_bind_addr(id, (struct sockaddr *)&a) != 0 || rdma_listen(id, 8) != 0) {
		fprintf(stderr, "listener: %s\n", strerror(errno));
		exit(1);
	}
	return id;
}

static struct rdma_cm_id *listener(struct rdma_event_channel *ch, uint16_t port)
{
	return listener_ps(ch, port, RDMA_PS_TCP);
}

static void qp_for(struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr a = {
		.cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1},
		.qp_type = id->qp_type,
		.sq_sig_all = 1,
	};

	/* No PD and no CQs: the library's default PD, and CQs of its own. */
	CHECK(rdma_create_qp(id, NULL, &a) == 0, "rdma_create_qp: %s", strerror(errno));
	CHECK(id->qp != NULL && id->pd != NULL && id->send_cq != NULL && id->recv_cq != NULL,
	      "the QP and what it was made with");
}

static int poll_one(struct ibv_cq *cq, struct ibv_wc *wc)
{
	for (int i = 0; i < WAIT_MS * 100; i++) {
		int n = ibv_poll_cq(cq, 1, wc);

		if (n != 0)
			return n;
		if (i % 100 == 99) {
			struct pollfd p = {.fd = -1};

			(void)poll(&p, 0, 1);
		}
	}
	return 0;
}

static void test_connect(void)
{
	struct rdma_event_channel *chs = channel(), *chc = channel();
	struct rdma_cm_id *l = listener(chs, 7001), *c, *s;
	struct rdma_conn_param p = {.responder_resources = 1, .initiator_depth = 1,
				    .retry_count = 7, .rnr_retry_count = 7};
	uint8_t req[57], rep[197], buf[2][64];
	struct rdma_cm_event *ev;
	struct ibv_mr *mr[2];
	struct ibv_sge sge;
	struct ibv_recv_wr rwr = {.sg_list = &sge, .num_sge = 1}, *bad_r;
	struct ibv_send_wr swr = {.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED}, *bad_s;
	struct ibv_wc wc;
	uint32_t req_psn = 0, rep_psn = 0;
	int mask;

	for (unsigned int i = 0; i < sizeof(req); i++)
		req[i] = (uint8_t)(0x40 + i);
	for (unsigned int i = 0; i < sizeof(rep); i++)
		rep[i] = (uint8_t)(0x80 + i);
	EXPECT_EMPTY(chc);
	c = client(chc, 7001);
	CHECK(c->verbs != NULL && strcmp(ibv_get_device_name(c->verbs->device), "dpv1") == 0,
	      "the client's device");
	/* An id with a device has the device's PD (rdma-core's id.pd; UCX makes its
	 * QPs on it), as do a listener bound to an address and a request's id. */
	CHECK(c->pd != NULL && c->pd->context == c->verbs, "the client's PD");
	CHECK(l->pd != NULL && l->pd->context == l->verbs, "the listener's PD");
	qp_for(c);
	CHECK(c->qp->pd == c->pd, "the client's QP on its id's PD");
	/* 56 bytes of the REQ's 92 are the consumer's: the IP CM header has 36. */
	p.private_data = req;
	p.private_data_len = 57;
	CHECK(rdma_connect(c, &p) == -1 && errno == EINVAL, "57 bytes: errno %d", errno);
	p.private_data_len = 56;
	CHECK(rdma_connect(c, &p) == 0, "rdma_connect: %s", strerror(errno));

	READABLE(chs);
	ev = EXPECT(chs, RDMA_CM_EVENT_CONNECT_REQUEST, NULL);
	if (ev == NULL)
		exit(1);
	s = ev->id;
	CHECK(ev->listen_id == l, "the listener");
	CHECK(ev->param.conn.private_data_len == 56 &&
	      memcmp(ev->param.conn.private_data, req, 56) == 0, "the REQ's private data (%u)",
	      ev->param.conn.private_data_len);
	CHECK(ev->param.conn.initiator_depth == 1 && ev->param.conn.responder_resources == 1,
	      "depth %u resources %u", ev->param.conn.initiator_depth,
	      ev->param.conn.responder_resources);
	CHECK(ev->param.conn.qp_num == c->qp->qp_num, "the client's QP");
	rdma_ack_cm_event(ev);
	CHECK(strcmp(ibv_get_device_name(s->verbs->device), "dpv0") == 0, "the server's device");
	CHECK(s->pd == l->pd, "the request's PD: its device's");
	CHECK(((struct sockaddr_in *)rdma_get_peer_addr(s))->sin_addr.s_addr ==
	      sin_of(IP_CLIENT, 0).sin_addr.s_addr, "the peer's address");
	CHECK(rdma_get_dst_port(s) == rdma_get_src_port(c), "the client's port");
	CHECK(rdma_get_src_port(s) == htons(7001), "the server's port");
	/* The REQ's Starting PSN is what the client's QP expects first, so the server's
	 * QP sends from it, and the REP's is what the server's QP expects (Linux's CM,
	 * doc/guides/rdma-cm.md): its RTR and RTS attributes say so before its REP, as a
	 * program that readies its own QP (rping -q) takes them. */
	{
		struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTS};

		CHECK(rdma_init_qp_attr(s, &a, &mask) == 0 && (mask & IBV_QP_SQ_PSN),
		      "rdma_init_qp_attr: %s", strerror(errno));
		req_psn = a.sq_psn;
		a.qp_state = IBV_QPS_RTR;
		CHECK(rdma_init_qp_attr(s, &a, &mask) == 0 && (mask & IBV_QP_RQ_PSN),
		      "rdma_init_qp_attr: %s", strerror(errno));
		rep_psn = a.rq_psn;
	}
	qp_for(s);
	p.private_data = rep;
	p.private_data_len = 197;
	CHECK(rdma_accept(s, &p) == -1 && errno == EINVAL, "197 bytes: errno %d", errno);
	p.private_data_len = 196;
	CHECK(rdma_accept(s, &p) == 0, "rdma_accept: %s", strerror(errno));

	ev = EXPECT(chc, RDMA_CM_EVENT_ESTABLISHED, c);
	if (ev != NULL) {
		CHECK(ev->param.conn.private_data_len == 196 &&
		      memcmp(ev->param.conn.private_data, rep, 196) == 0,
		      "the REP's private data (%u)", ev->param.conn.private_data_len);
		rdma_ack_cm_event(ev);
	}
	EXPECT_ACK(chs, RDMA_CM_EVENT_ESTABLISHED, s);
	{
		struct ibv_qp_attr ca, sa;
		struct ibv_qp_init_attr ia;

		CHECK(ibv_query_qp(c->qp, &ca, IBV_QP_SQ_PSN | IBV_QP_RQ_PSN, &ia) == 0 &&
			      ibv_query_qp(s->qp, &sa, IBV_QP_SQ_PSN | IBV_QP_RQ_PSN, &ia) == 0,
		      "ibv_query_qp");
		CHECK(ca.rq_psn == req_psn && sa.sq_psn == req_psn,
		      "the REQ's PSN %#x: the client's rq_psn %#x, the server's sq_psn %#x",
		      req_psn, ca.rq_psn, sa.sq_psn);
		CHECK(sa.rq_psn == rep_psn && ca.sq_psn == rep_psn,
		      "the REP's PSN %#x: the server's rq_psn %#x, the client's sq_psn %#x",
		      rep_psn, sa.rq_psn, ca.sq_psn);
	}

	/* The QPs are connected: a SEND from the client lands in the server's buffer. */
	mr[0] = ibv_reg_mr(s->pd, buf[0], sizeof(buf[0]), IBV_ACCESS_LOCAL_WRITE);
	mr[1] = ibv_reg_mr(c->pd, buf[1], sizeof(buf[1]), IBV_ACCESS_LOCAL_WRITE);
	CHECK(mr[0] != NULL && mr[1] != NULL, "ibv_reg_mr");
	memset(buf[0], 0, sizeof(buf[0]));
	for (unsigned int i = 0; i < sizeof(buf[1]); i++)
		buf[1][i] = (uint8_t)(i * 7);
	sge = (struct ibv_sge){.addr = (uintptr_t)buf[0], .length = 64, .lkey = mr[0]->lkey};
	CHECK(ibv_post_recv(s->qp, &rwr, &bad_r) == 0, "ibv_post_recv");
	sge = (struct ibv_sge){.addr = (uintptr_t)buf[1], .length = 64, .lkey = mr[1]->lkey};
	CHECK(ibv_post_send(c->qp, &swr, &bad_s) == 0, "ibv_post_send");
	CHECK(poll_one(c->send_cq, &wc) == 1 && wc.status == IBV_WC_SUCCESS, "the send: %s",
	      ibv_wc_status_str(wc.status));
	CHECK(poll_one(s->recv_cq, &wc) == 1 && wc.status == IBV_WC_SUCCESS && wc.byte_len == 64,
	      "the receive: %s", ibv_wc_status_str(wc.status));
	CHECK(memcmp(buf[0], buf[1], 64) == 0, "the data");

	CHECK(rdma_disconnect(c) == 0, "rdma_disconnect: %s", strerror(errno));
	READABLE(chs);
	EXPECT_ACK(chs, RDMA_CM_EVENT_DISCONNECTED, s);
	/* The server's DREP answers the client's DREQ. */
	CHECK(rdma_disconnect(s) == 0, "rdma_disconnect (DREP): %s", strerror(errno));
	EXPECT_ACK(chc, RDMA_CM_EVENT_DISCONNECTED, c);
	EXPECT_ACK(chs, RDMA_CM_EVENT_TIMEWAIT_EXIT, s);
	EXPECT_ACK(chc, RDMA_CM_EVENT_TIMEWAIT_EXIT, c);
	EXPECT_EMPTY(chs);
	EXPECT_EMPTY(chc);
	CHECK(rdma_disconnect(c) == -1 && errno == EINVAL, "a second disconnect: errno %d", errno);

	ibv_dereg_mr(mr[0]);
	ibv_dereg_mr(mr[1]);
	rdma_destroy_qp(s);
	rdma_destroy_qp(c);
	CHECK(c->qp == NULL && c->send_cq == NULL, "rdma_destroy_qp()");
	rdma_destroy_id(s);
	rdma_destroy_id(c);
	rdma_destroy_id(l);
	rdma_destroy_event_channel(chs);
	rdma_destroy_event_channel(chc);
}

static void test_no_listener(void)
{
	struct rdma_event_channel *ch = channel();
	struct rdma_cm_id *c = client(ch, 7002);
	struct rdma_cm_event *ev;

	qp_for(c);
	CHECK(rdma_connect(c, NULL) == 0, "rdma_connect: %s", strerror(errno));
	ev = EXPECT(ch, RDMA_CM_EVENT_REJECTED, c);
	if (ev != NULL) {
		CHECK(ev->status == 8, "reason %d, want 8 (Invalid Service ID)", ev->status);
		rdma_ack_cm_event(ev);
	}
	EXPECT_EMPTY(ch);
	rdma_destroy_qp(c);
	rdma_destroy_id(c);
	rdma_destroy_event_channel(ch);
}

/* rdma_reject() with as much private data as it may carry: a REJ (REJECTED, reason 28,
 * Consumer Defined, 148 bytes), on a UD id a SIDR_REP Rejected (UNREACHABLE, status 2,
 * 136 bytes), as the kernel's RDMA CM reports each. */
static void test_reject(enum rdma_port_space ps, uint16_t port)
{
	struct rdma_event_channel *chs = channel(), *chc = channel();
	struct rdma_cm_id *l = listener_ps(chs, port, ps), *c = client_ps(chc, port, ps);
	const bool ud = ps != RDMA_PS_TCP;
	const uint8_t max = ud ? 136 : 148;
	struct rdma_cm_event *ev;
	uint8_t rej[149];

	for (unsigned int i = 0; i < sizeof(rej); i++)
		rej[i] = (uint8_t)(0x11 * i);
	qp_for(c);
	CHECK(rdma_connect(c, NULL) == 0, "rdma_connect: %s", strerror(errno));
	ev = EXPECT(chs, RDMA_CM_EVENT_CONNECT_REQUEST, NULL);
	if (ev == NULL)
		exit(1);
	CHECK(rdma_reject(ev->id, rej, (uint8_t)(max + 1)) == -1 && errno == EINVAL,
	      "%u bytes: errno %d", max + 1, errno);
	CHECK(rdma_reject(ev->id, rej, max) == 0, "rdma_reject: %s", strerror(errno));
	rdma_destroy_id(ev->id);
	rdma_ack_cm_event(ev);
	ev = EXPECT(chc, ud ? RDMA_CM_EVENT_UNREACHABLE : RDMA_CM_EVENT_REJECTED, c);
	if (ev != NULL) {
		/* param.ud and param.conn both start with the private data. */
		CHECK(ev->status == (ud ? 2 : 28), "status %d, want %d", ev->status, ud ? 2 : 28);
		CHECK(ev->param.conn.private_data_len == max &&
		      memcmp(ev->param.conn.private_data, rej, max) == 0,
		      "the answer's private data (%u)", ev->param.conn.private_data_len);
		rdma_ack_cm_event(ev);
	}
	EXPECT_EMPTY(chs);
	EXPECT_EMPTY(chc);
	rdma_destroy_qp(c);
	rdma_destroy_id(c);
	rdma_destroy_id(l);
	rdma_destroy_event_channel(chs);
	rdma_destroy_event_channel(chc);
}

/* A listener of backlog 1: a second REQ while the first CONNECT_REQUEST is untaken is
 * rejected (Consumer Defined, as the kernel's CM does); destroying the listener then
 * rejects the first too, whose id the program never saw. */
static void test_backlog(void)
{
	struct rdma_event_channel *chs = channel(), *chc = channel();
	struct sockaddr_in a = sin_of(IP_SERVER, 7006);
	struct rdma_cm_id *l, *c[2];
	struct rdma_cm_event *ev;
	struct pollfd p = {.fd = chs->fd, .events = POLLIN};

	CHECK(rdma_create_id(chs, &l, NULL, RDMA_PS_TCP) == 0 &&
	      rdma_bind_addr(l, (struct sockaddr *)&a) == 0 && rdma_listen(l, 1) == 0,
	      "listener: %s", strerror(errno));
	for (int i = 0; i < 2; i++) {
		c[i] = client(chc, 7006);
		qp_for(c[i]);
		CHECK(rdma_connect(c[i], NULL) == 0, "rdma_connect: %s", strerror(errno));
		if (i == 0)
			READABLE(chs);
	}
	ev = EXPECT(chc, RDMA_CM_EVENT_REJECTED, c[1]);
	if (ev != NULL) {
		CHECK(ev->status == 28, "reason %d, want 28", ev->status);
		rdma_ack_cm_event(ev);
	}
	CHECK(poll(&p, 1, 0) == 1, "the first CONNECT_REQUEST waits");
	rdma_destroy_id(l);
	ev = EXPECT(chc, RDMA_CM_EVENT_REJECTED, c[0]);
	if (ev != NULL) {
		CHECK(ev->status == 28, "reason %d, want 28", ev->status);
		rdma_ack_cm_event(ev);
	}
	EXPECT_EMPTY(chs);
	EXPECT_EMPTY(chc);
	for (int i = 0; i < 2; i++) {
		rdma_destroy_qp(c[i]);
		rdma_destroy_id(c[i]);
	}
	rdma_destroy_event_channel(chs);
	rdma_destroy_event_channel(chc);
}

/* Connections without QPs (conn_param.qp_num; rdma_establish() on CONNECT_RESPONSE),
 * made and ended again and again: every event each time, and neither ids nor memory
 * that grow (the ids' connections end in TIMEWAIT on their own, after the ids). */
/* The CM ids of @p ctx's device. */
static int cm_ids(struct ibv_context *ctx)
{
	return dpv_verbs_query_cm(ctx, NULL, 0);
}

static void test_cycles(void)
{
	struct rdma_event_channel *chs = channel(), *chc = channel();
	struct rdma_cm_id *l = listener(chs, 7007), *c, *s;
	struct rdma_conn_param p = {.retry_count = 7};
	struct rdma_cm_event *ev;
	struct ibv_context *c_dev = NULL;
	size_t heap = 0;

	for (int i = 0; i < CYCLES; i++) {
		struct timespec t0, t1;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		if (i == CYCLES / 4)
			heap = mallinfo2().uordblks;
		c = client(chc, 7007);
		p.qp_num = 0x100 + (uint32_t)i;
		CHECK(rdma_connect(c, &p) == 0, "cycle %d: rdma_connect: %s", i, strerror(errno));
		ev = EXPECT(chs, RDMA_CM_EVENT_CONNECT_REQUEST, NULL);
		if (ev == NULL)
			exit(1);
		s = ev->id;
		CHECK(ev->param.conn.qp_num == 0x100 + (uint32_t)i, "cycle %d: the REQ's QP", i);
		rdma_ack_cm_event(ev);
		p.qp_num = 0x8000 + (uint32_t)i;
		CHECK(rdma_accept(s, &p) == 0, "cycle %d: rdma_accept: %s", i, strerror(errno));
		ev = EXPECT(chc, RDMA_CM_EVENT_CONNECT_RESPONSE, c);
		if (ev == NULL)
			exit(1);
		CHECK(ev->param.conn.qp_num == 0x8000 + (uint32_t)i, "cycle %d: the REP's QP", i);
		rdma_ack_cm_event(ev);
		CHECK(rdma_establish(c) == 0, "cycle %d: rdma_establish: %s", i, strerror(errno));
		EXPECT_ACK(chs, RDMA_CM_EVENT_ESTABLISHED, s);
		CHECK(rdma_disconnect(c) == 0, "cycle %d: rdma_disconnect: %s", i, strerror(errno));
		EXPECT_ACK(chs, RDMA_CM_EVENT_DISCONNECTED, s);
		CHECK(rdma_disconnect(s) == 0, "cycle %d: the DREP: %s", i, strerror(errno));
		EXPECT_ACK(chc, RDMA_CM_EVENT_DISCONNECTED, c);
		c_dev = c->verbs;
		rdma_destroy_id(s);
		rdma_destroy_id(c);
		if (failures)
			break;
		/* At most one cycle per CYCLE_MIN_US: the connections in TIMEWAIT fit. */
		clock_gettime(CLOCK_MONOTONIC, &t1);
		long us = (t1.tv_sec - t0.tv_sec) * 1000000L + (t1.tv_nsec - t0.tv_nsec) / 1000;
		if (us < CYCLE_MIN_US)
			usleep((useconds_t)(CYCLE_MIN_US - us));
	}
	CHECK(mallinfo2().uordblks <= heap + 16384, "the heap grew from %zu to %zu bytes",
	      heap, mallinfo2().uordblks);
	/* Once the last TIMEWAIT is over, the devices' CMs hold the listener alone. */
	for (int i = 0; i < 300 && (cm_ids(l->verbs) != 1 || cm_ids(c_dev) != 0); i++)
		usleep(10000);
	CHECK(cm_ids(l->verbs) == 1 && cm_ids(c_dev) == 0, "CM ids left: %d on dpv0, %d on dpv1",
	      cm_ids(l->verbs), cm_ids(c_dev));
	EXPECT_EMPTY(chs);
	EXPECT_EMPTY(chc);
	rdma_destroy_id(l);
	rdma_destroy_event_channel(chs);
	rdma_destroy_event_channel(chc);
}

/* A thread that takes one event of @p ch, holds it HOLD_MS, then acks it. */
#define HOLD_MS 300
struct holder {
	struct rdma_event_channel *ch;
	enum rdma_cm_event_type got;
	int taken, acked;      /* atomics */
};

static void *hold_main(void *arg)
{
	struct holder *h = arg;
	struct pollfd pf = {.fd = h->ch->fd, .events = POLLIN};
	struct rdma_cm_event *ev;

	if (poll(&pf, 1, WAIT_MS) != 1 || rdma_get_cm_event(h->ch, &ev) != 0)
		return NULL;
	h->got = ev->event;
	__atomic_store_n(&h->taken, 1, __ATOMIC_RELEASE);
	usleep(HOLD_MS * 1000);
	__atomic_store_n(&h->acked, 1, __ATOMIC_RELEASE);
	rdma_ack_cm_event(ev);
	return NULL;
}

/*
 * rdma_destroy_id() waits until every event the program took for the id is acked
 * (rdma_destroy_id(3): "ack all related events"), as librdmacm's does: a thread that
 * took the DISCONNECTED of an id may still be reading what the id's context points
 * to, which the program frees once the id is destroyed (rping's event thread).
 */
static void test_destroy_waits_for_ack(void)
{
	struct rdma_event_channel *chs = channel(), *chc = channel();
	struct rdma_cm_id *l = listener(chs, 7012), *c = client(chc, 7012), *s;
	struct rdma_conn_param p = {.retry_count = 7, .qp_num = 0x77};
	struct holder h = {.ch = chc};
	struct rdma_cm_event *ev;
	pthread_t th;

	CHECK(rdma_connect(c, &p) == 0, "rdma_connect: %s", strerror(errno));
	ev = EXPECT(chs, RDMA_CM_EVENT_CONNECT_REQUEST, NULL);
	if (ev == NULL)
		exit(1);
	s = ev->id;
	rdma_ack_cm_event(ev);
	CHECK(rdma_accept(s, &p) == 0, "rdma_accept: %s", strerror(errno));
	EXPECT_ACK(chc, RDMA_CM_EVENT_CONNECT_RESPONSE, c);
	CHECK(rdma_establish(c) == 0, "rdma_establish: %s", strerror(errno));
	EXPECT_ACK(chs, RDMA_CM_EVENT_ESTABLISHED, s);
	CHECK(pthread_create(&th, NULL, hold_main, &h) == 0, "pthread_create");
	CHECK(rdma_disconnect(s) == 0, "rdma_disconnect: %s", strerror(errno));
	for (int i = 0; i < WAIT_MS && !__atomic_load_n(&h.taken, __ATOMIC_ACQUIRE); i++)
		usleep(1000);
	CHECK(h.taken && h.got == RDMA_CM_EVENT_DISCONNECTED, "the client's DISCONNECTED taken");
	rdma_destroy_id(c);
	CHECK(__atomic_load_n(&h.acked, __ATOMIC_ACQUIRE),
	      "rdma_destroy_id() returned before the event's ack");
	pthread_join(th, NULL);
	EXPECT_ACK(chs, RDMA_CM_EVENT_DISCONNECTED, s);
	rdma_destroy_id(s);
	rdma_destroy_id(l);
	rdma_destroy_event_channel(chs);
	rdma_destroy_event_channel(chc);
}

#define IP_NOBODY "127.0.22.77"
/* How long a call that does not wait for ARP may take on a loaded machine. */
#define CALL_MS 100

static uint64_t ms_since(uint64_t t0)
{
	return (now_ns() - t0) / 1000000u;
}

/* rdma_resolve_addr() of @p c from dpv1 to @p ip with @p timeout_ms, which must return
 * 0 at once; the time it was called. */
static uint64_t resolve_at_once(struct rdma_cm_id *c, const char *ip, int timeout_ms)
{
	struct sockaddr_in src = sin_of(IP_CLIENT, 0), dst = sin_of(ip, 7004);
	uint64_t t0 = now_ns();

	CHECK(rdma_resolve_addr(c, (struct sockaddr *)&src, (struct sockaddr *)&dst,
				timeout_ms) == 0, "rdma_resolve_addr: %s", strerror(errno));
	CHECK(ms_since(t0) < CALL_MS, "rdma_resolve_addr() took %llu ms",
	      (unsigned long long)ms_since(t0));
	return t0;
}

/* The first resolution of the server's address, which dpv1's ARP has never learned:
 * on a blocking channel, the call returns before the answer and rdma_get_cm_event()
 * waits for it. */
/* The next event of blocking channel @p ch; the program ends if the call fails. */
static struct rdma_cm_event *wait_event(struct rdma_event_channel *ch)
{
	struct rdma_cm_event *ev;

	if (rdma_get_cm_event(ch, &ev) != 0) {
		fprintf(stderr, "rdma_get_cm_event: %s\n", strerror(errno));
		exit(1);
	}
	return ev;
}

static void test_addr_blocking(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_event *ev;
	struct rdma_cm_id *c;
	uint64_t t0;

	if (ch == NULL)
		exit(1);
	c = new_id(ch);
	(void)resolve_at_once(c, IP_SERVER, 2000);
	ev = wait_event(ch);
	CHECK(ev->event == RDMA_CM_EVENT_ADDR_RESOLVED && ev->id == c && ev->status == 0,
	      "%s (status %d)", rdma_event_str(ev->event), ev->status);
	rdma_ack_cm_event(ev);
	CHECK(c->verbs != NULL && strcmp(ibv_get_device_name(c->verbs->device), "dpv1") == 0,
	      "the device that reaches the server");
	/* An address nobody answers: the event no sooner than the timeout. */
	rdma_destroy_id(c);
	c = new_id(ch);
	t0 = resolve_at_once(c, IP_NOBODY, 300);
	ev = wait_event(ch);
	CHECK(ev->event == RDMA_CM_EVENT_ADDR_ERROR && ev->id == c && ev->status == -ETIMEDOUT,
	      "%s (status %d)", rdma_event_str(ev->event), ev->status);
	CHECK(ms_since(t0) >= 290, "ADDR_ERROR after %llu ms, before the timeout",
	      (unsigned long long)ms_since(t0));
	rdma_ack_cm_event(ev);
	rdma_destroy_id(c);
	rdma_destroy_event_channel(ch);
}

static void test_addr_error(void)
{
	struct rdma_event_channel *ch = channel();
	struct sockaddr_in src = sin_of(IP_CLIENT, 0), dst = sin_of(IP_SERVER, 7004);
	struct rdma_cm_id *c;
	struct rdma_cm_event *ev;
	uint64_t t0;

	c = new_id(ch);
	t0 = resolve_at_once(c, IP_NOBODY, 300);
	EXPECT_EMPTY(ch);
	ev = EXPECT(ch, RDMA_CM_EVENT_ADDR_ERROR, c);
	if (ev != NULL) {
		CHECK(ev->status == -ETIMEDOUT, "status %d", ev->status);
		CHECK(ms_since(t0) >= 290, "ADDR_ERROR after %llu ms, before the timeout",
		      (unsigned long long)ms_since(t0));
		rdma_ack_cm_event(ev);
	}
	EXPECT_EMPTY(ch);
	CHECK(rdma_resolve_route(c, 100) == -1 && errno == EINVAL, "a route without an address");
	/* Bound again, as the kernel's id is after ADDR_ERROR: it may try again. */
	CHECK(rdma_resolve_addr(c, NULL, (struct sockaddr *)&dst, 2000) == 0, "again: %s",
	      strerror(errno));
	EXPECT_ACK(ch, RDMA_CM_EVENT_ADDR_RESOLVED, c);
	CHECK(((struct sockaddr_in *)rdma_get_local_addr(c))->sin_addr.s_addr ==
		      src.sin_addr.s_addr, "the source: dpv1's address");
	rdma_destroy_id(c);
	rdma_destroy_event_channel(ch);
}

/* Ids destroyed while their resolution runs, more of them than a device resolves at
 * once: no event comes for any (their channel is the test's, which outlives them), and
 * none holds the device's room, so the resolution after them runs to its timeout. */
static void test_addr_destroyed(void)
{
	struct rdma_event_channel *ch = channel();
	struct rdma_cm_id *c;
	struct rdma_cm_event *ev;
	uint64_t t0;

	for (int i = 0; i < 100; i++) {
		c = new_id(ch);
		(void)resolve_at_once(c, IP_NOBODY, i < 99 ? 10000 : 100);
		rdma_destroy_id(c);
	}
	usleep(300000);
	EXPECT_EMPTY(ch);
	c = new_id(ch);
	t0 = resolve_at_once(c, IP_NOBODY, 300);
	ev = EXPECT(ch, RDMA_CM_EVENT_ADDR_ERROR, c);
	if (ev != NULL) {
		CHECK(ev->status == -ETIMEDOUT && ms_since(t0) >= 290,
		      "status %d after %llu ms: the device had no room left", ev->status,
		      (unsigned long long)ms_since(t0));
		rdma_ack_cm_event(ev);
	}
	rdma_destroy_id(c);
	rdma_destroy_event_channel(ch);
}

/* A synchronous id (no channel of the program's): rdma_resolve_addr() returns with the
 * answer, 0 or -1 with ETIMEDOUT after the timeout. */
static void test_addr_sync(void)
{
	struct sockaddr_in src = sin_of(IP_CLIENT, 0), dst = sin_of(IP_NOBODY, 7004),
			   srv = sin_of(IP_SERVER, 7004);
	struct rdma_cm_id *c;
	uint64_t t0;

	c = new_id(NULL);
	t0 = now_ns();
	CHECK(rdma_resolve_addr(c, (struct sockaddr *)&src, (struct sockaddr *)&dst, 200) == -1 &&
		      errno == ETIMEDOUT, "unreachable: errno %d", errno);
	CHECK(ms_since(t0) >= 190, "returned after %llu ms, before the timeout",
	      (unsigned long long)ms_since(t0));
	CHECK(rdma_resolve_addr(c, NULL, (struct sockaddr *)&srv, 2000) == 0, "the server: %s",
	      strerror(errno));
	CHECK(c->verbs != NULL && c->event != NULL &&
		      c->event->event == RDMA_CM_EVENT_ADDR_RESOLVED,
	      "the synchronous id's device and event");
	rdma_destroy_id(c);
}

static void test_not_offered(void)
{
	struct rdma_event_channel *ch = channel();
	struct sockaddr_in a = sin_of(IP_SERVER, 7005);
	struct rdma_cm_id *id;

	CHECK(rdma_create_id(ch, &id, NULL, RDMA_PS_IB) == -1 && errno == EPROTONOSUPPORT,
	      "RDMA_PS_IB: errno %d", errno);
	CHECK(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0, "%s", strerror(errno));
	CHECK(rdma_bind_addr(id, (struct sockaddr *)&a) == 0, "%s", strerror(errno));
	CHECK(rdma_join_multicast(id, (struct sockaddr *)&a, NULL) == -1 && errno == ENOSYS,
	      "multicast: errno %d", errno);
	CHECK(rsocket(AF_INET, SOCK_STREAM, 0) == -1 && errno == ENOSYS, "rsocket: errno %d",
	      errno);
	CHECK(strcmp(rdma_event_str(RDMA_CM_EVENT_TIMEWAIT_EXIT), "RDMA_CM_EVENT_TIMEWAIT_EXIT") == 0,
	      "rdma_event_str");
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
}

/* A UD id's QP: in RTS at once, with the Q_Key of RDMA_PS_UDP's. */
static void check_ud_qp(struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr qa;

	CHECK(id->qp_type == IBV_QPT_UD && id->qp != NULL && id->qp->qp_type == IBV_QPT_UD,
	      "a UD QP");
	CHECK(ibv_query_qp(id->qp, &qa, IBV_QP_STATE | IBV_QP_QKEY, &ia) == 0 &&
		      qa.qp_state == IBV_QPS_RTS && qa.qkey == RDMA_UDP_QKEY,
	      "state %d, Q_Key %#x", qa.qp_state, qa.qkey);
}

/* SIDR on ids of @p ps: private data both ways, the ESTABLISHED event's AH reaches the
 * server's QP, which sees the sender's QP and GRH. */
static void test_ud_sidr(enum rdma_port_space ps, uint16_t port)
{
	struct rdma_event_channel *chs = channel(), *chc = channel();
	struct rdma_cm_id *l = listener_ps(chs, port, ps), *c = client_ps(chc, port, ps), *s;
	uint8_t req[181], rep[137], buf[2][40 + 64];
	struct rdma_conn_param p = {0};
	struct rdma_cm_event *ev;
	struct ibv_ah *ah = NULL;
	struct ibv_mr *mr[2];
	struct ibv_wc wc;
	struct ibv_sge ssge, rsge;
	struct ibv_recv_wr rwr = {.sg_list = &rsge, .num_sge = 1}, *bad_r;
	struct ibv_send_wr swr = {.sg_list = &ssge, .num_sge = 1, .opcode = IBV_WR_SEND_WITH_IMM,
				  .send_flags = IBV_SEND_SIGNALED}, *bad_s;
	uint32_t qpn = 0, qkey = 0;

	for (size_t i = 0; i < sizeof(req); i++)
		req[i] = (uint8_t)(i * 7 + 1);
	for (size_t i = 0; i < sizeof(rep); i++)
		rep[i] = (uint8_t)(i * 5 + 3);
	qp_for(c);
	check_ud_qp(c);
	p.private_data = req;
	p.private_data_len = 181;
	CHECK(rdma_connect(c, &p) == -1 && errno == EINVAL, "181 bytes: errno %d", errno);
	p.private_data_len = 180;
	CHECK(rdma_connect(c, &p) == 0, "rdma_connect: %s", strerror(errno));
	ev = EXPECT(chs, RDMA_CM_EVENT_CONNECT_REQUEST, NULL);
	if (ev == NULL)
		exit(1);
	s = ev->id;
	CHECK(ev->listen_id == l && s->qp_type == IBV_QPT_UD && s->ps == ps, "the UD id");
	CHECK(ev->param.ud.private_data_len == 180 &&
		      memcmp(ev->param.ud.private_data, req, 180) == 0,
	      "the SIDR_REQ's private data (%u bytes)", ev->param.ud.private_data_len);
	/* A SIDR_REQ names no QP: the kernel's event has none. */
	CHECK(ev->param.ud.qp_num == 0 && ev->param.ud.qkey == 0, "no QP in a SIDR_REQ");
	CHECK(((struct sockaddr_in *)rdma_get_peer_addr(s))->sin_addr.s_addr ==
		      sin_of(IP_CLIENT, 0).sin_addr.s_addr &&
		      rdma_get_dst_port(s) == rdma_get_src_port(c),
	      "the client's address");
	rdma_ack_cm_event(ev);
	qp_for(s);
	check_ud_qp(s);
	mr[0] = ibv_reg_mr(c->pd, buf[0], sizeof(buf[0]), IBV_ACCESS_LOCAL_WRITE);
	mr[1] = ibv_reg_mr(s->pd, buf[1], sizeof(buf[1]), IBV_ACCESS_LOCAL_WRITE);
	CHECK(mr[0] != NULL && mr[1] != NULL, "ibv_reg_mr");
	memset(buf, 0, sizeof(buf));
	rsge = (struct ibv_sge){.addr = (uintptr_t)buf[1], .length = sizeof(buf[1]),
				.lkey = mr[1]->lkey};
	CHECK(ibv_post_recv(s->qp, &rwr, &bad_r) == 0, "ibv_post_recv");
	p.private_data = rep;
	p.private_data_len = 137;
	CHECK(rdma_accept(s, &p) == -1 && errno == EINVAL, "137 bytes: errno %d", errno);
	p.private_data_len = 136;
	CHECK(rdma_accept(s, &p) == 0, "rdma_accept: %s", strerror(errno));
	ev = EXPECT(chc, RDMA_CM_EVENT_ESTABLISHED, c);
	if (ev != NULL) {
		union ibv_gid gid;
		struct sockaddr_in srv = sin_of(IP_SERVER, 0);

		memset(&gid, 0, sizeof(gid));
		gid.raw[10] = gid.raw[11] = 0xff;
		memcpy(&gid.raw[12], &srv.sin_addr, 4);
		CHECK(ev->status == 0 && ev->param.ud.qp_num == s->qp->qp_num &&
			      ev->param.ud.qkey == RDMA_UDP_QKEY,
		      "the server's QP %#x and Q_Key %#x", ev->param.ud.qp_num, ev->param.ud.qkey);
		CHECK(ev->param.ud.private_data_len == 136 &&
			      memcmp(ev->param.ud.private_data, rep, 136) == 0,
		      "the SIDR_REP's private data (%u bytes)", ev->param.ud.private_data_len);
		CHECK(ev->param.ud.ah_attr.is_global && ev->param.ud.ah_attr.port_num == 1 &&
			      ev->param.ud.ah_attr.grh.sgid_index == 0 &&
			      memcmp(&ev->param.ud.ah_attr.grh.dgid, &gid, sizeof(gid)) == 0,
		      "the AH: a GRH to the server's IPv4-mapped GID");
		ah = ibv_create_ah(c->pd, &ev->param.ud.ah_attr);
		CHECK(ah != NULL, "ibv_create_ah: %s", strerror(errno));
		qpn = ev->param.ud.qp_num;
		qkey = ev->param.ud.qkey;
		rdma_ack_cm_event(ev);
	}
	/* A UD id answers with no event of its own, and holds no connection. */
	EXPECT_EMPTY(chs);
	CHECK(rdma_disconnect(c) == -1 && errno == EINVAL, "rdma_disconnect: errno %d", errno);
	if (ah != NULL) {
		for (int i = 0; i < 64; i++)
			buf[0][i] = (uint8_t)(i ^ 0x5a);
		ssge = (struct ibv_sge){.addr = (uintptr_t)buf[0], .length = 64,
					.lkey = mr[0]->lkey};
		swr.imm_data = htonl(c->qp->qp_num);
		swr.wr.ud.ah = ah;
		swr.wr.ud.remote_qpn = qpn;
		swr.wr.ud.remote_qkey = qkey;
		CHECK(ibv_post_send(c->qp, &swr, &bad_s) == 0, "ibv_post_send");
		CHECK(poll_one(c->send_cq, &wc) == 1 && wc.status == IBV_WC_SUCCESS,
		      "the send: %s", ibv_wc_status_str(wc.status));
		CHECK(poll_one(s->recv_cq, &wc) == 1 && wc.status == IBV_WC_SUCCESS &&
			      wc.byte_len == 40 + 64 && (wc.wc_flags & IBV_WC_GRH) &&
			      (wc.wc_flags & IBV_WC_WITH_IMM) &&
			      ntohl(wc.imm_data) == c->qp->qp_num && wc.src_qp == c->qp->qp_num,
		      "the receive: %s, %u bytes, source QP %#x", ibv_wc_status_str(wc.status),
		      wc.byte_len, wc.src_qp);
		CHECK(memcmp(buf[0], buf[1] + 40, 64) == 0, "the data");
		ibv_destroy_ah(ah);
	}
	ibv_dereg_mr(mr[0]);
	ibv_dereg_mr(mr[1]);
	rdma_destroy_qp(c);
	rdma_destroy_qp(s);
	rdma_destroy_id(s);
	rdma_destroy_id(c);
	rdma_destroy_id(l);
	rdma_destroy_event_channel(chc);
	rdma_destroy_event_channel(chs);
}

/* A UD id's SIDR_REQ to a port nobody listens on: UNREACHABLE with the SIDR_REP's
 * status Service ID Not Supported (1); a TCP listener on the port is another service,
 * in a port space of its own. */
static void test_ud_no_listener(void)
{
	struct rdma_event_channel *chs = channel(), *chc = channel();
	struct rdma_cm_id *l = listener(chs, 7012), *c = client_ps(chc, 7012, RDMA_PS_UDP), *u;
	struct sockaddr_in a = sin_of(IP_SERVER, 7012);
	struct rdma_cm_event *ev;

	CHECK(rdma_connect(c, NULL) == 0, "rdma_connect: %s", strerror(errno));
	ev = EXPECT(chc, RDMA_CM_EVENT_UNREACHABLE, c);
	if (ev != NULL) {
		CHECK(ev->status == 1, "status %d, want 1 (Service ID Not Supported)",
		      ev->status);
		rdma_ack_cm_event(ev);
	}
	EXPECT_EMPTY(chs);
	CHECK(rdma_create_id(chs, &u, NULL, RDMA_PS_UDP) == 0 &&
		      rdma_bind_addr(u, (struct sockaddr *)&a) == 0,
	      "a UD id on the TCP listener's port: %s", strerror(errno));
	rdma_destroy_id(u);
	rdma_destroy_id(c);
	rdma_destroy_id(l);
	rdma_destroy_event_channel(chc);
	rdma_destroy_event_channel(chs);
}

/* What a synchronous UD client saw (sync_client()). */
struct sync_result {
	int ret[2], err[2];
	int qp_type, ps;
	uint32_t qpn, qkey;
};

/* A synchronous UD id as rdma_getaddrinfo() and rdma_create_ep() make it: its
 * rdma_connect() returns with the answer, ESTABLISHED in id->event, then, the second
 * time, the SIDR_REP Rejected as errno 2 (rdma-core's library gives a positive status
 * as the errno). */
static void *sync_client(void *arg)
{
	struct sync_result *r = arg;
	struct sockaddr_in src = sin_of(IP_CLIENT, 0);
	struct rdma_addrinfo hints = {.ai_port_space = RDMA_PS_UDP,
				      .ai_src_addr = (struct sockaddr *)&src,
				      .ai_src_len = sizeof(src)},
			     *res;
	struct rdma_cm_id *id;

	if (rdma_getaddrinfo(IP_SERVER, "7013", &hints, &res) != 0) {
		r->err[0] = errno;
		return NULL;
	}
	r->qp_type = res->ai_qp_type;
	r->ps = res->ai_port_space;
	for (int i = 0; i < 2; i++) {
		if (rdma_create_ep(&id, res, NULL, NULL) != 0) {
			r->err[i] = errno;
			break;
		}
		r->ret[i] = rdma_connect(id, NULL);
		r->err[i] = r->ret[i] ? errno : 0;
		if (i == 0 && r->ret[i] == 0) {
			r->qpn = id->event->param.ud.qp_num;
			r->qkey = id->event->param.ud.qkey;
		}
		rdma_destroy_ep(id);
	}
	rdma_freeaddrinfo(res);
	return NULL;
}

static void test_ud_sync(void)
{
	struct rdma_event_channel *chs = channel();
	struct rdma_cm_id *l = listener_ps(chs, 7013, RDMA_PS_UDP);
	struct rdma_conn_param p = {.qp_num = 0x4321};
	struct sync_result r = {.ret = {-1, -1}};
	struct rdma_cm_event *ev;
	pthread_t t;

	if (pthread_create(&t, NULL, sync_client, &r) != 0)
		exit(1);
	ev = EXPECT(chs, RDMA_CM_EVENT_CONNECT_REQUEST, NULL);
	if (ev != NULL) {
		/* No QP on the id: conn_param's QP number goes in the SIDR_REP. */
		CHECK(rdma_accept(ev->id, &p) == 0, "rdma_accept: %s", strerror(errno));
		rdma_destroy_id(ev->id);
		rdma_ack_cm_event(ev);
	}
	ev = EXPECT(chs, RDMA_CM_EVENT_CONNECT_REQUEST, NULL);
	if (ev != NULL) {
		CHECK(rdma_reject(ev->id, NULL, 0) == 0, "rdma_reject: %s", strerror(errno));
		rdma_destroy_id(ev->id);
		rdma_ack_cm_event(ev);
	}
	pthread_join(t, NULL);
	CHECK(r.qp_type == IBV_QPT_UD && r.ps == RDMA_PS_UDP, "rdma_getaddrinfo: QP type %d, "
	      "port space %#x", r.qp_type, r.ps);
	CHECK(r.ret[0] == 0 && r.qpn == 0x4321 && r.qkey == RDMA_UDP_QKEY,
	      "the synchronous rdma_connect(): %d (errno %d), QP %#x, Q_Key %#x", r.ret[0],
	      r.err[0], r.qpn, r.qkey);
	CHECK(r.ret[1] == -1 && r.err[1] == 2, "rejected: %d, errno %d", r.ret[1], r.err[1]);
	EXPECT_EMPTY(chs);
	rdma_destroy_id(l);
	rdma_destroy_event_channel(chs);
}

int main(void)
{
	int n = 0;
	struct ibv_context **devs = rdma_get_devices(&n);

	CHECK(devs != NULL && n == 2, "%d devices (want the ring pair's two)", n);
	rdma_free_devices(devs);
	test_not_offered();
	test_addr_blocking();
	test_addr_error();
	test_addr_destroyed();
	test_addr_sync();
	test_no_listener();
	test_reject(RDMA_PS_TCP, 7003);
	test_backlog();
	test_connect();
	test_cycles();
	test_destroy_waits_for_ack();
	test_ud_sidr(RDMA_PS_UDP, 7010);
	test_ud_sidr(RDMA_PS_IPOIB, 7010);
	test_reject(RDMA_PS_UDP, 7011);
	test_ud_no_listener();
	test_ud_sync();
	if (failures)
		fprintf(stderr, "%d failures\n", failures);
	return failures ? 1 : 0;
}
