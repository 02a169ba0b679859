// SPDX-License-Identifier: GPL-2.0
/*
 * Symbolizer: (DSO, file offset) -> function, source file, line and the
 * chain of inlined calls; kernel addresses -> kallsyms names; C++ names
 * demangled in py-spy's style (no parameters, no return type).
 *
 * Invariants:
 * - One sym_ctx per session owns every DSO. A DSO is opened at most once,
 *   lazily; a file that is missing or has the wrong build id is
 *   remembered as such and never retried.
 * - Each DSO keeps its Elf handles (main binary, separate debug file) and
 *   one Dwarf open until sym_ctx_free(). Strings handed out point into
 *   ELF string tables, libdw-owned DWARF strings or the ctx arena, so all
 *   of them live exactly as long as the ctx (symbols.h contract).
 * - Symbol lookup is a binary search in our own sorted, deduplicated
 *   table. libdwfl's dwfl_module_addrname is not used: it scans the
 *   symbol table linearly (about 450 us per call measured on libdw 0.188,
 *   reference/perf-data-format.md §3).
 * - DWARF: the CU comes from dwarf_addrdie (.debug_aranges), or from our
 *   own CU range table when aranges are missing (clang emits none). In a
 *   CU, a lazily built sorted index of its subprograms finds the function;
 *   the inline chain is then a short walk down the DW_TAG_inlined_subroutine
 *   DIEs that contain the pc. Nothing is ever done per lookup that is
 *   proportional to the size of the DSO.
 * - Results are cached per (DSO, file offset, is_return): memory grows
 *   with unique addresses, DSOs and touched CUs, never with sample count.
 * - No output, no exit, no external programs (no addr2line); every
 *   allocation failure returns -ENOMEM. Problems with one binary cost that
 *   binary's frames only (STYLE.md §1).
 */
#include "symbols.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * The C entry point of abi::__cxa_demangle (Itanium C++ ABI §3.4,
 * "Demangler API"), provided by libstdc++; declared here so that this file
 * stays C. Returns a malloc'd string; *status -1 means out of memory.
 */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len,
			    int *status);

#define BUILD_ID_MAX 64
#define SYSTEM_DEBUG_DIR "/usr/lib/debug"

/* ------------------------------------------------------------------ */
/* String maps: open addressing, keys and values owned by someone else */

struct strmap_ent {
	u64 hash;
	const char *key; /* NULL: empty slot */
	const char *val;
};

struct strmap {
	struct strmap_ent *tab;
	size_t cap; /* 0 or a power of two */
	size_t n;
};

static struct strmap_ent *strmap_slot(const struct strmap *m, const char *key,
				      u64 h)
{
	size_t mask = m->cap - 1, i = h & mask;

	for (;; i = (i + 1) & mask) {
		struct strmap_ent *e = &m->tab[i];

		if (!e->key || (e->hash == h && !strcmp(e->key, key)))
			return e;
	}
}

static const char *strmap_get(const struct strmap *m, const char *key, u64 h)
{
	const struct strmap_ent *e;

	if (!m->cap)
		return NULL;
	e = strmap_slot(m, key, h);
	return e->key ? e->val : NULL;
}

static int strmap_put(struct strmap *m, const char *key, u64 h,
		      const char *val)
{
	struct strmap_ent *e;

	if ((m->n + 1) * 2 > m->cap) {
		struct strmap old = *m;
		size_t ncap = m->cap ? m->cap * 2 : 64, i;

		m->tab = calloc(ncap, sizeof(*m->tab));
		if (!m->tab) {
			*m = old;
			return -ENOMEM;
		}
		m->cap = ncap;
		for (i = 0; i < old.cap; i++)
			if (old.tab[i].key)
				*strmap_slot(m, old.tab[i].key,
					     old.tab[i].hash) = old.tab[i];
		free(old.tab);
	}
	e = strmap_slot(m, key, h);
	if (!e->key)
		m->n++;
	e->hash = h;
	e->key = key;
	e->val = val;
	return 0;
}

static u64 str_hash(const char *s)
{
	return hash_bytes(s, strlen(s), 0);
}

/* ------------------------------------------------------------------ */
/* Data structures                                                    */

struct sym_ent {
	u64 addr;
	u64 end;	   /* exclusive */
	const char *name;  /* as in the ELF string table */
	const char *dname; /* demangled; NULL until first used */
	u8 bind;	   /* STB_* */
	bool sized;	   /* st_size != 0 (else end = next symbol) */
};

struct seg {
	u64 off, filesz, vaddr;
};

/* An address range of a CU or subprogram DIE. */
struct die_range {
	u64 lo, hi;
	Dwarf_Die die;
};

/* Subprogram index of one CU, sorted by lo; built on first use. */
struct cu_fns {
	Dwarf_Off key; /* CU DIE offset + 1; 0: empty slot */
	struct die_range *v;
	size_t n;
};

struct cache_ent {
	u64 off;
	struct sym_frame *frames; /* in the ctx arena */
	u32 n;
	u8 used, ret;
};

struct sym_dso {
	struct sym_dso *next; /* hash chain in ctx->dso_tab */
	u64 hash;
	const char *name;
	u8 bid[BUILD_ID_MAX];
	size_t bid_size; /* 0: unknown */
	bool opened, found, warned, no_dwarf, dw_tried;
	Elf *elf;   /* main binary: segments and symbols */
	Elf *dbg;   /* separate debug file: symbols and DWARF */
	Dwarf *dw;  /* from dbg if it has DWARF, else from elf */
	struct seg *segs;
	size_t nsegs;
	bool seg_guess; /* only a debug file: p_filesz was stripped */
	struct sym_ent *syms;
	size_t nsyms;
	struct cache_ent *cache;
	size_t cache_cap, cache_n;
	struct die_range *cus; /* fallback CU table (no .debug_aranges) */
	size_t ncus;
	bool cus_built;
	struct cu_fns *cufns;
	size_t cufns_cap, cufns_n;
	u8 *mem_image;      /* our copy of an in-memory ELF ([vdso]) */
	Dwarf_CFI *eh_cfi;  /* .eh_frame of the main binary (ours to end) */
	Dwarf_CFI *dbg_cfi; /* .debug_frame, owned by dw */
	bool cfi_tried;
};

struct kern_sym {
	u64 addr;
	const char *name;
	u8 bind;
};

struct sym_ctx {
	const struct log_sink *log;
	const char *symfs;	 /* NULL or a non-empty prefix */
	const char *buildid_dir; /* NULL if unknown */
	const char *kallsyms;	 /* "" disables */
	struct arena arena;
	struct sym_dso **dso_tab;
	size_t dso_cap, ndsos;
	struct strmap demangled; /* mangled -> demangled */
	struct strmap paths;	 /* interned comp_dir-joined paths */
	bool kern_loaded, kern_real, kern_have_text;
	u64 kern_text;
	struct kern_sym *ksyms;
	size_t nksyms;
	struct sym_stats stats;
};

/* ------------------------------------------------------------------ */
/* Demangling                                                         */

static bool ident_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_';
}

/* The symbolic part after `operator` (longest match first), so that
 * `operator()`, `operator<` and `operator->` are not read as brackets. */
static size_t op_sym_len(const char *s, size_t len)
{
	static const char *const ops[] = {
		"<<=", ">>=", "<=>", "->*", "()", "[]", "<<", ">>", "<=",
		">=", "->", "==", "!=", "&&", "||", "++", "--", "+=", "-=",
		"*=", "/=", "%=", "&=", "|=", "^=", "\"\"", "<", ">", "+",
		"-", "*", "/", "%", "&", "|", "^", "!", "~", "=", ",",
	};
	size_t i, l;

	for (i = 0; i < ARRAY_SIZE(ops); i++) {
		l = strlen(ops[i]);
		if (l <= len && !memcmp(s, ops[i], l))
			return l;
	}
	return 0;
}

static bool is_op_kw(const char *s, size_t i, size_t len)
{
	return len - i >= 8 && !memcmp(s + i, "operator", 8) &&
	       (i == 0 || !ident_char(s[i - 1])) &&
	       (i + 8 == len || !ident_char(s[i + 8]));
}

/* What a scan of a demangled name found at bracket depth 0. */
struct dscan {
	long open, close;	    /* last (...) group */
	long prev_open, prev_close; /* the group before it */
	long op;		    /* last `operator` keyword */
	long space;		    /* last space */
	long space_before_op;	    /* last space before `op` */
	bool ok;		    /* brackets balanced */
};

/*
 * Walk @s tracking (), [], {} and template <> nesting. Inside parentheses
 * '<' and '>' are plain characters: libiberty's printer parenthesizes
 * template-argument expressions that contain '>' (cp-demangle.c), and
 * parameter lists never hold unbalanced angle brackets.
 */
static void dscan(const char *s, size_t len, struct dscan *r)
{
	char st[512];
	size_t d = 0, i;
	long cur_open = -1;

	*r = (struct dscan){ -1, -1, -1, -1, -1, -1, -1, true };
	for (i = 0; i < len; i++) {
		char c = s[i];
		bool in_paren = d && st[d - 1] == '(';

		if (is_op_kw(s, i, len)) {
			if (!d) {
				r->op = (long)i;
				r->space_before_op = r->space;
			}
			i += 8;
			i += op_sym_len(s + i, len - i);
			i--;
			continue;
		}
		if (c == '(' || c == '[' || c == '{' || (c == '<' && !in_paren)) {
			if (d == sizeof(st))
				goto bad;
			if (c == '(' && !d)
				cur_open = (long)i;
			st[d++] = c;
		} else if (c == ')' || c == ']' || c == '}' ||
			   (c == '>' && !in_paren)) {
			char want = c == ')' ? '(' : c == ']' ? '[' :
				    c == '}' ? '{' : '<';

			if (!d || st[d - 1] != want)
				goto bad;
			d--;
			if (c == ')' && !d) {
				r->prev_open = r->open;
				r->prev_close = r->close;
				r->open = cur_open;
				r->close = (long)i;
			}
		} else if (c == ' ' && !d) {
			r->space = (long)i;
		}
	}
	if (!d)
		return;
bad:
	r->ok = false;
}

/* Drop trailing cv/ref qualifiers of a member function (`() const &`). */
static size_t trim_quals(const char *s, size_t len)
{
	static const char *const q[] = { " const", " volatile", " &&", " &",
					 " restrict", " transaction_safe" };
	size_t t = len, i, l;
	bool again = true;

	while (again) {
		again = false;
		for (i = 0; i < ARRAY_SIZE(q); i++) {
			l = strlen(q[i]);
			if (t >= l && !memcmp(s + t - l, q[i], l)) {
				t -= l;
				again = true;
				break;
			}
		}
	}
	return t && s[t - 1] == ')' ? t : len;
}

/*
 * Reduce a demangled signature to py-spy's `no_params().no_return_type()`
 * form (pyspy-formats.md §1.8 item 5): drop ` [clone .xxx]` suffixes, the
 * cv/ref qualifiers and the top-level parameter list, and the return type
 * that Itanium mangling encodes for template functions only. A function
 * returning a function pointer, `R (*name(P))(Q)`, keeps the inner name.
 * Names that do not parse are left whole. The result is s[*start..+*len).
 */
static void strip_sig(const char *s, size_t len, size_t *start, size_t *out,
		      int depth)
{
	const char *cl = strstr(s, " [clone ");
	struct dscan sc;
	size_t name_len;
	long split;

	*start = 0;
	if (cl && (size_t)(cl - s) < len)
		len = (size_t)(cl - s);
	*out = len;
	len = trim_quals(s, len);
	dscan(s, len, &sc);
	if (!sc.ok || sc.open < 0 || sc.close != (long)len - 1)
		return; /* not a function: `vtable for X`, variables */
	if (sc.prev_close >= 0 && sc.prev_close + 1 == sc.open && !depth) {
		const char *in = s + sc.prev_open + 1;

		strip_sig(in, (size_t)(sc.prev_close - sc.prev_open - 1), start,
			  out, depth + 1);
		*start += (size_t)(sc.prev_open + 1);
		while (*out && strchr("*& ", s[*start])) {
			(*start)++;
			(*out)--;
		}
		return;
	}
	name_len = (size_t)sc.open;
	*out = name_len;
	if (!name_len || s[name_len - 1] != '>')
		return;
	dscan(s, name_len, &sc);
	split = sc.op >= 0 ? sc.space_before_op : sc.space;
	if (sc.ok && split >= 0) {
		*start = (size_t)split + 1;
		*out = name_len - *start;
	}
}

/*
 * Demangle @name into *@out (ctx-owned, or @name itself when it is not a
 * `_Z` name). @stable: @name outlives the ctx (ELF/DWARF string), so it
 * can serve as the cache key without a copy.
 */
static int demangle(struct sym_ctx *ctx, const char *name, bool stable,
		    const char **out)
{
	const char *key = name, *val;
	size_t start, len;
	char *full;
	int status = 0;
	u64 h;

	*out = name;
	if (name[0] != '_' || name[1] != 'Z')
		return 0;
	h = str_hash(name);
	val = strmap_get(&ctx->demangled, name, h);
	if (val) {
		*out = val;
		return 0;
	}
	full = __cxa_demangle(name, NULL, NULL, &status);
	if (!full && status == -1)
		return -ENOMEM;
	if (!stable && !(key = arena_strdup(&ctx->arena, name))) {
		free(full);
		return -ENOMEM;
	}
	val = key; /* not demangleable: kept as is */
	if (full) {
		strip_sig(full, strlen(full), &start, &len, 0);
		val = arena_strndup(&ctx->arena, full + start, len);
		free(full);
		if (!val)
			return -ENOMEM;
	}
	if (strmap_put(&ctx->demangled, key, h, val))
		return -ENOMEM;
	*out = val;
	return 0;
}

const char *sym_demangle(struct sym_ctx *ctx, const char *name)
{
	const char *out;

	return demangle(ctx, name, false, &out) ? NULL : out;
}

/* ------------------------------------------------------------------ */
/* Context and DSO table                                              */

int sym_ctx_new(const struct sym_opts *opts, struct sym_ctx **out)
{
	struct sym_ctx *ctx = calloc(1, sizeof(*ctx));
	const char *home = getenv("HOME");
	bool nomem = false;

	*out = NULL;
	if (!ctx)
		return -ENOMEM;
	arena_init(&ctx->arena);
	/* libelf requires the version handshake before elf_begin(). */
	elf_version(EV_CURRENT);
	ctx->log = opts ? opts->log : NULL;
	ctx->kallsyms = "/proc/kallsyms";
	if (opts && opts->kallsyms)
		nomem |= !(ctx->kallsyms = arena_strdup(&ctx->arena, opts->kallsyms));
	if (opts && opts->symfs && *opts->symfs)
		nomem |= !(ctx->symfs = arena_strdup(&ctx->arena, opts->symfs));
	if (opts && opts->buildid_dir)
		nomem |= !(ctx->buildid_dir =
				   arena_strdup(&ctx->arena, opts->buildid_dir));
	else if (home && *home) /* perf's default cache, ~/.debug */
		nomem |= !(ctx->buildid_dir =
				   arena_printf(&ctx->arena, "%s/.debug", home));
	if (nomem) {
		sym_ctx_free(ctx);
		return -ENOMEM;
	}
	*out = ctx;
	return 0;
}

static void dso_free(struct sym_dso *d)
{
	size_t i;

	for (i = 0; i < d->cufns_cap; i++)
		free(d->cufns[i].v);
	free(d->cufns);
	free(d->cus);
	free(d->cache);
	free(d->syms);
	free(d->segs);
	if (d->eh_cfi)
		dwarf_cfi_end(d->eh_cfi);
	if (d->dw)
		dwarf_end(d->dw);
	if (d->dbg)
		elf_end(d->dbg);
	if (d->elf)
		elf_end(d->elf);
	free(d->mem_image);
	free(d);
}

void sym_ctx_free(struct sym_ctx *ctx)
{
	struct sym_dso *d, *n;
	size_t i;

	if (!ctx)
		return;
	for (i = 0; i < ctx->dso_cap; i++)
		for (d = ctx->dso_tab[i]; d; d = n) {
			n = d->next;
			dso_free(d);
		}
	free(ctx->dso_tab);
	free(ctx->demangled.tab);
	free(ctx->paths.tab);
	free(ctx->ksyms);
	arena_free(&ctx->arena);
	free(ctx);
}

void sym_ctx_stats(const struct sym_ctx *ctx, struct sym_stats *out)
{
	*out = ctx->stats;
}

static size_t bid_trim(const u8 *b, size_t n)
{
	while (n && !b[n - 1])
		n--;
	return n;
}

/* perf.data pads build ids with zeros (20 bytes in 24-byte fields,
 * perf-data-format.md HEADER_BUILD_ID), so compare modulo that padding. */
static bool bid_equal(const u8 *a, size_t na, const u8 *b, size_t nb)
{
	na = bid_trim(a, na);
	nb = bid_trim(b, nb);
	return na == nb && !memcmp(a, b, na);
}

static int dso_tab_grow(struct sym_ctx *ctx)
{
	size_t ncap = ctx->dso_cap ? ctx->dso_cap * 2 : 64, i;
	struct sym_dso **tab = calloc(ncap, sizeof(*tab)), *d, *n;

	if (!tab)
		return -ENOMEM;
	for (i = 0; i < ctx->dso_cap; i++)
		for (d = ctx->dso_tab[i]; d; d = n) {
			n = d->next;
			d->next = tab[d->hash & (ncap - 1)];
			tab[d->hash & (ncap - 1)] = d;
		}
	free(ctx->dso_tab);
	ctx->dso_tab = tab;
	ctx->dso_cap = ncap;
	return 0;
}

int sym_dso_get(struct sym_ctx *ctx, const char *filename,
		const u8 *build_id, size_t build_id_size,
		struct sym_dso **out)
{
	size_t n = build_id_size < BUILD_ID_MAX ? build_id_size : BUILD_ID_MAX;
	u64 h = str_hash(filename);
	struct sym_dso *d;

	if (!build_id || !bid_trim(build_id, n))
		n = 0;
	/* Chained by file name; (name, build id) identifies a DSO. */
	if (ctx->dso_cap)
		for (d = ctx->dso_tab[h & (ctx->dso_cap - 1)]; d; d = d->next)
			if (d->hash == h && !strcmp(d->name, filename) &&
			    (n ? d->bid_size &&
				     bid_equal(d->bid, d->bid_size, build_id, n) :
				 !d->bid_size)) {
				*out = d;
				return 0;
			}
	if (ctx->ndsos + 1 > ctx->dso_cap && dso_tab_grow(ctx))
		return -ENOMEM;
	d = calloc(1, sizeof(*d));
	if (!d || !(d->name = arena_strdup(&ctx->arena, filename))) {
		free(d);
		return -ENOMEM;
	}
	d->hash = h;
	if (n)
		memcpy(d->bid, build_id, n);
	d->bid_size = n;
	d->next = ctx->dso_tab[h & (ctx->dso_cap - 1)];
	ctx->dso_tab[h & (ctx->dso_cap - 1)] = d;
	ctx->ndsos++;
	ctx->stats.dsos++;
	*out = d;
	return 0;
}

void sym_dso_set_build_id(struct sym_dso *dso, const u8 *build_id,
			  size_t size)
{
	size_t n = size < BUILD_ID_MAX ? size : BUILD_ID_MAX;

	if (dso->opened)
		return;
	if (!build_id || !bid_trim(build_id, n))
		n = 0;
	if (n)
		memcpy(dso->bid, build_id, n);
	dso->bid_size = n;
}

void sym_dso_set_no_dwarf(struct sym_dso *dso, bool no_dwarf)
{
	if (dso->no_dwarf == no_dwarf)
		return;
	dso->no_dwarf = no_dwarf;
	/* Cached frames were made under the other setting. */
	if (dso->cache_cap)
		memset(dso->cache, 0, sizeof(*dso->cache) * dso->cache_cap);
	dso->cache_n = 0;
}

const char *sym_dso_name(const struct sym_dso *dso)
{
	return dso->name;
}

/* ------------------------------------------------------------------ */
/* Locating and opening binaries                                      */

/*
 * Names that are not files (perf's map__new() / is_no_dso_memory(),
 * tools/perf/util/map.c): [vdso], [heap], [stack], [kernel.kallsyms]_text,
 * //anon, /dev/zero, SysV shm, memfd, hugepages, and JIT symbol maps.
 */
static bool is_pseudo(const char *n)
{
	size_t len = strlen(n);

	if (n[0] != '/' || n[1] == '/')
		return true;
	if (!strncmp(n, "/dev/", 5) || !strncmp(n, "/SYSV", 5) ||
	    !strncmp(n, "/anon_hugepage", 14) || !strncmp(n, "/memfd:", 7))
		return true;
	return !strncmp(n, "/tmp/perf-", 10) && len > 4 &&
	       !strcmp(n + len - 4, ".map");
}

/*
 * Open @path as an ELF file, or NULL (absent, not a regular file, not
 * ELF). ELF_C_FDREAD makes libelf read whatever it has not mmapped and
 * stop using the descriptor (libelf.h, elf_cntl), so the fd is closed at
 * once and hundreds of DSOs cost no descriptors.
 */
static Elf *elf_open_path(const char *path)
{
	struct stat st;
	Elf *elf;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return NULL;
	}
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf && (elf_kind(elf) != ELF_K_ELF || elf_cntl(elf, ELF_C_FDREAD))) {
		elf_end(elf);
		elf = NULL;
	}
	close(fd);
	return elf;
}

/* False (and one warning per DSO) if @elf's NT_GNU_BUILD_ID note differs
 * from the recorded one. A file without the note cannot be checked. */
static bool bid_ok(struct sym_ctx *ctx, struct sym_dso *dso, Elf *elf,
		   const char *path)
{
	const void *p;
	ssize_t n;

	if (!dso->bid_size)
		return true;
	n = dwelf_elf_gnu_build_id(elf, &p);
	if (n <= 0 || bid_equal(p, (size_t)n, dso->bid, dso->bid_size))
		return true;
	ctx->stats.build_id_mismatch++;
	if (!dso->warned) {
		dso->warned = true;
		pr_warn(ctx->log,
			"perfspy: %s: build id differs from the recorded one, not used",
			path);
	}
	return false;
}

static Elf *try_elf(struct sym_ctx *ctx, struct sym_dso *dso,
		    const char *path)
{
	Elf *elf = elf_open_path(path);

	if (elf && !bid_ok(ctx, dso, elf, path)) {
		elf_end(elf);
		elf = NULL;
	}
	if (elf)
		pr_debug(ctx->log, "perfspy: %s: using %s", dso->name, path);
	return elf;
}

static void bid_hex(const u8 *b, size_t n, char *out)
{
	static const char hex[] = "0123456789abcdef";
	size_t i;

	/* perf stores 20-byte ids in 24-byte fields: drop the padding. */
	while (n > 20 && !b[n - 1])
		n--;
	for (i = 0; i < n; i++) {
		out[2 * i] = hex[b[i] >> 4];
		out[2 * i + 1] = hex[b[i] & 15];
	}
	out[2 * n] = '\0';
}

static bool path_join(char *buf, size_t size, const char *a, const char *b)
{
	int n = snprintf(buf, size, "%s%s", a, b);

	return n >= 0 && (size_t)n < size;
}

/*
 * perf's build-id cache (tools/perf/util/build-id.c): <dir>/.build-id/xx/
 * rest is a symlink to <dir>/<path>/<build id>/, a directory holding `elf`
 * (or `vdso` for [vdso]) and possibly `debug` (debuginfod); older perf
 * versions linked straight to the file.
 */
static void locate_cache(struct sym_ctx *ctx, struct sym_dso *dso)
{
	char hex[2 * BUILD_ID_MAX + 1], dir[PATH_MAX], path[PATH_MAX];
	struct stat st;
	int n;

	bid_hex(dso->bid, dso->bid_size, hex);
	n = snprintf(dir, sizeof(dir), "%s/.build-id/%.2s/%s",
		     ctx->buildid_dir, hex, hex + 2);
	if (n < 0 || (size_t)n >= sizeof(dir) || stat(dir, &st))
		return;
	if (!S_ISDIR(st.st_mode)) {
		dso->elf = try_elf(ctx, dso, dir);
		return;
	}
	if (path_join(path, sizeof(path), dir, "/elf"))
		dso->elf = try_elf(ctx, dso, path);
	if (!dso->elf && path_join(path, sizeof(path), dir, "/vdso"))
		dso->elf = try_elf(ctx, dso, path);
	if (path_join(path, sizeof(path), dir, "/debug"))
		dso->dbg = try_elf(ctx, dso, path);
}

/* The distribution's detached debug info, by build id (Debian's -dbg and
 * -dbgsym packages; gdb's "Separate Debug Files" build-id method). */
static void locate_debug(struct sym_ctx *ctx, struct sym_dso *dso)
{
	char hex[2 * BUILD_ID_MAX + 1], path[PATH_MAX];
	const void *p = NULL;
	ssize_t n = 0;
	int len;

	if (dso->bid_size)
		bid_hex(dso->bid, dso->bid_size, hex);
	else if (dso->elf && (n = dwelf_elf_gnu_build_id(dso->elf, &p)) > 1 &&
		 n <= BUILD_ID_MAX)
		bid_hex(p, (size_t)n, hex);
	else
		return;
	len = snprintf(path, sizeof(path), SYSTEM_DEBUG_DIR "/.build-id/%.2s/%s.debug",
		       hex, hex + 2);
	if (len > 0 && (size_t)len < sizeof(path))
		dso->dbg = try_elf(ctx, dso, path);
}

static bool elf_has_section(Elf *elf, Elf64_Word type)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &sh) && sh.sh_type == type)
			return true;
	return false;
}

/* <symfs><path>, then <path>. The kernel's d_path() marks a replaced
 * file " (deleted)": try the path that now exists there, which the build
 * id check accepts only if it is the same build. */
static void locate_path(struct sym_ctx *ctx, struct sym_dso *dso)
{
	static const char deleted[] = " (deleted)";
	char name[PATH_MAX], path[PATH_MAX];
	size_t len = strlen(dso->name), dl = sizeof(deleted) - 1;

	if (len >= sizeof(name))
		return;
	memcpy(name, dso->name, len + 1);
	if (len > dl && !strcmp(name + len - dl, deleted))
		name[len - dl] = '\0';
	if (ctx->symfs && path_join(path, sizeof(path), ctx->symfs, name))
		dso->elf = try_elf(ctx, dso, path);
	if (!dso->elf)
		dso->elf = try_elf(ctx, dso, name);
}

/*
 * The vDSO of this very process, when the profile's [vdso] has the same
 * build id (a profile taken on this machine and kernel): the kernel maps
 * the image into every process (getauxval(AT_SYSINFO_EHDR)); a copy is
 * handed to libelf. Without a recorded build id it is not used, since
 * another kernel's vDSO would give wrong names.
 */
static void locate_self_vdso(struct sym_ctx *ctx, struct sym_dso *dso)
{
	const u8 *base = (const u8 *)getauxval(AT_SYSINFO_EHDR);
	Elf64_Ehdr eh;
	size_t size;
	Elf *elf;
	u8 *copy;

	if (!base || !dso->bid_size)
		return;
	memcpy(&eh, base, sizeof(eh));
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64)
		return;
	size = eh.e_shoff + (size_t)eh.e_shnum * eh.e_shentsize;
	if (size < sizeof(eh) || size > (1u << 20))
		return;
	copy = malloc(size);
	if (!copy)
		return;
	memcpy(copy, base, size);
	elf = elf_memory((char *)copy, size);
	if (!elf || !bid_ok(ctx, dso, elf, "[vdso] of this process")) {
		if (elf)
			elf_end(elf);
		free(copy);
		return;
	}
	dso->elf = elf;
	dso->mem_image = copy;
}

/* Candidates in the order of symbols.h: build-id cache, system debug
 * dir, <symfs><path>, <path>. Pseudo maps are never opened, except that
 * perf's cache keeps a copy of the [vdso] image. */
static void locate(struct sym_ctx *ctx, struct sym_dso *dso)
{
	bool pseudo = is_pseudo(dso->name);

	if (pseudo && strcmp(dso->name, "[vdso]"))
		return;
	if (dso->bid_size && ctx->buildid_dir)
		locate_cache(ctx, dso);
	if (!dso->elf && pseudo)
		locate_self_vdso(ctx, dso);
	if (!dso->elf && !pseudo)
		locate_path(ctx, dso);
	if (!dso->dbg && (dso->elf || !pseudo))
		locate_debug(ctx, dso);
	/* A debug file alone is useful only for its .symtab. */
	if (!dso->elf && dso->dbg && !elf_has_section(dso->dbg, SHT_SYMTAB)) {
		elf_end(dso->dbg);
		dso->dbg = NULL;
	}
}

/* PT_LOAD segments (ELF gABI, "Program Header"): they map file offsets
 * (what perf records) to the link-time addresses symbols and DWARF use. */
static int load_segments(struct sym_dso *dso)
{
	Elf *elf = dso->elf ? dso->elf : dso->dbg;
	size_t n, i, cap = 0;
	GElf_Ehdr eh;
	GElf_Phdr ph;

	if (!gelf_getehdr(elf, &eh) || eh.e_type == ET_REL ||
	    elf_getphdrnum(elf, &n))
		return 0;
	for (i = 0; i < n; i++) {
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (ensure_mem((void **)&dso->segs, &cap, sizeof(*dso->segs),
			       dso->nsegs + 1))
			return -ENOMEM;
		dso->segs[dso->nsegs++] = (struct seg){ ph.p_offset,
							ph.p_filesz,
							ph.p_vaddr };
	}
	/* objcopy --only-keep-debug zeroes p_filesz (and p_offset). */
	dso->seg_guess = !dso->elf;
	return 0;
}

static bool off_to_vaddr(const struct sym_dso *dso, u64 off, u64 *vaddr)
{
	size_t i;

	if (!dso->nsegs) { /* ET_REL or no program headers */
		*vaddr = off;
		return true;
	}
	if (dso->seg_guess) {
		/* Debug file only: assume the first segment's offset-to-
		 * address delta holds for all (GNU ld layouts). */
		*vaddr = off - dso->segs[0].off + dso->segs[0].vaddr;
		return true;
	}
	for (i = 0; i < dso->nsegs; i++) {
		const struct seg *s = &dso->segs[i];

		if (off >= s->off && off - s->off < s->filesz) {
			*vaddr = off - s->off + s->vaddr;
			return true;
		}
	}
	return false;
}

/* ------------------------------------------------------------------ */
/* Symbol tables                                                      */

struct scn_info {
	u64 addr, size;
	bool exec;
};

static int add_sym(struct sym_dso *dso, size_t *cap, const GElf_Sym *s,
		   const char *name, const struct scn_info *sec)
{
	struct sym_ent *e;
	u64 end;

	if (!name || !*name || name[0] == '$' || !strncmp(name, ".L", 2))
		return 0; /* ARM mapping symbols, local labels */
	if (ensure_mem((void **)&dso->syms, cap, sizeof(*e), dso->nsyms + 1))
		return -ENOMEM;
	e = &dso->syms[dso->nsyms++];
	e->addr = s->st_value;
	e->sized = s->st_size != 0;
	if (e->sized)
		end = s->st_value + s->st_size < s->st_value ?
			      UINT64_MAX : s->st_value + s->st_size;
	else /* until the next symbol, at most to the end of its section */
		end = sec->addr + sec->size;
	e->end = end < e->addr ? e->addr : end;
	e->name = name;
	e->dname = NULL;
	e->bind = GELF_ST_BIND(s->st_info);
	return 0;
}

static int add_symtab(struct sym_dso *dso, size_t *cap, Elf *elf,
		      Elf_Scn *scn, const GElf_Shdr *sh,
		      const struct scn_info *si, size_t nscn)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t cnt = sh->sh_size / sh->sh_entsize, i;
	GElf_Sym s;
	int type, err;

	if (!data)
		return 0;
	for (i = 1; i < cnt; i++) {
		if (!gelf_getsym(data, (int)i, &s) || s.st_shndx == SHN_UNDEF ||
		    s.st_shndx >= SHN_LORESERVE || s.st_shndx >= nscn)
			continue;
		type = GELF_ST_TYPE(s.st_info);
		/* Functions, and untyped labels in code (hand-written asm). */
		if (type != STT_FUNC && type != STT_GNU_IFUNC &&
		    !(type == STT_NOTYPE && si[s.st_shndx].exec))
			continue;
		err = add_sym(dso, cap, &s,
			      elf_strptr(elf, sh->sh_link, s.st_name),
			      &si[s.st_shndx]);
		if (err)
			return err;
	}
	return 0;
}

/* .symtab and .dynsym of one ELF file. NOBITS copies (the .dynsym of a
 * debug file) have another sh_type and are skipped. */
static int add_elf_syms(struct sym_dso *dso, size_t *cap, Elf *elf)
{
	struct scn_info *si;
	Elf_Scn *scn = NULL;
	size_t nscn, i;
	GElf_Shdr sh;
	int err = 0;

	if (elf_getshdrnum(elf, &nscn) || !nscn)
		return 0;
	si = calloc(nscn, sizeof(*si));
	if (!si)
		return -ENOMEM;
	for (i = 0; i < nscn; i++) {
		scn = elf_getscn(elf, i);
		if (scn && gelf_getshdr(scn, &sh))
			si[i] = (struct scn_info){ sh.sh_addr, sh.sh_size,
						   !!(sh.sh_flags & SHF_EXECINSTR) };
	}
	for (scn = NULL; !err && (scn = elf_nextscn(elf, scn));)
		if (gelf_getshdr(scn, &sh) && sh.sh_entsize &&
		    (sh.sh_type == SHT_SYMTAB || sh.sh_type == SHT_DYNSYM))
			err = add_symtab(dso, cap, elf, scn, &sh, si, nscn);
	free(si);
	return err;
}

static int leading_underscores(const char *s)
{
	int n = 0;

	while (s[n] == '_')
		n++;
	return n;
}

/*
 * Which of several symbols at one address names it. perf's rule
 * (choose_best_symbol, tools/perf/util/symbol.c), so that names match
 * `perf script`: sized over zero-sized, non-weak over weak, global over
 * local, fewer leading underscores, longer name; then strcmp so the
 * choice never depends on table order. One addition: a name without a
 * symbol version (`pthread_mutex_lock` from .dynsym) beats the same
 * function's versioned .symtab name (`pthread_mutex_lock@@GLIBC_2.2.5`),
 * so names do not change when a -dbg package is installed.
 */
static int sym_rank_cmp(u8 ba, bool sa, const char *na, u8 bb, bool sb,
			const char *nb)
{
	size_t la, lb;
	int ua, ub;
	bool va, vb;

	if (sa != sb)
		return sa ? -1 : 1;
	if ((ba == STB_WEAK) != (bb == STB_WEAK))
		return ba == STB_WEAK ? 1 : -1;
	if ((ba == STB_GLOBAL) != (bb == STB_GLOBAL))
		return ba == STB_GLOBAL ? -1 : 1;
	va = strchr(na, '@') != NULL;
	vb = strchr(nb, '@') != NULL;
	if (va != vb)
		return va ? 1 : -1;
	ua = leading_underscores(na);
	ub = leading_underscores(nb);
	if (ua != ub)
		return ua < ub ? -1 : 1;
	la = strlen(na);
	lb = strlen(nb);
	if (la != lb)
		return la > lb ? -1 : 1;
	return strcmp(na, nb);
}

static int sym_cmp(const void *pa, const void *pb)
{
	const struct sym_ent *a = pa, *b = pb;
	int r;

	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	r = sym_rank_cmp(a->bind, a->sized, a->name, b->bind, b->sized,
			 b->name);
	if (r)
		return r;
	return a->end > b->end ? -1 : a->end < b->end;
}

static int load_symbols(struct sym_dso *dso)
{
	size_t cap = 0, i, n = 0;
	int err = 0;

	if (dso->elf)
		err = add_elf_syms(dso, &cap, dso->elf);
	if (!err && dso->dbg)
		err = add_elf_syms(dso, &cap, dso->dbg);
	if (err || !dso->nsyms)
		return err;
	qsort(dso->syms, dso->nsyms, sizeof(*dso->syms), sym_cmp);
	for (i = 0; i < dso->nsyms; i++) /* keep the best per address */
		if (!n || dso->syms[n - 1].addr != dso->syms[i].addr)
			dso->syms[n++] = dso->syms[i];
	dso->nsyms = n;
	for (i = 0; i + 1 < n; i++)
		if (!dso->syms[i].sized && dso->syms[i].end > dso->syms[i + 1].addr)
			dso->syms[i].end = dso->syms[i + 1].addr;
	return 0;
}

/* The symbol containing @addr: the last one starting at or below it, if
 * @addr is before its end. */
static struct sym_ent *sym_find(const struct sym_dso *dso, u64 addr)
{
	size_t lo = 0, hi = dso->nsyms, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (dso->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || addr >= dso->syms[lo - 1].end)
		return NULL;
	return &dso->syms[lo - 1];
}

static int dso_open(struct sym_ctx *ctx, struct sym_dso *dso)
{
	int err;

	dso->opened = true;
	locate(ctx, dso);
	if (!dso->elf && !dso->dbg) {
		ctx->stats.dsos_missing++;
		pr_debug(ctx->log, "perfspy: %s: no usable file", dso->name);
		return 0;
	}
	dso->found = true;
	ctx->stats.dsos_found++;
	err = load_segments(dso);
	return err ? err : load_symbols(dso);
}

/* The DSO's Dwarf, opened on first use and kept for the session (never
 * one per lookup). libdw decompresses SHF_COMPRESSED debug sections
 * here, so DSOs resolved without DWARF never pay for it. */
static Dwarf *dso_dwarf(struct sym_dso *d)
{
	if (d->no_dwarf)
		return NULL;
	if (!d->dw_tried) {
		d->dw_tried = true;
		if (d->dbg)
			d->dw = dwarf_begin_elf(d->dbg, DWARF_C_READ, NULL);
		if (!d->dw && d->elf)
			d->dw = dwarf_begin_elf(d->elf, DWARF_C_READ, NULL);
	}
	return d->dw;
}

/* Call frame information for the unwinder: .eh_frame from the loaded
 * binary (what the runtime itself unwinds with), and .debug_frame as a
 * second source (libpython has none, but some -g builds do). Both are
 * indexed by ELF address; libdw keeps a sorted FDE table per CFI. */
int sym_dso_unwind_info(struct sym_ctx *ctx, struct sym_dso *dso, u64 file_off,
			u64 *vaddr, Dwarf_CFI **eh, Dwarf_CFI **dbg)
{
	int err;

	*eh = *dbg = NULL;
	if (!dso->opened && (err = dso_open(ctx, dso)))
		return err;
	if (!dso->found || !off_to_vaddr(dso, file_off, vaddr))
		return -ENOENT;
	if (!dso->cfi_tried) {
		Dwarf *dw;

		dso->cfi_tried = true;
		if (dso->elf)
			dso->eh_cfi = dwarf_getcfi_elf(dso->elf);
		dw = dso_dwarf(dso);
		if (dw)
			dso->dbg_cfi = dwarf_getcfi(dw);
	}
	*eh = dso->eh_cfi;
	*dbg = dso->dbg_cfi;
	return 0;
}

bool sym_dso_found(struct sym_ctx *ctx, struct sym_dso *dso)
{
	if (!dso->opened)
		dso_open(ctx, dso);
	return dso->found;
}

/* ------------------------------------------------------------------ */
/* DWARF: CUs, subprograms, inline chains                             */

static int range_cmp(const void *pa, const void *pb)
{
	const struct die_range *a = pa, *b = pb;

	if (a->lo != b->lo)
		return a->lo < b->lo ? -1 : 1;
	return a->hi < b->hi ? -1 : a->hi > b->hi;
}

/* CU ranges from the CU DIEs themselves, for objects without
 * .debug_aranges (dwarf_getaranges then has nothing in libdw 0.188). */
static int build_cu_table(struct sym_dso *d)
{
	Dwarf_CU *cu = NULL;
	Dwarf_Half ver;
	Dwarf_Die cudie;
	Dwarf_Addr base, lo, hi;
	uint8_t ut;
	size_t cap = 0;
	ptrdiff_t off;

	d->cus_built = true;
	while (dwarf_get_units(d->dw, cu, &cu, &ver, &ut, &cudie, NULL) == 0) {
		if (ut != DW_UT_compile && ut != DW_UT_skeleton)
			continue;
		for (off = 0; (off = dwarf_ranges(&cudie, off, &base, &lo, &hi)) > 0;) {
			if (lo >= hi)
				continue;
			if (ensure_mem((void **)&d->cus, &cap, sizeof(*d->cus),
				       d->ncus + 1))
				return -ENOMEM;
			d->cus[d->ncus++] = (struct die_range){ lo, hi, cudie };
		}
	}
	qsort(d->cus, d->ncus, sizeof(*d->cus), range_cmp);
	return 0;
}

/* The range containing @pc: the last one starting at or below it, or one
 * of the few before it when ranges overlap; NULL if none. */
static struct die_range *range_find(struct die_range *v, size_t n, u64 pc)
{
	size_t lo = 0, hi = n, mid, k;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (v[mid].lo <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (k = lo; k > 0 && lo - k < 8; k--)
		if (pc < v[k - 1].hi)
			return &v[k - 1];
	return NULL;
}

static int find_cu(struct sym_dso *d, u64 pc, Dwarf_Die *cu, bool *ok)
{
	struct die_range *r;
	int err;

	*ok = dwarf_addrdie(d->dw, pc, cu) != NULL;
	if (*ok)
		return 0;
	if (!d->cus_built && (err = build_cu_table(d)))
		return err;
	r = range_find(d->cus, d->ncus, pc);
	if (r) {
		*cu = r->die;
		*ok = true;
	}
	return 0;
}

struct fnvec {
	struct die_range *v;
	size_t n, cap;
};

static int add_fn(struct fnvec *fv, Dwarf_Die *die)
{
	Dwarf_Addr base, lo, hi;
	ptrdiff_t off;

	for (off = 0; (off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0;) {
		if (lo >= hi)
			continue;
		if (ensure_mem((void **)&fv->v, &fv->cap, sizeof(*fv->v),
			       fv->n + 1))
			return -ENOMEM;
		fv->v[fv->n++] = (struct die_range){ lo, hi, *die };
	}
	return 0;
}

/*
 * Concrete subprograms of a CU. GCC puts them at CU level (with
 * DW_AT_specification for members and namespace functions); clang nests
 * namespace functions inside DW_TAG_namespace. Class bodies hold only
 * declarations, so they are not entered.
 */
static int index_scope(Dwarf_Die *parent, struct fnvec *fv, int depth)
{
	Dwarf_Die c;
	int tag, err = 0;

	if (depth > 32 || dwarf_child(parent, &c) != 0)
		return 0;
	do {
		tag = dwarf_tag(&c);
		if (tag == DW_TAG_subprogram)
			err = add_fn(fv, &c);
		else if (tag == DW_TAG_namespace || tag == DW_TAG_module)
			err = index_scope(&c, fv, depth + 1);
	} while (!err && dwarf_siblingof(&c, &c) == 0);
	return err;
}

static struct cu_fns *cufns_slot(struct cu_fns *tab, size_t cap,
				 Dwarf_Off key)
{
	size_t mask = cap - 1, i = hash_mix(key) & mask;

	while (tab[i].key && tab[i].key != key)
		i = (i + 1) & mask;
	return &tab[i];
}

static int cufns_grow(struct sym_dso *d)
{
	size_t ncap = d->cufns_cap ? d->cufns_cap * 2 : 16, i;
	struct cu_fns *tab = calloc(ncap, sizeof(*tab));

	if (!tab)
		return -ENOMEM;
	for (i = 0; i < d->cufns_cap; i++)
		if (d->cufns[i].key)
			*cufns_slot(tab, ncap, d->cufns[i].key) = d->cufns[i];
	free(d->cufns);
	d->cufns = tab;
	d->cufns_cap = ncap;
	return 0;
}

static int cu_fns_get(struct sym_dso *d, Dwarf_Die *cu, struct cu_fns **out)
{
	Dwarf_Off key = dwarf_dieoffset(cu) + 1;
	struct fnvec fv = { 0 };
	struct cu_fns *e;
	int err;

	if (d->cufns_cap) {
		e = cufns_slot(d->cufns, d->cufns_cap, key);
		if (e->key) {
			*out = e;
			return 0;
		}
	}
	if ((d->cufns_n + 1) * 2 > d->cufns_cap && cufns_grow(d))
		return -ENOMEM;
	err = index_scope(cu, &fv, 0);
	if (err) {
		free(fv.v);
		return err;
	}
	qsort(fv.v, fv.n, sizeof(*fv.v), range_cmp);
	e = cufns_slot(d->cufns, d->cufns_cap, key);
	*e = (struct cu_fns){ key, fv.v, fv.n };
	d->cufns_n++;
	*out = e;
	return 0;
}

static bool is_block_tag(int tag)
{
	return tag == DW_TAG_inlined_subroutine || tag == DW_TAG_lexical_block ||
	       tag == DW_TAG_try_block || tag == DW_TAG_catch_block ||
	       tag == DW_TAG_with_stmt;
}

/*
 * The DW_TAG_inlined_subroutine DIEs containing @pc below @fn, outermost
 * first (DWARF 5 §3.3.8.2: each is nested in the scope it was inlined
 * into). If there are more than @max, the innermost @max are kept.
 */
static int inline_chain(const Dwarf_Die *fn, u64 pc, Dwarf_Die *chain,
			int max)
{
	Dwarf_Die cur = *fn, c;
	int n = 0, depth, tag = 0;
	bool hit;

	for (depth = 0; depth < 256; depth++) {
		if (dwarf_child(&cur, &c) != 0)
			break;
		hit = false;
		do {
			tag = dwarf_tag(&c);
			if (is_block_tag(tag) && dwarf_haspc(&c, pc) > 0) {
				hit = true;
				break;
			}
		} while (dwarf_siblingof(&c, &c) == 0);
		if (!hit)
			break;
		if (tag == DW_TAG_inlined_subroutine) {
			if (n == max) {
				memmove(chain, chain + 1, (size_t)(max - 1) * sizeof(*chain));
				n--;
			}
			chain[n++] = c;
		}
		cur = c;
	}
	return n;
}

/* Name of a subprogram or inlined instance: the demangled linkage name
 * (qualified, as py-spy shows C++), else DW_AT_name; both looked up
 * through DW_AT_abstract_origin/DW_AT_specification. */
static int die_name(struct sym_ctx *ctx, Dwarf_Die *die, const char **out)
{
	Dwarf_Attribute a;
	const char *s;

	*out = NULL;
	s = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &a));
	if (!s)
		s = dwarf_formstring(
			dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a));
	if (s)
		return demangle(ctx, s, true, out);
	*out = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &a));
	return 0;
}

/* @file made absolute against the CU's DW_AT_comp_dir (interned). libdw
 * already joins the line table's directories with comp_dir, so this only
 * matters for odd producers. A relative comp_dir (-fdebug-prefix-map, as
 * in Debian's glibc: "./csu") cannot make anything absolute: libdw's
 * path is kept as it is. */
static int abs_path(struct sym_ctx *ctx, Dwarf_Die *cu, const char *file,
		    const char **out)
{
	char buf[PATH_MAX];
	const char *dir, *v;
	Dwarf_Attribute a;
	char *s;
	int n;
	u64 h;

	*out = file;
	if (!file || file[0] == '/')
		return 0;
	dir = dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &a));
	if (!dir || dir[0] != '/')
		return 0;
	while (file[0] == '.' && file[1] == '/')
		file += 2;
	n = snprintf(buf, sizeof(buf), "%s/%s", dir, file);
	if (n < 0 || (size_t)n >= sizeof(buf))
		return 0;
	h = str_hash(buf);
	v = strmap_get(&ctx->paths, buf, h);
	if (!v) {
		if (!(s = arena_strdup(&ctx->arena, buf)) ||
		    strmap_put(&ctx->paths, s, h, s))
			return -ENOMEM;
		v = s;
	}
	*out = v;
	return 0;
}

static int line_of(u64 v)
{
	return v > INT_MAX ? 0 : (int)v;
}

/* File and line an inlined instance was called from (DW_AT_call_file is
 * an index into the CU's line-table file list, DWARF 5 §3.3.8.2). */
static int call_site(struct sym_ctx *ctx, Dwarf_Die *cu, Dwarf_Die *inl,
		     struct sym_frame *f)
{
	Dwarf_Attribute a;
	Dwarf_Files *files;
	Dwarf_Word v;
	size_t nf;

	f->file = NULL;
	f->line = 0;
	if (dwarf_formudata(dwarf_attr(inl, DW_AT_call_line, &a), &v) == 0)
		f->line = line_of(v);
	if (dwarf_formudata(dwarf_attr(inl, DW_AT_call_file, &a), &v) == 0 &&
	    dwarf_getsrcfiles(cu, &files, &nf) == 0 && v < nf)
		return abs_path(ctx, cu, dwarf_filesrc(files, v, NULL, NULL),
				&f->file);
	return 0;
}

/*
 * Frames for @pc from DWARF, innermost first: [0] is the deepest inlined
 * function at the pc's own line; each outer frame gets the call site of
 * the frame inside it; the last is the real function, named @outer (the
 * ELF symbol) when known. Returns 0 if the pc is in no CU or no function
 * is known.
 */
static int dwarf_frames(struct sym_ctx *ctx, struct sym_dso *d, u64 pc,
			const char *outer, struct sym_frame *fr)
{
	Dwarf_Die cu, chain[SYM_MAX_FRAMES - 1];
	struct die_range *fn;
	struct cu_fns *cf;
	Dwarf_Line *line;
	int nchain = 0, i, err;
	bool ok;

	if ((err = find_cu(d, pc, &cu, &ok)) || !ok)
		return err;
	if ((err = cu_fns_get(d, &cu, &cf)))
		return err;
	fn = range_find(cf->v, cf->n, pc);
	if (fn) {
		nchain = inline_chain(&fn->die, pc, chain, (int)ARRAY_SIZE(chain));
		if (!outer && (err = die_name(ctx, &fn->die, &outer)))
			return err;
	}
	memset(fr, 0, sizeof(*fr) * (size_t)(nchain + 1));
	line = dwarf_getsrc_die(&cu, pc);
	if (line) {
		if ((err = abs_path(ctx, &cu, dwarf_linesrc(line, NULL, NULL),
				    &fr[0].file)))
			return err;
		dwarf_lineno(line, &fr[0].line);
	}
	for (i = 0; i <= nchain; i++) {
		if (i == nchain)
			fr[i].func = outer;
		else if ((err = die_name(ctx, &chain[nchain - 1 - i], &fr[i].func)))
			return err;
		if (i && (err = call_site(ctx, &cu, &chain[nchain - i], &fr[i])))
			return err;
	}
	/* A line with no function (top-level asm inside a C CU) would
	 * name the wrong source: nothing is known then. */
	if (nchain == 0 && !outer)
		return 0;
	return nchain + 1;
}

/* ------------------------------------------------------------------ */
/* Resolution and the per-DSO cache                                   */

/* An ELF symbol's name as shown: without a symbol version suffix
 * (`memcpy@@GLIBC_2.14`, GNU ld's .symver names in .symtab), which would
 * also keep C++ names from demangling, and demangled. */
static int display_name(struct sym_ctx *ctx, const char *name,
			const char **out)
{
	const char *at = strchr(name, '@');

	if (at && at != name &&
	    !(name = arena_strndup(&ctx->arena, name, (size_t)(at - name))))
		return -ENOMEM;
	return demangle(ctx, name, true, out);
}

static int resolve_uncached(struct sym_ctx *ctx, struct sym_dso *d, u64 off,
			    bool is_return, struct sym_frame *fr)
{
	const char *name = NULL;
	struct sym_ent *s;
	u64 vaddr;
	int n, err;

	/* A return address: the call instruction is the byte before. */
	if (is_return && off)
		off--;
	if (!off_to_vaddr(d, off, &vaddr))
		return 0;
	s = sym_find(d, vaddr);
	if (s) {
		if (!s->dname && (err = display_name(ctx, s->name, &s->dname)))
			return err;
		name = s->dname;
	}
	if (dso_dwarf(d)) {
		n = dwarf_frames(ctx, d, vaddr, name, fr);
		if (n)
			return n;
	}
	if (!name)
		return 0;
	fr[0] = (struct sym_frame){ name, NULL, 0 };
	return 1;
}

static struct cache_ent *cache_slot(struct cache_ent *tab, size_t cap,
				    u64 off, bool ret)
{
	size_t mask = cap - 1, i = hash_mix(off * 2 + ret) & mask;

	while (tab[i].used && (tab[i].off != off || tab[i].ret != ret))
		i = (i + 1) & mask;
	return &tab[i];
}

static int cache_grow(struct sym_dso *d)
{
	size_t ncap = d->cache_cap ? d->cache_cap * 2 : 256, i;
	struct cache_ent *tab = calloc(ncap, sizeof(*tab));

	if (!tab)
		return -ENOMEM;
	for (i = 0; i < d->cache_cap; i++)
		if (d->cache[i].used)
			*cache_slot(tab, ncap, d->cache[i].off, d->cache[i].ret) =
				d->cache[i];
	free(d->cache);
	d->cache = tab;
	d->cache_cap = ncap;
	return 0;
}

static int cache_put(struct sym_ctx *ctx, struct sym_dso *d, u64 off,
		     bool ret, const struct sym_frame *fr, int n)
{
	struct cache_ent *e;
	struct sym_frame *copy = NULL;

	if ((d->cache_n + 1) * 2 > d->cache_cap && cache_grow(d))
		return -ENOMEM;
	if (n) {
		copy = arena_alloc(&ctx->arena, sizeof(*fr) * (size_t)n);
		if (!copy)
			return -ENOMEM;
		memcpy(copy, fr, sizeof(*fr) * (size_t)n);
	}
	e = cache_slot(d->cache, d->cache_cap, off, ret);
	*e = (struct cache_ent){ off, copy, (u32)n, 1, ret };
	d->cache_n++;
	return 0;
}

int sym_resolve(struct sym_ctx *ctx, struct sym_dso *dso, u64 file_off,
		bool is_return, struct sym_frame *frames)
{
	struct cache_ent *e;
	int n, err;

	ctx->stats.resolves++;
	if (!dso)
		return 0;
	if (dso->cache_cap) {
		e = cache_slot(dso->cache, dso->cache_cap, file_off, is_return);
		if (e->used) {
			if (e->n)
				memcpy(frames, e->frames, sizeof(*frames) * e->n);
			return (int)e->n;
		}
	}
	if (!dso->opened && (err = dso_open(ctx, dso)))
		return err;
	if (!dso->found)
		return 0;
	ctx->stats.cache_misses++;
	n = resolve_uncached(ctx, dso, file_off, is_return, frames);
	if (n < 0)
		return n;
	err = cache_put(ctx, dso, file_off, is_return, frames, n);
	return err ? err : n;
}

/* ------------------------------------------------------------------ */
/* Kernel symbols (kallsyms)                                          */

/* One `ADDR TYPE NAME [\t[module]]` line (kernel/kallsyms.c s_show);
 * only text symbols are kept. */
static int kern_line(struct sym_ctx *ctx, const char *line, size_t *cap)
{
	const char *name;
	char *end;
	size_t len;
	u64 addr;
	char type;

	addr = strtoull(line, &end, 16);
	if (end == line || end[0] != ' ' || !end[1] || end[2] != ' ')
		return 0;
	type = end[1];
	if (type != 't' && type != 'T' && type != 'w' && type != 'W')
		return 0;
	name = end + 3;
	len = strcspn(name, " \t\n");
	if (!len)
		return 0;
	if (ensure_mem((void **)&ctx->ksyms, cap, sizeof(*ctx->ksyms),
		       ctx->nksyms + 1))
		return -ENOMEM;
	ctx->ksyms[ctx->nksyms] = (struct kern_sym){
		addr, arena_strndup(&ctx->arena, name, len),
		type == 'T' ? STB_GLOBAL : type == 't' ? STB_LOCAL : STB_WEAK
	};
	if (!ctx->ksyms[ctx->nksyms].name)
		return -ENOMEM;
	ctx->nksyms++;
	if (addr)
		ctx->kern_real = true;
	if (len == 5 && !memcmp(name, "_text", 5)) {
		ctx->kern_text = addr;
		ctx->kern_have_text = true;
	}
	return 0;
}

static int ksym_cmp(const void *pa, const void *pb)
{
	const struct kern_sym *a = pa, *b = pb;

	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	return sym_rank_cmp(a->bind, false, a->name, b->bind, false, b->name);
}

static int kern_load(struct sym_ctx *ctx)
{
	size_t cap = 0, lcap = 0, i, n = 0;
	char *line = NULL;
	int err = 0;
	FILE *f;

	ctx->kern_loaded = true;
	if (!*ctx->kallsyms)
		return 0;
	f = fopen(ctx->kallsyms, "re");
	if (!f) {
		pr_debug(ctx->log, "perfspy: %s: %s", ctx->kallsyms,
			 strerror(errno));
		return 0;
	}
	while (!err && getline(&line, &lcap, f) > 0)
		err = kern_line(ctx, line, &cap);
	free(line);
	fclose(f);
	if (err) {
		free(ctx->ksyms);
		ctx->ksyms = NULL;
		ctx->nksyms = 0;
		return err;
	}
	qsort(ctx->ksyms, ctx->nksyms, sizeof(*ctx->ksyms), ksym_cmp);
	for (i = 0; i < ctx->nksyms; i++)
		if (!n || ctx->ksyms[n - 1].addr != ctx->ksyms[i].addr)
			ctx->ksyms[n++] = ctx->ksyms[i];
	ctx->nksyms = n;
	return 0;
}

bool sym_kernel_usable(struct sym_ctx *ctx, u64 text_addr)
{
	if (!ctx->kern_loaded && kern_load(ctx))
		return false;
	/* kptr_restrict shows every address as 0. */
	if (!ctx->nksyms || !ctx->kern_real)
		return false;
	if (text_addr && (!ctx->kern_have_text || ctx->kern_text != text_addr)) {
		pr_debug(ctx->log,
			 "perfspy: %s: _text differs from the recorded kernel map",
			 ctx->kallsyms);
		return false;
	}
	return true;
}

int sym_kernel_resolve(struct sym_ctx *ctx, u64 addr, struct sym_frame *frame)
{
	size_t lo = 0, hi, mid;
	u64 end;
	int err;

	if (!ctx->kern_loaded && (err = kern_load(ctx)))
		return err;
	if (!ctx->kern_real)
		return 0;
	hi = ctx->nksyms;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (ctx->ksyms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return 0;
	/* A symbol ends where the next starts; the last one gets a page
	 * past its start's page, as perf's symbols__fixup_end does. */
	if (lo < ctx->nksyms)
		end = ctx->ksyms[lo].addr;
	else
		end = (ctx->ksyms[lo - 1].addr | 4095) + 1 + 4096;
	if (addr >= end)
		return 0;
	*frame = (struct sym_frame){ ctx->ksyms[lo - 1].name, NULL, 0 };
	return 1;
}
