// SPDX-License-Identifier: GPL-2.0
/*
 * perfspy_folder__add_folder(): one folder's stacks added to another,
 * optionally under a root frame (`perfspy combine --label-root`). Frame
 * ids are per folder, so each source frame is interned into the
 * destination once (an idmap from source id to destination id).
 */
#include "writers.h"
#include "common/hash.h"

#include <errno.h>
#include <stdlib.h>

PERFSPY_API int perfspy_folder__add_folder(struct perfspy_folder *dst,
					   const struct perfspy_folder *src,
					   const char *root)
{
	struct idmap map = { 0 };
	size_t i, nr, cap = 0;
	u32 *ids = NULL, root_id = FOLD_NO_ID, off = 0;
	struct fold_ids buf = { 0 };
	int err = 0;

	if (!dst || !src || dst == src)
		return -EINVAL;
	if (root) {
		root_id = fold_intern_str(dst, root);
		if (root_id == FOLD_NO_ID)
			return -ENOMEM;
		off = 1;
	}
	nr = perfspy_folder__nr_stacks(src);
	for (i = 0; !err && i < nr; i++) {
		const u32 *sids;
		u32 n, j;
		u64 count;

		if (fold_stack(src, i, &buf, &sids, &n, &count) ||
		    ensure_mem((void **)&ids, &cap, sizeof(*ids), (size_t)n + 1)) {
			err = -ENOMEM;
			break;
		}
		ids[0] = root_id;
		for (j = 0; j < n; j++) {
			u64 *v = idmap_get(&map, sids[j]);

			if (!v) {
				u32 d = fold_intern(dst, fold_name(src, sids[j]),
						    fold_name_len(src, sids[j]));

				v = d == FOLD_NO_ID ? NULL : idmap_put(&map, sids[j]);
				if (!v) {
					err = -ENOMEM;
					break;
				}
				*v = d;
			}
			ids[off + j] = (u32)*v;
		}
		/* fold_stack's pointer is into src or buf, not dst:
		 * adding is safe. */
		if (!err)
			err = fold_add_ids(dst, ids, n + off, count);
	}
	idmap_free(&map);
	free(ids);
	fold_ids_free(&buf);
	return err;
}
