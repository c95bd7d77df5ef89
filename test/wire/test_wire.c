/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/wire: every opcode builds and parses back to the same fields; the ICRC covers
 * what IBTA A17.8.3 says and nothing it masks; every malformed frame is refused with
 * its reason and never read past its end.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dpv_wire.h"
#include "wire_opcodes.h"

#define FRAME_MAX 9100


static void sample_pkt(struct dpv_wire_pkt *p, uint8_t opcode)
{
	static const uint8_t dmac[6] = {0x02, 0, 0, 0, 0, 0x01};
	static const uint8_t smac[6] = {0x02, 0, 0, 0, 0, 0x02};

	memset(p, 0, sizeof(*p));
	memcpy(p->dst_mac, dmac, 6);
	memcpy(p->src_mac, smac, 6);
	p->src_ip = 0xc0a80001; /* only ever written into buffers, never sent */
	p->dst_ip = 0xc0a80002;
	p->tos = 0x02;
	p->ttl = 64;
	p->ip_id = 0x1234;
	p->udp_sport = 0xc123;
	p->opcode = opcode;
	p->solicited = true;
	p->pkey = DPV_WIRE_PKEY_DEFAULT;
	p->dest_qp = 0xabcdef;
	p->ack_req = true;
	p->psn = 0xfedcba;
	p->reth_va = 0x0123456789abcdefULL;
	p->reth_rkey = 0x11223344;
	p->reth_len = 0x55667788;
	p->aeth_syndrome = DPV_AETH_RNR_NAK | 0x0e;
	p->aeth_msn = 0x00beef;
	p->deth_qkey = 0x11111111;
	p->deth_src_qp = 0x000042;
	p->xrc_srqn = 0x00c0de;
	p->imm = 0xdeadbeef;
	p->atomic_va = 0x7edcba9876543210ULL;
	p->atomic_rkey = 0x99aabbcc;
	p->atomic_swap_add = 0x0102030405060708ULL;
	p->atomic_compare = 0xf1f2f3f4f5f6f7f8ULL;
	p->atomic_orig = 0x8877665544332211ULL;
}

/* Build a whole frame with a counting payload; returns its length. */
static uint32_t build(uint8_t *f, const struct dpv_wire_pkt *p, uint32_t payload_len)
{
	uint32_t hdr = dpv_wire_write_headers(f, p, payload_len);
	uint32_t len = dpv_wire_frame_len(p->opcode, payload_len);
	uint32_t i;

	assert_int_not_equal(hdr, 0);
	for (i = 0; i < payload_len; i++)
		f[hdr + i] = (uint8_t)(i * 7 + 1);
	dpv_wire_finish(f, len);
	return len;
}

static void every_opcode_round_trips_every_field(void **state)
{
	static const uint32_t lens[] = {0, 1, 2, 3, 4, 5, 255, 1024, 4096};
	uint8_t f[FRAME_MAX];
	struct dpv_wire_pkt in, out;
	size_t i, j;

	(void)state;
	for (i = 0; i < sizeof(wire_opcodes); i++) {
		uint8_t op = wire_opcodes[i];
		uint16_t info = dpv_wire_opcode_info(op);

		for (j = 0; j < sizeof(lens) / sizeof(lens[0]); j++) {
			uint32_t plen = lens[j], len;

			if (plen && !(info & DPV_WIRE_EXT_PAYLOAD))
				continue;
			sample_pkt(&in, op);
			len = build(f, &in, plen);
			memset(&out, 0xa5, sizeof(out));
			assert_int_equal(dpv_wire_parse(f, len, &out), DPV_WIRE_OK);
			assert_int_equal(out.opcode, op);
			assert_memory_equal(out.dst_mac, in.dst_mac, 6);
			assert_memory_equal(out.src_mac, in.src_mac, 6);
			assert_int_equal(out.src_ip, in.src_ip);
			assert_int_equal(out.dst_ip, in.dst_ip);
			assert_int_equal(out.tos, in.tos);
			assert_int_equal(out.ttl, in.ttl);
			assert_int_equal(out.udp_sport, in.udp_sport);
			assert_true(out.solicited);
			assert_false(out.mig_req);
			assert_int_equal(out.pkey, in.pkey);
			assert_int_equal(out.dest_qp, in.dest_qp);
			assert_true(out.ack_req);
			assert_int_equal(out.psn, in.psn);
			assert_int_equal(out.pad, (4 - plen % 4) % 4);
			assert_int_equal(out.payload_len, plen);
			assert_int_equal(out.hdr_len, dpv_wire_hdr_len(op));
			if (info & DPV_WIRE_EXT_RETH) {
				assert_true(out.reth_va == in.reth_va);
				assert_int_equal(out.reth_rkey, in.reth_rkey);
				assert_int_equal(out.reth_len, in.reth_len);
			}
			if (info & DPV_WIRE_EXT_AETH) {
				assert_int_equal(out.aeth_syndrome, in.aeth_syndrome);
				assert_int_equal(out.aeth_msn, in.aeth_msn);
			}
			if (info & DPV_WIRE_EXT_ATOMIC) {
				assert_true(out.atomic_va == in.atomic_va);
				assert_int_equal(out.atomic_rkey, in.atomic_rkey);
				assert_true(out.atomic_swap_add == in.atomic_swap_add);
				assert_true(out.atomic_compare == in.atomic_compare);
			}
			if (info & DPV_WIRE_EXT_ATOMIC_ACK)
				assert_true(out.atomic_orig == in.atomic_orig);
			if (info & DPV_WIRE_EXT_DETH) {
				assert_int_equal(out.deth_qkey, in.deth_qkey);
				assert_int_equal(out.deth_src_qp, in.deth_src_qp);
			}
			if (info & DPV_WIRE_EXT_XRCETH)
				assert_int_equal(out.xrc_srqn, in.xrc_srqn);
			/* XRC's requests, and only they, carry the XRCETH. */
			assert_int_equal(!!(info & DPV_WIRE_EXT_XRCETH),
					 DPV_WIRE_OP_TRANSPORT(op) == DPV_WIRE_OP_XRC &&
						 (op < DPV_OP_XRC_READ_RESP_FIRST ||
						  op > DPV_OP_XRC_ATOMIC_ACK));
			if (info & DPV_WIRE_EXT_IMM)
				assert_int_equal(out.imm, in.imm);
			if (plen)
				assert_int_equal(f[out.hdr_len + plen - 1],
						 (uint8_t)((plen - 1) * 7 + 1));
		}
	}
}

static void header_lengths_follow_ibta_table_38(void **state)
{
	const uint32_t base = DPV_WIRE_BTH_OFF + DPV_WIRE_BTH_LEN;

	(void)state;
	assert_int_equal(dpv_wire_hdr_len(DPV_OP_RC_SEND_ONLY), base);
	assert_int_equal(dpv_wire_hdr_len(DPV_OP_RC_SEND_ONLY_IMM), base + 4);
	assert_int_equal(dpv_wire_hdr_len(DPV_OP_RC_WRITE_ONLY_IMM), base + 16 + 4);
	assert_int_equal(dpv_wire_hdr_len(DPV_OP_RC_READ_REQUEST), base + 16);
	assert_int_equal(dpv_wire_hdr_len(DPV_OP_RC_READ_RESP_MIDDLE), base);
	assert_int_equal(dpv_wire_hdr_len(DPV_OP_RC_ACK), base + 4);
	assert_int_equal(dpv_wire_hdr_len(DPV_OP_UD_SEND_ONLY_IMM), base + 8 + 4);
	assert_int_equal(dpv_wire_hdr_len(DPV_OP_RC_CMP_SWAP), base + 28);
	assert_int_equal(dpv_wire_hdr_len(DPV_OP_RC_FETCH_ADD), base + 28);
	assert_int_equal(dpv_wire_hdr_len(DPV_OP_RC_ATOMIC_ACK), base + 4 + 8);
	assert_int_equal(dpv_wire_hdr_len(DPV_OP_XRC_CMP_SWAP), DPV_WIRE_MAX_HDR_LEN);
	assert_int_equal(dpv_wire_hdr_len(DPV_OP_XRC_SEND_ONLY), base + 4);
	assert_int_equal(dpv_wire_hdr_len(DPV_OP_XRC_WRITE_ONLY_IMM), base + 4 + 16 + 4);
	assert_int_equal(dpv_wire_hdr_len(DPV_OP_XRC_READ_REQUEST), base + 4 + 16);
	assert_int_equal(dpv_wire_hdr_len(DPV_OP_XRC_READ_RESP_FIRST), base + 4);
	assert_int_equal(dpv_wire_hdr_len(DPV_OP_XRC_ACK), base + 4);
	assert_int_equal(dpv_wire_hdr_len(0xb5), 0);
	assert_int_equal(dpv_wire_hdr_len(DPV_OP_UC_WRITE_ONLY_IMM), base + 16 + 4);
	assert_int_equal(dpv_wire_hdr_len(DPV_OP_UC_SEND_MIDDLE), base);
	assert_int_equal(dpv_wire_hdr_len(0x15), 0);
	assert_int_equal(dpv_wire_hdr_len(0x2c), 0);
	assert_int_equal(dpv_wire_hdr_len(0x1f), 0);
	assert_int_equal(dpv_wire_frame_len(DPV_OP_RC_ACK, 0), base + 4 + 4);
	assert_int_equal(dpv_wire_frame_len(DPV_OP_RC_SEND_ONLY, 5), base + 5 + 3 + 4);
}

static void builder_refuses_payload_on_opcodes_without_one(void **state)
{
	uint8_t f[FRAME_MAX];
	struct dpv_wire_pkt p;

	(void)state;
	sample_pkt(&p, DPV_OP_RC_ACK);
	assert_int_equal(dpv_wire_write_headers(f, &p, 4), 0);
	sample_pkt(&p, DPV_OP_RC_READ_REQUEST);
	assert_int_equal(dpv_wire_write_headers(f, &p, 1), 0);
	sample_pkt(&p, DPV_OP_RC_FETCH_ADD);
	assert_int_equal(dpv_wire_write_headers(f, &p, 8), 0);
	sample_pkt(&p, DPV_OP_RC_ATOMIC_ACK);
	assert_int_equal(dpv_wire_write_headers(f, &p, 8), 0);
	sample_pkt(&p, 0x1f);
	assert_int_equal(dpv_wire_write_headers(f, &p, 0), 0);
	sample_pkt(&p, DPV_OP_RC_SEND_ONLY);
	assert_int_equal(dpv_wire_write_headers(f, &p, 65536), 0);
}

static void ip_and_udp_headers_are_what_a_kernel_expects(void **state)
{
	uint8_t f[FRAME_MAX];
	struct dpv_wire_pkt p;
	uint32_t len;

	(void)state;
	sample_pkt(&p, DPV_OP_RC_SEND_ONLY);
	len = build(f, &p, 100);
	assert_int_equal(f[12] << 8 | f[13], 0x0800);
	assert_int_equal(f[14], 0x45);
	assert_int_equal(f[16] << 8 | f[17], len - 14);          /* total length */
	assert_int_equal(f[20] & 0x40, 0x40);                    /* DF */
	assert_int_equal(f[23], 17);                             /* UDP */
	assert_int_equal(f[36] << 8 | f[37], 4791);              /* dport */
	assert_int_equal(f[38] << 8 | f[39], len - 34);          /* UDP length */
	assert_int_equal(f[40] << 8 | f[41], 0);                 /* no UDP checksum */
	assert_int_equal(f[43] & 0x0f, 0);                       /* TVer 0 */
	assert_int_equal((f[43] >> 4) & 3, 0);                   /* 100 needs no pad */
}

static void pad_bytes_are_zero_and_counted_in_bth(void **state)
{
	uint8_t f[FRAME_MAX];
	struct dpv_wire_pkt p;
	uint32_t len, hdr;

	(void)state;
	sample_pkt(&p, DPV_OP_RC_SEND_ONLY);
	memset(f, 0xee, sizeof(f));
	len = build(f, &p, 5);
	hdr = dpv_wire_hdr_len(p.opcode);
	assert_int_equal((f[DPV_WIRE_BTH_OFF + 1] >> 4) & 3, 3);
	assert_int_equal(f[hdr + 5], 0);
	assert_int_equal(f[hdr + 6], 0);
	assert_int_equal(f[hdr + 7], 0);
	assert_int_equal(len, hdr + 5 + 3 + 4);
}

static void icrc_covers_every_unmasked_byte(void **state)
{
	uint8_t f[FRAME_MAX], g[FRAME_MAX];
	struct dpv_wire_pkt p, out;
	uint32_t len, i, icrc;

	(void)state;
	sample_pkt(&p, DPV_OP_RC_WRITE_ONLY_IMM);
	len = build(f, &p, 37);
	icrc = dpv_wire_icrc_get(f + len - 4);
	/* Every byte from the IP header up to the ICRC, except those A17.8.3 masks,
	 * changes the ICRC when it changes. */
	for (i = DPV_WIRE_ETH_LEN; i < len - 4; i++) {
		uint32_t st;
		bool masked = i == 15 || i == 22 || i == 24 || i == 25 || i == 40 ||
			      i == 41 || i == DPV_WIRE_BTH_OFF + 4;

		memcpy(g, f, len);
		g[i] ^= 0x01;
		st = dpv_wire_icrc_begin(g);
		st = dpv_wire_crc32(st, g + DPV_WIRE_BTH_OFF + DPV_WIRE_BTH_LEN,
				    len - 4 - DPV_WIRE_BTH_OFF - DPV_WIRE_BTH_LEN);
		if (masked)
			assert_int_equal(dpv_wire_icrc_final(st), icrc);
		else
			assert_int_not_equal(dpv_wire_icrc_final(st), icrc);
	}
	/* ECN marks set by a router leave the packet valid. */
	memcpy(g, f, len);
	g[DPV_WIRE_BTH_OFF + 4] |= 0x80;
	assert_int_equal(dpv_wire_parse(g, len, &out), DPV_WIRE_OK);
	assert_true(out.fecn);
}

static void any_flipped_bit_is_refused(void **state)
{
	uint8_t f[FRAME_MAX], g[FRAME_MAX];
	struct dpv_wire_pkt p, out;
	uint32_t len, i, bit;

	(void)state;
	sample_pkt(&p, DPV_OP_RC_SEND_ONLY_IMM);
	len = build(f, &p, 64);
	for (i = DPV_WIRE_ETH_LEN; i < len; i++) {
		for (bit = 0; bit < 8; bit++) {
			/* Free for routers or unused by RoCEv2 receivers: the BTH ECN byte
			 * (masked in the ICRC) and the UDP checksum (0: none; masked). */
			if (i == DPV_WIRE_BTH_OFF + 4 || i == 40 || i == 41)
				continue;
			memcpy(g, f, len);
			g[i] ^= (uint8_t)(1u << bit);
			assert_int_not_equal(dpv_wire_parse(g, len, &out), DPV_WIRE_OK);
		}
	}
}

static void refusals_name_their_reason(void **state)
{
	uint8_t f[FRAME_MAX], g[FRAME_MAX];
	struct dpv_wire_pkt p, out;
	uint32_t len;

	(void)state;
	sample_pkt(&p, DPV_OP_RC_SEND_ONLY);
	len = build(f, &p, 8);

	memcpy(g, f, len);
	g[12] = 0x86; g[13] = 0xdd; /* IPv6 ethertype */
	assert_int_equal(dpv_wire_parse(g, len, &out), DPV_WIRE_E_NOT_ROCE);

	memcpy(g, f, len);
	g[37] = 0x00; /* dport 4608 */
	assert_int_equal(dpv_wire_parse(g, len, &out), DPV_WIRE_E_NOT_ROCE);

	memcpy(g, f, len);
	g[14] = 0x46; /* IP options */
	assert_int_equal(dpv_wire_parse(g, len, &out), DPV_WIRE_E_IP);

	memcpy(g, f, len);
	g[20] |= 0x20; /* more fragments */
	assert_int_equal(dpv_wire_parse(g, len, &out), DPV_WIRE_E_IP);

	memcpy(g, f, len);
	g[DPV_WIRE_BTH_OFF] = 0x1f; /* reserved RC opcode */
	assert_int_equal(dpv_wire_parse(g, len, &out), DPV_WIRE_E_OPCODE);

	sample_pkt(&p, DPV_OP_RC_ACK);
	len = build(f, &p, 0);
	memcpy(g, f, len);
	g[DPV_WIRE_BTH_OFF + 1] |= 0x01; /* TVer 1 */
	assert_int_equal(dpv_wire_parse(g, len, &out), DPV_WIRE_E_VERSION);

	memcpy(g, f, len);
	g[len - 1] ^= 0xff;
	assert_int_equal(dpv_wire_parse(g, len, &out), DPV_WIRE_E_ICRC);
	assert_string_equal(dpv_wire_strerror(DPV_WIRE_E_ICRC), "bad ICRC");
}

static void every_truncation_is_refused_without_overread(void **state)
{
	uint8_t f[FRAME_MAX];
	struct dpv_wire_pkt p, out;
	uint32_t len, cut;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(wire_opcodes); i++) {
		sample_pkt(&p, wire_opcodes[i]);
		len = build(f, &p, dpv_wire_opcode_info(p.opcode) & DPV_WIRE_EXT_PAYLOAD ? 9 : 0);
		for (cut = 0; cut < len; cut++) {
			/* A heap copy of exactly cut bytes: ASan catches any read past it. */
			uint8_t *g = malloc(cut ? cut : 1);

			assert_non_null(g);
			memcpy(g, f, cut);
			assert_int_not_equal(dpv_wire_parse(g, cut, &out), DPV_WIRE_OK);
			free(g);
		}
		/* Ethernet padding after the IP datagram is ignored. */
		memset(f + len, 0, 8);
		assert_int_equal(dpv_wire_parse(f, len + 8, &out), DPV_WIRE_OK);
	}
}

/* The fields dpv_wire_parse_rx() fills equal dpv_wire_parse()'s; the others keep what
 * @p rx held before. */
static void assert_rx_fields(const struct dpv_wire_pkt *all, const struct dpv_wire_pkt *rx)
{
	struct dpv_wire_pkt want = *all;
	static const uint8_t untouched[6] = {0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5};

	assert_memory_equal(rx->dst_mac, untouched, 6);
	assert_memory_equal(rx->src_mac, untouched, 6);
	assert_int_equal(rx->ttl, 0xa5);
	assert_int_equal(rx->ip_id, 0xa5a5);
	memcpy(want.dst_mac, rx->dst_mac, 6);
	memcpy(want.src_mac, rx->src_mac, 6);
	want.tos = rx->tos;
	want.ttl = rx->ttl;
	want.ip_id = rx->ip_id;
	want.udp_sport = rx->udp_sport;
	/* Byte copies: the bools hold 0xa5, which a load of a bool may not see (UBSan). */
	memcpy(&want.mig_req, &rx->mig_req, sizeof(want.mig_req));
	memcpy(&want.fecn, &rx->fecn, sizeof(want.fecn));
	memcpy(&want.becn, &rx->becn, sizeof(want.becn));
	assert_memory_equal(&want, rx, sizeof(want));
}

static void receive_parse_answers_as_the_full_parse(void **state)
{
	static const uint32_t lens[] = {0, 1, 3, 8, 1024};
	uint8_t f[FRAME_MAX], g[FRAME_MAX];
	struct dpv_wire_pkt in, all, rx;
	uint32_t len, i, bit;
	size_t k, j;

	(void)state;
	for (k = 0; k < sizeof(wire_opcodes); k++) {
		for (j = 0; j < sizeof(lens) / sizeof(lens[0]); j++) {
			if (lens[j] && !(dpv_wire_opcode_info(wire_opcodes[k]) & DPV_WIRE_EXT_PAYLOAD))
				continue;
			sample_pkt(&in, wire_opcodes[k]);
			len = build(f, &in, lens[j]);
			memset(&all, 0xa5, sizeof(all));
			memset(&rx, 0xa5, sizeof(rx));
			assert_int_equal(dpv_wire_parse(f, len, &all), DPV_WIRE_OK);
			assert_int_equal(dpv_wire_parse_rx(f, len, &rx), DPV_WIRE_OK);
			assert_rx_fields(&all, &rx);
		}
	}
	/* Every flipped bit and every truncation of a SEND: the same answer. */
	sample_pkt(&in, DPV_OP_RC_SEND_ONLY);
	len = build(f, &in, 8);
	for (i = 0; i < len; i++) {
		for (bit = 0; bit < 8; bit++) {
			memcpy(g, f, len);
			g[i] ^= (uint8_t)(1u << bit);
			memset(&all, 0xa5, sizeof(all));
			memset(&rx, 0xa5, sizeof(rx));
			assert_int_equal(dpv_wire_parse_rx(g, len, &rx), dpv_wire_parse(g, len, &all));
		}
		assert_int_equal(dpv_wire_parse_rx(f, i, &rx), dpv_wire_parse(f, i, &all));
	}
}

static void icrc_in_pieces_equals_icrc_whole(void **state)
{
	uint8_t f[FRAME_MAX];
	struct dpv_wire_pkt p;
	uint32_t len, start, split, st;

	(void)state;
	sample_pkt(&p, DPV_OP_RC_SEND_FIRST);
	len = build(f, &p, 1024);
	start = DPV_WIRE_BTH_OFF + DPV_WIRE_BTH_LEN;
	for (split = start; split <= len - 4; split += 61) {
		st = dpv_wire_icrc_begin(f);
		st = dpv_wire_crc32(st, f + start, split - start);
		st = dpv_wire_crc32(st, f + split, len - 4 - split);
		assert_int_equal(dpv_wire_icrc_final(st), dpv_wire_icrc_get(f + len - 4));
	}
}

/* The per-packet fields of a frame, changed from sample_pkt()'s. */
static void per_packet(struct dpv_wire_pkt *p, uint32_t k)
{
	p->solicited = k & 1;
	p->ack_req = k & 2;
	p->ip_id = (uint16_t)(0x8000 + k * 977);
	p->psn = (0x00fff0 + k * 4099) & DPV_WIRE_PSN_MASK;
	p->reth_len = k;
	p->aeth_msn = k * 3;
	p->imm = ~k;
}

static void template_writes_what_write_headers_writes(void **state)
{
	static const uint32_t lens[] = {0, 1, 2, 3, 4, 5, 255, 1024, 4096, 65535 - 100, 65535};
	uint8_t a[FRAME_MAX], b[FRAME_MAX];
	struct dpv_wire_tmpl t;
	struct dpv_wire_pkt p;
	uint32_t ha, hb;
	size_t i, j, k;

	(void)state;
	for (k = 0; k < 8; k++) {
		sample_pkt(&p, DPV_OP_RC_SEND_ONLY);
		p.mig_req = k & 4;
		p.fecn = k & 1;
		p.becn = k & 2;
		p.tos = (uint8_t)(k * 37);
		p.ttl = (uint8_t)(255 - k);
		dpv_wire_tmpl_init(&t, &p);
		for (i = 0; i < sizeof(wire_opcodes); i++) {
			for (j = 0; j < sizeof(lens) / sizeof(lens[0]); j++) {
				p.opcode = wire_opcodes[i];
				per_packet(&p, (uint32_t)(i * 16 + j + k));
				memset(a, 0x5a, sizeof(a));
				memset(b, 0xa5, sizeof(b));
				ha = dpv_wire_write_headers(a, &p, lens[j]);
				hb = dpv_wire_tmpl_write(b, &t, &p, lens[j]);
				assert_int_equal(ha, hb);
				if (ha == 0)
					continue;
				assert_int_equal(ha, dpv_wire_hdr_len(p.opcode));
				assert_memory_equal(a, b, ha);
				/* Not a byte past the headers. */
				assert_int_equal(b[hb], 0xa5);
			}
		}
	}
}

static void template_reads_only_per_packet_fields(void **state)
{
	uint8_t a[FRAME_MAX], b[FRAME_MAX];
	struct dpv_wire_pkt conn, other;
	struct dpv_wire_tmpl t;
	struct dpv_wire_pkt p;
	uint32_t plen;
	size_t i;

	(void)state;
	sample_pkt(&conn, DPV_OP_RC_SEND_ONLY);
	dpv_wire_tmpl_init(&t, &conn);
	memset(&other, 0xee, sizeof(other));
	for (i = 0; i < sizeof(wire_opcodes); i++) {
		/* Per-packet fields from one packet, connection fields garbage. */
		sample_pkt(&p, wire_opcodes[i]);
		per_packet(&p, (uint32_t)i);
		memcpy(&other, &p, sizeof(p));
		memset(other.dst_mac, 0xee, 6);
		memset(other.src_mac, 0xee, 6);
		other.src_ip = other.dst_ip = 0xeeeeeeee;
		other.tos = other.ttl = 0xee;
		other.udp_sport = other.pkey = 0xeeee;
		other.dest_qp = 0xeeeeee;
		other.mig_req = other.fecn = other.becn = true;
		plen = dpv_wire_opcode_info(p.opcode) & DPV_WIRE_EXT_PAYLOAD ? 8 : 0;
		assert_int_not_equal(dpv_wire_write_headers(a, &p, plen), 0);
		assert_int_not_equal(dpv_wire_tmpl_write(b, &t, &other, plen), 0);
		assert_memory_equal(a, b, dpv_wire_hdr_len(wire_opcodes[i]));
	}
}

static void frames_from_a_template_parse_back(void **state)
{
	uint8_t f[FRAME_MAX];
	struct dpv_wire_pkt p, out;
	struct dpv_wire_tmpl t;
	uint32_t hl, len, plen;

	(void)state;
	sample_pkt(&p, DPV_OP_RC_WRITE_ONLY);
	dpv_wire_tmpl_init(&t, &p);
	for (plen = 0; plen < 70; plen++) {
		per_packet(&p, plen);
		hl = dpv_wire_tmpl_write(f, &t, &p, plen);
		assert_int_equal(hl, dpv_wire_hdr_len(DPV_OP_RC_WRITE_ONLY));
		memset(f + hl, (int)plen, plen);
		len = dpv_wire_frame_len(p.opcode, plen);
		dpv_wire_finish(f, len);
		assert_int_equal(dpv_wire_parse(f, len, &out), DPV_WIRE_OK);
		assert_int_equal(out.payload_len, plen);
		assert_int_equal(out.psn, p.psn);
		assert_int_equal(out.ip_id, p.ip_id);
		assert_int_equal(out.reth_len, p.reth_len);
	}
}

static void psn_distance_wraps_at_2_24(void **state)
{
	(void)state;
	assert_int_equal(dpv_wire_psn_diff(5, 3), 2);
	assert_int_equal(dpv_wire_psn_diff(3, 5), -2);
	assert_int_equal(dpv_wire_psn_diff(0, 0xffffff), 1);
	assert_int_equal(dpv_wire_psn_diff(0xffffff, 0), -1);
	assert_int_equal(dpv_wire_psn_diff(0x7fffff, 0), 0x7fffff);
	assert_int_equal(dpv_wire_psn_diff(0x800000, 0), -0x800000);
}

static void opcode_names_match_tshark(void **state)
{
	(void)state;
	assert_string_equal(dpv_wire_opcode_name(DPV_OP_RC_SEND_ONLY), "RC Send Only");
	assert_string_equal(dpv_wire_opcode_name(DPV_OP_UD_SEND_ONLY), "UD Send Only");
	assert_string_equal(dpv_wire_opcode_name(DPV_OP_XRC_SEND_ONLY), "XRC Send Only");
	assert_string_equal(dpv_wire_opcode_name(0xff), "unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_opcode_round_trips_every_field),
		cmocka_unit_test(header_lengths_follow_ibta_table_38),
		cmocka_unit_test(builder_refuses_payload_on_opcodes_without_one),
		cmocka_unit_test(ip_and_udp_headers_are_what_a_kernel_expects),
		cmocka_unit_test(pad_bytes_are_zero_and_counted_in_bth),
		cmocka_unit_test(icrc_covers_every_unmasked_byte),
		cmocka_unit_test(any_flipped_bit_is_refused),
		cmocka_unit_test(refusals_name_their_reason),
		cmocka_unit_test(every_truncation_is_refused_without_overread),
		cmocka_unit_test(receive_parse_answers_as_the_full_parse),
		cmocka_unit_test(icrc_in_pieces_equals_icrc_whole),
		cmocka_unit_test(template_writes_what_write_headers_writes),
		cmocka_unit_test(template_reads_only_per_packet_fields),
		cmocka_unit_test(frames_from_a_template_parse_back),
		cmocka_unit_test(psn_distance_wraps_at_2_24),
		cmocka_unit_test(opcode_names_match_tshark),
	};

	return cmocka_run_group_tests_name("wire", tests, NULL, NULL);
}
