/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the tests of lib/transport share: two transport devices A and B on the two ports
 * of a ring pair (ports.h), driven by a pump loop of dpv_xport_tx / rx / tick that lets
 * a test look at every frame a device receives; QP ends of every type taken to RTS;
 * WQEs written into the rings as lib/verbs does; memory regions; frame hooks that lose,
 * duplicate, reorder or keep frames. Each test program is one cmocka group whose set-up
 * and teardown (xport_run_group()) open and close the devices; EAL arguments come from
 * the command line (meson passes the memory mode).
 */
#ifndef XPORT_TEST_H
#define XPORT_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "dpv_xport.h"
#include "helpers.h"

#define PD 1u
/* Every connection starts just below the 24-bit PSN wrap, so every test crosses it. */
#define PSN0 0xffff00u
#define MTU_1024 3u
#define ACCESS_ALL (DPV_ACCESS_LOCAL_WRITE | DPV_ACCESS_REMOTE_WRITE | DPV_ACCESS_REMOTE_READ)
/* Pump rounds poll_n() takes at least before it gives up. */
#define ROUNDS 20000
/* And milliseconds (recovery from loss waits for ACK timers). */
#define POLL_MS 5000

extern struct dpv_port pa, pb;
extern struct dpv_xport *xa, *xb;
extern struct dpv_mr_table *ta, *tb;

/* Run cmocka group @p name of @p n tests between devices_up() and devices_down(), EAL
 * taking @p argc and @p argv. 0 when every test passed. */
int xport_run_group(const char *name, const struct CMUnitTest *tests, size_t n, int argc,
		    char **argv);
#define XPORT_RUN_GROUP(name, tests, argc, argv)                                            \
	xport_run_group(name, tests, sizeof(tests) / sizeof(tests[0]), argc, argv)

/* ---- the pump ---- */

/* A test may look at every frame device A or B receives: drop it (false), or keep it. */
extern bool (*a_rx_hook)(struct rte_mbuf *m);
extern bool (*b_rx_hook)(struct rte_mbuf *m);

/* Receive what @p port has for @p x, through the device's hook. */
void pump_port(struct dpv_port *port, struct dpv_xport *x);
/* Transmit, receive and tick both devices once. */
void pump_once(void);
void pump(int rounds);
/* Pump until @p want completions are read from @p cq, or ROUNDS rounds and POLL_MS
 * have gone; returns how many. */
int poll_n(struct dpv_cq *cq, struct dpv_cqe *out, int want);
/* Pump a little, then the completions left in @p cq (16 at most). */
int cq_left(struct dpv_cq *cq);
struct dpv_xport_stats stats(struct dpv_xport *x);
/* How much per-QP counter @p f of device @p x grew since @p s0. */
#define DELTA(x, f, s0) (stats(x).qps.f - (s0).qps.f)

/* ---- memory regions ---- */

/* Register [@p buf, + @p len) in key table @p t for PD @p pd with @p access: its key. */
uint32_t mr_reg_pd(struct dpv_mr_table *t, void *buf, size_t len, uint32_t access,
		   uint32_t pd);
/* The same in PD 1, the PD of every end. */
uint32_t mr_reg(struct dpv_mr_table *t, void *buf, size_t len, uint32_t access);
void mr_dereg(struct dpv_mr_table *t, uint32_t key);

/* ---- QP ends ---- */

struct end {
	struct dpv_xport *x;
	struct dpv_mr_table *t;
	struct dpv_qp *qp;
	struct dpv_cq *scq, *rcq;
	bool own_rcq;
	int fatal;                /* fatal events of the QP */
};

/* A QP of @p type on @p x with CQs of its own (a receive CQ of its own when @p rcq is
 * NULL), on @p srq when not NULL. */
void end_open(struct end *e, struct dpv_xport *x, uint8_t type, struct dpv_srq *srq,
	      struct dpv_cq *rcq);
void end_close(struct end *e);
/* How a test between A and B ends: both ends closed, then region @p ks of A and
 * region @p kd of B deregistered. */
void pair_close(struct end *a, struct end *b, uint32_t ks, uint32_t kd);

/* The local ACK timeout and retry count rc_up() gives (tests of loss change them). */
extern uint8_t rc_timeout, rc_retry_cnt;
/* The READs rc_up() lets a QP have outstanding as requester and as responder. */
extern uint8_t rc_max_rd, rc_max_dest_rd;
/* What rc_up() lets the peer do. */
extern uint32_t rc_qp_access;

/* RC end @p e to RTS towards QP @p dest_qpn at @p dst_ip. */
void rc_up(struct end *e, uint32_t dst_ip, uint32_t dest_qpn, uint8_t rnr_retry);
/* a on device A; b on device B, or on A too when @p loop (the device talks to itself). */
void rc_pair(struct end *a, struct end *b, bool loop, struct dpv_srq *srq_b,
	     struct dpv_cq *rcq_b, uint8_t rnr_retry);
/* UD end @p e to RTS with Q_Key @p qkey. */
void ud_up(struct end *e, uint32_t qkey);
/* UC end @p e from the state it is in up to @p state (INIT, RTR or RTS), towards QP
 * @p dest_qpn at @p dst_ip (IBTA 9.7.7). */
void uc_up_to(struct end *e, uint32_t dst_ip, uint32_t dest_qpn, uint8_t state);
/* a on A, b on B (on @p srq_b when not NULL), connected UC ends. */
void uc_pair(struct end *a, struct end *b, struct dpv_srq *srq_b);

/* ---- work requests ---- */

/* A signaled send WQE without SGEs. */
struct dpv_swqe swqe(uint8_t opcode, uint64_t wr_id);
void swqe_sge(struct dpv_swqe *w, const void *addr, uint32_t len, uint32_t lkey);
/* An atomic of @p opcode on the 8 bytes at @p remote, the value before into @p local. */
struct dpv_swqe atomic_wqe(uint8_t opcode, uint64_t wr_id, uint64_t *remote, uint32_t rkey,
			   uint64_t compare_add, uint64_t swap, uint64_t *local, uint32_t lkey);
void post_send(struct dpv_qp *qp, const struct dpv_swqe *w);
/* A receive WQE of one SGE, or none when @p addr is NULL. */
struct dpv_rwqe rwqe(uint64_t wr_id, void *addr, uint32_t len, uint32_t lkey);
void post_recv(struct dpv_qp *qp, const struct dpv_rwqe *r);
void post_srq(struct dpv_srq *srq, uint32_t lane, const struct dpv_rwqe *r);
/* Post @p w on a, wait for its completion (and b's receive when @p recv), check it. */
void exchange(struct end *a, struct end *b, struct dpv_swqe *w, bool recv);

/* Random SENDs, WRITEs, WRITE_WITH_IMMs and READs from both ends of an RC pair at once,
 * unsignaled ones among them, over the link as it is: every completion in order, every
 * byte where it belongs. */
void mixed_stream(uint32_t seed0);

/* ---- frame hooks ---- */

/* A lossy link: per direction, what its hook did. */
struct lossy {
	struct dpv_xport *x;
	uint32_t seed;
	struct rte_mbuf *held;   /* a frame held back, delivered after the next one */
	uint64_t dropped, duplicated, reordered;
};

extern struct lossy lossy_a, lossy_b;

/* Both directions lose @p loss, duplicate @p dup and reorder @p reorder parts per
 * million of their frames; 0, 0, 0: the hooks go. */
void lossy_link(uint32_t loss, uint32_t dup, uint32_t reorder, uint32_t seed);

/* As a receive hook, keep_a_copy() copies the first frame of @p hook_dup_opcode into
 * @p hook_saved and lets every frame through. */
extern struct rte_mbuf *hook_saved;
extern uint8_t hook_dup_opcode;
bool keep_a_copy(struct rte_mbuf *m);

/* Per receiving device: drop the frames numbered nth .. nth + count - 1 (from 0) among
 * those of one opcode, or every one of that opcode until a time. */
struct dropper {
	uint8_t opcode;
	bool naks_only;  /* of ACK-opcode frames, only sequence error NAKs */
	int nth, count, seen, done;
	uint64_t until;  /* TSC; 0: by number */
};

/* Device A (@p to_a) or B drops its @p nth next frame of @p opcode (its hook is set). */
struct dropper *drop_next(bool to_a, uint8_t opcode, int nth);

#endif /* XPORT_TEST_H */
