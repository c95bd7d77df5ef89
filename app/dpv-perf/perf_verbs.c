/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpv-perf: the verbs benchmarks' harness (perf_verbs.h): environment defaults, the two
 * devices, the sides of an RC QP pair and their connection, the setup in the output.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "perf_verbs.h"

static void
set_default(const char *name, const char *value)
{
	if (getenv(name) == NULL)
		setenv(name, value, 0);
}

bool
pv_env_defaults(void)
{
	if (getenv("DPV_EAL_ARGS") != NULL || getenv("DPV_CONFIG") != NULL)
		return false;
	set_default("DPV_EAL_ARGS", PV_DEFAULT_EAL_ARGS);
	set_default("DPV_RING_PAIRS", PV_DEFAULT_RING_PAIRS);
	set_default("DPV_PORT_IPV4", PV_DEFAULT_PORT_IPV4);
	return true;
}

const char *
pv_env_eal_args(void)
{
	const char *v = getenv("DPV_EAL_ARGS");

	return v != NULL ? v : "(from DPV_CONFIG)";
}

const char *
pv_env_port_ipv4(void)
{
	const char *v = getenv("DPV_PORT_IPV4");

	return v != NULL ? v : "(from DPV_CONFIG)";
}

const char *
pv_env_progress(void)
{
	const char *v = getenv("DPV_PROGRESS");

	return v != NULL && v[0] != '\0' ? v : "inline";
}

int
pv_open_pair(struct pv_dev dev[2])
{
	struct ibv_device **list;
	int n = 0, i;

	memset(dev, 0, 2 * sizeof(*dev));
	list = ibv_get_device_list(&n);
	if (list == NULL || n < 2) {
		/* The facade said why on stderr when it could not start. */
		perf_error("need two verbs devices, found %d (%s)", list != NULL ? n : 0,
			   strerror(errno));
		ibv_free_device_list(list);
		return -1;
	}
	for (i = 0; i < 2; i++) {
		snprintf(dev[i].name, sizeof(dev[i].name), "%s", ibv_get_device_name(list[i]));
		dev[i].ctx = ibv_open_device(list[i]);
		if (dev[i].ctx == NULL) {
			perf_error("ibv_open_device(%s): %s", dev[i].name, strerror(errno));
			goto fail;
		}
		dev[i].pd = ibv_alloc_pd(dev[i].ctx);
		if (dev[i].pd == NULL) {
			perf_error("ibv_alloc_pd(%s): %s", dev[i].name, strerror(errno));
			goto fail;
		}
		if (ibv_query_gid(dev[i].ctx, 1, 0, &dev[i].gid) != 0) {
			perf_error("ibv_query_gid(%s): %s", dev[i].name, strerror(errno));
			goto fail;
		}
	}
	ibv_free_device_list(list);
	return 0;
fail:
	ibv_free_device_list(list);
	(void)pv_close_pair(dev);
	return -1;
}

int
pv_destroyed(const char *what, int ret)
{
	if (ret == 0)
		return 0;
	perf_error("%s: %s", what, strerror(ret));
	return -1;
}

int
pv_close_pair(struct pv_dev dev[2])
{
	int rc = 0;

	for (int i = 0; i < 2; i++) {
		if (dev[i].parent != NULL)
			rc |= pv_destroyed("ibv_dealloc_pd (parent domain)",
					   ibv_dealloc_pd(dev[i].parent));
		if (dev[i].td != NULL)
			rc |= pv_destroyed("ibv_dealloc_td", ibv_dealloc_td(dev[i].td));
		dev[i].parent = NULL;
		dev[i].td = NULL;
		if (dev[i].pd != NULL)
			rc |= pv_destroyed("ibv_dealloc_pd", ibv_dealloc_pd(dev[i].pd));
		if (dev[i].ctx != NULL)
			rc |= pv_destroyed("ibv_close_device", ibv_close_device(dev[i].ctx));
		dev[i].pd = NULL;
		dev[i].ctx = NULL;
	}
	return rc;
}

int
pv_rc_init(struct ibv_qp *qp)
{
	return pv_rc_init_access(qp, IBV_ACCESS_LOCAL_WRITE);
}

int
pv_rc_init_access(struct ibv_qp *qp, unsigned int access)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.pkey_index = 0,
		.port_num = 1,
		.qp_access_flags = access,
	};
	int ret;

	ret = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			    IBV_QP_ACCESS_FLAGS);
	if (ret != 0) {
		perf_error("ibv_modify_qp(QP %u to INIT): %s", qp->qp_num, strerror(ret));
		return -1;
	}
	return 0;
}

int
pv_rc_connect(struct ibv_qp *qp, uint32_t peer_qpn, const union ibv_gid *peer_gid)
{
	return pv_rc_connect_rd(qp, peer_qpn, peer_gid, 1);
}

int
pv_rc_connect_rd(struct ibv_qp *qp, uint32_t peer_qpn, const union ibv_gid *peer_gid,
		 uint8_t rd_atomic)
{
	struct ibv_qp_attr rtr = {
		.qp_state = IBV_QPS_RTR,
		.path_mtu = IBV_MTU_1024,
		.dest_qp_num = peer_qpn,
		.rq_psn = 0,
		.max_dest_rd_atomic = rd_atomic,
		.min_rnr_timer = 1,
	};
	struct ibv_qp_attr rts = {
		.qp_state = IBV_QPS_RTS,
		.timeout = 14,
		.retry_cnt = 7,
		.rnr_retry = 7,
		.sq_psn = 0,
		.max_rd_atomic = rd_atomic,
	};
	int ret;

	rtr.ah_attr.is_global = 1;
	rtr.ah_attr.grh.dgid = *peer_gid;
	rtr.ah_attr.grh.hop_limit = 64;
	rtr.ah_attr.port_num = 1;
	ret = ibv_modify_qp(qp, &rtr, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			    IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			    IBV_QP_MIN_RNR_TIMER);
	if (ret == 0)
		ret = ibv_modify_qp(qp, &rts, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				    IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
	if (ret != 0) {
		perf_error("ibv_modify_qp(QP %u to RTR/RTS): %s", qp->qp_num, strerror(ret));
		return -1;
	}
	return 0;
}

uint64_t
pv_deadline(void)
{
	return perf_now_ns() + (uint64_t)(PV_STALL_SECONDS * 1e9);
}

bool
pv_stalled(uint64_t deadline, uint32_t *calls)
{
	return (++*calls & 4095) == 0 && perf_now_ns() > deadline;
}

int
pv_alloc_mr(const char *cmd, const struct pv_dev *d, size_t len, int access, uint8_t **buf,
	    struct ibv_mr **mr)
{
	/* aligned_alloc() wants a multiple of the alignment. */
	len = (len + 4095) & ~(size_t)4095;
	*buf = aligned_alloc(4096, len);
	if (*buf == NULL) {
		perf_error("%s: out of memory for %zu bytes", cmd, len);
		return -1;
	}
	memset(*buf, 0, len);
	*mr = ibv_reg_mr(d->pd, *buf, len, access);
	if (*mr == NULL) {
		perf_error("%s: ibv_reg_mr(%s, %zu bytes): %s", cmd, d->name, len,
			   strerror(errno));
		return -1;
	}
	return 0;
}

int
pv_use_td(struct pv_dev dev[2])
{
	struct ibv_td_init_attr ta = { .comp_mask = 0 };

	for (int i = 0; i < 2; i++) {
		struct ibv_parent_domain_init_attr pa = { .pd = dev[i].pd };

		dev[i].td = ibv_alloc_td(dev[i].ctx, &ta);
		if (dev[i].td == NULL) {
			perf_error("ibv_alloc_td(%s): %s", dev[i].name, strerror(errno));
			return -1;
		}
		pa.td = dev[i].td;
		dev[i].parent = ibv_alloc_parent_domain(dev[i].ctx, &pa);
		if (dev[i].parent == NULL) {
			perf_error("ibv_alloc_parent_domain(%s): %s", dev[i].name,
				   strerror(errno));
			return -1;
		}
	}
	return 0;
}

/* The PD the objects of @p d are made with. */
static struct ibv_pd *
obj_pd(const struct pv_dev *d)
{
	return d->parent != NULL ? d->parent : d->pd;
}

int
pv_side_cq(const char *cmd, struct pv_side *s, const struct pv_dev *d, int cqe)
{
	struct ibv_cq_init_attr_ex ca = {
		.cqe = (uint32_t)cqe,
		.wc_flags = IBV_WC_STANDARD_FLAGS | d->wc_flags,
		.comp_mask = d->parent != NULL ? IBV_CQ_INIT_ATTR_MASK_PD : 0,
		.parent_domain = d->parent,
	};
	struct ibv_cq_ex *cqx;

	if (d->parent != NULL || d->wc_flags != 0) {
		cqx = ibv_create_cq_ex(d->ctx, &ca);
		s->cq = cqx != NULL ? ibv_cq_ex_to_cq(cqx) : NULL;
	} else {
		s->cq = ibv_create_cq(d->ctx, cqe, NULL, NULL, 0);
	}
	if (s->cq == NULL) {
		perf_error("%s: ibv_create_cq(%s): %s", cmd, d->name, strerror(errno));
		return -1;
	}
	return 0;
}

int
pv_side_tm_srq(const char *cmd, struct pv_side *s, const struct pv_dev *d, int cqe,
	       uint32_t max_wr, uint32_t tags, uint32_t ops)
{
	struct ibv_cq_init_attr_ex ca = {
		.cqe = (uint32_t)cqe,
		.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_QP_NUM |
			    IBV_WC_EX_WITH_TM_INFO | d->wc_flags,
		.comp_mask = d->parent != NULL ? IBV_CQ_INIT_ATTR_MASK_PD : 0,
		.parent_domain = d->parent,
	};
	struct ibv_srq_init_attr_ex sa = {
		.attr = { .max_wr = max_wr, .max_sge = 1 },
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
			     IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_TM,
		.srq_type = IBV_SRQT_TM,
		.pd = obj_pd(d),
		.tm_cap = { .max_num_tags = tags, .max_ops = ops },
	};

	s->cqx = ibv_create_cq_ex(d->ctx, &ca);
	if (s->cqx == NULL) {
		perf_error("%s: ibv_create_cq_ex(%s, TM_INFO): %s", cmd, d->name,
			   strerror(errno));
		return -1;
	}
	s->cq = ibv_cq_ex_to_cq(s->cqx);
	sa.cq = s->cq;
	s->srq = ibv_create_srq_ex(d->ctx, &sa);
	if (s->srq == NULL) {
		perf_error("%s: ibv_create_srq_ex(%s, TM): %s", cmd, d->name, strerror(errno));
		return -1;
	}
	return 0;
}

int
pv_side_qp(const char *cmd, struct pv_side *s, const struct pv_dev *d, uint32_t sq_depth,
	   uint32_t rq_depth, uint32_t max_inline, unsigned int access)
{
	struct ibv_qp_init_attr qa = {
		.send_cq = s->cq,
		.recv_cq = s->cq,
		.srq = s->srq,
		.cap = {
			.max_send_wr = sq_depth,
			.max_recv_wr = s->srq != NULL ? 0 : rq_depth,
			.max_send_sge = 1,
			.max_recv_sge = 1,
			.max_inline_data = max_inline,
		},
		.qp_type = IBV_QPT_RC,
	};

	s->qp = ibv_create_qp(obj_pd(d), &qa);
	if (s->qp == NULL) {
		perf_error("%s: ibv_create_qp(%s): %s", cmd, d->name, strerror(errno));
		return -1;
	}
	return pv_rc_init_access(s->qp, access);
}

int
pv_connect_pair(struct pv_side side[2], const struct pv_dev dev[2])
{
	if (pv_rc_connect(side[0].qp, side[1].qp->qp_num, &dev[1].gid) != 0 ||
	    pv_rc_connect(side[1].qp, side[0].qp->qp_num, &dev[0].gid) != 0)
		return -1;
	return 0;
}

int
pv_side_teardown(struct pv_side *s)
{
	int rc = 0;

	if (s->qp != NULL)
		rc |= pv_destroyed("ibv_destroy_qp", ibv_destroy_qp(s->qp));
	if (s->srq != NULL)
		rc |= pv_destroyed("ibv_destroy_srq", ibv_destroy_srq(s->srq));
	if (s->cq != NULL)
		rc |= pv_destroyed("ibv_destroy_cq", ibv_destroy_cq(s->cq));
	if (s->slot_mr != NULL)
		rc |= pv_destroyed("ibv_dereg_mr", ibv_dereg_mr(s->slot_mr));
	if (s->data_mr != NULL)
		rc |= pv_destroyed("ibv_dereg_mr", ibv_dereg_mr(s->data_mr));
	free(s->slots);
	free(s->data);
	memset(s, 0, sizeof(*s));
	return rc;
}

void
pv_print_setup(bool defaulted)
{
	printf("  setup: %s DPV_EAL_ARGS=\"%s\" DPV_PORT_IPV4=%s\n"
	       "  progress: %s\n\n",
	       defaulted ? "dpv-perf's default:" : "from the environment:",
	       pv_env_eal_args(), pv_env_port_ipv4(), pv_env_progress());
}

void
pv_json_setup(struct perf_json *j, const struct pv_dev *dev, bool defaulted)
{
	if (dev != NULL) {
		perf_json_str(j, "devices", dev[0].name);
		perf_json_str(j, "peer", dev[1].name);
	}
	perf_json_bool(j, "env_defaulted", defaulted);
	perf_json_str(j, "eal_args", pv_env_eal_args());
	perf_json_str(j, "port_ipv4", pv_env_port_ipv4());
	perf_json_str(j, "progress", pv_env_progress());
}

void
pv_help_setup(void)
{
	printf("Runs with no setup: unless DPV_EAL_ARGS or DPV_CONFIG is set, dpv-perf sets\n"
	       "DPV_EAL_ARGS=\"%s\"\n"
	       "DPV_RING_PAIRS=%s DPV_PORT_IPV4=%s (devices dpv0, dpv1).\n",
	       PV_DEFAULT_EAL_ARGS, PV_DEFAULT_RING_PAIRS, PV_DEFAULT_PORT_IPV4);
}
