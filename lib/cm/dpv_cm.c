/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The CM state machine of one connection and the table that routes MADs to it. The
 * rows of the table in dpv_cm.h are the cases below, in its order.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dpv_cm.h"

static void clear(struct dpv_cm_out *out)
{
	memset(out, 0, sizeof(*out));
}

static struct dpv_cm_msg *start(struct dpv_cm_out *out, uint16_t attr, uint64_t tid)
{
	memset(&out->mad, 0, sizeof(out->mad));
	out->mad.hdr.attr_id = attr;
	out->mad.hdr.tid = tid;
	out->send = true;
	return &out->mad;
}

static void resend(struct dpv_cm_out *out, const struct dpv_cm_msg *m)
{
	out->mad = *m;
	out->send = true;
}

static void event(struct dpv_cm_out *out, enum dpv_cm_event ev, const struct dpv_cm_msg *m)
{
	out->event = ev;
	out->msg = m;
}

/* A transaction ID of our own: the local ID keeps those of different connections apart. */
static uint64_t new_tid(struct dpv_cm_conn *c)
{
	return (uint64_t)c->local_id << 32 | ++c->tid_seq;
}

/* The wait for an answer: the answering CM's response time and a round trip. */
static uint64_t wait_ns(const struct dpv_cm_conn *c, uint8_t response_timeout)
{
	return dpv_cm_timeout_ns(response_timeout) + 2 * dpv_cm_timeout_ns(c->packet_life_time);
}

static void arm(struct dpv_cm_conn *c, uint64_t now, uint64_t ns)
{
	c->deadline = now + ns;
}

static void enter_timewait(struct dpv_cm_conn *c, uint64_t now)
{
	c->state = DPV_CM_TIMEWAIT;
	arm(c, now, c->timewait_ns);
}

static void enter_idle(struct dpv_cm_conn *c)
{
	c->state = DPV_CM_IDLE;
	c->deadline = DPV_CM_NO_DEADLINE;
}

/* Wait for the consumer (or the peer) with no clock running. */
static void enter(struct dpv_cm_conn *c, enum dpv_cm_state s)
{
	c->state = s;
	c->deadline = DPV_CM_NO_DEADLINE;
}

static void rej(struct dpv_cm_out *out, uint64_t tid, uint32_t local, uint32_t remote,
		uint8_t msg_rejected, uint16_t reason)
{
	struct dpv_cm_msg *m = start(out, DPV_CM_ATTR_REJ, tid);

	m->rej.local_comm_id = local;
	m->rej.remote_comm_id = remote;
	m->rej.message_rejected = msg_rejected;
	m->rej.reason = reason;
}

/* The MRA of a message handed to the consumer, kept for its duplicates. */
static void mra_auto(struct dpv_cm_conn *c, uint8_t message_mraed, enum dpv_cm_state s,
		     struct dpv_cm_out *out)
{
	struct dpv_cm_msg *m = start(out, DPV_CM_ATTR_MRA, c->tid);

	m->mra.local_comm_id = c->local_id;
	m->mra.remote_comm_id = c->remote_id;
	m->mra.message_mraed = message_mraed;
	m->mra.service_timeout = c->mra_timeout;
	c->answer = *m;
	c->has_answer = true;
	enter(c, s);
}

/* A REJ (Timeout) carries the rejecting CA's GUID as its ARI, so that a peer that
 * never learned our communication ID finds the connection by (our ID, GUID). */
static void rej_timeout(struct dpv_cm_conn *c, uint8_t msg_rejected, struct dpv_cm_out *out)
{
	uint8_t *ari = out->mad.rej.ari;
	int i;

	rej(out, c->tid, c->local_id, c->remote_id, msg_rejected, DPV_CM_REJ_TIMEOUT);
	for (i = 0; i < 8; i++)
		ari[i] = (uint8_t)(c->local_guid >> (56 - 8 * i));
	out->mad.rej.ari_length = 8;
}

static void sidr_rep(struct dpv_cm_out *out, uint64_t tid, uint32_t request_id,
		     uint64_t service_id, uint8_t status)
{
	struct dpv_cm_msg *m = start(out, DPV_CM_ATTR_SIDR_REP, tid);

	m->sidr_rep.request_id = request_id;
	m->sidr_rep.service_id = service_id;
	m->sidr_rep.status = status;
}

static void drep(struct dpv_cm_out *out, uint64_t tid, uint32_t local, uint32_t remote)
{
	struct dpv_cm_msg *m = start(out, DPV_CM_ATTR_DREP, tid);

	m->drep.local_comm_id = local;
	m->drep.remote_comm_id = remote;
}

static bool packs(const struct dpv_cm_msg *m)
{
	uint8_t mad[DPV_CM_MAD_LEN];

	return dpv_cm_pack(m, mad) == 0;
}

void dpv_cm_init(struct dpv_cm_conn *c, const struct dpv_cm_params *p)
{
	memset(c, 0, sizeof(*c));
	c->state = DPV_CM_IDLE;
	c->local_guid = p->local_ca_guid;
	c->packet_life_time = p->packet_life_time & 31u;
	c->mra_timeout = p->mra_timeout & 31u;
	c->timewait_ns = p->timewait_ns;
	c->deadline = DPV_CM_NO_DEADLINE;
}

enum dpv_cm_state dpv_cm_state(const struct dpv_cm_conn *c)
{
	return c->state;
}

const char *dpv_cm_state_name(enum dpv_cm_state s)
{
	static const char *const names[] = {
		[DPV_CM_IDLE] = "IDLE",
		[DPV_CM_LISTEN] = "LISTEN",
		[DPV_CM_REQ_SENT] = "REQ_SENT",
		[DPV_CM_MRA_REQ_RCVD] = "MRA_REQ_RCVD",
		[DPV_CM_REP_RCVD] = "REP_RCVD",
		[DPV_CM_REQ_RCVD] = "REQ_RCVD",
		[DPV_CM_MRA_REQ_SENT] = "MRA_REQ_SENT",
		[DPV_CM_REP_SENT] = "REP_SENT",
		[DPV_CM_MRA_REP_RCVD] = "MRA_REP_RCVD",
		[DPV_CM_ESTABLISHED] = "ESTABLISHED",
		[DPV_CM_DREQ_SENT] = "DREQ_SENT",
		[DPV_CM_DREQ_RCVD] = "DREQ_RCVD",
		[DPV_CM_TIMEWAIT] = "TIMEWAIT",
		[DPV_CM_MRA_REP_SENT] = "MRA_REP_SENT",
		[DPV_CM_SIDR_REQ_SENT] = "SIDR_REQ_SENT",
		[DPV_CM_SIDR_REQ_RCVD] = "SIDR_REQ_RCVD",
	};

	return (unsigned int)s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}

uint64_t dpv_cm_deadline(const struct dpv_cm_conn *c)
{
	return c->deadline;
}

int dpv_cm_listen(struct dpv_cm_conn *c, uint64_t service_id)
{
	if (c->state != DPV_CM_IDLE)
		return EINVAL;
	c->service_id = service_id;
	enter(c, DPV_CM_LISTEN);
	return 0;
}

int dpv_cm_connect(struct dpv_cm_conn *c, const struct dpv_cm_req *req, uint64_t now,
		   struct dpv_cm_out *out)
{
	struct dpv_cm_msg *m;

	clear(out);
	if (c->state != DPV_CM_IDLE || c->local_id == 0)
		return EINVAL;
	m = start(out, DPV_CM_ATTR_REQ, 0);
	m->req = *req;
	m->req.local_comm_id = c->local_id;
	m->req.local_ca_guid = c->local_guid;
	if (!packs(m)) {
		clear(out);
		return EINVAL;
	}
	m->hdr.tid = c->tid = new_tid(c);
	c->remote_id = 0;
	c->remote_guid = 0;
	c->service_id = req->service_id;
	c->local_qpn = req->local_qpn;
	c->peer_timeout = req->remote_cm_response_timeout;
	c->max_retries = req->max_cm_retries;
	c->retries = 0;
	c->has_answer = false;
	c->pending = *m;
	c->state = DPV_CM_REQ_SENT;
	arm(c, now, wait_ns(c, c->peer_timeout));
	return 0;
}

int dpv_cm_req_received(struct dpv_cm_conn *c, const struct dpv_cm_conn *listener,
			const struct dpv_cm_msg *m, struct dpv_cm_out *out)
{
	const struct dpv_cm_req *r = &m->req;

	clear(out);
	if (m->hdr.attr_id != DPV_CM_ATTR_REQ || listener->state != DPV_CM_LISTEN ||
	    listener->service_id != r->service_id || c->state != DPV_CM_IDLE || c->local_id == 0)
		return EINVAL;
	c->tid = m->hdr.tid;
	c->remote_id = r->local_comm_id;
	c->remote_guid = r->local_ca_guid;
	c->remote_qpn = r->local_qpn;
	c->service_id = r->service_id;
	/* The REQ's Local CM Response Timeout is the active side's: our peer's. */
	c->peer_timeout = r->local_cm_response_timeout;
	c->max_retries = r->max_cm_retries;
	c->retries = 0;
	c->has_answer = false;
	enter(c, DPV_CM_REQ_RCVD);
	event(out, DPV_CM_EV_CONNECT_REQUEST, m);
	return 0;
}

int dpv_cm_mra(struct dpv_cm_conn *c, uint8_t service_timeout, const void *pdata,
	       uint8_t len, struct dpv_cm_out *out)
{
	struct dpv_cm_msg *m;

	clear(out);
	if (c->state != DPV_CM_REQ_RCVD || service_timeout > 31 || len > DPV_CM_MRA_PDATA_LEN)
		return EINVAL;
	m = start(out, DPV_CM_ATTR_MRA, c->tid);
	m->mra.local_comm_id = c->local_id;
	m->mra.remote_comm_id = c->remote_id;
	m->mra.message_mraed = DPV_CM_REF_REQ;
	m->mra.service_timeout = service_timeout;
	if (len)
		memcpy(m->mra.private_data, pdata, len);
	c->answer = *m;
	c->has_answer = true;
	enter(c, DPV_CM_MRA_REQ_SENT);
	return 0;
}

int dpv_cm_accept(struct dpv_cm_conn *c, const struct dpv_cm_rep *rep, uint64_t now,
		  struct dpv_cm_out *out)
{
	struct dpv_cm_msg *m;

	clear(out);
	if (c->state != DPV_CM_REQ_RCVD && c->state != DPV_CM_MRA_REQ_SENT)
		return EINVAL;
	m = start(out, DPV_CM_ATTR_REP, c->tid);
	m->rep = *rep;
	m->rep.local_comm_id = c->local_id;
	m->rep.remote_comm_id = c->remote_id;
	m->rep.local_ca_guid = c->local_guid;
	if (!packs(m)) {
		clear(out);
		return EINVAL;
	}
	c->local_qpn = rep->local_qpn;
	c->pending = *m;
	c->has_answer = false;
	c->retries = 0;
	c->state = DPV_CM_REP_SENT;
	arm(c, now, wait_ns(c, c->peer_timeout));
	return 0;
}

int dpv_cm_reject(struct dpv_cm_conn *c, uint16_t reason, const void *pdata, uint8_t len,
		  uint64_t now, struct dpv_cm_out *out)
{
	bool of_req = c->state == DPV_CM_REQ_RCVD || c->state == DPV_CM_MRA_REQ_SENT;
	bool of_rep = c->state == DPV_CM_REP_RCVD || c->state == DPV_CM_MRA_REP_SENT;

	clear(out);
	if ((!of_req && !of_rep) || len > DPV_CM_REJ_PDATA_LEN)
		return EINVAL;
	rej(out, c->tid, c->local_id, c->remote_id, of_req ? DPV_CM_REF_REQ : DPV_CM_REF_REP,
	    reason);
	if (len)
		memcpy(out->mad.rej.private_data, pdata, len);
	if (of_req)
		enter_idle(c);
	else
		enter_timewait(c, now);
	return 0;
}

int dpv_cm_rtu(struct dpv_cm_conn *c, const void *pdata, uint8_t len, struct dpv_cm_out *out)
{
	struct dpv_cm_msg *m;

	clear(out);
	if ((c->state != DPV_CM_REP_RCVD && c->state != DPV_CM_MRA_REP_SENT) ||
	    len > DPV_CM_RTU_PDATA_LEN)
		return EINVAL;
	m = start(out, DPV_CM_ATTR_RTU, c->tid);
	m->rtu.local_comm_id = c->local_id;
	m->rtu.remote_comm_id = c->remote_id;
	if (len)
		memcpy(m->rtu.private_data, pdata, len);
	c->answer = *m;
	c->has_answer = true;
	enter(c, DPV_CM_ESTABLISHED);
	event(out, DPV_CM_EV_ESTABLISHED, NULL);
	return 0;
}

int dpv_cm_established(struct dpv_cm_conn *c, struct dpv_cm_out *out)
{
	clear(out);
	if (c->state != DPV_CM_REP_SENT && c->state != DPV_CM_MRA_REP_RCVD)
		return EINVAL;
	enter(c, DPV_CM_ESTABLISHED);
	event(out, DPV_CM_EV_ESTABLISHED, NULL);
	return 0;
}

int dpv_cm_disconnect(struct dpv_cm_conn *c, const void *pdata, uint8_t len, uint64_t now,
		      struct dpv_cm_out *out)
{
	struct dpv_cm_msg *m;

	clear(out);
	if (c->state == DPV_CM_ESTABLISHED) {
		if (len > DPV_CM_DREQ_PDATA_LEN)
			return EINVAL;
		m = start(out, DPV_CM_ATTR_DREQ, new_tid(c));
		m->dreq.local_comm_id = c->local_id;
		m->dreq.remote_comm_id = c->remote_id;
		m->dreq.remote_qpn = c->remote_qpn;
		if (len)
			memcpy(m->dreq.private_data, pdata, len);
		c->pending = *m;
		c->retries = 0;
		c->has_answer = false;
		c->state = DPV_CM_DREQ_SENT;
		arm(c, now, wait_ns(c, c->peer_timeout));
		return 0;
	}
	if (c->state == DPV_CM_DREQ_RCVD) {
		if (len > DPV_CM_DREP_PDATA_LEN)
			return EINVAL;
		drep(out, c->tid, c->local_id, c->remote_id);
		if (len)
			memcpy(out->mad.drep.private_data, pdata, len);
		enter_timewait(c, now);
		return 0;
	}
	return EINVAL;
}

int dpv_cm_sidr_request(struct dpv_cm_conn *c, const struct dpv_cm_sidr_req *req,
			uint8_t response_timeout, uint8_t max_retries, uint64_t now,
			struct dpv_cm_out *out)
{
	struct dpv_cm_msg *m;

	clear(out);
	if (c->state != DPV_CM_IDLE || c->local_id == 0 || response_timeout > 31 ||
	    max_retries > 15)
		return EINVAL;
	m = start(out, DPV_CM_ATTR_SIDR_REQ, new_tid(c));
	m->sidr_req = *req;
	m->sidr_req.request_id = c->local_id;
	c->tid = m->hdr.tid;
	c->remote_id = 0;
	c->remote_guid = 0;
	c->service_id = req->service_id;
	c->peer_timeout = response_timeout;
	c->max_retries = max_retries;
	c->retries = 0;
	c->has_answer = false;
	c->pending = *m;
	c->state = DPV_CM_SIDR_REQ_SENT;
	arm(c, now, wait_ns(c, c->peer_timeout));
	return 0;
}

int dpv_cm_sidr_req_received(struct dpv_cm_conn *c, const struct dpv_cm_conn *listener,
			     const struct dpv_cm_msg *m, uint64_t peer, struct dpv_cm_out *out)
{
	clear(out);
	if (m->hdr.attr_id != DPV_CM_ATTR_SIDR_REQ || listener->state != DPV_CM_LISTEN ||
	    listener->service_id != m->sidr_req.service_id || c->state != DPV_CM_IDLE ||
	    c->local_id == 0)
		return EINVAL;
	c->tid = m->hdr.tid;
	c->remote_id = m->sidr_req.request_id;
	/* A SIDR_REQ names no CA: its sender's address stands for the GUID. */
	c->remote_guid = peer;
	c->service_id = m->sidr_req.service_id;
	c->has_answer = false;
	enter(c, DPV_CM_SIDR_REQ_RCVD);
	event(out, DPV_CM_EV_CONNECT_REQUEST, m);
	return 0;
}

int dpv_cm_sidr_reply(struct dpv_cm_conn *c, const struct dpv_cm_sidr_rep *rep,
		      struct dpv_cm_out *out)
{
	struct dpv_cm_msg *m;

	clear(out);
	if (c->state != DPV_CM_SIDR_REQ_RCVD)
		return EINVAL;
	m = start(out, DPV_CM_ATTR_SIDR_REP, c->tid);
	m->sidr_rep = *rep;
	m->sidr_rep.request_id = c->remote_id;
	m->sidr_rep.service_id = c->service_id;
	if (!packs(m)) {
		clear(out);
		return EINVAL;
	}
	c->local_qpn = rep->qpn;
	enter_idle(c);
	return 0;
}

static int input_sidr_rep(struct dpv_cm_conn *c, const struct dpv_cm_msg *m,
			  struct dpv_cm_out *out)
{
	const struct dpv_cm_sidr_rep *r = &m->sidr_rep;

	if (c->state != DPV_CM_SIDR_REQ_SENT || r->request_id != c->local_id ||
	    m->hdr.tid != c->tid)
		return EPROTO;
	c->remote_qpn = r->qpn;
	enter_idle(c);
	/* As Linux's RDMA CM reports it: a QP for Success, UNREACHABLE with the status
	 * for any other. */
	event(out, r->status == DPV_CM_SIDR_SUCCESS ? DPV_CM_EV_ESTABLISHED : DPV_CM_EV_UNREACHABLE,
	      m);
	return 0;
}

/* A REQ again, from the same peer connection (dpv_cm_table_route() found it so). */
static int input_req(struct dpv_cm_conn *c, const struct dpv_cm_msg *m, struct dpv_cm_out *out)
{
	if (m->req.local_comm_id != c->remote_id || m->req.local_ca_guid != c->remote_guid)
		return EPROTO;
	switch (c->state) {
	case DPV_CM_REQ_RCVD:
		/* The consumer has not answered within the sender's timeout: tell it the
		 * REQ is here and how long the answer may take (IBTA 12.6.6). */
		mra_auto(c, DPV_CM_REF_REQ, DPV_CM_MRA_REQ_SENT, out);
		return 0;
	case DPV_CM_MRA_REQ_SENT:
		resend(out, &c->answer);
		return 0;
	case DPV_CM_REP_SENT:
	case DPV_CM_MRA_REP_RCVD:
		resend(out, &c->pending);
		return 0;
	case DPV_CM_TIMEWAIT:
		rej(out, m->hdr.tid, c->local_id, m->req.local_comm_id, DPV_CM_REF_REQ,
		    DPV_CM_REJ_STALE_CONN);
		return 0;
	default:
		return EPROTO;
	}
}

static int input_mra(struct dpv_cm_conn *c, const struct dpv_cm_msg *m, uint64_t now)
{
	const struct dpv_cm_mra *r = &m->mra;

	if (r->remote_comm_id != c->local_id)
		return EPROTO;
	if (c->state == DPV_CM_REQ_SENT && r->message_mraed == DPV_CM_REF_REQ) {
		c->state = DPV_CM_MRA_REQ_RCVD;
	} else if (c->state == DPV_CM_REP_SENT && r->message_mraed == DPV_CM_REF_REP &&
		   r->local_comm_id == c->remote_id) {
		c->state = DPV_CM_MRA_REP_RCVD;
	} else {
		return EPROTO;
	}
	arm(c, now, wait_ns(c, r->service_timeout));
	return 0;
}

static int input_rej(struct dpv_cm_conn *c, const struct dpv_cm_msg *m, uint64_t now,
		     struct dpv_cm_out *out)
{
	const struct dpv_cm_rej *r = &m->rej;
	bool active_wait = c->state == DPV_CM_REQ_SENT || c->state == DPV_CM_MRA_REQ_RCVD;

	/* A REJ names us by our ID, or (a peer that never learned it) by 0 and its own. */
	if (r->remote_comm_id != c->local_id && r->remote_comm_id != 0)
		return EPROTO;
	if (!active_wait && r->local_comm_id != c->remote_id)
		return EPROTO;
	switch (c->state) {
	case DPV_CM_REQ_SENT:
	case DPV_CM_MRA_REQ_RCVD:
	case DPV_CM_REQ_RCVD:
	case DPV_CM_MRA_REQ_SENT:
		enter_idle(c);
		break;
	case DPV_CM_REP_RCVD:
	case DPV_CM_MRA_REP_SENT:
	case DPV_CM_REP_SENT:
	case DPV_CM_MRA_REP_RCVD:
	case DPV_CM_ESTABLISHED:
		enter_timewait(c, now);
		break;
	default:
		return EPROTO;
	}
	event(out, DPV_CM_EV_REJECTED, m);
	out->rej_reason = r->reason;
	return 0;
}

static int input_rep(struct dpv_cm_conn *c, const struct dpv_cm_msg *m, struct dpv_cm_out *out)
{
	const struct dpv_cm_rep *r = &m->rep;

	if (r->remote_comm_id != c->local_id)
		return EPROTO;
	switch (c->state) {
	case DPV_CM_REQ_SENT:
	case DPV_CM_MRA_REQ_RCVD:
		c->remote_id = r->local_comm_id;
		c->remote_guid = r->local_ca_guid;
		c->remote_qpn = r->local_qpn;
		enter(c, DPV_CM_REP_RCVD);
		event(out, DPV_CM_EV_CONNECT_RESPONSE, m);
		return 0;
	case DPV_CM_REP_RCVD:
		if (r->local_comm_id != c->remote_id)
			return EPROTO;
		mra_auto(c, DPV_CM_REF_REP, DPV_CM_MRA_REP_SENT, out);
		return 0;
	case DPV_CM_MRA_REP_SENT:
		if (r->local_comm_id != c->remote_id)
			return EPROTO;
		resend(out, &c->answer);
		return 0;
	case DPV_CM_ESTABLISHED:
		if (r->local_comm_id != c->remote_id || !c->has_answer)
			return EPROTO;
		resend(out, &c->answer);
		return 0;
	case DPV_CM_TIMEWAIT:
		rej(out, m->hdr.tid, c->local_id, r->local_comm_id, DPV_CM_REF_REP,
		    DPV_CM_REJ_STALE_CONN);
		return 0;
	default:
		return EPROTO;
	}
}

static int input_rtu(struct dpv_cm_conn *c, const struct dpv_cm_msg *m, struct dpv_cm_out *out)
{
	const struct dpv_cm_rtu *r = &m->rtu;

	if (r->remote_comm_id != c->local_id || r->local_comm_id != c->remote_id)
		return EPROTO;
	switch (c->state) {
	case DPV_CM_REP_SENT:
	case DPV_CM_MRA_REP_RCVD:
		enter(c, DPV_CM_ESTABLISHED);
		event(out, DPV_CM_EV_ESTABLISHED, m);
		return 0;
	case DPV_CM_ESTABLISHED:
		return 0; /* after dpv_cm_established(): the RTU is late, not wrong */
	case DPV_CM_TIMEWAIT:
		rej(out, m->hdr.tid, c->local_id, r->local_comm_id, DPV_CM_REF_OTHER,
		    DPV_CM_REJ_STALE_CONN);
		return 0;
	default:
		return EPROTO;
	}
}

static int input_dreq(struct dpv_cm_conn *c, const struct dpv_cm_msg *m, uint64_t now,
		      struct dpv_cm_out *out)
{
	const struct dpv_cm_dreq *r = &m->dreq;

	if (r->remote_comm_id != c->local_id || r->local_comm_id != c->remote_id ||
	    r->remote_qpn != c->local_qpn)
		return EPROTO;
	switch (c->state) {
	case DPV_CM_ESTABLISHED:
	case DPV_CM_REP_SENT:
	case DPV_CM_MRA_REP_RCVD:
		c->tid = m->hdr.tid;
		enter(c, DPV_CM_DREQ_RCVD);
		event(out, DPV_CM_EV_DISCONNECTED, m);
		return 0;
	case DPV_CM_DREQ_SENT:
		c->tid = m->hdr.tid;
		drep(out, m->hdr.tid, c->local_id, c->remote_id);
		enter_timewait(c, now);
		event(out, DPV_CM_EV_DISCONNECTED, m);
		return 0;
	case DPV_CM_DREQ_RCVD:
		return 0; /* the consumer's DREP is on its way */
	case DPV_CM_TIMEWAIT:
		drep(out, m->hdr.tid, c->local_id, c->remote_id);
		return 0;
	default:
		return EPROTO;
	}
}

static int input_drep(struct dpv_cm_conn *c, const struct dpv_cm_msg *m, uint64_t now,
		      struct dpv_cm_out *out)
{
	const struct dpv_cm_drep *r = &m->drep;

	if (r->remote_comm_id != c->local_id || r->local_comm_id != c->remote_id)
		return EPROTO;
	switch (c->state) {
	case DPV_CM_DREQ_SENT:
		enter_timewait(c, now);
		event(out, DPV_CM_EV_DISCONNECTED, m);
		return 0;
	case DPV_CM_TIMEWAIT:
		return 0;
	default:
		return EPROTO;
	}
}

int dpv_cm_input(struct dpv_cm_conn *c, const struct dpv_cm_msg *m, uint64_t now,
		 struct dpv_cm_out *out)
{
	clear(out);
	switch (m->hdr.attr_id) {
	case DPV_CM_ATTR_REQ:
		return input_req(c, m, out);
	case DPV_CM_ATTR_MRA:
		return input_mra(c, m, now);
	case DPV_CM_ATTR_REJ:
		return input_rej(c, m, now, out);
	case DPV_CM_ATTR_REP:
		return input_rep(c, m, out);
	case DPV_CM_ATTR_RTU:
		return input_rtu(c, m, out);
	case DPV_CM_ATTR_DREQ:
		return input_dreq(c, m, now, out);
	case DPV_CM_ATTR_DREP:
		return input_drep(c, m, now, out);
	case DPV_CM_ATTR_SIDR_REQ:
		/* The request again while the consumer decides: it answers once. */
		return c->state == DPV_CM_SIDR_REQ_RCVD && m->sidr_req.request_id == c->remote_id
			       ? 0
			       : EPROTO;
	case DPV_CM_ATTR_SIDR_REP:
		return input_sidr_rep(c, m, out);
	default:
		return EPROTO;
	}
}

/* The pending MAD again if retries are left; false when they are spent. */
static bool retry(struct dpv_cm_conn *c, enum dpv_cm_state s, uint64_t now,
		  struct dpv_cm_out *out)
{
	if (c->retries >= c->max_retries)
		return false;
	c->retries++;
	c->state = s;
	resend(out, &c->pending);
	arm(c, now, wait_ns(c, c->peer_timeout));
	return true;
}

void dpv_cm_timer(struct dpv_cm_conn *c, uint64_t now, struct dpv_cm_out *out)
{
	clear(out);
	if (now < c->deadline)
		return;
	switch (c->state) {
	case DPV_CM_REQ_SENT:
	case DPV_CM_MRA_REQ_RCVD:
		if (retry(c, DPV_CM_REQ_SENT, now, out))
			break;
		rej_timeout(c, DPV_CM_REF_REQ, out);
		enter_idle(c);
		event(out, DPV_CM_EV_UNREACHABLE, NULL);
		break;
	case DPV_CM_REP_SENT:
	case DPV_CM_MRA_REP_RCVD:
		if (retry(c, DPV_CM_REP_SENT, now, out))
			break;
		rej_timeout(c, DPV_CM_REF_REP, out);
		enter_timewait(c, now);
		event(out, DPV_CM_EV_UNREACHABLE, NULL);
		break;
	case DPV_CM_DREQ_SENT:
		if (retry(c, DPV_CM_DREQ_SENT, now, out))
			break;
		enter_timewait(c, now);
		event(out, DPV_CM_EV_DISCONNECTED, NULL);
		break;
	case DPV_CM_SIDR_REQ_SENT:
		if (retry(c, DPV_CM_SIDR_REQ_SENT, now, out))
			break;
		enter_idle(c);
		event(out, DPV_CM_EV_UNREACHABLE, NULL);
		break;
	case DPV_CM_TIMEWAIT:
		enter_idle(c);
		event(out, DPV_CM_EV_TIMEWAIT_EXIT, NULL);
		break;
	default:
		c->deadline = DPV_CM_NO_DEADLINE;
		break;
	}
}

int dpv_cm_answer_unmatched(const struct dpv_cm_msg *m, struct dpv_cm_out *out)
{
	uint64_t tid = m->hdr.tid;

	clear(out);
	switch (m->hdr.attr_id) {
	case DPV_CM_ATTR_REQ:
		rej(out, tid, 0, m->req.local_comm_id, DPV_CM_REF_REQ,
		    DPV_CM_REJ_INVALID_SERVICE_ID);
		return 0;
	case DPV_CM_ATTR_REP:
		rej(out, tid, m->rep.remote_comm_id, m->rep.local_comm_id, DPV_CM_REF_REP,
		    DPV_CM_REJ_STALE_CONN);
		return 0;
	case DPV_CM_ATTR_RTU:
		rej(out, tid, m->rtu.remote_comm_id, m->rtu.local_comm_id, DPV_CM_REF_OTHER,
		    DPV_CM_REJ_STALE_CONN);
		return 0;
	case DPV_CM_ATTR_DREQ:
		drep(out, tid, m->dreq.remote_comm_id, m->dreq.local_comm_id);
		return 0;
	case DPV_CM_ATTR_SIDR_REQ:
		sidr_rep(out, tid, m->sidr_req.request_id, m->sidr_req.service_id,
			 DPV_CM_SIDR_UNSUPPORTED);
		return 0;
	default:
		return ENOENT;
	}
}

int dpv_cm_answer_no_resources(const struct dpv_cm_msg *m, struct dpv_cm_out *out)
{
	clear(out);
	switch (m->hdr.attr_id) {
	case DPV_CM_ATTR_REQ:
		rej(out, m->hdr.tid, 0, m->req.local_comm_id, DPV_CM_REF_REQ,
		    DPV_CM_REJ_NO_RESOURCES);
		return 0;
	case DPV_CM_ATTR_SIDR_REQ:
		sidr_rep(out, m->hdr.tid, m->sidr_req.request_id, m->sidr_req.service_id,
			 DPV_CM_SIDR_REJECT);
		return 0;
	default:
		return ENOENT;
	}
}

static uint64_t be_get(const uint8_t *p, unsigned int n)
{
	uint64_t v = 0;
	unsigned int i;

	for (i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

int dpv_cm_answer_version(const void *buf, size_t len, struct dpv_cm_out *out)
{
	/* The common MAD header (IBTA 13.4.3) and the first fields of a REQ and of a
	 * SIDR_REQ, at the same offsets in every class version. */
	const uint8_t *b = buf;
	uint64_t tid;
	uint32_t id;

	clear(out);
	if (len != DPV_CM_MAD_LEN || b[0] != DPV_CM_BASE_VERSION || b[1] != DPV_CM_MGMT_CLASS ||
	    b[2] == DPV_CM_CLASS_VERSION || b[3] != DPV_CM_METHOD_SEND)
		return ENOENT;
	tid = be_get(b + 8, 8);
	id = (uint32_t)be_get(b + DPV_CM_MAD_HDR_LEN, 4);
	switch (be_get(b + 16, 2)) {
	case DPV_CM_ATTR_REQ:
		rej(out, tid, 0, id, DPV_CM_REF_REQ, DPV_CM_REJ_INVALID_CLASS_VERSION);
		out->mad.rej.ari[0] = DPV_CM_CLASS_VERSION;
		out->mad.rej.ari_length = 1;
		return 0;
	case DPV_CM_ATTR_SIDR_REQ:
		sidr_rep(out, tid, id, be_get(b + DPV_CM_MAD_HDR_LEN + 8, 8),
			 DPV_CM_SIDR_UNSUPPORTED_VERSION);
		out->mad.sidr_rep.info[0] = DPV_CM_CLASS_VERSION;
		out->mad.sidr_rep.info_length = 1;
		return 0;
	default:
		return ENOENT;
	}
}

/* Local ID: the slot's generation (never 0) above its index. */
#define ID_SLOT(id) ((id) & 0xffffu)

size_t dpv_cm_table_memsize(uint32_t cap)
{
	if (cap == 0 || cap > DPV_CM_TABLE_MAX)
		return 0;
	return cap * (sizeof(struct dpv_cm_conn *) + sizeof(uint16_t));
}

int dpv_cm_table_init_at(struct dpv_cm_table *t, uint32_t cap, void *mem)
{
	size_t n = dpv_cm_table_memsize(cap);
	uint32_t i;

	memset(t, 0, sizeof(*t));
	if (n == 0 || mem == NULL)
		return EINVAL;
	memset(mem, 0, n);
	/* The slots, then the generations: one block. */
	t->slot = mem;
	t->gen = (uint16_t *)(t->slot + cap);
	for (i = 0; i < cap; i++)
		t->gen[i] = 1;
	t->cap = cap;
	return 0;
}

int dpv_cm_table_init(struct dpv_cm_table *t, uint32_t cap)
{
	size_t n = dpv_cm_table_memsize(cap);
	void *mem;

	memset(t, 0, sizeof(*t));
	if (n == 0)
		return EINVAL;
	mem = malloc(n);
	if (mem == NULL)
		return ENOMEM;
	return dpv_cm_table_init_at(t, cap, mem);
}

void dpv_cm_table_fini(struct dpv_cm_table *t)
{
	free(t->slot);
	memset(t, 0, sizeof(*t));
}

int dpv_cm_table_add(struct dpv_cm_table *t, struct dpv_cm_conn *c)
{
	uint32_t i;

	if (c->local_id != 0)
		return EEXIST;
	if (t->used == t->cap)
		return ENOSPC;
	for (i = 0; t->slot[i] != NULL; i++)
		;
	t->slot[i] = c;
	t->used++;
	c->local_id = (uint32_t)t->gen[i] << 16 | i;
	return 0;
}

int dpv_cm_table_remove(struct dpv_cm_table *t, struct dpv_cm_conn *c)
{
	uint32_t i = ID_SLOT(c->local_id);

	if (c->local_id == 0 || i >= t->cap || t->slot[i] != c)
		return ENOENT;
	t->slot[i] = NULL;
	t->used--;
	/* A new generation: a late MAD for the old ID finds no connection. */
	if (++t->gen[i] == 0)
		t->gen[i] = 1;
	c->local_id = 0;
	return 0;
}

struct dpv_cm_conn *dpv_cm_table_find(const struct dpv_cm_table *t, uint32_t local_id)
{
	uint32_t i = ID_SLOT(local_id);

	if (i >= t->cap || t->slot[i] == NULL || t->slot[i]->local_id != local_id)
		return NULL;
	return t->slot[i];
}

struct dpv_cm_conn *dpv_cm_table_find_remote(const struct dpv_cm_table *t, uint32_t remote_id,
					     uint64_t remote_guid)
{
	uint32_t i;

	for (i = 0; i < t->cap; i++) {
		const struct dpv_cm_conn *c = t->slot[i];

		/* A connection whose peer's ID is not known yet (0) matches nothing, nor a
		 * SIDR request (its peer is an address). */
		if (c != NULL && c->state != DPV_CM_IDLE && c->state != DPV_CM_LISTEN &&
		    c->state != DPV_CM_SIDR_REQ_RCVD && c->remote_id != 0 && c->remote_id == remote_id &&
		    c->remote_guid == remote_guid)
			return t->slot[i];
	}
	return NULL;
}

struct dpv_cm_conn *dpv_cm_table_find_sidr(const struct dpv_cm_table *t, uint32_t request_id,
					   uint64_t peer)
{
	uint32_t i;

	for (i = 0; i < t->cap; i++) {
		const struct dpv_cm_conn *c = t->slot[i];

		if (c != NULL && c->state == DPV_CM_SIDR_REQ_RCVD && c->remote_id == request_id &&
		    c->remote_guid == peer)
			return t->slot[i];
	}
	return NULL;
}

struct dpv_cm_conn *dpv_cm_table_find_listener(const struct dpv_cm_table *t,
					       uint64_t service_id)
{
	uint32_t i;

	for (i = 0; i < t->cap; i++) {
		const struct dpv_cm_conn *c = t->slot[i];

		if (c != NULL && c->state == DPV_CM_LISTEN && c->service_id == service_id)
			return t->slot[i];
	}
	return NULL;
}

static uint64_t ari_guid(const struct dpv_cm_rej *r)
{
	uint64_t g = 0;
	int i;

	for (i = 0; i < 8; i++)
		g = g << 8 | r->ari[i];
	return g;
}

struct dpv_cm_conn *dpv_cm_table_route(const struct dpv_cm_table *t, const struct dpv_cm_msg *m)
{
	struct dpv_cm_conn *c;

	switch (m->hdr.attr_id) {
	case DPV_CM_ATTR_REQ:
		c = dpv_cm_table_find_remote(t, m->req.local_comm_id, m->req.local_ca_guid);
		return c != NULL ? c : dpv_cm_table_find_listener(t, m->req.service_id);
	case DPV_CM_ATTR_MRA:
		return dpv_cm_table_find(t, m->mra.remote_comm_id);
	case DPV_CM_ATTR_REJ:
		/* A REJ (Timeout) from a peer that never learned our ID names its
		 * connection by its own ID and GUID (the ARI). */
		if (m->rej.remote_comm_id == 0 && m->rej.reason == DPV_CM_REJ_TIMEOUT &&
		    m->rej.ari_length >= 8)
			return dpv_cm_table_find_remote(t, m->rej.local_comm_id, ari_guid(&m->rej));
		return dpv_cm_table_find(t, m->rej.remote_comm_id);
	case DPV_CM_ATTR_REP:
		return dpv_cm_table_find(t, m->rep.remote_comm_id);
	case DPV_CM_ATTR_RTU:
		return dpv_cm_table_find(t, m->rtu.remote_comm_id);
	case DPV_CM_ATTR_DREQ:
		return dpv_cm_table_find(t, m->dreq.remote_comm_id);
	case DPV_CM_ATTR_DREP:
		return dpv_cm_table_find(t, m->drep.remote_comm_id);
	case DPV_CM_ATTR_SIDR_REQ:
		return dpv_cm_table_find_listener(t, m->sidr_req.service_id);
	case DPV_CM_ATTR_SIDR_REP:
		return dpv_cm_table_find(t, m->sidr_rep.request_id);
	default:
		return NULL;
	}
}
