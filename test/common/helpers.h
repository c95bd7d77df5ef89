/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What every test shares whatever layer it tests, in plain C: a byte pattern to fill a
 * buffer with and check it by, a monotonic clock for waits bounded in time, the check
 * of the programs that do not run under cmocka, and the removal of what EAL leaves.
 */
#ifndef TEST_HELPERS_H
#define TEST_HELPERS_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* For programs without cmocka (the multi-process peers): end the process, saying where
 * and with errno, when @p x is false. */
#define CHECK(x)                                                                            \
	do {                                                                                \
		if (!(x)) {                                                                 \
			fprintf(stderr, "%s:%d: %s failed (errno %d)\n", __FILE__, __LINE__,  \
				#x, errno);                                                 \
			exit(1);                                                            \
		}                                                                           \
	} while (0)

/* Fill @p buf with the pattern of @p seed; check_pattern() says whether it is there. */
void fill_pattern(void *buf, size_t len, uint32_t seed);
bool check_pattern(const void *buf, size_t len, uint32_t seed);

/* Milliseconds of CLOCK_MONOTONIC. */
uint64_t now_ms(void);

/* Whether the machine has free hugepages (/proc/meminfo): the hugepage variant of a
 * test skips itself without them. */
bool hugepages_free(void);

/* Remove the run-time directory EAL made for the file prefix @p prefix (in /var/run/dpdk
 * for root, else in $XDG_RUNTIME_DIR/dpdk), which EAL leaves behind even with
 * --in-memory or --no-shconf; nothing when it is not there or holds files. */
void remove_eal_runtime_dir(const char *prefix);

#endif /* TEST_HELPERS_H */
