// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests for libconv/frames/machine.c: processes, threads and maps.
 *
 * MMAP, MMAP2, COMM and FORK records are written byte by byte here (the
 * layouts of linux/perf_event.h, docs/perf-data-format.md §2.4),
 * decoded with rec_parse_* and applied to a machine; lookups are then
 * checked at and around every map boundary against ranges and file
 * offsets worked out by hand from mmap(2)'s rule (a new mapping replaces
 * whatever it covers, the parts outside stay, a right part keeps its
 * file offset: pgoff + how far it starts into the old map). The JIT
 * lineage cases write perf-PID.map files into a temporary directory;
 * the EXIT case goes through the session on an image from recbuild.
 */
#include "frames/machine.h"
#include "perfspy.h"
#include "recbuild.h"
#include "test.h"

#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

static char tmpdir[64];

/* ---- record builders ---- */

/* Records live in u64 buffers: rec_parse_* read them in place. */
struct recbuf {
	u64 w[512];
};

static struct perf_event_header *put_hdr(struct recbuf *b, u32 type, u16 misc,
					 size_t size)
{
	struct perf_event_header *h = (void *)b->w;

	memset(b, 0, sizeof(*b));
	h->type = type;
	h->misc = misc;
	h->size = (u16)size;
	return h;
}

static size_t pad8(size_t n) { return (n + 7) & ~(size_t)7; }

/* MMAP2 with prot; @bid (20 bytes) selects the build-id variant. */
static void mmap2_rec(struct recbuf *b, u32 pid, u64 start, u64 len, u64 pgoff,
		      u32 prot, const char *file, const u8 *bid, u8 bid_size,
		      struct rec_mmap *out)
{
	size_t fl = pad8(strlen(file) + 1);
	u16 misc = PERF_RECORD_MISC_USER | (bid ? (1 << 14) : 0);
	struct perf_event_header *h = put_hdr(b, PERF_RECORD_MMAP2, misc, 72 + fl);
	u8 *p = (u8 *)h;

	memcpy(p + 8, &pid, 4);
	memcpy(p + 12, &pid, 4);
	memcpy(p + 16, &start, 8);
	memcpy(p + 24, &len, 8);
	memcpy(p + 32, &pgoff, 8);
	if (bid) {
		p[40] = bid_size;
		memcpy(p + 44, bid, 20);
	}
	memcpy(p + 64, &prot, 4);
	strcpy((char *)p + 72, file);
	T_EQ_INT(rec_parse_mmap(h, out), 0);
}

/* The old MMAP: no prot; PERF_RECORD_MISC_MMAP_DATA marks data maps. */
static void mmap1_rec(struct recbuf *b, u32 pid, u64 start, u64 len, u64 pgoff,
		      bool data, const char *file, struct rec_mmap *out)
{
	size_t fl = pad8(strlen(file) + 1);
	u16 misc = PERF_RECORD_MISC_USER | (data ? (1 << 13) : 0);
	struct perf_event_header *h = put_hdr(b, PERF_RECORD_MMAP, misc, 40 + fl);
	u8 *p = (u8 *)h;

	memcpy(p + 8, &pid, 4);
	memcpy(p + 12, &pid, 4);
	memcpy(p + 16, &start, 8);
	memcpy(p + 24, &len, 8);
	memcpy(p + 32, &pgoff, 8);
	strcpy((char *)p + 40, file);
	T_EQ_INT(rec_parse_mmap(h, out), 0);
}

static int do_mmap2(struct machine *m, u32 pid, u64 start, u64 len, u64 pgoff,
		    const char *file)
{
	struct recbuf b;
	struct rec_mmap mm;

	mmap2_rec(&b, pid, start, len, pgoff, PROT_READ | PROT_EXEC, file, NULL, 0, &mm);
	return mach_mmap(m, &mm, PERF_RECORD_MISC_USER);
}

static int do_comm(struct machine *m, u32 pid, u32 tid, const char *comm, bool exec)
{
	struct recbuf b;
	struct rec_comm c;
	struct perf_event_header *h = put_hdr(&b, PERF_RECORD_COMM, exec ? 1 << 13 : 0,
					      16 + pad8(strlen(comm) + 1));
	u8 *p = (u8 *)h;

	memcpy(p + 8, &pid, 4);
	memcpy(p + 12, &tid, 4);
	strcpy((char *)p + 16, comm);
	T_EQ_INT(rec_parse_comm(h, &c), 0);
	T_EQ_INT(c.exec, exec);
	return mach_comm(m, &c);
}

static int do_fork(struct machine *m, u32 pid, u32 ppid, u32 tid, u32 ptid)
{
	struct recbuf b;
	struct rec_fork f;
	struct perf_event_header *h = put_hdr(&b, PERF_RECORD_FORK, 0, 40);
	u32 v[4] = { pid, ppid, tid, ptid };
	u64 t = 77;

	memcpy((u8 *)h + 8, v, 16);
	memcpy((u8 *)h + 24, &t, 8);
	T_EQ_INT(rec_parse_fork(h, &f), 0);
	T_EQ_INT(f.ppid, ppid);
	T_EQ_INT(f.ptid, ptid);
	return mach_fork(m, &f);
}

/* ---- checks ---- */

/* @addr of @pid must lie in the map named @want_name with file offset
 * @want_off there (addr - start + pgoff), or in no map when @want_name is
 * NULL. */
#define MAP_AT(m, pid, addr, want_name, want_off)                                  \
	do {                                                                  \
		const struct mach_map *_mp = mach_find_map(m, pid, addr);     \
		if (!(want_name)) {                                                \
			T(_mp == NULL);                                       \
		} else {                                                      \
			T(_mp != NULL);                                       \
			if (_mp) {                                            \
				T_EQ_STR(_mp->name, (want_name));                  \
				T_EQ_INT((u64)(addr) - _mp->start + _mp->pgoff, \
					 (want_off));                         \
			}                                                     \
		}                                                             \
	} while (0)

static struct sym_ctx *new_sym(void)
{
	struct sym_opts so = { .kallsyms = "" };
	struct sym_ctx *sym;

	if (sym_ctx_new(&so, &sym))
		abort();
	return sym;
}

/* Overlap and replacement, checked at each boundary and one byte on
 * either side. */
static void test_map_overlap(void)
{
	struct sym_ctx *sym = new_sym();
	struct machine m;
	const struct mach_proc *p;
	u32 gen;

	mach_init(&m, sym, NULL);
	T(mach_find_map(&m, 1, 0x1000) == NULL); /* no process */
	T_EQ_INT(mach_maps_gen(&m, 1), 0);
	/* A [0x10000, 0x50000) at file offset 0x1000. */
	T_EQ_INT(do_mmap2(&m, 1, 0x10000, 0x40000, 0x1000, "/x/a"), 0);
	gen = mach_maps_gen(&m, 1);
	T(gen != 0);
	MAP_AT(&m, 1, 0xffff, NULL, 0);
	MAP_AT(&m, 1, 0x10000, "/x/a", 0x1000);
	MAP_AT(&m, 1, 0x4ffff, "/x/a", 0x40fff);
	MAP_AT(&m, 1, 0x50000, NULL, 0);

	/* B [0x20000, 0x30000) inside A: A splits in two; the right part
	 * keeps mapping the same file bytes. */
	T_EQ_INT(do_mmap2(&m, 1, 0x20000, 0x10000, 0x500, "/x/b"), 0);
	T(mach_maps_gen(&m, 1) != gen);
	MAP_AT(&m, 1, 0x1ffff, "/x/a", 0x10fff);
	MAP_AT(&m, 1, 0x20000, "/x/b", 0x500);
	MAP_AT(&m, 1, 0x2ffff, "/x/b", 0x104ff);
	MAP_AT(&m, 1, 0x30000, "/x/a", 0x21000);
	MAP_AT(&m, 1, 0x4ffff, "/x/a", 0x40fff);
	MAP_AT(&m, 1, 0x50000, NULL, 0);

	/* C [0x18000, 0x38000) over A's left tail, all of B and A's right
	 * head. */
	T_EQ_INT(do_mmap2(&m, 1, 0x18000, 0x20000, 0, "/x/c"), 0);
	MAP_AT(&m, 1, 0x17fff, "/x/a", 0x8fff);
	MAP_AT(&m, 1, 0x18000, "/x/c", 0);
	MAP_AT(&m, 1, 0x20000, "/x/c", 0x8000);
	MAP_AT(&m, 1, 0x37fff, "/x/c", 0x1ffff);
	MAP_AT(&m, 1, 0x38000, "/x/a", 0x29000);

	/* D exactly over C: replaced. E adjacent to A's end: no cut. */
	T_EQ_INT(do_mmap2(&m, 1, 0x18000, 0x20000, 0x7000, "/x/d"), 0);
	T_EQ_INT(do_mmap2(&m, 1, 0x50000, 0x1000, 0, "/x/e"), 0);
	MAP_AT(&m, 1, 0x18000, "/x/d", 0x7000);
	MAP_AT(&m, 1, 0x37fff, "/x/d", 0x26fff);
	MAP_AT(&m, 1, 0x4ffff, "/x/a", 0x40fff);
	MAP_AT(&m, 1, 0x50000, "/x/e", 0);
	MAP_AT(&m, 1, 0x51000, NULL, 0);

	/* F over everything from below A to inside E. */
	T_EQ_INT(do_mmap2(&m, 1, 0x8000, 0x48800, 0, "/x/f"), 0);
	MAP_AT(&m, 1, 0x7fff, NULL, 0);
	MAP_AT(&m, 1, 0x8000, "/x/f", 0);
	MAP_AT(&m, 1, 0x507ff, "/x/f", 0x487ff);
	MAP_AT(&m, 1, 0x50800, "/x/e", 0x800);
	MAP_AT(&m, 1, 0x50fff, "/x/e", 0xfff);

	/* The vector is sorted and without overlaps (machine.h). */
	p = mach_proc_of(&m, 1);
	T(p != NULL);
	if (p) {
		size_t i;

		T_EQ_INT(p->nr_maps, 2);
		for (i = 0; i + 1 < p->nr_maps; i++)
			T(p->maps[i].end <= p->maps[i + 1].start);
	}
	/* Other processes see none of it. */
	T(mach_find_map(&m, 2, 0x10000) == NULL);
	mach_free(&m);
	sym_ctx_free(sym);
}

/* A map that is already there, the same way, changes nothing: the
 * generation the stack caches key on stays (issue 16: a recording that
 * repeats its MMAP records kept growing them). Any difference is a
 * change. Names are interned: one copy per text. */
static void test_map_repeat(void)
{
	struct sym_ctx *sym = new_sym();
	struct machine m;
	const struct mach_proc *p;
	const char *name;
	u32 gen;

	mach_init(&m, sym, NULL);
	T_EQ_INT(do_mmap2(&m, 1, 0x10000, 0x10000, 0, "/x/a"), 0);
	T_EQ_INT(do_mmap2(&m, 1, 0x30000, 0x10000, 0, "/x/b"), 0);
	T_EQ_INT(do_mmap2(&m, 1, 0x50000, 0x10000, 0, "/x/c"), 0);
	gen = mach_maps_gen(&m, 1);
	name = mach_find_map(&m, 1, 0x30000)->name;
	T_EQ_INT(do_mmap2(&m, 1, 0x30000, 0x10000, 0, "/x/b"), 0);
	T_EQ_INT(do_mmap2(&m, 1, 0x10000, 0x10000, 0, "/x/a"), 0);
	T_EQ_INT(do_mmap2(&m, 1, 0x50000, 0x10000, 0, "/x/c"), 0);
	T_EQ_INT(mach_maps_gen(&m, 1), gen);
	T(mach_find_map(&m, 1, 0x30000)->name == name);
	p = mach_proc_of(&m, 1);
	T(p && p->nr_maps == 3);
	/* Other offset, length, file or start: new maps. */
	T_EQ_INT(do_mmap2(&m, 1, 0x30000, 0x10000, 0x1000, "/x/b"), 0);
	T(mach_maps_gen(&m, 1) != gen);
	MAP_AT(&m, 1, 0x30000, "/x/b", 0x1000);
	gen = mach_maps_gen(&m, 1);
	T_EQ_INT(do_mmap2(&m, 1, 0x30000, 0x8000, 0x1000, "/x/b"), 0);
	T(mach_maps_gen(&m, 1) != gen);
	MAP_AT(&m, 1, 0x38000, "/x/b", 0x9000);
	gen = mach_maps_gen(&m, 1);
	T_EQ_INT(do_mmap2(&m, 1, 0x30000, 0x8000, 0x1000, "/x/d"), 0);
	T(mach_maps_gen(&m, 1) != gen);
	MAP_AT(&m, 1, 0x30000, "/x/d", 0x1000);
	gen = mach_maps_gen(&m, 1);
	T_EQ_INT(do_mmap2(&m, 1, 0x50800, 0x800, 0x800, "/x/c"), 0);
	T(mach_maps_gen(&m, 1) != gen); /* same bytes, but splits c */
	p = mach_proc_of(&m, 1);
	T(p && p->nr_maps == 6);
	mach_free(&m);
	sym_ctx_free(sym);
}

/* Many maps into gaps, in a scrambled order: the vector grows in place
 * (insert_map()'s common case) at its front, middle and end, and in a
 * forked child whose copy starts full. Every map must then be found
 * at its first and last byte with its offset, the gaps between them
 * empty, the vector sorted, and each insertion a new generation. An
 * overlapping map among them (the copying path) cuts only its
 * neighbour. */
#define MANY_MAPS 300
static void test_map_many(void)
{
	struct sym_ctx *sym = new_sym();
	struct machine m;
	const struct mach_proc *p;
	char name[32];
	const char *nm = name; /* MAP_AT() tests for NULL */
	u32 gen, last;
	size_t i, k;

	mach_init(&m, sym, NULL);
	last = mach_maps_gen(&m, 1);
	for (i = 0; i < MANY_MAPS; i++) {
		/* 7 is prime to 300: every slot once, out of order. */
		k = (i * 7 + 3) % MANY_MAPS;
		snprintf(name, sizeof(name), "/x/m%zu", k);
		T_EQ_INT(do_mmap2(&m, 1, 0x100000 + k * 0x10000, 0x8000, k * 0x1000, name), 0);
		gen = mach_maps_gen(&m, 1);
		T(gen != last);
		last = gen;
	}
	T_EQ_INT(do_fork(&m, 2, 1, 2, 1), 0);
	/* Into the child's full copy: below, between and above. */
	T_EQ_INT(do_mmap2(&m, 2, 0x10000, 0x1000, 0, "/x/low"), 0);
	T_EQ_INT(do_mmap2(&m, 2, 0x100000 + 150 * 0x10000 + 0x8000, 0x1000, 0, "/x/mid"), 0);
	T_EQ_INT(do_mmap2(&m, 2, 0x100000 + MANY_MAPS * 0x10000, 0x1000, 0, "/x/high"), 0);
	/* And one over the end of map 10 and the gap after it. */
	T_EQ_INT(do_mmap2(&m, 1, 0x100000 + 10 * 0x10000 + 0x4000, 0x8000, 0, "/x/over"), 0);
	for (i = 0; i < MANY_MAPS; i++) {
		u64 at = 0x100000 + i * 0x10000;

		snprintf(name, sizeof(name), "/x/m%zu", i);
		MAP_AT(&m, 1, at, nm, i * 0x1000);
		MAP_AT(&m, 2, at, nm, i * 0x1000);
		MAP_AT(&m, 2, at + 0x7fff, nm, i * 0x1000 + 0x7fff);
		if (i == 10) {
			MAP_AT(&m, 1, at + 0x3fff, nm, i * 0x1000 + 0x3fff);
			MAP_AT(&m, 1, at + 0x4000, "/x/over", 0);
			MAP_AT(&m, 1, at + 0xbfff, "/x/over", 0x7fff);
			MAP_AT(&m, 1, at + 0xc000, NULL, 0);
		} else {
			MAP_AT(&m, 1, at + 0x7fff, nm, i * 0x1000 + 0x7fff);
			MAP_AT(&m, 1, at + 0x8000, NULL, 0);
		}
		if (i != 150)
			MAP_AT(&m, 2, at + 0x8000, NULL, 0);
	}
	MAP_AT(&m, 2, 0x10000, "/x/low", 0);
	MAP_AT(&m, 2, 0x100000 + 150 * 0x10000 + 0x8000, "/x/mid", 0);
	MAP_AT(&m, 2, 0x100000 + MANY_MAPS * 0x10000, "/x/high", 0);
	MAP_AT(&m, 1, 0x10000, NULL, 0);
	for (k = 1; k <= 2; k++) {
		p = mach_proc_of(&m, (s32)k);
		T(p != NULL);
		if (!p)
			continue;
		T_EQ_INT(p->nr_maps, k == 1 ? MANY_MAPS + 1 : MANY_MAPS + 3);
		for (i = 0; i + 1 < p->nr_maps; i++)
			T(p->maps[i].end <= p->maps[i + 1].start);
	}
	mach_free(&m);
	sym_ctx_free(sym);
}

/* What is kept, how it is classified and named. */
static void test_map_kinds(void)
{
	struct sym_ctx *sym = new_sym();
	struct machine m;
	struct recbuf b;
	struct rec_mmap mm;
	const struct mach_map *mp;
	static const u8 bid[20] = { 0xab, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,
				    13, 14, 15, 16, 17, 18, 19 };
	static const u8 bid2[20] = { 0xcd, 1 };
	struct sym_dso *dso;

	mach_init(&m, sym, NULL);
	/* Non-executable, empty and wrapping maps are not kept. */
	mmap2_rec(&b, 5, 0x1000, 0x1000, 0, PROT_READ | PROT_WRITE, "/x/data", NULL, 0, &mm);
	T_EQ_INT(mach_mmap(&m, &mm, PERF_RECORD_MISC_USER), 0);
	mmap2_rec(&b, 5, 0x2000, 0, 0, PROT_EXEC, "/x/empty", NULL, 0, &mm);
	T_EQ_INT(mach_mmap(&m, &mm, PERF_RECORD_MISC_USER), 0);
	mmap2_rec(&b, 5, UINT64_MAX - 0xfff, 0x2000, 0, PROT_EXEC, "/x/wrap", NULL, 0, &mm);
	T_EQ_INT(mach_mmap(&m, &mm, PERF_RECORD_MISC_USER), 0);
	T(mach_find_map(&m, 5, 0x1000) == NULL);
	T(mach_find_map(&m, 5, 0x2000) == NULL);
	T(mach_find_map(&m, 5, UINT64_MAX - 0x10) == NULL);
	T(mach_find_map(&m, 5, 0x10) == NULL);

	/* Old MMAP records: executable unless MISC_MMAP_DATA. */
	mmap1_rec(&b, 5, 0x3000, 0x1000, 0, true, "/x/mmap1data", &mm);
	T(!mm.is_mmap2);
	T_EQ_INT(mach_mmap(&m, &mm, PERF_RECORD_MISC_USER), 0);
	T(mach_find_map(&m, 5, 0x3000) == NULL);
	mmap1_rec(&b, 5, 0x4000, 0x1000, 0x9000, false, "/usr/lib/libm1.so", &mm);
	T_EQ_INT(mach_mmap(&m, &mm, PERF_RECORD_MISC_USER), 0);
	MAP_AT(&m, 5, 0x4800, "/usr/lib/libm1.so", 0x9800);
	mp = mach_find_map(&m, 5, 0x4000);
	if (mp) {
		T_EQ_INT(mp->kind, MAPK_FILE);
		T_EQ_STR(mp->short_name, "libm1.so");
		T(mp->dso != NULL);
	}

	/* Pseudo names. */
	T_EQ_INT(do_mmap2(&m, 5, 0x10000, 0x1000, 0, "//anon"), 0);
	T_EQ_INT(do_mmap2(&m, 5, 0x11000, 0x1000, 0, "/tmp/perf-5.map"), 0);
	T_EQ_INT(do_mmap2(&m, 5, 0x12000, 0x1000, 0, "[vdso]"), 0);
	T_EQ_INT(do_mmap2(&m, 5, 0x13000, 0x1000, 0, "[heap]"), 0);
	T_EQ_INT(do_mmap2(&m, 5, 0x14000, 0x1000, 0, "/dev/zero (deleted)"), 0);
	mp = mach_find_map(&m, 5, 0x10000);
	T(mp && mp->kind == MAPK_ANON && !mp->dso);
	mp = mach_find_map(&m, 5, 0x11000);
	T(mp && mp->kind == MAPK_ANON && !mp->dso);
	mp = mach_find_map(&m, 5, 0x12000);
	T(mp && mp->kind == MAPK_VDSO && mp->dso);
	mp = mach_find_map(&m, 5, 0x13000);
	T(mp && mp->kind == MAPK_OTHER && !mp->dso);
	if (mp)
		T_EQ_STR(mp->short_name, "[heap]");
	mp = mach_find_map(&m, 5, 0x14000);
	T(mp && mp->kind == MAPK_ANON);

	/* The kernel map sets the _text address and creates no process. */
	mmap1_rec(&b, (u32)-1, 0xffffffff81000000ULL, 0x1000000,
		  0xffffffff81000000ULL, false, "[kernel.kallsyms]_text", &mm);
	T_EQ_INT(mach_mmap(&m, &mm, PERF_RECORD_MISC_KERNEL), 0);
	T_EQ_INT(m.kernel_text, 0xffffffff81000000ULL);
	T(mach_find_map(&m, -1, 0xffffffff81000000ULL) == NULL);

	/* Build ids: from an MMAP2 of the build-id variant, else from the
	 * table (BUILD_ID feature), else none. The map's DSO is the one
	 * sym_dso_get gives for that (name, id); another id is another DSO. */
	mmap2_rec(&b, 5, 0x20000, 0x1000, 0, PROT_EXEC, "/x/withbid", bid, 20, &mm);
	T(mm.build_id != NULL && mm.build_id_size == 20);
	/* The build-id variant with size 0: no id, as without the flag. */
	{
		struct recbuf zb;
		struct rec_mmap z;

		mmap2_rec(&zb, 5, 0x30000, 0x1000, 0, PROT_EXEC, "/x/noid", bid, 0, &z);
		T(z.build_id == NULL && z.build_id_size == 0);
	}
	T_EQ_INT(mach_mmap(&m, &mm, PERF_RECORD_MISC_USER), 0);
	mp = mach_find_map(&m, 5, 0x20000);
	T(mp != NULL);
	T_EQ_INT(sym_dso_get(sym, "/x/withbid", bid, 20, &dso), 0);
	T(mp && mp->dso == dso);
	T_EQ_INT(mach_add_build_id(&m, "/x/tabbid", bid2, 20), 0);
	T_EQ_INT(mach_add_build_id(&m, "/x/ignored", bid2, 0), 0);
	T_EQ_INT(do_mmap2(&m, 5, 0x21000, 0x1000, 0, "/x/tabbid"), 0);
	mp = mach_find_map(&m, 5, 0x21000);
	T_EQ_INT(sym_dso_get(sym, "/x/tabbid", bid2, 20, &dso), 0);
	T(mp && mp->dso == dso);
	T_EQ_INT(sym_dso_get(sym, "/x/tabbid", bid, 20, &dso), 0);
	T(mp && mp->dso != dso);
	T_EQ_INT(m.bids.nr, 1);
	mach_free(&m);
	sym_ctx_free(sym);
}

/* Threads, names, recycling and the sorted list. */
static void test_threads(void)
{
	struct sym_ctx *sym = new_sym();
	struct machine m;
	struct mach_thread *t, *t2, **v;
	size_t nr, i;
	char name[32];

	mach_init(&m, sym, NULL);
	t = mach_thread(&m, 10, 11);
	T(t != NULL);
	T(t && t->pid == 10 && t->tid == 11 && !t->comm && !t->seen);
	T(mach_thread(&m, 10, 11) == t);
	T(mach_thread(&m, -1, 11) == t); /* pid unknown: the same thread */
	T_EQ_INT(t->pid, 10);
	T_EQ_INT(do_comm(&m, 10, 11, "worker", false), 0);
	T_EQ_STR(t->comm, "worker");
	T(t->seen);
	T_EQ_INT(do_comm(&m, 10, 11, "exec'd", true), 0);
	T_EQ_STR(t->comm, "exec'd");
	/* The tid shows up in another process: a recycled tid. */
	t2 = mach_thread(&m, 12, 11);
	T(t2 == t);
	T_EQ_INT(t->pid, 12);
	T(t->comm == NULL);

	/* Enough threads to grow the table several times; every one found
	 * again, and the sorted list holds the seen ones by (pid, tid). */
	for (i = 0; i < 300; i++) {
		u32 tid = 1000 + (u32)((i * 7919) % 300);

		snprintf(name, sizeof(name), "t%u", tid);
		T_EQ_INT(do_comm(&m, 500 + tid % 3, tid, name, false), 0);
	}
	/* One unseen thread (no COMM, no FORK, no sample flagging it). */
	T(mach_thread(&m, 1, 99999) != NULL);
	for (i = 0; i < 300; i++) {
		t = mach_thread(&m, -1, 1000 + (s32)i);
		snprintf(name, sizeof(name), "t%zu", 1000 + i);
		T(t && t->pid == 500 + (1000 + (s32)i) % 3);
		if (t)
			T_EQ_STR(t->comm, name);
	}
	T_EQ_INT(mach_sorted_threads(&m, &v, &nr), 0);
	/* 300 named threads plus tid 11 (seen at its COMM, kept seen when
	 * its tid was recycled into pid 12); not the unseen tid 99999. */
	T_EQ_INT(nr, 301);
	if (nr == 301) {
		T(v[0]->pid == 12 && v[0]->tid == 11);
		T(v[1]->pid == 500 && v[1]->tid == 1002);
		T(v[100]->pid == 500 && v[100]->tid == 1299);
		T(v[101]->pid == 501 && v[101]->tid == 1000);
		T(v[300]->pid == 502 && v[300]->tid == 1298);
		for (i = 0; i + 1 < nr; i++)
			T(v[i]->pid < v[i + 1]->pid ||
			  (v[i]->pid == v[i + 1]->pid && v[i]->tid < v[i + 1]->tid));
	}
	free(v);
	mach_free(&m);
	sym_ctx_free(sym);
}

/* FORK: a new process gets a copy of the parent's maps, a new thread
 * shares them, a thread takes its parent thread's name. */
static void test_fork(void)
{
	struct sym_ctx *sym = new_sym();
	struct machine m;
	struct mach_thread *t;
	u32 g;

	mach_init(&m, sym, NULL);
	T_EQ_INT(do_comm(&m, 100, 100, "parent", true), 0);
	T_EQ_INT(do_mmap2(&m, 100, 0x400000, 0x10000, 0, "/bin/prog"), 0);
	T_EQ_INT(do_mmap2(&m, 100, 0x7f0000, 0x10000, 0x2000, "/lib/libc.so.6"), 0);

	/* A thread of 100: no process of its own, maps through pid 100. */
	T_EQ_INT(do_fork(&m, 100, 100, 101, 100), 0);
	t = mach_thread(&m, 100, 101);
	T(t && t->seen);
	if (t)
		T_EQ_STR(t->comm, "parent");
	T_EQ_INT(mach_maps_gen(&m, 101), 0); /* no process 101 */

	/* A child process 200 (its thread 200 forked from thread 101). */
	T_EQ_INT(do_fork(&m, 200, 100, 200, 101), 0);
	t = mach_thread(&m, 200, 200);
	if (t)
		T_EQ_STR(t->comm, "parent");
	MAP_AT(&m, 200, 0x400000, "/bin/prog", 0);
	MAP_AT(&m, 200, 0x7f0010, "/lib/libc.so.6", 0x2010);
	MAP_AT(&m, 200, 0x800000, NULL, 0);
	/* Copies, not shared: the child's exec replaces its maps only... */
	g = mach_maps_gen(&m, 100);
	T_EQ_INT(do_comm(&m, 200, 200, "child", true), 0);
	T_EQ_INT(do_mmap2(&m, 200, 0x400000, 0x10000, 0x1000, "/bin/other"), 0);
	MAP_AT(&m, 200, 0x400000, "/bin/other", 0x1000);
	MAP_AT(&m, 100, 0x400000, "/bin/prog", 0);
	T_EQ_INT(mach_maps_gen(&m, 100), g);
	/* ...and the parent's later maps do not reach the child. */
	T_EQ_INT(do_mmap2(&m, 100, 0x900000, 0x1000, 0, "/lib/late.so"), 0);
	MAP_AT(&m, 100, 0x900000, "/lib/late.so", 0);
	MAP_AT(&m, 200, 0x900000, NULL, 0);
	/* The rename of the parent leaves the child's name. */
	T_EQ_INT(do_comm(&m, 100, 100, "parent2", false), 0);
	t = mach_thread(&m, 200, 200);
	if (t)
		T_EQ_STR(t->comm, "child");

	/* A grandchild from the child: the child's maps at fork time. */
	T_EQ_INT(do_fork(&m, 300, 200, 300, 200), 0);
	MAP_AT(&m, 300, 0x400000, "/bin/other", 0x1000);
	MAP_AT(&m, 300, 0x7f0000, "/lib/libc.so.6", 0x2000);

	/* A pid recycled by a new fork (of a process without maps) loses
	 * the maps of its predecessor. */
	T_EQ_INT(do_fork(&m, 300, 400, 300, 400), 0);
	T(mach_find_map(&m, 300, 0x400000) == NULL);
	/* A fork whose parent is unknown starts empty. */
	T_EQ_INT(do_fork(&m, 600, 599, 600, 599), 0);
	T(mach_find_map(&m, 600, 0x400000) == NULL);
	T_EQ_INT(do_mmap2(&m, 600, 0x1000, 0x1000, 0, "/x/y"), 0);
	MAP_AT(&m, 600, 0x1000, "/x/y", 0);
	mach_free(&m);
	sym_ctx_free(sym);
}

static const char *exe_of(struct machine *m, s32 pid)
{
	const struct mach_proc *p = mach_proc_of(m, pid);

	return p ? mach_exe(p) : "(no process)";
}

#define EXE_IS(m, pid, want)                                                   \
	do {                                                                   \
		const char *_e = exe_of(m, pid);                               \
		if (!(want))                                                   \
			T_EQ_STR(_e ? _e : "NULL", "NULL");                    \
		else                                                           \
			T_EQ_STR(_e ? _e : "NULL", (want));                    \
	} while (0)

/* The program a process runs (pprof's main binary, mach_exe()). */
static void test_exe(void)
{
	struct sym_ctx *sym = new_sym();
	struct machine m;

	mach_init(&m, sym, NULL);
	/* Found running (synthesized maps, in address order, and a
	 * synthesized FORK): the lowest file map that is not a library,
	 * whatever the parent's; [vdso] and anon maps are not programs. */
	T_EQ_INT(do_mmap2(&m, 10, 0x1000, 0x1000, 0, "[vdso]"), 0);
	T_EQ_INT(do_mmap2(&m, 10, 0x2000, 0x1000, 0, "//anon"), 0);
	T_EQ_INT(do_mmap2(&m, 10, 0x55000000, 0x1000, 0, "/usr/bin/bash"), 0);
	T_EQ_INT(do_mmap2(&m, 10, 0x7f000000, 0x1000, 0, "/lib/libc.so.6"), 0);
	EXE_IS(&m, 10, "/usr/bin/bash");
	T_EQ_INT(do_fork(&m, 11, 10, 11, 10), 0);
	T_EQ_INT(do_mmap2(&m, 11, 0x7e000000, 0x1000, 0, "/lib/libz.so.1.2.13"), 0);
	T_EQ_INT(do_mmap2(&m, 11, 0x7e100000, 0x1000, 0, "/x/m.cpython-312-x86_64-linux-gnu.so"), 0);
	T_EQ_INT(do_mmap2(&m, 11, 0x7e200000, 0x1000, 0, "/x/libq.so (deleted)"), 0);
	T_EQ_INT(do_mmap2(&m, 11, 0x55000000, 0x1000, 0, "/usr/bin/python3.12"), 0);
	EXE_IS(&m, 11, "/usr/bin/python3.12");
	/* A synthesized FORK copies the parent's maps: the child's own
	 * program counts, though it lies above the parent's. A real fork of
	 * such a process runs the same program, and a jitdump mapped there
	 * does not change it. */
	T_EQ_INT(do_mmap2(&m, 30, 0x55000000, 0x1000, 0, "/usr/bin/timeout"), 0);
	T_EQ_INT(do_fork(&m, 31, 30, 31, 30), 0);
	EXE_IS(&m, 31, "/usr/bin/timeout");
	T_EQ_INT(do_mmap2(&m, 31, 0x56000000, 0x1000, 0, "/work/chain"), 0);
	T_EQ_INT(do_mmap2(&m, 31, 0x57000000, 0x1000, 0, "/work/other"), 0);
	EXE_IS(&m, 31, "/work/chain");
	T_EQ_INT(do_fork(&m, 32, 31, 32, 31), 0);
	T_EQ_INT(do_mmap2(&m, 32, 0x7e000000, 0x1000, 0, "/tmp/jit-32.dump"), 0);
	EXE_IS(&m, 32, "/work/chain");
	/* Only libraries: unknown. */
	T_EQ_INT(do_mmap2(&m, 12, 0x7f000000, 0x1000, 0, "/lib/libc.so.6"), 0);
	EXE_IS(&m, 12, NULL);

	/* An exec: the next file map is the program, wherever it lies and
	 * whatever its name; until then none (the old image's maps stay). */
	T_EQ_INT(do_comm(&m, 10, 10, "py", true), 0);
	EXE_IS(&m, 10, NULL);
	T_EQ_INT(do_mmap2(&m, 10, 0x7f500000, 0x1000, 0, "/opt/py/bin/python.so.1"), 0);
	T_EQ_INT(do_mmap2(&m, 10, 0x7f600000, 0x1000, 0, "/lib/ld-linux-x86-64.so.2"), 0);
	EXE_IS(&m, 10, "/opt/py/bin/python.so.1");
	/* A real fork runs its parent's image, and dlopen()s do not change
	 * it; a fork before the program is mapped waits for it too. */
	T_EQ_INT(do_fork(&m, 20, 10, 20, 10), 0);
	T_EQ_INT(do_mmap2(&m, 20, 0x7f700000, 0x1000, 0, "/x/plugin"), 0);
	EXE_IS(&m, 20, "/opt/py/bin/python.so.1");
	T_EQ_INT(do_comm(&m, 20, 20, "sh", true), 0);
	T_EQ_INT(do_fork(&m, 21, 20, 21, 20), 0);
	EXE_IS(&m, 21, NULL);
	T_EQ_INT(do_mmap2(&m, 21, 0x10000, 0x1000, 0, "/bin/sh"), 0);
	EXE_IS(&m, 21, "/bin/sh");
	EXE_IS(&m, 20, NULL);

	/* A Python process's subprocess: after its exec, the old image's
	 * libpython is found by lookups (samples inside execve()), but the
	 * new program does not run Python; unless it maps it again. */
	T_EQ_INT(do_mmap2(&m, 40, 0x400000, 0x1000, 0, "/usr/bin/python3.12"), 0);
	T_EQ_INT(do_mmap2(&m, 40, 0x7f100000, 0x1000, 0, "/usr/lib/libpython3.12.so.1.0"), 0);
	T(mach_proc_runs_python(&m, 40));
	T_EQ_INT(do_fork(&m, 41, 40, 41, 40), 0);
	T_EQ_INT(do_comm(&m, 41, 41, "git", true), 0);
	T(mach_proc_runs_python(&m, 41)); /* inside execve() still */
	T_EQ_INT(do_mmap2(&m, 41, 0x500000, 0x1000, 0, "/usr/bin/git"), 0);
	T(!mach_proc_runs_python(&m, 41));
	MAP_AT(&m, 41, 0x7f100000, "/usr/lib/libpython3.12.so.1.0", 0);
	T(mach_proc_runs_python(&m, 40));
	T_EQ_INT(do_fork(&m, 42, 40, 42, 40), 0);
	T_EQ_INT(do_comm(&m, 42, 42, "python3.12", true), 0);
	T_EQ_INT(do_mmap2(&m, 42, 0x400000, 0x1000, 0, "/usr/bin/python3.12"), 0);
	T_EQ_INT(do_mmap2(&m, 42, 0x7f100000, 0x1000, 0, "/usr/lib/libpython3.12.so.1.0"), 0);
	T(mach_proc_runs_python(&m, 42));
	mach_free(&m);
	sym_ctx_free(sym);
}

/* JIT lookups follow the FORK lineage (a child returns through its
 * parent's trampolines, docs/cpython-perf.md §1.5). */
static void write_file(const char *name, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	f = fopen(path, "w");
	if (!f)
		abort();
	fputs(text, f);
	fclose(f);
}

static void test_jit_lineage(void)
{
	struct sym_ctx *sym = new_sym();
	struct machine m;
	const struct jit_entry *e;

	write_file("perf-100.map", "7f0000001000 b py::main:/a.py\n"
				   "7f0000002000 10 py::shadowed:/a.py\n");
	write_file("perf-200.map", "7f0000002000 10 py::child:/a.py\n");
	mach_init(&m, sym, NULL);
	m.perf_map_dir = tmpdir;
	T_EQ_INT(do_mmap2(&m, 100, 0x7f0000000000ULL, 0x10000, 0, "//anon"), 0);
	T_EQ_INT(do_fork(&m, 200, 100, 200, 100), 0);
	T_EQ_INT(do_fork(&m, 300, 200, 300, 200), 0);

	e = mach_find_jit(&m, 100, 0x7f0000001005ULL);
	T(e && !strcmp(e->name, "py::main:/a.py"));
	e = mach_find_jit(&m, 100, 0x7f000000100bULL); /* one past the end */
	T(e == NULL);
	/* The child has only its own entries, the parent's are found by
	 * lineage; where both cover an address the child's own wins. */
	e = mach_find_jit(&m, 200, 0x7f0000001000ULL);
	T(e && !strcmp(e->name, "py::main:/a.py"));
	e = mach_find_jit(&m, 200, 0x7f000000200fULL);
	T(e && !strcmp(e->name, "py::child:/a.py"));
	e = mach_find_jit(&m, 100, 0x7f000000200fULL);
	T(e && !strcmp(e->name, "py::shadowed:/a.py"));
	/* Grandchild without a map file: two levels up. */
	e = mach_find_jit(&m, 300, 0x7f000000100aULL);
	T(e && !strcmp(e->name, "py::main:/a.py"));
	e = mach_find_jit(&m, 300, 0x7f0000002000ULL);
	T(e && !strcmp(e->name, "py::child:/a.py"));
	T(mach_find_jit(&m, 300, 0x7f0000003000ULL) == NULL);
	T(mach_find_jit(&m, 999, 0x7f0000001000ULL) == NULL);
	/* A recycled pid 200 (forked from an unknown parent) drops the
	 * old lineage and reloads its own map file. */
	T_EQ_INT(do_fork(&m, 200, 150, 200, 150), 0);
	e = mach_find_jit(&m, 200, 0x7f0000001000ULL);
	T(e == NULL);
	e = mach_find_jit(&m, 200, 0x7f0000002000ULL);
	T(e && !strcmp(e->name, "py::child:/a.py"));
	/* A child that exec'd runs a new image: its parent's map is not its
	 * own (python -I started by CPython's test suite writes none). */
	T_EQ_INT(do_fork(&m, 400, 100, 400, 100), 0);
	T(mach_proc_has_perf_map(&m, 400));
	T(mach_find_jit(&m, 400, 0x7f0000001005ULL) != NULL);
	{
		struct rec_comm c = { .pid = 400, .tid = 400, .comm = "python3.12", .exec = true };

		T_EQ_INT(mach_comm(&m, &c), 0);
	}
	T(!mach_proc_has_perf_map(&m, 400));
	T(mach_find_jit(&m, 400, 0x7f0000001005ULL) == NULL);
	T(mach_proc_has_perf_map(&m, 300)); /* no exec: still its grandparent's */
	mach_free(&m);
	sym_ctx_free(sym);
}

/*
 * EXIT changes nothing (perf keeps exited threads for samples that come
 * later in time order, thread__exited): samples of pid 100 taken
 * before and after its EXIT record still see its maps and name, and a
 * child forked before the exit keeps its copy. Through the session, on
 * a perf.data image built with tests/lib/recbuild.c.
 */
static void test_exit_session(void)
{
	static const uint64_t c1[] = { (uint64_t)-512, 0x400100 };
	PERFSPY_OPTS(perfspy_open_opts, oo, .kallsyms = "",
		     .perf_map_dir = "/nonexistent-perfspy-test");
	PERFSPY_OPTS(perfspy_convert_opts, co, .threads = true);
	struct rb d = { 0 }, img = { 0 };
	struct perf_event_attr a;
	struct perfspy_session *s;
	struct perfspy_folder *f;
	char *buf = NULL;
	size_t len = 0;
	FILE *mf;
	u32 ex[4] = { 100, 1, 100, 1 };
	u64 t = 50;

	rb_default_attr(&a);
	rb_comm(&d, 100, 100, "prog", 1, 1);
	rb_mmap2(&d, 100, 0x400000, 0x1000, 0, "/nonexistent/a", 2);
	rb_fork(&d, 200, 100, 200, 100, 3);
	rb_sample(&d, 100, 100, 40, c1, 2, 1);
	{
		/* EXIT: pid, ppid, tid, ptid, time, then the sample_id. */
		u8 p[24 + 16];
		u32 sid[2] = { 100, 100 };

		memcpy(p, ex, 16);
		memcpy(p + 16, &t, 8);
		memcpy(p + 24, sid, 8);
		memcpy(p + 32, &t, 8);
		rb_raw(&d, PERF_RECORD_EXIT, 0, p, sizeof(p));
	}
	rb_sample(&d, 100, 100, 60, c1, 2, 1);
	rb_sample(&d, 200, 200, 61, c1, 2, 1);
	rb_round(&d);
	rb_file(&img, &a, sizeof(a) + 16, &d, "h");
	T_EQ_INT(perfspy_session__open_mem(img.p, img.len, &oo, &s), 0);
	if (perfspy_folder__new(&f))
		abort();
	T_EQ_INT(perfspy_session__convert(s, &co, f), 0);
	mf = open_memstream(&buf, &len);
	if (!mf)
		abort();
	perfspy_folder__write(f, mf, NULL);
	fclose(mf);
	T_EQ_STR(buf, "thread (100): prog;0x400100 (a) 2\n"
		      "thread (200): prog;0x400100 (a) 1\n");
	free(buf);
	perfspy_folder__free(f);
	perfspy_session__close(s);
	rb_free(&d);
	rb_free(&img);
}

int main(void)
{
	char cmd[128];

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/perfspy-tmach-XXXXXX");
	if (!mkdtemp(tmpdir)) {
		fprintf(stderr, "skip: no temporary directory\n");
		return 77;
	}
	test_map_overlap();
	test_map_repeat();
	test_map_many();
	test_map_kinds();
	test_threads();
	test_fork();
	test_exe();
	test_jit_lineage();
	test_exit_session();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd))
		fprintf(stderr, "could not remove %s\n", tmpdir);
	TEST_MAIN_END();
}
