/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RDMA_CM_EVENT_DEVICE_REMOVAL through the librdmacm API: one process, the two devices
 * of a ring pair (dpv0 127.0.22.1, dpv1 127.0.22.2), and dpv0's ethdev port removed as
 * DPDK tells of a NIC unplugged: RTE_ETH_EVENT_INTR_RMV, raised here as its driver
 * raises it (rte_eth_dev_callback_process(), which DPDK exports to drivers). The
 * drop-in keeps its DPDK to itself, so this program links the static libraries of
 * lib/rdmacm and lib/verbs with DPDK's shared ones: the same code, and an EAL the test
 * can reach. Before it, on dpv0: a listener bound to its address, the server's id of a
 * connection from dpv1 (both QPs in RTS) and an id resolving an address nobody has; a
 * listener on every device; on dpv1 the client's id and an unbound id resolving. Then:
 *   every id on dpv0, and only those, gets DEVICE_REMOVAL once, status 0 (the channel's
 *   fd readable by itself), its QP in the error state; dpv0's CM holds no id; the
 *   listener on every device, the client and the unbound id get nothing (that one's
 *   ADDR_ERROR comes at its timeout, from dpv1); a second removal event changes
 *   nothing;
 *   on dpv0 afterwards rdma_listen() fails with ENODEV and a resolution gives
 *   ADDR_ERROR -ENODEV; every id is destroyed without a crash.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <rdma/rdma_cma.h>
#include <rte_ethdev.h>

#include "dpv_verbs.h"
#include "rdmacm_test.h"

/* The two calls DPDK exports for its drivers (ethdev_driver.h, which Debian does not
 * install): a port's device by name, and an event raised on it. */
struct rte_eth_dev;
struct rte_eth_dev *rte_eth_dev_allocated(const char *name);
int rte_eth_dev_callback_process(struct rte_eth_dev *dev, enum rte_eth_event_type event,
				 void *ret_param);

#define IP_SERVER "127.0.22.1"
#define IP_CLIENT "127.0.22.2"
#define IP_NOBODY "127.0.22.77"
#define PORT 7401
#define WAIT_MS 10000
/* The unbound id's timeout: long enough that its ADDR_ERROR comes after the check that
 * nothing came for it. */
#define UNBOUND_TIMEOUT_MS 1500

static struct rdma_cm_id *listener(struct rdma_event_channel *ch, const char *ip,
				   uint16_t port)
{
	struct sockaddr_in a = sin_of(ip, port);
	struct rdma_cm_id *id = new_id(ch);

	CHECK(rdma_bind_addr(id, (struct sockaddr *)&a) == 0 && rdma_listen(id, 8) == 0,
	      "listener on %s: %s", ip, strerror(errno));
	return id;
}

static void qp_for(struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr a = {
		.cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1},
		.qp_type = IBV_QPT_RC,
	};

	CHECK(rdma_create_qp(id, NULL, &a) == 0, "rdma_create_qp: %s", strerror(errno));
}

static int qp_state(struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr qa;

	if (ibv_query_qp(id->qp, &qa, IBV_QP_STATE, &ia) != 0)
		return -1;
	return (int)qa.qp_state;
}

static void expect_ack(struct rdma_event_channel *ch, enum rdma_cm_event_type type,
		       struct rdma_cm_id *id, int status, int line)
{
	struct rdma_cm_event *ev = expect_event(ch, type, id, status, WAIT_MS, line);

	if (ev != NULL)
		rdma_ack_cm_event(ev);
}

#define EXPECT_ACK(ch, type, id, status) expect_ack(ch, type, id, status, __LINE__)

static void expect_empty(struct rdma_event_channel *ch, const char *what)
{
	struct rdma_cm_event *ev;

	if (rdma_get_cm_event(ch, &ev) == 0) {
		CHECK(0, "%s: %s", what, rdma_event_str(ev->event));
		rdma_ack_cm_event(ev);
	}
}

/* Raise the removal of dpv0's ethdev port: the first of the ring pair's (dpverbs
 * names its devices in port-id order). */
static void remove_port(void)
{
	char name[RTE_ETH_NAME_MAX_LEN];
	struct rte_eth_dev *dev;
	uint64_t port = rte_eth_find_next(0);

	if (port >= RTE_MAX_ETHPORTS || rte_eth_dev_get_name_by_port((uint16_t)port, name) != 0 ||
	    (dev = rte_eth_dev_allocated(name)) == NULL) {
		fprintf(stderr, "no ethdev port for dpv0\n");
		exit(1);
	}
	(void)rte_eth_dev_callback_process(dev, RTE_ETH_EVENT_INTR_RMV, NULL);
}

int main(void)
{
	struct rdma_event_channel *chs = channel(), *chc = channel();
	struct rdma_cm_id *l = listener(chs, IP_SERVER, PORT),
			  *w = listener(chs, "0.0.0.0", PORT + 2);
	struct rdma_cm_id *c = new_id(chc), *u = new_id(chc), *r = new_id(chs), *s, *x;
	struct sockaddr_in src = sin_of(IP_CLIENT, 0), dst = sin_of(IP_SERVER, PORT),
			   srv = sin_of(IP_SERVER, 0), nobody = sin_of(IP_NOBODY, PORT);
	struct rdma_cm_id *want[3] = {l, NULL, r};
	struct pollfd pfd = {.fd = chs->fd, .events = POLLIN};
	struct rdma_cm_event *ev;
	struct dpv_verbs_cm_id ids[4];
	struct ibv_context *dpv0;
	int got[3] = {0};
	uint64_t t_unbound;

	/* The connection: dpv1's client to the listener bound to dpv0's address. */
	CHECK(rdma_resolve_addr(c, (struct sockaddr *)&src, (struct sockaddr *)&dst, 2000) == 0,
	      "%s", strerror(errno));
	EXPECT_ACK(chc, RDMA_CM_EVENT_ADDR_RESOLVED, c, 0);
	CHECK(rdma_resolve_route(c, 2000) == 0, "%s", strerror(errno));
	EXPECT_ACK(chc, RDMA_CM_EVENT_ROUTE_RESOLVED, c, 0);
	qp_for(c);
	CHECK(rdma_connect(c, NULL) == 0, "rdma_connect: %s", strerror(errno));
	ev = expect_event(chs, RDMA_CM_EVENT_CONNECT_REQUEST, NULL, 0, WAIT_MS, __LINE__);
	if (ev == NULL)
		return 1;
	s = want[1] = ev->id;
	CHECK(ev->listen_id == l, "the request came to the bound listener");
	rdma_ack_cm_event(ev);
	qp_for(s);
	CHECK(rdma_accept(s, NULL) == 0, "rdma_accept: %s", strerror(errno));
	EXPECT_ACK(chc, RDMA_CM_EVENT_ESTABLISHED, c, 0);
	EXPECT_ACK(chs, RDMA_CM_EVENT_ESTABLISHED, s, 0);
	CHECK(qp_state(s) == IBV_QPS_RTS, "the server's QP before: %d", qp_state(s));
	dpv0 = s->verbs;
	CHECK(strcmp(ibv_get_device_name(dpv0->device), "dpv0") == 0, "the server's device");

	/* Resolutions under way: one bound to dpv0, one on both devices. */
	CHECK(rdma_resolve_addr(r, (struct sockaddr *)&srv, (struct sockaddr *)&nobody,
				WAIT_MS) == 0, "%s", strerror(errno));
	t_unbound = now_ns();
	CHECK(rdma_resolve_addr(u, NULL, (struct sockaddr *)&nobody, UNBOUND_TIMEOUT_MS) == 0,
	      "%s", strerror(errno));
	expect_empty(chs, "an event before the removal");

	remove_port();
	CHECK(poll(&pfd, 1, WAIT_MS) == 1, "the channel's fd not readable after the removal");
	for (int n = 0; n < 3; n++) {
		ev = expect_event(chs, RDMA_CM_EVENT_DEVICE_REMOVAL, NULL, 0, WAIT_MS, __LINE__);
		if (ev == NULL)
			break;
		for (int i = 0; i < 3; i++)
			got[i] += ev->id == want[i];
		CHECK(ev->id != w, "the listener on every device was told");
		rdma_ack_cm_event(ev);
	}
	CHECK(got[0] == 1 && got[1] == 1 && got[2] == 1,
	      "DEVICE_REMOVAL: listener %d, server %d, resolving %d times", got[0], got[1],
	      got[2]);
	CHECK(qp_state(s) == IBV_QPS_ERR, "the server's QP after: %d", qp_state(s));
	CHECK(qp_state(c) == IBV_QPS_RTS, "the client's QP after: %d", qp_state(c));
	CHECK(dpv_verbs_query_cm(dpv0, ids, 4) == 0, "dpv0's CM still holds ids");
	/* A second event of the same removal tells nothing new. */
	remove_port();
	expect_empty(chs, "an event after a second removal");
	expect_empty(chc, "an event on dpv1");
	CHECK((now_ns() - t_unbound) / 1000000u < UNBOUND_TIMEOUT_MS - 200,
	      "too slow to tell the unbound id's ADDR_ERROR from its timeout");
	ev = expect_event(chc, RDMA_CM_EVENT_ADDR_ERROR, u, -ETIMEDOUT, WAIT_MS, __LINE__);
	if (ev != NULL) {
		CHECK((now_ns() - t_unbound) / 1000000u >= UNBOUND_TIMEOUT_MS - 10,
		      "the unbound id's ADDR_ERROR before its timeout (dpv1 still resolves)");
		rdma_ack_cm_event(ev);
	}

	/* Nothing starts on dpv0 any more. */
	x = new_id(chs);
	srv.sin_port = htons(PORT + 1);
	CHECK(rdma_bind_addr(x, (struct sockaddr *)&srv) == 0, "bind: %s", strerror(errno));
	CHECK(rdma_listen(x, 1) == -1 && errno == ENODEV, "rdma_listen: errno %d", errno);
	rdma_destroy_id(x);
	x = new_id(chs);
	srv.sin_port = 0;
	dst = sin_of(IP_CLIENT, PORT);
	CHECK(rdma_resolve_addr(x, (struct sockaddr *)&srv, (struct sockaddr *)&dst, 2000) == 0,
	      "%s", strerror(errno));
	EXPECT_ACK(chs, RDMA_CM_EVENT_ADDR_ERROR, x, -ENODEV);
	rdma_destroy_id(x);

	rdma_destroy_qp(s);
	rdma_destroy_id(s);
	rdma_destroy_id(r);
	rdma_destroy_id(l);
	rdma_destroy_id(w);
	rdma_destroy_id(u);
	rdma_destroy_qp(c);
	rdma_destroy_id(c);
	expect_empty(chs, "an event at the end");
	rdma_destroy_event_channel(chs);
	rdma_destroy_event_channel(chc);
	if (failures)
		fprintf(stderr, "%d failures\n", failures);
	return failures ? 1 : 0;
}
