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
 * - Several names at one address are ranked as for ELF symbols
 *   (sym_rank_cmp, perf's choose_best_symbol), so names match perf's.
 * - Names live in the ctx arena until sym_ctx_free(). An unreadable file
 *   means no kernel names, not an error; the only error is -ENOMEM.
 */
#include <sys/stat.h>

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
static int kern_line(struct sym_ctx *ctx, const char *line, size_t *cap)
{
	const char *name;
	char *end;
	size_t len;
	u64 addr;
	char type;

	addr = strtoull(line, &end, 16);
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
		pr_debug(ctx->log, "perfspy: %s: %s", ctx->kallsyms,
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

	if (!ctx->kallsyms_default || ctx->kern_loaded || !ctx->buildid_dir ||
	    !size || size > 20)
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
		pr_debug(ctx->log, "perfspy: kernel symbols from %s", path);
	}
	return 0;
}

bool sym_kernel_usable(struct sym_ctx *ctx, u64 text_addr)
{
	if (!ctx->kern_loaded && kern_load(ctx))
		return false;
	/* kptr_restrict shows every address as 0. */
	if (!ctx->nksyms || !ctx->kern_real)
		return false;
	if (text_addr && (!ctx->kern_have_text || ctx->kern_text != text_addr)) {
		pr_debug(ctx->log,
			 "perfspy: %s: _text differs from the recorded kernel map",
			 ctx->kallsyms);
		return false;
	}
	return true;
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
