/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * dpv_faults: a port that wraps another port and, driven by a seed, drops, drops in
 * bursts, reorders, duplicates, corrupts and delays the frames that cross it, so the
 * transport's loss recovery can be exercised on a link that loses nothing.
 *
 * Registered as the driver "faults". Its argument string is the fault spec, an '@',
 * and the wrapped port as driver:arguments:
 *
 *     dpv_port_open(port, "faults", "loss=0.01,seed=7@ethdev:0", pool_size)
 *
 * The wrapper's port has the wrapped port's MAC, MTU, NUMA socket, ethdev port id and
 * mbuf pool. The same seed and the same frames in the same order give the same
 * decisions; each direction draws from its own generator, so how rx and tx calls
 * interleave changes nothing. Only the moment a held frame leaves depends on time
 * (delay_us, and the reorder timeout when traffic stops).
 *
 * Spec: comma-separated key=value pairs, none required (doc/guides/configuration.md):
 *   loss=P          drop each frame with probability P (0..1)
 *   burst=G:B:L     Gilbert-Elliott loss: a frame moves the link from good to bad
 *                   with probability G, from bad to good with B (above 0), and in the
 *                   bad state is dropped with probability L
 *   reorder=P       hold a frame back with probability P until reorder_gap later
 *                   frames have passed it (or DPV_FAULTS_REORDER_MAX_US without one,
 *                   or the next frame held back, as one frame is held at a time)
 *   reorder_gap=N   frames that overtake a held one, 1..64 (default 2)
 *   dup=P           send a frame twice with probability P
 *   corrupt=P       flip one random bit of a RoCEv2 frame's ICRC-covered part (BTH,
 *                   extension headers, payload, ICRC) with probability P, so its ICRC
 *                   no longer matches; other frames (ARP) are never corrupted
 *   delay_us=N      hold every frame N microseconds, 0..1000000
 *   jitter_us=N     plus or minus a uniform random 0..N microseconds, N <= delay_us
 *   seed=N          the generator's seed, 0..2^64-1 (default 1)
 *   dir=tx|rx|both  which directions the faults apply to (default both)
 */
#ifndef DPV_FAULTS_H
#define DPV_FAULTS_H

#include <stddef.h>
#include <stdint.h>

#include "dpv_port.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Longest spec accepted, terminating NUL included. */
#define DPV_FAULTS_SPEC_MAX 256u
/** Frames one direction holds at most (delayed, due, waiting for the wrapped port). */
#define DPV_FAULTS_HOLD 4096u
/** Longest a frame held for reordering waits for later frames to overtake it. */
#define DPV_FAULTS_REORDER_MAX_US 1000u

/** Directions, as bits of dpv_faults_spec.dir. */
enum dpv_faults_dir {
	DPV_FAULTS_TX = 1,
	DPV_FAULTS_RX = 2,
	DPV_FAULTS_BOTH = 3,
};

/** A parsed spec; every probability is in 0..1. */
struct dpv_faults_spec {
	double loss;
	double burst_enter;  /**< good -> bad, per frame */
	double burst_exit;   /**< bad -> good, per frame */
	double burst_loss;   /**< loss in the bad state */
	double reorder;
	uint32_t reorder_gap;
	double dup;
	double corrupt;
	uint32_t delay_us;
	uint32_t jitter_us;
	uint64_t seed;
	unsigned int dir;    /**< enum dpv_faults_dir bits */
};

/** What one direction did. Every frame is seen once; a duplicate is not seen. */
struct dpv_faults_dir_stats {
	uint64_t seen;          /**< frames that entered the fault stage */
	uint64_t dropped;       /**< dropped by loss= */
	uint64_t burst_dropped; /**< dropped by burst= in the bad state */
	uint64_t reordered;     /**< held back for later frames to overtake */
	uint64_t duplicated;    /**< extra copies sent */
	uint64_t corrupted;     /**< RoCEv2 frames with one bit flipped */
	uint64_t delayed;       /**< frames held for delay_us (and jitter) */
	uint64_t overflow;      /**< frames (copies included) dropped: DPV_FAULTS_HOLD full */
};

/** Counters of a faults port, per direction. */
struct dpv_faults_stats {
	struct dpv_faults_dir_stats tx, rx;
};

/** The faults driver, registered as "faults". */
extern const struct dpv_port_ops dpv_faults_ops;

/**
 * Parse and check a spec (the grammar is in this file's description). Needs no EAL:
 * configuration code calls it to refuse a bad spec before anything starts.
 * Any thread.
 * @param spec  the spec; NULL or "" is a spec with no faults
 * @param[out] out  the parsed spec (defaults for keys not given); untouched on error
 * @param[out] why  on EINVAL, one sentence saying what is wrong and what is wanted,
 *                  without a trailing newline (may be NULL)
 * @param why_len   bytes at @p why
 * @return 0; EINVAL an unknown key, a missing value, a value that is not a number or
 *         is out of its range, or a spec longer than DPV_FAULTS_SPEC_MAX - 1.
 */
int dpv_faults_parse(const char *spec, struct dpv_faults_spec *out, char *why,
		     size_t why_len);

/**
 * Read the counters of a faults port.
 * Owner thread for an exact count; another thread reads a possibly stale snapshot.
 * @param port  an open port
 * @param[out] st  the counters
 * @return 0; ENODEV @p port is not open with the faults driver.
 */
int dpv_faults_stats(const struct dpv_port *port, struct dpv_faults_stats *st);

/**
 * Put a new spec in force on a faults port, from the next frame on: probabilities,
 * delays, directions, and generators reseeded from @p spec->seed. Frames held now
 * leave as they were due; the counters go on. For benchmarks that measure one link at
 * several loss rates. Owner thread.
 * @return 0; ENODEV if @p port is not a faults port.
 */
int dpv_faults_set(struct dpv_port *port, const struct dpv_faults_spec *spec);

#ifdef __cplusplus
}
#endif

#endif /* DPV_FAULTS_H */
