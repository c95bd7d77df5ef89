/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "dpv_pcap.h"

#define PCAP_MAGIC_NS 0xa1b23c4du
#define LINKTYPE_ETHERNET 1u
#define SNAPLEN 65535u

struct dpv_pcap {
	FILE *f;
};

/* pcap is written in the writer's byte order; readers detect it from the magic. */
static int put(FILE *f, const void *p, size_t n)
{
	return fwrite(p, 1, n, f) == n ? 0 : (errno ? errno : EIO);
}

struct dpv_pcap *dpv_pcap_open(const char *path)
{
	struct {
		uint32_t magic;
		uint16_t major, minor;
		int32_t zone;
		uint32_t sigfigs, snaplen, linktype;
	} hdr = {PCAP_MAGIC_NS, 2, 4, 0, 0, SNAPLEN, LINKTYPE_ETHERNET};
	struct dpv_pcap *p = malloc(sizeof(*p));

	if (p == NULL)
		return NULL;
	p->f = fopen(path, "wb");
	if (p->f == NULL || put(p->f, &hdr, sizeof(hdr)) != 0) {
		int err = errno;

		if (p->f != NULL)
			fclose(p->f);
		free(p);
		errno = err;
		return NULL;
	}
	return p;
}

int dpv_pcap_write(struct dpv_pcap *p, const void *frame, uint32_t len, uint64_t ts_ns)
{
	struct {
		uint32_t sec, nsec, caplen, len;
	} rec = {(uint32_t)(ts_ns / 1000000000u), (uint32_t)(ts_ns % 1000000000u),
		 len < SNAPLEN ? len : SNAPLEN, len};
	int ret = put(p->f, &rec, sizeof(rec));

	return ret != 0 ? ret : put(p->f, frame, rec.caplen);
}

int dpv_pcap_close(struct dpv_pcap *p)
{
	int ret;

	if (p == NULL)
		return 0;
	ret = fclose(p->f) == 0 ? 0 : errno;
	free(p);
	return ret;
}
