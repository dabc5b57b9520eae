# SPDX-License-Identifier: MIT
# net/tcp/: server-side TCP (SYN cookies, passive state machine, NewReno, timer wheel).
PORTABLE_SRCS += net/tcp/tcp.c net/tcp/tcp_in.c net/tcp/tcp_out.c net/tcp/timer_wheel.c
