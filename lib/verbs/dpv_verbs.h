/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * dpverbs' own calls beside rdma-core's verbs API (<infiniband/verbs.h>), for
 * DPDK-native programs that start EAL themselves and want a port as a verbs device.
 * Verbs programs need none of this: ibv_get_device_list() starts EAL from DPV_EAL_ARGS
 * (or the DPV_CONFIG file) and lists one device per DPDK port (doc/guides).
 */
#ifndef DPV_VERBS_H
#define DPV_VERBS_H

#include <stdint.h>

#include <infiniband/verbs.h>

#ifdef __cplusplus
extern "C" {
#endif

/** dpverbs' version, as query_device reports it in fw_ver. */
#define DPV_VERSION "0.1.0"

/** Most TM ops outstanding on one TM SRQ (tm_caps.max_ops). */
#define DPV_VERBS_TM_MAX_OPS 4096u

struct dpv_dev;

/**
 * Open DPDK port @p port_id, already probed by the program's own rte_eal_init(), as a
 * verbs device with IPv4 address @p ipv4 (host order), and return a context on it.
 * The device is named "dpvN" in the order devices are opened; close the context with
 * ibv_close_device() (the device stays open for the life of the process).
 *
 * Control thread, after rte_eal_init().
 * A port opened before keeps its first address. Once a program opens ports this way,
 * ibv_get_device_list() lists those and starts nothing.
 * @return the context, or NULL with errno: ENODEV no such port, EINVAL ipv4 0,
 *         ENOSPC too many devices, ENOMEM, or the port's errno.
 */
struct ibv_context *dpv_verbs_open_port(uint16_t port_id, uint32_t ipv4);

/**
 * Move a device's progress to @p mode: "inline" (the default: threads that poll or
 * post drive it), "lcore:<id>" (a dedicated EAL worker lcore), or "service" (an
 * rte_service the program maps to a service core). What DPV_PROGRESS does for devices
 * that ibv_get_device_list() opens.
 *
 * Control thread.
 * @return 0; EINVAL bad mode or lcore; EBUSY not inline any more; ENOTSUP.
 */
int dpv_verbs_set_progress(struct ibv_context *context, const char *mode);

#ifdef __cplusplus
}
#endif

#endif /* DPV_VERBS_H */
