// SPDX-License-Identifier: GPL-2.0
/*
 * Session: the public handle tying reader, ordering, machine model,
 * symbolizer and folder together for one input.
 *
 * One pass (perfspy_session__convert) walks every record: container
 * records are taken by the reader, kernel records go through the time
 * ordering queue (order.c), side-band records update the machine model,
 * and samples of the selected event become folded stacks. Statistics
 * are kept whatever the filters, so `perfspy info` is the same pass with
 * no folder.
 *
 * Frames are resolved once per (DSO, offset) or kernel address and kept
 * as interned folder ids in a cache, so the cost per sample is a few hash
 * lookups (reference/anchors-and-speed.md B.5: unique addresses are a
 * small share of samples).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "common/fold.h"
#include "frames/machine.h"
#include "common/opts.h"
#include "perfdata/order.h"
#include "perfspy.h"
#include "frames/stacks.h"

struct perfspy_session {
	struct rd rd;
	struct log_sink log;
	struct sym_ctx *sym;
	struct machine mach;
	bool mach_live;
	char *path;
	int fd; /* ours to close, or -1 */
	bool passed;

	struct perfspy_stats stats;
	u64 nr_samples, nr_records, nr_lost, nr_lost_records, nr_throttle;
	u64 time_first, time_last;
	bool mmap_build_ids;
	struct mach_thread **threads;
	size_t nr_threads;

	/* Per-conversion state. */
	struct perfspy_folder *folder;
	const struct perfspy_convert_opts *copts;
	int sel_event;
	struct stk_ctx stk;
	bool stk_live;
	struct chain_ent *chains;
	size_t chains_cap, nr_chains;
	struct unw_ctx *unw;
	char *perf_map_dir;
	struct timespec last_progress;
};

static int session_new(const struct perfspy_open_opts *opts,
		       struct perfspy_session **out)
{
	struct perfspy_session *s;
	struct sym_opts so = { 0 };
	const char *pmd;
	int err;

	if (!OPTS_VALID(opts, perfspy_open_opts))
		return -PERFSPY_E_OPTS;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->fd = -1;
	s->log.fn = OPTS_GET(opts, log_fn, NULL);
	s->log.ctx = OPTS_GET(opts, log_ctx, NULL);
	s->log.level = OPTS_GET(opts, log_level, 0);
	if (!s->log.level)
		s->log.level = LOG_WARN;
	so.symfs = OPTS_GET(opts, symfs, NULL);
	so.buildid_dir = OPTS_GET(opts, buildid_dir, NULL);
	so.kallsyms = OPTS_GET(opts, kallsyms, NULL);
	so.log = &s->log;
	err = sym_ctx_new(&so, &s->sym);
	if (err) {
		free(s);
		return err;
	}
	pmd = OPTS_GET(opts, perf_map_dir, NULL);
	if (pmd && !(s->perf_map_dir = strdup(pmd)))
		err = -ENOMEM;
	if (!err)
		err = unw_ctx_new(s->sym, &s->unw);
	if (err) {
		perfspy_session__close(s);
		return err;
	}
	*out = s;
	return 0;
}

static int set_path(struct perfspy_session *s, const struct perfspy_open_opts *opts,
		    const char *fallback)
{
	const char *name = OPTS_GET(opts, display_name, NULL);

	s->path = strdup(name ? name : fallback);
	return s->path ? 0 : -ENOMEM;
}

static int open_common(struct perfspy_session *s, int fd, const void *mem,
		       size_t len)
{
	struct rd_opts ro = { .log = &s->log, .name = s->path };

	return mem ? rd_open_mem(&s->rd, mem, len, &ro) :
		rd_open_fd(&s->rd, fd, &ro);
}

/* A session on @fd (mapped or streamed) or, with @mem, on a buffer. */
static int open_session(int fd, const void *mem, size_t len,
			const struct perfspy_open_opts *opts, const char *fallback,
			struct perfspy_session **out)
{
	struct perfspy_session *s;
	int err = session_new(opts, &s);

	if (err)
		return err;
	err = set_path(s, opts, fallback);
	if (!err)
		err = open_common(s, fd, mem, len);
	if (err) {
		perfspy_session__close(s);
		return err;
	}
	*out = s;
	return 0;
}

PERFSPY_API int perfspy_session__open_fd(int fd,
					 const struct perfspy_open_opts *opts,
					 struct perfspy_session **out)
{
	return open_session(fd, NULL, 0, opts, "<fd>", out);
}

PERFSPY_API int perfspy_session__open(const char *path,
				      const struct perfspy_open_opts *opts,
				      struct perfspy_session **out)
{
	struct perfspy_session *s;
	int err, fd;

	if (!path || !out)
		return -EINVAL;
	if (!strcmp(path, "-")) {
		PERFSPY_OPTS(perfspy_open_opts, o);

		if (opts && OPTS_VALID(opts, perfspy_open_opts))
			memcpy(&o, opts, opts->sz < sizeof(o) ? opts->sz : sizeof(o));
		o.sz = sizeof(o);
		if (!o.display_name)
			o.display_name = "<stdin>";
		return perfspy_session__open_fd(STDIN_FILENO, &o, out);
	}
	err = session_new(opts, &s);
	if (err)
		return err;
	err = set_path(s, opts, path);
	if (err)
		goto fail;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		log_msg(&s->log, LOG_ERROR, "%s: cannot open: %s", path, strerror(errno));
		goto fail;
	}
	s->fd = fd;
	err = open_common(s, fd, NULL, 0);
	if (err)
		goto fail;
	*out = s;
	return 0;
fail:
	perfspy_session__close(s);
	return err;
}

PERFSPY_API int perfspy_session__open_mem(const void *buf, size_t len,
					  const struct perfspy_open_opts *opts,
					  struct perfspy_session **out)
{
	return open_session(-1, buf, len, opts, "<memory>", out);
}

static void reset_pass(struct perfspy_session *s)
{
	if (s->mach_live)
		mach_free(&s->mach);
	mach_init(&s->mach, s->sym, &s->log);
	s->mach_live = true;
	memset(&s->stats, 0, sizeof(s->stats));
	s->nr_samples = s->nr_records = s->nr_lost = 0;
	s->nr_lost_records = s->nr_throttle = 0;
	s->time_first = s->time_last = 0;
	free(s->threads);
	s->threads = NULL;
	s->nr_threads = 0;
	s->mach.perf_map_dir = s->perf_map_dir;
	/* A pipe is being recorded as we read (perfspy record, perf
	 * record -o -): its processes' perf maps still grow. */
	s->mach.jit_follow = s->rd.pipe_mode && s->rd.fd >= 0;
	free(s->chains);
	s->chains = NULL;
	s->chains_cap = s->nr_chains = 0;
	if (s->stk_live)
		stk_free(&s->stk);
	s->stk_live = false;
}

PERFSPY_API void perfspy_session__close(struct perfspy_session *s)
{
	if (!s)
		return;
	if (s->mach_live)
		mach_free(&s->mach);
	rd_close(&s->rd);
	sym_ctx_free(s->sym);
	if (s->fd >= 0)
		close(s->fd);
	free(s->threads);
	if (s->stk_live)
		stk_free(&s->stk);
	unw_ctx_free(s->unw);
	free(s->chains);
	free(s->perf_map_dir);
	free(s->path);
	free(s);
}

/* ----------------------------------------------------------- samples */

/*
 * Callchain cache: frame-pointer samples repeat the same callchains over
 * and over (unique chains are 7-25% of samples, anchors-and-speed.md
 * B.1), so a chain seen before in the same process, thread and maps goes
 * straight to its folded stack. The key is two independent 64-bit hashes
 * of the chain and its context (a false match needs a 128-bit
 * collision); the process's map generation makes entries stale when its
 * maps change.
 */
struct chain_ent {
	u64 h1, h2;
	u32 stack;
	u32 used;
};

static void chain_key(const struct perfspy_session *s, const struct rec_sample *smp,
		      const struct mach_thread *t, u64 *h1, u64 *h2)
{
	u64 ctx[4];
	size_t len = smp->callchain_nr * 8;

	ctx[0] = ((u64)smp->pid << 32) | mach_maps_gen((struct machine *)&s->mach,
						       (s32)smp->pid);
	/* The thread root frame names the tid and its current name. */
	ctx[1] = OPTS_GET(s->copts, threads, false) ?
		((u64)smp->tid << 32) ^ (u64)(uintptr_t)(t ? t->comm : NULL) : 0;
	ctx[2] = smp->cpumode;
	ctx[3] = smp->callchain_nr;
	hash_bytes128(smp->callchain, len, hash_bytes(ctx, sizeof(ctx), 1), h1, h2);
}

static struct chain_ent *chain_slot(struct perfspy_session *s, u64 h1, u64 h2)
{
	size_t i, mask;

	if ((s->nr_chains + 1) * 2 > s->chains_cap) {
		size_t ncap = s->chains_cap ? s->chains_cap * 2 : 4096, j;
		struct chain_ent *n = calloc(ncap, sizeof(*n));

		if (!n)
			return NULL;
		for (j = 0; j < s->chains_cap; j++) {
			if (!s->chains[j].used)
				continue;
			i = s->chains[j].h1 & (ncap - 1);
			while (n[i].used)
				i = (i + 1) & (ncap - 1);
			n[i] = s->chains[j];
		}
		free(s->chains);
		s->chains = n;
		s->chains_cap = ncap;
	}
	mask = s->chains_cap - 1;
	for (i = h1 & mask; s->chains[i].used; i = (i + 1) & mask)
		if (s->chains[i].h1 == h1 && s->chains[i].h2 == h2)
			break;
	return &s->chains[i];
}

static int fold_sample(struct perfspy_session *s, const struct rd_evsel *ev,
		       const struct rec_sample *smp, struct mach_thread *t)
{
	u64 weight = OPTS_GET(s->copts, weight, 0) == PERFSPY_WEIGHT_PERIOD ?
		smp->period : 1;
	struct chain_ent *ce = NULL;
	size_t n = 0, i;
	u32 tmp, *stack;
	u64 h1, h2;
	int err;

	if (smp->callchain_nr && !(smp->regs_abi && smp->stack_size)) {
		chain_key(s, smp, t, &h1, &h2);
		ce = chain_slot(s, h1, h2);
		if (!ce)
			return -ENOMEM;
		if (ce->used) {
			fold_add_to(s->folder, ce->stack, weight);
			return 0;
		}
	}
	err = stk_build(&s->stk, ev, smp, &n);
	if (err)
		return err;
	stack = s->stk.stack;
	/* Root first: reverse the leaf-first list. */
	for (i = 0; i < n / 2; i++) {
		tmp = stack[i];
		stack[i] = stack[n - 1 - i];
		stack[n - 1 - i] = tmp;
	}
	if (OPTS_GET(s->copts, threads, false)) {
		char buf[512];
		u32 id;
		int len;

		/* py-spy --threads: `thread (TID): NAME` at the root
		 * (pyspy-formats.md §1.5). */
		len = t && t->comm ?
			snprintf(buf, sizeof(buf), "thread (%u): %s", smp->tid, t->comm) :
			snprintf(buf, sizeof(buf), "thread (%u)", smp->tid);
		id = fold_intern(s->folder, buf, (size_t)len < sizeof(buf) ?
				 (size_t)len : sizeof(buf) - 1);
		if (id == FOLD_NO_ID ||
		    ensure_mem((void **)&s->stk.stack, &s->stk.cap_stack,
			       sizeof(*stack), n + 1))
			return -ENOMEM;
		stack = s->stk.stack;
		memmove(stack + 1, stack, n * sizeof(*stack));
		stack[0] = id;
		n++;
	}
	if (!ce)
		return fold_add_ids(s->folder, stack, (u32)n, weight);
	err = fold_add_ids_idx(s->folder, stack, (u32)n, weight, &ce->stack);
	if (!err) {
		ce->h1 = h1;
		ce->h2 = h2;
		ce->used = 1;
		s->nr_chains++;
	}
	return err;
}

static bool event_matches(const char *name, const char *want)
{
	size_t n = strlen(want);

	if (!strcmp(name, want))
		return true;
	return !strncmp(name, want, n) && name[n] == ':' && name[n + 1] &&
	       strspn(name + n + 1, "ukhIGHpPSDWe") == strlen(name + n + 1);
}

/* Find the event named in the options. In pipe mode the names arrive
 * with the metadata records, so this runs again at each sample until it
 * matches (-1: not yet). */
static int select_event(struct perfspy_session *s)
{
	const char *name = OPTS_GET(s->copts, event, NULL);
	size_t i;

	if (!name)
		return 0;
	for (i = 0; i < s->rd.nr_evsels; i++)
		if (!strcmp(s->rd.evsels[i].name, name))
			return (int)i;
	for (i = 0; i < s->rd.nr_evsels; i++)
		if (event_matches(s->rd.evsels[i].name, name))
			return (int)i;
	return -1;
}

static bool keep_sample(struct perfspy_session *s, const struct rec_sample *smp,
			const struct mach_thread *t, int evidx)
{
	const struct perfspy_convert_opts *o = s->copts;
	int pid = OPTS_GET(o, pid, 0), tid = OPTS_GET(o, tid, 0);
	const char *comm = OPTS_GET(o, comm, NULL);

	if (s->sel_event < 0)
		s->sel_event = select_event(s);
	if (evidx != s->sel_event)
		return false;
	if (pid && (s32)smp->pid != pid)
		return false;
	if (tid && (s32)smp->tid != tid)
		return false;
	if (comm && (!t || !t->comm || strcmp(t->comm, comm)))
		return false;
	return true;
}

static int on_sample(struct perfspy_session *s, const struct perf_event_header *h)
{
	struct rd_evsel *ev = rd_evsel_of(&s->rd, h);
	struct mach_thread *t;
	struct rec_sample smp;

	s->nr_samples++;
	if (!ev) {
		s->stats.unknown_ids++;
		return 0;
	}
	ev->nr_samples++;
	if (rec_parse_sample(ev, h, &smp)) {
		s->stats.bad_records++;
		return 0;
	}
	if (smp.has_time && smp.time) {
		if (!s->time_first || smp.time < s->time_first)
			s->time_first = smp.time;
		if (smp.time > s->time_last)
			s->time_last = smp.time;
	}
	t = mach_thread(&s->mach, (s32)smp.pid, (s32)smp.tid);
	if (!t)
		return -ENOMEM;
	t->nr_samples++;
	t->seen = true;
	if (!s->folder) {
		size_t n;

		/* info: unwind user stacks for the statistics only. */
		return smp.regs_abi && smp.stack_size ? stk_build(&s->stk, ev, &smp, &n) : 0;
	}
	if (!keep_sample(s, &smp, t, (int)rd_evsel_idx(&s->rd, ev))) {
		s->stats.samples_filtered++;
		return 0;
	}
	s->stats.samples_kept++;
	return fold_sample(s, ev, &smp, t);
}

/* ----------------------------------------------------------- records */

static int on_build_id(struct perfspy_session *s, const struct perf_event_header *h)
{
	struct rd_build_id b;
	int err = rd_parse_build_id(&s->rd, (const u8 *)h, hdr_size(h), &b);

	if (err == -ENOMEM)
		return err;
	if (err) {
		s->stats.bad_records++;
		return 0;
	}
	return mach_add_build_id(&s->mach, b.filename, b.id, b.size);
}

static int deliver(struct perfspy_session *s, const struct perf_event_header *h)
{
	union {
		struct rec_mmap m;
		struct rec_comm c;
		struct rec_fork f;
	} r;
	u64 lost;
	int err = 0;

	switch (hdr_type(h)) {
	case PERF_RECORD_SAMPLE:
		return on_sample(s, h);
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
		if ((err = rec_parse_mmap(h, &r.m)))
			break;
		if (r.m.build_id)
			s->mmap_build_ids = true;
		return mach_mmap(&s->mach, &r.m,
				 hdr_misc(h) & PERF_RECORD_MISC_CPUMODE_MASK);
	case PERF_RECORD_COMM:
		if (!(err = rec_parse_comm(h, &r.c)))
			return mach_comm(&s->mach, &r.c);
		break;
	case PERF_RECORD_FORK:
		if (!(err = rec_parse_fork(h, &r.f)))
			return mach_fork(&s->mach, &r.f);
		break;
	case PERF_RECORD_EXIT:
		break;
	case PERF_RECORD_LOST:
	case PERF_RECORD_LOST_SAMPLES:
		if (!(err = rec_parse_lost(h, &lost))) {
			s->nr_lost += lost;
			s->nr_lost_records++;
		}
		break;
	case PERF_RECORD_THROTTLE:
		s->nr_throttle++;
		break;
	case REC_HEADER_BUILD_ID:
		return on_build_id(s, h);
	default:
		if (hdr_type(h) >= PERF_RECORD_MAX &&
		    hdr_type(h) < 64)
			s->stats.unknown_records++;
		else if (hdr_type(h) > REC_FINISHED_INIT)
			s->stats.unknown_records++;
		break;
	}
	if (err)
		s->stats.bad_records++;
	return 0;
}

static int flush_queue(struct perfspy_session *s, struct order *o, u64 limit)
{
	struct ord_ent e;
	int err = 0;

	while (!err && ord_pop(o, limit, &e)) {
		err = deliver(s, e.hdr);
		ord_done(o, &e);
	}
	return err;
}

static int report_progress(struct perfspy_session *s)
{
	perfspy_progress_fn fn = OPTS_GET(s->copts, progress_fn, NULL);
	struct timespec now;

	if (!fn)
		return 0;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if ((now.tv_sec - s->last_progress.tv_sec) * 1000000000L +
	    (now.tv_nsec - s->last_progress.tv_nsec) < 100000000L)
		return 0;
	s->last_progress = now;
	if (fn(OPTS_GET(s->copts, progress_ctx, NULL), s->rd.pos,
	       s->rd.fd >= 0 ? 0 : s->rd.data_end))
		return -PERFSPY_E_INTERRUPTED;
	return 0;
}

/* Whether records can be time ordered: every event samples TIME and
 * side-band records carry it (sample_id_all). Otherwise file order. */
static bool can_order(const struct rd *rd)
{
	size_t i;

	for (i = 0; i < rd->nr_evsels; i++)
		if (!(rd->evsels[i].attr.sample_type & PERF_SAMPLE_TIME) ||
		    !rd->evsels[i].attr.sample_id_all)
			return false;
	return rd->nr_evsels > 0;
}

static int run_pass(struct perfspy_session *s)
{
	struct order o;
	struct rd_rec rec;
	u64 t, n = 0, last_check = 0;
	int err = 0, r;

	ord_init(&o);
	while ((r = rd_next(&s->rd, &rec)) > 0) {
		u32 type = hdr_type(rec.hdr);

		s->nr_records++;
		/* Every 4096 records or 4 MB of input (DWARF samples are
		 * 8-64 KB each): progress, and pages behind the oldest
		 * queued record are done, so RSS tracks the queue, not the
		 * file. */
		if ((++n & 0xfff) == 0 || rec.offset - last_check > (4u << 20)) {
			u64 keep = ord_min_offset(&o);

			last_check = rec.offset;
			if ((err = report_progress(s)))
				break;
			rd_release_before(&s->rd, keep < rec.offset ? keep : rec.offset);
		}
		if (type == REC_FINISHED_ROUND) {
			err = flush_queue(s, &o, ord_round(&o));
		} else if (can_order(&s->rd) && (t = rec_time(&s->rd, rec.hdr))) {
			if (t < o.flushed_upto)
				s->stats.out_of_order++;
			err = ord_push(&o, &rec, t);
			/* perf flushes half its queue when memory runs
			 * short; we bound the copies the same way. */
			if (!err && o.owned_bytes > (256u << 20))
				err = flush_queue(s, &o, o.heap[0].time +
						  (o.max_time - o.heap[0].time) / 2);
		} else {
			err = deliver(s, rec.hdr);
		}
		if (err)
			break;
	}
	if (!err && r < 0)
		err = r;
	if (!err)
		err = flush_queue(s, &o, UINT64_MAX);
	ord_free(&o);
	return err;
}

/* The BUILD_ID feature's table (file mode): binaries are then found by
 * build id first and checked against it (perf's build-id cache). */
static int load_build_ids(struct perfspy_session *s)
{
	size_t i;
	int err;

	for (i = 0; i < s->rd.nr_build_ids; i++) {
		const struct rd_build_id *b = &s->rd.build_ids[i];

		err = mach_add_build_id(&s->mach, b->filename, b->id, b->size);
		if (!err && !strcmp(b->filename, "[kernel.kallsyms]"))
			err = sym_kernel_set_build_id(s->sym, b->id, b->size);
		if (err)
			return err;
	}
	return 0;
}

static int start_stacks(struct perfspy_session *s,
			const struct perfspy_convert_opts *o)
{
	struct py_opts po = {
		.qualname = OPTS_GET(o, qualname, false),
		.no_lineno = OPTS_GET(o, no_lineno, false),
		.full_filenames = OPTS_GET(o, full_filenames, false),
		.log = &s->log,
	};
	struct stk_opts so = {
		.no_kernel = OPTS_GET(o, no_kernel, false),
		.keep_interpreter = OPTS_GET(o, keep_interpreter, false),
		.python_only = OPTS_GET(o, python_only, false),
	};
	int err;

	err = stk_init(&s->stk, s->sym, &s->mach, s->unw, s->folder, &po, &so,
		       &s->stats);
	if (!err)
		s->stk_live = true;
	return err;
}

PERFSPY_API int perfspy_session__convert(struct perfspy_session *s,
					 const struct perfspy_convert_opts *opts,
					 struct perfspy_folder *folder)
{
	size_t i;
	int err;

	if (!s)
		return -EINVAL;
	if (!OPTS_VALID(opts, perfspy_convert_opts))
		return -PERFSPY_E_OPTS;
	err = rd_rewind(&s->rd);
	if (err)
		return err;
	if (s->passed)
		for (i = 0; i < s->rd.nr_evsels; i++)
			s->rd.evsels[i].nr_samples = 0;
	s->copts = opts;
	s->folder = folder;
	s->sel_event = select_event(s);
	if (s->sel_event < 0 && !s->rd.pipe_mode) {
		log_msg(&s->log, LOG_ERROR, "%s: no event named '%s'", s->path,
			OPTS_GET(opts, event, ""));
		return -PERFSPY_E_NO_EVENT;
	}
	reset_pass(s);
	err = load_build_ids(s);
	if (!err)
		err = start_stacks(s, opts);
	if (err)
		return err;
	err = run_pass(s);
	s->passed = true;
	if (!err)
		err = mach_sorted_threads(&s->mach, &s->threads, &s->nr_threads);
	if (!err && s->sel_event < 0) {
		log_msg(&s->log, LOG_ERROR, "%s: no event named '%s'", s->path,
			OPTS_GET(opts, event, ""));
		err = -PERFSPY_E_NO_EVENT;
	}
	s->folder = NULL;
	s->copts = NULL;
	return err;
}

/* ------------------------------------------------------------- query */

PERFSPY_API int perfspy_session__info(const struct perfspy_session *s,
				      struct perfspy_info *info)
{
	const struct rd *rd = &s->rd;
	struct perfspy_info i = { 0 };
	size_t k;

	if (!info || info->sz < sizeof(size_t))
		return -PERFSPY_E_OPTS;
	i.sz = info->sz < sizeof(i) ? info->sz : sizeof(i);
	i.path = s->path;
	i.pipe_mode = rd->pipe_mode;
	i.file_size = rd->fd >= 0 ? 0 : rd->file_size;
	i.data_offset = rd->data_offset;
	i.data_size = rd->pipe_mode ? rd->pos - rd->data_offset : rd->data_end - rd->data_offset;
	i.perf_version = rd->version;
	i.hostname = rd->hostname;
	i.os_release = rd->os_release;
	i.arch = rd->arch;
	i.cpu_desc = rd->cpu_desc;
	i.cmdline = rd->cmdline;
	i.nr_cpus_online = rd->nr_cpus_online;
	i.nr_cpus_avail = rd->nr_cpus_avail;
	i.total_mem_kb = rd->total_mem;
	i.nr_events = (u32)rd->nr_evsels;
	i.has_build_ids = rd->nr_build_ids > 0 || s->mmap_build_ids;
	for (k = 0; k < rd->nr_evsels; k++) {
		const struct perf_event_attr *a = &rd->evsels[k].attr;

		if (a->sample_type & PERF_SAMPLE_CALLCHAIN)
			i.has_callchain = true;
		if ((a->sample_type & PERF_SAMPLE_STACK_USER) &&
		    (a->sample_type & PERF_SAMPLE_REGS_USER)) {
			i.has_user_stack = true;
			if (a->sample_stack_user > i.stack_user_size)
				i.stack_user_size = a->sample_stack_user;
		}
	}
	i.compressed = rd->compressed;
	i.nr_samples = s->nr_samples;
	i.nr_records = s->nr_records;
	i.nr_lost = s->nr_lost;
	i.nr_lost_records = s->nr_lost_records;
	i.nr_throttle = s->nr_throttle;
	i.time_first = s->time_first;
	i.time_last = s->time_last;
	i.nr_processes = 0;
	for (k = 0; k < s->nr_threads; k++)
		if (!k || s->threads[k]->pid != s->threads[k - 1]->pid)
			i.nr_processes++;
	i.nr_threads = (u32)s->nr_threads;
	i.truncated = rd->truncated;
	i.truncated_at = rd->truncated_at;
	if (s->stk_live) {
		i.stacks_unwound = s->stk.unw_samples;
		i.stacks_root = s->stk.unw_root;
		i.stacks_cut = s->stk.unw_cut;
		i.stacks_lost = s->stk.unw_lost;
		i.max_stack_used = s->stk.max_stack_used;
	}
	i.python_frames = s->stats.frames_python;
	memcpy(info, &i, i.sz);
	return 0;
}

PERFSPY_API int perfspy_session__event(const struct perfspy_session *s,
				       uint32_t idx, struct perfspy_event *ev)
{
	const struct rd_evsel *e;
	struct perfspy_event v = { 0 };

	if (!ev || ev->sz < sizeof(size_t))
		return -PERFSPY_E_OPTS;
	if (idx >= s->rd.nr_evsels)
		return -ENOENT;
	e = &s->rd.evsels[idx];
	v.sz = ev->sz < sizeof(v) ? ev->sz : sizeof(v);
	v.name = e->name;
	v.type = e->attr.type;
	v.config = e->attr.config;
	v.sample_type = e->attr.sample_type;
	v.sample_period = e->attr.sample_period;
	v.freq = e->attr.freq;
	v.nr_samples = e->nr_samples;
	memcpy(ev, &v, v.sz);
	return 0;
}

PERFSPY_API int perfspy_session__thread(const struct perfspy_session *s,
					uint32_t idx, struct perfspy_thread *t)
{
	struct perfspy_thread v = { 0 };
	const struct mach_thread *m;

	if (!t || t->sz < sizeof(size_t))
		return -PERFSPY_E_OPTS;
	if (idx >= s->nr_threads)
		return -ENOENT;
	m = s->threads[idx];
	v.sz = t->sz < sizeof(v) ? t->sz : sizeof(v);
	v.pid = m->pid;
	v.tid = m->tid;
	v.comm = m->comm;
	v.nr_samples = m->nr_samples;
	memcpy(t, &v, v.sz);
	return 0;
}

PERFSPY_API int perfspy_session__stats(const struct perfspy_session *s,
				       struct perfspy_stats *stats)
{
	size_t sz;

	if (!stats || stats->sz < sizeof(size_t))
		return -PERFSPY_E_OPTS;
	sz = stats->sz < sizeof(s->stats) ? stats->sz : sizeof(s->stats);
	memcpy(stats, &s->stats, sz);
	stats->sz = sz;
	return 0;
}
