/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Linux's IP CM addressing: service IDs of the port spaces, the 36-byte header of a
 * REQ's private data (bytes built by hand from its layout: version, IP version in the
 * top nibble, source port, source and destination address), IPv4-mapped GIDs.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "dpv_cm_ip.h"

static void service_ids_of_the_port_spaces(void **state)
{
	enum dpv_cm_ps ps;
	uint16_t port;

	(void)state;
	/* rping's default port 7174, on TCP and UDP; 18515 (perftest) on IPoIB. */
	assert_int_equal(dpv_cm_ip_service_id(DPV_CM_PS_TCP, 7174), 0x0000000001061c06ull);
	assert_int_equal(dpv_cm_ip_service_id(DPV_CM_PS_UDP, 7174), 0x0000000001111c06ull);
	assert_int_equal(dpv_cm_ip_service_id(DPV_CM_PS_IPOIB, 18515), 0x0000000000024853ull);
	assert_int_equal(dpv_cm_ip_service_id(DPV_CM_PS_TCP, 0xffff), 0x000000000106ffffull);
	assert_int_equal(dpv_cm_ip_service_parse(0x0000000001061c06ull, &ps, &port), 0);
	assert_int_equal(ps, DPV_CM_PS_TCP);
	assert_int_equal(port, 7174);
	assert_int_equal(dpv_cm_ip_service_parse(0x0000000001110001ull, &ps, &port), 0);
	assert_int_equal(ps, DPV_CM_PS_UDP);
	assert_int_equal(port, 1);
	assert_int_equal(dpv_cm_ip_service_parse(0x0000000000020050ull, &ps, &port), 0);
	assert_int_equal(ps, DPV_CM_PS_IPOIB);
	assert_int_equal(port, 80);
	/* RDMA_PS_IB (0x013f) and other spaces; anything above 32 bits. */
	assert_int_equal(dpv_cm_ip_service_parse(0x00000000013f0001ull, &ps, &port), EINVAL);
	assert_int_equal(dpv_cm_ip_service_parse(0x0000000001070001ull, &ps, &port), EINVAL);
	assert_int_equal(dpv_cm_ip_service_parse(0x0000000101061c06ull, &ps, &port), EINVAL);
	assert_int_equal(dpv_cm_ip_service_parse(0x1000000001061c06ull, &ps, &port), EINVAL);
}

static void ipv4_header_bytes(void **state)
{
	struct dpv_cm_ip_hdr h = {.ip_version = 4, .src_port = 0xc001};
	uint8_t pdata[92], want[92];

	(void)state;
	dpv_cm_gid_from_ipv4(0x0a000001, h.src); /* 10.0.0.1 */
	dpv_cm_gid_from_ipv4(0xc0a80102, h.dst); /* 192.168.1.2 */
	memset(pdata, 0xa5, sizeof(pdata));
	memcpy(want, pdata, sizeof(want));
	memset(want, 0, 36);
	want[0] = 0x00;       /* cma_version */
	want[1] = 0x40;       /* IP version 4 in the top nibble */
	want[2] = 0xc0;
	want[3] = 0x01;       /* source port, big-endian */
	want[16] = 10;        /* 12 zero bytes, then the address */
	want[19] = 1;
	want[32] = 192;
	want[33] = 168;
	want[34] = 1;
	want[35] = 2;
	assert_int_equal(dpv_cm_ip_hdr_pack(&h, pdata, sizeof(pdata)), 0);
	assert_memory_equal(pdata, want, sizeof(want));
}

static void ipv6_header_bytes_and_round_trip(void **state)
{
	struct dpv_cm_ip_hdr h = {.ip_version = 6, .src_port = 4791}, back;
	uint8_t pdata[36];
	int i;

	(void)state;
	for (i = 0; i < 16; i++) {
		h.src[i] = (uint8_t)(0x20 + i);
		h.dst[i] = (uint8_t)(0xf0 - i);
	}
	assert_int_equal(dpv_cm_ip_hdr_pack(&h, pdata, sizeof(pdata)), 0);
	assert_int_equal(pdata[1], 0x60);
	assert_int_equal(pdata[2] << 8 | pdata[3], 4791);
	assert_memory_equal(pdata + 4, h.src, 16);
	assert_memory_equal(pdata + 20, h.dst, 16);
	memset(&back, 0xa5, sizeof(back));
	assert_int_equal(dpv_cm_ip_hdr_unpack(pdata, sizeof(pdata), &back), 0);
	assert_int_equal(back.ip_version, 6);
	assert_int_equal(back.src_port, 4791);
	assert_memory_equal(back.src, h.src, 16);
	assert_memory_equal(back.dst, h.dst, 16);
}

/* Linux writes the IPv4 pad as zeros; a header whose pad holds anything else still
 * names its address by the last 4 bytes, as Linux reads it. */
static void ipv4_unpack_reads_the_last_four_bytes(void **state)
{
	uint8_t pdata[36] = {0x00, 0x45, 0x12, 0x34};
	struct dpv_cm_ip_hdr h;
	uint32_t ip;

	(void)state;
	memset(pdata + 4, 0xee, 12);
	pdata[16] = 127, pdata[17] = 0, pdata[18] = 30, pdata[19] = 1;
	pdata[32] = 127, pdata[33] = 0, pdata[34] = 30, pdata[35] = 2;
	assert_int_equal(dpv_cm_ip_hdr_unpack(pdata, sizeof(pdata), &h), 0);
	assert_int_equal(h.ip_version, 4); /* the low nibble is not the version's */
	assert_int_equal(h.src_port, 0x1234);
	assert_true(dpv_cm_gid_to_ipv4(h.src, &ip));
	assert_int_equal(ip, 0x7f001e01);
	assert_true(dpv_cm_gid_to_ipv4(h.dst, &ip));
	assert_int_equal(ip, 0x7f001e02);
}

static void header_errors(void **state)
{
	struct dpv_cm_ip_hdr h = {.ip_version = 4};
	uint8_t pdata[36] = {0x00, 0x40};

	(void)state;
	assert_int_equal(dpv_cm_ip_hdr_pack(&h, pdata, 35), EINVAL);
	/* An IPv4 header's addresses must be IPv4-mapped (zeros are not). */
	assert_int_equal(dpv_cm_ip_hdr_pack(&h, pdata, sizeof(pdata)), EINVAL);
	dpv_cm_gid_from_ipv4(1, h.src);
	dpv_cm_gid_from_ipv4(2, h.dst);
	h.ip_version = 5;
	assert_int_equal(dpv_cm_ip_hdr_pack(&h, pdata, sizeof(pdata)), EINVAL);
	memset(pdata, 0, sizeof(pdata));
	pdata[1] = 0x40;
	assert_int_equal(dpv_cm_ip_hdr_unpack(pdata, 35, &h), EMSGSIZE);
	pdata[0] = 0x01;
	assert_int_equal(dpv_cm_ip_hdr_unpack(pdata, 36, &h), EPROTONOSUPPORT);
	pdata[0] = 0x00;
	pdata[1] = 0x00;
	assert_int_equal(dpv_cm_ip_hdr_unpack(pdata, 36, &h), EAFNOSUPPORT);
	pdata[1] = 0x50;
	assert_int_equal(dpv_cm_ip_hdr_unpack(pdata, 36, &h), EAFNOSUPPORT);
}

static void gids_are_ipv4_mapped(void **state)
{
	static const uint8_t want[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 1, 2, 3};
	uint8_t gid[16], other[16] = {0xfe, 0x80};
	uint32_t ip = 0;

	(void)state;
	dpv_cm_gid_from_ipv4(0x0a010203, gid);
	assert_memory_equal(gid, want, 16);
	assert_true(dpv_cm_gid_to_ipv4(gid, &ip));
	assert_int_equal(ip, 0x0a010203);
	ip = 7;
	assert_false(dpv_cm_gid_to_ipv4(other, &ip)); /* a link-local GID */
	assert_int_equal(ip, 7);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(service_ids_of_the_port_spaces),
		cmocka_unit_test(ipv4_header_bytes),
		cmocka_unit_test(ipv6_header_bytes_and_round_trip),
		cmocka_unit_test(ipv4_unpack_reads_the_last_four_bytes),
		cmocka_unit_test(header_errors),
		cmocka_unit_test(gids_are_ipv4_mapped),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
