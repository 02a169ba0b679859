// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: the frame grammar (libconv/common/frame.c) on any
 * bytes, as a folder may hold any bytes a symbol table or a capture
 * gave it. Besides reads out of bounds (the sanitizers' part), it checks
 * what every reader relies on: the parts lie inside the text, in order,
 * a file part is the inside of the text's last parentheses, roots keep
 * their whole text as name, and frame_kind_of() agrees with
 * frame_parse(). A broken invariant aborts.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void in_text(const char *s, size_t n, const char *p, size_t len)
{
	if (len && (!p || p < s || p + len > s + n))
		abort();
}

static void check(const char *s, size_t n, const struct frame_parts *p)
{
	in_text(s, n, p->func, p->func_len);
	if (p->func != s || p->func_len > n)
		abort();
	if (p->file) {
		in_text(s, n, p->file, p->file_len);
		/* `func (file[:line])`: the file starts after "func (". */
		if (p->file != s + p->func_len + 2 || s[n - 1] != ')')
			abort();
	} else if (p->has_line || p->line) {
		abort();
	}
	if (frame_is_root(p->kind) && (p->func_len != n || p->file))
		abort();
	if (p->kind == FRAME_THREAD) {
		in_text(s, n, p->tid, p->tid_len);
		if (!p->tid_len)
			abort();
		if (p->thread_name)
			in_text(s, n, p->thread_name, p->thread_name_len);
	} else if (p->tid || p->thread_name) {
		abort();
	}
	if (frame_kind_of(s, n) != p->kind)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const globs[] = { "*", NULL };
	const char *s = (const char *)data;
	struct frame_parts p, q;
	char *copy = malloc(size ? size : 1);

	if (!copy)
		return 0;
	/* An exact copy: a read past the text is past the allocation. */
	memcpy(copy, s, size);
	frame_parse(copy, size, &p);
	check(copy, size, &p);
	/* A glob may make a file Python, nothing else. */
	frame_parse_globs(copy, size, globs, &q);
	if (q.func_len != p.func_len || q.file != p.file || q.line != p.line ||
	    (q.kind != p.kind && !(q.kind == FRAME_PYTHON && p.kind == FRAME_NATIVE && p.file)))
		abort();
	free(copy);
	return 0;
}
