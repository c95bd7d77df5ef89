/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A verbs program configured by a DPV_CONFIG file alone (config/profiles/ring-pair.ini,
 * no DPV_* in the environment): the file's EAL arguments, ring pair and addresses make
 * two devices whose GIDs carry the file's IPv4 addresses.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>
#include <infiniband/verbs.h>

static void devices_come_from_the_config_file(void **state)
{
	static const uint8_t want[2][4] = {{127, 0, 50, 1}, {127, 0, 50, 2}};
	struct ibv_device **list;
	struct ibv_context *ctx;
	union ibv_gid gid;
	int n;

	(void)state;
	assert_non_null(getenv("DPV_CONFIG"));
	list = ibv_get_device_list(&n);
	assert_non_null(list);
	assert_int_equal(n, 2);
	for (int i = 0; i < 2; i++) {
		ctx = ibv_open_device(list[i]);
		assert_non_null(ctx);
		assert_int_equal(ibv_query_gid(ctx, 1, 0, &gid), 0);
		assert_int_equal(gid.raw[10], 0xff);
		assert_int_equal(gid.raw[11], 0xff);
		assert_memory_equal(&gid.raw[12], want[i], 4);
		assert_int_equal(ibv_close_device(ctx), 0);
	}
	ibv_free_device_list(list);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(devices_come_from_the_config_file),
	};

	/* The environment would win over the file: test the file alone. */
	unsetenv("DPV_EAL_ARGS");
	unsetenv("DPV_PORT_IPV4");
	unsetenv("DPV_PROGRESS");
	unsetenv("DPV_RING_PAIRS");
	unsetenv("DPV_CAPTURE");
	return cmocka_run_group_tests_name("config", tests, NULL, NULL);
}
