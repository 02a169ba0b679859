/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Small helpers shared by every libconv module: overflow-checked array
 * growth, bounds-checked unaligned reads from untrusted buffers, a string
 * arena, and the internal logging hook.
 *
 * Nothing here keeps global state: the log sink lives in a struct the
 * caller owns (docs/conventions.md §1, "no mutable globals").
 */
#ifndef PERFSPY_UTIL_H
#define PERFSPY_UTIL_H

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int32_t s32;
typedef int64_t s64;

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define ALIGN8(x) (((x) + 7) & ~(u64)7)

/* Log levels, same numbering as the public PERFSPY_LOG_* values. */
enum { LOG_ERROR = 0, LOG_WARN = 1, LOG_INFO = 2, LOG_DEBUG = 3 };

/* The level an options struct asks for: 0 is "default" (WARN) unless
 * the caller says it means ERROR (perfspy.h, log_level_set). */
static inline int log_level_pick(int level, bool set)
{
	return level || set ? level : LOG_WARN;
}

struct log_sink {
	void (*fn)(void *ctx, int level, const char *msg);
	void *ctx;
	int level; /* messages above this level are dropped */
};

void log_msg(const struct log_sink *log, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#define pr_warn(log, ...) log_msg(log, LOG_WARN, __VA_ARGS__)
#define pr_info(log, ...) log_msg(log, LOG_INFO, __VA_ARGS__)
#define pr_debug(log, ...) log_msg(log, LOG_DEBUG, __VA_ARGS__)

/*
 * Make room for at least @need elements in *@data (element size @elem),
 * growing geometrically. Returns 0 or -ENOMEM; on failure *@data is
 * untouched (libbpf libbpf_ensure_mem does the same job). The check is
 * inline: the frame paths call it for every frame, nearly always with
 * room to spare (issue 16); ensure_mem_grow() is the growing slow path.
 */
int ensure_mem_grow(void **data, size_t *cap, size_t elem, size_t need);

static inline int ensure_mem(void **data, size_t *cap, size_t elem, size_t need)
{
	return need <= *cap ? 0 : ensure_mem_grow(data, cap, elem, need);
}

/* calloc/realloc with overflow checks; NULL on failure. */
void *xreallocarray(void *p, size_t n, size_t size);

/* The online CPUs this process may run on (sysconf and its affinity,
 * asked once; at least 1): where a helper thread has a CPU of its own
 * to run on. */
long online_cpus(void);

/*
 * The span one page-table entry above the last level maps (2 MB on
 * x86-64 with 4 KB pages; /sys/kernel/mm/transparent_hugepage/
 * hpage_pmd_size), or the page size where that cannot be read: the most
 * one fault may map at once, whether of anonymous memory or of a file
 * whose page cache holds huge folios (docs/design.md §6.6).
 */
size_t pmd_map_size(void);
/* The PMD huge page size where transparent huge pages honour
 * MADV_HUGEPAGE (enabled "[always]" or "[madvise]"), else 0. */
size_t thp_madvise_size(void);

/*
 * Zeroed memory for a large array that is touched whole and soon (a hash
 * table's slots): from @bytes of one transparent huge page up, a private
 * anonymous mapping whose whole huge pages are marked MADV_HUGEPAGE
 * (docs/design.md §6.9); below that, or where huge pages are off, or
 * under a sanitizer, calloc(). *@mapped says which, for big_free().
 * NULL on failure.
 */
void *big_zalloc(size_t bytes, bool *mapped);
/* Frees what big_zalloc(@bytes) returned with *@mapped. NULL is fine. */
void big_free(void *p, size_t bytes, bool mapped);

/*
 * Faults in @bytes at @p, a big_zalloc() mapping nobody touches until
 * big_warm_wait(), on a thread of its own, where there is a second CPU
 * (docs/design.md §6.9): the kernel zeroes each huge page at its first
 * touch, up to 3 ms a page on this project's VMs, better spent beside
 * the caller than in its next write.
 * Nothing is started (and nothing needs doing) where that thread cannot
 * be; *@w is zeroed or waited on before. Moving *@w is fine.
 */
struct big_warm {
	pthread_t th;
	bool on;
};
void big_warm_start(struct big_warm *w, void *p, size_t bytes);
/* Back from the thread big_warm_start() started, if any: before the
 * range is touched or freed. */
void big_warm_wait(struct big_warm *w);

/* Unaligned native-endian reads; callers check bounds first. */
/* One step of a spinning wait: tells the CPU (and a sibling hyperthread)
 * that this thread polls. */
static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

static inline u64 get_u64(const void *p)
{
	u64 v;
	memcpy(&v, p, sizeof(v));
	return v;
}

static inline u32 get_u32(const void *p)
{
	u32 v;
	memcpy(&v, p, sizeof(v));
	return v;
}

static inline u16 get_u16(const void *p)
{
	u16 v;
	memcpy(&v, p, sizeof(v));
	return v;
}

/*
 * perf_event_header fields of a record that may sit at any alignment
 * (decompressed data, stream buffers, fuzz inputs): read by offset, never
 * through the struct (docs/perf-data-format.md §1.3: u32 type,
 * u16 misc, u16 size).
 */
static inline u32 hdr_type(const void *h)
{
	return get_u32(h);
}

static inline u16 hdr_misc(const void *h)
{
	return get_u16((const u8 *)h + 4);
}

static inline u16 hdr_size(const void *h)
{
	return get_u16((const u8 *)h + 6);
}

/*
 * A cursor over an untrusted byte range. Every take fails (returns false
 * and sets ->bad) instead of reading past ->end, so a decoder can chain
 * reads and check once.
 */
struct cur {
	const u8 *p;
	const u8 *end;
	bool bad;
};

static inline void cur_init(struct cur *c, const void *p, size_t len)
{
	c->p = p;
	c->end = (const u8 *)p + len;
	c->bad = false;
}

static inline size_t cur_left(const struct cur *c)
{
	return (size_t)(c->end - c->p);
}

static inline bool cur_skip(struct cur *c, size_t n)
{
	if (c->bad || cur_left(c) < n) {
		c->bad = true;
		return false;
	}
	c->p += n;
	return true;
}

static inline u64 cur_u64(struct cur *c)
{
	const u8 *p = c->p;

	return cur_skip(c, 8) ? get_u64(p) : 0;
}

static inline u32 cur_u32(struct cur *c)
{
	const u8 *p = c->p;

	return cur_skip(c, 4) ? get_u32(p) : 0;
}

static inline u16 cur_u16(struct cur *c)
{
	const u8 *p = c->p;

	return cur_skip(c, 2) ? get_u16(p) : 0;
}

static inline u8 cur_u8(struct cur *c)
{
	const u8 *p = c->p;

	return cur_skip(c, 1) ? *p : 0;
}

/* Pointer to the next @n bytes, or NULL (and ->bad) if fewer remain. */
static inline const void *cur_take(struct cur *c, size_t n)
{
	const u8 *p = c->p;

	return cur_skip(c, n) ? p : NULL;
}

/*
 * String arena: append-only storage for NUL-terminated strings whose
 * lifetime is the arena's. Pointers stay valid (blocks never move).
 */
struct arena {
	struct arena_blk *head;
	size_t used; /* bytes used in head */
	size_t total;
};

void arena_init(struct arena *a);
void arena_free(struct arena *a);
void *arena_alloc(struct arena *a, size_t size); /* 8-aligned */
char *arena_strndup(struct arena *a, const char *s, size_t n);
char *arena_strdup(struct arena *a, const char *s);
char *arena_printf(struct arena *a, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* qsort that accepts an empty (possibly NULL) array: qsort(NULL, 0, ...)
 * is undefined behaviour (C11 7.22.5), and UBSan reports it. Arrays that
 * are nearly in order are finished by insertion (util.c says why). */
void xqsort(void *base, size_t n, size_t size,
	    int (*cmp)(const void *, const void *));

/*
 * The stable sort xqsort() gives, for arrays whose @cmp orders first by
 * the u64 at @key_off, ascending: a radix sort on that key, then each
 * run of equal keys by @cmp. Falls back to xqsort() for short arrays,
 * without memory, or when the elements are larger than 256 bytes.
 */
void xsort_u64key(void *base, size_t n, size_t size, size_t key_off,
		  int (*cmp)(const void *, const void *));
/* The same order as indices into @base (n of them, malloc()ed), the
 * elements left where they are: for a caller that copies them once into
 * an array of its own. NULL without memory. */
size_t *xsort_u64key_order(const void *base, size_t n, size_t size, size_t key_off,
			   int (*cmp)(const void *, const void *));

/* 64-bit hash (FNV-1a variant with a final mix); deterministic. */
u64 hash_bytes(const void *p, size_t n, u64 seed);

/* A 64-bit hash of long keys (whole stacks), four words at a time
 * (util.c says why); not hash_bytes()'s values, but hash_bytes128()'s
 * first. */
u64 hash_wide(const void *p, size_t n, u64 seed);

/* Two independent 64-bit hashes of the same bytes in one pass, four
 * words at a time. */
void hash_bytes128(const void *p, size_t n, u64 seed, u64 *h1, u64 *h2);

static inline u64 hash_mix(u64 h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return h;
}

/*
 * py-spy's short filename rule (docs/pyspy-formats.md §1.4): keep
 * the file plus every enclosing directory that holds an __init__.py.
 * Writes into @buf; returns @buf, or @path itself when nothing can be
 * shortened (no '/', or pseudo paths such as "<frozen ...>").
 */
const char *short_filename(const char *path, char *buf, size_t size);

/* The whole file @path in one new buffer (*@out, the caller frees it;
 * *@len bytes, with room for one more): the py-spy readers need two
 * passes over a capture, and pprof input is decompressed whole.
 * 0, -errno from open/read, or -ENOMEM. */
int read_file_whole(const char *path, char **out, size_t *len);

#endif
