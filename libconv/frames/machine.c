// SPDX-License-Identifier: GPL-2.0
/*
 * Processes, threads and executable maps (see machine.h).
 *
 * Record semantics follow docs/perf-data-format.md §2.4: COMM with
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
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Entry of the procs and threads tables: the pid or tid and its object. */
struct id_ent {
	u64 hash;
	s32 key;
	void *obj; /* struct mach_proc or mach_thread, in m->strs */
};

struct bid_ent {
	u64 hash;
	struct mach_bid b;
};

int mach_init(struct machine *m, struct sym_ctx *sym, const struct log_sink *log)
{
	memset(m, 0, sizeof(*m));
	m->sym = sym;
	m->log = log;
	arena_init(&m->strs);
	strset_init(&m->names);
	htab_init(&m->procs, sizeof(struct id_ent), 64);
	htab_init(&m->threads, sizeof(struct id_ent), 64);
	htab_init(&m->bids, sizeof(struct bid_ent), 64);
	return 0;
}

void mach_free(struct machine *m)
{
	const struct id_ent *e;
	size_t pos = 0;

	while ((e = htab_next(&m->procs, &pos))) {
		struct mach_proc *p = e->obj;

		free(p->maps);
		jit_map_free(p->jit);
	}
	htab_free(&m->procs);
	htab_free(&m->threads);
	htab_free(&m->bids);
	arena_free(&m->strs);
	strset_free(&m->names);
	memset(m, 0, sizeof(*m));
}

/* @s interned in m->names (lives until mach_free); NULL on -ENOMEM. */
static const char *intern(struct machine *m, const char *s)
{
	u32 id;

	if (strset_add(&m->names, s, strlen(s), &id) < 0)
		return NULL;
	return strset_str(&m->names, id);
}

/* ------------------------------------------------ pid and tid tables */

static bool id_eq(const void *ent, const void *key)
{
	return ((const struct id_ent *)ent)->key == *(const s32 *)key;
}

static u64 id_hash(s32 key)
{
	return hash_mix((u64)(u32)key);
}

static void *find_obj(const struct htab *t, s32 key)
{
	const struct id_ent *e = htab_find(t, id_hash(key), id_eq, &key);

	return e ? e->obj : NULL;
}

/* A zeroed object of @size for @key, made and added when new;
 * NULL on -ENOMEM. *@made says which. */
static void *get_obj(struct machine *m, struct htab *t, s32 key, size_t size,
		     bool *made)
{
	u64 h = id_hash(key);
	struct id_ent *e;
	void *obj;

	*made = false;
	if (htab_reserve(t))
		return NULL;
	e = htab_probe(t, h, id_eq, &key);
	if (htab_used(e))
		return e->obj;
	obj = arena_alloc(&m->strs, size);
	if (!obj)
		return NULL;
	memset(obj, 0, size);
	e->key = key;
	e->obj = obj;
	htab_claim(t, e, h);
	*made = true;
	return obj;
}

/* Every frame of a sample looks up the sample's process (mach_find_map),
 * so the last one found is kept: processes are never removed, so it
 * stays the table's answer for its pid. */
static struct mach_proc *find_proc(struct machine *m, s32 pid)
{
	struct mach_proc *p = m->last_proc;

	if (p && p->pid == pid)
		return p;
	p = find_obj(&m->procs, pid);
	if (p)
		m->last_proc = p;
	return p;
}

const struct mach_proc *mach_proc_of(struct machine *m, s32 pid)
{
	return find_proc(m, pid);
}

const char *mach_exe(const struct mach_proc *p)
{
	/* Exec'd, its program not mapped yet: the maps left are the old
	 * image's. */
	if (p->exe || p->exe_next)
		return p->exe;
	/* The program of a process perf found running: /proc/PID/maps gives
	 * no sign of it, but it is not a library, and it lies below them
	 * (a PIE at 0x55..., others at 0x400000; libraries near the stack),
	 * so it is the first such map perf synthesizes. Not the lowest map
	 * held: those copied from the parent by a FORK stay where the
	 * child's own do not cover them. */
	return p->exe_guess;
}

static struct mach_proc *get_proc(struct machine *m, s32 pid)
{
	struct mach_proc *p;
	bool made;

	p = get_obj(m, &m->procs, pid, sizeof(*p), &made);
	if (made)
		p->pid = pid;
	return p;
}

static struct mach_thread *find_thread(struct machine *m, s32 tid)
{
	return find_obj(&m->threads, tid);
}

struct mach_thread *mach_thread(struct machine *m, s32 pid, s32 tid)
{
	struct mach_thread *t = find_thread(m, tid);
	bool made;

	if (t) {
		if (t->pid != pid && pid != -1) {
			/* A recycled tid in another process. */
			t->pid = pid;
			t->comm = NULL;
		}
		return t;
	}
	t = get_obj(m, &m->threads, tid, sizeof(*t), &made);
	if (!t)
		return NULL;
	t->pid = pid;
	t->tid = tid;
	m->nr_threads++;
	return t;
}

/* --------------------------------------------------------- build ids */

static bool bid_eq(const void *ent, const void *key)
{
	return !strcmp(((const struct bid_ent *)ent)->b.filename, key);
}

int mach_add_build_id(struct machine *m, const char *filename, const u8 *id,
		      u8 size)
{
	u64 h = hash_bytes(filename, strlen(filename), 0);
	struct bid_ent *e;

	if (!size || size > 20)
		return 0;
	if (htab_reserve(&m->bids))
		return -ENOMEM;
	e = htab_probe(&m->bids, h, bid_eq, filename);
	if (!htab_used(e)) {
		e->b.filename = arena_strdup(&m->strs, filename);
		if (!e->b.filename)
			return -ENOMEM;
		htab_claim(&m->bids, e, h);
	}
	e->b.size = size;
	memcpy(e->b.id, id, size);
	return 0;
}

static const struct mach_bid *find_bid(struct machine *m, const char *name)
{
	const struct bid_ent *e =
		htab_find(&m->bids, hash_bytes(name, strlen(name), 0), bid_eq, name);

	return e ? &e->b : NULL;
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

/* @a and @b map the same bytes of the same file the same way (names
 * are interned: equal text, equal pointer). */
static bool same_map(const struct mach_map *a, const struct mach_map *b)
{
	return a->start == b->start && a->end == b->end && a->pgoff == b->pgoff &&
	       a->dso == b->dso && a->name == b->name && a->kind == b->kind;
}

/* Insert [start, end) into the sorted map vector, cutting what overlaps
 * (mmap(2) replaces older mappings in the same range). A map that is
 * already there as it is changes nothing, and keeps p->gen: the stack
 * caches keyed on it stay valid (a recording that repeats its MMAP
 * records would otherwise grow them without bound, issue 16). */
static int insert_map(struct mach_proc *p, const struct mach_map *nm)
{
	size_t i, j, n = 0, lo = 0, hi = p->nr_maps, mid;
	struct mach_map *out;
	size_t cap = p->nr_maps + 2;

	while (lo < hi) { /* the first map ending after nm->start */
		mid = lo + (hi - lo) / 2;
		if (p->maps[mid].end <= nm->start)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < p->nr_maps && same_map(&p->maps[lo], nm)) {
		/* The new image mapped it again where the old one had it. */
		p->maps[lo].old_image = nm->old_image;
		return 0;
	}
	if (lo == p->nr_maps || p->maps[lo].start >= nm->end) {
		/* Into a gap, the common case (each file a process maps
		 * comes as a few MMAP2 records that overlap nothing):
		 * in place, the vector grown by doubling. A new vector
		 * for every record made a system-wide recording's
		 * processes allocate and copy their whole map list per
		 * map, on the allocator's one lock (issue 16). */
		if (p->nr_maps == p->cap_maps) {
			cap = p->cap_maps ? p->cap_maps * 2 : 16;
			out = xreallocarray(p->maps, cap, sizeof(*out));
			if (!out)
				return -ENOMEM;
			p->maps = out;
			p->cap_maps = cap;
		}
		memmove(&p->maps[lo + 1], &p->maps[lo], (p->nr_maps - lo) * sizeof(*p->maps));
		p->maps[lo] = *nm;
		p->nr_maps++;
		p->gen++;
		return 0;
	}
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
	 * directories hold no __init__.py: docs/pyspy-formats.md §1.4). Python
	 * package extensions get their package path at render time. */
	if (!slash || !slash[1])
		return name;
	(void)m;
	return slash + 1;
}

static int kernel_mmap(struct machine *m, const struct rec_mmap *mm)
{
	/* perf synthesizes the kernel map as `[kernel.kallsyms]_text` with
	 * pgoff = address of _text (docs/perf-data-format.md §1.3). Modules need nothing:
	 * kallsyms covers them. */
	if (!strncmp(mm->filename, "[kernel.kallsyms]", 17) && mm->pgoff)
		m->kernel_text = mm->pgoff;
	return 0;
}

/* `libc.so.6`, `x.cpython-312-x86_64-linux-gnu.so`, `libfoo.so (deleted)`:
 * ".so" ending the name (before a " (deleted)") or followed by ".DIGIT". */
bool mach_is_shared_lib(const char *name)
{
	const char *p = name;

	while ((p = strstr(p, ".so"))) {
		p += 3;
		if (!*p || *p == ' ' || (*p == '.' && p[1] >= '0' && p[1] <= '9'))
			return true;
	}
	return false;
}

/* A JIT runtime's jitdump marker, mapped executable so perf records it
 * (perf's jitdump.txt: jit-PID.dump). */
static bool is_jitdump(const char *short_name)
{
	size_t n = strlen(short_name);

	return !strncmp(short_name, "jit-", 4) && n > 9 && !strcmp(short_name + n - 5, ".dump");
}

/*
 * How a running process sees itself. A process in a container writes
 * /tmp/perf-PID.map in its own /tmp, with the pid of its own namespace
 * (docs/cpython-perf.md §1.3), and maps files of its own root: perf reads
 * them through the process's mount namespace (util/namespaces.c nsinfo,
 * its nstgid from NSpid). Here: the last NSpid of /proc/PID/status into
 * @own (else @pid), and whether /proc/PID/ns/mnt is not ours. A process
 * gone, or /proc not readable: @pid and false.
 */
bool mach_ns_view(s32 pid, s32 *own)
{
	char path[64], line[256], a[64], b[64];
	ssize_t na, nb;
	FILE *f;

	*own = pid;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if ((f = fopen(path, "re"))) {
		while (fgets(line, sizeof(line), f)) {
			char *s = line + 6, *end;
			long v;

			if (strncmp(line, "NSpid:", 6))
				continue;
			/* "NSpid:\t<ours>\t...\t<its own>" (fs/proc/array.c). */
			while ((v = strtol(s, &end, 10)), end != s) {
				if (v > 0 && v <= INT32_MAX)
					*own = (s32)v;
				s = end;
			}
			break;
		}
		fclose(f);
	}
	snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int)pid);
	na = readlink("/proc/self/ns/mnt", a, sizeof(a));
	nb = readlink(path, b, sizeof(b));
	return na > 0 && nb > 0 && (na != nb || memcmp(a, b, (size_t)na));
}

/* mach_ns_view() of a live process (jit_follow, no --perf-map-dir), once:
 * ns_pid, and root = /proc/PID/root when its mount namespace is not ours. */
static int proc_ns(struct machine *m, struct mach_proc *p)
{
	char path[64];

	if (p->ns_tried)
		return 0;
	p->ns_tried = true;
	p->ns_pid = p->pid;
	if (!m->jit_follow || m->perf_map_dir || !mach_ns_view(p->pid, &p->ns_pid))
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/root", (int)p->pid);
	p->root = arena_strdup(&m->strs, path);
	return p->root ? 0 : -ENOMEM;
}

/* Where @p's perf map is: --perf-map-dir, its own /tmp, or ours. */
static const char *proc_map_dir(struct machine *m, struct mach_proc *p,
				char *buf, size_t size)
{
	if (m->perf_map_dir)
		return m->perf_map_dir;
	if (!p->root)
		return "/tmp";
	snprintf(buf, size, "%s/tmp", p->root);
	return buf;
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
	nm.name = intern(m, mm->filename);
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
		if (!err && m->jit_follow && nm.kind == MAPK_FILE) {
			char mf[96];

			err = proc_ns(m, p);
			if (!err && p->root)
				err = sym_dso_set_root(m->sym, nm.dso, p->root);
			/* fs/proc/base.c names map_files entries "%lx-%lx". */
			snprintf(mf, sizeof(mf), "/proc/%d/map_files/%llx-%llx", (int)p->pid,
				 (unsigned long long)nm.start, (unsigned long long)nm.end);
			if (!err)
				err = sym_dso_set_mapped(m->sym, nm.dso, mf);
		}
		if (err)
			return err;
		/* py-spy names interpreter frames from the symbol table
		 * only (docs/pyspy-formats.md §1.8 item 3); libpython's 30 MB of
		 * DWARF would also cost more than everything else. */
		if (py_is_interpreter_dso(nm.name))
			sym_dso_set_no_dwarf(nm.dso, true);
	}
	if (p->exe_next && nm.kind == MAPK_FILE) {
		size_t i;

		/* The new image's first map. The old image's maps stay for
		 * the samples still inside execve(), whose user pc is the old
		 * one (mach_comm()), but they are not the new program's: a
		 * library of the old image (the libpython of a Python parent
		 * that ran a subprocess) must not make it "ran Python, no perf
		 * map" (mach_proc_runs_python()). */
		for (i = 0; i < p->nr_maps; i++)
			p->maps[i].old_image = true;
		p->exe = nm.name;
		p->exe_next = false;
	} else if ((!p->exe_guess || p->guess_inherited) && nm.kind == MAPK_FILE &&
		   !mach_is_shared_lib(nm.short_name) && !is_jitdump(nm.short_name)) {
		p->exe_guess = nm.name;
		p->guess_inherited = false;
	}
	return insert_map(p, &nm);
}

int mach_idle_thread(struct machine *m)
{
	struct mach_thread *t = mach_thread(m, 0, 0);

	/* Not `seen`: listed only once it has a sample or a COMM of its
	 * own, which then renames it. */
	if (!t || !(t->comm = intern(m, "swapper")))
		return -ENOMEM;
	return 0;
}

int mach_comm(struct machine *m, const struct rec_comm *c)
{
	struct mach_thread *t = mach_thread(m, (s32)c->pid, (s32)c->tid);

	if (!t)
		return -ENOMEM;
	t->comm = intern(m, c->comm);
	if (!t->comm)
		return -ENOMEM;
	t->seen = true;
	/* A forked child runs its parent's JIT code and so uses its parent's
	 * perf map (mach_find_jit()); after an exec it runs a new image, whose
	 * Python (`python -I` in CPython's test suite) has a map of its own or
	 * none. Samples are processed in time order, so those taken before the
	 * exec were named already. */
	if (c->exec) {
		struct mach_proc *p = get_proc(m, (s32)c->pid);

		if (!p)
			return -ENOMEM;
		p->exec = true;
		/* The new image's mmaps follow: load_elf_binary() maps the
		 * program after begin_new_exec() set the comm. */
		p->exe = NULL;
		p->exe_next = true;
	}
	/* An exec keeps the old maps until the new image's mmaps cut them:
	 * samples taken inside execve() still return into the old image
	 * (perf's __thread__set_comm flushes only its unwind cache too).
	 * mach_mmap() marks them old_image at the new image's first map. */
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
	/* A fork runs its parent's image. perf's synthesized FORK of a
	 * process that ran before the recording names a parent too, but
	 * such parents saw no exec, so their exe is NULL. */
	np->exe = pp ? pp->exe : NULL;
	np->exe_next = pp && pp->exe_next;
	np->exe_guess = pp ? pp->exe_guess : NULL;
	np->guess_inherited = true;
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

const struct mach_map *mach_find_map_next(struct machine *m, s32 pid, u64 addr,
					  u64 *next)
{
	struct mach_proc *p = find_proc(m, pid);
	size_t lo = 0, hi;

	*next = UINT64_MAX;
	if (!p)
		return NULL;
	/* A stack's frames often fall in one map in a row. The maps are
	 * sorted and never overlap (map_insert), so a map that holds @addr
	 * is the one the search would find. */
	if (p->last_map < p->nr_maps && p->maps[p->last_map].start <= addr &&
	    addr < p->maps[p->last_map].end)
		return &p->maps[p->last_map];
	hi = p->nr_maps;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->maps[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < p->nr_maps && p->maps[lo].start <= addr) {
		p->last_map = lo;
		return &p->maps[lo];
	}
	/* The first map ending past @addr starts past it. */
	if (lo < p->nr_maps)
		*next = p->maps[lo].start;
	return NULL;
}

const struct mach_map *mach_find_map(struct machine *m, s32 pid, u64 addr)
{
	u64 next;

	return mach_find_map_next(m, pid, addr, &next);
}

/* When live process @pid started, in seconds since the epoch: its
 * starttime (clock ticks after boot, field 22 of /proc/PID/stat, proc(5))
 * plus the boot time (btime in /proc/stat, whole seconds); 0 if unknown. */
static double proc_started(s32 pid)
{
	char path[64], buf[1024], *p;
	unsigned long long ticks = 0, btime = 0;
	long hz = sysconf(_SC_CLK_TCK);
	size_t n;
	FILE *f;
	int i;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (hz <= 0 || !(f = fopen(path, "re")))
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* The command name, field 2, may hold spaces and parentheses:
	 * fields 3 on follow the last ')'. */
	if (!(p = strrchr(buf, ')')))
		return 0;
	for (i = 3; i <= 22 && p; i++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p + 1, "%llu", &ticks) != 1 || !(f = fopen("/proc/stat", "re")))
		return 0;
	while (fgets(buf, sizeof(buf), f))
		if (sscanf(buf, "btime %llu", &btime) == 1)
			break;
	fclose(f);
	return btime ? (double)btime + (double)ticks / (double)hz : 0;
}

static struct jit_map *proc_jit(struct machine *m, struct mach_proc *p)
{
	if (!p->jit_tried) {
		char path[PATH_MAX], dir[64];
		const char *d;
		struct stat st;
		double start;

		p->jit_tried = true;
		/* -ENOMEM: as no map (the sample is kept, its JIT frames
		 * stay addresses). */
		proc_ns(m, p);
		d = proc_map_dir(m, p, dir, sizeof(dir));
		/* Follow from the size seen before the load: lines added
		 * meanwhile are read twice, which only re-adds equal entries. */
		snprintf(path, sizeof(path), "%s/perf-%d.map", d, (int)p->ns_pid);
		if (m->jit_follow && !stat(path, &st)) {
			p->jit_off = (u64)st.st_size;
			/* Live, the pid is a running process: a map last
			 * written before it started (less 2 s for btime's
			 * rounding) is an earlier process's with the same
			 * pid (pids wrap at pid_max, 32,768 here), whose
			 * addresses would name this one's anonymous code.
			 * Lines the process adds are still followed. */
			start = proc_started(p->pid);
			if (start > 0 && (double)st.st_mtime < start - 2) {
				pr_warn(m->log, "%s: older than process %d: an earlier process's with that pid, not used",
					path, (int)p->pid);
				return NULL;
			}
		}
		/* -ENOENT (no file) and -ENOMEM both leave no map: JIT
		 * frames then stay addresses, the sample is kept. */
		if (jit_map_load(d, p->ns_pid, m->log, &p->jit))
			p->jit = NULL;
	}
	return p->jit;
}

bool mach_proc_runs_python(struct machine *m, s32 pid)
{
	struct mach_proc *p = find_proc(m, pid);
	size_t i;

	for (i = 0; p && i < p->nr_maps; i++)
		if (!p->maps[i].old_image && py_is_interpreter_dso(p->maps[i].name))
			return true;
	return false;
}

bool mach_proc_has_perf_map(struct machine *m, s32 pid)
{
	struct mach_proc *p = find_proc(m, pid);
	int depth;

	for (depth = 0; p && depth < 16; depth++) {
		if (proc_jit(m, p))
			return true;
		if (p->exec || p->ppid <= 0 || p->ppid == p->pid)
			break;
		p = find_proc(m, p->ppid);
	}
	return false;
}

/* A live process's perf map grows as new code runs: look for new lines,
 * at most every 20 ms per process (CLOCK_MONOTONIC_COARSE is a vDSO read;
 * a stat per missed frame would cost more than the frame). */
static int jit_follow(struct machine *m, struct mach_proc *p)
{
	struct timespec ts;
	char dir[64];
	u64 now;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	now = (u64)ts.tv_sec * 1000000000ULL + (u64)ts.tv_nsec;
	if (p->jit_checked_ns && now - p->jit_checked_ns < 20000000ULL)
		return 0;
	p->jit_checked_ns = now;
	/* proc_jit() ran first (mach_find_jit): ns_pid and root are set. */
	return jit_map_follow_perf_map(&p->jit, proc_map_dir(m, p, dir, sizeof(dir)),
				       p->ns_pid, &p->jit_off, m->log);
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
		if (p->exec || p->ppid <= 0 || p->ppid == p->pid)
			break;
		p = find_proc(m, p->ppid);
	}
	return NULL;
}

bool mach_kernel_syms(struct machine *m)
{
	return mach_kernel_syms_in(m, m->sym);
}

bool mach_kernel_syms_in(struct machine *m, struct sym_ctx *sym)
{
	if (!m->kernel_syms_checked) {
		m->kernel_syms_checked = true;
		m->kernel_syms_ok = sym_kernel_usable(sym, m->kernel_text);
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
	const struct id_ent *e;
	size_t pos = 0, n = 0;

	if (!v)
		return -ENOMEM;
	while ((e = htab_next(&m->threads, &pos))) {
		struct mach_thread *t = e->obj;

		if (t->seen) {
			const struct mach_proc *p = find_proc(m, t->pid);

			t->exe = p ? mach_exe(p) : NULL;
			v[n++] = t;
		}
	}
	xqsort(v, n, sizeof(*v), cmp_thread);
	*out = v;
	*nr = n;
	return 0;
}
