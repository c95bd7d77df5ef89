/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A two-rank MPI ping-pong and bandwidth run whose every byte received is checked.
 *
 *   mpi_check pingpong ITERS SIZE...   rank 0 sends, rank 1 checks and answers with a
 *                                      pattern of its own, which rank 0 checks; per
 *                                      size, the half round trip in microseconds
 *   mpi_check bw ITERS WINDOW SIZE...  rank 0 sends WINDOW messages at once, each of
 *                                      its own tag and pattern, rank 1 receives them
 *                                      all, checks each and answers with one byte; per
 *                                      size, MB/s of checked data
 *
 * The pattern of a message depends on its direction, iteration, window slot and size,
 * and on every byte's offset, so a message delivered twice, out of place or short is
 * caught as well as a corrupted one. A mismatch, a short receive or a wrong source or
 * tag prints what was expected and ends the job (MPI_Abort, status 1). Each size ends
 * in one line per rank 0:
 *
 *   pingpong SIZE bytes ITERS iters LAT us checked BYTES
 *   bw SIZE bytes ITERS x WINDOW MBPS MB/s checked BYTES
 *
 * where BYTES counts the bytes both ranks checked.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#define TAG_ACK 0x7fff

static int rank;

static uint8_t pattern_byte(uint32_t seed, size_t off)
{
	uint32_t v = seed * 2654435761u + (uint32_t)off * 40503u + (uint32_t)(off >> 16);

	return (uint8_t)(v ^ (v >> 13) ^ (v >> 24));
}

static uint32_t seed_of(int dir, uint32_t iter, uint32_t slot, size_t size)
{
	return ((uint32_t)dir << 30) ^ (iter << 12) ^ (slot << 4) ^ (uint32_t)size;
}

static void fill(uint8_t *buf, size_t size, uint32_t seed)
{
	for (size_t i = 0; i < size; i++)
		buf[i] = pattern_byte(seed, i);
}

static void check(const uint8_t *buf, size_t size, uint32_t seed, const MPI_Status *st,
		  int source, int tag, const char *what, uint32_t iter)
{
	int count = -1;

	MPI_Get_count(st, MPI_BYTE, &count);
	if (st->MPI_SOURCE != source || st->MPI_TAG != tag || count != (int)size) {
		fprintf(stderr,
			"rank %d: %s iteration %" PRIu32 ": got %d bytes from rank %d tag %d, "
			"want %zu from rank %d tag %d\n",
			rank, what, iter, count, st->MPI_SOURCE, st->MPI_TAG, size, source, tag);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	for (size_t i = 0; i < size; i++) {
		if (buf[i] != pattern_byte(seed, i)) {
			fprintf(stderr,
				"rank %d: %s iteration %" PRIu32 " size %zu: byte %zu is 0x%02x, "
				"want 0x%02x\n",
				rank, what, iter, size, i, buf[i], pattern_byte(seed, i));
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
	}
}

static void pingpong(uint32_t iters, size_t size, uint8_t *sbuf, uint8_t *rbuf)
{
	int peer = 1 - rank;
	MPI_Status st;
	double t0 = 0;

	MPI_Barrier(MPI_COMM_WORLD);
	t0 = MPI_Wtime();
	for (uint32_t i = 0; i < iters; i++) {
		if (rank == 0) {
			fill(sbuf, size, seed_of(0, i, 0, size));
			MPI_Send(sbuf, (int)size, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
			MPI_Recv(rbuf, (int)size, MPI_BYTE, peer, 2, MPI_COMM_WORLD, &st);
			check(rbuf, size, seed_of(1, i, 0, size), &st, peer, 2, "pong", i);
		} else {
			MPI_Recv(rbuf, (int)size, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &st);
			check(rbuf, size, seed_of(0, i, 0, size), &st, peer, 1, "ping", i);
			fill(sbuf, size, seed_of(1, i, 0, size));
			MPI_Send(sbuf, (int)size, MPI_BYTE, peer, 2, MPI_COMM_WORLD);
		}
	}
	if (rank == 0)
		printf("pingpong %zu bytes %" PRIu32 " iters %.3f us checked %" PRIu64 "\n", size,
		       iters, (MPI_Wtime() - t0) * 1e6 / (2.0 * iters),
		       (uint64_t)size * iters * 2);
}

static void bandwidth(uint32_t iters, uint32_t window, size_t size, uint8_t *bufs)
{
	MPI_Request *req = calloc(window, sizeof(*req));
	MPI_Status *st = calloc(window, sizeof(*st));
	int peer = 1 - rank;
	uint8_t ack = 0;
	double t0;

	if (req == NULL || st == NULL) {
		fprintf(stderr, "rank %d: out of memory\n", rank);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	t0 = MPI_Wtime();
	for (uint32_t i = 0; i < iters; i++) {
		for (uint32_t w = 0; w < window; w++) {
			uint8_t *b = bufs + (size_t)w * size;

			if (rank == 0) {
				fill(b, size, seed_of(0, i, w, size));
				MPI_Isend(b, (int)size, MPI_BYTE, peer, (int)w + 1, MPI_COMM_WORLD,
					  &req[w]);
			} else {
				memset(b, 0, size);
				MPI_Irecv(b, (int)size, MPI_BYTE, peer, (int)w + 1, MPI_COMM_WORLD,
					  &req[w]);
			}
		}
		MPI_Waitall((int)window, req, st);
		if (rank == 1) {
			for (uint32_t w = 0; w < window; w++)
				check(bufs + (size_t)w * size, size, seed_of(0, i, w, size), &st[w],
				      peer, (int)w + 1, "bw", i);
			MPI_Send(&ack, 1, MPI_BYTE, peer, TAG_ACK, MPI_COMM_WORLD);
		} else {
			MPI_Recv(&ack, 1, MPI_BYTE, peer, TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		}
	}
	if (rank == 0) {
		double secs = MPI_Wtime() - t0;
		uint64_t bytes = (uint64_t)size * window * iters;

		printf("bw %zu bytes %" PRIu32 " x %" PRIu32 " %.2f MB/s checked %" PRIu64 "\n",
		       size, iters, window, bytes / secs / 1e6, bytes);
	}
	free(req);
	free(st);
}

static unsigned long number(const char *s, unsigned long max)
{
	char *end;
	unsigned long v = strtoul(s, &end, 10);

	if (*s == '\0' || *end != '\0' || v == 0 || v > max) {
		if (rank == 0)
			fprintf(stderr, "mpi_check: '%s' is not a number from 1 to %lu\n", s, max);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	return v;
}

int main(int argc, char **argv)
{
	int size, first, bw;
	uint32_t iters, window = 1;
	uint8_t *a, *b;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size != 2 || argc < 4 || (strcmp(argv[1], "pingpong") && strcmp(argv[1], "bw"))) {
		if (rank == 0)
			fprintf(stderr, "usage (2 ranks): mpi_check pingpong ITERS SIZE... | "
					"mpi_check bw ITERS WINDOW SIZE...\n");
		MPI_Finalize();
		return 2;
	}
	bw = strcmp(argv[1], "bw") == 0;
	iters = (uint32_t)number(argv[2], 1000000);
	if (bw)
		window = (uint32_t)number(argv[3], 1024);
	first = bw ? 4 : 3;
	for (int i = first; i < argc; i++) {
		size_t n = number(argv[i], 64ul << 20);

		a = malloc(n * window);
		b = malloc(n);
		if (a == NULL || b == NULL) {
			fprintf(stderr, "rank %d: cannot allocate %zu bytes\n", rank, n * window);
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
		if (bw)
			bandwidth(iters, window, n, a);
		else
			pingpong(iters, n, a, b);
		fflush(stdout);
		free(a);
		free(b);
	}
	MPI_Finalize();
	return 0;
}
