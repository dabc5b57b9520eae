/* SPDX-License-Identifier: MIT */
/* tls/accel: urMQTT's PSA transparent driver for the handshake's elliptic-curve maths (P-256
 * ECDSA and ECDH, X25519) on OpenSSL's perlasm arithmetic, generated at build time from
 * Debian's openssl source (ADR-056). mbedTLS reaches it through five hooks a pinned build-time
 * patch adds to its driver wrappers (tools/deps/patches/); everything the driver does not take
 * (other curves, other key types) falls through to mbedTLS's built-in code, which also stays
 * the reference of the differential tests.
 * This is the only header other layers include. */
#ifndef URMQTT_TLS_ACCEL_H
#define URMQTT_TLS_ACCEL_H

#include <stdbool.h>

/* Reads the CPU's features the assembly dispatches on (x86_64: CPUID leaf 1 and 7 into
 * OPENSSL_ia32cap_P, with AVX and AVX2 always reported absent because the kernel never enables
 * the AVX register state, ADR-021). Call once on the boot core before any handshake; other cores
 * only read the result afterwards. Idempotent. */
void accel_cpu_init(void);

/* Turns the driver on (default) or off; off sends every operation to mbedTLS's built-in code.
 * For benchmarks and tests that compare both in one run: call only while no handshake runs. */
void accel_set_enabled(bool on);
bool accel_enabled(void);

/* One line for the boot log: which arithmetic runs, e.g. "P-256 nistz256 x86_64 ADX, X25519
 * fe64 ADX" or "off". Returned string is static. */
const char *accel_describe(void);

#endif
