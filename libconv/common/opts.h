/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Sized options structs (docs/conventions.md §4): the caller's struct starts with
 * its size; a field is read only if the caller's struct reaches it, and
 * bytes past what this library knows must be zero (so a caller built
 * against a newer header cannot ask for something silently ignored;
 * libbpf's libbpf_validate_opts follows the same rule).
 */
#ifndef PERFSPY_OPTS_H
#define PERFSPY_OPTS_H

#include <stdbool.h>
#include <stddef.h>

#define offsetofend(TYPE, FIELD) \
	(offsetof(TYPE, FIELD) + sizeof(((TYPE *)0)->FIELD))

static inline bool opts_tail_zero(const void *opts, size_t known, size_t sz)
{
	const unsigned char *p = opts;
	size_t i;

	for (i = known; i < sz; i++)
		if (p[i])
			return false;
	return true;
}

#define OPTS_VALID(opts, type)                                               \
	(!(opts) ||                                                          \
	 ((opts)->sz >= sizeof(size_t) &&                                    \
	  opts_tail_zero((opts), offsetofend(struct type, type##__last_field), \
			 (opts)->sz)))

#define OPTS_HAS(opts, field)                                                \
	((opts) && (opts)->sz >= offsetofend(__typeof__(*(opts)), field))

#define OPTS_GET(opts, field, fallback)                                      \
	(OPTS_HAS(opts, field) ? (opts)->field : (fallback))

#endif
