/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RoCEv2 headers and the ICRC (IBTA Vol. 1 ch. 9 for the transport headers, Annex A17
 * for RoCEv2 encapsulation and the ICRC masking of A17.8.3).
 */
#include <string.h>

#include "dpv_wire.h"

#define P DPV_WIRE_EXT_PAYLOAD
#define V DPV_WIRE_EXT_VALID

/* IBTA Table 38 (RC, UC, UD rows dpverbs uses) and the headers each opcode carries. */
static const uint8_t opcode_info[256] = {
	[DPV_OP_RC_SEND_FIRST] = V | P,
	[DPV_OP_RC_SEND_MIDDLE] = V | P,
	[DPV_OP_RC_SEND_LAST] = V | P,
	[DPV_OP_RC_SEND_LAST_IMM] = V | P | DPV_WIRE_EXT_IMM,
	[DPV_OP_RC_SEND_ONLY] = V | P,
	[DPV_OP_RC_SEND_ONLY_IMM] = V | P | DPV_WIRE_EXT_IMM,
	[DPV_OP_RC_WRITE_FIRST] = V | P | DPV_WIRE_EXT_RETH,
	[DPV_OP_RC_WRITE_MIDDLE] = V | P,
	[DPV_OP_RC_WRITE_LAST] = V | P,
	[DPV_OP_RC_WRITE_LAST_IMM] = V | P | DPV_WIRE_EXT_IMM,
	[DPV_OP_RC_WRITE_ONLY] = V | P | DPV_WIRE_EXT_RETH,
	[DPV_OP_RC_WRITE_ONLY_IMM] = V | P | DPV_WIRE_EXT_RETH | DPV_WIRE_EXT_IMM,
	[DPV_OP_RC_READ_REQUEST] = V | DPV_WIRE_EXT_RETH,
	[DPV_OP_RC_READ_RESP_FIRST] = V | P | DPV_WIRE_EXT_AETH,
	[DPV_OP_RC_READ_RESP_MIDDLE] = V | P,
	[DPV_OP_RC_READ_RESP_LAST] = V | P | DPV_WIRE_EXT_AETH,
	[DPV_OP_RC_READ_RESP_ONLY] = V | P | DPV_WIRE_EXT_AETH,
	[DPV_OP_RC_ACK] = V | DPV_WIRE_EXT_AETH,
	[DPV_OP_RC_ATOMIC_ACK] = V | DPV_WIRE_EXT_AETH | DPV_WIRE_EXT_ATOMIC_ACK,
	[DPV_OP_RC_CMP_SWAP] = V | DPV_WIRE_EXT_ATOMIC,
	[DPV_OP_RC_FETCH_ADD] = V | DPV_WIRE_EXT_ATOMIC,
	[DPV_OP_UC_SEND_FIRST] = V | P,
	[DPV_OP_UC_SEND_MIDDLE] = V | P,
	[DPV_OP_UC_SEND_LAST] = V | P,
	[DPV_OP_UC_SEND_LAST_IMM] = V | P | DPV_WIRE_EXT_IMM,
	[DPV_OP_UC_SEND_ONLY] = V | P,
	[DPV_OP_UC_SEND_ONLY_IMM] = V | P | DPV_WIRE_EXT_IMM,
	[DPV_OP_UC_WRITE_FIRST] = V | P | DPV_WIRE_EXT_RETH,
	[DPV_OP_UC_WRITE_MIDDLE] = V | P,
	[DPV_OP_UC_WRITE_LAST] = V | P,
	[DPV_OP_UC_WRITE_LAST_IMM] = V | P | DPV_WIRE_EXT_IMM,
	[DPV_OP_UC_WRITE_ONLY] = V | P | DPV_WIRE_EXT_RETH,
	[DPV_OP_UC_WRITE_ONLY_IMM] = V | P | DPV_WIRE_EXT_RETH | DPV_WIRE_EXT_IMM,
	[DPV_OP_UD_SEND_ONLY] = V | P | DPV_WIRE_EXT_DETH,
	[DPV_OP_UD_SEND_ONLY_IMM] = V | P | DPV_WIRE_EXT_DETH | DPV_WIRE_EXT_IMM,
};

#undef P
#undef V

static const char *const opcode_names[256] = {
	[DPV_OP_RC_SEND_FIRST] = "RC Send First",
	[DPV_OP_RC_SEND_MIDDLE] = "RC Send Middle",
	[DPV_OP_RC_SEND_LAST] = "RC Send Last",
	[DPV_OP_RC_SEND_LAST_IMM] = "RC Send Last Immediate",
	[DPV_OP_RC_SEND_ONLY] = "RC Send Only",
	[DPV_OP_RC_SEND_ONLY_IMM] = "RC Send Only Immediate",
	[DPV_OP_RC_WRITE_FIRST] = "RC RDMA Write First",
	[DPV_OP_RC_WRITE_MIDDLE] = "RC RDMA Write Middle",
	[DPV_OP_RC_WRITE_LAST] = "RC RDMA Write Last",
	[DPV_OP_RC_WRITE_LAST_IMM] = "RC RDMA Write Last Immediate",
	[DPV_OP_RC_WRITE_ONLY] = "RC RDMA Write Only",
	[DPV_OP_RC_WRITE_ONLY_IMM] = "RC RDMA Write Only Immediate",
	[DPV_OP_RC_READ_REQUEST] = "RC RDMA Read Request",
	[DPV_OP_RC_READ_RESP_FIRST] = "RC RDMA Read Response First",
	[DPV_OP_RC_READ_RESP_MIDDLE] = "RC RDMA Read Response Middle",
	[DPV_OP_RC_READ_RESP_LAST] = "RC RDMA Read Response Last",
	[DPV_OP_RC_READ_RESP_ONLY] = "RC RDMA Read Response Only",
	[DPV_OP_RC_ACK] = "RC Acknowledge",
	[DPV_OP_RC_ATOMIC_ACK] = "RC Atomic Acknowledge",
	[DPV_OP_RC_CMP_SWAP] = "RC Compare Swap",
	[DPV_OP_RC_FETCH_ADD] = "RC Fetch Add",
	[DPV_OP_UC_SEND_FIRST] = "UC Send First",
	[DPV_OP_UC_SEND_MIDDLE] = "UC Send Middle",
	[DPV_OP_UC_SEND_LAST] = "UC Send Last",
	[DPV_OP_UC_SEND_LAST_IMM] = "UC Send Last Immediate",
	[DPV_OP_UC_SEND_ONLY] = "UC Send Only",
	[DPV_OP_UC_SEND_ONLY_IMM] = "UC Send Only Immediate",
	[DPV_OP_UC_WRITE_FIRST] = "UC RDMA Write First",
	[DPV_OP_UC_WRITE_MIDDLE] = "UC RDMA Write Middle",
	[DPV_OP_UC_WRITE_LAST] = "UC RDMA Write Last",
	[DPV_OP_UC_WRITE_LAST_IMM] = "UC RDMA Write Last Immediate",
	[DPV_OP_UC_WRITE_ONLY] = "UC RDMA Write Only",
	[DPV_OP_UC_WRITE_ONLY_IMM] = "UC RDMA Write Only Immediate",
	[DPV_OP_UD_SEND_ONLY] = "UD Send Only",
	[DPV_OP_UD_SEND_ONLY_IMM] = "UD Send Only Immediate",
};

static inline void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void put24(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 16);
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)v;
}

static inline void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p + 2, (uint16_t)v);
}

static inline uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t get24(const uint8_t *p)
{
	return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}

static inline uint32_t get32(const uint8_t *p)
{
	return (uint32_t)get16(p) << 16 | get16(p + 2);
}

static inline void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)(v >> 32));
	put32(p + 4, (uint32_t)v);
}

static inline uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) << 32 | get32(p + 4);
}

static uint16_t ipv4_checksum(const uint8_t *ip)
{
	uint32_t sum = 0;
	unsigned int i;

	for (i = 0; i < DPV_WIRE_IPV4_LEN; i += 2)
		sum += get16(ip + i);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

uint8_t dpv_wire_opcode_info(uint8_t opcode)
{
	return opcode_info[opcode];
}

const char *dpv_wire_opcode_name(uint8_t opcode)
{
	return opcode_names[opcode] != NULL ? opcode_names[opcode] : "unknown";
}

static uint32_t ext_len(uint8_t info)
{
	return (info & DPV_WIRE_EXT_RETH ? DPV_WIRE_RETH_LEN : 0) +
	       (info & DPV_WIRE_EXT_AETH ? DPV_WIRE_AETH_LEN : 0) +
	       (info & DPV_WIRE_EXT_DETH ? DPV_WIRE_DETH_LEN : 0) +
	       (info & DPV_WIRE_EXT_ATOMIC ? DPV_WIRE_ATOMIC_LEN : 0) +
	       (info & DPV_WIRE_EXT_ATOMIC_ACK ? DPV_WIRE_ATOMIC_ACK_LEN : 0) +
	       (info & DPV_WIRE_EXT_IMM ? DPV_WIRE_IMM_LEN : 0);
}

uint32_t dpv_wire_hdr_len(uint8_t opcode)
{
	uint8_t info = opcode_info[opcode];

	return info ? DPV_WIRE_BTH_OFF + DPV_WIRE_BTH_LEN + ext_len(info) : 0;
}

static uint32_t pad_of(uint32_t payload_len)
{
	return (4 - (payload_len & 3)) & 3;
}

uint32_t dpv_wire_frame_len(uint8_t opcode, uint32_t payload_len)
{
	return dpv_wire_hdr_len(opcode) + payload_len + pad_of(payload_len) + DPV_WIRE_ICRC_LEN;
}

uint32_t dpv_wire_write_headers(void *buf, const struct dpv_wire_pkt *p, uint32_t payload_len)
{
	uint8_t info = opcode_info[p->opcode];
	uint8_t *f = buf, *ip, *udp, *x;
	uint32_t hdr = dpv_wire_hdr_len(p->opcode);
	uint32_t frame;

	if (!info || (payload_len && !(info & DPV_WIRE_EXT_PAYLOAD)))
		return 0;
	frame = dpv_wire_frame_len(p->opcode, payload_len);
	if (payload_len > 65535 || frame - DPV_WIRE_ETH_LEN > 65535)
		return 0;

	memcpy(f, p->dst_mac, 6);
	memcpy(f + 6, p->src_mac, 6);
	put16(f + 12, DPV_WIRE_ETHERTYPE_IPV4);

	ip = f + DPV_WIRE_ETH_LEN;
	ip[0] = 0x45;
	ip[1] = p->tos;
	put16(ip + 2, (uint16_t)(frame - DPV_WIRE_ETH_LEN));
	put16(ip + 4, p->ip_id);
	put16(ip + 6, 0x4000); /* DF: RoCE relies on path MTU, never on fragments */
	ip[8] = p->ttl;
	ip[9] = 17;
	put16(ip + 10, 0);
	put32(ip + 12, p->src_ip);
	put32(ip + 16, p->dst_ip);
	put16(ip + 10, ipv4_checksum(ip));

	udp = ip + DPV_WIRE_IPV4_LEN;
	put16(udp, p->udp_sport);
	put16(udp + 2, DPV_WIRE_UDP_PORT);
	put16(udp + 4, (uint16_t)(frame - DPV_WIRE_ETH_LEN - DPV_WIRE_IPV4_LEN));
	put16(udp + 6, 0);

	x = f + DPV_WIRE_BTH_OFF;
	x[0] = p->opcode;
	x[1] = (uint8_t)((p->solicited ? 0x80 : 0) | (p->mig_req ? 0x40 : 0) |
			 pad_of(payload_len) << 4); /* TVer 0 */
	put16(x + 2, p->pkey);
	x[4] = (uint8_t)((p->fecn ? 0x80 : 0) | (p->becn ? 0x40 : 0));
	put24(x + 5, p->dest_qp & DPV_WIRE_QPN_MASK);
	x[8] = p->ack_req ? 0x80 : 0;
	put24(x + 9, p->psn & DPV_WIRE_PSN_MASK);
	x += DPV_WIRE_BTH_LEN;

	/* Extension headers in the order of IBTA 9.2 (DETH, RETH, AtomicETH, AETH,
	 * AtomicAckETH, ImmDt). */
	if (info & DPV_WIRE_EXT_DETH) {
		put32(x, p->deth_qkey);
		x[4] = 0;
		put24(x + 5, p->deth_src_qp & DPV_WIRE_QPN_MASK);
		x += DPV_WIRE_DETH_LEN;
	}
	if (info & DPV_WIRE_EXT_RETH) {
		put32(x, (uint32_t)(p->reth_va >> 32));
		put32(x + 4, (uint32_t)p->reth_va);
		put32(x + 8, p->reth_rkey);
		put32(x + 12, p->reth_len);
		x += DPV_WIRE_RETH_LEN;
	}
	if (info & DPV_WIRE_EXT_ATOMIC) {
		put64(x, p->atomic_va);
		put32(x + 8, p->atomic_rkey);
		put64(x + 12, p->atomic_swap_add);
		put64(x + 20, p->atomic_compare);
		x += DPV_WIRE_ATOMIC_LEN;
	}
	if (info & DPV_WIRE_EXT_AETH) {
		x[0] = p->aeth_syndrome;
		put24(x + 1, p->aeth_msn & 0xffffff);
		x += DPV_WIRE_AETH_LEN;
	}
	if (info & DPV_WIRE_EXT_ATOMIC_ACK) {
		put64(x, p->atomic_orig);
		x += DPV_WIRE_ATOMIC_ACK_LEN;
	}
	if (info & DPV_WIRE_EXT_IMM)
		put32(x, p->imm);
	return hdr;
}

uint32_t dpv_wire_icrc_final(uint32_t state)
{
	return ~state;
}

void dpv_wire_icrc_put(void *dst, uint32_t icrc)
{
	uint8_t *d = dst;

	d[0] = (uint8_t)icrc;
	d[1] = (uint8_t)(icrc >> 8);
	d[2] = (uint8_t)(icrc >> 16);
	d[3] = (uint8_t)(icrc >> 24);
}

uint32_t dpv_wire_icrc_get(const void *src)
{
	const uint8_t *s = src;

	return (uint32_t)s[0] | (uint32_t)s[1] << 8 | (uint32_t)s[2] << 16 | (uint32_t)s[3] << 24;
}

void dpv_wire_finish(void *frame, uint32_t frame_len)
{
	uint8_t *f = frame;
	uint32_t pad = (f[DPV_WIRE_BTH_OFF + 1] >> 4) & 3;

	memset(f + frame_len - DPV_WIRE_ICRC_LEN - pad, 0, pad);
	dpv_wire_icrc_put(f + frame_len - DPV_WIRE_ICRC_LEN, dpv_wire_icrc(f, frame_len));
}

enum dpv_wire_err dpv_wire_parse(const void *frame, uint32_t len, struct dpv_wire_pkt *p)
{
	const uint8_t *f = frame, *ip, *udp, *x;
	uint32_t ip_len, udp_len, frame_len, hdr, fixed;
	uint8_t info;

	if (len < DPV_WIRE_ETH_LEN + DPV_WIRE_IPV4_LEN)
		return len >= DPV_WIRE_ETH_LEN && get16(f + 12) != DPV_WIRE_ETHERTYPE_IPV4 ?
			       DPV_WIRE_E_NOT_ROCE : DPV_WIRE_E_SHORT;
	if (get16(f + 12) != DPV_WIRE_ETHERTYPE_IPV4)
		return DPV_WIRE_E_NOT_ROCE;
	ip = f + DPV_WIRE_ETH_LEN;
	if (ip[0] != 0x45 || (get16(ip + 6) & 0x3fff) != 0)
		return DPV_WIRE_E_IP;
	if (ip[9] != 17)
		return DPV_WIRE_E_NOT_ROCE;
	if (ipv4_checksum(ip) != 0)
		return DPV_WIRE_E_IP;
	ip_len = get16(ip + 2);
	if (ip_len > len - DPV_WIRE_ETH_LEN)
		return DPV_WIRE_E_SHORT;
	if (ip_len < DPV_WIRE_IPV4_LEN + DPV_WIRE_UDP_LEN)
		return DPV_WIRE_E_LENGTH;
	udp = ip + DPV_WIRE_IPV4_LEN;
	if (get16(udp + 2) != DPV_WIRE_UDP_PORT)
		return DPV_WIRE_E_NOT_ROCE;
	udp_len = get16(udp + 4);
	if (udp_len != ip_len - DPV_WIRE_IPV4_LEN)
		return DPV_WIRE_E_LENGTH;
	frame_len = DPV_WIRE_ETH_LEN + ip_len;
	if (frame_len < DPV_WIRE_BTH_OFF + DPV_WIRE_BTH_LEN + DPV_WIRE_ICRC_LEN)
		return DPV_WIRE_E_SHORT;

	x = f + DPV_WIRE_BTH_OFF;
	info = opcode_info[x[0]];
	if (!info)
		return DPV_WIRE_E_OPCODE;
	if ((x[1] & 0x0f) != 0)
		return DPV_WIRE_E_VERSION;
	hdr = DPV_WIRE_BTH_OFF + DPV_WIRE_BTH_LEN + ext_len(info);
	p->pad = (x[1] >> 4) & 3;
	fixed = hdr + p->pad + DPV_WIRE_ICRC_LEN;
	if (frame_len < fixed)
		return DPV_WIRE_E_SHORT;
	if (frame_len > fixed && !(info & DPV_WIRE_EXT_PAYLOAD))
		return DPV_WIRE_E_LENGTH;
	if (dpv_wire_icrc(f, frame_len) != dpv_wire_icrc_get(f + frame_len - DPV_WIRE_ICRC_LEN))
		return DPV_WIRE_E_ICRC;

	memcpy(p->dst_mac, f, 6);
	memcpy(p->src_mac, f + 6, 6);
	p->tos = ip[1];
	p->ip_id = get16(ip + 4);
	p->ttl = ip[8];
	p->src_ip = get32(ip + 12);
	p->dst_ip = get32(ip + 16);
	p->udp_sport = get16(udp);
	p->opcode = x[0];
	p->solicited = x[1] & 0x80;
	p->mig_req = x[1] & 0x40;
	p->pkey = get16(x + 2);
	p->fecn = x[4] & 0x80;
	p->becn = x[4] & 0x40;
	p->dest_qp = get24(x + 5);
	p->ack_req = x[8] & 0x80;
	p->psn = get24(x + 9);
	x += DPV_WIRE_BTH_LEN;
	if (info & DPV_WIRE_EXT_DETH) {
		p->deth_qkey = get32(x);
		p->deth_src_qp = get24(x + 5);
		x += DPV_WIRE_DETH_LEN;
	}
	if (info & DPV_WIRE_EXT_RETH) {
		p->reth_va = (uint64_t)get32(x) << 32 | get32(x + 4);
		p->reth_rkey = get32(x + 8);
		p->reth_len = get32(x + 12);
		x += DPV_WIRE_RETH_LEN;
	}
	if (info & DPV_WIRE_EXT_ATOMIC) {
		p->atomic_va = get64(x);
		p->atomic_rkey = get32(x + 8);
		p->atomic_swap_add = get64(x + 12);
		p->atomic_compare = get64(x + 20);
		x += DPV_WIRE_ATOMIC_LEN;
	}
	if (info & DPV_WIRE_EXT_AETH) {
		p->aeth_syndrome = x[0];
		p->aeth_msn = get24(x + 1);
		x += DPV_WIRE_AETH_LEN;
	}
	if (info & DPV_WIRE_EXT_ATOMIC_ACK) {
		p->atomic_orig = get64(x);
		x += DPV_WIRE_ATOMIC_ACK_LEN;
	}
	if (info & DPV_WIRE_EXT_IMM)
		p->imm = get32(x);
	p->hdr_len = (uint16_t)hdr;
	p->payload_len = frame_len - fixed;
	return DPV_WIRE_OK;
}

const char *dpv_wire_strerror(enum dpv_wire_err err)
{
	switch (err) {
	case DPV_WIRE_OK: return "ok";
	case DPV_WIRE_E_SHORT: return "truncated";
	case DPV_WIRE_E_NOT_ROCE: return "not RoCEv2";
	case DPV_WIRE_E_IP: return "bad IPv4 header";
	case DPV_WIRE_E_LENGTH: return "bad length";
	case DPV_WIRE_E_OPCODE: return "unknown opcode";
	case DPV_WIRE_E_VERSION: return "bad transport version";
	case DPV_WIRE_E_ICRC: return "bad ICRC";
	}
	return "unknown error";
}
