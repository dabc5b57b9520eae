/* SPDX-License-Identifier: MIT */
/* tls/accel, aarch64: the <sys/auxv.h> mbedTLS's aesce.c includes on Linux targets (our cross
 * compiler defines __linux__ even for the image) to ask getauxval(AT_HWCAP) whether the CPU
 * has Advanced SIMD and the AES instructions. The image has no auxiliary vector: the answer
 * comes from the ID registers instead (accel_cpu_getauxval, tls/accel/cpu_aarch64.c), so
 * mbedTLS's own run-time choice between its AES/GCM code on the Armv8 AES and PMULL
 * instructions and its portable tables stays unpatched (ADR-071). On the include path of
 * aes.c, aesce.c and gcm.c only, in aarch64 flavours (tls/module.mk). */
#ifndef URMQTT_TLS_ACCEL_SHIM_SYS_AUXV_H
#define URMQTT_TLS_ACCEL_SHIM_SYS_AUXV_H

#include "tls/accel/cpu.h"

#define AT_HWCAP 16  /* Linux's auxiliary vector tags */
#define AT_HWCAP2 26
#define getauxval(type) accel_cpu_getauxval(type)

#endif
