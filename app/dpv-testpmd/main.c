/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpv-testpmd: the console. `dpv-testpmd [EAL args] -- [-i] [--cmdline-file FILE]
 * [--auto] [--ip A,B,...]`. It starts EAL itself, opens every DPDK port as a verbs
 * device (dpv_verbs_open_port()) and, when EAL has no port, makes the embedded
 * default: an in-process ring pair whose two devices hold a TM SRQ and a connected RC
 * QP pair, ready to type. Commands come from the prompt (librte_cmdline), a script,
 * or piped stdin (doc/guides/testpmd.md).
 *
 * This file is its start-up: the arguments, EAL, the devices and the embedded default,
 * then the demo, the script, the prompt or stdin. What the command groups share is in
 * tp_util.c.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>

#include <cmdline.h>
#include <cmdline_socket.h>
#include <rte_eal.h>
#include <rte_ethdev.h>

#include "dpv_verbs.h"
#include "testpmd.h"

/*
 * EAL of the embedded default: one lcore, no PCI, no hugepages needed, telemetry on,
 * and a file prefix of its own (main() appends the pid), so that two consoles, or a
 * console beside another DPDK program, never share a runtime directory or a
 * telemetry socket.
 */
static const char default_eal[] = "-l 0 --no-pci --no-huge --no-shconf -m 512 "
				  "--log-level=lib.eal:error";
static const char default_ipv4[] = "127.0.30.1,127.0.30.2";

/* The demo of --auto: each line as typed at the prompt. */
static const char *const demo[] = {
	"# three tags, added in order; each buffer 4096 bytes",
	"tag add 1 0x11 signaled",
	"tag add 1 0x12 signaled",
	"tag add 1 0x13 signaled",
	"poll cq 2",
	"show tags 1",
	"# tagged messages in the reverse order: each lands in its own tag's buffer",
	"send 1 size 100 tag 0x13 eager",
	"send 1 size 200 tag 0x12 eager",
	"send 1 size 300 tag 0x11 eager",
	"poll cq 2",
	"show tags 1",
	"# a tag nobody posted: unexpected, into an ordinary SRQ receive; U becomes 1",
	"send 1 size 50 tag 0x99 eager",
	"poll cq 2",
	"show unexpected 1",
	"# an ADD now waits for software to catch up (S < U): not eligible yet",
	"tag add 1 0x14 signaled",
	"poll cq 2",
	"show tags 1",
	"show phase 1",
	"# software has processed the unexpected message: SYNC with S = 1",
	"tag sync 1 1",
	"poll cq 2",
	"show phase 1",
	"show tags 1",
	"show counters srq 1",
	"quit",
};

static void usage(FILE *f)
{
	fprintf(f, "usage: dpv-testpmd [EAL args] -- [-i] [--cmdline-file FILE] [--auto] "
		   "[--ip A,B,...]\n"
		   "  -i                   a prompt (the default when stdin is a terminal)\n"
		   "  --cmdline-file FILE  run the commands of FILE first (then quit, unless -i)\n"
		   "  --auto               run a short tag-matching demo and exit\n"
		   "  --ip A,B,...         IPv4 addresses of the DPDK ports, in port order\n"
		   "With no EAL arguments: %s\n"
		   "With no DPDK port: a ring pair (dpv0 %s dpv1) holding a TM SRQ and a connected\n"
		   "RC QP pair. Type `help` at the prompt; doc/guides/testpmd.md has a tour.\n",
		default_eal, "<->");
}

static bool is_app_opt(const char *s)
{
	return strcmp(s, "-i") == 0 || strcmp(s, "--interactive") == 0 ||
	       strcmp(s, "--cmdline-file") == 0 || strcmp(s, "--auto") == 0 ||
	       strcmp(s, "--ip") == 0 || strcmp(s, "-h") == 0 || strcmp(s, "--help") == 0;
}

/* The EAL's arguments: the default's words, with a file prefix of this process. */
static int default_eal_args(char *prog, char ***out)
{
	static char buf[sizeof(default_eal) + 64];
	static char *argv[32];
	char *p, *save = NULL;
	int n = 0;

	snprintf(buf, sizeof(buf), "%s --file-prefix=dpv-testpmd-%ld", default_eal, (long)getpid());
	argv[n++] = prog;
	for (p = strtok_r(buf, " ", &save); p != NULL && n < 31; p = strtok_r(NULL, " ", &save))
		argv[n++] = p;
	argv[n] = NULL;
	*out = argv;
	return n;
}

static int parse_ipv4_list(const char *list, uint32_t *ips, unsigned int max)
{
	char buf[512], *p, *save = NULL;
	unsigned int n = 0;
	struct in_addr a;

	snprintf(buf, sizeof(buf), "%s", list);
	for (p = strtok_r(buf, ",", &save); p != NULL; p = strtok_r(NULL, ",", &save)) {
		if (n == max || inet_pton(AF_INET, p, &a) != 1 || a.s_addr == 0) {
			fprintf(stderr, "dpv-testpmd: --ip: '%s' is not an IPv4 address (or too many)\n", p);
			return -1;
		}
		ips[n++] = ntohl(a.s_addr);
	}
	return (int)n;
}

static int open_devices(const char *ip_list, bool *made_pair)
{
	uint32_t ips[TP_MAX_DEVS];
	uint16_t port, pa, pb;
	int n_ips = 0, ret;

	*made_pair = false;
	if (rte_eth_dev_count_avail() == 0) {
		ret = dpv_verbs_ring_pair("tp", &pa, &pb);
		if (ret != 0) {
			fprintf(stderr, "dpv-testpmd: cannot make the ring pair: %s\n", strerror(ret));
			return -1;
		}
		*made_pair = true;
		if (ip_list == NULL)
			ip_list = default_ipv4;
	}
	if (ip_list != NULL) {
		n_ips = parse_ipv4_list(ip_list, ips, TP_MAX_DEVS);
		if (n_ips < 0)
			return -1;
	}
	RTE_ETH_FOREACH_DEV(port) {
		struct tp_dev *d;

		if (tp.n_devs == TP_MAX_DEVS)
			break;
		d = &tp.dev[tp.n_devs];
		if ((int)tp.n_devs >= n_ips) {
			fprintf(stderr, "dpv-testpmd: DPDK port %u has no address: give one per "
				"port with --ip A,B,...\n", port);
			return -1;
		}
		d->ipv4 = ips[tp.n_devs];
		d->port_id = port;
		d->ctx = dpv_verbs_open_port(port, d->ipv4);
		if (d->ctx == NULL) {
			fprintf(stderr, "dpv-testpmd: cannot open DPDK port %u: %s\n", port,
				strerror(errno));
			return -1;
		}
		snprintf(d->name, sizeof(d->name), "%s", ibv_get_device_name(d->ctx->device));
		if (ibv_query_gid(d->ctx, 1, 0, &d->gid) != 0 ||
		    (d->pd = ibv_alloc_pd(d->ctx)) == NULL ||
		    (d->idle_cq = ibv_create_cq(d->ctx, 1, NULL, NULL, 0)) == NULL) {
			fprintf(stderr, "dpv-testpmd: %s: %s\n", d->name, strerror(errno));
			return -1;
		}
		tp.n_devs++;
	}
	if (tp.n_devs == 0) {
		fprintf(stderr, "dpv-testpmd: no device\n");
		return -1;
	}
	return 0;
}

static void close_devices(void)
{
	for (unsigned int i = 0; i < tp.n_devs; i++) {
		struct tp_dev *d = &tp.dev[i];

		if (d->idle_cq != NULL)
			ibv_destroy_cq(d->idle_cq);
		if (d->pd != NULL)
			ibv_dealloc_pd(d->pd);
		ibv_close_device(d->ctx);
	}
	tp.n_devs = 0;
}

/* The objects of the embedded default, made through the commands a user would type,
 * so that `show objects` and the docs tell the same story. */
static int make_default(void)
{
	static const char *const lines[] = {
		"create pd dpv0", "create pd dpv1",
		"create cq dpv0 size 256", "create cq dpv1 size 256 ex",
		"create srq 2 size 64 tm 2 tags 64 ops 16",
		"create qp 1 rc 1 send 64 recv 16", "create qp 2 rc 2 srq 1 send 16",
		"connect 1 2", "post srq_recv 1 8 4096",
	};

	for (unsigned int i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		tp_run_line(lines[i]);
	}
	/* Each line said what it made; all must be there. */
	return tp.obj[TP_QP][2].used && tp.obj[TP_SRQ][1].used &&
			       tp.obj[TP_SRQ][1].u.srq.bufs != NULL ? 0 : -1;
}

/*
 * The runtime directory EAL made (its telemetry socket): with --no-shconf or
 * --in-memory no other process can join this one's, so the directory is this
 * process's alone and goes with it, rather than one per run piling up.
 */
static void remove_runtime_dir(void)
{
	const char *dir = rte_eal_get_runtime_dir();
	struct dirent *e;
	char path[4096];
	DIR *d;

	if (dir == NULL || (d = opendir(dir)) == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) < sizeof(path))
			(void)unlink(path);
	}
	closedir(d);
	(void)rmdir(dir);
}

static void run_stream(FILE *f, bool echo)
{
	char line[TP_MAX_WORDS * TP_WORD_MAX];

	while (!tp.quit && fgets(line, sizeof(line), f) != NULL) {
		if (echo) {
			line[strcspn(line, "\n")] = '\0';
			tp_out("dpv> %s", line);
		}
		tp_run_line(line);
	}
}

static void run_prompt(void)
{
	struct cmdline *cl = cmdline_stdin_new(tp_cmdline_ctx(), "dpv> ");

	if (cl == NULL) {
		fprintf(stderr, "dpv-testpmd: cannot start the prompt\n");
		return;
	}
	cmdline_interact(cl);
	cmdline_stdin_exit(cl);
	/* Ctrl-D leaves the cursor after the prompt. */
	if (!tp.quit)
		putchar('\n');
}

int main(int argc, char **argv)
{
	const char *script = NULL, *ip_list = NULL;
	bool interactive = false, autodemo = false, made_pair, private_dir = false;
	char **eal_argv = argv, *app_argv[64] = {argv[0]};
	int eal_argc = argc, app_argc = 1, ret, i, dd = -1;
	static const struct option opts[] = {
		{"interactive", no_argument, NULL, 'i'},
		{"cmdline-file", required_argument, NULL, 'f'},
		{"auto", no_argument, NULL, 'a'},
		{"ip", required_argument, NULL, 'p'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};

	/* A line at a time also into a pipe: a program driving the console reads each
	 * answer before it sends the next command, as a person at the prompt does. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (i = 1; i < argc; i++)
		if (strcmp(argv[i], "--") == 0) {
			dd = i;
			break;
		}
	/* The console's own options: after "--", or all of them when the first word is
	 * one (then EAL takes the embedded default's arguments). */
	if (dd >= 0) {
		eal_argc = dd;
		for (i = dd + 1; i < argc && app_argc < 63; i++)
			app_argv[app_argc++] = argv[i];
	} else if (argc == 1 || is_app_opt(argv[1])) {
		eal_argc = default_eal_args(argv[0], &eal_argv);
		for (i = 1; i < argc && app_argc < 63; i++)
			app_argv[app_argc++] = argv[i];
	}
	if ((dd >= 0 && argc - dd > 63) || (dd < 0 && eal_argv != argv && argc > 63)) {
		fprintf(stderr, "dpv-testpmd: too many arguments\n");
		return 2;
	}
	app_argv[app_argc] = NULL;
	optind = 1;
	while ((ret = getopt_long(app_argc, app_argv, "ih", opts, NULL)) != -1) {
		switch (ret) {
		case 'i': interactive = true; break;
		case 'f': script = optarg; break;
		case 'a': autodemo = true; break;
		case 'p': ip_list = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < app_argc) {
		fprintf(stderr, "dpv-testpmd: unexpected argument '%s'\n", app_argv[optind]);
		usage(stderr);
		return 2;
	}
	if (eal_argc == 1 && dd >= 0)
		eal_argc = default_eal_args(argv[0], &eal_argv);
	for (i = 1; i < eal_argc; i++)
		private_dir |= strcmp(eal_argv[i], "--no-shconf") == 0 ||
			       strcmp(eal_argv[i], "--in-memory") == 0;
	if (rte_eal_init(eal_argc, eal_argv) < 0) {
		fprintf(stderr, "dpv-testpmd: EAL did not start (%s); see its message above\n",
			strerror(rte_errno));
		return 1;
	}
	ret = 1;
	if (open_devices(ip_list, &made_pair) != 0)
		goto out;
	tp_out("dpv-testpmd %s: %u device%s", DPV_VERSION, tp.n_devs, tp.n_devs == 1 ? "" : "s");
	if (made_pair) {
		if (make_default() != 0) {
			fprintf(stderr, "dpv-testpmd: the embedded default did not come up\n");
			goto out;
		}
		tp_out("ready: dpv0 <-> dpv1 (a ring pair); qp 1 on dpv0 is connected to qp 2 on "
		       "dpv1, which takes its receives from tag-matching srq 1 (completions on cq 2)");
		tp_out("try:  tag add 1 0x10 signaled");
		tp_out("      send 1 size 64 tag 0x10 eager");
		tp_out("      poll cq 2");
		tp_out("help lists every command; help <group> explains them.");
	}
	tp.interactive = interactive || (script == NULL && !autodemo && isatty(STDIN_FILENO));
	if (autodemo) {
		if (!made_pair) {
			fprintf(stderr, "dpv-testpmd: --auto runs on the embedded default (no DPDK port)\n");
			goto out;
		}
		for (unsigned int k = 0; k < sizeof(demo) / sizeof(demo[0]) && !tp.quit; k++) {
			tp_out("dpv> %s", demo[k]);
			tp_run_line(demo[k]);
		}
		/* The demo is also a check: a step that failed fails the run. */
		if (tp.errors != 0) {
			fprintf(stderr, "dpv-testpmd: --auto: %u step%s failed\n", tp.errors,
				tp.errors == 1 ? "" : "s");
			goto out;
		}
	}
	if (script != NULL && !tp.quit) {
		FILE *f = fopen(script, "r");

		if (f == NULL) {
			fprintf(stderr, "dpv-testpmd: --cmdline-file %s: %s\n", script, strerror(errno));
			goto out;
		}
		run_stream(f, false);
		fclose(f);
		if (!interactive)
			tp.quit = true;
	}
	if (!tp.quit && !autodemo) {
		if (isatty(STDIN_FILENO) && tp.interactive)
			run_prompt();
		else
			/* A pipe or a file: every line until EOF, no prompt to echo. */
			run_stream(stdin, false);
	}
	ret = 0;
out:
	tp_modes_stop();
	tp_capture_stop_all();
	tp_listen_close();
	tp_destroy_all();
	close_devices();
	if (private_dir)
		remove_runtime_dir();
	tp_out("bye");
	return ret;
}
