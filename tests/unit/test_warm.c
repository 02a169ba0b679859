// SPDX-License-Identifier: GPL-2.0
/*
 * The reader's warming thread (perfdata/reader.c, docs/design.md §6.5)
 * changes nothing the reader hands out: every record (offset, type,
 * size, bytes) is the same with and without it, in a first pass and
 * after a rewind, on a built file with small, large (a 20 KB stack-dump
 * sized record) and trailing-payload (AUXTRACE) records and with a
 * rewind halfway, and on every file of the shared corpus.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "corpus.h"
#include "perfdata/reader.h"
#include "recbuild.h"
#include "test.h"

struct seen {
	uint64_t *off, *sum;
	size_t nr, cap;
};

static uint64_t fnv(const void *p, size_t n)
{
	const unsigned char *c = p;
	uint64_t h = 1469598103934665603ULL;

	while (n--)
		h = (h ^ *c++) * 1099511628211ULL;
	return h;
}

/* Up to @max records (0: all) of @rd into @s. */
static int walk(struct rd *rd, struct seen *s, size_t max)
{
	struct rd_rec rec;
	int r = 0;

	while ((!max || s->nr < max) && (r = rd_next(rd, &rec)) > 0) {
		if (s->nr == s->cap) {
			s->cap = s->cap ? s->cap * 2 : 1024;
			s->off = realloc(s->off, s->cap * sizeof(*s->off));
			s->sum = realloc(s->sum, s->cap * sizeof(*s->sum));
			if (!s->off || !s->sum)
				abort();
		}
		s->off[s->nr] = rec.offset;
		s->sum[s->nr++] = fnv(rec.hdr, rec.hdr->size);
	}
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
	free(a.off);
	free(a.sum);
	free(b.off);
	free(b.sum);
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

int main(void)
{
	test_built();
	test_corpus();
	TEST_MAIN_END();
}
