/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Writes a pcap of one frame per (opcode, payload length) that lib/wire builds, and on
 * stdout a line per frame with its number, opcode and payload length, for
 * check_pcap.py to compare with what tshark and scapy make of the file.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dpv_pcap.h"
#include "dpv_wire.h"
#include "wire_opcodes.h"

static const uint32_t lens[] = {0, 1, 3, 16, 257, 1024};

int main(int argc, char **argv)
{
	static uint8_t frame[2048];
	struct dpv_wire_pkt p;
	uint32_t n = 0, i, j, k, len, hdr;
	struct dpv_pcap *f;

	if (argc != 2) {
		fprintf(stderr, "usage: %s OUT.pcap\n", argv[0]);
		return 2;
	}
	f = dpv_pcap_open(argv[1]);
	if (f == NULL) {
		perror(argv[1]);
		return 1;
	}
	for (i = 0; i < sizeof(wire_opcodes); i++) {
		for (j = 0; j < sizeof(lens) / sizeof(lens[0]); j++) {
			uint32_t plen = lens[j];

			if (plen && !(dpv_wire_opcode_info(wire_opcodes[i]) & DPV_WIRE_EXT_PAYLOAD))
				continue;
			memset(&p, 0, sizeof(p));
			memcpy(p.dst_mac, "\x02\x00\x00\x00\x00\x02", 6);
			memcpy(p.src_mac, "\x02\x00\x00\x00\x00\x01", 6);
			p.src_ip = 0x7f000001 + 0x100 * 1; /* 127.0.1.1: loopback range */
			p.dst_ip = 0x7f000001 + 0x100 * 2;
			p.ttl = 64;
			p.ip_id = (uint16_t)n;
			p.udp_sport = (uint16_t)(0xc000 | n);
			p.opcode = wire_opcodes[i];
			p.pkey = DPV_WIRE_PKEY_DEFAULT;
			p.dest_qp = 0x11 + n;
			p.ack_req = true;
			p.psn = 0xfffff0 + n;
			p.reth_va = 0x7f0000001000ULL + n;
			p.reth_rkey = 0x1234;
			p.reth_len = plen;
			p.aeth_syndrome = DPV_AETH_ACK | 0x1f;
			p.aeth_msn = n;
			p.deth_qkey = 0x11111111;
			p.deth_src_qp = 0x22;
			p.xrc_srqn = 0x300 + n; /* check_pcap.py reads it from the XRCETH */
			p.imm = 0xcafe0000 + n;
			/* check_pcap.py reads these back from tshark's AtomicETH and
			 * AtomicAckETH fields. */
			p.atomic_va = 0x7f0000002000ULL + 8 * n;
			p.atomic_rkey = 0x5678;
			p.atomic_swap_add = 0x1111111100000000ULL + n;
			p.atomic_compare = 0x2222222200000000ULL + n;
			p.atomic_orig = 0x3333333300000000ULL + n;
			hdr = dpv_wire_write_headers(frame, &p, plen);
			if (hdr == 0) {
				fprintf(stderr, "opcode %#x refused\n", wire_opcodes[i]);
				return 1;
			}
			/* The first two bytes of a payload (with the pad of a 1-byte one)
			 * are 0xd0..0xdf and the next byte or 0: no EtherType, which tshark's
			 * Ethernet-over-InfiniBand heuristic would take them for. */
			for (k = 0; k < plen; k++)
				frame[hdr + k] = (uint8_t)(0xd0 + n % 16 + k);
			len = dpv_wire_frame_len(p.opcode, plen);
			dpv_wire_finish(frame, len);
			if (dpv_pcap_write(f, frame, len, (uint64_t)n * 1000000000u) != 0) {
				perror(argv[1]);
				return 1;
			}
			printf("%u %u %u\n", ++n, wire_opcodes[i], plen);
		}
	}
	if (dpv_pcap_close(f) != 0) {
		perror(argv[1]);
		return 1;
	}
	return 0;
}
