/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Real dpverbs traffic for the wire check: two devices of a ring pair, capturing what
 * their ports send and receive into one pcapng file (DPV_CAPTURE), exchange every kind of message the
 * transport builds — RC SEND of one and of several packets, SEND with immediate, RDMA
 * WRITE (with immediate), RDMA READ of several packets, a tag-matching SEND, the two
 * atomics, an atomic write, UC SENDs and WRITEs, a UD SEND — with the ACKs, read
 * responses and atomic acknowledgements they draw. Then check_pcap.py has tshark and scapy
 * judge the capture. Uses only <infiniband/verbs.h>.
 *
 * Usage: capture_verbs CAPTURE_FILE (a pcapng file: DPV_CAPTURE)
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/tm_types.h>
#include <infiniband/verbs.h>

#include "helpers.h"
#include "verbs_connect.h"

#define BUF 65536
#define MTU_PAYLOAD 1024

struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_qp *ud;
	struct ibv_qp *uc;
	struct ibv_mr *mr;
	uint8_t *buf;
	union ibv_gid gid;
};

static void side_open(struct side *s, struct ibv_device *dev)
{
	/* The extended send API too, for the atomic write (ibv_wr_atomic_write()). */
	struct ibv_qp_init_attr_ex rc = {
		.cap = {64, 64, 1, 1, 64}, .qp_type = IBV_QPT_RC,
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_ATOMIC_WRITE,
	};
	struct ibv_qp_init_attr ud = {.cap = {64, 64, 1, 1, 0}, .qp_type = IBV_QPT_UD};
	struct ibv_qp_init_attr uc = {.cap = {64, 64, 1, 1, 0}, .qp_type = IBV_QPT_UC};

	CHECK((s->ctx = ibv_open_device(dev)) != NULL);
	CHECK((s->pd = ibv_alloc_pd(s->ctx)) != NULL);
	CHECK((s->cq = ibv_create_cq(s->ctx, 256, NULL, NULL, 0)) != NULL);
	rc.send_cq = rc.recv_cq = ud.send_cq = ud.recv_cq = uc.send_cq = uc.recv_cq = s->cq;
	rc.pd = s->pd;
	CHECK((s->qp = ibv_create_qp_ex(s->ctx, &rc)) != NULL);
	CHECK((s->ud = ibv_create_qp(s->pd, &ud)) != NULL);
	CHECK((s->uc = ibv_create_qp(s->pd, &uc)) != NULL);
	CHECK((s->buf = calloc(1, BUF)) != NULL);
	CHECK((s->mr = ibv_reg_mr(s->pd, s->buf, BUF, IBV_ACCESS_LOCAL_WRITE |
				  IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				  IBV_ACCESS_REMOTE_ATOMIC)) != NULL);
	CHECK(ibv_query_gid(s->ctx, 1, 0, &s->gid) == 0);
}

static void side_connect(struct side *s, const struct side *peer)
{
	const struct conn_opts rc = {
		.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			  IBV_ACCESS_REMOTE_ATOMIC,
		.rnr_retry = 7, .min_rnr_timer = 1, .timeout = 14, .retry_cnt = 7,
		.max_rd_atomic = 1, .max_dest_rd_atomic = 1,
	};
	const struct conn_opts uc = {.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ};
	struct qp_peer to = {.qpn = peer->qp->qp_num, .gid = peer->gid};

	CHECK(rc_qp_to_rts(s->qp, 0, &to, &rc, NULL) == 0);
	to.qpn = peer->uc->qp_num;
	CHECK(uc_qp_to_rts(s->uc, 0, &to, &uc, NULL) == 0);
	CHECK(ud_qp_to_rts(s->ud, 0x11111111, 0, NULL) == 0);
}

/* Wait for @p n successful completions on either side. */
static void wait_for(struct side *a, struct side *b, int n)
{
	struct ibv_wc wc;

	for (long spin = 0; n > 0 && spin < 50000000; spin++) {
		struct side *s = spin & 1 ? a : b;

		if (ibv_poll_cq(s->cq, 1, &wc) == 1) {
			if (wc.status != IBV_WC_SUCCESS) {
				fprintf(stderr, "capture_verbs: completion %s (wr_id %lu)\n",
					ibv_wc_status_str(wc.status), (unsigned long)wc.wr_id);
				exit(1);
			}
			n--;
		}
	}
	CHECK(n == 0);
}

static void post_recv(struct side *s, struct ibv_qp *qp, uint32_t off, uint32_t len)
{
	struct ibv_sge sge = {(uintptr_t)s->buf + off, len, s->mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = off, .sg_list = &sge, .num_sge = 1}, *bad;

	CHECK(ibv_post_recv(qp, &wr, &bad) == 0);
}

static void post_send(struct side *s, struct ibv_qp *qp, enum ibv_wr_opcode op, uint32_t off,
		      uint32_t len, const struct side *peer, struct ibv_ah *ah)
{
	struct ibv_sge sge = {(uintptr_t)s->buf + off, len, s->mr->lkey};
	struct ibv_send_wr wr = {.wr_id = off, .sg_list = &sge, .num_sge = 1, .opcode = op,
				 .send_flags = IBV_SEND_SIGNALED}, *bad;

	wr.imm_data = htobe32(0xc0ffee00 + off);
	if (op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wr.wr.atomic.remote_addr = (uintptr_t)peer->buf + off;
		wr.wr.atomic.rkey = peer->mr->rkey;
		wr.wr.atomic.compare_add = 0;
		wr.wr.atomic.swap = 0x5eed;
	} else if (ah != NULL) {
		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = peer->ud->qp_num;
		wr.wr.ud.remote_qkey = 0x11111111;
	} else {
		wr.wr.rdma.remote_addr = (uintptr_t)peer->buf + off;
		wr.wr.rdma.rkey = peer->mr->rkey;
	}
	CHECK(ibv_post_send(qp, &wr, &bad) == 0);
}

int main(int argc, char **argv)
{
	static struct side a, b;
	struct ibv_device **list;
	struct ibv_tmh *tmh;
	struct ibv_ah *ah;
	struct ibv_ah_attr aa = {.is_global = 1, .port_num = 1};
	int n;

	if (argc != 2) {
		fprintf(stderr, "usage: capture_verbs CAPTURE_FILE\n");
		return 2;
	}
	setenv("DPV_CAPTURE", argv[1], 1);
	list = ibv_get_device_list(&n);
	CHECK(list != NULL && n == 2);
	side_open(&a, list[0]);
	side_open(&b, list[1]);
	side_connect(&a, &b);
	side_connect(&b, &a);

	post_recv(&b, b.qp, 0, BUF / 2);
	post_send(&a, a.qp, IBV_WR_SEND, 0, 100, &b, NULL);                 /* SEND only */
	wait_for(&a, &b, 2);
	post_recv(&b, b.qp, 0, BUF / 2);
	post_send(&a, a.qp, IBV_WR_SEND, 0, 3 * MTU_PAYLOAD - 5, &b, NULL); /* first/middle/last */
	wait_for(&a, &b, 2);
	post_recv(&b, b.qp, 0, BUF / 2);
	post_send(&a, a.qp, IBV_WR_SEND_WITH_IMM, 0, 2 * MTU_PAYLOAD, &b, NULL); /* last+imm */
	wait_for(&a, &b, 2);
	post_send(&a, a.qp, IBV_WR_RDMA_WRITE, 4096, 2500, &b, NULL);        /* write f/m/l */
	wait_for(&a, &b, 1);
	post_recv(&b, b.qp, 0, BUF / 2);
	post_send(&a, a.qp, IBV_WR_RDMA_WRITE_WITH_IMM, 8192, 64, &b, NULL); /* write only+imm */
	wait_for(&a, &b, 2);
	post_send(&a, a.qp, IBV_WR_RDMA_READ, 16384, 3000, &b, NULL);        /* read + responses */
	wait_for(&a, &b, 1);
	post_send(&a, a.qp, IBV_WR_RDMA_READ, 20480, 16, &b, NULL);          /* read response only */
	wait_for(&a, &b, 1);

	/* A tagged eager SEND: on the wire, an RC SEND whose payload starts with the TMH. */
	tmh = (struct ibv_tmh *)(a.buf + 32768);
	tmh->opcode = IBV_TMH_EAGER;
	tmh->app_ctx = htobe32(7);
	tmh->tag = htobe64(0x1234);
	post_recv(&b, b.qp, 0, BUF / 2);
	post_send(&a, a.qp, IBV_WR_SEND, 32768, sizeof(*tmh) + 48, &b, NULL);
	wait_for(&a, &b, 2);

	/* Atomics: a request each, and its ATOMIC ACKNOWLEDGE. */
	post_send(&a, a.qp, IBV_WR_ATOMIC_CMP_AND_SWP, 40960, 8, &b, NULL);
	wait_for(&a, &b, 1);
	post_send(&a, a.qp, IBV_WR_ATOMIC_FETCH_AND_ADD, 40960, 8, &b, NULL);
	wait_for(&a, &b, 1);
	/* An atomic write: its request, and the RDMA READ response of no data it draws. */
	{
		struct ibv_qp_ex *x = ibv_qp_to_qp_ex(a.qp);
		const uint64_t v = 0x5eed;

		ibv_wr_start(x);
		x->wr_id = 1;
		x->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_atomic_write(x, b.mr->rkey, (uintptr_t)b.buf + 40968, &v);
		CHECK(ibv_wr_complete(x) == 0);
		wait_for(&a, &b, 1);
		CHECK(memcmp(b.buf + 40968, &v, sizeof(v)) == 0);
	}

	/* UC: a SEND of three packets and a WRITE of one, nothing back. */
	post_recv(&b, b.uc, 0, BUF / 2);
	post_send(&a, a.uc, IBV_WR_SEND, 0, 3 * MTU_PAYLOAD - 5, &b, NULL);
	wait_for(&a, &b, 2);
	post_send(&a, a.uc, IBV_WR_RDMA_WRITE, 45056, 200, &b, NULL);
	wait_for(&a, &b, 1);

	/* UD */
	aa.grh.dgid = b.gid;
	aa.grh.hop_limit = 64;
	CHECK((ah = ibv_create_ah(a.pd, &aa)) != NULL);
	post_recv(&b, b.ud, 0, 40 + 512);
	post_send(&a, a.ud, IBV_WR_SEND_WITH_IMM, 0, 512, &b, ah);
	wait_for(&a, &b, 2);

	ibv_destroy_ah(ah);
	ibv_free_device_list(list);
	printf("capture_verbs: traffic done\n");
	return 0;
}
