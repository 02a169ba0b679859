// SPDX-License-Identifier: GPL-2.0
/*
 * Helpers shared by the SVG, speedscope and report writers (see
 * write.h): frame text parsing, a buffered sink with escaping, and an
 * id map. Escaping is where untrusted bytes (symbol names, file names,
 * thread names set by the profiled program) meet a markup language, so
 * every byte is checked: the output must stay well-formed XML or JSON
 * whatever the input holds.
 */
#include "write.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>

#define KERNEL_FILE "[kernel."

static bool has_prefix(const char *s, size_t len, const char *pre)
{
	size_t n = strlen(pre);

	return len >= n && !memcmp(s, pre, n);
}

static bool has_suffix(const char *s, size_t len, const char *suf)
{
	size_t n = strlen(suf);

	return len >= n && !memcmp(s + len - n, suf, n);
}

/* The last " (" of a text that ends in ')': where `name (file:line)`
 * splits. Names may hold parentheses themselves (`operator()`,
 * `(anonymous namespace)::f`), the file part never holds " (". */
static const char *last_paren(const char *s, size_t len)
{
	size_t i;

	if (len < 3 || s[len - 1] != ')')
		return NULL;
	for (i = len - 1; i-- > 0;)
		if (s[i] == ' ' && s[i + 1] == '(')
			return s + i;
	return NULL;
}

static size_t strspn_n(const char *s, size_t n, const char *set)
{
	size_t i = 0;

	while (i < n && s[i] && strchr(set, s[i]))
		i++;
	return i;
}

/* `thread (1234)`, `thread (0x7F3A2B1C0700)`, either with `: NAME`
 * (pyspy-formats.md §1.5); a Python function named `thread` is
 * `thread (file.py:1)` and must not pass. */
static bool is_thread_root(const char *s, size_t len)
{
	size_t i = 8, k;

	if (!has_prefix(s, len, "thread ("))
		return false;
	if (has_prefix(s + i, len - i, "0x"))
		i += 2 + (k = strspn_n(s + i + 2, len - i - 2, "0123456789abcdefABCDEF"));
	else
		i += (k = strspn_n(s + i, len - i, "0123456789"));
	if (!k || i >= len || s[i] != ')')
		return false;
	return i + 1 == len || has_prefix(s + i + 1, len - i - 1, ": ");
}

static bool is_python_file(const char *f, size_t n)
{
	/* py-spy's pseudo files: <frozen importlib._bootstrap>, <string>,
	 * <stdin> (pyspy-formats.md §1.11). */
	if (n >= 2 && f[0] == '<' && f[n - 1] == '>')
		return true;
	return has_suffix(f, n, ".py") || has_suffix(f, n, ".pyw");
}

static void split_line(struct frame_parts *p)
{
	size_t i = p->file_len, j;
	unsigned long v = 0;

	while (i > 0 && p->file[i - 1] >= '0' && p->file[i - 1] <= '9')
		i--;
	if (i == p->file_len || i == 0 || p->file[i - 1] != ':' ||
	    p->file_len - i > 9)
		return;
	for (j = i; j < p->file_len; j++)
		v = v * 10 + (unsigned long)(p->file[j] - '0');
	p->line = v;
	p->file_len = i - 1;
}

void frame_parse(const char *s, size_t len, struct frame_parts *p)
{
	const char *par;

	memset(p, 0, sizeof(*p));
	p->func = s;
	p->func_len = len;
	if (is_thread_root(s, len)) {
		p->kind = FRAME_THREAD;
		return;
	}
	if (has_prefix(s, len, "process ")) {
		size_t k = strspn_n(s + 8, len - 8, "0123456789");

		if (k && 8 + k < len && s[8 + k] == ':') {
			p->kind = FRAME_PROCESS;
			return;
		}
	}
	if (has_suffix(s, len, "_[k]")) { /* stackcollapse-perf --kernel */
		p->kind = FRAME_KERNEL;
		p->func_len = len - 4;
		return;
	}
	par = last_paren(s, len);
	if (par) {
		p->func_len = (size_t)(par - s);
		p->file = par + 2;
		p->file_len = len - p->func_len - 3;
		split_line(p);
	}
	if (p->file && has_prefix(p->file, p->file_len, KERNEL_FILE))
		p->kind = FRAME_KERNEL;
	else if (has_prefix(s, len, "py::") ||
		 (p->file && is_python_file(p->file, p->file_len)))
		p->kind = FRAME_PYTHON;
}

enum frame_kind frame_kind_of(const char *s, size_t len)
{
	struct frame_parts p;

	frame_parse(s, len, &p);
	return p.kind;
}

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
