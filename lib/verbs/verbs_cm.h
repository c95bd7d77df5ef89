/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the drop-in librdmacm (lib/rdmacm) calls of the drop-in libibverbs: the device
 * of a context, its port's address, and the device's connection
 * manager (dpv_dev_cm_*() of dpv_engine.h) reached through the context. Exported from
 * libibverbs.so.1 in the private version node DPVERBS_PRIVATE_0.1, as rdma-core keeps
 * the calls between its own libraries in IBVERBS_PRIVATE_<n>: no program is meant to
 * call them, and the header is not installed.
 *
 * Every call takes a context of the drop-in (ibv_open_device()) and is a control-path
 * call: any thread but the device's owner (never from a notify function). The CM's
 * types and errors are dpv_engine.h's.
 */
#ifndef DPV_VERBS_CM_H
#define DPV_VERBS_CM_H

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "dpv_engine.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * The IPv4 address of the context's port (host order): the address its GID index 0
 * carries, IPv4-mapped.
 */
uint32_t dpv_verbs_cm_ipv4(struct ibv_context *ctx);

/** dpv_dev_cm_set_timing() on the context's device. */
int dpv_verbs_cm_set_timing(struct ibv_context *ctx, const struct dpv_dev_cm_timing *t);
/** dpv_dev_cm_get_timing() on the context's device. */
void dpv_verbs_cm_get_timing(struct ibv_context *ctx, struct dpv_dev_cm_timing *t);
/** dpv_dev_cm_resolve() on the context's device. */
int dpv_verbs_cm_resolve(struct ibv_context *ctx, uint32_t ip, uint32_t timeout_ms, uint32_t *id);
/** dpv_dev_cm_resolve_cancel() on the context's device. */
int dpv_verbs_cm_resolve_cancel(struct ibv_context *ctx, uint32_t id);
/** dpv_dev_cm_set_notify() on the context's device. */
void dpv_verbs_cm_set_notify(struct ibv_context *ctx, dpv_dev_cm_notify_fn *fn, void *arg);
/** dpv_dev_cm_listen() on the context's device. */
int dpv_verbs_cm_listen(struct ibv_context *ctx, uint64_t service_id, uint32_t *id);
/** dpv_dev_cm_unlisten() on the context's device. */
int dpv_verbs_cm_unlisten(struct ibv_context *ctx, uint32_t id);
/** dpv_dev_cm_connect() on the context's device. */
int dpv_verbs_cm_connect(struct ibv_context *ctx, uint32_t dst_ip, uint64_t service_id,
			 const struct dpv_dev_cm_param *p, uint32_t *id);
/** dpv_dev_cm_accept() on the context's device. */
int dpv_verbs_cm_accept(struct ibv_context *ctx, uint32_t id, const struct dpv_dev_cm_param *p);
/** dpv_dev_cm_reject() on the context's device. */
int dpv_verbs_cm_reject(struct ibv_context *ctx, uint32_t id, const void *pdata, uint8_t len);
/** dpv_dev_cm_establish() on the context's device. */
int dpv_verbs_cm_establish(struct ibv_context *ctx, uint32_t id);
/** dpv_dev_cm_disconnect() on the context's device. */
int dpv_verbs_cm_disconnect(struct ibv_context *ctx, uint32_t id);
/** dpv_dev_cm_sidr_request() on the context's device. */
int dpv_verbs_cm_sidr_request(struct ibv_context *ctx, uint32_t dst_ip, uint64_t service_id,
			      const void *pdata, uint8_t len, uint32_t *id);
/** dpv_dev_cm_sidr_accept() on the context's device. */
int dpv_verbs_cm_sidr_accept(struct ibv_context *ctx, uint32_t id, uint32_t qpn, uint32_t qkey,
			     const void *pdata, uint8_t len);
/** dpv_dev_cm_get_event() on the context's device. */
int dpv_verbs_cm_get_event(struct ibv_context *ctx, struct dpv_dev_cm_event *ev);

#ifdef __cplusplus
}
#endif

#endif /* DPV_VERBS_CM_H */
