// SPDX-License-Identifier: GPL-2.0
/*
 * Debug info (and binaries) from debuginfod servers, for DSOs that have
 * none on this machine: the last step of dso_locate.c's search order.
 *
 * libdebuginfod (elfutils' client, debuginfod.h) does the HTTP, reads
 * $DEBUGINFOD_URLS (servers), $DEBUGINFOD_TIMEOUT (seconds a server may
 * take to start answering; 90 by default) and caches what it fetches in
 * $DEBUGINFOD_CACHE_PATH or ~/.cache/debuginfod_client, so a second run
 * asks no server. We only decide when to ask:
 * - never when $DEBUGINFOD_URLS is unset or empty, or the caller said
 *   no (perfspy_open_opts.no_debuginfod);
 * - only for a DSO with a build id (recorded, or from its local file),
 *   and only for what is missing: the debug file when neither a local
 *   debug file nor DWARF in the binary was found, the executable when
 *   the binary itself was not found;
 * - after a query fails for any reason other than "not there" (server
 *   down, timeout), no further query in this session, with one warning,
 *   so a dead server costs one timeout, not one per DSO.
 * Progress goes to the log sink at info level (the CLI shows it with -v).
 *
 * libdebuginfod is opened with dlopen() on first use, as libdw itself
 * does (elfutils libdwfl/debuginfod-client.c): it pulls in libcurl and a
 * TLS stack, which a machine without servers should not need to start
 * perfspy, and which the wheel cannot link statically (issue 18). Without
 * the library, debuginfod is simply unavailable, with one warning.
 */
#include "symbols_int.h"

#include <dlfcn.h>
#include <elfutils/debuginfod.h>
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* The client calls we use, resolved from libdebuginfod.so.1. */
struct dfd_api {
	void *lib;
	__typeof__(debuginfod_begin) *begin;
	__typeof__(debuginfod_end) *end;
	__typeof__(debuginfod_set_user_data) *set_user_data;
	__typeof__(debuginfod_get_user_data) *get_user_data;
	__typeof__(debuginfod_set_progressfn) *set_progressfn;
	__typeof__(debuginfod_get_url) *get_url;
	__typeof__(debuginfod_find_executable) *find_executable;
	__typeof__(debuginfod_find_debuginfo) *find_debuginfo;
};

/* 0, or -1 when the library or one of its calls is missing. */
static int dfd_api_load(struct dfd_api *a)
{
	a->lib = dlopen("libdebuginfod.so.1", RTLD_LAZY | RTLD_LOCAL);
	if (!a->lib)
		return -1;
#define DFD_SYM(field, name) (a->field = (__typeof__(a->field))dlsym(a->lib, #name))
	if (!DFD_SYM(begin, debuginfod_begin) || !DFD_SYM(end, debuginfod_end) ||
	    !DFD_SYM(set_user_data, debuginfod_set_user_data) ||
	    !DFD_SYM(get_user_data, debuginfod_get_user_data) ||
	    !DFD_SYM(set_progressfn, debuginfod_set_progressfn) ||
	    !DFD_SYM(get_url, debuginfod_get_url) ||
	    !DFD_SYM(find_executable, debuginfod_find_executable) ||
	    !DFD_SYM(find_debuginfo, debuginfod_find_debuginfo)) {
		dlclose(a->lib);
		a->lib = NULL;
		return -1;
	}
#undef DFD_SYM
	return 0;
}

struct sym_dfd {
	struct dfd_api api;
	debuginfod_client *client;
	bool dead; /* a query failed: ask no more */
	const struct sym_ctx *ctx;
	const char *what; /* DSO name of the running query */
	time_t last;	  /* last progress message */
};

/* The sym_dfd a progress callback is for: the client's user data, read
 * through the library's own call (the callback gets nothing else, and
 * the library keeps no global to find it by). */
static struct sym_dfd *dfd_of(debuginfod_client *c)
{
	void *lib = dlopen("libdebuginfod.so.1", RTLD_LAZY | RTLD_NOLOAD);
	__typeof__(debuginfod_get_user_data) *get;
	struct sym_dfd *d = NULL;

	if (!lib)
		return NULL;
	get = (__typeof__(get))dlsym(lib, "debuginfod_get_user_data");
	if (get)
		d = get(c);
	dlclose(lib);
	return d;
}

static int on_progress(debuginfod_client *c, long done, long total)
{
	struct sym_dfd *d = dfd_of(c);
	time_t now = time(NULL);

	/* One line a second at most: a big debug file takes many calls. */
	if (d && now != d->last) {
		d->last = now;
		if (total > 0)
			pr_info(d->ctx->log, "debuginfod: %s: %ld of %ld bytes",
				d->what, done, total);
		else
			pr_info(d->ctx->log, "debuginfod: %s: waiting for %s",
				d->what, d->api.get_url(c) ? d->api.get_url(c) : "a server");
	}
	return 0;
}

static bool wanted(const struct sym_ctx *ctx)
{
	const char *urls = getenv("DEBUGINFOD_URLS");

	return !ctx->no_debuginfod && urls && *urls;
}

static struct sym_dfd *client(struct sym_ctx *ctx)
{
	struct sym_dfd *d = ctx->dfd;

	if (d)
		return d->dead ? NULL : d;
	d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->ctx = ctx;
	ctx->dfd = d;
	if (dfd_api_load(&d->api)) {
		d->dead = true;
		pr_warn(ctx->log, "debuginfod: libdebuginfod.so.1 not found; servers not asked");
		return NULL;
	}
	d->client = d->api.begin();
	if (!d->client) {
		d->dead = true;
		pr_warn(ctx->log, "debuginfod: cannot start the client; not used");
		return NULL;
	}
	d->api.set_user_data(d->client, d);
	d->api.set_progressfn(d->client, on_progress);
	return d;
}

/* An ELF handle for the file @fd (closed here), or NULL. */
static Elf *elf_from_fd(int fd)
{
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);

	if (elf && (elf_kind(elf) != ELF_K_ELF || elf_cntl(elf, ELF_C_FDREAD))) {
		elf_end(elf);
		elf = NULL;
	}
	close(fd);
	return elf;
}

static bool has_debug_info(Elf *elf)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	GElf_Shdr sh;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return false;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		n = elf_strptr(elf, shstrndx, sh.sh_name);
		if (n && !strcmp(n, ".debug_info"))
			return true;
	}
	return false;
}

/* One query; the ELF it gave, or NULL. */
static Elf *query(struct sym_dfd *d, struct sym_dso *dso, const u8 *bid, size_t n,
		  bool exe)
{
	char *path = NULL;
	int fd;

	d->what = dso->name;
	d->last = 0;
	pr_info(d->ctx->log, "debuginfod: asking for the %s of %s",
		exe ? "executable" : "debug info", dso->name);
	fd = exe ? d->api.find_executable(d->client, bid, (int)n, &path) :
		   d->api.find_debuginfo(d->client, bid, (int)n, &path);
	if (fd < 0) {
		if (fd == -ENOENT) {
			pr_debug(d->ctx->log, "debuginfod: %s: not on the servers",
				 dso->name);
		} else {
			d->dead = true;
			pr_warn(d->ctx->log,
				"debuginfod: %s: %s; no more debuginfod queries in this run",
				dso->name, strerror(-fd));
		}
		return NULL;
	}
	pr_info(d->ctx->log, "debuginfod: %s: using %s", dso->name, path);
	free(path);
	return elf_from_fd(fd);
}

bool sym_debuginfod_wanted(const struct sym_ctx *ctx)
{
	return wanted(ctx);
}

bool sym_debuginfod_lacks(const struct sym_dso *dso)
{
	return !dso->dbg && !(dso->elf && has_debug_info(dso->elf));
}

void sym_debuginfod_locate(struct sym_ctx *ctx, struct sym_dso *dso)
{
	const void *p = NULL;
	const u8 *bid = dso->bid;
	size_t n = dso->bid_size;
	struct sym_dfd *d;
	ssize_t k;

	if (!wanted(ctx) || !sym_debuginfod_lacks(dso))
		return;
	if (!n && dso->elf && (k = dwelf_elf_gnu_build_id(dso->elf, &p)) > 0 &&
	    k <= BUILD_ID_MAX) {
		bid = p;
		n = (size_t)k;
	}
	/* perf pads 20-byte build ids to 24 bytes (see dso_locate.c bid_hex). */
	while (n > 20 && !bid[n - 1])
		n--;
	if (!n || !(d = client(ctx)))
		return;
	if (!dso->elf)
		dso->elf = query(d, dso, bid, n, true);
	if (!d->dead)
		dso->dbg = query(d, dso, bid, n, false);
}

void sym_debuginfod_end(struct sym_ctx *ctx)
{
	if (!ctx->dfd)
		return;
	if (ctx->dfd->client)
		ctx->dfd->api.end(ctx->dfd->client);
	/* The library stays loaded (no dlclose, as libdw leaves it too):
	 * libcurl's global state, set up on its first use, lives in its
	 * data; unloading it would strand that state (a leak to LSan) and
	 * a later session would pay the set-up again. */
	free(ctx->dfd);
	ctx->dfd = NULL;
}
