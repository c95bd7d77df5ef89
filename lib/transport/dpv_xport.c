/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The device side of the transport: CQs, SRQs, building and sending frames, the
 * loopback of frames a device sends itself, and the rx / tx / tick loops that hand
 * packets to the requester, responder and completer (dpv_xport_req.c, _resp.c,
 * _comp.c).
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>

#include "dpv_xport_priv.h"

/*
 * Copies through registered memory that survive its unmapping. A program that unmaps
 * (or mprotects) a region before deregistering it breaks ibv_reg_mr(3)'s rule, but a
 * NIC would still not crash: a fault inside xp_copy() jumps back out of it, and the
 * caller ends the access with an error as for a bad key. Each copy arms a jump buffer
 * (sigsetjmp without the signal mask: no system call); the SIGSEGV / SIGBUS handler,
 * installed once per process, jumps to it when the fault is inside a copy of this
 * thread and otherwise passes the signal to the handler installed before it (the
 * default one: the process ends as it would have). A program that installs its own
 * handler for these signals afterwards takes that protection away.
 */
/* volatile: the compiler knows memcpy() does not read it, and would otherwise drop
 * the store that arms it as dead. */
static __thread sigjmp_buf *volatile xp_copy_env;
static struct sigaction xp_prev_segv, xp_prev_bus;
static pthread_once_t xp_fault_once = PTHREAD_ONCE_INIT;

static void xp_fault(int sig, siginfo_t *si, void *uc)
{
	const struct sigaction *prev = sig == SIGBUS ? &xp_prev_bus : &xp_prev_segv;
	sigjmp_buf *env = xp_copy_env;

	if (env != NULL) {
		xp_copy_env = NULL;
		siglongjmp(*env, 1);
	}
	if (prev->sa_flags & SA_SIGINFO) {
		prev->sa_sigaction(sig, si, uc);
		return;
	}
	if (prev->sa_handler != SIG_DFL && prev->sa_handler != SIG_IGN) {
		prev->sa_handler(sig);
		return;
	}
	/* Back to the default: returning re-runs the faulting access, which now ends the
	 * process as if dpverbs had not been there. */
	sigaction(sig, prev, NULL);
}

static void xp_fault_install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = xp_fault;
	/* SA_NODEFER: the jump out leaves the signal unblocked, with no call to undo it. */
	sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, &xp_prev_segv);
	sigaction(SIGBUS, &sa, &xp_prev_bus);
}

bool xp_copy(struct dpv_xport *x, void *dst, const void *src, size_t len)
{
	sigjmp_buf env;

	if (sigsetjmp(env, 0) != 0) {
		x->stats.mem_faults++;
		return false;
	}
	xp_copy_env = &env;
	memcpy(dst, src, len);
	xp_copy_env = NULL;
	return true;
}

/* IBTA 9.4.5: the device is the only one to execute the atomics of its peers, on its
 * owner thread, so any 64-bit read-modify-write would be atomic among them
 * (IBV_ATOMIC_HCA). A locked instruction costs little more and keeps a CPU's own
 * atomics on the same word out of the way too. */
bool xp_atomic(struct dpv_xport *x, uint64_t addr, bool cas, uint64_t compare_add,
	       uint64_t swap, uint64_t *orig)
{
	uint64_t *mem = (uint64_t *)(uintptr_t)addr;
	sigjmp_buf env;
	uint64_t v = compare_add;

	if (sigsetjmp(env, 0) != 0) {
		x->stats.mem_faults++;
		return false;
	}
	xp_copy_env = &env;
	/* A failed compare leaves the value found in v; a successful one found v. */
	if (cas)
		__atomic_compare_exchange_n(mem, &v, swap, false, __ATOMIC_SEQ_CST,
					    __ATOMIC_SEQ_CST);
	else
		v = __atomic_fetch_add(mem, compare_add, __ATOMIC_SEQ_CST);
	xp_copy_env = NULL;
	*orig = v;
	return true;
}

/* Copy @p len bytes between a scatter list, from byte @p off of it, and a buffer: out
 * of the list into @p dst, or into the list from @p src. Each piece is checked against
 * its key first (IBTA 10.6), so nothing outside a region is touched. */
static uint8_t sgl_copy(struct dpv_xport *x, const struct dpv_sge *sge, uint32_t nsge,
			uint32_t pd, uint32_t access, uint64_t off, const uint8_t *src,
			uint8_t *dst, uint32_t len)
{
	uint32_t i, done = 0;

	for (i = 0; i < nsge && done < len; i++) {
		uint64_t n;
		void *mem;

		if (off >= sge[i].length) {
			off -= sge[i].length;
			continue;
		}
		n = sge[i].length - off;
		if (n > len - done)
			n = len - done;
		if (dpv_mr_check(x->mrs, sge[i].lkey, pd, sge[i].addr + off, n, access) == NULL)
			return DPV_WC_LOC_PROT_ERR;
		mem = (void *)(uintptr_t)(sge[i].addr + off);
		if (!(dst != NULL ? xp_copy(x, dst + done, mem, n) : xp_copy(x, mem, src + done, n)))
			return DPV_WC_LOC_PROT_ERR;
		done += (uint32_t)n;
		off = 0;
	}
	return done == len ? DPV_WC_SUCCESS : DPV_WC_LOC_LEN_ERR;
}

uint8_t xp_sgl_scatter(struct dpv_xport *x, const struct dpv_sge *sge, uint32_t nsge,
		       uint32_t pd, uint64_t off, const void *src, uint32_t len)
{
	return sgl_copy(x, sge, nsge, pd, DPV_ACCESS_LOCAL_WRITE, off, src, NULL, len);
}

uint8_t xp_sgl_gather(struct dpv_xport *x, const struct dpv_sge *sge, uint32_t nsge,
		      uint32_t pd, uint64_t off, void *dst, uint32_t len)
{
	return sgl_copy(x, sge, nsge, pd, 0, off, NULL, dst, len);
}

/* ---- completion queues (IBTA 11.4.2) ---- */

void *xp_ring_alloc(int socket, uint32_t count, uint32_t slot_size, uint32_t nrings)
{
	size_t each = dpv_ring_memsize(count, slot_size);

	if (each == 0)
		return NULL;
	return rte_malloc_socket("dpv_ring", each * nrings, DPV_CACHE_LINE, socket);
}

int dpv_cq_create(struct dpv_xport *x, uint32_t cqe, struct dpv_cq **out)
{
	struct dpv_cq *cq;
	uint32_t count;
	void *mem;

	if (cqe == 0 || cqe > DPV_MAX_CQE)
		return EINVAL;
	count = xp_pow2_at_least(cqe);
	cq = rte_zmalloc_socket("dpv_cq", sizeof(*cq), DPV_CACHE_LINE, x->port->socket);
	mem = xp_ring_alloc(x->port->socket, count, sizeof(struct dpv_cqe), 1);
	if (cq == NULL || mem == NULL) {
		rte_free(cq);
		rte_free(mem);
		return ENOMEM;
	}
	cq->ring = dpv_ring_init(mem, count, sizeof(struct dpv_cqe));
	cq->id = __atomic_fetch_add(&x->next_id, 1, __ATOMIC_RELAXED);
	*out = cq;
	return 0;
}

void dpv_cq_destroy(struct dpv_cq *cq)
{
	if (cq == NULL)
		return;
	rte_free(cq->ring);
	rte_free(cq);
}

int dpv_cq_resize(struct dpv_xport *x, struct dpv_cq *cq, uint32_t cqe)
{
	struct dpv_ring *old = cq->ring, *r;
	uint32_t head = __atomic_load_n(&old->cons_head, __ATOMIC_ACQUIRE);
	uint32_t used = __atomic_load_n(&old->prod_tail, __ATOMIC_ACQUIRE) - head;
	uint32_t count;
	void *mem;

	if (cqe == 0 || cqe > DPV_MAX_CQE)
		return EINVAL;
	count = xp_pow2_at_least(cqe);
	if (count < used)
		return EINVAL;
	if (count == dpv_ring_count(old))
		return 0;
	mem = xp_ring_alloc(x->port->socket, count, sizeof(struct dpv_cqe), 1);
	if (mem == NULL)
		return ENOMEM;
	r = dpv_ring_init(mem, count, sizeof(struct dpv_cqe));
	for (uint32_t i = 0; i < used; i++)
		memcpy(dpv_ring_slot(r, i), dpv_ring_slot(old, head + i), sizeof(struct dpv_cqe));
	dpv_ring_commit(r, used);
	cq->ring = r;
	rte_free(old);
	return 0;
}

bool dpv_cq_push(struct dpv_cq *cq, const struct dpv_cqe *cqe, bool solicited)
{
	uint32_t first, armed;

	if (dpv_ring_reserve(cq->ring, 1, &first) == 0) {
		cq->overflows++;
		return false;
	}
	memcpy(dpv_ring_slot(cq->ring, first), cqe, sizeof(*cqe));
	dpv_ring_commit(cq->ring, 1);
	/* IBTA 11.4.2: an arming fires once, on any completion or (solicited-only) on
	 * the next solicited one; it is cleared before the call so the callee may re-arm. */
	armed = __atomic_load_n(&cq->armed, __ATOMIC_ACQUIRE);
	if (armed == 1 || (armed == 2 && solicited)) {
		__atomic_store_n(&cq->armed, 0, __ATOMIC_RELEASE);
		if (cq->notify != NULL)
			cq->notify(cq, cq->notify_arg);
	}
	return true;
}

uint32_t dpv_cq_clean(struct dpv_cq *cq, uint32_t qpn)
{
	struct dpv_ring *r = cq->ring;
	uint32_t head = __atomic_load_n(&r->cons_head, __ATOMIC_ACQUIRE);
	uint32_t tail = __atomic_load_n(&r->prod_tail, __ATOMIC_ACQUIRE);
	uint32_t n = 0;

	for (uint32_t i = head; i != tail; i++) {
		struct dpv_cqe *e = dpv_ring_slot(r, i);

		/* The SRQ's own tag operations (ADD, DEL, SYNC) are no QP's. */
		if (e->qp_num != qpn || (e->flags & DPV_WC_F_HIDDEN) || e->opcode == DPV_WC_TM_ADD ||
		    e->opcode == DPV_WC_TM_DEL || e->opcode == DPV_WC_TM_SYNC)
			continue;
		e->flags |= DPV_WC_F_HIDDEN;
		n++;
	}
	return n;
}

void xp_cq_put(struct dpv_xport *x, struct dpv_cq *cq, const struct dpv_cqe *cqe,
	       bool solicited)
{
	/* IBTA 11.4.2: a completion in error wakes a solicited-only waiter too. */
	if (!dpv_cq_push(cq, cqe, solicited || cqe->status != DPV_WC_SUCCESS)) {
		/* The completion is lost: the CQ says so once (CQ_ERR), and its QPs end
		 * (xp_cq_overruns()), so the application cannot miss it. */
		x->stats.cq_overflows++;
		x->cq_overrun = true;
		if (!cq->error) {
			cq->error = true;
			if (cq->error_event != NULL)
				cq->error_event(cq, cq->error_arg);
		}
	}
}

/* A TM SRQ whose CQ overran lost completions of its messages (its ops wait for room
 * instead): it goes to error, once, and says so (IBV_EVENT_SRQ_ERR), as its QPs do
 * with QP_FATAL. */
static void srq_overrun(struct dpv_srq *srq)
{
	if (srq->cq == NULL || !srq->cq->error || __atomic_load_n(&srq->error, __ATOMIC_RELAXED))
		return;
	__atomic_store_n(&srq->error, true, __ATOMIC_RELEASE);
	if (srq->error_event != NULL)
		srq->error_event(srq, srq->event_arg);
}

/* IBTA 11.4.2.2 and ibv_get_async_event(3): a QP whose CQ overran is in error and
 * raises QP_FATAL; what it still holds flushes into the CQ as the application frees
 * room. The flushes may overrun again: rounds until one moves no QP. */
void xp_cq_overruns(struct dpv_xport *x)
{
	struct xp_qp *q;
	uint32_t i;

	while (x->cq_overrun) {
		x->cq_overrun = false;
		for (i = 0; i < x->nlive; i++) {
			q = x->live[i];
			if (q->qp.init.srq != NULL)
				srq_overrun(q->qp.init.srq);
			if (q->qp.attr.state != DPV_QPS_RESET && q->qp.attr.state != DPV_QPS_ERR &&
			    (q->qp.init.send_cq->error || xp_recv_cq(q)->error))
				xp_qp_error(x, q, DPV_QP_EV_FATAL);
		}
	}
}

/* ---- shared receive queues (IBTA 10.2) ---- */

int dpv_srq_create(struct dpv_xport *x, const struct dpv_srq_init *init, struct dpv_srq **out)
{
	struct dpv_srq *srq;
	uint32_t count;
	void *mem;
	int ret;

	if (init->max_wr == 0 || init->max_wr > DPV_MAX_SRQ_WR || init->max_sge == 0 ||
	    init->max_sge > DPV_MAX_SGE || init->lanes == 0 || init->lanes > DPV_LANES_MAX ||
	    init->limit > init->max_wr || (init->tm != NULL && init->cq == NULL))
		return EINVAL;
	srq = rte_zmalloc_socket("dpv_srq", sizeof(*srq), DPV_CACHE_LINE, x->port->socket);
	if (srq == NULL)
		return ENOMEM;
	srq->id = __atomic_fetch_add(&x->next_id, 1, __ATOMIC_RELAXED);
	srq->xport = x;
	srq->pd = init->pd;
	srq->max_wr = init->max_wr;
	srq->max_sge = init->max_sge;
	srq->limit = init->limit;
	srq->cq = init->cq;
	/* Every lane holds max_wr, so that only the SRQ-wide count (lib/verbs checks it
	 * against max_wr) refuses a post, whichever thread posts. */
	count = xp_pow2_at_least(init->max_wr);
	mem = xp_ring_alloc(x->port->socket, count, sizeof(struct dpv_rwqe), init->lanes);
	if (mem == NULL) {
		ret = ENOMEM;
		goto fail;
	}
	ret = dpv_lanes_init(&srq->lanes, mem, init->lanes, count, sizeof(struct dpv_rwqe));
	if (ret != 0) {
		rte_free(mem);
		goto fail;
	}
	if (init->tm != NULL) {
		ret = dpv_tm_create(init->tm, &srq->tm);
		if (ret != 0)
			goto fail;
		count = xp_pow2_at_least(init->tm->max_ops);
		mem = xp_ring_alloc(x->port->socket, count, sizeof(struct dpv_tm_op), init->lanes);
		if (mem == NULL) {
			ret = ENOMEM;
			goto fail;
		}
		ret = dpv_lanes_init(&srq->tm_ops, mem, init->lanes, count,
				     sizeof(struct dpv_tm_op));
		if (ret != 0) {
			rte_free(mem);
			goto fail;
		}
		/* Last: the device and the poll side find it whole. */
		ret = xp_tm_srq_add(x, srq);
		if (ret != 0)
			goto fail;
	}
	*out = srq;
	return 0;
fail:
	dpv_srq_destroy(x, srq);
	return ret;
}

void dpv_srq_destroy(struct dpv_xport *x, struct dpv_srq *srq)
{
	if (srq == NULL)
		return;
	xp_tm_srq_del(x, srq);
	/* Lanes were laid out in one block starting at lane 0. */
	if (srq->lanes.nlanes)
		rte_free(srq->lanes.lane[0]);
	if (srq->tm_ops.nlanes)
		rte_free(srq->tm_ops.lane[0]);
	dpv_tm_destroy(srq->tm);
	rte_free(srq);
}

bool xp_srq_ready(struct dpv_srq *srq)
{
	uint32_t i, first;

	for (i = 0; i < srq->lanes.nlanes; i++)
		if (dpv_ring_peek(srq->lanes.lane[i], 1, &first) != 0)
			return true;
	return false;
}

static void recv_copy(struct xp_recv *r, const struct dpv_rwqe *w, uint32_t pd)
{
	uint32_t i;

	r->wr_id = w->wr_id;
	/* lib/verbs refuses more than max_sge at post; a slot never makes the device read
	 * beyond its own array. */
	r->num_sge = w->num_sge < DPV_MAX_SGE ? w->num_sge : DPV_MAX_SGE;
	r->cap = 0;
	for (i = 0; i < r->num_sge; i++) {
		r->sge[i] = w->sge[i];
		r->cap += w->sge[i].length;
	}
	r->pd = pd;
}

static bool srq_take_one(void *slot, uint32_t lane, void *arg)
{
	struct xp_recv *r = arg;

	(void)lane;
	recv_copy(r, slot, r->pd);
	return true;
}

bool xp_take_recv(struct dpv_xport *x, struct xp_qp *q, struct xp_recv *r)
{
	struct dpv_srq *srq = q->qp.init.srq;
	uint32_t first, posted, limit;

	(void)x;
	memset(r, 0, offsetof(struct xp_recv, sge));
	if (srq == NULL) {
		if (dpv_ring_peek(q->qp.rq, 1, &first) == 0)
			return false;
		recv_copy(r, dpv_ring_slot(q->qp.rq, first), q->qp.init.pd);
		dpv_ring_release(q->qp.rq, 1);
		r->active = true;
		return true;
	}
	/* The SRQ's lanes are drained in turn; each lane is FIFO (doc/guides/srq.md §1). */
	r->pd = srq->pd;
	if (dpv_lanes_drain(&srq->lanes, 1, srq_take_one, r) == 0)
		return false;
	r->active = true;
	posted = __atomic_sub_fetch(&srq->posted, 1, __ATOMIC_ACQ_REL);
	/* The SRQ limit (ibv_modify_srq(3)) is one-shot: the device disarms it as it fires. */
	limit = __atomic_load_n(&srq->limit, __ATOMIC_ACQUIRE);
	if (limit != 0 && posted < limit) {
		__atomic_store_n(&srq->limit, 0, __ATOMIC_RELEASE);
		if (srq->limit_event != NULL)
			srq->limit_event(srq, srq->event_arg);
	}
	return true;
}

struct dpv_cq *xp_recv_cq(const struct xp_qp *q)
{
	const struct dpv_srq *srq = q->qp.init.srq;

	/* doc/guides/srq.md §2: the CQ of a TM SRQ receives every completion of its
	 * messages. */
	return srq != NULL && srq->tm != NULL ? srq->cq : q->qp.init.recv_cq;
}

/* ---- frames ---- */

uint32_t xp_active_mtu(const struct dpv_port *port)
{
	/* RoCEv2 bytes around a payload inside the IP MTU: IPv4, UDP, BTH, the largest
	 * extension headers (RETH + ImmDt), ICRC. */
	const uint32_t ip_over = DPV_WIRE_IPV4_LEN + DPV_WIRE_UDP_LEN + DPV_WIRE_BTH_LEN +
				 DPV_WIRE_RETH_LEN + DPV_WIRE_IMM_LEN + DPV_WIRE_ICRC_LEN;
	uint32_t room = UINT32_MAX, mtu;

	if (port->pool != NULL)
		room = rte_pktmbuf_data_room_size(port->pool) - RTE_PKTMBUF_HEADROOM;
	for (mtu = 4096; mtu > 256; mtu >>= 1)
		if (mtu + ip_over <= port->mtu && DPV_WIRE_ETH_LEN + mtu + ip_over <= room)
			break;
	return mtu;
}

uint8_t dpv_xport_active_mtu(const struct dpv_xport *x)
{
	uint32_t mtu = xp_active_mtu(x->port);
	uint8_t n = 1;

	while ((256u << (n - 1)) < mtu)
		n++;
	return n;
}

/* IBTA A17.5.1.2: the UDP source port carries flow entropy. One hash of the two QP
 * numbers, the same both ways, so a connection is one flow in each direction. */
static uint16_t flow_sport(uint32_t a, uint32_t b)
{
	uint32_t h = ((a + b) ^ ((a ^ b) << 13)) * 2654435761u;

	return (uint16_t)(0xc000u | ((h >> 16) & 0x3fffu));
}

void xp_pkt_init(struct dpv_xport *x, struct dpv_wire_pkt *p, uint8_t opcode, uint32_t dst_ip,
		 uint32_t src_qpn, uint32_t dest_qpn, uint32_t psn, uint8_t tos, uint8_t ttl)
{
	const struct dpv_port *port = x->port;

	memset(p, 0, sizeof(*p));
	/* The port fills the destination MAC from ARP; a frame to ourselves never leaves. */
	if (dst_ip == port->ipv4)
		memcpy(p->dst_mac, port->mac.addr_bytes, 6);
	memcpy(p->src_mac, port->mac.addr_bytes, 6);
	p->src_ip = port->ipv4;
	p->dst_ip = dst_ip;
	p->tos = tos;
	p->ttl = ttl != 0 ? ttl : 64;
	p->ip_id = x->ip_id++;
	p->udp_sport = flow_sport(src_qpn, dest_qpn);
	p->opcode = opcode;
	p->pkey = DPV_WIRE_PKEY_DEFAULT;
	p->dest_qp = dest_qpn & DPV_WIRE_QPN_MASK;
	p->psn = psn & DPV_WIRE_PSN_MASK;
}

struct rte_mbuf *xp_frame_alloc(struct dpv_xport *x, struct dpv_wire_pkt *p,
				uint32_t payload_len, uint8_t **payload)
{
	uint32_t flen = dpv_wire_frame_len(p->opcode, payload_len), hl;
	struct rte_mbuf *m = rte_pktmbuf_alloc(x->port->pool);
	uint8_t *buf;

	if (m == NULL) {
		x->stats.tx_no_mbuf++;
		return NULL;
	}
	buf = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)flen);
	hl = buf != NULL && flen <= UINT16_MAX ? dpv_wire_write_headers(buf, p, payload_len) : 0;
	if (hl == 0) {
		/* The MTU is clamped to what one mbuf holds: this is a bug, not a state. */
		rte_pktmbuf_free(m);
		x->stats.tx_no_mbuf++;
		return NULL;
	}
	*payload = buf + hl;
	return m;
}

void xp_tx_flush(struct dpv_xport *x)
{
	if (x->ntx == 0)
		return;
	dpv_port_tx(x->port, x->txb, x->ntx);
	x->ntx = 0;
}

void xp_frame_send(struct dpv_xport *x, struct rte_mbuf *m, uint32_t dst_ip)
{
	dpv_wire_finish(rte_pktmbuf_mtod(m, void *), rte_pktmbuf_data_len(m));
	x->stats.tx_packets++;
	if (dst_ip == x->port->ipv4) {
		/* Two QPs of one device: the frame is received here, never sent. */
		if (x->loop_tail - x->loop_head == XP_LOOPQ) {
			x->stats.tx_dropped++;
			rte_pktmbuf_free(m);
			return;
		}
		x->loopq[x->loop_tail++ & (XP_LOOPQ - 1)] = m;
		return;
	}
	x->txb[x->ntx++] = m;
	if (x->ntx == XP_TXB)
		xp_tx_flush(x);
}

/* ---- the device ---- */

int dpv_xport_create(struct dpv_port *port, struct dpv_mr_table *mrs, struct dpv_xport **out)
{
	struct dpv_xport *x;

	pthread_once(&xp_fault_once, xp_fault_install);
	x = rte_zmalloc_socket("dpv_xport", sizeof(*x), DPV_CACHE_LINE, port->socket);
	if (x == NULL)
		return ENOMEM;
	x->port = port;
	x->mrs = mrs;
	x->next_qpn = 2;
	x->tsc_hz = rte_get_tsc_hz();
	x->now = rte_get_tsc_cycles();
	xp_linger_init(x);
	*out = x;
	return 0;
}

void dpv_xport_destroy(struct dpv_xport *x)
{
	if (x == NULL)
		return;
	while (x->nlive > 0)
		dpv_qp_destroy(x, &x->live[x->nlive - 1]->qp);
	xp_tx_flush(x);
	while (x->loop_head != x->loop_tail)
		rte_pktmbuf_free(x->loopq[x->loop_head++ & (XP_LOOPQ - 1)]);
	rte_free(x);
}

struct dpv_qp *dpv_xport_qp(struct dpv_xport *x, uint32_t qpn)
{
	return qpn < DPV_MAX_QP && x->qps[qpn] != NULL ? &x->qps[qpn]->qp : NULL;
}

void dpv_xport_stats_get(const struct dpv_xport *x, struct dpv_xport_stats *st)
{
	memcpy(st, &x->stats, sizeof(*st));
}

const struct dpv_xport_stats *dpv_xport_stats_ref(const struct dpv_xport *x)
{
	return &x->stats;
}

static bool rc_request(uint8_t opcode)
{
	return opcode <= DPV_OP_RC_READ_REQUEST || opcode == DPV_OP_RC_CMP_SWAP ||
	       opcode == DPV_OP_RC_FETCH_ADD;
}

/* One received frame: checked (IBTA 9.6 packet checks, A17.4 for RoCEv2) and handed to
 * the responder (requests) or the completer (responses). */
static void rx_one(struct dpv_xport *x, struct rte_mbuf *m)
{
	struct dpv_wire_pkt p;
	enum dpv_wire_err err;
	const uint8_t *frame;
	struct xp_qp *q;

	x->stats.rx_packets++;
	if (m->nb_segs > 1 && rte_pktmbuf_linearize(m) != 0) {
		x->stats.rx_bad[DPV_WIRE_E_SHORT]++;
		return;
	}
	frame = rte_pktmbuf_mtod(m, const uint8_t *);
	err = dpv_wire_parse(frame, rte_pktmbuf_data_len(m), &p);
	if (err != DPV_WIRE_OK) {
		x->stats.rx_bad[err]++;
		return;
	}
	if (p.dst_ip != x->port->ipv4) {
		x->stats.rx_bad[DPV_WIRE_E_NOT_ROCE]++;
		return;
	}
	/* IBTA 9.6 (P_Key check): one partition, the default, in either membership. */
	if ((p.pkey & 0x7fff) != (DPV_WIRE_PKEY_DEFAULT & 0x7fff)) {
		x->stats.rx_bad_pkey++;
		return;
	}
	q = p.dest_qp < DPV_MAX_QP ? x->qps[p.dest_qp] : NULL;
	if (q == NULL) {
		if (!xp_linger_rx(x, &p))
			x->stats.rx_unknown_qp++;
		return;
	}
	if (q->qp.init.type == DPV_QPT_UD) {
		if (p.opcode != DPV_OP_UD_SEND_ONLY && p.opcode != DPV_OP_UD_SEND_ONLY_IMM)
			x->stats.rx_bad[DPV_WIRE_E_OPCODE]++;
		else
			xp_ud_rx(x, q, &p, frame);
		return;
	}
	/* An RC or UC QP talks to one peer (its AH): frames from any other address are not
	 * its connection's, whatever their QPN and PSN say (rxe checks the same). A QP that
	 * has no peer yet leaves the refusal to its state check. */
	if (p.src_ip != q->qp.attr.dst_ip && q->qp.attr.dst_ip != 0) {
		x->stats.rx_bad_src++;
		return;
	}
	/* IBTA 9.6: the opcode's transport must be the QP's. */
	if (q->qp.init.type == DPV_QPT_UC) {
		if (DPV_WIRE_OP_TRANSPORT(p.opcode) != DPV_WIRE_OP_UC)
			x->stats.rx_bad[DPV_WIRE_E_OPCODE]++;
		else
			xp_uc_rx(x, q, &p, frame);
		return;
	}
	if (p.opcode > DPV_OP_RC_FETCH_ADD) {
		x->stats.rx_bad[DPV_WIRE_E_OPCODE]++;
	} else if (rc_request(p.opcode)) {
		q->req_tsc = x->now; /* how long it lingers when destroyed */
		xp_resp_rx(x, q, &p, frame);
	} else {
		xp_comp_rx(x, q, &p, frame);
	}
}

static void rx_burst(struct dpv_xport *x, struct rte_mbuf **pkts, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		rx_one(x, pkts[i]);
		rte_pktmbuf_free(pkts[i]);
	}
	xp_resp_flush_acks(x);
	xp_tx_flush(x);
}

/* Receive what the device sent itself, until nothing more comes back. */
static void loop_drain(struct dpv_xport *x)
{
	struct rte_mbuf *chunk[XP_RX_CHUNK];
	uint32_t n;

	while (x->loop_head != x->loop_tail) {
		for (n = 0; n < XP_RX_CHUNK && x->loop_head != x->loop_tail; n++)
			chunk[n] = x->loopq[x->loop_head++ & (XP_LOOPQ - 1)];
		rx_burst(x, chunk, n);
	}
}

void dpv_xport_rx(struct dpv_xport *x, struct rte_mbuf **pkts, uint16_t n)
{
	uint32_t done, k;

	x->now = rte_get_tsc_cycles();
	for (done = 0; done < n; done += k) {
		k = n - done < XP_RX_CHUNK ? n - done : XP_RX_CHUNK;
		rx_burst(x, pkts + done, k);
	}
	loop_drain(x);
	if (unlikely(x->cq_overrun))
		xp_cq_overruns(x);
}

uint32_t xp_dst_room(struct dpv_xport *x, struct xp_qp *q, uint32_t dst)
{
	uint32_t room;

	if (dst == x->port->ipv4)
		return UINT32_MAX;
	room = dpv_port_tx_room(x->port, dst);
	if (room <= x->ntx) {
		/* Frames batched here are not the port's yet: hand them over first, or
		 * each QP to this neighbour would count on the same room. */
		xp_tx_flush(x);
		room = dpv_port_tx_room(x->port, dst);
	} else {
		room -= x->ntx;
	}
	if (room == 0)
		xp_kick(q);
	return room;
}

/* What one QP sends in one visit. */
static uint32_t qp_tx(struct dpv_xport *x, struct xp_qp *q, uint32_t quota)
{
	uint32_t sent = 0;

	switch (q->qp.attr.state) {
	case DPV_QPS_ERR:
	case DPV_QPS_SQE:
		xp_qp_flush_new(x, q);
		if (q->qp.attr.state == DPV_QPS_ERR)
			return 0;
		break;
	case DPV_QPS_RTR:
	case DPV_QPS_RTS:
	case DPV_QPS_SQD:
		sent = xp_resp_tx(x, q, quota);
		if (q->qp.attr.state != DPV_QPS_RTR && q->qp.attr.state != DPV_QPS_ERR)
			sent += xp_req_tx(x, q, quota - sent);
		break;
	default:
		break;
	}
	return sent;
}

/* Take the doorbells rung so far: a bit per QP in @p ready, a bit per word in the
 * return value. */
static uint64_t db_take(struct dpv_xport *x, uint64_t *ready)
{
	uint64_t sum, s;
	uint32_t w;

	if (__atomic_load_n(&x->db_summary, __ATOMIC_RELAXED) == 0)
		return 0;
	sum = __atomic_exchange_n(&x->db_summary, 0, __ATOMIC_ACQUIRE);
	for (s = sum; s != 0; s &= s - 1) {
		w = (uint32_t)__builtin_ctzll(s);
		ready[w] = __atomic_exchange_n(&x->db[w], 0, __ATOMIC_ACQUIRE);
		if (ready[w] == 0)
			sum &= ~(1ull << w);
	}
	return sum;
}

/* The next QP number at or after @p from (cyclically) with its bit in @p ready, taken
 * out of it; -1 if none. */
static int32_t db_next(uint64_t *ready, uint64_t *sum, uint32_t from)
{
	uint32_t w = from >> 6, b;
	uint64_t m, s;

	if (*sum == 0)
		return -1;
	m = (*sum >> w & 1) ? ready[w] & (~0ull << (from & 63)) : 0;
	if (m == 0) {
		/* A later word, else the first word from the start (w's lower bits too). */
		s = w == 63 ? 0 : *sum & (~0ull << (w + 1));
		if (s == 0)
			s = *sum;
		w = (uint32_t)__builtin_ctzll(s);
		m = ready[w];
	}
	b = (uint32_t)__builtin_ctzll(m);
	ready[w] &= ~(1ull << b);
	if (ready[w] == 0)
		*sum &= ~(1ull << w);
	return (int32_t)(w << 6 | b);
}

uint32_t dpv_xport_tx(struct dpv_xport *x, uint32_t budget)
{
	uint64_t ready[DPV_MAX_QP / 64], sum;
	uint32_t sent = 0, progress, quota, n, w;
	uint64_t no_mbuf;
	int32_t qpn;

	x->now = rte_get_tsc_cycles();
	/* Rounds over the QPs whose doorbell rang, each a quantum in turn, from where the
	 * last call stopped; a QP that used its whole quantum rings again for the next
	 * round. What the budget leaves is rung back for the next call. */
	do {
		progress = 0;
		sum = db_take(x, ready);
		while (sent < budget && (qpn = db_next(ready, &sum, x->db_next)) >= 0) {
			struct xp_qp *q = x->qps[qpn];

			x->db_next = ((uint32_t)qpn + 1) % DPV_MAX_QP;
			if (q == NULL)
				continue;
			quota = budget - sent < XP_QUANTUM ? budget - sent : XP_QUANTUM;
			no_mbuf = x->stats.tx_no_mbuf;
			n = qp_tx(x, q, quota);
			/* Full quantum: more may wait. No mbuf: try again next time. */
			if (n == quota || x->stats.tx_no_mbuf != no_mbuf)
				xp_kick(q);
			sent += n;
			progress += n;
			if (x->loop_tail - x->loop_head >= XP_LOOPQ / 2) {
				xp_tx_flush(x);
				loop_drain(x);
			}
		}
		for (; sum != 0; sum &= sum - 1) {
			w = (uint32_t)__builtin_ctzll(sum);
			__atomic_fetch_or(&x->db[w], ready[w], __ATOMIC_RELAXED);
			__atomic_fetch_or(&x->db_summary, 1ull << w, __ATOMIC_RELEASE);
		}
	} while (progress > 0 && sent < budget);
	xp_tx_flush(x);
	loop_drain(x);
	if (unlikely(x->cq_overrun))
		xp_cq_overruns(x);
	return sent;
}

/* IBTA Table 45: the RNR NAK timer field, in units of 10 microseconds. */
static const uint32_t rnr_timer_10us[32] = {
	65536, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192,
	256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576,
	32768, 49152,
};

uint64_t xp_rnr_cycles(const struct dpv_xport *x, uint8_t code)
{
	return x->tsc_hz / 100000 * rnr_timer_10us[code & 31];
}

void xp_timer_start(struct dpv_xport *x, struct xp_qp *q)
{
	if (q->timed_idx != XP_TIMED_NONE)
		return;
	q->timed_idx = x->ntimed;
	x->timed[x->ntimed++] = q;
}

void xp_timer_stop(struct dpv_xport *x, struct xp_qp *q)
{
	struct xp_qp *last;

	if (q->timed_idx == XP_TIMED_NONE)
		return;
	last = x->timed[--x->ntimed];
	x->timed[q->timed_idx] = last;
	last->timed_idx = q->timed_idx;
	q->timed_idx = XP_TIMED_NONE;
}

/* One QP's timer: the RNR wait ends, or the ACK timer fires; a QP with nothing
 * outstanding leaves the list (its timer restarts with its next packet). */
static void timer_run(struct dpv_xport *x, struct xp_qp *q, uint64_t now)
{
	const uint8_t st = q->qp.attr.state;
	const bool due = (int64_t)(now - q->deadline) >= 0;

	if (st != DPV_QPS_RTS && st != DPV_QPS_SQD) {
		q->rnr_wait = false;
		xp_timer_stop(x, q);
		return;
	}
	if (q->rnr_wait) {
		if (!due)
			return;
		q->rnr_wait = false;
		q->deadline = now + q->ack_cycles;
		xp_kick(q);
	} else if (q->una == q->psn_hi || q->ack_cycles == 0) {
		xp_timer_stop(x, q);
	} else if (due && q->defer_left > 0 &&
		   dpv_port_tx_room(x->port, q->qp.attr.dst_ip) == 0) {
		/* The port holds the packets back (its TX queue is full, the link drains
		 * slower than it is fed): the wait is ours, not the peer's silence. A link
		 * that never drains still ends the QP, XP_DEFER_MAX timeouts later. */
		q->defer_left--;
		q->deadline = now + q->ack_cycles;
		XP_CNT(x, q, timer_deferred);
	} else if (due) {
		xp_comp_timeout(x, q);
	} else if (now - q->probe_tsc >= q->probe_cycles << q->probes && !q->rd_gap &&
		   (q->psn == q->psn_hi || dpv_wire_psn_diff(q->psn, q->una) >= (int32_t)q->cwnd)) {
		xp_comp_probe(x, q);
	}
}

void dpv_xport_tick(struct dpv_xport *x, uint64_t now)
{
	uint32_t i;

	x->now = now;
	/* From the end: a QP that leaves the list takes the last one's place. */
	for (i = x->ntimed; i-- > 0;)
		timer_run(x, x->timed[i], now);
	if (unlikely(x->cq_overrun))
		xp_cq_overruns(x);
}
