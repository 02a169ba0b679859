// SPDX-License-Identifier: GPL-2.0
/*
 * The pprof writer and reader (write_pprof.c, read_pprof.c) and
 * perfspy_folder__add_folder(): every frame shape read back as written,
 * the decoded Profile's tables (Functions shared across lines, Locations
 * leaf first, labels from roots, Mappings per library, sample types),
 * byte-identical output whatever the insertion order, hostile profiles.
 */
#include <errno.h>
#include <stdlib.h>
#include <zlib.h>

#include "common/fold.h"
#include "folded/pprof.pb-c.h"
#include "perfspy.h"
#include "test.h"

typedef Perftools__Profiles__Profile PProfile;

static char *mem_write(struct perfspy_folder *f, int format, bool clock_ns, size_t *len)
{
	PERFSPY_OPTS(perfspy_write_opts, o, .format = format, .clock_ns = clock_ns);
	char *buf = NULL;
	size_t n = 0;
	FILE *mf = open_memstream(&buf, &n);

	T_EQ_INT(perfspy_folder__write(f, mf, &o), 0);
	fclose(mf);
	if (len)
		*len = n;
	return buf;
}

static void add(struct perfspy_folder *f, const char *line, uint64_t w)
{
	const char *fr[32];
	char *copy = strdup(line), *save = NULL, *t;
	size_t n = 0;

	for (t = strtok_r(copy, ";", &save); t && n < 32; t = strtok_r(NULL, ";", &save))
		fr[n++] = t;
	T_EQ_INT(perfspy_folder__add(f, fr, n, w), 0);
	free(copy);
}

static const char *const shapes[] = {
	"thread (1234): worker;main (prog.c:10);f (a.c:10);g (libc.so.6)",
	"thread (1234): worker;main (prog.c:10);f (a.c:12)",
	"thread (0x7f00aa): MainThread;<module> (train.py:3);step (model.py:40)",
	"thread (99);run (x.py);0x1f00 (libfoo.so)",
	"process 42:\"python train.py --lr=0.1\";thread (43): py;main (prog.c:1)",
	"[host=node1];thread (5): w;do_syscall_64 ([kernel.kallsyms])",
	"[host=node1];[rack=r7];plain_name;with space (odd) text",
	"schedule_[k];f (x:y:10);g ();h (file:0)",
	"<module> (<frozen importlib._bootstrap>:241);py::Foo.bar:foo.py",
	"a (b) c;x (lib (2).so)",
};

static struct perfspy_folder *shape_folder(int order)
{
	struct perfspy_folder *f;
	size_t i, n = sizeof(shapes) / sizeof(shapes[0]);

	T_EQ_INT(perfspy_folder__new(&f), 0);
	for (i = 0; i < n; i++) {
		size_t k = order ? n - 1 - i : i;

		add(f, shapes[k], 10 + k);
	}
	return f;
}

static void test_round_trip(void)
{
	struct perfspy_folder *f = shape_folder(0), *back;
	PERFSPY_OPTS(perfspy_read_stats, st);
	char *pb, *raw, *raw2;
	size_t len;

	pb = mem_write(f, PERFSPY_FORMAT_PPROF, false, &len);
	T(len > 18 && (u8)pb[0] == 0x1f && (u8)pb[1] == 0x8b);
	T_EQ_INT(perfspy_folder__new(&back), 0);
	T_EQ_INT(perfspy_folder__read_pprof(back, NULL, pb, len, NULL, &st), 0);
	raw = mem_write(f, PERFSPY_FORMAT_RAW, false, NULL);
	raw2 = mem_write(back, PERFSPY_FORMAT_RAW, false, NULL);
	T_EQ_STR(raw2, raw);
	T_EQ_INT(st.samples, perfspy_folder__total(f));
	T_EQ_INT(st.stacks, perfspy_folder__nr_stacks(f));
	T_EQ_INT(st.bad, 0);
	free(pb);
	free(raw);
	free(raw2);
	perfspy_folder__free(back);
	perfspy_folder__free(f);
}

/* A profile whose gzip is well past 15 KB: 3,000 stacks of distinct
 * frames. The reader once sized its inflate buffer ahead of allocating
 * it and refused every input past about 15 KB. */
static void test_round_trip_big(void)
{
	struct perfspy_folder *f, *back;
	PERFSPY_OPTS(perfspy_read_stats, st);
	char *pb, *raw, *raw2, line[128];
	size_t len;
	int i;

	T_EQ_INT(perfspy_folder__new(&f), 0);
	for (i = 0; i < 3000; i++) {
		snprintf(line, sizeof(line), "thread (%d): w;main (p.c:1);f%d (a%d.c:%d);g%d (libz.so)",
			 i % 7, i, i % 13, i * 7 % 1000, i * 31 % 2999);
		add(f, line, 1 + (u64)i % 17);
	}
	pb = mem_write(f, PERFSPY_FORMAT_PPROF, false, &len);
	T(len > 4 * 15360);
	T_EQ_INT(perfspy_folder__new(&back), 0);
	T_EQ_INT(perfspy_folder__read_pprof(back, NULL, pb, len, NULL, &st), 0);
	raw = mem_write(f, PERFSPY_FORMAT_RAW, false, NULL);
	raw2 = mem_write(back, PERFSPY_FORMAT_RAW, false, NULL);
	T_EQ_STR(raw2, raw);
	T_EQ_INT(st.stacks, 3000);
	free(pb);
	free(raw);
	free(raw2);
	perfspy_folder__free(back);
	perfspy_folder__free(f);
}

static void test_deterministic(void)
{
	struct perfspy_folder *a = shape_folder(0), *b = shape_folder(1);
	size_t la, lb;
	char *pa = mem_write(a, PERFSPY_FORMAT_PPROF, false, &la);
	char *pb = mem_write(b, PERFSPY_FORMAT_PPROF, false, &lb);

	T(la == lb && !memcmp(pa, pb, la));
	free(pa);
	free(pb);
	perfspy_folder__free(a);
	perfspy_folder__free(b);
}

static PProfile *decode(const char *gz, size_t len)
{
	size_t cap = 1 << 20;
	uLongf out = cap;
	u8 *buf = malloc(cap);
	z_stream z = { 0 };
	PProfile *p;

	T(inflateInit2(&z, 15 + 16) == Z_OK);
	z.next_in = (Bytef *)gz;
	z.avail_in = (uInt)len;
	z.next_out = buf;
	z.avail_out = (uInt)cap;
	T(inflate(&z, Z_FINISH) == Z_STREAM_END);
	out = z.total_out;
	inflateEnd(&z);
	p = perftools__profiles__profile__unpack(NULL, out, buf);
	free(buf);
	T(p != NULL);
	return p;
}

static const char *s_at(const PProfile *p, int64_t i)
{
	return i >= 0 && (size_t)i < p->n_string_table ? p->string_table[i] : "?";
}

static const Perftools__Profiles__Function *fn_of(const PProfile *p, uint64_t loc_id,
						   int64_t *line, const char **map)
{
	size_t i, j;

	for (i = 0; i < p->n_location; i++) {
		if (p->location[i]->id != loc_id)
			continue;
		*map = "";
		for (j = 0; j < p->n_mapping; j++)
			if (p->mapping[j]->id == p->location[i]->mapping_id)
				*map = s_at(p, p->mapping[j]->filename);
		T_EQ_INT(p->location[i]->n_line, 1);
		*line = p->location[i]->line[0]->line;
		for (j = 0; j < p->n_function; j++)
			if (p->function[j]->id == p->location[i]->line[0]->function_id)
				return p->function[j];
	}
	return NULL;
}

static const char *label(const PProfile *p, const Perftools__Profiles__Sample *s,
			 const char *key, int64_t *num)
{
	size_t i;

	for (i = 0; i < s->n_label; i++)
		if (!strcmp(s_at(p, s->label[i]->key), key)) {
			*num = s->label[i]->num;
			return s_at(p, s->label[i]->str);
		}
	return NULL;
}

static void test_tables(void)
{
	struct perfspy_folder *f;
	const Perftools__Profiles__Function *fn;
	const char *map;
	size_t len, i, nf = 0;
	int64_t line, num;
	PProfile *p;
	char *pb;

	T_EQ_INT(perfspy_folder__new(&f), 0);
	add(f, "thread (1234): worker;main (prog.c:7);f (a.c:10);g (libc.so.6)", 3);
	add(f, "thread (1234): worker;main (prog.c:7);f (a.c:12)", 2);
	add(f, "process 42:\"python x.py\";step (model.py:40)", 1);
	pb = mem_write(f, PERFSPY_FORMAT_PPROF, false, &len);
	p = decode(pb, len);
	if (!p)
		return;
	T_EQ_STR(s_at(p, 0), "");
	T_EQ_INT(p->n_sample_type, 1);
	T_EQ_STR(s_at(p, p->sample_type[0]->type), "samples");
	T_EQ_STR(s_at(p, p->sample_type[0]->unit), "count");
	T_EQ_INT(p->n_sample, 3);
	/* f appears with two lines: one Function, two Locations. */
	for (i = 0; i < p->n_function; i++)
		nf += !strcmp(s_at(p, p->function[i]->name), "f");
	T_EQ_INT(nf, 1);
	T_EQ_INT(p->n_location, 5);
	for (i = 0; i < p->n_sample; i++) {
		const Perftools__Profiles__Sample *s = p->sample[i];

		T_EQ_INT(s->n_value, 1);
		if (s->value[0] == 3) { /* leaf first: g, f, main */
			T_EQ_INT(s->n_location_id, 3);
			fn = fn_of(p, s->location_id[0], &line, &map);
			T(fn && !strcmp(s_at(p, fn->name), "g") && !*s_at(p, fn->filename));
			T_EQ_STR(map, "libc.so.6");
			fn = fn_of(p, s->location_id[1], &line, &map);
			T(fn && !strcmp(s_at(p, fn->filename), "a.c") && line == 10);
			fn = fn_of(p, s->location_id[2], &line, &map);
			T(fn && !strcmp(s_at(p, fn->name), "main") && line == 7);
			T_EQ_STR(label(p, s, "thread", &num), "worker");
			T(label(p, s, "tid", &num) && num == 1234);
			T_EQ_STR(label(p, s, "category", &num), "other native");
		} else if (s->value[0] == 1) {
			T_EQ_INT(s->n_location_id, 1);
			fn = fn_of(p, s->location_id[0], &line, &map);
			T(fn && !strcmp(s_at(p, fn->filename), "model.py") && line == 40);
			T_EQ_STR(label(p, s, "comm", &num), "python x.py");
			T(label(p, s, "pid", &num) && num == 42);
			T(!label(p, s, "tid", &num));
			T_EQ_STR(label(p, s, "category", &num), "Python code");
		}
	}
	perftools__profiles__profile__free_unpacked(p, NULL);
	free(pb);

	pb = mem_write(f, PERFSPY_FORMAT_PPROF, true, &len);
	p = decode(pb, len);
	if (p) {
		T_EQ_STR(s_at(p, p->sample_type[0]->type), "cpu");
		T_EQ_STR(s_at(p, p->sample_type[0]->unit), "nanoseconds");
		perftools__profiles__profile__free_unpacked(p, NULL);
	}
	free(pb);
	perfspy_folder__free(f);
}

/* python_first_lines (a session's frames): one Function per Python
 * definition with its start_line, so two `forward`s of one file stay
 * apart; without it one Function per (name, file), no start_line. */
static void test_start_line(void)
{
	PERFSPY_OPTS(perfspy_write_opts, o, .format = PERFSPY_FORMAT_PPROF);
	struct perfspy_folder *f;
	const Perftools__Profiles__Function *fn;
	int64_t sum, n, line;
	const char *map;
	char *buf;
	size_t len, i;
	PProfile *p;
	FILE *mf;

	T_EQ_INT(perfspy_folder__new(&f), 0);
	add(f, "main (m.py:1);forward (m.py:10);lin (k.c:3)", 2);
	add(f, "main (m.py:1);forward (m.py:30)", 1);
	/* 32 is 10 with its byte 0x0a read as a blank: the Function's key
	 * holds the line's bytes, and must keep them as they are. */
	add(f, "main (m.py:1);forward (m.py:32)", 1);
	for (int first = 0; first < 2; first++) {
		o.python_first_lines = first;
		buf = NULL;
		mf = open_memstream(&buf, &len);
		T_EQ_INT(perfspy_folder__write(f, mf, &o), 0);
		fclose(mf);
		p = decode(buf, len);
		for (i = 0, n = 0, sum = 0; p && i < p->n_function; i++) {
			if (strcmp(s_at(p, p->function[i]->name), "forward"))
				continue;
			n++;
			sum += p->function[i]->start_line;
		}
		T_EQ_INT(n, first ? 3 : 1);
		T_EQ_INT(sum, first ? 72 : 0);
		/* Native frames never get one; main's is its line. */
		for (i = 0; p && i < p->n_sample; i++) {
			fn = fn_of(p, p->sample[i]->location_id[0], &line, &map);
			if (fn && !strcmp(s_at(p, fn->name), "lin"))
				T_EQ_INT(fn->start_line, 0);
			fn = fn_of(p, p->sample[i]->location_id[p->sample[i]->n_location_id - 1],
				   &line, &map);
			T(fn && fn->start_line == (first ? 1 : 0));
		}
		if (p)
			perftools__profiles__profile__free_unpacked(p, NULL);
		free(buf);
	}
	perfspy_folder__free(f);
}

/* A profile built by hand, unzipped: references that lead nowhere. */
static void test_hostile(void)
{
	PProfile p = PERFTOOLS__PROFILES__PROFILE__INIT;
	Perftools__Profiles__ValueType vt = PERFTOOLS__PROFILES__VALUE_TYPE__INIT, *vtp = &vt;
	Perftools__Profiles__Sample s1 = PERFTOOLS__PROFILES__SAMPLE__INIT,
				    s2 = PERFTOOLS__PROFILES__SAMPLE__INIT,
				    s3 = PERFTOOLS__PROFILES__SAMPLE__INIT;
	Perftools__Profiles__Sample *sp[] = { &s1, &s2, &s3 };
	Perftools__Profiles__Location loc = PERFTOOLS__PROFILES__LOCATION__INIT, *lp = &loc;
	Perftools__Profiles__Line ln = PERFTOOLS__PROFILES__LINE__INIT, *lnp = &ln;
	Perftools__Profiles__Label lab = PERFTOOLS__PROFILES__LABEL__INIT, *labp = &lab;
	char *strs[] = { "", "samples", "count" };
	uint64_t good[] = { 7 }, bad[] = { 8 };
	int64_t v1 = 5, v2 = 6, v3 = -1;
	struct perfspy_folder *f;
	PERFSPY_OPTS(perfspy_read_stats, st);
	size_t n;
	u8 *buf;
	char *raw;

	vt.type = 1;
	vt.unit = 2;
	ln.function_id = 99; /* no such function */
	ln.line = 3;
	loc.id = 7;
	loc.n_line = 1;
	loc.line = &lnp;
	lab.key = 1000; /* string index out of range */
	lab.str = 2000;
	s1.n_location_id = 1, s1.location_id = good, s1.n_value = 1, s1.value = &v1;
	s1.n_label = 1, s1.label = &labp;
	s2.n_location_id = 1, s2.location_id = bad, s2.n_value = 1, s2.value = &v2;
	s3.n_location_id = 1, s3.location_id = good, s3.n_value = 1, s3.value = &v3;
	p.n_sample_type = 1, p.sample_type = &vtp;
	p.n_sample = 3, p.sample = sp;
	p.n_location = 1, p.location = &lp;
	p.n_string_table = 3, p.string_table = strs;
	n = perftools__profiles__profile__get_packed_size(&p);
	buf = malloc(n);
	perftools__profiles__profile__pack(&p, buf);
	T_EQ_INT(perfspy_folder__new(&f), 0);
	T_EQ_INT(perfspy_folder__read_pprof(f, NULL, buf, n, NULL, &st), 0);
	T_EQ_INT(st.samples, 5);
	T_EQ_INT(st.bad, 2); /* unknown location; negative value */
	raw = mem_write(f, PERFSPY_FORMAT_RAW, false, NULL);
	T_EQ_STR(raw, "[unknown] 5\n");
	free(raw);
	/* Not a profile, zipped or not. */
	T_EQ_INT(perfspy_folder__read_pprof(f, NULL, "\x1f\x8b garbage", 10, NULL, NULL),
		 -PERFSPY_E_CAPTURE);
	T_EQ_INT(perfspy_folder__read_pprof(f, NULL, "\xff\xff\xff\xff\xff", 5, NULL, NULL),
		 -PERFSPY_E_CAPTURE);
	T_EQ_INT(perfspy_folder__read_pprof(f, "/nonexistent/x.pb.gz", NULL, 0, NULL, NULL),
		 -ENOENT);
	T_EQ_INT(perfspy_folder__total(f), 5);
	free(buf);
	perfspy_folder__free(f);
}

/* The pprof @buf (@len bytes, written from @f) read back gives @f's raw
 * output; frees @buf and @f. */
static void read_back_same(struct perfspy_folder *f, char *buf, size_t len)
{
	struct perfspy_folder *back;
	char *raw, *raw2;

	T_EQ_INT(perfspy_folder__new(&back), 0);
	T_EQ_INT(perfspy_folder__read_pprof(back, NULL, buf, len, NULL, NULL), 0);
	raw = mem_write(f, PERFSPY_FORMAT_RAW, false, NULL);
	raw2 = mem_write(back, PERFSPY_FORMAT_RAW, false, NULL);
	T_EQ_STR(raw2, raw);
	free(raw);
	free(raw2);
	free(buf);
	perfspy_folder__free(f);
	perfspy_folder__free(back);
}

/* Mappings take the caller's DSO path and build id, matched on the last
 * path component; reading back still names the library as frames do. */
static void test_dsos(void)
{
	static const char *const paths[] = { "/opt/xlibc.so.6", "/lib/x86_64/libc.so.6",
					     "/usr/lib/libc.so.6" };
	static const char *const bids[] = { "aa", "0123abcd", "ff" };
	PERFSPY_OPTS(perfspy_write_opts, o, .format = PERFSPY_FORMAT_PPROF, .dso_paths = paths,
		     .dso_build_ids = bids, .nr_dsos = 3);
	struct perfspy_folder *f;
	char *buf = NULL;
	size_t len = 0, i, found = 0;
	FILE *mf = open_memstream(&buf, &len);
	PProfile *p;

	T_EQ_INT(perfspy_folder__new(&f), 0);
	add(f, "main (m.c:3);malloc (libc.so.6);0x10 (libq.so)", 4);
	T_EQ_INT(perfspy_folder__write(f, mf, &o), 0);
	fclose(mf);
	p = decode(buf, len);
	for (i = 0; p && i < p->n_mapping; i++) {
		const char *fn = s_at(p, p->mapping[i]->filename);

		if (!strcmp(fn, "/lib/x86_64/libc.so.6")) {
			T_EQ_STR(s_at(p, p->mapping[i]->build_id), "0123abcd");
			found++;
		} else {
			T_EQ_STR(fn, "libq.so");
			T_EQ_INT(p->mapping[i]->build_id, 0);
		}
	}
	T_EQ_INT(found, 1);
	if (p)
		perftools__profiles__profile__free_unpacked(p, NULL);
	read_back_same(f, buf, len);
}

/* The library of frames that name a source file (the session's
 * frame_lib): main.c's frames are the program's, inl (h.h) is libq.so's. */
static const char *lib_of(void *ctx, const char *s, size_t len)
{
	(void)ctx;
	if (len > 6 && !strncmp(s, "main (", 6))
		return "prog";
	return len > 5 && !strncmp(s, "inl (", 5) ? "libq.so" : NULL;
}

/* perfspy_write_opts.main_binary: the program's Mapping is mapping[0]
 * (pprof's main binary), with its path and build id, even before frames
 * that come first in the stacks, and its frames use it; frame_lib gives
 * source-named frames their library's Mapping; reading back is unchanged. */
static void test_main_binary(void)
{
	static const char *const paths[] = { "/usr/lib/libc.so.6", "/opt/prog", "/opt/x/prog" };
	static const char *const bids[] = { "aa", "bb", "cc" };
	PERFSPY_OPTS(perfspy_write_opts, o, .format = PERFSPY_FORMAT_PPROF, .dso_paths = paths,
		     .dso_build_ids = bids, .nr_dsos = 3, .main_binary = "/opt/x/prog",
		     .frame_lib = lib_of);
	struct perfspy_folder *f;
	char *buf = NULL;
	size_t len = 0, i, nmain = 0, nlibq = 0;
	FILE *mf = open_memstream(&buf, &len);
	PProfile *p;

	T_EQ_INT(perfspy_folder__new(&f), 0);
	add(f, "a (libc.so.6);main (m.c:3);_start (prog)", 4);
	add(f, "a (libc.so.6);inl (h.h:1);g (other.c:2)", 1);
	T_EQ_INT(perfspy_folder__write(f, mf, &o), 0);
	fclose(mf);
	p = decode(buf, len);
	T_EQ_INT(p ? p->n_mapping : 0, 3);
	if (p && p->n_mapping == 3) {
		T_EQ_STR(s_at(p, p->mapping[0]->filename), "/opt/x/prog");
		T_EQ_STR(s_at(p, p->mapping[0]->build_id), "cc");
		/* The leaf g's caller inl comes before a: libq.so second. */
		T_EQ_STR(s_at(p, p->mapping[1]->filename), "libq.so");
		T_EQ_STR(s_at(p, p->mapping[2]->filename), "/usr/lib/libc.so.6");
		for (i = 0; i < p->n_location; i++) {
			const Perftools__Profiles__Location *l = p->location[i];
			const char *fn = "";
			size_t j;

			for (j = 0; j < p->n_function; j++)
				if (p->function[j]->id == l->line[0]->function_id)
					fn = s_at(p, p->function[j]->name);
			if (!strcmp(fn, "main") || !strcmp(fn, "_start")) {
				T_EQ_INT(l->mapping_id, p->mapping[0]->id);
				nmain++;
			} else if (!strcmp(fn, "inl")) {
				T_EQ_INT(l->mapping_id, p->mapping[1]->id);
				nlibq++;
			} else if (!strcmp(fn, "g")) {
				T_EQ_INT(l->mapping_id, 0); /* frame_lib does not know it */
			}
		}
	}
	T_EQ_INT(nmain, 2);
	T_EQ_INT(nlibq, 1);
	if (p)
		perftools__profiles__profile__free_unpacked(p, NULL);
	read_back_same(f, buf, len);
}

/* Frames the callback calls inlined become Lines of the next frame's
 * Location (callee first); reading back gives the same stacks. */
static bool inl(void *ctx, const char *s, size_t len)
{
	(void)ctx;
	return len > 9 && !strncmp(s, "in2 (a.c:", 9);
}

static void test_inlined(void)
{
	PERFSPY_OPTS(perfspy_write_opts, o, .format = PERFSPY_FORMAT_PPROF, .frame_inlined = inl);
	struct perfspy_folder *f;
	char *buf = NULL;
	size_t len = 0, i, two = 0, three = 0;
	FILE *mf = open_memstream(&buf, &len);
	PProfile *p;

	T_EQ_INT(perfspy_folder__new(&f), 0);
	add(f, "thread (1): t;main (m.c:1);outer (a.c:9);in2 (a.c:7);leaf (b.c:2)", 2);
	add(f, "thread (1): t;main (m.c:1);outer (a.c:9);in2 (a.c:7)", 3);
	add(f, "in2 (a.c:8)", 1); /* inlined, but nothing above it: alone */
	T_EQ_INT(perfspy_folder__write(f, mf, &o), 0);
	fclose(mf);
	p = decode(buf, len);
	for (i = 0; p && i < p->n_location; i++) {
		const Perftools__Profiles__Location *l = p->location[i];

		if (l->n_line == 2) {
			two++;
			T_EQ_INT(l->line[0]->line, 7);
			T_EQ_INT(l->line[1]->line, 9);
		}
		three += l->n_line > 2;
	}
	T_EQ_INT(two, 1);
	T_EQ_INT(three, 0);
	/* main, outer with in2:7, leaf, and in2:8 alone (no frame above it) */
	T_EQ_INT(p ? p->n_location : 0, 4);
	if (p)
		perftools__profiles__profile__free_unpacked(p, NULL);
	read_back_same(f, buf, len);
}

/* perfspy_read_opts.pprof_frame: what the reader tells of each frame. */
struct told {
	char text[64][48];
	char file[64][32], bid[64][8];
	bool inlined[64];
	int n;
	char main[32];
	int mains, stop_at;
};

static int tell(void *ctx, const char *frame, size_t len, bool inlined, const char *file,
		const char *bid)
{
	struct told *t = ctx;

	if (!frame) {
		T_EQ_INT(t->n, 0); /* the main binary first */
		snprintf(t->main, sizeof(t->main), "%s", file);
		t->mains++;
		return 0;
	}
	if (t->stop_at && t->n + 1 == t->stop_at)
		return -ENOSPC;
	T(t->n < 64);
	if (t->n >= 64)
		return 0;
	snprintf(t->text[t->n], sizeof(t->text[0]), "%.*s", (int)len, frame);
	snprintf(t->file[t->n], sizeof(t->file[0]), "%s", file);
	snprintf(t->bid[t->n], sizeof(t->bid[0]), "%s", bid);
	t->inlined[t->n++] = inlined;
	return 0;
}

static int told_at(const struct told *t, const char *text)
{
	int i;

	for (i = 0; i < t->n; i++)
		if (!strcmp(t->text[i], text))
			return i;
	return -1;
}

/* Read back, the callback hears the main binary first, then each frame
 * of each Location with its Location's Mapping (path and build id) and
 * whether it is an inlined callee; the frame text is the folder's, and
 * perfspy_folder__frame() lists the same texts. A negative return ends
 * the read with it. */
static void test_frames_told(void)
{
	static const char *const paths[] = { "/usr/lib/libc.so.6", "/opt/x/prog" };
	static const char *const bids[] = { "aa", NULL };
	PERFSPY_OPTS(perfspy_write_opts, o, .format = PERFSPY_FORMAT_PPROF, .dso_paths = paths,
		     .dso_build_ids = bids, .nr_dsos = 2, .main_binary = "/opt/x/prog",
		     .frame_lib = lib_of, .frame_inlined = inl);
	struct told t = { 0 };
	PERFSPY_OPTS(perfspy_read_opts, ro, .pprof_frame = tell, .pprof_frame_ctx = &t);
	struct perfspy_folder *f, *back;
	char *buf = NULL;
	size_t len = 0, n, k;
	FILE *mf = open_memstream(&buf, &len);
	const char *txt;
	int i;

	T_EQ_INT(perfspy_folder__new(&f), 0);
	add(f, "thread (1): t;main (m.c:1);outer (a.c:9);in2 (a.c:7);a (libc.so.6)", 2);
	add(f, "0x10 (?);b;main (m.c:1)", 1);
	T_EQ_INT(perfspy_folder__write(f, mf, &o), 0);
	fclose(mf);
	T_EQ_INT(perfspy_folder__new(&back), 0);
	T_EQ_INT(perfspy_folder__read_pprof(back, NULL, buf, len, &ro, NULL), 0);
	T_EQ_INT(t.mains, 1);
	T_EQ_STR(t.main, "/opt/x/prog");
	/* main, outer with in2 inlined, a, 0x10 (?), b: one call each */
	T_EQ_INT(t.n, 6);
	i = told_at(&t, "main (m.c:1)");
	T(i >= 0 && !strcmp(t.file[i], "/opt/x/prog") && !t.inlined[i] && !*t.bid[i]);
	i = told_at(&t, "outer (a.c:9)");
	T(i >= 0 && !t.inlined[i] && !*t.file[i]);
	i = told_at(&t, "in2 (a.c:7)");
	T(i >= 0 && t.inlined[i]);
	i = told_at(&t, "a (libc.so.6)");
	T(i >= 0 && !strcmp(t.file[i], "/usr/lib/libc.so.6") && !strcmp(t.bid[i], "aa"));
	i = told_at(&t, "0x10 (?)");
	T(i >= 0 && !strcmp(t.file[i], "?"));
	i = told_at(&t, "b");
	T(i >= 0 && !*t.file[i] && !t.inlined[i]);
	/* Every text told is one the folder holds, and the other way round
	 * for frames of Locations (the thread root is a label). */
	for (n = 0; (txt = perfspy_folder__frame(back, (uint32_t)n, &k)); n++) {
		T_EQ_INT(k, strlen(txt));
		T(!strncmp(txt, "thread (", 8) || told_at(&t, txt) >= 0);
	}
	T_EQ_INT(n, 7);
	T(perfspy_folder__frame(back, (uint32_t)n, NULL) == NULL);
	T(perfspy_folder__frame(NULL, 0, NULL) == NULL);
	perfspy_folder__free(back);

	/* A callback's error ends the read with it. */
	memset(&t, 0, sizeof(t));
	t.stop_at = 3;
	T_EQ_INT(perfspy_folder__new(&back), 0);
	T_EQ_INT(perfspy_folder__read_pprof(back, NULL, buf, len, &ro, NULL), -ENOSPC);
	perfspy_folder__free(back);
	free(buf);
	perfspy_folder__free(f);
}

static void test_add_folder(void)
{
	struct perfspy_folder *a = shape_folder(0), *b, *c;
	char *raw;

	T_EQ_INT(perfspy_folder__new(&b), 0);
	T_EQ_INT(perfspy_folder__new(&c), 0);
	T_EQ_INT(perfspy_folder__add_folder(b, a, NULL), 0);
	T_EQ_INT(perfspy_folder__add_folder(b, a, NULL), 0);
	T_EQ_INT(perfspy_folder__total(b), 2 * perfspy_folder__total(a));
	T_EQ_INT(perfspy_folder__nr_stacks(b), perfspy_folder__nr_stacks(a));
	T_EQ_INT(perfspy_folder__add_folder(a, a, NULL), -EINVAL);
	add(c, "x;y", 2);
	T_EQ_INT(perfspy_folder__add_folder(b, c, "[host=n2]"), 0);
	raw = mem_write(b, PERFSPY_FORMAT_RAW, false, NULL);
	T(strstr(raw, "\n[host=n2];x;y 2\n") != NULL);
	free(raw);
	perfspy_folder__free(a);
	perfspy_folder__free(b);
	perfspy_folder__free(c);
}

int main(void)
{
	test_round_trip();
	test_round_trip_big();
	test_deterministic();
	test_tables();
	test_start_line();
	test_hostile();
	test_dsos();
	test_main_binary();
	test_inlined();
	test_frames_told();
	test_add_folder();
	TEST_MAIN_END();
}
