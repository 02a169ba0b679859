/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Tracing data: the blob perf stores for tracepoint and uprobe events
 * (HEADER_TRACING_DATA feature section 1 in file mode; the payload that
 * follows a PERF_RECORD_HEADER_TRACING_DATA record in pipe mode). It
 * carries the tracefs format file of every recorded event, which is the
 * only place that says that attr.config 0x174 is `sched:sched_switch` or
 * that 0x916 is `probe_libfoo:foo` (docs/perf-data-format.md §6.1;
 * writer perf util/trace-event-info.c, reader util/trace-event-read.c).
 *
 * The container is walked here with bounds checks; the event formats go
 * to libtraceevent, whose handle is kept so that later stages can decode
 * the RAW field of tracepoint samples with it.
 *
 * libtraceevent caveats (1.7.1, the Debian 12 version):
 *  - It is not safe on malformed formats (NULL dereferences, double
 *    frees and leaks in its parsers, some unfixed in 1.8.4). It is
 *    therefore given a rebuilt text per event: the name and ID lines as
 *    we read them, field lines only after each has passed our own check
 *    (the shapes tracefs writes; see tracing_check.c tr_decl_ok()), and an
 *    EMPTY print format instead of the real one. Field decoding works;
 *    tep_print_event() prints no event-specific text. A format that
 *    fails the check stays out of the handle but keeps its name.
 *  - Its log level is process-global and the only documented control is
 *    tep_set_loglevel() (libtraceevent-log.txt; the default is
 *    TEP_LOG_CRITICAL). trace_info_parse() calls
 *    tep_set_loglevel(TEP_LOG_NONE) so that the library never prints,
 *    which also silences libtraceevent for the rest of the process: an
 *    application that wants libtraceevent's own messages must set its
 *    level again after parsing. Overriding the weak tep_vprint() is not
 *    an option for a shared library (it would capture the host's
 *    messages too).
 *  - Its parser keeps a few flags in statics (event-parse.c
 *    is_flag_field, is_symbolic_field, show_warning), so parsing is
 *    serialised inside this module with a lock; other libtraceevent users
 *    in the same process are not covered by that lock.
 *  - No plugins are loaded: tep_load_plugins() would dlopen() system
 *    plugins, which may print.
 */
#ifndef PERFSPY_TRACING_H
#define PERFSPY_TRACING_H

#include <stddef.h>

#include "common/util.h"

struct tep_handle;

/* Parsed tracing data: event names by tracefs id, plus the tep handle. */
struct trace_info;

/*
 * Parse a perf tracing-data blob. Layout (docs/perf-data-format.md §6.1,
 * util/trace-event-info.c tracing_data_header()):
 *
 *	"\x17\x08\x44" "tracing"  version string (NUL-terminated, "0.6")
 *	u8 file_is_bigendian  u8 sizeof(long)  u32 page_size
 *	"header_page\0" u64 size, data    "header_event\0" u64 size, data
 *	u32 nr_ftrace_formats { u64 size, format }
 *	u32 nr_systems { system\0, u32 nr_events { u64 size, format } }
 *	u32 kallsyms_size, data   u32 printk_size, data
 *	u64 cmdlines_size, data   (only when version >= 0.6)
 *
 * Numbers are in the byte order the endian byte names; both orders are
 * accepted. A format that our check or libtraceevent rejects costs that
 * event's fields, not the blob: it is counted in trace_info_stats, and
 * its name is still taken from the `name:` and `ID:` lines of the format
 * text when those are readable. Only a malformed container (bad magic, a
 * length that runs past @size, an endian byte other than 0 or 1, a long
 * size other than 4 or 8, a zero page size) fails the whole blob.
 * Malformed printk-format and saved-cmdline lines are skipped and
 * counted.
 *
 * @data, @size: the blob; never read past @size. The blob need not be
 *	aligned or NUL-terminated, and is not referenced after return.
 * @log: sink for debug messages (NULL drops them).
 * @out: receives a new trace_info on success (free with
 *	trace_info_free()); NULL on failure.
 * @used: receives the number of bytes the blob occupies (0 on failure).
 *	Bytes after that are not part of it: in pipe mode the record size
 *	is ALIGN8(*used) (header.c perf_event__process_tracing_data()).
 *
 * Returns 0, -ENOMEM, or -PERFSPY_E_FORMAT for a malformed container.
 * libtraceevent's own failures never become -ENOMEM: its parser reports
 * an unreadable event name as TEP_ERRNO__MEM_ALLOC_FAILED, so every
 * error it returns is counted as a skipped format.
 */
int trace_info_parse(const void *data, size_t size, const struct log_sink *log,
		     struct trace_info **out, size_t *used);

/*
 * "system:name" for a tracepoint event whose attr.config (the tracefs
 * event id) is @config, as perf prints it ("sched:sched_switch",
 * "probe_libfoo:foo__return"), or NULL when the blob has no such event.
 * Names from libtraceevent win; the format-text fallback fills the gaps.
 * The string belongs to @ti and lives until trace_info_free(). Safe to
 * call from several threads at once (it reads a table built at parse
 * time and does not touch the tep handle).
 */
const char *trace_info_event_name(const struct trace_info *ti, u64 config);

/*
 * The libtraceevent handle holding the parsed formats, for decoding RAW
 * sample data (tep_find_event(tep, (int)config), tep_get_field_val(),
 * tep_print_event(), which prints no event-specific text because the
 * print formats are withheld). Owned by @ti, valid until
 * trace_info_free(). An event whose field list failed part-way is
 * present with TEP_EVENT_FL_FAILED set in event->flags: its name and id
 * are right, its fields may be incomplete. Printk formats and saved
 * cmdlines are registered (tep_register_print_string(),
 * tep_register_comm()); kallsyms are skipped, as perf 6.1 does.
 * libtraceevent caches lookups in the handle, so callers using it from
 * several threads must serialise.
 */
struct tep_handle *trace_info_tep(const struct trace_info *ti);

/* What parsing found; every field counts formats, names or lines. */
struct trace_info_stats {
	u32 nr_formats;	    /* ftrace and system formats in the blob */
	u32 nr_rejected;    /* kept from libtraceevent by our text check */
	u32 nr_tep_failed;  /* formats libtraceevent rejected outright */
	u32 nr_tep_partial; /* formats it kept with TEP_EVENT_FL_FAILED */
	u32 nr_fallback;    /* names taken from our own name:/ID: scan */
	u32 nr_names;	    /* distinct event ids with a name */
	u32 nr_bad_lines;   /* printk/cmdline lines skipped as malformed */
};

/* Fill @st from @ti. */
void trace_info_get_stats(const struct trace_info *ti,
			  struct trace_info_stats *st);

/* The sched:sched_switch fields --idle needs (issue 10, docs/top.md §3). */
struct trace_switch {
	u64 prev_state; /* the kernel's report state: 0 running, 0x100 preempted */
	u32 prev_pid, next_pid;
};

/*
 * Decode the RAW data of a sched_switch sample of event @config (its
 * tracefs id) with the format the blob carried: 0, or -ENOENT when the
 * blob has no such event or the format lacks one of the fields, -EINVAL
 * when @raw is too short for them. Serialised with the parser's lock
 * (libtraceevent caches lookups in its handle).
 */
int trace_sched_switch(const struct trace_info *ti, u64 config, const void *raw,
		       size_t size, struct trace_switch *out);

/* Free @ti and its tep handle; NULL is accepted. */
void trace_info_free(struct trace_info *ti);

#endif
