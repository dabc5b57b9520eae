/* SPDX-License-Identifier: MIT
 *
 * Optional packet capture of the hosted NIC (--pcap FILE): every frame the stack
 * processes and every frame written to the TAP, in the classic pcap format (link type
 * Ethernet), so a failing test can be read with any pcap tool. Debugging aid only:
 * buffered stdio, no allocation per packet, errors disable the capture.
 */
#include <stdio.h>
#include <time.h>

#include "hosted/hosted.h"

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

int hosted_pcap_open(struct hosted_pcap *pc, const char *path)
{
	uint8_t h[24] = {0};
	FILE *f = fopen(path, "wb");
	pc->f = f;
	if (!f)
		return -1;
	put32(h, 0xa1b2c3d4u);   /* microsecond timestamps, written little-endian */
	h[4] = 2;                /* version 2.4 */
	h[6] = 4;
	put32(h + 16, 65535);    /* snaplen */
	put32(h + 20, 1);        /* LINKTYPE_ETHERNET */
	if (fwrite(h, sizeof h, 1, f) != 1) {
		hosted_pcap_close(pc);
		return -1;
	}
	return 0;
}

void hosted_pcap_frame(struct hosted_pcap *pc, const uint8_t *frame, size_t len)
{
	struct timespec ts;
	uint8_t h[16];
	if (!pc->f)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	put32(h, (uint32_t)ts.tv_sec);
	put32(h + 4, (uint32_t)(ts.tv_nsec / 1000));
	put32(h + 8, (uint32_t)len);
	put32(h + 12, (uint32_t)len);
	if (fwrite(h, sizeof h, 1, pc->f) != 1 || fwrite(frame, len, 1, pc->f) != 1) {
		fprintf(stderr, "hosted: pcap write failed; capture stopped\n");
		hosted_pcap_close(pc);
	}
}

void hosted_pcap_close(struct hosted_pcap *pc)
{
	if (pc->f)
		fclose(pc->f);
	pc->f = NULL;
}
