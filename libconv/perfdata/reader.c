// SPDX-License-Identifier: GPL-2.0
/*
 * perf.data container reader.
 *
 * Input is either a memory image (a regular file mapped read-only, a
 * buffer, or a stream in file layout slurped into memory) or a stream in
 * pipe layout read through a growing buffer. Everything is read through
 * bounds-checked helpers: a header, section or record that lies about its
 * size costs at most that record, and never a read past the input.
 *
 * Invariants:
 * - rd->pos is the offset of the next record; records never straddle
 *   rd->data_end in file mode (perf writes whole records).
 * - Evsels are created from the attr section (file mode) or HEADER_ATTR
 *   records (pipe mode) and never move after the first record is handed
 *   out, except in pipe mode where HEADER_ATTR precedes every sample.
 *
 * Events (attrs, names) and feature sections are decoded in reader_feat.c.
 *
 * Layout facts: docs/perf-data-format.md §1.1-§1.8.
 */
#include "evlist.h"
#include "reader_feat.h"
#include "record.h"
#include "swap.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include "perfspy.h"
#include "tracing.h"

#define PERF_MAGIC2 0x32454c4946524550ULL    /* "PERFILE2" */
#define PERF_MAGIC2_SW 0x50455246494c4532ULL /* byte-swapped */
#define PERF_MAGIC1 0x454c494646524550ULL    /* "PERFFILE", v1 */
#define FILE_HEADER_SIZE 104
#define PIPE_HEADER_SIZE 16
/* rd_release_before() drops mapped pages in steps of at least this: the
 * mapped window behind the reader is part of peak RSS (issue 16: 1 MB
 * instead of 4 keeps a 10 GB file's peak near a pipe's). Not less: each
 * MADV_DONTNEED flushes the TLB of every CPU running one of our threads
 * (the warmer's too), and 256 KB steps made a DWARF conversion 10%
 * slower here. */
#define RELEASE_STEP (1u << 20)
/* How far ahead populate_ahead() maps (the window ahead is part of peak
 * RSS too): 1 MB, four of the reader's check steps (session.c checks
 * every 256 KB or 4096 records). Only without the warming thread,
 * which keeps WARM_LEAD ahead instead. */
#define POPULATE_STEP (1u << 20)
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif

static int rd_error(struct rd *rd, int err, u64 off, const char *what)
{
	log_msg(rd->log, LOG_ERROR, "%s: %s at offset %llu", rd->name, what,
		(unsigned long long)off);
	return err;
}

/* ------------------------------------------------------- file header */

static int read_attrs(struct rd *rd, u64 attr_size, u64 off, u64 size)
{
	u64 n, i, j;
	int err;

	if (attr_size < ATTR_VER0 + 16 || off > rd->mem_len ||
	    size > rd->mem_len - off)
		return rd_error(rd, -PERFSPY_E_FORMAT, 16, "bad attr section");
	n = size / attr_size;
	if (!n)
		return rd_error(rd, -PERFSPY_E_FORMAT, 24, "no events in attr section");
	for (i = 0; i < n; i++) {
		const u8 *e = rd->mem + off + i * attr_size;
		u64 ids_off = get_u64(e + attr_size - 16);
		u64 ids_size = get_u64(e + attr_size - 8);

		err = rd_add_evsel(rd, e, attr_size - 16);
		if (err)
			return err;
		if (ids_off > rd->mem_len || ids_size > rd->mem_len - ids_off) {
			pr_warn(rd->log, "%s: ids of event %llu lie outside the file",
				rd->name, (unsigned long long)i);
			continue;
		}
		for (j = 0; j + 8 <= ids_size; j += 8) {
			err = rd_add_id(rd, get_u64(rd->mem + ids_off + j), (u32)i);
			if (err)
				return err;
		}
	}
	return 0;
}

static int read_file_header(struct rd *rd)
{
	const u8 *h = rd->mem;
	u64 hsize = get_u64(h + 8), attr_size, bits[4] = { 0 };
	u64 data_off, data_size;
	bool feats = false;
	int err;

	if (hsize < 72 || rd->mem_len < hsize)
		return rd_error(rd, -PERFSPY_E_FORMAT, 8, "bad header size");
	attr_size = get_u64(h + 16);
	data_off = get_u64(h + 40);
	data_size = get_u64(h + 48);
	if (hsize >= FILE_HEADER_SIZE)
		memcpy(bits, h + 72, sizeof(bits));
	rd->header_size = hsize;
	err = read_attrs(rd, attr_size, get_u64(h + 24), get_u64(h + 32));
	if (err)
		return err;
	if (data_off > rd->mem_len)
		return rd_error(rd, -PERFSPY_E_TRUNCATED, 40,
				"data section starts past the end of the file");
	rd->data_offset = data_off;
	rd->data_size = data_size;
	if (!data_size) {
		/* perf record did not finish: records run to EOF, and the
		 * feature index was never written. */
		pr_warn(rd->log, "%s: data size is 0 (perf record did not exit cleanly?), reading to the end",
			rd->name);
		rd->data_end = rd->mem_len;
	} else if (data_size > rd->mem_len - data_off) {
		pr_warn(rd->log, "%s: data section runs past the end of the file (truncated at offset %zu)",
			rd->name, rd->mem_len);
		rd->data_end = rd->mem_len;
		rd->truncated = true;
		rd->truncated_at = rd->mem_len;
	} else {
		rd->data_end = data_off + data_size;
		feats = true;
	}
	if (rd->swapped) {
		err = swap_records(rd, data_off, rd->data_end);
		if (err)
			return err;
		if (feats)
			swap_features(rd, bits, rd->data_end);
	}
	if (feats) {
		err = rd_read_features(rd, bits, data_off + data_size);
		if (err)
			return err;
	}
	rd_name_evsels(rd);
	rd->pos = rd->data_offset;
	return 0;
}

/* Common header check on the first 16 bytes. Returns the header size
 * field (16 for pipe mode) or a negative error. */
static s64 check_magic(struct rd *rd, const u8 *h, size_t len)
{
	u64 magic;

	if (len == 0)
		return rd_error(rd, -PERFSPY_E_FORMAT, 0, "empty file");
	if (len < PIPE_HEADER_SIZE)
		return rd_error(rd, -PERFSPY_E_FORMAT, 0, "file too short for a perf.data header");
	magic = get_u64(h);
	if (magic == PERF_MAGIC2_SW) {
		/* Other byte order (§1.1): file layout only (swap.c). */
		if (__builtin_bswap64(get_u64(h + 8)) == PIPE_HEADER_SIZE)
			return rd_error(rd, -PERFSPY_E_UNSUPPORTED, 0,
					"pipe-layout perf.data of the other byte order is not supported");
		rd->swapped = true;
		return (s64)__builtin_bswap64(get_u64(h + 8));
	}
	if (magic == PERF_MAGIC1)
		return rd_error(rd, -PERFSPY_E_UNSUPPORTED, 0,
				"perf.data version 1 (PERFFILE) is not supported");
	if (magic != PERF_MAGIC2)
		return rd_error(rd, -PERFSPY_E_FORMAT, 0, "not a perf.data file (bad magic)");
	return (s64)get_u64(h + 8);
}

static void rd_init(struct rd *rd, const struct rd_opts *opts)
{
	memset(rd, 0, sizeof(*rd));
	rd->fd = -1;
	rd->map_fd = -1;
	rd->log = opts ? opts->log : NULL;
	rd->name = opts && opts->name ? opts->name : "perf.data";
	rd->warm_min = opts ? opts->warm_min : 0;
	rd_evlist_init(rd);
	arena_init(&rd->strs);
}

static int rd_start_mem(struct rd *rd)
{
	s64 hsize = check_magic(rd, rd->mem, rd->mem_len);

	if (hsize < 0)
		return (int)hsize;
	rd->file_size = rd->mem_len;
	if (rd->swapped) {
		int err = swap_file_head(rd);

		if (err)
			return err;
	}
	if (hsize == PIPE_HEADER_SIZE) {
		rd->pipe_mode = true;
		rd->header_size = PIPE_HEADER_SIZE;
		rd->data_offset = PIPE_HEADER_SIZE;
		rd->data_end = rd->mem_len;
		rd->pos = PIPE_HEADER_SIZE;
		return 0;
	}
	return read_file_header(rd);
}

int rd_open_mem(struct rd *rd, const void *buf, size_t len,
		const struct rd_opts *opts)
{
	int err;

	rd_init(rd, opts);
	rd->mem = buf;
	rd->mem_len = len;
	err = rd_start_mem(rd);
	if (err)
		rd_close(rd);
	return err;
}

/* Read up to @n bytes from the stream fd into @dst; returns bytes read
 * (short only at EOF) or -errno. */
static ssize_t read_full(int fd, u8 *dst, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = read(fd, dst + got, n - got);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

/* A file-layout perf.data on a stream: read it all, then treat it as
 * memory (features sit after the data, so it cannot be streamed). */
static int slurp_stream(struct rd *rd, const u8 *head, size_t hlen)
{
	size_t cap = 1 << 20, len = hlen;
	u8 *buf = malloc(cap), *nb;
	ssize_t r;

	if (!buf)
		return -ENOMEM;
	memcpy(buf, head, hlen);
	for (;;) {
		size_t want;

		if (len == cap) {
			if (cap > SIZE_MAX / 2 || !(nb = realloc(buf, cap * 2))) {
				free(buf);
				return -ENOMEM;
			}
			buf = nb;
			cap *= 2;
		}
		want = cap - len;
		r = read_full(rd->fd, buf + len, want);
		if (r < 0) {
			free(buf);
			return (int)r;
		}
		len += (size_t)r;
		if ((size_t)r < want)
			break;
	}
	rd->mem_owned = buf;
	rd->mem = buf;
	rd->mem_len = len;
	rd->fd = -1;
	return rd_start_mem(rd);
}

static int rd_open_stream(struct rd *rd)
{
	u8 head[PIPE_HEADER_SIZE];
	ssize_t r = read_full(rd->fd, head, sizeof(head));
	s64 hsize;

	if (r < 0)
		return (int)r;
	hsize = check_magic(rd, head, (size_t)r);
	if (hsize < 0)
		return (int)hsize;
	if (hsize != PIPE_HEADER_SIZE)
		return slurp_stream(rd, head, (size_t)r);
	rd->pipe_mode = true;
	rd->header_size = PIPE_HEADER_SIZE;
	rd->data_offset = PIPE_HEADER_SIZE;
	rd->data_end = UINT64_MAX;
	rd->pos = PIPE_HEADER_SIZE;
	return 0;
}

static void rd_warm_start(struct rd *rd);
static void rd_warm_stop(struct rd *rd);
static const u8 *fill_view(struct rd *rd, u64 n, int *err);
static void fill_follow(struct rd *rd);
static void fill_rewind(struct rd *rd);
static void fill_release(struct rd *rd, u64 off);
static void warm_new_pass(struct rd *rd);
static u64 rd_warm_at(const struct rd *rd);

int rd_open_fd(struct rd *rd, int fd, const struct rd_opts *opts)
{
	struct stat st;
	void *map;
	int err;

	rd_init(rd, opts);
	if (fstat(fd, &st) < 0)
		return -errno;
	if (S_ISREG(st.st_mode)) {
		if (st.st_size == 0)
			return rd_error(rd, -PERFSPY_E_FORMAT, 0, "empty file");
		map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (map == MAP_FAILED)
			return -errno;
		madvise(map, (size_t)st.st_size, MADV_SEQUENTIAL);
		rd->mem = map;
		rd->mem_len = (size_t)st.st_size;
		rd->mem_is_map = true;
		/* Ours, for rd_copy_in()'s reads: the caller may close its
		 * fd once the file is open. None, no copying in. */
		rd->map_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
		err = rd_start_mem(rd);
		if (!err)
			rd_warm_start(rd);
	} else {
		rd->fd = fd;
		err = rd_open_stream(rd);
	}
	if (err)
		rd_close(rd);
	return err;
}

void rd_close(struct rd *rd)
{
	rd_copy_end(rd, NULL, NULL, NULL, NULL);
	rd_warm_stop(rd);
	if (rd->map_fd >= 0)
		close(rd->map_fd);
	if (rd->mem_is_map && rd->mem)
		munmap((void *)rd->mem, rd->mem_len);
	free(rd->mem_owned);
	free(rd->sbuf);
	rd_evlist_free(rd);
	free(rd->build_ids);
	free(rd->zbuf);
	if (rd->zds)
		ZSTD_freeDStream(rd->zds);
	trace_info_free(rd->trace);
	arena_free(&rd->strs);
	memset(rd, 0, sizeof(*rd));
	rd->fd = -1;
	rd->map_fd = -1;
}

int rd_rewind(struct rd *rd)
{
	if (rd->fd >= 0) {
		if (rd->consumed || rd->pos != rd->data_offset)
			return -PERFSPY_E_CONSUMED;
		return 0;
	}
	/* Metadata records (pipe layout) were taken in on the first pass. */
	if (rd->pos != rd->data_offset)
		rd->meta_done = true;
	rd->pos = rd->data_offset;
	rd->zlen = rd->zpos = 0;
	if (rd->fill)
		fill_rewind(rd);
	/* A new pass maps its pages again and lets go of them again. */
	rd->advised = rd->populated = 0;
	rd->redo_lo = rd->redo_hi = 0;
	if (rd->zds)
		ZSTD_initDStream(rd->zds);
	/* The warmer starts over now, not at the first record read; its
	 * digests are told from the last pass's (dig_find()). */
	if (rd->warm)
		warm_new_pass(rd);
	return 0;
}

/*
 * Map the stretch ahead of the reader in one call (MADV_POPULATE_READ,
 * Linux 5.14) instead of one page fault per record: a DWARF sample is
 * 8-64 KB, so each record header is on a page of its own, and a fault
 * costs microseconds (more in a VM). It was a third of a DWARF
 * conversion's time, and repeats in every -j N session (issue 16). Older
 * kernels say EINVAL and the pages fault in as before.
 */
static void populate_ahead(struct rd *rd, long pg)
{
	u64 start, end;

	if (rd->populated >= rd->mem_len || rd->pos + POPULATE_STEP / 2 < rd->populated)
		return;
	start = rd->pos > rd->populated ? rd->pos : rd->populated;
	start &= ~((u64)pg - 1);
	end = start + POPULATE_STEP;
	if (end > rd->mem_len)
		end = rd->mem_len;
	if (end > start)
		madvise((void *)(rd->mem + start), end - start, MADV_POPULATE_READ);
	rd->populated = end;
}

/*
 * @end moved down to a PMD boundary of the mapping, unless that boundary
 * is below the mapping's start (a mapping that starts inside a huge page
 * has no PMD entry there to split). The page cache keeps a big file in
 * huge folios, and a fault maps a whole one with one PMD entry
 * (pmd_map_size()): a release that ends inside it splits that entry into
 * 512 page entries first and then clears them. On the DWARF bench file (337 MB) the split and its TLB
 * flushes were 9% of the converting thread's samples in its main loop,
 * and 1 MB steps ended inside a PMD every other time. Ending on the
 * boundary clears one entry; the window kept behind the reader grows by
 * at most a PMD (2 MB here), and the peak fell by 2-3 MB with the split
 * page tables gone (design §6.28).
 */
static u64 pmd_floor(const struct rd *rd, u64 end, long pg)
{
	u64 pmd = pmd_map_size(), base = (u64)(uintptr_t)rd->mem, a = base + end;

	if (pmd <= (u64)pg || !(a & (pmd - 1)) || (a & ~(pmd - 1)) < base)
		return end;
	return (a & ~(pmd - 1)) - base;
}

void rd_release_before(struct rd *rd, u64 off)
{
	long pg = sysconf(_SC_PAGESIZE);
	u64 end, at = UINT64_MAX;

	if (rd->fill) {
		/* Its owner releases, behind every reader (split_keep()). */
		if (!rd->fill_borrowed)
			fill_release(rd, off);
		return;
	}
	if (rd->warm && rd->mem_is_map && pg > 0) {
		at = rd_warm_at(rd);
		/* The warmer is past what it was behind us for: what it
		 * mapped there again goes now. */
		if (rd->redo_hi && at >= rd->redo_hi) {
			madvise((void *)(rd->mem + rd->redo_lo), rd->redo_hi - rd->redo_lo,
				MADV_DONTNEED);
			rd->redo_lo = rd->redo_hi = 0;
		}
	} else if (rd->mem_is_map && pg > 0) {
		populate_ahead(rd, pg); /* the warmer does it when there is one */
	}
	if (!rd->mem_is_map || off < rd->advised + RELEASE_STEP || pg <= 0)
		return;
	end = off & ~((u64)pg - 1);
	if (end > rd->mem_len)
		end = rd->mem_len & ~((u64)pg - 1);
	end = pmd_floor(rd, end, pg);
	if (end <= rd->advised)
		return;
	/* A read-only private file mapping: dropping pages only drops our
	 * RSS; touching them again re-reads the page cache. */
	madvise((void *)(rd->mem + rd->advised), end - rd->advised, MADV_DONTNEED);
	/*
	 * A warmer behind us (descheduled for a few ms) goes on from our
	 * record once it looks (warm_main), but until then it reads at
	 * and above its ->at, and one fault maps a whole huge folio of
	 * the page cache, down to a PMD boundary (pmd_map_size()): so
	 * [that boundary, end) is released once more when ->at shows the
	 * warmer past it (->at only grows, but on a rewind, which resets
	 * all this). Releasing nothing at or above ->at instead, as this
	 * did first, kept up to 12 MB more mapped while the warmer lagged:
	 * a 10 GB file peaked 3-5 MB above a 1 GB one in some runs.
	 */
	if (at < end) {
		u64 lo = at & ~((u64)pmd_map_size() - 1);

		if (!rd->redo_hi || lo < rd->redo_lo)
			rd->redo_lo = lo;
		if (end > rd->redo_hi)
			rd->redo_hi = end;
	}
	rd->advised = end;
}

/* ------------------------------------------------------------ records */

/* Pointer to @n bytes at rd->pos, or NULL at the end of the input. In
 * stream mode the view lives until the next call. */
static const u8 *rd_peek(struct rd *rd, u64 n, int *err)
{
	ssize_t r;

	*err = 0;
	if (rd->fd < 0) {
		if (rd->pos > rd->data_end || n > rd->data_end - rd->pos)
			return NULL;
		return rd->fill ? fill_view(rd, n, err) : rd->mem + rd->pos;
	}
	if (rd->sbuf_len - rd->sbuf_pos >= n)
		return rd->sbuf + rd->sbuf_pos;
	if (n > (64ULL << 30)) /* nothing sane is that large */
		return NULL;
	if (rd->sbuf_len > rd->sbuf_pos)
		memmove(rd->sbuf, rd->sbuf + rd->sbuf_pos, rd->sbuf_len - rd->sbuf_pos);
	rd->sbuf_len -= rd->sbuf_pos;
	rd->sbuf_pos = 0;
	if (rd->stream_eof)
		return NULL;
	*err = ensure_mem((void **)&rd->sbuf, &rd->sbuf_cap, 1,
			  n > 256 * 1024 ? n : 256 * 1024);
	if (*err)
		return NULL;
	r = read_full(rd->fd, rd->sbuf + rd->sbuf_len, rd->sbuf_cap - rd->sbuf_len);
	if (r < 0) {
		*err = (int)r;
		return NULL;
	}
	rd->sbuf_len += (size_t)r;
	if (rd->sbuf_len < rd->sbuf_cap)
		rd->stream_eof = true;
	return rd->sbuf_len >= n ? rd->sbuf : NULL;
}

/* A record whose payload follows it outside header.size
 * (reader__read_event "skip", session.c). */
static void trailing_payload(const u8 *p, u16 size, u32 type, u64 *extra)
{
	*extra = 0;
	if (type == REC_HEADER_TRACING_DATA && size >= 12)
		*extra = ALIGN8((u64)get_u32(p + 8));
	else if (type == REC_AUXTRACE && size >= 16)
		*extra = get_u64(p + 8);
}

/* One step of a walk ahead of the reader (the warmer's, the copy's): the
 * bytes from the record at @h to the next one, its trailing payload
 * included, or 0 where the walk cannot go on (a size below the header's,
 * or a record or payload past @left, the bytes to the file's end). Such
 * a record is the reader's to judge (rd_next()); a walk only stops. */
static u64 walk_step(const u8 *h, u64 left)
{
	u64 size = get_u16(h + 6), extra;

	if (size < 8 || size > left)
		return 0;
	trailing_payload(h, (u16)size, get_u32(h), &extra);
	if (extra > left - size)
		return 0;
	return size + extra;
}

/* ------------------------------------------------------------ warming */

/*
 * The warming thread (docs/design.md §6.5). On a machine where the first
 * touch of a mapped page is dear (a paravirtual VM with shadow page
 * tables: about 7 us a page even after MADV_POPULATE_READ, against 0.2
 * us for a page touched before), the reader's own first touches were a
 * fifth of a frame-pointer conversion and more of a DWARF one. A second
 * thread walks the records ahead of the reader and reads one byte of
 * each page the reader will read: the header and the first WARM_HEAD
 * bytes of a record (sample ids, callchain, registers, the top of the
 * stack dump the unwinder reads first) and its last page (dyn_size), so
 * the middle of a 16-64 KB stack dump nobody reads is not paid for.
 * It only reads the read-only mapping; it never writes anything the
 * reader reads. It stays at most WARM_LEAD ahead (that much of RSS;
 * 1 MB is as fast as 2 here, on DWARF and frame-pointer files alike),
 * and when the reader passes it (or rewinds for a second pass) it goes
 * on from the reader's record. It publishes where it is (->at) before
 * it reads there, and only goes forward (but on a rewind): a page it
 * maps behind the reader's release point is released again once ->at
 * shows it past (rd_release_before), or it would stay mapped for good
 * and RSS would grow with the file. Its
 * walk needs no validation beyond bounds: a record it misreads costs it
 * pages it did not need, until the reader passes it.
 */
#define WARM_LEAD (1u << 20)
#define WARM_BATCH (256u << 10)
#define WARM_HEAD 8192u

/*
 * Digests of sample callchains (docs/design.md §6.21). Walking ahead, the
 * warmer reads each sample's first bytes anyway; for a frame-pointer
 * recording it also works out what the session asks of the callchain
 * (record.h: its hash for the callchain cache, its outermost user entry
 * for fp_stat()), off the converting thread, which then need not read
 * the callchain of a sample the cache knows. One writer, the warmer, in
 * file order; the reader finds a record's entry as it reads it
 * (dig_find(), DIG_SLOTS behind at most) and the session takes it at
 * delivery, a round later (rd_digest()). A slot written again in between
 * is told by its sequence word (odd while written, seqlock-style, every
 * field an atomic), and every answer is checked against the record's
 * offset and the callchain's place and length: the output never depends
 * on the warmer, only the time does.
 */
#define DIG_SLOTS (1u << 14)

struct dig_ent {
	u64 seq;  /* odd while being written */
	u64 pass; /* rd_warm.pass when written */
	u64 off, nr, h1, h2, last, user;
};

#define DIG_BYTES ((size_t)DIG_SLOTS * sizeof(struct dig_ent))

/* The digests of one writer (the warmer, or the copy's thread) and where
 * they are read from. */
struct dig_ring {
	u64 cc_off;	     /* a sample's callchain lies there; 0: no digests */
	struct dig_ent *ent; /* DIG_SLOTS of them */
	size_t bytes;	     /* of the mapping ent lies at */
	bool mapped;	     /* big_zalloc()'s word */
	u64 tail;	     /* digests written (atomic) */
};

struct rd_warm {
	pthread_t th;
	const u8 *mem;
	u64 begin, end; /* the records lie in [begin, end) */
	u64 pos;	/* rd->pos, published by the reader (atomic) */
	u64 at;		/* where the warmer reads, published first (atomic) */
	bool stop;	/* (atomic) */
	u64 pg;
	struct dig_ring dig;
	u64 pass;	    /* the reader's passes (rewinds), published (atomic) */
};

static inline u64 ld_acq(const u64 *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline void st_rel(u64 *p, u64 v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

/* Where every sample's callchain starts, when the events agree on it and
 * the recording has frame-pointer callchains only (no READ groups before
 * it, no user stack dumps: the session unwinds those instead); else 0. */
static u64 dig_offset(const struct rd *rd)
{
	const u64 fixed = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
		PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR | PERF_SAMPLE_ID |
		PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD;
	u64 t;
	size_t i;

	if (!rd->nr_evsels)
		return 0;
	t = rd->evsels[0].attr.sample_type;
	for (i = 1; i < rd->nr_evsels; i++)
		if (rd->evsels[i].attr.sample_type != t)
			return 0;
	if (!(t & PERF_SAMPLE_CALLCHAIN) ||
	    (t & (PERF_SAMPLE_READ | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER)))
		return 0;
	/* The fields before the callchain, a word each (record.c). */
	return sizeof(struct perf_event_header) + 8 * (u64)__builtin_popcountll(t & fixed);
}

/*
 * A ring for the digests of @rd's samples, when they have them
 * (dig_offset()); false for none. One huge page where there are huge
 * pages: its 1 MB on small ones was 256 first touches, about 3 ms here
 * (a page of anonymous memory costs some 11 us the first time, a huge
 * page 0.15 ms; docs/design.md §6.5). Else mapped, not calloc()'d: an
 * anonymous mapping's pages are zero and untouched, so the writer pays
 * their first touches on its own thread. The CLI raises M_MMAP_THRESHOLD
 * to 32 MB (tools/heapwarm.c), and calloc() then cleared these 1 MB of
 * the heap on the converting thread, 256 first touches of 4 KB at start
 * (docs/design.md §6.29).
 */
static bool dig_ring_new(const struct rd *rd, struct dig_ring *r)
{
	size_t hp = thp_madvise_size();
	void *m;

	memset(r, 0, sizeof(*r));
	if (!(r->cc_off = dig_offset(rd)))
		return false;
	if (hp >= DIG_BYTES && (r->ent = big_zalloc(hp, &r->mapped))) {
		r->bytes = hp;
		return true;
	}
	m = mmap(NULL, DIG_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED) {
		r->cc_off = 0;
		return false;
	}
	r->ent = m;
	r->bytes = DIG_BYTES;
	r->mapped = true;
	return true;
}

static void dig_ring_free(struct dig_ring *r)
{
	big_free(r->ent, r->bytes, r->mapped);
	r->ent = NULL;
	r->cc_off = 0;
}

/* The digest of the sample at @off (@h, its first @head bytes read). */
static void dig_put(struct dig_ring *r, u64 off, const u8 *h, u64 head, u64 pass,
		    u64 *tail)
{
	struct dig_ent *e = &r->ent[*tail & (DIG_SLOTS - 1)];
	const u8 *cc = h + r->cc_off + 8;
	u64 nr, seq, h1, h2, last = 0;
	bool user;

	if (head < r->cc_off + 8)
		return;
	nr = get_u64(h + r->cc_off);
	if (nr < RD_DIGEST_MIN_NR || nr > (head - r->cc_off - 8) / 8)
		return; /* short, or past what was read (or a bad record) */
	rec_chain_hash(cc, nr, &h1, &h2);
	user = rec_chain_last_user(cc, nr, hdr_misc(h) & PERF_RECORD_MISC_CPUMODE_MASK, &last);
	/* Release stores: a reader that sees any new field sees the odd
	 * sequence word too, and so rejects what it read. */
	seq = __atomic_load_n(&e->seq, __ATOMIC_RELAXED);
	__atomic_store_n(&e->seq, seq + 1, __ATOMIC_RELAXED);
	st_rel(&e->pass, pass);
	st_rel(&e->off, off);
	st_rel(&e->nr, nr);
	st_rel(&e->h1, h1);
	st_rel(&e->h2, h2);
	st_rel(&e->last, last);
	st_rel(&e->user, user);
	st_rel(&e->seq, seq + 2);
	st_rel(&r->tail, ++*tail);
}

/* The ring @rd's digests are read from (the copy's thread's or the
 * warmer's), or NULL; and the memory the records are read in. */
static const struct dig_ring *rd_ring(const struct rd *rd);
static const u8 *rd_base(const struct rd *rd);

/* The slot (+1) of the digest of the record at @off in @r, 0 for none:
 * the writer writes them in file order, the reader asks in file order,
 * each pass (rd_rewind()) of its own: digests of an earlier pass, which
 * the warmer may still write before it sees the rewind, are passed over. */
static u32 dig_find(struct rd *rd, const struct dig_ring *r, u64 off)
{
	u64 t = ld_acq(&r->tail), h = rd->dig_head;

	if (t - h > DIG_SLOTS)
		h = t - DIG_SLOTS; /* written over: those are gone */
	for (; h < t; h++) {
		const struct dig_ent *e = &r->ent[h & (DIG_SLOTS - 1)];
		u64 s1 = ld_acq(&e->seq), ep = ld_acq(&e->pass), eo = ld_acq(&e->off);
		u64 s2 = ld_acq(&e->seq);

		if (s1 != s2 || (s1 & 1) || ep != rd->dig_pass || eo < off)
			continue; /* being written over, of a pass before, or behind */
		if (eo > off)
			break; /* none for it (a rewind, or the warmer passed it) */
		rd->dig_head = h + 1;
		return (u32)(h & (DIG_SLOTS - 1)) + 1;
	}
	rd->dig_head = h;
	return 0;
}

bool rd_digest(const struct rd *rd, u32 dig, u64 off, const u8 *cc, u64 nr,
	       struct rd_digest *out)
{
	const struct dig_ring *r = rd_ring(rd);
	const struct dig_ent *e;
	u64 s1;

	if (!dig || !r || dig > DIG_SLOTS ||
	    off > rd->mem_len || cc != rd_base(rd) + off + r->cc_off + 8)
		return false;
	e = &r->ent[dig - 1];
	s1 = ld_acq(&e->seq);
	if ((s1 & 1) || ld_acq(&e->off) != off || ld_acq(&e->nr) != nr)
		return false;
	out->h1 = ld_acq(&e->h1);
	out->h2 = ld_acq(&e->h2);
	out->last = ld_acq(&e->last);
	out->user = ld_acq(&e->user);
	return ld_acq(&e->seq) == s1;
}

static void warm_follow(struct rd *rd)
{
	__atomic_store_n(&rd->warm->pos, rd->pos, __ATOMIC_RELAXED);
}

/* A rewind: the position first, so a warmer that sees the new pass sees
 * where it starts. */
static void warm_new_pass(struct rd *rd)
{
	warm_follow(rd);
	rd->dig_pass++;
	__atomic_store_n(&rd->warm->pass, rd->dig_pass, __ATOMIC_RELEASE);
}

/* Read a byte of each page of [@from, @to) not yet read (below *@done). */
static u8 warm_touch(const struct rd_warm *w, u64 from, u64 to, u64 *done)
{
	u64 p = from & ~(w->pg - 1);
	u8 acc = 0;

	if (p < *done)
		p = *done;
	for (; p < to; p += w->pg)
		acc ^= *(const volatile u8 *)(w->mem + p);
	if (p > *done)
		*done = p;
	return acc;
}

static void *warm_main(void *arg)
{
	struct rd_warm *w = arg;
	u64 cur = w->begin, seen = w->begin, done = 0, populated = 0, tail = 0, pass = 0;
	long nap = 50 * 1000;
	u8 acc = 0;

	while (!__atomic_load_n(&w->stop, __ATOMIC_RELAXED)) {
		u64 np = __atomic_load_n(&w->pass, __ATOMIC_ACQUIRE);
		u64 pos = __atomic_load_n(&w->pos, __ATOMIC_RELAXED), limit;

		/* A new pass (published before its position): from its start. */
		if (np != pass) {
			pass = np;
			seen = pos + 1;
		}
		if (pos < seen || pos > cur)
			cur = pos; /* rewound, or passed: go on from its record */
		if (pos < seen)
			done = populated = 0;
		seen = pos;
		__atomic_store_n(&w->at, cur, __ATOMIC_RELAXED);
		if (cur >= w->end || w->end - cur < 8 || cur - pos >= WARM_LEAD) {
			struct timespec ts = { 0, nap };

			/* 50 us after progress, up to 1 ms while waiting:
			 * the reader takes at least that long for the
			 * WARM_LEAD of small records, and waking costs. */
			nanosleep(&ts, NULL);
			if (nap < 1000 * 1000)
				nap *= 2;
			continue;
		}
		nap = 50 * 1000;
		limit = w->end - cur > WARM_BATCH ? cur + WARM_BATCH : w->end;
		if (populated < limit) {
			u64 from = (populated > cur ? populated : cur) & ~(w->pg - 1);
			u64 to = (limit + WARM_HEAD + w->pg - 1) & ~(w->pg - 1);

			if (to > w->end)
				to = w->end;
			/* One call maps the batch's page-cache pages (as
			 * populate_ahead()); the reads below fill the rest. */
			madvise((void *)(w->mem + from), to - from, MADV_POPULATE_READ);
			populated = to;
		}
		while (cur < limit && w->end - cur >= 8) {
			const u8 *h = w->mem + cur;
			u64 size = get_u16(h + 6), step = walk_step(h, w->end - cur), head;
			u32 type = get_u32(h);

			if (!step) {
				cur = w->end; /* lost: wait for the reader */
				break;
			}
			if (__atomic_load_n(&w->pos, __ATOMIC_RELAXED) > cur)
				break; /* passed: start again from its record */
			head = type == REC_COMPRESSED || size <= WARM_HEAD ? size : WARM_HEAD;
			acc ^= warm_touch(w, cur, cur + head, &done);
			if (head < size)
				acc ^= warm_touch(w, cur + size - 1, cur + size, &done);
			if (type == PERF_RECORD_SAMPLE && w->dig.ent)
				dig_put(&w->dig, cur, h, head, pass, &tail);
			cur += step;
		}
		__atomic_store_n(&w->at, cur, __ATOMIC_RELAXED);
	}
	/* Keeps the reads from being optimized away (they are volatile
	 * anyway); the value means nothing. */
	__asm__ volatile("" : : "r"(acc));
	return NULL;
}

/* Start the warming thread on a mapped file (rd_opts.warm_min). Without
 * it (no memory, no thread) the reader maps ahead itself. */
static void rd_warm_start(struct rd *rd)
{
	long pg = sysconf(_SC_PAGESIZE);
	struct rd_warm *w;

	if (!rd->mem_is_map || rd->swapped || !rd->warm_min ||
	    rd->mem_len < rd->warm_min || pg <= 0 || rd->data_end <= rd->pos)
		return;
	w = calloc(1, sizeof(*w));
	if (!w)
		return;
	w->mem = rd->mem;
	w->begin = w->pos = w->at = rd->pos;
	w->end = rd->data_end < rd->mem_len ? rd->data_end : rd->mem_len;
	w->pg = (u64)pg;
	dig_ring_new(rd, &w->dig);
	rd->dig_head = rd->dig_pass = 0;
	if (pthread_create(&w->th, NULL, warm_main, w)) {
		dig_ring_free(&w->dig);
		free(w);
		return;
	}
	rd->warm = w;
}

static u64 rd_warm_at(const struct rd *rd)
{
	return __atomic_load_n(&rd->warm->at, __ATOMIC_RELAXED);
}

/* The warmer stops; its digest ring into @keep (its tail into *@tail)
 * when both are given and it has one, else freed. */
static void rd_warm_end(struct rd *rd, struct dig_ring *keep, u64 *tail)
{
	if (!rd->warm)
		return;
	__atomic_store_n(&rd->warm->stop, true, __ATOMIC_RELAXED);
	pthread_join(rd->warm->th, NULL);
	if (keep && rd->warm->dig.ent) {
		*keep = rd->warm->dig;
		*tail = __atomic_load_n(&rd->warm->dig.tail, __ATOMIC_RELAXED);
	} else {
		dig_ring_free(&rd->warm->dig);
	}
	free(rd->warm);
	rd->warm = NULL;
}

static void rd_warm_stop(struct rd *rd)
{
	rd_warm_end(rd, NULL, NULL);
}

/* ------------------------------------------------------------ copy-in */

/*
 * The data section read into memory ahead of the reader (docs/design.md
 * §6.32). On this project's machines, paravirtual VMs with shadow page
 * tables, the first read of each page of a mapped and cached file costs
 * about 2 us, and a DWARF recording's samples (8-64 KB of stack each)
 * are read nearly whole: a test program took 160-170 ms to read one
 * byte of each page of the 337 MB DWARF bench file through a mapping,
 * 36-43 ms to read() it through a 1 MB buffer, and 65-82 ms to pread()
 * it into an anonymous mapping on huge pages released 2 MB at a time
 * behind. So here a thread pread()s the data section into an anonymous
 * mapping as long as the file, each byte at its file offset, FILL_LEAD
 * ahead of the reader, and rd_peek() hands out views of that memory.
 * Only the thread writes it, and only below ->filled (its release
 * store, the reader's acquire load) does the reader read; pages go back
 * only below the reader's oldest record (rd_release_before()), which is
 * below ->filled. A page released there reads as zeros, not as the file,
 * so the rule that nothing reads below the release point matters here;
 * rd_rewind() has the thread read the section again from its start.
 */
/* How far ahead the thread reads (part of peak RSS): 4 MB was as fast
 * as 8 on the DWARF bench file, with 2-4 MB less of peak RSS. */
#define FILL_LEAD (4u << 20)
#define FILL_STEP (256u << 10)
/* Huge pages released behind the reader and not yet used again ahead
 * (fill_release(), fill_recycle()); more are given back. The thread
 * takes one for each huge page it reads into and stays FILL_LEAD (two
 * pages) ahead, so four were as many as the DWARF bench file reused
 * with sixteen (156 of 161), and hold at most 8 MB. */
#define FILL_SPARE 4u

struct rd_fill {
	u8 *base;	/* file offset 0 (a huge page boundary) */
	void *map;	/* the mapping base lies in */
	size_t map_len;
	u64 begin, end; /* the data section */
	u64 released;	/* the reader released below this */
	u64 waits;	/* (atomic) the readers' waits for the thread */
	u64 bytes;	/* read in (the thread's, read after the join) */
	u64 hp;		/* the huge page size */
	u64 spare[FILL_SPARE]; /* released huge pages, by offset: a ring */
	pthread_t th;
	bool running;
	bool shared; /* other readers read it too (rd_copy_share()) */
	int fd;
	/* The thread's, read by the reader. */
	__attribute__((aligned(64))) u64 filled; /* read in over [begin, filled) */
	s64 err;	/* -errno, or 1: the file ended early */
	u64 err_at;	/* where (set before err) */
	u64 spare_head; /* (atomic) spare pages taken */
	u64 recycled;	/* huge pages used again (read after the join) */
	bool no_recycle; /* mremap() refused: release instead */
	u64 lead;	/* how far ahead it reads: FILL_LEAD, or WARM_LEAD with digests */
	struct dig_ring dig; /* the samples' digests, as the warmer's (cc_off 0: none) */
	u64 walk;	/* the thread's digests: the next record's offset */
	u64 dig_tail;	/* digests written (dig_put()'s count) */
	u64 dig_from;	/* dig_tail when the thread took the warmer's ring */
	u64 pass;	/* rd->dig_pass the thread runs in */
	/* The reader's, read by the thread. */
	__attribute__((aligned(64))) u64 want; /* its position, or what it waits for */
	u64 stop;
	u64 spare_tail; /* (atomic) spare pages put */
};

static const struct dig_ring *rd_ring(const struct rd *rd)
{
	if (rd->fill)
		return rd->fill_borrowed || !rd->fill->dig.ent ? NULL : &rd->fill->dig;
	return rd->warm && rd->warm->dig.ent ? &rd->warm->dig : NULL;
}

static const u8 *rd_base(const struct rd *rd)
{
	return rd->fill ? rd->fill->base : rd->mem;
}

#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4 /* Linux 5.7 */
#endif

/*
 * Before the thread's first write into the huge page at @at (a huge page
 * boundary, above ->filled): a page released behind the reader, if there
 * is one, is moved there (mremap() moves the page-table entry; nothing is
 * copied or zeroed). Zeroing a fresh 2 MB page for every 2 MB read in was
 * 28% of a DWARF conversion's samples, more than the copying (13%), and
 * each one is memory the host may have to find anew. MREMAP_DONTUNMAP
 * leaves the old range mapped and empty, as a release would leave it:
 * moving it away and mapping it again left a hole for a moment, where
 * another thread's mmap() (a DSO, a big malloc()) could land and then be
 * mapped over (that version wrote other stacks in 2 of about 50 -j 2
 * runs under load; design §6.32: the cause is not proven). Where
 * the kernel has no MREMAP_DONTUNMAP, pages are released as before. The
 * page's old bytes are overwritten by the reads before ->filled passes
 * them, and nothing reads the released address (the release rule).
 */
static void fill_recycle(struct rd_fill *f, u64 at)
{
	u64 h = __atomic_load_n(&f->spare_head, __ATOMIC_RELAXED), x;
	void *from;

	if (h == __atomic_load_n(&f->spare_tail, __ATOMIC_ACQUIRE))
		return;
	x = f->spare[h % FILL_SPARE];
	__atomic_store_n(&f->spare_head, h + 1, __ATOMIC_RELEASE);
	from = f->base + x;
	if (!f->no_recycle &&
	    mremap(from, f->hp, f->hp, MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP,
		   f->base + at) != MAP_FAILED) {
		f->recycled++;
		return;
	}
	f->no_recycle = true; /* (the thread's own) */
	madvise(from, f->hp, MADV_DONTNEED);
}

/*
 * The digests of the samples read in whole below @to, from ->walk on: what
 * the warmer works out on the mapping (dig_put()), here from the copy,
 * while its bytes are in this CPU's cache, and before ->filled lets the
 * reader read them (so dig_find() meets each one in time). A record the
 * walk cannot make sense of ends it: the reader then works the digests
 * out itself, as the output never depends on them.
 */
static void fill_digests(struct rd_fill *f, u64 to)
{
	while (f->walk < to && to - f->walk >= 8) {
		const u8 *h = f->base + f->walk;
		u64 size = get_u16(h + 6), step;

		if (size >= 8 && size > to - f->walk)
			return; /* the rest after the next read */
		step = walk_step(h, f->end - f->walk);
		if (!step) {
			f->walk = f->end;
			return;
		}
		if (get_u32(h) == PERF_RECORD_SAMPLE)
			dig_put(&f->dig, f->walk, h, size, f->pass, &f->dig_tail);
		f->walk += step;
	}
}

static void *fill_main(void *arg)
{
	struct rd_fill *f = arg;
	u64 at = __atomic_load_n(&f->filled, __ATOMIC_RELAXED);
	long nap = 20 * 1000;

	while (!__atomic_load_n(&f->stop, __ATOMIC_RELAXED)) {
		u64 want = __atomic_load_n(&f->want, __ATOMIC_RELAXED), limit, to;
		ssize_t r;

		limit = want > f->end || f->end - want <= f->lead ? f->end : want + f->lead;
		if (at >= limit) {
			struct timespec ts = { 0, nap };

			/* 20 us after progress, up to 200 us while ahead:
			 * the reader of the DWARF bench file takes about
			 * 2 ms for FILL_LEAD (337 MB in 130-160 ms). */
			nanosleep(&ts, NULL);
			if (nap < 200 * 1000)
				nap *= 2;
			continue;
		}
		nap = 20 * 1000;
		/* Steps that end on FILL_STEP boundaries: page-aligned reads
		 * after the first, and every huge page but the first entered
		 * at its start. */
		to = (at + FILL_STEP) & ~(u64)(FILL_STEP - 1);
		if (to > limit)
			to = limit;
		if (!(at & (f->hp - 1)))
			fill_recycle(f, at);
		r = pread(f->fd, f->base + at, (size_t)(to - at), (off_t)at);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			__atomic_store_n(&f->err_at, at, __ATOMIC_RELAXED);
			__atomic_store_n(&f->err, r < 0 ? -(s64)errno : 1, __ATOMIC_RELEASE);
			break;
		}
		at += (u64)r;
		f->bytes += (u64)r;
		if (f->dig.ent)
			fill_digests(f, at);
		__atomic_store_n(&f->filled, at, __ATOMIC_RELEASE);
	}
	return NULL;
}

/* The thread, from the reader's position (rd->pos, the section's start
 * or past it); false when it could not start. */
static bool fill_start(struct rd *rd)
{
	struct rd_fill *f = rd->fill;
	u64 from = rd->pos < f->begin ? f->begin : rd->pos;

	__atomic_store_n(&f->filled, from, __ATOMIC_RELAXED);
	__atomic_store_n(&f->want, from, __ATOMIC_RELAXED);
	/* The thread is not running: its digests start a pass of their
	 * own, from the reader's record, after the ones written before. */
	f->walk = from;
	f->pass = ++rd->dig_pass;
	rd->dig_head = f->dig_tail;
	__atomic_store_n(&f->stop, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&f->err, 0, __ATOMIC_RELAXED);
	f->running = !pthread_create(&f->th, NULL, fill_main, f);
	return f->running;
}

static void fill_stop(struct rd_fill *f)
{
	if (!f->running)
		return;
	__atomic_store_n(&f->stop, 1, __ATOMIC_RELAXED);
	pthread_join(f->th, NULL);
	f->running = false;
}

bool rd_copy_in(struct rd *rd)
{
	size_t hp = thp_madvise_size(), len;
	struct rd_fill *f;
	uintptr_t a;
	void *m;

	/* Anonymous memory on 4 KB pages costs more a page than the
	 * mapping (14-19 us a first touch here, §6.5): huge pages or
	 * nothing. */
	if (rd->fill || !rd->mem_is_map || rd->swapped || rd->map_fd < 0 || !hp ||
	    rd->data_end <= rd->data_offset || rd->data_end > rd->mem_len ||
	    rd->mem_len > SIZE_MAX - 2 * hp)
		return false;
	/* Aligned as its cache-line members ask (calloc() gives 16). */
	if (posix_memalign((void **)&f, 64, sizeof(*f)))
		return false;
	memset(f, 0, sizeof(*f));
	/* Address space (NORESERVE: no commit charge under the default
	 * overcommit rule); memory only as it is read in, and released
	 * behind the reader as the mapping's pages are. Whole huge pages
	 * up to the first boundary past the file, and one more for the
	 * alignment: the last stretch of the file on 4 KB pages was up to
	 * 512 first touches of some 11 us each (§6.33: 491, 5.4 ms, on
	 * the deep-stack bench file), against one huge page's. */
	len = ((rd->mem_len + hp - 1) & ~(hp - 1)) + hp;
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		 -1, 0);
	if (m == MAP_FAILED) {
		free(f);
		return false;
	}
	a = ((uintptr_t)m + hp - 1) & ~(uintptr_t)(hp - 1);
	if (madvise((void *)a, len - hp, MADV_HUGEPAGE)) {
		munmap(m, len);
		free(f);
		return false;
	}
	f->map = m;
	f->map_len = len;
	f->hp = hp;
	f->base = (u8 *)a;
	f->fd = rd->map_fd;
	f->begin = rd->data_offset;
	f->end = rd->data_end;
	f->released = f->begin & ~(hp - 1); /* nothing below is read in */
	/* The mapping's warmer reads what nobody reads now. Its digest ring
	 * goes to the thread, whose digests follow the warmer's: a ring of
	 * its own would be one more fresh huge page, 2-4 ms each when the
	 * host must find it anew (§6.33). Frame-pointer samples: the thread
	 * works out their digests, as the warmer did, and stays no further
	 * ahead than the warmer does, so the ring holds each digest until
	 * the session takes it. */
	rd_warm_end(rd, &f->dig, &f->dig_tail);
	f->dig_from = f->dig_tail;
	f->lead = f->dig.ent || dig_ring_new(rd, &f->dig) ? WARM_LEAD : FILL_LEAD;
	rd->fill = f;
	if (!fill_start(rd)) {
		rd_copy_end(rd, NULL, NULL, NULL, NULL);
		return false;
	}
	return true;
}

void rd_copy_share(struct rd *to, struct rd *from)
{
	if (!from->fill || to->fill || to->fd >= 0 || to->mem_len != from->mem_len ||
	    to->data_offset != from->data_offset || to->data_end != from->data_end)
		return;
	from->fill->shared = true;
	to->fill = from->fill;
	to->fill_borrowed = true;
}

void rd_copy_end(struct rd *rd, u64 *bytes, u64 *waits, u64 *reused, u64 *digests)
{
	struct rd_fill *f = rd->fill;

	if (f && rd->fill_borrowed) {
		/* Another reader's copy: that reader ends it. */
		rd->fill = NULL;
		rd->fill_borrowed = false;
		f = NULL;
	}
	if (f)
		fill_stop(f);
	if (bytes)
		*bytes = f ? f->bytes : 0;
	if (waits)
		*waits = f ? __atomic_load_n(&f->waits, __ATOMIC_RELAXED) : 0;
	if (reused)
		*reused = f ? f->recycled : 0;
	if (digests)
		*digests = f ? f->dig_tail - f->dig_from : 0;
	if (!f)
		return;
	munmap(f->map, f->map_len);
	dig_ring_free(&f->dig);
	free(f);
	rd->fill = NULL;
}

static int fill_error(struct rd *rd, s64 e, u64 at)
{
	if (e == 1)
		return rd_error(rd, -PERFSPY_E_TRUNCATED, at,
				"the file ended early while being read (changed since it was opened?)");
	return rd_error(rd, (int)e, at, strerror((int)-e));
}

/* Where the thread reads ahead of: the reader's position, or with readers
 * sharing the copy the furthest one's (they wait for the thread, not for
 * each other; the slowest one's position bounds what is released). */
static void fill_want(struct rd_fill *f, u64 at)
{
	u64 cur;

	if (!f->shared) {
		__atomic_store_n(&f->want, at, __ATOMIC_RELAXED);
		return;
	}
	cur = __atomic_load_n(&f->want, __ATOMIC_RELAXED);
	while (at > cur && !__atomic_compare_exchange_n(&f->want, &cur, at, true,
							__ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

/* @n bytes at rd->pos (inside the data section), once the thread has
 * read them in. */
static const u8 *fill_view(struct rd *rd, u64 n, int *err)
{
	struct rd_fill *f = rd->fill;
	u64 need = rd->pos + n;
	unsigned spins = 0;
	s64 e;

	if (need <= __atomic_load_n(&f->filled, __ATOMIC_ACQUIRE))
		return f->base + rd->pos;
	fill_want(f, need);
	__atomic_fetch_add(&f->waits, 1, __ATOMIC_RELAXED);
	while (need > __atomic_load_n(&f->filled, __ATOMIC_ACQUIRE)) {
		if ((e = __atomic_load_n(&f->err, __ATOMIC_ACQUIRE))) {
			*err = fill_error(rd, e, __atomic_load_n(&f->err_at, __ATOMIC_RELAXED));
			return NULL;
		}
		if (!__atomic_load_n(&f->running, __ATOMIC_RELAXED)) {
			*err = rd_error(rd, -EIO, rd->pos, "the reading thread stopped");
			return NULL;
		}
		if (++spins < 256) {
			cpu_relax();
		} else {
			struct timespec ts = { 0, 10 * 1000 };

			nanosleep(&ts, NULL);
		}
	}
	return f->base + rd->pos;
}

static void fill_follow(struct rd *rd)
{
	fill_want(rd->fill, rd->pos);
}

/* A new pass: the thread reads the section again from its start (pages
 * released behind the last pass read as zeros now). */
static void fill_rewind(struct rd *rd)
{
	struct rd_fill *f = rd->fill;
	u64 end;

	/* A reader of another's copy reads the mapping from here on: the
	 * copy behind the others is gone. */
	if (rd->fill_borrowed) {
		rd_copy_end(rd, NULL, NULL, NULL, NULL);
		return;
	}
	fill_stop(f);
	/* Pages released to the thread and not used again go back. */
	for (; f->spare_head < f->spare_tail; f->spare_head++)
		madvise(f->base + f->spare[f->spare_head % FILL_SPARE], f->hp, MADV_DONTNEED);
	/* What the last pass read in and did not release yet (its last
	 * stretch, to the end of its huge page) goes now, or it would stay
	 * until this pass reached it: twice the window (test_copyin). */
	if ((end = (f->end + f->hp - 1) & ~(f->hp - 1)) > f->released)
		madvise(f->base + f->released, end - f->released, MADV_DONTNEED);
	f->released = f->begin & ~(f->hp - 1);
	if (!fill_start(rd))
		rd_copy_end(rd, NULL, NULL, NULL, NULL); /* back to the mapping: nothing handed out */
}

/* Whole huge pages below @off go back (base is on a huge page boundary):
 * one that ends inside one would be split into 512 small ones first. */
static void fill_release(struct rd *rd, u64 off)
{
	struct rd_fill *f = rd->fill;
	u64 hp = f->hp, end;

	if (off < f->released + RELEASE_STEP)
		return;
	end = off & ~(hp - 1);
	if (end > f->end)
		end = f->end & ~(hp - 1);
	if (end <= f->released)
		return;
	/* Whole huge pages go to the thread to be used again ahead, as
	 * many as the ring takes; the rest back to the kernel. */
	for (; f->released < end; f->released += hp) {
		u64 t = f->spare_tail;

		if (t - __atomic_load_n(&f->spare_head, __ATOMIC_ACQUIRE) >= FILL_SPARE)
			break;
		f->spare[t % FILL_SPARE] = f->released;
		__atomic_store_n(&f->spare_tail, t + 1, __ATOMIC_RELEASE);
	}
	if (end > f->released)
		madvise(f->base + f->released, end - f->released, MADV_DONTNEED);
	f->released = end;
}

static void rd_advance(struct rd *rd, u64 n)
{
	rd->pos += n;
	if (rd->fd >= 0)
		rd->sbuf_pos += (size_t)n;
	if (rd->warm)
		warm_follow(rd);
	if (rd->fill)
		fill_follow(rd);
}

/* Skip @n bytes of payload after a record (TRACING_DATA, AUXTRACE). */
static int rd_skip(struct rd *rd, u64 n)
{
	int err = 0;

	if (rd->fd < 0) {
		if (rd->pos > rd->data_end || n > rd->data_end - rd->pos) {
			rd->pos = rd->data_end;
			return -PERFSPY_E_TRUNCATED;
		}
		rd->pos += n;
		return 0;
	}
	while (n) {
		u64 chunk = n < (1 << 20) ? n : (1 << 20);

		if (!rd_peek(rd, chunk, &err))
			return err ? err : -PERFSPY_E_TRUNCATED;
		rd_advance(rd, chunk);
		n -= chunk;
	}
	return 0;
}

static int mark_truncated(struct rd *rd, u64 off)
{
	if (!rd->truncated) {
		rd->truncated = true;
		rd->truncated_at = off;
		pr_warn(rd->log, "%s: data ends inside a record at offset %llu; using what came before",
			rd->name, (unsigned long long)off);
	}
	return 0;
}

/* Feed one COMPRESSED record to the stream decoder; output lands after
 * any partial record left from the previous one (session.c
 * perf_session__process_compressed_event keeps the same carry-over). */
static int decompress(struct rd *rd, const u8 *p, size_t len)
{
	ZSTD_inBuffer in = { p, len, 0 };
	size_t left = rd->zlen - rd->zpos, ret;
	int err;

	if (!rd->zds) {
		rd->zds = ZSTD_createDStream();
		if (!rd->zds)
			return -ENOMEM;
		ZSTD_initDStream(rd->zds);
	}
	if (left)
		memmove(rd->zbuf, rd->zbuf + rd->zpos, left);
	rd->zlen = left;
	rd->zpos = 0;
	while (in.pos < in.size) {
		ZSTD_outBuffer out;

		err = ensure_mem((void **)&rd->zbuf, &rd->zcap, 1,
				 rd->zlen + 256 * 1024);
		if (err)
			return err;
		out.dst = rd->zbuf;
		out.size = rd->zcap;
		out.pos = rd->zlen;
		ret = ZSTD_decompressStream(rd->zds, &out, &in);
		if (ZSTD_isError(ret))
			return -PERFSPY_E_ZSTD;
		rd->zlen = out.pos;
		if (out.pos < out.size && in.pos == in.size)
			break;
	}
	return 0;
}

/* Next record from the decompressed buffer, if a whole one is there. */
static int next_decompressed(struct rd *rd, struct rd_rec *rec)
{
	size_t left = rd->zlen - rd->zpos;
	const struct perf_event_header *h;
	u16 size;

	if (left < sizeof(*h))
		return 0;
	h = (const void *)(rd->zbuf + rd->zpos);
	size = hdr_size(h);
	if (size < sizeof(*h))
		return rd_error(rd, -PERFSPY_E_FORMAT, rd->zoff,
				"record of size < 8 inside compressed data");
	if (size > left)
		return 0; /* continues in the next COMPRESSED record */
	rd->zpos += size;
	rec->hdr = h;
	rec->offset = rd->zoff;
	rec->volatile_ = true;
	rec->dig = 0;
	return 1;
}

static int pipe_attr(struct rd *rd, const u8 *p, u16 size)
{
	u32 asz;
	u64 i, n;
	int err;

	/* {header; attr (attr.size bytes); u64 id[]} - ids start at
	 * attr + attr.size (perf_event__process_attr, header.c). */
	if (size < 8 + ATTR_VER0)
		return rd_error(rd, -PERFSPY_E_FORMAT, rd->pos, "HEADER_ATTR too short");
	asz = get_u32(p + 8 + offsetof(struct perf_event_attr, size));
	if (!asz)
		asz = ATTR_VER0;
	if (asz > (u32)size - 8)
		return rd_error(rd, -PERFSPY_E_FORMAT, rd->pos, "HEADER_ATTR attr.size too large");
	err = rd_add_evsel(rd, p + 8, asz);
	if (err)
		return err;
	n = ((u64)size - 8 - asz) / 8;
	for (i = 0; i < n; i++) {
		err = rd_add_id(rd, get_u64(p + 8 + asz + i * 8),
				(u32)(rd->nr_evsels - 1));
		if (err)
			return err;
	}
	rd->evsels[rd->nr_evsels - 1].name = rd_default_name(rd, &rd->evsels[rd->nr_evsels - 1]);
	return 0;
}

/* EVENT_UPDATE: {header; u64 type; u64 id; payload}; NAME = 2. */
static int event_update(struct rd *rd, const u8 *p, u16 size)
{
	struct rd_evsel *ev;
	const char *name;

	if (size < 24 || get_u64(p + 8) != 2)
		return 0;
	ev = rd_evsel_by_id(rd, get_u64(p + 16));
	if (!ev || ev->name_from_desc)
		return 0;
	name = arena_strndup(&rd->strs, (const char *)p + 24,
			     strnlen((const char *)p + 24, size - 24u));
	if (!name)
		return -ENOMEM;
	ev->name = name;
	ev->name_from_desc = true;
	return 0;
}

/* Handle container records; returns 1 if the record was consumed. */
static int container_record(struct rd *rd, const u8 *p, u16 size, u32 type)
{
	int err = 0;

	switch (type) {
	case REC_HEADER_ATTR:
		err = rd->pipe_mode && !rd->meta_done ? pipe_attr(rd, p, size) : 0;
		break;
	case REC_HEADER_FEATURE:
		if (size >= 16 && !rd->meta_done && get_u64(p + 8) < FEAT_LAST &&
		    get_u64(p + 8) != FEAT_TRACING_DATA)
			err = rd_process_feature(rd, (int)get_u64(p + 8), p + 16, size - 16u);
		break;
	case REC_EVENT_UPDATE:
		err = event_update(rd, p, size);
		break;
	default:
		return 0;
	}
	return err ? err : 1;
}

/* Tracing data of real recordings is tens of KB (only the recorded
 * events' formats); a stream claiming more is not buffered whole. */
#define TRACING_MAX (64u << 20)

static int tracing_blob(struct rd *rd, u64 len)
{
	int err = 0;
	const u8 *p;

	if (len > TRACING_MAX && !rd->meta_done && !rd->trace)
		pr_warn(rd->log, "%s: %llu bytes of tracing data at offset %llu; skipped (tracepoints stay unnamed)",
			rd->name, (unsigned long long)len, (unsigned long long)rd->pos);
	if (rd->meta_done || rd->trace || len > TRACING_MAX)
		return rd_skip(rd, len);
	p = rd_peek(rd, len, &err);
	if (!p)
		return err ? err : -PERFSPY_E_TRUNCATED;
	err = rd_parse_trace(rd, p, len);
	if (err)
		return err;
	rd_advance(rd, len);
	return 0;
}

/*
 * Reading the copy, the next 4 KB are asked into the cache ahead of the
 * reader (docs/design.md §6.33): the copy's thread wrote them on the
 * other CPU a moment ago, and the load of each record's header was 3.2%
 * of the deep-stack file's samples, nearly all of rd_next(); with the
 * prefetch 1.3%. Only below ->filled (the thread's, a relaxed read: a
 * prefetch of a line not yet written costs a miss, nothing else).
 */
#define RD_PREFETCH (4u << 10)

static inline void rd_prefetch(struct rd *rd)
{
	u64 to = rd->pos + RD_PREFETCH, at = rd->prefetched, filled;

	if (!rd->fill)
		return;
	filled = __atomic_load_n(&rd->fill->filled, __ATOMIC_RELAXED);
	if (to > filled)
		to = filled;
	if (at < rd->pos || at > rd->pos + 2 * RD_PREFETCH)
		at = rd->pos & ~(u64)63;
	for (; at < to; at += 64)
		__builtin_prefetch(rd->fill->base + at);
	rd->prefetched = at;
}

int rd_next(struct rd *rd, struct rd_rec *rec)
{
	const struct dig_ring *ring;
	const struct perf_event_header *h;
	const u8 *p;
	u64 off, extra;
	u16 size;
	u32 type;
	int err;

	for (;;) {
		err = next_decompressed(rd, rec);
		if (err)
			return err;
		off = rd->pos;
		rd_prefetch(rd);
		p = rd_peek(rd, sizeof(*h), &err);
		if (!p) {
			if (err)
				return err;
			if (rd->fd >= 0 ? rd->sbuf_len > rd->sbuf_pos : off < rd->data_end)
				mark_truncated(rd, off);
			if (rd->fd >= 0)
				rd->consumed = true;
			return 0;
		}
		h = (const void *)p;
		size = hdr_size(h);
		type = hdr_type(h);
		if (size < sizeof(*h))
			return rd_error(rd, -PERFSPY_E_FORMAT, off,
					"record of size < 8 (corrupt data)");
		p = rd_peek(rd, size, &err);
		if (!p) {
			if (err)
				return err;
			mark_truncated(rd, off);
			if (rd->fd >= 0)
				rd->consumed = true;
			return 0;
		}
		if (type == REC_AUXTRACE_INFO && !rd->aux_noted) {
			/* The AUX trace holds branch packets that only a
			 * hardware trace decoder (perf's --itrace) turns into
			 * samples; the file's ordinary samples are still
			 * samples (perf report -D counts only those), so they
			 * are converted and the trace skipped, said once. */
			rd->aux_noted = true;
			pr_warn(rd->log, "%s: AUX area trace data (Intel PT, CoreSight) at offset %llu skipped: "
				"not decoded into samples; the file's ordinary samples are converted",
				rd->name, (unsigned long long)off);
		}
		trailing_payload(p, size, type, &extra);
		if (type == REC_COMPRESSED) {
			rd->zoff = off;
			err = decompress(rd, p + 8, size - 8u);
			rd_advance(rd, size);
			if (err)
				return err == -PERFSPY_E_ZSTD ?
					rd_error(rd, err, off, "zstd decompression failed") : err;
			continue;
		}
		err = container_record(rd, p, size, type);
		if (err < 0)
			return err;
		if (err > 0) {
			rd_advance(rd, size);
			continue;
		}
		if (type == REC_HEADER_TRACING_DATA) {
			rd_advance(rd, size);
			err = tracing_blob(rd, extra);
			if (err == -PERFSPY_E_TRUNCATED)
				return mark_truncated(rd, off);
			if (err)
				return err;
			continue;
		}
		rec->hdr = (const void *)p;
		rec->offset = off;
		rec->volatile_ = rd->fd >= 0;
		rec->dig = type == PERF_RECORD_SAMPLE && (ring = rd_ring(rd)) ?
			dig_find(rd, ring, off) : 0;
		rd_advance(rd, size);
		if (extra) {
			err = rd_skip(rd, extra);
			if (err == -PERFSPY_E_TRUNCATED)
				mark_truncated(rd, off);
			else if (err)
				return err;
		}
		return 1;
	}
}
