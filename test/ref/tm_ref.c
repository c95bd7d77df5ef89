/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The reference model of lib/tm. Every rule of dpv_tm.h is written here the most
 * direct way: the list is an array of handles in add order, compacted on removal and
 * scanned from the oldest; handles come from a plain FIFO array. Nothing is clever, so
 * a disagreement with dpv_tm points at dpv_tm first.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/tm_types.h>

#include "tm_ref.h"

/* What ADD copied at post time, kept until the handle is released. */
struct ref_slot {
	uint64_t tag;
	uint64_t mask;
	uint64_t recv_wr_id;
	uint32_t need;    /* U when the ADD ran */
	uint32_t num_sge;
	bool allocated;   /* from the ADD's post until tm_ref_release() */
	struct dpv_tm_sge *sge; /* max_sge of them */
};

struct tm_ref {
	struct dpv_tm_config cfg;
	struct ref_slot *slots;   /* indexed by handle */
	struct dpv_tm_sge *sges;  /* backing store of every slot's scatter list */
	uint32_t *list;           /* handles in the list, oldest first */
	uint32_t listed;
	uint32_t *free_q;         /* free handles, a FIFO ring */
	uint32_t free_head;
	uint32_t free_cnt;
	uint32_t outstanding;     /* ops posted and not yet executed */
	uint32_t u;
	uint32_t s;
};

int
tm_ref_create(const struct dpv_tm_config *cfg, struct tm_ref **out)
{
	struct tm_ref *ref;
	uint32_t i;

	if (cfg->max_num_tags == 0 || cfg->max_num_tags > DPV_TM_MAX_TAGS_LIMIT ||
	    cfg->max_ops == 0 || cfg->max_ops > DPV_TM_MAX_OPS_LIMIT ||
	    cfg->max_sge == 0 || cfg->max_sge > DPV_TM_MAX_SGE_LIMIT)
		return EINVAL;
	ref = calloc(1, sizeof(*ref));
	if (ref == NULL)
		return ENOMEM;
	ref->cfg = *cfg;
	if (ref->cfg.sync_threshold == 0)
		ref->cfg.sync_threshold = DPV_TM_DEFAULT_SYNC_THRESHOLD;
	ref->slots = calloc(cfg->max_num_tags, sizeof(*ref->slots));
	ref->sges = calloc((size_t)cfg->max_num_tags * cfg->max_sge, sizeof(*ref->sges));
	ref->list = calloc(cfg->max_num_tags, sizeof(*ref->list));
	ref->free_q = calloc(cfg->max_num_tags, sizeof(*ref->free_q));
	if (ref->slots == NULL || ref->sges == NULL || ref->list == NULL ||
	    ref->free_q == NULL) {
		tm_ref_destroy(ref);
		return ENOMEM;
	}
	for (i = 0; i < cfg->max_num_tags; i++) {
		ref->slots[i].sge = &ref->sges[(size_t)i * cfg->max_sge];
		ref->free_q[i] = i;
	}
	ref->free_cnt = cfg->max_num_tags;
	*out = ref;
	return 0;
}

void
tm_ref_destroy(struct tm_ref *ref)
{
	if (ref == NULL)
		return;
	free(ref->slots);
	free(ref->sges);
	free(ref->list);
	free(ref->free_q);
	free(ref);
}

static bool
ref_allocated(const struct tm_ref *ref, uint32_t handle)
{
	return handle < ref->cfg.max_num_tags && ref->slots[handle].allocated;
}

int
tm_ref_post(struct tm_ref *ref, struct dpv_tm_op *op)
{
	struct ref_slot *slot;
	uint32_t h;

	if (op->opcode != DPV_TM_OP_ADD && op->opcode != DPV_TM_OP_DEL &&
	    op->opcode != DPV_TM_OP_SYNC)
		return EINVAL;
	if (op->flags & ~(DPV_TM_OP_F_SIGNALED | DPV_TM_OP_F_SYNC))
		return EINVAL;
	if (op->opcode == DPV_TM_OP_ADD &&
	    (op->num_sge > ref->cfg.max_sge || (op->num_sge > 0 && op->sg_list == NULL)))
		return EINVAL;
	if (op->opcode == DPV_TM_OP_DEL && !ref_allocated(ref, op->handle))
		return EINVAL;
	if (ref->outstanding == ref->cfg.max_ops)
		return ENOMEM;
	if (op->opcode == DPV_TM_OP_ADD) {
		if (ref->free_cnt == 0)
			return ENOMEM;
		h = ref->free_q[ref->free_head];
		ref->free_head = (ref->free_head + 1) % ref->cfg.max_num_tags;
		ref->free_cnt--;
		slot = &ref->slots[h];
		slot->allocated = true;
		slot->tag = op->tag;
		slot->mask = op->mask;
		slot->recv_wr_id = op->recv_wr_id;
		slot->num_sge = op->num_sge;
		if (op->num_sge > 0)
			memcpy(slot->sge, op->sg_list, op->num_sge * sizeof(*slot->sge));
		op->handle = h;
	}
	ref->outstanding++;
	return 0;
}

/* Position of @p handle in the list, or ref->listed when it is not there. */
static uint32_t
ref_find(const struct tm_ref *ref, uint32_t handle)
{
	uint32_t i;

	for (i = 0; i < ref->listed; i++)
		if (ref->list[i] == handle)
			break;
	return i;
}

static void
ref_unlink(struct tm_ref *ref, uint32_t pos)
{
	memmove(&ref->list[pos], &ref->list[pos + 1],
		(ref->listed - pos - 1) * sizeof(*ref->list));
	ref->listed--;
}

void
tm_ref_exec(struct tm_ref *ref, const struct dpv_tm_op *op, struct dpv_tm_cqe *cqe)
{
	bool signaled = op->flags & DPV_TM_OP_F_SIGNALED;
	uint32_t pos;

	ref->outstanding--;
	if (op->flags & DPV_TM_OP_F_SYNC)
		ref->s = op->unexpected_cnt;
	memset(cqe, 0, sizeof(*cqe));
	cqe->wr_id = op->wr_id;
	cqe->opcode = op->opcode;
	cqe->status = DPV_TM_ST_SUCCESS;
	cqe->visible = signaled;
	switch (op->opcode) {
	case DPV_TM_OP_ADD:
		ref->slots[op->handle].need = ref->u;
		ref->list[ref->listed++] = op->handle;
		cqe->handle = op->handle;
		break;
	case DPV_TM_OP_DEL:
		cqe->handle = op->handle;
		pos = ref_find(ref, op->handle);
		if (pos < ref->listed) {
			ref_unlink(ref, pos);
			cqe->release = true;
		} else {
			cqe->status = DPV_TM_ST_TM_ERR;
			cqe->visible = true;
		}
		break;
	default:
		break;
	}
	if (op->opcode != DPV_TM_OP_SYNC && ref->s != ref->u)
		cqe->flags = DPV_TM_CQE_F_SYNC_REQ;
}

void
tm_ref_match(struct tm_ref *ref, const struct dpv_tm_tmh *tmh, bool srq_wr_available,
	     struct dpv_tm_match *m)
{
	const struct ref_slot *slot;
	uint32_t i;

	memset(m, 0, sizeof(*m));
	if (tmh->opcode == IBV_TMH_EAGER || tmh->opcode == IBV_TMH_RNDV) {
		for (i = 0; i < ref->listed; i++) {
			slot = &ref->slots[ref->list[i]];
			if ((int32_t)(ref->s - slot->need) >= 0 &&
			    ((tmh->tag ^ slot->tag) & slot->mask) == 0)
				break;
		}
		if (i < ref->listed) {
			m->kind = tmh->opcode == IBV_TMH_EAGER ? DPV_TM_EXPECTED_EAGER :
								 DPV_TM_EXPECTED_RNDV;
			m->handle = ref->list[i];
			m->recv_wr_id = slot->recv_wr_id;
			m->sg_list = slot->sge;
			m->num_sge = slot->num_sge;
			ref_unlink(ref, i);
			return;
		}
	}
	if (!srq_wr_available) {
		m->kind = DPV_TM_RNR;
		return;
	}
	if (tmh->opcode != IBV_TMH_EAGER && tmh->opcode != IBV_TMH_RNDV) {
		m->kind = DPV_TM_NO_TAG;
		return;
	}
	m->kind = DPV_TM_UNEXPECTED;
	ref->u++;
	if ((uint32_t)(ref->u - ref->s) > ref->cfg.sync_threshold)
		m->flags = DPV_TM_CQE_F_SYNC_REQ;
}

int
tm_ref_release(struct tm_ref *ref, uint32_t handle)
{
	if (!ref_allocated(ref, handle))
		return EINVAL;
	ref->slots[handle].allocated = false;
	ref->free_q[(ref->free_head + ref->free_cnt) % ref->cfg.max_num_tags] = handle;
	ref->free_cnt++;
	return 0;
}

uint32_t
tm_ref_unexpected(const struct tm_ref *ref)
{
	return ref->u;
}

uint32_t
tm_ref_synced(const struct tm_ref *ref)
{
	return ref->s;
}
