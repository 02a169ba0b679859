// SPDX-License-Identifier: GPL-2.0
/*
 * perfspy-dlfilter.so: py-spy folded stacks from inside `perf script`.
 *
 *	perf script -i perf.data --dlfilter perfspy-dlfilter.so --dlarg OUT
 *		[--dlarg threads] [--dlarg format=raw|flamegraph|speedscope|pprof]
 *		[--dlarg nolineno] [--dlarg lineno] [--dlarg qualname] [--dlarg event=NAME]
 *
 * perf calls filter_event() for every sample its own filters (--pid,
 * --tid, --comm, --cpu, --time) kept, with the raw callchain. Each
 * address is mapped by perf (resolve_address(): binary, build id, file
 * offset, perf-map symbol) and named by libperfspy's symbolizer, the
 * code `perfspy convert` names frames with, so both write the same
 * frames. Stacks are folded in memory and written in stop(). Returning 1
 * keeps perf from printing the sample.
 *
 * API: perf's tools/perf/include/perf/perf_dlfilter.h (perf 5.14 and
 * newer; Documentation/perf-dlfilter.txt). Structs grow at their ends and
 * carry their size: a field past the size perf passes is not read. The
 * strings perf hands out belong to perf and are used only within the
 * call; the symbolizer and folder copy what they keep.
 *
 * A DWARF recording (--call-graph dwarf) keeps the user part of each
 * stack as a register set and a stack dump that perf gives a dlfilter no
 * access to; its raw callchain holds the kernel part only. Such samples
 * get their kernel frames (user-mode ones the single frame
 * `[user stack not available to a dlfilter]`), and one line on stderr
 * says to use `perfspy convert`, which unwinds the dumps.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <perf/perf_dlfilter.h>

#include "perfspy.h"

#define EXPORT __attribute__((visibility("default")))

/* perf fills this in before start() (util/dlfilter.c, dlsym of the name). */
EXPORT struct perf_dlfilter_fns perf_dlfilter_fns;

/* Does a struct of @size bytes reach the end of @field? */
#define HAS(type, size, field) \
	((size) >= offsetof(type, field) + sizeof(((type *)0)->field))
#define FN_HAS(field) \
	(perf_dlfilter_fns.field != NULL)

struct state {
	char *out_path;
	char *event;		 /* only this event; NULL: the first one seen */
	bool threads;
	bool lineno; /* flamegraph, speedscope: one frame per line (docs/output.md §7.1) */
	int format;
	struct perfspy_convert_opts copts;
	struct perfspy_symbolizer *sym;
	struct perfspy_folder *folder;
	struct perfspy_location *locs;
	size_t cap_locs;
	const char **frames; /* a stack with its thread root */
	size_t cap_frames;
	unsigned long long samples, errors;
	bool dwarf_said;
	char *kernel_bid; /* the kernel's build id, asked once */
	size_t kernel_bid_size;
	bool kernel_bid_asked;
	/* pprof: the span of the samples' times, as convert gives it
	 * (docs/output.md). */
	__u64 t_first, t_last;
	bool have_time;
};

static void log_stderr(void *ctx, int level, const char *msg)
{
	(void)ctx;
	(void)level;
	fprintf(stderr, "perfspy-dlfilter: %s\n", msg);
}

static void state_free(struct state *st)
{
	if (!st)
		return;
	perfspy_symbolizer__free(st->sym);
	perfspy_folder__free(st->folder);
	free(st->out_path);
	free(st->event);
	free(st->locs);
	free(st->frames);
	free(st->kernel_bid);
	free(st);
}

static int parse_args(struct state *st, void *ctx)
{
	char **argv = NULL;
	int argc = 0, i;

	if (FN_HAS(args))
		argv = perf_dlfilter_fns.args(ctx, &argc);
	for (i = 0; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "threads")) {
			st->threads = true;
		} else if (!strcmp(a, "nolineno")) {
			st->copts.no_lineno = true;
		} else if (!strcmp(a, "lineno")) {
			st->lineno = true;
		} else if (!strcmp(a, "qualname")) {
			st->copts.qualname = true;
		} else if (!strcmp(a, "format=raw")) {
			st->format = PERFSPY_FORMAT_RAW;
		} else if (!strcmp(a, "format=flamegraph")) {
			st->format = PERFSPY_FORMAT_FLAMEGRAPH;
		} else if (!strcmp(a, "format=pprof")) {
			st->format = PERFSPY_FORMAT_PPROF;
		} else if (!strcmp(a, "format=speedscope")) {
			/* One profile per thread, as `perfspy convert
			 * --format speedscope` implies --threads. */
			st->format = PERFSPY_FORMAT_SPEEDSCOPE;
			st->threads = true;
		} else if (!strncmp(a, "event=", 6) && a[6]) {
			free(st->event);
			if (!(st->event = strdup(a + 6)))
				return -ENOMEM;
		} else if (!strchr(a, '=') && !st->out_path) {
			if (!(st->out_path = strdup(a)))
				return -ENOMEM;
		} else {
			fprintf(stderr, "perfspy-dlfilter: unknown --dlarg '%s' "
				"(OUT, threads, format=raw|flamegraph|speedscope|pprof, "
				"nolineno, lineno, qualname, event=NAME)\n", a);
			return -EINVAL;
		}
	}
	if (!st->out_path) {
		fprintf(stderr, "perfspy-dlfilter: no output file: "
			"--dlarg OUT is required\n");
		return -EINVAL;
	}
	return 0;
}

EXPORT int start(void **data, void *ctx)
{
	PERFSPY_OPTS(perfspy_open_opts, oo, .log_fn = log_stderr);
	struct state *st = calloc(1, sizeof(*st));
	int err;

	if (!st)
		return -ENOMEM;
	st->copts.sz = sizeof(st->copts);
	err = parse_args(st, ctx);
	if (!err)
		err = perfspy_folder__new(&st->folder);
	/* speedscope's time order, as convert writes it (docs/output.md §8). */
	if (!err && st->format == PERFSPY_FORMAT_SPEEDSCOPE)
		err = perfspy_folder__keep_timeline(st->folder, true);
	if (!err)
		err = perfspy_symbolizer__new(&oo, &st->copts, &st->sym);
	if (err) {
		if (err != -EINVAL) {
			char buf[128];

			perfspy_strerror(err, buf, sizeof(buf));
			fprintf(stderr, "perfspy-dlfilter: %s\n", buf);
		}
		state_free(st);
		return err;
	}
	*data = st;
	return 0;
}

static int grow(void **p, size_t *cap, size_t elem, size_t need)
{
	size_t ncap = *cap ? *cap : 64;
	void *n;

	if (need <= *cap)
		return 0;
	while (ncap < need)
		ncap *= 2;
	n = realloc(*p, ncap * elem);
	if (!n)
		return -ENOMEM;
	*p = n;
	*cap = ncap;
	return 0;
}

/* perf's kernel build id, for the symbolizer to find the recorded
 * kernel's kallsyms in the build-id cache as `perfspy convert` does. The
 * symbolizer takes it with the first kernel address only; when that lies
 * in a module, whose build id is not the kernel's, none is given and
 * kallsyms is read as it is (/proc/kallsyms). */
static void kernel_build_id(struct state *st, void *ctx, __u64 ip)
{
	struct perf_dlfilter_al al;

	if (st->kernel_bid_asked)
		return;
	st->kernel_bid_asked = true;
	memset(&al, 0, sizeof(al));
	al.size = sizeof(al);
	if (!FN_HAS(resolve_address) || perf_dlfilter_fns.resolve_address(ctx, ip, &al) ||
	    !al.dso || strcmp(al.dso, "[kernel.kallsyms]") || !al.buildid ||
	    !al.buildid_size)
		return;
	st->kernel_bid = malloc(al.buildid_size);
	if (st->kernel_bid) {
		memcpy(st->kernel_bid, al.buildid, al.buildid_size);
		st->kernel_bid_size = al.buildid_size;
	}
}

/* A perf map's (/tmp/perf-PID.map) pseudo binary: perf names anonymous
 * executable memory after the map file it reads symbols from
 * (util/map.c, map__new). */
static bool is_perf_map(const char *dso)
{
	size_t n = strlen(dso);

	return !strncmp(dso, "/tmp/perf-", 10) && n > 14 && !strcmp(dso + n - 4, ".map");
}

/* Fill @l for user address @ip from perf's view of it. */
static void user_location(void *ctx, __u64 ip, struct perfspy_location *l)
{
	struct perf_dlfilter_al al;

	memset(&al, 0, sizeof(al));
	al.size = sizeof(al);
	l->addr = ip;
	if (!FN_HAS(resolve_address) || perf_dlfilter_fns.resolve_address(ctx, ip, &al) ||
	    !al.dso) {
		l->kind = PERFSPY_LOC_UNKNOWN;
		return;
	}
	if (is_perf_map(al.dso) || !strncmp(al.dso, "//anon", 6) ||
	    !strcmp(al.dso, "[JIT]")) {
		/* JIT code: perf named it from the perf map; without a
		 * name it is anonymous memory, as the machine model
		 * calls it. */
		if (al.sym) {
			l->kind = PERFSPY_LOC_SYMBOL;
			l->symbol = al.sym;
		} else {
			l->kind = PERFSPY_LOC_UNKNOWN;
			l->dso = "//anon";
		}
		return;
	}
	/* For a file map perf's al.addr is map__map_ip(): ip - start +
	 * pgoff, the file offset the symbolizer takes. */
	l->kind = PERFSPY_LOC_DSO;
	l->dso = al.dso;
	l->offset = al.addr;
	if (al.buildid && al.buildid_size) {
		l->build_id = al.buildid;
		l->build_id_size = al.buildid_size;
	}
}

static int add_loc(struct state *st, size_t *n)
{
	if (grow((void **)&st->locs, &st->cap_locs, sizeof(*st->locs), *n + 1))
		return -ENOMEM;
	memset(&st->locs[*n], 0, sizeof(st->locs[*n]));
	st->locs[*n].sz = sizeof(st->locs[*n]);
	(*n)++;
	return 0;
}

/* One address; @kernel by its callchain context, as `convert` decides. */
static int push_addr(struct state *st, void *ctx, __u64 ip, bool kernel,
		     bool is_return, size_t *n)
{
	struct perfspy_location *l;

	if (add_loc(st, n))
		return -ENOMEM;
	l = &st->locs[*n - 1];
	l->is_return = is_return;
	if (kernel) {
		kernel_build_id(st, ctx, ip);
		l->kind = PERFSPY_LOC_KERNEL;
		l->addr = ip;
		l->build_id = (const uint8_t *)st->kernel_bid;
		l->build_id_size = st->kernel_bid_size;
		return 0;
	}
	user_location(ctx, ip, l);
	return 0;
}

/* The locations of @s leaf first, by the rules stacks.c applies to a
 * perf.data sample (push_callchain()). */
static int sample_locations(struct state *st, const struct perf_dlfilter_sample *s,
			    void *ctx, bool user, size_t *n)
{
	bool kernel = s->cpumode == PERF_RECORD_MISC_KERNEL, first = true;
	bool skip = false;
	__u64 i, ip;
	int err;

	*n = 0;
	if (!s->raw_callchain_nr || !s->raw_callchain) {
		if (!kernel && !user)
			return 0;
		return push_addr(st, ctx, s->ip, kernel, false, n);
	}
	for (i = 0; i < s->raw_callchain_nr; i++) {
		ip = s->raw_callchain[i];
		if (ip >= (__u64)PERF_CONTEXT_MAX) {
			kernel = ip == (__u64)PERF_CONTEXT_KERNEL;
			skip = !(kernel || (ip == (__u64)PERF_CONTEXT_USER && user));
			first = true;
			continue;
		}
		if (skip)
			continue;
		/* The first entry of a context is where the task was
		 * interrupted, the rest are return addresses. */
		err = push_addr(st, ctx, ip, kernel, !first, n);
		first = false;
		if (err)
			return err;
	}
	return 0;
}

static bool is_dwarf(void *ctx)
{
	struct perf_event_attr *attr = FN_HAS(attr) ? perf_dlfilter_fns.attr(ctx) : NULL;

	return attr && (attr->sample_type & PERF_SAMPLE_STACK_USER);
}

static const char *const user_lost = "[user stack not available to a dlfilter]";

static int fold(struct state *st, const struct perf_dlfilter_sample *s, void *ctx,
		size_t nr_locs)
{
	const char *const *frames;
	size_t nr, root = 0;
	char buf[512];
	int err;

	err = perfspy_symbolizer__stack(st->sym, st->locs, nr_locs, &frames, &nr);
	if (err)
		return err;
	if (!nr && !nr_locs && st->dwarf_said) {
		/* A user-mode sample of a DWARF recording: its stack is in
		 * the dump perf keeps from us. It still counts, so the
		 * kernel's share is not overstated. */
		frames = &user_lost;
		nr = 1;
	}
	if (grow((void **)&st->frames, &st->cap_frames, sizeof(*st->frames), nr + 1))
		return -ENOMEM;
	if (st->threads) {
		const struct perf_dlfilter_al *al =
			FN_HAS(resolve_ip) ? perf_dlfilter_fns.resolve_ip(ctx) : NULL;
		const char *comm = al ? al->comm : NULL;

		/* py-spy --threads: `thread (TID): NAME` at the root, as
		 * session.c writes it. perf names a thread it saw no COMM
		 * for ":TID" (thread__comm_str()); convert then has no name. */
		if (comm && comm[0] && comm[0] != ':')
			snprintf(buf, sizeof(buf), "thread (%u): %s", (unsigned)s->tid, comm);
		else
			snprintf(buf, sizeof(buf), "thread (%u)", (unsigned)s->tid);
		st->frames[root++] = buf;
	}
	memcpy(st->frames + root, frames, nr * sizeof(*frames));
	return perfspy_folder__add_sample(st->folder, st->frames, nr + root, 1, s->time,
					  (uint32_t)s->tid);
}

EXPORT int filter_event(void *data, const struct perf_dlfilter_sample *s, void *ctx)
{
	struct state *st = data;
	const char *ev = HAS(struct perf_dlfilter_sample, s->size, event) ?
		s->event : NULL;
	bool dwarf;
	size_t n;
	int err;

	if (!st || !HAS(struct perf_dlfilter_sample, s->size, raw_callchain))
		return 1;
	/* One event, as `perfspy convert` folds one: the first one seen
	 * unless event=NAME chose it. */
	if (ev) {
		if (!st->event && !(st->event = strdup(ev)))
			return -ENOMEM;
		if (strcmp(ev, st->event))
			return 1;
	}
	dwarf = is_dwarf(ctx);
	if (dwarf && !st->dwarf_said) {
		st->dwarf_said = true;
		fprintf(stderr, "perfspy-dlfilter: DWARF recording: perf gives a "
			"dlfilter no user stack, so stacks have kernel frames only; "
			"use `perfspy convert` for whole stacks\n");
	}
	err = sample_locations(st, s, ctx, !dwarf, &n);
	if (!err)
		err = fold(st, s, ctx, n);
	if (!err && HAS(struct perf_dlfilter_sample, s->size, time)) {
		if (!st->have_time || s->time < st->t_first)
			st->t_first = s->time;
		if (!st->have_time || s->time > st->t_last)
			st->t_last = s->time;
		st->have_time = true;
	}
	if (err == -ENOMEM)
		return err;
	if (err)
		st->errors++; /* a malformed location costs its sample */
	else
		st->samples++;
	return 1;
}

static const char *frame_lib(void *ctx, const char *frame, size_t len)
{
	return perfspy_symbolizer__frame_lib(ctx, frame, len);
}

static bool frame_inlined(void *ctx, const char *frame, size_t len)
{
	return perfspy_symbolizer__frame_inlined(ctx, frame, len);
}

/* pprof as convert writes it: Mappings with the binaries' paths and build
 * ids, inlined frames as Lines, the program of the most samples first,
 * the samples' time span. perf gives a dlfilter no process image, so the
 * program is the symbolizer's guess from the stacks
 * (perfspy_symbolizer__program()). The arrays are the caller's to free;
 * NULL on ENOMEM leaves them out. */
static void pprof_opts(struct state *st, struct perfspy_write_opts *wo)
{
	PERFSPY_OPTS(perfspy_dso, d);
	const char **paths, **bids;
	uint32_t n = 0, i;

	while (!perfspy_symbolizer__dso(st->sym, n, &d))
		n++;
	paths = n ? calloc(n, sizeof(*paths)) : NULL;
	bids = n ? calloc(n, sizeof(*bids)) : NULL;
	if (paths && bids) {
		for (i = 0; i < n && !perfspy_symbolizer__dso(st->sym, i, &d); i++) {
			paths[i] = d.path;
			bids[i] = d.build_id;
		}
		wo->dso_paths = paths;
		wo->dso_build_ids = bids;
		wo->nr_dsos = i;
	} else {
		free(paths);
		free(bids);
	}
	wo->main_binary = perfspy_symbolizer__program(st->sym);
	wo->frame_inlined = frame_inlined;
	wo->frame_inlined_ctx = st->sym;
	if (st->have_time && st->t_last > st->t_first)
		wo->duration_ns = st->t_last - st->t_first;
}

EXPORT int stop(void *data, void *ctx)
{
	struct state *st = data;
	PERFSPY_OPTS(perfspy_write_opts, wo);
	FILE *f;
	int err;

	(void)ctx;
	/* perf calls stop() even when start() failed (util/dlfilter.c:
	 * dlfilter__cleanup), with no data. */
	if (!st)
		return 0;
	wo.format = st->format;
	wo.lineno = st->lineno;
	/* The flame graph's library colours, as convert's (docs/output.md §7.2). */
	wo.frame_lib = frame_lib;
	wo.frame_lib_ctx = st->sym;
	if (st->format == PERFSPY_FORMAT_PPROF)
		pprof_opts(st, &wo);
	f = fopen(st->out_path, "w");
	if (!f) {
		err = -errno;
		fprintf(stderr, "perfspy-dlfilter: %s: %s\n", st->out_path, strerror(-err));
	} else {
		err = perfspy_folder__write(st->folder, f, &wo);
		if (fclose(f) && !err)
			err = -EIO;
		if (err) {
			char buf[128];

			perfspy_strerror(err, buf, sizeof(buf));
			fprintf(stderr, "perfspy-dlfilter: %s: %s\n", st->out_path, buf);
		}
	}
	if (!err)
		fprintf(stderr, "perfspy-dlfilter: %llu samples, %zu stacks -> %s\n",
			st->samples, perfspy_folder__nr_stacks(st->folder), st->out_path);
	if (st->errors)
		fprintf(stderr, "perfspy-dlfilter: %llu samples skipped (bad locations)\n",
			st->errors);
	free((void *)wo.dso_paths);
	free((void *)wo.dso_build_ids);
	state_free(st);
	return err;
}

EXPORT const char *filter_description(const char **long_description)
{
	if (long_description)
		*long_description =
			"Writes the samples' stacks as py-spy folded stacks (or a "
			"flame graph, or speedscope JSON) to the file given with "
			"--dlarg OUT, named as `perfspy convert` names them. Suits "
			"frame-pointer (-g) and LBR callchains; DWARF recordings "
			"give only kernel frames here. --dlarg: threads, "
			"format=raw|flamegraph|speedscope|pprof, nolineno, lineno, qualname, event=NAME.";
	return "py-spy folded stacks from perf script (perfspy)";
}
