/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The rest of libibverbs' exported functions (lib/verbs/libibverbs.map): what programs
 * built against rdma-core import besides the verbs the other files implement. Each
 * does for a dpverbs device what it does for a kernel one where dpverbs has the thing
 * (rates, sysfs helpers, kernel-struct conversions, GID table, address handles from
 * received datagrams, re-registration, neighbour MACs), and where it has not (multicast,
 * objects shared through a kernel, dma-buf, ECE), fails with the error
 * its man page gives for a device that does not support it.
 */
#define _GNU_SOURCE /* secure_getenv */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/sa.h>
#include <rdma/ib_user_sa.h>
#include <rdma/ib_user_verbs.h>

#include "verbs_priv.h"

/* ---- IB rates (ibv_rate_to_mult(3), ibv_rate_to_mbps(3)) ---- */

/*
 * Each rate of enum ibv_rate (an IB lane speed times a link width) with the multiple
 * of 2.5 Gb/s libibverbs gives it and its data rate in Mb/s.
 * FDR and EDR lanes run at 14.0625 and 25.78125 Gb/s, no multiple of 2.5: libibverbs
 * gives them none (mult 0 here, -1 to the caller). Programs compare with what
 * libibverbs answers, so these values are its ABI, not only the spec's arithmetic.
 */
static const struct {
	enum ibv_rate rate;
	int mult;
	int mbps;
} ib_rates[] = {
	{IBV_RATE_2_5_GBPS, 1, 2500},     /* SDR 1x */
	{IBV_RATE_5_GBPS, 2, 5000},
	{IBV_RATE_10_GBPS, 4, 10000},
	{IBV_RATE_20_GBPS, 8, 20000},
	{IBV_RATE_30_GBPS, 12, 30000},
	{IBV_RATE_40_GBPS, 16, 40000},
	{IBV_RATE_60_GBPS, 24, 60000},
	{IBV_RATE_80_GBPS, 32, 80000},
	{IBV_RATE_120_GBPS, 48, 120000},
	{IBV_RATE_14_GBPS, 0, 14062},     /* FDR 1x */
	{IBV_RATE_56_GBPS, 0, 56250},
	{IBV_RATE_112_GBPS, 0, 112500},
	{IBV_RATE_168_GBPS, 0, 168750},
	{IBV_RATE_25_GBPS, 0, 25781},     /* EDR 1x */
	{IBV_RATE_100_GBPS, 0, 103125},
	{IBV_RATE_200_GBPS, 0, 206250},
	{IBV_RATE_300_GBPS, 0, 309375},
	{IBV_RATE_28_GBPS, 11, 28125},
	{IBV_RATE_50_GBPS, 20, 53125},    /* HDR 1x */
	{IBV_RATE_400_GBPS, 160, 425000},
	{IBV_RATE_600_GBPS, 240, 637500},
	{IBV_RATE_800_GBPS, 320, 850000}, /* NDR 8x */
	{IBV_RATE_1200_GBPS, 480, 1275000},
};

#define N_RATES (sizeof(ib_rates) / sizeof(ib_rates[0]))

/* The multiple of 2.5 Gb/s of @p rate; -1 for IBV_RATE_MAX, unknown rates and the rates
 * that are no multiple (FDR, EDR). */
int ibv_rate_to_mult(enum ibv_rate rate)
{
	for (size_t i = 0; i < N_RATES; i++)
		if (ib_rates[i].rate == rate)
			return ib_rates[i].mult != 0 ? ib_rates[i].mult : -1;
	return -1;
}

/* The rate whose multiple of 2.5 Gb/s is exactly @p mult; IBV_RATE_MAX if none is. */
enum ibv_rate mult_to_ibv_rate(int mult)
{
	if (mult <= 0)
		return IBV_RATE_MAX;
	for (size_t i = 0; i < N_RATES; i++)
		if (ib_rates[i].mult == mult)
			return ib_rates[i].rate;
	return IBV_RATE_MAX;
}

/* The data rate of @p rate in Mb/s; -1 for IBV_RATE_MAX and unknown rates. */
int ibv_rate_to_mbps(enum ibv_rate rate)
{
	for (size_t i = 0; i < N_RATES; i++)
		if (ib_rates[i].rate == rate)
			return ib_rates[i].mbps;
	return -1;
}

/* The rate of exactly @p mbps (as ibv_rate_to_mbps() gives it); IBV_RATE_MAX if none. */
enum ibv_rate mbps_to_ibv_rate(int mbps)
{
	for (size_t i = 0; i < N_RATES; i++)
		if (ib_rates[i].mbps == mbps)
			return ib_rates[i].rate;
	return IBV_RATE_MAX;
}

/* ---- sysfs helpers (rdma-core's driver.h) ---- */

static char sysfs_path[PATH_MAX];
static pthread_once_t sysfs_once = PTHREAD_ONCE_INIT;

static void sysfs_path_init(void)
{
	/* secure_getenv: a set-user-ID program does not let its caller pick the tree. */
	const char *env = secure_getenv("SYSFS_PATH");
	size_t n;

	snprintf(sysfs_path, sizeof(sysfs_path), "%s",
		 env != NULL && env[0] != '\0' ? env : "/sys");
	/* "dir/file" joins stay clean: no trailing slash, except for "/" itself. */
	n = strlen(sysfs_path);
	while (n > 1 && sysfs_path[n - 1] == '/')
		sysfs_path[--n] = '\0';
}

/*
 * Where sysfs is mounted: $SYSFS_PATH (without trailing slashes; ignored in set-user-ID
 * programs) or "/sys", decided at the first call. dpverbs devices have no sysfs
 * directory: their ibdev_path is "dpdk-port-N", not a path under it.
 */
const char *ibv_get_sysfs_path(void)
{
	pthread_once(&sysfs_once, sysfs_path_init);
	return sysfs_path;
}

/*
 * Read the text file "@p dir/@p file" into @p buf as a string without its trailing
 * newline. A dpverbs device's ibdev_path ("dpdk-port-N") is no sysfs directory: reads
 * under it find nothing (ENOENT).
 * @return its length; -1 with errno: EINVAL @p size 0 or above INT_MAX, ENAMETOOLONG,
 *         ERANGE the content and its terminating NUL do not fit in @p size bytes, or
 *         open(2)'s and read(2)'s.
 */
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size)
{
	char path[PATH_MAX], more;
	size_t len = 0;
	ssize_t n;
	int fd, err = 0;

	if (size == 0 || size > INT_MAX) {
		errno = EINVAL;
		return -1;
	}
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, file) >= sizeof(path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	while (len < size) {
		n = read(fd, buf + len, size - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			err = errno;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	/* A full buffer: the file must end here, and a newline must make room for the NUL. */
	if (err == 0 && len == size &&
	    (buf[len - 1] != '\n' || read(fd, &more, 1) != 0))
		err = ERANGE;
	close(fd);
	if (err != 0) {
		errno = err;
		return -1;
	}
	if (len > 0 && buf[len - 1] == '\n')
		len--;
	buf[len] = '\0';
	return (int)len;
}

/* ---- fork (ibv_fork_init(3), ibv_is_fork_initialized(3)) ---- */

/*
 * IBV_FORK_UNNEEDED: nothing pins dpverbs' registered memory for DMA. The device copies
 * through the process's own mappings, so after fork() copy-on-write never leaves it
 * writing to a page the parent no longer sees (the hazard ibv_fork_init() guards
 * against). fork() is as safe as in any DPDK program.
 */
enum ibv_fork_status ibv_is_fork_initialized(void)
{
	return IBV_FORK_UNNEEDED;
}

/* Nothing to mark: no page is pinned (see ibv_is_fork_initialized). @return 0 */
int ibv_dontfork_range(void *base, size_t size)
{
	(void)base;
	(void)size;
	return 0;
}

/* Nothing to unmark (see ibv_dontfork_range). @return 0 */
int ibv_dofork_range(void *base, size_t size)
{
	(void)base;
	(void)size;
	return 0;
}

/* ---- kernel structs to and from verbs structs (rdma-core's marshall.h) ---- */

/* @p dst from the kernel's struct, field by field; byte orders are the same on both. */
void ibv_copy_ah_attr_from_kern(struct ibv_ah_attr *dst, struct ib_uverbs_ah_attr *src)
{
	memcpy(dst->grh.dgid.raw, src->grh.dgid, sizeof(dst->grh.dgid.raw));
	dst->grh.flow_label = src->grh.flow_label;
	dst->grh.sgid_index = src->grh.sgid_index;
	dst->grh.hop_limit = src->grh.hop_limit;
	dst->grh.traffic_class = src->grh.traffic_class;
	dst->dlid = src->dlid;
	dst->sl = src->sl;
	dst->src_path_bits = src->src_path_bits;
	dst->static_rate = src->static_rate;
	dst->is_global = src->is_global;
	dst->port_num = src->port_num;
}

/*
 * @p dst from the kernel's struct, field by field. The kernel's qp_attr_mask has no
 * place in ibv_qp_attr, and what only ibv_qp_attr has (rate_limit) is left as it was.
 */
void ibv_copy_qp_attr_from_kern(struct ibv_qp_attr *dst, struct ib_uverbs_qp_attr *src)
{
	dst->qp_state = (enum ibv_qp_state)src->qp_state;
	dst->cur_qp_state = (enum ibv_qp_state)src->cur_qp_state;
	dst->path_mtu = (enum ibv_mtu)src->path_mtu;
	dst->path_mig_state = (enum ibv_mig_state)src->path_mig_state;
	dst->qkey = src->qkey;
	dst->rq_psn = src->rq_psn;
	dst->sq_psn = src->sq_psn;
	dst->dest_qp_num = src->dest_qp_num;
	dst->qp_access_flags = src->qp_access_flags;
	dst->cap.max_send_wr = src->max_send_wr;
	dst->cap.max_recv_wr = src->max_recv_wr;
	dst->cap.max_send_sge = src->max_send_sge;
	dst->cap.max_recv_sge = src->max_recv_sge;
	dst->cap.max_inline_data = src->max_inline_data;
	ibv_copy_ah_attr_from_kern(&dst->ah_attr, &src->ah_attr);
	ibv_copy_ah_attr_from_kern(&dst->alt_ah_attr, &src->alt_ah_attr);
	dst->pkey_index = src->pkey_index;
	dst->alt_pkey_index = src->alt_pkey_index;
	dst->en_sqd_async_notify = src->en_sqd_async_notify;
	dst->sq_draining = src->sq_draining;
	dst->max_rd_atomic = src->max_rd_atomic;
	dst->max_dest_rd_atomic = src->max_dest_rd_atomic;
	dst->min_rnr_timer = src->min_rnr_timer;
	dst->port_num = src->port_num;
	dst->timeout = src->timeout;
	dst->retry_cnt = src->retry_cnt;
	dst->rnr_retry = src->rnr_retry;
	dst->alt_port_num = src->alt_port_num;
	dst->alt_timeout = src->alt_timeout;
}

/* @p dst from the kernel's path record, field by field (big-endian fields stay so). */
void ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec *dst, struct ib_user_path_rec *src)
{
	memcpy(dst->dgid.raw, src->dgid, sizeof(dst->dgid.raw));
	memcpy(dst->sgid.raw, src->sgid, sizeof(dst->sgid.raw));
	dst->dlid = src->dlid;
	dst->slid = src->slid;
	dst->raw_traffic = (int)src->raw_traffic;
	dst->flow_label = src->flow_label;
	dst->hop_limit = src->hop_limit;
	dst->traffic_class = src->traffic_class;
	dst->reversible = (int)src->reversible;
	dst->numb_path = src->numb_path;
	dst->pkey = src->pkey;
	dst->sl = src->sl;
	dst->mtu_selector = src->mtu_selector;
	dst->mtu = (uint8_t)src->mtu;
	dst->rate_selector = src->rate_selector;
	dst->rate = src->rate;
	dst->packet_life_time_selector = src->packet_life_time_selector;
	dst->packet_life_time = src->packet_life_time;
	dst->preference = src->preference;
}

/* The kernel's path record from @p src, field by field: every byte of @p dst is set. */
void ibv_copy_path_rec_to_kern(struct ib_user_path_rec *dst, struct ibv_sa_path_rec *src)
{
	memset(dst, 0, sizeof(*dst));
	memcpy(dst->dgid, src->dgid.raw, sizeof(dst->dgid));
	memcpy(dst->sgid, src->sgid.raw, sizeof(dst->sgid));
	dst->dlid = src->dlid;
	dst->slid = src->slid;
	dst->raw_traffic = (__u32)src->raw_traffic;
	dst->flow_label = src->flow_label;
	dst->reversible = (__u32)src->reversible;
	dst->mtu = src->mtu;
	dst->pkey = src->pkey;
	dst->hop_limit = src->hop_limit;
	dst->traffic_class = src->traffic_class;
	dst->numb_path = src->numb_path;
	dst->sl = src->sl;
	dst->mtu_selector = src->mtu_selector;
	dst->rate_selector = src->rate_selector;
	dst->rate = src->rate;
	dst->packet_life_time_selector = src->packet_life_time_selector;
	dst->packet_life_time = src->packet_life_time;
	dst->preference = src->preference;
}

/* ---- GID table (ibv_query_gid_table(3)) ---- */

/*
 * Every valid GID entry of every port, @p entry_size bytes apart (the caller's struct
 * may be newer and longer: its tail is zeroed). dpverbs has one: port 1, index 0, the
 * port's IPv4-mapped address, RoCE v2.
 * @return the number of entries; -EINVAL flags not 0, @p entry_size below
 *         struct ibv_gid_entry, or more valid entries than @p max_entries.
 */
ssize_t _ibv_query_gid_table(struct ibv_context *context, struct ibv_gid_entry *entries,
			     size_t max_entries, uint32_t flags, size_t entry_size)
{
	struct ibv_device_attr dev_attr;
	struct ibv_port_attr port_attr;
	struct ibv_gid_entry e;
	size_t n = 0;
	int ret;

	if (flags != 0 || entry_size < sizeof(e))
		return -EINVAL;
	ret = ibv_query_device(context, &dev_attr);
	if (ret != 0)
		return -ret;
	for (unsigned int port = 1; port <= dev_attr.phys_port_cnt; port++) {
		ret = dpv_verbs_query_port(context, (uint8_t)port, &port_attr, sizeof(port_attr));
		if (ret != 0)
			return -ret;
		for (int i = 0; i < port_attr.gid_tbl_len; i++) {
			char *slot;

			ret = _ibv_query_gid_ex(context, port, (uint32_t)i, &e, 0, sizeof(e));
			if (ret == ENODATA)
				continue; /* an empty slot is not an entry */
			if (ret != 0)
				return -ret;
			if (n == max_entries)
				return -EINVAL;
			slot = (char *)entries + n++ * entry_size;
			memset(slot, 0, entry_size);
			memcpy(slot, &e, sizeof(e));
		}
	}
	return (ssize_t)n;
}

/*
 * The type of GID @p index of @p port_num as sysfs names it (what ibv_devinfo prints):
 * RoCE v2 for dpverbs' GID.
 * @return 0; -1 with errno EINVAL for a port or index the device does not have.
 */
int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index,
		       enum ibv_gid_type_sysfs *type)
{
	struct ibv_gid_entry e;
	int ret = _ibv_query_gid_ex(context, port_num, index, &e, 0, sizeof(e));

	if (ret != 0) {
		errno = ret;
		return -1;
	}
	*type = e.gid_type == IBV_GID_TYPE_ROCE_V2 ? IBV_GID_TYPE_SYSFS_ROCE_V2 :
						      IBV_GID_TYPE_SYSFS_IB_ROCE_V1;
	return 0;
}

/* ---- address handles from a received datagram (ibv_create_ah_from_wc(3)) ---- */

static uint32_t be32_at(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The index of the GID of @p port_num that is @p ipv4's, or -1 with errno. */
static int local_gid_index(struct ibv_context *context, uint8_t port_num, uint32_t ipv4)
{
	struct ibv_port_attr port_attr;
	struct ibv_gid_entry e;
	union ibv_gid want;
	int ret = dpv_verbs_query_port(context, port_num, &port_attr, sizeof(port_attr));

	if (ret != 0) {
		errno = ret;
		return -1;
	}
	dpv_verbs_gid_of(ipv4, &want);
	for (int i = 0; i < port_attr.gid_tbl_len; i++)
		if (_ibv_query_gid_ex(context, port_num, (uint32_t)i, &e, 0, sizeof(e)) == 0 &&
		    memcmp(e.gid.raw, want.raw, sizeof(want.raw)) == 0)
			return i;
	errno = EINVAL;
	return -1;
}

/*
 * The address of the sender of a datagram received on @p port_num, for a reply. A UD
 * receive's 40-byte GRH area holds, for RoCEv2 over IPv4, 20 unused bytes and then the
 * datagram's IPv4 header (lib/transport writes it so, as RoCE devices do): the reply
 * goes to its source address (dgid ::ffff:source) from the local GID it was sent to
 * (sgid_index), with its DSCP. Its ECN bits stay behind: a Congestion Experienced mark
 * belongs to the path the datagram took, not to the reply. The way back is unknown, so
 * the hop limit is the largest (TTL 255). RoCE has no LIDs: dlid, sl and path bits are 0.
 * @return 0; -1 with errno EINVAL: @p wc has no GRH (IBV_WC_GRH unset: not a UD receive),
 *         the area holds no IPv4 header, @p port_num is not 1, or the destination is no
 *         GID of the port.
 */
int ibv_init_ah_from_wc(struct ibv_context *context, uint8_t port_num, struct ibv_wc *wc,
			struct ibv_grh *grh, struct ibv_ah_attr *ah_attr)
{
	const uint8_t *ip;
	int index;

	if (!(wc->wc_flags & IBV_WC_GRH) || grh == NULL) {
		errno = EINVAL;
		return -1;
	}
	/* 0x45: IPv4 with a 20-byte header, the only kind dpverbs sends and places. */
	ip = (const uint8_t *)grh + (DPV_UD_GRH_LEN - DPV_WIRE_IPV4_LEN);
	if (ip[0] != 0x45) {
		errno = EINVAL;
		return -1;
	}
	index = local_gid_index(context, port_num, be32_at(ip + 16));
	if (index < 0)
		return -1;
	memset(ah_attr, 0, sizeof(*ah_attr));
	ah_attr->is_global = 1;
	dpv_verbs_gid_of(be32_at(ip + 12), &ah_attr->grh.dgid);
	ah_attr->grh.sgid_index = (uint8_t)index;
	ah_attr->grh.hop_limit = 0xff;
	ah_attr->grh.traffic_class = ip[1] & 0xfc;
	ah_attr->port_num = port_num;
	return 0;
}

/*
 * An AH to the sender of a received datagram (ibv_init_ah_from_wc(), then
 * ibv_create_ah()).
 * @return the AH, or NULL with errno: ibv_init_ah_from_wc()'s, or ibv_create_ah(3)'s.
 */
struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc, struct ibv_grh *grh,
				     uint8_t port_num)
{
	struct ibv_ah_attr attr;

	if (ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &attr) != 0)
		return NULL;
	return ibv_create_ah(pd, &attr);
}

/* ---- neighbours (ibv_resolve_eth_l2_from_gid, rdma-core's helper for providers) ---- */

/* As long as rdma-core's own lookup waits for a neighbour. */
#define RESOLVE_WAIT_MS 3000u
/* Between looks at the ARP table while the answer is awaited. */
#define RESOLVE_NAP_NS 50000L

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/*
 * The Ethernet address the device sends to for @p attr's destination: its own MAC for
 * its own GID, otherwise the neighbour's from the port's ARP table, asking with ARP and
 * waiting up to 3 s (driving inline devices meanwhile) when it is not known yet.
 * @p vid, when not NULL, gets 0xffff: no VLAN (dpverbs sends untagged frames).
 * @return 0; -EINVAL @p attr not global, port not 1 (or 0), sgid_index not 0, or a
 *         destination that is no IPv4-mapped GID; -EHOSTUNREACH no ARP answer in time.
 */
int ibv_resolve_eth_l2_from_gid(struct ibv_context *context, struct ibv_ah_attr *attr,
				uint8_t eth_mac[ETHERNET_LL_SIZE], uint16_t *vid)
{
	const struct timespec nap = {0, RESOLVE_NAP_NS};
	struct dpv_dev *dev = to_ctx(context)->dev;
	struct rte_ether_addr mac;
	uint64_t end = mono_ms() + RESOLVE_WAIT_MS;
	uint32_t ip;

	if (!attr->is_global || (attr->port_num != 0 && attr->port_num != 1) ||
	    attr->grh.sgid_index != 0 || !dpv_verbs_gid_ipv4(&attr->grh.dgid, &ip))
		return -EINVAL;
	for (;;) {
		if (dpv_dev_resolve(dev, ip, &mac))
			break;
		if (mono_ms() > end)
			return -EHOSTUNREACH;
		/* The request is out; inline devices hear the answer only when driven. */
		dpv_engine_progress();
		nanosleep(&nap, NULL);
	}
	memcpy(eth_mac, mac.addr_bytes, ETHERNET_LL_SIZE);
	if (vid != NULL)
		*vid = 0xffff;
	return 0;
}

/* ---- memory regions ---- */

/* ibv_rereg_mr(3) is in verbs_mem.c, with the checks and locking it shares with
 * ibv_reg_mr(3). */

/*
 * dma-buf regions are memory of another device (a GPU's) that dpverbs' CPU copies
 * cannot reach. @return NULL with errno EOPNOTSUPP.
 */
struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length,
				 uint64_t iova, int fd, int access)
{
	(void)pd;
	(void)offset;
	(void)length;
	(void)iova;
	(void)fd;
	(void)access;
	errno = EOPNOTSUPP;
	return NULL;
}

/* ---- queue pairs ---- */

/*
 * The extended send API of a QP created with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS
 * (verbs_qp_ex.c). @return it; NULL, errno EOPNOTSUPP, for a QP created without.
 */
struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
	struct dpv_qp_v *q = to_qp(qp);

	if (q->batch == NULL) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	return &q->ibqpx;
}

/*
 * Whether a reader may poll the data of one WQE instead of its completion (1) or not
 * (0). Not on dpverbs: the responder places a message's packets in PSN order on one
 * core, but each packet with memcpy(), whose stores do not land in address order
 * (glibc stores a large block's first bytes after its last ones; `rep movsb`'s fast
 * string stores may become visible out of order), so the last byte of a message can be
 * seen before the bytes ahead of it. @return 0 for every @p op and @p flags.
 */
int ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op, uint32_t flags)
{
	(void)qp;
	(void)op;
	(void)flags;
	return 0;
}

/* UD multicast is not supported: no group can be joined. @return EOPNOTSUPP */
int ibv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	(void)qp;
	(void)gid;
	(void)lid;
	return EOPNOTSUPP;
}

/* As ibv_attach_mcast: no QP is ever attached. @return EOPNOTSUPP */
int ibv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	(void)qp;
	(void)gid;
	(void)lid;
	return EOPNOTSUPP;
}

/* Enhanced Connection Establishment is vendor options for a NIC's CM: dpverbs has
 * none. @return EOPNOTSUPP (ibv_set_ece(3)) */
int ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	(void)qp;
	(void)ece;
	return EOPNOTSUPP;
}

/* As ibv_set_ece. @return EOPNOTSUPP (ibv_query_ece(3)) */
int ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	(void)qp;
	(void)ece;
	return EOPNOTSUPP;
}

/* ---- importing objects of another process (ibv_import_device(3) ...) ---- */

/*
 * Importing shares a kernel object through its command FD and handle. dpverbs objects
 * live in the memory of the process that made them, with no kernel object behind them,
 * so nothing can be imported. @p cmd_fd stays the caller's. @return NULL, errno
 * EOPNOTSUPP.
 */
struct ibv_context *ibv_import_device(int cmd_fd)
{
	(void)cmd_fd;
	errno = EOPNOTSUPP;
	return NULL;
}

/* See ibv_import_device. @return NULL, errno EOPNOTSUPP */
struct ibv_pd *ibv_import_pd(struct ibv_context *context, uint32_t pd_handle)
{
	(void)context;
	(void)pd_handle;
	errno = EOPNOTSUPP;
	return NULL;
}

/* See ibv_import_device. @return NULL, errno EOPNOTSUPP */
struct ibv_mr *ibv_import_mr(struct ibv_pd *pd, uint32_t mr_handle)
{
	(void)pd;
	(void)mr_handle;
	errno = EOPNOTSUPP;
	return NULL;
}

/* See ibv_import_device; dpverbs has no device memory either. @return NULL, errno
 * EOPNOTSUPP */
struct ibv_dm *ibv_import_dm(struct ibv_context *context, uint32_t dm_handle)
{
	(void)context;
	(void)dm_handle;
	errno = EOPNOTSUPP;
	return NULL;
}

/* Nothing was imported, so nothing is undone: a no-op (never frees @p pd). */
void ibv_unimport_pd(struct ibv_pd *pd)
{
	(void)pd;
}

/* Nothing was imported, so nothing is undone: a no-op (never frees @p mr). */
void ibv_unimport_mr(struct ibv_mr *mr)
{
	(void)mr;
}

/* Nothing was imported, so nothing is undone: a no-op. */
void ibv_unimport_dm(struct ibv_dm *dm)
{
	(void)dm;
}
