/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpv-perf: what the verbs benchmarks (srq-post, pingpong) share. They are ordinary
 * verbs programs: <infiniband/verbs.h> and the dpverbs facade, two devices dpv0 and
 * dpv1 in one process, RC queue pairs between them, one thread driving both sides
 * through inline progress (every poll and post runs the engine of both devices).
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

#endif /* DPV_PERF_VERBS_H */
