// SPDX-License-Identifier: GPL-2.0
/*
 * Which files the symbolizer reads for a DSO (symbols.h): perf's build-id
 * cache, the distribution's detached debug info by build id, then the
 * recorded path under symfs and as it is; for [vdso], the cache's copy or
 * this process's own vDSO image.
 *
 * Invariants:
 * - A candidate whose NT_GNU_BUILD_ID differs from the recorded build id
 *   is never used (counted, and reported once per DSO through the log
 *   sink); a file without the note cannot be checked and is accepted.
 * - Pseudo maps ([heap], //anon, memfd:, JIT maps...) are never opened.
 * - Files are opened read-only and their descriptors closed at once
 *   (libelf keeps what it needs); the Elf handles belong to the DSO.
 * - Finding nothing is not an error: the DSO then resolves to nothing.
 */
#include "symbols_int.h"

#include <errno.h>
#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#define SYSTEM_DEBUG_DIR "/usr/lib/debug"

/*
 * Names that are not files (perf's map__new() / is_no_dso_memory(),
 * tools/perf/util/map.c): [vdso], [heap], [stack], [kernel.kallsyms]_text,
 * //anon, /dev/zero, SysV shm, memfd, hugepages, and JIT symbol maps.
 */
static bool is_pseudo(const char *n)
{
	size_t len = strlen(n);

	if (n[0] != '/' || n[1] == '/')
		return true;
	if (!strncmp(n, "/dev/", 5) || !strncmp(n, "/SYSV", 5) ||
	    !strncmp(n, "/anon_hugepage", 14) || !strncmp(n, "/memfd:", 7))
		return true;
	return !strncmp(n, "/tmp/perf-", 10) && len > 4 &&
	       !strcmp(n + len - 4, ".map");
}

/*
 * Open @path as an ELF file, or NULL (absent, not a regular file, not
 * ELF). ELF_C_FDREAD makes libelf read whatever it has not mmapped and
 * stop using the descriptor (libelf.h, elf_cntl), so the fd is closed at
 * once and hundreds of DSOs cost no descriptors.
 */
static Elf *elf_open_path(const char *path)
{
	struct stat st;
	Elf *elf;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return NULL;
	}
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf && (elf_kind(elf) != ELF_K_ELF || elf_cntl(elf, ELF_C_FDREAD))) {
		elf_end(elf);
		elf = NULL;
	}
	close(fd);
	return elf;
}

size_t sym_bid_trim(const u8 *b, size_t n)
{
	while (n && !b[n - 1])
		n--;
	return n;
}

/* perf.data pads build ids with zeros (20 bytes in 24-byte fields,
 * docs/perf-data-format.md HEADER_BUILD_ID), so compare modulo that padding. */
bool sym_bid_equal(const u8 *a, size_t na, const u8 *b, size_t nb)
{
	na = sym_bid_trim(a, na);
	nb = sym_bid_trim(b, nb);
	return na == nb && !memcmp(a, b, na);
}

/* False (and one warning per DSO) if @elf's NT_GNU_BUILD_ID note differs
 * from the recorded one. A file without the note cannot be checked. */
static bool bid_ok(struct sym_ctx *ctx, struct sym_dso *dso, Elf *elf,
		   const char *path)
{
	const void *p;
	ssize_t n;

	if (!dso->bid_size)
		return true;
	n = dwelf_elf_gnu_build_id(elf, &p);
	if (n <= 0 || sym_bid_equal(p, (size_t)n, dso->bid, dso->bid_size))
		return true;
	ctx->stats.build_id_mismatch++;
	if (!dso->warned) {
		dso->warned = true;
		pr_warn(ctx->log,
			"%s: build id differs from the recorded one, not used",
			path);
	}
	return false;
}

/* @path for @dso, logged at info level (`-v`, issue 15): one line per
 * file looked for, found or why not. @what: "binary" or "debug file". */
static Elf *try_elf_as(struct sym_ctx *ctx, struct sym_dso *dso,
		       const char *path, const char *what)
{
	Elf *elf;
	int e;

	errno = 0;
	elf = elf_open_path(path);
	e = errno;
	if (elf && !bid_ok(ctx, dso, elf, path)) {
		elf_end(elf);
		pr_info(ctx->log, "%s: %s %s: another build, not used", dso->name, what, path);
		return NULL;
	}
	if (elf)
		pr_info(ctx->log, "%s: %s %s: found", dso->name, what, path);
	else
		pr_info(ctx->log, "%s: %s %s: %s", dso->name, what, path,
			e ? strerror(e) : "not an ELF file");
	return elf;
}

static Elf *try_elf(struct sym_ctx *ctx, struct sym_dso *dso, const char *path)
{
	return try_elf_as(ctx, dso, path, "binary");
}

static Elf *try_dbg(struct sym_ctx *ctx, struct sym_dso *dso, const char *path)
{
	return try_elf_as(ctx, dso, path, "debug file");
}

static void bid_hex(const u8 *b, size_t n, char *out)
{
	static const char hex[] = "0123456789abcdef";
	size_t i;

	/* perf stores 20-byte ids in 24-byte fields: drop the padding. */
	while (n > 20 && !b[n - 1])
		n--;
	for (i = 0; i < n; i++) {
		out[2 * i] = hex[b[i] >> 4];
		out[2 * i + 1] = hex[b[i] & 15];
	}
	out[2 * n] = '\0';
}

static bool path_join(char *buf, size_t size, const char *a, const char *b)
{
	int n = snprintf(buf, size, "%s%s", a, b);

	return n >= 0 && (size_t)n < size;
}

/*
 * perf's build-id cache (tools/perf/util/build-id.c): <dir>/.build-id/xx/
 * rest is a symlink to <dir>/<path>/<build id>/, a directory holding `elf`
 * (or `vdso` for [vdso]) and possibly `debug` (debuginfod); older perf
 * versions linked straight to the file.
 */
static void locate_cache(struct sym_ctx *ctx, struct sym_dso *dso)
{
	char hex[2 * BUILD_ID_MAX + 1], dir[PATH_MAX], path[PATH_MAX];
	struct stat st;
	int n;

	bid_hex(dso->bid, dso->bid_size, hex);
	n = snprintf(dir, sizeof(dir), "%s/.build-id/%.2s/%s",
		     ctx->buildid_dir, hex, hex + 2);
	if (n < 0 || (size_t)n >= sizeof(dir))
		return;
	if (stat(dir, &st)) {
		pr_info(ctx->log, "%s: build-id cache %s: %s", dso->name, dir, strerror(errno));
		return;
	}
	if (!S_ISDIR(st.st_mode)) {
		dso->elf = try_elf(ctx, dso, dir);
		return;
	}
	if (path_join(path, sizeof(path), dir, "/elf"))
		dso->elf = try_elf(ctx, dso, path);
	if (!dso->elf && path_join(path, sizeof(path), dir, "/vdso"))
		dso->elf = try_elf(ctx, dso, path);
	if (path_join(path, sizeof(path), dir, "/debug"))
		dso->dbg = try_dbg(ctx, dso, path);
}

/* The distribution's detached debug info, by build id (Debian's -dbg and
 * -dbgsym packages; gdb's "Separate Debug Files" build-id method): under
 * symfs first (another machine's root, as perf's --symfs also prefixes
 * its debug directories), then this machine's. */
static void locate_debug(struct sym_ctx *ctx, struct sym_dso *dso)
{
	char hex[2 * BUILD_ID_MAX + 1], path[PATH_MAX];
	const void *p = NULL;
	ssize_t n = 0;
	int len;

	if (dso->bid_size)
		bid_hex(dso->bid, dso->bid_size, hex);
	else if (dso->elf && (n = dwelf_elf_gnu_build_id(dso->elf, &p)) > 1 &&
		 n <= BUILD_ID_MAX)
		bid_hex(p, (size_t)n, hex);
	else
		return;
	/* Under symfs, else under a container's root (sym_dso_set_root()),
	 * first. */
	if (ctx->symfs || dso->root) {
		len = snprintf(path, sizeof(path), "%s" SYSTEM_DEBUG_DIR "/.build-id/%.2s/%s.debug",
			       ctx->symfs ? ctx->symfs : dso->root, hex, hex + 2);
		if (len > 0 && (size_t)len < sizeof(path))
			dso->dbg = try_elf(ctx, dso, path);
		if (dso->dbg)
			return;
	}
	len = snprintf(path, sizeof(path), SYSTEM_DEBUG_DIR "/.build-id/%.2s/%s.debug",
		       hex, hex + 2);
	if (len > 0 && (size_t)len < sizeof(path))
		dso->dbg = try_dbg(ctx, dso, path);
}

/*
 * gdb's "Separate Debug Files" debug-link method: the main file's
 * .gnu_debuglink names the debug file, looked for next to the file, in
 * its .debug/ directory and under the system debug dir + the file's
 * directory (objcopy --add-gnu-debuglink). The link's CRC is not checked
 * (that reads the whole file); the build ids are instead: the debug file
 * must carry the main file's (objcopy --only-keep-debug keeps the note),
 * besides the recorded one (try_elf).
 */
static void locate_debuglink(struct sym_ctx *ctx, struct sym_dso *dso)
{
	char dir[PATH_MAX], path[PATH_MAX];
	const void *mine = NULL, *theirs = NULL;
	const char *link, *slash;
	ssize_t nm, nt;
	GElf_Word crc;
	size_t i;
	int n;

	link = dwelf_elf_gnu_debuglink(dso->elf, &crc);
	slash = strrchr(dso->name, '/');
	if (!link || !*link || strchr(link, '/') || !slash ||
	    (size_t)(slash - dso->name) >= sizeof(dir))
		return;
	memcpy(dir, dso->name, (size_t)(slash - dso->name));
	dir[slash - dso->name] = '\0';
	nm = dwelf_elf_gnu_build_id(dso->elf, &mine);
	/* A container's process (sym_dso_set_root()): the same three
	 * places under its root first. */
	for (i = dso->root ? 0 : 3; i < 6 && !dso->dbg; i++) {
		const char *r = i < 3 ? dso->root : "";

		n = i % 3 == 0 ? snprintf(path, sizeof(path), "%s%s/%s", r, dir, link) :
		    i % 3 == 1 ? snprintf(path, sizeof(path), "%s%s/.debug/%s", r, dir, link) :
		    snprintf(path, sizeof(path), "%s" SYSTEM_DEBUG_DIR "%s/%s", r, dir, link);
		if (n < 0 || (size_t)n >= sizeof(path) || !strcmp(path + strlen(r), dso->name))
			continue;
		dso->dbg = try_dbg(ctx, dso, path);
		if (!dso->dbg || nm <= 0)
			continue;
		nt = dwelf_elf_gnu_build_id(dso->dbg, &theirs);
		if (nt > 0 && !sym_bid_equal(mine, (size_t)nm, theirs, (size_t)nt)) {
			pr_debug(ctx->log, "%s: %s is another build, not used",
				 dso->name, path);
			elf_end(dso->dbg);
			dso->dbg = NULL;
		}
	}
}

static bool elf_has_section(Elf *elf, Elf64_Word type)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &sh) && sh.sh_type == type)
			return true;
	return false;
}

/* <symfs><path>, then, for a container's process, <its root><path>
 * (sym_dso_set_root()), then <path>, then, live, the mapped file through
 * /proc/PID/map_files (sym_dso_set_mapped()). The kernel's d_path() marks
 * a replaced file " (deleted)": the mapped file comes first then, else the
 * path that now exists there, which the build id check accepts only if it
 * is the same build. */
static void locate_path(struct sym_ctx *ctx, struct sym_dso *dso)
{
	static const char deleted[] = " (deleted)";
	char name[PATH_MAX], path[PATH_MAX];
	size_t len = strlen(dso->name), dl = sizeof(deleted) - 1;
	bool replaced = len > dl && !strcmp(dso->name + len - dl, deleted);

	if (len >= sizeof(name))
		return;
	memcpy(name, dso->name, len + 1);
	if (replaced) {
		name[len - dl] = '\0';
		if (dso->mapped && (dso->elf = try_elf(ctx, dso, dso->mapped)))
			return;
	}
	if (ctx->symfs && path_join(path, sizeof(path), ctx->symfs, name))
		dso->elf = try_elf(ctx, dso, path);
	if (!dso->elf && dso->root && path_join(path, sizeof(path), dso->root, name))
		dso->elf = try_elf(ctx, dso, path);
	if (!dso->elf)
		dso->elf = try_elf(ctx, dso, name);
	if (!dso->elf && dso->mapped && !replaced)
		dso->elf = try_elf(ctx, dso, dso->mapped);
}

/*
 * The vDSO of this very process, when the profile's [vdso] has the same
 * build id (a profile taken on this machine and kernel): the kernel maps
 * the image into every process (getauxval(AT_SYSINFO_EHDR)); a copy is
 * handed to libelf. Without a recorded build id it is not used, since
 * another kernel's vDSO would give wrong names.
 */
static void locate_self_vdso(struct sym_ctx *ctx, struct sym_dso *dso)
{
	const u8 *base = (const u8 *)getauxval(AT_SYSINFO_EHDR);
	Elf64_Ehdr eh;
	size_t size;
	Elf *elf;
	u8 *copy;

	if (!base || !dso->bid_size)
		return;
	memcpy(&eh, base, sizeof(eh));
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64)
		return;
	size = eh.e_shoff + (size_t)eh.e_shnum * eh.e_shentsize;
	if (size < sizeof(eh) || size > (1u << 20))
		return;
	copy = malloc(size);
	if (!copy)
		return;
	memcpy(copy, base, size);
	elf = elf_memory((char *)copy, size);
	if (!elf || !bid_ok(ctx, dso, elf, "[vdso] of this process")) {
		if (elf)
			elf_end(elf);
		free(copy);
		return;
	}
	dso->elf = elf;
	dso->mem_image = copy;
}

/* Candidates in the order of symbols.h: build-id cache, system debug
 * dir, <symfs><path>, <path>, then debuginfod servers (debuginfod.c). Pseudo maps are never opened, except that
 * perf's cache keeps a copy of the [vdso] image. */
void sym_dso_locate(struct sym_ctx *ctx, struct sym_dso *dso)
{
	if (sym_dso_locate_local(ctx, dso))
		sym_debuginfod_locate(ctx, dso);
	sym_dso_locate_end(dso);
}

/* The local candidates, the servers' turn left to the caller (true if
 * they may be asked: not a pseudo map). Reads only @dso and @ctx's
 * options, and counts into @ctx->stats: dso_ahead.c runs it on its own
 * thread with a ctx of its own. */
bool sym_dso_locate_local(struct sym_ctx *ctx, struct sym_dso *dso)
{
	bool pseudo = is_pseudo(dso->name);

	if (pseudo && strcmp(dso->name, "[vdso]"))
		return false;
	if (dso->bid_size && ctx->buildid_dir)
		locate_cache(ctx, dso);
	if (!dso->elf && pseudo)
		locate_self_vdso(ctx, dso);
	if (!dso->elf && !pseudo)
		locate_path(ctx, dso);
	if (!dso->dbg && (dso->elf || !pseudo))
		locate_debug(ctx, dso);
	if (!dso->dbg && dso->elf && !pseudo)
		locate_debuglink(ctx, dso);
	return !pseudo;
}

void sym_dso_locate_end(struct sym_dso *dso)
{
	/* A debug file alone is useful only for its .symtab. */
	if (!dso->elf && dso->dbg && !elf_has_section(dso->dbg, SHT_SYMTAB)) {
		elf_end(dso->dbg);
		dso->dbg = NULL;
	}
}
