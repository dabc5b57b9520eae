/* SPDX-License-Identifier: MIT
 *
 * urmqtt-config: the build-time configuration tool. `check FILE` validates,
 * `gen-header FILE OUT.h` validates and writes the constants header atomically (a temp
 * file in OUT's directory renamed over OUT, so a failed run leaves no half-written
 * header a later make would trust), `gen-doc` prints docs/CONFIGURATION.md.
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

static struct conf_doc doc;
static char text[CONF_FILE_MAX_BYTES + 1];

static int usage(void)
{
	fprintf(stderr, "usage: urmqtt-config check FILE\n"
			"       urmqtt-config gen-header FILE OUT.h\n"
			"       urmqtt-config gen-doc\n");
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

int main(int argc, char **argv)
{
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
