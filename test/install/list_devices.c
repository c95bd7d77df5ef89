/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A verbs program as a user writes one: built by install.sh against an installed
 * dpverbs with `pkg-config --cflags --libs dpverbs` alone. It lists the devices, opens
 * the first, and prints its firmware version, port and GID 0, so the test sees the
 * installed drop-in start EAL, find the ports and answer queries. It includes the one
 * header dpverbs installs, dpv_verbs.h, whose DPV_VERSION the device reports, and calls
 * one of its functions, which the installed drop-in exports.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <infiniband/verbs.h>

#include <dpv_verbs.h>

int main(void)
{
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_device_attr dev;
	struct ibv_port_attr port;
	struct dpv_verbs_engine_stats engine;
	union ibv_gid gid;
	char text[INET6_ADDRSTRLEN];
	int n = 0, ret = 1, err;

	list = ibv_get_device_list(&n);
	if (list == NULL || n == 0) {
		fprintf(stderr, "list_devices: no verbs device: %s\n", strerror(errno));
		if (list != NULL)
			ibv_free_device_list(list);
		return 1;
	}
	printf("devices: %d\n", n);
	for (int i = 0; i < n; i++)
		printf("device %d: %s\n", i, ibv_get_device_name(list[i]));
	ctx = ibv_open_device(list[0]);
	if (ctx == NULL) {
		fprintf(stderr, "list_devices: ibv_open_device(%s): %s\n",
			ibv_get_device_name(list[0]), strerror(errno));
		goto out;
	}
	if (ibv_query_device(ctx, &dev) != 0) {
		fprintf(stderr, "list_devices: ibv_query_device: %s\n", strerror(errno));
		goto close;
	}
	printf("fw_ver: %s\n", dev.fw_ver);
	if (strcmp(dev.fw_ver, "dpverbs " DPV_VERSION) != 0) {
		fprintf(stderr, "list_devices: fw_ver is not dpverbs " DPV_VERSION "\n");
		goto close;
	}
	if (ibv_query_port(ctx, 1, &port) != 0) {
		fprintf(stderr, "list_devices: ibv_query_port: %s\n", strerror(errno));
		goto close;
	}
	if (ibv_query_gid(ctx, 1, 0, &gid) != 0) {
		fprintf(stderr, "list_devices: ibv_query_gid: %s\n", strerror(errno));
		goto close;
	}
	printf("port 1: %s, active_mtu %d, link_layer %s\n", ibv_port_state_str(port.state),
	       128 << port.active_mtu,
	       port.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "other");
	printf("gid 0: %s\n", inet_ntop(AF_INET6, gid.raw, text, sizeof(text)));
	/* dpverbs' own calls come from the installed library too (DPVERBS_0.1). */
	err = dpv_verbs_query_engine(ctx, &engine);
	if (err != 0) {
		fprintf(stderr, "list_devices: dpv_verbs_query_engine: %s\n", strerror(err));
		goto close;
	}
	printf("engine: %s\n", engine.polls > 0 ? "polled" : "not polled");
	ret = 0;
close:
	if (ibv_close_device(ctx) != 0 && ret == 0) {
		fprintf(stderr, "list_devices: ibv_close_device failed\n");
		ret = 1;
	}
out:
	ibv_free_device_list(list);
	return ret;
}
