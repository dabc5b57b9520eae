/* SPDX-License-Identifier: MIT
 *
 * Wire formats of Ethernet II, ARP for IPv4 (RFC 826), IPv4 (RFC 791), ICMP echo
 * (RFC 792), UDP (RFC 768) and DHCPv4/BOOTP (RFC 2131, 2132): constants and offsets
 * only. Parsers read these formats through struct cur; nothing here overlays structs.
 */
#ifndef NET_WIRE_NET_H
#define NET_WIRE_NET_H

#define NET_ETH_HDR_LEN 14
#define NET_ETH_MIN_FRAME 60 /* without FCS: shorter frames are zero-padded */
#define NET_ETH_TYPE_IPV4 0x0800
#define NET_ETH_TYPE_ARP 0x0806

#define NET_ARP_LEN 28
#define NET_ARP_HTYPE_ETH 1
#define NET_ARP_OP_REQUEST 1
#define NET_ARP_OP_REPLY 2

#define NET_IPV4_HDR_LEN 20
#define NET_IPV4_VER_IHL 0x45 /* version 4, 5 words: the only header we accept */
#define NET_IPV4_FLAG_DF 0x4000
#define NET_IPV4_FLAG_MF 0x2000
#define NET_IPV4_FRAG_MASK 0x1fff
#define NET_IPV4_OFF_CSUM 10
#define NET_IP_PROTO_ICMP 1
#define NET_IP_PROTO_TCP 6
#define NET_IP_PROTO_UDP 17
#define NET_IPV4_BROADCAST 0xffffffffu

#define NET_ICMP_HDR_LEN 8
#define NET_ICMP_ECHO_REPLY 0
#define NET_ICMP_ECHO_REQUEST 8

#define NET_UDP_HDR_LEN 8
#define NET_TCP_MIN_HDR 20

/* DHCP / BOOTP */
#define NET_DHCP_SERVER_PORT 67
#define NET_DHCP_CLIENT_PORT 68
#define NET_DHCP_OP_REQUEST 1
#define NET_DHCP_OP_REPLY 2
#define NET_DHCP_FIXED_LEN 236 /* op .. file, before the magic cookie */
#define NET_DHCP_MAGIC 0x63825363u
#define NET_DHCP_FLAG_BROADCAST 0x8000
#define NET_DHCP_MIN_MSG 300 /* BOOTP minimum, padded with zero options */
#define NET_DHCP_OPT_PAD 0
#define NET_DHCP_OPT_MASK 1
#define NET_DHCP_OPT_ROUTER 3
#define NET_DHCP_OPT_REQ_IP 50
#define NET_DHCP_OPT_LEASE 51
#define NET_DHCP_OPT_MSG_TYPE 53
#define NET_DHCP_OPT_SERVER_ID 54
#define NET_DHCP_OPT_PARAMS 55
#define NET_DHCP_OPT_MAX_SIZE 57
#define NET_DHCP_OPT_T1 58
#define NET_DHCP_OPT_T2 59
#define NET_DHCP_OPT_CLIENT_ID 61
#define NET_DHCP_OPT_END 255
#define NET_DHCP_DISCOVER 1
#define NET_DHCP_OFFER 2
#define NET_DHCP_REQUEST 3
#define NET_DHCP_DECLINE 4
#define NET_DHCP_ACK 5
#define NET_DHCP_NAK 6
#define NET_DHCP_RELEASE 7

#endif
