/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * dpv_capture: the frames ports send and receive, into a pcapng file (DPDK's
 * rte_pcapng), for tshark and Wireshark.
 *
 * A capture is one file and one writer thread. Ports join it as sources: the port's
 * owner thread copies each frame (rte_pcapng_copy(): the frame, its direction, the TSC
 * when the port handled it) into an mbuf of the capture's pool and queues the copy on
 * the source's single-producer ring; the writer thread takes what the rings hold and
 * writes it with one writev() per batch. The owner thread makes no system call for a
 * capture and never waits for one: when the pool or the ring is full, the frame is
 * dropped from the capture and counted (the port runs on as if nothing were captured).
 *
 * Each DPDK port has its interface in the file (rte_pcapng of DPDK 22.11 writes one
 * for every ethdev port of the process when the file is made, named "dpdk:<port id>",
 * or its kernel name); a frame is filed under its port's. The section header says
 * which device each port is, and at the end an interface statistics block per source
 * gives the frames captured and dropped.
 *
 * Threads: dpv_capture_open(), _add(), _remove() from control threads (one at a time
 * per capture: the caller serialises them); dpv_capture_frames() from the owner thread of the source's port.
 */
#ifndef DPV_CAPTURE_H
#define DPV_CAPTURE_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_mbuf.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Sources one capture takes. */
#define DPV_CAPTURE_MAX_SOURCES 32u
/** Frames a source queues for the writer; more are dropped until it catches up. */
#define DPV_CAPTURE_RING 2048u
/** Frames the writer writes with one system call, at most. */
#define DPV_CAPTURE_BATCH 64u

struct dpv_capture;
struct dpv_capture_source;

/**
 * Create (truncate) @p path, write the pcapng section header (its comment: @p comment,
 * may be NULL) and an interface per ethdev port of the process, start the writer
 * thread, with a first source: dpv_capture_add()'s @p name, @p ethdev_port and @p out.
 * A capture lives while it has sources.
 *
 * rte_pcapng of DPDK 22.11 names the interfaces itself ("dpdk:<port>", or the kernel's
 * interface); in a regular file they are renamed to @p port_names[port] (indexed by
 * ethdev port; NULL, or a NULL entry, keeps the library's name). A FIFO keeps them.
 * @return 0 and @p out; ENOMEM; ENODEV @p ethdev_port is not a port of the process;
 *         EAGAIN no thread for the writer; or the errno of creating or writing @p path.
 */
int dpv_capture_open(const char *path, const char *comment, const char *const *port_names,
		     const char *name, uint16_t ethdev_port, struct dpv_capture_source **out);

/**
 * A new source of the capture @p other belongs to: frames of ethdev port
 * @p ethdev_port, named @p name in the file's statistics. The caller hands it to the
 * port's owner (dpv_port's capture).
 * @return 0 and @p out; ENOSPC DPV_CAPTURE_MAX_SOURCES already; ENODEV the port has no
 *         interface in the file (it came up after the file was made); ENOMEM.
 */
int dpv_capture_add(struct dpv_capture_source *other, const char *name,
		    uint16_t ethdev_port, struct dpv_capture_source **out);

/** Whether @p a and @p b write the same file. */
bool dpv_capture_same(const struct dpv_capture_source *a, const struct dpv_capture_source *b);

/**
 * Remove a source that no owner thread uses any more: what it queued is written. The
 * last source removed closes the capture: the writer stops, the statistics blocks are
 * written, the file is closed and the capture freed.
 * @return 0, or the errno of the first write to the file that failed.
 */
int dpv_capture_remove(struct dpv_capture_source *s);

/**
 * Copy @p n frames into the capture (owner thread): @p out for frames sent, else
 * received. The frames themselves are not touched.
 * @return the frames queued for the file; the others are dropped (the caller counts
 *         them: port.capture_dropped; the file's statistics block counts them too)
 */
uint16_t dpv_capture_frames(struct dpv_capture_source *s, struct rte_mbuf *const *pkts,
			uint16_t n, bool out);

#ifdef __cplusplus
}
#endif

#endif /* DPV_CAPTURE_H */
