/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * dpv_pcap: write frames to a pcap file (nanosecond timestamps, Ethernet link type),
 * for the wire test, which builds lib/wire's frames without EAL (so without DPDK's
 * rte_pcapng, which the device's captures use: drivers/dpv_capture.h). Each frame is
 * one fwrite.
 */
#ifndef DPV_PCAP_H
#define DPV_PCAP_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct dpv_pcap;

/**
 * Create (truncate) @p path and write the pcap file header.
 * @return the file, or NULL with errno set.
 */
struct dpv_pcap *dpv_pcap_open(const char *path);

/**
 * Append one frame of @p len bytes, stamped @p ts_ns nanoseconds (any epoch).
 * @return 0, or an errno value (the file is then left as it is).
 */
int dpv_pcap_write(struct dpv_pcap *p, const void *frame, uint32_t len, uint64_t ts_ns);

/** Flush and close (NULL is accepted). @return 0 or an errno value. */
int dpv_pcap_close(struct dpv_pcap *p);

#ifdef __cplusplus
}
#endif

#endif /* DPV_PCAP_H */
