/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The driver shared by the differential test and the fuzzer: one application, two
 * implementations of the device, every answer compared.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/tm_types.h>

#include "tm_drive.h"
#include "tm_ref.h"

/* What the application knows of a handle. */
enum {
	H_FREE,  /* never allocated, or released */
	H_ALLOC, /* ADD posted; the entry may be pending, listed, or deleted by a pending DEL */
	H_ENDED, /* consumed by a message or deleted by a DEL that said release: to release */
};

enum action {
	A_ADD,
	A_DEL,
	A_SYNC,
	A_EXEC,
	A_EXEC_ALL,
	A_MSG,
	A_RELEASE,
	A_BAD,
	A_MODE,
	A_NOTHING,
	A_COUNT,
};

/*
 * Modes weigh the actions differently (out of 255; byte 255 switches mode), so a run
 * alternates between filling the list, draining it, and letting ops pile up unexecuted.
 */
enum { M_BALANCED, M_FILL, M_DRAIN, M_PILE, M_COUNT };

static const uint8_t mode_weights[M_COUNT][A_MODE] = {
	/*               ADD DEL SYNC EXEC ALL MSG REL BAD */
	[M_BALANCED] = {  50, 25, 10,  55,  3, 50, 55,  7 },
	[M_FILL] =     { 100, 10,  5,  70,  5, 20, 40,  5 },
	[M_DRAIN] =    {  15, 40, 10,  55,  5, 70, 55,  5 },
	[M_PILE] =     {  80, 40, 30,  10,  0, 60, 30,  5 },
};

/* Kinds of invalid (or borderline) request. */
enum {
	BAD_OPCODE,
	BAD_FLAGS,
	BAD_NUM_SGE,
	BAD_NULL_SGL,
	BAD_DEL_HANDLE,
	BAD_RELEASE,
	BAD_COUNT,
};

/* One event as applied, kept for traces and divergence reports. */
struct event {
	uint64_t step;
	uint8_t action;
	int ret;                 /* post, release: the reference's answer */
	struct dpv_tm_op op;     /* post (as given), exec */
	struct dpv_tm_cqe cqe;   /* exec: the reference's */
	struct dpv_tm_tmh tmh;   /* msg */
	uint32_t len;            /* msg: payload bytes */
	bool avail;              /* msg */
	struct dpv_tm_match m;   /* msg: the reference's */
	uint32_t handle;         /* release; mode: the new mode */
};

#define EVENT_RING 64u
/* Largest burst of messages decided by one dpv_tm_match_burst() (its prefetch path
 * starts at 4). */
#define TM_DRIVE_BURST 8u

struct tm_drive {
	struct tm_drive_cfg cfg;
	struct dpv_tm *tm;
	struct tm_ref *ref;
	uint8_t actions[M_COUNT][255];
	unsigned int mode;
	uint64_t tags[TM_DRIVE_MAX_TAG_POOL];
	uint32_t ntags;
	/* ops accepted by both and not yet executed, in posting order */
	struct dpv_tm_op *pending;
	uint32_t pend_head;
	uint32_t pend_cnt;
	/* handles */
	uint8_t *hstate;
	uint32_t *alloc;     /* allocated handles, any order */
	uint32_t *alloc_pos; /* index of a handle in alloc */
	uint32_t nalloc;
	uint32_t *ended;     /* ended handles, any order */
	uint32_t nended;
	/* what the engine's counters must read */
	struct dpv_tm_stats want;
	uint64_t seq;        /* numbers wr_ids and scatter lists */
	/* the caller's scatter list: overwritten after each post to catch late readers */
	struct dpv_tm_sge sgl[DPV_TM_MAX_SGE_LIMIT];
	uint64_t steps;
	uint64_t nev;
	struct event ev[EVENT_RING];
	FILE *trace;
	char err[1024];
};

void
tm_drive_cfg_from_src(struct tm_src *s, struct tm_drive_cfg *cfg)
{
	uint8_t b = tm_src_u8(s);

	memset(cfg, 0, sizeof(*cfg));
	/* Mostly tiny lists (full, reused handles); now and then a long one. */
	if ((b & 0xc0) == 0xc0)
		cfg->tm.max_num_tags = 1 + tm_src_below(s, 1024);
	else
		cfg->tm.max_num_tags = 1 + (b & 0x3f);
	cfg->tm.max_ops = 1 + tm_src_below(s, 32);
	cfg->tm.max_sge = 1 + tm_src_below(s, DPV_TM_MAX_SGE_LIMIT);
	cfg->tm.sync_threshold = tm_src_below(s, 10);
	cfg->tag_pool = 1 + tm_src_below(s, TM_DRIVE_MAX_TAG_POOL);
}

static bool
fail(struct tm_drive *d, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(d->err, sizeof(d->err), fmt, ap);
	va_end(ap);
	return false;
}

static void
fmt_cqe(char *buf, size_t n, const struct dpv_tm_cqe *c)
{
	snprintf(buf, n, "{wr_id %" PRIu64 " handle %" PRIu32 " opcode %u status %u flags %u"
		 " visible %d release %d}", c->wr_id, c->handle, c->opcode, c->status,
		 c->flags, c->visible, c->release);
}

static void
fmt_match(char *buf, size_t n, const struct dpv_tm_match *m)
{
	int len;
	uint32_t i;

	len = snprintf(buf, n, "{kind %u flags %u handle %" PRIu32 " recv_wr_id %" PRIu64
		       " num_sge %" PRIu32 " sg_list %s", m->kind, m->flags, m->handle,
		       m->recv_wr_id, m->num_sge, m->sg_list != NULL ? "set" : "NULL");
	for (i = 0; m->sg_list != NULL && i < m->num_sge && i < DPV_TM_MAX_SGE_LIMIT &&
		    len > 0 && (size_t)len < n; i++)
		len += snprintf(buf + len, n - len, " [%" PRIx64 " %" PRIu32 " %" PRIu32 "]",
				m->sg_list[i].addr, m->sg_list[i].length, m->sg_list[i].lkey);
	if (len > 0 && (size_t)len < n)
		snprintf(buf + len, n - len, "}");
}

static void
fmt_op(char *buf, size_t n, const struct dpv_tm_op *op)
{
	snprintf(buf, n, "{opcode %u flags %u wr_id %" PRIu64 " tag %#" PRIx64 " mask %#"
		 PRIx64 " recv_wr_id %" PRIu64 " num_sge %" PRIu32 " sg_list %s handle %"
		 PRIu32 " unexpected_cnt %" PRIu32 "}", op->opcode, op->flags, op->wr_id,
		 op->tag, op->mask, op->recv_wr_id, op->num_sge,
		 op->sg_list != NULL ? "set" : "NULL", op->handle, op->unexpected_cnt);
}

static void
print_event(FILE *f, const struct event *e)
{
	char a[512], b[512];

	switch (e->action) {
	case A_ADD:
	case A_DEL:
	case A_SYNC:
	case A_BAD:
		fmt_op(a, sizeof(a), &e->op);
		fprintf(f, "step %" PRIu64 ": post %s -> %d", e->step, a, e->ret);
		if (e->ret == 0 && e->op.opcode == DPV_TM_OP_ADD)
			fprintf(f, " handle %" PRIu32, e->op.handle);
		fprintf(f, "\n");
		break;
	case A_EXEC:
		fmt_op(a, sizeof(a), &e->op);
		fmt_cqe(b, sizeof(b), &e->cqe);
		fprintf(f, "step %" PRIu64 ": exec %s -> %s\n", e->step, a, b);
		break;
	case A_MSG:
		fmt_match(b, sizeof(b), &e->m);
		fprintf(f, "step %" PRIu64 ": message tmh {opcode %u app_ctx %#" PRIx32
			" tag %#" PRIx64 "} len %" PRIu32 " srq_wr_available %d -> %s\n",
			e->step, e->tmh.opcode, e->tmh.app_ctx, e->tmh.tag, e->len, e->avail,
			b);
		break;
	case A_RELEASE:
		fprintf(f, "step %" PRIu64 ": release %" PRIu32 " -> %d\n", e->step,
			e->handle, e->ret);
		break;
	case A_MODE:
		fprintf(f, "step %" PRIu64 ": driver mode %" PRIu32 "\n", e->step, e->handle);
		break;
	default:
		fprintf(f, "step %" PRIu64 ": nothing to do\n", e->step);
		break;
	}
}

static struct event *
new_event(struct tm_drive *d, uint8_t action)
{
	struct event *e = &d->ev[d->nev++ % EVENT_RING];

	e->step = d->steps;
	e->action = action;
	return e;
}

static void
event_done(struct tm_drive *d, const struct event *e)
{
	if (d->trace != NULL)
		print_event(d->trace, e);
}

struct tm_drive *
tm_drive_create(const struct tm_drive_cfg *cfg, struct tm_src *src)
{
	uint32_t n = cfg->tm.max_num_tags;
	struct tm_drive *d;
	unsigned int m, a, i, k;
	int rc;

	d = calloc(1, sizeof(*d));
	if (d == NULL)
		return NULL;
	d->cfg = *cfg;
	rc = dpv_tm_create(&cfg->tm, &d->tm);
	if (rc != 0) {
		fprintf(stderr, "tm_drive: dpv_tm_create: %s\n", strerror(rc));
		free(d);
		return NULL;
	}
	rc = tm_ref_create(&cfg->tm, &d->ref);
	if (rc != 0) {
		fprintf(stderr, "tm_drive: tm_ref_create: %s\n", strerror(rc));
		dpv_tm_destroy(d->tm);
		free(d);
		return NULL;
	}
	d->pending = calloc(cfg->tm.max_ops, sizeof(*d->pending));
	d->hstate = calloc(n, sizeof(*d->hstate));
	d->alloc = calloc(n, sizeof(*d->alloc));
	d->alloc_pos = calloc(n, sizeof(*d->alloc_pos));
	d->ended = calloc(n, sizeof(*d->ended));
	if (d->pending == NULL || d->hstate == NULL || d->alloc == NULL ||
	    d->alloc_pos == NULL || d->ended == NULL) {
		tm_drive_destroy(d);
		return NULL;
	}
	for (m = 0; m < M_COUNT; m++)
		for (a = 0, i = 0; a < A_MODE; a++)
			for (k = 0; k < mode_weights[m][a]; k++)
				d->actions[m][i++] = a;
	/*
	 * Small integers differ in their low bits (wildcards on them collide), the
	 * others in the high ones; every pool starts with 0 .. 3.
	 */
	d->ntags = cfg->tag_pool < 1 ? 1 :
		   cfg->tag_pool > TM_DRIVE_MAX_TAG_POOL ? TM_DRIVE_MAX_TAG_POOL : cfg->tag_pool;
	for (i = 0; i < d->ntags; i++) {
		switch (i < 4 ? 0 : tm_src_below(src, 4)) {
		case 0:
			d->tags[i] = i;
			break;
		case 1:
			d->tags[i] = (uint64_t)i << 60 | i;
			break;
		case 2:
			d->tags[i] = ~(uint64_t)i;
			break;
		default:
			d->tags[i] = tm_src_u64(src);
			break;
		}
	}
	return d;
}

void
tm_drive_destroy(struct tm_drive *d)
{
	if (d == NULL)
		return;
	dpv_tm_destroy(d->tm);
	tm_ref_destroy(d->ref);
	free(d->pending);
	free(d->hstate);
	free(d->alloc);
	free(d->alloc_pos);
	free(d->ended);
	free(d);
}

uint64_t
tm_drive_steps(const struct tm_drive *d)
{
	return d->steps;
}

void
tm_drive_trace(struct tm_drive *d, FILE *f)
{
	d->trace = f;
}

void
tm_drive_report(const struct tm_drive *d, FILE *f)
{
	uint64_t i = d->nev > EVENT_RING ? d->nev - EVENT_RING : 0;

	fprintf(f, "divergence at step %" PRIu64 ": %s\n", d->steps - 1, d->err);
	fprintf(f, "config: max_num_tags %" PRIu32 " max_ops %" PRIu32 " max_sge %" PRIu32
		" sync_threshold %" PRIu32 " tag_pool %" PRIu32 "%s\n",
		d->cfg.tm.max_num_tags, d->cfg.tm.max_ops, d->cfg.tm.max_sge,
		d->cfg.tm.sync_threshold, d->cfg.tag_pool,
		d->cfg.mutant ? " (mutant reference)" : "");
	fprintf(f, "last %" PRIu64 " events (the reference's answers):\n", d->nev - i);
	for (; i < d->nev; i++)
		print_event(f, &d->ev[i % EVENT_RING]);
}

static void
handle_ended(struct tm_drive *d, uint32_t h)
{
	d->hstate[h] = H_ENDED;
	d->ended[d->nended++] = h;
}

/* The count of unexpected messages software reports; usually U, sometimes not. */
static uint32_t
pick_sync_count(struct tm_drive *d, struct tm_src *src)
{
	uint32_t u = tm_ref_unexpected(d->ref);
	uint32_t r = tm_src_below(src, 16);

	if (r < 8)
		return u;
	if (r < 11)
		return u - 1 - tm_src_below(src, 4);
	if (r < 13)
		return tm_ref_synced(d->ref);
	if (r < 14)
		return u + 1 + tm_src_below(src, 2);
	if (r < 15)
		return (uint32_t)tm_src_u64(src);
	return u ^ 0x80000000u;
}

static void
pick_flags(struct tm_drive *d, struct tm_src *src, struct dpv_tm_op *op, uint32_t sync_in_4)
{
	uint8_t b = tm_src_u8(src);

	op->flags = (b & 1) ? DPV_TM_OP_F_SIGNALED : 0;
	/* unexpected_cnt is junk unless the op carries TM_SYNC */
	if (((b >> 1) & 3) < sync_in_4) {
		op->flags |= DPV_TM_OP_F_SYNC;
		op->unexpected_cnt = pick_sync_count(d, src);
	} else {
		op->unexpected_cnt = b * 0x01010101u;
	}
}

static uint64_t
pick_mask(struct tm_src *src)
{
	switch (tm_src_below(src, 16)) {
	case 9:
		return 0;
	case 10:
		return ~1ull;
	case 11:
		return 0xffffull;
	case 12:
		return 0xffffffff00000000ull;
	case 13:
		return 0xf0000000000000ffull;
	case 14:
		return tm_src_u64(src);
	case 15:
		return ~(1ull << tm_src_below(src, 64));
	default:
		return DPV_TM_MASK_EXACT;
	}
}

static void
make_add(struct tm_drive *d, struct tm_src *src, struct dpv_tm_op *op)
{
	uint32_t i;

	memset(op, 0, sizeof(*op));
	op->opcode = DPV_TM_OP_ADD;
	op->wr_id = ++d->seq;
	op->tag = d->tags[tm_src_below(src, d->ntags)];
	op->mask = pick_mask(src);
	/* bits outside the mask must not matter */
	if (op->mask != DPV_TM_MASK_EXACT && tm_src_below(src, 4) == 0)
		op->tag |= tm_src_u64(src) & ~op->mask;
	op->recv_wr_id = d->seq * 1000;
	op->num_sge = tm_src_below(src, d->cfg.tm.max_sge + 1);
	for (i = 0; i < op->num_sge; i++)
		d->sgl[i] = (struct dpv_tm_sge){ .addr = d->seq << 16 | i,
			.length = tm_src_u8(src), .lkey = (uint32_t)d->seq ^ i };
	op->sg_list = op->num_sge > 0 || tm_src_below(src, 2) ? d->sgl : NULL;
	op->handle = tm_src_u8(src);
	pick_flags(d, src, op, 1);
}

static uint32_t
pick_allocated(struct tm_drive *d, struct tm_src *src)
{
	if (d->nalloc == 0)
		return tm_src_below(src, d->cfg.tm.max_num_tags);
	return d->alloc[tm_src_below(src, d->nalloc)];
}

static void
make_del(struct tm_drive *d, struct tm_src *src, struct dpv_tm_op *op, uint32_t handle)
{
	memset(op, 0, sizeof(*op));
	op->opcode = DPV_TM_OP_DEL;
	op->wr_id = ++d->seq;
	op->handle = handle;
	/* fields a DEL ignores */
	op->tag = d->seq;
	op->mask = ~d->seq;
	op->num_sge = tm_src_u8(src);
	pick_flags(d, src, op, 1);
}

static void
make_sync(struct tm_drive *d, struct tm_src *src, struct dpv_tm_op *op)
{
	memset(op, 0, sizeof(*op));
	op->opcode = DPV_TM_OP_SYNC;
	op->wr_id = ++d->seq;
	op->handle = tm_src_u8(src);
	pick_flags(d, src, op, 3);
}

static bool
post_both(struct tm_drive *d, struct dpv_tm_op *op, uint8_t action)
{
	struct event *e = new_event(d, action);
	struct dpv_tm_op oe = *op, orf = *op;
	uint32_t h;
	int re, rr;

	e->op = *op;
	if (d->cfg.mutant)
		orf.mask &= ~1ull;
	re = dpv_tm_post(d->tm, &oe);
	rr = tm_ref_post(d->ref, &orf);
	e->ret = rr;
	e->op.handle = orf.handle;
	/* the caller may reuse its scatter list as soon as post returns */
	memset(d->sgl, 0xa5, sizeof(d->sgl));
	event_done(d, e);
	if (re != rr)
		return fail(d, "post: engine returned %d, reference %d", re, rr);
	if (rr != 0)
		return true;
	if (op->opcode == DPV_TM_OP_ADD) {
		if (oe.handle != orf.handle)
			return fail(d, "post ADD: engine gave handle %" PRIu32 ", reference %"
				    PRIu32, oe.handle, orf.handle);
		h = orf.handle;
		if (h >= d->cfg.tm.max_num_tags || d->hstate[h] != H_FREE)
			return fail(d, "post ADD: handle %" PRIu32 " was not free", h);
		d->hstate[h] = H_ALLOC;
		d->alloc_pos[h] = d->nalloc;
		d->alloc[d->nalloc++] = h;
	}
	if (d->pend_cnt == d->cfg.tm.max_ops)
		return fail(d, "post: both accepted op %" PRIu32 " of max_ops %" PRIu32,
			    d->pend_cnt + 1, d->cfg.tm.max_ops);
	d->pending[(d->pend_head + d->pend_cnt++) % d->cfg.tm.max_ops] = oe;
	return true;
}

static bool
exec_one(struct tm_drive *d)
{
	struct event *e = new_event(d, A_EXEC);
	struct dpv_tm_cqe ce, cr;
	struct dpv_tm_op op;
	char a[256], b[256];

	op = d->pending[d->pend_head];
	d->pend_head = (d->pend_head + 1) % d->cfg.tm.max_ops;
	d->pend_cnt--;
	memset(&ce, 0x5a, sizeof(ce));
	dpv_tm_exec(d->tm, &op, &ce);
	tm_ref_exec(d->ref, &op, &cr);
	e->op = op;
	e->cqe = cr;
	event_done(d, e);
	if (ce.wr_id != cr.wr_id || ce.handle != cr.handle || ce.opcode != cr.opcode ||
	    ce.status != cr.status || ce.flags != cr.flags || ce.visible != cr.visible ||
	    ce.release != cr.release) {
		fmt_cqe(a, sizeof(a), &ce);
		fmt_cqe(b, sizeof(b), &cr);
		return fail(d, "exec: engine cqe %s, reference cqe %s", a, b);
	}
	switch (op.opcode) {
	case DPV_TM_OP_ADD:
		d->want.adds++;
		d->want.listed++;
		break;
	case DPV_TM_OP_DEL:
		if (cr.status == DPV_TM_ST_SUCCESS) {
			d->want.dels++;
			d->want.listed--;
		} else {
			d->want.del_errors++;
		}
		break;
	default:
		d->want.syncs++;
		break;
	}
	if (cr.release) {
		if (d->hstate[cr.handle] != H_ALLOC)
			return fail(d, "exec: DEL released handle %" PRIu32 " twice", cr.handle);
		handle_ended(d, cr.handle);
	}
	return true;
}

/* The TMH as doc/guides/srq.md §4 lays it out, read the plainest way. */
static void
parse_tmh_plain(const uint8_t *p, size_t len, struct dpv_tm_tmh *t)
{
	int i;

	memset(t, 0, sizeof(*t));
	if (len < DPV_TM_TMH_SIZE)
		return;
	t->opcode = p[0];
	for (i = 4; i < 8; i++)
		t->app_ctx = t->app_ctx << 8 | p[i];
	for (i = 8; i < 16; i++)
		t->tag = t->tag << 8 | p[i];
}

/* Build one incoming message from the byte source into its event (tmh, len, avail),
 * checking the engine's TMH parser against the plain one. */
static bool
message_make(struct tm_drive *d, struct tm_src *src, struct event *e)
{
	static const uint8_t ops[16] = {
		IBV_TMH_EAGER, IBV_TMH_EAGER, IBV_TMH_EAGER, IBV_TMH_EAGER, IBV_TMH_EAGER,
		IBV_TMH_EAGER, IBV_TMH_RNDV, IBV_TMH_RNDV, IBV_TMH_RNDV, IBV_TMH_RNDV,
		IBV_TMH_NO_TAG, IBV_TMH_NO_TAG, IBV_TMH_FIN, IBV_TMH_FIN, 4, 0,
	};
	uint8_t payload[DPV_TM_TMH_SIZE + 8];
	struct dpv_tm_tmh te, tr;
	uint64_t tag;
	uint32_t r, len, i;

	r = tm_src_below(src, 16);
	payload[0] = r == 15 ? tm_src_u8(src) : ops[r];
	payload[1] = payload[2] = payload[3] = tm_src_below(src, 8) == 0 ? 0xff : 0;
	payload[4] = 0xc0;
	payload[5] = 0xff;
	payload[6] = (uint8_t)(d->seq >> 8);
	payload[7] = (uint8_t)d->seq;
	r = tm_src_below(src, 8);
	tag = d->tags[tm_src_below(src, d->ntags)];
	if (r == 6)
		tag ^= 1ull << tm_src_below(src, 64);
	else if (r == 7)
		tag = tm_src_u64(src);
	for (i = 0; i < 8; i++)
		payload[8 + i] = (uint8_t)(tag >> (56 - 8 * i));
	memset(payload + DPV_TM_TMH_SIZE, 0x3c, sizeof(payload) - DPV_TM_TMH_SIZE);
	r = tm_src_below(src, 32);
	len = r == 0 ? tm_src_below(src, DPV_TM_TMH_SIZE) :
	      r == 1 ? DPV_TM_TMH_SIZE + 1 + tm_src_below(src, 8) : DPV_TM_TMH_SIZE;
	dpv_tm_parse_tmh(payload, len, &te);
	parse_tmh_plain(payload, len, &tr);
	e->tmh = tr;
	e->len = len;
	e->avail = tm_src_below(src, 8) != 0;
	if (te.opcode != tr.opcode || te.app_ctx != tr.app_ctx || te.tag != tr.tag)
		return fail(d, "parse_tmh(len %" PRIu32 "): engine {opcode %u app_ctx %#" PRIx32
			    " tag %#" PRIx64 "}, expected {opcode %u app_ctx %#" PRIx32 " tag %#"
			    PRIx64 "}", len, te.opcode, te.app_ctx, te.tag, tr.opcode,
			    tr.app_ctx, tr.tag);
	return true;
}

/* Compare the engine's decision for a message with the reference's and account it. */
static bool
message_check(struct tm_drive *d, struct dpv_tm_match me, const struct dpv_tm_match *pmr)
{
	struct dpv_tm_match mr = *pmr;
	char a[768], b[768];
	bool expected;

	expected = mr.kind == DPV_TM_EXPECTED_EAGER || mr.kind == DPV_TM_EXPECTED_RNDV;
	if (me.kind != mr.kind || me.flags != mr.flags || me.handle != mr.handle ||
	    me.recv_wr_id != mr.recv_wr_id || me.num_sge != mr.num_sge ||
	    (!expected && me.sg_list != NULL) ||
	    (expected && mr.num_sge > 0 && (me.sg_list == NULL ||
	     memcmp(me.sg_list, mr.sg_list, mr.num_sge * sizeof(*mr.sg_list)) != 0))) {
		/* print only the engine's buffers that it claims to hand out */
		if (me.num_sge > DPV_TM_MAX_SGE_LIMIT ||
		    (me.kind != DPV_TM_EXPECTED_EAGER && me.kind != DPV_TM_EXPECTED_RNDV))
			me.num_sge = 0;
		fmt_match(a, sizeof(a), &me);
		fmt_match(b, sizeof(b), &mr);
		return fail(d, "match: engine %s, reference %s", a, b);
	}
	switch (mr.kind) {
	case DPV_TM_EXPECTED_EAGER:
	case DPV_TM_EXPECTED_RNDV:
		d->want.expected++;
		d->want.listed--;
		if (d->hstate[mr.handle] != H_ALLOC)
			return fail(d, "match: consumed handle %" PRIu32 " was not listed",
				    mr.handle);
		handle_ended(d, mr.handle);
		break;
	case DPV_TM_UNEXPECTED:
		d->want.unexpected++;
		break;
	case DPV_TM_NO_TAG:
		d->want.no_tag++;
		break;
	default:
		d->want.rnr++;
		break;
	}
	return true;
}

static bool
message(struct tm_drive *d, struct tm_src *src)
{
	struct event *e = new_event(d, A_MSG);
	struct dpv_tm_match me, mr;

	if (!message_make(d, src, e)) {
		event_done(d, e);
		return false;
	}
	memset(&me, 0x5a, sizeof(me));
	dpv_tm_match(d->tm, &e->tmh, e->avail, &me);
	tm_ref_match(d->ref, &e->tmh, e->avail, &mr);
	e->m = mr;
	event_done(d, e);
	return message_check(d, me, &mr);
}

/*
 * A burst of up to TM_DRIVE_BURST messages: the engine decides it in one
 * dpv_tm_match_burst() call, the reference one message after the other, each NO_TAG or
 * unexpected message taking one of the burst's ordinary SRQ WRs while any is left.
 */
static bool
message_burst(struct tm_drive *d, struct tm_src *src)
{
	struct dpv_tm_tmh tmh[TM_DRIVE_BURST];
	struct dpv_tm_match me[TM_DRIVE_BURST], mr[TM_DRIVE_BURST];
	uint32_t n = 1 + tm_src_below(src, TM_DRIVE_BURST), wrs, i;
	struct event *e[TM_DRIVE_BURST];

	wrs = tm_src_below(src, n + 2);
	for (i = 0; i < n; i++) {
		e[i] = new_event(d, A_MSG);
		if (!message_make(d, src, e[i])) {
			event_done(d, e[i]);
			return false;
		}
		tmh[i] = e[i]->tmh;
	}
	memset(me, 0x5a, sizeof(me));
	dpv_tm_match_burst(d->tm, tmh, n, wrs, me);
	for (i = 0; i < n; i++) {
		e[i]->avail = wrs > 0; /* the trace shows what the reference was offered */
		tm_ref_match(d->ref, &tmh[i], wrs > 0, &mr[i]);
		e[i]->m = mr[i];
		event_done(d, e[i]);
		if (mr[i].kind == DPV_TM_NO_TAG || mr[i].kind == DPV_TM_UNEXPECTED)
			wrs--;
		if (!message_check(d, me[i], &mr[i]))
			return false;
	}
	return true;
}

static bool
release_both(struct tm_drive *d, uint32_t h)
{
	struct event *e = new_event(d, A_RELEASE);
	uint32_t last;
	int re, rr;

	re = dpv_tm_release(d->tm, h);
	rr = tm_ref_release(d->ref, h);
	e->handle = h;
	e->ret = rr;
	event_done(d, e);
	if (re != rr)
		return fail(d, "release %" PRIu32 ": engine returned %d, reference %d", h, re, rr);
	if (h < d->cfg.tm.max_num_tags && d->hstate[h] == H_ENDED) {
		if (rr != 0)
			return fail(d, "release %" PRIu32 " of an ended entry refused", h);
		d->hstate[h] = H_FREE;
		last = d->alloc[--d->nalloc];
		d->alloc[d->alloc_pos[h]] = last;
		d->alloc_pos[last] = d->alloc_pos[h];
	} else if (rr == 0) {
		return fail(d, "release %" PRIu32 " of a free handle accepted", h);
	}
	return true;
}

static bool
release_ended(struct tm_drive *d, struct tm_src *src)
{
	uint32_t i = tm_src_below(src, d->nended);
	uint32_t h = d->ended[i];

	d->ended[i] = d->ended[--d->nended];
	return release_both(d, h);
}

static bool
bad_request(struct tm_drive *d, struct tm_src *src)
{
	static const uint8_t bad_opcodes[4] = { 0, 4, 0x80, 0xff };
	struct dpv_tm_op op;
	uint32_t h, i;

	switch (tm_src_below(src, BAD_COUNT)) {
	case BAD_OPCODE:
		make_add(d, src, &op);
		op.opcode = bad_opcodes[tm_src_below(src, 4)];
		break;
	case BAD_FLAGS:
		make_sync(d, src, &op);
		op.opcode = DPV_TM_OP_ADD + tm_src_below(src, 3);
		op.handle = pick_allocated(d, src);
		op.flags |= 1u << (2 + tm_src_below(src, 6));
		break;
	case BAD_NUM_SGE:
		make_add(d, src, &op);
		op.num_sge = tm_src_below(src, 4) == 0 ? UINT32_MAX :
			     d->cfg.tm.max_sge + 1 + tm_src_below(src, 4);
		for (i = 0; i < DPV_TM_MAX_SGE_LIMIT; i++)
			d->sgl[i] = (struct dpv_tm_sge){ .addr = i };
		op.sg_list = d->sgl;
		break;
	case BAD_NULL_SGL:
		make_add(d, src, &op);
		op.num_sge = 1 + tm_src_below(src, d->cfg.tm.max_sge);
		op.sg_list = NULL;
		break;
	case BAD_DEL_HANDLE:
		/* any handle, so mostly unallocated ones, and far out of range */
		h = tm_src_below(src, 8) == 0 ? UINT32_MAX - tm_src_below(src, 2) :
		    tm_src_below(src, d->cfg.tm.max_num_tags + 4);
		make_del(d, src, &op, h);
		break;
	default:
		h = tm_src_below(src, 8) == 0 ? UINT32_MAX :
		    tm_src_below(src, d->cfg.tm.max_num_tags + 4);
		if (h < d->cfg.tm.max_num_tags && d->hstate[h] == H_ALLOC) {
			/* releasing a live entry is a caller bug no engine guards against */
			event_done(d, new_event(d, A_NOTHING));
			return true;
		}
		if (h < d->cfg.tm.max_num_tags && d->hstate[h] == H_ENDED) {
			for (i = 0; d->ended[i] != h; i++)
				;
			d->ended[i] = d->ended[--d->nended];
		}
		return release_both(d, h);
	}
	return post_both(d, &op, A_BAD);
}

static bool
check_counters(struct tm_drive *d)
{
	const struct dpv_tm_stats *w = &d->want;
	struct dpv_tm_stats st;
	uint32_t ue, ur, se, sr;

	ue = dpv_tm_unexpected(d->tm);
	ur = tm_ref_unexpected(d->ref);
	se = dpv_tm_synced(d->tm);
	sr = tm_ref_synced(d->ref);
	if (ue != ur || se != sr)
		return fail(d, "counters: engine U %" PRIu32 " S %" PRIu32 ", reference U %"
			    PRIu32 " S %" PRIu32, ue, se, ur, sr);
	dpv_tm_stats_get(d->tm, &st);
	if (st.adds != w->adds || st.dels != w->dels || st.del_errors != w->del_errors ||
	    st.syncs != w->syncs || st.expected != w->expected ||
	    st.unexpected != w->unexpected || st.no_tag != w->no_tag || st.rnr != w->rnr ||
	    st.listed != w->listed || st.allocated != d->nalloc)
		return fail(d, "stats: engine adds %" PRIu64 " dels %" PRIu64 " del_errors %"
			    PRIu64 " syncs %" PRIu64 " expected %" PRIu64 " unexpected %" PRIu64
			    " no_tag %" PRIu64 " rnr %" PRIu64 " listed %" PRIu32 " allocated %"
			    PRIu32 "; want %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %"
			    PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu32 " %" PRIu32,
			    st.adds, st.dels, st.del_errors, st.syncs, st.expected,
			    st.unexpected, st.no_tag, st.rnr, st.listed, st.allocated,
			    w->adds, w->dels, w->del_errors, w->syncs, w->expected,
			    w->unexpected, w->no_tag, w->rnr, w->listed, d->nalloc);
	return true;
}

bool
tm_drive_step(struct tm_drive *d, struct tm_src *src)
{
	struct dpv_tm_op op;
	uint8_t b = tm_src_u8(src);
	struct event *e;
	bool ok = true;

	d->steps++;
	if (b == 255) {
		d->mode = tm_src_below(src, M_COUNT);
		e = new_event(d, A_MODE);
		e->handle = d->mode;
		event_done(d, e);
		return true;
	}
	switch (d->actions[d->mode][b]) {
	case A_ADD:
		make_add(d, src, &op);
		ok = post_both(d, &op, A_ADD);
		break;
	case A_DEL:
		make_del(d, src, &op, pick_allocated(d, src));
		ok = post_both(d, &op, A_DEL);
		break;
	case A_SYNC:
		make_sync(d, src, &op);
		ok = post_both(d, &op, A_SYNC);
		break;
	case A_EXEC:
		if (d->pend_cnt > 0)
			ok = exec_one(d);
		else
			ok = message(d, src);
		break;
	case A_EXEC_ALL:
		while (ok && d->pend_cnt > 0)
			ok = exec_one(d);
		break;
	case A_MSG:
		ok = tm_src_below(src, 4) == 0 ? message_burst(d, src) : message(d, src);
		break;
	case A_RELEASE:
		if (d->nended > 0)
			ok = release_ended(d, src);
		else
			ok = message(d, src);
		break;
	default:
		ok = bad_request(d, src);
		break;
	}
	return ok && check_counters(d);
}

bool
tm_drive_finish(struct tm_drive *d)
{
	bool ok = true;

	d->steps++;
	while (ok && d->pend_cnt > 0)
		ok = exec_one(d);
	while (ok && d->nended > 0) {
		ok = release_both(d, d->ended[d->nended - 1]);
		d->nended--;
	}
	return ok && check_counters(d);
}
