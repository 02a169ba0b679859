// SPDX-License-Identifier: GPL-2.0
/*
 * The public header's own promises: the usage example at the top of
 * perfspy.h compiles and runs (the Makefile cuts it out of the header
 * into header_example.inc, so the test follows the header), PERFSPY_OPTS
 * leaves no stale padding for the options tail check to trip on, and
 * log_level_set makes PERFSPY_LOG_ERROR (0) selectable.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "perfspy.h"
#include "recbuild.h"
#include "test.h"

#define CTX_USER ((uint64_t)-512)

static const uint64_t chain[] = { CTX_USER, 0x400100, 0x400200 };

static void build_image(struct rb *img)
{
	struct rb d = { 0 };
	struct perf_event_attr a;

	rb_default_attr(&a);
	rb_comm(&d, 100, 100, "prog", 1, 1);
	rb_mmap2(&d, 100, 0x400000, 0x1000, 0, "/nonexistent/bin/prog", 2);
	rb_sample(&d, 100, 100, 10, chain, 3, 1000);
	rb_sample(&d, 100, 100, 20, chain, 3, 1000);
	rb_round(&d);
	rb_file(img, &a, sizeof(a) + 16, &d, "h");
	rb_free(&d);
}

/* The header's example, verbatim, as a function returning its err. */
static int header_example(void)
{
#include "header_example.inc"
	return err;
}

static char *slurp(const char *path)
{
	static char buf[4096];
	ssize_t n;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return NULL;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return NULL;
	buf[n] = 0;
	return buf;
}

/* Run the example in a scratch directory holding "perf.data", with
 * stdout sent to a file, and check what it wrote. */
static void test_header_example(void)
{
	char dir[] = "/tmp/perfspy-api-XXXXXX", old[4096], path[4200];
	struct rb img = { 0 };
	int fd, saved, err;
	char *out;

	T(getcwd(old, sizeof(old)) != NULL);
	T(mkdtemp(dir) != NULL);
	T(chdir(dir) == 0);
	build_image(&img);
	fd = open("perf.data", O_WRONLY | O_CREAT | O_TRUNC, 0600);
	T(fd >= 0 && write(fd, img.p, img.len) == (ssize_t)img.len);
	close(fd);
	fflush(stdout);
	saved = dup(STDOUT_FILENO);
	fd = open("out.txt", O_WRONLY | O_CREAT | O_TRUNC, 0600);
	T(fd >= 0 && dup2(fd, STDOUT_FILENO) == STDOUT_FILENO);
	close(fd);
	err = header_example();
	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	T_EQ_INT(err, 0);
	out = slurp("out.txt");
	T_EQ_STR(out, "0x400200 (prog);0x400100 (prog) 2\n");
	snprintf(path, sizeof(path), "%s/perf.data", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/out.txt", dir);
	unlink(path);
	T(chdir(old) == 0);
	rmdir(dir);
	rb_free(&img);
}

/* Leave 0xa5 bytes in the stack the next call will use. */
static __attribute__((noinline)) void dirty_stack(void)
{
	volatile unsigned char junk[4096];
	size_t i;

	for (i = 0; i < sizeof(junk); i++)
		junk[i] = 0xa5;
}

/* The fields set from run-time values, the last one a bool: the bytes
 * after it up to sizeof are padding, which the library's tail check
 * reads. (In a standalone check of the old plain-initializer macro,
 * clang -O0 left 3 of them as stack garbage; gcc happened to clear
 * them. Whether this test sees it depends on the stack layout.) */
static __attribute__((noinline)) int padding_after_last_field(bool v,
							      const char *e)
{
	PERFSPY_OPTS(perfspy_convert_opts, co, .event = e, .no_kernel = v,
		     .threads = v, .keep_interpreter = v, .python_only = v,
		     .qualname = v, .no_lineno = v, .full_filenames = v);
	const unsigned char *p = (const unsigned char *)&co;
	size_t i, end = offsetof(struct perfspy_convert_opts, full_filenames) +
			sizeof(co.full_filenames);
	int bad = 0;

	for (i = end; i < sizeof(co); i++)
		bad += p[i] != 0;
	return bad;
}

static __attribute__((noinline)) int open_with_padding(const void *img,
						       size_t len)
{
	PERFSPY_OPTS(perfspy_open_opts, oo, .log_fn = NULL, .log_ctx = NULL,
		     .log_level = PERFSPY_LOG_WARN, .symfs = NULL,
		     .buildid_dir = NULL, .kallsyms = "", .display_name = "x",
		     .perf_map_dir = "/nonexistent", .log_level_set = true);
	struct perfspy_session *s;
	int err = perfspy_session__open_mem(img, len, &oo, &s);

	if (!err)
		perfspy_session__close(s);
	return err;
}

static void test_opts_padding(void)
{
	struct rb img = { 0 };

	/* The struct really has padding there, or the test proves nothing. */
	T(offsetof(struct perfspy_convert_opts, full_filenames) + sizeof(bool) <
	  sizeof(struct perfspy_convert_opts));
	dirty_stack();
	T_EQ_INT(padding_after_last_field(getpid() > 0, "cpu-clock"), 0);
	build_image(&img);
	dirty_stack();
	T_EQ_INT(open_with_padding(img.p, img.len), 0);
	rb_free(&img);
}

struct logcount {
	int n[4];
};

static void count_log(void *ctx, int level, const char *msg)
{
	struct logcount *lc = ctx;

	(void)msg;
	if (level >= 0 && level < 4)
		lc->n[level]++;
}

/* A capture with a malformed line logs a warning; it is dropped only
 * when ERROR is selected, and ERROR needs log_level_set. */
static void test_log_level_error(void)
{
	static const char cap[] = "a (x.py:1);b (x.py:2) 3\nno count here\n";
	struct logcount def = { { 0 } }, err0 = { { 0 } };
	struct perfspy_folder *f;
	PERFSPY_OPTS(perfspy_read_opts, ro_def, .log_fn = count_log,
		     .log_ctx = &def, .log_level = PERFSPY_LOG_ERROR,
		     .format = PERFSPY_CAPTURE_RAW);
	PERFSPY_OPTS(perfspy_read_opts, ro_err, .log_fn = count_log,
		     .log_ctx = &err0, .log_level = PERFSPY_LOG_ERROR,
		     .format = PERFSPY_CAPTURE_RAW, .log_level_set = true);

	T_EQ_INT(perfspy_folder__new(&f), 0);
	T_EQ_INT(perfspy_folder__read_pyspy(f, NULL, cap, sizeof(cap) - 1,
					    &ro_def, NULL), 0);
	T_EQ_INT(perfspy_folder__read_pyspy(f, NULL, cap, sizeof(cap) - 1,
					    &ro_err, NULL), 0);
	/* 0 without the flag is the old default, WARN: the warning shows. */
	T(def.n[PERFSPY_LOG_WARN] > 0);
	T_EQ_INT(err0.n[PERFSPY_LOG_WARN], 0);
	T_EQ_INT(err0.n[PERFSPY_LOG_INFO] + err0.n[PERFSPY_LOG_DEBUG], 0);
	perfspy_folder__free(f);
}

/* perfspy_perf_map_path(): this process is in our own namespaces, so its
 * map is /tmp/perf-PID.map (the container case: tests/e2e/run-record.sh);
 * a short buffer gets -ERANGE and a NUL-terminated prefix. */
static void test_perf_map_path(void)
{
	char want[64], buf[64], small[8];

	snprintf(want, sizeof(want), "/tmp/perf-%d.map", (int)getpid());
	T_EQ_INT(perfspy_perf_map_path(getpid(), buf, sizeof(buf)), 0);
	T_EQ_STR(buf, want);
	T_EQ_INT(perfspy_perf_map_path(getpid(), small, sizeof(small)), -ERANGE);
	T_EQ_STR(small, "/tmp/pe");
}

int main(void)
{
	test_header_example();
	test_opts_padding();
	test_log_level_error();
	test_perf_map_path();
	TEST_MAIN_END();
}
