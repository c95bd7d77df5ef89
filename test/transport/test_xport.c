/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/transport: two devices joined by a ring pair, and one device talking to itself
 * through its loopback, driven by a pump loop of dpv_xport_tx / rx / tick. Memory
 * regions are written into the key tables directly and WQEs into the rings, as
 * lib/verbs does. EAL arguments come from the command line (meson passes the memory
 * mode).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <infiniband/tm_types.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ip.h>

#include "dpv_xport.h"

#define PD 1u
/* Every connection starts just below the 24-bit PSN wrap, so every test crosses it. */
#define PSN0 0xffff00u
#define MTU_1024 3u
#define ACCESS_ALL (DPV_ACCESS_LOCAL_WRITE | DPV_ACCESS_REMOTE_WRITE | DPV_ACCESS_REMOTE_READ)
#define ROUNDS 20000

static struct dpv_port pa, pb;
static struct dpv_xport *xa, *xb;
static struct dpv_mr_table *ta, *tb;
static uint32_t mr_next = 1;
static int eal_argc;
static char **eal_argv;

/* ---- the pump ---- */

/* A test may look at every frame device A or B receives: drop it (false), or keep it. */
static bool (*a_rx_hook)(struct rte_mbuf *m);
static bool (*b_rx_hook)(struct rte_mbuf *m);

static void pump_port(struct dpv_port *port, struct dpv_xport *x)
{
	bool (*hook)(struct rte_mbuf *m) = x == xa ? a_rx_hook : b_rx_hook;
	struct rte_mbuf *pkts[64];
	uint16_t n, kept, i;

	do {
		n = dpv_port_rx(port, pkts, RTE_DIM(pkts));
		kept = n;
		if (hook != NULL) {
			for (i = 0, kept = 0; i < n; i++) {
				if (hook(pkts[i]))
					pkts[kept++] = pkts[i];
				else
					rte_pktmbuf_free(pkts[i]);
			}
		}
		dpv_xport_rx(x, pkts, kept);
	} while (n != 0);
}

static void pump_once(void)
{
	uint64_t now;

	dpv_xport_tx(xa, 64);
	dpv_xport_tx(xb, 64);
	pump_port(&pa, xa);
	pump_port(&pb, xb);
	now = rte_get_tsc_cycles();
	dpv_xport_tick(xa, now);
	dpv_xport_tick(xb, now);
	dpv_port_arp_tick(&pa, now);
	dpv_port_arp_tick(&pb, now);
}

static void pump(int rounds)
{
	for (int i = 0; i < rounds; i++)
		pump_once();
}

static uint64_t now_ms(void)
{
	return rte_get_tsc_cycles() / (rte_get_tsc_hz() / 1000);
}

/* Pump until @p want completions are read from @p cq, or give up after ROUNDS rounds
 * and POLL_MS (recovery from loss waits for ACK timers). */
#define POLL_MS 5000
static int poll_n(struct dpv_cq *cq, struct dpv_cqe *out, int want)
{
	uint64_t end = now_ms() + POLL_MS;
	int got = 0;

	for (int round = 0; got < want && (round < ROUNDS || now_ms() < end); round++) {
		got += (int)dpv_ring_dequeue_burst(cq->ring, out + got, (uint32_t)(want - got));
		if (got < want)
			pump_once();
	}
	return got;
}

static int cq_left(struct dpv_cq *cq)
{
	struct dpv_cqe c[16];

	pump(20);
	return (int)dpv_ring_dequeue_burst(cq->ring, c, 16);
}

/* ---- memory regions ---- */

static uint32_t mr_reg_pd(struct dpv_mr_table *t, void *buf, size_t len, uint32_t access,
			  uint32_t pd)
{
	uint32_t idx = mr_next++;
	struct dpv_mr *mr = calloc(1, sizeof(*mr));

	assert_non_null(mr);
	mr->addr = (uintptr_t)buf;
	mr->length = len;
	mr->lkey = mr->rkey = dpv_mr_key(idx, t->gen[idx]);
	mr->access = access;
	mr->pd = pd;
	__atomic_store_n(&t->slot[idx], mr, __ATOMIC_RELEASE);
	return mr->lkey;
}

static uint32_t mr_reg(struct dpv_mr_table *t, void *buf, size_t len, uint32_t access)
{
	return mr_reg_pd(t, buf, len, access, PD);
}

static void mr_dereg(struct dpv_mr_table *t, uint32_t key)
{
	struct dpv_mr *mr = t->slot[dpv_mr_key_slot(key)];

	__atomic_store_n(&t->slot[dpv_mr_key_slot(key)], NULL, __ATOMIC_RELEASE);
	t->gen[dpv_mr_key_slot(key)]++;
	free(mr);
}

static void fill(uint8_t *buf, size_t len, uint32_t seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(seed + i * 7 + (i >> 8));
}

/* ---- QPs ---- */

struct end {
	struct dpv_xport *x;
	struct dpv_mr_table *t;
	struct dpv_qp *qp;
	struct dpv_cq *scq, *rcq;
	bool own_rcq;
	int fatal;
};

static void on_fatal(struct dpv_qp *qp, void *arg)
{
	(void)qp;
	((struct end *)arg)->fatal++;
}

static void end_open(struct end *e, struct dpv_xport *x, uint8_t type, struct dpv_srq *srq,
		     struct dpv_cq *rcq)
{
	struct dpv_qp_init init = {
		.type = type, .pd = PD, .max_send_wr = 64, .max_recv_wr = 64,
		.max_send_sge = DPV_MAX_SGE, .max_recv_sge = DPV_MAX_SGE,
		.max_inline = DPV_MAX_INLINE, .srq = srq,
	};

	memset(e, 0, sizeof(*e));
	e->x = x;
	e->t = x == xa ? ta : tb;
	assert_int_equal(dpv_cq_create(x, 256, &e->scq), 0);
	if (rcq == NULL) {
		assert_int_equal(dpv_cq_create(x, 256, &e->rcq), 0);
		e->own_rcq = true;
	} else {
		e->rcq = rcq;
	}
	init.send_cq = e->scq;
	init.recv_cq = e->rcq;
	assert_int_equal(dpv_qp_create(x, &init, &e->qp), 0);
	e->qp->fatal_event = on_fatal;
	e->qp->fatal_arg = e;
}

static void end_close(struct end *e)
{
	dpv_qp_destroy(e->x, e->qp);
	dpv_cq_destroy(e->scq);
	if (e->own_rcq)
		dpv_cq_destroy(e->rcq);
}

/* The local ACK timeout and retry count rc_up() gives (tests of loss change them). */
static uint8_t rc_timeout = 14, rc_retry_cnt = 7;
/* The READs rc_up() lets a QP have outstanding as requester and as responder. */
static uint8_t rc_max_rd = DPV_MAX_RD_ATOMIC, rc_max_dest_rd = DPV_MAX_RD_ATOMIC;
/* What rc_up() lets the peer do. */
static uint32_t rc_qp_access = ACCESS_ALL | DPV_ACCESS_REMOTE_ATOMIC;

static void rc_up(struct end *e, uint32_t dst_ip, uint32_t dest_qpn, uint8_t rnr_retry)
{
	struct dpv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.state = DPV_QPS_INIT;
	a.access = rc_qp_access;
	assert_int_equal(dpv_qp_modify(e->x, e->qp, &a, DPV_QP_STATE | DPV_QP_PKEY_INDEX |
				       DPV_QP_PORT | DPV_QP_ACCESS_FLAGS), 0);
	a.state = DPV_QPS_RTR;
	a.path_mtu = MTU_1024;
	a.dest_qpn = dest_qpn;
	a.rq_psn = PSN0;
	a.dst_ip = dst_ip;
	a.min_rnr_timer = 1; /* 10 us */
	a.max_dest_rd_atomic = rc_max_dest_rd;
	assert_int_equal(dpv_qp_modify(e->x, e->qp, &a, DPV_QP_STATE | DPV_QP_AV |
				       DPV_QP_PATH_MTU | DPV_QP_DEST_QPN | DPV_QP_RQ_PSN |
				       DPV_QP_MAX_DEST_RD_ATOMIC | DPV_QP_MIN_RNR_TIMER), 0);
	a.state = DPV_QPS_RTS;
	a.sq_psn = PSN0;
	a.timeout = rc_timeout;
	a.retry_cnt = rc_retry_cnt;
	a.rnr_retry = rnr_retry;
	a.max_rd_atomic = rc_max_rd;
	assert_int_equal(dpv_qp_modify(e->x, e->qp, &a, DPV_QP_STATE | DPV_QP_SQ_PSN |
				       DPV_QP_TIMEOUT | DPV_QP_RETRY_CNT | DPV_QP_RNR_RETRY |
				       DPV_QP_MAX_QP_RD_ATOMIC), 0);
}

/* a on device A; b on device B, or on A too when @p loop (the device talks to itself). */
static void rc_pair(struct end *a, struct end *b, bool loop, struct dpv_srq *srq_b,
		    struct dpv_cq *rcq_b, uint8_t rnr_retry)
{
	end_open(a, xa, DPV_QPT_RC, NULL, NULL);
	end_open(b, loop ? xa : xb, DPV_QPT_RC, srq_b, rcq_b);
	rc_up(a, loop ? pa.ipv4 : pb.ipv4, b->qp->qpn, rnr_retry);
	rc_up(b, pa.ipv4, a->qp->qpn, rnr_retry);
}

static void ud_up(struct end *e, uint32_t qkey)
{
	struct dpv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.state = DPV_QPS_INIT;
	a.qkey = qkey;
	assert_int_equal(dpv_qp_modify(e->x, e->qp, &a, DPV_QP_STATE | DPV_QP_PKEY_INDEX |
				       DPV_QP_PORT | DPV_QP_QKEY), 0);
	a.state = DPV_QPS_RTR;
	assert_int_equal(dpv_qp_modify(e->x, e->qp, &a, DPV_QP_STATE), 0);
	a.state = DPV_QPS_RTS;
	a.sq_psn = 7;
	assert_int_equal(dpv_qp_modify(e->x, e->qp, &a, DPV_QP_STATE | DPV_QP_SQ_PSN), 0);
}

/* ---- work requests ---- */

static struct dpv_swqe swqe(uint8_t opcode, uint64_t wr_id)
{
	struct dpv_swqe w;

	memset(&w, 0, sizeof(w));
	w.opcode = opcode;
	w.wr_id = wr_id;
	w.flags = DPV_WR_F_SIGNALED;
	return w;
}

static void swqe_sge(struct dpv_swqe *w, const void *addr, uint32_t len, uint32_t lkey)
{
	w->sge[w->num_sge].addr = (uintptr_t)addr;
	w->sge[w->num_sge].length = len;
	w->sge[w->num_sge].lkey = lkey;
	w->num_sge++;
	w->length += len;
}

static void post_send(struct dpv_qp *qp, const struct dpv_swqe *w)
{
	assert_int_equal(dpv_ring_enqueue_burst(qp->sq, w, 1), 1);
	dpv_qp_doorbell(qp);
}

static struct dpv_rwqe rwqe(uint64_t wr_id, void *addr, uint32_t len, uint32_t lkey)
{
	struct dpv_rwqe r;

	memset(&r, 0, sizeof(r));
	r.wr_id = wr_id;
	if (addr != NULL) {
		r.num_sge = 1;
		r.sge[0].addr = (uintptr_t)addr;
		r.sge[0].length = len;
		r.sge[0].lkey = lkey;
	}
	return r;
}

static void post_recv(struct dpv_qp *qp, const struct dpv_rwqe *r)
{
	assert_int_equal(dpv_ring_enqueue_burst(qp->rq, r, 1), 1);
}

static void post_srq(struct dpv_srq *srq, uint32_t lane, const struct dpv_rwqe *r)
{
	assert_int_equal(dpv_ring_enqueue_burst(srq->lanes.lane[lane], r, 1), 1);
	__atomic_add_fetch(&srq->posted, 1, __ATOMIC_RELEASE);
}

static struct dpv_xport_stats stats(struct dpv_xport *x)
{
	struct dpv_xport_stats st;

	dpv_xport_stats_get(x, &st);
	return st;
}

/* ---- setup ---- */

static int devices_up(void **state)
{
	bool up_a = false, up_b = false;
	uint16_t ida, idb;
	uint32_t speed;
	char sa[8], sb[8];

	(void)state;
	if (rte_eal_init(eal_argc, eal_argv) < 0)
		return -1;
	if (dpv_port_ring_pair("xp0", (int)rte_socket_id(), &ida, &idb) != 0)
		return -1;
	snprintf(sa, sizeof(sa), "%u", ida);
	snprintf(sb, sizeof(sb), "%u", idb);
	strcpy(pa.name, "dpv0");
	strcpy(pb.name, "dpv1");
	pa.ipv4 = RTE_IPV4(127, 0, 20, 1); /* never leaves the process */
	pb.ipv4 = RTE_IPV4(127, 0, 20, 2);
	if (dpv_port_open(&pa, "ethdev", sa, 8191) != 0 ||
	    dpv_port_open(&pb, "ethdev", sb, 8191) != 0)
		return -1;
	for (int i = 0; i < 5000 && !(up_a && up_b); i++) {
		pa.ops->link(&pa, &up_a, &speed);
		pb.ops->link(&pb, &up_b, &speed);
		rte_delay_ms(1);
	}
	ta = calloc(1, sizeof(*ta));
	tb = calloc(1, sizeof(*tb));
	if (ta == NULL || tb == NULL || dpv_xport_create(&pa, ta, &xa) != 0 ||
	    dpv_xport_create(&pb, tb, &xb) != 0)
		return -1;
	return up_a && up_b ? 0 : -1;
}

static int devices_down(void **state)
{
	(void)state;
	dpv_xport_destroy(xa);
	dpv_xport_destroy(xb);
	for (uint32_t i = 0; i < mr_next; i++) {
		free(ta->slot[i]);
		free(tb->slot[i]);
	}
	free(ta);
	free(tb);
	dpv_port_close(&pa);
	dpv_port_close(&pb);
	rte_eal_cleanup();
	return 0;
}

/* ---- memory-region checks ---- */

static void mr_check_covers_key_pd_range_and_access(void **state)
{
	static uint8_t buf[4096];
	uint32_t k = mr_reg(ta, buf, sizeof(buf), DPV_ACCESS_LOCAL_WRITE);
	uintptr_t b = (uintptr_t)buf;

	(void)state;
	assert_non_null(dpv_mr_check(ta, k, PD, b, sizeof(buf), 0));
	assert_non_null(dpv_mr_check(ta, k, PD, b + 4095, 1, DPV_ACCESS_LOCAL_WRITE));
	assert_non_null(dpv_mr_check(ta, k, PD, b + 4096, 0, 0));
	assert_null(dpv_mr_check(ta, k, PD, b + 4095, 2, 0));
	assert_null(dpv_mr_check(ta, k, PD, b - 1, 1, 0));
	assert_null(dpv_mr_check(ta, k, PD, b + 8, UINT64_MAX, 0));
	assert_null(dpv_mr_check(ta, k, PD + 1, b, 1, 0));
	assert_null(dpv_mr_check(ta, k, PD, b, 1, DPV_ACCESS_REMOTE_READ));
	assert_null(dpv_mr_check(ta, k + 1, PD, b, 1, 0));       /* other generation */
	assert_null(dpv_mr_check(ta, 0xffffff00u, PD, b, 1, 0)); /* beyond the table */
	mr_dereg(ta, k);
	assert_null(dpv_mr_check(ta, k, PD, b, 1, 0));
	assert_int_equal(dpv_xport_active_mtu(xa), MTU_1024); /* 1500-byte link */
}

/* ---- RC ---- */

static void rc_send_single_packet(void **state)
{
	struct end a, b;
	uint8_t src[100] = {0}, dst[256] = {0};
	uint32_t ks = mr_reg(ta, src, sizeof(src), 0);
	uint32_t kd = mr_reg(tb, dst, sizeof(dst), DPV_ACCESS_LOCAL_WRITE);
	struct dpv_swqe w = swqe(DPV_WR_SEND, 11);
	struct dpv_rwqe r = rwqe(22, dst, sizeof(dst), kd);
	struct dpv_cqe c;

	(void)state;
	rc_pair(&a, &b, false, NULL, NULL, 7);
	fill(src, sizeof(src), 1);
	post_recv(b.qp, &r);
	swqe_sge(&w, src, sizeof(src), ks);
	post_send(a.qp, &w);
	assert_int_equal(poll_n(b.rcq, &c, 1), 1);
	assert_int_equal(c.status, DPV_WC_SUCCESS);
	assert_int_equal(c.opcode, DPV_WC_RECV);
	assert_int_equal(c.wr_id, 22);
	assert_int_equal(c.byte_len, 100);
	assert_int_equal(c.qp_num, b.qp->qpn);
	assert_int_equal(c.src_qp, a.qp->qpn);
	assert_int_equal(c.flags, 0);
	assert_memory_equal(src, dst, sizeof(src));
	assert_int_equal(poll_n(a.scq, &c, 1), 1);
	assert_int_equal(c.status, DPV_WC_SUCCESS);
	assert_int_equal(c.opcode, DPV_WC_SEND);
	assert_int_equal(c.wr_id, 11);
	assert_int_equal(c.qp_num, a.qp->qpn);
	assert_int_equal(cq_left(a.scq) + cq_left(b.rcq), 0);
	/* the WQE left the SQ ring only when acknowledged */
	assert_int_equal(dpv_ring_used(a.qp->sq), 0);
	end_close(&a);
	end_close(&b);
	mr_dereg(ta, ks);
	mr_dereg(tb, kd);
}

static void rc_send_64k_multi_packet_sges(void **state)
{
	const uint32_t len = 65536;
	uint8_t *src = malloc(len), *dst = malloc(len + 3000);
	uint32_t ks = mr_reg(ta, src, len, 0);
	uint32_t kd = mr_reg(tb, dst, len + 3000, DPV_ACCESS_LOCAL_WRITE);
	struct dpv_swqe w = swqe(DPV_WR_SEND, 1);
	struct dpv_rwqe r = rwqe(2, dst, 1000, kd);
	struct dpv_xport_stats before = stats(xa);
	struct dpv_cqe c;
	struct end a, b;

	(void)state;
	rc_pair(&a, &b, false, NULL, NULL, 7);
	fill(src, len, 5);
	/* three send pieces, three receive pieces with a gap between the last two */
	swqe_sge(&w, src, 10000, ks);
	swqe_sge(&w, src + 10000, 1, ks);
	swqe_sge(&w, src + 10001, len - 10001, ks);
	r.num_sge = 3;
	r.sge[1] = (struct dpv_sge){(uintptr_t)(dst + 1000), 30000, kd};
	r.sge[2] = (struct dpv_sge){(uintptr_t)(dst + 33000), len - 31000, kd};
	post_recv(b.qp, &r);
	post_send(a.qp, &w);
	assert_int_equal(poll_n(b.rcq, &c, 1), 1);
	assert_int_equal(c.status, DPV_WC_SUCCESS);
	assert_int_equal(c.byte_len, len);
	assert_memory_equal(dst, src, 31000);
	assert_memory_equal(dst + 33000, src + 31000, len - 31000);
	assert_int_equal(poll_n(a.scq, &c, 1), 1);
	assert_int_equal(c.status, DPV_WC_SUCCESS);
	assert_int_equal(c.byte_len, len);
	/* 64 packets of 1024 bytes, and nothing resent but a tail loss probe (one packet
	 * each) if the pump stalled for a millisecond */
	assert_int_equal(stats(xa).tx_packets - before.tx_packets -
				 (stats(xa).qps.retrans_probe - before.qps.retrans_probe),
			 64);
	end_close(&a);
	end_close(&b);
	mr_dereg(ta, ks);
	mr_dereg(tb, kd);
	free(src);
	free(dst);
}

static int notified;

static void on_notify(struct dpv_cq *cq, void *arg)
{
	(void)cq;
	(void)arg;
	notified++;
}

static void rc_send_with_imm_solicited_notifies(void **state)
{
	uint8_t src[3000] = {0}, dst[3000] = {0};
	uint32_t ks = mr_reg(ta, src, sizeof(src), 0);
	uint32_t kd = mr_reg(tb, dst, sizeof(dst), DPV_ACCESS_LOCAL_WRITE);
	struct dpv_swqe w = swqe(DPV_WR_SEND_WITH_IMM, 1);
	struct dpv_rwqe r = rwqe(2, dst, sizeof(dst), kd);
	struct dpv_cqe c;
	struct end a, b;

	(void)state;
	rc_pair(&a, &b, false, NULL, NULL, 7);
	b.rcq->notify = on_notify;
	notified = 0;
	/* solicited-only arming: an unsolicited message does not fire it */
	b.rcq->armed = 2;
	post_recv(b.qp, &r);
	post_recv(b.qp, &r);
	w.imm = 0xdeadbeef;
	swqe_sge(&w, src, sizeof(src), ks);
	post_send(a.qp, &w);
	assert_int_equal(poll_n(b.rcq, &c, 1), 1);
	assert_int_equal(c.opcode, DPV_WC_RECV);
	assert_int_equal(c.flags, DPV_WC_F_IMM);
	assert_int_equal(c.imm, 0xdeadbeef);
	assert_int_equal(c.byte_len, sizeof(src));
	assert_int_equal(notified, 0);
	assert_int_equal(b.rcq->armed, 2);
	w.flags |= DPV_WR_F_SOLICITED;
	post_send(a.qp, &w);
	assert_int_equal(poll_n(b.rcq, &c, 1), 1);
	assert_int_equal(notified, 1);
	assert_int_equal(b.rcq->armed, 0);
	assert_int_equal(poll_n(a.scq, &c, 1), 1);
	assert_int_equal(poll_n(a.scq, &c, 1), 1);
	end_close(&a);
	end_close(&b);
	mr_dereg(ta, ks);
	mr_dereg(tb, kd);
}

static void rc_write_multi_packet_and_unsignaled(void **state)
{
	const uint32_t len = 10000;
	uint8_t *src = malloc(len), *dst = calloc(1, len + 64);
	uint32_t ks = mr_reg(ta, src, len, 0);
	uint32_t kd = mr_reg(tb, dst, len + 64, DPV_ACCESS_LOCAL_WRITE | DPV_ACCESS_REMOTE_WRITE);
	struct dpv_swqe w = swqe(DPV_WR_RDMA_WRITE, 5);
	struct dpv_cqe c;
	struct end a, b;

	(void)state;
	rc_pair(&a, &b, false, NULL, NULL, 7);
	fill(src, len, 9);
	w.remote_addr = (uintptr_t)(dst + 32);
	w.rkey = kd;
	swqe_sge(&w, src, len, ks);
	/* unsignaled first: only the second completes, both leave the ring */
	w.flags = 0;
	post_send(a.qp, &w);
	w.flags = DPV_WR_F_SIGNALED;
	w.wr_id = 6;
	post_send(a.qp, &w);
	assert_int_equal(poll_n(a.scq, &c, 1), 1);
	assert_int_equal(c.wr_id, 6);
	assert_int_equal(c.opcode, DPV_WC_RDMA_WRITE);
	assert_int_equal(c.status, DPV_WC_SUCCESS);
	assert_memory_equal(dst + 32, src, len);
	for (int i = 0; i < 32; i++)
		assert_int_equal(dst[i] | dst[32 + len + i], 0);
	assert_int_equal(cq_left(b.rcq), 0);
	assert_int_equal(dpv_ring_used(a.qp->sq), 0);
	end_close(&a);
	end_close(&b);
	mr_dereg(ta, ks);
	mr_dereg(tb, kd);
	free(src);
	free(dst);
}

static void rc_write_with_imm_consumes_a_receive(void **state)
{
	const uint32_t len = 2500;
	uint8_t *src = malloc(len), *dst = calloc(1, len);
	uint32_t ks = mr_reg(ta, src, len, 0);
	uint32_t kd = mr_reg(tb, dst, len, DPV_ACCESS_LOCAL_WRITE | DPV_ACCESS_REMOTE_WRITE);
	struct dpv_swqe w = swqe(DPV_WR_RDMA_WRITE_WITH_IMM, 5);
	struct dpv_rwqe r = rwqe(77, NULL, 0, 0);
	struct dpv_cqe c;
	struct end a, b;

	(void)state;
	rc_pair(&a, &b, false, NULL, NULL, 7);
	fill(src, len, 3);
	post_recv(b.qp, &r);
	w.remote_addr = (uintptr_t)dst;
	w.rkey = kd;
	w.imm = 0x01020304;
	swqe_sge(&w, src, len, ks);
	post_send(a.qp, &w);
	assert_int_equal(poll_n(b.rcq, &c, 1), 1);
	assert_int_equal(c.status, DPV_WC_SUCCESS);
	assert_int_equal(c.opcode, DPV_WC_RECV_RDMA_WITH_IMM);
	assert_int_equal(c.wr_id, 77);
	assert_int_equal(c.imm, 0x01020304);
	assert_int_equal(c.flags, DPV_WC_F_IMM);
	assert_int_equal(c.byte_len, len);
	assert_memory_equal(dst, src, len);
	assert_int_equal(poll_n(a.scq, &c, 1), 1);
	assert_int_equal(c.status, DPV_WC_SUCCESS);
	end_close(&a);
	end_close(&b);
	mr_dereg(ta, ks);
	mr_dereg(tb, kd);
	free(src);
	free(dst);
}

static void rc_read_multi_packet_into_two_sges(void **state)
{
	const uint32_t len = 20000;
	uint8_t *remote = malloc(len), *local = calloc(1, len);
	uint32_t kr = mr_reg(tb, remote, len, DPV_ACCESS_REMOTE_READ);
	uint32_t kl = mr_reg(ta, local, len, DPV_ACCESS_LOCAL_WRITE);
	struct dpv_swqe w = swqe(DPV_WR_RDMA_READ, 9);
	struct dpv_cqe c[3];
	struct end a, b;

	(void)state;
	rc_pair(&a, &b, false, NULL, NULL, 7);
	fill(remote, len, 77);
	w.remote_addr = (uintptr_t)remote;
	w.rkey = kr;
	swqe_sge(&w, local + 5000, len - 5000, kl);
	swqe_sge(&w, local, 5000, kl);
	post_send(a.qp, &w);
	/* a READ, a fenced SEND-less WRITE of 0 bytes, and a zero-length READ */
	w = swqe(DPV_WR_RDMA_WRITE, 10);
	w.flags |= DPV_WR_F_FENCE;
	post_send(a.qp, &w);
	w = swqe(DPV_WR_RDMA_READ, 11);
	post_send(a.qp, &w);
	assert_int_equal(poll_n(a.scq, c, 3), 3);
	assert_int_equal(c[0].wr_id, 9);
	assert_int_equal(c[0].status, DPV_WC_SUCCESS);
	assert_int_equal(c[0].opcode, DPV_WC_RDMA_READ);
	assert_int_equal(c[0].byte_len, len);
	assert_int_equal(c[1].wr_id, 10);
	assert_int_equal(c[1].status, DPV_WC_SUCCESS);
	assert_int_equal(c[2].wr_id, 11);
	assert_int_equal(c[2].status, DPV_WC_SUCCESS);
	assert_memory_equal(local + 5000, remote, len - 5000);
	assert_memory_equal(local, remote + len - 5000, 5000);
	end_close(&a);
	end_close(&b);
	mr_dereg(tb, kr);
	mr_dereg(ta, kl);
	free(remote);
	free(local);
}

static void rc_inline_send_needs_no_key(void **state)
{
	uint8_t dst[300] = {0};
	uint32_t kd = mr_reg(tb, dst, sizeof(dst), DPV_ACCESS_LOCAL_WRITE);
	struct dpv_swqe w = swqe(DPV_WR_SEND, 1);
	struct dpv_rwqe r = rwqe(2, dst, sizeof(dst), kd);
	struct dpv_cqe c;
	struct end a, b;

	(void)state;
	rc_pair(&a, &b, false, NULL, NULL, 7);
	post_recv(b.qp, &r);
	w.flags |= DPV_WR_F_INLINE;
	w.length = DPV_MAX_INLINE;
	fill(w.inline_data, DPV_MAX_INLINE, 42);
	post_send(a.qp, &w);
	assert_int_equal(poll_n(b.rcq, &c, 1), 1);
	assert_int_equal(c.byte_len, DPV_MAX_INLINE);
	assert_memory_equal(dst, w.inline_data, DPV_MAX_INLINE);
	assert_int_equal(poll_n(a.scq, &c, 1), 1);
	assert_int_equal(c.status, DPV_WC_SUCCESS);
	end_close(&a);
	end_close(&b);
	mr_dereg(tb, kd);
}

/* One device, two QPs: every frame loops back inside the device, none reaches the wire. */
static void loopback_send_write_read_on_one_device(void **state)
{
	const uint32_t len = 5000;
	uint8_t *src = malloc(len), *dst = calloc(1, len), *back = calloc(1, len);
	uint32_t ks = mr_reg(ta, src, len, DPV_ACCESS_REMOTE_READ);
	uint32_t kd = mr_reg(ta, dst, len, DPV_ACCESS_LOCAL_WRITE | DPV_ACCESS_REMOTE_WRITE);
	uint32_t kb = mr_reg(ta, back, len, DPV_ACCESS_LOCAL_WRITE);
	uint64_t wire_a = pa.stats.tx_frames, wire_b = pb.stats.rx_frames;
	struct dpv_swqe w = swqe(DPV_WR_SEND, 1);
	struct dpv_rwqe r = rwqe(2, dst, len, kd);
	struct dpv_cqe c[3];
	struct end a, b;

	(void)state;
	rc_pair(&a, &b, true, NULL, NULL, 7);
	fill(src, len, 8);
	post_recv(b.qp, &r);
	swqe_sge(&w, src, len, ks);
	post_send(a.qp, &w);
	assert_int_equal(poll_n(b.rcq, c, 1), 1);
	assert_int_equal(c[0].byte_len, len);
	assert_int_equal(c[0].src_qp, a.qp->qpn);
	assert_memory_equal(dst, src, len);
	memset(dst, 0, len);
	w.opcode = DPV_WR_RDMA_WRITE;
	w.remote_addr = (uintptr_t)dst;
	w.rkey = kd;
	post_send(a.qp, &w);
	w = swqe(DPV_WR_RDMA_READ, 3);
	w.remote_addr = (uintptr_t)src;
	w.rkey = ks;
	swqe_sge(&w, back, len, kb);
	post_send(b.qp, &w);
	assert_int_equal(poll_n(a.scq, c, 2), 2);
	assert_int_equal(c[1].opcode, DPV_WC_RDMA_WRITE);
	assert_int_equal(poll_n(b.scq, c, 1), 1);
	assert_int_equal(c[0].opcode, DPV_WC_RDMA_READ);
	assert_int_equal(c[0].status, DPV_WC_SUCCESS);
	assert_memory_equal(dst, src, len);
	assert_memory_equal(back, src, len);
	assert_int_equal(pa.stats.tx_frames, wire_a);
	assert_int_equal(pb.stats.rx_frames, wire_b);
	end_close(&a);
	end_close(&b);
	mr_dereg(ta, ks);
	mr_dereg(ta, kd);
	mr_dereg(ta, kb);
	free(src);
	free(dst);
	free(back);
}

/* ---- UD ---- */

static void ud_send_places_the_grh_and_checks_the_qkey(void **state)
{
	uint8_t src[200] = {0}, dst[DPV_UD_GRH_LEN + 200] = {0};
	uint32_t ks = mr_reg(ta, src, sizeof(src), 0);
	uint32_t kd = mr_reg(tb, dst, sizeof(dst), DPV_ACCESS_LOCAL_WRITE);
	struct dpv_swqe w = swqe(DPV_WR_SEND_WITH_IMM, 4);
	struct dpv_rwqe r = rwqe(5, dst, sizeof(dst), kd);
	uint64_t bad_qkey = stats(xb).rx_bad_qkey;
	struct dpv_cqe c;
	struct end a, b;

	(void)state;
	end_open(&a, xa, DPV_QPT_UD, NULL, NULL);
	end_open(&b, xb, DPV_QPT_UD, NULL, NULL);
	ud_up(&a, 0x1111);
	ud_up(&b, 0x2222);
	fill(src, sizeof(src), 4);
	post_recv(b.qp, &r);
	w.imm = 99;
	w.ud_dst_ip = pb.ipv4;
	w.ud_remote_qpn = b.qp->qpn;
	w.ud_remote_qkey = 0x2222;
	swqe_sge(&w, src, sizeof(src), ks);
	post_send(a.qp, &w);
	/* UD completes once sent */
	assert_int_equal(poll_n(a.scq, &c, 1), 1);
	assert_int_equal(c.status, DPV_WC_SUCCESS);
	assert_int_equal(poll_n(b.rcq, &c, 1), 1);
	assert_int_equal(c.status, DPV_WC_SUCCESS);
	assert_int_equal(c.opcode, DPV_WC_RECV);
	assert_int_equal(c.byte_len, DPV_UD_GRH_LEN + sizeof(src));
	assert_int_equal(c.flags, DPV_WC_F_GRH | DPV_WC_F_IMM);
	assert_int_equal(c.imm, 99);
	assert_int_equal(c.src_qp, a.qp->qpn);
	assert_int_equal(c.qp_num, b.qp->qpn);
	for (int i = 0; i < 20; i++)
		assert_int_equal(dst[i], 0);
	assert_int_equal(dst[20], 0x45);
	assert_int_equal(rte_be_to_cpu_32(*(uint32_t *)(dst + 20 + 12)), pa.ipv4);
	assert_int_equal(rte_be_to_cpu_32(*(uint32_t *)(dst + 20 + 16)), pb.ipv4);
	assert_memory_equal(dst + DPV_UD_GRH_LEN, src, sizeof(src));
	/* a wrong Q_Key is dropped and counted; the top bit means "the QP's own" */
	post_recv(b.qp, &r);
	w.ud_remote_qkey = 0x3333;
	post_send(a.qp, &w);
	assert_int_equal(poll_n(a.scq, &c, 1), 1);
	assert_int_equal(cq_left(b.rcq), 0);
	assert_int_equal(stats(xb).rx_bad_qkey, bad_qkey + 1);
	w.ud_remote_qkey = 0x80000000u;
	post_send(a.qp, &w);
	assert_int_equal(poll_n(a.scq, &c, 1), 1);
	assert_int_equal(cq_left(b.rcq), 0);
	assert_int_equal(stats(xb).rx_bad_qkey, bad_qkey + 2);
	/* b's own Q_Key is 0x2222: set a's to it and use the top bit */
	{
		struct dpv_qp_attr at = {.qkey = 0x2222};

		assert_int_equal(dpv_qp_modify(xa, a.qp, &at, DPV_QP_QKEY), 0);
	}
	post_send(a.qp, &w);
	assert_int_equal(poll_n(b.rcq, &c, 1), 1);
	assert_int_equal(c.status, DPV_WC_SUCCESS);
	/* a message above the MTU fails locally and puts the QP in SQE; RTS again works */
	w.num_sge = 0;
	w.length = 0;
	{
		static uint8_t big[2000];
		uint32_t kbig = mr_reg(ta, big, sizeof(big), 0);
		struct dpv_qp_attr at = {.state = DPV_QPS_RTS};

		swqe_sge(&w, big, sizeof(big), kbig);
		post_send(a.qp, &w);
		assert_int_equal(poll_n(a.scq, &c, 1), 1);
		assert_int_equal(poll_n(a.scq, &c, 1), 1);
		assert_int_equal(c.status, DPV_WC_LOC_LEN_ERR);
		assert_int_equal(a.qp->attr.state, DPV_QPS_SQE);
		assert_int_equal(dpv_qp_modify(xa, a.qp, &at, DPV_QP_STATE), 0);
		mr_dereg(ta, kbig);
	}
	end_close(&a);
	end_close(&b);
	mr_dereg(ta, ks);
	mr_dereg(tb, kd);
}

/* ---- SRQ ---- */

#define SRQ_QPS 16
#define SRQ_MSGS 4

static void srq_shared_by_16_qps_reports_each_qp(void **state)
{
	struct dpv_srq_init si = {.pd = PD, .max_wr = 256, .max_sge = 1, .lanes = 2};
	static uint8_t rbuf[SRQ_QPS * SRQ_MSGS][64];
	uint8_t sbuf[SRQ_QPS][64] = {0};
	struct end a[SRQ_QPS], b[SRQ_QPS];
	struct dpv_cqe c[SRQ_QPS * SRQ_MSGS];
	int seen[SRQ_QPS] = {0};
	struct dpv_srq *srq;
	struct dpv_cq *rcq;
	uint32_t kr, ks;

	(void)state;
	assert_int_equal(dpv_cq_create(xb, 1024, &rcq), 0);
	assert_int_equal(dpv_srq_create(xb, &si, &srq), 0);
	kr = mr_reg(tb, rbuf, sizeof(rbuf), DPV_ACCESS_LOCAL_WRITE);
	ks = mr_reg(ta, sbuf, sizeof(sbuf), 0);
	for (int i = 0; i < SRQ_QPS * SRQ_MSGS; i++) {
		struct dpv_rwqe r = rwqe((uint64_t)i, rbuf[i], 64, kr);

		post_srq(srq, (uint32_t)i % 2, &r);
	}
	for (int q = 0; q < SRQ_QPS; q++) {
		rc_pair(&a[q], &b[q], false, srq, rcq, 7);
		assert_null(b[q].qp->rq);
		memset(sbuf[q], q, sizeof(sbuf[q]));
		for (int m = 0; m < SRQ_MSGS; m++) {
			struct dpv_swqe w = swqe(DPV_WR_SEND, (uint64_t)m);

			swqe_sge(&w, sbuf[q], (uint32_t)(10 + q), ks);
			post_send(a[q].qp, &w);
		}
	}
	assert_int_equal(poll_n(rcq, c, SRQ_QPS * SRQ_MSGS), SRQ_QPS * SRQ_MSGS);
	for (int i = 0; i < SRQ_QPS * SRQ_MSGS; i++) {
		int q = -1;

		assert_int_equal(c[i].status, DPV_WC_SUCCESS);
		for (int k = 0; k < SRQ_QPS; k++)
			if (b[k].qp->qpn == c[i].qp_num)
				q = k;
		assert_true(q >= 0);
		assert_int_equal(c[i].src_qp, a[q].qp->qpn);
		assert_int_equal(c[i].byte_len, 10 + q);
		assert_int_equal(rbuf[c[i].wr_id][0], q);
		seen[q]++;
	}
	for (int q = 0; q < SRQ_QPS; q++)
		assert_int_equal(seen[q], SRQ_MSGS);
	assert_int_equal(srq->posted, 0);
	for (int q = 0; q < SRQ_QPS; q++) {
		/* ERR on a QP of an SRQ flushes nothing of the SRQ */
		struct dpv_qp_attr at = {.state = DPV_QPS_ERR};
		struct dpv_rwqe r = rwqe(1000, rbuf[0], 64, kr);

		if (q == 0)
			post_srq(srq, 0, &r);
		assert_int_equal(dpv_qp_modify(xb, b[q].qp, &at, DPV_QP_STATE), 0);
		end_close(&a[q]);
		end_close(&b[q]);
	}
	assert_int_equal(cq_left(rcq), 0);
	assert_int_equal(srq->posted, 1);
	dpv_srq_destroy(xb, srq);
	dpv_cq_destroy(rcq);
	mr_dereg(tb, kr);
	mr_dereg(ta, ks);
}

static int limit_events;

static void on_limit(struct dpv_srq *srq, void *arg)
{
	(void)srq;
	(void)arg;
	limit_events++;
}

static void srq_limit_fires_once_below_the_limit(void **state)
{
	struct dpv_srq_init si = {.pd = PD, .max_wr = 16, .max_sge = 1, .lanes = 1, .limit = 4};
	uint8_t rbuf[8][32] = {0}, sbuf[8] = {0};
	uint32_t kr = mr_reg(tb, rbuf, sizeof(rbuf), DPV_ACCESS_LOCAL_WRITE);
	uint32_t ks = mr_reg(ta, sbuf, sizeof(sbuf), 0);
	struct dpv_cqe c[8];
	struct dpv_srq *srq;
	struct end a, b;

	(void)state;
	assert_int_equal(dpv_srq_create(xb, &si, &srq), 0);
	srq->limit_event = on_limit;
	limit_events = 0;
	for (int i = 0; i < 6; i++) {
		struct dpv_rwqe r = rwqe((uint64_t)i, rbuf[i], 32, kr);

		post_srq(srq, 0, &r);
	}
	rc_pair(&a, &b, false, srq, NULL, 7);
	for (int i = 0; i < 4; i++) {
		struct dpv_swqe w = swqe(DPV_WR_SEND, (uint64_t)i);

		swqe_sge(&w, sbuf, sizeof(sbuf), ks);
		post_send(a.qp, &w);
		assert_int_equal(poll_n(b.rcq, c, 1), 1);
		/* 6 posted: the third message leaves 3 < 4 */
		assert_int_equal(limit_events, i >= 2 ? 1 : 0);
	}
	assert_int_equal(srq->limit, 0);
	assert_int_equal(srq->posted, 2);
	end_close(&a);
	end_close(&b);
	dpv_srq_destroy(xb, srq);
	mr_dereg(tb, kr);
	mr_dereg(ta, ks);
}

/* ---- RNR ---- */

static void rnr_nak_then_success_when_a_receive_comes(void **state)
{
	uint8_t src[100] = {0}, dst[100] = {0};
	uint32_t ks = mr_reg(ta, src, sizeof(src), 0);
	uint32_t kd = mr_reg(tb, dst, sizeof(dst), DPV_ACCESS_LOCAL_WRITE);
	struct dpv_swqe w = swqe(DPV_WR_SEND, 1);
	struct dpv_rwqe r = rwqe(2, dst, sizeof(dst), kd);
	struct dpv_xport_stats sa = stats(xa), sb = stats(xb);
	struct dpv_cqe c;
	struct end a, b;

	(void)state;
	rc_pair(&a, &b, false, NULL, NULL, 7);
	fill(src, sizeof(src), 6);
	swqe_sge(&w, src, sizeof(src), ks);
	post_send(a.qp, &w);
	w.wr_id = 3;
	post_send(a.qp, &w);
	pump(200);
	assert_int_equal(cq_left(a.scq), 0);
	assert_true(stats(xb).qps.rnr_naks_sent > sb.qps.rnr_naks_sent);
	assert_true(stats(xa).qps.retrans_rnr > sa.qps.retrans_rnr);
	post_recv(b.qp, &r);
	r.wr_id = 4;
	post_recv(b.qp, &r);
	assert_int_equal(poll_n(b.rcq, &c, 1), 1);
	assert_int_equal(c.status, DPV_WC_SUCCESS);
	assert_int_equal(c.wr_id, 2);
	assert_int_equal(poll_n(b.rcq, &c, 1), 1);
	assert_int_equal(c.wr_id, 4);
	assert_memory_equal(dst, src, sizeof(src));
	assert_int_equal(poll_n(a.scq, &c, 1), 1);
	assert_int_equal(c.wr_id, 1);
	assert_int_equal(c.status, DPV_WC_SUCCESS);
	assert_int_equal(poll_n(a.scq, &c, 1), 1);
	assert_int_equal(c.wr_id, 3);
	end_close(&a);
	end_close(&b);
	mr_dereg(ta, ks);
	mr_dereg(tb, kd);
}

static void rnr_retry_zero_fails_with_rnr_retry_exc_err(void **state)
{
	uint8_t src[100] = {0};
	uint32_t ks = mr_reg(ta, src, sizeof(src), 0);
	struct dpv_swqe w = swqe(DPV_WR_SEND, 1);
	struct dpv_cqe c[2];
	struct end a, b;

	(void)state;
	rc_pair(&a, &b, false, NULL, NULL, 0);
	swqe_sge(&w, src, sizeof(src), ks);
	post_send(a.qp, &w);
	w.wr_id = 2;
	post_send(a.qp, &w);
	assert_int_equal(poll_n(a.scq, c, 2), 2);
	assert_int_equal(c[0].wr_id, 1);
	assert_int_equal(c[0].status, DPV_WC_RNR_RETRY_EXC_ERR);
	assert_int_equal(c[1].wr_id, 2);
	assert_int_equal(c[1].status, DPV_WC_WR_FLUSH_ERR);
	assert_int_equal(a.qp->attr.state, DPV_QPS_ERR);
	/* nothing was consumed at the responder, which stays up */
	assert_int_equal(b.qp->attr.state, DPV_QPS_RTS);
	end_close(&a);
	end_close(&b);
	mr_dereg(ta, ks);
}

/* ---- errors ---- */

static void bad_rkey_gives_rem_access_err_and_ends_the_responder(void **state)
{
	uint8_t src[100] = {0}, dst[100] = {0};
	uint32_t ks = mr_reg(ta, src, sizeof(src), 0);
	uint32_t kd = mr_reg(tb, dst, sizeof(dst), DPV_ACCESS_LOCAL_WRITE | DPV_ACCESS_REMOTE_WRITE);
	struct dpv_swqe w = swqe(DPV_WR_RDMA_WRITE, 1);
	struct dpv_rwqe r = rwqe(9, dst, sizeof(dst), kd);
	uint64_t errs = stats(xb).access_errors;
	struct dpv_cqe c[2];
	struct end a, b;

	(void)state;
	rc_pair(&a, &b, false, NULL, NULL, 7);
	post_recv(b.qp, &r);
	swqe_sge(&w, src, sizeof(src), ks);
	w.remote_addr = (uintptr_t)dst + 1; /* one byte past the region at its end */
	w.rkey = kd;
	post_send(a.qp, &w);
	w.wr_id = 2;
	post_send(a.qp, &w);
	assert_int_equal(poll_n(a.scq, c, 2), 2);
	assert_int_equal(c[0].status, DPV_WC_REM_ACCESS_ERR);
	assert_int_equal(c[1].status, DPV_WC_WR_FLUSH_ERR);
	assert_int_equal(stats(xb).access_errors, errs + 1);
	assert_int_equal(b.qp->attr.state, DPV_QPS_ERR);
	assert_int_equal(b.fatal, 1);
	/* the responder's posted receive is flushed */
	assert_int_equal(poll_n(b.rcq, c, 1), 1);
	assert_int_equal(c[0].wr_id, 9);
	assert_int_equal(c[0].status, DPV_WC_WR_FLUSH_ERR);
	end_close(&a);
	end_close(&b);

	/* a READ on a region without remote read, and a key of another PD */
	rc_pair(&a, &b, false, NULL, NULL, 7);
	w = swqe(DPV_WR_RDMA_READ, 3);
	w.remote_addr = (uintptr_t)dst;
	w.rkey = kd;
	swqe_sge(&w, src, sizeof(src), mr_reg(ta, src, sizeof(src), DPV_ACCESS_LOCAL_WRITE));
	post_send(a.qp, &w);
	assert_int_equal(poll_n(a.scq, c, 1), 1);
	assert_int_equal(c[0].status, DPV_WC_REM_ACCESS_ERR);
	end_close(&a);
	end_close(&b);
	rc_pair(&a, &b, false, NULL, NULL, 7);
	w = swqe(DPV_WR_RDMA_WRITE, 4);
	w.remote_addr = (uintptr_t)dst;
	w.rkey = mr_reg_pd(tb, dst, sizeof(dst), DPV_ACCESS_REMOTE_WRITE, PD + 1);
	swqe_sge(&w, src, sizeof(src), ks);
	post_send(a.qp, &w);
	assert_int_equal(poll_n(a.scq, c, 1), 1);
	assert_int_equal(c[0].status, DPV_WC_REM_ACCESS_ERR);
	end_close(&a);
	end_close(&b);
	mr_dereg(ta, ks);
	mr_dereg(tb, kd);
}

static void bad_lkey_on_a_receive_gives_loc_prot_err(void **state)
{
	uint8_t src[100] = {0}, dst[100] = {0};
	uint32_t ks = mr_reg(ta, src, sizeof(src), 0);
	uint32_t kd = mr_reg(tb, dst, sizeof(dst), 0); /* no LOCAL_WRITE */
	struct dpv_swqe w = swqe(DPV_WR_SEND, 1);
	struct dpv_rwqe r = rwqe(2, dst, sizeof(dst), kd);
	struct dpv_cqe c;
	struct end a, b;

	(void)state;
	rc_pair(&a, &b, false, NULL, NULL, 7);
	post_recv(b.qp, &r);
	swqe_sge(&w, src, sizeof(src), ks);
	post_send(a.qp, &w);
	assert_int_equal(poll_n(b.rcq, &c, 1), 1);
	assert_int_equal(c.wr_id, 2);
	assert_int_equal(c.status, DPV_WC_LOC_PROT_ERR);
	assert_int_equal(b.qp->attr.state, DPV_QPS_ERR);
	assert_int_equal(poll_n(a.scq, &c, 1), 1);
	assert_int_equal(c.status, DPV_WC_REM_OP_ERR);
	end_close(&a);
	end_close(&b);

	/* and a send whose own lkey is bad fails locally, in order, then flushes */
	rc_pair(&a, &b, false, NULL, NULL, 7);
	{
		struct dpv_cqe cc[3];

		r = rwqe(5, dst, sizeof(dst), mr_reg(tb, dst, sizeof(dst), DPV_ACCESS_LOCAL_WRITE));
		post_recv(b.qp, &r);
		post_send(a.qp, &w);
		w.wr_id = 7;
		w.sge[0].lkey = ks + 1;
		post_send(a.qp, &w);
		w.wr_id = 8;
		w.sge[0].lkey = ks;
		post_send(a.qp, &w);
		assert_int_equal(poll_n(a.scq, cc, 3), 3);
		assert_int_equal(cc[0].status, DPV_WC_SUCCESS);
		assert_int_equal(cc[1].wr_id, 7);
		assert_int_equal(cc[1].status, DPV_WC_LOC_PROT_ERR);
		assert_int_equal(cc[2].status, DPV_WC_WR_FLUSH_ERR);
	}
	end_close(&a);
	end_close(&b);
	mr_dereg(ta, ks);
	mr_dereg(tb, kd);
}

static void too_small_receive_gives_loc_len_err_and_rem_inv_req_err(void **state)
{
	uint8_t src[3000] = {0}, dst[2000] = {0};
	uint32_t ks = mr_reg(ta, src, sizeof(src), 0);
	uint32_t kd = mr_reg(tb, dst, sizeof(dst), DPV_ACCESS_LOCAL_WRITE);
	struct dpv_swqe w = swqe(DPV_WR_SEND, 1);
	struct dpv_rwqe r = rwqe(2, dst, sizeof(dst), kd);
	struct dpv_cqe c;
	struct end a, b;

	(void)state;
	rc_pair(&a, &b, false, NULL, NULL, 7);
	post_recv(b.qp, &r);
	swqe_sge(&w, src, sizeof(src), ks);
	post_send(a.qp, &w);
	assert_int_equal(poll_n(b.rcq, &c, 1), 1);
	assert_int_equal(c.status, DPV_WC_LOC_LEN_ERR);
	assert_int_equal(poll_n(a.scq, &c, 1), 1);
	assert_int_equal(c.status, DPV_WC_REM_INV_REQ_ERR);
	assert_int_equal(a.qp->attr.state, DPV_QPS_ERR);
	assert_int_equal(b.qp->attr.state, DPV_QPS_ERR);
	end_close(&a);
	end_close(&b);
	mr_dereg(ta, ks);
	mr_dereg(tb, kd);
}

static void err_state_flushes_posted_and_later_work(void **state)
{
	uint8_t buf[64] = {0};
	uint32_t k = mr_reg(ta, buf, sizeof(buf), DPV_ACCESS_LOCAL_WRITE);
	struct dpv_qp_attr at = {.state = DPV_QPS_ERR};
	struct dpv_swqe w = swqe(DPV_WR_SEND, 1);
	struct dpv_rwqe r = rwqe(2, buf, sizeof(buf), k);
	struct dpv_cqe c[4];
	struct end a;

	(void)state;
	end_open(&a, xa, DPV_QPT_RC, NULL, NULL);
	post_recv(a.qp, &r);
	post_recv(a.qp, &r);
	swqe_sge(&w, buf, sizeof(buf), k);
	post_send(a.qp, &w); /* in RESET: not processed */
	pump(2);
	assert_int_equal(cq_left(a.scq), 0);
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, DPV_QP_STATE), 0);
	assert_int_equal(dpv_ring_dequeue_burst(a.scq->ring, c, 4), 1);
	assert_int_equal(c[0].status, DPV_WC_WR_FLUSH_ERR);
	assert_int_equal(c[0].wr_id, 1);
	assert_int_equal(dpv_ring_dequeue_burst(a.rcq->ring, c, 4), 2);
	assert_int_equal(c[1].status, DPV_WC_WR_FLUSH_ERR);
	assert_int_equal(c[1].opcode, DPV_WC_RECV);
	/* posted in ERR: flushed by the device at its next pass */
	post_send(a.qp, &w);
	post_recv(a.qp, &r);
	assert_int_equal(poll_n(a.scq, c, 1), 1);
	assert_int_equal(c[0].status, DPV_WC_WR_FLUSH_ERR);
	assert_int_equal(poll_n(a.rcq, c, 1), 1);
	assert_int_equal(c[0].status, DPV_WC_WR_FLUSH_ERR);
	/* ERR -> RESET empties without completions, and the QP can come up again */
	at.state = DPV_QPS_RESET;
	post_send(a.qp, &w);
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, DPV_QP_STATE), 0);
	assert_int_equal(dpv_ring_used(a.qp->sq), 0);
	assert_int_equal(cq_left(a.scq), 0);
	end_close(&a);
	mr_dereg(ta, k);
}

static void state_machine_refuses_what_ibta_refuses(void **state)
{
	const uint32_t init_rc = DPV_QP_STATE | DPV_QP_PKEY_INDEX | DPV_QP_PORT | DPV_QP_ACCESS_FLAGS;
	const uint32_t rtr_rc = DPV_QP_STATE | DPV_QP_AV | DPV_QP_PATH_MTU | DPV_QP_DEST_QPN |
				DPV_QP_RQ_PSN | DPV_QP_MAX_DEST_RD_ATOMIC | DPV_QP_MIN_RNR_TIMER;
	const uint32_t rts_rc = DPV_QP_STATE | DPV_QP_SQ_PSN | DPV_QP_TIMEOUT | DPV_QP_RETRY_CNT |
				DPV_QP_RNR_RETRY | DPV_QP_MAX_QP_RD_ATOMIC;
	struct dpv_qp_attr at;
	struct end a, u;

	(void)state;
	memset(&at, 0, sizeof(at));
	end_open(&a, xa, DPV_QPT_RC, NULL, NULL);
	end_open(&u, xa, DPV_QPT_UD, NULL, NULL);
	at.state = DPV_QPS_RTR;
	at.path_mtu = MTU_1024;
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, rtr_rc), EINVAL);  /* RESET -> RTR */
	at.state = DPV_QPS_INIT;
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, init_rc & ~DPV_QP_ACCESS_FLAGS), EINVAL);
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, init_rc | DPV_QP_QKEY), EINVAL);
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, init_rc | (1u << 30)), EINVAL);
	at.pkey_index = 1;
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, init_rc), EINVAL);
	at.pkey_index = 0;
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, init_rc), 0);
	assert_int_equal(a.qp->attr.state, DPV_QPS_INIT);
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, DPV_QP_ACCESS_FLAGS), 0); /* INIT->INIT */
	at.state = DPV_QPS_RTS;
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, rts_rc), EINVAL);  /* INIT -> RTS */
	at.state = DPV_QPS_RTR;
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, rtr_rc & ~DPV_QP_PATH_MTU), EINVAL);
	at.path_mtu = 6;
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, rtr_rc), EINVAL);
	at.path_mtu = MTU_1024;
	at.min_rnr_timer = 32;
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, rtr_rc), EINVAL);
	at.min_rnr_timer = 12;
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, rtr_rc), 0);
	at.state = DPV_QPS_RTS;
	at.rnr_retry = 8;
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, rts_rc), EINVAL);
	at.rnr_retry = 7;
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, rts_rc & ~DPV_QP_SQ_PSN), EINVAL);
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, rts_rc), 0);
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, DPV_QP_MIN_RNR_TIMER), 0); /* RTS->RTS */
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, DPV_QP_PATH_MTU), EINVAL);
	at.state = DPV_QPS_SQE; /* RC has no SQE */
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, DPV_QP_STATE), EINVAL);
	at.state = DPV_QPS_INIT;
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, DPV_QP_STATE), EINVAL);
	at.state = DPV_QPS_SQD;
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, DPV_QP_STATE), 0);
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, DPV_QP_STATE | DPV_QP_RNR_RETRY), 0);
	at.state = DPV_QPS_RTS;
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, DPV_QP_STATE), 0);
	at.state = 7;
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, DPV_QP_STATE), EINVAL);
	at.state = DPV_QPS_ERR;
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, DPV_QP_STATE), 0);
	at.state = DPV_QPS_RTS;
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, DPV_QP_STATE), EINVAL);  /* ERR -> RTS */
	at.state = DPV_QPS_RESET;
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, DPV_QP_STATE), 0);
	at.state = DPV_QPS_INIT;
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, init_rc), 0);

	/* UD: a Q_Key, no path */
	at.state = DPV_QPS_INIT;
	assert_int_equal(dpv_qp_modify(xa, u.qp, &at, init_rc), EINVAL);
	assert_int_equal(dpv_qp_modify(xa, u.qp, &at, DPV_QP_STATE | DPV_QP_PKEY_INDEX |
				       DPV_QP_PORT | DPV_QP_QKEY), 0);
	at.state = DPV_QPS_RTR;
	assert_int_equal(dpv_qp_modify(xa, u.qp, &at, DPV_QP_STATE | DPV_QP_AV), EINVAL);
	assert_int_equal(dpv_qp_modify(xa, u.qp, &at, DPV_QP_STATE), 0);
	at.state = DPV_QPS_RTS;
	assert_int_equal(dpv_qp_modify(xa, u.qp, &at, DPV_QP_STATE), EINVAL); /* no SQ_PSN */
	assert_int_equal(dpv_qp_modify(xa, u.qp, &at, DPV_QP_STATE | DPV_QP_SQ_PSN), 0);

	{
		/* creation limits */
		/* IBV_QPT_RAW_PACKET: not a type of the transport */
		struct dpv_qp_init bad = {.type = 8, .send_cq = a.scq, .recv_cq = a.rcq};
		struct dpv_qp *qp;

		assert_int_equal(dpv_qp_create(xa, &bad, &qp), EINVAL);
		bad.type = DPV_QPT_RC;
		bad.max_send_sge = DPV_MAX_SGE + 1;
		assert_int_equal(dpv_qp_create(xa, &bad, &qp), EINVAL);
		bad.max_send_sge = 1;
		bad.max_send_wr = DPV_MAX_QP_WR + 1;
		assert_int_equal(dpv_qp_create(xa, &bad, &qp), EINVAL);
		bad.max_send_wr = 0;
		assert_int_equal(dpv_qp_create(xa, &bad, &qp), 0);
		assert_null(qp->sq);
		assert_ptr_equal(dpv_xport_qp(xa, qp->qpn), qp);
		dpv_qp_destroy(xa, qp);
		assert_null(dpv_xport_qp(xa, 0));
		assert_null(dpv_xport_qp(xa, 1u << 23));
	}
	end_close(&a);
	end_close(&u);
}

static void qp_numbers_run_out_with_enospc(void **state)
{
	static struct dpv_qp *qps[DPV_MAX_QP];
	struct dpv_qp_init init = {.type = DPV_QPT_UD, .pd = PD, .max_send_wr = 1,
				   .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1};
	struct dpv_cq *cq;
	struct dpv_qp *qp;
	static bool seen[DPV_MAX_QP];
	uint32_t n = 0, freed, steps_of_one = 0;

	(void)state;
	assert_int_equal(dpv_cq_create(xb, 1, &cq), 0);
	init.send_cq = init.recv_cq = cq;
	while (dpv_qp_create(xb, &init, &qps[n]) == 0) {
		assert_true(qps[n]->qpn >= 2 && qps[n]->qpn < DPV_MAX_QP);
		assert_false(seen[qps[n]->qpn]);
		seen[qps[n]->qpn] = true;
		if (n > 0 && qps[n]->qpn == qps[n - 1]->qpn + 1)
			steps_of_one++;
		n++;
	}
	/* numbers 0 and 1 are reserved; xb holds no other QP now */
	assert_int_equal(n, DPV_MAX_QP - 2);
	/* in a random order, not counted up */
	assert_true(steps_of_one < n / 64);
	assert_int_equal(dpv_qp_create(xb, &init, &qp), ENOSPC);
	/* a freed number comes back, and only when no other is free */
	freed = qps[100]->qpn;
	dpv_qp_destroy(xb, qps[100]);
	assert_int_equal(dpv_qp_create(xb, &init, &qps[100]), 0);
	assert_int_equal(qps[100]->qpn, freed);
	for (uint32_t i = 0; i < n; i++)
		dpv_qp_destroy(xb, qps[i]);
	assert_int_equal(dpv_qp_create(xb, &init, &qp), 0);
	assert_int_not_equal(qp->qpn, freed);
	dpv_qp_destroy(xb, qp);
	assert_int_equal(dpv_cq_create(xb, 0, &cq), EINVAL);
	assert_int_equal(dpv_cq_create(xb, DPV_MAX_CQE + 1, &cq), EINVAL);
	dpv_cq_destroy(init.send_cq);
}

static void sqd_drains_then_rts_resumes(void **state)
{
	uint8_t src[64] = {0}, dst[64] = {0};
	uint32_t ks = mr_reg(ta, src, sizeof(src), 0);
	uint32_t kd = mr_reg(tb, dst, sizeof(dst), DPV_ACCESS_LOCAL_WRITE);
	struct dpv_qp_attr at = {.state = DPV_QPS_SQD};
	struct dpv_swqe w = swqe(DPV_WR_SEND, 1);
	struct dpv_rwqe r = rwqe(2, dst, sizeof(dst), kd);
	struct dpv_cqe c;
	struct end a, b;

	(void)state;
	rc_pair(&a, &b, false, NULL, NULL, 7);
	post_recv(b.qp, &r);
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, DPV_QP_STATE), 0);
	swqe_sge(&w, src, sizeof(src), ks);
	post_send(a.qp, &w);
	assert_int_equal(cq_left(b.rcq), 0);
	at.state = DPV_QPS_RTS;
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, DPV_QP_STATE), 0);
	assert_int_equal(poll_n(b.rcq, &c, 1), 1);
	assert_int_equal(poll_n(a.scq, &c, 1), 1);
	assert_int_equal(c.status, DPV_WC_SUCCESS);
	end_close(&a);
	end_close(&b);
	mr_dereg(ta, ks);
	mr_dereg(tb, kd);
}

/* ---- many messages both ways ---- */

#define MIX_WQES 400
#define MIX_MAX 9000

struct mix_side {
	struct end *e;
	uint8_t *local, *remote;   /* local: sources and READ targets; remote: the peer's */
	uint32_t kl, kr;
	uint8_t *recv;
	uint32_t krecv;
	int sends, posted, done, got_recv;
};

static uint32_t mix_draw(uint32_t *seed, uint32_t *len, uint8_t *op)
{
	static const uint8_t ops[] = {DPV_WR_SEND, DPV_WR_RDMA_WRITE, DPV_WR_RDMA_WRITE_WITH_IMM,
				      DPV_WR_RDMA_READ};
	uint32_t r;

	*seed = *seed * 1103515245u + 12345u;
	r = *seed >> 8;
	*len = r % MIX_MAX;
	*op = ops[(r >> 14) % 4];
	return r;
}

/* The next send completion of a side: successful, in posting order. */
static void mix_complete(struct mix_side *m)
{
	struct dpv_cqe c;

	assert_int_equal(poll_n(m->e->scq, &c, 1), 1);
	assert_int_equal(c.status, DPV_WC_SUCCESS);
	assert_true((int)c.wr_id >= m->done);
	m->done = (int)c.wr_id + 1;
}

static void mix_received(struct mix_side *rx, struct mix_side *tx)
{
	struct dpv_cqe c;

	assert_int_equal(poll_n(rx->e->rcq, &c, 1), 1);
	assert_int_equal(c.status, DPV_WC_SUCCESS);
	assert_int_equal(c.qp_num, rx->e->qp->qpn);
	tx->got_recv++;
}

/* ---- a lossy link: the pump's hooks drop, duplicate and reorder frames ---- */

struct lossy {
	struct dpv_xport *x;
	uint32_t seed;
	struct rte_mbuf *held;   /* a frame held back, delivered after the next one */
	uint64_t dropped, duplicated, reordered;
};

static struct lossy lossy_a, lossy_b;
static uint32_t loss_ppm, dup_ppm, reorder_ppm;

static uint32_t lossy_draw(struct lossy *l)
{
	l->seed = l->seed * 1103515245u + 12345u;
	return (l->seed >> 4) % 1000000u;
}

static void lossy_deliver(struct lossy *l, struct rte_mbuf *m)
{
	struct rte_mbuf *c = rte_pktmbuf_copy(m, m->pool, 0, UINT32_MAX);

	assert_non_null(c);
	dpv_xport_rx(l->x, &c, 1);
}

static bool lossy(struct lossy *l, struct rte_mbuf *m)
{
	if (lossy_draw(l) < loss_ppm) {
		l->dropped++;
		return false;
	}
	if (lossy_draw(l) < dup_ppm) {
		l->duplicated++;
		lossy_deliver(l, m);
	}
	if (l->held != NULL) {
		lossy_deliver(l, m);
		dpv_xport_rx(l->x, &l->held, 1);
		l->held = NULL;
		return false;
	}
	if (lossy_draw(l) < reorder_ppm) {
		l->reordered++;
		l->held = rte_pktmbuf_copy(m, m->pool, 0, UINT32_MAX);
		return l->held == NULL;
	}
	return true;
}

static bool lossy_a_hook(struct rte_mbuf *m)
{
	return lossy(&lossy_a, m);
}

static bool lossy_b_hook(struct rte_mbuf *m)
{
	return lossy(&lossy_b, m);
}

/* Both directions lose @p loss, duplicate @p dup and reorder @p reorder parts per
 * million of their frames; 0, 0, 0: the hooks go. */
static void lossy_link(uint32_t loss, uint32_t dup, uint32_t reorder, uint32_t seed)
{
	for (int i = 0; i < 2; i++) {
		struct lossy *l = i == 0 ? &lossy_a : &lossy_b;

		if (l->held != NULL)
			rte_pktmbuf_free(l->held);
		memset(l, 0, sizeof(*l));
		l->x = i == 0 ? xa : xb;
		l->seed = seed + (uint32_t)i;
	}
	loss_ppm = loss;
	dup_ppm = dup;
	reorder_ppm = reorder;
	a_rx_hook = loss || dup || reorder ? lossy_a_hook : NULL;
	b_rx_hook = loss || dup || reorder ? lossy_b_hook : NULL;
}

static unsigned int mbufs_free(void)
{
	return rte_mempool_avail_count(pa.pool) + rte_mempool_avail_count(pb.pool);
}

/* Random SENDs, WRITEs, WRITE_WITH_IMMs and READs from both ends at once, unsignaled
 * ones among them, over the link as it is: every completion in order, every byte
 * where it belongs. */
static void mixed_stream(uint32_t seed0)
{
	uint32_t seed = seed0;
	const size_t area = (size_t)MIX_WQES * MIX_MAX;
	struct end a, b;
	struct mix_side sd[2] = {0};

	rc_pair(&a, &b, false, NULL, NULL, 7);
	sd[0].e = &a;
	sd[1].e = &b;
	for (int i = 0; i < 2; i++) {
		struct dpv_mr_table *t = i == 0 ? ta : tb;

		sd[i].local = malloc(area);
		sd[i].recv = calloc(1, area);
		fill(sd[i].local, area, (uint32_t)i + 1);
		sd[i].kl = mr_reg(t, sd[i].local, area, ACCESS_ALL);
		sd[i].krecv = mr_reg(t, sd[i].recv, area, ACCESS_ALL);
	}
	for (int i = 0; i < 2; i++) {
		sd[i].remote = sd[1 - i].recv;
		sd[i].kr = sd[1 - i].krecv;
	}
	for (int k = 0; k < MIX_WQES; k++) {
		for (int side = 0; side < 2; side++) {
			struct mix_side *m = &sd[side], *peer = &sd[1 - side];
			struct dpv_swqe w;
			uint32_t r, len;
			uint8_t op;

			r = mix_draw(&seed, &len, &op);
			w = swqe(op, (uint64_t)k);
			/* the last one signaled: its completion ends the wait for all */
			if ((r & 3) == 0 && op != DPV_WR_RDMA_READ && k != MIX_WQES - 1)
				w.flags = 0;
			w.imm = (uint32_t)k;
			/* each WQE has its own slice on both sides */
			w.remote_addr = (uintptr_t)(m->remote + (size_t)k * MIX_MAX);
			w.rkey = m->kr;
			if (op == DPV_WR_RDMA_READ) {
				/* read the peer's pattern into our receive area (where the
				 * peer's WQE k, if it writes, puts the same bytes) */
				w.remote_addr = (uintptr_t)(peer->local + (size_t)k * MIX_MAX);
				w.rkey = peer->kl;
				swqe_sge(&w, m->recv + (size_t)k * MIX_MAX, len, m->krecv);
			} else {
				swqe_sge(&w, m->local + (size_t)k * MIX_MAX, len, m->kl);
			}
			if (op == DPV_WR_SEND || op == DPV_WR_RDMA_WRITE_WITH_IMM) {
				struct dpv_rwqe rw = rwqe((uint64_t)k,
							  peer->recv + (size_t)k * MIX_MAX,
							  MIX_MAX, peer->krecv);

				post_recv(peer->e->qp, &rw);
				m->sends++;
			}
			post_send(m->e->qp, &w);
			m->posted++;
			/* keep the rings from filling: take completions as they come */
			while (m->posted - m->done >= 48)
				mix_complete(m);
			while (dpv_ring_used(peer->e->qp->rq) > 32)
				mix_received(peer, m);
		}
	}
	for (int side = 0; side < 2; side++) {
		while (sd[side].done < sd[side].posted)
			mix_complete(&sd[side]);
		while (sd[side].got_recv < sd[side].sends)
			mix_received(&sd[1 - side], &sd[side]);
	}
	/* every slice on both sides: what was sent, written or read */
	seed = seed0;
	for (int k = 0; k < MIX_WQES; k++) {
		for (int side = 0; side < 2; side++) {
			struct mix_side *m = &sd[side], *peer = &sd[1 - side];
			uint32_t len;
			uint8_t op;

			mix_draw(&seed, &len, &op);
			if (op == DPV_WR_RDMA_READ)
				assert_memory_equal(m->recv + (size_t)k * MIX_MAX,
						    peer->local + (size_t)k * MIX_MAX, len);
			else
				assert_memory_equal(peer->recv + (size_t)k * MIX_MAX,
						    m->local + (size_t)k * MIX_MAX, len);
		}
	}
	end_close(&a);
	end_close(&b);
	for (int i = 0; i < 2; i++) {
		mr_dereg(i == 0 ? ta : tb, sd[i].kl);
		mr_dereg(i == 0 ? ta : tb, sd[i].krecv);
		free(sd[i].local);
		free(sd[i].recv);
	}
}

static void mixed_stream_both_ways_completes_in_order(void **state)
{
	uint64_t ooo = stats(xa).qps.out_of_seq + stats(xb).qps.out_of_seq;
	uint64_t re = stats(xa).qps.retrans_packets + stats(xb).qps.retrans_packets -
		      (stats(xa).qps.retrans_probe + stats(xb).qps.retrans_probe);

	(void)state;
	mixed_stream(99);
	/* a lossless link: no PSN gap anywhere, nothing sent twice but a tail loss probe
	 * when the pump itself stalled for a while */
	assert_int_equal(stats(xa).qps.out_of_seq + stats(xb).qps.out_of_seq, ooo);
	assert_int_equal(stats(xa).qps.retrans_packets + stats(xb).qps.retrans_packets -
				 (stats(xa).qps.retrans_probe + stats(xb).qps.retrans_probe),
			 re);
}

/* The same stream where 5 % of the frames are lost both ways, 1 % duplicated and 2 %
 * reordered: everything arrives once and in order, and the counters show how. */
static void mixed_stream_survives_loss_duplication_and_reordering(void **state)
{
	struct dpv_xport_stats sa = stats(xa), sb = stats(xb), za, zb;
	unsigned int free0 = mbufs_free();
	uint64_t dropped, duplicated, reordered;

	(void)state;
	rc_timeout = 10;
	lossy_link(50000, 10000, 20000, 5);
	mixed_stream(7);
	dropped = lossy_a.dropped + lossy_b.dropped;
	duplicated = lossy_a.duplicated + lossy_b.duplicated;
	reordered = lossy_a.reordered + lossy_b.reordered;
	lossy_link(0, 0, 0, 0);
	rc_timeout = 14;
	za = stats(xa);
	zb = stats(xb);
	assert_true(dropped > 100 && duplicated > 10 && reordered > 10);
	/* recovered by every means: sequence NAKs, timeouts, READs asked again */
	assert_true(za.qps.retrans_seq_nak - sa.qps.retrans_seq_nak > 0);
	assert_true(zb.qps.retrans_seq_nak - sb.qps.retrans_seq_nak > 0);
	assert_true(za.qps.retrans_timeout + zb.qps.retrans_timeout >
		    sa.qps.retrans_timeout + sb.qps.retrans_timeout);
	assert_true(za.qps.retrans_read + zb.qps.retrans_read >
		    sa.qps.retrans_read + sb.qps.retrans_read);
	assert_true(za.qps.dup_requests + zb.qps.dup_requests >
		    sa.qps.dup_requests + sb.qps.dup_requests);
	assert_int_equal(za.qps.retry_exceeded + zb.qps.retry_exceeded,
			 sa.qps.retry_exceeded + sb.qps.retry_exceeded);
	/* no mbuf kept anywhere */
	pump(20);
	assert_int_equal(mbufs_free(), free0);
}

/* ---- go-back-N and duplicates ---- */

static int hook_count, hook_drop_at;
static struct rte_mbuf *hook_saved;
static uint8_t hook_dup_opcode;

static bool drop_one(struct rte_mbuf *m)
{
	(void)m;
	return hook_count++ != hook_drop_at;
}

static bool keep_a_copy(struct rte_mbuf *m)
{
	struct dpv_wire_pkt p;

	if (hook_saved == NULL &&
	    dpv_wire_parse(rte_pktmbuf_mtod(m, void *), rte_pktmbuf_data_len(m), &p) == 0 &&
	    p.opcode == hook_dup_opcode)
		hook_saved = rte_pktmbuf_copy(m, pb.pool, 0, UINT32_MAX);
	return true;
}

static void lost_packet_is_resent_after_a_sequence_nak(void **state)
{
	const uint32_t len = 10 * 1024;
	uint8_t *src = malloc(len), *dst = calloc(1, len);
	uint32_t ks = mr_reg(ta, src, len, 0);
	uint32_t kd = mr_reg(tb, dst, len, DPV_ACCESS_LOCAL_WRITE);
	struct dpv_swqe w = swqe(DPV_WR_SEND, 1);
	struct dpv_rwqe r = rwqe(2, dst, len, kd);
	struct dpv_xport_stats sa = stats(xa), sb = stats(xb);
	struct dpv_cqe c;
	struct end a, b;

	(void)state;
	rc_pair(&a, &b, false, NULL, NULL, 7);
	fill(src, len, 31);
	post_recv(b.qp, &r);
	swqe_sge(&w, src, len, ks);
	post_send(a.qp, &w);
	hook_count = 0;
	hook_drop_at = 3;
	b_rx_hook = drop_one;
	assert_int_equal(poll_n(b.rcq, &c, 1), 1);
	b_rx_hook = NULL;
	assert_int_equal(c.status, DPV_WC_SUCCESS);
	assert_int_equal(c.byte_len, len);
	assert_memory_equal(dst, src, len);
	assert_int_equal(poll_n(a.scq, &c, 1), 1);
	assert_int_equal(c.status, DPV_WC_SUCCESS);
	/* one NAK for the gap, however many packets arrived behind it */
	assert_int_equal(stats(xb).qps.naks_sent - sb.qps.naks_sent, 1);
	assert_true(stats(xb).qps.out_of_seq - sb.qps.out_of_seq >= 1);
	assert_int_equal(stats(xa).qps.naks_received - sa.qps.naks_received, 1);
	/* 10 packets, then the resend from the lost one */
	assert_int_equal(stats(xa).tx_packets - sa.tx_packets -
				 (stats(xa).qps.retrans_probe - sa.qps.retrans_probe),
			 10 + 7);
	end_close(&a);
	end_close(&b);
	mr_dereg(ta, ks);
	mr_dereg(tb, kd);
	free(src);
	free(dst);
}

/* ---- the local ACK timer ---- */

/* Per receiving device: drop the frames numbered nth .. nth + count - 1 (from 0) among
 * those of one opcode, or every one of that opcode until a time. */
struct dropper {
	uint8_t opcode;
	bool naks_only;  /* of ACK-opcode frames, only sequence error NAKs */
	int nth, count, seen, done;
	uint64_t until;  /* TSC; 0: by number */
};

static struct dropper drop_a, drop_b;

static bool dropper_keeps(struct dropper *d, struct rte_mbuf *m)
{
	struct dpv_wire_pkt p;

	if (dpv_wire_parse(rte_pktmbuf_mtod(m, const uint8_t *), rte_pktmbuf_data_len(m), &p) !=
		    DPV_WIRE_OK ||
	    p.opcode != d->opcode ||
	    (d->naks_only && (p.aeth_syndrome & 0xe0) != (DPV_AETH_NAK_PSN_SEQ & 0xe0)))
		return true;
	d->seen++;
	if (d->until != 0 ? rte_get_tsc_cycles() < d->until
			  : d->seen - 1 >= d->nth && d->seen - 1 < d->nth + d->count) {
		d->done++;
		return false;
	}
	return true;
}

static bool drop_a_hook(struct rte_mbuf *m)
{
	return dropper_keeps(&drop_a, m);
}

static bool drop_b_hook(struct rte_mbuf *m)
{
	return dropper_keeps(&drop_b, m);
}

/* Device A (@p to_a) or B drops its next frame of @p opcode. */
static struct dropper *drop_next(bool to_a, uint8_t opcode, int nth)
{
	struct dropper *d = to_a ? &drop_a : &drop_b;

	memset(d, 0, sizeof(*d));
	d->opcode = opcode;
	d->nth = nth;
	d->count = 1;
	if (to_a)
		a_rx_hook = drop_a_hook;
	else
		b_rx_hook = drop_b_hook;
	return d;
}

static bool drop_all(struct rte_mbuf *m)
{
	(void)m;
	return false;
}

/* Post @p w on a, wait for its completion (and b's receive when @p recv), check it. */
static void exchange(struct end *a, struct end *b, struct dpv_swqe *w, bool recv)
{
	struct dpv_cqe c;

	post_send(a->qp, w);
	if (recv) {
		assert_int_equal(poll_n(b->rcq, &c, 1), 1);
		assert_int_equal(c.status, DPV_WC_SUCCESS);
	}
	assert_int_equal(poll_n(a->scq, &c, 1), 1);
	assert_int_equal(c.status, DPV_WC_SUCCESS);
	assert_int_equal(c.wr_id, w->wr_id);
}

#define DELTA(x, f, s0) (stats(x).qps.f - (s0).qps.f)

static void lost_last_packet_ack_nak_and_read_responses_are_recovered(void **state)
{
	const uint32_t len = 3000;
	uint8_t *src = malloc(len), *dst = calloc(1, len), *back = calloc(1, len);
	uint32_t ks = mr_reg(ta, src, len, DPV_ACCESS_REMOTE_READ);
	uint32_t kd = mr_reg(tb, dst, len, ACCESS_ALL);
	uint32_t kb = mr_reg(ta, back, len, DPV_ACCESS_LOCAL_WRITE);
	struct dpv_rwqe r = rwqe(2, dst, len, kd);
	struct dpv_xport_stats sa, sb;
	struct dropper *d, *d2;
	struct dpv_swqe w;
	struct end a, b;

	(void)state;
	/* The probe comes 1 ms after the last progress, the ACK timer 67 ms after it
	 * (timeout 14): a test process held off its core for a while still sees the
	 * probe first. */
	rc_pair(&a, &b, false, NULL, NULL, 7);
	fill(src, len, 41);

	/* the last packet of a SEND: nothing after it shows the gap; the tail loss probe
	 * sends it again before the ACK timer would */
	pump(200); /* what the case before still had in flight */
	sa = stats(xa);
	post_recv(b.qp, &r);
	w = swqe(DPV_WR_SEND, 1);
	swqe_sge(&w, src, len, ks);
	d = drop_next(false, DPV_OP_RC_SEND_LAST, 0);
	exchange(&a, &b, &w, true);
	assert_int_equal(d->done, 1);
	assert_memory_equal(dst, src, len);
	assert_true(DELTA(xa, retrans_probe, sa) >= 1);
	assert_int_equal(DELTA(xa, ack_timeouts, sa), 0);

	/* the same, and every probe lost too: the ACK timer resends */
	pump(200); /* what the case before still had in flight */
	sa = stats(xa);
	post_recv(b.qp, &r);
	w = swqe(DPV_WR_SEND, 2);
	swqe_sge(&w, src, len, ks);
	d = drop_next(false, DPV_OP_RC_SEND_LAST, 0);
	/* the timer runs 67 ms: every copy goes for 80 ms */
	d->until = rte_get_tsc_cycles() + rte_get_tsc_hz() * 80 / 1000;
	exchange(&a, &b, &w, true);
	assert_true(d->done >= 2);
	assert_memory_equal(dst, src, len);
	assert_true(DELTA(xa, retrans_probe, sa) >= 1);
	assert_true(DELTA(xa, ack_timeouts, sa) >= 1 && DELTA(xa, retrans_timeout, sa) >= 1);

	/* the ACK: the probe is a duplicate, acknowledged and not placed again */
	pump(200); /* what the case before still had in flight */
	sa = stats(xa);
	sb = stats(xb);
	post_recv(b.qp, &r);
	w = swqe(DPV_WR_SEND, 3);
	swqe_sge(&w, src, 100, ks);
	d = drop_next(true, DPV_OP_RC_ACK, 0);
	exchange(&a, &b, &w, true);
	assert_int_equal(d->done, 1);
	assert_true(DELTA(xa, retrans_probe, sa) >= 1);
	assert_true(DELTA(xb, dup_requests, sb) >= 1);
	assert_int_equal(cq_left(b.rcq), 0);

	/* a NAK: a middle packet is lost, and so is the NAK that says so; the probe, out
	 * of sequence behind what was dropped, draws the NAK again */
	pump(200); /* what the case before still had in flight */
	sa = stats(xa);
	sb = stats(xb);
	post_recv(b.qp, &r);
	w = swqe(DPV_WR_SEND, 4);
	swqe_sge(&w, src, len, ks);
	d = drop_next(false, DPV_OP_RC_SEND_MIDDLE, 0);
	d2 = drop_next(true, DPV_OP_RC_ACK, 0); /* a NAK is an ACK-opcode frame */
	d2->naks_only = true;
	exchange(&a, &b, &w, true);
	assert_int_equal(d->done, 1);
	assert_int_equal(d2->done, 1);
	assert_memory_equal(dst, src, len);
	assert_true(DELTA(xb, seq_naks_sent, sb) >= 2);
	assert_true(DELTA(xa, retrans_seq_nak, sa) >= 1);
	assert_int_equal(DELTA(xa, ack_timeouts, sa), 0);

	/* a READ response in the middle: the gap asks for the rest again, no timer */
	pump(200); /* what the case before still had in flight */
	sa = stats(xa);
	w = swqe(DPV_WR_RDMA_READ, 5);
	w.remote_addr = (uintptr_t)src;
	w.rkey = ks;
	(void)kd;
	swqe_sge(&w, back, len, kb);
	w.remote_addr = (uintptr_t)dst;
	w.rkey = kd;
	d = drop_next(true, DPV_OP_RC_READ_RESP_MIDDLE, 0);
	exchange(&a, &b, &w, false);
	assert_int_equal(d->done, 1);
	assert_memory_equal(back, dst, len);
	assert_true(DELTA(xa, retrans_read, sa) >= 1);
	assert_int_equal(DELTA(xa, ack_timeouts, sa), 0);

	/* the last READ response: the probe asks for it again */
	pump(200); /* what the case before still had in flight */
	sa = stats(xa);
	memset(back, 0, len);
	w.wr_id = 6;
	d = drop_next(true, DPV_OP_RC_READ_RESP_LAST, 0);
	exchange(&a, &b, &w, false);
	assert_int_equal(d->done, 1);
	assert_memory_equal(back, dst, len);
	assert_true(DELTA(xa, retrans_probe, sa) >= 1);
	assert_int_equal(DELTA(xa, ack_timeouts, sa), 0);

	a_rx_hook = b_rx_hook = NULL;
	assert_int_equal(a.qp->attr.state, DPV_QPS_RTS);
	assert_int_equal(b.qp->attr.state, DPV_QPS_RTS);
	end_close(&a);
	end_close(&b);
	mr_dereg(ta, ks);
	mr_dereg(tb, kd);
	mr_dereg(ta, kb);
	free(src);
	free(dst);
	free(back);
}

/* IBTA 9.7.6.1: with no answer at all, the head WR fails with RETRY_EXC_ERR after
 * retry_cnt retries of the local ACK timeout, not before; the rest is flushed in
 * order and the QP is in ERR, with the fatal event. */
static void vanished_peer_gives_retry_exc_err_within_the_bound(void **state)
{
	/* 4.096 us << 12: 16.8 ms; three retries: four timeouts before the error */
	const double t_ms = 4.096e-3 * (1 << 12), bound_ms = 4 * t_ms;
	uint8_t src[64] = {0};
	uint32_t ks = mr_reg(ta, src, sizeof(src), 0);
	struct dpv_xport_stats sa = stats(xa);
	struct dpv_cqe c[3];
	struct end a, b;
	uint64_t t0, t1;
	double ms;

	(void)state;
	rc_timeout = 12;
	rc_retry_cnt = 3;
	rc_pair(&a, &b, false, NULL, NULL, 7);
	rc_timeout = 14;
	rc_retry_cnt = 7;
	b_rx_hook = drop_all;
	for (uint64_t i = 0; i < 3; i++) {
		struct dpv_swqe w = swqe(DPV_WR_SEND, 10 + i);

		swqe_sge(&w, src, sizeof(src), ks);
		post_send(a.qp, &w);
	}
	t0 = rte_get_tsc_cycles();
	assert_int_equal(poll_n(a.scq, c, 1), 1);
	t1 = rte_get_tsc_cycles();
	assert_int_equal(poll_n(a.scq, c + 1, 2), 2);
	b_rx_hook = NULL;
	ms = (double)(t1 - t0) * 1e3 / (double)rte_get_tsc_hz();
	assert_int_equal(c[0].status, DPV_WC_RETRY_EXC_ERR);
	assert_int_equal(c[0].wr_id, 10);
	assert_int_equal(c[1].status, DPV_WC_WR_FLUSH_ERR);
	assert_int_equal(c[1].wr_id, 11);
	assert_int_equal(c[2].status, DPV_WC_WR_FLUSH_ERR);
	assert_int_equal(c[2].wr_id, 12);
	/* not before the bound; after it by no more than a scheduling hiccup */
	assert_true(ms >= bound_ms * 0.99);
	assert_true(ms < bound_ms + 1000);
	assert_int_equal(DELTA(xa, ack_timeouts, sa), 4);
	assert_int_equal(DELTA(xa, retrans_timeout, sa), 3);
	assert_int_equal(DELTA(xa, retry_exceeded, sa), 1);
	assert_int_equal(DELTA(xa, flushed_wrs, sa), 2);
	assert_int_equal(a.qp->attr.state, DPV_QPS_ERR);
	assert_int_equal(a.fatal, 1);
	end_close(&a);
	end_close(&b);
	mr_dereg(ta, ks);
}

/* Device A drops every ACK (and NAK) it receives while set. */
static bool drop_acks(struct rte_mbuf *m)
{
	struct dpv_wire_pkt p;

	return dpv_wire_parse(rte_pktmbuf_mtod(m, const uint8_t *), rte_pktmbuf_data_len(m),
			      &p) != DPV_WIRE_OK ||
	       p.opcode != DPV_OP_RC_ACK;
}

/* b receives a's SEND, every ACK of it is lost, and b's QP is destroyed at once, as a
 * program destroys its QPs after its last completion; then a's resends get through,
 * those that come within @p hold_ms after the destroy excepted. Returns a's
 * completion. */
static struct dpv_cqe send_then_destroy_the_receiver(struct end *a, struct end *b, uint8_t *src,
						     uint8_t *dst, uint32_t len, uint64_t wr_id,
						     uint32_t hold_ms)
{
	uint32_t ks = mr_reg(ta, src, len, 0), kd = mr_reg(tb, dst, len, ACCESS_ALL);
	struct dpv_rwqe r = rwqe(wr_id, dst, len, kd);
	struct dpv_swqe w = swqe(DPV_WR_SEND, wr_id);
	struct dpv_cqe c;

	memset(dst, 0, len);
	post_recv(b->qp, &r);
	swqe_sge(&w, src, len, ks);
	a_rx_hook = drop_acks;
	post_send(a->qp, &w);
	assert_int_equal(poll_n(b->rcq, &c, 1), 1);
	assert_int_equal(c.status, DPV_WC_SUCCESS);
	assert_memory_equal(dst, src, len);
	end_close(b);
	pump_port(&pa, xa); /* the ACK on its way is lost too */
	if (hold_ms != 0)
		drop_next(false, DPV_OP_RC_SEND_ONLY, 0)->until =
			rte_get_tsc_cycles() + rte_get_tsc_hz() / 1000 * hold_ms;
	a_rx_hook = NULL;
	assert_int_equal(poll_n(a->scq, &c, 1), 1);
	b_rx_hook = NULL;
	mr_dereg(ta, ks);
	mr_dereg(tb, kd);
	return c;
}

/* TIME_WAIT for RC (dpv_xport_linger.c). A QP destroyed right after its last receive
 * may take the only ACK of it into a loss: its peer, whose SEND was delivered, resends
 * it to a QP number that has no QP. The destroyed QP's record acknowledges the
 * duplicate again, and the peer's SEND completes with success; without the record
 * (DPV_LINGER_MS 0) it ends in RETRY_EXC_ERR. A new request for the number is no
 * duplicate: dropped, counted in rx_unknown_qp, and its WQE ends in RETRY_EXC_ERR;
 * so does a duplicate that comes after the record has ended. A QP destroyed with no
 * request for a period leaves no record, and nothing to wait for. */
static void destroyed_qp_acknowledges_duplicates_while_it_lingers(void **state)
{
	uint8_t src[64], dst[64];
	struct dpv_xport_stats sa, sb;
	uint32_t ks = mr_reg(ta, src, sizeof(src), 0);
	struct dpv_swqe w;
	struct dpv_cqe c;
	struct end a, b;
	uint64_t t;

	(void)state;
	fill(src, sizeof(src), 5);
	/* Records of earlier cases end. */
	assert_int_equal(dpv_xport_set_linger_ms(xb, 0), 0);
	assert_int_equal(dpv_xport_set_linger_ms(xb, 1000), 0);
	assert_int_equal(dpv_xport_linger_ms(xb), 1000);
	assert_int_equal(dpv_xport_set_linger_ms(xb, DPV_LINGER_MS_MAX + 1), EINVAL);

	/* connected and idle: no record, nothing to wait for */
	sb = stats(xb);
	rc_pair(&a, &b, false, NULL, NULL, 7);
	end_close(&b);
	end_close(&a);
	assert_int_equal(stats(xb).linger_qps - sb.linger_qps, 0);
	assert_int_equal(dpv_xport_linger_until(xb, NULL, 0), 0);

	/* the ACK lost, the receiver destroyed: the record answers the resend. Timeout
	 * 16 (268 ms): a record of 537 ms, so a test process held off its core for a
	 * while still finds it live; one retry, so what follows ends in 0.54 s. */
	rc_timeout = 16;
	rc_retry_cnt = 1;
	rc_pair(&a, &b, false, NULL, NULL, 7);
	sa = stats(xa);
	sb = stats(xb);
	c = send_then_destroy_the_receiver(&a, &b, src, dst, sizeof(dst), 1, 0);
	assert_int_equal(c.status, DPV_WC_SUCCESS);
	assert_int_equal(c.wr_id, 1);
	assert_int_equal(stats(xb).linger_qps - sb.linger_qps, 1);
	assert_true(stats(xb).linger_acks - sb.linger_acks >= 1);
	assert_int_equal(DELTA(xa, retry_exceeded, sa), 0);
	assert_true(DELTA(xa, retrans_packets, sa) >= 1);
	assert_int_equal(a.qp->attr.state, DPV_QPS_RTS);
	/* the device has to run on for it, unless its peer is the process's own */
	t = dpv_xport_linger_until(xb, NULL, 0);
	assert_true(t != 0 && (int64_t)(t - rte_get_tsc_cycles()) > 0);
	assert_int_equal(dpv_xport_linger_until(xb, &pa.ipv4, 1), 0);

	/* a new SEND to the number is no duplicate: dropped and counted, never acked */
	sa = stats(xa);
	sb = stats(xb);
	w = swqe(DPV_WR_SEND, 2);
	swqe_sge(&w, src, sizeof(src), ks);
	post_send(a.qp, &w);
	assert_int_equal(poll_n(a.scq, &c, 1), 1);
	assert_int_equal(c.status, DPV_WC_RETRY_EXC_ERR);
	assert_int_equal(c.wr_id, 2);
	assert_int_equal(stats(xb).linger_acks - sb.linger_acks, 0);
	assert_true(stats(xb).rx_unknown_qp - sb.rx_unknown_qp >= 1);
	assert_int_equal(DELTA(xa, retry_exceeded, sa), 1);
	end_close(&a);

	/* without the record (linger 0) the delivered SEND fails: the test's control */
	rc_timeout = 12; /* 16.8 ms, three retries: 67 ms to fail */
	rc_retry_cnt = 3;
	assert_int_equal(dpv_xport_set_linger_ms(xb, 0), 0);
	rc_pair(&a, &b, false, NULL, NULL, 7);
	sb = stats(xb);
	c = send_then_destroy_the_receiver(&a, &b, src, dst, sizeof(dst), 3, 0);
	assert_int_equal(c.status, DPV_WC_RETRY_EXC_ERR);
	assert_int_equal(stats(xb).linger_qps - sb.linger_qps, 0);
	assert_true(stats(xb).rx_unknown_qp - sb.rx_unknown_qp >= 1);
	end_close(&a);

	/* a record of 10 ms ends at most 20 ms after the last request: resends held back
	 * for 30 ms after the destroy find it ended (the timer's at 33.6 and 50.4 ms get
	 * through), and the SEND fails as without one */
	assert_int_equal(dpv_xport_set_linger_ms(xb, 10), 0);
	rc_pair(&a, &b, false, NULL, NULL, 7);
	sb = stats(xb);
	c = send_then_destroy_the_receiver(&a, &b, src, dst, sizeof(dst), 4, 30);
	assert_int_equal(c.status, DPV_WC_RETRY_EXC_ERR);
	assert_int_equal(stats(xb).linger_qps - sb.linger_qps, 1);
	assert_int_equal(stats(xb).linger_acks - sb.linger_acks, 0);
	assert_true(stats(xb).rx_unknown_qp - sb.rx_unknown_qp >= 1);
	end_close(&a);

	rc_timeout = 14;
	rc_retry_cnt = 7;
	assert_int_equal(dpv_xport_set_linger_ms(xb, 0), 0);
	assert_int_equal(dpv_xport_set_linger_ms(xb, DPV_LINGER_MS_DEFAULT), 0);
	mr_dereg(ta, ks);
}

/* Messages far longer than the window: AckReq four times a window keeps it
 * moving (before, 256 unacknowledged packets stopped the requester for good). */
static void messages_of_4_mib_on_send_write_and_read(void **state)
{
	const uint32_t len = 4u << 20;
	uint8_t *src = malloc(len), *dst = calloc(1, len), *back = calloc(1, len);
	uint32_t ks = mr_reg(ta, src, len, DPV_ACCESS_REMOTE_READ);
	uint32_t kd = mr_reg(tb, dst, len, ACCESS_ALL);
	uint32_t kb = mr_reg(ta, back, len, DPV_ACCESS_LOCAL_WRITE);
	struct dpv_rwqe r = rwqe(2, dst, len, kd);
	struct dpv_xport_stats sa = stats(xa);
	struct dpv_swqe w;
	struct end a, b;

	(void)state;
	rc_pair(&a, &b, false, NULL, NULL, 7);
	fill(src, len, 3);
	post_recv(b.qp, &r);
	w = swqe(DPV_WR_SEND, 1);
	swqe_sge(&w, src, len, ks);
	exchange(&a, &b, &w, true);
	assert_memory_equal(dst, src, len);
	memset(dst, 0, len);
	w = swqe(DPV_WR_RDMA_WRITE, 2);
	w.remote_addr = (uintptr_t)dst;
	w.rkey = kd;
	swqe_sge(&w, src, len, ks);
	exchange(&a, &b, &w, false);
	assert_memory_equal(dst, src, len);
	w = swqe(DPV_WR_RDMA_READ, 3);
	w.remote_addr = (uintptr_t)dst;
	w.rkey = kd;
	swqe_sge(&w, back, len, kb);
	exchange(&a, &b, &w, false);
	assert_memory_equal(back, src, len);
	/* on a lossless link: the window never waits for an ACK nobody asked for (that
	 * would take a timeout per window, 16 at the least); a process kept off its core
	 * for the 67 ms of the timer may see one */
	assert_true(DELTA(xa, ack_timeouts, sa) <= 2);
	end_close(&a);
	end_close(&b);
	mr_dereg(ta, ks);
	mr_dereg(tb, kd);
	mr_dereg(ta, kb);
	free(src);
	free(dst);
	free(back);
}

/* A long READ's responses fill the responder's queue; SENDs without a receive behind
 * it are RNR NAKed again and again while the responses go out, then another READ
 * comes. The NAKs replace each other in the queue (it overflowed, and crashed, when
 * each took a slot), and everything completes once receives are posted. */
static void read_then_rnr_naks_then_read_keep_the_responder_bounded(void **state)
{
	const uint32_t rlen = 256u << 10, nsend = 60;
	uint8_t *src = malloc(rlen), *back = calloc(1, 2 * rlen), *dst = calloc(nsend, 64);
	uint8_t msg[64] = {0};
	uint32_t ks = mr_reg(tb, src, rlen, DPV_ACCESS_REMOTE_READ);
	uint32_t kb = mr_reg(ta, back, 2 * rlen, DPV_ACCESS_LOCAL_WRITE);
	uint32_t kd = mr_reg(tb, dst, nsend * 64, DPV_ACCESS_LOCAL_WRITE);
	uint32_t km = mr_reg(ta, msg, sizeof(msg), 0);
	struct dpv_xport_stats sb = stats(xb);
	struct dpv_cqe c;
	struct dpv_swqe w;
	struct end a, b;

	(void)state;
	rc_pair(&a, &b, false, NULL, NULL, 7);
	fill(src, rlen, 8);
	w = swqe(DPV_WR_RDMA_READ, 0);
	w.remote_addr = (uintptr_t)src;
	w.rkey = ks;
	swqe_sge(&w, back, rlen, kb);
	post_send(a.qp, &w);
	for (uint32_t i = 0; i < nsend; i++) {
		w = swqe(DPV_WR_SEND, 1 + i);
		swqe_sge(&w, msg, sizeof(msg), km);
		post_send(a.qp, &w);
	}
	w = swqe(DPV_WR_RDMA_READ, 1 + nsend);
	w.remote_addr = (uintptr_t)src;
	w.rkey = ks;
	swqe_sge(&w, back + rlen, rlen, kb);
	post_send(a.qp, &w);
	pump(3000);
	assert_true(DELTA(xb, rnr_naks_sent, sb) > 0);
	assert_int_equal(DELTA(xb, resp_queue_full, sb), 0);
	for (uint32_t i = 0; i < nsend; i++) {
		struct dpv_rwqe r = rwqe(100 + i, dst + 64 * i, 64, kd);

		post_recv(b.qp, &r);
	}
	for (uint32_t i = 0; i < nsend + 2; i++) {
		assert_int_equal(poll_n(a.scq, &c, 1), 1);
		assert_int_equal(c.status, DPV_WC_SUCCESS);
		assert_int_equal(c.wr_id, i);
	}
	for (uint32_t i = 0; i < nsend; i++) {
		assert_int_equal(poll_n(b.rcq, &c, 1), 1);
		assert_int_equal(c.status, DPV_WC_SUCCESS);
	}
	assert_memory_equal(back, src, rlen);
	assert_memory_equal(back + rlen, src, rlen);
	assert_int_equal(a.qp->attr.state, DPV_QPS_RTS);
	assert_int_equal(b.qp->attr.state, DPV_QPS_RTS);
	end_close(&a);
	end_close(&b);
	mr_dereg(tb, ks);
	mr_dereg(ta, kb);
	mr_dereg(tb, kd);
	mr_dereg(ta, km);
	free(src);
	free(back);
	free(dst);
}

/* 1 MiB SEND, WRITE and READ over a link losing 2 % each way, duplicating and
 * reordering 1 %: a lost READ response has the rest asked for again at once, and the
 * responder drops what it still had queued for the old request. */
static void one_mib_messages_over_a_lossy_link(void **state)
{
	const uint32_t len = 1u << 20;
	uint8_t *src = malloc(len), *dst = calloc(1, len), *back = calloc(1, len);
	uint32_t ks = mr_reg(ta, src, len, DPV_ACCESS_REMOTE_READ);
	uint32_t kd = mr_reg(tb, dst, len, ACCESS_ALL);
	uint32_t kb = mr_reg(ta, back, len, DPV_ACCESS_LOCAL_WRITE);
	struct dpv_rwqe r = rwqe(2, dst, len, kd);
	struct dpv_xport_stats sa = stats(xa), sb = stats(xb);
	unsigned int free0 = mbufs_free();
	struct dpv_swqe w;
	struct end a, b;

	(void)state;
	rc_timeout = 10;
	rc_pair(&a, &b, false, NULL, NULL, 7);
	rc_timeout = 14;
	fill(src, len, 77);
	lossy_link(20000, 10000, 10000, 9);
	for (uint64_t k = 0; k < 2; k++) {
		memset(dst, 0, len);
		post_recv(b.qp, &r);
		w = swqe(DPV_WR_SEND, 10 * k + 1);
		swqe_sge(&w, src, len, ks);
		exchange(&a, &b, &w, true);
		assert_memory_equal(dst, src, len);
		memset(dst, 0, len);
		w = swqe(DPV_WR_RDMA_WRITE, 10 * k + 2);
		w.remote_addr = (uintptr_t)dst;
		w.rkey = kd;
		swqe_sge(&w, src, len, ks);
		exchange(&a, &b, &w, false);
		assert_memory_equal(dst, src, len);
		memset(back, 0, len);
		w = swqe(DPV_WR_RDMA_READ, 10 * k + 3);
		w.remote_addr = (uintptr_t)dst;
		w.rkey = kd;
		swqe_sge(&w, back, len, kb);
		exchange(&a, &b, &w, false);
		assert_memory_equal(back, src, len);
	}
	lossy_link(0, 0, 0, 0);
	assert_true(DELTA(xa, retrans_seq_nak, sa) > 0);
	assert_true(DELTA(xa, retrans_read, sa) > 0);
	assert_true(DELTA(xb, dup_requests, sb) > 0);
	assert_int_equal(DELTA(xa, retry_exceeded, sa), 0);
	end_close(&a);
	end_close(&b);
	pump(20);
	assert_int_equal(mbufs_free(), free0);
	mr_dereg(ta, ks);
	mr_dereg(tb, kd);
	mr_dereg(ta, kb);
	free(src);
	free(dst);
	free(back);
}

/* IBTA 9.5: a requester keeps at most max_rd_atomic READs outstanding, and a responder
 * refuses more than its max_dest_rd_atomic with an invalid request NAK. */
static void max_rd_atomic_is_kept_and_max_dest_rd_atomic_enforced(void **state)
{
	const uint32_t len = 4096;
	uint8_t *src = malloc(len), *back = calloc(4, len);
	uint32_t ks = mr_reg(tb, src, len, DPV_ACCESS_REMOTE_READ);
	uint32_t kb = mr_reg(ta, back, 4 * len, DPV_ACCESS_LOCAL_WRITE);
	struct dpv_cqe c[4];
	struct dpv_swqe w;
	struct end a, b;

	(void)state;
	fill(src, len, 21);
	/* one READ at a time on both sides: four READs complete, none refused */
	rc_max_rd = rc_max_dest_rd = 1;
	rc_pair(&a, &b, false, NULL, NULL, 7);
	for (uint64_t i = 0; i < 4; i++) {
		w = swqe(DPV_WR_RDMA_READ, i);
		w.remote_addr = (uintptr_t)src;
		w.rkey = ks;
		swqe_sge(&w, back + i * len, len, kb);
		post_send(a.qp, &w);
	}
	assert_int_equal(poll_n(a.scq, c, 4), 4);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(c[i].status, DPV_WC_SUCCESS);
		assert_memory_equal(back + (size_t)i * len, src, len);
	}
	end_close(&a);
	end_close(&b);
	/* a requester allowed two against a responder that takes one: refused */
	rc_max_rd = 2;
	rc_pair(&a, &b, false, NULL, NULL, 7);
	rc_max_rd = rc_max_dest_rd = DPV_MAX_RD_ATOMIC;
	for (uint64_t i = 0; i < 2; i++) {
		w = swqe(DPV_WR_RDMA_READ, 10 + i);
		w.remote_addr = (uintptr_t)src;
		w.rkey = ks;
		swqe_sge(&w, back + i * len, len, kb);
		post_send(a.qp, &w);
	}
	assert_int_equal(poll_n(a.scq, c, 2), 2);
	assert_int_equal(c[0].status == DPV_WC_REM_INV_REQ_ERR ||
				 c[1].status == DPV_WC_REM_INV_REQ_ERR,
			 1);
	assert_int_equal(b.qp->attr.state, DPV_QPS_ERR);
	end_close(&a);
	end_close(&b);
	mr_dereg(tb, ks);
	mr_dereg(ta, kb);
	free(src);
	free(back);
}

static void duplicates_are_acknowledged_and_reads_answered_again(void **state)
{
	uint8_t src[3000] = {0}, dst[3000] = {0}, back[3000] = {0};
	uint32_t ks = mr_reg(ta, src, sizeof(src), DPV_ACCESS_REMOTE_READ);
	uint32_t kd = mr_reg(tb, dst, sizeof(dst), ACCESS_ALL);
	uint32_t kb = mr_reg(ta, back, sizeof(back), DPV_ACCESS_LOCAL_WRITE);
	struct dpv_swqe w = swqe(DPV_WR_SEND, 1);
	struct dpv_rwqe r = rwqe(2, dst, sizeof(dst), kd);
	struct dpv_xport_stats sb;
	struct dpv_cqe c;
	struct end a, b;

	(void)state;
	rc_pair(&a, &b, false, NULL, NULL, 7);
	fill(src, sizeof(src), 12);
	post_recv(b.qp, &r);
	post_recv(b.qp, &r);
	swqe_sge(&w, src, sizeof(src), ks);
	hook_saved = NULL;
	hook_dup_opcode = DPV_OP_RC_SEND_LAST;
	b_rx_hook = keep_a_copy;
	post_send(a.qp, &w);
	assert_int_equal(poll_n(a.scq, &c, 1), 1);
	b_rx_hook = NULL;
	assert_non_null(hook_saved);
	/* the last packet again: acknowledged, not delivered twice */
	sb = stats(xb);
	dpv_xport_rx(xb, &hook_saved, 1);
	pump(10);
	assert_int_equal(stats(xb).qps.dup_requests - sb.qps.dup_requests, 1);
	assert_int_equal(poll_n(b.rcq, &c, 1), 1);
	assert_int_equal(cq_left(b.rcq), 0);
	assert_int_equal(cq_left(a.scq), 0);
	/* a READ request again: answered again, the completer drops what it has */
	w = swqe(DPV_WR_RDMA_READ, 3);
	w.remote_addr = (uintptr_t)dst;
	w.rkey = kd;
	swqe_sge(&w, back, sizeof(back), kb);
	hook_saved = NULL;
	hook_dup_opcode = DPV_OP_RC_READ_REQUEST;
	b_rx_hook = keep_a_copy;
	post_send(a.qp, &w);
	assert_int_equal(poll_n(a.scq, &c, 1), 1);
	b_rx_hook = NULL;
	assert_int_equal(c.status, DPV_WC_SUCCESS);
	assert_memory_equal(back, src, sizeof(back));
	sb = stats(xa);
	dpv_xport_rx(xb, &hook_saved, 1);
	pump(10);
	assert_int_equal(stats(xa).qps.dup_responses - sb.qps.dup_responses, 3);
	assert_int_equal(cq_left(a.scq), 0);
	assert_int_equal(a.qp->attr.state, DPV_QPS_RTS);
	assert_int_equal(b.qp->attr.state, DPV_QPS_RTS);
	end_close(&a);
	end_close(&b);
	mr_dereg(ta, ks);
	mr_dereg(tb, kd);
	mr_dereg(ta, kb);
}

/* ---- atomics (IBTA 9.4.5) ---- */

static struct dpv_swqe atomic_wqe(uint8_t opcode, uint64_t wr_id, uint64_t *remote,
				  uint32_t rkey, uint64_t compare_add, uint64_t swap,
				  uint64_t *local, uint32_t lkey)
{
	struct dpv_swqe w = swqe(opcode, wr_id);

	w.remote_addr = (uintptr_t)remote;
	w.rkey = rkey;
	w.compare_add = compare_add;
	w.swap = swap;
	swqe_sge(&w, local, sizeof(*local), lkey);
	return w;
}

/* Compare-and-swap that matches and one that does not, fetch-and-add, and 40
 * fetch-and-adds in flight at once (16 at a time, max_rd_atomic): each gets the value
 * before it, in order, and the memory ends with every one applied once. */
static void atomics_cmp_swap_and_fetch_add_return_the_value_before(void **state)
{
	uint64_t *remote = calloc(2, sizeof(*remote)), *local = calloc(41, sizeof(*local));
	uint32_t kr = mr_reg(tb, remote, 2 * sizeof(*remote),
			     DPV_ACCESS_LOCAL_WRITE | DPV_ACCESS_REMOTE_ATOMIC);
	uint32_t kl = mr_reg(ta, local, 41 * sizeof(*local), DPV_ACCESS_LOCAL_WRITE);
	struct dpv_xport_stats sa = stats(xa), sb = stats(xb);
	struct dpv_cqe c[40];
	struct dpv_swqe w;
	struct end a, b;

	(void)state;
	rc_pair(&a, &b, false, NULL, NULL, 7);
	remote[0] = 0x1122334455667788ULL;
	w = atomic_wqe(DPV_WR_ATOMIC_CMP_SWP, 1, remote, kr, 0x1122334455667788ULL,
		       0xa5a5a5a5a5a5a5a5ULL, &local[0], kl);
	post_send(a.qp, &w);
	w = atomic_wqe(DPV_WR_ATOMIC_CMP_SWP, 2, remote, kr, 0x1122334455667788ULL, 7,
		       &local[1], kl);
	post_send(a.qp, &w);
	w = atomic_wqe(DPV_WR_ATOMIC_FETCH_ADD, 3, remote, kr, 0x5a5a5a5a5a5a5a5bULL, 0,
		       &local[2], kl);
	post_send(a.qp, &w);
	assert_int_equal(poll_n(a.scq, c, 3), 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(c[i].wr_id, (uint64_t)i + 1);
		assert_int_equal(c[i].status, DPV_WC_SUCCESS);
		assert_int_equal(c[i].byte_len, 8);
	}
	assert_int_equal(c[0].opcode, DPV_WC_COMP_SWAP);
	assert_int_equal(c[2].opcode, DPV_WC_FETCH_ADD);
	/* matched and swapped; then no match: the value stays, the one found comes back */
	assert_true(local[0] == 0x1122334455667788ULL);
	assert_true(local[1] == 0xa5a5a5a5a5a5a5a5ULL);
	assert_true(local[2] == 0xa5a5a5a5a5a5a5a5ULL);
	assert_true(remote[0] == 0xa5a5a5a5a5a5a5a5ULL + 0x5a5a5a5a5a5a5a5bULL); /* wraps to 0 */
	assert_true(remote[1] == 0);

	for (uint64_t i = 0; i < 40; i++) {
		w = atomic_wqe(DPV_WR_ATOMIC_FETCH_ADD, 100 + i, &remote[1], kr, i + 1, 0,
			       &local[1 + i], kl);
		post_send(a.qp, &w);
		if (i == 30)
			assert_int_equal(poll_n(a.scq, c, 31), 31);
	}
	assert_int_equal(poll_n(a.scq, c + 31, 9), 9);
	for (uint64_t i = 0, sum = 0; i < 40; sum += ++i) {
		assert_int_equal(c[i].wr_id, 100 + i);
		assert_int_equal(c[i].status, DPV_WC_SUCCESS);
		assert_true(local[1 + i] == sum);
	}
	assert_true(remote[1] == 40 * 41 / 2);
	/* The link loses nothing: a duplicate can only be a request the requester sent
	 * again (a tail loss probe, when this process was slow), answered from the cache. */
	assert_true(DELTA(xb, atomic_replays, sb) <= DELTA(xa, retrans_packets, sa));
	end_close(&a);
	end_close(&b);
	/* on one device, through its loopback */
	rc_pair(&a, &b, true, NULL, NULL, 7);
	kr = mr_reg(ta, remote, sizeof(*remote), DPV_ACCESS_LOCAL_WRITE | DPV_ACCESS_REMOTE_ATOMIC);
	remote[0] = 41;
	w = atomic_wqe(DPV_WR_ATOMIC_FETCH_ADD, 5, remote, kr, 1, 0, &local[0], kl);
	post_send(a.qp, &w);
	assert_int_equal(poll_n(a.scq, c, 1), 1);
	assert_int_equal(c[0].status, DPV_WC_SUCCESS);
	assert_true(local[0] == 41 && remote[0] == 42);
	end_close(&a);
	end_close(&b);
	mr_dereg(ta, kr);
	mr_dereg(ta, kl);
	free(remote);
	free(local);
}

/* A duplicate atomic request (its acknowledgement lost, or the request repeated on the
 * link) is answered with the result it had, from the responder's replay cache: the
 * memory sees it once. */
static void duplicate_atomic_is_answered_from_the_replay_cache(void **state)
{
	uint64_t *remote = calloc(1, sizeof(*remote)), *local = calloc(2, sizeof(*local));
	uint32_t kr = mr_reg(tb, remote, sizeof(*remote),
			     DPV_ACCESS_LOCAL_WRITE | DPV_ACCESS_REMOTE_ATOMIC);
	uint32_t kl = mr_reg(ta, local, 2 * sizeof(*local), DPV_ACCESS_LOCAL_WRITE);
	struct dpv_xport_stats sa, sb;
	struct dropper *d;
	struct dpv_cqe c;
	struct dpv_swqe w;
	struct end a, b;

	(void)state;
	rc_timeout = 10;
	rc_pair(&a, &b, false, NULL, NULL, 7);
	rc_timeout = 14;
	*remote = 100;
	/* the request again, after its result came back */
	hook_saved = NULL;
	hook_dup_opcode = DPV_OP_RC_FETCH_ADD;
	b_rx_hook = keep_a_copy;
	w = atomic_wqe(DPV_WR_ATOMIC_FETCH_ADD, 1, remote, kr, 5, 0, &local[0], kl);
	post_send(a.qp, &w);
	assert_int_equal(poll_n(a.scq, &c, 1), 1);
	b_rx_hook = NULL;
	assert_int_equal(c.status, DPV_WC_SUCCESS);
	assert_true(local[0] == 100 && *remote == 105);
	assert_non_null(hook_saved);
	sa = stats(xa);
	sb = stats(xb);
	dpv_xport_rx(xb, &hook_saved, 1);
	pump(10);
	assert_int_equal(DELTA(xb, atomic_replays, sb), 1);
	assert_int_equal(DELTA(xb, dup_requests, sb), 1);
	assert_int_equal(DELTA(xa, dup_responses, sa), 1);
	assert_true(*remote == 105);
	assert_int_equal(cq_left(a.scq), 0);
	/* its acknowledgement lost: the requester asks again and gets the first result */
	sa = stats(xa);
	sb = stats(xb);
	d = drop_next(true, DPV_OP_RC_ATOMIC_ACK, 0);
	w = atomic_wqe(DPV_WR_ATOMIC_FETCH_ADD, 2, remote, kr, 5, 0, &local[1], kl);
	post_send(a.qp, &w);
	assert_int_equal(poll_n(a.scq, &c, 1), 1);
	a_rx_hook = NULL;
	assert_int_equal(d->done, 1);
	assert_int_equal(c.wr_id, 2);
	assert_int_equal(c.status, DPV_WC_SUCCESS);
	assert_true(local[1] == 105 && *remote == 110);
	/* one resend at least (a slow run may probe twice before the answer is in) */
	assert_true(DELTA(xb, atomic_replays, sb) >= 1);
	assert_true(DELTA(xb, atomic_replays, sb) <= DELTA(xa, retrans_packets, sa));
	assert_int_equal(DELTA(xb, dup_atomics_dropped, sb), 0);
	assert_int_equal(a.qp->attr.state, DPV_QPS_RTS);
	assert_int_equal(b.qp->attr.state, DPV_QPS_RTS);
	end_close(&a);
	end_close(&b);
	mr_dereg(tb, kr);
	mr_dereg(ta, kl);
	free(remote);
	free(local);
}

/* One atomic on a fresh connection: its completion status at the requester. The
 * responder's end is left in @p b for the caller to look at and close. */
static uint8_t atomic_status(uint64_t *remote, uint32_t rkey, uint64_t *local, uint32_t lkey,
			     struct end *b)
{
	struct dpv_swqe w = atomic_wqe(DPV_WR_ATOMIC_CMP_SWP, 1, remote, rkey, 0, 1, local, lkey);
	struct dpv_cqe c;
	struct end a;

	rc_pair(&a, b, false, NULL, NULL, 7);
	post_send(a.qp, &w);
	assert_int_equal(poll_n(a.scq, &c, 1), 1);
	if (c.status != DPV_WC_SUCCESS)
		assert_int_equal(a.qp->attr.state, DPV_QPS_ERR);
	end_close(&a);
	return c.status;
}

/* IBTA 9.4.5 / 10.6: the responder checks the R_Key, the region's and the QP's remote
 * atomic right, the range and the alignment; the requester its own 8-byte buffer. */
static void atomic_key_access_range_and_alignment_are_checked(void **state)
{
	uint64_t *remote = calloc(4, sizeof(*remote)), *local = calloc(1, sizeof(*local));
	const uint32_t ra = DPV_ACCESS_LOCAL_WRITE | DPV_ACCESS_REMOTE_ATOMIC;
	uint32_t kr = mr_reg(tb, remote, 2 * sizeof(*remote), ra);
	uint32_t krw = mr_reg(tb, remote, 2 * sizeof(*remote),
			      DPV_ACCESS_LOCAL_WRITE | DPV_ACCESS_REMOTE_WRITE);
	uint32_t kl = mr_reg(ta, local, sizeof(*local), DPV_ACCESS_LOCAL_WRITE);
	uint32_t kro = mr_reg(ta, local, sizeof(*local), 0);
	uint64_t errs = stats(xb).access_errors;
	struct end b;

	(void)state;
	assert_int_equal(atomic_status(remote, kr, local, kl, &b), DPV_WC_SUCCESS);
	end_close(&b);
	assert_true(remote[0] == 1);
	/* a key whose region has no remote atomic right */
	assert_int_equal(atomic_status(remote, krw, local, kl, &b), DPV_WC_REM_ACCESS_ERR);
	assert_int_equal(b.qp->attr.state, DPV_QPS_ERR);
	assert_int_equal(b.fatal, 1);
	end_close(&b);
	/* no such key */
	assert_int_equal(atomic_status(remote, kr ^ 0x100, local, kl, &b), DPV_WC_REM_ACCESS_ERR);
	end_close(&b);
	/* past the region's end */
	assert_int_equal(atomic_status(remote + 2, kr, local, kl, &b), DPV_WC_REM_ACCESS_ERR);
	end_close(&b);
	assert_int_equal(stats(xb).access_errors, errs + 3);
	/* a QP that does not let its peer do atomics */
	rc_qp_access = ACCESS_ALL;
	assert_int_equal(atomic_status(remote, kr, local, kl, &b), DPV_WC_REM_ACCESS_ERR);
	rc_qp_access = ACCESS_ALL | DPV_ACCESS_REMOTE_ATOMIC;
	end_close(&b);
	/* not 8-byte aligned: an invalid request */
	assert_int_equal(atomic_status((uint64_t *)((uint8_t *)remote + 4), kr, local, kl, &b),
			 DPV_WC_REM_INV_REQ_ERR);
	assert_int_equal(b.qp->attr.state, DPV_QPS_ERR);
	end_close(&b);
	/* a responder that takes no READ or atomic */
	rc_max_dest_rd = 0;
	assert_int_equal(atomic_status(remote, kr, local, kl, &b), DPV_WC_REM_INV_REQ_ERR);
	rc_max_dest_rd = DPV_MAX_RD_ATOMIC;
	end_close(&b);
	/* the local buffer without local write: nothing is sent */
	errs = stats(xb).qps.rx_packets;
	assert_int_equal(atomic_status(remote, kr, local, kro, &b), DPV_WC_LOC_PROT_ERR);
	end_close(&b);
	assert_int_equal(stats(xb).qps.rx_packets, errs);
	assert_true(remote[0] == 1);
	mr_dereg(tb, kr);
	mr_dereg(tb, krw);
	mr_dereg(ta, kl);
	mr_dereg(ta, kro);
	free(remote);
	free(local);
}

/* Atomics, READs and SENDs over a link that loses 2 %, duplicates 1 % and reorders 1 %
 * of the frames: every fetch-and-add is applied once and returns the sum before it. */
static void atomics_over_a_lossy_link_apply_once(void **state)
{
	const uint64_t n = 300;
	uint64_t *remote = calloc(1, sizeof(*remote)), *local = calloc(n, sizeof(*local));
	uint8_t *buf = calloc(1, 4096), *back = calloc(1, 4096);
	uint32_t kr = mr_reg(tb, remote, sizeof(*remote),
			     DPV_ACCESS_LOCAL_WRITE | DPV_ACCESS_REMOTE_ATOMIC);
	uint32_t kl = mr_reg(ta, local, n * sizeof(*local), DPV_ACCESS_LOCAL_WRITE);
	uint32_t kbuf = mr_reg(tb, buf, 4096, ACCESS_ALL);
	uint32_t kback = mr_reg(ta, back, 4096, DPV_ACCESS_LOCAL_WRITE);
	struct dpv_xport_stats sa = stats(xa), sb = stats(xb);
	struct dpv_cqe c[32];
	uint64_t done = 0, sum = 0, posted = 0;
	struct dpv_swqe w;
	struct end a, b;

	(void)state;
	fill(buf, 4096, 5);
	rc_timeout = 10;
	rc_pair(&a, &b, false, NULL, NULL, 7);
	rc_timeout = 14;
	lossy_link(20000, 10000, 10000, 31);
	while (done < n) {
		int got;

		/* at most 32 WQEs in flight; every tenth one a READ */
		while (posted < n && posted - done < 32) {
			if (posted % 10 == 9) {
				w = swqe(DPV_WR_RDMA_READ, posted);
				w.remote_addr = (uintptr_t)buf;
				w.rkey = kbuf;
				swqe_sge(&w, back, 4096, kback);
			} else {
				w = atomic_wqe(DPV_WR_ATOMIC_FETCH_ADD, posted, remote, kr,
					       posted + 1, 0, &local[posted], kl);
			}
			post_send(a.qp, &w);
			posted++;
		}
		got = poll_n(a.scq, c, 1);
		assert_int_equal(got, 1);
		assert_int_equal(c[0].status, DPV_WC_SUCCESS);
		assert_int_equal(c[0].wr_id, done);
		if (done % 10 != 9) {
			assert_true(local[done] == sum);
			sum += done + 1;
		} else {
			assert_memory_equal(back, buf, 4096);
		}
		done++;
	}
	lossy_link(0, 0, 0, 0);
	assert_true(*remote == sum);
	assert_true(DELTA(xa, retrans_packets, sa) > 0);
	assert_true(DELTA(xb, dup_requests, sb) > 0);
	assert_true(DELTA(xb, atomic_replays, sb) > 0);
	assert_int_equal(DELTA(xa, retry_exceeded, sa), 0);
	end_close(&a);
	end_close(&b);
	mr_dereg(tb, kr);
	mr_dereg(ta, kl);
	mr_dereg(tb, kbuf);
	mr_dereg(ta, kback);
	free(remote);
	free(local);
	free(buf);
	free(back);
}

/* ---- UC (IBTA 9.7.7) ---- */

static void uc_up(struct end *e, uint32_t dst_ip, uint32_t dest_qpn)
{
	struct dpv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.state = DPV_QPS_INIT;
	a.access = DPV_ACCESS_REMOTE_WRITE;
	assert_int_equal(dpv_qp_modify(e->x, e->qp, &a, DPV_QP_STATE | DPV_QP_PKEY_INDEX |
				       DPV_QP_PORT | DPV_QP_ACCESS_FLAGS), 0);
	a.state = DPV_QPS_RTR;
	a.path_mtu = MTU_1024;
	a.dest_qpn = dest_qpn;
	a.rq_psn = PSN0;
	a.dst_ip = dst_ip;
	/* RC's responder resources are not UC's */
	assert_int_equal(dpv_qp_modify(e->x, e->qp, &a, DPV_QP_STATE | DPV_QP_AV |
				       DPV_QP_PATH_MTU | DPV_QP_DEST_QPN | DPV_QP_RQ_PSN |
				       DPV_QP_MAX_DEST_RD_ATOMIC), EINVAL);
	assert_int_equal(dpv_qp_modify(e->x, e->qp, &a, DPV_QP_STATE | DPV_QP_AV |
				       DPV_QP_PATH_MTU | DPV_QP_DEST_QPN), EINVAL);
	assert_int_equal(dpv_qp_modify(e->x, e->qp, &a, DPV_QP_STATE | DPV_QP_AV |
				       DPV_QP_PATH_MTU | DPV_QP_DEST_QPN | DPV_QP_RQ_PSN), 0);
	a.state = DPV_QPS_RTS;
	a.sq_psn = PSN0;
	a.timeout = 14;
	assert_int_equal(dpv_qp_modify(e->x, e->qp, &a, DPV_QP_STATE | DPV_QP_SQ_PSN |
				       DPV_QP_TIMEOUT), EINVAL);
	assert_int_equal(dpv_qp_modify(e->x, e->qp, &a, DPV_QP_STATE), EINVAL);
	assert_int_equal(dpv_qp_modify(e->x, e->qp, &a, DPV_QP_STATE | DPV_QP_SQ_PSN), 0);
}

static void uc_pair(struct end *a, struct end *b, struct dpv_srq *srq_b)
{
	end_open(a, xa, DPV_QPT_UC, NULL, NULL);
	end_open(b, xb, DPV_QPT_UC, srq_b, NULL);
	uc_up(a, pb.ipv4, b->qp->qpn);
	uc_up(b, pa.ipv4, a->qp->qpn);
}

/* SENDs of one and of several packets, a WRITE and a WRITE with immediate, into an RQ
 * and into an SRQ: the sender completes when its packets are out, the receiver sends
 * nothing back. */
static void uc_send_and_write_complete_without_acks(void **state)
{
	const uint32_t len = 5000;
	uint8_t *src = malloc(len), *dst = calloc(2, len);
	uint32_t ks = mr_reg(ta, src, len, 0);
	uint32_t kd = mr_reg(tb, dst, 2 * len, DPV_ACCESS_LOCAL_WRITE | DPV_ACCESS_REMOTE_WRITE);
	struct dpv_srq_init si = {.pd = PD, .max_wr = 8, .max_sge = 1, .lanes = 1};
	struct dpv_rwqe r;
	struct dpv_srq *srq;
	struct dpv_cqe c[4];
	struct dpv_swqe w;
	struct end a, b;

	(void)state;
	fill(src, len, 3);
	assert_int_equal(dpv_srq_create(xb, &si, &srq), 0);
	for (int k = 0; k < 2; k++) {
		uc_pair(&a, &b, k == 0 ? NULL : srq);
		memset(dst, 0, 2 * len);
		r = rwqe(7, dst, len, kd);
		if (k == 0) {
			post_recv(b.qp, &r);
			post_recv(b.qp, &r);
		} else {
			post_srq(srq, 0, &r);
			post_srq(srq, 0, &r);
		}
		hook_saved = NULL;
		hook_dup_opcode = DPV_OP_UC_SEND_ONLY;
		b_rx_hook = keep_a_copy;
		w = swqe(DPV_WR_SEND, 1);
		swqe_sge(&w, src, 10, ks);
		post_send(a.qp, &w);
		w = swqe(DPV_WR_SEND_WITH_IMM, 2);
		w.imm = 0x01020304;
		swqe_sge(&w, src, len, ks);
		post_send(a.qp, &w);
		w = swqe(DPV_WR_RDMA_WRITE, 3);
		w.remote_addr = (uintptr_t)dst + len;
		w.rkey = kd;
		swqe_sge(&w, src, len, ks);
		post_send(a.qp, &w);
		w.wr_id = 4;
		w.opcode = DPV_WR_RDMA_WRITE_WITH_IMM;
		w.imm = 9;
		w.length = 0;
		w.num_sge = 0;
		post_send(a.qp, &w);
		assert_int_equal(poll_n(a.scq, c, 4), 4);
		b_rx_hook = NULL;
		for (int i = 0; i < 4; i++) {
			assert_int_equal(c[i].wr_id, (uint64_t)i + 1);
			assert_int_equal(c[i].status, DPV_WC_SUCCESS);
		}
		assert_int_equal(c[2].opcode, DPV_WC_RDMA_WRITE);
		assert_int_equal(c[2].byte_len, len);
		assert_int_equal(poll_n(b.rcq, c, 2), 2);
		assert_int_equal(c[0].byte_len, 10);
		assert_int_equal(c[0].opcode, DPV_WC_RECV);
		assert_int_equal(c[1].byte_len, len);
		assert_int_equal(c[1].flags & DPV_WC_F_IMM, DPV_WC_F_IMM);
		assert_int_equal(c[1].imm, 0x01020304);
		assert_memory_equal(dst, src, len);
		assert_memory_equal(dst + len, src, len);
		/* the WRITE with immediate found no receive WQE left: counted, no RNR */
		assert_int_equal(cq_left(b.rcq), 0);
		assert_int_equal(dpv_qp_stats_ref(b.qp)->tx_packets, 0);
		assert_int_equal(dpv_qp_stats_ref(b.qp)->uc_msgs_dropped, 1);
		/* the first SEND again, as a link may copy it: behind the expected PSN,
		 * dropped, not delivered twice */
		assert_non_null(hook_saved);
		if (k == 0)
			post_recv(b.qp, &r);
		else
			post_srq(srq, 0, &r);
		dpv_xport_rx(xb, &hook_saved, 1);
		assert_int_equal(cq_left(b.rcq), 0);
		assert_int_equal(dpv_qp_stats_ref(b.qp)->dup_requests, 1);
		assert_int_equal(a.qp->attr.state, DPV_QPS_RTS);
		end_close(&a);
		end_close(&b);
	}
	dpv_srq_destroy(xb, srq);
	mr_dereg(ta, ks);
	mr_dereg(tb, kd);
	free(src);
	free(dst);
}

/* A lost packet ends its message at the receiver, silently on the wire and counted:
 * the middle of a SEND, the first packet of a SEND, the last of a WRITE. The receive
 * WQE the lost SEND had goes to the next one; the messages after arrive whole. */
static void uc_lost_packet_drops_its_message_only(void **state)
{
	const uint32_t len = 3000;
	uint8_t *src = malloc(len), *dst = calloc(3, len);
	uint32_t ks = mr_reg(ta, src, len, 0);
	uint32_t kd = mr_reg(tb, dst, 3 * len, DPV_ACCESS_LOCAL_WRITE | DPV_ACCESS_REMOTE_WRITE);
	const struct {
		uint8_t wr, drop;
	} cases[] = {
		{DPV_WR_SEND, DPV_OP_UC_SEND_MIDDLE},
		{DPV_WR_SEND, DPV_OP_UC_SEND_FIRST},
		{DPV_WR_RDMA_WRITE, DPV_OP_UC_WRITE_LAST},
	};
	struct dpv_qp_stats s0;
	struct dropper *d;
	struct dpv_cqe c[2];
	struct dpv_swqe w;
	struct end a, b;

	(void)state;
	fill(src, len, 8);
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct dpv_rwqe r0 = rwqe(10, dst, len, kd), r1 = rwqe(11, dst + len, len, kd);

		uc_pair(&a, &b, NULL);
		memset(dst, 0, 3 * len);
		post_recv(b.qp, &r0);
		post_recv(b.qp, &r1);
		s0 = *dpv_qp_stats_ref(b.qp);
		d = drop_next(false, cases[k].drop, 0);
		for (uint64_t i = 0; i < 2; i++) {
			w = swqe(cases[k].wr, i);
			if (cases[k].wr == DPV_WR_RDMA_WRITE) {
				w.remote_addr = (uintptr_t)dst + (2 - i) * len;
				w.rkey = kd;
			}
			swqe_sge(&w, src, len, ks);
			post_send(a.qp, &w);
		}
		assert_int_equal(poll_n(a.scq, c, 2), 2);
		assert_int_equal(c[0].status, DPV_WC_SUCCESS);
		assert_int_equal(c[1].status, DPV_WC_SUCCESS);
		pump(20);
		b_rx_hook = NULL;
		assert_int_equal(d->done, 1);
		if (cases[k].wr == DPV_WR_SEND) {
			/* the second message, in the first receive WQE; the second WQE waits */
			assert_int_equal(poll_n(b.rcq, c, 1), 1);
			assert_int_equal(c[0].wr_id, 10);
			assert_int_equal(c[0].status, DPV_WC_SUCCESS);
			assert_int_equal(c[0].byte_len, len);
			assert_memory_equal(dst, src, len);
		} else {
			/* the first WRITE is short of its last packet, the second whole */
			assert_memory_equal(dst + len, src, len);
			assert_int_equal(dst[3 * len - 1], 0);
		}
		assert_int_equal(cq_left(b.rcq), 0);
		assert_int_equal(dpv_qp_stats_ref(b.qp)->uc_msgs_dropped - s0.uc_msgs_dropped, 1);
		assert_int_equal(dpv_qp_stats_ref(b.qp)->out_of_seq - s0.out_of_seq, 1);
		assert_int_equal(dpv_qp_stats_ref(b.qp)->tx_packets, 0);
		assert_int_equal(dpv_qp_stats_ref(a.qp)->retrans_packets, 0);
		end_close(&a);
		end_close(&b);
	}
	mr_dereg(ta, ks);
	mr_dereg(tb, kd);
	free(src);
	free(dst);
}

/* UC has no READ and no atomics (IBTA Table 38): such a WQE fails locally and the QP
 * goes to SQE (IBTA 10.3.1), from which RTS takes it back. A WRITE to a region that
 * does not allow it is dropped without a word to the sender. */
static void uc_refuses_read_and_atomics_and_drops_bad_writes(void **state)
{
	uint64_t val = 0, *remote = calloc(1, sizeof(*remote));
	uint32_t kl = mr_reg(ta, &val, sizeof(val), DPV_ACCESS_LOCAL_WRITE);
	uint32_t kr = mr_reg(tb, remote, sizeof(*remote), DPV_ACCESS_LOCAL_WRITE);
	uint64_t errs = stats(xb).access_errors;
	struct dpv_qp_attr at;
	struct dpv_cqe c[2];
	struct dpv_swqe w;
	struct end a, b;

	(void)state;
	uc_pair(&a, &b, NULL);
	w = swqe(DPV_WR_RDMA_READ, 1);
	w.remote_addr = (uintptr_t)remote;
	w.rkey = kr;
	swqe_sge(&w, &val, sizeof(val), kl);
	post_send(a.qp, &w);
	w = swqe(DPV_WR_SEND, 2);
	post_send(a.qp, &w);
	assert_int_equal(poll_n(a.scq, c, 2), 2);
	assert_int_equal(c[0].status, DPV_WC_LOC_QP_OP_ERR);
	assert_int_equal(c[1].status, DPV_WC_WR_FLUSH_ERR);
	assert_int_equal(a.qp->attr.state, DPV_QPS_SQE);
	memset(&at, 0, sizeof(at));
	at.state = DPV_QPS_RTS;
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, DPV_QP_STATE), 0);
	w = atomic_wqe(DPV_WR_ATOMIC_FETCH_ADD, 3, remote, kr, 1, 0, &val, kl);
	post_send(a.qp, &w);
	assert_int_equal(poll_n(a.scq, c, 1), 1);
	assert_int_equal(c[0].status, DPV_WC_LOC_QP_OP_ERR);
	assert_int_equal(dpv_qp_modify(xa, a.qp, &at, DPV_QP_STATE), 0);
	/* a WRITE to a region without remote write: the sender completes, nothing lands */
	w = swqe(DPV_WR_RDMA_WRITE, 4);
	w.remote_addr = (uintptr_t)remote;
	w.rkey = kr;
	val = 77;
	swqe_sge(&w, &val, sizeof(val), kl);
	post_send(a.qp, &w);
	assert_int_equal(poll_n(a.scq, c, 1), 1);
	assert_int_equal(c[0].status, DPV_WC_SUCCESS);
	pump(20);
	assert_true(*remote == 0);
	assert_int_equal(stats(xb).access_errors, errs + 1);
	assert_int_equal(b.qp->attr.state, DPV_QPS_RTS);
	assert_int_equal(dpv_qp_stats_ref(b.qp)->uc_msgs_dropped, 1);
	end_close(&a);
	end_close(&b);
	mr_dereg(ta, kl);
	mr_dereg(tb, kr);
	free(remote);
}

/* ---- malformed frames ---- */

static struct rte_mbuf *frame(struct dpv_wire_pkt *p, const void *payload, uint32_t plen)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(pa.pool);
	uint32_t flen = dpv_wire_frame_len(p->opcode, plen), hl;
	uint8_t *buf;

	assert_non_null(m);
	buf = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)flen);
	assert_non_null(buf);
	hl = dpv_wire_write_headers(buf, p, plen);
	assert_int_not_equal(hl, 0);
	if (plen)
		memcpy(buf + hl, payload, plen);
	dpv_wire_finish(buf, flen);
	return m;
}

static void pkt_to(struct dpv_wire_pkt *p, uint8_t opcode, uint32_t qpn, uint32_t psn)
{
	memset(p, 0, sizeof(*p));
	memcpy(p->src_mac, pa.mac.addr_bytes, 6);
	memcpy(p->dst_mac, pb.mac.addr_bytes, 6);
	p->src_ip = pa.ipv4;
	p->dst_ip = pb.ipv4;
	p->ttl = 64;
	p->udp_sport = 0xc000;
	p->opcode = opcode;
	p->pkey = DPV_WIRE_PKEY_DEFAULT;
	p->dest_qp = qpn;
	p->psn = psn;
}

static void malformed_frames_are_counted_and_ignored(void **state)
{
	struct dpv_xport_stats before = stats(xb), after;
	uint8_t payload[64] = {0};
	struct dpv_wire_pkt p;
	struct rte_mbuf *m;
	struct end a, b, idle;

	(void)state;
	rc_pair(&a, &b, false, NULL, NULL, 7);
	end_open(&idle, xb, DPV_QPT_RC, NULL, NULL);
	/* unknown QP */
	pkt_to(&p, DPV_OP_RC_SEND_ONLY, 4000, 0);
	m = frame(&p, payload, 10);
	dpv_xport_rx(xb, &m, 1);
	/* a QP in RESET */
	pkt_to(&p, DPV_OP_RC_SEND_ONLY, idle.qp->qpn, 0);
	m = frame(&p, payload, 10);
	dpv_xport_rx(xb, &m, 1);
	/* a corrupted byte: ICRC */
	pkt_to(&p, DPV_OP_RC_SEND_ONLY, b.qp->qpn, PSN0);
	m = frame(&p, payload, 10);
	rte_pktmbuf_mtod(m, uint8_t *)[DPV_WIRE_BTH_OFF + DPV_WIRE_BTH_LEN + 3] ^= 1;
	dpv_xport_rx(xb, &m, 1);
	/* cut short */
	m = frame(&p, payload, 10);
	rte_pktmbuf_trim(m, (uint16_t)(rte_pktmbuf_data_len(m) - 30));
	dpv_xport_rx(xb, &m, 1);
	/* an opcode dpverbs does not know, with a good ICRC */
	m = frame(&p, payload, 10);
	rte_pktmbuf_mtod(m, uint8_t *)[DPV_WIRE_BTH_OFF] = 0x1f;
	dpv_wire_finish(rte_pktmbuf_mtod(m, uint8_t *), rte_pktmbuf_data_len(m));
	dpv_xport_rx(xb, &m, 1);
	/* a UD opcode on an RC QP */
	pkt_to(&p, DPV_OP_UD_SEND_ONLY, b.qp->qpn, PSN0);
	m = frame(&p, payload, 10);
	dpv_xport_rx(xb, &m, 1);
	/* another partition */
	pkt_to(&p, DPV_OP_RC_SEND_ONLY, b.qp->qpn, PSN0);
	p.pkey = 0x1234;
	m = frame(&p, payload, 10);
	dpv_xport_rx(xb, &m, 1);
	/* not addressed to this device */
	pkt_to(&p, DPV_OP_RC_SEND_ONLY, b.qp->qpn, PSN0);
	p.dst_ip = RTE_IPV4(127, 0, 20, 99);
	m = frame(&p, payload, 10);
	dpv_xport_rx(xb, &m, 1);
	/* from an address that is not the QP's peer, with every other field right */
	pkt_to(&p, DPV_OP_RC_SEND_ONLY, b.qp->qpn, PSN0);
	p.src_ip = RTE_IPV4(127, 0, 20, 98);
	m = frame(&p, payload, 10);
	dpv_xport_rx(xb, &m, 1);
	after = stats(xb);
	assert_int_equal(after.rx_bad_src - before.rx_bad_src, 1);
	assert_int_equal(after.rx_unknown_qp - before.rx_unknown_qp, 1);
	assert_int_equal(after.rx_bad_state - before.rx_bad_state, 1);
	assert_int_equal(after.rx_bad[DPV_WIRE_E_ICRC] - before.rx_bad[DPV_WIRE_E_ICRC], 1);
	assert_int_equal(after.rx_bad[DPV_WIRE_E_SHORT] - before.rx_bad[DPV_WIRE_E_SHORT], 1);
	assert_int_equal(after.rx_bad[DPV_WIRE_E_OPCODE] - before.rx_bad[DPV_WIRE_E_OPCODE], 2);
	assert_int_equal(after.rx_bad_pkey - before.rx_bad_pkey, 1);
	assert_int_equal(after.rx_bad[DPV_WIRE_E_NOT_ROCE] - before.rx_bad[DPV_WIRE_E_NOT_ROCE], 1);
	assert_int_equal(after.rx_packets - before.rx_packets, 9);
	assert_int_equal(b.qp->attr.state, DPV_QPS_RTS);
	end_close(&a);
	end_close(&b);
	end_close(&idle);
}

static void drain_cq(struct dpv_cq *cq)
{
	struct dpv_cqe c[64];

	while (dpv_ring_dequeue_burst(cq->ring, c, 64) != 0)
		;
}

/* Bring a QP that a random frame ended back to RTS, so the fuzz keeps reaching the
 * responder and completer rather than the state check. */
static void revive(struct end *e, uint32_t dst_ip, uint32_t dest_qpn)
{
	struct dpv_qp_attr at = {.state = DPV_QPS_RESET};

	drain_cq(e->scq);
	drain_cq(e->rcq);
	if (e->qp->attr.state == DPV_QPS_RTS)
		return;
	assert_int_equal(dpv_qp_modify(e->x, e->qp, &at, DPV_QP_STATE), 0);
	rc_up(e, dst_ip, dest_qpn, 7);
}

/* Frames with good ICRCs and random fields, keys, PSNs and lengths, at live QPs on both
 * sides (responders with receives posted, requesters with READs and SENDs outstanding),
 * mixed with the QPs' own traffic: whatever they do to those QPs, no access lands
 * outside a region (ASan watches in the sanitize build) and nothing crashes. */
static void random_frames_never_touch_memory_outside_a_region(void **state)
{
	static const uint8_t ops[] = {
		DPV_OP_RC_SEND_FIRST, DPV_OP_RC_SEND_MIDDLE, DPV_OP_RC_SEND_LAST,
		DPV_OP_RC_SEND_LAST_IMM, DPV_OP_RC_SEND_ONLY, DPV_OP_RC_SEND_ONLY_IMM,
		DPV_OP_RC_WRITE_FIRST, DPV_OP_RC_WRITE_MIDDLE, DPV_OP_RC_WRITE_LAST,
		DPV_OP_RC_WRITE_LAST_IMM, DPV_OP_RC_WRITE_ONLY, DPV_OP_RC_WRITE_ONLY_IMM,
		DPV_OP_RC_READ_REQUEST, DPV_OP_RC_READ_RESP_FIRST, DPV_OP_RC_READ_RESP_MIDDLE,
		DPV_OP_RC_READ_RESP_LAST, DPV_OP_RC_READ_RESP_ONLY, DPV_OP_RC_ACK,
		DPV_OP_UD_SEND_ONLY, DPV_OP_RC_ATOMIC_ACK, DPV_OP_RC_CMP_SWAP,
		DPV_OP_RC_FETCH_ADD,
	};
	uint8_t *mem = calloc(1, 8192), *rbuf = calloc(1, 4096), *lbuf = calloc(1, 8192);
	struct dpv_xport_stats sa = stats(xa), sb = stats(xb), za, zb;
	uint32_t kmem, krecv, klocal, seed = 12345;
	uint8_t payload[1100] = {0};
	struct end a[4], b[4];

	(void)state;
	kmem = mr_reg(tb, mem, 8192, ACCESS_ALL | DPV_ACCESS_REMOTE_ATOMIC);
	krecv = mr_reg(tb, rbuf, 4096, DPV_ACCESS_LOCAL_WRITE);
	klocal = mr_reg(ta, lbuf, 8192, ACCESS_ALL);
	for (int q = 0; q < 4; q++)
		rc_pair(&a[q], &b[q], false, NULL, NULL, 7);
	fill(payload, sizeof(payload), 1);
	for (int i = 0; i < 9000; i++) {
		struct dpv_wire_pkt p;
		struct rte_mbuf *m;
		uint32_t r1, r2, plen;
		struct end *e;
		bool to_a;

		seed = seed * 1103515245u + 12345u;
		r1 = seed >> 8;
		seed = seed * 1103515245u + 12345u;
		r2 = seed >> 8;
		to_a = (r2 >> 20) & 1;
		e = to_a ? &a[r1 % 4] : &b[r1 % 4];
		revive(&a[r1 % 4], pb.ipv4, b[r1 % 4].qp->qpn);
		revive(&b[r1 % 4], pa.ipv4, a[r1 % 4].qp->qpn);
		while (dpv_ring_used(b[r1 % 4].qp->rq) < 4) {
			struct dpv_rwqe r = rwqe(0, rbuf + 512 * (r2 % 8), 512, krecv);

			post_recv(b[r1 % 4].qp, &r);
		}
		if (dpv_ring_used(a[r1 % 4].qp->sq) < 4) {
			struct dpv_swqe w = swqe((r1 & 1) ? DPV_WR_RDMA_READ : DPV_WR_SEND, 0);

			w.remote_addr = (uintptr_t)mem + (r2 % 4096);
			w.rkey = kmem;
			swqe_sge(&w, lbuf + (r1 % 4096), (r2 >> 4) % 4096, klocal);
			post_send(a[r1 % 4].qp, &w);
		}
		pkt_to(&p, ops[r1 % RTE_DIM(ops)], e->qp->qpn,
		       (PSN0 + (r2 % 12)) & DPV_WIRE_PSN_MASK);
		if (to_a) {
			memcpy(p.src_mac, pb.mac.addr_bytes, 6);
			memcpy(p.dst_mac, pa.mac.addr_bytes, 6);
			p.src_ip = pb.ipv4;
			p.dst_ip = pa.ipv4;
		}
		p.ack_req = r2 & 1;
		p.reth_va = (uintptr_t)mem + (int64_t)(r2 % 9000) - 400;
		p.reth_rkey = (r2 & 0x100) ? kmem : kmem + (r2 & 3);
		p.reth_len = (r2 >> 3) % 9000;
		/* mostly aligned, so the key and range checks get their turn */
		p.atomic_va = (r2 & 0x200) ? p.reth_va : p.reth_va & ~7ull;
		p.atomic_rkey = p.reth_rkey;
		p.atomic_swap_add = r1;
		p.atomic_compare = r2 & 0xf;
		p.aeth_syndrome = (r1 & 0x40) ? 0x1f : (uint8_t)(r1 >> 4);
		p.deth_qkey = r1;
		plen = (r1 >> 8) % (!(dpv_wire_opcode_info(p.opcode) & DPV_WIRE_EXT_PAYLOAD) ?
					    1 : sizeof(payload));
		m = frame(&p, payload, plen);
		dpv_xport_rx(to_a ? xa : xb, &m, 1);
		if (i % 4 == 0)
			pump_once();
	}
	pump(50);
	za = stats(xa);
	zb = stats(xb);
	/* the random frames reached past the state check on both sides */
	assert_true(zb.qps.dup_requests - sb.qps.dup_requests > 100 && zb.qps.out_of_seq - sb.qps.out_of_seq > 100);
	assert_true(zb.qps.naks_sent - sb.qps.naks_sent > 100 && zb.access_errors - sb.access_errors > 20);
	assert_true(za.qps.dup_requests + za.qps.dup_responses -
			    (sa.qps.dup_requests + sa.qps.dup_responses) > 100 &&
		    za.qps.out_of_seq + za.qps.ghost_responses -
			    (sa.qps.out_of_seq + sa.qps.ghost_responses) > 100);
	assert_true(za.qps.naks_received - sa.qps.naks_received > 100 && za.access_errors - sa.access_errors > 20);
	for (int q = 0; q < 4; q++) {
		end_close(&a[q]);
		end_close(&b[q]);
	}
	mr_dereg(tb, kmem);
	mr_dereg(tb, krecv);
	mr_dereg(ta, klocal);
	free(mem);
	free(rbuf);
	free(lbuf);
}

/* ---- tag matching ---- */

struct tm_env {
	struct dpv_srq *srq;
	struct dpv_cq *cq;
	struct end a, b;
	uint32_t ks, kr;
	uint8_t *sbuf, *rbuf;
};

static void tm_open(struct tm_env *t)
{
	struct dpv_tm_config cfg = {.max_num_tags = 64, .max_ops = 64, .max_sge = 1};
	struct dpv_srq_init si = {.pd = PD, .max_wr = 64, .max_sge = 1, .lanes = 1, .tm = &cfg};

	assert_int_equal(dpv_cq_create(xb, 256, &t->cq), 0);
	si.cq = t->cq;
	assert_int_equal(dpv_srq_create(xb, &si, &t->srq), 0);
	assert_non_null(t->srq->tm);
	rc_pair(&t->a, &t->b, false, t->srq, NULL, 7);
	t->sbuf = malloc(16384);
	t->rbuf = calloc(1, 16384);
	t->ks = mr_reg(ta, t->sbuf, 16384, 0);
	t->kr = mr_reg(tb, t->rbuf, 16384, DPV_ACCESS_LOCAL_WRITE);
}

static void tm_close(struct tm_env *t)
{
	end_close(&t->a);
	end_close(&t->b);
	dpv_srq_destroy(xb, t->srq);
	dpv_cq_destroy(t->cq);
	mr_dereg(ta, t->ks);
	mr_dereg(tb, t->kr);
	free(t->sbuf);
	free(t->rbuf);
}

/* Post one op as lib/verbs does: dpv_tm_post, then the op lane; the device runs it. */
static uint32_t tm_post(struct tm_env *t, uint8_t opcode, uint8_t flags, uint64_t tag,
			uint32_t handle, uint32_t off, uint32_t len, uint64_t wr_id)
{
	struct dpv_tm_sge sge = {(uintptr_t)(t->rbuf + off), len, t->kr};
	struct dpv_tm_op op = {
		.wr_id = wr_id, .tag = tag, .mask = DPV_TM_MASK_EXACT, .recv_wr_id = wr_id + 1000,
		.sg_list = &sge, .num_sge = 1, .handle = handle, .opcode = opcode, .flags = flags,
	};

	assert_int_equal(dpv_tm_post(t->srq->tm, &op), 0);
	op.sg_list = NULL;
	assert_int_equal(dpv_ring_enqueue_burst(t->srq->tm_ops.lane[0], &op, 1), 1);
	assert_int_equal(dpv_xport_srq_ops(xb, t->srq, 16), 1);
	return op.handle;
}

/* Read the SRQ's CQ as the poll side does: release what ends an entry, skip hidden. */
static int tm_poll(struct tm_env *t, struct dpv_cqe *out, int want)
{
	int got = 0;

	for (int round = 0; round < ROUNDS && got < want; round++) {
		struct dpv_cqe c;

		if (dpv_ring_dequeue_burst(t->cq->ring, &c, 1) == 0) {
			pump_once();
			continue;
		}
		if (c.flags & DPV_WC_F_TM_RELEASE)
			assert_int_equal(dpv_tm_release(t->srq->tm, c.tm_handle), 0);
		if (!(c.flags & DPV_WC_F_HIDDEN))
			out[got++] = c;
	}
	return got;
}

static void tm_send(struct tm_env *t, uint8_t tmh_op, uint64_t tag, uint32_t ctx, uint32_t len)
{
	struct dpv_swqe w = swqe(DPV_WR_SEND, tag);
	struct ibv_tmh *h = (struct ibv_tmh *)t->sbuf;

	h->opcode = tmh_op;
	memset(h->reserved, 0, sizeof(h->reserved));
	h->app_ctx = rte_cpu_to_be_32(ctx);
	h->tag = rte_cpu_to_be_64(tag);
	fill(t->sbuf + sizeof(*h), len - sizeof(*h), (uint32_t)tag);
	swqe_sge(&w, t->sbuf, len, t->ks);
	w.flags = 0;
	post_send(t->a.qp, &w);
}

/* A rendezvous offer: TMH, RVH naming @p len bytes at @p va (rkey @p rkey), then
 * @p app_len bytes of application header, from 64-byte slot @p slot of sbuf (the
 * device reads a WQE's buffer when it sends it). */
static void tm_send_rndv(struct tm_env *t, uint32_t slot, uint64_t tag, uint32_t ctx,
			 const void *va, uint32_t len, uint32_t rkey, uint32_t app_len)
{
	struct dpv_swqe w = swqe(DPV_WR_SEND, tag);
	uint8_t *buf = t->sbuf + 64 * slot;
	struct ibv_tmh *h = (struct ibv_tmh *)buf;
	struct ibv_rvh *rvh = (struct ibv_rvh *)(buf + sizeof(*h));

	h->opcode = IBV_TMH_RNDV;
	memset(h->reserved, 0, sizeof(h->reserved));
	h->app_ctx = rte_cpu_to_be_32(ctx);
	h->tag = rte_cpu_to_be_64(tag);
	rvh->va = rte_cpu_to_be_64((uintptr_t)va);
	rvh->rkey = rte_cpu_to_be_32(rkey);
	rvh->len = rte_cpu_to_be_32(len);
	fill(buf + sizeof(*h) + sizeof(*rvh), app_len, (uint32_t)tag);
	swqe_sge(&w, buf, sizeof(*h) + sizeof(*rvh) + app_len, t->ks);
	w.flags = 0;
	post_send(t->a.qp, &w);
}

static void tm_expected_eager_single_and_multi_packet(void **state)
{
	struct tm_env t;
	struct dpv_cqe c[2];
	uint32_t h1, h2;

	(void)state;
	tm_open(&t);
	h1 = tm_post(&t, DPV_TM_OP_ADD, DPV_TM_OP_F_SIGNALED, 7, 0, 0, 4096, 1);
	h2 = tm_post(&t, DPV_TM_OP_ADD, 0, 8, 0, 4096, 8192, 2);
	assert_int_equal(tm_poll(&t, c, 1), 1);
	assert_int_equal(c[0].opcode, DPV_WC_TM_ADD);
	assert_int_equal(c[0].status, DPV_WC_SUCCESS);
	assert_int_equal(c[0].wr_id, 1);
	/* one packet: one completion with the match and the data */
	tm_send(&t, IBV_TMH_EAGER, 7, 0xabcd, 16 + 300);
	assert_int_equal(tm_poll(&t, c, 1), 1);
	assert_int_equal(c[0].status, DPV_WC_SUCCESS);
	assert_int_equal(c[0].opcode, DPV_WC_TM_RECV);
	assert_int_equal(c[0].flags, DPV_WC_F_TM_MATCH | DPV_WC_F_TM_DATA_VALID |
			 DPV_WC_F_TM_RELEASE);
	assert_int_equal(c[0].wr_id, 1001);
	assert_int_equal(c[0].tm_tag, 7);
	assert_int_equal(c[0].tm_priv, 0xabcd);
	assert_int_equal(c[0].tm_handle, h1);
	assert_int_equal(c[0].byte_len, 300);
	assert_int_equal(c[0].qp_num, t.b.qp->qpn);
	assert_memory_equal(t.rbuf, t.sbuf + 16, 300);
	/* five packets: MATCH at the first, DATA_VALID at the last */
	tm_send(&t, IBV_TMH_EAGER, 8, 0x55, 16 + 5000);
	assert_int_equal(tm_poll(&t, c, 2), 2);
	assert_int_equal(c[0].flags, DPV_WC_F_TM_MATCH);
	assert_int_equal(c[0].tm_tag, 8);
	assert_int_equal(c[0].wr_id, 1002);
	assert_int_equal(c[1].status, DPV_WC_SUCCESS);
	assert_int_equal(c[1].flags, DPV_WC_F_TM_DATA_VALID | DPV_WC_F_TM_RELEASE);
	assert_int_equal(c[1].tm_handle, h2);
	assert_int_equal(c[1].byte_len, 5000);
	assert_memory_equal(t.rbuf + 4096, t.sbuf + 16, 5000);
	/* a DEL racing the message that consumed its entry fails with TM_ERR, even
	 * unsignaled (posted before the poll side has seen the entry's end) */
	h1 = tm_post(&t, DPV_TM_OP_ADD, 0, 9, 0, 0, 64, 3);
	tm_send(&t, IBV_TMH_EAGER, 9, 0, 16 + 10);
	pump(20);
	tm_post(&t, DPV_TM_OP_DEL, 0, 0, h1, 0, 0, 4);
	assert_int_equal(tm_poll(&t, c, 2), 2);
	assert_int_equal(c[0].opcode, DPV_WC_TM_RECV);
	assert_int_equal(c[1].opcode, DPV_WC_TM_DEL);
	assert_int_equal(c[1].status, DPV_WC_TM_ERR);
	assert_int_equal(c[1].wr_id, 4);
	assert_int_equal(stats(xb).tm_expected >= 3, 1);
	tm_close(&t);
}

static void tm_unexpected_no_tag_and_op_completions(void **state)
{
	struct tm_env t;
	struct dpv_rwqe r;
	struct dpv_cqe c[2];
	uint32_t h;

	(void)state;
	tm_open(&t);
	r = rwqe(50, t.rbuf + 8192, 4096, t.kr);
	post_srq(t.srq, 0, &r);
	r = rwqe(51, t.rbuf + 12288, 4096, t.kr);
	post_srq(t.srq, 0, &r);
	/* no entry for tag 3: unexpected, whole message into the ordinary WR */
	tm_send(&t, IBV_TMH_EAGER, 3, 0x77, 16 + 2000);
	assert_int_equal(tm_poll(&t, c, 1), 1);
	assert_int_equal(c[0].status, DPV_WC_SUCCESS);
	assert_int_equal(c[0].opcode, DPV_WC_TM_RECV);
	assert_int_equal(c[0].flags, 0);
	assert_int_equal(c[0].tm_tag, 0);
	assert_int_equal(c[0].wr_id, 50);
	assert_int_equal(c[0].byte_len, 16 + 2000);
	assert_memory_equal(t.rbuf + 8192, t.sbuf, 16 + 2000);
	/* NO_TAG: ordinary WR, whole message */
	tm_send(&t, IBV_TMH_NO_TAG, 0, 0, 16 + 40);
	assert_int_equal(tm_poll(&t, c, 1), 1);
	assert_int_equal(c[0].opcode, DPV_WC_TM_NO_TAG);
	assert_int_equal(c[0].wr_id, 51);
	assert_int_equal(c[0].byte_len, 56);
	/* U = 1, S = 0: an ADD reports SYNC_REQ; a SYNC with S = 1 clears it */
	h = tm_post(&t, DPV_TM_OP_ADD, DPV_TM_OP_F_SIGNALED, 1, 0, 0, 64, 5);
	assert_int_equal(tm_poll(&t, c, 1), 1);
	assert_int_equal(c[0].flags, DPV_WC_F_TM_SYNC_REQ);
	{
		struct dpv_tm_op op = {.wr_id = 6, .opcode = DPV_TM_OP_SYNC, .unexpected_cnt = 1,
				       .flags = DPV_TM_OP_F_SIGNALED | DPV_TM_OP_F_SYNC};

		assert_int_equal(dpv_tm_post(t.srq->tm, &op), 0);
		assert_int_equal(dpv_ring_enqueue_burst(t.srq->tm_ops.lane[0], &op, 1), 1);
		assert_int_equal(dpv_xport_srq_ops(xb, t.srq, 16), 1);
	}
	assert_int_equal(tm_poll(&t, c, 1), 1);
	assert_int_equal(c[0].opcode, DPV_WC_TM_SYNC);
	assert_int_equal(c[0].flags, 0);
	/* a signaled DEL: TM_DEL with the release; an unsignaled one: hidden release */
	tm_post(&t, DPV_TM_OP_DEL, DPV_TM_OP_F_SIGNALED, 0, h, 0, 0, 7);
	assert_int_equal(tm_poll(&t, c, 1), 1);
	assert_int_equal(c[0].opcode, DPV_WC_TM_DEL);
	assert_int_equal(c[0].status, DPV_WC_SUCCESS);
	assert_int_equal(c[0].flags, DPV_WC_F_TM_RELEASE);
	h = tm_post(&t, DPV_TM_OP_ADD, 0, 2, 0, 0, 64, 8);
	tm_post(&t, DPV_TM_OP_DEL, 0, 0, h, 0, 0, 9);
	assert_int_equal(tm_poll(&t, c, 1), 0);
	{
		struct dpv_tm_stats ts;

		dpv_tm_stats_get(t.srq->tm, &ts);
		assert_int_equal(ts.allocated, 0);
	}
	/* no ordinary WR and no entry: RNR NAK, then the message lands once one comes */
	tm_send(&t, IBV_TMH_EAGER, 4, 0, 16 + 8);
	pump(50);
	assert_int_equal(tm_poll(&t, c, 1), 0);
	r = rwqe(52, t.rbuf, 64, t.kr);
	post_srq(t.srq, 0, &r);
	assert_int_equal(tm_poll(&t, c, 1), 1);
	assert_int_equal(c[0].wr_id, 52);
	assert_int_equal(c[0].opcode, DPV_WC_TM_RECV);
	assert_int_equal(stats(xb).tm_unexpected >= 2, 1);
	tm_close(&t);
}

static void tm_rendezvous_and_too_long_eager(void **state)
{
	struct tm_env t;
	struct dpv_cqe c[2];
	uint32_t h;

	(void)state;
	tm_open(&t);
	/* rendezvous data longer than the entry's buffer is left to software: headers
	 * placed, RNDV_INCOMPLETE */
	h = tm_post(&t, DPV_TM_OP_ADD, 0, 11, 0, 0, 4096, 1);
	tm_send_rndv(&t, 0, 11, 0x99, NULL, 4097, 0, 8);
	assert_int_equal(tm_poll(&t, c, 1), 1);
	assert_int_equal(c[0].status, DPV_WC_TM_RNDV_INCOMPLETE);
	assert_int_equal(c[0].flags, DPV_WC_F_TM_MATCH | DPV_WC_F_TM_DATA_VALID |
			 DPV_WC_F_TM_RELEASE);
	assert_int_equal(c[0].tm_handle, h);
	assert_int_equal(c[0].tm_priv, 0x99);
	assert_int_equal(c[0].byte_len, 40);
	assert_memory_equal(t.rbuf, t.sbuf, 40);
	/* more than the entry's buffer: LOC_LEN_ERR, entry released */
	h = tm_post(&t, DPV_TM_OP_ADD, 0, 12, 0, 0, 100, 2);
	tm_send(&t, IBV_TMH_EAGER, 12, 0, 16 + 3000);
	assert_int_equal(tm_poll(&t, c, 2), 2);
	assert_int_equal(c[0].flags, DPV_WC_F_TM_MATCH);
	assert_int_equal(c[1].status, DPV_WC_LOC_LEN_ERR);
	assert_int_equal(c[1].flags & DPV_WC_F_TM_RELEASE, DPV_WC_F_TM_RELEASE);
	assert_int_equal(c[1].tm_handle, h);
	assert_int_equal(poll_n(t.a.scq, c, 1), 1);
	assert_int_equal(c[0].status, DPV_WC_REM_INV_REQ_ERR);
	tm_close(&t);
}

/*
 * doc/guides/rendezvous.md: an expected rendezvous whose data fits the entry's buffer
 * is read by the device over the QP the offer came on: MATCH, the READ, a FIN to the
 * sender (a 16-byte SEND with IBV_TMH_FIN, the tag and app_ctx) and DATA_VALID with
 * byte_len the data's length. Several at once complete in the order of their offers.
 */
static void tm_rendezvous_reads_then_fin(void **state)
{
	enum { N = 3, LEN = 5000 };
	struct tm_env t;
	struct dpv_cqe all[2 * N], c[2 * N], f[N];
	uint8_t *src = malloc(N * LEN), fin[N][32];
	struct ibv_tmh *ft;
	struct dpv_rwqe r;
	uint32_t ksrc, kfin, h[N];
	int i, nm, nd;

	(void)state;
	tm_open(&t);
	ksrc = mr_reg(ta, src, N * LEN, DPV_ACCESS_REMOTE_READ);
	kfin = mr_reg(ta, fin, sizeof(fin), DPV_ACCESS_LOCAL_WRITE);
	fill(src, N * LEN, 77);
	for (i = 0; i < N; i++) {
		r = rwqe(500 + i, fin[i], sizeof(fin[i]), kfin);
		post_recv(t.a.qp, &r);
		h[i] = tm_post(&t, DPV_TM_OP_ADD, 0, 20 + i, 0, (uint32_t)i * LEN, LEN, 10 * i);
	}
	for (i = 0; i < N; i++)
		tm_send_rndv(&t, (uint32_t)i, 20 + i, 0x700 + i, src + i * LEN, LEN - i, ksrc, i * 8);
	assert_int_equal(tm_poll(&t, all, 2 * N), 2 * N);
	/* Each kind in the order of the offers (a READ may end before a later offer's
	 * MATCH). */
	for (i = 0, nm = 0, nd = 0; i < 2 * N; i++)
		c[all[i].flags & DPV_WC_F_TM_MATCH ? nm++ : N + nd++] = all[i];
	assert_int_equal(nm, N);
	/* The sender's FINs, one a rendezvous, in its receive queue. */
	assert_int_equal(poll_n(t.a.rcq, f, N), N);
	for (i = 0; i < N; i++) {
		assert_int_equal(c[i].status, DPV_WC_SUCCESS);
		assert_int_equal(c[i].opcode, DPV_WC_TM_RECV);
		assert_int_equal(c[i].flags, DPV_WC_F_TM_MATCH);
		assert_int_equal(c[i].wr_id, 10 * i + 1000);
		assert_int_equal(c[i].tm_tag, 20 + i);
		assert_int_equal(c[i].tm_priv, 0x700 + i);
		assert_int_equal(c[N + i].status, DPV_WC_SUCCESS);
		assert_int_equal(c[N + i].opcode, DPV_WC_TM_RECV);
		assert_int_equal(c[N + i].flags, DPV_WC_F_TM_DATA_VALID | DPV_WC_F_TM_RELEASE);
		assert_int_equal(c[N + i].tm_handle, h[i]);
		assert_int_equal(c[N + i].wr_id, 10 * i + 1000);
		assert_int_equal(c[N + i].byte_len, LEN - i);
		assert_int_equal(c[N + i].tm_tag, 0);
		assert_memory_equal(t.rbuf + i * LEN, src + i * LEN, LEN - i);
		ft = (struct ibv_tmh *)fin[i];
		assert_int_equal(f[i].status, DPV_WC_SUCCESS);
		assert_int_equal(f[i].wr_id, 500 + i);
		assert_int_equal(f[i].opcode, DPV_WC_RECV);
		assert_int_equal(f[i].byte_len, sizeof(*ft));
		assert_int_equal(ft->opcode, IBV_TMH_FIN);
		assert_int_equal(rte_be_to_cpu_32(ft->app_ctx), 0x700 + i);
		assert_int_equal(rte_be_to_cpu_64(ft->tag), 20 + i);
	}
	assert_int_equal(stats(xb).tm_rndv_reads, N);
	assert_int_equal(stats(xb).tm_rndv_bytes, N * LEN - (N * (N - 1)) / 2);
	tm_close(&t);
	mr_dereg(ta, ksrc);
	mr_dereg(ta, kfin);
	free(src);
}

/* dpv_mr_gen(): every use of a slot a distinct generation, and the next one not the
 * last plus one (nor the same for two slots, or two secrets). */
static void mr_gen_permutes_and_does_not_step(void **state)
{
	static uint8_t seen[65536];
	unsigned int steps = 0, same_slot = 0, same_secret = 0;

	(void)state;
	memset(seen, 0, sizeof(seen));
	for (uint32_t n = 0; n < 65536; n++) {
		uint16_t g = dpv_mr_gen(0x0123456789abcdefull, 77, (uint16_t)n);

		assert_int_equal(seen[g], 0);
		seen[g] = 1;
		steps += dpv_mr_gen(0x0123456789abcdefull, 77, (uint16_t)(n + 1)) == (uint16_t)(g + 1);
		same_slot += dpv_mr_gen(0x0123456789abcdefull, 78, (uint16_t)n) == g;
		same_secret += dpv_mr_gen(0xfedcba9876543210ull, 77, (uint16_t)n) == g;
	}
	/* As for a random permutation: about one in 65,536 of each by chance. */
	assert_true(steps < 16);
	assert_true(same_slot < 16);
	assert_true(same_secret < 16);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(mr_check_covers_key_pd_range_and_access),
		cmocka_unit_test(mr_gen_permutes_and_does_not_step),
		cmocka_unit_test(rc_send_single_packet),
		cmocka_unit_test(rc_send_64k_multi_packet_sges),
		cmocka_unit_test(rc_send_with_imm_solicited_notifies),
		cmocka_unit_test(rc_write_multi_packet_and_unsignaled),
		cmocka_unit_test(rc_write_with_imm_consumes_a_receive),
		cmocka_unit_test(rc_read_multi_packet_into_two_sges),
		cmocka_unit_test(rc_inline_send_needs_no_key),
		cmocka_unit_test(loopback_send_write_read_on_one_device),
		cmocka_unit_test(ud_send_places_the_grh_and_checks_the_qkey),
		cmocka_unit_test(srq_shared_by_16_qps_reports_each_qp),
		cmocka_unit_test(srq_limit_fires_once_below_the_limit),
		cmocka_unit_test(rnr_nak_then_success_when_a_receive_comes),
		cmocka_unit_test(rnr_retry_zero_fails_with_rnr_retry_exc_err),
		cmocka_unit_test(bad_rkey_gives_rem_access_err_and_ends_the_responder),
		cmocka_unit_test(bad_lkey_on_a_receive_gives_loc_prot_err),
		cmocka_unit_test(too_small_receive_gives_loc_len_err_and_rem_inv_req_err),
		cmocka_unit_test(err_state_flushes_posted_and_later_work),
		cmocka_unit_test(state_machine_refuses_what_ibta_refuses),
		cmocka_unit_test(qp_numbers_run_out_with_enospc),
		cmocka_unit_test(sqd_drains_then_rts_resumes),
		cmocka_unit_test(mixed_stream_both_ways_completes_in_order),
		cmocka_unit_test(mixed_stream_survives_loss_duplication_and_reordering),
		cmocka_unit_test(lost_packet_is_resent_after_a_sequence_nak),
		cmocka_unit_test(one_mib_messages_over_a_lossy_link),
		cmocka_unit_test(lost_last_packet_ack_nak_and_read_responses_are_recovered),
		cmocka_unit_test(vanished_peer_gives_retry_exc_err_within_the_bound),
		cmocka_unit_test(destroyed_qp_acknowledges_duplicates_while_it_lingers),
		cmocka_unit_test(messages_of_4_mib_on_send_write_and_read),
		cmocka_unit_test(read_then_rnr_naks_then_read_keep_the_responder_bounded),
		cmocka_unit_test(max_rd_atomic_is_kept_and_max_dest_rd_atomic_enforced),
		cmocka_unit_test(duplicates_are_acknowledged_and_reads_answered_again),
		cmocka_unit_test(atomics_cmp_swap_and_fetch_add_return_the_value_before),
		cmocka_unit_test(duplicate_atomic_is_answered_from_the_replay_cache),
		cmocka_unit_test(atomic_key_access_range_and_alignment_are_checked),
		cmocka_unit_test(atomics_over_a_lossy_link_apply_once),
		cmocka_unit_test(uc_send_and_write_complete_without_acks),
		cmocka_unit_test(uc_lost_packet_drops_its_message_only),
		cmocka_unit_test(uc_refuses_read_and_atomics_and_drops_bad_writes),
		cmocka_unit_test(malformed_frames_are_counted_and_ignored),
		cmocka_unit_test(random_frames_never_touch_memory_outside_a_region),
		cmocka_unit_test(tm_expected_eager_single_and_multi_packet),
		cmocka_unit_test(tm_unexpected_no_tag_and_op_completions),
		cmocka_unit_test(tm_rendezvous_and_too_long_eager),
		cmocka_unit_test(tm_rendezvous_reads_then_fin),
	};

	eal_argc = argc;
	eal_argv = argv;
	return cmocka_run_group_tests_name("transport", tests, devices_up, devices_down);
}
