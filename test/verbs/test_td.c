/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Thread domains and parent domains (ibv_alloc_td(3), ibv_alloc_parent_domain(3),
 * doc/guides/verbs.md "Thread domains"): the errors the man pages name, a parent domain
 * interchangeable with its PD (memory registered through either reached by QPs of
 * either), and QPs, CQs, SRQs and tag-matching SRQs made under a thread domain, which
 * take no lock, carrying traffic, posted to by one thread after another.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <infiniband/tm_types.h>

#include "dpv_verbs.h"
#include "test_verbs.h"

#define LW IBV_ACCESS_LOCAL_WRITE
#define MSGS 200u

static void *fake_alloc(struct ibv_pd *pd, void *ctx, size_t size, size_t align, uint64_t type)
{
	(void)pd, (void)ctx, (void)size, (void)align, (void)type;
	return IBV_ALLOCATOR_USE_DEFAULT;
}

static void fake_free(struct ibv_pd *pd, void *ctx, void *ptr, uint64_t type)
{
	(void)pd, (void)ctx, (void)ptr, (void)type;
}

static void td_and_parent_domain_errors(void **state)
{
	struct ibv_td_init_attr tda = {.comp_mask = 1};
	struct ibv_parent_domain_init_attr pa;
	struct ibv_td *td, *btd;
	struct ibv_pd *parent;

	(void)state;
	errno = 0;
	assert_null(ibv_alloc_td(A.ctx, &tda));
	assert_int_equal(errno, EINVAL);
	td = new_td(&A);
	btd = new_td(&B);

	memset(&pa, 0, sizeof(pa));
	errno = 0;
	assert_null(ibv_alloc_parent_domain(A.ctx, &pa)); /* no PD */
	assert_int_equal(errno, EINVAL);
	pa.pd = A.pd;
	pa.td = btd;
	errno = 0;
	assert_null(ibv_alloc_parent_domain(A.ctx, &pa)); /* B's thread domain */
	assert_int_equal(errno, EINVAL);
	pa.td = td;
	pa.comp_mask = 1u << 7;
	errno = 0;
	assert_null(ibv_alloc_parent_domain(A.ctx, &pa));
	assert_int_equal(errno, EINVAL);
	pa.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS;
	pa.alloc = fake_alloc;
	errno = 0;
	assert_null(ibv_alloc_parent_domain(A.ctx, &pa)); /* alloc without free */
	assert_int_equal(errno, EINVAL);
	pa.free = fake_free;
	pa.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
		       IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
	parent = ibv_alloc_parent_domain(A.ctx, &pa);
	assert_non_null(parent);
	assert_ptr_equal(parent->context, A.ctx);

	/* A parent domain is not the PD of another. */
	pa.pd = parent;
	pa.comp_mask = 0;
	errno = 0;
	assert_null(ibv_alloc_parent_domain(A.ctx, &pa));
	assert_int_equal(errno, EINVAL);

	/* Each holds what it was made of. */
	assert_int_equal(ibv_dealloc_td(td), EBUSY);
	assert_int_equal(ibv_dealloc_pd(A.pd), EBUSY);
	assert_int_equal(ibv_dealloc_pd(parent), 0);
	/* The td and btd go in teardown, which checks they are free again. */
}

static void cq_with_pd_needs_a_parent_domain(void **state)
{
	struct ibv_cq_init_attr_ex attr = {
		.cqe = 16,
		.wc_flags = IBV_WC_STANDARD_FLAGS,
		.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD,
	};
	struct ibv_pd *parent = new_parent_domain(&A, NULL);

	(void)state;
	errno = 0;
	assert_null(ibv_create_cq_ex(A.ctx, &attr));
	assert_int_equal(errno, EINVAL);
	attr.parent_domain = A.pd;
	errno = 0;
	assert_null(ibv_create_cq_ex(A.ctx, &attr));
	assert_int_equal(errno, EINVAL);
	attr.parent_domain = new_parent_domain(&B, NULL);
	errno = 0;
	assert_null(ibv_create_cq_ex(A.ctx, &attr)); /* another context's */
	assert_int_equal(errno, EINVAL);
	(void)new_cq_ex_in(&A, 16, IBV_WC_STANDARD_FLAGS, parent);
	/* The CQ holds the parent domain until teardown destroys the CQ first. */
	assert_int_equal(ibv_dealloc_pd(parent), EBUSY);
}

/* @p n SENDs of 8 bytes, a → b, each checked at b, wr_ids from @p base. */
static void send_and_check(struct ibv_qp *a, struct ibv_cq *acq, struct ibv_qp *b,
			   struct ibv_cq *bcq, struct ibv_mr *smr, struct ibv_mr *rmr,
			   uint32_t base, uint32_t n)
{
	struct ibv_wc wc;

	for (uint32_t i = 0; i < n; i++) {
		uint32_t v = base + i;

		assert_int_equal(post_recv(b, v, rmr->addr, 8, rmr->lkey), 0);
		memcpy(smr->addr, &v, sizeof(v));
		assert_int_equal(post_send(a, IBV_WR_SEND, v, smr->addr, 8, smr->lkey,
					   IBV_SEND_SIGNALED), 0);
		expect_send_ok(acq, v, IBV_WC_SEND);
		expect_wc(bcq, &wc);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.wr_id, v);
		assert_int_equal(wc.byte_len, 8);
		assert_memory_equal(rmr->addr, &v, sizeof(v));
	}
}

/* A QP and CQs under a thread domain on A, a plain QP on B; memory registered through
 * the plain PD on A and through the parent domain on B: the parent domain is its PD. */
static void parent_domain_objects_carry_traffic(void **state)
{
	struct side at = A, bt = B;
	struct ibv_cq *acq, *bcq;
	struct ibv_qp *a, *b;
	struct ibv_mr *smr, *rmr, *amr;

	(void)state;
	at.pd = new_parent_domain(&A, new_td(&A));
	bt.pd = new_parent_domain(&B, NULL);
	acq = ibv_cq_ex_to_cq(new_cq_ex_in(&A, 64, IBV_WC_STANDARD_FLAGS, at.pd));
	bcq = new_cq(&B, 64, NULL, NULL);
	a = new_qp(&at, IBV_QPT_RC, acq, acq, NULL, 16, 16);
	b = new_qp(&B, IBV_QPT_RC, bcq, bcq, NULL, 16, 16);
	assert_ptr_equal(a->pd, at.pd);
	connect_rc(a, b, &conn_default);
	smr = new_mr(&A, 8, LW);          /* the PD's, used by the parent's QP */
	rmr = new_mr(&bt, 8, LW);         /* the parent's, used by the PD's QP */
	assert_ptr_equal(rmr->pd, bt.pd);
	send_and_check(a, acq, b, bcq, smr, rmr, 1000, MSGS);
	/* And the other way: a receive into the PD's memory on the parent's QP. */
	amr = new_mr(&A, 8, LW);
	send_and_check(b, bcq, a, acq, rmr, amr, 5000, MSGS);
	assert_int_equal(ibv_dealloc_pd(at.pd), EBUSY);
	assert_int_equal(ibv_dealloc_pd(bt.pd), EBUSY); /* rmr is on it */
}

struct turn {
	struct ibv_qp *a, *b;
	struct ibv_cq *acq, *bcq;
	struct ibv_mr *smr, *rmr;
	uint32_t base;
	uint32_t errors;
};

/* One thread's turn: the objects are used by it alone while it runs. */
static void *turn_main(void *arg)
{
	struct turn *t = arg;
	struct ibv_wc wc;

	for (uint32_t i = 0; i < MSGS; i++) {
		uint32_t v = t->base + i;
		uint64_t end = now_ms() + WAIT_MS;
		int got = 0;

		memcpy(t->smr->addr, &v, sizeof(v));
		if (post_recv(t->b, v, t->rmr->addr, 8, t->rmr->lkey) != 0 ||
		    post_send(t->a, IBV_WR_SEND, v, t->smr->addr, 8, t->smr->lkey,
			      IBV_SEND_SIGNALED) != 0) {
			t->errors++;
			return NULL;
		}
		for (int need = 2; need > 0 && now_ms() < end;) {
			got = ibv_poll_cq(t->acq, 1, &wc);
			if (got == 1 && (wc.status != IBV_WC_SUCCESS || wc.wr_id != v))
				t->errors++;
			need -= got > 0;
			got = ibv_poll_cq(t->bcq, 1, &wc);
			if (got == 1 && (wc.status != IBV_WC_SUCCESS || wc.wr_id != v ||
					 memcmp(t->rmr->addr, &v, sizeof(v)) != 0))
				t->errors++;
			need -= got > 0;
			if (need == 0)
				break;
		}
		if (now_ms() >= end) {
			t->errors++;
			return NULL;
		}
	}
	return NULL;
}

/* A thread domain promises one thread at a time, not always the same one: four
 * threads in turn post to and poll the same lock-free objects. */
static void thread_domain_objects_change_threads(void **state)
{
	struct side at = A, bt = B;
	struct turn t;

	(void)state;
	memset(&t, 0, sizeof(t));
	at.pd = new_parent_domain(&A, new_td(&A));
	bt.pd = new_parent_domain(&B, new_td(&B));
	t.acq = ibv_cq_ex_to_cq(new_cq_ex_in(&A, 64, IBV_WC_STANDARD_FLAGS, at.pd));
	t.bcq = ibv_cq_ex_to_cq(new_cq_ex_in(&B, 64, IBV_WC_STANDARD_FLAGS, bt.pd));
	t.a = new_qp(&at, IBV_QPT_RC, t.acq, t.acq, NULL, 16, 16);
	t.b = new_qp(&bt, IBV_QPT_RC, t.bcq, t.bcq, NULL, 16, 16);
	connect_rc(t.a, t.b, &conn_default);
	t.smr = new_mr(&at, 8, LW);
	t.rmr = new_mr(&bt, 8, LW);
	for (uint32_t k = 0; k < 4; k++) {
		pthread_t th;

		t.base = 100000 * (k + 1);
		assert_int_equal(pthread_create(&th, NULL, turn_main, &t), 0);
		assert_int_equal(pthread_join(th, NULL), 0);
		assert_int_equal(t.errors, 0);
	}
	expect_quiet(t.acq);
	expect_quiet(t.bcq);
}

/* An SRQ and a tag-matching SRQ under a thread domain: receives posted, a tag ADDed,
 * an eager message matched, and the ordinary receives taken in order. */
static void thread_domain_srqs(void **state)
{
	struct side bt = B;
	struct ibv_cq *acq, *bcq;
	struct ibv_cq_ex *tcq;
	struct ibv_srq *srq, *tsrq;
	struct ibv_qp *a, *b, *a2, *b2;
	struct ibv_mr *smr, *rmr;
	struct ibv_tmh *h;
	struct wc_ex wx;
	struct ibv_wc wc;

	(void)state;
	bt.pd = new_parent_domain(&B, new_td(&B));
	smr = new_mr(&A, 64, LW);
	rmr = new_mr(&bt, 64 * 16, LW);
	acq = new_cq(&A, 64, NULL, NULL);
	bcq = ibv_cq_ex_to_cq(new_cq_ex_in(&B, 64, IBV_WC_STANDARD_FLAGS, bt.pd));
	srq = new_srq(&bt, 16, 1);
	a = new_qp(&A, IBV_QPT_RC, acq, acq, NULL, 16, 0);
	b = new_qp(&bt, IBV_QPT_RC, bcq, bcq, srq, 16, 0);
	connect_rc(a, b, &conn_default);
	for (uint32_t i = 0; i < 8; i++)
		assert_int_equal(post_srq_recv(srq, 70 + i, (uint8_t *)rmr->addr + 64 * i, 64,
					       rmr->lkey), 0);
	for (uint32_t i = 0; i < 8; i++) {
		memset(smr->addr, (int)i + 1, 16);
		assert_int_equal(post_send(a, IBV_WR_SEND, i, smr->addr, 16, smr->lkey,
					   IBV_SEND_SIGNALED), 0);
		expect_send_ok(acq, i, IBV_WC_SEND);
		expect_wc(bcq, &wc);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.wr_id, 70 + i);
		assert_int_equal(((uint8_t *)rmr->addr)[64 * i], i + 1);
	}

	tcq = new_cq_ex_in(&B, 64, IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM |
				  IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP |
				  IBV_WC_EX_WITH_TM_INFO, bt.pd);
	tsrq = new_tm_srq(&bt, tcq, 16, 16, 16);
	a2 = new_qp(&A, IBV_QPT_RC, acq, acq, NULL, 16, 0);
	b2 = new_qp(&bt, IBV_QPT_RC, bcq, ibv_cq_ex_to_cq(tcq), tsrq, 0, 0);
	connect_rc(a2, b2, &conn_default);
	assert_int_equal(post_tag_add(tsrq, 11, 12, (uint8_t *)rmr->addr + 64 * 8, 64, rmr->lkey,
				      0x1234, UINT64_MAX, IBV_OPS_SIGNALED, 0, NULL), 0);
	expect_ex(tcq, &wx);
	assert_int_equal(wx.status, IBV_WC_SUCCESS);
	assert_int_equal(wx.opcode, IBV_WC_TM_ADD);
	h = smr->addr;
	memset(h, 0, sizeof(*h));
	h->opcode = IBV_TMH_EAGER;
	h->tag = htobe64(0x1234);
	memset(h + 1, 0xab, 8);
	assert_int_equal(post_send(a2, IBV_WR_SEND, 13, smr->addr, sizeof(*h) + 8, smr->lkey,
				   IBV_SEND_SIGNALED), 0);
	expect_send_ok(acq, 13, IBV_WC_SEND);
	expect_ex(tcq, &wx);
	assert_int_equal(wx.status, IBV_WC_SUCCESS);
	assert_int_equal(wx.opcode, IBV_WC_TM_RECV);
	assert_int_equal(wx.wr_id, 12);
	assert_int_equal(wx.byte_len, 8);
	assert_true(wx.wc_flags & IBV_WC_TM_MATCH);
	assert_int_equal(wx.tm.tag, 0x1234);
	assert_int_equal(((uint8_t *)rmr->addr)[64 * 8 + 7], 0xab);
}

/* An allocator that hands out zeroed pieces of one arena and counts by resource type. */
struct arena {
	uint8_t mem[1u << 16] __attribute__((aligned(64)));
	size_t used;
	bool refuse;
	unsigned int allocs[4], frees[4], bad;
};

static struct arena arena;

static void *arena_alloc(struct ibv_pd *pd, void *ctx, size_t size, size_t align, uint64_t type)
{
	struct arena *a = ctx;
	size_t at = (a->used + align - 1) & ~(align - 1);

	(void)pd;
	if (type >> 32 != 0 || (type & 0xffffffffu) == 0 || (type & 0xffffffffu) > 3 ||
	    align == 0 || (align & (align - 1)) != 0 || at + size > sizeof(a->mem)) {
		a->bad++;
		return NULL;
	}
	if (a->refuse)
		return NULL;
	a->allocs[type]++;
	a->used = at + size;
	memset(a->mem + at, 0, size);
	return a->mem + at;
}

static void arena_free(struct ibv_pd *pd, void *ctx, void *ptr, uint64_t type)
{
	struct arena *a = ctx;

	(void)pd;
	if ((uint8_t *)ptr < a->mem || (uint8_t *)ptr >= a->mem + sizeof(a->mem) || type > 3)
		a->bad++;
	else
		a->frees[type]++;
}

/* A parent domain's allocator gives the memory of each QP, CQ and SRQ made with it
 * (DPV_VERBS_RES_TYPE_*) and gets it back when the object goes; an allocator that
 * fails makes the creation fail with ENOMEM; IBV_ALLOCATOR_USE_DEFAULT is dpverbs' own
 * memory, never given to free(). */
static void parent_domain_allocators(void **state)
{
	struct ibv_parent_domain_init_attr pa = {
		.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
			     IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT,
		.alloc = arena_alloc, .free = arena_free, .pd_context = &arena,
	};
	struct ibv_srq_init_attr sa = {.attr = {.max_wr = 16, .max_sge = 1}};
	struct ibv_pd *parent, *dflt;
	struct ibv_cq *acq, *bcq;
	struct ibv_qp *a, *b;
	struct ibv_srq *srq;
	struct ibv_mr *smr, *rmr;

	(void)state;
	memset(&arena, 0, sizeof(arena));
	pa.pd = A.pd;
	parent = ibv_alloc_parent_domain(A.ctx, &pa);
	assert_non_null(parent);
	track_pd(parent); /* teardown deallocates it after the QP and CQ made below */
	acq = ibv_cq_ex_to_cq(new_cq_ex_in(&A, 64, IBV_WC_STANDARD_FLAGS, parent));
	srq = ibv_create_srq(parent, &sa);
	assert_non_null(srq);
	{
		struct side at = A;

		at.pd = parent;
		a = new_qp(&at, IBV_QPT_RC, acq, acq, NULL, 16, 16);
	}
	assert_int_equal(arena.bad, 0);
	assert_int_equal(arena.allocs[DPV_VERBS_RES_TYPE_QP], 1);
	assert_int_equal(arena.allocs[DPV_VERBS_RES_TYPE_CQ], 1);
	assert_int_equal(arena.allocs[DPV_VERBS_RES_TYPE_SRQ], 1);
	bcq = new_cq(&B, 64, NULL, NULL);
	b = new_qp(&B, IBV_QPT_RC, bcq, bcq, NULL, 16, 16);
	connect_rc(a, b, &conn_default);
	smr = new_mr(&A, 8, LW);
	rmr = new_mr(&B, 8, LW);
	send_and_check(a, acq, b, bcq, smr, rmr, 1, 50);
	send_and_check(b, bcq, a, acq, rmr, smr, 100, 50);
	assert_int_equal(ibv_destroy_srq(srq), 0);
	assert_int_equal(arena.frees[DPV_VERBS_RES_TYPE_SRQ], 1);

	arena.refuse = true;
	errno = 0;
	assert_null(ibv_create_srq(parent, &sa));
	assert_int_equal(errno, ENOMEM);
	arena.refuse = false;

	/* IBV_ALLOCATOR_USE_DEFAULT: dpverbs' own memory, free() never called for it. */
	pa.alloc = fake_alloc;
	pa.free = fake_free;
	dflt = ibv_alloc_parent_domain(A.ctx, &pa);
	assert_non_null(dflt);
	srq = ibv_create_srq(dflt, &sa);
	assert_non_null(srq);
	assert_int_equal(ibv_destroy_srq(srq), 0);
	assert_int_equal(ibv_dealloc_pd(dflt), 0);

	assert_int_equal(arena.bad, 0);
}

/* After teardown_objects() of the test above: the QP's and the CQ's memory came back. */
static int allocators_all_freed(void **state)
{
	int ret = teardown_objects(state);

	if (arena.frees[DPV_VERBS_RES_TYPE_QP] != 1 || arena.frees[DPV_VERBS_RES_TYPE_CQ] != 1 ||
	    arena.bad != 0) {
		fprintf(stderr, "allocator: QP frees %u, CQ frees %u, bad calls %u\n",
			arena.frees[DPV_VERBS_RES_TYPE_QP], arena.frees[DPV_VERBS_RES_TYPE_CQ],
			arena.bad);
		return -1;
	}
	return ret;
}

int run_td_tests(void)
{
	const struct CMUnitTest tests[] = {
		VT(td_and_parent_domain_errors),
		VT(cq_with_pd_needs_a_parent_domain),
		VT(parent_domain_objects_carry_traffic),
		VT(thread_domain_objects_change_threads),
		VT(thread_domain_srqs),
		cmocka_unit_test_teardown(parent_domain_allocators, allocators_all_freed),
	};

	return cmocka_run_group_tests_name("td", tests, NULL, NULL);
}
