/* SPDX-License-Identifier: MIT
 *
 * The few C library functions mbedTLS needs beyond lib/mem.h, for the image only (on the
 * host libc provides them): snprintf/vsnprintf over lib/fmt (x509 name formatting),
 * strstr (PEM markers) and strchr (x509 names). Never used by our own code, which has
 * lib/fmt and cursors.
 */
#include <stdarg.h>

#include "lib/fmt.h"
#include "lib/mem.h"

int snprintf(char *buf, size_t len, const char *fmt, ...);
int vsnprintf(char *buf, size_t len, const char *fmt, va_list ap);
char *strstr(const char *hay, const char *needle);
char *strchr(const char *s, int c);

int vsnprintf(char *buf, size_t len, const char *fmt, va_list ap)
{
	return fmt_vsnprintf(buf, len, fmt, ap);
}

int snprintf(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = fmt_vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	return n;
}

char *strchr(const char *s, int c)
{
	for (;; s++) {
		if (*s == (char)c)
			return (char *)(uintptr_t)s; /* NOLINT(performance-no-int-to-ptr): C's strchr drops const */
		if (!*s)
			return NULL;
	}
}

char *strstr(const char *hay, const char *needle)
{
	size_t n = strlen(needle);
	if (n == 0)
		return (char *)(uintptr_t)hay; /* NOLINT(performance-no-int-to-ptr): C's strstr drops const */
	for (; *hay; hay++)
		if (*hay == *needle && strncmp(hay, needle, n) == 0)
			return (char *)(uintptr_t)hay; /* NOLINT(performance-no-int-to-ptr): C's strstr drops const */
	return NULL;
}
