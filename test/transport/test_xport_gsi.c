/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/transport, QP 1: GSI datagrams handed to the one registered consumer exactly as
 * sent, both ways; every frame to QP 1 that is not a GSI datagram, or that finds no
 * consumer, dropped and counted once.
 */
#include <string.h>

#include <rte_mbuf.h>

#include "xport_test.h"

#define MAX_GOT 8

struct got {
	int n;
	uint32_t src_ip[MAX_GOT];
	uint8_t mad[MAX_GOT][DPV_GSI_MAD_LEN];
};

static struct got got_a, got_b;

static void on_gsi(void *arg, uint32_t src_ip, const uint8_t *mad)
{
	struct got *g = arg;

	assert_true(g->n < MAX_GOT);
	g->src_ip[g->n] = src_ip;
	memcpy(g->mad[g->n], mad, DPV_GSI_MAD_LEN);
	g->n++;
}

static int setup(void **state)
{
	(void)state;
	memset(&got_a, 0, sizeof(got_a));
	memset(&got_b, 0, sizeof(got_b));
	dpv_xport_set_gsi(xa, on_gsi, &got_a);
	dpv_xport_set_gsi(xb, on_gsi, &got_b);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	dpv_xport_set_gsi(xa, NULL, NULL);
	dpv_xport_set_gsi(xb, NULL, NULL);
	return 0;
}

static void mad_fill(uint8_t *mad, uint8_t seed)
{
	for (uint32_t i = 0; i < DPV_GSI_MAD_LEN; i++)
		mad[i] = (uint8_t)(seed + i * 7);
}

/* Two MADs from A to B and one back: each handed over once, whole, with its sender's
 * address, and counted as sent and received. */
static void gsi_mads_both_ways_reach_the_handler_exactly(void **state)
{
	struct dpv_xport_stats a0 = stats(xa), b0 = stats(xb);
	uint8_t m1[DPV_GSI_MAD_LEN], m2[DPV_GSI_MAD_LEN], m3[DPV_GSI_MAD_LEN];

	(void)state;
	mad_fill(m1, 1);
	mad_fill(m2, 2);
	mad_fill(m3, 3);
	assert_int_equal(dpv_xport_gsi_send(xa, pb.ipv4, m1, sizeof(m1)), 0);
	assert_int_equal(dpv_xport_gsi_send(xa, pb.ipv4, m2, sizeof(m2)), 0);
	assert_int_equal(dpv_xport_gsi_send(xb, pa.ipv4, m3, sizeof(m3)), 0);
	pump(50);
	assert_int_equal(got_b.n, 2);
	assert_memory_equal(got_b.mad[0], m1, DPV_GSI_MAD_LEN);
	assert_memory_equal(got_b.mad[1], m2, DPV_GSI_MAD_LEN);
	assert_int_equal(got_b.src_ip[0], pa.ipv4);
	assert_int_equal(got_b.src_ip[1], pa.ipv4);
	assert_int_equal(got_a.n, 1);
	assert_memory_equal(got_a.mad[0], m3, DPV_GSI_MAD_LEN);
	assert_int_equal(got_a.src_ip[0], pb.ipv4);
	assert_int_equal(stats(xa).tx_gsi - a0.tx_gsi, 2);
	assert_int_equal(stats(xb).tx_gsi - b0.tx_gsi, 1);
	assert_int_equal(stats(xb).rx_gsi - b0.rx_gsi, 2);
	assert_int_equal(stats(xa).rx_gsi - a0.rx_gsi, 1);
	assert_int_equal(stats(xa).rx_gsi_dropped - a0.rx_gsi_dropped, 0);
	assert_int_equal(stats(xb).rx_gsi_dropped - b0.rx_gsi_dropped, 0);
	/* nothing of it looked like a frame for a QP that is not there */
	assert_int_equal(stats(xb).rx_unknown_qp - b0.rx_unknown_qp, 0);
}

/* A MAD to the device's own address comes back to its own handler. */
static void gsi_mad_to_itself_is_received(void **state)
{
	uint8_t m[DPV_GSI_MAD_LEN];

	(void)state;
	mad_fill(m, 9);
	assert_int_equal(dpv_xport_gsi_send(xa, pa.ipv4, m, sizeof(m)), 0);
	pump(5);
	assert_int_equal(got_a.n, 1);
	assert_int_equal(got_a.src_ip[0], pa.ipv4);
	assert_memory_equal(got_a.mad[0], m, DPV_GSI_MAD_LEN);
	assert_int_equal(got_b.n, 0);
}

static void gsi_send_refuses_another_length(void **state)
{
	uint8_t m[DPV_GSI_MAD_LEN + 4] = {0};
	uint64_t tx = stats(xa).tx_gsi;

	(void)state;
	assert_int_equal(dpv_xport_gsi_send(xa, pb.ipv4, m, DPV_GSI_MAD_LEN - 4), EINVAL);
	assert_int_equal(dpv_xport_gsi_send(xa, pb.ipv4, m, DPV_GSI_MAD_LEN + 4), EINVAL);
	assert_int_equal(stats(xa).tx_gsi, tx);
}

/* A frame from A's address to B's QP 1, built as the wire helpers build any. */
static struct rte_mbuf *to_qp1(uint8_t opcode, uint32_t qkey, uint32_t plen)
{
	static uint8_t payload[DPV_GSI_MAD_LEN + 8];
	struct dpv_wire_pkt p;
	struct rte_mbuf *m = rte_pktmbuf_alloc(pa.pool);
	uint32_t flen, hl;
	uint8_t *buf;

	memset(&p, 0, sizeof(p));
	memcpy(p.src_mac, pa.mac.addr_bytes, 6);
	memcpy(p.dst_mac, pb.mac.addr_bytes, 6);
	p.src_ip = pa.ipv4;
	p.dst_ip = pb.ipv4;
	p.ttl = 64;
	p.udp_sport = 0xc000;
	p.opcode = opcode;
	p.pkey = DPV_WIRE_PKEY_DEFAULT;
	p.dest_qp = DPV_GSI_QPN;
	p.deth_qkey = qkey;
	p.deth_src_qp = DPV_GSI_QPN;
	flen = dpv_wire_frame_len(opcode, plen);
	assert_non_null(m);
	buf = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)flen);
	assert_non_null(buf);
	hl = dpv_wire_write_headers(buf, &p, plen);
	assert_int_not_equal(hl, 0);
	memcpy(buf + hl, payload, plen);
	dpv_wire_finish(buf, flen);
	return m;
}

static void rx_b(struct rte_mbuf *m)
{
	dpv_xport_rx(xb, &m, 1);
}

/* Each frame to QP 1 that is not a GSI datagram: dropped, counted once, never
 * handed over; then the same frame made right is handed over. */
static void frames_to_qp1_that_are_not_gsi_are_dropped_and_counted(void **state)
{
	struct dpv_xport_stats b0 = stats(xb), b1;

	(void)state;
	rx_b(to_qp1(DPV_OP_UD_SEND_ONLY, 0x80010001u, DPV_GSI_MAD_LEN));  /* Q_Key */
	rx_b(to_qp1(DPV_OP_UD_SEND_ONLY, 0, DPV_GSI_MAD_LEN));            /* Q_Key */
	rx_b(to_qp1(DPV_OP_UD_SEND_ONLY, DPV_GSI_QKEY, DPV_GSI_MAD_LEN - 4)); /* length */
	rx_b(to_qp1(DPV_OP_UD_SEND_ONLY, DPV_GSI_QKEY, DPV_GSI_MAD_LEN + 4)); /* length */
	rx_b(to_qp1(DPV_OP_UD_SEND_ONLY, DPV_GSI_QKEY, 0));               /* length */
	rx_b(to_qp1(DPV_OP_UD_SEND_ONLY_IMM, DPV_GSI_QKEY, DPV_GSI_MAD_LEN)); /* opcode */
	rx_b(to_qp1(DPV_OP_RC_SEND_ONLY, 0, DPV_GSI_MAD_LEN));            /* opcode */
	rx_b(to_qp1(DPV_OP_UC_SEND_ONLY, 0, DPV_GSI_MAD_LEN));            /* opcode */
	b1 = stats(xb);
	assert_int_equal(b1.rx_gsi_dropped - b0.rx_gsi_dropped, 8);
	assert_int_equal(b1.rx_gsi - b0.rx_gsi, 0);
	assert_int_equal(b1.rx_packets - b0.rx_packets, 8);
	assert_int_equal(b1.rx_unknown_qp - b0.rx_unknown_qp, 0);
	assert_int_equal(got_b.n, 0);
	rx_b(to_qp1(DPV_OP_UD_SEND_ONLY, DPV_GSI_QKEY, DPV_GSI_MAD_LEN));
	assert_int_equal(got_b.n, 1);
	assert_int_equal(stats(xb).rx_gsi - b0.rx_gsi, 1);
	assert_int_equal(stats(xb).rx_gsi_dropped - b0.rx_gsi_dropped, 8);
}

/* With no consumer registered, a good GSI datagram is dropped and counted. */
static void gsi_without_a_handler_is_dropped_and_counted(void **state)
{
	struct dpv_xport_stats b0 = stats(xb);

	(void)state;
	dpv_xport_set_gsi(xb, NULL, NULL);
	rx_b(to_qp1(DPV_OP_UD_SEND_ONLY, DPV_GSI_QKEY, DPV_GSI_MAD_LEN));
	assert_int_equal(stats(xb).rx_gsi_dropped - b0.rx_gsi_dropped, 1);
	assert_int_equal(stats(xb).rx_gsi - b0.rx_gsi, 0);
	assert_int_equal(got_b.n, 0);
}

/* QP numbers 0 and 1 are never an application QP's. */
static void qp_numbers_0_and_1_are_never_drawn(void **state)
{
	struct end e[64];

	(void)state;
	for (int round = 0; round < 4; round++) {
		for (int i = 0; i < 64; i++) {
			end_open(&e[i], xb, DPV_QPT_UD, NULL, NULL);
			assert_true(e[i].qp->qpn >= 2);
		}
		for (int i = 0; i < 64; i++)
			end_close(&e[i]);
	}
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(gsi_mads_both_ways_reach_the_handler_exactly,
						setup, teardown),
		cmocka_unit_test_setup_teardown(gsi_mad_to_itself_is_received, setup, teardown),
		cmocka_unit_test_setup_teardown(gsi_send_refuses_another_length, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			frames_to_qp1_that_are_not_gsi_are_dropped_and_counted, setup, teardown),
		cmocka_unit_test_setup_teardown(gsi_without_a_handler_is_dropped_and_counted,
						setup, teardown),
		cmocka_unit_test(qp_numbers_0_and_1_are_never_drawn),
	};

	return XPORT_RUN_GROUP("transport_gsi", tests, argc, argv) ? 1 : 0;
}
