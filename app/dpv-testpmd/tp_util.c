/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What every command group of the console uses: its state (the devices and the
 * objects a user creates by number), the output helpers, and the reading of a
 * command's arguments (numbers, object ids, devices).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "testpmd.h"

struct tp tp = {.listen_fd = -1};

void tp_out(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static const struct {
	int err;
	const char *name;
} errno_names[] = {
	{EINVAL, "EINVAL"}, {ENOMEM, "ENOMEM"}, {ENOENT, "ENOENT"}, {EBUSY, "EBUSY"},
	{EEXIST, "EEXIST"}, {ENOTSUP, "ENOTSUP"}, {ENODEV, "ENODEV"}, {ENOSPC, "ENOSPC"},
	{ERANGE, "ERANGE"}, {EAGAIN, "EAGAIN"}, {ETIMEDOUT, "ETIMEDOUT"}, {EIO, "EIO"},
	{E2BIG, "E2BIG"}, {EPERM, "EPERM"}, {EFAULT, "EFAULT"}, {EPROTO, "EPROTO"},
	{ECONNREFUSED, "ECONNREFUSED"}, {EADDRINUSE, "EADDRINUSE"}, {EALREADY, "EALREADY"},
	{ENAMETOOLONG, "ENAMETOOLONG"}, {EACCES, "EACCES"}, {ENOTCONN, "ENOTCONN"},
	{ECONNRESET, "ECONNRESET"}, {EHOSTUNREACH, "EHOSTUNREACH"},
};

const char *tp_errno_name(int err)
{
	static char other[24];

	/* EOPNOTSUPP and ENOTSUP are one value on Linux; verbs speaks of the latter. */
	for (unsigned int i = 0; i < sizeof(errno_names) / sizeof(errno_names[0]); i++)
		if (errno_names[i].err == err)
			return errno_names[i].name;
	snprintf(other, sizeof(other), "errno %d", err);
	return other;
}

int tp_err(const char *cmd, int err, const char *fmt, ...)
{
	char what[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	tp.errors++;
	tp_out("%s: %s: %s", cmd, tp_errno_name(err), what);
	return -1;
}

int tp_num(const char *cmd, const char *what, const char *s, uint64_t min, uint64_t max,
	   uint64_t *out)
{
	unsigned long long v;
	char *end;

	/* strtoull() alone takes "-1", blanks and "": refuse them. */
	if (s == NULL || s[0] < '0' || s[0] > '9')
		return tp_err(cmd, EINVAL, "%s: '%s' is not a number (decimal or 0x hex)", what,
			      s != NULL ? s : "");
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno != 0 || *end != '\0')
		return tp_err(cmd, EINVAL, "%s: '%s' is not a number (decimal or 0x hex)", what, s);
	if (v < min || v > max)
		return tp_err(cmd, ERANGE, "%s: %s is out of range: %llu to %llu", what, s,
			      (unsigned long long)min, (unsigned long long)max);
	*out = v;
	return 0;
}

static const char *const kind_names[TP_NKINDS] = {"pd", "mr", "cq", "srq", "qp"};

const char *tp_kind_name(enum tp_kind kind)
{
	return kind_names[kind];
}

int tp_kind_of(const char *s)
{
	for (int k = 0; k < TP_NKINDS; k++)
		if (strcmp(s, kind_names[k]) == 0)
			return k;
	return -1;
}

struct tp_obj *tp_get(const char *cmd, enum tp_kind kind, const char *s, uint32_t *id)
{
	uint64_t v;

	if (s == NULL) {
		tp_err(cmd, EINVAL, "needs a %s id; `show objects` lists them", kind_names[kind]);
		return NULL;
	}
	if (tp_num(cmd, kind_names[kind], s, 0, UINT32_MAX, &v) != 0)
		return NULL;
	if (v == 0 || v > TP_MAX_OBJS || !tp.obj[kind][v].used) {
		tp_err(cmd, ENOENT, "no %s %s; `show objects` lists them", kind_names[kind], s);
		return NULL;
	}
	if (id != NULL)
		*id = (uint32_t)v;
	return &tp.obj[kind][v];
}

int tp_dev_arg(const char *cmd, const char *s)
{
	if (s == NULL)
		return tp_err(cmd, EINVAL, "needs a device (dpv0...); `show devices` lists them");
	for (unsigned int i = 0; i < tp.n_devs; i++)
		if (strcmp(s, tp.dev[i].name) == 0)
			return (int)i;
	if (s[0] >= '0' && s[0] <= '9' && s[1] == '\0' && (unsigned int)(s[0] - '0') < tp.n_devs)
		return s[0] - '0';
	return tp_err(cmd, ENODEV, "no device '%s'; `show devices` lists them", s);
}

uint64_t tp_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}
