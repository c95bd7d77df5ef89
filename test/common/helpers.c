/* SPDX-License-Identifier: BSD-3-Clause */
/* The patterns, clock and clean-up of helpers.h. */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"

void fill_pattern(void *buf, size_t len, uint32_t seed)
{
	uint8_t *p = buf;
	uint32_t x = seed * 2654435761u + 1;

	for (size_t i = 0; i < len; i++) {
		x = x * 1103515245u + 12345u;
		p[i] = (uint8_t)(x >> 16);
	}
}

bool check_pattern(const void *buf, size_t len, uint32_t seed)
{
	const uint8_t *p = buf;
	uint32_t x = seed * 2654435761u + 1;

	for (size_t i = 0; i < len; i++) {
		x = x * 1103515245u + 12345u;
		if (p[i] != (uint8_t)(x >> 16))
			return false;
	}
	return true;
}

uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

bool hugepages_free(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[128];
	long n = 0;

	if (f == NULL)
		return false;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "HugePages_Free: %ld", &n) == 1)
			break;
	fclose(f);
	return n > 0;
}

void remove_eal_runtime_dir(const char *prefix)
{
	const char *run = getenv("XDG_RUNTIME_DIR");
	char path[512];

	/* EAL's rule: /var/run for root, else $XDG_RUNTIME_DIR, else /tmp. */
	if (getuid() == 0 || run == NULL || run[0] == '\0')
		run = getuid() == 0 ? "/var/run" : "/tmp";
	snprintf(path, sizeof(path), "%s/dpdk/%s", run, prefix);
	rmdir(path);
}
