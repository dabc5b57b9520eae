/* SPDX-License-Identifier: MIT */
/* tls/accel: SHA-256's block function for mbedTLS (MBEDTLS_SHA256_PROCESS_ALT in
 * tls/mbedtls_config.h). mbedTLS keeps everything else of SHA-256 (its context, buffering,
 * padding, PSA and HMAC on top) and calls mbedtls_internal_sha256_process() once per 64-byte
 * block, also for long inputs: with PROCESS_ALT its multi-block loop is a static function of
 * its sha256.c that calls this one per block. Each block goes to OpenSSL's
 * sha256_block_data_order, generated at build time (sha256-x86_64 from sha512-x86_64.pl,
 * sha256-armv8 from sha512-armv8.pl; tls/accel/module.mk), which chooses its code on every
 * call from the feature word tls/accel/cpu_<arch>.c fills: SHA-NI or the Armv8 SHA-256
 * instructions when the CPU has them and they are allowed, its integer code otherwise (the
 * cpu file's head says which paths can never run and why).
 * Owns no state; reentrant; callable from any core's loop, never from an interrupt handler
 * (the hardware paths use vector registers, which no context switch saves: ADR-021). */
#include <stddef.h>
#include <stdint.h>

#include "mbedtls/sha256.h"

/* OpenSSL's name and contract: state is SHA-256's eight 32-bit working words a..h in host
 * order (OpenSSL's SHA256_CTX and mbedTLS's context both begin with them), in points at
 * n_blocks * 64 bytes (any alignment). It updates state in place and keeps no pointer. */
void sha256_block_data_order(uint32_t state[8], const void *in, size_t n_blocks);

/* mbedTLS's contract (mbedtls/sha256.h): one block into ctx's state; ctx and data borrowed.
 * Cannot fail. */
int mbedtls_internal_sha256_process(mbedtls_sha256_context *ctx, const unsigned char data[64])
{
	sha256_block_data_order(ctx->MBEDTLS_PRIVATE(state), data, 1);
	return 0;
}
