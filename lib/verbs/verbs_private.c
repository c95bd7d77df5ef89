/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libibverbs' provider interface (node IBVERBS_PRIVATE_34 of libibverbs.map), for the
 * providers a program loads beside the drop-in, not for dpverbs.
 *
 * Programs built on rdma-core link its provider libraries directly for their
 * direct-verbs calls: perftest, UCX's libuct_ib and pyverbs link Debian's libmlx5.so.1
 * and libefa.so.1. Those import this interface from libibverbs.so.1 (the kernel
 * commands, context set-up, driver registration) and are linked to fail at load time
 * without it. With these definitions they load: their constructors register their
 * drivers, which the drop-in does not keep, since no kernel device is there for them
 * to drive and dpverbs' devices are its own. So no provider ever gets a device or a
 * context, and its direct-verbs calls on a dpverbs object answer as for any device not
 * theirs (mlx5dv_is_supported() is false, mlx5dv_query_device() and
 * efadv_query_device() give EOPNOTSUPP: they read the driver of the device, which is
 * none of theirs).
 *
 * Each kernel command (ibv_cmd_*, execute_ioctl) therefore fails with EOPNOTSUPP, the
 * value rdma-core's own give when the kernel lacks a command; the calls that build a
 * provider's context fail the same way with errno set. The argument lists are
 * rdma-core's; nothing here reads them, so each is declared without parameters (a
 * call with arguments is valid for the C calling convention of these platforms) and
 * rdma-core's private structs stay undeclared.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "verbs_priv.h"

/* An int-returning kernel command: EOPNOTSUPP, no device to send it to. */
#define DPV_NO_KERNEL_CMD(name)                                                            \
	int name(void);                                                                     \
	int name(void)                                                                      \
	{                                                                                   \
		return EOPNOTSUPP;                                                          \
	}

DPV_NO_KERNEL_CMD(execute_ioctl)
DPV_NO_KERNEL_CMD(ibv_cmd_advise_mr)
DPV_NO_KERNEL_CMD(ibv_cmd_alloc_dm)
DPV_NO_KERNEL_CMD(ibv_cmd_alloc_mw)
DPV_NO_KERNEL_CMD(ibv_cmd_alloc_pd)
DPV_NO_KERNEL_CMD(ibv_cmd_attach_mcast)
DPV_NO_KERNEL_CMD(ibv_cmd_close_xrcd)
DPV_NO_KERNEL_CMD(ibv_cmd_create_ah)
DPV_NO_KERNEL_CMD(ibv_cmd_create_counters)
DPV_NO_KERNEL_CMD(ibv_cmd_create_cq)
DPV_NO_KERNEL_CMD(ibv_cmd_create_cq_ex)
DPV_NO_KERNEL_CMD(ibv_cmd_create_flow)
DPV_NO_KERNEL_CMD(ibv_cmd_create_flow_action_esp)
DPV_NO_KERNEL_CMD(ibv_cmd_create_qp)
DPV_NO_KERNEL_CMD(ibv_cmd_create_qp_ex)
DPV_NO_KERNEL_CMD(ibv_cmd_create_qp_ex2)
DPV_NO_KERNEL_CMD(ibv_cmd_create_rwq_ind_table)
DPV_NO_KERNEL_CMD(ibv_cmd_create_srq)
DPV_NO_KERNEL_CMD(ibv_cmd_create_srq_ex)
DPV_NO_KERNEL_CMD(ibv_cmd_create_wq)
DPV_NO_KERNEL_CMD(ibv_cmd_dealloc_mw)
DPV_NO_KERNEL_CMD(ibv_cmd_dealloc_pd)
DPV_NO_KERNEL_CMD(ibv_cmd_dereg_mr)
DPV_NO_KERNEL_CMD(ibv_cmd_destroy_ah)
DPV_NO_KERNEL_CMD(ibv_cmd_destroy_counters)
DPV_NO_KERNEL_CMD(ibv_cmd_destroy_cq)
DPV_NO_KERNEL_CMD(ibv_cmd_destroy_flow)
DPV_NO_KERNEL_CMD(ibv_cmd_destroy_flow_action)
DPV_NO_KERNEL_CMD(ibv_cmd_destroy_qp)
DPV_NO_KERNEL_CMD(ibv_cmd_destroy_rwq_ind_table)
DPV_NO_KERNEL_CMD(ibv_cmd_destroy_srq)
DPV_NO_KERNEL_CMD(ibv_cmd_destroy_wq)
DPV_NO_KERNEL_CMD(ibv_cmd_detach_mcast)
DPV_NO_KERNEL_CMD(ibv_cmd_free_dm)
DPV_NO_KERNEL_CMD(ibv_cmd_get_context)
DPV_NO_KERNEL_CMD(ibv_cmd_modify_cq)
DPV_NO_KERNEL_CMD(ibv_cmd_modify_flow_action_esp)
DPV_NO_KERNEL_CMD(ibv_cmd_modify_qp)
DPV_NO_KERNEL_CMD(ibv_cmd_modify_qp_ex)
DPV_NO_KERNEL_CMD(ibv_cmd_modify_srq)
DPV_NO_KERNEL_CMD(ibv_cmd_modify_wq)
DPV_NO_KERNEL_CMD(ibv_cmd_open_qp)
DPV_NO_KERNEL_CMD(ibv_cmd_open_xrcd)
DPV_NO_KERNEL_CMD(ibv_cmd_poll_cq)
DPV_NO_KERNEL_CMD(ibv_cmd_post_recv)
DPV_NO_KERNEL_CMD(ibv_cmd_post_send)
DPV_NO_KERNEL_CMD(ibv_cmd_post_srq_recv)
DPV_NO_KERNEL_CMD(ibv_cmd_query_context)
DPV_NO_KERNEL_CMD(ibv_cmd_query_device_any)
DPV_NO_KERNEL_CMD(ibv_cmd_query_mr)
DPV_NO_KERNEL_CMD(ibv_cmd_query_port)
DPV_NO_KERNEL_CMD(ibv_cmd_query_qp)
DPV_NO_KERNEL_CMD(ibv_cmd_query_srq)
DPV_NO_KERNEL_CMD(ibv_cmd_read_counters)
DPV_NO_KERNEL_CMD(ibv_cmd_reg_dm_mr)
DPV_NO_KERNEL_CMD(ibv_cmd_reg_dmabuf_mr)
DPV_NO_KERNEL_CMD(ibv_cmd_reg_mr)
DPV_NO_KERNEL_CMD(ibv_cmd_req_notify_cq)
DPV_NO_KERNEL_CMD(ibv_cmd_rereg_mr)
DPV_NO_KERNEL_CMD(ibv_cmd_resize_cq)
/* A provider's CQ set-up on top of its kernel CQ, which it never has here. */
DPV_NO_KERNEL_CMD(verbs_init_cq)

/* How many attributes an ioctl command buffer holds: none is ever built here. */
unsigned int __ioctl_final_num_attrs(void);
unsigned int __ioctl_final_num_attrs(void)
{
	return 0;
}

/*
 * Whether destroying an object of a disassociated device may succeed: rdma-core sets
 * it from RDMAV_ALLOW_DISASSOC_DESTROY for its providers; nothing disassociates here.
 */
bool verbs_allow_disassociate_destroy;

/* A provider registers its driver: no kernel device exists for it, so none is kept. */
void verbs_register_driver_34(void);
void verbs_register_driver_34(void)
{
}

/* The calls that build or open a provider's context, for a device it never gets. */
void *_verbs_init_and_alloc_context(void);
void *_verbs_init_and_alloc_context(void)
{
	errno = EOPNOTSUPP;
	return NULL;
}

void *verbs_open_device(void);
void *verbs_open_device(void)
{
	errno = EOPNOTSUPP;
	return NULL;
}

void verbs_set_ops(void);
void verbs_set_ops(void)
{
}

void verbs_uninit_context(void);
void verbs_uninit_context(void)
{
}

/* A provider reads a file of its device's sysfs directory: it has none. */
int ibv_read_ibdev_sysfs_file(void);
int ibv_read_ibdev_sysfs_file(void)
{
	errno = ENOENT;
	return -1;
}

/*
 * A provider's diagnostic (rdma-core's verbs_err()/verbs_debug()): written to stderr
 * when the environment's VERBS_LOG_LEVEL is at least its level, as rdma-core does.
 * The context argument is rdma-core's private struct, not read.
 */
void __verbs_log(void *ctx, unsigned int level, const char *fmt, ...);
void __verbs_log(void *ctx, unsigned int level, const char *fmt, ...)
{
	const char *want = getenv("VERBS_LOG_LEVEL");
	va_list ap;

	(void)ctx;
	if (want == NULL || strtoul(want, NULL, 0) < level)
		return;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}
