/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory windows (ibv_alloc_mw(3), ibv_bind_mw(3), ibv_post_send(3)'s BIND_MW, LOCAL_INV
 * and SEND_WITH_INV, ibv_wr_post(3)'s forms; IBTA 10.6.7) through <infiniband/verbs.h>:
 * what the device reports, type 1 and type 2 binds and the remote WRITE, READ and atomic
 * their keys allow inside the window and refuse outside it, the tag of a new key,
 * invalidation (a zero-length bind, LOCAL_INV, SEND with Invalidate, deallocation) after
 * which the key is refused, the errnos and completions of bad binds, and, with
 * DPV_FAULTS set (meson runs it so), bind and invalidate sequences over a link that
 * loses, duplicates and reorders frames: each completes exactly once.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verbs_test.h"

#define LW IBV_ACCESS_LOCAL_WRITE
#define BINDABLE (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND)
#define REMOTE_ALL (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)
#define WIN_OFF 1024u
#define WIN_LEN 1024u

/* conn_default with atomics allowed and a 16.8 ms ACK timeout. */
static const struct conn_opts *mw_conn(void)
{
	static struct conn_opts o;

	o = conn_default;
	o.access |= IBV_ACCESS_REMOTE_ATOMIC;
	o.timeout = 12;
	return &o;
}

/* ibv_bind_mw(3) of type 1 window @p mw to [off, off + len) of @p mr through @p qp. */
static int bind1(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mr *mr, uint64_t off,
		 uint64_t len, unsigned int access, uint64_t wr_id)
{
	struct ibv_mw_bind b = {
		.wr_id = wr_id,
		.send_flags = IBV_SEND_SIGNALED,
		.bind_info = {.mr = mr, .addr = (uintptr_t)mr->addr + off, .length = len,
			      .mw_access_flags = access},
	};

	return ibv_bind_mw(qp, mw, &b);
}

/* ibv_post_send(3) BIND_MW of window @p mw with key @p rkey (its tag is what counts). */
static int bind2(struct ibv_qp *qp, struct ibv_mw *mw, uint32_t rkey, struct ibv_mr *mr,
		 uint64_t off, uint64_t len, unsigned int access, uint64_t wr_id,
		 unsigned int flags)
{
	struct ibv_send_wr wr, *bad = NULL;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = flags;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = rkey;
	wr.bind_mw.bind_info.mr = mr;
	wr.bind_mw.bind_info.addr = (uintptr_t)mr->addr + off;
	wr.bind_mw.bind_info.length = len;
	wr.bind_mw.bind_info.mw_access_flags = access;
	return ibv_post_send(qp, &wr, &bad);
}

/* LOCAL_INV or SEND_WITH_INV (no data) of @p rkey. */
static int post_inv(struct ibv_qp *qp, enum ibv_wr_opcode op, uint32_t rkey, uint64_t wr_id)
{
	struct ibv_send_wr wr, *bad = NULL;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.invalidate_rkey = rkey;
	return ibv_post_send(qp, &wr, &bad);
}

static void expect_status(struct ibv_cq *cq, uint64_t wr_id, enum ibv_wc_status status)
{
	struct ibv_wc wc;

	expect_wc(cq, &wc);
	assert_int_equal(wc.wr_id, wr_id);
	if (wc.status != status)
		fail_msg("wr_id %" PRIu64 ": %s, not %s", wc.wr_id, ibv_wc_status_str(wc.status),
			 ibv_wc_status_str(status));
}

/* One WRITE of 8 bytes from A's @p local to @p raddr with @p rkey on @p p: its status. */
static enum ibv_wc_status write8(struct rc_pair *p, struct ibv_mr *local, uint64_t raddr,
				 uint32_t rkey, uint64_t wr_id)
{
	struct ibv_wc wc;

	assert_int_equal(post_rdma(p->a, IBV_WR_RDMA_WRITE, wr_id, local->addr, 8, local->lkey,
				   raddr, rkey), 0);
	expect_wc(p->acq, &wc);
	assert_int_equal(wc.wr_id, wr_id);
	return wc.status;
}

/* ---- what the device says ---- */

static void device_reports_memory_windows(void **state)
{
	struct ibv_device_attr attr;
	void *buf = new_buf(64);
	struct ibv_mr *mr;

	(void)state;
	assert_int_equal(ibv_query_device(A.ctx, &attr), 0);
	assert_true(attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW);
	assert_true(attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B);
	assert_false(attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2A);
	assert_int_equal(attr.max_mw, 65535);
	mr = ibv_reg_mr(A.pd, buf, 64, BINDABLE);
	assert_non_null(mr);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	/* zero-based regions stay not offered */
	errno = 0;
	assert_null(ibv_reg_mr(A.pd, buf, 64, BINDABLE | IBV_ACCESS_ZERO_BASED));
	assert_int_equal(errno, EOPNOTSUPP);
	errno = 0;
	assert_null(ibv_alloc_mw(A.pd, (enum ibv_mw_type)3));
	assert_int_equal(errno, EINVAL);
}

static void windows_are_pd_users_with_keys_of_their_own(void **state)
{
	struct ibv_pd *pd = ibv_alloc_pd(A.ctx);
	struct ibv_mw *w1, *w2;

	(void)state;
	assert_non_null(pd);
	w1 = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
	w2 = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	assert_non_null(w1);
	assert_non_null(w2);
	assert_int_equal(w1->type, IBV_MW_TYPE_1);
	assert_int_equal(w2->type, IBV_MW_TYPE_2);
	assert_ptr_equal(w1->pd, pd);
	assert_int_not_equal(w1->rkey, 0);
	assert_int_not_equal(w1->rkey >> 8, w2->rkey >> 8);
	/* ibv_dealloc_pd(3): EBUSY while a window is on the PD */
	assert_int_equal(ibv_dealloc_pd(pd), EBUSY);
	assert_int_equal(ibv_dealloc_mw(w1), 0);
	assert_int_equal(ibv_dealloc_pd(pd), EBUSY);
	assert_int_equal(ibv_dealloc_mw(w2), 0);
	assert_int_equal(ibv_dealloc_pd(pd), 0);
}

/* ---- type 1 ---- */

static void type1_window_allows_inside_and_refuses_outside(void **state)
{
	struct ibv_mr *mr = new_mr(&B, 4096, BINDABLE), *local = new_mr(&A, 64, LW);
	struct ibv_mw *mw = new_mw(&B, IBV_MW_TYPE_1);
	uint64_t base = (uintptr_t)mr->addr, *l = local->addr;
	uint8_t *r = mr->addr;
	uint32_t old = mw->rkey;
	struct rc_pair p, q;

	(void)state;
	rc_pair(&p, mw_conn());
	assert_int_equal(bind1(p.b, mw, mr, WIN_OFF, WIN_LEN, REMOTE_ALL, 7), 0);
	/* ibv_bind_mw(3): the key after the bind is in mw->rkey, its tag the next one */
	assert_int_equal(mw->rkey, ibv_inc_rkey(old));
	expect_send_ok(p.bcq, 7, IBV_WC_BIND_MW);
	l[0] = 0x1122334455667788ULL;
	assert_int_equal(write8(&p, local, base + WIN_OFF, mw->rkey, 1), IBV_WC_SUCCESS);
	assert_memory_equal(r + WIN_OFF, &l[0], 8);
	r[WIN_OFF + WIN_LEN - 8] = 0x5a;
	assert_int_equal(post_rdma(p.a, IBV_WR_RDMA_READ, 2, &l[1], 8, local->lkey,
				   base + WIN_OFF + WIN_LEN - 8, mw->rkey), 0);
	expect_send_ok(p.acq, 2, IBV_WC_RDMA_READ);
	assert_int_equal(((uint8_t *)&l[1])[0], 0x5a);
	*(uint64_t *)(r + WIN_OFF + 8) = 40;
	assert_int_equal(post_atomic(p.a, IBV_WR_ATOMIC_FETCH_AND_ADD, 3, &l[2], 8, local->lkey,
				     base + WIN_OFF + 8, mw->rkey, 2, 0, 0), 0);
	expect_send_ok(p.acq, 3, IBV_WC_FETCH_ADD);
	assert_true(l[2] == 40 && *(uint64_t *)(r + WIN_OFF + 8) == 42);
	/* the region's own range outside the window, through the window's key: refused */
	assert_int_equal(write8(&p, local, base + WIN_OFF + WIN_LEN - 4, mw->rkey, 4),
			 IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(qp_state_of(p.a), IBV_QPS_ERR);
	/* a window's key is no local key */
	rc_pair(&q, mw_conn());
	assert_int_equal(post_send(q.b, IBV_WR_SEND, 8, r, 8, mw->rkey, IBV_SEND_SIGNALED), 0);
	expect_status(q.bcq, 8, IBV_WC_LOC_PROT_ERR);
}

/* A READ and an atomic just outside a type 1 window, each on a connection of its own. */
static void type1_read_and_atomic_outside_are_remote_access_errors(void **state)
{
	struct ibv_mr *mr = new_mr(&B, 4096, BINDABLE), *local = new_mr(&A, 64, LW);
	struct ibv_mw *mw = new_mw(&B, IBV_MW_TYPE_1);
	uint64_t base = (uintptr_t)mr->addr, *l = local->addr;
	struct rc_pair p, q;

	(void)state;
	rc_pair(&p, mw_conn());
	/* read-only window: WRITE refused inside it too */
	assert_int_equal(bind1(p.b, mw, mr, WIN_OFF, WIN_LEN, IBV_ACCESS_REMOTE_READ, 1), 0);
	expect_send_ok(p.bcq, 1, IBV_WC_BIND_MW);
	assert_int_equal(post_rdma(p.a, IBV_WR_RDMA_READ, 2, l, 16, local->lkey,
				   base + WIN_OFF - 8, mw->rkey), 0);
	expect_status(p.acq, 2, IBV_WC_REM_ACCESS_ERR);
	rc_pair(&q, mw_conn());
	assert_int_equal(post_atomic(q.a, IBV_WR_ATOMIC_CMP_AND_SWP, 3, l, 8, local->lkey,
				     base + WIN_OFF, mw->rkey, 0, 1, 0), 0);
	expect_status(q.acq, 3, IBV_WC_REM_ACCESS_ERR);
	rc_pair(&q, mw_conn());
	assert_int_equal(write8(&q, local, base + WIN_OFF, mw->rkey, 4), IBV_WC_REM_ACCESS_ERR);
	/* the window's rights are its own: the region was registered without remote read */
	rc_pair(&q, mw_conn());
	assert_int_equal(post_rdma(q.a, IBV_WR_RDMA_READ, 5, l, 8, local->lkey, base, mr->rkey), 0);
	expect_status(q.acq, 5, IBV_WC_REM_ACCESS_ERR);
}

static void type1_rebind_and_zero_length_refuse_the_old_key(void **state)
{
	struct ibv_mr *mr = new_mr(&B, 4096, BINDABLE), *local = new_mr(&A, 64, LW);
	struct ibv_mw *mw = new_mw(&B, IBV_MW_TYPE_1);
	uint64_t base = (uintptr_t)mr->addr;
	uint32_t first, second;
	struct rc_pair p;

	(void)state;
	rc_pair(&p, mw_conn());
	assert_int_equal(bind1(p.b, mw, mr, 0, 4096, IBV_ACCESS_REMOTE_WRITE, 1), 0);
	first = mw->rkey;
	assert_int_equal(bind1(p.b, mw, mr, 0, 4096, IBV_ACCESS_REMOTE_WRITE, 2), 0);
	second = mw->rkey;
	assert_int_equal(second, ibv_inc_rkey(first));
	expect_send_ok(p.bcq, 1, IBV_WC_BIND_MW);
	expect_send_ok(p.bcq, 2, IBV_WC_BIND_MW);
	/* ibv_dereg_mr(3) fails while a window is bound to the region (EINVAL, as rxe) */
	assert_int_equal(ibv_dereg_mr(mr), EINVAL);
	assert_int_equal(write8(&p, local, base, second, 3), IBV_WC_SUCCESS);
	/* a zero-length bind unbinds */
	assert_int_equal(bind1(p.b, mw, mr, 0, 0, 0, 4), 0);
	expect_send_ok(p.bcq, 4, IBV_WC_BIND_MW);
	assert_int_equal(write8(&p, local, base, mw->rkey, 5), IBV_WC_REM_ACCESS_ERR);
	rc_pair(&p, mw_conn());
	assert_int_equal(write8(&p, local, base, second, 6), IBV_WC_REM_ACCESS_ERR);
	rc_pair(&p, mw_conn());
	assert_int_equal(write8(&p, local, base, first, 7), IBV_WC_REM_ACCESS_ERR);
}

/* A bind through a UC QP completes as soon as the requester does it (UC is not
 * acknowledged); the key then works for an RC QP of the PD. */
static void type1_bind_through_uc(void **state)
{
	struct ibv_mr *mr = new_mr(&B, 4096, BINDABLE), *local = new_mr(&A, 64, LW);
	struct ibv_mw *mw = new_mw(&B, IBV_MW_TYPE_1);
	struct ibv_cq *cq = new_cq(&B, 16, NULL, NULL);
	struct ibv_qp *uc = new_qp(&B, IBV_QPT_UC, cq, cq, NULL, 4, 4);
	struct rc_pair p;

	(void)state;
	rc_pair(&p, mw_conn());
	connect_uc(uc, new_qp(&A, IBV_QPT_UC, p.acq, p.acq, NULL, 4, 4), 0);
	assert_int_equal(bind1(uc, mw, mr, 0, 64, IBV_ACCESS_REMOTE_WRITE, 1), 0);
	expect_send_ok(cq, 1, IBV_WC_BIND_MW);
	assert_int_equal(write8(&p, local, (uintptr_t)mr->addr + 8, mw->rkey, 2), IBV_WC_SUCCESS);
	expect_quiet(cq);
}

static void type1_bind_refusals(void **state)
{
	struct ibv_mr *mr = new_mr(&B, 4096, BINDABLE), *plain = new_mr(&B, 4096, LW);
	struct ibv_mr *ro = new_mr(&B, 4096, IBV_ACCESS_MW_BIND);
	struct ibv_mw *mw = new_mw(&B, IBV_MW_TYPE_1), *mw2 = new_mw(&B, IBV_MW_TYPE_2);
	struct ibv_cq *cq = new_cq(&B, 16, NULL, NULL);
	struct ibv_qp *ud = new_qp(&B, IBV_QPT_UD, cq, cq, NULL, 4, 4);
	struct ibv_pd *pd = ibv_alloc_pd(B.ctx);
	struct ibv_mr *other;
	uint32_t key = mw->rkey;
	struct rc_pair p;

	(void)state;
	assert_non_null(pd);
	track_pd(pd);
	other = ibv_reg_mr(pd, new_buf(64), 64, BINDABLE);
	assert_non_null(other);
	rc_pair(&p, mw_conn());
	/* a region without IBV_ACCESS_MW_BIND; a range beyond the region */
	assert_int_equal(bind1(p.b, mw, plain, 0, 64, IBV_ACCESS_REMOTE_READ, 1), EINVAL);
	assert_int_equal(bind1(p.b, mw, mr, 4000, 200, IBV_ACCESS_REMOTE_READ, 1), EINVAL);
	assert_int_equal(bind1(p.b, mw, mr, (uint64_t)-8, 16, IBV_ACCESS_REMOTE_READ, 1), EINVAL);
	/* remote write or atomic on a region without local write */
	assert_int_equal(bind1(p.b, mw, ro, 0, 64, IBV_ACCESS_REMOTE_WRITE, 1), EINVAL);
	assert_int_equal(bind1(p.b, mw, ro, 0, 64, IBV_ACCESS_REMOTE_ATOMIC, 1), EINVAL);
	/* zero-based windows are not offered; flags that are no access */
	assert_int_equal(bind1(p.b, mw, mr, 0, 64, IBV_ACCESS_REMOTE_READ | IBV_ACCESS_ZERO_BASED,
			       1), EINVAL);
	assert_int_equal(bind1(p.b, mw, mr, 0, 64, IBV_ACCESS_MW_BIND, 1), EINVAL);
	/* a region of another PD (ibv_bind_mw(3)'s inline check); a type 2 window */
	assert_int_equal(bind1(p.b, mw, other, 0, 64, IBV_ACCESS_REMOTE_READ, 1), EPERM);
	assert_int_equal(bind1(p.b, mw2, mr, 0, 64, IBV_ACCESS_REMOTE_READ, 1), EINVAL);
	/* UC, RC only */
	ud_to_rts(ud, 0x1111);
	assert_int_equal(bind1(ud, mw, mr, 0, 64, IBV_ACCESS_REMOTE_READ, 1), EINVAL);
	/* none of them was posted, and the key is as it was */
	assert_int_equal(mw->rkey, key);
	expect_quiet(p.bcq);
	assert_int_equal(ibv_dereg_mr(other), 0);
}

/* ---- type 2 ---- */

static void type2_bind_by_post_send_and_its_qp(void **state)
{
	struct ibv_mr *mr = new_mr(&B, 4096, BINDABLE), *local = new_mr(&A, 64, LW);
	struct ibv_mw *mw = new_mw(&B, IBV_MW_TYPE_2);
	uint64_t base = (uintptr_t)mr->addr, *l = local->addr;
	uint32_t key = ibv_inc_rkey(mw->rkey);
	struct rc_pair p, q;

	(void)state;
	rc_pair(&p, mw_conn());
	assert_int_equal(bind2(p.b, mw, key, mr, WIN_OFF, WIN_LEN, REMOTE_ALL, 1,
			       IBV_SEND_SIGNALED), 0);
	expect_send_ok(p.bcq, 1, IBV_WC_BIND_MW);
	l[0] = 77;
	assert_int_equal(write8(&p, local, base + WIN_OFF + 16, key, 2), IBV_WC_SUCCESS);
	assert_true(*(uint64_t *)((uint8_t *)mr->addr + WIN_OFF + 16) == 77);
	assert_int_equal(post_atomic(p.a, IBV_WR_ATOMIC_FETCH_AND_ADD, 3, &l[1], 8, local->lkey,
				     base + WIN_OFF + 16, key, 3, 0, 0), 0);
	expect_send_ok(p.acq, 3, IBV_WC_FETCH_ADD);
	assert_true(l[1] == 77);
	/* type 2B: bound to the QP it was bound through; another QP of the PD is refused */
	rc_pair(&q, mw_conn());
	assert_int_equal(write8(&q, local, base + WIN_OFF, key, 4), IBV_WC_REM_ACCESS_ERR);
	/* a key with another tag is not the window's */
	assert_int_equal(write8(&p, local, base + WIN_OFF, ibv_inc_rkey(key), 5),
			 IBV_WC_REM_ACCESS_ERR);
}

static void type2_local_inv_refuses_the_key(void **state)
{
	struct ibv_mr *mr = new_mr(&B, 4096, BINDABLE), *local = new_mr(&A, 64, LW);
	struct ibv_mw *mw = new_mw(&B, IBV_MW_TYPE_2);
	uint64_t base = (uintptr_t)mr->addr;
	uint32_t key = ibv_inc_rkey(mw->rkey);
	struct rc_pair p;
	struct ibv_wc wc;

	(void)state;
	rc_pair(&p, mw_conn());
	/* unsignaled: it completes silently, and the peer is told after it (ibv_bind_mw(3):
	 * a key is given out once the bind is done) */
	assert_int_equal(bind2(p.b, mw, key, mr, 0, 4096, IBV_ACCESS_REMOTE_WRITE, 1, 0), 0);
	assert_int_equal(post_recv(p.a, 20, local->addr, 8, local->lkey), 0);
	assert_int_equal(post_send(p.b, IBV_WR_SEND, 2, NULL, 0, 0, IBV_SEND_SIGNALED), 0);
	expect_send_ok(p.bcq, 2, IBV_WC_SEND);
	expect_wc(p.acq, &wc);
	assert_int_equal(wc.wr_id, 20);
	assert_int_equal(write8(&p, local, base, key, 2), IBV_WC_SUCCESS);
	assert_int_equal(post_inv(p.b, IBV_WR_LOCAL_INV, key, 3), 0);
	expect_send_ok(p.bcq, 3, IBV_WC_LOCAL_INV);
	/* invalidated: refused */
	assert_int_equal(write8(&p, local, base, key, 4), IBV_WC_REM_ACCESS_ERR);
	/* and it binds again, with a new tag */
	key = ibv_inc_rkey(key);
	rc_pair(&p, mw_conn());
	assert_int_equal(bind2(p.b, mw, key, mr, 0, 64, IBV_ACCESS_REMOTE_WRITE, 5,
			       IBV_SEND_SIGNALED), 0);
	expect_send_ok(p.bcq, 5, IBV_WC_BIND_MW);
	assert_int_equal(write8(&p, local, base, key, 6), IBV_WC_SUCCESS);
	/* a second invalidation of the key it no longer has: LOC_QP_OP_ERR, as rxe */
	assert_int_equal(post_inv(p.b, IBV_WR_LOCAL_INV, key, 7), 0);
	assert_int_equal(post_inv(p.b, IBV_WR_LOCAL_INV, key, 8), 0);
	expect_send_ok(p.bcq, 7, IBV_WC_LOCAL_INV);
	expect_status(p.bcq, 8, IBV_WC_LOC_QP_OP_ERR);
	assert_int_equal(qp_state_of(p.b), IBV_QPS_ERR);
}

static void type2_send_with_inv_reports_and_refuses_the_key(void **state)
{
	struct ibv_mr *mr = new_mr(&B, 4096, BINDABLE), *local = new_mr(&A, 64, LW);
	struct ibv_mr *rbuf = new_mr(&B, 64, LW);
	struct ibv_mw *mw = new_mw(&B, IBV_MW_TYPE_2);
	uint64_t base = (uintptr_t)mr->addr;
	uint32_t key = ibv_inc_rkey(mw->rkey);
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_sge sge;
	struct rc_pair p;
	struct ibv_wc wc;

	(void)state;
	rc_pair(&p, mw_conn());
	assert_int_equal(bind2(p.b, mw, key, mr, 0, 4096, IBV_ACCESS_REMOTE_WRITE, 1,
			       IBV_SEND_SIGNALED), 0);
	expect_send_ok(p.bcq, 1, IBV_WC_BIND_MW);
	assert_int_equal(write8(&p, local, base, key, 2), IBV_WC_SUCCESS);
	assert_int_equal(post_recv(p.b, 9, rbuf->addr, 64, rbuf->lkey), 0);
	memset(&wr, 0, sizeof(wr));
	memcpy(local->addr, "invalidate", 10);
	sge = (struct ibv_sge){.addr = (uintptr_t)local->addr, .length = 10, .lkey = local->lkey};
	wr.wr_id = 3;
	wr.opcode = IBV_WR_SEND_WITH_INV;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.invalidate_rkey = key;
	assert_int_equal(ibv_post_send(p.a, &wr, &bad), 0);
	expect_send_ok(p.acq, 3, IBV_WC_SEND);
	expect_wc(p.bcq, &wc);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_RECV);
	assert_int_equal(wc.wr_id, 9);
	assert_int_equal(wc.byte_len, 10);
	assert_int_equal(wc.wc_flags & (IBV_WC_WITH_INV | IBV_WC_WITH_IMM), IBV_WC_WITH_INV);
	assert_int_equal(wc.invalidated_rkey, key);
	assert_memory_equal(rbuf->addr, "invalidate", 10);
	assert_int_equal(write8(&p, local, base, key, 4), IBV_WC_REM_ACCESS_ERR);
}

/* The extended CQ reports the key too: IBV_WC_WITH_INV, ibv_wc_read_invalidated_rkey(). */
static void send_with_inv_on_an_extended_cq(void **state)
{
	struct ibv_mr *mr = new_mr(&B, 4096, BINDABLE), *rbuf = new_mr(&B, 64, LW);
	struct ibv_mw *mw = new_mw(&B, IBV_MW_TYPE_2);
	struct ibv_cq_ex *cqx = new_cq_ex(&B, 16, IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_BYTE_LEN);
	struct ibv_cq *acq = new_cq(&A, 16, NULL, NULL);
	struct ibv_qp *qa = new_qp(&A, IBV_QPT_RC, acq, acq, NULL, 8, 8);
	struct ibv_qp *qb = new_qp(&B, IBV_QPT_RC, ibv_cq_ex_to_cq(cqx), ibv_cq_ex_to_cq(cqx),
				   NULL, 8, 8);
	struct ibv_poll_cq_attr attr = {.comp_mask = 0};
	uint32_t key = ibv_inc_rkey(mw->rkey);
	int ret, tries = 0;

	(void)state;
	connect_rc(qa, qb, mw_conn());
	assert_int_equal(bind2(qb, mw, key, mr, 0, 64, IBV_ACCESS_REMOTE_WRITE, 1,
			       IBV_SEND_SIGNALED), 0);
	assert_int_equal(post_recv(qb, 2, rbuf->addr, 64, rbuf->lkey), 0);
	/* the bind's completion, then the receive's: the key is the window's once the bind
	 * has completed, not before (with the device on its own lcore, B may take A's
	 * SEND before its requester reaches the bind) */
	for (int seen = 0; seen < 2;) {
		if (seen == 1) {
			assert_int_equal(post_inv(qa, IBV_WR_SEND_WITH_INV, key, 3), 0);
			expect_send_ok(acq, 3, IBV_WC_SEND);
		}
		while ((ret = ibv_start_poll(cqx, &attr)) == ENOENT) {
			assert_true(++tries < 2000000);
			progress();
		}
		assert_int_equal(ret, 0);
		assert_int_equal(cqx->status, IBV_WC_SUCCESS);
		if (seen == 0) {
			assert_int_equal(cqx->wr_id, 1);
			assert_int_equal(ibv_wc_read_opcode(cqx), IBV_WC_BIND_MW);
		} else {
			assert_int_equal(cqx->wr_id, 2);
			assert_int_equal(ibv_wc_read_opcode(cqx), IBV_WC_RECV);
			assert_true(ibv_wc_read_wc_flags(cqx) & IBV_WC_WITH_INV);
			assert_int_equal(ibv_wc_read_invalidated_rkey(cqx), key);
		}
		ibv_end_poll(cqx);
		seen++;
	}
}

static void send_with_inv_of_a_key_that_is_no_window_fails(void **state)
{
	struct ibv_mr *mr = new_mr(&B, 4096, BINDABLE), *rbuf = new_mr(&B, 64, LW);
	struct ibv_mw *w1 = new_mw(&B, IBV_MW_TYPE_1);
	struct rc_pair p;

	(void)state;
	rc_pair(&p, mw_conn());
	assert_int_equal(post_recv(p.b, 9, rbuf->addr, 64, rbuf->lkey), 0);
	/* a region's key, then a type 1 window's: neither is invalidated remotely */
	assert_int_equal(post_inv(p.a, IBV_WR_SEND_WITH_INV, mr->rkey, 1), 0);
	expect_status(p.acq, 1, IBV_WC_REM_INV_REQ_ERR);
	assert_int_equal(qp_state_of(p.b), IBV_QPS_ERR);
	rc_pair(&p, mw_conn());
	assert_int_equal(bind1(p.b, w1, mr, 0, 64, IBV_ACCESS_REMOTE_READ, 2), 0);
	expect_send_ok(p.bcq, 2, IBV_WC_BIND_MW);
	assert_int_equal(post_recv(p.b, 9, rbuf->addr, 64, rbuf->lkey), 0);
	assert_int_equal(post_inv(p.a, IBV_WR_SEND_WITH_INV, w1->rkey, 3), 0);
	expect_status(p.acq, 3, IBV_WC_REM_INV_REQ_ERR);
	assert_int_equal(qp_state_of(p.b), IBV_QPS_ERR);
}

static void type2_dealloc_of_a_bound_window_refuses_the_key(void **state)
{
	struct ibv_mr *mr = new_mr(&B, 4096, BINDABLE), *local = new_mr(&A, 64, LW);
	struct ibv_mw *mw = ibv_alloc_mw(B.pd, IBV_MW_TYPE_2);
	uint64_t base = (uintptr_t)mr->addr;
	uint32_t key;
	struct rc_pair p;

	(void)state;
	assert_non_null(mw);
	key = ibv_inc_rkey(mw->rkey);
	rc_pair(&p, mw_conn());
	assert_int_equal(bind2(p.b, mw, key, mr, 0, 4096, IBV_ACCESS_REMOTE_WRITE, 1,
			       IBV_SEND_SIGNALED), 0);
	expect_send_ok(p.bcq, 1, IBV_WC_BIND_MW);
	assert_int_equal(write8(&p, local, base, key, 2), IBV_WC_SUCCESS);
	assert_int_equal(ibv_dereg_mr(mr), EINVAL);
	/* ibv_dealloc_mw(3) unbinds a bound window: 0, and the key is refused */
	assert_int_equal(ibv_dealloc_mw(mw), 0);
	assert_int_equal(write8(&p, local, base, key, 3), IBV_WC_REM_ACCESS_ERR);
}

/* A type 2 window bound through a QP is unbound when the QP is destroyed (QP numbers
 * come back): it binds again through another QP, where a bound one would not. */
static void type2_window_is_unbound_with_its_qp(void **state)
{
	struct ibv_mr *mr = new_mr(&B, 4096, BINDABLE), *local = new_mr(&A, 64, LW);
	struct ibv_mw *mw = new_mw(&B, IBV_MW_TYPE_2);
	struct ibv_cq *cq = new_cq(&B, 16, NULL, NULL);
	struct ibv_qp *qb = ibv_create_qp(B.pd, &(struct ibv_qp_init_attr){
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1}});
	uint32_t key = ibv_inc_rkey(mw->rkey);
	struct rc_pair p;

	(void)state;
	assert_non_null(qb);
	rc_pair(&p, mw_conn());
	connect_rc(new_qp(&A, IBV_QPT_RC, p.acq, p.acq, NULL, 4, 4), qb, mw_conn());
	assert_int_equal(bind2(qb, mw, key, mr, 0, 64, IBV_ACCESS_REMOTE_WRITE, 1,
			       IBV_SEND_SIGNALED), 0);
	expect_send_ok(cq, 1, IBV_WC_BIND_MW);
	assert_int_equal(ibv_dereg_mr(mr), EINVAL);
	assert_int_equal(ibv_destroy_qp(qb), 0);
	key = ibv_inc_rkey(key);
	assert_int_equal(bind2(p.b, mw, key, mr, 0, 64, IBV_ACCESS_REMOTE_WRITE, 2,
			       IBV_SEND_SIGNALED), 0);
	expect_send_ok(p.bcq, 2, IBV_WC_BIND_MW);
	assert_int_equal(write8(&p, local, (uintptr_t)mr->addr, key, 3), IBV_WC_SUCCESS);
}

static void type2_bad_binds_complete_with_mw_bind_err(void **state)
{
	struct ibv_mr *mr = new_mr(&B, 4096, BINDABLE), *plain = new_mr(&B, 4096, LW);
	struct ibv_mw *mw = new_mw(&B, IBV_MW_TYPE_2);
	uint32_t key = ibv_inc_rkey(mw->rkey);
	struct ibv_cq *cq = new_cq(&B, 16, NULL, NULL);
	struct ibv_qp *ud = new_qp(&B, IBV_QPT_UD, cq, cq, NULL, 4, 4);
	struct ibv_qp *uc = new_qp(&B, IBV_QPT_UC, cq, cq, NULL, 4, 4);
	struct rc_pair p;

	(void)state;
	/* the device checks a type 2 bind when it binds: the completion says it */
	rc_pair(&p, mw_conn());
	assert_int_equal(bind2(p.b, mw, key, plain, 0, 64, IBV_ACCESS_REMOTE_READ, 1,
			       IBV_SEND_SIGNALED), 0);
	expect_status(p.bcq, 1, IBV_WC_MW_BIND_ERR);
	assert_int_equal(qp_state_of(p.b), IBV_QPS_ERR);
	rc_pair(&p, mw_conn());
	assert_int_equal(bind2(p.b, mw, key, mr, 4000, 200, IBV_ACCESS_REMOTE_READ, 2,
			       IBV_SEND_SIGNALED), 0);
	expect_status(p.bcq, 2, IBV_WC_MW_BIND_ERR);
	rc_pair(&p, mw_conn());
	assert_int_equal(bind2(p.b, mw, key, mr, 0, 0, IBV_ACCESS_REMOTE_READ, 3,
			       IBV_SEND_SIGNALED), 0);
	expect_status(p.bcq, 3, IBV_WC_MW_BIND_ERR);
	/* bound once until invalidated (IBTA o10-37.2.30) */
	rc_pair(&p, mw_conn());
	assert_int_equal(bind2(p.b, mw, key, mr, 0, 64, IBV_ACCESS_REMOTE_READ, 4,
			       IBV_SEND_SIGNALED), 0);
	assert_int_equal(bind2(p.b, mw, ibv_inc_rkey(key), mr, 0, 64, IBV_ACCESS_REMOTE_READ, 5,
			       IBV_SEND_SIGNALED), 0);
	expect_send_ok(p.bcq, 4, IBV_WC_BIND_MW);
	expect_status(p.bcq, 5, IBV_WC_MW_BIND_ERR);
	/* at post: zero-based, no window, inline; UD has no binds, UC no SEND_WITH_INV */
	rc_pair(&p, mw_conn());
	assert_int_equal(bind2(p.b, mw, key, mr, 0, 64,
			       IBV_ACCESS_REMOTE_READ | IBV_ACCESS_ZERO_BASED, 6, 0), EINVAL);
	assert_int_equal(bind2(p.b, NULL, key, mr, 0, 64, IBV_ACCESS_REMOTE_READ, 6, 0), EINVAL);
	assert_int_equal(bind2(p.b, mw, key, mr, 0, 64, IBV_ACCESS_REMOTE_READ, 6,
			       IBV_SEND_INLINE), EINVAL);
	ud_to_rts(ud, 0x1111);
	assert_int_equal(bind2(ud, mw, key, mr, 0, 64, IBV_ACCESS_REMOTE_READ, 6, 0), EINVAL);
	assert_int_equal(post_inv(ud, IBV_WR_LOCAL_INV, key, 6), EINVAL);
	connect_uc(uc, new_qp(&A, IBV_QPT_UC, p.acq, p.acq, NULL, 4, 4), 0);
	assert_int_equal(post_inv(uc, IBV_WR_SEND_WITH_INV, key, 6), EINVAL);
	expect_quiet(p.bcq);
	expect_quiet(cq);
}

/* The extended send API: ibv_wr_bind_mw(), ibv_wr_local_inv(), ibv_wr_send_inv(). */
static void wr_api_binds_and_invalidates(void **state)
{
	struct ibv_mr *mr = new_mr(&B, 4096, BINDABLE), *local = new_mr(&A, 64, LW);
	struct ibv_mr *rbuf = new_mr(&B, 64, LW);
	struct ibv_mw *mw = new_mw(&B, IBV_MW_TYPE_2);
	uint32_t key = ibv_inc_rkey(mw->rkey);
	const uint64_t ops = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE |
			     IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV |
			     IBV_QP_EX_WITH_SEND_WITH_INV;
	struct ibv_cq *acq = new_cq(&A, 64, NULL, NULL), *bcq = new_cq(&B, 64, NULL, NULL);
	struct ibv_qp_init_attr_ex attr;
	struct ibv_mw_bind_info info = {.mr = mr, .addr = (uintptr_t)mr->addr, .length = 4096,
					.mw_access_flags = IBV_ACCESS_REMOTE_WRITE};
	struct ibv_qp *qa, *qb;
	struct ibv_qp_ex *xa, *xb;
	struct ibv_wc wc;
	struct rc_pair p;

	(void)state;
	memset(&attr, 0, sizeof(attr));
	attr.send_cq = attr.recv_cq = acq;
	attr.qp_type = IBV_QPT_RC;
	attr.cap = (struct ibv_qp_cap){.max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1,
				       .max_recv_sge = 1};
	attr.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	attr.pd = A.pd;
	attr.send_ops_flags = ops;
	qa = ibv_create_qp_ex(A.ctx, &attr);
	assert_non_null(qa);
	attr.send_cq = attr.recv_cq = bcq;
	attr.pd = B.pd;
	qb = ibv_create_qp_ex(B.ctx, &attr);
	assert_non_null(qb);
	connect_rc(qa, qb, mw_conn());
	xa = ibv_qp_to_qp_ex(qa);
	xb = ibv_qp_to_qp_ex(qb);
	ibv_wr_start(xb);
	xb->wr_id = 1;
	xb->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_bind_mw(xb, mw, key, &info);
	assert_int_equal(ibv_wr_complete(xb), 0);
	expect_send_ok(bcq, 1, IBV_WC_BIND_MW);
	p = (struct rc_pair){.acq = acq, .bcq = bcq, .a = qa, .b = qb};
	assert_int_equal(write8(&p, local, (uintptr_t)mr->addr, key, 2), IBV_WC_SUCCESS);
	/* local invalidation, a new bind, then the peer's SEND with Invalidate */
	ibv_wr_start(xb);
	xb->wr_id = 3;
	ibv_wr_local_inv(xb, key);
	key = ibv_inc_rkey(key);
	xb->wr_id = 4;
	ibv_wr_bind_mw(xb, mw, key, &info);
	assert_int_equal(ibv_wr_complete(xb), 0);
	expect_send_ok(bcq, 3, IBV_WC_LOCAL_INV);
	expect_send_ok(bcq, 4, IBV_WC_BIND_MW);
	assert_int_equal(post_recv(qb, 5, rbuf->addr, 64, rbuf->lkey), 0);
	ibv_wr_start(xa);
	xa->wr_id = 6;
	xa->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send_inv(xa, key);
	ibv_wr_set_sge(xa, local->lkey, (uintptr_t)local->addr, 8);
	assert_int_equal(ibv_wr_complete(xa), 0);
	expect_send_ok(acq, 6, IBV_WC_SEND);
	expect_wc(bcq, &wc);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_true(wc.wc_flags & IBV_WC_WITH_INV);
	assert_int_equal(wc.invalidated_rkey, key);
	assert_int_equal(write8(&p, local, (uintptr_t)mr->addr, key, 7), IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(ibv_destroy_qp(qa), 0);
	assert_int_equal(ibv_destroy_qp(qb), 0);
}

/* ---- through the faults port (DPV_FAULTS) ---- */

/*
 * Rounds over the lossy link, each: B posts a SEND, a bind of its type 2 window with the
 * next tag, and a SEND of the new key (so a go-back-N of B's requester passes over the
 * bind); A WRITEs through the key, then invalidates it with a SEND with Invalidate (even
 * rounds) or B invalidates it locally (odd rounds). A bind or an invalidation done twice
 * would fail (a bound type 2 window is not bound again; an invalidated key is not
 * invalidated again) and end the QP: every completion is a success, and there is one of
 * each per round.
 */
static void binds_and_invalidations_over_a_lossy_link_complete_once(void **state)
{
	const uint32_t rounds = 300;
	struct ibv_mr *mr = new_mr(&B, 4096, BINDABLE), *local = new_mr(&A, 64, LW);
	struct ibv_mr *bbuf = new_mr(&B, 64, LW), *abuf = new_mr(&A, 64, LW);
	struct ibv_mw *mw = new_mw(&B, IBV_MW_TYPE_2);
	uint32_t key = mw->rkey, got_key, binds = 0, invs = 0;
	struct rc_pair p;
	struct ibv_wc wc;

	(void)state;
	rc_pair(&p, mw_conn());
	for (uint32_t i = 0; i < rounds; i++) {
		key = ibv_inc_rkey(key);
		assert_int_equal(post_recv(p.a, 10, abuf->addr, 64, abuf->lkey), 0);
		assert_int_equal(post_recv(p.a, 11, (uint8_t *)abuf->addr + 32, 32, abuf->lkey), 0);
		assert_int_equal(post_send(p.b, IBV_WR_SEND, 20, bbuf->addr, 16, bbuf->lkey, 0), 0);
		assert_int_equal(bind2(p.b, mw, key, mr, 0, 4096, IBV_ACCESS_REMOTE_WRITE, 21,
				       IBV_SEND_SIGNALED), 0);
		memcpy((uint8_t *)bbuf->addr + 48, &key, 4);
		assert_int_equal(post_send(p.b, IBV_WR_SEND, 22, (uint8_t *)bbuf->addr + 48, 4,
					   bbuf->lkey, 0), 0);
		expect_send_ok(p.bcq, 21, IBV_WC_BIND_MW);
		binds++;
		expect_wc(p.acq, &wc);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.wr_id, 10);
		expect_wc(p.acq, &wc);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.wr_id, 11);
		memcpy(&got_key, (uint8_t *)abuf->addr + 32, 4);
		assert_int_equal(got_key, key);
		*(uint64_t *)local->addr = i;
		assert_int_equal(write8(&p, local, (uintptr_t)mr->addr + 8 * (i % 64), got_key,
					30), IBV_WC_SUCCESS);
		assert_true(*(uint64_t *)((uint8_t *)mr->addr + 8 * (i % 64)) == i);
		if (i % 2 == 0) {
			assert_int_equal(post_recv(p.b, 40, bbuf->addr, 16, bbuf->lkey), 0);
			assert_int_equal(post_inv(p.a, IBV_WR_SEND_WITH_INV, got_key, 41), 0);
			expect_send_ok(p.acq, 41, IBV_WC_SEND);
			expect_wc(p.bcq, &wc);
			assert_int_equal(wc.status, IBV_WC_SUCCESS);
			assert_int_equal(wc.wr_id, 40);
			assert_true(wc.wc_flags & IBV_WC_WITH_INV);
			assert_int_equal(wc.invalidated_rkey, key);
		} else {
			assert_int_equal(post_inv(p.b, IBV_WR_LOCAL_INV, key, 42), 0);
			expect_send_ok(p.bcq, 42, IBV_WC_LOCAL_INV);
		}
		invs++;
	}
	expect_quiet(p.acq);
	expect_quiet(p.bcq);
	printf("# %u rounds: %u binds, %u invalidations; B retrans_packets=%" PRIu64
	       ", A retrans_packets=%" PRIu64 ", dup_requests A=%" PRIu64 " B=%" PRIu64 "\n",
	       rounds, binds, invs, qp_xstat(p.b, "qp.retrans_packets"),
	       qp_xstat(p.a, "qp.retrans_packets"), qp_xstat(p.a, "qp.dup_requests"),
	       qp_xstat(p.b, "qp.dup_requests"));
	assert_int_equal(binds, rounds);
	assert_int_equal(invs, rounds);
	assert_true(dev_xstat(A.ctx, "faults.tx.dropped") +
		    dev_xstat(B.ctx, "faults.tx.dropped") > 0);
	assert_true(qp_xstat(p.b, "qp.retrans_packets") > 0);
	assert_int_equal(qp_state_of(p.a), IBV_QPS_RTS);
	assert_int_equal(qp_state_of(p.b), IBV_QPS_RTS);
}

int main(void)
{
	const struct CMUnitTest clean[] = {
		VT(device_reports_memory_windows),
		VT(windows_are_pd_users_with_keys_of_their_own),
		VT(type1_window_allows_inside_and_refuses_outside),
		VT(type1_read_and_atomic_outside_are_remote_access_errors),
		VT(type1_rebind_and_zero_length_refuse_the_old_key),
		VT(type1_bind_through_uc),
		VT(type1_bind_refusals),
		VT(type2_bind_by_post_send_and_its_qp),
		VT(type2_local_inv_refuses_the_key),
		VT(type2_send_with_inv_reports_and_refuses_the_key),
		VT(send_with_inv_on_an_extended_cq),
		VT(send_with_inv_of_a_key_that_is_no_window_fails),
		VT(type2_dealloc_of_a_bound_window_refuses_the_key),
		VT(type2_window_is_unbound_with_its_qp),
		VT(type2_bad_binds_complete_with_mw_bind_err),
		VT(wr_api_binds_and_invalidates),
	};
	const struct CMUnitTest lossy[] = {
		VT(binds_and_invalidations_over_a_lossy_link_complete_once),
	};

	sides_env_defaults("0");
	return faults_on() ? SIDES_RUN_GROUP("mw_faults", lossy) : SIDES_RUN_GROUP("mw", clean);
}
