// SPDX-License-Identifier: GPL-2.0
/*
 * Tracefs format texts as we read them, independently of libtraceevent:
 * the `name:` and `ID:` lines of every format (so a name comes out even
 * when libtraceevent cannot read the rest), and the check and rebuild of
 * the text libtraceevent is given: the name and ID lines, the field lines
 * only once each has the shape tracefs writes, and an empty print format
 * (tracing.h explains why libtraceevent must not see anything else).
 *
 * Invariants: no state; every function works on [text, end) and reads
 * nothing past @end, so no text needs a NUL terminator. A text that does
 * not pass the check is refused as a whole, never partly handed on.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracing_check.h"

/* Longest event name the format scan accepts. */
#define TR_MAX_NAME 255

static bool tr_starts(const char *s, const char *end, const char *lit)
{
	size_t n = strlen(lit);

	return (size_t)(end - s) >= n && !memcmp(s, lit, n);
}

static const char *tr_skip_blank(const char *s, const char *end)
{
	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	return s;
}

/*
 * Our own reading of the first lines of a tracefs format file:
 *	name: sched_switch
 *	ID: 372
 *	format:
 * Returns true when both a name and an id were found.
 */
bool tr_scan_format(const char *t, size_t len, struct tr_scan *sc)
{
	const char *end = t + len, *line = t, *eol, *s;
	bool have_name = false, have_id = false;

	memset(sc, 0, sizeof(*sc));
	while (line < end) {
		eol = memchr(line, '\n', (size_t)(end - line));
		if (!eol)
			eol = end;
		if (tr_starts(line, eol, "name:") && !have_name) {
			s = tr_skip_blank(line + 5, eol);
			sc->name = s;
			while (s < eol && *s > ' ' && *s < 0x7f)
				s++;
			sc->name_len = (size_t)(s - sc->name);
			have_name = sc->name_len && sc->name_len <= TR_MAX_NAME;
		} else if (tr_starts(line, eol, "ID:") && !have_id) {
			u64 v = 0;

			s = tr_skip_blank(line + 3, eol);
			if (s == eol || *s < '0' || *s > '9')
				return false;
			for (; s < eol && *s >= '0' && *s <= '9'; s++) {
				v = v * 10 + (u64)(*s - '0');
				if (v > INT_MAX) /* tep keeps ids in an int */
					return false;
			}
			sc->id = v;
			have_id = true;
		} else if (tr_starts(line, eol, "format:")) {
			sc->fields = eol < end ? eol + 1 : end;
			break;
		}
		line = eol + 1;
	}
	return have_name && have_id;
}

/* Skip a literal, with blanks before it; false if it is not there. */
static bool tr_lit(const char **s, const char *end, const char *lit)
{
	const char *q = tr_skip_blank(*s, end);

	if (!tr_starts(q, end, lit))
		return false;
	*s = q + strlen(lit);
	return true;
}

/* `: UINT ;` with optional blanks, UINT at most INT_MAX. */
static bool tr_colon_uint_semi(const char **s, const char *end)
{
	const char *q;
	u64 v = 0;

	if (!tr_lit(s, end, ":"))
		return false;
	q = tr_skip_blank(*s, end);
	if (q == end || *q < '0' || *q > '9')
		return false;
	for (; q < end && *q >= '0' && *q <= '9'; q++) {
		v = v * 10 + (u64)(*q - '0');
		if (v > INT_MAX)
			return false;
	}
	*s = q;
	return tr_lit(s, end, ";");
}

/* Token kinds of a field declaration, as libtraceevent's tokenizer
 * splits it: identifiers (TEP_EVENT_ITEM) and single characters. */
enum { TR_TOK_END = 0, TR_TOK_IDENT = 'a', TR_TOK_BAD = '?' };

static bool tr_ident_char(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	       (ch >= '0' && ch <= '9') || ch == '_';
}

/*
 * An identifier libtraceevent's tokenizer returns as such: __read_token()
 * turns LOCAL_PR_FMT, STA_PR_FMT and VIF_PR_FMT into strings (a
 * workaround for old mac80211 formats), which then fail and leak.
 */
static bool tr_is_ident(const char *s, size_t n)
{
	static const char *const magic[] = { "LOCAL_PR_FMT", "STA_PR_FMT",
					     "VIF_PR_FMT" };

	for (size_t i = 0; i < n; i++)
		if (!tr_ident_char(s[i]))
			return false;
	for (size_t i = 0; i < ARRAY_SIZE(magic); i++)
		if (n == strlen(magic[i]) && !memcmp(s, magic[i], n))
			return false;
	return n > 0;
}

static int tr_decl_tok(const char **s, const char *end)
{
	const char *q = tr_skip_blank(*s, end), *start = q;

	if (q == end) {
		*s = q;
		return TR_TOK_END;
	}
	if (tr_ident_char(*q)) {
		while (q < end && tr_ident_char(*q))
			q++;
		*s = q;
		return tr_is_ident(start, (size_t)(q - start)) ? TR_TOK_IDENT :
								 TR_TOK_BAD;
	}
	*s = q + 1;
	return *q == '*' || *q == '[' || *q == ']' ? *q : TR_TOK_BAD;
}

/*
 * A field declaration as tracefs writes it ("unsigned long __probe_ip",
 * "char prev_comm[16]", "__data_loc char[] name", "const char * name"),
 * restricted to what event_read_fields() in libtraceevent 1.7.1 parses
 * without taking an error path (those leak tokens, and some crash):
 * an identifier, then identifiers and '*' (type and name: two tokens at
 * least), then at most one bracket pair holding at most one identifier,
 * then at most one identifier. Every field of the 2323 formats of a 6.18
 * kernel fits. Not accepted: "__attribute__((user))", which only kernels
 * built with the structleak plugin emit, and whose handling in
 * libtraceevent 1.7.1 leaks two tokens per field.
 */
static bool tr_decl_ok(const char *s, const char *end)
{
	int tok, n = 0;

	if (tr_decl_tok(&s, end) != TR_TOK_IDENT)
		return false;
	while ((tok = tr_decl_tok(&s, end)) == TR_TOK_IDENT || tok == '*')
		n++;
	if (!n || (tok != TR_TOK_END && tok != '['))
		return false;
	if (tok == TR_TOK_END)
		return true;
	tok = tr_decl_tok(&s, end);
	if (tok == TR_TOK_IDENT)
		tok = tr_decl_tok(&s, end);
	if (tok != ']')
		return false;
	tok = tr_decl_tok(&s, end);
	if (tok == TR_TOK_IDENT)
		tok = tr_decl_tok(&s, end);
	return tok == TR_TOK_END;
}

/*
 * One line of a field list or header page:
 *	\tfield:TYPE NAME;\toffset:N;\tsize:N;\tsigned:N;
 * ("signed" is missing in old kernels), or a blank line.
 */
static bool tr_field_line_ok(const char *s, const char *end)
{
	const char *semi;

	if (tr_skip_blank(s, end) == end)
		return true;
	if (!tr_lit(&s, end, "field") || !tr_lit(&s, end, ":"))
		return false;
	semi = memchr(s, ';', (size_t)(end - s));
	if (!semi || !tr_decl_ok(s, semi))
		return false;
	s = semi + 1;
	if (!tr_lit(&s, end, "offset") || !tr_colon_uint_semi(&s, end) ||
	    !tr_lit(&s, end, "size") || !tr_colon_uint_semi(&s, end))
		return false;
	if (tr_lit(&s, end, "signed") && !tr_colon_uint_semi(&s, end))
		return false;
	return tr_skip_blank(s, end) == end;
}

/*
 * Check the lines of [s, end) up to a "print fmt:" line (or the end);
 * *@stop gets where checking stopped. False if any line is not a field
 * line or blank.
 */
bool tr_fields_ok(const char *s, const char *end, const char **stop)
{
	const char *eol;

	while (s < end && !tr_starts(s, end, "print fmt:")) {
		eol = memchr(s, '\n', (size_t)(end - s));
		if (!tr_field_line_ok(s, eol ? eol : end))
			return false;
		s = eol ? eol + 1 : end;
	}
	*stop = s;
	return true;
}

/*
 * The text libtraceevent gets, or NULL in *@out when the format does not
 * pass our checks (it then stays out of the tep handle).
 *
 * libtraceevent 1.7.1 is not safe on malformed formats: a '[' with no ']'
 * makes event_read_fields() strcmp() a NULL token, and
 * __print_flags(REC->nosuch, ...) makes process_entry() dereference a
 * NULL field (still so in 1.8.4); later releases fix double frees and
 * leaks in the print-format parser (upstream a4b1ba5, c3dc220, 76a0eb8).
 * So it is handed a rebuilt text: name and ID lines from our scan, the
 * field lines only once each has passed tr_field_line_ok(), and an empty
 * print format in place of the real one. Field decoding, which is what
 * RAW samples need, is unaffected; tep_print_event() prints no INFO.
 */
int tr_tep_text(const struct tr_scan *sc, const char *end, char **out,
		size_t *out_len)
{
	static const char tail[] = "\nprint fmt: \"\"\n";
	const char *stop = NULL;
	size_t n, cap;
	char *buf;
	int len;

	*out = NULL;
	if (!sc->fields || !tr_is_ident(sc->name, sc->name_len) ||
	    !tr_fields_ok(sc->fields, end, &stop))
		return 0;
	n = (size_t)(stop - sc->fields);
	cap = TR_MAX_NAME + 64 + n + sizeof(tail);
	buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	len = snprintf(buf, cap, "name: %.*s\nID: %llu\nformat:\n",
		       (int)sc->name_len, sc->name, (unsigned long long)sc->id);
	memcpy(buf + len, sc->fields, n);
	memcpy(buf + len + n, tail, sizeof(tail));
	*out_len = (size_t)len + n + sizeof(tail) - 1;
	*out = buf;
	return 0;
}
