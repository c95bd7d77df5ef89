/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpv-perf link: what dpverbs costs on a link between two processes, each on a core of
 * its own, against raw DPDK frames on the same link, measured in the same run.
 *
 * The command starts no EAL itself. Each round it forks the two sides (perf_link_side.c;
 * side A the memif server, B the client), each pinned to its core, joined by a socket
 * pair for the control messages and a pipe from A for the results; then, where they
 * are installed, it runs perftest's ib_send_lat, ib_send_bw and ib_write_bw and UCX's
 * ucx_perftest (tag_lat, tag_bw over rc_verbs) on the drop-in libibverbs.so.1, their
 * server and client on the same cores and link. Rounds alternate the ways, so a drift
 * of the machine hits all of them alike; each figure is the median over the rounds,
 * each ratio one of medians. Output: a table on stdout (or JSON), a JSON file, and the
 * plots (SVG, gnuplot) of the latency distributions and of bandwidth against size.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "perf_link.h"

#define LK_MAX_CASES 64u
#define LK_MAX_ROUNDS 101u
#define LK_ROUND_TIMEOUT_S 900u
#define LK_EXT_TIMEOUT_S 120u

static const char *const lk_names[LK_NB_KINDS] = {
	[LK_RAW_PP] = "raw ping-pong",
	[LK_RAW_STREAM] = "raw stream",
	[LK_SEND_LAT] = "RC SEND lat",
	[LK_WRITE_LAT] = "RC WRITE lat",
	[LK_TM_LAT] = "tagged eager lat",
	[LK_SEND_RATE] = "RC SEND rate",
	[LK_WRITE_BW] = "RC WRITE bw",
	[LK_SEND_BW] = "RC SEND bw",
	[LK_RNDV_BW] = "rendezvous bw",
	[LK_READ_BW] = "RC READ bw",
};

static const char *const lk_keys[LK_NB_KINDS] = {
	[LK_RAW_PP] = "raw_pingpong", [LK_RAW_STREAM] = "raw_stream",
	[LK_SEND_LAT] = "send_lat", [LK_WRITE_LAT] = "write_lat", [LK_TM_LAT] = "tm_lat",
	[LK_SEND_RATE] = "send_rate", [LK_WRITE_BW] = "write_bw", [LK_SEND_BW] = "send_bw",
	[LK_RNDV_BW] = "rndv_bw", [LK_READ_BW] = "read_bw",
};

const char *
lk_kind_name(enum lk_kind k)
{
	return lk_keys[k];
}

/* An RC packet's headers and ICRC (perf_link_side.c's LK_HDR_LEN + 4), and a RETH or TMH. */
#define LK_FRAME(payload) (54u + 4u + (payload))
#define LK_EXT_HDR 16u
#define LK_FULL_PAYLOAD 1024u

static inline bool
is_lat(enum lk_kind k)
{
	return k == LK_RAW_PP || k == LK_SEND_LAT || k == LK_WRITE_LAT || k == LK_TM_LAT;
}

unsigned int
lk_plan(const struct lk_opts *o, struct lk_case *c, unsigned int cap)
{
	unsigned int n = 0;
	uint32_t s = o->lat_size;

#define ADD(k, sz, cnt) do { if (n < cap) c[n++] = (struct lk_case){ (k), (sz), (cnt) }; } while (0)
	ADD(LK_RAW_PP, LK_FRAME(s), o->lat_iters);
	ADD(LK_SEND_LAT, s, o->lat_iters);
	ADD(LK_RAW_PP, LK_FRAME(LK_EXT_HDR + s), o->lat_iters);
	ADD(LK_WRITE_LAT, s, o->lat_iters);
	ADD(LK_TM_LAT, s, o->lat_iters);
	ADD(LK_RAW_STREAM, LK_FRAME(s), o->rate_msgs);
	ADD(LK_SEND_RATE, s, o->rate_msgs);
	ADD(LK_RAW_STREAM, LK_FRAME(LK_FULL_PAYLOAD), o->bw_bytes / LK_FULL_PAYLOAD);
	for (unsigned int i = 0; i < o->nb_sizes; i++) {
		uint64_t cnt = o->bw_bytes / o->sizes[i];

		if (cnt < 4)
			cnt = 4;
		ADD(LK_WRITE_BW, o->sizes[i], cnt);
		ADD(LK_READ_BW, o->sizes[i], cnt);
		ADD(LK_SEND_BW, o->sizes[i], cnt);
		ADD(LK_RNDV_BW, o->sizes[i], cnt);
	}
#undef ADD
	return n;
}

/* ---- external programs: perftest and UCX ---- */

enum lk_ext {
	LK_EXT_SEND_LAT,    /* ib_send_lat -s SIZE */
	LK_EXT_SEND_BW,     /* ib_send_bw -s SIZE: message rate */
	LK_EXT_WRITE_BW,    /* ib_write_bw -s 1 MiB */
	LK_EXT_UCX_LAT,     /* ucx_perftest -t tag_lat -s SIZE */
	LK_EXT_UCX_BW,      /* ucx_perftest -t tag_bw -s SIZE */
	LK_NB_EXT
};

static const char *const lk_ext_keys[LK_NB_EXT] = {
	[LK_EXT_SEND_LAT] = "ib_send_lat", [LK_EXT_SEND_BW] = "ib_send_bw",
	[LK_EXT_WRITE_BW] = "ib_write_bw", [LK_EXT_UCX_LAT] = "ucx_tag_lat",
	[LK_EXT_UCX_BW] = "ucx_tag_bw",
};

/* One external run's figures (NAN where the program gives none). */
struct lk_ext_result {
	bool ran;
	double typ, avg, p99, p999, max; /* one-way microseconds */
	double rate, mbps;               /* messages/s, MB/s (10^6 bytes) */
};

struct lk_run {
	struct lk_opts *o;
	struct lk_case cases[LK_MAX_CASES];
	unsigned int nb_cases;
	struct lk_result res[LK_MAX_ROUNDS][LK_MAX_CASES];
	struct lk_result med[LK_MAX_CASES];
	struct lk_ext_result ext[LK_MAX_ROUNDS][LK_NB_EXT];
	struct lk_ext_result ext_med[LK_NB_EXT];
	bool have_ext[LK_NB_EXT];
	unsigned int ext_failed[LK_NB_EXT]; /* runs that failed */
	unsigned int ext_lost[LK_NB_EXT];   /* rounds without a result (both tries failed) */
	unsigned int sides_failed;          /* rounds of the two sides run twice */
	bool memif;
	uint16_t tcp_port;
	char *self;
};

/* ---- processes ---- */

static void
pin(unsigned int core)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(core, &set);
	if (sched_setaffinity(0, sizeof(set), &set) != 0)
		perf_error("%s: cannot pin to core %u: %s", LK_CMD, core, strerror(errno));
}

/* Wait for @p pid for at most @p secs seconds (then kill it). @return its exit code, or -1. */
static int
wait_child(pid_t pid, unsigned int secs)
{
	uint64_t deadline = perf_now_ns() + (uint64_t)secs * 1000000000u;
	int st;
	pid_t r;

	for (;;) {
		r = waitpid(pid, &st, WNOHANG);
		if (r == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
		if (r < 0)
			return -1;
		if (perf_now_ns() > deadline) {
			kill(pid, SIGKILL);
			(void)waitpid(pid, &st, 0);
			return -1;
		}
		usleep(10000);
	}
}

/* Remove EAL's runtime directory of file prefix @p prefix, if it left one. */
static void
rm_runtime(const char *prefix)
{
	char path[256], f[512];
	struct dirent *e;
	DIR *d;

	snprintf(path, sizeof(path), "/var/run/dpdk/%s", prefix);
	d = opendir(path);
	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(f, sizeof(f), "%s/%s", path, e->d_name);
		(void)unlink(f);
	}
	closedir(d);
	(void)rmdir(path);
}

/* Join the network namespace @p name of ip-netns(8). @return 0 or -1 after saying why. */
static int
enter_netns(const char *name)
{
	char path[256];
	int fd, ret;

	snprintf(path, sizeof(path), "/var/run/netns/%s", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	ret = fd < 0 ? -1 : setns(fd, CLONE_NEWNET);
	if (ret != 0)
		perf_error("%s: network namespace %s: %s", LK_CMD, name, strerror(errno));
	if (fd >= 0)
		close(fd);
	return ret;
}

void
lk_eal_cores(const struct lk_opts *o, unsigned int me, char *buf, size_t len, char *mode,
	     size_t mode_len)
{
	unsigned int c = o->core[me];

	if (o->progress_cpu < 0) {
		snprintf(buf, len, "-l %u --main-lcore %u", c, c);
		snprintf(mode, mode_len, "inline");
		return;
	}
	if (o->service)
		snprintf(buf, len, "--lcores %u@%u,%u@%d -S %u --main-lcore %u", c, c,
			 LK_PROGRESS_LCORE, o->progress_cpu, LK_PROGRESS_LCORE, c);
	else
		snprintf(buf, len, "--lcores %u@%u,%u@%d --main-lcore %u", c, c,
			 LK_PROGRESS_LCORE, o->progress_cpu, c);
	if (o->service)
		snprintf(mode, mode_len, "service");
	else
		snprintf(mode, mode_len, "lcore:%u", LK_PROGRESS_LCORE);
}

/* One round of the two sides: fork both, read A's results. @return 0 or -1. */
static int
run_sides(struct lk_run *run, unsigned int round)
{
	struct lk_opts *o = run->o;
	int ctl[2], out[2], rc[2];
	pid_t pid[2];
	unsigned int got = 0;
	char prefix[128];

	/* A memif server leaves its socket file behind; the next one makes it anew. */
	snprintf(prefix, sizeof(prefix), "%s/memif.sock", o->tmpdir);
	(void)unlink(prefix);
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, ctl) != 0 || pipe(out) != 0) {
		perf_error("%s: socketpair or pipe: %s", LK_CMD, strerror(errno));
		return -1;
	}
	fflush(stdout);
	fflush(stderr);
	for (unsigned int me = 0; me < 2; me++) {
		pid[me] = fork();
		if (pid[me] < 0) {
			perf_error("%s: fork: %s", LK_CMD, strerror(errno));
			return -1;
		}
		if (pid[me] == 0) {
			close(ctl[1 - me]);
			close(out[0]);
			if (me == 1)
				close(out[1]);
			alarm(LK_ROUND_TIMEOUT_S);
			pin(o->core[me]);
			if (o->netns[me] != NULL && enter_netns(o->netns[me]) != 0)
				_exit(PERF_EXIT_FAIL);
			_exit(lk_side_run(o, me, round, ctl[me], out[1]));
		}
	}
	close(ctl[0]);
	close(ctl[1]);
	close(out[1]);
	while (got < run->nb_cases) {
		struct lk_result *r = &run->res[round][got];
		uint8_t *p = (uint8_t *)r;
		size_t left = sizeof(*r);
		ssize_t n;

		while (left > 0 && (n = read(out[0], p, left)) > 0) {
			p += n;
			left -= (size_t)n;
		}
		if (left > 0)
			break;
		got++;
	}
	close(out[0]);
	rc[0] = wait_child(pid[0], LK_ROUND_TIMEOUT_S);
	rc[1] = wait_child(pid[1], LK_ROUND_TIMEOUT_S);
	for (unsigned int me = 0; me < 2; me++) {
		snprintf(prefix, sizeof(prefix), "%s-%u%c", o->prefix, round, 'a' + me);
		rm_runtime(prefix);
	}
	if (rc[0] != 0 || rc[1] != 0 || got != run->nb_cases) {
		perf_error("%s: round %u: side A exited %d, side B %d, %u of %u results", LK_CMD,
			   round + 1, rc[0], rc[1], got, run->nb_cases);
		return -1;
	}
	return 0;
}

/* Whether a TCP socket listens on @p port (any address): /proc/net/tcp and tcp6. */
static bool
tcp_listening(uint16_t port)
{
	static const char *const files[] = { "/proc/net/tcp", "/proc/net/tcp6" };
	char line[512], want[8];
	bool yes = false;

	snprintf(want, sizeof(want), ":%04X", port);
	for (unsigned int i = 0; i < 2 && !yes; i++) {
		FILE *f = fopen(files[i], "r");

		if (f == NULL)
			continue;
		while (!yes && fgets(line, sizeof(line), f) != NULL) {
			char local[128], remote[128], st[8];

			if (sscanf(line, "%*s %127s %127s %7s", local, remote, st) == 3 &&
			    strstr(local, want) != NULL &&
			    strlen(strstr(local, want)) == strlen(want) && strcmp(st, "0A") == 0)
				yes = true;
		}
		fclose(f);
	}
	return yes;
}

/* A path on PATH for @p prog, or NULL. */
static const char *
which(const char *prog, char *buf, size_t len)
{
	const char *path = getenv("PATH");
	const char *p = path != NULL ? path : "/usr/bin:/bin";

	while (*p != '\0') {
		size_t n = strcspn(p, ":");

		snprintf(buf, len, "%.*s/%s", (int)n, p, prog);
		if (access(buf, X_OK) == 0)
			return buf;
		p += n + (p[n] == ':');
	}
	return NULL;
}

/*
 * The /dev/infiniband/dpvN nodes UCX looks for, in a mount namespace of this process
 * alone: /dev becomes a tmpfs holding binds of the host's entries and the nodes
 * (character devices 1:3, /dev/null's: no program opens them on dpverbs), as
 * dpv-devnodes makes them. @return 0 or -1.
 */
static int
private_devnodes(void)
{
	char host[] = "/tmp/dpv-link-dev.XXXXXX", src[512], dst[512];
	struct dirent *e;
	struct stat st;
	DIR *d;

	if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
	    mkdtemp(host) == NULL || mount("/dev", host, NULL, MS_BIND | MS_REC, NULL) != 0 ||
	    mount("dpv-dev", "/dev", "tmpfs", 0, "mode=0755,size=1m") != 0)
		return -1;
	d = opendir(host);
	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(src, sizeof(src), "%s/%s", host, e->d_name);
		snprintf(dst, sizeof(dst), "/dev/%s", e->d_name);
		if (lstat(src, &st) != 0)
			continue;
		if (S_ISLNK(st.st_mode)) {
			char target[512];
			ssize_t n = readlink(src, target, sizeof(target) - 1);

			if (n > 0) {
				target[n] = '\0';
				(void)symlink(target, dst);
			}
		} else if (S_ISDIR(st.st_mode)) {
			if (mkdir(dst, st.st_mode & 07777) == 0)
				(void)mount(src, dst, NULL, MS_BIND | MS_REC, NULL);
		} else {
			int fd = open(dst, O_CREAT | O_WRONLY, 0600);

			if (fd >= 0) {
				close(fd);
				(void)mount(src, dst, NULL, MS_BIND, NULL);
			}
		}
	}
	closedir(d);
	(void)umount2(host, MNT_DETACH);
	(void)rmdir(host);
	if (mkdir("/dev/infiniband", 0755) != 0 && errno != EEXIST)
		return -1;
	for (unsigned int i = 0; i < 2; i++) {
		snprintf(dst, sizeof(dst), "/dev/infiniband/dpv%u", i);
		if (mknod(dst, S_IFCHR | 0666, makedev(1, 3)) != 0 && errno != EEXIST)
			return -1;
	}
	return 0;
}

/* Start an external program as side @p me, its output in @p outfile. @return its pid or -1. */
static pid_t
ext_start(struct lk_run *run, unsigned int me, bool ucx, char *const argv[], const char *outfile,
	  unsigned int round)
{
	struct lk_opts *o = run->o;
	char eal[1024], cores[128], mode[32], idle[16], ld[512];
	pid_t pid;
	int fd;

	lk_eal_cores(o, me, cores, sizeof(cores), mode, sizeof(mode));
	snprintf(eal, sizeof(eal), "%s --file-prefix %s-x%u%c --no-pci "
		 "--no-telemetry --log-level=lib.eal:error %s --vdev=%s", cores,
		 o->prefix, round, 'a' + me,
		 o->huge ? "--in-memory -m 256" : "--no-huge --no-shconf -m 512", o->vdev[me]);
	snprintf(idle, sizeof(idle), "%u", o->idle_us);
	snprintf(ld, sizeof(ld), "%s", o->dropin);
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid != 0)
		return pid;
	fd = open(outfile, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		_exit(126);
	dup2(fd, 1);
	dup2(fd, 2);
	close(fd);
	setenv("LD_LIBRARY_PATH", ld, 1);
	setenv("DPV_EAL_ARGS", eal, 1);
	setenv("DPV_PORT_IPV4", me == 0 ? "10.79.2.1" : "10.79.2.2", 1);
	setenv("DPV_PROGRESS", mode, 1);
	setenv("DPV_INLINE_IDLE_US", idle, 1);
	unsetenv("DPV_CONFIG");
	if (ucx) {
		/* rc_verbs for the data; UCP connects over UD (it will not over RC alone). */
		setenv("UCX_TLS", "rc_v", 1);
		setenv("UCX_NET_DEVICES", "dpv0:1", 1);
		if (private_devnodes() != 0) {
			fprintf(stderr, "dpv-perf link: no private /dev/infiniband: %s\n",
				strerror(errno));
			_exit(126);
		}
	}
	alarm(LK_EXT_TIMEOUT_S);
	pin(o->core[me]);
	execv(argv[0], argv);
	fprintf(stderr, "dpv-perf link: exec %s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

/* The numbers of the first line of @p file that starts with @p lead (after blanks). */
static int
ext_numbers(const char *file, const char *lead, double *v, int cap)
{
	char line[1024];
	FILE *f = fopen(file, "r");
	int n = -1;

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL) {
		char *p = line, *end;

		while (*p == ' ' || *p == '\t')
			p++;
		if (strncmp(p, lead, strlen(lead)) != 0)
			continue;
		p += strlen(lead);
		for (n = 0; n < cap; n++) {
			v[n] = strtod(p, &end);
			if (end == p)
				break;
			p = end;
		}
		break;
	}
	fclose(f);
	return n;
}

/* Run one external measurement of round @p round. @return 0, or -1 when it failed. */
static int
ext_run(struct lk_run *run, enum lk_ext e, unsigned int round, unsigned int attempt,
	struct lk_ext_result *r)
{
	struct lk_opts *o = run->o;
	char prog[256], port[8], size[16], iters[16], lead[32], out[2][160];
	char *argv[2][16];
	const char *name;
	bool ucx = e == LK_EXT_UCX_LAT || e == LK_EXT_UCX_BW;
	unsigned int a = 0, b;
	double v[12];
	uint64_t deadline;
	pid_t pid[2];
	int rc[2], n;
	char sock[128];
	uint16_t tcp;

	name = e == LK_EXT_SEND_LAT ? "ib_send_lat" : e == LK_EXT_SEND_BW ? "ib_send_bw" :
	       e == LK_EXT_WRITE_BW ? "ib_write_bw" : "ucx_perftest";
	if (which(name, prog, sizeof(prog)) == NULL)
		return 1;
	tcp = (uint16_t)(run->tcp_port + (attempt * LK_MAX_ROUNDS + round) * LK_NB_EXT + e);
	snprintf(port, sizeof(port), "%u", tcp);
	snprintf(size, sizeof(size), "%u", e == LK_EXT_WRITE_BW ? 1048576u : o->lat_size);
	snprintf(iters, sizeof(iters), "%u", e == LK_EXT_SEND_LAT || e == LK_EXT_UCX_LAT ?
		 o->lat_iters : e == LK_EXT_WRITE_BW ?
		 (uint32_t)(o->bw_bytes >> 20 > 8 ? o->bw_bytes >> 20 : 8) : o->rate_msgs);
	argv[0][a++] = prog;
	if (ucx) {
		argv[0][a++] = (char *)(uintptr_t)"-p";
		argv[0][a++] = port;
		argv[0][a] = NULL;
		b = 0;
		argv[1][b++] = prog;
		argv[1][b++] = (char *)(uintptr_t)"-t";
		argv[1][b++] = (char *)(uintptr_t)(e == LK_EXT_UCX_LAT ? "tag_lat" : "tag_bw");
		argv[1][b++] = (char *)(uintptr_t)"-s";
		argv[1][b++] = size;
		argv[1][b++] = (char *)(uintptr_t)"-n";
		argv[1][b++] = iters;
		argv[1][b++] = (char *)(uintptr_t)"-p";
		argv[1][b++] = port;
		argv[1][b++] = (char *)(uintptr_t)"127.0.0.1";
		argv[1][b] = NULL;
	} else {
		argv[0][a++] = (char *)(uintptr_t)"-s";
		argv[0][a++] = size;
		argv[0][a++] = (char *)(uintptr_t)"-n";
		argv[0][a++] = iters;
		argv[0][a++] = (char *)(uintptr_t)"-p";
		argv[0][a++] = port;
		argv[0][a] = NULL;
		memcpy(argv[1], argv[0], sizeof(argv[0]));
		argv[1][a++] = (char *)(uintptr_t)"localhost";
		argv[1][a] = NULL;
	}
	for (unsigned int i = 0; i < 2; i++)
		snprintf(out[i], sizeof(out[i]), "%s/%s-%u%c.out", o->tmpdir, lk_ext_keys[e],
			 round, 'a' + i);
	/* A memif server leaves its socket file behind; the next one makes it anew. */
	snprintf(sock, sizeof(sock), "%s/memif.sock", o->tmpdir);
	(void)unlink(sock);
	pid[0] = ext_start(run, 0, ucx, argv[0], out[0], round);
	if (pid[0] < 0)
		return -1;
	/* The client once the server can be joined: the memif socket, or its TCP port. */
	deadline = perf_now_ns() + 30 * UINT64_C(1000000000);
	while (!(run->memif ? access(sock, F_OK) == 0 : tcp_listening(tcp)) &&
	       perf_now_ns() < deadline && waitpid(pid[0], NULL, WNOHANG) == 0)
		usleep(20000);
	/* The socket file is there from bind(): the server listens a moment later. */
	usleep(300000);
	pid[1] = ext_start(run, 1, ucx, argv[1], out[1], round);
	rc[1] = pid[1] < 0 ? -1 : wait_child(pid[1], LK_EXT_TIMEOUT_S);
	rc[0] = wait_child(pid[0], rc[1] == 0 ? 10 : 1);
	for (unsigned int i = 0; i < 2; i++) {
		char prefix[64];

		snprintf(prefix, sizeof(prefix), "%s-x%u%c", o->prefix, round, 'a' + i);
		rm_runtime(prefix);
	}
	if (rc[0] != 0 || rc[1] != 0) {
		perf_error("%s: %s: server exited %d, client %d (outputs in %s)", LK_CMD,
			   lk_ext_keys[e], rc[0], rc[1], o->tmpdir);
		return -1;
	}
	memset(r, 0, sizeof(*r));
	r->typ = r->avg = r->p99 = r->p999 = r->max = r->rate = r->mbps = NAN;
	if (ucx) {
		n = ext_numbers(out[1], "Final:", v, 8);
		if (n < 8)
			goto bad;
		/* iterations; latency typical, average, overall; bandwidth average, overall
		 * (MB/s: MiB); message rate average, overall. */
		r->typ = v[1];
		r->avg = v[2];
		r->mbps = v[4] * 1.048576;
		r->rate = v[6];
	} else {
		snprintf(lead, sizeof(lead), "%s ", size);
		n = ext_numbers(out[1], lead, v, 9);
		if (e == LK_EXT_SEND_LAT) {
			/* iterations, t_min, t_max, t_typical, t_avg, t_stdev, 99 %, 99.9 % */
			if (n < 8)
				goto bad;
			r->typ = v[3];
			r->avg = v[4];
			r->max = v[2];
			r->p99 = v[6];
			r->p999 = v[7];
		} else {
			/* iterations, BW peak, BW average (MiB/s), MsgRate (Mpps) */
			if (n < 4)
				goto bad;
			r->mbps = v[2] * 1.048576;
			r->rate = v[3] * 1e6;
		}
	}
	r->ran = true;
	(void)unlink(out[0]);
	(void)unlink(out[1]);
	return 0;
bad:
	perf_error("%s: %s: no result line in %s", LK_CMD, lk_ext_keys[e], out[1]);
	return -1;
}

/* ---- medians and ratios ---- */

static double
median_of(struct lk_run *run, const double *first, size_t stride)
{
	double v[LK_MAX_ROUNDS];
	unsigned int n = 0;

	for (unsigned int r = 0; r < run->o->rounds; r++) {
		double x = *(const double *)(const void *)((const uint8_t *)first + r * stride);

		if (isfinite(x))
			v[n++] = x;
	}
	return n > 0 ? perf_median(v, n) : NAN;
}

static void
medians(struct lk_run *run)
{
	const size_t rs = sizeof(run->res[0]), es = sizeof(run->ext[0]);

	for (unsigned int i = 0; i < run->nb_cases; i++) {
		struct lk_result *m = &run->med[i], *r0 = &run->res[0][i];

		memset(m, 0, sizeof(*m));
		m->c = run->cases[i];
		m->done = r0->done;
		m->p50 = median_of(run, &r0->p50, rs);
		m->p99 = median_of(run, &r0->p99, rs);
		m->p999 = median_of(run, &r0->p999, rs);
		m->max = median_of(run, &r0->max, rs);
		m->min = median_of(run, &r0->min, rs);
		m->rate = median_of(run, &r0->rate, rs);
		m->mbps = median_of(run, &r0->mbps, rs);
		for (unsigned int q = 0; q < LK_CDF_N; q++)
			m->cdf[q] = median_of(run, &r0->cdf[q], rs);
		for (unsigned int s = 0; s < 2; s++)
			m->helper_pct[s] = median_of(run, &r0->helper_pct[s], rs);
	}
	for (unsigned int e = 0; e < LK_NB_EXT; e++) {
		struct lk_ext_result *m = &run->ext_med[e], *r0 = &run->ext[0][e];

		memset(m, 0, sizeof(*m));
		m->ran = run->have_ext[e];
		m->typ = median_of(run, &r0->typ, es);
		m->avg = median_of(run, &r0->avg, es);
		m->p99 = median_of(run, &r0->p99, es);
		m->p999 = median_of(run, &r0->p999, es);
		m->max = median_of(run, &r0->max, es);
		m->rate = median_of(run, &r0->rate, es);
		m->mbps = median_of(run, &r0->mbps, es);
	}
}

/* The raw case a verbs case stands on: the frame of its first packet, or full packets. */
static const struct lk_result *
raw_ref(const struct lk_run *run, enum lk_kind k, uint32_t size)
{
	enum lk_kind rk = is_lat(k) ? LK_RAW_PP : LK_RAW_STREAM;
	uint32_t frame = k == LK_SEND_LAT || k == LK_SEND_RATE ? LK_FRAME(size) :
			 k == LK_WRITE_LAT || k == LK_TM_LAT ? LK_FRAME(LK_EXT_HDR + size) :
			 LK_FRAME(LK_FULL_PAYLOAD);

	for (unsigned int i = 0; i < run->nb_cases; i++)
		if (run->med[i].c.kind == rk && run->med[i].c.size == frame)
			return &run->med[i];
	return NULL;
}

/* Verbs over raw: latency (p50, p99.9) as times raw, rate and bandwidth as fractions. */
static void
ratios(const struct lk_run *run, const struct lk_result *m, double *r50, double *r999,
       double *rrate)
{
	const struct lk_result *raw = raw_ref(run, m->c.kind, m->c.size);

	*r50 = *r999 = *rrate = NAN;
	if (raw == NULL || m->c.kind == LK_RAW_PP || m->c.kind == LK_RAW_STREAM)
		return;
	if (is_lat(m->c.kind)) {
		*r50 = m->p50 / raw->p50;
		*r999 = m->p999 / raw->p999;
	} else if (m->c.kind == LK_SEND_RATE) {
		*rrate = m->rate / raw->rate;
	} else {
		*rrate = m->mbps / raw->mbps;
	}
}

static const struct lk_result *
find_case(const struct lk_run *run, enum lk_kind k, uint32_t size)
{
	for (unsigned int i = 0; i < run->nb_cases; i++)
		if (run->med[i].c.kind == k && run->med[i].c.size == size)
			return &run->med[i];
	return NULL;
}

/* The raw figure each external measurement is compared with. */
static double
ext_ratio(const struct lk_run *run, enum lk_ext e)
{
	const struct lk_ext_result *x = &run->ext_med[e];
	const struct lk_result *raw;
	uint32_t s = run->o->lat_size;

	switch (e) {
	case LK_EXT_SEND_LAT:
		raw = find_case(run, LK_RAW_PP, LK_FRAME(s));
		return raw != NULL ? x->typ / raw->p50 : NAN;
	case LK_EXT_UCX_LAT:
		raw = find_case(run, LK_RAW_PP, LK_FRAME(LK_EXT_HDR + s));
		return raw != NULL ? x->typ / raw->p50 : NAN;
	case LK_EXT_SEND_BW:
	case LK_EXT_UCX_BW:
		raw = find_case(run, LK_RAW_STREAM, LK_FRAME(s));
		return raw != NULL ? x->rate / raw->rate : NAN;
	default:
		raw = find_case(run, LK_RAW_STREAM, LK_FRAME(LK_FULL_PAYLOAD));
		return raw != NULL ? x->mbps / raw->mbps : NAN;
	}
}

/* ---- output ---- */

static const char *
link_name(const struct lk_run *run)
{
	return run->memif ? "memif" : "the ports given";
}

static void
fmt(char *cell, double v, const char *f)
{
	if (isfinite(v))
		snprintf(cell, PERF_CELL_LEN, f, v);
	else
		snprintf(cell, PERF_CELL_LEN, "-");
}


/*
 * The inline helper thread's share of each side's core while the verbs cases ran: its
 * highest median over the cases, and that case. It runs on the polling core (each
 * side is pinned whole), so what it takes the poll loop loses.
 */
static void
helper_line(const struct lk_run *run)
{
	double top[2] = { NAN, NAN };
	unsigned int at[2] = { 0, 0 };

	for (unsigned int i = 0; i < run->nb_cases; i++)
		for (unsigned int s = 0; s < 2; s++) {
			double v = run->med[i].helper_pct[s];

			if (isfinite(v) && !(v <= top[s])) {
				top[s] = v;
				at[s] = i;
			}
		}
	if (!isfinite(top[0]) && !isfinite(top[1]))
		return;
	printf("\ninline helper thread on its side's core while a verbs case ran (the highest "
	       "case's median):\n");
	for (unsigned int s = 0; s < 2; s++)
		if (isfinite(top[s]))
			printf("  side %c: %.3f %% of the case's time (%s, %u bytes)\n", 'A' + s,
			       top[s], lk_names[run->med[at[s]].c.kind], run->med[at[s]].c.size);
}

static void
print_table(const struct lk_run *run)
{
	static const struct perf_table_col cols[] = {
		{ "case", 18 }, { "bytes", 8 }, { "p50 us", 8 }, { "p99 us", 8 },
		{ "p99.9 us", 8 }, { "max us", 8 }, { "M msg/s", 8 }, { "MB/s", 9 },
		{ "p50 x raw", 9 }, { "p99.9 x raw", 11 }, { "of raw", 7 },
	};
	const unsigned int nc = sizeof(cols) / sizeof(cols[0]);
	char cells[sizeof(cols) / sizeof(cols[0])][PERF_CELL_LEN];
	const struct lk_opts *o = run->o;
	double r50, r999, rr;

	printf("dpv-perf link: two processes over %s, side A (%smeasures) on core %u, side B "
	       "on core %u\n", link_name(run), run->memif ? "the memif server, " : "",
	       o->core[0], o->core[1]);
	printf("  each process pinned to its core, its EAL control threads too; progress %s; "
	       "inline helper after %u us idle (0: off; off during raw cases); %s\n",
	       o->progress, o->idle_us, o->huge ? "hugepages" : "no hugepages");
	printf("  ports: A %s | %s\n         B %s | %s\n", o->vdev[0], o->raw_vdev[0], o->vdev[1],
	       o->raw_vdev[1]);
	if (o->netns[0] != NULL || o->netns[1] != NULL)
		printf("  network namespaces: A %s, B %s\n", o->netns[0] != NULL ? o->netns[0] : "-",
		       o->netns[1] != NULL ? o->netns[1] : "-");
	if (run->sides_failed != 0)
		printf("  %u rounds failed once and were run again (stderr says why)\n",
		       run->sides_failed);
	printf("  %u rounds, medians; latency one-way (round trip / 2), %u round trips; rate "
	       "%u messages, window %u; bandwidth %" PRIu64 " bytes a case\n\n", o->rounds,
	       o->lat_iters, o->rate_msgs, o->window, o->bw_bytes);
	perf_table_header(stdout, cols, nc);
	for (unsigned int i = 0; i < run->nb_cases; i++) {
		const struct lk_result *m = &run->med[i];
		bool lat = is_lat(m->c.kind);

		ratios(run, m, &r50, &r999, &rr);
		snprintf(cells[0], PERF_CELL_LEN, "%s", lk_names[m->c.kind]);
		snprintf(cells[1], PERF_CELL_LEN, "%u%s", m->c.size,
			 m->c.kind == LK_RAW_PP || m->c.kind == LK_RAW_STREAM ? "f" : "");
		fmt(cells[2], lat ? m->p50 : NAN, "%.2f");
		fmt(cells[3], lat ? m->p99 : NAN, "%.2f");
		fmt(cells[4], lat ? m->p999 : NAN, "%.2f");
		fmt(cells[5], lat ? m->max : NAN, "%.1f");
		fmt(cells[6], lat ? NAN : m->rate / 1e6, "%.3f");
		fmt(cells[7], lat ? NAN : m->mbps, "%.1f");
		fmt(cells[8], r50, "%.2fx");
		fmt(cells[9], r999, "%.2fx");
		fmt(cells[10], rr, "%.3f");
		perf_table_row(stdout, cols, nc, cells);
	}
	for (unsigned int e = 0; e < LK_NB_EXT; e++) {
		const struct lk_ext_result *x = &run->ext_med[e];
		bool lat = e == LK_EXT_SEND_LAT || e == LK_EXT_UCX_LAT;
		double ratio = ext_ratio(run, e);

		if (!x->ran)
			continue;
		snprintf(cells[0], PERF_CELL_LEN, "%s%s", lk_ext_keys[e],
			 run->ext_failed[e] != 0 ? " (!)" : "");
		snprintf(cells[1], PERF_CELL_LEN, "%u", e == LK_EXT_WRITE_BW ? 1048576u :
			 o->lat_size);
		/* perftest's and UCX's typical latency stands in the p50 column. */
		fmt(cells[2], lat ? x->typ : NAN, "%.2f");
		fmt(cells[3], lat ? x->p99 : NAN, "%.2f");
		fmt(cells[4], lat ? x->p999 : NAN, "%.2f");
		fmt(cells[5], lat ? x->max : NAN, "%.1f");
		fmt(cells[6], lat ? NAN : x->rate / 1e6, "%.3f");
		fmt(cells[7], lat ? NAN : x->mbps, "%.1f");
		fmt(cells[8], lat ? ratio : NAN, "%.2fx");
		fmt(cells[9], NAN, "");
		fmt(cells[10], lat ? NAN : ratio, "%.3f");
		perf_table_row(stdout, cols, nc, cells);
		if (e == LK_EXT_UCX_LAT)
			printf("  (ucx tag_lat average %.2f us: %.2fx its typical)\n", x->avg,
			       x->avg / x->typ);
	}
	helper_line(run);
	printf("\nbytes: the payload, or (f) the frame's length; raw frames are sized as the "
	       "verbs case's first packet (lat, rate) or as full 1024-byte RoCE packets (bw).\n"
	       "ib_send_lat and tag_lat: typical latency in the p50 column; (!): the program "
	       "failed at least once (stderr says how often).\n");
}

static void
json_lat(struct perf_json *j, const struct lk_result *m, bool cdf)
{
	perf_json_double(j, "p50_us", m->p50);
	perf_json_double(j, "p99_us", m->p99);
	perf_json_double(j, "p999_us", m->p999);
	perf_json_double(j, "max_us", m->max);
	perf_json_double(j, "min_us", m->min);
	if (!cdf)
		return;
	perf_json_array_begin(j, "cdf_us");
	for (unsigned int q = 0; q < LK_CDF_N; q++)
		perf_json_double(j, NULL, m->cdf[q]);
	perf_json_array_end(j);
}

static void
write_json(const struct lk_run *run, FILE *f)
{
	const struct lk_opts *o = run->o;
	struct perf_json j;
	double r50, r999, rr;

	perf_json_init(&j, f);
	perf_json_object_begin(&j, NULL);
	perf_json_str(&j, "benchmark", "link");
	perf_json_object_begin(&j, "config");
	perf_json_str(&j, "link", run->memif ? "memif" : "given");
	perf_json_str(&j, "port_a", o->vdev[0]);
	perf_json_str(&j, "port_b", o->vdev[1]);
	perf_json_str(&j, "raw_port_a", o->raw_vdev[0]);
	perf_json_str(&j, "raw_port_b", o->raw_vdev[1]);
	perf_json_u64(&j, "core_a", o->core[0]);
	perf_json_u64(&j, "core_b", o->core[1]);
	perf_json_str(&j, "progress", o->progress);
	perf_json_u64(&j, "inline_idle_us", o->idle_us);
	perf_json_bool(&j, "hugepages", o->huge);
	perf_json_u64(&j, "rounds", o->rounds);
	perf_json_u64(&j, "lat_iters", o->lat_iters);
	perf_json_u64(&j, "lat_size", o->lat_size);
	perf_json_u64(&j, "rate_msgs", o->rate_msgs);
	perf_json_u64(&j, "window", o->window);
	perf_json_u64(&j, "bw_bytes", o->bw_bytes);
	perf_json_u64(&j, "rounds_run_twice", run->sides_failed);
	perf_json_object_end(&j);
	perf_json_array_begin(&j, "cdf_quantiles");
	for (unsigned int q = 0; q < LK_CDF_N; q++)
		perf_json_double(&j, NULL, lk_cdf_q[q]);
	perf_json_array_end(&j);
	perf_json_array_begin(&j, "cases");
	for (unsigned int i = 0; i < run->nb_cases; i++) {
		const struct lk_result *m = &run->med[i];

		perf_json_object_begin(&j, NULL);
		perf_json_str(&j, "kind", lk_keys[m->c.kind]);
		perf_json_u64(&j, m->c.kind == LK_RAW_PP || m->c.kind == LK_RAW_STREAM ?
			      "frame_bytes" : "bytes", m->c.size);
		perf_json_u64(&j, "count", m->c.count);
		if (is_lat(m->c.kind)) {
			json_lat(&j, m, true);
		} else {
			perf_json_u64(&j, "arrived", m->done);
			perf_json_double(&j, "rate_per_s", m->rate);
			perf_json_double(&j, "mbps", m->mbps);
		}
		if (isfinite(m->helper_pct[0]))
			perf_json_double(&j, "helper_pct_a", m->helper_pct[0]);
		if (isfinite(m->helper_pct[1]))
			perf_json_double(&j, "helper_pct_b", m->helper_pct[1]);
		ratios(run, m, &r50, &r999, &rr);
		if (is_lat(m->c.kind) && m->c.kind != LK_RAW_PP) {
			perf_json_double(&j, "p50_x_raw", r50);
			perf_json_double(&j, "p999_x_raw", r999);
		} else if (isfinite(rr)) {
			perf_json_double(&j, "of_raw", rr);
		}
		perf_json_array_begin(&j, "rounds");
		for (unsigned int r = 0; r < o->rounds; r++) {
			const struct lk_result *x = &run->res[r][i];

			perf_json_object_begin(&j, NULL);
			if (is_lat(m->c.kind))
				json_lat(&j, x, false);
			else {
				perf_json_double(&j, "rate_per_s", x->rate);
				perf_json_double(&j, "mbps", x->mbps);
			}
			perf_json_object_end(&j);
		}
		perf_json_array_end(&j);
		perf_json_object_end(&j);
	}
	perf_json_array_end(&j);
	perf_json_array_begin(&j, "external");
	for (unsigned int e = 0; e < LK_NB_EXT; e++) {
		const struct lk_ext_result *x = &run->ext_med[e];

		if (!x->ran)
			continue;
		perf_json_object_begin(&j, NULL);
		perf_json_str(&j, "program", lk_ext_keys[e]);
		perf_json_u64(&j, "failures", run->ext_failed[e]);
		perf_json_u64(&j, "bytes", e == LK_EXT_WRITE_BW ? 1048576u : o->lat_size);
		if (e == LK_EXT_SEND_LAT || e == LK_EXT_UCX_LAT) {
			perf_json_double(&j, "typical_us", x->typ);
			perf_json_double(&j, "avg_us", x->avg);
			perf_json_double(&j, "p99_us", x->p99);
			perf_json_double(&j, "p999_us", x->p999);
			perf_json_double(&j, "max_us", x->max);
			perf_json_double(&j, "typical_x_raw", ext_ratio(run, e));
		} else {
			perf_json_double(&j, "rate_per_s", x->rate);
			perf_json_double(&j, "mbps", x->mbps);
			perf_json_double(&j, "of_raw", ext_ratio(run, e));
		}
		perf_json_object_end(&j);
	}
	perf_json_array_end(&j);
	perf_json_object_end(&j);
	perf_json_finish(&j);
}

/* gnuplot's data and script for the two plots in @p dir, then gnuplot itself. */
static int
write_plots(const struct lk_run *run)
{
	const struct lk_opts *o = run->o;
	const char *dir = o->plot_dir;
	char path[512], gp[512], prog[256];
	const struct lk_result *raw;
	FILE *f;
	pid_t pid;
	int n = 0;
	unsigned int i, q;

	snprintf(path, sizeof(path), "%s/link-lat.dat", dir);
	f = fopen(path, "w");
	if (f == NULL)
		goto fail;
	fprintf(f, "# nines (-log10(1 - q)), quantile, then one-way us of each case\n# nines q");
	for (i = 0; i < run->nb_cases; i++)
		if (is_lat(run->med[i].c.kind))
			fprintf(f, " %s/%u", lk_keys[run->med[i].c.kind], run->med[i].c.size);
	fputc('\n', f);
	for (q = 0; q < LK_CDF_N; q++) {
		double nines = lk_cdf_q[q] < 1 ? -log10(1 - lk_cdf_q[q]) : 5.5;

		fprintf(f, "%.4f %.5f", nines, lk_cdf_q[q]);
		for (i = 0; i < run->nb_cases; i++)
			if (is_lat(run->med[i].c.kind))
				fprintf(f, " %.4f", run->med[i].cdf[q]);
		fputc('\n', f);
	}
	fclose(f);
	snprintf(path, sizeof(path), "%s/link-bw.dat", dir);
	f = fopen(path, "w");
	if (f == NULL)
		goto fail;
	fprintf(f, "# bytes write_MBps send_MBps rndv_MBps read_MBps\n");
	for (i = 0; i < o->nb_sizes; i++) {
		const struct lk_result *w = find_case(run, LK_WRITE_BW, o->sizes[i]);
		const struct lk_result *s = find_case(run, LK_SEND_BW, o->sizes[i]);
		const struct lk_result *r = find_case(run, LK_RNDV_BW, o->sizes[i]);
		const struct lk_result *rd = find_case(run, LK_READ_BW, o->sizes[i]);

		if (w != NULL && s != NULL && r != NULL && rd != NULL)
			fprintf(f, "%u %.2f %.2f %.2f %.2f\n", o->sizes[i], w->mbps, s->mbps,
				r->mbps, rd->mbps);
	}
	fclose(f);
	raw = find_case(run, LK_RAW_STREAM, LK_FRAME(LK_FULL_PAYLOAD));
	snprintf(gp, sizeof(gp), "%s/link.gp", dir);
	f = fopen(gp, "w");
	if (f == NULL)
		goto fail;
	fprintf(f, "# Made by dpv-perf link (--plots): gnuplot link.gp in this directory.\n"
		"set terminal svg size 900,560 dynamic font 'sans,13'\n"
		"set output 'link-lat.svg'\n"
		"set title 'One-way latency, two processes over %s (median of %u rounds)'\n"
		"set xlabel 'one-way latency (us)'\nset logscale x\nset grid\n"
		"set ylabel 'fraction of round trips at or below'\n"
		"set ytics ('0' 0, '50%%%%' 0.301, '90%%%%' 1, '99%%%%' 2, '99.9%%%%' 3, '99.99%%%%' 4, "
		"'max' 5.5)\nset yrange [0:5.7]\nset key bottom right\n", link_name(run),
		o->rounds);
	fprintf(f, "plot ");
	for (i = 0, n = 0; i < run->nb_cases; i++) {
		const struct lk_result *m = &run->med[i];

		if (!is_lat(m->c.kind))
			continue;
		fprintf(f, "%s'link-lat.dat' using %d:1 with linespoints title '%s %u %s'",
			n > 0 ? ", \\\n     " : "", 3 + n, lk_names[m->c.kind], m->c.size,
			m->c.kind == LK_RAW_PP ? "B frame" : "B");
		n++;
	}
	fprintf(f, "\n\nset output 'link-bw.svg'\nunset logscale\nset logscale x 2\n"
		"set title 'Bandwidth, two processes over %s (median of %u rounds)'\n"
		"set xlabel 'message size (bytes)'\nset ylabel 'MB/s (10^6 bytes)'\n"
		"set ytics auto\nset yrange [0:*]\nset key top left\n"
		"set format x '%%.0b %%BB'\n"
		"plot 'link-bw.dat' using 1:2 with linespoints title 'RC WRITE', \\\n"
		"     'link-bw.dat' using 1:3 with linespoints title 'RC SEND', \\\n"
		"     'link-bw.dat' using 1:5 with linespoints title 'RC READ', \\\n"
		"     'link-bw.dat' using 1:4 with linespoints title 'rendezvous (TM-SRQ)'",
		link_name(run), o->rounds);
	if (raw != NULL)
		fprintf(f, ", \\\n     %.2f with lines dashtype 2 title 'raw DPDK, 1082-byte "
			"frames (1024-byte payloads)'", raw->mbps);
	fprintf(f, "\n");
	fclose(f);
	if (which("gnuplot", prog, sizeof(prog)) == NULL) {
		perf_error("%s: gnuplot is not installed (Debian: gnuplot-nox): %s holds the data "
			   "and script", LK_CMD, dir);
		return -1;
	}
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		if (chdir(dir) != 0)
			_exit(126);
		execl(prog, prog, "link.gp", (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || wait_child(pid, 60) != 0) {
		perf_error("%s: gnuplot failed on %s", LK_CMD, gp);
		return -1;
	}
	return 0;
fail:
	perf_error("%s: cannot write %s: %s", LK_CMD, path, strerror(errno));
	return -1;
}

/* ---- options ---- */

enum {
	OPT_ROUNDS = 256, OPT_ITERS, OPT_WARMUP, OPT_SIZE, OPT_MSGS, OPT_WINDOW, OPT_BW_BYTES,
	OPT_SIZES, OPT_CORES, OPT_PORT_A, OPT_PORT_B, OPT_RAW_A, OPT_RAW_B, OPT_PROGRESS,
	OPT_IDLE, OPT_HUGE, OPT_NO_EXT, OPT_DROPIN, OPT_JSON, OPT_JSON_FILE, OPT_PLOTS,
	OPT_QUICK, OPT_NETNS_A, OPT_NETNS_B,
};

static const struct option lk_longopts[] = {
	{ "rounds", required_argument, NULL, OPT_ROUNDS },
	{ "iters", required_argument, NULL, OPT_ITERS },
	{ "warmup", required_argument, NULL, OPT_WARMUP },
	{ "size", required_argument, NULL, OPT_SIZE },
	{ "msgs", required_argument, NULL, OPT_MSGS },
	{ "window", required_argument, NULL, OPT_WINDOW },
	{ "bw-bytes", required_argument, NULL, OPT_BW_BYTES },
	{ "sizes", required_argument, NULL, OPT_SIZES },
	{ "cores", required_argument, NULL, OPT_CORES },
	{ "port-a", required_argument, NULL, OPT_PORT_A },
	{ "port-b", required_argument, NULL, OPT_PORT_B },
	{ "raw-port-a", required_argument, NULL, OPT_RAW_A },
	{ "raw-port-b", required_argument, NULL, OPT_RAW_B },
	{ "progress", required_argument, NULL, OPT_PROGRESS },
	{ "idle-us", required_argument, NULL, OPT_IDLE },
	{ "huge", no_argument, NULL, OPT_HUGE },
	{ "no-ext", no_argument, NULL, OPT_NO_EXT },
	{ "dropin", required_argument, NULL, OPT_DROPIN },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "json-file", required_argument, NULL, OPT_JSON_FILE },
	{ "plots", required_argument, NULL, OPT_PLOTS },
	{ "quick", no_argument, NULL, OPT_QUICK },
	{ "netns-a", required_argument, NULL, OPT_NETNS_A },
	{ "netns-b", required_argument, NULL, OPT_NETNS_B },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static void
lk_help(void)
{
	printf("usage: dpv-perf link [OPTIONS]\n\n"
	       "Two processes, each pinned to a core of its own, joined by a link (memif unless\n"
	       "ports are given): in interleaved rounds, raw DPDK frames (rte_eth_tx_burst /\n"
	       "rte_eth_rx_burst) on the link against verbs on it (RC SEND, RC WRITE and tagged\n"
	       "eager latency; 8-byte message rate; WRITE, READ, SEND and rendezvous\n"
	       "bandwidth), and\n"
	       "where installed perftest (ib_send_lat, ib_send_bw, ib_write_bw) and UCX's\n"
	       "ucx_perftest (tag_lat, tag_bw over rc_verbs) on the drop-in. Medians of the\n"
	       "rounds and their ratios to raw, as a table, JSON and SVG plots.\n\n"
	       "  --rounds N       rounds (default 5)\n"
	       "  --iters N        latency round trips a case (default 100000)\n"
	       "  --warmup N       round trips before those measured (default 1000)\n"
	       "  --size N         latency and message-rate payload, 8 to 1000 bytes (default 8)\n"
	       "  --msgs N         messages (and raw frames) of the rate cases (default 1000000)\n"
	       "  --window N       SENDs / WRITEs / READs in flight (perftest's tx depth;\n"
	       "                   default 128; a QP reads 16 at a time)\n"
	       "  --bw-bytes N     bytes each bandwidth case moves (default 268435456)\n"
	       "  --sizes LIST     bandwidth message sizes (default 4096,16384,65536,262144,\n"
	       "                   1048576,4194304)\n"
	       "  --cores A,B      the two sides' cores (default 0,1)\n"
	       "  --port-a DEVARGS, --port-b DEVARGS\n"
	       "                   the verbs device's port of each side (EAL --vdev), and\n"
	       "  --raw-port-a DEVARGS, --raw-port-b DEVARGS\n"
	       "                   the raw port of each side on the same link; all four or none\n"
	       "                   (default: net_memif0 and net_memif1 (id 1) on one socket)\n"
	       "  --netns-a NAME, --netns-b NAME\n"
	       "                   run side A, B in that network namespace (ip netns): af_packet\n"
	       "                   ports on both ends of a veth pair need it (perftest and UCX\n"
	       "                   are not run then)\n"
	       "  --progress MODE  inline (the default); lcore:N: each side's device on an EAL\n"
	       "                   worker lcore on core N; service:N: each side's device an\n"
	       "                   rte_service on a service lcore on core N (EAL -S N)\n"
	       "                   (dpv_verbs_set_progress)\n"
	       "  --idle-us N      the inline helper's idle time, 0 off (default 500)\n"
	       "  --huge           hugepages (--in-memory) instead of --no-huge\n"
	       "  --no-ext         no perftest or UCX runs\n"
	       "  --dropin DIR     the drop-in libibverbs.so.1 for them (default\n"
	       "                   $DPV_DROPIN_LIBDIR, else the build's lib/verbs)\n"
	       "  --json           JSON on stdout instead of the table\n"
	       "  --json-file F    JSON into F as well\n"
	       "  --plots DIR      link-lat.svg, link-bw.svg (and their data, link.gp) in DIR\n"
	       "  --quick          tiny counts, one round, no perftest or UCX: a smoke run\n\n"
	       "Needs root for UCX (a private /dev/infiniband); exit status 0 measured, 1 a wrong\n"
	       "result or a side that failed, 2 a bad command line.\n");
}

static int
lk_opt(void *ctx, int c, const char *arg)
{
	struct lk_opts *o = ctx;
	uint32_t v[2];
	uint64_t u;
	int n;

	switch (c) {
	case OPT_ROUNDS:
		if (perf_parse_u32(arg, 1, LK_MAX_ROUNDS, &o->rounds) != 0)
			return perf_usage_error(LK_CMD, "--rounds: 1 to %u", LK_MAX_ROUNDS);
		break;
	case OPT_ITERS:
		if (perf_parse_u32(arg, 10, 100000000, &o->lat_iters) != 0)
			return perf_usage_error(LK_CMD, "--iters: 10 to 100000000");
		break;
	case OPT_WARMUP:
		if (perf_parse_u32(arg, 0, 10000000, &o->warmup) != 0)
			return perf_usage_error(LK_CMD, "--warmup: 0 to 10000000");
		break;
	case OPT_SIZE:
		if (perf_parse_u32(arg, 8, 1000, &o->lat_size) != 0)
			return perf_usage_error(LK_CMD, "--size: 8 to 1000");
		break;
	case OPT_MSGS:
		if (perf_parse_u32(arg, 100, 1000000000, &o->rate_msgs) != 0)
			return perf_usage_error(LK_CMD, "--msgs: 100 to 1000000000");
		break;
	case OPT_WINDOW:
		if (perf_parse_u32(arg, 1, 1024, &o->window) != 0)
			return perf_usage_error(LK_CMD, "--window: 1 to 1024");
		break;
	case OPT_BW_BYTES:
		if (perf_parse_u64(arg, &u) != 0 || u < 65536 || u > (UINT64_C(1) << 40))
			return perf_usage_error(LK_CMD, "--bw-bytes: 65536 to 2^40");
		o->bw_bytes = u;
		break;
	case OPT_SIZES:
		n = perf_parse_u32_list(arg, LK_MIN_BW_SIZE, LK_MAX_BW_SIZE, o->sizes,
					LK_MAX_SIZES);
		if (n < 1)
			return perf_usage_error(LK_CMD, "--sizes: up to %u sizes of %u to %u bytes",
						LK_MAX_SIZES, LK_MIN_BW_SIZE, LK_MAX_BW_SIZE);
		o->nb_sizes = (unsigned int)n;
		break;
	case OPT_CORES:
		if (perf_parse_u32_list(arg, 0, CPU_SETSIZE - 1, v, 2) != 2)
			return perf_usage_error(LK_CMD, "--cores: two core numbers, A,B");
		o->core[0] = v[0];
		o->core[1] = v[1];
		break;
	case OPT_PORT_A:
	case OPT_PORT_B:
		o->vdev[c - OPT_PORT_A] = (char *)(uintptr_t)arg;
		break;
	case OPT_RAW_A:
	case OPT_RAW_B:
		o->raw_vdev[c - OPT_RAW_A] = (char *)(uintptr_t)arg;
		break;
	case OPT_PROGRESS:
		if (strcmp(arg, "inline") == 0) {
			o->progress_cpu = -1;
		} else if ((strncmp(arg, "lcore:", 6) == 0 &&
			    perf_parse_u32(arg + 6, 0, CPU_SETSIZE - 1, &v[0]) == 0) ||
			   (strncmp(arg, "service:", 8) == 0 &&
			    perf_parse_u32(arg + 8, 0, CPU_SETSIZE - 1, &v[0]) == 0)) {
			o->progress_cpu = (int)v[0];
			o->service = arg[0] == 's';
		} else {
			return perf_usage_error(LK_CMD, "--progress: inline, lcore:N or service:N");
		}
		o->progress = arg;
		break;
	case OPT_IDLE:
		if (perf_parse_u32(arg, 0, 1000000, &o->idle_us) != 0)
			return perf_usage_error(LK_CMD, "--idle-us: 0 to 1000000");
		break;
	case OPT_HUGE:
		o->huge = true;
		break;
	case OPT_NO_EXT:
		o->ext = false;
		break;
	case OPT_DROPIN:
		o->dropin = arg;
		break;
	case OPT_JSON:
		o->json = true;
		break;
	case OPT_JSON_FILE:
		o->json_file = arg;
		break;
	case OPT_PLOTS:
		o->plot_dir = arg;
		break;
	case OPT_QUICK:
		o->quick = true;
		break;
	case OPT_NETNS_A:
	case OPT_NETNS_B:
		o->netns[c - OPT_NETNS_A] = arg;
		break;
	default:
		return perf_usage_error(LK_CMD, "unknown option");
	}
	return 0;
}

/* The drop-in beside this build: <build>/lib/verbs for <build>/app/dpv-perf/dpv-perf. */
static const char *
default_dropin(char *buf, size_t len)
{
	const char *env = getenv("DPV_DROPIN_LIBDIR");
	char exe[400];
	ssize_t n;
	char *slash;

	if (env != NULL && env[0] != '\0')
		return env;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return NULL;
	exe[n] = '\0';
	for (int up = 0; up < 3; up++) {
		slash = strrchr(exe, '/');
		if (slash == NULL)
			return NULL;
		*slash = '\0';
	}
	if ((size_t)snprintf(buf, len, "%s/lib/verbs", exe) >= len)
		return NULL;
	snprintf(exe, sizeof(exe), "%s/libibverbs.so.1", buf);
	return access(exe, R_OK) == 0 ? buf : NULL;
}

static int
link_run(int argc, char **argv)
{
	static struct lk_run run;
	static struct lk_opts o = {
		.rounds = 5, .lat_iters = 100000, .warmup = 1000, .lat_size = 8,
		.rate_msgs = 1000000, .window = 128, .bw_bytes = UINT64_C(256) << 20,
		.sizes = { 4096, 16384, 65536, 262144, 1048576, 4194304 }, .nb_sizes = 6,
		.core = { 0, 1 }, .progress = "inline", .progress_cpu = -1, .idle_us = 500, .ext = true,
	};
	static char vdev[4][512], dropin[256];
	int ret, status = PERF_EXIT_OK;
	unsigned int given = 0;

	ret = perf_getopts(LK_CMD, argc, argv, lk_longopts, lk_help, lk_opt, &o);
	if (ret != 0)
		return ret < 0 ? PERF_EXIT_OK : ret;
	for (unsigned int i = 0; i < 2; i++)
		given += (o.vdev[i] != NULL) + (o.raw_vdev[i] != NULL);
	if (given != 0 && given != 4)
		return perf_usage_error(LK_CMD, "give all four of --port-a, --port-b, "
					"--raw-port-a, --raw-port-b, or none");
	if (o.quick) {
		o.rounds = 1;
		o.lat_iters = 200;
		o.warmup = 10;
		o.rate_msgs = 2000;
		o.bw_bytes = UINT64_C(1) << 20;
		o.sizes[0] = 4096;
		o.sizes[1] = 262144;
		o.nb_sizes = 2;
		o.ext = false;
	}
	snprintf(o.tmpdir, sizeof(o.tmpdir), "/tmp/dpv-link.XXXXXX");
	if (mkdtemp(o.tmpdir) == NULL) {
		perf_error("%s: mkdtemp: %s", LK_CMD, strerror(errno));
		return PERF_EXIT_FAIL;
	}
	snprintf(o.prefix, sizeof(o.prefix), "dpvlink-%d", (int)getpid());
	run.memif = given == 0;
	if (run.memif) {
		static const char *const fmt_vdev = "net_memif%u,role=%s,id=%u,socket=%s/memif.sock,"
						    "socket-abstract=no";

		for (unsigned int i = 0; i < 4; i++)
			snprintf(vdev[i], sizeof(vdev[i]), fmt_vdev, i / 2, i % 2 ? "client" : "server",
				 i / 2, o.tmpdir);
		o.vdev[0] = vdev[0];
		o.vdev[1] = vdev[1];
		o.raw_vdev[0] = vdev[2];
		o.raw_vdev[1] = vdev[3];
	}
	/* perftest's and UCX's TCP exchange is on localhost, which namespaces do not share. */
	if (o.netns[0] != NULL || o.netns[1] != NULL)
		o.ext = false;
	if (o.dropin == NULL)
		o.dropin = default_dropin(dropin, sizeof(dropin));
	if (o.ext && o.dropin == NULL) {
		perf_error("%s: no drop-in libibverbs.so.1 (--dropin): perftest and UCX skipped",
			   LK_CMD);
		o.ext = false;
	}
	run.o = &o;
	run.nb_cases = lk_plan(&o, run.cases, LK_MAX_CASES);
	run.tcp_port = (uint16_t)(20000 + getpid() % 20000);
	for (unsigned int r = 0; r < o.rounds && status == PERF_EXIT_OK; r++) {
		if (!o.json)
			fprintf(stderr, "dpv-perf link: round %u of %u\n", r + 1, o.rounds);
		if (run_sides(&run, r) != 0) {
			/* Once more, as perftest and UCX are: a round that fails twice ends
			 * the run. */
			perf_error("%s: round %u once more", LK_CMD, r + 1);
			run.sides_failed++;
			if (run_sides(&run, r) != 0) {
				status = PERF_EXIT_FAIL;
				break;
			}
		}
		for (unsigned int e = 0; o.ext && e < LK_NB_EXT; e++) {
			struct lk_ext_result *x = &run.ext[r][e];

			if (!o.json)
				fprintf(stderr, "dpv-perf link: round %u: %s\n", r + 1,
					lk_ext_keys[e]);
			x->typ = x->avg = x->p99 = x->p999 = x->max = x->rate = x->mbps = NAN;
			ret = ext_run(&run, (enum lk_ext)e, r, 0, x);
			if (ret < 0) {
				/* Once more: a loaded machine can keep a side off its core
				 * past a retry timeout. */
				perf_error("%s: %s: once more", LK_CMD, lk_ext_keys[e]);
				run.ext_failed[e]++;
				ret = ext_run(&run, (enum lk_ext)e, r, 1, x);
				if (ret < 0) {
					run.ext_failed[e]++;
					run.ext_lost[e]++;
				}
			}
			if (ret == 0)
				run.have_ext[e] = true;
		}
	}
	if (status == PERF_EXIT_OK) {
		medians(&run);
		if (o.json)
			write_json(&run, stdout);
		else
			print_table(&run);
		if (o.json_file != NULL) {
			FILE *f = fopen(o.json_file, "w");

			if (f == NULL) {
				perf_error("%s: %s: %s", LK_CMD, o.json_file, strerror(errno));
				status = PERF_EXIT_FAIL;
			} else {
				write_json(&run, f);
				fclose(f);
			}
		}
		if (o.plot_dir != NULL && write_plots(&run) != 0)
			status = PERF_EXIT_FAIL;
		/* A program that failed is a result too: its medians are of the runs that
		 * finished, the run says so on stderr, and a round left without its
		 * figure fails the run. */
		for (unsigned int e = 0; e < LK_NB_EXT; e++) {
			if (run.ext_failed[e] == 0)
				continue;
			perf_error("%s: %s failed %u times, %u rounds without a result (the outputs "
				   "of its last failure are in %s)", LK_CMD, lk_ext_keys[e],
				   run.ext_failed[e], run.ext_lost[e], o.tmpdir);
			if (run.ext_lost[e] != 0)
				status = PERF_EXIT_FAIL;
		}
	}
	{
		char sock[128];

		snprintf(sock, sizeof(sock), "%s/memif.sock", o.tmpdir);
		(void)unlink(sock);
		if (rmdir(o.tmpdir) != 0 && status == PERF_EXIT_OK)
			perf_error("%s: %s left behind (external programs' outputs)", LK_CMD,
				   o.tmpdir);
	}
	return status;
}

const struct perf_cmd perf_cmd_link = {
	.name = LK_CMD,
	.summary = "two processes on a link: raw DPDK frames vs verbs, perftest, UCX",
	.run = link_run,
};
