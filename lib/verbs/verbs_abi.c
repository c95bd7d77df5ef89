/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The rest of libibverbs' exported functions (lib/verbs/libibverbs.map): what programs
 * built against rdma-core import besides the verbs the other files implement.
 */
