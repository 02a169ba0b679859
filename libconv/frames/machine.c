// SPDX-License-Identifier: GPL-2.0
/*
 * Processes, threads and executable maps (see machine.h).
 *
 * Record semantics follow reference/perf-data-format.md §2.4: COMM with
 * PERF_RECORD_MISC_COMM_EXEC renames the thread (the new image's maps
 * replace the old ones as they arrive); FORK with pid != ppid starts a process with a copy of the
 * parent's maps; a thread inherits its parent thread's name.
 */
#include "machine.h"

#include "python.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>

int mach_init(struct machine *m, struct sym_ctx *sym, const struct log_sink *log)
{
	memset(m, 0, sizeof(*m));
	m->sym = sym;
	m->log = log;
	arena_init(&m->strs);
	return 0;
}

void mach_free(struct machine *m)
{
	size_t i;

	for (i = 0; i < m->procs_cap; i++) {
		if (m->procs[i]) {
			free(m->procs[i]->maps);
			jit_map_free(m->procs[i]->jit);
		}
	}
	free(m->procs);
	free(m->threads);
	free(m->bids);
	arena_free(&m->strs);
	memset(m, 0, sizeof(*m));
}

/* ------------------------------------------------ pointer hash tables */

/* Open addressing keyed by an s32 read through @key_of; grows at 1/2. */
#define DEFINE_TABLE(NAME, TYPE, KEY)                                         \
	static TYPE **NAME##_slot(TYPE **tab, size_t cap, s32 key)            \
	{                                                                     \
		size_t i = hash_mix((u64)(u32)key) & (cap - 1);               \
		while (tab[i] && tab[i]->KEY != key)                          \
			i = (i + 1) & (cap - 1);                              \
		return &tab[i];                                               \
	}                                                                     \
	static int NAME##_grow(TYPE ***tabp, size_t *capp, size_t nr)         \
	{                                                                     \
		size_t ncap = *capp ? *capp * 2 : 64, i;                      \
		TYPE **n;                                                     \
		if ((nr + 1) * 2 <= *capp)                                    \
			return 0;                                             \
		n = calloc(ncap, sizeof(*n));                                 \
		if (!n)                                                       \
			return -ENOMEM;                                       \
		for (i = 0; i < *capp; i++)                                   \
			if ((*tabp)[i])                                       \
				*NAME##_slot(n, ncap, (*tabp)[i]->KEY) =      \
					(*tabp)[i];                           \
		free(*tabp);                                                  \
		*tabp = n;                                                    \
		*capp = ncap;                                                 \
		return 0;                                                     \
	}

DEFINE_TABLE(proc, struct mach_proc, pid)
DEFINE_TABLE(thr, struct mach_thread, tid)

static struct mach_proc *find_proc(struct machine *m, s32 pid)
{
	if (!m->procs_cap)
		return NULL;
	return *proc_slot(m->procs, m->procs_cap, pid);
}

static struct mach_proc *get_proc(struct machine *m, s32 pid)
{
	struct mach_proc *p = find_proc(m, pid), **slot;

	if (p)
		return p;
	if (proc_grow(&m->procs, &m->procs_cap, m->nr_procs))
		return NULL;
	p = arena_alloc(&m->strs, sizeof(*p));
	if (!p)
		return NULL;
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	slot = proc_slot(m->procs, m->procs_cap, pid);
	*slot = p;
	m->nr_procs++;
	return p;
}

static struct mach_thread *find_thread(struct machine *m, s32 tid)
{
	if (!m->threads_cap)
		return NULL;
	return *thr_slot(m->threads, m->threads_cap, tid);
}

struct mach_thread *mach_thread(struct machine *m, s32 pid, s32 tid)
{
	struct mach_thread *t = find_thread(m, tid);

	if (t) {
		if (t->pid != pid && pid != -1) {
			/* A recycled tid in another process. */
			t->pid = pid;
			t->comm = NULL;
		}
		return t;
	}
	if (thr_grow(&m->threads, &m->threads_cap, m->nr_threads))
		return NULL;
	t = arena_alloc(&m->strs, sizeof(*t));
	if (!t)
		return NULL;
	memset(t, 0, sizeof(*t));
	t->pid = pid;
	t->tid = tid;
	*thr_slot(m->threads, m->threads_cap, tid) = t;
	m->nr_threads++;
	return t;
}

/* --------------------------------------------------------- build ids */

static struct mach_bid *bid_slot(struct mach_bid *tab, size_t cap,
				 const char *name)
{
	size_t i = hash_bytes(name, strlen(name), 0) & (cap - 1);

	while (tab[i].filename && strcmp(tab[i].filename, name))
		i = (i + 1) & (cap - 1);
	return &tab[i];
}

int mach_add_build_id(struct machine *m, const char *filename, const u8 *id,
		      u8 size)
{
	struct mach_bid *b;

	if (!size || size > 20)
		return 0;
	if ((m->nr_bids + 1) * 2 > m->bids_cap) {
		size_t ncap = m->bids_cap ? m->bids_cap * 2 : 64, i;
		struct mach_bid *n = calloc(ncap, sizeof(*n));

		if (!n)
			return -ENOMEM;
		for (i = 0; i < m->bids_cap; i++)
			if (m->bids[i].filename)
				*bid_slot(n, ncap, m->bids[i].filename) = m->bids[i];
		free(m->bids);
		m->bids = n;
		m->bids_cap = ncap;
	}
	b = bid_slot(m->bids, m->bids_cap, filename);
	if (!b->filename) {
		b->filename = arena_strdup(&m->strs, filename);
		if (!b->filename)
			return -ENOMEM;
		m->nr_bids++;
	}
	b->size = size;
	memcpy(b->id, id, size);
	return 0;
}

static const struct mach_bid *find_bid(struct machine *m, const char *name)
{
	const struct mach_bid *b;

	if (!m->bids_cap)
		return NULL;
	b = bid_slot(m->bids, m->bids_cap, name);
	return b->filename ? b : NULL;
}

/* -------------------------------------------------------------- maps */

static enum map_kind classify(const char *name)
{
	if (!strcmp(name, "//anon") || !strncmp(name, "/dev/zero", 9) ||
	    !strncmp(name, "/anon_hugepage", 14) ||
	    !strncmp(name, "/tmp/perf-", 10))
		return MAPK_ANON;
	if (!strcmp(name, "[vdso]") || !strcmp(name, "[vsyscall]"))
		return MAPK_VDSO;
	if (name[0] != '/')
		return MAPK_OTHER;
	return MAPK_FILE;
}

/* Insert [start, end) into the sorted map vector, cutting what overlaps
 * (mmap(2) replaces older mappings in the same range). */
static int insert_map(struct mach_proc *p, const struct mach_map *nm)
{
	size_t i, j, n = 0;
	struct mach_map *out;
	size_t cap = p->nr_maps + 2;

	out = calloc(cap, sizeof(*out));
	if (!out)
		return -ENOMEM;
	for (i = 0; i < p->nr_maps && p->maps[i].end <= nm->start; i++)
		out[n++] = p->maps[i];
	for (j = i; j < p->nr_maps && p->maps[j].start < nm->end; j++) {
		struct mach_map m = p->maps[j];

		if (m.start < nm->start) {
			struct mach_map left = m;

			left.end = nm->start;
			out[n++] = left;
		}
		if (m.end > nm->end) {
			/* Right part: kept after the new map below. */
			m.pgoff += nm->end - m.start;
			m.start = nm->end;
			p->maps[j] = m;
			break;
		}
	}
	out[n++] = *nm;
	for (; j < p->nr_maps; j++)
		if (p->maps[j].start >= nm->end)
			out[n++] = p->maps[j];
	free(p->maps);
	p->maps = out;
	p->nr_maps = n;
	p->gen++;
	p->cap_maps = cap;
	return 0;
}

static const char *map_short_name(struct machine *m, const char *name)
{
	const char *slash = strrchr(name, '/');

	/* Native frames name their binary by basename (py-spy's rule
	 * applied to a library path gives the basename, since library
	 * directories hold no __init__.py: pyspy-formats.md §1.4). Python
	 * package extensions get their package path at render time. */
	if (!slash || !slash[1])
		return name;
	(void)m;
	return slash + 1;
}

static int kernel_mmap(struct machine *m, const struct rec_mmap *mm)
{
	/* perf synthesizes the kernel map as `[kernel.kallsyms]_text` with
	 * pgoff = address of _text (reference §1.3). Modules need nothing:
	 * kallsyms covers them. */
	if (!strncmp(mm->filename, "[kernel.kallsyms]", 17) && mm->pgoff)
		m->kernel_text = mm->pgoff;
	return 0;
}

int mach_mmap(struct machine *m, const struct rec_mmap *mm, u16 cpumode)
{
	struct mach_map nm = { 0 };
	const struct mach_bid *b;
	struct mach_proc *p;
	int err;

	if (cpumode == PERF_RECORD_MISC_KERNEL || (s32)mm->pid == -1)
		return kernel_mmap(m, mm);
	if (!(mm->prot & PROT_EXEC) || !mm->len || mm->start + mm->len < mm->start)
		return 0;
	p = get_proc(m, (s32)mm->pid);
	if (!p)
		return -ENOMEM;
	nm.start = mm->start;
	nm.end = mm->start + mm->len;
	nm.pgoff = mm->pgoff;
	nm.kind = classify(mm->filename);
	nm.name = arena_strdup(&m->strs, mm->filename);
	if (!nm.name)
		return -ENOMEM;
	nm.short_name = map_short_name(m, nm.name);
	if (nm.kind == MAPK_FILE || nm.kind == MAPK_VDSO) {
		const u8 *id = mm->build_id;
		u8 size = mm->build_id_size;

		if (!id && (b = find_bid(m, mm->filename))) {
			id = b->id;
			size = b->size;
		}
		err = sym_dso_get(m->sym, nm.name, id, size, &nm.dso);
		if (err)
			return err;
		/* py-spy names interpreter frames from the symbol table
		 * only (pyspy-formats.md §1.8 item 3); libpython's 30 MB of
		 * DWARF would also cost more than everything else. */
		if (py_is_interpreter_dso(nm.name))
			sym_dso_set_no_dwarf(nm.dso, true);
	}
	return insert_map(p, &nm);
}

int mach_comm(struct machine *m, const struct rec_comm *c)
{
	struct mach_thread *t = mach_thread(m, (s32)c->pid, (s32)c->tid);

	if (!t)
		return -ENOMEM;
	t->comm = arena_strdup(&m->strs, c->comm);
	if (!t->comm)
		return -ENOMEM;
	t->seen = true;
	/* An exec keeps the old maps until the new image's mmaps cut them:
	 * samples taken inside execve() still return into the old image
	 * (perf's __thread__set_comm flushes only its unwind cache too). */
	return 0;
}

int mach_fork(struct machine *m, const struct rec_fork *f)
{
	struct mach_thread *parent = find_thread(m, (s32)f->ptid);
	struct mach_thread *t = mach_thread(m, (s32)f->pid, (s32)f->tid);
	struct mach_proc *pp, *np;

	if (!t)
		return -ENOMEM;
	t->seen = true;
	if (parent && parent != t)
		t->comm = parent->comm;
	if (f->pid == f->ppid)
		return 0; /* a new thread shares its process's maps */
	pp = find_proc(m, (s32)f->ppid);
	np = get_proc(m, (s32)f->pid);
	if (!np)
		return -ENOMEM;
	np->nr_maps = 0;
	np->gen++;
	np->ppid = (s32)f->ppid;
	/* A recycled pid must not keep the symbols of its predecessor. */
	jit_map_free(np->jit);
	np->jit = NULL;
	np->jit_tried = false;
	if (pp && pp->nr_maps) {
		struct mach_map *maps = calloc(pp->nr_maps, sizeof(*maps));

		if (!maps)
			return -ENOMEM;
		memcpy(maps, pp->maps, pp->nr_maps * sizeof(*maps));
		free(np->maps);
		np->maps = maps;
		np->nr_maps = np->cap_maps = pp->nr_maps;
	}
	return 0;
}

u32 mach_maps_gen(struct machine *m, s32 pid)
{
	struct mach_proc *p = find_proc(m, pid);

	return p ? p->gen : 0;
}

const struct mach_map *mach_find_map(struct machine *m, s32 pid, u64 addr)
{
	struct mach_proc *p = find_proc(m, pid);
	size_t lo = 0, hi;

	if (!p)
		return NULL;
	hi = p->nr_maps;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->maps[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < p->nr_maps && p->maps[lo].start <= addr)
		return &p->maps[lo];
	return NULL;
}

static struct jit_map *proc_jit(struct machine *m, struct mach_proc *p)
{
	if (!p->jit_tried) {
		char path[PATH_MAX];
		struct stat st;

		p->jit_tried = true;
		/* Follow from the size seen before the load: lines added
		 * meanwhile are read twice, which only re-adds equal entries. */
		snprintf(path, sizeof(path), "%s/perf-%d.map",
			 m->perf_map_dir ? m->perf_map_dir : "/tmp", (int)p->pid);
		if (m->jit_follow && !stat(path, &st))
			p->jit_off = (u64)st.st_size;
		/* -ENOENT (no file) and -ENOMEM both leave no map: JIT
		 * frames then stay addresses, the sample is kept. */
		if (jit_map_load(m->perf_map_dir, p->pid, m->log, &p->jit))
			p->jit = NULL;
	}
	return p->jit;
}

/* A live process's perf map grows as new code runs: look for new lines,
 * at most every 20 ms per process (CLOCK_MONOTONIC_COARSE is a vDSO read;
 * a stat per missed frame would cost more than the frame). */
static int jit_follow(struct machine *m, struct mach_proc *p)
{
	struct timespec ts;
	u64 now;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	now = (u64)ts.tv_sec * 1000000000ULL + (u64)ts.tv_nsec;
	if (p->jit_checked_ns && now - p->jit_checked_ns < 20000000ULL)
		return 0;
	p->jit_checked_ns = now;
	return jit_map_follow_perf_map(&p->jit, m->perf_map_dir, p->pid,
				       &p->jit_off, m->log);
}

const struct jit_entry *mach_find_jit(struct machine *m, s32 pid, u64 addr)
{
	struct mach_proc *p = find_proc(m, pid);
	const struct jit_entry *e;
	int depth;

	for (depth = 0; p && depth < 16; depth++) {
		struct jit_map *jm = proc_jit(m, p);

		if (jm && (e = jit_map_find(jm, addr)))
			return e;
		if (!depth && m->jit_follow && jit_follow(m, p) > 0 &&
		    (e = jit_map_find(p->jit, addr)))
			return e;
		if (p->ppid <= 0 || p->ppid == p->pid)
			break;
		p = find_proc(m, p->ppid);
	}
	return NULL;
}

bool mach_kernel_syms(struct machine *m)
{
	if (!m->kernel_syms_checked) {
		m->kernel_syms_checked = true;
		m->kernel_syms_ok = sym_kernel_usable(m->sym, m->kernel_text);
		if (!m->kernel_syms_ok)
			pr_info(m->log, "kernel symbols unavailable or from another boot; kernel frames stay addresses");
	}
	return m->kernel_syms_ok;
}

static int cmp_thread(const void *a, const void *b)
{
	const struct mach_thread *x = *(struct mach_thread *const *)a;
	const struct mach_thread *y = *(struct mach_thread *const *)b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

int mach_sorted_threads(struct machine *m, struct mach_thread ***out,
			size_t *nr)
{
	struct mach_thread **v = calloc(m->nr_threads + 1, sizeof(*v));
	size_t i, n = 0;

	if (!v)
		return -ENOMEM;
	for (i = 0; i < m->threads_cap; i++)
		if (m->threads[i] && m->threads[i]->seen)
			v[n++] = m->threads[i];
	xqsort(v, n, sizeof(*v), cmp_thread);
	*out = v;
	*nr = n;
	return 0;
}
