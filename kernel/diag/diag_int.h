/* SPDX-License-Identifier: MIT
 *
 * Private to kernel/diag/: the run's bounds, the measurements' results and the timed loops
 * the files share.
 */
#ifndef KERNEL_DIAG_DIAG_INT_H
#define KERNEL_DIAG_DIAG_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "kernel/diag/json.h"

/* The bounds of one run (the configuration's [diag] section; kernel/diag/limits.c). */
struct diag_limits {
	uint32_t measure_ms;       /* each timed loop runs at least this long (one op at least) */
	uint32_t mem_buf_bytes;    /* memory copy: two buffers of this size */
	uint64_t disk_read_bytes;  /* read per disk, from LBA 0 */
	uint64_t disk_write_bytes; /* written (after WIPE) per disk, in its free run */
	uint32_t disk_chunk_bytes; /* per request; a multiple of 4 KiB, <= both sizes above */
	uint32_t wipe_prompt_s;    /* the operator's time to type WIPE */
};

/* The configured bounds into out; wipe_prompt_s, when not 0, replaces the configured
 * prompt (the development knob diag_wipe_s=, already range-checked by the platform). */
void diag_limits_get(struct diag_limits *out /* out */, uint32_t wipe_prompt_s);
/* l as the report's "limits" object (a member of the open object j). l borrowed. */
void diag_limits_json(struct diag_json *j, const struct diag_limits *l);

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
