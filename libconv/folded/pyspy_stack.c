// SPDX-License-Identifier: GPL-2.0
/*
 * Building py-spy stacks into the folder, for both capture readers (raw
 * in pyspy.c, speedscope in pyspy_speedscope.c): frames are interned and
 * pushed one by one, their kinds cached per folder id, and a finished
 * stack is added with its weight and counted in the reader's statistics.
 * Old-style thread roots are rewritten here, so that a capture of any
 * py-spy version names its threads `thread (TID)` (docs/pyspy-formats.md §1.5).
 */
#include <errno.h>
#include <stdlib.h>

#include "common/fold.h"
#include "common/frame.h"
#include "pyspy.h"

/* The canonical `thread (ID)` text of an old-style thread root (`thread
 * 1234`, `thread 0x7F.. ()`, §1.5) into *@out (malloc'ed), or NULL when
 * @s is not one. */
static int canonical_thread(const char *s, size_t n, char **out, size_t *olen)
{
	struct frame_parts fr;
	char *buf;

	*out = NULL;
	/* Every frame of every line passes here: the prefix test first. */
	if (n < 8 || memcmp(s, "thread ", 7) || s[7] == '(')
		return 0;
	frame_parse(s, n, &fr);
	if (fr.kind != FRAME_THREAD)
		return 0;
	buf = malloc(frame_thread_text_len(&fr));
	if (!buf)
		return -ENOMEM;
	frame_thread_text(&fr, buf);
	*out = buf;
	*olen = frame_thread_text_len(&fr);
	return 0;
}

/* Frame kinds are cached per folder id (zeroed on growth, since the
 * folder may hold frames of an earlier read). */
static int kind_of(struct pys_reader *r, u32 id)
{
	struct frame_parts fr;

	if (id >= r->nr_kinds) {
		if (ensure_mem((void **)&r->kinds, &r->cap_kinds, 1, (size_t)id + 1))
			return -ENOMEM;
		memset(r->kinds + r->nr_kinds, 0, (size_t)id + 1 - r->nr_kinds);
		r->nr_kinds = (size_t)id + 1;
	}
	if (!r->kinds[id]) {
		frame_parse(fold_name(r->f, id), fold_name_len(r->f, id), &fr);
		r->kinds[id] = (u8)(pys_kind_of(&fr) + 1);
	}
	return r->kinds[id] - 1;
}

int pys_push_id(struct pys_reader *r, u32 id)
{
	if (kind_of(r, id) < 0 ||
	    ensure_mem((void **)&r->ids, &r->cap_ids, sizeof(*r->ids), r->nr_ids + 1))
		return -ENOMEM;
	r->ids[r->nr_ids++] = id;
	return 0;
}

int pys_kind(const struct pys_reader *r, u32 id)
{
	return id < r->nr_kinds && r->kinds[id] ? r->kinds[id] - 1 : FRAME_NATIVE;
}

int pys_push(struct pys_reader *r, const char *s, size_t n)
{
	char *canon;
	size_t cn;
	u32 id;

	if (canonical_thread(s, n, &canon, &cn))
		return -ENOMEM;
	id = canon ? fold_intern(r->f, canon, cn) : fold_intern(r->f, s, n);
	free(canon);
	return id == FOLD_NO_ID ? -ENOMEM : pys_push_id(r, id);
}

int pys_commit(struct pys_reader *r, u64 weight)
{
	bool py = false, native = false, thread = false;
	static const u32 none;
	size_t i;
	int err;

	if (r->nr_ids > UINT32_MAX) {
		r->nr_ids = 0;
		r->st.bad++;
		return 0;
	}
	r->st.stacks++;
	if (weight) {
		/* An empty stack may have no array yet; fold wants a pointer. */
		err = fold_add_ids(r->f, r->ids ? r->ids : &none, (u32)r->nr_ids, weight);
		if (err)
			return err;
		for (i = 0; i < r->nr_ids; i++) {
			int k = pys_kind(r, r->ids[i]);

			/* A thread root: after any process frames (§1.6). */
			thread |= k == FRAME_THREAD && !py && !native;
			py |= k == FRAME_PYTHON;
			native |= py && k == FRAME_NATIVE;
		}
		r->st.samples += weight;
		if (thread)
			r->st.thread_samples += weight;
		if (native)
			r->st.native_samples += weight;
	}
	r->nr_ids = 0;
	return 0;
}
