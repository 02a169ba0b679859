// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests for the live recording's pieces that need no perf_event_open:
 * the pipe-layout stream built by libconv/perfdata/live_stream.c (walked
 * here by an independent record reader written from perf_event.h, and
 * read back by a session), perfspy_record__start()'s option checks, and
 * following a perf map that grows (frames/jit.c jit_map_follow_perf_map).
 * The capture itself is tested end to end (tests/e2e/run-record.sh).
 */
#include "frames/jit.h"
#include "perfdata/live.h"
#include "perfspy.h"
#include "test.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#define ST (PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | \
	    PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_PERIOD)

static const char maps[] =
	"55d0c0000000-55d0c0001000 r--p 00000000 08:01 1234   /usr/bin/python3.12\n"
	"55d0c0001000-55d0c0100000 r-xp 00001000 08:01 1234   /usr/bin/python3.12\n"
	"7f0000000000-7f0000010000 rwxp 00000000 00:00 0 \n"
	"7f0000100000-7f0000200000 r-xs 00002000 08:02 99     /lib/with space.so\n"
	"7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0      [stack]\n"
	"garbage line\n"
	"7ffc10000000-7ffc10002000 r-xp 00000000 00:00 0      [vdso]";

struct seen {
	int mmap2, comm, fork, kmmap, round, attr, other;
	char names[8][64];
	u32 prot[8], flags[8];
	u16 misc[8];
	u64 start[8], pgoff[8], ino[8];
	u32 maj[8];
	u8 bid_size[8], bid[8][20];
	char comms[4][16];
};

/* An independent walk over the stream: perf_event_header sizes, and the
 * record bodies as include/uapi/linux/perf_event.h lays them out. */
static int walk(const u8 *p, size_t len, struct seen *s)
{
	size_t off = 16;

	memset(s, 0, sizeof(*s));
	if (len < 16 || memcmp(p, "PERFILE2", 8) || get_u64(p + 8) != 16)
		return -1;
	while (off + 8 <= len) {
		u32 type = get_u32(p + off);
		u16 size = (u16)(p[off + 6] | p[off + 7] << 8);

		if (size < 8 || off + size > len || size % 8)
			return -1;
		switch (type) {
		case 64: s->attr++; break;
		case 68: s->round++; break;
		case PERF_RECORD_MMAP:
			if ((s32)get_u32(p + off + 8) == -1 &&
			    !strcmp((const char *)p + off + 40, "[kernel.kallsyms]_text") &&
			    get_u64(p + off + 16) == get_u64(p + off + 32))
				s->kmmap++;
			break;
		case PERF_RECORD_MMAP2:
			if (s->mmap2 < 8) {
				int i = s->mmap2;

				s->misc[i] = (u16)(p[off + 4] | p[off + 5] << 8);
				s->start[i] = get_u64(p + off + 16);
				s->pgoff[i] = get_u64(p + off + 32);
				/* {maj, min, ino, ino_gen} or, with
				 * PERF_RECORD_MISC_MMAP_BUILD_ID, {size,
				 * res, res, build_id[20]} at 40. */
				if (s->misc[i] & (1 << 14)) {
					s->bid_size[i] = p[off + 40];
					memcpy(s->bid[i], p + off + 44, 20);
				} else {
					s->maj[i] = get_u32(p + off + 40);
					s->ino[i] = get_u64(p + off + 48);
				}
				s->prot[i] = get_u32(p + off + 64);
				s->flags[i] = get_u32(p + off + 68);
				snprintf(s->names[i], sizeof(s->names[i]), "%s", p + off + 72);
			}
			s->mmap2++;
			break;
		case PERF_RECORD_COMM:
			if (s->comm < 4)
				snprintf(s->comms[s->comm], 16, "%s", p + off + 16);
			s->comm++;
			break;
		case PERF_RECORD_FORK: s->fork++; break;
		default: s->other++;
		}
		off += size;
	}
	return off == len ? 0 : -1;
}

static void test_stream(void)
{
	struct perf_event_attr attr = { .size = sizeof(attr), .type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_CPU_CLOCK, .sample_type = ST, .sample_id_all = 1,
		.freq = 1, .sample_freq = 99 };
	PERFSPY_OPTS(perfspy_info, info);
	PERFSPY_OPTS(perfspy_thread, t);
	PERFSPY_OPTS(perfspy_event, ev);
	struct perfspy_session *s;
	struct live_buf b = { 0 };
	u32 ids = live_id_size(ST);
	struct seen sn;

	T_EQ_INT(ids, 24); /* pid/tid, time, cpu/res */
	T_EQ_INT(live_id_size(ST | PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_ID), 40);
	T(!live_put_header(&b));
	T(!live_put_attr(&b, &attr));
	T(!live_put_kernel_mmap(&b, 0xffffffff81000000ULL, 0xffffffff82000000ULL, ids));
	T(!live_put_comm(&b, 100, 100, "main-thr", ids));
	T(!live_put_fork(&b, 100, 101, ids));
	T(!live_put_comm(&b, 100, 101, "a-much-longer-worker-name", ids));
	T(!live_put_maps(&b, 100, maps, sizeof(maps) - 1, ids));
	T(!live_put_round(&b));
	T_EQ_INT(walk(b.p, b.len, &sn), 0);
	T_EQ_INT(sn.attr, 1);
	T_EQ_INT(sn.kmmap, 1);
	T_EQ_INT(sn.comm, 2);
	T_EQ_INT(sn.fork, 1);
	T_EQ_INT(sn.round, 1);
	T_EQ_INT(sn.other, 0);
	/* Executable and readable lines (perf's mmap_data): all but the
	 * garbage; the last line has no newline. */
	T_EQ_INT(sn.mmap2, 6);
	T_EQ_STR(sn.names[0], "/usr/bin/python3.12");
	T_EQ_INT(sn.prot[0], PROT_READ);
	T_EQ_STR(sn.names[1], "/usr/bin/python3.12");
	T_EQ_INT(sn.start[1], 0x55d0c0001000ULL);
	T_EQ_INT(sn.pgoff[1], 0x1000);
	T_EQ_INT(sn.prot[1], PROT_READ | PROT_EXEC);
	T_EQ_INT(sn.flags[1], MAP_PRIVATE);
	T_EQ_STR(sn.names[2], "//anon");
	T_EQ_INT(sn.prot[2], PROT_READ | PROT_WRITE | PROT_EXEC);
	T_EQ_STR(sn.names[3], "/lib/with space.so");
	T_EQ_INT(sn.flags[3], MAP_SHARED);
	T_EQ_STR(sn.names[4], "[stack]");
	T_EQ_INT(sn.misc[4], PERF_RECORD_MISC_USER | PERF_RECORD_MISC_MMAP_DATA);
	T_EQ_INT(sn.misc[1], PERF_RECORD_MISC_USER);
	/* No such file (or not that inode): device and inode, no id. */
	T_EQ_INT(sn.maj[1], 8);
	T_EQ_INT(sn.ino[1], 1234);
	T_EQ_INT(sn.ino[3], 99);
	T_EQ_STR(sn.names[5], "[vdso]");
	T_EQ_STR(sn.comms[0], "main-thr");

	/* A session reads it as a perf pipe: one event, both threads named. */
	T_EQ_INT(perfspy_session__open_mem(b.p, b.len, NULL, &s), 0);
	T_EQ_INT(perfspy_session__convert(s, NULL, NULL), 0);
	T_EQ_INT(perfspy_session__info(s, &info), 0);
	T(info.pipe_mode);
	T_EQ_INT(info.nr_events, 1);
	T_EQ_INT(perfspy_session__event(s, 0, &ev), 0);
	T_EQ_STR(ev.name, "cpu-clock");
	T_EQ_INT(info.nr_samples, 0);
	T_EQ_INT(perfspy_session__thread(s, 1, &t), 0);
	T_EQ_INT(t.tid, 101);
	T_EQ_STR(t.comm, "a-much-longer-worker-name");
	perfspy_session__close(s);
	live_buf_free(&b);
}

/* The main program's GNU build id as the loader mapped it (its PT_NOTE
 * in memory): not the file live_map_build_id() reads. */
static int note_of_main(struct dl_phdr_info *info, size_t size, void *arg)
{
	u8 *out = arg;
	int i;

	(void)size;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		const u8 *n = (const u8 *)(info->dlpi_addr + ph->p_vaddr);
		size_t off = 0;

		if (ph->p_type != PT_NOTE)
			continue;
		while (off + 12 <= ph->p_memsz) {
			u32 namesz = get_u32(n + off), descsz = get_u32(n + off + 4);
			size_t desc = off + 12 + ((namesz + 3) & ~3u);

			if (get_u32(n + off + 8) == NT_GNU_BUILD_ID && namesz == 4 &&
			    !memcmp(n + off + 12, "GNU", 4) && descsz <= 20) {
				memcpy(out + 1, n + desc, descsz);
				out[0] = (u8)descsz;
				return 1;
			}
			off = desc + ((descsz + 3) & ~3u);
		}
	}
	return 1; /* the first object is the main program */
}

/* A maps line of a real file carries its build id (perf record
 * --buildid-mmap's synthesis); the same line with another inode does not. */
static void test_build_id(void)
{
	u8 want[21] = { 0 };
	char exe[4096], line[4096 + 256], range[64], perms[8], off[32], dev[16];
	char *text, *p;
	size_t len;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	struct live_buf b = { 0 };
	unsigned long long ino;
	struct seen sn;
	int pass;

	T(n > 0);
	if (n <= 0)
		return;
	exe[n] = '\0';
	dl_iterate_phdr(note_of_main, want);
	T(want[0] >= 8); /* the project links with build ids (gcc's default) */
	text = live_read_text("/proc/self/maps", &len);
	T(text != NULL);
	if (!text)
		return;
	/* The first line of the program's own file. */
	for (p = strtok(text, "\n"); p; p = strtok(NULL, "\n")) {
		size_t l = strlen(p);

		if (l > (size_t)n && !strcmp(p + l - n, exe))
			break;
	}
	T(p && sscanf(p, "%63s %7s %31s %15s %llu", range, perms, off, dev, &ino) == 5);
	for (pass = 0; p && pass < 2; pass++) {
		/* Pass 1: the same file under another inode, as a file
		 * replaced since it was mapped: it lends no id. */
		snprintf(line, sizeof(line), "%s %s %s %s %llu   %s\n", range, perms,
			 off, dev, ino + (unsigned)pass, exe);
		b.len = 0;
		T(!live_put_header(&b));
		T(!live_put_maps(&b, getpid(), line, strlen(line), 0));
		T_EQ_INT(walk(b.p, b.len, &sn), 0);
		T_EQ_INT(sn.mmap2, 1);
		T_EQ_STR(sn.names[0], exe);
		if (!pass) {
			T_EQ_INT(sn.misc[0] & (1 << 14), 1 << 14);
			T_EQ_INT(sn.bid_size[0], want[0]);
			T(!memcmp(sn.bid[0], want + 1, want[0]));
		} else {
			T_EQ_INT(sn.misc[0] & (1 << 14), 0);
			T_EQ_INT(sn.ino[0], ino + 1);
		}
	}
	free(text);
	live_buf_free(&b);
}

/* A sample of IP|TID|CALLCHAIN|REGS_USER|STACK_USER with 2 user regs,
 * a @sz-byte stack dump of which @dyn bytes were filled. */
static size_t mk_sample(u8 *p, u64 abi, u64 sz, u64 dyn)
{
	u64 v[64] = { 0 };
	size_t n = 1, i;

	v[n++] = 0x401000;		 /* ip */
	v[n++] = 7ULL << 32 | 7;	 /* pid, tid */
	v[n++] = 2;			 /* callchain nr */
	v[n++] = 0xffffffff81000000ULL;
	v[n++] = 0x401000;
	v[n++] = abi;
	if (abi) {
		v[n++] = 0x7ffc0000;	 /* two regs */
		v[n++] = 0x7ffc0010;
	}
	v[n++] = sz;
	for (i = 0; i < sz / 8; i++)
		v[n++] = 0x1111111111111111ULL * (i + 1);
	if (sz)
		v[n++] = dyn;
	v[0] = PERF_RECORD_SAMPLE | (u64)(n * 8) << 48;
	memcpy(p, v, n * 8);
	return n * 8;
}

static void test_trim(void)
{
	const u64 st = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_CALLCHAIN |
		       PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
	u8 in[512], want[512];
	struct live_buf b = { 0 };
	size_t n, m;

	/* 64-byte dump, 20 filled: kept 24 (rounded to u64s), dyn 20. */
	n = mk_sample(in, 2, 64, 20);
	m = mk_sample(want, 2, 24, 20);
	T(!live_put_sample(&b, in, st, 2));
	T_EQ_INT(b.len, n - 40);
	T(b.len == m && !memcmp(b.p, want, m));
	b.len = 0;
	/* No regs (abi 0): same cut. */
	n = mk_sample(in, 0, 64, 8);
	m = mk_sample(want, 0, 8, 8);
	T(!live_put_sample(&b, in, st, 2));
	T(b.len == m && !memcmp(b.p, want, m));
	b.len = 0;
	/* Full dump, empty dump, dyn_size past size, unknown layout: as is. */
	n = mk_sample(in, 2, 64, 64);
	T(!live_put_sample(&b, in, st, 2));
	T(b.len == n && !memcmp(b.p, in, n));
	b.len = 0;
	n = mk_sample(in, 2, 0, 0);
	T(!live_put_sample(&b, in, st, 2));
	T(b.len == n && !memcmp(b.p, in, n));
	b.len = 0;
	n = mk_sample(in, 2, 64, 80);
	T(!live_put_sample(&b, in, st, 2));
	T(b.len == n && !memcmp(b.p, in, n));
	b.len = 0;
	n = mk_sample(in, 2, 64, 20);
	T(!live_put_sample(&b, in, st | PERF_SAMPLE_RAW, 2));
	T(b.len == n && !memcmp(b.p, in, n));
	b.len = 0;
	/* A callchain claiming more than the record holds: as is. */
	n = mk_sample(in, 2, 64, 20);
	memset(in + 24, 0xff, 8);
	T(!live_put_sample(&b, in, st, 2));
	T(b.len == n && !memcmp(b.p, in, n));
	live_buf_free(&b);
}

static void test_opts(void)
{
	const char *argv[] = { "true", NULL };
	struct perfspy_record *r = (void *)1;

	T_EQ_INT(perfspy_record__start(NULL, &r), -EINVAL);
	T(r == NULL);
	{
		PERFSPY_OPTS(perfspy_record_opts, o, .pid = 1, .argv = argv);
		T_EQ_INT(perfspy_record__start(&o, &r), -EINVAL);
	}
	{
		PERFSPY_OPTS(perfspy_record_opts, o, .pid = 1, .stack_size = 12);
		T_EQ_INT(perfspy_record__start(&o, &r), -EINVAL);
	}
	{
		PERFSPY_OPTS(perfspy_record_opts, o, .pid = 1, .mmap_pages = 3);
		T_EQ_INT(perfspy_record__start(&o, &r), -EINVAL);
	}
	{
		PERFSPY_OPTS(perfspy_record_opts, o, .pid = 1, .save = true, .save_fd = -1);
		T_EQ_INT(perfspy_record__start(&o, &r), -EINVAL);
	}
	{
		struct {
			struct perfspy_record_opts o;
			u64 tail;
		} big = { .o = { .sz = sizeof(big), .pid = 1 }, .tail = 1 };
		T_EQ_INT(perfspy_record__start(&big.o, &r), -PERFSPY_E_OPTS);
	}
	T_EQ_INT(perfspy_record__fd(NULL), -1);
	perfspy_record__stop(NULL);
	perfspy_record__free(NULL);
	T_EQ_INT(perfspy_record__finish(NULL), -EINVAL);
}

static void append(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0600);

	T(fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text));
	if (fd >= 0)
		close(fd);
}

static const char *name_at(const struct jit_map *m, u64 a)
{
	const struct jit_entry *e = m ? jit_map_find(m, a) : NULL;

	return e ? e->name : NULL;
}

static void test_follow(void)
{
	char dir[] = "/tmp/perfspy-test-live.XXXXXX", path[512];
	struct jit_map *m = NULL;
	u64 off = 0;

	if (!mkdtemp(dir)) {
		T(0);
		return;
	}
	snprintf(path, sizeof(path), "%s/perf-77.map", dir);
	T_EQ_INT(jit_map_follow_perf_map(&m, dir, 77, &off, NULL), 0); /* no file */
	T(m == NULL);
	append(path, "1000 10 py::a:a.py\n2000 10 py::b:b");
	T_EQ_INT(jit_map_follow_perf_map(&m, dir, 77, &off, NULL), 1);
	T_EQ_INT(off, strlen("1000 10 py::a:a.py\n"));
	T_EQ_STR(name_at(m, 0x1004), "py::a:a.py");
	T(name_at(m, 0x2004) == NULL); /* half a line: not yet */
	T_EQ_INT(jit_map_follow_perf_map(&m, dir, 77, &off, NULL), 0);
	append(path, ".py\n3000 8 py::c:c.py\n");
	T_EQ_INT(jit_map_follow_perf_map(&m, dir, 77, &off, NULL), 1);
	T_EQ_STR(name_at(m, 0x2004), "py::b:b.py");
	T_EQ_STR(name_at(m, 0x3000), "py::c:c.py");
	T_EQ_STR(name_at(m, 0x1000), "py::a:a.py");
	T_EQ_INT(jit_map_size(m), 3);
	jit_map_free(m);
	unlink(path);
	rmdir(dir);
}

/* The registers perfspy record samples, per machine (docs/arm64.md
 * §2.1): perf's own masks, and on aarch64 never VG (bit 46), which the
 * kernel refuses for cpu-clock on SVE CPUs. */
static void test_regs_mask(void)
{
	u64 arm = live_regs_user_mask("aarch64");

	T_EQ_INT(live_regs_user_mask("x86_64"), 0xff0fff);
	T_EQ_INT(arm, 0x1ffffffffULL);
	T_EQ_INT(__builtin_popcountll(arm), 33);
	T(!(arm & (1ULL << 46)));
	T_EQ_INT(live_regs_user_mask("arm64"), arm);
	T_EQ_INT(live_regs_user_mask("riscv64"), 0);
}

/* Ring sizes (docs/design.md §3.3): 1024 pages at 99 Hz; at 6,336 Hz
 * (64 threads' worth on one CPU) 250 ms of full 65,528-byte samples is
 * about 25,700 pages, capped by 64 MiB over the CPUs; never under 128. */
static void test_ring_pages(void)
{
	T_EQ_INT(live_ring_pages(99, 65528, 4096, 2), 1024);
	T_EQ_INT(live_ring_pages(6336, 65528, 4096, 2), 8192);
	T_EQ_INT(live_ring_pages(1000, 65528, 4096, 2), 4096);
	T_EQ_INT(live_ring_pages(1000, 8192, 4096, 2), 1024);
	T_EQ_INT(live_ring_pages(99, 65528, 4096, 64), 256);
	T_EQ_INT(live_ring_pages(6336, 65528, 4096, 64), 256);
	T_EQ_INT(live_ring_pages(99, 65528, 4096, 1024), 128);
	T_EQ_INT(live_ring_pages(6336, 65528, 65536, 1), 1024);
	T_EQ_INT(live_ring_pages(99, 65528, 0, 2), 1024);
}

int main(void)
{
	test_regs_mask();
	test_ring_pages();
	test_stream();
	test_build_id();
	test_trim();
	test_opts();
	test_follow();
	TEST_MAIN_END();
}
