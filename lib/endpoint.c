/* SPDX-License-Identifier: MIT
 * UDP endpoints from the configuration (lib/endpoint.h). Reads only s[0..len). */
#include "lib/endpoint.h"

#include "lib/err.h"

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Decimal digits at s[*i..len): at least one, at most max_digits, value <= max. */
static bool decimal(const char *s, size_t len, size_t *i, uint32_t max_digits, uint32_t max, uint32_t *out)
{
	uint32_t v = 0, n = 0;
	while (*i < len && is_digit(s[*i])) {
		if (++n > max_digits)
			return false;
		v = v * 10u + (uint32_t)(s[*i] - '0');
		(*i)++;
	}
	if (n == 0 || v > max)
		return false;
	*out = v;
	return true;
}

int endpoint_parse(const char *s, size_t len, uint16_t default_port, struct endpoint *out)
{
	size_t i = 0;
	uint32_t ip = 0, v;
	for (int part = 0; part < 4; part++) {
		if (part > 0 && (i >= len || s[i++] != '.'))
			return -E_INVAL;
		if (!decimal(s, len, &i, 3, 255, &v))
			return -E_INVAL;
		ip = ip << 8 | v;
	}
	uint32_t port = default_port;
	if (i < len) {
		if (s[i++] != ':' || !decimal(s, len, &i, 5, 65535, &port) || i != len)
			return -E_INVAL;
	}
	if (port == 0)
		return -E_INVAL;
	out->ip = ip;
	out->port = (uint16_t)port;
	return 0;
}

bool endpoint_unicast(uint32_t ip)
{
	uint32_t a = ip >> 24;
	return a != 0 && a != 127 && a < 224;
}

bool endpoint_private(uint32_t ip)
{
	return (ip & 0xff000000u) == 0x0a000000u ||  /* 10.0.0.0/8 */
	       (ip & 0xfff00000u) == 0xac100000u ||  /* 172.16.0.0/12 */
	       (ip & 0xffff0000u) == 0xc0a80000u ||  /* 192.168.0.0/16 */
	       (ip & 0xffc00000u) == 0x64400000u;    /* 100.64.0.0/10 */
}
