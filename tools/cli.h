/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared pieces of the perfspy command-line front end (cli.c): logging
 * to stderr, opening sessions from options, safe output files, loading
 * inputs. perfspy.c dispatches to the cmd_*.c subcommands, which use
 * these and the library, never one another.
 */
#ifndef PERFSPY_CLI_H
#define PERFSPY_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include "perfspy.h"

struct cli_common {
	const char *symfs;
	const char *buildid_dir;
	const char *perf_map_dir;
	const char *kallsyms; /* --kallsyms FILE */
	bool no_debuginfod; /* never ask $DEBUGINFOD_URLS servers */
	bool quiet;
	int verbose;
};

extern const char *cli_prog; /* "perfspy" */

/* heapwarm.c: warm the heap from a second thread while a batch command
 * runs (docs/design.md §6.5); stopped at exit. */
void cli_heapwarm_start(void);
/* The conversion ahead will grow a large heap (cli_load_input): its
 * huge pages come now, not after HEAP_THP_AFTER_MB (§6.15). */
void cli_heapwarm_big(void);

void cli_log(void *ctx, int level, const char *msg);
void cli_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Print the library's held error message, if any (cli.c: one cause,
 * one line). */
void cli_log_flush(void);

/* A failure of code @err on @name, in one line: the library's held
 * message if it logged one, else "@name: strerror"; @extra (or NULL) is
 * appended. */
void cli_fail(const char *name, int err, const char *extra);

/* cli_fail(), with the file's events named for -PERFSPY_E_NO_EVENT. */
void cli_convert_error(struct perfspy_session *s, const char *name, int err);

/* A getopt error (@c '?' or ':'; getopt strings start with ':' and
 * opterr is 0) in one line with `see 'perfspy CMD --help'`; returns 2. */
int cli_usage_error(const char *cmd, int c, char **argv);

/* After the options: a positional FILE is the input unless -i gave it
 * (@in_set); anything more is an error (printed, -1). */
int cli_input_arg(const char *cmd, int argc, char **argv, const char **in, bool in_set);

/* Warn about a --symfs, --buildid-dir or --perf-map-dir that is no
 * directory. */
void cli_check_dirs(const struct cli_common *c);

/* The error for --pid/--tid/--comm matching no sample of @s: one line
 * naming what the file holds (pids and thread names with their samples,
 * the five largest). */
void cli_filter_empty(struct perfspy_session *s, const char *name,
		      const struct perfspy_convert_opts *co);

/* The library log level the common options ask for (-q, -v, -vv). */
int cli_log_level(const struct cli_common *c);

/* -j's default for a recording of @info (its session's; NULL: not
 * known): the online CPUs but one (at most 256), left to the warming
 * threads, for a recording with user stack dumps (--call-graph dwarf),
 * where the split pays; 1 for frame-pointer callchains, where one thread
 * measured faster (docs/design.md §6.4, §6.5). */
int cli_default_jobs(const struct perfspy_info *info);

/* A decimal option value in [@min, @max]; -1 (message printed) if not. */
int cli_parse_num(const char *s, const char *what, long min, long max, long *out);

/* Open @path with the common options; prints the error and returns
 * NULL on failure. */
struct perfspy_session *cli_open(const char *path, const struct cli_common *c);

/* Progress callback printing bytes done, rate and ETA to a terminal. */
int cli_progress(void *ctx, uint64_t done, uint64_t total);
void cli_progress_end(void);

/*
 * Output files are written to a temporary file in the target directory
 * and renamed over the target only on success, so a failed or
 * interrupted run never leaves a partial or half-overwritten file.
 * "-" or NULL means standard output. A symlink is written through (its
 * target is replaced); the file gets 0666 & ~umask, or the mode of the
 * file it replaces.
 */
struct cli_out {
	FILE *f;
	char *path;
	char *tmp;
	bool direct; /* a device or FIFO written in place */
};

int cli_out_open(struct cli_out *o, const char *path);
int cli_out_commit(struct cli_out *o); /* 0 or -1 (message printed) */
void cli_out_abort(struct cli_out *o);

/*
 * The whole output step: cli_out_open(@path), @write_fn(@ctx, FILE)
 * (0 or a negative perfspy error code), then commit, or abort with the
 * error printed for @name. 0, or -1 with the message printed (no file
 * left behind).
 */
int cli_write_output(const char *path, const char *name,
		     int (*write_fn)(void *ctx, FILE *f), void *ctx);

/* cli_write_output() of perfspy_folder__write(@f, FILE, @wo). */
int cli_write_folder(const char *path, const char *name, struct perfspy_folder *f,
		     const struct perfspy_write_opts *wo);

/* All of @fd into *@buf (malloc'ed, *@len bytes); 0, or -1 with the
 * message printed (@name names the input). */
int cli_read_fd(int fd, const char *name, char **buf, size_t *len);

/* SIGINT/SIGTERM: remove the pending temporary file and exit 130. */
void cli_install_signals(void);

/*
 * Fill @f from @path: perf.data (file or '-' pipe, told by its magic)
 * through a session converted with @co (*@sp is set; the caller closes
 * it), or folded stacks `frame;...;frame COUNT` read by the library's
 * py-spy raw reader (*@sp stays NULL).
 * Returns 0, or -1 with the message printed.
 */
int cli_load_input(const char *path, const struct cli_common *c,
		   const struct perfspy_convert_opts *co,
		   struct perfspy_folder *f, struct perfspy_session **sp);

/* One key (a pid, or a name: a thread name, a program) and its samples,
 * for cli_filter_empty(), the main binary of pprof output (convert's,
 * combine's) and cli_top_name(). */
struct held_key {
	int pid;
	const char *name;
	uint64_t n;
};

/* The name of @keys' key with the most samples, ties to the lower pid,
 * then the first name in byte order; NULL for none. Sorts @keys. */
const char *cli_top_name(struct held_key *keys, size_t n);

/* pprof writing from a session (convert, record): Mappings from its DSOs
 * (first the program of the samples that @pid, @tid and @comm keep, as
 * perfspy_convert_opts filters them), inlined frames as Lines; free the
 * arrays with cli_pprof_opts_free(). */
void cli_pprof_opts(struct perfspy_session *s, int pid, int tid, const char *comm,
		    struct perfspy_write_opts *wo);
void cli_pprof_opts_free(struct perfspy_write_opts *wo);
/* The flame graph's library colours for frames that name a source file
 * (perfspy_write_opts.frame_lib, from the session). */
void cli_svg_opts(struct perfspy_session *s, struct perfspy_write_opts *wo);

int cmd_convert(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_combine(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_top(int argc, char **argv);

/* perfspy_record__start(@ro) for record and top: on failure one message
 * (`cannot VERB 'CMD': ...`, no such pid, or not allowed with the fixes)
 * and -1. */
int cli_record_start(const struct perfspy_record_opts *ro, const char *verb,
		     struct perfspy_record **rec);

#endif
