/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_cm: lib/cm against a hostile wire. Two hosts (an active connection; a listener
 * and a free connection) run the CM state machine; the input is a string of steps:
 * a MAD of the input's bytes to either host, a MAD one host sent with a byte changed
 * to the other (so that valid-looking MADs reach every state), a consumer's call, or
 * the clock moving on. Whatever comes, nothing crashes (ASan and UBSan watch), every
 * MAD the machine hands out packs, and no deadline is left in the past after a timer
 * run. Built without libFuzzer, replay_main.c drives the same function.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dpv_cm.h"
#include "tm_drive.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct host {
	struct dpv_cm_table t;
	struct dpv_cm_conn conn;
	struct dpv_cm_conn listener;
	struct dpv_cm_msg rx;
	uint8_t last[DPV_CM_MAD_LEN]; /* the last MAD it sent */
	bool has_last;
};

static struct host hosts[2];
static uint64_t now;

static void check(bool ok)
{
	if (!ok)
		abort();
}

/* A MAD the machine hands out must pack: the device sends it as it is. */
static void sent(struct host *h, const struct dpv_cm_out *o)
{
	if (!o->send)
		return;
	check(dpv_cm_pack(&o->mad, h->last) == 0);
	h->has_last = true;
}

static void receive(struct host *h, const uint8_t *mad, size_t len)
{
	struct dpv_cm_out o;
	struct dpv_cm_conn *c;

	int ret = dpv_cm_unpack(mad, len, &h->rx);

	if (ret == EPROTONOSUPPORT) {
		check(dpv_cm_answer_version(mad, len, &o) == 0 || !o.send);
		sent(h, &o);
		return;
	}
	if (ret != 0)
		return;
	/* The sender of a SIDR_REQ is the other host: its index is its address. */
	if (h->rx.hdr.attr_id == DPV_CM_ATTR_SIDR_REQ &&
	    (c = dpv_cm_table_find_sidr(&h->t, h->rx.sidr_req.request_id, h == hosts)) != NULL) {
		dpv_cm_input(c, &h->rx, now, &o);
		sent(h, &o);
		return;
	}
	c = dpv_cm_table_route(&h->t, &h->rx);
	if (c == NULL)
		check(dpv_cm_answer_unmatched(&h->rx, &o) == 0 || !o.send);
	else if (c->state == DPV_CM_LISTEN && h->rx.hdr.attr_id == DPV_CM_ATTR_SIDR_REQ)
		dpv_cm_sidr_req_received(&h->conn, c, &h->rx, h == hosts, &o);
	else if (c->state == DPV_CM_LISTEN)
		dpv_cm_req_received(&h->conn, c, &h->rx, &o);
	else
		dpv_cm_input(c, &h->rx, now, &o);
	sent(h, &o);
}

static void consumer_call(struct host *h, struct tm_src *s)
{
	struct dpv_cm_conn *c = &h->conn;
	struct dpv_cm_out o;
	uint8_t pdata[DPV_CM_MAD_LEN];
	uint8_t len = tm_src_u8(s);
	size_t i;

	for (i = 0; i < sizeof(pdata); i++)
		pdata[i] = (uint8_t)i;
	switch (tm_src_below(s, 10)) {
	case 0: {
		struct dpv_cm_req req;

		memset(&req, 0, sizeof(req));
		req.service_id = h->listener.service_id ^ tm_src_below(s, 2);
		req.local_qpn = tm_src_below(s, 1u << 24);
		req.remote_cm_response_timeout = (uint8_t)tm_src_below(s, 32);
		req.local_cm_response_timeout = (uint8_t)tm_src_below(s, 32);
		req.max_cm_retries = (uint8_t)tm_src_below(s, 16);
		dpv_cm_connect(c, &req, now, &o);
		break;
	}
	case 1: {
		struct dpv_cm_rep rep;

		memset(&rep, 0, sizeof(rep));
		rep.local_qpn = tm_src_below(s, 1u << 24);
		dpv_cm_accept(c, &rep, now, &o);
		break;
	}
	case 2:
		dpv_cm_rtu(c, pdata, len, &o);
		break;
	case 3:
		dpv_cm_mra(c, tm_src_u8(s), pdata, len, &o);
		break;
	case 4:
		dpv_cm_reject(c, DPV_CM_REJ_CONSUMER_DEFINED, pdata, len, now, &o);
		break;
	case 5:
		dpv_cm_disconnect(c, pdata, len, now, &o);
		break;
	case 6:
		dpv_cm_established(c, &o);
		break;
	case 7: {
		struct dpv_cm_sidr_req req;

		memset(&req, 0, sizeof(req));
		req.service_id = h->listener.service_id ^ tm_src_below(s, 2);
		dpv_cm_sidr_request(c, &req, (uint8_t)tm_src_below(s, 33),
				    (uint8_t)tm_src_below(s, 17), now, &o);
		break;
	}
	case 8: {
		struct dpv_cm_sidr_rep rep;

		memset(&rep, 0, sizeof(rep));
		rep.status = (uint8_t)tm_src_below(s, 6);
		rep.qpn = tm_src_below(s, 1u << 25);
		rep.info_length = (uint8_t)tm_src_below(s, 80);
		dpv_cm_sidr_reply(c, &rep, &o);
		break;
	}
	default:
		/* A connection that left for IDLE is taken out and put back: a new ID. */
		if (c->state != DPV_CM_IDLE)
			return;
		check(dpv_cm_table_remove(&h->t, c) == 0);
		check(dpv_cm_table_add(&h->t, c) == 0);
		return;
	}
	sent(h, &o);
}

static void clock_runs(uint64_t step)
{
	struct dpv_cm_out o;
	int i;

	now += step;
	for (i = 0; i < 2; i++) {
		dpv_cm_timer(&hosts[i].conn, now, &o);
		sent(&hosts[i], &o);
		check(dpv_cm_deadline(&hosts[i].conn) > now ||
		      dpv_cm_deadline(&hosts[i].conn) == DPV_CM_NO_DEADLINE);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dpv_cm_params p = {0x0002c90300000a0aull, 10, 1000000000ull, 14};
	uint8_t mad[DPV_CM_MAD_LEN + 1];
	struct tm_src s;
	int i;

	tm_src_init_bytes(&s, data, size);
	memset(hosts, 0, sizeof(hosts));
	now = 1;
	for (i = 0; i < 2; i++) {
		struct host *h = &hosts[i];

		p.local_ca_guid += (uint64_t)i;
		check(dpv_cm_table_init(&h->t, 4) == 0);
		dpv_cm_init(&h->conn, &p);
		dpv_cm_init(&h->listener, &p);
		check(dpv_cm_table_add(&h->t, &h->conn) == 0);
		check(dpv_cm_table_add(&h->t, &h->listener) == 0);
		check(dpv_cm_listen(&h->listener, 0x0000000001061c06ull) == 0);
	}
	while (!tm_src_empty(&s)) {
		uint8_t op = tm_src_u8(&s);
		struct host *to = &hosts[op & 1];
		struct host *from = &hosts[!(op & 1)];
		size_t len, j;

		switch ((op >> 1) % 4) {
		case 0: /* raw bytes from the wire, of any length up to a MAD and one */
			len = tm_src_below(&s, 8) == 0 ? tm_src_below(&s, sizeof(mad) + 1)
						       : DPV_CM_MAD_LEN;
			for (j = 0; j < len; j++)
				mad[j] = tm_src_u8(&s);
			receive(to, mad, len);
			break;
		case 1: /* the peer's last MAD, a byte changed (or none) */
			if (!from->has_last)
				break;
			memcpy(mad, from->last, DPV_CM_MAD_LEN);
			j = tm_src_u8(&s);
			if (j < DPV_CM_MAD_LEN && (op & 0x80))
				mad[j] = tm_src_u8(&s);
			receive(to, mad, DPV_CM_MAD_LEN);
			break;
		case 2:
			consumer_call(to, &s);
			break;
		default:
			clock_runs((uint64_t)tm_src_u8(&s) << tm_src_below(&s, 40));
			break;
		}
		for (i = 0; i < 2; i++)
			check(hosts[i].t.used <= hosts[i].t.cap);
	}
	for (i = 0; i < 2; i++)
		dpv_cm_table_fini(&hosts[i].t);
	return 0;
}
