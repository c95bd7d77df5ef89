/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * capture start <file.pcapng> [<dev>] / capture stop [<dev>]: what a device's port sends
 * and receives, into a pcapng file, while the device runs (dpv_verbs_capture_start()).
 * Without a device every device is captured, each into a file of its own when there
 * are several (<file>-dpvN.pcapng), so each file is one port's view.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "dpv_verbs.h"
#include "testpmd.h"

static char capturing[TP_MAX_DEVS][4096];

/* <file> for one device; <stem>-<dev><ext> for each of several. */
static int path_for(const char *file, unsigned int d, bool several, char *out, size_t len)
{
	const char *dot = strrchr(file, '.'), *slash = strrchr(file, '/');
	int n;

	if (!several)
		n = snprintf(out, len, "%s", file);
	else if (dot != NULL && (slash == NULL || dot > slash))
		n = snprintf(out, len, "%.*s-%s%s", (int)(dot - file), file, tp.dev[d].name, dot);
	else
		n = snprintf(out, len, "%s-%s", file, tp.dev[d].name);
	return n > 0 && (size_t)n < len ? 0 : -1;
}

static int start_one(unsigned int d, const char *path)
{
	int ret;

	if (capturing[d][0] != '\0')
		return tp_err("capture start", EBUSY, "%s is captured into %s already: capture "
			      "stop %s first", tp.dev[d].name, capturing[d], tp.dev[d].name);
	ret = dpv_verbs_capture_start(tp.dev[d].ctx, path);
	if (ret == EBUSY)
		return tp_err("capture start", EBUSY, "%s is captured already (DPV_CAPTURE?)",
			      tp.dev[d].name);
	if (ret != 0)
		return tp_err("capture start", ret, "%s: cannot write %s (%s)", tp.dev[d].name, path,
			      strerror(ret));
	snprintf(capturing[d], sizeof(capturing[d]), "%s", path);
	tp_out("capture of %s into %s", tp.dev[d].name, path);
	return 0;
}

static int stop_one(unsigned int d)
{
	int ret = dpv_verbs_capture_stop(tp.dev[d].ctx);
	char path[sizeof(capturing[0])];

	snprintf(path, sizeof(path), "%s", capturing[d]);
	capturing[d][0] = '\0';
	if (ret != 0)
		return tp_err("capture stop", ret, "%s: %s", tp.dev[d].name, ret == ENOENT ?
			      "no capture runs" : "a write to the file failed; it misses frames");
	tp_out("capture of %s stopped: %s", tp.dev[d].name, path);
	return 0;
}

int tp_cmd_capture(const struct tp_args *a)
{
	bool start = a->n > 1 && strcmp(a->w[1], "start") == 0;
	const char *devw = start ? (a->n > 3 ? a->w[3] : NULL) : (a->n > 2 ? a->w[2] : NULL);
	int d = -1, failed = 0;

	if (a->n < 2 || (!start && strcmp(a->w[1], "stop") != 0))
		return tp_err("capture", EINVAL, "capture start <file.pcapng> [<dev>] | capture stop "
			      "[<dev>]");
	if (start && a->n < 3)
		return tp_err("capture start", EINVAL, "needs a file: capture start /tmp/x.pcapng");
	if (a->n > (start ? 4u : 3u))
		return tp_err(start ? "capture start" : "capture stop", EINVAL, "one device at most");
	if (devw != NULL && (d = tp_dev_arg(start ? "capture start" : "capture stop", devw)) < 0)
		return -1;
	if (start) {
		char path[sizeof(capturing[0])];

		for (unsigned int i = 0; i < tp.n_devs; i++) {
			if (d >= 0 && i != (unsigned int)d)
				continue;
			if (path_for(a->w[2], i, d < 0 && tp.n_devs > 1, path, sizeof(path)) != 0)
				return tp_err("capture start", ENAMETOOLONG, "the file name is too long");
			failed |= start_one(i, path) != 0;
		}
		return failed ? -1 : 0;
	}
	for (unsigned int i = 0; i < tp.n_devs; i++) {
		if (d >= 0 && i != (unsigned int)d)
			continue;
		if (d < 0 && capturing[i][0] == '\0')
			continue;
		failed |= stop_one(i) != 0;
		d = d < 0 ? -2 : d;
	}
	if (d == -1)
		return tp_err("capture stop", ENOENT, "no capture runs (capture start starts one)");
	return failed ? -1 : 0;
}

void tp_capture_stop_all(void)
{
	for (unsigned int i = 0; i < tp.n_devs; i++)
		if (capturing[i][0] != '\0')
			(void)stop_one(i);
}
