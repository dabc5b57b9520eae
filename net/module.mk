# SPDX-License-Identifier: MIT
# net/: Ethernet, ARP, IPv4, ICMP, UDP, DHCP (TCP lives in net/tcp/).
PORTABLE_SRCS += net/csum.c
