/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory unmapped under a registered region (the program broke ibv_reg_mr(3)'s rule,
 * doc/guides/memory.md): a peer's WRITE into it, a peer's READ of it, a local SEND
 * from it and a receive into it each end in an error completion and the QP's error,
 * counted in xport.mem_faults, and never crash the process (a tag's buffer too); the
 * device goes on serving other QPs. An on-demand region follows its mapping. A fault
 * that is not the device's still ends the process as before.
 * Not under valgrind: it reports the very accesses this test makes on purpose.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <infiniband/tm_types.h>

#include "dpv_verbs.h"
#include "verbs_test.h"

#define LW IBV_ACCESS_LOCAL_WRITE
#define LEN 8192u
/* A message this short takes the device's short copy, whose faults the handler knows
 * by their address instead of a jump buffer (doc/guides/memory.md). */
#define SHORT 8u

/* dpverbs' SIGSEGV and SIGBUS handlers, as the device installed them. cmocka puts its
 * own in place while a test runs (a program's own handler takes dpverbs' protection
 * away, memory.md): each test puts dpverbs' back first. */
static struct sigaction dpv_segv, dpv_bus;

static void device_handlers(void)
{
	assert_int_equal(sigaction(SIGSEGV, &dpv_segv, NULL), 0);
	assert_int_equal(sigaction(SIGBUS, &dpv_bus, NULL), 0);
}

/* A region of its own pages on A, registered, then unmapped under it. */
static struct ibv_mr *unmapped_mr(unsigned int access)
{
	void *p = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct ibv_mr *mr;

	assert_true(p != MAP_FAILED);
	memset(p, 0x11, LEN);
	mr = ibv_reg_mr(A.pd, p, LEN, access);
	assert_non_null(mr);
	assert_int_equal(munmap(p, LEN), 0);
	return mr;
}

static void wait_qp_event(struct ibv_qp *qp, enum ibv_event_type type)
{
	struct ibv_async_event ev;
	uint64_t end = now_ms() + WAIT_MS;

	while (now_ms() < end) {
		if (!wait_async_event(qp->context, &ev, WAIT_MS))
			break;
		bool found = ev.event_type == type && ev.element.qp == qp;

		ibv_ack_async_event(&ev);
		if (found)
			return;
	}
	fail_msg("no %s for QP %u", ibv_event_type_str(type), qp->qp_num);
}

/* The device goes on: a fresh pair exchanges a message. */
static void still_serving(void)
{
	struct rc_pair p;
	struct ibv_mr *amr = new_mr(&A, 4096, LW), *bmr = new_mr(&B, 4096, LW);
	struct ibv_wc wc;

	rc_pair(&p, &conn_default);
	fill_pattern(bmr->addr, 4096, 7);
	assert_int_equal(post_recv(p.a, 1, amr->addr, 4096, amr->lkey), 0);
	assert_int_equal(post_send(p.b, IBV_WR_SEND, 2, bmr->addr, 4096, bmr->lkey,
				   IBV_SEND_SIGNALED), 0);
	expect_send_ok(p.bcq, 2, IBV_WC_SEND);
	expect_wc(p.acq, &wc);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_true(check_pattern(amr->addr, 4096, 7));
}

/* A peer's WRITE into, or READ of, @p len bytes of a region whose memory is gone. */
static void peer_access_rem_access_err(enum ibv_wr_opcode op, unsigned int access, uint32_t len)
{
	struct ibv_mr *mr = unmapped_mr(LW | access);
	struct ibv_mr *buf = new_mr(&B, LEN, LW);
	uint64_t faults = dev_xstat(A.ctx, "xport.mem_faults");
	struct rc_pair p;
	struct ibv_wc wc;

	device_handlers();
	rc_pair(&p, &conn_default);
	assert_int_equal(post_rdma(p.b, op, 1, buf->addr, len, buf->lkey, (uintptr_t)mr->addr,
				   mr->rkey), 0);
	expect_wc(p.bcq, &wc);
	assert_int_equal(wc.status, IBV_WC_REM_ACCESS_ERR);
	wait_qp_event(p.a, IBV_EVENT_QP_ACCESS_ERR);
	assert_true(dev_xstat(A.ctx, "xport.mem_faults") > faults);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	still_serving();
}

static void unmapped_peer_write_rem_access_err(void **state)
{
	(void)state;
	peer_access_rem_access_err(IBV_WR_RDMA_WRITE, IBV_ACCESS_REMOTE_WRITE, LEN);
}

static void unmapped_peer_short_write_rem_access_err(void **state)
{
	(void)state;
	peer_access_rem_access_err(IBV_WR_RDMA_WRITE, IBV_ACCESS_REMOTE_WRITE, SHORT);
}

static void unmapped_peer_read_rem_access_err(void **state)
{
	(void)state;
	peer_access_rem_access_err(IBV_WR_RDMA_READ, IBV_ACCESS_REMOTE_READ, LEN);
}

static void unmapped_peer_short_read_rem_access_err(void **state)
{
	(void)state;
	peer_access_rem_access_err(IBV_WR_RDMA_READ, IBV_ACCESS_REMOTE_READ, SHORT);
}

/* A SEND of @p len bytes from a region whose memory is gone. */
static void local_send_loc_prot_err(uint32_t len)
{
	struct ibv_mr *mr = unmapped_mr(LW);
	struct ibv_mr *dst = new_mr(&B, LEN, LW);
	uint64_t faults = dev_xstat(A.ctx, "xport.mem_faults");
	struct rc_pair p;
	struct ibv_wc wc;

	device_handlers();
	rc_pair(&p, &conn_default);
	assert_int_equal(post_recv(p.b, 1, dst->addr, LEN, dst->lkey), 0);
	assert_int_equal(post_send(p.a, IBV_WR_SEND, 2, mr->addr, len, mr->lkey,
				   IBV_SEND_SIGNALED), 0);
	expect_wc(p.acq, &wc);
	assert_int_equal(wc.wr_id, 2);
	assert_int_equal(wc.status, IBV_WC_LOC_PROT_ERR);
	assert_true(dev_xstat(A.ctx, "xport.mem_faults") > faults);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	still_serving();
}

static void unmapped_local_send_loc_prot_err(void **state)
{
	(void)state;
	local_send_loc_prot_err(LEN);
}

static void unmapped_local_short_send_loc_prot_err(void **state)
{
	(void)state;
	local_send_loc_prot_err(SHORT);
}

/* A receive of a @p len-byte message into a region whose memory is gone. */
static void receive_loc_prot_err(uint32_t len)
{
	struct ibv_mr *mr = unmapped_mr(LW);
	struct ibv_mr *src = new_mr(&B, LEN, LW);
	uint64_t faults = dev_xstat(A.ctx, "xport.mem_faults");
	struct rc_pair p;
	struct ibv_wc wc;

	device_handlers();
	rc_pair(&p, &conn_default);
	assert_int_equal(post_recv(p.a, 1, mr->addr, LEN, mr->lkey), 0);
	assert_int_equal(post_send(p.b, IBV_WR_SEND, 2, src->addr, len, src->lkey,
				   IBV_SEND_SIGNALED), 0);
	expect_wc(p.acq, &wc);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.status, IBV_WC_LOC_PROT_ERR);
	/* The sender learns of it as of any receiver's protection error. */
	expect_wc(p.bcq, &wc);
	assert_int_not_equal(wc.status, IBV_WC_SUCCESS);
	assert_true(dev_xstat(A.ctx, "xport.mem_faults") > faults);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	still_serving();
}

static void unmapped_receive_loc_prot_err(void **state)
{
	(void)state;
	receive_loc_prot_err(LEN);
}

static void unmapped_short_receive_loc_prot_err(void **state)
{
	(void)state;
	receive_loc_prot_err(SHORT);
}

/* A tagged eager message of @p len bytes into a tag's buffer whose memory is gone: the
 * tag's completion, not the plain receive's path (doc/guides/srq.md §4). */
static void tagged_receive_loc_prot_err(uint32_t len)
{
	struct ibv_mr *mr = unmapped_mr(LW);
	struct ibv_mr *src = new_mr(&B, LEN + sizeof(struct ibv_tmh), LW);
	uint64_t faults = dev_xstat(A.ctx, "xport.mem_faults");
	struct ibv_cq_ex *cq = new_cq_ex(&A, 64, IBV_WC_EX_WITH_TM_INFO);
	struct ibv_srq *srq = new_tm_srq(&A, cq, 16, 16, 16);
	struct ibv_cq *bcq = new_cq(&B, 16, NULL, NULL);
	struct ibv_qp *qa = new_qp(&A, IBV_QPT_RC, ibv_cq_ex_to_cq(cq), ibv_cq_ex_to_cq(cq), srq,
				   0, 0);
	struct ibv_qp *qb = new_qp(&B, IBV_QPT_RC, bcq, bcq, NULL, 16, 16);
	const uint64_t tag = 0x7a6700000000beefull;
	struct ibv_tmh *h = src->addr;
	struct ibv_wc bwc;
	struct wc_ex wc;

	device_handlers();
	connect_rc(qa, qb, &conn_default);
	assert_int_equal(post_tag_add(srq, 1, 2, mr->addr, LEN, mr->lkey, tag, UINT64_MAX, 0, 0,
				      NULL), 0);
	memset(h, 0, sizeof(*h));
	h->opcode = IBV_TMH_EAGER;
	h->tag = htobe64(tag);
	assert_int_equal(post_send(qb, IBV_WR_SEND, 3, src->addr, sizeof(*h) + len, src->lkey,
				   IBV_SEND_SIGNALED), 0);
	/* A message of more than one packet is matched at its first (srq.md §4). */
	if (sizeof(*h) + len > 1024) {
		expect_ex(cq, &wc);
		assert_int_equal(wc.wr_id, 2);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.wc_flags & (IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID),
				 IBV_WC_TM_MATCH);
	}
	expect_ex(cq, &wc);
	assert_int_equal(wc.wr_id, 2);
	assert_int_equal(wc.status, IBV_WC_LOC_PROT_ERR);
	expect_wc(bcq, &bwc);
	assert_int_not_equal(bwc.status, IBV_WC_SUCCESS);
	assert_true(dev_xstat(A.ctx, "xport.mem_faults") > faults);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	still_serving();
}

static void unmapped_tagged_receive_loc_prot_err(void **state)
{
	(void)state;
	tagged_receive_loc_prot_err(LEN);
}

/* One packet, longer than the short copy. */
static void unmapped_one_packet_tagged_receive_loc_prot_err(void **state)
{
	(void)state;
	tagged_receive_loc_prot_err(512);
}

static void unmapped_short_tagged_receive_loc_prot_err(void **state)
{
	(void)state;
	tagged_receive_loc_prot_err(SHORT);
}

/* An on-demand region follows the mapping under it (ibv_reg_mr(3) IBV_ACCESS_ON_DEMAND):
 * registered over pages no access is allowed to, a peer's WRITE into it ends as a bad
 * key's; once the program maps the pages, the same key takes the next WRITE. */
static void on_demand_region_follows_its_mapping(void **state)
{
	void *p = mmap(NULL, LEN, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct ibv_mr *buf = new_mr(&B, LEN, LW), *mr;
	struct rc_pair p1, p2;
	struct ibv_wc wc;

	(void)state;
	assert_true(p != MAP_FAILED);
	/* A pinned region cannot be had there; an on-demand one can. */
	assert_null(ibv_reg_mr(A.pd, p, LEN, LW | IBV_ACCESS_REMOTE_WRITE));
	mr = ibv_reg_mr(A.pd, p, LEN, LW | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_ON_DEMAND);
	assert_non_null(mr);
	device_handlers();
	fill_pattern(buf->addr, LEN, 21);
	rc_pair(&p1, &conn_default);
	assert_int_equal(post_rdma(p1.b, IBV_WR_RDMA_WRITE, 1, buf->addr, LEN, buf->lkey,
				   (uintptr_t)p, mr->rkey), 0);
	expect_wc(p1.bcq, &wc);
	assert_int_equal(wc.status, IBV_WC_REM_ACCESS_ERR);
	wait_qp_event(p1.a, IBV_EVENT_QP_ACCESS_ERR);
	assert_int_equal(mprotect(p, LEN, PROT_READ | PROT_WRITE), 0);
	rc_pair(&p2, &conn_default);
	assert_int_equal(post_rdma(p2.b, IBV_WR_RDMA_WRITE, 2, buf->addr, LEN, buf->lkey,
				   (uintptr_t)p, mr->rkey), 0);
	expect_send_ok(p2.bcq, 2, IBV_WC_RDMA_WRITE);
	assert_true(check_pattern(p, LEN, 21));
	assert_int_equal(ibv_dereg_mr(mr), 0);
	assert_int_equal(munmap(p, LEN), 0);
}

/* A fault outside the device's copies is the program's: it still ends the process. */
static void other_faults_still_end_the_process(void **state)
{
	int status;
	pid_t pid;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		device_handlers();
		volatile int *bad = (volatile int *)mmap(NULL, 4096, PROT_NONE,
							  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		*bad = 1;
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
#if defined(__SANITIZE_ADDRESS__)
	/* The handler before dpverbs' was AddressSanitizer's: it reports and exits 1. */
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 1);
#else
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGSEGV);
#endif
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		VT(unmapped_peer_write_rem_access_err),
		VT(unmapped_peer_read_rem_access_err),
		VT(unmapped_local_send_loc_prot_err),
		VT(unmapped_receive_loc_prot_err),
		VT(unmapped_peer_short_write_rem_access_err),
		VT(unmapped_peer_short_read_rem_access_err),
		VT(unmapped_local_short_send_loc_prot_err),
		VT(unmapped_short_receive_loc_prot_err),
		VT(unmapped_tagged_receive_loc_prot_err),
		VT(unmapped_one_packet_tagged_receive_loc_prot_err),
		VT(unmapped_short_tagged_receive_loc_prot_err),
		VT(on_demand_region_follows_its_mapping),
		VT(other_faults_still_end_the_process),
	};
	const char *ipv4 = getenv("DPV_PORT_IPV4");
	int ret;

	if (ipv4 == NULL || !sides_open(ipv4)) {
		sides_close();
		return 1;
	}
	sigaction(SIGSEGV, NULL, &dpv_segv);
	sigaction(SIGBUS, NULL, &dpv_bus);
	ret = cmocka_run_group_tests_name("unmapped", tests, NULL, NULL);
	sides_close();
	return ret;
}
