/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A running device attacked from another network namespace (hostile.sh sets up the
 * namespaces; attack.py is the attacker). dpv0 and dpv1 are af_packet devices on two
 * veth links joined by a bridge; the attacker sends on dpv0's link. Each test runs one
 * phase of the attacker while it drives the devices, checks that dpv0 counted what the
 * attack sent and that nothing outside what the attack could reach changed, and then
 * runs a normal exchange on the same device (RC SEND both ways, WRITE, READ, UD, a
 * tag-matched message), which must complete with every byte right.
 *
 * The attacker knows what a host on the segment could learn by watching: MACs,
 * addresses, QP numbers, PSNs, remote keys. doc/guides/security.md says what the
 * device can and cannot do against it.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <infiniband/tm_types.h>

#include "dpv_verbs.h"
#include "verbs_test.h"

extern char **environ;

#define LW IBV_ACCESS_LOCAL_WRITE
#define RW (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)
#define PSN_TO_A 0xffffe8u  /* what a fresh pair's QP on A expects first (verbs_test.c) */
#define PSN_FROM_A 0xfffff0u
/* How long one phase of the attacker may take. */
#define PHASE_MS 120000u
#define FLOOD_FRAMES 100000u

static const char *dir;

/* ---- talking to the attacker ---- */

static char *path_in_dir(const char *name)
{
	static char p[4][512];
	static unsigned int k;
	char *s = p[k++ % 4];

	snprintf(s, sizeof(p[0]), "%s/%s", dir, name);
	return s;
}

static void write_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void write_info(const char *fmt, ...)
{
	FILE *f;
	va_list ap;

	unlink(path_in_dir("result"));
	unlink(path_in_dir("flooded"));
	unlink(path_in_dir("rx"));
	f = fopen(path_in_dir("info"), "w");
	assert_non_null(f);
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	assert_int_equal(fclose(f), 0);
}

static long result(const char *key)
{
	char line[256], k[128];
	long v, found = -1;
	FILE *f = fopen(path_in_dir("result"), "r");

	if (f == NULL)
		fail_msg("the attacker wrote no result");
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "%127s %ld", k, &v) == 2 && strcmp(k, key) == 0)
			found = v;
	fclose(f);
	if (found < 0)
		fail_msg("the attacker's result has no %s", key);
	return found;
}

/* Called between polls while the attacker runs. */
typedef void (*tick_fn)(void *arg);

/*
 * Run one phase of the attacker in its namespace and drive the devices until it ends;
 * it must end with status 0 within PHASE_MS.
 */
static void attack(const char *phase, tick_fn tick, void *arg)
{
	const char *ns = getenv("DPV_HOSTILE_NETNS"), *script = getenv("DPV_HOSTILE_SCRIPT");
	char *argv[] = {"ip", "netns", "exec", (char *)ns, "/usr/bin/python3", (char *)script,
			(char *)phase, (char *)dir, NULL};
	uint64_t end = now_ms() + PHASE_MS;
	int status, ret;
	pid_t pid, w;

	assert_non_null(ns);
	assert_non_null(script);
	ret = posix_spawnp(&pid, "ip", NULL, NULL, argv, environ);
	assert_int_equal(ret, 0);
	for (;;) {
		w = waitpid(pid, &status, WNOHANG);
		assert_true(w >= 0);
		if (w == pid)
			break;
		if (now_ms() > end) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			fail_msg("attack %s did not end in %u ms", phase, PHASE_MS);
		}
		for (int i = 0; i < 64; i++)
			progress();
		if (tick != NULL)
			tick(arg);
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("attack %s ended with status %d", phase, status);
}

/* ---- the normal exchange that must work after every attack ---- */

static void rc_exchange(struct rc_pair *p)
{
	struct ibv_mr *amr = new_mr(&A, 65536, RW), *bmr = new_mr(&B, 65536, RW);
	struct ibv_wc wc;

	/* B to A, 4 KiB */
	fill_pattern(bmr->addr, 4096, 11);
	memset(amr->addr, 0, 65536);
	assert_int_equal(post_recv(p->a, 1, amr->addr, 65536, amr->lkey), 0);
	assert_int_equal(post_send(p->b, IBV_WR_SEND, 2, bmr->addr, 4096, bmr->lkey,
				   IBV_SEND_SIGNALED), 0);
	expect_send_ok(p->bcq, 2, IBV_WC_SEND);
	expect_wc(p->acq, &wc);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.byte_len, 4096);
	assert_true(check_pattern(amr->addr, 4096, 11));
	/* A to B, 1 byte */
	assert_int_equal(post_recv(p->b, 3, bmr->addr, 65536, bmr->lkey), 0);
	fill_pattern(amr->addr, 1, 12);
	assert_int_equal(post_send(p->a, IBV_WR_SEND, 4, amr->addr, 1, amr->lkey,
				   IBV_SEND_SIGNALED), 0);
	expect_send_ok(p->acq, 4, IBV_WC_SEND);
	expect_wc(p->bcq, &wc);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, 1);
	assert_true(check_pattern(bmr->addr, 1, 12));
	/* WRITE 64 KiB from A into B, READ 64 KiB of B into A */
	fill_pattern(amr->addr, 65536, 13);
	assert_int_equal(post_rdma(p->a, IBV_WR_RDMA_WRITE, 5, amr->addr, 65536, amr->lkey,
				   (uintptr_t)bmr->addr, bmr->rkey), 0);
	expect_send_ok(p->acq, 5, IBV_WC_RDMA_WRITE);
	assert_true(check_pattern(bmr->addr, 65536, 13));
	fill_pattern(bmr->addr, 65536, 14);
	assert_int_equal(post_rdma(p->a, IBV_WR_RDMA_READ, 6, amr->addr, 65536, amr->lkey,
				   (uintptr_t)bmr->addr, bmr->rkey), 0);
	expect_send_ok(p->acq, 6, IBV_WC_RDMA_READ);
	assert_true(check_pattern(amr->addr, 65536, 14));
}

static void ud_exchange(void)
{
	struct ibv_cq *acq = new_cq(&A, 16, NULL, NULL), *bcq = new_cq(&B, 16, NULL, NULL);
	struct ibv_qp *a = new_qp(&A, IBV_QPT_UD, acq, acq, NULL, 16, 16);
	struct ibv_qp *b = new_qp(&B, IBV_QPT_UD, bcq, bcq, NULL, 16, 16);
	struct ibv_mr *amr = new_mr(&A, 4096, LW), *bmr = new_mr(&B, 4096, LW);
	struct ibv_ah *ah = new_ah(&B, &A);
	struct ibv_sge sge = {(uintptr_t)bmr->addr, 256, bmr->lkey};
	struct ibv_send_wr wr, *bad;
	struct ibv_wc wc;

	ud_to_rts(a, 0x11111111);
	ud_to_rts(b, 0x11111111);
	assert_int_equal(post_recv(a, 1, amr->addr, 40 + 256, amr->lkey), 0);
	fill_pattern(bmr->addr, 256, 21);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 2;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = a->qp_num;
	wr.wr.ud.remote_qkey = 0x11111111;
	assert_int_equal(ibv_post_send(b, &wr, &bad), 0);
	expect_send_ok(bcq, 2, IBV_WC_SEND);
	expect_wc(acq, &wc);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, 40 + 256);
	assert_int_equal(wc.src_qp, b->qp_num);
	assert_true(check_pattern((uint8_t *)amr->addr + 40, 256, 21));
}

/* A tagged eager message from B matched on a TM SRQ of A. */
static void tm_exchange(void)
{
	struct ibv_cq_ex *cq = new_cq_ex(&A, 64, IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_TM_INFO);
	struct ibv_srq *srq = new_tm_srq(&A, cq, 16, 16, 16);
	struct rc_pair p;
	struct ibv_mr *tmr = new_mr(&A, 4096, LW), *smr = new_mr(&B, 4096, LW);
	struct ibv_tmh *h = smr->addr;
	struct wc_ex wc;

	p.acq = ibv_cq_ex_to_cq(cq);
	p.bcq = new_cq(&B, 16, NULL, NULL);
	p.a = new_qp(&A, IBV_QPT_RC, p.acq, p.acq, srq, 0, 0);
	p.b = new_qp(&B, IBV_QPT_RC, p.bcq, p.bcq, NULL, 16, 16);
	connect_rc(p.a, p.b, &conn_default);
	assert_int_equal(post_tag_add(srq, 7, 8, tmr->addr, 4096, tmr->lkey, 0x5eed, UINT64_MAX, 0,
				      0, NULL), 0);
	memset(h, 0, sizeof(*h));
	h->opcode = IBV_TMH_EAGER;
	h->app_ctx = htobe32(99);
	h->tag = htobe64(0x5eed);
	/* One packet: the match and the data come in one completion. */
	fill_pattern((uint8_t *)smr->addr + sizeof(*h), 512, 31);
	assert_int_equal(post_send(p.b, IBV_WR_SEND, 9, smr->addr, sizeof(*h) + 512, smr->lkey,
				   IBV_SEND_SIGNALED), 0);
	expect_send_ok(p.bcq, 9, IBV_WC_SEND);
	expect_ex(cq, &wc);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_TM_RECV);
	assert_int_equal(wc.wr_id, 8);
	assert_int_equal(wc.wc_flags & (IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID),
			 IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID);
	assert_int_equal(wc.byte_len, 512);
	assert_int_equal(wc.tm.tag, 0x5eed);
	assert_true(check_pattern(tmr->addr, 512, 31));
}

static void normal_exchange(void)
{
	struct rc_pair p;

	rc_pair(&p, &conn_default);
	rc_exchange(&p);
	ud_exchange();
	tm_exchange();
}

/* ---- spoofed ARP ---- */

struct new_peer {
	struct ibv_qp *qp;
	struct ibv_ah *ah;
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	bool sent;
};

/* Once the flood is over, send one UD message to a peer dpv0 has never resolved. */
static void send_to_new_peer(void *arg)
{
	struct new_peer *np = arg;
	struct ibv_sge sge = {(uintptr_t)np->mr->addr, 64, np->mr->lkey};
	struct ibv_send_wr wr, *bad;

	if (np->sent || access(path_in_dir("flooded"), F_OK) != 0)
		return;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.ud.ah = np->ah;
	wr.wr.ud.remote_qpn = 0x123;
	wr.wr.ud.remote_qkey = 0x11111111;
	assert_int_equal(ibv_post_send(np->qp, &wr, &bad), 0);
	np->sent = true;
}

/*
 * 1,500 strangers ask for dpv0's address (more than its 256-entry table holds), 5,000
 * ARP frames nobody asked for (replies, gratuitous ARP, requests for other hosts) and
 * 1,000 invalid ones; then dpv0 must still resolve a new peer and send to it, and
 * talk to dpv1 as before.
 */
static void arp_flood_leaves_resolution_working(void **state)
{
	struct new_peer np = {0};
	struct ibv_ah_attr ah_attr = {.is_global = 1, .port_num = 1,
				      .grh = {.sgid_index = 0, .hop_limit = 64}};
	uint64_t inv0 = dev_xstat(A.ctx, "port.arp_invalid");
	uint64_t ign0 = dev_xstat(A.ctx, "port.arp_ignored_unsolicited");
	uint64_t learn0 = dev_xstat(A.ctx, "port.arp_learned");
	uint64_t evict0 = dev_xstat(A.ctx, "port.arp_evicted");
	uint64_t rep0 = dev_xstat(A.ctx, "port.arp_replies_sent");
	struct ibv_wc wc;
	uint64_t ign;

	(void)state;
	np.cq = new_cq(&A, 16, NULL, NULL);
	np.qp = new_qp(&A, IBV_QPT_UD, np.cq, np.cq, NULL, 16, 16);
	ud_to_rts(np.qp, 0x11111111);
	np.mr = new_mr(&A, 4096, LW);
	/* 10.202.0.77, the peer the attacker plays, as an IPv4-mapped GID */
	ah_attr.grh.dgid.raw[10] = 0xff;
	ah_attr.grh.dgid.raw[11] = 0xff;
	ah_attr.grh.dgid.raw[12] = 10;
	ah_attr.grh.dgid.raw[13] = 202;
	ah_attr.grh.dgid.raw[14] = 0;
	ah_attr.grh.dgid.raw[15] = 77;
	np.ah = ibv_create_ah(A.pd, &ah_attr);
	assert_non_null(np.ah);
	write_info("n_requests 1500\nn_replies 3000\nn_gratuitous 1000\nn_other 1000\n"
		   "n_invalid 1000\npeer_ip 10.202.0.77\npeer_mac 02:00:00:00:00:77\n");
	attack("arp", send_to_new_peer, &np);
	assert_true(np.sent);
	assert_int_equal(result("peer_reached"), 1);
	expect_send_ok(np.cq, 1, IBV_WC_SEND);
	assert_int_equal(ibv_destroy_ah(np.ah), 0);

	assert_int_equal(dev_xstat(A.ctx, "port.arp_invalid") - inv0, 1000);
	ign = dev_xstat(A.ctx, "port.arp_ignored_unsolicited") - ign0;
	/* Every frame nobody asked for, and the requests that found the table full. */
	assert_true(ign >= 5000 && ign <= 5000 + 1500);
	/* The strangers filled the table... */
	assert_true(dev_xstat(A.ctx, "port.arp_learned") - learn0 >= 200);
	/* ...and the new peer still found a slot. */
	assert_true(dev_xstat(A.ctx, "port.arp_evicted") - evict0 >= 1);
	/* A request for dpv0's address is answered, learned or not. */
	assert_true(dev_xstat(A.ctx, "port.arp_replies_sent") - rep0 >= 1500);
	assert_int_equal(ibv_poll_cq(np.cq, 1, &wc), 0);
	normal_exchange();
}

/* ---- spoofed requests ---- */

/*
 * At a connected QP of dpv0: SENDs with its QP number and expected PSN from an address
 * that is not its peer's; from its peer's address, SENDs ahead of the PSN window, and
 * WRITEs and READs behind it. None may place data or end the connection.
 */
static void spoofed_requests_outside_window_do_nothing(void **state)
{
	struct rc_pair p;
	struct ibv_mr *amr, *smr;
	struct ibv_wc wc;
	uint64_t src0 = dev_xstat(A.ctx, "xport.rx_bad_src");
	uint64_t acc0 = dev_xstat(A.ctx, "xport.access_errors");
	uint64_t oos0, dup0;

	(void)state;
	rc_pair(&p, &conn_default);
	amr = new_mr(&A, 65536, RW);
	fill_pattern(amr->addr, 65536, 41);
	assert_int_equal(post_recv(p.a, 100, amr->addr, 4096, amr->lkey), 0);
	oos0 = qp_xstat(p.a, "qp.out_of_seq");
	dup0 = qp_xstat(p.a, "qp.dup_requests");
	write_info("qpn %u\nepsn %u\nn 300\n", p.a->qp_num, PSN_TO_A);
	attack("requests", NULL, NULL);
	assert_int_equal(result("foreign_src"), 300);
	assert_int_equal(dev_xstat(A.ctx, "xport.rx_bad_src") - src0, 300);
	assert_int_equal(qp_xstat(p.a, "qp.out_of_seq") - oos0, 300);
	assert_int_equal(qp_xstat(p.a, "qp.dup_requests") - dup0, 300 + 100);
	/* The duplicate READs named keys nobody has. */
	assert_int_equal(dev_xstat(A.ctx, "xport.access_errors") - acc0, 100);
	assert_int_equal(qp_state_of(p.a), IBV_QPS_RTS);
	/* Not one forged SEND took a receive. */
	expect_quiet(p.acq);
	assert_true(check_pattern(amr->addr, 65536, 41));
	/* The connection goes on: the first real SEND takes the receive the forged ones
	 * found waiting. */
	smr = new_mr(&B, 4096, LW);
	fill_pattern(smr->addr, 4096, 42);
	assert_int_equal(post_send(p.b, IBV_WR_SEND, 101, smr->addr, 4096, smr->lkey,
				   IBV_SEND_SIGNALED), 0);
	expect_send_ok(p.bcq, 101, IBV_WC_SEND);
	expect_wc(p.acq, &wc);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 100);
	assert_int_equal(wc.byte_len, 4096);
	assert_true(check_pattern(amr->addr, 4096, 42));
	rc_exchange(&p);
	normal_exchange();
}

/* ---- spoofed responses ---- */

/*
 * At a requester of dpv0 with nothing outstanding: ACKs, NAKs of every kind and READ
 * responses, from its peer's address with PSNs it never sent, and NAKs from a stranger.
 */
static void spoofed_responses_are_ignored(void **state)
{
	struct rc_pair p;
	uint64_t src0 = dev_xstat(A.ctx, "xport.rx_bad_src");
	uint64_t ghost0, dup0;

	(void)state;
	rc_pair(&p, &conn_default);
	ghost0 = qp_xstat(p.a, "qp.ghost_responses");
	dup0 = qp_xstat(p.a, "qp.dup_responses");
	write_info("qpn %u\nnext_psn %u\nn 200\n", p.a->qp_num, PSN_FROM_A);
	attack("responses", NULL, NULL);
	assert_int_equal(dev_xstat(A.ctx, "xport.rx_bad_src") - src0, 200);
	assert_int_equal(qp_xstat(p.a, "qp.ghost_responses") - ghost0 +
				 qp_xstat(p.a, "qp.dup_responses") - dup0, 3 * 200);
	assert_int_equal(qp_state_of(p.a), IBV_QPS_RTS);
	expect_quiet(p.acq);
	rc_exchange(&p);
	normal_exchange();
}

/* ---- in-window accesses outside what the keys allow ---- */

#define GUARD 4096u
#define N_ACCESS 8

/* A registered page with a guard page of the same pattern on each side. */
struct guarded {
	uint8_t *buf;
	struct ibv_mr *mr;
	uint32_t seed;
};

static void guarded_mr(struct guarded *g, unsigned int access, uint32_t seed)
{
	g->buf = new_buf(3 * GUARD);
	g->seed = seed;
	fill_pattern(g->buf, 3 * GUARD, seed);
	g->mr = ibv_reg_mr(A.pd, g->buf + GUARD, GUARD, access);
	assert_non_null(g->mr);
}

static void guarded_done(struct guarded *g)
{
	assert_true(check_pattern(g->buf, 3 * GUARD, g->seed));
	assert_int_equal(ibv_dereg_mr(g->mr), 0);
}

/*
 * One in-window request each, from the peer's address, at eight connections of dpv0:
 * a deregistered key, a WRITE past the region's end and one across it, a READ whose
 * range wraps and one of 2 GiB, a WRITE with a read-only key, a READ with a write-only
 * key, and a SEND_MIDDLE with no SEND_FIRST. Each ends its own connection, as IBTA
 * says (the remote access or invalid request NAK, the QP's async event); no byte of
 * the regions or around them changes; the device goes on serving the rest.
 */
static void out_of_range_requests_end_only_their_qp(void **state)
{
	struct rc_pair p[N_ACCESS];
	struct guarded rw, ro, wo;
	struct ibv_mr *stale;
	uint8_t *stale_buf = new_buf(GUARD);
	uint64_t acc0 = dev_xstat(A.ctx, "xport.access_errors");
	char info[2048];
	int len, seen = 0;
	enum ibv_event_type want[N_ACCESS];
	bool got[N_ACCESS] = {0};
	struct ibv_async_event ev;
	uint64_t end;

	(void)state;
	guarded_mr(&rw, RW, 51);
	guarded_mr(&ro, LW | IBV_ACCESS_REMOTE_READ, 52);
	guarded_mr(&wo, LW | IBV_ACCESS_REMOTE_WRITE, 53);
	stale = ibv_reg_mr(A.pd, stale_buf, GUARD, RW);
	assert_non_null(stale);
	uint32_t stale_rkey = stale->rkey;
	assert_int_equal(ibv_dereg_mr(stale), 0);
	for (int i = 0; i < N_ACCESS; i++) {
		rc_pair(&p[i], &conn_default);
		want[i] = IBV_EVENT_QP_ACCESS_ERR;
	}
	want[N_ACCESS - 1] = IBV_EVENT_QP_REQ_ERR;
	uintptr_t base = (uintptr_t)rw.mr->addr;
	len = snprintf(info, sizeof(info),
		"cases %d\n"
		"case0 write %u %u %u %#lx 64\n"
		"case1 write %u %u %u %#lx 64\n"
		"case2 write %u %u %u %#lx 64\n"
		"case3 read %u %u %u 0xfffffffffffffff0 64\n"
		"case4 read %u %u %u %#lx 0x80000000\n"
		"case5 write %u %u %u %#lx 64\n"
		"case6 read %u %u %u %#lx 64\n"
		"case7 send_middle %u %u 0 0 0\n", N_ACCESS,
		p[0].a->qp_num, PSN_TO_A, stale_rkey, (unsigned long)(uintptr_t)stale_buf,
		p[1].a->qp_num, PSN_TO_A, rw.mr->rkey, (unsigned long)(base + GUARD),
		p[2].a->qp_num, PSN_TO_A, rw.mr->rkey, (unsigned long)(base + GUARD - 16),
		p[3].a->qp_num, PSN_TO_A, rw.mr->rkey,
		p[4].a->qp_num, PSN_TO_A, rw.mr->rkey, (unsigned long)base,
		p[5].a->qp_num, PSN_TO_A, ro.mr->rkey, (unsigned long)(uintptr_t)ro.mr->addr,
		p[6].a->qp_num, PSN_TO_A, wo.mr->rkey, (unsigned long)(uintptr_t)wo.mr->addr,
		p[7].a->qp_num, PSN_TO_A);
	assert_true(len > 0 && (size_t)len < sizeof(info));
	write_info("%s", info);
	attack("access", NULL, NULL);
	assert_int_equal(result("sent"), N_ACCESS);
	for (end = now_ms() + WAIT_MS; seen < N_ACCESS && now_ms() < end;) {
		if (!wait_async_event(A.ctx, &ev, WAIT_MS))
			break;
		for (int i = 0; i < N_ACCESS; i++) {
			if (ev.element.qp != p[i].a)
				continue;
			if (ev.event_type != want[i])
				fail_msg("connection %d: event %s, want %s", i,
					 ibv_event_type_str(ev.event_type),
					 ibv_event_type_str(want[i]));
			assert_false(got[i]);
			got[i] = true;
			seen++;
		}
		ibv_ack_async_event(&ev);
	}
	assert_int_equal(seen, N_ACCESS);
	for (int i = 0; i < N_ACCESS; i++) {
		struct ibv_wc wc;

		assert_int_equal(qp_state_of(p[i].a), IBV_QPS_ERR);
		/* The NAKs reached the real peers, for PSNs they never sent: ignored. */
		assert_int_equal(qp_state_of(p[i].b), IBV_QPS_RTS);
		assert_int_equal(ibv_poll_cq(p[i].bcq, 1, &wc), 0);
	}
	assert_int_equal(dev_xstat(A.ctx, "xport.access_errors") - acc0, N_ACCESS - 1);
	guarded_done(&rw);
	guarded_done(&ro);
	guarded_done(&wo);
	normal_exchange();
}

/* ---- a flood of malformed frames ---- */

/* Tell the attacker how many frames dpv0 has taken, at most once a millisecond. */
static void report_rx(void *arg)
{
	uint64_t *last = arg, now = now_ms();
	char text[32];
	int fd, n;

	if (now == *last)
		return;
	*last = now;
	n = snprintf(text, sizeof(text), "%" PRIu64, dev_xstat(A.ctx, "port.rx_frames"));
	fd = open(path_in_dir("rx.tmp"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, (size_t)n), n);
	assert_int_equal(close(fd), 0);
	assert_int_equal(rename(path_in_dir("rx.tmp"), path_in_dir("rx")), 0);
}

/*
 * 100,000 malformed frames at dpv0 (cut short, bytes flipped with and without a right
 * ICRC, lying IPv4 and UDP lengths, fragments, options, any opcode, extreme extension
 * headers, random payloads, other protocols), most of them with its peer's address at
 * its UD QP, its TM SRQ's QP, a QP in error and one in RESET, and QP numbers nobody
 * has; a live connection only from a stranger. The device takes every one, and the
 * live connection and the normal exchange go on.
 */
static void flood_of_malformed_frames(void **state)
{
	struct ibv_cq_ex *tcq = new_cq_ex(&A, 64, IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_TM_INFO);
	struct ibv_srq *tsrq = new_tm_srq(&A, tcq, 16, 16, 16);
	struct ibv_cq *cq = new_cq(&A, 64, NULL, NULL), *bcq = new_cq(&B, 64, NULL, NULL);
	struct ibv_qp *ud = new_qp(&A, IBV_QPT_UD, cq, cq, NULL, 16, 16);
	struct ibv_qp *tq = new_qp(&A, IBV_QPT_RC, cq, ibv_cq_ex_to_cq(tcq), tsrq, 0, 0);
	struct ibv_qp *tpeer = new_qp(&B, IBV_QPT_RC, bcq, bcq, NULL, 16, 16);
	struct ibv_qp *reset = new_qp(&A, IBV_QPT_RC, cq, cq, NULL, 16, 16);
	struct rc_pair dead, live;
	uint64_t rx0 = dev_xstat(A.ctx, "port.rx_frames"), last = 0;
	long lost;

	(void)state;
	ud_to_rts(ud, 0x22222222);
	connect_rc(tq, tpeer, &conn_default);
	rc_pair(&dead, &conn_default);
	qp_to_err(dead.a);
	rc_pair(&live, &conn_default);
	write_info("n %u\nqpns %u,%u,%u,%u,%u\nguarded_qpn %u\nqkey 0x22222222\n", FLOOD_FRAMES,
		   ud->qp_num, tq->qp_num, dead.a->qp_num, reset->qp_num, 0x7ffff0u,
		   live.a->qp_num);
	attack("flood", report_rx, &last);
	assert_int_equal(result("sent"), FLOOD_FRAMES);
	lost = result("lost");
	printf("flood: %u frames sent, %ld lost before the device\n", FLOOD_FRAMES, lost);
	/* dpv0 took every frame that reached it: the attacker never ran ahead of it by
	 * more than half its packet ring. What the kernel or the af_packet driver drops
	 * of such a flood (a few percent) never reaches any program. */
	assert_true(lost < FLOOD_FRAMES / 20);
	assert_true(dev_xstat(A.ctx, "port.rx_frames") - rx0 >= FLOOD_FRAMES - (uint64_t)lost);
	assert_int_equal(qp_state_of(live.a), IBV_QPS_RTS);
	assert_int_equal(qp_state_of(tq), IBV_QPS_RTS);
	expect_quiet_ex(tcq);
	rc_exchange(&live);
	normal_exchange();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		VT(arp_flood_leaves_resolution_working),
		VT(spoofed_requests_outside_window_do_nothing),
		VT(spoofed_responses_are_ignored),
		VT(out_of_range_requests_end_only_their_qp),
		VT(flood_of_malformed_frames),
	};
	const char *ipv4 = getenv("DPV_PORT_IPV4");
	int ret;

	dir = getenv("DPV_HOSTILE_DIR");
	if (dir == NULL || ipv4 == NULL) {
		fprintf(stderr, "run by hostile.sh: DPV_HOSTILE_DIR and DPV_PORT_IPV4 unset\n");
		return 1;
	}
	if (!sides_open(ipv4)) {
		sides_close();
		return 1;
	}
	/* One test by name (a glob), to rerun it alone. */
	if (getenv("DPV_HOSTILE_ONLY") != NULL)
		cmocka_set_test_filter(getenv("DPV_HOSTILE_ONLY"));
	ret = cmocka_run_group_tests_name("hostile", tests, NULL, NULL);
	sides_close();
	return ret;
}
