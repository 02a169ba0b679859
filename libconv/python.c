// SPDX-License-Identifier: GPL-2.0
/*
 * CPython frames: `py::qualname:filename` perf-map names -> py-spy frame
 * text, short file names, first-line numbers from the source, and the
 * py-spy --native interpreter-frame filter (see python.h for the rules).
 *
 * Invariants: every string handed out lives in ctx->arena until
 * py_ctx_free(); rendered frames are cached per distinct input, file
 * records (short name, source path) per distinct file name. The per-file
 * definition tables are the only memory that grows with source size; they
 * are heap blocks kept under PY_TAB_BUDGET bytes in total, and all are
 * dropped (to be re-read on demand) when a new one would exceed it.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "python.h"

#define PY_MAX_SOURCE (8u << 20) /* larger sources are not scanned */
#define PY_TAB_BUDGET (64u << 20)
#define PY_MAX_NEST 64 /* nested strings / f-string fields */

/* ---- definition tables: qualname -> co_firstlineno ---- */

struct pydef {
	size_t off; /* qualname at tab->str + off, NUL-terminated */
	int line;   /* 0 after finalising: defined more than once */
};

struct deftab {
	char *str;
	size_t slen, scap;
	struct pydef *defs;
	size_t n, cap;
};

static void tab_free(struct deftab *t)
{
	if (!t)
		return;
	free(t->str);
	free(t->defs);
	free(t);
}

static size_t tab_bytes(const struct deftab *t)
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
static void tab_finalize(struct deftab *t)
{
	size_t i, k = 0;

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
static int tab_lookup(const struct deftab *t, const char *q, size_t n)
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

#define PY_PAD 4

struct scope {
	int indent;
	bool func;    /* def (its children get .<locals>) or class */
	size_t qoff;  /* its qualname in tab->str */
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
	t->defs[t->n++] = (struct pydef){ .off = *qoff, .line = line };
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
	s->sc[s->nsc++] = (struct scope){ .indent = col, .func = func,
					  .qoff = qoff, .nglob = s->ngl };
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
		while (s->nsc && s->sc[s->nsc - 1].indent >= col)
			s->ngl = s->sc[--s->nsc].nglob;
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
static int scan_buffer(char *buf, size_t len, struct deftab **out)
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
	err = scan_buffer(buf, len, &t);
	for (i = 0; t && i < t->n && !ret && err != -ENOMEM; i++)
		ret = fn(arg, t->str + t->defs[i].off, t->defs[i].line);
	tab_free(t);
	free(buf);
	return ret ? ret : err;
}

/* ---- string-keyed hash map (open addressing, power-of-two size) ---- */

struct smap_ent {
	u64 h;
	const char *key; /* NULL: empty slot */
	void *val;
};

struct smap {
	struct smap_ent *e;
	size_t cap, n;
};

static struct smap_ent *smap_slot(const struct smap *m, const char *k,
				  size_t n, u64 h)
{
	size_t i = (size_t)h & (m->cap - 1);

	for (;; i = (i + 1) & (m->cap - 1)) {
		struct smap_ent *e = &m->e[i];

		if (!e->key || (e->h == h && !strncmp(e->key, k, n) && !e->key[n]))
			return e;
	}
}

/* The entry of @k (@n bytes): found (->key set), or a free slot the
 * caller fills with h = *@h, an arena key and its value. NULL: -ENOMEM. */
static struct smap_ent *smap_get(struct smap *m, const char *k, size_t n, u64 *h)
{
	struct smap old = *m;
	size_t i;

	*h = hash_bytes(k, n, 0);
	if (!m->cap || (m->n + 1) * 2 > m->cap) {
		m->cap = old.cap ? old.cap * 2 : 64;
		m->e = xreallocarray(NULL, m->cap, sizeof(*m->e));
		if (!m->e) {
			*m = old;
			return NULL;
		}
		memset(m->e, 0, m->cap * sizeof(*m->e));
		for (i = 0; i < old.cap; i++)
			if (old.e[i].key)
				*smap_slot(m, old.e[i].key, strlen(old.e[i].key),
					   old.e[i].h) = old.e[i];
		free(old.e);
	}
	return smap_slot(m, k, n, *h);
}

/* ---- context and per-file records ---- */

struct py_file {
	const char *shown;  /* file text in frames */
	const char *src;    /* where the source is read, NULL if absent */
	struct deftab *tab; /* loaded definitions, or NULL */
	bool unusable;      /* reading or scanning failed once */
};

struct py_ctx {
	struct py_opts opts;
	struct arena arena; /* keys, frame texts, file records */
	struct smap frames; /* jit name -> frame text */
	struct smap files;  /* file name -> struct py_file */
	size_t tab_bytes;   /* sum of tab_bytes() over loaded tables */
};

int py_ctx_new(const struct py_opts *opts, struct py_ctx **out)
{
	struct py_ctx *ctx = calloc(1, sizeof(*ctx));
	const char *root = opts ? opts->source_root : NULL;
	size_t n = root ? strlen(root) : 0;

	if (!ctx)
		return -ENOMEM;
	arena_init(&ctx->arena);
	if (opts)
		ctx->opts = *opts;
	while (n > 1 && root[n - 1] == '/')
		n--;
	if (root && !(ctx->opts.source_root = arena_strndup(&ctx->arena, root, n))) {
		py_ctx_free(ctx);
		return -ENOMEM;
	}
	*out = ctx;
	return 0;
}

static void drop_tables(struct py_ctx *ctx)
{
	size_t i;

	for (i = 0; i < ctx->files.cap; i++) {
		struct py_file *f = ctx->files.e[i].val;

		if (f) {
			tab_free(f->tab);
			f->tab = NULL;
		}
	}
	ctx->tab_bytes = 0;
}

void py_ctx_free(struct py_ctx *ctx)
{
	if (!ctx)
		return;
	drop_tables(ctx);
	free(ctx->frames.e);
	free(ctx->files.e);
	arena_free(&ctx->arena);
	free(ctx);
}

/* Where a file name stands when its source is not here: site-packages
 * and dist-packages trees hold packages (py-spy would show the package
 * path), lib/pythonX.Y is the stdlib, anything else shows its basename. */
static const char *fallback_short(const char *path)
{
	const char *best = NULL, *p, *slash;

	for (p = path; (p = strstr(p, "-packages/")); p++)
		if (p - path >= 5 && (!memcmp(p - 5, "/site", 5) || !memcmp(p - 5, "/dist", 5)))
			best = p + 10;
	for (p = path; !best && (p = strstr(p, "/python")); p++) {
		const char *v = p + 7;

		if ((p - path < 4 || memcmp(p - 4, "/lib", 4)) &&
		    (p - path < 6 || memcmp(p - 6, "/lib64", 6)))
			continue;
		if (*v < '0' || *v > '9')
			continue;
		v += strspn(v, "0123456789.");
		v += *v == 't'; /* free-threaded build: lib/python3.13t */
		if (*v == '/')
			best = v + 1;
	}
	if (best && *best)
		return best;
	slash = strrchr(path, '/');
	return slash && slash[1] ? slash + 1 : path;
}

static bool is_pseudo_file(const char *path)
{
	size_t n = strlen(path);

	return n >= 2 && path[0] == '<' && path[n - 1] == '>';
}

/* The file text of a frame (pyspy-formats.md §1.4, plus the fallback). */
static const char *shown_name(struct py_ctx *ctx, const char *path,
			      const char *src)
{
	char buf[PATH_MAX];
	const char *s;
	size_t n, max;

	if (ctx->opts.full_filenames || !*path || is_pseudo_file(path))
		return path;
	if (!src)
		return fallback_short(path);
	s = short_filename(src, buf, sizeof(buf));
	/* Under source_root the package walk must not climb into the root
	 * itself: keep at most the recorded path's own components. */
	max = strlen(path) - (path[0] == '/');
	n = strlen(s);
	if (n > max)
		s += n - max;
	return s == src ? path : arena_strdup(&ctx->arena, s);
}

/* The record of file name @path (@n bytes), created on first sight. */
static int file_get(struct py_ctx *ctx, const char *path, size_t n,
		    struct py_file **out)
{
	const char *root = ctx->opts.source_root, *src;
	struct smap_ent *e;
	struct py_file *f;
	struct stat st;
	char *key;
	u64 h;

	e = smap_get(&ctx->files, path, n, &h);
	if (e && e->key) {
		*out = e->val;
		return 0;
	}
	f = arena_alloc(&ctx->arena, sizeof(*f));
	key = arena_strndup(&ctx->arena, path, n);
	if (!e || !f || !key)
		return -ENOMEM;
	memset(f, 0, sizeof(*f));
	src = root && *key ? arena_printf(&ctx->arena, "%s%s%s", root,
					  key[0] == '/' ? "" : "/", key) : key;
	if (!src)
		return -ENOMEM;
	if (*key && !is_pseudo_file(key) && !stat(src, &st) && S_ISREG(st.st_mode))
		f->src = src;
	f->shown = shown_name(ctx, key, f->src);
	if (!f->shown)
		return -ENOMEM;
	*e = (struct smap_ent){ .h = h, .key = key, .val = f };
	ctx->files.n++;
	*out = f;
	return 0;
}

/* Read a whole regular file of at most PY_MAX_SOURCE bytes into *@buf.
 * Returns 0, -ENOMEM, or another -errno (-EFBIG: too large) that costs
 * only the file's line numbers. */
static int read_source(const char *path, char **buf, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), err = 0;
	struct stat st;

	*len = 0;
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode))
		err = -EINVAL;
	else if (st.st_size > (off_t)PY_MAX_SOURCE)
		err = -EFBIG;
	else if (!(*buf = malloc((size_t)st.st_size + PY_PAD)))
		err = -ENOMEM;
	while (!err && *len < (size_t)st.st_size) {
		ssize_t r = read(fd, *buf + *len, (size_t)st.st_size - *len);

		if (r <= 0 && !(r < 0 && errno == EINTR))
			break; /* shrank or failed: scan what we have */
		*len += r > 0 ? (size_t)r : 0;
	}
	close(fd);
	return err;
}

/* Load @f's definition table, keeping the total under PY_TAB_BUDGET. */
static int file_load(struct py_ctx *ctx, struct py_file *f)
{
	struct deftab *t = NULL;
	char *buf = NULL;
	size_t len;
	int err = read_source(f->src, &buf, &len);

	if (!err)
		err = scan_buffer(buf, len, &t);
	free(buf);
	if (err) {
		tab_free(t);
		if (err == -ENOMEM)
			return err;
		pr_debug(ctx->opts.log, "python: no line numbers from %s: %s",
			 f->src, strerror(-err));
		f->unusable = true;
		return 0;
	}
	tab_finalize(t);
	if (ctx->tab_bytes + tab_bytes(t) > PY_TAB_BUDGET)
		drop_tables(ctx);
	f->tab = t;
	ctx->tab_bytes += tab_bytes(t);
	return 0;
}

/* co_name from a qualname: the part after the last '.' that is not
 * inside <...> (`K.sm.<locals>.<lambda>` -> `<lambda>`). */
static size_t last_component(const char *q, size_t n)
{
	size_t i, start = 0;
	int angle = 0;

	for (i = 0; i < n; i++) {
		if (q[i] == '<')
			angle++;
		else if (q[i] == '>' && angle)
			angle--;
		else if (q[i] == '.' && !angle)
			start = i + 1;
	}
	return start < n ? start : 0;
}

/* co_firstlineno of qualname @q (@n bytes) in @f, or 0 when unknown. */
static int first_line(struct py_ctx *ctx, struct py_file *f, const char *q,
		      size_t n, int *line)
{
	int err;

	*line = 0;
	if (ctx->opts.no_lineno)
		return 0;
	/* A module's code object always starts at line 1, whatever the
	 * file begins with (checked against compile(..., 'exec')). */
	if (n == 8 && !memcmp(q, "<module>", 8)) {
		*line = 1;
		return 0;
	}
	/* <lambda>, <genexpr>, <listcomp>, <generic parameters of X>: no
	 * statement names them, and one scope may hold several. */
	if (q[last_component(q, n)] == '<' || !f->src || f->unusable)
		return 0;
	if (!f->tab && (err = file_load(ctx, f)))
		return err;
	*line = f->tab ? tab_lookup(f->tab, q, n) : 0;
	return 0;
}

/* The frame text of "py::QUALNAME:FILE" @name (@len bytes). */
static int render(struct py_ctx *ctx, const char *name, size_t len, char **out)
{
	const char *q = name + 4, *colon = memchr(q, ':', len - 4);
	int n = colon ? (int)(colon - q) : (int)(len - 4), line, err;
	const char *file = colon ? colon + 1 : "";
	struct py_file *f;
	size_t skip;

	err = file_get(ctx, file, strlen(file), &f);
	if (!err)
		err = first_line(ctx, f, q, (size_t)n, &line);
	if (err)
		return err;
	skip = ctx->opts.qualname ? 0 : last_component(q, (size_t)n);
	if (!*f->shown)
		*out = arena_printf(&ctx->arena, "%.*s", n - (int)skip, q + skip);
	else if (line)
		*out = arena_printf(&ctx->arena, "%.*s (%s:%d)", n - (int)skip,
				    q + skip, f->shown, line);
	else
		*out = arena_printf(&ctx->arena, "%.*s (%s)", n - (int)skip,
				    q + skip, f->shown);
	return *out ? 0 : -ENOMEM;
}

int py_render(struct py_ctx *ctx, const char *jit_name, const char **out)
{
	size_t n;
	struct smap_ent *e;
	char *key, *text;
	u64 h;
	int err;

	if (strncmp(jit_name, "py::", 4))
		return 0;
	n = strlen(jit_name);
	if (n > INT_MAX)
		return -ENOMEM;
	e = smap_get(&ctx->frames, jit_name, n, &h);
	if (!e)
		return -ENOMEM;
	if (!e->key) {
		/* render() touches only the files map: *e stays our slot. */
		err = render(ctx, jit_name, n, &text);
		if (err)
			return err;
		key = arena_strndup(&ctx->arena, jit_name, n);
		if (!key)
			return -ENOMEM;
		*e = (struct smap_ent){ .h = h, .key = key, .val = text };
		ctx->frames.n++;
	}
	*out = e->val;
	return 1;
}

/* ---- interpreter frames (pyspy-formats.md §1.8 item 4) ---- */

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* After "python"/"libpython": a version (3, 3.12) and ABI flags (d, t,
 * m, u). */
static const char *skip_version(const char *p)
{
	while (*p >= '0' && *p <= '9') {
		p += strspn(p, "0123456789");
		if (p[0] != '.' || p[1] < '0' || p[1] > '9')
			break;
		p++;
	}
	return p + strspn(p, "dmtu");
}

static bool is_end(const char *p)
{
	return !*p || !strcmp(p, " (deleted)");
}

bool py_is_interpreter_dso(const char *dso_path)
{
	const char *b, *p;

	if (!dso_path)
		return false;
	b = base_name(dso_path);
	if (!strncmp(b, "libpython", 9)) {
		p = b + 9;
		if (*p < '0' || *p > '9')
			return false;
		p = skip_version(p);
		return !strncmp(p, ".so", 3) && (p[3] == '.' || is_end(p + 3));
	}
	if (strncmp(b, "python", 6))
		return false;
	p = b + 6;
	if (*p && (*p < '0' || *p > '9'))
		return false;
	return is_end(skip_version(p));
}

/* libc, libpthread or the dynamic loader, where the root frames are. */
static bool is_libc_dso(const char *dso_path)
{
	static const char *const pre[] = { "libc.", "libc-", "libpthread",
					   "ld-linux", "ld-musl", "ld-2." };
	const char *b;
	size_t i;

	if (!dso_path)
		return false;
	b = base_name(dso_path);
	for (i = 0; i < ARRAY_SIZE(pre); i++)
		if (!strncmp(b, pre[i], strlen(pre[i])))
			return true;
	return false;
}

bool py_is_interpreter_frame(const char *func, const char *dso_path)
{
	/* py-spy keeps these interpreter functions: builtins such as
	 * time.sleep and lock waits are real time spent, not interpreter
	 * overhead (get_merge_strategy's whitelist). */
	static const char *const keep[] = { "time", "sys", "gc", "os", "unicode",
		"thread", "stringio", "sre", "PyGilState", "PyThread", "lock" };
	static const char *const roots[] = { "__libc_start_main",
		"__libc_start_call_main", "_start", "__clone", "__clone3",
		"start_thread" };
	size_t i, n;

	if (py_is_interpreter_dso(dso_path)) {
		if (!func)
			return true;
		func += strspn(func, "_.");
		n = strcspn(func, "_.");
		for (i = 0; i < ARRAY_SIZE(keep); i++)
			if (strlen(keep[i]) == n && !memcmp(func, keep[i], n))
				return false;
		return true;
	}
	if (!func || !is_libc_dso(dso_path))
		return false;
	if (!strncmp(func, "__GI_", 5)) /* glibc's internal aliases */
		func += 5;
	for (i = 0; i < ARRAY_SIZE(roots); i++)
		if (!strcmp(func, roots[i]))
			return true;
	return false;
}
