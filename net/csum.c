/* SPDX-License-Identifier: MIT
 * Internet checksum (net/csum.h). Pure functions, no state. */
#include "net/csum.h"

uint32_t net_csum_add(uint32_t sum, const void *data, size_t len)
{
	const uint8_t *p = data;
	uint64_t s = sum;
	for (; len >= 2; len -= 2, p += 2)
		s += (uint32_t)p[0] << 8 | p[1];
	if (len)
		s += (uint32_t)p[0] << 8;
	while (s >> 32)
		s = (s & 0xffffffffu) + (s >> 32);
	return (uint32_t)s;
}

uint16_t net_csum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

uint32_t net_csum_pseudo(uint32_t src_ip, uint32_t dst_ip, uint8_t proto, uint16_t len)
{
	uint64_t s = (src_ip >> 16) + (src_ip & 0xffff) + (dst_ip >> 16) + (dst_ip & 0xffff) +
		     proto + len;
	while (s >> 32)
		s = (s & 0xffffffffu) + (s >> 32);
	return (uint32_t)s;
}
