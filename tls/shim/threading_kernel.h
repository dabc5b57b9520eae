/* SPDX-License-Identifier: MIT
 * mbedTLS threading for the x86_64 image (ADR-026). */
#ifndef URMQTT_TLS_SHIM_THREADING_KERNEL_H
#define URMQTT_TLS_SHIM_THREADING_KERNEL_H
#include <stdint.h>
/* Install our mutex functions; once, on the boot core, before mbedTLS is first used. */
void tls_threading_init(void);
/* Lock acquisitions, and those that found the lock held (spun), for the concurrency
 * scenario. */
uint64_t tls_threading_locks(void);
uint64_t tls_threading_contended(void);
#endif
