/* SPDX-License-Identifier: GPL-2.0 */
/*
 * perf.data container reader: header, attrs, feature sections, pipe-mode
 * metadata records, PERF_RECORD_COMPRESSED, and the record stream.
 *
 * The reader hands out one raw record at a time as a view into its input
 * (the file mapping, a stream buffer, or the zstd output buffer). It
 * consumes container records itself (HEADER_ATTR, HEADER_FEATURE,
 * HEADER_TRACING_DATA, EVENT_UPDATE, COMPRESSED, and AUXTRACE payloads)
 * and yields everything else. Layout facts: docs/perf-data-format.md
 * §1 (tools/perf/Documentation/perf.data-file-format.txt).
 */
#ifndef PERFSPY_READER_H
#define PERFSPY_READER_H

#include <linux/perf_event.h>

#include "common/hash.h"
#include "common/util.h"

struct trace_info;

/* One event of the file (perf's evsel). */
struct rd_evsel {
	struct perf_event_attr attr; /* zero-extended copy */
	const char *name;	     /* never NULL after rd_open */
	bool name_from_desc;	     /* EVENT_DESC/EVENT_UPDATE named it */
	int id_pos;		     /* u64 index of the id in a sample, -1: none */
	int is_pos;		     /* index from the end in sample_id, -1: none */
	u32 id_hdr_size;	     /* bytes of the sample_id trailer */
	u64 nr_samples;
};

/* Features we decode (bit numbers from tools/perf/util/header.h). */
enum {
	FEAT_TRACING_DATA = 1,
	FEAT_BUILD_ID = 2,
	FEAT_HOSTNAME = 3,
	FEAT_OSRELEASE = 4,
	FEAT_VERSION = 5,
	FEAT_ARCH = 6,
	FEAT_NRCPUS = 7,
	FEAT_CPUDESC = 8,
	FEAT_CPUID = 9,
	FEAT_TOTAL_MEM = 10,
	FEAT_CMDLINE = 11,
	FEAT_EVENT_DESC = 12,
	FEAT_SAMPLE_TIME = 21,
	FEAT_COMPRESSED = 27,
	FEAT_LAST = 32, /* HEADER_LAST_FEATURE in 6.1 and 6.12 */
};

/* A build id from the BUILD_ID feature or a HEADER_BUILD_ID record. */
struct rd_build_id {
	s32 pid; /* -1 for the host kernel and user DSOs */
	u16 cpumode;
	u8 size;
	u8 id[20];
	const char *filename;
};

/* perf user record types (tools/lib/perf/include/perf/event.h). */
enum {
	REC_HEADER_ATTR = 64,
	REC_HEADER_EVENT_TYPE = 65,
	REC_HEADER_TRACING_DATA = 66,
	REC_HEADER_BUILD_ID = 67,
	REC_FINISHED_ROUND = 68,
	REC_ID_INDEX = 69,
	REC_AUXTRACE_INFO = 70,
	REC_AUXTRACE = 71,
	REC_AUXTRACE_ERROR = 72,
	REC_THREAD_MAP = 73,
	REC_CPU_MAP = 74,
	REC_EVENT_UPDATE = 78,
	REC_TIME_CONV = 79,
	REC_HEADER_FEATURE = 80,
	REC_COMPRESSED = 81,
	REC_FINISHED_INIT = 82,
};

struct rd_opts {
	const struct log_sink *log;
	const char *name; /* for messages */
	/* A mapped file of at least this many bytes gets a warming thread
	 * (rd_warm_start()); 0: never. */
	u64 warm_min;
};

struct rd_warm;

/* A record handed out by rd_next(). */
struct rd_rec {
	const struct perf_event_header *hdr; /* hdr->size bytes readable */
	u64 offset;    /* file offset (of the COMPRESSED record if inside one) */
	u32 dig;       /* a sample's digest slot for rd_digest(); 0: none */
	bool volatile_; /* view dies at the next rd_next(); copy to keep it */
};

/* A frame-pointer callchain's digest (record.h: rec_chain_hash(),
 * rec_chain_last_user()). */
struct rd_digest {
	u64 h1, h2; /* rec_chain_hash() */
	u64 last;   /* with user: rec_chain_last_user()'s entry */
	bool user;  /* rec_chain_last_user()'s answer */
};

struct rd {
	const char *name;
	const struct log_sink *log;

	/* Input: either a memory image (mapping or buffer) or a stream. */
	const u8 *mem;
	size_t mem_len;
	bool mem_is_map; /* mmap()ed by us: munmap on close */
	u8 *mem_owned;	 /* slurped stream: free on close */
	int fd;		 /* stream fd, or -1 */
	u8 *sbuf;	 /* stream buffer */
	size_t sbuf_len, sbuf_pos, sbuf_cap;
	bool stream_eof;
	bool consumed; /* a stream that was read through */
	bool meta_done; /* pipe metadata already taken in (rewound) */
	bool aux_noted; /* the AUX trace note was given (once per file) */

	bool pipe_mode;
	bool swapped; /* other byte order: mem_owned converted (swap.c) */
	u64 header_size;
	u64 data_offset;
	u64 data_size;
	u64 data_end; /* where records stop */
	u64 pos;      /* next record's offset */
	u64 file_size;
	u64 advised;  /* mapping released up to here */
	u64 redo_lo, redo_hi; /* to release again once the warmer left it */
	u64 populated; /* mapping populated up to here (populate_ahead) */
	u64 prefetched; /* the copy's cache lines asked for up to here */
	u64 warm_min;  /* rd_opts.warm_min */
	struct rd_warm *warm; /* the warming thread, or NULL */
	struct rd_fill *fill; /* the data read into memory ahead (rd_copy_in), or NULL */
	bool fill_borrowed; /* @fill is another reader's (rd_copy_share) */
	int map_fd; /* the mapped file, for rd_copy_in()'s reads; -1 */
	u64 dig_head;  /* the warmer's digests looked at so far (rd_next) */
	u64 dig_pass;  /* passes begun again (rd_rewind), for its digests */
	bool truncated;
	u64 truncated_at;
	u64 feat_bits[4];

	/* The event list (evlist.c). */
	struct rd_evsel *evsels;
	size_t nr_evsels, cap_evsels;
	struct htab ids; /* sample id -> evsel index */
	bool same_sample_type;

	/* Feature contents. */
	const char *hostname, *os_release, *version, *arch, *cpu_desc, *cpuid;
	const char *cmdline;
	u32 nr_cpus_avail, nr_cpus_online;
	u64 total_mem;
	u64 sample_time_first, sample_time_last;
	struct rd_build_id *build_ids;
	size_t nr_build_ids, cap_build_ids;
	struct trace_info *trace;
	bool compressed;

	/* PERF_RECORD_COMPRESSED state. */
	void *zds; /* ZSTD_DStream */
	u8 *zbuf;
	size_t zlen, zpos, zcap;
	u64 zoff; /* offset of the COMPRESSED record being drained */

	struct arena strs;
};

int rd_open_fd(struct rd *rd, int fd, const struct rd_opts *opts);
int rd_open_mem(struct rd *rd, const void *buf, size_t len,
		const struct rd_opts *opts);
void rd_close(struct rd *rd);

/* Start (again) at the first record. -PERFSPY_E_CONSUMED for a stream
 * that was already read through. */
int rd_rewind(struct rd *rd);

/*
 * Next record. Returns 1 with *@rec filled, 0 at the end (a truncated
 * tail sets rd->truncated), or a negative error for input that cannot be
 * walked further (a record with size < 8: the stream has no framing left).
 */
int rd_next(struct rd *rd, struct rd_rec *rec);

/*
 * The digest of the callchain of the sample record at file offset @off,
 * @nr entries at @cc, as the warming thread worked it out while reading
 * ahead (docs/design.md §6.21), from @dig (rd_rec.dig, or 0). False
 * when there is none: it was not worked out, the slot has been used
 * again since, or it is not of these very bytes; then the caller works
 * it out itself, with the same functions.
 */
bool rd_digest(const struct rd *rd, u32 dig, u64 off, const u8 *cc, u64 nr,
	       struct rd_digest *out);

/* Chains shorter than this get no digest: a slot was last written on the
 * other CPU, so looking at it costs a cache miss, more than reading a
 * short chain (the build recording's are 4 entries); working it out would
 * only take the other CPU from the namer (docs/design.md §6.21). */
#define RD_DIGEST_MIN_NR 16

/* Index of @ev in rd->evsels. */
static inline size_t rd_evsel_idx(const struct rd *rd, const struct rd_evsel *ev)
{
	return (size_t)(ev - rd->evsels);
}

/*
 * Read the data section into anonymous memory on a thread of its own,
 * a stretch ahead of the reader, instead of reading it where it lies in
 * the file mapping (docs/design.md §6.32): records are then views into
 * that memory, at their file offsets, and pages behind the reader go
 * back as before. For a mapped file of native byte order on a machine
 * with transparent huge pages; false (nothing changed) otherwise, or
 * when there is no memory or thread for it. A session on the same
 * mapping reads the copy only when given it (rd_copy_share()); the
 * namer's and the builder's read the mapping.
 */
bool rd_copy_in(struct rd *rd);
/*
 * @to, a reader of the same input as @from (rd_open_mem() of its
 * mapping), reads @from's copy from here on (docs/design.md §6.32, -j N):
 * its views come from the copy and wait for @from's thread, which reads
 * ahead of the furthest reader. Only @from releases pages, and only behind
 * every reader's oldest record (the caller's to see to: split_keep()).
 * @from outlives @to's reading; rd_copy_end(@to) lets go of the copy.
 */
void rd_copy_share(struct rd *to, struct rd *from);
/* Back to reading the mapping: the thread stops, the memory goes, and
 * any record handed out while copying is gone with it. The bytes read
 * in, the readers' waits for them, the huge pages used again and the
 * sample digests worked out (§6.33) into @bytes, @waits, @reused and
 * @digests (each may be NULL). */
void rd_copy_end(struct rd *rd, u64 *bytes, u64 *waits, u64 *reused, u64 *digests);
/* Release pages of a file mapping below @off (keeps RSS bounded). */
void rd_release_before(struct rd *rd, u64 off);

/* Parse a build-id entry (BUILD_ID feature / HEADER_BUILD_ID record). */
int rd_parse_build_id(struct rd *rd, const u8 *p, size_t len,
		      struct rd_build_id *out);

#endif
