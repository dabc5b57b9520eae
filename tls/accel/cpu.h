/* SPDX-License-Identifier: MIT */
/* tls/accel: the CPU features the assembly dispatches on, one file per architecture
 * (cpu_x86_64.c, cpu_aarch64.c) chosen by the build. Private to tls/accel. */
#ifndef URMQTT_TLS_ACCEL_CPU_H
#define URMQTT_TLS_ACCEL_CPU_H

#include <stdbool.h>

/* Which arithmetic runs, for accel_describe(). Static string. */
const char *accel_cpu_describe(void);

/* Tests and benchmarks: forget the optional instructions (x86_64: MULX/ADX and SHA-NI;
 * aarch64: the SHA-256 instructions, and AES with PMULL for mbedTLS's AES and GCM) so the
 * baseline code paths run, or read them from the CPU again. Only while no handshake, SHA-256
 * or AES computation runs (an AES or GCM context keeps the path it was keyed on). */
void accel_cpu_use_optional(bool on);

/* aarch64 (cpu_aarch64.c): Linux's auxiliary vector entry `type` as mbedTLS's aesce.c reads it
 * through tls/accel/shim/sys/auxv.h, made from the ID registers: for AT_HWCAP, ASIMD (bit 1)
 * when the CPU has Advanced SIMD, and AES (bit 3) and PMULL (bit 4) only when it has both the
 * AES and the PMULL instructions and the optional instructions are in use (mbedTLS takes both
 * on AES's word alone); 0 for any other type. Any core, any time (before accel_cpu_init too). */
unsigned long accel_cpu_getauxval(unsigned long type);

#endif
