/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A DPDK-native program: it starts EAL itself, makes its own ports (dpv_verbs_ring_pair()), opens
 * them as verbs devices with dpv_verbs_open_port() and moves one device to a dedicated
 * lcore with dpv_verbs_set_progress(); an RC SEND then crosses between them.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>

#include "dpv_verbs.h"
#include "verbs_connect.h"

static int eal_argc;
static char **eal_argv;

struct end {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	char buf[256];
	union ibv_gid gid;
};

static void end_open(struct end *e, uint16_t port, uint32_t ipv4)
{
	struct ibv_qp_init_attr ia = {.cap = {4, 4, 1, 1, 0}, .qp_type = IBV_QPT_RC};

	e->ctx = dpv_verbs_open_port(port, ipv4);
	assert_non_null(e->ctx);
	assert_non_null(e->pd = ibv_alloc_pd(e->ctx));
	assert_non_null(e->cq = ibv_create_cq(e->ctx, 8, NULL, NULL, 0));
	ia.send_cq = ia.recv_cq = e->cq;
	assert_non_null(e->qp = ibv_create_qp(e->pd, &ia));
	assert_non_null(e->mr = ibv_reg_mr(e->pd, e->buf, sizeof(e->buf), IBV_ACCESS_LOCAL_WRITE));
	assert_int_equal(ibv_query_gid(e->ctx, 1, 0, &e->gid), 0);
}

static void end_connect(struct end *e, const struct end *peer)
{
	const struct conn_opts o = {.rnr_retry = 7, .min_rnr_timer = 1, .timeout = 14,
				    .retry_cnt = 7, .max_rd_atomic = 1, .max_dest_rd_atomic = 1};
	const struct qp_peer to = {.qpn = peer->qp->qp_num, .gid = peer->gid};

	assert_int_equal(rc_qp_to_rts(e->qp, 0, &to, &o, NULL), 0);
}

static void native_program_opens_its_own_ports(void **state)
{
	static struct end a, b;
	struct ibv_sge rs, ss;
	struct ibv_recv_wr rw = {.wr_id = 1, .sg_list = &rs, .num_sge = 1}, *bad_r;
	struct ibv_send_wr sw = {.wr_id = 2, .sg_list = &ss, .num_sge = 1,
				 .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED}, *bad_s;
	struct ibv_device **list;
	struct ibv_wc wc;
	uint16_t pa, pb, xa, xb;
	int n, got = 0;

	(void)state;
	assert_int_equal(rte_eal_init(eal_argc, eal_argv) >= 0, 1);
	assert_int_equal(dpv_verbs_ring_pair("native", &pa, &pb), 0);
	assert_true(rte_eth_dev_is_valid_port(pa) && rte_eth_dev_is_valid_port(pb) && pa != pb);
	assert_int_equal(rte_eth_dev_count_avail(), 2);
	/* A pair needs a name of its own, and somewhere to put its ports. */
	assert_int_equal(dpv_verbs_ring_pair("native", &xa, &xb), EEXIST);
	assert_int_equal(dpv_verbs_ring_pair(NULL, &xa, &xb), EINVAL);
	assert_int_equal(dpv_verbs_ring_pair("", &xa, &xb), EINVAL);
	assert_int_equal(dpv_verbs_ring_pair("native2", NULL, &xb), EINVAL);
	assert_int_equal(dpv_verbs_ring_pair("native2", &xa, NULL), EINVAL);
	assert_int_equal(rte_eth_dev_count_avail(), 2);
	/* Bad requests get their errno, not a device. */
	errno = 0;
	assert_null(dpv_verbs_open_port(RTE_MAX_ETHPORTS - 1, 0x7f002801));
	assert_int_equal(errno, ENODEV);
	assert_null(dpv_verbs_open_port(pa, 0));
	assert_int_equal(errno, EINVAL);

	end_open(&a, pa, 0x7f002801); /* 127.0.40.1 */
	end_open(&b, pb, 0x7f002802);
	/* The program's own devices are what ibv_get_device_list() lists. */
	list = ibv_get_device_list(&n);
	assert_non_null(list);
	assert_int_equal(n, 2);
	assert_string_equal(ibv_get_device_name(list[0]), "dpv0");
	ibv_free_device_list(list);
	assert_int_equal(dpv_verbs_set_progress(b.ctx, "nonsense"), EINVAL);
	/* The helper's interval: off, a second at most, back to the default. */
	assert_int_equal(dpv_verbs_set_inline_idle_us(1000001), EINVAL);
	assert_int_equal(dpv_verbs_set_inline_idle_us(0), 0);
	assert_int_equal(dpv_verbs_set_inline_idle_us(500), 0);
	if (rte_lcore_count() > 1)
		assert_int_equal(dpv_verbs_set_progress(b.ctx, "lcore:1"), 0);
	end_connect(&a, &b);
	end_connect(&b, &a);

	rs = (struct ibv_sge){(uintptr_t)b.buf, sizeof(b.buf), b.mr->lkey};
	assert_int_equal(ibv_post_recv(b.qp, &rw, &bad_r), 0);
	strcpy(a.buf, "native");
	ss = (struct ibv_sge){(uintptr_t)a.buf, 7, a.mr->lkey};
	assert_int_equal(ibv_post_send(a.qp, &sw, &bad_s), 0);
	for (long spin = 0; spin < 20000000 && got < 2; spin++) {
		if (ibv_poll_cq(a.cq, 1, &wc) == 1 || ibv_poll_cq(b.cq, 1, &wc) == 1) {
			assert_int_equal(wc.status, IBV_WC_SUCCESS);
			got++;
		}
	}
	assert_int_equal(got, 2);
	assert_string_equal(b.buf, "native");
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(native_program_opens_its_own_ports),
	};

	eal_argc = argc;
	eal_argv = argv;
	return cmocka_run_group_tests_name("native", tests, NULL, NULL);
}
