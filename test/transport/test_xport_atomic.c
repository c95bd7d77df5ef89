/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/transport, atomics (IBTA 9.4.5): the value before, the replay cache, key, access,
 * range and alignment checks, applied once over a lossy link; and the atomic write of
 * IBTA 1.5, whose duplicates are answered again and never stored again.
 */
#include <stdlib.h>

#include "xport_test.h"

/* Compare-and-swap that matches and one that does not, fetch-and-add, and 40
 * fetch-and-adds in flight at once (16 at a time, max_rd_atomic): each gets the value
 * before it, in order, and the memory ends with every one applied once. */
static void atomics_cmp_swap_and_fetch_add_return_the_value_before(void **state)
{
	uint64_t *remote = calloc(2, sizeof(*remote)), *local = calloc(41, sizeof(*local));
	uint32_t kr = mr_reg(tb, remote, 2 * sizeof(*remote),
			     DPV_ACCESS_LOCAL_WRITE | DPV_ACCESS_REMOTE_ATOMIC);
	uint32_t kl = mr_reg(ta, local, 41 * sizeof(*local), DPV_ACCESS_LOCAL_WRITE);
	struct dpv_xport_stats sa = stats(xa), sb = stats(xb);
	struct dpv_cqe c[40];
	struct dpv_swqe w;
	struct end a, b;

	(void)state;
	rc_pair(&a, &b, false, NULL, NULL, 7);
	remote[0] = 0x1122334455667788ULL;
	w = atomic_wqe(DPV_WR_ATOMIC_CMP_SWP, 1, remote, kr, 0x1122334455667788ULL,
		       0xa5a5a5a5a5a5a5a5ULL, &local[0], kl);
	post_send(a.qp, &w);
	w = atomic_wqe(DPV_WR_ATOMIC_CMP_SWP, 2, remote, kr, 0x1122334455667788ULL, 7,
		       &local[1], kl);
	post_send(a.qp, &w);
	w = atomic_wqe(DPV_WR_ATOMIC_FETCH_ADD, 3, remote, kr, 0x5a5a5a5a5a5a5a5bULL, 0,
		       &local[2], kl);
	post_send(a.qp, &w);
	assert_int_equal(poll_n(a.scq, c, 3), 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(c[i].wr_id, (uint64_t)i + 1);
		assert_int_equal(c[i].status, DPV_WC_SUCCESS);
		assert_int_equal(c[i].byte_len, 8);
	}
	assert_int_equal(c[0].opcode, DPV_WC_COMP_SWAP);
	assert_int_equal(c[2].opcode, DPV_WC_FETCH_ADD);
	/* matched and swapped; then no match: the value stays, the one found comes back */
	assert_true(local[0] == 0x1122334455667788ULL);
	assert_true(local[1] == 0xa5a5a5a5a5a5a5a5ULL);
	assert_true(local[2] == 0xa5a5a5a5a5a5a5a5ULL);
	assert_true(remote[0] == 0xa5a5a5a5a5a5a5a5ULL + 0x5a5a5a5a5a5a5a5bULL); /* wraps to 0 */
	assert_true(remote[1] == 0);

	for (uint64_t i = 0; i < 40; i++) {
		w = atomic_wqe(DPV_WR_ATOMIC_FETCH_ADD, 100 + i, &remote[1], kr, i + 1, 0,
			       &local[1 + i], kl);
		post_send(a.qp, &w);
		if (i == 30)
			assert_int_equal(poll_n(a.scq, c, 31), 31);
	}
	assert_int_equal(poll_n(a.scq, c + 31, 9), 9);
	for (uint64_t i = 0, sum = 0; i < 40; sum += ++i) {
		assert_int_equal(c[i].wr_id, 100 + i);
		assert_int_equal(c[i].status, DPV_WC_SUCCESS);
		assert_true(local[1 + i] == sum);
	}
	assert_true(remote[1] == 40 * 41 / 2);
	/* The link loses nothing: a duplicate can only be a request the requester sent
	 * again (a tail loss probe, when this process was slow), answered from the cache. */
	assert_true(DELTA(xb, atomic_replays, sb) <= DELTA(xa, retrans_packets, sa));
	end_close(&a);
	end_close(&b);
	/* on one device, through its loopback */
	rc_pair(&a, &b, true, NULL, NULL, 7);
	kr = mr_reg(ta, remote, sizeof(*remote), DPV_ACCESS_LOCAL_WRITE | DPV_ACCESS_REMOTE_ATOMIC);
	remote[0] = 41;
	w = atomic_wqe(DPV_WR_ATOMIC_FETCH_ADD, 5, remote, kr, 1, 0, &local[0], kl);
	post_send(a.qp, &w);
	assert_int_equal(poll_n(a.scq, c, 1), 1);
	assert_int_equal(c[0].status, DPV_WC_SUCCESS);
	assert_true(local[0] == 41 && remote[0] == 42);
	end_close(&a);
	end_close(&b);
	mr_dereg(ta, kr);
	mr_dereg(ta, kl);
	free(remote);
	free(local);
}

/* A duplicate atomic request (its acknowledgement lost, or the request repeated on the
 * link) is answered with the result it had, from the responder's replay cache: the
 * memory sees it once. */
static void duplicate_atomic_is_answered_from_the_replay_cache(void **state)
{
	uint64_t *remote = calloc(1, sizeof(*remote)), *local = calloc(2, sizeof(*local));
	uint32_t kr = mr_reg(tb, remote, sizeof(*remote),
			     DPV_ACCESS_LOCAL_WRITE | DPV_ACCESS_REMOTE_ATOMIC);
	uint32_t kl = mr_reg(ta, local, 2 * sizeof(*local), DPV_ACCESS_LOCAL_WRITE);
	struct dpv_xport_stats sa, sb;
	struct dropper *d;
	struct dpv_cqe c;
	struct dpv_swqe w;
	struct end a, b;

	(void)state;
	rc_timeout = 10;
	rc_pair(&a, &b, false, NULL, NULL, 7);
	rc_timeout = 14;
	*remote = 100;
	/* the request again, after its result came back */
	hook_saved = NULL;
	hook_dup_opcode = DPV_OP_RC_FETCH_ADD;
	b_rx_hook = keep_a_copy;
	w = atomic_wqe(DPV_WR_ATOMIC_FETCH_ADD, 1, remote, kr, 5, 0, &local[0], kl);
	post_send(a.qp, &w);
	assert_int_equal(poll_n(a.scq, &c, 1), 1);
	b_rx_hook = NULL;
	assert_int_equal(c.status, DPV_WC_SUCCESS);
	assert_true(local[0] == 100 && *remote == 105);
	assert_non_null(hook_saved);
	sa = stats(xa);
	sb = stats(xb);
	dpv_xport_rx(xb, &hook_saved, 1);
	pump(10);
	assert_int_equal(DELTA(xb, atomic_replays, sb), 1);
	assert_int_equal(DELTA(xb, dup_requests, sb), 1);
	assert_int_equal(DELTA(xa, dup_responses, sa), 1);
	assert_true(*remote == 105);
	assert_int_equal(cq_left(a.scq), 0);
	/* its acknowledgement lost: the requester asks again and gets the first result */
	sa = stats(xa);
	sb = stats(xb);
	d = drop_next(true, DPV_OP_RC_ATOMIC_ACK, 0);
	w = atomic_wqe(DPV_WR_ATOMIC_FETCH_ADD, 2, remote, kr, 5, 0, &local[1], kl);
	post_send(a.qp, &w);
	assert_int_equal(poll_n(a.scq, &c, 1), 1);
	a_rx_hook = NULL;
	assert_int_equal(d->done, 1);
	assert_int_equal(c.wr_id, 2);
	assert_int_equal(c.status, DPV_WC_SUCCESS);
	assert_true(local[1] == 105 && *remote == 110);
	/* one resend at least (a slow run may probe twice before the answer is in) */
	assert_true(DELTA(xb, atomic_replays, sb) >= 1);
	assert_true(DELTA(xb, atomic_replays, sb) <= DELTA(xa, retrans_packets, sa));
	assert_int_equal(DELTA(xb, dup_atomics_dropped, sb), 0);
	assert_int_equal(a.qp->attr.state, DPV_QPS_RTS);
	assert_int_equal(b.qp->attr.state, DPV_QPS_RTS);
	end_close(&a);
	end_close(&b);
	mr_dereg(tb, kr);
	mr_dereg(ta, kl);
	free(remote);
	free(local);
}

/* An atomic write of @p val to @p remote. */
static struct dpv_swqe atomic_write_wqe(uint64_t wr_id, uint64_t *remote, uint32_t rkey,
					uint64_t val)
{
	struct dpv_swqe w = swqe(DPV_WR_ATOMIC_WRITE, wr_id);

	w.remote_addr = (uintptr_t)remote;
	w.rkey = rkey;
	w.swap = val;
	return w;
}

/* IBTA 1.5: an atomic write completes with its RDMA READ response of no data; the same
 * request again (the link copied it) after the program stored its own value in the
 * word is answered again from the replay cache and not stored again, which would undo
 * that store; its answer lost, the requester asks again and the word has the value
 * once. A responder that takes no READ or atomic refuses it as an invalid request. */
static void duplicate_atomic_write_is_answered_not_stored_again(void **state)
{
	uint64_t *remote = calloc(1, sizeof(*remote));
	uint32_t kr = mr_reg(tb, remote, sizeof(*remote),
			     DPV_ACCESS_LOCAL_WRITE | DPV_ACCESS_REMOTE_WRITE);
	struct dpv_xport_stats sa, sb;
	struct dropper *d;
	struct dpv_cqe c;
	struct dpv_swqe w;
	struct end a, b;

	(void)state;
	rc_timeout = 10;
	rc_pair(&a, &b, false, NULL, NULL, 7);
	rc_timeout = 14;
	hook_saved = NULL;
	hook_dup_opcode = DPV_OP_RC_ATOMIC_WRITE;
	b_rx_hook = keep_a_copy;
	w = atomic_write_wqe(1, remote, kr, 0x0102030405060708ULL);
	post_send(a.qp, &w);
	assert_int_equal(poll_n(a.scq, &c, 1), 1);
	b_rx_hook = NULL;
	assert_int_equal(c.status, DPV_WC_SUCCESS);
	assert_int_equal(c.opcode, DPV_WC_ATOMIC_WRITE);
	assert_true(*remote == 0x0102030405060708ULL);
	assert_non_null(hook_saved);
	*remote = 999;
	sa = stats(xa);
	sb = stats(xb);
	dpv_xport_rx(xb, &hook_saved, 1);
	pump(10);
	assert_int_equal(DELTA(xb, atomic_replays, sb), 1);
	assert_int_equal(DELTA(xb, dup_requests, sb), 1);
	assert_int_equal(DELTA(xa, dup_responses, sa), 1);
	assert_true(*remote == 999);
	assert_int_equal(cq_left(a.scq), 0);
	/* its answer lost: asked again, answered from the cache */
	sa = stats(xa);
	sb = stats(xb);
	d = drop_next(true, DPV_OP_RC_READ_RESP_ONLY, 0);
	w = atomic_write_wqe(2, remote, kr, 7);
	post_send(a.qp, &w);
	assert_int_equal(poll_n(a.scq, &c, 1), 1);
	a_rx_hook = NULL;
	assert_int_equal(d->done, 1);
	assert_int_equal(c.wr_id, 2);
	assert_int_equal(c.status, DPV_WC_SUCCESS);
	assert_true(*remote == 7);
	assert_true(DELTA(xb, atomic_replays, sb) >= 1);
	assert_int_equal(DELTA(xb, dup_atomics_dropped, sb), 0);
	assert_int_equal(a.qp->attr.state, DPV_QPS_RTS);
	assert_int_equal(b.qp->attr.state, DPV_QPS_RTS);
	end_close(&a);
	end_close(&b);
	rc_max_dest_rd = 0;
	rc_pair(&a, &b, false, NULL, NULL, 7);
	rc_max_dest_rd = DPV_MAX_RD_ATOMIC;
	w = atomic_write_wqe(3, remote, kr, 8);
	post_send(a.qp, &w);
	assert_int_equal(poll_n(a.scq, &c, 1), 1);
	assert_int_equal(c.status, DPV_WC_REM_INV_REQ_ERR);
	assert_true(*remote == 7);
	end_close(&a);
	end_close(&b);
	mr_dereg(tb, kr);
	free(remote);
}

/* One atomic on a fresh connection: its completion status at the requester. The
 * responder's end is left in @p b for the caller to look at and close. */
static uint8_t atomic_status(uint64_t *remote, uint32_t rkey, uint64_t *local, uint32_t lkey,
			     struct end *b)
{
	struct dpv_swqe w = atomic_wqe(DPV_WR_ATOMIC_CMP_SWP, 1, remote, rkey, 0, 1, local, lkey);
	struct dpv_cqe c;
	struct end a;

	rc_pair(&a, b, false, NULL, NULL, 7);
	post_send(a.qp, &w);
	assert_int_equal(poll_n(a.scq, &c, 1), 1);
	if (c.status != DPV_WC_SUCCESS)
		assert_int_equal(a.qp->attr.state, DPV_QPS_ERR);
	end_close(&a);
	return c.status;
}

/* IBTA 9.4.5 / 10.6: the responder checks the R_Key, the region's and the QP's remote
 * atomic right, the range and the alignment; the requester its own 8-byte buffer. */
static void atomic_key_access_range_and_alignment_are_checked(void **state)
{
	uint64_t *remote = calloc(4, sizeof(*remote)), *local = calloc(1, sizeof(*local));
	const uint32_t ra = DPV_ACCESS_LOCAL_WRITE | DPV_ACCESS_REMOTE_ATOMIC;
	uint32_t kr = mr_reg(tb, remote, 2 * sizeof(*remote), ra);
	uint32_t krw = mr_reg(tb, remote, 2 * sizeof(*remote),
			      DPV_ACCESS_LOCAL_WRITE | DPV_ACCESS_REMOTE_WRITE);
	uint32_t kl = mr_reg(ta, local, sizeof(*local), DPV_ACCESS_LOCAL_WRITE);
	uint32_t kro = mr_reg(ta, local, sizeof(*local), 0);
	uint64_t errs = stats(xb).access_errors;
	struct end b;

	(void)state;
	assert_int_equal(atomic_status(remote, kr, local, kl, &b), DPV_WC_SUCCESS);
	end_close(&b);
	assert_true(remote[0] == 1);
	/* a key whose region has no remote atomic right */
	assert_int_equal(atomic_status(remote, krw, local, kl, &b), DPV_WC_REM_ACCESS_ERR);
	assert_int_equal(b.qp->attr.state, DPV_QPS_ERR);
	assert_int_equal(b.fatal, 1);
	end_close(&b);
	/* no such key */
	assert_int_equal(atomic_status(remote, kr ^ 0x100, local, kl, &b), DPV_WC_REM_ACCESS_ERR);
	end_close(&b);
	/* past the region's end */
	assert_int_equal(atomic_status(remote + 2, kr, local, kl, &b), DPV_WC_REM_ACCESS_ERR);
	end_close(&b);
	assert_int_equal(stats(xb).access_errors, errs + 3);
	/* a QP that does not let its peer do atomics */
	rc_qp_access = ACCESS_ALL;
	assert_int_equal(atomic_status(remote, kr, local, kl, &b), DPV_WC_REM_ACCESS_ERR);
	rc_qp_access = ACCESS_ALL | DPV_ACCESS_REMOTE_ATOMIC;
	end_close(&b);
	/* not 8-byte aligned: an invalid request */
	assert_int_equal(atomic_status((uint64_t *)((uint8_t *)remote + 4), kr, local, kl, &b),
			 DPV_WC_REM_INV_REQ_ERR);
	assert_int_equal(b.qp->attr.state, DPV_QPS_ERR);
	end_close(&b);
	/* a responder that takes no READ or atomic */
	rc_max_dest_rd = 0;
	assert_int_equal(atomic_status(remote, kr, local, kl, &b), DPV_WC_REM_INV_REQ_ERR);
	rc_max_dest_rd = DPV_MAX_RD_ATOMIC;
	end_close(&b);
	/* the local buffer without local write: nothing is sent */
	errs = stats(xb).qps.rx_packets;
	assert_int_equal(atomic_status(remote, kr, local, kro, &b), DPV_WC_LOC_PROT_ERR);
	end_close(&b);
	assert_int_equal(stats(xb).qps.rx_packets, errs);
	assert_true(remote[0] == 1);
	mr_dereg(tb, kr);
	mr_dereg(tb, krw);
	mr_dereg(ta, kl);
	mr_dereg(ta, kro);
	free(remote);
	free(local);
}

/* Atomics, READs and SENDs over a link that loses 2 %, duplicates 1 % and reorders 1 %
 * of the frames: every fetch-and-add is applied once and returns the sum before it. */
static void atomics_over_a_lossy_link_apply_once(void **state)
{
	const uint64_t n = 300;
	uint64_t *remote = calloc(1, sizeof(*remote)), *local = calloc(n, sizeof(*local));
	uint8_t *buf = calloc(1, 4096), *back = calloc(1, 4096);
	uint32_t kr = mr_reg(tb, remote, sizeof(*remote),
			     DPV_ACCESS_LOCAL_WRITE | DPV_ACCESS_REMOTE_ATOMIC);
	uint32_t kl = mr_reg(ta, local, n * sizeof(*local), DPV_ACCESS_LOCAL_WRITE);
	uint32_t kbuf = mr_reg(tb, buf, 4096, ACCESS_ALL);
	uint32_t kback = mr_reg(ta, back, 4096, DPV_ACCESS_LOCAL_WRITE);
	struct dpv_xport_stats sa = stats(xa), sb = stats(xb);
	struct dpv_cqe c[32];
	uint64_t done = 0, sum = 0, posted = 0;
	struct dpv_swqe w;
	struct end a, b;

	(void)state;
	fill_pattern(buf, 4096, 5);
	rc_timeout = 10;
	rc_pair(&a, &b, false, NULL, NULL, 7);
	rc_timeout = 14;
	lossy_link(20000, 10000, 10000, 31);
	while (done < n) {
		int got;

		/* at most 32 WQEs in flight; every tenth one a READ */
		while (posted < n && posted - done < 32) {
			if (posted % 10 == 9) {
				w = swqe(DPV_WR_RDMA_READ, posted);
				w.remote_addr = (uintptr_t)buf;
				w.rkey = kbuf;
				swqe_sge(&w, back, 4096, kback);
			} else {
				w = atomic_wqe(DPV_WR_ATOMIC_FETCH_ADD, posted, remote, kr,
					       posted + 1, 0, &local[posted], kl);
			}
			post_send(a.qp, &w);
			posted++;
		}
		got = poll_n(a.scq, c, 1);
		assert_int_equal(got, 1);
		assert_int_equal(c[0].status, DPV_WC_SUCCESS);
		assert_int_equal(c[0].wr_id, done);
		if (done % 10 != 9) {
			assert_true(local[done] == sum);
			sum += done + 1;
		} else {
			assert_memory_equal(back, buf, 4096);
		}
		done++;
	}
	lossy_link(0, 0, 0, 0);
	assert_true(*remote == sum);
	assert_true(DELTA(xa, retrans_packets, sa) > 0);
	assert_true(DELTA(xb, dup_requests, sb) > 0);
	assert_true(DELTA(xb, atomic_replays, sb) > 0);
	assert_int_equal(DELTA(xa, retry_exceeded, sa), 0);
	end_close(&a);
	end_close(&b);
	mr_dereg(tb, kr);
	mr_dereg(ta, kl);
	mr_dereg(tb, kbuf);
	mr_dereg(ta, kback);
	free(remote);
	free(local);
	free(buf);
	free(back);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(atomics_cmp_swap_and_fetch_add_return_the_value_before),
		cmocka_unit_test(atomic_key_access_range_and_alignment_are_checked),
		cmocka_unit_test(atomics_over_a_lossy_link_apply_once),
		cmocka_unit_test(duplicate_atomic_write_is_answered_not_stored_again),
		/* Last: with a 4 ms ACK timeout it counts exactly one replay, and the first run
		 * of a code path under valgrind can outlast that timeout. */
		cmocka_unit_test(duplicate_atomic_is_answered_from_the_replay_cache),
	};

	return XPORT_RUN_GROUP("transport_atomic", tests, argc, argv) ? 1 : 0;
}
