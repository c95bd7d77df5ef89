/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The fault guard is the program's choice (doc/guides/memory.md). Off (DPV_FAULT_GUARD=0,
 * fault_guard = 0 in the DPV_CONFIG file, or dpv_verbs_set_fault_guard(0) before a
 * DPDK-native program opens a port): opening devices leaves the program's SIGSEGV and
 * SIGBUS handlers as they were, and a copy from registered memory unmapped under its
 * region ends the process with SIGSEGV. On (the default): dpverbs' handler replaces the
 * program's, and passes it every fault that is not inside one of its copies.
 *
 * Each case runs in a child process of its own, which starts EAL and opens its devices
 * itself, with the signal handlers the test program had before cmocka replaced them;
 * a failed assertion there aborts the child (CMOCKA_TEST_ABORT), and the parent checks
 * how the child ended. Not under valgrind: it reports the very accesses made on purpose.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rte_eal.h>

#include "dpv_verbs.h"
#include "verbs_test.h"

#define LW IBV_ACCESS_LOCAL_WRITE
#define LEN 8192u

/* How a child that got as far as it should ends when nothing reached the handler. */
#define CHILD_OK 0
/* The program's handler, called with SIGSEGV after it saw one SIGBUS (and no fault
 * of a copy): what the chaining case wants. */
#define CHILD_CHAINED 42
#define CHILD_WRONG_CHAIN 43
/* The child went on past what should have ended it. */
#define CHILD_SURVIVED 44

/* The handlers the test program had before cmocka put its own in place. */
static struct sigaction orig_segv, orig_bus;
static const char *ipv4_list;

static volatile sig_atomic_t bus_seen;

/* The program's own handler: SIGBUS is counted, SIGSEGV ends the child with what it
 * saw (returning would run the faulting access again). */
static void program_handler(int sig, siginfo_t *si, void *uc)
{
	(void)si;
	(void)uc;
	if (sig == SIGBUS) {
		bus_seen++;
		return;
	}
	_exit(bus_seen == 1 ? CHILD_CHAINED : CHILD_WRONG_CHAIN);
}

static void install_program_handler(int sig)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = program_handler;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(sig, &sa, NULL), 0);
}

static bool has_program_handler(int sig)
{
	struct sigaction cur;

	assert_int_equal(sigaction(sig, NULL, &cur), 0);
	return (cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == program_handler;
}

/* @p sig's handler is the one the program had (the default action, or a sanitizer's). */
static bool has_original_handler(int sig, const struct sigaction *orig)
{
	struct sigaction cur;

	assert_int_equal(sigaction(sig, NULL, &cur), 0);
	return (cur.sa_flags & SA_SIGINFO) == (orig->sa_flags & SA_SIGINFO) &&
	       ((cur.sa_flags & SA_SIGINFO) ? cur.sa_sigaction == orig->sa_sigaction
					    : cur.sa_handler == orig->sa_handler);
}

/* Run @p body in a child as the program started (its own handlers back, @p guard as
 * DPV_FAULT_GUARD, NULL: unset) and return how the child ended (waitpid's status). */
static int run_child(void (*body)(void), const char *guard)
{
	int status;
	pid_t pid;

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		setenv("CMOCKA_TEST_ABORT", "1", 1);
		if (sigaction(SIGSEGV, &orig_segv, NULL) != 0 ||
		    sigaction(SIGBUS, &orig_bus, NULL) != 0)
			abort();
		if (guard != NULL)
			setenv("DPV_FAULT_GUARD", guard, 1);
		else
			unsetenv("DPV_FAULT_GUARD");
		body();
		_exit(CHILD_OK);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return status;
}

static void expect_exit(int status, int code)
{
	if (WIFSIGNALED(status))
		fail_msg("the child ended by signal %d (%s), not with exit %d", WTERMSIG(status),
			 strsignal(WTERMSIG(status)), code);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), code);
}

static void open_sides(void)
{
	assert_true(sides_open(ipv4_list));
}

/* A region of its own pages on A, registered, then unmapped under it. */
static struct ibv_mr *unmapped_mr(void)
{
	void *p = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct ibv_mr *mr;

	assert_true(p != MAP_FAILED);
	mr = ibv_reg_mr(A.pd, p, LEN, LW);
	assert_non_null(mr);
	assert_int_equal(munmap(p, LEN), 0);
	return mr;
}

/* A SEND from @p mr on a fresh RC pair: its completion on A's CQ. */
static void send_from(struct ibv_mr *mr, struct ibv_wc *wc)
{
	struct ibv_mr *dst = new_mr(&B, LEN, LW);
	struct rc_pair p;

	rc_pair(&p, &conn_default);
	assert_int_equal(post_recv(p.b, 1, dst->addr, LEN, dst->lkey), 0);
	assert_int_equal(post_send(p.a, IBV_WR_SEND, 2, mr->addr, LEN, mr->lkey,
				   IBV_SEND_SIGNALED), 0);
	expect_wc(p.acq, wc);
}

/* ---- the guard off ---- */

/* With the program's SIGSEGV handler and SIGBUS's original one in place, open the
 * devices; they are in place still. */
static void off_open(void)
{
	install_program_handler(SIGSEGV);
	open_sides();
}

static void off_check(void)
{
	if (!has_program_handler(SIGSEGV) || !has_original_handler(SIGBUS, &orig_bus))
		_exit(1);
}

static void off_body(void)
{
	off_open();
	off_check();
}

static void guard_off_env_leaves_handlers(void **state)
{
	(void)state;
	expect_exit(run_child(off_body, "0"), CHILD_OK);
}

static void file_off_body(void)
{
	char path[] = "/tmp/dpv_fault_guard_XXXXXX";
	static const char ini[] = "[dpverbs]\nfault_guard = 0\n";
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, ini, sizeof(ini) - 1), (ssize_t)(sizeof(ini) - 1));
	close(fd);
	/* The environment gives the rest; the file only the guard. */
	setenv("DPV_CONFIG", path, 1);
	off_open();
	unlink(path);
	off_check();
}

static void guard_off_config_file_leaves_handlers(void **state)
{
	(void)state;
	expect_exit(run_child(file_off_body, NULL), CHILD_OK);
}

/* The copy from memory gone faults as any bad access: the process ends. */
static void unmapped_body(void)
{
	struct ibv_wc wc;

	open_sides();
	send_from(unmapped_mr(), &wc);
	_exit(CHILD_SURVIVED);
}

static void guard_off_unmapped_copy_ends_the_process(void **state)
{
	int status;

	(void)state;
	status = run_child(unmapped_body, "0");
#if defined(__SANITIZE_ADDRESS__)
	/* The handler the program had was AddressSanitizer's: it reports and exits 1. */
	expect_exit(status, 1);
#else
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGSEGV);
#endif
}

/* A DPDK-native program: its own EAL and port, the guard refused before it opens. */
static void native_off_body(void)
{
	char args[1024], *argv[64], *save = NULL, *tok;
	const char *eal = getenv("DPV_EAL_ARGS");
	struct ibv_context *ctx;
	uint16_t pa, pb;
	int argc = 0;

	assert_non_null(eal);
	snprintf(args, sizeof(args), "%s", eal);
	argv[argc++] = (char *)"test_fault_guard";
	for (tok = strtok_r(args, " ", &save); tok != NULL && argc < 63;
	     tok = strtok_r(NULL, " ", &save))
		argv[argc++] = tok;
	argv[argc] = NULL;
	assert_true(rte_eal_init(argc, argv) >= 0);
	assert_int_equal(dpv_verbs_ring_pair("guard", &pa, &pb), 0);
	assert_int_equal(dpv_verbs_set_fault_guard(2), EINVAL);
	assert_int_equal(dpv_verbs_set_fault_guard(0), 0);
	install_program_handler(SIGSEGV);
	ctx = dpv_verbs_open_port(pa, 0x7f001501);
	assert_non_null(ctx);
	off_check();
	/* The choice was made when the port opened. */
	assert_int_equal(dpv_verbs_set_fault_guard(1), EBUSY);
	assert_int_equal(dpv_verbs_set_fault_guard(0), EBUSY);
	assert_int_equal(ibv_close_device(ctx), 0);
}

static void guard_off_native_call_leaves_handlers(void **state)
{
	(void)state;
	expect_exit(run_child(native_off_body, NULL), CHILD_OK);
}

/* ---- the guard on ---- */

/* dpverbs' handler takes the place of the program's, keeps the faults of its copies
 * and passes on the others: a SIGBUS, then a SIGSEGV outside any copy. */
static void chain_body(void)
{
	volatile int *bad;
	struct ibv_wc wc;

	install_program_handler(SIGSEGV);
	install_program_handler(SIGBUS);
	open_sides();
	if (has_program_handler(SIGSEGV) || has_program_handler(SIGBUS))
		_exit(2);
	send_from(unmapped_mr(), &wc);
	assert_int_equal(wc.status, IBV_WC_LOC_PROT_ERR);
	assert_int_equal(bus_seen, 0);
	assert_int_equal(raise(SIGBUS), 0);
	assert_int_equal(bus_seen, 1);
	bad = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(bad != MAP_FAILED);
	*bad = 1;
	_exit(CHILD_SURVIVED);
}

static void guard_on_chains_to_earlier_handler(void **state)
{
	(void)state;
	expect_exit(run_child(chain_body, NULL), CHILD_CHAINED);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(guard_off_env_leaves_handlers),
		cmocka_unit_test(guard_off_config_file_leaves_handlers),
		cmocka_unit_test(guard_off_unmapped_copy_ends_the_process),
		cmocka_unit_test(guard_off_native_call_leaves_handlers),
		cmocka_unit_test(guard_on_chains_to_earlier_handler),
	};

	ipv4_list = getenv("DPV_PORT_IPV4");
	if (ipv4_list == NULL) {
		fprintf(stderr, "DPV_PORT_IPV4 unset\n");
		return 1;
	}
	sigaction(SIGSEGV, NULL, &orig_segv);
	sigaction(SIGBUS, NULL, &orig_bus);
	return cmocka_run_group_tests_name("fault_guard", tests, NULL, NULL);
}
