/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * CM MADs (IBTA vol. 1 12.6). Offsets below are from the start of the MAD; the
 * attribute data starts at DPV_CM_MAD_HDR_LEN, so a field the spec's table puts at
 * byte N of the message is at D + N here.
 */
#include <errno.h>
#include <string.h>

#include "dpv_cm_mad.h"

#define D DPV_CM_MAD_HDR_LEN

static void put8(uint8_t *p, uint8_t v)
{
	*p = v;
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put24(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 16);
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p + 2, (uint16_t)v);
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)(v >> 32));
	put32(p + 4, (uint32_t)v);
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get24(const uint8_t *p)
{
	return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)get16(p) << 16 | get16(p + 2);
}

static uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) << 32 | get32(p + 4);
}

/* A field of @w bits whose most significant bit is bit @msb of a byte, counted from
 * the byte's most significant bit as IBTA's tables count (0..7). */
static uint8_t bits(uint8_t v, unsigned int msb, unsigned int w)
{
	return (uint8_t)((v & ((1u << w) - 1u)) << (8u - msb - w));
}

static uint8_t getbits(uint8_t byte, unsigned int msb, unsigned int w)
{
	return (uint8_t)((byte >> (8u - msb - w)) & ((1u << w) - 1u));
}

/* Checks of the caller's values against their field widths: a value that does not fit
 * would silently change its neighbours. */
#define FITS(v, w) ((uint64_t)(v) < (1ull << (w)))

static bool path_fits(const struct dpv_cm_path *p)
{
	return FITS(p->flow_label, 20) && FITS(p->packet_rate, 6) && FITS(p->sl, 4) &&
	       FITS(p->local_ack_timeout, 5);
}

static void pack_path(uint8_t *p, const struct dpv_cm_path *path, bool sap)
{
	put16(p, path->local_lid);
	put16(p + 2, path->remote_lid);
	memcpy(p + 4, path->local_gid, 16);
	memcpy(p + 20, path->remote_gid, 16);
	/* Flow label (20 bits), 6 reserved bits, packet rate (6 bits). */
	put32(p + 36, path->flow_label << 12 | path->packet_rate);
	put8(p + 40, path->traffic_class);
	put8(p + 41, path->hop_limit);
	put8(p + 42, bits(path->sl, 0, 4) | bits(path->subnet_local, 4, 1));
	put8(p + 43, bits(path->local_ack_timeout, 0, 5) | bits(sap, 5, 1));
}

static void unpack_path(const uint8_t *p, struct dpv_cm_path *path, bool *sap)
{
	uint32_t w = get32(p + 36);

	path->local_lid = get16(p);
	path->remote_lid = get16(p + 2);
	memcpy(path->local_gid, p + 4, 16);
	memcpy(path->remote_gid, p + 20, 16);
	path->flow_label = w >> 12;
	path->packet_rate = (uint8_t)(w & 0x3f);
	path->traffic_class = p[40];
	path->hop_limit = p[41];
	path->sl = getbits(p[42], 0, 4);
	path->subnet_local = getbits(p[42], 4, 1);
	path->local_ack_timeout = getbits(p[43], 0, 5);
	*sap = getbits(p[43], 5, 1);
}

static int pack_req(const struct dpv_cm_req *r, uint8_t *m)
{
	if (!FITS(r->local_qpn, 24) || !FITS(r->local_eecn, 24) || !FITS(r->remote_eecn, 24) ||
	    !FITS(r->remote_cm_response_timeout, 5) || !FITS(r->transport, 2) ||
	    !FITS(r->starting_psn, 24) || !FITS(r->local_cm_response_timeout, 5) ||
	    !FITS(r->retry_count, 3) || !FITS(r->path_mtu, 4) || !FITS(r->rnr_retry_count, 3) ||
	    !FITS(r->max_cm_retries, 4) || !FITS(r->extended_transport, 3) ||
	    !path_fits(&r->primary) || !path_fits(&r->alternate))
		return EINVAL;
	put32(m + D + 0, r->local_comm_id);
	put64(m + D + 8, r->service_id);
	put64(m + D + 16, r->local_ca_guid);
	put32(m + D + 28, r->local_qkey);
	put24(m + D + 32, r->local_qpn);
	put8(m + D + 35, r->responder_resources);
	put24(m + D + 36, r->local_eecn);
	put8(m + D + 39, r->initiator_depth);
	put24(m + D + 40, r->remote_eecn);
	put8(m + D + 43, bits(r->remote_cm_response_timeout, 0, 5) | bits(r->transport, 5, 2) |
				 bits(r->end_to_end_flow_control, 7, 1));
	put24(m + D + 44, r->starting_psn);
	put8(m + D + 47, bits(r->local_cm_response_timeout, 0, 5) | bits(r->retry_count, 5, 3));
	put16(m + D + 48, r->pkey);
	put8(m + D + 50, bits(r->path_mtu, 0, 4) | bits(r->rdc_exists, 4, 1) |
				 bits(r->rnr_retry_count, 5, 3));
	put8(m + D + 51, bits(r->max_cm_retries, 0, 4) | bits(r->srq, 4, 1) |
				 bits(r->extended_transport, 5, 3));
	pack_path(m + D + 52, &r->primary, false);
	pack_path(m + D + 96, &r->alternate, r->sap_supported);
	memcpy(m + D + 140, r->private_data, DPV_CM_REQ_PDATA_LEN);
	return 0;
}

static int unpack_req(const uint8_t *m, struct dpv_cm_req *r)
{
	bool unused;

	r->local_comm_id = get32(m + D + 0);
	r->service_id = get64(m + D + 8);
	r->local_ca_guid = get64(m + D + 16);
	r->local_qkey = get32(m + D + 28);
	r->local_qpn = get24(m + D + 32);
	r->responder_resources = m[D + 35];
	r->local_eecn = get24(m + D + 36);
	r->initiator_depth = m[D + 39];
	r->remote_eecn = get24(m + D + 40);
	r->remote_cm_response_timeout = getbits(m[D + 43], 0, 5);
	r->transport = getbits(m[D + 43], 5, 2);
	r->end_to_end_flow_control = getbits(m[D + 43], 7, 1);
	r->starting_psn = get24(m + D + 44);
	r->local_cm_response_timeout = getbits(m[D + 47], 0, 5);
	r->retry_count = getbits(m[D + 47], 5, 3);
	r->pkey = get16(m + D + 48);
	r->path_mtu = getbits(m[D + 50], 0, 4);
	r->rdc_exists = getbits(m[D + 50], 4, 1);
	r->rnr_retry_count = getbits(m[D + 50], 5, 3);
	r->max_cm_retries = getbits(m[D + 51], 0, 4);
	r->srq = getbits(m[D + 51], 4, 1);
	r->extended_transport = getbits(m[D + 51], 5, 3);
	unpack_path(m + D + 52, &r->primary, &unused);
	unpack_path(m + D + 96, &r->alternate, &r->sap_supported);
	memcpy(r->private_data, m + D + 140, DPV_CM_REQ_PDATA_LEN);
	return 0;
}

static int pack_mra(const struct dpv_cm_mra *r, uint8_t *m)
{
	if (r->message_mraed > DPV_CM_REF_OTHER || !FITS(r->service_timeout, 5))
		return EINVAL;
	put32(m + D + 0, r->local_comm_id);
	put32(m + D + 4, r->remote_comm_id);
	put8(m + D + 8, bits(r->message_mraed, 0, 2));
	put8(m + D + 9, bits(r->service_timeout, 0, 5));
	memcpy(m + D + 10, r->private_data, DPV_CM_MRA_PDATA_LEN);
	return 0;
}

static int unpack_mra(const uint8_t *m, struct dpv_cm_mra *r)
{
	r->local_comm_id = get32(m + D + 0);
	r->remote_comm_id = get32(m + D + 4);
	r->message_mraed = getbits(m[D + 8], 0, 2);
	r->service_timeout = getbits(m[D + 9], 0, 5);
	memcpy(r->private_data, m + D + 10, DPV_CM_MRA_PDATA_LEN);
	return r->message_mraed > DPV_CM_REF_OTHER ? EBADMSG : 0;
}

static int pack_rej(const struct dpv_cm_rej *r, uint8_t *m)
{
	if (r->message_rejected > DPV_CM_REF_OTHER || r->ari_length > DPV_CM_ARI_LEN)
		return EINVAL;
	put32(m + D + 0, r->local_comm_id);
	put32(m + D + 4, r->remote_comm_id);
	put8(m + D + 8, bits(r->message_rejected, 0, 2));
	put8(m + D + 9, bits(r->ari_length, 0, 7));
	put16(m + D + 10, r->reason);
	memcpy(m + D + 12, r->ari, DPV_CM_ARI_LEN);
	memcpy(m + D + 84, r->private_data, DPV_CM_REJ_PDATA_LEN);
	return 0;
}

static int unpack_rej(const uint8_t *m, struct dpv_cm_rej *r)
{
	r->local_comm_id = get32(m + D + 0);
	r->remote_comm_id = get32(m + D + 4);
	r->message_rejected = getbits(m[D + 8], 0, 2);
	r->ari_length = getbits(m[D + 9], 0, 7);
	r->reason = get16(m + D + 10);
	memcpy(r->ari, m + D + 12, DPV_CM_ARI_LEN);
	memcpy(r->private_data, m + D + 84, DPV_CM_REJ_PDATA_LEN);
	return r->message_rejected > DPV_CM_REF_OTHER || r->ari_length > DPV_CM_ARI_LEN ?
		       EBADMSG : 0;
}

static int pack_rep(const struct dpv_cm_rep *r, uint8_t *m)
{
	if (!FITS(r->local_qpn, 24) || !FITS(r->local_eecn, 24) || !FITS(r->starting_psn, 24) ||
	    !FITS(r->target_ack_delay, 5) || !FITS(r->failover_accepted, 2) ||
	    !FITS(r->rnr_retry_count, 3))
		return EINVAL;
	put32(m + D + 0, r->local_comm_id);
	put32(m + D + 4, r->remote_comm_id);
	put32(m + D + 8, r->local_qkey);
	put24(m + D + 12, r->local_qpn);
	put24(m + D + 16, r->local_eecn);
	put24(m + D + 20, r->starting_psn);
	put8(m + D + 24, r->responder_resources);
	put8(m + D + 25, r->initiator_depth);
	put8(m + D + 26, bits(r->target_ack_delay, 0, 5) | bits(r->failover_accepted, 5, 2) |
				 bits(r->end_to_end_flow_control, 7, 1));
	put8(m + D + 27, bits(r->rnr_retry_count, 0, 3) | bits(r->srq, 3, 1));
	put64(m + D + 28, r->local_ca_guid);
	memcpy(m + D + 36, r->private_data, DPV_CM_REP_PDATA_LEN);
	return 0;
}

static int unpack_rep(const uint8_t *m, struct dpv_cm_rep *r)
{
	r->local_comm_id = get32(m + D + 0);
	r->remote_comm_id = get32(m + D + 4);
	r->local_qkey = get32(m + D + 8);
	r->local_qpn = get24(m + D + 12);
	r->local_eecn = get24(m + D + 16);
	r->starting_psn = get24(m + D + 20);
	r->responder_resources = m[D + 24];
	r->initiator_depth = m[D + 25];
	r->target_ack_delay = getbits(m[D + 26], 0, 5);
	r->failover_accepted = getbits(m[D + 26], 5, 2);
	r->end_to_end_flow_control = getbits(m[D + 26], 7, 1);
	r->rnr_retry_count = getbits(m[D + 27], 0, 3);
	r->srq = getbits(m[D + 27], 3, 1);
	r->local_ca_guid = get64(m + D + 28);
	memcpy(r->private_data, m + D + 36, DPV_CM_REP_PDATA_LEN);
	return 0;
}

/* RTU and DREP share their layout: two comm IDs, then private data. */
static void pack_ids(uint8_t *m, uint32_t local, uint32_t remote, const uint8_t *pdata,
		     size_t off, size_t len)
{
	put32(m + D + 0, local);
	put32(m + D + 4, remote);
	memcpy(m + D + off, pdata, len);
}

static void unpack_ids(const uint8_t *m, uint32_t *local, uint32_t *remote, uint8_t *pdata,
		       size_t off, size_t len)
{
	*local = get32(m + D + 0);
	*remote = get32(m + D + 4);
	memcpy(pdata, m + D + off, len);
}

static int pack_dreq(const struct dpv_cm_dreq *r, uint8_t *m)
{
	if (!FITS(r->remote_qpn, 24))
		return EINVAL;
	pack_ids(m, r->local_comm_id, r->remote_comm_id, r->private_data, 12,
		 DPV_CM_DREQ_PDATA_LEN);
	put24(m + D + 8, r->remote_qpn);
	return 0;
}

static int pack_sidr_req(const struct dpv_cm_sidr_req *r, uint8_t *m)
{
	put32(m + D + 0, r->request_id);
	put16(m + D + 4, r->pkey);
	put64(m + D + 8, r->service_id);
	memcpy(m + D + 16, r->private_data, DPV_CM_SIDR_REQ_PDATA_LEN);
	return 0;
}

static int pack_sidr_rep(const struct dpv_cm_sidr_rep *r, uint8_t *m)
{
	if (!FITS(r->qpn, 24) || r->info_length > DPV_CM_ARI_LEN)
		return EINVAL;
	put32(m + D + 0, r->request_id);
	put8(m + D + 4, r->status);
	put8(m + D + 5, r->info_length);
	put24(m + D + 8, r->qpn);
	put64(m + D + 12, r->service_id);
	put32(m + D + 20, r->qkey);
	memcpy(m + D + 24, r->info, DPV_CM_ARI_LEN);
	memcpy(m + D + 96, r->private_data, DPV_CM_SIDR_REP_PDATA_LEN);
	return 0;
}

static int unpack_sidr_rep(const uint8_t *m, struct dpv_cm_sidr_rep *r)
{
	r->request_id = get32(m + D + 0);
	r->status = m[D + 4];
	r->info_length = m[D + 5];
	r->qpn = get24(m + D + 8);
	r->service_id = get64(m + D + 12);
	r->qkey = get32(m + D + 20);
	memcpy(r->info, m + D + 24, DPV_CM_ARI_LEN);
	memcpy(r->private_data, m + D + 96, DPV_CM_SIDR_REP_PDATA_LEN);
	return r->info_length > DPV_CM_ARI_LEN ? EBADMSG : 0;
}

int dpv_cm_pack(const struct dpv_cm_msg *msg, uint8_t mad[DPV_CM_MAD_LEN])
{
	const struct dpv_cm_mad_hdr *h = &msg->hdr;

	memset(mad, 0, DPV_CM_MAD_LEN);
	put8(mad + 0, DPV_CM_BASE_VERSION);
	put8(mad + 1, DPV_CM_MGMT_CLASS);
	put8(mad + 2, DPV_CM_CLASS_VERSION);
	put8(mad + 3, DPV_CM_METHOD_SEND);
	put16(mad + 4, h->status);
	put16(mad + 6, h->class_specific);
	put64(mad + 8, h->tid);
	put16(mad + 16, h->attr_id);
	put32(mad + 20, h->attr_mod);
	switch (h->attr_id) {
	case DPV_CM_ATTR_REQ:
		return pack_req(&msg->req, mad);
	case DPV_CM_ATTR_MRA:
		return pack_mra(&msg->mra, mad);
	case DPV_CM_ATTR_REJ:
		return pack_rej(&msg->rej, mad);
	case DPV_CM_ATTR_REP:
		return pack_rep(&msg->rep, mad);
	case DPV_CM_ATTR_RTU:
		pack_ids(mad, msg->rtu.local_comm_id, msg->rtu.remote_comm_id,
			 msg->rtu.private_data, 8, DPV_CM_RTU_PDATA_LEN);
		return 0;
	case DPV_CM_ATTR_DREQ:
		return pack_dreq(&msg->dreq, mad);
	case DPV_CM_ATTR_DREP:
		pack_ids(mad, msg->drep.local_comm_id, msg->drep.remote_comm_id,
			 msg->drep.private_data, 8, DPV_CM_DREP_PDATA_LEN);
		return 0;
	case DPV_CM_ATTR_SIDR_REQ:
		return pack_sidr_req(&msg->sidr_req, mad);
	case DPV_CM_ATTR_SIDR_REP:
		return pack_sidr_rep(&msg->sidr_rep, mad);
	default:
		return EINVAL;
	}
}

int dpv_cm_unpack(const void *buf, size_t len, struct dpv_cm_msg *msg)
{
	const uint8_t *mad = buf;
	struct dpv_cm_mad_hdr *h = &msg->hdr;

	if (len != DPV_CM_MAD_LEN)
		return EMSGSIZE;
	h->base_version = mad[0];
	h->mgmt_class = mad[1];
	h->class_version = mad[2];
	h->method = mad[3];
	h->status = get16(mad + 4);
	h->class_specific = get16(mad + 6);
	h->tid = get64(mad + 8);
	h->attr_id = get16(mad + 16);
	h->attr_mod = get32(mad + 20);
	if (h->mgmt_class != DPV_CM_MGMT_CLASS)
		return ENOMSG;
	if (h->base_version != DPV_CM_BASE_VERSION || h->class_version != DPV_CM_CLASS_VERSION)
		return EPROTONOSUPPORT;
	if (h->method != DPV_CM_METHOD_SEND)
		return EOPNOTSUPP;
	switch (h->attr_id) {
	case DPV_CM_ATTR_REQ:
		return unpack_req(mad, &msg->req);
	case DPV_CM_ATTR_MRA:
		return unpack_mra(mad, &msg->mra);
	case DPV_CM_ATTR_REJ:
		return unpack_rej(mad, &msg->rej);
	case DPV_CM_ATTR_REP:
		return unpack_rep(mad, &msg->rep);
	case DPV_CM_ATTR_RTU:
		unpack_ids(mad, &msg->rtu.local_comm_id, &msg->rtu.remote_comm_id,
			   msg->rtu.private_data, 8, DPV_CM_RTU_PDATA_LEN);
		return 0;
	case DPV_CM_ATTR_DREQ:
		unpack_ids(mad, &msg->dreq.local_comm_id, &msg->dreq.remote_comm_id,
			   msg->dreq.private_data, 12, DPV_CM_DREQ_PDATA_LEN);
		msg->dreq.remote_qpn = get24(mad + D + 8);
		return 0;
	case DPV_CM_ATTR_DREP:
		unpack_ids(mad, &msg->drep.local_comm_id, &msg->drep.remote_comm_id,
			   msg->drep.private_data, 8, DPV_CM_DREP_PDATA_LEN);
		return 0;
	case DPV_CM_ATTR_SIDR_REQ:
		msg->sidr_req.request_id = get32(mad + D + 0);
		msg->sidr_req.pkey = get16(mad + D + 4);
		msg->sidr_req.service_id = get64(mad + D + 8);
		memcpy(msg->sidr_req.private_data, mad + D + 16, DPV_CM_SIDR_REQ_PDATA_LEN);
		return 0;
	case DPV_CM_ATTR_SIDR_REP:
		return unpack_sidr_rep(mad, &msg->sidr_rep);
	default:
		return EOPNOTSUPP;
	}
}

const char *dpv_cm_attr_name(uint16_t attr_id)
{
	switch (attr_id) {
	case DPV_CM_ATTR_REQ:
		return "REQ";
	case DPV_CM_ATTR_MRA:
		return "MRA";
	case DPV_CM_ATTR_REJ:
		return "REJ";
	case DPV_CM_ATTR_REP:
		return "REP";
	case DPV_CM_ATTR_RTU:
		return "RTU";
	case DPV_CM_ATTR_DREQ:
		return "DREQ";
	case DPV_CM_ATTR_DREP:
		return "DREP";
	case DPV_CM_ATTR_SIDR_REQ:
		return "SIDR_REQ";
	case DPV_CM_ATTR_SIDR_REP:
		return "SIDR_REP";
	default:
		return NULL;
	}
}
