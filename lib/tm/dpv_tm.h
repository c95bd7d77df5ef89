/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * dpv_tm: the tag-matching engine of a tag-matching SRQ.
 *
 * Pure C, no EAL, no locks, no allocation after dpv_tm_create(). It implements
 * doc/guides/srq.md §3 (ops), §4 (matching) and §5 (phases) in the engine's own small
 * structs; the verbs facade translates `struct ibv_ops_wr` and `struct ibv_wc` onto
 * them. The only rdma-core header it uses is <infiniband/tm_types.h>, which describes
 * the wire (the TMH), not the verbs API.
 *
 * The engine has three sides, each a set of calls that one thread at a time may make:
 *
 *  - the post side (the thread that calls ibv_post_srq_ops): dpv_tm_post();
 *  - the device side (the thread that owns the port): dpv_tm_exec(), dpv_tm_match(),
 *    dpv_tm_classify();
 *  - the poll side (the thread that polls the SRQ's CQ): dpv_tm_release().
 *
 * Every field of struct dpv_tm has exactly one writing side; the values that cross
 * sides (handle free ring, op counters, entry contents written at post) are published
 * with release stores and read with acquire loads, so the three sides may be three
 * threads. The facade must serialise callers within one side (for example, two threads
 * posting to the same SRQ).
 *
 * An op's life: dpv_tm_post() checks it and reserves what it needs (for ADD, a handle,
 * written into op->handle before dpv_tm_post() returns), then the caller carries the
 * op to the device side, in posting order, and the device calls dpv_tm_exec() on it.
 * dpv_tm_exec() fills a struct dpv_tm_cqe; the caller delivers it to the CQ. When the
 * poll side consumes a cqe whose `release` field is set, or the last completion of a
 * consumed entry (DATA_VALID or an error), it calls dpv_tm_release() on the handle.
 */
#ifndef DPV_TM_H
#define DPV_TM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Largest tag list an engine can be created with (2^20 - 1 entries). */
#define DPV_TM_MAX_TAGS_LIMIT 1048575u
/** Largest number of outstanding ops an engine can be created with. */
#define DPV_TM_MAX_OPS_LIMIT 1048576u
/** Largest scatter list of one entry. */
#define DPV_TM_MAX_SGE_LIMIT 16u
/** Default unexpected-message distance that sets SYNC_REQ (the hardware's 2^14). */
#define DPV_TM_DEFAULT_SYNC_THRESHOLD 16384u
/** Size of the tag-matching header at the start of a tagged message. */
#define DPV_TM_TMH_SIZE 16u
/** Size of the rendezvous header (struct ibv_rvh) that follows the TMH of RNDV. */
#define DPV_TM_RVH_SIZE 16u

/** A mask with every bit set: an exact (non-wildcard) entry. */
#define DPV_TM_MASK_EXACT UINT64_MAX

/** Creation parameters. */
struct dpv_tm_config {
	uint32_t max_num_tags;   /**< 1 .. DPV_TM_MAX_TAGS_LIMIT; exact capacity */
	uint32_t max_ops;        /**< 1 .. DPV_TM_MAX_OPS_LIMIT outstanding ops */
	uint32_t max_sge;        /**< 1 .. DPV_TM_MAX_SGE_LIMIT SGEs per entry */
	uint32_t sync_threshold; /**< U - S above this sets SYNC_REQ on unexpected; 0: default */
};

/** One buffer of an entry's scatter list (the engine's copy of an ibv_sge). */
struct dpv_tm_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

/** Op codes (the facade maps IBV_WR_TAG_ADD / _DEL / _SYNC onto them). */
enum dpv_tm_opcode {
	DPV_TM_OP_ADD = 1,
	DPV_TM_OP_DEL = 2,
	DPV_TM_OP_SYNC = 3,
};

/** Op flags (the facade maps IBV_OPS_SIGNALED / IBV_OPS_TM_SYNC onto them). */
enum dpv_tm_op_flags {
	DPV_TM_OP_F_SIGNALED = 1u << 0, /**< write a completion on success */
	DPV_TM_OP_F_SYNC = 1u << 1,     /**< unexpected_cnt reports S */
};

/**
 * One op. The caller fills it; dpv_tm_post() writes `handle` for ADD. After a
 * successful dpv_tm_post() the op is a small value (the scatter list has been copied
 * into the entry) that can travel to the device side through a ring.
 */
struct dpv_tm_op {
	uint64_t wr_id;          /**< of the op; reported in its completion */
	uint64_t tag;            /**< ADD */
	uint64_t mask;           /**< ADD */
	uint64_t recv_wr_id;     /**< ADD: reported when the entry's message lands */
	const struct dpv_tm_sge *sg_list; /**< ADD: read only during dpv_tm_post() */
	uint32_t num_sge;        /**< ADD: 0 .. max_sge */
	uint32_t handle;         /**< ADD: out; DEL: in */
	uint32_t unexpected_cnt; /**< with DPV_TM_OP_F_SYNC: S */
	uint8_t opcode;          /**< enum dpv_tm_opcode */
	uint8_t flags;           /**< enum dpv_tm_op_flags */
};

/** Completion status of an op. */
enum dpv_tm_status {
	DPV_TM_ST_SUCCESS = 0,
	DPV_TM_ST_TM_ERR = 1, /**< DEL of an entry that is no longer in the list */
};

/** Completion flags. */
enum dpv_tm_cqe_flags {
	DPV_TM_CQE_F_SYNC_REQ = 1u << 0, /**< software should send a SYNC */
};

/** What dpv_tm_exec() reports for one op. */
struct dpv_tm_cqe {
	uint64_t wr_id;   /**< the op's wr_id */
	uint32_t handle;  /**< ADD, DEL: the entry's handle */
	uint8_t opcode;   /**< enum dpv_tm_opcode */
	uint8_t status;   /**< enum dpv_tm_status */
	uint8_t flags;    /**< enum dpv_tm_cqe_flags */
	/** The application sees this completion (signaled, or an error). */
	bool visible;
	/**
	 * Consuming this cqe ends the entry: the poll side calls dpv_tm_release(handle)
	 * when it consumes it (for a hidden cqe, as soon as it reads it).
	 */
	bool release;
};

/** How an incoming message is handled (doc/guides/srq.md §4). */
enum dpv_tm_kind {
	DPV_TM_NO_TAG = 0,       /**< consumes an ordinary SRQ WR; whole message placed */
	DPV_TM_EXPECTED_EAGER,   /**< matched an entry; payload after the TMH placed */
	DPV_TM_EXPECTED_RNDV,    /**< matched an entry; data to be read from the sender */
	DPV_TM_UNEXPECTED,       /**< no eligible entry; consumes an ordinary SRQ WR; U++ */
	DPV_TM_RNR,              /**< needs an ordinary SRQ WR and there is none */
};

/** The TMH fields of an incoming message (host byte order). */
struct dpv_tm_tmh {
	uint8_t opcode;   /**< enum ibv_tmh_op of <infiniband/tm_types.h> */
	uint32_t app_ctx;
	uint64_t tag;
};

/** The RVH fields of a rendezvous message (host byte order): the data at the sender. */
struct dpv_tm_rvh {
	uint64_t va;
	uint32_t rkey;
	uint32_t len;
};

/** The decision for an incoming message. */
struct dpv_tm_match {
	uint8_t kind;        /**< enum dpv_tm_kind */
	uint8_t flags;       /**< UNEXPECTED: DPV_TM_CQE_F_SYNC_REQ when U - S > threshold */
	uint32_t handle;     /**< EXPECTED_*: the matched entry */
	uint64_t recv_wr_id; /**< EXPECTED_*: the entry's recv_wr_id */
	const struct dpv_tm_sge *sg_list; /**< EXPECTED_*: the entry's buffers */
	uint32_t num_sge;    /**< EXPECTED_*: how many */
};

/** Counters of one engine (read from any side for statistics; may be stale). */
struct dpv_tm_stats {
	uint64_t adds;       /**< ADDs executed */
	uint64_t dels;       /**< DELs executed successfully */
	uint64_t del_errors; /**< DELs that completed with TM_ERR */
	uint64_t syncs;      /**< SYNC ops executed */
	uint64_t expected;   /**< messages matched to an entry */
	uint64_t unexpected; /**< messages deemed unexpected */
	uint64_t no_tag;     /**< NO_TAG messages (and malformed TMH opcodes) */
	uint64_t rnr;        /**< messages refused for want of an SRQ WR */
	uint32_t listed;     /**< entries in the list now (device side) */
	uint32_t allocated;  /**< handles allocated now (post side) */
};

struct dpv_tm;

/**
 * Create an engine. Allocates everything it will ever need.
 *
 * Any thread; the engine's sides start on whichever threads first call them.
 * @param cfg  capacities (copied)
 * @param[out] out  the engine
 * @return 0; EINVAL for a capacity of 0 or above its limit; ENOMEM when memory runs out.
 */
int dpv_tm_create(const struct dpv_tm_config *cfg, struct dpv_tm **out);

/** Free an engine (NULL is accepted). No side may be using it. */
void dpv_tm_destroy(struct dpv_tm *tm);

/**
 * Check and reserve one op (doc/guides/srq.md §3, post-time rules).
 *
 * Post side. For ADD, allocates the handle (oldest freed first), copies tag, mask,
 * recv_wr_id and the scatter list into the entry and writes op->handle. Counts the op
 * as outstanding until dpv_tm_exec() has run it.
 * @return 0;
 *   EINVAL: unknown opcode or flag; ADD with num_sge > max_sge, or sg_list NULL with
 *   num_sge > 0; DEL of a handle that is not allocated;
 *   ENOMEM: max_ops ops outstanding; ADD with every handle allocated.
 *   On error nothing is reserved.
 */
int dpv_tm_post(struct dpv_tm *tm, struct dpv_tm_op *op);

/**
 * Execute one op that dpv_tm_post() accepted, in posting order.
 *
 * Device side. Applies the op's TM_SYNC report first, then ADD links the entry
 * (recording need = U), DEL unlinks it (or fails with TM_ERR when the entry was
 * consumed or already deleted), SYNC changes nothing. Fills @p cqe; the caller
 * delivers it when cqe->visible or cqe->release is set and drops it otherwise.
 */
void dpv_tm_exec(struct dpv_tm *tm, const struct dpv_tm_op *op, struct dpv_tm_cqe *cqe);

/**
 * Read the TMH at the start of a message payload (doc/guides/srq.md §4): a payload
 * shorter than a TMH, or a TMH opcode other than EAGER or RNDV, reads as NO_TAG.
 *
 * Any side (pure).
 * @param payload  first bytes of the message
 * @param len      bytes available at @p payload
 * @param[out] tmh the fields
 */
void dpv_tm_parse_tmh(const void *payload, size_t len, struct dpv_tm_tmh *tmh);

/**
 * Whether a TMH read by dpv_tm_parse_tmh() is a rendezvous offer (IBV_TMH_RNDV).
 *
 * Any side (pure).
 */
bool dpv_tm_tmh_is_rndv(const struct dpv_tm_tmh *tmh);

/**
 * Read the RVH that follows the TMH of a rendezvous message (doc/guides/rendezvous.md).
 *
 * Any side (pure).
 * @param payload  first bytes of the message (the TMH at offset 0)
 * @param len      bytes available at @p payload
 * @param[out] rvh the fields
 * @return false (and @p rvh zero) when @p len holds no whole TMH and RVH.
 */
bool dpv_tm_parse_rvh(const void *payload, size_t len, struct dpv_tm_rvh *rvh);

/**
 * Write the TMH of a rendezvous FIN (IBV_TMH_FIN, @p app_ctx, @p tag, as the wire
 * carries them) into the DPV_TM_TMH_SIZE bytes at @p buf: what the receiving device
 * sends the sender when the data it read has landed.
 *
 * Any side (pure).
 */
void dpv_tm_write_fin(void *buf, uint32_t app_ctx, uint64_t tag);

/**
 * Decide what an incoming message is and, when it matches, consume its entry.
 *
 * Device side. For EAGER/RNDV, finds the earliest-added eligible entry e with
 * ((tag ^ e.tag) & e.mask) == 0 and unlinks it; a DEL of it then fails with TM_ERR.
 * A message that needs an ordinary SRQ WR (NO_TAG, unexpected) gets DPV_TM_RNR when
 * @p srq_wr_available is false, and then nothing changes (U is not counted).
 * @param tmh   the message's TMH (see dpv_tm_parse_tmh())
 * @param srq_wr_available  an ordinary SRQ WR can be consumed for this message
 * @param[out] m the decision
 */
void dpv_tm_match(struct dpv_tm *tm, const struct dpv_tm_tmh *tmh, bool srq_wr_available,
		  struct dpv_tm_match *m);

/**
 * Decide a burst of incoming messages, as dpv_tm_match() would one after the other,
 * with the memory of the whole burst fetched up front so its cache misses overlap.
 *
 * Device side.
 * @param tmh     the messages' TMHs, in arrival order
 * @param n       how many
 * @param srq_wrs ordinary SRQ WRs available: each NO_TAG or UNEXPECTED message
 *                consumes one; once none is left such messages get DPV_TM_RNR
 * @param[out] m  a decision per message
 */
void dpv_tm_match_burst(struct dpv_tm *tm, const struct dpv_tm_tmh *tmh, uint32_t n,
			uint32_t srq_wrs, struct dpv_tm_match *m);

/**
 * Give a handle back: the application has seen the end of its entry.
 *
 * Poll side. Called when the poll side consumes a cqe with `release` set, or the last
 * completion of a consumed entry (DATA_VALID, or an error). The handle is reused after
 * every handle freed before it.
 * @return 0; EINVAL if the handle is not allocated.
 */
int dpv_tm_release(struct dpv_tm *tm, uint32_t handle);

/** The unexpected count U (device side). */
uint32_t dpv_tm_unexpected(const struct dpv_tm *tm);

/** The last reported software count S (device side). */
uint32_t dpv_tm_synced(const struct dpv_tm *tm);

/** Counters (any side; a snapshot that may be stale by the time it returns). */
void dpv_tm_stats_get(const struct dpv_tm *tm, struct dpv_tm_stats *st);

/** One listed entry, as dpv_tm_entries() reports it. */
struct dpv_tm_entry_info {
	uint32_t handle;
	uint32_t need;       /**< U when its ADD executed: eligible once S reaches it */
	uint64_t seq;        /**< add order: the earliest listed eligible match wins */
	uint64_t tag;
	uint64_t mask;
	uint64_t recv_wr_id;
	struct dpv_tm_sge sge; /**< the first buffer (zero when num_sge is 0) */
	uint64_t length;     /**< bytes of every buffer of its scatter list */
	uint32_t num_sge;
	bool eligible;       /**< a message may match it now (S >= need: doc/guides/tm.md, Phases) */
};

/**
 * The entries in the tag list now (added and executed, neither matched nor deleted),
 * in handle order, from handle @p from on: for a console or a debugger, not a fast
 * path (it visits every handle up to the last one it reports).
 *
 * Device side.
 * @param from  the first handle to look at (the last reported handle + 1 to go on)
 * @param[out] out  room for @p n entries
 * @return the number written; fewer than @p n when no listed entry is left.
 */
uint32_t dpv_tm_entries(const struct dpv_tm *tm, uint32_t from, struct dpv_tm_entry_info *out,
			uint32_t n);

/** Ops posted and not yet executed (any side; may be stale by the time it returns). */
uint32_t dpv_tm_ops_outstanding(const struct dpv_tm *tm);

/** The engine's capacities, as created (any side). */
const struct dpv_tm_config *dpv_tm_config_get(const struct dpv_tm *tm);

#ifdef __cplusplus
}
#endif

#endif /* DPV_TM_H */
