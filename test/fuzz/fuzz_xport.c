/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_xport: frames from a hostile wire into the receive path of the whole transport.
 *
 * Two devices joined by a ring pair, each with a connected RC QP (A's on its own
 * receive queue, B's on a tag-matching SRQ), a second RC pair on a basic SRQ, and a UD
 * QP, a GSI consumer on QP 1 that answers what it gets, memory regions of every access
 * inside guard pages. Each input is a string of
 * steps; a step either builds a frame from fuzzed fields (opcode, QP, a PSN near the
 * one expected, RETH/AETH/DETH/ImmDt, a TMH in the payload, a key of a real region or
 * not) with a valid ICRC, or hands raw bytes to the device, or a frame of a real
 * capture pointed at this run's QPs and regions (the seeds, seeds.py), or makes a
 * device post a real WQE, so requests and responses cross both ways while the fuzzed
 * frames land.
 * The devices are pumped after each step. What must hold: no crash, no byte written
 * outside a region (a guard page faults, and the device's copy that survives the
 * fault is counted and fails the input; the bytes around each region are checked),
 * every mbuf back in its pool at the end of the input. The QPs are taken
 * back to RTS at the start of each input, so an input replays the same way.
 *
 * Built with libFuzzer (clang, -Dfuzz), the transport and wire are compiled in with
 * coverage; in every build replay_main.c feeds it generated inputs, or replays files.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <infiniband/tm_types.h>
#include <rte_eal.h>
#include <rte_ip.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "dpv_xport.h"
#include "dpv_xport_priv.h" /* the expected PSNs: frames near them reach the deep paths */

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define PD 1u
#define XRCD 1u
#define MR_LEN 65536u
#define N_MR 4u
#define GUARD 4096u
#define CANARY 0x5a
#define PSN0 0xfffff0u
#define MAX_STEPS 64u
#define MAX_PAYLOAD 1100u

struct dev {
	struct dpv_port port;
	struct dpv_xport *x;
	struct dpv_mr_table *t;
	struct dpv_cq *cq;
	struct dpv_srq *srq, *tm_srq, *xsrq;  /* xsrq: an XRC SRQ of domain XRCD */
	struct dpv_qp *rc, *rc_srq, *ud;
	struct dpv_qp *xini, *xtgt;           /* XRC: to the peer's target, from its initiator */
	uint8_t *mem[N_MR];       /* inside guard pages */
	struct dpv_mr mr[N_MR];
	uint32_t key[N_MR];
};

static struct dev dv[2];
static bool up;

/* ---- the input ---- */

struct in {
	const uint8_t *p;
	size_t n;
};

static uint32_t take(struct in *in, unsigned int bytes)
{
	uint32_t v = 0;

	for (unsigned int i = 0; i < bytes; i++) {
		v = v << 8 | (in->n ? *in->p : 0);
		if (in->n) {
			in->p++;
			in->n--;
		}
	}
	return v;
}

/* ---- set-up, once per process ---- */

static uint8_t *guarded(size_t len)
{
	uint8_t *m = mmap(NULL, len + 2 * GUARD + 2 * 64, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (m == MAP_FAILED)
		abort();
	mprotect(m, GUARD, PROT_NONE);
	mprotect(m + GUARD + 2 * 64 + len, GUARD, PROT_NONE);
	memset(m + GUARD, CANARY, 2 * 64 + len);
	return m + GUARD + 64; /* 64 canary bytes either side, then the guard pages */
}

/* A region registered as lib/verbs registers one, its key of the real layout. */
static uint32_t mr_reg(struct dpv_mr_table *t, struct dpv_mr *mr, void *buf, size_t len,
		       uint32_t access)
{
	*mr = (struct dpv_mr){.addr = (uintptr_t)buf, .length = len, .access = access, .pd = PD};
	if (dpv_mr_register(t, mr) != 0)
		abort();
	return mr->lkey;
}

static struct dpv_qp *qp_new(struct dev *d, uint8_t type, struct dpv_srq *srq)
{
	struct dpv_qp_init init = {
		.type = type, .pd = PD, .max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = 2,
		.max_recv_sge = 2, .send_cq = d->cq, .recv_cq = d->cq, .srq = srq,
	};
	struct dpv_qp *qp;

	if (dpv_qp_create(d->x, &init, &qp) != 0)
		abort();
	return qp;
}

/* An XRC initiator (a send queue, its CQ) or target (no queue, no CQ) of domain XRCD. */
static struct dpv_qp *xrc_qp_new(struct dev *d, uint8_t role)
{
	const bool tgt = role == DPV_XRC_TGT;
	struct dpv_qp_init init = {
		.type = DPV_QPT_RC, .pd = tgt ? 0 : PD, .max_send_wr = tgt ? 0 : 64,
		.max_send_sge = 2, .send_cq = tgt ? NULL : d->cq, .recv_cq = tgt ? NULL : d->cq,
		.xrc = role, .xrcd = tgt ? XRCD : 0,
	};
	struct dpv_qp *qp;

	if (dpv_qp_create(d->x, &init, &qp) != 0)
		abort();
	return qp;
}

/* At exit: what lives in DPDK memory is not scanned by LeakSanitizer, so what it
 * points to would look lost. */
static void teardown(void)
{
	for (int k = 0; k < 2; k++) {
		struct dev *d = &dv[k];

		dpv_qp_destroy(d->x, d->rc);
		dpv_qp_destroy(d->x, d->rc_srq);
		dpv_qp_destroy(d->x, d->ud);
		dpv_qp_destroy(d->x, d->xini);
		dpv_qp_destroy(d->x, d->xtgt);
		dpv_srq_destroy(d->x, d->xsrq);
		dpv_srq_destroy(d->x, d->srq);
		dpv_srq_destroy(d->x, d->tm_srq);
		dpv_cq_destroy(d->cq);
		dpv_xport_destroy(d->x);
		for (unsigned int i = 0; i < N_MR; i++)
			dpv_mr_deregister(d->t, &d->mr[i]);
		dpv_mr_table_destroy(d->t);
		dpv_port_close(&d->port);
	}
}

/* The GSI's consumer: a MAD with base version 1 is answered once (the copy sent back
 * with the version 2), from inside dpv_xport_rx() as the engine's CM answers. */
static void gsi_echo(void *arg, uint32_t src_ip, const uint8_t *mad)
{
	uint8_t copy[DPV_GSI_MAD_LEN];
	struct dev *d = arg;

	if (mad[0] != 1)
		return;
	memcpy(copy, mad, sizeof(copy));
	copy[0] = 2;
	(void)dpv_xport_gsi_send(d->x, src_ip, copy, sizeof(copy));
}

static void setup(void)
{
	char *argv[] = {"fuzz_xport", "-l", "0", "--no-huge", "--no-shconf", "-m", "256",
			"--no-pci", "--no-telemetry", "--log-level=lib.eal:error", NULL};
	static const uint32_t access[N_MR] = {
		DPV_ACCESS_LOCAL_WRITE,
		DPV_ACCESS_LOCAL_WRITE | DPV_ACCESS_REMOTE_WRITE,
		DPV_ACCESS_LOCAL_WRITE | DPV_ACCESS_REMOTE_READ,
		DPV_ACCESS_LOCAL_WRITE | DPV_ACCESS_REMOTE_WRITE | DPV_ACCESS_REMOTE_READ |
			DPV_ACCESS_REMOTE_ATOMIC,
	};
	struct dpv_tm_config tm = {.max_num_tags = 64, .max_ops = 64, .max_sge = 1};
	uint16_t ida, idb;
	char id[8];

	if (rte_eal_init(10, argv) < 0 ||
	    dpv_port_ring_pair("fz0", (int)rte_socket_id(), &ida, &idb) != 0)
		abort();
	/* A copy into a guard page is then counted (mem_faults, checked below). */
	dpv_xport_fault_guard();
	for (int k = 0; k < 2; k++) {
		struct dev *d = &dv[k];
		struct dpv_srq_init si = {.pd = PD, .max_wr = 256, .max_sge = 2, .lanes = 1};

		snprintf(d->port.name, sizeof(d->port.name), "dpv%d", k);
		d->port.ipv4 = RTE_IPV4(127, 0, 21, 1 + k);
		snprintf(id, sizeof(id), "%u", k == 0 ? ida : idb);
		if (dpv_port_open(&d->port, "ethdev", id, 4095) != 0 ||
		    dpv_mr_table_create(d->port.socket, &d->t) != 0 ||
		    dpv_xport_create(&d->port, d->t, &d->x) != 0 ||
		    dpv_cq_create(d->x, 4096, &d->cq) != 0 ||
		    dpv_srq_create(d->x, &si, &d->srq) != 0)
			abort();
		si.cq = d->cq;
		si.tm = &tm;
		if (dpv_srq_create(d->x, &si, &d->tm_srq) != 0)
			abort();
		for (unsigned int i = 0; i < N_MR; i++) {
			d->mem[i] = guarded(MR_LEN);
			memset(d->mem[i], 0, MR_LEN);
			d->key[i] = mr_reg(d->t, &d->mr[i], d->mem[i], MR_LEN, access[i]);
		}
		d->rc = qp_new(d, DPV_QPT_RC, k == 1 ? d->tm_srq : NULL);
		d->rc_srq = qp_new(d, DPV_QPT_RC, d->srq);
		d->ud = qp_new(d, DPV_QPT_UD, NULL);
		si.tm = NULL;
		si.xrcd = XRCD;
		if (dpv_srq_create(d->x, &si, &d->xsrq) != 0)
			abort();
		d->xini = xrc_qp_new(d, DPV_XRC_INI);
		d->xtgt = xrc_qp_new(d, DPV_XRC_TGT);
		dpv_xport_set_gsi(d->x, gsi_echo, d);
	}
	up = true;
	atexit(teardown);
}

/* ---- per input: back to a known state ---- */

static void rc_connect(struct dev *d, struct dpv_qp *qp, const struct dev *peer,
		       const struct dpv_qp *pqp)
{
	struct dpv_qp_attr a = {.state = DPV_QPS_RESET};

	dpv_qp_modify(d->x, qp, &a, DPV_QP_STATE);
	a.state = DPV_QPS_INIT;
	a.access = DPV_ACCESS_REMOTE_WRITE | DPV_ACCESS_REMOTE_READ | DPV_ACCESS_REMOTE_ATOMIC;
	dpv_qp_modify(d->x, qp, &a, DPV_QP_STATE | DPV_QP_PKEY_INDEX | DPV_QP_PORT |
					 DPV_QP_ACCESS_FLAGS);
	a.state = DPV_QPS_RTR;
	a.path_mtu = 3;
	a.dest_qpn = pqp->qpn;
	a.rq_psn = PSN0;
	a.dst_ip = peer->port.ipv4;
	a.min_rnr_timer = 1;
	a.max_dest_rd_atomic = 4;
	dpv_qp_modify(d->x, qp, &a, DPV_QP_STATE | DPV_QP_AV | DPV_QP_PATH_MTU | DPV_QP_DEST_QPN |
					 DPV_QP_RQ_PSN | DPV_QP_MAX_DEST_RD_ATOMIC |
					 DPV_QP_MIN_RNR_TIMER);
	a.state = DPV_QPS_RTS;
	a.sq_psn = PSN0;
	a.timeout = 10;
	a.retry_cnt = 1;
	a.rnr_retry = 1;
	a.max_rd_atomic = 4;
	dpv_qp_modify(d->x, qp, &a, DPV_QP_STATE | DPV_QP_SQ_PSN | DPV_QP_TIMEOUT |
					 DPV_QP_RETRY_CNT | DPV_QP_RNR_RETRY |
					 DPV_QP_MAX_QP_RD_ATOMIC);
}

static void ud_up(struct dev *d)
{
	struct dpv_qp_attr a = {.state = DPV_QPS_RESET, .qkey = 0x1234};

	dpv_qp_modify(d->x, d->ud, &a, DPV_QP_STATE);
	a.state = DPV_QPS_INIT;
	dpv_qp_modify(d->x, d->ud, &a, DPV_QP_STATE | DPV_QP_PKEY_INDEX | DPV_QP_PORT |
					   DPV_QP_QKEY);
	a.state = DPV_QPS_RTR;
	dpv_qp_modify(d->x, d->ud, &a, DPV_QP_STATE);
	a.state = DPV_QPS_RTS;
	dpv_qp_modify(d->x, d->ud, &a, DPV_QP_STATE | DPV_QP_SQ_PSN);
}

static void post_recvs(struct dev *d, unsigned int n)
{
	struct dpv_rwqe r;

	memset(&r, 0, sizeof(r));
	r.num_sge = 1;
	r.sge[0] = (struct dpv_sge){(uintptr_t)d->mem[0], 4096, d->key[0]};
	for (unsigned int i = 0; i < n; i++) {
		r.wr_id = i;
		if (d->rc->rq != NULL) /* B's is on the TM SRQ */
			dpv_ring_enqueue_burst(d->rc->rq, &r, 1);
		dpv_ring_enqueue_burst(d->ud->rq, &r, 1);
		if (dpv_ring_enqueue_burst(d->srq->lanes.lane[0], &r, 1) == 1)
			__atomic_add_fetch(&d->srq->posted, 1, __ATOMIC_RELAXED);
		if (dpv_ring_enqueue_burst(d->tm_srq->lanes.lane[0], &r, 1) == 1)
			__atomic_add_fetch(&d->tm_srq->posted, 1, __ATOMIC_RELAXED);
		if (dpv_ring_enqueue_burst(d->xsrq->lanes.lane[0], &r, 1) == 1)
			__atomic_add_fetch(&d->xsrq->posted, 1, __ATOMIC_RELAXED);
	}
}

/* Read a device's completions as the poll side does: a TM entry that ends is released. */
static void drain(struct dev *d)
{
	struct dpv_cqe c[64];
	uint32_t n;

	while ((n = dpv_ring_dequeue_burst(d->cq->ring, c, 64)) != 0)
		for (uint32_t i = 0; i < n; i++)
			if (c[i].flags & DPV_WC_F_TM_RELEASE)
				dpv_xport_tm_release(d->x, c[i].srq_id, c[i].tm_handle);
}

static void pump(unsigned int rounds)
{
	struct rte_mbuf *pkts[64];
	uint16_t n;

	for (unsigned int r = 0; r < rounds; r++) {
		for (int k = 0; k < 2; k++) {
			dpv_xport_tx(dv[k].x, 64);
			while ((n = dpv_port_rx(&dv[k].port, pkts, 64)) != 0)
				dpv_xport_rx(dv[k].x, pkts, n);
			dpv_xport_tm_ops(dv[k].x, 64);
			dpv_xport_tick(dv[k].x, rte_get_tsc_cycles());
			drain(&dv[k]);
		}
	}
}

/* A tag in a device's TM SRQ (tags 0..7, exact), its buffer in region 0. */
static void tag_add(struct dev *d, uint64_t tag, uint32_t len)
{
	struct dpv_tm_sge sge = {(uintptr_t)d->mem[0] + 8192, len % 8192, d->key[0]};
	struct dpv_tm_op op = {
		.wr_id = tag, .tag = tag, .mask = DPV_TM_MASK_EXACT, .recv_wr_id = tag,
		.sg_list = &sge, .num_sge = 1, .opcode = DPV_TM_OP_ADD,
	};

	if (dpv_tm_post(d->tm_srq->tm, &op) != 0)
		return;
	op.sg_list = NULL;
	dpv_ring_enqueue_burst(d->tm_srq->tm_ops.lane[0], &op, 1);
	dpv_srq_ops_ring(d->tm_srq);
}

static void reset_all(void)
{
	for (int k = 0; k < 2; k++) {
		rc_connect(&dv[k], dv[k].rc, &dv[1 - k], dv[1 - k].rc);
		rc_connect(&dv[k], dv[k].rc_srq, &dv[1 - k], dv[1 - k].rc_srq);
		rc_connect(&dv[k], dv[k].xini, &dv[1 - k], dv[1 - k].xtgt);
		rc_connect(&dv[k], dv[k].xtgt, &dv[1 - k], dv[1 - k].xini);
		ud_up(&dv[k]);
	}
	pump(4);
	for (int k = 0; k < 2; k++)
		post_recvs(&dv[k], 8);
}

/* ---- the steps ---- */

static const uint8_t opcodes[] = {
	DPV_OP_RC_SEND_FIRST, DPV_OP_RC_SEND_MIDDLE, DPV_OP_RC_SEND_LAST,
	DPV_OP_RC_SEND_LAST_IMM, DPV_OP_RC_SEND_ONLY, DPV_OP_RC_SEND_ONLY_IMM,
	DPV_OP_RC_WRITE_FIRST, DPV_OP_RC_WRITE_MIDDLE, DPV_OP_RC_WRITE_LAST,
	DPV_OP_RC_WRITE_LAST_IMM, DPV_OP_RC_WRITE_ONLY, DPV_OP_RC_WRITE_ONLY_IMM,
	DPV_OP_RC_READ_REQUEST, DPV_OP_RC_READ_RESP_FIRST, DPV_OP_RC_READ_RESP_MIDDLE,
	DPV_OP_RC_READ_RESP_LAST, DPV_OP_RC_READ_RESP_ONLY, DPV_OP_RC_ACK,
	DPV_OP_UD_SEND_ONLY, DPV_OP_UD_SEND_ONLY_IMM, DPV_OP_RC_ATOMIC_ACK,
	DPV_OP_RC_CMP_SWAP, DPV_OP_RC_FETCH_ADD, DPV_OP_RC_SEND_LAST_INV, DPV_OP_RC_SEND_ONLY_INV,
	DPV_OP_RC_ATOMIC_WRITE,
};

static void inject(struct dev *d, const uint8_t *frame, uint32_t len)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(d->port.pool);
	char *buf;

	if (m == NULL)
		return;
	buf = rte_pktmbuf_append(m, (uint16_t)len);
	if (buf == NULL) {
		rte_pktmbuf_free(m);
		return;
	}
	memcpy(buf, frame, len);
	dpv_xport_rx(d->x, &m, 1);
}

/* A frame built from fuzzed fields, to device @p to from its peer. */
static void crafted(struct in *in, int to)
{
	static uint8_t frame[2048], payload[MAX_PAYLOAD];
	struct dev *d = &dv[to], *peer = &dv[1 - to];
	uint32_t sel = take(in, 1), bad, plen, hl;
	struct dpv_qp *qp = sel % 3 == 0 ? d->rc : sel % 3 == 1 ? d->rc_srq : d->ud;
	const struct xp_qp *xq;
	bool xrc;
	struct dpv_wire_pkt p;
	int32_t delta;
	bool gsi;

	/* Both top bits: an XRC QP instead, its target (requests) or initiator
	 * (responses), an RC opcode made XRC's with an XRCETH naming the target's XRC
	 * SRQ, or a number the fuzzer gives. */
	xrc = (sel & 0xc0) == 0xc0;
	if (xrc)
		qp = sel & 0x02 ? d->xtgt : d->xini;
	xq = qp->xport_state;
	memset(&p, 0, sizeof(p));
	memcpy(p.dst_mac, d->port.mac.addr_bytes, 6);
	memcpy(p.src_mac, peer->port.mac.addr_bytes, 6);
	p.src_ip = peer->port.ipv4;
	p.dst_ip = d->port.ipv4;
	p.ttl = 64;
	p.udp_sport = 0xc000;
	/* Most frames are right but for what the fuzzer changes; one in sixteen has a
	 * wrong P_Key, QP number or Q_Key. */
	bad = take(in, 1);
	p.opcode = opcodes[take(in, 1) % sizeof(opcodes)];
	if (xrc && p.opcode < 0x20 && p.opcode != DPV_OP_RC_ATOMIC_WRITE)
		p.opcode |= DPV_WIRE_OP_XRC;
	p.xrc_srqn = xrc && (sel & 0x01) ? take(in, 3) : d->xsrq->xrc_srqn;
	p.pkey = bad < 16 ? (uint16_t)take(in, 2) : DPV_WIRE_PKEY_DEFAULT;
	p.dest_qp = bad >= 16 && bad < 32 ? take(in, 3) : qp->qpn;
	/* A UD frame now and then goes to QP 1, the GSI, with its Q_Key. */
	gsi = qp == d->ud && (sel & 0x08) != 0 && !(bad >= 16 && bad < 32);
	if (gsi)
		p.dest_qp = DPV_GSI_QPN;
	p.ack_req = (sel & 0x20) != 0;
	p.solicited = (sel & 0x10) != 0;
	/* At what the QP expects as responder (requests) or sent as requester, mostly;
	 * else a little before or after it. */
	delta = take(in, 1) < 160 ? 0 : (int8_t)take(in, 1);
	p.psn = (((p.opcode & 0x1f) >= DPV_OP_RC_READ_RESP_FIRST &&
		  (p.opcode & 0x1f) <= DPV_OP_RC_ATOMIC_ACK)
			 ? xq->una
			 : xq->epsn) + (uint32_t)delta;
	p.psn &= DPV_WIRE_PSN_MASK;
	{
		uint32_t r = take(in, 1);
		unsigned int mr = r % N_MR;

		/* Around one of the target's regions (its edges too), or anywhere. */
		p.reth_va = (r & 0x80) ? ((uint64_t)take(in, 4) << 32 | take(in, 4))
				       : (uintptr_t)d->mem[mr] + take(in, 2) * 2u - 64;
		p.reth_rkey = (r & 0x40) ? take(in, 4) : d->key[mr];
		p.reth_len = (r & 0x20) ? take(in, 4) : take(in, 2) * 2u;
		/* An atomic at the same place: aligned or not, as reth_va falls. */
		p.atomic_va = p.reth_va;
		p.atomic_rkey = p.reth_rkey;
		p.atomic_swap_add = take(in, 4);
		p.atomic_compare = take(in, 1) < 128 ? 0 : take(in, 4);
		p.atomic_orig = take(in, 4);
	}
	p.aeth_syndrome = (uint8_t)take(in, 1);
	p.aeth_msn = take(in, 3);
	p.deth_qkey = bad >= 32 && bad < 48 ? take(in, 4) : gsi ? DPV_GSI_QKEY : 0x1234;
	p.deth_src_qp = peer->ud->qpn;
	p.imm = take(in, 4);
	plen = take(in, 2) % MAX_PAYLOAD;
	for (uint32_t i = 0; i < plen; i++)
		payload[i] = (uint8_t)take(in, 1);
	/* A well-formed TMH now and then (B's RC QP is on a TM SRQ): an opcode of the
	 * four, a tag among the few the steps add. */
	if (plen >= 16 && (sel & 0x04)) {
		payload[0] = (uint8_t)(take(in, 1) % 4);
		payload[1] = payload[2] = payload[3] = 0;
		memset(payload + 8, 0, 7);
		payload[15] = (uint8_t)(take(in, 1) % 8);
	}
	if (dpv_wire_frame_len(p.opcode, plen) > sizeof(frame))
		return;
	hl = dpv_wire_write_headers(frame, &p, plen);
	if (hl == 0)
		return;
	memcpy(frame + hl, payload, plen);
	dpv_wire_finish(frame, dpv_wire_frame_len(p.opcode, plen));
	inject(d, frame, dpv_wire_frame_len(p.opcode, plen));
}

/* Raw bytes as a frame: most are refused by the packet checks, some are not. */
static void raw(struct in *in, int to)
{
	static uint8_t frame[2048];
	uint32_t len = take(in, 2) % sizeof(frame);

	for (uint32_t i = 0; i < len; i++)
		frame[i] = (uint8_t)take(in, 1);
	inject(&dv[to], frame, len);
}

/*
 * A frame of a real capture (seeds.py turns dpverbs' captures into such steps), pointed
 * at this run's devices: its MACs, addresses and QP number become the target's (QP
 * chosen by the captured number), an R_Key and address one of the target's regions at
 * the captured offset, a UD frame's Q_Key and source QP the peer's; opcode, PSN,
 * lengths, flags and payload stay as captured, and the ICRC is made right again.
 * What does not parse goes in as it is.
 */
static void captured(struct in *in, int to)
{
	static uint8_t frame[2048], out[2048];
	struct dev *d = &dv[to], *peer = &dv[1 - to];
	uint32_t len = take(in, 2) % sizeof(frame), flen, hl;
	struct dpv_wire_pkt p;
	struct dpv_qp *qp;

	for (uint32_t i = 0; i < len; i++)
		frame[i] = (uint8_t)take(in, 1);
	if (dpv_wire_parse(frame, len, &p) != DPV_WIRE_OK) {
		inject(d, frame, len);
		return;
	}
	if (p.dest_qp == DPV_GSI_QPN) {
		/* A GSI datagram stays one, its Q_Key as captured. */
		qp = NULL;
	} else if (p.opcode == DPV_OP_UD_SEND_ONLY || p.opcode == DPV_OP_UD_SEND_ONLY_IMM) {
		qp = d->ud;
		p.deth_qkey = 0x1234;
		p.deth_src_qp = peer->ud->qpn;
	} else {
		qp = p.dest_qp % 2 == 0 ? d->rc : d->rc_srq;
	}
	memcpy(p.dst_mac, d->port.mac.addr_bytes, 6);
	memcpy(p.src_mac, peer->port.mac.addr_bytes, 6);
	p.src_ip = peer->port.ipv4;
	p.dst_ip = d->port.ipv4;
	p.dest_qp = qp != NULL ? qp->qpn : DPV_GSI_QPN;
	if (dpv_wire_opcode_info(p.opcode) & DPV_WIRE_EXT_RETH) {
		unsigned int mr = p.reth_rkey % N_MR;

		p.reth_rkey = d->key[mr];
		p.reth_va = (uintptr_t)d->mem[mr] + (p.reth_va & (MR_LEN - 1));
	}
	flen = dpv_wire_frame_len(p.opcode, p.payload_len);
	if (flen > sizeof(out))
		return;
	hl = dpv_wire_write_headers(out, &p, p.payload_len);
	if (hl == 0)
		return;
	memcpy(out + hl, frame + p.hdr_len, p.payload_len);
	dpv_wire_finish(out, flen);
	inject(d, out, flen);
}

/* A real WQE on one side, so requests and responses cross while fuzzed frames land. */
static void real(struct in *in, int from)
{
	struct dev *d = &dv[from], *peer = &dv[1 - from];
	uint32_t r = take(in, 1), len = take(in, 2) % 8192;
	struct dpv_swqe w;

	memset(&w, 0, sizeof(w));
	w.wr_id = r;
	w.opcode = (uint8_t)(r % 5);
	w.flags = DPV_WR_F_SIGNALED;
	w.num_sge = 1;
	w.sge[0] = (struct dpv_sge){(uintptr_t)d->mem[3], len, d->key[3]};
	w.length = len;
	w.remote_addr = (uintptr_t)peer->mem[3] + (r & 0x40 ? 100 : 0);
	w.rkey = peer->key[(r >> 3) % N_MR];
	w.imm = r;
	if (dpv_ring_enqueue_burst(d->rc->sq, &w, 1) == 1)
		dpv_qp_doorbell(d->rc);
}

static void check_canaries(void)
{
	for (int k = 0; k < 2; k++)
		for (unsigned int i = 0; i < N_MR; i++)
			for (unsigned int b = 0; b < 64; b++)
				if (dv[k].mem[i][-1 - (int)b] != CANARY ||
				    dv[k].mem[i][MR_LEN + b] != CANARY) {
					fprintf(stderr, "fuzz_xport: a byte outside region %u of "
						"dpv%d was written\n", i, k);
					abort();
				}
}

/* libFuzzer calls it before the first input, so that what the set-up allocates for the
 * whole run is not taken for a leak of an input; replay_main.c does not, and the first
 * input sets up. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	setup();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct in in = {data, size};
	unsigned int steps = 0, free0;

	if (!up)
		setup();
	reset_all();
	free0 = rte_mempool_avail_count(dv[0].port.pool) + rte_mempool_avail_count(dv[1].port.pool);
	while (in.n > 0 && steps++ < MAX_STEPS) {
		uint32_t kind = take(&in, 1);
		int side = kind & 1;

		switch ((kind >> 1) % 8) {
		case 0:
			raw(&in, side);
			break;
		case 1:
			real(&in, side);
			break;
		case 2:
			tag_add(&dv[side], take(&in, 1) % 8, take(&in, 2));
			break;
		case 3:
			captured(&in, side);
			break;
		default:
			crafted(&in, side);
			break;
		}
		pump(2);
	}
	/* Everything sent reaches its end: a QP in error flushes, the others finish or
	 * give up within their (short) retry budget. */
	for (int k = 0; k < 2; k++) {
		struct dpv_qp_attr a = {.state = DPV_QPS_ERR};

		dpv_qp_modify(dv[k].x, dv[k].rc, &a, DPV_QP_STATE);
		dpv_qp_modify(dv[k].x, dv[k].rc_srq, &a, DPV_QP_STATE);
		dpv_qp_modify(dv[k].x, dv[k].ud, &a, DPV_QP_STATE);
		dpv_qp_modify(dv[k].x, dv[k].xini, &a, DPV_QP_STATE);
		dpv_qp_modify(dv[k].x, dv[k].xtgt, &a, DPV_QP_STATE);
	}
	pump(4);
	check_canaries();
	/* No region here is ever unmapped: a copy that faulted (the device survives it,
	 * xp_copy()) touched a guard page, outside every region. */
	for (int k = 0; k < 2; k++)
		if (dpv_xport_stats_ref(dv[k].x)->mem_faults != 0) {
			fprintf(stderr, "fuzz_xport: dpv%d copied into a guard page\n", k);
			abort();
		}
	if (rte_mempool_avail_count(dv[0].port.pool) + rte_mempool_avail_count(dv[1].port.pool) <
	    free0) {
		fprintf(stderr, "fuzz_xport: mbufs kept after the input\n");
		abort();
	}
	return 0;
}
