/* SPDX-License-Identifier: MIT
 * Shim <string.h> for SQLite compiled freestanding: the functions lib/mem.h provides
 * (libc on the host, lib/mem.c in the image) plus the three more SQLite's core calls
 * (libc on the host, store/sqlite/libc_kernel.c in the image). Never used by our own
 * code, which has lib/mem.h and cursors. */
#ifndef URMQTT_STORE_SQLITE_SHIM_STRING_H
#define URMQTT_STORE_SQLITE_SHIM_STRING_H
#include "lib/mem.h"
size_t strspn(const char *s, const char *accept);   /* text-to-integer prefix */
size_t strcspn(const char *s, const char *reject);  /* trim() and friends */
char *strrchr(const char *s, int c);                /* shadow-table names */
#endif
