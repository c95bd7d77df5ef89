/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpv-perf: the harness the verbs benchmarks (srq-post, pingpong, idle, loss, rndv)
 * share. They are ordinary verbs programs: <infiniband/verbs.h> and the dpverbs facade,
 * two devices dpv0 and dpv1 in one process, RC queue pairs between them, one thread
 * driving both sides through inline progress (every poll and post runs the engine of
 * both devices). The harness opens the devices, builds the two sides of an RC QP pair
 * (CQ or TM SRQ, QP, registered buffers), connects and tears them down, and writes the
 * setup the run used into the output and the help.
 */
#ifndef DPV_PERF_VERBS_H
#define DPV_PERF_VERBS_H

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "perf.h"

/*
 * The setup dpv-perf makes when the environment names none (neither DPV_EAL_ARGS nor
 * DPV_CONFIG): EAL on lcore 0 without hugepages or PCI, one in-process ring pair
 * (ethdev ports 0 and 1, devices dpv0 and dpv1) with loopback-range addresses.
 */
#define PV_DEFAULT_EAL_ARGS "-l 0 --no-pci --no-huge --no-shconf -m 512 --no-telemetry " \
			    "--log-level=lib.eal:error"
#define PV_DEFAULT_RING_PAIRS "1"
#define PV_DEFAULT_PORT_IPV4 "127.0.20.1,127.0.20.2"

/* Seconds a wait for a completion may last before the run is declared broken. */
#define PV_STALL_SECONDS 5.0

/*
 * Set DPV_EAL_ARGS, DPV_RING_PAIRS and DPV_PORT_IPV4 to the defaults above, each only
 * if unset, when neither DPV_EAL_ARGS nor DPV_CONFIG is set. A user's own setup is
 * left alone. @return true when dpv-perf supplied the setup.
 */
bool pv_env_defaults(void);

/* One device as the benchmarks use it: context, PD, GID index 0. */
struct pv_dev {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	/* pv_use_td(): a thread domain and a parent domain over pd with it, which the
	 * pv_side_* objects are made with (they take no lock); NULL: made with pd. */
	struct ibv_td *td;
	struct ibv_pd *parent;
	/* IBV_WC_EX_WITH_* the pv_side_* CQs add to theirs (completion timestamps). */
	uint64_t wc_flags;
	union ibv_gid gid;
	char name[IBV_SYSFS_NAME_MAX];
};

/*
 * List the devices (starting EAL: pv_env_defaults() first) and open the first two,
 * each with a PD and its GID. @return 0, or -1 after saying why on stderr.
 */
int pv_open_pair(struct pv_dev dev[2]);

/* Close what pv_open_pair() opened (NULL members are skipped). @return 0 or -1. */
int pv_close_pair(struct pv_dev dev[2]);

/* After pv_open_pair(): the pv_side_* objects of both devices under a thread domain
 * (ibv_alloc_td(3), ibv_alloc_parent_domain(3)). @return 0, or -1 after saying why. */
int pv_use_td(struct pv_dev dev[2]);

/*
 * The result @p ret of destroying @p what: 0, or -1 after saying so. A destroy that
 * fails leaves an object behind, which is a wrong result too.
 */
int pv_destroyed(const char *what, int ret);

/* The configuration the run used, for the output header. */
const char *pv_env_eal_args(void);
const char *pv_env_port_ipv4(void);
const char *pv_env_progress(void);

/*
 * Move an RC QP through INIT, RTR and RTS towards @p peer_qpn at @p peer_gid
 * (path MTU 1024, RNR retry forever). @return 0 or -1 after saying why.
 */
int pv_rc_connect(struct ibv_qp *qp, uint32_t peer_qpn, const union ibv_gid *peer_gid);

/*
 * pv_rc_connect() with @p rd_atomic READs and atomics outstanding each way
 * (max_rd_atomic and max_dest_rd_atomic; pv_rc_connect() has 1).
 * @return 0 or -1 after saying why.
 */
int pv_rc_connect_rd(struct ibv_qp *qp, uint32_t peer_qpn, const union ibv_gid *peer_gid,
		     uint8_t rd_atomic);

/* Move an RC QP to INIT (receives may be posted from then on). @return 0 or -1. */
int pv_rc_init(struct ibv_qp *qp);

/*
 * pv_rc_init() with the remote accesses @p access (IBV_ACCESS_* of qp_access_flags)
 * that the peer's requests need, as IBV_ACCESS_REMOTE_READ for its RDMA READs.
 * @return 0 or -1 after saying why.
 */
int pv_rc_init_access(struct ibv_qp *qp, unsigned int access);

/* A deadline PV_STALL_SECONDS from now, in perf_now_ns() time. */
uint64_t pv_deadline(void);

/* Whether @p deadline has passed (reads the clock once every 4096 calls). */
bool pv_stalled(uint64_t deadline, uint32_t *calls);

/*
 * One side of an RC QP pair: its CQ, the TM SRQ its QP receives on (or none: the QP
 * has an RQ), and two registered buffers: slots for small messages (the benchmark
 * decides their size and use) and data, for large ones (NULL when unused). The
 * counters are the benchmark's to keep.
 */
struct pv_side {
	struct ibv_cq *cq;            /* with a TM SRQ: ibv_cq_ex_to_cq(cqx) */
	struct ibv_cq_ex *cqx;        /* the TM SRQ's extended CQ (TM_INFO) */
	struct ibv_srq *srq;          /* the TM SRQ, or NULL */
	struct ibv_qp *qp;
	struct ibv_mr *slot_mr, *data_mr;
	uint8_t *slots, *data;
	uint64_t sends, sig_posted, sig_done; /* SENDs posted, of them signaled, completed */
	uint64_t recvs;               /* receives consumed */
};

/* Slot @p j of @p s, slots of @p slot_len bytes. */
static inline uint8_t *
pv_slot(const struct pv_side *s, uint32_t j, uint32_t slot_len)
{
	return s->slots + (size_t)j * slot_len;
}

/*
 * A buffer of @p len bytes (rounded up to whole 4 KiB pages), page-aligned, zeroed (so
 * no message pays for the first write of a page), registered on @p d with @p access.
 * On failure says why, prefixed with @p cmd. @return 0 or -1; what was made is in
 * *buf and *mr either way, for pv_side_teardown().
 */
int pv_alloc_mr(const char *cmd, const struct pv_dev *d, size_t len, int access,
		uint8_t **buf, struct ibv_mr **mr);

/* An ordinary CQ of @p cqe entries for side @p s on @p d. @return 0 or -1. */
int pv_side_cq(const char *cmd, struct pv_side *s, const struct pv_dev *d, int cqe);

/*
 * A TM SRQ for side @p s on @p d (@p max_wr ordinary WRs, @p tags tags, @p ops
 * outstanding tag operations) and its extended CQ of @p cqe entries, whose completions
 * carry byte_len, qp_num and the TM info. @return 0 or -1 after saying why.
 */
int pv_side_tm_srq(const char *cmd, struct pv_side *s, const struct pv_dev *d, int cqe,
		   uint32_t max_wr, uint32_t tags, uint32_t ops);

/*
 * Side @p s's RC QP on @p d: send and receive on s->cq, receives from s->srq when
 * there is one (else an RQ of @p rq_depth), @p sq_depth send WRs of one SGE,
 * @p max_inline inline bytes; moved to INIT with the remote accesses @p access
 * (pv_rc_init_access()). @return 0 or -1 after saying why.
 */
int pv_side_qp(const char *cmd, struct pv_side *s, const struct pv_dev *d,
	       uint32_t sq_depth, uint32_t rq_depth, uint32_t max_inline, unsigned int access);

/* Connect the QPs of @p side[0] (on @p dev[0]) and @p side[1] to each other. @return 0 or -1. */
int pv_connect_pair(struct pv_side side[2], const struct pv_dev dev[2]);

/*
 * Destroy what side @p s holds (QP, SRQ, CQ, MRs, buffers; NULL members skipped) and
 * zero it. @return 0, or -1 when an object would not go.
 */
int pv_side_teardown(struct pv_side *s);

/*
 * The setup of the run, as every benchmark reports it: where it came from
 * (@p defaulted: pv_env_defaults() supplied it), DPV_EAL_ARGS, DPV_PORT_IPV4 and the
 * progress mode. pv_print_setup() writes the two lines ending a table's header (and the
 * blank line after them); pv_json_setup() the members of a JSON "config" object, after
 * the devices' names ("devices" and "peer") when @p dev is not NULL.
 */
void pv_print_setup(bool defaulted);
void pv_json_setup(struct perf_json *j, const struct pv_dev *dev, bool defaulted);

/* The lines of a verbs benchmark's --help that say which setup it makes when none is given. */
void pv_help_setup(void);

#endif /* DPV_PERF_VERBS_H */
