// SPDX-License-Identifier: GPL-2.0
/*
 * C++ names for the symbolizer: Itanium C++ ABI names (`_Z...`) demangled
 * by libstdc++'s __cxa_demangle, then reduced to py-spy's native style
 * (`ns::Class::method`, template arguments kept, no parameters, no return
 * type, no cv/ref qualifiers, no ` [clone .xxx]` suffix).
 *
 * Invariants:
 * - Each mangled name is demangled once per ctx: results are interned in
 *   ctx->demangled (mangled -> shown) and live in the ctx arena until
 *   sym_ctx_free(). A name that does not demangle is shown as it is.
 * - Signature stripping works on the demangled text with a bracket scan
 *   bounded by a fixed-size stack; a name it cannot parse is left whole.
 * - No output; the only error is -ENOMEM.
 */
#include "symbols_int.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>

/*
 * The C entry point of abi::__cxa_demangle (Itanium C++ ABI §3.4,
 * "Demangler API"), provided by libstdc++. Returns a malloc'd string;
 * *status -1 means out of memory.
 *
 * libstdc++ is opened on the first C++ name, not linked: mapping and
 * relocating it cost every process 1.7 ms at start on this project's
 * machines (of a 5.3 ms start), and most conversions of C programs, and
 * every command that does not symbolize, never demangle a name
 * (docs/design.md §6.29). The soname is the one the C++ ABI has kept
 * since GCC 3.4, and manylinux lets a wheel rely on it (PEP 600). Where
 * it cannot be opened, names stay mangled, as for a name that does not
 * demangle.
 */
typedef char *(*cxa_demangle_fn)(const char *mangled, char *buf, size_t *len,
				 int *status);

static cxa_demangle_fn cxa_demangle;
static pthread_once_t cxa_once = PTHREAD_ONCE_INIT;

static void cxa_open(void)
{
	void *h = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);

	/* Kept open for the process's life: the pointer is shared by
	 * every ctx and thread. */
	if (h)
		*(void **)&cxa_demangle = dlsym(h, "__cxa_demangle");
}

static bool ident_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_';
}

/* The symbolic part after `operator` (longest match first), so that
 * `operator()`, `operator<` and `operator->` are not read as brackets. */
static size_t op_sym_len(const char *s, size_t len)
{
	static const char *const ops[] = {
		"<<=", ">>=", "<=>", "->*", "()", "[]", "<<", ">>", "<=",
		">=", "->", "==", "!=", "&&", "||", "++", "--", "+=", "-=",
		"*=", "/=", "%=", "&=", "|=", "^=", "\"\"", "<", ">", "+",
		"-", "*", "/", "%", "&", "|", "^", "!", "~", "=", ",",
	};
	size_t i, l;

	for (i = 0; i < ARRAY_SIZE(ops); i++) {
		l = strlen(ops[i]);
		if (l <= len && !memcmp(s, ops[i], l))
			return l;
	}
	return 0;
}

static bool is_op_kw(const char *s, size_t i, size_t len)
{
	return len - i >= 8 && !memcmp(s + i, "operator", 8) &&
	       (i == 0 || !ident_char(s[i - 1])) &&
	       (i + 8 == len || !ident_char(s[i + 8]));
}

/* What a scan of a demangled name found at bracket depth 0. */
struct dscan {
	long open, close;	    /* last (...) group */
	long prev_open, prev_close; /* the group before it */
	long op;		    /* last `operator` keyword */
	long space;		    /* last space */
	long space_before_op;	    /* last space before `op` */
	bool ok;		    /* brackets balanced */
};

/*
 * Walk @s tracking (), [], {} and template <> nesting. Inside parentheses
 * '<' and '>' are plain characters: libiberty's printer parenthesizes
 * template-argument expressions that contain '>' (cp-demangle.c), and
 * parameter lists never hold unbalanced angle brackets.
 */
static void dscan(const char *s, size_t len, struct dscan *r)
{
	char st[512];
	size_t d = 0, i;
	long cur_open = -1;

	*r = (struct dscan){ -1, -1, -1, -1, -1, -1, -1, true };
	for (i = 0; i < len; i++) {
		char c = s[i];
		bool in_paren = d && st[d - 1] == '(';

		if (is_op_kw(s, i, len)) {
			if (!d) {
				r->op = (long)i;
				r->space_before_op = r->space;
			}
			i += 8;
			i += op_sym_len(s + i, len - i);
			i--;
			continue;
		}
		if (c == '(' || c == '[' || c == '{' || (c == '<' && !in_paren)) {
			if (d == sizeof(st))
				goto bad;
			if (c == '(' && !d)
				cur_open = (long)i;
			st[d++] = c;
		} else if (c == ')' || c == ']' || c == '}' ||
			   (c == '>' && !in_paren)) {
			char want = c == ')' ? '(' : c == ']' ? '[' :
				    c == '}' ? '{' : '<';

			if (!d || st[d - 1] != want)
				goto bad;
			d--;
			if (c == ')' && !d) {
				r->prev_open = r->open;
				r->prev_close = r->close;
				r->open = cur_open;
				r->close = (long)i;
			}
		} else if (c == ' ' && !d) {
			r->space = (long)i;
		}
	}
	if (!d)
		return;
bad:
	r->ok = false;
}

/* Drop trailing cv/ref qualifiers of a member function (`() const &`). */
static size_t trim_quals(const char *s, size_t len)
{
	static const char *const q[] = { " const", " volatile", " &&", " &",
					 " restrict", " transaction_safe" };
	size_t t = len, i, l;
	bool again = true;

	while (again) {
		again = false;
		for (i = 0; i < ARRAY_SIZE(q); i++) {
			l = strlen(q[i]);
			if (t >= l && !memcmp(s + t - l, q[i], l)) {
				t -= l;
				again = true;
				break;
			}
		}
	}
	return t && s[t - 1] == ')' ? t : len;
}

/*
 * Reduce a demangled signature to py-spy's `no_params().no_return_type()`
 * form (docs/pyspy-formats.md §1.8 item 5): drop ` [clone .xxx]` suffixes, the
 * cv/ref qualifiers and the top-level parameter list, and the return type
 * that Itanium mangling encodes for template functions only. A function
 * returning a function pointer, `R (*name(P))(Q)`, keeps the inner name.
 * Names that do not parse are left whole. The result is s[*start..+*len).
 */
static void strip_sig(const char *s, size_t len, size_t *start, size_t *out,
		      int depth)
{
	const char *cl = strstr(s, " [clone ");
	struct dscan sc;
	size_t name_len;
	long split;

	*start = 0;
	if (cl && (size_t)(cl - s) < len)
		len = (size_t)(cl - s);
	*out = len;
	len = trim_quals(s, len);
	dscan(s, len, &sc);
	if (!sc.ok || sc.open < 0 || sc.close != (long)len - 1)
		return; /* not a function: `vtable for X`, variables */
	if (sc.prev_close >= 0 && sc.prev_close + 1 == sc.open && !depth) {
		const char *in = s + sc.prev_open + 1;

		strip_sig(in, (size_t)(sc.prev_close - sc.prev_open - 1), start,
			  out, depth + 1);
		*start += (size_t)(sc.prev_open + 1);
		while (*out && strchr("*& ", s[*start])) {
			(*start)++;
			(*out)--;
		}
		return;
	}
	name_len = (size_t)sc.open;
	*out = name_len;
	if (!name_len || s[name_len - 1] != '>')
		return;
	dscan(s, name_len, &sc);
	split = sc.op >= 0 ? sc.space_before_op : sc.space;
	if (sc.ok && split >= 0) {
		*start = (size_t)split + 1;
		*out = name_len - *start;
	}
}

/*
 * Demangle @name into *@out (ctx-owned, or @name itself when it is not a
 * `_Z` name). @stable: @name outlives the ctx (ELF/DWARF string), so it
 * can serve as the cache key without a copy.
 */
struct dm_ent {
	u64 hash;
	const char *key; /* the mangled name (stable or arena copy) */
	const char *val;
};

static bool dm_eq(const void *ent, const void *key)
{
	return !strcmp(((const struct dm_ent *)ent)->key, key);
}

int sym_demangle_name(struct sym_ctx *ctx, const char *name, bool stable,
		      const char **out)
{
	const char *key = name, *val;
	struct dm_ent *e;
	size_t start, len;
	char *full;
	int status = 0;
	u64 h;

	*out = name;
	if (name[0] != '_' || name[1] != 'Z')
		return 0;
	if (!ctx->demangled.esz)
		htab_init(&ctx->demangled, sizeof(struct dm_ent), 64);
	h = hash_bytes(name, strlen(name), 0);
	e = htab_find(&ctx->demangled, h, dm_eq, name);
	if (e) {
		*out = e->val;
		return 0;
	}
	pthread_once(&cxa_once, cxa_open);
	full = cxa_demangle ? cxa_demangle(name, NULL, NULL, &status) : NULL;
	if (!full && cxa_demangle && status == -1)
		return -ENOMEM;
	if (!stable && !(key = arena_strdup(&ctx->arena, name))) {
		free(full);
		return -ENOMEM;
	}
	val = key; /* not demangleable: kept as is */
	if (full) {
		strip_sig(full, strlen(full), &start, &len, 0);
		val = arena_strndup(&ctx->arena, full + start, len);
		free(full);
		if (!val)
			return -ENOMEM;
	}
	/* Not found above: the probe ends on a free entry. */
	if (htab_reserve(&ctx->demangled))
		return -ENOMEM;
	e = htab_probe(&ctx->demangled, h, dm_eq, name);
	e->key = key;
	e->val = val;
	htab_claim(&ctx->demangled, e, h);
	*out = val;
	return 0;
}

const char *sym_demangle(struct sym_ctx *ctx, const char *name)
{
	const char *out;

	return sym_demangle_name(ctx, name, false, &out) ? NULL : out;
}
