/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The devices, their counters, QPs, SRQs and CM ids as DPDK telemetry commands under
 * /dpverbs/ (doc/guides/telemetry.md), which DPDK's dpdk-telemetry.py reads from the
 * telemetry socket of any process on dpverbs whose EAL runs telemetry.
 *
 * Handlers run on EAL's telemetry thread while the devices run. Counters are read as
 * dpv_verbs_query_xstats() reads them (each an atomic load). A QP or an SRQ is looked
 * up and read while the handler owns the device (dpv_dev_own(), as the control path
 * does): ibv_destroy_qp() and ibv_destroy_srq() own it too, so an object is either
 * found whole or not found, never read while it is freed. The device's engine pauses
 * for that lookup only (microseconds); an unknown device, QP or SRQ, or parameters
 * that are not understood, answer null (the handler returns an error, as DPDK's own
 * commands do).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_telemetry.h>

#include "dpv_tm.h"
#include "verbs_priv.h"

#define XSTATS_MAX 256

/* Telemetry names take letters, digits, '_' and '/': xstats' dots become '_'. */
static void tel_name(char *dst, size_t n, const char *xstat)
{
	size_t i;

	for (i = 0; i + 1 < n && xstat[i] != '\0'; i++)
		dst[i] = xstat[i] == '.' ? '_' : xstat[i];
	dst[i] = '\0';
}

static void add_xstats(struct rte_tel_data *d, const struct dpv_verbs_xstat *xs, int n)
{
	char name[sizeof(xs[0].name)];

	for (int i = 0; i < n; i++) {
		tel_name(name, sizeof(name), xs[i].name);
		rte_tel_data_add_dict_u64(d, name, xs[i].value);
	}
}

/*
 * "dpv0" or "dpv0,<number>": the opened device, and the number when @p num is not
 * NULL (decimal or 0x hex, as ibv_rc_pingpong prints QPNs). NULL when not understood.
 */
static struct dpv_device *parse(const char *params, uint32_t *num)
{
	char name[IBV_SYSFS_NAME_MAX], *end;
	const char *comma;
	unsigned long v;
	size_t len;

	if (params == NULL || params[0] == '\0')
		return NULL;
	comma = strchr(params, ',');
	if ((comma == NULL) != (num == NULL))
		return NULL;
	len = comma != NULL ? (size_t)(comma - params) : strlen(params);
	if (len == 0 || len >= sizeof(name))
		return NULL;
	memcpy(name, params, len);
	name[len] = '\0';
	if (num != NULL) {
		errno = 0;
		v = strtoul(comma + 1, &end, 0);
		if (comma[1] == '\0' || *end != '\0' || errno != 0 || v > UINT32_MAX)
			return NULL;
		*num = (uint32_t)v;
	}
	return dpv_verbs_device_named(name);
}

static int tel_devices(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct dpv_device *devs[DPV_MAX_DEVS];
	unsigned int n = dpv_verbs_opened_devices(devs, DPV_MAX_DEVS);

	(void)cmd;
	(void)params;
	rte_tel_data_start_array(d, RTE_TEL_STRING_VAL);
	for (unsigned int i = 0; i < n; i++)
		rte_tel_data_add_array_string(d, devs[i]->ibdev.name);
	return 0;
}

static const char *mode_name(uint8_t mode)
{
	switch (mode) {
	case DPV_PROGRESS_LCORE:
		return "lcore";
	case DPV_PROGRESS_SERVICE:
		return "service";
	default:
		return "inline";
	}
}

static void ipv4_str(uint32_t ip, char *buf, size_t len)
{
	snprintf(buf, len, "%u.%u.%u.%u", ip >> 24, (ip >> 16) & 255, (ip >> 8) & 255, ip & 255);
}

static int tel_info(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct dpv_device *dv = parse(params, NULL);
	struct dpv_dev_port_info port;
	char buf[32];

	(void)cmd;
	if (dv == NULL)
		return -EINVAL;
	dpv_dev_port_info(dv->dev, &port);
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_string(d, "name", dv->ibdev.name);
	rte_tel_data_add_dict_int(d, "dpdk_port", port.ethdev_port);
	ipv4_str(port.ipv4, buf, sizeof(buf));
	rte_tel_data_add_dict_string(d, "ipv4", buf);
	rte_ether_format_addr(buf, sizeof(buf), &port.mac);
	rte_tel_data_add_dict_string(d, "mac", buf);
	rte_tel_data_add_dict_int(d, "mtu", port.mtu);
	rte_tel_data_add_dict_string(d, "progress",
				     mode_name(__atomic_load_n(&dv->dev->mode, __ATOMIC_RELAXED)));
	rte_tel_data_add_dict_int(d, "capturing", dpv_dev_capturing(dv->dev));
	return 0;
}

static int tel_counters(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct dpv_device *dv = parse(params, NULL);
	struct dpv_verbs_xstat *xs;
	int n;

	(void)cmd;
	if (dv == NULL)
		return -EINVAL;
	xs = calloc(XSTATS_MAX, sizeof(*xs));
	if (xs == NULL)
		return -ENOMEM;
	n = dpv_verbs_dev_xstats(dv->dev, xs, XSTATS_MAX);
	rte_tel_data_start_dict(d);
	add_xstats(d, xs, n < XSTATS_MAX ? n : XSTATS_MAX);
	free(xs);
	return 0;
}

static int tel_qps(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct dpv_device *dv = parse(params, NULL);
	unsigned int listed = 0;

	(void)cmd;
	if (dv == NULL)
		return -EINVAL;
	rte_tel_data_start_array(d, RTE_TEL_INT_VAL);
	dpv_dev_own(dv->dev);
	for (uint32_t qpn = 0; qpn < DPV_MAX_QP && listed < RTE_TEL_MAX_ARRAY_ENTRIES; qpn++) {
		if (dpv_xport_qp(dv->dev->xport, qpn) != NULL) {
			rte_tel_data_add_array_int(d, (int)qpn);
			listed++;
		}
	}
	dpv_dev_disown(dv->dev);
	return 0;
}

static const char *const qp_state_names[] = {"RESET", "INIT", "RTR", "RTS", "SQD", "SQE",
					     "ERR"};

static int tel_qp(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct dpv_verbs_xstat xs[64];
	uint32_t qpn, dest_qpn = 0, srq_id = 0;
	uint8_t type = 0, xrc = 0, state = 0;
	struct dpv_device *dv = parse(params, &qpn);
	struct dpv_qp *qp;
	bool has_srq = false;
	int n = 0;

	(void)cmd;
	if (dv == NULL)
		return -EINVAL;
	dpv_dev_own(dv->dev);
	qp = dpv_xport_qp(dv->dev->xport, qpn);
	if (qp != NULL) {
		type = qp->init.type;
		xrc = qp->init.xrc;
		state = qp->attr.state;
		dest_qpn = qp->attr.dest_qpn;
		has_srq = qp->init.srq != NULL;
		srq_id = has_srq ? qp->init.srq->id : 0;
		n = dpv_verbs_qp_xstats(qp, xs, 64);
	}
	dpv_dev_disown(dv->dev);
	if (qp == NULL)
		return -ENOENT;
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_int(d, "qpn", (int)qpn);
	rte_tel_data_add_dict_string(d, "type", type == DPV_QPT_UD ? "UD"
					       : type == DPV_QPT_UC ? "UC"
					       : xrc == DPV_XRC_INI ? "XRC_INI"
					       : xrc == DPV_XRC_TGT ? "XRC_TGT" : "RC");
	rte_tel_data_add_dict_string(d, "state",
				     state < sizeof(qp_state_names) / sizeof(qp_state_names[0]) ?
					     qp_state_names[state] : "?");
	if (type != DPV_QPT_UD)
		rte_tel_data_add_dict_int(d, "dest_qpn", (int)dest_qpn);
	rte_tel_data_add_dict_int(d, "srq", has_srq ? (int)srq_id : -1);
	add_xstats(d, xs, n < 64 ? n : 64);
	return 0;
}

static int tel_srqs(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct dpv_device *dv = parse(params, NULL);
	unsigned int listed = 0;

	(void)cmd;
	if (dv == NULL)
		return -EINVAL;
	rte_tel_data_start_array(d, RTE_TEL_INT_VAL);
	dpv_dev_own(dv->dev);
	for (const struct dpv_srq_v *s = dv->srqs; s != NULL && listed < RTE_TEL_MAX_ARRAY_ENTRIES;
	     s = s->next_on_dev, listed++)
		rte_tel_data_add_array_int(d, (int)s->srq->id);
	dpv_dev_disown(dv->dev);
	return 0;
}

static int tel_srq(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct dpv_tm_stats tm;
	uint32_t id, max_wr = 0, posted = 0, limit = 0, qps = 0;
	struct dpv_device *dv = parse(params, &id);
	const struct dpv_srq_v *s;
	bool found = false, is_tm = false, is_xrc = false, error = false;
	uint32_t xrc_srqn = 0;

	(void)cmd;
	if (dv == NULL)
		return -EINVAL;
	dpv_dev_own(dv->dev);
	for (s = dv->srqs; s != NULL; s = s->next_on_dev) {
		if (s->srq->id != id)
			continue;
		found = true;
		is_tm = s->srq->tm != NULL;
		is_xrc = s->srq->xrcd != 0;
		xrc_srqn = s->srq->xrc_srqn;
		max_wr = s->srq->max_wr;
		posted = __atomic_load_n(&s->srq->posted, __ATOMIC_RELAXED);
		limit = s->srq->limit;
		error = s->srq->error;
		qps = s->users;
		if (is_tm)
			dpv_tm_stats_get(s->srq->tm, &tm);
		break;
	}
	dpv_dev_disown(dv->dev);
	if (!found)
		return -ENOENT;
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_int(d, "srq", (int)id);
	rte_tel_data_add_dict_string(d, "type", is_tm ? "TM" : is_xrc ? "XRC" : "BASIC");
	if (is_xrc)
		rte_tel_data_add_dict_int(d, "xrc_srqn", (int)xrc_srqn);
	rte_tel_data_add_dict_int(d, "max_wr", (int)max_wr);
	rte_tel_data_add_dict_int(d, "posted", (int)posted);
	rte_tel_data_add_dict_int(d, "limit", (int)limit);
	rte_tel_data_add_dict_int(d, "error", error);
	rte_tel_data_add_dict_int(d, "qps", (int)qps);
	if (is_tm) {
		rte_tel_data_add_dict_u64(d, "tm_adds", tm.adds);
		rte_tel_data_add_dict_u64(d, "tm_dels", tm.dels);
		rte_tel_data_add_dict_u64(d, "tm_del_errors", tm.del_errors);
		rte_tel_data_add_dict_u64(d, "tm_syncs", tm.syncs);
		rte_tel_data_add_dict_u64(d, "tm_expected", tm.expected);
		rte_tel_data_add_dict_u64(d, "tm_unexpected", tm.unexpected);
		rte_tel_data_add_dict_u64(d, "tm_no_tag", tm.no_tag);
		rte_tel_data_add_dict_u64(d, "tm_rnr", tm.rnr);
		rte_tel_data_add_dict_u64(d, "tm_listed", tm.listed);
		rte_tel_data_add_dict_u64(d, "tm_allocated", tm.allocated);
	}
	return 0;
}

/*
 * A device's CM ids as a dict of columns, each an array of the ids' values in the same
 * order: DPDK 22.11's telemetry takes arrays and dicts inside a dict, but no dict
 * inside an array.
 */
enum { CM_COL_ID, CM_COL_STATE, CM_COL_UD, CM_COL_PEER, CM_COL_SERVICE, CM_COL_LISTEN,
       CM_COL_REMOTE, CM_COL_LQPN, CM_COL_RQPN, CM_COL_RETRIES, CM_COLS };

static const struct {
	const char *name;
	enum rte_tel_value_type type;
} cm_cols[CM_COLS] = {
	[CM_COL_ID] = {"id", RTE_TEL_U64_VAL},
	[CM_COL_STATE] = {"state", RTE_TEL_STRING_VAL},
	[CM_COL_UD] = {"ud", RTE_TEL_U64_VAL},
	[CM_COL_PEER] = {"peer", RTE_TEL_STRING_VAL},
	[CM_COL_SERVICE] = {"service_id", RTE_TEL_STRING_VAL},
	[CM_COL_LISTEN] = {"listen_id", RTE_TEL_U64_VAL},
	[CM_COL_REMOTE] = {"remote_id", RTE_TEL_U64_VAL},
	[CM_COL_LQPN] = {"local_qpn", RTE_TEL_U64_VAL},
	[CM_COL_RQPN] = {"remote_qpn", RTE_TEL_U64_VAL},
	[CM_COL_RETRIES] = {"retries", RTE_TEL_U64_VAL},
};

/*
 * The rows a reply holds at most. DPDK 22.11 writes a reply into 16 KB and leaves out
 * the array entries that do not fit, which would shift one column against the next:
 * the rows stop where the longest ones (about 125 characters of JSON) still fit, and
 * "ids" tells how many there are.
 */
#define TEL_CM_ROWS 120u

/* Id @p f's row into the columns @p col. */
static void cm_row(struct rte_tel_data *const col[CM_COLS], const struct dpv_dev_cm_info *f)
{
	char buf[24];

	rte_tel_data_add_array_u64(col[CM_COL_ID], f->id);
	rte_tel_data_add_array_string(col[CM_COL_STATE], dpv_dev_cm_info_state(f));
	rte_tel_data_add_array_u64(col[CM_COL_UD], f->ud);
	ipv4_str(f->peer_ip, buf, sizeof(buf));
	rte_tel_data_add_array_string(col[CM_COL_PEER], buf);
	snprintf(buf, sizeof(buf), "0x%016" PRIx64, f->service_id);
	rte_tel_data_add_array_string(col[CM_COL_SERVICE], buf);
	rte_tel_data_add_array_u64(col[CM_COL_LISTEN], f->listen_id);
	rte_tel_data_add_array_u64(col[CM_COL_REMOTE], f->remote_id);
	rte_tel_data_add_array_u64(col[CM_COL_LQPN], f->local_qpn);
	rte_tel_data_add_array_u64(col[CM_COL_RQPN], f->remote_qpn);
	rte_tel_data_add_array_u64(col[CM_COL_RETRIES], f->retries);
}

static int tel_cm(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct dpv_device *dv = parse(params, NULL);
	struct rte_tel_data *col[CM_COLS] = {NULL};
	struct dpv_dev_cm_info *info;
	uint32_t n, total, i;
	int ret = 0;

	(void)cmd;
	if (dv == NULL)
		return -EINVAL;
	info = calloc(DPV_DEV_CM_LIST_MAX, sizeof(*info));
	if (info == NULL)
		return -ENOMEM;
	/* The list is copied with the device held; the reply is built after. */
	(void)dpv_dev_cm_list(dv->dev, info, DPV_DEV_CM_LIST_MAX, &total);
	n = total < TEL_CM_ROWS ? total : TEL_CM_ROWS;
	for (i = 0; i < CM_COLS; i++) {
		if ((col[i] = rte_tel_data_alloc()) == NULL) {
			ret = -ENOMEM;
			goto out;
		}
		rte_tel_data_start_array(col[i], cm_cols[i].type);
	}
	for (i = 0; i < n; i++)
		cm_row(col, &info[i]);
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_u64(d, "ids", total);
	for (i = 0; i < CM_COLS; i++) {
		if (rte_tel_data_add_dict_container(d, cm_cols[i].name, col[i], 0) != 0) {
			ret = -ENOMEM;
			goto out;
		}
		col[i] = NULL;  /* the reply's now: freed with it */
	}
out:
	for (i = 0; i < CM_COLS; i++)
		rte_tel_data_free(col[i]);
	free(info);
	return ret;
}

static void register_all(void)
{
	static const struct {
		const char *cmd;
		telemetry_cb fn;
		const char *help;
	} cmds[] = {
		{"/dpverbs/devices", tel_devices,
		 "Returns the dpverbs devices the process has opened. Takes no parameters"},
		{"/dpverbs/info", tel_info,
		 "Returns a device's port, addresses and progress mode. Parameters: device name"},
		{"/dpverbs/counters", tel_counters,
		 "Returns every counter of a device (dpv_verbs_query_xstats names, '.' as '_'). "
		 "Parameters: device name"},
		{"/dpverbs/qps", tel_qps, "Returns a device's QP numbers. Parameters: device name"},
		{"/dpverbs/qp", tel_qp,
		 "Returns a QP's type, state and counters. Parameters: device name,QP number"},
		{"/dpverbs/srqs", tel_srqs,
		 "Returns a device's SRQ numbers (ibv_srq handle). Parameters: device name"},
		{"/dpverbs/cm", tel_cm,
		 "Returns a device's CM ids: local ID, state, UD, peer, service ID, QPNs. "
		 "Parameters: device name"},
		{"/dpverbs/srq", tel_srq,
		 "Returns an SRQ's sizes, fill and tag-matching counters. Parameters: device "
		 "name,SRQ number"},
	};

	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (rte_telemetry_register_cmd(cmds[i].cmd, cmds[i].fn, cmds[i].help) != 0)
			fprintf(stderr, "dpverbs: cannot register telemetry command %s\n",
				cmds[i].cmd);
}

void dpv_verbs_telemetry_register(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, register_all);
}
