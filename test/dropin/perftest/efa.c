/* SPDX-License-Identifier: BSD-3-Clause */
/* A stand-in for rdma-core's libefa.so.1 under perftest on the drop-in (see mlx5.c). */
#include <errno.h>
#include <stddef.h>

void *efadv_create_qp_ex(void);
int efadv_query_device(void);

void *efadv_create_qp_ex(void)
{
	errno = EOPNOTSUPP;
	return NULL;
}

int efadv_query_device(void)
{
	return EOPNOTSUPP;
}
