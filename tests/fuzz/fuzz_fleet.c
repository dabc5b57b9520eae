/* SPDX-License-Identifier: MIT
 * Fuzz target for mqtt/fleet: the [fleet] member strings ("name=host:port"), the ring key
 * and the ring built from them. Input: a vnodes byte, then lines (LF): the first is self,
 * the second the key, the rest members (at most 17, so a list one too long is tried).
 * Checks: a parsed member's name and reference lie inside its line, the name ends at the
 * '=' and the reference is the rest; a list mqtt_fleet_check_list accepts builds a ring
 * whose invariants hold, and every identity's home is a member; nothing reads past a line
 * (each is copied to a buffer of exactly its length). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/err.h"
#include "mqtt/fleet.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_LINES (MQTT_FLEET_MAX_MEMBERS + 3u)

static struct mqtt_fleet ring;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	uint32_t vnodes = data[0];
	data++;
	size--;
	char *line[MAX_LINES];
	size_t len[MAX_LINES], n = 0, start = 0;
	for (size_t i = 0; i <= size && n < MAX_LINES; i++) {
		if (i < size && data[i] != '\n')
			continue;
		len[n] = i - start;
		line[n] = malloc(len[n] + 1u); /* NUL for the list API; the parser gets len only */
		if (!line[n])
			abort();
		memcpy(line[n], data + start, len[n]);
		line[n][len[n]] = 0;
		n++;
		start = i + 1;
	}
	for (size_t i = 2; i < n; i++) {
		struct mqtt_fleet_member m;
		if (mqtt_fleet_member_parse(line[i], len[i], &m) != 0)
			continue;
		if (m.name != line[i] || m.name_len == 0 || m.name_len >= len[i] || line[i][m.name_len] != '=' ||
		    m.ref != line[i] + m.name_len + 1 || m.ref + m.ref_len != line[i] + len[i] ||
		    !memchr(m.ref, ':', m.ref_len) || m.name_len > MQTT_FLEET_NAME_MAX)
			abort();
	}
	uint8_t key[MQTT_FLEET_KEY_LEN] = { 0 };
	if (n >= 2 && mqtt_fleet_key_parse(line[1], len[1], key) != 0 && len[1] == 32) {
		/* refused only for a byte that is not a hex digit */
		size_t hex = 0;
		for (size_t i = 0; i < 32; i++)
			hex += (line[1][i] >= '0' && line[1][i] <= '9') || (line[1][i] >= 'a' && line[1][i] <= 'f') ||
			       (line[1][i] >= 'A' && line[1][i] <= 'F');
		if (hex == 32)
			abort();
	}
	if (n >= 3) {
		const char *why = NULL;
		const char *const *members = (const char *const *)(line + 2);
		int ok = mqtt_fleet_check_list(members, n - 2, line[0], len[0], &why);
		if (ok != 0 && !why)
			abort();
		int built = mqtt_fleet_init(&ring, members, n - 2, line[0], len[0], key, vnodes, &why);
		if (built == 0) {
			if (ok != 0 || mqtt_fleet_check(&ring) != 0)
				abort();
			for (size_t i = 0; i < n; i++)
				if (mqtt_fleet_home(&ring, (const uint8_t *)line[i], len[i]) >= ring.n_members)
					abort();
		} else if (ok == 0 && vnodes != 0) {
			abort(); /* a list that checks builds with any vnodes 1..255 */
		}
	}
	for (size_t i = 0; i < n; i++)
		free(line[i]);
	return 0;
}
