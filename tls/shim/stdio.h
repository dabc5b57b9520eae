/* SPDX-License-Identifier: MIT
 * Shim <stdio.h> for mbedTLS compiled freestanding: snprintf only (libc on the host,
 * tls/shim/libc_kernel.c over lib/fmt in the image). No FILE, no streams. */
#ifndef URMQTT_TLS_SHIM_STDIO_H
#define URMQTT_TLS_SHIM_STDIO_H
#include <stddef.h>
#include <stdarg.h>
int snprintf(char *buf, size_t len, const char *fmt, ...);
int vsnprintf(char *buf, size_t len, const char *fmt, va_list ap);
#endif
