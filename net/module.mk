# SPDX-License-Identifier: MIT
# net/: Ethernet, ARP, IPv4, ICMP, UDP, DHCP (TCP lives in net/tcp/).
PORTABLE_SRCS += net/csum.c
PORTABLE_SRCS += net/stack.c net/arp.c net/ipv4.c net/icmp.c net/udp.c net/dhcp.c
PORTABLE_SRCS += net/rss.c
