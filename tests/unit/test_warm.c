// SPDX-License-Identifier: GPL-2.0
/*
 * The reader's warming thread (perfdata/reader.c, docs/design.md §6.5)
 * changes nothing the reader hands out: every record (offset, type,
 * size, bytes) is the same with and without it, in a first pass and
 * after a rewind, on a built file with small, large (a 20 KB stack-dump
 * sized record) and trailing-payload (AUXTRACE) records and with a
 * rewind halfway, and on every file of the shared corpus.
 * The reader's mapped window stays small while the warmer lags far
 * behind (starved: SCHED_IDLE on the reader's CPU), and no page behind
 * it stays mapped (rd_release_before, docs/design.md §6.6); each release
 * ends on a huge-page boundary of the mapping (§6.28).
 * The callchain digests it works out ahead (docs/design.md §6.21) are
 * those the session would work out, or none (always none for a chain of
 * fewer than RD_DIGEST_MIN_NR entries): for chains of every kind of
 * context, in a first pass and after a rewind; and rec_chain_last_user()
 * is checked against an entry-by-entry walk.
 */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "corpus.h"
#include "perfdata/reader.h"
#include "perfdata/evlist.h"
#include "perfdata/record.h"
#include "recbuild.h"
#include "seen.h"
#include "test.h"

/* Up to @max records (0: all) of @rd into @s. */
static int walk(struct rd *rd, struct seen *s, size_t max)
{
	struct rd_rec rec;
	int r = 0;

	while ((!max || s->nr < max) && (r = rd_next(rd, &rec)) > 0)
		seen_add(s, &rec);
	return max && s->nr >= max ? 1 : r;
}

/* Read @path three ways (all; rewind, all; rewind after @half, all)
 * with warm_min @warm; *@warmed says whether the thread ran. */
static int read_file(const char *path, uint64_t warm, size_t half, struct seen *s,
		     bool *warmed)
{
	struct rd_opts o = { .name = path, .warm_min = warm };
	struct rd rd;
	int fd = open(path, O_RDONLY), err;

	if (fd < 0)
		return -errno;
	err = rd_open_fd(&rd, fd, &o);
	close(fd);
	if (err)
		return err;
	*warmed = rd.warm != NULL;
	err = walk(&rd, s, 0);
	if (err >= 0)
		err = rd_rewind(&rd);
	if (!err)
		err = walk(&rd, s, s->nr + half);
	if (err >= 0)
		err = rd_rewind(&rd);
	if (!err)
		err = walk(&rd, s, 0);
	rd_close(&rd);
	return err < 0 ? err : 0;
}

/* Same records with and without the thread; returns whether it ran. */
static bool same_both_ways(const char *path, size_t half)
{
	struct seen a = { 0 }, b = { 0 };
	bool wa = false, wb = false;
	int ea = read_file(path, 0, half, &a, &wa);
	int eb = read_file(path, 1, half, &b, &wb);

	T_EQ_INT(ea, eb);
	T(!wa);
	T_EQ_INT(a.nr, b.nr);
	/* (a file that fails at once has no records: memcmp takes no NULL) */
	if (a.nr == b.nr && a.nr) {
		T(!memcmp(a.off, b.off, a.nr * sizeof(*a.off)));
		T(!memcmp(a.sum, b.sum, a.nr * sizeof(*a.sum)));
	}
	seen_free(&a);
	seen_free(&b);
	return wb;
}

static void test_built(void)
{
	static const uint64_t chain[] = { (uint64_t)-512, 0x400100, 0x400200, 0x400300 };
	char path[] = "/tmp/perfspy-test-warm.XXXXXX";
	struct rb d = { 0 }, img = { 0 };
	struct perf_event_attr a;
	unsigned char *big = calloc(1, 20000);
	unsigned i;
	int fd;

	if (!big)
		abort();
	rb_default_attr(&a);
	rb_comm(&d, 100, 100, "prog", 1, 1);
	rb_mmap2(&d, 100, 0x400000, 0x1000, 0, "/nonexistent/bin/prog", 2);
	for (i = 0; i < 3000; i++) {
		rb_sample(&d, 100, 100, 10 + i, chain, 4, 1000);
		if (i % 10 == 0) {
			/* 20 KB: the size of a DWARF sample's stack dump */
			big[0] = (unsigned char)i;
			rb_raw(&d, PERF_RECORD_SAMPLE + 100, 0, big, 20000 - 8);
		}
		if (i == 1500) {
			/* AUXTRACE: a u64 payload size, then the payload
			 * outside header.size (docs/perf-data-format.md) */
			uint64_t aux[5] = { 65536, 0, 0, 0, 0 };

			rb_raw(&d, REC_AUXTRACE, 0, aux, sizeof(aux));
			memset(big, 0xab, 20000);
			rb_put(&d, big, 20000);
			rb_put(&d, big, 20000);
			rb_put(&d, big, 20000);
			rb_put(&d, big, 65536 - 60000);
			memset(big, 0, 20000);
		}
		if (i % 100 == 99)
			rb_round(&d);
	}
	rb_file(&img, &a, sizeof(a) + 16, &d, "testhost");
	fd = mkstemp(path);
	T(fd >= 0);
	if (fd >= 0) {
		T_EQ_INT(write(fd, img.p, img.len), (long long)img.len);
		close(fd);
		T(img.len > (6u << 20));
		T(same_both_ways(path, 1700));
		unlink(path);
	}
	free(big);
	rb_free(&d);
	rb_free(&img);
}

static void corpus_file(const char *path, void *ctx)
{
	int *warmed = ctx;

	*warmed += same_both_ways(path, 50);
}

static void test_corpus(void)
{
	int warmed = 0, files = corpus_each(corpus_file, &warmed);

	if (files < 0) {
		/* Under CI the corpus is always beside the clone. */
		T(corpus_missing() != 1);
		return;
	}
	fprintf(stderr, "warm: %d corpus files, %d read with the thread\n", files, warmed);
	T(files > 0);
}

/* ThreadSanitizer runs a thread of its own in the process (make tsan). */
#ifdef __SANITIZE_THREAD__
#define TSAN_THREADS 1
#else
#define TSAN_THREADS 0
#endif

/* Every other thread of this process onto @cpus at SCHED_IDLE; how
 * many. */
static int starve_others(const cpu_set_t *cpus)
{
	struct sched_param sp = { 0 };
	pid_t self = (pid_t)syscall(SYS_gettid);
	struct dirent *de;
	DIR *dir = opendir("/proc/self/task");
	int n = 0;

	if (!dir)
		return -1;
	while ((de = readdir(dir))) {
		pid_t tid = (pid_t)atoi(de->d_name);

		if (tid <= 0 || tid == self)
			continue;
		if (sched_setaffinity(tid, sizeof(*cpus), cpus) ||
		    sched_setscheduler(tid, SCHED_IDLE, &sp))
			n = -1000;
		n++;
	}
	closedir(dir);
	return n;
}

/* @d's records (freed) as a file-mode image with rb_default_attr's
 * event, written to a new file from the mkstemp() template @path: its
 * descriptor, or -1. */
static int temp_file(struct rb *d, char *path)
{
	struct rb img = { 0 };
	struct perf_event_attr a;
	int fd;

	rb_default_attr(&a);
	rb_file(&img, &a, sizeof(a) + 16, d, "testhost");
	rb_free(d);
	fd = mkstemp(path);
	T(fd >= 0);
	if (fd >= 0)
		T_EQ_INT(write(fd, img.p, img.len), (long long)img.len);
	rb_free(&img);
	return fd;
}

static void test_lag(void)
{
	static const uint64_t chain[] = { (uint64_t)-512, 0x400100 };
	char path[] = "/tmp/perfspy-test-lag.XXXXXX";
	struct rb d = { 0 };
	struct rd_opts o = { .name = path, .warm_min = 1 };
	unsigned char *big = calloc(1, 20000);
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), pmd = pmd_map_size();
	long max_res = 0, r, behind = 0, lag_seen = 0, releases = 0, unaligned = 0;
	uint64_t last = 0, sum = 0, adv0;
	struct rd_rec rec;
	cpu_set_t one, all;
	struct rd rd;
	unsigned i;
	int fd, pm, err;

	if (!big)
		abort();
	rb_comm(&d, 100, 100, "prog", 1, 1);
	for (i = 0; i < 2400; i++) { /* 48 MB of 20 KB records */
		big[0] = (unsigned char)i;
		rb_sample(&d, 100, 100, 10 + i, chain, 2, 1000);
		rb_raw(&d, PERF_RECORD_SAMPLE + 100, 0, big, 20000 - 8);
		if (i % 50 == 49)
			rb_round(&d);
	}
	free(big);
	fd = temp_file(&d, path);
	if (fd < 0)
		return;
	pm = open("/proc/self/pagemap", O_RDONLY);
	T(pm >= 0);
	err = rd_open_fd(&rd, fd, &o);
	close(fd);
	T_EQ_INT(err, 0);
	if (err || pm < 0) {
		unlink(path);
		return;
	}
	T(rd.warm != NULL && rd.mem_is_map);
	/* The warmer (this process's other thread) goes on this CPU at
	 * SCHED_IDLE: it runs only now and then. Lowering a thread of
	 * one's own needs no privilege. */
	T(!sched_getaffinity(0, sizeof(all), &all));
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	T(!sched_setaffinity(0, sizeof(one), &one));
	T_EQ_INT(starve_others(&one), 1 + TSAN_THREADS);
	while ((err = rd_next(&rd, &rec)) > 0) {
		const unsigned char *b = (const unsigned char *)rec.hdr;

		/* Read all of it, as a DWARF sample's unwinding may. */
		for (i = 0; i < rec.hdr->size; i += 512)
			sum += b[i];
		if (rec.offset - last < (256u << 10))
			continue;
		last = rec.offset;
		adv0 = rd.advised;
		rd_release_before(&rd, rec.offset);
		/* A release ends on a huge-page boundary of the mapping, so
		 * the kernel clears whole PMD entries (docs/design.md §6.28). */
		if (rd.advised != adv0) {
			releases++;
			if (pmd > pg && ((uintptr_t)rd.mem + rd.advised) % pmd)
				unaligned++;
		}
		if (rd.redo_hi)
			lag_seen++;
		r = pages_resident(pm, rd.mem, rd.mem_len);
		if (r > max_res)
			max_res = r;
		/* Nothing mapped below the release point's huge page but
		 * what the warmer may still map again (the redo range). */
		{
			uint64_t low = (rd.redo_hi && rd.redo_lo < rd.advised ? rd.redo_lo :
					rd.advised) & ~((uint64_t)pmd - 1);

			r = pages_resident(pm, rd.mem, low);
			if (r > 0)
				behind++;
		}
	}
	T_EQ_INT(err, 0);
	fprintf(stderr, "lag: %lld KB file, peak %ld KB mapped, %ld releases with the warmer behind, sum %llu\n",
		(long long)rd.mem_len >> 10, max_res * (long)pg >> 10, lag_seen,
		(unsigned long long)sum);
	/* The warmer was behind: what this tests happened. */
	T(lag_seen > 0);
	T_EQ_INT(behind, 0);
	T(releases > 10);
	T_EQ_INT(unaligned, 0);
	/* The window: the release step and the check interval, a huge
	 * page at each end, the warmer's lead (1 MB) and a batch. */
	T(max_res * (long)pg <= (long)(2 * pmd + (3u << 20)));
	rd_close(&rd);
	T(!sched_setaffinity(0, sizeof(all), &all));
	close(pm);
	unlink(path);
}

/* rec_chain_last_user() the slow way: entry by entry from the end. */
static bool last_user_ref(const uint64_t *cc, uint64_t nr, uint16_t cpumode, uint64_t *last)
{
	const uint64_t ctx_max = (uint64_t)-4095;
	uint64_t i = nr, l = 0;
	bool any = false;

	while (i > 0) {
		uint64_t ip = cc[--i];

		if (ip >= ctx_max) {
			if (any && ip == (uint64_t)-512)
				break;
			any = false;
		} else if (!any) {
			l = ip;
			any = true;
		}
	}
	if (any && i == 0 && cc[0] < ctx_max && cpumode == PERF_RECORD_MISC_KERNEL)
		any = false;
	*last = any ? l : 0;
	return any;
}

/* A sample of rb_default_attr's layout with cpumode @misc. */
static void raw_sample(struct rb *d, uint16_t misc, uint64_t time, const uint64_t *cc,
		       unsigned nr)
{
	uint64_t p[5 + 64];

	p[0] = 0x400100;
	p[1] = 100 | (uint64_t)100 << 32;
	p[2] = time;
	p[3] = 1000;
	p[4] = nr;
	memcpy(p + 5, cc, nr * sizeof(*cc));
	rb_raw(d, PERF_RECORD_SAMPLE, misc, p, (5 + nr) * sizeof(*p));
}

/* Every sample of @rd: its digest, if any, is the session's own. */
static void check_digests(struct rd *rd, unsigned *digested, unsigned *samples)
{
	struct rd_digest dg, bad;
	struct rec_sample smp;
	struct rd_rec rec;
	int r;

	while ((r = rd_next(rd, &rec)) > 0) {
		const struct rd_evsel *ev = rd_evsel_of(rd, rec.hdr);
		uint64_t h1, h2, last, rlast;
		bool user;

		if (rec.hdr->type != PERF_RECORD_SAMPLE || !ev ||
		    rec_parse_sample(ev, rec.hdr, &smp))
			continue;
		(*samples)++;
		rec_chain_hash(smp.callchain, smp.callchain_nr, &h1, &h2);
		user = rec_chain_last_user(smp.callchain, smp.callchain_nr, smp.cpumode, &last);
		{
			uint64_t cc[64];

			T(smp.callchain_nr <= 64);
			memcpy(cc, smp.callchain, smp.callchain_nr * 8);
			T_EQ_INT(user, last_user_ref(cc, smp.callchain_nr, smp.cpumode, &rlast));
			if (user)
				T(last == rlast);
		}
		/* Another record's place, another length, no slot: none. */
		T(!rd_digest(rd, rec.dig, rec.offset + 8, smp.callchain, smp.callchain_nr, &bad));
		T(!rd_digest(rd, rec.dig, rec.offset, smp.callchain, smp.callchain_nr + 1, &bad));
		T(!rd_digest(rd, 0, rec.offset, smp.callchain, smp.callchain_nr, &bad));
		if (!rd_digest(rd, rec.dig, rec.offset, smp.callchain, smp.callchain_nr, &dg))
			continue;
		T(smp.callchain_nr >= RD_DIGEST_MIN_NR); /* short ones get none */
		(*digested)++;
		T(dg.h1 == h1);
		T(dg.h2 == h2);
		T_EQ_INT(dg.user, user);
		if (user)
			T(dg.last == last);
	}
	T_EQ_INT(r, 0);
}

/* @copy: the copy's thread works the digests out (rd_copy_in(), design
 * §6.32), not the warmer. */
static void test_digest(bool copy)
{
	const uint64_t K = (uint64_t)-128, U = (uint64_t)-512;
	char path[] = "/tmp/perfspy-test-dig.XXXXXX";
	struct rb d = { 0 };
	struct rd_opts o = { .name = path, .warm_min = 1 };
	struct timespec nap = { 0, 200 * 1000 * 1000 };
	unsigned i, j, n, digested = 0, samples = 0, pass;
	uint64_t cc[64];
	struct rd rd;
	int fd, err;

	rb_comm(&d, 100, 100, "prog", 1, 1);
	for (i = 0; i < 5000; i++) {
		n = 0;
		switch (i % 6) {
		case 0: /* user only */
			cc[n++] = U;
			break;
		case 1: /* kernel, then user */
			cc[n++] = K;
			cc[n++] = 0xffffffff81000100ULL;
			cc[n++] = 0xfffffffffffff000ULL; /* ORs to a marker's bits */
			cc[n++] = U;
			break;
		case 2: /* user, then kernel (a user context not last) */
			cc[n++] = U;
			cc[n++] = 0x400200 + i;
			cc[n++] = K;
			break;
		default: /* no marker: the cpumode says */
			break;
		}
		for (j = 0; j < i % 41; j++)
			cc[n++] = j % 7 == 6 ? 0xffffffffff600000ULL : 0x400000 + 16 * (i + j);
		if (i % 6 == 5 && n)
			cc[n - 1] = 0; /* an outermost entry of 0 */
		raw_sample(&d, i % 6 == 3 ? PERF_RECORD_MISC_KERNEL : PERF_RECORD_MISC_USER,
			   10 + i, cc, n);
		if (i % 100 == 99)
			rb_round(&d);
	}
	fd = temp_file(&d, path);
	if (fd < 0)
		return;
	err = rd_open_fd(&rd, fd, &o);
	close(fd);
	unlink(path);
	T_EQ_INT(err, 0);
	if (err)
		return;
	T(rd.warm != NULL);
	if (copy) {
		/* The warmer first writes digests of its own into the ring
		 * the copy's thread then takes over (rd_copy_in()): those
		 * are of a pass before and must not be taken. */
		nanosleep(&nap, NULL);
		T(rd_copy_in(&rd));
		T(rd.fill != NULL && rd.warm == NULL);
	}
	for (pass = 0; pass < 2; pass++) {
		unsigned before = digested;

		/* Time for the warmer to walk its lead (the whole file). */
		nanosleep(&nap, NULL);
		check_digests(&rd, &digested, &samples);
		fprintf(stderr, "digest%s: pass %u: %u of 5000 samples digested ahead\n",
			copy ? " (copy)" : "", pass, digested - before);
		T(digested > before);
		if (!pass)
			T_EQ_INT(rd_rewind(&rd), 0);
	}
	T_EQ_INT(samples, 10000);
	if (copy)
		rd_copy_end(&rd, NULL, NULL, NULL, NULL);
	rd_close(&rd);
}

int main(void)
{
	test_lag();
	test_digest(false);
	test_digest(true);
	test_built();
	test_corpus();
	TEST_MAIN_END();
}
