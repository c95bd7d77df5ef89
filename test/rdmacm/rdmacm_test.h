/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the rdmacm tests share: CHECK, which counts a failure and goes on, and event
 * channels taken without blocking, each event waited for by polling the channel's fd
 * (no library call meanwhile).
 */
#ifndef DPV_TEST_RDMACM_H
#define DPV_TEST_RDMACM_H

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <signal.h>
#include <sys/wait.h>

#include <arpa/inet.h>
#include <rdma/rdma_cma.h>

static int failures;

#define CHECK(cond, ...)                                                                   \
	do {                                                                               \
		if (!(cond)) {                                                             \
			fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);    \
			fprintf(stderr, __VA_ARGS__);                                      \
			fputc('\n', stderr);                                               \
			failures++;                                                        \
		}                                                                          \
	} while (0)

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline struct sockaddr_in sin_of(const char *ip, uint16_t port)
{
	struct sockaddr_in s = {.sin_family = AF_INET, .sin_port = htons(port)};

	inet_pton(AF_INET, ip, &s.sin_addr);
	return s;
}

/* Processes of a test signal each other with one byte down a pipe: send @p c. */
static inline void say(int fd, char c)
{
	if (write(fd, &c, 1) != 1)
		_exit(3);
}

/* The next byte from @p fd within @p ms; 0 for none (end of file or time out). */
static inline char hear(int fd, int ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	char c;

	if (poll(&p, 1, ms) != 1 || read(fd, &c, 1) != 1)
		return 0;
	return c;
}

/* A test's child process and its pipes. */
struct child {
	pid_t pid;
	int cmd;    /* our end of its commands */
	int report; /* our end of its reports */
};

/* Wait up to @p wait_ms for @p c to end, then close its report pipe; whether it ended
 * as @p sig says (0: exit 0). One that does not end is killed. */
static inline bool reap(struct child *c, int sig, const char *what, int wait_ms)
{
	uint64_t end = now_ns() + (uint64_t)wait_ms * 1000000ull;
	int st = 0;
	pid_t r;

	while ((r = waitpid(c->pid, &st, WNOHANG)) == 0 && now_ns() < end)
		usleep(10000);
	if (r == 0) {
		kill(c->pid, SIGKILL);
		(void)waitpid(c->pid, &st, 0);
		fprintf(stderr, "FAIL: %s did not end\n", what);
		return false;
	}
	close(c->report);
	if (sig != 0 ? !(WIFSIGNALED(st) && WTERMSIG(st) == sig)
		     : !(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
		fprintf(stderr, "FAIL: %s ended with status 0x%x\n", what, st);
		return false;
	}
	return true;
}

/* An id on @p ch; the program ends if there is none. */
static inline struct rdma_cm_id *new_id(struct rdma_event_channel *ch)
{
	struct rdma_cm_id *id;

	if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) != 0) {
		fprintf(stderr, "rdma_create_id: %s\n", strerror(errno));
		exit(1);
	}
	return id;
}

/* A channel of its own; the program ends if there is none. */
static inline struct rdma_event_channel *channel(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();

	if (ch == NULL) {
		fprintf(stderr, "rdma_create_event_channel: %s\n", strerror(errno));
		exit(1);
	}
	/* Non-blocking: an empty channel says EAGAIN, never waits. */
	fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK);
	return ch;
}

/* The next event of @p ch within @p ms: poll its fd, then take it; NULL for none. */
static inline struct rdma_cm_event *next_event(struct rdma_event_channel *ch, int ms)
{
	struct pollfd p = {.fd = ch->fd, .events = POLLIN};
	struct rdma_cm_event *ev;
	const uint64_t end = now_ns() + (uint64_t)ms * 1000000ull;

	do {
		if (rdma_get_cm_event(ch, &ev) == 0)
			return ev;
		if (errno != EAGAIN)
			return NULL;
		(void)poll(&p, 1, 10);
	} while (now_ns() < end);
	return NULL;
}

/* Any status: expect_event() checks the type and the id alone. */
#define ANY_STATUS INT_MIN

/* The next event within @p ms must be @p type on @p id (NULL: any id) with @p status
 * (ANY_STATUS: any); returns it, unacked, else NULL with the failure counted. */
static inline struct rdma_cm_event *expect_event(struct rdma_event_channel *ch,
						 enum rdma_cm_event_type type,
						 struct rdma_cm_id *id, int status, int ms,
						 int line)
{
	struct rdma_cm_event *ev = next_event(ch, ms);

	if (ev == NULL) {
		fprintf(stderr, "FAIL line %d: no %s within %d ms\n", line, rdma_event_str(type),
			ms);
		failures++;
		return NULL;
	}
	if (ev->event != type || (id != NULL && ev->id != id) ||
	    (status != ANY_STATUS && ev->status != status)) {
		fprintf(stderr, "FAIL line %d: %s (status %d), want %s", line,
			rdma_event_str(ev->event), ev->status, rdma_event_str(type));
		if (status != ANY_STATUS)
			fprintf(stderr, " (status %d)", status);
		fputc('\n', stderr);
		failures++;
		rdma_ack_cm_event(ev);
		return NULL;
	}
	return ev;
}

#endif
