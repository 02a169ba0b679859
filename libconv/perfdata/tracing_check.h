/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Private to tracing.c and tracing_check.c; never installed. Our own
 * reading of tracefs format texts (tracing_check.c): the `name:` and `ID:`
 * lines, and the check and rebuild that decide what libtraceevent is
 * given (see tracing.h for why).
 */
#ifndef PERFSPY_TRACING_CHECK_H
#define PERFSPY_TRACING_CHECK_H

#include "tracing.h"

/* What our own scan of a format text found. */
struct tr_scan {
	const char *name;   /* the `name:` value, not terminated */
	size_t name_len;
	u64 id;
	const char *fields; /* first line after `format:`, or NULL */
};

/*
 * Scan the first lines of the format text @t (@len bytes) for its name, ID
 * and the start of its field list. True when both a name and an id were
 * found.
 */
bool tr_scan_format(const char *t, size_t len, struct tr_scan *sc);

/* Whether [s, end), up to a "print fmt:" line, holds only field lines
 * (tr_field_line_ok()) and blank lines; *@stop gets where it stopped. */
bool tr_fields_ok(const char *s, const char *end, const char **stop);

/*
 * The text libtraceevent gets for the scanned format @sc whose text ends
 * at @end: a malloc'd string in *@out (length *@out_len) for the caller to
 * free, or NULL when the format does not pass our checks. Returns 0 or
 * -ENOMEM.
 */
int tr_tep_text(const struct tr_scan *sc, const char *end, char **out,
		size_t *out_len);

#endif
