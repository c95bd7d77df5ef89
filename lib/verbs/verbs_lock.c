/* SPDX-License-Identifier: BSD-3-Clause */
/* The biased lock of verbs_lock.h: its slow path and membarrier(2). */
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <rte_pause.h>

#include "verbs_lock.h"

static pthread_once_t barrier_once = PTHREAD_ONCE_INIT;
static bool barrier_ok; /* the process is registered for expedited barriers */

static int membarrier(int cmd)
{
	return (int)syscall(__NR_membarrier, cmd, 0, 0);
}

/* A forked child is a new process to membarrier: it registers again. */
static void barrier_child(void)
{
	if (barrier_ok && membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) != 0)
		__atomic_store_n(&barrier_ok, false, __ATOMIC_RELAXED);
}

static void barrier_register(void)
{
	int cmds = membarrier(MEMBARRIER_CMD_QUERY);

	if (cmds < 0 || !(cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) ||
	    membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) != 0)
		return;
	barrier_ok = true;
	pthread_atfork(NULL, NULL, barrier_child);
}

void dpv_vlock_init(struct dpv_vlock *l)
{
	pthread_once(&barrier_once, barrier_register);
	l->owner = 0;
	l->inside = 0;
	l->revoked = !__atomic_load_n(&barrier_ok, __ATOMIC_RELAXED);
	l->none = false;
	pthread_spin_init(&l->spin, PTHREAD_PROCESS_PRIVATE);
}

void dpv_vlock_init_none(struct dpv_vlock *l)
{
	l->owner = 0;
	l->inside = 0;
	l->revoked = 0;
	l->none = true;
	pthread_spin_init(&l->spin, PTHREAD_PROCESS_PRIVATE);
}

void dpv_vlock_destroy(struct dpv_vlock *l)
{
	pthread_spin_destroy(&l->spin);
}

void dpv_vlock_slow(struct dpv_vlock *l, uintptr_t self)
{
	uintptr_t owner;

	pthread_spin_lock(&l->spin);
	if (__atomic_load_n(&l->revoked, __ATOMIC_RELAXED))
		return;
	owner = __atomic_load_n(&l->owner, __ATOMIC_RELAXED);
	if (owner == 0) {
		/* The first taker: biased to it from its next call on. */
		__atomic_store_n(&l->owner, self, __ATOMIC_RELAXED);
		return;
	}
	/* Another thread is the owner (the owner itself comes here only once revoked). */
	__atomic_store_n(&l->revoked, 1, __ATOMIC_RELAXED);
	if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0)
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
	while (__atomic_load_n(&l->inside, __ATOMIC_ACQUIRE) != 0)
		rte_pause();
}
