/* SPDX-License-Identifier: MIT
 *
 * urmqtt-config: the build-time configuration tool. `check FILE` validates,
 * `gen-header FILE OUT.h` validates and writes the constants header atomically (a temp
 * file in OUT's directory renamed over OUT, so a failed run leaves no half-written
 * header a later make would trust), `gen-doc` prints docs/CONFIGURATION.md, `fleet-home
 * FILE ID...` prints each identity's home appliance by FILE's [fleet] ring (provisioning a
 * 3.1.1 device with its appliance's name, docs/SCALE-OUT.md): "ID NAME HOST:PORT" a line.
 * Errors are one line `file:line: message` and exit code 1; usage errors exit 2.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tools/config/conf.h"
#include "tools/config/confgen.h"
#include "mqtt/fleet.h"

static struct conf_doc doc;
static struct mqtt_fleet ring;
static char text[CONF_FILE_MAX_BYTES + 1];

static int usage(void)
{
	fprintf(stderr, "usage: urmqtt-config check FILE\n"
			"       urmqtt-config gen-header FILE OUT.h\n"
			"       urmqtt-config gen-doc\n"
			"       urmqtt-config fleet-home FILE IDENTITY...\n");
	return 2;
}

/* Read and parse `path`; print the error and return -1 on failure. */
static int load(const char *path)
{
	struct conf_err err = { 0 };
	size_t len;
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "%s: cannot open: %s\n", path, strerror(errno));
		return -1;
	}
	len = fread(text, 1, sizeof text, f);
	if (ferror(f)) {
		fprintf(stderr, "%s: cannot read: %s\n", path, strerror(errno));
		fclose(f);
		return -1;
	}
	fclose(f);
	/* A file of more than CONF_FILE_MAX_BYTES reaches the parser's own size check. */
	if (conf_parse(&doc, text, len, &err) != 0) {
		fprintf(stderr, "%s:%u: %s\n", path, (unsigned)err.line, err.msg);
		return -1;
	}
	return 0;
}

static int gen_header(const char *path, const char *out_path)
{
	char tmp[4096];
	int fd;
	FILE *out;
	if (load(path))
		return 1;
	if ((size_t)snprintf(tmp, sizeof tmp, "%s.XXXXXX", out_path) >= sizeof tmp) {
		fprintf(stderr, "%s: path too long\n", out_path);
		return 1;
	}
	fd = mkstemp(tmp);
	if (fd < 0 || !(out = fdopen(fd, "w"))) {
		fprintf(stderr, "%s: cannot create: %s\n", tmp, strerror(errno));
		if (fd >= 0) {
			close(fd);
			unlink(tmp);
		}
		return 1;
	}
	if (confgen_header(out, &doc, path) != 0 || fflush(out) != 0 || fsync(fd) != 0) {
		fprintf(stderr, "%s: write failed: %s\n", tmp, strerror(errno));
		fclose(out);
		unlink(tmp);
		return 1;
	}
	if (fclose(out) != 0 || chmod(tmp, 0644) != 0 || rename(tmp, out_path) != 0) {
		fprintf(stderr, "%s: cannot write: %s\n", out_path, strerror(errno));
		unlink(tmp);
		return 1;
	}
	return 0;
}

/* The index of a key this file names (the schema has it: test_confgen runs this). */
static size_t key_idx(const char *section, const char *name)
{
	int i = conf_key_find(section, strlen(section), name, strlen(name));
	return i < 0 ? 0 : (size_t)i;
}

static int fleet_home(const char *path, int n, char **ids)
{
	const char *m[MQTT_FLEET_MAX_MEMBERS];
	uint8_t key[MQTT_FLEET_KEY_LEN];
	const char *why = "";
	if (load(path))
		return 1;
	size_t km = key_idx("fleet", "members"), nm = conf_doc_list_len(&doc, km);
	const char *self = conf_doc_str(&doc, key_idx("fleet", "self"));
	const char *hex = conf_doc_str(&doc, key_idx("fleet", "ring_key"));
	if (nm == 0 || nm > MQTT_FLEET_MAX_MEMBERS) {
		fprintf(stderr, "%s: no [fleet] members\n", path);
		return 1;
	}
	for (size_t i = 0; i < nm; i++)
		m[i] = conf_doc_list_item(&doc, km, i);
	if (mqtt_fleet_key_parse(hex, strlen(hex), key) != 0 ||
	    mqtt_fleet_init(&ring, m, nm, self, strlen(self), key,
			    (uint32_t)doc.vals[key_idx("fleet", "vnodes")].i, &why) != 0) {
		fprintf(stderr, "%s: [fleet]: %s\n", path, why);
		return 1;
	}
	for (int i = 0; i < n; i++) {
		const struct mqtt_fleet_member *h =
			mqtt_fleet_member(&ring, mqtt_fleet_home(&ring, (const uint8_t *)ids[i], strlen(ids[i])));
		printf("%s %.*s %.*s\n", ids[i], (int)h->name_len, h->name, (int)h->ref_len, h->ref);
	}
	return fflush(stdout) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && strcmp(argv[1], "fleet-home") == 0)
		return fleet_home(argv[2], argc - 3, argv + 3);
	if (argc == 3 && strcmp(argv[1], "check") == 0)
		return load(argv[2]) ? 1 : 0;
	if (argc == 4 && strcmp(argv[1], "gen-header") == 0)
		return gen_header(argv[2], argv[3]);
	if (argc == 2 && strcmp(argv[1], "gen-doc") == 0) {
		if (confgen_doc(stdout) != 0 || fflush(stdout) != 0) {
			fprintf(stderr, "urmqtt-config: write failed: %s\n", strerror(errno));
			return 1;
		}
		return 0;
	}
	return usage();
}
