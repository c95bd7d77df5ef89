/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Destroyed RC QPs that still answer their peers for a while (dpv_xport_linger.c), as a
 * TCP endpoint in TIME_WAIT does: what the transport keeps of each, and the calls
 * dpv_xport_dev.c and dpv_xport_qp.c make. Not installed.
 */
#ifndef DPV_XPORT_LINGER_H
#define DPV_XPORT_LINGER_H

#include <stdbool.h>
#include <stdint.h>

/* Records a device keeps at once; a new one beyond them takes the place of the one
 * that ends first. */
#define XP_LINGER_MAX 64u

struct dpv_xport;
struct dpv_wire_pkt;
struct xp_qp;

/* The responder side of one destroyed RC QP: enough to acknowledge again what it had
 * received (IBTA 9.7.5.1, duplicate requests), nothing it would need memory for. */
struct xp_linger_rec {
	uint64_t until;      /**< TSC: answers until then; 0 or past: a free slot */
	uint64_t end;        /**< TSC: the latest until may be pushed to */
	uint64_t period;     /**< TSC cycles a duplicate keeps the record on for */
	uint32_t qpn;        /**< the QP's number */
	uint32_t peer_ip;
	uint32_t peer_qpn;
	uint32_t epsn;       /**< the PSN the responder expected next */
	uint32_t msn;
	uint8_t tos, ttl;
};

struct xp_linger {
	uint64_t max_cycles;  /**< the longest period (DPV_LINGER_MS); 0: no records */
	uint32_t ms;          /**< the same in milliseconds, as set */
	struct xp_linger_rec rec[XP_LINGER_MAX];
};

/* Set the longest period at device creation. */
void xp_linger_init(struct dpv_xport *x);
/* @p q is being destroyed: keep its record when it was a connected RC QP that
 * received a request less than its period ago. */
void xp_linger_qp(struct dpv_xport *x, const struct xp_qp *q);
/* A frame @p p for a QP number no QP has: true when a record answered it (an ACK
 * sent); false, the frame is the caller's to count and drop. */
bool xp_linger_rx(struct dpv_xport *x, const struct dpv_wire_pkt *p);

#endif /* DPV_XPORT_LINGER_H */
