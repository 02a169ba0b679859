// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests for libconv/frames/jit.c: perf maps, jitdumps and their CFI.
 *
 * Real files written by CPython 3.12.1 (-X perf) and 3.13.0 (-X perf,
 * -X perf_jit) sit in tests/unit/fixtures/jit/ (README there). Expected
 * values for them come from independent readers written here (line split
 * with strtoull, a record walker), not from the code under test; the CFI
 * expectation is what readelf --debug-dump=frames-interp prints for the
 * dump's .eh_frame (docs/cpython-perf.md §1.7). Synthetic
 * inputs cover names, malformed lines, overlaps (checked against a naive
 * "last entry containing addr" oracle), every jitdump record type, the CFA
 * opcodes, every truncation offset and random byte flips. Exit 77 when the
 * fixtures are missing.
 */
#include "frames/jit.h"
#include "perfspy.h"
#include "test.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define FIXDIR_REL "fixtures/jit"

static char fixdir[4096];

/* ---- helpers ---- */

struct log_cap {
	int n[4];
	char last[4][512];
};

static void log_fn(void *ctx, int level, const char *msg)
{
	struct log_cap *c = ctx;

	if (level < 0 || level > 3)
		return;
	c->n[level]++;
	snprintf(c->last[level], sizeof(c->last[level]), "%s", msg);
}

static struct log_sink sink_for(struct log_cap *c)
{
	memset(c, 0, sizeof(*c));
	return (struct log_sink){ .fn = log_fn, .ctx = c, .level = LOG_DEBUG };
}

/* The fixtures sit beside this source file; PERFSPY_SRCDIR overrides. */
static int find_fixdir(void)
{
	const char *src = getenv("PERFSPY_SRCDIR");
	const char *slash = strrchr(__FILE__, '/');
	char probe[4200];

	if (src)
		snprintf(fixdir, sizeof(fixdir), "%s/tests/unit/" FIXDIR_REL, src);
	else if (slash)
		snprintf(fixdir, sizeof(fixdir), "%.*s/" FIXDIR_REL,
			 (int)(slash - __FILE__), __FILE__);
	else
		snprintf(fixdir, sizeof(fixdir), FIXDIR_REL);
	snprintf(probe, sizeof(probe), "%s/py313-perf_jit.dump", fixdir);
	return access(probe, R_OK);
}

static u8 *load(const char *name, size_t *len)
{
	char path[4300];
	u8 *buf;
	long n;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", fixdir, name);
	f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = malloc(n > 0 ? (size_t)n : 1);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static struct jit_map *map_of_text(const char *text)
{
	struct jit_map *m;

	if (jit_map_new(&m))
		return NULL;
	T_EQ_INT(jit_map_add_perf_map(m, text, strlen(text), NULL), 0);
	return m;
}

static const char *name_at(const struct jit_map *m, u64 addr)
{
	const struct jit_entry *e = jit_map_find(m, addr);

	return e ? e->name : "(none)";
}

static u64 rng_state = 0x9e3779b97f4a7c15ULL;

static u64 rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* A byte builder for synthetic jitdumps and .eh_frames. */
struct bb {
	u8 b[8192];
	size_t n;
};

static void put(struct bb *b, const void *p, size_t n)
{
	if (n && b->n + n <= sizeof(b->b)) {
		memcpy(b->b + b->n, p, n);
		b->n += n;
	}
}

static void put8(struct bb *b, u8 v) { put(b, &v, 1); }
static void put32(struct bb *b, u32 v) { put(b, &v, 4); }
static void put64(struct bb *b, u64 v) { put(b, &v, 8); }
static void set32(struct bb *b, size_t at, u32 v) { memcpy(b->b + at, &v, 4); }

static void jd_hdr(struct bb *b, u32 magic, u32 version, u32 size)
{
	b->n = 0;
	put32(b, magic);
	put32(b, version);
	put32(b, size);
	put32(b, 62);	      /* elf_mach: not checked */
	put32(b, 0x1a1a1a1a); /* pad: uninitialised in CPython 3.13.0 */
	put32(b, 4242);
	put64(b, 123456);
	put64(b, 0);
	while (b->n < size)
		put8(b, 0);
}

static size_t rec_begin(struct bb *b, u32 id)
{
	size_t at = b->n;

	put32(b, id);
	put32(b, 0);
	put64(b, 1000 + at);
	return at;
}

static void rec_end(struct bb *b, size_t at)
{
	while ((b->n - at) % 8)
		put8(b, 0);
	set32(b, at + 4, (u32)(b->n - at));
}

static void jd_load(struct bb *b, u64 addr, u64 size, u64 index, const char *name)
{
	size_t at = rec_begin(b, 0);

	put32(b, 4242);
	put32(b, 4243);
	put64(b, addr);
	put64(b, addr);
	put64(b, size);
	put64(b, index);
	put(b, name, strlen(name) + 1);
	for (u64 i = 0; i < size && i < 64; i++)
		put8(b, 0xcc);
	rec_end(b, at);
}

static void jd_unwind(struct bb *b, const struct bb *eh)
{
	size_t at = rec_begin(b, 4);
	u8 hdr[20] = { 1, 0x1b, 3, 0x3b };

	put64(b, eh->n + sizeof(hdr));
	put64(b, sizeof(hdr));
	put64(b, ALIGN8(eh->n + sizeof(hdr)));
	put(b, eh->b, eh->n);
	put(b, hdr, sizeof(hdr));
	rec_end(b, at);
}

static void jd_move(struct bb *b, u64 old, u64 new, u64 size, u64 index)
{
	size_t at = rec_begin(b, 1);

	put32(b, 4242);
	put32(b, 4243);
	put64(b, new);
	put64(b, old);
	put64(b, new);
	put64(b, size);
	put64(b, index);
	rec_end(b, at);
}

/*
 * An .eh_frame with one CIE and one FDE, laid out as CPython 3.13.0 does:
 * augmentation "zR", pcrel|sdata4, code align 1, data align -8, RA 16,
 * unless @aug says otherwise. @cie/@fde are the instruction bytes.
 */
struct eh_spec {
	const char *aug; /* NULL: "zR" */
	u8 version;	 /* 0: 1 */
	const u8 *aug_data;
	size_t aug_len;
	const u8 *cie, *fde;
	size_t cie_n, fde_n;
	u32 range;
	bool absptr; /* 8-byte pc_begin/range (no 'R') */
	const u8 *fde_aug;
	size_t fde_aug_len;
};

static void eh_build(struct bb *b, const struct eh_spec *s)
{
	const char *aug = s->aug ? s->aug : "zR";
	u8 r_enc = 0x1b;
	size_t at, fde_at;

	b->n = 0;
	at = b->n;
	put32(b, 0);
	put32(b, 0); /* CIE id */
	put8(b, s->version ? s->version : 1);
	put(b, aug, strlen(aug) + 1);
	put8(b, 1);    /* code align */
	put8(b, 0x78); /* data align -8 */
	if (s->version == 3)
		put(b, "\x90\x00", 2); /* uleb 16, padded */
	else
		put8(b, 16);
	if (s->aug_data) {
		put8(b, (u8)s->aug_len);
		put(b, s->aug_data, s->aug_len);
	} else if (aug[0] == 'z') {
		put8(b, 1);
		put8(b, r_enc);
	}
	put(b, s->cie, s->cie_n);
	while ((b->n - at) % 4)
		put8(b, 0);
	set32(b, at, (u32)(b->n - at - 4));
	fde_at = b->n;
	put32(b, 0);
	put32(b, (u32)(b->n - at)); /* CIE pointer: back to the CIE */
	if (s->absptr) {
		put64(b, 0x1000);
		put64(b, s->range);
	} else {
		put32(b, (u32)-48);
		put32(b, s->range);
	}
	if (aug[0] == 'z') {
		put8(b, (u8)s->fde_aug_len);
		put(b, s->fde_aug, s->fde_aug_len);
	}
	put(b, s->fde, s->fde_n);
	while ((b->n - fde_at) % 4)
		put8(b, 0);
	set32(b, fde_at, (u32)(b->n - fde_at - 4));
}

/* CPython 3.13.0's x86-64 CIE instructions: def_cfa rsp+8; rip at cfa-8. */
static const u8 cie_x86[] = { 0x0c, 0x07, 0x08, 0x90, 0x01 };

static struct jit_map *map_of_dump(const struct bb *b, int want)
{
	struct jit_map *m;

	if (jit_map_new(&m))
		return NULL;
	T_EQ_INT(jit_map_add_jitdump(m, b->b, b->n, NULL), want);
	return m;
}

static bool row_is(const struct jit_cfi_row *r, u32 s, u32 e, u8 reg, s32 off,
		   s32 ra, bool fp, s32 fp_off)
{
	bool ok = r->start == s && r->end == e && r->cfa_reg == reg &&
		  r->cfa_off == off && r->ra_off == ra && r->fp_saved == fp &&
		  (!fp || r->fp_off == fp_off);

	if (!ok)
		fprintf(stderr, "  row [%u,%u) r%u%+d ra%+d fp %d%+d\n", r->start,
			r->end, r->cfa_reg, r->cfa_off, r->ra_off, r->fp_saved, r->fp_off);
	return ok;
}

/* Rows must start at 0, be contiguous and end at most at @size. */
static bool rows_sane(const struct jit_entry *e)
{
	u32 at = 0;

	for (u32 i = 0; i < e->nr_cfi; i++) {
		if (e->cfi[i].start != at || e->cfi[i].end <= at)
			return false;
		at = e->cfi[i].end;
	}
	return !e->nr_cfi || at <= e->size;
}

/* ---- perf maps ---- */

static void test_perf_map_lines(void)
{
	static const char text[] =
		"1000 10 py::Klass.meth:/path with space/x.py\n"
		"1010 0x10 py::_find_and_load:<frozen importlib._bootstrap>\n"
		"0x1020 10 py::\xc3\x9cnicode.m\xc3\xa9thode:/tmp/\xc3\xbc.py\n"
		"1030 b py::g:evil\n"
		"name.py\n"		     /* tail of a filename with '\n' */
		"\n"
		"zz 10 py::bad:hex\n"
		"1040 10\n"		     /* two fields */
		"1040 10 \n"		     /* empty name */
		"1040  10 py::two:spaces\n"  /* an empty SIZE field */
		"10000000000000000 1 py::too:big\n"
		"1050 1g py::bad:size\n"
		"0x 1 py::no:digits\n"
		"ABC0 8 py::UPPER:case.py\n"
		"1060 10 py::crlf:x.py\r\n"
		"1070 10 py::<module>:<string>"; /* partial last line */
	struct log_cap lc;
	struct log_sink log = sink_for(&lc);
	struct jit_map *m;
	const struct jit_entry *e;

	T(!jit_map_new(&m));
	T_EQ_INT(jit_map_add_perf_map(m, text, sizeof(text) - 1, &log), 0);
	T_EQ_INT(jit_map_size(m), 7);
	T_EQ_STR(name_at(m, 0x1000), "py::Klass.meth:/path with space/x.py");
	T_EQ_STR(name_at(m, 0x1010), "py::_find_and_load:<frozen importlib._bootstrap>");
	T_EQ_STR(name_at(m, 0x102f), "py::\xc3\x9cnicode.m\xc3\xa9thode:/tmp/\xc3\xbc.py");
	T_EQ_STR(name_at(m, 0x103a), "py::g:evil");
	T_EQ_STR(name_at(m, 0x103b), "(none)");
	T_EQ_STR(name_at(m, 0xabc7), "py::UPPER:case.py");
	T_EQ_STR(name_at(m, 0x1060), "py::crlf:x.py");
	T_EQ_STR(name_at(m, 0x1070), "py::<module>:<string>");
	e = jit_map_entry(m, 0);
	T(e && e->start == 0x1000 && e->size == 0x10 && !e->cfi && !e->nr_cfi);
	T(jit_map_entry(m, 6) && !jit_map_entry(m, 7));
	T_EQ_STR(jit_map_entry(m, 6)->name, "py::<module>:<string>");
	T_EQ_INT(lc.n[LOG_WARN], 0);
	T_EQ_INT(lc.n[LOG_DEBUG], 1);
	T(strstr(lc.last[LOG_DEBUG], "skipped 9 malformed") != NULL);
	jit_map_free(m);

	/* A partial last line lacking its name is dropped. */
	m = map_of_text("2000 10 py::a:a.py\n2010 10");
	T_EQ_INT(jit_map_size(m), 1);
	jit_map_free(m);
	m = map_of_text("");
	T_EQ_INT(jit_map_size(m), 0);
	T(!jit_map_find(m, 0));
	jit_map_free(m);
	T(!jit_map_new(&m));
	T_EQ_INT(jit_map_add_perf_map(m, NULL, 0, NULL), 0);
	jit_map_free(m);
	T(!jit_map_find(NULL, 1));
	T_EQ_INT(jit_map_size(NULL), 0);
	T(!jit_map_entry(NULL, 0));
	jit_map_free(NULL);
}

static void test_lookup_bounds(void)
{
	struct jit_map *m = map_of_text("1000 10 A\n1010 8 B\n1020 0 Z\n"
					"ffffffffffffff00 100 TOP\n");

	T_EQ_STR(name_at(m, 0xfff), "(none)");
	T_EQ_STR(name_at(m, 0x1000), "A");
	T_EQ_STR(name_at(m, 0x100f), "A");
	T_EQ_STR(name_at(m, 0x1010), "B"); /* A's end is B's start */
	T_EQ_STR(name_at(m, 0x1017), "B");
	T_EQ_STR(name_at(m, 0x1018), "(none)");
	T_EQ_STR(name_at(m, 0x1020), "(none)"); /* size 0 covers nothing */
	T_EQ_INT(jit_map_size(m), 4);
	T_EQ_STR(name_at(m, 0xffffffffffffff00ULL), "TOP");
	T_EQ_STR(name_at(m, 0xfffffffffffffffeULL), "TOP"); /* clipped at 2^64 */
	T_EQ_STR(name_at(m, 0), "(none)");
	jit_map_free(m);
}

static void test_overlap(void)
{
	struct jit_map *m = map_of_text(
		"1000 100 old\n"   /* a reused PID's file: old lines first */
		"1040 20 mid\n"
		"1000 100 new\n"   /* same range written again: wins */
		"1080 8 inner\n"
		"10f0 20 tail\n");

	T_EQ_STR(name_at(m, 0x1000), "new");
	T_EQ_STR(name_at(m, 0x1040), "new");
	T_EQ_STR(name_at(m, 0x1080), "inner");
	T_EQ_STR(name_at(m, 0x1087), "inner");
	T_EQ_STR(name_at(m, 0x1088), "new");
	T_EQ_STR(name_at(m, 0x10f0), "tail");
	T_EQ_STR(name_at(m, 0x110f), "tail");
	T_EQ_STR(name_at(m, 0x1110), "(none)");
	T_EQ_INT(jit_map_size(m), 5);
	/* The found entry keeps its own whole range. */
	T(jit_map_find(m, 0x1088)->start == 0x1000 && jit_map_find(m, 0x1088)->size == 0x100);
	/* A later add call wins over earlier ones. */
	T_EQ_INT(jit_map_add_perf_map(m, "1084 2 later\n", 13, NULL), 0);
	T_EQ_STR(name_at(m, 0x1083), "inner");
	T_EQ_STR(name_at(m, 0x1084), "later");
	T_EQ_STR(name_at(m, 0x1086), "inner");
	jit_map_free(m);
}

/* Random overlapping entries against a naive last-containing oracle. */
static void test_overlap_oracle(void)
{
	enum { SPACE = 300, MAXN = 60 };
	u64 st[2 * MAXN], sz[2 * MAXN];
	char text[MAXN * 32], *p;
	int bad = 0;

	for (int round = 0; round < 300; round++) {
		struct jit_map *m;
		int n = 1 + (int)(rnd() % MAXN), n2 = (int)(rnd() % 4);

		T(!jit_map_new(&m));
		for (int part = 0, base = 0; part < 2; part++) {
			int cnt = part ? n2 : n;

			p = text;
			for (int i = 0; i < cnt; i++) {
				st[base + i] = rnd() % SPACE;
				sz[base + i] = rnd() % 5 ? rnd() % 40 : 0;
				p += sprintf(p, "%llx %llx e%d\n",
					     (unsigned long long)st[base + i],
					     (unsigned long long)sz[base + i], base + i);
			}
			T_EQ_INT(jit_map_add_perf_map(m, text, (size_t)(p - text), NULL), 0);
			base += cnt;
		}
		for (u64 a = 0; a < SPACE + 50; a++) {
			const struct jit_entry *e = jit_map_find(m, a);
			int want = -1;
			char wname[16];

			for (int i = 0; i < n + n2; i++)
				if (a >= st[i] && a < st[i] + sz[i])
					want = i;
			snprintf(wname, sizeof(wname), "e%d", want);
			if (want < 0 ? e != NULL : !e || strcmp(e->name, wname))
				bad++;
		}
		jit_map_free(m);
	}
	T_EQ_INT(bad, 0);
}

/* Check a real perf map against an independent line reader. */
static void check_real_map(const char *fname, const char *must_have)
{
	size_t len, lines = 0, ok = 0;
	char *buf = (char *)load(fname, &len), *line, *save = NULL, *end;
	struct jit_map *m;
	bool seen = false;

	T(buf != NULL);
	if (!buf)
		return;
	T(!jit_map_new(&m));
	T_EQ_INT(jit_map_add_perf_map(m, buf, len, NULL), 0);
	for (size_t i = 0; i < len; i++)
		lines += buf[i] == '\n';
	T_EQ_INT(jit_map_size(m), lines); /* CPython wrote only valid lines */
	buf = realloc(buf, len + 1);
	buf[len] = 0;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		u64 start = strtoull(line, &end, 16), size = strtoull(end + 1, &end, 16);
		const struct jit_entry *e = jit_map_find(m, start);
		const struct jit_entry *l = jit_map_find(m, start + size - 1);

		ok += e && e->start == start && e->size == size &&
		      !strcmp(e->name, end + 1) && l == e;
		seen |= !strcmp(end + 1, must_have);
	}
	T_EQ_INT(ok, lines);
	T(seen);
	free(buf);
	jit_map_free(m);
}

static void test_real_maps(void)
{
	check_real_map("py312-perf.map", "py::odd:dir with space/we:ird <file>.py");
	check_real_map("py313-perf.map", "py::_find_and_load:<frozen importlib._bootstrap>");
}

/* Every prefix of a map: no crash, entry count never goes down. */
static void test_map_prefixes(void)
{
	size_t len, prev = 0;
	u8 *buf = load("py313-perf.map", &len);
	int bad = 0;

	T(buf != NULL);
	for (size_t cut = 0; buf && cut <= len; cut++) {
		char *copy = malloc(cut ? cut : 1);
		struct jit_map *m;

		memcpy(copy, buf, cut);
		T(!jit_map_new(&m));
		bad += jit_map_add_perf_map(m, copy, cut, NULL) != 0;
		bad += jit_map_size(m) < prev;
		prev = jit_map_size(m);
		jit_map_free(m);
		free(copy);
	}
	T_EQ_INT(bad, 0);
	free(buf);
}

/* ---- jitdump ---- */

struct load_rec {
	u64 addr, size;
	const char *name;
};

/* An independent record walker: the CODE_LOADs of a native-endian dump. */
static size_t walk_loads(const u8 *d, size_t len, struct load_rec *out, size_t max)
{
	size_t off, n = 0;
	u32 id, size;

	memcpy(&size, d + 8, 4);
	for (off = size; off + 16 <= len; off += size) {
		memcpy(&id, d + off, 4);
		memcpy(&size, d + off + 4, 4);
		if (size < 16 || size > len - off)
			break;
		if (id == 0 && n < max) {
			memcpy(&out[n].addr, d + off + 32, 8);
			memcpy(&out[n].size, d + off + 40, 8);
			out[n++].name = (const char *)d + off + 56;
		}
	}
	return n;
}

static void test_real_dump(void)
{
	struct load_rec recs[512];
	size_t len, n, ok = 0, cfi_ok = 0;
	u8 *buf = load("py313-perf_jit.dump", &len);
	struct jit_map *m;

	T(buf != NULL);
	if (!buf)
		return;
	n = walk_loads(buf, len, recs, 512);
	T_EQ_INT(n, 70);
	T(!jit_map_new(&m));
	T_EQ_INT(jit_map_add_jitdump(m, buf, len, NULL), 0);
	T_EQ_INT(jit_map_size(m), n);
	for (size_t i = 0; i < n; i++) {
		const struct jit_entry *e = jit_map_find(m, recs[i].addr);

		if (!e || e->start != recs[i].addr || e->size != recs[i].size ||
		    strcmp(e->name, recs[i].name) ||
		    jit_map_find(m, recs[i].addr + recs[i].size - 1) != e)
			continue;
		ok++;
		/* readelf: LOC 0 rsp+8, 4 rsp+16, a rsp+8; ra at c-8. */
		cfi_ok += e->size == 11 && e->nr_cfi == 3 &&
			  row_is(&e->cfi[0], 0, 4, 7, 8, -8, false, 0) &&
			  row_is(&e->cfi[1], 4, 10, 7, 16, -8, false, 0) &&
			  row_is(&e->cfi[2], 10, 11, 7, 8, -8, false, 0);
	}
	T_EQ_INT(ok, n);
	T_EQ_INT(cfi_ok, n);
	T_EQ_STR(jit_map_entry(m, 0)->name, "py::_find_and_load:<frozen importlib._bootstrap>");
	/* 3.13.0 pads every perf_jit trampoline to a 0x110 stride (§1.4). */
	T(n > 2 && recs[1].addr - recs[0].addr == 0x110);
	T(jit_map_find(m, recs[0].addr + 11) == NULL);
	jit_map_free(m);
	free(buf);
}

/* Cut the dump at every offset: complete records only, count monotonic. */
static void test_dump_truncation(void)
{
	size_t len, prev = 0;
	u8 *buf = load("py313-perf_jit.dump", &len);
	struct log_cap lc;
	struct log_sink log = sink_for(&lc);
	int bad = 0, notes = 0;

	T(buf != NULL);
	for (size_t cut = 0; buf && cut <= len; cut++) {
		u8 *copy = malloc(cut ? cut : 1); /* exact size: valgrind sees overreads */
		struct jit_map *m;
		struct load_rec recs[512];
		size_t want;

		memcpy(copy, buf, cut);
		lc.n[LOG_DEBUG] = 0;
		T(!jit_map_new(&m));
		bad += jit_map_add_jitdump(m, copy, cut, &log) != 0;
		want = cut >= 40 ? walk_loads(copy, cut, recs, 512) : 0;
		bad += jit_map_size(m) != want || jit_map_size(m) < prev;
		for (size_t i = 0; i < jit_map_size(m); i++)
			bad += jit_map_entry(m, i)->nr_cfi != 3;
		notes += cut < len && lc.n[LOG_DEBUG] > 0;
		prev = jit_map_size(m);
		jit_map_free(m);
		free(copy);
	}
	T_EQ_INT(bad, 0);
	T_EQ_INT(prev, 70);
	/* Every cut except the ones between records is noted. */
	T(notes > (int)len - 200);
	/* A cut at a 4 KiB boundary (os._exit with stdio buffers, §1.5). */
	if (buf) {
		struct jit_map *m;

		lc.n[LOG_DEBUG] = 0;
		T(!jit_map_new(&m));
		T_EQ_INT(jit_map_add_jitdump(m, buf, 8192, &log), 0);
		T(jit_map_size(m) > 30 && jit_map_size(m) < 70);
		T_EQ_INT(lc.n[LOG_WARN], 0);
		T(strstr(lc.last[LOG_DEBUG], "truncated at offset") != NULL);
		jit_map_free(m);
	}
	free(buf);
}

static void flip_and_parse(const u8 *orig, size_t len, bool dump, size_t lo, size_t hi,
			   int rounds, int *bad)
{
	u8 *copy = malloc(len);

	for (int r = 0; r < rounds; r++) {
		struct jit_map *m;
		int flips = 1 + (int)(rnd() % 8), err;

		memcpy(copy, orig, len);
		for (int i = 0; i < flips; i++)
			copy[lo + rnd() % (hi - lo)] ^= (u8)(1 + rnd() % 255);
		T(!jit_map_new(&m));
		err = dump ? jit_map_add_jitdump(m, copy, len, NULL)
			   : jit_map_add_perf_map(m, (char *)copy, len, NULL);
		*bad += err > 0 || err == -ENOMEM;
		for (size_t i = 0; i < jit_map_size(m); i++) {
			const struct jit_entry *e = jit_map_entry(m, i);
			const struct jit_entry *f = jit_map_find(m, e->start);

			*bad += !rows_sane(e) || (e->size && !f) || !e->name;
		}
		jit_map_free(m);
	}
	free(copy);
}

static void test_byte_flips(void)
{
	size_t dl, ml;
	u8 *dump = load("py313-perf_jit.dump", &dl), *map = load("py312-perf.map", &ml);
	int bad = 0;

	T(dump && map);
	if (dump && map) {
		flip_and_parse(dump, dl, true, 0, dl, 1500, &bad);
		flip_and_parse(dump, dl, true, 0x28, 0x98, 1500, &bad); /* unwind record */
		flip_and_parse(dump, dl, true, 0x50, 0x80, 1500, &bad); /* .eh_frame */
		flip_and_parse(map, ml, false, 0, ml, 500, &bad);
	}
	T_EQ_INT(bad, 0);
	free(dump);
	free(map);
}

static void test_dump_header(void)
{
	struct bb b;
	struct log_cap lc;
	struct log_sink log = sink_for(&lc);
	struct jit_map *m;

	T(!jit_map_new(&m));
	jd_hdr(&b, 0x4454694A, 1, 40);
	T_EQ_INT(jit_map_add_jitdump(m, b.b, b.n, &log), -PERFSPY_E_ENDIAN);
	T(strstr(lc.last[LOG_WARN], "other byte order") != NULL);
	jd_hdr(&b, 0x12345678, 1, 40);
	T_EQ_INT(jit_map_add_jitdump(m, b.b, b.n, &log), -PERFSPY_E_FORMAT);
	T_EQ_INT(jit_map_add_jitdump(m, "ELF", 3, &log), -PERFSPY_E_FORMAT);
	jd_hdr(&b, 0x4A695444, 2, 40);
	T_EQ_INT(jit_map_add_jitdump(m, b.b, b.n, &log), -PERFSPY_E_UNSUPPORTED);
	jd_hdr(&b, 0x4A695444, 1, 39);
	T_EQ_INT(jit_map_add_jitdump(m, b.b, b.n, &log), -PERFSPY_E_FORMAT);
	/* Cut inside the header: nothing, and only a debug note. */
	T_EQ_INT(jit_map_add_jitdump(m, NULL, 0, &log), 0);
	T_EQ_INT(jit_map_add_jitdump(m, b.b, 2, &log), 0);
	jd_hdr(&b, 0x4A695444, 1, 40);
	T_EQ_INT(jit_map_add_jitdump(m, b.b, 39, &log), 0);
	jd_hdr(&b, 0x4A695444, 1, 64); /* a longer header is skipped */
	T_EQ_INT(jit_map_add_jitdump(m, b.b, 50, &log), 0);
	jd_load(&b, 0x5000, 16, 1, "py::after:long.py");
	T_EQ_INT(jit_map_add_jitdump(m, b.b, b.n, &log), 0);
	T_EQ_STR(name_at(m, 0x500f), "py::after:long.py");
	T_EQ_INT(jit_map_size(m), 1);
	jit_map_free(m);
}

static void test_dump_records(void)
{
	struct bb b, eh;
	struct log_cap lc;
	struct log_sink log = sink_for(&lc);
	struct jit_map *m;
	size_t at;
	u8 fde[] = { 0x44, 0x0e, 0x10, 0x46, 0x0e, 0x08 };

	eh_build(&eh, &(struct eh_spec){ .cie = cie_x86, .cie_n = sizeof(cie_x86),
					 .fde = fde, .fde_n = sizeof(fde), .range = 11 });
	jd_hdr(&b, 0x4A695444, 1, 40);
	jd_load(&b, 0x1000, 11, 1, "py::nocfi:a.py");     /* no unwind info */
	jd_unwind(&b, &eh);
	jd_unwind(&b, &eh);                                /* the last one counts */
	jd_load(&b, 0x2000, 11, 2, "py::cfi:a.py");
	jd_load(&b, 0x3000, 11, 3, "py::consumed:a.py");   /* info used once */
	at = rec_begin(&b, 2);                             /* DEBUG_INFO: skipped */
	put64(&b, 0x2000);
	put64(&b, 0);
	rec_end(&b, at);
	at = rec_begin(&b, 77);                            /* unknown: skipped */
	put64(&b, 1);
	rec_end(&b, at);
	jd_move(&b, 0x2000, 0x8000, 11, 2);                /* MOVE: skipped */
	at = rec_begin(&b, 0);                             /* name without NUL */
	put(&b, "12345678901234567890123456789012345678901234567890", 48);
	set32(&b, at + 4, (u32)(b.n - at));
	at = rec_begin(&b, 3);                             /* CLOSE */
	rec_end(&b, at);
	jd_load(&b, 0x4000, 0, 4, "py::empty:a.py");
	at = b.n;
	jd_load(&b, 0x6000, 16, 5, "py::lost:a.py");
	set32(&b, at + 4, 8);                              /* impossible size */
	jd_load(&b, 0x7000, 16, 6, "py::after:a.py");

	T(!jit_map_new(&m));
	T_EQ_INT(jit_map_add_jitdump(m, b.b, b.n, &log), 0);
	T_EQ_INT(jit_map_size(m), 4); /* the loads */
	T(jit_map_find(m, 0x1000) && !jit_map_find(m, 0x1000)->cfi);
	T(jit_map_find(m, 0x2000) && jit_map_find(m, 0x2000)->nr_cfi == 3);
	T(jit_map_find(m, 0x3000) && !jit_map_find(m, 0x3000)->cfi);
	T_EQ_STR(name_at(m, 0x8000), "(none)");
	T_EQ_STR(name_at(m, 0x2000), "py::cfi:a.py");
	T_EQ_STR(name_at(m, 0x4000), "(none)");
	T_EQ_STR(name_at(m, 0x6000), "(none)");
	T_EQ_STR(name_at(m, 0x7000), "(none)");
	T_EQ_INT(lc.n[LOG_WARN], 1);
	T(strstr(lc.last[LOG_WARN], "record size 8") != NULL);
	T_EQ_INT(lc.n[LOG_ERROR], 0);

	/* A perf map added later wins over the dump where they overlap. */
	T_EQ_INT(jit_map_add_perf_map(m, "2004 2 py::map:m.py\n", 20, NULL), 0);
	T_EQ_STR(name_at(m, 0x2003), "py::cfi:a.py");
	T_EQ_STR(name_at(m, 0x2004), "py::map:m.py");
	jit_map_free(m);
}

/* Decode one synthetic FDE for a load of @size bytes. */
static const struct jit_entry *cfi_of(struct jit_map **m, const struct eh_spec *s,
				      u64 size)
{
	struct bb b, eh;

	eh_build(&eh, s);
	jd_hdr(&b, 0x4A695444, 1, 40);
	jd_unwind(&b, &eh);
	jd_load(&b, 0x10000, size, 1, "py::f:f.py");
	*m = map_of_dump(&b, 0);
	return *m ? jit_map_find(*m, 0x10000) : NULL;
}

static void test_cfi_ops(void)
{
	struct jit_map *m;
	const struct jit_entry *e;
	/* The x86-64 "push" trampoline (docs/cpython-perf.md §1.7): push rbp; mov
	 * rsp,rbp; call *rcx; pop rbp; ret. */
	static const u8 push[] = { 0x41, 0x0e, 0x10, 0x86, 0x02, 0x43, 0x0d, 0x06,
				   0x43, 0x0c, 0x07, 0x08, 0xc6 };
	/* advance_loc1/2/4, remember/restore, offset_extended_sf,
	 * offset_extended, def_cfa_sf, GNU_args_size, nops. */
	static const u8 many[] = { 0x02, 0x10, 0x0a, 0x0e, 0x20, 0x11, 0x06, 0x02,
				   0x03, 0x00, 0x01, 0x0b, 0x2e, 0x08, 0x04, 0x00,
				   0x00, 0x01, 0x00, 0x05, 0x06, 0x03, 0x41, 0x12,
				   0x06, 0x7e, 0x00, 0x00 };
	static const u8 fde_x86[] = { 0x44, 0x0e, 0x10, 0x46, 0x0e, 0x08 };

	e = cfi_of(&m, &(struct eh_spec){ .cie = cie_x86, .cie_n = sizeof(cie_x86),
					  .fde = push, .fde_n = sizeof(push), .range = 8 }, 8);
	T(e && e->nr_cfi == 4);
	if (e && e->nr_cfi == 4) {
		T(row_is(&e->cfi[0], 0, 1, 7, 8, -8, false, 0));
		T(row_is(&e->cfi[1], 1, 4, 7, 16, -8, true, -16));
		T(row_is(&e->cfi[2], 4, 7, 6, 16, -8, true, -16));
		T(row_is(&e->cfi[3], 7, 8, 7, 8, -8, false, 0));
	}
	jit_map_free(m);

	e = cfi_of(&m, &(struct eh_spec){ .cie = cie_x86, .cie_n = sizeof(cie_x86),
					  .fde = many, .fde_n = sizeof(many),
					  .range = 0x20000 }, 0x30000);
	T(e && e->nr_cfi == 5);
	if (e && e->nr_cfi == 5) {
		T(row_is(&e->cfi[0], 0, 0x10, 7, 8, -8, false, 0));
		T(row_is(&e->cfi[1], 0x10, 0x110, 7, 32, -8, true, -16));
		T(row_is(&e->cfi[2], 0x110, 0x10110, 7, 8, -8, false, 0));
		T(row_is(&e->cfi[3], 0x10110, 0x10111, 7, 8, -8, true, -24));
		T(row_is(&e->cfi[4], 0x10111, 0x20000, 6, 16, -8, true, -24));
	}
	jit_map_free(m);

	/* FDE range longer than the code: clipped to the code size. */
	e = cfi_of(&m, &(struct eh_spec){ .cie = cie_x86, .cie_n = sizeof(cie_x86),
					  .fde = fde_x86, .fde_n = sizeof(fde_x86),
					  .range = 100 }, 6);
	T(e && e->nr_cfi == 2 && e->cfi[1].end == 6);
	jit_map_free(m);

}

static void test_cfi_refused(void)
{
	struct jit_map *m;
	const struct jit_entry *e;
	static const u8 expr[] = { 0x41, 0x0f, 0x02, 0x77, 0x08 };
	static const u8 regrule[] = { 0x41, 0x09, 0x10, 0x00 };
	static const u8 badop[] = { 0x41, 0x3f };
	static const u8 underflow[] = { 0x41, 0x0b };
	static const u8 setloc[] = { 0x01, 0x05, 0x10, 0, 0, 0, 0, 0, 0, 0x0e, 0x10 };
	static const u8 fde_x86[] = { 0x44, 0x0e, 0x10, 0x46, 0x0e, 0x08 };

	/* What a row cannot express drops the whole CFI, not the entry. */
	const u8 *bad[] = { expr, regrule, badop, underflow, setloc };
	size_t badn[] = { sizeof(expr), sizeof(regrule), sizeof(badop), sizeof(underflow),
			  sizeof(setloc) };

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		e = cfi_of(&m, &(struct eh_spec){ .cie = cie_x86, .cie_n = sizeof(cie_x86),
						  .fde = bad[i], .fde_n = badn[i],
						  .range = 11 }, 11);
		T(e && !e->cfi && !e->nr_cfi && !strcmp(e->name, "py::f:f.py"));
		jit_map_free(m);
	}
	/* No CFA rule at all. */
	e = cfi_of(&m, &(struct eh_spec){ .cie = cie_x86 + 3, .cie_n = 2,
					  .fde = fde_x86, .fde_n = 6, .range = 11 }, 11);
	T(e && !e->cfi);
	jit_map_free(m);

}

static void test_cfi_cie(void)
{
	struct jit_map *m;
	const struct jit_entry *e;
	static const u8 fde_x86[] = { 0x44, 0x0e, 0x10, 0x46, 0x0e, 0x08 };
	static const u8 setloc[] = { 0x01, 0x05, 0x10, 0, 0, 0, 0, 0, 0, 0x0e, 0x10 };
	static const u8 lsda[] = { 0, 0, 0, 0 };
	static const u8 r_only[] = { 0x1b };

	/* A version 3 CIE (RA column as ULEB128) and an FDE with "zR" data. */

	e = cfi_of(&m, &(struct eh_spec){ .version = 3, .cie = cie_x86,
					  .cie_n = sizeof(cie_x86), .fde = fde_x86,
					  .fde_n = 6, .range = 11, .fde_aug = lsda,
					  .fde_aug_len = 4 }, 11);
	T(e && e->nr_cfi == 3 && row_is(&e->cfi[1], 4, 10, 7, 16, -8, false, 0));
	jit_map_free(m);
	/* "zSR": a signal frame letter before R is fine. */
	e = cfi_of(&m, &(struct eh_spec){ .aug = "zSR", .aug_data = r_only, .aug_len = 1,
					  .cie = cie_x86, .cie_n = sizeof(cie_x86),
					  .fde = fde_x86, .fde_n = 6, .range = 11 }, 11);
	T(e && e->nr_cfi == 3);
	jit_map_free(m);

	/* "zPLR" (a personality before R) is refused, not misread. */
	static const u8 plr[] = { 0x03, 0x11, 0x22, 0x33, 0x44, 0x1b, 0x1b };

	e = cfi_of(&m, &(struct eh_spec){ .aug = "zPLR", .aug_data = plr,
					  .aug_len = sizeof(plr), .cie = cie_x86,
					  .cie_n = sizeof(cie_x86), .fde = fde_x86,
					  .fde_n = 6, .range = 11, .fde_aug = lsda,
					  .fde_aug_len = 4 }, 11);
	T(e && !e->cfi);
	jit_map_free(m);

	/* No augmentation: 8-byte absptr pc_begin/range; set_loc is refused. */
	e = cfi_of(&m, &(struct eh_spec){ .aug = "", .absptr = true, .cie = cie_x86,
					  .cie_n = sizeof(cie_x86), .fde = fde_x86,
					  .fde_n = 6, .range = 11 }, 11);
	T(e && e->nr_cfi == 3);
	jit_map_free(m);
	e = cfi_of(&m, &(struct eh_spec){ .aug = "", .absptr = true, .cie = cie_x86,
					  .cie_n = sizeof(cie_x86), .fde = setloc,
					  .fde_n = sizeof(setloc), .range = 11 }, 11);
	T(e && !e->cfi);
	jit_map_free(m);
}

/* Random .eh_frame bytes must never crash the interpreter. */
static void test_cfi_garbage(void)
{
	int bad = 0;

	for (int r = 0; r < 3000; r++) {
		u8 fde[48], cie[16];
		struct jit_map *m;
		const struct jit_entry *e;

		for (size_t i = 0; i < sizeof(fde); i++)
			fde[i] = (u8)rnd();
		for (size_t i = 0; i < sizeof(cie); i++)
			cie[i] = (u8)rnd();
		e = cfi_of(&m, &(struct eh_spec){ .cie = r & 1 ? cie_x86 : cie,
						  .cie_n = r & 1 ? sizeof(cie_x86) : rnd() % 16,
						  .fde = fde, .fde_n = rnd() % 48,
						  .range = (u32)(rnd() % 64) }, rnd() % 64 + 1);
		bad += !e || !rows_sane(e);
		jit_map_free(m);
	}
	T_EQ_INT(bad, 0);
}

/* ---- files ---- */

static void write_file(const char *dir, const char *name, const void *p, size_t n, time_t mtime)
{
	char path[512];
	struct timespec ts[2] = { { mtime, 0 }, { mtime, 0 } };
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	T(f != NULL);
	if (!f)
		return;
	fwrite(p, 1, n, f);
	fclose(f);
	utimensat(AT_FDCWD, path, ts, 0);
}

static void test_load(void)
{
	char dir[] = "/tmp/perfspy-test-jit.XXXXXX", path[512];
	struct log_cap lc;
	struct log_sink log = sink_for(&lc);
	struct jit_map *m = (void *)1;
	struct bb b;
	static const char map[] = "5000 10 py::map:m.py\n";

	if (!mkdtemp(dir)) {
		T(0);
		return;
	}
	T_EQ_INT(jit_map_load(dir, 123, &log, &m), -ENOENT);
	T(m == NULL);
	write_file(dir, "perf-123.map", map, sizeof(map) - 1, 1000);
	T_EQ_INT(jit_map_load(dir, 123, &log, &m), 0);
	T_EQ_INT(jit_map_size(m), 1);
	jit_map_free(m);

	jd_hdr(&b, 0x4A695444, 1, 40);
	jd_load(&b, 0x5008, 16, 1, "py::dump:d.py");
	write_file(dir, "jit-123.dump", b.b, b.n, 2000); /* newer than the map */
	T_EQ_INT(jit_map_load(dir, 123, &log, &m), 0);
	T_EQ_INT(jit_map_size(m), 2);
	T_EQ_STR(name_at(m, 0x5000), "py::map:m.py");
	T_EQ_STR(name_at(m, 0x5008), "py::dump:d.py");
	jit_map_free(m);
	write_file(dir, "perf-123.map", map, sizeof(map) - 1, 3000); /* now newer */
	T_EQ_INT(jit_map_load(dir, 123, &log, &m), 0);
	T_EQ_STR(name_at(m, 0x5008), "py::map:m.py");
	jit_map_free(m);

	/* A bad dump alone fails; beside a good map it is only a warning. */
	jd_hdr(&b, 0x4454694A, 1, 40);
	write_file(dir, "jit-123.dump", b.b, b.n, 2000);
	lc.n[LOG_WARN] = 0;
	T_EQ_INT(jit_map_load(dir, 123, &log, &m), 0);
	T_EQ_INT(jit_map_size(m), 1);
	T(lc.n[LOG_WARN] >= 1 && strstr(lc.last[LOG_WARN], "jit-123.dump: not used"));
	jit_map_free(m);
	snprintf(path, sizeof(path), "%s/perf-123.map", dir);
	unlink(path);
	T_EQ_INT(jit_map_load(dir, 123, &log, &m), -PERFSPY_E_ENDIAN);
	T(m == NULL);
	snprintf(path, sizeof(path), "%s/jit-123.dump", dir);
	unlink(path);
	/* An empty dump (a child killed before its first flush, §1.5). */
	write_file(dir, "jit-123.dump", "", 0, 2000);
	T_EQ_INT(jit_map_load(dir, 123, &log, &m), 0);
	T_EQ_INT(jit_map_size(m), 0);
	jit_map_free(m);
	unlink(path);
	/* Not a regular file. */
	T(!mkdir(path, 0700));
	T_EQ_INT(jit_map_load(dir, 123, &log, &m), -EINVAL);
	rmdir(path);
	rmdir(dir);
}

/* ---- size and speed ---- */

static void test_big(void)
{
	enum { N = 100000 };
	size_t cap = (size_t)N * 80, n = 0;
	char *text = malloc(cap);
	struct jit_map *m;
	double t0, t1, t2;
	size_t found = 0;

	for (int i = 0; i < N; i++)
		n += (size_t)snprintf(text + n, cap - n, "%llx b py::func_%d:/srv/app/pkg/module_%d.py\n",
				      0x7f0000000000ULL + (unsigned long long)i * 11, i, i % 977);
	T(!jit_map_new(&m));
	t0 = now_ms();
	T_EQ_INT(jit_map_add_perf_map(m, text, n, NULL), 0);
	t1 = now_ms();
	for (int i = 0; i < N; i++) {
		u64 a = 0x7f0000000000ULL + (u64)(rnd() % N) * 11 + rnd() % 11;
		found += jit_map_find(m, a) != NULL;
	}
	t2 = now_ms();
	T_EQ_INT(jit_map_size(m), N);
	T_EQ_INT(found, N);
	fprintf(stderr, "perf map: %d lines (%zu bytes) parsed in %.1f ms; %d lookups in %.1f ms\n",
		N, n, t1 - t0, N, t2 - t1);
	jit_map_free(m);
	free(text);
}

int main(void)
{
	if (find_fixdir()) {
		fprintf(stderr, "%s: fixtures not found in %s (set PERFSPY_SRCDIR); skipping\n",
			__FILE__, fixdir);
		return 77;
	}
	test_perf_map_lines();
	test_lookup_bounds();
	test_overlap();
	test_overlap_oracle();
	test_real_maps();
	test_map_prefixes();
	test_real_dump();
	test_dump_truncation();
	test_byte_flips();
	test_dump_header();
	test_dump_records();
	test_cfi_ops();
	test_cfi_refused();
	test_cfi_cie();
	test_cfi_garbage();
	test_load();
	test_big();
	TEST_MAIN_END();
}
