/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * dpv_wire_crc: the two implementations of the ICRC's CRC-32 behind dpv_wire_crc32().
 *
 * The ICRC is the reflected CRC-32 of IEEE 802.3 (polynomial 0x04C11DB7, bit-reflected
 * 0xEDB88320). The SSE4.2 crc32 instruction computes the Castagnoli polynomial, not this
 * one, so it cannot serve. Two implementations compute the same function:
 * - slice-by-8 tables, portable, the reference and the fallback;
 * - carry-less multiplication (x86-64 PCLMULQDQ with SSSE3), folding 16 bytes at a time
 *   with the constants of Intel's "Fast CRC Computation for Generic Polynomials Using
 *   PCLMULQDQ Instruction" (Gopal et al., 2009), chosen at run time when the CPU has it.
 * dpv_wire_crc32() uses the one a constructor picks from the CPU's features when the
 * program loads, before main; the calls here exist so that tests and benchmarks can
 * hold one against the other. Any thread may call anything here.
 */
#ifndef DPV_WIRE_CRC_H
#define DPV_WIRE_CRC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The folding constants, each a function of the polynomial P only. With ' the
 * reflection of 32 bits, k(n) = (x^n mod P)' << 1 (33 bits): folding 64 bytes ahead
 * multiplies by k(4*128+32) and k(4*128-32), 16 bytes ahead by k(128+32) and
 * k(128-32); k(64) folds 64 bits to 32. The Barrett reduction uses the 33-bit
 * reflections of mu = floor(x^64 / P) and of P itself. test/wire derives every one
 * from the polynomial.
 */
#define DPV_WIRE_CRC_K1 0x154442bd4ull /**< k(544) */
#define DPV_WIRE_CRC_K2 0x1c6e41596ull /**< k(480) */
#define DPV_WIRE_CRC_K3 0x1751997d0ull /**< k(160) */
#define DPV_WIRE_CRC_K4 0x0ccaa009eull /**< k(96) */
#define DPV_WIRE_CRC_K5 0x163cd6124ull /**< k(64) */
#define DPV_WIRE_CRC_MU 0x1f7011641ull /**< floor(x^64 / P), reflected over 33 bits */
#define DPV_WIRE_CRC_P 0x1db710641ull  /**< P reflected over 33 bits */

/**
 * Continue a CRC-32 with the slice-by-8 tables (the reference).
 * @param state  the running state (0xffffffff to start one)
 * @param data   @p len bytes, any alignment
 * @return the new state
 */
uint32_t dpv_wire_crc32_table(uint32_t state, const void *data, size_t len);

/** Whether this CPU runs dpv_wire_crc32_clmul() (PCLMULQDQ and SSSE3). */
bool dpv_wire_crc32_clmul_ok(void);

/** The implementation dpv_wire_crc32() uses: "pclmulqdq" or "slice-by-8". */
const char *dpv_wire_crc32_impl(void);

/**
 * Continue a CRC-32 by carry-less multiplication; the same result as
 * dpv_wire_crc32_table() for every input.
 * Call only where dpv_wire_crc32_clmul_ok() is true; on a build without it (not
 * x86-64) it is the table.
 * @param state  the running state
 * @param data   @p len bytes, any alignment
 * @return the new state
 */
uint32_t dpv_wire_crc32_clmul(uint32_t state, const void *data, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* DPV_WIRE_CRC_H */
