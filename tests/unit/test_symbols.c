// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests for libconv/frames/symbols.c.
 *
 * The fixtures in tests/unit/fixtures/ are compiled at run time into a
 * temporary directory and dlopen()ed, so expected values come from the
 * running process and the source text, not from another symbolizer:
 * addresses from the fixtures' own return-address probes and function
 * pointers, file offsets from dl_iterate_phdr(), lines from the
 * `LINE:name` markers in the sources. Also covered: the demangler on a
 * hand-written table, build-id checks and the build-id cache, --symfs,
 * pseudo and missing files, and kallsyms parsing from a fake file.
 * Exit 77 (skip) when no C compiler is available.
 */
#include "frames/symbols.h"
#include "test.h"

#include <dlfcn.h>
#include <elfutils/libdw.h>
#include <glob.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <link.h>
#include <stdarg.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define FIXTURE_BID "0123456789abcdef0123456789abcdef01234567"

static char tmpdir[256];
static char fixdir[512];

/* ---- helpers ---- */

struct log_cap {
	int warnings;
	char last[512];
};

static void log_fn(void *ctx, int level, const char *msg)
{
	struct log_cap *c = ctx;

	if (level <= LOG_WARN) {
		c->warnings++;
		snprintf(c->last, sizeof(c->last), "%s", msg);
	}
}

static int run(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

/* The line of the `LINE:name` marker in @src, 0 if absent. */
static int marker_line(const char *src, const char *name)
{
	char want[128], buf[1024];
	int line = 0;
	FILE *f = fopen(src, "r");

	snprintf(want, sizeof(want), "/* LINE:%s */", name);
	if (!f)
		return 0;
	while (fgets(buf, sizeof(buf), f)) {
		line++;
		if (strstr(buf, want)) {
			fclose(f);
			return line;
		}
	}
	fclose(f);
	return 0;
}

static const char *base(const char *p)
{
	const char *s = p ? strrchr(p, '/') : NULL;

	return s ? s + 1 : p;
}

struct off_query {
	const char *path;
	u64 addr, off;
	bool found;
};

static int phdr_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct off_query *q = arg;
	u64 rel;
	int i;

	(void)size;
	if (!info->dlpi_name || strcmp(info->dlpi_name, q->path))
		return 0;
	rel = q->addr - info->dlpi_addr;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD && rel >= ph->p_vaddr &&
		    rel < ph->p_vaddr + ph->p_filesz) {
			q->off = rel - ph->p_vaddr + ph->p_offset;
			q->found = true;
			return 1;
		}
	}
	return 0;
}

/* File offset of @addr inside the loaded object @path (as perf records
 * it: ip - map start + pgoff). */
static u64 file_off(const char *path, const void *addr)
{
	struct off_query q = { path, (u64)(uintptr_t)addr, 0, false };

	dl_iterate_phdr(phdr_cb, &q);
	T(q.found);
	return q.off;
}

static void hex_bid(const char *hex, u8 *out)
{
	size_t i;

	for (i = 0; i < 20; i++)
		sscanf(hex + 2 * i, "%2hhx", &out[i]);
}

static bool find_fixdir(void)
{
	const char *src = __FILE__, *env = getenv("PERFSPY_SRCDIR");
	const char *slash = strrchr(src, '/');
	struct stat st;

	snprintf(fixdir, sizeof(fixdir), "%.*s/fixtures",
		 slash ? (int)(slash - src) : 1, slash ? src : ".");
	if (!stat(fixdir, &st))
		return true;
	if (env)
		snprintf(fixdir, sizeof(fixdir), "%s/tests/unit/fixtures", env);
	return !stat(fixdir, &st);
}

/* ---- demangling ---- */

static void test_demangle(void)
{
	static const char *const cases[][2] = {
		{ "_ZN2at6native10add_kernelERNS_18TensorIteratorBaseERKN3c106ScalarE",
		  "at::native::add_kernel" },
		{ "_ZNK3foo3barclEv", "foo::bar::operator()" },
		{ "_ZN12_GLOBAL__N_13fooEv", "(anonymous namespace)::foo" },
		{ "_Z3maxIiET_S0_S0_", "max<int>" },
		{ "_ZNSt6vectorIiSaIiEE9push_backERKi",
		  "std::vector<int, std::allocator<int> >::push_back" },
		{ "_ZN3fooltERKS_", "foo::operator<" },
		{ "_ZN3foolsEi", "foo::operator<<" },
		{ "_ZN3fooptEv", "foo::operator->" },
		{ "_ZN3foocviEv", "foo::operator int" },
		{ "_ZN3foonwEm", "foo::operator new" },
		{ "_ZltIiEbRKT_S2_", "operator< <int>" },
		{ "_ZN3Foo3getIiEET_v", "Foo::get<int>" },
		{ "_Z3fooIiEPFvdEi", "foo<int>" },
		{ "_ZN3foo3bazIiEEPFT_vEv", "foo::baz<int>" },
		{ "_Z3fooi.cold", "foo" },
		{ "_ZN3foo3barEv.part.0.isra.0", "foo::bar" },
		{ "_ZNKR3foo3barEv", "foo::bar" },
		{ "_ZZ4mainENKUliE_clEi", "main::{lambda(int)#1}::operator()" },
		{ "_ZNSt17_Function_handlerIFviEZ4mainEUliE_E9_M_invokeERKSt9_Any_dataOi",
		  "std::_Function_handler<void (int), main::{lambda(int)#1}>::_M_invoke" },
		{ "_ZN3foo3barB5cxx11Ev", "foo::bar[abi:cxx11]" },
		{ "_ZN3FooD0Ev", "Foo::~Foo" },
		{ "_ZThn8_N3Foo3barEv", "non-virtual thunk to Foo::bar" },
		{ "_ZTV3Foo", "vtable for Foo" },
		{ "_ZN3foo3barE", "foo::bar" },
		{ "main", "main" },
		{ "foo.cold", "foo.cold" },
		{ "_Zxyz", "_Zxyz" },
		{ "_Z", "_Z" },
	};
	struct sym_ctx *ctx;
	const char *a, *b;
	size_t i;

	T_EQ_INT(sym_ctx_new(NULL, &ctx), 0);
	for (i = 0; i < ARRAY_SIZE(cases); i++)
		T_EQ_STR(sym_demangle(ctx, cases[i][0]), cases[i][1]);
	/* Cached: the same pointer comes back. */
	a = sym_demangle(ctx, cases[0][0]);
	b = sym_demangle(ctx, cases[0][0]);
	T(a == b);
	sym_ctx_free(ctx);
}

/* ---- the C fixture ---- */

struct fixture {
	char so[1024];
	char src[1024];
	void *h;
	void **ras;
	void **fns;
};

static bool build_fixture(struct fixture *fx, const char *cc,
			  const char *flags, const char *src, const char *tag)
{
	snprintf(fx->src, sizeof(fx->src), "%s/%s", fixdir, src);
	snprintf(fx->so, sizeof(fx->so), "%s/lib%s.so", tmpdir, tag);
	if (run("%s -O2 -g %s -shared -fPIC -Wl,--build-id=0x" FIXTURE_BID
		" -o %s %s 2>/dev/null", cc, flags, fx->so, fx->src)) {
		fprintf(stderr, "%s: cannot build with %s %s\n", tag, cc, flags);
		return false;
	}
	fx->h = dlopen(fx->so, RTLD_NOW | RTLD_LOCAL);
	T(fx->h != NULL);
	return fx->h != NULL;
}

static void expect_frame(const struct sym_frame *f, const char *func,
			 const char *file, int line)
{
	T(line > 0); /* the marker exists */
	T_EQ_STR(f->func, func);
	T_EQ_STR(base(f->file), file);
	T_EQ_INT(f->line, line);
}

static void check_c_frames(struct sym_ctx *ctx, struct sym_dso *dso,
			   struct fixture *fx)
{
	struct sym_frame fr[SYM_MAX_FRAMES];
	int n;

	/* leaf_inline inlined into outer_noinline */
	n = sym_resolve(ctx, dso, file_off(fx->so, fx->ras[0]), true, fr);
	T_EQ_INT(n, 2);
	if (n == 2) {
		expect_frame(&fr[0], "leaf_inline", "symtest.c",
			     marker_line(fx->src, "probe_in_leaf"));
		expect_frame(&fr[1], "outer_noinline", "symtest.c",
			     marker_line(fx->src, "call_leaf"));
	}
	/* two levels: leaf_inline in mid_inline in outer_two_levels */
	n = sym_resolve(ctx, dso, file_off(fx->so, fx->ras[2]), true, fr);
	T_EQ_INT(n, 3);
	if (n == 3) {
		expect_frame(&fr[0], "leaf_inline", "symtest.c",
			     marker_line(fx->src, "probe_in_leaf"));
		expect_frame(&fr[1], "mid_inline", "symtest.c",
			     marker_line(fx->src, "call_leaf_in_mid"));
		expect_frame(&fr[2], "outer_two_levels", "symtest.c",
			     marker_line(fx->src, "call_mid"));
	}
	n = sym_resolve(ctx, dso, file_off(fx->so, fx->ras[1]), true, fr);
	T_EQ_INT(n, 1);
	expect_frame(&fr[0], "global_fn", "symtest.c",
		     marker_line(fx->src, "global_fn"));
	/* Function entries (not return addresses); static included. */
	n = sym_resolve(ctx, dso, file_off(fx->so, fx->fns[0]), false, fr);
	T_EQ_INT(n, 1);
	expect_frame(&fr[0], "static_fn", "symtest.c",
		     marker_line(fx->src, "static_fn"));
	n = sym_resolve(ctx, dso, file_off(fx->so, fx->fns[1]), false, fr);
	T_EQ_INT(n, 1);
	T_EQ_STR(fr[0].func, "global_fn");
}

static void test_c_fixture(const char *cc, const char *flags, const char *tag)
{
	struct log_cap cap = { 0 };
	struct log_sink sink = { log_fn, &cap, LOG_DEBUG };
	struct sym_opts opts = { .kallsyms = "", .log = &sink,
				 .buildid_dir = tmpdir };
	struct sym_frame fr[SYM_MAX_FRAMES], fr2[SYM_MAX_FRAMES];
	struct sym_dso *dso, *dso2;
	struct sym_stats st;
	struct fixture fx;
	struct sym_ctx *ctx;
	int (*fn)(void);
	u64 miss;
	u8 bid[20];
	int n, n2;

	if (!build_fixture(&fx, cc, flags, "symtest.c", tag))
		return;
	fx.ras = dlsym(fx.h, "symtest_ras");
	fx.fns = dlsym(fx.h, "symtest_fns");
	*(void **)&fn = dlsym(fx.h, "symtest_run");
	T(fx.ras && fx.fns && fn);
	if (!fx.ras || !fx.fns || !fn)
		return;
	fn();
	hex_bid(FIXTURE_BID, bid);
	T_EQ_INT(sym_ctx_new(&opts, &ctx), 0);

	/* Without a build id, then with the right one. */
	T_EQ_INT(sym_dso_get(ctx, fx.so, NULL, 0, &dso), 0);
	check_c_frames(ctx, dso, &fx);
	T(sym_dso_found(ctx, dso));
	T_EQ_INT(sym_dso_get(ctx, fx.so, bid, sizeof(bid), &dso2), 0);
	T(dso2 != dso);
	check_c_frames(ctx, dso2, &fx);

	/* Symbol table only: the real function, no file or line. */
	sym_dso_set_no_dwarf(dso2, true);
	n = sym_resolve(ctx, dso2, file_off(fx.so, fx.ras[2]), true, fr);
	T_EQ_INT(n, 1);
	T_EQ_STR(fr[0].func, "outer_two_levels");
	T(fr[0].file == NULL && fr[0].line == 0);
	sym_dso_set_no_dwarf(dso2, false);
	T_EQ_INT(sym_resolve(ctx, dso2, file_off(fx.so, fx.ras[2]), true, fr), 3);

	/* Cached lookups return the same frames. */
	n = sym_resolve(ctx, dso, file_off(fx.so, fx.ras[2]), true, fr);
	n2 = sym_resolve(ctx, dso, file_off(fx.so, fx.ras[2]), true, fr2);
	T_EQ_INT(n, n2);
	T(n > 0 && !memcmp(fr, fr2, sizeof(fr[0]) * (size_t)n));
	/* So do uncached ones (stacks.c's), each resolved anew. */
	sym_ctx_stats(ctx, &st);
	miss = st.cache_misses;
	n2 = sym_resolve_once(ctx, dso, file_off(fx.so, fx.ras[2]), true, fr2);
	T_EQ_INT(n, n2);
	T(n > 0 && !memcmp(fr, fr2, sizeof(fr[0]) * (size_t)n));
	n2 = sym_resolve_once(ctx, dso, file_off(fx.so, fx.ras[2]), true, fr2);
	T_EQ_INT(n, n2);
	T(n > 0 && !memcmp(fr, fr2, sizeof(fr[0]) * (size_t)n));
	sym_ctx_stats(ctx, &st);
	T_EQ_INT(st.cache_misses, miss + 2);
	T(st.cache_misses < st.resolves);
	T_EQ_INT(st.dsos, 2);
	T_EQ_INT(cap.warnings, 0);
	sym_ctx_free(ctx);
	dlclose(fx.h);
}

/* ---- build ids, cache, symfs, missing files ---- */

/* Wrong build id, perf's build-id cache, padded ids, late build ids. */
static void check_build_ids(struct fixture *fx, u64 off, const char *cache)
{
	struct log_cap cap = { 0 };
	struct log_sink sink = { log_fn, &cap, LOG_WARN };
	struct sym_opts opts = { .kallsyms = "", .log = &sink,
				 .buildid_dir = cache };
	struct sym_frame fr[SYM_MAX_FRAMES];
	struct sym_dso *dso, *d2;
	u8 bid[24] = { 0 }, wrong[20];
	struct sym_ctx *ctx;

	hex_bid(FIXTURE_BID, bid);
	memset(wrong, 0x11, sizeof(wrong));
	T_EQ_INT(sym_ctx_new(&opts, &ctx), 0);

	/* Wrong build id for a real file: not used, warned once. */
	T_EQ_INT(sym_dso_get(ctx, fx->so, wrong, sizeof(wrong), &dso), 0);
	T_EQ_INT(sym_resolve(ctx, dso, off, false, fr), 0);
	T_EQ_INT(sym_resolve(ctx, dso, off + 1, false, fr), 0);
	T(!sym_dso_found(ctx, dso));
	T_EQ_INT(cap.warnings, 1);
	T(strstr(cap.last, "build id differs from the recorded one") != NULL);
	T(strstr(cap.last, fx->so) != NULL);

	/* Found through the build-id cache although the path is gone. */
	T_EQ_INT(sym_dso_get(ctx, "/nowhere/lib.so", bid, 20, &dso), 0);
	T_EQ_INT(sym_resolve(ctx, dso, off, false, fr), 1);
	T_EQ_STR(fr[0].func, "global_fn");
	/* Padded to 24 bytes as in perf.data: the same DSO. */
	T_EQ_INT(sym_dso_get(ctx, "/nowhere/lib.so", bid, 24, &d2), 0);
	T(d2 == dso);
	/* Build id set after creation (pipe mode). */
	T_EQ_INT(sym_dso_get(ctx, "/nowhere/other.so", NULL, 0, &dso), 0);
	sym_dso_set_build_id(dso, bid, 20);
	T_EQ_INT(sym_resolve(ctx, dso, off, false, fr), 1);
	T_EQ_INT(cap.warnings, 1);
	sym_ctx_free(ctx);
}

static void check_symfs(u64 off, const char *root)
{
	struct sym_opts opts = { .kallsyms = "", .buildid_dir = tmpdir,
				 .symfs = root };
	struct sym_frame fr[SYM_MAX_FRAMES];
	struct sym_dso *dso;
	struct sym_ctx *ctx;
	u8 bid[20];

	hex_bid(FIXTURE_BID, bid);
	T_EQ_INT(sym_ctx_new(&opts, &ctx), 0);
	T_EQ_INT(sym_dso_get(ctx, "/opt/libroot.so", bid, sizeof(bid), &dso), 0);
	T_EQ_INT(sym_resolve(ctx, dso, off, false, fr), 1);
	T_EQ_STR(fr[0].func, "global_fn");
	sym_ctx_free(ctx);
}

static void test_build_ids(void)
{
	char cache[512], root[512];
	struct fixture fx;
	u64 off;

	if (!build_fixture(&fx, "cc", "", "symtest.c", "bid"))
		return;
	fx.fns = dlsym(fx.h, "symtest_fns");
	T(fx.fns != NULL);
	if (!fx.fns)
		return;
	off = file_off(fx.so, fx.fns[1]);
	snprintf(cache, sizeof(cache), "%s/cache", tmpdir);
	snprintf(root, sizeof(root), "%s/root", tmpdir);
	/* perf's layout: .build-id/xx/rest -> ../../<path>/<bid>/elf */
	T_EQ_INT(run("mkdir -p %s/.build-id/01 %s/nowhere/lib.so/%s && "
		     "cp %s %s/nowhere/lib.so/%s/elf && "
		     "ln -s ../../nowhere/lib.so/%s %s/.build-id/01/%s && "
		     "mkdir -p %s/opt && cp %s %s/opt/libroot.so",
		     cache, cache, FIXTURE_BID, fx.so, cache, FIXTURE_BID,
		     FIXTURE_BID, cache, FIXTURE_BID + 2, root, fx.so, root), 0);
	check_build_ids(&fx, off, cache);
	check_symfs(off, root);
	dlclose(fx.h);
}

/*
 * Separate debug info: a stripped binary plus its `debug` file in perf's
 * cache gives DWARF lines; the debug file alone (objcopy
 * --only-keep-debug zeroes p_filesz) still gives names from .symtab.
 */
static void test_split_debug(void)
{
	char cache[600], dir[1400], path[1500];
	struct sym_opts opts = { .kallsyms = "", .buildid_dir = cache };
	struct sym_frame fr[SYM_MAX_FRAMES];
	struct sym_dso *dso;
	struct sym_ctx *ctx;
	struct fixture fx;
	u8 bid[20];
	u64 off;
	int n;

	if (!build_fixture(&fx, "cc", "", "symtest.c", "split"))
		return;
	fx.fns = dlsym(fx.h, "symtest_fns");
	T(fx.fns != NULL);
	if (!fx.fns)
		return;
	off = file_off(fx.so, fx.fns[0]); /* static_fn: only in .symtab */
	hex_bid(FIXTURE_BID, bid);
	snprintf(cache, sizeof(cache), "%s/splitcache", tmpdir);
	snprintf(dir, sizeof(dir), "%s/.build-id/01/%s", cache, FIXTURE_BID + 2);
	if (run("mkdir -p %s && objcopy --only-keep-debug %s %s/debug && "
		"strip -s -o %s/elf %s", dir, fx.so, dir, dir, fx.so)) {
		fprintf(stderr, "split: no objcopy/strip, skipped\n");
		dlclose(fx.h);
		return;
	}
	T_EQ_INT(sym_ctx_new(&opts, &ctx), 0);
	T_EQ_INT(sym_dso_get(ctx, "/gone/split.so", bid, sizeof(bid), &dso), 0);
	n = sym_resolve(ctx, dso, off, false, fr);
	T_EQ_INT(n, 1);
	expect_frame(&fr[0], "static_fn", "symtest.c",
		     marker_line(fx.src, "static_fn"));
	sym_ctx_free(ctx);

	snprintf(path, sizeof(path), "%s/elf", dir);
	T_EQ_INT(unlink(path), 0);
	T_EQ_INT(sym_ctx_new(&opts, &ctx), 0);
	T_EQ_INT(sym_dso_get(ctx, "/gone/split.so", bid, sizeof(bid), &dso), 0);
	n = sym_resolve(ctx, dso, off, false, fr);
	T(n >= 1);
	if (n >= 1)
		T_EQ_STR(fr[n - 1].func, "static_fn");
	T(sym_dso_found(ctx, dso));
	sym_ctx_free(ctx);
	dlclose(fx.h);
}

/* The section header of @name in the ELF file @path, false if none. */
static bool find_scn(const char *path, const char *name, GElf_Shdr *out)
{
	int fd = open(path, O_RDONLY);
	Elf_Scn *scn = NULL;
	bool found = false;
	const char *n;
	size_t shstr;
	Elf *elf;

	if (fd < 0)
		return false;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (elf && !elf_getshdrstrndx(elf, &shstr))
		while (!found && (scn = elf_nextscn(elf, scn)))
			found = gelf_getshdr(scn, out) &&
				(n = elf_strptr(elf, shstr, out->sh_name)) &&
				!strcmp(n, name);
	if (elf)
		elf_end(elf);
	close(fd);
	return found;
}

/*
 * Compressed debug sections (cc -gz=zlib: SHF_COMPRESSED), which
 * symbols.c inflates itself before libdw opens the file: the frames are
 * those of the uncompressed build (test_c_fixture "c_gz"), and a
 * damaged .debug_info stream costs the DSO its DWARF, not its ELF
 * names, exactly as when libelf inflated it.
 */
static void test_compressed(void)
{
	char cache[600], dir[1400], path[1500];
	struct sym_opts opts = { .kallsyms = "", .buildid_dir = cache };
	struct sym_frame fr[SYM_MAX_FRAMES];
	struct sym_dso *dso;
	struct sym_ctx *ctx;
	struct fixture fx;
	GElf_Shdr sh;
	u8 bid[20], b;
	FILE *f;
	u64 off;
	int n;

	if (!build_fixture(&fx, "cc", "-gz=zlib", "symtest.c", "gz_bad"))
		return;
	fx.fns = dlsym(fx.h, "symtest_fns");
	T(fx.fns != NULL);
	T(find_scn(fx.so, ".debug_info", &sh));
	T(sh.sh_flags & SHF_COMPRESSED);
	if (!fx.fns || !(sh.sh_flags & SHF_COMPRESSED) || sh.sh_size < 64) {
		dlclose(fx.h);
		return;
	}
	off = file_off(fx.so, fx.fns[0]); /* static_fn */
	hex_bid(FIXTURE_BID, bid);
	snprintf(cache, sizeof(cache), "%s/gzcache", tmpdir);
	snprintf(dir, sizeof(dir), "%s/.build-id/01/%s", cache, FIXTURE_BID + 2);
	snprintf(path, sizeof(path), "%s/elf", dir);
	T_EQ_INT(run("mkdir -p %s && cp %s %s", dir, fx.so, path), 0);

	/* Intact: DWARF file and line. */
	T_EQ_INT(sym_ctx_new(&opts, &ctx), 0);
	T_EQ_INT(sym_dso_get(ctx, "/gone/gz.so", bid, sizeof(bid), &dso), 0);
	n = sym_resolve(ctx, dso, off, false, fr);
	T_EQ_INT(n, 1);
	if (n == 1)
		expect_frame(&fr[0], "static_fn", "symtest.c",
			     marker_line(fx.src, "static_fn"));
	sym_ctx_free(ctx);

	/* One byte flipped in the middle of the deflate stream. */
	f = fopen(path, "r+b");
	T(f != NULL);
	if (!f) {
		dlclose(fx.h);
		return;
	}
	T(!fseek(f, (long)(sh.sh_offset + sh.sh_size / 2), SEEK_SET) &&
	  fread(&b, 1, 1, f) == 1);
	b ^= 0xff;
	T(!fseek(f, (long)(sh.sh_offset + sh.sh_size / 2), SEEK_SET) &&
	  fwrite(&b, 1, 1, f) == 1);
	T_EQ_INT(fclose(f), 0);
	T_EQ_INT(sym_ctx_new(&opts, &ctx), 0);
	T_EQ_INT(sym_dso_get(ctx, "/gone/gz.so", bid, sizeof(bid), &dso), 0);
	n = sym_resolve(ctx, dso, off, false, fr);
	T_EQ_INT(n, 1);
	if (n == 1) {
		T_EQ_STR(fr[0].func, "static_fn");
		T(fr[0].file == NULL);
	}
	sym_ctx_free(ctx);
	dlclose(fx.h);
}

/* What the split test needs: symbols.c's ZSPLIT_MIN. */
#define SPLIT_MIN ((size_t)256 << 10)

/* The inflated size of each SHF_COMPRESSED section of @path that
 * symbols.c inflates (its used_dwarf_scn()): the largest in *@big, the
 * others summed in *@rest. */
static void compressed_sizes(const char *path, size_t *big, size_t *rest)
{
	static const char *const used[] = {
		".debug_info", ".debug_abbrev", ".debug_line", ".debug_str",
		".debug_line_str", ".debug_rnglists", ".debug_aranges",
		".debug_addr", ".debug_str_offsets", ".debug_ranges", ".debug_frame"
	};
	int fd = open(path, O_RDONLY);
	Elf_Scn *scn = NULL;
	const char *n;
	size_t shstr, i, all = 0;
	GElf_Shdr sh;
	GElf_Chdr ch;
	Elf *elf;

	*big = *rest = 0;
	if (fd < 0)
		return;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (elf && !elf_getshdrstrndx(elf, &shstr))
		while ((scn = elf_nextscn(elf, scn)))
			if (gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_COMPRESSED) &&
			    (n = elf_strptr(elf, shstr, sh.sh_name)) && gelf_getchdr(scn, &ch))
				for (i = 0; i < sizeof(used) / sizeof(used[0]); i++)
					if (!strcmp(n, used[i])) {
						all += ch.ch_size;
						if (ch.ch_size > *big)
							*big = ch.ch_size;
					}
	*rest = all - *big;
	if (elf)
		elf_end(elf);
	close(fd);
}

/*
 * Compressed sections big enough that symbols.c inflates the largest on
 * a thread of its own and the others at once on this one (both parts
 * at least SPLIT_MIN): symtest.c with a generated pad.c of struct types
 * whose long member names fill .debug_str and .debug_info. The frames,
 * files and lines are those of the uncompressed build.
 */
static void test_compressed_split(void)
{
	char pad[600], flags[700], so[600];
	size_t big, rest;
	FILE *f;
	int i, j;

	snprintf(pad, sizeof(pad), "%s/pad.c", tmpdir);
	f = fopen(pad, "w");
	T(f != NULL);
	if (!f)
		return;
	for (i = 0; i < 2500; i++) {
		fprintf(f, "struct pad_type_%d {", i);
		for (j = 0; j < 8; j++)
			fprintf(f, " long pad_member_%d_%d_named_at_length_for_debug_str;", i, j);
		fprintf(f, " };\nstruct pad_type_%d pad_var_%d;\n", i, i);
	}
	T_EQ_INT(fclose(f), 0);
	snprintf(flags, sizeof(flags), "-gz=zlib %s", pad);
	test_c_fixture("cc", flags, "c_gz_split");
	snprintf(so, sizeof(so), "%s/libc_gz_split.so", tmpdir);
	compressed_sizes(so, &big, &rest);
	T(big >= SPLIT_MIN);
	T(rest >= SPLIT_MIN);
}

/* dlopen() @so and make a symbolizer with a DSO for it; NULL (checked)
 * when either fails. */
static void *open_lib(const char *so, const struct sym_opts *opts, struct sym_ctx **ctx,
		      struct sym_dso **dso)
{
	void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);

	T(h != NULL);
	if (!h)
		return NULL;
	T_EQ_INT(sym_ctx_new(opts, ctx), 0);
	T_EQ_INT(sym_dso_get(*ctx, so, NULL, 0, dso), 0);
	return h;
}

static int resolve_sym(struct sym_ctx *ctx, struct sym_dso *dso,
		       const char *so, void *h, const char *sym, u64 delta,
		       struct sym_frame *fr)
{
	char *addr = dlsym(h, sym);

	T(addr != NULL);
	if (!addr)
		return -1;
	return sym_resolve(ctx, dso, file_off(so, addr + delta), false, fr);
}

/*
 * One library of a GCC object, whose CU .debug_aranges lists, and a
 * clang object, whose CU it does not (clang writes none): the clang
 * function's file and line come from the CU table built from the CU
 * DIEs, which leaves out the CUs aranges lists (dwarf_lines.c).
 */
static void test_mixed_aranges(void)
{
	struct sym_opts opts = { .kallsyms = "", .buildid_dir = tmpdir };
	struct sym_frame fr[SYM_MAX_FRAMES];
	char so[600];
	struct sym_dso *dso;
	struct sym_ctx *ctx;
	int (*call)(int);
	void *h;
	int n;

	snprintf(so, sizeof(so), "%s/libmixar.so", tmpdir);
	if (run("clang --version >/dev/null 2>&1") ||
	    run("cd %s && printf 'int mix_gcc(int x)\\n{\\n\\treturn x * 3 + 1;\\n}\\n' > mixg.c && "
		"printf 'int mix_clang(int x)\\n{\\n\\treturn x * 5 + 2;\\n}\\n"
		"int mix_call(int x)\\n{\\n\\treturn mix_clang(x) + 1;\\n}\\n' > mixc.c && "
		"cc -O1 -g -fPIC -c mixg.c -o mixg.o && clang -O1 -g -fPIC -c mixc.c -o mixc.o && "
		"cc -shared -o %s mixg.o mixc.o && "
		"readelf -S mixg.o | grep -q debug_aranges && ! readelf -S mixc.o | grep -q debug_aranges",
		tmpdir, so)) {
		fprintf(stderr, "mixed aranges: no clang or no aranges from cc, skipped\n");
		return;
	}
	if (!(h = open_lib(so, &opts, &ctx, &dso)))
		return;
	n = resolve_sym(ctx, dso, so, h, "mix_gcc", 1, fr);
	T_EQ_INT(n, 1);
	T_EQ_STR(fr[0].func, "mix_gcc");
	T(fr[0].file && strstr(fr[0].file, "mixg.c"));
	n = resolve_sym(ctx, dso, so, h, "mix_clang", 1, fr);
	T_EQ_INT(n, 1);
	T_EQ_STR(fr[0].func, "mix_clang");
	T(fr[0].file && strstr(fr[0].file, "mixc.c"));
	T(fr[0].line >= 2 && fr[0].line <= 3);
	/* The library runs: the clang function is called through the PLT. */
	*(void **)&call = dlsym(h, "mix_call");
	T(call && call(1) == 8);
	sym_ctx_free(ctx);
	dlclose(h);
}

/* Alias choice, symbol versions and zero-sized labels (symalias.c). */
static void test_aliases(void)
{
	struct sym_opts opts = { .kallsyms = "", .buildid_dir = tmpdir };
	char so[600], stripped[600], map[600], src[1024];
	struct sym_frame fr[SYM_MAX_FRAMES];
	struct sym_dso *dso, *sdso;
	struct sym_ctx *ctx;
	void *h;
	int n;

	snprintf(so, sizeof(so), "%s/libalias.so", tmpdir);
	snprintf(stripped, sizeof(stripped), "%s/libalias-stripped.so", tmpdir);
	snprintf(map, sizeof(map), "%s/alias.map", tmpdir);
	snprintf(src, sizeof(src), "%s/symalias.c", fixdir);
	if (run("printf 'VERS_1 { global: *; };\\n' > %s && "
		"cc -O2 -g -shared -fPIC -Wl,--version-script=%s -o %s %s && "
		"strip -s -o %s %s", map, map, so, src, stripped, so)) {
		fprintf(stderr, "aliases: cannot build, skipped\n");
		return;
	}
	if (!(h = open_lib(so, &opts, &ctx, &dso)))
		return;
	T_EQ_INT(sym_dso_get(ctx, stripped, NULL, 0, &sdso), 0);
	/* Global over weak, unversioned over `vfn@@VERS_1`, then the
	 * longer name: the same answer with and without .symtab. */
	n = resolve_sym(ctx, dso, so, h, "vfn_impl", 1, fr);
	T_EQ_INT(n, 1);
	T_EQ_STR(fr[0].func, "vfn_impl");
	n = sym_resolve(ctx, sdso, file_off(so, (char *)dlsym(h, "vfn_impl") + 1),
			false, fr);
	T_EQ_INT(n, 1);
	T_EQ_STR(fr[0].func, "vfn_impl");
	if (dlsym(h, "asm_fn")) {
		/* Sized beats a longer zero-sized label at the same address. */
		T_EQ_INT(resolve_sym(ctx, dso, so, h, "asm_fn", 1, fr), 1);
		T_EQ_STR(fr[0].func, "asm_fn");
		T(fr[0].file == NULL);
		/* Past asm_fn's size: no symbol there. */
		T_EQ_INT(resolve_sym(ctx, dso, so, h, "asm_fn", 8, fr), 0);
		/* A zero-sized label extends to the next symbol. */
		T_EQ_INT(resolve_sym(ctx, dso, so, h, "asm_tail", 4, fr), 1);
		T_EQ_STR(fr[0].func, "asm_tail");
	}
	sym_ctx_free(ctx);
	dlclose(h);
}

/*
 * A stripped library's .init and .fini: crti.o's and crtn.o's code has
 * no CFI, so neither a symbol nor an FDE names it, and a sample in it
 * (a library's first code, run while its pages fault in) printed as an
 * absolute address. They are named _init and _fini, as the unstripped
 * .symtab names them. @vaddr[k] and @end[k]: .init (0) and .fini (1)
 * from the section headers, read here with libelf.
 */
static bool initfini_ranges(const char *path, u64 vaddr[2], u64 end[2], u64 *delta)
{
	Elf_Scn *scn = NULL;
	size_t shstr, i, nph;
	GElf_Shdr sh;
	GElf_Phdr ph;
	bool ok = false;
	Elf *e;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return false;
	vaddr[0] = vaddr[1] = end[0] = end[1] = 0;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (e && !elf_getshdrstrndx(e, &shstr) && !elf_getphdrnum(e, &nph)) {
		while ((scn = elf_nextscn(e, scn))) {
			const char *name;

			if (!gelf_getshdr(scn, &sh) ||
			    !(name = elf_strptr(e, shstr, sh.sh_name)))
				continue;
			for (i = 0; i < 2; i++)
				if (!strcmp(name, i ? ".fini" : ".init")) {
					vaddr[i] = sh.sh_addr;
					end[i] = sh.sh_addr + sh.sh_size;
				}
		}
		/* The executable segment's offset - address. */
		for (i = 0; i < nph; i++)
			if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD &&
			    (ph.p_flags & PF_X) && vaddr[0] >= ph.p_vaddr &&
			    vaddr[0] < ph.p_vaddr + ph.p_filesz) {
				*delta = ph.p_offset - ph.p_vaddr;
				ok = vaddr[0] && vaddr[1];
			}
	}
	if (e)
		elf_end(e);
	close(fd);
	return ok;
}

static void test_initfini(void)
{
	struct sym_opts opts = { .kallsyms = "", .buildid_dir = tmpdir };
	char so[600], stripped[600], src[1024];
	struct sym_frame fr[SYM_MAX_FRAMES];
	struct sym_dso *dso, *sdso;
	struct sym_ctx *ctx;
	u64 at[2], end[2], delta = 0, s, e;
	bool built;
	int k, n;

	snprintf(so, sizeof(so), "%s/libinitfini.so", tmpdir);
	snprintf(stripped, sizeof(stripped), "%s/libinitfini-stripped.so", tmpdir);
	snprintf(src, sizeof(src), "%s/initfini.c", tmpdir);
	/* cc is there (main() checked): a library that cannot be built,
	 * or has no .init and .fini (every glibc toolchain's crti.o and
	 * crtn.o give them), is a failure, not a skip. */
	built = !run("printf 'int f(int x) { return x * 3; }\\n' > %s && "
		     "cc -O2 -shared -fPIC -o %s %s && strip -s -o %s %s",
		     src, so, src, stripped, so) &&
		initfini_ranges(stripped, at, end, &delta);
	T(built);
	if (!built)
		return;
	T_EQ_INT(sym_ctx_new(&opts, &ctx), 0);
	if (!ctx)
		return;
	T_EQ_INT(sym_dso_get(ctx, so, NULL, 0, &dso), 0);
	T_EQ_INT(sym_dso_get(ctx, stripped, NULL, 0, &sdso), 0);
	for (k = 0; k < 2 && dso && sdso; k++) {
		const char *want = k ? "_fini" : "_init";
		u64 last = end[k] - 1;

		/* What this test is about: no FDE there. */
		T_EQ_INT(sym_dso_fde_range(ctx, sdso, at[k], &s, &e), 0);
		/* The unstripped library's .symtab says the same. */
		n = sym_resolve(ctx, dso, at[k] + delta, false, fr);
		T_EQ_INT(n, 1);
		if (n == 1)
			T_EQ_STR(fr[0].func, want);
		/* Its first and last byte, and a return address just
		 * past its start (the call's byte is one back). */
		n = sym_resolve(ctx, sdso, at[k] + delta, false, fr);
		T_EQ_INT(n, 1);
		if (n == 1) {
			T_EQ_STR(fr[0].func, want);
			T(fr[0].file == NULL);
		}
		n = sym_resolve(ctx, sdso, last + delta, false, fr);
		T_EQ_INT(n, 1);
		if (n == 1)
			T_EQ_STR(fr[0].func, want);
		n = sym_resolve(ctx, sdso, at[k] + 1 + delta, true, fr);
		T_EQ_INT(n, 1);
		if (n == 1)
			T_EQ_STR(fr[0].func, want);
	}
	/* Just past .init, inside .plt (which has an FDE): not _init. */
	if (sdso && end[0] < at[1]) {
		n = sym_resolve(ctx, sdso, end[0] + 0x10 + delta, false, fr);
		T(n <= 0 || !fr[0].func || strcmp(fr[0].func, "_init"));
	}
	sym_ctx_free(ctx);
}

static void test_missing(void)
{
	static const char *const names[] = {
		"/nonexistent/libfoo.so", "[vdso]", "[vsyscall]", "//anon",
		"[heap]", "[kernel.kallsyms]_text", "/dev/zero (deleted)",
		"relative.so",
	};
	struct sym_frame fr[SYM_MAX_FRAMES];
	struct sym_opts opts = { .kallsyms = "", .buildid_dir = tmpdir };
	struct sym_dso *dso, *again;
	struct sym_ctx *ctx;
	char map[64];
	size_t i;

	T_EQ_INT(sym_ctx_new(&opts, &ctx), 0);
	for (i = 0; i < ARRAY_SIZE(names); i++) {
		T_EQ_INT(sym_dso_get(ctx, names[i], NULL, 0, &dso), 0);
		T_EQ_INT(sym_resolve(ctx, dso, 0x1000, false, fr), 0);
		T_EQ_INT(sym_resolve(ctx, dso, 0x1000, true, fr), 0);
		T(!sym_dso_found(ctx, dso));
		T_EQ_STR(sym_dso_name(dso), names[i]);
		T_EQ_INT(sym_dso_get(ctx, names[i], NULL, 0, &again), 0);
		T(again == dso);
	}
	T_EQ_INT(sym_resolve(ctx, NULL, 0, false, fr), 0);
	/* A JIT map is never read as a binary, even if it is an ELF file. */
	snprintf(map, sizeof(map), "/tmp/perf-%d.map", (int)getpid());
	if (!run("cp /proc/self/exe %s 2>/dev/null", map)) {
		T_EQ_INT(sym_dso_get(ctx, map, NULL, 0, &dso), 0);
		T(!sym_dso_found(ctx, dso));
		unlink(map);
	}
	sym_ctx_free(ctx);
}

/* ---- C++ ---- */

static void test_cpp_fixture(const char *cxx, const char *tag)
{
	struct sym_opts opts = { .kallsyms = "", .buildid_dir = tmpdir };
	struct sym_frame fr[SYM_MAX_FRAMES];
	static const struct {
		const char *func, *marker;
	} want[] = {
		{ "ns::Widget::method", "method" },
		{ "ns::Box<int>::get", "box_get" },
		{ NULL, NULL }, /* inlined peek, checked below */
		{ "ns::twice<double>", "twice" },
		{ "ns::(anonymous namespace)::anon_fn", "anon_fn" },
		{ "ns::Functor::operator()", "functor" },
	};
	struct sym_dso *dso;
	struct sym_ctx *ctx;
	struct fixture fx;
	int (*fn)(void);
	size_t i;
	int n;

	if (!build_fixture(&fx, cxx, "", "symtest.cpp", tag))
		return;
	fx.ras = dlsym(fx.h, "symtest_cpp_ras");
	*(void **)&fn = dlsym(fx.h, "symtest_cpp_run");
	T(fx.ras && fn);
	if (!fx.ras || !fn)
		return;
	fn();
	T_EQ_INT(sym_ctx_new(&opts, &ctx), 0);
	T_EQ_INT(sym_dso_get(ctx, fx.so, NULL, 0, &dso), 0);
	for (i = 0; i < ARRAY_SIZE(want); i++) {
		if (!want[i].func)
			continue;
		n = sym_resolve(ctx, dso, file_off(fx.so, fx.ras[i]), true, fr);
		T_EQ_INT(n, 1);
		expect_frame(&fr[0], want[i].func, "symtest.cpp",
			     marker_line(fx.src, want[i].marker));
	}
	/* ns::Box<int>::peek, always_inline, in ns::use_peek */
	n = sym_resolve(ctx, dso, file_off(fx.so, fx.ras[2]), true, fr);
	T_EQ_INT(n, 2);
	if (n == 2) {
		expect_frame(&fr[0], "ns::Box<int>::peek", "symtest.cpp",
			     marker_line(fx.src, "box_peek"));
		expect_frame(&fr[1], "ns::use_peek", "symtest.cpp",
			     marker_line(fx.src, "call_peek"));
	}
	sym_ctx_free(ctx);
	dlclose(fx.h);
}

/* ---- the system libc (and its detached debug info when installed) ---- */

static int find_libc(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	if (info->dlpi_name && strstr(info->dlpi_name, "/libc.so.6")) {
		snprintf(arg, 512, "%s", info->dlpi_name);
		return 1;
	}
	return 0;
}

/* libc's path into @libc (512 bytes) and its qsort, from libc's own
 * scope (sanitizers interpose qsort); NULL if not found. */
static void *libc_qsort(char *libc)
{
	void *h, *qs;

	libc[0] = '\0';
	dl_iterate_phdr(find_libc, libc);
	h = *libc ? dlopen(libc, RTLD_NOW | RTLD_NOLOAD) : NULL;
	qs = h ? dlsym(h, "qsort") : NULL;
	if (h)
		dlclose(h);
	return qs;
}

static void test_libc(void)
{
	struct sym_opts opts = { .kallsyms = "", .buildid_dir = tmpdir };
	struct sym_frame fr[SYM_MAX_FRAMES];
	char libc[512];
	struct sym_dso *dso;
	struct sym_ctx *ctx;
	void *qs = libc_qsort(libc);
	int n;

	if (!qs)
		return;
	T_EQ_INT(sym_ctx_new(&opts, &ctx), 0);
	T_EQ_INT(sym_dso_get(ctx, libc, NULL, 0, &dso), 0);
	n = sym_resolve(ctx, dso, file_off(libc, qs), false, fr);
	T(n >= 1);
	if (n >= 1) {
		T(fr[n - 1].func && strstr(fr[n - 1].func, "qsort"));
		/* With libc6-dbg the line comes from DWARF. */
		if (!access("/usr/lib/debug/.build-id", F_OK) && fr[0].file)
			T(fr[0].line > 0);
	}
	sym_ctx_free(ctx);
}

/* ---- DSOs opened ahead (dso_ahead.c) ---- */

struct log_all {
	char text[8192];
	size_t len;
};

static void log_all_fn(void *ctx, int level, const char *msg)
{
	struct log_all *l = ctx;
	int n = snprintf(l->text + l->len, sizeof(l->text) - l->len, "%d %s\n", level, msg);

	if (n > 0 && l->len + (size_t)n < sizeof(l->text))
		l->len += (size_t)n;
}

/*
 * What one pass sees: DSOs named (sym_dso_get) and resolved in an
 * order, with their messages, counters, frames and list. @ahead: the
 * DSOs are first given to sym_open_ahead() (@drain: and the thread let
 * finish, so it opened all of them; else the resolves race it).
 */
struct ahead_run {
	struct log_all log;
	struct log_sink sink; /* into log, for the pass's ctx */
	struct sym_stats st;
	char frames[2048];
	size_t listed, listed_before;
};

/* A pass's ctx (@kallsyms: "" for none), logging everything into @r,
 * which starts empty. */
static struct sym_ctx *run_start(struct ahead_run *r, const char *kallsyms)
{
	struct sym_opts opts = { .kallsyms = kallsyms, .buildid_dir = tmpdir,
				 .no_debuginfod = true };
	struct sym_ctx *ctx = NULL;

	memset(r, 0, sizeof(*r));
	r->sink = (struct log_sink){ .fn = log_all_fn, .ctx = &r->log, .level = LOG_DEBUG };
	opts.log = &r->sink;
	T_EQ_INT(sym_ctx_new(&opts, &ctx), 0);
	return ctx;
}

/* The pass's DSO list and counters into @r; @ctx freed. */
static void run_end(struct sym_ctx *ctx, struct ahead_run *r)
{
	const struct sym_dso_info *list;

	T_EQ_INT(sym_dso_list(ctx, &list, &r->listed), 0);
	sym_ctx_stats(ctx, &r->st);
	sym_ctx_free(ctx);
}

/* Resolve @off in @d and append its frames and whether @d was found to
 * @r->frames at @pos; the new end. */
static size_t resolve_into_run(struct sym_ctx *ctx, struct sym_dso *d, u64 off,
			       struct ahead_run *r, size_t pos)
{
	struct sym_frame fr[SYM_MAX_FRAMES];
	int k = sym_resolve(ctx, d, off, false, fr), m;

	T(k >= 0);
	for (m = 0; m < k; m++)
		pos += (size_t)snprintf(r->frames + pos, sizeof(r->frames) - pos, "%s:%s:%d;",
					fr[m].func ? fr[m].func : "?",
					fr[m].file ? fr[m].file : "?", fr[m].line);
	return pos + (size_t)snprintf(r->frames + pos, sizeof(r->frames) - pos, "|%d\n",
				      sym_dso_found(ctx, d));
}

static void ahead_pass(const struct sym_ahead_dso *v, size_t n, const u64 *offs,
		       bool ahead, bool drain, size_t front, struct ahead_run *r)
{
	struct sym_ctx *ctx = run_start(r, "");
	const struct sym_dso_info *list;
	size_t i, pos = 0;

	if (ahead) {
		T_EQ_INT(sym_open_ahead(ctx, v, n, front), 0);
		/* Made for the thread, not named yet: not listed. */
		T_EQ_INT(sym_dso_list(ctx, &list, &r->listed_before), 0);
		if (drain)
			sym_ahead_drain(ctx);
	}
	/* Named and used last first: the thread works first first. */
	for (i = n; i-- > 0;) {
		struct sym_dso *d;

		T_EQ_INT(sym_dso_get(ctx, v[i].name, v[i].bid, v[i].bid_size, &d), 0);
		sym_dso_set_no_dwarf(d, v[i].no_dwarf);
		pos = resolve_into_run(ctx, d, offs[i], r, pos);
	}
	run_end(ctx, r);
}

/* @r, a pass with the DSOs given to the thread, saw what @ref (without
 * it) saw: drained, the thread opened all four; raced, whoever came
 * first. */
static void ahead_same(const struct ahead_run *ref, struct ahead_run *r, bool drained)
{
	if (drained)
		T_EQ_INT(r->st.dsos_ahead, 4);
	else
		T(r->st.dsos_ahead <= 4);
	T_EQ_INT(r->listed_before, 0);
	T_EQ_STR(r->log.text, ref->log.text);
	T_EQ_STR(r->frames, ref->frames);
	r->st.dsos_ahead = 0;
	r->st.dsos_helped = 0;
	T(!memcmp(&r->st, &ref->st, sizeof(ref->st)));
	T_EQ_INT(r->listed, 4);
}

/* The names sym_ahead_order() gives after a drain, joined by ','. */
static void order_of(const struct sym_ahead_dso *v, size_t n, size_t front, char *out,
		     size_t size)
{
	struct sym_opts opts = { .kallsyms = "", .buildid_dir = tmpdir, .no_debuginfod = true };
	const char *names[8];
	struct sym_ctx *ctx;
	size_t i, k, pos = 0;

	out[0] = '\0';
	T_EQ_INT(sym_ctx_new(&opts, &ctx), 0);
	T_EQ_INT(sym_open_ahead(ctx, v, n, front), 0);
	sym_ahead_drain(ctx);
	k = sym_ahead_order(ctx, names, 8);
	for (i = 0; i < k; i++)
		pos += (size_t)snprintf(out + pos, size - pos, "%s%s", i ? "," : "",
					strrchr(names[i], '/') + 1);
	sym_ctx_free(ctx);
}

/*
 * The thread's order (dso_ahead.c): from the list's start; with @front,
 * up to that many from its end first, through the first DSO whose debug
 * sections inflate to AHEAD_BIG or more (libc's, with libc6-dbg:
 * @libc_dwarf), then the rest from the start.
 */
static void ahead_order(const struct sym_ahead_dso *v4, const char *libc, bool libc_dwarf)
{
	static const u8 other_bid[20] = { 0xfe, 0xed };
	struct sym_ahead_dso v[4] = {
		v4[1], { "/nonexistent/libother.so", other_bid, sizeof(other_bid), false },
		v4[0], { "/nonexistent/libfront.so", other_bid, sizeof(other_bid), false } };
	const char *lc = strrchr(libc, '/') + 1, *fx = strrchr(v4[1].name, '/') + 1;
	char got[1024], want[1024];

	order_of(v, 4, 0, got, sizeof(got));
	snprintf(want, sizeof(want), "%s,libother.so,%s,libfront.so", fx, lc);
	T_EQ_STR(got, want);
	order_of(v, 4, 1, got, sizeof(got));
	snprintf(want, sizeof(want), "libfront.so,%s,libother.so,%s", fx, lc);
	T_EQ_STR(got, want);
	order_of(v, 4, 4, got, sizeof(got));
	if (libc_dwarf)
		snprintf(want, sizeof(want), "libfront.so,%s,%s,libother.so", lc, fx);
	else
		snprintf(want, sizeof(want), "libfront.so,%s,libother.so,%s", lc, fx);
	T_EQ_STR(got, want);
}

/*
 * Whichever thread opens a DSO, the conversion sees the same: the same
 * messages in the same order (said at first use), counters, frames and
 * DSO list. Four DSOs: the fixture (its build id), the fixture under a
 * build id it does not have (a warning, a mismatch counted, not found),
 * libc (symbols and, with libc6-dbg, DWARF), a missing file.
 */
/* test_ahead()'s four DSOs into @v and the offsets resolved in them into
 * @offs, libc first or (@libc_last) last, the missing file at the other
 * end; the fixture built under @tag. False (nothing to test) without
 * libc or a compiler. */
struct ahead_dsos {
	struct fixture fx;
	char libc[512], wrong[1100], missing[64];
	u8 bid[20];
	struct sym_ahead_dso v[4];
	u64 offs[4];
};

static bool ahead_dsos(struct ahead_dsos *a, const char *tag, bool libc_last)
{
	static const u8 other_bid[20] = { 0xfe, 0xed };
	void *qs = libc_qsort(a->libc);
	size_t i, lc = libc_last ? 3 : 0, ms = 3 - lc;

	if (!qs || !build_fixture(&a->fx, "cc", "", "symtest.c", tag))
		return false;
	a->fx.fns = dlsym(a->fx.h, "symtest_fns");
	T(a->fx.fns != NULL);
	if (!a->fx.fns)
		return false;
	for (i = 0; i < sizeof(a->bid); i++)
		sscanf(FIXTURE_BID + 2 * i, "%2hhx", &a->bid[i]);
	snprintf(a->wrong, sizeof(a->wrong), "%s", a->fx.so);
	snprintf(a->missing, sizeof(a->missing), "/nonexistent/lib%s.so", tag);
	a->v[lc] = (struct sym_ahead_dso){ a->libc, NULL, 0, false };
	a->v[libc_last ? 2 : 1] = (struct sym_ahead_dso){ a->fx.so, a->bid, sizeof(a->bid),
							  false };
	a->v[libc_last ? 1 : 2] = (struct sym_ahead_dso){ a->wrong, other_bid,
							  sizeof(other_bid), false };
	a->v[ms] = (struct sym_ahead_dso){ a->missing, other_bid, sizeof(other_bid), false };
	a->offs[lc] = file_off(a->libc, qs);
	a->offs[1] = a->offs[2] = file_off(a->fx.so, a->fx.fns[1]);
	a->offs[ms] = 0x1000;
	return true;
}

static void test_ahead(void)
{
	struct ahead_run ref, run1, run2, run3, run4;
	static struct ahead_dsos a;
	const struct sym_ahead_dso *v = a.v;
	const u64 *offs = a.offs;

	if (!ahead_dsos(&a, "ahead", false))
		return;

	ahead_pass(v, 4, offs, false, false, 0, &ref);
	ahead_pass(v, 4, offs, true, true, 0, &run1);
	ahead_pass(v, 4, offs, true, false, 0, &run2);
	/* The namer's order (the list's end first) changes none of it. */
	ahead_pass(v, 4, offs, true, true, 4, &run3);
	ahead_pass(v, 4, offs, true, false, 2, &run4);
	/* The reference itself: all four said something, two were found,
	 * one build was refused with a warning. */
	T(strstr(ref.log.text, "build id differs") != NULL);
	T(strstr(ref.log.text, "/nonexistent/libahead.so") != NULL);
	T_EQ_INT(ref.st.dsos_found, 2);
	T_EQ_INT(ref.st.dsos_missing, 2);
	T(ref.st.build_id_mismatch >= 1);
	T_EQ_INT(ref.st.dsos_ahead, 0);
	T(strstr(ref.frames, "qsort") != NULL);
	T_EQ_INT(ref.listed, 4);
	ahead_same(&ref, &run1, true);
	ahead_same(&ref, &run2, false);
	ahead_same(&ref, &run3, true);
	ahead_same(&ref, &run4, false);
	ahead_order(v, a.libc, strstr(ref.frames, "qsort:?:") == NULL);
	dlclose(a.fx.h);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	T(f != NULL);
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

/*
 * One pass that waits for the thread (docs/design.md §6.27): libc first
 * in the thread's order, asked for once the thread is likely inflating
 * its DWARF (libc6-dbg: 15-30 ms), the other three after. While it
 * waits, the helper opens those three and the kernel's symbols load
 * (@kallsyms, a file removed before the first kernel lookup: a name
 * then shows they were loaded during the wait). @r as ahead_pass().
 */
static void wait_pass(const struct sym_ahead_dso *v, const u64 *offs, const char *kallsyms,
		      struct ahead_run *r, bool *kernel_named)
{
	struct sym_ctx *ctx = run_start(r, kallsyms);
	struct timespec ts = { 0, 3 * 1000 * 1000 };
	struct sym_frame fr[SYM_MAX_FRAMES];
	size_t i, pos = 0;

	T_EQ_INT(sym_open_ahead(ctx, v, 4, 4), 0);
	sym_kernel_prefetch(ctx, kallsyms != NULL);
	nanosleep(&ts, NULL);
	for (i = 4; i-- > 0;) {
		struct sym_dso *d;

		T_EQ_INT(sym_dso_get(ctx, v[i].name, v[i].bid, v[i].bid_size, &d), 0);
		pos = resolve_into_run(ctx, d, offs[i], r, pos);
	}
	*kernel_named = false;
	if (kallsyms) {
		/* Not said before its first use, wherever it was loaded. */
		T(strstr(r->log.text, "kallsyms") == NULL);
		unlink(kallsyms);
		*kernel_named = sym_kernel_resolve(ctx, 0xffffffff81000050ULL, fr) == 1;
	}
	run_end(ctx, r);
}

/*
 * Waiting for the thread (docs/design.md §6.27): a helper opens the
 * queued DSOs, from the list's end, and the kernel's symbols load; the
 * pass sees what it sees without a thread (test_ahead()'s DSOs), the
 * kallsyms messages come at their first use. With libc6-dbg the wait
 * is long enough to assert that both happened within a few tries.
 */
static void test_ahead_wait(void)
{
	char ksyms[600], missing[600];
	struct ahead_run ref, run;
	static struct ahead_dsos a;
	const struct sym_ahead_dso *v = a.v;
	const u64 *offs = a.offs;
	bool dwarf, named = false, helped = false, named_now;
	int tries;

	/* libc last: the front of the thread's order (ahead_order()). */
	if (!ahead_dsos(&a, "wait", true))
		return;

	/* The reference: no thread, the same order of use. */
	ahead_pass(v, 4, offs, false, false, 0, &ref);
	dwarf = strstr(ref.frames, "qsort:?:") == NULL;
	snprintf(ksyms, sizeof(ksyms), "%s/kallsyms-wait", tmpdir);
	for (tries = 0; tries < 5 && !(helped && named); tries++) {
		write_file(ksyms, "ffffffff81000000 T _text\n"
				  "ffffffff81000000 T startup_64\n"
				  "ffffffff81002000 T _etext\n");
		wait_pass(v, offs, ksyms, &run, &named_now);
		/* The helper's opens are among those said and counted as
		 * opened ahead. */
		T(run.st.dsos_helped <= run.st.dsos_ahead);
		helped |= run.st.dsos_helped > 0;
		named |= named_now;
		ahead_same(&ref, &run, false);
	}
	if (dwarf) {
		T(helped);
		T(named);
	}
	/* An unreadable kallsyms: its message at the first lookup,
	 * after the DSOs' messages, as without the wait. */
	snprintf(missing, sizeof(missing), "%s/no-such-kallsyms", tmpdir);
	wait_pass(v, offs, missing, &run, &named_now);
	T(!named_now);
	T(strstr(run.log.text, "no-such-kallsyms") != NULL);
	dlclose(a.fx.h);
}

/* ---- kallsyms ---- */

/*
 * sym_kernel_prefetch() then sym_while_idle(): the table is read there
 * (a waiting thread's spare time, session.c's builder), not at the
 * first kernel address. Shown by replacing the file in between: what
 * was read at idle names the address, and a context that was never
 * idle reads the new file at its first use (the control).
 */
static void test_kernel_idle(void)
{
	char path[600], next[600];
	struct sym_opts opts = { .kallsyms = path };
	struct sym_frame fr;
	struct sym_ctx *idle, *lazy;

	snprintf(path, sizeof(path), "%s/kallsyms-idle", tmpdir);
	snprintf(next, sizeof(next), "%s/kallsyms-idle.next", tmpdir);
	write_file(path, "ffffffff81000000 T _text\n"
			 "ffffffff81000000 T startup_64\n"
			 "ffffffff81002000 T _etext\n");
	write_file(next, "ffffffff81000000 T _text\n"
			 "ffffffff81000000 T replaced_fn\n"
			 "ffffffff81002000 T _etext\n");
	T_EQ_INT(sym_ctx_new(&opts, &idle), 0);
	T_EQ_INT(sym_ctx_new(&opts, &lazy), 0);
	if (!idle || !lazy)
		goto out;
	sym_while_idle(idle); /* nothing asked for: nothing read */
	sym_kernel_prefetch(idle, true);
	sym_while_idle(idle);
	sym_while_idle(idle); /* once */
	T_EQ_INT(rename(next, path), 0);
	T(sym_kernel_usable(idle, 0xffffffff81000000ULL));
	T_EQ_INT(sym_kernel_resolve(idle, 0xffffffff81000050ULL, &fr), 1);
	T_EQ_STR(fr.func, "startup_64");
	T(sym_kernel_usable(lazy, 0xffffffff81000000ULL));
	T_EQ_INT(sym_kernel_resolve(lazy, 0xffffffff81000050ULL, &fr), 1);
	T_EQ_STR(fr.func, "replaced_fn");
out:
	sym_ctx_free(idle);
	sym_ctx_free(lazy);
}

static void test_kallsyms(void)
{
	char path[600], zero[600];
	struct sym_opts opts = { .kallsyms = path };
	struct sym_frame fr;
	struct sym_ctx *ctx;

	snprintf(path, sizeof(path), "%s/kallsyms", tmpdir);
	snprintf(zero, sizeof(zero), "%s/kallsyms0", tmpdir);
	write_file(path,
		   "0000000000000000 A fixed_percpu_data\n"
		   "ffffffff81000000 T _text\n"
		   "ffffffff81000000 T startup_64\n"
		   "ffffffff81000100 t secondary_startup_64\n"
		   "ffffffff81000200 D some_data\n"
		   "ffffffff81001000 W weak_fn\n"
		   "ffffffff81001000 t __weak_fn_alias\n"
		   "ffffffff81002000 T _etext\n"
		   "ffffffffc0001000 t mod_fn\t[mymod]\n"
		   "garbage line\n");
	write_file(zero, "0000000000000000 T _text\n"
			 "0000000000000000 t foo\n");

	T_EQ_INT(sym_ctx_new(&opts, &ctx), 0);
	T(sym_kernel_usable(ctx, 0));
	T(sym_kernel_usable(ctx, 0xffffffff81000000ULL));
	T(!sym_kernel_usable(ctx, 0xffffffff82000000ULL));
	T_EQ_INT(sym_kernel_resolve(ctx, 0xffffffff81000050ULL, &fr), 1);
	T_EQ_STR(fr.func, "startup_64");
	T(fr.file == NULL && fr.line == 0);
	T_EQ_INT(sym_kernel_resolve(ctx, 0xffffffff81000250ULL, &fr), 1);
	T_EQ_STR(fr.func, "secondary_startup_64"); /* data is not text */
	T_EQ_INT(sym_kernel_resolve(ctx, 0xffffffff81001004ULL, &fr), 1);
	T_EQ_STR(fr.func, "__weak_fn_alias"); /* non-weak wins */
	T_EQ_INT(sym_kernel_resolve(ctx, 0xffffffffc0001010ULL, &fr), 1);
	T_EQ_STR(fr.func, "mod_fn");
	T_EQ_INT(sym_kernel_resolve(ctx, 0xffffffff80000000ULL, &fr), 0);
	T_EQ_INT(sym_kernel_resolve(ctx, 0xffffffffc0100000ULL, &fr), 0);
	sym_ctx_free(ctx);

	opts.kallsyms = zero; /* kptr_restrict */
	T_EQ_INT(sym_ctx_new(&opts, &ctx), 0);
	T(!sym_kernel_usable(ctx, 0));
	T_EQ_INT(sym_kernel_resolve(ctx, 0x10, &fr), 0);
	sym_ctx_free(ctx);

	opts.kallsyms = ""; /* disabled */
	T_EQ_INT(sym_ctx_new(&opts, &ctx), 0);
	T(!sym_kernel_usable(ctx, 0));
	sym_ctx_free(ctx);

	opts.kallsyms = "/nonexistent/kallsyms";
	T_EQ_INT(sym_ctx_new(&opts, &ctx), 0);
	T(!sym_kernel_usable(ctx, 0));
	T_EQ_INT(sym_kernel_resolve(ctx, 0xffffffff81000050ULL, &fr), 0);
	sym_ctx_free(ctx);

}

/*
 * kallsyms.c reads the file in 256 KiB pieces and parses 16-digit
 * addresses eight digits at a time: lines split across pieces, a line
 * longer than a piece, a last line without '\n', upper-case and short
 * addresses, and 16-character fields that are not all hex digits (those
 * go to strtoull, which stops at the first non-digit: no symbol).
 */
static void test_kallsyms_pieces(void)
{
	char path[600], want[64];
	struct sym_opts opts = { .kallsyms = path };
	struct sym_frame fr;
	struct sym_ctx *ctx;
	static char longname[300 * 1024 + 1];
	unsigned i, n = 40000;
	FILE *f;

	snprintf(path, sizeof(path), "%s/kallsyms-big", tmpdir);
	f = fopen(path, "w");
	T(f != NULL);
	if (!f)
		return;
	memset(longname, 'x', sizeof(longname) - 1);
	/* 40000 lines of 40 bytes: 1.6 MB, six read pieces. */
	for (i = 0; i < n; i++)
		fprintf(f, i % 3 ? "ffffffff%08x T fn_%016u\n" :
			"FFFFFFFF%08X t fn_%016u\n", 0x81000000u + 16 * i, i);
	fprintf(f, "ffffffff%08x t %s\n", 0x81000000u + 16 * n, longname);
	fprintf(f, "ffffffff8g000000 T not_hex_g\n"); /* strtoull stops at g */
	fprintf(f, "ffffffff8100000 T fifteen_digits_no\n"); /* 15, then ' ' */
	fprintf(f, "fffffffff:000000 T colon\n");
	fprintf(f, "ffffffff\xb1" "0000000 T high_byte\n");
	fprintf(f, "c0000000 T short_addr\n");
	fprintf(f, "ffffffffd0000000 T no_newline");
	fclose(f);

	T_EQ_INT(sym_ctx_new(&opts, &ctx), 0);
	T(sym_kernel_usable(ctx, 0));
	for (i = 0; i < n; i += 997) {
		snprintf(want, sizeof(want), "fn_%016u", i);
		T_EQ_INT(sym_kernel_resolve(ctx, 0xffffffff81000000ULL + 16 * i + 3, &fr), 1);
		T_EQ_STR(fr.func, want);
	}
	T_EQ_INT(sym_kernel_resolve(ctx, 0xffffffff81000000ULL + 16 * n + 1, &fr), 1);
	T(fr.func && strlen(fr.func) == sizeof(longname) - 1);
	/* "ffffffff8100000 " is 15 digits: the address is 0xffffffff8100000. */
	T_EQ_INT(sym_kernel_resolve(ctx, 0xffffffff8100000ULL + 1, &fr), 1);
	T_EQ_STR(fr.func, "fifteen_digits_no");
	T_EQ_INT(sym_kernel_resolve(ctx, 0xc0000001ULL, &fr), 1);
	T_EQ_STR(fr.func, "short_addr");
	T_EQ_INT(sym_kernel_resolve(ctx, 0xffffffffd0000001ULL, &fr), 1);
	T_EQ_STR(fr.func, "no_newline");
	/* Not symbols: the addresses after the long name resolve to it or
	 * to nothing, never to not_hex_g / colon / high_byte. */
	T_EQ_INT(sym_kernel_resolve(ctx, 0xffffffff8f000001ULL, &fr), 1);
	T(fr.func && strlen(fr.func) == sizeof(longname) - 1);
	sym_ctx_free(ctx);
}

/*
 * Names at one address are ranked the same whether kallsyms.c copies them
 * (a pipe or /proc: read once) or reads them back from a regular file
 * when needed; here the aliases are not next to each other in the file.
 */
static void test_kallsyms_ties(void)
{
	static const char text[] =
		"ffffffff81001000 W weak_fn\n"
		"ffffffff81000000 T _text\n"
		"ffffffff81002000 T other\n"
		"ffffffff81001000 t __weak_fn_alias\n"
		"ffffffff81000000 T startup_64\n"
		"ffffffff81003000 t same_len_b\n"
		"ffffffff81003000 t same_len_a\n";
	char path[600], fifo[600];
	struct sym_frame fr;
	struct sym_ctx *ctx;
	int pass;

	snprintf(path, sizeof(path), "%s/kallsyms-ties", tmpdir);
	snprintf(fifo, sizeof(fifo), "%s/kallsyms-fifo", tmpdir);
	write_file(path, text);
	T_EQ_INT(mkfifo(fifo, 0600), 0);
	for (pass = 0; pass < 2; pass++) {
		struct sym_opts opts = { .kallsyms = pass ? fifo : path };
		pid_t child = -1;

		if (pass && (child = fork()) == 0) {
			FILE *f = fopen(fifo, "w");

			if (f) {
				fputs(text, f);
				fclose(f);
			}
			_exit(0);
		}
		T_EQ_INT(sym_ctx_new(&opts, &ctx), 0);
		T(sym_kernel_usable(ctx, 0xffffffff81000000ULL));
		T_EQ_INT(sym_kernel_resolve(ctx, 0xffffffff81000010ULL, &fr), 1);
		T_EQ_STR(fr.func, "startup_64");
		T_EQ_INT(sym_kernel_resolve(ctx, 0xffffffff81001010ULL, &fr), 1);
		T_EQ_STR(fr.func, "__weak_fn_alias");
		T_EQ_INT(sym_kernel_resolve(ctx, 0xffffffff81002010ULL, &fr), 1);
		T_EQ_STR(fr.func, "other");
		T_EQ_INT(sym_kernel_resolve(ctx, 0xffffffff81003010ULL, &fr), 1);
		T_EQ_STR(fr.func, "same_len_a"); /* strcmp decides last */
		/* Twice: the second answer comes from the cache. */
		T_EQ_INT(sym_kernel_resolve(ctx, 0xffffffff81002020ULL, &fr), 1);
		T_EQ_STR(fr.func, "other");
		sym_ctx_free(ctx);
		/* A writer the parent never read from would block forever;
		 * one that was read to its end has exited already. */
		if (child > 0) {
			kill(child, SIGKILL);
			waitpid(child, NULL, 0);
		}
	}
	unlink(fifo);
}

/* Open descriptors that name an unlinked file in @dir. */
static int fds_deleted_in(const char *dir)
{
	char path[64], link[1024];
	size_t n = strlen(dir);
	int fd, count = 0;
	ssize_t len;

	for (fd = 0; fd < 1024; fd++) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		len = readlink(path, link, sizeof(link) - 1);
		if (len <= 0)
			continue;
		link[len] = '\0';
		if (!strncmp(link, dir, n) && link[n] == '/' && strstr(link, "(deleted)"))
			count++;
	}
	return count;
}

/*
 * The running kernel, when /proc/kallsyms has real addresses (root).
 * Its names are read from an unnamed copy in $TMPDIR (kern_tmp_copy);
 * where the copy cannot be made (TMPDIR missing) or written (a file size
 * limit: EFBIG, as on a full disk) they are kept in memory, and every
 * way names every sampled address the same.
 */
#define PROC_PROBES 64
static void test_proc_kallsyms(void)
{
	static const char *const modes[] = { "copy", "no dir", "write fails" };
	char *names[PROC_PROBES] = { 0 }, dir[600], type, name[256];
	unsigned long long addr = 0, sched = 0, probe[PROC_PROBES];
	const char *old = getenv("TMPDIR");
	char *saved = old ? strdup(old) : NULL;
	struct rlimit rl0, rl;
	size_t nprobe = 0, line = 0, i;
	struct sym_frame fr;
	struct sym_ctx *ctx;
	FILE *f = fopen("/proc/kallsyms", "r");
	int m;

	while (f && fscanf(f, "%llx %c %255s%*[^\n]", &addr, &type, name) == 3) {
		if (type != 'T' && type != 't')
			continue;
		if (!strcmp(name, "schedule"))
			sched = addr;
		/* Addresses spread over the table, one byte in. */
		if (addr && line++ % 1500 == 0 && nprobe < PROC_PROBES)
			probe[nprobe++] = addr + 1;
	}
	if (f)
		fclose(f);
	snprintf(dir, sizeof(dir), "%s/ktmp", tmpdir);
	T_EQ_INT(mkdir(dir, 0700), 0);
	T_EQ_INT(getrlimit(RLIMIT_FSIZE, &rl0), 0);
	for (m = 0; m < 3; m++) {
		setenv("TMPDIR", m == 1 ? "/nonexistent/perfspy-test" : dir, 1);
		if (m == 2) {
			signal(SIGXFSZ, SIG_IGN);
			rl = rl0;
			rl.rlim_cur = 4096;
			T_EQ_INT(setrlimit(RLIMIT_FSIZE, &rl), 0);
		}
		T_EQ_INT(sym_ctx_new(NULL, &ctx), 0);
		if (!sym_kernel_usable(ctx, 0) || !sched) {
			sym_ctx_free(ctx); /* no real addresses: not root */
			break;
		}
		if (m == 2)
			T_EQ_INT(setrlimit(RLIMIT_FSIZE, &rl0), 0);
		/* The copy is open while the context lives, and only then. */
		if (fds_deleted_in(dir) != (m == 0))
			fprintf(stderr, "kallsyms (%s): %d copies open\n", modes[m],
				fds_deleted_in(dir));
		T_EQ_INT(fds_deleted_in(dir), m == 0);
		T_EQ_INT(sym_kernel_resolve(ctx, sched + 1, &fr), 1);
		T_EQ_STR(fr.func, "schedule");
		for (i = 0; i < nprobe; i++) {
			int r = sym_kernel_resolve(ctx, probe[i], &fr);

			T(r == 0 || r == 1);
			if (!m)
				names[i] = strdup(r == 1 && fr.func ? fr.func : "-");
			else
				T_EQ_STR(r == 1 && fr.func ? fr.func : "-", names[i] ? names[i] : "");
		}
		sym_ctx_free(ctx);
		T_EQ_INT(fds_deleted_in(dir), 0);
	}
	setrlimit(RLIMIT_FSIZE, &rl0);
	signal(SIGXFSZ, SIG_DFL);
	if (saved)
		setenv("TMPDIR", saved, 1);
	else
		unsetenv("TMPDIR");
	free(saved);
	for (i = 0; i < nprobe; i++)
		free(names[i]);
	rmdir(dir);
}

/*
 * Code without a symbol is named by its FDE (symbols.c: fde_end() reads
 * the range from the FDE itself). Its answer must be libdw's: at every
 * FDE's start, last byte and end, sym_dso_fde_range() holds the address
 * exactly when dwarf_cfi_addrframe() finds a frame for it, in real
 * stripped binaries (C with 'zR', C++ with 'zPLR' CIEs, a compiler).
 */
struct fde_libs {
	char *path[32];
	size_t n;
};

static void fde_add(struct fde_libs *l, const char *path)
{
	if (l->n < ARRAY_SIZE(l->path) && (l->path[l->n] = strdup(path)))
		l->n++;
}

static int fde_lib(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	if (info->dlpi_name && info->dlpi_name[0] == '/')
		fde_add(arg, info->dlpi_name);
	return 0;
}

static void fde_check(struct sym_ctx *ctx, const char *path, unsigned *libs,
		      unsigned long *checked)
{
	struct sym_dso *dso;
	Elf_Scn *scn = NULL;
	Dwarf_CFI *cfi = NULL;
	size_t shstr, i, n, step;
	const unsigned char *p = NULL;
	unsigned long bad = 0;
	GElf_Shdr sh = { 0 };
	Elf *elf;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_getshdrstrndx(elf, &shstr) || !(cfi = dwarf_getcfi_elf(elf)))
		goto out;
	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *d;

		if (gelf_getshdr(scn, &sh) &&
		    !strcmp(elf_strptr(elf, shstr, sh.sh_name) ?: "", ".eh_frame_hdr") &&
		    (d = elf_rawdata(scn, NULL)) && d->d_size >= 12) {
			p = d->d_buf;
			break;
		}
	}
	/* GNU ld's layout only (the one symbols.c reads), little-endian */
	if (!p || p[0] != 1 || p[2] != 0x03 || p[3] != 0x3b)
		goto out;
	n = (size_t)p[8] | (size_t)p[9] << 8 | (size_t)p[10] << 16 | (size_t)p[11] << 24;
	step = n > 4000 ? n / 4000 : 1;
	T_EQ_INT(sym_dso_get(ctx, path, NULL, 0, &dso), 0);
	for (i = 0; i < n; i += step) {
		int32_t loc;
		u64 at[3], s, e;
		int k, nat = 1;

		memcpy(&loc, p + 12 + i * 8, 4);
		at[0] = sh.sh_addr + (u64)(int64_t)loc;
		/* With a range: its last byte and its end too. */
		if (sym_dso_fde_range(ctx, dso, at[0], &s, &e) == 1) {
			at[1] = e - 1;
			at[2] = e;
			nat = 3;
		}
		for (k = 0; k < nat; k++) {
			Dwarf_Frame *f = NULL;
			int ours = sym_dso_fde_range(ctx, dso, at[k], &s, &e) == 1;
			int theirs = !dwarf_cfi_addrframe(cfi, at[k], &f);

			free(f);
			(*checked)++;
			if (ours != theirs && bad++ < 3)
				fprintf(stderr, "fde: %s %#llx: ours %d libdw %d\n", path,
					(unsigned long long)at[k], ours, theirs);
		}
	}
	T_EQ_INT(bad, 0);
	(*libs)++;
out:
	if (cfi)
		dwarf_cfi_end(cfi);
	if (elf)
		elf_end(elf);
	close(fd);
}

static void test_fde_ranges(void)
{
	struct sym_opts opts = { .kallsyms = "", .buildid_dir = tmpdir };
	struct fde_libs libs_seen = { { NULL }, 0 };
	unsigned long checked = 0;
	unsigned libs = 0;
	struct sym_ctx *ctx;
	glob_t g;
	size_t i;

	dl_iterate_phdr(fde_lib, &libs_seen);
	if (!glob("/usr/lib/gcc/*/*/cc1", 0, NULL, &g)) {
		fde_add(&libs_seen, g.gl_pathv[0]);
		globfree(&g);
	}
	T_EQ_INT(sym_ctx_new(&opts, &ctx), 0);
	for (i = 0; i < libs_seen.n; i++) {
		fde_check(ctx, libs_seen.path[i], &libs, &checked);
		free(libs_seen.path[i]);
	}
	sym_ctx_free(ctx);
	fprintf(stderr, "fde: %u binaries, %lu addresses agree with libdw\n", libs, checked);
	T(libs >= 3);
}

int main(void)
{
	const char *t = getenv("TMPDIR");

	setenv("LC_ALL", "C", 1);
	snprintf(tmpdir, sizeof(tmpdir), "%s/perfspy-symtest-XXXXXX",
		 t && *t ? t : "/tmp");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	test_demangle();
	test_kallsyms();
	test_kernel_idle();
	test_kallsyms_pieces();
	test_kallsyms_ties();
	test_proc_kallsyms();
	test_missing();
	test_fde_ranges();
	if (!find_fixdir() || run("cc --version >/dev/null 2>&1")) {
		/* Skip only if everything that could run passed. */
		fprintf(stderr, "test_symbols: no fixtures or no cc, skipping\n");
		run("rm -rf %s", tmpdir);
		return test_failed_checks ? 1 : 77;
	}
	test_c_fixture("cc", "", "c_default");
	test_c_fixture("cc", "-gdwarf-4", "c_dwarf4");
	test_c_fixture("cc", "-gz=zlib", "c_gz");
	test_compressed();
	test_compressed_split();
	if (!run("clang --version >/dev/null 2>&1"))
		test_c_fixture("clang", "", "c_clang");
	test_build_ids();
	test_split_debug();
	test_aliases();
	test_initfini();
	test_mixed_aranges();
	if (!run("c++ --version >/dev/null 2>&1"))
		test_cpp_fixture("c++", "cpp_default");
	if (!run("clang++ --version >/dev/null 2>&1"))
		test_cpp_fixture("clang++", "cpp_clang");
	test_libc();
	test_ahead();
	test_ahead_wait();
	run("rm -rf %s", tmpdir);
	TEST_MAIN_END();
}
