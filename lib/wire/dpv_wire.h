/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * dpv_wire: RoCEv2 packets (IBTA Annex A17) over Ethernet / IPv4 / UDP 4791.
 *
 * Pure functions on byte buffers: no EAL, no allocation, no state. Builds and parses
 * Ethernet, IPv4, UDP, BTH, RETH, AtomicETH, AETH, AtomicAckETH, DETH, ImmDt and the
 * ICRC, which covers the IP
 * header onwards with the fields routers may change masked to ones (A17.8.3). Every
 * multi-byte field is read and written in network order through memcpy, so the code
 * does not depend on the host's byte order or on alignment. Any thread may call
 * anything.
 */
#ifndef DPV_WIRE_H
#define DPV_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DPV_WIRE_ETH_LEN 14u
#define DPV_WIRE_IPV4_LEN 20u
#define DPV_WIRE_UDP_LEN 8u
#define DPV_WIRE_BTH_LEN 12u
#define DPV_WIRE_RETH_LEN 16u
#define DPV_WIRE_AETH_LEN 4u
#define DPV_WIRE_DETH_LEN 8u
#define DPV_WIRE_XRCETH_LEN 4u      /**< XRCETH: the XRC SRQ number (24 bits) */
#define DPV_WIRE_IMM_LEN 4u
#define DPV_WIRE_ATOMIC_LEN 28u     /**< AtomicETH: VA, R_Key, swap or add, compare */
#define DPV_WIRE_ATOMIC_ACK_LEN 8u  /**< AtomicAckETH: the original remote data */
#define DPV_WIRE_ICRC_LEN 4u
/** Offset of the BTH in a frame. */
#define DPV_WIRE_BTH_OFF (DPV_WIRE_ETH_LEN + DPV_WIRE_IPV4_LEN + DPV_WIRE_UDP_LEN)
/** Largest header stack dpverbs builds: Eth/IPv4/UDP/BTH/XRCETH/AtomicETH (32 bytes:
 *  more than XRCETH/RETH/ImmDt, DETH/ImmDt or AETH/AtomicAckETH). */
#define DPV_WIRE_MAX_HDR_LEN \
	(DPV_WIRE_BTH_OFF + DPV_WIRE_BTH_LEN + DPV_WIRE_XRCETH_LEN + DPV_WIRE_ATOMIC_LEN)
/** The RoCEv2 UDP destination port. */
#define DPV_WIRE_UDP_PORT 4791u
#define DPV_WIRE_ETHERTYPE_IPV4 0x0800u
#define DPV_WIRE_ETHERTYPE_ARP 0x0806u
/** The default partition key, full membership. */
#define DPV_WIRE_PKEY_DEFAULT 0xffffu
/** PSNs are 24-bit. */
#define DPV_WIRE_PSN_MASK 0xffffffu
/** QP numbers are 24-bit. */
#define DPV_WIRE_QPN_MASK 0xffffffu

/** BTH opcodes dpverbs sends and receives (IBTA Table 38). */
enum dpv_wire_opcode {
	DPV_OP_RC_SEND_FIRST = 0x00,
	DPV_OP_RC_SEND_MIDDLE = 0x01,
	DPV_OP_RC_SEND_LAST = 0x02,
	DPV_OP_RC_SEND_LAST_IMM = 0x03,
	DPV_OP_RC_SEND_ONLY = 0x04,
	DPV_OP_RC_SEND_ONLY_IMM = 0x05,
	DPV_OP_RC_WRITE_FIRST = 0x06,
	DPV_OP_RC_WRITE_MIDDLE = 0x07,
	DPV_OP_RC_WRITE_LAST = 0x08,
	DPV_OP_RC_WRITE_LAST_IMM = 0x09,
	DPV_OP_RC_WRITE_ONLY = 0x0a,
	DPV_OP_RC_WRITE_ONLY_IMM = 0x0b,
	DPV_OP_RC_READ_REQUEST = 0x0c,
	DPV_OP_RC_READ_RESP_FIRST = 0x0d,
	DPV_OP_RC_READ_RESP_MIDDLE = 0x0e,
	DPV_OP_RC_READ_RESP_LAST = 0x0f,
	DPV_OP_RC_READ_RESP_ONLY = 0x10,
	DPV_OP_RC_ACK = 0x11,
	DPV_OP_RC_ATOMIC_ACK = 0x12,
	DPV_OP_RC_CMP_SWAP = 0x13,
	DPV_OP_RC_FETCH_ADD = 0x14,
	/* IBTA 9.4.3: the IETH (the R_Key to invalidate) sits where ImmDt would, and has
	 * its size; dpv_wire_pkt.imm holds it. */
	DPV_OP_RC_SEND_LAST_INV = 0x16,
	DPV_OP_RC_SEND_ONLY_INV = 0x17,
	/** IBTA 1.5: a RETH (DMA length 8) and the 8 bytes to store, in one store. */
	DPV_OP_RC_ATOMIC_WRITE = 0x1d,
	/* UC (IBTA 9.7.7): the RC SEND and WRITE opcodes with the UC transport bits. */
	DPV_OP_UC_SEND_FIRST = 0x20,
	DPV_OP_UC_SEND_MIDDLE = 0x21,
	DPV_OP_UC_SEND_LAST = 0x22,
	DPV_OP_UC_SEND_LAST_IMM = 0x23,
	DPV_OP_UC_SEND_ONLY = 0x24,
	DPV_OP_UC_SEND_ONLY_IMM = 0x25,
	DPV_OP_UC_WRITE_FIRST = 0x26,
	DPV_OP_UC_WRITE_MIDDLE = 0x27,
	DPV_OP_UC_WRITE_LAST = 0x28,
	DPV_OP_UC_WRITE_LAST_IMM = 0x29,
	DPV_OP_UC_WRITE_ONLY = 0x2a,
	DPV_OP_UC_WRITE_ONLY_IMM = 0x2b,
	DPV_OP_UD_SEND_ONLY = 0x64,
	DPV_OP_UD_SEND_ONLY_IMM = 0x65,
	/* XRC: the RC opcodes with the XRC transport bits (DPV_WIRE_OP_XRC). */
	DPV_OP_XRC_SEND_FIRST = 0xa0,
	DPV_OP_XRC_SEND_MIDDLE = 0xa1,
	DPV_OP_XRC_SEND_LAST = 0xa2,
	DPV_OP_XRC_SEND_LAST_IMM = 0xa3,
	DPV_OP_XRC_SEND_ONLY = 0xa4,
	DPV_OP_XRC_SEND_ONLY_IMM = 0xa5,
	DPV_OP_XRC_WRITE_FIRST = 0xa6,
	DPV_OP_XRC_WRITE_MIDDLE = 0xa7,
	DPV_OP_XRC_WRITE_LAST = 0xa8,
	DPV_OP_XRC_WRITE_LAST_IMM = 0xa9,
	DPV_OP_XRC_WRITE_ONLY = 0xaa,
	DPV_OP_XRC_WRITE_ONLY_IMM = 0xab,
	DPV_OP_XRC_READ_REQUEST = 0xac,
	DPV_OP_XRC_READ_RESP_FIRST = 0xad,
	DPV_OP_XRC_READ_RESP_MIDDLE = 0xae,
	DPV_OP_XRC_READ_RESP_LAST = 0xaf,
	DPV_OP_XRC_READ_RESP_ONLY = 0xb0,
	DPV_OP_XRC_ACK = 0xb1,
	DPV_OP_XRC_ATOMIC_ACK = 0xb2,
	DPV_OP_XRC_CMP_SWAP = 0xb3,
	DPV_OP_XRC_FETCH_ADD = 0xb4,
	DPV_OP_XRC_SEND_LAST_INV = 0xb6,
	DPV_OP_XRC_SEND_ONLY_INV = 0xb7,
};

/** The transport bits of an opcode (IBTA Table 38: its top three bits). */
#define DPV_WIRE_OP_TRANSPORT(op) ((uint8_t)((op) & 0xe0u))
#define DPV_WIRE_OP_RC 0x00u
#define DPV_WIRE_OP_UC 0x20u
#define DPV_WIRE_OP_UD 0x60u
#define DPV_WIRE_OP_XRC 0xa0u

/** Extension headers an opcode carries (dpv_wire_opcode_info()). */
enum dpv_wire_ext {
	DPV_WIRE_EXT_RETH = 1u << 0,
	DPV_WIRE_EXT_AETH = 1u << 1,
	DPV_WIRE_EXT_DETH = 1u << 2,
	DPV_WIRE_EXT_IMM = 1u << 3,
	DPV_WIRE_EXT_PAYLOAD = 1u << 4, /**< the opcode may carry payload */
	DPV_WIRE_EXT_ATOMIC = 1u << 5,  /**< AtomicETH */
	DPV_WIRE_EXT_ATOMIC_ACK = 1u << 6, /**< AtomicAckETH */
	DPV_WIRE_EXT_VALID = 1u << 7,   /**< the opcode is one dpverbs knows */
	DPV_WIRE_EXT_XRCETH = 1u << 8,  /**< XRCETH (XRC requests) */
};

/** AETH syndromes (IBTA 9.7.5.1.5 / Table 41): the top 3 bits say which kind. */
enum dpv_wire_aeth {
	DPV_AETH_ACK = 0x00,        /**< | credit count (5 bits) */
	DPV_AETH_RNR_NAK = 0x20,    /**< | RNR timer code (5 bits) */
	DPV_AETH_NAK_PSN_SEQ = 0x60,
	DPV_AETH_NAK_INV_REQ = 0x61,
	DPV_AETH_NAK_REM_ACCESS = 0x62,
	DPV_AETH_NAK_REM_OP = 0x63,
	DPV_AETH_NAK_INV_RD_REQ = 0x64,
};

/** Every field of a RoCEv2 packet's headers, host byte order. */
struct dpv_wire_pkt {
	uint8_t dst_mac[6];
	uint8_t src_mac[6];
	uint32_t src_ip;   /**< IPv4, host order */
	uint32_t dst_ip;
	uint8_t tos;       /**< DSCP << 2 | ECN */
	uint8_t ttl;
	uint16_t ip_id;
	uint16_t udp_sport; /**< flow entropy (A17.5.1.2: a hash of the QPs) */
	/* BTH */
	uint8_t opcode;
	bool solicited;
	bool mig_req;
	uint8_t pad;       /**< 0..3 bytes padding the payload to 4 (set by the builder) */
	uint16_t pkey;
	bool fecn;
	bool becn;
	uint32_t dest_qp;  /**< 24 bits */
	bool ack_req;
	uint32_t psn;      /**< 24 bits */
	/* Extension headers, valid when the opcode carries them. */
	uint64_t reth_va;
	uint32_t reth_rkey;
	uint32_t reth_len;
	uint8_t aeth_syndrome;
	uint32_t aeth_msn; /**< 24 bits */
	uint32_t deth_qkey;
	uint32_t deth_src_qp; /**< 24 bits */
	uint32_t xrc_srqn;    /**< XRCETH: the XRC SRQ the request is for (24 bits) */
	uint32_t imm;      /**< ImmDt as a host-order number (verbs hands it big-endian);
	                        the IETH's R_Key for the *_INV opcodes */
	/* AtomicETH (IBTA 9.3.5.2): the VA must be 8-byte aligned (the responder checks). */
	uint64_t atomic_va;
	uint32_t atomic_rkey;
	uint64_t atomic_swap_add; /**< CMP_SWAP: the swap value; FETCH_ADD: the addend */
	uint64_t atomic_compare;  /**< CMP_SWAP: the compare value */
	/* AtomicAckETH (IBTA 9.3.5.3): the remote value before the operation. */
	uint64_t atomic_orig;
	/* Filled by dpv_wire_parse(). */
	uint16_t hdr_len;     /**< bytes from the frame start to the payload */
	uint32_t payload_len; /**< bytes of payload, pad and ICRC excluded */
};

/** Why dpv_wire_parse() refused a frame; each is counted by the device. */
enum dpv_wire_err {
	DPV_WIRE_OK = 0,
	DPV_WIRE_E_SHORT,      /**< shorter than its headers say */
	DPV_WIRE_E_NOT_ROCE,   /**< not IPv4/UDP to port 4791 (not an error: not ours) */
	DPV_WIRE_E_IP,         /**< IPv4 version, header length, fragment or checksum */
	DPV_WIRE_E_LENGTH,     /**< IPv4 and UDP lengths disagree with the frame */
	DPV_WIRE_E_OPCODE,     /**< BTH opcode dpverbs does not know */
	DPV_WIRE_E_VERSION,    /**< BTH TVer not 0 */
	DPV_WIRE_E_ICRC,       /**< ICRC mismatch */
};

/** Extension-header flags of an opcode (enum dpv_wire_ext); 0 for an unknown one. */
uint16_t dpv_wire_opcode_info(uint8_t opcode);

/** Bytes of headers (Ethernet to the last extension header) for an opcode; 0 if unknown. */
uint32_t dpv_wire_hdr_len(uint8_t opcode);

/** A printable name of an opcode, as tshark spells it ("RC Send Only"...). */
const char *dpv_wire_opcode_name(uint8_t opcode);

/**
 * Write the headers of a packet carrying @p payload_len bytes.
 *
 * Fills IPv4 total length, identification and header checksum, UDP length (UDP
 * checksum 0: allowed for RoCEv2 over IPv4), and the BTH pad count. The payload, pad
 * bytes and ICRC are the caller's: write the payload right after the returned header
 * length, then call dpv_wire_finish().
 * @param buf  at least dpv_wire_hdr_len(p->opcode) bytes
 * @param p    header fields (pad is computed, not read)
 * @return the header length; 0 for an unknown opcode or a payload on an opcode
 *         that carries none, or a frame above 65535 bytes.
 */
uint32_t dpv_wire_write_headers(void *buf, const struct dpv_wire_pkt *p, uint32_t payload_len);

/**
 * The headers of one connection's packets, the fields that change from packet to
 * packet left out: built once when a QP's path is known (dpv_wire_tmpl_init()), then
 * each packet's headers are a copy of it and a few stores (dpv_wire_tmpl_write()),
 * the IPv4 checksum finished from a partial sum. A plain value: copy or move it freely.
 */
struct dpv_wire_tmpl {
	uint8_t hdr[DPV_WIRE_BTH_OFF + DPV_WIRE_BTH_LEN]; /**< Ethernet to the BTH */
	uint32_t ip_sum; /**< one's-complement sum of the IPv4 words the template fixes */
};

/**
 * Make a connection's template from the fields of @p p that stay the same for all its
 * packets: the MACs, the IPv4 addresses, TOS and TTL, the UDP source port, and the
 * BTH's P_Key, MigReq, FECN, BECN and destination QP. Its other fields are not read.
 * @param[out] t  the template
 * @param p       the connection's fields
 */
void dpv_wire_tmpl_init(struct dpv_wire_tmpl *t, const struct dpv_wire_pkt *p);

/**
 * Write the headers of a packet from a template: the same bytes as
 * dpv_wire_write_headers() with the template's fields and, from @p p, only those that
 * change per packet: opcode, solicited, ip_id, ack_req, psn and the extension headers
 * the opcode carries. Then write the payload and call dpv_wire_finish() as there.
 * @param buf  at least dpv_wire_hdr_len(p->opcode) bytes
 * @param t    from dpv_wire_tmpl_init()
 * @param p    the per-packet fields
 * @return the header length; 0 where dpv_wire_write_headers() refuses.
 */
uint32_t dpv_wire_tmpl_write(void *buf, const struct dpv_wire_tmpl *t,
			     const struct dpv_wire_pkt *p, uint32_t payload_len);

/**
 * Total frame length of a packet: headers, payload, pad and ICRC.
 */
uint32_t dpv_wire_frame_len(uint8_t opcode, uint32_t payload_len);

/** Pad bytes after @p payload_len bytes of payload (the BTH PadCnt, IBTA 9.2). */
static inline uint32_t dpv_wire_pad_len(uint32_t payload_len)
{
	return (4 - (payload_len & 3)) & 3;
}

/**
 * Compute the ICRC over a contiguous frame and write it after the pad bytes (which
 * it zeroes).
 * @param frame  the frame written by dpv_wire_write_headers() plus payload
 * @param frame_len  dpv_wire_frame_len() of it, ICRC included
 */
void dpv_wire_finish(void *frame, uint32_t frame_len);

/**
 * Start an ICRC over the headers of a frame (IP to the end of the BTH, masked).
 * Continue with dpv_wire_crc32() over the rest (extension headers, payload, pad) in as
 * many pieces as it is stored in, then dpv_wire_icrc_final().
 * @return the running CRC state
 */
uint32_t dpv_wire_icrc_begin(const void *frame);

/**
 * Continue a CRC-32 (IEEE 802.3, reflected) over @p len bytes: PCLMULQDQ folding where
 * the CPU has it, slice-by-8 tables elsewhere (dpv_wire_crc.h), the same result.
 * Calls chain: crc32(crc32(s, a, n), a + n, m) equals crc32(s, a, n + m).
 * @param state  the running state (0xffffffff to start a CRC of its own)
 * @param data   any alignment
 * @return the new state
 */
uint32_t dpv_wire_crc32(uint32_t state, const void *data, size_t len);

/**
 * The ICRC of a contiguous frame, as dpv_wire_finish() stores it and dpv_wire_parse()
 * checks it: the masked headers and everything after them up to the ICRC, in one pass.
 * @param frame      from its Ethernet header
 * @param frame_len  ICRC included; at least the headers to the BTH plus the ICRC
 * @return the value for dpv_wire_icrc_put()
 */
uint32_t dpv_wire_icrc(const void *frame, uint32_t frame_len);

/** The ICRC value from a running state, as dpv_wire_icrc_put() stores it. */
uint32_t dpv_wire_icrc_final(uint32_t state);

/** Store an ICRC value at @p dst in wire order (least significant byte first). */
void dpv_wire_icrc_put(void *dst, uint32_t icrc);

/** Read an ICRC stored in wire order. */
uint32_t dpv_wire_icrc_get(const void *src);

/**
 * Parse and check a frame: Ethernet, IPv4 (version, length, no fragments, checksum),
 * UDP to 4791, BTH (known opcode, TVer 0), its extension headers and the ICRC.
 * @param frame  the frame from its Ethernet header
 * @param len    bytes in the frame (Ethernet padding beyond IPv4 total length is ignored)
 * @param[out] p every header field, hdr_len and payload_len
 * @return DPV_WIRE_OK or why the frame was refused.
 */
enum dpv_wire_err dpv_wire_parse(const void *frame, uint32_t len, struct dpv_wire_pkt *p);

/**
 * dpv_wire_parse() for a receiver that needs only what the transport reads: the same
 * checks, the same answer for every frame, and the same fields filled but for the ones
 * no receiver reads, which are left as they were: dst_mac, src_mac, tos, ttl, ip_id,
 * udp_sport, mig_req, fecn and becn. Anything else the frame holds stays readable in it.
 * @param frame  the frame from its Ethernet header
 * @param len    bytes in the frame
 * @param[out] p the fields but those above, hdr_len and payload_len
 * @return DPV_WIRE_OK or why the frame was refused (as dpv_wire_parse()).
 */
enum dpv_wire_err dpv_wire_parse_rx(const void *frame, uint32_t len, struct dpv_wire_pkt *p);

/** Short words for an enum dpv_wire_err, for counters and logs. */
const char *dpv_wire_strerror(enum dpv_wire_err err);

/** PSN arithmetic modulo 2^24: a - b as a signed distance in -2^23 .. 2^23-1. */
static inline int32_t dpv_wire_psn_diff(uint32_t a, uint32_t b)
{
	return (int32_t)((a - b) << 8) >> 8;
}

#ifdef __cplusplus
}
#endif

#endif /* DPV_WIRE_H */
