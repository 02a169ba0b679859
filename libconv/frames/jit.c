// SPDX-License-Identifier: GPL-2.0
/*
 * Readers for CPython's JIT symbol files: /tmp/perf-PID.map (text, one line
 * per trampoline) and /tmp/jit-PID.dump (jitdump, tools/perf/Documentation/
 * jitdump-specification.txt). The .eh_frame CPython puts in
 * JIT_CODE_UNWINDING_INFO is turned into struct jit_cfi_row tables by the
 * call-frame interpreter in jit_cfi.c. Facts on what CPython writes are
 * from docs/cpython-perf.md (§1.3 map lines, §2
 * jitdump layout).
 *
 * Invariants: entries are allocated in the map's arena, so their addresses
 * never change; m->ents[] lists them in the order they were added, which is
 * the "written last wins" order. m->segs[] is rebuilt after every added file:
 * sorted, disjoint, non-empty [start, end) pieces, each naming the newest
 * entry covering it, so a lookup is a single binary search. Every read from
 * an input buffer goes through struct cur or an explicit bound check.
 */
#include "jit_cfi.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "perfspy.h"

struct seg {
	u64 start, end; /* [start, end), disjoint, ascending */
	const struct jit_entry *ent;
};

struct jit_map {
	struct jit_entry **ents; /* in the order added */
	size_t nr, cap;
	struct seg *segs;
	size_t nr_segs;
	struct arena arena; /* entries, names, CFI rows */
};

int jit_map_new(struct jit_map **out)
{
	struct jit_map *m = calloc(1, sizeof(*m));

	*out = m;
	if (!m)
		return -ENOMEM;
	arena_init(&m->arena);
	return 0;
}

void jit_map_free(struct jit_map *m)
{
	if (!m)
		return;
	free(m->ents);
	free(m->segs);
	arena_free(&m->arena);
	free(m);
}

size_t jit_map_size(const struct jit_map *m)
{
	return m ? m->nr : 0;
}

const struct jit_entry *jit_map_entry(const struct jit_map *m, size_t i)
{
	return m && i < m->nr ? m->ents[i] : NULL;
}

static int add_entry(struct jit_map *m, u64 start, u64 size, const char *name,
		     const struct jit_cfi_row *cfi, u32 nr_cfi)
{
	struct jit_entry *e;

	if (ensure_mem((void **)&m->ents, &m->cap, sizeof(*m->ents), m->nr + 1))
		return -ENOMEM;
	e = arena_alloc(&m->arena, sizeof(*e));
	if (!e)
		return -ENOMEM;
	*e = (struct jit_entry){ .start = start, .size = size, .name = name,
				 .cfi = cfi, .nr_cfi = nr_cfi };
	m->ents[m->nr++] = e;
	return 0;
}

/* ---- index: last-written-wins segments ---- */

static u64 ent_end(const struct jit_entry *e)
{
	/* An entry reaching past 2^64 is clipped (one byte is lost). */
	return e->size > UINT64_MAX - e->start ? UINT64_MAX : e->start + e->size;
}

struct skey {
	u64 start;
	size_t idx;
};

static int skey_cmp(const void *a, const void *b)
{
	const struct skey *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return (x->idx > y->idx) - (x->idx < y->idx);
}

/* A max-heap of entry indices: the top is the newest active entry. */
static void heap_push(size_t *h, size_t *n, size_t v)
{
	size_t i = (*n)++;

	for (; i && h[(i - 1) / 2] < v; i = (i - 1) / 2)
		h[i] = h[(i - 1) / 2];
	h[i] = v;
}

static void heap_pop(size_t *h, size_t *n)
{
	size_t v = h[--*n], i = 0, c;

	if (!*n)
		return;
	while ((c = 2 * i + 1) < *n) {
		if (c + 1 < *n && h[c + 1] > h[c])
			c++;
		if (h[c] <= v)
			break;
		h[i] = h[c];
		i = c;
	}
	h[i] = v;
}

/*
 * Sweep the entries by start address, keeping the active ones in a heap
 * ordered by write order; each boundary where the newest active entry
 * changes starts a segment. Stale heap members (already ended) are dropped
 * lazily when they reach the top. Every iteration pushes or pops, so there
 * are at most 2n iterations and segments; O(n log n) overall. On -ENOMEM
 * the previous index stays in place (consistent, just missing new entries).
 */
static int index_build(struct jit_map *m)
{
	struct skey *keys = xreallocarray(NULL, m->nr, sizeof(*keys));
	size_t *heap = xreallocarray(NULL, m->nr, sizeof(*heap));
	struct seg *segs = xreallocarray(NULL, m->nr, 2 * sizeof(*segs));
	size_t n = 0, i, h = 0, ns = 0;
	u64 pos = 0, stop, next;

	if (!keys || !heap || !segs) {
		free(keys);
		free(heap);
		free(segs);
		return -ENOMEM;
	}
	for (i = 0; i < m->nr; i++)
		if (m->ents[i]->size)
			keys[n++] = (struct skey){ m->ents[i]->start, i };
	xqsort(keys, n, sizeof(*keys), skey_cmp);
	for (i = 0; i < n || h;) {
		if (!h)
			pos = keys[i].start;
		while (i < n && keys[i].start <= pos)
			heap_push(heap, &h, keys[i++].idx);
		while (h && ent_end(m->ents[heap[0]]) <= pos)
			heap_pop(heap, &h);
		if (!h)
			continue;
		next = i < n ? keys[i].start : UINT64_MAX;
		stop = ent_end(m->ents[heap[0]]);
		stop = stop < next ? stop : next;
		if (ns && segs[ns - 1].ent == m->ents[heap[0]] && segs[ns - 1].end == pos)
			segs[ns - 1].end = stop;
		else
			segs[ns++] = (struct seg){ pos, stop, m->ents[heap[0]] };
		pos = stop;
	}
	free(keys);
	free(heap);
	free(m->segs);
	m->segs = segs;
	m->nr_segs = ns;
	return 0;
}

const struct jit_entry *jit_map_find(const struct jit_map *m, u64 addr)
{
	size_t lo = 0, hi, mid;

	if (!m)
		return NULL;
	hi = m->nr_segs;
	while (lo < hi) { /* lo = the number of segments starting <= addr */
		mid = lo + (hi - lo) / 2;
		if (m->segs[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || addr >= m->segs[lo - 1].end)
		return NULL;
	return m->segs[lo - 1].ent;
}

/* ---- perf map text ---- */

static int hexval(u8 c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/*
 * A hex field ending at a space (perf's jit-interface.txt: "hex numbers
 * without 0x"; a 0x prefix is tolerated). Returns the bytes used, space
 * included, or 0 if malformed (no digits, more than 64 bits, no space).
 */
static size_t hex_field(const char *s, size_t n, u64 *out)
{
	size_t i = 0, digits = 0;
	u64 v = 0;
	int d;

	if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		i = 2;
	for (; i < n && (d = hexval((u8)s[i])) >= 0; i++, digits++) {
		if (v >> 60)
			return 0;
		v = v << 4 | (u64)d;
	}
	if (!digits || i >= n || s[i] != ' ')
		return 0;
	*out = v;
	return i + 1;
}

/* One line without its '\n': 1 if malformed, else 0 or -ENOMEM. */
static int perf_map_line(struct jit_map *m, const char *s, size_t n)
{
	size_t a, b;
	u64 start, size;
	const char *name;

	if (n && s[n - 1] == '\r')
		n--;
	a = hex_field(s, n, &start);
	if (!a)
		return 1;
	b = hex_field(s + a, n - a, &size);
	/* The name is everything after the second space (CPython writes
	 * "%lx %x %s\n" with names holding spaces, docs/cpython-perf.md §1.3). */
	if (!b || a + b >= n)
		return 1;
	name = arena_strndup(&m->arena, s + a + b, n - a - b);
	if (!name)
		return -ENOMEM;
	return add_entry(m, start, size, name, NULL, 0);
}

int jit_map_add_perf_map(struct jit_map *m, const char *buf, size_t len,
			 const struct log_sink *log)
{
	const char *p = buf, *end = len ? buf + len : buf, *nl;
	size_t bad = 0, first_bad = 0, line = 0;
	int err = 0;

	while (p < end) {
		nl = memchr(p, '\n', (size_t)(end - p));
		line++;
		err = perf_map_line(m, p, (size_t)((nl ? nl : end) - p));
		if (err < 0)
			break;
		if (err > 0 && !bad++)
			first_bad = line;
		err = 0;
		p = nl ? nl + 1 : end;
	}
	if (bad)
		pr_debug(log, "perf map: skipped %zu malformed line(s) of %zu, first at line %zu",
			 bad, line, first_bad);
	/* Index even after -ENOMEM: the lines read so far stay usable. */
	if (index_build(m))
		err = -ENOMEM;
	return err;
}

/* ---- jitdump ---- */

#define JITDUMP_MAGIC 0x4A695444u	/* "JiTD" in native order */
#define JITDUMP_MAGIC_SWAP 0x4454694Au
#define JITDUMP_HDR_SIZE 40
#define JITDUMP_REC_SIZE 16 /* id, total_size, timestamp */

enum {
	JIT_CODE_LOAD = 0,
	JIT_CODE_MOVE = 1,
	JIT_CODE_DEBUG_INFO = 2,
	JIT_CODE_CLOSE = 3,
	JIT_CODE_UNWINDING_INFO = 4,
};

struct jd {
	struct jit_map *m;
	const struct log_sink *log;
	const u8 *eh; /* pending UNWINDING_INFO .eh_frame, or NULL */
	size_t eh_len;
	/* The last decoded CFI: CPython repeats identical bytes per trampoline. */
	const u8 *last_eh;
	size_t last_len;
	u64 last_size;
	const struct jit_cfi_row *last_rows;
	u32 last_nr;
	struct cfa_vm vm;
	size_t loads, unknown, bad, no_cfi;
	size_t first_odd; /* offset of the first skipped record */
};

/* The CFI for a load of @code_size bytes from the pending unwinding info. */
static int jd_cfi(struct jd *jd, u64 code_size, const struct jit_cfi_row **rows,
		  u32 *nr)
{
	const char *why;
	struct jit_cfi_row *copy;
	int err;

	*rows = NULL;
	*nr = 0;
	if (!jd->eh)
		return 0;
	if (jd->last_eh && jd->last_len == jd->eh_len && jd->last_size == code_size &&
	    !memcmp(jd->last_eh, jd->eh, jd->eh_len)) {
		*rows = jd->last_rows;
		*nr = jd->last_nr;
		return 0;
	}
	err = jit_cfi_decode(&jd->vm, jd->eh, jd->eh_len, code_size, &why);
	if (err < 0)
		return err;
	if (err) {
		if (!jd->no_cfi++)
			pr_debug(jd->log, "jitdump: unwinding info not used: %s", why);
	} else {
		copy = arena_alloc(&jd->m->arena, jd->vm.nr * sizeof(*copy));
		if (!copy)
			return -ENOMEM;
		memcpy(copy, jd->vm.rows, jd->vm.nr * sizeof(*copy));
		*rows = copy;
		*nr = (u32)jd->vm.nr; /* <= end <= UINT32_MAX rows */
	}
	jd->last_eh = jd->eh;
	jd->last_len = jd->eh_len;
	jd->last_size = code_size;
	jd->last_rows = *rows;
	jd->last_nr = *nr;
	return 0;
}

/* JIT_CODE_LOAD: pid, tid, vma, code_addr, code_size, code_index, name. */
static int jd_load(struct jd *jd, struct cur *c)
{
	const struct jit_cfi_row *rows;
	const u8 *nul;
	const char *name;
	u64 addr, size;
	u32 nr;
	int err;

	cur_skip(c, 16); /* pid, tid, vma: perf maps code_addr, not vma */
	addr = cur_u64(c);
	size = cur_u64(c);
	cur_u64(c); /* code_index: only JIT_CODE_MOVE refers to it */
	nul = c->bad ? NULL : memchr(c->p, 0, cur_left(c));
	if (!nul) {
		jd->eh = NULL; /* the pending info belonged to this record */
		return 1;
	}
	/* The code bytes that follow are not needed (and newest CPython
	 * alters them, docs/cpython-perf.md §2). */
	name = arena_strndup(&jd->m->arena, (const char *)c->p, (size_t)(nul - c->p));
	if (!name)
		return -ENOMEM;
	if ((err = jd_cfi(jd, size, &rows, &nr)) ||
	    (err = add_entry(jd->m, addr, size, name, rows, nr)))
		return err;
	jd->eh = NULL; /* consumed, as perf's jit_repipe_code_load does */
	jd->loads++;
	return 0;
}

/* JIT_CODE_UNWINDING_INFO: unwind_data_size, eh_frame_hdr_size,
 * mapped_size, then .eh_frame followed by .eh_frame_hdr (the spec text says
 * the reverse; perf's genelf.c and CPython put .eh_frame first). */
static int jd_unwind(struct jd *jd, struct cur *c)
{
	u64 data = cur_u64(c), hdr = cur_u64(c);

	jd->eh = NULL;
	cur_u64(c);
	if (c->bad || data > cur_left(c) || hdr > data)
		return 1;
	jd->eh = c->p;
	jd->eh_len = (size_t)(data - hdr);
	return 0;
}

static int jd_record(struct jd *jd, u32 id, struct cur *c)
{
	switch (id) {
	case JIT_CODE_LOAD: return jd_load(jd, c);
	case JIT_CODE_UNWINDING_INFO: return jd_unwind(jd, c);
	/* CPython writes no DEBUG_INFO, MOVE or CLOSE (docs/cpython-perf.md §2). MOVE
	 * would re-place a loaded function by code_index; without a writer
	 * that uses it, it is skipped like the others. */
	case JIT_CODE_MOVE:
	case JIT_CODE_DEBUG_INFO:
	case JIT_CODE_CLOSE: return 0;
	default: jd->unknown++; return 1;
	}
}

/* 0 if the records start at *@first, 1 if the header is cut, or an error. */
static int jd_header(const u8 *buf, size_t len, const struct log_sink *log,
		     size_t *first)
{
	u32 want = JITDUMP_MAGIC, magic = want;
	u32 version = len >= 8 ? get_u32(buf + 4) : 1;
	u32 size = len >= 12 ? get_u32(buf + 8) : JITDUMP_HDR_SIZE;

	/* Judge each field the cut left whole; a cut magic by its prefix. */
	if (len >= 4)
		magic = get_u32(buf);
	else if (len && memcmp(buf, &want, len))
		magic = 0;

	if (magic == JITDUMP_MAGIC_SWAP) {
		pr_warn(log, "jitdump: written in the other byte order (magic 0x%08x); not supported",
			magic);
		return -PERFSPY_E_ENDIAN;
	}
	if (magic != JITDUMP_MAGIC) {
		pr_warn(log, "jitdump: bad magic 0x%08x (want 0x%08x \"JiTD\")", magic,
			JITDUMP_MAGIC);
		return -PERFSPY_E_FORMAT;
	}
	if (version != 1) {
		pr_warn(log, "jitdump: version %u not supported (want 1)", version);
		return -PERFSPY_E_UNSUPPORTED;
	}
	if (size < JITDUMP_HDR_SIZE) {
		pr_warn(log, "jitdump: header size %u < %u", size, JITDUMP_HDR_SIZE);
		return -PERFSPY_E_FORMAT;
	}
	if (len < JITDUMP_HDR_SIZE || size > len) {
		pr_debug(log, "jitdump: truncated inside the header (%zu bytes)", len);
		return 1;
	}
	*first = size; /* perf's jitdump.c also skips a longer header */
	return 0;
}

static int jd_records(struct jd *jd, const u8 *buf, size_t len, size_t off)
{
	struct cur c;
	u32 id, size;
	int err;

	while (len - off >= JITDUMP_REC_SIZE) {
		id = get_u32(buf + off);
		size = get_u32(buf + off + 4);
		if (size < JITDUMP_REC_SIZE) {
			pr_warn(jd->log, "jitdump: record size %u at offset %zu; ignoring the rest",
				size, off);
			return 0;
		}
		if (size > len - off)
			break;
		cur_init(&c, buf + off + JITDUMP_REC_SIZE, size - JITDUMP_REC_SIZE);
		err = jd_record(jd, id, &c);
		if (err < 0)
			return err;
		if (err > 0 && !jd->bad++)
			jd->first_odd = off;
		off += size;
	}
	if (off < len)
		pr_debug(jd->log, "jitdump: truncated at offset %zu of %zu; kept the %zu code loads before it",
			 off, len, jd->loads);
	return 0;
}

int jit_map_add_jitdump(struct jit_map *m, const void *buf, size_t len,
			const struct log_sink *log)
{
	struct jd jd = { .m = m, .log = log };
	size_t first;
	int err, err2;

	err = jd_header(buf, len, log, &first);
	if (err)
		return err < 0 ? err : 0;
	err = jd_records(&jd, buf, len, first);
	if (jd.bad)
		pr_debug(log, "jitdump: skipped %zu malformed or unknown record(s) (%zu unknown types), first at offset %zu",
			 jd.bad, jd.unknown, jd.first_odd);
	free(jd.vm.rows);
	err2 = index_build(m);
	return err ? err : err2;
}

/* ---- files ---- */

struct jit_file {
	char path[PATH_MAX];
	int fd; /* -1 if not open */
	struct stat st;
	bool dump;
};

static int jf_open(struct jit_file *f, const char *dir, const char *fmt, s32 pid)
{
	char name[64];
	int err = 0;

	f->fd = -1;
	snprintf(name, sizeof(name), fmt, (int)pid);
	if ((size_t)snprintf(f->path, sizeof(f->path), "%s/%s", dir, name) >= sizeof(f->path))
		return -ENAMETOOLONG;
	f->fd = open(f->path, O_RDONLY | O_CLOEXEC);
	if (f->fd < 0)
		return -errno;
	if (fstat(f->fd, &f->st) < 0)
		err = -errno;
	else if (!S_ISREG(f->st.st_mode))
		err = -EINVAL; /* a FIFO or device: not a file CPython wrote */
	if (err) {
		close(f->fd);
		f->fd = -1;
	}
	return err;
}

/*
 * Read, parse and close one opened file. read() rather than mmap: a file
 * that shrinks under us (a reused PID's dump is opened O_TRUNC, docs/cpython-perf.md
 * §2) then gives a short read instead of SIGBUS.
 */
static int jf_add(struct jit_map *m, struct jit_file *f, const struct log_sink *log)
{
	size_t len = 0, want = (size_t)f->st.st_size;
	char *buf = malloc(want ? want : 1);
	int err = buf ? 0 : -ENOMEM;
	ssize_t n;

	while (buf && len < want) {
		n = read(f->fd, buf + len, want - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			err = -errno;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	if (!err)
		err = f->dump ? jit_map_add_jitdump(m, buf, len, log)
			      : jit_map_add_perf_map(m, buf, len, log);
	free(buf);
	close(f->fd);
	f->fd = -1;
	return err;
}

static bool newer(const struct stat *a, const struct stat *b)
{
	if (a->st_mtim.tv_sec != b->st_mtim.tv_sec)
		return a->st_mtim.tv_sec > b->st_mtim.tv_sec;
	return a->st_mtim.tv_nsec > b->st_mtim.tv_nsec;
}

int jit_map_load(const char *dir, s32 pid, const struct log_sink *log,
		 struct jit_map **out)
{
	struct jit_file f[2] = { { .dump = false }, { .dump = true } };
	int err[2], ret, first = 0, loaded = 0, i, k;
	struct jit_map *m = NULL;
	char msg[128];

	*out = NULL;
	dir = dir ? dir : "/tmp";
	err[0] = jf_open(&f[0], dir, "perf-%d.map", pid);
	err[1] = jf_open(&f[1], dir, "jit-%d.dump", pid);
	/* `-v`: where each process's maps were looked for (issue 15). */
	pr_info(log, "pid %d: perf map %s: %s; jitdump %s: %s", pid, f[0].path,
		err[0] ? strerror(-err[0]) : "found", f[1].path,
		err[1] ? strerror(-err[1]) : "found");
	if ((ret = jit_map_new(&m)))
		goto out;
	/* Older file first, so the newer one wins where they overlap. */
	if (!err[0] && !err[1] && newer(&f[0].st, &f[1].st))
		first = 1;
	ret = -ENOENT;
	for (k = 0; k < 2; k++) {
		i = k ^ first;
		if (!err[i])
			err[i] = jf_add(m, &f[i], log);
		if (err[i] == -ENOMEM) {
			ret = -ENOMEM;
			goto out;
		}
		if (!err[i])
			loaded++;
		else if (err[i] != -ENOENT && ret == -ENOENT)
			ret = err[i];
	}
	if (!loaded)
		goto out;
	for (i = 0; i < 2; i++) {
		if (err[i] && err[i] != -ENOENT) {
			perfspy_strerror(err[i], msg, sizeof(msg));
			pr_warn(log, "%s: not used: %s", f[i].path, msg);
		}
	}
	*out = m;
	return 0;
out:
	for (i = 0; i < 2; i++)
		if (f[i].fd >= 0)
			close(f[i].fd);
	jit_map_free(m);
	return ret;
}

int jit_map_follow_perf_map(struct jit_map **m, const char *dir, s32 pid,
			    u64 *off, const struct log_sink *log)
{
	struct jit_file f = { .dump = false };
	size_t want, len = 0;
	char *buf, *nl;
	ssize_t n;
	int err;

	if (jf_open(&f, dir ? dir : "/tmp", "perf-%d.map", pid))
		return 0;
	if ((u64)f.st.st_size <= *off || (u64)f.st.st_size - *off > SIZE_MAX - 1) {
		close(f.fd);
		return 0;
	}
	want = (size_t)((u64)f.st.st_size - *off);
	buf = malloc(want);
	err = buf ? 0 : -ENOMEM;
	while (buf && len < want) {
		n = pread(f.fd, buf + len, want - len, (off_t)(*off + len));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(f.fd);
	/* Whole lines only: CPython appends one line per trampoline
	 * (docs/cpython-perf.md §1.3), and a reader can catch one half written. */
	nl = buf && len ? memrchr(buf, '\n', len) : NULL;
	if (!err && nl && !*m)
		err = jit_map_new(m);
	if (!err && nl) {
		err = jit_map_add_perf_map(*m, buf, (size_t)(nl - buf) + 1, log);
		*off += (u64)(nl - buf) + 1;
		if (!err)
			err = 1;
	}
	free(buf);
	return err;
}
