/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Traffic modes, started and stopped as testpmd's forwarding: `set mode`, `start`,
 * `stop`. A mode runs on a thread of its own, between the first two devices, on
 * objects of its own (made at start, destroyed at stop), so the prompt stays free and
 * what a user created is left alone. It prints a line a second while it runs and a
 * summary when it stops.
 *
 *  - rc-pingpong:  SEND, answered by a SEND; round-trip latency.
 *  - tag-pingpong: the same with tagged messages into TM SRQs on both sides, each
 *                  side adding the tag of the next message before it is sent.
 *  - tag-flood:    tagged messages one way, as fast as the receiver re-adds tags.
 *  - rndv-stream:  rendezvous one way into matching tags: the sender SENDs a TMH
 *                  (RNDV) and an RVH naming its data; the receiver's device matches
 *                  it (TM_RECV, MATCH), RDMA-READs the data into the tag's buffer,
 *                  SENDs the sender a FIN (an ordinary receive of the sender's TM SRQ,
 *                  TM_NO_TAG) and completes TM_RECV DATA_VALID once the FIN is
 *                  acknowledged. The mode counts each step and checks every byte read.
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <infiniband/tm_types.h>

#include "testpmd.h"

enum mode { M_NONE, M_TAG_PINGPONG, M_TAG_FLOOD, M_RNDV_STREAM, M_RC_PINGPONG };

static const char *const mode_names[] = {"none", "tag-pingpong", "tag-flood", "rndv-stream",
					 "rc-pingpong"};

/* Tags a flood receiver keeps listed, and messages a flood sender keeps in flight. */
#define FLOOD_DEPTH 32u
#define TMH_LEN ((uint32_t)sizeof(struct ibv_tmh))
#define RVH_LEN ((uint32_t)sizeof(struct ibv_rvh))
/* Latency samples kept (the newest, when a run has more). */
#define SAMPLES (1u << 20)

struct side {
	unsigned int dev;
	struct ibv_pd *pd;
	struct ibv_cq_ex *cq;
	struct ibv_srq *srq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
	uint32_t buf_len;
};

static struct {
	enum mode mode;
	uint32_t size;
	uint64_t count; /* 0: until stop */
	pthread_t thread;
	bool running;
	volatile bool stop;
	struct side s[2];
	/* results, the thread's until it is joined */
	uint64_t msgs, errors;
	/* rndv-stream: the steps of each rendezvous, counted as they complete */
	uint64_t rndv_match, rndv_valid, rndv_bytes, rndv_fins;
	uint64_t expect_valid, expect_fin; /* the tags of the next DATA_VALID and FIN */
	uint64_t t_post[FLOOD_DEPTH];      /* streams: when each message in flight was sent */
	uint64_t t_start, t_end;
	uint64_t expect[2]; /* the tag of the next message each side must receive */
	uint64_t expect_step;
	uint64_t *lat;  /* ns */
	uint64_t n_lat;
	char failure[160];
} m = {.mode = M_RC_PINGPONG, .size = 64};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static bool tm_mode(void)
{
	return m.mode != M_RC_PINGPONG;
}

static void side_free(struct side *s)
{
	if (s->qp != NULL)
		ibv_destroy_qp(s->qp);
	if (s->srq != NULL)
		ibv_destroy_srq(s->srq);
	if (s->cq != NULL)
		ibv_destroy_cq(ibv_cq_ex_to_cq(s->cq));
	if (s->mr != NULL)
		ibv_dereg_mr(s->mr);
	free(s->buf);
	memset(s, 0, sizeof(*s));
}

static int side_make(struct side *s, unsigned int dev)
{
	struct ibv_cq_init_attr_ex ca = {
		.cqe = 1024,
		.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_TM_INFO,
	};
	struct ibv_qp_init_attr qa = {.qp_type = IBV_QPT_RC,
				      .cap = {.max_send_wr = 256, .max_recv_wr = 256,
					      .max_send_sge = 1, .max_recv_sge = 1}};

	s->dev = dev;
	s->pd = tp.dev[dev].pd;
	/* Room for a message per tag or receive, and the sender's messages after them. */
	s->buf_len = 2 * (FLOOD_DEPTH + 2) * (m.size + TMH_LEN + RVH_LEN);
	s->buf = calloc(1, s->buf_len);
	s->cq = ibv_create_cq_ex(tp.dev[dev].ctx, &ca);
	if (s->buf == NULL || s->cq == NULL)
		return ENOMEM;
	s->mr = ibv_reg_mr(s->pd, s->buf, s->buf_len, IBV_ACCESS_LOCAL_WRITE |
			   IBV_ACCESS_REMOTE_READ);
	if (s->mr == NULL)
		return errno;
	if (tm_mode()) {
		struct ibv_srq_init_attr_ex sa = {
			.attr = {.max_wr = 64, .max_sge = 1},
			.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
				     IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_TM,
			.srq_type = IBV_SRQT_TM, .pd = s->pd, .cq = ibv_cq_ex_to_cq(s->cq),
			.tm_cap = {.max_num_tags = 2 * FLOOD_DEPTH, .max_ops = 2 * FLOOD_DEPTH},
		};

		s->srq = ibv_create_srq_ex(tp.dev[dev].ctx, &sa);
		if (s->srq == NULL)
			return errno;
		qa.srq = s->srq;
		qa.cap.max_recv_wr = 0;
	}
	qa.send_cq = qa.recv_cq = ibv_cq_ex_to_cq(s->cq);
	s->qp = ibv_create_qp(s->pd, &qa);
	return s->qp == NULL ? errno : 0;
}

static int rc_connect(struct side *s, const struct side *peer)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1,
				.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ};
	int ret = ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				IBV_QP_ACCESS_FLAGS);

	if (ret != 0)
		return ret;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = peer->qp->qp_num;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.dgid = tp.dev[peer->dev].gid;
	a.ah_attr.grh.hop_limit = 64;
	ret = ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			    IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			    IBV_QP_MIN_RNR_TIMER);
	if (ret != 0)
		return ret;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	return ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			     IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

/* Slot @p i of a side's buffer: one message's room. */
static uint8_t *slot(struct side *s, uint32_t i)
{
	return s->buf + (size_t)i * (m.size + TMH_LEN + RVH_LEN);
}

static uint32_t slot_len(void)
{
	return m.size + TMH_LEN + RVH_LEN;
}

/* The byte every byte of rendezvous @p tag's data is: neighbours in a slot differ. */
static uint8_t rndv_byte(uint64_t tag)
{
	return (uint8_t)(tag * 7 + 1);
}

static int add_tag(struct side *s, uint64_t tag, uint32_t i)
{
	struct ibv_sge sge = {(uintptr_t)slot(s, i), slot_len(), s->mr->lkey};
	struct ibv_ops_wr op = {.wr_id = tag, .opcode = IBV_WR_TAG_ADD}, *bad;

	op.tm.add.recv_wr_id = tag;
	op.tm.add.sg_list = &sge;
	op.tm.add.num_sge = 1;
	op.tm.add.tag = tag;
	op.tm.add.mask = UINT64_MAX;
	return ibv_post_srq_ops(s->srq, &op, &bad);
}

static int post_recv(struct side *s, uint32_t i)
{
	struct ibv_sge sge = {(uintptr_t)slot(s, i), slot_len(), s->mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = i, .sg_list = &sge, .num_sge = 1}, *bad;

	return ibv_post_recv(s->qp, &wr, &bad);
}

/* A message from @p s: tagged (eager or rendezvous) in the TM modes, plain otherwise. */
static int send_msg(struct side *s, uint64_t tag, uint32_t i, uint64_t wr_id)
{
	uint8_t *p = slot(s, FLOOD_DEPTH + 2 + i);
	uint32_t len = m.size;
	struct ibv_sge sge;
	struct ibv_send_wr wr = {.wr_id = wr_id, .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED}, *bad;

	if (tm_mode()) {
		struct ibv_tmh *h = (struct ibv_tmh *)p;

		h->opcode = m.mode == M_RNDV_STREAM ? IBV_TMH_RNDV : IBV_TMH_EAGER;
		h->app_ctx = htobe32((uint32_t)wr_id);
		h->tag = htobe64(tag);
		if (m.mode == M_RNDV_STREAM) {
			struct ibv_rvh *r = (struct ibv_rvh *)(p + TMH_LEN);

			/* The data stays as it is until its FIN: a slot is reused FLOOD_DEPTH
			 * messages later, after that message's DATA_VALID. */
			memset(p + TMH_LEN + RVH_LEN, rndv_byte(tag), m.size);
			r->va = htobe64((uintptr_t)(p + TMH_LEN + RVH_LEN));
			r->rkey = htobe32(s->mr->rkey);
			r->len = htobe32(m.size);
			len = TMH_LEN + RVH_LEN;
		} else {
			len = TMH_LEN + m.size;
		}
	}
	sge = (struct ibv_sge){(uintptr_t)p, len, s->mr->lkey};
	wr.sg_list = &sge;
	wr.num_sge = 1;
	return ibv_post_send(s->qp, &wr, &bad);
}

/* One completion of @p s, or 0 when none; sets m.failure on an error completion. */
static int next_wc(struct side *s, enum ibv_wc_opcode *op, enum ibv_wc_status *st,
		   uint64_t *wr_id, unsigned int *flags, uint32_t *len)
{
	struct ibv_poll_cq_attr attr = {0};

	if (ibv_start_poll(s->cq, &attr) != 0)
		return 0;
	*op = ibv_wc_read_opcode(s->cq);
	*flags = ibv_wc_read_wc_flags(s->cq);
	*st = s->cq->status;
	*wr_id = s->cq->wr_id;
	*len = ibv_wc_read_byte_len(s->cq);
	ibv_end_poll(s->cq);
	return 1;
}

static void fail(const char *fmt, const char *what)
{
	if (m.failure[0] == '\0')
		snprintf(m.failure, sizeof(m.failure), fmt, what);
	m.errors++;
}

static void sample(uint64_t ns)
{
	m.lat[m.n_lat % SAMPLES] = ns;
	__atomic_store_n(&m.n_lat, m.n_lat + 1, __ATOMIC_RELEASE);
}

/* An ordinary receive of the sender's TM SRQ, for a FIN: WR @p i takes slot @p i. */
static int post_fin_recv(struct side *s, uint32_t i)
{
	struct ibv_sge sge = {(uintptr_t)slot(s, i), slot_len(), s->mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = i, .sg_list = &sge, .num_sge = 1}, *bad;

	return ibv_post_srq_recv(s->srq, &wr, &bad);
}

/*
 * A completion of rndv-stream: at the receiver (@p k 1) each rendezvous completes MATCH,
 * then DATA_VALID with every byte read; at the sender (0) its header SEND, then the FIN.
 * Each step comes in the order the tags were sent. false after fail().
 */
static bool rndv_wc(int k, enum ibv_wc_opcode op, unsigned int flags, uint64_t wr_id,
		    uint32_t len, uint32_t *recvs_b, uint32_t *sends)
{
	struct side *s = &m.s[k];
	const struct ibv_tmh *h;
	const uint8_t *d;

	if (op == IBV_WC_SEND) {
		(*sends)++;
		return true;
	}
	if (k == 1 && op == IBV_WC_TM_RECV && flags == IBV_WC_TM_MATCH) {
		if (wr_id != m.expect[1]) {
			fail("%s", "a rendezvous matched the wrong tag");
			return false;
		}
		m.expect[1]++;
		m.rndv_match++;
		return true;
	}
	if (k == 1 && op == IBV_WC_TM_RECV && flags == IBV_WC_TM_DATA_VALID) {
		d = slot(s, (uint32_t)(wr_id % FLOOD_DEPTH));
		if (wr_id != m.expect_valid || wr_id >= m.expect[1]) {
			fail("%s", "DATA_VALID for a rendezvous out of order or not matched");
			return false;
		}
		if (len != m.size) {
			fail("%s", "DATA_VALID with a byte_len other than the rendezvous' length");
			return false;
		}
		/* Every byte is rndv_byte(tag): the first is, and each equals the next. */
		if (len > 0 && (d[0] != rndv_byte(wr_id) || memcmp(d, d + 1, len - 1) != 0)) {
			fail("%s", "the data read into a tag's buffer is not the sender's");
			return false;
		}
		sample(now_ns() - m.t_post[wr_id % FLOOD_DEPTH]);
		m.expect_valid++;
		m.rndv_valid++;
		m.rndv_bytes += len;
		(*recvs_b)++;
		return true;
	}
	if (k == 0 && op == IBV_WC_TM_NO_TAG) {
		h = (const struct ibv_tmh *)slot(s, (uint32_t)wr_id);
		if (len != TMH_LEN || h->opcode != IBV_TMH_FIN || be64toh(h->tag) != m.expect_fin ||
		    be32toh(h->app_ctx) != (uint32_t)m.expect_fin) {
			fail("%s", "the sender received something other than the next FIN");
			return false;
		}
		if (post_fin_recv(s, (uint32_t)wr_id) != 0) {
			fail("%s", "a receive for the FIN could not be posted again");
			return false;
		}
		m.expect_fin++;
		m.rndv_fins++;
		return true;
	}
	fail("%s", op == IBV_WC_TM_RECV && !(flags & (IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID)) ?
	     "a rendezvous was unexpected" : "a completion no rendezvous step gives");
	return false;
}

/* Take the completions both sides have now, counting receives and sends: false when
 * the run should end (a stop, or a completion that is wrong, which fail() records). */
static bool pump(uint32_t *recvs_a, uint32_t *recvs_b, uint32_t *sends)
{
	enum ibv_wc_opcode op;
	enum ibv_wc_status st;
	unsigned int flags;
	uint64_t wr_id;
	uint32_t len;

	for (int k = 0; k < 2; k++) {
		while (next_wc(&m.s[k], &op, &st, &wr_id, &flags, &len)) {
			if (st == IBV_WC_TM_RNDV_INCOMPLETE && m.mode == M_RNDV_STREAM) {
				/* Every tag's buffer holds the data: the device must read it. */
				fail("%s", "a rendezvous completed TM_RNDV_INCOMPLETE: the "
				     "device did not read the data");
				return false;
			} else if (st != IBV_WC_SUCCESS) {
				fail("a completion with status %s", ibv_wc_status_str(st));
				return false;
			}
			if (m.mode == M_RNDV_STREAM) {
				if (!rndv_wc(k, op, flags, wr_id, len, recvs_b, sends))
					return false;
				continue;
			}
			/* Each tagged message lands in its own tag's entry, in order: a tag mode
			 * that matched wrongly or not at all fails. */
			if (op == IBV_WC_TM_RECV && (!(flags & IBV_WC_TM_MATCH) ||
						     wr_id != m.expect[k])) {
				fail("%s", !(flags & IBV_WC_TM_MATCH) ? "a message was unexpected" :
				     "a message matched the wrong tag");
				return false;
			}
			if (op == IBV_WC_TM_RECV)
				m.expect[k] += m.expect_step;
			if (op == IBV_WC_SEND)
				(*sends)++;
			else if (op == IBV_WC_RECV || op == IBV_WC_TM_RECV)
				(*(k == 0 ? recvs_a : recvs_b))++;
		}
	}
	/* Polling the two CQs drove both devices: the console's idle CQs stay its own. */
	return !m.stop;
}

static bool done(uint64_t i)
{
	return m.stop || (m.count != 0 && i >= m.count);
}

static void run_pingpong(void)
{
	struct side *a = &m.s[0], *b = &m.s[1];
	bool tm = tm_mode();

	m.expect[0] = 1;
	m.expect[1] = 0;
	m.expect_step = 2;

	for (uint64_t i = 0; !done(i); i++) {
		uint32_t ra = 0, rb = 0, sends = 0;
		uint64_t t0 = now_ns(), deadline = t0 + (uint64_t)TP_WAIT_MS * 1000000u;
		int ret;

		/* The receive for each message is posted before it is sent. */
		ret = tm ? add_tag(b, 2 * i, 0) : post_recv(b, 0);
		if (ret == 0)
			ret = tm ? add_tag(a, 2 * i + 1, 1) : post_recv(a, 1);
		if (ret == 0)
			ret = send_msg(a, 2 * i, 0, i);
		if (ret != 0) {
			fail("a post failed: %s", tp_errno_name(ret));
			return;
		}
		while (rb < 1 || sends < 1) {
			if (!pump(&ra, &rb, &sends) || now_ns() > deadline) {
				if (!m.stop)
					fail("%s", "no answer within the wait");
				return;
			}
		}
		if (send_msg(b, 2 * i + 1, 1, i) != 0) {
			fail("%s", "the answer could not be posted");
			return;
		}
		while (ra < 1 || sends < 2) {
			if (!pump(&ra, &rb, &sends) || now_ns() > deadline) {
				if (!m.stop)
					fail("%s", "no answer within the wait");
				return;
			}
		}
		sample(now_ns() - t0);
		__atomic_add_fetch(&m.msgs, 2, __ATOMIC_RELAXED);
	}
}

/* tag-flood and rndv-stream: a one-way stream of tagged messages into FLOOD_DEPTH
 * listed tags, each matched tag added again for a later message. */
static void run_stream(void)
{
	struct side *a = &m.s[0], *b = &m.s[1];
	uint64_t sent = 0, added = 0;
	uint32_t ra = 0, rb = 0, sends = 0;
	uint64_t last_progress = now_ns();
	bool rndv = m.mode == M_RNDV_STREAM;

	m.expect[1] = 0;
	m.expect_step = 1;
	m.expect_valid = m.expect_fin = 0;
	/* The sender's TM SRQ takes each FIN into an ordinary receive. */
	for (uint32_t i = 0; rndv && i < FLOOD_DEPTH; i++) {
		if (post_fin_recv(a, i) != 0) {
			fail("%s", "a receive for the FINs could not be posted");
			return;
		}
	}
	while (added < FLOOD_DEPTH && (m.count == 0 || added < m.count)) {
		if (add_tag(b, added, (uint32_t)(added % FLOOD_DEPTH)) != 0) {
			fail("%s", "a tag ADD failed");
			return;
		}
		added++;
	}
	while (!m.stop && (m.count == 0 || rb < m.count)) {
		uint32_t before = rb;

		/* Messages go only for tags already listed, so none is unexpected. */
		while (sent < added && sent - sends < FLOOD_DEPTH / 2) {
			m.t_post[sent % FLOOD_DEPTH] = now_ns();
			if (send_msg(a, sent, (uint32_t)(sent % FLOOD_DEPTH), sent) != 0) {
				fail("%s", "a send failed");
				return;
			}
			sent++;
		}
		{
			uint32_t s_before = sends;

			if (!pump(&ra, &rb, &sends))
				break;
			/* A rendezvous is sampled at its DATA_VALID (rndv_wc()). */
			for (uint32_t k = s_before; !rndv && k < sends; k++)
				sample(now_ns() - m.t_post[k % FLOOD_DEPTH]);
		}
		for (uint32_t k = before; k < rb; k++) {
			__atomic_add_fetch(&m.msgs, 1, __ATOMIC_RELAXED);
			if (m.count != 0 && added >= m.count)
				continue;
			if (add_tag(b, added, (uint32_t)(added % FLOOD_DEPTH)) != 0) {
				fail("%s", "a tag ADD failed");
				return;
			}
			added++;
		}
		if (rb != before || sends != 0)
			last_progress = now_ns();
		if (now_ns() - last_progress > (uint64_t)TP_WAIT_MS * 1000000u) {
			fail("%s", "the stream stalled");
			return;
		}
	}
	/* The last sends' acknowledgements (and FINs), so that nothing is in flight at
	 * teardown. */
	while ((sends < sent || (rndv && m.rndv_fins < sent)) && !m.stop && m.failure[0] == '\0' &&
	       now_ns() - last_progress < (uint64_t)TP_WAIT_MS * 1000000u)
		if (!pump(&ra, &rb, &sends))
			break;
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}

/* Percentiles of samples [from, to) of the ring, in microseconds. */
static void percentiles(uint64_t from, uint64_t to, char *buf, size_t len)
{
	uint64_t n = to - from, *v;

	if (n > SAMPLES) {
		from = to - SAMPLES;
		n = SAMPLES;
	}
	if (n == 0 || (v = malloc(n * sizeof(*v))) == NULL) {
		snprintf(buf, len, "no samples");
		return;
	}
	for (uint64_t i = 0; i < n; i++)
		v[i] = m.lat[(from + i) % SAMPLES];
	qsort(v, n, sizeof(*v), cmp_u64);
	snprintf(buf, len, "%s p50 %.1f us, p90 %.1f us, p99 %.1f us, max %.1f us",
		 m.mode == M_TAG_FLOOD ? "send-to-ack" : m.mode == M_RNDV_STREAM ?
		 "send-to-data-valid" : "round trip",
		 v[n / 2] / 1e3, v[n * 9 / 10] / 1e3, v[n * 99 / 100] / 1e3, v[n - 1] / 1e3);
	free(v);
}

static void *mode_main(void *arg)
{
	(void)arg;
	m.t_start = now_ns();
	if (m.mode == M_TAG_FLOOD || m.mode == M_RNDV_STREAM)
		run_stream();
	else
		run_pingpong();
	m.t_end = now_ns();
	__atomic_store_n(&m.running, false, __ATOMIC_RELEASE);
	return NULL;
}

/* The reporter: a line a second while the mode runs. */
static pthread_t reporter;
static volatile bool reporter_stop;

static void *reporter_main(void *arg)
{
	uint64_t last_msgs = 0, last_lat = 0;
	unsigned int sec = 0;

	(void)arg;
	while (!reporter_stop) {
		char pct[160];
		uint64_t msgs, n_lat;

		for (int i = 0; i < 100 && !reporter_stop; i++) {
			struct timespec ts = {0, 10000000};

			nanosleep(&ts, NULL);
		}
		if (reporter_stop)
			break;
		msgs = __atomic_load_n(&m.msgs, __ATOMIC_RELAXED);
		n_lat = __atomic_load_n(&m.n_lat, __ATOMIC_ACQUIRE);
		percentiles(last_lat, n_lat, pct, sizeof(pct));
		tp_out("rate: %s %us: %" PRIu64 " msg/s, %s", mode_names[m.mode], ++sec,
		       msgs - last_msgs, pct);
		last_msgs = msgs;
		last_lat = n_lat;
	}
	return NULL;
}

int tp_cmd_set(const struct tp_args *a)
{
	static const char *const wv[] = {"size", "count", NULL};
	const char *cmd = "set mode";
	uint64_t size, count;
	int mode = -1;

	if (a->n < 3 || strcmp(a->w[1], "mode") != 0)
		return tp_err("set", EINVAL, "set mode tag-pingpong|tag-flood|rndv-stream|"
			      "rc-pingpong [size <n>] [count <n>]");
	for (int i = 1; i < (int)(sizeof(mode_names) / sizeof(mode_names[0])); i++)
		if (strcmp(a->w[2], mode_names[i]) == 0)
			mode = i;
	if (mode < 0)
		return tp_err(cmd, EINVAL, "no mode '%s': tag-pingpong, tag-flood, rndv-stream, "
			      "rc-pingpong", a->w[2]);
	if (__atomic_load_n(&m.running, __ATOMIC_ACQUIRE) || m.lat != NULL)
		return tp_err(cmd, EBUSY, "%s is running: stop it first", mode_names[m.mode]);
	if (tp_opts_check(cmd, a, 3, wv, NULL) != 0 ||
	    tp_opt_u64(cmd, a, 3, "size", 0, 65536, 64, &size) != 0 ||
	    tp_opt_u64(cmd, a, 3, "count", 0, UINT64_MAX, 0, &count) != 0)
		return -1;
	m.mode = (enum mode)mode;
	m.size = (uint32_t)size;
	m.count = count;
	if (count != 0)
		tp_out("mode %s: %" PRIu64 "-byte messages, %" PRIu64 " %s", mode_names[mode], size,
		       count, mode == M_TAG_FLOOD || mode == M_RNDV_STREAM ? "messages" :
		       "round trips");
	else
		tp_out("mode %s: %" PRIu64 "-byte messages, until stop", mode_names[mode], size);
	return 0;
}

static void teardown(void)
{
	side_free(&m.s[0]);
	side_free(&m.s[1]);
	free(m.lat);
	m.lat = NULL;
}

int tp_cmd_start(const struct tp_args *a)
{
	const char *cmd = "start";
	int ret;

	if (a->n != 1)
		return tp_err(cmd, EINVAL, "takes no argument (set mode chooses what runs)");
	if (m.lat != NULL)
		return tp_err(cmd, EBUSY, "%s is running: stop it first", mode_names[m.mode]);
	if (tp.n_devs < 2)
		return tp_err(cmd, ENODEV, "a mode runs between two devices of this console; "
			      "there is %u", tp.n_devs);
	m.msgs = m.errors = m.n_lat = 0;
	m.rndv_match = m.rndv_valid = m.rndv_bytes = m.rndv_fins = 0;
	m.failure[0] = '\0';
	m.stop = false;
	m.lat = calloc(SAMPLES, sizeof(*m.lat));
	if (m.lat == NULL)
		return tp_err(cmd, ENOMEM, "no memory for the latency samples");
	ret = side_make(&m.s[0], 0);
	if (ret == 0)
		ret = side_make(&m.s[1], 1);
	if (ret == 0)
		ret = rc_connect(&m.s[0], &m.s[1]);
	if (ret == 0)
		ret = rc_connect(&m.s[1], &m.s[0]);
	if (ret != 0) {
		teardown();
		return tp_err(cmd, ret, "the mode's objects could not be made");
	}
	m.running = true;
	ret = pthread_create(&m.thread, NULL, mode_main, NULL);
	if (ret != 0) {
		m.running = false;
		teardown();
		return tp_err(cmd, ret, "no thread for the mode");
	}
	reporter_stop = false;
	if (pthread_create(&reporter, NULL, reporter_main, NULL) != 0)
		reporter_stop = true;
	tp_out("%s started: %s <-> %s, %u-byte messages%s", mode_names[m.mode], tp.dev[0].name,
	       tp.dev[1].name, m.size, m.count != 0 ? "" : "; stop ends it");
	return 0;
}

static void join_and_report(void)
{
	double secs;
	char pct[160];

	/* A run with a count ends by itself: stop waits for it. */
	if (m.count == 0)
		m.stop = true;
	pthread_join(m.thread, NULL);
	if (!reporter_stop) {
		reporter_stop = true;
		pthread_join(reporter, NULL);
	}
	secs = (double)(m.t_end - m.t_start) / 1e9;
	percentiles(0, m.n_lat, pct, sizeof(pct));
	tp_out("summary: %s: %" PRIu64 " messages, %" PRIu64 " errors, %.3f s, %.0f msg/s",
	       mode_names[m.mode], m.msgs, m.errors, secs, secs > 0 ? (double)m.msgs / secs : 0.0);
	tp_out("summary: %s", pct);
	if (m.mode == M_RNDV_STREAM)
		tp_out("summary: rendezvous: %" PRIu64 " matched, %" PRIu64 " data valid, %" PRIu64
		       " bytes read and checked, %" PRIu64 " FINs at the sender", m.rndv_match,
		       m.rndv_valid, m.rndv_bytes, m.rndv_fins);
	if (m.failure[0] != '\0')
		tp_err("stop", EIO, "%s stopped early: %s", mode_names[m.mode], m.failure);
	teardown();
}

int tp_cmd_stop(const struct tp_args *a)
{
	if (a->n != 1)
		return tp_err("stop", EINVAL, "takes no argument");
	if (m.lat == NULL)
		return tp_err("stop", EINVAL, "no mode is running (start runs one)");
	join_and_report();
	return 0;
}

void tp_modes_stop(void)
{
	if (m.lat != NULL) {
		m.stop = true;
		join_and_report();
	}
}
