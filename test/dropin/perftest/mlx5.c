/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A stand-in for rdma-core's libmlx5.so.1 under Debian's perftest on the drop-in.
 * perftest links libmlx5 (and libefa) for their direct-verbs calls, and the real
 * libraries need libibverbs' private ABI (IBVERBS_PRIVATE_34), which the drop-in does
 * not export: the programs would not even load. perftest calls these only on an mlx5
 * device; each says "not supported".
 */
#include <errno.h>
#include <stddef.h>

void *mlx5dv_create_qp(void);
void *mlx5dv_open_device(void);
int mlx5dv_devx_general_cmd(void);
void *mlx5dv_create_mkey(void);
int mlx5dv_destroy_mkey(void);
void *mlx5dv_qp_ex_from_ibv_qp_ex(void);
int mlx5dv_crypto_login(void);
void *mlx5dv_dek_create(void);
int mlx5dv_dek_destroy(void);

void *mlx5dv_create_qp(void)
{
	errno = EOPNOTSUPP;
	return NULL;
}

void *mlx5dv_open_device(void)
{
	errno = EOPNOTSUPP;
	return NULL;
}

int mlx5dv_devx_general_cmd(void)
{
	return EOPNOTSUPP;
}

void *mlx5dv_create_mkey(void)
{
	errno = EOPNOTSUPP;
	return NULL;
}

int mlx5dv_destroy_mkey(void)
{
	return EOPNOTSUPP;
}

void *mlx5dv_qp_ex_from_ibv_qp_ex(void)
{
	return NULL;
}

int mlx5dv_crypto_login(void)
{
	return EOPNOTSUPP;
}

void *mlx5dv_dek_create(void)
{
	errno = EOPNOTSUPP;
	return NULL;
}

int mlx5dv_dek_destroy(void)
{
	return EOPNOTSUPP;
}
