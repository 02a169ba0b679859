// SPDX-License-Identifier: GPL-2.0
/*
 * Record decoding. PERF_RECORD_SAMPLE fields come in a fixed order
 * whatever the bit values (the layout comment above PERF_RECORD_SAMPLE in
 * include/uapi/linux/perf_event.h; perf's evsel__parse_sample), each
 * present only when its sample_type bit is set. Every read goes through a
 * bounded cursor over [header, header + size), so a record that lies
 * about its size fails as a whole with -PERFSPY_E_BAD_RECORD.
 */
#include "record.h"
#include "evlist.h"

#include <stddef.h>
/* Record layouts come from libperf (tools/lib/perf/include/perf/event.h):
 * its structs give the offsets; fields are read through memcpy at those
 * offsets, since records in streams, zstd output and corrupt files are
 * not aligned. */
#include <perf/event.h>

#include <errno.h>
#include <sys/mman.h>

#include "perfspy.h"

/* read_format values (perf_event.h, "struct read_format"). */
static void skip_read_format(struct cur *c, u64 rf)
{
	u64 nr = 1, per;

	if (rf & PERF_FORMAT_GROUP) {
		nr = cur_u64(c);
		if (rf & PERF_FORMAT_TOTAL_TIME_ENABLED)
			cur_skip(c, 8);
		if (rf & PERF_FORMAT_TOTAL_TIME_RUNNING)
			cur_skip(c, 8);
		per = 1 + !!(rf & PERF_FORMAT_ID) + !!(rf & (1U << 4) /* LOST */);
		if (nr > cur_left(c) / 8 / per)
			c->bad = true;
		else
			cur_skip(c, nr * per * 8);
		return;
	}
	cur_skip(c, 8); /* value */
	if (rf & PERF_FORMAT_TOTAL_TIME_ENABLED)
		cur_skip(c, 8);
	if (rf & PERF_FORMAT_TOTAL_TIME_RUNNING)
		cur_skip(c, 8);
	if (rf & PERF_FORMAT_ID)
		cur_skip(c, 8);
	if (rf & (1U << 4)) /* PERF_FORMAT_LOST, new in 6.0 */
		cur_skip(c, 8);
}

/* Take @n u64s; NULL (and c->bad) if they do not fit. */
static const u8 *take_u64s(struct cur *c, u64 n)
{
	if (n > cur_left(c) / 8) {
		c->bad = true;
		return NULL;
	}
	return cur_take(c, n * 8);
}

static void parse_branch_stack(struct cur *c, const struct perf_event_attr *a,
			       struct rec_sample *s)
{
	u64 nr = cur_u64(c);

	/* PERF_SAMPLE_BRANCH_HW_INDEX (1 << 17): one hw_idx word first. */
	if (a->branch_sample_type & (1ULL << 17))
		cur_skip(c, 8);
	if (nr > cur_left(c) / 24) {
		c->bad = true;
	} else {
		s->branch_nr = nr;
		s->branch = cur_take(c, nr * 24);
	}
}

static void parse_user_parts(struct cur *c, const struct perf_event_attr *a,
			     u64 t, struct rec_sample *s)
{
	if (t & PERF_SAMPLE_REGS_USER) {
		s->regs_abi = cur_u64(c);
		if (s->regs_abi) {
			s->nr_regs = (u32)__builtin_popcountll(a->sample_regs_user);
			s->regs = take_u64s(c, s->nr_regs);
		}
	}
	if (t & PERF_SAMPLE_STACK_USER) {
		s->stack_size = cur_u64(c);
		if (s->stack_size) {
			s->stack = cur_take(c, s->stack_size);
			s->stack_dyn_size = cur_u64(c);
			if (s->stack_dyn_size > s->stack_size)
				s->stack_dyn_size = s->stack_size;
		}
	}
}

int rec_parse_sample(const struct rd_evsel *ev,
		     const struct perf_event_header *h, struct rec_sample *s)
{
	const struct perf_event_attr *a = &ev->attr;
	u64 t = a->sample_type;
	struct cur c;

	memset(s, 0, sizeof(*s));
	cur_init(&c, (const u8 *)h + sizeof(*h), hdr_size(h) - sizeof(*h));
	s->cpumode = hdr_misc(h) & PERF_RECORD_MISC_CPUMODE_MASK;
	if (t & PERF_SAMPLE_IDENTIFIER)
		s->id = cur_u64(&c);
	if (t & PERF_SAMPLE_IP)
		s->ip = cur_u64(&c);
	if (t & PERF_SAMPLE_TID) {
		s->pid = cur_u32(&c);
		s->tid = cur_u32(&c);
	}
	if (t & PERF_SAMPLE_TIME) {
		s->time = cur_u64(&c);
		s->has_time = true;
	}
	if (t & PERF_SAMPLE_ADDR)
		s->addr = cur_u64(&c);
	if (t & PERF_SAMPLE_ID)
		s->id = cur_u64(&c);
	if (t & PERF_SAMPLE_STREAM_ID)
		s->stream_id = cur_u64(&c);
	if (t & PERF_SAMPLE_CPU) {
		s->cpu = cur_u32(&c);
		cur_skip(&c, 4);
	}
	/* Without PERF_SAMPLE_PERIOD every sample stands for the attr's
	 * period, as perf's evsel__parse_sample assumes (for frequency
	 * events that union holds the frequency; perf uses it all the same). */
	s->period = a->sample_period ? a->sample_period : 1;
	if (t & PERF_SAMPLE_PERIOD)
		s->period = cur_u64(&c);
	if (t & PERF_SAMPLE_READ)
		skip_read_format(&c, a->read_format);
	if (t & PERF_SAMPLE_CALLCHAIN) {
		s->callchain_nr = cur_u64(&c);
		s->callchain = take_u64s(&c, s->callchain_nr);
	}
	if (t & PERF_SAMPLE_RAW) {
		s->raw_size = cur_u32(&c);
		s->raw = cur_take(&c, s->raw_size);
	}
	if (t & PERF_SAMPLE_BRANCH_STACK)
		parse_branch_stack(&c, a, s);
	parse_user_parts(&c, a, t, s);
	/* The remaining fields are not used yet; their presence is what the
	 * size check below relies on being consistent. */
	if (c.bad) {
		memset(s, 0, sizeof(*s));
		return -PERFSPY_E_BAD_RECORD;
	}
	return 0;
}

/* The seed of rec_chain_hash(): any constant; one for every caller. */
#define REC_CHAIN_SEED 0x243f6a8885a308d3ULL

void rec_chain_hash(const u8 *cc, u64 nr, u64 *h1, u64 *h2)
{
	hash_bytes128(cc, nr * 8, REC_CHAIN_SEED, h1, h2);
}

/* The index of the last context marker among @cc's first @n entries,
 * or -1: four entries a step, since a user context is walked whole (its
 * marker comes first, its entries after). A marker has the top 52 bits
 * set, so the OR of four entries has them too when one is: only then
 * (or for kernel addresses whose OR happens to) are they looked at one
 * by one. */
static s64 last_marker(const u8 *cc, u64 n)
{
	const u64 ctx_max = PERF_CONTEXT_MAX;

	while (n >= 4) {
		u64 a = get_u64(cc + (n - 1) * 8), b = get_u64(cc + (n - 2) * 8);
		u64 c = get_u64(cc + (n - 3) * 8), d = get_u64(cc + (n - 4) * 8);

		if ((a | b | c | d) >= ctx_max &&
		    (a >= ctx_max || b >= ctx_max || c >= ctx_max || d >= ctx_max))
			break;
		n -= 4;
	}
	while (n > 0) {
		if (get_u64(cc + --n * 8) >= ctx_max)
			return (s64)n;
	}
	return -1;
}

/* Looked for from the end (the user part comes last), a context at a
 * time: each is the entries after its marker. The first version walked
 * entry by entry from the front, 6% of the deep-stack bench file, then
 * entry by entry from the end (issue 16). */
bool rec_chain_last_user(const u8 *cc, u64 nr, u16 cpumode, u64 *last)
{
	s64 p;

	while (nr > 0) {
		p = last_marker(cc, nr);
		if ((u64)(p + 1) < nr &&
		    (p >= 0 ? get_u64(cc + (u64)p * 8) == PERF_CONTEXT_USER :
		     cpumode != PERF_RECORD_MISC_KERNEL)) {
			*last = get_u64(cc + (nr - 1) * 8);
			return true;
		}
		if (p < 0)
			break;
		nr = (u64)p;
	}
	return false;
}

int rec_parse_id(const struct rd_evsel *ev, const struct perf_event_header *h,
		 struct rec_id *out)
{
	u64 t = ev->attr.sample_type;
	u16 size = hdr_size(h);
	const u8 *p;

	memset(out, 0, sizeof(*out));
	if (!ev->attr.sample_id_all)
		return 0;
	if (ev->id_hdr_size > (u32)size - sizeof(*h))
		return -PERFSPY_E_BAD_RECORD;
	/* Fields in sample_id order, starting id_hdr_size before the end
	 * (perf_evsel__parse_id_sample walks backwards to the same place). */
	p = (const u8 *)h + size - ev->id_hdr_size;
	if (t & PERF_SAMPLE_TID) {
		out->pid = get_u32(p);
		out->tid = get_u32(p + 4);
		p += 8;
	}
	if (t & PERF_SAMPLE_TIME) {
		out->time = get_u64(p);
		out->has_time = true;
		p += 8;
	}
	if (t & PERF_SAMPLE_ID) {
		out->id = get_u64(p);
		out->has_id = true;
		p += 8;
	}
	if (t & PERF_SAMPLE_STREAM_ID)
		p += 8;
	if (t & PERF_SAMPLE_CPU) {
		out->cpu = get_u32(p);
		p += 8;
	}
	if (t & PERF_SAMPLE_IDENTIFIER) {
		out->id = get_u64(p);
		out->has_id = true;
	}
	return 0;
}

bool rec_sample_tid(const struct rd_evsel *ev, const struct perf_event_header *h,
		    u32 *tid)
{
	u64 t = ev->attr.sample_type, off = sizeof(*h);

	if (!(t & PERF_SAMPLE_TID))
		return false;
	off += 8 * !!(t & PERF_SAMPLE_IDENTIFIER);
	off += 8 * !!(t & PERF_SAMPLE_IP);
	if (off + 8 > hdr_size(h))
		return false;
	*tid = get_u32((const u8 *)h + off + 4);
	return true;
}

u64 rec_time(struct rd *rd, const struct perf_event_header *h)
{
	u32 type = hdr_type(h);
	struct rd_evsel *ev;
	u16 size = hdr_size(h);

	/* Only kernel records carry times (user records are >= 64). */
	if (type >= 64 || type == 0)
		return 0;
	ev = rd_evsel_of(rd, h);
	if (!ev || !(ev->attr.sample_type & PERF_SAMPLE_TIME))
		return 0;
	if (type == PERF_RECORD_SAMPLE) {
		u64 t = ev->attr.sample_type, off = 8;

		off += 8 * !!(t & PERF_SAMPLE_IDENTIFIER);
		off += 8 * !!(t & PERF_SAMPLE_IP);
		off += 8 * !!(t & PERF_SAMPLE_TID);
		return off + 8 <= size ? get_u64((const u8 *)h + off) : 0;
	}
	if (!ev->attr.sample_id_all || ev->id_hdr_size > (u32)size - 8)
		return 0;
	{
		u64 off = size - ev->id_hdr_size;

		off += 8 * !!(ev->attr.sample_type & PERF_SAMPLE_TID);
		return get_u64((const u8 *)h + off);
	}
}

/* A NUL-terminated string starting at @off inside the record. */
static const char *rec_str(const struct perf_event_header *h, size_t off)
{
	u16 size = hdr_size(h);
	const char *s = (const char *)h + off;

	if (off >= size || !memchr(s, '\0', size - off))
		return NULL;
	return s;
}

int rec_parse_mmap(const struct perf_event_header *h, struct rec_mmap *m)
{
	const u8 *p = (const u8 *)h;
	u32 type = hdr_type(h);
	u16 size = hdr_size(h);

	memset(m, 0, sizeof(*m));
	m->is_mmap2 = type == PERF_RECORD_MMAP2;
	if (size < (m->is_mmap2 ? offsetof(struct perf_record_mmap2, filename) :
		    offsetof(struct perf_record_mmap, filename)) + 1)
		return -PERFSPY_E_BAD_RECORD;
	m->pid = get_u32(p + offsetof(struct perf_record_mmap2, pid));
	m->tid = get_u32(p + offsetof(struct perf_record_mmap2, tid));
	m->start = get_u64(p + offsetof(struct perf_record_mmap2, start));
	m->len = get_u64(p + offsetof(struct perf_record_mmap2, len));
	m->pgoff = get_u64(p + offsetof(struct perf_record_mmap2, pgoff));
	if (m->is_mmap2) {
		/* Union at 40: {maj, min, ino, ino_generation} or, with
		 * PERF_RECORD_MISC_MMAP_BUILD_ID, {size, res, build_id[20]}. */
		if ((hdr_misc(h) & (1 << 14)) && p[40]) {
			/* Size 0: no id to use, as without the flag
			 * (docs/perf-data-format.md, MMAP2). */
			m->build_id_size = p[40] > 20 ? 20 : p[40];
			m->build_id = p + offsetof(struct perf_record_mmap2, build_id);
		}
		m->prot = get_u32(p + offsetof(struct perf_record_mmap2, prot));
		m->flags = get_u32(p + offsetof(struct perf_record_mmap2, flags));
		m->filename = rec_str(h, offsetof(struct perf_record_mmap2, filename));
	} else {
		/* MMAP has no prot: data maps carry
		 * PERF_RECORD_MISC_MMAP_DATA (1 << 13). */
		m->prot = hdr_misc(h) & (1 << 13) ? PROT_READ :
			PROT_READ | PROT_EXEC;
		m->filename = rec_str(h, offsetof(struct perf_record_mmap, filename));
	}
	return m->filename ? 0 : -PERFSPY_E_BAD_RECORD;
}

int rec_parse_comm(const struct perf_event_header *h, struct rec_comm *c)
{
	const u8 *p = (const u8 *)h;

	memset(c, 0, sizeof(*c));
	if (hdr_size(h) < offsetof(struct perf_record_comm, comm) + 1)
		return -PERFSPY_E_BAD_RECORD;
	c->pid = get_u32(p + offsetof(struct perf_record_comm, pid));
	c->tid = get_u32(p + offsetof(struct perf_record_comm, tid));
	c->comm = rec_str(h, offsetof(struct perf_record_comm, comm));
	/* PERF_RECORD_MISC_COMM_EXEC (1 << 13). */
	c->exec = hdr_misc(h) & (1 << 13);
	return c->comm ? 0 : -PERFSPY_E_BAD_RECORD;
}

int rec_parse_fork(const struct perf_event_header *h, struct rec_fork *f)
{
	const u8 *p = (const u8 *)h;

	if (hdr_size(h) < sizeof(struct perf_record_fork))
		return -PERFSPY_E_BAD_RECORD;
	f->pid = get_u32(p + offsetof(struct perf_record_fork, pid));
	f->ppid = get_u32(p + offsetof(struct perf_record_fork, ppid));
	f->tid = get_u32(p + offsetof(struct perf_record_fork, tid));
	f->ptid = get_u32(p + offsetof(struct perf_record_fork, ptid));
	f->time = get_u64(p + offsetof(struct perf_record_fork, time));
	return 0;
}

int rec_parse_lost(const struct perf_event_header *h, u64 *lost)
{
	const u8 *p = (const u8 *)h;
	u32 type = hdr_type(h);

	/* LOST: {u64 id; u64 lost}; LOST_SAMPLES: {u64 lost}. */
	if (type == PERF_RECORD_LOST) {
		if (hdr_size(h) < sizeof(struct perf_record_lost))
			return -PERFSPY_E_BAD_RECORD;
		*lost = get_u64(p + offsetof(struct perf_record_lost, lost));
	} else {
		if (hdr_size(h) < 16)
			return -PERFSPY_E_BAD_RECORD;
		*lost = get_u64(p + 8);
	}
	return 0;
}
