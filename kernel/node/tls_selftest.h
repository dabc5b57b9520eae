/* SPDX-License-Identifier: MIT
 *
 * The boot self-test of mbedTLS and the TLS record layer in the image (see
 * tls_selftest.c), on every architecture. It installs mbedTLS's allocator/clock/entropy hooks for the image, so
 * it runs once on the boot core after the heap and the CSPRNG exist and before any TLS
 * connection; it never stops the boot.
 */
#ifndef KERNEL_NODE_TLS_SELFTEST_H
#define KERNEL_NODE_TLS_SELFTEST_H

#include <stddef.h>
#include <stdint.h>

#include "lib/compiler.h"

/* Run the known-answer tests and the certificate checks; logs "tls: self-test PASS" or
 * FAIL with the step. 0 or a negative -E_* of the failing step. */
int node_tls_selftest(void) MUST_CHECK;

/* The development chain's check the self-test runs (also from every core at once by
 * test=tls): parse the embedded CA and server certificates, verify the server's against the
 * CA; their subject CNs in ca_cn and srv_cn (cap bytes each), X.509 verify flags in *flags.
 * 0 or -E_*. Only after node_tls_selftest installed mbedTLS's hooks. */
int node_tls_selftest_certs(char *ca_cn, char *srv_cn, size_t cap, uint32_t *flags) MUST_CHECK;

#endif
