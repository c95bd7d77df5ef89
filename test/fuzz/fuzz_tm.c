/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_tm: libFuzzer harness comparing lib/tm with the reference model.
 *
 * The input's first bytes pick the capacities and the tag pool, the rest is a string
 * of operations (see tm_drive.h) applied to both; a divergence prints the last steps
 * and aborts. Built without libFuzzer, replay_main.c drives the same function.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "tm_drive.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tm_drive_cfg cfg;
	struct tm_drive *d;
	struct tm_src src;
	bool ok = true;

	tm_src_init_bytes(&src, data, size);
	tm_drive_cfg_from_src(&src, &cfg);
	d = tm_drive_create(&cfg, &src);
	if (d == NULL)
		abort();
	while (ok && !tm_src_empty(&src))
		ok = tm_drive_step(d, &src);
	if (ok)
		ok = tm_drive_finish(d);
	if (!ok) {
		tm_drive_report(d, stderr);
		abort();
	}
	tm_drive_destroy(d);
	return 0;
}
