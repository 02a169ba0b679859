// SPDX-License-Identifier: GPL-2.0
/*
 * Readers for CPython's JIT symbol files: /tmp/perf-PID.map (text, one line
 * per trampoline) and /tmp/jit-PID.dump (jitdump, tools/perf/Documentation/
 * jitdump-specification.txt), plus a small DWARF call-frame interpreter that
 * turns the .eh_frame CPython puts in JIT_CODE_UNWINDING_INFO into
 * struct jit_cfi_row tables. Facts on what CPython writes are from
 * /work/shared/reference/cpython-perf-support.md (§1.3 map lines, §2 jitdump
 * layout); the CFA model is DWARF 5 §6.4 and the pointer encodings LSB 3.0
 * "Exception Frames".
 *
 * Invariants: entries are allocated in the map's arena, so their addresses
 * never change; m->ents[] lists them in the order they were added, which is
 * the "written last wins" order. m->segs[] is rebuilt after every added file:
 * sorted, disjoint, non-empty [start, end) pieces, each naming the newest
 * entry covering it, so a lookup is a single binary search. Every read from
 * an input buffer goes through struct cur or an explicit bound check.
 */
#include "jit.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "perfspy.h"

struct seg {
	u64 start, end; /* [start, end), disjoint, ascending */
	const struct jit_entry *ent;
};

struct jit_map {
	struct jit_entry **ents; /* in the order added */
	size_t nr, cap;
	struct seg *segs;
	size_t nr_segs;
	struct arena arena; /* entries, names, CFI rows */
};

int jit_map_new(struct jit_map **out)
{
	struct jit_map *m = calloc(1, sizeof(*m));

	*out = m;
	if (!m)
		return -ENOMEM;
	arena_init(&m->arena);
	return 0;
}

void jit_map_free(struct jit_map *m)
{
	if (!m)
		return;
	free(m->ents);
	free(m->segs);
	arena_free(&m->arena);
	free(m);
}

size_t jit_map_size(const struct jit_map *m)
{
	return m ? m->nr : 0;
}

const struct jit_entry *jit_map_entry(const struct jit_map *m, size_t i)
{
	return m && i < m->nr ? m->ents[i] : NULL;
}

static int add_entry(struct jit_map *m, u64 start, u64 size, const char *name,
		     const struct jit_cfi_row *cfi, u32 nr_cfi)
{
	struct jit_entry *e;

	if (ensure_mem((void **)&m->ents, &m->cap, sizeof(*m->ents), m->nr + 1))
		return -ENOMEM;
	e = arena_alloc(&m->arena, sizeof(*e));
	if (!e)
		return -ENOMEM;
	*e = (struct jit_entry){ .start = start, .size = size, .name = name,
				 .cfi = cfi, .nr_cfi = nr_cfi };
	m->ents[m->nr++] = e;
	return 0;
}

/* ---- index: last-written-wins segments ---- */

static u64 ent_end(const struct jit_entry *e)
{
	/* An entry reaching past 2^64 is clipped (one byte is lost). */
	return e->size > UINT64_MAX - e->start ? UINT64_MAX : e->start + e->size;
}

struct skey {
	u64 start;
	size_t idx;
};

static int skey_cmp(const void *a, const void *b)
{
	const struct skey *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return (x->idx > y->idx) - (x->idx < y->idx);
}

/* A max-heap of entry indices: the top is the newest active entry. */
static void heap_push(size_t *h, size_t *n, size_t v)
{
	size_t i = (*n)++;

	for (; i && h[(i - 1) / 2] < v; i = (i - 1) / 2)
		h[i] = h[(i - 1) / 2];
	h[i] = v;
}

static void heap_pop(size_t *h, size_t *n)
{
	size_t v = h[--*n], i = 0, c;

	if (!*n)
		return;
	while ((c = 2 * i + 1) < *n) {
		if (c + 1 < *n && h[c + 1] > h[c])
			c++;
		if (h[c] <= v)
			break;
		h[i] = h[c];
		i = c;
	}
	h[i] = v;
}

/*
 * Sweep the entries by start address, keeping the active ones in a heap
 * ordered by write order; each boundary where the newest active entry
 * changes starts a segment. Stale heap members (already ended) are dropped
 * lazily when they reach the top. Every iteration pushes or pops, so there
 * are at most 2n iterations and segments; O(n log n) overall. On -ENOMEM
 * the previous index stays in place (consistent, just missing new entries).
 */
static int index_build(struct jit_map *m)
{
	struct skey *keys = xreallocarray(NULL, m->nr, sizeof(*keys));
	size_t *heap = xreallocarray(NULL, m->nr, sizeof(*heap));
	struct seg *segs = xreallocarray(NULL, m->nr, 2 * sizeof(*segs));
	size_t n = 0, i, h = 0, ns = 0;
	u64 pos = 0, stop, next;

	if (!keys || !heap || !segs) {
		free(keys);
		free(heap);
		free(segs);
		return -ENOMEM;
	}
	for (i = 0; i < m->nr; i++)
		if (m->ents[i]->size)
			keys[n++] = (struct skey){ m->ents[i]->start, i };
	qsort(keys, n, sizeof(*keys), skey_cmp);
	for (i = 0; i < n || h;) {
		if (!h)
			pos = keys[i].start;
		while (i < n && keys[i].start <= pos)
			heap_push(heap, &h, keys[i++].idx);
		while (h && ent_end(m->ents[heap[0]]) <= pos)
			heap_pop(heap, &h);
		if (!h)
			continue;
		next = i < n ? keys[i].start : UINT64_MAX;
		stop = ent_end(m->ents[heap[0]]);
		stop = stop < next ? stop : next;
		if (ns && segs[ns - 1].ent == m->ents[heap[0]] && segs[ns - 1].end == pos)
			segs[ns - 1].end = stop;
		else
			segs[ns++] = (struct seg){ pos, stop, m->ents[heap[0]] };
		pos = stop;
	}
	free(keys);
	free(heap);
	free(m->segs);
	m->segs = segs;
	m->nr_segs = ns;
	return 0;
}

const struct jit_entry *jit_map_find(const struct jit_map *m, u64 addr)
{
	size_t lo = 0, hi, mid;

	if (!m)
		return NULL;
	hi = m->nr_segs;
	while (lo < hi) { /* lo = the number of segments starting <= addr */
		mid = lo + (hi - lo) / 2;
		if (m->segs[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || addr >= m->segs[lo - 1].end)
		return NULL;
	return m->segs[lo - 1].ent;
}

/* ---- perf map text ---- */

static int hexval(u8 c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/*
 * A hex field ending at a space (perf's jit-interface.txt: "hex numbers
 * without 0x"; a 0x prefix is tolerated). Returns the bytes used, space
 * included, or 0 if malformed (no digits, more than 64 bits, no space).
 */
static size_t hex_field(const char *s, size_t n, u64 *out)
{
	size_t i = 0, digits = 0;
	u64 v = 0;
	int d;

	if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		i = 2;
	for (; i < n && (d = hexval((u8)s[i])) >= 0; i++, digits++) {
		if (v >> 60)
			return 0;
		v = v << 4 | (u64)d;
	}
	if (!digits || i >= n || s[i] != ' ')
		return 0;
	*out = v;
	return i + 1;
}

/* One line without its '\n': 1 if malformed, else 0 or -ENOMEM. */
static int perf_map_line(struct jit_map *m, const char *s, size_t n)
{
	size_t a, b;
	u64 start, size;
	const char *name;

	if (n && s[n - 1] == '\r')
		n--;
	a = hex_field(s, n, &start);
	if (!a)
		return 1;
	b = hex_field(s + a, n - a, &size);
	/* The name is everything after the second space (CPython writes
	 * "%lx %x %s\n" with names holding spaces, reference §1.3). */
	if (!b || a + b >= n)
		return 1;
	name = arena_strndup(&m->arena, s + a + b, n - a - b);
	if (!name)
		return -ENOMEM;
	return add_entry(m, start, size, name, NULL, 0);
}

int jit_map_add_perf_map(struct jit_map *m, const char *buf, size_t len,
			 const struct log_sink *log)
{
	const char *p = buf, *end = len ? buf + len : buf, *nl;
	size_t bad = 0, first_bad = 0, line = 0;
	int err = 0;

	while (p < end) {
		nl = memchr(p, '\n', (size_t)(end - p));
		line++;
		err = perf_map_line(m, p, (size_t)((nl ? nl : end) - p));
		if (err < 0)
			break;
		if (err > 0 && !bad++)
			first_bad = line;
		err = 0;
		p = nl ? nl + 1 : end;
	}
	if (bad)
		pr_debug(log, "perf map: skipped %zu malformed line(s) of %zu, first at line %zu",
			 bad, line, first_bad);
	/* Index even after -ENOMEM: the lines read so far stay usable. */
	if (index_build(m))
		err = -ENOMEM;
	return err;
}

/* ---- DWARF readers (DWARF 5 §7.6 LEB128; LSB 3.0 DW_EH_PE_*) ---- */

/* LEB128 (DWARF 5 §7.6); bits past 64 are dropped, the walk is bounded
 * by the cursor. */
static u64 cur_leb(struct cur *c, bool sign)
{
	u64 v = 0;
	unsigned shift = 0;
	u8 b;

	do {
		b = cur_u8(c);
		if (c->bad)
			return 0;
		if (shift < 64) {
			v |= (u64)(b & 0x7f) << shift;
			shift += 7;
		}
	} while (b & 0x80);
	if (sign && shift < 64 && (b & 0x40))
		v |= ~(u64)0 << shift;
	return v;
}

#define cur_uleb(c) cur_leb(c, false)
#define cur_sleb(c) ((s64)cur_leb(c, true))

/*
 * Skip or read an encoded pointer (LSB 3.0 "DWARF Exception Header
 * Encoding"), format bits only: the only one used, pc_range, takes no
 * application, and pc_begin is not needed because the FDE describes the
 * CODE_LOAD that follows it. CPython uses pcrel|sdata4 (0x1b).
 */
static bool read_enc(struct cur *c, u8 enc, u64 *out)
{
	switch (enc & 0x0f) {
	case 0x00: /* absptr: 8 bytes on x86-64 and aarch64 */
	case 0x04: /* udata8 */
	case 0x0c: *out = cur_u64(c); break; /* sdata8 */
	case 0x01: *out = cur_uleb(c); break;
	case 0x02: *out = cur_u16(c); break;
	case 0x03: *out = cur_u32(c); break;
	case 0x09: *out = (u64)cur_sleb(c); break;
	case 0x0a: *out = (u64)(s64)(int16_t)cur_u16(c); break;
	case 0x0b: *out = (u64)(s64)(s32)cur_u32(c); break;
	default: return false;
	}
	return enc != 0xff && !c->bad; /* DW_EH_PE_omit: no address at all */
}

/* ---- .eh_frame: one CIE and the first FDE ---- */

struct cie {
	u64 code_align;
	s64 data_align;
	u64 ra_reg;
	u8 fde_enc; /* 'R' augmentation; absptr without it */
	bool aug_z;
	struct cur insn; /* initial instructions */
};

/* Body of the CIE/FDE at @off (after its length), or false. 32-bit DWARF
 * only: the 64-bit escape 0xffffffff is refused (CPython never uses it). */
static bool eh_body(const u8 *eh, size_t len, size_t off, struct cur *body)
{
	u32 l;

	if (off > len || len - off < 8)
		return false;
	l = get_u32(eh + off);
	if (l < 4 || l == 0xffffffff || l > len - off - 4)
		return false;
	cur_init(body, eh + off + 4, l);
	return true;
}

static bool find_fde(const u8 *eh, size_t len, struct cur *cie, struct cur *fde)
{
	size_t off = 0;
	u32 id;

	/* Each step moves at least 8 bytes; a zero length ends the table. */
	while (eh_body(eh, len, off, fde)) {
		id = get_u32(fde->p);
		if (id) {
			/* The CIE pointer counts back from its own field. */
			if (id > off + 4 || !eh_body(eh, len, off + 4 - id, cie) ||
			    get_u32(cie->p) != 0)
				return false;
			cur_skip(cie, 4);
			cur_skip(fde, 4);
			return true;
		}
		off += 4 + (size_t)(fde->end - fde->p);
	}
	return false;
}

static bool parse_cie(struct cur *c, struct cie *cie)
{
	u8 ver = cur_u8(c);
	const char *aug = (const char *)c->p, *a;
	const u8 *nul = c->bad ? NULL : memchr(c->p, 0, cur_left(c));
	struct cur ad;
	u64 alen;

	if (!nul || (ver != 1 && ver != 3))
		return false;
	cur_skip(c, (size_t)(nul - c->p) + 1);
	cie->code_align = cur_uleb(c);
	cie->data_align = cur_sleb(c);
	cie->ra_reg = ver == 1 ? cur_u8(c) : cur_uleb(c);
	cie->fde_enc = 0;
	cie->aug_z = aug[0] == 'z';
	if (aug[0] && !cie->aug_z)
		return false; /* cannot find the instructions */
	if (cie->aug_z) {
		alen = cur_uleb(c);
		if (c->bad || alen > cur_left(c))
			return false;
		cur_init(&ad, c->p, (size_t)alen);
		cur_skip(c, (size_t)alen);
		/* CPython writes "zR" (reference §2). 'S' has no data; other
		 * letters ('P', 'L') would shift 'R' and are refused. */
		for (a = aug + 1; *a; a++) {
			if (*a == 'R')
				cie->fde_enc = cur_u8(&ad);
			else if (*a != 'S')
				return false;
		}
		if (ad.bad)
			return false;
	}
	cie->insn = *c;
	return !c->bad;
}

/* ---- the CFA interpreter (DWARF 5 §6.4.2) ---- */

enum { RULE_SAME, RULE_OFFSET, RULE_OTHER };
#define CFA_STACK 8

struct cfa_regs {
	bool cfa_ok; /* false: undefined or a DWARF expression */
	u64 cfa_reg;
	s64 cfa_off;
	u8 ra, fp;   /* RULE_* for the RA column and the frame pointer */
	s64 ra_off, fp_off;
};

struct cfa_vm {
	const struct cie *cie;
	u64 fp_reg;
	u64 loc, end; /* the current offset; rows stop at end */
	struct cfa_regs cur, init, stack[CFA_STACK];
	unsigned depth;
	struct jit_cfi_row *rows; /* growing scratch */
	size_t nr, cap;
	bool fail, nomem;
};

static bool fits32(s64 v)
{
	return v >= INT32_MIN && v <= INT32_MAX;
}

static bool make_row(const struct cfa_regs *r, u64 start, u64 end,
		     struct jit_cfi_row *row)
{
	if (!r->cfa_ok || r->cfa_reg > 255 || !fits32(r->cfa_off) ||
	    r->ra != RULE_OFFSET || !fits32(r->ra_off) || r->fp == RULE_OTHER ||
	    (r->fp == RULE_OFFSET && !fits32(r->fp_off)))
		return false;
	*row = (struct jit_cfi_row){
		.start = (u32)start, .end = (u32)end, .cfa_reg = (u8)r->cfa_reg,
		.cfa_off = (s32)r->cfa_off, .ra_off = (s32)r->ra_off,
		.fp_saved = r->fp == RULE_OFFSET,
		.fp_off = r->fp == RULE_OFFSET ? (s32)r->fp_off : 0,
	};
	return true;
}

/* Close the row [loc, to) under the current rules and move to @to. */
static void vm_advance(struct cfa_vm *vm, u64 to)
{
	u64 hi = to < vm->end ? to : vm->end;
	struct jit_cfi_row row, *last;

	if (hi > vm->loc) { /* to >= loc: every advance is forward */
		if (!make_row(&vm->cur, vm->loc, hi, &row)) {
			vm->fail = true;
			return;
		}
		last = vm->nr ? &vm->rows[vm->nr - 1] : NULL;
		if (last && last->cfa_reg == row.cfa_reg && last->cfa_off == row.cfa_off &&
		    last->ra_off == row.ra_off && last->fp_saved == row.fp_saved &&
		    last->fp_off == row.fp_off) {
			last->end = row.end;
		} else if (ensure_mem((void **)&vm->rows, &vm->cap, sizeof(row), vm->nr + 1)) {
			vm->fail = vm->nomem = true;
			return;
		} else {
			vm->rows[vm->nr++] = row;
		}
	}
	vm->loc = to;
}

static void vm_advance_by(struct cfa_vm *vm, u64 delta)
{
	u64 d;

	if (__builtin_mul_overflow(delta, vm->cie->code_align, &d) ||
	    d > UINT64_MAX - vm->loc)
		d = UINT64_MAX - vm->loc; /* far past the end: only closes rows */
	vm_advance(vm, vm->loc + d);
}

/* A register rule; only the RA column and the frame pointer matter. */
static void vm_set(struct cfa_vm *vm, u64 reg, u8 rule, s64 off)
{
	if (reg == vm->cie->ra_reg) {
		vm->cur.ra = rule;
		vm->cur.ra_off = off;
	} else if (reg == vm->fp_reg) {
		vm->cur.fp = rule;
		vm->cur.fp_off = off;
	}
}

static void vm_restore(struct cfa_vm *vm, u64 reg)
{
	if (reg == vm->cie->ra_reg)
		vm_set(vm, reg, vm->init.ra, vm->init.ra_off);
	else if (reg == vm->fp_reg)
		vm_set(vm, reg, vm->init.fp, vm->init.fp_off);
}

/* A factored offset: @v times the CIE's data alignment. */
static s64 vm_factor(struct cfa_vm *vm, s64 v)
{
	s64 r;

	if (__builtin_mul_overflow(v, vm->cie->data_align, &r))
		vm->fail = true;
	return r;
}

static s64 vm_uoff(struct cfa_vm *vm, u64 v)
{
	if (v > INT64_MAX)
		vm->fail = true;
	return (s64)v;
}

/*
 * Opcodes without an operand in the low 6 bits (DWARF 5 table 7.29). Only
 * what compilers and CPython emit for simple code is decoded; anything
 * else (expressions, register rules, set_loc) fails the decode, which is
 * what the row format would need anyway.
 */
static void vm_op(struct cfa_vm *vm, struct cur *c, u8 op)
{
	u64 reg;

	switch (op) {
	case 0x00: break; /* nop */
	case 0x02: vm_advance_by(vm, cur_u8(c)); break;
	case 0x03: vm_advance_by(vm, cur_u16(c)); break;
	case 0x04: vm_advance_by(vm, cur_u32(c)); break;
	case 0x05: /* offset_extended */
		reg = cur_uleb(c);
		vm_set(vm, reg, RULE_OFFSET, vm_factor(vm, vm_uoff(vm, cur_uleb(c))));
		break;
	case 0x06: vm_restore(vm, cur_uleb(c)); break; /* restore_extended */
	case 0x08: vm_set(vm, cur_uleb(c), RULE_SAME, 0); break; /* same_value */
	case 0x0a: /* remember_state */
		if (vm->depth == CFA_STACK)
			vm->fail = true;
		else
			vm->stack[vm->depth++] = vm->cur;
		break;
	case 0x0b: /* restore_state; the CFA rule comes back too, which the
		    * remember/restore pairs GCC puts around epilogues rely on */
		if (!vm->depth)
			vm->fail = true;
		else
			vm->cur = vm->stack[--vm->depth];
		break;
	case 0x0c: /* def_cfa */
	case 0x12: /* def_cfa_sf */
		vm->cur.cfa_reg = cur_uleb(c);
		vm->cur.cfa_ok = true;
		/* fall through */
	case 0x0e: /* def_cfa_offset */
	case 0x13: /* def_cfa_offset_sf */
		vm->cur.cfa_off = op == 0x0c || op == 0x0e ? vm_uoff(vm, cur_uleb(c))
							   : vm_factor(vm, cur_sleb(c));
		break;
	case 0x0d: vm->cur.cfa_reg = cur_uleb(c); break; /* def_cfa_register */
	case 0x11: /* offset_extended_sf */
		reg = cur_uleb(c);
		vm_set(vm, reg, RULE_OFFSET, vm_factor(vm, cur_sleb(c)));
		break;
	case 0x2d: break; /* GNU_window_save / AARCH64_negate_ra_state: PAC state only */
	case 0x2e: cur_uleb(c); break; /* GNU_args_size */
	default: vm->fail = true;
	}
}

static void vm_run(struct cfa_vm *vm, struct cur *c)
{
	u8 op;

	while (!vm->fail && !c->bad && cur_left(c) && vm->loc < vm->end) {
		op = cur_u8(c);
		switch (op >> 6) {
		case 1: vm_advance_by(vm, op & 0x3f); break; /* advance_loc */
		case 2: /* offset */
			vm_set(vm, op & 0x3f, RULE_OFFSET,
			       vm_factor(vm, vm_uoff(vm, cur_uleb(c))));
			break;
		case 3: vm_restore(vm, op & 0x3f); break;
		default: vm_op(vm, c, op);
		}
	}
	if (c->bad)
		vm->fail = true;
}

/*
 * Rows for the code of @code_size bytes described by the first FDE of the
 * .eh_frame @eh. Returns 0 with the rows in vm->rows[0..vm->nr), 1 when the
 * CFI cannot be used (with @why set), or -ENOMEM.
 */
static int cfi_decode(struct cfa_vm *vm, const u8 *eh, size_t len, u64 code_size,
		      const char **why)
{
	struct cie cie;
	struct cur cc, fc;
	u64 range, alen;

	*why = "no CIE/FDE pair";
	if (!find_fde(eh, len, &cc, &fc))
		return 1;
	*why = "unsupported CIE";
	if (!parse_cie(&cc, &cie))
		return 1;
	*why = "bad FDE";
	if (!read_enc(&fc, cie.fde_enc, &range) || /* pc_begin: unused */
	    !read_enc(&fc, cie.fde_enc, &range))
		return 1;
	if (cie.aug_z) {
		alen = cur_uleb(&fc);
		if (fc.bad || alen > cur_left(&fc))
			return 1;
		cur_skip(&fc, (size_t)alen);
	}
	vm->cie = &cie;
	/* The frame pointer by the RA column: x86-64 RA 16 -> rbp 6 (SysV
	 * psABI Figure 3.36); aarch64 RA 30 -> x29 (DWARF for AArch64). */
	vm->fp_reg = cie.ra_reg == 16 ? 6 : cie.ra_reg == 30 ? 29 : UINT64_MAX;
	vm->end = range < code_size ? range : code_size;
	if (vm->end > UINT32_MAX)
		vm->end = UINT32_MAX;
	vm->loc = vm->nr = vm->depth = 0;
	vm->fail = vm->nomem = false;
	vm->cur = (struct cfa_regs){ .ra = RULE_OTHER, .fp = RULE_SAME };
	vm->init = vm->cur;
	vm_run(vm, &cie.insn);
	vm->init = vm->cur;
	vm->loc = 0; /* advances belong in FDEs; ignore any in the CIE */
	vm->nr = 0;
	vm_run(vm, &fc);
	if (!vm->fail && vm->loc < vm->end)
		vm_advance(vm, vm->end);
	if (vm->nomem)
		return -ENOMEM;
	*why = "CFI the row format cannot express (or malformed instructions)";
	return vm->fail || !vm->nr ? 1 : 0;
}

/* ---- jitdump ---- */

#define JITDUMP_MAGIC 0x4A695444u	/* "JiTD" in native order */
#define JITDUMP_MAGIC_SWAP 0x4454694Au
#define JITDUMP_HDR_SIZE 40
#define JITDUMP_REC_SIZE 16 /* id, total_size, timestamp */

enum {
	JIT_CODE_LOAD = 0,
	JIT_CODE_MOVE = 1,
	JIT_CODE_DEBUG_INFO = 2,
	JIT_CODE_CLOSE = 3,
	JIT_CODE_UNWINDING_INFO = 4,
};

struct jd {
	struct jit_map *m;
	const struct log_sink *log;
	const u8 *eh; /* pending UNWINDING_INFO .eh_frame, or NULL */
	size_t eh_len;
	/* The last decoded CFI: CPython repeats identical bytes per trampoline. */
	const u8 *last_eh;
	size_t last_len;
	u64 last_size;
	const struct jit_cfi_row *last_rows;
	u32 last_nr;
	struct cfa_vm vm;
	size_t loads, unknown, bad, no_cfi;
	size_t first_odd; /* offset of the first skipped record */
};

/* The CFI for a load of @code_size bytes from the pending unwinding info. */
static int jd_cfi(struct jd *jd, u64 code_size, const struct jit_cfi_row **rows,
		  u32 *nr)
{
	const char *why;
	struct jit_cfi_row *copy;
	int err;

	*rows = NULL;
	*nr = 0;
	if (!jd->eh)
		return 0;
	if (jd->last_eh && jd->last_len == jd->eh_len && jd->last_size == code_size &&
	    !memcmp(jd->last_eh, jd->eh, jd->eh_len)) {
		*rows = jd->last_rows;
		*nr = jd->last_nr;
		return 0;
	}
	err = cfi_decode(&jd->vm, jd->eh, jd->eh_len, code_size, &why);
	if (err < 0)
		return err;
	if (err) {
		if (!jd->no_cfi++)
			pr_debug(jd->log, "jitdump: unwinding info not used: %s", why);
	} else {
		copy = arena_alloc(&jd->m->arena, jd->vm.nr * sizeof(*copy));
		if (!copy)
			return -ENOMEM;
		memcpy(copy, jd->vm.rows, jd->vm.nr * sizeof(*copy));
		*rows = copy;
		*nr = (u32)jd->vm.nr; /* <= end <= UINT32_MAX rows */
	}
	jd->last_eh = jd->eh;
	jd->last_len = jd->eh_len;
	jd->last_size = code_size;
	jd->last_rows = *rows;
	jd->last_nr = *nr;
	return 0;
}

/* JIT_CODE_LOAD: pid, tid, vma, code_addr, code_size, code_index, name. */
static int jd_load(struct jd *jd, struct cur *c)
{
	const struct jit_cfi_row *rows;
	const u8 *nul;
	const char *name;
	u64 addr, size;
	u32 nr;
	int err;

	cur_skip(c, 16); /* pid, tid, vma: perf maps code_addr, not vma */
	addr = cur_u64(c);
	size = cur_u64(c);
	cur_u64(c); /* code_index: only JIT_CODE_MOVE refers to it */
	nul = c->bad ? NULL : memchr(c->p, 0, cur_left(c));
	if (!nul) {
		jd->eh = NULL; /* the pending info belonged to this record */
		return 1;
	}
	/* The code bytes that follow are not needed (and newest CPython
	 * alters them, reference §2). */
	name = arena_strndup(&jd->m->arena, (const char *)c->p, (size_t)(nul - c->p));
	if (!name)
		return -ENOMEM;
	if ((err = jd_cfi(jd, size, &rows, &nr)) ||
	    (err = add_entry(jd->m, addr, size, name, rows, nr)))
		return err;
	jd->eh = NULL; /* consumed, as perf's jit_repipe_code_load does */
	jd->loads++;
	return 0;
}

/* JIT_CODE_UNWINDING_INFO: unwind_data_size, eh_frame_hdr_size,
 * mapped_size, then .eh_frame followed by .eh_frame_hdr (the spec text says
 * the reverse; perf's genelf.c and CPython put .eh_frame first). */
static int jd_unwind(struct jd *jd, struct cur *c)
{
	u64 data = cur_u64(c), hdr = cur_u64(c);

	jd->eh = NULL;
	cur_u64(c);
	if (c->bad || data > cur_left(c) || hdr > data)
		return 1;
	jd->eh = c->p;
	jd->eh_len = (size_t)(data - hdr);
	return 0;
}

static int jd_record(struct jd *jd, u32 id, struct cur *c)
{
	switch (id) {
	case JIT_CODE_LOAD: return jd_load(jd, c);
	case JIT_CODE_UNWINDING_INFO: return jd_unwind(jd, c);
	/* CPython writes no DEBUG_INFO, MOVE or CLOSE (reference §2). MOVE
	 * would re-place a loaded function by code_index; without a writer
	 * that uses it, it is skipped like the others. */
	case JIT_CODE_MOVE:
	case JIT_CODE_DEBUG_INFO:
	case JIT_CODE_CLOSE: return 0;
	default: jd->unknown++; return 1;
	}
}

/* 0 if the records start at *@first, 1 if the header is cut, or an error. */
static int jd_header(const u8 *buf, size_t len, const struct log_sink *log,
		     size_t *first)
{
	u32 want = JITDUMP_MAGIC, magic = want;
	u32 version = len >= 8 ? get_u32(buf + 4) : 1;
	u32 size = len >= 12 ? get_u32(buf + 8) : JITDUMP_HDR_SIZE;

	/* Judge each field the cut left whole; a cut magic by its prefix. */
	if (len >= 4)
		magic = get_u32(buf);
	else if (len && memcmp(buf, &want, len))
		magic = 0;

	if (magic == JITDUMP_MAGIC_SWAP) {
		pr_warn(log, "jitdump: written in the other byte order (magic 0x%08x); not supported",
			magic);
		return -PERFSPY_E_ENDIAN;
	}
	if (magic != JITDUMP_MAGIC) {
		pr_warn(log, "jitdump: bad magic 0x%08x (want 0x%08x \"JiTD\")", magic,
			JITDUMP_MAGIC);
		return -PERFSPY_E_FORMAT;
	}
	if (version != 1) {
		pr_warn(log, "jitdump: version %u not supported (want 1)", version);
		return -PERFSPY_E_UNSUPPORTED;
	}
	if (size < JITDUMP_HDR_SIZE) {
		pr_warn(log, "jitdump: header size %u < %u", size, JITDUMP_HDR_SIZE);
		return -PERFSPY_E_FORMAT;
	}
	if (len < JITDUMP_HDR_SIZE || size > len) {
		pr_debug(log, "jitdump: truncated inside the header (%zu bytes)", len);
		return 1;
	}
	*first = size; /* perf's jitdump.c also skips a longer header */
	return 0;
}

static int jd_records(struct jd *jd, const u8 *buf, size_t len, size_t off)
{
	struct cur c;
	u32 id, size;
	int err;

	while (len - off >= JITDUMP_REC_SIZE) {
		id = get_u32(buf + off);
		size = get_u32(buf + off + 4);
		if (size < JITDUMP_REC_SIZE) {
			pr_warn(jd->log, "jitdump: record size %u at offset %zu; ignoring the rest",
				size, off);
			return 0;
		}
		if (size > len - off)
			break;
		cur_init(&c, buf + off + JITDUMP_REC_SIZE, size - JITDUMP_REC_SIZE);
		err = jd_record(jd, id, &c);
		if (err < 0)
			return err;
		if (err > 0 && !jd->bad++)
			jd->first_odd = off;
		off += size;
	}
	if (off < len)
		pr_debug(jd->log, "jitdump: truncated at offset %zu of %zu; kept the %zu code loads before it",
			 off, len, jd->loads);
	return 0;
}

int jit_map_add_jitdump(struct jit_map *m, const void *buf, size_t len,
			const struct log_sink *log)
{
	struct jd jd = { .m = m, .log = log };
	size_t first;
	int err, err2;

	err = jd_header(buf, len, log, &first);
	if (err)
		return err < 0 ? err : 0;
	err = jd_records(&jd, buf, len, first);
	if (jd.bad)
		pr_debug(log, "jitdump: skipped %zu malformed or unknown record(s) (%zu unknown types), first at offset %zu",
			 jd.bad, jd.unknown, jd.first_odd);
	free(jd.vm.rows);
	err2 = index_build(m);
	return err ? err : err2;
}

/* ---- files ---- */

struct jit_file {
	char path[PATH_MAX];
	int fd; /* -1 if not open */
	struct stat st;
	bool dump;
};

static int jf_open(struct jit_file *f, const char *dir, const char *fmt, s32 pid)
{
	char name[64];
	int err = 0;

	f->fd = -1;
	snprintf(name, sizeof(name), fmt, (int)pid);
	if ((size_t)snprintf(f->path, sizeof(f->path), "%s/%s", dir, name) >= sizeof(f->path))
		return -ENAMETOOLONG;
	f->fd = open(f->path, O_RDONLY | O_CLOEXEC);
	if (f->fd < 0)
		return -errno;
	if (fstat(f->fd, &f->st) < 0)
		err = -errno;
	else if (!S_ISREG(f->st.st_mode))
		err = -EINVAL; /* a FIFO or device: not a file CPython wrote */
	if (err) {
		close(f->fd);
		f->fd = -1;
	}
	return err;
}

/*
 * Read, parse and close one opened file. read() rather than mmap: a file
 * that shrinks under us (a reused PID's dump is opened O_TRUNC, reference
 * §2) then gives a short read instead of SIGBUS.
 */
static int jf_add(struct jit_map *m, struct jit_file *f, const struct log_sink *log)
{
	size_t len = 0, want = (size_t)f->st.st_size;
	char *buf = malloc(want ? want : 1);
	int err = buf ? 0 : -ENOMEM;
	ssize_t n;

	while (buf && len < want) {
		n = read(f->fd, buf + len, want - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			err = -errno;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	if (!err)
		err = f->dump ? jit_map_add_jitdump(m, buf, len, log)
			      : jit_map_add_perf_map(m, buf, len, log);
	free(buf);
	close(f->fd);
	f->fd = -1;
	return err;
}

static bool newer(const struct stat *a, const struct stat *b)
{
	if (a->st_mtim.tv_sec != b->st_mtim.tv_sec)
		return a->st_mtim.tv_sec > b->st_mtim.tv_sec;
	return a->st_mtim.tv_nsec > b->st_mtim.tv_nsec;
}

int jit_map_load(const char *dir, s32 pid, const struct log_sink *log,
		 struct jit_map **out)
{
	struct jit_file f[2] = { { .dump = false }, { .dump = true } };
	int err[2], ret, first = 0, loaded = 0, i, k;
	struct jit_map *m = NULL;
	char msg[128];

	*out = NULL;
	dir = dir ? dir : "/tmp";
	err[0] = jf_open(&f[0], dir, "perf-%d.map", pid);
	err[1] = jf_open(&f[1], dir, "jit-%d.dump", pid);
	if ((ret = jit_map_new(&m)))
		goto out;
	/* Older file first, so the newer one wins where they overlap. */
	if (!err[0] && !err[1] && newer(&f[0].st, &f[1].st))
		first = 1;
	ret = -ENOENT;
	for (k = 0; k < 2; k++) {
		i = k ^ first;
		if (!err[i])
			err[i] = jf_add(m, &f[i], log);
		if (err[i] == -ENOMEM) {
			ret = -ENOMEM;
			goto out;
		}
		if (!err[i])
			loaded++;
		else if (err[i] != -ENOENT && ret == -ENOENT)
			ret = err[i];
	}
	if (!loaded)
		goto out;
	for (i = 0; i < 2; i++) {
		if (err[i] && err[i] != -ENOENT) {
			perfspy_strerror(err[i], msg, sizeof(msg));
			pr_warn(log, "%s: not used: %s", f[i].path, msg);
		}
	}
	*out = m;
	return 0;
out:
	for (i = 0; i < 2; i++)
		if (f[i].fd >= 0)
			close(f[i].fd);
	jit_map_free(m);
	return ret;
}
