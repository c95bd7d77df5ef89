/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpv-perf link: what dpverbs costs on a link between two processes, against raw DPDK
 * frames on the same link in the same run. perf_link.c is the command: options, the
 * rounds, the peers it starts (two sides, perftest's and UCX's programs), medians,
 * ratios, the table, JSON and plots. perf_link_side.c is one side: its own EAL on its
 * own core, a raw ethdev port and a verbs device on the link, and the cases of a round,
 * in the same order on both sides; side A measures and reports to the command.
 */
#ifndef DPV_PERF_LINK_H
#define DPV_PERF_LINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "perf.h"

#define LK_CMD "link"

/* Bandwidth sizes a run may ask for (4 KiB to 4 MiB by default). */
#define LK_MAX_SIZES 16u
#define LK_MIN_BW_SIZE 64u
#define LK_MAX_BW_SIZE (64u << 20)

/* What a case measures. */
enum lk_kind {
	LK_RAW_PP,      /* raw frames bounced A -> B -> A: one-way latency */
	LK_RAW_STREAM,  /* raw frames A -> B in bursts: frames/s and payload bytes/s */
	LK_SEND_LAT,    /* RC SEND ping-pong */
	LK_WRITE_LAT,   /* RC WRITE ping-pong, each side polling its memory */
	LK_TM_LAT,      /* tagged eager SEND into a TM-SRQ ping-pong */
	LK_SEND_RATE,   /* RC SENDs of lat_size bytes with a window */
	LK_WRITE_BW,    /* RC WRITEs of a size with a window */
	LK_SEND_BW,     /* RC SENDs of a size with a window */
	LK_RNDV_BW,     /* tagged rendezvous (TMH RNDV; the receiver's device READs) */
	LK_READ_BW,     /* RC READs of a size with a window, A reading B's memory */
	LK_NB_KINDS
};

/* The latency quantiles each latency case reports for the distribution plot. */
#define LK_CDF_N 49u

/* One case of a round: the plan both sides follow. */
struct lk_case {
	enum lk_kind kind;
	uint32_t size;       /* payload bytes; for raw kinds the frame's length */
	uint64_t count;      /* round trips, messages or frames measured */
};

/* One case's result, from side A to the command over a pipe. */
struct lk_result {
	struct lk_case c;
	uint64_t done;       /* round trips, messages or frames that arrived */
	double p50, p99, p999, max, min; /* one-way microseconds (latency kinds) */
	double rate;         /* per second: messages (or frames) */
	double mbps;         /* payload MB/s (10^6 bytes) */
	double cdf[LK_CDF_N];/* one-way microseconds at lk_cdf_q[] */
	/* Each side's inline helper thread on its CPU while the case ran, in percent of
	 * the case's time (verbs kinds; NAN for raw ones, which run with it off). */
	double helper_pct[2];
};

/* The fractions of lk_result.cdf, in increasing order. */
extern const double lk_cdf_q[LK_CDF_N];

/* A run's options, those of both sides included. */
struct lk_opts {
	bool json;
	const char *json_file;
	const char *plot_dir;
	bool quick;
	bool huge;
	bool ext;            /* run perftest and ucx_perftest where installed */
	uint32_t rounds;
	uint32_t lat_iters, warmup, lat_size;
	uint32_t rate_msgs;
	uint32_t window;     /* SENDs and WRITEs in flight (perftest's tx depth: 128) */
	uint64_t bw_bytes;   /* bytes each bandwidth case moves */
	uint32_t sizes[LK_MAX_SIZES];
	unsigned int nb_sizes;
	unsigned int core[2];
	char *vdev[2];       /* the verbs device's port of each side (EAL --vdev) */
	char *raw_vdev[2];   /* the raw port of each side, on the same link */
	const char *netns[2];/* the network namespace of each side (ip netns), or NULL */
	const char *progress;/* as given: inline, lcore:N or service:N */
	int progress_cpu;    /* lcore:N, service:N: N; -1 for inline */
	bool service;        /* service:N: the progress lcore is a service lcore (EAL -S) */
	uint32_t idle_us;    /* the inline helper's idle time (dpv_verbs_set_inline_idle_us) */
	const char *dropin;  /* the drop-in libibverbs.so.1's directory, for perftest and UCX */
	char tmpdir[64];
	char prefix[32];     /* EAL file prefix stem */
};

/*
 * The lcore id of a side's progress lcore (lcore:N, service:N): mapped to CPU N with
 * EAL's --lcores, so that it may share a CPU with the side's main lcore (a 2-core
 * machine has no third core to give it).
 */
#define LK_PROGRESS_LCORE 127u

/*
 * The EAL core options of side @p me into @p buf: "-l C" (inline), else "--lcores
 * C@C,W@N" with W = LK_PROGRESS_LCORE, and "-S W" for a service lcore; then
 * --main-lcore C. @p mode gets the mode for dpv_verbs_set_progress() / DPV_PROGRESS.
 */
void lk_eal_cores(const struct lk_opts *o, unsigned int me, char *buf, size_t len,
		  char *mode, size_t mode_len);

/* The cases of one round, in order; @return their count (at most @p cap). */
unsigned int lk_plan(const struct lk_opts *o, struct lk_case *cases, unsigned int cap);

/*
 * Run side @p me (0: A, the memif server, which measures; 1: B) of round @p round in
 * this process: EAL on o->core[me], the cases of lk_plan() in order, synchronised with
 * the peer over the stream socket @p ctl; A writes one struct lk_result a case to
 * @p out. @return PERF_EXIT_OK or PERF_EXIT_FAIL (after saying why on stderr). Calls
 * rte_eal_init(): the process runs one side and exits.
 */
int lk_side_run(const struct lk_opts *o, unsigned int me, unsigned int round, int ctl, int out);

/* The name of a kind in the table and the JSON. */
const char *lk_kind_name(enum lk_kind k);

#endif /* DPV_PERF_LINK_H */
