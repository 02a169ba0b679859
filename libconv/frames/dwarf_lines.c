// SPDX-License-Identifier: GPL-2.0
/*
 * DWARF for the symbolizer: the CU, function, inline chain, source file
 * and line of an ELF address, from the DSO's Dwarf (symbols.c opens it
 * once per DSO and keeps it until sym_ctx_free()).
 *
 * Invariants:
 * - DWARF: the CU comes from dwarf_addrdie (.debug_aranges), or from our
 *   own CU range table when aranges are missing (clang emits none). In a
 *   CU, a lazily built sorted index of its subprograms finds the function;
 *   the inline chain is then a short walk down the DW_TAG_inlined_subroutine
 *   DIEs that contain the pc. Nothing is ever done per lookup that is
 *   proportional to the size of the DSO.
 * - Tables built here (the fallback CU table, the per-CU subprogram
 *   indexes) hang off the DSO and are freed with it; file names made
 *   absolute are interned in ctx->paths. Everything handed out lives as
 *   long as the ctx.
 * - No output; the only error is -ENOMEM. A DSO whose DWARF is damaged
 *   just resolves to fewer frames.
 */
#include "symbols_int.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

static int range_cmp(const void *pa, const void *pb)
{
	const struct die_range *a = pa, *b = pb;

	if (a->lo != b->lo)
		return a->lo < b->lo ? -1 : 1;
	return a->hi < b->hi ? -1 : a->hi > b->hi;
}

static int off_cmp(const void *pa, const void *pb)
{
	Dwarf_Off a = *(const Dwarf_Off *)pa, b = *(const Dwarf_Off *)pb;

	return a < b ? -1 : a > b;
}

/*
 * The CU DIE offsets .debug_aranges lists, sorted, into *@out (NULL and 0
 * when it lists none). 0 or -ENOMEM.
 */
static int aranged_cus(struct sym_dso *d, Dwarf_Off **out, size_t *n)
{
	Dwarf_Aranges *ar;
	size_t nar = 0, i;
	Dwarf_Off *v;

	*out = NULL;
	*n = 0;
	if (dwarf_getaranges(d->dw, &ar, &nar) != 0 || !nar)
		return 0;
	if (!(v = xreallocarray(NULL, nar, sizeof(*v))))
		return -ENOMEM;
	for (i = 0; i < nar; i++) {
		Dwarf_Addr start;
		Dwarf_Word len;
		Dwarf_Off off;

		if (!dwarf_getarangeinfo(dwarf_onearange(ar, i), &start, &len, &off))
			v[(*n)++] = off;
	}
	xqsort(v, *n, sizeof(*v), off_cmp);
	*out = v;
	return 0;
}

/*
 * CU ranges from the CU DIEs themselves, for the CUs .debug_aranges does
 * not list (an object built by clang has none; dwarf_getaranges then has
 * nothing in libdw 0.188). A CU it lists is left out: its ranges are the
 * ones dwarf_addrdie() already searched (GCC writes every range of a CU
 * there, the cold and per-function sections' too). libc's debug file
 * lists all its 2,083 CUs, and reading each CU DIE's ranges for an
 * address in no CU (PLT stubs, code built without debug information)
 * was 10 ms of a system-wide conversion (issue 16, docs/design.md
 * §6.16).
 */
static int build_cu_table(struct sym_dso *d)
{
	Dwarf_CU *cu = NULL;
	Dwarf_Half ver;
	Dwarf_Die cudie;
	Dwarf_Addr base, lo, hi;
	Dwarf_Off *listed, off_die;
	uint8_t ut;
	size_t cap = 0, nlisted;
	ptrdiff_t off;
	int err;

	d->cus_built = true;
	if ((err = aranged_cus(d, &listed, &nlisted)))
		return err;
	while (dwarf_get_units(d->dw, cu, &cu, &ver, &ut, &cudie, NULL) == 0) {
		if (ut != DW_UT_compile && ut != DW_UT_skeleton)
			continue;
		off_die = dwarf_dieoffset(&cudie);
		if (nlisted && bsearch(&off_die, listed, nlisted, sizeof(*listed), off_cmp))
			continue;
		for (off = 0; (off = dwarf_ranges(&cudie, off, &base, &lo, &hi)) > 0;) {
			if (lo >= hi)
				continue;
			if (ensure_mem((void **)&d->cus, &cap, sizeof(*d->cus),
				       d->ncus + 1)) {
				free(listed);
				return -ENOMEM;
			}
			d->cus[d->ncus++] = (struct die_range){ lo, hi, cudie };
		}
	}
	free(listed);
	xqsort(d->cus, d->ncus, sizeof(*d->cus), range_cmp);
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

static bool cufns_eq(const void *ent, const void *key)
{
	return ((const struct cu_fns *)ent)->key == *(const Dwarf_Off *)key;
}

static int cu_fns_get(struct sym_dso *d, Dwarf_Die *cu, struct cu_fns **out)
{
	Dwarf_Off key = dwarf_dieoffset(cu);
	u64 h = hash_mix(key + 1);
	struct fnvec fv = { 0 };
	struct cu_fns *e;
	int err;

	if (!d->cufns.esz)
		htab_init(&d->cufns, sizeof(struct cu_fns), 16);
	if (htab_reserve(&d->cufns))
		return -ENOMEM;
	e = htab_probe(&d->cufns, h, cufns_eq, &key);
	if (htab_used(e)) {
		*out = e;
		return 0;
	}
	err = index_scope(cu, &fv, 0);
	if (err) {
		free(fv.v);
		return err;
	}
	xqsort(fv.v, fv.n, sizeof(*fv.v), range_cmp);
	e->key = key;
	e->v = fv.v;
	e->n = fv.n;
	htab_claim(&d->cufns, e, h);
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

/*
 * The scopes enclosing the DIE at offset @target of @cu, outermost first
 * (at most @max, the innermost kept). libdw has no parent links, but
 * DIE offsets are in pre-order: a DIE's subtree ends where its next
 * sibling starts, so each level descends into the last child that
 * starts at or before @target, skipping whole subtrees (GCC and clang
 * give DIEs with children a DW_AT_sibling). Returns the count, or -1 if
 * @target is not a DIE of @cu.
 */
static int die_parents(Dwarf_Die *cu, Dwarf_Off target, Dwarf_Die *out, int max)
{
	Dwarf_Die cur = *cu, c, next;
	int n = 0, depth;

	for (depth = 0; depth < 64; depth++) {
		if (dwarf_child(&cur, &c) != 0 || dwarf_dieoffset(&c) > target)
			return -1;
		while (dwarf_dieoffset(&c) != target &&
		       dwarf_siblingof(&c, &next) == 0 &&
		       dwarf_dieoffset(&next) <= target)
			c = next;
		if (dwarf_dieoffset(&c) == target)
			return n;
		if (n == max) {
			memmove(out, out + 1, (size_t)(max - 1) * sizeof(*out));
			n--;
		}
		out[n++] = c;
		cur = c;
	}
	return -1;
}

/*
 * A C compilation unit: C has no namespaces and its structures hold no
 * functions, so nothing in it is qualified. Worth knowing up front, as
 * die_parents() walks the CU from its start (libc's CUs: 16% of all
 * instructions on a DWARF profile before this, docs/design.md §6.3).
 */
static bool c_unit(Dwarf_Die *cu)
{
	switch (dwarf_srclang(cu)) {
	case DW_LANG_C89:
	case DW_LANG_C:
	case DW_LANG_C99:
	case DW_LANG_C11:
		return true;
	default:
		return false;
	}
}

/*
 * @name qualified by the namespaces, classes, structures and unions
 * enclosing @die (the DIE that holds DW_AT_name), as the demangler
 * writes symbol names: `std::generate_n<...>`, `ns::Class::method`,
 * `(anonymous namespace)::f`. Unnamed classes (lambda closures) add
 * nothing. *@out is @name itself at CU level, else a ctx-owned string.
 */
static int qualify(struct sym_ctx *ctx, Dwarf_Die *die, const char *name,
		   const char **out)
{
	Dwarf_Die cu, scopes[16];
	char buf[4096];
	size_t len = 0;
	const char *s;
	int n, i, tag, w;

	*out = name;
	if (!dwarf_diecu(die, &cu, NULL, NULL) || c_unit(&cu))
		return 0;
	n = die_parents(&cu, dwarf_dieoffset(die), scopes, (int)ARRAY_SIZE(scopes));
	for (i = 0; i < n; i++) {
		tag = dwarf_tag(&scopes[i]);
		if (tag != DW_TAG_namespace && tag != DW_TAG_class_type &&
		    tag != DW_TAG_structure_type && tag != DW_TAG_union_type)
			continue;
		s = dwarf_diename(&scopes[i]);
		if (!s && tag != DW_TAG_namespace)
			continue;
		w = snprintf(buf + len, sizeof(buf) - len, "%s::",
			     s ? s : "(anonymous namespace)");
		if (w < 0 || (size_t)w >= sizeof(buf) - len)
			return 0; /* too long to qualify: the plain name */
		len += (size_t)w;
	}
	if (!len)
		return 0;
	w = snprintf(buf + len, sizeof(buf) - len, "%s", name);
	if (w < 0 || (size_t)w >= sizeof(buf) - len)
		return 0;
	*out = arena_strdup(&ctx->arena, buf);
	return *out ? 0 : -ENOMEM;
}

/* Name of a subprogram or inlined instance: the demangled linkage name
 * (qualified, as py-spy shows C++), else DW_AT_name qualified by its
 * enclosing scopes (GCC gives no linkage name to, e.g., templates
 * instantiated with a lambda); both looked up through
 * DW_AT_abstract_origin/DW_AT_specification. */
static int die_name(struct sym_ctx *ctx, Dwarf_Die *die, const char **out)
{
	Dwarf_Attribute a;
	Dwarf_Die cur = *die, next;
	const char *s;
	int hops;

	*out = NULL;
	s = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &a));
	if (!s)
		s = dwarf_formstring(
			dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a));
	if (s)
		return sym_demangle_name(ctx, s, true, out);
	/* The DIE holding the name: the declaration at the end of the
	 * abstract_origin/specification chain, nested in its scopes. */
	for (hops = 0; hops < 8 && !dwarf_hasattr(&cur, DW_AT_name); hops++) {
		if (!dwarf_formref_die(dwarf_attr(&cur, DW_AT_abstract_origin, &a), &next) &&
		    !dwarf_formref_die(dwarf_attr(&cur, DW_AT_specification, &a), &next))
			break;
		cur = next;
	}
	s = dwarf_diename(&cur);
	if (!s)
		return 0;
	return qualify(ctx, &cur, s, out);
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
	const char *dir;
	Dwarf_Attribute a;
	u32 id;
	int n;

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
	if (strset_add(&ctx->paths, buf, (size_t)n, &id) < 0)
		return -ENOMEM;
	*out = strset_str(&ctx->paths, id);
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
int sym_dwarf_frames(struct sym_ctx *ctx, struct sym_dso *d, u64 pc,
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
