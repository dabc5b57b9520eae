/* SPDX-License-Identifier: MIT
 *
 * Bounded snprintf subset (lib/fmt.h). Output goes through one sink that counts every
 * character and stores only those that fit, so truncation is always safe and the return
 * value is the untruncated length. No recursion, no allocation, no floating point.
 */
#include "lib/fmt.h"
#include "lib/mem.h"

struct sink {
	char *buf;
	size_t len;
	size_t n; /* characters produced so far (may exceed len) */
};

static void put(struct sink *s, char c)
{
	if (s->len && s->n < s->len - 1)
		s->buf[s->n] = c;
	s->n++;
}

static void pad(struct sink *s, char c, int count)
{
	while (count-- > 0)
		put(s, c);
}

struct spec {
	bool left, zero;
	int width, prec; /* prec < 0: none */
};

static void emit_str(struct sink *s, const char *str, const struct spec *sp)
{
	size_t len;
	if (!str)
		str = "(null)";
	len = sp->prec >= 0 ? lib_strnlen(str, (size_t)sp->prec) : lib_strlen(str);
	if (!sp->left)
		pad(s, ' ', sp->width - (int)len);
	for (size_t i = 0; i < len; i++)
		put(s, str[i]);
	if (sp->left)
		pad(s, ' ', sp->width - (int)len);
}

static void emit_num(struct sink *s, uint64_t v, bool neg, unsigned base, bool upper,
		     const struct spec *sp, const char *prefix)
{
	char tmp[24];
	int n = 0, plen = (int)lib_strlen(prefix) + (neg ? 1 : 0), fill;
	const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
	do {
		tmp[n++] = digits[v % base];
		v /= base;
	} while (v);
	fill = sp->width - n - plen;
	if (!sp->left && !sp->zero)
		pad(s, ' ', fill);
	if (neg)
		put(s, '-');
	for (const char *p = prefix; *p; p++)
		put(s, *p);
	if (!sp->left && sp->zero)
		pad(s, '0', fill);
	while (n)
		put(s, tmp[--n]);
	if (sp->left)
		pad(s, ' ', fill);
}

int fmt_vsnprintf(char *buf, size_t len, const char *fmt, va_list ap)
{
	struct sink s = { buf, len, 0 };
	while (*fmt) {
		struct spec sp = { false, false, 0, -1 };
		int lmod = 0; /* -2 hh, -1 h, 0 int, 1 long, 2 long long, 3 size_t */
		if (*fmt != '%') {
			put(&s, *fmt++);
			continue;
		}
		fmt++;
		for (;; fmt++) {
			if (*fmt == '-')
				sp.left = true;
			else if (*fmt == '0')
				sp.zero = true;
			else
				break;
		}
		if (*fmt == '*') {
			sp.width = va_arg(ap, int);
			fmt++;
		} else {
			while (*fmt >= '0' && *fmt <= '9' && sp.width < 1000)
				sp.width = sp.width * 10 + (*fmt++ - '0');
		}
		if (*fmt == '.') {
			fmt++;
			sp.prec = 0;
			if (*fmt == '*') {
				sp.prec = va_arg(ap, int);
				fmt++;
			} else {
				while (*fmt >= '0' && *fmt <= '9' && sp.prec < 100000)
					sp.prec = sp.prec * 10 + (*fmt++ - '0');
			}
		}
		if (*fmt == 'h') {
			lmod = -1;
			if (*++fmt == 'h') {
				lmod = -2;
				fmt++;
			}
		} else if (*fmt == 'l') {
			lmod = 1;
			if (*++fmt == 'l') {
				lmod = 2;
				fmt++;
			}
		} else if (*fmt == 'z') {
			lmod = 3;
			fmt++;
		}
		switch (*fmt) {
		case 'd':
		case 'i': {
			int64_t v;
			if (lmod == 1)
				v = va_arg(ap, long);
			else if (lmod == 2)
				v = va_arg(ap, long long);
			else if (lmod == 3)
				v = (int64_t)va_arg(ap, size_t);
			else
				v = va_arg(ap, int);
			if (lmod == -1)
				v = (short)v;
			else if (lmod == -2)
				v = (signed char)v; /* NOLINT(bugprone-signed-char-misuse): %hhd narrows on purpose */
			emit_num(&s, v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v, v < 0, 10,
				 false, &sp, "");
			break;
		}
		case 'u':
		case 'x':
		case 'X': {
			uint64_t v;
			if (lmod == 1)
				v = va_arg(ap, unsigned long);
			else if (lmod == 2)
				v = va_arg(ap, unsigned long long);
			else if (lmod == 3)
				v = va_arg(ap, size_t);
			else
				v = va_arg(ap, unsigned);
			if (lmod == -1)
				v = (unsigned short)v;
			else if (lmod == -2)
				v = (unsigned char)v;
			emit_num(&s, v, false, *fmt == 'u' ? 10 : 16, *fmt == 'X', &sp, "");
			break;
		}
		case 'p':
			emit_num(&s, (uintptr_t)va_arg(ap, void *), false, 16, false, &sp, "0x");
			break;
		case 'c': {
			char c = (char)va_arg(ap, int);
			if (!sp.left)
				pad(&s, ' ', sp.width - 1);
			put(&s, c);
			if (sp.left)
				pad(&s, ' ', sp.width - 1);
			break;
		}
		case 's':
			emit_str(&s, va_arg(ap, const char *), &sp);
			break;
		case '%':
			put(&s, '%');
			break;
		case '\0':
			put(&s, '%');
			continue; /* do not step past the terminator */
		default:
			put(&s, '%');
			put(&s, '?');
			break;
		}
		fmt++;
	}
	if (len)
		buf[s.n < len ? s.n : len - 1] = '\0';
	return s.n > 0x7fffffff ? 0x7fffffff : (int)s.n;
}

int fmt_snprintf(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n;
	va_start(ap, fmt);
	n = fmt_vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	return n;
}

/* Days since 1970-01-01 to a civil date: shift the year to start in March (the leap day
 * then ends it), split into 400-year eras of 146097 days, and read the year of the era,
 * the day of that year and the month from the day count. */
int fmt_utc(char *buf, size_t len, int64_t unix_ms)
{
	/* 0000-01-01 and 10000-01-01 in Unix seconds */
	if (unix_ms == 0 || unix_ms < INT64_C(-62167219200000) || unix_ms >= INT64_C(253402300800000))
		return fmt_snprintf(buf, len, "unknown");
	int64_t secs = unix_ms / 1000 - (unix_ms % 1000 < 0);
	int64_t days = secs / 86400 - (secs % 86400 < 0);
	int64_t sod = secs - days * 86400;
	int64_t z = days + 719468;              /* days since 0000-03-01 */
	int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	int64_t doe = z - era * 146097;         /* [0, 146096] */
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365; /* [0, 399] */
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);               /* [0, 365] */
	int64_t mp = (5 * doy + 2) / 153;       /* March = 0 */
	int64_t day = doy - (153 * mp + 2) / 5 + 1;
	int64_t month = mp < 10 ? mp + 3 : mp - 9;
	int64_t year = yoe + era * 400 + (month <= 2);
	return fmt_snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02dZ", (int)year, (int)month, (int)day,
			    (int)(sod / 3600), (int)(sod / 60 % 60), (int)(sod % 60));
}
