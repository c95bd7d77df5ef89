/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpv-perf rate: the message rate of small RC SENDs with a window, dpv0 to dpv1 in one
 * process, one thread driving both devices (inline progress): the sender keeps
 * --window SENDs in flight and asks a completion every --signal, the receiver takes
 * each message from its RQ, checks it and posts the receive again, as ib_send_bw's two
 * sides do. Both sides share one core here, so the rate is the cost of a message at
 * both ends together; its figure that does not move with the machine is the
 * instruction count of measure_stream() under callgrind (doc/guides/verbs-perf.md),
 * and the rate between two processes on two cores is `dpv-perf link`'s.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "perf_verbs.h"

#define RT_CMD "rate"

#define RT_DEFAULT_SIZE 8u
#define RT_MAX_SIZE 256u     /* inline: the SEND's payload is copied at post */
#define RT_DEFAULT_MSGS 1000000u
#define RT_MAX_MSGS 1000000000u
#define RT_DEFAULT_WARMUP 10000u
#define RT_DEFAULT_WINDOW 128u   /* perftest's default tx depth */
#define RT_MAX_WINDOW 4096u
#define RT_DEFAULT_SIGNAL 16u
#define RT_RQ_DEPTH 512u
#define RT_SLOT 256u
#define RT_CQ_DEPTH 8192
#define RT_POLL 32

struct rt_opts {
	bool json, td;
	uint32_t size, msgs, warmup, window, signal;
};

struct rt {
	const struct rt_opts *o;
	struct pv_dev dev[2];
	struct pv_side side[2];  /* 0 sends, 1 receives */
	uint64_t acked;          /* SENDs known complete (up to the last signaled one) */
};

static int
rt_fail(const char *fmt, uint64_t seq, const char *why)
{
	perf_error("%s: message %" PRIu64 ": %s%s", RT_CMD, seq, fmt, why);
	return -1;
}

static int
post_recv(struct pv_side *s, uint32_t j, uint32_t size)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)pv_slot(s, 1 + j, RT_SLOT), .length = size,
		.lkey = s->slot_mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = j, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(s->qp, &wr, &bad);
}

static int
setup(struct rt *r)
{
	const struct rt_opts *o = r->o;

	if (pv_open_pair(r->dev) != 0 || (o->td && pv_use_td(r->dev) != 0))
		return -1;
	for (unsigned int i = 0; i < 2; i++) {
		struct pv_side *s = &r->side[i];

		if (pv_alloc_mr(RT_CMD, &r->dev[i], (size_t)(RT_RQ_DEPTH + 1) * RT_SLOT,
				IBV_ACCESS_LOCAL_WRITE, &s->slots, &s->slot_mr) != 0 ||
		    pv_side_cq(RT_CMD, s, &r->dev[i], RT_CQ_DEPTH) != 0 ||
		    pv_side_qp(RT_CMD, s, &r->dev[i], i == 0 ? o->window + o->signal : 1,
			       i == 0 ? 1 : RT_RQ_DEPTH, RT_MAX_SIZE, IBV_ACCESS_LOCAL_WRITE) != 0)
			return -1;
	}
	for (uint32_t j = 0; j < RT_RQ_DEPTH; j++) {
		int ret = post_recv(&r->side[1], j, o->size);

		if (ret != 0) {
			perf_error("%s: ibv_post_recv: %s", RT_CMD, strerror(ret));
			return -1;
		}
	}
	return pv_connect_pair(r->side, r->dev);
}

/* The sender's CQ: only SENDs, the signaled ones, in order. */
static int
reap_sends(struct rt *r)
{
	struct pv_side *s = &r->side[0];
	struct ibv_wc wc[RT_POLL];
	int got = ibv_poll_cq(s->cq, RT_POLL, wc);

	if (got < 0)
		return rt_fail("ibv_poll_cq of the sender: ", r->acked, strerror(-got));
	for (int i = 0; i < got; i++) {
		if (wc[i].status != IBV_WC_SUCCESS || wc[i].opcode != IBV_WC_SEND ||
		    wc[i].wr_id < r->acked)
			return rt_fail("send completion: ", wc[i].wr_id,
				       ibv_wc_status_str(wc[i].status));
		r->acked = wc[i].wr_id + 1;
		s->sig_done++;
	}
	return 0;
}

/* The receiver's CQ: each message in order, its payload its sequence number. */
static int
reap_recvs(struct rt *r)
{
	struct pv_side *s = &r->side[1];
	struct ibv_wc wc[RT_POLL];
	int got = ibv_poll_cq(s->cq, RT_POLL, wc), ret;

	if (got < 0)
		return rt_fail("ibv_poll_cq of the receiver: ", s->recvs, strerror(-got));
	for (int i = 0; i < got; i++) {
		uint32_t j = (uint32_t)(s->recvs % RT_RQ_DEPTH);
		uint64_t seq;

		memcpy(&seq, pv_slot(s, 1 + j, RT_SLOT), sizeof(seq));
		if (wc[i].status != IBV_WC_SUCCESS || wc[i].opcode != IBV_WC_RECV ||
		    wc[i].wr_id != j || wc[i].byte_len != r->o->size || seq != s->recvs)
			return rt_fail("receive completion or payload wrong: ", s->recvs,
				       ibv_wc_status_str(wc[i].status));
		s->recvs++;
		ret = post_recv(s, j, r->o->size);
		if (ret != 0)
			return rt_fail("ibv_post_recv: ", s->recvs, strerror(ret));
	}
	return 0;
}

/*
 * Stream @p n more SENDs and wait until all are received and completed: the function
 * callgrind's --toggle-collect names, so its count is the messages' cost alone.
 */
static __attribute__((noinline)) int
measure_stream(struct rt *r, uint64_t n)
{
	struct pv_side *a = &r->side[0], *b = &r->side[1];
	const uint64_t end = a->sends + n;
	const uint32_t window = r->o->window, signal = r->o->signal;
	uint8_t *buf = pv_slot(a, 0, RT_SLOT);
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = r->o->size,
			       .lkey = a->slot_mr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND }, *bad;
	uint64_t deadline = 0, last = 0;
	uint32_t calls = 0;
	int ret;

	while (b->recvs < end || r->acked < end) {
		while (a->sends < end && a->sends - r->acked < window) {
			memcpy(buf, &a->sends, sizeof(a->sends));
			wr.wr_id = a->sends;
			wr.send_flags = IBV_SEND_INLINE;
			if (a->sends % signal == signal - 1 || a->sends + 1 == end)
				wr.send_flags |= IBV_SEND_SIGNALED;
			ret = ibv_post_send(a->qp, &wr, &bad);
			if (ret == ENOMEM)
				break;
			if (ret != 0)
				return rt_fail("ibv_post_send: ", a->sends, strerror(ret));
			a->sends++;
		}
		if (reap_recvs(r) != 0 || reap_sends(r) != 0)
			return -1;
		/* A stall is a wait without progress. */
		if (deadline == 0 || b->recvs != last) {
			deadline = pv_deadline();
			last = b->recvs;
		}
		if (pv_stalled(deadline, &calls))
			return rt_fail("no progress for 5 s: ", b->recvs, "");
	}
	return 0;
}

static void
report(const struct rt *r, double seconds, bool defaulted)
{
	const struct rt_opts *o = r->o;
	double rate = o->msgs / seconds;

	if (o->json) {
		struct perf_json j;

		perf_json_init(&j, stdout);
		perf_json_object_begin(&j, NULL);
		perf_json_str(&j, "benchmark", RT_CMD);
		perf_json_object_begin(&j, "config");
		perf_json_u64(&j, "size", o->size);
		perf_json_u64(&j, "msgs", o->msgs);
		perf_json_u64(&j, "warmup", o->warmup);
		perf_json_u64(&j, "window", o->window);
		perf_json_u64(&j, "signal_every", o->signal);
		perf_json_bool(&j, "thread_domain", o->td);
		perf_json_str(&j, "threads", "one thread drives both sides in one process "
			      "(inline progress)");
		pv_json_setup(&j, r->dev, defaulted);
		perf_json_object_end(&j);
		perf_json_double(&j, "seconds", seconds);
		perf_json_double(&j, "msgs_per_s", rate);
		perf_json_u64(&j, "received", r->side[1].recvs);
		perf_json_u64(&j, "completions", r->side[0].sig_done);
		perf_json_object_end(&j);
		perf_json_finish(&j);
		return;
	}
	printf("dpv-perf rate: %" PRIu32 " RC SENDs of %" PRIu32 " bytes, dpv0 -> dpv1, "
	       "window %" PRIu32 ", a completion every %" PRIu32 "%s\n", o->msgs, o->size,
	       o->window, o->signal, o->td ? ", thread domain" : "");
	printf("  one thread drives both sides (inline progress): the cost of a message at "
	       "both ends\n");
	pv_print_setup(defaulted);
	printf("%.3f M messages/s (%.1f ns a message, both ends)\n", rate / 1e6,
	       seconds * 1e9 / o->msgs);
}

static void
rt_help(void)
{
	printf("usage: dpv-perf rate [--json] [--size N] [--msgs N] [--warmup N]\n"
	       "                     [--window N] [--signal N] [--td]\n\n"
	       "Message rate of RC SENDs (inline) from dpv0 to dpv1 in one process, one\n"
	       "thread driving both: --window SENDs in flight, a completion asked every\n"
	       "--signal, each message checked and its receive posted again. Under\n"
	       "callgrind (--toggle-collect=measure_stream) it gives the instructions of a\n"
	       "streamed message at both ends.\n\n"
	       "  --json          one JSON object on stdout instead of the text\n"
	       "  --size N        payload bytes, 8..%u (default %u)\n"
	       "  --msgs N        measured messages, 1..%u (default %u)\n"
	       "  --warmup N      messages before those measured, 0..%u (default %u)\n"
	       "  --window N      SENDs in flight, 1..%u (default %u, perftest's)\n"
	       "  --signal N      a completion asked every N SENDs, 1..window (default %u)\n"
	       "  --td            QPs and CQs under a thread domain: no locks taken\n"
	       "  --help          this text\n\n",
	       RT_MAX_SIZE, RT_DEFAULT_SIZE, RT_MAX_MSGS, RT_DEFAULT_MSGS, RT_MAX_MSGS,
	       RT_DEFAULT_WARMUP, RT_MAX_WINDOW, RT_DEFAULT_WINDOW, RT_DEFAULT_SIGNAL);
	pv_help_setup();
	printf("Every message and completion is checked; a wrong one fails the run with exit\n"
	       "status 1. 2: a bad command line.\n");
}

enum { OPT_JSON = 256, OPT_SIZE, OPT_MSGS, OPT_WARMUP, OPT_WINDOW, OPT_SIGNAL, OPT_TD };

static int
rt_opt(void *ctx, int c, const char *arg)
{
	struct rt_opts *o = ctx;

	switch (c) {
	case OPT_JSON:
		o->json = true;
		break;
	case OPT_SIZE:
		if (perf_parse_u32(arg, 8, RT_MAX_SIZE, &o->size) != 0)
			return perf_usage_error(RT_CMD, "--size '%s': expected 8..%u bytes (the "
						"payload carries the message's number, inline)",
						arg, RT_MAX_SIZE);
		break;
	case OPT_MSGS:
		if (perf_parse_u32(arg, 1, RT_MAX_MSGS, &o->msgs) != 0)
			return perf_usage_error(RT_CMD, "--msgs '%s': expected 1..%u", arg,
						RT_MAX_MSGS);
		break;
	case OPT_WARMUP:
		if (perf_parse_u32(arg, 0, RT_MAX_MSGS, &o->warmup) != 0)
			return perf_usage_error(RT_CMD, "--warmup '%s': expected 0..%u", arg,
						RT_MAX_MSGS);
		break;
	case OPT_WINDOW:
		if (perf_parse_u32(arg, 1, RT_MAX_WINDOW, &o->window) != 0)
			return perf_usage_error(RT_CMD, "--window '%s': expected 1..%u", arg,
						RT_MAX_WINDOW);
		break;
	case OPT_SIGNAL:
		if (perf_parse_u32(arg, 1, RT_MAX_WINDOW, &o->signal) != 0)
			return perf_usage_error(RT_CMD, "--signal '%s': expected 1..%u", arg,
						RT_MAX_WINDOW);
		break;
	case OPT_TD:
		o->td = true;
		break;
	}
	return 0;
}

static int
rt_main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, OPT_JSON },
		{ "size", required_argument, NULL, OPT_SIZE },
		{ "msgs", required_argument, NULL, OPT_MSGS },
		{ "warmup", required_argument, NULL, OPT_WARMUP },
		{ "window", required_argument, NULL, OPT_WINDOW },
		{ "signal", required_argument, NULL, OPT_SIGNAL },
		{ "td", no_argument, NULL, OPT_TD },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct rt_opts o = {
		.size = RT_DEFAULT_SIZE, .msgs = RT_DEFAULT_MSGS, .warmup = RT_DEFAULT_WARMUP,
		.window = RT_DEFAULT_WINDOW, .signal = RT_DEFAULT_SIGNAL,
	};
	struct rt r = { .o = &o };
	uint64_t t0, t1;
	bool defaulted;
	int rc;

	rc = perf_getopts(RT_CMD, argc, argv, longopts, rt_help, rt_opt, &o);
	if (rc != 0)
		return rc < 0 ? PERF_EXIT_OK : rc;
	if (o.signal > o.window)
		return perf_usage_error(RT_CMD, "--signal %u: at most the window (%u): a window "
					"without a signaled SEND never completes", o.signal,
					o.window);
	defaulted = pv_env_defaults();
	rc = PERF_EXIT_FAIL;
	if (setup(&r) != 0 || (o.warmup > 0 && measure_stream(&r, o.warmup) != 0))
		goto out;
	t0 = perf_now_ns();
	if (measure_stream(&r, o.msgs) != 0)
		goto out;
	t1 = perf_now_ns();
	report(&r, (double)(t1 - t0) / 1e9, defaulted);
	rc = PERF_EXIT_OK;
out:
	if ((pv_side_teardown(&r.side[0]) | pv_side_teardown(&r.side[1])) != 0 ||
	    pv_close_pair(r.dev) != 0)
		rc = PERF_EXIT_FAIL;
	return rc;
}

const struct perf_cmd perf_cmd_rate = {
	.name = RT_CMD,
	.summary = "message rate of RC SENDs with a window, both ends on one thread",
	.run = rt_main,
};
