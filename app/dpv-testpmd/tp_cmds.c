/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The command table: every command's words, help and example, the librte_cmdline
 * instances that give the prompt line editing, history and tab completion, and the
 * dispatch that typed lines, scripts and piped input share.
 *
 * librte_cmdline matches a line against instances of fixed token lists and cannot
 * express optional arguments. Each command is therefore one instance per word count
 * (its name, then 0 .. TP_MAX_WORDS - 1 words), all with the same handler, which
 * parses the words itself: a line with a missing or wrong argument reaches the
 * handler and gets its one-line error, rather than librte_cmdline's "Bad arguments".
 * A catch-all instance takes every first word that names no command. The tokens
 * complete from what the console holds: command words, device names, object ids of
 * the kind the position wants.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmdline.h>
#include <cmdline_parse.h>

#include "testpmd.h"

struct tp_help {
	const char *usage;
	const char *text;
	const char *example;
};

struct tp_cmd {
	const char *name;
	const char *group;
	int (*run)(const struct tp_args *a);
	const struct tp_help *help; /* NULL-usage terminated */
};

static int cmd_help(const struct tp_args *a);
static int cmd_quit(const struct tp_args *a);

static const struct tp_help help_show[] = {
	{"show devices", "the devices: name, DPDK port, link, MAC, IPv4", "show devices"},
	{"show port <dev>", "one device: link, MAC, IPv4, MTU, GID 0, device caps", "show port dpv0"},
	{"show counters [<dev> | qp <n> | srq <n>]",
	 "counters since `clear counters`: frames and bytes, drops by reason, matched, "
	 "unexpected, no-tag, sync requests, retransmits, timeouts; zero ones are left out",
	 "show counters qp 1"},
	{"show objects", "every PD, MR, CQ, SRQ and QP, with its parameters and state",
	 "show objects"},
	{"show mr <mr> [<offset> [<len>]]", "the MR's bytes in hex (32 from offset 0 by default)",
	 "show mr 2 0 64"},
	{"show cm <dev>",
	 "the device's CM ids (listeners, connections, SIDR requests, address resolutions): "
	 "local ID, state, peer, service ID, QPNs",
	 "show cm dpv0"},
	{"show tags <srq>", "the tag list: handle, tag, mask, eligible, phase (need), buffer",
	 "show tags 1"},
	{"show unexpected <srq>", "unexpected messages polled and not yet synced", "show unexpected 1"},
	{"show phase <srq>", "U, S, sync requests outstanding, list and op occupancy",
	 "show phase 1"},
	{NULL, NULL, NULL},
};
static const struct tp_help help_clear[] = {
	{"clear counters", "start `show counters` from zero again", "clear counters"},
	{NULL, NULL, NULL},
};
static const struct tp_help help_create[] = {
	{"create pd <dev>", "a protection domain", "create pd dpv1"},
	{"create mr <pd> <size> [access <l,w,r>] [fill <byte>]",
	 "a registered buffer, every byte <byte> (0); access: l local write, w remote write, "
	 "r remote read (default l,w,r)", "create mr 1 65536 access l,r fill 0xab"},
	{"create cq <dev> [size <n>] [ex]",
	 "a CQ; ex: extended, read with ibv_start_poll and TM info (default size 256)",
	 "create cq dpv1 size 512 ex"},
	{"create srq <pd> [size <n>] [tm <cq> [tags <n>] [ops <n>]]",
	 "a basic SRQ, or with tm a tag-matching SRQ whose completions go to <cq>",
	 "create srq 2 size 64 tm 2 tags 64 ops 16"},
	{"create qp <pd> rc|ud <cq> [srq <srq>] [send <n>] [recv <n>]",
	 "an RC or UD QP on <cq> (send and receive), with its own RQ or an SRQ",
	 "create qp 2 rc 2 srq 1 send 0"},
	{NULL, NULL, NULL},
};
static const struct tp_help help_destroy[] = {
	{"destroy pd|mr|cq|srq|qp <id>", "destroy an object (what uses it goes first)",
	 "destroy qp 3"},
	{NULL, NULL, NULL},
};
static const struct tp_help help_connect[] = {
	{"connect <qp> <qp>", "take two RC QPs of this console to RTS towards each other",
	 "connect 3 4"},
	{"connect <qp> peer <host>:<port>",
	 "connect an RC QP to the QP a `listen` console offers (QPN, PSN, GID over TCP)",
	 "connect 1 peer 127.0.0.1:18515"},
	{"listen <port> [<qp>]", "wait for one `connect ... peer` on TCP <port> (0: any, printed) and connect <qp> (by default the one RC QP not yet connected)",
	 "listen 18515 2"},
	{NULL, NULL, NULL},
};
static const struct tp_help help_post[] = {
	{"post srq_recv <srq> <count> <size>",
	 "post <count> ordinary receives of <size> bytes (unexpected and no-tag messages land "
	 "there)", "post srq_recv 1 8 4096"},
	{"post recv <qp> <count> <size>", "post receives on a QP's own RQ", "post recv 3 4 1024"},
	{NULL, NULL, NULL},
};
static const struct tp_help help_tag[] = {
	{"tag add <srq> <tag> [mask <m>] [size <n>] [signaled] [sync <cnt>]",
	 "add a tag entry with a buffer of <n> bytes (default 4096); prints its handle",
	 "tag add 1 0x10 mask 0xff signaled"},
	{"tag del <srq> <handle> [signaled]", "delete an entry", "tag del 1 0"},
	{"tag sync <srq> <cnt>", "report S = <cnt> unexpected messages processed",
	 "tag sync 1 1"},
	{NULL, NULL, NULL},
};
static const struct tp_help help_send[] = {
	{"send <qp> [size <n>] [count <n>] [tag <t> eager|rndv|notag] [imm <x>]",
	 "SEND <count> messages of <n> bytes (default 64, 1); with tag, a TMH first (rndv: "
	 "TMH, RVH of a registered buffer); waits for each to be acknowledged",
	 "send 3 size 100 tag 0x10 eager"},
	{"write <qp> <mr> <remote-mr>|<addr>:<rkey> [size <n>] [imm <x>]",
	 "RDMA WRITE from a local MR to a remote one", "write 3 1 2 size 4096"},
	{"read <qp> <mr> <remote-mr>|<addr>:<rkey> [size <n>]",
	 "RDMA READ from a remote MR into a local one", "read 3 1 2 size 4096"},
	{NULL, NULL, NULL},
};
static const struct tp_help help_poll[] = {
	{"poll cq <cq> [max <n>]",
	 "print the completions there (at most <n>, default 64): status, opcode and flags by "
	 "name, byte_len, qp_num, tag, app_ctx", "poll cq 2 max 8"},
	{NULL, NULL, NULL},
};
static const struct tp_help help_modes[] = {
	{"set mode tag-pingpong|tag-flood|rndv-stream|rc-pingpong [size <n>] [count <n>]",
	 "choose the traffic `start` runs, between the first two devices", "set mode tag-flood count 1000"},
	{"start", "run the mode: rates and latency percentiles every second", "start"},
	{"stop", "stop it (a run with a count first finishes it) and print the summary", "stop"},
	{NULL, NULL, NULL},
};
static const struct tp_help help_capture[] = {
	{"capture start <file.pcapng> [<dev>]", "write what a device sends and receives to a "
	 "pcapng file; without <dev>, every device, each into <file>-<dev>.pcapng",
	 "capture start /tmp/tm.pcapng dpv0"},
	{"capture stop [<dev>]", "stop it (every device's, or one's) and close the file",
	 "capture stop"},
	{NULL, NULL, NULL},
};
static const struct tp_help help_misc[] = {
	{"help [<group>|<command>]", "this; groups: info, objects, connect, data, tm, modes, "
	 "capture, misc", "help tm"},
	{"quit", "destroy everything in order and leave (also exit, EOF, Ctrl-D)", "quit"},
	{NULL, NULL, NULL},
};

static const struct tp_cmd cmds[] = {
	{"show", "info", tp_cmd_show, help_show},
	{"clear", "info", tp_cmd_clear, help_clear},
	{"create", "objects", tp_cmd_create, help_create},
	{"destroy", "objects", tp_cmd_destroy, help_destroy},
	{"connect", "connect", tp_cmd_connect, help_connect},
	{"listen", "connect", tp_cmd_listen, help_connect},
	{"post", "data", tp_cmd_post, help_post},
	{"tag", "tm", tp_cmd_tag, help_tag},
	{"send", "data", tp_cmd_send, help_send},
	{"write", "data", tp_cmd_rdma, help_send},
	{"read", "data", tp_cmd_rdma, help_send},
	{"poll", "data", tp_cmd_poll, help_poll},
	{"set", "modes", tp_cmd_set, help_modes},
	{"start", "modes", tp_cmd_start, help_modes},
	{"stop", "modes", tp_cmd_stop, help_modes},
	{"capture", "capture", tp_cmd_capture, help_capture},
	{"help", "misc", cmd_help, help_misc},
	{"quit", "misc", cmd_quit, help_misc},
	{"exit", "misc", cmd_quit, help_misc},
};
#define N_CMDS (sizeof(cmds) / sizeof(cmds[0]))

static const char *const groups[] = {"info", "objects", "connect", "data", "tm", "modes",
				     "capture", "misc"};

static const struct tp_cmd *cmd_of(const char *name)
{
	for (unsigned int i = 0; i < N_CMDS; i++)
		if (strcmp(cmds[i].name, name) == 0)
			return &cmds[i];
	return NULL;
}

static void help_print(const struct tp_help *h, bool full)
{
	for (; h->usage != NULL; h++) {
		if (!full) {
			tp_out("  %s", h->usage);
			continue;
		}
		tp_out("  %s", h->usage);
		tp_out("      %s", h->text);
		tp_out("      e.g. %s", h->example);
	}
}

/* Print each help table of @p group once (commands of a group may share one). */
static void help_group(const char *group, bool full)
{
	const struct tp_help *seen[N_CMDS];
	unsigned int n_seen = 0;

	for (unsigned int i = 0; i < N_CMDS; i++) {
		bool dup = false;

		if (strcmp(cmds[i].group, group) != 0)
			continue;
		for (unsigned int j = 0; j < n_seen; j++)
			dup |= seen[j] == cmds[i].help;
		if (dup)
			continue;
		seen[n_seen++] = cmds[i].help;
		help_print(cmds[i].help, full);
	}
	/* The tag list's views are `show` commands, and part of the TM story too. */
	if (strcmp(group, "tm") == 0)
		help_print(&help_show[6], full);
}

static int cmd_help(const struct tp_args *a)
{
	const struct tp_cmd *c;

	if (a->n == 1) {
		tp_out("commands by group (help <group> for what each does, with an example):");
		for (unsigned int g = 0; g < sizeof(groups) / sizeof(groups[0]); g++) {
			tp_out("%s:", groups[g]);
			help_group(groups[g], false);
		}
		return 0;
	}
	if (a->n > 2)
		return tp_err("help", EINVAL, "one group or command at most: help tm");
	for (unsigned int g = 0; g < sizeof(groups) / sizeof(groups[0]); g++) {
		if (strcmp(a->w[1], groups[g]) == 0) {
			help_group(groups[g], true);
			return 0;
		}
	}
	c = cmd_of(a->w[1]);
	if (c == NULL)
		return tp_err("help", ENOENT, "no group or command '%s'; `help` lists them",
			      a->w[1]);
	help_print(c->help, true);
	return 0;
}

static int cmd_quit(const struct tp_args *a)
{
	if (a->n != 1)
		return tp_err(a->w[0], EINVAL, "takes no argument");
	tp.quit = true;
	return 0;
}

static void dispatch(const struct tp_args *a)
{
	const struct tp_cmd *c;

	if (a->n == 0)
		return;
	c = cmd_of(a->w[0]);
	if (c == NULL) {
		char shown[24];
		size_t i;

		/* Whatever was typed, the line printed is readable text. */
		for (i = 0; i + 1 < sizeof(shown) && a->w[0][i] != '\0'; i++)
			shown[i] = a->w[0][i] > ' ' && a->w[0][i] < 0x7f ? a->w[0][i] : '?';
		shown[i] = '\0';
		tp_err(shown, ENOENT, "no such command; `help` lists them");
		return;
	}
	(void)c->run(a);
}

void tp_run_line(const char *line)
{
	char buf[TP_MAX_WORDS * TP_WORD_MAX];
	struct tp_args a = {0};
	char *p, *save = NULL;

	snprintf(buf, sizeof(buf), "%s", line);
	p = strchr(buf, '#');
	if (p != NULL)
		*p = '\0';
	for (p = strtok_r(buf, " \t\r\n", &save); p != NULL; p = strtok_r(NULL, " \t\r\n", &save)) {
		if (a.n == TP_MAX_WORDS) {
			tp_err(a.w[0], E2BIG, "more than %u words on one line", TP_MAX_WORDS);
			return;
		}
		if (strlen(p) >= TP_WORD_MAX) {
			tp_err(a.n > 0 ? a.w[0] : "input", ENAMETOOLONG,
			       "a word of %zu characters; at most %u", strlen(p), TP_WORD_MAX - 1);
			return;
		}
		a.w[a.n++] = p;
	}
	dispatch(&a);
}

/* ---- librte_cmdline: tokens that complete from the console's state ---- */

struct tp_tok {
	struct cmdline_token_hdr hdr;
	const struct tp_cmd *cmd; /* NULL: the catch-all */
	unsigned int pos;
	/* The last token of its instance: only it offers completions (or a help line),
	 * so that the instances of one command, one per word count, say each once. */
	bool last;
	/* After TP_MAX_WORDS words: takes the rest of the line, which the handler
	 * refuses (E2BIG) rather than librte_cmdline's "Command not found". */
	bool rest;
};

/* A word longer than TP_WORD_MAX - 1 is kept as this mark, for the handler to refuse. */
#define TOO_LONG "\x01"


struct tp_res {
	char w[TP_MAX_WORDS + 1][TP_WORD_MAX];
};

struct tp_inst_data {
	unsigned int n;
};

/* The words the current completion has parsed before the token it completes:
 * librte_cmdline parses an instance's earlier tokens first, in order. */
static char comp_words[TP_MAX_WORDS][TP_WORD_MAX];

#define MAX_CANDS 64u
static char cands[MAX_CANDS][TP_WORD_MAX];
static unsigned int n_cands;

static void cand(const char *s)
{
	if (n_cands < MAX_CANDS)
		snprintf(cands[n_cands++], TP_WORD_MAX, "%s", s);
}

static void cand_words(const char *list)
{
	char buf[256], *p, *save = NULL;

	snprintf(buf, sizeof(buf), "%s", list);
	for (p = strtok_r(buf, " ", &save); p != NULL; p = strtok_r(NULL, " ", &save))
		cand(p);
}

static void cand_ids(enum tp_kind kind)
{
	char id[16];

	for (uint32_t i = 1; i <= TP_MAX_OBJS; i++) {
		if (!tp.obj[kind][i].used)
			continue;
		snprintf(id, sizeof(id), "%u", i);
		cand(id);
	}
}

static void cand_devs(void)
{
	for (unsigned int i = 0; i < tp.n_devs; i++)
		cand(tp.dev[i].name);
}

static bool prev_is(unsigned int pos, const char *w)
{
	return pos > 0 && strcmp(comp_words[pos - 1], w) == 0;
}

/* What may come at word @p pos of command @p c, given the words before it. */
static void candidates(const struct tp_cmd *c, unsigned int pos)
{
	const char *w1 = pos > 1 ? comp_words[1] : "";
	const char *n = c->name;
	int kind;

	n_cands = 0;
	if (strcmp(n, "show") == 0) {
		if (pos == 1)
			cand_words("devices port counters objects mr tags unexpected phase cm");
		else if (pos == 2 && (strcmp(w1, "port") == 0 || strcmp(w1, "cm") == 0))
			cand_devs();
		else if (pos == 2 && strcmp(w1, "counters") == 0) {
			cand_devs();
			cand_words("qp srq");
		} else if (pos == 3 && prev_is(pos, "qp"))
			cand_ids(TP_QP);
		else if (pos == 2 && strcmp(w1, "mr") == 0)
			cand_ids(TP_MR);
		else if ((pos == 3 && prev_is(pos, "srq")) ||
			 (pos == 2 && (strcmp(w1, "tags") == 0 || strcmp(w1, "unexpected") == 0 ||
				       strcmp(w1, "phase") == 0)))
			cand_ids(TP_SRQ);
	} else if (strcmp(n, "clear") == 0) {
		if (pos == 1)
			cand("counters");
	} else if (strcmp(n, "create") == 0) {
		if (pos == 1)
			cand_words("pd mr cq srq qp");
		else if (pos == 2 && (strcmp(w1, "pd") == 0 || strcmp(w1, "cq") == 0))
			cand_devs();
		else if (pos == 2)
			cand_ids(TP_PD);
		else if (prev_is(pos, "tm") || prev_is(pos, "cq") ||
			 (strcmp(w1, "qp") == 0 && pos == 4))
			cand_ids(TP_CQ);
		else if (prev_is(pos, "srq"))
			cand_ids(TP_SRQ);
		else if (strcmp(w1, "qp") == 0 && pos == 3)
			cand_words("rc ud");
		else if (strcmp(w1, "qp") == 0)
			cand_words("srq send recv");
		else if (strcmp(w1, "srq") == 0)
			cand_words("size tm tags ops");
		else if (strcmp(w1, "cq") == 0)
			cand_words("size ex");
		else if (strcmp(w1, "mr") == 0 && pos > 3)
			cand_words("access fill");
	} else if (strcmp(n, "destroy") == 0) {
		if (pos == 1)
			cand_words("pd mr cq srq qp");
		else if (pos == 2 && (kind = tp_kind_of(w1)) >= 0)
			cand_ids((enum tp_kind)kind);
	} else if (strcmp(n, "connect") == 0) {
		if (pos == 1)
			cand_ids(TP_QP);
		else if (pos == 2) {
			cand_ids(TP_QP);
			cand("peer");
		}
	} else if (strcmp(n, "listen") == 0) {
		if (pos == 2)
			cand_ids(TP_QP);
	} else if (strcmp(n, "post") == 0) {
		if (pos == 1)
			cand_words("srq_recv recv");
		else if (pos == 2)
			cand_ids(strcmp(w1, "recv") == 0 ? TP_QP : TP_SRQ);
	} else if (strcmp(n, "tag") == 0) {
		if (pos == 1)
			cand_words("add del sync");
		else if (pos == 2)
			cand_ids(TP_SRQ);
		else if (strcmp(w1, "add") == 0 && pos > 3)
			cand_words("mask size signaled sync");
		else if (strcmp(w1, "del") == 0 && pos > 3)
			cand("signaled");
	} else if (strcmp(n, "send") == 0 || strcmp(n, "write") == 0 || strcmp(n, "read") == 0) {
		if (pos == 1)
			cand_ids(TP_QP);
		else if (strcmp(n, "send") != 0 && (pos == 2 || pos == 3))
			cand_ids(TP_MR);
		else if (pos > 2 && strcmp(n, "send") == 0 &&
			 strcmp(comp_words[pos - 2], "tag") == 0)
			cand_words("eager rndv notag");
		else if (strcmp(n, "send") == 0)
			cand_words("size count tag imm");
		else
			cand_words(strcmp(n, "write") == 0 ? "size imm" : "size");
	} else if (strcmp(n, "poll") == 0) {
		if (pos == 1)
			cand("cq");
		else if (pos == 2)
			cand_ids(TP_CQ);
		else if (pos == 3)
			cand("max");
	} else if (strcmp(n, "set") == 0) {
		if (pos == 1)
			cand("mode");
		else if (pos == 2)
			cand_words("tag-pingpong tag-flood rndv-stream rc-pingpong");
		else
			cand_words("size count");
	} else if (strcmp(n, "capture") == 0) {
		if (pos == 1)
			cand_words("start stop");
		else if (pos == 3 || (pos == 2 && strcmp(w1, "stop") == 0))
			cand_devs();
	} else if (strcmp(n, "help") == 0) {
		if (pos == 1) {
			for (unsigned int g = 0; g < sizeof(groups) / sizeof(groups[0]); g++)
				cand(groups[g]);
			for (unsigned int i = 0; i < N_CMDS; i++)
				cand(cmds[i].name);
		}
	}
}

static int tok_parse(cmdline_parse_token_hdr_t *hdr, const char *buf, void *res,
		     unsigned int ressize)
{
	const struct tp_tok *t = (const struct tp_tok *)hdr;
	unsigned int len = 0;

	if (buf == NULL)
		return -1;
	if (t->rest) {
		while (buf[len] != '\0' && buf[len] != '\n' && buf[len] != '\r' && buf[len] != '#')
			len++;
		if (res != NULL && ressize >= 2)
			strcpy(res, "+");
		return len > 0 ? (int)len : -1;
	}
	while (!cmdline_isendoftoken(buf[len]))
		len++;
	if (len == 0)
		return -1;
	if (len >= TP_WORD_MAX) {
		if (t->pos == 0 && t->cmd != NULL)
			return -1;
		if (res != NULL && ressize >= sizeof(TOO_LONG))
			strcpy(res, TOO_LONG);
		return (int)len;
	}
	if (t->pos == 0) {
		char w[TP_WORD_MAX];

		memcpy(w, buf, len);
		w[len] = '\0';
		/* A command's own name, or (the catch-all) any word that names none. */
		if (t->cmd != NULL ? strcmp(w, t->cmd->name) != 0 : cmd_of(w) != NULL)
			return -1;
	}
	memcpy(comp_words[t->pos], buf, len);
	comp_words[t->pos][len] = '\0';
	/* librte_cmdline hands each token its own place in the result (hdr->offset). */
	if (res != NULL) {
		if (ressize < TP_WORD_MAX)
			return -1;
		memcpy(res, buf, len);
		((char *)res)[len] = '\0';
	}
	return (int)len;
}

static int tok_nb(cmdline_parse_token_hdr_t *hdr)
{
	const struct tp_tok *t = (const struct tp_tok *)hdr;

	/* One candidate that tok_elt() never gives: librte_cmdline then prints nothing for
	 * this instance, where a token without candidates gets a help line of its own. */
	if (t->cmd == NULL || !t->last || t->rest)
		return 1;
	if (t->pos == 0)
		return 1;
	candidates(t->cmd, t->pos);
	return (int)n_cands;
}

static int tok_elt(cmdline_parse_token_hdr_t *hdr, int idx, char *dst, unsigned int size)
{
	const struct tp_tok *t = (const struct tp_tok *)hdr;

	if (t->cmd == NULL || idx < 0 || !t->last || t->rest)
		return -1;
	if (t->pos == 0) {
		if (idx != 0)
			return -1;
		snprintf(dst, size, "%s", t->cmd->name);
		return 0;
	}
	candidates(t->cmd, t->pos);
	if ((unsigned int)idx >= n_cands)
		return -1;
	snprintf(dst, size, "%s", cands[idx]);
	return 0;
}

static int tok_help(cmdline_parse_token_hdr_t *hdr, char *dst, unsigned int size)
{
	const struct tp_tok *t = (const struct tp_tok *)hdr;

	snprintf(dst, size, "%s", t->pos == 0 && t->cmd != NULL ? t->cmd->name : "word");
	return 0;
}

static struct cmdline_token_ops tok_ops = {
	.parse = tok_parse,
	.complete_get_nb = tok_nb,
	.complete_get_elt = tok_elt,
	.get_help = tok_help,
};

/* The line of a command's help table that is about it (commands share tables). */
static const char *usage_of(const struct tp_cmd *c)
{
	size_t n = strlen(c->name);

	for (const struct tp_help *h = c->help; h->usage != NULL; h++)
		if (strncmp(h->usage, c->name, n) == 0 && (h->usage[n] == ' ' || h->usage[n] == '\0'))
			return h->usage;
	return c->help[0].usage;
}

static void inst_run(void *res, struct cmdline *cl, void *data)
{
	const struct tp_res *r = res;
	const struct tp_inst_data *d = data;
	struct tp_args a = {.n = d->n};

	if (d->n > TP_MAX_WORDS) {
		tp_err(r->w[0][0] == TOO_LONG[0] ? "input" : r->w[0], E2BIG,
		       "more than %u words on one line", TP_MAX_WORDS);
		return;
	}
	for (unsigned int i = 0; i < d->n; i++) {
		if (r->w[i][0] == TOO_LONG[0]) {
			tp_err(i > 0 ? r->w[0] : "input", ENAMETOOLONG, "a word of more than %u "
			       "characters", TP_WORD_MAX - 1);
			return;
		}
		a.w[i] = r->w[i];
	}
	dispatch(&a);
	if (tp.quit)
		cmdline_quit(cl);
}

static struct tp_inst_data inst_data[TP_MAX_WORDS + 1];
static struct cmdline_inst **ctx;

struct cmdline_inst **tp_cmdline_ctx(void)
{
	unsigned int n = 0;

	if (ctx != NULL)
		return ctx;
	ctx = calloc((N_CMDS + 1) * (TP_MAX_WORDS + 1) + 1, sizeof(*ctx));
	if (ctx == NULL)
		return NULL;
	for (unsigned int w = 0; w <= TP_MAX_WORDS; w++)
		inst_data[w].n = w + 1;
	for (unsigned int c = 0; c <= N_CMDS; c++) {
		/* Instance w: the command's word and w more; the last one also the rest. */
		for (unsigned int w = 0; w <= TP_MAX_WORDS; w++) {
			struct cmdline_inst *in = calloc(1, sizeof(*in) + (w + 2) * sizeof(in->tokens[0]));
			struct tp_tok *t = calloc(w + 1, sizeof(*t));

			if (in == NULL || t == NULL) {
				free(in);
				free(t);
				return NULL;
			}
			for (unsigned int p = 0; p <= w; p++) {
				t[p].hdr.ops = &tok_ops;
				t[p].hdr.offset = p * TP_WORD_MAX;
				t[p].cmd = c < N_CMDS ? &cmds[c] : NULL;
				t[p].pos = p;
				t[p].last = p == w;
				t[p].rest = p == TP_MAX_WORDS;
				in->tokens[p] = &t[p].hdr;
			}
			in->f = inst_run;
			in->data = &inst_data[w];
			in->help_str = c < N_CMDS ? usage_of(&cmds[c]) : "(no such command)";
			in->tokens[w + 1] = NULL;
			ctx[n++] = in;
		}
	}
	ctx[n] = NULL;
	return ctx;
}
