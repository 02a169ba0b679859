/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the flame graph, speedscope and report writers share: a buffered
 * output sink with XML and JSON escaping, and a u32 -> u64 map. Frame
 * text is read with the frame grammar (frame.h).
 * Nothing here prints on its own or keeps global state.
 */
#ifndef PERFSPY_WRITE_H
#define PERFSPY_WRITE_H

#include <stdio.h>

#include "perfspy.h"
#include "util.h"

/*
 * Buffered writing to a FILE the caller owns: errors stick in ->err
 * (-EIO) and every later call is a no-op, so writers check once at the
 * end. Formatting whole documents through one stdio call per token was
 * the cost centre of the raw writer (see fold.c), hence the buffer. Past
 * 4 MB the buffers are written by a thread, joined by wout_finish()
 * (write_common.c); nothing else may write to the FILE meanwhile.
 */
struct wout_pipe;

struct wout {
	FILE *out;
	char *buf;
	size_t len, cap;
	int err;
	/* Past the first full buffer, full buffers go to a writing thread
	 * (write_common.c); NULL until then, or without a thread. */
	struct wout_pipe *pipe;
	bool no_pipe; /* a thread could not be had: write here */
	unsigned flushes; /* full buffers written here, before the thread */
};

int wout_init(struct wout *w, FILE *out);     /* 0 or -ENOMEM */
int wout_finish(struct wout *w);	      /* flush, free; 0 or -EIO */
void wout_put(struct wout *w, const char *s, size_t n);
void wout_str(struct wout *w, const char *s);
void wout_fmt(struct wout *w, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void wout_u64(struct wout *w, u64 v);

/* Where @n bytes can be written at the end of the buffer with no flush,
 * or NULL (no room left, or an error): then wout_put() and the rest.
 * wout_wrote() says how many were. For writers that format many small
 * pieces (a speedscope sample is a list of numbers). */
static inline char *wout_room(struct wout *w, size_t n)
{
	return !w->err && w->cap - w->len >= n ? w->buf + w->len : NULL;
}

static inline void wout_wrote(struct wout *w, size_t n)
{
	w->len += n;
}

/* @v in decimal at @p (at most 20 bytes); returns the end. */
static inline char *fmt_u64(char *p, u64 v)
{
	char t[20];
	size_t i = sizeof(t);

	do {
		t[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	memcpy(p, t + i, sizeof(t) - i);
	return p + (sizeof(t) - i);
}
/* @v / @div as a decimal with @digits (1..6) fraction digits, rounded
 * half up, in integer arithmetic so the bytes never depend on the libc's
 * float formatting. @div must be > 0. */
void wout_fixed(struct wout *w, u64 v, u64 div, unsigned digits);

/*
 * Escaped text. XML: & < > " ' as entities, characters XML 1.0 forbids
 * (controls other than tab, U+FFFE/U+FFFF) and malformed UTF-8 as U+FFFD.
 * JSON: the inside of a string literal (no quotes): " \ and controls
 * escaped, malformed UTF-8 as \ufffd (RFC 8259 §7 wants valid Unicode).
 */
void wout_xml(struct wout *w, const char *s, size_t n);
void wout_json(struct wout *w, const char *s, size_t n);

/* Length of the valid UTF-8 sequence at @s (1..4), 0 if malformed. */
size_t utf8_len(const unsigned char *s, size_t n);

/* Bytes taken by the first @chars characters of @s (a malformed byte
 * counts as one character). */
size_t utf8_prefix(const char *s, size_t n, size_t chars);

#endif
