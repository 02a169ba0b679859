// SPDX-License-Identifier: GPL-2.0
/*
 * `perfspy report`: one category per stack, from rules matched against
 * the stack's native tail (the frames below its innermost Python frame),
 * and weights counted by category, thread name, innermost Python frame,
 * native leaf and syscall (see report.h; the rule language is documented
 * in perfspy.h above struct perfspy_report_opts).
 *
 * Why the tail and not the leaf: a CUDA launch spends its time in the
 * driver and the kernel below cudaLaunchKernel, a GIL wait in futex below
 * take_gil; the frame that names the cost is rarely the leaf. Why rules
 * in order: the same stack often shows several candidates
 * (`.item()` -> _local_scalar_dense -> cudaMemcpyAsync ->
 * cudaStreamSynchronize), and the rule list says which wins.
 * Each distinct frame is matched against the rules once (a cache keyed
 * by frame id), so the cost is per frame, not per sample.
 */
#include "report.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>

#include "common/fold.h"
#include "common/opts.h"

/*
 * The built-in rules (the categories). Order matters: synchronous
 * CUDA calls and allocator calls come before the driver-library rule,
 * since they also run in libcuda; `_local_scalar_dense` (tensor.item())
 * comes before the async copy it issues; async copies are enqueued like
 * launches, synchronous ones wait like syncs.
 */
static const char default_rules[] =
	"# perfspy report rules: CATEGORY: [leaf] KIND [PATTERN]\n"
	"# KIND: func GLOB | lib GLOB | frame GLOB | kernel. First match wins.\n"
	"CUDA sync: func *_local_scalar_dense*\n"
	"CUDA sync: func cudaStreamSynchronize*\n"
	"CUDA sync: func cudaDeviceSynchronize*\n"
	"CUDA sync: func cudaEventSynchronize*\n"
	"CUDA sync: func cuStreamSynchronize*\n"
	"CUDA sync: func cuCtxSynchronize*\n"
	"CUDA sync: func cuEventSynchronize*\n"
	"allocator: func *CUDACachingAllocator*\n"
	"allocator: func cudaMalloc*\n"
	"allocator: func cudaFree*\n"
	"allocator: func cuMemAlloc*\n"
	"allocator: func cuMemFree*\n"
	"CUDA launch: func cudaLaunch*\n"
	"CUDA launch: func cuLaunch*\n"
	"CUDA launch: func cudaGraphLaunch*\n"
	"CUDA launch: func cuGraphLaunch*\n"
	"CUDA launch: func cudaMemcpy*Async*\n"
	"CUDA launch: func cuMemcpy*Async*\n"
	"CUDA sync: func cudaMemcpy*\n"
	"CUDA sync: func cuMemcpy*\n"
	"CUDA launch: lib libcuda.so*\n"
	"allocator: func malloc\n"
	"allocator: func free\n"
	"allocator: func calloc\n"
	"allocator: func realloc\n"
	"allocator: func cfree\n"
	"allocator: func *libc_malloc*\n"
	"allocator: func *libc_free*\n"
	"allocator: func *libc_calloc*\n"
	"allocator: func *libc_realloc*\n"
	"allocator: func _int_malloc*\n"
	"allocator: func _int_free*\n"
	"allocator: func _int_realloc*\n"
	"allocator: func malloc_consolidate*\n"
	"allocator: func sysmalloc*\n"
	"allocator: func tcache_*\n"
	"allocator: func unlink_chunk*\n"
	"allocator: func operator new*\n"
	"allocator: func operator delete*\n"
	"allocator: lib libjemalloc*\n"
	"allocator: lib libtcmalloc*\n"
	"allocator: lib libmimalloc*\n"
	"allocator: func _PyObject_Malloc\n"
	"allocator: func _PyObject_Calloc\n"
	"allocator: func _PyObject_Realloc\n"
	"allocator: func _PyObject_Free\n"
	"allocator: func PyObject_Malloc\n"
	"allocator: func PyObject_Calloc\n"
	"allocator: func PyObject_Realloc\n"
	"allocator: func PyObject_Free\n"
	"allocator: func PyMem_*\n"
	"allocator: func _PyMem_*\n"
	"allocator: func pymalloc_*\n"
	"allocator: func allocate_from_new_pool\n"
	"GIL: func take_gil\n"
	"GIL: func drop_gil\n"
	"GIL: func PyEval_RestoreThread\n"
	"GIL: func PyEval_AcquireThread\n"
	"GIL: func PyGILState_Ensure\n"
	"GIL: func PyThread_acquire_lock*\n"
	"Python interpreter: leaf func _PyEval_*\n"
	"Python interpreter: leaf func _Py*\n"
	"Python interpreter: leaf func Py*\n"
	"Python interpreter: leaf func py_trampoline_*\n"
	"Python interpreter: leaf lib libpython*\n"
	"Python interpreter: leaf lib python3*\n"
	"kernel: kernel\n";

PERFSPY_API const char *perfspy_report_default_rules(void)
{
	return default_rules;
}

u32 rp_name(struct perfspy_report *r, const char *s, size_t len)
{
	u32 id = fold_intern(r->names, s, len);

	if (id != FOLD_NO_ID && id >= r->nnames)
		r->nnames = id + 1;
	return id == FOLD_NO_ID ? RP_NONE : id;
}

const char *rp_text(const struct perfspy_report *r, u32 v, bool is_cat,
		    size_t *len)
{
	u32 id = is_cat ? r->cats[v] : v;

	*len = fold_name_len(r->names, id);
	return fold_name(r->names, id);
}

/* ---- rules ---- */

static const char *trim(const char *s, const char *e, const char **end)
{
	while (s < e && (*s == ' ' || *s == '\t'))
		s++;
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
		e--;
	*end = e;
	return s;
}

static int rp_category(struct perfspy_report *r, const char *s, size_t len,
		       u32 *out)
{
	u32 id = rp_name(r, s, len);
	size_t i;

	if (id == RP_NONE)
		return -ENOMEM;
	for (i = 0; i < r->ncats; i++) {
		if (r->cats[i] == id) {
			*out = (u32)i;
			return 0;
		}
	}
	if (ensure_mem((void **)&r->cats, &r->cap_cats, sizeof(*r->cats), r->ncats + 1))
		return -ENOMEM;
	r->cats[r->ncats] = id;
	*out = (u32)r->ncats++;
	return 0;
}

/* Take the next word of [*s, e). */
static bool word(const char **s, const char *e, const char *w)
{
	size_t n = strlen(w);
	const char *p = *s;

	if ((size_t)(e - p) < n || memcmp(p, w, n) ||
	    (p + n < e && p[n] != ' ' && p[n] != '\t'))
		return false;
	*s = p + n;
	return true;
}

#define RULE_FAIL(msg)                                                       \
	do {                                                                 \
		log_msg(&r->log, LOG_ERROR, "%s:%u: %s", r->rules_name, lineno, msg); \
		return -PERFSPY_E_RULES;                                     \
	} while (0)

/* One non-empty, non-comment line: `CATEGORY: [leaf] KIND [PATTERN]`. */
static int rp_rule_line(struct perfspy_report *r, const char *s, const char *e,
			unsigned lineno)
{
	static const char *const kinds[] = { "func", "lib", "frame", "kernel" };
	const char *colon = memchr(s, ':', (size_t)(e - s)), *ce, *p;
	struct rp_rule ru = { 0 };
	unsigned k;

	if (!colon)
		RULE_FAIL("expected 'CATEGORY: [leaf] func|lib|frame GLOB' or 'CATEGORY: kernel'");
	s = trim(s, colon, &ce);
	if (s == ce)
		RULE_FAIL("empty category name");
	p = trim(colon + 1, e, &e);
	ru.leaf = word(&p, e, "leaf");
	p = trim(p, e, &e);
	for (k = 0; k < ARRAY_SIZE(kinds) && !word(&p, e, kinds[k]); k++)
		;
	if (k == ARRAY_SIZE(kinds))
		RULE_FAIL("unknown match kind (expected func, lib, frame or kernel)");
	ru.kind = (enum rp_kind)k;
	p = trim(p, e, &e);
	if ((ru.kind == RK_KERNEL) != (p == e))
		RULE_FAIL(ru.kind == RK_KERNEL ? "'kernel' takes no pattern" :
			  "missing pattern");
	ru.pat = arena_strndup(&r->pats, p, (size_t)(e - p));
	if (!ru.pat || rp_category(r, s, (size_t)(ce - s), &ru.cat) ||
	    ensure_mem((void **)&r->rules, &r->cap_rules, sizeof(*r->rules),
		       r->nrules + 1))
		return -ENOMEM;
	r->rules[r->nrules++] = ru;
	return 0;
}

static int rp_parse_rules(struct perfspy_report *r, const char *text)
{
	const char *s = text, *nl, *e, *b;
	unsigned lineno = 0;
	int err = 0;

	while (!err && *s) {
		const char *end;

		nl = strchr(s, '\n');
		end = nl ? nl : s + strlen(s);
		lineno++;
		b = trim(s, end, &e);
		if (b < e && *b != '#')
			err = rp_rule_line(r, b, e, lineno);
		/* Go on from the line's end, not the trimmed one: a last line
		 * of blanks would otherwise be read forever (fuzz). */
		s = nl ? nl + 1 : end;
	}
	if (!err)
		err = rp_category(r, "other native", 12, &r->cat_other);
	if (!err)
		err = rp_category(r, "Python code", 11, &r->cat_python);
	return err;
}

/* ---- matching ---- */

struct rp_build {
	const struct perfspy_folder *in;
	struct idmap cache; /* input frame id -> (any << 32 | leaf) rule */
	char *buf;	    /* NUL-terminated copies for fnmatch */
	size_t cap;
};

static const char *cstr(struct rp_build *b, const char *s, size_t n)
{
	if (ensure_mem((void **)&b->buf, &b->cap, 1, n + 1))
		return NULL;
	memcpy(b->buf, s, n);
	b->buf[n] = 0;
	return b->buf;
}

/* 1 on a match, 0 on none, -ENOMEM. */
static int rule_match(struct rp_build *b, const struct rp_rule *ru,
		      const struct frame_parts *p, const char *text)
{
	const char *s;

	switch (ru->kind) {
	case RK_KERNEL:
		return p->kind == FRAME_KERNEL;
	case RK_FRAME:
		return !fnmatch(ru->pat, text, 0);
	case RK_LIB:
		if (!p->file)
			return 0;
		s = cstr(b, p->file, p->file_len);
		break;
	default:
		s = cstr(b, p->func, p->func_len);
	}
	if (!s)
		return -ENOMEM;
	return !fnmatch(ru->pat, s, 0);
}

/* For frame @id: the first rule matching it anywhere in a tail (high 32
 * bits) and the first rule matching it as the tail's leaf (low 32). */
static int rp_frame_rules(struct perfspy_report *r, struct rp_build *b, u32 id,
			  u64 *out)
{
	const char *text = fold_name(b->in, id);
	u32 any = RP_NONE, leaf = RP_NONE, i;
	struct frame_parts p;
	u64 *v = idmap_get(&b->cache, id);
	int m;

	if (v) {
		*out = *v;
		return 0;
	}
	frame_parse(text, fold_name_len(b->in, id), &p);
	for (i = 0; i < r->nrules && any == RP_NONE; i++) {
		if (leaf != RP_NONE && r->rules[i].leaf)
			continue;
		m = rule_match(b, &r->rules[i], &p, text);
		if (m < 0)
			return m;
		if (m && leaf == RP_NONE)
			leaf = i;
		if (m && !r->rules[i].leaf)
			any = i;
	}
	v = idmap_put(&b->cache, id);
	if (!v)
		return -ENOMEM;
	*out = *v = (u64)any << 32 | leaf;
	return 0;
}

/* Which syscall (or fault) a kernel frame says the stack is in. */
static const char *kernel_entry(const struct frame_parts *p, size_t *len)
{
	static const char *const sys[] = { "__x64_sys_", "__ia32_sys_",
		"__arm64_sys_", "__riscv_sys_", "__se_sys_", "__do_sys_",
		"ksys_", "sys_" };
	static const char *const fault[] = { "asm_exc_page_fault",
		"exc_page_fault", "do_page_fault", "do_user_addr_fault" };
	static const char *const irq[] = { "asm_sysvec_", "asm_common_interrupt",
		"irq_exit_rcu", "__irq_exit_rcu", "handle_softirqs", "__do_softirq" };
	size_t i, n;

	for (i = 0; i < ARRAY_SIZE(sys); i++) {
		n = strlen(sys[i]);
		if (p->func_len > n && !memcmp(p->func, sys[i], n)) {
			*len = p->func_len - n;
			return p->func + n;
		}
	}
	for (i = 0; i < ARRAY_SIZE(fault); i++)
		if (p->func_len == strlen(fault[i]) && !memcmp(p->func, fault[i], p->func_len))
			return *len = 10, "page fault";
	for (i = 0; i < ARRAY_SIZE(irq); i++)
		if (p->func_len >= strlen(irq[i]) &&
		    !memcmp(p->func, irq[i], strlen(irq[i])))
			return *len = 9, "interrupt";
	return NULL;
}

/* ---- counting ---- */

static u64 rel_hash(u32 a, u32 b)
{
	return hash_mix(((u64)a << 32 | b) ^ 0x2545f4914f6cdd1dULL);
}

static int rel_grow(struct rp_rel *rel)
{
	size_t ncap = rel->slots_cap ? rel->slots_cap * 2 : 256, i, j;
	u32 *s;

	if ((rel->nr + 1) * 2 <= rel->slots_cap)
		return 0;
	s = calloc(ncap, sizeof(*s));
	if (!s)
		return -ENOMEM;
	for (i = 0; i < rel->nr; i++) {
		j = rel_hash(rel->e[i].a, rel->e[i].b) & (ncap - 1);
		while (s[j])
			j = (j + 1) & (ncap - 1);
		s[j] = (u32)i + 1;
	}
	free(rel->slots);
	rel->slots = s;
	rel->slots_cap = ncap;
	return 0;
}

static int rel_add(struct rp_rel *rel, u32 a, u32 b, u64 n)
{
	size_t i;
	u32 v;

	if (a == RP_NONE || b == RP_NONE)
		return 0; /* nothing to count on that side */
	if (rel_grow(rel))
		return -ENOMEM;
	for (i = rel_hash(a, b) & (rel->slots_cap - 1); (v = rel->slots[i]);
	     i = (i + 1) & (rel->slots_cap - 1)) {
		if (rel->e[v - 1].a == a && rel->e[v - 1].b == b) {
			rel->e[v - 1].n += n;
			return 0;
		}
	}
	if (rel->nr >= UINT32_MAX - 1 ||
	    ensure_mem((void **)&rel->e, &rel->cap, sizeof(*rel->e), rel->nr + 1))
		return -ENOMEM;
	rel->e[rel->nr] = (struct rp_ent){ a, b, n };
	rel->slots[i] = (u32)++rel->nr;
	return 0;
}

/* What one stack says: its category, and the keys it is counted under. */
struct rp_keys {
	u32 cat, thread, py, leaf, sys;
};

/* A native leaf is counted per function: `_int_free (malloc.c:4689)` and
 * `_int_free (malloc.c:4572)` are one row, `_int_free (malloc.c)`. */
static int rp_leaf_name(struct perfspy_report *r, struct rp_build *b, u32 id,
			u32 *out)
{
	const char *s = fold_name(b->in, id);
	size_t len = fold_name_len(b->in, id), n;
	struct frame_parts p;

	frame_parse(s, len, &p);
	if (p.line && p.kind != FRAME_PYTHON) {
		n = p.func_len + 2 + p.file_len + 1;
		if (ensure_mem((void **)&b->buf, &b->cap, 1, n + 1))
			return -ENOMEM;
		memcpy(b->buf, p.func, p.func_len);
		memcpy(b->buf + p.func_len, " (", 2);
		memcpy(b->buf + p.func_len + 2, p.file, p.file_len);
		b->buf[n - 1] = ')';
		s = b->buf;
		len = n;
	}
	*out = rp_name(r, s, len);
	return *out == RP_NONE ? -ENOMEM : 0;
}

/* Categorize the tail ids[0..n) and find its reported leaf and syscall.
 * The leaf is the innermost user-space frame (kernel frames under it are
 * the syscall's detail), or the innermost frame when all are kernel. */
static int rp_tail(struct perfspy_report *r, struct rp_build *b, const u32 *ids,
		   u32 n, struct rp_keys *k)
{
	u32 best = RP_NONE, leaf = n - 1, j;
	struct frame_parts p;
	const char *sys;
	size_t len;
	u64 m;
	int err;

	for (j = n; j-- > 0;) {
		if (frame_kind_of(fold_name(b->in, ids[j]), fold_name_len(b->in, ids[j])) !=
		    FRAME_KERNEL) {
			leaf = j;
			break;
		}
	}
	for (j = 0; j < n; j++) {
		err = rp_frame_rules(r, b, ids[j], &m);
		if (err)
			return err;
		if ((u32)(m >> 32) < best)
			best = (u32)(m >> 32);
		if (j == leaf && (u32)m < best)
			best = (u32)m;
		frame_parse(fold_name(b->in, ids[j]), fold_name_len(b->in, ids[j]), &p);
		if (p.kind != FRAME_KERNEL || k->sys != RP_NONE)
			continue;
		sys = kernel_entry(&p, &len);
		if (sys && (k->sys = rp_name(r, sys, len)) == RP_NONE)
			return -ENOMEM;
	}
	k->cat = best == RP_NONE ? r->cat_other : r->rules[best].cat;
	err = rp_leaf_name(r, b, ids[leaf], &k->leaf);
	if (err)
		return err;
	for (j = 0; k->sys == RP_NONE && j < n; j++)
		if (frame_kind_of(fold_name(b->in, ids[j]), fold_name_len(b->in, ids[j])) ==
		    FRAME_KERNEL)
			k->sys = rp_name(r, "other kernel", 12);
	return 0;
}

/* The name a thread root frame gives: NAME of `thread (TID): NAME`, or
 * the whole frame for an unnamed thread. */
static u32 rp_thread(struct perfspy_report *r, const char *s, size_t len)
{
	const char *c = memchr(s, ':', len);

	r->has_threads = true;
	if (c && c + 2 <= s + len && c[1] == ' ' && c > s && c[-1] == ')')
		return rp_name(r, c + 2, len - (size_t)(c + 2 - s));
	return rp_name(r, s, len);
}

static int rp_stack(struct perfspy_report *r, struct rp_build *b, const u32 *ids,
		    u32 nr, u64 count)
{
	struct rp_keys k = { .thread = r->no_thread, .py = r->no_python,
			     .leaf = RP_NONE, .sys = RP_NONE };
	u32 root = 0, py = RP_NONE, j;
	enum frame_kind kind;
	int err = 0;

	for (; root < nr; root++) {
		const char *s = fold_name(b->in, ids[root]);
		size_t len = fold_name_len(b->in, ids[root]);

		kind = frame_kind_of(s, len);
		if (!frame_is_root(kind))
			break;
		if (kind == FRAME_THREAD && (k.thread = rp_thread(r, s, len)) == RP_NONE)
			return -ENOMEM;
	}
	for (j = nr; j-- > root && py == RP_NONE;)
		if (frame_kind_of(fold_name(b->in, ids[j]), fold_name_len(b->in, ids[j])) ==
		    FRAME_PYTHON)
			py = j;
	if (py != RP_NONE &&
	    (k.py = rp_name(r, fold_name(b->in, ids[py]), fold_name_len(b->in, ids[py]))) == RP_NONE)
		return -ENOMEM;
	j = py == RP_NONE ? root : py + 1;
	if (j < nr)
		err = rp_tail(r, b, ids + j, nr - j, &k);
	else
		k.cat = py == RP_NONE ? r->cat_other : r->cat_python;
	if (!err)
		err = rel_add(&r->rel[REL_CAT_PY], k.cat, k.py, count);
	if (!err)
		err = rel_add(&r->rel[REL_CAT_NAT], k.cat, k.leaf, count);
	if (!err)
		err = rel_add(&r->rel[REL_CAT_THR], k.cat, k.thread, count);
	if (!err)
		err = rel_add(&r->rel[REL_CAT_SYS], k.cat, k.sys, count);
	if (!err)
		err = rel_add(&r->rel[REL_THR_PY], k.thread, k.py, count);
	if (!err)
		err = rel_add(&r->rel[REL_PY_NAT], k.py, k.leaf, count);
	if (!err) {
		r->cat_total[k.cat] += count;
		r->total += count;
		r->last_cat = k.cat;
	}
	return err;
}

/* ---- public API ---- */

static int cmp_cat(const void *a, const void *b)
{
	const u64 *x = a, *y = b; /* (total, index) pairs */

	if (x[0] != y[0])
		return x[0] > y[0] ? -1 : 1;
	return x[1] < y[1] ? -1 : x[1] > y[1];
}

static int rp_order_cats(struct perfspy_report *r)
{
	u64 *v = xreallocarray(NULL, r->ncats * 2 + 2, sizeof(*v));
	size_t i;

	r->cat_order = xreallocarray(NULL, r->ncats + 1, sizeof(*r->cat_order));
	if (!v || !r->cat_order) {
		free(v);
		return -ENOMEM;
	}
	for (i = 0; i < r->ncats; i++) {
		v[2 * i] = r->cat_total[i];
		v[2 * i + 1] = i;
	}
	xqsort(v, r->ncats, 2 * sizeof(*v), cmp_cat);
	for (i = 0; i < r->ncats; i++)
		r->cat_order[i] = (u32)v[2 * i + 1];
	free(v);
	return 0;
}

static int rp_fill(struct perfspy_report *r, const struct perfspy_folder *f)
{
	struct rp_build b = { .in = f };
	size_t i, nr = perfspy_folder__nr_stacks(f);
	const u32 *ids;
	u32 n;
	u64 count;
	int err = 0;

	r->cat_total = xreallocarray(NULL, r->ncats, sizeof(*r->cat_total));
	if (!r->cat_total)
		return -ENOMEM;
	memset(r->cat_total, 0, r->ncats * sizeof(*r->cat_total));
	for (i = 0; !err && i < nr; i++) {
		fold_stack(f, i, &ids, &n, &count);
		err = rp_stack(r, &b, ids, n, count);
		if (!err && r->stack_cat)
			r->stack_cat[i] = r->last_cat;
	}
	idmap_free(&b.cache);
	free(b.buf);
	if (!err)
		err = rp_order_cats(r);
	if (!err)
		err = rp_rank(r);
	return err;
}

PERFSPY_API int perfspy_report__new(const struct perfspy_folder *f,
				    const struct perfspy_report_opts *opts,
				    struct perfspy_report **out)
{
	return rp_new(f, opts, false, out);
}

int rp_new(const struct perfspy_folder *f, const struct perfspy_report_opts *opts,
	   bool per_stack, struct perfspy_report **out)
{
	struct perfspy_report *r;
	int err;

	if (!OPTS_VALID(opts, perfspy_report_opts))
		return -PERFSPY_E_OPTS;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	if (per_stack &&
	    !(r->stack_cat = xreallocarray(NULL, perfspy_folder__nr_stacks(f) + 1,
					   sizeof(*r->stack_cat)))) {
		free(r);
		return -ENOMEM;
	}
	arena_init(&r->pats);
	r->log.fn = OPTS_GET(opts, log_fn, NULL);
	r->log.ctx = OPTS_GET(opts, log_ctx, NULL);
	r->log.level = LOG_DEBUG;
	r->rules_name = OPTS_GET(opts, rules_name, NULL);
	if (!r->rules_name)
		r->rules_name = "rules";
	err = perfspy_folder__new(&r->names);
	if (!err) {
		r->no_python = rp_name(r, "(no Python frame)", 17);
		r->no_thread = rp_name(r, "(all threads)", 13);
		if (r->no_python == RP_NONE || r->no_thread == RP_NONE)
			err = -ENOMEM;
	}
	if (!err)
		err = rp_parse_rules(r, OPTS_GET(opts, rules, NULL) ?
				     OPTS_GET(opts, rules, NULL) : default_rules);
	if (!err)
		err = rp_fill(r, f);
	if (err) {
		perfspy_report__free(r);
		return err;
	}
	*out = r;
	return 0;
}

PERFSPY_API void perfspy_report__free(struct perfspy_report *r)
{
	size_t i;

	if (!r)
		return;
	for (i = 0; i < REL_N; i++) {
		free(r->rel[i].e);
		free(r->rel[i].slots);
	}
	perfspy_folder__free(r->names);
	arena_free(&r->pats);
	free(r->rules);
	free(r->cats);
	free(r->cat_total);
	free(r->cat_order);
	free(r->rank);
	free(r->stack_cat);
	free(r);
}

PERFSPY_API uint64_t perfspy_report__total(const struct perfspy_report *r)
{
	return r->total;
}

PERFSPY_API int perfspy_report__category(const struct perfspy_report *r,
					 uint32_t idx,
					 struct perfspy_report_row *row)
{
	size_t len;

	if (!row || row->sz < offsetofend(struct perfspy_report_row, samples))
		return -PERFSPY_E_OPTS;
	if (idx >= r->ncats)
		return -ENOENT;
	row->name = rp_text(r, r->cat_order[idx], true, &len);
	row->samples = r->cat_total[r->cat_order[idx]];
	return 0;
}
