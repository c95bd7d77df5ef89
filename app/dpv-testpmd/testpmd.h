/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpv-testpmd: the interactive console (doc/guides/testpmd.md). What its files share:
 * the devices, the objects a user creates by number, the output helpers, and the
 * command groups, one file each.
 */
#ifndef DPV_TESTPMD_H
#define DPV_TESTPMD_H

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>

/* Devices a console opens (one per DPDK port, up to this many). */
#define TP_MAX_DEVS 8u
/* Objects of one kind a console keeps; ids run from 1. */
#define TP_MAX_OBJS 256u
/* Words of one command line, the command's own included. */
#define TP_MAX_WORDS 16u
#define TP_WORD_MAX 128u
/* Completions a CQ keeps that a command waiting for its own took first. */
#define TP_CQ_STASH 1024u
/* Unexpected messages a TM SRQ remembers for `show unexpected`. */
#define TP_UNEXP_MAX 256u
/* The largest buffer one receive, tag or send gets, and what one post may take in all:
 * the console registers (and so locks) every byte it asks for. */
#define TP_MAX_BUF (64u << 20)
#define TP_MAX_POST (256u << 20)
/* How long a command waits for the device before it says the wait failed. */
#define TP_WAIT_MS 5000u

enum tp_kind { TP_PD, TP_MR, TP_CQ, TP_SRQ, TP_QP, TP_NKINDS };

struct tp_dev {
	struct ibv_context *ctx;
	char name[IBV_SYSFS_NAME_MAX];
	uint16_t port_id;
	uint32_t ipv4;
	union ibv_gid gid;
	struct ibv_pd *pd;      /* the console's own: buffers of receives and tags */
	struct ibv_cq *idle_cq; /* never has completions: polling it drives the device */
};

/* One decoded completion. */
struct tp_wc {
	uint64_t wr_id;
	enum ibv_wc_status status;
	enum ibv_wc_opcode opcode;
	unsigned int wc_flags;
	uint32_t byte_len;
	uint32_t qp_num;
	uint32_t src_qp;
	uint32_t imm;
	uint64_t tag;
	uint32_t app_ctx;
	bool has_tm;
};

/* A registered buffer the console made for a receive, a tag or a send. */
struct tp_buf {
	struct tp_buf *next;
	uint64_t id;     /* the wr_id of what it is posted with */
	void *addr;
	uint32_t len;
	struct ibv_mr *mr;
	uint32_t srq;    /* receive buffers: the SRQ id; 0 otherwise */
	uint32_t handle; /* tag buffers: the entry's handle */
	uint64_t tag;
	bool is_tag;
	bool busy;       /* posted, not yet completed */
	/* A send buffer whose bytes a rendezvous offered: busy until its FIN is polled. */
	bool rndv;
	uint64_t rndv_tag;
	uint32_t rndv_ctx;
	uint32_t rndv_len;
	uint32_t rndv_qp_num; /* the QP that offered it, which the FIN reaches */
};

struct tp_unexp {
	uint32_t ordinal; /* 0 for the first unexpected message polled */
	uint32_t qp_num;
	uint32_t byte_len;
	uint8_t tmh_op;
	uint32_t app_ctx;
	uint64_t tag;
};

struct tp_obj {
	bool used;
	unsigned int dev;
	uint32_t pd_id;     /* the PD of an MR, SRQ or QP */
	union {
		struct ibv_pd *pd;
		struct {
			struct ibv_mr *mr;
			void *buf;
		} mr;
		struct {
			struct ibv_cq *cq;
			struct ibv_cq_ex *cq_ex; /* NULL: legacy */
			uint32_t size;
			struct tp_wc *stash;
			uint32_t stash_head, stash_n;
		} cq;
		struct {
			struct ibv_srq *srq;
			bool tm;
			uint32_t cq_id, max_wr, max_num_tags, max_ops;
			uint32_t sw_count;         /* S software reported last */
			uint32_t unexp_seen;       /* unexpected messages polled */
			uint32_t sync_reqs;        /* completions that asked for a SYNC */
			uint32_t n_unexp;
			struct tp_unexp unexp[TP_UNEXP_MAX];
			struct tp_buf *bufs;
		} srq;
		struct {
			struct ibv_qp *qp;
			enum ibv_qp_type type;
			uint32_t send_cq, recv_cq, srq_id;
			uint32_t max_send_wr, max_recv_wr;
			uint32_t sq_psn;
			struct tp_buf *bufs;
			/* UD: where sends go */
			struct ibv_ah *ah;
			uint32_t remote_qpn;
		} qp;
	} u;
};

struct tp {
	struct tp_dev dev[TP_MAX_DEVS];
	unsigned int n_devs;
	struct tp_obj obj[TP_NKINDS][TP_MAX_OBJS + 1];
	bool quit;
	bool interactive;
	unsigned int errors; /* tp_err() lines so far */
	int listen_fd;
	uint16_t listen_port;
};

extern struct tp tp;

/* The words of one command line. */
struct tp_args {
	unsigned int n;
	const char *w[TP_MAX_WORDS];
};

/* ---- output (tp_util.c) ---- */

/* Print a line (printf-style, the newline added) and flush, so a script's output
 * interleaves with the EAL's and the traffic thread's in order. */
void tp_out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/*
 * Say what went wrong in one line: "<cmd>: <ERRNO>: <what and what to do>".
 * @return -1, for `return tp_err(...)`.
 */
int tp_err(const char *cmd, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
const char *tp_errno_name(int err);

/* ---- arguments (tp_util.c) ---- */

/* A number (decimal or 0x hex) within [min, max]; else a tp_err() line and -1. */
int tp_num(const char *cmd, const char *what, const char *s, uint64_t min, uint64_t max,
	   uint64_t *out);
/* The object of @p kind numbered by word @p s; else a tp_err() line and NULL. */
struct tp_obj *tp_get(const char *cmd, enum tp_kind kind, const char *s, uint32_t *id);
/* The device named (dpv0) or numbered (0) by @p s; else tp_err() and -1. */
int tp_dev_arg(const char *cmd, const char *s);
const char *tp_kind_name(enum tp_kind kind);
/* Whether word @p s names @p kind. */
int tp_kind_of(const char *s);
/* Milliseconds on CLOCK_MONOTONIC, for a command's deadlines. */
uint64_t tp_now_ms(void);

/* ---- objects (tp_objects.c) ---- */

int tp_cmd_create(const struct tp_args *a);
int tp_cmd_destroy(const struct tp_args *a);
int tp_cmd_show(const struct tp_args *a);
int tp_cmd_clear(const struct tp_args *a);
/* Destroy every object, newest kind first (QPs, SRQs, CQs, MRs, PDs). */
void tp_destroy_all(void);
/* Create objects as `create` does, for the embedded default and the modes. @return the
 * id, or 0 after a tp_err() line. */
uint32_t tp_new_pd(unsigned int dev);
uint32_t tp_new_cq(unsigned int dev, uint32_t size, bool ex);
uint32_t tp_new_srq(uint32_t pd, uint32_t max_wr, uint32_t tm_cq, uint32_t tags, uint32_t ops);
uint32_t tp_new_qp(uint32_t pd, enum ibv_qp_type type, uint32_t cq, uint32_t srq,
		   uint32_t max_send_wr, uint32_t max_recv_wr);
/* A buffer of @p len bytes registered on @p pd (that of the QP or SRQ it serves, as
 * the device checks), put on @p list. */
struct tp_buf *tp_buf_new(struct ibv_pd *pd, uint32_t len, struct tp_buf **list);
/* Give a buffer used again a wr_id of its own, so that no two completions a session
 * prints share one. */
void tp_buf_renew(struct tp_buf *b);
/* A wr_id no buffer and no other WR has. */
uint64_t tp_next_id(void);
void tp_bufs_free(struct tp_buf **list);
/* The buffer whose id is @p wr_id, or NULL. */
struct tp_buf *tp_buf_find(uint64_t wr_id);
/* Options after the fixed words of a command, from word @p from on. */
int tp_opt_u64(const char *cmd, const struct tp_args *a, unsigned int from, const char *name,
	       uint64_t min, uint64_t max, uint64_t def, uint64_t *out);
int tp_opt_flag(const struct tp_args *a, unsigned int from, const char *name);
int tp_opts_check(const char *cmd, const struct tp_args *a, unsigned int from,
		  const char *const *with_value, const char *const *flags);
enum ibv_qp_state tp_qp_state(struct ibv_qp *qp);
const char *tp_qp_state_name(struct ibv_qp *qp);
int tp_obj_dev(enum tp_kind kind, uint32_t id);

/* ---- connections (tp_connect.c) ---- */

int tp_cmd_connect(const struct tp_args *a);
int tp_cmd_listen(const struct tp_args *a);
/* Take two QPs of this process to RTS towards each other. @return 0 or -1 (said). */
int tp_connect_local(uint32_t qa, uint32_t qb);
void tp_listen_close(void);

/* ---- data path (tp_data.c) ---- */

int tp_cmd_post(const struct tp_args *a);
int tp_cmd_tag(const struct tp_args *a);
int tp_cmd_send(const struct tp_args *a);
int tp_cmd_rdma(const struct tp_args *a);
int tp_cmd_poll(const struct tp_args *a);
/* Drive every device once. */
void tp_progress(void);
/* Poll CQ @p cq_id once for up to @p n completions (the stash first). */
int tp_cq_take(uint32_t cq_id, struct tp_wc *wc, int n);
void tp_wc_print(uint32_t cq_id, const struct tp_wc *wc);
int tp_show_tags(const char *cmd, const struct tp_args *a);
int tp_show_unexpected(const char *cmd, const struct tp_args *a);
int tp_show_phase(const char *cmd, const struct tp_args *a);

/* ---- traffic modes (tp_modes.c) ---- */

int tp_cmd_set(const struct tp_args *a);
int tp_cmd_start(const struct tp_args *a);
int tp_cmd_stop(const struct tp_args *a);
/* Stop a running mode (quit). */
void tp_modes_stop(void);

/* ---- capture (tp_capture.c) ---- */

int tp_cmd_capture(const struct tp_args *a);
void tp_capture_stop_all(void);

/* ---- the command table (tp_cmds.c) ---- */

/* The cmdline context: every command, with its completions. */
struct cmdline_inst;
struct cmdline_inst **tp_cmdline_ctx(void);
/* Run one line as typed (the script and piped-stdin path, without librte_cmdline's
 * own messages). */
void tp_run_line(const char *line);

#endif /* DPV_TESTPMD_H */
