/* SPDX-License-Identifier: GPL-2.0 */
/*
 * JIT symbols of one process: CPython's /tmp/perf-PID.map (`-X perf`,
 * 3.12+) and /tmp/jit-PID.dump (`-X perf_jit`, 3.13+), read without perf.
 *
 * A struct jit_map holds every entry ever written to those files, in write
 * order, plus an index of non-overlapping address segments built once per
 * added file, so a lookup is one binary search. Entries may overlap: the
 * map file is opened O_APPEND and never truncated, so a reused PID appends
 * to an old file, and re-activating the trampoline writes new lines for the
 * same code objects (docs/cpython-perf.md §1.3, §5 pitfall 1).
 * For every address the entry written LAST wins.
 *
 * For jitdump entries that come with JIT_CODE_UNWINDING_INFO, the .eh_frame
 * CPython wrote for the trampoline is decoded here into a small table of
 * rows (struct jit_cfi_row), so the unwinder needs no DWARF machinery for
 * JIT code (docs/cpython-perf.md §2; perf's jitdump-specification.txt §IX).
 *
 * Everything the map hands out (entries, names, CFI rows) belongs to the
 * map and stays valid until jit_map_free(). A built map is read-only:
 * concurrent jit_map_find() calls are safe. Adding a file is not.
 *
 * Untrusted input: the parsers never read outside the given buffer, bound
 * every count by the buffer size, and treat damage as "skip this line or
 * record" (perf map) or "stop here" (jitdump), never as a crash.
 */
#ifndef PERFSPY_JIT_H
#define PERFSPY_JIT_H

#include "common/util.h"

struct jit_map;

/*
 * Rules to unwind out of a JIT'd code range, from jitdump eh_frame
 * (x86-64; the DWARF CFA model, DWARF 5 §6.4). A row applies to the pc
 * offsets [start, end) from the entry's start. In a row:
 *   CFA            = register cfa_reg + cfa_off
 *   return address = the 8 bytes at CFA + ra_off
 *   caller's rbp   = the 8 bytes at CFA + fp_off when fp_saved,
 *                    else rbp is unchanged (same value)
 * Every other callee-saved register is unchanged. For CPython 3.13.0's
 * x86-64 "sub" trampoline this gives [0,4) rsp+8, [4,10) rsp+16,
 * [10,11) rsp+8, ra_off -8, fp_saved false (docs/cpython-perf.md §1.7).
 */
struct jit_cfi_row {
	u32 start, end; /* [start, end) offsets from the entry's start */
	u8 cfa_reg;	/* DWARF register number (7 = rsp, 6 = rbp on x86-64) */
	s32 cfa_off;	/* CFA = reg + cfa_off */
	s32 ra_off;	/* return address at [CFA + ra_off] (e.g. -8) */
	bool fp_saved;	/* frame pointer (rbp) saved at [CFA + fp_off] */
	s32 fp_off;
};

/*
 * One JIT'd code range. For perf-map entries cfi is NULL. For jitdump
 * entries cfi is NULL when no usable unwinding info preceded the
 * CODE_LOAD; then the unwinder applies the fixed trampoline rule of
 * docs/cpython-perf.md §1.7. Rows are sorted, contiguous from offset 0 and end at
 * min(code size, FDE address range): an offset past the last row has no
 * rule. CFI that needs anything the row cannot express (DWARF
 * expressions, RA kept in a register as on aarch64 before the stp,
 * register-to-register rules), or that uses what the small interpreter
 * does not decode (DW_CFA_set_loc, CIE augmentations other than z, R, S),
 * is dropped as a whole (cfi NULL, one debug-level log line per dump),
 * never approximated.
 */
struct jit_entry {
	u64 start, size; /* absolute addresses, as written by CPython */
	const char *name; /* the whole name, e.g. "py::Klass.meth:/path/x.py" */
	const struct jit_cfi_row *cfi; /* NULL for perf-map entries */
	u32 nr_cfi;
};

/*
 * Load DIR/perf-PID.map and DIR/jit-PID.dump. @dir NULL means "/tmp"
 * (CPython hard-codes that directory, docs/cpython-perf.md §1.3 and §2). @pid is the
 * PID the process saw (its namespace PID). @log may be NULL.
 *
 * Either file may be absent. When both exist, the older one (mtime) is
 * added first so that the newer file's entries win where they overlap.
 * A file that exists but cannot be used (unreadable, a jitdump with a bad
 * header) fails the call only if the other file did not load; otherwise it
 * is reported at warning level and skipped.
 *
 * On success *@out is a new map for the caller to jit_map_free(); on error
 * *@out is NULL. Returns 0, -ENOENT (neither file exists), -ENOMEM,
 * -EINVAL (not a regular file), -errno from open/fstat/read, or a
 * jit_map_add_jitdump() error.
 */
int jit_map_load(const char *dir, s32 pid, const struct log_sink *log,
		 struct jit_map **out);

/* An empty map in *@out. Returns 0 or -ENOMEM. */
int jit_map_new(struct jit_map **out);

/*
 * Follow DIR/perf-PID.map of a process that is still running (a live
 * recording or a perf pipe): add the whole lines written past byte *@off
 * to *@m (created when NULL) and move *@off past them. A line still being
 * written is left for the next call. Returns 1 if entries were added, 0 if
 * nothing new (or no file), -ENOMEM.
 */
int jit_map_follow_perf_map(struct jit_map **m, const char *dir, s32 pid,
			    u64 *off, const struct log_sink *log);

/*
 * Add the perf map text in @buf[0..@len) (need not be NUL-terminated).
 * Lines are `START SIZE NAME\n` (perf's Documentation/jit-interface.txt;
 * CPython writes "%lx %x %s\n"): START and SIZE in hex, "0x" tolerated,
 * fields split at the first two spaces only, so NAME keeps its spaces, ':'
 * and '<>' as they are (UTF-8 bytes passed through). A trailing '\r' is
 * dropped. A last line without '\n' counts if it has all three fields.
 * Malformed lines (such as the tail of a name that contained a newline)
 * are skipped and counted in one debug-level log line. The entries are
 * appended after those already in @m, so they win over them on overlap.
 *
 * The buffer is not referenced after the call. Returns 0 or -ENOMEM (the
 * map then holds a prefix of the lines and stays usable).
 */
int jit_map_add_perf_map(struct jit_map *m, const char *buf, size_t len,
			 const struct log_sink *log);

/*
 * Add the jitdump in @buf[0..@len) (tools/perf/Documentation/
 * jitdump-specification.txt). Each JIT_CODE_LOAD becomes an entry
 * [code_addr, code_addr + code_size) named by its NUL-terminated name; a
 * JIT_CODE_UNWINDING_INFO applies to the next JIT_CODE_LOAD only (CPython
 * writes the pair per trampoline; perf's jitdump.c consumes it the same
 * way). JIT_CODE_DEBUG_INFO, JIT_CODE_MOVE and JIT_CODE_CLOSE are
 * skipped: CPython writes none of them (docs/cpython-perf.md §2), and perf map names
 * carry no lines either. Unknown record types are skipped as perf does.
 * The header's elf_mach and pad are not checked (CPython 3.13.0 writes
 * elf_mach 0 and leaves pad uninitialised).
 *
 * A dump cut short (CPython writes it through stdio: os._exit or SIGKILL
 * cut it at a buffer boundary, docs/cpython-perf.md §1.5) keeps every complete record
 * and logs at debug level; so does a cut inside the header. A record whose
 * size field is impossible stops the parse with a warning, keeping what
 * came before.
 *
 * Returns 0; -PERFSPY_E_FORMAT (bad magic, header size < 40);
 * -PERFSPY_E_ENDIAN (the byte-swapped magic: a dump from a machine of
 * the other byte order); -PERFSPY_E_UNSUPPORTED (version other than 1);
 * -ENOMEM. On error the entries added before the error stay in @m.
 */
int jit_map_add_jitdump(struct jit_map *m, const void *buf, size_t len,
			const struct log_sink *log);

/*
 * The entry containing @addr (start <= addr < start + size), or NULL.
 * Where entries overlap, the one added last wins (later line, later
 * record, later add call). O(log n). The pointer lives as long as @m.
 * @m may be NULL (returns NULL).
 */
const struct jit_entry *jit_map_find(const struct jit_map *m, u64 addr);

/* The number of entries added, overlapped ones included; 0 for NULL. */
size_t jit_map_size(const struct jit_map *m);

/*
 * The @i-th entry in the order it was added (0 <= i < jit_map_size()),
 * or NULL when out of range. For listing and for tests.
 */
const struct jit_entry *jit_map_entry(const struct jit_map *m, size_t i);

/* Free @m and everything it handed out. NULL is fine. */
void jit_map_free(struct jit_map *m);

#endif
