/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <string.h>

#include "dpv_cm_ip.h"


static const uint8_t v4_mapped_prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

static bool known_ps(uint16_t ps)
{
	return ps == DPV_CM_PS_IPOIB || ps == DPV_CM_PS_TCP || ps == DPV_CM_PS_UDP;
}

uint64_t dpv_cm_ip_service_id(enum dpv_cm_ps ps, uint16_t port)
{
	return (uint64_t)ps << 16 | port;
}

int dpv_cm_ip_service_parse(uint64_t sid, enum dpv_cm_ps *ps, uint16_t *port)
{
	if (sid >> 32 != 0 || !known_ps((uint16_t)(sid >> 16)))
		return EINVAL;
	*ps = (enum dpv_cm_ps)(sid >> 16);
	*port = (uint16_t)sid;
	return 0;
}

void dpv_cm_gid_from_ipv4(uint32_t ip, uint8_t gid[16])
{
	memcpy(gid, v4_mapped_prefix, sizeof(v4_mapped_prefix));
	gid[12] = (uint8_t)(ip >> 24);
	gid[13] = (uint8_t)(ip >> 16);
	gid[14] = (uint8_t)(ip >> 8);
	gid[15] = (uint8_t)ip;
}

bool dpv_cm_gid_to_ipv4(const uint8_t gid[16], uint32_t *ip)
{
	if (memcmp(gid, v4_mapped_prefix, sizeof(v4_mapped_prefix)) != 0)
		return false;
	*ip = (uint32_t)gid[12] << 24 | (uint32_t)gid[13] << 16 | (uint32_t)gid[14] << 8 | gid[15];
	return true;
}

/* Linux's form of an IPv4 address in the header: 12 zero bytes, then the address. */
static void put_addr(uint8_t *p, const uint8_t addr[16], uint8_t version)
{
	if (version == 4) {
		memset(p, 0, 12);
		memcpy(p + 12, addr + 12, 4);
	} else {
		memcpy(p, addr, 16);
	}
}

static void get_addr(const uint8_t *p, uint8_t addr[16], uint8_t version)
{
	if (version == 4) {
		memcpy(addr, v4_mapped_prefix, sizeof(v4_mapped_prefix));
		memcpy(addr + 12, p + 12, 4);
	} else {
		memcpy(addr, p, 16);
	}
}

int dpv_cm_ip_hdr_pack(const struct dpv_cm_ip_hdr *h, uint8_t *pdata, size_t len)
{
	if (len < DPV_CM_IP_HDR_LEN || (h->ip_version != 4 && h->ip_version != 6))
		return EINVAL;
	if (h->ip_version == 4 &&
	    (memcmp(h->src, v4_mapped_prefix, 12) != 0 || memcmp(h->dst, v4_mapped_prefix, 12) != 0))
		return EINVAL;
	pdata[0] = DPV_CM_IP_HDR_VERSION;
	pdata[1] = (uint8_t)(h->ip_version << 4);
	pdata[2] = (uint8_t)(h->src_port >> 8);
	pdata[3] = (uint8_t)h->src_port;
	put_addr(pdata + 4, h->src, h->ip_version);
	put_addr(pdata + 20, h->dst, h->ip_version);
	return 0;
}

int dpv_cm_ip_hdr_unpack(const uint8_t *pdata, size_t len, struct dpv_cm_ip_hdr *h)
{
	if (len < DPV_CM_IP_HDR_LEN)
		return EMSGSIZE;
	if (pdata[0] != DPV_CM_IP_HDR_VERSION)
		return EPROTONOSUPPORT;
	h->ip_version = pdata[1] >> 4;
	if (h->ip_version != 4 && h->ip_version != 6)
		return EAFNOSUPPORT;
	h->src_port = (uint16_t)(pdata[2] << 8 | pdata[3]);
	get_addr(pdata + 4, h->src, h->ip_version);
	get_addr(pdata + 20, h->dst, h->ip_version);
	return 0;
}
