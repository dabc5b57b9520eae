/* SPDX-License-Identifier: MIT
 * Shim <stdlib.h> for mbedTLS compiled freestanding: types only. The configuration
 * (MBEDTLS_PLATFORM_NO_STD_FUNCTIONS) keeps calloc/free/exit out of mbedTLS. */
#ifndef URMQTT_TLS_SHIM_STDLIB_H
#define URMQTT_TLS_SHIM_STDLIB_H
#include <stddef.h>
#endif
