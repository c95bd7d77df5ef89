/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the verbs tests share: the two devices of one ring pair (dpv0 and dpv1, "A" and
 * "B"), objects created per test and destroyed by the test's teardown (also when an
 * assertion ends the test early), QPs of every type connected (verbs_connect.h), and
 * polling bounded in time so a bug fails a test instead of hanging it. Only <infiniband/verbs.h> is used, and
 * dpverbs' counters (dpv_verbs.h) where a test reads them.
 */
#ifndef VERBS_TEST_H
#define VERBS_TEST_H

#include <endian.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <infiniband/verbs.h>

#include "helpers.h"
#include "verbs_connect.h"

/* How long a test waits for something that must happen. */
#define WAIT_MS 2000u
/* How long a test watches for something that must not happen. */
#define QUIET_MS 50u

/* The path MTU tests connect with (the active MTU of a ring-pair port, and the one
 * struct conn_opts defaults to). */
#define TEST_MTU IBV_MTU_1024
#define TEST_MTU_BYTES 1024u

/* A device under test and what the tests keep open on it. */
struct side {
	const char *name;
	struct ibv_device *dev;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	union ibv_gid gid;
	uint32_t ipv4;            /* host order, from DPV_PORT_IPV4 */
	struct ibv_cq *idle_cq;   /* never has completions: polling it only drives devices */
};

extern struct side A, B;
extern struct ibv_device **dev_list;
extern int dev_count;

/* Remote READ and WRITE allowed, RNR retried for ever after 10 us, 67 ms of ACK timeout
 * retried 7 times, 16 READs and atomics each way. */
extern const struct conn_opts conn_default;

/* ---- the two devices ---- */

/*
 * Take the addresses of A and B from @p ipv4 ("a.b.c.d,e.f.g.h", DPV_PORT_IPV4), list
 * the devices (two: one ring pair) and open dpv0 as A and dpv1 as B, each with a PD,
 * an idle CQ and its GID 0. False, with the reason on stderr, when any step fails;
 * sides_close() undoes whatever was done either way.
 */
bool sides_open(const char *ipv4);
void sides_close(void);
/*
 * The settings of a one-process test on one ring pair, each unless the environment has
 * it already: EAL on cores @p cores ("0", "0,1"), --no-huge, one ring pair, addresses
 * 127.0.20.1 and 127.0.20.2.
 */
void sides_env_defaults(const char *cores);
/* Whether the devices run through the faults port (DPV_FAULTS set and not empty): a
 * test program then runs its group for a lossy link. */
bool faults_on(void);
/* Open the sides, run cmocka group @p name of @p n tests, close them: 0 when all pass. */
int sides_run_group(const char *name, const struct CMUnitTest *tests, size_t n);
#define SIDES_RUN_GROUP(name, tests)                                                        \
	sides_run_group(name, tests, sizeof(tests) / sizeof(tests[0]))

/* ---- objects destroyed by teardown_objects(), newest first ---- */

void *new_buf(size_t len);
struct ibv_mr *new_mr(struct side *s, size_t len, unsigned int access);
/* A memory window of the side's PD (ibv_alloc_mw(3)); deallocated before the regions
 * made before it, so a window still bound never keeps one registered. */
struct ibv_mw *new_mw(struct side *s, enum ibv_mw_type type);
struct ibv_cq *new_cq(struct side *s, int cqe, struct ibv_comp_channel *ch, void *cq_context);
struct ibv_cq_ex *new_cq_ex(struct side *s, uint32_t cqe, uint64_t wc_flags);
/* The same made with a parent domain (IBV_CQ_INIT_ATTR_MASK_PD), or none: NULL. */
struct ibv_cq_ex *new_cq_ex_in(struct side *s, uint32_t cqe, uint64_t wc_flags,
			       struct ibv_pd *parent_domain);
struct ibv_comp_channel *new_channel(struct side *s);
/* A thread domain (ibv_alloc_td(3)); a parent domain over the side's PD with @p td
 * (or none: NULL), ibv_alloc_parent_domain(3). Objects made with it after it are
 * destroyed before it. */
struct ibv_td *new_td(struct side *s);
struct ibv_pd *new_parent_domain(struct side *s, struct ibv_td *td);
struct ibv_srq *new_srq(struct side *s, uint32_t max_wr, uint32_t max_sge);
struct ibv_srq *new_tm_srq(struct side *s, struct ibv_cq_ex *cq, uint32_t max_wr,
			   uint32_t max_num_tags, uint32_t max_ops);
struct ibv_qp *new_qp(struct side *s, enum ibv_qp_type type, struct ibv_cq *send_cq,
		      struct ibv_cq *recv_cq, struct ibv_srq *srq, uint32_t max_send_wr,
		      uint32_t max_recv_wr);
struct ibv_ah *new_ah(struct side *s, const struct side *to);
/* A QP of the extended send API (ibv_wr_post(3)) offering @p send_ops (IBV_QP_EX_WITH_*),
 * its send and receive CQ @p cq, as new_qp() makes one otherwise. */
struct ibv_qp_ex *new_qp_ex(struct side *s, enum ibv_qp_type type, struct ibv_cq *cq,
			    uint32_t max_send_wr, uint64_t send_ops);
/* XRC (doc/guides/srq.md §7): a private XRC domain (no file), an XRC SRQ in it
 * completing into @p cq (one SGE per WR), an initiator QP sending from @p cq, and a
 * target QP of @p xrcd. Each closed or destroyed in its turn. */
struct ibv_xrcd *new_xrcd(struct side *s);
struct ibv_srq *new_xrc_srq(struct side *s, struct ibv_xrcd *xrcd, struct ibv_cq *cq,
			    uint32_t max_wr);
struct ibv_qp *new_xrc_ini(struct side *s, struct ibv_cq *cq, uint32_t max_send_wr);
struct ibv_qp *new_xrc_tgt(struct side *s, struct ibv_xrcd *xrcd);
/* Track an object a test created itself, so teardown destroys it. */
void track_srq(struct ibv_srq *srq);
/* A PD or parent domain, deallocated in its turn. */
void track_pd(struct ibv_pd *pd);

/* cmocka teardown of every test: destroys what the test created. */
int teardown_objects(void **state);

/* ---- connections ---- */

struct side *side_of(struct ibv_qp *qp);
/* The first PSN a QP of side @p s sends: each side starts just below the 24-bit wrap,
 * so multi-packet messages cross it. */
uint32_t psn_of(const struct side *s);
/* Take RC QP @p qp to RTS towards @p peer (on either side) with @p o. */
void rc_to_rts(struct ibv_qp *qp, struct ibv_qp *peer, const struct conn_opts *o);
/* The same, sending from @p sq_psn and expecting @p rq_psn first. */
void rc_to_rts_at(struct ibv_qp *qp, struct ibv_qp *peer, const struct conn_opts *o,
		  uint32_t sq_psn, uint32_t rq_psn);
/* Take @p qa and @p qb (on either side) to RTS, connected to each other. */
void connect_rc(struct ibv_qp *qa, struct ibv_qp *qb, const struct conn_opts *o);
/* Take UC QPs @p qa and @p qb to RTS, connected, each letting the other do @p access
 * (IBV_ACCESS_REMOTE_WRITE or 0). */
void connect_uc(struct ibv_qp *qa, struct ibv_qp *qb, unsigned int access);
/* Take a UD QP to RTS with Q_Key @p qkey. */
void ud_to_rts(struct ibv_qp *qp, uint32_t qkey);
/* Two connected RC QPs, one on A and one on B, each with its own CQ and RQ. */
struct rc_pair {
	struct ibv_cq *acq, *bcq;
	struct ibv_qp *a, *b;
};

void rc_pair(struct rc_pair *p, const struct conn_opts *o);
/* Move a QP to ERR. */
void qp_to_err(struct ibv_qp *qp);
/* Its state, as ibv_query_qp() reports it. */
enum ibv_qp_state qp_state_of(struct ibv_qp *qp);

/* ---- posting ---- */

int post_send(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id, const void *addr,
	      uint32_t len, uint32_t lkey, unsigned int flags);
int post_rdma(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id, const void *addr,
	      uint32_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey);
int post_send_imm(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id, const void *addr,
		  uint32_t len, uint32_t lkey, uint32_t imm_host, uint64_t raddr, uint32_t rkey);
/* An atomic of @p op on the 8 bytes at @p raddr, the value before into @p local. */
int post_atomic(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id, uint64_t *local,
		uint32_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey, uint64_t compare_add,
		uint64_t swap, unsigned int flags);
int post_recv(struct ibv_qp *qp, uint64_t wr_id, void *addr, uint32_t len, uint32_t lkey);
int post_srq_recv(struct ibv_srq *srq, uint64_t wr_id, void *addr, uint32_t len, uint32_t lkey);
/* One IBV_WR_TAG_ADD on a TM SRQ: a receive of one SGE for @p tag under @p mask,
 * @p flags IBV_OPS_*, @p unexpected_cnt for IBV_OPS_TM_SYNC. Returns ibv_post_srq_ops()'s
 * value; on 0 the tag's handle is in *@p handle (when not NULL), on an error the op is
 * its bad_op (asserted). */
int post_tag_add(struct ibv_srq *srq, uint64_t wr_id, uint64_t recv_wr_id, void *addr,
		 uint32_t len, uint32_t lkey, uint64_t tag, uint64_t mask, unsigned int flags,
		 uint32_t unexpected_cnt, uint32_t *handle);

/* ---- polling ---- */

/* Drive the devices once without taking a completion. */
void progress(void);
/* Poll until @p n completions or WAIT_MS; returns how many. */
int poll_wc(struct ibv_cq *cq, struct ibv_wc *wc, int n);
/* Exactly one completion must come. */
void expect_wc(struct ibv_cq *cq, struct ibv_wc *wc);
/* No completion may come within QUIET_MS. */
void expect_quiet(struct ibv_cq *cq);
/* The one successful completion of a send-side WR. */
void expect_send_ok(struct ibv_cq *cq, uint64_t wr_id, enum ibv_wc_opcode opcode);

/* A completion read through ibv_start_poll / ibv_next_poll / ibv_end_poll. */
struct wc_ex {
	uint64_t wr_id;
	enum ibv_wc_status status;
	enum ibv_wc_opcode opcode;
	unsigned int wc_flags;
	uint32_t byte_len;
	uint32_t qp_num;
	uint32_t src_qp;
	struct ibv_wc_tm_info tm;
};

/* The completion an extended CQ's poll is at. */
void read_ex(struct ibv_cq_ex *cq, struct wc_ex *w);
/* Poll an extended CQ until @p n completions or WAIT_MS; returns how many. */
int poll_ex(struct ibv_cq_ex *cq, struct wc_ex *wc, int n);
void expect_ex(struct ibv_cq_ex *cq, struct wc_ex *wc);
void expect_quiet_ex(struct ibv_cq_ex *cq);

/* Wait for an async event of @p ctx (driving the devices meanwhile); false on timeout. */
bool wait_async_event(struct ibv_context *ctx, struct ibv_async_event *ev, unsigned int ms);

/* The value of counter @p name of a device (dpv_verbs_query_xstats()) or of a QP
 * (dpv_verbs_query_qp_xstats()); a name that is not there fails the test. */
uint64_t dev_xstat(struct ibv_context *ctx, const char *name);
uint64_t qp_xstat(struct ibv_qp *qp, const char *name);

/* A test that destroys what it created, whatever happens. */
#define VT(f) cmocka_unit_test_teardown(f, teardown_objects)

#endif /* VERBS_TEST_H */
