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
 * lookups (docs/design.md §6.2: unique addresses are a
 * small share of samples).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "common/fold.h"
#include "common/hash.h"
#include "frames/machine.h"
#include "frames/namer.h"
#include "common/opts.h"
#include "perfdata/evlist.h"
#include "perfdata/order.h"
#include "perfspy.h"
#include "frames/python.h"
#include "frames/stacks.h"
#include "offcpu.h"
#include "perfdata/tracing.h"

/*
 * Callchain cache: frame-pointer samples repeat the same callchains over
 * and over (unique chains are 7-25% of samples, docs/design.md
 * §6.2), so a chain seen before in the same process, thread and maps goes
 * straight to its folded stack. The key is two independent 64-bit hashes
 * of the chain and its context, of which an entry keeps 95 bits (a false
 * match needs them all to collide: the table keeps h1 with its top bit
 * set, htab_tag, and the entry the low half of h2; at a million chains
 * that is one chance in 10^16); the process's map generation makes
 * entries stale when its maps change. 16 bytes an entry: a power of
 * two, so no slot straddles two cache lines and the table's sizes are
 * whole huge pages (docs/design.md §6.10).
 */
struct chain_ent {
	u64 h1; /* the table's hash word */
	u32 h2;
	u32 stack;
};
_Static_assert(sizeof(struct chain_ent) == 16, "callchain cache slots: 16 bytes");

/*
 * The cache pays where chains repeat. Where they do not, each sample
 * paid for a key, a miss and an entry, and the table grew with every
 * sample: 84% of the chains of a system-wide recording of a compile are
 * distinct (issue 16; without the cache it took 2% fewer instructions
 * and 9 MB less memory), against 35% on deep stacks (with the cache,
 * 19% fewer instructions). So when a window of CHAIN_WIN lookups finds
 * fewer than a quarter of its chains, the cache rests for CHAIN_REST
 * samples, then tries again. Only the cost changes: a stack built again
 * is the stack the cache would have given (docs/design.md §6.10).
 */
#define CHAIN_WIN 4096
#define CHAIN_REST (8 * CHAIN_WIN)

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
	/* What is missing (after a pass): frame-pointer user stacks, those
	 * ending at 0x0 or outside any map; processes that ran Python with
	 * no perf map, and their samples. */
	u64 fp_stacks, fp_stacks_bad;
	/* The record being delivered (its offset, its rd_rec.dig), and its
	 * callchain's digest when the warming thread worked it out
	 * (sample_digest(), docs/design.md §6.21): DG_* in dg_state. */
	u64 cur_off;
	u32 cur_dig;
	u8 dg_state;
	u64 dg_taken; /* digests taken (DG_OK), for copy_end()'s -v -v */
	struct rd_digest dg;
	u32 py_nomap_procs;
	u64 py_nomap_samples;

	/* Per-conversion state. */
	struct perfspy_folder *folder;
	const struct perfspy_convert_opts *copts;
	int sel_event;
	/* Events folded together with sel_event (the same event on each
	 * core PMU of a hybrid CPU), one flag per evsel; sel_valid: the
	 * last conversion had a folder, so sel_* say what it folded. */
	bool *sel_also;
	size_t nr_sel_also;
	bool sel_valid;
	bool sel_twins; /* stream, no --event: sel_event's twins too */
	struct stk_ctx stk;
	bool stk_live;
	struct htab chains; /* struct chain_ent */
	u32 chain_tries, chain_hits, chain_rest; /* CHAIN_WIN */
	struct unw_ctx *unw;
	char *perf_map_dir;
	struct timespec last_progress;
	char kern_bid[2 * 20 + 1]; /* perfspy_session__kernel's build id */
	bool kern_release_set;     /* pipe mode: OS release given to sym */
	bool arch_set;             /* the unwinder has the recording's arch */
	u64 nr_kernel_samples;     /* samples in or through the kernel */
	/* --idle (issue 10, docs/top.md §3): off-CPU stretches per thread;
	 * idle_checked: the first sample chose the on-CPU event. */
	bool idle;
	struct offcpu off;
	bool idle_checked;

	/* -j N (issue 16, docs/design.md §6.4): what a worker session is
	 * opened with (the open options), and during a split conversion
	 * (nr_jobs > 1) the owner of each thread seen (tid -> session index)
	 * with each session's samples so far (load), this session's index,
	 * and the flag that stops the workers when the pass fails. */
	char *o_symfs, *o_buildid_dir, *o_kallsyms;
	bool o_no_debuginfod;
	struct sym_ctx *rsym;	/* names frames in a split pass (stk_share_names) */
	pthread_mutex_t *rlock;
	struct idmap owner;
	u64 *load;
	u32 job, nr_jobs;
	int *stop;
	/* Stacks built behind the reading session (docs/design.md §6.25):
	 * on the session that reads, the builder it feeds and the input
	 * its messages may still point at (feed_floor); on the builder,
	 * the token of the sample it builds and each token's stack. */
	struct feed *feed;
	u64 feed_floor;
	bool noted; /* pass_notes() done (convert_behind()) */
	bool builder;
	u32 build_token;
	u32 *tok_stack;
	size_t cap_tok;
	u64 *keep_at; /* per session: input still needed from here (split_keep) */
	u32 nr_keep;  /* keep_at's sessions */
	/* Names read ahead (docs/design.md §6.19): the log this session
	 * takes names from, or (@namer_w) writes them into. */
	struct namer *namer;
	bool namer_w;
	u64 namer_win, namer_win_put; /* the window's first sample, names then */
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
	htab_init(&s->chains, sizeof(struct chain_ent), 4096);
	s->fd = -1;
	s->log.fn = OPTS_GET(opts, log_fn, NULL);
	s->log.ctx = OPTS_GET(opts, log_ctx, NULL);
	s->log.level = log_level_pick(OPTS_GET(opts, log_level, 0),
				      OPTS_GET(opts, log_level_set, false));
	so.symfs = OPTS_GET(opts, symfs, NULL);
	so.buildid_dir = OPTS_GET(opts, buildid_dir, NULL);
	so.kallsyms = OPTS_GET(opts, kallsyms, NULL);
	so.no_debuginfod = OPTS_GET(opts, no_debuginfod, false);
	s->o_no_debuginfod = so.no_debuginfod;
	if ((so.symfs && !(s->o_symfs = strdup(so.symfs))) ||
	    (so.buildid_dir && !(s->o_buildid_dir = strdup(so.buildid_dir))) ||
	    (so.kallsyms && !(s->o_kallsyms = strdup(so.kallsyms)))) {
		free(s->o_symfs);
		free(s->o_buildid_dir);
		free(s);
		return -ENOMEM;
	}
	so.log = &s->log;
	err = sym_ctx_new(&so, &s->sym);
	if (err) {
		free(s->o_symfs);
		free(s->o_buildid_dir);
		free(s->o_kallsyms);
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

	/* A second CPU warms the mapping ahead (docs/design.md §6.5);
	 * files this small are read before a thread is worth starting. */
	if (online_cpus() > 1)
		ro.warm_min = 8u << 20;

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
	s->nr_kernel_samples = 0;
	s->time_first = s->time_last = 0;
	free(s->threads);
	s->threads = NULL;
	s->nr_threads = 0;
	s->fp_stacks = s->fp_stacks_bad = 0;
	s->py_nomap_procs = 0;
	s->py_nomap_samples = 0;
	s->mach.perf_map_dir = s->perf_map_dir;
	/* A pipe is being recorded as we read (perfspy record, perf
	 * record -o -): its processes' perf maps still grow. */
	s->mach.jit_follow = s->rd.pipe_mode && s->rd.fd >= 0;
	htab_free(&s->chains);
	if (s->stk_live)
		stk_free(&s->stk);
	s->stk_live = false;
	offcpu_free(&s->off);
	s->idle_checked = false;
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
	htab_free(&s->chains);
	offcpu_free(&s->off);
	free(s->sel_also);
	free(s->perf_map_dir);
	idmap_free(&s->owner);
	free(s->load);
	free(s->o_symfs);
	free(s->o_buildid_dir);
	free(s->o_kallsyms);
	free(s->path);
	free(s);
}

/* ----------------------------------------------------------- samples */


/* The name of process @pid: its main thread's; NULL when unknown. */
static const char *proc_comm(struct perfspy_session *s, u32 pid)
{
	struct mach_thread *m = mach_thread(&s->mach, (s32)pid, (s32)pid);

	return m ? m->comm : NULL;
}

/* Put @len bytes of @text at the root of s->stk.stack (@n frames). */
static int root_frame(struct perfspy_session *s, const char *text, int len,
		      size_t *n)
{
	u32 id = fold_intern(s->folder, text, len < 0 ? 0 :
			     (size_t)len < 512 ? (size_t)len : 511);

	if (id == FOLD_NO_ID ||
	    ensure_mem((void **)&s->stk.stack, &s->stk.cap_stack,
		       sizeof(*s->stk.stack), *n + 1))
		return -ENOMEM;
	memmove(s->stk.stack + 1, s->stk.stack, *n * sizeof(*s->stk.stack));
	s->stk.stack[0] = id;
	(*n)++;
	return 0;
}

enum { DG_UNASKED, DG_OK, DG_NONE };

/* The warming thread's digest of @smp's callchain (into s->dg), asked
 * for once per sample and only when needed. */
static bool sample_digest(struct perfspy_session *s, const struct rec_sample *smp)
{
	/* Short chains are read here (rd_digest() was 3.6% of the build
	 * recording's converting thread when asked for every sample). */
	if (smp->callchain_nr < RD_DIGEST_MIN_NR)
		return false;
	if (s->dg_state == DG_UNASKED) {
		s->dg_state = rd_digest(&s->rd, s->cur_dig, s->cur_off, smp->callchain,
					smp->callchain_nr, &s->dg) ? DG_OK : DG_NONE;
		s->dg_taken += s->dg_state == DG_OK;
	}
	return s->dg_state == DG_OK;
}

/*
 * The callchain cache's key: the chain's entries (rec_chain_hash(), from
 * the reader's warming thread when it worked it out ahead: s->dg) and
 * the sample's context, whose hash moves both words: equal chains in
 * two contexts are two keys.
 */
static void chain_key(struct perfspy_session *s, const struct rec_sample *smp,
		      const struct mach_thread *t, u64 *h1, u64 *h2)
{
	u64 ctx[4], hc;

	ctx[0] = ((u64)smp->pid << 32) | mach_maps_gen((struct machine *)&s->mach,
						       (s32)smp->pid);
	/* The thread root frame names the tid and its current name. */
	ctx[1] = OPTS_GET(s->copts, threads, false) ?
		((u64)smp->tid << 32) ^ (u64)(uintptr_t)(t ? t->comm : NULL) : 0;
	/* The process root names the main thread's current name. */
	if (OPTS_GET(s->copts, processes, false))
		ctx[1] ^= hash_mix((u64)(uintptr_t)proc_comm((struct perfspy_session *)s,
							      smp->pid));
	ctx[2] = smp->cpumode;
	ctx[3] = smp->callchain_nr;
	if (sample_digest(s, smp)) {
		*h1 = s->dg.h1;
		*h2 = s->dg.h2;
	} else {
		rec_chain_hash(smp->callchain, smp->callchain_nr, h1, h2);
	}
	hc = hash_bytes(ctx, sizeof(ctx), 1);
	*h1 = hash_mix(*h1 ^ hc);
	*h2 = hash_mix(*h2 + (hc << 32 | hc >> 32));
}

static bool chain_eq(const void *ent, const void *key)
{
	return ((const struct chain_ent *)ent)->h2 == (u32)*(const u64 *)key;
}

/* The entry of (@h1, @h2): used if the chain was seen, else free for
 * fold_sample() to claim. NULL on -ENOMEM. */
static struct chain_ent *chain_slot(struct perfspy_session *s, u64 h1, u64 h2)
{
	if (htab_reserve(&s->chains))
		return NULL;
	return htab_probe(&s->chains, h1, chain_eq, &h2);
}

/* Claim @ce, free after chain_lookup(), for the chain (@h1, @h2). */
static void chain_claim(struct perfspy_session *s, struct chain_ent *ce, u64 h1, u64 h2)
{
	ce->h2 = (u32)h2;
	htab_claim(&s->chains, ce, h1);
}

/* Whether the callchain cache rests for this sample (CHAIN_WIN). */
static bool chain_resting(struct perfspy_session *s)
{
	if (!s->chain_rest)
		return false;
	s->chain_rest--;
	return true;
}

/* One lookup of the callchain cache, @hit or not, in the window. */
static void chain_count(struct perfspy_session *s, bool hit)
{
	s->chain_hits += hit;
	if (++s->chain_tries < CHAIN_WIN)
		return;
	if (s->chain_hits < CHAIN_WIN / 4)
		s->chain_rest = CHAIN_REST;
	s->chain_tries = s->chain_hits = 0;
}

/* Reverse @n ids in place, two from each end a step: the two ids in a
 * 64-bit word trade places by a rotation, whatever the byte order
 * (deep stacks: hundreds of ids a chain the callchain cache misses). */
static void reverse_ids(u32 *v, size_t n)
{
	size_t i = 0, j = n;
	u64 a, b;
	u32 t;

	for (; i + 4 <= j; i += 2, j -= 2) {
		memcpy(&a, v + i, 8);
		memcpy(&b, v + j - 2, 8);
		a = (a << 32) | (a >> 32);
		b = (b << 32) | (b >> 32);
		memcpy(v + i, &b, 8);
		memcpy(v + j - 2, &a, 8);
	}
	for (; i + 1 < j; i++, j--) {
		t = v[i];
		v[i] = v[j - 1];
		v[j - 1] = t;
	}
}

/* The frame ids of @smp, root first with the root frames the options
 * ask for, in s->stk.stack (*@nr of them). */
static int build_stack(struct perfspy_session *s, const struct rd_evsel *ev,
		       const struct rec_sample *smp, struct mach_thread *t, size_t *nr)
{
	size_t n = 0;
	u32 *stack;
	int err;

	s->stk.sample = s->nr_samples;
	err = stk_build(&s->stk, ev, smp, &n);
	if (err)
		return err;
	stack = s->stk.stack;
	/* Root first: reverse the leaf-first list. */
	reverse_ids(stack, n);
	if (OPTS_GET(s->copts, threads, false)) {
		char buf[512];
		u32 id;
		int len;

		/* py-spy --threads: `thread (TID): NAME` at the root
		 * (docs/pyspy-formats.md §1.5). */
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
	if (OPTS_GET(s->copts, processes, false)) {
		const char *pc = proc_comm(s, smp->pid);
		char buf[512];

		/* py-spy --subprocesses: `process PID:"CMDLINE"` outermost
		 * (docs/pyspy-formats.md §1.6); the name stands in for argv. */
		err = root_frame(s, buf, snprintf(buf, sizeof(buf), "process %u:\"%s\"",
						  smp->pid, pc ? pc : ""), &n);
		if (err)
			return err;
	}
	*nr = n;
	return 0;
}

/* The builder's fold (docs/design.md §6.25): the reading session
 * probed the callchain cache and sent this sample because it missed (or
 * was not cached, NO_TOKEN); its stack is built and folded here, and
 * kept under the token for the samples that hit it later. */
#define NO_TOKEN UINT32_MAX

static int build_sample(struct perfspy_session *s, const struct rd_evsel *ev,
			const struct rec_sample *smp, struct mach_thread *t, u64 weight)
{
	size_t n;
	u32 idx;
	int err = build_stack(s, ev, smp, t, &n);

	if (!err)
		err = fold_add_ids_idx(s->folder, s->stk.stack, (u32)n, weight, &idx);
	if (err || s->build_token == NO_TOKEN)
		return err;
	if (s->build_token >= s->cap_tok) {
		size_t cap = s->cap_tok ? s->cap_tok * 2 : 4096, i;
		u32 *v;

		while (cap <= s->build_token)
			cap *= 2;
		if (!(v = realloc(s->tok_stack, cap * sizeof(*v))))
			return -ENOMEM;
		for (i = s->cap_tok; i < cap; i++)
			v[i] = NO_TOKEN;
		s->tok_stack = v;
		s->cap_tok = cap;
	}
	s->tok_stack[s->build_token] = idx;
	return 0;
}

/*
 * The callchain cache's entry for @smp into *@ce, used (a hit) or free
 * for chain_claim(), with the chain's key; NULL for a sample the cache
 * does not take. 0 or -ENOMEM.
 */
static int chain_lookup(struct perfspy_session *s, const struct rec_sample *smp,
			const struct mach_thread *t, struct chain_ent **ce, u64 *h1, u64 *h2)
{
	*ce = NULL;
	/* The cache keys on the callchain: not for samples whose stack
	 * also comes from a branch stack (LBR call stacks, stacks.c). */
	if (!smp->callchain_nr || (smp->regs_abi && smp->stack_size) || smp->branch_nr ||
	    chain_resting(s))
		return 0;
	chain_key(s, smp, t, h1, h2);
	if (!(*ce = chain_slot(s, *h1, *h2)))
		return -ENOMEM;
	chain_count(s, htab_used(*ce));
	return 0;
}

static int fold_sample(struct perfspy_session *s, const struct rd_evsel *ev,
		       const struct rec_sample *smp, struct mach_thread *t, u64 weight)
{
	struct chain_ent *ce;
	u32 *stack;
	size_t n;
	u64 h1 = 0, h2 = 0;
	int err = chain_lookup(s, smp, t, &ce, &h1, &h2);

	if (err)
		return err;
	if (ce && htab_used(ce)) {
		fold_add_to(s->folder, ce->stack, weight);
		return fold_timeline_add(s->folder, smp->time, smp->has_time, smp->tid,
					 ce->stack);
	}
	err = build_stack(s, ev, smp, t, &n);
	if (err)
		return err;
	stack = s->stk.stack;
	if (!ce) {
		u32 idx;

		err = fold_add_ids_idx(s->folder, stack, (u32)n, weight, &idx);
		return err ? err : fold_timeline_add(s->folder, smp->time, smp->has_time,
						     smp->tid, idx);
	}
	err = fold_add_ids_idx(s->folder, stack, (u32)n, weight, &ce->stack);
	if (!err) {
		chain_claim(s, ce, h1, h2);
		/* docs/output.md §8: the speedscope writer's time order. */
		err = fold_timeline_add(s->folder, smp->time, smp->has_time,
					smp->tid, ce->stack);
	}
	return err;
}

/* ------------------------------------------- stacks built behind */

/*
 * The feed from the reading session to the builder (docs/design.md
 * §6.25): one message per record the builder must see, in the order the
 * reading session delivers them. Side-band records go as they are (the
 * builder keeps its own machine model); a sample goes as the callchain
 * cache left it: a hit names the token of the stack to add to, a miss
 * the record to build and the token to keep its stack under. Records are
 * read where they lie in the mapped file (can_build_behind()), so a
 * message points at them; @floor is the input the builder may still
 * read from there on (feed_floor, for split_keep()).
 *
 * A sample changes the machine model too: its thread is made on first
 * sight, and a tid seen in another process loses its name
 * (mach_thread()). So every sample the reading session parsed reaches
 * the builder: a hit, and a sample it does not fold (another event, a
 * filter: FEED_SEEN), with their pid and tid for that step. Without it
 * a --threads root read "thread (0): swapper" where one pass reads
 * "thread (0)" (a recording with six events, perf_data_converter's
 * systemwide.5-3.4).
 */
enum { FEED_RECORD, FEED_SAMPLE, FEED_HIT, FEED_SEEN };

/* A cache line each: the reader writes whole lines, never one the
 * builder is reading a message from. */
struct feed_msg {
	const struct perf_event_header *hdr;
	u64 off, floor, weight, sample;
	u32 token;
	u32 kind;
	s32 pid, tid;
} __attribute__((aligned(64)));
_Static_assert(sizeof(struct feed_msg) == 64, "feed messages: one cache line");

/* 64K messages (4 MB, two huge pages: big_zalloc()): the reader runs
 * far enough ahead that neither side waits on the other's bursts. On
 * small pages (malloc()) the first lap's page faults took 5% of the
 * reading session's time on the build profile (docs/design.md §6.27).
 * Each side publishes its position every FEED_BATCH messages, not every
 * one: the two counters' cache lines bounced between the CPUs at every
 * message. */
#define FEED_RING (1u << 16)
#define FEED_BATCH 32u
#define FEED_SPINS 256u

struct feed {
	struct feed_msg *ring;
	u64 head __attribute__((aligned(64)));  /* taken (atomic, builder's) */
	u64 tail __attribute__((aligned(64)));  /* published (atomic, reader's) */
	u64 ltail __attribute__((aligned(64))); /* put, not all published */
	u64 lhead; /* the reader's last look at head */
	bool done; /* (atomic) no more messages */
	u32 tokens;
	u64 nr_kind[4]; /* messages put, by kind (for -v -v) */
	u64 *keep_at; /* the builder's slot of split_keep() */
	struct perfspy_session *b;
	int err;
};

/*
 * A wait for the other side: a spin, then naps of 20 us. Not
 * sched_yield(): the builder waits at the start of a pass while the
 * reading session waits for its first names (§6.26), and a yielding
 * thread stays runnable, taking its CPU's share from the threads that
 * open and inflate those names' DSOs.
 */
static void feed_wait(unsigned *spins)
{
	struct timespec ts = { 0, 20 * 1000 };

	if (++*spins > FEED_SPINS)
		nanosleep(&ts, NULL);
	else
		cpu_relax();
}

static void feed_publish(struct feed *f)
{
	__atomic_store_n(&f->tail, f->ltail, __ATOMIC_RELEASE);
}

/* One message more; waits while the ring is full (the builder is behind). */
static void feed_put(struct feed *f, const struct feed_msg *m)
{
	unsigned spins = 0;

	while (f->ltail - f->lhead >= FEED_RING) {
		feed_publish(f);
		f->lhead = __atomic_load_n(&f->head, __ATOMIC_ACQUIRE);
		if (f->ltail - f->lhead < FEED_RING)
			break;
		feed_wait(&spins);
	}
	f->ring[f->ltail % FEED_RING] = *m;
	f->nr_kind[m->kind]++;
	if (++f->ltail % FEED_BATCH == 0)
		feed_publish(f);
}

/* A side-band record (anything but a sample) for the builder's model. */
static void feed_record(struct perfspy_session *s, const struct perf_event_header *h)
{
	struct feed_msg m = { .hdr = h, .off = s->cur_off, .floor = s->feed_floor,
			      .kind = FEED_RECORD };

	feed_put(s->feed, &m);
}

/* A sample parsed and not folded: its thread, for the builder's model. */
static void feed_seen(struct perfspy_session *s, const struct rec_sample *smp)
{
	struct feed_msg m = { .off = s->cur_off, .floor = s->feed_floor, .kind = FEED_SEEN,
			      .pid = (s32)smp->pid, .tid = (s32)smp->tid };

	feed_put(s->feed, &m);
}

/* fold_sample() of the reading session: the callchain cache as there,
 * and the stack for the builder to build or add to. */
static int feed_sample(struct perfspy_session *s, const struct rd_evsel *ev,
		       const struct rec_sample *smp, struct mach_thread *t, u64 weight,
		       const struct perf_event_header *h)
{
	struct feed_msg m = { .hdr = h, .off = s->cur_off, .floor = s->feed_floor,
			      .weight = weight, .sample = s->nr_samples, .token = NO_TOKEN,
			      .kind = FEED_SAMPLE, .pid = (s32)smp->pid, .tid = (s32)smp->tid };
	struct chain_ent *ce;
	u64 h1 = 0, h2 = 0;
	int err = chain_lookup(s, smp, t, &ce, &h1, &h2);

	if (err)
		return err;
	if (ce && htab_used(ce)) {
		m.kind = FEED_HIT;
		m.token = ce->stack;
	} else if (ce) {
		/* The entry holds the token, not a folder index: the
		 * builder alone touches the folder. */
		ce->stack = m.token = s->feed->tokens++;
		chain_claim(s, ce, h1, h2);
	}
	if (m.kind == FEED_SAMPLE && s->namer_w) {
		err = stk_name_ahead(&s->stk, ev, smp, s->nr_samples, s->namer);
		if (err)
			return err;
		namer_through(s->namer, s->nr_samples);
	}
	feed_put(s->feed, &m);
	return 0;
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

/*
 * What follows the PMU of a hybrid CPU's core event name: perf names the
 * same event on each core PMU `cpu_atom/cycles:Pu/`, `cpu_core/cycles:Pu/`
 * (the core PMUs of hybrid Intel CPUs are cpu_*, tools/perf/util/pmus.c),
 * so `cycles:Pu/` here. NULL for other names.
 */
static const char *hybrid_rest(const char *name)
{
	const char *slash;

	if (strncmp(name, "cpu_", 4))
		return NULL;
	slash = strchr(name + 4, '/');
	if (!slash || slash == name + 4 || !slash[1])
		return NULL;
	return slash + 1;
}

/* --idle: an event whose samples are switch-outs (issue 10): the
 * sched_switch tracepoint, or the context-switches software event (what
 * `perfspy record --idle` samples: no tracefs needed). */
static bool is_sched_switch(const struct rd_evsel *ev)
{
	return (ev->name && !strcmp(ev->name, "sched:sched_switch")) ||
	       (ev->attr.type == PERF_TYPE_SOFTWARE &&
		ev->attr.config == PERF_COUNT_SW_CONTEXT_SWITCHES);
}

/* Samples per event, for the default choice: a pass over the records
 * that decodes nothing but each sample's event. Its messages are dropped
 * (the real pass repeats them); so is an error, which the real pass
 * meets again. */
static int count_samples(struct perfspy_session *s)
{
	int level = s->log.level, r;
	bool truncated = s->rd.truncated;
	u64 truncated_at = s->rd.truncated_at, advised = s->rd.advised, n = 0;
	u64 last = 0;
	struct rd_evsel *ev;
	struct rd_rec rec;

	s->log.level = -1;
	while ((r = rd_next(&s->rd, &rec)) > 0) {
		/* As run_pass: every 4096 records or 4 MB, pages behind us go. */
		if ((++n & 0xfff) == 0 || rec.offset - last > (4u << 20)) {
			last = rec.offset;
			rd_release_before(&s->rd, rec.offset);
		}
		if (hdr_type(rec.hdr) == PERF_RECORD_SAMPLE &&
		    (ev = rd_evsel_of(&s->rd, rec.hdr)))
			ev->nr_samples++;
	}
	s->log.level = level;
	/* The reader warns of a cut record once: in the real pass. */
	s->rd.truncated = truncated;
	s->rd.truncated_at = truncated_at;
	/* Pages this pass let go of are read again by the real one, which
	 * must let go of them again to keep its memory bounded. */
	s->rd.advised = advised;
	return r == -ENOMEM ? r : rd_rewind(&s->rd);
}

/*
 * No --event: the event with the most samples (the first of equals), so
 * a file whose first event is a placeholder (`dummy`, or the idle core
 * PMU of a hybrid CPU) still converts. On a hybrid CPU the same event on
 * the other core PMUs is folded with it: each PMU sees only the threads
 * that ran on its cores, and together they are the profile (perf report
 * shows them as one event the same way with --group/hybrid merging).
 * A stream is read once, so there it stays the first event.
 */
static int pick_default_event(struct perfspy_session *s)
{
	struct rd_evsel *evs = s->rd.evsels;
	size_t i, best = 0, nr = s->rd.nr_evsels;
	const char *rest, *r2;
	int err;

	s->sel_event = 0;
	/* A stream is read once: no count; its events (and their names)
	 * may arrive after the first samples, so twins are found per
	 * sample (is_twin). */
	s->sel_twins = s->rd.fd >= 0 || s->rd.pipe_mode;
	if (nr < 2 || s->sel_twins)
		return 0;
	/* perf's `dummy` event (side-band records only) never samples:
	 * with one other event, that one, without a counting pass. */
	for (i = 0, best = nr; i < nr; i++) {
		if (evs[i].attr.type == PERF_TYPE_SOFTWARE &&
		    evs[i].attr.config == PERF_COUNT_SW_DUMMY)
			continue;
		if (best < nr)
			break;
		best = i;
	}
	if (i == nr && best < nr) {
		s->sel_event = (int)best;
		return 0;
	}
	best = 0;
	for (i = 0; i < nr; i++)
		evs[i].nr_samples = 0;
	if ((err = count_samples(s)))
		return err;
	/* --idle: sched_switch is the off-CPU event, not the on-CPU one. */
	for (i = 0; s->idle && i < nr && is_sched_switch(&evs[best]); i++)
		best = i;
	for (i = 1; i < nr; i++)
		if (evs[i].nr_samples > evs[best].nr_samples &&
		    !(s->idle && is_sched_switch(&evs[i])))
			best = i;
	s->sel_event = (int)best;
	rest = hybrid_rest(evs[best].name);
	if (!rest)
		return 0;
	s->sel_also = calloc(nr, sizeof(*s->sel_also));
	if (!s->sel_also)
		return -ENOMEM;
	s->nr_sel_also = nr;
	for (i = 0; i < nr; i++)
		s->sel_also[i] = i != best && evs[i].attr.type == evs[best].attr.type &&
			(r2 = hybrid_rest(evs[i].name)) && !strcmp(r2, rest);
	return 0;
}

/* Whether event @idx is the same event as sel_event on another hybrid
 * core PMU (names as pick_default_event compares them). */
static bool is_twin(const struct perfspy_session *s, int idx)
{
	const struct rd_evsel *a, *b;
	const char *ra, *rb;

	if (s->sel_event < 0 || idx < 0 || (size_t)s->sel_event >= s->rd.nr_evsels ||
	    (size_t)idx >= s->rd.nr_evsels)
		return false;
	a = &s->rd.evsels[s->sel_event];
	b = &s->rd.evsels[idx];
	ra = hybrid_rest(a->name);
	rb = hybrid_rest(b->name);
	return ra && rb && a->attr.type == b->attr.type && !strcmp(ra, rb);
}

/* The pid, tid and comm filters. */
static bool keep_thread(struct perfspy_session *s, const struct rec_sample *smp,
			const struct mach_thread *t)
{
	const struct perfspy_convert_opts *o = s->copts;
	int pid = OPTS_GET(o, pid, 0), tid = OPTS_GET(o, tid, 0);
	const char *comm = OPTS_GET(o, comm, NULL);

	if (pid && (s32)smp->pid != pid)
		return false;
	if (tid && (s32)smp->tid != tid)
		return false;
	if (comm && (!t || !t->comm || strcmp(t->comm, comm)))
		return false;
	return true;
}

static bool keep_sample(struct perfspy_session *s, const struct rec_sample *smp,
			const struct mach_thread *t, int evidx)
{
	if (s->sel_event < 0)
		s->sel_event = select_event(s);
	if (evidx != s->sel_event &&
	    !(evidx >= 0 && (size_t)evidx < s->nr_sel_also && s->sel_also[evidx]) &&
	    !(s->sel_twins && is_twin(s, evidx)))
		return false;
	return keep_thread(s, smp, t);
}

/* ------------------------------------------------------------ --idle */

/* Weighed by its period (ns): cpu-clock and task-clock. */
static bool is_clock(const struct rd_evsel *ev)
{
	return ev->attr.type == PERF_TYPE_SOFTWARE &&
	       (ev->attr.config == PERF_COUNT_SW_CPU_CLOCK ||
		ev->attr.config == PERF_COUNT_SW_TASK_CLOCK);
}

/*
 * The first sample of an --idle conversion: the on-CPU event must not be
 * the sched_switch one (a stream's default is its first event, which
 * `perf record -e sched:sched_switch -e cpu-clock` makes sched_switch),
 * and without a sched_switch event there is no off-CPU time to show.
 */
static void idle_check(struct perfspy_session *s)
{
	bool any = false;
	size_t i;

	s->idle_checked = true;
	for (i = 0; i < s->rd.nr_evsels; i++)
		any |= is_sched_switch(&s->rd.evsels[i]);
	if (!any)
		log_msg(&s->log, LOG_WARN,
			"%s: --idle: no sched:sched_switch or context-switches events, so no off-CPU time (record with "
			"perf record -e sched:sched_switch -e cpu-clock --switch-events --call-graph dwarf)",
			s->path);
	if (OPTS_GET(s->copts, event, NULL) || s->sel_event < 0 ||
	    (size_t)s->sel_event >= s->rd.nr_evsels ||
	    !is_sched_switch(&s->rd.evsels[s->sel_event]))
		return;
	for (i = 0; i < s->rd.nr_evsels; i++) {
		const struct rd_evsel *e = &s->rd.evsels[i];

		if (!is_sched_switch(e) && !(e->attr.type == PERF_TYPE_SOFTWARE &&
					     e->attr.config == PERF_COUNT_SW_DUMMY)) {
			s->sel_event = (int)i;
			s->sel_twins = false;
			return;
		}
	}
}

/* Thread @tid runs at @time: fold its off-CPU stretch, if it had one. */
static int idle_close(struct perfspy_session *s, u32 tid, u64 time)
{
	struct offcpu_thread *ot = offcpu_thread(&s->off, tid);
	u64 ms;

	if (!ot)
		return -ENOMEM;
	if (offcpu_in(&s->off, ot, time, &ms) && ms)
		return fold_add_ids(s->folder, ot->ids, ot->nr, ms);
	return 0;
}

/*
 * A sample of an --idle conversion (docs/top.md §3). Every sample of a
 * thread says it runs (closing its stretch); a sched_switch sample also
 * names the thread switched in (next_pid). A switch-out of a blocked
 * thread (prev_state says so: not R, not preempted) opens a stretch with
 * its stack; on-CPU samples weigh their period (ns) in milliseconds.
 */
static int idle_sample(struct perfspy_session *s, const struct rd_evsel *ev,
		       const struct rec_sample *smp, struct mach_thread *t, int evidx)
{
	struct offcpu_thread *ot;
	struct trace_switch sw;
	bool sw_ok;
	size_t n;
	u64 ns, ms;
	int err;

	if (!s->idle_checked)
		idle_check(s);
	if (!smp->has_time) {
		s->stats.samples_filtered++; /* no time, no stretch */
		return 0;
	}
	err = idle_close(s, smp->tid, smp->time);
	if (err)
		return err;
	if (is_sched_switch(ev)) {
		sw_ok = !trace_sched_switch(s->rd.trace, ev->attr.config, smp->raw,
					    smp->raw_size, &sw);
		if (sw_ok && sw.next_pid && (err = idle_close(s, sw.next_pid, smp->time)))
			return err;
		if (!keep_thread(s, smp, t)) {
			s->stats.samples_filtered++;
			return 0;
		}
		/* TASK_REPORT_MAX (0x100) is a preemption, 0 a yield: the
		 * thread stays runnable, it does not wait. */
		if (sw_ok && !(sw.prev_state & 0xff)) {
			s->off.nr_preempted++;
			return 0;
		}
		err = build_stack(s, ev, smp, t, &n);
		if (err)
			return err;
		ot = offcpu_thread(&s->off, smp->tid);
		if (!ot)
			return -ENOMEM;
		s->stats.samples_kept++;
		return offcpu_out(&s->off, ot, smp->time, s->stk.stack, (u32)n);
	}
	if (!keep_sample(s, smp, t, evidx)) {
		s->stats.samples_filtered++;
		return 0;
	}
	s->stats.samples_kept++;
	/* A clock's period is ns of CPU; another event's sample stands for
	 * 1/frequency s (or 1 ms at a fixed period in other units). */
	ns = is_clock(ev) ? smp->period :
	     ev->attr.freq && ev->attr.sample_freq ? 1000000000ull / ev->attr.sample_freq :
	     1000000;
	ot = offcpu_thread(&s->off, smp->tid);
	if (!ot)
		return -ENOMEM;
	ms = offcpu_ms(ot, ns);
	return ms ? fold_sample(s, ev, smp, t, ms) : 0;
}

/* A PERF_RECORD_SWITCH (--switch-events, or the live capture's): a
 * switch-in ends the thread's stretch at its exact time. */
static int idle_switch_record(struct perfspy_session *s, const struct perf_event_header *h)
{
	struct rd_evsel *ev = rd_evsel_of(&s->rd, h);
	struct rec_id id;

	struct offcpu_thread *ot;

	if (!s->idle || !s->folder || !ev || rec_parse_id(ev, h, &id) || !id.has_time)
		return 0;
	if (!(hdr_misc(h) & PERF_RECORD_MISC_SWITCH_OUT))
		return idle_close(s, id.tid, id.time);
	/* Preempted: still runnable, not waiting. A context-switches
	 * sample (no prev_state) opened a stretch just before: drop it. */
	if (!(hdr_misc(h) & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT))
		return 0;
	ot = offcpu_thread(&s->off, id.tid);
	if (!ot)
		return -ENOMEM;
	if (ot->open && ot->t_out <= id.time) {
		ot->open = false;
		s->off.nr_open--;
		s->off.nr_preempted++;
	}
	return 0;
}

/* The end: threads still off the CPU wait until the last sample. */
static int idle_finish(struct perfspy_session *s)
{
	size_t i;
	int err = 0;

	for (i = 0; !err && i < s->off.nr; i++)
		err = idle_close(s, s->off.thr[i].tid, s->time_last);
	if (s->off.nr_open)
		log_msg(&s->log, LOG_INFO, "--idle: %llu off-CPU stretches, %llu preemptions not counted",
			(unsigned long long)s->off.nr_open,
			(unsigned long long)s->off.nr_preempted);
	return err;
}

/*
 * A frame-pointer callchain's user part ends (outermost entry) at the
 * thread's first frame when every function kept its frame pointer; code
 * built without them sends the walk to 0x0 or to an address no map
 * covers (perf's fp walker follows whatever rbp holds). Counted per
 * sample, so that a recording that needs --call-graph dwarf can say so.
 */
static void fp_stat(struct perfspy_session *s, const struct rec_sample *smp)
{
	u64 last = 0;

	if (sample_digest(s, smp)) {
		if (!s->dg.user)
			return;
		last = s->dg.last;
	} else if (!rec_chain_last_user(smp->callchain, smp->callchain_nr, smp->cpumode,
					&last)) {
		return;
	}
	s->fp_stacks++;
	if (!last || !mach_find_map(&s->mach, (s32)smp->pid, last))
		s->fp_stacks_bad++;
}

/*
 * Say what is missing, once per cause: processes that ran Python but
 * whose Python frames cannot be named (no perf map: Python < 3.12, no
 * -X perf, `python -I` ignoring PYTHONPERFSUPPORT, or the map removed),
 * each named at -v; frame-pointer stacks that mostly end nowhere. The
 * summaries are warnings of a conversion; a statistics pass (info, no
 * folder) leaves them to perfspy_info, which `info` prints as "lacks".
 */
static void note_missing(struct perfspy_session *s)
{
	u64 n, total = s->nr_samples ? s->nr_samples : 1;
	size_t k, j;
	s32 pid;

	for (k = 0; k < s->nr_threads; k = j) {
		pid = s->threads[k]->pid;
		for (n = 0, j = k; j < s->nr_threads && s->threads[j]->pid == pid; j++)
			n += s->threads[j]->nr_samples;
		if (!n || !mach_proc_runs_python(&s->mach, pid) ||
		    mach_proc_has_perf_map(&s->mach, pid))
			continue;
		s->py_nomap_procs++;
		s->py_nomap_samples += n;
		log_msg(&s->log, LOG_INFO,
			"process %d (%s): ran Python, no perf map (perf-%d.map): %llu samples without Python frames",
			pid, s->threads[k]->comm ? s->threads[k]->comm : "?", pid,
			(unsigned long long)n);
	}
	if (s->py_nomap_procs && s->folder)
		log_msg(&s->log, LOG_WARN,
			"%u process%s ran Python without a perf map (%.1f%% of samples): no Python frames there; "
			"run Python 3.12+ with -X perf or PYTHONPERFSUPPORT=1 (python -I ignores the variable: use -X perf) (-v names them)",
			s->py_nomap_procs, s->py_nomap_procs == 1 ? "" : "es",
			100.0 * (double)s->py_nomap_samples / (double)total);
	if (s->fp_stacks && s->fp_stacks_bad * 5 > s->fp_stacks && s->folder)
		log_msg(&s->log, LOG_WARN,
			"%.1f%% of frame-pointer user stacks end at 0x0 or an unmapped address: code built "
			"without frame pointers; record with --call-graph dwarf",
			100.0 * (double)s->fp_stacks_bad / (double)s->fp_stacks);
}

/* After a pass: the threads in order, and what they lacked said. */
static int pass_notes(struct perfspy_session *s)
{
	int err = mach_sorted_threads(&s->mach, &s->threads, &s->nr_threads);

	if (!err)
		note_missing(s);
	return err;
}

/*
 * The recording's architecture picks the unwinder's registers, whatever
 * machine converts it (docs/arm64.md §1): HEADER_ARCH (a stream's arrives
 * before its samples), else the ELF machine of the binary of the first
 * user-mode sample, else the host's.
 */
static void pick_arch(struct perfspy_session *s, const struct rec_sample *smp)
{
	const struct arch *a = arch_by_name(s->rd.arch);
	const struct mach_map *map;

	if (!a && smp->cpumode != PERF_RECORD_MISC_USER)
		return; /* wait for a user pc */
	if (!a && (map = mach_find_map(&s->mach, (s32)smp->pid, smp->ip)) && map->dso)
		a = arch_by_machine(sym_dso_machine(s->sym, map->dso));
	unw_ctx_set_arch(s->unw, a);
	s->arch_set = true;
}

/*
 * The session that folds thread @tid's samples in a split conversion
 * (*@job). A thread belongs to the session with the fewest samples so far
 * when its first sample arrives (the first of equals). Every session
 * reads the same samples in the same order and decides the same, so no
 * counting pass or message is needed (docs/design.md §6.4). 0 or -ENOMEM.
 */
static int job_pick(struct perfspy_session *s, u32 tid, u32 *job)
{
	u64 *v = idmap_get(&s->owner, tid);
	u32 k, best = 0;

	if (!v) {
		for (k = 1; k < s->nr_jobs; k++)
			if (s->load[k] < s->load[best])
				best = k;
		if (!(v = idmap_put(&s->owner, tid)))
			return -ENOMEM;
		*v = best;
	}
	*job = (u32)*v;
	s->load[*job]++;
	return 0;
}

/* job_pick() for a sample of @tid: 1 when this session is a worker that
 * skips it, 0 to go on, -ENOMEM. */
static int job_skip(struct perfspy_session *s, u32 tid, u32 *owner)
{
	int err = job_pick(s, tid, owner);

	return err ? err : s->job && *owner != s->job;
}

/*
 * The naming session's part of a sample (docs/design.md §6.19). Naming
 * pays where samples keep meeting new addresses: on the build bench
 * recording 1,000-3,000 in each stretch of 4,096 samples, to its end. On
 * a program that runs the same code over and over (the deep-stack bench
 * files) it is 80 in the second stretch and fewer later, and reading
 * every sample a second time then cost the converting thread 8%: a
 * stretch with fewer than one new address per 16 samples ends the
 * namer's pass, and the converting session names the rest with the
 * namer's symbolizer.
 */
#define NAMER_WINDOW 4096

static int name_ahead(struct perfspy_session *s, const struct rd_evsel *ev,
		      const struct rec_sample *smp)
{
	int err = stk_name_ahead(&s->stk, ev, smp, s->nr_samples, s->namer);
	u64 put, last;

	namer_through(s->namer, s->nr_samples);
	if (err || s->nr_samples - s->namer_win < NAMER_WINDOW)
		return err;
	put = namer_count(s->namer);
	last = s->namer_win_put;
	s->namer_win = s->nr_samples;
	s->namer_win_put = put;
	/* -ECANCELED ends this session's pass here (job_main() ignores
	 * it); the converting session then names with this session's
	 * symbolizer (namer_left()). */
	return put - last < NAMER_WINDOW / 16 ? -ECANCELED : 0;
}

/* A sample's thread in the model, made on first sight (a tid met in
 * another process loses its name: mach_thread()), and counted. The
 * builder does the same for the samples it is not sent whole (§6.25). */
static struct mach_thread *sample_thread(struct perfspy_session *s, s32 pid, s32 tid)
{
	struct mach_thread *t = mach_thread(&s->mach, pid, tid);

	if (t) {
		t->nr_samples++;
		t->seen = true;
	}
	return t;
}

static int on_sample(struct perfspy_session *s, const struct perf_event_header *h)
{
	struct rd_evsel *ev = rd_evsel_of(&s->rd, h);
	struct mach_thread *t;
	struct rec_sample smp;
	u32 owner = 0, tid;
	bool picked = false;
	u64 weight;
	int skip;

	s->nr_samples++;
	if (!ev) {
		s->stats.unknown_ids++;
		return 0;
	}
	ev->nr_samples++;
	/* A stream's header features (OSRELEASE) arrive as records before
	 * the samples: the kernel check must see them (kallsyms.c). */
	if (s->rd.pipe_mode && !s->kern_release_set) {
		int err = sym_kernel_set_release(s->sym, s->rd.os_release);

		if (err)
			return err;
		s->kern_release_set = true;
	}
	/* -j N: a worker skips what another session folds, reading no
	 * more of the record than its tid (a DWARF sample's other pages
	 * stay untouched); the main session (job 0) keeps every sample's
	 * statistics. */
	if (s->nr_jobs > 1 && rec_sample_tid(ev, h, &tid)) {
		picked = true;
		if ((skip = job_skip(s, tid, &owner)))
			return skip < 0 ? skip : 0;
	}
	if (rec_parse_sample(ev, h, &smp)) {
		s->stats.bad_records++;
		return 0;
	}
	if (s->nr_jobs > 1 && !picked && (skip = job_skip(s, smp.tid, &owner)))
		return skip < 0 ? skip : 0;
	s->dg_state = DG_UNASKED;
	if (!s->arch_set)
		pick_arch(s, &smp);
	if (smp.has_time && smp.time) {
		if (!s->time_first || smp.time < s->time_first)
			s->time_first = smp.time;
		if (smp.time > s->time_last)
			s->time_last = smp.time;
	}
	if (smp.cpumode == PERF_RECORD_MISC_KERNEL ||
	    (smp.callchain_nr && rec_callchain_ip(&smp, 0) == PERF_CONTEXT_KERNEL))
		s->nr_kernel_samples++;
	t = sample_thread(s, (s32)smp.pid, (s32)smp.tid);
	if (!t)
		return -ENOMEM;
	if (smp.callchain_nr && !(smp.regs_abi && smp.stack_size) &&
	    (!s->namer_w || s->feed) && !s->builder)
		fp_stat(s, &smp);
	if (!s->folder) {
		size_t n;

		/* info: unwind user stacks for the statistics only. */
		return smp.regs_abi && smp.stack_size ? stk_build(&s->stk, ev, &smp, &n) : 0;
	}
	if (s->idle)
		return idle_sample(s, ev, &smp, t, (int)rd_evsel_idx(&s->rd, ev));
	if (!keep_sample(s, &smp, t, (int)rd_evsel_idx(&s->rd, ev))) {
		s->stats.samples_filtered++;
		if (s->feed)
			feed_seen(s, &smp);
		return 0;
	}
	s->stats.samples_kept++;
	if (s->nr_jobs > 1 && owner != s->job)
		return 0;
	weight = OPTS_GET(s->copts, weight, 0) == PERFSPY_WEIGHT_PERIOD ? smp.period : 1;
	if (s->feed)
		return feed_sample(s, ev, &smp, t, weight, h);
	if (s->namer_w)
		return name_ahead(s, ev, &smp);
	if (s->builder)
		return build_sample(s, ev, &smp, t, weight);
	return fold_sample(s, ev, &smp, t, weight);
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
	err = mach_add_build_id(&s->mach, b.filename, b.id, b.size);
	/* Counts only if it comes before the first kernel frame is named
	 * (perf inject -b puts build ids at a stream's start). */
	if (!err && !strcmp(b.filename, "[kernel.kallsyms]"))
		err = sym_kernel_set_build_id(s->sym, b.id, b.size);
	return err;
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

	if (s->feed && hdr_type(h) != PERF_RECORD_SAMPLE)
		feed_record(s, h);
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
	case PERF_RECORD_SWITCH:
	case PERF_RECORD_SWITCH_CPU_WIDE:
		return idle_switch_record(s, h);
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
	int err = 0, r = 0;

	while (!err && (r = ord_pop(o, limit, &e)) > 0) {
		s->cur_off = e.offset;
		s->cur_dig = e.dig;
		err = deliver(s, e.hdr);
		ord_done(o, &e);
	}
	return err ? err : r;
}

/* A stream under --idle: what open stretches have lasted so far, up to
 * the latest sample, goes into the folder now (the rest when they end:
 * the total is the same), so that a live reader (`perfspy top --idle`)
 * sees a thread blocked for longer than its interval. */
static int idle_catch_up(struct perfspy_session *s)
{
	struct offcpu_thread *ot;
	size_t i;
	u64 ms;
	int err = 0;

	for (i = 0; !err && i < s->off.nr; i++) {
		ot = &s->off.thr[i];
		if (!ot->open || s->time_last <= ot->t_out)
			continue;
		ms = offcpu_ms(ot, s->time_last - ot->t_out);
		ot->t_out = s->time_last;
		if (ms)
			err = fold_add_ids(s->folder, ot->ids, ot->nr, ms);
	}
	return err;
}

static int report_progress(struct perfspy_session *s)
{
	perfspy_progress_fn fn = OPTS_GET(s->copts, progress_fn, NULL);
	struct timespec now;
	int err;

	if (!fn)
		return 0;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if ((now.tv_sec - s->last_progress.tv_sec) * 1000000000L +
	    (now.tv_nsec - s->last_progress.tv_nsec) < 100000000L)
		return 0;
	s->last_progress = now;
	if (s->idle && s->rd.pipe_mode && (err = idle_catch_up(s)))
		return err;
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

/* The least of @keep and every session's keep point: the slowest one's. */
static u64 split_slowest(const struct perfspy_session *s, u64 keep)
{
	u64 v, min = keep;
	u32 k;

	for (k = 0; k < s->nr_keep; k++)
		if ((v = __atomic_load_n(&s->keep_at[k], __ATOMIC_RELAXED)) < min)
			min = v;
	return min;
}

/*
 * -j N's sessions read one mapping of the input, so a page is mapped (and
 * paid for: a first touch costs microseconds, docs/design.md §6.4) once
 * for all of them. Each says from where on it still needs the input
 * (@keep: its oldest queued record); the main session lets go of what is
 * behind all of them. The offset to release before, for this session.
 */
static u64 split_keep(struct perfspy_session *s, u64 keep)
{
	if (!s->keep_at)
		return keep;
	__atomic_store_n(&s->keep_at[s->job], keep, __ATOMIC_RELAXED);
	return split_slowest(s, keep);
}

/*
 * -j N: how far a session may read ahead of the one furthest behind.
 * Every session reads the same mapping, and the main session releases
 * its pages only behind the slowest one (split_keep), so the stretch
 * between them stays mapped. Sessions run at the pace of their own
 * threads' samples: on the DWARF bench file at -j 2 one ran ahead until
 * 120 MB of the file was mapped (40 MB of peak RSS at -j 1, issue 16).
 */
#define SPLIT_AHEAD (16u << 20)

/* Wait while this session's @keep is more than SPLIT_AHEAD past the
 * slowest session's. The slowest never waits, and a session that is done
 * keeps nobody back (UINT64_MAX), so someone always runs. */
static void split_pace(struct perfspy_session *s, u64 keep)
{
	struct timespec ts = { 0, 200 * 1000 };

	if (!s->keep_at)
		return;
	while (keep - split_slowest(s, keep) > SPLIT_AHEAD &&
	       !(s->stop && __atomic_load_n(s->stop, __ATOMIC_RELAXED))) {
		/* The reader of names it holds back must not wait for it,
		 * nor the builder for messages not yet published. */
		if (s->namer_w)
			namer_pausing(s->namer, true);
		if (s->feed)
			feed_publish(s->feed);
		nanosleep(&ts, NULL);
	}
	if (s->namer_w)
		namer_pausing(s->namer, false);
}

static int run_pass(struct perfspy_session *s)
{
	struct order o;
	struct rd_rec rec;
	u64 t, n = 0, last_check = 0, limit;
	int err = 0, r;

	ord_init(&o);
	while ((r = rd_next(&s->rd, &rec)) > 0) {
		u32 type = hdr_type(rec.hdr);

		s->nr_records++;
		/* Every 4096 records or 256 KB of input (DWARF samples are
		 * 8-64 KB each): progress, and pages behind the oldest
		 * queued record are done, so RSS tracks the queue, not the
		 * file (the reader maps 1 MB ahead, rd_release_before).
		 * 256 KB, not 1 MB: the mapped stretch behind the queue
		 * waits for the next check, and on a 1 GB file 1 MB steps
		 * were 2 MB of peak RSS (issue 16, bench-memory). */
		if ((++n & 0xfff) == 0 || rec.offset - last_check > (256u << 10)) {
			u64 keep = ord_min_offset(&o);

			last_check = rec.offset;
			if ((err = report_progress(s)))
				break;
			if (s->stop && __atomic_load_n(s->stop, __ATOMIC_RELAXED)) {
				err = -PERFSPY_E_INTERRUPTED;
				break;
			}
			keep = keep < rec.offset ? keep : rec.offset;
			/* Every record delivered from here on was queued now
			 * or comes later in the file (§6.25). */
			s->feed_floor = keep;
			rd_release_before(&s->rd, split_keep(s, keep));
			split_pace(s, keep);
		}
		if (type == REC_FINISHED_ROUND) {
			err = flush_queue(s, &o, ord_round(&o));
			/* A live stream's rounds are its reads (live.c): report
			 * there too, rate-limited, for `perfspy top` (issue 10). */
			if (!err && s->rd.pipe_mode)
				err = report_progress(s);
		} else if (can_order(&s->rd) && (t = rec_time(&s->rd, rec.hdr))) {
			if (ord_late(&o, t))
				s->stats.out_of_order++;
			err = ord_push(&o, &rec, t);
			if (!err && (err = ord_over_budget(&o, &limit)) > 0)
				err = flush_queue(s, &o, limit);
		} else {
			s->cur_off = rec.offset;
			s->cur_dig = rec.dig;
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
/* Tell @sym the recorded kernel: its release and the build id the
 * BUILD_ID feature gives [kernel.kallsyms] (kallsyms.c checks them). */
static int tell_kernel(const struct perfspy_session *s, struct sym_ctx *sym)
{
	size_t i;
	int err = sym_kernel_set_release(sym, s->rd.os_release);

	for (i = 0; !err && i < s->rd.nr_build_ids; i++)
		if (!strcmp(s->rd.build_ids[i].filename, "[kernel.kallsyms]"))
			err = sym_kernel_set_build_id(sym, s->rd.build_ids[i].id,
						      s->rd.build_ids[i].size);
	return err;
}

static int load_build_ids(struct perfspy_session *s)
{
	size_t i;
	int err = tell_kernel(s, s->sym);

	for (i = 0; !err && i < s->rd.nr_build_ids; i++)
		err = mach_add_build_id(&s->mach, s->rd.build_ids[i].filename,
					s->rd.build_ids[i].id, s->rd.build_ids[i].size);
	return err;
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
		.no_lineno = OPTS_GET(o, no_lineno, false),
	};
	int err;

	err = stk_init(&s->stk, s->sym, &s->mach, s->unw, s->folder, &po, &so,
		       &s->stats);
	if (!err)
		s->stk_live = true;
	return err;
}

/* A header BUILD_ID entry of a user-space file (not the kernel, a
 * module or a pseudo map). */
static bool user_dso_hit(const struct rd_build_id *b)
{
	return b->cpumode == PERF_RECORD_MISC_USER && b->filename[0] == '/';
}

/*
 * The DSOs the header lists as hit by user-space samples, opened on a
 * thread while the pass reads (frames/dso_ahead.c, docs/design.md
 * §6.14): for a pass that names frames with the session's own
 * symbolizer, over every thread (a filter would leave most of them
 * unused), with a CPU to spare. The machine model takes a name's last
 * header entry (mach_add_build_id()), so that one is queued. The queue
 * runs from the header's end: the header lists DSOs about in the order
 * the pass first needs them, and the pass opens the first ones itself
 * before a thread could (dso_ahead.c). The namer's pass starts at the
 * front all the same, up to AHEAD_FRONT DSOs (§6.24).
 */
#define AHEAD_FRONT 4

/* Whether an event of @rd samples the kernel. */
static bool samples_kernel(const struct rd *rd)
{
	size_t i;

	for (i = 0; i < rd->nr_evsels; i++)
		if (!rd->evsels[i].attr.exclude_kernel)
			return true;
	return false;
}

static int open_ahead(struct perfspy_session *s)
{
	const struct perfspy_convert_opts *o = s->copts;
	struct sym_ahead_dso *v;
	struct strset names;
	size_t i, n = 0;
	int err = 0;
	u32 id;

	/* A session taking its names from a log names nothing at first
	 * (docs/design.md §6.19); its namer opens them ahead instead. */
	if (!s->folder || (s->feed && !s->namer_w) || s->rsym || (s->namer && !s->namer_w) ||
	    !s->rd.nr_build_ids ||
	    OPTS_GET(o, pid, 0) || OPTS_GET(o, tid, 0) || OPTS_GET(o, comm, NULL) ||
	    online_cpus() < 2)
		return 0;
	v = calloc(s->rd.nr_build_ids, sizeof(*v));
	if (!v)
		return -ENOMEM;
	strset_init(&names);
	for (i = s->rd.nr_build_ids; i-- > 0 && !err;) {
		const struct rd_build_id *b = &s->rd.build_ids[i];
		int r;

		if (!user_dso_hit(b) || !b->size || b->size > 20)
			continue;
		r = strset_add(&names, b->filename, strlen(b->filename), &id);
		if (r < 0)
			err = r;
		else if (r == 1)
			v[n++] = (struct sym_ahead_dso){
				.name = b->filename, .bid = b->id, .bid_size = b->size,
				.no_dwarf = py_is_interpreter_dso(b->filename) };
	}
	if (!err)
		err = sym_open_ahead(s->sym, v, n, s->namer_w || s->builder ? AHEAD_FRONT : 0);
	/* Waits for those DSOs load the kernel's symbols meanwhile, if
	 * the session will name kernel frames (§6.27). */
	if (!err && n)
		sym_kernel_prefetch(s->sym, !OPTS_GET(o, no_kernel, false) && samples_kernel(&s->rd));
	strset_free(&names);
	free(v);
	return err;
}

/* A pass's fresh state: machine, build ids, stacks (naming frames
 * through the shared symbolizer in a split conversion). */
static int pass_prepare(struct perfspy_session *s)
{
	int err;

	reset_pass(s);
	err = mach_idle_thread(&s->mach);
	if (!err)
		err = load_build_ids(s);
	if (!err)
		err = open_ahead(s);
	if (!err)
		err = start_stacks(s, s->copts);
	if (!err && s->rsym)
		stk_share_names(&s->stk, s->rsym, s->rlock);
	if (!err && s->namer && !s->namer_w)
		s->stk.namer = s->namer;
	return err;
}

static int pass_run(struct perfspy_session *s)
{
	int err = run_pass(s);

	if (!err && s->idle)
		err = idle_finish(s);
	return err;
}

/* The pass itself, on the session's own state. */
static int one_pass(struct perfspy_session *s)
{
	int err = pass_prepare(s);

	return err ? err : pass_run(s);
}

/* Below this much data a thread reading in ahead is not started; for
 * frame-pointer files, below COPY_IN_FP_MIN. Their pages are used again
 * once the builder is SPLIT_AHEAD behind: on a smaller file most of the
 * copy is fresh memory, dearer here than reading the mapping when the
 * host must find it anew (design §6.33: the build profile's 11 MB, 2 of
 * 6 huge pages used again). */
#define COPY_IN_MIN (8u << 20)
#define COPY_IN_FP_MIN (2 * SPLIT_AHEAD)

/* Whether an event of the file samples user stack dumps (--call-graph
 * dwarf). */
static bool user_stacks(const struct perfspy_session *s)
{
	size_t i;

	for (i = 0; i < s->rd.nr_evsels; i++)
		if (s->rd.evsels[i].attr.sample_type & PERF_SAMPLE_STACK_USER)
			return true;
	return false;
}

/*
 * The data section read into memory by the reader's thread ahead of the
 * pass (docs/design.md §6.32), as the conversion's copy_in option says
 * (ALWAYS: wherever the reader can). AUTO: where reading a page of the
 * mapping for the first time costs more than copying it, that is where
 * the samples carry user stack dumps, which are read nearly whole, and
 * with @fp, the builder's pass (convert_behind()) of COPY_IN_FP_MIN of
 * data or more, where frame-pointer samples are read whole too and the
 * copy's thread works out their digests as the mapping's warmer did
 * (§6.33). Whether it started. The
 * sessions of -j N read the copy too (rd_copy_share()), and the builder
 * the records its messages point at; the namer reads the mapping.
 */
static bool copy_start(struct perfspy_session *s, bool fp)
{
	int how = OPTS_GET(s->copts, copy_in, PERFSPY_COPY_IN_AUTO);

	u64 data = s->rd.data_end - s->rd.data_offset;

	if (!(how == PERFSPY_COPY_IN_ALWAYS ||
	      (how == PERFSPY_COPY_IN_AUTO && online_cpus() > 1 &&
	       ((user_stacks(s) && data >= COPY_IN_MIN) || (fp && data >= COPY_IN_FP_MIN)))) ||
	    !rd_copy_in(&s->rd))
		return false;
	log_msg(&s->log, LOG_INFO, "%s: reading the data into memory on a second thread", s->path);
	s->dg_taken = 0;
	return true;
}

/* The copy's end, and its numbers for -v -v. */
static void copy_end(struct perfspy_session *s)
{
	u64 bytes, waits, reused, digests;

	if (!s->rd.fill)
		return;
	rd_copy_end(&s->rd, &bytes, &waits, &reused, &digests);
	log_msg(&s->log, LOG_DEBUG, "%s: %llu bytes read in ahead, %llu waits for them", s->path,
		(unsigned long long)bytes, (unsigned long long)waits);
	log_msg(&s->log, LOG_DEBUG, "%s: %llu huge pages of the copy used again", s->path,
		(unsigned long long)reused);
	if (digests)
		log_msg(&s->log, LOG_DEBUG, "%s: %llu sample digests worked out ahead, %llu taken",
			s->path, (unsigned long long)digests, (unsigned long long)s->dg_taken);
}

static int convert_copied(struct perfspy_session *s)
{
	int err;

	copy_start(s, false);
	err = one_pass(s);
	copy_end(s); /* (nothing if it did not start) */
	return err;
}

/* ------------------------------------------------------------- -j N */

/*
 * -j N (issue 16, docs/design.md §6.4): the samples are split by thread
 * over N sessions on the same mapped input, each on its own thread. Every
 * session reads every record, so its machine model (maps, threads, perf
 * maps) is what one pass would have at each sample, and folds only the
 * samples of its threads; the main session (job 0) also keeps every
 * sample's statistics. The workers' folders, frame tables and frame
 * counts are then added to the main session's: the writers print stacks
 * by their text (fold_sorted), so the output is the bytes of one pass.
 * Threads, not sample ranges, are split: a thread's callchains repeat,
 * so each session's callchain cache keeps its hit rate.
 */
struct job_msg {
	int level;
	char *text;
};

struct job {
	struct perfspy_session *s;
	struct perfspy_folder *folder;
	struct perfspy_convert_opts opts; /* the caller's, without progress */
	pthread_t th;
	bool running;
	int err;
	struct job_msg *msgs; /* replayed after the pass, once each */
	size_t nr_msgs, cap_msgs;
	struct log_sink log; /* the shared symbolizer's (rsym_open) */
};

/* What can be split: a file read in place (mapped or a buffer, native
 * byte order), folded into a folder without a timeline, not --idle (its
 * off-CPU stretches follow switch records across threads). */
static bool can_split(const struct perfspy_session *s)
{
	return s->folder && s->rd.mem && s->rd.fd < 0 && !s->rd.pipe_mode &&
	       !s->rd.swapped && !s->idle && !fold_timeline_on(s->folder);
}

static void job_log(void *ctx, int level, const char *msg)
{
	struct job *j = ctx;
	char *t = strdup(msg);

	if (!t || ensure_mem((void **)&j->msgs, &j->cap_msgs, sizeof(*j->msgs),
			     j->nr_msgs + 1)) {
		free(t);
		return; /* a lost message costs nothing else */
	}
	j->msgs[j->nr_msgs].level = level;
	j->msgs[j->nr_msgs++].text = t;
}

/* The main session's log during a split pass: passed on, and remembered
 * so the workers' copies of the same message are not said twice. */
struct log_tee {
	struct log_sink out;
	struct strset seen;
	bool once; /* pass on only what was not said yet */
};

static void tee_log(void *ctx, int level, const char *msg)
{
	struct log_tee *t = ctx;
	u32 id;

	if (strset_add(&t->seen, msg, strlen(msg), &id) != 1 && t->once)
		return;
	if (t->out.fn)
		t->out.fn(t->out.ctx, level, msg);
}

/* Say @j's messages (a worker's or a symbolizer's, collected on its
 * thread) through @log, each once: not those @tee has said already. */
static void job_say(struct log_tee *tee, const struct log_sink *log, const struct job *j)
{
	size_t i;

	for (i = 0; i < j->nr_msgs; i++) {
		const char *t = j->msgs[i].text;
		u32 id;

		if (strset_add(&tee->seen, t, strlen(t), &id) == 1 && log->fn)
			log->fn(log->ctx, j->msgs[i].level, t);
	}
}

/* Worker session @k on @s's input, with @s's options and event choice. */
static int job_open(struct perfspy_session *s, struct job *j, u32 k, int *stop)
{
	PERFSPY_OPTS(perfspy_open_opts, oo,
		.log_fn = job_log,
		.log_ctx = j,
		.log_level = s->log.level,
		.log_level_set = true,
		.symfs = s->o_symfs,
		.buildid_dir = s->o_buildid_dir,
		.kallsyms = s->o_kallsyms,
		.display_name = s->path,
		.perf_map_dir = s->perf_map_dir,
		.no_debuginfod = s->o_no_debuginfod);
	struct perfspy_session *w;
	/* No options (the library's defaults) are zeroes. */
	size_t n = !s->copts ? 0 : s->copts->sz < sizeof(j->opts) ? s->copts->sz :
		   sizeof(j->opts);
	int err;

	memset(&j->opts, 0, sizeof(j->opts));
	if (n)
		memcpy(&j->opts, s->copts, n);
	j->opts.sz = sizeof(j->opts);
	j->opts.progress_fn = NULL;
	err = perfspy_folder__new(&j->folder);
	if (!err)
		err = open_session(-1, s->rd.mem, s->rd.mem_len, &oo, s->path, &j->s);
	if (err)
		return err;
	w = j->s;
	w->job = k;
	w->stop = stop;
	w->copts = &j->opts;
	w->folder = j->folder;
	w->sel_event = s->sel_event;
	w->sel_twins = s->sel_twins;
	if (s->nr_sel_also) {
		w->sel_also = calloc(s->nr_sel_also, sizeof(*w->sel_also));
		if (!w->sel_also)
			return -ENOMEM;
		memcpy(w->sel_also, s->sel_also, s->nr_sel_also * sizeof(*w->sel_also));
		w->nr_sel_also = s->nr_sel_also;
	}
	return 0;
}

static void *job_main(void *arg)
{
	struct job *j = arg;
	struct perfspy_session *w = j->s;

	j->err = one_pass(w);
	/* A namer that stopped, for whatever reason, adds no more: its
	 * reader names the rest itself (namer.h). */
	if (w->namer_w)
		namer_finish(w->namer);
	/* Done with the input: the main session may let all of it go. */
	__atomic_store_n(&w->keep_at[w->job], UINT64_MAX, __ATOMIC_RELAXED);
	/* What the merge does not read goes now, while the main session
	 * still works: the machine model, the caches. */
	if (w->mach_live)
		mach_free(&w->mach);
	w->mach_live = false;
	htab_free(&w->chains);
	if (w->stk_live)
		stk_shed(&w->stk);
	/* Nothing here touches its symbolizer from now on. */
	if (w->namer_w)
		namer_leave(w->namer, w->sym);
	return NULL;
}

/* The counts of frames another session built, added to @to. */
static void add_frame_stats(struct perfspy_stats *to, const struct perfspy_stats *w)
{
	to->frames += w->frames;
	to->frames_unknown += w->frames_unknown;
	to->frames_no_map += w->frames_no_map;
	to->stacks_truncated += w->stacks_truncated;
	to->frames_python += w->frames_python;
	to->frames_interpreter += w->frames_interpreter;
}

/* Add worker @j's stacks, frame tables and frame counts to @s's. */
static int job_merge(struct perfspy_session *s, struct job *j)
{
	const struct perfspy_stats *w = &j->s->stats;
	u32 *map;
	int err;

	err = fold_merge(s->folder, j->folder, &map);
	if (err)
		return err;
	err = stk_merge(&s->stk, &j->s->stk, map);
	free(map);
	add_frame_stats(&s->stats, w);
	return err;
}

/* Worker @j's session and folder go (its messages stay). */
static void job_drop(struct job *j)
{
	if (j->s)
		j->s->folder = NULL;
	perfspy_session__close(j->s);
	perfspy_folder__free(j->folder);
	j->s = NULL;
	j->folder = NULL;
}

static void job_free(struct job *j)
{
	size_t i;

	job_drop(j);
	for (i = 0; i < j->nr_msgs; i++)
		free(j->msgs[i].text);
	free(j->msgs);
}

/* The symbolizer every session of a split names frames with, made with
 * @s's options and told the recorded kernel as load_build_ids() tells
 * @s's own. Its messages go to @j's list (it logs under the lock). */
static int rsym_open(struct perfspy_session *s, struct job *j, struct sym_ctx **out)
{
	struct sym_opts so = {
		.symfs = s->o_symfs,
		.buildid_dir = s->o_buildid_dir,
		.kallsyms = s->o_kallsyms,
		.no_debuginfod = s->o_no_debuginfod,
		.log = &j->log,
	};
	int err;

	j->log = (struct log_sink){ .fn = job_log, .ctx = j, .level = s->log.level };
	err = sym_ctx_new(&so, out);
	return err ? err : tell_kernel(s, *out);
}

/* The split state of a session: @n sessions, none of the threads seen. */
static int split_start(struct perfspy_session *s, u32 n)
{
	idmap_free(&s->owner);
	free(s->load);
	s->load = calloc(n, sizeof(*s->load));
	s->nr_jobs = s->load ? n : 0;
	return s->load ? 0 : -ENOMEM;
}

static void split_end(struct perfspy_session *s)
{
	idmap_free(&s->owner);
	free(s->load);
	s->load = NULL;
	s->nr_jobs = 0;
	s->job = 0;
}

static int convert_split(struct perfspy_session *s, u32 n)
{
	struct log_tee tee = { .out = s->log };
	pthread_mutex_t rlock = PTHREAD_MUTEX_INITIALIZER;
	struct sym_ctx *rsym = NULL;
	u64 *keep_at = NULL;
	bool alone = false; /* no thread to be had: one pass after all */
	struct job *jobs;
	int stop = 0, err;
	u32 k;

	jobs = calloc(n + 1, sizeof(*jobs));
	if (!jobs)
		return -ENOMEM;
	/* jobs[n] collects the shared symbolizer's messages (said under
	 * the lock, from any thread). */
	err = rsym_open(s, &jobs[n], &rsym);
	if (!err && !(keep_at = calloc(n, sizeof(*keep_at))))
		err = -ENOMEM;
	if (!err)
		err = split_start(s, n);
	s->keep_at = keep_at;
	s->nr_keep = n;
	for (k = 1; !err && k < n; k++) {
		err = job_open(s, &jobs[k], k, &stop);
		if (!err) {
			jobs[k].s->rsym = rsym;
			jobs[k].s->rlock = &rlock;
		}
	}
	for (k = 1; !err && k < n; k++) {
		err = split_start(jobs[k].s, n);
		jobs[k].s->keep_at = keep_at;
		jobs[k].s->nr_keep = n;
	}
	/* Every session reads the copy; the main session releases it
	 * behind the slowest (split_keep()), as it did the mapping. */
	if (!err && copy_start(s, false))
		for (k = 1; k < n; k++)
			rd_copy_share(&jobs[k].s->rd, &s->rd);
	for (k = 1; !err && k < n; k++) {
		if (pthread_create(&jobs[k].th, NULL, job_main, &jobs[k])) {
			alone = true;
			__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
			break;
		}
		jobs[k].running = true;
	}
	strset_init(&tee.seen);
	if (!err && !alone) {
		log_msg(&s->log, LOG_INFO, "%s: converting on %u threads, the samples split by thread",
			s->path, n);
		s->log.fn = tee_log;
		s->log.ctx = &tee;
		s->rsym = rsym;
		s->rlock = &rlock;
		err = one_pass(s);
		s->rsym = NULL;
		s->rlock = NULL;
		stk_share_names(&s->stk, NULL, NULL);
		/* Kernel symbols were checked in rsym: a later
		 * perfspy_session__kernel() checks the session's own. */
		s->mach.kernel_syms_checked = false;
		s->log = tee.out;
		if (err)
			__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	}
	for (k = 1; k < n; k++)
		if (jobs[k].running)
			pthread_join(jobs[k].th, NULL);
	for (k = 1; k < n; k++)
		if (jobs[k].s)
			rd_copy_end(&jobs[k].s->rd, NULL, NULL, NULL, NULL);
	copy_end(s);
	split_end(s);
	s->keep_at = NULL;
	s->nr_keep = 0;
	for (k = 1; !err && !alone && k < n; k++)
		err = jobs[k].err;
	for (k = 1; !err && !alone && k < n; k++) {
		err = job_merge(s, &jobs[k]);
		job_drop(&jobs[k]);
	}
	/* The workers' messages and the shared symbolizer's, each said
	 * once, in session order. */
	for (k = 1; !alone && k <= n; k++)
		job_say(&tee, &s->log, &jobs[k]);
	strset_free(&tee.seen);
	for (k = 1; k <= n; k++)
		job_free(&jobs[k]);
	free(jobs);
	/* After the sessions: their stacks no longer hold its strings
	 * (interned in the folders), and no thread uses it. */
	if (rsym)
		sym_ctx_free(rsym);
	free(keep_at);
	pthread_mutex_destroy(&rlock);
	return !err && alone ? one_pass(s) : err;
}

/* ------------------------------------------------ names read ahead */

/* One message of the feed, on the builder's session @b. */
static int builder_take(struct perfspy_session *b, const struct feed_msg *m)
{
	b->cur_off = m->off;
	if (m->kind == FEED_RECORD)
		return deliver(b, m->hdr);
	if (m->kind == FEED_SAMPLE) {
		/* The reading session's count, which the names log is
		 * keyed by (§6.19). */
		b->nr_samples = m->sample - 1;
		b->build_token = m->token;
		return on_sample(b, m->hdr);
	}
	/* A hit, or a sample not folded: what on_sample() does to the model. */
	if (!sample_thread(b, m->pid, m->tid))
		return -ENOMEM;
	if (m->kind != FEED_HIT)
		return 0;
	/* A token is built before its first hit; one that was not means
	 * the sessions disagree. */
	if (m->token >= b->cap_tok || b->tok_stack[m->token] == NO_TOKEN)
		return -EPROTO;
	fold_add_to(b->folder, b->tok_stack[m->token], m->weight);
	return 0;
}

/*
 * The builder's thread: its pass is the messages of the reading session,
 * delivered in their order; it reads no records of its own. A failure
 * stops its work (the reading session sees f->err at the end) but not
 * its taking of messages, so the reading session never waits on it.
 */
static void *builder_main(void *arg)
{
	struct feed *f = arg;
	struct perfspy_session *b = f->b;
	u64 head = 0, tail = 0;
	int err = pass_prepare(b);

	for (;;) {
		const struct feed_msg *m;
		unsigned spins = 0;

		while (head == tail) {
			__atomic_store_n(&f->head, head, __ATOMIC_RELEASE);
			tail = __atomic_load_n(&f->tail, __ATOMIC_ACQUIRE);
			if (head != tail)
				break;
			if (__atomic_load_n(&f->done, __ATOMIC_ACQUIRE)) {
				tail = __atomic_load_n(&f->tail, __ATOMIC_ACQUIRE);
				if (head == tail)
					goto out;
			} else {
				/* Waiting for the first messages, as a
				 * conversion starts: the kernel's symbols
				 * now, not at the first kernel frame. On a
				 * deep-stack file this thread names every
				 * frame and is the slower of the two; the
				 * table was 9% of its instructions. */
				if (spins == FEED_SPINS && !err)
					sym_while_idle(b->sym);
				feed_wait(&spins);
			}
		}
		m = &f->ring[head % FEED_RING];
		if (!err)
			err = builder_take(b, m);
		if (++head % FEED_BATCH == 0) {
			/* The floor read before the slot is handed back: once
			 * head passes it, the reader may write the slot again
			 * (with a full ring, at once), and a later message's
			 * floor would let it release what this side still
			 * reads (ThreadSanitizer, run-copyin's 50 MB file). */
			u64 floor = m->floor;

			__atomic_store_n(&f->head, head, __ATOMIC_RELEASE);
			__atomic_store_n(f->keep_at, floor, __ATOMIC_RELAXED);
		}
	}
out:
	__atomic_store_n(f->keep_at, UINT64_MAX, __ATOMIC_RELAXED);
	f->err = err;
	return NULL;
}

/* A builder's frame tables, frame counts and unwinding counts into @s's;
 * the stacks are in @s's folder already. */
static int builder_merge(struct perfspy_session *s, struct perfspy_session *b)
{
	size_t i, n = fold_nr_names(s->folder);
	u32 *map = malloc((n ? n : 1) * sizeof(*map));
	int err;

	if (!map)
		return -ENOMEM;
	/* One folder: every id is its own. */
	for (i = 0; i < n; i++)
		map[i] = (u32)i;
	err = stk_merge(&s->stk, &b->stk, map);
	free(map);
	add_frame_stats(&s->stats, &b->stats);
	return err;
}

/*
 * docs/design.md §6.19: on a frame-pointer recording naming addresses is
 * the converting thread's biggest part after folding (a quarter of it on
 * the build bench recording), and -j 2's split by thread repeats the
 * reading and ordering on both threads and meets on the shared
 * symbolizer's lock. Here a second session reads the same mapping on a
 * thread of its own and does nothing but name each address the first
 * time a sample needs it, into the names log; the converting session
 * folds every sample as one pass does and takes the names from the log.
 */
/* Below this much data the thread costs about what it saves. */
#define NAME_AHEAD_MIN (2u << 20)

static bool can_name_ahead(const struct perfspy_session *s, bool always)
{
	if (!can_split(s) ||
	    (!always && s->rd.data_end - s->rd.data_offset < NAME_AHEAD_MIN))
		return false;
	/* Frame pointers only: user stack dumps are unwound, not named
	 * from a callchain, and cost too much to read twice. */
	return !user_stacks(s);
}

/* What the builder needs (§6.25): what the namer needs, and records that
 * stay where they lie (a message points at its record): no
 * PERF_RECORD_COMPRESSED, whose records live in the reader's buffer. */
static bool can_build_behind(const struct perfspy_session *s, bool always)
{
	return !s->rd.compressed && can_name_ahead(s, always);
}

/* The samples looked at, and the mean callchain length from which the
 * builder names its own frames by default (§6.25, §6.26). */
#define DEPTH_SAMPLES 1024u
#define DEPTH_BEHIND 24u

/*
 * Whether the first DEPTH_SAMPLES samples' callchains are DEPTH_BEHIND
 * entries long on average. Where they are, building a stack (a frame a
 * callchain entry, the fold of as many ids) is most of a sample's cost
 * and pays on a thread of its own, which names what it meets; where
 * frame-pointer chains stop after a few frames (libraries built without
 * them) reading and naming are, and the reading session names ahead of
 * the builder (§6.26). Reads the records where they lie
 * (can_build_behind()), the reader's position untouched.
 */
static bool deep_stacks(struct perfspy_session *s)
{
	const u8 *p = s->rd.mem + s->rd.data_offset, *end = s->rd.mem + s->rd.data_end;
	u64 entries = 0, n = 0;

	if (s->rd.data_end > s->rd.mem_len || s->rd.data_offset > s->rd.data_end)
		return false;
	while (n < DEPTH_SAMPLES && (size_t)(end - p) >= sizeof(struct perf_event_header)) {
		const struct perf_event_header *h = (const void *)p;
		struct rd_evsel *ev;
		struct rec_sample smp;

		if (h->size < sizeof(*h) || h->size > (size_t)(end - p))
			break;
		if (h->type == PERF_RECORD_SAMPLE && (ev = rd_evsel_of(&s->rd, h)) &&
		    !rec_parse_sample(ev, h, &smp)) {
			entries += smp.callchain_nr;
			n++;
		}
		p += h->size;
	}
	return n && entries >= (u64)DEPTH_BEHIND * n;
}


/*
 * The pass with its stacks built on a thread of their own (§6.25): the
 * session reads, orders, keeps the statistics and probes the callchain
 * cache; a builder session (slot 1 of keep_at) builds and folds. With
 * @names the session also names each new address of the samples it
 * sends to be built, into a names log the builder takes them from
 * (§6.26). Its messages are said after the pass, each once. Without a
 * thread, the session's own pass as always.
 */
static int convert_behind(struct perfspy_session *s, bool names)
{
	struct log_tee tee = { .out = s->log };
	u64 keep_at[2] = { 0, 0 };
	struct feed f = { .keep_at = &keep_at[1] };
	struct namer *nm = NULL;
	struct job j = { 0 };
	bool ring_mapped;
	int stop = 0, err;
	pthread_t th;

	f.ring = big_zalloc(FEED_RING * sizeof(*f.ring), &ring_mapped);
	if (!f.ring)
		return -ENOMEM;
	err = names ? namer_new(&nm) : 0;
	if (!err)
		err = job_open(s, &j, 1, &stop);
	if (err)
		goto out;
	j.s->namer = nm;
	/* The builder folds into the caller's folder: the reading
	 * session never touches it during the pass. */
	perfspy_folder__free(j.folder);
	j.folder = NULL;
	j.s->folder = s->folder;
	j.s->builder = true;
	j.s->keep_at = keep_at;
	j.s->nr_keep = 2;
	f.b = j.s;
	if (pthread_create(&th, NULL, builder_main, &f)) {
		err = one_pass(s);
		goto out;
	}
	log_msg(&s->log, LOG_INFO, "%s: building stacks on a second thread%s", s->path,
		nm ? ", their frames named ahead by the reading one" : "");
	strset_init(&tee.seen);
	s->log.fn = tee_log;
	s->log.ctx = &tee;
	s->keep_at = keep_at;
	s->nr_keep = 2;
	s->feed = &f;
	s->namer = nm;
	s->namer_w = nm != NULL;
	copy_start(s, true);
	err = one_pass(s);
	if (nm)
		namer_finish(nm);
	feed_publish(&f);
	__atomic_store_n(&f.done, true, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	/* The builder read the records where they lie until here. */
	copy_end(s);
	s->namer = NULL;
	s->namer_w = false;
	s->feed = NULL;
	s->keep_at = NULL;
	s->nr_keep = 0;
	s->log = tee.out;
	log_msg(&s->log, LOG_DEBUG,
		"%s: %llu samples built behind, %llu added to stacks built before, %llu other records",
		s->path, (unsigned long long)f.nr_kind[FEED_SAMPLE],
		(unsigned long long)f.nr_kind[FEED_HIT],
		(unsigned long long)(f.nr_kind[FEED_RECORD] + f.nr_kind[FEED_SEEN]));
	if (nm) {
		struct namer_stats st;

		namer_stats(nm, &st);
		log_msg(&s->log, LOG_DEBUG,
			"%s: %llu addresses named ahead, %llu taken, %llu named here, %llu waits",
			s->path, (unsigned long long)st.put, (unsigned long long)st.taken,
			(unsigned long long)st.missed, (unsigned long long)st.waits);
	}
	if (!err)
		err = f.err;
	if (!err)
		err = builder_merge(s, j.s);
	job_say(&tee, &s->log, &j);
	/* The session's own notes, here rather than after the return:
	 * this session's model reads a Python process's perf map again to
	 * find it has one, and says so as the builder did; through the tee,
	 * once, that is not said twice. */
	s->log.fn = tee_log;
	s->log.ctx = &tee;
	tee.once = true;
	if (!err) {
		err = pass_notes(s);
		s->noted = !err;
	}
	s->log = tee.out;
	strset_free(&tee.seen);
out:
	if (j.s)
		free(j.s->tok_stack);
	job_free(&j);
	namer_free(nm);
	big_free(f.ring, FEED_RING * sizeof(*f.ring), ring_mapped);
	return err;
}

static int convert_named(struct perfspy_session *s)
{
	struct log_tee tee = { .out = s->log };
	u64 keep_at[2] = { 0, 0 };
	struct namer_stats st;
	struct namer *nm = NULL;
	struct job j = { 0 };
	int stop = 0, err;

	err = namer_new(&nm);
	if (!err)
		err = job_open(s, &j, 1, &stop);
	if (!err) {
		j.s->namer = nm;
		j.s->namer_w = true;
		j.s->keep_at = keep_at;
		j.s->nr_keep = 2;
		j.running = !pthread_create(&j.th, NULL, job_main, &j);
	}
	if (err || !j.running) {
		job_free(&j);
		namer_free(nm);
		return err ? err : one_pass(s);
	}
	log_msg(&s->log, LOG_INFO, "%s: naming frames ahead on a second thread", s->path);
	strset_init(&tee.seen);
	s->log.fn = tee_log;
	s->log.ctx = &tee;
	s->keep_at = keep_at;
	s->nr_keep = 2;
	s->namer = nm;
	err = one_pass(s);
	/* Whatever the namer has left to do is of no use now. */
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&keep_at[0], UINT64_MAX, __ATOMIC_RELAXED);
	pthread_join(j.th, NULL);
	s->namer = NULL;
	s->keep_at = NULL;
	s->nr_keep = 0;
	/* The names memo holds the namer's strings, and the stacks may
	 * hold its symbolizer: both go with it. */
	stk_drop_names(&s->stk);
	s->log = tee.out;
	namer_stats(nm, &st);
	log_msg(&s->log, LOG_DEBUG,
		"%s: %llu addresses named ahead, %llu taken, %llu named here, %llu waits",
		s->path, (unsigned long long)st.put, (unsigned long long)st.taken,
		(unsigned long long)st.missed, (unsigned long long)st.waits);
	/* The namer's messages (its symbolizer's), each said once. Its
	 * error, if any, cost only time: the reader named the rest. */
	job_say(&tee, &s->log, &j);
	strset_free(&tee.seen);
	job_free(&j);
	namer_free(nm);
	return err;
}

PERFSPY_API int perfspy_session__convert(struct perfspy_session *s,
					 const struct perfspy_convert_opts *opts,
					 struct perfspy_folder *folder)
{
	size_t i;
	int err, jobs, ahead, behind;
	bool build, deep, names = false;

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
	s->idle = folder && OPTS_GET(opts, idle, false);
	free(s->sel_also);
	s->sel_also = NULL;
	s->nr_sel_also = 0;
	s->sel_valid = false;
	s->sel_twins = false;
	if (folder && !OPTS_GET(opts, event, NULL)) {
		err = pick_default_event(s);
		if (err)
			return err;
		for (i = 0; i < s->rd.nr_evsels; i++)
			s->rd.evsels[i].nr_samples = 0;
	} else {
		s->sel_event = select_event(s);
	}
	if (s->sel_event < 0 && !s->rd.pipe_mode) {
		log_msg(&s->log, LOG_ERROR, "%s: no event named '%s'", s->path,
			OPTS_GET(opts, event, ""));
		return -PERFSPY_E_NO_EVENT;
	}
	/* The writers' order, sorted as the stacks come (docs/design.md
	 * §6.23). */
	if (folder && (err = fold_sort_ahead(folder)))
		return err;
	jobs = OPTS_GET(opts, jobs, 0);
	ahead = OPTS_GET(opts, name_ahead, PERFSPY_NAME_AHEAD_AUTO);
	behind = OPTS_GET(opts, build_behind, PERFSPY_BUILD_BEHIND_AUTO);
	/* The builder or the namer thread (§6.25): both at once measured
	 * slower than either. With the builder, the reading session names
	 * ahead (§6.26) where chains are shallow; deep ones the builder
	 * names itself. Without names read ahead (name_ahead NEVER), the
	 * builder pays only where chains are deep. The namer thread is
	 * left for name_ahead ALWAYS and files the builder cannot take. */
	build = behind == PERFSPY_BUILD_BEHIND_ALWAYS ? can_build_behind(s, true) :
		behind == PERFSPY_BUILD_BEHIND_AUTO && ahead != PERFSPY_NAME_AHEAD_ALWAYS &&
		online_cpus() > 1 && can_build_behind(s, false);
	if (build) {
		deep = deep_stacks(s);
		names = ahead == PERFSPY_NAME_AHEAD_ALWAYS ||
			(ahead == PERFSPY_NAME_AHEAD_AUTO && !deep);
		build = names || deep || behind == PERFSPY_BUILD_BEHIND_ALWAYS;
	}
	if (jobs > 1 && can_split(s))
		err = convert_split(s, jobs > 256 ? 256 : (u32)jobs);
	else if (build)
		err = convert_behind(s, names);
	else if (ahead == PERFSPY_NAME_AHEAD_ALWAYS ? can_name_ahead(s, true) :
		 ahead == PERFSPY_NAME_AHEAD_AUTO && online_cpus() > 1 &&
		 can_name_ahead(s, false))
		err = convert_named(s);
	else
		err = convert_copied(s);
	s->passed = true;
	s->sel_valid = folder && !err;
	if (!err && !s->noted)
		err = pass_notes(s);
	s->noted = false;
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
	i.python_no_map_processes = s->py_nomap_procs;
	i.python_no_map_samples = s->py_nomap_samples;
	i.fp_stacks = s->fp_stacks;
	i.fp_stacks_bad = s->fp_stacks_bad;
	for (k = 0; k < rd->nr_build_ids; k++)
		i.nr_dsos_hit += user_dso_hit(&rd->build_ids[k]);
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
	v.folded = s->sel_valid && ((int)idx == s->sel_event ||
				    (idx < s->nr_sel_also && s->sel_also[idx]) ||
				    (s->sel_twins && is_twin(s, (int)idx)));
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
	v.exe = m->exe;
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

PERFSPY_API int perfspy_session__kernel(struct perfspy_session *s,
					struct perfspy_kernel *k)
{
	struct perfspy_kernel v = { 0 };
	struct sym_kernel_desc d;

	if (!s || !k || k->sz < sizeof(size_t))
		return -PERFSPY_E_OPTS;
	/* The verdict needs the pass's kernel map (_text). */
	if (!s->mach_live)
		return -ENOENT;
	mach_kernel_syms(&s->mach);
	sym_kernel_describe(s->sym, &d);
	memcpy(s->kern_bid, d.build_id, sizeof(s->kern_bid));
	v.sz = k->sz < sizeof(v) ? k->sz : sizeof(v);
	v.build_id = s->kern_bid[0] ? s->kern_bid : NULL;
	v.os_release = d.release;
	v.kallsyms = d.ok ? d.kallsyms : NULL;
	v.tried = d.kallsyms;
	v.why = d.why;
	v.nr_kernel_samples = s->nr_kernel_samples;
	memcpy(k, &v, v.sz);
	return 0;
}

/* issue 14: the DSOs seen, for pprof Mappings (perfspy.h). */
PERFSPY_API int perfspy_session__dso(const struct perfspy_session *s, uint32_t idx,
				     struct perfspy_dso *d)
{
	return sym_dso_at(s->sym, idx, d);
}

/* issue 15: the library of a frame that names its source file, for the
 * flame graph's colours (perfspy.h). */
PERFSPY_API const char *perfspy_session__frame_lib(const struct perfspy_session *s,
						   const char *frame, size_t len)
{
	return s && s->stk_live && frame ? stk_frame_lib(&s->stk, frame, len) : NULL;
}

/* issue 14: inlined frames, for pprof Lines (perfspy.h). */
PERFSPY_API bool perfspy_session__frame_inlined(const struct perfspy_session *s,
					       const char *frame, size_t len)
{
	return s && s->stk_live && frame && stk_frame_inlined(&s->stk, frame, len);
}

PERFSPY_API int perfspy_session__python_source(const struct perfspy_session *s,
					       uint32_t idx, const char **path)
{
	const char *p;

	if (!s || !path)
		return -EINVAL;
	p = s->stk_live ? py_ctx_source(s->stk.py, idx) : NULL;
	if (!p)
		return -ENOENT;
	*path = p;
	return 0;
}

PERFSPY_API int perfspy_perf_map_path(int pid, char *buf, size_t size)
{
	s32 own;
	int n;

	/* machine.c's proc_ns() takes the same view for a live session. */
	if (mach_ns_view(pid, &own))
		n = snprintf(buf, size, "/proc/%d/root/tmp/perf-%d.map", pid, (int)own);
	else
		n = snprintf(buf, size, "/tmp/perf-%d.map", (int)own);
	return n >= 0 && (size_t)n < size ? 0 : -ERANGE;
}
