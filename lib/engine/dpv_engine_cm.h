/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What dpv_engine.c calls of the device's connection manager (dpv_engine_cm.c). Not
 * installed.
 */
#ifndef DPV_ENGINE_CM_H
#define DPV_ENGINE_CM_H

#include <stdint.h>

#include "dpv_engine.h"

/* Make the device's CM and register it as the transport's GSI consumer (dpv_dev_open(),
 * before the device is driven): 0 or ENOMEM. */
int dpv_dev_cm_open(struct dpv_dev *dev);
/* Hear no more of the port's removal (dpv_dev_close(), first, the device not owned by
 * the caller): waits for a removal callback under way, which takes the device. */
void dpv_dev_cm_unhook(struct dpv_dev *dev);
/* Free it (dpv_dev_close(), after dpv_dev_cm_unhook(), the device no longer driven):
 * its connections end without a MAD. */
void dpv_dev_cm_close(struct dpv_dev *dev);
/* Run the timers that are due at @p now_tsc (owner, once dev->cm_next_tsc has
 * passed); sets dev->cm_next_tsc to the next deadline. */
void dpv_dev_cm_tick(struct dpv_dev *dev, uint64_t now_tsc);

#endif /* DPV_ENGINE_CM_H */
