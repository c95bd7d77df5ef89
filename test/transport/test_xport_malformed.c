/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/transport, malformed and random frames: counted and dropped, never a touch of
 * memory outside a region.
 */
#include <stdlib.h>
#include <string.h>

#include <rte_ip.h>
#include <rte_mbuf.h>

#include "xport_test.h"

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
	fill_pattern(payload, sizeof(payload), 1);
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

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(malformed_frames_are_counted_and_ignored),
		cmocka_unit_test(random_frames_never_touch_memory_outside_a_region),
	};

	return XPORT_RUN_GROUP("transport_malformed", tests, argc, argv) ? 1 : 0;
}
