// SPDX-License-Identifier: GPL-2.0
/*
 * Symbolizer: (DSO, file offset) -> function, source file, line and the
 * chain of inlined calls; kernel addresses -> kallsyms names; C++ names
 * demangled in py-spy's style (no parameters, no return type).
 *
 * This file holds the context, the DSO table, PT_LOAD segments, ELF symbol
 * tables, the per-DSO resolution cache and the public entry points of
 * symbols.h. The other pieces, sharing symbols_int.h: dso_locate.c (which
 * file a DSO is read from), demangle.c (C++ names), dwarf_lines.c (DWARF
 * CUs, inline chains and lines) and kallsyms.c (kernel symbols).
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
 * - Results are cached per (DSO, file offset, is_return): memory grows
 *   with unique addresses, DSOs and touched CUs, never with sample count.
 * - No output, no exit, no external programs (no addr2line); every
 *   allocation failure returns -ENOMEM. Problems with one binary cost that
 *   binary's frames only (STYLE.md §1).
 */
#include "symbols_int.h"

#include <elfutils/libdw.h>
#include <errno.h>
#include <gelf.h>
#include <stdlib.h>

/* ------------------------------------------------------------------ */
/* String maps: open addressing, keys and values owned by someone else */

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

const char *sym_strmap_get(const struct strmap *m, const char *key, u64 h)
{
	const struct strmap_ent *e;

	if (!m->cap)
		return NULL;
	e = strmap_slot(m, key, h);
	return e->key ? e->val : NULL;
}

int sym_strmap_put(struct strmap *m, const char *key, u64 h, const char *val)
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

u64 sym_str_hash(const char *s)
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

struct cache_ent {
	u64 off;
	struct sym_frame *frames; /* in the ctx arena */
	u32 n;
	u8 used, ret;
};

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
	ctx->no_debuginfod = opts && opts->no_debuginfod;
	ctx->kallsyms = "/proc/kallsyms";
	ctx->kallsyms_default = !opts || !opts->kallsyms;
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
	sym_debuginfod_end(ctx);
	free(ctx->dso_list);
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
bool sym_bid_equal(const u8 *a, size_t na, const u8 *b, size_t nb)
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
	u64 h = sym_str_hash(filename);
	struct sym_dso *d;

	if (!build_id || !bid_trim(build_id, n))
		n = 0;
	/* Chained by file name; (name, build id) identifies a DSO. */
	if (ctx->dso_cap)
		for (d = ctx->dso_tab[h & (ctx->dso_cap - 1)]; d; d = d->next)
			if (d->hash == h && !strcmp(d->name, filename) &&
			    (n ? d->bid_size &&
				     sym_bid_equal(d->bid, d->bid_size, build_id, n) :
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
/* Segments: file offsets to ELF addresses                            */

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
int sym_rank_cmp(u8 ba, bool sa, const char *na, u8 bb, bool sb,
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
	xqsort(dso->syms, dso->nsyms, sizeof(*dso->syms), sym_cmp);
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
	sym_dso_locate(ctx, dso);
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
	return sym_demangle_name(ctx, name, true, out);
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
		n = sym_dwarf_frames(ctx, d, vaddr, name, fr);
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
