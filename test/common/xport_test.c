/* SPDX-License-Identifier: BSD-3-Clause */
/* The transport fixture of xport_test.h. */
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ip.h>
#include <rte_mbuf.h>

#include "ports.h"
#include "xport_test.h"

struct dpv_port pa, pb;
struct dpv_xport *xa, *xb;
struct dpv_mr_table *ta, *tb;
bool (*a_rx_hook)(struct rte_mbuf *m);
bool (*b_rx_hook)(struct rte_mbuf *m);

void pump_port(struct dpv_port *port, struct dpv_xport *x)
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

void pump_once(void)
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

void pump(int rounds)
{
	for (int i = 0; i < rounds; i++)
		pump_once();
}

int poll_n(struct dpv_cq *cq, struct dpv_cqe *out, int want)
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

int cq_left(struct dpv_cq *cq)
{
	struct dpv_cqe c[16];

	pump(20);
	return (int)dpv_ring_dequeue_burst(cq->ring, c, 16);
}

uint32_t mr_reg_pd(struct dpv_mr_table *t, void *buf, size_t len, uint32_t access,
		   uint32_t pd)
{
	struct dpv_mr *mr = calloc(1, sizeof(*mr));

	/* Registered as lib/verbs registers: the transport's keys, generations and all. */
	assert_non_null(mr);
	mr->addr = (uintptr_t)buf;
	mr->length = len;
	mr->access = access;
	mr->pd = pd;
	assert_int_equal(dpv_mr_register(t, mr), 0);
	return mr->lkey;
}

uint32_t mr_reg(struct dpv_mr_table *t, void *buf, size_t len, uint32_t access)
{
	return mr_reg_pd(t, buf, len, access, PD);
}

void mr_dereg(struct dpv_mr_table *t, uint32_t key)
{
	struct dpv_mr *mr = (struct dpv_mr *)dpv_mr_find(t, key);

	assert_non_null(mr);
	dpv_mr_deregister(t, mr);
	free(mr);
}

static void on_fatal(struct dpv_qp *qp, void *arg)
{
	(void)qp;
	((struct end *)arg)->fatal++;
}

void end_open(struct end *e, struct dpv_xport *x, uint8_t type, struct dpv_srq *srq,
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

void end_close(struct end *e)
{
	dpv_qp_destroy(e->x, e->qp);
	dpv_cq_destroy(e->scq);
	if (e->own_rcq)
		dpv_cq_destroy(e->rcq);
}

uint8_t rc_timeout = 14, rc_retry_cnt = 7;
uint8_t rc_max_rd = DPV_MAX_RD_ATOMIC, rc_max_dest_rd = DPV_MAX_RD_ATOMIC;
uint32_t rc_qp_access = ACCESS_ALL | DPV_ACCESS_REMOTE_ATOMIC;

#define INIT_MASK (DPV_QP_PKEY_INDEX | DPV_QP_PORT)
#define RTR_MASK (DPV_QP_AV | DPV_QP_PATH_MTU | DPV_QP_DEST_QPN | DPV_QP_RQ_PSN)

static void modify_ok(struct end *e, struct dpv_qp_attr *a, uint8_t state, uint32_t mask)
{
	a->state = state;
	assert_int_equal(dpv_qp_modify(e->x, e->qp, a, DPV_QP_STATE | mask), 0);
}

/* What a connected end (RC, UC) takes towards QP @p dest_qpn at @p dst_ip. */
static void connected_attr(struct dpv_qp_attr *a, uint32_t access, uint32_t dst_ip,
			   uint32_t dest_qpn)
{
	memset(a, 0, sizeof(*a));
	a->access = access;
	a->path_mtu = MTU_1024;
	a->dest_qpn = dest_qpn;
	a->rq_psn = PSN0;
	a->dst_ip = dst_ip;
	a->sq_psn = PSN0;
}

void rc_up(struct end *e, uint32_t dst_ip, uint32_t dest_qpn, uint8_t rnr_retry)
{
	struct dpv_qp_attr a;

	connected_attr(&a, rc_qp_access, dst_ip, dest_qpn);
	a.min_rnr_timer = 1; /* 10 us */
	a.max_dest_rd_atomic = rc_max_dest_rd;
	a.timeout = rc_timeout;
	a.retry_cnt = rc_retry_cnt;
	a.rnr_retry = rnr_retry;
	a.max_rd_atomic = rc_max_rd;
	modify_ok(e, &a, DPV_QPS_INIT, INIT_MASK | DPV_QP_ACCESS_FLAGS);
	modify_ok(e, &a, DPV_QPS_RTR, RTR_MASK | DPV_QP_MAX_DEST_RD_ATOMIC | DPV_QP_MIN_RNR_TIMER);
	modify_ok(e, &a, DPV_QPS_RTS, DPV_QP_SQ_PSN | DPV_QP_TIMEOUT | DPV_QP_RETRY_CNT |
		  DPV_QP_RNR_RETRY | DPV_QP_MAX_QP_RD_ATOMIC);
}

void rc_pair(struct end *a, struct end *b, bool loop, struct dpv_srq *srq_b,
	     struct dpv_cq *rcq_b, uint8_t rnr_retry)
{
	end_open(a, xa, DPV_QPT_RC, NULL, NULL);
	end_open(b, loop ? xa : xb, DPV_QPT_RC, srq_b, rcq_b);
	rc_up(a, loop ? pa.ipv4 : pb.ipv4, b->qp->qpn, rnr_retry);
	rc_up(b, pa.ipv4, a->qp->qpn, rnr_retry);
}

void ud_up(struct end *e, uint32_t qkey)
{
	struct dpv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qkey = qkey;
	a.sq_psn = 7;
	modify_ok(e, &a, DPV_QPS_INIT, INIT_MASK | DPV_QP_QKEY);
	modify_ok(e, &a, DPV_QPS_RTR, 0);
	modify_ok(e, &a, DPV_QPS_RTS, DPV_QP_SQ_PSN);
}

void pair_close(struct end *a, struct end *b, uint32_t ks, uint32_t kd)
{
	end_close(a);
	end_close(b);
	mr_dereg(ta, ks);
	mr_dereg(tb, kd);
}

void uc_up_to(struct end *e, uint32_t dst_ip, uint32_t dest_qpn, uint8_t state)
{
	struct dpv_qp_attr a;

	connected_attr(&a, DPV_ACCESS_REMOTE_WRITE, dst_ip, dest_qpn);
	if (e->qp->attr.state == DPV_QPS_RESET)
		modify_ok(e, &a, DPV_QPS_INIT, INIT_MASK | DPV_QP_ACCESS_FLAGS);
	if (state != DPV_QPS_INIT && e->qp->attr.state == DPV_QPS_INIT)
		modify_ok(e, &a, DPV_QPS_RTR, RTR_MASK);
	if (state == DPV_QPS_RTS && e->qp->attr.state == DPV_QPS_RTR)
		modify_ok(e, &a, DPV_QPS_RTS, DPV_QP_SQ_PSN);
	assert_int_equal(e->qp->attr.state, state);
}

void uc_pair(struct end *a, struct end *b, struct dpv_srq *srq_b)
{
	end_open(a, xa, DPV_QPT_UC, NULL, NULL);
	end_open(b, xb, DPV_QPT_UC, srq_b, NULL);
	uc_up_to(a, pb.ipv4, b->qp->qpn, DPV_QPS_RTS);
	uc_up_to(b, pa.ipv4, a->qp->qpn, DPV_QPS_RTS);
}

struct dpv_swqe swqe(uint8_t opcode, uint64_t wr_id)
{
	struct dpv_swqe w;

	memset(&w, 0, sizeof(w));
	w.opcode = opcode;
	w.wr_id = wr_id;
	w.flags = DPV_WR_F_SIGNALED;
	return w;
}

void swqe_sge(struct dpv_swqe *w, const void *addr, uint32_t len, uint32_t lkey)
{
	w->sge[w->num_sge].addr = (uintptr_t)addr;
	w->sge[w->num_sge].length = len;
	w->sge[w->num_sge].lkey = lkey;
	w->num_sge++;
	w->length += len;
}

void post_send(struct dpv_qp *qp, const struct dpv_swqe *w)
{
	assert_int_equal(dpv_ring_enqueue_burst(qp->sq, w, 1), 1);
	dpv_qp_doorbell(qp);
}

struct dpv_swqe atomic_wqe(uint8_t opcode, uint64_t wr_id, uint64_t *remote, uint32_t rkey,
			   uint64_t compare_add, uint64_t swap, uint64_t *local, uint32_t lkey)
{
	struct dpv_swqe w = swqe(opcode, wr_id);

	w.remote_addr = (uintptr_t)remote;
	w.rkey = rkey;
	w.compare_add = compare_add;
	w.swap = swap;
	swqe_sge(&w, local, sizeof(*local), lkey);
	return w;
}

struct dpv_rwqe rwqe(uint64_t wr_id, void *addr, uint32_t len, uint32_t lkey)
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

void post_recv(struct dpv_qp *qp, const struct dpv_rwqe *r)
{
	assert_int_equal(dpv_ring_enqueue_burst(qp->rq, r, 1), 1);
}

void post_srq(struct dpv_srq *srq, uint32_t lane, const struct dpv_rwqe *r)
{
	assert_int_equal(dpv_ring_enqueue_burst(srq->lanes.lane[lane], r, 1), 1);
	__atomic_add_fetch(&srq->posted, 1, __ATOMIC_RELEASE);
}

void exchange(struct end *a, struct end *b, struct dpv_swqe *w, bool recv)
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

struct dpv_xport_stats stats(struct dpv_xport *x)
{
	struct dpv_xport_stats st;

	dpv_xport_stats_get(x, &st);
	return st;
}

static int devices_up(void **state)
{
	(void)state;
	if (ring_pair_up("xp0", &pa, RTE_IPV4(127, 0, 20, 1), &pb, RTE_IPV4(127, 0, 20, 2),
			 8191) != 0)
		return -1;
	if (dpv_mr_table_create(pa.socket, &ta) != 0 || dpv_mr_table_create(pb.socket, &tb) != 0 ||
	    dpv_xport_create(&pa, ta, &xa) != 0 ||
	    dpv_xport_create(&pb, tb, &xb) != 0)
		return -1;
	return 0;
}

static int devices_down(void **state)
{
	(void)state;
	dpv_xport_destroy(xa);
	dpv_xport_destroy(xb);
	/* What a test left registered (an assertion ended it early) goes with the table. */
	for (int i = 0; i < 2; i++) {
		struct dpv_mr_table *t = i == 0 ? ta : tb;
		const struct dpv_mr *mr;
		uint32_t slot = 0;

		while ((mr = dpv_mr_next(t, &slot)) != NULL) {
			dpv_mr_deregister(t, (struct dpv_mr *)mr);
			free((void *)mr);
		}
		dpv_mr_table_destroy(t);
	}
	ring_pair_down(&pa, &pb);
	return 0;
}

int xport_run_group(const char *name, const struct CMUnitTest *tests, size_t n, int argc,
		    char **argv)
{
	eal_args_keep(argc, argv);
	return _cmocka_run_group_tests(name, tests, n, devices_up, devices_down);
}

struct lossy lossy_a, lossy_b;

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

void lossy_link(uint32_t loss, uint32_t dup, uint32_t reorder, uint32_t seed)
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

struct rte_mbuf *hook_saved;

uint8_t hook_dup_opcode;

bool keep_a_copy(struct rte_mbuf *m)
{
	struct dpv_wire_pkt p;

	if (hook_saved == NULL &&
	    dpv_wire_parse(rte_pktmbuf_mtod(m, void *), rte_pktmbuf_data_len(m), &p) == 0 &&
	    p.opcode == hook_dup_opcode)
		hook_saved = rte_pktmbuf_copy(m, pb.pool, 0, UINT32_MAX);
	return true;
}

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

struct dropper *drop_next(bool to_a, uint8_t opcode, int nth)
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

/* Messages each way, and their largest length. */
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

void mixed_stream(uint32_t seed0)
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
		fill_pattern(sd[i].local, area, (uint32_t)i + 1);
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
