/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * tm_ref: a deliberately simple reference model of lib/tm (dpv_tm.h).
 *
 * One array of entries in the order they were added, searched linearly; handles from
 * a plain FIFO queue. It exists to be obviously right, not fast: the differential test
 * and the fuzzer compare dpv_tm against it step by step, and dpv-perf measures it side
 * by side with dpv_tm as the baseline. It speaks dpv_tm's own structs and follows the
 * same contract call for call (see dpv_tm.h for each call's meaning and errors).
 */
#ifndef TM_REF_H
#define TM_REF_H

#include "dpv_tm.h"

struct tm_ref;

int tm_ref_create(const struct dpv_tm_config *cfg, struct tm_ref **out);
void tm_ref_destroy(struct tm_ref *ref);
int tm_ref_post(struct tm_ref *ref, struct dpv_tm_op *op);
void tm_ref_exec(struct tm_ref *ref, const struct dpv_tm_op *op, struct dpv_tm_cqe *cqe);
void tm_ref_match(struct tm_ref *ref, const struct dpv_tm_tmh *tmh, bool srq_wr_available,
		  struct dpv_tm_match *m);
int tm_ref_release(struct tm_ref *ref, uint32_t handle);
uint32_t tm_ref_unexpected(const struct tm_ref *ref);
uint32_t tm_ref_synced(const struct tm_ref *ref);

#endif /* TM_REF_H */
