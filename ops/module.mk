# SPDX-License-Identifier: MIT
# ops/: what operators see without a shell: syslog (RFC 5424) and statsd lines, the
# SNTP client's codec and vote, the broker's health.
PORTABLE_SRCS += $(sort $(wildcard ops/*.c))
