/* SPDX-License-Identifier: MIT
 *
 * urMQTT's SQLite 3.46.1 configuration, the same in every flavour (host, hostrel, fuzz,
 * x86_64, aarch64). It owns the choice of what of SQLite is compiled: the amalgamation
 * reads it through SQLITE_CUSTOM_INCLUDE (store/sqlite/module.mk), our files include it
 * before sqlite3.h (store/sqlite/sqlite_int.h), so both see the same options. Every
 * option has one line saying why. It must never enable an OS layer, threads, memory
 * mapping, loadable extensions, shared cache or a second allocator: the VFS and the
 * allocator are ours (store/sqlite/vfs.c, store/sqlite/glue.c).
 *
 * SQLite documents that most SQLITE_OMIT_* options need the canonical sources (they change
 * the generated parser); only options that build with the amalgamation and pass our tests
 * are here. Options tried and not kept are listed at the end with the reason.
 */
#ifndef STORE_SQLITE_SQLITE_CONFIG_H
#define STORE_SQLITE_SQLITE_CONFIG_H

/* ---- platform: no operating system ---- */
#define SQLITE_OS_OTHER 1              /* no OS layer: sqlite3_os_init/end and the VFS are ours */
#define SQLITE_THREADSAFE 0            /* one core calls SQLite: no mutexes compiled */
#define SQLITE_MAX_WORKER_THREADS 0    /* no sorter threads (there are no threads) */
#define SQLITE_DEFAULT_WORKER_THREADS 0 /* same, for the run-time limit */
#define SQLITE_ZERO_MALLOC 1           /* no malloc/free reference: SQLITE_CONFIG_MALLOC supplies ours */
#define SQLITE_DEFAULT_MEMSTATUS 0     /* no global statistics: our allocator counts (and is faster) */
#define SQLITE_OMIT_AUTOINIT 1         /* store_sqlite_init calls sqlite3_initialize explicitly */
#define SQLITE_MAX_MMAP_SIZE 0         /* no memory-mapped I/O: every byte goes through the VFS */
#define SQLITE_TEMP_STORE 3            /* temporary tables, indices and sorts in memory, never a file */
#define SQLITE_OMIT_LOAD_EXTENSION 1   /* no dlopen in a unikernel; no code from data */
#define SQLITE_OMIT_SHARED_CACHE 1     /* one connection; the shared-cache code is dead weight */
#define SQLITE_OMIT_DESERIALIZE 1      /* no "memdb" VFS next to ours: ours is the only way to a file */
#define SQLITE_OMIT_LOCALTIME 1        /* no time zones in the image: UTC only */
#define LONGDOUBLE_TYPE double         /* the x86_64 image has no x87 (-mno-80387) */

/* ---- durability: exclusive WAL, synchronous FULL ---- */
#define SQLITE_DEFAULT_LOCKING_MODE 1  /* exclusive: the WAL index lives in heap memory (no xShmMap) */
#define SQLITE_DEFAULT_SYNCHRONOUS 2   /* FULL: a commit returns only after a device FLUSH */
#define SQLITE_DEFAULT_WAL_SYNCHRONOUS 2 /* FULL in WAL mode too (default would be NORMAL's 1) */

/* ---- safety ---- */
#define SQLITE_DQS 0                   /* "x" is an identifier, never a string literal */
#define SQLITE_ENABLE_API_ARMOR 1      /* misuse of the C API returns SQLITE_MISUSE, not a crash */
#define SQLITE_LIKE_DOESNT_MATCH_BLOBS 1 /* LIKE/GLOB on BLOBs: no implicit conversion */
#define SQLITE_STRICT_SUBTYPE 1        /* functions that set subtypes must declare it */
#define SQLITE_UNTESTABLE 1            /* no test-control hooks (sqlite3_test_control) in the image */

/* ---- interfaces we never use ---- */
#define SQLITE_OMIT_DEPRECATED 1       /* keep removed interfaces out of reach */
#define SQLITE_OMIT_UTF16 1            /* UTF-8 only: no *16 API, no UTF-16 databases */
#define SQLITE_OMIT_TRACE 1            /* no sqlite3_trace/profile hooks */
#define SQLITE_OMIT_COMPLETE 1         /* no sqlite3_complete (a shell's helper) */
#define SQLITE_OMIT_GET_TABLE 1        /* no sqlite3_get_table (legacy convenience) */
#define SQLITE_OMIT_TCL_VARIABLE 1     /* no $tcl parameters: only ? and :name */
#define SQLITE_OMIT_AUTHORIZATION 1    /* every statement is ours: no authorizer callback */
#define SQLITE_OMIT_COMPILEOPTION_DIAGS 1 /* no option strings in the image */
#define SQLITE_OMIT_JSON 1             /* no JSON functions: our rows are typed columns */
#define SQLITE_OMIT_DECLTYPE 1         /* no sqlite3_column_decltype */
#define SQLITE_OMIT_INCRBLOB 1         /* no sqlite3_blob_* streaming: payloads are bound whole */
#define SQLITE_OMIT_INTROSPECTION_PRAGMAS 1 /* no function_list/module_list/pragma_list */

/* Kept on purpose (never omit): WAL; the progress handler (the kernel tells its watchdog a
 * long query is alive); PRAGMA quick_check and integrity_check; the online backup API
 * (sqlite3_backup_*); auto-vacuum and incremental vacuum (the VFS hands a truncated tail
 * back to the device); the auto-extension list (cksumvfs, compiled next to the
 * amalgamation by module.mk, adds verify_checksum() to each connection through it: no
 * code is ever loaded); ATTACH in the parser (our VFS
 * refuses the file: SQLITE_CANTOPEN); the date and time functions (UTC, through
 * xCurrentTimeInt64); EXPLAIN (tests check query plans); lookaside (cheap small
 * allocations, about 48 KiB for our one connection).
 *
 * Tried with the amalgamation and not kept:
 *   SQLITE_OMIT_VIRTUALTABLE, SQLITE_OMIT_ATTACH: the generated parser still calls what
 *     they remove (undefined sqlite3AlterRenameTable, sqlite3Vacuum...): canonical sources
 *     only.
 *   SQLITE_OMIT_WINDOWFUNC, SQLITE_OMIT_CTE: the parser does not compile.
 *   SQLITE_OMIT_MEMORYDB: ":memory:" becomes a file name (our VFS refuses it).
 *   SQLITE_OMIT_EXPLAIN, SQLITE_OMIT_TEMPDB: build and pass, but they change the grammar,
 *     which SQLite supports from canonical sources only; not worth the risk.
 *   SQLITE_OMIT_LOOKASIDE, SQLITE_OMIT_DATETIME_FUNCS: build and pass; the features are
 *     worth their size (see above). */

#endif
