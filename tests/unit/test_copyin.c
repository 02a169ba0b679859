// SPDX-License-Identifier: GPL-2.0
/*
 * The data section read into memory ahead of the reader (rd_copy_in(),
 * perfdata/reader.c, docs/design.md §6.32) changes nothing the reader
 * hands out: every record (offset, type, size, bytes) is the same as read
 * from the mapping, in a first pass and after two rewinds (one halfway),
 * with the pages behind the reader released as a conversion releases
 * them (a released page of the copy reads as zeros until the thread reads
 * it in again, so a rewind that did not read it again fails here), on a
 * built file with small, 20 KB (a DWARF sample's size) and trailing-
 * payload (AUXTRACE) records and on every file of the shared corpus;
 * and by a second reader of the same copy (-j N), released behind both.
 * The copy's resident pages stay within the lead and a few huge pages
 * while a 61 MB file is read; a file that shrinks after it was
 * opened is an error that names the offset, not a crash.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "corpus.h"
#include "perfdata/reader.h"
#include "perfspy.h"
#include "recbuild.h"
#include "seen.h"
#include "test.h"

/* What one way of reading saw, and what it kept resident. */
struct run {
	struct seen rec;
	int pm;		   /* /proc/self/pagemap, or -1: not measured */
	size_t len;	   /* the file's */
	long resident_max; /* the most pages of the records' memory resident */
	u64 reused;	   /* huge pages of the copy used again */
};

/* Up to @max records (0: all) of @rd into @s, releasing what is behind
 * each record every 64 records, as run_pass() does with nothing queued. */
static int walk(struct rd *rd, struct run *s, size_t max)
{
	struct rd_rec rec;
	int r = 0;

	while ((!max || s->rec.nr < max) && (r = rd_next(rd, &rec)) > 0) {
		seen_add(&s->rec, &rec);
		if (!(s->rec.nr & 63)) {
			/* A record lies at its file offset in the memory
			 * read, the copy or the mapping. */
			long n = s->pm >= 0 ? pages_resident(s->pm, (const unsigned char *)rec.hdr -
								   rec.offset, s->len) : -1;

			if (n > s->resident_max)
				s->resident_max = n;
			rd_release_before(rd, rec.offset);
		}
	}
	return max && s->rec.nr >= max ? 1 : r;
}

/* Read @path three ways (all; rewind, @half records; rewind, all), with
 * the copy or from the mapping; *@copied says whether the copy ran. */
static int read_file(const char *path, bool copy, size_t half, struct run *s,
		     bool *copied)
{
	struct rd_opts o = { .name = path, .warm_min = 1 };
	struct rd rd;
	int fd = open(path, O_RDONLY), err;

	if (fd < 0)
		return -errno;
	err = rd_open_fd(&rd, fd, &o);
	close(fd);
	if (err)
		return err;
	*copied = copy && rd_copy_in(&rd);
	s->len = rd.mem_len;
	err = walk(&rd, s, 0);
	if (err >= 0)
		err = rd_rewind(&rd);
	if (!err)
		err = walk(&rd, s, s->rec.nr + half);
	if (err >= 0)
		err = rd_rewind(&rd);
	if (!err)
		err = walk(&rd, s, 0);
	/* Copying stays on across rewinds. */
	if (*copied) {
		T(rd.fill != NULL);
		rd_copy_end(&rd, NULL, NULL, &s->reused, NULL);
	}
	rd_close(&rd);
	return err < 0 ? err : 0;
}

/* The same records with and without the copy; returns whether it ran,
 * and the most of the copy that was resident at once, in KB, into
 * *@rss_kb (NULL: not measured). */
static bool same_both_ways(const char *path, size_t half, long *rss_kb, u64 *reused)
{
	int pm = rss_kb ? open("/proc/self/pagemap", O_RDONLY) : -1;
	struct run a = { .pm = -1 }, b = { .pm = pm, .resident_max = -1 };
	bool ca = false, cb = false;
	int ea = read_file(path, false, half, &a, &ca);
	int eb = read_file(path, true, half, &b, &cb);

	T_EQ_INT(ea, eb);
	T(!ca);
	T_EQ_INT(a.rec.nr, b.rec.nr);
	if (a.rec.nr == b.rec.nr && a.rec.nr) {
		T(!memcmp(a.rec.off, b.rec.off, a.rec.nr * sizeof(*a.rec.off)));
		T(!memcmp(a.rec.sum, b.rec.sum, a.rec.nr * sizeof(*a.rec.sum)));
	}
	if (rss_kb)
		*rss_kb = b.resident_max < 0 ? -1 :
			  b.resident_max * (sysconf(_SC_PAGESIZE) / 1024);
	if (pm >= 0)
		close(pm);
	if (reused)
		*reused = b.reused;
	seen_free(&a.rec);
	seen_free(&b.rec);
	return cb;
}

/* A built file of about @mb MB: small samples, 20 KB records each
 * different, an AUXTRACE payload and rounds; written to a new file from
 * the mkstemp() template @path. Its size, or 0. */
static size_t built_file(char *path, unsigned mb)
{
	static const uint64_t chain[] = { (uint64_t)-512, 0x400100, 0x400200, 0x400300 };
	struct rb d = { 0 }, img = { 0 };
	struct perf_event_attr a;
	unsigned char *big = calloc(1, 20000);
	size_t len = 0;
	unsigned i, n = mb * 50;
	int fd;

	if (!big)
		abort();
	rb_default_attr(&a);
	rb_comm(&d, 100, 100, "prog", 1, 1);
	rb_mmap2(&d, 100, 0x400000, 0x1000, 0, "/nonexistent/bin/prog", 2);
	for (i = 0; i < n; i++) {
		rb_sample(&d, 100, 100, 10 + i, chain, 4, 1000);
		/* 20 KB: the size of a DWARF sample's stack dump; each
		 * different, so a page read from the wrong place shows */
		memcpy(big, &i, sizeof(i));
		memcpy(big + 19000 - sizeof(i), &i, sizeof(i));
		rb_raw(&d, PERF_RECORD_SAMPLE + 100, 0, big, 20000 - 8);
		if (i == n / 2) {
			/* AUXTRACE: a u64 payload size, then the payload
			 * outside header.size (docs/perf-data-format.md) */
			uint64_t aux[5] = { 40000, 0, 0, 0, 0 };

			rb_raw(&d, REC_AUXTRACE, 0, aux, sizeof(aux));
			memset(big, 0xab, 20000);
			rb_put(&d, big, 20000);
			rb_put(&d, big, 20000);
			memset(big, 0, 20000);
		}
		if (i % 100 == 99)
			rb_round(&d);
	}
	rb_file(&img, &a, sizeof(a) + 16, &d, "testhost");
	fd = mkstemp(path);
	T(fd >= 0);
	if (fd >= 0) {
		if (write(fd, img.p, img.len) == (ssize_t)img.len)
			len = img.len;
		close(fd);
	}
	free(big);
	rb_free(&d);
	rb_free(&img);
	return len;
}

static void test_built(void)
{
	char path[] = "/tmp/perfspy-test-copyin.XXXXXX";
	size_t len = built_file(path, 64);
	long rss = -1;
	u64 reused = 0;

	T(len > (60u << 20));
	if (!len)
		return;
	T(same_both_ways(path, 1700, &rss, &reused));
	/* Released huge pages are moved ahead and read into again
	 * (fill_recycle()): about one for each 2 MB read in past the
	 * first few of each pass. */
	fprintf(stderr, "copyin: %llu huge pages used again over the passes\n",
		(unsigned long long)reused);
	T(reused >= 16);
	/* The copy's lead (4 MB), the stretch behind the reader up to the
	 * next release (1 MB steps, whole 2 MB huge pages), a huge page
	 * being read into: well under 16 MB however large the file. Not
	 * releasing, the copy would grow to the file's 61 MB. */
	fprintf(stderr, "copyin: %zu MB file, at most %ld KB of the copy resident\n",
		len >> 20, rss);
	T(rss >= 0 && rss < 16 * 1024);
	unlink(path);
}

static void corpus_file(const char *path, void *ctx)
{
	int *copied = ctx;

	*copied += same_both_ways(path, 50, NULL, NULL);
}

static void test_corpus(void)
{
	int copied = 0, files = corpus_each(corpus_file, &copied);

	if (files < 0) {
		/* Under CI the corpus is always beside the clone. */
		T(corpus_missing() != 1);
		return;
	}
	fprintf(stderr, "copyin: %d corpus files, %d read with the copy\n", files, copied);
	/* All but the other byte order's (read from a converted copy) */
	T(files > 0 && copied >= files - 4);
}

/* One record of @rd into @s (1), or the end or an error (0 or < 0). */
static int step(struct rd *rd, struct seen *s, uint64_t *off)
{
	struct rd_rec rec;
	int r = rd_next(rd, &rec);

	if (r <= 0)
		return r;
	seen_add(s, &rec);
	*off = rec.offset;
	return 1;
}

/*
 * -j N: a second reader of the same mapping reads the first one's copy
 * (rd_copy_share()), here three records behind for each one the first
 * reads, and then alone to the end; the first releases behind the slower
 * of the two, as split_keep() has the main session do. Both see every
 * record as the mapping holds it.
 */
static void test_shared(void)
{
	char path[] = "/tmp/perfspy-test-copyin.XXXXXX";
	size_t len = built_file(path, 24);
	struct run plain = { .pm = -1 };
	struct seen a = { 0 }, b = { 0 };
	struct rd_opts o = { .name = path };
	struct rd ra, rb;
	uint64_t oa = 0, ob = 0;
	bool copied = false;
	int fd, ea = 1, eb = 1, n = 0;

	T(len > (20u << 20));
	if (!len)
		return;
	T_EQ_INT(read_file(path, false, 0, &plain, &copied), 0);
	fd = open(path, O_RDONLY);
	T(fd >= 0);
	if (fd < 0 || rd_open_fd(&ra, fd, &o)) {
		T(0);
		return;
	}
	close(fd);
	T(rd_copy_in(&ra));
	T_EQ_INT(rd_open_mem(&rb, ra.mem, ra.mem_len, &o), 0);
	rd_copy_share(&rb, &ra);
	T(rb.fill == ra.fill && rb.fill_borrowed);
	while (ea > 0 || eb > 0) {
		int i;

		for (i = 0; i < 3 && ea > 0; i++)
			ea = step(&ra, &a, &oa);
		if (eb > 0 && (ea <= 0 || (n++ & 1)))
			eb = step(&rb, &b, &ob);
		if (!(n & 63))
			rd_release_before(&ra, ob < oa && eb > 0 ? ob : oa);
	}
	T_EQ_INT(ea, 0);
	T_EQ_INT(eb, 0);
	/* The first pass of read_file() is the whole file. */
	T(plain.rec.nr >= a.nr && a.nr == b.nr && a.nr > 1000);
	if (a.nr == b.nr && plain.rec.nr >= a.nr && a.nr) {
		T(!memcmp(plain.rec.off, a.off, a.nr * sizeof(*a.off)));
		T(!memcmp(plain.rec.sum, a.sum, a.nr * sizeof(*a.sum)));
		T(!memcmp(plain.rec.off, b.off, b.nr * sizeof(*b.off)));
		T(!memcmp(plain.rec.sum, b.sum, b.nr * sizeof(*b.sum)));
	}
	rd_copy_end(&rb, NULL, NULL, NULL, NULL);
	T(rb.fill == NULL && ra.fill != NULL);
	rd_close(&rb);
	rd_close(&ra);
	seen_free(&plain.rec);
	seen_free(&a);
	seen_free(&b);
	unlink(path);
}

struct msgs {
	char text[512];
};

static void keep_msg(void *ctx, int level, const char *msg)
{
	struct msgs *m = ctx;

	if (level == LOG_ERROR)
		snprintf(m->text, sizeof(m->text), "%s", msg);
}

/* The file shrinks after it was opened (the mapping's pages past the new
 * end would be SIGBUS): the copy's read comes up short, and the reader
 * says where, with -PERFSPY_E_TRUNCATED. */
static void test_shrunk(void)
{
	char path[] = "/tmp/perfspy-test-copyin.XXXXXX";
	size_t len = built_file(path, 4);
	struct msgs m = { "" };
	struct log_sink log = { keep_msg, &m, LOG_DEBUG };
	struct rd_opts o = { .log = &log, .name = path };
	struct rd_rec rec;
	struct rd rd;
	int fd, err, r;
	u64 nr = 0;

	T(len > (3u << 20));
	if (!len)
		return;
	fd = open(path, O_RDWR);
	T(fd >= 0);
	if (fd < 0)
		return;
	err = rd_open_fd(&rd, fd, &o);
	T_EQ_INT(err, 0);
	if (!err) {
		T(ftruncate(fd, (off_t)(len / 2)) == 0);
		T(rd_copy_in(&rd));
		while ((r = rd_next(&rd, &rec)) > 0)
			nr++;
		T_EQ_INT(r, -PERFSPY_E_TRUNCATED);
		T(nr > 0);
		T(strstr(m.text, "ended early") != NULL);
		T(strstr(m.text, "at offset ") != NULL);
		fprintf(stderr, "copyin: shrunk file: %llu records, then \"%s\"\n",
			(unsigned long long)nr, m.text);
		rd_close(&rd);
	}
	close(fd);
	unlink(path);
}

int main(void)
{
	test_built();
	test_corpus();
	test_shared();
	test_shrunk();
	TEST_MAIN_END();
}
