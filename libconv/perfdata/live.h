/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Live capture through libperf (perfspy_record__*, include/perfspy.h):
 * the pipe-layout perf.data stream it writes, built from pieces that can
 * be tested without perf_event_open.
 *
 * The stream is what `perf record -o -` writes (reference/
 * docs/perf-data-format.md §1; perf's Documentation/perf.data-file-format.txt
 * "Pipe-mode file format"): a 16-byte header, one HEADER_ATTR, records
 * synthesized from /proc (as perf's synthetic-events.c does) with time 0,
 * then the ring-buffer records as the kernel wrote them, with a
 * FINISHED_ROUND after each pass over all ring buffers.
 */
#ifndef PERFSPY_LIVE_H
#define PERFSPY_LIVE_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <sys/types.h>

#include "common/util.h"

/*
 * The user registers a capture samples for DWARF unwinding on machine
 * @machine (`uname -m`): perf's PERF_REGS_MASK, x86-64 0xff0fff (ax..r15
 * without the segment registers) and aarch64 x0-x30, sp, pc (0x1ffffffff)
 * without VG, which the kernel refuses for software events such as
 * cpu-clock on SVE CPUs (docs/arm64.md §2.1); 0 for another machine.
 */
u64 live_regs_user_mask(const char *machine);

/* Default ring-buffer pages per CPU for @rate Hz with @stack-byte dumps,
 * @page-byte pages and @ncpu buffers (live.c default_pages). */
u32 live_ring_pages(u32 rate, u32 stack, long page, int ncpu);

/* A growable byte buffer the stream is assembled in. */
struct live_buf {
	u8 *p;
	size_t len, cap;
};

int live_put(struct live_buf *b, const void *p, size_t n);
void live_buf_free(struct live_buf *b);

/* Pipe header: magic "PERFILE2" and size 16 (perf_pipe_file_header). */
int live_put_header(struct live_buf *b);

/* HEADER_ATTR of @attr (attr->size bytes) with no ids: one event, and
 * samples carry no id, so every sample is this event's. */
int live_put_attr(struct live_buf *b, const struct perf_event_attr *attr);
/* The same with the ids of the event's samples (HEADER_ATTR's id list). */
int live_put_attr_ids(struct live_buf *b, const struct perf_event_attr *attr,
		      const u64 *ids, u32 nr);

/* PERF_RECORD_FINISHED_ROUND (header only). */
int live_put_round(struct live_buf *b);

/*
 * Records for @pid as perf synthesizes them for an attached process
 * (synthetic-events.c perf_event__synthesize_thread): COMM per thread of
 * /proc/PID/task, FORK for each thread but the leader, and MMAP2 per
 * executable or readable mapping of @maps_text (the text of
 * /proc/PID/maps; data ones marked PERF_RECORD_MISC_MMAP_DATA, anonymous
 * ones named "//anon"; a regular ELF file's with its build id,
 * PERF_RECORD_MISC_MMAP_BUILD_ID, as live_map_build_id() reads it for
 * @pid). @id_size is the sample_id trailer size the attr
 * implies (live_id_size), filled with pid/tid and time 0.
 * Returns 0 or -ENOMEM.
 */
int live_put_maps(struct live_buf *b, pid_t pid, const char *maps_text,
		  size_t len, u32 id_size);
int live_put_comm(struct live_buf *b, pid_t pid, pid_t tid, const char *comm,
		  u32 id_size);
int live_put_fork(struct live_buf *b, pid_t pid, pid_t tid, u32 id_size);

/* The kernel map perf synthesizes: PERF_RECORD_MMAP, pid -1, named
 * "[kernel.kallsyms]_text", pgoff = start = address of _text. */
int live_put_kernel_mmap(struct live_buf *b, u64 text, u64 etext, u32 id_size);

/*
 * Append the PERF_RECORD_SAMPLE @rec with its user stack dump cut to the
 * bytes the kernel filled (dyn_size, rounded up to 8): the kernel always
 * writes the requested size (65528 by default), while a Python thread's
 * stack is a few KiB deep, so this shrinks what goes through the pipe and
 * into --save files several times over. Both perf's parser and ours take
 * the size from the record (perf_evsel__parse_sample; record.c). Records
 * this cannot walk are copied unchanged. @nr_regs is the number of bits
 * set in sample_regs_user. Returns 0 or -ENOMEM.
 */
int live_put_sample(struct live_buf *b, const void *rec, u64 sample_type,
		    u32 nr_regs);

/* Bytes of the sample_id trailer for @sample_type (TID, TIME, ID,
 * STREAM_ID, CPU, IDENTIFIER; perf_evsel__calc_id_pos's order). */
u32 live_id_size(u64 sample_type);

/* ---- /proc and launching (live_proc.c) ---- */

/* The whole of a small /proc file, NUL-terminated; NULL if unreadable.
 * The caller frees it. */
char *live_read_text(const char *path, size_t *len);

/* The longest build id a MMAP2 record holds (perf_event.h). */
#define LIVE_BUILD_ID_MAX 20

/*
 * The GNU build id of the file a /proc/PID/maps line of @pid names
 * (@start-@end, @path, device @maj:@min, inode @ino), as perf's
 * --buildid-mmap synthesis reads it (synthetic-events.c
 * perf_record_mmap2__read_build_id): through /proc/PID/map_files, else by
 * name under /proc/PID/root, else by name. Only a regular ELF file whose
 * device and inode are the mapping's counts. Its size (at most
 * LIVE_BUILD_ID_MAX), or 0 when there is none to be had.
 */
size_t live_map_build_id(pid_t pid, u64 start, u64 end, const char *path,
			 u32 maj, u32 min, u64 ino, u8 out[LIVE_BUILD_ID_MAX]);

/* Thread ids of @pid, sorted ascending (freed by the caller); -ESRCH if
 * the process is gone, -ENOMEM. */
int live_list_tids(pid_t pid, pid_t **out, int *nr);

/* Whether @pid now has a thread not among the @nr sorted @tids. */
bool live_new_threads(pid_t pid, const pid_t *tids, int nr);

/* _text and _etext from /proc/kallsyms; 0 when hidden (kptr_restrict). */
void live_kernel_text(u64 *text, u64 *etext);

/* On-CPU time of one thread (/proc/PID/task/TID/schedstat, first field). */
struct live_cpu {
	pid_t tid;
	u64 ns;
};

/* Note every thread of @pid in *@arr (grown as needed): a thread seen
 * before has its entry updated, one gone keeps its last value. */
void live_snap_cpu(pid_t pid, struct live_cpu **arr, size_t *nr, size_t *cap);

/* environ plus PYTHONPERFSUPPORT=1 (when @add and not set already); the
 * array is the caller's to free, its strings are not. */
char **live_child_env(bool add);

/*
 * Fork a child that waits for live_release_child() and then execs @argv
 * with @env. *@child is its pid, *@go_fd the pipe it waits on (closing it
 * unreleased makes the child exit 127 without exec), *@errfd where an
 * exec failure comes back. Returns 0 or -errno.
 */
int live_fork_child(const char *const *argv, char **env, pid_t *child,
		    int *go_fd, int *errfd);

/* Let the child exec (closes *@go_fd); -errno if its exec failed. */
int live_release_child(int *go_fd, int errfd);

#endif
