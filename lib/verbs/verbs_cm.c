/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The calls of verbs_cm.h: the drop-in librdmacm's way to a context's device. Each
 * one names the device of the context and hands over to the engine, which takes the
 * device itself (dpv_dev_own()).
 */
#include "verbs_cm.h"
#include "verbs_priv.h"

static struct dpv_dev *dev_of(struct ibv_context *ctx)
{
	return to_ctx(ctx)->dev;
}

uint32_t dpv_verbs_cm_ipv4(struct ibv_context *ctx)
{
	return to_ctx(ctx)->device->ipv4;
}

int dpv_verbs_cm_set_timing(struct ibv_context *ctx, const struct dpv_dev_cm_timing *t)
{
	return dpv_dev_cm_set_timing(dev_of(ctx), t);
}

void dpv_verbs_cm_get_timing(struct ibv_context *ctx, struct dpv_dev_cm_timing *t)
{
	dpv_dev_cm_get_timing(dev_of(ctx), t);
}

int dpv_verbs_cm_resolve(struct ibv_context *ctx, uint32_t ip, uint32_t timeout_ms, uint32_t *id)
{
	return dpv_dev_cm_resolve(dev_of(ctx), ip, timeout_ms, id);
}

int dpv_verbs_cm_resolve_cancel(struct ibv_context *ctx, uint32_t id)
{
	return dpv_dev_cm_resolve_cancel(dev_of(ctx), id);
}

void dpv_verbs_cm_set_notify(struct ibv_context *ctx, dpv_dev_cm_notify_fn *fn, void *arg)
{
	dpv_dev_cm_set_notify(dev_of(ctx), fn, arg);
}

int dpv_verbs_cm_listen(struct ibv_context *ctx, uint64_t service_id, uint32_t *id)
{
	return dpv_dev_cm_listen(dev_of(ctx), service_id, id);
}

int dpv_verbs_cm_unlisten(struct ibv_context *ctx, uint32_t id)
{
	return dpv_dev_cm_unlisten(dev_of(ctx), id);
}

int dpv_verbs_cm_connect(struct ibv_context *ctx, uint32_t dst_ip, uint64_t service_id,
			 const struct dpv_dev_cm_param *p, uint32_t *id)
{
	return dpv_dev_cm_connect(dev_of(ctx), dst_ip, service_id, p, id);
}

int dpv_verbs_cm_accept(struct ibv_context *ctx, uint32_t id, const struct dpv_dev_cm_param *p)
{
	return dpv_dev_cm_accept(dev_of(ctx), id, p);
}

int dpv_verbs_cm_reject(struct ibv_context *ctx, uint32_t id, const void *pdata, uint8_t len)
{
	return dpv_dev_cm_reject(dev_of(ctx), id, pdata, len);
}

int dpv_verbs_cm_establish(struct ibv_context *ctx, uint32_t id)
{
	return dpv_dev_cm_establish(dev_of(ctx), id);
}

int dpv_verbs_cm_disconnect(struct ibv_context *ctx, uint32_t id)
{
	return dpv_dev_cm_disconnect(dev_of(ctx), id);
}

int dpv_verbs_cm_sidr_request(struct ibv_context *ctx, uint32_t dst_ip, uint64_t service_id,
			      const void *pdata, uint8_t len, uint32_t *id)
{
	return dpv_dev_cm_sidr_request(dev_of(ctx), dst_ip, service_id, pdata, len, id);
}

int dpv_verbs_cm_sidr_accept(struct ibv_context *ctx, uint32_t id, uint32_t qpn, uint32_t qkey,
			     const void *pdata, uint8_t len)
{
	return dpv_dev_cm_sidr_accept(dev_of(ctx), id, qpn, qkey, pdata, len);
}

int dpv_verbs_cm_get_event(struct ibv_context *ctx, struct dpv_dev_cm_event *ev)
{
	return dpv_dev_cm_get_event(dev_of(ctx), ev);
}
