/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fwd: a user-space forwarder between two network interfaces that impairs what it
 * forwards, the way the kernel's netem qdisc would (loss, duplication, corruption,
 * delay that reorders), for kernels without netem. It knows nothing of dpverbs: it
 * reads every frame that arrives on one interface (an AF_PACKET raw socket on each)
 * and sends it out of the other, both ways, and stops on SIGTERM, SIGINT or SIGHUP,
 * printing what it did as NAME VALUE lines.
 *
 *   fwd [options] IFACE_A IFACE_B     (fwd --help lists the options)
 *
 * Each frame that arrives is, in this order and with these chances (a seeded PRNG, so
 * a seed gives the same choices for the same frames):
 *   lost        not forwarded;
 *   corrupted   one bit of one byte after its headers flipped (Ethernet, VLAN, IPv4,
 *               then UDP, with the InfiniBand BTH when the UDP port is RoCEv2's 4791,
 *               or TCP), so the receiver's check (RoCEv2's ICRC, TCP's checksum)
 *               catches it; a frame with no byte after headers it knows (ARP, IPv6)
 *               is never corrupted;
 *   duplicated  sent twice, the copy at once;
 *   delayed     held for the delay and sent then, while the frames after it pass it
 *               (reordering); when the queue of held frames is full it is sent at once
 *               (counted in queue_full).
 * The rest are forwarded at once, in batches of up to 32 frames a system call. A frame
 * that arrives while a socket's receive buffer (--rcvbuf) is full the kernel drops
 * before this program sees it: rx_dropped counts those, loss the options did not ask
 * for.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BATCH 32
#define ROCE_PORT 4791
#define BTH_LEN 12
/* Ethernet and two VLAN tags: the most a frame adds to the interface's MTU. */
#define L2_MAX (14 + 8)

struct opts {
	double loss, dup, corrupt, delay; /* chances, 0..1 */
	long delay_us;
	unsigned queue;
	int rcvbuf; /* bytes */
	uint64_t seed;
	const char *iface[2];
};

/* What one direction did; printed as "<from>_to_<to>.<name> <value>". */
struct counts {
	uint64_t received, forwarded, lost, duplicated, corrupted, delayed, queue_full;
	uint64_t truncated, send_errors;
	uint64_t rx_dropped; /* by the kernel: the socket's buffer was full */
};

struct held {
	uint64_t due_ns;
	uint32_t len;
	unsigned char *frame;
};

/* One direction: frames read from rx_fd go out of tx_fd. */
struct dir {
	int rx_fd, tx_fd;
	const char *from, *to;
	struct counts c;
	struct held *q; /* ring of held frames, FIFO: one delay for all */
	unsigned q_head, q_len;
	unsigned char *rx_buf; /* BATCH frames of frame_max bytes */
};

static volatile sig_atomic_t stop_signal;
static uint64_t rng_state;
static size_t frame_max;

static void on_signal(int sig)
{
	stop_signal = sig;
}

/* splitmix64: small, seedable, good enough for a test's coin flips. */
static uint64_t rng(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static bool chance(double p)
{
	return p > 0 && (double)(rng() >> 11) * 0x1.0p-53 < p;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: fwd [options] IFACE_A IFACE_B\n"
		"Forwards every frame between two interfaces (AF_PACKET raw sockets, root or\n"
		"CAP_NET_RAW), impairing it as netem would; on SIGTERM, SIGINT or SIGHUP prints\n"
		"its counters (NAME VALUE lines) and exits 0.\n"
		"  --loss PCT       frames lost (0)\n"
		"  --dup PCT        frames sent twice (0)\n"
		"  --corrupt PCT    frames with one bit after their headers flipped (0)\n"
		"  --delay PCT      frames held back, so that later ones pass them (0)\n"
		"  --delay-us US    how long a held frame waits, 1..1000000 (300)\n"
		"  --queue N        held frames at most, each way, 1..65536 (4096)\n"
		"  --rcvbuf MIB     each socket's receive buffer, 1..1024 MiB (64): what a burst\n"
		"                   finds full the kernel drops (counted in rx_dropped)\n"
		"  --seed N         the PRNG's seed (1)\n"
		"  -h, --help       this text\n"
		"PCT is a percentage, 0 to 100 (5, 0.5).\n");
}

static int bad_arg(const char *opt, const char *val, const char *want)
{
	fprintf(stderr, "fwd: %s '%s': %s\n", opt, val, want);
	return 2;
}

static int parse_pct(const char *opt, const char *val, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(val, &end);
	if (errno || end == val || *end || !(v >= 0 && v <= 100))
		return bad_arg(opt, val, "want a percentage from 0 to 100");
	*out = v / 100;
	return 0;
}

static int parse_uint(const char *opt, const char *val, unsigned long long lo,
		      unsigned long long hi, unsigned long long *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(val, &end, 10);
	if (errno || end == val || *end || val[0] == '-' || v < lo || v > hi) {
		char want[80];

		snprintf(want, sizeof(want), "want a whole number from %llu to %llu", lo, hi);
		return bad_arg(opt, val, want);
	}
	*out = v;
	return 0;
}

/* Returns 0, 1 for --help (exit 0), or an exit status. */
static int parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option longs[] = {
		{"loss", required_argument, NULL, 'l'},
		{"dup", required_argument, NULL, 'd'},
		{"corrupt", required_argument, NULL, 'c'},
		{"delay", required_argument, NULL, 'D'},
		{"delay-us", required_argument, NULL, 'u'},
		{"queue", required_argument, NULL, 'q'},
		{"rcvbuf", required_argument, NULL, 'r'},
		{"seed", required_argument, NULL, 's'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	unsigned long long v;
	int c, rc = 0;

	*o = (struct opts){.delay_us = 300, .queue = 4096, .rcvbuf = 64 << 20, .seed = 1};
	while ((c = getopt_long(argc, argv, "h", longs, NULL)) != -1) {
		switch (c) {
		case 'l': rc = parse_pct("--loss", optarg, &o->loss); break;
		case 'd': rc = parse_pct("--dup", optarg, &o->dup); break;
		case 'c': rc = parse_pct("--corrupt", optarg, &o->corrupt); break;
		case 'D': rc = parse_pct("--delay", optarg, &o->delay); break;
		case 'u':
			rc = parse_uint("--delay-us", optarg, 1, 1000000, &v);
			o->delay_us = (long)v;
			break;
		case 'q':
			rc = parse_uint("--queue", optarg, 1, 65536, &v);
			o->queue = (unsigned)v;
			break;
		case 'r':
			rc = parse_uint("--rcvbuf", optarg, 1, 1024, &v);
			o->rcvbuf = (int)(v << 20);
			break;
		case 's':
			rc = parse_uint("--seed", optarg, 0, UINT64_MAX, &v);
			o->seed = v;
			break;
		case 'h': usage(stdout); return 1;
		default: fprintf(stderr, "fwd: see fwd --help\n"); return 2;
		}
		if (rc)
			return rc;
	}
	if (argc - optind != 2) {
		fprintf(stderr, "fwd: want two interfaces, IFACE_A and IFACE_B (see fwd --help)\n");
		return 2;
	}
	o->iface[0] = argv[optind];
	o->iface[1] = argv[optind + 1];
	if (strcmp(o->iface[0], o->iface[1]) == 0) {
		fprintf(stderr, "fwd: IFACE_A and IFACE_B are both '%s'\n", o->iface[0]);
		return 2;
	}
	return 0;
}

/*
 * A raw socket that takes every frame arriving on ifindex, in promiscuous mode (a NIC
 * would otherwise filter frames for other MACs), and none that leaves it: those are
 * this process's own. Bound before it takes any protocol, so no frame of another
 * interface is queued meanwhile. Its receive buffer is rcvbuf bytes, past
 * net.core.rmem_max where the process may (SO_RCVBUFFORCE): a peer's burst (a READ's
 * responses) must not be lost here beyond what the options ask. Returns the socket, or
 * -1 having said why.
 */
static int open_port(const char *name, int ifindex, int rcvbuf)
{
	struct sockaddr_ll sll = {
		.sll_family = AF_PACKET,
		.sll_protocol = htons(ETH_P_ALL),
		.sll_ifindex = ifindex,
	};
	struct packet_mreq mr = {.mr_ifindex = ifindex, .mr_type = PACKET_MR_PROMISC};
	int one = 1, fd;

	fd = socket(AF_PACKET, SOCK_RAW, 0);
	if (fd < 0) {
		fprintf(stderr, "fwd: socket(AF_PACKET): %s%s\n", strerror(errno),
			errno == EPERM ? " (needs root or CAP_NET_RAW)" : "");
		return -1;
	}
	if (bind(fd, (struct sockaddr *)&sll, sizeof(sll)) < 0 ||
	    setsockopt(fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mr, sizeof(mr)) < 0 ||
	    setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one)) < 0) {
		fprintf(stderr, "fwd: %s: %s\n", name, strerror(errno));
		close(fd);
		return -1;
	}
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)) < 0 &&
	    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)) < 0) {
		fprintf(stderr, "fwd: %s: SO_RCVBUF: %s\n", name, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/* The largest frame the interface passes: its MTU and a link header. */
static int iface_frame_max(int fd, const char *name, size_t *out)
{
	struct ifreq ifr = {0};

	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	if (ioctl(fd, SIOCGIFMTU, &ifr) < 0) {
		fprintf(stderr, "fwd: %s: its MTU: %s\n", name, strerror(errno));
		return -1;
	}
	*out = (size_t)ifr.ifr_mtu + L2_MAX;
	return 0;
}

/* Where the bytes after the headers this program knows start; 0 when none follow. */
static size_t payload_off(const unsigned char *f, size_t len)
{
	size_t off = 12, ihl, l4;
	uint16_t type;

	for (;;) {
		if (len < off + 2)
			return 0;
		type = (uint16_t)(f[off] << 8 | f[off + 1]);
		off += 2;
		if (type != 0x8100 && type != 0x88a8)
			break;
		off += 2; /* the VLAN tag's TCI; its type follows */
	}
	if (type != 0x0800 || len < off + 20 || (f[off] >> 4) != 4)
		return 0;
	ihl = (size_t)(f[off] & 0xf) * 4;
	l4 = off + ihl;
	if (ihl < 20 || len < l4)
		return 0;
	switch (f[off + 9]) {
	case IPPROTO_UDP:
		if (len < l4 + 8)
			return 0;
		off = l4 + 8;
		if ((f[l4 + 2] << 8 | f[l4 + 3]) == ROCE_PORT)
			off += BTH_LEN;
		break;
	case IPPROTO_TCP:
		if (len < l4 + 20)
			return 0;
		off = l4 + (size_t)(f[l4 + 12] >> 4) * 4;
		break;
	default:
		return 0;
	}
	return off < len ? off : 0;
}

static bool corrupt_frame(unsigned char *f, size_t len)
{
	size_t off = payload_off(f, len);

	if (!off)
		return false;
	f[off + rng() % (len - off)] ^= (unsigned char)(1u << (rng() % 8));
	return true;
}

/* Sends n frames out of d's TX interface; what the kernel refuses is counted. */
static void send_frames(struct dir *d, struct mmsghdr *m, unsigned n)
{
	unsigned done = 0;
	int r;

	while (done < n) {
		r = sendmmsg(d->tx_fd, m + done, n - done, 0);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			/* The frame at done is refused (too long, no buffer): skip it. */
			d->c.send_errors++;
			done++;
			continue;
		}
		d->c.forwarded += (unsigned)r;
		done += (unsigned)r;
	}
}

/* What the batch sends: up to two entries a received frame (one for a duplicate). */
struct out {
	struct mmsghdr m[2 * BATCH];
	struct iovec iov[2 * BATCH];
	unsigned n;
};

static void out_add(struct out *o, unsigned char *frame, size_t len)
{
	o->iov[o->n] = (struct iovec){.iov_base = frame, .iov_len = len};
	o->m[o->n] = (struct mmsghdr){.msg_hdr = {.msg_iov = &o->iov[o->n], .msg_iovlen = 1}};
	o->n++;
}

/* Reads what has arrived on d's RX interface, impairs it and forwards or holds it. */
static void forward(struct dir *d, const struct opts *o, uint64_t now)
{
	struct mmsghdr m[BATCH];
	struct iovec iov[BATCH];
	struct out out = {.n = 0};
	int r, i;

	for (i = 0; i < BATCH; i++) {
		iov[i] = (struct iovec){.iov_base = d->rx_buf + (size_t)i * frame_max,
					.iov_len = frame_max};
		m[i] = (struct mmsghdr){.msg_hdr = {.msg_iov = &iov[i], .msg_iovlen = 1}};
	}
	r = recvmmsg(d->rx_fd, m, BATCH, MSG_DONTWAIT | MSG_TRUNC, NULL);
	if (r <= 0)
		return;
	for (i = 0; i < r; i++) {
		unsigned char *f = iov[i].iov_base;
		size_t len = m[i].msg_len;

		d->c.received++;
		if (m[i].msg_hdr.msg_flags & MSG_TRUNC) {
			d->c.truncated++;
			continue;
		}
		if (chance(o->loss)) {
			d->c.lost++;
			continue;
		}
		if (chance(o->corrupt) && corrupt_frame(f, len))
			d->c.corrupted++;
		if (chance(o->dup)) {
			d->c.duplicated++;
			out_add(&out, f, len);
		}
		if (chance(o->delay)) {
			if (d->q_len < o->queue) {
				struct held *h = &d->q[(d->q_head + d->q_len++) % o->queue];

				memcpy(h->frame, f, len);
				h->len = (uint32_t)len;
				h->due_ns = now + (uint64_t)o->delay_us * 1000;
				d->c.delayed++;
				continue;
			}
			d->c.queue_full++;
		}
		out_add(&out, f, len);
	}
	send_frames(d, out.m, out.n);
}

/* Sends the held frames that are due, oldest first. */
static void release(struct dir *d, const struct opts *o, uint64_t now)
{
	struct out out;

	while (d->q_len && d->q[d->q_head].due_ns <= now) {
		out.n = 0;
		while (d->q_len && out.n < BATCH && d->q[d->q_head].due_ns <= now) {
			struct held *h = &d->q[d->q_head];

			out_add(&out, h->frame, h->len);
			d->q_head = (d->q_head + 1) % o->queue;
			d->q_len--;
		}
		send_frames(d, out.m, out.n);
	}
}

static void print_counts(const struct dir *d)
{
	const struct counts *c = &d->c;
	const struct {
		const char *name;
		uint64_t v;
	} rows[] = {
		{"received", c->received}, {"forwarded", c->forwarded}, {"lost", c->lost},
		{"duplicated", c->duplicated}, {"corrupted", c->corrupted},
		{"delayed", c->delayed}, {"queue_full", c->queue_full},
		{"truncated", c->truncated}, {"send_errors", c->send_errors},
		{"rx_dropped", c->rx_dropped},
	};
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		printf("%s_to_%s.%s %" PRIu64 "\n", d->from, d->to, rows[i].name, rows[i].v);
}

static void free_dir(struct dir *d, unsigned queue)
{
	unsigned i;

	if (d->q)
		for (i = 0; i < queue; i++)
			free(d->q[i].frame);
	free(d->q);
	free(d->rx_buf);
}

static int alloc_dir(struct dir *d, unsigned queue)
{
	unsigned i;

	d->rx_buf = malloc(BATCH * frame_max);
	d->q = calloc(queue, sizeof(*d->q));
	if (!d->rx_buf || !d->q)
		return -1;
	for (i = 0; i < queue; i++)
		if (!(d->q[i].frame = malloc(frame_max)))
			return -1;
	return 0;
}

/*
 * Forwards until a signal (returns 0) or a socket fails (-1: its interface went away
 * or down); the earliest held frame bounds each wait.
 */
static int run(struct dir dirs[2], const struct opts *o, const sigset_t *wait_mask)
{
	struct pollfd pfd[2] = {
		{.fd = dirs[0].rx_fd, .events = POLLIN},
		{.fd = dirs[1].rx_fd, .events = POLLIN},
	};
	int i;

	while (!stop_signal) {
		uint64_t now = now_ns(), due = UINT64_MAX;
		struct timespec ts, *tsp = NULL;

		for (i = 0; i < 2; i++)
			if (dirs[i].q_len && dirs[i].q[dirs[i].q_head].due_ns < due)
				due = dirs[i].q[dirs[i].q_head].due_ns;
		if (due != UINT64_MAX) {
			uint64_t wait = due > now ? due - now : 0;

			ts.tv_sec = (time_t)(wait / 1000000000u);
			ts.tv_nsec = (long)(wait % 1000000000u);
			tsp = &ts;
		}
		if (ppoll(pfd, 2, tsp, wait_mask) < 0 && errno != EINTR) {
			fprintf(stderr, "fwd: ppoll: %s\n", strerror(errno));
			return -1;
		}
		now = now_ns();
		for (i = 0; i < 2; i++) {
			if (pfd[i].revents & (POLLERR | POLLHUP | POLLNVAL)) {
				fprintf(stderr, "fwd: %s: the socket failed (poll events %#x)\n",
					dirs[i].from, (unsigned)pfd[i].revents);
				return -1;
			}
			if (pfd[i].revents & POLLIN)
				forward(&dirs[i], o, now);
			release(&dirs[i], o, now);
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct dir dirs[2] = {{.rx_fd = -1, .tx_fd = -1}, {.rx_fd = -1, .tx_fd = -1}};
	int fds[2] = {-1, -1}, ifindex[2], rc, i;
	sigset_t block, wait_mask;
	struct sigaction sa = {.sa_handler = on_signal};
	struct opts o;
	size_t fm;

	rc = parse_args(argc, argv, &o);
	if (rc)
		return rc == 1 ? 0 : rc;
	rng_state = o.seed;

	/* Signals come only inside ppoll(), so a system call elsewhere is never cut short. */
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGHUP);
	sigprocmask(SIG_BLOCK, &block, &wait_mask);
	sigdelset(&wait_mask, SIGTERM);
	sigdelset(&wait_mask, SIGINT);
	sigdelset(&wait_mask, SIGHUP);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);

	rc = 1;
	for (i = 0; i < 2; i++) {
		ifindex[i] = (int)if_nametoindex(o.iface[i]);
		if (!ifindex[i]) {
			fprintf(stderr, "fwd: interface '%s': %s\n", o.iface[i], strerror(errno));
			goto out;
		}
		fds[i] = open_port(o.iface[i], ifindex[i], o.rcvbuf);
		if (fds[i] < 0 || iface_frame_max(fds[i], o.iface[i], &fm) < 0)
			goto out;
		if (fm > frame_max)
			frame_max = fm;
	}
	for (i = 0; i < 2; i++) {
		dirs[i] = (struct dir){.rx_fd = fds[i], .tx_fd = fds[1 - i],
				       .from = o.iface[i], .to = o.iface[1 - i]};
		if (alloc_dir(&dirs[i], o.queue) < 0) {
			fprintf(stderr, "fwd: out of memory for %u held frames\n", o.queue);
			goto out;
		}
	}
	printf("fwd: forwarding %s <-> %s: loss %g %%, duplication %g %%, corruption %g %%, "
	       "%g %% delayed %ld us, seed %" PRIu64 "\n",
	       o.iface[0], o.iface[1], o.loss * 100, o.dup * 100, o.corrupt * 100,
	       o.delay * 100, o.delay_us, o.seed);
	fflush(stdout);
	rc = run(dirs, &o, &wait_mask) ? 1 : 0;
	for (i = 0; i < 2; i++) {
		struct tpacket_stats st;
		socklen_t len = sizeof(st);

		if (getsockopt(dirs[i].rx_fd, SOL_PACKET, PACKET_STATISTICS, &st, &len) == 0)
			dirs[i].c.rx_dropped = st.tp_drops;
	}
	if (!rc)
		printf("fwd: stopped by %s\n", strsignal(stop_signal));
	for (i = 0; i < 2; i++)
		print_counts(&dirs[i]);
	fflush(stdout);
out:
	for (i = 0; i < 2; i++) {
		free_dir(&dirs[i], o.queue);
		if (fds[i] >= 0)
			close(fds[i]);
	}
	return rc;
}
