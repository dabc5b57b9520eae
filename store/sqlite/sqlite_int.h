/* SPDX-License-Identifier: MIT
 *
 * Private to store/: SQLite's header seen through our compile-time configuration (the only
 * way to include sqlite3.h, so every file sees the options the library was built with), and
 * what glue.c and vfs.c ask of each other. Included by store/sqlite/, by the store code
 * that speaks SQL, and by their tests; other layers see store/'s public headers only.
 * Callers need -isystem $(B)/deps/sqlite-amalgamation (STORE_SQLITE_INC in module.mk).
 */
#ifndef STORE_SQLITE_SQLITE_INT_H
#define STORE_SQLITE_SQLITE_INT_H

/* The options must be seen before sqlite3.h, exactly as the amalgamation sees them. */
#include "store/sqlite/sqlite_config.h"

#include <sqlite3.h>

#include "lib/compiler.h"

/* glue.c: has store_sqlite_init run (and not store_sqlite_fini since)? */
bool store_sqlite_up(void);
/* vfs.c: how many files SQLite holds open through the VFS (0 to 3: the DB, its WAL, one
 * backup). */
uint32_t store_vfs_open_files(void);

/* Numbered invariants of glue.c and vfs.c; 0 or -E_CORRUPT (tests). */
MUST_CHECK int store_sqlite_check(void);
MUST_CHECK int store_vfs_check(void);

#endif
