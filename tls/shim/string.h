/* SPDX-License-Identifier: MIT
 * Shim <string.h> for mbedTLS compiled freestanding: only the functions lib/mem.h
 * provides (libc on the host, lib/mem.c in the image) plus strstr/strchr. Never used by
 * our own code. */
#ifndef URMQTT_TLS_SHIM_STRING_H
#define URMQTT_TLS_SHIM_STRING_H
#include "lib/mem.h"
/* Two more that mbedTLS uses (PEM markers, x509 names); tls/shim/libc_kernel.c in the image. */
char *strstr(const char *hay, const char *needle);
char *strchr(const char *s, int c);
#endif
