/* SPDX-License-Identifier: MIT
 * Shim <assert.h> for mbedTLS compiled freestanding: assert() compiles to nothing
 * (mbedTLS checks its parameters itself); static_assert for C11. */
#ifndef URMQTT_TLS_SHIM_ASSERT_H
#define URMQTT_TLS_SHIM_ASSERT_H
#define assert(x) ((void)0)
#ifndef static_assert
#define static_assert _Static_assert
#endif
#endif
