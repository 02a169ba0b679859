// SPDX-License-Identifier: GPL-2.0
/*
 * The Python source scanner behind first-line numbers: finds every def,
 * async def, class and `type` alias in a source file with its CPython
 * qualname, co_firstlineno and extent (py_scan_source(), and the
 * definition tables frames/python.c looks frame names up in and
 * folded/merge_frames.c looks lines up in, pyscan.h).
 *
 * Invariants: the input is untrusted (whatever file a perf map names):
 * every read stays inside the buffer plus its PY_PAD NUL bytes, string and
 * f-string nesting is bounded by PY_MAX_NEST, and a source too deeply
 * nested is given up (-EINVAL) with the definitions found so far kept.
 * Memory: the table, the scanner's scope and `global` stacks, and
 * py_scan_source()'s padded copy of its input; errors are -ENOMEM/-EINVAL.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>

#include "pyscan.h"
#include "util.h"

#define PY_MAX_NEST 64 /* nested strings / f-string fields */

/* ---- definition tables: qualname -> co_firstlineno ---- */

struct pydef {
	size_t off; /* qualname at tab->str + off, NUL-terminated */
	int line;   /* 0 after finalising: defined more than once */
	int end;    /* last line of its extent (INT_MAX: to the end) */
};

struct deftab {
	char *str;
	size_t slen, scap;
	struct pydef *defs;
	size_t n, cap;
};

void py_tab_free(struct deftab *t)
{
	if (!t)
		return;
	free(t->str);
	free(t->defs);
	free(t);
}

size_t py_tab_bytes(const struct deftab *t)
{
	return t->scap + t->cap * sizeof(*t->defs) + sizeof(*t);
}

static int cmp_def(const void *a, const void *b, void *str)
{
	const struct pydef *x = a, *y = b;

	return strcmp((char *)str + x->off, (char *)str + y->off);
}

/* Sort by qualname and fold repeats into one entry with no line: two
 * definitions of one qualname (property setters, if/else variants) leave
 * no way to tell which code object ran. */
void py_tab_finalize(struct deftab *t)
{
	size_t i, k = 0;

	if (t->n > 1) /* and defs may be NULL when there are none */
		qsort_r(t->defs, t->n, sizeof(*t->defs), cmp_def, t->str);
	for (i = 0; i < t->n; i++) {
		if (k && !strcmp(t->str + t->defs[k - 1].off,
				 t->str + t->defs[i].off)) {
			t->defs[k - 1].line = 0;
			continue;
		}
		t->defs[k++] = t->defs[i];
	}
	t->n = k;
}

/* Line of qualname @q (@n bytes, no NUL needed), 0 if absent. */
int py_tab_lookup(const struct deftab *t, const char *q, size_t n)
{
	size_t lo = 0, hi = t->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const char *e = t->str + t->defs[mid].off;
		int c = strncmp(q, e, n);

		if (!c && !e[n])
			return t->defs[mid].line;
		if (c < 0 || !c) /* !c: @q is a proper prefix of e */
			hi = mid;
		else
			lo = mid + 1;
	}
	return 0;
}

/* Source order: a nested definition comes after its parent, and a
 * sibling closed before @line cannot hold it, so walking back from the end
 * meets the definitions holding @line innermost first. */
int py_tab_enclosing(const struct deftab *t, int line, size_t *pos, const char **qualname)
{
	size_t i = *pos == SIZE_MAX ? t->n : *pos;

	while (i-- > 0) {
		const struct pydef *d = &t->defs[i];

		if (d->line && d->line <= line && line <= d->end) {
			*pos = i;
			*qualname = t->str + d->off;
			return d->line;
		}
	}
	*pos = 0;
	return 0;
}

/* ---- the source scanner ----
 *
 * Not a Python parser: it finds logical-line starts (outside brackets,
 * strings and backslash continuations, as the tokenizer does), measures
 * their indentation (tabs to multiples of 8, form feed resets, as
 * Parser/tokenizer.c), and looks at the first words only. Scopes are a
 * stack of def/class headers popped when a logical line is indented no
 * deeper than them. Strings are skipped with 3.12 (PEP 701) rules, which
 * accept every older f-string too: a replacement field may hold any
 * expression, including strings in the same quotes.
 * The buffer is followed by PY_PAD NUL bytes, so looking 2 bytes past
 * any position before the end is safe.
 */

struct scope {
	int indent;
	bool func;    /* def (its children get .<locals>) or class */
	size_t qoff;  /* its qualname in tab->str */
	size_t def;   /* its entry in tab->defs (for the extent) */
	size_t nglob; /* globals[] size when it opened */
};

struct scanner {
	const char *p, *end;
	int line;
	int nest;      /* string recursion depth */
	int deco_line; /* first line of pending decorators, or 0 */
	bool bad;      /* gave up: nested too deeply */
	struct deftab *tab;
	struct scope *sc;
	size_t nsc, capsc;
	struct { const char *p; size_t n; } *gl; /* declared `global` */
	size_t ngl, capgl;
};

static bool id_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
	       c >= 0x80 || (c >= '0' && c <= '9');
}

/* Skip blanks and backslash continuations, then take a name (length 0:
 * none). Digits cannot start one. */
static size_t take_name(struct scanner *s, const char **name)
{
	const char *q;

	for (;; s->p++) {
		if (*s->p == '\\' && s->p[1] == '\n')
			s->p++, s->line++;
		else if (*s->p != ' ' && *s->p != '\t' && *s->p != '\f')
			break;
	}
	q = *name = s->p;
	if (*q >= '0' && *q <= '9')
		return 0;
	while (q < s->end && id_char((unsigned char)*q))
		q++;
	s->p = q;
	return (size_t)(q - *name);
}

static bool word_is(const char *w, size_t n, const char *kw)
{
	return strlen(kw) == n && !memcmp(w, kw, n);
}

static void skip_comment(struct scanner *s)
{
	const char *nl = memchr(s->p, '\n', (size_t)(s->end - s->p));

	s->p = nl ? nl : s->end;
}

static bool at_close(const struct scanner *s, char q, bool triple)
{
	return *s->p == q && (!triple || (s->p[1] == q && s->p[2] == q));
}

static void skip_body(struct scanner *s, char q, bool triple, bool f, bool raw,
		      bool spec);

/* A string literal (any prefix), a name or number, or one other byte. */
static void skip_atom(struct scanner *s)
{
	const char *w = s->p;
	bool f = false, raw = false, triple;
	size_t n, i;
	char q;

	while (s->p < s->end && id_char((unsigned char)*s->p))
		s->p++;
	n = (size_t)(s->p - w);
	if (*s->p != '"' && *s->p != '\'') {
		s->p += !n;
		return;
	}
	for (i = 0; i < n; i++) {
		if (n > 2 || !strchr("rRbBuUfF", w[i]))
			return; /* a name before a quote: not a prefix */
		f |= w[i] == 'f' || w[i] == 'F';
		raw |= w[i] == 'r' || w[i] == 'R';
	}
	q = *s->p;
	triple = s->p[1] == q && s->p[2] == q;
	s->p += triple ? 3 : 1;
	skip_body(s, q, triple, f, raw, false);
}

/* In an f-string a backslash does not hide a '{' (f"\{x}" has a field),
 * and a non-raw "\N{NAME}" is an escape, not a field. */
static size_t escape_len(const struct scanner *s, bool f, bool raw)
{
	const char *q = s->p + 1;

	if (q >= s->end || (f && *q == '{'))
		return 1;
	if (f && !raw && *q == 'N' && q[1] == '{') {
		while (q < s->end && *q != '}' && *q != '\n')
			q++;
		return (size_t)(q - s->p) + (q < s->end && *q == '}');
	}
	return 2;
}

static int skip_code(struct scanner *s, char q, bool triple);

/* String text after the opening quote @q, through the closing quote (or,
 * for a format spec (@spec), through the '}' that ends its field). An
 * unterminated single-quoted string ends at the newline. */
static void skip_body(struct scanner *s, char q, bool triple, bool f, bool raw,
		      bool spec)
{
	if (++s->nest > PY_MAX_NEST) {
		s->bad = true;
		s->p = s->end;
	}
	while (s->p < s->end && !s->bad) {
		char c = *s->p;

		if (c == '\\') {
			size_t n = escape_len(s, f, raw);

			s->line += n == 2 && s->p[1] == '\n';
			s->p += n;
		} else if (c == '\n' && !triple) {
			break;
		} else if (at_close(s, q, triple)) {
			s->p += spec ? 0 : triple ? 3 : 1;
			break;
		} else if (f && !spec && c == '{' && s->p[1] == '{') {
			s->p += 2;
		} else {
			s->line += c == '\n';
			s->p++;
			if (f && c == '{')
				skip_code(s, q, triple);
			else if (spec && c == '}')
				break;
		}
	}
	s->nest--;
}

static int tab_add(struct scanner *s, const char *name, size_t n, int line,
		   size_t *qoff)
{
	struct deftab *t = s->tab;
	const struct scope *up = s->nsc ? &s->sc[s->nsc - 1] : NULL;
	const char *sep = up && up->func ? ".<locals>." : ".";
	size_t ulen = 0, i;
	bool global = false;

	/* CPython (compiler_set_qualname): a name the parent scope declares
	 * `global` is bare; otherwise parent qualname + ".<locals>" if the
	 * parent is a function, + "." + name. */
	for (i = up ? up->nglob : s->ngl; i < s->ngl; i++)
		global |= s->gl[i].n == n && !memcmp(s->gl[i].p, name, n);
	if (up && !global)
		ulen = strlen(t->str + up->qoff);
	if (ensure_mem((void **)&t->str, &t->scap, 1, t->slen + ulen + 10 + n + 1) ||
	    ensure_mem((void **)&t->defs, &t->cap, sizeof(*t->defs), t->n + 1))
		return -ENOMEM;
	*qoff = t->slen;
	if (ulen) {
		memcpy(t->str + t->slen, t->str + up->qoff, ulen);
		memcpy(t->str + t->slen + ulen, sep, strlen(sep));
		t->slen += ulen + strlen(sep);
	}
	memcpy(t->str + t->slen, name, n);
	t->slen += n;
	t->str[t->slen++] = '\0';
	/* The extent of a scope is set when it closes (scan()); a `type`
	 * alias is one statement. */
	t->defs[t->n++] = (struct pydef){ .off = *qoff, .line = line, .end = line };
	return 0;
}

/* def/class NAME: record it and open its scope. */
static int open_scope(struct scanner *s, int col, int line, bool func)
{
	const char *name;
	size_t n = take_name(s, &name), qoff;

	if (!n)
		return 0;
	if (tab_add(s, name, n, line, &qoff) ||
	    ensure_mem((void **)&s->sc, &s->capsc, sizeof(*s->sc), s->nsc + 1))
		return -ENOMEM;
	s->tab->defs[s->tab->n - 1].end = INT_MAX; /* until it closes */
	s->sc[s->nsc++] = (struct scope){ .indent = col, .func = func,
					  .qoff = qoff, .def = s->tab->n - 1,
					  .nglob = s->ngl };
	return 0;
}

/* `global a, b`: names the innermost scope binds at module level. */
static int parse_global(struct scanner *s)
{
	const char *name;
	size_t n;

	while ((n = take_name(s, &name))) {
		if (s->nsc) {
			if (ensure_mem((void **)&s->gl, &s->capgl, sizeof(*s->gl), s->ngl + 1))
				return -ENOMEM;
			s->gl[s->ngl].p = name;
			s->gl[s->ngl++].n = n;
		}
		take_name(s, &name); /* blanks */
		if (*s->p != ',')
			break;
		s->p++;
	}
	return 0;
}

/* The first words of a statement: decorators, def, async def, class,
 * global, and 3.12 `type NAME = ...` (a code object named NAME whose first
 * line is the statement's). After a ';' (@first false) only `global`
 * matters: compound statements cannot follow one. */
static int stmt_head(struct scanner *s, int col, bool first)
{
	int line = s->line, start = s->deco_line ? s->deco_line : line;
	const char *w = s->p, *name;
	size_t n, qoff;

	if (first && *s->p == '@') {
		s->deco_line = start;
		return 0;
	}
	s->deco_line = 0;
	n = take_name(s, &w);
	if (*s->p == '"' || *s->p == '\'') {
		s->p = w; /* a string prefix: skip_atom's business */
		return 0;
	}
	if (word_is(w, n, "global"))
		return parse_global(s);
	if (!first)
		return 0;
	if (word_is(w, n, "async")) {
		n = take_name(s, &w);
		if (!word_is(w, n, "def"))
			return 0;
	}
	if (word_is(w, n, "def") || word_is(w, n, "class"))
		return open_scope(s, col, start, w[0] == 'd');
	if (word_is(w, n, "type") && (n = take_name(s, &name))) {
		take_name(s, &w); /* blanks */
		if (*s->p == '[' || (*s->p == '=' && s->p[1] != '='))
			return tab_add(s, name, n, line, &qoff);
	}
	return 0;
}

/* Code up to the end of a logical line (@q == 0, handling `; global`),
 * or of an f-string replacement field in a string quoted by @q (up to its
 * '}', or through the format spec after a ':'). */
static int skip_code(struct scanner *s, char q, bool triple)
{
	int depth = 0, err;

	while (s->p < s->end && !s->bad) {
		char c = *s->p;

		if (c == '\n' || (c == '\\' && s->p[1] == '\n')) {
			s->p += c == '\n' ? 1 : 2;
			s->line++;
			if (c == '\n' && !q && !depth)
				return 0;
		} else if (c == '#') {
			skip_comment(s);
		} else if (c == '(' || c == '[' || c == '{') {
			depth++;
			s->p++;
		} else if ((c == ')' || c == ']' || c == '}') && depth) {
			depth--;
			s->p++;
		} else if (q && (c == '}' || c == ':')) {
			s->p++;
			if (c == ':')
				skip_body(s, q, triple, true, false, true);
			return 0;
		} else if (!q && c == ';' && !depth) {
			s->p++;
			err = stmt_head(s, 0, false);
			if (err)
				return err;
		} else {
			skip_atom(s);
		}
	}
	return 0;
}

static int scan(struct scanner *s)
{
	if (!memcmp(s->p, "\xef\xbb\xbf", 3))
		s->p += 3; /* UTF-8 BOM (the pad makes 3 bytes readable) */
	while (s->p < s->end && !s->bad) {
		int col = 0, err;

		for (;; s->p++) {
			if (*s->p == ' ')
				col++;
			else if (*s->p == '\t')
				col = (col / 8 + 1) * 8;
			else if (*s->p == '\f')
				col = 0;
			else
				break;
		}
		if (s->p >= s->end)
			break;
		if (*s->p == '\n' || *s->p == '#') { /* blank line */
			skip_comment(s);
			s->line += s->p < s->end;
			s->p += s->p < s->end;
			continue;
		}
		/* This logical line closes the scopes indented as deep or
		 * deeper: they end on the line before it (comments and blank
		 * lines between belong to them, harmlessly). */
		while (s->nsc && s->sc[s->nsc - 1].indent >= col) {
			s->nsc--;
			s->ngl = s->sc[s->nsc].nglob;
			s->tab->defs[s->sc[s->nsc].def].end = s->line - 1;
		}
		err = stmt_head(s, col, true);
		if (!err)
			err = skip_code(s, 0, false);
		if (err)
			return err;
	}
	return s->bad ? -EINVAL : 0;
}

/* Scan @buf (@len bytes, PY_PAD more allocated) into a new raw, unsorted
 * table. "\r\n" and a lone "\r" become "\n" first, in place (importlib
 * decodes sources with universal newlines). */
int py_scan_buffer(char *buf, size_t len, struct deftab **out)
{
	struct scanner s = { .line = 1, .p = buf };
	size_t i, k = 0;
	int err;

	for (i = 0; i < len; i++) {
		char c = buf[i];

		buf[k++] = c == '\r' ? '\n' : c;
		i += c == '\r' && i + 1 < len && buf[i + 1] == '\n';
	}
	memset(buf + k, 0, PY_PAD);
	s.end = buf + k;
	s.tab = *out = calloc(1, sizeof(*s.tab));
	err = s.tab ? scan(&s) : -ENOMEM;
	free(s.sc);
	free(s.gl);
	return err;
}

int py_scan_source(const char *src, size_t len, py_def_fn fn, void *arg)
{
	struct deftab *t = NULL;
	char *buf = len <= SIZE_MAX - PY_PAD ? malloc(len + PY_PAD) : NULL;
	size_t i;
	int err, ret = 0;

	if (!buf)
		return -ENOMEM;
	memcpy(buf, src, len);
	err = py_scan_buffer(buf, len, &t);
	for (i = 0; t && i < t->n && !ret && err != -ENOMEM; i++)
		ret = fn(arg, t->str + t->defs[i].off, t->defs[i].line);
	py_tab_free(t);
	free(buf);
	return ret ? ret : err;
}
