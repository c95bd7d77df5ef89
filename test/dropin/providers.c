/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdma-core's own providers, loaded beside the drop-in as perftest, UCX and pyverbs
 * load them: linked against Debian's libmlx5.so.1 and libefa.so.1, which import
 * libibverbs' provider interface (lib/verbs/verbs_private.c). The program must start
 * at all (the dynamic linker resolves every import of theirs in the drop-in), their
 * constructors must have run without giving the drop-in a device of theirs (the list
 * is dpverbs' own devices, nothing else), and their direct-verbs calls on a dpverbs
 * device must answer as for a device not theirs, while verbs on it go on working.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/efadv.h>
#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

static int failures;

#define CHECK(cond, ...)                                                                   \
	do {                                                                               \
		if (!(cond)) {                                                             \
			fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);    \
			fprintf(stderr, __VA_ARGS__);                                      \
			fputc('\n', stderr);                                               \
			failures++;                                                        \
		}                                                                          \
	} while (0)

int main(void)
{
	struct ibv_device **list;
	int n = -1;

	list = ibv_get_device_list(&n);
	CHECK(list != NULL && n == 2, "%d devices (want the ring pair's dpv0, dpv1): %s", n,
	      strerror(errno));
	for (int i = 0; list != NULL && i < n; i++) {
		struct mlx5dv_context mctx = { .comp_mask = 0 };
		struct efadv_device_attr eattr;
		struct ibv_device_attr attr;
		struct ibv_context *ctx;
		char want[16];
		int ret;

		snprintf(want, sizeof(want), "dpv%d", i);
		CHECK(strcmp(ibv_get_device_name(list[i]), want) == 0, "device %d is %s", i,
		      ibv_get_device_name(list[i]));
		CHECK(!mlx5dv_is_supported(list[i]), "mlx5 takes %s for its own", want);
		ctx = ibv_open_device(list[i]);
		CHECK(ctx != NULL, "ibv_open_device(%s): %s", want, strerror(errno));
		if (ctx == NULL)
			continue;
		ret = mlx5dv_query_device(ctx, &mctx);
		CHECK(ret == EOPNOTSUPP, "mlx5dv_query_device(%s) = %d", want, ret);
		memset(&eattr, 0, sizeof(eattr));
		ret = efadv_query_device(ctx, &eattr, sizeof(eattr));
		CHECK(ret == EOPNOTSUPP, "efadv_query_device(%s) = %d", want, ret);
		CHECK(mlx5dv_open_device(list[i], NULL) == NULL, "mlx5 opened %s", want);
		ret = ibv_query_device(ctx, &attr);
		CHECK(ret == 0 && attr.max_qp > 0, "ibv_query_device(%s) = %d", want, ret);
		CHECK(ibv_close_device(ctx) == 0, "ibv_close_device(%s)", want);
	}
	if (list != NULL)
		ibv_free_device_list(list);
	if (failures == 0)
		printf("ok: libmlx5 and libefa loaded on the drop-in; %d dpverbs devices, none theirs\n",
		       n);
	return failures == 0 ? 0 : 1;
}
