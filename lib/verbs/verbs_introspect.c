/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Introspection of TM SRQs (dpv_verbs_tm_query(), dpv_verbs_tm_tags()) and of the
 * device's CM ids (dpv_verbs_query_cm()). The tag list and the phase counters are the
 * device side's of lib/tm, the CM's table the engine's, written by whichever thread
 * owns the device without locks; they are read here as the control path reads device
 * state, holding the device's owner flag, so nothing changes while they are read.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dpv_verbs.h"
#include "verbs_priv.h"

/* Entries read from lib/tm per step; the device is held for all of them. */
#define TAGS_STEP 64u

int dpv_verbs_tm_query(struct ibv_srq *ibsrq, struct dpv_verbs_tm_state *st)
{
	struct dpv_srq_v *srq;
	struct dpv_tm_stats ts;
	struct dpv_dev *dev;
	struct dpv_tm *tm;

	if (ibsrq == NULL || st == NULL)
		return EINVAL;
	srq = to_srq(ibsrq);
	if (!srq->tm)
		return EINVAL;
	dev = srq->ctx->dev;
	tm = srq->srq->tm;
	memset(st, 0, sizeof(*st));
	dpv_dev_own(dev);
	dpv_tm_stats_get(tm, &ts);
	st->unexpected = dpv_tm_unexpected(tm);
	st->synced = dpv_tm_synced(tm);
	st->ops_outstanding = dpv_tm_ops_outstanding(tm);
	dpv_dev_disown(dev);
	st->max_num_tags = dpv_tm_config_get(tm)->max_num_tags;
	st->max_ops = dpv_tm_config_get(tm)->max_ops;
	st->listed = ts.listed;
	st->allocated = ts.allocated;
	st->adds = ts.adds;
	st->dels = ts.dels;
	st->del_errors = ts.del_errors;
	st->syncs = ts.syncs;
	st->expected = ts.expected;
	st->unexpected_msgs = ts.unexpected;
	st->no_tag = ts.no_tag;
	st->rnr = ts.rnr;
	return 0;
}

int dpv_verbs_tm_tags(struct ibv_srq *ibsrq, uint32_t from, struct dpv_verbs_tm_tag *tags,
		      unsigned int n)
{
	struct dpv_tm_entry_info info[TAGS_STEP];
	struct dpv_srq_v *srq;
	struct dpv_dev *dev;
	unsigned int got = 0;

	if (ibsrq == NULL || (tags == NULL && n != 0))
		return -EINVAL;
	srq = to_srq(ibsrq);
	if (!srq->tm)
		return -EINVAL;
	dev = srq->ctx->dev;
	dpv_dev_own(dev);
	while (got < n) {
		uint32_t want = n - got < TAGS_STEP ? n - got : TAGS_STEP;
		uint32_t k = dpv_tm_entries(srq->srq->tm, from, info, want);

		for (uint32_t i = 0; i < k; i++) {
			struct dpv_verbs_tm_tag *t = &tags[got++];

			*t = (struct dpv_verbs_tm_tag){
				.handle = info[i].handle, .need = info[i].need, .seq = info[i].seq,
				.tag = info[i].tag, .mask = info[i].mask,
				.recv_wr_id = info[i].recv_wr_id, .addr = info[i].sge.addr,
				.length = info[i].sge.length, .lkey = info[i].sge.lkey,
				.total_length = info[i].length, .num_sge = info[i].num_sge,
				.eligible = info[i].eligible,
			};
		}
		if (k < want)
			break;
		from = info[k - 1].handle + 1;
	}
	dpv_dev_disown(dev);
	return (int)got;
}

int dpv_verbs_query_cm(struct ibv_context *context, struct dpv_verbs_cm_id *ids,
		       unsigned int n)
{
	struct dpv_dev_cm_info *info = NULL;
	uint32_t max = n < DPV_DEV_CM_LIST_MAX ? n : DPV_DEV_CM_LIST_MAX, total, i;

	if (context == NULL || (ids == NULL && n != 0))
		return -EINVAL;
	if (max != 0 && (info = calloc(max, sizeof(*info))) == NULL)
		return -ENOMEM;
	/* dpv_dev_cm_list() holds the device for the copy. */
	(void)dpv_dev_cm_list(to_ctx(context)->dev, info, max, &total);
	for (i = 0; i < max && i < total; i++) {
		struct dpv_verbs_cm_id *o = &ids[i];

		memset(o, 0, sizeof(*o));
		o->id = info[i].id;
		o->remote_id = info[i].remote_id;
		snprintf(o->state, sizeof(o->state), "%s", dpv_dev_cm_info_state(&info[i]));
		o->ud = info[i].ud;
		o->retries = info[i].retries;
		o->peer_ipv4 = info[i].peer_ip;
		o->listen_id = info[i].listen_id;
		o->service_id = info[i].service_id;
		o->local_qpn = info[i].local_qpn;
		o->remote_qpn = info[i].remote_qpn;
	}
	free(info);
	return (int)total;
}
