/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The facade's private objects: each wraps rdma-core's public struct (first, so the
 * static-inline verbs of <infiniband/verbs.h> see what they expect) around the
 * device-side object of lib/transport, with to_xxx() converters in rdma-core's style;
 * and what the facade's files share.
 */
#ifndef DPV_VERBS_PRIV_H
#define DPV_VERBS_PRIV_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <infiniband/verbs.h>

#include "dpv_engine.h"
#include "dpv_verbs.h"
#include "dpv_xport.h"
#include "verbs_lock.h"

#ifndef container_of
#define container_of(ptr, type, member) \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))
#endif

/* Lanes of an SRQ: posting threads each get one (more share with a lock). */
#define DPV_VERBS_SRQ_LANES 4u

struct dpv_srq_v;

struct dpv_device {
	struct ibv_device ibdev;
	struct dpv_dev *dev;     /* opened at the first ibv_open_device() */
	uint32_t index;
	uint16_t ethdev_port;
	uint32_t ipv4;
	/* Every SRQ of the device, for telemetry (verbs_telemetry.c): linked and unlinked
	 * by whoever owns the device (dpv_dev_own), so an owner finds each one whole. */
	struct dpv_srq_v *srqs;
	/* Its open contexts, each told of port events (verbs_async.c). */
	pthread_mutex_t contexts_lock;
	struct dpv_context *contexts;
};

struct dpv_async_event {
	enum ibv_event_type type;
	void *obj; /* ibv_cq / ibv_qp / ibv_srq, or NULL for port and device events */
};

#define DPV_ASYNC_QUEUE 256u

struct dpv_context {
	struct verbs_context vctx;
	struct dpv_device *device;
	struct dpv_dev *dev;
	pthread_mutex_t async_lock;
	struct dpv_async_event async_q[DPV_ASYNC_QUEUE];
	uint32_t async_head, async_tail;
	uint64_t async_lost;
	uint32_t next_pd;
	struct dpv_context *next_on_device; /* dpv_device's contexts */
};

/* A thread domain (ibv_alloc_td(3)): the program's promise that one thread at a time
 * uses each object made under it, so those objects take no lock (verbs_td.c). */
struct dpv_td {
	struct ibv_td ibtd;
	uint32_t users;               /* parent domains on it (atomics) */
};

/* A protection domain, or a parent domain (ibv_alloc_parent_domain(3)) over one: the
 * parent has its PD's id, so it is interchangeable with it wherever keys are checked. */
struct dpv_pd {
	struct ibv_pd ibpd;
	uint32_t id;
	uint32_t users;               /* QPs, SRQs, CQs, AHs and parent domains on it
	                                 (atomics); its MRs are found in the device's key
	                                 table */
	struct dpv_pd *protection;    /* a parent domain's PD; NULL: a PD */
	struct dpv_td *td;            /* a parent domain's thread domain, or NULL */
	/* A parent domain's allocator (IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS), or NULL. */
	void *(*alloc)(struct ibv_pd *pd, void *pd_context, size_t size, size_t alignment,
		       uint64_t resource_type);
	void (*free)(struct ibv_pd *pd, void *pd_context, void *ptr, uint64_t resource_type);
	void *pd_context;
};

struct dpv_mr_v {
	struct ibv_mr ibmr;
	struct dpv_mr mr;             /* registered in the device's key table */
};

#define DPV_CHANNEL_QUEUE 1024u

struct dpv_channel {
	struct ibv_comp_channel ibch;
	pthread_mutex_t lock;
	/* CQs whose event is pending, in order; a CQ appears at most once per arming. */
	struct ibv_cq *pending[DPV_CHANNEL_QUEUE];
	uint32_t head, tail;
	uint64_t lost;
	uint32_t users;               /* CQs using it (atomics) */
};

struct dpv_cq_v {
	struct ibv_cq_ex ibcq;        /* ibv_cq is its prefix: one struct for both APIs */
	struct dpv_context *ctx;
	struct dpv_cq *cq;
	struct dpv_vlock poll_lock;   /* poll_cq callers of one CQ (verbs_lock.h) */
	bool poll_fast;               /* dpv_vlock()'s answer to ibv_start_poll's holder */
	uint64_t wc_flags;            /* IBV_WC_EX_WITH_* asked for */
	struct dpv_cqe cur;           /* ibv_start_poll's current completion */
	uint32_t users;               /* QPs and SRQs using it (control path) */
	struct dpv_pd *parent;        /* the parent domain it was made with, or NULL */
	bool custom_mem;              /* its memory is its parent domain allocator's */
};

/* An XRC domain (ibv_open_xrcd(3)): a number the device's XRC SRQs and target QPs
 * carry; opened again through the same file, the same domain (refs). */
struct dpv_xrcd_v {
	struct ibv_xrcd ibxrcd;
	struct dpv_device *device;
	uint32_t id;                  /* not 0 */
	uint32_t refs;                /* opens not yet closed */
	uint32_t users;               /* XRC SRQs and target QPs in it (atomics) */
	bool inode;                   /* opened with a file: dev and ino name it */
	dev_t dev;
	ino_t ino;
	struct dpv_xrcd_v *next;      /* the process's list (verbs_xrc.c) */
	struct dpv_qp_v *tgts;        /* its target QPs (ibv_open_qp(3) finds them) */
};

static inline struct dpv_xrcd_v *to_xrcd(struct ibv_xrcd *x)
{
	return container_of(x, struct dpv_xrcd_v, ibxrcd);
}

struct ibv_xrcd *dpv_verbs_open_xrcd(struct ibv_context *context,
				     struct ibv_xrcd_init_attr *attr);
int dpv_verbs_close_xrcd(struct ibv_xrcd *xrcd);
int dpv_verbs_get_srq_num(struct ibv_srq *srq, uint32_t *srq_num);
struct ibv_qp *dpv_verbs_open_qp(struct ibv_context *context, struct ibv_qp_open_attr *attr);
/* A new XRC target QP joins its domain's list. */
void dpv_verbs_xrc_tgt_add(struct dpv_qp_v *qp);
/* ibv_destroy_qp(3) of an XRC target or of a handle opened on one: the target QP to
 * destroy now (leaving its domain's list), or NULL when handles still hold it (the
 * handle destroyed is freed here). */
struct dpv_qp_v *dpv_verbs_xrc_tgt_release(struct dpv_qp_v *qp);

struct dpv_srq_v {
	struct ibv_srq ibsrq;
	struct dpv_context *ctx;
	struct dpv_srq *srq;
	bool tm;
	struct ibv_xrcd *xrcd;        /* an XRC SRQ's domain; NULL: not XRC */
	uint32_t max_sge;
	uint32_t users;               /* QPs attached (control path) */
	struct ibv_cq *cq;            /* TM, XRC: the CQ of its completions */
	struct dpv_vlock lane_lock[DPV_VERBS_SRQ_LANES]; /* posters of one lane (verbs_lock.h) */
	struct dpv_vlock ops_lock;    /* dpv_tm_post's post side is one thread at a time */
	bool custom_mem;              /* its memory is its parent domain allocator's */
	struct dpv_srq_v *next_on_dev; /* dpv_device's srqs */
};

/* The WRs of one ibv_wr_start() .. ibv_wr_complete() batch (verbs_qp_ex.c). */
struct dpv_wr_batch {
	struct ibv_send_wr *wr;       /* max_send_wr of them */
	struct ibv_sge *sge;          /* sge_per_wr per WR */
	uint32_t sge_per_wr;          /* max_send_sge, at least 1 (for inline data) */
	uint8_t *inl;                 /* max_inline bytes per WR: inline data is copied */
	uint32_t cap, n;
	int err;                      /* the first bad call's errno: the batch fails */
};

struct dpv_qp_v {
	union {                       /* ibv_qp_ex starts with the ibv_qp */
		struct ibv_qp ibqp;
		struct ibv_qp_ex ibqpx;
	};
	struct dpv_wr_batch *batch;   /* with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS only */
	struct dpv_context *ctx;
	struct dpv_qp *qp;
	struct dpv_vlock sq_lock;     /* posters of one QP (verbs_lock.h) */
	bool custom_mem;              /* its memory is its parent domain allocator's */
	struct dpv_vlock rq_lock;
	uint32_t max_inline;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	struct ibv_xrcd *xrcd;        /* an XRC target QP's domain, else NULL */
	/* XRC targets (verbs_xrc.c), under its lock: a handle of ibv_open_qp(3) names the
	 * target it opened and is on the target's list of them; a target destroyed while
	 * that list is not empty is closed and lives on for them (its events then go to
	 * one of them); each target is on its domain's list. */
	struct dpv_qp_v *opened_of;
	struct dpv_qp_v *opened, *next_open;
	bool closed;
	struct dpv_qp_v *next_tgt;
};

struct dpv_ah {
	struct ibv_ah ibah;
	uint32_t dst_ip;
	uint8_t tos;
	uint8_t ttl;
};

static inline struct dpv_context *to_ctx(struct ibv_context *c)
{
	return container_of(container_of(c, struct verbs_context, context), struct dpv_context,
			    vctx);
}

static inline struct dpv_pd *to_pd(struct ibv_pd *p) { return container_of(p, struct dpv_pd, ibpd); }
/* The thread domain @p p was made under (a parent domain's), or NULL: objects made
 * with @p p take their locks. */
static inline struct dpv_td *dpv_verbs_pd_td(struct ibv_pd *p) { return to_pd(p)->td; }
static inline struct dpv_mr_v *to_mr(struct ibv_mr *m) { return container_of(m, struct dpv_mr_v, ibmr); }
static inline struct dpv_cq_v *to_cq(struct ibv_cq *c)
{
	return container_of((struct ibv_cq_ex *)(void *)c, struct dpv_cq_v, ibcq);
}
static inline struct dpv_cq_v *to_cq_ex(struct ibv_cq_ex *c) { return container_of(c, struct dpv_cq_v, ibcq); }
static inline struct dpv_srq_v *to_srq(struct ibv_srq *s) { return container_of(s, struct dpv_srq_v, ibsrq); }
static inline struct dpv_qp_v *to_qp(struct ibv_qp *q) { return container_of(q, struct dpv_qp_v, ibqp); }
static inline struct dpv_ah *to_ah(struct ibv_ah *a) { return container_of(a, struct dpv_ah, ibah); }
static inline struct dpv_channel *to_channel(struct ibv_comp_channel *c)
{
	return container_of(c, struct dpv_channel, ibch);
}

/* ---- verbs_config.c: the settings, environment first, then the DPV_CONFIG file ---- */

#define DPV_VERBS_CONFIG_LEN 1024

struct dpv_verbs_conf {
	char eal_args[DPV_VERBS_CONFIG_LEN];
	char ipv4[DPV_VERBS_CONFIG_LEN];
	char progress[64];
	char capture[DPV_VERBS_CONFIG_LEN];
	char faults[DPV_FAULTS_SPEC_MAX];   /* every port's, unless it has its own */
	char port_faults[DPV_MAX_DEVS][DPV_FAULTS_SPEC_MAX]; /* [portN] faults */
	uint32_t ring_pairs;
	uint32_t inline_idle_us;
	uint32_t arp_lifetime_ms;
	uint32_t link_wait_ms;
	uint32_t linger_ms;
	uint32_t fault_guard;   /* 1: dpv_xport_fault_guard() before the first device */
	uint32_t cm_response_timeout; /* the CM's timing of every device (its exponents) */
	uint32_t cm_retries;
	uint32_t cm_packet_life_time;
	bool fault_guard_taken; /* a device opened: the choice is made */
};

/* Read once, by dpv_verbs_load_config() (or dpv_verbs_load_faults_env()), under
 * dpv_verbs_devices_lock; inline_idle_us changes later under it too. */
extern struct dpv_verbs_conf dpv_verbs_conf;

/* Say what is wrong once, on stderr, in words a person can act on. */
void dpv_verbs_complain(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Every setting, environment first; 0, or EINVAL (said why). */
int dpv_verbs_load_config(void);
/* DPV_FAULTS alone, for the devices of a DPDK-native program; 0, or EINVAL (said why). */
int dpv_verbs_load_faults_env(void);
/* Start EAL with the settings' EAL arguments: 0 (also when the program started it),
 * ENODEV or EINVAL (said why). */
int dpv_verbs_start_eal(void);
/* Whether the EAL arguments carry option @p opt. */
bool dpv_verbs_eal_has(const char *opt);
/* The IPv4 address of the @p index-th port from DPV_PORT_IPV4; 0, or EINVAL (said why). */
int dpv_verbs_port_ipv4(unsigned int index, uint32_t *ipv4);
/* The fault spec of a device: its port's own ([portN] faults), else every port's. */
const char *dpv_verbs_faults_of(const struct dpv_device *d);

/* ---- verbs_devlist.c: the process's devices ---- */

/* The devices, in the order they were listed or opened; each lives as long as the
 * process. The lock guards the list, each device's open and capture, and the
 * settings' later changes. */
extern pthread_mutex_t dpv_verbs_devices_lock;
extern struct dpv_device *dpv_verbs_devices[DPV_MAX_DEVS];
extern unsigned int dpv_verbs_n_devices;

/* The device of DPDK port @p port_id for a DPDK-native program, listed now if it was
 * not (with @p ipv4): 0, EINVAL (a DPV_FAULTS spec not valid), ENOSPC or ENOMEM. */
int dpv_verbs_device_of_port(uint16_t port_id, uint32_t ipv4, struct dpv_device **out);
/* The node GUID of an open device: its port's MAC as an EUI-64. */
__be64 dpv_verbs_node_guid(const struct dpv_dev *dev);

/* ---- verbs_capture.c ---- */

/* DPV_CAPTURE: the device @p d, just opened, joins the one file of every device
 * (dpv_verbs_devices_lock held); 0 when nothing is to be captured. */
int dpv_verbs_capture_env(struct dpv_device *d);
/* At exit: finish every device's capture, so its file is whole. */
void dpv_verbs_capture_finish_all(void);

/* ---- verbs_async.c ---- */

/* The device's link went up or down (its owner calls it): every open context of the
 * device (@p arg) hears of it. */
void dpv_verbs_port_event(struct dpv_dev *dev, bool up, void *arg);

/* The opened device named @p name (dpvN), or NULL (any thread; devices live as long as
 * the process). */
struct dpv_device *dpv_verbs_device_named(const char *name);
/* The names of the opened devices, up to @p max; @return how many (any thread). */
unsigned int dpv_verbs_opened_devices(struct dpv_device **out, unsigned int max);
/* Register the /dpverbs/ telemetry commands, once per process (verbs_telemetry.c). */
void dpv_verbs_telemetry_register(void);
/* The device's counters as dpv_verbs_query_xstats() reports them (verbs_stats.c). */
int dpv_verbs_dev_xstats(const struct dpv_dev *dev, struct dpv_verbs_xstat *xs, unsigned int n);
/* The protocol counters of a QP, as dpv_verbs_query_qp_xstats(). */
int dpv_verbs_qp_xstats(const struct dpv_qp *qp, struct dpv_verbs_xstat *xs, unsigned int n);

/* Apply a DPV_PROGRESS value to a device; says why on stderr when it cannot. */
int dpv_verbs_apply_progress(struct dpv_dev *dev, const char *mode);
/* The CM timing of the settings on @p dev (control thread, at its open); 0 or EINVAL. */
int dpv_verbs_apply_cm_timing(struct dpv_dev *dev);

/* A context on an open device (ibv_open_device, dpv_verbs_open_port). */
struct ibv_context *dpv_verbs_context_new(struct ibv_device *device, struct dpv_dev *dev);

/* With DPV_STATS_DUMP=<prefix> set, write the counters of device @p name to
 * <prefix><name>.txt at exit (verbs_stats.c). The first call registers the atexit
 * handler, so it runs after every handler registered later. */
void dpv_verbs_stats_dump_at_exit(const char *name, const struct dpv_dev *dev);

/* Copy a receive WR into its ring slot (QP receive queue or SRQ lane). */
static inline void dpv_verbs_write_rwqe(const struct ibv_recv_wr *wr, struct dpv_rwqe *w)
{
	w->wr_id = wr->wr_id;
	w->num_sge = (uint32_t)wr->num_sge;
	for (int i = 0; i < wr->num_sge; i++) {
		w->sge[i].addr = wr->sg_list[i].addr;
		w->sge[i].length = wr->sg_list[i].length;
		w->sge[i].lkey = wr->sg_list[i].lkey;
	}
}

/* The thread's lane among @p n (assigned at the thread's first post, in turn). */
uint32_t dpv_verbs_lane(uint32_t n);

/* Queue an async event for ibv_get_async_event() (any thread). */
void dpv_verbs_async_event(struct dpv_context *ctx, enum ibv_event_type type, void *obj);

/* The ops tables' entries, by file. */
int dpv_verbs_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);
int dpv_verbs_req_notify_cq(struct ibv_cq *cq, int solicited_only);
struct ibv_cq_ex *dpv_verbs_create_cq_ex(struct ibv_context *c, struct ibv_cq_init_attr_ex *attr);
int dpv_verbs_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
int dpv_verbs_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice, uint32_t flags,
			struct ibv_sge *sg_list, uint32_t num_sge);
/* Memory windows (verbs_mem.c): ibv_alloc_mw(3), ibv_dealloc_mw(3), ibv_bind_mw(3). */
struct ibv_mw *dpv_verbs_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
int dpv_verbs_dealloc_mw(struct ibv_mw *mw);
int dpv_verbs_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *mw_bind);
/* A QP of @p dev numbered @p qpn is being destroyed, the device owned: the type 2
 * windows bound through it are unbound (dpv_mw_unbind_qp()). */
void dpv_verbs_mw_qp_gone(struct dpv_dev *dev, uint32_t qpn);
/* The bind of window @p mw that @p info describes, with key @p rkey (its tag, bits 7..0,
 * the caller's), into send WQE @p w (ibv_post_send(3) IBV_WR_BIND_MW, ibv_wr_bind_mw(3)):
 * 0, or EINVAL for access flags other than remote read, write, atomic and local write,
 * or zero-based. The device checks the rest when it binds (IBV_WC_MW_BIND_ERR). */
int dpv_verbs_bind_wqe(const struct ibv_mw *mw, uint32_t rkey,
		       const struct ibv_mw_bind_info *info, struct dpv_swqe *w);
/* The extended send API (verbs_qp_ex.c): whether @p ops (IBV_QP_EX_WITH_*) are offered
 * on a QP of @p type (0, or EOPNOTSUPP); set it up on a new QP (0 or ENOMEM); free it. */
int dpv_verbs_qp_ex_check(enum ibv_qp_type type, uint64_t ops);
int dpv_verbs_qp_ex_init(struct dpv_qp_v *qp);
void dpv_verbs_qp_ex_fini(struct dpv_qp_v *qp);
int dpv_verbs_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
int dpv_verbs_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
int dpv_verbs_post_srq_ops(struct ibv_srq *srq, struct ibv_ops_wr *op, struct ibv_ops_wr **bad);
struct ibv_srq *dpv_verbs_create_srq_ex(struct ibv_context *c, struct ibv_srq_init_attr_ex *attr);
struct ibv_qp *dpv_verbs_create_qp_ex(struct ibv_context *c, struct ibv_qp_init_attr_ex *attr);
int dpv_verbs_query_device_ex(struct ibv_context *c, const struct ibv_query_device_ex_input *in,
			      struct ibv_device_attr_ex *attr, size_t attr_size);
int dpv_verbs_query_port(struct ibv_context *c, uint8_t port, struct ibv_port_attr *attr,
			 size_t attr_len);
/* Thread and parent domains (verbs_td.c); dpv_verbs_parent_dealloc() is
 * ibv_dealloc_pd(3) of a parent domain (0 or EBUSY). */
struct ibv_td *dpv_verbs_alloc_td(struct ibv_context *c, struct ibv_td_init_attr *attr);
int dpv_verbs_dealloc_td(struct ibv_td *td);
struct ibv_pd *dpv_verbs_alloc_parent_domain(struct ibv_context *c,
					     struct ibv_parent_domain_init_attr *attr);
int dpv_verbs_parent_dealloc(struct dpv_pd *parent);
/* Zeroed memory of @p size for a verbs object of DPV_VERBS_RES_TYPE_* @p type made with
 * @p pd: from its parent domain's allocator when it has one that does not answer
 * IBV_ALLOCATOR_USE_DEFAULT (then *@p custom is true), else calloc(). NULL: ENOMEM. */
void *dpv_verbs_obj_alloc(struct ibv_pd *pd, size_t size, uint32_t type, bool *custom);
/* Give back what dpv_verbs_obj_alloc() gave. */
void dpv_verbs_obj_free(struct ibv_pd *pd, void *p, uint32_t type, bool custom);

/* GID index 0: the IPv4-mapped address of the port (::ffff:a.b.c.d). */
void dpv_verbs_gid_of(uint32_t ipv4, union ibv_gid *gid);
/* The IPv4 address of an IPv4-mapped GID; false if the GID is not one. */
bool dpv_verbs_gid_ipv4(const union ibv_gid *gid, uint32_t *ipv4);

/*
 * libibverbs.so.1 exports these (libibverbs.map) but rdma-core installs no header that
 * declares them (they live in its driver.h and marshall.h): their prototypes and the
 * GID type enum below are facts of that ABI. verbs_abi.c defines them; test_abi.c
 * calls them.
 */
struct ibv_sa_path_rec;
struct ib_user_path_rec;
struct ib_uverbs_ah_attr;
struct ib_uverbs_qp_attr;

/* The GID type as ibv_query_gid_type() reports it: values fixed by the ABI. */
enum ibv_gid_type_sysfs {
	IBV_GID_TYPE_SYSFS_IB_ROCE_V1 = 0,
	IBV_GID_TYPE_SYSFS_ROCE_V2 = 1,
};

int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index,
		       enum ibv_gid_type_sysfs *type);
const char *ibv_get_sysfs_path(void);
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size);
int ibv_dontfork_range(void *base, size_t size);
int ibv_dofork_range(void *base, size_t size);
void ibv_copy_qp_attr_from_kern(struct ibv_qp_attr *dst, struct ib_uverbs_qp_attr *src);
void ibv_copy_ah_attr_from_kern(struct ibv_ah_attr *dst, struct ib_uverbs_ah_attr *src);
void ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec *dst, struct ib_user_path_rec *src);
void ibv_copy_path_rec_to_kern(struct ib_user_path_rec *dst, struct ibv_sa_path_rec *src);

/*
 * ibv_reg_mr(3)'s rules for access flags, shared by ibv_reg_mr and ibv_rereg_mr:
 * EINVAL for bits libibverbs does not define, or remote write or atomic without local
 * write; EOPNOTSUPP for what is defined but dpverbs does not offer, as providers answer
 * it: zero-based regions (IBV_ACCESS_ZERO_BASED). IBV_ACCESS_MW_BIND lets memory windows
 * be bound to the region (verbs_mem.c).
 * IBV_ACCESS_HUGETLB is a hint that changes nothing here: accepted. On-demand paging
 * (IBV_ACCESS_ON_DEMAND) is offered: the device copies with the CPU, which faults pages
 * in (verbs_mem.c). 0 when the flags are good.
 */
static inline int dpv_verbs_access_check(unsigned int access)
{
	const unsigned int offered = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
				     IBV_ACCESS_ON_DEMAND | IBV_ACCESS_HUGETLB |
				     IBV_ACCESS_RELAXED_ORDERING | IBV_ACCESS_OPTIONAL_RANGE |
				     IBV_ACCESS_MW_BIND;
	const unsigned int not_offered = IBV_ACCESS_ZERO_BASED;

	if ((access & ~(offered | not_offered)) != 0 ||
	    ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	     !(access & IBV_ACCESS_LOCAL_WRITE)))
		return EINVAL;
	return (access & not_offered) != 0 ? EOPNOTSUPP : 0;
}

/* The access bits the device checks, of what the application asked for. */
static inline uint32_t dpv_verbs_access_kept(unsigned int access)
{
	return access & (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND);
}

#endif /* DPV_VERBS_PRIV_H */
