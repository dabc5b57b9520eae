/* SPDX-License-Identifier: MIT
 *
 * UDP endpoints as the configuration writes them: "a.b.c.d" or "a.b.c.d:port" (a dotted
 * quad of four decimal parts 0..255, no leading '+' or spaces; a port 1..65535), and the
 * address classes the configuration allows for them. One parser for the configuration
 * tool (which refuses a bad value at build time) and the kernel (which reads the values
 * the tool accepted). Pure functions; addresses in host order (10.0.2.2 == 0x0a000202).
 */
#ifndef LIB_ENDPOINT_H
#define LIB_ENDPOINT_H

#include "lib/compiler.h"

struct endpoint {
	uint32_t ip;
	uint16_t port;
};

/* s[0..len): 0 and *out, or -E_INVAL. Without ":port" the port is default_port. */
MUST_CHECK int endpoint_parse(const char *s, size_t len, uint16_t default_port, struct endpoint *out /* out */);
/* One host we may send to: not 0.0.0.0/8 ("this network"), 127/8 (our own loopback: the
 * image has none), 224/4 (multicast), 240/4 (reserved) or the limited broadcast. */
bool endpoint_unicast(uint32_t ip);
/* An address of a private network: 10/8, 172.16/12, 192.168/16 (RFC 1918), and the
 * shared address space 100.64/10 (RFC 6598: carrier-grade NAT, where an operator's
 * private servers may sit). Our SNTP client asks only these, so the wall clock never
 * depends on a public server the operator did not put next to the broker. */
bool endpoint_private(uint32_t ip);

#endif
