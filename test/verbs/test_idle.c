/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A device answers while its program is away. Two processes, each with one device
 * (dpv0) over one memif link, in inline progress with the default DPV_INLINE_IDLE_US.
 * The passive side (the child, memif server) posts its receives and then stops calling
 * verbs for pause_ms (2 s, or DPV_IDLE_PAUSE_MS), once asleep in nanosleep() and once
 * spinning on the clock; while it is away the active side (the parent, memif client)
 * completes RDMA WRITEs and READs against its memory and SENDs to its receives, then
 * goes on with WRITEs and READs until the pause is nearly over. Every completion must come
 * before the passive side says, through a pipe, that it is back; the passive side then
 * finds the written data and the received messages in place, and its engine counters
 * show that the helper thread drove its device meanwhile.
 *
 * Two processes, because one process drives all its inline devices from any thread
 * that polls: a peer in the same process would drive the passive device itself.
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dpv_verbs.h"
#include "verbs_test.h"

#define SKIP 77
/* How long the passive side stays away from verbs in each round, by default. */
#define PAUSE_MS 2000u
/* The active side stops starting WRITEs and READs this long before the pause ends. */
#define PAUSE_MARGIN_MS 500u

static uint32_t pause_ms = PAUSE_MS;
/* Messages of each kind per round, and their sizes (several packets at the 1024-byte
 * path MTU for the RDMA ones). */
#define N_OPS 4u
#define RDMA_LEN 8192u
#define SEND_LEN 1024u
#define PASSIVE_IPV4 "10.79.0.1"
#define ACTIVE_IPV4 "10.79.0.2"
#define PASSIVE_IPV4_H 0x0a4f0001u
#define ACTIVE_IPV4_H 0x0a4f0002u

/* The passive side's memory: WRITE targets, READ sources, receive buffers. */
#define WRITE_OFF 0u
#define READ_OFF (N_OPS * RDMA_LEN)
#define RECV_OFF (2u * N_OPS * RDMA_LEN)
#define MEM_LEN (RECV_OFF + N_OPS * SEND_LEN)

enum pause_kind { PAUSE_SLEEP, PAUSE_SPIN, N_ROUNDS };

struct qp_info {
	uint32_t qpn;
	uint32_t psn;
	uint32_t rkey;
	uint64_t addr;
};

/* What the passive side reports after each round. */
struct round_result {
	uint32_t recvs_ok;         /* receive completions, successful and of SEND_LEN */
	uint32_t sends_intact;     /* received messages with the data sent */
	uint32_t writes_intact;    /* WRITE targets holding the data written */
	uint64_t helper_polls;     /* helper iterations during the pause */
	uint64_t polls;            /* all iterations during the pause */
};

struct end {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *mem;
};

static int to_active[2], to_passive[2];
static struct end me;
static struct qp_info peer;

static void put(int fd, const void *p, size_t n)
{
	if (write(fd, p, n) != (ssize_t)n) {
		perror("test_idle: write to the other side");
		exit(1);
	}
}

/* Read exactly @p n bytes; false when the other side went away. */
static bool get(int fd, void *p, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = read(fd, (char *)p + got, n - got);

		if (r <= 0)
			return false;
		got += (size_t)r;
	}
	return true;
}

static bool end_open(const char *eal, const char *ipv4)
{
	struct ibv_qp_init_attr ia = {
		.cap = {.max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = 1,
			.max_recv_sge = 1},
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_device **list;
	int n;

	setenv("DPV_EAL_ARGS", eal, 1);
	setenv("DPV_PORT_IPV4", ipv4, 1);
	list = ibv_get_device_list(&n);
	if (list == NULL || n != 1) {
		fprintf(stderr, "test_idle: %d devices with \"%s\"\n", n, eal);
		return false;
	}
	me.ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	if (me.ctx == NULL)
		return false;
	me.mem = aligned_alloc(64, MEM_LEN);
	if (me.mem == NULL || (me.pd = ibv_alloc_pd(me.ctx)) == NULL ||
	    (me.cq = ibv_create_cq(me.ctx, 256, NULL, NULL, 0)) == NULL)
		return false;
	memset(me.mem, 0, MEM_LEN);
	me.mr = ibv_reg_mr(me.pd, me.mem, MEM_LEN, IBV_ACCESS_LOCAL_WRITE |
			   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	ia.send_cq = ia.recv_cq = me.cq;
	return me.mr != NULL && (me.qp = ibv_create_qp(me.pd, &ia)) != NULL;
}

static void my_info(struct qp_info *info, uint32_t psn)
{
	memset(info, 0, sizeof(*info)); /* its padding goes through the pipe too */
	info->qpn = me.qp->qp_num;
	info->psn = psn;
	info->rkey = me.mr->rkey;
	info->addr = (uintptr_t)me.mem;
}

/* ibv_rc_pingpong's attributes. */
static bool end_connect(uint32_t peer_ipv4, uint32_t my_psn)
{
	const struct conn_opts o = {.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
				    .rnr_retry = 7, .min_rnr_timer = 1, .timeout = 14,
				    .retry_cnt = 7, .max_rd_atomic = 16,
				    .max_dest_rd_atomic = 16};
	const struct qp_peer to = {.qpn = peer.qpn, .gid = gid_of_ipv4(peer_ipv4),
				   .psn = peer.psn};

	return rc_qp_to_rts(me.qp, my_psn, &to, &o, NULL) == 0;
}

static void end_close(void)
{
	if (me.qp != NULL)
		ibv_destroy_qp(me.qp);
	if (me.mr != NULL)
		ibv_dereg_mr(me.mr);
	if (me.cq != NULL)
		ibv_destroy_cq(me.cq);
	if (me.pd != NULL)
		ibv_dealloc_pd(me.pd);
	if (me.ctx != NULL)
		ibv_close_device(me.ctx);
	free(me.mem);
}

/* Away from verbs for pause_ms: asleep, or busy with something else. */
static void stay_away(enum pause_kind kind)
{
	uint64_t until = now_ms() + pause_ms;

	if (kind == PAUSE_SLEEP) {
		struct timespec ts = {pause_ms / 1000u, (long)(pause_ms % 1000u) * 1000000L};

		while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
			;
		return;
	}
	/* Busy, not asleep. The yield is for valgrind, which runs one thread of a process
	 * at a time: without it the helper would not run until the spin ends. On a
	 * machine the helper runs on a core of its own (a control thread: on the cores
	 * EAL has no lcore on), and a spin without yields passes as well. */
	while (now_ms() < until)
		sched_yield();
}

/* ---- the passive side (child) ---- */

static int passive_main(const char *eal)
{
	struct dpv_verbs_engine_stats before, after;
	struct round_result res;
	struct ibv_wc wc[N_OPS];
	struct qp_info info;
	uint8_t round, back = 1;
	int got;

	if (!end_open(eal, PASSIVE_IPV4))
		return 1;
	/* The memif server is up: the active side may start its client. */
	my_info(&info, 0x123456);
	put(to_active[1], &info, sizeof(info));
	if (!get(to_passive[0], &peer, sizeof(peer)) || !end_connect(ACTIVE_IPV4_H, 0x123456))
		return 1;
	while (get(to_passive[0], &round, 1) && round < N_ROUNDS) {
		memset(&res, 0, sizeof(res));
		memset(me.mem + WRITE_OFF, 0, N_OPS * RDMA_LEN);
		memset(me.mem + RECV_OFF, 0, N_OPS * SEND_LEN);
		for (uint32_t i = 0; i < N_OPS; i++)
			fill_pattern(me.mem + READ_OFF + i * RDMA_LEN, RDMA_LEN,
				     100u + round * 16u + i);
		for (uint32_t i = 0; i < N_OPS; i++)
			if (post_recv(me.qp, i, me.mem + RECV_OFF + i * SEND_LEN, SEND_LEN,
				      me.mr->lkey) != 0)
				return 1;
		dpv_verbs_query_engine(me.ctx, &before);
		put(to_active[1], &round, 1);
		stay_away((enum pause_kind)round);
		dpv_verbs_query_engine(me.ctx, &after);
		put(to_active[1], &back, 1);
		res.helper_polls = after.helper_polls - before.helper_polls;
		res.polls = after.polls - before.polls;
		/* The receives completed while this side was away; a short poll takes them. */
		got = 0;
		for (uint64_t end = now_ms() + WAIT_MS; got < (int)N_OPS && now_ms() < end;)
			got += ibv_poll_cq(me.cq, (int)N_OPS - got, wc + got);
		for (int i = 0; i < got; i++)
			if (wc[i].status == IBV_WC_SUCCESS && wc[i].opcode == IBV_WC_RECV &&
			    wc[i].byte_len == SEND_LEN)
				res.recvs_ok++;
		for (uint32_t i = 0; i < N_OPS; i++) {
			res.sends_intact += check_pattern(me.mem + RECV_OFF + i * SEND_LEN,
							  SEND_LEN, 300u + round * 16u + i);
			res.writes_intact += check_pattern(me.mem + WRITE_OFF + i * RDMA_LEN,
							   RDMA_LEN, 200u + round * 16u + i);
		}
		put(to_active[1], &res, sizeof(res));
	}
	end_close();
	return 0;
}

/* ---- the active side (parent) ---- */

static uint8_t *src;
static struct ibv_mr *src_mr;

static int post(enum ibv_wr_opcode op, uint64_t wr_id, void *addr, uint32_t len,
		uint64_t raddr)
{
	struct ibv_sge sge = {(uintptr_t)addr, len, src_mr->lkey};
	struct ibv_send_wr wr = {.wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = op,
				 .send_flags = IBV_SEND_SIGNALED}, *bad;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = peer.rkey;
	return ibv_post_send(me.qp, &wr, &bad);
}

/* Whether the passive side has said it is back (without waiting). */
static bool passive_back(void)
{
	struct pollfd p = {.fd = to_active[0], .events = POLLIN};

	return poll(&p, 1, 0) != 0;
}

static void round_against_absent_peer(enum pause_kind kind)
{
	const uint32_t n = 3 * N_OPS;
	struct round_result res;
	struct ibv_wc wc[3 * N_OPS];
	uint8_t round = (uint8_t)kind, echo, back;
	uint64_t start, end;
	uint32_t got = 0, batches = 0;
	bool early;

	memset(src, 0, 2 * N_OPS * RDMA_LEN);
	for (uint32_t i = 0; i < N_OPS; i++) {
		fill_pattern(src + i * RDMA_LEN, RDMA_LEN, 200u + round * 16u + i);
		fill_pattern(src + 2 * N_OPS * RDMA_LEN + i * SEND_LEN, SEND_LEN,
			     300u + round * 16u + i);
	}
	put(to_passive[1], &round, 1);
	assert_true(get(to_active[0], &echo, 1));
	assert_int_equal(echo, round);
	/* The passive side stops calling verbs now; its helper steps in after the idle
	 * interval, well inside the first retransmit timeout. */
	start = now_ms();
	for (uint32_t i = 0; i < N_OPS; i++) {
		assert_int_equal(post(IBV_WR_RDMA_WRITE, i, src + i * RDMA_LEN, RDMA_LEN,
				      peer.addr + WRITE_OFF + i * RDMA_LEN), 0);
		assert_int_equal(post(IBV_WR_RDMA_READ, 100 + i,
				      src + N_OPS * RDMA_LEN + i * RDMA_LEN, RDMA_LEN,
				      peer.addr + READ_OFF + i * RDMA_LEN), 0);
		assert_int_equal(post(IBV_WR_SEND, 200 + i,
				      src + 2 * N_OPS * RDMA_LEN + i * SEND_LEN, SEND_LEN, 0), 0);
	}
	end = start + pause_ms + WAIT_MS;
	while (got < n && now_ms() < end)
		got += (uint32_t)ibv_poll_cq(me.cq, (int)(n - got), wc + got);
	/* Then WRITEs and READs all through the pause, a batch at a time, each batch
	 * completed before the next (same buffers, same patterns as the first). */
	while (got == n && now_ms() < start + pause_ms - PAUSE_MARGIN_MS) {
		struct ibv_wc more[2 * N_OPS];
		uint32_t k = 0;

		for (uint32_t i = 0; i < N_OPS; i++) {
			assert_int_equal(post(IBV_WR_RDMA_WRITE, 300 + i, src + i * RDMA_LEN,
					      RDMA_LEN, peer.addr + WRITE_OFF + i * RDMA_LEN), 0);
			assert_int_equal(post(IBV_WR_RDMA_READ, 400 + i,
					      src + N_OPS * RDMA_LEN + i * RDMA_LEN, RDMA_LEN,
					      peer.addr + READ_OFF + i * RDMA_LEN), 0);
		}
		while (k < 2 * N_OPS && now_ms() < end)
			k += (uint32_t)ibv_poll_cq(me.cq, (int)(2 * N_OPS - k), more + k);
		assert_int_equal(k, 2 * N_OPS);
		for (uint32_t i = 0; i < k; i++)
			assert_int_equal(more[i].status, IBV_WC_SUCCESS);
		batches++;
	}
	early = !passive_back();
	printf("# round %s: %u of %u completions, then %u batches of %u WRITEs and READs, "
	       "in %" PRIu64 " ms of a %u ms pause, passive side %s\n",
	       kind == PAUSE_SLEEP ? "sleep" : "spin", got, n, batches, 2 * N_OPS,
	       now_ms() - start, pause_ms, early ? "still away" : "already back");
	assert_int_equal(got, n);
	for (uint32_t i = 0; i < n; i++) {
		assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
		if (wc[i].wr_id >= 100 && wc[i].wr_id < 200)
			assert_int_equal(wc[i].opcode, IBV_WC_RDMA_READ);
	}
	/* Every one of them while the passive side was away from verbs. */
	assert_true(early);
	for (uint32_t i = 0; i < N_OPS; i++)
		assert_true(check_pattern(src + N_OPS * RDMA_LEN + i * RDMA_LEN, RDMA_LEN,
					  100u + round * 16u + i));
	assert_true(get(to_active[0], &back, 1));
	assert_true(get(to_active[0], &res, sizeof(res)));
	printf("# passive side: %" PRIu64 " of its %" PRIu64 " polls during the pause by "
	       "the helper; %u receives, %u SENDs and %u WRITEs intact\n", res.helper_polls,
	       res.polls, res.recvs_ok, res.sends_intact, res.writes_intact);
	assert_true(res.helper_polls > 0);
	assert_int_equal(res.recvs_ok, N_OPS);
	assert_int_equal(res.sends_intact, N_OPS);
	assert_int_equal(res.writes_intact, N_OPS);
}

static void peer_completes_while_passive_side_sleeps(void **state)
{
	(void)state;
	round_against_absent_peer(PAUSE_SLEEP);
}

static void peer_completes_while_passive_side_spins(void **state)
{
	(void)state;
	round_against_absent_peer(PAUSE_SPIN);
}


int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(peer_completes_while_passive_side_sleeps),
		cmocka_unit_test(peer_completes_while_passive_side_spins),
	};
	const char *mem = getenv("DPV_IDLE_MEM"), *pause = getenv("DPV_IDLE_PAUSE_MS");
	char eal[512];
	uint8_t done = N_ROUNDS;
	int status, failed = 1;
	pid_t child;

	if (mem == NULL)
		mem = "--no-huge --no-shconf -m 512";
	if (pause != NULL) {
		pause_ms = (uint32_t)strtoul(pause, NULL, 10);
		if (pause_ms < 2 * PAUSE_MARGIN_MS || pause_ms > 60000) {
			fprintf(stderr, "DPV_IDLE_PAUSE_MS=%s: want %u..60000\n", pause,
				2 * PAUSE_MARGIN_MS);
			return 1;
		}
	}
	if (strstr(mem, "--no-huge") == NULL && !hugepages_free()) {
		printf("no free hugepages: skipped (the --no-huge run covers the test)\n");
		return SKIP;
	}
	unsetenv("DPV_CONFIG");
	unsetenv("DPV_PROGRESS");
	unsetenv("DPV_RING_PAIRS");
	unsetenv("DPV_INLINE_IDLE_US"); /* the default is what is tested */
	if (pipe(to_active) != 0 || pipe(to_passive) != 0)
		return 1;
	child = fork();
	if (child < 0)
		return 1;
	if (child == 0) {
		close(to_active[0]);
		close(to_passive[1]);
		/* The memif server's link comes up when the active side's client joins, which
		 * it does only once this side's device is open: no wait for it in the open. */
		setenv("DPV_LINK_WAIT_MS", "0", 1);
		snprintf(eal, sizeof(eal), "-l 0 --no-pci --no-telemetry "
			 "--log-level=lib.eal:error %s --file-prefix=dpvidle-%d-p "
			 "--vdev=net_memif0,role=server,socket=/run/dpvidle-%d.sock", mem,
			 (int)getppid(), (int)getppid());
		status = passive_main(eal);
		close(to_active[1]);
		return status;
	}
	close(to_active[1]);
	close(to_passive[0]);
	/* The client connects once the passive side's server is up. */
	if (get(to_active[0], &peer, sizeof(peer))) {
		snprintf(eal, sizeof(eal), "-l 1 --no-pci --no-telemetry "
			 "--log-level=lib.eal:error %s --file-prefix=dpvidle-%d-a "
			 "--vdev=net_memif0,role=client,socket=/run/dpvidle-%d.sock", mem,
			 (int)getpid(), (int)getpid());
		if (end_open(eal, ACTIVE_IPV4)) {
			struct qp_info info;

			my_info(&info, 0x654321);
			put(to_passive[1], &info, sizeof(info));
			src = aligned_alloc(64, 2 * N_OPS * RDMA_LEN + N_OPS * SEND_LEN);
			src_mr = src == NULL ? NULL :
				 ibv_reg_mr(me.pd, src, 2 * N_OPS * RDMA_LEN + N_OPS * SEND_LEN,
					    IBV_ACCESS_LOCAL_WRITE);
			if (src_mr != NULL && end_connect(PASSIVE_IPV4_H, 0x654321))
				failed = cmocka_run_group_tests(tests, NULL, NULL);
		}
	}
	put(to_passive[1], &done, 1);
	close(to_passive[1]);
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0) {
		fprintf(stderr, "test_idle: the passive side failed (status 0x%x)\n", status);
		failed = 1;
	}
	if (src_mr != NULL)
		ibv_dereg_mr(src_mr);
	free(src);
	end_close();
	/* Both sides' EAL run-time directories, which EAL leaves behind. */
	snprintf(eal, sizeof(eal), "dpvidle-%d-p", (int)getpid());
	remove_eal_runtime_dir(eal);
	snprintf(eal, sizeof(eal), "dpvidle-%d-a", (int)getpid());
	remove_eal_runtime_dir(eal);
	return failed ? 1 : 0;
}
