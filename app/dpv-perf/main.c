/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpv-perf: dpverbs' benchmarks. `dpv-perf SUBCOMMAND [options]`; each subcommand
 * lives in its own file and uses the parsing and output helpers defined here.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "perf.h"

static const struct perf_cmd *const perf_cmds[] = {
	&perf_cmd_tm,
#ifdef DPV_PERF_VERBS
	&perf_cmd_srq_post,
	&perf_cmd_pingpong,
	&perf_cmd_rate,
	&perf_cmd_idle,
	&perf_cmd_loss,
	&perf_cmd_rndv,
	&perf_cmd_link,
	&perf_cmd_xrc,
#endif
};
#define PERF_NB_CMDS (sizeof(perf_cmds) / sizeof(perf_cmds[0]))

/* With no subcommand, the options go to this one. */
static const struct perf_cmd *const perf_cmd_default = &perf_cmd_tm;

static void
usage(FILE *f)
{
	unsigned int i;

	fprintf(f, "usage: dpv-perf [SUBCOMMAND] [OPTIONS]\n"
		   "       dpv-perf SUBCOMMAND --help\n\n"
		   "subcommands (default: %s):\n", perf_cmd_default->name);
	for (i = 0; i < PERF_NB_CMDS; i++)
		fprintf(f, "  %-8s  %s\n", perf_cmds[i]->name, perf_cmds[i]->summary);
	fprintf(f, "\nexit status: 0 measured (even when a target is missed), 1 a wrong\n"
		   "result or a resource failure, 2 a bad command line.\n");
}

int
main(int argc, char **argv)
{
	unsigned int i;

	if (argc < 2 || argv[1][0] == '-') {
		if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
			usage(stdout);
			return PERF_EXIT_OK;
		}
		/* Options without a subcommand: the subcommand sees them after its name. */
		argv[0] = (char *)(uintptr_t)perf_cmd_default->name;
		return perf_cmd_default->run(argc, argv);
	}
	for (i = 0; i < PERF_NB_CMDS; i++)
		if (strcmp(argv[1], perf_cmds[i]->name) == 0)
			return perf_cmds[i]->run(argc - 1, argv + 1);
	fprintf(stderr, "dpv-perf: unknown subcommand '%s'\n\n", argv[1]);
	usage(stderr);
	return PERF_EXIT_USAGE;
}

int
perf_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "dpv-perf %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry 'dpv-perf %s --help'.\n", cmd);
	return PERF_EXIT_USAGE;
}

int
perf_getopts(const char *cmd, int argc, char **argv, const struct option *longopts,
	     void (*help)(void), int (*opt)(void *ctx, int c, const char *arg), void *ctx)
{
	int c, ret;

	/* Each subcommand parses from its own first word; getopt reports nothing itself. */
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			help();
			return -1;
		case ':':
			return perf_usage_error(cmd, "option '%s' needs a value", argv[optind - 1]);
		case '?':
			return perf_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
		default:
			ret = opt(ctx, c, optarg);
			if (ret != 0)
				return ret;
		}
	}
	if (optind < argc)
		return perf_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
	return 0;
}

void
perf_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "dpv-perf: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* strtoull() alone accepts "-1", leading blanks and an empty string: refuse them. */
static int
parse_u64_range(const char *s, int base, uint64_t min, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (s == NULL || s[0] < '0' || s[0] > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, base);
	if (errno != 0 || *end != '\0' || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

int
perf_parse_u32(const char *s, uint32_t min, uint32_t max, uint32_t *out)
{
	uint64_t v;

	if (parse_u64_range(s, 10, min, max, &v) != 0)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

int
perf_parse_u64(const char *s, uint64_t *out)
{
	return parse_u64_range(s, 0, 0, UINT64_MAX, out);
}

int
perf_parse_seconds(const char *s, double min, double max, double *out)
{
	char *end;
	double v;

	if (s == NULL || ((s[0] < '0' || s[0] > '9') && s[0] != '.'))
		return -1;
	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || *end != '\0' || !isfinite(v) || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

int
perf_parse_u32_list(const char *s, uint32_t min, uint32_t max, uint32_t *out,
		    unsigned int cap)
{
	char buf[32];
	unsigned int n = 0;
	const char *p = s;
	size_t len;

	for (;;) {
		len = strcspn(p, ",");
		if (len == 0 || len >= sizeof(buf) || n == cap)
			return -1;
		memcpy(buf, p, len);
		buf[len] = '\0';
		if (perf_parse_u32(buf, min, max, &out[n]) != 0)
			return -1;
		n++;
		if (p[len] == '\0')
			return (int)n;
		p += len + 1;
	}
}

uint64_t
perf_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double
perf_median(double *v, unsigned int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/*
 * Puts the k-th smallest of v[0..n) at v[k], none greater before it and none smaller
 * after it (Hoare's FIND): linear on average, where a sort of every sample would cost
 * n log n.
 */
static void
select_u64(uint64_t *v, int64_t n, int64_t k)
{
	int64_t l = 0, r = n - 1, i, j;
	uint64_t x, t;

	while (l < r) {
		x = v[k];
		i = l;
		j = r;
		do {
			while (v[i] < x)
				i++;
			while (x < v[j])
				j--;
			if (i <= j) {
				t = v[i];
				v[i] = v[j];
				v[j] = t;
				i++;
				j--;
			}
		} while (i <= j);
		if (j < k)
			l = i;
		if (k < i)
			r = j;
	}
}

void
perf_ranks_u64(uint64_t *v, uint32_t n, const double *q, unsigned int k, uint64_t *out)
{
	uint32_t from = 0, i;
	double r;

	for (unsigned int x = 0; x < k; x++) {
		r = ceil(q[x] * n);
		i = r < 1 ? 0 : (uint32_t)r - 1;
		if (i >= n)
			i = n - 1;
		/* The samples above an earlier rank are none smaller than it: a later
		 * rank is among them. */
		select_u64(v + from, n - from, i - from);
		out[x] = v[i];
		from = i;
	}
}

void
perf_table_header(FILE *f, const struct perf_table_col *cols, unsigned int n)
{
	unsigned int i;
	int total = 0;

	for (i = 0; i < n; i++) {
		fprintf(f, i == 0 ? "%-*s" : "  %*s", cols[i].width, cols[i].head);
		total += cols[i].width + (i == 0 ? 0 : 2);
	}
	fputc('\n', f);
	while (total-- > 0)
		fputc('-', f);
	fputc('\n', f);
}

void
perf_table_row(FILE *f, const struct perf_table_col *cols, unsigned int n,
	       const char (*cells)[PERF_CELL_LEN])
{
	unsigned int i;

	for (i = 0; i < n; i++)
		fprintf(f, i == 0 ? "%-*s" : "  %*s", cols[i].width, cells[i]);
	fputc('\n', f);
	fflush(f);
}

void
perf_json_init(struct perf_json *j, FILE *f)
{
	memset(j, 0, sizeof(*j));
	j->f = f;
}

/* Separator, indentation and key of the next item at the current depth. */
static void
json_item(struct perf_json *j, const char *key)
{
	const char *p;

	if (j->depth > 0) {
		fputs(j->has_items[j->depth] ? ",\n" : "\n", j->f);
		j->has_items[j->depth] = true;
		fprintf(j->f, "%*s", (int)j->depth * 2, "");
	}
	if (key == NULL)
		return;
	fputc('"', j->f);
	for (p = key; *p != '\0'; p++)
		fputc(*p, j->f);
	fputs("\": ", j->f);
}

static void
json_open(struct perf_json *j, const char *key, char c)
{
	json_item(j, key);
	fputc(c, j->f);
	if (j->depth + 1 < PERF_JSON_MAX_DEPTH)
		j->depth++;
	j->has_items[j->depth] = false;
}

static void
json_close(struct perf_json *j, char c)
{
	bool had = j->has_items[j->depth];

	if (j->depth > 0)
		j->depth--;
	if (had)
		fprintf(j->f, "\n%*s", (int)j->depth * 2, "");
	fputc(c, j->f);
}

void
perf_json_object_begin(struct perf_json *j, const char *key)
{
	json_open(j, key, '{');
}

void
perf_json_object_end(struct perf_json *j)
{
	json_close(j, '}');
}

void
perf_json_array_begin(struct perf_json *j, const char *key)
{
	json_open(j, key, '[');
}

void
perf_json_array_end(struct perf_json *j)
{
	json_close(j, ']');
}

void
perf_json_str(struct perf_json *j, const char *key, const char *val)
{
	const unsigned char *p;

	json_item(j, key);
	fputc('"', j->f);
	for (p = (const unsigned char *)val; *p != '\0'; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(j->f, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(j->f, "\\u%04x", *p);
		else
			fputc(*p, j->f);
	}
	fputc('"', j->f);
}

void
perf_json_u64(struct perf_json *j, const char *key, uint64_t val)
{
	json_item(j, key);
	fprintf(j->f, "%" PRIu64, val);
}

void
perf_json_double(struct perf_json *j, const char *key, double val)
{
	json_item(j, key);
	if (isfinite(val))
		fprintf(j->f, "%.9g", val);
	else
		fputs("null", j->f);
}

void
perf_json_bool(struct perf_json *j, const char *key, bool val)
{
	json_item(j, key);
	fputs(val ? "true" : "false", j->f);
}

void
perf_json_finish(struct perf_json *j)
{
	fputc('\n', j->f);
	fflush(j->f);
}
