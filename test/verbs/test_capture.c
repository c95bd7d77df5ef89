/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpv_verbs_capture_start() / _stop() on a running device: the errors of each, and a
 * capture that holds every frame the device counted as captured, in both directions;
 * one whose file stops taking data drops and counts, and the device runs on.
 * (tshark's decoding of what a capture holds is test/wire's.)
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dpv_verbs.h"
#include "test_verbs.h"

#define LW IBV_ACCESS_LOCAL_WRITE
#define MESSAGES 8u

static uint64_t xstat(struct ibv_context *ctx, const char *name)
{
	struct dpv_verbs_xstat xs[256];
	int n = dpv_verbs_query_xstats(ctx, xs, 256);

	assert_true(n > 0 && n <= 256);
	for (int i = 0; i < n; i++)
		if (strcmp(xs[i].name, name) == 0)
			return xs[i].value;
	fail_msg("no counter %s", name);
	return 0;
}

/* Enhanced packet blocks of a pcapng file of this machine's byte order, by direction
 * (the EPB flags option, code 2: 1 inbound, 2 outbound). */
static void count_epbs(const char *path, unsigned int *in, unsigned int *out)
{
	static uint8_t body[65536];
	uint32_t head[2];
	FILE *f = fopen(path, "rb");

	assert_non_null(f);
	*in = *out = 0;
	while (fread(head, 4, 2, f) == 2) {
		assert_true(head[1] >= 12 && head[1] - 8 <= sizeof(body) && head[1] % 4 == 0);
		assert_int_equal(fread(body, 1, head[1] - 8, f), head[1] - 8);
		if (head[0] == 6) {
			uint32_t caplen, off, flags = 0;

			memcpy(&caplen, body + 12, 4);
			off = 20 + ((caplen + 3) & ~3u);
			while (off + 4 <= head[1] - 12) {
				uint16_t code, len;

				memcpy(&code, body + off, 2);
				memcpy(&len, body + off + 2, 2);
				if (code == 2)
					memcpy(&flags, body + off + 4, 4);
				off += 4 + ((len + 3u) & ~3u);
			}
			if ((flags & 3) == 1)
				(*in)++;
			else if ((flags & 3) == 2)
				(*out)++;
			else
				fail_msg("a frame without a direction");
		}
	}
	fclose(f);
}

static void capture_refuses_what_it_cannot_do(void **state)
{
	(void)state;
	assert_int_equal(dpv_verbs_capture_start(NULL, "/tmp/x.pcapng"), EINVAL);
	assert_int_equal(dpv_verbs_capture_start(A.ctx, NULL), EINVAL);
	assert_int_equal(dpv_verbs_capture_start(A.ctx, ""), EINVAL);
	assert_int_equal(dpv_verbs_capture_start(A.ctx, "/nonexistent-dir/x.pcapng"), ENOENT);
	assert_int_equal(dpv_verbs_capture_stop(NULL), EINVAL);
	assert_int_equal(dpv_verbs_capture_stop(A.ctx), ENOENT);
}

/*
 * Start on a running device, SENDs from A to B, stop: the file holds exactly the
 * frames "port.capture_frames" counted, none dropped, A's SENDs going out and B's ACKs
 * coming in; a second start on the same device is refused while one runs.
 */
static void capture_holds_every_frame_it_counted(void **state)
{
	char path[] = "/tmp/dpv-test-capture-XXXXXX";
	uint64_t frames0, dropped0, frames, dropped;
	struct ibv_mr *smr, *rmr;
	unsigned int in, out;
	struct rc_pair p;
	struct ibv_wc wc;
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	rc_pair(&p, &conn_default);
	smr = new_mr(&A, 256, LW);
	rmr = new_mr(&B, 256 * MESSAGES, LW);
	frames0 = xstat(A.ctx, "port.capture_frames");
	dropped0 = xstat(A.ctx, "port.capture_dropped");
	assert_int_equal(dpv_verbs_capture_start(A.ctx, path), 0);
	assert_int_equal(dpv_verbs_capture_start(A.ctx, path), EBUSY);
	for (unsigned int i = 0; i < MESSAGES; i++) {
		assert_int_equal(post_recv(p.b, i, (uint8_t *)rmr->addr + 256 * i, 256,
					   rmr->lkey), 0);
		assert_int_equal(post_send(p.a, IBV_WR_SEND, i, smr->addr, 100, smr->lkey,
					   IBV_SEND_SIGNALED), 0);
		expect_wc(p.bcq, &wc);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		expect_send_ok(p.acq, i, IBV_WC_SEND);
	}
	assert_int_equal(dpv_verbs_capture_stop(A.ctx), 0);
	assert_int_equal(dpv_verbs_capture_stop(A.ctx), ENOENT);
	frames = xstat(A.ctx, "port.capture_frames") - frames0;
	dropped = xstat(A.ctx, "port.capture_dropped") - dropped0;
	count_epbs(path, &in, &out);
	assert_int_equal(dropped, 0);
	assert_int_equal(in + out, frames);
	/* Each SEND went out as one packet and its completion needed an ACK in. */
	assert_true(out >= MESSAGES);
	assert_true(in >= 1);
	/* Stopped, the device captures nothing more. */
	assert_int_equal(xstat(A.ctx, "port.capture_frames") - frames0, frames);
	unlink(path);
}

struct pipe_copy {
	int in;
	FILE *out;
};

/* Copy what the capture writes into the FIFO to a file, until the capture closes it. */
static void *copy_fifo(void *arg)
{
	struct pipe_copy *pc = arg;
	char buf[65536];
	ssize_t n;

	fcntl(pc->in, F_SETFL, fcntl(pc->in, F_GETFL) & ~O_NONBLOCK);
	while ((n = read(pc->in, buf, sizeof(buf))) > 0)
		fwrite(buf, 1, (size_t)n, pc->out);
	return NULL;
}

/*
 * The capture writes into a FIFO that nobody reads: its writer blocks once the pipe is
 * full, its ring and pool fill, and from then on frames are dropped and counted while
 * every SEND completes as before. Once read again, the file holds exactly the frames
 * counted as captured.
 */
static void capture_that_cannot_keep_up_drops_and_counts(void **state)
{
	enum { SENDS = 2500 };
	char dir[] = "/tmp/dpv-test-fifo-XXXXXX", fifo[64], copy[80];
	uint64_t frames0, dropped0, moved0, frames, dropped, moved;
	struct pipe_copy pc;
	struct ibv_mr *smr, *rmr;
	unsigned int in, out;
	pthread_t reader;
	struct rc_pair p;
	struct ibv_wc wc;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	snprintf(copy, sizeof(copy), "%s/copy.pcapng", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	pc.in = open(fifo, O_RDONLY | O_NONBLOCK);
	assert_true(pc.in >= 0);
	pc.out = fopen(copy, "wb");
	assert_non_null(pc.out);
	rc_pair(&p, &conn_default);
	smr = new_mr(&A, 64, LW);
	rmr = new_mr(&B, 64, LW);
	frames0 = xstat(A.ctx, "port.capture_frames");
	dropped0 = xstat(A.ctx, "port.capture_dropped");
	moved0 = xstat(A.ctx, "port.tx_frames") + xstat(A.ctx, "port.rx_frames");
	assert_int_equal(dpv_verbs_capture_start(A.ctx, fifo), 0);
	for (unsigned int i = 0; i < SENDS; i++) {
		assert_int_equal(post_recv(p.b, i, rmr->addr, 64, rmr->lkey), 0);
		assert_int_equal(post_send(p.a, IBV_WR_SEND, i, smr->addr, 64, smr->lkey,
					   IBV_SEND_SIGNALED), 0);
		expect_wc(p.bcq, &wc);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		expect_send_ok(p.acq, i, IBV_WC_SEND);
	}
	/* Read at last, so the writer can finish what it queued and the stop return. */
	assert_int_equal(pthread_create(&reader, NULL, copy_fifo, &pc), 0);
	assert_int_equal(dpv_verbs_capture_stop(A.ctx), 0);
	assert_int_equal(pthread_join(reader, NULL), 0);
	fclose(pc.out);
	close(pc.in);
	frames = xstat(A.ctx, "port.capture_frames") - frames0;
	dropped = xstat(A.ctx, "port.capture_dropped") - dropped0;
	moved = xstat(A.ctx, "port.tx_frames") + xstat(A.ctx, "port.rx_frames") - moved0;
	count_epbs(copy, &in, &out);
	print_message("capture into a stalled FIFO: %lu frames captured, %lu dropped, %lu moved\n",
		      (unsigned long)frames, (unsigned long)dropped, (unsigned long)moved);
	assert_true(dropped > 0);
	assert_int_equal(in + out, frames);
	/* Every frame the port moved while it ran was captured or dropped (an ACK may
	 * come after the stop: moved, not captured). */
	assert_true(frames + dropped <= moved);
	assert_true(frames + dropped >= 2u * SENDS - 1);
	unlink(copy);
	unlink(fifo);
	rmdir(dir);
}

int run_capture_tests(void)
{
	const struct CMUnitTest tests[] = {
		VT(capture_refuses_what_it_cannot_do),
		VT(capture_holds_every_frame_it_counted),
		VT(capture_that_cannot_keep_up_drops_and_counts),
	};

	return cmocka_run_group_tests_name("capture", tests, NULL, NULL);
}
