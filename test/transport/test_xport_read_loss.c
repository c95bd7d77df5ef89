/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/transport, RDMA READ on a bad link and the retry counter (IBTA 9.7.5.2, 9.7.6.1):
 * a response lost in the middle of a long READ is asked for again alone at once, with
 * no timer; a re-ask lost too is the tail loss probe's; reordered responses are kept,
 * and neither they nor duplicates spend a retry; 1 MiB READs over a link losing 5 % and reordering 20 %
 * complete with every byte right and no retry exhausted, as do atomics there.
 */
#include <stdlib.h>
#include <string.h>

#include <rte_mbuf.h>

#include "xport_test.h"

#define MIB (1u << 20)

struct read_case {
	uint8_t *src, *back;
	uint32_t ks, kb;
	struct end a, b;
};

/* a on A reads from b on B: MIB bytes of B's, into A's buffer. */
static void read_case_open(struct read_case *t, uint32_t seed)
{
	t->src = malloc(MIB);
	t->back = calloc(1, MIB);
	assert_non_null(t->src);
	assert_non_null(t->back);
	fill_pattern(t->src, MIB, seed);
	t->ks = mr_reg(tb, t->src, MIB, DPV_ACCESS_REMOTE_READ);
	t->kb = mr_reg(ta, t->back, MIB, DPV_ACCESS_LOCAL_WRITE);
	rc_pair(&t->a, &t->b, false, NULL, NULL, 7);
	pump(200); /* what the case before still had in flight */
}

/* One READ of the whole buffer: it completes with success and every byte right. */
static void read_all(struct read_case *t, uint64_t wr_id)
{
	struct dpv_swqe w = swqe(DPV_WR_RDMA_READ, wr_id);

	memset(t->back, 0, MIB);
	w.remote_addr = (uintptr_t)t->src;
	w.rkey = t->ks;
	swqe_sge(&w, t->back, MIB, t->kb);
	exchange(&t->a, &t->b, &w, false);
	assert_memory_equal(t->back, t->src, MIB);
}

static void read_case_close(struct read_case *t)
{
	a_rx_hook = b_rx_hook = NULL;
	assert_int_equal(t->a.qp->attr.state, DPV_QPS_RTS);
	assert_int_equal(t->b.qp->attr.state, DPV_QPS_RTS);
	end_close(&t->a);
	end_close(&t->b);
	mr_dereg(tb, t->ks);
	mr_dereg(ta, t->kb);
	free(t->src);
	free(t->back);
}

/* The 100th middle response of a 1024-packet READ is lost: three later ones, out of
 * sequence, ask for the lost one again at once, and only once, however many of the
 * responses behind the loss arrive before the answer to it; the responder sends that
 * one again and nothing else (the responses behind it are kept). No timer runs out and
 * no retry is spent. */
static void lost_read_response_is_asked_again_at_once(void **state)
{
	struct dpv_xport_stats sa, sb;
	struct read_case t;
	struct dropper *d;

	(void)state;
	read_case_open(&t, 3);
	sa = stats(xa);
	sb = stats(xb);
	d = drop_next(true, DPV_OP_RC_READ_RESP_MIDDLE, 100);
	read_all(&t, 1);
	assert_int_equal(d->done, 1);
	assert_int_equal(DELTA(xa, retrans_read, sa), 1);
	assert_int_equal(DELTA(xa, ack_timeouts, sa), 0);
	assert_int_equal(DELTA(xa, retries_spent, sa), 0);
	assert_true(DELTA(xa, out_of_seq, sa) >= 1);
	/* the re-ask is a duplicate READ at B; a probe (a test process held off its
	 * core for a millisecond) would be one more */
	assert_int_equal(DELTA(xb, dup_requests, sb), 1 + DELTA(xa, retrans_probe, sa));
	if (DELTA(xa, retrans_probe, sa) == 0)
		assert_int_equal(DELTA(xb, tx_packets, sb), 1024 + 1);
	read_case_close(&t);
}

/* The same, and the re-ask lost as well: the responses behind the loss ask nothing
 * more (the gap is asked for already); the tail loss probe asks again, a millisecond
 * on, long before the ACK timer (268 ms here). */
static void lost_read_reask_is_recovered_by_the_probe(void **state)
{
	struct dpv_xport_stats sa;
	struct dropper *d, *d2;
	struct read_case t;

	(void)state;
	rc_timeout = 16;
	read_case_open(&t, 5);
	rc_timeout = 14;
	sa = stats(xa);
	d = drop_next(true, DPV_OP_RC_READ_RESP_MIDDLE, 100);
	d2 = drop_next(false, DPV_OP_RC_READ_REQUEST, 1); /* the first re-ask */
	read_all(&t, 2);
	assert_int_equal(d->done, 1);
	assert_int_equal(d2->done, 1);
	assert_int_equal(DELTA(xa, retrans_read, sa), 1);
	assert_true(DELTA(xa, retrans_probe, sa) >= 1);
	assert_int_equal(DELTA(xa, ack_timeouts, sa), 0);
	assert_int_equal(DELTA(xa, retries_spent, sa), 0);
	read_case_close(&t);
}

/* Responses (and requests) reordered and duplicated, none lost: responses that
 * overtook others are kept (those more than XP_RD_REORDER ahead ask the READ again,
 * as a loss would), duplicates are dropped and counted, and the retry counter is never
 * touched. */
static void reordered_and_duplicated_responses_spend_no_retry(void **state)
{
	struct dpv_xport_stats sa;
	struct read_case t;

	(void)state;
	read_case_open(&t, 7);
	sa = stats(xa);
	lossy_link(0, 50000, 100000, 11);
	for (uint64_t k = 0; k < 4; k++)
		read_all(&t, 10 + k);
	lossy_link(0, 0, 0, 0);
	assert_true(DELTA(xa, out_of_seq, sa) > 0);
	assert_true(DELTA(xa, dup_responses, sa) > 0);
	assert_int_equal(DELTA(xa, ack_timeouts, sa), 0);
	assert_int_equal(DELTA(xa, retries_spent, sa), 0);
	assert_int_equal(DELTA(xa, retry_exceeded, sa), 0);
	read_case_close(&t);
}

/* 5 % loss, 1 % duplication and 20 % reordering both ways, retry_cnt 7: 1 MiB READs
 * and atomics complete, every byte and every value right. Retries may be spent (a
 * re-ask and its probes all lost) but every one is given back by the progress after
 * it, and none runs out. */
static void reads_and_atomics_over_loss_and_reordering(void **state)
{
	uint64_t *word = calloc(1, sizeof(*word)), *orig = calloc(1, sizeof(*orig));
	uint32_t kw = mr_reg(tb, word, sizeof(*word), ACCESS_ALL | DPV_ACCESS_REMOTE_ATOMIC);
	uint32_t ko = mr_reg(ta, orig, sizeof(*orig), DPV_ACCESS_LOCAL_WRITE);
	struct dpv_xport_stats sa;
	struct read_case t;
	struct dpv_swqe w;

	(void)state;
	read_case_open(&t, 9);
	sa = stats(xa);
	lossy_link(50000, 10000, 200000, 13);
	for (uint64_t k = 0; k < 4; k++) {
		read_all(&t, 20 + k);
		for (uint64_t i = 0; i < 8; i++) {
			w = atomic_wqe(DPV_WR_ATOMIC_FETCH_ADD, 100 + 8 * k + i, word, kw, 1, 0,
				       orig, ko);
			exchange(&t.a, &t.b, &w, false);
			assert_int_equal(*orig, 8 * k + i);
		}
	}
	lossy_link(0, 0, 0, 0);
	assert_int_equal(*word, 32);
	assert_true(DELTA(xa, retrans_read, sa) > 0);
	assert_int_equal(DELTA(xa, retry_exceeded, sa), 0);
	/* every retry spent was given back by progress (the QP lives) */
	if (DELTA(xa, retries_spent, sa) > 0)
		assert_true(DELTA(xa, retry_resets, sa) >= 1);
	read_case_close(&t);
	mr_dereg(tb, kw);
	mr_dereg(ta, ko);
	free(word);
	free(orig);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(lost_read_response_is_asked_again_at_once),
		cmocka_unit_test(lost_read_reask_is_recovered_by_the_probe),
		cmocka_unit_test(reordered_and_duplicated_responses_spend_no_retry),
		cmocka_unit_test(reads_and_atomics_over_loss_and_reordering),
	};

	return XPORT_RUN_GROUP("transport_read_loss", tests, argc, argv) ? 1 : 0;
}
