/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * dpv_xport: the RoCEv2 transport of one device (one port): RC, UC, UD and XRC queue pairs,
 * the QP state machine, PSNs, ACK/NAK, RNR, segmentation by path MTU, SEND /
 * SEND_WITH_IMM / RDMA WRITE (WITH_IMM) / RDMA READ / atomic compare-and-swap and
 * fetch-and-add (RC, IBTA 9.4.5) / atomic write (RC, IBTA 1.5), memory-region checks,
 * SRQs, tag-matching SRQs (through lib/tm) and XRC SRQs, completions into CQ rings.
 *
 * It speaks its own structs (no rdma-core types): lib/verbs translates. The requester,
 * responder and completer are separate state machines (dpv_xport_req.c, _resp.c,
 * _comp.c) whose comments cite the IBTA sections they implement (Vol. 1 ch. 9).
 *
 * Threads. Everything here is device state with one owner thread at a time (the
 * engine's): dpv_xport_rx(), dpv_xport_tx(), dpv_xport_tick() and every dpv_qp_*() call
 * are made by the owner only. Application threads touch only the rings: SQ and RQ
 * rings (one producer: the QP's poster, serialised by lib/verbs), SRQ lanes (one
 * producer each), and CQ rings (one consumer, serialised by lib/verbs).
 *
 * Reliability (IBTA 9.7.5 and 9.9, doc/guides/reliability.md): a PSN gap is answered
 * with a sequence error NAK and the requester goes back N from the NAK'd PSN; a lost
 * last packet, ACK, NAK or READ response is recovered by the local ACK timer (the
 * QP's timeout attribute), retried retry_cnt times without progress before the WQE
 * fails with RETRY_EXC_ERR; RNR NAKs wait min_rnr_timer and retry rnr_retry times.
 * Duplicates are re-acknowledged (SEND, WRITE) or answered again (READ); a duplicate
 * atomic (an atomic write too) gets the answer it had the first time, from the
 * responder's replay cache of the last max_dest_rd_atomic atomics, and is not executed
 * again. A destroyed RC QP lingers for about twice its ACK timeout, acknowledging its
 * peer's duplicates again (dpv_xport_set_linger_ms()). UC (IBTA 9.7.7) has PSNs but no
 * acknowledgements: a gap ends the message it falls in, nothing is resent.
 *
 * Doorbells. A QP is visited by dpv_xport_tx() only when its doorbell bit is set: by
 * the poster after it commits WQEs (dpv_qp_doorbell()), and by the device whenever an
 * event may let the QP send (an ACK, a queued response, a timer). An idle QP costs
 * nothing per poll, however many there are.
 */
#ifndef DPV_XPORT_H
#define DPV_XPORT_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_mbuf.h>

#include "dpv_port.h"
#include "dpv_queue.h"
#include "dpv_tm.h"
#include "dpv_wire.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The transport of one device (opaque; dpv_xport_create()). */
struct dpv_xport;

/* Limits (also reported by query_device). */
#define DPV_MAX_QP 4096u          /**< QP numbers 2 .. DPV_MAX_QP-1 (0, 1 reserved) */
#define DPV_MAX_MR 65536u         /**< key slots; dpv_mr_key() holds 16 bits of index */
/** Bytes one region may cover: a fixed cap, the same on every host, so that one remote
 *  key never opens more than this much of a process's memory. */
#define DPV_MAX_MR_SIZE (64ull << 30)
#define DPV_MAX_SGE 16u
#define DPV_MAX_INLINE 256u
#define DPV_MAX_QP_WR 16384u
#define DPV_MAX_CQE 1048576u
#define DPV_MAX_SRQ_WR 65536u
/** TM SRQs one device runs at once (a power of two: the slots of its table by id) */
#define DPV_MAX_TM_SRQ 64u
/** XRC SRQs one device has at once; their numbers (the XRCETH's) are 0 .. this - 1 */
#define DPV_MAX_XRC_SRQ 1024u
#define DPV_UD_GRH_LEN 40u
/** RDMA READs and atomics a requester keeps outstanding, and a responder accepts, per
 *  QP; also the size of the responder's atomic replay cache. */
#define DPV_MAX_RD_ATOMIC 16u
/**
 * The shortest local ACK timeout the device runs, as an exponent of 4.096 us:
 * 2^10 x 4.096 us = 4.2 ms; a QP's smaller timeout attribute runs as this one (a CA's
 * timer may run longer than asked, never shorter). A peer in user space answers
 * within the scheduling delay of its host, not within the microseconds of a NIC; a
 * shorter timer would only resend what is still on its way.
 */
#define DPV_ACK_TIMEOUT_MIN 10u

/* ---- memory regions (IBTA 10.6) ---- */

/** Access flags, the same bit values as IBV_ACCESS_* (lib/verbs copies them). */
enum dpv_access {
	DPV_ACCESS_LOCAL_WRITE = 1u << 0,
	DPV_ACCESS_REMOTE_WRITE = 1u << 1,
	DPV_ACCESS_REMOTE_READ = 1u << 2,
	DPV_ACCESS_REMOTE_ATOMIC = 1u << 3,
	DPV_ACCESS_MW_BIND = 1u << 4,  /**< windows may be bound to the region */
};

struct dpv_mr {
	uint64_t addr;    /**< start of the registered range (virtual address = iova) */
	uint64_t length;
	uint32_t lkey;    /**< dpv_mr_key(slot index, generation) */
	uint32_t rkey;    /**< == lkey */
	uint32_t access;  /**< enum dpv_access */
	uint32_t pd;      /**< protection domain id */
	/** Memory windows bound to it (device side: the binds and invalidations of the
	 *  requester and responder; the control path reads it while it owns the device). */
	uint32_t windows;
};

/**
 * A memory window (IBTA 10.6.7): an entry of the key table, in a slot of its own, with
 * keys of the same layout as a region's (dpv_mr_key()) whose bits 7..0 are the
 * consumer's tag (ibv_inc_rkey(3)). mr.lkey is 0, so no window is ever a local key or a
 * region dpv_mr_find(), dpv_mr_next() or dpv_mr_check() names; mr.rkey is its key,
 * mr.pd its protection domain. The rest is the device's: the bound range and rights in
 * mr.addr, mr.length and mr.access, the region bound to and, for type 2 (2B), the QP
 * bound through. Only the device's owner thread binds and invalidates a window.
 */
struct dpv_mw {
	struct dpv_mr mr;
	struct dpv_mr *region;  /**< the region it is bound to; NULL: not bound */
	uint32_t qpn;           /**< type 2: the QP it was bound through */
	uint8_t type;           /**< 1 or 2 (IBV_MW_TYPE_*) */
};

/**
 * Keys. A key is 32 bits: generation bits 15..8 in key bits 31..24, the slot index in
 * key bits 23..8, generation bits 7..0 in key bits 7..0. The device finds a region by
 * its slot index (dpv_mr_key_slot()) and accepts a key only if it is the whole key of
 * the region in that slot, so the 16 generation bits are what a peer must guess.
 *
 * They are not guessable: each slot counts its uses from a random value, and the
 * generation is that count through dpv_mr_gen(), a permutation keyed with a secret of
 * the table; the secret, the first counts and the order free slots are handed out in
 * are drawn (getrandom(2)) when a device's first region is registered. A freed slot
 * goes to the back of the free list (the least recently freed slot is reused first)
 * and its count steps by one at each reuse, so a deregistered key is refused until
 * every other free slot has been used and then for 65535 further reuses of its own
 * slot, and a slot's next key does not follow from its last.
 */
static inline uint32_t dpv_mr_key(uint32_t slot, uint16_t gen)
{
	return (uint32_t)(gen >> 8) << 24 | slot << 8 | (gen & 0xffu);
}

/**
 * The generation of use @p n of key slot @p slot: a permutation of the 16-bit counts
 * (a four-round Feistel network on bytes, its round keys from @p secret and a hash
 * of the slot),
 * so that distinct uses of a slot get distinct generations and consecutive ones do not
 * follow from each other for a peer without @p secret. Not a cipher: it makes keys
 * unpredictable to someone who guesses, not to someone who can compute.
 */
static inline uint16_t dpv_mr_gen(uint64_t secret, uint32_t slot, uint16_t n)
{
	/* The slot, hashed with the secret: each slot gets round keys of its own. */
	uint32_t h = (slot ^ (uint32_t)(secret >> 32)) * 0x9e3779b1u;
	uint8_t l = (uint8_t)(n >> 8), r = (uint8_t)n;

	h ^= h >> 15;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	for (unsigned int i = 0; i < 4; i++) {
		uint8_t k = (uint8_t)(secret >> (8 * i)) ^ (uint8_t)(h >> (8 * i));
		uint8_t f = (uint8_t)((uint8_t)(r ^ k) * 167u + (uint8_t)(secret >> (8 * i + 32)));
		uint8_t t = r;

		f ^= (uint8_t)(f >> 3 | f << 5);
		r = l ^ f;
		l = t;
	}
	return (uint16_t)(l << 8 | r);
}

static inline uint32_t dpv_mr_key_slot(uint32_t key)
{
	return (key >> 8) & (DPV_MAX_MR - 1);
}

/**
 * Key table of one device, opaque: dpv_xport_mr.c owns it, and every access goes
 * through the dpv_mr_*() calls below. Slot 0 is never used, so key 0 is never valid.
 */
struct dpv_mr_table;

/*
 * Threads of the key table. Registration, deregistration and the control-path look-ups
 * (dpv_mr_find(), dpv_mr_next()) are the control path's, one call on a table at a time:
 * the caller serialises them (lib/verbs holds its MR lock). The device's owner thread
 * reads the table meanwhile, in dpv_mr_check(), without a lock.
 */

/**
 * Create an empty key table in memory of NUMA node @p socket (control path). The
 * device's transport reads it (dpv_xport_create()); it outlives that transport.
 * @return 0; ENOMEM.
 */
int dpv_mr_table_create(int socket, struct dpv_mr_table **out);

/**
 * Destroy a key table (control path, after dpv_xport_destroy() of the transport that
 * read it). The regions still registered are their registrars' to free. NULL: nothing.
 */
void dpv_mr_table_destroy(struct dpv_mr_table *t);

/**
 * Register @p mr, whose addr, length, access and pd the caller has set: give it a key
 * slot and its key (the slot's next generation), in mr->lkey and mr->rkey, then
 * publish it to the device. @p mr is the caller's and must stay until
 * dpv_mr_deregister(); the caller may change its addr, length, access and pd later
 * only while the device is owned (no copy in progress through it). Control path.
 * @return 0; ENOMEM every slot holds a region, or the table's first registration
 *         could not hold the numbers of its shuffle.
 */
int dpv_mr_register(struct dpv_mr_table *t, struct dpv_mr *mr);

/**
 * Deregister @p mr: its key names no region from now on, and its slot goes to the back
 * of the free list with its next generation. Control path, while the device's owner
 * thread does not run (the caller owns the device, dpv_dev_own(), or drives it itself):
 * when it returns no copy goes through the region, and @p mr may be freed.
 */
void dpv_mr_deregister(struct dpv_mr_table *t, struct dpv_mr *mr);

/**
 * The region whose whole key is @p key, or NULL (control path: the region stays while
 * the caller keeps its deregistration out).
 */
const struct dpv_mr *dpv_mr_find(const struct dpv_mr_table *t, uint32_t key);

/**
 * The registered region in the lowest slot above *@p slot, *@p slot set to that slot;
 * NULL when there is none. Start with *@p slot = 0 to visit every region (control
 * path).
 */
const struct dpv_mr *dpv_mr_next(const struct dpv_mr_table *t, uint32_t *slot);

/**
 * The region a key names if it covers [addr, addr + len) with @p access in @p pd,
 * else NULL. len 0 is always covered. Device side: the owner thread, without a lock
 * (and the control path, for a region it keeps registered).
 */
const struct dpv_mr *dpv_mr_check(const struct dpv_mr_table *t, uint32_t key, uint32_t pd,
				  uint64_t addr, uint64_t len, uint32_t access);

/**
 * Give window @p mw (type and pd set by the caller, not bound) a key slot and its first
 * key, in mw->mr.rkey, and publish it. Control path, as dpv_mr_register().
 * @return 0; ENOMEM every slot is taken.
 */
int dpv_mw_register(struct dpv_mr_table *t, struct dpv_mw *mw);

/**
 * Take window @p mw out of the table, unbound first: its keys name nothing from now on.
 * Control path, while the device's owner thread does not run (as dpv_mr_deregister()).
 */
void dpv_mw_deregister(struct dpv_mr_table *t, struct dpv_mw *mw);

/**
 * The window whose current key is @p key, bound, covering [addr, addr + len) with
 * @p access, of protection domain @p pd and, for type 2, bound through QP @p qpn; NULL
 * otherwise. The remote check made where dpv_mr_check() found no region: device side.
 */
const struct dpv_mr *dpv_mw_check(const struct dpv_mr_table *t, uint32_t key, uint32_t pd,
				  uint32_t qpn, uint64_t addr, uint64_t len, uint32_t access);

/**
 * IBTA 10.6.7.2: bind the window whose index @p key names (its bits 31..8 must be the
 * window's own) to [addr, addr + len) of the region whose lkey is @p lkey, with @p access
 * (REMOTE_* bits), through a QP of protection domain @p pd and number @p qpn. The
 * window's key becomes @p key (a type 1 window's tag is the caller's choice too). A type
 * 1 window with @p len 0 and @p lkey 0 is unbound instead. Device side (the requester).
 * @return DPV_WC_SUCCESS; DPV_WC_MW_BIND_ERR: no such window or region, another PD, a
 *         type 2 window already bound, a region without MW_BIND, remote write or atomic
 *         on a region without local write, a range outside the region or (type 2) empty.
 */
uint8_t dpv_mw_bind(struct dpv_mr_table *t, uint32_t key, uint32_t lkey, uint64_t addr,
		    uint64_t len, uint32_t access, uint32_t pd, uint32_t qpn);

/**
 * IBTA 10.6.7.2.5 / 9.4.3: the window an invalidation of @p key unbinds: the bound type
 * 2 window whose key is @p key, of protection domain @p pd, bound through QP @p qpn;
 * NULL if there is none. Device side (a LOCAL_INV at the requester, a SEND with
 * Invalidate at the responder, which checks before it accepts the message).
 */
struct dpv_mw *dpv_mw_inv_target(const struct dpv_mr_table *t, uint32_t key, uint32_t pd,
				 uint32_t qpn);

/** Unbind window @p mw: its key names nothing until it is bound again. Device side. */
void dpv_mw_unbind(struct dpv_mw *mw);

/**
 * Unbind the type 2 windows bound through QP @p qpn, which is being destroyed: QP
 * numbers come back, and a window bound to the old QP must not open to the new one.
 * Control path, while the device's owner thread does not run, serialised with
 * registration (a scan of the table while it holds windows).
 */
void dpv_mw_unbind_qp(struct dpv_mr_table *t, uint32_t qpn);

/* ---- completions ---- */

/** Completion status (IBTA 11.4.2.1 names; lib/verbs maps them onto IBV_WC_*). */
enum dpv_wc_status {
	DPV_WC_SUCCESS = 0,
	DPV_WC_LOC_LEN_ERR,
	DPV_WC_LOC_QP_OP_ERR,
	DPV_WC_LOC_PROT_ERR,
	DPV_WC_WR_FLUSH_ERR,
	DPV_WC_BAD_RESP_ERR,
	DPV_WC_LOC_ACCESS_ERR,
	DPV_WC_REM_INV_REQ_ERR,
	DPV_WC_REM_ACCESS_ERR,
	DPV_WC_REM_OP_ERR,
	DPV_WC_RETRY_EXC_ERR,
	DPV_WC_RNR_RETRY_EXC_ERR,
	DPV_WC_GENERAL_ERR,
	DPV_WC_TM_ERR,
	DPV_WC_TM_RNDV_INCOMPLETE,
	DPV_WC_MW_BIND_ERR,
};

enum dpv_wc_opcode {
	DPV_WC_SEND = 0,
	DPV_WC_RDMA_WRITE,
	DPV_WC_RDMA_READ,
	DPV_WC_RECV,
	DPV_WC_RECV_RDMA_WITH_IMM,
	DPV_WC_TM_ADD,
	DPV_WC_TM_DEL,
	DPV_WC_TM_SYNC,
	DPV_WC_TM_RECV,
	DPV_WC_TM_NO_TAG,
	DPV_WC_COMP_SWAP,
	DPV_WC_FETCH_ADD,
	DPV_WC_BIND_MW,
	DPV_WC_LOCAL_INV,
	DPV_WC_ATOMIC_WRITE,
};

enum dpv_wc_flags {
	DPV_WC_F_GRH = 1u << 0,
	DPV_WC_F_IMM = 1u << 1,
	DPV_WC_F_TM_SYNC_REQ = 1u << 2,
	DPV_WC_F_TM_MATCH = 1u << 3,
	DPV_WC_F_TM_DATA_VALID = 1u << 4,
	DPV_WC_F_INV = 1u << 5,  /**< a SEND with Invalidate: imm is the key invalidated */
	/** The poll side gives tm_handle of SRQ srq_id back when it reads this cqe
	 *  (dpv_xport_tm_release()) */
	DPV_WC_F_TM_RELEASE = 1u << 6,
	/** Not for the application: skipped by the poll side (after giving tm_handle back
	 *  with DPV_WC_F_TM_RELEASE): lib/tm's own entries, and the completions of a QP
	 *  reset since (dpv_cq_clean()) */
	DPV_WC_F_HIDDEN = 1u << 7,
};

/** One completion: one 64-byte CQ ring slot. */
struct dpv_cqe {
	uint64_t wr_id;
	uint64_t tm_tag;     /**< TM_RECV with MATCH: the TMH tag */
	uint32_t byte_len;
	uint32_t qp_num;
	uint32_t src_qp;
	/** host order; lib/verbs hands it out big-endian. With DPV_WC_F_INV the key
	 *  invalidated, stored big-endian so that the same conversion gives it in host
	 *  order, as ibv_wc's invalidated_rkey (which shares imm_data's place) has it. */
	uint32_t imm;
	uint32_t tm_priv;    /**< TM_RECV with MATCH: the TMH app_ctx */
	uint32_t tm_handle;  /**< TM ops and TM_RECV: the entry's handle (for release) */
	uint8_t status;      /**< enum dpv_wc_status */
	uint8_t opcode;      /**< enum dpv_wc_opcode */
	uint8_t flags;       /**< enum dpv_wc_flags */
	uint8_t vendor_err;
	uint32_t srq_id;     /**< with DPV_WC_F_TM_RELEASE: the SRQ whose handle it is */
	/** On a CQ with stamp set: the TSC of the receive burst, transmit round or timer
	 *  tick in which the device wrote the completion (rte_get_tsc_cycles() units). */
	uint64_t ts;
};

/** A completion queue: a ring the device produces into. */
struct dpv_cq {
	struct dpv_ring *ring;   /**< slots: struct dpv_cqe */
	uint32_t id;
	uint64_t overflows;      /**< completions that found the ring full (device side) */
	/** Called by the device after writing completions, when armed (lib/verbs arms);
	 *  NULL for a CQ never armed, whose completions then skip the arming's fence. */
	void (*notify)(struct dpv_cq *cq, void *arg);
	void *notify_arg;
	uint32_t armed;          /**< 0, or 1 any / 2 solicited only; device clears */
	bool stamp;              /**< its completions carry ts (set before first use) */
	/**
	 * Overrun (IBTA 11.4.2.2): set by the device at the first completion that found
	 * the ring full, and never cleared. That completion is lost and counted; the CQ's
	 * error_event is called once, and every QP that completes into the CQ is moved to
	 * ERR with DPV_QP_EV_FATAL, so the loss is never silent. Completions that find
	 * room later (the flushes of those QPs) are still written.
	 */
	bool error;
	/** Called by the device when error is set (lib/verbs queues IBV_EVENT_CQ_ERR). */
	void (*error_event)(struct dpv_cq *cq, void *arg);
	void *error_arg;
};

/**
 * Create a CQ of at least @p cqe entries (rounded up to a power of two), ring memory on
 * the port's NUMA node. Any thread.
 * @return 0; EINVAL cqe 0 or above DPV_MAX_CQE; ENOMEM.
 */
int dpv_cq_create(struct dpv_xport *x, uint32_t cqe, struct dpv_cq **out);

/** Destroy a CQ (owner; no QP or SRQ may still use it). */
void dpv_cq_destroy(struct dpv_cq *cq);

/**
 * Give a CQ a ring of at least @p cqe entries (rounded up to a power of two), the
 * completions not yet consumed moved into it in order (ibv_resize_cq(3)). Threads: the
 * device's owner, while no thread consumes the ring (lib/verbs holds the CQ's poll
 * lock): the ring is replaced under both its sides.
 * @return 0 (also when the size is already that); EINVAL @p cqe 0, above DPV_MAX_CQE,
 *         or fewer than the completions it holds; ENOMEM, the CQ as it was.
 */
int dpv_cq_resize(struct dpv_xport *x, struct dpv_cq *cq, uint32_t cqe);

/** Write one completion; false (and counted in overflows) if the ring is full. */
bool dpv_cq_push(struct dpv_cq *cq, const struct dpv_cqe *cqe, bool solicited);

/**
 * Take a QP's completions out of a CQ (ibv_modify_qp(3) to RESET: what the QP had
 * completed and the application had not polled is gone with the QP's old life, as a
 * NIC's driver cleans its CQ). They stay in their slots, hidden, and the poll side skips
 * them (a TM receive's entry is still given back); the SRQ's own tag operations stay.
 * Threads: the device's owner, while no thread consumes the ring (lib/verbs holds the
 * CQ's poll lock): the owner is the only producer, and the slots it marks are
 * published ones no consumer is reading.
 * @return the completions taken out.
 */
uint32_t dpv_cq_clean(struct dpv_cq *cq, uint32_t qpn);

/* ---- work requests (ring slots) ---- */

struct dpv_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

enum dpv_wr_opcode {
	DPV_WR_SEND = 0,
	DPV_WR_SEND_WITH_IMM,
	DPV_WR_RDMA_WRITE,
	DPV_WR_RDMA_WRITE_WITH_IMM,
	DPV_WR_RDMA_READ,
	DPV_WR_ATOMIC_CMP_SWP,   /**< RC: 8 bytes at remote_addr; one 8-byte SGE gets the
	                              value before the operation */
	DPV_WR_ATOMIC_FETCH_ADD,
	/** IBTA 10.6.7.2: a window bind, done by the device and never sent: rkey the key the
	 *  window gets (bits 31..8 name it), imm the region's lkey, remote_addr and
	 *  compare_add the range, swap the window's access (enum dpv_access). */
	DPV_WR_BIND_MW,
	DPV_WR_LOCAL_INV,        /**< imm: the key of the type 2 window to invalidate */
	DPV_WR_SEND_WITH_INV,    /**< RC: a SEND whose IETH (imm) the responder invalidates */
	DPV_WR_ATOMIC_WRITE,     /**< RC (IBTA 1.5): the 8 bytes in swap, as they are to lie
	                              in memory, stored at remote_addr in one store; no SGE */
};

enum dpv_wr_flags {
	DPV_WR_F_SIGNALED = 1u << 0,
	DPV_WR_F_SOLICITED = 1u << 1,
	DPV_WR_F_INLINE = 1u << 2,
	DPV_WR_F_FENCE = 1u << 3,
};

/** A send WQE: one SQ ring slot (512 bytes). */
struct dpv_swqe {
	uint64_t wr_id;
	uint64_t remote_addr;  /**< WRITE, READ, atomics */
	uint32_t rkey;         /**< WRITE, READ, atomics */
	uint32_t imm;          /**< *_WITH_IMM, host order */
	uint32_t length;       /**< total bytes (sum of SGEs, or inline bytes) */
	uint8_t opcode;        /**< enum dpv_wr_opcode */
	uint8_t flags;         /**< enum dpv_wr_flags */
	uint8_t num_sge;
	uint8_t origin;        /**< transport-private: who made the WQE (0: the poster;
	                            the device's own rendezvous WQEs, doc/guides/rendezvous.md) */
	/* UD: the address handle and remote QP, copied at post. */
	uint32_t ud_dst_ip;    /**< host order */
	union {
		uint32_t ud_remote_qpn;
		uint32_t xrc_srqn; /**< XRC: the remote XRC SRQ the message is for */
	};
	uint32_t ud_remote_qkey;
	uint8_t ud_tos;
	uint8_t ud_ttl;
	uint8_t pad1[2];
	uint64_t compare_add;  /**< CMP_SWP: the compare value; FETCH_ADD: the addend */
	uint64_t swap;         /**< CMP_SWP: the value stored when the compare matched;
	                            ATOMIC_WRITE: the bytes to store */
	union {
		struct dpv_sge sge[DPV_MAX_SGE];
		uint8_t inline_data[DPV_MAX_INLINE];
	};
	/** Transport-private: the tag entry that a READ the device makes for a rendezvous
	 *  fills, and the FIN after it names (doc/guides/rendezvous.md). */
	struct {
		uint64_t tag;          /**< the TMH tag */
		uint32_t len;          /**< the data length (the RVH's) */
		uint32_t app_ctx;      /**< the TMH app_ctx */
		uint32_t handle;       /**< the entry's handle (lib/tm) */
		uint32_t pad;
	} rndv;
	uint8_t pad2[512 - 64 - DPV_MAX_INLINE - 24];
};

_Static_assert(sizeof(struct dpv_swqe) == 512, "a send WQE is one 512-byte ring slot");

/** A receive WQE: one RQ / SRQ ring slot (272 bytes rounded to 320). */
struct dpv_rwqe {
	uint64_t wr_id;
	uint32_t num_sge;
	uint32_t pad0;
	struct dpv_sge sge[DPV_MAX_SGE];
	uint8_t pad1[320 - 16 - DPV_MAX_SGE * sizeof(struct dpv_sge)];
};

/* ---- shared receive queues ---- */

struct dpv_srq {
	uint32_t id;
	struct dpv_xport *xport;     /**< the device (transport-private: its TM ops run there) */
	uint32_t pd;
	uint32_t max_wr;
	uint32_t max_sge;
	struct dpv_lanes lanes;      /**< slots: struct dpv_rwqe; one lane per poster */
	/** Posted and not yet consumed (posters add, device subtracts; atomics). */
	uint32_t posted;
	uint32_t limit;              /**< armed limit; 0: disarmed (device clears) */
	/** Set by the device when the CQ of a TM SRQ overran (TM completions were lost):
	 *  the SRQ takes no more receive WRs. Read by posters (atomic). */
	bool error;
	/** Called by the device when the limit fires (lib/verbs queues the async event). */
	void (*limit_event)(struct dpv_srq *srq, void *arg);
	/** Called by the device once, when the SRQ goes to error (IBV_EVENT_SRQ_ERR). */
	void (*error_event)(struct dpv_srq *srq, void *arg);
	void *event_arg;             /**< the argument of both callbacks */
	/** TM: TM op completions (and SRQ_TM CQ); XRC: every completion of the SRQ (an
	 *  XRC target QP has no CQ); NULL for a basic SRQ (its QPs' receive CQs) */
	struct dpv_cq *cq;
	uint32_t xrcd;               /**< XRC: its XRC domain (not 0); 0: not XRC */
	uint32_t xrc_srqn;           /**< XRC: its number, the XRCETH's (DPV_MAX_XRC_SRQ) */
	struct dpv_tm *tm;           /**< NULL for a basic SRQ */
	struct dpv_lanes tm_ops;     /**< TM: slots struct dpv_tm_op, one lane per poster */
	/** TM: rung by posters once their ops are committed to tm_ops (dpv_srq_ops_ring());
	 *  the device's poll looks at the lanes only while it is set, so a poll with no
	 *  op posted reads this word, not every lane */
	uint32_t ops_rung;
	bool ops_left;               /**< TM, device: a drain left an op (its CQ was full) */
};

/**
 * Producer side of a TM SRQ's op lanes: after committing ops to a lane of
 * @p srq->tm_ops, tell the device (a store, no locked instruction). Any thread.
 */
static inline void dpv_srq_ops_ring(struct dpv_srq *srq)
{
	__atomic_store_n(&srq->ops_rung, 1, __ATOMIC_RELEASE);
}

/** Creation parameters of an SRQ (dpv_srq_create()). */
struct dpv_srq_init {
	uint32_t pd;
	uint32_t max_wr;        /**< 1 .. DPV_MAX_SRQ_WR (rounded up per lane ring) */
	uint32_t max_sge;       /**< 1 .. DPV_MAX_SGE */
	uint32_t lanes;         /**< producer lanes (posting threads), 1 .. DPV_LANES_MAX */
	uint32_t limit;         /**< initial srq_limit; 0: disarmed */
	struct dpv_cq *cq;      /**< TM: the CQ of TM completions; XRC: of all its
	                             completions; else NULL */
	const struct dpv_tm_config *tm; /**< TM SRQ: the tag list; NULL: basic SRQ */
	uint32_t xrcd;          /**< XRC SRQ: its XRC domain, not 0 (with cq, without tm);
	                             0: not XRC */
};

/**
 * Create an SRQ: its lanes (rte_malloc_socket on the port's node) and, for a TM SRQ,
 * its lib/tm engine and op lanes. A TM SRQ enters the device's table of TM SRQs as
 * the last step, whole: from then on the device runs its ops (dpv_xport_tm_ops()) and
 * the poll side gives its handles back by its id (dpv_xport_tm_release()). Any thread,
 * while the device runs (the table has a lock of its own for its writers). An XRC SRQ
 * takes a free number (srq->xrc_srqn) in the device's table of XRC SRQs, by which the
 * XRCETH of a request names it, as its last step.
 * @return 0; EINVAL bad sizes, or an XRC SRQ without its CQ or with TM; ENOMEM, also
 *         when the device has DPV_MAX_TM_SRQ TM SRQs or DPV_MAX_XRC_SRQ XRC SRQs
 *         already.
 */
int dpv_srq_create(struct dpv_xport *x, const struct dpv_srq_init *init, struct dpv_srq **out);

/**
 * Destroy an SRQ (owner; no QP may still use it). A TM SRQ leaves the device's table
 * first; the completions of its CQ that still name it give nothing back. An XRC SRQ
 * leaves the table of XRC SRQs: a message an XRC target QP was placing into it ends
 * without a completion, and requests that still name it get the NAK of a remote
 * access error.
 */
void dpv_srq_destroy(struct dpv_xport *x, struct dpv_srq *srq);

/* ---- queue pairs ---- */

enum dpv_qp_type { DPV_QPT_RC = 2, DPV_QPT_UC = 3, DPV_QPT_UD = 4 }; /* IBV_QPT_* values */

/**
 * An XRC QP's half of the connection (IBTA 9.3.6, XRC): an RC QP (DPV_QPT_RC) whose
 * packets carry the XRC opcodes. The initiator sends (every request with the XRCETH of
 * its WQE's xrc_srqn) and has no receive side; the target receives, each request into
 * the XRC SRQ of its XRC domain that the XRCETH names, and has no send queue and no CQ.
 */
enum dpv_xrc_role { DPV_XRC_NONE = 0, DPV_XRC_INI, DPV_XRC_TGT };

/** QP states, IBTA 10.3.1 (same values as IBV_QPS_*). */
enum dpv_qp_state {
	DPV_QPS_RESET = 0,
	DPV_QPS_INIT,
	DPV_QPS_RTR,
	DPV_QPS_RTS,
	DPV_QPS_SQD,
	DPV_QPS_SQE,
	DPV_QPS_ERR,
};

/** Attributes of dpv_qp_modify(); a mask says which are set (IBV_QP_* bit values). */
struct dpv_qp_attr {
	uint8_t state;          /**< enum dpv_qp_state */
	uint8_t path_mtu;       /**< 1..5: 256 << (n-1) bytes, as IBV_MTU_* */
	uint8_t timeout;        /**< local ACK timeout exponent */
	uint8_t retry_cnt;
	uint8_t rnr_retry;      /**< 7 = forever */
	uint8_t min_rnr_timer;  /**< IBTA Table 45 code */
	uint8_t tos;
	uint8_t ttl;
	uint32_t access;        /**< enum dpv_access: what remote peers may do */
	uint32_t qkey;
	uint32_t dest_qpn;
	uint32_t rq_psn;
	uint32_t sq_psn;
	uint32_t dst_ip;        /**< host order, from the AH's GID */
	uint16_t pkey_index;
	uint8_t max_rd_atomic;      /**< READs and atomics this QP keeps outstanding as
	                                 requester */
	uint8_t max_dest_rd_atomic; /**< READs and atomics this QP accepts outstanding as
	                                 responder; atomic results it keeps for replay */
};

/** The IBV_QP_* mask bits dpv_qp_modify() understands (same values). */
enum dpv_qp_attr_mask {
	DPV_QP_STATE = 1 << 0,
	DPV_QP_ACCESS_FLAGS = 1 << 3,
	DPV_QP_PKEY_INDEX = 1 << 4,
	DPV_QP_PORT = 1 << 5,
	DPV_QP_QKEY = 1 << 6,
	DPV_QP_AV = 1 << 7,
	DPV_QP_PATH_MTU = 1 << 8,
	DPV_QP_TIMEOUT = 1 << 9,
	DPV_QP_RETRY_CNT = 1 << 10,
	DPV_QP_RNR_RETRY = 1 << 11,
	DPV_QP_RQ_PSN = 1 << 12,
	DPV_QP_MAX_QP_RD_ATOMIC = 1 << 13,
	DPV_QP_MIN_RNR_TIMER = 1 << 15,
	DPV_QP_SQ_PSN = 1 << 16,
	DPV_QP_MAX_DEST_RD_ATOMIC = 1 << 17,
	DPV_QP_DEST_QPN = 1 << 20,
};

struct dpv_xport;

/** Creation parameters of a QP (dpv_qp_create()). */
struct dpv_qp_init {
	uint8_t type;            /**< enum dpv_qp_type */
	uint32_t pd;
	uint32_t max_send_wr;    /**< rounded up to a power of two; may be 0 */
	uint32_t max_recv_wr;    /**< ignored with an SRQ */
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline;
	bool sq_sig_all;
	struct dpv_cq *send_cq;
	struct dpv_cq *recv_cq;
	struct dpv_srq *srq;     /**< NULL: own RQ */
	uint8_t xrc;             /**< enum dpv_xrc_role; DPV_XRC_TGT: no CQs, no SQ, no
	                              SRQ (srq is the one the last request named) */
	uint32_t xrcd;           /**< DPV_XRC_TGT: its XRC domain (not 0) */
};

/**
 * Why the device moved a QP to ERR on its own: the affiliated asynchronous error of
 * IBTA 11.6.3 that lib/verbs raises (IBV_EVENT_QP_*). dpv_qp.event holds it when
 * fatal_event is called.
 */
enum dpv_qp_event {
	DPV_QP_EV_NONE = 0,    /**< an error completion tells the application: no event */
	DPV_QP_EV_FATAL,       /**< retries exhausted, or a CQ of the QP overrun */
	DPV_QP_EV_REQ_ERR,     /**< the responder got an invalid request (opcode
	                            sequence, length, too many READs) */
	DPV_QP_EV_ACCESS_ERR,  /**< the responder found a remote access violation
	                            (R_Key, range, access rights) */
};

/**
 * A queue pair. The SQ and RQ rings are written by the application (through lib/verbs)
 * and read in place by the device; a send WQE stays in its slot until it completes.
 */
struct dpv_qp {
	uint32_t qpn;
	uint64_t *db_word;         /**< the device's doorbell word of this QP */
	uint64_t *db_summary;      /**< the device's word of doorbell words */
	struct dpv_qp_init init;
	struct dpv_ring *sq;       /**< slots: struct dpv_swqe; NULL if max_send_wr == 0 */
	struct dpv_ring *rq;       /**< slots: struct dpv_rwqe; NULL with an SRQ, and for XRC */
	struct dpv_qp_attr attr;   /**< current attributes (state included) */
	void *xport_state;         /**< requester/responder/completer state (dpv_xport_qp.c) */
	/** Called by the device when the QP enters ERR on its own with an event to
	 *  raise (async event); event says which. */
	void (*fatal_event)(struct dpv_qp *qp, void *arg);
	void *fatal_arg;
	uint8_t event;             /**< enum dpv_qp_event: set before fatal_event */
};

/**
 * Tell the device that @p qp has new WQEs in its SQ (or anything else to send): the
 * next dpv_xport_tx() visits it. The poster calls it after dpv_ring_commit(); the
 * device calls it for its own events. Any thread; lock-free (one or two atomic ORs).
 */
static inline void dpv_qp_doorbell(struct dpv_qp *qp)
{
	const uint64_t bit = 1ull << (qp->qpn & 63);

	/* A full barrier (the locked OR) orders the poster's ring commit before the
	 * device's read of the bit: a plain load here could let the device clear the bit
	 * and miss the WQE. The first setter of a word's bit announces the word. */
	if ((__atomic_fetch_or(qp->db_word, bit, __ATOMIC_SEQ_CST) & bit) == 0)
		__atomic_fetch_or(qp->db_summary, 1ull << (qp->qpn >> 6), __ATOMIC_SEQ_CST);
}

/* ---- the transport of one device ---- */

/**
 * What the protocol did on one QP (IBTA 9.7.5, 9.9), and, summed over every QP the
 * device ever had, on the device (dpv_xport_stats.qps). doc/guides/reliability.md
 * says what each means.
 */
struct dpv_qp_stats {
	uint64_t tx_packets, rx_packets;
	/* requester and completer */
	uint64_t retrans_timeout;   /**< go-back-N after the local ACK timer expired */
	uint64_t retrans_seq_nak;   /**< go-back-N after a PSN sequence error NAK */
	uint64_t retrans_rnr;       /**< resends after an RNR NAK's wait */
	uint64_t retrans_read;      /**< READ (and atomic) requests sent again at once, one
	                                 per gap of responses known lost (behind later
	                                 ones, or an ACK beyond the READ: IBTA's implied
	                                 NAK); a probe's are the probe's */
	uint64_t retrans_probe;     /**< last packets sent again to ask for an ACK that
	                                 is late (a tail loss probe) */
	uint64_t retrans_packets;   /**< request packets sent again, by every cause */
	uint64_t ack_timeouts;      /**< local ACK timer expiries */
	uint64_t timer_deferred;    /**< expiries not counted: the port held the QP's
	                                 packets back (its TX queue full) */
	uint64_t retries_spent;     /**< retries of retry_cnt spent: attempts (a timeout,
	                                 a sequence error NAK) without progress since
	                                 the last one */
	uint64_t retry_resets;      /**< progress that gave spent retries back */
	uint64_t retry_exceeded;    /**< WQEs failed with RETRY_EXC_ERR */
	uint64_t rnr_retry_exceeded;/**< WQEs failed with RNR_RETRY_EXC_ERR */
	uint64_t dup_responses;     /**< ACKs, NAKs and READ responses already seen (placed
	                                 or kept): dropped */
	uint64_t ghost_responses;   /**< responses for PSNs never sent: ignored */
	uint64_t seq_naks_received, rnr_naks_received;
	uint64_t naks_received;     /**< every NAK but RNR NAKs (sequence and error) */
	uint64_t ackreq_sent;       /**< request packets sent with AckReq set */
	/* responder */
	uint64_t dup_requests;      /**< requests behind the expected PSN */
	uint64_t out_of_seq;        /**< requests ahead of the expected PSN: dropped; and
	                                 READ responses ahead at the requester (kept
	                                 within 1024 PSNs of the expected one) */
	uint64_t seq_naks_sent, rnr_naks_sent;
	uint64_t naks_sent;         /**< every NAK but RNR NAKs (sequence and error) */
	uint64_t dup_reads_dropped; /**< duplicate READs with no responder resource left:
	                                 dropped, the requester asks again */
	uint64_t resp_queue_full;   /**< answers that found the responder queue full (its
	                                 size makes it never happen): dropped */
	uint64_t atomic_replays;    /**< duplicate atomics answered from the replay cache */
	uint64_t dup_atomics_dropped; /**< duplicate atomics older than the replay cache
	                                 keeps, or with no responder resource left */
	uint64_t uc_msgs_dropped;   /**< UC: messages in progress ended by a PSN gap, and
	                                 packets of a message whose start was lost */
	uint64_t acks_sent;         /**< ACKs sent (not NAKs, READ responses or atomic
	                                 acknowledgements) */
	uint64_t acks_coalesced;    /**< requests with AckReq answered by the ACK of a
	                                 later one */
	uint64_t acks_unasked;      /**< ACKs for requests without AckReq: XP_UNASKED_MAX
	                                 of them, or quiet after one */
	/* both */
	uint64_t flushed_wrs;       /**< WQEs completed with WR_FLUSH_ERR */
};

/** Counters of one device's transport (owner writes; a stale snapshot elsewhere). */
struct dpv_xport_stats {
	uint64_t rx_packets, tx_packets;
	uint64_t rx_bad[DPV_WIRE_E_ICRC + 1]; /**< by enum dpv_wire_err */
	uint64_t rx_unknown_qp, rx_bad_state, rx_bad_qkey, rx_bad_pkey;
	uint64_t rx_bad_src;       /**< RC frames from an address not the QP's peer */
	struct dpv_qp_stats qps;  /**< the protocol counters of every QP, summed */
	uint64_t access_errors;   /**< bad rkey / lkey / range / access flags */
	uint64_t mem_faults;      /**< copies that faulted: a region's memory unmapped */
	uint64_t tm_expected, tm_unexpected, tm_no_tag;
	/* Rendezvous (doc/guides/rendezvous.md): READs the device made for matched
	 * headers, the bytes that ended DATA_VALID, and those that completed in error. */
	uint64_t tm_rndv_reads, tm_rndv_bytes, tm_rndv_failed;
	uint64_t cq_overflows;
	uint64_t tx_no_mbuf;
	uint64_t rx_ud_dropped;   /**< UD messages with no receive WQE (UD has no RNR) */
	uint64_t tx_dropped;      /**< frames to the device itself that found no room */
	uint64_t linger_qps;      /**< destroyed RC QPs that lingered (dpv_xport_set_linger_ms) */
	uint64_t linger_acks;     /**< duplicates a lingering QP acknowledged again */
	/* The GSI (dpv_xport_set_gsi()): MADs handed to its handler, frames to QP 1 that
	 * were not a GSI datagram or found no handler, MADs sent. */
	uint64_t rx_gsi, rx_gsi_dropped, tx_gsi;
};

/**
 * Install the fault guard: a SIGSEGV and a SIGBUS handler for the whole process, under
 * which a fault inside a device's copy through registered memory (memory the program
 * unmapped, or took rights from, before it deregistered the region) ends that access
 * with an error, counted in mem_faults, as a bad key would, instead of ending the
 * process (doc/guides/memory.md). A fault anywhere else goes on to the handler
 * installed before this one (the default action if there was none). A handler the
 * program installs after this call replaces it and takes the protection away.
 *
 * Without this call no handler is installed, and a fault in a copy is the process's,
 * as any bad access is: SIGSEGV or SIGBUS, by default the end of it. lib/verbs calls
 * it unless DPV_FAULT_GUARD is 0 (or dpv_verbs_set_fault_guard() said no).
 *
 * Any thread; once per process: later calls do nothing, and the handler stays until
 * the process ends (dpv_xport_destroy() leaves it). Call it before the first
 * dpv_xport_create(): the copies of a device are guarded only from the call on.
 */
void dpv_xport_fault_guard(void);

/**
 * Create the transport of a device over an open port. It installs no signal handler
 * (dpv_xport_fault_guard()).
 * @param mrs  the device's key table (dpv_mr_table_create(); registered into with
 *             dpv_mr_register())
 * @return 0; ENOMEM.
 */
int dpv_xport_create(struct dpv_port *port, struct dpv_mr_table *mrs, struct dpv_xport **out);
void dpv_xport_destroy(struct dpv_xport *x);

/**
 * Create a QP (owner). Allocates its rings (rte_malloc_socket on the port's node) and
 * a QP number. The QP starts in RESET.
 * @return 0; EINVAL bad sizes or type; ENOMEM; ENOSPC no QP number left.
 */
int dpv_qp_create(struct dpv_xport *x, const struct dpv_qp_init *init, struct dpv_qp **out);

/**
 * Modify a QP (owner): the state transitions and required attributes of IBTA 10.3.1 /
 * ibv_modify_qp(3). Entering ERR flushes every outstanding WQE with WR_FLUSH_ERR.
 * @return 0; EINVAL for a transition or attribute the state machine refuses.
 */
int dpv_qp_modify(struct dpv_xport *x, struct dpv_qp *qp, const struct dpv_qp_attr *attr,
		  uint32_t mask);

/** Destroy a QP (owner): it stops at once; nothing more is completed for it. */
void dpv_qp_destroy(struct dpv_xport *x, struct dpv_qp *qp);

/** The QP of a number, or NULL (owner). */
struct dpv_qp *dpv_xport_qp(struct dpv_xport *x, uint32_t qpn);

/** Process received frames (owner). Frees every mbuf. */
void dpv_xport_rx(struct dpv_xport *x, struct rte_mbuf **pkts, uint16_t n);

/**
 * Send what the QPs may send now (new WQEs in their SQ rings, responses, ACKs, RNR
 * retries that are due), at most @p budget packets (owner). QPs are visited in turn
 * so none starves.
 */
uint32_t dpv_xport_tx(struct dpv_xport *x, uint32_t budget);

/**
 * Timers (owner): local ACK timeouts, RNR waits and the responder's ACKs for requests
 * received without AckReq (after 100 us of quiet) that are due at @p now
 * (rte_get_tsc_cycles() units). Only QPs with something outstanding are looked at: a
 * device whose QPs are all idle returns at once.
 */
void dpv_xport_tick(struct dpv_xport *x, uint64_t now);

/**
 * Execute posted TM ops of one SRQ, at most @p budget (owner): lib/tm, then their
 * completions. An op whose completion finds the CQ full stays posted. The device's
 * poll runs every TM SRQ's with dpv_xport_tm_ops(), for the SRQs whose posters rang
 * (dpv_srq_ops_ring()); this one is for a caller that drives a single SRQ and counts
 * what it ran, and looks at its lanes whether or not they rang.
 * @return the ops executed; 0 for a basic SRQ.
 */
uint32_t dpv_xport_srq_ops(struct dpv_srq *srq, uint32_t budget);

/**
 * Execute the posted TM ops of every TM SRQ of the device, at most @p budget of each
 * (owner; once per poll, before the received frames, so that an op posted before a
 * message arrived is in the tag list when it is matched). Nothing to do costs a load.
 * @return the ops executed.
 */
uint32_t dpv_xport_tm_ops(struct dpv_xport *x, uint32_t budget);

/**
 * The number of TM SRQs of the device, as a word the owner may load (acquire) before
 * each dpv_xport_tm_ops(): while it is 0 the call would do nothing, and a device
 * without TM SRQs then saves the call on every poll. Valid as long as the device.
 */
const uint32_t *dpv_xport_tm_count(const struct dpv_xport *x);

/**
 * Give back tag entry @p handle of the TM SRQ whose id is @p srq_id: the poll side of
 * a CQ, as it consumes a completion with DPV_WC_F_TM_RELEASE (its srq_id and
 * tm_handle). Threads: the CQ's consumer (lib/verbs holds its poll lock), alongside
 * the owner; the SRQ is not destroyed while its CQ is polled (ibv_destroy_srq(3)).
 * @return 0; ENOENT no TM SRQ of that id (destroyed since the completion was
 *         written); or dpv_tm_release()'s errno.
 */
int dpv_xport_tm_release(struct dpv_xport *x, uint32_t srq_id, uint32_t handle);

/** Counters of the device (owner, or a stale snapshot from any thread). */
void dpv_xport_stats_get(const struct dpv_xport *x, struct dpv_xport_stats *st);

/**
 * The device's counters in place, for a reader on another thread: the owner writes
 * them, each field is one aligned 64-bit word to read on its own (a snapshot of the
 * whole is not consistent across fields). Any thread.
 */
const struct dpv_xport_stats *dpv_xport_stats_ref(const struct dpv_xport *x);

/** One QP's counters in place, as dpv_xport_stats_ref(). Any thread. */
const struct dpv_qp_stats *dpv_qp_stats_ref(const struct dpv_qp *qp);

/** The longest a destroyed RC QP lingers unless set otherwise (milliseconds). */
#define DPV_LINGER_MS_DEFAULT 200u
/** The longest dpv_xport_set_linger_ms() takes (one minute). */
#define DPV_LINGER_MS_MAX 60000u

/**
 * Set how long at most a destroyed RC QP lingers (owner). A QP destroyed while
 * connected (RTR, RTS, SQD) that received a request less than its period ago (twice
 * its local ACK timeout, at most @p ms; @p ms when it has no timer) leaves a record
 * for the rest of that period: a duplicate from its peer (a SEND or WRITE asking for
 * an ACK, with a PSN behind the one expected) is acknowledged again, as the live QP
 * would, so a peer whose last ACK was lost does not fail a delivered message with
 * RETRY_EXC_ERR. Each duplicate answered keeps the record another period, at most two
 * after that last request; the device keeps XP_LINGER_MAX (64) records at once.
 * doc/guides/reliability.md.
 * @param ms 0 (no records, and those kept end) to DPV_LINGER_MS_MAX; DPV_LINGER_MS_DEFAULT
 *           until set
 * @return 0; EINVAL @p ms too large.
 */
int dpv_xport_set_linger_ms(struct dpv_xport *x, uint32_t ms);

/** What dpv_xport_set_linger_ms() set (owner). */
uint32_t dpv_xport_linger_ms(const struct dpv_xport *x);

/**
 * Until when the device must run for its peers to hear what they may still be missing
 * (owner): the latest end of the records of destroyed QPs (dpv_xport_set_linger_ms()),
 * and of the period after the last request of each connected RC QP still there, whose
 * peer may have lost that acknowledgement as well. Whoever closes the device, or ends
 * the process, drives it until then.
 * @param skip_ips  peers (IPv4, host order) left out: at exit, the process's own
 *                  devices, whose QPs end with it; NULL when @p n_skip is 0
 * @return a TSC value (rte_get_tsc_cycles()) in the future; 0 when nothing lingers.
 */
uint64_t dpv_xport_linger_until(const struct dpv_xport *x, const uint32_t *skip_ips,
				unsigned int n_skip);

/* ---- the GSI: QP 1 (IBTA 13.5) ---- */

/** The GSI's QP number: never an application QP's (QP numbers 0 and 1 are not drawn). */
#define DPV_GSI_QPN 1u
/** The Q_Key every GSI datagram carries (IBTA 13.5.1: the well-known GSI Q_Key). */
#define DPV_GSI_QKEY 0x80010000u
/** The payload of a GSI datagram: one MAD. */
#define DPV_GSI_MAD_LEN 256u

/**
 * What the device calls with each GSI datagram it receives (dpv_xport_set_gsi()).
 * @param arg     as given to dpv_xport_set_gsi()
 * @param src_ip  the sender's IPv4 address, host order
 * @param mad     the MAD, DPV_GSI_MAD_LEN bytes inside the received frame: valid only
 *                during the call (copy what is kept)
 */
typedef void (*dpv_xport_gsi_fn)(void *arg, uint32_t src_ip, const uint8_t *mad);

/**
 * Register the one consumer of the device's GSI (owner; NULL @p fn takes it away).
 * A frame to QP 1 that is a UD SEND_ONLY with the GSI Q_Key and a payload of
 * DPV_GSI_MAD_LEN bytes is handed to @p fn (counted in rx_gsi), from any source QP
 * (IBTA 13.5.1: requests may come from any QP of the sender); anything else to QP 1,
 * or any frame while no handler is registered, is dropped and counted in
 * rx_gsi_dropped. The handler runs on the owner thread, inside dpv_xport_rx(), once
 * per datagram, in the order they came: it may call dpv_xport_gsi_send() (the answer
 * leaves with the burst), and must not call dpv_xport_rx(), dpv_xport_tx(),
 * dpv_xport_tick() nor create, modify or destroy QPs.
 */
void dpv_xport_set_gsi(struct dpv_xport *x, dpv_xport_gsi_fn fn, void *arg);

/**
 * Send one MAD from QP 1 to QP 1 of @p dst_ip (owner, inside the GSI handler or
 * between the device's calls): a UD SEND_ONLY with the GSI Q_Key, source QP 1, the
 * neighbour's MAC from the port's ARP. While the neighbour is being resolved the port
 * holds the frame (dpv_port_tx()) and sends it with the reply; when the port can take
 * no frame for @p dst_ip now (its TX backlog full, or the neighbour's ARP hold), the MAD
 * is not sent and the call says EAGAIN: a GSI datagram is unreliable, and the sender's
 * own retries (the CM's timers) stand for it. A MAD to the device's own address is
 * received by it at the end of the next dpv_xport_rx() or dpv_xport_tx().
 * @param mad  DPV_GSI_MAD_LEN bytes
 * @return 0 (counted in tx_gsi); EINVAL @p len is not DPV_GSI_MAD_LEN; EAGAIN no room
 *         now; ENOBUFS no mbuf (tx_no_mbuf).
 */
int dpv_xport_gsi_send(struct dpv_xport *x, uint32_t dst_ip, const void *mad, uint32_t len);

/**
 * The port's active MTU (the largest payload of one packet), as an
 * IBV_MTU_* value 1..5: the largest 256 << (n-1) whose RoCEv2 frame fits both the
 * link's IP MTU and one mbuf of the port's pool. A QP's path_mtu above it is sent
 * and accepted at the active MTU. Any thread.
 */
uint8_t dpv_xport_active_mtu(const struct dpv_xport *x);

#ifdef __cplusplus
}
#endif

#endif /* DPV_XPORT_H */
