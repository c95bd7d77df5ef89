/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpv-perf: what main.c offers its subcommands. A subcommand parses its own options,
 * measures, and prints either a table or one JSON object on stdout through the helpers
 * below, so every benchmark's output looks alike and stays machine-readable.
 */
#ifndef DPV_PERF_H
#define DPV_PERF_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Exit codes shared by every subcommand. */
#define PERF_EXIT_OK 0      /* measured (a missed target is still a measurement) */
#define PERF_EXIT_FAIL 1    /* a wrong result, or the system refused a resource */
#define PERF_EXIT_USAGE 2   /* bad command line */

/* One subcommand: its name, a line for --help, and its entry point. */
struct perf_cmd {
	const char *name;
	const char *summary;
	int (*run)(int argc, char **argv);
};

extern const struct perf_cmd perf_cmd_tm;
#ifdef DPV_PERF_VERBS
/* The verbs benchmarks: built when DPDK (and so the verbs facade) is. */
extern const struct perf_cmd perf_cmd_srq_post;
extern const struct perf_cmd perf_cmd_pingpong;
extern const struct perf_cmd perf_cmd_rate;
extern const struct perf_cmd perf_cmd_idle;
extern const struct perf_cmd perf_cmd_loss;
extern const struct perf_cmd perf_cmd_rndv;
extern const struct perf_cmd perf_cmd_link;
extern const struct perf_cmd perf_cmd_xrc;
#endif

/* Report a bad command line on stderr; returns PERF_EXIT_USAGE. */
int perf_usage_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/*
 * A subcommand's command line: getopt_long() over @p argv with @p longopts and the
 * short option -h. -h, and a long option whose val is 'h' (--help), print @p help;
 * every other option goes to @p opt with @p ctx, its code and, when it takes one, its
 * value; @p opt returns 0, or PERF_EXIT_USAGE after perf_usage_error(). An
 * unknown option, one without its value and a word that is not an option are usage
 * errors of @p cmd. @return 0 to run, -1 after the help, or PERF_EXIT_USAGE.
 */
int perf_getopts(const char *cmd, int argc, char **argv, const struct option *longopts,
		 void (*help)(void), int (*opt)(void *ctx, int c, const char *arg), void *ctx);
/* Report a failure on stderr. */
void perf_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Option values: 0, or -1 when @p s is not a number in [min, max]. */
int perf_parse_u32(const char *s, uint32_t min, uint32_t max, uint32_t *out); /* decimal */
int perf_parse_u64(const char *s, uint64_t *out); /* decimal, 0x hex or 0 octal */
int perf_parse_seconds(const char *s, double min, double max, double *out);
/* A comma-separated list of at most @p cap numbers in [min, max]; returns the count or -1. */
int perf_parse_u32_list(const char *s, uint32_t min, uint32_t max, uint32_t *out,
			unsigned int cap);

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t perf_now_ns(void);
/* Median of @p n values (n >= 1); @p v is sorted in place. */
double perf_median(double *v, unsigned int n);

/*
 * Nearest-rank quantiles of @p n samples (n >= 1): out[i] is the smallest sample with
 * at least q[i] * n of them at or below it, for @p k fractions @p q in increasing
 * order. @p v is reordered (a selection around each rank, not a sort).
 */
void perf_ranks_u64(uint64_t *v, uint32_t n, const double *q, unsigned int k, uint64_t *out);

/* A text table: columns of fixed width, right-aligned except the first. */
struct perf_table_col {
	const char *head;
	int width;
};
/* The room of one cell of a row, its terminating NUL included. */
#define PERF_CELL_LEN 32
void perf_table_header(FILE *f, const struct perf_table_col *cols, unsigned int n);
void perf_table_row(FILE *f, const struct perf_table_col *cols, unsigned int n,
		    const char (*cells)[PERF_CELL_LEN]);

/*
 * A streaming JSON writer: objects and arrays nest, commas and indentation are
 * handled here. @p key is NULL inside an array.
 */
#define PERF_JSON_MAX_DEPTH 16
struct perf_json {
	FILE *f;
	unsigned int depth;
	bool has_items[PERF_JSON_MAX_DEPTH];
};
void perf_json_init(struct perf_json *j, FILE *f);
void perf_json_object_begin(struct perf_json *j, const char *key);
void perf_json_object_end(struct perf_json *j);
void perf_json_array_begin(struct perf_json *j, const char *key);
void perf_json_array_end(struct perf_json *j);
void perf_json_str(struct perf_json *j, const char *key, const char *val);
void perf_json_u64(struct perf_json *j, const char *key, uint64_t val);
/* Non-finite values are written as null, which JSON can carry. */
void perf_json_double(struct perf_json *j, const char *key, double val);
void perf_json_bool(struct perf_json *j, const char *key, bool val);
/* Ends the document with a newline. */
void perf_json_finish(struct perf_json *j);

#endif /* DPV_PERF_H */
