/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What every test shares whatever layer it tests, in plain C: a byte pattern to fill a
 * buffer with and check it by, and a monotonic clock for waits bounded in time.
 */
#ifndef TEST_HELPERS_H
#define TEST_HELPERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Fill @p buf with the pattern of @p seed; check_pattern() says whether it is there. */
void fill_pattern(void *buf, size_t len, uint32_t seed);
bool check_pattern(const void *buf, size_t len, uint32_t seed);

/* Milliseconds of CLOCK_MONOTONIC. */
uint64_t now_ms(void);

#endif /* TEST_HELPERS_H */
