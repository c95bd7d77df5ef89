/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The values lib/transport shares with rdma-core's <infiniband/verbs.h>. The transport
 * knows nothing of rdma-core, and yet the facade hands some words across unchanged: a
 * QP's state and type, ibv_modify_qp()'s attribute mask, the access flags of MRs and
 * QPs, the path MTU. Each such value is asserted here, one line each, so that one that
 * drifts fails the build instead of a program. The rest go through a table or a switch
 * that names both sides, where no value can drift: completion status, opcode and flags
 * (verbs_cq.c), send opcodes and flags and QP events (verbs_qp.c), TM op codes and flags
 * (verbs_srq.c).
 */
#include <infiniband/verbs.h>

#include "dpv_xport.h"

/* Each side through int: the two are enums of different types. */
#define SAME_VALUE(dpv, ibv) _Static_assert((int)(dpv) == (int)(ibv), #dpv " is not " #ibv)

/* enum dpv_access: an MR's access word is stored as given (verbs_mem.c), a QP's is
 * masked to these bits (verbs_qp.c), and the device checks both against them. */
SAME_VALUE(DPV_ACCESS_LOCAL_WRITE, IBV_ACCESS_LOCAL_WRITE);
SAME_VALUE(DPV_ACCESS_REMOTE_WRITE, IBV_ACCESS_REMOTE_WRITE);
SAME_VALUE(DPV_ACCESS_REMOTE_READ, IBV_ACCESS_REMOTE_READ);
SAME_VALUE(DPV_ACCESS_REMOTE_ATOMIC, IBV_ACCESS_REMOTE_ATOMIC);
SAME_VALUE(DPV_ACCESS_MW_BIND, IBV_ACCESS_MW_BIND);

/* enum dpv_qp_type: as its header says, IBV_QPT_* values. */
SAME_VALUE(DPV_QPT_RC, IBV_QPT_RC);
SAME_VALUE(DPV_QPT_UC, IBV_QPT_UC);
SAME_VALUE(DPV_QPT_UD, IBV_QPT_UD);

/* enum dpv_qp_state: ibv_modify_qp() passes qp_state down and ibv_qp.state,
 * ibv_query_qp() and the verbs' state checks read dpv_qp_attr.state back as is. */
SAME_VALUE(DPV_QPS_RESET, IBV_QPS_RESET);
SAME_VALUE(DPV_QPS_INIT, IBV_QPS_INIT);
SAME_VALUE(DPV_QPS_RTR, IBV_QPS_RTR);
SAME_VALUE(DPV_QPS_RTS, IBV_QPS_RTS);
SAME_VALUE(DPV_QPS_SQD, IBV_QPS_SQD);
SAME_VALUE(DPV_QPS_SQE, IBV_QPS_SQE);
SAME_VALUE(DPV_QPS_ERR, IBV_QPS_ERR);

/* enum dpv_qp_attr_mask: ibv_modify_qp() passes its attr_mask to dpv_qp_modify(). */
SAME_VALUE(DPV_QP_STATE, IBV_QP_STATE);
SAME_VALUE(DPV_QP_ACCESS_FLAGS, IBV_QP_ACCESS_FLAGS);
SAME_VALUE(DPV_QP_PKEY_INDEX, IBV_QP_PKEY_INDEX);
SAME_VALUE(DPV_QP_PORT, IBV_QP_PORT);
SAME_VALUE(DPV_QP_QKEY, IBV_QP_QKEY);
SAME_VALUE(DPV_QP_AV, IBV_QP_AV);
SAME_VALUE(DPV_QP_PATH_MTU, IBV_QP_PATH_MTU);
SAME_VALUE(DPV_QP_TIMEOUT, IBV_QP_TIMEOUT);
SAME_VALUE(DPV_QP_RETRY_CNT, IBV_QP_RETRY_CNT);
SAME_VALUE(DPV_QP_RNR_RETRY, IBV_QP_RNR_RETRY);
SAME_VALUE(DPV_QP_RQ_PSN, IBV_QP_RQ_PSN);
SAME_VALUE(DPV_QP_MAX_QP_RD_ATOMIC, IBV_QP_MAX_QP_RD_ATOMIC);
SAME_VALUE(DPV_QP_MIN_RNR_TIMER, IBV_QP_MIN_RNR_TIMER);
SAME_VALUE(DPV_QP_SQ_PSN, IBV_QP_SQ_PSN);
SAME_VALUE(DPV_QP_MAX_DEST_RD_ATOMIC, IBV_QP_MAX_DEST_RD_ATOMIC);
SAME_VALUE(DPV_QP_DEST_QPN, IBV_QP_DEST_QPN);

/* dpv_qp_attr.path_mtu and dpv_xport_active_mtu(): 1..5, 256 << (n - 1) bytes, passed
 * to and from ibv_qp_attr.path_mtu and ibv_port_attr.active_mtu as is. */
SAME_VALUE(256 << (IBV_MTU_256 - 1), 256);
SAME_VALUE(256 << (IBV_MTU_512 - 1), 512);
SAME_VALUE(256 << (IBV_MTU_1024 - 1), 1024);
SAME_VALUE(256 << (IBV_MTU_2048 - 1), 2048);
SAME_VALUE(256 << (IBV_MTU_4096 - 1), 4096);
