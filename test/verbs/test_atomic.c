/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RC atomics (IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_FETCH_AND_ADD) and UC QPs through
 * <infiniband/verbs.h>: what ibv_query_device() says, what ibv_reg_mr() and
 * ibv_post_send() accept and refuse, the completions and the memory, the responder's
 * checks, and, with DPV_FAULTS set (meson runs it so), atomics and UC messages over a
 * link that loses, duplicates and reorders frames: every atomic is applied once, every
 * UC message arrives whole or not at all.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verbs_test.h"

#define LW IBV_ACCESS_LOCAL_WRITE
#define RA (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC)

/* conn_default with atomics allowed and a 16.8 ms ACK timeout. */
static const struct conn_opts *atomic_conn(void)
{
	static struct conn_opts o;

	o = conn_default;
	o.access |= IBV_ACCESS_REMOTE_ATOMIC;
	o.timeout = 12;
	return &o;
}

/* ---- what the device says and what the facade accepts ---- */

static void device_reports_atomic_cap_hca(void **state)
{
	struct ibv_device_attr attr;
	struct ibv_mr *mr;
	void *buf = new_buf(64);

	(void)state;
	assert_int_equal(ibv_query_device(A.ctx, &attr), 0);
	assert_int_equal(attr.atomic_cap, IBV_ATOMIC_HCA);
	assert_true(attr.max_qp_rd_atom > 0 && attr.max_qp_init_rd_atom > 0);
	/* ibv_reg_mr(3): remote atomic needs local write */
	errno = 0;
	assert_null(ibv_reg_mr(A.pd, buf, 64, IBV_ACCESS_REMOTE_ATOMIC));
	assert_int_equal(errno, EINVAL);
	mr = ibv_reg_mr(A.pd, buf, 64, RA);
	assert_non_null(mr);
	assert_int_equal(ibv_dereg_mr(mr), 0);
}

static void cmp_swap_and_fetch_add_complete_with_the_value_before(void **state)
{
	struct ibv_mr *remote = new_mr(&B, 64, RA), *local = new_mr(&A, 64, LW);
	uint64_t *r = remote->addr, *l = local->addr;
	struct rc_pair p;
	struct ibv_wc wc;

	(void)state;
	rc_pair(&p, atomic_conn());
	r[0] = 1000;
	r[1] = 0xfeedfacecafebeefULL;
	assert_int_equal(post_atomic(p.a, IBV_WR_ATOMIC_FETCH_AND_ADD, 1, &l[0], 8, local->lkey,
				     (uintptr_t)&r[0], remote->rkey, 24, 0, 0), 0);
	assert_int_equal(post_atomic(p.a, IBV_WR_ATOMIC_CMP_AND_SWP, 2, &l[1], 8, local->lkey,
				     (uintptr_t)&r[1], remote->rkey, 0xfeedfacecafebeefULL, 7, 0), 0);
	assert_int_equal(post_atomic(p.a, IBV_WR_ATOMIC_CMP_AND_SWP, 3, &l[2], 8, local->lkey,
				     (uintptr_t)&r[1], remote->rkey, 0xfeedfacecafebeefULL, 9, 0), 0);
	expect_wc(p.acq, &wc);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_FETCH_ADD);
	assert_int_equal(wc.byte_len, 8);
	assert_int_equal(wc.wr_id, 1);
	expect_send_ok(p.acq, 2, IBV_WC_COMP_SWAP);
	expect_send_ok(p.acq, 3, IBV_WC_COMP_SWAP);
	assert_true(l[0] == 1000 && r[0] == 1024);
	/* the first compare matched and swapped, the second found the swapped value */
	assert_true(l[1] == 0xfeedfacecafebeefULL && l[2] == 7 && r[1] == 7);
	expect_quiet(p.acq);
}

static void post_send_refuses_atomics_that_cannot_be(void **state)
{
	struct ibv_mr *remote = new_mr(&B, 64, RA), *local = new_mr(&A, 64, LW);
	struct ibv_cq *cq = new_cq(&A, 16, NULL, NULL);
	struct ibv_qp *ud = new_qp(&A, IBV_QPT_UD, cq, cq, NULL, 4, 4);
	struct ibv_qp *uc = new_qp(&A, IBV_QPT_UC, cq, cq, NULL, 4, 4);
	uint64_t *l = local->addr;
	struct rc_pair p;

	(void)state;
	rc_pair(&p, atomic_conn());
	/* one 8-byte buffer: not 4 bytes, not 16, not inline */
	assert_int_equal(post_atomic(p.a, IBV_WR_ATOMIC_FETCH_AND_ADD, 1, l, 4, local->lkey,
				     (uintptr_t)remote->addr, remote->rkey, 1, 0, 0), EINVAL);
	assert_int_equal(post_atomic(p.a, IBV_WR_ATOMIC_CMP_AND_SWP, 1, l, 16, local->lkey,
				     (uintptr_t)remote->addr, remote->rkey, 1, 0, 0), EINVAL);
	assert_int_equal(post_atomic(p.a, IBV_WR_ATOMIC_FETCH_AND_ADD, 1, l, 8, local->lkey,
				     (uintptr_t)remote->addr, remote->rkey, 1, 0, IBV_SEND_INLINE),
			 EINVAL);
	/* RC only (IBTA Table 38: UC and UD have no atomics) */
	ud_to_rts(ud, 0x1111);
	assert_int_equal(post_atomic(ud, IBV_WR_ATOMIC_FETCH_AND_ADD, 1, l, 8, local->lkey,
				     (uintptr_t)remote->addr, remote->rkey, 1, 0, 0), EINVAL);
	connect_uc(uc, new_qp(&B, IBV_QPT_UC, p.bcq, p.bcq, NULL, 4, 4), IBV_ACCESS_REMOTE_WRITE);
	assert_int_equal(post_atomic(uc, IBV_WR_ATOMIC_CMP_AND_SWP, 1, l, 8, local->lkey,
				     (uintptr_t)remote->addr, remote->rkey, 1, 0, 0), EINVAL);
	assert_int_equal(post_rdma(uc, IBV_WR_RDMA_READ, 1, l, 8, local->lkey,
				   (uintptr_t)remote->addr, remote->rkey), EINVAL);
	expect_quiet(p.acq);
	expect_quiet(cq);
}

/* One CMP_AND_SWP on a fresh connection whose responder allows @p qp_access: its
 * completion status; the requester's QP is in ERR after a failure. */
static enum ibv_wc_status one_atomic(unsigned int qp_access, struct ibv_mr *remote,
				     uint64_t raddr, uint32_t rkey, struct ibv_mr *local)
{
	struct conn_opts o = *atomic_conn();
	struct rc_pair p;
	struct ibv_wc wc;

	o.access = qp_access;
	rc_pair(&p, &o);
	(void)remote;
	assert_int_equal(post_atomic(p.a, IBV_WR_ATOMIC_CMP_AND_SWP, 5, local->addr, 8,
				     local->lkey, raddr, rkey, 0, 1, 0), 0);
	expect_wc(p.acq, &wc);
	assert_int_equal(wc.wr_id, 5);
	if (wc.status != IBV_WC_SUCCESS)
		assert_int_equal(qp_state_of(p.a), IBV_QPS_ERR);
	return wc.status;
}

static void responder_checks_key_access_and_alignment(void **state)
{
	struct ibv_mr *remote = new_mr(&B, 64, RA), *local = new_mr(&A, 64, LW);
	struct ibv_mr *no_atomic = new_mr(&B, 64, LW | IBV_ACCESS_REMOTE_WRITE);
	struct ibv_mr *ro = new_mr(&A, 64, 0);
	uint64_t base = (uintptr_t)remote->addr;

	(void)state;
	assert_int_equal(one_atomic(atomic_conn()->access, remote, base, remote->rkey, local),
			 IBV_WC_SUCCESS);
	assert_true(*(uint64_t *)remote->addr == 1);
	assert_int_equal(one_atomic(atomic_conn()->access, remote, base, remote->rkey + 1, local),
			 IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(one_atomic(atomic_conn()->access, no_atomic, (uintptr_t)no_atomic->addr,
				    no_atomic->rkey, local),
			 IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(one_atomic(atomic_conn()->access, remote, base + 64, remote->rkey, local),
			 IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(one_atomic(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ, remote,
				    base, remote->rkey, local),
			 IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(one_atomic(atomic_conn()->access, remote, base + 4, remote->rkey, local),
			 IBV_WC_REM_INV_REQ_ERR);
	/* the local buffer must be writable by the device */
	assert_int_equal(one_atomic(atomic_conn()->access, remote, base, remote->rkey, ro),
			 IBV_WC_LOC_PROT_ERR);
	assert_true(*(uint64_t *)remote->addr == 1);
}

/* ---- UC ---- */

static void uc_pingpong_of_sends_and_writes(void **state)
{
	const uint32_t len = 5000;
	struct ibv_cq *acq = new_cq(&A, 64, NULL, NULL), *bcq = new_cq(&B, 64, NULL, NULL);
	struct ibv_srq *srq = new_srq(&B, 16, 1);
	struct ibv_qp *a = new_qp(&A, IBV_QPT_UC, acq, acq, NULL, 16, 16);
	struct ibv_qp *b = new_qp(&B, IBV_QPT_UC, bcq, bcq, srq, 16, 0);
	struct ibv_mr *src = new_mr(&A, len, LW), *dst = new_mr(&B, 2 * len,
								 LW | IBV_ACCESS_REMOTE_WRITE);
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;
	struct ibv_wc wc;

	(void)state;
	assert_int_equal(ibv_query_qp(b, &attr, IBV_QP_STATE, &init), 0);
	assert_int_equal(init.qp_type, IBV_QPT_UC);
	connect_uc(a, b, IBV_ACCESS_REMOTE_WRITE);
	fill_pattern(src->addr, len, 4);
	assert_int_equal(post_srq_recv(srq, 1, dst->addr, len, dst->lkey), 0);
	assert_int_equal(post_send(a, IBV_WR_SEND, 10, src->addr, len, src->lkey,
				   IBV_SEND_SIGNALED), 0);
	expect_send_ok(acq, 10, IBV_WC_SEND);
	expect_wc(bcq, &wc);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_RECV);
	assert_int_equal(wc.byte_len, len);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.src_qp, a->qp_num);
	assert_true(check_pattern(dst->addr, len, 4));
	assert_int_equal(post_srq_recv(srq, 2, dst->addr, 4, dst->lkey), 0);
	assert_int_equal(post_send_imm(a, IBV_WR_RDMA_WRITE_WITH_IMM, 11, src->addr, len,
				       src->lkey, 0xabcd, (uintptr_t)dst->addr + len, dst->rkey),
			 0);
	expect_send_ok(acq, 11, IBV_WC_RDMA_WRITE);
	expect_wc(bcq, &wc);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	assert_int_equal(wc.wc_flags & IBV_WC_WITH_IMM, IBV_WC_WITH_IMM);
	assert_int_equal(be32toh(wc.imm_data), 0xabcd);
	assert_true(check_pattern((uint8_t *)dst->addr + len, len, 4));
	/* UC needs no ACK: the receiver sent nothing */
	assert_int_equal(qp_xstat(b, "qp.tx_packets"), 0);
	expect_quiet(acq);
	expect_quiet(bcq);
}

/* ibv_modify_qp(3) for UC: RTR needs AV, PATH_MTU, DEST_QPN, RQ_PSN; RTS needs SQ_PSN;
 * RC's reliability attributes are refused. */
static void uc_modify_qp_takes_the_uc_masks(void **state)
{
	struct ibv_cq *cq = new_cq(&A, 16, NULL, NULL);
	struct ibv_qp *qp = new_qp(&A, IBV_QPT_UC, cq, cq, NULL, 4, 4);
	struct ibv_qp_attr a;

	(void)state;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT),
			 EINVAL);
	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					       IBV_QP_ACCESS_FLAGS), 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = TEST_MTU;
	a.dest_qp_num = qp->qp_num;
	a.rq_psn = 5;
	a.max_dest_rd_atomic = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = A.gid;
	a.ah_attr.port_num = 1;
	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					       IBV_QP_DEST_QPN), EINVAL);
	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					       IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					       IBV_QP_MAX_DEST_RD_ATOMIC), EINVAL);
	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					       IBV_QP_DEST_QPN | IBV_QP_RQ_PSN), 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.sq_psn = 5;
	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE), EINVAL);
	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT),
			 EINVAL);
	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN), 0);
	assert_int_equal(qp_state_of(qp), IBV_QPS_RTS);
}

/* ---- through the faults port (DPV_FAULTS) ---- */

/* Fetch-and-adds 16 in flight over the lossy link: each returns the sum before it, the
 * memory ends with every one applied once, and duplicates were answered from the
 * responder's replay cache. */
static void fetch_adds_over_a_lossy_link_apply_once(void **state)
{
	const uint64_t n = 2000;
	struct ibv_mr *remote = new_mr(&B, 64, RA), *local = new_mr(&A, n * 8, LW);
	uint64_t *r = remote->addr, *l = local->addr, posted = 0, done = 0, sum = 0;
	struct rc_pair p;
	struct ibv_wc wc;

	(void)state;
	rc_pair(&p, atomic_conn());
	while (done < n) {
		while (posted < n && posted - done < 16) {
			assert_int_equal(post_atomic(p.a, IBV_WR_ATOMIC_FETCH_AND_ADD, posted,
						     &l[posted], 8, local->lkey, (uintptr_t)r,
						     remote->rkey, posted + 1, 0, 0), 0);
			posted++;
		}
		expect_wc(p.acq, &wc);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.wr_id, done);
		assert_true(l[done] == sum);
		sum += ++done;
	}
	assert_true(*r == n * (n + 1) / 2);
	printf("# %" PRIu64 " fetch-and-adds: requester retrans_packets=%" PRIu64
	       ", responder dup_requests=%" PRIu64 " atomic_replays=%" PRIu64
	       " dup_atomics_dropped=%" PRIu64 "\n",
	       n, qp_xstat(p.a, "qp.retrans_packets"), qp_xstat(p.b, "qp.dup_requests"),
	       qp_xstat(p.b, "qp.atomic_replays"), qp_xstat(p.b, "qp.dup_atomics_dropped"));
	assert_true(dev_xstat(A.ctx, "faults.tx.dropped") +
		    dev_xstat(B.ctx, "faults.tx.dropped") > 0);
	assert_true(qp_xstat(p.b, "qp.atomic_replays") > 0);
	assert_int_equal(qp_xstat(p.a, "qp.retry_exceeded"), 0);
}

/* UC over the lossy link: every SEND completes at the sender; the receiver gets some,
 * each whole and in order (which message it is, its data says), the rest counted lost. */
static void uc_sends_over_a_lossy_link_arrive_whole_or_not(void **state)
{
	const uint32_t len = 3000, n = 400;
	struct ibv_cq *acq = new_cq(&A, 64, NULL, NULL), *bcq = new_cq(&B, 1024, NULL, NULL);
	struct ibv_qp *a = new_qp(&A, IBV_QPT_UC, acq, acq, NULL, 16, 16);
	struct ibv_qp *b = new_qp(&B, IBV_QPT_UC, bcq, bcq, NULL, 16, 512);
	struct ibv_mr *src = new_mr(&A, len, LW), *dst = new_mr(&B, (size_t)n * len, LW);
	uint32_t got = 0, seq = 0, i;
	struct ibv_wc wc;

	(void)state;
	connect_uc(a, b, 0);
	for (i = 0; i < n; i++)
		assert_int_equal(post_recv(b, i, (uint8_t *)dst->addr + (size_t)i * len, len,
					   dst->lkey), 0);
	/* A UC SEND is complete once its packets are out: its buffer is the next one's. */
	for (i = 0; i < n; i++) {
		fill_pattern(src->addr, len, i + 1);
		assert_int_equal(post_send(a, IBV_WR_SEND, i, src->addr, len, src->lkey,
				   IBV_SEND_SIGNALED), 0);
		expect_send_ok(acq, i, IBV_WC_SEND);
	}
	while (poll_wc(bcq, &wc, 1) == 1) {
		const uint8_t *buf = (const uint8_t *)dst->addr + (size_t)wc.wr_id * len;

		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.byte_len, len);
		/* receive WQEs are used in order, by messages in order */
		assert_int_equal(wc.wr_id, got);
		while (++seq <= n && !check_pattern(buf, len, seq))
			;
		assert_true(seq <= n);
		got++;
	}
	printf("# %u UC SENDs of %u bytes: %u received whole, uc_msgs_dropped=%" PRIu64
	       " out_of_seq=%" PRIu64 " dup_requests=%" PRIu64 "\n", n, len, got,
	       qp_xstat(b, "qp.uc_msgs_dropped"), qp_xstat(b, "qp.out_of_seq"),
	       qp_xstat(b, "qp.dup_requests"));
	assert_true(got < n && got > 0);
	assert_true(qp_xstat(b, "qp.uc_msgs_dropped") > 0);
	assert_true(got + qp_xstat(b, "qp.uc_msgs_dropped") <= n);
	assert_int_equal(qp_xstat(b, "qp.tx_packets"), 0);
	assert_int_equal(qp_xstat(a, "qp.retrans_packets"), 0);
}

int main(void)
{
	const struct CMUnitTest clean[] = {
		VT(device_reports_atomic_cap_hca),
		VT(cmp_swap_and_fetch_add_complete_with_the_value_before),
		VT(post_send_refuses_atomics_that_cannot_be),
		VT(responder_checks_key_access_and_alignment),
		VT(uc_pingpong_of_sends_and_writes),
		VT(uc_modify_qp_takes_the_uc_masks),
	};
	const struct CMUnitTest lossy[] = {
		VT(fetch_adds_over_a_lossy_link_apply_once),
		VT(uc_sends_over_a_lossy_link_arrive_whole_or_not),
	};

	sides_env_defaults("0");
	return faults_on() ? SIDES_RUN_GROUP("atomic_uc_faults", lossy)
			   : SIDES_RUN_GROUP("atomic_uc", clean);
}
