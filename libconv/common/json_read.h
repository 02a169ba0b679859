/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A small pull parser for JSON (RFC 8259) over an untrusted buffer in
 * memory, for reading speedscope profiles (docs/pyspy-formats.md
 * §2.1). The caller walks the document: it opens an object or array,
 * asks for the next key or element, reads scalars, and skips what it
 * does not need.
 *
 * Invariants: no read past the buffer (the buffer need not be
 * NUL-terminated); no recursion (jr_skip() keeps its own stack of at most
 * JR_MAX_DEPTH open containers and fails beyond it); the first error
 * sticks in ->err and makes every later call fail, so a walker can check
 * once. Decoded strings live in one scratch buffer that the next string
 * overwrites.
 */
#ifndef PERFSPY_JSON_READ_H
#define PERFSPY_JSON_READ_H

#include <stdbool.h>
#include <stddef.h>

#define JR_MAX_DEPTH 256

struct jr {
	const char *p, *end, *start;
	int err;    /* 0, or the first error (negative) */
	char *sbuf; /* decoded string scratch, NUL-terminated */
	size_t scap;
};

/* Parse @len bytes at @buf; jr_free() releases the scratch buffer. */
void jr_init(struct jr *j, const char *buf, size_t len);
void jr_free(struct jr *j);

/* Byte offset of the parser (for messages). */
static inline size_t jr_offset(const struct jr *j)
{
	return (size_t)(j->p - j->start);
}

/* The next significant byte without consuming it, or -1 at the end (or
 * after an error). */
int jr_peek(struct jr *j);

/* Consume an opening brace or bracket. False (and ->err set) if the
 * next value is not one. */
bool jr_obj_begin(struct jr *j);
bool jr_arr_begin(struct jr *j);

/*
 * Next member of the object opened last: returns 1 with the decoded key
 * in *@key and *@len (valid until the next string is read) and the ':'
 * consumed, 0 when the closing '}' was consumed, or a negative error.
 * *@first is the caller's per-object state: true before the first call.
 */
int jr_obj_next(struct jr *j, bool *first, const char **key, size_t *len);

/* Next element of the array opened last: 1 (an element follows), 0 (']'
 * consumed) or a negative error. *@first as for jr_obj_next(). */
int jr_arr_next(struct jr *j, bool *first);

/* Read a string value (decoded: escapes resolved, \u to UTF-8). 0 or a
 * negative error; the text lives until the next string is read. */
int jr_string(struct jr *j, const char **s, size_t *len);

/* Read a number value. 0 or a negative error. */
int jr_number(struct jr *j, double *v);

/* Read `null` if it is next: true when consumed. */
bool jr_null(struct jr *j);

/* Skip one value of any type, checking its syntax. 0 or a negative
 * error (-PERFSPY_E_CAPTURE also when nesting exceeds JR_MAX_DEPTH). */
int jr_skip(struct jr *j);

/* Is @key (@len bytes, from jr_obj_next) equal to the C string @lit? */
static inline bool jr_key_is(const char *key, size_t len, const char *lit)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (!lit[i] || lit[i] != key[i])
			return false;
	return !lit[len];
}

#endif
