/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The tests' own writer of IBTA fields: a value of any width at (byte, bit) of a MAD,
 * the bit counted from the byte's most significant bit as the spec's tables give it,
 * written one bit at a time. It shares no code with lib/cm, so a MAD the library packs
 * is checked against the spec's layout, not against itself.
 */
#ifndef CM_EXPECT_H
#define CM_EXPECT_H

#include <stdint.h>
#include <string.h>

#include "dpv_cm_mad.h"

/* Offsets of the tests are those of the spec's message tables: from the attribute data. */
#define DATA DPV_CM_MAD_HDR_LEN

static inline void field(uint8_t *mad, unsigned int byte, unsigned int bit, unsigned int width,
			 uint64_t v)
{
	unsigned int i;

	for (i = 0; i < width; i++) {
		unsigned int pos = byte * 8 + bit + i;
		unsigned int b = (unsigned int)(v >> (width - 1 - i)) & 1u;

		mad[pos / 8] = (uint8_t)((mad[pos / 8] & ~(0x80u >> (pos % 8))) |
					 (b ? 0x80u >> (pos % 8) : 0));
	}
}

/* A field of the attribute data (the spec's offsets). */
static inline void dfield(uint8_t *mad, unsigned int byte, unsigned int bit, unsigned int width,
			  uint64_t v)
{
	field(mad, DATA + byte, bit, width, v);
}

static inline void dbytes(uint8_t *mad, unsigned int byte, const void *p, size_t n)
{
	memcpy(mad + DATA + byte, p, n);
}

/* The common MAD header of a CM Send (IBTA 13.4.3). */
static inline void expect_hdr(uint8_t *mad, uint16_t status, uint16_t class_specific,
			      uint64_t tid, uint16_t attr, uint32_t attr_mod)
{
	memset(mad, 0, DPV_CM_MAD_LEN);
	field(mad, 0, 0, 8, 1);    /* BaseVersion */
	field(mad, 1, 0, 8, 0x07); /* MgmtClass: CM */
	field(mad, 2, 0, 8, 2);    /* ClassVersion */
	field(mad, 3, 0, 1, 0);    /* R */
	field(mad, 3, 1, 7, 0x03); /* Method: Send */
	field(mad, 4, 0, 16, status);
	field(mad, 6, 0, 16, class_specific);
	field(mad, 8, 0, 64, tid);
	field(mad, 16, 0, 16, attr);
	field(mad, 20, 0, 32, attr_mod);
}

#endif /* CM_EXPECT_H */
