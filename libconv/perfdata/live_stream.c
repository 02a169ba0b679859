// SPDX-License-Identifier: GPL-2.0
/*
 * The pipe-layout perf.data stream of a live recording (live.h): header,
 * HEADER_ATTR, and the side-band records perf synthesizes from /proc for
 * a process that already runs. Layouts are the kernel's (struct
 * perf_event_header and the PERF_RECORD_* bodies in
 * include/uapi/linux/perf_event.h) and perf's (HEADER_ATTR in
 * tools/perf/util/header.c perf_event__synthesize_attr; the pipe header in
 * perf.data-file-format.txt). Pure buffer building: no syscalls but the
 * caller's reads of /proc, so the unit tests run anywhere.
 */
#include "live.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/mman.h>

#define REC_HEADER_ATTR 64	/* tools/perf/util/event.h perf_user_event_type */
#define REC_FINISHED_ROUND 68

int live_put(struct live_buf *b, const void *p, size_t n)
{
	int err = ensure_mem((void **)&b->p, &b->cap, 1, b->len + n);

	if (err)
		return err;
	memcpy(b->p + b->len, p, n);
	b->len += n;
	return 0;
}

void live_buf_free(struct live_buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

int live_put_header(struct live_buf *b)
{
	const u64 h[2] = { 0x32454c4946524550ULL /* "PERFILE2" */, 16 };

	return live_put(b, h, sizeof(h));
}

int live_put_attr(struct live_buf *b, const struct perf_event_attr *attr)
{
	struct perf_event_header h = {
		.type = REC_HEADER_ATTR,
		.size = (u16)(sizeof(h) + attr->size),
	};
	int err = live_put(b, &h, sizeof(h));

	return err ? err : live_put(b, attr, attr->size);
}

int live_put_attr_ids(struct live_buf *b, const struct perf_event_attr *attr,
		      const u64 *ids, u32 nr)
{
	struct perf_event_header h = {
		.type = REC_HEADER_ATTR,
		.size = (u16)(sizeof(h) + attr->size + nr * sizeof(*ids)),
	};
	int err = live_put(b, &h, sizeof(h));

	if (!err)
		err = live_put(b, attr, attr->size);
	return err ? err : live_put(b, ids, nr * sizeof(*ids));
}

int live_put_round(struct live_buf *b)
{
	struct perf_event_header h = { .type = REC_FINISHED_ROUND, .size = sizeof(h) };

	return live_put(b, &h, sizeof(h));
}

u32 live_id_size(u64 st)
{
	u32 n = 0;

	if (st & PERF_SAMPLE_TID)
		n += 8;
	if (st & PERF_SAMPLE_TIME)
		n += 8;
	if (st & PERF_SAMPLE_ID)
		n += 8;
	if (st & PERF_SAMPLE_STREAM_ID)
		n += 8;
	if (st & PERF_SAMPLE_CPU)
		n += 8;
	if (st & PERF_SAMPLE_IDENTIFIER)
		n += 8;
	return n;
}

/*
 * Append a record of @type: header, @body (@blen bytes), @name padded
 * with NULs to 8 bytes (at least one NUL), and a zeroed sample_id trailer
 * whose first u32 pair is pid/tid when the trailer has PERF_SAMPLE_TID
 * (then it comes first). Time 0 sorts it before every kernel record, as
 * perf's synthesized records do.
 */
static int put_rec(struct live_buf *b, u32 type, u16 misc, const void *body,
		   size_t blen, const char *name, u32 id_size, u32 pid, u32 tid)
{
	size_t nlen = name ? ALIGN8(strlen(name) + 1) : 0;
	size_t size = sizeof(struct perf_event_header) + blen + nlen + id_size;
	struct perf_event_header h = { .type = type, .misc = misc, .size = (u16)size };
	size_t at;
	int err;

	if (size > UINT16_MAX)
		return 0; /* a path longer than a record can hold: skip it */
	at = b->len;
	err = ensure_mem((void **)&b->p, &b->cap, 1, b->len + size);
	if (err)
		return err;
	memset(b->p + at, 0, size);
	memcpy(b->p + at, &h, sizeof(h));
	memcpy(b->p + at + sizeof(h), body, blen);
	if (name)
		memcpy(b->p + at + sizeof(h) + blen, name, strlen(name));
	if (id_size >= 8) {
		u8 *t = b->p + at + size - id_size;

		memcpy(t, &pid, 4);
		memcpy(t + 4, &tid, 4);
	}
	b->len += size;
	return 0;
}

int live_put_comm(struct live_buf *b, pid_t pid, pid_t tid, const char *comm,
		  u32 id_size)
{
	u32 body[2] = { (u32)pid, (u32)tid };

	return put_rec(b, PERF_RECORD_COMM, 0, body, sizeof(body), comm, id_size,
		       (u32)pid, (u32)tid);
}

int live_put_fork(struct live_buf *b, pid_t pid, pid_t tid, u32 id_size)
{
	/* {pid, ppid, tid, ptid, time}: a thread of @pid, started by its
	 * leader (perf_event__synthesize_fork). */
	struct {
		u32 pid, ppid, tid, ptid;
		u64 time;
	} body = { (u32)pid, (u32)pid, (u32)tid, (u32)pid, 0 };

	return put_rec(b, PERF_RECORD_FORK, 0, &body, sizeof(body), NULL, id_size,
		       (u32)pid, (u32)tid);
}

int live_put_kernel_mmap(struct live_buf *b, u64 text, u64 etext, u32 id_size)
{
	struct {
		u32 pid, tid;
		u64 start, len, pgoff;
	} body = { (u32)-1, 0, text, etext > text ? etext - text : 1, text };

	return put_rec(b, PERF_RECORD_MMAP, PERF_RECORD_MISC_KERNEL, &body,
		       sizeof(body), "[kernel.kallsyms]_text", id_size, (u32)-1, 0);
}

/* The last file's build id: a file's segments are consecutive lines. */
struct bid_memo {
	u32 maj, min;
	u64 ino;
	size_t size;
	u8 id[LIVE_BUILD_ID_MAX];
	bool valid;
};

/* One /proc/PID/maps line (fs/proc/task_mmu.c show_map_vma):
 * "start-end perms offset maj:min inode   path". */
static int put_map_line(struct live_buf *b, pid_t pid, const char *line,
			u32 id_size, struct bid_memo *memo)
{
	/* perf_event.h's MMAP2 body: after pgoff a union of {maj, min, ino,
	 * ino_generation} and, with PERF_RECORD_MISC_MMAP_BUILD_ID, {u8
	 * build_id_size; u8, u16 reserved; u8 build_id[20]}: 24 bytes both
	 * (docs/perf-data-format.md, MMAP2). */
	struct {
		u32 pid, tid;
		u64 start, len, pgoff;
		union {
			struct {
				u32 maj, min;
				u64 ino, ino_generation;
			} dev;
			struct {
				u8 size, res1;
				u16 res2;
				u8 id[LIVE_BUILD_ID_MAX];
			} bid;
		} u;
		u32 prot, flags;
	} body = { (u32)pid, (u32)pid };
	unsigned long long start, end, off, ino;
	unsigned maj, min;
	char perms[8];
	int pos = 0;
	u16 misc;
	const char *name;

	if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms,
		   &off, &maj, &min, &ino, &pos) < 7 || !pos || strlen(perms) < 4)
		return 0;
	/* Readable data maps too, as perf does with mmap_data (set for
	 * dwarf callchains): perf's libunwind reads .eh_frame_hdr through
	 * the map of the r--p segment holding it (synthetic-events.c
	 * perf_event__synthesize_mmap_events). */
	if (end <= start || (perms[2] != 'x' && perms[0] != 'r'))
		return 0;
	name = line + pos;
	body.start = start;
	body.len = end - start;
	body.pgoff = off;
	body.prot = (perms[0] == 'r' ? PROT_READ : 0) |
		    (perms[1] == 'w' ? PROT_WRITE : 0) |
		    (perms[2] == 'x' ? PROT_EXEC : 0);
	body.flags = perms[3] == 's' ? MAP_SHARED : MAP_PRIVATE;
	misc = PERF_RECORD_MISC_USER |
	       (perms[2] == 'x' ? 0 : PERF_RECORD_MISC_MMAP_DATA);
	/* The file's build id in place of its device and inode, as the
	 * kernel's own records carry it (attr.build_id) and perf record
	 * --buildid-mmap synthesizes it: a saved recording then names the
	 * exact build of every library mapped before it started, for the
	 * build-id cache and debuginfod, and a file replaced since is not
	 * taken for it. Without one (no file, not ELF, not the mapped
	 * file), device and inode as perf writes them. */
	if (name[0] == '/' && ino) {
		if (!memo->valid || memo->maj != maj || memo->min != min ||
		    memo->ino != ino) {
			memo->size = live_map_build_id(pid, start, end, name, maj,
						       min, ino, memo->id);
			memo->maj = maj;
			memo->min = min;
			memo->ino = ino;
			memo->valid = true;
		}
	}
	if (name[0] == '/' && ino && memo->size) {
		body.u.bid.size = (u8)memo->size;
		memcpy(body.u.bid.id, memo->id, memo->size);
		misc |= PERF_RECORD_MISC_MMAP_BUILD_ID;
	} else {
		body.u.dev.maj = maj;
		body.u.dev.min = min;
		body.u.dev.ino = ino;
	}
	/* perf names anonymous executable memory "//anon" (util/map.c
	 * anon_map names), as the kernel's own MMAP2 records do. */
	if (!*name)
		name = "//anon";
	return put_rec(b, PERF_RECORD_MMAP2, misc, &body, sizeof(body), name,
		       id_size, (u32)pid, (u32)pid);
}

int live_put_maps(struct live_buf *b, pid_t pid, const char *text, size_t len,
		  u32 id_size)
{
	const char *p = text, *end = text + len, *nl;
	char line[4096 + 256];
	struct bid_memo memo = { 0 };
	int err;

	while (p < end) {
		size_t n;

		nl = memchr(p, '\n', (size_t)(end - p));
		n = (size_t)((nl ? nl : end) - p);
		if (n < sizeof(line)) {
			memcpy(line, p, n);
			line[n] = '\0';
			err = put_map_line(b, pid, line, id_size, &memo);
			if (err)
				return err;
		}
		p = nl ? nl + 1 : end;
	}
	return 0;
}

/*
 * Offset of the user stack's u64 size in a sample of @st (the sample
 * layout of perf_event.h's PERF_RECORD_SAMPLE, fields in sample_type bit
 * order), or 0 when @st has fields this walk does not size (READ, RAW,
 * BRANCH_STACK) or the record is too short.
 */
static size_t stack_off(const u8 *p, size_t size, u64 st, u32 nr_regs)
{
	size_t off = sizeof(struct perf_event_header);
	u64 n;

	if (st & (PERF_SAMPLE_READ | PERF_SAMPLE_RAW | PERF_SAMPLE_BRANCH_STACK))
		return 0;
	off += 8 * (!!(st & PERF_SAMPLE_IDENTIFIER) + !!(st & PERF_SAMPLE_IP) +
		    !!(st & PERF_SAMPLE_TID) + !!(st & PERF_SAMPLE_TIME) +
		    !!(st & PERF_SAMPLE_ADDR) + !!(st & PERF_SAMPLE_ID) +
		    !!(st & PERF_SAMPLE_STREAM_ID) + !!(st & PERF_SAMPLE_CPU) +
		    !!(st & PERF_SAMPLE_PERIOD));
	if (st & PERF_SAMPLE_CALLCHAIN) {
		if (off + 8 > size)
			return 0;
		n = get_u64(p + off);
		if (n > size / 8)
			return 0;
		off += 8 + 8 * n;
	}
	if (st & PERF_SAMPLE_REGS_USER) {
		if (off + 8 > size)
			return 0;
		off += 8 + (get_u64(p + off) ? 8 * (size_t)nr_regs : 0); /* abi */
	}
	return off + 8 <= size ? off : 0;
}

int live_put_sample(struct live_buf *b, const void *rec, u64 sample_type,
		    u32 nr_regs)
{
	struct perf_event_header h;
	const u8 *p = rec;
	size_t off, keep;
	u64 sz, dyn;
	int err;

	memcpy(&h, p, sizeof(h));
	off = (sample_type & PERF_SAMPLE_STACK_USER) ?
	      stack_off(p, h.size, sample_type, nr_regs) : 0;
	if (!off)
		return live_put(b, p, h.size);
	sz = get_u64(p + off);
	/* {u64 size; char data[size]; u64 dyn_size} must fit exactly up to
	 * what follows; anything else is copied as the kernel wrote it. */
	if (!sz || sz % 8 || sz > h.size || off + 16 + sz > h.size)
		return live_put(b, p, h.size);
	dyn = get_u64(p + off + 8 + sz);
	keep = (size_t)ALIGN8(dyn);
	if (dyn > sz || keep >= sz)
		return live_put(b, p, h.size);
	/* Keep the bytes the kernel filled (dyn_size, rounded up to 8, as
	 * perf's parser steps in u64s) and what follows the stack. */
	h.size = (u16)(h.size - (sz - keep));
	sz = keep;
	if ((err = live_put(b, &h, sizeof(h))) ||
	    (err = live_put(b, p + sizeof(h), off - sizeof(h))) ||
	    (err = live_put(b, &sz, 8)) ||
	    (err = live_put(b, p + off + 8, keep)))
		return err;
	return live_put(b, p + off + 8 + get_u64(p + off),
			h.size - (off + 8 + keep));
}
