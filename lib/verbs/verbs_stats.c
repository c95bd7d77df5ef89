/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Counters by name (dpv_verbs_query_xstats(), dpv_verbs_query_qp_xstats()): every
 * counter the port, the faults wrapper, the transport and the engine keep for a device,
 * and the protocol counters of one QP, as DPDK's xstats name theirs. The meaning of
 * each is in doc/guides/reliability.md.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dpv_verbs.h"
#include "verbs_priv.h"

struct stat_field {
	const char *name;
	size_t off;
};

#define QP_STAT(f) {#f, offsetof(struct dpv_qp_stats, f)}
static const struct stat_field qp_fields[] = {
	QP_STAT(tx_packets), QP_STAT(rx_packets), QP_STAT(retrans_timeout),
	QP_STAT(retrans_seq_nak), QP_STAT(retrans_rnr), QP_STAT(retrans_read), QP_STAT(retrans_probe),
	QP_STAT(retrans_packets), QP_STAT(ack_timeouts), QP_STAT(timer_deferred), QP_STAT(retries_spent),
	QP_STAT(retry_resets), QP_STAT(retry_exceeded),
	QP_STAT(rnr_retry_exceeded), QP_STAT(dup_responses), QP_STAT(ghost_responses),
	QP_STAT(seq_naks_received), QP_STAT(rnr_naks_received), QP_STAT(naks_received),
	QP_STAT(dup_requests), QP_STAT(out_of_seq), QP_STAT(seq_naks_sent),
	QP_STAT(rnr_naks_sent), QP_STAT(naks_sent), QP_STAT(dup_reads_dropped),
	QP_STAT(resp_queue_full), QP_STAT(atomic_replays), QP_STAT(dup_atomics_dropped),
	QP_STAT(uc_msgs_dropped), QP_STAT(ackreq_sent), QP_STAT(acks_sent),
	QP_STAT(acks_coalesced), QP_STAT(acks_unasked), QP_STAT(flushed_wrs),
};
/* Every counter of the struct has its name: a new field without one fails here. */
_Static_assert(sizeof(qp_fields) / sizeof(qp_fields[0]) ==
		       sizeof(struct dpv_qp_stats) / sizeof(uint64_t),
	       "struct dpv_qp_stats and its names differ");

#define XP_STAT(f) {#f, offsetof(struct dpv_xport_stats, f)}
static const struct stat_field xport_fields[] = {
	XP_STAT(rx_packets), XP_STAT(tx_packets), XP_STAT(rx_unknown_qp),
	XP_STAT(rx_bad_state), XP_STAT(rx_bad_qkey), XP_STAT(rx_bad_pkey), XP_STAT(rx_bad_src),
	XP_STAT(access_errors), XP_STAT(mem_faults), XP_STAT(tm_expected), XP_STAT(tm_unexpected),
	XP_STAT(tm_no_tag), XP_STAT(tm_rndv_reads), XP_STAT(tm_rndv_bytes),
	XP_STAT(tm_rndv_failed), XP_STAT(cq_overflows), XP_STAT(tx_no_mbuf),
	XP_STAT(rx_ud_dropped), XP_STAT(tx_dropped), XP_STAT(linger_qps), XP_STAT(linger_acks),
	XP_STAT(rx_gsi), XP_STAT(rx_gsi_dropped), XP_STAT(tx_gsi),
};
/* The scalar counters, the rx_bad array and the QP sums make up the struct. */
_Static_assert(sizeof(xport_fields) / sizeof(xport_fields[0]) +
			       DPV_WIRE_E_ICRC + 1 + sizeof(struct dpv_qp_stats) / sizeof(uint64_t) ==
		       sizeof(struct dpv_xport_stats) / sizeof(uint64_t),
	       "struct dpv_xport_stats and its names differ");

/* rx_bad by enum dpv_wire_err; DPV_WIRE_OK has no counter of its own. */
static const char *const rx_bad_names[DPV_WIRE_E_ICRC + 1] = {
	[DPV_WIRE_OK] = NULL,
	[DPV_WIRE_E_SHORT] = "short",
	[DPV_WIRE_E_NOT_ROCE] = "not_roce",
	[DPV_WIRE_E_IP] = "ip",
	[DPV_WIRE_E_LENGTH] = "length",
	[DPV_WIRE_E_OPCODE] = "opcode",
	[DPV_WIRE_E_VERSION] = "version",
	[DPV_WIRE_E_ICRC] = "icrc",
};

#define PORT_STAT(f) {#f, offsetof(struct dpv_port_stats, f)}
static const struct stat_field port_fields[] = {
	PORT_STAT(rx_frames), PORT_STAT(tx_frames), PORT_STAT(rx_bursts), PORT_STAT(tx_bursts),
	PORT_STAT(tx_dropped),
	PORT_STAT(tx_deferred), PORT_STAT(tx_link_down_drops), PORT_STAT(rx_not_ipv4),
	PORT_STAT(arp_requests_sent), PORT_STAT(arp_replies_sent), PORT_STAT(arp_learned),
	PORT_STAT(arp_unresolved_drops), PORT_STAT(arp_invalid),
	PORT_STAT(arp_ignored_unsolicited), PORT_STAT(arp_mac_changed), PORT_STAT(arp_expired),
	PORT_STAT(arp_unreachable), PORT_STAT(arp_evicted), PORT_STAT(arp_table_full),
	PORT_STAT(capture_frames), PORT_STAT(capture_dropped),
};
_Static_assert(sizeof(port_fields) / sizeof(port_fields[0]) ==
		       sizeof(struct dpv_port_stats) / sizeof(uint64_t),
	       "struct dpv_port_stats and its names differ");

#define DEV_STAT(f) {#f, offsetof(struct dpv_dev_stats, f)}
static const struct stat_field dev_fields[] = {
	DEV_STAT(polls), DEV_STAT(busy_polls), DEV_STAT(helper_polls), DEV_STAT(cm_rx_refused),
	DEV_STAT(cm_tx_failed), DEV_STAT(cm_events_lost), DEV_STAT(cm_resent),
};
_Static_assert(sizeof(dev_fields) / sizeof(dev_fields[0]) ==
		       sizeof(struct dpv_dev_stats) / sizeof(uint64_t),
	       "struct dpv_dev_stats and its names differ");

#define FAULT_STAT(f) {#f, offsetof(struct dpv_faults_dir_stats, f)}
static const struct stat_field fault_fields[] = {
	FAULT_STAT(seen), FAULT_STAT(dropped), FAULT_STAT(burst_dropped),
	FAULT_STAT(reordered), FAULT_STAT(duplicated), FAULT_STAT(corrupted),
	FAULT_STAT(delayed), FAULT_STAT(overflow),
};
_Static_assert(sizeof(fault_fields) / sizeof(fault_fields[0]) ==
		       sizeof(struct dpv_faults_dir_stats) / sizeof(uint64_t),
	       "struct dpv_faults_dir_stats and its names differ");

/* Counters are read while the owner writes them: each is one aligned 64-bit load. */
static uint64_t read_u64(const void *base, size_t off)
{
	return __atomic_load_n((const uint64_t *)((const char *)base + off), __ATOMIC_RELAXED);
}

struct xstats_out {
	struct dpv_verbs_xstat *xs;
	unsigned int n, count;
};

static void put(struct xstats_out *o, const char *prefix, const char *name, uint64_t value)
{
	if (o->count < o->n) {
		snprintf(o->xs[o->count].name, sizeof(o->xs[o->count].name), "%s%s", prefix,
			 name);
		o->xs[o->count].value = value;
	}
	o->count++;
}

static void put_fields(struct xstats_out *o, const char *prefix, const struct stat_field *f,
		       size_t nf, const void *base)
{
	for (size_t i = 0; i < nf; i++)
		put(o, prefix, f[i].name, read_u64(base, f[i].off));
}

#define PUT_FIELDS(o, prefix, table, base) \
	put_fields(o, prefix, table, sizeof(table) / sizeof((table)[0]), base)

int dpv_verbs_dev_xstats(const struct dpv_dev *dev, struct dpv_verbs_xstat *xs, unsigned int n)
{
	struct xstats_out o = {.xs = xs, .n = n};
	struct dpv_faults_stats fs;
	char name[32];

	PUT_FIELDS(&o, "port.", port_fields, dpv_dev_port_stats(dev));
	if (dpv_dev_faults_stats(dev, &fs) == 0) {
		PUT_FIELDS(&o, "faults.tx.", fault_fields, &fs.tx);
		PUT_FIELDS(&o, "faults.rx.", fault_fields, &fs.rx);
	}
	/* The transport's counters live in device memory the owner writes; the struct
	 * is read in place, field by field. */
	{
		const struct dpv_xport_stats *st = dpv_xport_stats_ref(dev->xport);

		PUT_FIELDS(&o, "xport.", xport_fields, st);
		for (unsigned int e = DPV_WIRE_E_SHORT; e <= DPV_WIRE_E_ICRC; e++) {
			snprintf(name, sizeof(name), "rx_bad_%s", rx_bad_names[e]);
			put(&o, "xport.", name,
			    read_u64(st, offsetof(struct dpv_xport_stats, rx_bad) +
						 e * sizeof(uint64_t)));
		}
		PUT_FIELDS(&o, "qp.", qp_fields, &st->qps);
	}
	PUT_FIELDS(&o, "engine.", dev_fields, &dev->stats);
	return (int)o.count;
}

int dpv_verbs_query_xstats(struct ibv_context *context, struct dpv_verbs_xstat *xs,
			   unsigned int n)
{
	if (context == NULL || (xs == NULL && n != 0))
		return -EINVAL;
	return dpv_verbs_dev_xstats(to_ctx(context)->dev, xs, n);
}

int dpv_verbs_qp_xstats(const struct dpv_qp *qp, struct dpv_verbs_xstat *xs, unsigned int n)
{
	struct xstats_out o = {.xs = xs, .n = n};

	PUT_FIELDS(&o, "qp.", qp_fields, dpv_qp_stats_ref(qp));
	return (int)o.count;
}

int dpv_verbs_query_qp_xstats(struct ibv_qp *qp, struct dpv_verbs_xstat *xs, unsigned int n)
{
	if (qp == NULL || (xs == NULL && n != 0))
		return -EINVAL;
	return dpv_verbs_qp_xstats(to_qp(qp)->qp, xs, n);
}

/*
 * DPV_STATS_DUMP=<prefix>: at exit, each device's counters, one "name value" a line,
 * in <prefix><device>.txt. For programs that know nothing of dpv_verbs.h (the
 * ibverbs-utils on the drop-in), so a script can see what the device did: how often
 * it retransmitted, what the faults port dropped. Devices live as long as the
 * process, so they are all there to read at exit.
 */
#define DUMP_MAX_DEVS 64u

static struct {
	char name[IBV_SYSFS_NAME_MAX];
	const struct dpv_dev *dev;
} dumps[DUMP_MAX_DEVS];
static unsigned int n_dumps;
static char dump_prefix[4096];

static void dump_one(const char *name, const struct dpv_dev *dev)
{
	char path[sizeof(dump_prefix) + IBV_SYSFS_NAME_MAX + 8];
	struct dpv_verbs_xstat *xs;
	int n = dpv_verbs_dev_xstats(dev, NULL, 0);
	FILE *f;

	snprintf(path, sizeof(path), "%s%s.txt", dump_prefix, name);
	xs = calloc((size_t)n, sizeof(*xs));
	f = fopen(path, "w");
	if (xs == NULL || f == NULL) {
		fprintf(stderr, "dpverbs: DPV_STATS_DUMP: cannot write %s: %s\n", path,
			strerror(errno));
		free(xs);
		if (f != NULL)
			fclose(f);
		return;
	}
	n = dpv_verbs_dev_xstats(dev, xs, (unsigned int)n);
	for (int i = 0; i < n; i++)
		fprintf(f, "%s %" PRIu64 "\n", xs[i].name, xs[i].value);
	if (fclose(f) != 0)
		fprintf(stderr, "dpverbs: DPV_STATS_DUMP: cannot write %s: %s\n", path,
			strerror(errno));
	free(xs);
}

static void dump_all(void)
{
	for (unsigned int i = 0; i < n_dumps; i++)
		dump_one(dumps[i].name, dumps[i].dev);
}

void dpv_verbs_stats_dump_at_exit(const char *name, const struct dpv_dev *dev)
{
	const char *prefix = getenv("DPV_STATS_DUMP");

	if (prefix == NULL || prefix[0] == '\0' || n_dumps == DUMP_MAX_DEVS)
		return;
	for (unsigned int i = 0; i < n_dumps; i++)
		if (dumps[i].dev == dev)
			return;
	if (n_dumps == 0) {
		if (strlen(prefix) >= sizeof(dump_prefix)) {
			fprintf(stderr, "dpverbs: DPV_STATS_DUMP: a prefix of at most %zu "
				"characters\n", sizeof(dump_prefix) - 1);
			return;
		}
		strcpy(dump_prefix, prefix);
		if (atexit(dump_all) != 0)
			return;
	}
	snprintf(dumps[n_dumps].name, sizeof(dumps[n_dumps].name), "%s", name);
	dumps[n_dumps].dev = dev;
	n_dumps++;
}
