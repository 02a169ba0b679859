// SPDX-License-Identifier: GPL-2.0
/*
 * Helpers shared by the SVG, speedscope and report writers (see
 * write.h): a buffered sink with escaping, and an id map. Escaping is
 * where untrusted bytes (symbol names, file names, thread names set by
 * the profiled program) meet a markup language, so every byte is checked:
 * the output must stay well-formed XML or JSON whatever the input holds.
 */
#include "write.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>

/* ---- output ---- */

int wout_init(struct wout *w, FILE *out)
{
	memset(w, 0, sizeof(*w));
	w->out = out;
	w->cap = 256 * 1024;
	w->buf = malloc(w->cap);
	return w->buf ? 0 : -ENOMEM;
}

static void wout_flush(struct wout *w)
{
	if (w->len && !w->err && fwrite(w->buf, 1, w->len, w->out) != w->len)
		w->err = -EIO;
	w->len = 0;
}

int wout_finish(struct wout *w)
{
	wout_flush(w);
	if (!w->err && ferror(w->out))
		w->err = -EIO;
	free(w->buf);
	w->buf = NULL;
	return w->err;
}

void wout_put(struct wout *w, const char *s, size_t n)
{
	while (n && !w->err) {
		size_t k = w->cap - w->len < n ? w->cap - w->len : n;

		memcpy(w->buf + w->len, s, k);
		w->len += k;
		s += k;
		n -= k;
		if (w->len == w->cap)
			wout_flush(w);
	}
}

void wout_str(struct wout *w, const char *s)
{
	wout_put(w, s, strlen(s));
}

void wout_fmt(struct wout *w, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		w->err = -EIO;
	else
		wout_put(w, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

void wout_u64(struct wout *w, u64 v)
{
	char buf[24];
	size_t i = sizeof(buf);

	do {
		buf[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	wout_put(w, buf + i, sizeof(buf) - i);
}

void wout_fixed(struct wout *w, u64 v, u64 div, unsigned digits)
{
	static const u64 pow10[] = { 1, 10, 100, 1000, 10000, 100000, 1000000 };
	unsigned __int128 x;
	u64 scale, r;
	char frac[8];
	unsigned i;

	if (digits > 6)
		digits = 6;
	scale = pow10[digits];
	x = ((unsigned __int128)v * scale * 2 + div) / ((unsigned __int128)div * 2);
	wout_u64(w, (u64)(x / scale));
	if (!digits)
		return;
	r = (u64)(x % scale);
	frac[0] = '.';
	for (i = digits; i > 0; i--, r /= 10)
		frac[i] = (char)('0' + r % 10);
	wout_put(w, frac, digits + 1);
}

/* ---- UTF-8 ---- */

size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned c = s[0], need, cp, i;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		need = 1, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		need = 2, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		need = 3, cp = c & 0x07;
	else
		return 0;
	if (n < need + 1)
		return 0;
	for (i = 1; i <= need; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	/* Overlong forms, UTF-16 surrogates and values past U+10FFFF are
	 * malformed (RFC 3629 §3). */
	if ((need == 2 && cp < 0x800) || (need == 3 && cp < 0x10000) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return need + 1;
}

size_t utf8_prefix(const char *s, size_t n, size_t chars)
{
	size_t i = 0, k;

	while (i < n && chars) {
		k = utf8_len((const unsigned char *)s + i, n - i);
		i += k ? k : 1;
		chars--;
	}
	return i;
}

#define REPLACEMENT "\xef\xbf\xbd" /* U+FFFD */

void wout_xml(struct wout *w, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, run = 0, k;

	while (i < n) {
		const char *rep = NULL;

		k = utf8_len(u + i, n - i);
		if (k == 1) {
			switch (u[i]) {
			case '&': rep = "&amp;"; break;
			case '<': rep = "&lt;"; break;
			case '>': rep = "&gt;"; break;
			case '"': rep = "&quot;"; break;
			case '\'': rep = "&apos;"; break;
			default:
				if (u[i] < 0x20 && u[i] != '\t')
					rep = REPLACEMENT;
			}
		} else if (!k || (k == 3 && u[i] == 0xef && u[i + 1] == 0xbf &&
				  u[i + 2] >= 0xbe)) { /* U+FFFE, U+FFFF */
			rep = REPLACEMENT;
		}
		if (!k)
			k = 1;
		if (rep) {
			wout_put(w, s + run, i - run);
			wout_str(w, rep);
			run = i + k;
		}
		i += k;
	}
	wout_put(w, s + run, n - run);
}

void wout_json(struct wout *w, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, run = 0, k;
	char esc[8];

	while (i < n) {
		const char *rep = NULL;

		k = utf8_len(u + i, n - i);
		if (!k) {
			rep = "\\ufffd";
			k = 1;
		} else if (k == 1 && (u[i] == '"' || u[i] == '\\')) {
			rep = u[i] == '"' ? "\\\"" : "\\\\";
		} else if (k == 1 && u[i] < 0x20) {
			snprintf(esc, sizeof(esc), "\\u%04x", u[i]);
			rep = esc;
		}
		if (rep) {
			wout_put(w, s + run, i - run);
			wout_str(w, rep);
			run = i + k;
		}
		i += k;
	}
	wout_put(w, s + run, n - run);
}
