// SPDX-License-Identifier: GPL-2.0
/*
 * perfspy_symbolizer: frames for addresses whose maps a caller already
 * knows (include/perfspy.h). The perf dlfilter plugin is the caller: perf
 * has resolved each callchain address to a binary and file offset, and
 * the frames must read as perfspy_session__convert() writes them. So
 * this drives the session's own pieces (symbols.c to open binaries by
 * build id or path, stacks.c to render and cache frames and drop
 * interpreter frames, python.c for perf-map names) and only stands in
 * for the machine model, whose map lookups perf has done.
 *
 * Frame texts are interned in a private folder: it is the string pool,
 * so a text's pointer stays valid for the symbolizer's life.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/fold.h"
#include "common/opts.h"
#include "frames/machine.h"
#include "frames/stacks.h"
#include "perfspy.h"

struct perfspy_symbolizer {
	struct log_sink log;
	struct sym_ctx *sym;
	struct machine mach; /* empty: only its kallsyms check is used */
	struct perfspy_folder *names;
	struct stk_ctx stk;
	bool stk_live;
	bool kernel_bid_done;
	struct perfspy_stats stats;
	const char **out;
	size_t cap_out;
	/* The programs the stacks ran (count_program()). */
	struct sym_prog {
		char *path;
		u64 stacks;
	} *progs;
	size_t nr_progs, cap_progs;
};

PERFSPY_API int perfspy_symbolizer__new(const struct perfspy_open_opts *opts,
					const struct perfspy_convert_opts *copts,
					struct perfspy_symbolizer **out)
{
	struct perfspy_symbolizer *s;
	struct sym_opts so = { 0 };
	int err;

	if (!out)
		return -EINVAL;
	if (!OPTS_VALID(opts, perfspy_open_opts) ||
	    !OPTS_VALID(copts, perfspy_convert_opts))
		return -PERFSPY_E_OPTS;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	/* The same defaults as session_new(). */
	s->log.fn = OPTS_GET(opts, log_fn, NULL);
	s->log.ctx = OPTS_GET(opts, log_ctx, NULL);
	s->log.level = OPTS_GET(opts, log_level, 0);
	if (!s->log.level)
		s->log.level = LOG_WARN;
	so.symfs = OPTS_GET(opts, symfs, NULL);
	so.buildid_dir = OPTS_GET(opts, buildid_dir, NULL);
	so.kallsyms = OPTS_GET(opts, kallsyms, NULL);
	so.log = &s->log;
	s->stats.sz = sizeof(s->stats);
	err = sym_ctx_new(&so, &s->sym);
	if (!err)
		err = mach_init(&s->mach, s->sym, &s->log);
	if (!err)
		err = perfspy_folder__new(&s->names);
	if (!err) {
		/* As start_stacks() in session.c. */
		struct py_opts po = {
			.qualname = OPTS_GET(copts, qualname, false),
			.no_lineno = OPTS_GET(copts, no_lineno, false),
			.full_filenames = OPTS_GET(copts, full_filenames, false),
			.log = &s->log,
		};
		struct stk_opts sto = {
			.no_kernel = OPTS_GET(copts, no_kernel, false),
			.keep_interpreter = OPTS_GET(copts, keep_interpreter, false),
			.python_only = OPTS_GET(copts, python_only, false),
		};

		err = stk_init(&s->stk, s->sym, &s->mach, NULL, s->names, &po,
			       &sto, &s->stats);
		s->stk_live = !err;
	}
	if (err) {
		perfspy_symbolizer__free(s);
		return err;
	}
	*out = s;
	return 0;
}

PERFSPY_API void perfspy_symbolizer__free(struct perfspy_symbolizer *s)
{
	if (!s)
		return;
	if (s->stk_live)
		stk_free(&s->stk);
	perfspy_folder__free(s->names);
	mach_free(&s->mach);
	sym_ctx_free(s->sym);
	free(s->out);
	while (s->nr_progs)
		free(s->progs[--s->nr_progs].path);
	free(s->progs);
	free(s);
}

static int push_loc(struct perfspy_symbolizer *s, const struct perfspy_location *l,
		    size_t *n)
{
	int kind = OPTS_GET(l, kind, PERFSPY_LOC_UNKNOWN);
	const char *dso = OPTS_GET(l, dso, NULL), *slash;
	const u8 *bid = OPTS_GET(l, build_id, NULL);
	size_t bid_size = bid ? OPTS_GET(l, build_id_size, 0) : 0;
	u64 addr = OPTS_GET(l, addr, 0);
	bool is_return = OPTS_GET(l, is_return, false);
	struct sym_dso *d;
	int err;

	if (bid_size > 255)
		bid_size = 255;
	switch (kind) {
	case PERFSPY_LOC_DSO:
		if (!dso)
			return -EINVAL;
		err = sym_dso_get(s->sym, dso, bid, bid_size, &d);
		if (err)
			return err;
		/* As mach_mmap() does for the interpreter's maps. */
		if (py_is_interpreter_dso(dso))
			sym_dso_set_no_dwarf(d, true);
		return stk_push_dso(&s->stk, d, OPTS_GET(l, offset, 0), addr,
				    is_return, n);
	case PERFSPY_LOC_KERNEL:
		/* The recorded kernel's symbols from perf's build-id cache,
		 * as load_build_ids() in session.c arranges; before the
		 * first kernel lookup. */
		if (!s->kernel_bid_done) {
			s->kernel_bid_done = true;
			if (bid && bid_size &&
			    (err = sym_kernel_set_build_id(s->sym, bid, bid_size)))
				return err;
		}
		return stk_push_kernel(&s->stk, addr, is_return, n);
	case PERFSPY_LOC_SYMBOL:
		if (!OPTS_GET(l, symbol, NULL))
			return -EINVAL;
		return stk_push_symbol(&s->stk, l->symbol, n);
	case PERFSPY_LOC_UNKNOWN:
		/* A map's name as the machine model shortens it. */
		slash = dso ? strrchr(dso, '/') : NULL;
		return stk_push_unknown(&s->stk, slash && slash[1] ? slash + 1 : dso,
					addr, n);
	default:
		return -EINVAL;
	}
}

/*
 * The program a stack ran, for perfspy_symbolizer__program(): the binary
 * of its outermost location that is no shared library (`_start`'s,
 * `main`'s, a thread function's below libc's `clone3`), by the rule that
 * tells a process's own image from its libraries (mach_is_shared_lib()).
 * @path is the caller's: copied on first sight.
 */
static int count_program(struct perfspy_symbolizer *s, const char *path)
{
	size_t i;

	if (!path)
		return 0;
	for (i = 0; i < s->nr_progs; i++)
		if (!strcmp(s->progs[i].path, path)) {
			s->progs[i].stacks++;
			return 0;
		}
	if (ensure_mem((void **)&s->progs, &s->cap_progs, sizeof(*s->progs), s->nr_progs + 1) ||
	    !(s->progs[s->nr_progs].path = strdup(path)))
		return -ENOMEM;
	s->progs[s->nr_progs++].stacks = 1;
	return 0;
}

PERFSPY_API int perfspy_symbolizer__stack(struct perfspy_symbolizer *s,
					  const struct perfspy_location *locs,
					  size_t nr, const char *const **frames,
					  size_t *nr_frames)
{
	const char *prog = NULL;
	size_t n = 0, i, stride;
	int err;

	if (!s || !frames || !nr_frames || (nr && !locs))
		return -EINVAL;
	stride = nr ? locs->sz : 0;
	for (i = 0; i < nr; i++) {
		const struct perfspy_location *l =
			(const void *)((const char *)locs + i * stride);

		/* Bytes past the struct this library knows must be zero (a
		 * field it cannot honour); its own padding after is_return
		 * is not checked: locations are filled per address, often
		 * by assignment, which need not copy padding. */
		if (l->sz != stride || stride < sizeof(size_t) ||
		    !opts_tail_zero(l, sizeof(*l), stride))
			return -PERFSPY_E_OPTS;
		err = push_loc(s, l, &n);
		if (err)
			return err;
	}
	/* From the outermost location in (leaf first: the last), to the
	 * first that is a program's: a few looks a stack, not one a frame. */
	for (i = nr; i-- > 0 && !prog;) {
		const struct perfspy_location *l =
			(const void *)((const char *)locs + i * stride);

		/* push_loc() took it: a DSO location has a path. */
		if (OPTS_GET(l, kind, PERFSPY_LOC_UNKNOWN) == PERFSPY_LOC_DSO &&
		    l->dso[0] != '[') {
			const char *slash = strrchr(l->dso, '/');

			if (!mach_is_shared_lib(slash ? slash + 1 : l->dso))
				prog = l->dso;
		}
	}
	if ((err = count_program(s, prog)))
		return err;
	n = stk_finish(&s->stk, n);
	if (ensure_mem((void **)&s->out, &s->cap_out, sizeof(*s->out), n + 1))
		return -ENOMEM;
	/* Root first: the stack was built leaf first. */
	for (i = 0; i < n; i++)
		s->out[i] = fold_name(s->names, s->stk.stack[n - 1 - i]);
	*frames = s->out;
	*nr_frames = n;
	return 0;
}

PERFSPY_API int perfspy_symbolizer__stats(const struct perfspy_symbolizer *s,
					  struct perfspy_stats *stats)
{
	size_t sz;

	if (!s || !stats || stats->sz < sizeof(size_t))
		return -PERFSPY_E_OPTS;
	sz = stats->sz < sizeof(s->stats) ? stats->sz : sizeof(s->stats);
	memcpy(stats, &s->stats, sz);
	stats->sz = sz;
	return 0;
}

/* issue 15: the library of a frame that names its source file. */
PERFSPY_API const char *perfspy_symbolizer__frame_lib(const struct perfspy_symbolizer *s,
						      const char *frame, size_t len)
{
	return s && s->stk_live && frame ? stk_frame_lib(&s->stk, frame, len) : NULL;
}

/* 0.7: inlined frames and the binaries named, for the plugin's pprof. */
PERFSPY_API bool perfspy_symbolizer__frame_inlined(const struct perfspy_symbolizer *s,
						   const char *frame, size_t len)
{
	return s && s->stk_live && frame && stk_frame_inlined(&s->stk, frame, len);
}

PERFSPY_API const char *perfspy_symbolizer__program(const struct perfspy_symbolizer *s)
{
	const struct sym_prog *best = NULL;
	size_t i;

	for (i = 0; s && i < s->nr_progs; i++)
		if (!best || s->progs[i].stacks > best->stacks ||
		    (s->progs[i].stacks == best->stacks && strcmp(s->progs[i].path, best->path) < 0))
			best = &s->progs[i];
	return best ? best->path : NULL;
}

PERFSPY_API int perfspy_symbolizer__dso(const struct perfspy_symbolizer *s, uint32_t idx,
					struct perfspy_dso *d)
{
	return s ? sym_dso_at(s->sym, idx, d) : -EINVAL;
}
