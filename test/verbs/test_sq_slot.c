/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A send WR's slot is free once its completion can be polled (ibv_post_send(3): a WR
 * is outstanding until its completion is polled), also when the device runs on
 * another lcore: the device frees the slot before it writes the completion
 * (lib/transport xp_complete_swqe()). Before it did, a post right after a polled
 * completion failed with ENOMEM now and then, with max_send_wr - 1 WRs outstanding.
 *
 * One RC QP with max_send_wr 1, the devices on lcore 1, the application on lcore 0:
 * post a 1-byte RDMA WRITE, poll its completion, post the next at once, ROUNDS times.
 * Exit 0 when every post succeeded, 1 at the first ENOMEM (with the round).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verbs_test.h"

#define ROUNDS 200000u

static void post_after_completion_finds_a_free_slot(void **state)
{
	struct ibv_cq *acq, *bcq;
	struct ibv_qp *a, *b;
	struct ibv_mr *smr, *rmr;
	uint32_t i;
	int ret;

	(void)state;
	acq = new_cq(&A, 4, NULL, NULL);
	bcq = new_cq(&B, 4, NULL, NULL);
	a = new_qp(&A, IBV_QPT_RC, acq, acq, NULL, 1, 1);
	b = new_qp(&B, IBV_QPT_RC, bcq, bcq, NULL, 1, 1);
	connect_rc(a, b, &conn_default);
	smr = new_mr(&A, 64, IBV_ACCESS_LOCAL_WRITE);
	rmr = new_mr(&B, 64, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	for (i = 0; i < ROUNDS; i++) {
		ret = post_rdma(a, IBV_WR_RDMA_WRITE, i, smr->addr, 1, smr->lkey,
				(uintptr_t)rmr->addr, rmr->rkey);
		if (ret != 0)
			fail_msg("round %u: ibv_post_send: %s, with its only earlier WR's "
				 "completion polled", i, strerror(ret));
		expect_send_ok(acq, i, IBV_WC_RDMA_WRITE);
	}
	printf("# %u WRITEs, each posted right after the previous one's completion\n", i);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		VT(post_after_completion_finds_a_free_slot),
	};

	setenv("DPV_PROGRESS", "lcore:1", 0);
	sides_env_defaults("0,1");
	return SIDES_RUN_GROUP("sq_slot", tests);
}
