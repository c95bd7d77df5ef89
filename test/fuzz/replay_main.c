/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A stand-in for libFuzzer's main, so that every build (gcc too) compiles and runs the
 * harness: with no argument it feeds it a fixed set of pseudo-random inputs; with file
 * arguments it replays those inputs (a crash file libFuzzer saved, for instance).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tm_drive.h"

#define REPLAY_INPUTS 20000u
#define REPLAY_MAX_LEN 8192u

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
replay_file(const char *path)
{
	uint8_t *buf = NULL, *nbuf;
	size_t len = 0, cap = 0, n;
	FILE *f;

	f = fopen(path, "rb");
	if (f == NULL) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return 1;
	}
	do {
		if (len == cap) {
			cap = cap ? cap * 2 : 4096;
			nbuf = realloc(buf, cap);
			if (nbuf == NULL) {
				fprintf(stderr, "replay: out of memory\n");
				free(buf);
				fclose(f);
				return 1;
			}
			buf = nbuf;
		}
		n = fread(buf + len, 1, cap - len, f);
		len += n;
	} while (n > 0);
	fclose(f);
	LLVMFuzzerTestOneInput(buf, len);
	free(buf);
	return 0;
}

int
main(int argc, char **argv)
{
	static uint8_t buf[REPLAY_MAX_LEN];
	struct tm_src src;
	uint32_t seed;
	size_t len, i;
	int a;

	if (argc > 1) {
		for (a = 1; a < argc; a++)
			if (replay_file(argv[a]) != 0)
				return 1;
		printf("replay: %d inputs, no divergence\n", argc - 1);
		return 0;
	}
	for (seed = 1; seed <= REPLAY_INPUTS; seed++) {
		tm_src_init_seed(&src, seed);
		/* short inputs now and then: the driver must cope with running dry */
		len = seed % 16 == 0 ? tm_src_below(&src, 64) :
		      (size_t)(tm_src_u64(&src) % REPLAY_MAX_LEN);
		for (i = 0; i < len; i++)
			buf[i] = tm_src_u8(&src);
		LLVMFuzzerTestOneInput(buf, len);
	}
	printf("replay: %u generated inputs, no divergence\n", REPLAY_INPUTS);
	return 0;
}
