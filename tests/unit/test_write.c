// SPDX-License-Identifier: GPL-2.0
/*
 * The flame graph and speedscope writers (write_svg.c,
 * write_speedscope.c) and their helpers (write_common.c): XML/JSON
 * escaping of hostile bytes (frame text parsing is test_frame.c's), goldens for a small
 * folder, byte-identical output whatever the insertion order, the
 * min-width rule, one speedscope profile per thread, option checks.
 *
 * Goldens sit in tests/unit/fixtures/write/; REGEN=1 rewrites them from
 * the current writers (review the diff before committing).
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/fold.h"
#include "perfspy.h"
#include "test.h"
#include "common/write.h"

/* ---- helpers ---- */

#define S(lit) lit, sizeof(lit) - 1

static char *render(struct perfspy_folder *f, int format, const char *title)
{
	PERFSPY_OPTS(perfspy_write_opts, o, .format = format, .title = title);
	char *buf = NULL;
	size_t len = 0;
	FILE *mf = open_memstream(&buf, &len);

	T_EQ_INT(perfspy_folder__write(f, mf, &o), 0);
	fclose(mf);
	return buf;
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;

	for (; (hay = strstr(hay, needle)); hay++)
		n++;
	return n;
}

static char *xml(const char *s, size_t n)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *mf = open_memstream(&buf, &len);
	struct wout w;

	T_EQ_INT(wout_init(&w, mf), 0);
	wout_xml(&w, s, n);
	T_EQ_INT(wout_finish(&w), 0);
	fclose(mf);
	return buf;
}

static char *json(const char *s, size_t n)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *mf = open_memstream(&buf, &len);
	struct wout w;

	T_EQ_INT(wout_init(&w, mf), 0);
	wout_json(&w, s, n);
	T_EQ_INT(wout_finish(&w), 0);
	fclose(mf);
	return buf;
}

static char *fixed(u64 v, u64 div, unsigned digits)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *mf = open_memstream(&buf, &len);
	struct wout w;

	T_EQ_INT(wout_init(&w, mf), 0);
	wout_fixed(&w, v, div, digits);
	T_EQ_INT(wout_finish(&w), 0);
	fclose(mf);
	return buf;
}

/* ---- escaping ---- */

static void test_escape(void)
{
	char *s;

	s = xml(S("<lambda> & \"q\" 'a'"));
	T_EQ_STR(s, "&lt;lambda&gt; &amp; &quot;q&quot; &apos;a&apos;");
	free(s);
	/* Valid UTF-8 stays; malformed bytes, overlong forms, surrogates,
	 * U+FFFF and controls become U+FFFD; tab stays. */
	s = xml(S("\xc3\xa9\xe2\x82\xac\xf0\x9f\x94\xa5"));
	T_EQ_STR(s, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x94\xa5");
	free(s);
	s = xml(S("a\xff" "b\xc0\x80" "c\xed\xa0\x80" "d\xef\xbf\xbf" "e\x01\tf\xe2\x82"));
	T_EQ_STR(s, "a\xef\xbf\xbd" "b\xef\xbf\xbd\xef\xbf\xbd" "c\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
		    "d\xef\xbf\xbd" "e\xef\xbf\xbd\tf\xef\xbf\xbd\xef\xbf\xbd");
	free(s);
	s = json(S("a\"b\\c\n\x1f\xff\xc3\xa9/"));
	T_EQ_STR(s, "a\\\"b\\\\c\\u000a\\u001f\\ufffd\xc3\xa9/");
	free(s);
	T_EQ_INT(utf8_prefix("\xc3\xa9t\xc3\xa9", 5, 2), 3);
	T_EQ_INT(utf8_prefix("ab\xff", 3, 3), 3);
	T_EQ_INT(utf8_prefix("ab", 2, 9), 2);
	s = fixed(1, 3, 4);
	T_EQ_STR(s, "0.3333");
	free(s);
	s = fixed(2, 3, 2);
	T_EQ_STR(s, "0.67");
	free(s);
	s = fixed(100, 100, 4);
	T_EQ_STR(s, "1.0000");
	free(s);
	s = fixed(12345, 1, 0);
	T_EQ_STR(s, "12345");
	free(s);
	s = fixed(5, 1000, 2); /* 0.005 rounds half up */
	T_EQ_STR(s, "0.01");
	free(s);
}

/* ---- writers ---- */

/* Five stacks: two threads, a stack without a thread root, Python,
 * native and kernel frames, markup characters, a label too long for its
 * frame. The tree has 10 nodes with "all". */
static const char *const small[][6] = {
	{ "thread (1): main", "main (app.c:10)", "work (app.c:20)", "malloc (libc.so.6)" },
	{ "thread (1): main", "main (app.c:10)", "work (app.c:20)" },
	{ "thread (1): main", "main (app.c:10)", "<lambda> (a&b.py:3)",
	  "do_syscall_64 ([kernel.kallsyms])" },
	{ "thread (2): io & <net>", "run (net.py:7)" },
	{ "a_very_long_function_name_that_cannot_fit_in_a_small_frame_at_all (x.c:1)" },
};
static const u64 small_counts[] = { 3, 5, 2, 4, 1 };

static size_t small_nr(size_t i)
{
	size_t n = 0;

	while (n < 6 && small[i][n])
		n++;
	return n;
}

static struct perfspy_folder *small_folder(bool reversed)
{
	struct perfspy_folder *f;
	size_t i, k;

	T_EQ_INT(perfspy_folder__new(&f), 0);
	for (k = 0; k < ARRAY_SIZE(small); k++) {
		i = reversed ? ARRAY_SIZE(small) - 1 - k : k;
		T_EQ_INT(perfspy_folder__add(f, small[i], small_nr(i), small_counts[i]), 0);
	}
	return f;
}

static char fixdir[4096];

static void find_fixdir(void)
{
	const char *src = getenv("PERFSPY_SRCDIR");
	const char *slash = strrchr(__FILE__, '/');

	if (src)
		snprintf(fixdir, sizeof(fixdir), "%s/tests/unit/fixtures/write", src);
	else
		snprintf(fixdir, sizeof(fixdir), "%.*s/fixtures/write",
			 slash ? (int)(slash - __FILE__) : 1, slash ? __FILE__ : ".");
}

/* speedscope's "exporter" names the library's version: the goldens say
 * perfspy@VERSION, so a version bump is not an output change. */
static char *unversion(const char *got)
{
	static const char tag[] = "perfspy@", rep[] = "perfspy@VERSION";
	const char *v = perfspy_version_string(), *p;
	size_t vl = strlen(v), n = 0;
	char *out, *o;

	for (p = got; (p = strstr(p, tag)); p += sizeof(tag) - 1)
		n++;
	out = malloc(strlen(got) + n * sizeof(rep) + 1);
	if (!out)
		return NULL;
	for (p = got, o = out; *p;) {
		if (!strncmp(p, tag, sizeof(tag) - 1) && !strncmp(p + sizeof(tag) - 1, v, vl)) {
			memcpy(o, rep, sizeof(rep) - 1);
			o += sizeof(rep) - 1;
			p += sizeof(tag) - 1 + vl;
			continue;
		}
		*o++ = *p++;
	}
	*o = '\0';
	return out;
}

/* Compare @got with golden @name, or rewrite it when REGEN=1. */
static void golden(const char *name, const char *got_raw)
{
	char path[4200], *want = NULL, *got = unversion(got_raw);
	size_t len = 0;
	FILE *f;

	T(got != NULL);
	if (!got)
		return;
	snprintf(path, sizeof(path), "%s/%s", fixdir, name);
	if (getenv("REGEN") && !strcmp(getenv("REGEN"), "1")) {
		f = fopen(path, "w");
		T(f && fputs(got, f) >= 0);
		if (f)
			fclose(f);
		fprintf(stderr, "regenerated %s\n", path);
		free(got);
		return;
	}
	f = fopen(path, "r");
	T(f != NULL);
	if (!f) {
		fprintf(stderr, "  missing golden %s (REGEN=1 writes it)\n", path);
		free(got);
		return;
	}
	T(getdelim(&want, &len, 0, f) > 0);
	fclose(f);
	T(want && !strcmp(want, got));
	if (want && strcmp(want, got))
		fprintf(stderr, "  %s differs from the writer's output (REGEN=1 to accept)\n",
			path);
	free(want);
	free(got);
}

static void test_svg(void)
{
	struct perfspy_folder *a = small_folder(false), *b = small_folder(true);
	char *sa = render(a, PERFSPY_FORMAT_FLAMEGRAPH, "t <&> \"x\""), *sb;

	golden("small.svg", sa);
	sb = render(b, PERFSPY_FORMAT_FLAMEGRAPH, "t <&> \"x\"");
	T_EQ_STR(sa, sb); /* insertion order does not matter */
	T_EQ_INT(count(sa, "<g class=\"f "), 10);
	T_EQ_INT(count(sa, "<g class=\"f py\""), 2);
	T_EQ_INT(count(sa, "<g class=\"f ker\""), 1);
	T_EQ_INT(count(sa, "<g class=\"f nat\""), 3);
	T_EQ_INT(count(sa, "<g class=\"f crt\""), 1); /* malloc (libc.so.6) */
	T_EQ_INT(count(sa, "<g class=\"f rt\""), 3);
	T(strstr(sa, "<title>all (15 samples, 100.00%)</title>") != NULL);
	/* Native frames with a line: the function, its lines below. */
	T(strstr(sa, "<title>work (app.c) (8 samples, 53.33%)\nlines: app.c:20 (100.0%)</title>") != NULL);
	T(strstr(sa, "<title>a_very_long_function_name_that_cannot_fit_in_a_small_frame_at_all"
		     " (x.c) (1 sample, 6.67%)\nlines: x.c:1 (100.0%)</title>") != NULL);
	T(strstr(sa, ">a_very_l..</text>") != NULL);
	T(strstr(sa, "&lt;lambda&gt; (a&amp;b.py:3)") != NULL);
	T(strstr(sa, "thread (2): io &amp; &lt;net&gt;") != NULL);
	T(strstr(sa, "<title>t &lt;&amp;&gt; &quot;x&quot;</title>") != NULL);
	T(!strstr(sa, "<lambda>") && !strstr(sa, "<net>"));
	T(!strstr(sa, "http://") || count(sa, "http://") == 1); /* only the xmlns */
	free(sa);
	free(sb);
	/* Raw output does not depend on insertion order either. */
	sa = render(a, PERFSPY_FORMAT_RAW, NULL);
	sb = render(b, PERFSPY_FORMAT_RAW, NULL);
	T_EQ_STR(sa, sb);
	free(sa);
	free(sb);
	perfspy_folder__free(a);
	perfspy_folder__free(b);
}

/* flamegraph.pl's --minwidth 0.1 px: a frame of 1 sample in 20001 is
 * 0.059 px of 1180 and is left out; 2 samples (0.118 px) stay. */
static void test_min_width(void)
{
	const char *big[] = { "big (a.c:1)" }, *small1[] = { "tiny (a.c:2)" };
	struct perfspy_folder *f;
	char *s;

	T_EQ_INT(perfspy_folder__new(&f), 0);
	T_EQ_INT(perfspy_folder__add(f, big, 1, 20000), 0);
	T_EQ_INT(perfspy_folder__add(f, small1, 1, 1), 0);
	s = render(f, PERFSPY_FORMAT_FLAMEGRAPH, NULL);
	T_EQ_INT(count(s, "<g class=\"f "), 2);
	T(!strstr(s, "tiny"));
	free(s);
	T_EQ_INT(perfspy_folder__add(f, small1, 1, 1), 0);
	s = render(f, PERFSPY_FORMAT_FLAMEGRAPH, NULL);
	T_EQ_INT(count(s, "<g class=\"f "), 3);
	free(s);
	perfspy_folder__free(f);
}

static void test_speedscope(void)
{
	struct perfspy_folder *a = small_folder(false), *b = small_folder(true);
	char *sa = render(a, PERFSPY_FORMAT_SPEEDSCOPE, "t \"q\""), *sb;

	golden("small.speedscope.json", sa);
	sb = render(b, PERFSPY_FORMAT_SPEEDSCOPE, "t \"q\"");
	T_EQ_STR(sa, sb);
	T(!strncmp(sa, "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\"", 62));
	/* One profile per thread root, and one (named by the title) for the
	 * stack without; the heaviest (thread 1, 10 samples) opens first. */
	T_EQ_INT(count(sa, "{\"type\":\"sampled\""), 3);
	T(strstr(sa, "\"name\":\"thread (1): main\",\"unit\":\"none\",\"startValue\":0,\"endValue\":10") != NULL);
	T(strstr(sa, "\"name\":\"thread (2): io & <net>\"") != NULL);
	T(strstr(sa, "\"name\":\"t \\\"q\\\"\",\"unit\"") != NULL);
	T(strstr(sa, "\"activeProfileIndex\":1,") != NULL);
	/* Frames split into name/file/line; thread roots are not frames. */
	T(strstr(sa, "{\"name\":\"work\",\"file\":\"app.c\"}") != NULL); /* grouped */
	T(strstr(sa, "{\"name\":\"malloc\",\"file\":\"libc.so.6\"}") != NULL);
	T(strstr(sa, "{\"name\":\"<lambda>\",\"file\":\"a&b.py\",\"line\":3}") != NULL);
	T(!strstr(sa, "{\"name\":\"thread ("));
	T_EQ_INT(count(sa, "{\"name\":"), 7);
	free(sa);
	free(sb);
	perfspy_folder__free(a);
	perfspy_folder__free(b);
}

static char *render_opts(struct perfspy_folder *f, const struct perfspy_write_opts *o)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *mf = open_memstream(&buf, &len);

	T_EQ_INT(perfspy_folder__write(f, mf, o), 0);
	fclose(mf);
	return buf;
}

/* docs/output.md §7.1: one box per native function, its lines heaviest
 * first in the tooltip; Python frames keep their lines; --lineno splits. */
static void test_group(void)
{
	const char *a[] = { "main (m.c:3)", "__sin_fma (s_sin.c:120)" },
		   *b[] = { "main (m.c:3)", "__sin_fma (s_sin.c:131)" },
		   *c[] = { "main (m.c:5)", "__sin_fma (s_sin.c:120)" },
		   *p1[] = { "f (x.py:1)" }, *p2[] = { "f (x.py:2)" };
	PERFSPY_OPTS(perfspy_write_opts, o, .format = PERFSPY_FORMAT_FLAMEGRAPH);
	struct perfspy_folder *f;
	char *s;

	T_EQ_INT(perfspy_folder__new(&f), 0);
	T_EQ_INT(perfspy_folder__add(f, a, 2, 3), 0);
	T_EQ_INT(perfspy_folder__add(f, b, 2, 6), 0);
	T_EQ_INT(perfspy_folder__add(f, c, 2, 1), 0);
	T_EQ_INT(perfspy_folder__add(f, p1, 1, 1), 0);
	T_EQ_INT(perfspy_folder__add(f, p2, 1, 1), 0);
	s = render_opts(f, &o);
	/* all, main, __sin_fma, f:1, f:2 */
	T_EQ_INT(count(s, "<g class=\"f "), 5);
	T(strstr(s, "<title>main (m.c) (10 samples, 83.33%)\n"
		    "lines: m.c:3 (90.0%), m.c:5 (10.0%)</title>") != NULL);
	T(strstr(s, "<title>__sin_fma (s_sin.c) (10 samples, 83.33%)\n"
		    "lines: s_sin.c:131 (60.0%), s_sin.c:120 (40.0%)</title>") != NULL);
	T(strstr(s, "<title>f (x.py:1) (1 sample, 8.33%)</title>") != NULL);
	T(strstr(s, "<title>f (x.py:2) (1 sample, 8.33%)</title>") != NULL);
	free(s);
	o.lineno = true;
	s = render_opts(f, &o);
	/* all, main:3, main:5, sin:120 twice, sin:131, f:1, f:2 */
	T_EQ_INT(count(s, "<g class=\"f "), 8);
	T(!strstr(s, "lines: "));
	T(strstr(s, "<title>__sin_fma (s_sin.c:131) (6 samples, 50.00%)</title>") != NULL);
	free(s);
	/* speedscope: the same groups, no line. */
	o.lineno = false;
	o.format = PERFSPY_FORMAT_SPEEDSCOPE;
	s = render_opts(f, &o);
	T(strstr(s, "{\"name\":\"__sin_fma\",\"file\":\"s_sin.c\"}") != NULL);
	T_EQ_INT(count(s, "\"name\":\"__sin_fma\""), 1);
	T(strstr(s, "{\"name\":\"f\",\"file\":\"x.py\",\"line\":2}") != NULL);
	free(s);
	perfspy_folder__free(f);
}

static const char *lib_of(void *ctx, const char *frame, size_t len)
{
	(void)ctx;
	return len >= 5 && !memcmp(frame, "sin (", 5) ? "/usr/lib/libm.so.6" : NULL;
}

/* docs/output.md §7.2: each library family has its class and colour box;
 * a frame naming a source file takes its library from the caller. */
static void test_colours(void)
{
	static const struct {
		const char *frame, *cls;
		u8 lo[3], hi[3];
	} want[] = {
		{ "at::addmm (libtorch_cpu.so)", "torch", { 235, 105, 0 }, { 255, 135, 25 } },
		{ "c10::alloc (libc10.so)", "torch", { 235, 105, 0 }, { 255, 135, 25 } },
		{ "cudaLaunchKernel (libcudart.so.12)", "cuda", { 150, 85, 205 }, { 185, 120, 250 } },
		{ "read (libc.so.6)", "crt", { 200, 55, 55 }, { 240, 90, 85 } },
		{ "_dl_relocate (ld-linux-x86-64.so.2)", "crt", { 200, 55, 55 }, { 240, 90, 85 } },
		{ "PyObject_Call (libpython3.12.so.1.0)", "pyrt", { 170, 170, 70 }, { 200, 195, 100 } },
		{ "dgemm (libopenblas.so.0)", "math", { 230, 125, 175 }, { 255, 155, 210 } },
		{ "0x7f00 (?)", "unk", { 165, 140, 120 }, { 185, 160, 140 } },
		{ "work (app)", "nat", { 225, 165, 30 }, { 255, 220, 70 } },
		{ "sin (s_sin.c:12)", "crt", { 200, 55, 55 }, { 240, 90, 85 } },
		{ "cos (s_cos.c:12)", "nat", { 225, 165, 30 }, { 255, 220, 70 } },
		{ "schedule ([kernel.kallsyms])", "ker", { 70, 140, 215 }, { 120, 185, 255 } },
		{ "run (t.py:4)", "py", { 60, 175, 80 }, { 130, 235, 150 } },
	};
	PERFSPY_OPTS(perfspy_write_opts, o, .format = PERFSPY_FORMAT_FLAMEGRAPH,
		     .frame_lib = lib_of);
	struct perfspy_folder *f;
	unsigned i, rgb[3];
	char *s, *at, key[128];

	T_EQ_INT(perfspy_folder__new(&f), 0);
	for (i = 0; i < ARRAY_SIZE(want); i++) {
		const char *st[] = { want[i].frame };

		T_EQ_INT(perfspy_folder__add(f, st, 1, 1), 0);
	}
	s = render_opts(f, &o);
	for (i = 0; i < ARRAY_SIZE(want); i++) {
		struct frame_key { const char *p; } k = { want[i].frame };
		const char *paren = strrchr(k.p, '(');
		int n = (int)(paren - k.p);

		/* The title holds the grouped name: cut at the file's line. */
		snprintf(key, sizeof(key), "<g class=\"f %s\" data-s", want[i].cls);
		at = strstr(s, key);
		while (at && strncmp(strstr(at, "<title>") + 7, k.p, (size_t)n))
			at = strstr(at + 1, key);
		T(at != NULL);
		if (!at) {
			fprintf(stderr, "  (frame %s: no <g> of class %s)\n", k.p, want[i].cls);
			continue;
		}
		at = strstr(at, "fill=\"rgb(");
		T(at && sscanf(at, "fill=\"rgb(%u,%u,%u)", &rgb[0], &rgb[1], &rgb[2]) == 3);
		T(rgb[0] >= want[i].lo[0] && rgb[0] <= want[i].hi[0] &&
		  rgb[1] >= want[i].lo[1] && rgb[1] <= want[i].hi[1] &&
		  rgb[2] >= want[i].lo[2] && rgb[2] <= want[i].hi[2]);
	}
	free(s);
	perfspy_folder__free(f);
}

/* docs/output.md §7.3: the details bar comes after the frames (drawn
 * over them), sits above the first row, and the script fits the width
 * and follows the scroll. */
static void test_page(void)
{
	struct perfspy_folder *f = small_folder(false);
	char *s = render(f, PERFSPY_FORMAT_FLAMEGRAPH, NULL), *frames, *bar;
	unsigned bar_y = 0, row_y = 0;

	frames = strstr(s, "<g id=\"frames\">");
	bar = strstr(s, "<g id=\"bar\"><rect class=\"barbg\" x=\"0\" y=\"");
	T(frames && bar && bar > frames);
	T(bar && sscanf(bar, "<g id=\"bar\"><rect class=\"barbg\" x=\"0\" y=\"%u\"", &bar_y) == 1);
	T(frames && sscanf(strstr(frames, "<rect x=\""), "<rect x=\"%*[0-9.]\" y=\"%u\"", &row_y) == 1);
	T(bar_y + 20 <= row_y);
	T(strstr(s, "id=\"details\"") > bar && strstr(s, "id=\"matched\"") > bar);
	T(strstr(s, "data-bar=\"50\"") != NULL);
	T(strstr(s, "window.addEventListener('resize', fitWidth);") != NULL);
	T(strstr(s, "window.addEventListener('scroll', keepBar);") != NULL);
	/* Static: 1200 px wide as written. */
	T(strstr(s, "<svg version=\"1.1\" width=\"1200\"") != NULL);
	free(s);
	perfspy_folder__free(f);
}

/* docs/output.md §8: the timeline in time order with perf's times. */
static void test_timeline(void)
{
	const char *a[] = { "thread (1): m", "main (m.c:3)", "work (m.c:9)" },
		   *b[] = { "thread (1): m", "main (m.c:3)" },
		   *c[] = { "thread (2): w", "loop (w.py:1)" };
	PERFSPY_OPTS(perfspy_write_opts, o, .format = PERFSPY_FORMAT_SPEEDSCOPE);
	struct perfspy_folder *f;
	char *s;

	T_EQ_INT(perfspy_folder__new(&f), 0);
	T_EQ_INT(perfspy_folder__keep_timeline(f, true), 0);
	T(fold_timeline_on(f));
	/* thread 1 at 1000, 2000, 3000, 4000 (b), then 9000 after a gap;
	 * thread 2 from 2500, added out of time order. */
	T_EQ_INT(perfspy_folder__add(f, a, 3, 1), 0); /* stack 0 */
	T_EQ_INT(perfspy_folder__add(f, b, 2, 1), 0); /* stack 1 */
	T_EQ_INT(perfspy_folder__add(f, c, 2, 1), 0); /* stack 2 */
	T_EQ_INT(fold_timeline_add(f, 1000, true, 1, 0), 0);
	T_EQ_INT(fold_timeline_add(f, 2000, true, 1, 0), 0);
	T_EQ_INT(fold_timeline_add(f, 3500, true, 2, 2), 0);
	T_EQ_INT(fold_timeline_add(f, 2500, true, 2, 2), 0);
	T_EQ_INT(fold_timeline_add(f, 3000, true, 1, 0), 0);
	T_EQ_INT(fold_timeline_add(f, 4000, true, 1, 1), 0);
	T_EQ_INT(fold_timeline_add(f, 9000, true, 1, 0), 0);
	s = render_opts(f, &o);
	/* Thread 1: interval 1000; the 4000 sample weighs 1000 and an empty
	 * sample covers the 4000 ns gap; the last weighs one interval. */
	T(strstr(s, "\"name\":\"thread (1): m\",\"unit\":\"nanoseconds\","
		    "\"startValue\":1000,\"endValue\":10000,\n"
		    "\"samples\":[[0,1],\n[0,1],\n[0,1],\n[0],\n[],\n[0,1]],\n"
		    "\"weights\":[1000,1000,1000,1000,4000,1000]}") != NULL);
	/* Thread 2 starts late: an empty sample from the common start. */
	T(strstr(s, "\"name\":\"thread (2): w\",\"unit\":\"nanoseconds\","
		    "\"startValue\":1000,\"endValue\":4500,\n"
		    "\"samples\":[[],\n[2],\n[2]],\n"
		    "\"weights\":[1500,1000,1000]}") != NULL);
	free(s);
	/* The public entry (the dlfilter plugin's): the same timeline. */
	{
		struct perfspy_folder *g;
		char *t;

		T_EQ_INT(perfspy_folder__new(&g), 0);
		T_EQ_INT(perfspy_folder__add_sample(g, c, 2, 1, 5, 2), 0); /* off: counts */
		T(!fold_timeline_on(g));
		T_EQ_INT(perfspy_folder__keep_timeline(g, true), 0);
		T_EQ_INT(perfspy_folder__add_sample(g, c, 2, 1, 7, 2), 0);
		T_EQ_INT(perfspy_folder__add_sample(g, c, 2, 1, 9, 2), 0);
		t = render_opts(g, &o);
		T(strstr(t, "\"startValue\":7,\"endValue\":11,\n\"samples\":[[0],\n[0]],\n"
			    "\"weights\":[2,2]}") != NULL);
		free(t);
		perfspy_folder__free(g);
	}
	/* A sample without a time drops the timeline: counts again. */
	T_EQ_INT(fold_timeline_add(f, 0, false, 1, 0), 0);
	T(!fold_timeline_on(f));
	s = render_opts(f, &o);
	T(strstr(s, "\"unit\":\"none\"") != NULL && !strstr(s, "nanoseconds"));
	free(s);
	perfspy_folder__free(f);
}

static void test_empty_and_errors(void)
{
	struct {
		struct perfspy_write_opts o;
		char tail[16];
	} big = { .o = { .sz = sizeof(big) } };
	PERFSPY_OPTS(perfspy_write_opts, bad, .format = 7);
	struct perfspy_folder *f;
	FILE *ro;
	char *s;

	T_EQ_INT(perfspy_folder__new(&f), 0);
	s = render(f, PERFSPY_FORMAT_FLAMEGRAPH, NULL);
	T(strstr(s, "<title>all (0 samples, 0.00%)</title>") != NULL);
	T(strstr(s, "</svg>\n") != NULL);
	free(s);
	s = render(f, PERFSPY_FORMAT_SPEEDSCOPE, NULL);
	T(strstr(s, "\"samples\":[],\"weights\":[]") != NULL);
	free(s);
	T_EQ_INT(perfspy_folder__write(f, stderr, &bad), -EINVAL);
	big.tail[3] = 1; /* a field this library does not know, set */
	T_EQ_INT(perfspy_folder__write(f, stderr, &big.o), -PERFSPY_E_OPTS);
	big.tail[3] = 0;
	ro = fopen("/dev/null", "r");
	T(ro != NULL);
	if (ro) {
		PERFSPY_OPTS(perfspy_write_opts, svg, .format = PERFSPY_FORMAT_FLAMEGRAPH);
		PERFSPY_OPTS(perfspy_write_opts, ss, .format = PERFSPY_FORMAT_SPEEDSCOPE);

		T_EQ_INT(perfspy_folder__write(f, ro, &svg), -EIO);
		T_EQ_INT(perfspy_folder__write(f, ro, &ss), -EIO);
		fclose(ro);
	}
	perfspy_folder__free(f);
}

/* A stream that takes sink_left bytes, then fails. */
static size_t sink_left;

static ssize_t sink_write(void *cookie, const char *b, size_t n)
{
	size_t *left = cookie;

	(void)b;
	if (n > *left) {
		*left = 0;
		errno = EIO;
		return -1;
	}
	*left -= n;
	return (ssize_t)n;
}

/* The sink's writing thread (write_common.c): past 4 MB it starts, the
 * bytes arrive in order across buffer boundaries, and write errors come
 * back from it; a smaller output never starts it. */
static void test_sink(void)
{
	size_t total = 9 * 1024 * 1024 + 12345, at, len = 0, k;
	char *want = malloc(total), *buf = NULL;
	u64 x = 88172645463325252ull;
	struct wout w;
	FILE *mf, *bad;

	T(want != NULL);
	if (!want)
		return;
	for (k = 0; k < total; k++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		want[k] = (char)x;
	}
	mf = open_memstream(&buf, &len);
	T_EQ_INT(wout_init(&w, mf), 0);
	wout_put(&w, want, 4 * 1024 * 1024 - 1);
	T(w.pipe == NULL);
	for (at = 4 * 1024 * 1024 - 1; at < total; at += k) {
		/* Pieces of 1 byte to 300 KB: some span a whole buffer. */
		k = (size_t)(want[at] & 0xff) * ((at & 1) ? 1 : 1200) + 1;
		if (k > total - at)
			k = total - at;
		wout_put(&w, want + at, k);
	}
	T(w.pipe != NULL);
	T_EQ_INT(wout_finish(&w), 0);
	T(w.pipe == NULL && w.buf == NULL);
	fclose(mf);
	T_EQ_INT((long long)len, (long long)total);
	T(buf && !memcmp(buf, want, total));
	free(buf);

	/* Errors: before the thread (a full device), and from it (a stream
	 * that takes 5 MB and then fails). */
	bad = fopen("/dev/full", "w");
	T(bad != NULL);
	if (bad) {
		T_EQ_INT(wout_init(&w, bad), 0);
		wout_put(&w, want, total);
		T(w.pipe == NULL);
		T_EQ_INT(wout_finish(&w), -EIO);
		fclose(bad);
	}
	bad = fopencookie(&sink_left, "w", (cookie_io_functions_t){ .write = sink_write });
	T(bad != NULL);
	if (bad) {
		setvbuf(bad, NULL, _IONBF, 0);
		sink_left = 5 * 1024 * 1024;
		T_EQ_INT(wout_init(&w, bad), 0);
		wout_put(&w, want, total);
		wout_u64(&w, 42);
		T_EQ_INT(wout_finish(&w), -EIO);
		T(sink_left < 256 * 1024); /* it took what it could */
		fclose(bad);
	}
	free(want);
}

int main(void)
{
	find_fixdir();
	test_escape();
	test_svg();
	test_min_width();
	test_speedscope();
	test_group();
	test_colours();
	test_page();
	test_timeline();
	test_empty_and_errors();
	test_sink();
	TEST_MAIN_END();
}
