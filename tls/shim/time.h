/* SPDX-License-Identifier: MIT
 * Shim <time.h> for mbedTLS compiled freestanding: the broken-down time type only.
 * Clocks and calendar conversion come from tls/handshake.c (MBEDTLS_PLATFORM_*_ALT). */
#ifndef URMQTT_TLS_SHIM_TIME_H
#define URMQTT_TLS_SHIM_TIME_H
typedef long long time_t;
struct tm {
	int tm_sec, tm_min, tm_hour, tm_mday, tm_mon, tm_year, tm_wday, tm_yday, tm_isdst;
};
#endif
