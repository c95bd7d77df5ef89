/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Connection set-up and data patterns that every verbs test shares, the cmocka tests of
 * one process (verbs_test.h) and the multi-process peers alike: a QP of each type to
 * RTS with every connection attribute a test may want, and a bounded poll. Only
 * <infiniband/verbs.h>, no cmocka: the functions return an errno and leave reporting
 * to the caller.
 */
#ifndef VERBS_CONNECT_H
#define VERBS_CONNECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

/* The far end of a connected QP: its number, its GID and the first PSN it sends. */
struct qp_peer {
	uint32_t qpn;
	union ibv_gid gid;
	uint32_t psn;
};

/*
 * The attributes of a connection (ibv_modify_qp(3)), each taken as it is (0 is a value
 * of most of them), but for mtu: left 0, IBV_MTU_1024. RC takes them all; UC takes
 * access, mtu and sgid_index.
 */
struct conn_opts {
	unsigned int access;        /* IBV_ACCESS_REMOTE_* this QP lets its peer do */
	uint8_t rnr_retry;
	uint8_t min_rnr_timer;
	uint8_t timeout;            /* local ACK timeout exponent (14: 67 ms) */
	uint8_t retry_cnt;
	uint8_t max_rd_atomic;      /* READs and atomics this QP has outstanding */
	uint8_t max_dest_rd_atomic; /* those it answers for its peer */
	uint8_t sgid_index;
	enum ibv_mtu mtu;
};

/*
 * Take RC QP @p qp through INIT and RTR to RTS, connected to @p peer, sending from PSN
 * @p sq_psn. Returns 0, or the errno of the first ibv_modify_qp() that failed; @p step
 * (if not NULL) then names the state it was going to.
 */
int rc_qp_to_rts(struct ibv_qp *qp, uint32_t sq_psn, const struct qp_peer *peer,
		 const struct conn_opts *o, const char **step);
/* The same for a UC QP: RC's connection attributes without its reliability ones. */
int uc_qp_to_rts(struct ibv_qp *qp, uint32_t sq_psn, const struct qp_peer *peer,
		 const struct conn_opts *o, const char **step);
/* Take UD QP @p qp to RTS with Q_Key @p qkey, sending from PSN @p sq_psn. */
int ud_qp_to_rts(struct ibv_qp *qp, uint32_t qkey, uint32_t sq_psn, const char **step);

/* Poll @p cq for one completion into @p wc for up to @p ms milliseconds: 1, 0 when none
 * came, or -1 when ibv_poll_cq() failed. */
int poll_one_for(struct ibv_cq *cq, struct ibv_wc *wc, unsigned int ms);

/* GID 0 of a dpverbs port: the IPv4-mapped address @p ipv4 (host order). */
union ibv_gid gid_of_ipv4(uint32_t ipv4);

#endif /* VERBS_CONNECT_H */
