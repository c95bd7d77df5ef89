/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Two ports back to back in one process, for the tests of drivers/ and lib/transport:
 * EAL from the test's command line (meson passes the memory mode), a ring pair, and an
 * ethdev port opened on each of its ends once both links are up, called from cmocka
 * group set-up and teardown (errors are returned, not asserted); and frames to send.
 */
#ifndef TEST_PORTS_H
#define TEST_PORTS_H

#include <stdint.h>

#include "dpv_port.h"

/* Keep the command line for ring_pair_create(); main() calls it before the group runs. */
void eal_args_keep(int argc, char **argv);

/* rte_eal_init() with the kept arguments, then ring pair @p name on the caller's
 * socket: its ethdev port ids in @p id_a and @p id_b. 0, or -1. */
int ring_pair_create(const char *name, uint16_t *id_a, uint16_t *id_b);

/* Open ethdev port @p id as @p p, called @p name, with address @p ipv4 (host order,
 * never leaves the process) and a pool of @p pool mbufs. 0, or dpv_port_open()'s errno. */
int port_open_ethdev(struct dpv_port *p, const char *name, uint16_t id, uint32_t ipv4,
		     unsigned int pool);

/*
 * All of it: EAL, ring pair @p name, its ends opened as dpv0 (@p a, @p ipv4_a) and dpv1
 * (@p b, @p ipv4_b) with @p pool mbufs each, within 5 s both links up. 0, or -1.
 */
int ring_pair_up(const char *name, struct dpv_port *a, uint32_t ipv4_a, struct dpv_port *b,
		 uint32_t ipv4_b, unsigned int pool);

/* An IPv4 frame (8 bytes of UDP payload, the first @p mark) from @p from to @p dst, in an
 * mbuf of its pool; asserts that there is one. */
struct rte_mbuf *ipv4_frame(struct dpv_port *from, uint32_t dst, uint8_t mark);

/* Close both ports and EAL. */
void ring_pair_down(struct dpv_port *a, struct dpv_port *b);

#endif /* TEST_PORTS_H */
