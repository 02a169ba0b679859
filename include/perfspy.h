/* SPDX-License-Identifier: GPL-2.0 */
/*
 * perfspy: read Linux perf samples (perf.data files and pipes), symbolize
 * native frames, and write py-spy-format folded stacks.
 *
 * This is the only public header. Objects are opaque handles; options
 * come in sized structs (always optional: NULL means defaults); every
 * function that can fail returns 0 or a negative error code: -errno for
 * system errors, or -PERFSPY_E_* for our own. perfspy_strerror() turns
 * either into text. The library never prints and never exits: messages
 * go to the log callback given in perfspy_open_opts.
 *
 * Typical use (tests/unit/test_api.c compiles and runs the
 * lines between the EXAMPLE markers, so they cannot drift from the API):
 *
 * EXAMPLE-BEGIN
 *	struct perfspy_session *s = NULL;
 *	struct perfspy_folder *f = NULL;
 *	int err = perfspy_session__open("perf.data", NULL, &s);
 *	if (!err)
 *		err = perfspy_folder__new(&f);
 *	if (!err)
 *		err = perfspy_session__convert(s, NULL, f);
 *	if (!err)
 *		err = perfspy_folder__write(f, stdout, NULL);
 *	perfspy_folder__free(f);
 *	perfspy_session__close(s);
 * EXAMPLE-END
 */
#ifndef PERFSPY_H
#define PERFSPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef PERFSPY_API
#define PERFSPY_API __attribute__((visibility("default")))
#endif

/*
 * Options structs: declare with PERFSPY_OPTS(type, name, .field = value).
 * The first field is the struct's size as the caller knows it, so a
 * library built later can tell which fields the caller set; unknown
 * non-zero tail bytes are rejected with -PERFSPY_E_OPTS.
 *
 * The whole object, padding included, is zeroed before the designated
 * fields are stored: an initializer alone leaves padding bytes
 * unspecified, and the padding after the last known field is exactly
 * what the tail check reads. (A GNU C statement expression; gcc and
 * clang accept it in C and C++.) It declares a local variable, so use it
 * inside a function; a struct with static storage needs no macro, as its
 * padding starts zeroed. Callers that fill an automatic struct by hand
 * should memset() it first for the same reason.
 */
#define PERFSPY_OPTS(TYPE, NAME, ...)                                     \
	struct TYPE NAME = ({                                             \
		memset(&NAME, 0, sizeof(struct TYPE));                    \
		(struct TYPE){ .sz = sizeof(struct TYPE), __VA_ARGS__ };  \
	})

/*
 * Error codes (positive values; functions return them negated). The
 * values are pinned: a shipped value never changes its meaning.
 */
#define PERFSPY_ERRORS(X)                                                      \
	X(FORMAT, 4000, "not a perf.data file, or a malformed header")        \
	X(TRUNCATED, 4001, "file truncated")                                  \
	X(UNSUPPORTED, 4002, "unsupported perf.data feature")                 \
	X(ENDIAN, 4003, "perf.data of the other byte order is not supported") \
	X(NO_SAMPLES, 4004, "no samples")                                     \
	X(DWFL, 4005, "libdw error")                                          \
	X(OPTS, 4006, "invalid options struct")                               \
	X(NO_EVENT, 4007, "no such event in this file")                       \
	X(CONSUMED, 4008, "input stream already consumed")                    \
	X(BAD_RECORD, 4009, "malformed record")                               \
	X(ZSTD, 4010, "zstd decompression failed")                            \
	X(INTERRUPTED, 4011, "interrupted")                                   \
	X(RULES, 4012, "invalid report rules")                                \
	X(CAPTURE, 4013, "not a py-spy capture (raw or speedscope JSON)")

enum perfspy_error {
#define PERFSPY_X_ENUM(name, value, msg) PERFSPY_E_##name = value,
	PERFSPY_ERRORS(PERFSPY_X_ENUM)
#undef PERFSPY_X_ENUM
};

/*
 * Write the message for @err (either sign; -errno values too) into @buf.
 * Always NUL-terminates when @size > 0. Returns 0, or -EINVAL for an
 * unknown code (the buffer then says "unknown error N").
 */
PERFSPY_API int perfspy_strerror(int err, char *buf, size_t size);

/* The library version, "MAJOR.MINOR.PATCH". */
PERFSPY_API const char *perfspy_version_string(void);

/*
 * (0.6) The perf map a running process @pid writes (CPython's -X perf,
 * docs/cpython-perf.md §1.3), as this process can open it, where a live
 * conversion looks for it: /tmp/perf-PID.map, or, for a process in
 * another mount namespace (a container), /proc/PID/root/tmp/perf-N.map
 * with N its pid in its own namespace. Whether the file exists is not
 * checked. 0, or -ERANGE when @size is too small (@buf then holds as
 * much as fits, NUL-terminated).
 */
PERFSPY_API int perfspy_perf_map_path(int pid, char *buf, size_t size);

/*
 * Log levels for perfspy_log_fn. In the options structs a @log_level of
 * 0 means "default" (WARN) unless the struct's @log_level_set is true;
 * set it to select PERFSPY_LOG_ERROR.
 */
enum perfspy_log_level {
	PERFSPY_LOG_ERROR = 0,
	PERFSPY_LOG_WARN = 1,
	PERFSPY_LOG_INFO = 2,
	PERFSPY_LOG_DEBUG = 3,
};

/*
 * Log callback: @msg is one line without a trailing newline, valid only
 * during the call.
 */
typedef void (*perfspy_log_fn)(void *ctx, int level, const char *msg);

/* Opaque handles. */
struct perfspy_session; /* one input (file or stream) and its state */
struct perfspy_folder;	/* aggregated stacks: stack -> count */

/*
 * Options for opening a session. All fields are optional.
 */
struct perfspy_open_opts {
	size_t sz; /* sizeof(struct perfspy_open_opts) */
	/* Log sink; NULL drops messages. Messages above @log_level are
	 * dropped. @log_level 0 means the default, PERFSPY_LOG_WARN, unless
	 * @log_level_set is true (see below). */
	perfspy_log_fn log_fn;
	void *log_ctx;
	int log_level;
	/* Root prefix under which binaries are looked up (perf --symfs). */
	const char *symfs;
	/* Build-id cache; NULL means $HOME/.debug. */
	const char *buildid_dir;
	/* Kernel symbols; NULL means /proc/kallsyms, "" disables. */
	const char *kallsyms;
	/* Name shown in messages (defaults to the path, or "<stdin>"). */
	const char *display_name;
	/* Where /tmp/perf-PID.map and jit-PID.dump files are (copied off
	 * the profiled machine); NULL means /tmp. */
	const char *perf_map_dir;
	/* Use @log_level as given, so that PERFSPY_LOG_ERROR (0) selects
	 * errors only. Without it 0 means PERFSPY_LOG_WARN, which is what
	 * callers written before this field get. */
	bool log_level_set;
	/* debuginfod (issue 14): when $DEBUGINFOD_URLS names servers, debug
	 * info and binaries missing here are fetched from them by build id
	 * (libdebuginfod: cached, $DEBUGINFOD_TIMEOUT); true never asks. */
	bool no_debuginfod;
	size_t : 0;
};
#define perfspy_open_opts__last_field no_debuginfod

/*
 * Open @path ("-" reads standard input as a stream). Only the header is
 * read here; records are read by perfspy_session__convert(). On success
 * *@out is a new session to be closed with perfspy_session__close().
 *
 * Errors: -errno from open/read/mmap, -PERFSPY_E_FORMAT (not perf.data,
 * with the offset in the log), -PERFSPY_E_UNSUPPORTED (e.g. pipe layout
 * of the other byte order), -PERFSPY_E_TRUNCATED,
 * -PERFSPY_E_OPTS, -ENOMEM.
 */
PERFSPY_API int perfspy_session__open(const char *path,
				      const struct perfspy_open_opts *opts,
				      struct perfspy_session **out);

/*
 * Like perfspy_session__open() on an open file descriptor. A regular
 * file is mapped; anything else is read as a stream. The fd is not
 * consumed: the caller closes it after perfspy_session__close().
 */
PERFSPY_API int perfspy_session__open_fd(int fd,
					 const struct perfspy_open_opts *opts,
					 struct perfspy_session **out);

/*
 * Like perfspy_session__open() on a perf.data image in memory (file or
 * pipe layout). @buf must stay valid until perfspy_session__close().
 */
PERFSPY_API int perfspy_session__open_mem(const void *buf, size_t len,
					  const struct perfspy_open_opts *opts,
					  struct perfspy_session **out);

/* Close a session; NULL is accepted. */
PERFSPY_API void perfspy_session__close(struct perfspy_session *s);

enum perfspy_weight {
	PERFSPY_WEIGHT_SAMPLES = 0, /* each sample counts 1 */
	PERFSPY_WEIGHT_PERIOD = 1,  /* each sample counts its period */
};

/*
 * Progress callback for long runs: @done and @total in bytes of input
 * (@total is 0 for streams). Return 0 to continue, non-zero to stop the
 * conversion with -PERFSPY_E_INTERRUPTED.
 * It runs between records, so it may read the conversion's folder (what
 * is folded so far; `perfspy top` does, issue 10). A stream calls it
 * also after each round (FINISHED_ROUND), so a live recording reports
 * while its records trickle in.
 */
typedef int (*perfspy_progress_fn)(void *ctx, uint64_t done, uint64_t total);

/*
 * What perfspy_session__convert() keeps and how it names frames.
 */
struct perfspy_convert_opts {
	size_t sz; /* sizeof(struct perfspy_convert_opts) */
	/* Event name to fold ("cpu-clock", "sched:sched_switch"); NULL
	 * means the event with the most samples (a stream: the first),
	 * together with the same event on the other core PMUs of a hybrid
	 * CPU (`cpu_atom/cycles/` + `cpu_core/cycles/`); see
	 * perfspy_event.folded. */
	const char *event;
	/* Keep only samples of this process / thread; 0 keeps all. */
	int pid;
	int tid;
	/* Keep only samples whose thread name is this; NULL keeps all. */
	const char *comm;
	/* Drop kernel frames (and samples with only kernel frames keep
	 * just their process frame, if any). */
	bool no_kernel;
	/* Root frame `thread (TID): NAME` per stack (py-spy --threads). */
	bool threads;
	/* enum perfspy_weight. */
	int weight;
	/* Progress reporting; called at most about 10 times a second. */
	perfspy_progress_fn progress_fn;
	void *progress_ctx;
	/* Keep interpreter-internal native frames (_PyEval_EvalFrameDefault,
	 * vectorcall glue, trampolines) in stacks that have Python frames;
	 * by default they are dropped, as py-spy --native does. */
	bool keep_interpreter;
	/* Python frames only (and the thread root), for diffing against
	 * py-spy captures. */
	bool python_only;
	/* Python frame names as qualnames (`Class.method`) instead of
	 * co_name (`method`, py-spy 0.4.2). */
	bool qualname;
	/* `name (file)` without line numbers, Python and native frames. */
	bool no_lineno;
	/* Keep Python file names as recorded instead of py-spy's short form. */
	bool full_filenames;
	/* Root frame `process PID:"NAME"` per stack, before the thread
	 * root (py-spy --subprocesses' shape; NAME is the process's main
	 * thread name, perf.data carries no command line). */
	bool processes;
	/* issue 10 (docs/top.md §3): off-CPU time too. A sched:sched_switch
	 * sample at a blocked thread's switch-out opens a stretch with its
	 * stack, the thread's next switch-in (PERF_RECORD_SWITCH, a
	 * sched_switch naming it next_pid, or its next sample) closes it;
	 * the stack weighs the stretch. Every weight, on-CPU samples' too
	 * (their period), is then in milliseconds (the write option
	 * milliseconds says so in the output). */
	bool idle;
	/* issue 16 (docs/design.md §6.4): threads for the conversion. 0 or
	 * 1 converts on the calling thread; N > 1 splits the samples by
	 * thread over up to N sessions on the same file, each on a thread
	 * of its own, and adds up their stacks: the folder ends up as one
	 * pass would leave it (the output is byte-identical). A stream, a
	 * file of the other byte order, @idle and a folder keeping a
	 * timeline convert on the calling thread. */
	int jobs;
	/* issue 16 (docs/design.md §6.19, §6.26): with @jobs 0 or 1, a
	 * frame-pointer recording read in place may have its addresses
	 * named ahead of the stacks that need them: by the session that
	 * feeds @build_behind's builder, or by a second session reading
	 * ahead on a thread of its own; the folder and the output are the
	 * same either way. enum perfspy_name_ahead: AUTO (0) does it for
	 * files of 2 MB of data or more with more than one CPU to run on
	 * (online, and in the process's affinity mask), with the builder
	 * where its callchains are shallow (the first 1,024 samples average
	 * under 24 entries); ALWAYS by the second session unless
	 * @build_behind is ALWAYS too. */
	int name_ahead;
	/* issue 16 (docs/design.md §6.25): with @jobs 0 or 1, a
	 * frame-pointer recording read in place may have its stacks built
	 * and folded on a second thread, fed by the session that reads the
	 * records and probes the callchain cache; the folder and the output
	 * are the same either way. enum perfspy_build_behind: AUTO (0)
	 * does it where @name_ahead's AUTO would name ahead, and with
	 * @name_ahead NEVER where the callchains are deep. */
	int build_behind;
	/* issue 16 (docs/design.md §6.32): a file read in place may have
	 * its data section read into memory on a thread of its own, ahead
	 * of the conversion (and of every session of @jobs), instead of
	 * being read where it lies in the mapping; not while
	 * @name_ahead's second session or @build_behind's builder runs.
	 * The folder and the output are the same either way. enum
	 * perfspy_copy_in: AUTO (0) does it for files of 8 MB of data or
	 * more with user stack dumps (--call-graph dwarf) where there is
	 * more than one CPU to run on and transparent huge pages can be
	 * asked for; ALWAYS wherever it can run. */
	int copy_in;
	size_t : 0;
};
#define perfspy_convert_opts__last_field copy_in

enum perfspy_name_ahead {
	PERFSPY_NAME_AHEAD_AUTO = 0,
	PERFSPY_NAME_AHEAD_NEVER = 1,
	PERFSPY_NAME_AHEAD_ALWAYS = 2,
};

enum perfspy_build_behind {
	PERFSPY_BUILD_BEHIND_AUTO = 0,
	PERFSPY_BUILD_BEHIND_NEVER = 1,
	PERFSPY_BUILD_BEHIND_ALWAYS = 2,
};

enum perfspy_copy_in {
	PERFSPY_COPY_IN_AUTO = 0,
	PERFSPY_COPY_IN_NEVER = 1,
	PERFSPY_COPY_IN_ALWAYS = 2,
};

/*
 * Read every record of the session, keep statistics (see
 * perfspy_session__info()) and, when @folder is not NULL, add one stack
 * per kept sample of the selected event.
 *
 * A problem with one record costs that record (it is counted in
 * perfspy_stats), not the file. A file cut short in its data section is
 * converted up to the cut with a warning; that is not an error.
 *
 * A stream can be converted only once (-PERFSPY_E_CONSUMED after); a
 * file can be converted again.
 *
 * Errors: -PERFSPY_E_NO_EVENT (no event of that name), -ENOMEM, -errno
 * from read, -PERFSPY_E_ZSTD, -PERFSPY_E_INTERRUPTED, -PERFSPY_E_OPTS.
 */
PERFSPY_API int perfspy_session__convert(struct perfspy_session *s,
					 const struct perfspy_convert_opts *opts,
					 struct perfspy_folder *folder);

/*
 * What the file says about itself and what a pass over its records
 * found. Strings belong to the session and live until it is closed;
 * they are NULL when the file does not have them. The counting fields
 * are filled after perfspy_session__convert().
 */
struct perfspy_info {
	size_t sz; /* sizeof(struct perfspy_info), set by the caller */
	const char *path;
	bool pipe_mode;
	uint64_t file_size;	/* 0 for streams */
	uint64_t data_offset;
	uint64_t data_size;
	const char *perf_version;
	const char *hostname;
	const char *os_release;
	const char *arch;
	const char *cpu_desc;
	const char *cmdline; /* arguments joined by spaces */
	uint32_t nr_cpus_online;
	uint32_t nr_cpus_avail;
	uint64_t total_mem_kb;
	uint32_t nr_events;
	bool has_build_ids;   /* BUILD_ID feature or build-id MMAP2 */
	bool has_callchain;   /* any event samples callchains */
	bool has_user_stack;  /* any event samples regs+stack (dwarf) */
	uint32_t stack_user_size; /* requested dump size (largest event) */
	bool compressed;
	/* After a pass: */
	uint64_t nr_samples;   /* all samples of all events */
	uint64_t nr_records;
	uint64_t nr_lost;      /* samples lost (LOST and LOST_SAMPLES) */
	uint64_t nr_lost_records;
	uint64_t nr_throttle;
	uint64_t time_first;   /* perf clock, ns; 0 if no timestamps */
	uint64_t time_last;
	uint32_t nr_processes;
	uint32_t nr_threads;
	bool truncated;	       /* data ended inside a record */
	uint64_t truncated_at; /* file offset of the cut */
	/* DWARF unwinding of user stack dumps (after a pass): */
	uint64_t stacks_unwound; /* samples with a user stack dump */
	uint64_t stacks_root;	 /* reached the thread's first frame */
	uint64_t stacks_cut;	 /* ended at the end of the stack dump */
	uint64_t stacks_lost;	 /* ended without CFI or frame pointer */
	uint32_t max_stack_used; /* deepest stack dump perf filled, bytes */
	uint64_t python_frames;	 /* Python frames named (perf map/jitdump) */
	/* What is missing (after a pass): processes that mapped a Python
	 * interpreter but have no perf map or jitdump (their stacks have no
	 * Python frames), and their samples; frame-pointer callchains with a
	 * user part, and those whose user part ends at 0x0 or outside any
	 * map (code without frame pointers: record with --call-graph dwarf). */
	uint32_t python_no_map_processes;
	uint64_t python_no_map_samples;
	uint64_t fp_stacks;
	uint64_t fp_stacks_bad;
	/* 0.5: user-space DSOs the file's header lists as hit by its
	 * samples (the BUILD_ID feature; a pipe's come at its end), known
	 * at open: how much code a conversion will name, and so about how
	 * large its tables grow. */
	uint32_t nr_dsos_hit;
	size_t : 0;
};

/* Fill @info (whose ->sz the caller sets). */
PERFSPY_API int perfspy_session__info(const struct perfspy_session *s,
				      struct perfspy_info *info);

/* One event (perf's evsel). */
struct perfspy_event {
	size_t sz;
	const char *name;  /* "cpu-clock", "sched:sched_switch", ... */
	uint32_t type;	   /* perf_event_attr.type */
	uint64_t config;
	uint64_t sample_type;
	uint64_t sample_period; /* or frequency when freq */
	bool freq;
	uint64_t nr_samples; /* after a pass */
	/* The last perfspy_session__convert() with a folder folded this
	 * event's samples (several: one event on each hybrid core PMU). */
	bool folded;
	size_t : 0;
};

/* Fill @ev for event @idx (0 .. nr_events-1). -ENOENT past the end. */
PERFSPY_API int perfspy_session__event(const struct perfspy_session *s,
				       uint32_t idx, struct perfspy_event *ev);

/*
 * The kernel a file was recorded on, and where its symbols come from.
 * Kernel frames are named only from a kallsyms that matches the
 * recording: the open opts' kallsyms file, perf's build-id cache entry
 * for the recorded kernel build id, or /proc/kallsyms when this machine
 * runs that kernel (same build id, else same OS release) in the same
 * boot (same _text). Otherwise they stay addresses.
 */
struct perfspy_kernel {
	size_t sz;
	const char *build_id;	/* recorded kernel build id (hex) or NULL */
	const char *os_release; /* recorded `uname -r` or NULL */
	const char *kallsyms;	/* symbols used for kernel frames, or NULL */
	const char *tried;	/* the kallsyms file considered, or NULL */
	const char *why;	/* when kallsyms is NULL: why not, or NULL */
	uint64_t nr_kernel_samples; /* samples in or through the kernel */
	size_t : 0;
};

/* Fill @k after perfspy_session__convert() (-ENOENT before). Strings
 * belong to the session. */
PERFSPY_API int perfspy_session__kernel(struct perfspy_session *s,
					struct perfspy_kernel *k);

/* One thread seen in the records (COMM/FORK/samples). */
struct perfspy_thread {
	size_t sz;
	int pid;
	int tid;
	const char *comm; /* latest name */
	uint64_t nr_samples;
	/* The program its process runs, as recorded: the first file it
	 * mapped executable after its last exec, or for a process that ran
	 * before the recording, the first of its maps that is not a shared
	 * library. NULL if unknown. */
	const char *exe;
	size_t : 0;
};

/* Fill @t for thread @idx, threads sorted by (pid, tid). -ENOENT past
 * the end. Valid after a pass. */
PERFSPY_API int perfspy_session__thread(const struct perfspy_session *s,
					uint32_t idx, struct perfspy_thread *t);

/* A binary or library the samples ran in (issue 14: pprof Mappings). */
struct perfspy_dso {
	size_t sz;
	const char *path;     /* as recorded ("/usr/lib/x86_64-linux-gnu/libc.so.6") */
	const char *build_id; /* lower-case hex, NULL if the file has none recorded */
	size_t : 0;
};

/* Fill @d for DSO @idx, DSOs sorted by path; -ENOENT past the end. Valid
 * after a pass; the strings live until the session is closed. */
PERFSPY_API int perfspy_session__dso(const struct perfspy_session *s,
				     uint32_t idx, struct perfspy_dso *d);

/*
 * After perfspy_session__convert(): was frame text @frame (of the folder
 * it filled, which must still be alive) emitted as an inlined callee of
 * the frame above it? A function inlined at one call site and called at
 * another reads as inlined. (issue 14: pprof Lines; usable as
 * perfspy_write_opts.frame_inlined with the session as context.)
 */
PERFSPY_API bool perfspy_session__frame_inlined(const struct perfspy_session *s,
					       const char *frame, size_t len);

/*
 * After perfspy_session__convert(): Python source @idx of those the perf
 * maps named and that were found (in order of first sight), where it was
 * read (under perfspy_convert_opts.source_root when set). The string lives
 * until the session is closed. -ENOENT past the end, -EINVAL on NULL.
 * (issue 13: give them to perfspy_merge_opts.sources.)
 */
PERFSPY_API int perfspy_session__python_source(const struct perfspy_session *s,
					       uint32_t idx, const char **path);

/*
 * Issue 15: the library (file base name, e.g. "libc.so.6") that native
 * frame text @frame (@len bytes) of the last conversion came from, when
 * the text names a source file instead (`f (file.c:LINE)`); NULL when it
 * does not or is unknown. For perfspy_write_opts.frame_lib. Valid until
 * the session is freed.
 */
PERFSPY_API const char *perfspy_session__frame_lib(const struct perfspy_session *s,
						   const char *frame, size_t len);

/*
 * Non-fatal counters: what was skipped and why.
 */
struct perfspy_stats {
	size_t sz;
	uint64_t samples_kept;	     /* samples folded */
	uint64_t samples_filtered;   /* other events, pid/tid/comm filters */
	uint64_t bad_records;	     /* malformed, counted and skipped */
	uint64_t unknown_records;    /* record types we do not know */
	uint64_t unknown_ids;	     /* sample ids matching no event */
	uint64_t frames;	     /* native frames resolved */
	uint64_t frames_unknown;     /* frames with no symbol */
	uint64_t frames_no_map;	     /* addresses outside any map */
	uint64_t stacks_truncated;   /* callchains hitting the max depth */
	uint64_t out_of_order;	     /* records older than a flushed round */
	uint64_t frames_python;	     /* Python frames named */
	uint64_t frames_interpreter; /* interpreter frames dropped */
	size_t : 0;
};

PERFSPY_API int perfspy_session__stats(const struct perfspy_session *s,
				       struct perfspy_stats *stats);

/*
 * Folder: stack -> count, independent of any session (the merge tool and
 * the plugin fill it too).
 */
PERFSPY_API int perfspy_folder__new(struct perfspy_folder **out);
PERFSPY_API void perfspy_folder__free(struct perfspy_folder *f);

/*
 * Add @weight to the stack of @nr frames @frames (root first). Frame
 * text is copied; ';' and newlines in it are replaced (';' -> ':',
 * newline -> ' ') as stackcollapse-perf.pl does. Returns 0 or -ENOMEM.
 */
PERFSPY_API int perfspy_folder__add(struct perfspy_folder *f,
				    const char *const *frames, size_t nr,
				    uint64_t weight);

/* Number of distinct stacks and the total weight. */
PERFSPY_API size_t perfspy_folder__nr_stacks(const struct perfspy_folder *f);
PERFSPY_API uint64_t perfspy_folder__total(const struct perfspy_folder *f);

/*
 * 0.7: the text of distinct frame @idx (0, 1, ... in order of first
 * use) and its length in *@len (may be NULL); NULL past the last one.
 * The text lives as long as @f and is not NUL-terminated when it held
 * a NUL byte (use *@len).
 */
PERFSPY_API const char *perfspy_folder__frame(const struct perfspy_folder *f, uint32_t idx,
					      size_t *len);

/*
 * Issue 15: keep every sample's time, thread and stack (16 bytes a
 * sample) while a session converts into @f, so the speedscope writer
 * can lay the samples out in time order with their real times
 * (docs/output.md §8). Off by default; other formats ignore it. A
 * recording without sample times gives no timeline, and the writer
 * falls back to one weighted sample per stack. 0 or -EINVAL.
 */
PERFSPY_API int perfspy_folder__keep_timeline(struct perfspy_folder *f, bool on);

/* Issue 15: perfspy_folder__add() for one sample taken at @time (perf's
 * clock, nanoseconds) in thread @tid, which goes on the timeline when
 * perfspy_folder__keep_timeline() asked for one (the dlfilter plugin's
 * speedscope output). Returns 0 or -ENOMEM. */
PERFSPY_API int perfspy_folder__add_sample(struct perfspy_folder *f,
					   const char *const *frames, size_t nr,
					   uint64_t weight, uint64_t time, uint32_t tid);

/* Output formats of perfspy_folder__write(). */
enum perfspy_format {
	/* py-spy raw folded stacks (py-spy --format raw). */
	PERFSPY_FORMAT_RAW = 0,
	/* A self-contained interactive SVG flame graph, root on top (as
	 * py-spy's default output): click zooms, search highlights, tooltips
	 * give counts and percentages; Python, native and kernel frames have
	 * distinct colours. */
	PERFSPY_FORMAT_FLAMEGRAPH = 1,
	/* speedscope's JSON file format, one sampled profile per
	 * `thread (TID)...` root frame. */
	PERFSPY_FORMAT_SPEEDSCOPE = 2,
	/* pprof (issue 14): a gzipped perftools.profiles.Profile, as
	 * google/pprof's profile.proto defines it, for `go tool pprof`,
	 * Pyroscope and Parca. Root frames become sample labels (tid,
	 * thread, pid, comm, and key for `[key=value]`), and each sample
	 * has the label category (perfspy_report's, built-in rules). */
	PERFSPY_FORMAT_PPROF = 3,
};

struct perfspy_write_opts {
	size_t sz;
	int format; /* enum perfspy_format; was `reserved` (0 = raw) */
	/* SVG title and speedscope file name; NULL means "perfspy". Text
	 * only (escaped on output), never markup. */
	const char *title;
	/* pprof (issue 14): the weights are nanoseconds (periods of a clock
	 * event such as cpu-clock or task-clock): the sample type is
	 * cpu/nanoseconds instead of samples/count. Other formats ignore it. */
	bool clock_ns;
	/* pprof (issue 14): where the libraries named in frames come from,
	 * e.g. from perfspy_session__dso(): a frame `f (libc.so.6)` gets the
	 * Mapping of the first path whose last component is libc.so.6, with
	 * its build id (NULL entries: none). Other formats ignore them. */
	const char *const *dso_paths;
	const char *const *dso_build_ids;
	size_t nr_dsos;
	/* pprof (issue 14): true for a frame that is an inlined callee of
	 * the frame above it (perfspy_session__frame_inlined()); such frames
	 * become Lines of their caller's Location. NULL: one Location per
	 * frame. Other formats ignore it. */
	bool (*frame_inlined)(void *ctx, const char *frame, size_t len);
	void *frame_inlined_ctx;
	/* pprof (issue 13): the Python frames' lines are their functions'
	 * first lines, as perfspy_session__convert() writes them (not a
	 * merge's current lines): each Python definition is a Function of its
	 * own with that line as start_line, so `forward (m.py:10)` and
	 * `forward (m.py:30)` are two Functions. Other formats ignore it. */
	bool python_first_lines;
	/* Flame graph and speedscope (issue 15): native frames that carry
	 * a source line are grouped by function, one box for all lines of
	 * `f (file.c:LINE)` with the lines in the tooltip; true keeps one
	 * frame per line, as the raw output has them (docs/output.md §7.1).
	 * Other formats ignore it. */
	bool lineno;
	/* Flame graph (issue 15): the library a native frame came from
	 * (e.g. perfspy_session__frame_lib()), for frames whose text names
	 * a source file (`f (file.c:LINE)`), so they are coloured by library
	 * family too (docs/output.md §7.2). NULL: by the text alone. */
	const char *(*frame_lib)(void *ctx, const char *frame, size_t len);
	void *frame_lib_ctx;
	/* issue 10: the weights are milliseconds (a conversion with ->idle):
	 * the SVG's title line and tooltips and speedscope's unit say so. */
	bool milliseconds;
	/* pprof: the path of the profiled program (e.g. the perfspy_thread
	 * .exe with the most samples): its Mapping comes first, as pprof
	 * takes mapping[0] for the main binary (`go tool pprof`'s "File:"
	 * line), with its build id when dso_paths lists it. NULL: Mappings in
	 * order of first use. Other formats ignore it. */
	const char *main_binary;
	/* pprof (0.6): the profile's duration_nanos, e.g. the span of the
	 * recording's samples (perfspy_info's time_last - time_first), which
	 * `go tool pprof` prints ("Duration:") and profile stores divide a
	 * profile's total by. 0: none. Other formats ignore it. */
	uint64_t duration_ns;
	size_t : 0;
};
#define perfspy_write_opts__last_field duration_ns

/*
 * Write the folder's stacks to @out in @opts->format (raw by default):
 *   raw: `frame;...;frame COUNT\n`, root first, lines sorted bytewise;
 *   flamegraph: one SVG document (frames narrower than 0.1 px of the
 *     1200 px image are left out, as flamegraph.pl's --minwidth does);
 *   speedscope: one JSON document (unit "none": weights are the counts);
 *   pprof: one gzipped profile.proto Profile (see PERFSPY_FORMAT_PPROF
 *     and the pprof fields of perfspy_write_opts).
 * Every format gives the same bytes for the same stacks. The caller owns
 * @out (it is not closed). Past its first 4 MB an output is written to
 * @out by a thread of the call's own, joined before it returns: @out must
 * not depend on the calling thread (a cookie stream with thread-local
 * state, say).
 * Returns 0, -EIO if a write failed, -ENOMEM, -EINVAL for an unknown
 * format, or -PERFSPY_E_OPTS.
 */
PERFSPY_API int perfspy_folder__write(const struct perfspy_folder *f,
				      FILE *out,
				      const struct perfspy_write_opts *opts);

/*
 * py-spy captures (`perfspy merge`; docs/pyspy-formats.md §1, §2.1).
 */
enum perfspy_capture_format {
	PERFSPY_CAPTURE_AUTO = 0,	/* by content: '{' is speedscope, else raw */
	PERFSPY_CAPTURE_RAW = 1,	/* folded stacks: py-spy --format raw, or
					 * perfspy convert's own output */
	PERFSPY_CAPTURE_SPEEDSCOPE = 2, /* py-spy --format speedscope */
};

struct perfspy_read_opts {
	size_t sz;
	/* Log sink, as in perfspy_open_opts. */
	perfspy_log_fn log_fn;
	void *log_ctx;
	int log_level;
	/* Name shown in messages (defaults to the path, or "<capture>"). */
	const char *display_name;
	/* enum perfspy_capture_format. */
	int format;
	/* speedscope: keep file names as recorded (py-spy writes full
	 * paths there) instead of py-spy's short form. */
	bool full_filenames;
	/* As in perfspy_open_opts: @log_level 0 means ERROR, not WARN. */
	bool log_level_set;
	/* perfspy_folder__read_pprof() (0.7): what the profile says of its
	 * frames' code, for a pprof writer (`perfspy combine`). Called once
	 * with @frame NULL for the profile's first Mapping (the main binary
	 * by pprof's convention), if it has one; then for each frame made
	 * from each Location: its text as the folder holds it (@len bytes),
	 * whether it is an inlined callee (not its Location's last Line),
	 * and its Location's Mapping's file name and build id as stored (""
	 * for none). A negative return ends the read with that error. NULL:
	 * not called. The other readers ignore it. */
	int (*pprof_frame)(void *ctx, const char *frame, size_t len, bool inlined,
			   const char *filename, const char *build_id);
	void *pprof_frame_ctx;
	size_t : 0;
};
#define perfspy_read_opts__last_field pprof_frame_ctx

/* What a read found (fields up to ->sz, which the caller sets). */
struct perfspy_read_stats {
	size_t sz;
	int format;		 /* the format read (enum perfspy_capture_format) */
	uint64_t samples;	 /* weight added to the folder */
	uint64_t stacks;	 /* stacks read (lines, samples, evented intervals) */
	uint64_t bad;		 /* malformed lines/samples/events, skipped */
	uint64_t thread_samples; /* weight of stacks with a `thread (...)` root */
	uint64_t native_samples; /* weight of stacks with a native frame below a
				  * Python frame (py-spy --native) */
	uint64_t duration_ns;	 /* pprof (0.7): the profile's duration_nanos, 0
				  * when it has none */
	size_t : 0;
};

/*
 * Add a py-spy capture to @f: the file @path, or when @path is NULL the
 * @len bytes at @buf (not NUL-terminated; they need not outlive the call).
 *
 * Raw: every variant py-spy has written (with or without line numbers,
 * `thread (TID): NAME` roots of any version (older `thread 0x7F.. ()` and
 * `thread 1234` are rewritten as `thread (ID)`), `process PID:"cmdline"`
 * frames whose command line holds ';', --native frames, co_name or
 * qualname names); frames are kept as written. Speedscope: sampled
 * profiles count one per sample when all weights are equal (py-spy), else
 * weight / smallest weight; evented profiles count nanoseconds; frames
 * become `name (short_file:line)` and each profile named `Thread TID
 * "NAME"` gets a `thread (TID): NAME` root.
 *
 * A malformed line or sample is skipped and counted (stats->bad), not an
 * error. @stats may be NULL.
 * Errors: -errno from reading @path, -ENOMEM, -EINVAL, -PERFSPY_E_OPTS,
 * -PERFSPY_E_CAPTURE (a perf.data file, a JSON array (chrometrace), JSON
 * that is not speedscope, or text in which no line is `frames COUNT`).
 * On an error @f may hold part of the capture.
 */
PERFSPY_API int perfspy_folder__read_pyspy(struct perfspy_folder *f,
					   const char *path, const void *buf,
					   size_t len,
					   const struct perfspy_read_opts *opts,
					   struct perfspy_read_stats *stats);

/*
 * Add folded stacks read from @fd to its end: py-spy raw, or what
 * perfspy_folder__write() writes (one `frame;...;frame COUNT` line per
 * stack), by the rules perfspy_folder__read_pyspy() reads a raw capture
 * with. The text is read a chunk at a time (memory holds the longest
 * line, not the text), so @fd may be a pipe; it is neither closed nor
 * rewound. opts->format must be PERFSPY_CAPTURE_AUTO or _RAW;
 * opts->display_name defaults to "<fd>". Errors as for
 * perfspy_folder__read_pyspy(), and -errno from read(2).
 */
PERFSPY_API int perfspy_folder__read_folded_fd(struct perfspy_folder *f, int fd,
					       const struct perfspy_read_opts *opts,
					       struct perfspy_read_stats *stats);

/*
 * pprof input and combining (issue 14; `perfspy combine`).
 *
 * Add a pprof profile (gzipped or not) to @f: the file @path, or when
 * @path is NULL the @len bytes at @buf. Frames are rebuilt as perfspy
 * writes them (`name (file:line)`, `name (library)`), a Location's inlined
 * Lines as several frames; labels tid/thread and pid/comm become
 * `thread (TID): NAME` and `process PID:"comm"` roots, other string
 * labels `[key=value]` roots. The value read is the default sample
 * type's, else the last. Only @opts' log and display_name are used;
 * @stats may be NULL (its format stays 0).
 * Errors: -errno from reading @path, -ENOMEM, -EINVAL, -PERFSPY_E_OPTS,
 * -PERFSPY_E_CAPTURE (not gzip/protobuf).
 */
PERFSPY_API int perfspy_folder__read_pprof(struct perfspy_folder *f,
					   const char *path, const void *buf,
					   size_t len,
					   const struct perfspy_read_opts *opts,
					   struct perfspy_read_stats *stats);

/*
 * Add every stack of @src to @dst, under the root frame @root when it is
 * not NULL (e.g. "[host=node1]", which the pprof writer turns into the
 * label host=node1). Totals add up exactly. Errors: -EINVAL (NULL, or
 * @dst == @src), -ENOMEM (@dst may then hold part of @src).
 */
PERFSPY_API int perfspy_folder__add_folder(struct perfspy_folder *dst,
					   const struct perfspy_folder *src,
					   const char *root);

/* What perfspy_merge() does with perf's `thread (TID): NAME` roots. */
enum perfspy_merge_roots {
	PERFSPY_MERGE_ROOTS_KEEP = 0,	   /* keep them as perf has them */
	PERFSPY_MERGE_ROOTS_LIKE_PYSPY = 1, /* keep them only when the py-spy
					     * capture has thread roots too */
	PERFSPY_MERGE_ROOTS_DROP = 2,	   /* drop them */
};

struct perfspy_merge_opts {
	size_t sz;
	/* Log sink, as in perfspy_open_opts. */
	perfspy_log_fn log_fn;
	void *log_ctx;
	int log_level;
	/* Match across threads even when both sides have decimal
	 * `thread (TID)` roots (by default a perf stack is matched to
	 * py-spy stacks of its own thread first). */
	bool ignore_threads;
	/* Do not join perf stacks without Python frames on native frames. */
	bool no_native_join;
	/* enum perfspy_merge_roots. */
	int thread_roots;
	/* Shortest skeleton suffix accepted as a match; 0 means 1. */
	uint32_t min_suffix;
	/* NULL-terminated fnmatch(3) patterns: frames whose file matches
	 * are Python frames too (scripts without a .py suffix). By default a
	 * frame `name (FILE[:LINE])` is Python when FILE ends in .py or .pyw
	 * or is a <pseudo-file> such as <frozen importlib._bootstrap>,
	 * <string> or <stdin>, as perfspy and py-spy name Python frames. */
	const char *const *python_files;
	/* NULL, or a folder (not @out) that receives, for each perf stack
	 * with Python frames and no match, its skeleton (`name (file)` per
	 * Python frame) with the stack's weight. */
	struct perfspy_folder *unmatched;
	/* As in perfspy_open_opts: @log_level 0 means ERROR, not WARN. */
	bool log_level_set;
	/*
	 * NULL, or NULL-terminated paths of Python source files or of
	 * directories (e.g. perfspy_session__python_source()'s and `.`).
	 * Frame file F is read from the one listed file whose path is F or
	 * ends in /F, else from DIR/F for the first listed directory that has
	 * it, else from F itself when absolute. A py-spy frame whose source
	 * is read is joined on the definition enclosing its line (first line
	 * and extent from the source), so that two functions sharing a name
	 * and file never meet, even when perf saw only one of them. Without
	 * a source it takes the perf definition of its name and file that
	 * starts last at or before its line.
	 */
	const char *const *sources;
	size_t : 0;
};
#define perfspy_merge_opts__last_field sources

/* Weights below are perf weights (samples, or periods). */
struct perfspy_merge_stats {
	size_t sz;		 /* set by the caller */
	uint64_t total;		 /* perf weight read = weight written to @out */
	uint64_t exact;		 /* whole Python skeleton matched */
	uint64_t suffix;	 /* only a shorter suffix matched (or perf's
				  * stack was cut short at the root) */
	uint64_t unmatched;	 /* Python frames, no match: kept as they are */
	uint64_t no_python;	 /* no Python frame at all */
	uint64_t native_matched; /* of no_python: joined on native frames */
	uint64_t other_thread;	 /* matched on other threads' py-spy stacks */
	uint64_t refined;	 /* of exact: narrowed by py-spy --native frames */
	uint64_t pyspy_total;	 /* py-spy weight */
	uint64_t pyspy_python;	 /* py-spy weight of stacks with Python frames */
	uint64_t pyspy_native;	 /* ... and native frames under the last one */
	bool thread_aware;	 /* matched per thread */
	/* Of exact + suffix: joined on function names only, as some matched
	 * perf Python frame had no definition line (its source was
	 * unreadable when converting, --nolineno, a lambda or comprehension):
	 * two functions sharing a name and file may have been crossed. */
	uint64_t name_only;
	size_t : 0;
};

/*
 * Merge a py-spy capture (@pyspy, e.g. from perfspy_folder__read_pyspy())
 * into perf stacks (@perf, from perfspy_session__convert() or a folded
 * file), adding the result to @out. Perf counts are the clock: every perf
 * stack's weight goes to @out exactly once, so the totals are equal.
 *
 * A perf stack's Python skeleton (its Python frames as function and
 * file: lines ignored, `Class.method` compared as `method`) is matched to
 * the py-spy stacks with the same skeleton; its weight is split over
 * their distinct lines of those frames in proportion to the py-spy
 * weights (largest remainder, exact), and the perf frames stay in place,
 * native frames included, with py-spy's lines in the Python frames. No
 * exact match: the longest suffix (leaf side) of the skeleton that py-spy
 * stacks end with; still none: the stack is kept as it is. Stacks with no
 * Python frame (interpreters without perf trampolines) are joined on the
 * native frames a py-spy --native capture has under its last Python
 * frame: the perf stack takes that py-spy stack's frames down to its last
 * Python frame and keeps its own frames from the matching native frame on.
 *
 * @stats may be NULL. The folders are only read (@out is written).
 * Errors: -EINVAL (NULL folders, @out equal to an input), -ENOMEM,
 * -PERFSPY_E_OPTS. On an error @out may hold part of the result.
 */
PERFSPY_API int perfspy_merge(const struct perfspy_folder *perf,
			      const struct perfspy_folder *pyspy,
			      const struct perfspy_merge_opts *opts,
			      struct perfspy_folder *out,
			      struct perfspy_merge_stats *stats);

/*
 * Report: where the CPU goes, by category, thread and innermost Python
 * frame, from a folder's stacks (`perfspy report`).
 *
 * Each stack gets one category. Its native tail is the frames below the
 * innermost Python frame (all frames when it has none; `thread (...)`
 * and `process ...` root frames are never part of it). An empty tail is
 * "Python code". Otherwise the rules are tried in order and the first
 * rule that matches the tail names the category; no match is "other
 * native". perfspy_report_default_rules() gives the built-in rules.
 *
 * Rules text, one rule a line ('#' starts a comment: a line's first
 * non-blank character, or one after a blank, so `kernel: kernel  # x`):
 *
 *	CATEGORY: [python] [leaf] KIND [PATTERN]
 *
 * CATEGORY is any text without ':'. KIND is one of
 *	func GLOB   the function part of a frame (before its last " (")
 *	lib GLOB    the file or library in a frame's last "(...)", without
 *	            its ":LINE"
 *	frame GLOB  the whole frame text
 *	kernel      any kernel frame (`... ([kernel.kallsyms])`)
 * GLOBs are fnmatch(3) patterns (*, ?, [...]; '\' quotes) running to the
 * end of the line or its comment (a '#' inside a pattern, `*#*`, is kept). A rule matches when any frame of the tail matches; a
 * `leaf` rule only looks at the innermost frame of the tail that is not
 * a kernel frame (or the innermost frame if all are); a `python` rule
 * only applies to stacks that have a Python frame. Function names are
 * matched without compiler clone suffixes (.lto_priv.N, .constprop.N,
 * .isra.N, .part.N, .cold, .llvm.N).
 */
struct perfspy_report;

struct perfspy_report_opts {
	size_t sz;
	/* Rules text (the format above); NULL means the built-in rules. */
	const char *rules;
	/* Name shown in messages about the rules (a file name). */
	const char *rules_name;
	/* Where messages go (a bad rule line); NULL drops them. */
	perfspy_log_fn log_fn;
	void *log_ctx;
	size_t : 0;
};
#define perfspy_report_opts__last_field log_ctx

/* The built-in rules text; static storage, never freed. */
PERFSPY_API const char *perfspy_report_default_rules(void);

/*
 * Categorize every stack of @f. On success *@out is a new report, freed
 * with perfspy_report__free(); it keeps no pointer into @f.
 * Errors: -PERFSPY_E_RULES (a bad rule line, logged with its number),
 * -PERFSPY_E_OPTS, -ENOMEM.
 */
PERFSPY_API int perfspy_report__new(const struct perfspy_folder *f,
				    const struct perfspy_report_opts *opts,
				    struct perfspy_report **out);

/* Free a report; NULL is accepted. */
PERFSPY_API void perfspy_report__free(struct perfspy_report *r);

/* One row of a report: a category, thread or Python frame. */
struct perfspy_report_row {
	size_t sz;
	const char *name; /* lives until perfspy_report__free() */
	uint64_t samples;
	size_t : 0;
};

/* All samples of the report. */
PERFSPY_API uint64_t perfspy_report__total(const struct perfspy_report *r);

/*
 * Fill @row (whose ->sz the caller sets) with category @idx: every
 * category the rules name plus "other native" and "Python code", by
 * samples (most first), ties in rule order. -ENOENT past the end.
 */
PERFSPY_API int perfspy_report__category(const struct perfspy_report *r,
					 uint32_t idx,
					 struct perfspy_report_row *row);

enum perfspy_report_by {
	PERFSPY_REPORT_BY_CATEGORY = 0,
	PERFSPY_REPORT_BY_THREAD = 1, /* thread names from `thread (TID): NAME` */
	PERFSPY_REPORT_BY_PYTHON = 2, /* innermost Python frame */
	PERFSPY_REPORT_BY_PROCESS = 3, /* `process PID:...` root frames */
	PERFSPY_REPORT_BY_TID = 4,     /* `thread (TID)...` root frames */
};

struct perfspy_report_write_opts {
	size_t sz;
	int by;		 /* enum perfspy_report_by: the text table's rows */
	unsigned top;	 /* entries per list; 0 means 5 */
	bool json;	 /* one JSON object instead of text */
	size_t : 0;
};
#define perfspy_report_write_opts__last_field json

/*
 * Write the report to @out (the caller owns it): a text table, or with
 * ->json one object holding at least "samples" (the total) and
 * "categories": [{"name", "samples", "share", "python", "native",
 * "threads", "syscalls"}], plus "threads" and "python" rows. Output is
 * deterministic. Returns 0, -EIO, -ENOMEM or -PERFSPY_E_OPTS.
 */
PERFSPY_API int perfspy_report__write(const struct perfspy_report *r,
				      FILE *out,
				      const struct perfspy_report_write_opts *opts);

/*
 * Symbolizer: frames for addresses whose maps the caller already knows,
 * named by the rules perfspy_session__convert() names them with (the
 * perf dlfilter plugin, plugin/perfspy_dlfilter.c: perf resolves each
 * callchain address to its binary and file offset). One stack at a time:
 * give its locations leaf first and get its frame texts root first, to
 * hand to perfspy_folder__add(). The kernel's build id (the first
 * PERFSPY_LOC_KERNEL location's) picks perf's saved kallsyms for it, as
 * the BUILD_ID feature does in a session. Not thread-safe.
 */
struct perfspy_symbolizer;

enum perfspy_location_kind {
	PERFSPY_LOC_UNKNOWN = 0, /* no map: `0x<addr> (?)`; with ->dso,
				  * `0x<addr> (basename of dso)` */
	PERFSPY_LOC_DSO = 1,	 /* ->offset in the ELF file ->dso */
	PERFSPY_LOC_KERNEL = 2,	 /* kernel address ->addr (kallsyms) */
	PERFSPY_LOC_SYMBOL = 3,	 /* JIT code named ->symbol: a CPython perf-map
				  * name `py::...` is a Python frame */
};

struct perfspy_location {
	/* sizeof(struct perfspy_location): also the stride of an array of
	 * them; bytes past the struct this library knows must be zero. */
	size_t sz;
	int kind;  /* enum perfspy_location_kind */
	/* The binary as recorded (its path; [vdso] and such too). */
	const char *dso;
	const uint8_t *build_id; /* NULL if unknown */
	size_t build_id_size;
	/* File offset of the address in ->dso: addr - map start + pgoff. */
	uint64_t offset;
	/* The runtime address. */
	uint64_t addr;
	/* PERFSPY_LOC_SYMBOL: the JIT symbol's name. */
	const char *symbol;
	/* A return address (every callchain entry after the first of its
	 * user or kernel part): lines and inlines are looked up at the
	 * call instruction. */
	bool is_return;
	size_t : 0;
};
#define perfspy_location__last_field is_return

/*
 * A symbolizer with @opts' binary lookup rules and log (symfs,
 * buildid_dir, kallsyms, log_fn; other fields are ignored) and @copts'
 * frame naming (no_kernel, keep_interpreter, python_only, qualname,
 * no_lineno, full_filenames; other fields are ignored). Either may be
 * NULL. Free with perfspy_symbolizer__free().
 * Errors: -PERFSPY_E_OPTS, -ENOMEM.
 */
PERFSPY_API int perfspy_symbolizer__new(const struct perfspy_open_opts *opts,
					const struct perfspy_convert_opts *copts,
					struct perfspy_symbolizer **out);

/* Free; NULL is accepted. */
PERFSPY_API void perfspy_symbolizer__free(struct perfspy_symbolizer *s);

/*
 * The frames of one stack: @locs[0..@nr) leaf first (the array's stride
 * is locs[0].sz, every element of one size). *@frames gets the frame
 * texts root first (inlined functions as frames of their own, Python
 * frames named from perf-map names, interpreter frames dropped from
 * stacks that have Python frames, as perfspy_session__convert() does)
 * and *@nr_frames their number. The array is valid until the next call;
 * the texts until perfspy_symbolizer__free().
 * Errors: -EINVAL, -PERFSPY_E_OPTS, -ENOMEM.
 */
PERFSPY_API int perfspy_symbolizer__stack(struct perfspy_symbolizer *s,
					  const struct perfspy_location *locs,
					  size_t nr, const char *const **frames,
					  size_t *nr_frames);

/* Counters so far, as perfspy_session__stats() gives them (frames,
 * frames_unknown, frames_no_map, frames_python, frames_interpreter). */
PERFSPY_API int perfspy_symbolizer__stats(const struct perfspy_symbolizer *s,
					  struct perfspy_stats *stats);

/* Issue 15: perfspy_session__frame_lib() for the frames this symbolizer
 * named (for perfspy_write_opts.frame_lib, so the plugin's flame graph
 * colours them as convert's does). */
PERFSPY_API const char *perfspy_symbolizer__frame_lib(const struct perfspy_symbolizer *s,
						      const char *frame, size_t len);

/* 0.7: perfspy_session__frame_inlined() and perfspy_session__dso() for
 * the frames and binaries this symbolizer named (for pprof's inlined
 * Lines and Mappings: the plugin's pprof output, as convert's). */
PERFSPY_API bool perfspy_symbolizer__frame_inlined(const struct perfspy_symbolizer *s,
						   const char *frame, size_t len);
PERFSPY_API int perfspy_symbolizer__dso(const struct perfspy_symbolizer *s, uint32_t idx,
					struct perfspy_dso *d);
/* 0.7: the program most stacks ran so far, for pprof's main binary: per
 * stack the binary of its outermost location that is no shared library
 * (`main`'s, a thread function's; as the path was given), ties to the
 * first path in byte order. NULL before any such stack. A caller that
 * knows the processes' images (perfspy_session) need not guess. */
PERFSPY_API const char *perfspy_symbolizer__program(const struct perfspy_symbolizer *s);

/*
 * Live recording (`perfspy record`): sample a process through libperf
 * (perf_event_open, per-CPU ring buffers) and hand the records over as a
 * pipe-layout perf.data stream that perfspy_session__open_fd() reads as it
 * arrives, so a recording of any length holds only what the pipe and the
 * ring buffers hold.
 *
 *	struct perfspy_record *r;
 *	PERFSPY_OPTS(perfspy_record_opts, ro, .pid = 1234, .duration_ms = 45000);
 *	int err = perfspy_record__start(&ro, &r);
 *	if (!err)
 *		err = perfspy_session__open_fd(perfspy_record__fd(r), NULL, &s);
 *	if (!err)
 *		err = perfspy_session__convert(s, &co, f);  (returns at the end)
 *	perfspy_record__finish(r);
 *	perfspy_session__close(s);
 *	perfspy_record__free(r);
 *
 * The event is cpu-clock at @rate Hz (fixed period 1/rate s of CPU time,
 * per thread) with what `perf record --call-graph dwarf` samples: the
 * kernel callchain, user registers and a user stack dump of @stack_size
 * bytes; mmap, comm and task records; inherit, so threads and child
 * processes created later are followed.
 */
struct perfspy_record;

struct perfspy_record_opts {
	size_t sz;
	/* Log sink, as in perfspy_open_opts. */
	perfspy_log_fn log_fn;
	void *log_ctx;
	int log_level;
	/* Attach to this running process (its threads from /proc/PID/task,
	 * its mappings and thread names synthesized from /proc), or ... */
	int pid;
	/* ... launch this command (NULL-terminated; argv[0] searched in
	 * PATH). It runs with PYTHONPERFSUPPORT=1 added to the environment
	 * (unless set already, or @no_perf_map_env) and is sampled from its
	 * exec on. A command still running when the recording stops gets
	 * SIGTERM (SIGKILL 2 s later) and is reaped. */
	const char *const *argv;
	/* Samples per second of CPU time per thread; 0 means 100. */
	uint32_t rate;
	/* User stack bytes copied per sample (multiple of 8, at most
	 * 65528); 0 means 65528. */
	uint32_t stack_size;
	/* Ring buffer data pages per CPU (a power of 2); 0 means 1024 (4 MiB)
	 * while all CPUs' buffers stay within 64 MiB, else fewer (at least
	 * 128), and fewer still when the locked-memory limit says so
	 * (perf_event_mlock_kb). */
	uint32_t mmap_pages;
	/* Stop after this long; 0 means when the target exits or
	 * perfspy_record__stop() is called. */
	uint64_t duration_ms;
	/* Do not add PYTHONPERFSUPPORT=1 to a launched command. */
	bool no_perf_map_env;
	/* Also write the stream to @save_fd (a pipe-layout perf.data that
	 * perf report/script -i and perfspy convert -i read). The caller
	 * owns the fd. */
	bool save;
	int save_fd;
	/* issue 10 (docs/top.md §3): also a context-switches event, sampled
	 * (period 1, stacks as the clock's) in each thread that leaves the
	 * CPU, and switch records (PERF_RECORD_SWITCH) on the clock event,
	 * for perfspy_convert_opts.idle. */
	bool idle;
	size_t : 0;
};
#define perfspy_record_opts__last_field idle

/*
 * Open the events, synthesize what exists and start the capture thread.
 * On success *@out is a new recording: read perfspy_record__fd() to its
 * end, then perfspy_record__finish() and perfspy_record__free().
 * Kernel frames are left out (logged at info) when perf_event_paranoid
 * allows only user-space sampling.
 * Errors: -EACCES or -EPERM (perf_event_paranoid, no CAP_PERFMON, a
 * container without perf_event access: the caller should say so), -ESRCH
 * (no such process), -ENOENT/-EACCES.. from exec of the command, -EINVAL
 * (neither or both of pid and argv, a bad rate or stack size),
 * -EMFILE, -ENOMEM, -PERFSPY_E_OPTS.
 */
PERFSPY_API int perfspy_record__start(const struct perfspy_record_opts *opts,
				      struct perfspy_record **out);

/* The read end of the stream (owned by @r; closed by __free()). */
PERFSPY_API int perfspy_record__fd(const struct perfspy_record *r);

/*
 * Ask the recording to stop: the capture thread drains the ring buffers,
 * ends the stream (EOF on the fd) and returns. Returns at once; safe to
 * call from a signal handler and from any thread, more than once.
 */
PERFSPY_API void perfspy_record__stop(struct perfspy_record *r);

/*
 * Stop (if not yet), wait for the capture thread and for a launched
 * command. Call it once the stream has been read to its end (or is no
 * longer read: __free() also works then). Returns 0, or the error that
 * ended the capture early (-EPIPE: the reader closed the stream, -errno
 * from writing @save_fd or from the ring buffers).
 */
PERFSPY_API int perfspy_record__finish(struct perfspy_record *r);

/* What a recording did (fields up to ->sz, which the caller sets). */
struct perfspy_record_stats {
	size_t sz;
	int pid;		/* the attached or launched process */
	uint32_t rate;		/* requested Hz */
	uint32_t nr_cpus;	/* ring buffers */
	uint32_t mmap_pages;	/* data pages per ring buffer */
	uint32_t nr_threads;	/* threads attached at the start */
	bool kernel;		/* kernel frames sampled */
	uint64_t samples;	/* sample records read */
	uint64_t lost;		/* samples lost to full ring buffers */
	uint64_t lost_records;	/* PERF_RECORD_LOST records */
	uint64_t bytes;		/* stream bytes written */
	uint64_t duration_ns;	/* from start to the end of sampling */
	bool exited;		/* the launched command ended (status valid) */
	int exit_status;	/* its wait(2) status */
	size_t : 0;
};

/* Fill @st; valid from start on, final after __finish(). */
PERFSPY_API int perfspy_record__stats(const struct perfspy_record *r,
				      struct perfspy_record_stats *st);

/*
 * Time thread @tid of the target process spent on a CPU while it was
 * sampled, in ns (/proc/PID/task/TID/schedstat when sampling started and
 * ended; a thread created meanwhile counts from its start, one that ended
 * up to its last reading, at most about 0.1 s before its end). Samples / this
 * is the rate the thread got per CPU second, which is what --rate asks
 * for. Valid after __finish(). -ENOENT for a thread never seen (another
 * process's, with inherit), -EINVAL.
 */
PERFSPY_API int perfspy_record__thread_cpu(const struct perfspy_record *r,
					   int tid, uint64_t *ns);

/* Stop, close the stream and free; NULL is accepted. */
PERFSPY_API void perfspy_record__free(struct perfspy_record *r);

/*
 * issue 10: `perfspy top`'s table (docs/top.md). Fed a folder that grows
 * (perfspy_session__convert() on a live stream, read from its progress
 * callback), each perfspy_top__update() takes what the folder gained
 * since the previous one: the interval. Rows are what py-spy top shows
 * and more: the innermost Python frame with the native leaf that burns
 * the time under it (`forward (model.py:40) -> cudaLaunchKernel`); a
 * stack with no Python frame gives its native leaf `func (lib)`.
 * Own: the row is the stack's leaf row; total: the row is on the stack
 * (each Python frame once per stack). Counts are folder weights.
 */
struct perfspy_top;

enum perfspy_top_mode {
	PERFSPY_TOP_MIXED = 0,	/* Python frames, native leaf under the last */
	PERFSPY_TOP_NATIVE = 1, /* native (and kernel) frames only */
	PERFSPY_TOP_PYTHON = 2, /* Python frames only */
};

struct perfspy_top_opts {
	size_t sz;
	int mode; /* enum perfspy_top_mode */
	/* One row per thread and function, from `thread (TID)...` roots
	 * (convert with ->threads); without roots the tid is 0. */
	bool threads;
	size_t : 0;
};
#define perfspy_top_opts__last_field threads

struct perfspy_top_row {
	size_t sz;
	const char *name; /* lives until perfspy_top__free() */
	int tid;	  /* with ->threads, else 0 */
	const char *thread_name; /* NULL if none */
	uint64_t own, total;	 /* in the last interval */
	uint64_t own_all, total_all; /* since the first update */
	size_t : 0;
};

struct perfspy_top_stats {
	size_t sz;
	uint64_t total;	    /* weight of the last interval */
	uint64_t total_all; /* since the first update */
	uint32_t nr_threads; /* threads (roots) with weight in the interval */
	size_t : 0;
};

PERFSPY_API int perfspy_top__new(const struct perfspy_top_opts *opts,
				 struct perfspy_top **out);
/* Free; NULL is accepted. */
PERFSPY_API void perfspy_top__free(struct perfspy_top *t);
/* Take the interval: what @f gained since the last update (the same
 * folder every time; stacks only grow). -ENOMEM leaves @t unusable. */
PERFSPY_API int perfspy_top__update(struct perfspy_top *t,
				    const struct perfspy_folder *f);
/* Rows, ordered by own then total in the interval, then by own and
 * total since the start, then by name and tid: -ENOENT past the end. */
PERFSPY_API size_t perfspy_top__nr_rows(const struct perfspy_top *t);
PERFSPY_API int perfspy_top__row(const struct perfspy_top *t, size_t idx,
				 struct perfspy_top_row *row);
PERFSPY_API int perfspy_top__stats(const struct perfspy_top *t,
				   struct perfspy_top_stats *st);
/* The interval's stacks as a folder (for perfspy_report__new()); owned
 * by @t, valid until the next update. */
PERFSPY_API const struct perfspy_folder *
perfspy_top__interval(const struct perfspy_top *t);

#ifdef __cplusplus
}
#endif

#endif
