/* SPDX-License-Identifier: MIT
 *
 * urmqtt-disk: the operator's tool for an urMQTT data disk image (a file: what `make run` and
 * the hosted broker use, or a copy of a machine's disk). Host tool (libc); the disk is reached
 * through the code the broker runs (hosted/blk_file.h under store/dev.h, store/layout.h's
 * probe and format, store/boot.h, the VFS of store/sqlite/, store/tlog*.h), never through a
 * second reading of the format. Only `format`, `backup` and `restore` write an image; every
 * other command opens it read only. This file: the command line and the help; the commands are
 * in inspect.c, verify.c, format.c, telemetry.c and backup.c (tools/disk/disk.h). Manual:
 * docs/DISK.md.
 */
#include <stdio.h>
#include <string.h>

#include "mqtt/codec.h"
#include "tools/disk/disk.h"
#include "urmqtt_config.h"

static void help(FILE *f)
{
	fprintf(f,
		"usage: urmqtt-disk COMMAND IMAGE [OPTIONS]\n"
		"       urmqtt-disk --help | help\n"
		"\n"
		"The operator's tool for an urMQTT data disk image (docs/DISK.md). Only format, backup and\n"
		"restore write; every other command opens the image read only and never changes a byte.\n"
		"\n"
		"commands:\n"
		"  inspect IMAGE        what the disk holds: GPT, both superblock slots, the data partition\n"
		"                       and its regions, the database (header, pages, schema version,\n"
		"                       PRAGMA quick_check), the backup slots, the telemetry log per\n"
		"                       partition. A disk that is not ours: what it is, exit 1.\n"
		"  info IMAGE           the same as inspect\n"
		"  verify IMAGE [--full] [--verbose]\n"
		"                       check everything that can be checked: both GPT copies, the\n"
		"                       superblock, PRAGMA quick_check of the database (--full:\n"
		"                       integrity_check), the backup the superblock names, every\n"
		"                       telemetry segment header, hint and record CRC. Prints every\n"
		"                       place where validation stopped early (partition, slot, offset)\n"
		"                       and a summary; --verbose also lists every hint and segment.\n"
		"  format IMAGE [--force] [--esp-mib N] [--wal-mib N] [--telemetry-pct N]\n"
		"                       lay out an all-zero image and create the database, with the\n"
		"                       broker's own bring-up (store_boot: probe, format, create).\n"
		"                       Anything but a blank image (or a format of ours that was\n"
		"                       interrupted) is refused and named. --force first zeroes what\n"
		"                       makes a disk recognisable (MBR and both GPTs: the first and last\n"
		"                       MiB; any urMQTT superblock slots and, from a valid superblock,\n"
		"                       its regions; the whole image when sampled data remains), and\n"
		"                       after formatting the whole new telemetry region.\n"
		"                       Defaults from this build's configuration: --esp-mib %u,\n"
		"                       --wal-mib %u, --telemetry-pct %u (0..90).\n"
		"  telemetry IMAGE [--since T] [--until T] [--identity ID] [--topic FILTER]\n"
		"                  [--format jsonl|csv]\n"
		"                       every telemetry record that validates, oldest first per\n"
		"                       partition, filtered; T: Unix seconds, Unix milliseconds (13\n"
		"                       digits) or YYYY-MM-DDTHH:MM:SS[.mmm]Z. Payloads are text when\n"
		"                       UTF-8, base64 otherwise. A summary goes to stderr.\n"
		"  backup IMAGE [--to FILE]\n"
		"                       take a complete A/B backup, offline, exactly as the broker does\n"
		"                       online: the database brought up with the broker's bring-up\n"
		"                       (store_boot: quick_check, a new boot generation), copied into the\n"
		"                       slot the superblock does not name, stamped, flushed, then named by\n"
		"                       the next superblock generation. Prints the slot, its generation,\n"
		"                       pages and when it was taken. --to FILE: also write that backup\n"
		"                       as a plain SQLite file any sqlite3 opens (a new file: never an\n"
		"                       existing one). A database that fails quick_check is refused\n"
		"                       (restore it instead): the backups stay as they are.\n"
		"  restore IMAGE [--slot A|B]\n"
		"                       copy the backup the superblock names (or the slot given) over the\n"
		"                       database, as the broker's boot does when quick_check fails: the\n"
		"                       database as it was is kept in the other slot (not when that slot\n"
		"                       holds the named backup), the WAL's head zeroed. Refused, with\n"
		"                       nothing written, when the slot is empty or fails quick_check.\n"
		"                       Prints the slot, its generation, when it was taken and pages.\n"
		"\n"
		"exit codes:\n"
		"  0  done, and all is well (verify: nothing damaged; inspect: our disk, database ok;\n"
		"     backup, restore: done, and the database passes quick_check)\n"
		"  1  the image is not an urMQTT data disk, damage was found, format, backup or restore\n"
		"     refused, or the image (or --to FILE) could not be opened, read or written (the\n"
		"     message names the file and why)\n"
		"  2  usage: unknown command or option, missing or bad value\n",
		(unsigned)CONF_STORAGE_ESP_MB, (unsigned)CONF_STORAGE_WAL_MB, (unsigned)CONF_STORAGE_TELEMETRY_PCT);
}

static int usage(const char *why, const char *arg)
{
	if (why)
		fprintf(stderr, "urmqtt-disk: %s%s%s\n", why, arg ? ": " : "", arg ? arg : "");
	fprintf(stderr, "usage: urmqtt-disk inspect|info|verify|format|telemetry|backup|restore IMAGE [OPTIONS]; "
			"urmqtt-disk --help\n");
	return DISK_EXIT_USAGE;
}

enum cmd { CMD_INSPECT, CMD_VERIFY, CMD_FORMAT, CMD_TELEMETRY, CMD_BACKUP, CMD_RESTORE, CMD__N };

/* Does option a belong to command c? (Each takes a value unless it is a flag.) */
static bool opt_of(enum cmd c, const char *a, bool *flag)
{
	static const struct {
		const char *name;
		enum cmd cmd;
		bool flag;
	} t[] = {
		{ "--full", CMD_VERIFY, true },		{ "--verbose", CMD_VERIFY, true },
		{ "--force", CMD_FORMAT, true },	{ "--esp-mib", CMD_FORMAT, false },
		{ "--wal-mib", CMD_FORMAT, false },	{ "--telemetry-pct", CMD_FORMAT, false },
		{ "--since", CMD_TELEMETRY, false },	{ "--until", CMD_TELEMETRY, false },
		{ "--identity", CMD_TELEMETRY, false }, { "--topic", CMD_TELEMETRY, false },
		{ "--format", CMD_TELEMETRY, false },	{ "--to", CMD_BACKUP, false },
		{ "--slot", CMD_RESTORE, false },
	};
	for (size_t i = 0; i < ARRAY_LEN(t); i++) {
		if (!strcmp(a, t[i].name)) {
			*flag = t[i].flag;
			return t[i].cmd == c;
		}
	}
	return false;
}

/* One option with its value (v: NULL for flags). DISK_EXIT_USAGE when the value is bad. */
static int take(struct disk_opts *o, const char *a, const char *v)
{
	if (!strcmp(a, "--full")) {
		o->full = true;
	} else if (!strcmp(a, "--verbose")) {
		o->verbose = true;
	} else if (!strcmp(a, "--force")) {
		o->force = true;
	} else if (!strcmp(a, "--esp-mib") || !strcmp(a, "--wal-mib")) {
		bool esp = a[2] == 'e';
		if (disk_parse_u32(v, 1u << 20, esp ? &o->esp_mib : &o->wal_mib) != 0) /* at most 1 TiB */
			return usage("not a size in MiB (0 .. 1048576)", v);
		*(esp ? &o->esp_set : &o->wal_set) = true;
	} else if (!strcmp(a, "--telemetry-pct")) {
		if (disk_parse_u32(v, 90, &o->telemetry_pct) != 0)
			return usage("--telemetry-pct: not a percentage 0 .. 90", v);
		o->pct_set = true;
	} else if (!strcmp(a, "--since") || !strcmp(a, "--until")) {
		int64_t t = disk_parse_time(v);
		if (t < 0)
			return usage("not a time (Unix seconds or milliseconds, or YYYY-MM-DDTHH:MM:SS[.mmm]Z)", v);
		*(a[2] == 's' ? &o->since_ms : &o->until_ms) = t;
	} else if (!strcmp(a, "--identity")) {
		o->identity = v;
	} else if (!strcmp(a, "--topic")) {
		if (!mqtt_filter_valid((const uint8_t *)v, strlen(v)))
			return usage("--topic: not a topic filter", v);
		o->topic = v;
	} else if (!strcmp(a, "--to")) {
		if (!*v)
			return usage("--to: an empty file name", NULL);
		o->to = v;
	} else if (!strcmp(a, "--slot")) {
		if (disk_parse_slot(v, &o->slot) != 0)
			return usage("--slot: A or B", v);
	} else if (!strcmp(a, "--format")) {
		if (strcmp(v, "jsonl") != 0 && strcmp(v, "csv") != 0)
			return usage("--format: jsonl or csv", v);
		o->csv = !strcmp(v, "csv");
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help"))) {
		help(stdout);
		return DISK_EXIT_OK;
	}
	if (argc >= 3 && (!strcmp(argv[2], "--help") || !strcmp(argv[2], "-h"))) {
		help(stdout);
		return DISK_EXIT_OK;
	}
	if (argc < 3)
		return usage(argc < 2 ? "no command" : "no IMAGE", NULL);
	static const struct {
		const char *name;
		enum cmd cmd;
	} cmds[] = { { "inspect", CMD_INSPECT },   { "info", CMD_INSPECT },	     { "verify", CMD_VERIFY },
		     { "format", CMD_FORMAT },	   { "telemetry", CMD_TELEMETRY }, { "backup", CMD_BACKUP },
		     { "restore", CMD_RESTORE } };
	enum cmd c = CMD__N;
	for (size_t i = 0; i < ARRAY_LEN(cmds); i++)
		if (!strcmp(argv[1], cmds[i].name))
			c = cmds[i].cmd;
	if (c == CMD__N)
		return usage("unknown command", argv[1]);
	struct disk_opts o = { .cmd = argv[1], .image = argv[2] };
	for (int i = 3; i < argc; i++) {
		bool flag = false;
		if (!opt_of(c, argv[i], &flag))
			return usage(flag || argv[i][0] == '-' ? "not an option of this command" : "unexpected argument",
				     argv[i]);
		const char *v = NULL;
		if (!flag) {
			if (i + 1 >= argc)
				return usage("this option needs a value", argv[i]);
			v = argv[++i];
		}
		int rc = take(&o, argv[i - (flag ? 0 : 1)], v);
		if (rc)
			return rc;
	}
	switch (c) {
	case CMD_INSPECT:
		return disk_cmd_inspect(&o);
	case CMD_VERIFY:
		return disk_cmd_verify(&o);
	case CMD_FORMAT:
		return disk_cmd_format(&o);
	case CMD_TELEMETRY:
		return disk_cmd_telemetry(&o);
	case CMD_BACKUP:
		return disk_cmd_backup(&o);
	case CMD_RESTORE:
		return disk_cmd_restore(&o);
	case CMD__N:
		break;
	}
	return usage(NULL, NULL);
}
