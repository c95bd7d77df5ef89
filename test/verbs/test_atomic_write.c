/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RC atomic write (IBTA 1.5: ibv_wr_atomic_write(), IBV_QP_EX_WITH_ATOMIC_WRITE) through
 * <infiniband/verbs.h>: which QPs offer it and which posts refuse it, the 8 bytes that
 * land and their completion, a reader of the word that never sees half of a store, the
 * responder's checks (alignment, key, rights); and, with DPV_FAULTS set (meson runs it
 * so), atomic writes over a link that loses, duplicates and reorders frames: each
 * completes once, in order, and the last one's value is what stays.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verbs_test.h"

#define LW IBV_ACCESS_LOCAL_WRITE
#define RW (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE)
#define AW_OPS (IBV_QP_EX_WITH_ATOMIC_WRITE | IBV_QP_EX_WITH_SEND)

/* An RC QP of the extended API on A, connected with @p o to a plain one on B. */
struct aw_pair {
	struct ibv_cq *acq, *bcq;
	struct ibv_qp_ex *x;
	struct ibv_qp *a, *b;
};

static void aw_pair(struct aw_pair *p, const struct conn_opts *o)
{
	p->acq = new_cq(&A, 256, NULL, NULL);
	p->bcq = new_cq(&B, 256, NULL, NULL);
	p->x = new_qp_ex(&A, IBV_QPT_RC, p->acq, 64, AW_OPS);
	p->a = &p->x->qp_base;
	p->b = new_qp(&B, IBV_QPT_RC, p->bcq, p->bcq, NULL, 64, 64);
	connect_rc(p->a, p->b, o);
}

/* conn_default with a 16.8 ms ACK timeout: the lossy runs recover sooner. */
static const struct conn_opts *aw_conn(void)
{
	static struct conn_opts o;

	o = conn_default;
	o.timeout = 12;
	return &o;
}

/* One atomic write of @p val (its bytes in host order) in a batch of its own. */
static int post_aw(struct ibv_qp_ex *x, uint64_t wr_id, uint32_t rkey, uint64_t raddr,
		   uint64_t val, unsigned int flags)
{
	ibv_wr_start(x);
	x->wr_id = wr_id;
	x->wr_flags = flags;
	ibv_wr_atomic_write(x, rkey, raddr, &val);
	return ibv_wr_complete(x);
}

/* ---- which QPs offer it, which posts refuse it ---- */

static int create_errno(enum ibv_qp_type type, struct ibv_cq *cq, uint64_t ops)
{
	struct ibv_qp_init_attr_ex attr = {
		.send_cq = cq,
		.recv_cq = cq,
		.cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1},
		.qp_type = type,
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = A.pd,
		.send_ops_flags = ops,
	};
	struct ibv_qp *qp;

	errno = 0;
	qp = ibv_create_qp_ex(A.ctx, &attr);
	if (qp == NULL)
		return errno;
	assert_int_equal(ibv_destroy_qp(qp), 0);
	return 0;
}

/* RC only (IBTA 1.5: UC and UD have no atomic write): an extended UC or UD QP asking
 * for it is refused as any send op the type lacks (EOPNOTSUPP); an RC one gets the
 * call. ibv_post_send(3) has no field for the 8 bytes: IBV_WR_ATOMIC_WRITE there is
 * EINVAL, on any QP. */
static void rc_only_and_through_ibv_wr_only(void **state)
{
	struct ibv_cq *cq = new_cq(&A, 16, NULL, NULL);
	struct ibv_mr *remote = new_mr(&B, 64, RW), *local = new_mr(&A, 64, LW);
	struct ibv_sge sge = {.addr = (uintptr_t)local->addr, .length = 8, .lkey = local->lkey};
	struct ibv_send_wr wr, *bad = NULL;
	struct aw_pair p;

	(void)state;
	assert_int_equal(create_errno(IBV_QPT_UC, cq, AW_OPS), EOPNOTSUPP);
	assert_int_equal(create_errno(IBV_QPT_UD, cq, AW_OPS), EOPNOTSUPP);
	assert_int_equal(create_errno(IBV_QPT_UC, cq, IBV_QP_EX_WITH_SEND), 0);
	assert_int_equal(create_errno(IBV_QPT_RC, cq, AW_OPS), 0);
	aw_pair(&p, aw_conn());
	assert_non_null(p.x->wr_atomic_write);
	memset(&wr, 0, sizeof(wr));
	wr.opcode = IBV_WR_ATOMIC_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.atomic.remote_addr = (uintptr_t)remote->addr;
	wr.wr.atomic.rkey = remote->rkey;
	wr.wr.atomic.swap = 7;
	assert_int_equal(ibv_post_send(p.a, &wr, &bad), EINVAL);
	assert_ptr_equal(bad, &wr);
	wr.sg_list = &sge;
	wr.num_sge = 1;
	assert_int_equal(ibv_post_send(p.a, &wr, &bad), EINVAL);
	expect_quiet(p.acq);
	assert_true(*(uint64_t *)remote->addr == 0);
}

/* ---- what lands ---- */

/* The 8 bytes land as they were given, in PSN order behind a WRITE, and complete with
 * IBV_WC_ATOMIC_WRITE; an unsignaled one completes silently, its value in place. */
static void the_bytes_land_and_complete(void **state)
{
	struct ibv_mr *remote = new_mr(&B, 4096, RW), *local = new_mr(&A, 4096, LW);
	static const uint8_t bytes[8] = {0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88};
	uint8_t *r = remote->addr;
	struct aw_pair p;
	struct ibv_wc wc;
	uint64_t v;

	(void)state;
	aw_pair(&p, aw_conn());
	fill_pattern(local->addr, 1024, 5);
	memcpy(&v, bytes, 8);
	ibv_wr_start(p.x);
	p.x->wr_id = 1;
	p.x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(p.x, remote->rkey, (uintptr_t)r + 1024);
	ibv_wr_set_sge(p.x, local->lkey, (uintptr_t)local->addr, 1024);
	p.x->wr_id = 2;
	ibv_wr_atomic_write(p.x, remote->rkey, (uintptr_t)r + 8, bytes);
	assert_int_equal(ibv_wr_complete(p.x), 0);
	expect_send_ok(p.acq, 1, IBV_WC_RDMA_WRITE);
	expect_wc(p.acq, &wc);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_ATOMIC_WRITE);
	assert_int_equal(wc.wr_id, 2);
	assert_memory_equal(r + 8, bytes, 8);
	assert_true(check_pattern(r + 1024, 1024, 5));
	/* nothing around the word is touched */
	assert_true(*(uint64_t *)r == 0 && *(uint64_t *)(r + 16) == 0);
	assert_int_equal(post_aw(p.x, 3, remote->rkey, (uintptr_t)r + 8, 0x0102030405060708ULL, 0),
			 0);
	assert_int_equal(post_aw(p.x, 4, remote->rkey, (uintptr_t)r + 16, ~0ULL,
				 IBV_SEND_SIGNALED), 0);
	expect_send_ok(p.acq, 4, IBV_WC_ATOMIC_WRITE);
	assert_true(*(uint64_t *)(r + 8) == 0x0102030405060708ULL);
	assert_true(*(uint64_t *)(r + 16) == ~0ULL);
	expect_quiet(p.acq);
	expect_quiet(p.bcq);
	/* one responder resource each, given back with the answer */
	assert_int_equal(qp_xstat(p.b, "qp.naks_sent"), 0);
}

/* ---- a reader of the word ---- */

#define PAT_A 0x00000000ffffffffULL
#define PAT_B 0xffffffff00000000ULL

/*
 * Atomic writes alternate two values whose halves differ, 16 in flight, while the
 * program reads the word between its polls of the CQ: it reads only the first value,
 * the second, or what was there before, never the halves of two (a store in two pieces
 * would show 0xffffffffffffffff or 0 between them). With the device on a core of its
 * own (lcore, service) the stores and the reads run at once; in inline progress the
 * program's polls make the stores, between its reads.
 */
static void a_reader_never_sees_half_a_store(void **state)
{
	const uint64_t n = 4000;
	struct ibv_mr *remote = new_mr(&B, 64, RW);
	const uint64_t *word = remote->addr;
	uint64_t posted = 0, done = 0, reads = 0, torn = 0, seen_a = 0, seen_b = 0, last;
	struct ibv_wc wc[16];
	struct aw_pair p;

	(void)state;
	aw_pair(&p, aw_conn());
	last = now_ms();
	while (done < n) {
		int got;

		while (posted < n && posted - done < 16) {
			assert_int_equal(post_aw(p.x, posted, remote->rkey, (uintptr_t)word,
						 posted % 2 ? PAT_B : PAT_A, IBV_SEND_SIGNALED), 0);
			posted++;
		}
		for (int i = 0; i < 256; i++) {
			const uint64_t v = __atomic_load_n(word, __ATOMIC_RELAXED);

			reads++;
			seen_a += v == PAT_A;
			seen_b += v == PAT_B;
			torn += v != PAT_A && v != PAT_B && v != 0;
		}
		got = ibv_poll_cq(p.acq, 16, wc);
		assert_true(got >= 0);
		for (int i = 0; i < got; i++, done++) {
			assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
			assert_int_equal(wc[i].wr_id, done);
		}
		if (got > 0)
			last = now_ms();
		assert_true(now_ms() - last < WAIT_MS);
	}
	printf("# %" PRIu64 " atomic writes; %" PRIu64 " reads of the word: %" PRIu64
	       " the first value, %" PRIu64 " the second, %" PRIu64 " torn\n",
	       n, reads, seen_a, seen_b, torn);
	assert_int_equal(torn, 0);
	assert_true(seen_a > 0 && seen_b > 0);
	assert_true(*word == PAT_B);
}

/* ---- the responder's checks ---- */

/* One atomic write on a fresh connection whose responder allows @p qp_access: its
 * completion status; after a failure the requester's QP is in ERR. */
static enum ibv_wc_status one_aw(unsigned int qp_access, uint64_t raddr, uint32_t rkey)
{
	struct conn_opts o = *aw_conn();
	struct aw_pair p;
	struct ibv_wc wc;

	o.access = qp_access;
	aw_pair(&p, &o);
	assert_int_equal(post_aw(p.x, 9, rkey, raddr, 0x5a5a5a5a5a5a5a5aULL, IBV_SEND_SIGNALED),
			 0);
	expect_wc(p.acq, &wc);
	assert_int_equal(wc.wr_id, 9);
	if (wc.status != IBV_WC_SUCCESS)
		assert_int_equal(qp_state_of(p.a), IBV_QPS_ERR);
	else
		assert_int_equal(wc.opcode, IBV_WC_ATOMIC_WRITE);
	return wc.status;
}

/* IBTA 1.5: an address not 8-byte aligned is an invalid request; a key that is not the
 * region's, a range past it, a region or QP without remote write are access errors
 * (remote atomic or read rights do not stand for it). Memory is touched only by the
 * one that passes. */
static void responder_checks_alignment_key_and_rights(void **state)
{
	struct ibv_mr *remote = new_mr(&B, 64, RW);
	struct ibv_mr *no_write = new_mr(&B, 64, LW | IBV_ACCESS_REMOTE_READ |
					 IBV_ACCESS_REMOTE_ATOMIC);
	const uint64_t base = (uintptr_t)remote->addr;
	const unsigned int qa = IBV_ACCESS_REMOTE_WRITE;

	(void)state;
	assert_int_equal(one_aw(qa, base + 4, remote->rkey), IBV_WC_REM_INV_REQ_ERR);
	assert_int_equal(one_aw(qa, base + 1, remote->rkey), IBV_WC_REM_INV_REQ_ERR);
	assert_int_equal(one_aw(qa, base, remote->rkey + 1), IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(one_aw(qa, base + 64, remote->rkey), IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(one_aw(qa, (uintptr_t)no_write->addr, no_write->rkey),
			 IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(one_aw(IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC, base,
				remote->rkey), IBV_WC_REM_ACCESS_ERR);
	assert_true(*(uint64_t *)remote->addr == 0 && *(uint64_t *)no_write->addr == 0);
	assert_int_equal(one_aw(qa, base + 56, remote->rkey), IBV_WC_SUCCESS);
	assert_true(*(uint64_t *)(base + 56) == 0x5a5a5a5a5a5a5a5aULL);
}

/* ---- through the faults port (DPV_FAULTS) ---- */

/* Atomic writes of 1, 2, 3... to one word, 16 in flight, over the lossy link: every one
 * completes once, successfully and in order, the word ends with the last value, and
 * the duplicates the loss drew were answered again, not stored again. */
static void atomic_writes_over_a_lossy_link_complete_once(void **state)
{
	const uint64_t n = 2000;
	struct ibv_mr *remote = new_mr(&B, 64, RW);
	uint64_t posted = 0, done = 0;
	struct aw_pair p;
	struct ibv_wc wc;

	(void)state;
	aw_pair(&p, aw_conn());
	while (done < n) {
		while (posted < n && posted - done < 16) {
			assert_int_equal(post_aw(p.x, posted, remote->rkey, (uintptr_t)remote->addr,
						 posted + 1, IBV_SEND_SIGNALED), 0);
			posted++;
		}
		expect_wc(p.acq, &wc);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.opcode, IBV_WC_ATOMIC_WRITE);
		assert_int_equal(wc.wr_id, done);
		done++;
	}
	expect_quiet(p.acq);
	assert_true(*(uint64_t *)remote->addr == n);
	printf("# %" PRIu64 " atomic writes: requester retrans_packets=%" PRIu64
	       ", responder dup_requests=%" PRIu64 " atomic_replays=%" PRIu64
	       " dup_atomics_dropped=%" PRIu64 "\n",
	       n, qp_xstat(p.a, "qp.retrans_packets"), qp_xstat(p.b, "qp.dup_requests"),
	       qp_xstat(p.b, "qp.atomic_replays"), qp_xstat(p.b, "qp.dup_atomics_dropped"));
	assert_true(dev_xstat(A.ctx, "faults.tx.dropped") +
		    dev_xstat(B.ctx, "faults.tx.dropped") > 0);
	assert_true(qp_xstat(p.b, "qp.atomic_replays") > 0);
	assert_int_equal(qp_xstat(p.a, "qp.retry_exceeded"), 0);
}

int main(void)
{
	const struct CMUnitTest clean[] = {
		VT(rc_only_and_through_ibv_wr_only),
		VT(the_bytes_land_and_complete),
		VT(a_reader_never_sees_half_a_store),
		VT(responder_checks_alignment_key_and_rights),
	};
	const struct CMUnitTest lossy[] = {
		VT(atomic_writes_over_a_lossy_link_complete_once),
	};

	sides_env_defaults("0");
	return faults_on() ? SIDES_RUN_GROUP("atomic_write_faults", lossy)
			   : SIDES_RUN_GROUP("atomic_write", clean);
}
