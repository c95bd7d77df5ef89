/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A verbs program for bad_config.sh: asks for the device list twice, as programs do
 * (once to count, once again after a retry), and prints what each call returned. With
 * a configuration that cannot work both calls must return no devices with errno set,
 * and dpverbs must explain on stderr once, not once per call.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <infiniband/verbs.h>

int main(void)
{
	for (int call = 1; call <= 2; call++) {
		struct ibv_device **list;
		int n = -1;

		const char *name;
		int err;

		errno = 0;
		list = ibv_get_device_list(&n);
		err = errno;
		name = err ? strerrorname_np(err) : NULL;
		printf("call %d: list %s, devices %d, errno %s\n", call, list ? "set" : "NULL",
		       list ? n : 0, name ? name : "0");
		if (list != NULL)
			ibv_free_device_list(list);
	}
	return 0;
}
