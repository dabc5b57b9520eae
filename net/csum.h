/* SPDX-License-Identifier: MIT
 *
 * The Internet checksum (RFC 1071) shared by IPv4, ICMP, UDP and TCP. Stateless; works on
 * any alignment and any length; the partial sum can be continued across pieces only when
 * each piece except the last has an even length.
 */
#ifndef NET_CSUM_H
#define NET_CSUM_H

#include "lib/compiler.h"

/* Add bytes to a 32-bit partial sum (big-endian 16-bit words). */
uint32_t net_csum_add(uint32_t sum, const void *data, size_t len);
/* Fold a partial sum and return its one's complement, ready to store big-endian. */
uint16_t net_csum_fold(uint32_t sum);
/* Partial sum of the IPv4 pseudo-header for TCP/UDP (addresses in host order). */
uint32_t net_csum_pseudo(uint32_t src_ip, uint32_t dst_ip, uint8_t proto, uint16_t len);

#endif
