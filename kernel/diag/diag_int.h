/* SPDX-License-Identifier: MIT
 *
 * Private to kernel/diag/: the measurements' results and the timed loops the files share.
 */
#ifndef KERNEL_DIAG_DIAG_INT_H
#define KERNEL_DIAG_DIAG_INT_H

#include <stdbool.h>
#include <stdint.h>

struct diag_crypto {
	bool ok;                /* the TLS self-test passed and every measurement ran */
	const char *why;        /* static: what failed, when !ok */
	const char *accel;      /* static: which code runs (tls/accel's description) */
	uint64_t sign_milli, verify_milli, x25519_milli; /* operations per second, x1000 */
	uint64_t gcm_mbs_milli, sha_mbs_milli;         /* MB/s (10^6 bytes), x1000 */
};

/* A rate x1000: n units in ns nanoseconds, n * 10^12 / ns (0 when ns is 0), saturating.
 * Three decimals: a loaded emulator can take longer than a whole window for one bulk call. */
uint64_t diag_rate_milli(uint64_t n, uint64_t ns);

/* Run the crypto measurements, each for at least window_ms; now_ns the clock. */
void diag_crypto_measure(struct diag_crypto *out /* out */, uint64_t (*now_ns)(void), uint32_t window_ms);

#endif
