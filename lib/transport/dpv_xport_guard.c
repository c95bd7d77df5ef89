/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The guarded copy: every access of the device to registered memory (copies, scatter
 * and gather through a scatter list, the atomics of IBTA 9.4.5 and the atomic write of
 * IBTA 1.5) and the SIGSEGV / SIGBUS handler that turns a fault inside one into an
 * error (doc/guides/memory.md).
 */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <string.h>

#include "dpv_xport_priv.h"

/*
 * Copies through registered memory that survive its unmapping. A program that unmaps
 * (or mprotects) a region before deregistering it breaks ibv_reg_mr(3)'s rule, but a
 * NIC would still not crash: a fault inside xp_copy() jumps back out of it, and the
 * caller ends the access with an error as for a bad key. Each copy arms a jump buffer
 * (sigsetjmp without the signal mask: no system call); the SIGSEGV / SIGBUS handler,
 * installed once per process when the host program wants it (dpv_xport_fault_guard()),
 * jumps to it when the fault is inside a copy of this thread and otherwise passes the
 * signal to the handler installed before it (the default one: the process ends as it
 * would have). A program that installs its own handler for these signals afterwards
 * takes that protection away. Without the handler the jump buffer is armed all the
 * same, and a fault in a copy is the process's, as any other.
 */
/* volatile: the compiler knows memcpy() does not read it, and would otherwise drop
 * the store that arms it as dead. */
static __thread sigjmp_buf *volatile xp_copy_env;
static struct sigaction xp_prev_segv, xp_prev_bus;
static pthread_once_t xp_fault_once = PTHREAD_ONCE_INIT;

static void xp_fault(int sig, siginfo_t *si, void *uc)
{
	const struct sigaction *prev = sig == SIGBUS ? &xp_prev_bus : &xp_prev_segv;
	sigjmp_buf *env = xp_copy_env;

	if (env != NULL) {
		xp_copy_env = NULL;
		siglongjmp(*env, 1);
	}
	if (prev->sa_flags & SA_SIGINFO) {
		prev->sa_sigaction(sig, si, uc);
		return;
	}
	if (prev->sa_handler != SIG_DFL && prev->sa_handler != SIG_IGN) {
		prev->sa_handler(sig);
		return;
	}
	/* Back to the default: returning re-runs the faulting access, which now ends the
	 * process as if dpverbs had not been there. */
	sigaction(sig, prev, NULL);
}

static void xp_fault_install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = xp_fault;
	/* SA_NODEFER: the jump out leaves the signal unblocked, with no call to undo it. */
	sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, &xp_prev_segv);
	sigaction(SIGBUS, &sa, &xp_prev_bus);
}

void dpv_xport_fault_guard(void)
{
	pthread_once(&xp_fault_once, xp_fault_install);
}

bool xp_copy(struct dpv_xport *x, void *dst, const void *src, size_t len)
{
	sigjmp_buf env;

	if (sigsetjmp(env, 0) != 0) {
		x->stats.mem_faults++;
		return false;
	}
	xp_copy_env = &env;
	memcpy(dst, src, len);
	xp_copy_env = NULL;
	return true;
}

/* IBTA 9.4.5: the device is the only one to execute the atomics of its peers, on its
 * owner thread, so any 64-bit read-modify-write would be atomic among them
 * (IBV_ATOMIC_HCA). A locked instruction costs little more and keeps a CPU's own
 * atomics on the same word out of the way too. */
bool xp_atomic(struct dpv_xport *x, uint64_t addr, bool cas, uint64_t compare_add,
	       uint64_t swap, uint64_t *orig)
{
	uint64_t *mem = (uint64_t *)(uintptr_t)addr;
	sigjmp_buf env;
	uint64_t v = compare_add;

	if (sigsetjmp(env, 0) != 0) {
		x->stats.mem_faults++;
		return false;
	}
	xp_copy_env = &env;
	/* A failed compare leaves the value found in v; a successful one found v. */
	if (cas)
		__atomic_compare_exchange_n(mem, &v, swap, false, __ATOMIC_SEQ_CST,
					    __ATOMIC_SEQ_CST);
	else
		v = __atomic_fetch_add(mem, compare_add, __ATOMIC_SEQ_CST);
	xp_copy_env = NULL;
	*orig = v;
	return true;
}

/* A release store: what the QP placed before the atomic write (IBTA 1.5 orders it
 * after the requests ahead of it) is visible before it. */
bool xp_atomic_store(struct dpv_xport *x, uint64_t addr, uint64_t val)
{
	uint64_t *mem = (uint64_t *)(uintptr_t)addr;
	sigjmp_buf env;

	if (sigsetjmp(env, 0) != 0) {
		x->stats.mem_faults++;
		return false;
	}
	xp_copy_env = &env;
	__atomic_store_n(mem, val, __ATOMIC_RELEASE);
	xp_copy_env = NULL;
	return true;
}

/* Copy @p len bytes between a scatter list, from byte @p off of it, and a buffer: out
 * of the list into @p dst, or into the list from @p src. Each piece is checked against
 * its key first (IBTA 10.6), so nothing outside a region is touched. */
static uint8_t sgl_copy(struct dpv_xport *x, const struct dpv_sge *sge, uint32_t nsge,
			uint32_t pd, uint32_t access, uint64_t off, const uint8_t *src,
			uint8_t *dst, uint32_t len)
{
	uint32_t i, done = 0;

	for (i = 0; i < nsge && done < len; i++) {
		uint64_t n;
		void *mem;

		if (off >= sge[i].length) {
			off -= sge[i].length;
			continue;
		}
		n = sge[i].length - off;
		if (n > len - done)
			n = len - done;
		if (dpv_mr_check(x->mrs, sge[i].lkey, pd, sge[i].addr + off, n, access) == NULL)
			return DPV_WC_LOC_PROT_ERR;
		mem = (void *)(uintptr_t)(sge[i].addr + off);
		if (!(dst != NULL ? xp_copy(x, dst + done, mem, n) : xp_copy(x, mem, src + done, n)))
			return DPV_WC_LOC_PROT_ERR;
		done += (uint32_t)n;
		off = 0;
	}
	return done == len ? DPV_WC_SUCCESS : DPV_WC_LOC_LEN_ERR;
}

uint8_t xp_sgl_scatter(struct dpv_xport *x, const struct dpv_sge *sge, uint32_t nsge,
		       uint32_t pd, uint64_t off, const void *src, uint32_t len)
{
	return sgl_copy(x, sge, nsge, pd, DPV_ACCESS_LOCAL_WRITE, off, src, NULL, len);
}

uint8_t xp_sgl_gather(struct dpv_xport *x, const struct dpv_sge *sge, uint32_t nsge,
		      uint32_t pd, uint64_t off, void *dst, uint32_t len)
{
	return sgl_copy(x, sge, nsge, pd, 0, off, NULL, dst, len);
}
