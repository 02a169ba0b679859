/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The serializers perfspy_folder__write() dispatches to (write.c). Each
 * reads the folder through fold.h's accessors and writes through
 * common/write.h's buffered sink; none of them modifies the folder.
 */
#ifndef PERFSPY_WRITERS_H
#define PERFSPY_WRITERS_H

#include <stdio.h>

#include "common/fold.h"
#include "common/frame.h"
#include "common/hash.h"
#include "common/write.h"

/* Frame groups (write_group.c, docs/output.md §7.1): folder frame ids ->
 * group ids, whose text is the frame's or, for a native frame grouped by
 * function, `func (file)`. */
struct fgroups {
	const struct perfspy_folder *f;
	bool lineno;	     /* every frame its own group */
	u32 *gid;	     /* folder frame id -> group id, FOLD_NO_ID: not yet */
	size_t nr_ids;
	struct strset names; /* group id -> text */
	u8 *grouped;	     /* group id -> 1 if it stands for frames with lines */
	size_t cap_grouped;
};

int fgroups_init(struct fgroups *g, const struct perfspy_folder *f, bool lineno);
void fgroups_free(struct fgroups *g);
/* The group of folder frame @id. 0 or -ENOMEM. */
int fgroups_of(struct fgroups *g, u32 id, u32 *out);
static inline const char *fgroups_name(const struct fgroups *g, u32 gid)
{
	return strset_str(&g->names, gid);
}
static inline u32 fgroups_len(const struct fgroups *g, u32 gid)
{
	return strset_len(&g->names, gid);
}

int write_raw(const struct perfspy_folder *f, FILE *out);
int write_svg(const struct perfspy_folder *f, FILE *out,
	      const struct perfspy_write_opts *opts);
int write_speedscope(const struct perfspy_folder *f, FILE *out,
		     const struct perfspy_write_opts *opts);
int write_pprof(const struct perfspy_folder *f, FILE *out,
		const struct perfspy_write_opts *opts);

#endif
