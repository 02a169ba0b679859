// SPDX-License-Identifier: GPL-2.0
/*
 * DSOs opened ahead of their first use, on a thread of their own
 * (docs/design.md §6.14).
 *
 * A perf.data file written by `perf record` lists in its header the DSOs
 * its samples hit, with their build ids (the BUILD_ID feature,
 * docs/perf-data-format.md §1.4). Opening one is the same work whichever
 * thread does it: find the files, read the segments and the symbol
 * table, sort it, inflate the debug sections and open the DWARF. On the
 * converting thread that was 11% of its samples on a system-wide build
 * recording, while the second CPU had time to spare; here a thread does
 * it while the converting thread reads the samples.
 *
 * The rules that keep the output and the messages those of one thread:
 * - The session makes the DSO objects before the thread starts
 *   (sym_open_ahead(), `unseen` until the machine model names them), so
 *   the DSO table is never changed by the thread.
 * - Each DSO has a state: queued, busy (the thread works on it), done,
 *   partial (done up to what only the converting thread may do: asking
 *   debuginfod servers, whose client is not shared) or mine (the
 *   converting thread took it before the thread came to it). A DSO is
 *   changed by one thread at a time, and handed over under the mutex.
 * - The thread opens with a sym_ctx of its own that has the options of
 *   the session's, a log that keeps the messages per DSO, and counters
 *   per DSO. The converting thread says the messages and adds the
 *   counters when it first needs the DSO, where its own open would have
 *   said and counted them; a DSO it never needs says nothing.
 * - Every use of a DSO that may not be open passes one gate, dso_ready()
 *   in symbols.c, which holds the converting thread's side: taking a
 *   queued DSO, waiting for a busy one, the hand-over, the end. This
 *   file holds the thread's side and the start.
 * No output depends on which thread opened a DSO.
 */
#include "symbols_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* The thread's log: every message kept with its DSO, at any level the
 * session's log takes (log_msg() filtered with the same level). */
static void keep_note(void *arg, int level, const char *msg)
{
	struct ahead_opener *o = arg;
	struct sym_dso *d = o->cur;
	char *t;

	if (!d || ensure_mem((void **)&d->notes, &d->cap_notes, sizeof(*d->notes),
			     d->nnotes + 1))
		return;
	/* A message lost to ENOMEM costs nothing else. */
	if (!(t = strdup(msg)))
		return;
	d->notes[d->nnotes].level = level;
	d->notes[d->nnotes++].text = t;
}

static void open_one(struct ahead_opener *o, struct sym_dso *d)
{
	struct sym_ahead *a = o->a;
	bool remote;
	int state;

	o->cur = d;
	memset(&o->own.stats, 0, sizeof(o->own.stats));
	remote = sym_dso_locate_local(&o->own, d);
	if (remote && a->debuginfod && sym_debuginfod_lacks(d)) {
		state = AHEAD_PARTIAL;
	} else {
		sym_dso_locate_end(d);
		d->ahead_err = sym_dso_load(&o->own, d);
		/* What the first name asks for next (resolve_uncached()). */
		if (!d->ahead_err && d->found)
			sym_dso_dwarf(d);
		state = AHEAD_DONE;
	}
	d->ahead_stats = o->own.stats;
	d->ahead_helped = o != &a->by[0];
	o->cur = NULL;
	pthread_mutex_lock(&a->mu);
	__atomic_store_n(&d->ahead, state, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&a->cv);
	pthread_mutex_unlock(&a->mu);
}

/* Opens q[@i] by @o unless another thread took it; true if @o did.
 * The thread's opens are kept in its order (sym_ahead_order()). */
static bool take_one(struct ahead_opener *o, size_t i)
{
	struct sym_ahead *a = o->a;
	struct sym_dso *d = a->q[i];
	int queued = AHEAD_QUEUED;

	if (!__atomic_compare_exchange_n(&d->ahead, &queued, AHEAD_BUSY, false,
					 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return false;
	open_one(o, d);
	if (o == &a->by[0])
		a->order[a->norder++] = d;
	return true;
}

/* The bytes of debug sections @d's open inflated. */
static size_t inflated(const struct sym_dso *d)
{
	size_t i, n = 0;

	for (i = 0; i < d->nzbufs; i++)
		n += d->zbufs[i].n;
	return n;
}

/*
 * The queue in its order (the session's: the header's from its end).
 * The header lists DSOs about in the order the recording first mapped
 * them, which is about the order the converting thread first needs
 * them, and it needs the first ones at once. Taken from the header's
 * front, the thread held libc (17-27 ms of inflating and opening its
 * DWARF on the build recording) while the converting thread waited for
 * it, 19 ms; from the back, each side opens what it reaches first and
 * neither waits.
 *
 * A thread that opens for the namer (a->front, docs/design.md §6.24)
 * starts at the front all the same, up to a->front DSOs and through
 * the first whose debug sections are big (libc's 8.6 MB): the namer
 * reaches a DSO only when a sample needs it, and the one deflate stream
 * of libc's .debug_info (20 ms here) is the long pole of the start.
 * Begun as soon as the header is read, it ends that much earlier.
 */
static void *ahead_main(void *arg)
{
	struct sym_ahead *a = arg;
	size_t i;

	for (i = a->n; i-- > 0 && a->n - i <= a->front &&
		       !__atomic_load_n(&a->stop, __ATOMIC_RELAXED);)
		if (take_one(&a->by[0], i) && inflated(a->q[i]) >= AHEAD_BIG)
			break;
	for (i = 0; i < a->n && !__atomic_load_n(&a->stop, __ATOMIC_RELAXED); i++)
		take_one(&a->by[0], i);
	return NULL;
}

/*
 * The helper (docs/design.md §6.27). The thread's start ends with the
 * first big DSO at the header's front, libc on the build recording,
 * whose DWARF is one deflate stream of 20 ms; the converting thread,
 * needing it for its first names, waited 15 ms for it with a CPU idle,
 * then opened the next DSOs itself. So at that first wait a second
 * thread opens the rest from the header's front (the DSOs the first
 * samples need next) while the first goes on from the back. Not the
 * converting thread itself: a long open (a compiler's symbol table)
 * held it past the end of its wait.
 */
static void *helper_main(void *arg)
{
	struct sym_ahead *a = arg;
	size_t i;

	for (i = a->n; i-- > 0 && !__atomic_load_n(&a->stop, __ATOMIC_RELAXED);)
		take_one(&a->by[1], i);
	return NULL;
}

static void start_helper(struct sym_ahead *a)
{
	if (a->helping || a->joined)
		return;
	a->helping = !pthread_create(&a->helper, NULL, helper_main, a);
}

size_t sym_ahead_order(const struct sym_ctx *ctx, const char **names, size_t max)
{
	const struct sym_ahead *a = ctx->ahead;
	size_t i;

	for (i = 0; a && i < a->norder && i < max; i++)
		names[i] = a->order[i]->name;
	return i;
}

int sym_open_ahead(struct sym_ctx *ctx, const struct sym_ahead_dso *v, size_t n,
		   size_t front)
{
	struct sym_ahead *a;
	size_t i, k = 0;
	int err = 0;

	if (ctx->ahead || !n)
		return 0;
	a = calloc(1, sizeof(*a));
	if (!a || !(a->q = calloc(n, sizeof(*a->q))) ||
	    !(a->order = calloc(n, sizeof(*a->order)))) {
		if (a)
			free(a->q);
		free(a);
		return -ENOMEM;
	}
	a->front = front;
	a->help = start_helper;
	for (i = 0; i < n && !err; i++) {
		struct sym_dso *d;

		err = sym_dso_make(ctx, v[i].name, v[i].bid, v[i].bid_size, false, &d);
		if (err || d->opened || d->ahead != AHEAD_NONE)
			continue;
		sym_dso_set_no_dwarf(d, v[i].no_dwarf);
		d->ahead = AHEAD_QUEUED;
		d->ahead_by = a;
		a->q[k++] = d;
	}
	a->n = k;
	/* The openers' own ctxs: the session's options, none of its state. */
	for (i = 0; i < ARRAY_SIZE(a->by); i++) {
		struct ahead_opener *o = &a->by[i];

		o->a = a;
		o->own.symfs = ctx->symfs;
		o->own.buildid_dir = ctx->buildid_dir;
		o->own.no_debuginfod = true;
		o->log = (struct log_sink){ .fn = keep_note, .ctx = o,
					    .level = ctx->log ? ctx->log->level : LOG_WARN };
		o->own.log = ctx->log && ctx->log->fn ? &o->log : NULL;
	}
	a->debuginfod = sym_debuginfod_wanted(ctx);
	pthread_mutex_init(&a->mu, NULL);
	pthread_cond_init(&a->cv, NULL);
	ctx->ahead = a;
	/* Without a thread the queued DSOs are opened as they come. */
	if (!k || pthread_create(&a->th, NULL, ahead_main, a)) {
		for (i = 0; i < k; i++) {
			a->q[i]->ahead = AHEAD_NONE;
			a->q[i]->ahead_by = NULL;
		}
		a->n = 0;
		sym_ahead_stop(ctx);
	}
	return err;
}
