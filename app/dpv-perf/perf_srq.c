/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpv-perf srq-post: how many receive WRs per second one thread posts to a shared
 * receive queue with ibv_post_srq_recv(), in lists of 1, 32, ... WRs.
 *
 * An SRQ holds at most max_wr WRs, and only the device frees them, as messages consume
 * them. So the run goes in rounds on one SRQ of a large max_wr:
 *  1. timed: post max_wr WRs (lists built beforehand), every call must succeed;
 *  2. untimed: one more WR must fail with ENOMEM (the SRQ is full, as the man page says);
 *  3. untimed: dpv0 sends max_wr zero-length RC SENDs to a QP of dpv1 attached to the
 *     SRQ, and every WR must complete, in FIFO order, successfully, with byte_len 0.
 * The next round posts into the same SRQ, its rings wrapped once more, as an
 * application that keeps re-posting consumed receives does. Destroying and recreating
 * the SRQ would also empty it, but would time posts into freshly allocated memory of a
 * new object and prove nothing about the WRs; draining through the device checks that
 * every posted WR was really there.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "perf_verbs.h"

#define SRQ_CMD "srq-post"

#define SRQ_MAX_LISTS 8
#define SRQ_DEFAULT_SECONDS 0.2
#define SRQ_MAX_SECONDS 3600.0
#define SRQ_MIN_ROUNDS 3
#define SRQ_WARMUP_ROUNDS 1
#define SRQ_DEFAULT_MAX_WR 65536u
/* The smallest SRQ that still makes a round long next to a clock read. */
#define SRQ_MIN_MAX_WR 1024u
/* Each WR's buffer (the zero-length messages never write it). */
#define SRQ_BUF_SLOT 64u
/* Zero-length SENDs posted per ibv_post_send() while draining; the last signaled. */
#define SRQ_DRAIN_BURST 32u
#define SRQ_SQ_DEPTH 4096u
#define SRQ_CQ_DEPTH 8192
#define SRQ_POLL 64

/* The target: WRs per second per core with lists of 32. */
#define SRQ_TARGET_LIST 32u
#define SRQ_TARGET_MWRS 50.0

struct srq_opts {
	bool json;
	uint32_t lists[SRQ_MAX_LISTS];
	unsigned int nb_lists;
	double seconds;
	uint32_t max_wr;
	bool td;                 /* --td: the SRQ and its QP under a thread domain */
};

struct srq_bench {
	struct pv_dev dev[2];    /* dev[0] sends, dev[1] owns the SRQ */
	struct ibv_cq *cq_s, *cq_r;
	struct ibv_srq *srq;
	struct ibv_qp *qp_s, *qp_r;
	struct ibv_mr *mr;
	uint8_t *buf;
	struct ibv_recv_wr *wr;  /* max_wr of them, chained in lists; then the probe */
	struct ibv_sge *sge;
	uint32_t max_wr;
	bool td;
	uint64_t messages;       /* zero-length SENDs received, all rounds */
};

struct srq_result {
	uint32_t list;
	uint32_t rounds;
	double *mwrs;           /* each round's million WRs per second */
	double timed_s;         /* posting time of all rounds */
	double median_mwrs, min_mwrs, max_mwrs;
};

static int
bench_setup(struct srq_bench *b, uint32_t max_wr, bool td)
{
	struct ibv_srq_init_attr sa = {
		.attr = { .max_wr = max_wr, .max_sge = 1 },
	};
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = SRQ_SQ_DEPTH, .max_recv_wr = 0,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	size_t len = (size_t)max_wr * SRQ_BUF_SLOT;

	memset(b, 0, sizeof(*b));
	b->max_wr = max_wr;
	b->td = td;
	if (pv_open_pair(b->dev) != 0 || (td && pv_use_td(b->dev) != 0))
		return -1;
	b->buf = aligned_alloc(4096, len);
	b->wr = calloc((size_t)max_wr + 1, sizeof(*b->wr));
	b->sge = calloc((size_t)max_wr + 1, sizeof(*b->sge));
	if (b->buf == NULL || b->wr == NULL || b->sge == NULL) {
		perf_error("%s: out of memory for %" PRIu32 " WRs", SRQ_CMD, max_wr);
		return -1;
	}
	memset(b->buf, 0, len);
	b->mr = ibv_reg_mr(b->dev[1].pd, b->buf, len, IBV_ACCESS_LOCAL_WRITE);
	b->cq_s = ibv_create_cq(b->dev[0].ctx, SRQ_CQ_DEPTH, NULL, NULL, 0);
	b->cq_r = ibv_create_cq(b->dev[1].ctx, SRQ_CQ_DEPTH, NULL, NULL, 0);
	if (b->mr == NULL || b->cq_s == NULL || b->cq_r == NULL) {
		perf_error("%s: ibv_reg_mr / ibv_create_cq: %s", SRQ_CMD, strerror(errno));
		return -1;
	}
	b->srq = ibv_create_srq(td ? b->dev[1].parent : b->dev[1].pd, &sa);
	if (b->srq == NULL) {
		perf_error("%s: ibv_create_srq(max_wr %" PRIu32 "): %s", SRQ_CMD, max_wr,
			   strerror(errno));
		return -1;
	}
	if (sa.attr.max_wr != max_wr) {
		perf_error("%s: ibv_create_srq gave max_wr %u for %" PRIu32 " asked", SRQ_CMD,
			   sa.attr.max_wr, max_wr);
		return -1;
	}
	qa.send_cq = qa.recv_cq = b->cq_s;
	b->qp_s = ibv_create_qp(b->dev[0].pd, &qa);
	qa.send_cq = qa.recv_cq = b->cq_r;
	qa.srq = b->srq;
	qa.cap.max_send_wr = 1;
	b->qp_r = ibv_create_qp(td ? b->dev[1].parent : b->dev[1].pd, &qa);
	if (b->qp_s == NULL || b->qp_r == NULL) {
		perf_error("%s: ibv_create_qp: %s", SRQ_CMD, strerror(errno));
		return -1;
	}
	if (pv_rc_init(b->qp_s) != 0 || pv_rc_init(b->qp_r) != 0 ||
	    pv_rc_connect(b->qp_s, b->qp_r->qp_num, &b->dev[1].gid) != 0 ||
	    pv_rc_connect(b->qp_r, b->qp_s->qp_num, &b->dev[0].gid) != 0)
		return -1;
	for (uint32_t k = 0; k <= max_wr; k++) {
		b->sge[k].addr = (uintptr_t)(b->buf + (size_t)(k % max_wr) * SRQ_BUF_SLOT);
		b->sge[k].length = SRQ_BUF_SLOT;
		b->sge[k].lkey = b->mr->lkey;
		b->wr[k].wr_id = k;
		b->wr[k].sg_list = &b->sge[k];
		b->wr[k].num_sge = 1;
	}
	return 0;
}

/* @return 0, or -1 when an object would not go. */
static int
bench_teardown(struct srq_bench *b)
{
	int rc = 0;

	if (b->qp_r != NULL)
		rc |= pv_destroyed("ibv_destroy_qp", ibv_destroy_qp(b->qp_r));
	if (b->qp_s != NULL)
		rc |= pv_destroyed("ibv_destroy_qp", ibv_destroy_qp(b->qp_s));
	if (b->srq != NULL)
		rc |= pv_destroyed("ibv_destroy_srq", ibv_destroy_srq(b->srq));
	if (b->cq_r != NULL)
		rc |= pv_destroyed("ibv_destroy_cq", ibv_destroy_cq(b->cq_r));
	if (b->cq_s != NULL)
		rc |= pv_destroyed("ibv_destroy_cq", ibv_destroy_cq(b->cq_s));
	if (b->mr != NULL)
		rc |= pv_destroyed("ibv_dereg_mr", ibv_dereg_mr(b->mr));
	rc |= pv_close_pair(b->dev);
	free(b->buf);
	free(b->wr);
	free(b->sge);
	memset(b, 0, sizeof(*b));
	return rc;
}

/* Chain the max_wr WRs into lists of @p list (the last one may be shorter). */
static void
build_lists(struct srq_bench *b, uint32_t list)
{
	for (uint32_t k = 0; k < b->max_wr; k++)
		b->wr[k].next = (k + 1) % list == 0 || k + 1 == b->max_wr ? NULL : &b->wr[k + 1];
	b->wr[b->max_wr].next = NULL;
}

/*
 * The device empties the SRQ: max_wr zero-length SENDs from dpv0, each consuming the
 * oldest WR. Every completion is checked: WR k of the round completes k-th.
 */
static int
drain(struct srq_bench *b)
{
	struct ibv_send_wr swr[SRQ_DRAIN_BURST], *bad;
	struct ibv_wc wc[SRQ_POLL];
	uint32_t sent = 0, recvd = 0, n, j, calls = 0;
	uint64_t sig_posted = 0, sig_done = 0, deadline = pv_deadline();
	int got, i, ret;

	memset(swr, 0, sizeof(swr));
	for (j = 0; j < SRQ_DRAIN_BURST; j++) {
		swr[j].opcode = IBV_WR_SEND;
		swr[j].next = j + 1 < SRQ_DRAIN_BURST ? &swr[j + 1] : NULL;
	}
	while (recvd < b->max_wr || sig_done < sig_posted) {
		if (sent < b->max_wr) {
			n = b->max_wr - sent < SRQ_DRAIN_BURST ? b->max_wr - sent : SRQ_DRAIN_BURST;
			for (j = 0; j < n; j++)
				swr[j].wr_id = sent + j;
			swr[n - 1].next = NULL;
			swr[n - 1].send_flags = IBV_SEND_SIGNALED;
			ret = ibv_post_send(b->qp_s, swr, &bad);
			swr[n - 1].send_flags = 0;
			if (n < SRQ_DRAIN_BURST)
				swr[n - 1].next = &swr[n];
			if (ret == 0) {
				sent += n;
				sig_posted++;
			} else if (ret == ENOMEM) {
				sent += (uint32_t)(bad - swr); /* those went unsignaled */
			} else {
				perf_error("%s: ibv_post_send (drain): %s", SRQ_CMD, strerror(ret));
				return -1;
			}
		}
		got = ibv_poll_cq(b->cq_r, SRQ_POLL, wc);
		for (i = 0; i < got; i++, recvd++) {
			if (wc[i].status != IBV_WC_SUCCESS || wc[i].opcode != IBV_WC_RECV ||
			    wc[i].byte_len != 0 || wc[i].wr_id != recvd ||
			    wc[i].qp_num != b->qp_r->qp_num || recvd >= b->max_wr) {
				perf_error("%s: SRQ completion #%" PRIu32 " of the round is wrong: "
					   "status %s, opcode %d, byte_len %u, wr_id %" PRIu64
					   ", qp %u (expected success, RECV, 0, wr_id %" PRIu32
					   ", qp %u)", SRQ_CMD, recvd, ibv_wc_status_str(wc[i].status),
					   (int)wc[i].opcode, wc[i].byte_len, wc[i].wr_id,
					   wc[i].qp_num, recvd, b->qp_r->qp_num);
				return -1;
			}
		}
		if (got < 0) {
			perf_error("%s: ibv_poll_cq: %d", SRQ_CMD, got);
			return -1;
		}
		ret = got;
		got = ibv_poll_cq(b->cq_s, SRQ_POLL, wc);
		for (i = 0; i < got; i++, sig_done++) {
			if (wc[i].status != IBV_WC_SUCCESS || wc[i].opcode != IBV_WC_SEND) {
				perf_error("%s: send completion (drain): status %s, opcode %d",
					   SRQ_CMD, ibv_wc_status_str(wc[i].status),
					   (int)wc[i].opcode);
				return -1;
			}
		}
		if (got < 0) {
			perf_error("%s: ibv_poll_cq: %d", SRQ_CMD, got);
			return -1;
		}
		if (ret > 0 || got > 0) {
			deadline = pv_deadline();
		} else if (pv_stalled(deadline, &calls)) {
			perf_error("%s: draining stalled: %" PRIu32 " of %" PRIu32 " WRs consumed, "
				   "%" PRIu32 " sent, %" PRIu64 " of %" PRIu64 " send completions",
				   SRQ_CMD, recvd, b->max_wr, sent, sig_done, sig_posted);
			return -1;
		}
	}
	b->messages += recvd;
	return 0;
}

/* One round: the timed posts, the ENOMEM probe, the drain. @return 0 or -1. */
static int
round_run(struct srq_bench *b, uint32_t list, uint64_t *ns)
{
	struct ibv_recv_wr *bad = NULL, *probe = &b->wr[b->max_wr];
	uint64_t t0, t1;
	uint32_t k;
	int ret = 0;

	t0 = perf_now_ns();
	for (k = 0; k < b->max_wr; k += list) {
		ret = ibv_post_srq_recv(b->srq, &b->wr[k], &bad);
		if (__builtin_expect(ret != 0, 0))
			break;
	}
	t1 = perf_now_ns();
	if (ret != 0) {
		perf_error("%s: ibv_post_srq_recv (list of %" PRIu32 ", WR %" PRIu64 " of %"
			   PRIu32 "): %s, on an SRQ the device had emptied", SRQ_CMD, list,
			   bad != NULL ? bad->wr_id : UINT64_MAX, b->max_wr, strerror(ret));
		return -1;
	}
	bad = NULL;
	ret = ibv_post_srq_recv(b->srq, probe, &bad);
	if (ret != ENOMEM || bad != probe) {
		perf_error("%s: posting WR %" PRIu32 " into a full SRQ of max_wr %" PRIu32
			   " returned %d (%s), bad_wr %s; expected ENOMEM and the WR", SRQ_CMD,
			   b->max_wr + 1, b->max_wr, ret, strerror(ret),
			   bad == probe ? "the WR" : "not the WR");
		return -1;
	}
	*ns = t1 - t0;
	return drain(b);
}

static int
measure_list(struct srq_bench *b, const struct srq_opts *o, uint32_t list,
	     struct srq_result *res)
{
	uint64_t ns, total_ns = 0, want_ns = (uint64_t)(o->seconds * 1e9);
	uint32_t cap = 64, r;
	double *v, *tmp;

	memset(res, 0, sizeof(*res));
	res->list = list;
	build_lists(b, list);
	for (r = 0; r < SRQ_WARMUP_ROUNDS; r++)
		if (round_run(b, list, &ns) != 0)
			return -1;
	res->mwrs = malloc(cap * sizeof(*res->mwrs));
	if (res->mwrs == NULL)
		goto nomem;
	while (res->rounds < SRQ_MIN_ROUNDS || total_ns < want_ns) {
		if (round_run(b, list, &ns) != 0)
			return -1;
		if (res->rounds == cap) {
			cap *= 2;
			tmp = realloc(res->mwrs, cap * sizeof(*res->mwrs));
			if (tmp == NULL)
				goto nomem;
			res->mwrs = tmp;
		}
		/* A round too quick for the clock counts as 1 ns. */
		res->mwrs[res->rounds++] = (double)b->max_wr * 1e3 / (double)(ns ? ns : 1);
		total_ns += ns;
	}
	res->timed_s = (double)total_ns / 1e9;
	v = malloc(res->rounds * sizeof(*v));
	if (v == NULL)
		goto nomem;
	memcpy(v, res->mwrs, res->rounds * sizeof(*v));
	res->median_mwrs = perf_median(v, res->rounds);
	res->min_mwrs = v[0];
	res->max_mwrs = v[res->rounds - 1];
	free(v);
	return 0;
nomem:
	perf_error("%s: out of memory", SRQ_CMD);
	return -1;
}

static const struct srq_result *
target_result(const struct srq_result *res, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		if (res[i].list == SRQ_TARGET_LIST)
			return &res[i];
	return NULL;
}

static const char *
target_verdict(const struct srq_result *t)
{
	if (t == NULL)
		return "NOT MEASURED";
	return t->median_mwrs >= SRQ_TARGET_MWRS ? "PASS" : "MISS";
}

static const struct perf_table_col srq_cols[] = {
	{ "list", 6 },
	{ "rounds", 7 },
	{ "WRs timed", 11 },
	{ "median Mwr/s", 12 },
	{ "ns/WR", 7 },
	{ "min Mwr/s", 10 },
	{ "max Mwr/s", 10 },
};
#define SRQ_NB_COLS (sizeof(srq_cols) / sizeof(srq_cols[0]))

static void
table_intro(const struct srq_opts *o, const struct srq_bench *b, bool defaulted)
{
	printf("dpv-perf srq-post: ibv_post_srq_recv rate, one thread, one SRQ (max_wr %"
	       PRIu32 ", 1 SGE a WR) on %s\n"
	       "  A round posts max_wr WRs in lists of <list> WRs into the empty SRQ; only\n"
	       "    those ibv_post_srq_recv() calls are timed (the WR lists are built\n"
	       "    beforehand). Every call must succeed, and one WR more must then fail\n"
	       "    with ENOMEM.\n"
	       "  Untimed, the device then empties the SRQ: %s sends max_wr zero-length RC\n"
	       "    SENDs to a QP attached to it, and every WR must complete in FIFO order\n"
	       "    (status, opcode, byte_len 0, wr_id checked). The next round posts into\n"
	       "    the same SRQ, in the steady state of an application that re-posts\n"
	       "    consumed receives (recreating the SRQ instead would time posts into a\n"
	       "    fresh object and check nothing).\n"
	       "  Mwr/s = million WRs per second of one round; median over >= %d rounds and\n"
	       "    >= %.3f s of timed posting per list length, after %d warm-up round.\n"
	       "  One thread posts (this core); the devices run inline in the same thread,\n"
	       "    only while draining (posting a receive never runs the engine).\n",
	       b->max_wr, b->dev[1].name, b->dev[0].name, SRQ_MIN_ROUNDS, o->seconds,
	       SRQ_WARMUP_ROUNDS);
	pv_print_setup(defaulted);
	perf_table_header(stdout, srq_cols, SRQ_NB_COLS);
}

static void
table_row(const struct srq_result *r, uint32_t max_wr)
{
	char cells[SRQ_NB_COLS][PERF_CELL_LEN];

	snprintf(cells[0], sizeof(cells[0]), "%" PRIu32, r->list);
	snprintf(cells[1], sizeof(cells[1]), "%" PRIu32, r->rounds);
	snprintf(cells[2], sizeof(cells[2]), "%" PRIu64, (uint64_t)r->rounds * max_wr);
	snprintf(cells[3], sizeof(cells[3]), "%.2f", r->median_mwrs);
	snprintf(cells[4], sizeof(cells[4]), "%.2f", 1e3 / r->median_mwrs);
	snprintf(cells[5], sizeof(cells[5]), "%.2f", r->min_mwrs);
	snprintf(cells[6], sizeof(cells[6]), "%.2f", r->max_mwrs);
	perf_table_row(stdout, srq_cols, SRQ_NB_COLS, cells);
}

static void
table_outro(const struct srq_result *res, unsigned int n, const struct srq_bench *b)
{
	const struct srq_result *t = target_result(res, n);

	printf("\n%" PRIu64 " zero-length messages drained the SRQ, every WR accounted for.\n",
	       b->messages);
	printf("\ntarget:\n");
	if (t == NULL)
		printf("  %-50s %12s  %s\n", "lists of 32: >= 50 M WRs/s per core", "-",
		       target_verdict(t));
	else
		printf("  %-50s %10.2f M  %s\n", "lists of 32: >= 50 M WRs/s per core",
		       t->median_mwrs, target_verdict(t));
}

static void
json_report(const struct srq_opts *o, const struct srq_result *res, unsigned int n,
	    const struct srq_bench *b, bool defaulted)
{
	const struct srq_result *t = target_result(res, n);
	struct perf_json j;
	unsigned int i;
	uint32_t r;

	perf_json_init(&j, stdout);
	perf_json_object_begin(&j, NULL);
	perf_json_str(&j, "benchmark", "srq-post");
	perf_json_object_begin(&j, "config");
	perf_json_u64(&j, "max_wr", b->max_wr);
	perf_json_bool(&j, "thread_domain", b->td);
	perf_json_u64(&j, "sge_per_wr", 1);
	perf_json_array_begin(&j, "lists");
	for (i = 0; i < o->nb_lists; i++)
		perf_json_u64(&j, NULL, o->lists[i]);
	perf_json_array_end(&j);
	perf_json_double(&j, "min_timed_s", o->seconds);
	perf_json_u64(&j, "min_rounds", SRQ_MIN_ROUNDS);
	perf_json_u64(&j, "warmup_rounds", SRQ_WARMUP_ROUNDS);
	perf_json_str(&j, "srq_device", b->dev[1].name);
	perf_json_str(&j, "sender_device", b->dev[0].name);
	perf_json_str(&j, "round", "post max_wr WRs (timed), one more must give ENOMEM, "
		      "then max_wr zero-length RC SENDs drain the SRQ (untimed, every WR "
		      "checked in FIFO order)");
	perf_json_str(&j, "threads", "one: it posts, and drives both devices inline while "
		      "draining");
	pv_json_setup(&j, NULL, defaulted);
	perf_json_object_end(&j);
	perf_json_array_begin(&j, "results");
	for (i = 0; i < n; i++) {
		perf_json_object_begin(&j, NULL);
		perf_json_u64(&j, "list", res[i].list);
		perf_json_u64(&j, "rounds", res[i].rounds);
		perf_json_u64(&j, "wrs_timed", (uint64_t)res[i].rounds * b->max_wr);
		perf_json_double(&j, "timed_s", res[i].timed_s);
		perf_json_double(&j, "median_mwrs", res[i].median_mwrs);
		perf_json_double(&j, "median_ns_per_wr", 1e3 / res[i].median_mwrs);
		perf_json_double(&j, "min_mwrs", res[i].min_mwrs);
		perf_json_double(&j, "max_mwrs", res[i].max_mwrs);
		perf_json_array_begin(&j, "round_mwrs");
		for (r = 0; r < res[i].rounds; r++)
			perf_json_double(&j, NULL, res[i].mwrs[r]);
		perf_json_array_end(&j);
		perf_json_object_end(&j);
	}
	perf_json_array_end(&j);
	perf_json_u64(&j, "messages_drained", b->messages);
	perf_json_object_begin(&j, "target");
	perf_json_str(&j, "name", "lists of 32: >= 50 M WRs/s per core");
	perf_json_u64(&j, "list", SRQ_TARGET_LIST);
	perf_json_double(&j, "threshold_mwrs", SRQ_TARGET_MWRS);
	perf_json_double(&j, "value_mwrs", t != NULL ? t->median_mwrs : NAN);
	perf_json_str(&j, "verdict", target_verdict(t));
	perf_json_object_end(&j);
	perf_json_object_end(&j);
	perf_json_finish(&j);
}

static void
srq_help(void)
{
	printf("usage: dpv-perf srq-post [--json] [--list L,L,...] [--seconds S] "
	       "[--max-wr N] [--td]\n\n"
	       "ibv_post_srq_recv() rate of one thread, in WRs per second, posting lists of\n"
	       "L WRs. Rounds on one SRQ: post max_wr WRs (timed), check that one more gives\n"
	       "ENOMEM, then let the device consume every WR with zero-length RC SENDs from\n"
	       "the other device (untimed, every completion checked in FIFO order).\n\n"
	       "  --json          one JSON object on stdout instead of the table\n"
	       "  --list LIST     list lengths, comma-separated, 1..max_wr (default 1,32)\n"
	       "  --seconds S     timed posting per list length, at least (default %.1f);\n"
	       "                  at least %d rounds are run whatever S is\n"
	       "  --max-wr N      the SRQ's max_wr, %u..%u (default %u)\n"
	       "  --td            the SRQ and its QP under a thread domain (ibv_alloc_td,\n"
	       "                  ibv_alloc_parent_domain): no lock taken by a post\n"
	       "  --help          this text\n\n"
	       "Target: >= %.0f million WRs/s per core with lists of %u (PASS/MISS).\n",
	       SRQ_DEFAULT_SECONDS, SRQ_MIN_ROUNDS, SRQ_MIN_MAX_WR, SRQ_DEFAULT_MAX_WR,
	       SRQ_DEFAULT_MAX_WR, SRQ_TARGET_MWRS, SRQ_TARGET_LIST);
	pv_help_setup();
	printf("Exit status: 0 measured (a MISS too), 1 a wrong result or a resource failure,\n"
	       "2 a bad command line.\n");
}

enum { OPT_JSON = 256, OPT_LIST, OPT_SECONDS, OPT_MAX_WR, OPT_TD };

/* The options as given: --list is read once --max-wr is known. */
struct srq_args {
	struct srq_opts *o;
	const char *list;
};

static int
srq_opt(void *ctx, int c, const char *arg)
{
	struct srq_args *a = ctx;
	struct srq_opts *o = a->o;

	switch (c) {
	case OPT_JSON:
		o->json = true;
		break;
	case OPT_LIST:
		a->list = arg;
		break;
	case OPT_SECONDS:
		if (perf_parse_seconds(arg, 0, SRQ_MAX_SECONDS, &o->seconds) != 0)
			return perf_usage_error(SRQ_CMD, "--seconds '%s': expected seconds in "
						"0..%.0f", arg, SRQ_MAX_SECONDS);
		break;
	case OPT_MAX_WR:
		if (perf_parse_u32(arg, SRQ_MIN_MAX_WR, SRQ_DEFAULT_MAX_WR, &o->max_wr) != 0)
			return perf_usage_error(SRQ_CMD, "--max-wr '%s': expected %u..%u", arg,
						SRQ_MIN_MAX_WR, SRQ_DEFAULT_MAX_WR);
		break;
	case OPT_TD:
		o->td = true;
		break;
	}
	return 0;
}

/* 0 to run, -1 after --help, or PERF_EXIT_USAGE. */
static int
parse_opts(int argc, char **argv, struct srq_opts *o)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, OPT_JSON },
		{ "list", required_argument, NULL, OPT_LIST },
		{ "seconds", required_argument, NULL, OPT_SECONDS },
		{ "max-wr", required_argument, NULL, OPT_MAX_WR },
		{ "td", no_argument, NULL, OPT_TD },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct srq_args a = { .o = o };
	const char *list_arg;
	unsigned int i;
	int n;

	memset(o, 0, sizeof(*o));
	o->lists[0] = 1;
	o->lists[1] = SRQ_TARGET_LIST;
	o->nb_lists = 2;
	o->seconds = SRQ_DEFAULT_SECONDS;
	o->max_wr = SRQ_DEFAULT_MAX_WR;
	n = perf_getopts(SRQ_CMD, argc, argv, longopts, srq_help, srq_opt, &a);
	if (n != 0)
		return n;
	list_arg = a.list;
	/* After the loop: the lengths are bounded by --max-wr, wherever it was given. */
	if (list_arg != NULL) {
		n = perf_parse_u32_list(list_arg, 1, o->max_wr, o->lists, SRQ_MAX_LISTS);
		if (n < 0)
			return perf_usage_error(SRQ_CMD, "--list '%s': expected up to %d "
						"comma-separated list lengths in 1..%" PRIu32,
						list_arg, SRQ_MAX_LISTS, o->max_wr);
		o->nb_lists = (unsigned int)n;
	}
	for (i = 0; i < o->nb_lists; i++)
		for (unsigned int k = 0; k < i; k++)
			if (o->lists[k] == o->lists[i])
				return perf_usage_error(SRQ_CMD, "--list '%s': %" PRIu32
							" is listed twice", list_arg, o->lists[i]);
	return 0;
}

static int
srq_main(int argc, char **argv)
{
	struct srq_result res[SRQ_MAX_LISTS];
	struct srq_bench b;
	struct srq_opts o;
	unsigned int i, n = 0;
	bool defaulted;
	int rc;

	rc = parse_opts(argc, argv, &o);
	if (rc != 0)
		return rc < 0 ? PERF_EXIT_OK : rc;
	defaulted = pv_env_defaults();
	memset(res, 0, sizeof(res));
	rc = PERF_EXIT_FAIL;
	if (bench_setup(&b, o.max_wr, o.td) != 0)
		goto out;
	if (!o.json)
		table_intro(&o, &b, defaulted);
	for (i = 0; i < o.nb_lists; i++) {
		if (measure_list(&b, &o, o.lists[i], &res[n]) != 0)
			goto out;
		if (!o.json)
			table_row(&res[n], b.max_wr);
		n++;
	}
	if (o.json)
		json_report(&o, res, n, &b, defaulted);
	else
		table_outro(res, n, &b);
	rc = PERF_EXIT_OK;
out:
	if (bench_teardown(&b) != 0)
		rc = PERF_EXIT_FAIL;
	for (i = 0; i < SRQ_MAX_LISTS; i++)
		free(res[i].mwrs);
	return rc;
}

const struct perf_cmd perf_cmd_srq_post = {
	.name = SRQ_CMD,
	.summary = "ibv_post_srq_recv rate, lists of 1 and 32 WRs (SRQ drained untimed)",
	.run = srq_main,
};
