/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RoCEv2 headers and the ICRC (IBTA Vol. 1 ch. 9 for the transport headers, Annex A17
 * for RoCEv2 encapsulation and the ICRC masking of A17.8.3).
 */
#include <string.h>

#include "dpv_wire.h"

#define P DPV_WIRE_EXT_PAYLOAD
#define V DPV_WIRE_EXT_VALID
#define IMM DPV_WIRE_EXT_IMM
#define RETH DPV_WIRE_EXT_RETH
#define AETH DPV_WIRE_EXT_AETH
#define DETH DPV_WIRE_EXT_DETH
#define ATOMIC DPV_WIRE_EXT_ATOMIC
#define ATOMIC_ACK DPV_WIRE_EXT_ATOMIC_ACK
#define XRC DPV_WIRE_EXT_XRCETH

/* IBTA Table 38 (RC, UC, UD and XRC rows dpverbs uses; ATOMIC WRITE from IBTA 1.5):
 * each opcode, the headers it carries and its name as tshark spells it (tshark 4.0 has
 * none for ATOMIC WRITE: "Unknown (29)"). XRC's requests carry the XRCETH, its
 * responses none (IBTA 9.3.6). The tables below are made from this one list. */
#define OPCODES(X) \
	X(DPV_OP_RC_SEND_FIRST, V | P, "RC Send First") \
	X(DPV_OP_RC_SEND_MIDDLE, V | P, "RC Send Middle") \
	X(DPV_OP_RC_SEND_LAST, V | P, "RC Send Last") \
	X(DPV_OP_RC_SEND_LAST_IMM, V | P | IMM, "RC Send Last Immediate") \
	X(DPV_OP_RC_SEND_ONLY, V | P, "RC Send Only") \
	X(DPV_OP_RC_SEND_ONLY_IMM, V | P | IMM, "RC Send Only Immediate") \
	X(DPV_OP_RC_WRITE_FIRST, V | P | RETH, "RC RDMA Write First") \
	X(DPV_OP_RC_WRITE_MIDDLE, V | P, "RC RDMA Write Middle") \
	X(DPV_OP_RC_WRITE_LAST, V | P, "RC RDMA Write Last") \
	X(DPV_OP_RC_WRITE_LAST_IMM, V | P | IMM, "RC RDMA Write Last Immediate") \
	X(DPV_OP_RC_WRITE_ONLY, V | P | RETH, "RC RDMA Write Only") \
	X(DPV_OP_RC_WRITE_ONLY_IMM, V | P | RETH | IMM, "RC RDMA Write Only Immediate") \
	X(DPV_OP_RC_READ_REQUEST, V | RETH, "RC RDMA Read Request") \
	X(DPV_OP_RC_READ_RESP_FIRST, V | P | AETH, "RC RDMA Read Response First") \
	X(DPV_OP_RC_READ_RESP_MIDDLE, V | P, "RC RDMA Read Response Middle") \
	X(DPV_OP_RC_READ_RESP_LAST, V | P | AETH, "RC RDMA Read Response Last") \
	X(DPV_OP_RC_READ_RESP_ONLY, V | P | AETH, "RC RDMA Read Response Only") \
	X(DPV_OP_RC_ACK, V | AETH, "RC Acknowledge") \
	X(DPV_OP_RC_ATOMIC_ACK, V | AETH | ATOMIC_ACK, "RC Atomic Acknowledge") \
	X(DPV_OP_RC_CMP_SWAP, V | ATOMIC, "RC Compare Swap") \
	X(DPV_OP_RC_FETCH_ADD, V | ATOMIC, "RC Fetch Add") \
	X(DPV_OP_RC_SEND_LAST_INV, V | P | IMM, "RC Send Last Invalidate") \
	X(DPV_OP_RC_SEND_ONLY_INV, V | P | IMM, "RC Send Only Invalidate") \
	X(DPV_OP_RC_ATOMIC_WRITE, V | P | RETH, "RC RDMA Atomic Write") \
	X(DPV_OP_UC_SEND_FIRST, V | P, "UC Send First") \
	X(DPV_OP_UC_SEND_MIDDLE, V | P, "UC Send Middle") \
	X(DPV_OP_UC_SEND_LAST, V | P, "UC Send Last") \
	X(DPV_OP_UC_SEND_LAST_IMM, V | P | IMM, "UC Send Last Immediate") \
	X(DPV_OP_UC_SEND_ONLY, V | P, "UC Send Only") \
	X(DPV_OP_UC_SEND_ONLY_IMM, V | P | IMM, "UC Send Only Immediate") \
	X(DPV_OP_UC_WRITE_FIRST, V | P | RETH, "UC RDMA Write First") \
	X(DPV_OP_UC_WRITE_MIDDLE, V | P, "UC RDMA Write Middle") \
	X(DPV_OP_UC_WRITE_LAST, V | P, "UC RDMA Write Last") \
	X(DPV_OP_UC_WRITE_LAST_IMM, V | P | IMM, "UC RDMA Write Last Immediate") \
	X(DPV_OP_UC_WRITE_ONLY, V | P | RETH, "UC RDMA Write Only") \
	X(DPV_OP_UC_WRITE_ONLY_IMM, V | P | RETH | IMM, "UC RDMA Write Only Immediate") \
	X(DPV_OP_UD_SEND_ONLY, V | P | DETH, "UD Send Only") \
	X(DPV_OP_UD_SEND_ONLY_IMM, V | P | DETH | IMM, "UD Send Only Immediate") \
	X(DPV_OP_XRC_SEND_FIRST, V | P | XRC, "XRC Send First") \
	X(DPV_OP_XRC_SEND_MIDDLE, V | P | XRC, "XRC Send Middle") \
	X(DPV_OP_XRC_SEND_LAST, V | P | XRC, "XRC Send Last") \
	X(DPV_OP_XRC_SEND_LAST_IMM, V | P | XRC | IMM, "XRC Send Last Immediate") \
	X(DPV_OP_XRC_SEND_ONLY, V | P | XRC, "XRC Send Only") \
	X(DPV_OP_XRC_SEND_ONLY_IMM, V | P | XRC | IMM, "XRC Send Only Immediate") \
	X(DPV_OP_XRC_WRITE_FIRST, V | P | XRC | RETH, "XRC RDMA Write First") \
	X(DPV_OP_XRC_WRITE_MIDDLE, V | P | XRC, "XRC RDMA Write Middle") \
	X(DPV_OP_XRC_WRITE_LAST, V | P | XRC, "XRC RDMA Write Last") \
	X(DPV_OP_XRC_WRITE_LAST_IMM, V | P | XRC | IMM, "XRC RDMA Write Last Immediate") \
	X(DPV_OP_XRC_WRITE_ONLY, V | P | XRC | RETH, "XRC RDMA Write Only") \
	X(DPV_OP_XRC_WRITE_ONLY_IMM, V | P | XRC | RETH | IMM, "XRC RDMA Write Only Immediate") \
	X(DPV_OP_XRC_READ_REQUEST, V | XRC | RETH, "XRC RDMA Read Request") \
	X(DPV_OP_XRC_READ_RESP_FIRST, V | P | AETH, "XRC RDMA Read Response First") \
	X(DPV_OP_XRC_READ_RESP_MIDDLE, V | P, "XRC RDMA Read Response Middle") \
	X(DPV_OP_XRC_READ_RESP_LAST, V | P | AETH, "XRC RDMA Read Response Last") \
	X(DPV_OP_XRC_READ_RESP_ONLY, V | P | AETH, "XRC RDMA Read Response Only") \
	X(DPV_OP_XRC_ACK, V | AETH, "XRC Acknowledge") \
	X(DPV_OP_XRC_ATOMIC_ACK, V | AETH | ATOMIC_ACK, "XRC Atomic Acknowledge") \
	X(DPV_OP_XRC_CMP_SWAP, V | XRC | ATOMIC, "XRC Compare Swap") \
	X(DPV_OP_XRC_FETCH_ADD, V | XRC | ATOMIC, "XRC Fetch Add") \
	X(DPV_OP_XRC_SEND_LAST_INV, V | P | XRC | IMM, "XRC Send Last Invalidate") \
	X(DPV_OP_XRC_SEND_ONLY_INV, V | P | XRC | IMM, "XRC Send Only Invalidate")

/* Bytes of extension headers the flags of an opcode say it carries. */
#define EXT_LEN(info) \
	(((info) & XRC ? DPV_WIRE_XRCETH_LEN : 0) + ((info) & RETH ? DPV_WIRE_RETH_LEN : 0) + \
	 ((info) & AETH ? DPV_WIRE_AETH_LEN : 0) + \
	 ((info) & DETH ? DPV_WIRE_DETH_LEN : 0) + ((info) & ATOMIC ? DPV_WIRE_ATOMIC_LEN : 0) + \
	 ((info) & ATOMIC_ACK ? DPV_WIRE_ATOMIC_ACK_LEN : 0) + ((info) & IMM ? DPV_WIRE_IMM_LEN : 0))

#define INFO(op, info, name) [op] = (info),
#define HDR_LEN(op, info, name) [op] = DPV_WIRE_BTH_OFF + DPV_WIRE_BTH_LEN + EXT_LEN(info),
#define NAME(op, info, name) [op] = name,
static const uint16_t opcode_info[256] = {OPCODES(INFO)};
/* Ethernet to the last extension header; 0 for an unknown opcode. */
static const uint8_t hdr_len_tab[256] = {OPCODES(HDR_LEN)};
static const char *const opcode_names[256] = {OPCODES(NAME)};
#undef INFO
#undef HDR_LEN
#undef NAME

/* Network order, any alignment: a memcpy of a swapped word, which compilers make one
 * load or store and a byte swap (movbe), whatever the host's byte order. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define BE16(v) ((uint16_t)(v))
#define BE32(v) ((uint32_t)(v))
#else
#define BE16(v) __builtin_bswap16((uint16_t)(v))
#define BE32(v) __builtin_bswap32((uint32_t)(v))
#endif

static inline void put16(uint8_t *p, uint32_t v)
{
	uint16_t w = BE16(v);

	memcpy(p, &w, 2);
}

static inline void put32(uint8_t *p, uint32_t v)
{
	uint32_t w = BE32(v);

	memcpy(p, &w, 4);
}

static inline void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)(v >> 32));
	put32(p + 4, (uint32_t)v);
}

static inline uint16_t get16(const uint8_t *p)
{
	uint16_t w;

	memcpy(&w, p, 2);
	return BE16(w);
}

static inline uint32_t get32(const uint8_t *p)
{
	uint32_t w;

	memcpy(&w, p, 4);
	return BE32(w);
}

static inline uint64_t get64(const uint8_t *p)
{
	uint64_t w;

	memcpy(&w, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	return w;
#else
	return __builtin_bswap64(w);
#endif
}

/* One's-complement sum folded to 16 bits: the 64-bit sum of at most a few 32-bit
 * words to 32 bits with its end-around carry, then the two halves added with theirs
 * (in the upper half of v + v rotated by 16). Adding 32-bit words and folding gives the
 * sum of the 16-bit words (RFC 1071 2(C)). */
static inline uint32_t csum_fold(uint64_t sum)
{
	uint32_t v = (uint32_t)sum + (uint32_t)(sum >> 32);

	v += v < (uint32_t)sum;
	return (v + (v << 16 | v >> 16)) >> 16;
}

/* Whether an IPv4 header's checksum is right: its words sum to 0xffff. The sum is
 * taken in host order, which gives the byte-swapped sum on a little-endian host, and
 * 0xffff swapped is itself (RFC 1071 2(B)). */
static inline uint32_t load32(const uint8_t *p)
{
	uint32_t w;

	memcpy(&w, p, 4);
	return w;
}

static inline bool ipv4_checksum_ok(const uint8_t *ip)
{
	return csum_fold((uint64_t)load32(ip) + load32(ip + 4) + load32(ip + 8) +
			 load32(ip + 12) + load32(ip + 16)) == 0xffffu;
}

uint16_t dpv_wire_opcode_info(uint8_t opcode)
{
	return opcode_info[opcode];
}

const char *dpv_wire_opcode_name(uint8_t opcode)
{
	return opcode_names[opcode] != NULL ? opcode_names[opcode] : "unknown";
}

uint32_t dpv_wire_hdr_len(uint8_t opcode)
{
	return hdr_len_tab[opcode];
}


uint32_t dpv_wire_frame_len(uint8_t opcode, uint32_t payload_len)
{
	return hdr_len_tab[opcode] + payload_len + dpv_wire_pad_len(payload_len) + DPV_WIRE_ICRC_LEN;
}

/* The IP length of a packet, or 0 if dpv_wire_write_headers() refuses it: an unknown
 * opcode, payload on an opcode that carries none, a frame above 65535 bytes. */
static inline uint32_t ip_len_of(uint16_t info, uint32_t hdr, uint32_t payload_len)
{
	uint32_t ip_len = hdr - DPV_WIRE_ETH_LEN + payload_len + dpv_wire_pad_len(payload_len) +
			  DPV_WIRE_ICRC_LEN;

	if (!info || (payload_len && !(info & P)) || payload_len > 65535 || ip_len > 65535)
		return 0;
	return ip_len;
}

/* Extension headers at @p x in the order of IBTA 9.2 (XRCETH or DETH, RETH, AtomicETH,
 * AETH, AtomicAckETH, ImmDt). */
static inline void write_ext(uint8_t *x, uint16_t info, const struct dpv_wire_pkt *p)
{
	/* One test for each group, as in dpv_wire_parse(): a SEND, a WRITE's MIDDLE and
	 * LAST packets, an ACK pass two of them. */
	if (info & (XRC | DETH | RETH | ATOMIC)) {
		if (info & XRC) {
			put32(x, p->xrc_srqn & DPV_WIRE_QPN_MASK);
			x += DPV_WIRE_XRCETH_LEN;
		}
		if (info & DETH) {
			put32(x, p->deth_qkey);
			put32(x + 4, p->deth_src_qp & DPV_WIRE_QPN_MASK);
			x += DPV_WIRE_DETH_LEN;
		}
		if (info & RETH) {
			put64(x, p->reth_va);
			put32(x + 8, p->reth_rkey);
			put32(x + 12, p->reth_len);
			x += DPV_WIRE_RETH_LEN;
		}
		if (info & ATOMIC) {
			put64(x, p->atomic_va);
			put32(x + 8, p->atomic_rkey);
			put64(x + 12, p->atomic_swap_add);
			put64(x + 20, p->atomic_compare);
			x += DPV_WIRE_ATOMIC_LEN;
		}
	}
	if (info & AETH) {
		put32(x, (uint32_t)p->aeth_syndrome << 24 | (p->aeth_msn & 0xffffffu));
		x += DPV_WIRE_AETH_LEN;
	}
	if (info & (ATOMIC_ACK | IMM)) {
		if (info & ATOMIC_ACK) {
			put64(x, p->atomic_orig);
			x += DPV_WIRE_ATOMIC_ACK_LEN;
		}
		if (info & IMM)
			put32(x, p->imm);
	}
}

static inline uint32_t bth_flags(const struct dpv_wire_pkt *p, uint32_t pad)
{
	return (p->solicited ? 0x80u : 0) | pad << 4; /* TVer 0 */
}

uint32_t dpv_wire_write_headers(void *buf, const struct dpv_wire_pkt *p, uint32_t payload_len)
{
	uint16_t info = opcode_info[p->opcode];
	uint8_t *f = buf, *ip = f + DPV_WIRE_ETH_LEN, *udp = ip + DPV_WIRE_IPV4_LEN;
	uint8_t *x = f + DPV_WIRE_BTH_OFF;
	uint32_t hdr = hdr_len_tab[p->opcode], ip_len = ip_len_of(info, hdr, payload_len);
	uint32_t w0, w1, w2;

	if (ip_len == 0)
		return 0;
	memcpy(f, p->dst_mac, 6);
	memcpy(f + 6, p->src_mac, 6);
	put16(f + 12, DPV_WIRE_ETHERTYPE_IPV4);

	/* The checksum is the sum of the words before it is stored. DF: RoCE relies on
	 * path MTU, never on fragments. */
	w0 = 0x45000000u | (uint32_t)p->tos << 16 | ip_len;
	w1 = (uint32_t)p->ip_id << 16 | 0x4000u;
	w2 = (uint32_t)p->ttl << 24 | 17u << 16;
	w2 |= ~csum_fold((uint64_t)w0 + w1 + w2 + p->src_ip + p->dst_ip) & 0xffffu;
	put32(ip, w0);
	put32(ip + 4, w1);
	put32(ip + 8, w2);
	put32(ip + 12, p->src_ip);
	put32(ip + 16, p->dst_ip);

	/* UDP checksum 0: allowed for RoCEv2 over IPv4. */
	put32(udp, (uint32_t)p->udp_sport << 16 | DPV_WIRE_UDP_PORT);
	put32(udp + 4, (ip_len - DPV_WIRE_IPV4_LEN) << 16);

	put32(x, (uint32_t)p->opcode << 24 | (bth_flags(p, dpv_wire_pad_len(payload_len)) |
					      (p->mig_req ? 0x40u : 0)) << 16 | p->pkey);
	put32(x + 4, (p->fecn ? 0x80000000u : 0) | (p->becn ? 0x40000000u : 0) |
			     (p->dest_qp & DPV_WIRE_QPN_MASK));
	put32(x + 8, (p->ack_req ? 0x80000000u : 0) | (p->psn & DPV_WIRE_PSN_MASK));
	write_ext(x + DPV_WIRE_BTH_LEN, info, p);
	return hdr;
}

void dpv_wire_tmpl_init(struct dpv_wire_tmpl *t, const struct dpv_wire_pkt *p)
{
	struct dpv_wire_pkt c = *p;

	/* The headers of an opcode without extension headers, the per-packet fields zero. */
	c.opcode = DPV_OP_RC_SEND_ONLY;
	c.solicited = false;
	c.ip_id = 0;
	c.ack_req = false;
	c.psn = 0;
	dpv_wire_write_headers(t->hdr, &c, 0);
	t->hdr[DPV_WIRE_BTH_OFF] = 0;
	t->hdr[DPV_WIRE_ETH_LEN + 2] = t->hdr[DPV_WIRE_ETH_LEN + 3] = 0;   /* IP length */
	t->hdr[DPV_WIRE_ETH_LEN + 10] = t->hdr[DPV_WIRE_ETH_LEN + 11] = 0; /* checksum */
	t->hdr[DPV_WIRE_BTH_OFF - 4] = t->hdr[DPV_WIRE_BTH_OFF - 3] = 0;   /* UDP length */
	/* Version, header length, TOS, DF, TTL, protocol and the addresses. */
	t->ip_sum = csum_fold((uint64_t)(0x45000000u | (uint32_t)p->tos << 16) + 0x4000u +
			      ((uint32_t)p->ttl << 24 | 17u << 16) + p->src_ip + p->dst_ip);
}

uint32_t dpv_wire_tmpl_write(void *buf, const struct dpv_wire_tmpl *t,
			     const struct dpv_wire_pkt *p, uint32_t payload_len)
{
	/* Read before the first store: @p buf may alias @p p for all the compiler knows. */
	const uint8_t op = p->opcode;
	const uint16_t info = opcode_info[op];
	const uint32_t ip_id = p->ip_id;
	uint8_t *f = buf, *ip = f + DPV_WIRE_ETH_LEN, *x = f + DPV_WIRE_BTH_OFF;
	uint32_t hdr = hdr_len_tab[op], ip_len = ip_len_of(info, hdr, payload_len);

	if (ip_len == 0)
		return 0;
	memcpy(f, t->hdr, sizeof(t->hdr));
	put16(ip + 2, ip_len);
	put16(ip + 4, ip_id);
	put16(ip + 10, ~csum_fold((uint64_t)t->ip_sum + ip_len + (ip_id << 16)));
	put16(x - 4, ip_len - DPV_WIRE_IPV4_LEN);
	x[0] = op;
	x[1] = t->hdr[DPV_WIRE_BTH_OFF + 1] | (uint8_t)bth_flags(p, dpv_wire_pad_len(payload_len));
	put32(x + 8, (p->ack_req ? 0x80000000u : 0) | (p->psn & DPV_WIRE_PSN_MASK));
	write_ext(x + DPV_WIRE_BTH_LEN, info, p);
	return hdr;
}

uint32_t dpv_wire_icrc_final(uint32_t state)
{
	return ~state;
}

static inline void icrc_put(uint8_t *d, uint32_t icrc)
{
	d[0] = (uint8_t)icrc;
	d[1] = (uint8_t)(icrc >> 8);
	d[2] = (uint8_t)(icrc >> 16);
	d[3] = (uint8_t)(icrc >> 24);
}

static inline uint32_t icrc_get(const uint8_t *s)
{
	return (uint32_t)s[0] | (uint32_t)s[1] << 8 | (uint32_t)s[2] << 16 | (uint32_t)s[3] << 24;
}

void dpv_wire_icrc_put(void *dst, uint32_t icrc)
{
	icrc_put(dst, icrc);
}

uint32_t dpv_wire_icrc_get(const void *src)
{
	return icrc_get(src);
}

void dpv_wire_finish(void *frame, uint32_t frame_len)
{
	uint8_t *f = frame;
	uint32_t pad = (f[DPV_WIRE_BTH_OFF + 1] >> 4) & 3;

	memset(f + frame_len - DPV_WIRE_ICRC_LEN - pad, 0, pad);
	icrc_put(f + frame_len - DPV_WIRE_ICRC_LEN, dpv_wire_icrc(f, frame_len));
}

/* Smallest frame with RoCEv2 headers: Ethernet to the BTH, and the ICRC. */
#define MIN_FRAME (DPV_WIRE_BTH_OFF + DPV_WIRE_BTH_LEN + DPV_WIRE_ICRC_LEN)

/* The Ethernet, IPv4 and UDP checks of dpv_wire_parse() one by one, in the order that
 * says why a frame is refused (out of line: the frames framing_ok() passes never come
 * here). @p ip_len gets the IPv4 total length. */
static __attribute__((noinline)) enum dpv_wire_err
check_framing(const uint8_t *f, uint32_t len, uint32_t *ip_len)
{
	const uint8_t *ip = f + DPV_WIRE_ETH_LEN, *udp = ip + DPV_WIRE_IPV4_LEN;

	if (len < DPV_WIRE_ETH_LEN + DPV_WIRE_IPV4_LEN)
		return len >= DPV_WIRE_ETH_LEN && get16(f + 12) != DPV_WIRE_ETHERTYPE_IPV4 ?
			       DPV_WIRE_E_NOT_ROCE : DPV_WIRE_E_SHORT;
	if (get16(f + 12) != DPV_WIRE_ETHERTYPE_IPV4)
		return DPV_WIRE_E_NOT_ROCE;
	if (ip[0] != 0x45 || (get16(ip + 6) & 0x3fff) != 0)
		return DPV_WIRE_E_IP;
	if (ip[9] != 17)
		return DPV_WIRE_E_NOT_ROCE;
	if (!ipv4_checksum_ok(ip))
		return DPV_WIRE_E_IP;
	*ip_len = get16(ip + 2);
	if (*ip_len > len - DPV_WIRE_ETH_LEN)
		return DPV_WIRE_E_SHORT;
	if (*ip_len < DPV_WIRE_IPV4_LEN + DPV_WIRE_UDP_LEN)
		return DPV_WIRE_E_LENGTH;
	if (get16(udp + 2) != DPV_WIRE_UDP_PORT)
		return DPV_WIRE_E_NOT_ROCE;
	if (get16(udp + 4) != *ip_len - DPV_WIRE_IPV4_LEN)
		return DPV_WIRE_E_LENGTH;
	if (DPV_WIRE_ETH_LEN + *ip_len < MIN_FRAME)
		return DPV_WIRE_E_SHORT;
	return DPV_WIRE_OK;
}

/*
 * The same checks for the frame nearly every one is, in three masked compares of
 * words the frame holds anyway (it is at least MIN_FRAME bytes): IPv4 EtherType,
 * version 4 with no options, no fragment, UDP, destination port 4791, the IPv4 and UDP
 * lengths agreeing with each other and with the frame; then the header checksum. A
 * frame that fails any of them goes through check_framing() for its reason.
 */
static inline bool framing_ok(const uint8_t *f, uint32_t len, uint32_t *ip_len)
{
	const uint64_t w12 = get64(f + 12), w20 = get64(f + 20), w36 = get64(f + 36);
	const uint32_t n = (uint32_t)(w12 >> 16) & 0xffffu;

	*ip_len = n;
	return ((w12 & 0xffffff0000000000ull) == 0x0800450000000000ull) &
	       ((w20 & 0x3fff00ff00000000ull) == 0x0000001100000000ull) &
	       ((uint32_t)(w36 >> 32) == (DPV_WIRE_UDP_PORT << 16 | (n - DPV_WIRE_IPV4_LEN))) &
	       (n <= len - DPV_WIRE_ETH_LEN) & (n >= MIN_FRAME - DPV_WIRE_ETH_LEN) &&
	       ipv4_checksum_ok(f + DPV_WIRE_ETH_LEN);
}

/* dpv_wire_parse(), and with @p all false dpv_wire_parse_rx(): the same checks, and
 * the fields a receiving transport reads. Inlined into each, so the test of @p all
 * costs neither anything. */
static inline __attribute__((always_inline)) enum dpv_wire_err
parse(const void *frame, uint32_t len, struct dpv_wire_pkt *p, bool all)
{
	const uint8_t *f = frame, *ip = f + DPV_WIRE_ETH_LEN, *udp = ip + DPV_WIRE_IPV4_LEN;
	const uint8_t *x = f + DPV_WIRE_BTH_OFF;
	uint32_t ip_len, frame_len, hdr, fixed, w;
	enum dpv_wire_err err;
	uint16_t info;

	if (!(len >= MIN_FRAME && framing_ok(f, len, &ip_len))) {
		err = check_framing(f, len, &ip_len);
		if (err != DPV_WIRE_OK)
			return err;
	}
	frame_len = DPV_WIRE_ETH_LEN + ip_len;
	info = opcode_info[x[0]];
	if (!info)
		return DPV_WIRE_E_OPCODE;
	if ((x[1] & 0x0f) != 0)
		return DPV_WIRE_E_VERSION;
	hdr = hdr_len_tab[x[0]];
	p->pad = (x[1] >> 4) & 3;
	fixed = hdr + p->pad + DPV_WIRE_ICRC_LEN;
	if (frame_len < fixed)
		return DPV_WIRE_E_SHORT;
	if (frame_len > fixed && !(info & P))
		return DPV_WIRE_E_LENGTH;

	if (all) {
		memcpy(p->dst_mac, f, 6);
		memcpy(p->src_mac, f + 6, 6);
		p->tos = ip[1];
		p->ip_id = get16(ip + 4);
		p->ttl = ip[8];
		p->udp_sport = get16(udp);
		p->mig_req = x[1] & 0x40;
	}
	p->src_ip = get32(ip + 12);
	p->dst_ip = get32(ip + 16);
	p->opcode = x[0];
	p->solicited = x[1] & 0x80;
	p->pkey = get16(x + 2);
	w = get32(x + 4);
	if (all) {
		p->fecn = w & 0x80000000u;
		p->becn = w & 0x40000000u;
	}
	p->dest_qp = w & DPV_WIRE_QPN_MASK;
	w = get32(x + 8);
	p->ack_req = w & 0x80000000u;
	p->psn = w & DPV_WIRE_PSN_MASK;
	p->hdr_len = (uint16_t)hdr;
	p->payload_len = frame_len - fixed;
	x += DPV_WIRE_BTH_LEN;
	/* One test for each group of extension headers: a SEND, a WRITE's MIDDLE and
	 * LAST packets, an ACK pass two of them. */
	if (info & (XRC | DETH | RETH | ATOMIC)) {
		if (info & XRC) {
			p->xrc_srqn = get32(x) & DPV_WIRE_QPN_MASK;
			x += DPV_WIRE_XRCETH_LEN;
		}
		if (info & DETH) {
			p->deth_qkey = get32(x);
			p->deth_src_qp = get32(x + 4) & DPV_WIRE_QPN_MASK;
			x += DPV_WIRE_DETH_LEN;
		}
		if (info & RETH) {
			p->reth_va = get64(x);
			p->reth_rkey = get32(x + 8);
			p->reth_len = get32(x + 12);
			x += DPV_WIRE_RETH_LEN;
		}
		if (info & ATOMIC) {
			p->atomic_va = get64(x);
			p->atomic_rkey = get32(x + 8);
			p->atomic_swap_add = get64(x + 12);
			p->atomic_compare = get64(x + 20);
			x += DPV_WIRE_ATOMIC_LEN;
		}
	}
	if (info & AETH) {
		w = get32(x);
		p->aeth_syndrome = (uint8_t)(w >> 24);
		p->aeth_msn = w & 0xffffffu;
		x += DPV_WIRE_AETH_LEN;
	}
	if (info & (ATOMIC_ACK | IMM)) {
		if (info & ATOMIC_ACK) {
			p->atomic_orig = get64(x);
			x += DPV_WIRE_ATOMIC_ACK_LEN;
		}
		if (info & IMM)
			p->imm = get32(x);
	}
	/* Last: what the fields need is dead by now, so the call costs no saved registers. */
	return dpv_wire_icrc(f, frame_len) == icrc_get(f + frame_len - DPV_WIRE_ICRC_LEN) ?
		       DPV_WIRE_OK : DPV_WIRE_E_ICRC;
}

enum dpv_wire_err dpv_wire_parse(const void *frame, uint32_t len, struct dpv_wire_pkt *p)
{
	return parse(frame, len, p, true);
}

enum dpv_wire_err dpv_wire_parse_rx(const void *frame, uint32_t len, struct dpv_wire_pkt *p)
{
	return parse(frame, len, p, false);
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
