/* SPDX-License-Identifier: MIT */
/* tls/accel: the CPU features the assembly dispatches on, one file per architecture
 * (cpu_x86_64.c, cpu_aarch64.c) chosen by the build. Private to tls/accel. */
#ifndef URMQTT_TLS_ACCEL_CPU_H
#define URMQTT_TLS_ACCEL_CPU_H

#include <stdbool.h>

/* Which arithmetic runs, for accel_describe(). Static string. */
const char *accel_cpu_describe(void);

/* Tests and benchmarks: forget the optional instructions (x86_64: MULX/ADX and SHA-NI;
 * aarch64: the SHA-256 instructions) so the baseline code paths run, or read them from the
 * CPU again. Only while no handshake or SHA-256 computation runs. */
void accel_cpu_use_optional(bool on);

#endif
