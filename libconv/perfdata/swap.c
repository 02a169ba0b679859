// SPDX-License-Identifier: GPL-2.0
/*
 * Byte-order conversion of a file-layout perf.data written on a machine
 * of the other byte order. Follows the rules of perf 6.1: the header
 * (perf_file_header__read, tools/perf/util/header.c), attrs
 * (perf_event__attr_swap and swap_bitfield/revbyte, session.c), records
 * (perf_event__swap_ops[], session.c, and evsel__parse_sample's "undo
 * swap of u64, then swap on individual u32s", evsel.c) and the feature
 * sections (header.c process_* with ff->ph->needs_swap). Unlike perf,
 * which swaps samples lazily as a u64 array, every field is converted
 * here once, by its own width, so the u32 pairs, the RAW bytes and the
 * user stack dump come out right directly.
 *
 * Layouts: docs/perf-data-format.md §1.1-§1.9 and §2.
 * Every access goes through struct swc, bounded by the record or section.
 */
#include "swap.h"
#include "evlist.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "perfspy.h"
#include "reader_feat.h"

/* A writable cursor: each step swaps the field in place and returns its
 * native value; past the end it sets ->bad and does nothing. */
struct swc {
	u8 *p, *end;
	bool bad;
};

static void swc_init(struct swc *c, u8 *p, size_t len)
{
	c->p = p;
	c->end = p + len;
	c->bad = false;
}

static bool swc_skip(struct swc *c, u64 n)
{
	if (c->bad || (u64)(c->end - c->p) < n) {
		c->bad = true;
		return false;
	}
	c->p += n;
	return true;
}

static void sw16(u8 *p)
{
	u16 v = get_u16(p);

	v = __builtin_bswap16(v);
	memcpy(p, &v, 2);
}

static void sw32(u8 *p)
{
	u32 v = __builtin_bswap32(get_u32(p));

	memcpy(p, &v, 4);
}

static void sw64(u8 *p)
{
	u64 v = __builtin_bswap64(get_u64(p));

	memcpy(p, &v, 8);
}

static u64 swc_64(struct swc *c)
{
	u8 *p = c->p;

	if (!swc_skip(c, 8))
		return 0;
	sw64(p);
	return get_u64(p);
}

static u32 swc_32(struct swc *c)
{
	u8 *p = c->p;

	if (!swc_skip(c, 4))
		return 0;
	sw32(p);
	return get_u32(p);
}

static void swc_16(struct swc *c)
{
	u8 *p = c->p;

	if (swc_skip(c, 2))
		sw16(p);
}

/* The rest of the range as u64 words. */
static void swc_all64(struct swc *c)
{
	while (!c->bad && c->end - c->p >= 8)
		swc_64(c);
}

/* --------------------------------------------------------------- attr */

/* perf_event_attr fields after read_format, {offset, width}
 * (include/uapi/linux/perf_event.h, 6.1: PERF_ATTR_SIZE_VER7 = 128). */
static const u8 attr_fields[][2] = {
	{ 48, 4 },  /* wakeup_events */
	{ 52, 4 },  /* bp_type */
	{ 56, 8 },  /* config1 */
	{ 64, 8 },  /* config2 */
	{ 72, 8 },  /* branch_sample_type */
	{ 80, 8 },  /* sample_regs_user */
	{ 88, 4 },  /* sample_stack_user */
	{ 92, 4 },  /* clockid */
	{ 96, 8 },  /* sample_regs_intr */
	{ 104, 4 }, /* aux_watermark */
	{ 108, 2 }, /* sample_max_stack */
	{ 110, 2 }, /* __reserved_2 */
	{ 112, 4 }, /* aux_sample_size */
	{ 116, 4 }, /* __reserved_3 */
	{ 120, 8 }, /* sig_data */
};

/* Reverse the bits of a byte (perf's revbyte, session.c). */
static u8 revbyte(u8 b)
{
	b = (u8)((b >> 4) | (b << 4));
	b = (u8)(((b & 0xcc) >> 2) | ((b & 0x33) << 2));
	return (u8)(((b & 0xaa) >> 1) | ((b & 0x55) << 1));
}

/* Swap the @len bytes of an attr that are there (perf_event__attr_swap,
 * session.c, swaps only as far as attr.size reaches; here as far as the
 * stored bytes reach). The flag bit-fields at offset 40 are allocated
 * from the other end of each byte on the other byte order, so each byte
 * is bit-reversed in place and the bytes are not swapped (swap_bitfield). */
static void swap_attr(u8 *a, size_t len)
{
	size_t i;

	if (len < 8)
		return;
	sw32(a);
	sw32(a + 4);
	for (i = 8; i + 8 <= 40 && i + 8 <= len; i += 8)
		sw64(a + i); /* config, sample_period, sample_type, read_format */
	if (len >= 48)
		for (i = 40; i < 48; i++)
			a[i] = revbyte(a[i]);
	for (i = 0; i < ARRAY_SIZE(attr_fields); i++) {
		size_t off = attr_fields[i][0], w = attr_fields[i][1];

		if (off + w > len)
			break;
		if (w == 8)
			sw64(a + off);
		else if (w == 4)
			sw32(a + off);
		else
			sw16(a + off);
	}
}

/* ------------------------------------------------------------- header */

static int make_private(struct rd *rd)
{
	u8 *copy;

	if (rd->mem_owned && rd->mem == rd->mem_owned)
		return 0;
	copy = malloc(rd->mem_len ? rd->mem_len : 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, rd->mem, rd->mem_len);
	if (rd->mem_is_map)
		munmap((void *)rd->mem, rd->mem_len);
	rd->mem_is_map = false;
	free(rd->mem_owned);
	rd->mem_owned = copy;
	rd->mem = copy;
	return 0;
}

/* The feature bitmap: u64 words, or u32 words from a 32-bit writer when
 * HEADER_HOSTNAME (bit 3) is not set then (perf_file_header__read). */
static void swap_bitmap(u8 *b)
{
	u8 orig[32];
	int i;

	memcpy(orig, b, sizeof(orig));
	for (i = 0; i < 4; i++)
		sw64(b + i * 8);
	if (get_u64(b) & (1ULL << FEAT_HOSTNAME))
		return;
	memcpy(b, orig, sizeof(orig));
	for (i = 0; i < 8; i++)
		sw32(b + i * 4);
	if (get_u64(b) & (1ULL << FEAT_HOSTNAME))
		return;
	memcpy(b, orig, sizeof(orig));
	for (i = 0; i < 4; i++)
		sw64(b + i * 8);
}

/* Attr entries {attr; perf_file_section ids} and their id arrays. */
static void swap_attrs(struct rd *rd, u8 *m)
{
	u64 asz = get_u64(m + 16), off = get_u64(m + 24);
	u64 size = get_u64(m + 32), i, j, n;

	if (asz < ATTR_VER0 + 16 || off > rd->mem_len || size > rd->mem_len - off)
		return; /* read_attrs reports it */
	n = size / asz;
	for (i = 0; i < n; i++) {
		u8 *e = m + off + i * asz;
		u64 ids_off, ids_size;

		swap_attr(e, asz - 16);
		sw64(e + asz - 16);
		sw64(e + asz - 8);
		ids_off = get_u64(e + asz - 16);
		ids_size = get_u64(e + asz - 8);
		if (ids_off > rd->mem_len || ids_size > rd->mem_len - ids_off)
			continue;
		for (j = 0; j + 8 <= ids_size; j += 8)
			sw64(m + ids_off + j);
	}
}

int swap_file_head(struct rd *rd)
{
	u8 *m;
	int i, err = make_private(rd);

	if (err)
		return err;
	m = rd->mem_owned;
	if (rd->mem_len < 72)
		return 0; /* read_file_header reports it */
	for (i = 0; i < 9; i++)
		sw64(m + i * 8); /* magic .. event_types: all u64 (§1.1) */
	if (get_u64(m + 8) >= 104 && rd->mem_len >= 104)
		swap_bitmap(m + 72);
	if (get_u64(m + 8) <= rd->mem_len)
		swap_attrs(rd, m);
	return 0;
}

/* ------------------------------------------------------------ samples */

/* struct read_format, all u64 words (perf_event.h). */
static void swap_read_format(struct swc *c, u64 rf)
{
	u64 nr = 1, per = 1, i;

	if (rf & PERF_FORMAT_GROUP)
		nr = swc_64(c);
	if (rf & PERF_FORMAT_TOTAL_TIME_ENABLED)
		swc_64(c);
	if (rf & PERF_FORMAT_TOTAL_TIME_RUNNING)
		swc_64(c);
	per += !!(rf & PERF_FORMAT_ID) + !!(rf & (1U << 4) /* LOST */);
	if (nr > (u64)(c->end - c->p) / 8) {
		c->bad = true;
		return;
	}
	for (i = 0; i < nr * per; i++)
		swc_64(c);
}

static void swap_u64s(struct swc *c, u64 n)
{
	if (n > (u64)(c->end - c->p) / 8) {
		c->bad = true;
		return;
	}
	while (n--)
		swc_64(c);
}

/* The fields after the branch stack (§2.1, §2.3). The stack dump is raw
 * memory: only its size and dyn_size are swapped. */
static void swap_sample_tail(struct swc *c, const struct perf_event_attr *a)
{
	u64 t = a->sample_type, n;

	if ((t & PERF_SAMPLE_REGS_USER) && swc_64(c))
		swap_u64s(c, (u64)__builtin_popcountll(a->sample_regs_user));
	if ((t & PERF_SAMPLE_STACK_USER) && (n = swc_64(c))) {
		swc_skip(c, n);
		swc_64(c);
	}
	if (t & (PERF_SAMPLE_WEIGHT | (1ULL << 24) /* WEIGHT_STRUCT */))
		swc_64(c);
	if (t & PERF_SAMPLE_DATA_SRC)
		swc_64(c);
	if (t & PERF_SAMPLE_TRANSACTION)
		swc_64(c);
	if ((t & PERF_SAMPLE_REGS_INTR) && swc_64(c))
		swap_u64s(c, (u64)__builtin_popcountll(a->sample_regs_intr));
	/* PHYS_ADDR (19), CGROUP (21), DATA_PAGE_SIZE (22), CODE_PAGE_SIZE
	 * (23): one u64 each, in that order, then AUX (20) last. */
	if (t & (1ULL << 19))
		swc_64(c);
	for (n = 21; n <= 23; n++)
		if (t & (1ULL << n))
			swc_64(c);
	if (t & (1ULL << 20)) { /* AUX: u64 size, raw data */
		n = swc_64(c);
		swc_skip(c, n);
	}
}

/* PERF_RECORD_SAMPLE body per the evsel's sample_type (§2.1); the u32
 * pairs pid/tid and cpu/res are two u32s each, RAW keeps its bytes. */
static void swap_sample(struct swc *c, const struct perf_event_attr *a)
{
	u64 t = a->sample_type, n;

	if (t & PERF_SAMPLE_IDENTIFIER)
		swc_64(c);
	if (t & PERF_SAMPLE_IP)
		swc_64(c);
	if (t & PERF_SAMPLE_TID) {
		swc_32(c);
		swc_32(c);
	}
	if (t & PERF_SAMPLE_TIME)
		swc_64(c);
	if (t & PERF_SAMPLE_ADDR)
		swc_64(c);
	if (t & PERF_SAMPLE_ID)
		swc_64(c);
	if (t & PERF_SAMPLE_STREAM_ID)
		swc_64(c);
	if (t & PERF_SAMPLE_CPU) {
		swc_32(c);
		swc_32(c);
	}
	if (t & PERF_SAMPLE_PERIOD)
		swc_64(c);
	if (t & PERF_SAMPLE_READ)
		swap_read_format(c, a->read_format);
	if (t & PERF_SAMPLE_CALLCHAIN)
		swap_u64s(c, swc_64(c));
	if (t & PERF_SAMPLE_RAW)
		swc_skip(c, swc_32(c));
	if (t & PERF_SAMPLE_BRANCH_STACK) {
		/* {from, to, flags} per entry; flags as one u64 word (perfspy
		 * does not read the branch flag bit-fields). */
		n = swc_64(c);
		if (a->branch_sample_type & (1ULL << 17)) /* HW_INDEX */
			swc_64(c);
		swap_u64s(c, n > UINT64_MAX / 3 ? UINT64_MAX : n * 3);
	}
	swap_sample_tail(c, a);
}

/* The evsel of a record whose id word is still in the writer's byte
 * order: swap that one word, look up (rd_evsel_of), swap it back. */
static struct rd_evsel *swapped_evsel_of(struct rd *rd, u8 *h, u16 size)
{
	const struct rd_evsel *first = rd->nr_evsels ? &rd->evsels[0] : NULL;
	struct rd_evsel *ev;
	u64 off;

	if (rd->nr_evsels <= 1)
		return rd_evsel_of(rd, (const void *)h);
	if (hdr_type(h) == PERF_RECORD_SAMPLE) {
		if (first->id_pos < 0)
			return rd_evsel_of(rd, (const void *)h);
		off = 8 + 8 * (u64)first->id_pos;
	} else {
		if (!first->attr.sample_id_all || first->is_pos < 0 ||
		    (u64)first->is_pos * 8 > (u64)size - 8)
			return rd_evsel_of(rd, (const void *)h);
		off = size - 8 * (u64)first->is_pos;
	}
	if (off + 8 > size)
		return NULL;
	sw64(h + off);
	ev = rd_evsel_of(rd, (const void *)h);
	sw64(h + off);
	return ev;
}

/* sample_id trailer at the end of a kernel non-sample record (§1.9).
 * Returns its size (0: none or it does not fit). */
static u32 swap_sample_id(struct rd_evsel *ev, u8 *h, u16 size)
{
	u64 t;
	struct swc c;

	if (!ev || !ev->attr.sample_id_all || ev->id_hdr_size > (u32)size - 8)
		return 0;
	t = ev->attr.sample_type;
	swc_init(&c, h + size - ev->id_hdr_size, ev->id_hdr_size);
	if (t & PERF_SAMPLE_TID) {
		swc_32(&c);
		swc_32(&c);
	}
	if (t & PERF_SAMPLE_TIME)
		swc_64(&c);
	if (t & PERF_SAMPLE_ID)
		swc_64(&c);
	if (t & PERF_SAMPLE_STREAM_ID)
		swc_64(&c);
	if (t & PERF_SAMPLE_CPU) {
		swc_32(&c);
		swc_32(&c);
	}
	if (t & PERF_SAMPLE_IDENTIFIER)
		swc_64(&c);
	return ev->id_hdr_size;
}

/* Kernel record bodies (§2.4, libperf's perf/event.h); strings stay. */
static void swap_kernel_body(struct swc *c, u32 type, u16 misc)
{
	switch (type) {
	case PERF_RECORD_MMAP2:
	case PERF_RECORD_MMAP:
		swc_32(c); /* pid, tid */
		swc_32(c);
		swc_64(c); /* start, len, pgoff */
		swc_64(c);
		swc_64(c);
		if (type == PERF_RECORD_MMAP)
			break;
		if (misc & (1 << 14)) { /* MISC_MMAP_BUILD_ID */
			swc_skip(c, 2); /* build_id_size, reserved */
			swc_16(c);
			swc_skip(c, 20);
		} else {
			swc_32(c); /* maj, min, ino, ino_generation */
			swc_32(c);
			swc_64(c);
			swc_64(c);
		}
		swc_32(c); /* prot, flags */
		swc_32(c);
		break;
	case PERF_RECORD_COMM:
	case PERF_RECORD_SWITCH_CPU_WIDE:
		swc_32(c);
		swc_32(c);
		break;
	case PERF_RECORD_EXIT:
	case PERF_RECORD_FORK:
		swc_32(c); /* pid, ppid, tid, ptid, time */
		swc_32(c);
		swc_32(c);
		swc_32(c);
		swc_64(c);
		break;
	case PERF_RECORD_LOST:
	case PERF_RECORD_LOST_SAMPLES:
	case PERF_RECORD_THROTTLE:
	case PERF_RECORD_UNTHROTTLE:
		swc_all64(c); /* {id, lost}, {lost}, {time, id, stream_id} */
		break;
	default:
		break; /* body unknown: left as written */
	}
}

static void swap_feature(int bit, u8 *p, u64 len);

/* HEADER_ATTR: {header; attr (attr.size bytes); u64 id[]}
 * (perf_event__hdr_attr_swap, session.c). */
static void swap_header_attr(struct swc *c, u8 *h, u16 size)
{
	u32 asz;

	if (size < 16)
		return;
	asz = __builtin_bswap32(get_u32(h + 12));
	if (!asz)
		asz = ATTR_VER0;
	if (asz > size - 8u)
		asz = size - 8u;
	swap_attr(h + 8, asz);
	swc_skip(c, asz);
	swc_all64(c);
}

/* perf user records (perf_event__swap_ops[], session.c). Sets *@extra
 * to the payload that follows outside header.size. */
static int swap_user(struct rd *rd, u8 *h, u16 size, u32 type, u64 *extra)
{
	struct swc c;
	u64 v;

	swc_init(&c, h + 8, size - 8u);
	switch (type) {
	case REC_HEADER_ATTR:
		swap_header_attr(&c, h, size);
		break;
	case REC_HEADER_EVENT_TYPE:
	case REC_ID_INDEX:   /* nr, {id, idx, cpu, tid}[] */
	case REC_TIME_CONV:  /* all u64 */
		swc_all64(&c);
		break;
	case REC_HEADER_TRACING_DATA:
		*extra = ALIGN8((u64)swc_32(&c));
		break;
	case REC_HEADER_BUILD_ID: /* s32 pid, id[20], size, filename */
		swc_32(&c);
		break;
	case REC_AUXTRACE_INFO: /* u32 type, u32 reserved, u64 priv[] */
		swc_32(&c);
		swc_32(&c);
		swc_all64(&c);
		break;
	case REC_AUXTRACE: /* size, offset, reference, u32 idx, tid, cpu, res */
		*extra = swc_64(&c);
		swc_64(&c);
		swc_64(&c);
		while (!c.bad && c.end - c.p >= 4)
			swc_32(&c);
		break;
	case REC_EVENT_UPDATE: /* u64 type, u64 id; SCALE (1): a double */
		v = swc_64(&c);
		swc_64(&c);
		if (v == 1)
			swc_64(&c);
		break;
	case REC_HEADER_FEATURE: /* u64 feat_id, feature payload */
		v = swc_64(&c);
		if (!c.bad && v < FEAT_LAST)
			swap_feature((int)v, c.p, (u64)(c.end - c.p));
		break;
	case REC_COMPRESSED:
		log_msg(rd->log, LOG_ERROR,
			"%s: compressed perf.data of the other byte order is not supported",
			rd->name);
		return -PERFSPY_E_UNSUPPORTED;
	default:
		break; /* FINISHED_ROUND, FINISHED_INIT, ...: header only */
	}
	return 0;
}

static int swap_record(struct rd *rd, u8 *h, u16 size, u64 *extra)
{
	u32 type = hdr_type(h);
	struct rd_evsel *ev;
	struct swc c;
	u32 tail;

	*extra = 0;
	if (type >= 64)
		return swap_user(rd, h, size, type, extra);
	if (type == 0)
		return 0;
	ev = swapped_evsel_of(rd, h, size);
	if (type == PERF_RECORD_SAMPLE) {
		if (ev) {
			swc_init(&c, h + 8, size - 8u);
			swap_sample(&c, &ev->attr);
		}
		return 0;
	}
	tail = swap_sample_id(ev, h, size);
	swc_init(&c, h + 8, size - 8u - tail);
	swap_kernel_body(&c, type, hdr_misc(h));
	return 0;
}

int swap_records(struct rd *rd, u64 off, u64 end)
{
	u8 *m = rd->mem_owned;
	u64 extra;
	int err;

	if (end > rd->mem_len)
		end = rd->mem_len;
	while (off <= end && end - off >= 8) {
		u8 *h = m + off;
		u16 size;

		sw32(h); /* perf_event_header: u32 type, u16 misc, u16 size */
		sw16(h + 4);
		sw16(h + 6);
		size = hdr_size(h);
		if (size < 8 || size > end - off)
			break; /* the reader reports it */
		err = swap_record(rd, h, size, &extra);
		if (err)
			return err;
		off += size;
		if (extra > end - off)
			break;
		off += extra;
	}
	return 0;
}

/* ----------------------------------------------------------- features */

/* A perf string: u32 len, then len bytes kept (do_read_string). */
static void swap_string(struct swc *c)
{
	swc_skip(c, swc_32(c));
}

static void swap_event_desc(struct swc *c)
{
	u32 nr = swc_32(c), asz = swc_32(c), i, nr_ids;

	if (asz < 8)
		return;
	for (i = 0; i < nr && !c->bad; i++) {
		if ((u64)(c->end - c->p) < asz) {
			c->bad = true;
			return;
		}
		swap_attr(c->p, asz);
		swc_skip(c, asz);
		nr_ids = swc_32(c); /* then the name and the ids */
		swap_string(c);
		swap_u64s(c, nr_ids);
	}
}

/* BUILD_ID: build-id records {header; s32 pid; ...} (header.c
 * perf_header__read_build_ids swaps header and pid). */
static void swap_build_ids(struct swc *c)
{
	while (!c->bad && c->end - c->p >= 8) {
		u8 *h = c->p;
		u16 size;

		sw32(h);
		sw16(h + 4);
		sw16(h + 6);
		size = hdr_size(h);
		if (size < 12 || size > c->end - c->p)
			return;
		sw32(h + 8);
		swc_skip(c, size);
	}
}

static void swap_feature(int bit, u8 *p, u64 len)
{
	struct swc c;
	u32 nr;

	swc_init(&c, p, len);
	switch (bit) {
	case FEAT_HOSTNAME:
	case FEAT_OSRELEASE:
	case FEAT_VERSION:
	case FEAT_ARCH:
	case FEAT_CPUDESC:
	case FEAT_CPUID:
		swap_string(&c);
		break;
	case FEAT_NRCPUS:
		swc_32(&c);
		swc_32(&c);
		break;
	case FEAT_CMDLINE:
		for (nr = swc_32(&c); nr && !c.bad; nr--)
			swap_string(&c);
		break;
	case FEAT_EVENT_DESC:
		swap_event_desc(&c);
		break;
	case FEAT_BUILD_ID:
		swap_build_ids(&c);
		break;
	case FEAT_TOTAL_MEM:
	case FEAT_SAMPLE_TIME:
		swc_all64(&c);
		break;
	case FEAT_COMPRESSED: /* u32 version, type, level, ratio, mmap_len */
		while (!c.bad && c.end - c.p >= 4)
			swc_32(&c);
		break;
	default:
		break; /* TRACING_DATA has its own endian byte; others unread */
	}
}

void swap_features(struct rd *rd, const u64 bits[4], u64 index_off)
{
	u8 *m = rd->mem_owned;
	u64 off = index_off, foff, fsize;
	int bit;

	for (bit = 0; bit < 256; bit++) {
		if (!(bits[bit / 64] & (1ULL << (bit % 64))))
			continue;
		if (off > rd->mem_len || rd->mem_len - off < 16)
			return;
		sw64(m + off);
		sw64(m + off + 8);
		foff = get_u64(m + off);
		fsize = get_u64(m + off + 8);
		off += 16;
		if (foff > rd->mem_len || fsize > rd->mem_len - foff)
			continue;
		swap_feature(bit, m + foff, fsize);
	}
}
