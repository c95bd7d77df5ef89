/* SPDX-License-Identifier: BSD-3-Clause */
/* The ring-pair ports of ports.h. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_eal.h>
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
