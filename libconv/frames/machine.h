/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The machine model: processes, threads and their executable maps as
 * COMM, FORK, EXIT, MMAP and MMAP2 records describe them, applied in time
 * order so each sample sees the maps that existed when it was taken.
 *
 * Invariants: a process's maps are sorted by start and never overlap (a
 * new map cuts the parts of older ones it covers, as mmap(2) does); only
 * executable maps are kept (samples and return addresses point into
 * code). DSOs are shared by all processes through the sym_ctx, so a
 * library is opened once however many processes map it
 * (docs/design.md §6.2 point 3).
 */
#ifndef PERFSPY_MACHINE_H
#define PERFSPY_MACHINE_H

#include "common/hash.h"
#include "jit.h"
#include "perfdata/record.h"
#include "symbols.h"

/* MAPK_: MAP_ANON and MAP_FILE are <sys/mman.h> macros. */
enum map_kind {
	MAPK_FILE,   /* an ELF file (maybe not found) */
	MAPK_ANON,   /* //anon exec memory: JIT code, /tmp/perf-PID.map */
	MAPK_VDSO,   /* [vdso], [vsyscall] */
	MAPK_OTHER,  /* other pseudo names ([heap], memfd: ...) */
};

struct mach_map {
	u64 start, end, pgoff;
	struct sym_dso *dso; /* MAPK_FILE only */
	const char *name;    /* as recorded */
	const char *short_name; /* basename-like name for frames */
	u8 kind;
	/* Left from before the process's last exec (mach_mmap()): found by
	 * lookups, not the program's own. */
	bool old_image;
};

struct mach_proc {
	s32 pid;
	s32 ppid; /* 0 if unknown */
	struct mach_map *maps;
	size_t nr_maps, cap_maps;
	struct jit_map *jit; /* perf map / jitdump, loaded on first use */
	bool jit_tried;
	u64 jit_off;	      /* jit_follow: perf map bytes read */
	u64 jit_checked_ns;   /* jit_follow: last look at the file */
	/* jit_follow (live), from /proc once (proc_ns()): its pid in its own
	 * namespace, and "/proc/PID/root" when its mount namespace is not
	 * ours (a container: its /tmp and files are under it), else NULL. */
	bool ns_tried;
	s32 ns_pid;
	const char *root;
	u32 gen; /* bumped whenever the maps change */
	size_t last_map; /* mach_find_map's last answer: a hint, checked */
	bool exec; /* exec'd a new image: its parent's perf map is not its own */
	/* The image it runs, once an exec was seen (or inherited through
	 * a fork from a process that had one): the first file it mapped
	 * executable after the exec, as binfmt_elf maps the program before
	 * its interpreter. Interned; NULL until then (mach_exe()). */
	const char *exe;
	bool exe_next; /* exec'd: the next file map is the program */
	/* Without an exec seen (a process perf found running): the first
	 * file it mapped itself that is not a library (mach_exe()), or the
	 * parent's guess until it maps one, as a FORK copies the parent's
	 * maps before perf's synthesized maps of the child arrive. */
	const char *exe_guess;
	bool guess_inherited;
};

struct mach_thread {
	s32 pid, tid;
	const char *comm;
	u64 nr_samples;
	const char *exe; /* its process's program (mach_exe()), set by mach_sorted_threads() */
	bool seen; /* had a sample, COMM or FORK of its own */
};

struct mach_bid {
	const char *filename;
	u8 size;
	u8 id[20];
};

struct machine {
	struct sym_ctx *sym;
	const struct log_sink *log;
	struct arena strs;
	/* Map file names and thread names, interned: a recording that
	 * repeats its MMAP and COMM records (every FINISHED_ROUND of a long
	 * capture, a pid reused) stores each name once (issue 16: memory
	 * flat in input size). */
	struct strset names;

	struct htab procs;   /* pid -> struct mach_proc * (machine.c) */
	struct mach_proc *last_proc; /* the last one find_proc() found */
	struct htab threads; /* tid -> struct mach_thread * */
	size_t nr_threads;

	struct htab bids; /* filename -> struct mach_bid */

	const char *perf_map_dir; /* where perf-PID.map files are; NULL: /tmp */
	u64 kernel_text; /* runtime address of _text, 0 if unknown */
	/* The input is being recorded now (a pipe): perf maps still grow,
	 * so a JIT miss looks for lines added since (live.c, perf -o -). */
	bool jit_follow;
	bool kernel_syms_checked;
	bool kernel_syms_ok;
};

int mach_init(struct machine *m, struct sym_ctx *sym, const struct log_sink *log);
void mach_free(struct machine *m);

/* Remember a build id for a file name (BUILD_ID feature, HEADER_BUILD_ID
 * records); maps created later use it. */
int mach_add_build_id(struct machine *m, const char *filename, const u8 *id,
		      u8 size);

int mach_mmap(struct machine *m, const struct rec_mmap *mm, u16 cpumode);
int mach_comm(struct machine *m, const struct rec_comm *c);
int mach_fork(struct machine *m, const struct rec_fork *f);

/* The thread for (pid, tid), created if new. NULL only on ENOMEM. */
struct mach_thread *mach_thread(struct machine *m, s32 pid, s32 tid);

/* A number that changes whenever @pid's maps change (0 for an unknown
 * process): results derived from the maps can be cached under it. */
u32 mach_maps_gen(struct machine *m, s32 pid);

/* The process @pid (its sorted maps, for tests), or NULL. */
const struct mach_proc *mach_proc_of(struct machine *m, s32 pid);
/* The program @p runs, as recorded, or NULL: the image of its last exec,
 * else (a process that ran before the recording, whose maps perf
 * synthesized from /proc/PID/maps, in address order) the first file its
 * own MMAP records named that is not a shared library or a jitdump. */
const char *mach_exe(const struct mach_proc *p);

/* The map of @pid containing @addr, or NULL. */
const struct mach_map *mach_find_map(struct machine *m, s32 pid, u64 addr);
/* mach_find_map(), and where no map holds @addr, the start of the next
 * map above it in *@next (UINT64_MAX: none). */
const struct mach_map *mach_find_map_next(struct machine *m, s32 pid, u64 addr,
					  u64 *next);

/*
 * The JIT symbol (CPython trampoline, perf-map entry) at @addr in @pid:
 * the process's own perf map and jitdump first, then its parent's and
 * ancestors' (a forked child returns through trampolines the parent
 * made, which only the parent's map lists:
 * docs/cpython-perf.md §1.5). NULL if none.
 */
const struct jit_entry *mach_find_jit(struct machine *m, s32 pid, u64 addr);

/* Has @pid mapped a Python interpreter (libpython or a python
 * executable, py_is_interpreter_dso())? */
bool mach_proc_runs_python(struct machine *m, s32 pid);

/* Whether running process @pid is in another mount namespace than ours
 * (a container), and in @own its pid in its own pid namespace (the last
 * NSpid); @pid and false when /proc says nothing. */
bool mach_ns_view(s32 pid, s32 *own);

/* Is file name @name a shared library's (`libc.so.6`, `x.cpython-312-
 * x86_64-linux-gnu.so`, `libfoo.so (deleted)`), not a program's? For a
 * process's own image (here) and the symbolizer's programs. */
bool mach_is_shared_lib(const char *name);

/* Was a perf map or jitdump found for @pid or the parent it forked from
 * (where its Python frames would be named)? Loads it if not yet tried. */
bool mach_proc_has_perf_map(struct machine *m, s32 pid);

/* Name the idle task (pid 0, tid 0) `swapper` until a COMM says
 * otherwise, as perf does for every session (perf_session__register_
 * idle_thread): perf records no COMM for it, and system-wide samples on an
 * idle CPU are its. 0 or -ENOMEM. */
int mach_idle_thread(struct machine *m);

/* Whether kernel addresses can be symbolized with this machine's
 * kallsyms (checked once). */
bool mach_kernel_syms(struct machine *m);
/* The same, asking @sym (the shared symbolizer of -j N, stacks.c). */
bool mach_kernel_syms_in(struct machine *m, struct sym_ctx *sym);

/* Threads sorted by (pid, tid) into a new array the caller frees. */
int mach_sorted_threads(struct machine *m, struct mach_thread ***out,
			size_t *nr);

#endif
