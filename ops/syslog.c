/* SPDX-License-Identifier: MIT
 *
 * RFC 5424 formatter (ops/syslog.h). Owns no state: one call turns one message into
 *   <PRI>1 TIMESTAMP HOSTNAME APP-NAME PROCID MSGID STRUCTURED-DATA [SP MSG]
 * Must never write past cap, never emit a byte outside 32..126, and never let input
 * bytes form a separator: header fields hold only 33..126 (others become '_'), SD values
 * escape '"' '\' ']' and turn other bytes outside 32..126 into '?', and so does MSG (sent
 * as plain ASCII without a BOM, RFC 5424 6.4). Every write goes through one sink that
 * stores only what fits and remembers that something did not.
 */
#include "ops/syslog.h"
#include "lib/mem.h"

/* RFC 5612 reserves 32473 for documentation: a registered Private Enterprise Number must
 * replace it before anyone outside the project reads these messages. */
#define SD_ID "refusal@32473"
#define TS_LEN 24 /* 2026-12-02T10:05:34.229Z */

/* Worst case of HEADER SP STRUCTURED-DATA: every header field at its maximum, both SD
 * values cut and every character escaped. */
#define HEAD_WORST                                                                    \
	(sizeof "<191>1 " - 1 + TS_LEN + 1 + OPS_SYSLOG_HOSTNAME_MAX + 1 +              \
	 OPS_SYSLOG_APP_MAX + 1 + 10 + 1 + OPS_SYSLOG_MSGID_MAX + 1 + sizeof "[" SD_ID   \
	 "]" - 1 + 3 * (sizeof " identity=\"\"" - 1 + (size_t)2 * OPS_SYSLOG_SD_VALUE_MAX))
STATIC_ASSERT(HEAD_WORST <= OPS_SYSLOG_HEAD_MAX, "syslog header and SD bound");

struct sink {
	char *buf; /* borrowed */
	size_t cap;
	size_t len; /* <= cap */
	bool full;  /* a write did not fit (sticky) */
};

static void put(struct sink *s, char c)
{
	if (s->len < s->cap)
		s->buf[s->len++] = c;
	else
		s->full = true;
}

static void put_str(struct sink *s, const char *str)
{
	while (*str)
		put(s, *str++);
}

/* A header field: NILVALUE for NULL or "", else at most max bytes of 33..126. */
static void put_field(struct sink *s, const char *v, size_t max)
{
	if (!v || !*v) {
		put(s, '-');
		return;
	}
	for (size_t i = 0; i < max && v[i]; i++) {
		unsigned char c = (unsigned char)v[i];
		put(s, c >= 33 && c <= 126 ? (char)c : '_');
	}
}

/* unsigned decimal, no sign, at least `width` digits */
static void put_dec(struct sink *s, uint64_t v, unsigned width)
{
	char tmp[20];
	unsigned n = 0;
	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (width > n) {
		put(s, '0');
		width--;
	}
	while (n)
		put(s, tmp[--n]);
}

/* RFC 3339 UTC with milliseconds. Days since 1970-01-01 to a civil date: shift the year
 * to start in March (the leap day then ends it), split into 400-year eras of 146097 days
 * and read the year of the era, the day of that year and the month from the day count.
 * unix_ns >= 0 keeps all of it unsigned; UINT64_MAX ns is in 2554. */
static void put_time(struct sink *s, uint64_t unix_ns)
{
	if (unix_ns == 0) {
		put(s, '-');
		return;
	}
	uint64_t ms = unix_ns / 1000000u;
	uint64_t secs = ms / 1000u;
	uint64_t days = secs / 86400u;
	uint64_t sod = secs % 86400u;
	uint64_t z = days + 719468u; /* days since 0000-03-01 */
	uint64_t era = z / 146097u;
	uint64_t doe = z - era * 146097u;                                      /* [0, 146096] */
	uint64_t yoe = (doe - doe / 1460u + doe / 36524u - doe / 146096u) / 365u; /* [0, 399] */
	uint64_t doy = doe - (365u * yoe + yoe / 4u - yoe / 100u);             /* [0, 365] */
	uint64_t mp = (5u * doy + 2u) / 153u;                                  /* March = 0 */
	uint64_t day = doy - (153u * mp + 2u) / 5u + 1u;
	uint64_t month = mp < 10u ? mp + 3u : mp - 9u;
	uint64_t year = yoe + era * 400u + (month <= 2u);

	put_dec(s, year, 4);
	put(s, '-');
	put_dec(s, month, 2);
	put(s, '-');
	put_dec(s, day, 2);
	put(s, 'T');
	put_dec(s, sod / 3600u, 2);
	put(s, ':');
	put_dec(s, sod / 60u % 60u, 2);
	put(s, ':');
	put_dec(s, sod % 60u, 2);
	put(s, '.');
	put_dec(s, ms % 1000u, 3);
	put(s, 'Z');
}

/* One SD-PARAM: SP name="value". The value is untrusted: at most
 * OPS_SYSLOG_SD_VALUE_MAX characters before escaping (the last '~' when cut), '"' '\'
 * ']' escaped (RFC 5424 6.3.3), other bytes outside 32..126 replaced by '?'. */
static void put_param(struct sink *s, const char *name, const char *v)
{
	size_t n = strnlen(v, OPS_SYSLOG_SD_VALUE_MAX + 1);
	bool cut = n > OPS_SYSLOG_SD_VALUE_MAX;
	if (cut)
		n = OPS_SYSLOG_SD_VALUE_MAX - 1;
	put(s, ' ');
	put_str(s, name);
	put_str(s, "=\"");
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)v[i];
		if (c == '"' || c == '\\' || c == ']')
			put(s, '\\');
		put(s, c >= 32 && c <= 126 ? (char)c : '?');
	}
	if (cut)
		put(s, '~');
	put(s, '"');
}

size_t ops_syslog_format(char *buf, size_t cap, const struct ops_syslog_msg *m)
{
	struct sink s = { buf, cap, 0, false };
	unsigned facility = m->facility > 23 ? 23u : m->facility;
	unsigned severity = m->severity > 7 ? 7u : m->severity;

	put(&s, '<');
	put_dec(&s, facility * 8u + severity, 1);
	put_str(&s, ">1 ");
	put_time(&s, m->unix_ns);
	put(&s, ' ');
	put_field(&s, m->hostname, OPS_SYSLOG_HOSTNAME_MAX);
	put(&s, ' ');
	put_field(&s, m->app, OPS_SYSLOG_APP_MAX);
	put(&s, ' ');
	put_dec(&s, m->procid, 1); /* 10 digits at most, within PROCID's 128 */
	put(&s, ' ');
	put_field(&s, m->msgid, OPS_SYSLOG_MSGID_MAX);
	put(&s, ' ');
	if (!m->sd_identity && !m->sd_reason && !m->sd_peer) {
		put(&s, '-');
	} else {
		put_str(&s, "[" SD_ID);
		if (m->sd_identity)
			put_param(&s, "identity", m->sd_identity);
		if (m->sd_reason)
			put_param(&s, "reason", m->sd_reason);
		if (m->sd_peer)
			put_param(&s, "peer", m->sd_peer);
		put(&s, ']');
	}
	if (s.full)
		return 0; /* a message without its whole header must not leave */

	if (!m->text || m->text_len == 0)
		return s.len;
	size_t room = cap - s.len;
	if (room < 2)
		return s.len; /* not even " ~": leave MSG out */
	bool cut = 1 + m->text_len > room;
	size_t n = cut ? room - 2 : m->text_len;
	put(&s, ' ');
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)m->text[i];
		put(&s, c >= 32 && c <= 126 ? (char)c : '?');
	}
	if (cut)
		put(&s, '~');
	return s.len;
}

uint8_t ops_syslog_severity(int log_level)
{
	/* RFC 5424 6.2.1: 3 Error, 4 Warning, 6 Informational, 7 Debug. */
	static const uint8_t map[4] = { 3, 4, 6, 7 };
	if (log_level < 0)
		return map[0];
	if (log_level > 3)
		return map[3];
	return map[log_level];
}

bool ops_syslog_name_ok(const char *s, size_t max)
{
	if (!s || max == 0 || max == SIZE_MAX)
		return false;
	size_t n = strnlen(s, max + 1);
	if (n == 0 || n > max)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 33 || (unsigned char)s[i] > 126)
			return false;
	return true;
}
