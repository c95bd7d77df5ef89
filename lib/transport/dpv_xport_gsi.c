/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * QP 1, the GSI (IBTA 13.5): on RoCEv2 a GSI datagram is a UD SEND_ONLY to destination
 * QP 1 with the GSI Q_Key in its DETH and one 256-byte MAD as its payload (IBTA 13.5.1,
 * A16/A17: the same packet as on InfiniBand, in UDP port 4791). The device has no
 * QP 1 of its own: it hands each datagram to one registered consumer (the engine's
 * connection manager) and sends the MADs that consumer gives it.
 */
#include <errno.h>
#include <string.h>

#include <rte_mbuf.h>

#include "dpv_xport_priv.h"

void dpv_xport_set_gsi(struct dpv_xport *x, dpv_xport_gsi_fn fn, void *arg)
{
	x->gsi_fn = fn;
	x->gsi_arg = arg;
}

void xp_gsi_rx(struct dpv_xport *x, const struct dpv_wire_pkt *p, const uint8_t *frame)
{
	if (p->opcode != DPV_OP_UD_SEND_ONLY || p->deth_qkey != DPV_GSI_QKEY ||
	    p->payload_len != DPV_GSI_MAD_LEN || x->gsi_fn == NULL) {
		x->stats.rx_gsi_dropped++;
		return;
	}
	x->stats.rx_gsi++;
	x->gsi_fn(x->gsi_arg, p->src_ip, frame + p->hdr_len);
}

int dpv_xport_gsi_send(struct dpv_xport *x, uint32_t dst_ip, const void *mad, uint32_t len)
{
	struct dpv_wire_pkt p;
	struct rte_mbuf *m;
	uint8_t *payload;

	if (len != DPV_GSI_MAD_LEN)
		return EINVAL;
	if (xp_port_room(x, dst_ip) == 0)
		return EAGAIN;
	/* IBTA 13.5.1: source and destination QP 1; the GSI's PSN is not checked by the
	 * receiver (UD), each datagram takes the next. */
	xp_pkt_init(x, &p, DPV_OP_UD_SEND_ONLY, dst_ip, DPV_GSI_QPN, DPV_GSI_QPN, x->gsi_psn, 0, 0);
	x->gsi_psn = psn_add(x->gsi_psn, 1);
	p.deth_qkey = DPV_GSI_QKEY;
	p.deth_src_qp = DPV_GSI_QPN;
	m = xp_frame_alloc(x, &p, len, &payload);
	if (m == NULL)
		return ENOBUFS;
	memcpy(payload, mad, len);
	xp_frame_send(x, m, dst_ip);
	/* Called between the device's calls too: what is batched leaves now. */
	xp_tx_flush(x);
	x->stats.tx_gsi++;
	return 0;
}
