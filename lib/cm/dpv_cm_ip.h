/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * dpv_cm_ip: the IP-based addressing of the Linux RDMA CM, which a kernel RoCE peer
 * (rxe, a ConnectX) expects of a CM REQ or SIDR_REQ.
 *
 * - The service ID of an IP port is port space << 16 | port (IBTA Annex A11, "RDMA
 *   IP CM Service", which reserves 0x0000000001xxxxxx; Linux's cma.c forms it so):
 *   TCP 0x0000000001060000 | port, UDP 0x0000000001110000 | port. The IPoIB space (UD
 *   ids with the IPoIB Q_Key) gives 0x0000000000020000 | port, as Linux forms it.
 * - The REQ's (and SIDR_REQ's) private data begins with a 36-byte header: version 0,
 *   the IP version in the top 4 bits of the next byte, the source port, then the
 *   source and destination addresses as 16 bytes each. An IPv6 address is written as
 *   it is; an IPv4 address takes the last 4 bytes, after 12 zero bytes, as Linux writes
 *   it. The consumer's private data follows.
 * - For RoCEv2 the CM's GIDs are IPv4-mapped addresses (::ffff:a.b.c.d).
 *
 * IPv4 addresses are host-order numbers here, as in lib/wire. Pure functions; any
 * thread may call them.
 */
#ifndef DPV_CM_IP_H
#define DPV_CM_IP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The port spaces of rdma_create_id() whose ids carry IP addresses. */
enum dpv_cm_ps {
	DPV_CM_PS_IPOIB = 0x0002,
	DPV_CM_PS_TCP = 0x0106,
	DPV_CM_PS_UDP = 0x0111,
};

#define DPV_CM_IP_HDR_LEN 36u
#define DPV_CM_IP_HDR_VERSION 0x00u

/** The header Linux's CM puts first in a REQ's private data, as host values. */
struct dpv_cm_ip_hdr {
	uint8_t ip_version;  /**< 4 or 6 */
	uint16_t src_port;
	uint8_t src[16];     /**< IPv6, or IPv4-mapped (::ffff:a.b.c.d) for version 4 */
	uint8_t dst[16];
};

/**
 * The service ID of an IP port and port space.
 * @return @p ps << 16 | @p port
 */
uint64_t dpv_cm_ip_service_id(enum dpv_cm_ps ps, uint16_t port);

/**
 * Split a service ID into its port space and port.
 * @return 0; EINVAL if @p sid is not of that form: its top 32 bits not zero or
 *         bits 16..31 not one of enum dpv_cm_ps.
 */
int dpv_cm_ip_service_parse(uint64_t sid, enum dpv_cm_ps *ps, uint16_t *port);

/**
 * Write the header at the start of @p pdata.
 * @param len  bytes available at @p pdata
 * @return 0; EINVAL if @p len is below DPV_CM_IP_HDR_LEN, the IP version is neither 4
 *         nor 6, or a version-4 address is not IPv4-mapped.
 */
int dpv_cm_ip_hdr_pack(const struct dpv_cm_ip_hdr *h, uint8_t *pdata, size_t len);

/**
 * Read and check the header at the start of a received REQ's private data.
 * @return 0; EMSGSIZE if @p len is below DPV_CM_IP_HDR_LEN; EPROTONOSUPPORT if the
 *         header version is not 0; EAFNOSUPPORT if the IP version is neither 4 nor 6.
 */
int dpv_cm_ip_hdr_unpack(const uint8_t *pdata, size_t len, struct dpv_cm_ip_hdr *h);

/** The IPv4-mapped GID of an IPv4 address (::ffff:a.b.c.d). */
void dpv_cm_gid_from_ipv4(uint32_t ip, uint8_t gid[16]);

/** The IPv4 address of an IPv4-mapped GID. @return false if @p gid is not one. */
bool dpv_cm_gid_to_ipv4(const uint8_t gid[16], uint32_t *ip);

#ifdef __cplusplus
}
#endif

#endif /* DPV_CM_IP_H */
