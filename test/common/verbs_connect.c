/* SPDX-License-Identifier: BSD-3-Clause */
/* The connection set-up and bounded poll of verbs_connect.h. */
#include <string.h>

#include "helpers.h"
#include "verbs_connect.h"

static int modify(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask, const char *what,
		  const char **step)
{
	int ret = ibv_modify_qp(qp, a, mask);

	if (ret != 0 && step != NULL)
		*step = what;
	return ret;
}

static void init_attr(struct ibv_qp_attr *a, unsigned int access)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = IBV_QPS_INIT;
	a->pkey_index = 0;
	a->port_num = 1;
	a->qp_access_flags = access;
}

/* INIT, RTR, RTS of a connected QP; @p rc adds the reliability attributes. */
static int connected_to_rts(struct ibv_qp *qp, uint32_t sq_psn, const struct qp_peer *peer,
			    const struct conn_opts *o, bool rc, const char **step)
{
	const int rtr_rc = IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	const int rts_rc = IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			   IBV_QP_MAX_QP_RD_ATOMIC;
	struct ibv_qp_attr a;
	int ret;

	init_attr(&a, o->access);
	ret = modify(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
		     IBV_QP_ACCESS_FLAGS, "INIT", step);
	if (ret != 0)
		return ret;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = o->mtu != 0 ? o->mtu : IBV_MTU_1024;
	a.dest_qp_num = peer->qpn;
	a.rq_psn = peer->psn;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = peer->gid;
	a.ah_attr.grh.sgid_index = o->sgid_index;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	a.max_dest_rd_atomic = o->max_dest_rd_atomic;
	a.min_rnr_timer = o->min_rnr_timer;
	ret = modify(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
		     IBV_QP_RQ_PSN | (rc ? rtr_rc : 0), "RTR", step);
	if (ret != 0)
		return ret;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = o->timeout;
	a.retry_cnt = o->retry_cnt;
	a.rnr_retry = o->rnr_retry;
	a.sq_psn = sq_psn;
	a.max_rd_atomic = o->max_rd_atomic;
	return modify(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | (rc ? rts_rc : 0), "RTS", step);
}

int rc_qp_to_rts(struct ibv_qp *qp, uint32_t sq_psn, const struct qp_peer *peer,
		 const struct conn_opts *o, const char **step)
{
	return connected_to_rts(qp, sq_psn, peer, o, true, step);
}

int uc_qp_to_rts(struct ibv_qp *qp, uint32_t sq_psn, const struct qp_peer *peer,
		 const struct conn_opts *o, const char **step)
{
	return connected_to_rts(qp, sq_psn, peer, o, false, step);
}

int ud_qp_to_rts(struct ibv_qp *qp, uint32_t qkey, uint32_t sq_psn, const char **step)
{
	struct ibv_qp_attr a;
	int ret;

	init_attr(&a, 0);
	a.qkey = qkey;
	ret = modify(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY,
		     "INIT", step);
	if (ret != 0)
		return ret;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	ret = modify(qp, &a, IBV_QP_STATE, "RTR", step);
	if (ret != 0)
		return ret;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = sq_psn;
	return modify(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN, "RTS", step);
}

int poll_one_for(struct ibv_cq *cq, struct ibv_wc *wc, unsigned int ms)
{
	uint64_t end = now_ms() + ms;
	int got;

	while ((got = ibv_poll_cq(cq, 1, wc)) == 0 && now_ms() <= end)
		;
	return got < 0 ? -1 : got;
}

union ibv_gid gid_of_ipv4(uint32_t ipv4)
{
	union ibv_gid g;

	memset(&g, 0, sizeof(g));
	g.raw[10] = g.raw[11] = 0xff;
	g.raw[12] = (uint8_t)(ipv4 >> 24);
	g.raw[13] = (uint8_t)(ipv4 >> 16);
	g.raw[14] = (uint8_t)(ipv4 >> 8);
	g.raw[15] = (uint8_t)ipv4;
	return g;
}
