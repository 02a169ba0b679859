// SPDX-License-Identifier: GPL-2.0
/*
 * Kernel symbols for the symbolizer: /proc/kallsyms (or the file given as
 * sym_opts.kallsyms) read once, on first use, into a table of text
 * symbols sorted by address; a kernel address resolves to the function
 * containing it (names only: kallsyms has no lines).
 *
 * Invariants:
 * - The table is used only if its addresses are real (kptr_restrict shows
 *   zeros) and, when the profile recorded the kernel map, if its _text is
 *   the recorded one (same boot, same KASLR slide): sym_kernel_usable().
 * - /proc/kallsyms names kernel frames only if this machine runs the
 *   recorded kernel (build id, else OS release); a recording from
 *   another machine keeps its kernel frames as addresses unless the
 *   build-id cache or the caller gives that kernel's kallsyms.
 * - Several names at one address are ranked as for ELF symbols
 *   (sym_rank_cmp, perf's choose_best_symbol), so names match perf's.
 * - Names live in the ctx arena until sym_ctx_free(). An unreadable file
 *   means no kernel names, not an error; the only error is -ENOMEM.
 */
#include <sys/stat.h>
#include <sys/utsname.h>

#include "symbols_int.h"

#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

struct kern_sym {
	u64 addr;
	const char *name;
	u8 bind;
};

/* One `ADDR TYPE NAME [\t[module]]` line (kernel/kallsyms.c s_show);
 * only text symbols are kept. */
/*
 * The address that starts a kallsyms line: up to 16 hex digits parsed
 * here (strtoull's locale and base handling were 3% of a
 * system-wide conversion, issue 16); anything else (a sign, "0x", spaces,
 * more digits) goes to strtoull, so the result is always strtoull's.
 */
static u64 kern_addr(const char *line, char **end)
{
	u64 v = 0;
	int i, d;

	for (i = 0; i < 16; i++) {
		char ch = line[i];

		if (ch >= '0' && ch <= '9')
			d = ch - '0';
		else if (ch >= 'a' && ch <= 'f')
			d = ch - 'a' + 10;
		else if (ch >= 'A' && ch <= 'F')
			d = ch - 'A' + 10;
		else
			break;
		v = v << 4 | (u64)d;
	}
	if (i == 0 || line[i] != ' ')
		return strtoull(line, end, 16);
	*end = (char *)line + i;
	return v;
}

static int kern_line(struct sym_ctx *ctx, const char *line, size_t *cap)
{
	const char *name;
	char *end;
	size_t len;
	u64 addr;
	char type;

	addr = kern_addr(line, &end);
	if (end == line || end[0] != ' ' || !end[1] || end[2] != ' ')
		return 0;
	type = end[1];
	if (type != 't' && type != 'T' && type != 'w' && type != 'W')
		return 0;
	name = end + 3;
	len = strcspn(name, " \t\n");
	if (!len)
		return 0;
	if (ensure_mem((void **)&ctx->ksyms, cap, sizeof(*ctx->ksyms),
		       ctx->nksyms + 1))
		return -ENOMEM;
	ctx->ksyms[ctx->nksyms] = (struct kern_sym){
		addr, arena_strndup(&ctx->arena, name, len),
		type == 'T' ? STB_GLOBAL : type == 't' ? STB_LOCAL : STB_WEAK
	};
	if (!ctx->ksyms[ctx->nksyms].name)
		return -ENOMEM;
	ctx->nksyms++;
	if (addr)
		ctx->kern_real = true;
	if (len == 5 && !memcmp(name, "_text", 5)) {
		ctx->kern_text = addr;
		ctx->kern_have_text = true;
	}
	return 0;
}

static int ksym_cmp(const void *pa, const void *pb)
{
	const struct kern_sym *a = pa, *b = pb;

	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	return sym_rank_cmp(a->bind, false, a->name, b->bind, false, b->name);
}

static int kern_load(struct sym_ctx *ctx)
{
	size_t cap = 0, lcap = 0, i, n = 0;
	char *line = NULL;
	int err = 0;
	FILE *f;

	ctx->kern_loaded = true;
	if (!*ctx->kallsyms)
		return 0;
	f = fopen(ctx->kallsyms, "re");
	if (!f) {
		pr_debug(ctx->log, "%s: %s", ctx->kallsyms,
			 strerror(errno));
		return 0;
	}
	while (!err && getline(&line, &lcap, f) > 0)
		err = kern_line(ctx, line, &cap);
	free(line);
	fclose(f);
	if (err) {
		free(ctx->ksyms);
		ctx->ksyms = NULL;
		ctx->nksyms = 0;
		return err;
	}
	xqsort(ctx->ksyms, ctx->nksyms, sizeof(*ctx->ksyms), ksym_cmp);
	for (i = 0; i < ctx->nksyms; i++)
		if (!n || ctx->ksyms[n - 1].addr != ctx->ksyms[i].addr)
			ctx->ksyms[n++] = ctx->ksyms[i];
	ctx->nksyms = n;
	return 0;
}

int sym_kernel_set_build_id(struct sym_ctx *ctx, const u8 *id, size_t size)
{
	static const char hex[] = "0123456789abcdef";
	char idstr[2 * 20 + 1], *path;
	struct stat st;
	size_t i;

	if (!size || size > 20)
		return 0;
	memcpy(ctx->kern_bid, id, size);
	ctx->kern_bid_size = size;
	if (!ctx->kallsyms_default || ctx->kern_loaded || !ctx->buildid_dir)
		return 0;
	for (i = 0; i < size; i++) {
		idstr[2 * i] = hex[id[i] >> 4];
		idstr[2 * i + 1] = hex[id[i] & 15];
	}
	idstr[2 * size] = '\0';
	path = arena_printf(&ctx->arena, "%s/[kernel.kallsyms]/%s/kallsyms",
			    ctx->buildid_dir, idstr);
	if (!path)
		return -ENOMEM;
	if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
		ctx->kallsyms = path;
		ctx->kern_from_cache = true;
		pr_debug(ctx->log, "kernel symbols from %s", path);
	}
	return 0;
}

int sym_kernel_set_release(struct sym_ctx *ctx, const char *release)
{
	if (!release || !*release)
		return 0;
	ctx->kern_release = arena_strdup(&ctx->arena, release);
	return ctx->kern_release ? 0 : -ENOMEM;
}

/*
 * The running kernel's build id from /sys/kernel/notes: the raw
 * contents of the kernel's .notes section, a sequence of ELF notes
 * (Elf64_Nhdr and Elf32_Nhdr are the same three 32-bit words; name and
 * descriptor each padded to 4 bytes, as perf's sysfs__read_build_id
 * reads them). The GNU build-id note is NT_GNU_BUILD_ID with name "GNU".
 * Returns its size, or 0 if the file is unreadable or has none.
 */
static size_t running_build_id(u8 *out, size_t max)
{
	unsigned char buf[4096];
	size_t len, off = 0;
	FILE *f = fopen("/sys/kernel/notes", "re");

	if (!f)
		return 0;
	len = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	while (off + 12 <= len) {
		u32 namesz, descsz, type;
		size_t name_off = off + 12, desc_off, next;

		memcpy(&namesz, buf + off, 4);
		memcpy(&descsz, buf + off + 4, 4);
		memcpy(&type, buf + off + 8, 4);
		desc_off = name_off + (((size_t)namesz + 3) & ~(size_t)3);
		next = desc_off + (((size_t)descsz + 3) & ~(size_t)3);
		if (namesz > len || descsz > len || next > len)
			break;
		if (type == NT_GNU_BUILD_ID && namesz == 4 &&
		    !memcmp(buf + name_off, "GNU", 4) && descsz && descsz <= max) {
			memcpy(out, buf + desc_off, descsz);
			return descsz;
		}
		off = next;
	}
	return 0;
}

static void bid_hex(const u8 *id, size_t n, char *out)
{
	static const char hex[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < n; i++) {
		out[2 * i] = hex[id[i] >> 4];
		out[2 * i + 1] = hex[id[i] & 15];
	}
	out[2 * n] = '\0';
}

/*
 * Whether the kallsyms file describes the recorded kernel. A file the
 * caller chose, or perf's build-id cache entry for the recorded id, does
 * by construction. /proc/kallsyms does only if this machine runs the
 * recorded kernel: same build id when the file recorded one and
 * /sys/kernel/notes is readable, else (perf before build ids, or no
 * sysfs) the same `uname -r` as the recorded OS release. With neither
 * recorded there is nothing to compare, and it is used as before.
 * Sets ctx->kern_why when it does not match.
 */
static bool kern_same_kernel(struct sym_ctx *ctx)
{
	char rec[2 * 20 + 1], run[2 * 20 + 1];
	u8 bid[20];
	size_t n;
	struct utsname u;

	if (!ctx->kallsyms_default || ctx->kern_from_cache)
		return true;
	if (ctx->kern_bid_size && (n = running_build_id(bid, sizeof(bid)))) {
		if (sym_bid_equal(ctx->kern_bid, ctx->kern_bid_size, bid, n))
			return true;
		bid_hex(ctx->kern_bid, ctx->kern_bid_size, rec);
		bid_hex(bid, n, run);
		ctx->kern_why = arena_printf(&ctx->arena,
			"recorded kernel build id %s, this machine runs %s", rec, run);
		return false;
	}
	if (ctx->kern_release && !uname(&u) && strcmp(u.release, ctx->kern_release)) {
		ctx->kern_why = arena_printf(&ctx->arena,
			"recorded on kernel %s, this machine runs %s",
			ctx->kern_release, u.release);
		return false;
	}
	return true;
}

bool sym_kernel_usable(struct sym_ctx *ctx, u64 text_addr)
{
	ctx->kern_ok = false;
	ctx->kern_why = NULL;
	if (!ctx->kern_loaded && kern_load(ctx)) {
		ctx->kern_why = "out of memory";
		return false;
	}
	if (!*ctx->kallsyms) {
		ctx->kern_why = "kernel symbols disabled";
		return false;
	}
	if (!kern_same_kernel(ctx)) {
		pr_debug(ctx->log, "%s: %s", ctx->kallsyms,
			 ctx->kern_why ? ctx->kern_why : "another kernel");
		if (!ctx->kern_why)
			ctx->kern_why = "another kernel";
		return false;
	}
	/* kptr_restrict shows every address as 0. */
	if (!ctx->nksyms || !ctx->kern_real) {
		ctx->kern_why = ctx->nksyms ?
			"its addresses read as 0 (kernel.kptr_restrict)" :
			"it is unreadable or has no text symbols";
		return false;
	}
	if (text_addr && (!ctx->kern_have_text || ctx->kern_text != text_addr)) {
		ctx->kern_why = "its _text differs from the recorded kernel map (another boot)";
		pr_debug(ctx->log,
			 "%s: _text differs from the recorded kernel map",
			 ctx->kallsyms);
		return false;
	}
	ctx->kern_ok = true;
	return true;
}

void sym_kernel_describe(const struct sym_ctx *ctx, struct sym_kernel_desc *d)
{
	memset(d, 0, sizeof(*d));
	if (ctx->kern_bid_size)
		bid_hex(ctx->kern_bid, ctx->kern_bid_size, d->build_id);
	d->release = ctx->kern_release;
	d->kallsyms = *ctx->kallsyms ? ctx->kallsyms : NULL;
	d->ok = ctx->kern_ok;
	d->why = ctx->kern_ok ? NULL : ctx->kern_why;
}

int sym_kernel_resolve(struct sym_ctx *ctx, u64 addr, struct sym_frame *frame)
{
	size_t lo = 0, hi, mid;
	u64 end;
	int err;

	if (!ctx->kern_loaded && (err = kern_load(ctx)))
		return err;
	if (!ctx->kern_real)
		return 0;
	hi = ctx->nksyms;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (ctx->ksyms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return 0;
	/* A symbol ends where the next starts; the last one gets a page
	 * past its start's page, as perf's symbols__fixup_end does. */
	if (lo < ctx->nksyms)
		end = ctx->ksyms[lo].addr;
	else
		end = (ctx->ksyms[lo - 1].addr | 4095) + 1 + 4096;
	if (addr >= end)
		return 0;
	*frame = (struct sym_frame){ ctx->ksyms[lo - 1].name, NULL, 0 };
	return 1;
}
