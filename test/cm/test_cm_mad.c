/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * CM MADs against the spec's layout (IBTA vol. 1 12.6, tables 106-120): each message
 * packed by lib/cm equals the bytes cm_expect.h builds from the spec's offsets, once
 * with distinct values in every field and once with every field at its widest value
 * (a field that spills into its neighbour shows there); each unpacks to what was
 * packed; a malformed MAD is refused with its errno; random bytes never crash.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cm_expect.h"
#include "dpv_cm_mad.h"

/* Every field at its widest, or a distinct value that differs in each byte. */
enum pattern { DISTINCT, WIDEST };

#define V(w, distinct) (p == WIDEST ? (uint64_t)((1ull << (w)) - 1) : (uint64_t)(distinct))
#define V64(distinct) (p == WIDEST ? UINT64_MAX : (uint64_t)(distinct))

static void fill(uint8_t *dst, size_t n, uint8_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		dst[i] = (uint8_t)(seed + 7 * i);
}

static void hdr_of(struct dpv_cm_msg *m, uint16_t attr, enum pattern p)
{
	memset(m, 0, sizeof(*m));
	m->hdr.attr_id = attr;
	m->hdr.status = (uint16_t)V(16, 0);
	m->hdr.class_specific = (uint16_t)V(16, 0x0102);
	m->hdr.tid = V64(0x1122334455667788ull);
	m->hdr.attr_mod = (uint32_t)V(32, 0xa1b2c3d4u);
}

static void expect_hdr_of(uint8_t *mad, const struct dpv_cm_msg *m)
{
	expect_hdr(mad, m->hdr.status, m->hdr.class_specific, m->hdr.tid, m->hdr.attr_id,
		   m->hdr.attr_mod);
}

static void path_of(struct dpv_cm_path *path, enum pattern p, uint8_t k)
{
	path->local_lid = (uint16_t)V(16, 0x0100 + k);
	path->remote_lid = (uint16_t)V(16, 0x0200 + k);
	if (p == WIDEST) {
		memset(path->local_gid, 0xff, 16);
		memset(path->remote_gid, 0xff, 16);
	} else {
		fill(path->local_gid, 16, (uint8_t)(0x10 + k));
		fill(path->remote_gid, 16, (uint8_t)(0x20 + k));
	}
	path->flow_label = (uint32_t)V(20, 0x9abcd + k);
	path->packet_rate = (uint8_t)V(6, 0x21 + k);
	path->traffic_class = (uint8_t)V(8, 0x30 + k);
	path->hop_limit = (uint8_t)V(8, 0x40 + k);
	path->sl = (uint8_t)V(4, 0x5 + k);
	path->subnet_local = p == WIDEST || k == 0;
	path->local_ack_timeout = (uint8_t)V(5, 0x13 + k);
}

/* IBTA Table 106, the path fields from byte @off (primary 52, alternate 96). */
static void expect_path(uint8_t *mad, unsigned int off, const struct dpv_cm_path *path)
{
	dfield(mad, off + 0, 0, 16, path->local_lid);
	dfield(mad, off + 2, 0, 16, path->remote_lid);
	dbytes(mad, off + 4, path->local_gid, 16);
	dbytes(mad, off + 20, path->remote_gid, 16);
	dfield(mad, off + 36, 0, 20, path->flow_label);
	dfield(mad, off + 39, 2, 6, path->packet_rate);
	dfield(mad, off + 40, 0, 8, path->traffic_class);
	dfield(mad, off + 41, 0, 8, path->hop_limit);
	dfield(mad, off + 42, 0, 4, path->sl);
	dfield(mad, off + 42, 4, 1, path->subnet_local);
	dfield(mad, off + 43, 0, 5, path->local_ack_timeout);
}

static void req_of(struct dpv_cm_msg *m, enum pattern p)
{
	struct dpv_cm_req *r = &m->req;

	hdr_of(m, DPV_CM_ATTR_REQ, p);
	r->local_comm_id = (uint32_t)V(32, 0x01020304u);
	r->service_id = V64(0x0000000001060000ull | 18515);
	r->local_ca_guid = V64(0x0002c90300a1b2c3ull);
	r->local_qkey = (uint32_t)V(32, 0x11111111u);
	r->local_qpn = (uint32_t)V(24, 0x000123u);
	r->responder_resources = (uint8_t)V(8, 0x10);
	r->local_eecn = (uint32_t)V(24, 0x345678u);
	r->initiator_depth = (uint8_t)V(8, 0x08);
	r->remote_eecn = (uint32_t)V(24, 0x9abcdeu);
	r->remote_cm_response_timeout = (uint8_t)V(5, 20);
	r->transport = (uint8_t)V(2, DPV_CM_TRANSPORT_UC);
	r->end_to_end_flow_control = true;
	r->starting_psn = (uint32_t)V(24, 0xabcdefu);
	r->local_cm_response_timeout = (uint8_t)V(5, 18);
	r->retry_count = (uint8_t)V(3, 7);
	r->pkey = (uint16_t)V(16, 0xffff);
	r->path_mtu = (uint8_t)V(4, 3);
	r->rdc_exists = p == WIDEST;
	r->rnr_retry_count = (uint8_t)V(3, 6);
	r->max_cm_retries = (uint8_t)V(4, 15);
	r->srq = true;
	r->extended_transport = (uint8_t)V(3, 1);
	path_of(&r->primary, p, 0);
	path_of(&r->alternate, p, 1);
	r->sap_supported = true;
	fill(r->private_data, sizeof(r->private_data), 0x61);
}

static void expect_req(uint8_t *mad, const struct dpv_cm_msg *m)
{
	const struct dpv_cm_req *r = &m->req;

	expect_hdr_of(mad, m);
	dfield(mad, 0, 0, 32, r->local_comm_id);
	dfield(mad, 8, 0, 64, r->service_id);
	dfield(mad, 16, 0, 64, r->local_ca_guid);
	dfield(mad, 28, 0, 32, r->local_qkey);
	dfield(mad, 32, 0, 24, r->local_qpn);
	dfield(mad, 35, 0, 8, r->responder_resources);
	dfield(mad, 36, 0, 24, r->local_eecn);
	dfield(mad, 39, 0, 8, r->initiator_depth);
	dfield(mad, 40, 0, 24, r->remote_eecn);
	dfield(mad, 43, 0, 5, r->remote_cm_response_timeout);
	dfield(mad, 43, 5, 2, r->transport);
	dfield(mad, 43, 7, 1, r->end_to_end_flow_control);
	dfield(mad, 44, 0, 24, r->starting_psn);
	dfield(mad, 47, 0, 5, r->local_cm_response_timeout);
	dfield(mad, 47, 5, 3, r->retry_count);
	dfield(mad, 48, 0, 16, r->pkey);
	dfield(mad, 50, 0, 4, r->path_mtu);
	dfield(mad, 50, 4, 1, r->rdc_exists);
	dfield(mad, 50, 5, 3, r->rnr_retry_count);
	dfield(mad, 51, 0, 4, r->max_cm_retries);
	dfield(mad, 51, 4, 1, r->srq);
	dfield(mad, 51, 5, 3, r->extended_transport);
	expect_path(mad, 52, &r->primary);
	expect_path(mad, 96, &r->alternate);
	dfield(mad, 139, 5, 1, r->sap_supported);
	dbytes(mad, 140, r->private_data, 92);
}

static void mra_of(struct dpv_cm_msg *m, enum pattern p)
{
	hdr_of(m, DPV_CM_ATTR_MRA, p);
	m->mra.local_comm_id = (uint32_t)V(32, 0x0a0b0c0du);
	m->mra.remote_comm_id = (uint32_t)V(32, 0x01020304u);
	m->mra.message_mraed = p == WIDEST ? DPV_CM_REF_OTHER : DPV_CM_REF_REP;
	m->mra.service_timeout = (uint8_t)V(5, 21);
	fill(m->mra.private_data, sizeof(m->mra.private_data), 0x62);
}

static void expect_mra(uint8_t *mad, const struct dpv_cm_msg *m)
{
	expect_hdr_of(mad, m);
	dfield(mad, 0, 0, 32, m->mra.local_comm_id);
	dfield(mad, 4, 0, 32, m->mra.remote_comm_id);
	dfield(mad, 8, 0, 2, m->mra.message_mraed);
	dfield(mad, 9, 0, 5, m->mra.service_timeout);
	dbytes(mad, 10, m->mra.private_data, 222);
}

static void rej_of(struct dpv_cm_msg *m, enum pattern p)
{
	hdr_of(m, DPV_CM_ATTR_REJ, p);
	m->rej.local_comm_id = (uint32_t)V(32, 0x0a0b0c0du);
	m->rej.remote_comm_id = (uint32_t)V(32, 0x01020304u);
	m->rej.message_rejected = p == WIDEST ? DPV_CM_REF_OTHER : DPV_CM_REF_REQ;
	m->rej.ari_length = p == WIDEST ? DPV_CM_ARI_LEN : 8;
	m->rej.reason = (uint16_t)V(16, DPV_CM_REJ_CONSUMER_DEFINED);
	fill(m->rej.ari, sizeof(m->rej.ari), 0x63);
	fill(m->rej.private_data, sizeof(m->rej.private_data), 0x64);
}

static void expect_rej(uint8_t *mad, const struct dpv_cm_msg *m)
{
	expect_hdr_of(mad, m);
	dfield(mad, 0, 0, 32, m->rej.local_comm_id);
	dfield(mad, 4, 0, 32, m->rej.remote_comm_id);
	dfield(mad, 8, 0, 2, m->rej.message_rejected);
	dfield(mad, 9, 0, 7, m->rej.ari_length);
	dfield(mad, 10, 0, 16, m->rej.reason);
	dbytes(mad, 12, m->rej.ari, 72);
	dbytes(mad, 84, m->rej.private_data, 148);
}

static void rep_of(struct dpv_cm_msg *m, enum pattern p)
{
	struct dpv_cm_rep *r = &m->rep;

	hdr_of(m, DPV_CM_ATTR_REP, p);
	r->local_comm_id = (uint32_t)V(32, 0x0a0b0c0du);
	r->remote_comm_id = (uint32_t)V(32, 0x01020304u);
	r->local_qkey = (uint32_t)V(32, 0x22222222u);
	r->local_qpn = (uint32_t)V(24, 0x000456u);
	r->local_eecn = (uint32_t)V(24, 0x123456u);
	r->starting_psn = (uint32_t)V(24, 0x654321u);
	r->responder_resources = (uint8_t)V(8, 4);
	r->initiator_depth = (uint8_t)V(8, 2);
	r->target_ack_delay = (uint8_t)V(5, 17);
	r->failover_accepted = (uint8_t)V(2, 1);
	r->end_to_end_flow_control = true;
	r->rnr_retry_count = (uint8_t)V(3, 5);
	r->srq = true;
	r->local_ca_guid = V64(0x0002c90300d4e5f6ull);
	fill(r->private_data, sizeof(r->private_data), 0x65);
}

static void expect_rep(uint8_t *mad, const struct dpv_cm_msg *m)
{
	const struct dpv_cm_rep *r = &m->rep;

	expect_hdr_of(mad, m);
	dfield(mad, 0, 0, 32, r->local_comm_id);
	dfield(mad, 4, 0, 32, r->remote_comm_id);
	dfield(mad, 8, 0, 32, r->local_qkey);
	dfield(mad, 12, 0, 24, r->local_qpn);
	dfield(mad, 16, 0, 24, r->local_eecn);
	dfield(mad, 20, 0, 24, r->starting_psn);
	dfield(mad, 24, 0, 8, r->responder_resources);
	dfield(mad, 25, 0, 8, r->initiator_depth);
	dfield(mad, 26, 0, 5, r->target_ack_delay);
	dfield(mad, 26, 5, 2, r->failover_accepted);
	dfield(mad, 26, 7, 1, r->end_to_end_flow_control);
	dfield(mad, 27, 0, 3, r->rnr_retry_count);
	dfield(mad, 27, 3, 1, r->srq);
	dfield(mad, 28, 0, 64, r->local_ca_guid);
	dbytes(mad, 36, r->private_data, 196);
}

static void rtu_of(struct dpv_cm_msg *m, enum pattern p)
{
	hdr_of(m, DPV_CM_ATTR_RTU, p);
	m->rtu.local_comm_id = (uint32_t)V(32, 0x01020304u);
	m->rtu.remote_comm_id = (uint32_t)V(32, 0x0a0b0c0du);
	fill(m->rtu.private_data, sizeof(m->rtu.private_data), 0x66);
}

static void expect_rtu(uint8_t *mad, const struct dpv_cm_msg *m)
{
	expect_hdr_of(mad, m);
	dfield(mad, 0, 0, 32, m->rtu.local_comm_id);
	dfield(mad, 4, 0, 32, m->rtu.remote_comm_id);
	dbytes(mad, 8, m->rtu.private_data, 224);
}

static void dreq_of(struct dpv_cm_msg *m, enum pattern p)
{
	hdr_of(m, DPV_CM_ATTR_DREQ, p);
	m->dreq.local_comm_id = (uint32_t)V(32, 0x01020304u);
	m->dreq.remote_comm_id = (uint32_t)V(32, 0x0a0b0c0du);
	m->dreq.remote_qpn = (uint32_t)V(24, 0x000456u);
	fill(m->dreq.private_data, sizeof(m->dreq.private_data), 0x67);
}

static void expect_dreq(uint8_t *mad, const struct dpv_cm_msg *m)
{
	expect_hdr_of(mad, m);
	dfield(mad, 0, 0, 32, m->dreq.local_comm_id);
	dfield(mad, 4, 0, 32, m->dreq.remote_comm_id);
	dfield(mad, 8, 0, 24, m->dreq.remote_qpn);
	dbytes(mad, 12, m->dreq.private_data, 220);
}

static void drep_of(struct dpv_cm_msg *m, enum pattern p)
{
	hdr_of(m, DPV_CM_ATTR_DREP, p);
	m->drep.local_comm_id = (uint32_t)V(32, 0x0a0b0c0du);
	m->drep.remote_comm_id = (uint32_t)V(32, 0x01020304u);
	fill(m->drep.private_data, sizeof(m->drep.private_data), 0x68);
}

static void expect_drep(uint8_t *mad, const struct dpv_cm_msg *m)
{
	expect_hdr_of(mad, m);
	dfield(mad, 0, 0, 32, m->drep.local_comm_id);
	dfield(mad, 4, 0, 32, m->drep.remote_comm_id);
	dbytes(mad, 8, m->drep.private_data, 224);
}

static void sidr_req_of(struct dpv_cm_msg *m, enum pattern p)
{
	hdr_of(m, DPV_CM_ATTR_SIDR_REQ, p);
	m->sidr_req.request_id = (uint32_t)V(32, 0x55667788u);
	m->sidr_req.pkey = (uint16_t)V(16, 0x7fff);
	m->sidr_req.service_id = V64(0x0000000001110000ull | 7174);
	fill(m->sidr_req.private_data, sizeof(m->sidr_req.private_data), 0x69);
}

static void expect_sidr_req(uint8_t *mad, const struct dpv_cm_msg *m)
{
	expect_hdr_of(mad, m);
	dfield(mad, 0, 0, 32, m->sidr_req.request_id);
	dfield(mad, 4, 0, 16, m->sidr_req.pkey);
	dfield(mad, 8, 0, 64, m->sidr_req.service_id);
	dbytes(mad, 16, m->sidr_req.private_data, 216);
}

static void sidr_rep_of(struct dpv_cm_msg *m, enum pattern p)
{
	hdr_of(m, DPV_CM_ATTR_SIDR_REP, p);
	m->sidr_rep.request_id = (uint32_t)V(32, 0x55667788u);
	m->sidr_rep.status = (uint8_t)V(8, DPV_CM_SIDR_SUCCESS);
	m->sidr_rep.info_length = p == WIDEST ? DPV_CM_ARI_LEN : 0;
	m->sidr_rep.qpn = (uint32_t)V(24, 0x000789u);
	m->sidr_rep.service_id = V64(0x0000000001110000ull | 7174);
	m->sidr_rep.qkey = (uint32_t)V(32, 0x33333333u);
	fill(m->sidr_rep.info, sizeof(m->sidr_rep.info), 0x6a);
	fill(m->sidr_rep.private_data, sizeof(m->sidr_rep.private_data), 0x6b);
}

static void expect_sidr_rep(uint8_t *mad, const struct dpv_cm_msg *m)
{
	expect_hdr_of(mad, m);
	dfield(mad, 0, 0, 32, m->sidr_rep.request_id);
	dfield(mad, 4, 0, 8, m->sidr_rep.status);
	dfield(mad, 5, 0, 8, m->sidr_rep.info_length);
	dfield(mad, 8, 0, 24, m->sidr_rep.qpn);
	dfield(mad, 12, 0, 64, m->sidr_rep.service_id);
	dfield(mad, 20, 0, 32, m->sidr_rep.qkey);
	dbytes(mad, 24, m->sidr_rep.info, 72);
	dbytes(mad, 96, m->sidr_rep.private_data, 136);
}

struct kind {
	void (*make)(struct dpv_cm_msg *m, enum pattern p);
	void (*expect)(uint8_t *mad, const struct dpv_cm_msg *m);
};

static const struct kind kinds[] = {
	{req_of, expect_req},   {mra_of, expect_mra},   {rej_of, expect_rej},
	{rep_of, expect_rep},   {rtu_of, expect_rtu},   {dreq_of, expect_dreq},
	{drep_of, expect_drep}, {sidr_req_of, expect_sidr_req}, {sidr_rep_of, expect_sidr_rep},
};
#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

/* The header as unpack fills it: the constants pack writes. */
static void with_constants(struct dpv_cm_msg *m)
{
	m->hdr.base_version = DPV_CM_BASE_VERSION;
	m->hdr.mgmt_class = DPV_CM_MGMT_CLASS;
	m->hdr.class_version = DPV_CM_CLASS_VERSION;
	m->hdr.method = DPV_CM_METHOD_SEND;
}

static void assert_hdr_equal(const struct dpv_cm_mad_hdr *a, const struct dpv_cm_mad_hdr *b)
{
	assert_int_equal(a->base_version, b->base_version);
	assert_int_equal(a->mgmt_class, b->mgmt_class);
	assert_int_equal(a->class_version, b->class_version);
	assert_int_equal(a->method, b->method);
	assert_int_equal(a->status, b->status);
	assert_int_equal(a->class_specific, b->class_specific);
	assert_int_equal(a->tid, b->tid);
	assert_int_equal(a->attr_id, b->attr_id);
	assert_int_equal(a->attr_mod, b->attr_mod);
}

/* Packed bytes equal the spec's layout; unpacked and packed again, the same bytes
 * (every field of the struct is in the MAD, so the struct came back whole). */
static void check_kind(const struct kind *k, enum pattern p)
{
	struct dpv_cm_msg m, back;
	uint8_t got[DPV_CM_MAD_LEN], want[DPV_CM_MAD_LEN], again[DPV_CM_MAD_LEN];

	k->make(&m, p);
	memset(got, 0xa5, sizeof(got));
	assert_int_equal(dpv_cm_pack(&m, got), 0);
	k->expect(want, &m);
	assert_memory_equal(got, want, DPV_CM_MAD_LEN);
	memset(&back, 0xa5, sizeof(back));
	assert_int_equal(dpv_cm_unpack(got, sizeof(got), &back), 0);
	with_constants(&m);
	assert_hdr_equal(&back.hdr, &m.hdr);
	assert_int_equal(dpv_cm_pack(&back, again), 0);
	assert_memory_equal(again, got, DPV_CM_MAD_LEN);
}

static void pack_matches_spec_layout_distinct(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < NKINDS; i++)
		check_kind(&kinds[i], DISTINCT);
}

static void pack_matches_spec_layout_widest(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < NKINDS; i++)
		check_kind(&kinds[i], WIDEST);
}

/* Field by field: the unpacked REQ is the packed one (a struct compare would see
 * padding, so each member that can hide a bug is named). */
static void req_round_trip_every_field(void **state)
{
	struct dpv_cm_msg m, back;
	uint8_t mad[DPV_CM_MAD_LEN];
	const struct dpv_cm_req *a = &m.req, *b = &back.req;

	(void)state;
	req_of(&m, DISTINCT);
	assert_int_equal(dpv_cm_pack(&m, mad), 0);
	memset(&back, 0xa5, sizeof(back));
	assert_int_equal(dpv_cm_unpack(mad, sizeof(mad), &back), 0);
	assert_int_equal(back.hdr.tid, m.hdr.tid);
	assert_int_equal(back.hdr.attr_id, DPV_CM_ATTR_REQ);
	assert_int_equal(back.hdr.attr_mod, m.hdr.attr_mod);
	assert_int_equal(back.hdr.class_specific, m.hdr.class_specific);
	assert_int_equal(b->local_comm_id, a->local_comm_id);
	assert_int_equal(b->service_id, a->service_id);
	assert_int_equal(b->local_ca_guid, a->local_ca_guid);
	assert_int_equal(b->local_qkey, a->local_qkey);
	assert_int_equal(b->local_qpn, a->local_qpn);
	assert_int_equal(b->responder_resources, a->responder_resources);
	assert_int_equal(b->local_eecn, a->local_eecn);
	assert_int_equal(b->initiator_depth, a->initiator_depth);
	assert_int_equal(b->remote_eecn, a->remote_eecn);
	assert_int_equal(b->remote_cm_response_timeout, a->remote_cm_response_timeout);
	assert_int_equal(b->transport, a->transport);
	assert_int_equal(b->end_to_end_flow_control, a->end_to_end_flow_control);
	assert_int_equal(b->starting_psn, a->starting_psn);
	assert_int_equal(b->local_cm_response_timeout, a->local_cm_response_timeout);
	assert_int_equal(b->retry_count, a->retry_count);
	assert_int_equal(b->pkey, a->pkey);
	assert_int_equal(b->path_mtu, a->path_mtu);
	assert_int_equal(b->rdc_exists, a->rdc_exists);
	assert_int_equal(b->rnr_retry_count, a->rnr_retry_count);
	assert_int_equal(b->max_cm_retries, a->max_cm_retries);
	assert_int_equal(b->srq, a->srq);
	assert_int_equal(b->extended_transport, a->extended_transport);
	assert_int_equal(b->sap_supported, a->sap_supported);
	assert_int_equal(b->primary.local_lid, a->primary.local_lid);
	assert_int_equal(b->primary.remote_lid, a->primary.remote_lid);
	assert_memory_equal(b->primary.local_gid, a->primary.local_gid, 16);
	assert_memory_equal(b->primary.remote_gid, a->primary.remote_gid, 16);
	assert_int_equal(b->primary.flow_label, a->primary.flow_label);
	assert_int_equal(b->primary.packet_rate, a->primary.packet_rate);
	assert_int_equal(b->primary.traffic_class, a->primary.traffic_class);
	assert_int_equal(b->primary.hop_limit, a->primary.hop_limit);
	assert_int_equal(b->primary.sl, a->primary.sl);
	assert_int_equal(b->primary.subnet_local, a->primary.subnet_local);
	assert_int_equal(b->primary.local_ack_timeout, a->primary.local_ack_timeout);
	assert_int_equal(b->alternate.flow_label, a->alternate.flow_label);
	assert_int_equal(b->alternate.subnet_local, a->alternate.subnet_local);
	assert_int_equal(b->alternate.local_ack_timeout, a->alternate.local_ack_timeout);
	assert_memory_equal(b->alternate.remote_gid, a->alternate.remote_gid, 16);
	assert_memory_equal(b->private_data, a->private_data, DPV_CM_REQ_PDATA_LEN);
}

static void pack_writes_constants_whatever_hdr_says(void **state)
{
	struct dpv_cm_msg m;
	uint8_t mad[DPV_CM_MAD_LEN];

	(void)state;
	rtu_of(&m, DISTINCT);
	m.hdr.base_version = 9;
	m.hdr.mgmt_class = 0x81;
	m.hdr.class_version = 7;
	m.hdr.method = 0x81;
	assert_int_equal(dpv_cm_pack(&m, mad), 0);
	assert_int_equal(mad[0], 1);
	assert_int_equal(mad[1], 0x07);
	assert_int_equal(mad[2], 2);
	assert_int_equal(mad[3], 0x03);
	/* The attribute's reserved bytes (22, 23) and the REQ's reserved words stay 0. */
	assert_int_equal(mad[18], 0);
	assert_int_equal(mad[19], 0);
}

static void pack_refuses_fields_wider_than_their_width(void **state)
{
	struct dpv_cm_msg m;
	uint8_t mad[DPV_CM_MAD_LEN];

	(void)state;
	req_of(&m, DISTINCT);
	m.req.local_qpn = 0x1000000;
	assert_int_equal(dpv_cm_pack(&m, mad), EINVAL);
	req_of(&m, DISTINCT);
	m.req.primary.flow_label = 1u << 20;
	assert_int_equal(dpv_cm_pack(&m, mad), EINVAL);
	req_of(&m, DISTINCT);
	m.req.max_cm_retries = 16;
	assert_int_equal(dpv_cm_pack(&m, mad), EINVAL);
	req_of(&m, DISTINCT);
	m.req.remote_cm_response_timeout = 32;
	assert_int_equal(dpv_cm_pack(&m, mad), EINVAL);
	rej_of(&m, DISTINCT);
	m.rej.ari_length = DPV_CM_ARI_LEN + 1;
	assert_int_equal(dpv_cm_pack(&m, mad), EINVAL);
	rej_of(&m, DISTINCT);
	m.rej.message_rejected = 3;
	assert_int_equal(dpv_cm_pack(&m, mad), EINVAL);
	rep_of(&m, DISTINCT);
	m.rep.starting_psn = 0x1000000;
	assert_int_equal(dpv_cm_pack(&m, mad), EINVAL);
	dreq_of(&m, DISTINCT);
	m.dreq.remote_qpn = 0x1000000;
	assert_int_equal(dpv_cm_pack(&m, mad), EINVAL);
	sidr_rep_of(&m, DISTINCT);
	m.sidr_rep.info_length = DPV_CM_ARI_LEN + 1;
	assert_int_equal(dpv_cm_pack(&m, mad), EINVAL);
	rtu_of(&m, DISTINCT);
	m.hdr.attr_id = 0x0019; /* LAP: not offered */
	assert_int_equal(dpv_cm_pack(&m, mad), EINVAL);
}

/* A valid REQ MAD with one byte changed. */
static int unpack_req_with(size_t off, uint8_t v)
{
	struct dpv_cm_msg m;
	uint8_t mad[DPV_CM_MAD_LEN];

	req_of(&m, DISTINCT);
	assert_int_equal(dpv_cm_pack(&m, mad), 0);
	mad[off] = v;
	return dpv_cm_unpack(mad, sizeof(mad), &m);
}

static void unpack_refuses_malformed_with_its_errno(void **state)
{
	struct dpv_cm_msg m;
	uint8_t mad[DPV_CM_MAD_LEN + 1];

	(void)state;
	req_of(&m, DISTINCT);
	assert_int_equal(dpv_cm_pack(&m, mad), 0);
	assert_int_equal(dpv_cm_unpack(mad, 0, &m), EMSGSIZE);
	assert_int_equal(dpv_cm_unpack(mad, DPV_CM_MAD_LEN - 1, &m), EMSGSIZE);
	assert_int_equal(dpv_cm_unpack(mad, DPV_CM_MAD_LEN + 1, &m), EMSGSIZE);
	assert_int_equal(unpack_req_with(1, 0x01), ENOMSG);  /* Subnet management */
	assert_int_equal(unpack_req_with(1, 0x03), ENOMSG);  /* Subnet administration */
	assert_int_equal(unpack_req_with(0, 2), EPROTONOSUPPORT);
	assert_int_equal(unpack_req_with(0, 0), EPROTONOSUPPORT);
	assert_int_equal(unpack_req_with(2, 1), EPROTONOSUPPORT);
	assert_int_equal(unpack_req_with(2, 3), EPROTONOSUPPORT);
	assert_int_equal(unpack_req_with(3, 0x01), EOPNOTSUPP); /* Get */
	assert_int_equal(unpack_req_with(3, 0x83), EOPNOTSUPP); /* Send with R set */
	assert_int_equal(unpack_req_with(17, 0x19), EOPNOTSUPP); /* LAP */
	assert_int_equal(unpack_req_with(17, 0x1a), EOPNOTSUPP); /* APR */
	assert_int_equal(unpack_req_with(17, 0x01), EOPNOTSUPP); /* ClassPortInfo */
	assert_int_equal(unpack_req_with(16, 0x01), EOPNOTSUPP); /* 0x0110 */
	/* Reserved bits are ignored, as the spec asks of a receiver. */
	assert_int_equal(unpack_req_with(DATA + 4, 0xff), 0);
	assert_int_equal(unpack_req_with(DATA + 95, 0xff), 0);
}

static int unpack_kind_with(void (*make)(struct dpv_cm_msg *, enum pattern), size_t off,
			    uint8_t v)
{
	struct dpv_cm_msg m;
	uint8_t mad[DPV_CM_MAD_LEN];

	make(&m, DISTINCT);
	assert_int_equal(dpv_cm_pack(&m, mad), 0);
	mad[off] = v;
	return dpv_cm_unpack(mad, sizeof(mad), &m);
}

static void unpack_refuses_reserved_codes_and_long_lengths(void **state)
{
	(void)state;
	/* Message REJected / MRAed: 3 is reserved (2 bits at byte 8). */
	assert_int_equal(unpack_kind_with(rej_of, DATA + 8, 0xc0), EBADMSG);
	assert_int_equal(unpack_kind_with(rej_of, DATA + 8, 0x80), 0);
	assert_int_equal(unpack_kind_with(mra_of, DATA + 8, 0xc0), EBADMSG);
	/* Reject info length (7 bits at byte 9): 72 is the ARI's size. */
	assert_int_equal(unpack_kind_with(rej_of, DATA + 9, 72 << 1), 0);
	assert_int_equal(unpack_kind_with(rej_of, DATA + 9, 73 << 1), EBADMSG);
	assert_int_equal(unpack_kind_with(rej_of, DATA + 9, 0xfe), EBADMSG);
	/* SIDR_REP additional information length (byte 5). */
	assert_int_equal(unpack_kind_with(sidr_rep_of, DATA + 5, 72), 0);
	assert_int_equal(unpack_kind_with(sidr_rep_of, DATA + 5, 73), EBADMSG);
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Random bytes, with a valid CM header most of the time so that every attribute's
 * unpacker sees them; what unpacks must pack and unpack to the same message. */
static void random_bytes_never_crash(void **state)
{
	uint8_t buf[DPV_CM_MAD_LEN + 8], again[DPV_CM_MAD_LEN];
	struct dpv_cm_msg m, m2;
	unsigned int i, ok = 0, refused = 0;
	size_t j;

	(void)state;
	for (i = 0; i < 200000; i++) {
		size_t len = next() % 8 == 0 ? next() % sizeof(buf) : DPV_CM_MAD_LEN;
		uint8_t *mad = malloc(len ? len : 1);
		int ret;

		assert_non_null(mad);
		for (j = 0; j < len; j++)
			mad[j] = (uint8_t)next();
		if (len >= 18 && next() % 4 != 0) {
			mad[0] = 1;
			mad[1] = 0x07;
			mad[2] = 2;
			mad[3] = 0x03;
			mad[16] = 0;
			mad[17] = (uint8_t)(0x10 + next() % 10);
		}
		/* A heap buffer of exactly len bytes: ASan sees any read beyond it. */
		ret = dpv_cm_unpack(mad, len, &m);
		if (ret == 0) {
			ok++;
			assert_int_equal(dpv_cm_pack(&m, again), 0);
			assert_int_equal(dpv_cm_unpack(again, sizeof(again), &m2), 0);
			assert_int_equal(dpv_cm_pack(&m2, buf), 0);
			assert_memory_equal(buf, again, DPV_CM_MAD_LEN);
		} else {
			refused++;
			assert_true(ret == EMSGSIZE || ret == ENOMSG || ret == EPROTONOSUPPORT ||
				    ret == EOPNOTSUPP || ret == EBADMSG);
		}
		free(mad);
	}
	/* Both sides were reached often: the test is not vacuous. */
	assert_true(ok > 50000);
	assert_true(refused > 50000);
}

static void timeout_is_4096ns_times_two_to_t(void **state)
{
	(void)state;
	assert_int_equal(dpv_cm_timeout_ns(0), 4096);
	assert_int_equal(dpv_cm_timeout_ns(1), 8192);
	assert_int_equal(dpv_cm_timeout_ns(20), 4096ull << 20);
	assert_int_equal(dpv_cm_timeout_ns(31), 4096ull << 31);
	assert_int_equal(dpv_cm_timeout_ns(32), 4096);
	assert_string_equal(dpv_cm_attr_name(DPV_CM_ATTR_REQ), "REQ");
	assert_string_equal(dpv_cm_attr_name(DPV_CM_ATTR_SIDR_REP), "SIDR_REP");
	assert_null(dpv_cm_attr_name(0x0019));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(pack_matches_spec_layout_distinct),
		cmocka_unit_test(pack_matches_spec_layout_widest),
		cmocka_unit_test(req_round_trip_every_field),
		cmocka_unit_test(pack_writes_constants_whatever_hdr_says),
		cmocka_unit_test(pack_refuses_fields_wider_than_their_width),
		cmocka_unit_test(unpack_refuses_malformed_with_its_errno),
		cmocka_unit_test(unpack_refuses_reserved_codes_and_long_lengths),
		cmocka_unit_test(random_bytes_never_crash),
		cmocka_unit_test(timeout_is_4096ns_times_two_to_t),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
