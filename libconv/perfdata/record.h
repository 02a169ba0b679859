/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Record decoding: PERF_RECORD_SAMPLE fields per the event's sample_type,
 * the sample_id trailer of other kernel records, and the side-band
 * records the machine model needs (MMAP, MMAP2, COMM, FORK/EXIT, LOST).
 *
 * Every decoder checks header.size against what the type and sample_type
 * need (libperf event_contains(); docs/perf-data-format.md §2) and
 * fails with -PERFSPY_E_BAD_RECORD instead of reading past the record.
 * Decoded pointers point into the record.
 */
#ifndef PERFSPY_RECORD_H
#define PERFSPY_RECORD_H

#include "reader.h"

struct rec_sample {
	u64 id, ip, time, addr, stream_id, period;
	u32 pid, tid, cpu;
	u16 cpumode; /* misc & PERF_RECORD_MISC_CPUMODE_MASK */
	u64 callchain_nr;
	const u8 *callchain; /* callchain_nr u64s, unaligned */
	u32 raw_size;
	const u8 *raw;
	u64 regs_abi; /* 0: no user regs */
	u32 nr_regs;
	const u8 *regs; /* nr_regs u64s in ascending bit order */
	u64 stack_size; /* bytes of stack dump (0: none) */
	const u8 *stack;
	u64 stack_dyn_size;
	bool has_time;
	/* PERF_SAMPLE_BRANCH_STACK: branch_nr entries {from, to, flags}
	 * (struct perf_branch_entry, 3 u64s), unaligned; most recent first. */
	u64 branch_nr;
	const u8 *branch;
};

static inline u64 rec_branch_from(const struct rec_sample *s, u64 i)
{
	return get_u64(s->branch + i * 24);
}

static inline u64 rec_branch_to(const struct rec_sample *s, u64 i)
{
	return get_u64(s->branch + i * 24 + 8);
}

static inline u64 rec_callchain_ip(const struct rec_sample *s, u64 i)
{
	return get_u64(s->callchain + i * 8);
}

int rec_parse_sample(const struct rd_evsel *ev,
		     const struct perf_event_header *h, struct rec_sample *s);

/*
 * What the session asks of a frame-pointer callchain's @nr entries at
 * @cc, given here once for the session and for the reader's warming
 * thread, which works them out ahead (rd_digest(), docs/design.md
 * §6.21): the callchain cache's hash of the entries (its key adds the
 * sample's context, session.c), and the outermost user entry: the last
 * entry of the last user context that has one (false: none), a context
 * being user after PERF_CONTEXT_USER, or from the start when the sample
 * (@cpumode) was taken in user mode.
 */
void rec_chain_hash(const u8 *cc, u64 nr, u64 *h1, u64 *h2);
bool rec_chain_last_user(const u8 *cc, u64 nr, u16 cpumode, u64 *last);

/* sample_id trailer of a non-sample kernel record (docs/perf-data-format.md §1.9). */
struct rec_id {
	u32 pid, tid, cpu;
	u64 time, id;
	bool has_time, has_id;
};

/* Parse the trailer backwards from the end. With no sample_id_all the
 * result is all zero (has_time false). */
int rec_parse_id(const struct rd_evsel *ev, const struct perf_event_header *h,
		 struct rec_id *out);

/* The tid of sample @h read on its own, from the record's first bytes
 * (-j N's sessions skip the samples of other sessions' threads without
 * touching the rest, docs/design.md §6.4). False when the event samples
 * no TID or the record is too short for it. */
bool rec_sample_tid(const struct rd_evsel *ev, const struct perf_event_header *h,
		    u32 *tid);

/* Timestamp for ordering: a sample's time or the sample_id time; 0 when
 * the record carries none (it is then delivered at once). */
u64 rec_time(struct rd *rd, const struct perf_event_header *h);

struct rec_mmap {
	u32 pid, tid;
	u64 start, len, pgoff;
	u32 prot, flags;
	const char *filename; /* NUL-terminated inside the record */
	const u8 *build_id;   /* MMAP2 build-id variant, else NULL */
	u8 build_id_size;
	bool is_mmap2;
};

int rec_parse_mmap(const struct perf_event_header *h, struct rec_mmap *m);

struct rec_comm {
	u32 pid, tid;
	const char *comm;
	bool exec;
};

int rec_parse_comm(const struct perf_event_header *h, struct rec_comm *c);

struct rec_fork {
	u32 pid, ppid, tid, ptid;
	u64 time;
};

int rec_parse_fork(const struct perf_event_header *h, struct rec_fork *f);

/* LOST: returns the number of lost samples, or -BAD_RECORD. */
int rec_parse_lost(const struct perf_event_header *h, u64 *lost);

#endif
