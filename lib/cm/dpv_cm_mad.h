/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * dpv_cm_mad: the communication management MADs of IBTA vol. 1 ch. 12 (12.6, the
 * message formats), as plain structs with host-order fields, packed to and unpacked
 * from the 256-byte MAD a GSI (QP1) datagram carries.
 *
 * A MAD is the 24-byte common header of IBTA 13.4.3 followed by 232 bytes of
 * attribute data laid out by the attribute ID. Every multi-byte field is big-endian;
 * fields narrower than a byte or a word are packed most significant bit first, as the
 * spec's tables draw them (table numbers of IBTA vol. 1 release 1.4). Reserved fields
 * are written as zero and ignored on receipt, as the spec asks of every receiver. Pure functions: no allocation, no state; any thread may call them.
 */
#ifndef DPV_CM_MAD_H
#define DPV_CM_MAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DPV_CM_MAD_LEN 256u      /**< a MAD on a GSI datagram, header included */
#define DPV_CM_MAD_HDR_LEN 24u   /**< the common MAD header (IBTA 13.4.3) */
#define DPV_CM_BASE_VERSION 1u
#define DPV_CM_MGMT_CLASS 0x07u  /**< Communication Management */
#define DPV_CM_CLASS_VERSION 2u
#define DPV_CM_METHOD_SEND 0x03u /**< the only method CM messages use (IBTA 12.6.1) */
/** The Q_Key of the GSI: QP1 accepts only datagrams carrying it (IBTA 13.5.3.2). */
#define DPV_CM_GSI_QKEY 0x80010000u
#define DPV_CM_GSI_QPN 1u

/** Attribute IDs of the CM messages (IBTA 12.6). */
enum dpv_cm_attr {
	DPV_CM_ATTR_REQ = 0x0010,
	DPV_CM_ATTR_MRA = 0x0011,
	DPV_CM_ATTR_REJ = 0x0012,
	DPV_CM_ATTR_REP = 0x0013,
	DPV_CM_ATTR_RTU = 0x0014,
	DPV_CM_ATTR_DREQ = 0x0015,
	DPV_CM_ATTR_DREP = 0x0016,
	DPV_CM_ATTR_SIDR_REQ = 0x0017,
	DPV_CM_ATTR_SIDR_REP = 0x0018,
};

/** Private data each message carries: its bytes after the fixed fields. */
enum dpv_cm_pdata_len {
	DPV_CM_REQ_PDATA_LEN = 92,
	DPV_CM_MRA_PDATA_LEN = 222,
	DPV_CM_REJ_PDATA_LEN = 148,
	DPV_CM_REP_PDATA_LEN = 196,
	DPV_CM_RTU_PDATA_LEN = 224,
	DPV_CM_DREQ_PDATA_LEN = 220,
	DPV_CM_DREP_PDATA_LEN = 224,
	DPV_CM_SIDR_REQ_PDATA_LEN = 216,
	DPV_CM_SIDR_REP_PDATA_LEN = 136,
};
#define DPV_CM_ARI_LEN 72u /**< REJ additional rejection info, SIDR_REP additional info */

/** The Transport Service Type of a REQ. */
enum dpv_cm_transport {
	DPV_CM_TRANSPORT_RC = 0,
	DPV_CM_TRANSPORT_UC = 1,
	DPV_CM_TRANSPORT_RD = 2,
	DPV_CM_TRANSPORT_EXTENDED = 3, /**< see the REQ's extended transport type (XRC: 1) */
};

/** Which message a REJ rejects or an MRA acknowledges. */
enum dpv_cm_msg_ref {
	DPV_CM_REF_REQ = 0,
	DPV_CM_REF_REP = 1,
	DPV_CM_REF_OTHER = 2, /**< REJ: no message (or a LAP); MRA: a LAP */
};

/** REJ reasons (IBTA 12.6.7), with the numbers the wire carries. */
enum dpv_cm_rej_reason {
	DPV_CM_REJ_NO_QP = 1,
	DPV_CM_REJ_NO_EEC = 2,
	DPV_CM_REJ_NO_RESOURCES = 3,
	DPV_CM_REJ_TIMEOUT = 4,
	DPV_CM_REJ_UNSUPPORTED = 5,
	DPV_CM_REJ_INVALID_COMM_ID = 6,
	DPV_CM_REJ_INVALID_COMM_INSTANCE = 7,
	DPV_CM_REJ_INVALID_SERVICE_ID = 8,
	DPV_CM_REJ_INVALID_TRANSPORT_TYPE = 9,
	DPV_CM_REJ_STALE_CONN = 10,
	DPV_CM_REJ_RDC_NOT_EXIST = 11,
	DPV_CM_REJ_INVALID_GID = 12,
	DPV_CM_REJ_INVALID_LID = 13,
	DPV_CM_REJ_INVALID_SL = 14,
	DPV_CM_REJ_INVALID_TRAFFIC_CLASS = 15,
	DPV_CM_REJ_INVALID_HOP_LIMIT = 16,
	DPV_CM_REJ_INVALID_PACKET_RATE = 17,
	DPV_CM_REJ_INVALID_ALT_GID = 18,
	DPV_CM_REJ_INVALID_ALT_LID = 19,
	DPV_CM_REJ_INVALID_ALT_SL = 20,
	DPV_CM_REJ_INVALID_ALT_TRAFFIC_CLASS = 21,
	DPV_CM_REJ_INVALID_ALT_HOP_LIMIT = 22,
	DPV_CM_REJ_INVALID_ALT_PACKET_RATE = 23,
	DPV_CM_REJ_PORT_CM_REDIRECT = 24,
	DPV_CM_REJ_PORT_REDIRECT = 25,
	DPV_CM_REJ_INVALID_MTU = 26,
	DPV_CM_REJ_INSUFFICIENT_RESP_RESOURCES = 27,
	DPV_CM_REJ_CONSUMER_DEFINED = 28,
	DPV_CM_REJ_INVALID_RNR_RETRY = 29,
	DPV_CM_REJ_DUPLICATE_LOCAL_COMM_ID = 30,
	DPV_CM_REJ_INVALID_CLASS_VERSION = 31,
	DPV_CM_REJ_INVALID_FLOW_LABEL = 32,
	DPV_CM_REJ_INVALID_ALT_FLOW_LABEL = 33,
	DPV_CM_REJ_VENDOR_OPTION_NOT_SUPPORTED = 35,
};

/** SIDR_REP status (IBTA 12.11). */
enum dpv_cm_sidr_status {
	DPV_CM_SIDR_SUCCESS = 0,
	DPV_CM_SIDR_UNSUPPORTED = 1, /**< no such service ID */
	DPV_CM_SIDR_REJECT = 2,
	DPV_CM_SIDR_NO_QP = 3,
	DPV_CM_SIDR_REDIRECT = 4,
	DPV_CM_SIDR_UNSUPPORTED_VERSION = 5,
};

/** The common MAD header (IBTA 13.4.3); unpack fills it, pack writes its own version,
 *  class and method and takes the rest from here. */
struct dpv_cm_mad_hdr {
	uint8_t base_version;
	uint8_t mgmt_class;
	uint8_t class_version;
	uint8_t method;
	uint16_t status;
	uint16_t class_specific;
	uint64_t tid;       /**< transaction ID: the same in every retry of a message */
	uint16_t attr_id;   /**< enum dpv_cm_attr */
	uint32_t attr_mod;
};

/** A path of a REQ (primary or alternate). For RoCEv2 the GIDs are IPv4-mapped
 *  addresses (::ffff:a.b.c.d) and the LIDs 0. */
struct dpv_cm_path {
	uint16_t local_lid;
	uint16_t remote_lid;
	uint8_t local_gid[16];
	uint8_t remote_gid[16];
	uint32_t flow_label;     /**< 20 bits */
	uint8_t packet_rate;     /**< 6 bits */
	uint8_t traffic_class;
	uint8_t hop_limit;
	uint8_t sl;              /**< 4 bits */
	bool subnet_local;
	uint8_t local_ack_timeout; /**< 5 bits: 4.096 us * 2^t */
};

/** REQ (IBTA 12.6.5, Table 106). */
struct dpv_cm_req {
	uint32_t local_comm_id;
	uint64_t service_id;
	uint64_t local_ca_guid;
	uint32_t local_qkey;
	uint32_t local_qpn;          /**< 24 bits */
	uint8_t responder_resources;
	uint32_t local_eecn;         /**< 24 bits */
	uint8_t initiator_depth;
	uint32_t remote_eecn;        /**< 24 bits */
	uint8_t remote_cm_response_timeout; /**< 5 bits */
	uint8_t transport;           /**< 2 bits: enum dpv_cm_transport */
	bool end_to_end_flow_control;
	uint32_t starting_psn;       /**< 24 bits */
	uint8_t local_cm_response_timeout; /**< 5 bits */
	uint8_t retry_count;         /**< 3 bits */
	uint16_t pkey;
	uint8_t path_mtu;            /**< 4 bits: IBTA MTU code (1: 256 .. 5: 4096) */
	bool rdc_exists;
	uint8_t rnr_retry_count;     /**< 3 bits */
	uint8_t max_cm_retries;      /**< 4 bits */
	bool srq;
	uint8_t extended_transport;  /**< 3 bits */
	struct dpv_cm_path primary;
	struct dpv_cm_path alternate; /**< all zero: no alternate path */
	bool sap_supported;
	uint8_t private_data[DPV_CM_REQ_PDATA_LEN];
};

/** MRA (IBTA 12.6.6, Table 107). */
struct dpv_cm_mra {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint8_t message_mraed;   /**< 2 bits: enum dpv_cm_msg_ref */
	uint8_t service_timeout; /**< 5 bits: 4.096 us * 2^t */
	uint8_t private_data[DPV_CM_MRA_PDATA_LEN];
};

/** REJ (IBTA 12.6.7, Table 108). */
struct dpv_cm_rej {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint8_t message_rejected; /**< 2 bits: enum dpv_cm_msg_ref */
	uint8_t ari_length;       /**< 7 bits, at most DPV_CM_ARI_LEN */
	uint16_t reason;          /**< enum dpv_cm_rej_reason */
	uint8_t ari[DPV_CM_ARI_LEN];
	uint8_t private_data[DPV_CM_REJ_PDATA_LEN];
};

/** REP (IBTA 12.6.8, Table 110). */
struct dpv_cm_rep {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint32_t local_qkey;
	uint32_t local_qpn;        /**< 24 bits */
	uint32_t local_eecn;       /**< 24 bits */
	uint32_t starting_psn;     /**< 24 bits */
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t target_ack_delay;  /**< 5 bits */
	uint8_t failover_accepted; /**< 2 bits */
	bool end_to_end_flow_control;
	uint8_t rnr_retry_count;   /**< 3 bits */
	bool srq;
	uint64_t local_ca_guid;
	uint8_t private_data[DPV_CM_REP_PDATA_LEN];
};

/** RTU (IBTA 12.6.9, Table 111). */
struct dpv_cm_rtu {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint8_t private_data[DPV_CM_RTU_PDATA_LEN];
};

/** DREQ (IBTA 12.6.10, Table 112). */
struct dpv_cm_dreq {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint32_t remote_qpn;       /**< 24 bits: the receiver's QP (or EEC) */
	uint8_t private_data[DPV_CM_DREQ_PDATA_LEN];
};

/** DREP (IBTA 12.6.11, Table 113): the same fields as an RTU. */
struct dpv_cm_drep {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint8_t private_data[DPV_CM_DREP_PDATA_LEN];
};

/** SIDR_REQ (IBTA 12.11, Table 119). */
struct dpv_cm_sidr_req {
	uint32_t request_id;
	uint16_t pkey;
	uint64_t service_id;
	uint8_t private_data[DPV_CM_SIDR_REQ_PDATA_LEN];
};

/** SIDR_REP (IBTA 12.11, Table 120). */
struct dpv_cm_sidr_rep {
	uint32_t request_id;
	uint8_t status;            /**< enum dpv_cm_sidr_status */
	uint8_t info_length;       /**< at most DPV_CM_ARI_LEN */
	uint32_t qpn;              /**< 24 bits */
	uint64_t service_id;
	uint32_t qkey;
	uint8_t info[DPV_CM_ARI_LEN]; /**< ClassPortInfo on a redirect */
	uint8_t private_data[DPV_CM_SIDR_REP_PDATA_LEN];
};

/** One CM MAD: the header and the attribute hdr.attr_id names. */
struct dpv_cm_msg {
	struct dpv_cm_mad_hdr hdr;
	union {
		struct dpv_cm_req req;
		struct dpv_cm_mra mra;
		struct dpv_cm_rej rej;
		struct dpv_cm_rep rep;
		struct dpv_cm_rtu rtu;
		struct dpv_cm_dreq dreq;
		struct dpv_cm_drep drep;
		struct dpv_cm_sidr_req sidr_req;
		struct dpv_cm_sidr_rep sidr_rep;
	};
};

/**
 * Pack a CM message into a MAD. Writes base version 1, class 0x07, class version 2
 * and method Send whatever @p m->hdr says of them; the status, class-specific,
 * transaction ID, attribute ID and modifier come from @p m->hdr.
 * @param m    the message; hdr.attr_id selects the union member
 * @param mad  DPV_CM_MAD_LEN bytes, all written
 * @return 0; EINVAL if an attribute ID is not a CM message's or a field does not fit
 *         its width (a 24-bit QPN above 0xffffff, an ARI length above 72, ...): the
 *         MAD is then left unspecified.
 */
int dpv_cm_pack(const struct dpv_cm_msg *m, uint8_t mad[DPV_CM_MAD_LEN]);

/**
 * Unpack and check a MAD from the wire. Never reads beyond @p len bytes.
 * @param buf  the datagram's payload
 * @param len  its length
 * @param[out] m the message (left unspecified on an error)
 * @return 0, or why the MAD is refused:
 *   EMSGSIZE        @p len is not DPV_CM_MAD_LEN;
 *   ENOMSG          the management class is not CM (not ours);
 *   EPROTONOSUPPORT the base version is not 1 or the class version not 2 (a REQ of
 *                   another class version is answered with REJ reason 31 by the caller);
 *   EOPNOTSUPP      the method is not Send, or the attribute is not a CM message this
 *                   library knows (LAP, APR, ClassPortInfo);
 *   EBADMSG         a field holds a value the spec reserves (a message reference of 3,
 *                   an ARI or info length above 72).
 */
int dpv_cm_unpack(const void *buf, size_t len, struct dpv_cm_msg *m);

/** The message's short name as IBTA writes it ("REQ", "SIDR_REP", ...), for logs;
 *  NULL for an attribute that is not a CM message. */
const char *dpv_cm_attr_name(uint16_t attr_id);

/** A CM timeout exponent as nanoseconds: 4.096 us * 2^@p t, as every CM timeout
 *  field encodes it; @p t is taken modulo 32, as its 5-bit field holds it. */
static inline uint64_t dpv_cm_timeout_ns(uint8_t t)
{
	return 4096ull << (t & 31u);
}

#ifdef __cplusplus
}
#endif

#endif /* DPV_CM_MAD_H */
