// SPDX-License-Identifier: GPL-2.0
/*
 * Shared helpers: logging through the caller's sink, overflow-checked
 * growth, a string arena, hashing and py-spy's short filename rule.
 */
#include "util.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <stdint.h>
#include <unistd.h>
#include <fcntl.h>

void log_msg(const struct log_sink *log, int level, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	if (!log || !log->fn || level > log->level)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	log->fn(log->ctx, level, buf);
}

void *xreallocarray(void *p, size_t n, size_t size)
{
	size_t total;

	if (__builtin_mul_overflow(n, size, &total))
		return NULL;
	return realloc(p, total ? total : 1);
}

/*
 * Symbol tables mostly arrive sorted (kallsyms by address, with a few
 * aliases at one address out of rank order), and sorting them in full was
 * 7% of a system-wide conversion's instructions (issue 16). An insertion
 * sort finishes such an array in about n compares; past a budget of moves
 * it hands over to qsort. Both are stable (glibc's qsort is a merge sort),
 * and the moves made before the hand-over keep equal elements in their
 * input order, so the result is the one qsort alone gives.
 */
void xqsort(void *base, size_t n, size_t size,
	    int (*cmp)(const void *, const void *))
{
	char *p = base, tmp[128];
	size_t i, j, moves = 0, budget = n / 8 + 64;

	if (n < 2)
		return;
	if (size > sizeof(tmp))
		goto full;
	for (i = 1; i < n; i++) {
		if (cmp(p + (i - 1) * size, p + i * size) <= 0)
			continue;
		memcpy(tmp, p + i * size, size);
		for (j = i; j > 0 && cmp(p + (j - 1) * size, tmp) > 0; j--)
			moves++;
		memmove(p + (j + 1) * size, p + j * size, (i - j) * size);
		memcpy(p + j * size, tmp, size);
		if (moves > budget)
			goto full;
	}
	return;
full:
	qsort(base, n, size, cmp);
}

/*
 * Symbol tables are sorted once per binary opened; a merge sort of a
 * big one (libc's debug file, a compiler) through a comparison callback
 * was 4% of a system-wide conversion (issue 16). An LSD radix sort of
 * (key, index) pairs, 8 bits a pass, skips the passes where every key has
 * the same byte (addresses of one binary share their high bytes), and is
 * stable; the insertion sort of each run of equal keys by @cmp is too,
 * so the order is that of a stable sort by @cmp.
 */
struct ukey {
	u64 key;
	size_t idx;
};

size_t *xsort_u64key_order(const void *base, size_t n, size_t size, size_t key_off,
			   int (*cmp)(const void *, const void *))
{
	struct ukey *keys, *a, *b, *t;
	size_t cnt[256], i, j, shift, *order, tmp;
	const char *p = base;

	if (n > SIZE_MAX / 2 / sizeof(*keys))
		return NULL;
	keys = malloc(2 * n * sizeof(*keys) + 1);
	order = xreallocarray(NULL, n + 1, sizeof(*order));
	if (!keys || !order) {
		free(keys);
		free(order);
		return NULL;
	}
	a = keys;
	b = keys + n;
	for (i = 0; i < n; i++) {
		memcpy(&a[i].key, p + i * size + key_off, sizeof(u64));
		a[i].idx = i;
	}
	for (shift = 0; n && shift < 64; shift += 8) {
		memset(cnt, 0, sizeof(cnt));
		for (i = 0; i < n; i++)
			cnt[(a[i].key >> shift) & 0xff]++;
		if (cnt[(a[0].key >> shift) & 0xff] == n)
			continue; /* one byte value: the pass would not move */
		for (i = 0, j = 0; i < 256; i++) {
			size_t c = cnt[i];

			cnt[i] = j;
			j += c;
		}
		for (i = 0; i < n; i++)
			b[cnt[(a[i].key >> shift) & 0xff]++] = a[i];
		t = a;
		a = b;
		b = t;
	}
	for (i = 0; i < n; i++)
		order[i] = a[i].idx;
	/* Runs of one key, by the rest of @cmp (stable: only strictly
	 * greater elements move). */
	for (i = 1; i < n; i++) {
		if (a[i].key != a[i - 1].key ||
		    cmp(p + order[i - 1] * size, p + order[i] * size) <= 0)
			continue;
		tmp = order[i];
		for (j = i; j > 0 && a[j - 1].key == a[i].key &&
			    cmp(p + order[j - 1] * size, p + tmp * size) > 0; j--)
			order[j] = order[j - 1];
		order[j] = tmp;
	}
	free(keys);
	return order;
}

void xsort_u64key(void *base, size_t n, size_t size, size_t key_off,
		  int (*cmp)(const void *, const void *))
{
	size_t *order = NULL, i;
	char *p = base, *out = NULL;

	if (n >= 256) {
		order = xsort_u64key_order(base, n, size, key_off, cmp);
		out = order ? xreallocarray(NULL, n, size) : NULL;
	}
	if (!out) {
		free(order);
		xqsort(base, n, size, cmp);
		return;
	}
	for (i = 0; i < n; i++)
		memcpy(out + i * size, p + order[i] * size, size);
	memcpy(p, out, n * size);
	free(out);
	free(order);
}

int ensure_mem_grow(void **data, size_t *cap, size_t elem, size_t need)
{
	size_t ncap;
	void *p;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap : 16;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2)
			return -ENOMEM;
		ncap *= 2;
	}
	p = xreallocarray(*data, ncap, elem);
	if (!p)
		return -ENOMEM;
	*data = p;
	*cap = ncap;
	return 0;
}

/*
 * Huge pages for big arrays (docs/design.md §6.9). A sanitizer keeps
 * calloc(): its allocator is what finds an overflow out of the array.
 */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define BIG_CALLOC_ONLY 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
	__has_feature(memory_sanitizer)
#define BIG_CALLOC_ONLY 1
#endif
#endif

/* /sys/kernel/mm/transparent_hugepage/@name into @buf, NUL-terminated;
 * its length, or -1. */
static ssize_t thp_sysfs(const char *name, char *buf, size_t size)
{
	char path[96];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/sys/kernel/mm/transparent_hugepage/%s", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	n = fd >= 0 ? read(fd, buf, size - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n >= 0)
		buf[n] = '\0';
	return n;
}

long online_cpus(void)
{
	static long cached; /* 0: not asked yet; a racing caller asks too */
	long n = __atomic_load_n(&cached, __ATOMIC_RELAXED);

	if (!n) {
		cpu_set_t set;

		n = sysconf(_SC_NPROCESSORS_ONLN);
		/* Fewer if this process may run on fewer (taskset, a
		 * container's cpuset): a helper thread on the one CPU the
		 * converting thread has only takes turns with it. */
		if (!sched_getaffinity(0, sizeof(set), &set) && CPU_COUNT(&set) > 0 &&
		    CPU_COUNT(&set) < n)
			n = CPU_COUNT(&set);
		n = n > 0 ? n : 1;
		__atomic_store_n(&cached, n, __ATOMIC_RELAXED);
	}
	return n;
}

size_t pmd_map_size(void)
{
	static size_t cached; /* 0: not read yet; a racing caller reads too */
	size_t v = __atomic_load_n(&cached, __ATOMIC_RELAXED);
	long pg = sysconf(_SC_PAGESIZE);
	unsigned long hp;
	char buf[64];

	if (v)
		return v;
	v = pg > 0 ? (size_t)pg : 4096;
	if (thp_sysfs("hpage_pmd_size", buf, sizeof(buf)) > 0) {
		hp = strtoul(buf, NULL, 10);
		/* A power of two above the page size. */
		if (hp > v && !(hp & (hp - 1)))
			v = hp;
	}
	__atomic_store_n(&cached, v, __ATOMIC_RELAXED);
	return v;
}

/* The PMD huge page size where transparent huge pages honour
 * MADV_HUGEPAGE ("[always]" or "[madvise]" in .../enabled, the kernel's
 * admin-guide/mm/transhuge.rst), else 0. Read once: the first caller
 * stores it, a racing one stores the same value. */
size_t thp_madvise_size(void)
{
	static size_t cached = 1; /* 1: not read yet */
	size_t hp = __atomic_load_n(&cached, __ATOMIC_RELAXED);
	long pg = sysconf(_SC_PAGESIZE);
	char buf[128];

	if (hp != 1)
		return hp;
	hp = 0;
	if (thp_sysfs("enabled", buf, sizeof(buf)) > 0 && strchr(buf, '[') &&
	    !strstr(buf, "[never]") && pg > 0 && pmd_map_size() > (size_t)pg)
		hp = pmd_map_size();
	__atomic_store_n(&cached, hp, __ATOMIC_RELAXED);
	return hp;
}

void *big_zalloc(size_t bytes, bool *mapped)
{
#ifndef BIG_CALLOC_ONLY
	size_t hp = thp_madvise_size(), len, pg = (size_t)sysconf(_SC_PAGESIZE);
	uintptr_t p, a, end;
	void *m;

	/* Mapped with one huge page of slack, then cut to start on a huge
	 * page boundary and end on a page boundary: only the range the
	 * array covers stays reserved. The whole huge pages of it are
	 * marked; a tail shorter than one stays on small pages, so no
	 * huge page is counted in RSS for bytes the array never uses. */
	if (hp && bytes >= hp && bytes <= SIZE_MAX - 2 * hp) {
		len = bytes + hp;
		m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m != MAP_FAILED) {
			p = (uintptr_t)m;
			a = (p + hp - 1) & ~(uintptr_t)(hp - 1);
			end = (a + bytes + pg - 1) & ~(uintptr_t)(pg - 1);
			if (a > p)
				munmap(m, a - p);
			if (p + len > end)
				munmap((void *)end, p + len - end);
			/* Advice only: refused, the memory is ordinary. */
			madvise((void *)a, bytes & ~(hp - 1), MADV_HUGEPAGE);
			*mapped = true;
			return (void *)a;
		}
	}
#endif
	*mapped = false;
	return calloc(1, bytes);
}

void big_free(void *p, size_t bytes, bool mapped)
{
	if (!p)
		return;
	if (!mapped) {
		free(p);
		return;
	}
	munmap(p, bytes);
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

#ifndef BIG_CALLOC_ONLY
struct big_warm_job {
	u8 *p;
	size_t bytes;
};

static void *big_warm_main(void *arg)
{
	struct big_warm_job *j = arg;
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), off;

	/* One call faults the range in writable, each huge page zeroed
	 * once. A kernel without it (EINVAL) gets a write to each page:
	 * zeros, which the page already holds, and nobody else touches
	 * the range until big_warm_wait(). */
	if (madvise(j->p, j->bytes, MADV_POPULATE_WRITE) && errno == EINVAL)
		for (off = 0; off < j->bytes; off += pg)
			((volatile u8 *)j->p)[off] = 0;
	free(j);
	return NULL;
}
#endif

void big_warm_start(struct big_warm *w, void *p, size_t bytes)
{
#ifndef BIG_CALLOC_ONLY
	struct big_warm_job *j;

	if (w->on || !p || !bytes)
		return;
	/* On one CPU the thread would only take turns with the caller. */
	if (online_cpus() < 2 || !(j = malloc(sizeof(*j))))
		return;
	*j = (struct big_warm_job){ p, bytes };
	if (pthread_create(&w->th, NULL, big_warm_main, j)) {
		free(j);
		return;
	}
	w->on = true;
#else
	(void)w;
	(void)p;
	(void)bytes;
#endif
}

void big_warm_wait(struct big_warm *w)
{
	if (!w->on)
		return;
	pthread_join(w->th, NULL);
	w->on = false;
}

struct arena_blk {
	struct arena_blk *next;
	size_t size;
	max_align_t data[];
};

#define ARENA_BLK (64 * 1024)

void arena_init(struct arena *a)
{
	a->head = NULL;
	a->used = 0;
	a->total = 0;
}

void arena_free(struct arena *a)
{
	struct arena_blk *b = a->head, *n;

	for (; b; b = n) {
		n = b->next;
		free(b);
	}
	arena_init(a);
}

void *arena_alloc(struct arena *a, size_t size)
{
	struct arena_blk *b;
	size_t bsize;

	if (size > SIZE_MAX - sizeof(struct arena_blk) - 8)
		return NULL;
	size = (size + 7) & ~(size_t)7;
	if (!a->head || a->head->size - a->used < size) {
		bsize = size > ARENA_BLK / 4 ? size : ARENA_BLK;
		b = malloc(sizeof(*b) + bsize);
		if (!b)
			return NULL;
		b->size = bsize;
		if (a->head && size > ARENA_BLK / 4) {
			/* Big piece: chain it behind the head so the head
			 * block keeps serving small requests. */
			b->next = a->head->next;
			a->head->next = b;
			a->total += bsize;
			return b->data;
		}
		b->next = a->head;
		a->head = b;
		a->used = 0;
		a->total += bsize;
	}
	a->used += size;
	return (char *)a->head->data + a->used - size;
}

char *arena_strndup(struct arena *a, const char *s, size_t n)
{
	char *p;

	if (n == SIZE_MAX)
		return NULL;
	p = arena_alloc(a, n + 1);
	if (!p)
		return NULL;
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

char *arena_strdup(struct arena *a, const char *s)
{
	return arena_strndup(a, s, strlen(s));
}

char *arena_printf(struct arena *a, const char *fmt, ...)
{
	va_list ap;
	char *p;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return NULL;
	p = arena_alloc(a, (size_t)n + 1);
	if (!p)
		return NULL;
	va_start(ap, fmt);
	vsnprintf(p, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return p;
}

u64 hash_bytes(const void *p, size_t n, u64 seed)
{
	const u8 *b = p;
	u64 h = 0xcbf29ce484222325ULL ^ seed;
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		h ^= get_u64(b + i);
		h *= 0x100000001b3ULL;
		h ^= h >> 29;
	}
	for (; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ULL;
	}
	return hash_mix(h ^ n);
}

static bool has_init_py(const char *dir, size_t len)
{
	char buf[4096];
	struct stat st;

	if (len + sizeof("/__init__.py") > sizeof(buf))
		return false;
	memcpy(buf, dir, len);
	memcpy(buf + len, "/__init__.py", sizeof("/__init__.py"));
	return stat(buf, &st) == 0;
}

/*
 * The hashes of whole stacks (hash_wide) and callchains (hash_bytes128)
 * run over hundreds of bytes per sample: on the deep-stack bench file the
 * two took 13% of the converting thread's samples. One chain of
 * multiply-and-mix steps per word waits on each multiply (3-4 cycles),
 * so the words are taken four at a time into four lanes with seeds of
 * their own, whose steps overlap, and the lanes are mixed into one at the
 * end. The values are for tables only: nothing printed depends on them.
 */
#define LANE_M1 0x87c37b91114253d5ULL
#define LANE_M2 0x4cf5ad432745937fULL

static inline u64 rotl64(u64 x, int r)
{
	return (x << r) | (x >> (64 - r));
}

static inline u64 lane_a(u64 a, u64 w)
{
	return rotl64((a ^ w) * LANE_M1, 31);
}

static inline u64 lane_c(u64 c, u64 w)
{
	c = (c + w) * LANE_M2;
	return c ^ (c >> 29);
}

/* The bytes past the last whole word, as one word (zero-padded; the
 * length is mixed in at the end, so padding never collides). */
static inline u64 tail_word(const u8 *b, size_t n)
{
	u64 w = 0;

	memcpy(&w, b, n);
	return w;
}

u64 hash_wide(const void *p, size_t n, u64 seed)
{
	const u8 *b = p;
	u64 a0 = 0x9e3779b97f4a7c15ULL ^ seed, a1 = 0xbf58476d1ce4e5b9ULL ^ seed,
	    a2 = 0x94d049bb133111ebULL ^ seed, a3 = 0x2545f4914f6cdd1dULL ^ seed;
	size_t i = 0;

	for (; i + 32 <= n; i += 32) {
		a0 = lane_a(a0, get_u64(b + i));
		a1 = lane_a(a1, get_u64(b + i + 8));
		a2 = lane_a(a2, get_u64(b + i + 16));
		a3 = lane_a(a3, get_u64(b + i + 24));
	}
	for (; i + 8 <= n; i += 8)
		a0 = lane_a(a0, get_u64(b + i));
	if (i < n)
		a1 = lane_a(a1, tail_word(b + i, n - i));
	return hash_mix(hash_mix(hash_mix(hash_mix(a0 ^ n) ^ a1) ^ a2) ^ a3);
}

void hash_bytes128(const void *p, size_t n, u64 seed, u64 *h1, u64 *h2)
{
	const u8 *b = p;
	u64 a0 = 0x9e3779b97f4a7c15ULL ^ seed, a1 = 0xbf58476d1ce4e5b9ULL ^ seed,
	    a2 = 0x94d049bb133111ebULL ^ seed, a3 = 0x2545f4914f6cdd1dULL ^ seed;
	u64 c0 = 0xc2b2ae3d27d4eb4fULL + seed, c1 = 0x165667b19e3779f9ULL + seed,
	    c2 = 0xd6e8feb86659fd93ULL + seed, c3 = 0xff51afd7ed558ccdULL + seed;
	size_t i = 0;
	u64 w;

	/* Two independent hashes, each of four lanes: a multiply-rotate one
	 * and an add-multiply-shift one. */
	for (; i + 32 <= n; i += 32) {
		w = get_u64(b + i);
		a0 = lane_a(a0, w);
		c0 = lane_c(c0, w);
		w = get_u64(b + i + 8);
		a1 = lane_a(a1, w);
		c1 = lane_c(c1, w);
		w = get_u64(b + i + 16);
		a2 = lane_a(a2, w);
		c2 = lane_c(c2, w);
		w = get_u64(b + i + 24);
		a3 = lane_a(a3, w);
		c3 = lane_c(c3, w);
	}
	for (; i + 8 <= n; i += 8) {
		w = get_u64(b + i);
		a0 = lane_a(a0, w);
		c0 = lane_c(c0, w);
	}
	if (i < n) {
		w = tail_word(b + i, n - i);
		a1 = lane_a(a1, w);
		c1 = lane_c(c1, w);
	}
	*h1 = hash_mix(hash_mix(hash_mix(hash_mix(a0 ^ n) ^ a1) ^ a2) ^ a3);
	*h2 = hash_mix(hash_mix(hash_mix(hash_mix(c0 + n) + c1) + c2) + c3);
}

const char *short_filename(const char *path, char *buf, size_t size)
{
	const char *end = path + strlen(path);
	const char *slash = end;
	size_t n;

	/*
	 * Walk up from the file's directory while the directory holds an
	 * __init__.py; the result is the path below the first directory
	 * that does not (py-spy src/python_spy.rs shorten_filename).
	 */
	for (;;) {
		const char *s = slash;

		while (s > path && s[-1] != '/')
			s--;
		if (s == path) /* no more parents */
			break;
		slash = s - 1; /* the '/' ending the parent directory */
		if (slash == path || !has_init_py(path, (size_t)(slash - path)))
			break;
	}
	if (slash == end || *slash != '/')
		return path;
	n = (size_t)(end - slash - 1);
	if (n + 1 > size)
		return path;
	memcpy(buf, slash + 1, n + 1);
	return buf;
}

int read_file_whole(const char *path, char **out, size_t *len)
{
	size_t cap = 1 << 16, n = 0;
	struct stat st;
	char *buf;
	ssize_t k;
	int fd, err = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (!fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_size > 0 &&
	    (u64)st.st_size < SIZE_MAX)
		cap = (size_t)st.st_size + 1;
	buf = malloc(cap);
	while (buf) {
		if (n == cap && ensure_mem((void **)&buf, &cap, 1, n + 1)) {
			err = -ENOMEM;
			break;
		}
		k = read(fd, buf + n, cap - n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			err = k < 0 ? -errno : 0;
			break;
		}
		n += (size_t)k;
	}
	close(fd);
	if (!buf || err) {
		free(buf);
		return buf ? err : -ENOMEM;
	}
	*out = buf;
	*len = n;
	return 0;
}
