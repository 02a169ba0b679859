// SPDX-License-Identifier: GPL-2.0
/*
 * perf.data events' names (perf's defaults; the evsels themselves are
 * evlist.c's) and the feature sections decoded into struct rd (header.c process_*
 * functions): strings, NRCPUS/TOTAL_MEM/SAMPLE_TIME, the command line,
 * EVENT_DESC names, BUILD_ID entries and tracing data. The same decoders
 * serve file mode (the feature index after the data section) and pipe
 * mode (HEADER_FEATURE records, which reader.c hands over).
 *
 * Invariants: every read goes through struct cur or a checked offset;
 * a feature that lies about its size costs that feature only (it is
 * skipped or cut), never the file. Strings live in rd->strs until
 * rd_close().
 *
 * Layout facts: docs/perf-data-format.md §1.1-§1.8.
 */
#include "reader_feat.h"

#include <errno.h>
#include <stdlib.h>

#include "perfspy.h"
#include "tracing.h"

/* ------------------------------------------------------------- evsels */

static const char *const hw_names[] = {
	"cycles", "instructions", "cache-references", "cache-misses",
	"branches", "branch-misses", "bus-cycles", "stalled-cycles-frontend",
	"stalled-cycles-backend", "ref-cycles",
};

static const char *const sw_names[] = {
	"cpu-clock", "task-clock", "page-faults", "context-switches",
	"cpu-migrations", "minor-faults", "major-faults", "alignment-faults",
	"emulation-faults", "dummy", "bpf-output", "cgroup-switches",
};

/* perf's default name for an event nobody named (evsel__name()). */
const char *rd_default_name(struct rd *rd, const struct rd_evsel *ev)
{
	const struct perf_event_attr *a = &ev->attr;
	const char *n;

	if (a->type == PERF_TYPE_HARDWARE && a->config < ARRAY_SIZE(hw_names))
		return hw_names[a->config];
	if (a->type == PERF_TYPE_SOFTWARE && a->config < ARRAY_SIZE(sw_names))
		return sw_names[a->config];
	if (a->type == PERF_TYPE_TRACEPOINT && rd->trace) {
		n = trace_info_event_name(rd->trace, a->config);
		if (n)
			return n;
	}
	n = arena_printf(&rd->strs, "%s%u:0x%llx",
			 a->type == PERF_TYPE_RAW ? "raw" : "type", a->type,
			 (unsigned long long)a->config);
	return n ? n : "unknown";
}

void rd_name_evsels(struct rd *rd)
{
	size_t i;

	for (i = 0; i < rd->nr_evsels; i++)
		if (!rd->evsels[i].name_from_desc)
			rd->evsels[i].name = rd_default_name(rd, &rd->evsels[i]);
}

/* ----------------------------------------------------------- features */

/* A perf string: u32 len, then len bytes (NUL-padded; header.c
 * do_read_string). */
static const char *read_string(struct rd *rd, struct cur *c)
{
	u32 len = cur_u32(c);
	const char *p = cur_take(c, len);

	if (!p)
		return NULL;
	return arena_strndup(&rd->strs, p, strnlen(p, len));
}

static int feat_event_desc(struct rd *rd, struct cur *c)
{
	u32 nr = cur_u32(c), asz = cur_u32(c), i, nr_ids;
	const char *name;

	if (c->bad || asz < ATTR_VER0)
		return 0;
	for (i = 0; i < nr && !c->bad; i++) {
		cur_skip(c, asz);
		nr_ids = cur_u32(c);
		name = read_string(rd, c);
		if (!name)
			return c->bad ? 0 : -ENOMEM;
		if (nr_ids > cur_left(c) / 8)
			break;
		cur_skip(c, (size_t)nr_ids * 8);
		/* EVENT_DESC lists the events in attr order. */
		if (i < rd->nr_evsels) {
			rd->evsels[i].name = name;
			rd->evsels[i].name_from_desc = true;
		}
	}
	return 0;
}

static int feat_build_ids(struct rd *rd, struct cur *c)
{
	while (cur_left(c) >= 8) {
		u16 size = get_u16(c->p + 6);
		struct rd_build_id bid;
		int err;

		if (size < 8 || size > cur_left(c))
			break;
		err = rd_parse_build_id(rd, c->p, size, &bid);
		if (err == -ENOMEM)
			return err;
		if (!err) {
			err = ensure_mem((void **)&rd->build_ids,
					 &rd->cap_build_ids,
					 sizeof(*rd->build_ids),
					 rd->nr_build_ids + 1);
			if (err)
				return err;
			rd->build_ids[rd->nr_build_ids++] = bid;
		}
		cur_skip(c, size);
	}
	return 0;
}

static int feat_cmdline(struct rd *rd, struct cur *c)
{
	u32 nr = cur_u32(c), i;
	char *buf = NULL;
	size_t len = 0, cap = 0;
	int err = 0;

	for (i = 0; i < nr && !c->bad; i++) {
		const char *s = read_string(rd, c);
		size_t n;

		if (!s)
			break;
		n = strlen(s);
		err = ensure_mem((void **)&buf, &cap, 1, len + n + 2);
		if (err)
			break;
		if (len)
			buf[len++] = ' ';
		memcpy(buf + len, s, n + 1);
		len += n;
	}
	if (buf && !err) {
		rd->cmdline = arena_strdup(&rd->strs, buf);
		if (!rd->cmdline)
			err = -ENOMEM;
	}
	free(buf);
	return err;
}

int rd_parse_trace(struct rd *rd, const u8 *p, size_t len)
{
	size_t used = 0;
	int err;

	if (rd->trace)
		return 0;
	err = trace_info_parse(p, len, rd->log, &rd->trace, &used);
	if (err == -ENOMEM)
		return err;
	if (err)
		pr_warn(rd->log, "%s: tracing data unreadable, tracepoints are unnamed",
			rd->name);
	rd_name_evsels(rd);
	return 0;
}

/* Decode one feature payload (header.c process_* functions). */
int rd_process_feature(struct rd *rd, int bit, const u8 *p, size_t len)
{
	struct cur c;

	cur_init(&c, p, len);
	switch (bit) {
	case FEAT_TRACING_DATA:
		return rd_parse_trace(rd, p, len);
	case FEAT_BUILD_ID:
		return feat_build_ids(rd, &c);
	case FEAT_HOSTNAME:
		rd->hostname = read_string(rd, &c);
		break;
	case FEAT_OSRELEASE:
		rd->os_release = read_string(rd, &c);
		break;
	case FEAT_VERSION:
		rd->version = read_string(rd, &c);
		break;
	case FEAT_ARCH:
		rd->arch = read_string(rd, &c);
		break;
	case FEAT_CPUDESC:
		rd->cpu_desc = read_string(rd, &c);
		break;
	case FEAT_CPUID:
		rd->cpuid = read_string(rd, &c);
		break;
	case FEAT_NRCPUS:
		rd->nr_cpus_avail = cur_u32(&c);
		rd->nr_cpus_online = cur_u32(&c);
		break;
	case FEAT_TOTAL_MEM:
		rd->total_mem = cur_u64(&c);
		break;
	case FEAT_CMDLINE:
		return feat_cmdline(rd, &c);
	case FEAT_EVENT_DESC:
		return feat_event_desc(rd, &c);
	case FEAT_SAMPLE_TIME:
		rd->sample_time_first = cur_u64(&c);
		rd->sample_time_last = cur_u64(&c);
		break;
	case FEAT_COMPRESSED:
		rd->compressed = true;
		break;
	default:
		break;
	}
	if (bit < FEAT_LAST)
		rd->feat_bits[bit / 64] |= 1ULL << (bit % 64);
	return 0;
}

/* File mode: the feature index follows the data section, one
 * {offset, size} per set bit in ascending bit order
 * (perf_header__process_sections, header.c). */
int rd_read_features(struct rd *rd, const u64 bits[4], u64 index_off)
{
	u64 off = index_off;
	int bit, err;

	for (bit = 0; bit < 256; bit++) {
		u64 foff, fsize;

		if (!(bits[bit / 64] & (1ULL << (bit % 64))))
			continue;
		if (off > rd->mem_len || rd->mem_len - off < 16) {
			pr_warn(rd->log, "%s: feature index cut short at offset %llu",
				rd->name, (unsigned long long)off);
			return 0;
		}
		foff = get_u64(rd->mem + off);
		fsize = get_u64(rd->mem + off + 8);
		off += 16;
		if (foff > rd->mem_len || fsize > rd->mem_len - foff) {
			pr_warn(rd->log, "%s: feature %d lies outside the file (offset %llu)",
				rd->name, bit, (unsigned long long)(off - 16));
			continue;
		}
		err = rd_process_feature(rd, bit, rd->mem + foff, fsize);
		if (err)
			return err;
	}
	return 0;
}

/* Build-id entry: {header; s32 pid; u8 build_id[20]; u8 size; u8 r1;
 * u16 r2; char filename[]} with the filename at offset 36
 * (perf_header__read_build_ids, header.c). */
int rd_parse_build_id(struct rd *rd, const u8 *p, size_t len,
		      struct rd_build_id *out)
{
	u16 misc;
	size_t n;

	if (len < 37)
		return -PERFSPY_E_BAD_RECORD;
	misc = get_u16(p + 4);
	out->pid = (s32)get_u32(p + 8);
	memcpy(out->id, p + 12, 20);
	/* PERF_RECORD_MISC_BUILD_ID_SIZE (1 << 15): the size byte is valid;
	 * older files always hold 20 bytes. */
	out->size = (misc & (1 << 15)) ? p[32] : 20;
	if (out->size > 20)
		out->size = 20;
	out->cpumode = misc & PERF_RECORD_MISC_CPUMODE_MASK;
	n = strnlen((const char *)p + 36, len - 36);
	out->filename = arena_strndup(&rd->strs, (const char *)p + 36, n);
	return out->filename ? 0 : -ENOMEM;
}
