/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdio.h>

#include <rte_errno.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_ring.h>

#include "dpv_port.h"

#define PAIR_RING_SIZE 4096

int dpv_port_ring_pair(const char *name, int socket, uint16_t *a, uint16_t *b)
{
	char rname[RTE_RING_NAMESIZE], pname[RTE_ETH_NAME_MAX_LEN];
	struct rte_ring *ab, *ba;
	int id;

	snprintf(rname, sizeof(rname), "%s_ab", name);
	ab = rte_ring_create(rname, PAIR_RING_SIZE, socket, RING_F_SP_ENQ | RING_F_SC_DEQ);
	snprintf(rname, sizeof(rname), "%s_ba", name);
	ba = rte_ring_create(rname, PAIR_RING_SIZE, socket, RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (ab == NULL || ba == NULL)
		goto fail;
	/* a sends on ab and receives on ba; b the other way round */
	snprintf(pname, sizeof(pname), "%s_a", name);
	id = rte_eth_from_rings(pname, &ba, 1, &ab, 1, (unsigned int)socket);
	if (id < 0)
		goto fail;
	*a = (uint16_t)id;
	snprintf(pname, sizeof(pname), "%s_b", name);
	id = rte_eth_from_rings(pname, &ab, 1, &ba, 1, (unsigned int)socket);
	if (id < 0) {
		rte_eth_dev_close(*a);
		goto fail;
	}
	*b = (uint16_t)id;
	return 0;
fail:
	id = rte_errno == EEXIST ? EEXIST : ENOMEM;
	rte_ring_free(ab);
	rte_ring_free(ba);
	return id;
}
