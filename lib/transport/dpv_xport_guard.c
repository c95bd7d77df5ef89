/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The guarded copy: every access of the device to registered memory (copies, scatter
 * and gather through a scatter list, the atomics of IBTA 9.4.5 and the atomic write of
 * IBTA 1.5) and the SIGSEGV / SIGBUS handler that turns a fault inside one into an
 * error (doc/guides/memory.md).
 */
#define _GNU_SOURCE /* REG_RIP */
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
 *
 * Short copies (x86-64 Linux) arm nothing: xp_copy_short() is a few instructions of
 * assembly that never touch the stack, so when one of them faults the handler moves
 * the thread to its fault exit, which returns false to the caller, as the kernel's
 * exception table does for copies from user space.
 */
#ifdef XP_COPY_SHORT_MAX
__asm__(".pushsection .text\n"
	".p2align 4\n"
	".globl xp_copy_short\n"
	".hidden xp_copy_short\n"
	".type xp_copy_short, @function\n"
	"xp_copy_short:\n"
	/* rdi dst, rsi src, rdx len. 16 and more: 16 bytes at a time while more than
	 * 16 are left, then the last 16 (overlapping what was copied). */
	"	cmpq $16, %rdx\n"
	"	jb 2f\n"
	"	leaq -16(%rsi,%rdx), %r8\n"
	"	leaq -16(%rdi,%rdx), %r9\n"
	"	je 1f\n"
	"0:	movdqu (%rsi), %xmm0\n"
	"	movdqu %xmm0, (%rdi)\n"
	"	addq $16, %rsi\n"
	"	addq $16, %rdi\n"
	"	subq $16, %rdx\n"
	"	cmpq $16, %rdx\n"
	"	ja 0b\n"
	"1:	movdqu (%r8), %xmm0\n"
	"	movdqu %xmm0, (%r9)\n"
	"	movl $1, %eax\n"
	"	ret\n"
	/* 8 to 15 and 4 to 7: the first and the last word, overlapping. */
	"2:	cmpq $8, %rdx\n"
	"	jb 3f\n"
	"	movq (%rsi), %rax\n"
	"	movq -8(%rsi,%rdx), %rcx\n"
	"	movq %rax, (%rdi)\n"
	"	movq %rcx, -8(%rdi,%rdx)\n"
	"	movl $1, %eax\n"
	"	ret\n"
	"3:	cmpq $4, %rdx\n"
	"	jb 4f\n"
	"	movl (%rsi), %eax\n"
	"	movl -4(%rsi,%rdx), %ecx\n"
	"	movl %eax, (%rdi)\n"
	"	movl %ecx, -4(%rdi,%rdx)\n"
	"	movl $1, %eax\n"
	"	ret\n"
	"4:	testq %rdx, %rdx\n"
	"	je 6f\n"
	"5:	movzbl (%rsi), %eax\n"
	"	movb %al, (%rdi)\n"
	"	incq %rsi\n"
	"	incq %rdi\n"
	"	decq %rdx\n"
	"	jne 5b\n"
	"6:	movl $1, %eax\n"
	"	ret\n"
	/* Where the handler resumes a faulted copy (global: under link-time
	 * optimisation the handler may land in another partition than this). */
	".globl xp_copy_short_fault\n"
	".hidden xp_copy_short_fault\n"
	"xp_copy_short_fault:\n"
	"	xorl %eax, %eax\n"
	"	ret\n"
	".size xp_copy_short, .-xp_copy_short\n"
	".popsection\n");

/* The fault exit, inside xp_copy_short(): the accesses are before it. */
extern const char xp_copy_short_fault[] __attribute__((visibility("hidden")));
#endif

/* volatile: the compiler knows memcpy() does not read it, and would otherwise drop
 * the store that arms it as dead. */
static __thread sigjmp_buf *volatile xp_copy_env;
static struct sigaction xp_prev_segv, xp_prev_bus;
static pthread_once_t xp_fault_once = PTHREAD_ONCE_INIT;

static void xp_fault(int sig, siginfo_t *si, void *uc)
{
	const struct sigaction *prev = sig == SIGBUS ? &xp_prev_bus : &xp_prev_segv;
	sigjmp_buf *env = xp_copy_env;
#ifdef XP_COPY_SHORT_MAX
	greg_t *pc = &((ucontext_t *)uc)->uc_mcontext.gregs[REG_RIP];

	if ((uintptr_t)*pc >= (uintptr_t)xp_copy_short &&
	    (uintptr_t)*pc < (uintptr_t)xp_copy_short_fault) {
		*pc = (greg_t)(uintptr_t)xp_copy_short_fault;
		return;
	}
#endif
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

bool xp_copy_long(struct dpv_xport *x, void *dst, const void *src, size_t len)
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
