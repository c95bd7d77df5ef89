/* SPDX-License-Identifier: BSD-3-Clause */
/* The ring-pair ports of ports.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ip.h>
#include <rte_lcore.h>

#include "ports.h"

static int eal_argc;
static char **eal_argv;

void eal_args_keep(int argc, char **argv)
{
	eal_argc = argc;
	eal_argv = argv;
}

int ring_pair_create(const char *name, uint16_t *id_a, uint16_t *id_b)
{
	if (rte_eal_init(eal_argc, eal_argv) < 0)
		return -1;
	return dpv_port_ring_pair(name, (int)rte_socket_id(), id_a, id_b) == 0 ? 0 : -1;
}

int port_open_ethdev(struct dpv_port *p, const char *name, uint16_t id, uint32_t ipv4,
		     unsigned int pool)
{
	char args[8];

	memset(p, 0, sizeof(*p));
	snprintf(p->name, sizeof(p->name), "%s", name);
	p->ipv4 = ipv4;
	snprintf(args, sizeof(args), "%u", id);
	return dpv_port_open(p, "ethdev", args, pool);
}

int ring_pair_up(const char *name, struct dpv_port *a, uint32_t ipv4_a, struct dpv_port *b,
		 uint32_t ipv4_b, unsigned int pool)
{
	bool up_a = false, up_b = false;
	uint16_t id_a, id_b;
	uint32_t speed;

	if (ring_pair_create(name, &id_a, &id_b) != 0 ||
	    port_open_ethdev(a, "dpv0", id_a, ipv4_a, pool) != 0 ||
	    port_open_ethdev(b, "dpv1", id_b, ipv4_b, pool) != 0)
		return -1;
	for (int i = 0; i < 5000 && !(up_a && up_b); i++) {
		a->ops->link(a, &up_a, &speed);
		b->ops->link(b, &up_b, &speed);
		rte_delay_ms(1);
	}
	return up_a && up_b ? 0 : -1;
}

void ring_pair_down(struct dpv_port *a, struct dpv_port *b)
{
	dpv_port_close(a);
	dpv_port_close(b);
	rte_eal_cleanup();
}

struct rte_mbuf *ipv4_frame(struct dpv_port *from, uint32_t dst, uint8_t mark)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(from->pool);
	struct rte_ether_hdr *eth;
	struct rte_ipv4_hdr *ip;

	assert_non_null(m);
	eth = (struct rte_ether_hdr *)rte_pktmbuf_append(m, sizeof(*eth) + sizeof(*ip) + 8);
	memset(eth, 0, sizeof(*eth) + sizeof(*ip) + 8);
	rte_ether_addr_copy(&from->mac, &eth->src_addr);
	eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	ip = (struct rte_ipv4_hdr *)(eth + 1);
	ip->version_ihl = RTE_IPV4_VHL_DEF;
	ip->total_length = rte_cpu_to_be_16(sizeof(*ip) + 8);
	ip->time_to_live = 64;
	ip->next_proto_id = IPPROTO_UDP;
	ip->src_addr = rte_cpu_to_be_32(from->ipv4);
	ip->dst_addr = rte_cpu_to_be_32(dst);
	((uint8_t *)(ip + 1))[0] = mark;
	return m;
}
