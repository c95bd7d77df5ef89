/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Objects by number: create, destroy, show objects; the devices and their counters.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_ethdev.h>

#include "dpv_verbs.h"
#include "testpmd.h"

/* Baselines of `clear counters`, by device and by QP id. */
static struct dpv_verbs_xstat *dev_base[TP_MAX_DEVS];
static int dev_base_n[TP_MAX_DEVS];
static struct dpv_verbs_xstat *qp_base[TP_MAX_OBJS + 1];
static int qp_base_n[TP_MAX_OBJS + 1];
static struct {
	uint32_t sync_reqs;
	uint32_t unexp;
} srq_base[TP_MAX_OBJS + 1];
static struct rte_eth_stats eth_base[TP_MAX_DEVS];

static uint32_t free_id(enum tp_kind kind)
{
	for (uint32_t i = 1; i <= TP_MAX_OBJS; i++)
		if (!tp.obj[kind][i].used)
			return i;
	return 0;
}

int tp_obj_dev(enum tp_kind kind, uint32_t id)
{
	return (int)tp.obj[kind][id].dev;
}

static uint32_t no_room(const char *cmd, enum tp_kind kind)
{
	tp_err(cmd, ENOSPC, "%u %ss already; destroy one first", TP_MAX_OBJS, tp_kind_name(kind));
	return 0;
}

uint32_t tp_new_pd(unsigned int dev)
{
	uint32_t id = free_id(TP_PD);
	struct ibv_pd *pd;

	if (id == 0)
		return no_room("create pd", TP_PD);
	pd = ibv_alloc_pd(tp.dev[dev].ctx);
	if (pd == NULL) {
		tp_err("create pd", errno, "ibv_alloc_pd failed");
		return 0;
	}
	tp.obj[TP_PD][id] = (struct tp_obj){.used = true, .dev = dev, .u.pd = pd};
	tp_out("pd %u on %s", id, tp.dev[dev].name);
	return id;
}

uint32_t tp_new_cq(unsigned int dev, uint32_t size, bool ex)
{
	uint32_t id = free_id(TP_CQ);
	struct tp_obj *o;
	struct ibv_cq_ex *cq_ex = NULL;
	struct ibv_cq *cq;
	struct tp_wc *stash;

	if (id == 0)
		return no_room("create cq", TP_CQ);
	stash = calloc(TP_CQ_STASH, sizeof(*stash));
	if (stash == NULL) {
		tp_err("create cq", ENOMEM, "no memory for the console's side of the CQ");
		return 0;
	}
	if (ex) {
		struct ibv_cq_init_attr_ex attr = {
			.cqe = size,
			.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM |
				    IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP |
				    IBV_WC_EX_WITH_TM_INFO,
		};

		cq_ex = ibv_create_cq_ex(tp.dev[dev].ctx, &attr);
		cq = cq_ex != NULL ? ibv_cq_ex_to_cq(cq_ex) : NULL;
	} else {
		cq = ibv_create_cq(tp.dev[dev].ctx, (int)size, NULL, NULL, 0);
	}
	if (cq == NULL) {
		int err = errno;

		free(stash);
		tp_err("create cq", err, "size %u refused (the device's max_cqe: show port %s)",
		       size, tp.dev[dev].name);
		return 0;
	}
	o = &tp.obj[TP_CQ][id];
	*o = (struct tp_obj){.used = true, .dev = dev};
	o->u.cq.cq = cq;
	o->u.cq.cq_ex = cq_ex;
	o->u.cq.size = (uint32_t)cq->cqe;
	o->u.cq.stash = stash;
	tp_out("cq %u on %s: %u entries, %s", id, tp.dev[dev].name, o->u.cq.size,
	       ex ? "extended (TM info)" : "legacy");
	return id;
}

uint32_t tp_new_srq(uint32_t pd, uint32_t max_wr, uint32_t tm_cq, uint32_t tags, uint32_t ops)
{
	struct tp_obj *p = &tp.obj[TP_PD][pd], *o;
	struct ibv_srq_init_attr_ex attr;
	uint32_t id = free_id(TP_SRQ);
	struct ibv_srq *srq;

	if (id == 0)
		return no_room("create srq", TP_SRQ);
	if (tm_cq != 0 && tp.obj[TP_CQ][tm_cq].dev != p->dev) {
		tp_err("create srq", EINVAL, "cq %u is on %s, pd %u on %s: both on one device",
		       tm_cq, tp.dev[tp.obj[TP_CQ][tm_cq].dev].name, pd, tp.dev[p->dev].name);
		return 0;
	}
	memset(&attr, 0, sizeof(attr));
	attr.attr.max_wr = max_wr;
	attr.attr.max_sge = 1;
	attr.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD;
	attr.srq_type = IBV_SRQT_BASIC;
	attr.pd = p->u.pd;
	if (tm_cq != 0) {
		attr.comp_mask |= IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_TM;
		attr.srq_type = IBV_SRQT_TM;
		attr.cq = tp.obj[TP_CQ][tm_cq].u.cq.cq;
		attr.tm_cap.max_num_tags = tags;
		attr.tm_cap.max_ops = ops;
	}
	srq = ibv_create_srq_ex(tp.dev[p->dev].ctx, &attr);
	if (srq == NULL) {
		struct ibv_device_attr_ex dev;
		int err = errno;

		if (ibv_query_device_ex(tp.dev[p->dev].ctx, NULL, &dev) == 0)
			tp_err("create srq", err, "refused: size %u (max %d), tags %u (max %u), "
			       "ops %u (max %u)", max_wr, dev.orig_attr.max_srq_wr, tags,
			       dev.tm_caps.max_num_tags, ops, dev.tm_caps.max_ops);
		else
			tp_err("create srq", err, "refused");
		return 0;
	}
	o = &tp.obj[TP_SRQ][id];
	memset(o, 0, sizeof(*o));
	o->used = true;
	o->dev = p->dev;
	o->pd_id = pd;
	o->u.srq.srq = srq;
	o->u.srq.tm = tm_cq != 0;
	o->u.srq.cq_id = tm_cq;
	o->u.srq.max_wr = attr.attr.max_wr;
	o->u.srq.max_num_tags = tags;
	o->u.srq.max_ops = ops;
	if (tm_cq != 0)
		tp_out("srq %u on %s: tag-matching, %u receives, %u tags, %u ops, completions on "
		       "cq %u", id, tp.dev[p->dev].name, o->u.srq.max_wr, tags, ops, tm_cq);
	else
		tp_out("srq %u on %s: basic, %u receives", id, tp.dev[p->dev].name, o->u.srq.max_wr);
	return id;
}

uint32_t tp_new_qp(uint32_t pd, enum ibv_qp_type type, uint32_t cq, uint32_t srq,
		   uint32_t max_send_wr, uint32_t max_recv_wr)
{
	struct tp_obj *p = &tp.obj[TP_PD][pd], *o;
	struct ibv_qp_init_attr ia;
	uint32_t id = free_id(TP_QP);
	struct ibv_qp *qp;

	if (id == 0)
		return no_room("create qp", TP_QP);
	if (tp.obj[TP_CQ][cq].dev != p->dev || (srq != 0 && tp.obj[TP_SRQ][srq].dev != p->dev)) {
		tp_err("create qp", EINVAL, "pd %u, its CQ and its SRQ must be on one device", pd);
		return 0;
	}
	memset(&ia, 0, sizeof(ia));
	ia.qp_type = type;
	ia.send_cq = ia.recv_cq = tp.obj[TP_CQ][cq].u.cq.cq;
	ia.srq = srq != 0 ? tp.obj[TP_SRQ][srq].u.srq.srq : NULL;
	ia.cap.max_send_wr = max_send_wr;
	ia.cap.max_recv_wr = srq != 0 ? 0 : max_recv_wr;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = srq != 0 ? 0 : 1;
	qp = ibv_create_qp(p->u.pd, &ia);
	if (qp == NULL) {
		tp_err("create qp", errno, "refused (caps: send %u, recv %u; show port %s has the "
		       "limits)", max_send_wr, max_recv_wr, tp.dev[p->dev].name);
		return 0;
	}
	o = &tp.obj[TP_QP][id];
	memset(o, 0, sizeof(*o));
	o->used = true;
	o->dev = p->dev;
	o->pd_id = pd;
	o->u.qp.qp = qp;
	o->u.qp.type = type;
	o->u.qp.send_cq = o->u.qp.recv_cq = cq;
	o->u.qp.srq_id = srq;
	o->u.qp.max_send_wr = ia.cap.max_send_wr;
	o->u.qp.max_recv_wr = ia.cap.max_recv_wr;
	/* PSNs differ between QPs, as the ibverbs-utils pick them. */
	o->u.qp.sq_psn = (qp->qp_num * 2654435761u) & 0xffffff;
	if (type == IBV_QPT_UD) {
		struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = 0x11111111};
		int ret = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					IBV_QP_QKEY);

		if (ret == 0) {
			a.qp_state = IBV_QPS_RTR;
			ret = ibv_modify_qp(qp, &a, IBV_QP_STATE);
		}
		if (ret == 0) {
			a.qp_state = IBV_QPS_RTS;
			a.sq_psn = o->u.qp.sq_psn;
			ret = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
		}
		if (ret != 0)
			tp_err("create qp", ret, "the UD QP did not reach RTS");
	}
	tp_out("qp %u on %s: %s, qp_num %u, cq %u, %s, send %u, recv %u", id, tp.dev[p->dev].name,
	       type == IBV_QPT_RC ? "RC" : "UD", qp->qp_num, cq, srq != 0 ? "srq" : "own RQ",
	       o->u.qp.max_send_wr, o->u.qp.max_recv_wr);
	if (srq != 0)
		tp_out("qp %u takes its receives from srq %u", id, srq);
	return id;
}

/* Buffers by id (their wr_id): ids are never reused, the map keeps the last 2^16. */
#define BUF_MAP 65536u
static struct tp_buf *buf_map[BUF_MAP];
static uint64_t next_buf_id = 1;

struct tp_buf *tp_buf_find(uint64_t wr_id)
{
	struct tp_buf *b = buf_map[wr_id % BUF_MAP];

	return b != NULL && b->id == wr_id ? b : NULL;
}

uint64_t tp_next_id(void)
{
	return next_buf_id++;
}

void tp_buf_renew(struct tp_buf *b)
{
	if (buf_map[b->id % BUF_MAP] == b)
		buf_map[b->id % BUF_MAP] = NULL;
	b->id = next_buf_id++;
	buf_map[b->id % BUF_MAP] = b;
}

struct tp_buf *tp_buf_new(struct ibv_pd *pd, uint32_t len, struct tp_buf **list)
{
	struct tp_buf *b = calloc(1, sizeof(*b));

	if (b == NULL)
		return NULL;
	b->len = len;
	b->addr = calloc(1, len > 0 ? len : 1);
	if (b->addr != NULL)
		b->mr = ibv_reg_mr(pd, b->addr, len > 0 ? len : 1,
				   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_WRITE);
	if (b->mr == NULL) {
		free(b->addr);
		free(b);
		return NULL;
	}
	b->id = next_buf_id++;
	buf_map[b->id % BUF_MAP] = b;
	b->next = *list;
	*list = b;
	return b;
}

void tp_bufs_free(struct tp_buf **list)
{
	while (*list != NULL) {
		struct tp_buf *b = *list;

		*list = b->next;
		if (buf_map[b->id % BUF_MAP] == b)
			buf_map[b->id % BUF_MAP] = NULL;
		ibv_dereg_mr(b->mr);
		free(b->addr);
		free(b);
	}
}

/* ---- create ---- */

/* Option words after the fixed ones: "name value" pairs and lone flags. */
static const char *opt_val(const struct tp_args *a, unsigned int from, const char *name,
			   bool *present)
{
	for (unsigned int i = from; i < a->n; i++) {
		if (strcmp(a->w[i], name) == 0) {
			*present = true;
			return i + 1 < a->n ? a->w[i + 1] : NULL;
		}
	}
	*present = false;
	return NULL;
}

/* Every word from @p from on is a known option (with its value when it takes one). */
static int opts_check(const char *cmd, const struct tp_args *a, unsigned int from,
		      const char *const *with_value, const char *const *flags)
{
	for (unsigned int i = from; i < a->n; i++) {
		bool ok = false;

		for (unsigned int k = 0; with_value != NULL && with_value[k] != NULL; k++)
			if (strcmp(a->w[i], with_value[k]) == 0) {
				if (i + 1 == a->n)
					return tp_err(cmd, EINVAL, "'%s' needs a value", a->w[i]);
				i++;
				ok = true;
				break;
			}
		for (unsigned int k = 0; !ok && flags != NULL && flags[k] != NULL; k++)
			ok = strcmp(a->w[i], flags[k]) == 0;
		if (!ok)
			return tp_err(cmd, EINVAL, "unknown word '%s'; `help %s` shows the syntax",
				      a->w[i], a->w[0]);
	}
	return 0;
}

int tp_opt_u64(const char *cmd, const struct tp_args *a, unsigned int from, const char *name,
	       uint64_t min, uint64_t max, uint64_t def, uint64_t *out)
{
	bool present;
	const char *v = opt_val(a, from, name, &present);

	if (!present) {
		*out = def;
		return 0;
	}
	return tp_num(cmd, name, v, min, max, out);
}

int tp_opt_flag(const struct tp_args *a, unsigned int from, const char *name)
{
	bool present;

	(void)opt_val(a, from, name, &present);
	return present;
}

int tp_opts_check(const char *cmd, const struct tp_args *a, unsigned int from,
		  const char *const *with_value, const char *const *flags)
{
	return opts_check(cmd, a, from, with_value, flags);
}

static int create_mr(const struct tp_args *a)
{
	static const char *const wv[] = {"access", "fill", NULL};
	const char *cmd = "create mr";
	unsigned int access = 0;
	uint32_t pd, id;
	struct tp_obj *p, *o;
	bool present;
	const char *acc;
	uint64_t size, fill;
	void *buf;

	if ((p = tp_get(cmd, TP_PD, a->n > 2 ? a->w[2] : NULL, &pd)) == NULL)
		return -1;
	if (a->n < 4)
		return tp_err(cmd, EINVAL, "needs a size: create mr <pd> <size>");
	if (tp_num(cmd, "size", a->w[3], 1, 1u << 30, &size) != 0 ||
	    opts_check(cmd, a, 4, wv, NULL) != 0 ||
	    tp_opt_u64(cmd, a, 4, "fill", 0, 255, 0, &fill) != 0)
		return -1;
	acc = opt_val(a, 4, "access", &present);
	if (!present)
		acc = "l,w,r";
	for (const char *c = acc; *c != '\0'; c++) {
		switch (*c) {
		case 'l': access |= IBV_ACCESS_LOCAL_WRITE; break;
		case 'w': access |= IBV_ACCESS_REMOTE_WRITE; break;
		case 'r': access |= IBV_ACCESS_REMOTE_READ; break;
		case ',': break;
		default:
			return tp_err(cmd, EINVAL, "access '%s': letters l, w, r separated by commas",
				      acc);
		}
	}
	id = free_id(TP_MR);
	if (id == 0) {
		no_room(cmd, TP_MR);
		return -1;
	}
	buf = aligned_alloc(4096, (size + 4095) & ~(uint64_t)4095);
	if (buf == NULL)
		return tp_err(cmd, ENOMEM, "no memory for %" PRIu64 " bytes", size);
	memset(buf, (int)fill, size);
	o = &tp.obj[TP_MR][id];
	*o = (struct tp_obj){.used = true, .dev = p->dev, .pd_id = pd};
	o->u.mr.buf = buf;
	o->u.mr.mr = ibv_reg_mr(p->u.pd, buf, size, (int)access);
	if (o->u.mr.mr == NULL) {
		int err = errno;

		free(buf);
		o->used = false;
		return tp_err(cmd, err, "ibv_reg_mr refused access '%s' (remote write needs l)", acc);
	}
	tp_out("mr %u on %s: %" PRIu64 " bytes at 0x%" PRIxPTR ", lkey 0x%x, rkey 0x%x, access %s",
	       id, tp.dev[p->dev].name, size, (uintptr_t)buf, o->u.mr.mr->lkey, o->u.mr.mr->rkey,
	       acc);
	return 0;
}

static int create_cq(const struct tp_args *a)
{
	static const char *const wv[] = {"size", NULL}, *const fl[] = {"ex", NULL};
	uint64_t size;
	int dev;

	if ((dev = tp_dev_arg("create cq", a->n > 2 ? a->w[2] : NULL)) < 0)
		return -1;
	if (opts_check("create cq", a, 3, wv, fl) != 0 ||
	    tp_opt_u64("create cq", a, 3, "size", 1, 1u << 22, 256, &size) != 0)
		return -1;
	return tp_new_cq((unsigned int)dev, (uint32_t)size, tp_opt_flag(a, 3, "ex")) ? 0 : -1;
}

static int create_srq(const struct tp_args *a)
{
	static const char *const wv[] = {"size", "tm", "tags", "ops", NULL};
	const char *cmd = "create srq";
	uint64_t size, tags, ops;
	uint32_t pd, cq = 0;
	bool tm;

	if (tp_get(cmd, TP_PD, a->n > 2 ? a->w[2] : NULL, &pd) == NULL)
		return -1;
	if (opts_check(cmd, a, 3, wv, NULL) != 0 ||
	    tp_opt_u64(cmd, a, 3, "size", 1, UINT32_MAX, 64, &size) != 0 ||
	    tp_opt_u64(cmd, a, 3, "tags", 1, UINT32_MAX, 64, &tags) != 0 ||
	    tp_opt_u64(cmd, a, 3, "ops", 1, UINT32_MAX, 16, &ops) != 0)
		return -1;
	{
		const char *v = opt_val(a, 3, "tm", &tm);

		if (tm && tp_get(cmd, TP_CQ, v, &cq) == NULL)
			return -1;
	}
	if (!tm && (tp_opt_flag(a, 3, "tags") || tp_opt_flag(a, 3, "ops")))
		return tp_err(cmd, EINVAL, "tags and ops are for a tag-matching SRQ: add tm <cq>");
	return tp_new_srq(pd, (uint32_t)size, cq, (uint32_t)tags, (uint32_t)ops) ? 0 : -1;
}

static int create_qp(const struct tp_args *a)
{
	static const char *const wv[] = {"srq", "send", "recv", NULL};
	const char *cmd = "create qp";
	enum ibv_qp_type type;
	uint64_t send, recv;
	uint32_t pd, cq, srq = 0;
	bool has_srq;
	const char *v;

	if (tp_get(cmd, TP_PD, a->n > 2 ? a->w[2] : NULL, &pd) == NULL)
		return -1;
	if (a->n < 4 || (strcmp(a->w[3], "rc") != 0 && strcmp(a->w[3], "ud") != 0))
		return tp_err(cmd, EINVAL, "needs a type, rc or ud: create qp <pd> rc <cq>");
	type = strcmp(a->w[3], "rc") == 0 ? IBV_QPT_RC : IBV_QPT_UD;
	if (tp_get(cmd, TP_CQ, a->n > 4 ? a->w[4] : NULL, &cq) == NULL)
		return -1;
	if (opts_check(cmd, a, 5, wv, NULL) != 0 ||
	    tp_opt_u64(cmd, a, 5, "send", 0, UINT32_MAX, 64, &send) != 0 ||
	    tp_opt_u64(cmd, a, 5, "recv", 0, UINT32_MAX, 16, &recv) != 0)
		return -1;
	v = opt_val(a, 5, "srq", &has_srq);
	if (has_srq && tp_get(cmd, TP_SRQ, v, &srq) == NULL)
		return -1;
	return tp_new_qp(pd, type, cq, srq, (uint32_t)send, (uint32_t)recv) ? 0 : -1;
}

int tp_cmd_create(const struct tp_args *a)
{
	int dev;

	if (a->n < 2)
		return tp_err("create", EINVAL, "create what? pd, mr, cq, srq or qp (help objects)");
	if (strcmp(a->w[1], "pd") == 0) {
		if ((dev = tp_dev_arg("create pd", a->n > 2 ? a->w[2] : NULL)) < 0)
			return -1;
		if (a->n > 3)
			return tp_err("create pd", EINVAL, "takes only a device");
		return tp_new_pd((unsigned int)dev) ? 0 : -1;
	}
	if (strcmp(a->w[1], "mr") == 0)
		return create_mr(a);
	if (strcmp(a->w[1], "cq") == 0)
		return create_cq(a);
	if (strcmp(a->w[1], "srq") == 0)
		return create_srq(a);
	if (strcmp(a->w[1], "qp") == 0)
		return create_qp(a);
	return tp_err("create", EINVAL, "'%s' is not a kind: pd, mr, cq, srq or qp", a->w[1]);
}

/* ---- destroy ---- */

/* What still uses object @p id of @p kind, in words; NULL when nothing does. */
static const char *user_of(enum tp_kind kind, uint32_t id, char *buf, size_t len)
{
	for (uint32_t i = 1; i <= TP_MAX_OBJS; i++) {
		const struct tp_obj *q = &tp.obj[TP_QP][i], *s = &tp.obj[TP_SRQ][i];

		if (q->used && ((kind == TP_PD && q->pd_id == id) ||
				(kind == TP_CQ && (q->u.qp.send_cq == id || q->u.qp.recv_cq == id)) ||
				(kind == TP_SRQ && q->u.qp.srq_id == id))) {
			snprintf(buf, len, "qp %u", i);
			return buf;
		}
		if (s->used && ((kind == TP_PD && s->pd_id == id) ||
				(kind == TP_CQ && s->u.srq.tm && s->u.srq.cq_id == id))) {
			snprintf(buf, len, "srq %u", i);
			return buf;
		}
		if (kind == TP_PD && tp.obj[TP_MR][i].used && tp.obj[TP_MR][i].pd_id == id) {
			snprintf(buf, len, "mr %u", i);
			return buf;
		}
	}
	return NULL;
}

static int destroy_one(const char *cmd, enum tp_kind kind, uint32_t id)
{
	struct tp_obj *o = &tp.obj[kind][id];
	char user[32];
	int ret = 0;

	if (user_of(kind, id, user, sizeof(user)) != NULL)
		return tp_err(cmd, EBUSY, "%s %u is in use by %s: destroy that first",
			      tp_kind_name(kind), id, user);
	switch (kind) {
	case TP_QP:
		if (o->u.qp.ah != NULL)
			ibv_destroy_ah(o->u.qp.ah);
		ret = ibv_destroy_qp(o->u.qp.qp);
		if (ret == 0)
			tp_bufs_free(&o->u.qp.bufs);
		free(qp_base[id]);
		qp_base[id] = NULL;
		qp_base_n[id] = 0;
		break;
	case TP_SRQ:
		ret = ibv_destroy_srq(o->u.srq.srq);
		if (ret == 0)
			tp_bufs_free(&o->u.srq.bufs);
		srq_base[id].sync_reqs = srq_base[id].unexp = 0;
		break;
	case TP_CQ:
		ret = ibv_destroy_cq(o->u.cq.cq);
		if (ret == 0)
			free(o->u.cq.stash);
		break;
	case TP_MR:
		ret = ibv_dereg_mr(o->u.mr.mr);
		if (ret == 0)
			free(o->u.mr.buf);
		break;
	case TP_PD:
		ret = ibv_dealloc_pd(o->u.pd);
		break;
	default:
		break;
	}
	if (ret != 0)
		return tp_err(cmd, ret, "%s %u: the device refused; `show objects` for what uses it",
			      tp_kind_name(kind), id);
	o->used = false;
	tp_out("%s %u destroyed", tp_kind_name(kind), id);
	return 0;
}

int tp_cmd_destroy(const struct tp_args *a)
{
	int kind;
	uint32_t id;

	if (a->n < 2 || (kind = tp_kind_of(a->w[1])) < 0)
		return tp_err("destroy", EINVAL, "destroy pd|mr|cq|srq|qp <id>");
	if (tp_get("destroy", (enum tp_kind)kind, a->n > 2 ? a->w[2] : NULL, &id) == NULL)
		return -1;
	if (a->n > 3)
		return tp_err("destroy", EINVAL, "one object at a time");
	return destroy_one("destroy", (enum tp_kind)kind, id);
}

void tp_destroy_all(void)
{
	static const enum tp_kind order[] = {TP_QP, TP_SRQ, TP_CQ, TP_MR, TP_PD};

	for (unsigned int k = 0; k < sizeof(order) / sizeof(order[0]); k++)
		for (uint32_t i = TP_MAX_OBJS; i >= 1; i--)
			if (tp.obj[order[k]][i].used)
				(void)destroy_one("quit", order[k], i);
	for (unsigned int d = 0; d < TP_MAX_DEVS; d++) {
		free(dev_base[d]);
		dev_base[d] = NULL;
	}
}

/* ---- show ---- */

static const char *qp_state_name(enum ibv_qp_state s)
{
	static const char *const names[] = {"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"};

	return (unsigned int)s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}

enum ibv_qp_state tp_qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr attr;

	if (ibv_query_qp(qp, &attr, IBV_QP_STATE, &ia) != 0)
		return IBV_QPS_UNKNOWN;
	return attr.qp_state;
}

const char *tp_qp_state_name(struct ibv_qp *qp)
{
	return qp_state_name(tp_qp_state(qp));
}

static void gid_str(const union ibv_gid *g, char *buf, size_t len)
{
	snprintf(buf, len, "%04x:%04x:%04x:%04x:%04x:%04x:%04x:%04x",
		 g->raw[0] << 8 | g->raw[1], g->raw[2] << 8 | g->raw[3],
		 g->raw[4] << 8 | g->raw[5], g->raw[6] << 8 | g->raw[7],
		 g->raw[8] << 8 | g->raw[9], g->raw[10] << 8 | g->raw[11],
		 g->raw[12] << 8 | g->raw[13], g->raw[14] << 8 | g->raw[15]);
}

static void ipv4_str(uint32_t ip, char *buf, size_t len)
{
	snprintf(buf, len, "%u.%u.%u.%u", ip >> 24, (ip >> 16) & 255, (ip >> 8) & 255, ip & 255);
}

/* The device's MAC, from its node GUID (the MAC as an EUI-64): dpverbs gives a port
 * whose driver has none (a ring) a random one, which ethdev does not know. */
static void dev_mac(unsigned int d, struct rte_ether_addr *mac)
{
	__be64 guid = ibv_get_device_guid(tp.dev[d].ctx->device);
	const uint8_t *g = (const uint8_t *)&guid;
	const uint8_t m[6] = {g[0] ^ 2, g[1], g[2], g[5], g[6], g[7]};

	memcpy(mac->addr_bytes, m, sizeof(m));
}

static int show_devices(void)
{
	for (unsigned int i = 0; i < tp.n_devs; i++) {
		struct rte_ether_addr mac;
		struct ibv_port_attr pa;
		char ip[16];

		dev_mac(i, &mac);
		ipv4_str(tp.dev[i].ipv4, ip, sizeof(ip));
		if (ibv_query_port(tp.dev[i].ctx, 1, &pa) != 0)
			pa.state = IBV_PORT_NOP;
		tp_out("%s: DPDK port %u, %s, MAC " RTE_ETHER_ADDR_PRT_FMT ", IPv4 %s",
		       tp.dev[i].name, tp.dev[i].port_id,
		       pa.state == IBV_PORT_ACTIVE ? "link up" : "link down",
		       RTE_ETHER_ADDR_BYTES(&mac), ip);
	}
	return 0;
}

static int show_port(const struct tp_args *a)
{
	struct ibv_device_attr_ex dev;
	struct rte_ether_addr mac;
	struct ibv_port_attr pa;
	char ip[16], gid[48];
	int d;

	if ((d = tp_dev_arg("show port", a->n > 2 ? a->w[2] : NULL)) < 0)
		return -1;
	if (ibv_query_port(tp.dev[d].ctx, 1, &pa) != 0 ||
	    ibv_query_device_ex(tp.dev[d].ctx, NULL, &dev) != 0)
		return tp_err("show port", errno, "the device did not answer");
	dev_mac((unsigned int)d, &mac);
	ipv4_str(tp.dev[d].ipv4, ip, sizeof(ip));
	gid_str(&tp.dev[d].gid, gid, sizeof(gid));
	tp_out("%s (DPDK port %u)", tp.dev[d].name, tp.dev[d].port_id);
	tp_out("  link:   %s, %s", pa.state == IBV_PORT_ACTIVE ? "up" : "down",
	       ibv_port_state_str(pa.state));
	tp_out("  MAC:    " RTE_ETHER_ADDR_PRT_FMT, RTE_ETHER_ADDR_BYTES(&mac));
	tp_out("  IPv4:   %s", ip);
	tp_out("  MTU:    %u (active), %u (max)", 128u << pa.active_mtu, 128u << pa.max_mtu);
	tp_out("  GID 0:  %s (RoCE v2)", gid);
	tp_out("  caps:   max_qp %d, max_cqe %d, max_srq_wr %d, max_num_tags %u, max_ops %u",
	       dev.orig_attr.max_qp, dev.orig_attr.max_cqe, dev.orig_attr.max_srq_wr,
	       dev.tm_caps.max_num_tags, dev.tm_caps.max_ops);
	return 0;
}

static uint64_t base_of(const struct dpv_verbs_xstat *base, int n, int i, const char *name)
{
	if (base == NULL)
		return 0;
	/* The names and their order are the same on every call (dpv_verbs.h). */
	if (i < n && strcmp(base[i].name, name) == 0)
		return base[i].value;
	return 0;
}

static int read_xstats(struct ibv_context *ctx, struct ibv_qp *qp, struct dpv_verbs_xstat **out)
{
	int n = qp != NULL ? dpv_verbs_query_qp_xstats(qp, NULL, 0) :
			     dpv_verbs_query_xstats(ctx, NULL, 0);

	if (n <= 0)
		return n;
	*out = calloc((size_t)n, sizeof(**out));
	if (*out == NULL)
		return -ENOMEM;
	return qp != NULL ? dpv_verbs_query_qp_xstats(qp, *out, (unsigned int)n) :
			    dpv_verbs_query_xstats(ctx, *out, (unsigned int)n);
}

static int print_xstats(const char *title, struct ibv_context *ctx, struct ibv_qp *qp,
			const struct dpv_verbs_xstat *base, int n_base)
{
	struct dpv_verbs_xstat *xs = NULL;
	int n = read_xstats(ctx, qp, &xs), shown = 0;

	if (n < 0)
		return tp_err("show counters", -n, "the device's counters could not be read");
	tp_out("%s:", title);
	for (int i = 0; i < n; i++) {
		uint64_t v = xs[i].value - base_of(base, n_base, i, xs[i].name);

		if (v == 0)
			continue;
		tp_out("  %-32s %" PRIu64, xs[i].name, v);
		shown++;
	}
	if (shown == 0)
		tp_out("  (every counter is 0)");
	free(xs);
	return 0;
}

/* The bytes the port moved, which only DPDK's ethdev counts. */
static int print_eth(unsigned int d)
{
	struct rte_eth_stats st;
	int ret = rte_eth_stats_get(tp.dev[d].port_id, &st);

	if (ret != 0)
		return tp_err("show counters", -ret, "DPDK port %u has no stats", tp.dev[d].port_id);
	tp_out("  %-32s %" PRIu64, "ethdev.rx_bytes", st.ibytes - eth_base[d].ibytes);
	tp_out("  %-32s %" PRIu64, "ethdev.tx_bytes", st.obytes - eth_base[d].obytes);
	if (st.imissed != eth_base[d].imissed || st.ierrors != eth_base[d].ierrors ||
	    st.oerrors != eth_base[d].oerrors)
		tp_out("  %-32s %" PRIu64 " missed, %" PRIu64 " rx errors, %" PRIu64 " tx errors",
		       "ethdev.drops", st.imissed - eth_base[d].imissed,
		       st.ierrors - eth_base[d].ierrors, st.oerrors - eth_base[d].oerrors);
	return 0;
}

static int show_srq_counters(uint32_t id)
{
	struct tp_obj *s = &tp.obj[TP_SRQ][id];
	struct dpv_verbs_tm_state st;
	int ret;

	if (!s->u.srq.tm) {
		tp_out("srq %u (basic): no tag-matching counters; show counters %s has the device's",
		       id, tp.dev[s->dev].name);
		return 0;
	}
	ret = dpv_verbs_tm_query(s->u.srq.srq, &st);
	if (ret != 0)
		return tp_err("show counters", ret, "srq %u could not be read", id);
	tp_out("srq %u:", id);
	tp_out("  %-32s %" PRIu64, "matched", st.expected);
	tp_out("  %-32s %" PRIu64, "unexpected", st.unexpected_msgs);
	tp_out("  %-32s %" PRIu64, "no_tag", st.no_tag);
	tp_out("  %-32s %" PRIu64, "rnr (no receive posted)", st.rnr);
	tp_out("  %-32s %" PRIu64, "tag adds", st.adds);
	tp_out("  %-32s %" PRIu64, "tag dels", st.dels);
	tp_out("  %-32s %" PRIu64, "tag del errors (TM_ERR)", st.del_errors);
	tp_out("  %-32s %" PRIu64, "syncs", st.syncs);
	tp_out("  %-32s %u", "sync requests seen", s->u.srq.sync_reqs - srq_base[id].sync_reqs);
	return 0;
}

static int show_counters(const struct tp_args *a)
{
	const char *cmd = "show counters";
	uint32_t id;
	char title[64];
	int d;

	if (a->n == 2) {
		for (unsigned int i = 0; i < tp.n_devs; i++)
			if (print_xstats(tp.dev[i].name, tp.dev[i].ctx, NULL, dev_base[i],
					 dev_base_n[i]) != 0 || print_eth(i) != 0)
				return -1;
		return 0;
	}
	if (strcmp(a->w[2], "qp") == 0) {
		struct tp_obj *q = tp_get(cmd, TP_QP, a->n > 3 ? a->w[3] : NULL, &id);

		if (q == NULL)
			return -1;
		snprintf(title, sizeof(title), "qp %u (qp_num %u)", id, q->u.qp.qp->qp_num);
		return print_xstats(title, NULL, q->u.qp.qp, qp_base[id], qp_base_n[id]);
	}
	if (strcmp(a->w[2], "srq") == 0) {
		if (tp_get(cmd, TP_SRQ, a->n > 3 ? a->w[3] : NULL, &id) == NULL)
			return -1;
		return show_srq_counters(id);
	}
	if ((d = tp_dev_arg(cmd, a->w[2])) < 0)
		return -1;
	if (a->n > 3)
		return tp_err(cmd, EINVAL, "show counters [<dev> | qp <n> | srq <n>]");
	return print_xstats(tp.dev[d].name, tp.dev[d].ctx, NULL, dev_base[d], dev_base_n[d]) ||
	       print_eth((unsigned int)d);
}

int tp_cmd_clear(const struct tp_args *a)
{
	if (a->n != 2 || strcmp(a->w[1], "counters") != 0)
		return tp_err("clear", EINVAL, "clear counters");
	for (unsigned int i = 0; i < tp.n_devs; i++) {
		free(dev_base[i]);
		dev_base[i] = NULL;
		dev_base_n[i] = read_xstats(tp.dev[i].ctx, NULL, &dev_base[i]);
		if (rte_eth_stats_get(tp.dev[i].port_id, &eth_base[i]) != 0)
			memset(&eth_base[i], 0, sizeof(eth_base[i]));
	}
	for (uint32_t i = 1; i <= TP_MAX_OBJS; i++) {
		if (tp.obj[TP_QP][i].used) {
			free(qp_base[i]);
			qp_base[i] = NULL;
			qp_base_n[i] = read_xstats(NULL, tp.obj[TP_QP][i].u.qp.qp, &qp_base[i]);
		}
		if (tp.obj[TP_SRQ][i].used)
			srq_base[i].sync_reqs = tp.obj[TP_SRQ][i].u.srq.sync_reqs;
	}
	tp_out("counters cleared");
	return 0;
}

static void show_objects(void)
{
	unsigned int n = 0;

	for (uint32_t i = 1; i <= TP_MAX_OBJS; i++) {
		const struct tp_obj *o = &tp.obj[TP_PD][i];

		if (o->used && ++n)
			tp_out("pd  %-3u %s", i, tp.dev[o->dev].name);
	}
	for (uint32_t i = 1; i <= TP_MAX_OBJS; i++) {
		const struct tp_obj *o = &tp.obj[TP_MR][i];

		if (o->used && ++n)
			tp_out("mr  %-3u %s pd %u, %zu bytes at 0x%" PRIxPTR ", lkey 0x%x, rkey 0x%x",
			       i, tp.dev[o->dev].name, o->pd_id, o->u.mr.mr->length,
			       (uintptr_t)o->u.mr.mr->addr, o->u.mr.mr->lkey, o->u.mr.mr->rkey);
	}
	for (uint32_t i = 1; i <= TP_MAX_OBJS; i++) {
		const struct tp_obj *o = &tp.obj[TP_CQ][i];

		if (o->used && ++n)
			tp_out("cq  %-3u %s %u entries, %s", i, tp.dev[o->dev].name, o->u.cq.size,
			       o->u.cq.cq_ex != NULL ? "extended (TM info)" : "legacy");
	}
	for (uint32_t i = 1; i <= TP_MAX_OBJS; i++) {
		const struct tp_obj *o = &tp.obj[TP_SRQ][i];

		if (!o->used || !++n)
			continue;
		if (o->u.srq.tm)
			tp_out("srq %-3u %s pd %u, tag-matching: %u receives, max_num_tags %u, "
			       "max_ops %u, cq %u", i, tp.dev[o->dev].name, o->pd_id, o->u.srq.max_wr,
			       o->u.srq.max_num_tags, o->u.srq.max_ops, o->u.srq.cq_id);
		else
			tp_out("srq %-3u %s pd %u, basic: %u receives", i, tp.dev[o->dev].name,
			       o->pd_id, o->u.srq.max_wr);
	}
	for (uint32_t i = 1; i <= TP_MAX_OBJS; i++) {
		const struct tp_obj *o = &tp.obj[TP_QP][i];
		char srq[16] = "own RQ";

		if (!o->used || !++n)
			continue;
		if (o->u.qp.srq_id != 0)
			snprintf(srq, sizeof(srq), "srq %u", o->u.qp.srq_id);
		tp_out("qp  %-3u %s pd %u, %s, qp_num %u, %s, cq %u, %s, send %u, recv %u", i,
		       tp.dev[o->dev].name, o->pd_id, o->u.qp.type == IBV_QPT_RC ? "RC" : "UD",
		       o->u.qp.qp->qp_num, tp_qp_state_name(o->u.qp.qp), o->u.qp.send_cq, srq,
		       o->u.qp.max_send_wr, o->u.qp.max_recv_wr);
	}
	if (n == 0)
		tp_out("no objects; `help objects` says how to create them");
}

/* A hexdump of an MR's bytes, so that what a WRITE or READ moved can be seen. */
static int show_mr(const struct tp_args *a)
{
	const char *cmd = "show mr";
	uint64_t off, len;
	struct tp_obj *m;
	uint32_t id;

	if ((m = tp_get(cmd, TP_MR, a->n > 2 ? a->w[2] : NULL, &id)) == NULL)
		return -1;
	if (a->n > 5)
		return tp_err(cmd, EINVAL, "show mr <mr> [<offset> [<len>]]");
	if (a->n > 3 && tp_num(cmd, "offset", a->w[3], 0, m->u.mr.mr->length - 1, &off) != 0)
		return -1;
	if (a->n <= 3)
		off = 0;
	if (a->n > 4 && tp_num(cmd, "len", a->w[4], 1, 4096, &len) != 0)
		return -1;
	if (a->n <= 4)
		len = 32;
	if (len > m->u.mr.mr->length - off)
		len = m->u.mr.mr->length - off;
	for (uint64_t i = 0; i < len; i += 16) {
		char line[80];
		size_t o = (size_t)snprintf(line, sizeof(line), "mr %u +%-6" PRIu64, id, off + i);

		for (uint64_t k = i; k < len && k < i + 16; k++)
			o += (size_t)snprintf(line + o, sizeof(line) - o, " %02x",
					      ((const uint8_t *)m->u.mr.buf)[off + k]);
		tp_out("%s", line);
	}
	return 0;
}

/* The CM ids of a device, one line each (dpv_verbs_query_cm()). */
static int show_cm(const struct tp_args *a)
{
	struct dpv_verbs_cm_id *ids = NULL;
	char peer[16], qpn[12], rqpn[12];
	int d, n, got = 0;

	if (a->n > 3)
		return tp_err("show cm", EINVAL, "show cm <dev>");
	if ((d = tp_dev_arg("show cm", a->n > 2 ? a->w[2] : NULL)) < 0)
		return -1;
	n = dpv_verbs_query_cm(tp.dev[d].ctx, NULL, 0);
	if (n > 0) {
		ids = calloc((size_t)n, sizeof(*ids));
		if (ids == NULL)
			return tp_err("show cm", ENOMEM, "no memory for %d ids", n);
		got = dpv_verbs_query_cm(tp.dev[d].ctx, ids, (unsigned int)n);
		/* ids may have come or gone in between: show what the second look saw */
		if (got > n)
			got = n;
	}
	if (got < 0) {
		free(ids);
		return tp_err("show cm", -got, "the device did not answer");
	}
	tp_out("%s: %d CM id%s", tp.dev[d].name, got, got == 1 ? "" : "s");
	if (got > 0)
		tp_out("  %-10s %-13s %-3s %-15s %-18s %-8s %-8s %s", "id", "state", "ud", "peer",
		       "service", "qpn", "peer qpn", "retries");
	for (int i = 0; i < got; i++) {
		const struct dpv_verbs_cm_id *c = &ids[i];

		if (c->peer_ipv4 != 0)
			ipv4_str(c->peer_ipv4, peer, sizeof(peer));
		else
			snprintf(peer, sizeof(peer), "-");
		snprintf(qpn, sizeof(qpn), c->local_qpn ? "%u" : "-", c->local_qpn);
		snprintf(rqpn, sizeof(rqpn), c->remote_qpn ? "%u" : "-", c->remote_qpn);
		tp_out("  0x%08x %-13s %-3s %-15s 0x%016" PRIx64 " %-8s %-8s %u", c->id, c->state,
		       c->ud ? "yes" : "no", peer, c->service_id, qpn, rqpn, c->retries);
	}
	free(ids);
	return 0;
}

int tp_cmd_show(const struct tp_args *a)
{
	const char *w = a->n > 1 ? a->w[1] : "";

	if (strcmp(w, "devices") == 0 && a->n == 2)
		return show_devices();
	if (strcmp(w, "port") == 0)
		return show_port(a);
	if (strcmp(w, "counters") == 0)
		return show_counters(a);
	if (strcmp(w, "objects") == 0 && a->n == 2) {
		show_objects();
		return 0;
	}
	if (strcmp(w, "mr") == 0)
		return show_mr(a);
	if (strcmp(w, "tags") == 0)
		return tp_show_tags("show tags", a);
	if (strcmp(w, "unexpected") == 0)
		return tp_show_unexpected("show unexpected", a);
	if (strcmp(w, "phase") == 0)
		return tp_show_phase("show phase", a);
	if (strcmp(w, "cm") == 0)
		return show_cm(a);
	return tp_err("show", EINVAL, "show devices|port|counters|objects|mr|tags|unexpected|"
		      "phase|cm (help info)");
}
