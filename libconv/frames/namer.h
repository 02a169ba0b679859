/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The names log (docs/design.md §6.19): a second session reads the same
 * frame-pointer recording a little ahead of the converting one and names
 * each (DSO, offset) the first time a sample needs it; the converting
 * session takes those names instead of working them out. One thread
 * appends (the namer), one reads (the converting thread); no lock.
 *
 * Both sessions read the same records in the same order with the same
 * machine model, so an address is first needed by the same sample in
 * both, and within a sample in the same order. A record carries that
 * sample's number, the DSO's path and the frame cache's key, and the
 * reader checks all three: where the two ever disagree (a sample the
 * namer did not name, a frame it does not know how to find) the reader
 * gets NAMER_MISS and names the address itself, so the output never
 * depends on the namer, only the time does.
 */
#ifndef PERFSPY_NAMER_H
#define PERFSPY_NAMER_H

#include "common/util.h"
#include "symbols.h"

struct namer;

#define NAMER_MISS (-1)

int namer_new(struct namer **out);
/* After both sides are done; the strings the records pointed to are the
 * namer's symbolizer's, freed with it, not here. */
void namer_free(struct namer *n);

/* ---- the namer's side */

/* @sample (the sample's number in the pass, from 1) first needed @b
 * ((file offset << 1) | is_return) in the DSO at @dso (a path that lives
 * as long as the namer's symbolizer), named @fr[0..@nr). 0 or -ENOMEM. */
int namer_put(struct namer *n, u64 sample, const char *dso, u64 b,
	      const struct sym_frame *fr, u32 nr);
/* Every record of samples up to @sample is in the log. */
void namer_through(struct namer *n, u64 sample);
/* Records added so far (the namer's own count). */
u64 namer_count(const struct namer *n);
/* The namer adds nothing more (its pass ended, or failed). */
void namer_finish(struct namer *n);
/* The namer's last word: it will not touch its symbolizer @sym again
 * (its thread is leaving). The reader may name with it from then on. */
void namer_leave(struct namer *n, struct sym_ctx *sym);
/* While set, the namer waits for the reader (it is too far ahead): a
 * reader that would wait for it names the address itself instead. */
void namer_pausing(struct namer *n, bool on);

/* ---- the reader's side */

/* The names of @b in @dso for @sample: their number (>= 0) with @fr
 * filled, or NAMER_MISS. Waits while the namer has not finished that
 * sample. Records of earlier samples are passed over and freed. */
int namer_take(struct namer *n, u64 sample, const char *dso, u64 b,
	       struct sym_frame *fr);

/* The namer's symbolizer once it left (namer_leave), else NULL: a reader
 * that names an address itself uses it, with the DSOs the namer opened,
 * rather than open them a second time in its own. */
struct sym_ctx *namer_left(const struct namer *n);

struct namer_stats {
	u64 taken;  /* namer_take() answered from the log */
	u64 missed; /* NAMER_MISS */
	u64 waits;  /* times the reader waited for the namer */
	u64 put;    /* records the namer added */
};
/* Once both sides are done. */
void namer_stats(const struct namer *n, struct namer_stats *out);

#endif
