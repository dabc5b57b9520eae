/* SPDX-License-Identifier: MIT */
/* tls/accel: urMQTT's PSA transparent driver for the handshake's elliptic-curve maths (P-256
 * ECDSA and ECDH, X25519) on OpenSSL's perlasm arithmetic, generated at build time from
 * Debian's openssl source (ADR-056). mbedTLS reaches it through five hooks a pinned build-time
 * patch adds to its driver wrappers (tools/deps/patches/); everything the driver does not take
 * (other curves, other key types) falls through to mbedTLS's built-in code, which also stays
 * the reference of the differential tests.
 * It also supplies mbedTLS's SHA-256 block function (tls/accel/sha256_process.c, through
 * MBEDTLS_SHA256_PROCESS_ALT), on OpenSSL's SHA-256 perlasm, which accel_set_enabled() leaves on.
 * This is the only header other layers include. */
#ifndef URMQTT_TLS_ACCEL_H
#define URMQTT_TLS_ACCEL_H

#include "lib/compiler.h"

#include <stdbool.h>
#include <stdint.h>

/* Reads the CPU's features the assembly dispatches on (x86_64: CPUID leaf 1 and 7 into
 * OPENSSL_ia32cap_P, with AVX and AVX2 always reported absent because the kernel never enables
 * the AVX register state, ADR-021). Call once on the boot core before any handshake; other cores
 * only read the result afterwards. Idempotent.
 * It also chooses mbedTLS's SHA-256 block code (tls/accel/sha256_process.c): SHA-NI (x86_64) or the
 * Armv8 SHA-256 instructions when the CPU has them; before this call, and without them, the
 * integer code of the same assembly runs. accel_set_enabled() does not change it.
 * On aarch64, mbedTLS's AES and GCM take the AES and PMULL instructions whenever the CPU has
 * both, before this call too: aesce.c asks tls/accel/cpu_aarch64.c (ADR-071). */
void accel_cpu_init(void);

/* Turns the driver on (default) or off; off sends every operation to mbedTLS's built-in code.
 * For benchmarks and tests that compare both in one run: call only while no handshake runs. */
void accel_set_enabled(bool on);
bool accel_enabled(void);

/* One line for the boot log: which arithmetic runs, e.g. "P-256 nistz256 x86_64 ADX, X25519
 * fe64 ADX" or "off". Returned string is static.
 * When the driver is on, the line ends with the SHA-256 code, e.g. ", SHA-256 x86_64 SHA-NI". */
const char *accel_describe(void);

/* The P-256 public keys verification treats as fixed bases (the CA's): each gets a comb table
 * of 37 x 4096 = 151,552 bytes in a static array of ACCEL_P256_TRUSTED_MAX entries (bss),
 * and an ECDSA verification under that exact key (the same 65 bytes) then computes u2*Q like
 * u1*G, by the comb, instead of a window method: the same verdicts in about 40 % of the time
 * (docs/DECISIONS.md ADR-056).
 * A build-time limit, not a configuration key: the accel code is compiled into mbedTLS's
 * archive, which sees no configuration; the image trusts one CA. */
#define ACCEL_P256_TRUSTED_MAX 1u
#define ACCEL_P256_PUBLIC_LEN 65u /* SEC1 uncompressed: 0x04 || X || Y */

/* Registers pub (borrowed; copied) and builds its table (about 1 ms): 0, also when pub is
 * registered already; -E_INVAL when pub is not a P-256 point; -E_NOMEM when
 * ACCEL_P256_TRUSTED_MAX keys are registered (pub's verifications then take the generic
 * path: slower, same verdicts). Boot core, before any other core handshakes and while no
 * verification runs; afterwards the registry and its tables are only read, by every core. */
MUST_CHECK int accel_trust_p256_key(const uint8_t pub[ACCEL_P256_PUBLIC_LEN]);

/* Forgets every registered key (their tables are no longer read). Same calling context as
 * accel_trust_p256_key: tls/handshake.c calls it with its last env's destruction. */
void accel_trust_p256_clear(void);

/* Whether verifications under pub (borrowed) take its table: pub is registered. */
bool accel_p256_key_trusted(const uint8_t pub[ACCEL_P256_PUBLIC_LEN]);

/* Keys registered now, and registrations refused since boot (registry full), for the log. */
unsigned accel_trusted_p256_keys(void);
unsigned accel_trust_p256_refused(void);

#endif
