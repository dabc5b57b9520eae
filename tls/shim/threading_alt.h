/* SPDX-License-Identifier: MIT
 * mbedTLS's mutex type in the x86_64 image (MBEDTLS_THREADING_ALT, ADR-026): a spinlock.
 * mbedTLS holds its mutexes for a few hundred instructions (a key slot's state, PSA's
 * global flags), only in a core's loop, never in an interrupt handler. Implemented by
 * tls/shim/threading_kernel.c. */
#ifndef URMQTT_TLS_SHIM_THREADING_ALT_H
#define URMQTT_TLS_SHIM_THREADING_ALT_H
typedef struct mbedtls_threading_mutex_t {
	unsigned int locked; /* 0 free, 1 held; only through __atomic builtins */
	unsigned char valid; /* between init and free */
} mbedtls_threading_mutex_t;
#endif
