/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/wire's CRC-32: the folding constants follow from the polynomial, the PCLMULQDQ
 * folding equals the slice-by-8 reference at every length and alignment with any
 * seed, calls chain, and the ICRC of a frame is the masked CRC IBTA A17.8.3 defines
 * (frames whose ICRC scapy computed, and a reference masked here).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "dpv_wire.h"
#include "dpv_wire_crc.h"

#define MAX_LEN 4096u
#define ALIGNS 16u

static uint8_t buf[MAX_LEN + ALIGNS + 64] __attribute__((aligned(64)));
static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void fill(uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)next();
}

/* IEEE 802.3's polynomial with its x^32 term, not reflected. */
#define POLY 0x104c11db7ull

static uint64_t reflect(uint64_t v, unsigned int bits)
{
	uint64_t r = 0;
	unsigned int i;

	for (i = 0; i < bits; i++)
		r |= ((v >> i) & 1) << (bits - 1 - i);
	return r;
}

/* x^n mod P by shifting one power at a time. */
static uint64_t xpow_mod(unsigned int n)
{
	uint64_t r = 1;

	while (n--) {
		r <<= 1;
		if (r >> 32)
			r ^= POLY;
	}
	return r;
}

/* floor(x^64 / P): long division over GF(2), one quotient bit at a time. */
static uint64_t x64_div(void)
{
	unsigned __int128 a = (unsigned __int128)1 << 64;
	uint64_t q = 0;
	int s;

	for (s = 32; s >= 0; s--)
		if ((a >> (32 + s)) & 1) {
			q |= 1ull << s;
			a ^= (unsigned __int128)POLY << s;
		}
	return q;
}

static uint64_t k(unsigned int n)
{
	return reflect(xpow_mod(n), 32) << 1;
}

static void constants_follow_from_the_polynomial(void **state)
{
	(void)state;
	assert_int_equal(k(4 * 128 + 32), DPV_WIRE_CRC_K1);
	assert_int_equal(k(4 * 128 - 32), DPV_WIRE_CRC_K2);
	assert_int_equal(k(128 + 32), DPV_WIRE_CRC_K3);
	assert_int_equal(k(128 - 32), DPV_WIRE_CRC_K4);
	assert_int_equal(k(64), DPV_WIRE_CRC_K5);
	assert_int_equal(reflect(x64_div(), 33), DPV_WIRE_CRC_MU);
	assert_int_equal(reflect(POLY, 33), DPV_WIRE_CRC_P);
	/* The table's reflected polynomial is the same P. */
	assert_int_equal(reflect(POLY & 0xffffffffu, 32), 0xedb88320u);
}

static void skip_without_clmul(void)
{
	if (!dpv_wire_crc32_clmul_ok())
		skip();
}

static void every_form_gives_the_ieee_check_value(void **state)
{
	(void)state;
	assert_int_equal(~dpv_wire_crc32_table(0xffffffffu, "123456789", 9), 0xcbf43926u);
	assert_int_equal(~dpv_wire_crc32(0xffffffffu, "123456789", 9), 0xcbf43926u);
	skip_without_clmul();
	assert_int_equal(~dpv_wire_crc32_clmul(0xffffffffu, "123456789", 9), 0xcbf43926u);
	/* 16 bytes and more take the folding path: "123456789" repeated. */
	assert_int_equal(~dpv_wire_crc32_clmul(0xffffffffu, "123456789123456789", 18),
			 ~dpv_wire_crc32_table(0xffffffffu, "123456789123456789", 18));
}

static void the_cpu_check_picks_the_folding(void **state)
{
	(void)state;
	assert_string_equal(dpv_wire_crc32_impl(),
			    dpv_wire_crc32_clmul_ok() ? "pclmulqdq" : "slice-by-8");
}

static void folding_equals_the_tables_at_every_length_and_alignment(void **state)
{
	uint32_t seed, want;
	size_t len, a;

	(void)state;
	skip_without_clmul();
	fill(buf, sizeof(buf));
	for (a = 0; a < ALIGNS; a++) {
		for (len = 0; len <= MAX_LEN; len++) {
			seed = (uint32_t)next();
			want = dpv_wire_crc32_table(seed, buf + a, len);
			if (dpv_wire_crc32_clmul(seed, buf + a, len) != want)
				fail_msg("length %zu alignment %zu seed %08x", len, a, seed);
			assert_int_equal(dpv_wire_crc32(seed, buf + a, len), want);
		}
		fill(buf, sizeof(buf));
	}
}

static void folding_of_all_ones_and_zeros(void **state)
{
	size_t len;

	(void)state;
	skip_without_clmul();
	memset(buf, 0xff, sizeof(buf));
	for (len = 0; len <= 300; len++) {
		assert_int_equal(dpv_wire_crc32_clmul(0, buf, len), dpv_wire_crc32_table(0, buf, len));
		assert_int_equal(dpv_wire_crc32_clmul(0xffffffffu, buf, len),
				 dpv_wire_crc32_table(0xffffffffu, buf, len));
	}
	memset(buf, 0, sizeof(buf));
	for (len = 0; len <= 300; len++)
		assert_int_equal(dpv_wire_crc32_clmul(0xffffffffu, buf, len),
				 dpv_wire_crc32_table(0xffffffffu, buf, len));
}

static void chained_calls_equal_one_call(void **state)
{
	uint32_t seed, whole, st;
	size_t len, cut, cut2;
	unsigned int i;

	(void)state;
	fill(buf, sizeof(buf));
	for (i = 0; i < 20000; i++) {
		len = next() % (MAX_LEN + 1);
		cut = len ? next() % (len + 1) : 0;
		cut2 = cut + (len - cut ? next() % (len - cut + 1) : 0);
		seed = (uint32_t)next();
		whole = dpv_wire_crc32_table(seed, buf, len);
		st = dpv_wire_crc32(seed, buf, cut);
		st = dpv_wire_crc32(st, buf + cut, cut2 - cut);
		st = dpv_wire_crc32(st, buf + cut2, len - cut2);
		if (st != whole)
			fail_msg("length %zu cut at %zu and %zu", len, cut, cut2);
		st = dpv_wire_crc32_table(seed, buf, cut);
		assert_int_equal(dpv_wire_crc32_table(st, buf + cut, len - cut), whole);
	}
}

/* The ICRC as A17.8.3 words it, built here byte by byte: 8 bytes of ones for the LRH,
 * the IPv4 header with TOS, TTL and checksum as ones, UDP with its checksum as ones,
 * the BTH with its resv8a byte as ones, then the rest up to the ICRC. */
static uint32_t icrc_reference(const uint8_t *f, uint32_t frame_len)
{
	uint8_t m[8 + 20 + 8 + 12];
	uint32_t st;

	memset(m, 0xff, 8);
	memcpy(m + 8, f + 14, 40);
	m[8 + 1] = m[8 + 8] = m[8 + 10] = m[8 + 11] = 0xff;
	m[28 + 6] = m[28 + 7] = 0xff;
	m[36 + 4] = 0xff;
	st = dpv_wire_crc32_table(0xffffffffu, m, sizeof(m));
	return ~dpv_wire_crc32_table(st, f + 54, frame_len - 4 - 54);
}

static void icrc_is_the_masked_crc_at_every_length_and_alignment(void **state)
{
	uint32_t len, a, want, st;
	uint8_t *f;

	(void)state;
	for (a = 0; a < ALIGNS; a++) {
		fill(buf, sizeof(buf));
		f = buf + a;
		for (len = DPV_WIRE_BTH_OFF + DPV_WIRE_BTH_LEN + DPV_WIRE_ICRC_LEN; len <= MAX_LEN;
		     len++) {
			want = icrc_reference(f, len);
			if (dpv_wire_icrc(f, len) != want)
				fail_msg("frame of %u bytes at alignment %u", len, a);
			st = dpv_wire_icrc_begin(f);
			st = dpv_wire_crc32(st, f + 54, len - 4 - 54);
			assert_int_equal(dpv_wire_icrc_final(st), want);
		}
	}
}

static void hex(uint8_t *dst, const char *s)
{
	unsigned int v;

	for (; s[0] && s[1]; s += 2) {
		assert_int_equal(sscanf(s, "%2x", &v), 1);
		*dst++ = (uint8_t)v;
	}
}

/* Frames whose ICRC scapy 2.5 computed (scapy.contrib.roce, BTH.compute_icrc); the
 * payload is (i * 7 + 1) & 0xff for byte i, as test_wire.c builds its frames. */
static const struct {
	const char *name;
	const char *hdr;
	uint32_t payload, pad;
	const char *icrc;
} scapy_frames[] = {
	{"RC Send Only, 8 bytes",
	 "020000000001020000000002080045020034123440004011a72fc0a80001c0a80002c12312b7"
	 "002000000480ffff00abcdef80fedcba",
	 8, 0, "c5b50780"},
	{"RC Acknowledge",
	 "020000000001020000000002080045020030123440004011a733c0a80001c0a80002c12312b7"
	 "001c00001100ffff00000012000001001f000005",
	 0, 0, "1b5ab287"},
	{"RC RDMA Write Only, 1021 bytes",
	 "02000000000102000000000208004502043c123440004011a327c0a80001c0a80002c12312b7"
	 "042800000a30ffff00abcdef800000010123456789abcdef11223344000003fd",
	 1021, 3, "128ad0fd"},
};

static void icrc_of_frames_scapy_computed(void **state)
{
	uint32_t hl, len, i, j;
	uint8_t icrc[4];

	(void)state;
	for (i = 0; i < sizeof(scapy_frames) / sizeof(scapy_frames[0]); i++) {
		memset(buf, 0, sizeof(buf));
		hl = (uint32_t)strlen(scapy_frames[i].hdr) / 2;
		hex(buf, scapy_frames[i].hdr);
		for (j = 0; j < scapy_frames[i].payload; j++)
			buf[hl + j] = (uint8_t)(j * 7 + 1);
		len = hl + scapy_frames[i].payload + scapy_frames[i].pad + 4;
		hex(icrc, scapy_frames[i].icrc);
		if (dpv_wire_icrc(buf, len) != dpv_wire_icrc_get(icrc))
			fail_msg("%s: %08x, scapy %08x", scapy_frames[i].name,
				 dpv_wire_icrc(buf, len), dpv_wire_icrc_get(icrc));
		assert_int_equal(icrc_reference(buf, len), dpv_wire_icrc_get(icrc));
		dpv_wire_finish(buf, len);
		assert_memory_equal(buf + len - 4, icrc, 4);
		assert_int_equal(dpv_wire_hdr_len(buf[DPV_WIRE_BTH_OFF]), hl);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(constants_follow_from_the_polynomial),
		cmocka_unit_test(every_form_gives_the_ieee_check_value),
		cmocka_unit_test(the_cpu_check_picks_the_folding),
		cmocka_unit_test(folding_equals_the_tables_at_every_length_and_alignment),
		cmocka_unit_test(folding_of_all_ones_and_zeros),
		cmocka_unit_test(chained_calls_equal_one_call),
		cmocka_unit_test(icrc_is_the_masked_crc_at_every_length_and_alignment),
		cmocka_unit_test(icrc_of_frames_scapy_computed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
