/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Devices: opening a device (its port, its settings, its progress mode), contexts,
 * closing them and lingering at exit for the peers, device and port queries, GIDs and
 * P_Keys, and dpverbs' own calls for DPDK-native programs (dpv_verbs.h).
 */
#include <stddef.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>

#include "dpv_verbs.h"
#include "verbs_priv.h"

/* How long devices keep running at exit once nothing comes or goes, and at most. */
#define LINGER_QUIET_MS 20
#define LINGER_MAX_MS 500
/* How long, at most, exit waits for the DREP of a DREQ to a peer outside the process:
 * with Linux's CM timing a wait is 4.8 s, so a DREQ lost on the wire is sent once more,
 * while a peer that is gone with its link up would keep exit for all 15 retries. */
#define LINGER_DREQ_MAX_MS 10000

/* Frames in and out of every open device; -1 when none has sent anything. */
static int64_t frames_moved(void)
{
	int64_t n = 0;
	bool sent = false;

	for (unsigned int i = 0; i < dpv_verbs_n_devices; i++) {
		const struct dpv_dev *dev = dpv_verbs_devices[i]->dev;

		if (dev != NULL) {
			const struct dpv_port_stats *st = dpv_dev_port_stats(dev);
			uint64_t tx = __atomic_load_n(&st->tx_frames, __ATOMIC_RELAXED);

			n += (int64_t)(tx + __atomic_load_n(&st->rx_frames, __ATOMIC_RELAXED));
			sent |= tx != 0;
		}
	}
	return sent ? n : -1;
}

/* The addresses of the process's devices (dpv_verbs_devices_lock held): peers whose QPs
 * end with the process, and whose devices it drives as long as it lives. */
static unsigned int own_ips(uint32_t *ips)
{
	for (unsigned int i = 0; i < dpv_verbs_n_devices; i++)
		ips[i] = dpv_verbs_devices[i]->ipv4;
	return dpv_verbs_n_devices;
}

/* Whether a device still answers for QPs whose peers are not in this process
 * (dpv_dev_linger_until()). */
static bool any_lingers(uint64_t now)
{
	uint32_t own[DPV_MAX_DEVS];
	unsigned int n = own_ips(own), i;

	for (i = 0; i < dpv_verbs_n_devices; i++) {
		uint64_t until;

		if (dpv_verbs_devices[i]->dev == NULL)
			continue;
		until = dpv_dev_linger_until(dpv_verbs_devices[i]->dev, own, n);
		if (until != 0 && (int64_t)(until - now) > 0)
			return true;
	}
	return false;
}

/* Whether a device's DREQ to a peer outside the process still waits for its DREP
 * (dpv_dev_cm_dreq_waits()). */
static bool any_dreq_waits(void)
{
	uint32_t own[DPV_MAX_DEVS];
	unsigned int n = own_ips(own);

	for (unsigned int i = 0; i < dpv_verbs_n_devices; i++)
		if (dpv_verbs_devices[i]->dev != NULL &&
		    dpv_dev_cm_dreq_waits(dpv_verbs_devices[i]->dev, own, n))
			return true;
	return false;
}

/*
 * At exit, let what the devices sent reach their peers: a NIC has put a program's
 * last ACKs on the wire before the program sees the completions they answer, but a
 * port's TX ring lives in this process, and a memif peer reads from this process's
 * memory and drops what it had not read when the process goes. A program that exits
 * right after its last completion (ibv_srq_pingpong) took the ACKs of its last
 * receives with it. Its peer's requester then resends, but to QPs that are gone, and its
 * WQEs end in RETRY_EXC_ERR: retransmission cannot mend what the process took away.
 * So the devices run on (their lcore or service, or here) until nothing has come or
 * gone for LINGER_QUIET_MS, which also answers a peer's last resends, and while a QP
 * lingers (reliability.md, "Lingering QPs": an ACK lost on the wire is answered again
 * when its peer resends, within about twice its ACK timeout), at most LINGER_MAX_MS or
 * twice DPV_LINGER_MS; and, beyond that, while a DREQ waits for its DREP: a program
 * that disconnects and exits at once (rping's client) would otherwise take the resends
 * of a DREQ lost on the wire with it, and leave a peer that waits for nothing but the
 * disconnection waiting for ever. That wait ends with the DREP (a round trip; one CM
 * wait more per DREQ lost), when the DREQ's retries are spent, or after
 * LINGER_DREQ_MAX_MS (rdma-cm.md).
 */
static void linger(void)
{
	const uint64_t ms = rte_get_tsc_hz() / 1000;
	const uint64_t quiet_for = LINGER_QUIET_MS * ms,
		       at_most = (dpv_verbs_conf.linger_ms * 2 > LINGER_MAX_MS ?
				  dpv_verbs_conf.linger_ms * 2 : LINGER_MAX_MS) * ms,
		       dreq_at_most = LINGER_DREQ_MAX_MS * ms;
	uint64_t start = rte_get_tsc_cycles(), quiet = start, now = start;
	int64_t moved, last;

	pthread_mutex_lock(&dpv_verbs_devices_lock);
	last = frames_moved();
	while (last >= 0 && (((now - quiet < quiet_for || any_lingers(now)) &&
			      now - start < at_most) ||
			     (now - start < dreq_at_most && any_dreq_waits()))) {
		struct timespec ts = {0, 100000};

		dpv_engine_progress();
		nanosleep(&ts, NULL);
		now = rte_get_tsc_cycles();
		moved = frames_moved();
		if (moved != last) {
			last = moved;
			quiet = now;
		}
	}
	pthread_mutex_unlock(&dpv_verbs_devices_lock);
}

/*
 * Open the device's port unless it is open. Opening a port waits up to @p link_wait_ms
 * for its link (dpv_engine_set_link_wait()): a program that checks its port right after
 * opening it (perftest) finds it ACTIVE when its peer comes within that time, and DOWN,
 * the truth, when not, which is then said once.
 */
static int open_dev(struct dpv_device *d, uint32_t link_wait_ms)
{
	static bool linger_hook, capture_hook;
	uint32_t speed;
	bool up;
	int ret = 0;

	pthread_mutex_lock(&dpv_verbs_devices_lock);
	if (d->dev == NULL) {
		/* The process's signal handlers are the program's to give (memory.md). */
		if (dpv_verbs_conf.fault_guard)
			dpv_xport_fault_guard();
		dpv_verbs_conf.fault_guard_taken = true;
		dpv_engine_set_link_wait(link_wait_ms);
		ret = dpv_dev_open_faults(d->ibdev.name, d->ethdev_port, d->ipv4,
					  dpv_verbs_faults_of(d), &d->dev);
		if (ret == 0 && link_wait_ms > 0) {
			dpv_dev_link(d->dev, &up, &speed);
			if (!up)
				dpv_verbs_complain(
					"%s: the link of DPDK port %u is still down after %u ms "
					"(DPV_LINK_WAIT_MS): the port is DOWN until it comes up "
					"(a memif server's when its client connects)",
					d->ibdev.name, d->ethdev_port, link_wait_ms);
		}
		if (ret != 0)
			dpv_verbs_complain("%s: cannot open DPDK port %u: %s", d->ibdev.name,
					   d->ethdev_port, strerror(ret));
		/* Before the linger hook: atexit runs it after, the capture sees it all. */
		if (ret == 0 && !capture_hook)
			capture_hook = atexit(dpv_verbs_capture_finish_all) == 0;
		if (ret == 0)
			ret = dpv_verbs_capture_env(d);
		/* Before the progress mode: nobody polls the port yet. */
		if (ret == 0) {
			d->dev->link_event = dpv_verbs_port_event;
			d->dev->link_arg = d;
			ret = dpv_dev_set_arp_lifetime(d->dev, dpv_verbs_conf.arp_lifetime_ms);
		}
		if (ret == 0)
			ret = dpv_verbs_apply_cm_timing(d->dev);
		if (ret == 0) {
			dpv_dev_own(d->dev);
			ret = dpv_xport_set_linger_ms(d->dev->xport, dpv_verbs_conf.linger_ms);
			dpv_dev_disown(d->dev);
		}
		if (ret == 0)
			ret = dpv_verbs_apply_progress(d->dev, dpv_verbs_conf.progress);
		/* After the mode: a device that went to an lcore or a service needs no
		 * helper. */
		if (ret == 0) {
			ret = dpv_engine_set_inline_idle_us(dpv_verbs_conf.inline_idle_us);
			if (ret != 0)
				dpv_verbs_complain(
					"%s: cannot start the helper thread of inline progress: %s",
					d->ibdev.name, strerror(ret));
		}
		/* Before the linger hook: atexit runs it after, the dump counts the last frames. */
		if (ret == 0)
			dpv_verbs_stats_dump_at_exit(d->ibdev.name, d->dev);
		if (ret == 0 && !linger_hook)
			linger_hook = atexit(linger) == 0;
	}
	pthread_mutex_unlock(&dpv_verbs_devices_lock);
	return ret;
}

/*
 * ibv_query_rt_values_ex(3): the device clock now, in the units of the completion
 * timestamps (the TSC's cycles), all in raw_clock.tv_nsec with tv_sec 0 as the mlx5
 * provider gives it. EINVAL for a comp_mask bit other than IBV_VALUES_MASK_RAW_CLOCK.
 */
static int query_rt_values(struct ibv_context *context, struct ibv_values_ex *values)
{
	(void)context;
	if ((values->comp_mask & ~(uint32_t)IBV_VALUES_MASK_RAW_CLOCK) != 0)
		return EINVAL;
	if (values->comp_mask & IBV_VALUES_MASK_RAW_CLOCK) {
		values->raw_clock.tv_sec = 0;
		values->raw_clock.tv_nsec = (long)rte_get_tsc_cycles();
	}
	return 0;
}

static void fill_ops(struct dpv_context *c)
{
	struct verbs_context *v = &c->vctx;

	v->context.ops.poll_cq = dpv_verbs_poll_cq;
	v->context.ops.req_notify_cq = dpv_verbs_req_notify_cq;
	v->context.ops.post_srq_recv = dpv_verbs_post_srq_recv;
	v->context.ops.post_send = dpv_verbs_post_send;
	v->context.ops.post_recv = dpv_verbs_post_recv;
	v->query_port = dpv_verbs_query_port;
	v->post_srq_ops = dpv_verbs_post_srq_ops;
	v->create_cq_ex = dpv_verbs_create_cq_ex;
	v->query_device_ex = dpv_verbs_query_device_ex;
	v->query_rt_values = query_rt_values;
	v->create_qp_ex = dpv_verbs_create_qp_ex;
	v->create_srq_ex = dpv_verbs_create_srq_ex;
	v->advise_mr = dpv_verbs_advise_mr;
	v->context.ops.alloc_mw = dpv_verbs_alloc_mw;
	v->context.ops.dealloc_mw = dpv_verbs_dealloc_mw;
	v->context.ops.bind_mw = dpv_verbs_bind_mw;
	v->alloc_td = dpv_verbs_alloc_td;
	v->dealloc_td = dpv_verbs_dealloc_td;
	v->alloc_parent_domain = dpv_verbs_alloc_parent_domain;
	v->open_xrcd = dpv_verbs_open_xrcd;
	v->close_xrcd = dpv_verbs_close_xrcd;
	v->get_srq_num = dpv_verbs_get_srq_num;
	v->open_qp = dpv_verbs_open_qp;
	v->sz = sizeof(*v);
	v->context.abi_compat = __VERBS_ABI_IS_EXTENDED;
}

struct ibv_context *dpv_verbs_context_new(struct ibv_device *device, struct dpv_dev *dev)
{
	struct dpv_context *c = calloc(1, sizeof(*c));

	if (c == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	c->device = container_of(device, struct dpv_device, ibdev);
	c->dev = dev;
	c->vctx.context.device = device;
	/* rdma-core's cmd_fd is the command file of a kernel RDMA device, which dpverbs
	 * has none of. Programs dup(), fstat() or poll() it (to share the context with
	 * ibv_import_device(3), which dpverbs refuses with EOPNOTSUPP), so it is a real
	 * descriptor, and an inert one: an empty epoll set, which never polls readable
	 * and on which read() and write() fail with EINVAL. */
	c->vctx.context.cmd_fd = epoll_create1(EPOLL_CLOEXEC);
	c->vctx.context.num_comp_vectors = 1;
	c->vctx.context.async_fd = eventfd(0, EFD_CLOEXEC);
	if (c->vctx.context.async_fd < 0 || c->vctx.context.cmd_fd < 0) {
		if (c->vctx.context.async_fd >= 0)
			close(c->vctx.context.async_fd);
		if (c->vctx.context.cmd_fd >= 0)
			close(c->vctx.context.cmd_fd);
		free(c);
		return NULL;
	}
	pthread_mutex_init(&c->vctx.context.mutex, NULL);
	pthread_mutex_init(&c->async_lock, NULL);
	fill_ops(c);
	pthread_mutex_lock(&c->device->contexts_lock);
	c->next_on_device = c->device->contexts;
	c->device->contexts = c;
	pthread_mutex_unlock(&c->device->contexts_lock);
	return &c->vctx.context;
}

struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	struct dpv_device *d = container_of(device, struct dpv_device, ibdev);
	int ret = open_dev(d, dpv_verbs_conf.link_wait_ms);

	if (ret != 0) {
		errno = ret;
		return NULL;
	}
	return dpv_verbs_context_new(device, d->dev);
}

int ibv_close_device(struct ibv_context *context)
{
	struct dpv_context *c = to_ctx(context);
	uint32_t own[DPV_MAX_DEVS];
	struct dpv_context **pp;
	unsigned int n_own;
	bool last;

	pthread_mutex_lock(&c->device->contexts_lock);
	for (pp = &c->device->contexts; *pp != c; pp = &(*pp)->next_on_device)
		;
	*pp = c->next_on_device;
	last = c->device->contexts == NULL;
	pthread_mutex_unlock(&c->device->contexts_lock);
	/* As a NIC's firmware goes on answering after the program let go of it: the peers
	 * of the QPs it destroyed last may still resend what they lost the ACK of
	 * (reliability.md, "Lingering QPs"). Nothing to do, no wait, when none was
	 * destroyed after a recent request, or when their peers are the process's own
	 * devices (their QPs resend only while it drives them, and it drives this one as
	 * long). Not under contexts_lock: the owner takes it for a port event. */
	if (last) {
		pthread_mutex_lock(&dpv_verbs_devices_lock);
		n_own = own_ips(own);
		pthread_mutex_unlock(&dpv_verbs_devices_lock);
		dpv_dev_linger(c->dev, own, n_own, 2 * dpv_verbs_conf.linger_ms);
	}
	close(context->cmd_fd);
	close(context->async_fd);
	pthread_mutex_destroy(&c->async_lock);
	free(c);
	return 0;
}

static void fill_device_attr(const struct dpv_dev *dev, struct ibv_device_attr *a)
{
	memset(a, 0, sizeof(*a));
	snprintf(a->fw_ver, sizeof(a->fw_ver), "dpverbs %s", DPV_VERSION);
	a->node_guid = dpv_verbs_node_guid(dev);
	a->sys_image_guid = a->node_guid;
	a->max_mr_size = DPV_MAX_MR_SIZE;
	a->page_size_cap = 4096;
	/* IEEE OUIs name the makers of hardware; a device of software has none. It
	 * reports 0xffffff, as rdma-core's other software RoCE device (rxe) does, which
	 * is no maker's OUI: programs that act on a vendor (a Mellanox or Amazon device)
	 * find none here, and those that take 0 for "no device" do not. */
	a->vendor_id = 0xffffff;
	a->hw_ver = 1;
	a->max_qp = DPV_MAX_QP - 2;
	a->max_qp_wr = DPV_MAX_QP_WR;
	/* No IBV_DEVICE_SRQ_RESIZE: ibv_modify_srq() does not resize (verbs_srq.c). */
	/* Memory windows of type 1 and 2B (IBTA 10.6.7: type 2 windows are bound to the QP
	 * they were bound through, as rxe's are), in the regions' key table. XRC
	 * (doc/guides/srq.md §7). */
	a->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_PORT_ACTIVE_EVENT |
			      IBV_DEVICE_CHANGE_PHY_PORT | IBV_DEVICE_MEM_WINDOW |
			      IBV_DEVICE_MEM_WINDOW_TYPE_2B | IBV_DEVICE_XRC;
	a->max_sge = DPV_MAX_SGE;
	a->max_sge_rd = DPV_MAX_SGE;
	a->max_cq = 65536;
	a->max_cqe = DPV_MAX_CQE;
	a->max_mr = DPV_MAX_MR;
	/* Windows take slots of the regions' table (slot 0 is never used). */
	a->max_mw = DPV_MAX_MR - 1;
	a->max_pd = 65536;
	a->max_qp_rd_atom = DPV_MAX_RD_ATOMIC;
	a->max_qp_init_rd_atom = DPV_MAX_RD_ATOMIC;
	a->max_res_rd_atom = DPV_MAX_RD_ATOMIC * (DPV_MAX_QP - 2);
	/* Atomics execute on the device's owner thread, one at a time: atomic among the
	 * atomics this device executes, which is what IBV_ATOMIC_HCA promises. */
	a->atomic_cap = IBV_ATOMIC_HCA;
	a->max_srq = 65536;
	a->max_srq_wr = DPV_MAX_SRQ_WR;
	a->max_srq_sge = DPV_MAX_SGE;
	a->max_pkeys = 1;
	a->local_ca_ack_delay = 15;
	a->phys_port_cnt = 1;
}

int ibv_query_device(struct ibv_context *context, struct ibv_device_attr *attr)
{
	fill_device_attr(to_ctx(context)->dev, attr);
	return 0;
}

int dpv_verbs_query_device_ex(struct ibv_context *context,
			      const struct ibv_query_device_ex_input *input,
			      struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ibv_device_attr_ex a;

	if (input != NULL && input->comp_mask != 0)
		return EINVAL;
	if (attr_size < sizeof(attr->orig_attr))
		return EINVAL;
	memset(&a, 0, sizeof(a));
	fill_device_attr(to_ctx(context)->dev, &a.orig_attr);
	a.tm_caps.max_rndv_hdr_size = 64;
	a.tm_caps.max_num_tags = DPV_TM_MAX_TAGS_LIMIT;
	a.tm_caps.flags = IBV_TM_CAP_RC;
	a.tm_caps.max_ops = DPV_VERBS_TM_MAX_OPS;
	a.tm_caps.max_sge = DPV_MAX_SGE < DPV_TM_MAX_SGE_LIMIT ? DPV_MAX_SGE : DPV_TM_MAX_SGE_LIMIT;
	/* On-demand paging (verbs_mem.c): the device copies with the CPU, which faults a
	 * region's pages in as it touches them; implicit regions cover the address space. */
	a.odp_caps.general_caps = IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT;
	a.odp_caps.per_transport_caps.rc_odp_caps = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
						    IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ |
						    IBV_ODP_SUPPORT_ATOMIC |
						    IBV_ODP_SUPPORT_SRQ_RECV;
	a.odp_caps.per_transport_caps.ud_odp_caps = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
						    IBV_ODP_SUPPORT_SRQ_RECV;
	/* XRC runs RC's requester and responder (its receives are SRQ receives). */
	a.xrc_odp_caps = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ |
			 IBV_ODP_SUPPORT_ATOMIC | IBV_ODP_SUPPORT_SRQ_RECV;
	a.phys_port_cnt_ex = 1;
	/* Completion timestamps count the TSC's cycles (verbs_cq.c), all 64 bits. */
	a.completion_timestamp_mask = UINT64_MAX;
	a.hca_core_clock = rte_get_tsc_hz() / 1000; /* kHz */
	memcpy(attr, &a, attr_size < sizeof(a) ? attr_size : sizeof(a));
	return 0;
}

int dpv_verbs_query_port(struct ibv_context *context, uint8_t port_num,
			 struct ibv_port_attr *attr, size_t attr_len)
{
	struct dpv_dev *dev = to_ctx(context)->dev;
	struct ibv_port_attr a;
	bool up;
	uint32_t speed;

	if (port_num != 1)
		return EINVAL;
	memset(&a, 0, sizeof(a));
	dpv_dev_link(dev, &up, &speed);
	a.state = up ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
	/* What the transport really sends: the link's IP MTU and one mbuf bound it. */
	a.active_mtu = (enum ibv_mtu)dpv_xport_active_mtu(dev->xport);
	a.max_mtu = a.active_mtu;
	a.gid_tbl_len = 1;
	a.port_cap_flags = IBV_PORT_CM_SUP;
	a.max_msg_sz = 1u << 31;
	a.pkey_tbl_len = 1;
	a.max_vl_num = 1;
	a.active_width = 1;      /* 1X */
	/* 1X SDR below 10 Gb/s and for a speed the port cannot tell (0), as the kernel's
	 * RoCE drivers report 1 GbE and an unknown speed (ib_get_eth_speed()). */
	a.active_speed = speed >= 25000 ? 32 : speed >= 10000 ? 8 : 1;
	a.phys_state = up ? 5 : 3; /* LinkUp / Disabled */
	a.link_layer = IBV_LINK_LAYER_ETHERNET;
	memcpy(attr, &a, attr_len < sizeof(a) ? attr_len : sizeof(a));
	return 0;
}

#undef ibv_query_port
int ibv_query_port(struct ibv_context *context, uint8_t port_num,
		   struct _compat_ibv_port_attr *port_attr)
{
	/* The old ABI's struct ends before the fields rdma-core added later (flags,
	 * port_cap_flags2): fill no more than that. */
	return dpv_verbs_query_port(context, port_num, (struct ibv_port_attr *)port_attr,
				    offsetof(struct ibv_port_attr, flags));
}

void dpv_verbs_gid_of(uint32_t ipv4, union ibv_gid *gid)
{
	memset(gid, 0, sizeof(*gid));
	gid->raw[10] = 0xff;
	gid->raw[11] = 0xff;
	gid->raw[12] = (uint8_t)(ipv4 >> 24);
	gid->raw[13] = (uint8_t)(ipv4 >> 16);
	gid->raw[14] = (uint8_t)(ipv4 >> 8);
	gid->raw[15] = (uint8_t)ipv4;
}

bool dpv_verbs_gid_ipv4(const union ibv_gid *gid, uint32_t *ipv4)
{
	static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	if (memcmp(gid->raw, prefix, sizeof(prefix)) != 0)
		return false;
	*ipv4 = (uint32_t)gid->raw[12] << 24 | (uint32_t)gid->raw[13] << 16 |
		(uint32_t)gid->raw[14] << 8 | gid->raw[15];
	return true;
}

int ibv_query_gid(struct ibv_context *context, uint8_t port_num, int index, union ibv_gid *gid)
{
	struct dpv_dev_port_info info;

	if (port_num != 1 || index != 0) {
		errno = EINVAL;
		return -1;
	}
	dpv_dev_port_info(to_ctx(context)->dev, &info);
	dpv_verbs_gid_of(info.ipv4, gid);
	return 0;
}

int _ibv_query_gid_ex(struct ibv_context *context, uint32_t port_num, uint32_t gid_index,
		      struct ibv_gid_entry *entry, uint32_t flags, size_t entry_size)
{
	struct dpv_dev_port_info info;

	if (flags != 0 || port_num != 1 || gid_index != 0 || entry_size < sizeof(*entry))
		return EINVAL;
	memset(entry, 0, sizeof(*entry));
	dpv_dev_port_info(to_ctx(context)->dev, &info);
	dpv_verbs_gid_of(info.ipv4, &entry->gid);
	entry->gid_index = 0;
	entry->port_num = 1;
	entry->gid_type = IBV_GID_TYPE_ROCE_V2;
	return 0;
}

int ibv_query_pkey(struct ibv_context *context, uint8_t port_num, int index, __be16 *pkey)
{
	(void)context;
	if (port_num != 1 || index != 0) {
		errno = EINVAL;
		return -1;
	}
	*pkey = 0xffff;
	return 0;
}

int ibv_get_pkey_index(struct ibv_context *context, uint8_t port_num, __be16 pkey)
{
	(void)context;
	return port_num == 1 && pkey == 0xffff ? 0 : -1;
}
int ibv_fork_init(void)
{
	return 0;
}

/* ---- DPDK-native programs (dpv_verbs.h) ---- */

struct ibv_context *dpv_verbs_open_port(uint16_t port_id, uint32_t ipv4)
{
	struct dpv_device *d = NULL;
	int ret = 0;

	if (!rte_eth_dev_is_valid_port(port_id)) {
		errno = ENODEV;
		return NULL;
	}
	if (ipv4 == 0) {
		errno = EINVAL;
		return NULL;
	}
	dpv_verbs_telemetry_register();
	ret = dpv_verbs_device_of_port(port_id, ipv4, &d);
	/* A program that starts EAL itself waits for its ports' links as it likes. */
	if (ret == 0)
		ret = open_dev(d, 0);
	if (ret != 0) {
		errno = ret;
		return NULL;
	}
	return dpv_verbs_context_new(&d->ibdev, d->dev);
}

int dpv_verbs_ring_pair(const char *name, uint16_t *port_a, uint16_t *port_b)
{
	if (name == NULL || name[0] == '\0' || port_a == NULL || port_b == NULL)
		return EINVAL;
	return dpv_engine_ring_pair(name, (int)rte_socket_id(), port_a, port_b);
}

int dpv_verbs_set_progress(struct ibv_context *context, const char *mode)
{
	return dpv_verbs_apply_progress(to_ctx(context)->dev, mode);
}

int dpv_verbs_set_inline_idle_us(uint32_t us)
{
	int ret;

	pthread_mutex_lock(&dpv_verbs_devices_lock);
	ret = dpv_engine_set_inline_idle_us(us);
	if (ret == 0)
		dpv_verbs_conf.inline_idle_us = us; /* devices opened later keep it */
	pthread_mutex_unlock(&dpv_verbs_devices_lock);
	return ret;
}

int dpv_verbs_set_fault_guard(int on)
{
	int ret = 0;

	if (on != 0 && on != 1)
		return EINVAL;
	pthread_mutex_lock(&dpv_verbs_devices_lock);
	if (dpv_verbs_conf.fault_guard_taken)
		ret = EBUSY;
	else
		dpv_verbs_conf.fault_guard = (uint32_t)on;
	pthread_mutex_unlock(&dpv_verbs_devices_lock);
	return ret;
}

int dpv_verbs_query_engine(struct ibv_context *context, struct dpv_verbs_engine_stats *stats)
{
	const struct dpv_dev *dev = to_ctx(context)->dev;

	if (stats == NULL)
		return EINVAL;
	/* The owner writes them: a snapshot, each counter read whole. */
	stats->polls = __atomic_load_n(&dev->stats.polls, __ATOMIC_RELAXED);
	stats->busy_polls = __atomic_load_n(&dev->stats.busy_polls, __ATOMIC_RELAXED);
	stats->helper_polls = __atomic_load_n(&dev->stats.helper_polls, __ATOMIC_RELAXED);
	return 0;
}
