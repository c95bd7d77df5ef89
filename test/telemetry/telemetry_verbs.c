/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A verbs program for check_telemetry.py to read through DPDK's telemetry client while
 * it runs: dpv0 and dpv1 of a ring pair, an RC QP on dpv0 connected to one on dpv1
 * that takes its receives from a basic SRQ, a tag-matching SRQ on dpv1 holding
 * TAGS tags, and an XRC initiator on dpv0 connected to an XRC target on dpv1 with an
 * XRC SRQ in the target's domain (no traffic). It does its traffic in two phases and stops after each, until a line comes
 * on stdin, so the client reads counters that nothing moves meanwhile:
 *
 *   phase 1  RECVS receives posted to the SRQ, SENDS1 SENDs from dpv0 to dpv1
 *   phase 2  SENDS2 more SENDs; on dpv0 a CM listener (TCP port CM_PORT) and an
 *            address resolution nobody answers (CM_NOBODY, under way until cancelled)
 *
 * After each it prints one line, "phase N qpn_a=.. qpn_b=.. srq=.. tm_srq=.. recvs=..
 * sends=.. tags=.. cm_listen=.. cm_resolve=.. xini=.. xtgt=.. xsrq=.. xrc_srqn=.." (the CM
 * ids, 0 in phase 1), what the client must find. Then, in phase 3, it creates and
 * destroys QPs on dpv0 and SRQs on dpv1 without a pause, while the client looks them
 * up, until the next line on stdin. Uses only <infiniband/verbs.h>, unless started
 * with --native: then, as a DPDK-native program (the console) does, it starts EAL itself
 * (the arguments of DPV_EAL_ARGS), makes the ring pair and opens its two ports with
 * dpv_verbs_open_port() (dpv_verbs.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>
#include <rte_eal.h>
#include <rte_lcore.h>

#include "dpv_port.h"
#include "dpv_verbs.h"
#include "helpers.h"
#include "verbs_cm.h"
#include "verbs_connect.h"

#define RECVS 10
#define SENDS1 3
#define SENDS2 5
#define TAGS 4
#define MSG 64
#define CM_PORT 7600
#define CM_NOBODY 0x7f00284du /* 127.0.40.77 */
/* How long a completion may take. */
#define WAIT_MS 10000u

struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *buf;
	union ibv_gid gid;
};

static void side_setup(struct side *s)
{
	CHECK((s->pd = ibv_alloc_pd(s->ctx)) != NULL);
	CHECK((s->cq = ibv_create_cq(s->ctx, 256, NULL, NULL, 0)) != NULL);
	CHECK((s->buf = calloc(1, 65536)) != NULL);
	CHECK((s->mr = ibv_reg_mr(s->pd, s->buf, 65536, IBV_ACCESS_LOCAL_WRITE)) != NULL);
	CHECK(ibv_query_gid(s->ctx, 1, 0, &s->gid) == 0);
}

static void side_close(struct side *s)
{
	CHECK(ibv_dereg_mr(s->mr) == 0);
	CHECK(ibv_destroy_cq(s->cq) == 0);
	CHECK(ibv_dealloc_pd(s->pd) == 0);
	CHECK(ibv_close_device(s->ctx) == 0);
	free(s->buf);
}

/* One QP on each device: 1 s of ACK timeout, so that nothing is sent again on a
 * lossless ring pair however loaded the machine. */
static const struct conn_opts conn = {
	.rnr_retry = 7, .min_rnr_timer = 12, .timeout = 18, .retry_cnt = 7,
	.max_rd_atomic = 1, .max_dest_rd_atomic = 1,
};

static void to_rts(struct ibv_qp *qp, uint32_t dest_qpn, const union ibv_gid *dgid)
{
	const struct qp_peer peer = {.qpn = dest_qpn, .gid = *dgid};

	CHECK(rc_qp_to_rts(qp, 0, &peer, &conn, NULL) == 0);
}

/* Poll @p cq until @p n successful completions, each within WAIT_MS. */
static void wait_wc(struct ibv_cq *cq, int n)
{
	struct ibv_wc wc;

	for (; n > 0; n--) {
		CHECK(poll_one_for(cq, &wc, WAIT_MS) == 1);
		if (wc.status != IBV_WC_SUCCESS) {
			fprintf(stderr, "telemetry_verbs: completion %s\n",
				ibv_wc_status_str(wc.status));
			exit(1);
		}
	}
}

static void sends(struct side *a, struct ibv_qp *qp, struct side *b, int n)
{
	for (int i = 0; i < n; i++) {
		struct ibv_sge sge = {(uintptr_t)a->buf, MSG, a->mr->lkey};
		struct ibv_send_wr wr = {.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
					 .send_flags = IBV_SEND_SIGNALED}, *bad;

		CHECK(ibv_post_send(qp, &wr, &bad) == 0);
		wait_wc(a->cq, 1);
		wait_wc(b->cq, 1);
	}
}

/* Stop until the client has read: a line on stdin. */
/* The XRC objects of the run: dpv0's initiator, dpv1's target, its domain's SRQ. */
struct xrc_objs {
	struct ibv_xrcd *xrcd;
	struct ibv_srq *srq;
	struct ibv_qp *ini, *tgt;
	uint32_t srqn;
};

static void pause_for_client(int phase, const struct ibv_qp *qa, const struct ibv_qp *qb,
			     const struct ibv_srq *srq, const struct ibv_srq *tm, int sent,
			     uint32_t cm_listen, uint32_t cm_resolve, const struct xrc_objs *x)
{
	char line[64];

	printf("phase %d qpn_a=%u qpn_b=%u srq=%u tm_srq=%u recvs=%d sends=%d tags=%d "
	       "cm_listen=%u cm_resolve=%u xini=%u xtgt=%u xsrq=%u xrc_srqn=%u\n", phase,
	       qa->qp_num, qb->qp_num, srq->handle, tm->handle, RECVS, sent, TAGS, cm_listen,
	       cm_resolve, x->ini->qp_num, x->tgt->qp_num, x->srq->handle, x->srqn);
	fflush(stdout);
	CHECK(fgets(line, sizeof(line), stdin) != NULL);
}

static void xrc_setup(struct side *a, struct side *b, struct xrc_objs *x)
{
	struct ibv_xrcd_init_attr xa = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.fd = -1, .oflags = O_CREAT,
	};
	struct ibv_srq_init_attr_ex sa = {
		.attr = {.max_wr = 16, .max_sge = 1},
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
			     IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ,
		.srq_type = IBV_SRQT_XRC, .pd = b->pd, .cq = b->cq,
	};
	struct ibv_qp_init_attr_ex ia = {
		.send_cq = a->cq, .cap = {.max_send_wr = 4, .max_send_sge = 1},
		.qp_type = IBV_QPT_XRC_SEND, .comp_mask = IBV_QP_INIT_ATTR_PD, .pd = a->pd,
	}, ta = {.qp_type = IBV_QPT_XRC_RECV, .comp_mask = IBV_QP_INIT_ATTR_XRCD};

	CHECK((x->xrcd = ibv_open_xrcd(b->ctx, &xa)) != NULL);
	sa.xrcd = ta.xrcd = x->xrcd;
	CHECK((x->srq = ibv_create_srq_ex(b->ctx, &sa)) != NULL);
	CHECK(ibv_get_srq_num(x->srq, &x->srqn) == 0);
	CHECK((x->ini = ibv_create_qp_ex(a->ctx, &ia)) != NULL);
	CHECK((x->tgt = ibv_create_qp_ex(b->ctx, &ta)) != NULL);
	to_rts(x->ini, x->tgt->qp_num, &b->gid);
	to_rts(x->tgt, x->ini->qp_num, &a->gid);
}

/* Create and destroy objects until a line comes on stdin. */
static void churn(struct side *a, struct side *b)
{
	struct ibv_qp_init_attr qa = {.send_cq = a->cq, .recv_cq = a->cq, .qp_type = IBV_QPT_RC,
				      .cap = {.max_send_wr = 4, .max_recv_wr = 4,
					      .max_send_sge = 1, .max_recv_sge = 1}};
	struct ibv_srq_init_attr sa = {.attr = {.max_wr = 16, .max_sge = 1}};
	struct pollfd in = {.fd = 0, .events = POLLIN};
	char line[64];
	unsigned long rounds = 0;

	printf("phase 3 churn\n");
	fflush(stdout);
	while (poll(&in, 1, 0) == 0) {
		struct ibv_qp *qp;
		struct ibv_srq *srq;

		CHECK((qp = ibv_create_qp(a->pd, &qa)) != NULL);
		CHECK((srq = ibv_create_srq(b->pd, &sa)) != NULL);
		CHECK(ibv_destroy_qp(qp) == 0);
		CHECK(ibv_destroy_srq(srq) == 0);
		rounds++;
	}
	CHECK(fgets(line, sizeof(line), stdin) != NULL);
	fprintf(stderr, "telemetry_verbs: %lu rounds of churn\n", rounds);
}

/* --native: EAL from DPV_EAL_ARGS, a ring pair, its ports opened as dpv0 and dpv1. */
static void open_native(struct ibv_context **a, struct ibv_context **b)
{
	char args[1024], *argv[64], *save = NULL;
	int argc = 0;
	uint16_t pa, pb;

	CHECK(getenv("DPV_EAL_ARGS") != NULL);
	snprintf(args, sizeof(args), "%s", getenv("DPV_EAL_ARGS"));
	argv[argc++] = (char *)"telemetry_verbs";
	for (char *t = strtok_r(args, " ", &save); t != NULL && argc < 63;
	     t = strtok_r(NULL, " ", &save))
		argv[argc++] = t;
	argv[argc] = NULL;
	CHECK(rte_eal_init(argc, argv) >= 0);
	CHECK(dpv_port_ring_pair("tel", (int)rte_socket_id(), &pa, &pb) == 0);
	CHECK((*a = dpv_verbs_open_port(pa, 0x7f002801)) != NULL);  /* 127.0.40.1 */
	CHECK((*b = dpv_verbs_open_port(pb, 0x7f002802)) != NULL);
}

int main(int argc, char **argv)
{
	struct ibv_qp_init_attr_ex qa_attr = {0}, qb_attr = {0};
	struct ibv_srq_init_attr_ex tm_attr = {0};
	struct ibv_srq_init_attr sa = {.attr = {.max_wr = 64, .max_sge = 1}};
	struct ibv_device **list;
	struct ibv_qp *qa, *qb;
	struct ibv_srq *srq, *tm;
	struct xrc_objs x;
	struct ibv_cq_ex *tm_cq;
	struct ibv_cq_init_attr_ex cq_attr = {.cqe = 64, .wc_flags = IBV_WC_STANDARD_FLAGS};
	uint32_t cm_listen, cm_resolve;
	struct side a, b;
	int n;

	if (argc == 2 && strcmp(argv[1], "--native") == 0) {
		open_native(&a.ctx, &b.ctx);
		list = NULL;
	} else {
		list = ibv_get_device_list(&n);
		CHECK(list != NULL && n == 2);
		CHECK((a.ctx = ibv_open_device(list[0])) != NULL);
		CHECK((b.ctx = ibv_open_device(list[1])) != NULL);
	}
	side_setup(&a);
	side_setup(&b);
	CHECK((srq = ibv_create_srq(b.pd, &sa)) != NULL);
	qa_attr.qp_type = qb_attr.qp_type = IBV_QPT_RC;
	qa_attr.cap = (struct ibv_qp_cap){.max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1,
					  .max_recv_sge = 1};
	qb_attr.cap = qa_attr.cap;
	qa_attr.send_cq = qa_attr.recv_cq = a.cq;
	qb_attr.send_cq = qb_attr.recv_cq = b.cq;
	qb_attr.srq = srq;
	qa_attr.comp_mask = qb_attr.comp_mask = IBV_QP_INIT_ATTR_PD;
	qa_attr.pd = a.pd;
	qb_attr.pd = b.pd;
	CHECK((qa = ibv_create_qp_ex(a.ctx, &qa_attr)) != NULL);
	CHECK((qb = ibv_create_qp_ex(b.ctx, &qb_attr)) != NULL);
	to_rts(qa, qb->qp_num, &b.gid);
	to_rts(qb, qa->qp_num, &a.gid);

	/* A TM SRQ with TAGS tags listed (ADD ops, each completed). */
	CHECK((tm_cq = ibv_create_cq_ex(b.ctx, &cq_attr)) != NULL);
	tm_attr.srq_type = IBV_SRQT_TM;
	tm_attr.attr.max_wr = 64;
	tm_attr.attr.max_sge = 1;
	tm_attr.pd = b.pd;
	tm_attr.cq = ibv_cq_ex_to_cq(tm_cq);
	tm_attr.tm_cap.max_num_tags = 16;
	tm_attr.tm_cap.max_ops = 16;
	tm_attr.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_CQ |
			    IBV_SRQ_INIT_ATTR_TM;
	CHECK((tm = ibv_create_srq_ex(b.ctx, &tm_attr)) != NULL);
	for (int i = 0; i < TAGS; i++) {
		struct ibv_sge sge = {(uintptr_t)b.buf + 4096 * (i + 1), 1024, b.mr->lkey};
		struct ibv_ops_wr op = {.wr_id = (uint64_t)i, .opcode = IBV_WR_TAG_ADD,
					.flags = IBV_OPS_SIGNALED}, *bad;

		op.tm.add.recv_wr_id = (uint64_t)i;
		op.tm.add.sg_list = &sge;
		op.tm.add.num_sge = 1;
		op.tm.add.tag = 0x100 + (uint64_t)i;
		op.tm.add.mask = ~0ull;
		CHECK(ibv_post_srq_ops(tm, &op, &bad) == 0);
		wait_wc(ibv_cq_ex_to_cq(tm_cq), 1);
	}

	xrc_setup(&a, &b, &x);
	for (int i = 0; i < RECVS; i++) {
		struct ibv_sge sge = {(uintptr_t)b.buf + 32768 + 256 * i, 256, b.mr->lkey};
		struct ibv_recv_wr wr = {.wr_id = (uint64_t)i, .sg_list = &sge, .num_sge = 1}, *bad;

		CHECK(ibv_post_srq_recv(srq, &wr, &bad) == 0);
	}
	sends(&a, qa, &b, SENDS1);
	pause_for_client(1, qa, qb, srq, tm, SENDS1, 0, 0, &x);
	sends(&a, qa, &b, SENDS2);
	CHECK(dpv_verbs_cm_listen(a.ctx, 0x0106ull << 16 | CM_PORT, &cm_listen) == 0);
	CHECK(dpv_verbs_cm_resolve(a.ctx, CM_NOBODY, 600000, &cm_resolve) == 0);
	pause_for_client(2, qa, qb, srq, tm, SENDS1 + SENDS2, cm_listen, cm_resolve, &x);
	CHECK(dpv_verbs_cm_resolve_cancel(a.ctx, cm_resolve) == 0);
	CHECK(dpv_verbs_cm_unlisten(a.ctx, cm_listen) == 0);
	churn(&a, &b);
	CHECK(ibv_destroy_qp(qa) == 0 && ibv_destroy_qp(qb) == 0);
	CHECK(ibv_destroy_qp(x.ini) == 0 && ibv_destroy_qp(x.tgt) == 0);
	CHECK(ibv_destroy_srq(x.srq) == 0 && ibv_close_xrcd(x.xrcd) == 0);
	CHECK(ibv_destroy_srq(srq) == 0 && ibv_destroy_srq(tm) == 0);
	CHECK(ibv_destroy_cq(ibv_cq_ex_to_cq(tm_cq)) == 0);
	side_close(&a);
	side_close(&b);
	if (list != NULL)
		ibv_free_device_list(list);
	return 0;
}
