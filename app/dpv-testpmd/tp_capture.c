/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * capture start <file.pcapng> [<dev>] / capture stop. The capture itself lives in
 * lib/verbs (dpv_verbs_capture_start()); this build has none, and says so.
 */
#include <errno.h>
#include <string.h>

#include "testpmd.h"

int tp_cmd_capture(const struct tp_args *a)
{
	if (a->n < 2 || (strcmp(a->w[1], "start") != 0 && strcmp(a->w[1], "stop") != 0))
		return tp_err("capture", EINVAL, "capture start <file.pcapng> [<dev>] | capture stop");
	return tp_err("capture", ENOTSUP, "not available in this build");
}

void tp_capture_stop_all(void)
{
}
