// SPDX-License-Identifier: GPL-2.0
/*
 * Reading py-spy captures (libconv/folded/pyspy.c, pyspy_speedscope.c,
 * pyspy_stack.c, json_read.c): raw lines of every py-spy version
 * (docs/pyspy-formats.md §1.2-§1.6, §6), speedscope sampled and
 * evented profiles (§2.1), folded text from a file descriptor
 * (perfspy_folder__read_folded_fd), and malformed input: every prefix of a valid
 * capture is read from an exactly sized heap copy, so valgrind or ASan
 * sees any read past the buffer.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/fold.h"
#include "perfspy.h"
#include "folded/pyspy.h"
#include "test.h"

#define FIXDIR_REL "fixtures/pyspy"

static char fixdir[4096];

static void find_fixdir(void)
{
	const char *src = getenv("PERFSPY_SRCDIR");
	const char *slash = strrchr(__FILE__, '/');

	if (src)
		snprintf(fixdir, sizeof(fixdir), "%s/tests/unit/" FIXDIR_REL, src);
	else if (slash)
		snprintf(fixdir, sizeof(fixdir), "%.*s/" FIXDIR_REL,
			 (int)(slash - __FILE__), __FILE__);
	else
		snprintf(fixdir, sizeof(fixdir), FIXDIR_REL);
}

static char *write_str(struct perfspy_folder *f)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *mf = open_memstream(&buf, &len);

	T_EQ_INT(perfspy_folder__write(f, mf, NULL), 0);
	fclose(mf);
	return buf;
}

/* Read @len bytes of @s from an exactly sized heap copy. */
static int rd_n(struct perfspy_folder *f, const char *s, size_t len, int format,
		struct perfspy_read_stats *st)
{
	PERFSPY_OPTS(perfspy_read_opts, o, .format = format);
	char *copy = malloc(len ? len : 1);
	int err;

	memcpy(copy, s, len);
	err = perfspy_folder__read_pyspy(f, NULL, copy, len, &o, st);
	free(copy);
	return err;
}

/* Read @s into a new folder and return its raw text (caller frees). */
static char *rd(const char *s, int want_err, struct perfspy_read_stats *st)
{
	struct perfspy_folder *f;
	char *out;

	perfspy_folder__new(&f);
	T_EQ_INT(rd_n(f, s, strlen(s), PERFSPY_CAPTURE_AUTO, st), want_err);
	out = write_str(f);
	perfspy_folder__free(f);
	return out;
}

static void expect(const char *in, const char *want)
{
	char *out = rd(in, 0, NULL);

	T_EQ_STR(out, want);
	free(out);
}

static void test_raw(void)
{
	PERFSPY_OPTS(perfspy_read_stats, st);
	char *out;

	/* Empty capture, blank lines only, a missing final newline. */
	out = rd("", 0, &st);
	T_EQ_STR(out, "");
	T_EQ_INT(st.samples, 0);
	T_EQ_INT(st.format, PERFSPY_CAPTURE_RAW);
	free(out);
	expect("\n\n  \n", "");
	expect("b (a.py:2) 1\na (a.py:1) 2", "a (a.py:1) 2\nb (a.py:2) 1\n");
	/* Identical stacks add up; an empty stack is " COUNT" (§1.2). */
	expect("a (a.py:1);b (a.py:2) 2\r\na (a.py:1);b (a.py:2) 3\r\n 7\n",
	       " 7\na (a.py:1);b (a.py:2) 5\n");
	/* Names with spaces: the count is after the last space (§6). */
	expect("my func (my file.py:3) 4\n", "my func (my file.py:3) 4\n");
	/* A ';' inside a process command line is re-joined (§1.6), then
	 * written as ':' like every ';' in a frame. */
	out = rd("process 1:\"python -c from multiprocessing.spawn import spawn_main; "
		 "spawn_main(tracker_fd=5, pipe_handle=7) --multiprocessing-fork\";"
		 "<module> (<string>:1);spawn_main (multiprocessing/spawn.py:122) 2\n"
		 "process 2:\"python -c from multiprocessing.resource_tracker import main;main(5)\";"
		 "<module> (<string>:1) 1\n"
		 "process 3:\"sh -c a; b\";thread (9): T;f (a.py:1) 1\n"
		 "process 4:\"abc;def (a.py:1) 1\n", 0, &st);
	T_EQ_STR(out, "process 1:\"python -c from multiprocessing.spawn import spawn_main: "
		      "spawn_main(tracker_fd=5, pipe_handle=7) --multiprocessing-fork\";"
		      "<module> (<string>:1);spawn_main (multiprocessing/spawn.py:122) 2\n"
		      "process 2:\"python -c from multiprocessing.resource_tracker import main:main(5)\";"
		      "<module> (<string>:1) 1\n"
		      "process 3:\"sh -c a: b\";thread (9): T;f (a.py:1) 1\n"
		      "process 4:\"abc;def (a.py:1) 1\n");
	T_EQ_INT(st.stacks, 4);
	T_EQ_INT(st.bad, 0);
	free(out);
}

static void test_raw_more(void)
{
	PERFSPY_OPTS(perfspy_read_stats, st);
	char *out;

	{
		/* Frame counts prove the joins (';' -> ':' alone would not). */
		struct perfspy_folder *f;
		struct fold_ids buf = { 0 };
		const u32 *ids;
		u32 nr;
		u64 c;

		perfspy_folder__new(&f);
		T_EQ_INT(rd_n(f, "process 3:\"sh -c a; b\";f (a.py:1) 1\n", 36, 0, NULL), 0);
		T_EQ_INT(fold_stack(f, 0, &buf, &ids, &nr, &c), 0);
		T_EQ_INT(nr, 2);
		T_EQ_STR(fold_name(f, ids[0]), "process 3:\"sh -c a: b\"");
		fold_ids_free(&buf);
		perfspy_folder__free(f);
	}
	/* Old thread frames become `thread (ID)` (§1.5). */
	expect("thread 0x7F3A ();f (a.py:1) 1\nthread 1234;f (a.py:1) 2\n"
	       "thread (0x7F3A);f (a.py:1) 3\n",
	       "thread (0x7F3A);f (a.py:1) 4\nthread (1234);f (a.py:1) 2\n");
	/* Stats: thread roots, native frames under Python (--native). */
	out = rd("thread (1): M;f (a.py:1);spin (x.c:3) 2\n_start (python);f (a.py:1) 3\n"
		 "thread (2);f (a.py:2) 4\n", 0, &st);
	T_EQ_INT(st.samples, 9);
	T_EQ_INT(st.thread_samples, 6);
	T_EQ_INT(st.native_samples, 2);
	free(out);
}

static void test_raw_bad(void)
{
	PERFSPY_OPTS(perfspy_read_stats, st);
	static const char perf_magic[] = "PERFILE2\x68\0\0\0\0\0\0\0";
	struct perfspy_folder *f;
	char *out;

	/* Malformed lines are skipped and counted. */
	out = rd("no count here\na;b -3\na;b 12x\na;b\na 99999999999999999999999\n"
		 "ok (a.py:1) 1\n 0\n", 0, &st);
	T_EQ_STR(out, "ok (a.py:1) 1\n");
	T_EQ_INT(st.bad, 5);
	T_EQ_INT(st.stacks, 2);
	free(out);
	/* Nothing but malformed lines: not a capture. */
	out = rd("hello world\n", -PERFSPY_E_CAPTURE, NULL);
	free(out);
	out = rd("[{\"ph\":\"B\"}]", -PERFSPY_E_CAPTURE, NULL);
	free(out);
	perfspy_folder__new(&f);
	T_EQ_INT(rd_n(f, perf_magic, 16, 0, NULL), -PERFSPY_E_CAPTURE);
	/* NUL bytes and high bytes are just bytes. */
	{
		static const char bin[] = "a\0b (a.py:1) 1\n\xff\xfe 2\n";

		T_EQ_INT(rd_n(f, bin, sizeof(bin) - 1, 0, &st), 0);
	}
	T_EQ_INT(st.samples, 3);
	/* Options and arguments. */
	{
		struct perfspy_read_opts o = { .sz = sizeof(o) + 8 };
		char big[sizeof(o) + 8] = { 0 };

		memcpy(big, &o, sizeof(o));
		big[sizeof(o) + 3] = 1;
		T_EQ_INT(perfspy_folder__read_pyspy(f, NULL, "a 1\n", 4,
						    (void *)big, NULL), -PERFSPY_E_OPTS);
		T_EQ_INT(perfspy_folder__read_pyspy(NULL, NULL, "a 1\n", 4, NULL, NULL), -EINVAL);
		T_EQ_INT(perfspy_folder__read_pyspy(f, "/nonexistent/x", NULL, 0, NULL, NULL),
			 -ENOENT);
	}
	perfspy_folder__free(f);
}

/* py-spy's layout (§2.1): profiles before shared, one line, 1/rate. */
static const char ss_pyspy[] =
	"{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\","
	"\"profiles\":[{\"type\":\"sampled\",\"name\":\"Thread 48213 \\\"MainThread\\\"\","
	"\"unit\":\"seconds\",\"startValue\":0.0,\"endValue\":0.03,"
	"\"samples\":[[0,1],[0,1],[0,2]],\"weights\":[0.01,0.01,0.01]},"
	"{\"type\":\"sampled\",\"name\":\"Process 7 Thread 0x7F00 \\\"\\\"\",\"unit\":\"seconds\","
	"\"startValue\":0.0,\"endValue\":0.01,\"samples\":[[3,0]],\"weights\":[0.01]}],"
	"\"shared\":{\"frames\":[{\"name\":\"<module>\",\"file\":\"/nonexistent/proj/train.py\","
	"\"line\":88,\"col\":null},{\"name\":\"main\",\"file\":\"/nonexistent/proj/train.py\","
	"\"line\":71,\"col\":null},{\"name\":\"\\u00e9t\\u00e9 \\ud83d\\udca9 \\ud800x\","
	"\"file\":\"u.py\",\"line\":null,\"col\":null},{\"name\":\"thread (7): own\",\"file\":\"\","
	"\"line\":null,\"col\":null}]},"
	"\"activeProfileIndex\":null,\"exporter\":\"py-spy@0.4.2\",\"name\":\"py-spy profile\"}\n";

static void test_speedscope(void)
{
	PERFSPY_OPTS(perfspy_read_stats, st);
	struct perfspy_folder *f;
	char *out;

	out = rd(ss_pyspy, 0, &st);
	/* Thread roots from profile names; the sample that starts with its
	 * own thread frame keeps it; \u escapes to UTF-8, a lone surrogate
	 * to U+FFFD; full paths shortened (no __init__.py here). */
	T_EQ_STR(out, "thread (48213): MainThread;<module> (train.py:88);main (train.py:71) 2\n"
		      "thread (48213): MainThread;<module> (train.py:88);"
		      "\xc3\xa9t\xc3\xa9 \xf0\x9f\x92\xa9 \xef\xbf\xbdx (u.py) 1\n"
		      "thread (7): own;<module> (train.py:88) 1\n");
	T_EQ_INT(st.format, PERFSPY_CAPTURE_SPEEDSCOPE);
	T_EQ_INT(st.samples, 4);
	T_EQ_INT(st.thread_samples, 4);
	free(out);
	/* full_filenames keeps the paths. */
	{
		PERFSPY_OPTS(perfspy_read_opts, o, .full_filenames = true);

		perfspy_folder__new(&f);
		T_EQ_INT(perfspy_folder__read_pyspy(f, NULL, ss_pyspy, sizeof(ss_pyspy) - 1,
						    &o, NULL), 0);
		out = write_str(f);
		T(strstr(out, "main (/nonexistent/proj/train.py:71) 2\n") != NULL);
		free(out);
		perfspy_folder__free(f);
	}
	/* Unequal weights count weight / smallest; bad indices and missing
	 * weights are skipped; no weights at all count one each. */
	expect("{\"shared\":{\"frames\":[{\"name\":\"a\"},{\"name\":\"b\",\"file\":\"b.py\","
	       "\"line\":2}]},\"profiles\":[{\"type\":\"sampled\",\"name\":\"x\","
	       "\"weights\":[5,10,2.5,5],\"samples\":[[0],[0,1],[0,1],[9],[1],[0]],"
	       "\"unit\":\"milliseconds\"},{\"type\":\"sampled\",\"samples\":[[1],[1]]}]}",
	       "a 2\na;b (b.py:2) 5\nb (b.py:2) 2\n");
	/* Evented: nanoseconds of open time; a mismatched close is counted. */
	out = rd("{\"shared\":{\"frames\":[{\"name\":\"a\",\"file\":\"a.py\",\"line\":1},"
		 "{\"name\":\"b\",\"file\":\"a.py\",\"line\":2},{\"name\":\"c\"}]},"
		 "\"profiles\":[{\"type\":\"evented\",\"name\":\"Thread 5 \\\"w\\\"\","
		 "\"unit\":\"milliseconds\",\"startValue\":0,\"endValue\":4,\"events\":["
		 "{\"type\":\"O\",\"frame\":0,\"at\":0},{\"at\":1,\"type\":\"O\",\"frame\":1},"
		 "{\"type\":\"C\",\"frame\":2,\"at\":1.5},{\"type\":\"C\",\"frame\":1,\"at\":3},"
		 "{\"type\":\"X\",\"frame\":1,\"at\":3},{\"type\":\"C\",\"frame\":0,\"at\":4.0000004}]}]}",
		 0, &st);
	T_EQ_STR(out, "thread (5): w;a (a.py:1) 2000000\nthread (5): w;a (a.py:1);b (a.py:2) 2000000\n");
	T_EQ_INT(st.bad, 2);
	free(out);
	/* Not speedscope, or broken JSON: errors, never crashes. */
	out = rd("{\"profiles\":[]}", -PERFSPY_E_CAPTURE, NULL);
	free(out);
	out = rd("{\"shared\":{\"frames\":[]},\"profiles\":[]} x", -PERFSPY_E_CAPTURE, NULL);
	free(out);
	out = rd("{\"shared\":{\"frames\":[{\"name\":\"a\\q\"}]},\"profiles\":[]}",
		 -PERFSPY_E_CAPTURE, NULL);
	free(out);
	expect("{\"shared\":{\"frames\":[]},\"profiles\":[{\"type\":\"weird\"}]}", "");
}

/* Nesting deeper than JR_MAX_DEPTH fails cleanly (no recursion at all). */
static void test_json_depth(void)
{
	size_t n = 100000, i;
	char *s = malloc(2 * n + 64);
	struct perfspy_folder *f;
	size_t k = 0;

	k += (size_t)sprintf(s, "{\"x\":");
	for (i = 0; i < n; i++)
		s[k++] = '[';
	for (i = 0; i < n; i++)
		s[k++] = ']';
	k += (size_t)sprintf(s + k, ",\"shared\":{\"frames\":[]},\"profiles\":[]}");
	perfspy_folder__new(&f);
	T_EQ_INT(rd_n(f, s, k, 0, NULL), -PERFSPY_E_CAPTURE);
	/* 200 levels are fine. */
	k = (size_t)sprintf(s, "{\"x\":");
	for (i = 0; i < 200; i++)
		s[k++] = '[';
	for (i = 0; i < 200; i++)
		s[k++] = ']';
	k += (size_t)sprintf(s + k, ",\"shared\":{\"frames\":[]},\"profiles\":[]}");
	T_EQ_INT(rd_n(f, s, k, 0, NULL), 0);
	perfspy_folder__free(f);
	free(s);
}

/* Every prefix of valid captures: an error or a partial read, nothing
 * else (the copies are exactly sized: valgrind/ASan catch overreads). */
static void test_prefixes(void)
{
	static const char raw[] = "process 1:\"a; b\";thread (2): x;f (a.py:3);g (b.c:1) 12\n"
				  "thread 0x7F ();h (<frozen x>:1) 3\n";
	const char *docs[] = { raw, ss_pyspy };
	struct perfspy_folder *f;
	size_t d, i;
	int err, bad = 0;

	for (d = 0; d < 2; d++) {
		for (i = 0; i <= strlen(docs[d]); i++) {
			perfspy_folder__new(&f);
			err = rd_n(f, docs[d], i, 0, NULL);
			if (err && err != -PERFSPY_E_CAPTURE)
				bad++;
			perfspy_folder__free(f);
		}
	}
	T_EQ_INT(bad, 0);
}

static void test_files(void)
{
	PERFSPY_OPTS(perfspy_read_stats, st);
	struct perfspy_folder *f;
	char path[4200], *out;

	perfspy_folder__new(&f);
	snprintf(path, sizeof(path), "%s/v042-threads.txt", fixdir);
	T_EQ_INT(perfspy_folder__read_pyspy(f, path, NULL, 0, NULL, &st), 0);
	T_EQ_INT(st.format, PERFSPY_CAPTURE_RAW);
	T(st.samples > 0 && st.thread_samples == st.samples && !st.bad);
	snprintf(path, sizeof(path), "%s/sampled.speedscope.json", fixdir);
	T_EQ_INT(perfspy_folder__read_pyspy(f, path, NULL, 0, NULL, &st), 0);
	T_EQ_INT(st.format, PERFSPY_CAPTURE_SPEEDSCOPE);
	T(st.samples > 0 && !st.bad);
	snprintf(path, sizeof(path), "%s/evented.speedscope.json", fixdir);
	T_EQ_INT(perfspy_folder__read_pyspy(f, path, NULL, 0, NULL, &st), 0);
	T_EQ_INT(st.samples, 30000);
	snprintf(path, sizeof(path), "%s/old-versions.txt", fixdir);
	T_EQ_INT(perfspy_folder__read_pyspy(f, path, NULL, 0, NULL, &st), 0);
	T_EQ_INT(st.samples, 15);
	snprintf(path, sizeof(path), "%s/native.txt", fixdir);
	T_EQ_INT(perfspy_folder__read_pyspy(f, path, NULL, 0, NULL, &st), 0);
	T_EQ_INT(st.native_samples, 127);
	out = write_str(f);
	/* Raw and speedscope captures of one run land on the same stacks. */
	T(strstr(out, "thread (4242): MainThread;<module> (demo.py:9);work (demo.py:5) 123\n"));
	T(strstr(out, "thread (77): main;main (app.py:3);step (app.py:10) 15000\n"));
	T(strstr(out, "thread (0x7F3A2B1C0700);work (demo.py) 5\n"));
	T(strstr(out, "thread (4242);work (demo.py:5) 8\n"));
	free(out);
	perfspy_folder__free(f);
}

/* @len bytes of @s written to a pipe @step bytes at a time by a child,
 * read back with perfspy_folder__read_folded_fd: the folder's raw text. */
static char *rd_fd(const char *s, size_t len, size_t step, int want_err,
		   struct perfspy_read_stats *st)
{
	PERFSPY_OPTS(perfspy_read_opts, o, .display_name = "pipe");
	struct perfspy_folder *f;
	int p[2], status;
	size_t i, k;
	char *out;
	pid_t pid;

	T_EQ_INT(pipe(p), 0);
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		for (i = 0; i < len; i += k) {
			k = len - i < step ? len - i : step;
			if (write(p[1], s + i, k) != (ssize_t)k)
				_exit(1);
		}
		_exit(0);
	}
	close(p[1]);
	perfspy_folder__new(&f);
	T_EQ_INT(perfspy_folder__read_folded_fd(f, p[0], &o, st), want_err);
	close(p[0]);
	T(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && !WEXITSTATUS(status));
	out = write_str(f);
	perfspy_folder__free(f);
	return out;
}

/*
 * Folded text from a descriptor, a chunk at a time: the same folder as
 * the whole text read at once, whatever the pieces the pipe delivers
 * (a byte order mark split over two reads, lines across reads, a line
 * longer than the reader's 256 KiB chunk, no final newline).
 */
static void test_folded_fd(void)
{
	PERFSPY_OPTS(perfspy_read_stats, st);
	PERFSPY_OPTS(perfspy_read_opts, bad_fmt, .format = PERFSPY_CAPTURE_SPEEDSCOPE);
	size_t n = 0, cap = 1 << 21, i, steps[] = { 61, 4096, 1 << 20 };
	char *text = malloc(cap), *want, *got;
	struct perfspy_folder *f;

	n += (size_t)sprintf(text + n, "\xef\xbb\xbf" "thread 1234;main (a.py:1);f (libc.so.6) 3\r\n");
	n += (size_t)sprintf(text + n, "not a stack\n\n");
	for (i = 0; i < 20000; i++)
		n += (size_t)sprintf(text + n, "thread (%zu): w;run (t.py:%zu);leaf%zu (x.c:1) %zu\n",
				     i % 7, i % 13, i % 101, 1 + i % 5);
	/* One frame of 300000 bytes. */
	n += (size_t)sprintf(text + n, "long;");
	memset(text + n, 'x', 300000);
	n += 300000;
	n += (size_t)sprintf(text + n, " 2\nprocess 1:\"a; b\";main (a.py:2) 4");
	T(n < cap);

	perfspy_folder__new(&f);
	T_EQ_INT(rd_n(f, text, n, PERFSPY_CAPTURE_RAW, NULL), 0);
	want = write_str(f);
	perfspy_folder__free(f);
	T(strstr(want, "thread (1234);main (a.py:1);f (libc.so.6) 3\n") != NULL);
	for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		got = rd_fd(text, n, steps[i], 0, NULL);
		T_EQ_STR(got, want);
		free(got);
	}
	/* The byte order mark and first line one byte per read. */
	got = rd_fd(text, 46, 1, 0, NULL);
	T_EQ_STR(got, "thread (1234);main (a.py:1);f (libc.so.6) 3\n");
	free(got);
	got = rd_fd(text, n, 1 << 16, 0, &st);
	T_EQ_INT(st.format, PERFSPY_CAPTURE_RAW);
	T_EQ_INT(st.bad, 1);
	T_EQ_INT(st.stacks, 20003);
	T_EQ_INT(st.thread_samples, 3 + 60000);
	free(got);
	free(want);

	/* Nothing but bad lines is no capture; an empty text is none either
	 * (no stacks), and a speedscope format is refused. */
	free(rd_fd("x\ny\n", 4, 1, -PERFSPY_E_CAPTURE, NULL));
	free(rd_fd("", 0, 1, 0, &st));
	T_EQ_INT(st.stacks, 0);
	perfspy_folder__new(&f);
	T_EQ_INT(perfspy_folder__read_folded_fd(f, 0, &bad_fmt, NULL), -PERFSPY_E_OPTS);
	T_EQ_INT(perfspy_folder__read_folded_fd(f, -1, NULL, NULL), -EINVAL);
	perfspy_folder__free(f);
	free(text);
}

int main(void)
{
	find_fixdir();
	test_raw();
	test_raw_more();
	test_raw_bad();
	test_speedscope();
	test_json_depth();
	test_prefixes();
	test_files();
	test_folded_fd();
	TEST_MAIN_END();
}
