/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The connection table of dpv_cm.h: bounded, IDs never 0 and never those of the
 * slot's previous connection, lookups by local ID, by the peer's (ID, GUID) and by
 * service ID, and the route of each kind of MAD.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "dpv_cm.h"

#define CAP 3u

static struct dpv_cm_table t;
static struct dpv_cm_conn c[CAP + 1];

static int setup(void **state)
{
	struct dpv_cm_params p = {0x1111, 10, 1000, 14};
	unsigned int i;

	(void)state;
	assert_int_equal(dpv_cm_table_init(&t, CAP), 0);
	for (i = 0; i <= CAP; i++)
		dpv_cm_init(&c[i], &p);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	dpv_cm_table_fini(&t);
	return 0;
}

static void init_refuses_bad_capacity(void **state)
{
	struct dpv_cm_table u;

	(void)state;
	assert_int_equal(dpv_cm_table_init(&u, 0), EINVAL);
	assert_int_equal(dpv_cm_table_init(&u, DPV_CM_TABLE_MAX + 1), EINVAL);
	assert_int_equal(dpv_cm_table_init(&u, DPV_CM_TABLE_MAX), 0);
	dpv_cm_table_fini(&u);
	dpv_cm_table_fini(&u); /* twice: the fields are NULL */
}

/* A table in the caller's memory: its size, its refusals, and it works as one of its
 * own, within those bytes. */
static void table_in_callers_memory(void **state)
{
	static _Alignas(void *) uint8_t mem[CAP * (sizeof(void *) + sizeof(uint16_t)) + 16];
	struct dpv_cm_table u;
	size_t n = dpv_cm_table_memsize(CAP);

	(void)state;
	assert_int_equal(n, CAP * (sizeof(void *) + sizeof(uint16_t)));
	assert_int_equal(dpv_cm_table_memsize(0), 0);
	assert_int_equal(dpv_cm_table_memsize(DPV_CM_TABLE_MAX + 1), 0);
	assert_int_equal(dpv_cm_table_init_at(&u, 0, mem), EINVAL);
	assert_int_equal(dpv_cm_table_init_at(&u, CAP, NULL), EINVAL);
	memset(mem, 0xa5, sizeof(mem));
	assert_int_equal(dpv_cm_table_init_at(&u, CAP, mem), 0);
	for (unsigned int i = 0; i < CAP; i++)
		assert_int_equal(dpv_cm_table_add(&u, &c[i]), 0);
	assert_int_equal(dpv_cm_table_add(&u, &c[CAP]), ENOSPC);
	assert_ptr_equal(dpv_cm_table_find(&u, c[2].local_id), &c[2]);
	assert_int_equal(dpv_cm_table_remove(&u, &c[2]), 0);
	assert_null(dpv_cm_table_find(&u, c[2].local_id));
	for (size_t i = n; i < sizeof(mem); i++)
		assert_int_equal(mem[i], 0xa5);
	for (unsigned int i = 0; i < CAP; i++)
		if (i != 2)
			assert_int_equal(dpv_cm_table_remove(&u, &c[i]), 0);
}

static void bounded_ids_unique_and_never_zero(void **state)
{
	unsigned int i, j;

	(void)state;
	for (i = 0; i < CAP; i++) {
		assert_int_equal(dpv_cm_table_add(&t, &c[i]), 0);
		assert_int_not_equal(c[i].local_id, 0);
		for (j = 0; j < i; j++)
			assert_int_not_equal(c[i].local_id, c[j].local_id);
		assert_ptr_equal(dpv_cm_table_find(&t, c[i].local_id), &c[i]);
	}
	assert_int_equal(t.used, CAP);
	assert_int_equal(dpv_cm_table_add(&t, &c[CAP]), ENOSPC);
	assert_int_equal(c[CAP].local_id, 0);
	assert_int_equal(dpv_cm_table_add(&t, &c[0]), EEXIST);
	assert_null(dpv_cm_table_find(&t, 0));
	assert_null(dpv_cm_table_find(&t, 0xffffffffu));
}

static void a_freed_slot_gives_a_new_id(void **state)
{
	uint32_t old;

	(void)state;
	assert_int_equal(dpv_cm_table_add(&t, &c[0]), 0);
	assert_int_equal(dpv_cm_table_add(&t, &c[1]), 0);
	old = c[0].local_id;
	assert_int_equal(dpv_cm_table_remove(&t, &c[0]), 0);
	assert_int_equal(c[0].local_id, 0);
	assert_int_equal(dpv_cm_table_remove(&t, &c[0]), ENOENT);
	assert_int_equal(t.used, 1);
	assert_null(dpv_cm_table_find(&t, old));
	assert_int_equal(dpv_cm_table_add(&t, &c[2]), 0);
	assert_int_equal(c[2].local_id & 0xffff, old & 0xffff); /* the same slot */
	assert_int_not_equal(c[2].local_id, old);
	assert_null(dpv_cm_table_find(&t, old));
	/* A connection of another table's slot is not this one's. */
	c[3].local_id = c[1].local_id;
	assert_int_equal(dpv_cm_table_remove(&t, &c[3]), ENOENT);
	c[3].local_id = 0;
}

static void generations_wrap_without_zero(void **state)
{
	uint32_t first, id;
	unsigned int i;

	(void)state;
	assert_int_equal(dpv_cm_table_add(&t, &c[0]), 0);
	first = c[0].local_id;
	for (i = 0; i < 65535; i++) {
		assert_int_equal(dpv_cm_table_remove(&t, &c[0]), 0);
		assert_int_equal(dpv_cm_table_add(&t, &c[0]), 0);
		id = c[0].local_id;
		assert_int_not_equal(id >> 16, 0);
		if (i < 65534)
			assert_int_not_equal(id, first);
	}
	/* 65535 generations later the slot's first ID comes back. */
	assert_int_equal(c[0].local_id, first);
}

static void lookups_by_peer_and_by_service(void **state)
{
	(void)state;
	assert_int_equal(dpv_cm_table_add(&t, &c[0]), 0);
	assert_int_equal(dpv_cm_table_add(&t, &c[1]), 0);
	assert_int_equal(dpv_cm_listen(&c[0], 0x1061c06), 0);
	assert_ptr_equal(dpv_cm_table_find_listener(&t, 0x1061c06), &c[0]);
	assert_null(dpv_cm_table_find_listener(&t, 0x1061c07));
	c[1].state = DPV_CM_ESTABLISHED;
	c[1].remote_id = 77;
	c[1].remote_guid = 0x2222;
	assert_ptr_equal(dpv_cm_table_find_remote(&t, 77, 0x2222), &c[1]);
	assert_null(dpv_cm_table_find_remote(&t, 77, 0x2223));
	assert_null(dpv_cm_table_find_remote(&t, 78, 0x2222));
	/* IDLE connections and unknown peers (ID 0) match nothing. */
	c[1].state = DPV_CM_IDLE;
	assert_null(dpv_cm_table_find_remote(&t, 77, 0x2222));
	c[1].state = DPV_CM_REQ_SENT;
	c[1].remote_id = 0;
	c[1].remote_guid = 0;
	assert_null(dpv_cm_table_find_remote(&t, 0, 0));
}

static void route_of_each_mad(void **state)
{
	struct dpv_cm_msg m;

	(void)state;
	assert_int_equal(dpv_cm_table_add(&t, &c[0]), 0);
	assert_int_equal(dpv_cm_table_add(&t, &c[1]), 0);
	assert_int_equal(dpv_cm_listen(&c[0], 0x1061c06), 0);
	c[1].state = DPV_CM_REP_SENT;
	c[1].remote_id = 77;
	c[1].remote_guid = 0x2222;

	memset(&m, 0, sizeof(m));
	m.hdr.attr_id = DPV_CM_ATTR_REQ;
	m.req.service_id = 0x1061c06;
	m.req.local_comm_id = 78;
	m.req.local_ca_guid = 0x2222;
	assert_ptr_equal(dpv_cm_table_route(&t, &m), &c[0]); /* a new REQ: the listener */
	m.req.local_comm_id = 77;
	assert_ptr_equal(dpv_cm_table_route(&t, &m), &c[1]); /* the same REQ again */
	m.req.local_comm_id = 79;
	m.req.service_id = 0x1061c07;
	assert_null(dpv_cm_table_route(&t, &m));

	memset(&m, 0, sizeof(m));
	m.hdr.attr_id = DPV_CM_ATTR_RTU;
	m.rtu.remote_comm_id = c[1].local_id;
	assert_ptr_equal(dpv_cm_table_route(&t, &m), &c[1]);
	m.hdr.attr_id = DPV_CM_ATTR_REP; /* remote_comm_id is at the same place in each */
	m.rep.remote_comm_id = c[1].local_id;
	assert_ptr_equal(dpv_cm_table_route(&t, &m), &c[1]);
	m.rep.remote_comm_id = c[1].local_id ^ 0x10000; /* another generation */
	assert_null(dpv_cm_table_route(&t, &m));
	memset(&m, 0, sizeof(m));
	m.hdr.attr_id = DPV_CM_ATTR_MRA;
	m.mra.remote_comm_id = c[1].local_id;
	assert_ptr_equal(dpv_cm_table_route(&t, &m), &c[1]);
	memset(&m, 0, sizeof(m));
	m.hdr.attr_id = DPV_CM_ATTR_DREQ;
	m.dreq.remote_comm_id = c[1].local_id;
	assert_ptr_equal(dpv_cm_table_route(&t, &m), &c[1]);
	memset(&m, 0, sizeof(m));
	m.hdr.attr_id = DPV_CM_ATTR_DREP;
	m.drep.remote_comm_id = c[1].local_id;
	assert_ptr_equal(dpv_cm_table_route(&t, &m), &c[1]);

	/* REJ: by our ID; a REJ (Timeout) with no ID of ours, by the peer's ID and the
	 * GUID in its ARI. */
	memset(&m, 0, sizeof(m));
	m.hdr.attr_id = DPV_CM_ATTR_REJ;
	m.rej.remote_comm_id = c[1].local_id;
	assert_ptr_equal(dpv_cm_table_route(&t, &m), &c[1]);
	m.rej.remote_comm_id = 0;
	m.rej.local_comm_id = 77;
	m.rej.reason = DPV_CM_REJ_TIMEOUT;
	m.rej.ari_length = 8;
	memcpy(m.rej.ari, "\0\0\0\0\0\0\x22\x22", 8);
	assert_ptr_equal(dpv_cm_table_route(&t, &m), &c[1]);
	m.rej.ari_length = 7;
	assert_null(dpv_cm_table_route(&t, &m));
	m.rej.ari_length = 8;
	m.rej.reason = DPV_CM_REJ_CONSUMER_DEFINED;
	assert_null(dpv_cm_table_route(&t, &m));

	memset(&m, 0, sizeof(m));
	m.hdr.attr_id = DPV_CM_ATTR_SIDR_REQ;
	assert_null(dpv_cm_table_route(&t, &m));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(init_refuses_bad_capacity),
		cmocka_unit_test_setup_teardown(table_in_callers_memory, setup, teardown),
		cmocka_unit_test_setup_teardown(bounded_ids_unique_and_never_zero, setup, teardown),
		cmocka_unit_test_setup_teardown(a_freed_slot_gives_a_new_id, setup, teardown),
		cmocka_unit_test_setup_teardown(generations_wrap_without_zero, setup, teardown),
		cmocka_unit_test_setup_teardown(lookups_by_peer_and_by_service, setup, teardown),
		cmocka_unit_test_setup_teardown(route_of_each_mad, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
