/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpv-perf idle and dpv-perf loss: what reliability costs.
 *
 * idle  the time of one dpv_dev_poll() on a device whose connected RC QPs are all
 *       idle, with 1 QP and with --qps QPs (two ring pairs: dpv0-dpv1 with one QP
 *       pair, dpv2-dpv3 with --qps), measured in interleaved blocks so a drift of the
 *       machine hits both alike. Timers and doorbells mean an idle QP costs nothing
 *       per poll: the ratio should be within noise of 1.
 * loss  goodput of one RC connection (SENDs, RDMA WRITEs or RDMA READs of --size
 *       bytes, --depth in flight, every payload checked) while the faults port of each
 *       device loses 0, 0.1, 1 and 5 % of the frames it sends, levels interleaved rep by
 *       rep; with the retransmit counters that show how the losses were recovered.
 *
 * Both drive the devices from this one thread (inline progress) and own the device
 * being timed while it is timed, so no helper thread polls it meanwhile.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/tm_types.h>
#include <rte_byteorder.h>

#include "dpv_engine.h"
#include "dpv_verbs.h"
#include "perf_verbs.h"

#define IDLE_CMD "idle"
#define LOSS_CMD "loss"
#define MAX_DEVS 4
#define IDLE_DEFAULT_QPS 1000u
#define IDLE_MAX_QPS 4000u
#define IDLE_DEFAULT_POLLS 200000u
#define DEFAULT_REPS 9u
#define MAX_REPS 101u
#define LOSS_MAX_LEVELS 8u
#define LOSS_DEFAULT_SIZE 65536u
#define LOSS_MAX_SIZE (4u << 20)
#define LOSS_DEFAULT_DEPTH 16u
#define LOSS_MAX_DEPTH 256u
/* The device's max_qp_rd_atom. */
#define LOSS_MAX_OUTS 16u
/* --op rndv: not a verbs opcode. */
#define LOSS_RNDV (-1)
/* Its small messages: the header SEND (a TMH and an RVH), the FIN (a TMH), spare
 * ordinary WRs of the TM SRQ that a header finding no tag would take. */
#define RNDV_HDR_LEN ((uint32_t)(sizeof(struct ibv_tmh) + sizeof(struct ibv_rvh)))
#define RNDV_FIN_LEN ((uint32_t)sizeof(struct ibv_tmh))
#define RNDV_SLOT 64u
#define RNDV_SPARE 4u

struct rel_devs {
	struct pv_dev d[MAX_DEVS];
	struct dpv_dev *dev[MAX_DEVS];
	unsigned int n;
};

/* Open the first @p want devices (EAL starts here) and find their engine devices. */
static int rel_open(struct rel_devs *r, unsigned int want)
{
	struct dpv_dev *all[DPV_MAX_DEVS];
	struct ibv_device **list;
	unsigned int k, nall;
	int n = 0;

	memset(r, 0, sizeof(*r));
	list = ibv_get_device_list(&n);
	if (list == NULL || n < (int)want) {
		perf_error("need %u verbs devices, found %d%s", want, n < 0 ? 0 : n,
			   list == NULL ? " (see the dpverbs: line above)" : "");
		if (list != NULL)
			ibv_free_device_list(list);
		return -1;
	}
	for (k = 0; k < want; k++) {
		struct pv_dev *d = &r->d[k];

		snprintf(d->name, sizeof(d->name), "%s", ibv_get_device_name(list[k]));
		d->ctx = ibv_open_device(list[k]);
		d->pd = d->ctx != NULL ? ibv_alloc_pd(d->ctx) : NULL;
		if (d->pd == NULL || ibv_query_gid(d->ctx, 1, 0, &d->gid) != 0) {
			perf_error("%s: cannot open it with a PD and GID 0", d->name);
			ibv_free_device_list(list);
			return -1;
		}
		r->n++;
	}
	ibv_free_device_list(list);
	nall = dpv_engine_devices(all, DPV_MAX_DEVS);
	for (k = 0; k < want; k++) {
		for (unsigned int i = 0; i < nall; i++)
			if (strcmp(all[i]->name, r->d[k].name) == 0)
				r->dev[k] = all[i];
		if (r->dev[k] == NULL) {
			perf_error("%s: no engine device of that name", r->d[k].name);
			return -1;
		}
	}
	return 0;
}

static void rel_close(struct rel_devs *r)
{
	for (unsigned int k = 0; k < r->n; k++) {
		if (r->d[k].pd != NULL)
			ibv_dealloc_pd(r->d[k].pd);
		if (r->d[k].ctx != NULL)
			ibv_close_device(r->d[k].ctx);
	}
}

static struct ibv_qp *rel_qp(struct pv_dev *d, struct ibv_cq *cq, uint32_t depth)
{
	struct ibv_qp_init_attr a = {
		.send_cq = cq,
		.recv_cq = cq,
		.cap = {.max_send_wr = depth, .max_recv_wr = depth, .max_send_sge = 1,
			.max_recv_sge = 1},
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_qp *qp = ibv_create_qp(d->pd, &a);

	if (qp == NULL)
		perf_error("%s: ibv_create_qp: %s", d->name, strerror(errno));
	return qp;
}

/* Connect @p n QP pairs between devices @p a and @p b, all on one CQ per device; b's
 * take a's RDMA WRITEs and READs. */
static int rel_connect(struct pv_dev *a, struct pv_dev *b, struct ibv_cq *ca, struct ibv_cq *cb,
		       struct ibv_qp **qa, struct ibv_qp **qb, uint32_t n, uint32_t depth,
		       uint8_t rd_atomic)
{
	for (uint32_t i = 0; i < n; i++) {
		qa[i] = rel_qp(a, ca, depth);
		qb[i] = rel_qp(b, cb, depth);
		if (qa[i] == NULL || qb[i] == NULL || pv_rc_init(qa[i]) != 0 ||
		    pv_rc_init_access(qb[i], IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ) != 0 ||
		    pv_rc_connect_rd(qa[i], qb[i]->qp_num, &b->gid, rd_atomic) != 0 ||
		    pv_rc_connect_rd(qb[i], qa[i]->qp_num, &a->gid, rd_atomic) != 0)
			return -1;
	}
	return 0;
}

static void drive_ms(unsigned int ms)
{
	uint64_t end = perf_now_ns() + (uint64_t)ms * 1000000u;

	while (perf_now_ns() < end)
		dpv_engine_progress();
}

/* ---- idle ---- */

struct idle_opts {
	uint32_t qps, polls, reps;
	bool json;
};

static double idle_block(struct dpv_dev *dev, uint32_t polls)
{
	uint64_t t0, t1;
	uint32_t work = 0;

	dpv_dev_own(dev);
	t0 = perf_now_ns();
	for (uint32_t i = 0; i < polls; i++)
		work += dpv_dev_poll(dev);
	t1 = perf_now_ns();
	dpv_dev_disown(dev);
	/* Work found means the QPs were not idle: the block measures something else. */
	return work == 0 ? (double)(t1 - t0) / polls : -1.0;
}

static int idle_run(const struct idle_opts *o)
{
	struct ibv_qp **q = calloc(2u * (o->qps + 1), sizeof(*q));
	double one[MAX_REPS], many[MAX_REPS], m1, mn;
	struct ibv_cq *cq[MAX_DEVS] = {NULL};
	struct rel_devs r;
	int ret = PERF_EXIT_FAIL;

	if (q == NULL || rel_open(&r, 4) != 0)
		goto out;
	for (unsigned int k = 0; k < 4; k++) {
		cq[k] = ibv_create_cq(r.d[k].ctx, 4 * (int)o->qps + 64, NULL, NULL, 0);
		if (cq[k] == NULL) {
			perf_error("%s: ibv_create_cq: %s", r.d[k].name, strerror(errno));
			goto out;
		}
	}
	if (rel_connect(&r.d[0], &r.d[1], cq[0], cq[1], q, q + 1, 1, 1, 1) != 0 ||
	    rel_connect(&r.d[2], &r.d[3], cq[2], cq[3], q + 2, q + 2 + o->qps, o->qps, 1, 1) != 0)
		goto out;
	/* ARP and anything the connections started settle first. */
	drive_ms(50);
	for (uint32_t i = 0; i < o->reps; i++) {
		one[i] = idle_block(r.dev[0], o->polls);
		many[i] = idle_block(r.dev[2], o->polls);
		if (one[i] < 0 || many[i] < 0) {
			perf_error("an idle device found work while it was timed");
			goto out;
		}
	}
	m1 = perf_median(one, o->reps);
	mn = perf_median(many, o->reps);
	if (o->json) {
		struct perf_json j;

		perf_json_init(&j, stdout);
		perf_json_str(&j, "benchmark", IDLE_CMD);
		perf_json_u64(&j, "polls_per_block", o->polls);
		perf_json_u64(&j, "reps", o->reps);
		perf_json_u64(&j, "qps", o->qps);
		perf_json_double(&j, "ns_per_poll_1_qp", m1);
		perf_json_double(&j, "ns_per_poll_many_qps", mn);
		perf_json_double(&j, "ratio", mn / m1);
		perf_json_finish(&j);
	} else {
		printf("dpv-perf idle: one dpv_dev_poll() of a device whose connected RC QPs are "
		       "idle\n  EAL: %s\n  %u blocks of %u polls each, interleaved; medians\n\n",
		       pv_env_eal_args(), o->reps, o->polls);
		printf("  %-22s %12s\n", "connected idle RC QPs", "ns per poll");
		printf("  %-22u %12.1f\n", 1u, m1);
		printf("  %-22u %12.1f\n", o->qps, mn);
		printf("\n  ratio %u/1: %.3f\n", o->qps, mn / m1);
	}
	ret = PERF_EXIT_OK;
out:
	if (q != NULL) {
		for (uint32_t i = 0; i < 2u * (o->qps + 1); i++)
			if (q[i] != NULL)
				ibv_destroy_qp(q[i]);
		free(q);
	}
	for (unsigned int k = 0; k < MAX_DEVS; k++)
		if (cq[k] != NULL)
			ibv_destroy_cq(cq[k]);
	rel_close(&r);
	return ret;
}

static void idle_help(void)
{
	printf("usage: dpv-perf idle [--qps N] [--polls N] [--reps N] [--json]\n\n"
		   "The time of one dpv_dev_poll() with 1 and with N connected idle RC QPs.\n"
		   "  --qps N     QPs of the second device (default %u, at most %u)\n"
		   "  --polls N   polls per timed block (default %u)\n"
		   "  --reps N    blocks per device, interleaved (default %u, at most %u)\n"
	       "  --json      one JSON object instead of the table\n",
	       IDLE_DEFAULT_QPS, IDLE_MAX_QPS, IDLE_DEFAULT_POLLS, DEFAULT_REPS, MAX_REPS);
}

enum { OPT_QPS = 256, OPT_POLLS, OPT_REPS, OPT_JSON, OPT_LEVELS, OPT_SECONDS, OPT_SIZE,
       OPT_DEPTH, OPT_OP, OPT_OUTS };

static int idle_opt(void *ctx, int c, const char *arg)
{
	struct idle_opts *o = ctx;

	switch (c) {
	case OPT_QPS:
		if (perf_parse_u32(arg, 1, IDLE_MAX_QPS, &o->qps) != 0)
			return perf_usage_error(IDLE_CMD, "--qps wants 1..%u", IDLE_MAX_QPS);
		break;
	case OPT_POLLS:
		if (perf_parse_u32(arg, 1, 100000000, &o->polls) != 0)
			return perf_usage_error(IDLE_CMD, "--polls wants 1..100000000");
		break;
	case OPT_REPS:
		if (perf_parse_u32(arg, 1, MAX_REPS, &o->reps) != 0)
			return perf_usage_error(IDLE_CMD, "--reps wants 1..%u", MAX_REPS);
		break;
	case OPT_JSON:
		o->json = true;
		break;
	}
	return 0;
}

static int idle_main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"qps", required_argument, NULL, OPT_QPS},
		{"polls", required_argument, NULL, OPT_POLLS},
		{"reps", required_argument, NULL, OPT_REPS},
		{"json", no_argument, NULL, OPT_JSON},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct idle_opts o = {IDLE_DEFAULT_QPS, IDLE_DEFAULT_POLLS, DEFAULT_REPS, false};
	int rc;

	rc = perf_getopts(IDLE_CMD, argc, argv, longopts, idle_help, idle_opt, &o);
	if (rc != 0)
		return rc < 0 ? PERF_EXIT_OK : rc;
	/* Two ring pairs, unless the user set up the devices. */
	if (getenv("DPV_EAL_ARGS") == NULL && getenv("DPV_CONFIG") == NULL) {
		setenv("DPV_RING_PAIRS", "2", 0);
		setenv("DPV_PORT_IPV4", "127.0.20.1,127.0.20.2,127.0.20.3,127.0.20.4", 0);
	}
	pv_env_defaults();
	return idle_run(&o);
}

const struct perf_cmd perf_cmd_idle = {
	.name = IDLE_CMD,
	.summary = "the cost of a poll with 1 and with 1,000 connected idle RC QPs",
	.run = idle_main,
};

/* ---- loss ---- */


struct loss_opts {
	double levels[LOSS_MAX_LEVELS]; /* percent */
	unsigned int nlevels;
	double seconds;
	uint32_t size, depth, reps;
	bool json;
	int op; /* IBV_WR_SEND, IBV_WR_RDMA_WRITE, IBV_WR_RDMA_READ or LOSS_RNDV */
	uint32_t outs; /* READs outstanding: max_rd_atomic */
};

static const char *op_name(int op)
{
	return op == IBV_WR_SEND ? "SENDs" : op == IBV_WR_RDMA_WRITE ? "RDMA WRITEs"
	       : op == IBV_WR_RDMA_READ ? "RDMA READs" : "rendezvous";
}

static const char *op_key(int op)
{
	return op == IBV_WR_SEND ? "send" : op == IBV_WR_RDMA_WRITE ? "write"
	       : op == IBV_WR_RDMA_READ ? "read" : "rndv";
}

/* dpv0 sends, dpv1 receives. A rendezvous (--op rndv) has a side each: dpv0's QP an RQ
 * for the FINs, dpv1's a TM SRQ whose device READs the data; the others use cq, qp and
 * the MRs. */
struct loss_link {
	struct rel_devs r;
	struct ibv_cq *cq[2];
	struct ibv_qp *qp[2];
	struct ibv_mr *smr, *rmr;
	uint8_t *sbuf, *rbuf;
	struct pv_side side[2];
	uint64_t fins;    /* FINs received at dpv0 */
	uint64_t matched; /* headers matched at dpv1 */
};

/* The payload of message @p seq: its number, then bytes that follow from it. */
static void pattern(uint8_t *p, uint32_t len, uint64_t seq)
{
	uint32_t i = 0;

	for (; i < 8 && i < len; i++)
		p[i] = (uint8_t)(seq >> (8 * i));
	for (; i < len; i++)
		p[i] = (uint8_t)(seq * 131 + i * 7 + (i >> 9));
}

static bool pattern_ok(const uint8_t *p, uint32_t len, uint64_t seq)
{
	uint32_t i = 0;

	for (; i < 8 && i < len; i++)
		if (p[i] != (uint8_t)(seq >> (8 * i)))
			return false;
	for (; i < len; i++)
		if (p[i] != (uint8_t)(seq * 131 + i * 7 + (i >> 9)))
			return false;
	return true;
}

static int loss_set(struct loss_link *l, double pct, uint64_t seed)
{
	char spec[64], why[128] = "";
	int ret = 0;

	/* Each device loses what it sends: a link that loses pct of the frames each way. */
	snprintf(spec, sizeof(spec), "loss=%.6f,dir=tx,seed=%" PRIu64, pct / 100.0, seed);
	for (unsigned int k = 0; k < 2 && ret == 0; k++)
		ret = dpv_dev_set_faults(l->r.dev[k], spec, why, sizeof(why));
	if (ret == EINVAL) {
		perf_error("faults spec %s: %s", spec, why);
		return -1;
	}
	if (ret != 0)
		perf_error("%s is not a faults port: run with DPV_FAULTS set (dpv-perf sets "
			   "DPV_FAULTS=seed=1 when it sets up the devices itself)", l->r.d[0].name);
	return ret != 0 ? -1 : 0;
}

static uint64_t xstat_one(struct ibv_context *ctx, const char *name)
{
	struct dpv_verbs_xstat xs[256];
	int n = dpv_verbs_query_xstats(ctx, xs, 256);

	for (int i = 0; i < n && i < 256; i++)
		if (strcmp(xs[i].name, name) == 0)
			return xs[i].value;
	return 0;
}

struct loss_result {
	double mbps;
	uint64_t msgs, retrans, timeouts; /* retrans: request packets sent again */
	uint64_t reasks, probes;          /* READs asked again at once; tail loss probes */
	uint64_t data_tx;                 /* packets the side that sends the data sent */
};

/* A counter summed over both devices. */
static uint64_t xstat_both(const struct loss_link *l, const char *name)
{
	return xstat_one(l->r.d[0].ctx, name) + xstat_one(l->r.d[1].ctx, name);
}

/* Message @p seq: a SEND or WRITE of its pattern from slot seq % depth of sbuf (to the
 * same slot of rbuf for a WRITE), or a READ of that slot of rbuf, where its pattern is
 * written first, into the slot of sbuf. */
static int post_one_send(struct loss_link *l, const struct loss_opts *o, uint64_t seq)
{
	const size_t off = (size_t)(seq % o->depth) * o->size;
	struct ibv_sge sge = {(uintptr_t)(l->sbuf + off), o->size, l->smr->lkey};
	struct ibv_send_wr wr = {.wr_id = seq, .sg_list = &sge, .num_sge = 1,
				 .opcode = (enum ibv_wr_opcode)o->op,
				 .send_flags = IBV_SEND_SIGNALED};
	struct ibv_send_wr *bad;

	if (o->op == IBV_WR_RDMA_READ) {
		pattern(l->rbuf + off, o->size, seq);
		memset(l->sbuf + off, 0, o->size);
	} else {
		pattern(l->sbuf + off, o->size, seq);
	}
	if (o->op != IBV_WR_SEND) {
		wr.wr.rdma.remote_addr = (uintptr_t)(l->rbuf + off);
		wr.wr.rdma.rkey = l->rmr->rkey;
	}
	return ibv_post_send(l->qp[0], &wr, &bad);
}

static int post_one_recv(struct loss_link *l, const struct loss_opts *o, uint32_t slot)
{
	struct ibv_sge sge = {(uintptr_t)(l->rbuf + (size_t)slot * o->size), o->size,
			      l->rmr->lkey};
	struct ibv_recv_wr wr = {.wr_id = slot, .sg_list = &sge, .num_sge = 1};
	struct ibv_recv_wr *bad;

	return ibv_post_recv(l->qp[1], &wr, &bad);
}

/* Messages for o->seconds, then until every one in flight is in; every payload checked:
 * a SEND's at its receive, a WRITE's in the responder's memory and a READ's in the
 * requester's at the completion of the WR. */
static int verbs_once(struct loss_link *l, const struct loss_opts *o, uint64_t *gotp)
{
	uint64_t sent = 0, done = 0, got = 0, t_end, deadline;
	struct ibv_wc wc[32];
	uint32_t calls = 0;
	int n;

	t_end = perf_now_ns() + (uint64_t)(o->seconds * 1e9);
	deadline = pv_deadline();
	while (got < sent || perf_now_ns() < t_end) {
		while (sent - done < o->depth && perf_now_ns() < t_end) {
			if (post_one_send(l, o, sent) != 0) {
				perf_error("ibv_post_send failed");
				return -1;
			}
			sent++;
		}
		n = ibv_poll_cq(l->cq[0], 32, wc);
		for (int i = 0; i < n; i++) {
			const size_t off = (size_t)(done % o->depth) * o->size;

			if (wc[i].status != IBV_WC_SUCCESS || wc[i].wr_id != done) {
				perf_error("send %" PRIu64 ": %s, wr_id %" PRIu64, done,
					   ibv_wc_status_str(wc[i].status), wc[i].wr_id);
				return -1;
			}
			if (o->op != IBV_WR_SEND &&
			    !pattern_ok((o->op == IBV_WR_RDMA_READ ? l->sbuf : l->rbuf) + off,
					o->size, done)) {
				perf_error("%s %" PRIu64 ": a wrong payload", op_name(o->op), done);
				return -1;
			}
			done++;
			if (o->op != IBV_WR_SEND)
				got++;
			deadline = pv_deadline();
		}
		n = ibv_poll_cq(l->cq[1], 32, wc);
		for (int i = 0; i < n; i++) {
			uint32_t slot = (uint32_t)wc[i].wr_id;

			if (wc[i].status != IBV_WC_SUCCESS || wc[i].byte_len != o->size ||
			    !pattern_ok(l->rbuf + (size_t)slot * o->size, o->size, got)) {
				perf_error("receive %" PRIu64 ": %s, %u bytes, or a wrong payload",
					   got, ibv_wc_status_str(wc[i].status), wc[i].byte_len);
				return -1;
			}
			got++;
			if (post_one_recv(l, o, slot) != 0) {
				perf_error("ibv_post_recv failed");
				return -1;
			}
		}
		if (pv_stalled(deadline, &calls)) {
			perf_error("no completion for %.0f s: %" PRIu64 " sent, %" PRIu64
				   " completed, %" PRIu64 " received", PV_STALL_SECONDS, sent, done,
				   got);
			return -1;
		}
	}
	while (done < sent) {
		n = ibv_poll_cq(l->cq[0], 32, wc);
		for (int i = 0; i < n; i++, done++)
			if (wc[i].status != IBV_WC_SUCCESS)
				return -1;
		if (pv_stalled(deadline, &calls))
			return -1;
	}
	*gotp = got;
	return 0;
}

/* ---- rendezvous: the device's own READ ---- */

/* dpv0's RQ: slot 1 + j of its slots takes FIN j. */
static int rndv_post_fin_recv(struct loss_link *l, uint32_t j)
{
	struct pv_side *s = &l->side[0];
	struct ibv_sge sge = {(uintptr_t)pv_slot(s, 1 + j, RNDV_SLOT), RNDV_SLOT,
			      s->slot_mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = j, .sg_list = &sge, .num_sge = 1}, *bad;

	return ibv_post_recv(s->qp, &wr, &bad);
}

/* dpv0 (its data read from, an RQ for FINs) and dpv1 (a TM SRQ of --depth tags), with
 * --outs READs outstanding, dpv1's device being the one that READs. */
static int rndv_setup(struct loss_link *l, const struct loss_opts *o)
{
	const size_t bytes = (size_t)o->size * o->depth;
	struct pv_side *a = &l->side[0], *b = &l->side[1];

	for (unsigned int i = 0; i < 2; i++)
		if (pv_alloc_mr(LOSS_CMD, &l->r.d[i], (size_t)(1 + o->depth) * RNDV_SLOT,
				IBV_ACCESS_LOCAL_WRITE, &l->side[i].slots,
				&l->side[i].slot_mr) != 0 ||
		    pv_alloc_mr(LOSS_CMD, &l->r.d[i], bytes, i == 0 ? IBV_ACCESS_LOCAL_WRITE |
				IBV_ACCESS_REMOTE_READ : IBV_ACCESS_LOCAL_WRITE,
				&l->side[i].data, &l->side[i].data_mr) != 0)
			return -1;
	if (pv_side_cq(LOSS_CMD, a, &l->r.d[0], 4 * (int)o->depth + 64) != 0 ||
	    pv_side_tm_srq(LOSS_CMD, b, &l->r.d[1], 4 * (int)o->depth + 64, RNDV_SPARE, o->depth,
			   o->depth) != 0 ||
	    pv_side_qp(LOSS_CMD, a, &l->r.d[0], 2 * o->depth, o->depth, RNDV_HDR_LEN,
		       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ) != 0 ||
	    pv_side_qp(LOSS_CMD, b, &l->r.d[1], 2 * o->depth, 0, RNDV_HDR_LEN,
		       IBV_ACCESS_LOCAL_WRITE) != 0 ||
	    pv_rc_connect_rd(a->qp, b->qp->qp_num, &l->r.d[1].gid, (uint8_t)o->outs) != 0 ||
	    pv_rc_connect_rd(b->qp, a->qp->qp_num, &l->r.d[0].gid, (uint8_t)o->outs) != 0)
		return -1;
	for (uint32_t j = 0; j < o->depth; j++)
		if (rndv_post_fin_recv(l, j) != 0)
			return -1;
	for (uint32_t j = 0; j < RNDV_SPARE; j++) {
		struct ibv_sge sge = {(uintptr_t)pv_slot(b, 1 + j, RNDV_SLOT), RNDV_SLOT,
				      b->slot_mr->lkey};
		struct ibv_recv_wr wr = {.wr_id = UINT64_MAX, .sg_list = &sge, .num_sge = 1}, *bad;

		if (ibv_post_srq_recv(b->srq, &wr, &bad) != 0)
			return -1;
	}
	return 0;
}

/* Rendezvous @p seq: dpv1 ADDs tag seq with slot seq % depth of its data; dpv0 SENDs the
 * header naming the same slot of its own, which holds the message's pattern. */
static int rndv_post(struct loss_link *l, const struct loss_opts *o, uint64_t seq)
{
	struct pv_side *a = &l->side[0], *b = &l->side[1];
	const size_t off = (size_t)(seq % o->depth) * o->size;
	struct ibv_sge dsge = {(uintptr_t)(b->data + off), o->size, b->data_mr->lkey};
	struct ibv_ops_wr op = {
		.wr_id = seq, .opcode = IBV_WR_TAG_ADD,
		.tm.add = {.recv_wr_id = seq, .sg_list = &dsge, .num_sge = 1, .tag = seq,
			   .mask = UINT64_MAX},
	}, *bad_op;
	struct ibv_tmh *tmh = (struct ibv_tmh *)(void *)pv_slot(a, 0, RNDV_SLOT);
	struct ibv_rvh *rvh = (struct ibv_rvh *)(tmh + 1);
	struct ibv_sge hsge = {(uintptr_t)tmh, RNDV_HDR_LEN, a->slot_mr->lkey};
	struct ibv_send_wr wr = {.wr_id = seq, .sg_list = &hsge, .num_sge = 1,
				 .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE}, *bad;

	pattern(a->data + off, o->size, seq);
	memset(b->data + off, 0, o->size);
	if (ibv_post_srq_ops(b->srq, &op, &bad_op) != 0)
		return -1;
	memset(tmh, 0, sizeof(*tmh));
	tmh->opcode = IBV_TMH_RNDV;
	tmh->app_ctx = rte_cpu_to_be_32((uint32_t)seq);
	tmh->tag = rte_cpu_to_be_64(seq);
	rvh->va = rte_cpu_to_be_64((uintptr_t)(a->data + off));
	rvh->rkey = rte_cpu_to_be_32(a->data_mr->rkey);
	rvh->len = rte_cpu_to_be_32(o->size);
	return ibv_post_send(a->qp, &wr, &bad);
}

/* dpv0's completions: the headers' SENDs, in order, and the FINs in its RQ. */
static int rndv_poll_sender(struct loss_link *l, uint64_t *hdrs)
{
	struct ibv_wc wc[32];
	int n = ibv_poll_cq(l->side[0].cq, 32, wc);

	for (int i = 0; i < n; i++) {
		const struct ibv_tmh *tmh;

		if (wc[i].status != IBV_WC_SUCCESS) {
			perf_error("rendezvous: dpv0 wr_id %" PRIu64 ": %s", wc[i].wr_id,
				   ibv_wc_status_str(wc[i].status));
			return -1;
		}
		if (wc[i].opcode == IBV_WC_SEND) {
			if (wc[i].wr_id != *hdrs) {
				perf_error("rendezvous: header SEND %" PRIu64 " completed as %"
					   PRIu64, *hdrs, wc[i].wr_id);
				return -1;
			}
			(*hdrs)++;
			continue;
		}
		tmh = (const struct ibv_tmh *)(const void *)pv_slot(&l->side[0], 1 +
								    (uint32_t)wc[i].wr_id, RNDV_SLOT);
		if (wc[i].opcode != IBV_WC_RECV || wc[i].byte_len != RNDV_FIN_LEN ||
		    tmh->opcode != IBV_TMH_FIN || tmh->tag != rte_cpu_to_be_64(l->fins)) {
			perf_error("rendezvous: dpv0 received opcode %u, %u bytes, tag %" PRIu64
				   "; expected FIN %" PRIu64, tmh->opcode, wc[i].byte_len,
				   rte_be_to_cpu_64(tmh->tag), l->fins);
			return -1;
		}
		l->fins++;
		if (rndv_post_fin_recv(l, (uint32_t)wc[i].wr_id) != 0)
			return -1;
	}
	return n < 0 ? -1 : 0;
}

/* dpv1's completions: TAG_ADDs, then MATCH and DATA_VALID of each rendezvous in order;
 * a message is done, and checked, at its DATA_VALID. */
static int rndv_poll_receiver(struct loss_link *l, const struct loss_opts *o, uint64_t *done)
{
	struct ibv_poll_cq_attr attr = {.comp_mask = 0};
	struct ibv_cq_ex *cq = l->side[1].cqx;
	int ret = ibv_start_poll(cq, &attr);

	if (ret == ENOENT)
		return 0;
	while (ret == 0) {
		enum ibv_wc_opcode op = ibv_wc_read_opcode(cq);
		unsigned int flags = ibv_wc_read_wc_flags(cq);

		/* Headers match in order, and their data lands in order (each of the QP's
		 * device READs completes in turn); one may match before the data of an
		 * earlier one is in. */
		if (cq->status != IBV_WC_SUCCESS || (op != IBV_WC_TM_ADD && op != IBV_WC_TM_RECV) ||
		    (op == IBV_WC_TM_RECV && cq->wr_id != ((flags & IBV_WC_TM_DATA_VALID) ?
							   *done : l->matched))) {
			perf_error("rendezvous %" PRIu64 ": dpv1 opcode %d, flags %#x, status %s, "
				   "wr_id %" PRIu64, *done, (int)op, flags,
				   ibv_wc_status_str(cq->status), cq->wr_id);
			ibv_end_poll(cq);
			return -1;
		}
		if (op == IBV_WC_TM_RECV && (flags & IBV_WC_TM_DATA_VALID)) {
			const size_t off = (size_t)(*done % o->depth) * o->size;

			if (ibv_wc_read_byte_len(cq) != o->size ||
			    !pattern_ok(l->side[1].data + off, o->size, *done)) {
				perf_error("rendezvous %" PRIu64 ": %u bytes, or a wrong payload",
					   *done, ibv_wc_read_byte_len(cq));
				ibv_end_poll(cq);
				return -1;
			}
			(*done)++;
		} else if (op == IBV_WC_TM_RECV) {
			l->matched++;
		}
		ret = ibv_next_poll(cq);
	}
	ibv_end_poll(cq);
	return ret == ENOENT ? 0 : -1;
}

/* loss_once() for rendezvous: --depth in flight, each checked at its DATA_VALID; the
 * run ends when every header's SEND and every FIN is in too. */
static int rndv_once(struct loss_link *l, const struct loss_opts *o, uint64_t *got)
{
	uint64_t sent = 0, done = 0, hdrs = 0, t_end, deadline;
	uint32_t calls = 0;

	l->fins = l->matched = 0;
	t_end = perf_now_ns() + (uint64_t)(o->seconds * 1e9);
	deadline = pv_deadline();
	while (done < sent || hdrs < sent || l->fins < sent || perf_now_ns() < t_end) {
		uint64_t before = done + hdrs + l->fins;

		while (sent - done < o->depth && sent - l->fins < o->depth &&
		       perf_now_ns() < t_end) {
			if (rndv_post(l, o, sent) != 0) {
				perf_error("rendezvous %" PRIu64 ": a post failed", sent);
				return -1;
			}
			sent++;
		}
		if (rndv_poll_sender(l, &hdrs) != 0 || rndv_poll_receiver(l, o, &done) != 0)
			return -1;
		if (done + hdrs + l->fins != before)
			deadline = pv_deadline();
		if (pv_stalled(deadline, &calls)) {
			perf_error("rendezvous: nothing for %.0f s: %" PRIu64 " posted, %" PRIu64
				   " done, %" PRIu64 " headers sent, %" PRIu64 " FINs",
				   PV_STALL_SECONDS, sent, done, hdrs, l->fins);
			return -1;
		}
	}
	*got = done;
	return 0;
}

static int loss_once(struct loss_link *l, const struct loss_opts *o, struct loss_result *res)
{
	/* The data goes from dpv1 for a READ, from dpv0 otherwise (a rendezvous: the
	 * responses to dpv1's READ). */
	struct ibv_context *data_ctx = l->r.d[o->op == IBV_WR_RDMA_READ ? 1 : 0].ctx;
	uint64_t r0 = xstat_both(l, "qp.retrans_packets"), a0 = xstat_both(l, "qp.ack_timeouts");
	uint64_t q0 = xstat_both(l, "qp.retrans_read"), p0 = xstat_both(l, "qp.retrans_probe");
	uint64_t d0 = xstat_one(data_ctx, "qp.tx_packets");
	uint64_t got = 0, t0 = perf_now_ns();

	if ((o->op == LOSS_RNDV ? rndv_once(l, o, &got) : verbs_once(l, o, &got)) != 0)
		return -1;
	res->mbps = (double)got * o->size / ((double)(perf_now_ns() - t0) / 1e9) / 1e6;
	res->msgs = got;
	res->retrans = xstat_both(l, "qp.retrans_packets") - r0;
	res->timeouts = xstat_both(l, "qp.ack_timeouts") - a0;
	res->reasks = xstat_both(l, "qp.retrans_read") - q0;
	res->probes = xstat_both(l, "qp.retrans_probe") - p0;
	res->data_tx = xstat_one(data_ctx, "qp.tx_packets") - d0;
	return 0;
}

static int loss_run(const struct loss_opts *o)
{
	struct loss_result res[LOSS_MAX_LEVELS][MAX_REPS];
	size_t bytes = (size_t)o->size * o->depth;
	struct loss_link l;
	int ret = PERF_EXIT_FAIL;
	uint32_t mtu = 1024;

	memset(&l, 0, sizeof(l));
	if (rel_open(&l.r, 2) != 0)
		goto out;
	if (o->op == LOSS_RNDV) {
		if (rndv_setup(&l, o) != 0)
			goto out;
	} else {
		l.sbuf = malloc(bytes);
		l.rbuf = malloc(bytes);
		for (unsigned int k = 0; k < 2; k++)
			l.cq[k] = ibv_create_cq(l.r.d[k].ctx, 2 * (int)o->depth + 64, NULL, NULL, 0);
		if (l.sbuf == NULL || l.rbuf == NULL || l.cq[0] == NULL || l.cq[1] == NULL) {
			perf_error("no memory or CQ for the run");
			goto out;
		}
		l.smr = ibv_reg_mr(l.r.d[0].pd, l.sbuf, bytes, IBV_ACCESS_LOCAL_WRITE);
		l.rmr = ibv_reg_mr(l.r.d[1].pd, l.rbuf, bytes, IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
		if (l.smr == NULL || l.rmr == NULL ||
		    rel_connect(&l.r.d[0], &l.r.d[1], l.cq[0], l.cq[1], &l.qp[0], &l.qp[1], 1,
				o->depth, (uint8_t)o->outs) != 0)
			goto out;
	}
	{
		struct ibv_qp_attr qa;
		struct ibv_qp_init_attr qi;

		if (ibv_query_qp(o->op == LOSS_RNDV ? l.side[0].qp : l.qp[0], &qa, IBV_QP_PATH_MTU,
				 &qi) != 0) {
			perf_error("ibv_query_qp: %s", strerror(errno));
			goto out;
		}
		mtu = 128u << qa.path_mtu;
	}
	for (uint32_t s = 0; o->op == IBV_WR_SEND && s < o->depth; s++)
		if (post_one_recv(&l, o, s) != 0)
			goto out;
	for (uint32_t rep = 0; rep < o->reps; rep++) {
		for (unsigned int v = 0; v < o->nlevels; v++) {
			if (loss_set(&l, o->levels[v], 1 + rep * LOSS_MAX_LEVELS + v) != 0 ||
			    loss_once(&l, o, &res[v][rep]) != 0)
				goto out;
		}
	}
	if (loss_set(&l, 0, 1) != 0)
		goto out;
	if (!o->json)
		printf("dpv-perf loss: goodput of one RC connection (%s of %u bytes, %u in "
		       "flight, %u READs outstanding,\n  payloads checked) while each device's "
		       "faults port loses the given share of the\n  frames it sends\n  EAL: %s\n"
		       "  %u runs of %.2f s per level, levels interleaved; medians; per message: "
		       "READs asked\n  again at once and tail loss probes; data frames sent per "
		       "frame delivered\n\n  %8s %12s %8s %13s %10s %8s %8s %10s\n",
		       op_name(o->op), o->size, o->depth, o->outs, pv_env_eal_args(), o->reps,
		       o->seconds, "loss %", "goodput MB/s", "of 0 %", "resent pkts/s",
		       "timeouts/s", "re-asks", "probes", "sent/data");
	else
		printf("{\"benchmark\": \"loss\", \"op\": \"%s\", \"size\": %u, \"depth\": %u, "
		       "\"outs\": %u, \"levels\": [", op_key(o->op), o->size, o->depth, o->outs);
	{
		const double frames = (double)((o->size + mtu - 1) / mtu);
		double base = 0;

		for (unsigned int v = 0; v < o->nlevels; v++) {
			double mb[MAX_REPS], rt[MAX_REPS], to[MAX_REPS], ra[MAX_REPS];
			double pr[MAX_REPS], sd[MAX_REPS], m;

			for (uint32_t rep = 0; rep < o->reps; rep++) {
				const struct loss_result *e = &res[v][rep];
				double secs = (double)e->msgs * o->size / 1e6 / e->mbps;
				double msgs = e->msgs > 0 ? (double)e->msgs : 1;

				mb[rep] = e->mbps;
				rt[rep] = (double)e->retrans / secs;
				to[rep] = (double)e->timeouts / secs;
				ra[rep] = (double)e->reasks / msgs;
				pr[rep] = (double)e->probes / msgs;
				sd[rep] = (double)e->data_tx / (msgs * frames);
			}
			m = perf_median(mb, o->reps);
			if (v == 0)
				base = m;
			if (o->json)
				printf("%s{\"loss_pct\": %g, \"goodput_mbps\": %.1f, "
				       "\"resent_packets_per_s\": %.1f, \"timeouts_per_s\": %.1f, "
				       "\"reasks_per_msg\": %.3f, \"probes_per_msg\": %.3f, "
				       "\"sent_per_data_frame\": %.3f}",
				       v ? ", " : "", o->levels[v], m, perf_median(rt, o->reps),
				       perf_median(to, o->reps), perf_median(ra, o->reps),
				       perf_median(pr, o->reps), perf_median(sd, o->reps));
			else
				printf("  %8g %12.1f %8.3f %13.1f %10.1f %8.2f %8.2f %10.3f\n",
				       o->levels[v], m, base > 0 ? m / base : 0,
				       perf_median(rt, o->reps), perf_median(to, o->reps),
				       perf_median(ra, o->reps), perf_median(pr, o->reps),
				       perf_median(sd, o->reps));
		}
	}
	if (o->json)
		printf("]}\n");
	ret = PERF_EXIT_OK;
out:
	for (unsigned int k = 0; k < 2; k++)
		if (l.qp[k] != NULL)
			ibv_destroy_qp(l.qp[k]);
	if (l.smr != NULL)
		ibv_dereg_mr(l.smr);
	if (l.rmr != NULL)
		ibv_dereg_mr(l.rmr);
	for (unsigned int k = 0; k < 2; k++)
		if (l.cq[k] != NULL)
			ibv_destroy_cq(l.cq[k]);
	free(l.sbuf);
	free(l.rbuf);
	if (pv_side_teardown(&l.side[0]) != 0 || pv_side_teardown(&l.side[1]) != 0)
		ret = PERF_EXIT_FAIL;
	rel_close(&l.r);
	return ret;
}

static void loss_help(void)
{
	printf("usage: dpv-perf loss [--levels P,P,...] [--seconds S] [--reps N] [--size B]\n"
	       "                     [--depth N] [--op send|write|read|rndv] [--outs N] [--json]\n\n"
	       "Goodput of one RC connection while the link loses a share of its frames.\n"
	       "  --levels P,...  loss in percent of the frames each device sends\n"
	       "                  (default 0,0.1,1,5)\n"
	       "  --seconds S     length of one run (default 1)\n"
	       "  --reps N        runs per level, levels interleaved (default 3)\n"
	       "  --size B        bytes per message (default %u, at most %u)\n"
	       "  --depth N       messages in flight (default %u, at most %u)\n"
	       "  --op OP         send (default), write (RDMA WRITE), read (RDMA READ) or rndv\n"
	       "                  (a tag-matching rendezvous: the receiver's device READs)\n"
	       "  --outs N        READs outstanding (max_rd_atomic, default 1, at most %u)\n"
	       "  --json          one JSON object instead of the table\n",
	       LOSS_DEFAULT_SIZE, LOSS_MAX_SIZE, LOSS_DEFAULT_DEPTH, LOSS_MAX_DEPTH, LOSS_MAX_OUTS);
}

static int parse_levels(const char *s, struct loss_opts *o)
{
	char buf[256], *tok, *save = NULL, *end;

	snprintf(buf, sizeof(buf), "%s", s);
	o->nlevels = 0;
	for (tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
		double v = strtod(tok, &end);

		if (*end != '\0' || end == tok || v < 0 || v > 100 || o->nlevels == LOSS_MAX_LEVELS)
			return -1;
		o->levels[o->nlevels++] = v;
	}
	return o->nlevels > 0 ? 0 : -1;
}

static int loss_opt(void *ctx, int c, const char *arg)
{
	struct loss_opts *o = ctx;

	switch (c) {
	case OPT_LEVELS:
		if (parse_levels(arg, o) != 0)
			return perf_usage_error(LOSS_CMD, "--levels wants up to %u percentages "
						"0..100, comma-separated", LOSS_MAX_LEVELS);
		break;
	case OPT_SECONDS:
		if (perf_parse_seconds(arg, 0.01, 3600, &o->seconds) != 0)
			return perf_usage_error(LOSS_CMD, "--seconds wants 0.01..3600");
		break;
	case OPT_REPS:
		if (perf_parse_u32(arg, 1, MAX_REPS, &o->reps) != 0)
			return perf_usage_error(LOSS_CMD, "--reps wants 1..%u", MAX_REPS);
		break;
	case OPT_SIZE:
		if (perf_parse_u32(arg, 8, LOSS_MAX_SIZE, &o->size) != 0)
			return perf_usage_error(LOSS_CMD, "--size wants 8..%u", LOSS_MAX_SIZE);
		break;
	case OPT_DEPTH:
		if (perf_parse_u32(arg, 1, LOSS_MAX_DEPTH, &o->depth) != 0)
			return perf_usage_error(LOSS_CMD, "--depth wants 1..%u", LOSS_MAX_DEPTH);
		break;
	case OPT_JSON:
		o->json = true;
		break;
	case OPT_OP:
		if (strcmp(arg, "send") == 0)
			o->op = IBV_WR_SEND;
		else if (strcmp(arg, "write") == 0)
			o->op = IBV_WR_RDMA_WRITE;
		else if (strcmp(arg, "read") == 0)
			o->op = IBV_WR_RDMA_READ;
		else if (strcmp(arg, "rndv") == 0)
			o->op = LOSS_RNDV;
		else
			return perf_usage_error(LOSS_CMD, "--op wants send, write, read or rndv");
		break;
	case OPT_OUTS:
		if (perf_parse_u32(arg, 1, LOSS_MAX_OUTS, &o->outs) != 0)
			return perf_usage_error(LOSS_CMD, "--outs wants 1..%u", LOSS_MAX_OUTS);
		break;
	}
	return 0;
}

static int loss_main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"levels", required_argument, NULL, OPT_LEVELS},
		{"seconds", required_argument, NULL, OPT_SECONDS},
		{"reps", required_argument, NULL, OPT_REPS},
		{"size", required_argument, NULL, OPT_SIZE},
		{"depth", required_argument, NULL, OPT_DEPTH},
		{"json", no_argument, NULL, OPT_JSON},
		{"op", required_argument, NULL, OPT_OP},
		{"outs", required_argument, NULL, OPT_OUTS},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct loss_opts o = {{0, 0.1, 1, 5}, 4, 1.0, LOSS_DEFAULT_SIZE, LOSS_DEFAULT_DEPTH, 3,
			      false, IBV_WR_SEND, 1};
	int rc;

	rc = perf_getopts(LOSS_CMD, argc, argv, longopts, loss_help, loss_opt, &o);
	if (rc != 0)
		return rc < 0 ? PERF_EXIT_OK : rc;
	/* Faults ports that lose nothing until a level is set, unless the user chose. */
	if (pv_env_defaults() && getenv("DPV_FAULTS") == NULL)
		setenv("DPV_FAULTS", "seed=1", 0);
	return loss_run(&o);
}

const struct perf_cmd perf_cmd_loss = {
	.name = LOSS_CMD,
	.summary = "RC goodput while the link loses 0, 0.1, 1 and 5 % of its frames",
	.run = loss_main,
};
