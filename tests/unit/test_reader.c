// SPDX-License-Identifier: GPL-2.0
/*
 * Reader, record decoding, ordering and machine model, through the public
 * session API on perf.data images built in memory (tests/lib/recbuild.c).
 */
#include <errno.h>
#include <stdlib.h>

#include "perfspy.h"
#include "recbuild.h"
#include "test.h"

#define CTX_USER ((uint64_t)-512)

static const uint64_t chain[] = { CTX_USER, 0x400100, 0x400200 };
static char host[64];

/* COMM + MMAP2 + 3 samples out of time order in one round + 1 after. */
static void build_records(struct rb *d)
{
	rb_comm(d, 100, 100, "prog", 1, 1);
	rb_mmap2(d, 100, 0x400000, 0x1000, 0, "/nonexistent/bin/prog", 2);
	rb_sample(d, 100, 100, 30, chain, 3, 1000);
	rb_sample(d, 100, 100, 10, chain, 3, 1000);
	rb_sample(d, 100, 100, 20, chain, 3, 1000);
	rb_round(d);
	rb_sample(d, 100, 100, 40, chain, 2, 500);
	rb_round(d);
}

/* Convert @img and return the folded text (malloc'd) or NULL; *@err
 * gets the convert/open error. */
static char *convert(const struct rb *img, const struct perfspy_convert_opts *co,
		     int *err, struct perfspy_info *info)
{
	PERFSPY_OPTS(perfspy_open_opts, oo, .kallsyms = "");
	struct perfspy_session *s = NULL;
	struct perfspy_folder *f = NULL;
	char *buf = NULL;
	size_t len = 0;
	FILE *mf;

	*err = perfspy_session__open_mem(img->p, img->len, &oo, &s);
	if (*err)
		return NULL;
	if (perfspy_folder__new(&f))
		abort();
	*err = perfspy_session__convert(s, co, f);
	if (info) {
		perfspy_session__info(s, info);
		/* Strings die with the session: keep the one we check. */
		snprintf(host, sizeof(host), "%s", info->hostname ? info->hostname : "");
		info->hostname = host;
	}
	mf = open_memstream(&buf, &len);
	if (!*err)
		perfspy_folder__write(f, mf, NULL);
	fclose(mf);
	perfspy_folder__free(f);
	perfspy_session__close(s);
	return buf;
}

static void test_file_mode(void)
{
	struct rb d = { 0 }, img = { 0 };
	struct perf_event_attr a;
	PERFSPY_OPTS(perfspy_info, info);
	int err;
	char *out;

	rb_default_attr(&a);
	build_records(&d);
	rb_file(&img, &a, sizeof(a) + 16, &d, "testhost");
	out = convert(&img, NULL, &err, &info);
	T_EQ_INT(err, 0);
	T_EQ_STR(out, "0x400100 (prog) 1\n0x400200 (prog);0x400100 (prog) 3\n");
	T_EQ_INT(info.nr_samples, 4);
	T_EQ_STR(info.hostname, "testhost");
	T_EQ_INT(info.nr_threads, 1);
	T_EQ_INT(info.time_first, 10);
	T_EQ_INT(info.time_last, 40);
	T(info.has_callchain);
	T(!info.truncated);
	free(out);

	/* --weight period sums periods. */
	{
		PERFSPY_OPTS(perfspy_convert_opts, co, .weight = PERFSPY_WEIGHT_PERIOD);

		out = convert(&img, &co, &err, NULL);
		T_EQ_STR(out, "0x400100 (prog) 500\n0x400200 (prog);0x400100 (prog) 3000\n");
		free(out);
	}
	/* A bigger attr from a newer perf (6.12: attr_size 152) is cut,
	 * not rejected (docs/perf-data-format.md §1.2). */
	rb_file(&img, &a, sizeof(a) + 16 + 8, &d, "testhost");
	out = convert(&img, NULL, &err, NULL);
	T_EQ_INT(err, 0);
	T_EQ_STR(out, "0x400100 (prog) 1\n0x400200 (prog);0x400100 (prog) 3\n");
	free(out);
	rb_free(&d);
	rb_free(&img);
}

static void test_pipe_mode(void)
{
	struct rb d = { 0 }, img = { 0 };
	struct perf_event_attr a;
	PERFSPY_OPTS(perfspy_convert_opts, co, .threads = true);
	int err;
	char *out;

	rb_default_attr(&a);
	build_records(&d);
	rb_pipe(&img, &a, &d);
	out = convert(&img, &co, &err, NULL);
	T_EQ_INT(err, 0);
	T_EQ_STR(out, "thread (100): prog;0x400100 (prog) 1\n"
		      "thread (100): prog;0x400200 (prog);0x400100 (prog) 3\n");
	free(out);
	rb_free(&d);
	rb_free(&img);
}

/* Time order decides what a sample sees: the rename at t=50 is written
 * before the sample at t=45 but must not apply to it; the fork at t=3
 * gives pid 200 a copy of pid 100's maps. */
static void test_ordering_and_fork(void)
{
	struct rb d = { 0 }, img = { 0 };
	struct perf_event_attr a;
	PERFSPY_OPTS(perfspy_convert_opts, co, .comm = "prog");
	PERFSPY_OPTS(perfspy_convert_opts, child, .pid = 200);
	int err;
	char *out;

	rb_default_attr(&a);
	rb_comm(&d, 100, 100, "prog", 1, 1);
	rb_mmap2(&d, 100, 0x400000, 0x1000, 0, "/nonexistent/bin/prog", 2);
	rb_fork(&d, 200, 100, 200, 100, 3);
	rb_round(&d);
	rb_comm(&d, 100, 100, "renamed", 0, 50);
	rb_sample(&d, 100, 100, 45, chain, 3, 1);
	rb_sample(&d, 200, 200, 46, chain, 2, 1);
	rb_round(&d);
	rb_file(&img, &a, sizeof(a) + 16, &d, "h");
	out = convert(&img, &co, &err, NULL);
	T_EQ_INT(err, 0);
	/* Both kept: pid 100's sample predates the rename, pid 200's thread
	 * inherited the name at the fork. */
	T_EQ_STR(out, "0x400100 (prog) 1\n0x400200 (prog);0x400100 (prog) 1\n");
	free(out);
	out = convert(&img, &child, &err, NULL);
	T_EQ_STR(out, "0x400100 (prog) 1\n");
	free(out);
	rb_free(&d);
	rb_free(&img);
}

/* Every cut of the image: no crash, never more samples than the whole,
 * and a cut inside the data section keeps what came before it. */
static void test_truncation(void)
{
	struct rb d = { 0 }, img = { 0 };
	struct perf_event_attr a;
	PERFSPY_OPTS(perfspy_info, info);
	size_t cut, data_end;
	int err, kept = 0;
	char *out;

	rb_default_attr(&a);
	build_records(&d);
	rb_pipe(&img, &a, &d);
	data_end = img.len;
	for (cut = 0; cut < data_end; cut++) {
		struct rb part = { img.p, cut, cut };

		out = convert(&part, NULL, &err, &info);
		free(out);
		if (err)
			continue;
		T(info.nr_samples <= 4);
		T(cut >= data_end || info.truncated || info.nr_samples <= 4);
		if (info.nr_samples == 3)
			kept++;
	}
	T(kept > 0); /* cuts inside the 4th sample keep the first three */
	rb_free(&d);
	rb_free(&img);
}

static void test_bad_input(void)
{
	struct rb d = { 0 }, img = { 0 };
	struct perf_event_attr a;
	PERFSPY_OPTS(perfspy_info, info);
	unsigned char junk[16] = { 1, 2, 3 };
	/* Pipe header of the other byte order: magic and size 16 swapped. */
	uint64_t swapped[2] = { 0x50455246494c4532ULL, 0x1000000000000000ULL };
	uint64_t swapped_short[2] = { 0x50455246494c4532ULL, 16 };
	struct perfspy_session *s;
	int err;
	char *out;

	T_EQ_INT(perfspy_session__open_mem(junk, 0, NULL, &s), -PERFSPY_E_FORMAT);
	T_EQ_INT(perfspy_session__open_mem(junk, sizeof(junk), NULL, &s), -PERFSPY_E_FORMAT);
	/* The other byte order is read in file layout only (swap.c). */
	T_EQ_INT(perfspy_session__open_mem(swapped, sizeof(swapped), NULL, &s),
		 -PERFSPY_E_UNSUPPORTED);
	T_EQ_INT(perfspy_session__open_mem(swapped_short, sizeof(swapped_short), NULL, &s),
		 -PERFSPY_E_FORMAT);

	/* A record of size 0 leaves no framing: a file-level error. */
	rb_default_attr(&a);
	build_records(&d);
	rb_raw(&d, 9, 0, NULL, 0);
	d.p[d.len - 2] = 0; /* size field of that record = 0 */
	d.p[d.len - 1] = 0;
	rb_pipe(&img, &a, &d);
	out = convert(&img, NULL, &err, NULL);
	T_EQ_INT(err, -PERFSPY_E_FORMAT);
	free(out);

	/* An unknown type and a sample whose callchain runs past its size
	 * are counted and skipped. */
	d.len = 0;
	build_records(&d);
	{
		uint64_t p[2] = { 7, 7 };
		struct perfspy_stats st = { .sz = sizeof(st) };
		PERFSPY_OPTS(perfspy_open_opts, oo, .kallsyms = "");
		struct perfspy_folder *f;

		rb_raw(&d, 30, 0, p, sizeof(p));
		rb_raw(&d, 9, 0, p, sizeof(p)); /* SAMPLE too short */
		rb_pipe(&img, &a, &d);
		T_EQ_INT(perfspy_session__open_mem(img.p, img.len, &oo, &s), 0);
		perfspy_folder__new(&f);
		T_EQ_INT(perfspy_session__convert(s, NULL, f), 0);
		perfspy_session__stats(s, &st);
		perfspy_session__info(s, &info);
		T_EQ_INT(st.unknown_records, 1);
		T_EQ_INT(st.bad_records, 1);
		T_EQ_INT(info.nr_samples, 5);
		T_EQ_INT(perfspy_folder__total(f), 4);
		perfspy_folder__free(f);
		perfspy_session__close(s);
	}
	rb_free(&d);
	rb_free(&img);
}

struct logcount {
	int aux;
};

static void count_log(void *ctx, int level, const char *msg)
{
	struct logcount *c = ctx;

	if (level == PERFSPY_LOG_WARN && strstr(msg, "AUX area trace data") &&
	    strstr(msg, "skipped"))
		c->aux++;
}

/* An Intel PT recording: AUXTRACE_INFO, then AUXTRACE records whose
 * trace bytes follow the record (outside header.size), between ordinary
 * samples. The trace is skipped with one note (not one per record, not
 * again on a second pass); the samples are converted, in both modes. */
static void test_auxtrace(void)
{
	uint64_t info_rec[3] = { 8 /* INTEL_PT */, 0, 0 };
	/* size of the trailing data, offset, reference, idx|tid, cpu|res */
	uint64_t aux_rec[5] = { 16, 0, 0, 0, 0 };
	uint64_t trace[2] = { 0x0102030405060708ULL, 0x1112131415161718ULL };
	struct rb d = { 0 }, img = { 0 }, plain = { 0 }, pimg = { 0 };
	struct perf_event_attr a;
	struct logcount lc = { 0 };
	PERFSPY_OPTS(perfspy_open_opts, oo, .kallsyms = "", .log_fn = count_log,
		     .log_ctx = &lc);
	struct perfspy_session *s;
	struct perfspy_folder *f;
	int pipe, err;
	char *want;

	rb_default_attr(&a);
	build_records(&plain);
	rb_pipe(&pimg, &a, &plain);
	want = convert(&pimg, NULL, &err, NULL);
	T_EQ_INT(err, 0);
	rb_raw(&d, 70, 0, info_rec, sizeof(info_rec));
	rb_comm(&d, 100, 100, "prog", 1, 1);
	rb_mmap2(&d, 100, 0x400000, 0x1000, 0, "/nonexistent/bin/prog", 2);
	rb_sample(&d, 100, 100, 30, chain, 3, 1000);
	rb_raw(&d, 71, 0, aux_rec, sizeof(aux_rec));
	rb_put(&d, trace, sizeof(trace));
	rb_sample(&d, 100, 100, 10, chain, 3, 1000);
	rb_sample(&d, 100, 100, 20, chain, 3, 1000);
	rb_round(&d);
	rb_raw(&d, 71, 0, aux_rec, sizeof(aux_rec));
	rb_put(&d, trace, sizeof(trace));
	rb_sample(&d, 100, 100, 40, chain, 2, 500);
	rb_round(&d);
	for (pipe = 0; pipe < 2; pipe++) {
		char *buf = NULL;
		size_t len = 0;
		FILE *mf;

		img.len = 0;
		if (pipe)
			rb_pipe(&img, &a, &d);
		else
			rb_file(&img, &a, sizeof(a), &d, "host");
		lc.aux = 0;
		T_EQ_INT(perfspy_session__open_mem(img.p, img.len, &oo, &s), 0);
		T_EQ_INT(perfspy_folder__new(&f), 0);
		T_EQ_INT(perfspy_session__convert(s, NULL, f), 0);
		T_EQ_INT(perfspy_folder__total(f), 4);
		mf = open_memstream(&buf, &len);
		perfspy_folder__write(f, mf, NULL);
		fclose(mf);
		T_EQ_STR(buf, want);
		free(buf);
		perfspy_folder__free(f);
		if (!pipe) { /* a second pass: no second note */
			T_EQ_INT(perfspy_folder__new(&f), 0);
			T_EQ_INT(perfspy_session__convert(s, NULL, f), 0);
			T_EQ_INT(perfspy_folder__total(f), 4);
			perfspy_folder__free(f);
		}
		T_EQ_INT(lc.aux, 1);
		perfspy_session__close(s);
	}
	free(want);
	rb_free(&d);
	rb_free(&img);
	rb_free(&plain);
	rb_free(&pimg);
}

static void test_opts_and_errors(void)
{
	struct {
		struct perfspy_convert_opts o;
		char tail[8];
	} big;
	char buf[128];
	int code;

	/* Unknown non-zero tail bytes are rejected. */
	memset(&big, 0, sizeof(big));
	big.o.sz = sizeof(big);
	big.tail[3] = 1;
	T_EQ_INT(perfspy_session__convert(NULL, &big.o, NULL), -EINVAL);
	/* Every code has a message, either sign. */
	for (code = 4000; code <= 4011; code++) {
		T_EQ_INT(perfspy_strerror(-code, buf, sizeof(buf)), 0);
		T(strncmp(buf, "unknown", 7) != 0);
	}
	T_EQ_INT(perfspy_strerror(-ENOENT, buf, sizeof(buf)), 0);
	T_EQ_INT(perfspy_strerror(4999, buf, sizeof(buf)), -EINVAL);
	T(perfspy_version_string()[0] >= '0');
}

int main(void)
{
	test_file_mode();
	test_pipe_mode();
	test_ordering_and_fork();
	test_truncation();
	test_bad_input();
	test_auxtrace();
	test_opts_and_errors();
	TEST_MAIN_END();
}
