/* SPDX-License-Identifier: MIT
 *
 * store/service.h.
 * Design note. States:
 *   IDLE -(first pass: bring_up)-> RUNNING (the engine restores, then serves)
 *        -> OFF (no usable disk; port.unusable returned: STORE_K_OFF to every data core)
 *   (port.unusable may stop the machine instead: storage.required.)
 *  Invariants: 1. in RUNNING the database is open, the VFS registered and SQLite set up;
 *  in OFF none of them is. 2. every data core hears exactly one of RESTORE_END (from the
 *  engine) or OFF, so none waits forever with its port shut.
 */
#include "store/service.h"

#include "lib/err.h"
#include "lib/fmt.h"
#include "lib/mem.h"
#include "store/sqlite/vfs.h"

#define OFF_TRIES 1000000u /* sends of OFF to a data core before giving up (a bug) */

static void say(struct store_service *s, const char *fmt, ...) PRINTF_LIKE(2, 3);
static void say(struct store_service *s, const char *fmt, ...)
{
	char line[240];
	va_list ap;
	va_start(ap, fmt);
	(void)fmt_vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	s->port.log(s->port.ctx, line);
}

/* ---- ports handed to the layers below ---------------------------------------------------- */

static uint64_t p_now_ns(void *ctx)
{
	struct store_service *s = ctx;
	return s->port.now_ns(s->port.ctx);
}

static uint64_t p_now_us(void *ctx)
{
	return p_now_ns(ctx) / 1000u;
}

static int64_t p_wall_ms(void *ctx)
{
	struct store_service *s = ctx;
	return s->port.wall_ms(s->port.ctx);
}

static int64_t p_wall_s(void *ctx)
{
	return p_wall_ms(ctx) / 1000;
}


static void p_alive(void *ctx)
{
	struct store_service *s = ctx;
	if (s->port.progress)
		s->port.progress(s->port.ctx);
}

static void p_random(void *ctx, void *buf, size_t len)
{
	struct store_service *s = ctx;
	s->port.random(s->port.ctx, buf, len);
}

static void p_log(void *ctx, const char *line)
{
	struct store_service *s = ctx;
	s->port.log(s->port.ctx, line);
}

static int p_send(void *ctx, uint32_t dst, uint16_t kind, const void *data, uint32_t len)
{
	struct store_service *s = ctx;
	return s->port.send(s->port.ctx, dst, kind, data, len);
}

static uint32_t p_home(void *ctx, uint8_t id_kind, const uint8_t *id, size_t len)
{
	struct store_service *s = ctx;
	return s->port.home(s->port.ctx, id_kind, id, len);
}

/* ---- the telemetry log ------------------------------------------------------------------- */

static void tlog_close(struct store_service *s)
{
	if (s->tlog_mem)
		s->port.free(s->port.ctx, s->tlog_mem, s->tlog_len);
	if (s->tlog_io)
		s->port.free(s->port.ctx, s->tlog_io, s->tlog_io_len);
	if (s->tlq_mem)
		s->port.free(s->port.ctx, s->tlq_mem, s->tlq_len);
	s->tlog = NULL;
	s->tlog_mem = s->tlog_io = s->tlq_mem = NULL;
}

/* Open the log on the TELEMETRY region, if the layout has one and configuration wants it.
 * A region that cannot be used is said and left as it is: the broker serves without it. */
static void tlog_open(struct store_service *s)
{
	const struct store_super *sb = &s->boot.sb;
	const struct store_region *r = store_super_region(sb, STORE_REGION_TELEMETRY);
	if (!s->cfg.tlog.enabled)
		return;
	if (!r || !r->blocks) {
		say(s, "telemetry log: off (the layout has no telemetry region)");
		return;
	}
	struct store_tlog_config tc = {
		.dev = &s->dev, .lba = sb->part_start + r->start, .blocks = r->blocks, /* region */
		.partitions = s->cfg.tlog.partitions ? s->cfg.tlog.partitions : s->cfg.engine.n_data,
		.segment_bytes = s->cfg.tlog.segment_bytes,
		.flush_bytes = s->cfg.engine.tlog_flush_bytes, .retention_s = s->cfg.tlog.retention_s,
	};
	s->tlog_io_len = s->cfg.tlog.segment_bytes;
	s->tlog_io = s->port.alloc(s->port.ctx, s->tlog_io_len);
	tc.io = s->tlog_io;
	tc.io_len = s->tlog_io_len;
	s->tlog_len = store_tlog_mem_size(&tc);
	s->tlog_mem = s->tlog_len && s->tlog_io ? s->port.alloc(s->port.ctx, s->tlog_len) : NULL;
	int err = s->tlog_mem ? store_tlog_open(&s->tlog, s->tlog_mem, s->tlog_len, &tc, p_wall_ms(s)) : -E_NOMEM;
	if (err) {
		say(s, "telemetry log: off: %s (the region is left as it is)", err == -E_CORRUPT ? "its header is damaged"
			 : err == -E_NOSYS ? "another version of its format" : err_name(err));
		tlog_close(s);
		return;
	}
	s->tlog_lba = tc.lba;
	const struct store_tlog_geom *g = store_tlog_geometry(s->tlog);
	const struct store_tlog_stats *ts = store_tlog_stats(s->tlog);
	say(s, "telemetry log: %u partitions x %u segments of %u KiB; %lu records recovered, %lu bytes of torn tail cut",
	    (unsigned)g->partitions, (unsigned)g->segments, (unsigned)(g->segment_bytes >> 10),
	    (unsigned long)ts->recovered_records, (unsigned long)ts->cut_bytes);
}

/* ---- bring-up ---------------------------------------------------------------------------- */

static void go_off(struct store_service *s, const char *what)
{
	s->port.unusable(s->port.ctx, what); /* may not return (storage.required) */
	say(s, "%s", what); /* the reason and the consequence: two lines, each within a log line */
	say(s, "serving WITHOUT persistence: a restart forgets sessions, queued and retained messages");
	for (uint32_t d = 0; d < s->cfg.engine.n_data; d++) {
		uint32_t tries = 0;
		while (s->port.send(s->port.ctx, d, STORE_K_OFF, NULL, 0) != 0 && ++tries < OFF_TRIES)
			;
		if (tries == OFF_TRIES)
			say(s, "core %u never took the storage-off message", (unsigned)d);
	}
	s->state = STORE_SVC_OFF;
}

/* ---- the scrubber ----------------------------------------------------------------------- */

/* Findings reported per pass on the console; the rest only counted (the scrub line). */
#define SCRUB_SAID_PER_PASS 8u

static void p_scrub_found(void *ctx, const struct store_scrub_finding *f)
{
	struct store_service *s = ctx;
	uint64_t n = store_scrub_stats(&s->scrub)->pass_findings;
	char line[240];
	if (n <= SCRUB_SAID_PER_PASS) {
		(void)store_scrub_finding_text(f, line, sizeof line);
		s->port.log(s->port.ctx, line);
	} else if (n == SCRUB_SAID_PER_PASS + 1u) {
		say(s, "scrub: more damage in pass %lu; the rest is only counted (the scrub line)", (unsigned long)f->pass);
	}
}

/* The scrubber reads through the telemetry writer's segment buffer when there is a log (it
 * needs a segment), else the service's scratch: both are used only inside their owners'
 * calls, never across a scrub step. */
static void scrub_start(struct store_service *s)
{
	if (!s->cfg.scrub_kb_per_s)
		return;
	const struct store_scrub_config c = {
		.bytes_per_s = (uint64_t)s->cfg.scrub_kb_per_s * 1024u, .dev = &s->dev, .sb = &s->boot.sb, .db = &s->db,
		.telemetry = s->tlog != NULL, .buf = s->tlog ? s->tlog_io : s->scratch,
		.buf_len = s->tlog ? s->tlog_io_len : sizeof s->scratch, .found = p_scrub_found, .ctx = s,
	};
	int err = store_scrub_init(&s->scrub, &c);
	if (err)
		say(s, "scrub: off (%s)", err_name(err));
	s->scrub_on = !err;
}

static uint32_t scrub_poll(struct store_service *s)
{
	if (!s->scrub_on || store_engine_state(s->eng) != STORE_ENG_SERVING)
		return 0;
	return store_scrub_step(&s->scrub, p_now_ns(s)) > 0;
}

size_t store_service_scrub_line(const struct store_service *s, char *out, size_t cap)
{
	if (cap)
		out[0] = 0;
	return s->state == STORE_SVC_RUNNING && s->scrub_on ? store_scrub_line(&s->scrub, out, cap) : 0;
}

static void bring_up(struct store_service *s)
{
	char why[200];
	if (!s->cfg.blk) {
		go_off(s, "this machine has no data disk (virtio-blk or virtio-scsi)");
		return;
	}
	const struct store_dev_port dport = { p_now_ns, p_alive, s };
	int err = store_dev_init(&s->dev, s->cfg.blk, s->cfg.bounce, s->cfg.bounce_len, s->cfg.io_timeout_ms, &dport);
	/* SQLite's bound is the glue's (store/sqlite/glue.c): never more than sqlite_heap. */
	const struct store_sqlite_mem mem = { s->port.alloc, s->port.free, s->port.ctx, s->cfg.sqlite_heap };
	if (!err)
		err = store_sqlite_init(&mem);
	if (err) {
		(void)fmt_snprintf(why, sizeof why, "the storage layer could not be set up (%s)", err_name(err));
		go_off(s, why);
		return;
	}
	uint8_t guids[48];
	p_random(s, guids, sizeof guids);
	const struct store_boot_config bc = {
		.layout = s->cfg.layout, .cache_kb = s->cfg.cache_kb, .checkpoint_pages = s->cfg.checkpoint_pages,
		.guids = guids, .now_s = p_wall_s(s), .scratch = s->scratch, .scratch_len = sizeof s->scratch,
		.io_buf = s->io_buf, .io_buf_len = sizeof s->io_buf, .random = p_random, .wall_ms = p_wall_ms,
		.wall_s = p_wall_s, .progress = p_alive, .ctx = s, .revoked = s->cfg.revoked,
		.n_revoked = s->cfg.n_revoked,
	};
	uint64_t t0 = p_now_ns(s);
	err = store_boot(&s->dev, &bc, &s->db, &s->boot);
	mem_wipe(guids, sizeof guids);
	s->bring_up_ms = (p_now_ns(s) - t0) / 1000000u;
	if (err) {
		(void)!store_sqlite_fini(); /* nothing is open: only the library goes */
		(void)fmt_snprintf(why, sizeof why, "%s: %s", s->cfg.disk_name, s->boot.what);
		go_off(s, why);
		return;
	}
	const struct store_super *sb = &s->boot.sb;
	if (s->boot.restored_slot)
		say(s, "the damage quick_check found: %s", s->boot.damaged);
	tlog_open(s);
	say(s, "%s: %s (%lu ms); layout v%u, superblock generation %lu, %u regions, data partition %lu MiB",
	    s->cfg.disk_name, s->boot.what, (unsigned long)s->bring_up_ms, (unsigned)sb->version,
	    (unsigned long)sb->generation, (unsigned)sb->n_regions,
	    (unsigned long)((sb->part_blocks * sb->block_size) >> 20));
	if (s->boot.grow.what[0])
		say(s, "%s", s->boot.grow.what);
	/* What bring-up cost the disk, whatever its size: the probe, the database's open and
	 * check, the telemetry log's recovery (ADR-043: bounded, not a scan). */
	const struct store_dev_stats *io = &s->dev.st;
	uint32_t bs = store_dev_block_size(&s->dev);
	say(s, "bring-up: %lu ms in all; read %lu KiB in %lu requests, wrote %lu KiB",
	    (unsigned long)((p_now_ns(s) - t0) / 1000000u),
	    (unsigned long)((io->blocks[STORE_DEV_READ] * bs) >> 10), (unsigned long)io->ops[STORE_DEV_READ],
	    (unsigned long)((io->blocks[STORE_DEV_WRITE] * bs) >> 10));
	const struct store_engine_port ep = { .send = p_send, .now_us = p_now_us, .wall_s = p_wall_s, .home = p_home,
					      .log = p_log, .wall_ms = p_wall_ms, .ctx = s };
	/* A batch's records fill at most a quarter of the WAL's region (store/boot.c: a
	 * checkpoint starts at another quarter). */
	s->cfg.engine.batch_bytes = (uint32_t)MIN(s->boot.wal_frames * 4096u / 4u, (uint64_t)UINT32_MAX);
	s->eng_len = store_engine_mem_size(&s->cfg.engine);
	s->eng_mem = s->eng_len ? s->port.alloc(s->port.ctx, s->eng_len) : NULL;
	err = s->eng_mem ? store_engine_init(&s->eng, s->eng_mem, s->eng_len, &s->cfg.engine, &ep, &s->db,
					     s->boot.generation)
			 : -E_NOMEM;
	if (err) {
		if (s->eng_mem)
			s->port.free(s->port.ctx, s->eng_mem, s->eng_len);
		s->eng_mem = NULL;
		tlog_close(s);
		store_boot_close(&s->db);
		(void)!store_sqlite_fini();
		(void)fmt_snprintf(why, sizeof why, "the storage engine could not start (%s)", err_name(err));
		go_off(s, why);
		return;
	}
	if (s->tlog) {
		store_engine_attach_tlog(s->eng, s->tlog, &s->dev);
		s->tlq_len = s->cfg.tlog.queries ? store_engine_tlq_mem_size(s->eng, s->cfg.tlog.queries) : 0;
		s->tlq_mem = s->tlq_len ? s->port.alloc(s->port.ctx, s->tlq_len) : NULL;
		if (s->tlq_len && (!s->tlq_mem || store_engine_tlq_attach(s->eng, s->tlq_mem, s->tlq_len,
									   s->cfg.tlog.queries, s->tlog_lba) != 0))
			say(s, "telemetry queries: off (no memory for %u of them)", (unsigned)s->cfg.tlog.queries);
	}
	scrub_start(s);
	s->state = STORE_SVC_RUNNING;
}

/* ---- the service ------------------------------------------------------------------------ */

int store_service_init(struct store_service *s, const struct store_service_config *cfg,
		       const struct store_service_port *port)
{
	memset(s, 0, sizeof *s);
	if (!port->alloc || !port->free || !port->now_ns || !port->wall_ms || !port->random || !port->log ||
	    !port->unusable || !port->send || !port->home || !cfg->engine.n_data ||
	    (cfg->blk && (!cfg->bounce || !cfg->bounce_len)))
		return -E_INVAL;
	s->cfg = *cfg;
	s->port = *port;
	s->state = STORE_SVC_IDLE;
	return 0;
}

/* The A/B backup: started when due, one step per pass while the database is not being
 * written (SQLite refuses a step then), its outcome said on the console. */
static uint32_t backup_poll(struct store_service *s)
{
	if (!s->cfg.backup.interval_s || store_engine_state(s->eng) != STORE_ENG_SERVING || store_engine_busy(s->eng))
		return 0;
	uint64_t now = p_now_us(s);
	if (!s->next_backup_us) {
		s->next_backup_us = now + (uint64_t)s->cfg.backup.first_s * 1000000u;
		return 0;
	}
	if (s->backup.state == STORE_BACKUP_IDLE) {
		if (now < s->next_backup_us)
			return 0;
		s->next_backup_us = now + (uint64_t)s->cfg.backup.interval_s * 1000000u;
		if (s->scrub_on) /* the VFS opens one backup file at a time */
			store_scrub_hold_backups(&s->scrub, true);
		int err = store_backup_start(&s->backup, &s->db, &s->boot.sb);
		if (err) {
			if (s->scrub_on)
				store_scrub_hold_backups(&s->scrub, false);
			say(s, "backup: not started: %s", s->backup.why);
			return 0;
		}
		s->backup_started_us = now;
		return 1;
	}
	int err = store_backup_step(&s->backup, s->cfg.backup.step_pages, &s->dev, &s->boot.sb, s->scratch,
				    sizeof s->scratch, now, p_wall_ms(s));
	uint64_t dt = p_now_us(s) - now;
	if (dt > s->backup.st.longest_step_us)
		s->backup.st.longest_step_us = dt;
	if (err == -E_AGAIN)
		return 1;
	if (s->scrub_on)
		store_scrub_hold_backups(&s->scrub, false);
	if (err) {
		say(s, "backup into slot %c FAILED: %s (the previous backup stays in charge)",
		    s->backup.slot == 1u ? 'A' : 'B', s->backup.why);
		return 1;
	}
	s->backup.st.last_us = p_now_us(s) - s->backup_started_us;
	say(s, "backup: slot %c now holds the database (%lu pages in %lu ms, longest step %lu us), superblock generation %lu",
	    s->backup.slot == 1u ? 'A' : 'B', (unsigned long)s->backup.st.last_pages,
	    (unsigned long)(s->backup.st.last_us / 1000u), (unsigned long)s->backup.st.longest_step_us,
	    (unsigned long)s->boot.sb.generation);
	return 1;
}

void store_service_disk_grew(struct store_service *s)
{
	s->grow_pending = true;
}

/* A capacity change the platform reported: grown between transactions, never inside a
 * backup step (the superblock is shared with the backup's commit). */
static uint32_t grow_poll(struct store_service *s)
{
	if (!s->grow_pending || store_engine_state(s->eng) != STORE_ENG_SERVING || store_engine_busy(s->eng))
		return 0;
	s->grow_pending = false;
	struct store_grow_result r;
	int err = store_boot_grow(&s->dev, &s->boot.sb, s->scratch, sizeof s->scratch, &r);
	if (err)
		say(s, "growth at run time FAILED (%s): %s", err_name(err), r.what);
	else
		say(s, "%s (at run time, superblock generation %lu)", r.what, (unsigned long)s->boot.sb.generation);
	return 1;
}

uint32_t store_service_poll(struct store_service *s)
{
	if (s->state == STORE_SVC_IDLE) {
		bring_up(s);
		return 1;
	}
	if (s->state != STORE_SVC_RUNNING)
		return 0;
	uint32_t work = store_engine_poll(s->eng, s->cfg.pass_budget_us);
	return work + grow_poll(s) + backup_poll(s) + scrub_poll(s);
}

uint64_t store_service_due_ns(const struct store_service *s)
{
	if (s->state == STORE_SVC_IDLE)
		return 0;
	if (s->state != STORE_SVC_RUNNING)
		return UINT64_MAX;
	uint64_t us = store_engine_due_us(s->eng);
	if (s->cfg.backup.interval_s)
		us = MIN(us, s->backup.state == STORE_BACKUP_RUNNING || !s->next_backup_us ? 0 : s->next_backup_us);
	if (s->grow_pending)
		us = 0;
	uint64_t scrub_ns = s->scrub_on ? store_scrub_due_ns(&s->scrub) : UINT64_MAX;
	if (scrub_ns != UINT64_MAX)
		us = MIN(us, scrub_ns / 1000u);
	return us == UINT64_MAX ? UINT64_MAX : us * 1000u;
}

void store_service_input(struct store_service *s, uint32_t src, uint16_t kind, const uint8_t *data, uint32_t len)
{
	if (s->state == STORE_SVC_RUNNING)
		store_engine_input(s->eng, src, kind, data, len);
}

int store_service_local(struct store_service *s, uint16_t kind, const void *data, uint32_t len)
{
	return s->state == STORE_SVC_RUNNING ? store_engine_local(s->eng, kind, data, len) : -E_AGAIN;
}

void store_service_figures(const struct store_service *s, struct store_service_figures *out)
{
	memset(out, 0, sizeof *out);
	for (uint32_t i = 0; i < STORE_DEV__OPS; i++)
		out->disk_errors += s->dev.st.errors[i];
	out->failed = s->state == STORE_SVC_OFF || s->dev.broken;
	if (s->state != STORE_SVC_RUNNING || !s->eng)
		return;
	const struct store_engine_stats *e = store_engine_stats(s->eng);
	out->commits = e->commits;
	out->commit_failed = e->commit_failed;
	out->commit_us_max = e->commit_us_max;
	out->lagging = e->lagging;
	out->failed = out->failed || store_engine_state(s->eng) == STORE_ENG_FAILED;
}

size_t store_service_line(struct store_service *s, char *out, size_t cap)
{
	if (s->state != STORE_SVC_RUNNING) {
		if (cap)
			out[0] = 0;
		return 0;
	}
	const struct store_engine_stats *e = store_engine_stats(s->eng);
	struct store_sqlite_mem_stats m;
	store_sqlite_mem_stats(&m);
	enum store_engine_state st = store_engine_state(s->eng);
	int n = fmt_snprintf(out, cap,
			     "state=%s gen=%lu records=%lu barriers=%lu ok=%lu refused=%lu commits=%lu p50_us=%lu "
			     "p99_us=%lu max_us=%lu batch_max=%lu ckpt=%lu lag=%u restored=%lu heap=%lu/%lu db_kb=%lu",
			     st == STORE_ENG_SERVING ? "serving" : st == STORE_ENG_RESTORING ? "restoring" : "FAILED",
			     (unsigned long)s->boot.generation, (unsigned long)e->records, (unsigned long)e->barriers,
			     (unsigned long)e->answered_ok, (unsigned long)e->answered_fail, (unsigned long)e->commits,
			     (unsigned long)store_engine_commit_us(s->eng, 50),
			     (unsigned long)store_engine_commit_us(s->eng, 99), (unsigned long)e->commit_us_max,
			     (unsigned long)e->batch_ops_max, (unsigned long)e->checkpoints, (unsigned)e->lagging,
			     (unsigned long)e->restore_records, (unsigned long)m.used,
			     (unsigned long)m.peak, (unsigned long)(store_db_pages(&s->db) * 4u));
	return n > 0 ? (size_t)n : 0;
}

size_t store_service_tlog_line(const struct store_service *s, char *out, size_t cap)
{
	if (cap)
		out[0] = 0;
	if (s->state != STORE_SVC_RUNNING || !s->tlog)
		return 0;
	const struct store_engine_stats *e = store_engine_stats(s->eng);
	const struct store_tlog_stats *t = store_tlog_stats(s->tlog);
	int n = fmt_snprintf(out, cap,
			     "telemetry appended=%lu written=%lu bytes=%lu write_outs=%lu segments=%lu dropped=%lu "
			     "ignored=%lu flush_p50_us=%lu flush_p99_us=%lu expired=%lu",
			     (unsigned long)e->tlog_records, (unsigned long)t->written, (unsigned long)t->bytes_written,
			     (unsigned long)t->write_outs, (unsigned long)t->segments_started,
			     (unsigned long)(e->tlog_dropped + t->dropped_too_big + t->dropped_full),
			     (unsigned long)e->tlog_ignored, (unsigned long)store_engine_tlog_us(s->eng, 50),
			     (unsigned long)store_engine_tlog_us(s->eng, 99), (unsigned long)t->expired_segments);
	return n > 0 ? (size_t)n : 0;
}

void store_service_fini(struct store_service *s)
{
	if (s->state != STORE_SVC_RUNNING)
		return;
	store_backup_abort(&s->backup);
	if (s->scrub_on)
		store_scrub_fini(&s->scrub);
	s->scrub_on = false;
	store_engine_finish(s->eng);
	tlog_close(s);
	store_boot_close(&s->db);
	(void)!store_sqlite_fini();
	s->port.free(s->port.ctx, s->eng_mem, s->eng_len);
	s->eng_mem = NULL;
	s->state = STORE_SVC_OFF;
}
