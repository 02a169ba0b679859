// SPDX-License-Identifier: GPL-2.0
/*
 * Off-CPU stretches for --idle (issue 10): see offcpu.h and docs/top.md §3.
 */
#include "offcpu.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void offcpu_free(struct offcpu *o)
{
	size_t i;

	if (!o)
		return;
	for (i = 0; i < o->nr; i++)
		free(o->thr[i].ids);
	free(o->thr);
	idmap_free(&o->by_tid);
	memset(o, 0, sizeof(*o));
}

struct offcpu_thread *offcpu_thread(struct offcpu *o, u32 tid)
{
	u64 *slot = idmap_put(&o->by_tid, tid);

	if (!slot)
		return NULL;
	if (*slot)
		return &o->thr[*slot - 1];
	if (ensure_mem((void **)&o->thr, &o->cap, sizeof(*o->thr), o->nr + 1))
		return NULL;
	memset(&o->thr[o->nr], 0, sizeof(o->thr[o->nr]));
	o->thr[o->nr].tid = tid;
	*slot = ++o->nr;
	return &o->thr[o->nr - 1];
}

u64 offcpu_ms(struct offcpu_thread *t, u64 ns)
{
	u64 all = t->carry_ns + ns;

	t->carry_ns = all % 1000000;
	return all / 1000000;
}

int offcpu_out(struct offcpu *o, struct offcpu_thread *t, u64 time, const u32 *ids, u32 nr)
{
	size_t cap = t->cap;

	if (ensure_mem((void **)&t->ids, &cap, sizeof(*t->ids), nr ? nr : 1))
		return -ENOMEM;
	t->cap = (u32)cap;
	memcpy(t->ids, ids, nr * sizeof(*ids));
	t->nr = nr;
	t->t_out = time;
	t->open = true;
	o->nr_open++;
	return 0;
}

int offcpu_in(struct offcpu *o, struct offcpu_thread *t, u64 time, u64 *ms)
{
	if (!t->open)
		return 0;
	t->open = false;
	o->nr_closed++;
	*ms = offcpu_ms(t, time > t->t_out ? time - t->t_out : 0);
	return 1;
}
