/* SPDX-License-Identifier: MIT
 * Shim <inttypes.h> for mbedTLS compiled freestanding: the integer types only. */
#ifndef URMQTT_TLS_SHIM_INTTYPES_H
#define URMQTT_TLS_SHIM_INTTYPES_H
#include <stdint.h>
#endif
