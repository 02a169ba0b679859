// SPDX-License-Identifier: GPL-2.0
/*
 * Recordings from other machines (issue 17), through the public session
 * API on perf.data images built in memory (tests/lib/recbuild.c):
 * - kernel frames are named only from a kallsyms of the recorded kernel
 *   (build id, _text, OS release), never from this machine's otherwise;
 * - the default event is the one with the most samples, folded with its
 *   twins on the other core PMUs of a hybrid CPU.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "perfspy.h"
#include "recbuild.h"
#include "test.h"

#define CTX_KERNEL ((uint64_t)-128)
#define CTX_USER ((uint64_t)-512)

static const unsigned char foreign_bid[20] = {
	0x8b, 0x50, 0x69, 0x41, 0x5e, 0x14, 0xc6, 0x5b, 0x74, 0x66,
	0x61, 0xfe, 0xb0, 0xb2, 0x32, 0x46, 0xa1, 0xd4, 0x4e, 0xa7,
};

static char tmpdir[64];

struct result {
	char *text;    /* folded output, malloc'd */
	int err;
	bool folded[8];
	uint64_t samples[8];
	char kallsyms[256]; /* perfspy_session__kernel().kallsyms or "" */
	uint64_t nr_kernel; /* perfspy_session__kernel().nr_kernel_samples */
};

static void run(const struct rb *img, const char *kallsyms, const char *event,
		struct result *r)
{
	PERFSPY_OPTS(perfspy_open_opts, oo, .kallsyms = kallsyms,
		     .buildid_dir = tmpdir);
	PERFSPY_OPTS(perfspy_convert_opts, co, .event = event);
	PERFSPY_OPTS(perfspy_event, ev);
	PERFSPY_OPTS(perfspy_kernel, k);
	struct perfspy_session *s = NULL;
	struct perfspy_folder *f = NULL;
	size_t len = 0;
	uint32_t i;
	FILE *mf;

	memset(r, 0, sizeof(*r));
	r->err = perfspy_session__open_mem(img->p, img->len, &oo, &s);
	if (r->err)
		return;
	if (perfspy_folder__new(&f))
		abort();
	r->err = perfspy_session__convert(s, &co, f);
	for (i = 0; i < 8 && !perfspy_session__event(s, i, &ev); i++) {
		r->folded[i] = ev.folded;
		r->samples[i] = ev.nr_samples;
	}
	if (!perfspy_session__kernel(s, &k) && k.kallsyms)
		snprintf(r->kallsyms, sizeof(r->kallsyms), "%s", k.kallsyms);
	r->nr_kernel = k.nr_kernel_samples;
	mf = open_memstream(&r->text, &len);
	if (!r->err)
		perfspy_folder__write(f, mf, NULL);
	fclose(mf);
	perfspy_folder__free(f);
	perfspy_session__close(s);
}

static long total(const char *text)
{
	const char *p = text, *nl, *sp;
	long n = 0;

	for (; p && *p; p = nl + 1) {
		nl = strchr(p, '\n');
		if (!nl)
			break;
		for (sp = nl; sp > p && sp[-1] != ' '; sp--)
			;
		n += strtol(sp, NULL, 10);
	}
	return n;
}

static void attr_ev(struct perf_event_attr *a, uint32_t type, uint64_t config)
{
	memset(a, 0, sizeof(*a));
	a->type = type;
	a->config = config;
	a->size = sizeof(*a);
	a->sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
			 PERF_SAMPLE_TIME | PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN;
	a->sample_period = 1;
}

static void user_samples(struct rb *d, uint64_t id, unsigned n, uint64_t ip)
{
	uint64_t chain[] = { CTX_USER, ip };
	unsigned i;

	for (i = 0; i < n; i++)
		rb_sample_ev(d, id, PERF_RECORD_MISC_USER, 100, 100, 10 + i, ip,
			     chain, 2, NULL, 0);
}

/* ------------------------------------------------------------ events */

static void test_most_samples(void)
{
	static const char *const names[] = { "cpu-clock:u", "task-clock:u" };
	struct perf_event_attr a[2];
	struct rb d = { 0 }, img = { 0 };
	struct result r;

	attr_ev(&a[0], PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK);
	attr_ev(&a[1], PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK);
	user_samples(&d, 1, 1, 0x400100);
	user_samples(&d, 2, 3, 0x400200);
	rb_file_events(&img, a, names, 2, &d, NULL, NULL);

	run(&img, "", NULL, &r);
	T_EQ_INT(r.err, 0);
	T_EQ_INT(total(r.text), 3);
	T(r.text && strstr(r.text, "0x400200") && !strstr(r.text, "0x400100"));
	T(!r.folded[0] && r.folded[1]);
	T_EQ_INT(r.samples[1], 3);
	T_EQ_INT(r.nr_kernel, 0);
	free(r.text);

	/* --event still picks one. */
	run(&img, "", "cpu-clock", &r);
	T_EQ_INT(r.err, 0);
	T_EQ_INT(total(r.text), 1);
	T(r.folded[0] && !r.folded[1]);
	free(r.text);
	rb_free(&img);

	/* perf's dummy event first (record --delay, -a): the other one. */
	attr_ev(&a[0], PERF_TYPE_SOFTWARE, PERF_COUNT_SW_DUMMY);
	rb_free(&d);
	user_samples(&d, 2, 3, 0x400200);
	rb_file_events(&img, a, (const char *const[]){ "dummy:u", "task-clock:u" }, 2,
		       &d, NULL, NULL);
	run(&img, "", NULL, &r);
	T_EQ_INT(total(r.text), 3);
	T(!r.folded[0] && r.folded[1]);
	free(r.text);
	rb_free(&d);
	rb_free(&img);
}

static void test_hybrid(void)
{
	/* 12th-gen Intel: the same event on both core PMUs (perf's
	 * extended type, PMU type << 32), then dummy; an atom-only
	 * instructions event is not a twin of cycles. */
	static const char *const names[] = {
		"cpu_atom/cycles:Pu/", "cpu_core/cycles:Pu/", "dummy:u",
		"cpu_atom/instructions:Pu/",
	};
	struct perf_event_attr a[4];
	struct rb d = { 0 }, img = { 0 };
	struct result r;

	attr_ev(&a[0], PERF_TYPE_HARDWARE, (10ULL << 32) | PERF_COUNT_HW_CPU_CYCLES);
	attr_ev(&a[1], PERF_TYPE_HARDWARE, (4ULL << 32) | PERF_COUNT_HW_CPU_CYCLES);
	attr_ev(&a[2], PERF_TYPE_SOFTWARE, PERF_COUNT_SW_DUMMY);
	attr_ev(&a[3], PERF_TYPE_HARDWARE, (10ULL << 32) | PERF_COUNT_HW_INSTRUCTIONS);
	user_samples(&d, 2, 5, 0x400200);
	user_samples(&d, 1, 2, 0x400100);
	user_samples(&d, 4, 4, 0x400400);
	rb_file_events(&img, a, names, 4, &d, NULL, NULL);

	run(&img, "", NULL, &r);
	T_EQ_INT(r.err, 0);
	T_EQ_INT(total(r.text), 7);
	T(r.folded[0] && r.folded[1] && !r.folded[2] && !r.folded[3]);
	T(r.text && !strstr(r.text, "0x400400"));
	free(r.text);

	run(&img, "", "cpu_core/cycles:Pu/", &r);
	T_EQ_INT(r.err, 0);
	T_EQ_INT(total(r.text), 5);
	T(!r.folded[0] && r.folded[1]);
	free(r.text);

	/* With the core PMU empty the atom one still wins, with its twin. */
	rb_free(&d);
	user_samples(&d, 1, 2, 0x400100);
	rb_file_events(&img, a, names, 4, &d, NULL, NULL);
	run(&img, "", NULL, &r);
	T_EQ_INT(total(r.text), 2);
	T(r.folded[0] && r.folded[1]);
	free(r.text);
	rb_free(&d);
	rb_free(&img);
}

static int cut_warnings;

static void count_cut(void *ctx, int level, const char *msg)
{
	(void)ctx;
	(void)level;
	if (strstr(msg, "data ends inside a record"))
		cut_warnings++;
}

/* The counting pass before the conversion keeps quiet: a file cut inside
 * a record is still reported, once, by the conversion itself. */
static void test_count_pass_quiet(void)
{
	static const char *const names[] = { "cpu-clock:u", "task-clock:u" };
	struct perf_event_attr a[2];
	struct rb d = { 0 }, img = { 0 };
	struct perfspy_session *s = NULL;
	struct perfspy_folder *f = NULL;
	uint64_t data_off;

	attr_ev(&a[0], PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK);
	attr_ev(&a[1], PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK);
	user_samples(&d, 1, 1, 0x400100);
	user_samples(&d, 2, 3, 0x400200);
	rb_file_events(&img, a, names, 2, &d, NULL, NULL);
	/* data.size 0 (perf killed: read to the end), the file cut in the
	 * last sample. */
	memcpy(&data_off, img.p + 40, 8);
	memset(img.p + 48, 0, 8);
	img.len = data_off + d.len - 8;
	{
		PERFSPY_OPTS(perfspy_open_opts, oo, .kallsyms = "", .log_fn = count_cut,
			     .log_level = PERFSPY_LOG_WARN);

		T_EQ_INT(perfspy_session__open_mem(img.p, img.len, &oo, &s), 0);
	}
	if (perfspy_folder__new(&f))
		abort();
	cut_warnings = 0;
	T_EQ_INT(perfspy_session__convert(s, NULL, f), 0);
	T_EQ_INT(cut_warnings, 1);
	perfspy_folder__free(f);
	perfspy_session__close(s);
	rb_free(&d);
	rb_free(&img);
}

/* A stream: no counting pass (it is read once), so the first event,
 * with its twins on the other core PMUs. Names come as EVENT_UPDATE
 * records, as perf record -o - writes them. */
static void test_hybrid_stream(void)
{
	static const char *const names[] = { "cpu_atom/cycles:Pu/", "cpu_core/cycles:Pu/" };
	struct perf_event_attr a[2];
	struct rb d = { 0 }, img = { 0 };
	struct result r;
	unsigned i;

	attr_ev(&a[0], PERF_TYPE_HARDWARE, (10ULL << 32) | PERF_COUNT_HW_CPU_CYCLES);
	attr_ev(&a[1], PERF_TYPE_HARDWARE, (4ULL << 32) | PERF_COUNT_HW_CPU_CYCLES);
	rb_u64(&img, 0x32454c4946524550ULL);
	rb_u64(&img, 16);
	for (i = 0; i < 2; i++) {
		char name[32] = { 0 };
		struct perf_event_header h = { 64 /* HEADER_ATTR */, 0,
					       (uint16_t)(8 + sizeof(a[i]) + 8) };

		rb_put(&img, &h, sizeof(h));
		rb_put(&img, &a[i], sizeof(a[i]));
		rb_u64(&img, i + 1);
		h = (struct perf_event_header){ 78 /* EVENT_UPDATE */, 0, 8 + 16 + 32 };
		rb_put(&img, &h, sizeof(h));
		rb_u64(&img, 2); /* PERF_EVENT_UPDATE__NAME */
		rb_u64(&img, i + 1);
		strncpy(name, names[i], sizeof(name) - 1);
		rb_put(&img, name, sizeof(name));
	}
	user_samples(&d, 2, 5, 0x400200);
	user_samples(&d, 1, 2, 0x400100);
	rb_put(&img, d.p, d.len);
	run(&img, "", NULL, &r);
	T_EQ_INT(r.err, 0);
	T_EQ_INT(total(r.text), 7);
	T(r.folded[0] && r.folded[1]);
	free(r.text);
	rb_free(&d);
	rb_free(&img);
}

/* --------------------------------------------------------------- LBR */

/* Frames of unmapped addresses are `0x<addr> (?)`, so the expected
 * stacks below spell out which addresses perfspy put where. */
static void test_lbr(void)
{
	static const char *const names[] = { "cycles:u" };
	const uint64_t br3[][2] = {
		{ 0x402010, 0x401200 }, { 0x403020, 0x402000 }, { 0x404030, 0x403000 },
	};
	const uint64_t br2[][2] = { { 0x402010, 0x401200 }, { 0x403020, 0x402000 } };
	const uint64_t br_other[][2] = { { 0x40a010, 0x401200 } };
	/* User only: leaf ip, then the LBR's call sites. */
	const uint64_t ca[] = { CTX_USER, 0x401234, 0 };
	/* Kernel part from the callchain above the user part. */
	const uint64_t cb[] = { CTX_KERNEL, 0xffffffff81001010ULL,
				0xffffffff81002020ULL, CTX_USER, 0x401234 };
	/* LBR too shallow: frame pointers join after the return address
	 * of the last call site (0x403020 + 5) and reach the root. */
	const uint64_t cc[] = { CTX_USER, 0x401234, 0x402015, 0x403025,
				0x404035, 0x405045, 0x406055, 0 };
	/* Frame pointers that never meet the LBR are not used. */
	const uint64_t cd[] = { CTX_USER, 0x401234, 0x777777 };
	/* An empty LBR: the callchain as usual. */
	const uint64_t ce[] = { CTX_USER, 0x501234, 0x502015 };
	struct perf_event_attr a;
	struct rb d = { 0 }, img = { 0 };
	struct result r;

	attr_ev(&a, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES);
	a.sample_type |= PERF_SAMPLE_BRANCH_STACK;
	a.branch_sample_type = PERF_SAMPLE_BRANCH_USER | PERF_SAMPLE_BRANCH_CALL_STACK;
	rb_sample_ev(&d, 1, PERF_RECORD_MISC_USER, 100, 100, 1, 0x401234, ca, 3, br3, 3);
	rb_sample_ev(&d, 1, PERF_RECORD_MISC_KERNEL, 100, 100, 2, 0xffffffff81001010ULL,
		     cb, 5, br3, 3);
	rb_sample_ev(&d, 1, PERF_RECORD_MISC_USER, 100, 100, 3, 0x401234, cc, 8, br2, 2);
	rb_sample_ev(&d, 1, PERF_RECORD_MISC_USER, 100, 100, 4, 0x401234, cd, 3, br2, 1);
	rb_sample_ev(&d, 1, PERF_RECORD_MISC_USER, 100, 100, 5, 0x501234, ce, 3, br3, 0);
	/* The callchain of the first sample again, another call stack: not
	 * the first sample's stack from a cache keyed on the callchain. */
	rb_sample_ev(&d, 1, PERF_RECORD_MISC_USER, 100, 100, 6, 0x401234, ca, 3,
		     br_other, 1);
	rb_file_events(&img, &a, names, 1, &d, NULL, NULL);
	run(&img, "", NULL, &r);
	T_EQ_INT(r.err, 0);
	T_EQ_STR(r.text,
		 "0x402010 (?);0x401234 (?) 1\n"
		 "0x404030 (?);0x403020 (?);0x402010 (?);0x401234 (?) 1\n"
		 "0x404030 (?);0x403020 (?);0x402010 (?);0x401234 (?);"
		 "0xffffffff81002020 ([kernel.kallsyms]);0xffffffff81001010 ([kernel.kallsyms]) 1\n"
		 "0x406055 (?);0x405045 (?);0x404035 (?);0x403020 (?);0x402010 (?);0x401234 (?) 1\n"
		 "0x40a010 (?);0x401234 (?) 1\n"
		 "0x502015 (?);0x501234 (?) 1\n");
	free(r.text);
	rb_free(&img);

	/* A branch stack of another kind (perf record -b): the callchain. */
	a.branch_sample_type = PERF_SAMPLE_BRANCH_USER | PERF_SAMPLE_BRANCH_ANY;
	rb_file_events(&img, &a, names, 1, &d, NULL, NULL);
	run(&img, "", NULL, &r);
	T(r.text && strstr(r.text, "0x0 (?);0x401234 (?) 2\n") &&
	  !strstr(r.text, "0x404030"));
	free(r.text);
	rb_free(&d);
	rb_free(&img);
}

/* ------------------------------------------------------------ kernel */

/* One kernel sample at @kaddr (with its user part), after the kernel
 * map when @text is not 0. */
static void kernel_image(struct rb *img, uint64_t kaddr, uint64_t text,
			 const char *release, const unsigned char *bid)
{
	static const char *const names[] = { "cpu-clock" };
	uint64_t chain[] = { CTX_KERNEL, kaddr, CTX_USER, 0x400100 };
	struct perf_event_attr a;
	struct rb d = { 0 };

	attr_ev(&a, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK);
	if (text)
		rb_kernel_mmap(&d, text, 0x1000000, text);
	rb_sample_ev(&d, 1, PERF_RECORD_MISC_KERNEL, 100, 100, 10, kaddr, chain, 4,
		     NULL, 0);
	rb_file_events(img, &a, names, 1, &d, release, bid);
	rb_free(&d);
}

static bool kernel_frame_is_hex(const char *text, uint64_t kaddr)
{
	char want[64];

	snprintf(want, sizeof(want), "0x%llx ([kernel.kallsyms])",
		 (unsigned long long)kaddr);
	return text && strstr(text, want) != NULL;
}

/* A file given with kallsyms is the recorded kernel's, whatever this
 * machine runs; its _text must still be the recorded one. */
static void test_kallsyms_given(void)
{
	char path[128];
	struct rb img = { 0 };
	struct result r;
	FILE *f;

	snprintf(path, sizeof(path), "%s/kallsyms", tmpdir);
	f = fopen(path, "w");
	if (!f)
		abort();
	fputs("ffffffff81000000 T _text\nffffffff81001000 T foreign_fn\n"
	      "ffffffff81002000 T next_fn\n", f);
	fclose(f);

	kernel_image(&img, 0xffffffff81001010ULL, 0xffffffff81000000ULL,
		     "5.4.0-56-generic", foreign_bid);
	run(&img, path, NULL, &r);
	T_EQ_INT(r.err, 0);
	T(r.text && strstr(r.text, "foreign_fn ([kernel.kallsyms])"));
	T_EQ_STR(r.kallsyms, path);
	T_EQ_INT(r.nr_kernel, 1);
	free(r.text);
	rb_free(&img);

	/* Another boot (KASLR slide): addresses. */
	kernel_image(&img, 0xffffffff91001010ULL, 0xffffffff91000000ULL,
		     "5.4.0-56-generic", foreign_bid);
	run(&img, path, NULL, &r);
	T(kernel_frame_is_hex(r.text, 0xffffffff91001010ULL));
	T_EQ_STR(r.kallsyms, "");
	free(r.text);
	rb_free(&img);
}

/* A text symbol of this machine's /proc/kallsyms with real addresses,
 * or 0 (kptr_restrict, no procfs). */
static uint64_t local_kernel_addr(void)
{
	char line[512], type;
	unsigned long long addr;
	uint64_t found = 0;
	FILE *f = fopen("/proc/kallsyms", "re");

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx %c", &addr, &type) == 2 && addr &&
		    (type == 'T' || type == 't') && !strchr(line, '['))
			found = addr;
	fclose(f);
	return found;
}

/* The running kernel's build id from /sys/kernel/notes (ELF notes). */
static bool running_bid(unsigned char *out)
{
	unsigned char buf[4096];
	size_t len, off = 0;
	FILE *f = fopen("/sys/kernel/notes", "re");

	if (!f)
		return false;
	len = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	while (off + 12 <= len) {
		uint32_t nsz, dsz, type;

		memcpy(&nsz, buf + off, 4);
		memcpy(&dsz, buf + off + 4, 4);
		memcpy(&type, buf + off + 8, 4);
		if (type == 3 && nsz == 4 && dsz == 20 && off + 16 + 20 <= len &&
		    !memcmp(buf + off + 12, "GNU", 4)) {
			memcpy(out, buf + off + 16, 20);
			return true;
		}
		off += 12 + ((nsz + 3) & ~3u) + ((dsz + 3) & ~3u);
	}
	return false;
}

/* /proc/kallsyms of this machine never names a foreign kernel's frames. */
static void test_foreign_kernel(void)
{
	uint64_t kaddr = local_kernel_addr();
	unsigned char bid[20];
	struct rb img = { 0 };
	struct utsname u;
	struct result r;

	if (!kaddr) {
		fprintf(stderr, "test_foreign_kernel: /proc/kallsyms has no addresses, skipped\n");
		return;
	}
	/* A recorded build id that is not this kernel's. */
	kernel_image(&img, kaddr, 0, "5.4.0-56-generic", foreign_bid);
	run(&img, NULL, NULL, &r);
	T_EQ_INT(r.err, 0);
	T(kernel_frame_is_hex(r.text, kaddr));
	T_EQ_STR(r.kallsyms, "");
	free(r.text);
	rb_free(&img);

	/* No build id (perf without it): the OS release decides. */
	kernel_image(&img, kaddr, 0, "0.0.0-foreign", NULL);
	run(&img, NULL, NULL, &r);
	T(kernel_frame_is_hex(r.text, kaddr));
	free(r.text);
	rb_free(&img);

	if (!uname(&u)) {
		kernel_image(&img, kaddr, 0, u.release, NULL);
		run(&img, NULL, NULL, &r);
		T(r.text && strstr(r.text, "([kernel.kallsyms])") &&
		  !kernel_frame_is_hex(r.text, kaddr));
		T_EQ_STR(r.kallsyms, "/proc/kallsyms");
		free(r.text);
		rb_free(&img);
	}

	/* This kernel's own build id: named, whatever the release says. */
	if (running_bid(bid)) {
		kernel_image(&img, kaddr, 0, "0.0.0-foreign", bid);
		run(&img, NULL, NULL, &r);
		T(r.text && strstr(r.text, "([kernel.kallsyms])") &&
		  !kernel_frame_is_hex(r.text, kaddr));
		free(r.text);
		rb_free(&img);
	}
}

int main(void)
{
	char path[128];

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/perfspy-foreign.XXXXXX");
	if (!mkdtemp(tmpdir))
		return 1;
	test_most_samples();
	test_hybrid();
	test_hybrid_stream();
	test_count_pass_quiet();
	test_lbr();
	test_kallsyms_given();
	test_foreign_kernel();
	snprintf(path, sizeof(path), "%s/kallsyms", tmpdir);
	unlink(path);
	rmdir(tmpdir);
	TEST_MAIN_END();
}
