/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The records a reader hands out (offset and a hash of the bytes), to
 * check that two ways of reading one file (the warming thread, the data
 * read in ahead: test_warm, test_copyin) hand out the same ones; and the
 * resident pages of a range, to check what a reader keeps mapped.
 */
#ifndef PERFSPY_TEST_SEEN_H
#define PERFSPY_TEST_SEEN_H

#include <stddef.h>
#include <stdint.h>

#include "perfdata/reader.h"

struct seen {
	uint64_t *off, *sum;
	size_t nr, cap;
};

/* @rec's offset and a hash of its bytes, appended to @s (aborts
 * without memory: a test). */
void seen_add(struct seen *s, const struct rd_rec *rec);
void seen_free(struct seen *s);

/* Resident pages of the whole pages of [@p, @p + @n)
 * (/proc/self/pagemap @pm, bit 63: present), or -1 if unreadable. */
long pages_resident(int pm, const void *p, size_t n);

#endif
