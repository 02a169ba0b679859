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
#include "common/pyscan.h"
#include "common/hash.h"

#define PY_MAX_SOURCE (8u << 20) /* larger sources are not scanned */
#define PY_TAB_BUDGET (64u << 20)

/* ---- string-keyed maps on htab (common/hash.h) ---- */

struct smap_ent {
	u64 hash;
	const char *key; /* arena copy, NUL-terminated */
	void *val;
};

struct smap_key {
	const char *k;
	size_t n;
};

static bool smap_eq(const void *ent, const void *key)
{
	const struct smap_ent *e = ent;
	const struct smap_key *k = key;

	return !strncmp(e->key, k->k, k->n) && !e->key[k->n];
}

/* The entry of @k (@n bytes): found (htab_used), or a free entry the
 * caller fills with an arena key and its value and claims with hash
 * *@h. NULL: -ENOMEM. */
static struct smap_ent *smap_get(struct htab *m, const char *k, size_t n, u64 *h)
{
	struct smap_key key = { k, n };

	*h = hash_bytes(k, n, 0);
	if (htab_reserve(m))
		return NULL;
	return htab_probe(m, *h, smap_eq, &key);
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
	struct htab frames; /* jit name -> frame text (struct smap_ent) */
	struct htab files;  /* file name -> struct py_file */
	size_t tab_bytes;   /* sum of py_tab_bytes() over loaded tables */
	const char **srcs;  /* every py_file.src, in order of first sight */
	size_t nr_srcs, cap_srcs;
};

int py_ctx_new(const struct py_opts *opts, struct py_ctx **out)
{
	struct py_ctx *ctx = calloc(1, sizeof(*ctx));
	const char *root = opts ? opts->source_root : NULL;
	size_t n = root ? strlen(root) : 0;

	if (!ctx)
		return -ENOMEM;
	arena_init(&ctx->arena);
	htab_init(&ctx->frames, sizeof(struct smap_ent), 64);
	htab_init(&ctx->files, sizeof(struct smap_ent), 64);
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
	const struct smap_ent *e;
	size_t pos = 0;

	while ((e = htab_next(&ctx->files, &pos))) {
		struct py_file *f = e->val;

		py_tab_free(f->tab);
		f->tab = NULL;
	}
	ctx->tab_bytes = 0;
}

void py_ctx_free(struct py_ctx *ctx)
{
	if (!ctx)
		return;
	drop_tables(ctx);
	htab_free(&ctx->frames);
	htab_free(&ctx->files);
	free(ctx->srcs);
	arena_free(&ctx->arena);
	free(ctx);
}

const char *py_ctx_source(const struct py_ctx *ctx, size_t idx)
{
	return ctx && idx < ctx->nr_srcs ? ctx->srcs[idx] : NULL;
}

int py_ctx_add_sources(struct py_ctx *dst, const struct py_ctx *src)
{
	size_t i, k;
	char *copy;

	for (i = 0; src && i < src->nr_srcs; i++) {
		for (k = 0; k < dst->nr_srcs && strcmp(dst->srcs[k], src->srcs[i]); k++)
			;
		if (k < dst->nr_srcs)
			continue;
		if (ensure_mem((void **)&dst->srcs, &dst->cap_srcs, sizeof(*dst->srcs),
			       dst->nr_srcs + 1) ||
		    !(copy = arena_strdup(&dst->arena, src->srcs[i])))
			return -ENOMEM;
		dst->srcs[dst->nr_srcs++] = copy;
	}
	return 0;
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

/* The file text of a frame (docs/pyspy-formats.md §1.4, plus the fallback). */
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
	if (e && htab_used(e)) {
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
	if (*key && !is_pseudo_file(key) && !stat(src, &st) && S_ISREG(st.st_mode)) {
		if (ensure_mem((void **)&ctx->srcs, &ctx->cap_srcs, sizeof(*ctx->srcs),
			       ctx->nr_srcs + 1))
			return -ENOMEM;
		f->src = ctx->srcs[ctx->nr_srcs++] = src;
	}
	f->shown = shown_name(ctx, key, f->src);
	if (!f->shown)
		return -ENOMEM;
	e->key = key;
	e->val = f;
	htab_claim(&ctx->files, e, h);
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
		err = py_scan_buffer(buf, len, &t);
	free(buf);
	if (err) {
		py_tab_free(t);
		if (err == -ENOMEM)
			return err;
		pr_debug(ctx->opts.log, "python: no line numbers from %s: %s",
			 f->src, strerror(-err));
		f->unusable = true;
		return 0;
	}
	py_tab_finalize(t);
	if (ctx->tab_bytes + py_tab_bytes(t) > PY_TAB_BUDGET)
		drop_tables(ctx);
	f->tab = t;
	ctx->tab_bytes += py_tab_bytes(t);
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
	*line = f->tab ? py_tab_lookup(f->tab, q, n) : 0;
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
	if (!htab_used(e)) {
		/* render() touches only the files map: *e stays our slot. */
		err = render(ctx, jit_name, n, &text);
		if (err)
			return err;
		key = arena_strndup(&ctx->arena, jit_name, n);
		if (!key)
			return -ENOMEM;
		e->key = key;
		e->val = text;
		htab_claim(&ctx->frames, e, h);
	}
	*out = e->val;
	return 1;
}

/* ---- interpreter frames (docs/pyspy-formats.md §1.8 item 4) ---- */

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

bool py_is_libc_dso(const char *dso_path)
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
		"start_thread",
		/* The names DWARF gives glibc's clone.S/clone3.S entry points
		 * (`clone3 (clone3.S:81)`), where .symtab says __clone3. */
		"clone", "clone3" };
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
	if (!func || !py_is_libc_dso(dso_path))
		return false;
	if (!strncmp(func, "__GI_", 5)) /* glibc's internal aliases */
		func += 5;
	for (i = 0; i < ARRAY_SIZE(roots); i++)
		if (!strcmp(func, roots[i]))
			return true;
	return false;
}
