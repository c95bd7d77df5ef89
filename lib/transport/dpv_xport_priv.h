/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The transport's own state, shared by its files. Not installed.
 *   dpv_xport_dev.c     the device: create and destroy, the receive demux, the transmit
 *                       rounds, building and sending frames, timers and the tick
 *   dpv_xport.c         CQs and SRQs
 *   dpv_xport_mr.c      the key table: slots, keys, registration, the check (IBTA 10.6)
 *   dpv_xport_guard.c   copies and atomics through registered memory, and the
 *                       SIGSEGV / SIGBUS handler that survives a fault in one
 *   dpv_xport_qp.c      QPs and their state machine (IBTA 10.3.1)
 *   dpv_xport_req.c     the requester (IBTA 9.7, 9.8)
 *   dpv_xport_resp.c    the RC responder (IBTA 9.7.5.1)
 *   dpv_xport_ud_uc.c   UD receive (IBTA 9.8) and UC receive (IBTA 9.7.7)
 *   dpv_xport_comp.c    the completer (IBTA 9.7.5.2, 9.9)
 *   dpv_xport_tm.c      tag matching: the TM SRQs by id, their ops, the match of a
 *                       message, TM completions, handle release, the rendezvous
 *   dpv_xport_linger.c  destroyed RC QPs that still answer (dpv_xport_linger.h)
 *   dpv_xport_gsi.c     QP 1: GSI datagrams to and from their one consumer
 */
#ifndef DPV_XPORT_PRIV_H
#define DPV_XPORT_PRIV_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_spinlock.h>

#include "dpv_xport.h"
#include "dpv_xport_linger.h"

/* Frames handed to the port in one dpv_port_tx() call. */
#define XP_TXB 32u
/* Frames to the port's own address waiting to be received (power of two). Each frame
 * the device receives makes at most one frame at once, so the queue never grows while
 * it drains; dpv_xport_tx() drains it when half full. */
#define XP_LOOPQ 1024u
/* Frames dpv_xport_rx() handles before it sends what they caused. */
#define XP_RX_CHUNK 32u
/* Packets a QP may send in one visit of dpv_xport_tx(), so no QP starves the others. */
#define XP_QUANTUM 16u
/* CQs whose arming one receive burst reads at its end (more: read at once). */
#define XP_ANNOUNCE 8u
/* PSNs a requester keeps unacknowledged at most. Go-back-N resends everything after a
 * loss, and a virtual port's rings hold about a thousand frames: the window keeps what
 * one QP has in flight within what the peer's queues absorb, so a long message does
 * not overflow them and turn every burst into a loss and a resend. */
#define XP_WINDOW 256u
/* The window a loss shrinks a QP's to at the least. Within XP_CWND_MIN..XP_WINDOW the
 * window halves on a loss and grows back with acknowledgements (slow start, then one
 * packet per window acknowledged), so a lossy path resends less with each loss. */
#define XP_CWND_MIN 8u
/* The responder NAKs again after so many packets dropped behind a NAK. */
#define XP_RENAK_DROPS (XP_WINDOW / 4)
/* Responder queue of a QP (power of two): read responses and the ACK/NAKs behind them.
 * It holds max_dest_rd_atomic new READs and atomics and as many duplicate atomics, with
 * at most one ACK or NAK between each two (a newer one replaces the one at the tail),
 * and the duplicate READs in front of them, XP_DUP_READS duplicates in all: never
 * full. */
#define XP_RESPQ 128u
#define XP_TIMED_NONE UINT32_MAX
/* Expiries of the local ACK timer a QP lets pass without a retry while the port holds
 * its packets back (the TX queue full), since its last progress. */
#define XP_DEFER_MAX 32u
/* How far ahead of the response a requester expects a READ response may come and be
 * kept (xp_qp.rd_ahead, by PSN: responses of the READs after it too), and how many
 * PSNs a response must have come past a missing one before that one is asked for
 * again: a link that delays a frame behind a few others costs no re-ask, one that
 * lost it costs one, at once. XP_RD_AHEAD covers what a responder has in flight
 * through a port's rings, so what comes behind a loss is kept, not sent twice. */
#define XP_RD_AHEAD 1024u
#define XP_RD_REORDER 3u
/* Gaps of a READ a requester asks for again in one go (one request each); the next
 * ones go as responses come. */
#define XP_REASK_BURST 16u
/* Duplicate READs and atomics a responder keeps queued at once: a READ asked again
 * gap by gap on a lossy link asks for many small ranges. */
#define XP_DUP_READS 64u
/* Rendezvous one QP on a TM SRQ runs at once (doc/guides/rendezvous.md): each holds
 * one slot of the QP's device ring, for its READ and then its FIN; the header of one
 * more is RNR NAKed. */
#define XP_RNDV_MAX 64u
/* Count a protocol event on a QP and on its device. */
#define XP_CNT(x, q, field)                  \
	do {                                 \
		(q)->stats.field++;          \
		(x)->stats.qps.field++;      \
	} while (0)
/* QPs that may hold a coalesced ACK within one received burst. */
#define XP_ACKQ 64u
/* The responder acknowledges requests that do not ask for it (AckReq clear) after
 * XP_UNASKED_MAX of them, or XP_QUIET_US after the last one: within the requester's
 * probe and ACK timer, so neither fires for want of an ACK. */
#define XP_UNASKED_MAX 64u
#define XP_QUIET_US 100u

/** IBTA 9.7.5.1: credit field 0x1f, "invalid": the requester is not flow-limited. */
#define XP_AETH_CREDITS_INVALID 0x1fu

static inline uint32_t psn_add(uint32_t psn, uint32_t n)
{
	return (psn + n) & DPV_WIRE_PSN_MASK;
}

/** a - b for ring indices (32-bit, wrapping). */
static inline int32_t idx_diff(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b);
}

static inline bool xp_wr_atomic(uint8_t opcode)
{
	return opcode == DPV_WR_ATOMIC_CMP_SWP || opcode == DPV_WR_ATOMIC_FETCH_ADD;
}

/* A READ, an atomic or an atomic write: the responder answers it with a response
 * (IBTA 9.4: responses, not ACKs, complete it; IBTA 1.5: an atomic write's is an RDMA
 * READ response of no data), and it holds one of the max_rd_atomic resources while it
 * is out. */
static inline bool xp_wr_answered(uint8_t opcode)
{
	return opcode == DPV_WR_RDMA_READ || xp_wr_atomic(opcode) ||
	       opcode == DPV_WR_ATOMIC_WRITE;
}

/* IBTA 10.6.7.2: a bind or a local invalidation, which the requester does itself and
 * never sends; it completes in order, when everything posted before it has. */
static inline bool xp_wr_local(uint8_t opcode)
{
	return opcode == DPV_WR_BIND_MW || opcode == DPV_WR_LOCAL_INV;
}

/* Who made a WQE of a QP's device ring (dpv_swqe.origin). */
enum xp_wqe_origin {
	XP_WQE_APP = 0,     /**< the application's: the slot holds only its qp.sq index,
	                         in wr_id */
	XP_WQE_RNDV_READ,   /**< the device: the RDMA READ of a rendezvous */
	XP_WQE_RNDV_FIN,    /**< the device: the FIN that ends a rendezvous */
};

/* Requester bookkeeping of one send WQE, parallel to its SQ slot. */
struct xp_swqe_meta {
	uint32_t first_psn;
	uint32_t npkts;     /**< PSNs the message uses (READ: response packets) */
	uint32_t len;       /**< message bytes */
	uint32_t rd_pkts;   /**< READ, atomic: response packets placed, in order (of a
	                         READ behind the oldest one outstanding, those it had when
	                         it became the oldest: the rest are in xp_qp.rd_ahead) */
	bool rd_done;       /**< READ, atomic: last response placed */
	bool req_sent;      /**< READ, atomic: request out and counted in reads_out */
	uint32_t pd;        /**< the protection domain of its local buffers */
};

/* What kind of receive a message in progress is (the completion it will give). */
enum xp_recv_kind {
	XP_RECV_PLAIN = 0,
	XP_RECV_TM_EAGER,
	XP_RECV_TM_RNDV,        /**< the buffer cannot hold the data: headers placed */
	XP_RECV_TM_RNDV_READ,   /**< the device reads the data (doc/guides/rendezvous.md) */
	XP_RECV_TM_UNEXPECTED,
	XP_RECV_TM_NO_TAG,
};

/* A receive WQE (or a matched tag entry) taken by a message in progress: copied out of
 * its ring slot so the slot goes back to the poster at once. */
struct xp_recv {
	bool active;
	uint8_t kind;         /**< enum xp_recv_kind */
	uint8_t flags;        /**< enum dpv_wc_flags to add at completion (SYNC_REQ) */
	uint32_t pd;
	uint64_t wr_id;
	uint32_t num_sge;
	uint64_t cap;         /**< bytes the scatter list holds */
	uint32_t msg_len;     /**< message bytes received so far */
	uint32_t skip;        /**< leading message bytes not placed (the TMH of eager) */
	uint32_t tm_handle;
	uint32_t tm_priv;
	uint64_t tm_tag;
	struct dpv_tm_rvh rvh; /**< TM_RNDV_READ: the data at the sender */
	struct dpv_sge sge[DPV_MAX_SGE];
};

/* An RDMA WRITE in progress at the responder (IBTA 9.4: the RETH comes with the
 * first packet only). */
struct xp_write {
	uint64_t va;
	uint32_t rkey;
	uint32_t len;
	uint32_t done;
};

enum xp_resp_kind {
	XP_RESP_ACK = 0,  /**< an ACK or NAK: one frame */
	XP_RESP_READ,     /**< the response packets of an RDMA READ */
	XP_RESP_ATOMIC,   /**< an atomic acknowledgement: one frame */
};

/* One entry of the responder queue, sent in order by dpv_xport_tx(). */
struct xp_resp {
	uint8_t kind;      /**< enum xp_resp_kind */
	uint8_t syndrome;  /**< ACK: AETH syndrome */
	uint32_t psn;      /**< ACK: PSN acknowledged; READ: PSN of the first response */
	uint32_t msn;
	uint64_t va;       /**< READ */
	uint32_t rkey;
	uint32_t len;
	uint32_t sent;     /**< READ: bytes sent */
	bool dup;          /**< READ, ATOMIC: answers a duplicate request */
	uint64_t orig;     /**< ATOMIC: the value before the operation */
};

/* The result of an atomic executed by the responder, kept so that a duplicate of its
 * request is answered with it, not executed again (IBTA 9.4.5). */
struct xp_atomic_res {
	bool valid;
	uint32_t psn;
	uint64_t orig;
};

/* What is in progress on the responder side. */
enum xp_resp_op {
	XP_OP_NONE = 0,
	XP_OP_SEND,
	XP_OP_WRITE,
};

/*
 * The TM SRQs of a device, one table by id (dpv_xport_tm.c). A TM SRQ's id is drawn
 * so that slot id % DPV_MAX_TM_SRQ is free, and it sits in that slot: a look-up is one
 * load and a compare of the id. The control path writes the table under lock, which
 * only writers take. An SRQ enters it whole, at the end of dpv_srq_create() (any
 * thread, as the device runs): its slot and then n are published with release
 * stores, and the owner (n) and pollers releasing a handle (a slot) load them
 * acquire. It leaves it in dpv_srq_destroy(), while the device is owned, so the owner
 * is not in the ops loop; a poller is not releasing into it, as no CQ that carries
 * its completions is polled while it is destroyed (ibv_destroy_srq(3)), the rule for
 * every object an application polls through.
 */
struct xp_tm_srqs {
	struct dpv_srq *by_id[DPV_MAX_TM_SRQ];
	struct dpv_srq *live[DPV_MAX_TM_SRQ]; /**< the same SRQs, dense: the ops loop */
	uint32_t n;
	rte_spinlock_t lock;                  /**< writers; zero is unlocked */
};

/* A QP and everything the transport keeps for it. */
struct xp_qp {
	struct dpv_qp qp;
	uint32_t live_idx;        /**< position in x->live */
	uint64_t req_tsc;         /**< TSC of the last request received (dpv_xport_linger.c) */
	uint32_t mtu;             /**< bytes of payload per packet: a power of two, 256 .. 4096 */
	uint8_t mtu_shift;        /**< log2 of mtu (xp_qp_set_mtu()): a packet's place in
	                               a message is a shift, not a division */
	/** The transport bits of its opcodes (DPV_WIRE_OP_RC, _UC, _UD or _XRC): what it
	 *  sends carries them, what it receives must; DPV_WIRE_OP_RC only for an RC QP
	 *  (rx_one()'s own path), an XRC QP being RC with the XRC bits. */
	uint8_t op_base;
	/** The headers every packet to the peer shares (RC, UC): rebuilt whenever
	 *  dpv_qp_modify() runs, so it always follows the address vector and peer QP. */
	struct dpv_wire_tmpl tmpl;
	/* Requester (IBTA 9.7) and completer (9.9). */
	/** The WQEs the requester runs (xp_swqe()). qp.sq itself, but for a QP on a TM SRQ
	 *  a ring of the device's: the application's WQEs in their order, each slot naming
	 *  one of qp.sq (xp_xq_feed()), and between them the device's own rendezvous READs
	 *  and FINs, which so take none of the application's send credits. It has a slot
	 *  for every slot of qp.sq and XP_RNDV_MAX more: it never fills. */
	struct dpv_ring *xq;
	uint32_t sq_fed;          /**< xq != qp.sq: the qp.sq index of the next WQE to copy */
	uint32_t rv_active;       /**< rendezvous matched and not ended (XP_RNDV_MAX) */
	struct xp_swqe_meta *meta; /**< one per xq slot */
	uint32_t next_wqe;        /**< ring index of the WQE being sent or next to send */
	uint32_t next_off;        /**< bytes of next_wqe already sent */
	uint32_t wqe_hi;          /**< one past the last WQE ever started */
	uint32_t psn;             /**< next PSN to send */
	uint32_t psn_hi;          /**< one past the highest PSN sent */
	uint32_t una;             /**< oldest PSN not acknowledged */
	uint32_t reads_out;       /**< READ requests out, responses not all back */
	uint32_t since_ackreq;    /**< request packets sent since one asked for an ACK */
	uint32_t cwnd;            /**< window now, XP_CWND_MIN..XP_WINDOW packets */
	uint32_t ssthresh;        /**< window below which it doubles per window acked */
	uint32_t cwnd_acc;        /**< packets acknowledged towards the next increase */
	uint8_t blocked_err;      /**< enum dpv_wc_status of a WQE refused at next_wqe */
	uint8_t rnr_left;         /**< RNR retries left (rnr_retry 7: forever) */
	uint8_t retry_left;       /**< timeout / sequence retries left (retry_cnt) */
	uint8_t defer_left;       /**< expiries left to defer (XP_DEFER_MAX) */
	bool rnr_wait;
	bool error_marked;        /**< reads ERR ahead of xp_qp_error() (xp_qp_error_mark()) */
	bool rd_gap;              /**< responses of the oldest READ went missing and were
	                               asked for again, up to rd_asked; not again (but by
	                               a probe or the timer) until they come */
	bool rd_reask;            /**< re-asks up to rd_lim are still to be sent */
	bool rd_probed;           /**< ... by a probe (counted as one, not as re-asks) */
	uint32_t rd_asked;        /**< one past the last PSN asked for again */
	uint32_t rd_lim;          /**< one past the last PSN known lost */
	uint32_t rd_hi;           /**< the highest READ response PSN received */
	uint64_t rd_ask_tsc;      /**< TSC the oldest re-ask outstanding went (or the
	                               last one it answered came) */
	uint64_t rd_srtt;         /**< smoothed TSC cycles from a re-ask to its answer */
	/** READ responses placed ahead of their turn: bit psn % XP_RD_AHEAD, for PSNs
	 *  within XP_RD_AHEAD after the one the oldest outstanding READ expects. */
	uint64_t rd_ahead[XP_RD_AHEAD / 64];
	bool ackreq_next;         /**< the next request packet asks for an ACK */
	/* Timers (IBTA 9.7.6): one deadline, the RNR wait's while rnr_wait, else the
	 * local ACK timer's, restarted by forward progress. */
	uint64_t ack_cycles;      /**< local ACK timeout in TSC cycles; 0: none */
	uint64_t probe_cycles;    /**< no progress this long with all sent: probe */
	uint64_t deadline;        /**< TSC */
	uint64_t retry_tsc;       /**< TSC of the last progress or retry charged */
	uint64_t probe_tsc;       /**< TSC of the last progress or tail loss probe */
	uint8_t probes;           /**< probes since the last progress (each waits twice
	                               as long as the one before) */
	uint32_t timed_idx;       /**< position in x->timed, or XP_TIMED_NONE */
	/* Responder (IBTA 9.7.5.1). */
	uint32_t epsn;            /**< expected PSN */
	uint32_t msn;
	bool nak_sent;            /**< a NAK is out: drop later packets until ePSN comes */
	uint32_t nak_hi;          /**< with nak_sent: the highest PSN dropped since */
	uint32_t nak_drops;       /**< with nak_sent: packets dropped since the last NAK */
	bool ack_pending;         /**< a coalesced ACK waits for the end of the burst */
	uint32_t unasked;         /**< requests placed without AckReq since the last ACK */
	uint64_t quiet_deadline;  /**< with unasked: TSC the ACK for them is due */
	uint32_t quiet_idx;       /**< position in x->quiet, or XP_TIMED_NONE */
	uint8_t op;               /**< enum xp_resp_op in progress */
	uint32_t ack_psn;
	struct xp_recv rcv;
	struct xp_write wr;
	struct xp_resp respq[XP_RESPQ];
	uint32_t resp_head, resp_tail;
	uint32_t resp_reads;      /**< READ and atomic entries in respq answering new
	                               requests (max_dest_rd_atomic) */
	uint32_t resp_dup_reads;  /**< READ and atomic entries in respq answering
	                               duplicates */
	/* The replay cache: the results of the last max_dest_rd_atomic atomics. */
	struct xp_atomic_res atomics[DPV_MAX_RD_ATOMIC];
	uint32_t atomic_next;     /**< the entry the next result replaces */
	bool uc_drop;             /**< UC: a gap ended the message in progress; packets
	                               are dropped until the next message starts */
	struct dpv_qp_stats stats;
};

struct dpv_xport {
	struct dpv_port *port;
	struct dpv_mr_table *mrs;
	struct dpv_xport_stats stats;
	struct xp_linger linger;         /**< destroyed QPs that still answer */
	struct xp_qp *qps[DPV_MAX_QP];   /**< by QP number */
	struct xp_qp *live[DPV_MAX_QP];  /**< dense, for the round robin of dpv_xport_tx() */
	uint32_t nlive;
	uint32_t cursor;                 /**< live index dpv_xport_tx() starts at */
	uint32_t next_qpn;               /**< place in the QP number permutation */
	uint32_t qpn_key;                /**< its key; 0 until the first QP */
	uint32_t next_id;                /**< CQ and SRQ ids (atomics: any thread creates) */
	uint32_t ntimed;
	struct xp_qp *timed[DPV_MAX_QP]; /**< QPs with a timer running (dense) */
	uint32_t nquiet;
	struct xp_qp *quiet[DPV_MAX_QP]; /**< QPs that were holding unasked requests (dense;
	                                      xp_resp_ack_tick()) */
	uint64_t quiet_cycles;           /**< XP_QUIET_US in TSC cycles */
	uint64_t now;                    /**< TSC, read once per rx, tx or tick call */
	uint16_t ip_id;
	uint64_t tsc_hz;
	/* Doorbells: bit n of db[n / 64] set when QP n may have something to send; bit w
	 * of db_summary when db[w] may have bits set (dpv_qp_doorbell()). */
	uint64_t db_summary;
	uint64_t db[DPV_MAX_QP / 64];
	uint32_t db_next;                /**< QP number dpv_xport_tx() starts at */
	uint16_t ntx;
	struct rte_mbuf *txb[XP_TXB];
	uint32_t loop_head, loop_tail;
	struct rte_mbuf *loopq[XP_LOOPQ];
	uint32_t nack;
	struct xp_qp *ackq[XP_ACKQ];
	bool cq_overrun;                 /**< a completion found its CQ full since the last
	                                      xp_cq_overruns() */
	/* CQs of a completion channel written to during dpv_xport_rx(), whose arming is
	 * read once at its end behind one fence (xp_cq_announce()) instead of a fence
	 * a completion; announce_on while it runs. */
	bool announce_on;
	uint8_t nannounce;
	struct {
		struct dpv_cq *cq;
		bool solicited;                  /**< one of its completions was */
	} announce[XP_ANNOUNCE];
	struct xp_tm_srqs tm_srqs;       /**< the TM SRQs (dpv_xport_tm.c) */
	/** The XRC SRQs by number: written by dpv_srq_create() (any thread, under
	 *  xrc_lock) and dpv_srq_destroy() (owner), read by the owner (XRCETH). */
	struct dpv_srq *xrc_srqs[DPV_MAX_XRC_SRQ];
	rte_spinlock_t xrc_lock;
	dpv_xport_gsi_fn gsi_fn;         /**< the GSI's consumer (dpv_xport_gsi.c) */
	void *gsi_arg;
	uint32_t gsi_psn;                /**< PSN of the next GSI datagram sent */
};

static inline struct xp_qp *to_xqp(struct dpv_qp *qp)
{
	return qp->xport_state;
}

/* dpv_xport_dev.c: frames, transmit room, timers. */
struct rte_mbuf *xp_frame_alloc(struct dpv_xport *x, struct dpv_wire_pkt *p,
				uint32_t payload_len, uint8_t **payload);
void xp_frame_send(struct dpv_xport *x, struct rte_mbuf *m, uint32_t dst_ip);
/* Hand the frames batched for the port to it. */
void xp_tx_flush(struct dpv_xport *x);
void xp_pkt_init(struct dpv_xport *x, struct dpv_wire_pkt *p, uint8_t opcode, uint32_t dst_ip,
		 uint32_t src_qpn, uint32_t dest_qpn, uint32_t psn, uint8_t tos, uint8_t ttl);
/* Build @p q's header template (xp_qp.tmpl) from its address vector and peer QP. */
void xp_conn_tmpl_init(struct dpv_xport *x, struct xp_qp *q);
/* A frame of @p q's connection, its headers from the template: @p p holds the
 * per-packet fields only (dpv_wire_tmpl_write(): opcode, solicited, ack_req, psn and
 * the extension headers of the opcode; ip_id is set here). As xp_frame_alloc(). */
struct rte_mbuf *xp_conn_frame(struct dpv_xport *x, struct xp_qp *q, struct dpv_wire_pkt *p,
			       uint32_t payload_len, uint8_t **payload);
uint32_t xp_active_mtu(const struct dpv_port *port);

/* @p q's payload per packet, @p mtu: one of IBTA's path MTUs (256 .. 4096), as
 * xp_active_mtu() and path_mtu give. */
static inline void xp_qp_set_mtu(struct xp_qp *q, uint32_t mtu)
{
	q->mtu = mtu;
	q->mtu_shift = (uint8_t)__builtin_ctz(mtu);
}

/* The packets of a message of @p len bytes on @p q (a message of 0 bytes takes one). */
static inline uint32_t xp_npkts(const struct xp_qp *q, uint32_t len)
{
	return len == 0 ? 1 : (uint32_t)(((uint64_t)len + q->mtu - 1) >> q->mtu_shift);
}
/* Packets that may leave for @p dst now: the port says how many it takes without
 * dropping (its TX queue, and the frames it holds while ARP runs; frames to the
 * device itself always). What cannot leave waits where it is (a WQE in its ring, a
 * response in the responder queue): with no room the QP stays on the doorbell and is
 * visited again. */
uint32_t xp_dst_room(struct dpv_xport *x, struct xp_qp *q, uint32_t dst);
/* The same room without a QP to kick: the GSI's sends. */
uint32_t xp_port_room(struct dpv_xport *x, uint32_t dst);
uint64_t xp_rnr_cycles(const struct dpv_xport *x, uint8_t code);
/* Timers: run @p q's from now on (it has something outstanding, or an RNR wait). */
void xp_timer_start(struct dpv_xport *x, struct xp_qp *q);
void xp_timer_stop(struct dpv_xport *x, struct xp_qp *q);

/* dpv_xport.c: completions, receive WQEs. */
void xp_cq_put(struct dpv_xport *x, struct dpv_cq *cq, const struct dpv_cqe *cqe,
	       bool solicited);
/* Tell the armed CQs of announce[], one fence for all: the end of dpv_xport_rx(). */
void xp_cq_announce(struct dpv_xport *x);
/* Move the QPs of overrun CQs to ERR (xp_cq_put() found a ring full). Called where no
 * QP is halfway through an update: the ends of dpv_xport_rx(), _tx(), _tick() and
 * dpv_qp_modify(). */
void xp_cq_overruns(struct dpv_xport *x);
bool xp_srq_ready(struct dpv_srq *srq);
bool xp_take_recv(struct dpv_xport *x, struct xp_qp *q, struct xp_recv *r);
struct dpv_cq *xp_recv_cq(const struct xp_qp *q);
/** The XRC SRQ numbered @p srqn if it is of XRC domain @p xrcd, else NULL (owner). */
struct dpv_srq *xp_xrc_srq(struct dpv_xport *x, uint32_t xrcd, uint32_t srqn);

/* dpv_xport_guard.c: every access of the device to registered memory. */
/* memcpy() through registered memory that may have been unmapped under its region:
 * false (counted in mem_faults) when the copy faulted, with part of it done. */
bool xp_copy_long(struct dpv_xport *x, void *dst, const void *src, size_t len);
#if defined(__x86_64__) && defined(__linux__)
/* Copies of at most this many bytes (a small message, a header) take xp_copy_short(),
 * whose faults the handler recognises by the faulting instruction's address: no jump
 * buffer to arm, which would cost a short copy more than the copy itself. */
#define XP_COPY_SHORT_MAX 128u
/* @p len (at most XP_COPY_SHORT_MAX) bytes from @p src to @p dst: true, or false when
 * an access faulted (the SIGSEGV / SIGBUS handler resumes it there). Assembly, in
 * dpv_xport_guard.c; it touches no stack, so the handler can return from it. */
__attribute__((visibility("hidden"))) bool xp_copy_short(void *dst, const void *src, size_t len);
#endif

static inline bool xp_copy(struct dpv_xport *x, void *dst, const void *src, size_t len)
{
#ifdef XP_COPY_SHORT_MAX
	if (len <= XP_COPY_SHORT_MAX) {
		if (__builtin_expect(xp_copy_short(dst, src, len), 1))
			return true;
		x->stats.mem_faults++;
		return false;
	}
#endif
	return xp_copy_long(x, dst, src, len);
}
/* The 64-bit atomic of IBTA 9.4.5 at @p addr (8-byte aligned, in a registered region),
 * protected as xp_copy(): compare-and-swap (@p cas: store @p swap if the value equals
 * @p compare_add) or fetch-and-add (add @p compare_add). @p orig gets the value before.
 * false (counted in mem_faults) when the memory faulted. */
bool xp_atomic(struct dpv_xport *x, uint64_t addr, bool cas, uint64_t compare_add,
	       uint64_t swap, uint64_t *orig);
/* The atomic write of IBTA 1.5 at @p addr (8-byte aligned, in a registered region): one
 * 64-bit store of @p val (its bytes as they are to lie in memory), which no reader sees
 * half done, protected as xp_copy(). false (counted in mem_faults) when it faulted. */
bool xp_atomic_store(struct dpv_xport *x, uint64_t addr, uint64_t val);
/* The large-message path: the address of bytes [@p off, @p off + @p len) of a scatter
 * list when they lie in one of its pieces, whose key allows @p access over them (IBTA
 * 10.6), for a copy straight to or from them; NULL when they do not (they straddle
 * pieces, or the check fails): xp_sgl_gather() and xp_sgl_scatter() then copy them, or
 * say what is wrong. A packet's share of a long message almost always lies in one
 * piece (most lists have one), so the walk of those is left to the rare case. */
static inline void *xp_sgl_span(const struct dpv_xport *x, const struct dpv_sge *sge,
				uint32_t nsge, uint32_t pd, uint32_t access, uint64_t off,
				uint32_t len)
{
	for (uint32_t i = 0; i < nsge; i++) {
		if (off < sge[i].length) {
			if (len > sge[i].length - off ||
			    dpv_mr_check(x->mrs, sge[i].lkey, pd, sge[i].addr + off, len,
					 access) == NULL)
				return NULL;
			return (void *)(uintptr_t)(sge[i].addr + off);
		}
		off -= sge[i].length;
	}
	return NULL;
}
uint8_t xp_sgl_scatter(struct dpv_xport *x, const struct dpv_sge *sge, uint32_t nsge,
		       uint32_t pd, uint64_t off, const void *src, uint32_t len);
uint8_t xp_sgl_gather(struct dpv_xport *x, const struct dpv_sge *sge, uint32_t nsge,
		      uint32_t pd, uint64_t off, void *dst, uint32_t len);

/* dpv_xport_qp.c */
/* Move @p q to ERR (IBTA 10.3.1), flushing what it holds; @p event (enum dpv_qp_event)
 * is raised through fatal_event unless DPV_QP_EV_NONE. */
void xp_qp_error(struct dpv_xport *x, struct xp_qp *q, uint8_t event);
/* @p q reads ERR from now on, ahead of the xp_qp_error() that follows and does the
 * rest: called before the error completion that ends the QP is written, so that a
 * program that has polled it and queries the QP (from another thread than the
 * device's, in lcore progress) finds ERR, as after a NIC's error completion. */
void xp_qp_error_mark(struct xp_qp *q);
/* The QP may have something to send: visit it in the next dpv_xport_tx(). */
static inline void xp_kick(struct xp_qp *q)
{
	dpv_qp_doorbell(&q->qp);
}
void xp_qp_flush_new(struct dpv_xport *x, struct xp_qp *q);
void xp_complete_swqe(struct dpv_xport *x, struct xp_qp *q, uint8_t status);

/* dpv_xport_req.c */
/* Give the application's new WQEs their places in the device ring (a QP on a TM
 * SRQ). */
void xp_xq_feed(struct xp_qp *q);
uint32_t xp_req_tx(struct dpv_xport *x, struct xp_qp *q, uint32_t quota);

void xp_req_rewind(struct xp_qp *q, uint32_t psn);

/* dpv_xport_resp.c */
void xp_resp_rx(struct dpv_xport *x, struct xp_qp *q, const struct dpv_wire_pkt *p,
		const uint8_t *frame);
/* @p len bytes (not 0) of @p data into the one buffer of receive @p r at @p addr, after
 * the same key check xp_sgl_scatter() makes (IBTA 10.6): DPV_WC_SUCCESS or
 * DPV_WC_LOC_PROT_ERR. */
static inline uint8_t xp_recv_place_one(struct dpv_xport *x, const struct xp_recv *r,
					uint64_t addr, const uint8_t *data, uint32_t len)
{
	if (dpv_mr_check(x->mrs, r->sge[0].lkey, r->pd, addr, len, DPV_ACCESS_LOCAL_WRITE) == NULL ||
	    !xp_copy(x, (void *)(uintptr_t)addr, data, len))
		return DPV_WC_LOC_PROT_ERR;
	return DPV_WC_SUCCESS;
}
/* xp_recv_place() whatever the receive's buffers (several, a skip, nothing to place). */
uint8_t xp_recv_place_any(struct dpv_xport *x, struct xp_recv *r, const uint8_t *data,
			  uint32_t len);
/* Place @p len bytes of a message into the receive @p r holds, after what it has (less
 * its skip): DPV_WC_SUCCESS, DPV_WC_LOC_LEN_ERR or DPV_WC_LOC_PROT_ERR. Inline for one
 * buffer and nothing skipped, every small message's case: the piece lands at its offset
 * in it, after the same key check xp_sgl_scatter() makes (IBTA 10.6). */
static inline uint8_t xp_recv_place(struct dpv_xport *x, struct xp_recv *r, const uint8_t *data,
				    uint32_t len)
{
	const uint32_t off = r->msg_len;
	uint64_t dst;

	if (__builtin_expect(!(r->num_sge == 1 && r->skip == 0 && len != 0 &&
			       len <= UINT32_MAX - off), 0))
		return xp_recv_place_any(x, r, data, len);
	r->msg_len = off + len;
	dst = r->sge[0].addr + off;
	if ((uint64_t)off + len > r->cap)
		return DPV_WC_LOC_LEN_ERR;
	return xp_recv_place_one(x, r, dst, data, len);
}
/* The completion of the receive in progress (@p p NULL: no immediate, not solicited);
 * it ends it. */
void xp_recv_done(struct dpv_xport *x, struct xp_qp *q, uint8_t status,
		  const struct dpv_wire_pkt *p, uint8_t wc_opcode, uint32_t src_qp,
		  uint8_t flags);
/* IBTA 10.6: @p rkey covers [va, va + len) with @p access for QP @p q: a region's key
 * (dpv_mr_check()) or, where no region has it, a window's (dpv_mw_check(), IBTA
 * 10.6.7), so a region's key costs what the region check costs. */
static inline bool xp_rkey_ok(const struct dpv_xport *x, const struct xp_qp *q, uint32_t rkey,
			      uint64_t va, uint64_t len, uint32_t access)
{
	return likely(dpv_mr_check(x->mrs, rkey, q->qp.init.pd, va, len, access) != NULL) ||
	       dpv_mw_check(x->mrs, rkey, q->qp.init.pd, q->qp.qpn, va, len, access) != NULL;
}
/* IBTA 9.4 / 10.6: the QP may be written remotely and @p rkey covers the range. */
bool xp_write_allowed(const struct dpv_xport *x, const struct xp_qp *q, uint32_t rkey,
		      uint64_t va, uint32_t len);
/* The responder's replay cache starts empty (a new connection: RTR). */
void xp_resp_atomics_clear(struct xp_qp *q);
uint32_t xp_resp_tx(struct dpv_xport *x, struct xp_qp *q, uint32_t quota);
void xp_resp_flush_acks(struct dpv_xport *x);
/* The ACKs of requests placed without AckReq whose quiet time is up (the tick). */
void xp_resp_ack_tick(struct dpv_xport *x);
void xp_resp_abort(struct dpv_xport *x, struct xp_qp *q, bool flush);

/* The RC opcodes of a request (UC's are the same in their low five bits, IBTA Table
 * 38): the first (or only) packet of a message, its last (or only) one. */
static inline bool xp_op_first(uint8_t op)
{
	switch (op) {
	case DPV_OP_RC_SEND_FIRST:
	case DPV_OP_RC_SEND_ONLY:
	case DPV_OP_RC_SEND_ONLY_IMM:
	case DPV_OP_RC_SEND_ONLY_INV:
	case DPV_OP_RC_WRITE_FIRST:
	case DPV_OP_RC_WRITE_ONLY:
	case DPV_OP_RC_WRITE_ONLY_IMM:
	case DPV_OP_RC_READ_REQUEST:
	case DPV_OP_RC_CMP_SWAP:
	case DPV_OP_RC_FETCH_ADD:
	case DPV_OP_RC_ATOMIC_WRITE:
		return true;
	default:
		return false;
	}
}

static inline bool xp_op_last(uint8_t op)
{
	return op != DPV_OP_RC_SEND_FIRST && op != DPV_OP_RC_SEND_MIDDLE &&
	       op != DPV_OP_RC_WRITE_FIRST && op != DPV_OP_RC_WRITE_MIDDLE;
}

/* IBTA 9.7.5.1 / 9.9: the opcode must continue the message in progress, or start one. */
static inline bool xp_op_in_sequence(uint8_t cur, uint8_t op)
{
	switch (cur) {
	case XP_OP_SEND:
		return op == DPV_OP_RC_SEND_MIDDLE || op == DPV_OP_RC_SEND_LAST ||
		       op == DPV_OP_RC_SEND_LAST_IMM || op == DPV_OP_RC_SEND_LAST_INV;
	case XP_OP_WRITE:
		return op == DPV_OP_RC_WRITE_MIDDLE || op == DPV_OP_RC_WRITE_LAST ||
		       op == DPV_OP_RC_WRITE_LAST_IMM;
	default:
		return xp_op_first(op);
	}
}

/* dpv_xport_gsi.c: a frame to QP 1 (no QP of the device has that number). */
void xp_gsi_rx(struct dpv_xport *x, const struct dpv_wire_pkt *p, const uint8_t *frame);

/* dpv_xport_ud_uc.c */
void xp_ud_rx(struct dpv_xport *x, struct xp_qp *q, const struct dpv_wire_pkt *p,
	      const uint8_t *frame);
void xp_uc_rx(struct dpv_xport *x, struct xp_qp *q, const struct dpv_wire_pkt *p,
	      const uint8_t *frame);

/* Whether WQE @p idx of @p q's requester ring is the device's own (a rendezvous'). */
static inline bool xp_xq_dev(const struct xp_qp *q, uint32_t idx)
{
	return q->xq != q->qp.sq &&
	       ((const struct dpv_swqe *)dpv_ring_slot(q->xq, idx))->origin != XP_WQE_APP;
}

/* WQE @p idx of @p q's requester ring: the device's own, or the application's in
 * qp.sq. */
static inline const struct dpv_swqe *xp_swqe(const struct xp_qp *q, uint32_t idx)
{
	const struct dpv_swqe *w = dpv_ring_slot(q->xq, idx);

	if (q->xq != q->qp.sq && w->origin == XP_WQE_APP)
		return dpv_ring_slot(q->qp.sq, (uint32_t)w->wr_id);
	return w;
}

/* Give back the slots of @p n application WQEs from the head of @p q's requester ring,
 * in the application's SQ too when that ring is the device's (a TM SRQ's QP). */
static inline void xp_swqe_release(struct xp_qp *q, uint32_t n)
{
	if (q->xq != q->qp.sq)
		dpv_ring_release(q->qp.sq, n);
	dpv_ring_release(q->xq, n);
}

/* dpv_xport_tm.c (doc/guides/srq.md §4, rendezvous.md) */
/* Take a TM SRQ into the device's table, its id drawn for a free slot (create):
 * ENOMEM when the table is full. */
int xp_tm_srq_add(struct dpv_xport *x, struct dpv_srq *srq);
/* Take @p srq out of the table, if it is in it (destroy). */
void xp_tm_srq_del(struct dpv_xport *x, struct dpv_srq *srq);
/* The first packet @p p of a SEND on a TM SRQ: match it (or take an ordinary WQE for
 * an unexpected or no-tag message) into @p q->rcv. false: nothing to take it, nothing
 * consumed, the caller RNR NAKs. */
bool xp_tm_start(struct dpv_xport *x, struct xp_qp *q, const struct dpv_wire_pkt *p,
		 const uint8_t *payload);
/* A completion of the tag entry @p q->rcv holds (its wr_id, tag, app_ctx, handle) on
 * the SRQ's CQ: the MATCH of a message in progress (@p flags DPV_WC_F_TM_MATCH), or
 * an end (with DPV_WC_F_TM_RELEASE). */
void xp_tm_cqe(struct dpv_xport *x, struct xp_qp *q, uint8_t status, uint8_t flags);
/* The buffers of the rendezvous in @p q->rcv take the data (LOCAL_WRITE, in range):
 * DPV_WC_SUCCESS, or DPV_WC_LOC_PROT_ERR. */
uint8_t xp_rndv_check(const struct dpv_xport *x, const struct xp_qp *q);
/* The header of an expected rendezvous has arrived whole in @p q->rcv: report the
 * match and queue the READ. */
void xp_rndv_start(struct dpv_xport *x, struct xp_qp *q);
/* The device's WQE @p w (a copy: its slot is free again) ended with @p status: the
 * READ's data landed (the FIN is queued and the receive completes DATA_VALID), or the
 * READ failed (the receive completes in error), or the FIN ended. */
void xp_rndv_wqe_done(struct dpv_xport *x, struct xp_qp *q, const struct dpv_swqe *w,
		      uint8_t status);
/* Drop the device's WQEs without completions (RESET, destroy); their tag entries are
 * given back. */
void xp_rndv_drop(struct dpv_xport *x, struct xp_qp *q);

/* dpv_xport_comp.c */
void xp_comp_rx(struct dpv_xport *x, struct xp_qp *q, const struct dpv_wire_pkt *p,
		const uint8_t *frame);
void xp_comp_acked(struct dpv_xport *x, struct xp_qp *q);
/* The local ACK timer of @p q expired (IBTA 9.7.6.1): go back N, or give up. */
void xp_comp_timeout(struct dpv_xport *x, struct xp_qp *q);
/* Nothing was acknowledged for probe_cycles while the requester can send nothing new
 * (all sent, or the window full): send the last packet again, asking for an ACK. */
void xp_comp_probe(struct dpv_xport *x, struct xp_qp *q);
/* A READ's gaps were asked for again: the probe that asks again, should the re-asks or
 * their answers be lost too, comes a couple of re-ask round trips later. */
void xp_comp_reask_wait(struct dpv_xport *x, struct xp_qp *q);

/* READ responses placed ahead of their turn (xp_qp.rd_ahead), by PSN. */
static inline bool xp_rd_ahead_test(const struct xp_qp *q, uint32_t psn)
{
	const uint32_t b = psn % XP_RD_AHEAD;

	return (q->rd_ahead[b / 64] >> (b % 64)) & 1;
}

/* The oldest READ or atomic whose responses have not all come, at or after
 * @p from (an SQ index); wqe_hi when there is none. */
static inline uint32_t xp_rd_head(const struct xp_qp *q, uint32_t from)
{
	uint32_t i;

	for (i = from; idx_diff(q->wqe_hi, i) > 0; i++)
		if (xp_wr_answered(xp_swqe(q, i)->opcode) && !q->meta[i & q->xq->mask].rd_done)
			break;
	return i;
}

/* The opcode of read response packet i of n (IBTA 9.7.5.1.4: ONLY, or FIRST..LAST):
 * the responder sends them, the completer checks them. */
static inline uint8_t xp_read_resp_opcode(uint32_t i, uint32_t n)
{
	if (n == 1)
		return DPV_OP_RC_READ_RESP_ONLY;
	if (i == 0)
		return DPV_OP_RC_READ_RESP_FIRST;
	return i == n - 1 ? DPV_OP_RC_READ_RESP_LAST : DPV_OP_RC_READ_RESP_MIDDLE;
}

/* The smallest power of two >= n: ring sizes. */
static inline uint32_t xp_pow2_at_least(uint32_t n)
{
	uint32_t p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

/* Memory for nrings rings of count slots, on the port's NUMA node; NULL if the sizes
 * are bad or memory ran out. The caller lays the rings out (dpv_ring_init). */
void *xp_ring_alloc(int socket, uint32_t count, uint32_t slot_size, uint32_t nrings);

#endif /* DPV_XPORT_PRIV_H */
