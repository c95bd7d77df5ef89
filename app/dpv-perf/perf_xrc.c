/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpv-perf xrc: what an XRC SRQ shared by --qps connections saves against an SRQ per
 * connection (doc/guides/srq.md §7), dpv0 to dpv1 in one process, one thread driving
 * both devices (inline progress). In each round, each of the two receive sides is made
 * anew and measured:
 *
 *   xrc   one XRC SRQ of --depth receives, one XRC target QP per connection (no queue
 *         of its own), the senders XRC initiators naming that SRQ;
 *   srqs  --qps RC QPs, each on an SRQ of its own of --depth receives.
 *
 * Both have one receive CQ. Memory: what the receive side's objects took from DPDK's
 * heap (rte_malloc: the SRQ lanes, QP state and rings, the CQ) and the receive buffers
 * posted (--depth per SRQ, of 64 bytes). Rate: --msgs SENDs of 8 bytes, the
 * connections in turn, --window in flight, each message checked (its connection and
 * its number on it) and its receive posted again to the SRQ it came from. The modes
 * alternate round after round; the medians are reported.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <rte_malloc.h>

#include "perf_verbs.h"

#define XR_CMD "xrc"

#define XR_DEFAULT_QPS 16u
#define XR_MAX_QPS 256u
#define XR_DEFAULT_DEPTH 256u
#define XR_MAX_DEPTH 16384u
#define XR_DEFAULT_MSGS 200000u
#define XR_MAX_MSGS 100000000u
#define XR_DEFAULT_ROUNDS 5u
#define XR_MAX_ROUNDS 101u
#define XR_DEFAULT_WINDOW 128u
#define XR_MAX_WINDOW 4096u
#define XR_SLOT 64u
#define XR_SIZE 8u
#define XR_POLL 32
#define XR_MODES 2

enum xr_mode { XR_XRC, XR_SRQS };
static const char *const xr_mode_name[XR_MODES] = { "xrc", "srqs" };

struct xr_opts {
	bool json;
	uint32_t qps, depth, msgs, rounds, window;
};

/* One round of one mode: its objects, counters and what it measured. */
struct xr_run {
	const struct xr_opts *o;
	enum xr_mode mode;
	struct pv_dev *dev;             /* 0 sends, 1 receives */
	struct ibv_cq *scq, *rcq;
	struct ibv_qp **sqp, **rqp;     /* o->qps each */
	struct ibv_srq **srq;           /* xrc: 1; srqs: o->qps */
	uint32_t *srqn;                 /* xrc: the SRQ's number */
	struct ibv_xrcd *xrcd;
	uint8_t *sbuf, *rbuf;
	struct ibv_mr *smr, *rmr;
	uint64_t *next_seq;             /* per connection: the number it sends next */
	uint64_t *want_seq;             /* per connection: the number it must receive next */
	uint64_t sends, sends_done, recvs;
	uint64_t heap_bytes;            /* DPDK heap the receive side took */
	uint64_t buf_bytes;             /* receive buffers posted */
};

static uint64_t
heap_in_use(void)
{
	struct rte_malloc_socket_stats st;
	uint64_t sum = 0;

	for (int s = 0; s < RTE_MAX_NUMA_NODES; s++)
		if (rte_malloc_get_socket_stats(s, &st) == 0)
			sum += st.heap_allocsz_bytes;
	return sum;
}

static int
xr_fail(const char *what, const char *why)
{
	perf_error("%s: %s%s", XR_CMD, what, why);
	return -1;
}

static uint32_t nsrq(const struct xr_run *r) { return r->mode == XR_XRC ? 1 : r->o->qps; }

/* Receive slot @p j (of nsrq() * depth) back into its SRQ. */
static int
repost(struct xr_run *r, uint32_t j)
{
	struct ibv_sge sge = { .addr = (uintptr_t)(r->rbuf + (size_t)j * XR_SLOT),
			       .length = XR_SLOT, .lkey = r->rmr->lkey };
	struct ibv_recv_wr wr = { .wr_id = j, .sg_list = &sge, .num_sge = 1 }, *bad;
	int ret = ibv_post_srq_recv(r->srq[j / r->o->depth], &wr, &bad);

	return ret == 0 ? 0 : xr_fail("ibv_post_srq_recv: ", strerror(ret));
}

static int
qp_init(struct ibv_qp *qp)
{
	return pv_rc_init_access(qp, IBV_ACCESS_LOCAL_WRITE);
}

/* The receive side: measured from before its first object to after its last receive. */
static int
setup_receiver(struct xr_run *r)
{
	const struct xr_opts *o = r->o;
	struct pv_dev *d = &r->dev[1];
	const uint64_t heap0 = heap_in_use();
	const uint32_t n = nsrq(r);
	size_t len = (size_t)n * o->depth * XR_SLOT;

	r->rcq = ibv_create_cq(d->ctx, (int)(n * o->depth + 64), NULL, NULL, 0);
	if (r->rcq == NULL)
		return xr_fail("ibv_create_cq: ", strerror(errno));
	if (r->mode == XR_XRC) {
		struct ibv_xrcd_init_attr xa = {
			.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
			.fd = -1, .oflags = O_CREAT,
		};

		r->xrcd = ibv_open_xrcd(d->ctx, &xa);
		if (r->xrcd == NULL)
			return xr_fail("ibv_open_xrcd: ", strerror(errno));
	}
	for (uint32_t i = 0; i < n; i++) {
		struct ibv_srq_init_attr_ex sa = {
			.attr = { .max_wr = o->depth, .max_sge = 1 },
			.comp_mask = IBV_SRQ_INIT_ATTR_PD,
			.pd = d->pd,
		};

		if (r->mode == XR_XRC) {
			sa.comp_mask |= IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_XRCD |
					IBV_SRQ_INIT_ATTR_CQ;
			sa.srq_type = IBV_SRQT_XRC;
			sa.xrcd = r->xrcd;
			sa.cq = r->rcq;
		}
		r->srq[i] = ibv_create_srq_ex(d->ctx, &sa);
		if (r->srq[i] == NULL)
			return xr_fail("ibv_create_srq_ex: ", strerror(errno));
		if (r->mode == XR_XRC && ibv_get_srq_num(r->srq[i], &r->srqn[i]) != 0)
			return xr_fail("ibv_get_srq_num", "");
	}
	for (uint32_t i = 0; i < o->qps; i++) {
		struct ibv_qp_init_attr_ex qa = { .comp_mask = IBV_QP_INIT_ATTR_PD, .pd = d->pd };

		if (r->mode == XR_XRC) {
			qa.qp_type = IBV_QPT_XRC_RECV;
			qa.comp_mask = IBV_QP_INIT_ATTR_XRCD;
			qa.xrcd = r->xrcd;
		} else {
			qa.qp_type = IBV_QPT_RC;
			qa.send_cq = qa.recv_cq = r->rcq;
			qa.srq = r->srq[i];
			qa.cap.max_send_wr = 1;
			qa.cap.max_send_sge = 1;
		}
		r->rqp[i] = ibv_create_qp_ex(d->ctx, &qa);
		if (r->rqp[i] == NULL)
			return xr_fail("ibv_create_qp_ex (receiver): ", strerror(errno));
		if (qp_init(r->rqp[i]) != 0)
			return -1;
	}
	if (pv_alloc_mr(XR_CMD, d, len, IBV_ACCESS_LOCAL_WRITE, &r->rbuf, &r->rmr) != 0)
		return -1;
	for (uint32_t j = 0; j < n * o->depth; j++)
		if (repost(r, j) != 0)
			return -1;
	r->heap_bytes = heap_in_use() - heap0;
	r->buf_bytes = len;
	return 0;
}

static int
setup(struct xr_run *r)
{
	const struct xr_opts *o = r->o;
	struct pv_dev *s = &r->dev[0];

	if (setup_receiver(r) != 0)
		return -1;
	r->scq = ibv_create_cq(s->ctx, (int)(o->window + 64), NULL, NULL, 0);
	if (r->scq == NULL)
		return xr_fail("ibv_create_cq: ", strerror(errno));
	if (pv_alloc_mr(XR_CMD, s, XR_SLOT, IBV_ACCESS_LOCAL_WRITE, &r->sbuf, &r->smr) != 0)
		return -1;
	for (uint32_t i = 0; i < o->qps; i++) {
		struct ibv_qp_init_attr_ex qa = {
			.send_cq = r->scq, .recv_cq = r->scq,
			.cap = { .max_send_wr = o->window, .max_send_sge = 1,
				 .max_inline_data = XR_SIZE },
			.qp_type = r->mode == XR_XRC ? IBV_QPT_XRC_SEND : IBV_QPT_RC,
			.comp_mask = IBV_QP_INIT_ATTR_PD, .pd = s->pd,
		};

		if (r->mode == XR_SRQS)
			qa.cap.max_recv_wr = qa.cap.max_recv_sge = 1;
		r->sqp[i] = ibv_create_qp_ex(s->ctx, &qa);
		if (r->sqp[i] == NULL)
			return xr_fail("ibv_create_qp_ex (sender): ", strerror(errno));
		if (qp_init(r->sqp[i]) != 0 ||
		    pv_rc_connect(r->sqp[i], r->rqp[i]->qp_num, &r->dev[1].gid) != 0 ||
		    pv_rc_connect(r->rqp[i], r->sqp[i]->qp_num, &r->dev[0].gid) != 0)
			return -1;
	}
	return 0;
}

static int
teardown(struct xr_run *r)
{
	int rc = 0;

	for (uint32_t i = 0; i < r->o->qps; i++) {
		if (r->sqp[i] != NULL)
			rc |= pv_destroyed("ibv_destroy_qp", ibv_destroy_qp(r->sqp[i]));
		if (r->rqp[i] != NULL)
			rc |= pv_destroyed("ibv_destroy_qp", ibv_destroy_qp(r->rqp[i]));
	}
	for (uint32_t i = 0; i < nsrq(r); i++)
		if (r->srq[i] != NULL)
			rc |= pv_destroyed("ibv_destroy_srq", ibv_destroy_srq(r->srq[i]));
	if (r->xrcd != NULL)
		rc |= pv_destroyed("ibv_close_xrcd", ibv_close_xrcd(r->xrcd));
	if (r->scq != NULL)
		rc |= pv_destroyed("ibv_destroy_cq", ibv_destroy_cq(r->scq));
	if (r->rcq != NULL)
		rc |= pv_destroyed("ibv_destroy_cq", ibv_destroy_cq(r->rcq));
	if (r->smr != NULL)
		rc |= pv_destroyed("ibv_dereg_mr", ibv_dereg_mr(r->smr));
	if (r->rmr != NULL)
		rc |= pv_destroyed("ibv_dereg_mr", ibv_dereg_mr(r->rmr));
	free(r->sbuf);
	free(r->rbuf);
	return rc;
}

static int
reap(struct xr_run *r)
{
	struct ibv_wc wc[XR_POLL];
	int got = ibv_poll_cq(r->scq, XR_POLL, wc);

	if (got < 0)
		return xr_fail("ibv_poll_cq (sender): ", strerror(-got));
	for (int k = 0; k < got; k++) {
		if (wc[k].status != IBV_WC_SUCCESS || wc[k].opcode != IBV_WC_SEND)
			return xr_fail("send completion: ", ibv_wc_status_str(wc[k].status));
		r->sends_done++;
	}
	got = ibv_poll_cq(r->rcq, XR_POLL, wc);
	if (got < 0)
		return xr_fail("ibv_poll_cq (receiver): ", strerror(-got));
	for (int k = 0; k < got; k++) {
		const uint32_t j = (uint32_t)wc[k].wr_id;
		uint64_t seq, c;

		if (wc[k].status != IBV_WC_SUCCESS || wc[k].opcode != IBV_WC_RECV ||
		    wc[k].byte_len != XR_SIZE || j >= nsrq(r) * r->o->depth)
			return xr_fail("receive completion: ", ibv_wc_status_str(wc[k].status));
		/* The payload names its connection (seq >> 40), whose receiving QP the
		 * completion must be; each connection's messages come in its order, into
		 * its SRQ. */
		memcpy(&seq, r->rbuf + (size_t)j * XR_SLOT, sizeof(seq));
		c = seq >> 40;
		if (c >= r->o->qps || wc[k].qp_num != r->rqp[c]->qp_num ||
		    seq != (c << 40 | r->want_seq[c]) ||
		    (r->mode == XR_SRQS && j / r->o->depth != c))
			return xr_fail("a message out of its connection's order or SRQ", "");
		r->want_seq[c]++;
		r->recvs++;
		if (repost(r, j) != 0)
			return -1;
	}
	return 0;
}

/* --msgs SENDs, the connections in turn, until every one is received and completed. */
static __attribute__((noinline)) int
measure_xrc(struct xr_run *r)
{
	const struct xr_opts *o = r->o;
	struct ibv_sge sge = { .addr = (uintptr_t)r->sbuf, .length = XR_SIZE,
			       .lkey = r->smr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE }, *bad;
	uint64_t deadline = 0, last = 0, seq;
	uint32_t calls = 0, c;
	int ret;

	while (r->recvs < o->msgs || r->sends_done < o->msgs) {
		while (r->sends < o->msgs && r->sends - r->sends_done < o->window) {
			c = (uint32_t)(r->sends % o->qps);
			seq = (uint64_t)c << 40 | r->next_seq[c];
			memcpy(r->sbuf, &seq, sizeof(seq));
			wr.wr_id = r->sends;
			wr.qp_type.xrc.remote_srqn = r->mode == XR_XRC ? r->srqn[0] : 0;
			ret = ibv_post_send(r->sqp[c], &wr, &bad);
			if (ret == ENOMEM)
				break;
			if (ret != 0)
				return xr_fail("ibv_post_send: ", strerror(ret));
			r->next_seq[c]++;
			r->sends++;
		}
		if (reap(r) != 0)
			return -1;
		if (deadline == 0 || r->recvs != last) {
			deadline = pv_deadline();
			last = r->recvs;
		}
		if (pv_stalled(deadline, &calls))
			return xr_fail("no progress for 5 s", "");
	}
	return 0;
}

/* One round of @p mode: made, streamed, torn down. */
static int
run_one(const struct xr_opts *o, struct pv_dev dev[2], enum xr_mode mode, double *rate,
	uint64_t *heap, uint64_t *bufs)
{
	struct ibv_qp *sqp[XR_MAX_QPS] = { 0 }, *rqp[XR_MAX_QPS] = { 0 };
	struct ibv_srq *srq[XR_MAX_QPS] = { 0 };
	uint64_t next[XR_MAX_QPS] = { 0 }, want[XR_MAX_QPS] = { 0 }, t0, t1;
	uint32_t srqn[1] = { 0 };
	struct xr_run r = {
		.o = o, .mode = mode, .dev = dev, .sqp = sqp, .rqp = rqp, .srq = srq,
		.srqn = srqn, .next_seq = next, .want_seq = want,
	};
	int rc = -1;

	if (setup(&r) == 0) {
		t0 = perf_now_ns();
		if (measure_xrc(&r) == 0) {
			t1 = perf_now_ns();
			*rate = (double)o->msgs * 1e9 / (double)(t1 - t0);
			*heap = r.heap_bytes;
			*bufs = r.buf_bytes;
			rc = 0;
		}
	}
	if (teardown(&r) != 0)
		rc = -1;
	return rc;
}

static void
report(const struct xr_opts *o, const struct pv_dev dev[2], double rate[XR_MODES][XR_MAX_ROUNDS],
       const uint64_t heap[XR_MODES], const uint64_t bufs[XR_MODES], bool defaulted)
{
	double med[XR_MODES];

	for (int m = 0; m < XR_MODES; m++) {
		double v[XR_MAX_ROUNDS];

		memcpy(v, rate[m], sizeof(double) * o->rounds);
		med[m] = perf_median(v, o->rounds);
	}
	if (o->json) {
		struct perf_json j;

		perf_json_init(&j, stdout);
		perf_json_object_begin(&j, NULL);
		perf_json_str(&j, "benchmark", XR_CMD);
		perf_json_object_begin(&j, "config");
		perf_json_u64(&j, "qps", o->qps);
		perf_json_u64(&j, "depth", o->depth);
		perf_json_u64(&j, "msgs", o->msgs);
		perf_json_u64(&j, "rounds", o->rounds);
		perf_json_u64(&j, "window", o->window);
		perf_json_u64(&j, "size", XR_SIZE);
		pv_json_setup(&j, dev, defaulted);
		perf_json_object_end(&j);
		perf_json_array_begin(&j, "modes");
		for (int m = 0; m < XR_MODES; m++) {
			perf_json_object_begin(&j, NULL);
			perf_json_str(&j, "mode", xr_mode_name[m]);
			perf_json_u64(&j, "srqs", m == XR_XRC ? 1 : o->qps);
			perf_json_u64(&j, "heap_bytes", heap[m]);
			perf_json_u64(&j, "receive_buffer_bytes", bufs[m]);
			perf_json_double(&j, "msgs_per_s_median", med[m]);
			perf_json_array_begin(&j, "msgs_per_s");
			for (uint32_t k = 0; k < o->rounds; k++)
				perf_json_double(&j, NULL, rate[m][k]);
			perf_json_array_end(&j);
			perf_json_object_end(&j);
		}
		perf_json_array_end(&j);
		perf_json_double(&j, "rate_ratio_xrc_to_srqs", med[XR_XRC] / med[XR_SRQS]);
		perf_json_object_end(&j);
		perf_json_finish(&j);
		return;
	}
	printf("dpv-perf xrc: %" PRIu32 " connections dpv0 -> dpv1, %" PRIu32 " receives per "
	       "SRQ, %" PRIu32 " SENDs of %u bytes a round, window %" PRIu32 ", median of %"
	       PRIu32 " rounds\n", o->qps, o->depth, o->msgs, XR_SIZE, o->window, o->rounds);
	printf("  one thread drives both sides (inline progress); memory is the receive "
	       "side's\n");
	pv_print_setup(defaulted);
	printf("%-6s %6s %14s %18s %12s\n", "mode", "SRQs", "heap KiB", "recv buffers KiB",
	       "M msgs/s");
	for (int m = 0; m < XR_MODES; m++)
		printf("%-6s %6u %14.1f %18.1f %12.3f\n", xr_mode_name[m],
		       m == XR_XRC ? 1u : o->qps, heap[m] / 1024.0, bufs[m] / 1024.0,
		       med[m] / 1e6);
	printf("xrc against srqs: %.2fx the memory (heap and buffers), %.2fx the rate\n",
	       (double)(heap[XR_XRC] + bufs[XR_XRC]) / (double)(heap[XR_SRQS] + bufs[XR_SRQS]),
	       med[XR_XRC] / med[XR_SRQS]);
}

static void
xr_help(void)
{
	printf("usage: dpv-perf xrc [--json] [--qps N] [--depth N] [--msgs N] [--rounds N]\n"
	       "                    [--window N]\n\n"
	       "One XRC SRQ for --qps connections (XRC target QPs) against an SRQ for each\n"
	       "(RC QPs), dpv0 to dpv1 in one process: the memory the receive side takes\n"
	       "(DPDK heap and posted receive buffers, --depth receives an SRQ) and the rate\n"
	       "of 8-byte SENDs over the connections in turn, every message checked. The\n"
	       "modes alternate, a fresh setup each round.\n\n"
	       "  --json          one JSON object on stdout instead of the table\n"
	       "  --qps N         connections, 1..%u (default %u)\n"
	       "  --depth N       receives posted to each SRQ, 1..%u (default %u)\n"
	       "  --msgs N        SENDs a round, 1..%u (default %u)\n"
	       "  --rounds N      rounds of each mode, 1..%u (default %u)\n"
	       "  --window N      SENDs in flight, 1..%u (default %u)\n"
	       "  --help          this text\n\n",
	       XR_MAX_QPS, XR_DEFAULT_QPS, XR_MAX_DEPTH, XR_DEFAULT_DEPTH, XR_MAX_MSGS,
	       XR_DEFAULT_MSGS, XR_MAX_ROUNDS, XR_DEFAULT_ROUNDS, XR_MAX_WINDOW,
	       XR_DEFAULT_WINDOW);
	pv_help_setup();
	printf("A wrong completion or message fails the run with exit status 1; 2: a bad\n"
	       "command line.\n");
}

enum { OPT_JSON = 256, OPT_QPS, OPT_DEPTH, OPT_MSGS, OPT_ROUNDS, OPT_WINDOW };

static int
xr_opt(void *ctx, int c, const char *arg)
{
	struct xr_opts *o = ctx;
	static const struct {
		int opt;
		const char *name;
		uint32_t max;
		size_t off;
	} nums[] = {
		{ OPT_QPS, "--qps", XR_MAX_QPS, offsetof(struct xr_opts, qps) },
		{ OPT_DEPTH, "--depth", XR_MAX_DEPTH, offsetof(struct xr_opts, depth) },
		{ OPT_MSGS, "--msgs", XR_MAX_MSGS, offsetof(struct xr_opts, msgs) },
		{ OPT_ROUNDS, "--rounds", XR_MAX_ROUNDS, offsetof(struct xr_opts, rounds) },
		{ OPT_WINDOW, "--window", XR_MAX_WINDOW, offsetof(struct xr_opts, window) },
	};

	if (c == OPT_JSON) {
		o->json = true;
		return 0;
	}
	for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++) {
		if (nums[i].opt != c)
			continue;
		if (perf_parse_u32(arg, 1, nums[i].max,
				   (uint32_t *)((char *)o + nums[i].off)) != 0)
			return perf_usage_error(XR_CMD, "%s '%s': expected 1..%u", nums[i].name,
						arg, nums[i].max);
	}
	return 0;
}

static int
xr_main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, OPT_JSON },
		{ "qps", required_argument, NULL, OPT_QPS },
		{ "depth", required_argument, NULL, OPT_DEPTH },
		{ "msgs", required_argument, NULL, OPT_MSGS },
		{ "rounds", required_argument, NULL, OPT_ROUNDS },
		{ "window", required_argument, NULL, OPT_WINDOW },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct xr_opts o = {
		.qps = XR_DEFAULT_QPS, .depth = XR_DEFAULT_DEPTH, .msgs = XR_DEFAULT_MSGS,
		.rounds = XR_DEFAULT_ROUNDS, .window = XR_DEFAULT_WINDOW,
	};
	static double rate[XR_MODES][XR_MAX_ROUNDS];
	uint64_t heap[XR_MODES] = { 0 }, bufs[XR_MODES] = { 0 };
	struct pv_dev dev[2] = { 0 };
	bool defaulted;
	int rc;

	rc = perf_getopts(XR_CMD, argc, argv, longopts, xr_help, xr_opt, &o);
	if (rc != 0)
		return rc < 0 ? PERF_EXIT_OK : rc;
	defaulted = pv_env_defaults();
	if (pv_open_pair(dev) != 0)
		return PERF_EXIT_FAIL;
	rc = PERF_EXIT_OK;
	for (uint32_t k = 0; k < o.rounds && rc == PERF_EXIT_OK; k++)
		for (int m = 0; m < XR_MODES && rc == PERF_EXIT_OK; m++)
			if (run_one(&o, dev, (enum xr_mode)m, &rate[m][k], &heap[m],
				    &bufs[m]) != 0)
				rc = PERF_EXIT_FAIL;
	if (rc == PERF_EXIT_OK)
		report(&o, dev, rate, heap, bufs, defaulted);
	if (pv_close_pair(dev) != 0)
		rc = PERF_EXIT_FAIL;
	return rc;
}

const struct perf_cmd perf_cmd_xrc = {
	.name = XR_CMD,
	.summary = "one XRC SRQ for many connections against an SRQ each: memory and rate",
	.run = xr_main,
};
