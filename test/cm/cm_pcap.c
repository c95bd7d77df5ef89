/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Writes a pcap of one RoCEv2 frame per CM MAD lib/cm packs (and per refusal it answers
 * a request with), each a UD SEND to QP1 as a GSI datagram travels (BTH dest QP 1,
 * DETH Q_Key 0x80010000 from source QP 1), and on stdout a line per frame for
 * check_cm_pcap.py to compare with what tshark reads: frame number, attribute ID, then
 * the fields of that message tshark decodes (comm IDs, service ID, QPN, REJ reason).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "dpv_cm.h"
#include "dpv_cm_ip.h"
#include "dpv_pcap.h"
#include "dpv_wire.h"

#define IP_A 0x7f001e01u /* 127.0.30.1 */
#define IP_B 0x7f001e02u
#define ID_A 0x00010001u
#define ID_B 0x00020003u
#define GUID_A 0x0002c90300000a0aull
#define GUID_B 0x0002c90300000b0bull
#define QPN_A 0x000111u
#define QPN_B 0x000222u

static struct dpv_cm_msg msg(uint16_t attr, uint64_t tid)
{
	struct dpv_cm_msg m;

	memset(&m, 0, sizeof(m));
	m.hdr.attr_id = attr;
	m.hdr.tid = tid;
	return m;
}

/* A REQ as Linux's rdma_connect() forms it for RDMA_PS_TCP port 7174 over RoCEv2. */
static struct dpv_cm_msg req(void)
{
	struct dpv_cm_msg m = msg(DPV_CM_ATTR_REQ, 0x1000000001ull);
	struct dpv_cm_ip_hdr ip = {.ip_version = 4, .src_port = 40000};
	struct dpv_cm_req *r = &m.req;

	r->local_comm_id = ID_A;
	r->service_id = dpv_cm_ip_service_id(DPV_CM_PS_TCP, 7174);
	r->local_ca_guid = GUID_A;
	r->local_qpn = QPN_A;
	r->responder_resources = 4;
	r->initiator_depth = 4;
	r->remote_cm_response_timeout = 20;
	r->transport = DPV_CM_TRANSPORT_RC;
	r->starting_psn = 0x123456;
	r->local_cm_response_timeout = 20;
	r->retry_count = 7;
	r->pkey = 0xffff;
	r->path_mtu = 3;
	r->rnr_retry_count = 7;
	r->max_cm_retries = 15;
	dpv_cm_gid_from_ipv4(IP_A, r->primary.local_gid);
	dpv_cm_gid_from_ipv4(IP_B, r->primary.remote_gid);
	r->primary.hop_limit = 64;
	r->primary.local_ack_timeout = 18;
	dpv_cm_gid_from_ipv4(IP_A, ip.src);
	dpv_cm_gid_from_ipv4(IP_B, ip.dst);
	dpv_cm_ip_hdr_pack(&ip, r->private_data, sizeof(r->private_data));
	return m;
}

static struct dpv_cm_msg rep(void)
{
	struct dpv_cm_msg m = msg(DPV_CM_ATTR_REP, 0x1000000001ull);

	m.rep.local_comm_id = ID_B;
	m.rep.remote_comm_id = ID_A;
	m.rep.local_qpn = QPN_B;
	m.rep.starting_psn = 0x654321;
	m.rep.responder_resources = 4;
	m.rep.initiator_depth = 4;
	m.rep.target_ack_delay = 15;
	m.rep.rnr_retry_count = 7;
	m.rep.local_ca_guid = GUID_B;
	return m;
}

static struct dpv_cm_msg mra(void)
{
	struct dpv_cm_msg m = msg(DPV_CM_ATTR_MRA, 0x1000000001ull);

	m.mra.local_comm_id = ID_B;
	m.mra.remote_comm_id = ID_A;
	m.mra.message_mraed = DPV_CM_REF_REQ;
	m.mra.service_timeout = 20;
	return m;
}

static struct dpv_cm_msg rej(void)
{
	struct dpv_cm_msg m = msg(DPV_CM_ATTR_REJ, 0x1000000001ull);

	m.rej.local_comm_id = ID_B;
	m.rej.remote_comm_id = ID_A;
	m.rej.message_rejected = DPV_CM_REF_REQ;
	m.rej.reason = DPV_CM_REJ_CONSUMER_DEFINED;
	memcpy(m.rej.private_data, "refused", 7);
	return m;
}

static struct dpv_cm_msg rtu(void)
{
	struct dpv_cm_msg m = msg(DPV_CM_ATTR_RTU, 0x1000000001ull);

	m.rtu.local_comm_id = ID_A;
	m.rtu.remote_comm_id = ID_B;
	return m;
}

static struct dpv_cm_msg dreq(void)
{
	struct dpv_cm_msg m = msg(DPV_CM_ATTR_DREQ, 0x1000000002ull);

	m.dreq.local_comm_id = ID_A;
	m.dreq.remote_comm_id = ID_B;
	m.dreq.remote_qpn = QPN_B;
	return m;
}

static struct dpv_cm_msg drep(void)
{
	struct dpv_cm_msg m = msg(DPV_CM_ATTR_DREP, 0x1000000002ull);

	m.drep.local_comm_id = ID_B;
	m.drep.remote_comm_id = ID_A;
	return m;
}

static struct dpv_cm_msg sidr_req(void)
{
	struct dpv_cm_msg m = msg(DPV_CM_ATTR_SIDR_REQ, 0x1000000003ull);

	m.sidr_req.request_id = ID_A;
	m.sidr_req.pkey = 0xffff;
	m.sidr_req.service_id = dpv_cm_ip_service_id(DPV_CM_PS_UDP, 7174);
	return m;
}

static struct dpv_cm_msg sidr_rep(void)
{
	struct dpv_cm_msg m = msg(DPV_CM_ATTR_SIDR_REP, 0x1000000003ull);

	m.sidr_rep.request_id = ID_A;
	m.sidr_rep.status = DPV_CM_SIDR_SUCCESS;
	m.sidr_rep.qpn = QPN_B;
	m.sidr_rep.service_id = dpv_cm_ip_service_id(DPV_CM_PS_UDP, 7174);
	m.sidr_rep.qkey = 0x01234567;
	return m;
}

/* The answers lib/cm makes before any connection takes a request (dpv_cm.h):
 * REJ Invalid Class Version with its ARI (0), REJ No Resources (1), SIDR_REP
 * Unsupported Version with its additional information (2). */
static struct dpv_cm_msg refusal(int which)
{
	struct dpv_cm_msg r = which == 2 ? sidr_req() : req();
	uint8_t mad[DPV_CM_MAD_LEN];
	struct dpv_cm_out o;

	memset(&o, 0, sizeof(o));
	if (which == 1) {
		(void)dpv_cm_answer_no_resources(&r, &o);
		return o.mad;
	}
	/* a frame not built says that this went wrong */
	if (dpv_cm_pack(&r, mad) == 0) {
		mad[2] = 1;
		(void)dpv_cm_answer_version(mad, sizeof(mad), &o);
	}
	return o.mad;
}

/* The fields check_cm_pcap.py reads back from tshark: comm IDs (or request ID),
 * service ID and QPN, each 0 where the message has none. */
static void manifest(unsigned int n, const struct dpv_cm_msg *m)
{
	uint32_t local = 0, remote = 0, qpn = 0, reason = 0;
	uint64_t sid = 0;

	switch (m->hdr.attr_id) {
	case DPV_CM_ATTR_REQ:
		local = m->req.local_comm_id, sid = m->req.service_id, qpn = m->req.local_qpn;
		break;
	case DPV_CM_ATTR_REP:
		local = m->rep.local_comm_id, remote = m->rep.remote_comm_id;
		qpn = m->rep.local_qpn;
		break;
	case DPV_CM_ATTR_MRA:
		local = m->mra.local_comm_id, remote = m->mra.remote_comm_id;
		break;
	case DPV_CM_ATTR_REJ:
		local = m->rej.local_comm_id, remote = m->rej.remote_comm_id;
		reason = m->rej.reason;
		break;
	case DPV_CM_ATTR_RTU:
		local = m->rtu.local_comm_id, remote = m->rtu.remote_comm_id;
		break;
	case DPV_CM_ATTR_DREQ:
		local = m->dreq.local_comm_id, remote = m->dreq.remote_comm_id;
		qpn = m->dreq.remote_qpn;
		break;
	case DPV_CM_ATTR_DREP:
		local = m->drep.local_comm_id, remote = m->drep.remote_comm_id;
		break;
	case DPV_CM_ATTR_SIDR_REQ:
		local = m->sidr_req.request_id, sid = m->sidr_req.service_id;
		break;
	case DPV_CM_ATTR_SIDR_REP:
		local = m->sidr_rep.request_id, sid = m->sidr_rep.service_id;
		qpn = m->sidr_rep.qpn;
		break;
	}
	printf("%u %#x %#x %#x %#" PRIx64 " %#x %u\n", n, m->hdr.attr_id, local, remote, sid, qpn,
	       reason);
}

int main(int argc, char **argv)
{
	static uint8_t frame[512];
	const struct dpv_cm_msg msgs[] = {req(),      mra(),      rep(),     rtu(),
					  rej(),      dreq(),     drep(),    sidr_req(),
					  sidr_rep(), refusal(0), refusal(1), refusal(2)};
	struct dpv_pcap *f;
	unsigned int i;

	if (argc != 2) {
		fprintf(stderr, "usage: %s OUT.pcap\n", argv[0]);
		return 2;
	}
	f = dpv_pcap_open(argv[1]);
	if (f == NULL) {
		perror(argv[1]);
		return 1;
	}
	for (i = 0; i < sizeof(msgs) / sizeof(msgs[0]); i++) {
		/* Requests go from A to B, answers from B to A, as the test's state machine
		 * sends them; tshark does not care, a reader of the capture does. */
		bool from_a = msgs[i].hdr.attr_id == DPV_CM_ATTR_REQ ||
			      msgs[i].hdr.attr_id == DPV_CM_ATTR_RTU ||
			      msgs[i].hdr.attr_id == DPV_CM_ATTR_DREQ ||
			      msgs[i].hdr.attr_id == DPV_CM_ATTR_SIDR_REQ;
		struct dpv_wire_pkt p;
		uint32_t hdr, len;

		memset(&p, 0, sizeof(p));
		memcpy(p.dst_mac, from_a ? "\x02\x00\x00\x00\x00\x02" : "\x02\x00\x00\x00\x00\x01", 6);
		memcpy(p.src_mac, from_a ? "\x02\x00\x00\x00\x00\x01" : "\x02\x00\x00\x00\x00\x02", 6);
		p.src_ip = from_a ? IP_A : IP_B;
		p.dst_ip = from_a ? IP_B : IP_A;
		p.ttl = 64;
		p.ip_id = (uint16_t)i;
		p.udp_sport = (uint16_t)(0xc000 | i);
		p.opcode = DPV_OP_UD_SEND_ONLY;
		p.pkey = DPV_WIRE_PKEY_DEFAULT;
		p.dest_qp = DPV_CM_GSI_QPN;
		p.psn = i;
		p.deth_qkey = DPV_CM_GSI_QKEY;
		p.deth_src_qp = DPV_CM_GSI_QPN;
		hdr = dpv_wire_write_headers(frame, &p, DPV_CM_MAD_LEN);
		if (hdr == 0 || dpv_cm_pack(&msgs[i], frame + hdr) != 0) {
			fprintf(stderr, "frame %u not built\n", i + 1);
			return 1;
		}
		len = dpv_wire_frame_len(p.opcode, DPV_CM_MAD_LEN);
		dpv_wire_finish(frame, len);
		if (dpv_pcap_write(f, frame, len, (uint64_t)i * 1000000u) != 0) {
			perror(argv[1]);
			return 1;
		}
		manifest(i + 1, &msgs[i]);
	}
	if (dpv_pcap_close(f) != 0) {
		perror(argv[1]);
		return 1;
	}
	return 0;
}
