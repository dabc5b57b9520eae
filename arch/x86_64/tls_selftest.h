/* SPDX-License-Identifier: MIT
 *
 * x86_64: the boot self-test of mbedTLS and the TLS record layer in the image (see
 * tls_selftest.c). It installs mbedTLS's allocator/clock/entropy hooks for the image, so
 * it runs once on the boot core after the heap and the CSPRNG exist and before any TLS
 * connection; it never stops the boot.
 */
#ifndef ARCH_X86_64_TLS_SELFTEST_H
#define ARCH_X86_64_TLS_SELFTEST_H

#include "lib/compiler.h"

/* Run the known-answer tests and the certificate checks; logs "tls: self-test PASS" or
 * FAIL with the step. 0 or a negative -E_* of the failing step. */
int x86_tls_selftest(void) MUST_CHECK;

/* test=tls (development builds): mbedTLS used from every core at once (ADR-026). Setup
 * on the boot core after the self-test; the poll in every core's loop. */
void x86_tls_concurrent_setup(uint32_t n_cores);
int x86_tls_concurrent_poll(void *ctx);

#endif
