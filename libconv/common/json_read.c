// SPDX-License-Identifier: GPL-2.0
/*
 * JSON pull parser (see json_read.h). Grammar: RFC 8259 §2-§7. Every
 * byte is checked against ->end before it is read; numbers are copied to
 * a bounded NUL-terminated buffer before strtod() sees them, because the
 * input is not NUL-terminated. Errors are sticky: once ->err is set the
 * cursor stops and every call returns it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "json_read.h"
#include "perfspy.h"
#include "util.h"

#define JR_MAX_NUMBER 64 /* longer numbers are refused, not truncated */

void jr_init(struct jr *j, const char *buf, size_t len)
{
	memset(j, 0, sizeof(*j));
	j->start = j->p = buf;
	j->end = buf + len;
}

void jr_free(struct jr *j)
{
	free(j->sbuf);
	j->sbuf = NULL;
	j->scap = 0;
}

static int jr_fail(struct jr *j, int err)
{
	if (!j->err)
		j->err = err;
	return j->err;
}

/* RFC 8259 §2: insignificant whitespace is these four bytes only. */
static void skip_ws(struct jr *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' ||
				 *j->p == '\n' || *j->p == '\r'))
		j->p++;
}

int jr_peek(struct jr *j)
{
	if (j->err)
		return -1;
	skip_ws(j);
	return j->p < j->end ? (unsigned char)*j->p : -1;
}

static bool expect(struct jr *j, char c)
{
	if (jr_peek(j) != (unsigned char)c) {
		jr_fail(j, -PERFSPY_E_CAPTURE);
		return false;
	}
	j->p++;
	return true;
}

bool jr_obj_begin(struct jr *j)
{
	return expect(j, '{');
}

bool jr_arr_begin(struct jr *j)
{
	return expect(j, '[');
}

/* The separator or closer before the next member/element: 1 when an item
 * follows, 0 when @close was consumed. */
static int next_item(struct jr *j, bool *first, char close)
{
	int c = jr_peek(j);

	if (c == (unsigned char)close) {
		j->p++;
		return 0;
	}
	if (!*first) {
		if (c != ',')
			return jr_fail(j, -PERFSPY_E_CAPTURE);
		j->p++;
		c = jr_peek(j);
	}
	*first = false;
	return c < 0 ? jr_fail(j, -PERFSPY_E_CAPTURE) : 1;
}

int jr_obj_next(struct jr *j, bool *first, const char **key, size_t *len)
{
	int r = next_item(j, first, '}');

	if (r <= 0)
		return r;
	r = jr_string(j, key, len);
	if (r)
		return r;
	return expect(j, ':') ? 1 : j->err;
}

int jr_arr_next(struct jr *j, bool *first)
{
	return next_item(j, first, ']');
}

/* Four hex digits (the caller checked they are there), or -1. */
static int hex4(const char *p)
{
	int v = 0, i;

	for (i = 0; i < 4; i++) {
		char c = p[i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= c - '0';
		else if (c >= 'a' && c <= 'f')
			v |= c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			v |= c - 'A' + 10;
		else
			return -1;
	}
	return v;
}

/* Append code point @cp as UTF-8 at @out (room for 4 bytes). */
static size_t put_utf8(char *out, unsigned cp)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | cp >> 6);
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | cp >> 12);
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | cp >> 18);
	out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* A \u escape at j->p (just after the backslash-u): the code point,
 * joining a surrogate pair; lone surrogates become U+FFFD (RFC 8259 §8.2
 * leaves them to the reader). -1 on bad hex. */
static long unicode_escape(struct jr *j)
{
	int hi, lo;

	if (j->end - j->p < 4 || (hi = hex4(j->p)) < 0)
		return -1;
	j->p += 4;
	if (hi < 0xd800 || hi > 0xdfff)
		return hi;
	if (hi > 0xdbff || j->end - j->p < 6 || j->p[0] != '\\' ||
	    j->p[1] != 'u' || (lo = hex4(j->p + 2)) < 0xdc00 || lo > 0xdfff)
		return 0xfffd;
	j->p += 6;
	return 0x10000 + ((long)(hi - 0xd800) << 10) + (lo - 0xdc00);
}

/* One escape after the backslash: its bytes at @out, their number, or
 * 0 on a bad escape. */
static size_t escape(struct jr *j, char *out)
{
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	const char *k;
	long cp;
	char c;

	if (j->p >= j->end)
		return 0;
	c = *j->p++;
	if (c == 'u') {
		cp = unicode_escape(j);
		return cp < 0 ? 0 : put_utf8(out, (unsigned)cp);
	}
	k = c ? strchr(from, c) : NULL;
	if (!k)
		return 0;
	out[0] = to[k - from];
	return 1;
}

int jr_string(struct jr *j, const char **s, size_t *len)
{
	size_t n = 0;

	if (!expect(j, '"'))
		return j->err;
	for (;;) {
		unsigned char c;

		/* Room for the longest expansion (4 bytes) and a NUL. */
		if (ensure_mem((void **)&j->sbuf, &j->scap, 1, n + 5))
			return jr_fail(j, -ENOMEM);
		if (j->p >= j->end)
			return jr_fail(j, -PERFSPY_E_CAPTURE);
		c = (unsigned char)*j->p++;
		if (c == '"')
			break;
		if (c < 0x20) /* RFC 8259 §7: control characters must be escaped */
			return jr_fail(j, -PERFSPY_E_CAPTURE);
		if (c != '\\') {
			j->sbuf[n++] = (char)c;
			continue;
		}
		c = (unsigned char)escape(j, j->sbuf + n);
		if (!c)
			return jr_fail(j, -PERFSPY_E_CAPTURE);
		n += c;
	}
	j->sbuf[n] = '\0';
	*s = j->sbuf;
	*len = n;
	return 0;
}

/* Length of the number at j->p per RFC 8259 §6, or 0 if malformed. */
static size_t number_len(const struct jr *j)
{
	const char *p = j->p, *e = j->end, *d;

	if (p < e && *p == '-')
		p++;
	if (p < e && *p == '0') {
		p++;
	} else {
		for (d = p; p < e && *p >= '0' && *p <= '9'; p++)
			;
		if (p == d)
			return 0;
	}
	if (p < e && *p == '.') {
		for (d = ++p; p < e && *p >= '0' && *p <= '9'; p++)
			;
		if (p == d)
			return 0;
	}
	if (p < e && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < e && (*p == '+' || *p == '-'))
			p++;
		for (d = p; p < e && *p >= '0' && *p <= '9'; p++)
			;
		if (p == d)
			return 0;
	}
	return (size_t)(p - j->p);
}

int jr_number(struct jr *j, double *v)
{
	char buf[JR_MAX_NUMBER + 1];
	size_t n;

	if (jr_peek(j) < 0)
		return jr_fail(j, -PERFSPY_E_CAPTURE);
	n = number_len(j);
	if (!n || n > JR_MAX_NUMBER)
		return jr_fail(j, -PERFSPY_E_CAPTURE);
	memcpy(buf, j->p, n);
	buf[n] = '\0';
	*v = strtod(buf, NULL);
	j->p += n;
	return 0;
}

static bool literal(struct jr *j, const char *w)
{
	size_t n = strlen(w);

	if (jr_peek(j) < 0 || (size_t)(j->end - j->p) < n || memcmp(j->p, w, n))
		return false;
	j->p += n;
	return true;
}

/* speedscope writes `null` for absent lines and columns (§2.1). */
bool jr_null(struct jr *j)
{
	return literal(j, "null");
}

/* One scalar at the cursor (string, number, literal). */
static int skip_scalar(struct jr *j, int c)
{
	const char *s;
	size_t n;
	double d;

	if (c == '"')
		return jr_string(j, &s, &n);
	if (c == '-' || (c >= '0' && c <= '9'))
		return jr_number(j, &d);
	if (literal(j, "true") || literal(j, "false") || literal(j, "null"))
		return 0;
	return jr_fail(j, -PERFSPY_E_CAPTURE);
}

/*
 * Skip a value without recursion: @open holds the kind of each open
 * container ('{' or '['), @first whether it has had no item yet.
 */
int jr_skip(struct jr *j)
{
	char open[JR_MAX_DEPTH];
	bool first[JR_MAX_DEPTH];
	int depth = 0, c, r;

	for (;;) {
		c = jr_peek(j);
		if (c == '{' || c == '[') {
			if (depth == JR_MAX_DEPTH)
				return jr_fail(j, -PERFSPY_E_CAPTURE);
			j->p++;
			open[depth] = (char)c;
			first[depth++] = true;
		} else if ((r = skip_scalar(j, c))) {
			return r;
		}
		/* Close finished containers; stop when the value is whole. */
		while (depth) {
			bool *f = &first[depth - 1];

			if (open[depth - 1] == '{') {
				const char *k;
				size_t n;

				r = jr_obj_next(j, f, &k, &n);
			} else {
				r = jr_arr_next(j, f);
			}
			if (r < 0)
				return r;
			if (r == 1)
				break; /* a member/element follows: parse it */
			depth--;
		}
		if (!depth)
			return 0;
	}
}
