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
 *   docs/perf-data-format.md §3).
 * - Results are cached per (DSO, file offset, is_return): memory grows
 *   with unique addresses, DSOs and touched CUs, never with sample count.
 * - No output, no exit, no external programs (no addr2line); every
 *   allocation failure returns -ENOMEM. Problems with one binary cost that
 *   binary's frames only (docs/conventions.md §1).
 */
#include "symbols_int.h"

#include <elfutils/libdw.h>
#include <errno.h>
#include <gelf.h>
#include <libdeflate.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

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

/* Entry of sym_dso.cache. */
struct cache_ent {
	u64 hash;
	u64 off;
	struct sym_frame *frames; /* in the ctx arena */
	u32 n;
	bool ret;
};

/* Entry of sym_ctx.dsos, one per DSO. The hash is the file name's: the
 * build-id variants of one name share it and equality tells them apart. */
struct dso_ent {
	u64 hash;
	struct sym_dso *d;
};

/* ------------------------------------------------------------------ */
/* Context and DSO table                                              */

struct sym_dso *sym_dso_next(const struct sym_ctx *ctx, size_t *pos)
{
	struct dso_ent *e = htab_next(&ctx->dsos, pos);

	return e ? e->d : NULL;
}

/* ------------------------------------------------------------------ */
/* DSOs opened ahead: the converting thread's side (dso_ahead.c has the
 * thread's; docs/design.md §6.14)                                    */

/* Wait until the thread is off @d; its state then. A queued DSO
 * becomes the caller's. Only a busy one needs the thread (d->ahead_by),
 * and a DSO is busy only while its thread runs. */
static int settle(struct sym_ctx *ctx, struct sym_dso *d)
{
	struct sym_ahead *a = d->ahead_by;
	int s = AHEAD_QUEUED;

	if (__atomic_compare_exchange_n(&d->ahead, &s, AHEAD_MINE, false,
					__ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE))
		return AHEAD_MINE;
	if (s == AHEAD_BUSY) {
		/* Work the session will do anyway, instead of idling
		 * (docs/design.md §6.27): the first names wait for libc's
		 * DWARF while nothing else can move. */
		if (ctx) {
			a->help(a);
			if (ctx->while_waiting)
				ctx->while_waiting(ctx);
		}
		pthread_mutex_lock(&a->mu);
		while ((s = __atomic_load_n(&d->ahead, __ATOMIC_ACQUIRE)) == AHEAD_BUSY)
			pthread_cond_wait(&a->cv, &a->mu);
		pthread_mutex_unlock(&a->mu);
	}
	return s;
}

static bool ahead_settle(struct sym_dso *dso)
{
	int s;

	if (__atomic_load_n(&dso->ahead, __ATOMIC_ACQUIRE) == AHEAD_NONE)
		return false;
	s = settle(NULL, dso);
	return s == AHEAD_DONE || s == AHEAD_PARTIAL;
}

static void say_notes(struct sym_ctx *ctx, struct sym_dso *d)
{
	size_t i;

	for (i = 0; i < d->nnotes; i++) {
		log_msg(ctx->log, d->notes[i].level, "%s", d->notes[i].text);
		free(d->notes[i].text);
	}
	free(d->notes);
	d->notes = NULL;
	d->nnotes = d->cap_notes = 0;
}

/* The counters sym_dso_locate_local() and sym_dso_load() move: all
 * the open adds (the rest count lookups, on the converting thread). */
static void add_stats(struct sym_stats *to, const struct sym_stats *s)
{
	to->dsos_found += s->dsos_found;
	to->dsos_missing += s->dsos_missing;
	to->build_id_mismatch += s->build_id_mismatch;
}

static int ahead_take(struct sym_ctx *ctx, struct sym_dso *dso, int *err)
{
	int s;

	*err = 0;
	if (__atomic_load_n(&dso->ahead, __ATOMIC_ACQUIRE) == AHEAD_NONE)
		return 0;
	s = settle(ctx, dso);
	if (s == AHEAD_MINE)
		return 0;
	/* Said and counted where the converting thread's own open would
	 * have: sym_dso_locate(), then sym_dso_load(). */
	say_notes(ctx, dso);
	add_stats(&ctx->stats, &dso->ahead_stats);
	ctx->stats.dsos_ahead++;
	ctx->stats.dsos_helped += dso->ahead_helped;
	dso->opened = true;
	__atomic_store_n(&dso->ahead, AHEAD_MINE, __ATOMIC_RELAXED);
	if (s == AHEAD_PARTIAL) {
		sym_debuginfod_locate(ctx, dso);
		sym_dso_locate_end(dso);
		*err = sym_dso_load(ctx, dso);
	} else {
		*err = dso->ahead_err;
	}
	return 1;
}

void sym_ahead_drain(struct sym_ctx *ctx)
{
	struct sym_ahead *a = ctx->ahead;

	if (a && a->n && !a->joined) {
		pthread_join(a->th, NULL);
		a->joined = true;
	}
	if (a && a->helping) {
		pthread_join(a->helper, NULL);
		a->helping = false;
	}
}

void sym_ahead_stop(struct sym_ctx *ctx)
{
	struct sym_ahead *a = ctx->ahead;

	if (!a)
		return;
	__atomic_store_n(&a->stop, true, __ATOMIC_RELAXED);
	sym_ahead_drain(ctx);
	pthread_mutex_destroy(&a->mu);
	pthread_cond_destroy(&a->cv);
	free(a->q);
	free(a->order);
	free(a);
	ctx->ahead = NULL;
}

static void ahead_free_dso(struct sym_dso *dso)
{
	size_t i;

	for (i = 0; i < dso->nnotes; i++)
		free(dso->notes[i].text);
	free(dso->notes);
}

int sym_ctx_new(const struct sym_opts *opts, struct sym_ctx **out)
{
	struct sym_ctx *ctx = calloc(1, sizeof(*ctx));
	const char *home = getenv("HOME");
	bool nomem = false;

	*out = NULL;
	if (!ctx)
		return -ENOMEM;
	arena_init(&ctx->arena);
	htab_init(&ctx->dsos, sizeof(struct dso_ent), 64);
	strset_init(&ctx->paths);
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
	struct cu_fns *cf;
	size_t pos = 0;

	while ((cf = htab_next(&d->cufns, &pos)))
		free(cf->v);
	htab_free(&d->cufns);
	free(d->cus);
	htab_free(&d->cache);
	free(d->syms);
	free(d->segs);
	idmap_free(&d->fde_ends);
	idmap_free(&d->fde_names);
	if (d->eh_cfi)
		dwarf_cfi_end(d->eh_cfi);
	if (d->dw)
		dwarf_end(d->dw);
	if (d->dbg)
		elf_end(d->dbg);
	if (d->elf)
		elf_end(d->elf);
	/* After elf_end(): libelf leaves data buffers to their owner. */
	while (d->nzbufs) {
		struct zbuf *z = &d->zbufs[--d->nzbufs];

		big_free(z->p, z->n, z->mapped);
	}
	free(d->zbufs);
	free(d->mem_image);
	ahead_free_dso(d);
	free(d);
}

void sym_ctx_free(struct sym_ctx *ctx)
{
	struct dso_ent *e;
	size_t pos = 0;

	if (!ctx)
		return;
	sym_ahead_stop(ctx); /* before its DSOs go */
	while ((e = htab_next(&ctx->dsos, &pos)))
		dso_free(e->d);
	htab_free(&ctx->dsos);
	htab_free(&ctx->demangled);
	strset_free(&ctx->paths);
	free(ctx->ksyms);
	idmap_free(&ctx->kern_names);
	if (ctx->kern_lazy)
		close(ctx->kern_fd);
	sym_debuginfod_end(ctx);
	free(ctx->dso_list);
	arena_free(&ctx->arena);
	free(ctx);
}

void sym_ctx_stats(const struct sym_ctx *ctx, struct sym_stats *out)
{
	*out = ctx->stats;
}

struct dso_key {
	const char *name;
	const u8 *bid;
	size_t bid_size; /* 0: unknown */
};

/* (name, build id) identifies a DSO. */
static bool dso_eq(const void *ent, const void *key)
{
	const struct sym_dso *d = ((const struct dso_ent *)ent)->d;
	const struct dso_key *k = key;

	return !strcmp(d->name, k->name) &&
	       (k->bid_size ? d->bid_size &&
				      sym_bid_equal(d->bid, d->bid_size, k->bid, k->bid_size) :
			      !d->bid_size);
}

int sym_dso_get(struct sym_ctx *ctx, const char *filename,
		const u8 *build_id, size_t build_id_size,
		struct sym_dso **out)
{
	return sym_dso_make(ctx, filename, build_id, build_id_size, true, out);
}

int sym_dso_make(struct sym_ctx *ctx, const char *filename, const u8 *build_id,
		 size_t build_id_size, bool seen, struct sym_dso **out)
{
	size_t n = build_id_size < BUILD_ID_MAX ? build_id_size : BUILD_ID_MAX;
	u64 h = hash_bytes(filename, strlen(filename), 0);
	struct dso_key key;
	struct dso_ent *e;
	struct sym_dso *d;

	if (!build_id || !sym_bid_trim(build_id, n))
		n = 0;
	key = (struct dso_key){ filename, build_id, n };
	if (htab_reserve(&ctx->dsos))
		return -ENOMEM;
	e = htab_probe(&ctx->dsos, h, dso_eq, &key);
	if (htab_used(e)) {
		d = e->d;
		if (seen && d->unseen) {
			d->unseen = false;
			ctx->stats.dsos++;
		}
		*out = d;
		return 0;
	}
	d = calloc(1, sizeof(*d));
	if (!d || !(d->name = arena_strdup(&ctx->arena, filename))) {
		free(d);
		return -ENOMEM;
	}
	/* Lookups per (offset, is_return); 256 slots first. */
	htab_init(&d->cache, sizeof(struct cache_ent), 256);
	if (n)
		memcpy(d->bid, build_id, n);
	d->bid_size = n;
	e->d = d;
	htab_claim(&ctx->dsos, e, h);
	d->unseen = !seen;
	ctx->stats.dsos += seen;
	*out = d;
	return 0;
}

void sym_dso_set_build_id(struct sym_dso *dso, const u8 *build_id,
			  size_t size)
{
	size_t n = size < BUILD_ID_MAX ? size : BUILD_ID_MAX;

	/* Opened ahead (dso_ahead.c) counts as opened. */
	if (ahead_settle(dso) || dso->opened)
		return;
	if (!build_id || !sym_bid_trim(build_id, n))
		n = 0;
	if (n)
		memcpy(dso->bid, build_id, n);
	dso->bid_size = n;
}

int sym_dso_set_root(struct sym_ctx *ctx, struct sym_dso *dso, const char *root)
{
	/* Opened ahead (dso_ahead.c) counts as opened. */
	if (ahead_settle(dso) || dso->opened || dso->root || !root)
		return 0;
	dso->root = arena_strdup(&ctx->arena, root);
	return dso->root ? 0 : -ENOMEM;
}

int sym_dso_set_mapped(struct sym_ctx *ctx, struct sym_dso *dso, const char *path)
{
	if (ahead_settle(dso) || dso->opened || dso->mapped || !path)
		return 0;
	dso->mapped = arena_strdup(&ctx->arena, path);
	return dso->mapped ? 0 : -ENOMEM;
}

void sym_dso_set_no_dwarf(struct sym_dso *dso, bool no_dwarf)
{
	if (dso->no_dwarf == no_dwarf)
		return;
	ahead_settle(dso);
	dso->no_dwarf = no_dwarf;
	/* Cached frames were made under the other setting. */
	htab_free(&dso->cache);
}

const char *sym_dso_name(const struct sym_dso *dso)
{
	return dso->name;
}

int sym_dso_twin(struct sym_ctx *ctx, const struct sym_dso *dso, struct sym_dso **out)
{
	int err = sym_dso_get(ctx, dso->name, dso->bid_size ? dso->bid : NULL,
			      dso->bid_size, out);

	if (!err)
		sym_dso_set_no_dwarf(*out, dso->no_dwarf);
	if (!err)
		err = sym_dso_set_root(ctx, *out, dso->root);
	if (!err)
		err = sym_dso_set_mapped(ctx, *out, dso->mapped);
	return err;
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

static bool vaddr_to_off(const struct sym_dso *dso, u64 vaddr, u64 *off)
{
	size_t i;

	if (!dso->nsegs || dso->seg_guess)
		return false; /* no real file offsets to give */
	for (i = 0; i < dso->nsegs; i++) {
		const struct seg *s = &dso->segs[i];

		if (vaddr >= s->vaddr && vaddr - s->vaddr < s->filesz) {
			*off = vaddr - s->vaddr + s->off;
			return true;
		}
	}
	return false;
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

/*
 * The string table of a symbol table, when its bytes can be read in
 * place: an uncompressed SHT_STRTAB whose data is the whole section and
 * ends in a NUL, so that every offset below its size starts a string
 * that ends inside it (what elf_strptr() checks on each call). NULL
 * otherwise, and the caller asks elf_strptr().
 */
static const char *plain_strtab(Elf *elf, size_t ndx, size_t *size)
{
	Elf_Scn *scn = elf_getscn(elf, ndx);
	Elf_Data *d;
	GElf_Shdr sh;

	if (!scn || !gelf_getshdr(scn, &sh) || sh.sh_type != SHT_STRTAB ||
	    (sh.sh_flags & SHF_COMPRESSED) || !(d = elf_getdata(scn, NULL)) ||
	    !d->d_buf || !d->d_size || d->d_size != sh.sh_size ||
	    ((const char *)d->d_buf)[d->d_size - 1])
		return NULL;
	*size = d->d_size;
	return d->d_buf;
}

static int add_symtab(struct sym_dso *dso, size_t *cap, Elf *elf,
		      Elf_Scn *scn, const GElf_Shdr *sh,
		      const struct scn_info *si, size_t nscn)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t cnt = sh->sh_size / sh->sh_entsize, i, strsz = 0;
	const Elf64_Sym *raw = NULL;
	const char *strs, *name;
	GElf_Sym s;
	int type, err;

	if (!data)
		return 0;
	/* A 64-bit file's symbols as libelf hands them over (in the host's
	 * byte order, ELF_T_SYM), read in place instead of copied out one
	 * by one: a system-wide profile opens symbol tables of 10^5
	 * symbols (cc1, libLLVM; issue 16). */
	if (gelf_getclass(elf) == ELFCLASS64 && data->d_type == ELF_T_SYM && data->d_buf &&
	    data->d_size / sizeof(Elf64_Sym) >= cnt)
		raw = data->d_buf;
	strs = plain_strtab(elf, sh->sh_link, &strsz);
	for (i = 1; i < cnt; i++) {
		if (raw) {
			s.st_name = raw[i].st_name;
			s.st_info = raw[i].st_info;
			s.st_other = raw[i].st_other;
			s.st_shndx = raw[i].st_shndx;
			s.st_value = raw[i].st_value;
			s.st_size = raw[i].st_size;
		} else if (!gelf_getsym(data, (int)i, &s)) {
			continue;
		}
		if (s.st_shndx == SHN_UNDEF || s.st_shndx >= SHN_LORESERVE || s.st_shndx >= nscn)
			continue;
		type = GELF_ST_TYPE(s.st_info);
		/* Functions, and untyped labels in code (hand-written asm). */
		if (type != STT_FUNC && type != STT_GNU_IFUNC &&
		    !(type == STT_NOTYPE && si[s.st_shndx].exec))
			continue;
		if (strs)
			name = s.st_name < strsz ? strs + s.st_name : NULL;
		else
			name = elf_strptr(elf, sh->sh_link, s.st_name);
		err = add_sym(dso, cap, &s, name, &si[s.st_shndx]);
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
	size_t cap = 0, i, n = 0, *order;
	struct sym_ent *best;
	int err = 0;

	if (dso->elf)
		err = add_elf_syms(dso, &cap, dso->elf);
	if (!err && dso->dbg)
		err = add_elf_syms(dso, &cap, dso->dbg);
	if (err || !dso->nsyms)
		return err;
	/* Sorted by address, keeping the best symbol of each: copied once
	 * in that order into a new array, rather than sorted in place (a
	 * gather and a copy back) and then compacted (issue 16: 35,000
	 * symbols of 40 bytes for libLLVM). Without memory for that, in
	 * place. */
	order = xsort_u64key_order(dso->syms, dso->nsyms, sizeof(*dso->syms),
				   offsetof(struct sym_ent, addr), sym_cmp);
	best = order ? xreallocarray(NULL, dso->nsyms, sizeof(*best)) : NULL;
	if (best) {
		for (i = 0; i < dso->nsyms; i++) {
			const struct sym_ent *e = &dso->syms[order[i]];

			if (!n || best[n - 1].addr != e->addr)
				best[n++] = *e;
		}
		free(dso->syms);
		dso->syms = best;
	} else {
		xsort_u64key(dso->syms, dso->nsyms, sizeof(*dso->syms),
			     offsetof(struct sym_ent, addr), sym_cmp);
		for (i = 0; i < dso->nsyms; i++) /* keep the best per address */
			if (!n || dso->syms[n - 1].addr != dso->syms[i].addr)
				dso->syms[n++] = dso->syms[i];
	}
	free(order);
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
	dso->opened = true;
	sym_dso_locate(ctx, dso);
	return sym_dso_load(ctx, dso);
}

/* The gate of every use of a DSO that may not be open yet: opened by
 * dso_ahead.c's thread, or here. */
static int dso_ready(struct sym_ctx *ctx, struct sym_dso *dso)
{
	int err;

	if (dso->opened)
		return 0;
	if (ahead_take(ctx, dso, &err))
		return err;
	return dso_open(ctx, dso);
}

int sym_dso_load(struct sym_ctx *ctx, struct sym_dso *dso)
{
	int err;

	if (!dso->elf && !dso->dbg) {
		ctx->stats.dsos_missing++;
		pr_debug(ctx->log, "%s: no usable file", dso->name);
		return 0;
	}
	dso->found = true;
	ctx->stats.dsos_found++;
	err = load_segments(dso);
	return err ? err : load_symbols(dso);
}

/*
 * DWARF sections libdw knows but the symbolizer never reads: location
 * lists (variables), macros and the pubnames index; with "z" for GNU
 * .zdebug_ names. dwarf_begin_elf() decompresses every section it knows
 * at open (check_section, libdw/dwarf_begin_elf.c in 0.188), and libc's
 * .debug_loclists alone is 1.4 MB of inflate (docs/design.md §6.3).
 */
static bool unused_dwarf_scn(const char *name)
{
	static const char *const unused[] = { "loc", "loclists", "macro",
					      "macinfo", "pubnames" };
	size_t i;

	if (!strncmp(name, ".debug_", 7))
		name += 7;
	else if (!strncmp(name, ".zdebug_", 8))
		name += 8;
	else
		return false;
	for (i = 0; i < ARRAY_SIZE(unused); i++)
		if (!strcmp(name, unused[i]))
			return true;
	return false;
}

/*
 * Make libdw skip the sections of unused_dwarf_scn() by turning them
 * into SHT_NOBITS, which check_section ignores. Only libelf's copy of
 * the section headers changes: for ELF_C_READ_MMAP it keeps one of its
 * own (elf_begin.c: "We need a copy to be able to write"), elf_memory()
 * images are ours, and nothing ever writes the Elf back. Nothing else
 * reads these sections (symbols: .symtab/.dynsym; CFI: .eh_frame and
 * .debug_frame).
 */
static void hide_unused_dwarf(Elf *elf)
{
	Elf_Scn *scn = NULL;
	const char *name;
	size_t shstr;
	GElf_Shdr sh;

	if (elf_getshdrstrndx(elf, &shstr))
		return;
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS ||
		    !(name = elf_strptr(elf, shstr, sh.sh_name)) ||
		    !unused_dwarf_scn(name))
			continue;
		sh.sh_type = SHT_NOBITS;
		gelf_update_shdr(scn, &sh); /* on failure libdw reads it */
	}
}

/* The DWARF sections libdw takes and the symbolizer reads (all of
 * libdw 0.188's list but those of unused_dwarf_scn()). */
static bool used_dwarf_scn(const char *name)
{
	static const char *const used[] = {
		"info", "types", "abbrev", "addr", "aranges", "line",
		"line_str", "frame", "str", "str_offsets", "ranges", "rnglists"
	};
	size_t i;

	if (strncmp(name, ".debug_", 7))
		return false;
	for (i = 0; i < ARRAY_SIZE(used); i++)
		if (!strcmp(name + 7, used[i]))
			return true;
	return false;
}

/*
 * After inflate_scn() the compressed bytes of a section are never read
 * again, yet the pages inflate read stay in our page tables as long as
 * libelf keeps the file mapped (the whole DSO session): about 3.5 MB of
 * peak RSS for libc's debug file (issue 16, "never above perf report").
 * Drop the whole pages inside [@p, @p + @n). Only where that memory is
 * libelf's read-only private mapping of the file (elf_begin with
 * ELF_C_READ_MMAP, dso_locate.c): there MADV_DONTNEED only unmaps page
 * cache pages, and a later read maps them again. libelf falls back to a
 * malloc()ed copy when mmap fails, and an elf_memory() image is ours, so
 * the image must be a read-only private file mapping from its start to
 * past its end, as /proc/self/maps lists it (proc(5): a non-zero inode
 * is a file; /proc/self/map_files would say it in one call, but only to
 * root). Anything else, or no /proc: keep the pages.
 */
static bool is_file_map(uintptr_t base, uintptr_t end)
{
	FILE *f = fopen("/proc/self/maps", "re");
	unsigned long s, e, ino;
	char *line = NULL, perm[8];
	size_t cap = 0;
	bool ok = false;

	if (!f)
		return false;
	/* getline(): a line is read whole, however long its path. */
	while (getline(&line, &cap, f) > 0)
		if (sscanf(line, "%lx-%lx %7s %*s %*s %lu", &s, &e, perm, &ino) == 4 &&
		    s == base) {
			ok = e >= end && ino && perm[0] == 'r' && perm[1] == '-' &&
			     perm[3] == 'p';
			break;
		}
	free(line);
	fclose(f);
	return ok;
}

/* Whether @elf's image is that file mapping (is_file_map). */
static bool elf_file_mapped(Elf *elf)
{
	long pg = sysconf(_SC_PAGESIZE);
	size_t size;
	char *img = elf_rawfile(elf, &size);
	uintptr_t base = (uintptr_t)img;

	return img && pg > 0 && !(base & ((uintptr_t)pg - 1)) &&
	       is_file_map(base, base + size);
}

/* @mapped: elf_file_mapped(@elf), asked on the first call of a file's
 * sections (-1 until then): the answer is the same for all of them. */
static void drop_compressed(Elf *elf, int *mapped, const void *p, size_t n)
{
	long pg = sysconf(_SC_PAGESIZE);
	uintptr_t lo, hi;
	size_t size;
	char *img;

	if (*mapped < 0)
		*mapped = elf_file_mapped(elf);
	img = elf_rawfile(elf, &size);
	if (!*mapped || !img || pg <= 0 || (uintptr_t)p < (uintptr_t)img ||
	    (const char *)p + n > img + size)
		return;
	lo = ((uintptr_t)p + (uintptr_t)pg - 1) & ~((uintptr_t)pg - 1);
	hi = ((uintptr_t)p + n) & ~((uintptr_t)pg - 1);
	if (hi > lo)
		madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

/* One section of scn_to_inflate() on its way into a file's buffer. */
struct zsec {
	Elf_Scn *scn;
	GElf_Shdr sh;
	GElf_Chdr ch;
	Elf_Data *data;
	const void *in; /* the deflate stream, past the compression header */
	size_t in_len;
	size_t at;      /* where in the file's buffer */
	u8 *out;        /* ch.ch_size bytes there */
	bool ok;        /* inflated to exactly ch.ch_size bytes */
};

/*
 * Whether prepare_dwarf() inflates @scn: a used DWARF section (not in a
 * group), SHF_COMPRESSED with zlib (gABI "Compression Headers"), whose
 * sizes make sense. If so, @zs gets the section, its headers, its data
 * and its deflate stream.
 */
static bool scn_to_inflate(Elf *elf, size_t shstr, Elf_Scn *scn, struct zsec *zs)
{
	size_t hdr = gelf_getclass(elf) == ELFCLASS32 ? sizeof(Elf32_Chdr) :
		sizeof(Elf64_Chdr);
	const char *name;
	Elf_Data *data;

	if (!gelf_getshdr(scn, &zs->sh) || zs->sh.sh_type == SHT_NOBITS ||
	    !(zs->sh.sh_flags & SHF_COMPRESSED) || (zs->sh.sh_flags & SHF_GROUP) ||
	    !(name = elf_strptr(elf, shstr, zs->sh.sh_name)) || !used_dwarf_scn(name) ||
	    !gelf_getchdr(scn, &zs->ch) || zs->ch.ch_type != ELFCOMPRESS_ZLIB ||
	    !(data = elf_getdata(scn, NULL)) || !data->d_buf || data->d_size <= hdr ||
	    !zs->ch.ch_size ||
	    /* deflate expands at most 1032:1 (zlib's "Compression ratio") */
	    zs->ch.ch_size / 1032 > data->d_size || zs->ch.ch_size > SIZE_MAX / 4)
		return false;
	zs->scn = scn;
	zs->data = data;
	zs->in = (const char *)data->d_buf + hdr;
	zs->in_len = data->d_size - hdr;
	return true;
}

/* Inflate @zs with libdeflate, about twice as fast as libelf's zlib
 * inflate. Reads the stream and writes zs->out only: no libelf call, so
 * two sections can be inflated on two threads. @z NULL: a decompressor
 * of its own. */
static void zsec_inflate(struct zsec *zs, struct libdeflate_decompressor *z)
{
	struct libdeflate_decompressor *own = z ? NULL : libdeflate_alloc_decompressor();
	size_t got = 0;

	zs->ok = (z || own) &&
		 libdeflate_zlib_decompress(z ? z : own, zs->in, zs->in_len, zs->out,
					    zs->ch.ch_size, &got) == LIBDEFLATE_SUCCESS &&
		 got == zs->ch.ch_size;
	if (own)
		libdeflate_free_decompressor(own);
}

static void *zsec_thread(void *arg)
{
	zsec_inflate(arg, NULL);
	return NULL;
}

/*
 * Hand an inflated section to libdw as an uncompressed one: the
 * section's Elf_Data points at our buffer (libelf leaves d_buf to its
 * owner and elf_end() never frees it) and its header loses
 * SHF_COMPRESSED, so check_section (libdw/dwarf_begin_elf.c) takes the
 * data as it is. A section that did not inflate, or whose header cannot
 * be updated, stays as it was for libelf, which then does what it always
 * did: the same bytes either way. Returns whether zs->out is now the
 * section's.
 */
static bool zsec_install(Elf *elf, struct zsec *zs, int *mapped)
{
	if (!zs->ok)
		return false;
	zs->sh.sh_flags &= ~(GElf_Xword)SHF_COMPRESSED;
	zs->sh.sh_size = zs->ch.ch_size;
	zs->sh.sh_addralign = zs->ch.ch_addralign;
	if (!gelf_update_shdr(zs->scn, &zs->sh))
		return false;
	drop_compressed(elf, mapped, zs->data->d_buf, zs->data->d_size);
	zs->data->d_buf = zs->out;
	zs->data->d_size = zs->ch.ch_size;
	zs->data->d_type = ELF_T_BYTE;
	zs->data->d_align = zs->ch.ch_addralign;
	return true;
}

/* Where each inflated section starts in a file's buffer: a multiple of
 * this, as malloc() aligned each one when they had one each. */
#define ZSLICE_ALIGN 16
/* The sections taken from one file: more than used_dwarf_scn() names,
 * for a file with two of one name; any further ones stay for libelf. */
#define ZSECS_MAX 24
/* The largest section is inflated on a thread of its own while this one
 * inflates the rest, when both parts are at least this big (about 1 ms
 * of inflate, against some 50 us to start a thread): libc's debug file
 * is 5.8 MB of .debug_info and 2.8 MB of the rest, 20 ms of inflate in
 * all here (docs/design.md §6.9). test_symbols.c's split test builds a
 * file past it. */
#define ZSPLIT_MIN ((size_t)256 << 10)

/*
 * The buffer for @total bytes of inflated sections: rounded up to a whole
 * huge page where what would lie on 4 KB pages (all of it, or the
 * stretch past the last whole huge page) is a quarter of one or more.
 * Inflating writes all of it at once, and here a first touch of a 4 KB
 * page costs about 11 us against 0.15 ms for a 2 MB huge page (§6.33):
 * libc's debug file inflates to 8.6 MB, whose last 0.6 MB were 150 first
 * touches.
 */
static size_t zbuf_size(size_t total)
{
	size_t hp = thp_madvise_size(), tail;

	if (!hp || total > SIZE_MAX - hp)
		return total;
	tail = total & (hp - 1);
	return tail >= hp / 4 ? total - tail + hp : total;
}

/*
 * Make @elf ready for dwarf_begin_elf(): hide what the symbolizer never
 * reads (unused_dwarf_scn) and inflate the compressed sections it does
 * read ourselves. All of a file's sections go into one buffer from
 * big_zalloc(): libc's debug file inflates to 8.6 MB in seven sections,
 * and one buffer puts four of those MB on huge pages where one buffer a
 * section put two, the rest faulted in 4 KB at a time (docs/design.md
 * §6.9). Only files in the host's byte order: libelf's Elf_Data of a
 * foreign compressed section is converted, and libdw keeps those as
 * they were.
 */
static void prepare_dwarf(struct sym_dso *d, Elf *elf)
{
	static const union { u16 v; u8 b[2]; } host = { 1 };
	struct libdeflate_decompressor *z;
	const char *ident = elf_getident(elf, NULL);
	struct zsec zs[ZSECS_MAX], *big_one = NULL;
	Elf_Scn *scn = NULL;
	size_t shstr, total = 0, alloc, off = 0, n = 0, i;
	int mapped = -1; /* drop_compressed() */
	bool big, used = false, split = false;
	pthread_t th;
	u8 *buf;

	hide_unused_dwarf(elf);
	if (!ident || ident[EI_DATA] != (host.b[0] ? ELFDATA2LSB : ELFDATA2MSB) ||
	    elf_getshdrstrndx(elf, &shstr))
		return;
	/* Each size is at most SIZE_MAX / 4 (scn_to_inflate) and there are
	 * at most ZSECS_MAX of them: stop short of overflow all the same. */
	while (n < ZSECS_MAX && (scn = elf_nextscn(elf, scn))) {
		struct zsec *e = &zs[n];

		if (!scn_to_inflate(elf, shstr, scn, e))
			continue;
		if (total > SIZE_MAX / 2 - e->ch.ch_size - ZSLICE_ALIGN)
			return;
		off = (total + ZSLICE_ALIGN - 1) & ~(size_t)(ZSLICE_ALIGN - 1);
		total = off + e->ch.ch_size;
		e->at = off;
		if (!big_one || e->ch.ch_size > big_one->ch.ch_size)
			big_one = e;
		n++;
	}
	if (!n ||
	    ensure_mem((void **)&d->zbufs, &d->zcap, sizeof(*d->zbufs), d->nzbufs + 1) ||
	    !(z = libdeflate_alloc_decompressor()))
		return;
	alloc = zbuf_size(total);
	if (!(buf = big_zalloc(alloc, &big))) {
		libdeflate_free_decompressor(z);
		return;
	}
	for (i = 0; i < n; i++)
		zs[i].out = buf + zs[i].at;
	/* Without a thread (none to be had) the main one inflates it too. */
	if (big_one->ch.ch_size >= ZSPLIT_MIN && total - big_one->ch.ch_size >= ZSPLIT_MIN)
		split = !pthread_create(&th, NULL, zsec_thread, big_one);
	for (i = 0; i < n; i++)
		if (!split || &zs[i] != big_one)
			zsec_inflate(&zs[i], z);
	if (split)
		pthread_join(th, NULL);
	libdeflate_free_decompressor(z);
	/* libelf from this thread only, in section order. */
	for (i = 0; i < n; i++)
		used |= zsec_install(elf, &zs[i], &mapped);
	if (used)
		d->zbufs[d->nzbufs++] = (struct zbuf){ buf, alloc, big };
	else
		big_free(buf, alloc, big);
}

/* The DSO's Dwarf, opened on first use and kept for the session (never
 * one per lookup). Debug sections are inflated here (prepare_dwarf),
 * so DSOs resolved without DWARF never pay for it, and the ones
 * hide_unused_dwarf() hides are not paid for at all. */
static Dwarf *dso_dwarf(struct sym_dso *d)
{
	if (d->no_dwarf)
		return NULL;
	if (!d->dw_tried) {
		d->dw_tried = true;
		if (d->dbg) {
			prepare_dwarf(d, d->dbg);
			d->dw = dwarf_begin_elf(d->dbg, DWARF_C_READ, NULL);
		}
		if (!d->dw && d->elf) {
			prepare_dwarf(d, d->elf);
			d->dw = dwarf_begin_elf(d->elf, DWARF_C_READ, NULL);
		}
	}
	return d->dw;
}

Dwarf *sym_dso_dwarf(struct sym_dso *d)
{
	return dso_dwarf(d);
}

/* Whether @elf has a .debug_frame section (SHF_COMPRESSED or the GNU
 * .zdebug_frame form). */
static bool has_debug_frame(Elf *elf)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	const char *name;
	size_t shstrndx;

	if (!elf || elf_getshdrstrndx(elf, &shstrndx) < 0)
		return false;
	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &sh) && sh.sh_type != SHT_NOBITS &&
		    (name = elf_strptr(elf, shstrndx, sh.sh_name)) &&
		    (!strcmp(name, ".debug_frame") || !strcmp(name, ".zdebug_frame")))
			return true;
	return false;
}

/* Open @dso's .eh_frame CFI once (see sym_dso_unwind_info). */
static void dso_eh_cfi(struct sym_dso *dso)
{
	if (!dso->cfi_tried) {
		dso->cfi_tried = true;
		if (dso->elf)
			dso->eh_cfi = dwarf_getcfi_elf(dso->elf);
	}
}

/* Call frame information for the unwinder: .eh_frame from the loaded
 * binary (what the runtime itself unwinds with), indexed by ELF address;
 * libdw keeps a sorted FDE table per CFI. */
int sym_dso_unwind_info(struct sym_ctx *ctx, struct sym_dso *dso, u64 file_off,
			u64 *vaddr, Dwarf_CFI **eh)
{
	int err;

	*eh = NULL;
	if ((err = dso_ready(ctx, dso)))
		return err;
	if (!dso->found || !off_to_vaddr(dso, file_off, vaddr))
		return -ENOENT;
	dso_eh_cfi(dso);
	*eh = dso->eh_cfi;
	return 0;
}

/* .debug_frame as a second source (libpython has none, but some -g
 * builds do). Asked for only where .eh_frame has no entry, since it
 * opens the DSO's DWARF (docs/design.md §6.3). */
Dwarf_CFI *sym_dso_debug_cfi(struct sym_dso *dso)
{
	Dwarf *dw;

	/* The DWARF of a file without .debug_frame gives no CFI (libdw's
	 * dwarf_getcfi), and opening it inflates its debug sections: each
	 * -j N session would pay that for nothing (its names come from the
	 * shared symbolizer, docs/design.md §6.4). */
	if (!dso->dbg_cfi_tried) {
		dso->dbg_cfi_tried = true;
		if (dso->found && (has_debug_frame(dso->dbg) || has_debug_frame(dso->elf)) &&
		    (dw = dso_dwarf(dso)))
			dso->dbg_cfi = dwarf_getcfi(dw);
	}
	return dso->dbg_cfi;
}

bool sym_dso_found(struct sym_ctx *ctx, struct sym_dso *dso)
{
	dso_ready(ctx, dso);
	return dso->found;
}

unsigned sym_dso_machine(struct sym_ctx *ctx, struct sym_dso *dso)
{
	GElf_Ehdr eh;

	if (!sym_dso_found(ctx, dso) || !dso->elf || !gelf_getehdr(dso->elf, &eh))
		return 0;
	return eh.e_machine;
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

/* ------------------------------------------------------------------ */
/* Unnamed code                                                       */

/* A 4-byte word of .eh_frame_hdr in the file's byte order. */
static u32 hdr_u32(bool big, const u8 *p)
{
	return big ? (u32)p[0] << 24 | (u32)p[1] << 16 | (u32)p[2] << 8 | p[3] :
		(u32)p[3] << 24 | (u32)p[2] << 16 | (u32)p[1] << 8 | p[0];
}

/*
 * .eh_frame_hdr (LSB 5.0 "Exception Frame Header"): version 1, the
 * encodings of eh_frame_ptr, fde_count and the table, then a table of
 * (initial location, FDE address) pairs sorted by initial location. GNU
 * ld and lld write the table as DW_EH_PE_datarel | DW_EH_PE_sdata4
 * (0x3b: signed 32-bit, relative to the header's start) and the count as
 * udata4 (0x03); other encodings are left alone (unnamed code then keeps
 * its 0x address).
 */
static void load_fde_tab(struct sym_dso *d)
{
	Elf_Scn *scn = NULL;
	size_t shstr;
	GElf_Ehdr eh;
	bool hdr = false;

	d->fde_tried = true;
	if (!d->elf || !gelf_getehdr(d->elf, &eh) || elf_getshdrstrndx(d->elf, &shstr))
		return;
	while ((scn = elf_nextscn(d->elf, scn))) {
		GElf_Shdr sh;
		const char *name;
		Elf_Data *data;
		const u8 *p;
		u32 n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS ||
		    !(name = elf_strptr(d->elf, shstr, sh.sh_name)))
			continue;
		if ((sh.sh_flags & SHF_EXECINSTR) && sh.sh_size &&
		    (!strcmp(name, ".init") || !strcmp(name, ".fini"))) {
			int k = name[1] == 'f';

			d->initfini[k][0] = sh.sh_addr;
			d->initfini[k][1] = sh.sh_addr + sh.sh_size;
			continue;
		}
		if (!strcmp(name, ".eh_frame")) {
			data = elf_rawdata(scn, NULL);
			if (data && data->d_buf) {
				d->ehf = data->d_buf;
				d->ehf_len = data->d_size;
				d->ehf_addr = sh.sh_addr;
			}
			continue;
		}
		if (hdr || strcmp(name, ".eh_frame_hdr"))
			continue;
		hdr = true;
		data = elf_rawdata(scn, NULL);
		if (!data || !data->d_buf || data->d_size < 12)
			continue;
		p = data->d_buf;
		/* version 1; eh_frame_ptr sdata4 (pcrel or absolute): 4 bytes */
		if (p[0] != 1 || (p[1] & 0x0f) != 0x0b || p[2] != 0x03 || p[3] != 0x3b)
			continue;
		d->fde_big = eh.e_ident[EI_DATA] == ELFDATA2MSB;
		d->fde_64 = eh.e_ident[EI_CLASS] == ELFCLASS64;
		n = hdr_u32(d->fde_big, p + 8);
		if (n > (data->d_size - 12) / 8)
			continue;
		d->fde_tab = p + 12;
		d->fde_n = n;
		d->fde_base = sh.sh_addr;
	}
}

/* Table entry @i's initial location, relative to fde_base. */
static s64 fde_loc(const struct sym_dso *d, size_t i)
{
	return (s32)hdr_u32(d->fde_big, d->fde_tab + i * 8);
}

#define FDE_END_NONE UINT64_MAX

/* A bounds-checked cursor over .eh_frame bytes, in the file's order. */
struct ehc {
	const u8 *p, *end;
	bool big, bad;
};

static u64 ehc_uint(struct ehc *c, unsigned n)
{
	u64 v = 0;
	unsigned i;

	if (c->bad || (size_t)(c->end - c->p) < n) {
		c->bad = true;
		return 0;
	}
	for (i = 0; i < n; i++)
		v |= (u64)c->p[c->big ? n - 1 - i : i] << (8 * i);
	c->p += n;
	return v;
}

static u64 ehc_leb(struct ehc *c)
{
	u64 v = 0;
	unsigned shift = 0;

	while (!c->bad) {
		u8 b = (u8)ehc_uint(c, 1);

		if (shift < 64)
			v |= (u64)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			break;
	}
	return v;
}

/* The value of a DW_EH_PE_* encoded field, its format only (the low
 * four bits): pc_range has no base applied, and fields only skipped need
 * no base either. LSB 5.0 "DWARF Exception Header Encoding". */
static u64 ehc_enc(struct ehc *c, u8 enc, bool is64)
{
	switch (enc & 0x0f) {
	case 0x00: return ehc_uint(c, is64 ? 8 : 4); /* absptr */
	case 0x01: /* uleb128 */
	case 0x09: return ehc_leb(c); /* sleb128: a range is never negative */
	case 0x02: case 0x0a: return ehc_uint(c, 2);
	case 0x03: case 0x0b: return ehc_uint(c, 4);
	case 0x04: case 0x0c: return ehc_uint(c, 8);
	default:
		c->bad = true;
		return 0;
	}
}

/* One .eh_frame entry at @off: its length word(s) read, @c over its
 * body. False past the end or at the zero terminator. */
static bool ehc_entry(const struct sym_dso *d, u64 off, struct ehc *c)
{
	u64 len;

	if (off >= d->ehf_len)
		return false;
	*c = (struct ehc){ d->ehf + off, d->ehf + d->ehf_len, d->fde_big, false };
	len = ehc_uint(c, 4);
	if (len == 0xffffffffu)
		len = ehc_uint(c, 8);
	if (c->bad || !len || len > (u64)(c->end - c->p))
		return false;
	c->end = c->p + len;
	return true;
}

/*
 * The end of table entry @i's FDE range: start plus its pc_range, read
 * from the FDE the entry points at, in the pointer encoding its CIE's
 * augmentation gives ('R'; LSB 5.0 ".eh_frame section", "Augmentation
 * String Format"). Read once per entry: asking libdw
 * (dwarf_cfi_addrframe) per address, which runs the CFI programs, was a
 * tenth of a system-wide conversion of stripped compilers (issue 16).
 * 0 on ENOMEM, FDE_END_NONE when the entry cannot be read.
 */
static u64 fde_end(struct sym_dso *d, size_t i, u64 start)
{
	/* the entry's second word: its FDE, relative to fde_base */
	s32 rel = (s32)hdr_u32(d->fde_big, d->fde_tab + i * 8 + 4);
	u64 fde = d->fde_base + (u64)(s64)rel - d->ehf_addr, cie, range;
	u64 *v = idmap_put(&d->fde_ends, i);
	const u8 *aug;
	struct ehc c, cc;
	u8 enc = 0, ver;

	if (!v)
		return 0;
	if (*v)
		return *v;
	*v = FDE_END_NONE;
	if (!d->ehf || !ehc_entry(d, fde, &c))
		return FDE_END_NONE;
	/* The CIE pointer counts back from its own field. */
	cie = fde + (u64)(c.p - (d->ehf + fde));
	rel = (s32)ehc_uint(&c, 4);
	if (c.bad || !rel || (u64)(u32)rel > cie || !ehc_entry(d, cie - (u32)rel, &cc) ||
	    ehc_uint(&cc, 4) != 0) /* a CIE's id is 0 in .eh_frame */
		return FDE_END_NONE;
	ver = (u8)ehc_uint(&cc, 1);
	aug = cc.p;
	while (cc.p < cc.end && *cc.p)
		cc.p++;
	if (cc.p >= cc.end)
		return FDE_END_NONE;
	cc.p++;
	ehc_leb(&cc); /* code alignment */
	ehc_leb(&cc); /* data alignment */
	if (ver == 1)
		ehc_uint(&cc, 1);
	else
		ehc_leb(&cc); /* return address register */
	if (*aug == 'z') {
		ehc_leb(&cc);
		for (aug++; *aug && !cc.bad; aug++) {
			if (*aug == 'R') {
				enc = (u8)ehc_uint(&cc, 1);
				break;
			} else if (*aug == 'L') {
				ehc_uint(&cc, 1);
			} else if (*aug == 'P') {
				u8 penc = (u8)ehc_uint(&cc, 1);

				/* Skipped: DW_EH_PE_indirect does not change
				 * its size; DW_EH_PE_aligned is not met. */
				if ((penc & 0x70) == 0x50)
					return FDE_END_NONE;
				ehc_enc(&cc, penc, d->fde_64);
			} else if (*aug != 'S' && *aug != 'B') {
				return FDE_END_NONE;
			}
		}
	} else if (*aug) {
		return FDE_END_NONE;
	}
	if (cc.bad)
		return FDE_END_NONE;
	ehc_enc(&c, enc, d->fde_64); /* pc_begin: the table has it */
	range = ehc_enc(&c, enc, d->fde_64);
	if (c.bad || !range || range > UINT64_MAX - 1 - start)
		return FDE_END_NONE;
	return *v = start + range;
}

/* The FDE range [*@start, *@end) holding @vaddr, by the search table:
 * 1, 0 when none does, -ENOMEM. */
static int fde_find(struct sym_dso *d, u64 vaddr, u64 *start, u64 *end)
{
	size_t lo = 0, hi, mid;

	if (!d->fde_tried)
		load_fde_tab(d);
	if (!d->fde_tab)
		return 0;
	for (hi = d->fde_n; lo < hi;) {
		mid = lo + (hi - lo) / 2;
		if ((u64)((s64)d->fde_base + fde_loc(d, mid)) <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return 0;
	*start = (u64)((s64)d->fde_base + fde_loc(d, lo - 1));
	*end = fde_end(d, lo - 1, *start);
	if (!*end)
		return -ENOMEM;
	return *end != FDE_END_NONE && vaddr < *end;
}

int sym_dso_fde_range(struct sym_ctx *ctx, struct sym_dso *dso, u64 vaddr,
		      u64 *start, u64 *end)
{
	int err;

	if ((err = dso_ready(ctx, dso)))
		return err;
	return dso->found ? fde_find(dso, vaddr, start, end) : 0;
}

/*
 * Code without a symbol (a stripped library's static functions, most of
 * a GPU driver): named by the start of its function as the unwind tables
 * give it, `LIB+0xOFF`, OFF the file offset of that start (what
 * `addr2line -e LIB` and `objdump --start-address` take for a shared
 * library whose text is mapped at its offset). Every sample in one
 * function gets one name, the same in every run. The FDE is the last
 * table entry at or below @vaddr (FDEs do not overlap, and the table is
 * sorted: LSB gABI, ".eh_frame_hdr"), and must cover @vaddr (fde_end).
 * 1 with fr[0] set, 0 when there is no FDE, -ENOMEM.
 */
static int unnamed_frame(struct sym_ctx *ctx, struct sym_dso *d, u64 vaddr,
			 struct sym_frame *fr)
{
	static const char *const initfini[2] = { "_init", "_fini" };
	const char *base;
	char buf[512];
	u64 start, off, end, *name;
	int r = fde_find(d, vaddr, &start, &end), k;

	if (r < 0)
		return r;
	if (!r) {
		/* No FDE: a stripped library's .init or .fini, whose code
		 * (crti.o's prologue, crtn.o's epilogue) comes without
		 * CFI, is the function DT_INIT or DT_FINI names (System
		 * V gABI, "Dynamic Section"); crti.o calls it _init or
		 * _fini, the name the stripped .symtab had. The first
		 * code a library runs when it is loaded: a sample taken
		 * while its page faults in lands there. */
		for (k = 0; k < 2; k++)
			if (vaddr >= d->initfini[k][0] && vaddr < d->initfini[k][1]) {
				fr[0] = (struct sym_frame){ initfini[k], NULL, 0 };
				return 1;
			}
		return 0;
	}
	if (!vaddr_to_off(d, start, &off))
		return 0;
	if (!(name = idmap_put(&d->fde_names, start)))
		return -ENOMEM;
	if (!*name) {
		base = strrchr(d->name, '/');
		base = base && base[1] ? base + 1 : d->name;
		snprintf(buf, sizeof(buf), "%s+0x%llx", base, (unsigned long long)off);
		*name = (u64)(uintptr_t)arena_strdup(&ctx->arena, buf);
		if (!*name)
			return -ENOMEM;
	}
	fr[0] = (struct sym_frame){ (const char *)(uintptr_t)*name, NULL, 0 };
	return 1;
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
		return unnamed_frame(ctx, d, vaddr, fr);
	fr[0] = (struct sym_frame){ name, NULL, 0 };
	return 1;
}

struct cache_key {
	u64 off;
	bool ret;
};

static bool cache_eq(const void *ent, const void *key)
{
	const struct cache_ent *e = ent;
	const struct cache_key *k = key;

	return e->off == k->off && e->ret == k->ret;
}

static u64 cache_hash(u64 off, bool ret)
{
	return hash_mix(off * 2 + ret);
}

static int cache_put(struct sym_ctx *ctx, struct sym_dso *d, u64 off,
		     bool ret, const struct sym_frame *fr, int n)
{
	struct cache_key key = { off, ret };
	u64 h = cache_hash(off, ret);
	struct sym_frame *copy = NULL;
	struct cache_ent *e;

	if (htab_reserve(&d->cache))
		return -ENOMEM;
	if (n) {
		copy = arena_alloc(&ctx->arena, sizeof(*fr) * (size_t)n);
		if (!copy)
			return -ENOMEM;
		memcpy(copy, fr, sizeof(*fr) * (size_t)n);
	}
	/* Called after a miss: the probe ends on a free entry. */
	e = htab_probe(&d->cache, h, cache_eq, &key);
	e->off = off;
	e->frames = copy;
	e->n = (u32)n;
	e->ret = ret;
	htab_claim(&d->cache, e, h);
	return 0;
}

int sym_resolve_once(struct sym_ctx *ctx, struct sym_dso *dso, u64 file_off,
		     bool is_return, struct sym_frame *frames)
{
	int err;

	ctx->stats.resolves++;
	if (!dso)
		return 0;
	if ((err = dso_ready(ctx, dso)))
		return err;
	if (!dso->found)
		return 0;
	ctx->stats.cache_misses++;
	return resolve_uncached(ctx, dso, file_off, is_return, frames);
}

int sym_resolve(struct sym_ctx *ctx, struct sym_dso *dso, u64 file_off,
		bool is_return, struct sym_frame *frames)
{
	struct cache_key key = { file_off, is_return };
	const struct cache_ent *e;
	int n, err;

	e = dso ? htab_find(&dso->cache, cache_hash(file_off, is_return), cache_eq, &key) :
		NULL;
	if (e) {
		ctx->stats.resolves++;
		if (e->n)
			memcpy(frames, e->frames, sizeof(*frames) * e->n);
		return (int)e->n;
	}
	/* A DSO with no file is not cached: nothing was resolved. */
	n = sym_resolve_once(ctx, dso, file_off, is_return, frames);
	if (n < 0 || !dso || !dso->found)
		return n;
	err = cache_put(ctx, dso, file_off, is_return, frames, n);
	return err ? err : n;
}
