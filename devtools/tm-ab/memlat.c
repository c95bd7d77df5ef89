/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * memlat: the time of one load that depends on the one before, over a working set of
 * each size given, in MiB: a random cycle through every cache line of the set, so
 * neither the hardware prefetcher nor the out-of-order core can start a load early.
 * Where the time per load jumps is where the set leaves a level of this machine's
 * caches, as it is (a virtual machine's share of an L3 included), whatever the CPU's
 * data sheet says. `dpv-perf tm` at depth 65,536 touches about 6 MiB (tm-perf.md).
 *
 *   memlat MIB...        (example: memlat 1 2 4 6 8 16 64)
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LINE 64u
#define LOADS 5000000u

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* xorshift64*: a fixed seed, so two runs chase the same cycle. */
static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

static int chase(unsigned long mib)
{
	size_t lines = (size_t)mib * 1024 * 1024 / LINE, i, j, t, x = 0;
	uint64_t seed = 0x6d656d6c6174ull;
	size_t *order, *mem;
	double t0;

	mem = aligned_alloc(LINE, lines * LINE);
	order = malloc(lines * sizeof(*order));
	if (mem == NULL || order == NULL) {
		fprintf(stderr, "memlat: %lu MiB: %s\n", mib, strerror(ENOMEM));
		free(mem);
		free(order);
		return 1;
	}
	for (i = 0; i < lines; i++)
		order[i] = i;
	for (i = lines - 1; i > 0; i--) {
		j = (size_t)(rnd(&seed) % (i + 1));
		t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	/* Each line holds the index of the next line of the cycle. */
	for (i = 0; i < lines; i++)
		mem[order[i] * (LINE / sizeof(*mem))] = order[(i + 1) % lines] * (LINE / sizeof(*mem));
	for (i = 0; i < lines; i++)
		x = mem[x];
	t0 = now_ns();
	for (i = 0; i < LOADS; i++)
		x = mem[x];
	/* x is printed so that the chase cannot be left out. */
	printf("%6lu MiB: %6.1f ns a load%s\n", mib, (now_ns() - t0) / LOADS, x == SIZE_MAX ? "!" : "");
	free(mem);
	free(order);
	return 0;
}

int main(int argc, char **argv)
{
	unsigned long mib;
	char *end;
	int rc = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: memlat MIB...   (working-set sizes, 1..65536 MiB)\n");
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		errno = 0;
		mib = strtoul(argv[i], &end, 10);
		if (errno != 0 || *end != '\0' || mib < 1 || mib > 65536) {
			fprintf(stderr, "memlat: '%s': want a size in MiB, 1..65536\n", argv[i]);
			return 2;
		}
	}
	for (int i = 1; i < argc; i++)
		rc |= chase(strtoul(argv[i], NULL, 10));
	return rc;
}
