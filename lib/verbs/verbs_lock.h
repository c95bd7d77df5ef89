/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The lock of a QP's send and receive queues and of a CQ's pollers: several threads
 * may post to one QP or poll one CQ (verbs is thread-safe), but most programs use each
 * from one thread, and that thread must pay no locked instruction.
 *
 * A biased lock. The first thread to take it becomes its owner; the owner enters and
 * leaves with plain stores (a flag, "inside", and a look at "revoked"), no atomic
 * read-modify-write. Any other thread takes the spinlock and, the first time, revokes
 * the bias: it sets revoked, makes every running thread of the process pass a full
 * memory barrier (membarrier(2), MEMBARRIER_CMD_PRIVATE_EXPEDITED), and waits until
 * the owner is not inside. The owner's store of inside and its load of revoked need no
 * fence of their own: after the barrier either the owner sees revoked, or the revoker
 * sees inside (an asymmetric Dekker). From then on every thread, the owner too, takes
 * the spinlock. Where membarrier is missing, no lock is ever biased.
 *
 * An object made under a thread domain (ibv_alloc_td(3)) has a lock that is never
 * taken: the program promised that one thread at a time uses it, whichever thread that
 * is, so neither the bias nor the spinlock has anything to protect.
 */
#ifndef VERBS_LOCK_H
#define VERBS_LOCK_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct dpv_vlock {
	uintptr_t owner;          /* dpv_vlock_self() of the biased thread, 0 none (atomic) */
	uint32_t inside;          /* the owner holds it without the spinlock (atomic) */
	uint32_t revoked;         /* the bias is gone: everyone takes spin (atomic) */
	bool none;                /* a thread domain's: never taken */
	pthread_spinlock_t spin;
};

/* Control path: a free lock, biased to no one yet. */
void dpv_vlock_init(struct dpv_vlock *l);
/* Control path: a lock of an object under a thread domain, which dpv_vlock() never
 * takes. */
void dpv_vlock_init_none(struct dpv_vlock *l);
void dpv_vlock_destroy(struct dpv_vlock *l);

/* Not the owner, or the bias revoked: the spinlock (and the bias given or revoked). */
void dpv_vlock_slow(struct dpv_vlock *l, uintptr_t self);

/* The calling thread, as a number no other living thread has: the address of its
 * thread control block, one register read (pthread_self() is a call). */
static inline uintptr_t dpv_vlock_self(void)
{
	return (uintptr_t)__builtin_thread_pointer();
}

/* Take the lock. @return what dpv_vunlock() is to be given: true when the owner took
 * it without the spinlock. */
static inline bool dpv_vlock(struct dpv_vlock *l)
{
	uintptr_t self = dpv_vlock_self();

	if (__atomic_load_n(&l->owner, __ATOMIC_RELAXED) == self) {
		__atomic_store_n(&l->inside, 1, __ATOMIC_RELAXED);
		/* Only the compiler is held here: the revoker's membarrier orders the
		 * store above before the load below on this thread's CPU. */
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		if (__atomic_load_n(&l->revoked, __ATOMIC_ACQUIRE) == 0)
			return true;
		__atomic_store_n(&l->inside, 0, __ATOMIC_RELEASE);
	}
	/* Such a lock never gets an owner, so it is here and costs its owner nothing. */
	if (l->none)
		return true;
	dpv_vlock_slow(l, self);
	return false;
}

/* Release the lock; @p fast as dpv_vlock() returned it. */
static inline void dpv_vunlock(struct dpv_vlock *l, bool fast)
{
	if (fast)
		__atomic_store_n(&l->inside, 0, __ATOMIC_RELEASE);
	else
		pthread_spin_unlock(&l->spin);
}

#endif /* VERBS_LOCK_H */
