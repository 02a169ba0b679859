// SPDX-License-Identifier: GPL-2.0
/*
 * The frame grammar (see frame.h). It joins what used to be two parsers
 * with different rules, the writers' and the py-spy reader's; where they
 * differed, the rule kept is the one that reads more of what py-spy and
 * perf write: every py-spy thread-root form, `process PID:"cmdline"` only
 * with its quotes, the file part found by balanced parentheses, and
 * py-spy's `:-1` line.
 */
#include "frame.h"

#include <fnmatch.h>
#include <string.h>

#define KERNEL_FILE "[kernel."

static bool starts(const char *s, size_t n, const char *lit)
{
	size_t k = strlen(lit);

	return n >= k && !memcmp(s, lit, k);
}

static bool ends(const char *s, size_t n, const char *lit)
{
	size_t k = strlen(lit);

	return n >= k && !memcmp(s + n - k, lit, k);
}

static bool all_digits(const char *s, size_t n)
{
	size_t i;

	if (!n)
		return false;
	for (i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

/* `0x` + hex digits: py-spy's `{:#X}` of a pthread id (§1.5). */
static bool hex_id(const char *s, size_t n)
{
	size_t i;

	if (n < 3 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X'))
		return false;
	for (i = 2; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f') ||
		      (s[i] >= 'A' && s[i] <= 'F')))
			return false;
	return true;
}

/*
 * Thread roots, every version (docs/pyspy-formats.md §1.5, §6): `thread (ID)`,
 * `thread (ID): NAME` (0.3.4+, the name from 0.4.0), `thread ID`
 * (0.3.0-0.3.3), `thread ID ()` (0.2.x). A Python function named
 * `thread` is `thread (file.py:1)`: its "ID" is not a number, so it fails.
 */
static bool parse_thread(const char *s, size_t n, struct frame_parts *p)
{
	const char *q = s + 7, *e = s + n, *id, *ie;

	if (!starts(s, n, "thread ") || q == e)
		return false;
	if (*q == '(') {
		id = q + 1;
		ie = memchr(id, ')', (size_t)(e - id));
		if (!ie)
			return false;
		q = ie + 1;
		if (q != e) {
			if (e - q < 2 || q[0] != ':' || q[1] != ' ')
				return false;
			p->thread_name = q + 2;
			p->thread_name_len = (size_t)(e - q - 2);
		}
	} else {
		id = q;
		ie = memchr(id, ' ', (size_t)(e - id));
		if (!ie)
			ie = e;
		else if (e - ie != 3 || memcmp(ie, " ()", 3))
			return false;
	}
	if (!all_digits(id, (size_t)(ie - id)) && !hex_id(id, (size_t)(ie - id))) {
		p->thread_name = NULL;
		p->thread_name_len = 0;
		return false;
	}
	p->kind = FRAME_THREAD;
	p->tid = id;
	p->tid_len = (size_t)(ie - id);
	return true;
}

size_t frame_process_head(const char *s, size_t n)
{
	size_t i = 8;

	if (!starts(s, n, "process "))
		return 0;
	while (i < n && s[i] >= '0' && s[i] <= '9')
		i++;
	if (i == 8 || n - i < 2 || s[i] != ':' || s[i + 1] != '"')
		return 0;
	return i + 2;
}

/* The '(' matching the final ')' of @s, or NULL. Balanced matching keeps
 * `f (a (1).py:3)` and `operator() (x.cc:3)` whole. */
static const char *open_paren(const char *s, size_t n)
{
	size_t i = n, depth = 0;

	while (i-- > 0) {
		if (s[i] == ')')
			depth++;
		else if (s[i] == '(' && --depth == 0)
			return i && s[i - 1] == ' ' ? s + i : NULL;
	}
	return NULL;
}

/* The last " (" of @s (the §6 rule), for unbalanced texts. */
static const char *last_space_paren(const char *s, size_t n)
{
	size_t i;

	for (i = n; i-- > 1;)
		if (s[i] == '(' && s[i - 1] == ' ')
			return s + i;
	return NULL;
}

/* CPython names code objects by file: `.py`/`.pyw`, or py-spy's pseudo
 * files <frozen importlib._bootstrap>, <string>, <stdin> (§1.11). */
static bool python_file(const char *f, size_t n, const char *const *globs)
{
	char buf[4096];

	if ((n >= 3 && !memcmp(f + n - 3, ".py", 3)) ||
	    (n >= 4 && !memcmp(f + n - 4, ".pyw", 4)) ||
	    (n >= 2 && f[0] == '<' && f[n - 1] == '>'))
		return true;
	if (!globs || n >= sizeof(buf))
		return false;
	memcpy(buf, f, n);
	buf[n] = '\0';
	for (; *globs; globs++)
		if (!fnmatch(*globs, buf, 0))
			return true;
	return false;
}

/* FILE[:LINE] inside the parentheses; LINE is at most 9 digits, with
 * py-spy's `-` for an unknown line (§1.3). */
static void split_file_line(const char *c, size_t n, struct frame_parts *p)
{
	size_t i = n, k, j;
	long v = 0;

	p->file = c;
	p->file_len = n;
	while (i > 0 && c[i - 1] != ':')
		i--;
	if (!i)
		return;
	k = i < n && c[i] == '-' ? i + 1 : i;
	if (!all_digits(c + k, n - k) || n - k > 9)
		return;
	for (j = k; j < n; j++)
		v = v * 10 + (c[j] - '0');
	p->line = k > i ? -v : v;
	p->has_line = true;
	p->file_len = i - 1;
}

void frame_parse_globs(const char *s, size_t n, const char *const *py_globs,
		       struct frame_parts *p)
{
	const char *op;
	size_t head;

	memset(p, 0, sizeof(*p));
	p->kind = FRAME_NATIVE;
	p->func = s;
	p->func_len = n;
	if (parse_thread(s, n, p))
		return;
	head = frame_process_head(s, n);
	if (head && n > head && s[n - 1] == '"') {
		p->kind = FRAME_PROCESS;
		return;
	}
	if (ends(s, n, "_[k]")) { /* stackcollapse-perf --kernel */
		p->kind = FRAME_KERNEL;
		p->func_len = n - 4;
		return;
	}
	if (n && s[n - 1] == ')') {
		op = open_paren(s, n);
		if (!op)
			op = last_space_paren(s, n);
		if (op) {
			p->func_len = (size_t)(op - 1 - s);
			split_file_line(op + 1, (size_t)(s + n - 1 - op - 1), p);
		}
	}
	if (p->file && starts(p->file, p->file_len, KERNEL_FILE))
		p->kind = FRAME_KERNEL;
	else if (starts(s, n, "py::") ||
		 (p->file && python_file(p->file, p->file_len, py_globs)))
		p->kind = FRAME_PYTHON;
}

void frame_parse(const char *s, size_t len, struct frame_parts *p)
{
	frame_parse_globs(s, len, NULL, p);
}

enum frame_kind frame_kind_of(const char *s, size_t len)
{
	struct frame_parts p;

	frame_parse(s, len, &p);
	return p.kind;
}

bool frame_tid_decimal(const struct frame_parts *p, u64 *tid)
{
	u64 v = 0;
	size_t i;

	if (p->kind != FRAME_THREAD || !all_digits(p->tid, p->tid_len) ||
	    p->tid_len > 19)
		return false;
	for (i = 0; i < p->tid_len; i++)
		v = v * 10 + (u64)(p->tid[i] - '0');
	*tid = v;
	return true;
}

void frame_thread_text(const struct frame_parts *p, char *buf)
{
	memcpy(buf, "thread (", 8);
	memcpy(buf + 8, p->tid, p->tid_len);
	buf[8 + p->tid_len] = ')';
}

size_t frame_group_prefix(const char *s, size_t len, const struct frame_parts *p)
{
	(void)len;
	/* Only native frames: a Python frame's line is py-spy's, part of
	 * what the frame is (docs/output.md §7.1). */
	if (p->kind != FRAME_NATIVE || !p->has_line || !p->file)
		return 0;
	return (size_t)(p->file + p->file_len - s);
}

/* Library families by the start of a file's base name (docs/output.md
 * §7.2). Earlier rows win: `libc10` is torch, not libc. */
static const struct {
	const char *prefix;
	enum frame_lib lib;
} lib_rules[] = {
	{ "libtorch", FLIB_TORCH },   { "libc10", FLIB_TORCH },
	{ "libcaffe2", FLIB_TORCH },  { "libshm", FLIB_TORCH },
	{ "libcu", FLIB_CUDA },	      { "libnccl", FLIB_CUDA },
	{ "libnv", FLIB_CUDA },	      { "libnvidia", FLIB_CUDA },
	{ "libpython", FLIB_PYTHON }, { "python", FLIB_PYTHON },
	{ "libc.", FLIB_CRT },	      { "libc-", FLIB_CRT },
	{ "libm.", FLIB_CRT },	      { "libm-", FLIB_CRT },
	{ "ld-", FLIB_CRT },	      { "ld.so", FLIB_CRT },
	{ "libpthread", FLIB_CRT },   { "libdl.", FLIB_CRT },
	{ "libdl-", FLIB_CRT },	      { "librt.", FLIB_CRT },
	{ "librt-", FLIB_CRT },	      { "libstdc++", FLIB_CRT },
	{ "libgcc_s", FLIB_CRT },     { "libresolv", FLIB_CRT },
	{ "libopenblas", FLIB_MATH }, { "libblas", FLIB_MATH },
	{ "liblapack", FLIB_MATH },   { "libmkl", FLIB_MATH },
	{ "libgomp", FLIB_MATH },     { "libiomp", FLIB_MATH },
	{ "libomp", FLIB_MATH },      { "libdnnl", FLIB_MATH },
	{ "libgfortran", FLIB_MATH }, { "libsleef", FLIB_MATH },
	{ "_multiarray", FLIB_MATH },
};

enum frame_lib frame_lib_of(const char *lib, size_t n)
{
	const char *slash;
	size_t i;

	if (!lib || !n || (n == 1 && lib[0] == '?'))
		return FLIB_UNKNOWN;
	slash = memrchr(lib, '/', n);
	if (slash) {
		n -= (size_t)(slash + 1 - lib);
		lib = slash + 1;
	}
	for (i = 0; i < ARRAY_SIZE(lib_rules); i++)
		if (starts(lib, n, lib_rules[i].prefix))
			return lib_rules[i].lib;
	return FLIB_OTHER;
}

enum frame_lib frame_lib_family(const struct frame_parts *p)
{
	if (p->kind == FRAME_KERNEL)
		return FLIB_KERNEL;
	if (p->kind != FRAME_NATIVE)
		return FLIB_OTHER;
	if (!p->file) /* `[unknown]` and other bare names */
		return FLIB_UNKNOWN;
	/* `func (file.c:LINE)` names a source file, not a library: the
	 * caller may know better (perfspy_write_opts.frame_lib). */
	return frame_lib_of(p->file, p->file_len);
}
