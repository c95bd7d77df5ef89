/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ibv_open_device() waits for its port's link (DPV_LINK_WAIT_MS), between two processes
 * joined by memif, each with one device (dpv0), the way programs started one after the
 * other meet it:
 *
 * - the memif server's program opens its device, and its client's process comes a
 *   second later: the server's open waits and finds the port ACTIVE, as does the
 *   client's;
 * - the client comes while the server's program has listed its devices (the memif
 *   socket exists) but not opened one yet: DPDK's server turns the client away, and
 *   the client, connecting again within its wait, finds the port ACTIVE once the
 *   server's program opens its device a second later, as does the server;
 * - a server whose client never comes: its open returns after the wait, the port DOWN,
 *   and dpverbs says so once on stderr.
 *
 * Each case runs in fresh processes (EAL starts once per process): the parent forks a
 * server and a client, tells each when to go on through a pipe, and reads back the port
 * state each saw after ibv_open_device(). The memif socket is a file in a directory of
 * its own under $TMPDIR (default /tmp).
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <infiniband/verbs.h>

#define EAL_COMMON "--no-pci --no-huge --no-shconf -m 512 --no-telemetry " \
		   "--log-level=lib.eal:error"

static char dir[256];
static unsigned int n_case;

struct child {
	pid_t pid;
	int go;     /* the parent writes a byte: go on */
	int state;  /* the child writes the port state it saw, then holds until go closes */
	int err;    /* the child's stderr */
};

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* Read one byte; -1 when the other end closed. */
static int get_byte(int fd)
{
	uint8_t b;

	return read(fd, &b, 1) == 1 ? b : -1;
}

/*
 * The child: list the devices (EAL starts, the memif port is made), say so, wait for a
 * go, open dpv0, send the port state it sees, and keep the device (and the link) until
 * the parent closes the go pipe.
 */
static int child_main(const char *eal, const char *ipv4, const char *link_wait, int go,
		      int state)
{
	struct ibv_port_attr pa;
	struct ibv_device **list;
	struct ibv_context *ctx;
	uint8_t b = 0;
	int n;

	setenv("DPV_EAL_ARGS", eal, 1);
	setenv("DPV_PORT_IPV4", ipv4, 1);
	setenv("DPV_LINK_WAIT_MS", link_wait, 1);
	list = ibv_get_device_list(&n);
	if (list == NULL || n != 1)
		return 1;
	if (write(state, &b, 1) != 1 || get_byte(go) < 0)
		return 1;
	ctx = ibv_open_device(list[0]);
	if (ctx == NULL || ibv_query_port(ctx, 1, &pa) != 0)
		return 1;
	b = (uint8_t)pa.state;
	if (write(state, &b, 1) != 1)
		return 1;
	while (get_byte(go) >= 0)
		;
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	return 0;
}

static void start(struct child *c, const char *role, const char *ipv4, unsigned int lcore,
		  const char *link_wait)
{
	int go[2], state[2], err[2];
	char eal[512];

	snprintf(eal, sizeof(eal),
		 "-l %u " EAL_COMMON " --file-prefix=dpvlinkwait-%d-%u-%s "
		 "--vdev=net_memif0,role=%s,socket=%s/memif%u.sock,socket-abstract=no", lcore,
		 (int)getpid(), n_case, role, role, dir, n_case);
	assert_int_equal(pipe(go), 0);
	assert_int_equal(pipe(state), 0);
	assert_int_equal(pipe(err), 0);
	c->pid = fork();
	assert_true(c->pid >= 0);
	if (c->pid == 0) {
		close(go[1]);
		close(state[0]);
		close(err[0]);
		dup2(err[1], STDERR_FILENO);
		_exit(child_main(eal, ipv4, link_wait, go[0], state[1]));
	}
	close(go[0]);
	close(state[1]);
	close(err[1]);
	c->go = go[1];
	c->state = state[0];
	c->err = err[0];
	/* Listed: its memif port exists. */
	assert_int_equal(get_byte(c->state), 0);
}

static void go_on(struct child *c)
{
	uint8_t b = 1;

	assert_int_equal(write(c->go, &b, 1), 1);
}

/* Let the child go, wait for its exit (0), and return what it wrote on stderr. */
static void finish(struct child *c, char *err, size_t n)
{
	size_t got = 0;
	ssize_t r;
	int status;

	close(c->go);
	while (got + 1 < n && (r = read(c->err, err + got, n - 1 - got)) > 0)
		got += (size_t)r;
	err[got] = '\0';
	close(c->err);
	close(c->state);
	assert_int_equal(waitpid(c->pid, &status, 0), c->pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static unsigned int lines_with(const char *text, const char *what)
{
	unsigned int n = 0;

	for (const char *p = text; (p = strstr(p, what)) != NULL; p += strlen(what))
		n++;
	return n;
}

static void server_waits_for_a_client_that_comes_later(void **state)
{
	struct child server, client;
	char err[4096];

	(void)state;
	n_case++;
	start(&server, "server", "10.81.0.1", 0, "10000");
	go_on(&server);
	/* The server's program is in ibv_open_device(), waiting; the client comes. */
	sleep_ms(1000);
	start(&client, "client", "10.81.0.2", 1, "10000");
	go_on(&client);
	assert_int_equal(get_byte(server.state), IBV_PORT_ACTIVE);
	assert_int_equal(get_byte(client.state), IBV_PORT_ACTIVE);
	finish(&client, err, sizeof(err));
	assert_int_equal(lines_with(err, "dpverbs: "), 0);
	finish(&server, err, sizeof(err));
	assert_int_equal(lines_with(err, "dpverbs: "), 0);
}

static void client_that_came_too_early_connects_again(void **state)
{
	struct child server, client;
	char err[4096];

	(void)state;
	n_case++;
	start(&server, "server", "10.81.0.1", 0, "10000");
	/* The server's socket exists, its port is not started: the client is turned away. */
	start(&client, "client", "10.81.0.2", 1, "10000");
	go_on(&client);
	sleep_ms(1000);
	go_on(&server);
	assert_int_equal(get_byte(client.state), IBV_PORT_ACTIVE);
	assert_int_equal(get_byte(server.state), IBV_PORT_ACTIVE);
	finish(&client, err, sizeof(err));
	assert_int_equal(lines_with(err, "dpverbs: "), 0);
	finish(&server, err, sizeof(err));
	assert_int_equal(lines_with(err, "dpverbs: "), 0);
}

static void wait_without_a_client_ends_with_the_port_down(void **state)
{
	struct child server;
	char err[4096];

	(void)state;
	n_case++;
	start(&server, "server", "10.81.0.1", 0, "300");
	go_on(&server);
	assert_int_equal(get_byte(server.state), IBV_PORT_DOWN);
	finish(&server, err, sizeof(err));
	assert_int_equal(lines_with(err, "dpverbs: "), 1);
	assert_int_equal(lines_with(err, "is still down after 300 ms (DPV_LINK_WAIT_MS)"), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(server_waits_for_a_client_that_comes_later),
		cmocka_unit_test(client_that_came_too_early_connects_again),
		cmocka_unit_test(wait_without_a_client_ends_with_the_port_down),
	};
	const char *tmpdir = getenv("TMPDIR");
	int failed;

	unsetenv("DPV_CONFIG");
	unsetenv("DPV_RING_PAIRS");
	unsetenv("DPV_FAULTS");
	snprintf(dir, sizeof(dir), "%s/dpvlinkwait.XXXXXX",
		 tmpdir != NULL && tmpdir[0] != '\0' ? tmpdir : "/tmp");
	if (mkdtemp(dir) == NULL) {
		perror("test_link_wait: mkdtemp");
		return 1;
	}
	failed = cmocka_run_group_tests(tests, NULL, NULL);
	/* The memif sockets, and the run-time directories EAL made for each child. */
	for (unsigned int i = 1; i <= n_case; i++) {
		const char *run = getenv("XDG_RUNTIME_DIR");
		char path[600];

		snprintf(path, sizeof(path), "%s/memif%u.sock", dir, i);
		unlink(path);
		for (unsigned int r = 0; r < 2; r++) {
			const char *role = r == 0 ? "server" : "client";

			snprintf(path, sizeof(path), "/var/run/dpdk/dpvlinkwait-%d-%u-%s",
				 (int)getpid(), i, role);
			rmdir(path);
			if (run != NULL) {
				snprintf(path, sizeof(path), "%s/dpdk/dpvlinkwait-%d-%u-%s", run,
					 (int)getpid(), i, role);
				rmdir(path);
			}
		}
	}
	rmdir(dir);
	return failed ? 1 : 0;
}
