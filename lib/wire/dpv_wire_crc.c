/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The ICRC's CRC-32 (IEEE 802.3, reflected): slice-by-8 tables and PCLMULQDQ folding,
 * one of them chosen at load from the CPU's features (dpv_wire_crc.h says why two).
 */
#include <string.h>

#include "dpv_wire.h"
#include "dpv_wire_crc.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define HAVE_CLMUL 1
#include <immintrin.h>
#else
#define HAVE_CLMUL 0
#endif

/* The ICRC covers the frame from its source MAC on, the 8 bytes of source MAC and
 * EtherType standing for the LRH's 8 bytes of ones (A17.8.3), up to the ICRC itself. */
#define ICRC_OFF 6u
/* Bytes of that span the masks touch: LRH, IPv4, UDP and BTH. */
#define ICRC_MASKED (8u + DPV_WIRE_IPV4_LEN + DPV_WIRE_UDP_LEN + DPV_WIRE_BTH_LEN)

/* CRC-32 of IEEE 802.3, reflected polynomial, slice-by-8 tables built once at load. */
static uint32_t crc_tab[8][256];

uint32_t dpv_wire_crc32_table(uint32_t state, const void *data, size_t len)
{
	const uint8_t *p = data;
	uint32_t lo, hi;

	while (len >= 8) {
		lo = state ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
			      (uint32_t)p[3] << 24);
		hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 |
		     (uint32_t)p[7] << 24;
		state = crc_tab[7][lo & 0xff] ^ crc_tab[6][(lo >> 8) & 0xff] ^
			crc_tab[5][(lo >> 16) & 0xff] ^ crc_tab[4][lo >> 24] ^
			crc_tab[3][hi & 0xff] ^ crc_tab[2][(hi >> 8) & 0xff] ^
			crc_tab[1][(hi >> 16) & 0xff] ^ crc_tab[0][hi >> 24];
		p += 8;
		len -= 8;
	}
	while (len--)
		state = (state >> 8) ^ crc_tab[0][(state ^ *p++) & 0xff];
	return state;
}

/* A17.8.3: the LRH as ones, then IPv4 with TOS, TTL and header checksum as ones, UDP
 * with its checksum as ones, BTH with its FECN/BECN/resv6 byte as ones, because
 * routers may change all of those. @p m receives the masked copy of those bytes. */
static void icrc_mask_copy(uint8_t m[ICRC_MASKED], const uint8_t *frame)
{
	uint8_t *ip = m + 8, *udp = ip + DPV_WIRE_IPV4_LEN, *bth = udp + DPV_WIRE_UDP_LEN;

	memset(m, 0xff, 8);
	memcpy(ip, frame + DPV_WIRE_ETH_LEN, ICRC_MASKED - 8);
	ip[1] = 0xff;
	ip[8] = 0xff;
	ip[10] = ip[11] = 0xff;
	udp[6] = udp[7] = 0xff;
	bth[4] = 0xff;
}

static uint32_t icrc_begin_table(const uint8_t *frame)
{
	uint8_t m[ICRC_MASKED];

	icrc_mask_copy(m, frame);
	return dpv_wire_crc32_table(0xffffffffu, m, sizeof(m));
}

static uint32_t icrc_table(const uint8_t *frame, uint32_t frame_len)
{
	uint32_t st = icrc_begin_table(frame);

	st = dpv_wire_crc32_table(st, frame + ICRC_OFF + ICRC_MASKED,
				  frame_len - DPV_WIRE_ICRC_LEN - ICRC_OFF - ICRC_MASKED);
	return ~st;
}

#if HAVE_CLMUL

#define CLMUL __attribute__((target("pclmul,ssse3")))
#define CLMUL_INLINE static inline __attribute__((always_inline, target("pclmul,ssse3")))

/* Multiply the two halves of @p x by the two constants of @p k (low by low, high by
 * high) and add: @p x moved ahead by the distance @p k stands for. */
CLMUL_INLINE __m128i fold(__m128i x, __m128i k)
{
	return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11));
}

CLMUL_INLINE __m128i load(const uint8_t *p)
{
	return _mm_loadu_si128((const __m128i *)(const void *)p);
}

/* pshufb indices: 16 bytes from offset r shift a block r bytes toward its end (zeros
 * in front), 16 bytes from offset 16 + r shift it r bytes toward its start. */
static const uint8_t shift_tab[48] __attribute__((aligned(16))) = {
	0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
	0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
	0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
	0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
	0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
};

/*
 * @p x holds the 16 bytes of the message before @p p, not yet reduced; @p len more
 * bytes follow at @p p. Folds them in and returns the CRC state of the whole. Needs
 * the 16 bytes before @p p readable (the message so far is at least one block).
 */
CLMUL_INLINE uint32_t fold_rest(__m128i x, const uint8_t *p, size_t len)
{
	const __m128i k12 = _mm_set_epi64x((long long)DPV_WIRE_CRC_K2, (long long)DPV_WIRE_CRC_K1);
	const __m128i k34 = _mm_set_epi64x((long long)DPV_WIRE_CRC_K4, (long long)DPV_WIRE_CRC_K3);
	const __m128i k5 = _mm_set_epi64x(0, (long long)DPV_WIRE_CRC_K5);
	const __m128i poly = _mm_set_epi64x((long long)DPV_WIRE_CRC_MU, (long long)DPV_WIRE_CRC_P);
	const __m128i mask32 = _mm_set_epi32(0, 0, 0, -1);
	__m128i x1, x2, x3, t, sz, sb;

	if (len >= 48 + 64) {
		/* Four blocks in flight: each multiplication waits for none of the others. */
		x1 = load(p);
		x2 = load(p + 16);
		x3 = load(p + 32);
		p += 48;
		len -= 48;
		do {
			x = _mm_xor_si128(fold(x, k12), load(p));
			x1 = _mm_xor_si128(fold(x1, k12), load(p + 16));
			x2 = _mm_xor_si128(fold(x2, k12), load(p + 32));
			x3 = _mm_xor_si128(fold(x3, k12), load(p + 48));
			p += 64;
			len -= 64;
		} while (len >= 64);
		x = _mm_xor_si128(fold(x, k34), x1);
		x = _mm_xor_si128(fold(x, k34), x2);
		x = _mm_xor_si128(fold(x, k34), x3);
	}
	while (len >= 16) {
		x = _mm_xor_si128(fold(x, k34), load(p));
		p += 16;
		len -= 16;
	}
	if (len > 0) {
		/* The last r < 16 bytes: x's first r bytes move ahead one block (zeros in
		 * front of them do not change the remainder), the rest of x and the tail,
		 * read as the last 16 bytes of the message, make that block. */
		sz = load(shift_tab + len);
		sb = load(shift_tab + 16 + len);
		t = _mm_andnot_si128(_mm_cmplt_epi8(sz, _mm_setzero_si128()), load(p + len - 16));
		x = _mm_xor_si128(fold(_mm_shuffle_epi8(x, sz), k34),
				  _mm_or_si128(_mm_shuffle_epi8(x, sb), t));
	}
	/* 128 bits to 64 (appending the 32 zero bits of the CRC), to 32, then Barrett. */
	x = _mm_xor_si128(_mm_srli_si128(x, 8), _mm_clmulepi64_si128(x, k34, 0x10));
	x = _mm_xor_si128(_mm_srli_si128(x, 4), _mm_clmulepi64_si128(_mm_and_si128(x, mask32), k5, 0x00));
	t = _mm_clmulepi64_si128(_mm_and_si128(x, mask32), poly, 0x10);
	t = _mm_clmulepi64_si128(_mm_and_si128(t, mask32), poly, 0x00);
	return (uint32_t)_mm_cvtsi128_si32(_mm_srli_si128(_mm_xor_si128(x, t), 4));
}

CLMUL uint32_t dpv_wire_crc32_clmul(uint32_t state, const void *data, size_t len)
{
	const uint8_t *p = data;

	if (len < 16)
		return dpv_wire_crc32_table(state, data, len);
	return fold_rest(_mm_xor_si128(load(p), _mm_cvtsi32_si128((int)state)), p + 16, len - 16);
}

/* The first three blocks of the ICRC's span from the frame's source MAC: the masked
 * bytes of icrc_mask_copy(), ones ORed in place (offsets from the source MAC). */
CLMUL_INLINE __m128i icrc_head(const uint8_t *frame)
{
	const __m128i m0 = _mm_set_epi8(0, 0, 0, 0, 0, 0, (char)0xff, 0,
					(char)0xff, (char)0xff, (char)0xff, (char)0xff,
					(char)0xff, (char)0xff, (char)0xff, (char)0xff);
	const __m128i m1 = _mm_set_epi8(0, 0, 0, 0, 0, 0, 0, 0,
					0, 0, 0, 0, (char)0xff, (char)0xff, 0, (char)0xff);
	const __m128i m2 = _mm_set_epi8(0, 0, 0, 0, 0, 0, 0, (char)0xff,
					0, 0, 0, 0, (char)0xff, (char)0xff, 0, 0);
	const __m128i k34 = _mm_set_epi64x((long long)DPV_WIRE_CRC_K4, (long long)DPV_WIRE_CRC_K3);
	const uint8_t *p = frame + ICRC_OFF;
	__m128i x;

	x = _mm_xor_si128(_mm_or_si128(load(p), m0), _mm_cvtsi32_si128(-1));
	x = _mm_xor_si128(fold(x, k34), _mm_or_si128(load(p + 16), m1));
	return _mm_xor_si128(fold(x, k34), _mm_or_si128(load(p + 32), m2));
}

static CLMUL uint32_t icrc_begin_clmul(const uint8_t *frame)
{
	return fold_rest(icrc_head(frame), frame + ICRC_OFF + ICRC_MASKED, 0);
}

static CLMUL uint32_t icrc_clmul(const uint8_t *frame, uint32_t frame_len)
{
	return ~fold_rest(icrc_head(frame), frame + ICRC_OFF + ICRC_MASKED,
			  frame_len - DPV_WIRE_ICRC_LEN - ICRC_OFF - ICRC_MASKED);
}

bool dpv_wire_crc32_clmul_ok(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("ssse3");
}

#else

uint32_t dpv_wire_crc32_clmul(uint32_t state, const void *data, size_t len)
{
	return dpv_wire_crc32_table(state, data, len);
}

bool dpv_wire_crc32_clmul_ok(void)
{
	return false;
}

#endif

/* The implementation every call uses: the tables until the constructor has looked at
 * the CPU, which happens once, before main and before any thread. */
struct crc_ops {
	const char *name;
	uint32_t (*crc32)(uint32_t state, const void *data, size_t len);
	uint32_t (*icrc_begin)(const uint8_t *frame);
	uint32_t (*icrc)(const uint8_t *frame, uint32_t frame_len);
};

static const struct crc_ops table_ops = {"slice-by-8", dpv_wire_crc32_table, icrc_begin_table, icrc_table};
#if HAVE_CLMUL
static const struct crc_ops clmul_ops = {"pclmulqdq", dpv_wire_crc32_clmul, icrc_begin_clmul, icrc_clmul};
#endif
static const struct crc_ops *crc_ops = &table_ops;

__attribute__((constructor)) static void crc_init(void)
{
	uint32_t c;
	unsigned int i, j;

	for (i = 0; i < 256; i++) {
		c = i;
		for (j = 0; j < 8; j++)
			c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1)));
		crc_tab[0][i] = c;
	}
	for (i = 0; i < 256; i++)
		for (j = 1; j < 8; j++)
			crc_tab[j][i] = (crc_tab[j - 1][i] >> 8) ^ crc_tab[0][crc_tab[j - 1][i] & 0xff];
#if HAVE_CLMUL
	if (dpv_wire_crc32_clmul_ok())
		crc_ops = &clmul_ops;
#endif
}

uint32_t dpv_wire_crc32(uint32_t state, const void *data, size_t len)
{
	return crc_ops->crc32(state, data, len);
}

uint32_t dpv_wire_icrc_begin(const void *frame)
{
	return crc_ops->icrc_begin(frame);
}

uint32_t dpv_wire_icrc(const void *frame, uint32_t frame_len)
{
	return crc_ops->icrc(frame, frame_len);
}

const char *dpv_wire_crc32_impl(void)
{
	return crc_ops->name;
}
