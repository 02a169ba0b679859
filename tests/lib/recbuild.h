/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Build perf.data images in memory for unit tests: a growing byte buffer
 * plus helpers that append records with the layouts of
 * docs/perf-data-format.md, and finishers that wrap the records in
 * a file-mode header (attrs, data, feature index) or a pipe header.
 */
#ifndef PERFSPY_RECBUILD_H
#define PERFSPY_RECBUILD_H

#include <linux/perf_event.h>
#include <stddef.h>
#include <stdint.h>

struct rb {
	unsigned char *p;
	size_t len, cap;
};

void rb_put(struct rb *b, const void *p, size_t n);
void rb_u64(struct rb *b, uint64_t v);
void rb_u32(struct rb *b, uint32_t v);
void rb_free(struct rb *b);

/* The attr every builder below assumes: cpu-clock, sample_type
 * IP|TID|TIME|CALLCHAIN|PERIOD, sample_id_all (id_hdr: TID, TIME). */
void rb_default_attr(struct perf_event_attr *a);

/* Records (appended to @b). */
void rb_comm(struct rb *b, uint32_t pid, uint32_t tid, const char *comm,
	     int exec, uint64_t time);
void rb_mmap2(struct rb *b, uint32_t pid, uint64_t start, uint64_t len,
	      uint64_t pgoff, const char *file, uint64_t time);
void rb_fork(struct rb *b, uint32_t pid, uint32_t ppid, uint32_t tid,
	     uint32_t ptid, uint64_t time);
void rb_sample(struct rb *b, uint32_t pid, uint32_t tid, uint64_t time,
	       const uint64_t *chain, unsigned nr, uint64_t period);
void rb_round(struct rb *b);
void rb_raw(struct rb *b, uint32_t type, uint16_t misc, const void *payload,
	    size_t len);

/* Wrap @data (records) as a file-mode perf.data with one attr (@attr,
 * written with @attr_size bytes per entry including the 16-byte ids
 * section) and a HOSTNAME feature. */
void rb_file(struct rb *out, const struct perf_event_attr *attr,
	     size_t attr_size, const struct rb *data, const char *hostname);

/* Wrap @data as a pipe-mode stream: header, one HEADER_ATTR, records. */
void rb_pipe(struct rb *out, const struct perf_event_attr *attr,
	     const struct rb *data);

/*
 * Several events in one file: event i has sample id i + 1 and the name
 * @names[i] (EVENT_DESC feature). Features: HOSTNAME "rb", OSRELEASE
 * @os_release unless NULL, BUILD_ID with a [kernel.kallsyms] entry of
 * @kernel_bid (20 bytes) unless NULL. Samples need PERF_SAMPLE_IDENTIFIER
 * (rb_sample_ev) when there are several events.
 */
void rb_file_events(struct rb *out, const struct perf_event_attr *attrs,
		    const char *const *names, unsigned n, const struct rb *data,
		    const char *os_release, const unsigned char *kernel_bid);

/*
 * A sample for attrs with sample_type IDENTIFIER | IP | TID | TIME |
 * PERIOD | CALLCHAIN, plus BRANCH_STACK when @br is not NULL (@nbr
 * entries {from, to}, flags 0, no hw_idx). @misc: cpumode.
 */
void rb_sample_ev(struct rb *b, uint64_t id, uint16_t misc, uint32_t pid,
		  uint32_t tid, uint64_t time, uint64_t ip, const uint64_t *chain,
		  unsigned nr, const uint64_t (*br)[2], unsigned nbr);

/* The kernel map as perf synthesizes it: MMAP `[kernel.kallsyms]_text`
 * of pid -1 with pgoff = the address of _text (no sample_id trailer:
 * for attrs without sample_id_all). */
void rb_kernel_mmap(struct rb *b, uint64_t start, uint64_t len, uint64_t text);

/* Convert the perf.data image @img (no kernel symbols, no perf maps) and
 * print its folded stacks into *@out (malloc()ed, NUL-terminated; NULL
 * on error), the session's statistics into @st (sz set by the caller).
 * Returns the open or convert error, or 0. */
struct perfspy_stats;
int rb_convert(const struct rb *img, struct perfspy_stats *st, char **out);

#endif
