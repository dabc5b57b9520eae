/* SPDX-License-Identifier: MIT
 *
 * The SQLite library's process-wide set-up (store/sqlite/vfs.h): its allocator, bridged to
 * the caller's accounted allocator with a hard bound, and the OS hooks SQLITE_OS_OTHER
 * asks for (sqlite3_os_init/sqlite3_os_end, which register nothing: the VFS is
 * store_vfs_register's). It must never let SQLite hold more than the limit, never reach
 * for another allocator, and never pass or return a double (compiled general-registers
 * only in the image).
 *
 * Design note. States: DOWN --store_sqlite_init--> UP --store_sqlite_fini--> DOWN.
 * Every allocation is [8-byte header: its length][SQLite's bytes], so xSize and xFree
 * know the length without asking the allocator.
 * Invariants (store_sqlite_check):
 *  1. used is the sum of the lengths (headers included) of the live allocations, and
 *     used <= limit, peak >= used.
 *  2. allocs - frees is the number of live allocations; none live implies used == 0.
 *  3. SQLite is initialised exactly in state UP; mem is set only then.
 */
#include "store/sqlite/sqlite_int.h"
#include "store/sqlite/vfs.h"

#include "lib/align.h"
#include "lib/err.h"
#include "lib/mem.h"

#define SG_HDR 8u /* keeps SQLite's bytes 8-byte aligned */

static struct {
	bool up;
	struct store_sqlite_mem mem;
	struct store_sqlite_mem_stats st;
	uint64_t live; /* allocations not yet freed (invariant 2) */
} sg;

/* Bytes to take from the allocator for n bytes of SQLite's, 0 when impossible. */
static size_t sg_total(int n)
{
	if (n <= 0)
		return 0;
	return align8((size_t)n) + SG_HDR;
}

static void *sg_take(size_t total)
{
	if (total == 0 || total > sg.mem.limit - sg.st.used) { /* invariant 1: used <= limit */
		sg.st.refused++;
		return NULL;
	}
	uint8_t *p = sg.mem.alloc(sg.mem.ctx, total);
	if (!p) {
		sg.st.refused++;
		return NULL;
	}
	uint64_t len = total;
	memcpy(p, &len, sizeof len);
	sg.st.used += total;
	if (sg.st.used > sg.st.peak)
		sg.st.peak = sg.st.used;
	sg.st.allocs++;
	sg.live++;
	return p + SG_HDR;
}

static size_t sg_len(const void *user)
{
	uint64_t len;
	memcpy(&len, (const uint8_t *)user - SG_HDR, sizeof len);
	return (size_t)len;
}

static void sg_give(void *user)
{
	uint8_t *p = (uint8_t *)user - SG_HDR;
	size_t len = sg_len(user);
	sg.st.used -= len;
	sg.st.frees++;
	sg.live--;
	sg.mem.free(sg.mem.ctx, p, len);
}

static void *sg_malloc(int n)
{
	return sg_take(sg_total(n));
}

static void sg_free(void *p)
{
	if (p)
		sg_give(p);
}

/* SQLite calls it with p != NULL and n already rounded by sg_roundup. The old and the new
 * block are both held while the bytes move, so both count against the limit. */
static void *sg_realloc(void *p, int n)
{
	if (!p)
		return sg_malloc(n);
	void *q = sg_malloc(n);
	if (!q)
		return NULL;
	size_t old = sg_len(p) - SG_HDR;
	size_t now = sg_len(q) - SG_HDR;
	memcpy(q, p, MIN(old, now));
	sg_give(p);
	return q;
}

static int sg_size(void *p)
{
	return p ? (int)(sg_len(p) - SG_HDR) : 0;
}

static int sg_roundup(int n)
{
	if (n <= 0)
		return n;
	if (n > INT32_MAX - 7)
		return n; /* sg_total's own rounding still bounds it; sg_take refuses */
	return (int)(((unsigned)n + 7u) & ~7u);
}

static int sg_init(void *app)
{
	(void)app;
	return SQLITE_OK;
}

static void sg_shutdown(void *app)
{
	(void)app;
}

static const sqlite3_mem_methods sg_methods = {
	sg_malloc, sg_free, sg_realloc, sg_size, sg_roundup, sg_init, sg_shutdown, NULL,
};

/* SQLITE_OS_OTHER: SQLite calls these from sqlite3_initialize/sqlite3_shutdown. No VFS
 * here: store_vfs_register makes ours the default once the caller has its regions. */
int sqlite3_os_init(void)
{
	return SQLITE_OK;
}

int sqlite3_os_end(void)
{
	return SQLITE_OK;
}

bool store_sqlite_up(void)
{
	return sg.up;
}

int store_sqlite_init(const struct store_sqlite_mem *mem)
{
	if (sg.up)
		return -E_EXIST;
	if (!mem || !mem->alloc || !mem->free || mem->limit == 0)
		return -E_INVAL;
	memset(&sg, 0, sizeof sg);
	sg.mem = *mem;
	sg.st.limit = mem->limit;
	int err = -E_INVAL;
	/* SQLite copies the methods; every later allocation of the library goes through them. */
	if (sqlite3_config(SQLITE_CONFIG_MALLOC, &sg_methods) != SQLITE_OK)
		goto fail;
	if (sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0) != SQLITE_OK)
		goto fail;
	/* Page cache pages from the allocator above, never from a static buffer. */
	if (sqlite3_config(SQLITE_CONFIG_PAGECACHE, (void *)NULL, 0, 0) != SQLITE_OK)
		goto fail;
	int rc = sqlite3_initialize();
	if (rc != SQLITE_OK) {
		err = (rc & 0xff) == SQLITE_NOMEM ? -E_NOMEM : -E_INVAL;
		goto fail;
	}
	sg.up = true;
	return 0;
fail:
	(void)sqlite3_shutdown();
	memset(&sg, 0, sizeof sg);
	return err;
}

int store_sqlite_fini(void)
{
	if (!sg.up)
		return 0;
	/* The VFS stack goes first (it holds cksumvfs's auto-extension list); it stays while a
	 * file is open. Then a connection, a statement or a string SQLite returned may still
	 * be alive. */
	store_vfs_unregister();
	if (store_vfs_open_files() || sg.live)
		return -E_CLOSED;
	if (sqlite3_shutdown() != SQLITE_OK)
		return -E_CLOSED;
	sg.up = false;
	memset(&sg.mem, 0, sizeof sg.mem);
	return 0;
}

void store_sqlite_mem_stats(struct store_sqlite_mem_stats *out)
{
	*out = sg.st;
}

int store_sqlite_check(void)
{
	if (sg.st.used > sg.st.limit || sg.st.peak < sg.st.used)
		return -E_CORRUPT; /* 1 */
	if (sg.st.allocs - sg.st.frees != sg.live || (sg.live == 0 && sg.st.used != 0))
		return -E_CORRUPT; /* 2 */
	if (!sg.up && (sg.mem.alloc || sg.mem.free))
		return -E_CORRUPT; /* 3 */
	return 0;
}
