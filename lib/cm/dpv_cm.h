/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * dpv_cm: the communication manager state machine of one connection (IBTA vol. 1
 * 12.9), and a bounded table that finds the connection a received MAD belongs to.
 *
 * Pure C, driven by calls: no threads, no sockets, no clock of its own. The caller
 * passes the time (`now`, nanoseconds on any monotonic clock) and gets back, in a
 * struct dpv_cm_out, at most one MAD to send to the peer's QP1 and at most one event
 * for the consumer; it calls dpv_cm_timer() when dpv_cm_deadline() has passed. A
 * connection and its table have one owner thread at a time (no locks).
 *
 * States, and what moves them (A: the active side, P: the passive side):
 *
 * | state         | input                     | out                 | next        | event            |
 * |---------------|---------------------------|---------------------|-------------|------------------|
 * | IDLE (A)      | dpv_cm_connect()          | REQ                 | REQ_SENT    |                  |
 * | IDLE (P)      | dpv_cm_listen()           |                     | LISTEN      |                  |
 * | REQ_SENT      | MRA (of the REQ)          |                     | MRA_REQ_RCVD|                  |
 * | REQ_SENT, MRA_REQ_RCVD | REP              |                     | REP_RCVD    | CONNECT_RESPONSE |
 * | REQ_SENT, MRA_REQ_RCVD | REJ              |                     | IDLE        | REJECTED         |
 * | REQ_SENT, MRA_REQ_RCVD | timeout, retries left | REQ again      | REQ_SENT    |                  |
 * | REQ_SENT, MRA_REQ_RCVD | timeout, none left | REJ (Timeout)     | IDLE        | UNREACHABLE      |
 * | REP_RCVD      | the REP again             | MRA (of the REP)    | MRA_REP_SENT|                  |
 * | MRA_REP_SENT  | the REP again             | the MRA again       |             |                  |
 * | REP_RCVD, MRA_REP_SENT | dpv_cm_rtu()     | RTU                 | ESTABLISHED | ESTABLISHED      |
 * | REP_RCVD, MRA_REP_SENT | dpv_cm_reject()  | REJ                 | TIMEWAIT    |                  |
 * | REP_RCVD, MRA_REP_SENT | REJ              |                     | TIMEWAIT    | REJECTED         |
 * | (P) a listener's REQ | dpv_cm_req_received() |                  | REQ_RCVD    | CONNECT_REQUEST  |
 * | REQ_RCVD      | dpv_cm_mra()              | MRA                 | MRA_REQ_SENT|                  |
 * | REQ_RCVD      | the REQ again             | MRA (of the REQ)    | MRA_REQ_SENT|                  |
 * | REQ_RCVD, MRA_REQ_SENT | dpv_cm_accept()  | REP                 | REP_SENT    |                  |
 * | REQ_RCVD, MRA_REQ_SENT | dpv_cm_reject()  | REJ                 | IDLE        |                  |
 * | REQ_RCVD, MRA_REQ_SENT | REJ (the active side gave up) |         | IDLE        | REJECTED         |
 * | MRA_REQ_SENT  | the REQ again             | the MRA again       |             |                  |
 * | REP_SENT      | MRA (of the REP)          |                     | MRA_REP_RCVD|                  |
 * | REP_SENT, MRA_REP_RCVD | RTU, or dpv_cm_established() (data came first) | | ESTABLISHED | ESTABLISHED |
 * | REP_SENT, MRA_REP_RCVD | the REQ again   | the REP again       |             |                  |
 * | REP_SENT, MRA_REP_RCVD | REJ             |                     | TIMEWAIT    | REJECTED         |
 * | REP_SENT, MRA_REP_RCVD | timeout, retries left | REP again     | REP_SENT    |                  |
 * | REP_SENT, MRA_REP_RCVD | timeout, none left | REJ (Timeout)    | TIMEWAIT    | UNREACHABLE      |
 * | ESTABLISHED   | the REP again             | the RTU again       |             |                  |
 * | ESTABLISHED   | REJ                       |                     | TIMEWAIT    | REJECTED         |
 * | ESTABLISHED   | dpv_cm_disconnect()       | DREQ                | DREQ_SENT   |                  |
 * | ESTABLISHED, REP_SENT, MRA_REP_RCVD | DREQ |                    | DREQ_RCVD   | DISCONNECTED     |
 * | DREQ_SENT     | DREP                      |                     | TIMEWAIT    | DISCONNECTED     |
 * | DREQ_SENT     | DREQ (both sides at once) | DREP                | TIMEWAIT    | DISCONNECTED     |
 * | DREQ_SENT     | timeout, retries left     | DREQ again          | DREQ_SENT   |                  |
 * | DREQ_SENT     | timeout, none left        |                     | TIMEWAIT    | DISCONNECTED     |
 * | DREQ_RCVD     | dpv_cm_disconnect()       | DREP                | TIMEWAIT    |                  |
 * | TIMEWAIT      | the DREQ again            | DREP                |             |                  |
 * | TIMEWAIT      | a REQ, REP or RTU         | REJ (Stale conn.)   |             |                  |
 * | TIMEWAIT      | timeout                   |                     | IDLE        | TIMEWAIT_EXIT    |
 * | IDLE (A)      | dpv_cm_sidr_request()     | SIDR_REQ            | SIDR_REQ_SENT |                |
 * | SIDR_REQ_SENT | SIDR_REP, status Success  |                     | IDLE        | ESTABLISHED      |
 * | SIDR_REQ_SENT | SIDR_REP, another status  |                     | IDLE        | UNREACHABLE      |
 * | SIDR_REQ_SENT | timeout, retries left     | SIDR_REQ again      | SIDR_REQ_SENT |                |
 * | SIDR_REQ_SENT | timeout, none left        |                     | IDLE        | UNREACHABLE      |
 * | (P) a listener's SIDR_REQ | dpv_cm_sidr_req_received() |        | SIDR_REQ_RCVD | CONNECT_REQUEST |
 * | SIDR_REQ_RCVD | the SIDR_REQ again        |                     |             |                  |
 * | SIDR_REQ_RCVD | dpv_cm_sidr_reply()       | SIDR_REP            | IDLE        |                  |
 *
 * The establishment rows are IBTA 12.9's connection establishment diagrams, the
 * DREQ/DREP rows its connection release diagram, the SIDR rows 12.11's service ID
 * resolution; the MADs are those of 12.6. A MAD to no connection (no listener for a
 * REQ's or SIDR_REQ's service ID, a REP or RTU for an unknown communication ID, a DREQ
 * for a connection that is gone) is answered by dpv_cm_answer_unmatched(), a REQ or
 * SIDR_REQ of another class version by dpv_cm_answer_version(), one the caller has no
 * room for by dpv_cm_answer_no_resources(). Any other input in a state that does not
 * expect it is ignored and the call says so (EPROTO).
 *
 * MRA (IBTA 12.6.6): a REQ (or REP) handed to the consumer is acknowledged
 * only when it comes again before the consumer answered, which tells the sender its
 * retry was received and that the answer may take the service timeout the
 * connection was set up with (dpv_cm_params.mra_timeout); a duplicate after that gets
 * the same MRA again. This is what Linux's CM does for the RDMA CM's connections: it
 * sends no MRA for a message that is answered within the sender's timeout.
 *
 * SIDR (IBTA 12.11) resolves a service ID to a UD QP and its Q_Key with one request
 * and its reply: the active side's connection lives until the SIDR_REP (or until its
 * retries are spent), the passive side's until the consumer's reply. The request ID
 * is the active connection's local ID; a request is known on the passive side by
 * (request ID, the sender's address) (dpv_cm_table_find_sidr()), since a SIDR_REQ
 * carries no CA GUID. A SIDR_REP that names no waiting request (a duplicate, or one
 * for a request that ended) is dropped.
 *
 * Timeouts: a MAD that waits for an answer (REQ, REP, DREQ) is sent again after the
 * peer's CM response time plus a round trip, 4.096 us * 2^t + 2 * 4.096 us * 2^plt,
 * where t is the REQ's Remote CM Response Timeout (for the REQ and the active side's
 * DREQ) or its Local CM Response Timeout (for the REP and the passive side's DREQ),
 * and plt the path's packet life time exponent. An MRA replaces the wait in progress
 * with its service timeout plus the round trip. A MAD is sent at most 1 + Max CM
 * Retries (from the REQ) times. Every retry of a MAD carries the transaction ID of its
 * first send; answers carry the transaction ID of the MAD they answer.
 *
 * The events are those librdmacm reports as RDMA_CM_EVENT_* of the same name.
 */
#ifndef DPV_CM_H
#define DPV_CM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dpv_cm_mad.h"

#ifdef __cplusplus
extern "C" {
#endif

/** dpv_cm_deadline() of a connection that waits for nothing. */
#define DPV_CM_NO_DEADLINE UINT64_MAX

enum dpv_cm_state {
	DPV_CM_IDLE,
	DPV_CM_LISTEN,
	DPV_CM_REQ_SENT,
	DPV_CM_MRA_REQ_RCVD,
	DPV_CM_REP_RCVD,
	DPV_CM_REQ_RCVD,
	DPV_CM_MRA_REQ_SENT,
	DPV_CM_REP_SENT,
	DPV_CM_MRA_REP_RCVD,
	DPV_CM_ESTABLISHED,
	DPV_CM_DREQ_SENT,
	DPV_CM_DREQ_RCVD,
	DPV_CM_TIMEWAIT,
	DPV_CM_MRA_REP_SENT,
	DPV_CM_SIDR_REQ_SENT,
	DPV_CM_SIDR_REQ_RCVD,
};

/** What a call tells the consumer: librdmacm's RDMA_CM_EVENT_* of the same name. */
enum dpv_cm_event {
	DPV_CM_EV_NONE = 0,
	DPV_CM_EV_CONNECT_REQUEST,
	DPV_CM_EV_CONNECT_RESPONSE,
	DPV_CM_EV_ESTABLISHED,
	DPV_CM_EV_REJECTED,
	DPV_CM_EV_UNREACHABLE,
	DPV_CM_EV_DISCONNECTED,
	DPV_CM_EV_TIMEWAIT_EXIT,
	/* The device's own, never a connection's (dpv_engine.h: dpv_dev_cm_resolve(), a
	 * port removed). */
	DPV_CM_EV_ADDR_RESOLVED,
	DPV_CM_EV_ADDR_ERROR,
	DPV_CM_EV_DEVICE_REMOVAL,
};

/** What one call produced. */
struct dpv_cm_out {
	bool send;                /**< @c mad is to be sent to the peer's QP1 */
	struct dpv_cm_msg mad;
	enum dpv_cm_event event;
	uint16_t rej_reason;      /**< REJECTED: the REJ's reason */
	/** The received MAD that made the event (the REQ or SIDR_REQ of a CONNECT_REQUEST,
	 *  the REP of a CONNECT_RESPONSE, the REJ of a REJECTED, the SIDR_REP of a SIDR
	 *  request's ESTABLISHED or UNREACHABLE: its private data is the consumer's), the
	 *  caller's own copy; NULL for an event of the clock or of a call. */
	const struct dpv_cm_msg *msg;
};

/** What a connection is set up with. */
struct dpv_cm_params {
	uint64_t local_ca_guid;
	uint8_t packet_life_time; /**< 5 bits: one way across the path, 4.096 us * 2^t */
	uint64_t timewait_ns;     /**< how long TIMEWAIT holds the connection's IDs */
	uint8_t mra_timeout;      /**< 5 bits: the service timeout of the MRA a duplicate
	                               REQ or REP gets while the consumer has not answered */
};

/** One connection's CM state. The calls below set every field; a caller may read
 *  them (the IDs, QPNs and GUIDs the handshake learned, the retries spent) but never
 *  writes one. */
struct dpv_cm_conn {
	enum dpv_cm_state state;
	uint32_t local_id;       /**< local communication ID (dpv_cm_table_add()) */
	uint32_t remote_id;      /**< the peer's, once known */
	uint64_t local_guid;
	uint64_t remote_guid;
	uint64_t service_id;
	uint32_t local_qpn;
	uint32_t remote_qpn;
	uint8_t packet_life_time;
	uint8_t mra_timeout;
	uint8_t peer_timeout;    /**< the peer's CM response time exponent */
	uint8_t max_retries;
	uint8_t retries;         /**< sends of @c pending beyond the first */
	uint64_t tid;            /**< of the REQ (then of the peer's DREQ): answers carry it */
	uint32_t tid_seq;
	uint64_t timewait_ns;
	uint64_t deadline;
	struct dpv_cm_msg pending; /**< the MAD the timer sends again */
	struct dpv_cm_msg answer;  /**< the MRA, REP, RTU or DREP a duplicate gets again */
	bool has_answer;
};

/**
 * Set up a connection in IDLE. Its local ID is 0 until dpv_cm_table_add() gives one.
 * Any thread; the connection is the caller's.
 */
void dpv_cm_init(struct dpv_cm_conn *c, const struct dpv_cm_params *p);

/** The connection's state. */
enum dpv_cm_state dpv_cm_state(const struct dpv_cm_conn *c);

/** A printable name of a state ("REQ_SENT", ...). */
const char *dpv_cm_state_name(enum dpv_cm_state s);

/** When dpv_cm_timer() has work, or DPV_CM_NO_DEADLINE. */
uint64_t dpv_cm_deadline(const struct dpv_cm_conn *c);

/**
 * Make an IDLE connection a listener for @p service_id.
 * @return 0; EINVAL if it is not IDLE.
 */
int dpv_cm_listen(struct dpv_cm_conn *c, uint64_t service_id);

/**
 * Active side: send a REQ. Its local communication ID and local CA GUID are the
 * connection's, whatever @p req says; the rest (service ID, QP, path, private data,
 * the timeouts and Max CM Retries the machine then uses) is the caller's.
 * @return 0 with the REQ in @p out; EINVAL if the connection is not IDLE or has no
 *         local ID, or a field of @p req does not fit its width.
 */
int dpv_cm_connect(struct dpv_cm_conn *c, const struct dpv_cm_req *req, uint64_t now,
		   struct dpv_cm_out *out);

/**
 * Passive side: a REQ came for @p listener; @p c (IDLE, with a local ID) takes it.
 * @return 0 with CONNECT_REQUEST in @p out; EINVAL if @p listener is not listening on
 *         the REQ's service ID, @p c is not IDLE or has no local ID, or @p req is not a
 *         REQ.
 */
int dpv_cm_req_received(struct dpv_cm_conn *c, const struct dpv_cm_conn *listener,
			const struct dpv_cm_msg *req, struct dpv_cm_out *out);

/**
 * Passive side: tell the active side the answer will take up to 4.096 us *
 * 2^@p service_timeout, so that it does not send the REQ again meanwhile.
 * @return 0 with the MRA in @p out; EINVAL if the state is not REQ_RCVD,
 *         @p service_timeout is above 31 or @p len above DPV_CM_MRA_PDATA_LEN.
 */
int dpv_cm_mra(struct dpv_cm_conn *c, uint8_t service_timeout, const void *pdata,
	       uint8_t len, struct dpv_cm_out *out);

/**
 * Passive side: accept with a REP. Its comm IDs and local CA GUID are the
 * connection's, whatever @p rep says.
 * @return 0 with the REP in @p out; EINVAL if the state is not REQ_RCVD or
 *         MRA_REQ_SENT, or a field of @p rep does not fit its width.
 */
int dpv_cm_accept(struct dpv_cm_conn *c, const struct dpv_cm_rep *rep, uint64_t now,
		  struct dpv_cm_out *out);

/**
 * Reject the REQ (passive side, REQ_RCVD or MRA_REQ_SENT: the connection returns to
 * IDLE) or the REP (active side, REP_RCVD or MRA_REP_SENT: to TIMEWAIT).
 * @return 0 with the REJ in @p out; EINVAL in another state, or @p len above
 *         DPV_CM_REJ_PDATA_LEN.
 */
int dpv_cm_reject(struct dpv_cm_conn *c, uint16_t reason, const void *pdata, uint8_t len,
		  uint64_t now, struct dpv_cm_out *out);

/**
 * Active side: the REP is taken (the QP is ready): send the RTU.
 * @return 0 with the RTU and ESTABLISHED in @p out; EINVAL if the state is not
 *         REP_RCVD or MRA_REP_SENT, or @p len is above DPV_CM_RTU_PDATA_LEN.
 */
int dpv_cm_rtu(struct dpv_cm_conn *c, const void *pdata, uint8_t len, struct dpv_cm_out *out);

/**
 * Passive side: data came on the QP before the RTU, which IBTA lets the consumer
 * take as the connection being established.
 * @return 0 with ESTABLISHED in @p out; EINVAL if the state is not REP_SENT or
 *         MRA_REP_RCVD.
 */
int dpv_cm_established(struct dpv_cm_conn *c, struct dpv_cm_out *out);

/**
 * Disconnect: in ESTABLISHED send a DREQ; in DREQ_RCVD answer the peer's with a DREP.
 * @return 0 with the MAD in @p out; EINVAL in another state, or @p len above the
 *         message's private data.
 */
int dpv_cm_disconnect(struct dpv_cm_conn *c, const void *pdata, uint8_t len, uint64_t now,
		      struct dpv_cm_out *out);

/**
 * Active side: resolve a service ID to a UD QP with a SIDR_REQ (IBTA 12.11). Its
 * request ID is the connection's local ID, whatever @p req says. The answer is awaited
 * 4.096 us * 2^@p response_timeout plus a round trip, and the request sent at most
 * 1 + @p max_retries times.
 * @return 0 with the SIDR_REQ in @p out; EINVAL if the connection is not IDLE or has no
 *         local ID, or @p response_timeout is above 31 or @p max_retries above 15.
 */
int dpv_cm_sidr_request(struct dpv_cm_conn *c, const struct dpv_cm_sidr_req *req,
			uint8_t response_timeout, uint8_t max_retries, uint64_t now,
			struct dpv_cm_out *out);

/**
 * Passive side: a SIDR_REQ came for @p listener from @p peer (the sender's address in
 * any form the caller keeps: dpv_cm_table_find_sidr() finds its duplicates by it);
 * @p c (IDLE, with a local ID) takes it.
 * @return 0 with CONNECT_REQUEST in @p out; EINVAL if @p listener is not listening on
 *         the request's service ID, @p c is not IDLE or has no local ID, or @p m is not
 *         a SIDR_REQ.
 */
int dpv_cm_sidr_req_received(struct dpv_cm_conn *c, const struct dpv_cm_conn *listener,
			     const struct dpv_cm_msg *m, uint64_t peer, struct dpv_cm_out *out);

/**
 * Passive side: answer the SIDR_REQ with @p rep: its status (DPV_CM_SIDR_SUCCESS with
 * the QP number and Q_Key, or why not), private data and additional information. The
 * request ID and service ID are the request's, whatever @p rep says. The connection is
 * IDLE afterwards.
 * @return 0 with the SIDR_REP in @p out; EINVAL if the state is not SIDR_REQ_RCVD or a
 *         field of @p rep does not fit its width.
 */
int dpv_cm_sidr_reply(struct dpv_cm_conn *c, const struct dpv_cm_sidr_rep *rep,
		      struct dpv_cm_out *out);

/**
 * A MAD dpv_cm_table_route() found this connection for.
 * @return 0 when the MAD was taken (@p out may hold an answer and an event, or
 *         nothing for a duplicate that needs none); EPROTO when the state does not
 *         expect it, or its IDs are not this connection's: it is ignored.
 */
int dpv_cm_input(struct dpv_cm_conn *c, const struct dpv_cm_msg *m, uint64_t now,
		 struct dpv_cm_out *out);

/**
 * Run the connection's clock: a MAD sent again, the retries spent, TIMEWAIT over.
 * Does nothing (an empty @p out) before dpv_cm_deadline().
 */
void dpv_cm_timer(struct dpv_cm_conn *c, uint64_t now, struct dpv_cm_out *out);

/**
 * The answer to a MAD no connection owns: REJ (Invalid Service ID) to a REQ no
 * listener takes, SIDR_REP (status Service ID Not Supported) to such a SIDR_REQ, REJ
 * (Stale Connection) to a REP or RTU for a communication ID that is unknown, DREP to a
 * DREQ for one (the connection is gone: nothing to release).
 * @return 0 with the MAD in @p out; ENOENT when the MAD needs no answer (REJ, MRA,
 *         DREP, SIDR_REP).
 */
int dpv_cm_answer_unmatched(const struct dpv_cm_msg *m, struct dpv_cm_out *out);

/**
 * The answer to a new REQ or SIDR_REQ the caller has no connection for (its table or
 * pool is full): REJ No Resources (IBTA 12.6.7, reason 3: the passive side lacks the
 * resources), SIDR_REP status Rejected. The sender may try again later.
 * @return 0 with the MAD in @p out; ENOENT for another MAD.
 */
int dpv_cm_answer_no_resources(const struct dpv_cm_msg *m, struct dpv_cm_out *out);

/**
 * The answer to a MAD dpv_cm_unpack() refused with EPROTONOSUPPORT: a REQ of a CM
 * class version other than DPV_CM_CLASS_VERSION gets REJ Invalid Class Version (IBTA
 * 12.6.7, reason 31) whose ARI is the highest class version supported, a SIDR_REQ a
 * SIDR_REP of status Unsupported Version with the same as its additional
 * information (12.11). The answer is of our class version; its IDs and transaction
 * ID are read from the fields the request has in every version of the class.
 * @return 0 with the MAD in @p out; ENOENT for any other MAD (a base version other
 *         than 1, another message, another class, a length other than 256).
 */
int dpv_cm_answer_version(const void *buf, size_t len, struct dpv_cm_out *out);

/** Connections and listeners by local communication ID, by the peer's (communication
 *  ID, CA GUID) and by service ID, for demultiplexing. Bounded: a fixed capacity. */
struct dpv_cm_table {
	struct dpv_cm_conn **slot;
	uint16_t *gen;
	uint32_t cap;
	uint32_t used;
};

/** Most connections one table holds: a local ID carries the slot in 16 bits. */
#define DPV_CM_TABLE_MAX 65536u

/**
 * An empty table of @p cap connections, in memory of its own (malloc()).
 * @return 0; EINVAL if @p cap is 0 or above DPV_CM_TABLE_MAX; ENOMEM.
 */
int dpv_cm_table_init(struct dpv_cm_table *t, uint32_t cap);

/** Bytes dpv_cm_table_init_at() takes for @p cap connections; 0 if @p cap is 0 or
 *  above DPV_CM_TABLE_MAX. */
size_t dpv_cm_table_memsize(uint32_t cap);

/**
 * An empty table of @p cap connections in the caller's @p mem, dpv_cm_table_memsize()
 * bytes aligned for a pointer (a device's own memory, say): the memory stays the
 * caller's, and such a table is not given to dpv_cm_table_fini().
 * @return 0; EINVAL if @p cap is 0 or above DPV_CM_TABLE_MAX, or @p mem is NULL.
 */
int dpv_cm_table_init_at(struct dpv_cm_table *t, uint32_t cap, void *mem);

/** Free a table of dpv_cm_table_init() (not its connections). NULL fields are
 *  accepted. */
void dpv_cm_table_fini(struct dpv_cm_table *t);

/**
 * Enter @p c and give it a local communication ID, never 0 and not one a recent
 * connection of the same slot had.
 * @return 0; EEXIST if @p c has an ID already; ENOSPC if the table is full.
 */
int dpv_cm_table_add(struct dpv_cm_table *t, struct dpv_cm_conn *c);

/** Take @p c out; its ID is 0 again. @return 0; ENOENT if it is not in the table. */
int dpv_cm_table_remove(struct dpv_cm_table *t, struct dpv_cm_conn *c);

/** The connection of a local communication ID, or NULL. */
struct dpv_cm_conn *dpv_cm_table_find(const struct dpv_cm_table *t, uint32_t local_id);

/** The connection whose peer is (@p remote_id, @p remote_guid), or NULL. */
struct dpv_cm_conn *dpv_cm_table_find_remote(const struct dpv_cm_table *t, uint32_t remote_id,
					     uint64_t remote_guid);

/** The connection in SIDR_REQ_RCVD that took request @p request_id of @p peer (as
 *  given to dpv_cm_sidr_req_received()), or NULL. */
struct dpv_cm_conn *dpv_cm_table_find_sidr(const struct dpv_cm_table *t, uint32_t request_id,
					   uint64_t peer);

/** The listener of @p service_id, or NULL. */
struct dpv_cm_conn *dpv_cm_table_find_listener(const struct dpv_cm_table *t,
					       uint64_t service_id);

/**
 * The connection a received MAD belongs to: for a REQ, the connection that took
 * the same REQ before (a duplicate), else the listener of its service ID (hand both
 * to dpv_cm_req_received()); for a SIDR_REQ, the listener of its service ID (look for
 * a duplicate first with dpv_cm_table_find_sidr(): the MAD does not name its sender);
 * for a SIDR_REP, the connection of its request ID; for the others, the connection
 * their Remote Communication ID names. NULL: answer with dpv_cm_answer_unmatched().
 */
struct dpv_cm_conn *dpv_cm_table_route(const struct dpv_cm_table *t, const struct dpv_cm_msg *m);

#ifdef __cplusplus
}
#endif

#endif /* DPV_CM_H */
