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
 * - Names live in the ctx arena until sym_ctx_free(). From a regular
 *   file, and from /proc/kallsyms through an unnamed temporary copy, only
 *   the names frames need are read there, when first needed. An
 *   unreadable file means no kernel names, not an error; the only error
 *   is -ENOMEM.
 */
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <fcntl.h>
#include <unistd.h>

#include "symbols_int.h"

#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/* 16 bytes: the symbol's binding (STB_*), needed only to rank names at
 * one address, is the byte before its name (name_put()), not a field
 * padded to 8 (issue 16: 1 MB less for 122k symbols). From a regular
 * file (ctx->kern_lazy) the name stays there: @off is its file offset,
 * read on first use (kern_lazy_name()). */
struct kern_sym {
	u64 addr;
	union {
		const char *name;
		u64 off;
	};
};

static u8 ksym_bind(const struct kern_sym *k)
{
	return (u8)k->name[-1];
}

/* Hex digit values; 0x10: not a hex digit. */
#define H_ 0x10
static const u8 hex_val[256] = {
	[0 ... '0' - 1] = H_, [':' ... 'A' - 1] = H_,
	[0x47 ... 'a' - 1] = H_, [0x67 ... 255] = H_,
	['0'] = 0, 1, 2, 3, 4, 5, 6, 7, 8, 9,
	['A'] = 10, 11, 12, 13, 14, 15,
	['a'] = 10, 11, 12, 13, 14, 15,
};
#undef H_

/*
 * Eight hex digits at @s (any case) into *@out, all eight or false: the
 * bytes tested and converted eight at a time in a u64 (SWAR). Range
 * tests add a per-byte bias so that bit 7 of each byte says ">= lo" or
 * "> hi"; no byte carries into the next because every byte is < 0x80
 * (checked first) and every bias <= 0x50.
 */
static inline __attribute__((always_inline)) bool
hex8(const unsigned char *s, u64 *out)
{
	const u64 ones = 0x0101010101010101ULL, high = ones * 0x80;
	u64 x, y, digit, letter, nib, t;

	memcpy(&x, s, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	x = __builtin_bswap64(x); /* the first character in the low byte */
#endif
	if (x & high)
		return false;
	digit = (x + ones * (0x80 - '0')) & ~(x + ones * (0x7f - '9'));
	y = x | ones * 0x20; /* 'A'-'F' -> 'a'-'f'; digits keep bit 5 */
	letter = (y + ones * (0x80 - 'a')) & ~(y + ones * (0x7f - 'f'));
	if (((digit | letter) & high) != high)
		return false;
	/* Low nibble, plus 9 for letters (bit 6 set): byte i = digit i. */
	nib = (x & ones * 0x0f) + ((x >> 6) & ones) * 9;
	/* Pairs, then quads, then the two halves; digit 0 ends on top. */
	t = (nib & 0x000f000f000f000fULL) << 4 | (nib >> 8 & 0x000f000f000f000fULL);
	t = (t & 0x000000ff000000ffULL) << 8 | (t >> 16 & 0x000000ff000000ffULL);
	*out = (t & 0xffff) << 16 | (t >> 32 & 0xffff);
	return true;
}

/*
 * The address that starts a kallsyms line of @len bytes: up to 16 hex
 * digits parsed here (strtoull's locale and base handling were 3% of a
 * system-wide conversion, issue 16); anything else (a sign, "0x", spaces,
 * more digits) goes to strtoull, so the result is always strtoull's.
 * The usual 64-bit line (16 digits, a space) takes hex8() twice.
 */
static u64 kern_addr(const char *line, size_t len, char **end)
{
	const unsigned char *u = (const unsigned char *)line;
	u64 v = 0, hi, lo;
	int i;

	if (len > 16 && line[16] == ' ' && hex8(u, &hi) && hex8(u + 8, &lo)) {
		*end = (char *)line + 16;
		return hi << 32 | lo;
	}
	for (i = 0; i < 16; i++) {
		unsigned d = hex_val[u[i]];

		if (d & 0x10)
			break;
		v = v << 4 | d;
	}
	if (i == 0 || line[i] != ' ')
		return strtoull(line, end, 16);
	*end = (char *)line + i;
	return v;
}

/*
 * Where kept names go: blocks of NAME_BLK bytes from the ctx arena,
 * filled here without a call per name (issue 16: getline() and an
 * arena_strndup() per symbol were most of loading 120k symbols). Each
 * name is stored as its binding byte, the name, its NUL (ksym_bind()).
 */
#define NAME_BLK (256 * 1024)
struct name_store {
	char *p, *end;
};

static char *name_put(struct arena *arena, struct name_store *ns,
		      const char *s, size_t len, u8 bind)
{
	char *r;

	if ((size_t)(ns->end - ns->p) < len + 2) {
		size_t sz = len + 2 > NAME_BLK ? len + 2 : NAME_BLK;

		if (!(ns->p = arena_alloc(arena, sz)))
			return NULL;
		ns->end = ns->p + sz;
	}
	ns->p[0] = (char)bind;
	r = ns->p + 1;
	memcpy(r, s, len);
	r[len] = '\0';
	ns->p += len + 2;
	return r;
}

/* One `ADDR TYPE NAME [\t[module]]` line (kernel/kallsyms.c s_show),
 * NUL-terminated (its '\n' dropped), at file offset @loff; only text
 * symbols are kept, their names copied into @ns or, lazily, their
 * offsets kept (no copy, no length: issue 16). */
static int kern_line(struct sym_ctx *ctx, const char *line, size_t llen,
		     u64 loff, size_t *cap, struct name_store *ns)
{
	const char *name;
	char *end;
	size_t len;
	u64 addr;
	char type;

	addr = kern_addr(line, llen, &end);
	if (end == line || end[0] != ' ' || !end[1] || end[2] != ' ')
		return 0;
	type = end[1];
	if (type != 't' && type != 'T' && type != 'w' && type != 'W')
		return 0;
	name = end + 3;
	/* An empty name (strcspn(name, " \t\n") == 0) is no symbol. */
	if (!*name || *name == ' ' || *name == '\t' || *name == '\n')
		return 0;
	if (ensure_mem((void **)&ctx->ksyms, cap, sizeof(*ctx->ksyms),
		       ctx->nksyms + 1))
		return -ENOMEM;
	if (ctx->kern_lazy) {
		ctx->ksyms[ctx->nksyms].addr = addr;
		ctx->ksyms[ctx->nksyms].off = loff + (u64)(name - line);
		len = !strncmp(name, "_text", 5) && strchr(" \t\n", name[5]) ? 5 : 0;
	} else {
		len = strcspn(name, " \t\n");
		ctx->ksyms[ctx->nksyms] = (struct kern_sym){
			addr, { name_put(&ctx->arena, ns, name, len,
					 type == 'T' ? STB_GLOBAL :
					 type == 't' ? STB_LOCAL : STB_WEAK) }
		};
		if (!ctx->ksyms[ctx->nksyms].name)
			return -ENOMEM;
	}
	ctx->nksyms++;
	if (addr)
		ctx->kern_real = true;
	if (len == 5 && !memcmp(name, "_text", 5)) {
		ctx->kern_text = addr;
		ctx->kern_have_text = true;
	}
	return 0;
}

/*
 * The name at offset @off of the kallsyms file @fd, up to the first of
 * " \t\n" or NUL or the end of the file (as kern_line() cuts it), copied
 * into the ctx arena; its binding from the type letter two bytes before.
 * NULL if unreadable; *@err = -ENOMEM when out of memory.
 */
static const char *kern_name_at(struct sym_ctx *ctx, int fd, u64 off, u8 *bind,
				int *err)
{
	char stack[256], *buf = stack, *nb;
	size_t cap = sizeof(stack), have = 0, i = 2;
	const char *name = NULL;
	bool cut = false;
	ssize_t r;

	*err = 0;
	if (off < 2)
		return NULL;
	while (!cut) {
		if (have == cap) {
			nb = cap > SIZE_MAX / 4 ? NULL : buf == stack ?
				malloc(2 * cap) : realloc(buf, 2 * cap);
			if (!nb) { /* buf is still ours, freed below */
				*err = -ENOMEM;
				goto out;
			}
			if (buf == stack)
				memcpy(nb, stack, have);
			buf = nb;
			cap *= 2;
		}
		r = pread(fd, buf + have, cap - have, (off_t)(off - 2 + have));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		have += (size_t)r;
		for (; i < have; i++)
			if (!buf[i] || buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\n') {
				cut = true;
				break;
			}
	}
	if (i <= 2) /* unreadable, or not the name kern_line() saw */
		goto out;
	*bind = buf[0] == 'T' ? STB_GLOBAL : buf[0] == 't' ? STB_LOCAL : STB_WEAK;
	name = arena_strndup(&ctx->arena, buf + 2, i - 2);
	if (!name)
		*err = -ENOMEM;
out:
	if (buf != stack)
		free(buf);
	return name;
}

/* The name of lazy symbol @i (its index in ctx->ksyms), read once and
 * kept in ctx->kern_names. NULL if unreadable; *@err as above. */
static const char *kern_lazy_name(struct sym_ctx *ctx, size_t i, int *err)
{
	u64 *slot = idmap_get(&ctx->kern_names, i);
	const char *name;
	u8 bind;

	*err = 0;
	if (slot)
		return (const char *)(uintptr_t)*slot;
	name = kern_name_at(ctx, ctx->kern_fd, ctx->ksyms[i].off, &bind, err);
	if (!name)
		return NULL;
	if (!(slot = idmap_put(&ctx->kern_names, i))) {
		*err = -ENOMEM;
		return NULL;
	}
	*slot = (u64)(uintptr_t)name;
	return name;
}

static int ksym_addr_cmp(const void *pa, const void *pb)
{
	const struct kern_sym *a = pa, *b = pb;

	return a->addr < b->addr ? -1 : a->addr > b->addr;
}

static int ksym_cmp(const void *pa, const void *pb)
{
	const struct kern_sym *a = pa, *b = pb;

	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	return sym_rank_cmp(ksym_bind(a), false, a->name, ksym_bind(b), false,
			    b->name);
}

/* All of @n bytes at @p to @fd; false on any failure (ENOSPC, EIO...). */
static bool write_all(int fd, const char *p, size_t n)
{
	ssize_t w;

	while (n) {
		w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		p += w;
		n -= (size_t)w;
	}
	return true;
}

/*
 * The file read with read() in READ_BLK pieces (/proc/kallsyms reports
 * size 0, and a whole copy would be 5+ MB of peak memory for nothing),
 * split into lines as getline() would: every '\n' ends one, a last line
 * without one counts too. A partial line moves to the buffer's start;
 * a line longer than the buffer grows it. Each piece is also written to
 * @copy (unless -1) as it comes (kern_tmp_copy). Returns 0, -ENOMEM, or 1
 * if a write to @copy failed.
 */
#define READ_BLK (256 * 1024)
static int kern_parse(struct sym_ctx *ctx, int fd, int copy)
{
	struct name_store ns = { NULL, NULL };
	size_t cap = 0, bcap = READ_BLK, have = 0;
	char *buf = malloc(bcap + 1), *p, *nl, *nb;
	u64 base = 0; /* file offset of buf[0] */
	bool eof = false;
	int err = 0;
	ssize_t r;

	if (!buf)
		return -ENOMEM;
	while (!err && !eof) {
		if (have == bcap) {
			if (bcap > SIZE_MAX / 4 || !(nb = realloc(buf, 2 * bcap + 1))) {
				err = -ENOMEM;
				break;
			}
			buf = nb;
			bcap *= 2;
		}
		r = read(fd, buf + have, bcap - have);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			/* getline() stops at an error too, dropping a
			 * partial line: keep the whole lines that came.
			 * Said at the first use (kern_ensure()). */
			ctx->kern_errno = errno;
			break;
		}
		if (!r)
			eof = true;
		if (copy >= 0 && r > 0 && !write_all(copy, buf + have, (size_t)r)) {
			err = 1;
			break;
		}
		have += (size_t)r;
		buf[have] = '\0';
		for (p = buf; !err; p = nl + 1) {
			nl = memchr(p, '\n', have - (size_t)(p - buf));
			if (!nl) {
				if (eof && p < buf + have)
					err = kern_line(ctx, p, strlen(p),
							base + (u64)(p - buf), &cap, &ns);
				break;
			}
			*nl = '\0';
			err = kern_line(ctx, p, (size_t)(nl - p),
					base + (u64)(p - buf), &cap, &ns);
		}
		base += (u64)(p - buf);
		have -= (size_t)(p - buf);
		memmove(buf, p, have);
	}
	free(buf);
	return err;
}

/*
 * Lazy symbols, sorted by address: one per address, the best name of
 * those at it (sym_rank_cmp, as ksym_cmp ranks copied names); the names
 * of such groups are read now and kept in ctx->kern_names under their
 * final index.
 */
static int kern_lazy_dedup(struct sym_ctx *ctx)
{
	struct kern_sym *k = ctx->ksyms;
	size_t i, j, m, w = 0;
	int err = 0;

	for (i = 0; i < ctx->nksyms; i = j) {
		const char *best = NULL, *nm;
		size_t bi = i;
		u8 bb = 0, b;
		u64 *slot;

		for (j = i + 1; j < ctx->nksyms && k[j].addr == k[i].addr; j++)
			;
		if (j - i > 1)
			for (m = i; m < j; m++) {
				nm = kern_name_at(ctx, ctx->kern_fd, k[m].off, &b, &err);
				if (err)
					return err;
				if (nm && (!best || sym_rank_cmp(b, false, nm, bb, false, best) < 0)) {
					best = nm;
					bb = b;
					bi = m;
				}
			}
		k[w] = k[bi];
		if (best) {
			if (!(slot = idmap_put(&ctx->kern_names, w)))
				return -ENOMEM;
			*slot = (u64)(uintptr_t)best;
		}
		w++;
	}
	ctx->nksyms = w;
	return 0;
}

/*
 * For a procfs file (@fd): an unnamed temporary file (open(2) O_TMPFILE,
 * gone when closed) in $TMPDIR, or /tmp when that is unset, to copy it
 * into. -1 for anything else (a pipe can be read only once, so a failed
 * copy could not start again: kern_load) or where there is none (a
 * filesystem without O_TMPFILE, no such directory): names stay in
 * memory then.
 */
static int kern_tmp_copy(int fd)
{
#ifdef O_TMPFILE
	const char *dir = secure_getenv("TMPDIR");
	struct statfs sf;

	if (fstatfs(fd, &sf) || sf.f_type != PROC_SUPER_MAGIC)
		return -1;
	return open(dir && *dir ? dir : "/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
#else
	(void)fd;
	return -1;
#endif
}

static int kern_load(struct sym_ctx *ctx)
{
	size_t i, n = 0;
	struct stat st;
	int err, fd, copy = -1;

	ctx->kern_loaded = true;
	if (!*ctx->kallsyms)
		return 0;
	fd = open(ctx->kallsyms, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		/* Said by kern_ensure(), where the first use asks: the
		 * load may come earlier (kern_while_waiting()). */
		ctx->kern_errno = errno;
		return 0;
	}
	/* A regular file (the build-id cache's copy, --kallsyms FILE) can
	 * be read again at any offset: names stay there until a frame needs
	 * one (issue 16: 3 MB of names for 122k symbols, a few hundred
	 * used). /proc/kallsyms cannot: procfs calls it a regular file of
	 * size 0, and a read at an offset regenerates everything before it
	 * (11 ms each here). So it is copied as it is read into an unnamed
	 * temporary file, as perf record copies it into its build-id cache,
	 * and the names are read from there (kern_tmp_copy). */
	ctx->kern_lazy = !fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_size > 0;
	if (!ctx->kern_lazy && (copy = kern_tmp_copy(fd)) >= 0)
		ctx->kern_lazy = true;
	ctx->kern_fd = copy >= 0 ? copy : fd;
	err = kern_parse(ctx, fd, copy);
	if (err == 1) {
		/* The copy could not be written (a full disk): read the
		 * file again from its start (procfs regenerates it), the
		 * names kept in memory as before. */
		close(copy);
		close(fd);
		copy = -1;
		free(ctx->ksyms);
		ctx->ksyms = NULL;
		ctx->nksyms = 0;
		ctx->kern_lazy = false;
		fd = open(ctx->kallsyms, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return 0;
		ctx->kern_fd = fd;
		err = kern_parse(ctx, fd, -1);
	}
	if (copy >= 0) {
		close(fd); /* read from the copy from now on */
		fd = copy;
	}
	if (!err && ctx->kern_lazy) {
		xqsort(ctx->ksyms, ctx->nksyms, sizeof(*ctx->ksyms), ksym_addr_cmp);
		/* All addresses 0 (kptr_restrict, not root): one group of
		 * every symbol, a read per name, for a table never used
		 * (sym_kernel_usable). */
		if (ctx->kern_real)
			err = kern_lazy_dedup(ctx);
	} else if (!err) {
		xqsort(ctx->ksyms, ctx->nksyms, sizeof(*ctx->ksyms), ksym_cmp);
		for (i = 0; i < ctx->nksyms; i++)
			if (!n || ctx->ksyms[n - 1].addr != ctx->ksyms[i].addr)
				ctx->ksyms[n++] = ctx->ksyms[i];
		ctx->nksyms = n;
	}
	if (!ctx->kern_lazy || err || !ctx->nksyms) {
		close(fd);
		ctx->kern_lazy = false;
	}
	if (err) {
		free(ctx->ksyms);
		ctx->ksyms = NULL;
		ctx->nksyms = 0;
		idmap_free(&ctx->kern_names);
		return err;
	}
	return 0;
}

/* The table loaded, if not yet, and what the load has to say said once,
 * at the first use. 0 or -ENOMEM. */
static int kern_ensure(struct sym_ctx *ctx)
{
	int err = 0;

	if (!ctx->kern_loaded)
		err = kern_load(ctx);
	if (ctx->kern_errno) {
		pr_debug(ctx->log, "%s: %s", ctx->kallsyms, strerror(ctx->kern_errno));
		ctx->kern_errno = 0;
	}
	return err;
}

/* ctx->while_waiting: the table, loaded once. */
static void kern_while_waiting(struct sym_ctx *ctx)
{
	ctx->while_waiting = NULL;
	if (ctx->kern_loaded)
		return;
	/* Out of memory here, the first use loads again and says so. */
	if (kern_load(ctx)) {
		ctx->kern_loaded = false;
		ctx->kern_errno = 0;
	}
}

void sym_kernel_prefetch(struct sym_ctx *ctx, bool on)
{
	ctx->while_waiting = on ? kern_while_waiting : NULL;
}

void sym_while_idle(struct sym_ctx *ctx)
{
	if (ctx->while_waiting)
		ctx->while_waiting(ctx);
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
	if (kern_ensure(ctx)) {
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

	if ((err = kern_ensure(ctx)))
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
	if (ctx->kern_lazy) {
		const char *name = kern_lazy_name(ctx, lo - 1, &err);

		if (!name)
			return err;
		*frame = (struct sym_frame){ name, NULL, 0 };
		return 1;
	}
	*frame = (struct sym_frame){ ctx->ksyms[lo - 1].name, NULL, 0 };
	return 1;
}
