/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Folding: interned frame strings and stack -> weight aggregation,
 * written out sorted bytewise so the same input always gives the same
 * bytes (docs/conventions.md §1; py-spy writes in hash order, which we do not copy).
 *
 * Frames are interned once and referred to by u32 ids; a stack is an id
 * array kept in pool blocks that never move, 16 bits an id where its ids
 * fit (fold.c, docs/design.md §6.30). Memory is bounded
 * by unique frames and unique stacks, not by the number of samples.
 */
#ifndef PERFSPY_FOLD_H
#define PERFSPY_FOLD_H

#include "perfspy.h"
#include "util.h"

#define FOLD_NO_ID UINT32_MAX

/* Intern @len bytes of frame text (';' becomes ':', newlines become
 * spaces). Returns the id, or FOLD_NO_ID on ENOMEM. */
u32 fold_intern(struct perfspy_folder *f, const char *s, size_t len);

static inline u32 fold_intern_str(struct perfspy_folder *f, const char *s)
{
	return fold_intern(f, s, strlen(s));
}

/* Add @weight to the stack @ids[0..nr) (root first). 0 or -ENOMEM. */
int fold_add_ids(struct perfspy_folder *f, const u32 *ids, u32 nr, u64 weight);

/* The same, giving the stack's index for fold_add_to(). */
int fold_add_ids_idx(struct perfspy_folder *f, const u32 *ids, u32 nr,
		     u64 weight, u32 *idx);

/* Add @weight to the stack at @idx (from fold_add_ids_idx). */
void fold_add_to(struct perfspy_folder *f, u32 idx, u64 weight);

/* The text of an interned frame, and its length. */
const char *fold_name(const struct perfspy_folder *f, u32 id);
u32 fold_name_len(const struct perfspy_folder *f, u32 id);

/* Number of interned frames: ids are 0 .. fold_nr_names() - 1. */
size_t fold_nr_names(const struct perfspy_folder *f);

/* A caller's room for one stack's ids (fold_stack()); zeroed to start,
 * fold_ids_free() at the end. */
struct fold_ids {
	u32 *v;
	size_t cap;
};

/* Stacks by index (0 .. perfspy_folder__nr_stacks() - 1), in insertion
 * order: frame ids root first, and the weight. The folder keeps most
 * stacks in 16-bit ids (fold.c), written out into @buf: *@ids stays
 * valid until @buf's next use or the next add, so a caller that holds
 * two stacks at once passes two. 0 or -ENOMEM. */
int fold_stack(const struct perfspy_folder *f, size_t idx, struct fold_ids *buf,
	       const u32 **ids, u32 *nr, u64 *count);
void fold_ids_free(struct fold_ids *buf);

/* Stack @idx's ids where the folder keeps them, not copied: u16s, or
 * u32s when ->wide (fold.c). For a reader that walks every stack once
 * (the raw writer): valid until the next add. */
struct fold_raw {
	const void *ids;
	u64 count;
	u32 nr;
	bool wide;
};
void fold_stack_raw(const struct perfspy_folder *f, size_t idx, struct fold_raw *out);

static inline u32 fold_raw_id(const struct fold_raw *s, u32 i)
{
	return s->wide ? ((const u32 *)s->ids)[i] : ((const u16 *)s->ids)[i];
}

/* The weight of stack @idx alone. */
u64 fold_stack_count(const struct perfspy_folder *f, size_t idx);

/* A hint for a writer that walks the stacks in fold_sorted() order, a
 * random order in memory: the entry of stack @idx into the cache, and
 * with @ids its first frame ids (the entry should be there by then).
 * Prefetches only: nothing changes. */
void fold_prefetch(const struct perfspy_folder *f, size_t idx, bool ids);

/* Stack indices in the writer's order (bytewise by rendered line), in a
 * new array the caller frees. 0 or -ENOMEM. */
int fold_sorted(const struct perfspy_folder *f, u32 **out);

/* Sort the stacks on a thread of their own as they are added, a batch
 * at a time, for fold_sorted() to merge (fold.c, docs/design.md §6.23);
 * with one CPU, nothing. 0 or -ENOMEM. */
int fold_sort_ahead(struct perfspy_folder *f);
/* For tests: the runs sorted ahead that fold_sorted() took as they were,
 * and those it sorted again (a count read, or the thread failed). */
void fold_sort_ahead_stats(const struct perfspy_folder *f, size_t *taken, size_t *again);

/* Move every stack of @src into @dst, leaving @src without stacks (its
 * frame names stay); *@map (caller frees) gets each @src frame id's id
 * in @dst. 0 or -ENOMEM (then @src may have lost stacks already moved). */
int fold_merge(struct perfspy_folder *dst, struct perfspy_folder *src, u32 **map);

/*
 * The timeline: (time, tid, stack index) of every sample, in the order
 * they were added, kept only when perfspy_folder__keep_timeline() asked
 * for it (16 bytes a sample), for the speedscope writer's time order
 * (docs/output.md §8). Stacks added without a time (other inputs) are
 * not on it; a sample without a time (@has_time false) drops the whole
 * timeline. 0 or -ENOMEM.
 */
struct fold_tl {
	u64 time;  /* perf's sample time, nanoseconds */
	u32 tid;
	u32 stack; /* index for fold_stack() */
};

bool fold_timeline_on(const struct perfspy_folder *f);
int fold_timeline_add(struct perfspy_folder *f, u64 time, bool has_time,
		      u32 tid, u32 idx);
/* The entries (NULL, *@nr 0 when there is no usable timeline). */
const struct fold_tl *fold_timeline(const struct perfspy_folder *f, size_t *nr);

#endif
