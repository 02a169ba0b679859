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
#include "common/hash.h"
#include "common/opts.h"

/*
 * The built-in rules (the categories). Order matters: synchronous
 * CUDA calls and allocator calls come before the driver-library rule,
 * since they also run in libcuda; `_local_scalar_dense_cuda`
 * (tensor.item() on a CUDA tensor) comes before the async copy it
 * issues; async copies are enqueued like launches, synchronous ones wait
 * like syncs. GC before the allocators (a collection frees objects);
 * allocators before the math kernels that call them (at::native::empty
 * -> c10::alloc_cpu); the kernels before the thread pools and the
 * dispatcher they run under, so those keep only their own time.
 */
static const char default_rules[] =
	"# perfspy report rules: CATEGORY: [python] [leaf] KIND [PATTERN]\n"
	"# KIND: func GLOB | lib GLOB | frame GLOB | kernel. First match wins.\n"
	"# Function names are matched without LTO/clone suffixes (.lto_priv.N,\n"
	"# .constprop.N, .isra.N, .part.N, .cold).\n"
	"# .item() on a CUDA tensor waits for the device; on a CPU tensor\n"
	"# (_local_scalar_dense_cpu) it does not, so only the _cuda kernel is a sync.\n"
	"# Off-CPU stacks (--idle, docs/top.md section 3): where a thread waited,\n"
	"# by the kernel path it left the CPU through (first: a GIL or CUDA wait\n"
	"# off the CPU is a futex or I/O wait).\n"
	"waiting: futex: func futex_do_wait\n"
	"waiting: futex: func futex_wait_queue\n"
	"waiting: futex: func futex_wait_queue_me\n"
	"waiting: sleep: func do_nanosleep\n"
	"waiting: sleep: func hrtimer_nanosleep\n"
	"waiting: I/O: func io_schedule*\n"
	"waiting: I/O: func schedule_hrtimeout*\n"
	"waiting: I/O: func schedule_timeout*\n"
	"waiting: I/O: func pipe_read\n"
	"waiting: I/O: func pipe_write\n"
	"waiting: I/O: func wait_woken\n"
	"waiting: I/O: func sk_wait_data\n"
	"CUDA sync: func *_local_scalar_dense_cuda*\n"
	"CUDA sync: func cudaStreamSynchronize*\n"
	"CUDA sync: func cudaDeviceSynchronize*\n"
	"CUDA sync: func cudaEventSynchronize*\n"
	"CUDA sync: func cuStreamSynchronize*\n"
	"CUDA sync: func cuCtxSynchronize*\n"
	"CUDA sync: func cuEventSynchronize*\n"
	"CUDA allocator: func *CUDACachingAllocator*\n"
	"CUDA allocator: func *CudaCachingAllocator*\n"
	"CUDA allocator: func cudaMalloc*\n"
	"CUDA allocator: func cudaFree*\n"
	"CUDA allocator: func cudaHostAlloc*\n"
	"CUDA allocator: func cuMemAlloc*\n"
	"CUDA allocator: func cuMemFree*\n"
	"CUDA allocator: func cuMemHostAlloc*\n"
	"CUDA allocator: func cuMemCreate*\n"
	"CUDA allocator: func cuMemMap*\n"
	"CUDA launch: func cudaLaunch*\n"
	"CUDA launch: func cuLaunch*\n"
	"CUDA launch: func cudaGraphLaunch*\n"
	"CUDA launch: func cuGraphLaunch*\n"
	"CUDA launch: func cudaMemcpy*Async*\n"
	"CUDA launch: func cuMemcpy*Async*\n"
	"CUDA sync: func cudaMemcpy*\n"
	"CUDA sync: func cuMemcpy*\n"
	"CUDA launch: lib libcuda.so*\n"
	"communication: func nccl*\n"
	"communication: lib libnccl*\n"
	"communication: func c10d::*\n"
	"communication: func gloo::*\n"
	"communication: lib libgloo*\n"
	"communication: func tensorpipe::*\n"
	"communication: func MPI_*\n"
	"communication: lib libmpi*\n"
	"GC: func gc_collect_main\n"
	"GC: func gc_collect_with_callback\n"
	"GC: func gc_collect_generations\n"
	"GC: func gc_collect_impl\n"
	"GC: func gc_collect_region\n"
	"GC: func gc_collect_full\n"
	"GC: func gc_collect_young\n"
	"GC: func gc_collect_increment\n"
	"GC: func _PyGC_Collect\n"
	"GC: func PyGC_Collect\n"
	"GC: func _Py_RunGC\n"
	"GC: func _PyGC_CollectNoFail\n"
	"GC: frame collect (gcmodule.c*\n"
	"GC: frame collect_with_callback (gcmodule.c*\n"
	"host allocator: func malloc\n"
	"host allocator: func free\n"
	"host allocator: func calloc\n"
	"host allocator: func realloc\n"
	"host allocator: func reallocarray\n"
	"host allocator: func cfree\n"
	"host allocator: func posix_memalign\n"
	"host allocator: func memalign\n"
	"host allocator: func aligned_alloc\n"
	"host allocator: func valloc\n"
	"host allocator: func pvalloc\n"
	"host allocator: func *libc_malloc*\n"
	"host allocator: func *libc_free*\n"
	"host allocator: func *libc_calloc*\n"
	"host allocator: func *libc_realloc*\n"
	"host allocator: func *libc_memalign*\n"
	"host allocator: func _int_malloc*\n"
	"host allocator: func _int_free*\n"
	"host allocator: func _int_realloc*\n"
	"host allocator: func _int_memalign*\n"
	"host allocator: func _mid_memalign*\n"
	"host allocator: func malloc_consolidate*\n"
	"host allocator: func sysmalloc*\n"
	"host allocator: func systrim*\n"
	"host allocator: func tcache_*\n"
	"host allocator: func unlink_chunk*\n"
	"host allocator: func operator new*\n"
	"host allocator: func operator delete*\n"
	"host allocator: func c10::alloc_cpu*\n"
	"host allocator: func c10::free_cpu*\n"
	"host allocator: func c10::DefaultCPUAllocator::*\n"
	"host allocator: lib libjemalloc*\n"
	"host allocator: func je_*\n"
	"host allocator: lib libtcmalloc*\n"
	"host allocator: func tc_*\n"
	"host allocator: func tcmalloc::*\n"
	"host allocator: lib libmimalloc*\n"
	"host allocator: func mi_*\n"
	"host allocator: func _mi_*\n"
	"host allocator: func _PyObject_Malloc\n"
	"host allocator: func _PyObject_Calloc\n"
	"host allocator: func _PyObject_Realloc\n"
	"host allocator: func _PyObject_Free\n"
	"host allocator: func PyObject_Malloc\n"
	"host allocator: func PyObject_Calloc\n"
	"host allocator: func PyObject_Realloc\n"
	"host allocator: func PyObject_Free\n"
	"host allocator: func PyMem_*\n"
	"host allocator: func _PyMem_*\n"
	"host allocator: func pymalloc_*\n"
	"host allocator: func allocate_from_new_pool\n"
	"GIL: func take_gil\n"
	"GIL: func drop_gil\n"
	"GIL: func PyEval_RestoreThread\n"
	"GIL: func PyEval_AcquireThread\n"
	"GIL: func PyGILState_Ensure\n"
	"GIL: func PyThread_acquire_lock*\n"
	"# Idle workers: libgomp/libiomp spin and sleep in their own code, the\n"
	"# work they run is in the caller's library (hence leaf rules).\n"
	"OpenMP/thread-pool wait: leaf lib libgomp*\n"
	"OpenMP/thread-pool wait: leaf lib libiomp*\n"
	"OpenMP/thread-pool wait: leaf lib libomp.so*\n"
	"OpenMP/thread-pool wait: leaf func __kmp_*\n"
	"OpenMP/thread-pool wait: leaf func gomp_*\n"
	"OpenMP/thread-pool wait: leaf func blas_thread_server\n"
	"OpenMP/thread-pool wait: leaf lib libpthreadpool*\n"
	"OpenMP/thread-pool wait: leaf func pthreadpool_*\n"
	"OpenMP/thread-pool wait: func torch::autograd::ReadyQueue::pop*\n"
	"math kernels: func sgemm_*\n"
	"math kernels: func dgemm_*\n"
	"math kernels: func cblas_*\n"
	"math kernels: func *gemm_kernel*\n"
	"math kernels: func *gemv_kernel*\n"
	"math kernels: lib libblas*\n"
	"math kernels: lib liblapack*\n"
	"math kernels: lib libopenblas*\n"
	"math kernels: lib libblis*\n"
	"math kernels: lib libmkl*\n"
	"math kernels: func mkl_*\n"
	"math kernels: lib libdnnl*\n"
	"math kernels: lib libmkldnn*\n"
	"math kernels: func dnnl::*\n"
	"math kernels: func dnnl_*\n"
	"math kernels: func mkldnn::*\n"
	"math kernels: func ideep::*\n"
	"math kernels: lib libsleef*\n"
	"math kernels: lib libXNNPACK*\n"
	"math kernels: func xnn_*\n"
	"math kernels: func at::native::*\n"
	"math kernels: func at::vec::*\n"
	"# Threads of at::parallel_for's native pool wait in c10::ThreadPool;\n"
	"# the kernels they run matched above.\n"
	"OpenMP/thread-pool wait: func c10::ThreadPool::main_loop*\n"
	"OpenMP/thread-pool wait: func at::internal::*\n"
	"PyTorch dispatch/autograd: func c10::Dispatcher::*\n"
	"PyTorch dispatch/autograd: func c10::OperatorHandle::*\n"
	"PyTorch dispatch/autograd: func c10::KernelFunction::*\n"
	"PyTorch dispatch/autograd: func c10::impl::*\n"
	"PyTorch dispatch/autograd: func at::_ops::*\n"
	"PyTorch dispatch/autograd: func at::redispatch::*\n"
	"PyTorch dispatch/autograd: func torch::autograd::*\n"
	"PyTorch dispatch/autograd: func torch::jit::*\n"
	"PyTorch dispatch/autograd: func at::TensorIteratorBase::*\n"
	"import: func PyImport_*\n"
	"import: func _PyImport_*\n"
	"import: func import_find_and_load\n"
	"import: func _imp_*\n"
	"import: func PyMarshal_*\n"
	"import: func _dl_open\n"
	"import: func _dl_map_object*\n"
	"import: func _dl_relocate_object\n"
	"# The eval loop or a builtin as the leaf, under a Python frame: Python\n"
	"# code running. Without a Python frame (no perf map), which code is\n"
	"# not known: Python interpreter.\n"
	"Python code: python leaf func _PyEval_*\n"
	"Python code: python leaf func _Py*\n"
	"Python code: python leaf func Py*\n"
	"Python code: python leaf func py_trampoline_*\n"
	"Python code: python leaf lib libpython*\n"
	"Python code: python leaf lib python3*\n"
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

/*
 * The pairs of adjacent bytes of @n bytes at @s, as a 256-bit set (a
 * Bloom filter with one hash). A subject holding a rule's run holds its
 * pairs, so a run with a pair the subject's set lacks is not in it: one
 * AND per rule instead of a memmem() (a frame has a few dozen pairs, so
 * about a fifth of the bits are set and a run of 8 passes by chance once
 * in 100,000).
 */
static void rp_pairs(const char *s, size_t n, u64 out[4])
{
	size_t i;
	u32 h;

	out[0] = out[1] = out[2] = out[3] = 0;
	for (i = 0; i + 1 < n; i++) {
		h = ((u32)(u8)s[i] * 0x9e3779b1u ^ (u32)(u8)s[i + 1] * 0x85ebca6bu) >> 24;
		out[h >> 6] |= 1ull << (h & 63);
	}
}

/*
 * A glob's plain text, for rule_match() to turn most subjects away
 * without fnmatch(): with flags 0, each character other than * ? [ and
 * backslash matches only itself, so a subject the glob matches holds
 * every run of them, and starts with the first one when the glob does.
 * The longest run is kept. A glob with a bracket expression or an
 * escape keeps none (their plain-looking characters are not).
 * Matching each distinct frame against the 100-odd built-in rules with
 * fnmatch() alone was a third of a pprof conversion (issue 16).
 */
static void rule_lit(struct rp_rule *ru)
{
	const char *p = ru->pat, *run;
	size_t n;

	ru->lit = NULL;
	ru->lit_len = 0;
	ru->lit_start = false;
	if (strpbrk(p, "[\\"))
		return;
	while (*p) {
		run = p;
		n = strcspn(p, "*?");
		if (n > ru->lit_len && n <= UINT32_MAX) {
			ru->lit = run;
			ru->lit_len = (u32)n;
			ru->lit_start = run == ru->pat;
		}
		p += n;
		p += strspn(p, "*?");
	}
	rp_pairs(ru->lit, ru->lit_len, ru->lit_pairs);
}

#define RULE_FAIL(msg)                                                       \
	do {                                                                 \
		log_msg(&r->log, LOG_ERROR, "%s:%u: %s", r->rules_name, lineno, msg); \
		return -PERFSPY_E_RULES;                                     \
	} while (0)

/* One non-empty, non-comment line: `CATEGORY: [python] [leaf] KIND [PATTERN]`. */
static int rp_rule_line(struct perfspy_report *r, const char *s, const char *e,
			unsigned lineno)
{
	static const char *const kinds[] = { "func", "lib", "frame", "kernel" };
	const char *colon = memchr(s, ':', (size_t)(e - s)), *ce, *p, *c2, *pe;
	struct rp_rule ru = { 0 };
	unsigned k;

	/* A category may hold ': ' itself (`waiting: futex`, issue 10): the
	 * category ends at the first colon a rule body follows. */
	for (c2 = colon; c2; c2 = memchr(c2 + 1, ':', (size_t)(e - c2 - 1))) {
		pe = e;
		p = trim(c2 + 1, pe, &pe);
		word(&p, pe, "python");
		p = trim(p, pe, &pe);
		word(&p, pe, "leaf");
		p = trim(p, pe, &pe);
		for (k = 0; k < ARRAY_SIZE(kinds) && !word(&p, pe, kinds[k]); k++)
			;
		if (k < ARRAY_SIZE(kinds)) {
			colon = c2;
			break;
		}
		if (c2 + 1 >= e)
			break;
	}
	if (!colon)
		RULE_FAIL("expected 'CATEGORY: [python] [leaf] func|lib|frame GLOB' or 'CATEGORY: kernel'");
	s = trim(s, colon, &ce);
	if (s == ce)
		RULE_FAIL("empty category name");
	p = trim(colon + 1, e, &e);
	ru.py = word(&p, e, "python");
	p = trim(p, e, &e);
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
	if (ru.pat)
		rule_lit(&ru);
	if (!ru.pat || rp_category(r, s, (size_t)(ce - s), &ru.cat) ||
	    ensure_mem((void **)&r->rules, &r->cap_rules, sizeof(*r->rules),
		       r->nrules + 1))
		return -ENOMEM;
	r->rules[r->nrules++] = ru;
	return 0;
}

/*
 * The end of line [@b, @e) without its comment: '#' first on the line,
 * or after a blank (a trailing `# note`, include/perfspy.h "Rules
 * text"); a '#' inside a pattern (`*#*`) has no blank before it. Before
 * issue 15 a trailing comment silently became part of the pattern.
 */
static const char *strip_comment(const char *b, const char *e)
{
	const char *p;

	for (p = b; p < e; p++)
		if (*p == '#' && (p == b || p[-1] == ' ' || p[-1] == '\t'))
			break;
	while (p > b && (p[-1] == ' ' || p[-1] == '\t'))
		p--;
	return p;
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
		e = strip_comment(b, e);
		if (b < e)
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

/*
 * The length of function name @f without the suffixes compilers give
 * copies of a function: GCC's LTO-private (`.lto_priv.N`), constant-
 * propagated (`.constprop.N`), scalar-replaced (`.isra.N`) and split-off
 * (`.part.N`, `.cold`, `.cold.N`) clones, LLVM's `.llvm.N`. Each is the
 * same source function (take_gil.lto_priv.0 is take_gil), for a reader
 * and for the rules. They stack (`f.isra.0.cold`), so strip until none
 * is left; a name that is only a suffix is kept.
 */
size_t rp_strip_clone(const char *f, size_t n)
{
	static const char *const sfx[] = { ".lto_priv", ".constprop", ".isra",
					   ".part", ".cold", ".llvm" };
	size_t m, i, k;

	for (;;) {
		m = n;
		while (m > 0 && f[m - 1] >= '0' && f[m - 1] <= '9')
			m--;
		if (m < n) { /* digits must follow a '.' of the suffix */
			if (m == 0 || f[m - 1] != '.')
				return n;
			m--;
		}
		for (i = 0; i < ARRAY_SIZE(sfx); i++) {
			k = strlen(sfx[i]);
			if (m > k && !memcmp(f + m - k, sfx[i], k))
				break;
		}
		if (i == ARRAY_SIZE(sfx))
			return n;
		n = m - k;
	}
}

struct rp_build {
	const struct perfspy_folder *in;
	/* input frame id -> (any << 32 | leaf) rule, for stacks without
	 * ([0]) and with ([1]) a Python frame (`python` rules apply to the
	 * latter only). */
	struct idmap cache[2];
	/* Per input frame id, worked out on first use (each stack used to
	 * parse its frames three times, issue 16): kinds[id] is its
	 * enum frame_kind + 1; sys[id] its kernel_entry() name id + 2, 1
	 * when it names none; leaf[id] its rp_leaf_name() id + 1. 0: not
	 * yet known. */
	u8 *kinds;
	u32 *sys, *leaf;
	char *buf;	    /* NUL-terminated copies for fnmatch */
	size_t cap;
	char *norm;	    /* a frame's text without clone suffixes */
	size_t cap_norm;
};

/* @p (parsed from @text) with its function's clone suffixes stripped:
 * re-parsed from b->norm, *text pointing there. 0 or -ENOMEM. */
static int rp_normalize(struct rp_build *b, const char **text, size_t *len,
			struct frame_parts *p)
{
	size_t fl, off;

	if (p->kind != FRAME_NATIVE && p->kind != FRAME_KERNEL)
		return 0;
	fl = rp_strip_clone(p->func, p->func_len);
	if (fl == p->func_len)
		return 0;
	off = (size_t)(p->func - *text);
	if (ensure_mem((void **)&b->norm, &b->cap_norm, 1, *len + 1))
		return -ENOMEM;
	memcpy(b->norm, *text, off + fl);
	memcpy(b->norm + off + fl, p->func + p->func_len, *len - off - p->func_len);
	*len -= p->func_len - fl;
	b->norm[*len] = 0;
	*text = b->norm;
	frame_parse(*text, *len, p);
	return 0;
}

static const char *cstr(struct rp_build *b, const char *s, size_t n)
{
	if (ensure_mem((void **)&b->buf, &b->cap, 1, n + 1))
		return NULL;
	memcpy(b->buf, s, n);
	b->buf[n] = 0;
	return b->buf;
}

/* The parts of a frame rules look at, by rule kind: RK_FRAME the whole
 * text, RK_FUNC the function, RK_LIB the file (struct rp_subj sj[]). */
enum { SUBJ_TEXT, SUBJ_FUNC, SUBJ_FILE, SUBJ_N };

static int subj_of(enum rp_kind kind)
{
	return kind == RK_FRAME ? SUBJ_TEXT : kind == RK_LIB ? SUBJ_FILE : SUBJ_FUNC;
}

/* A frame's text or part as rules see it, with its pairs (rp_pairs())
 * once a rule asks. */
struct rp_subj {
	const char *s;
	size_t n;
	u64 pairs[4];
	bool have_pairs;
};

/* The row of struct perfspy_report.cand for @sj: its first byte, 256
 * when it is empty or absent. */
static size_t first_byte(const struct rp_subj *sj)
{
	return sj->s && sj->n ? (u8)sj->s[0] : 256;
}

/* Whether @sj can match @ru's glob (rule_lit()). */
static bool lit_in(const struct rp_rule *ru, struct rp_subj *sj)
{
	int k;

	if (!ru->lit_len)
		return true;
	if (ru->lit_start) /* the first byte turns most away, without a call */
		return sj->n >= ru->lit_len && sj->s[0] == ru->lit[0] &&
			!memcmp(sj->s, ru->lit, ru->lit_len);
	if (!sj->have_pairs) {
		rp_pairs(sj->s, sj->n, sj->pairs);
		sj->have_pairs = true;
	}
	for (k = 0; k < 4; k++)
		if (ru->lit_pairs[k] & ~sj->pairs[k])
			return false;
	return memmem(sj->s, sj->n, ru->lit, ru->lit_len) != NULL;
}

/* 1 on a match, 0 on none, -ENOMEM. @sj: the frame's parts (SUBJ_*). */
static int rule_match(struct rp_build *b, const struct rp_rule *ru,
		      const struct frame_parts *p, struct rp_subj sj[SUBJ_N])
{
	struct rp_subj *x = &sj[subj_of(ru->kind)];
	const char *s;

	if (ru->kind == RK_KERNEL)
		return p->kind == FRAME_KERNEL;
	if (!x->s || !lit_in(ru, x))
		return 0; /* RK_LIB: a frame without a file matches none */
	/* The text is a NUL-terminated string (the folder's, or
	 * rp_normalize()'s copy); the parts are copied to be one. */
	s = ru->kind == RK_FRAME ? x->s : cstr(b, x->s, x->n);
	if (!s)
		return -ENOMEM;
	return !fnmatch(ru->pat, s, 0);
}

/* For frame @id: the first rule matching it anywhere in a tail (high 32
 * bits) and the first rule matching it as the tail's leaf (low 32), in a
 * stack with a Python frame (@py) or without. */
static int rp_frame_rules(struct perfspy_report *r, struct rp_build *b, u32 id,
			  bool py, u64 *out)
{
	const char *text = fold_name(b->in, id);
	size_t len = fold_name_len(b->in, id);
	u32 any = RP_NONE, leaf = RP_NONE, i;
	struct frame_parts p;
	struct rp_subj sj[SUBJ_N];
	size_t w, k;
	u64 *v = idmap_get(&b->cache[py], id);
	int m;

	if (v) {
		*out = *v;
		return 0;
	}
	frame_parse(text, len, &p);
	m = rp_normalize(b, &text, &len, &p);
	if (m)
		return m;
	sj[SUBJ_TEXT] = (struct rp_subj){ .s = text, .n = len };
	sj[SUBJ_FUNC] = (struct rp_subj){ .s = p.func, .n = p.func_len };
	sj[SUBJ_FILE] = (struct rp_subj){ .s = p.file, .n = p.file_len };
	/* The rules in order, skipping those rp_index() says cannot match
	 * (rule_match() would say 0 for them). */
	for (w = 0; w < r->cand_words && any == RP_NONE; w++) {
		u64 bits = 0;

		for (k = 0; k < SUBJ_N; k++)
			bits |= r->cand[(k * 257 + first_byte(&sj[k])) * r->cand_words + w];
		while (bits && any == RP_NONE) {
			i = (u32)(w * 64 + (size_t)__builtin_ctzll(bits));
			bits &= bits - 1;
			if ((leaf != RP_NONE && r->rules[i].leaf) || (r->rules[i].py && !py))
				continue;
			m = rule_match(b, &r->rules[i], &p, sj);
			if (m < 0)
				return m;
			if (m && leaf == RP_NONE)
				leaf = i;
			if (m && !r->rules[i].leaf)
				any = i;
		}
	}
	v = idmap_put(&b->cache[py], id);
	if (!v)
		return -ENOMEM;
	*out = *v = (u64)any << 32 | leaf;
	return 0;
}

/* frame_kind_of() input frame @id, once per id. */
static enum frame_kind id_kind(struct rp_build *b, u32 id)
{
	if (!b->kinds[id])
		b->kinds[id] = (u8)(frame_kind_of(fold_name(b->in, id),
						  fold_name_len(b->in, id)) + 1);
	return (enum frame_kind)(b->kinds[id] - 1);
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

struct rel_slot {
	u64 hash;
	u32 idx;
};

struct rel_key {
	const struct rp_rel *rel;
	u32 a, b;
};

static bool rel_eq(const void *ent, const void *key)
{
	const struct rel_key *k = key;
	const struct rp_ent *e = &k->rel->e[((const struct rel_slot *)ent)->idx];

	return e->a == k->a && e->b == k->b;
}

static int rel_add(struct rp_rel *rel, u32 a, u32 b, u64 n)
{
	struct rel_key key = { rel, a, b };
	u64 h = rel_hash(a, b);
	struct rel_slot *s;

	if (a == RP_NONE || b == RP_NONE)
		return 0; /* nothing to count on that side */
	if (htab_reserve(&rel->tab))
		return -ENOMEM;
	s = htab_probe(&rel->tab, h, rel_eq, &key);
	if (htab_used(s)) {
		rel->e[s->idx].n += n;
		return 0;
	}
	if (rel->nr >= UINT32_MAX - 1 ||
	    ensure_mem((void **)&rel->e, &rel->cap, sizeof(*rel->e), rel->nr + 1))
		return -ENOMEM;
	rel->e[rel->nr] = (struct rp_ent){ a, b, n };
	s->idx = (u32)rel->nr++;
	htab_claim(&rel->tab, s, h);
	return 0;
}

/* What one stack says: its category, and the keys it is counted under. */
struct rp_keys {
	u32 cat, thread, py, leaf, sys;
	u32 proc, tid; /* the whole root frames */
};

/* A native leaf is counted per function: `_int_free (malloc.c:4689)` and
 * `_int_free (malloc.c:4572)` are one row, `_int_free (malloc.c)`; so
 * are its clones (`take_gil.lto_priv.0` is `take_gil`). */
static int rp_leaf_name(struct perfspy_report *r, struct rp_build *b, u32 id,
			u32 *out)
{
	const char *s = fold_name(b->in, id);
	size_t len = fold_name_len(b->in, id), n;
	struct frame_parts p;
	int err;

	frame_parse(s, len, &p);
	err = rp_normalize(b, &s, &len, &p);
	if (err)
		return err;
	if (p.line > 0 && p.kind != FRAME_PYTHON) {
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
		   u32 n, bool py, struct rp_keys *k)
{
	u32 best = RP_NONE, leaf = n - 1, j;
	struct frame_parts p;
	const char *sys;
	size_t len;
	u64 m;
	int err;

	for (j = n; j-- > 0;) {
		if (id_kind(b, ids[j]) != FRAME_KERNEL) {
			leaf = j;
			break;
		}
	}
	for (j = 0; j < n; j++) {
		err = rp_frame_rules(r, b, ids[j], py, &m);
		if (err)
			return err;
		if ((u32)(m >> 32) < best)
			best = (u32)(m >> 32);
		if (j == leaf && (u32)m < best)
			best = (u32)m;
		if (k->sys != RP_NONE || id_kind(b, ids[j]) != FRAME_KERNEL)
			continue;
		if (!b->sys[ids[j]]) {
			u32 sid = RP_NONE;

			frame_parse(fold_name(b->in, ids[j]), fold_name_len(b->in, ids[j]), &p);
			sys = kernel_entry(&p, &len);
			if (sys && (sid = rp_name(r, sys, len)) == RP_NONE)
				return -ENOMEM;
			b->sys[ids[j]] = sys ? sid + 2 : 1;
		}
		if (b->sys[ids[j]] > 1)
			k->sys = b->sys[ids[j]] - 2;
	}
	k->cat = best == RP_NONE ? r->cat_other : r->rules[best].cat;
	if (!b->leaf[ids[leaf]]) {
		err = rp_leaf_name(r, b, ids[leaf], &k->leaf);
		if (err)
			return err;
		b->leaf[ids[leaf]] = k->leaf + 1;
	}
	k->leaf = b->leaf[ids[leaf]] - 1;
	for (j = 0; k->sys == RP_NONE && j < n; j++)
		if (id_kind(b, ids[j]) == FRAME_KERNEL)
			k->sys = rp_name(r, "other kernel", 12);
	return 0;
}

/*
 * The name a thread root gives: NAME of `thread (TID): NAME`, else the
 * root as `thread (TID)`, whichever py-spy version wrote it (`thread
 * 1234`, `thread 0x7F.. ()`): the form the py-spy reader makes of it
 * (pyspy_stack.c), so that a report of a folder and a report of that
 * folder read back from its text name threads alike.
 */
static u32 rp_thread(struct perfspy_report *r, struct rp_build *b,
		     const struct frame_parts *p)
{
	size_t n = frame_thread_text_len(p);

	r->has_threads = true;
	if (p->thread_name)
		return rp_name(r, p->thread_name, p->thread_name_len);
	if (ensure_mem((void **)&b->buf, &b->cap, 1, n))
		return RP_NONE;
	frame_thread_text(p, b->buf);
	return rp_name(r, b->buf, n);
}

/* The --by tid row of a thread root: `thread (TID)`, whichever py-spy
 * version wrote the root (frame_thread_text). The name is left out: a
 * thread renamed while sampled (pthread_setname_np after its first
 * samples) is still one thread id, one row. */
static u32 rp_tid(struct perfspy_report *r, struct rp_build *b,
		  const struct frame_parts *p)
{
	size_t n = frame_thread_text_len(p);

	if (ensure_mem((void **)&b->buf, &b->cap, 1, n))
		return RP_NONE;
	frame_thread_text(p, b->buf);
	return rp_name(r, b->buf, n);
}

static int rp_stack(struct perfspy_report *r, struct rp_build *b, const u32 *ids,
		    u32 nr, u64 count)
{
	struct rp_keys k = { .thread = r->no_thread, .py = r->no_python,
			     .leaf = RP_NONE, .sys = RP_NONE,
			     .proc = r->no_process, .tid = r->no_thread };
	u32 root = 0, py = RP_NONE, j;
	struct frame_parts p;
	int err = 0;

	for (; root < nr; root++) {
		const char *s = fold_name(b->in, ids[root]);
		size_t len = fold_name_len(b->in, ids[root]);

		frame_parse(s, len, &p);
		if (!frame_is_root(p.kind))
			break;
		if (p.kind == FRAME_THREAD && ((k.thread = rp_thread(r, b, &p)) == RP_NONE ||
					       (k.tid = rp_tid(r, b, &p)) == RP_NONE))
			return -ENOMEM;
		if (p.kind == FRAME_PROCESS) {
			r->has_procs = true;
			if ((k.proc = rp_name(r, s, len)) == RP_NONE)
				return -ENOMEM;
		}
	}
	for (j = nr; j-- > root && py == RP_NONE;)
		if (id_kind(b, ids[j]) == FRAME_PYTHON)
			py = j;
	if (py != RP_NONE &&
	    (k.py = rp_name(r, fold_name(b->in, ids[py]), fold_name_len(b->in, ids[py]))) == RP_NONE)
		return -ENOMEM;
	j = py == RP_NONE ? root : py + 1;
	if (j < nr)
		err = rp_tail(r, b, ids + j, nr - j, py != RP_NONE, &k);
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
	if (!err)
		err = rel_add(&r->rel[REL_CAT_PROC], k.cat, k.proc, count);
	if (!err)
		err = rel_add(&r->rel[REL_CAT_TID], k.cat, k.tid, count);
	if (!err)
		err = rel_add(&r->rel[REL_PROC_PY], k.proc, k.py, count);
	if (!err)
		err = rel_add(&r->rel[REL_TID_PY], k.tid, k.py, count);
	if (!err) {
		r->cat_total[k.cat] += count;
		r->total += count;
		r->last_cat = k.cat;
	}
	return err;
}

/* ---- name ranks ---- */

struct name_key {
	const char *s;
	u32 len, id;
};

static int cmp_name_key(const void *a, const void *b)
{
	const struct name_key *x = a, *y = b;
	int c = memcmp(x->s, y->s, x->len < y->len ? x->len : y->len);

	if (c)
		return c;
	return x->len < y->len ? -1 : x->len > y->len;
}

/* rank[id]: the bytewise order of every name, the tie-break of the
 * tables report_out.c prints. 0 or -ENOMEM. */
static int rp_rank(struct perfspy_report *r)
{
	struct name_key *k = xreallocarray(NULL, r->nnames + 1, sizeof(*k));
	u32 i;

	r->rank = xreallocarray(NULL, r->nnames + 1, sizeof(*r->rank));
	if (!k || !r->rank) {
		free(k);
		return -ENOMEM;
	}
	for (i = 0; i < r->nnames; i++)
		k[i] = (struct name_key){ fold_name(r->names, i),
					  fold_name_len(r->names, i), i };
	xqsort(k, r->nnames, sizeof(*k), cmp_name_key);
	for (i = 0; i < r->nnames; i++)
		r->rank[k[i].id] = i;
	free(k);
	return 0;
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

/*
 * Which rules a frame can match, by the first byte of the part each kind
 * looks at (struct perfspy_report.cand): a rule whose glob starts with
 * plain text (rule_lit()) only where that byte starts its part, the
 * others (and `kernel`, in the function's rows) everywhere. Most
 * built-in rules are prefixes (170 of 180), so a frame tries a dozen of
 * them instead of all (issue 16).
 */
static int rp_index(struct perfspy_report *r)
{
	size_t w = (r->nrules + 63) / 64, i, k, c;
	u64 bit;

	r->cand_words = w;
	if (!w)
		return 0;
	r->cand = calloc(SUBJ_N * 257 * w, sizeof(*r->cand));
	if (!r->cand)
		return -ENOMEM;
	for (i = 0; i < r->nrules; i++) {
		const struct rp_rule *ru = &r->rules[i];

		bit = 1ull << (i & 63);
		k = (size_t)subj_of(ru->kind);
		if (ru->kind != RK_KERNEL && ru->lit_len && ru->lit_start) {
			c = (u8)ru->lit[0];
			r->cand[(k * 257 + c) * w + i / 64] |= bit;
			continue;
		}
		for (c = 0; c < 257; c++)
			r->cand[(k * 257 + c) * w + i / 64] |= bit;
	}
	return 0;
}

static int rp_fill(struct perfspy_report *r, const struct perfspy_folder *f)
{
	struct rp_build b = { .in = f };
	size_t i, nr = perfspy_folder__nr_stacks(f), nn;
	struct fold_ids buf = { 0 };
	const u32 *ids;
	u32 n;
	u64 count;
	int err = 0;

	r->cat_total = xreallocarray(NULL, r->ncats, sizeof(*r->cat_total));
	if (!r->cat_total)
		return -ENOMEM;
	memset(r->cat_total, 0, r->ncats * sizeof(*r->cat_total));
	nn = fold_nr_names(f);
	b.kinds = calloc(nn + 1, sizeof(*b.kinds));
	b.sys = calloc(nn + 1, sizeof(*b.sys));
	b.leaf = calloc(nn + 1, sizeof(*b.leaf));
	if (!b.kinds || !b.sys || !b.leaf)
		err = -ENOMEM;
	for (i = 0; !err && i < nr; i++) {
		err = fold_stack(f, i, &buf, &ids, &n, &count);
		if (!err)
			err = rp_stack(r, &b, ids, n, count);
		if (!err && r->stack_cat)
			r->stack_cat[i] = r->last_cat;
	}
	idmap_free(&b.cache[0]);
	idmap_free(&b.cache[1]);
	free(b.kinds);
	free(b.sys);
	free(b.leaf);
	free(b.buf);
	free(b.norm);
	fold_ids_free(&buf);
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
	size_t i;
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
	for (i = 0; i < REL_N; i++)
		htab_init(&r->rel[i].tab, sizeof(struct rel_slot), 256);
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
		r->no_process = rp_name(r, "(all processes)", 15);
		if (r->no_python == RP_NONE || r->no_thread == RP_NONE ||
		    r->no_process == RP_NONE)
			err = -ENOMEM;
	}
	if (!err)
		err = rp_parse_rules(r, OPTS_GET(opts, rules, NULL) ?
				     OPTS_GET(opts, rules, NULL) : default_rules);
	if (!err)
		err = rp_index(r);
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
		htab_free(&r->rel[i].tab);
	}
	perfspy_folder__free(r->names);
	arena_free(&r->pats);
	free(r->rules);
	free(r->cand);
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
