// SPDX-License-Identifier: GPL-2.0
/*
 * Live capture through libperf (perfspy_record__*, include/perfspy.h).
 *
 * One cpu-clock event, opened per (online CPU, thread) with inherit, as
 * `perf record --call-graph dwarf` opens it (attr checked against
 * `perf evlist -v` on perf 6.1's own recording: sample_regs_user 0xff0fff,
 * exclude_callchain_user, mmap2/comm/task, sample_id_all). libperf maps one
 * ring buffer per CPU and points every other fd of that CPU at it
 * (tools/lib/perf/evlist.c mmap_per_cpu); inherited events write into
 * their parent's buffer (kernel/events/ring_buffer.c perf_output_begin),
 * so threads and processes created later land in the same buffers.
 *
 * A capture thread polls the buffers and copies every record into a pipe
 * (and the optional save fd), a FINISHED_ROUND after each pass over all
 * buffers, so the reader's round ordering can release what it holds
 * (perf's builtin-record.c record__mmap_read_all does the same). The
 * reader is the caller's session on the pipe's other end; memory is
 * bounded by the ring buffers, one pass's copy and the pipe. A slow reader
 * makes the pipe full, the capture thread waits in write(), and the kernel
 * counts what no longer fits as LOST records: the recording degrades, it
 * never grows.
 *
 * Launch: fork, the child waits on a pipe until the events (disabled,
 * enable_on_exec) are open, then execs; an exec failure comes back on a
 * close-on-exec pipe (live_proc.c; perf's evlist__prepare_workload uses
 * the same two pipes). Attach: events on every thread of /proc/PID/task, opened
 * disabled, then the process's threads and executable mappings are
 * synthesized from /proc (live_stream.c), then the events are enabled.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <perf/core.h>
#include <perf/cpumap.h>
#include <perf/event.h>
#include <perf/evlist.h>
#include <perf/evsel.h>
#include <perf/mmap.h>
#include <perf/threadmap.h>

#include "common/opts.h"
#include "live.h"
#include "perfspy.h"

#define DEFAULT_RATE 100
#define DEFAULT_STACK 65528 /* the largest dump perf accepts (dwarf,65528) */
#define DEFAULT_PAGES 1024  /* 4 MiB per CPU: 64 full-size samples */
#define BUFFERS_MAX (64ULL << 20) /* ring buffers of all CPUs, by default */
#define BUFFER_MS 250 /* full-size samples of one CPU a buffer holds, at least */
#define MIN_PAGES 8
#define POLL_MS 100
#define POLL_BACKLOG_MS 10
#define LIVE_NICE (-10) /* the capture thread's, from nice 0 */
/* What the capture thread holds for a reader that lags (startup symbol
 * loading, a busy machine): about 1000 full-size samples. */
#define BACKLOG_MAX (64u << 20)
/* The machine this capture runs on, which picks the sampled registers
 * (live_regs_user_mask). */
#if defined(__aarch64__)
#define HOST_MACHINE "aarch64"
#elif defined(__x86_64__)
#define HOST_MACHINE "x86_64"
#else
#define HOST_MACHINE ""
#endif

struct perfspy_record {
	struct log_sink log;
	struct perf_evlist *evlist;
	struct perf_evsel *evsel; /* owned by evlist once added */
	struct perf_cpu_map *cpus;
	struct perf_thread_map *threads;
	struct perf_event_attr attr;
	/* --idle (issue 10, docs/top.md §3): a context-switches event
	 * (period 1, sampled in the thread that leaves the CPU) in an evlist
	 * and ring buffers of its own, so the capture knows which event a
	 * record is from and writes that as the record's id. */
	bool idle;
	struct perf_evlist *evlist_cs;
	struct perf_event_attr attr_cs;
	int rfd, wfd;		 /* the stream pipe */
	int save_fd;		 /* borrowed, or -1 */
	pid_t pid;
	bool launched, reaped;
	int status;
	int go_fd;		 /* launch: write end the child waits on */
	int pidfd;		 /* attach: readable when the process ends */
	u64 deadline_ns;	 /* monotonic, 0: none */
	u64 t_start, t_end;
	pthread_t thr;
	bool thr_started, finished;
	int stop_req;		 /* __atomic, set by __stop() */
	int err;		 /* what ended the capture early */
	struct live_buf out;	 /* backlog: records not yet in the pipe */
	size_t out_pos;		 /* bytes of out already written */
	u32 nr_threads, pages;
	/* On-CPU ns per thread of the target (/proc/PID/task/TID/schedstat)
	 * when sampling started, and last seen while it ran. */
	struct live_cpu *cpu0, *cpu1;
	size_t nr_cpu0, nr_cpu1, cap_cpu1;
	u64 cpu_seen_ns;
	u64 samples, lost, lost_records, bytes;
	/* Where a capture that loses samples falls behind (-vv): the
	 * longest stretch between two passes over the ring buffers (the
	 * capture thread waiting for a CPU), the largest backlog, and the
	 * ring reads that stopped at the backlog cap (the reader lagging). */
	u64 pass_ns, gap_max_ns;
	size_t backlog_max;
	u64 backlog_stops;
};

static u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (u64)ts.tv_sec * 1000000000ULL + (u64)ts.tv_nsec;
}

/* libperf prints through one process-wide hook, to stderr by default
 * (tools/lib/perf/core.c __base_pr), and sets its page_size only in
 * libperf_init(): install a hook that drops everything (the library never
 * prints; our own messages go to the log sink). */
static int libperf_quiet(enum libperf_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	(void)fmt;
	(void)ap;
	return 0;
}

/* ------------------------------------------------------------ output */

static bool stop_requested(struct perfspy_record *r)
{
	return __atomic_load_n(&r->stop_req, __ATOMIC_ACQUIRE) != 0;
}

/* End sampling when asked to or at the deadline; idempotent. The end
 * time is taken here, so a reader that lags (the capture thread then
 * waits on the pipe) neither lengthens the recording nor its rate's
 * denominator. */
static bool check_end(struct perfspy_record *r)
{
	if (r->t_end)
		return true;
	if (stop_requested(r) || (r->deadline_ns && now_ns() >= r->deadline_ns)) {
		perf_evlist__disable(r->evlist);
		if (r->evlist_cs)
			perf_evlist__disable(r->evlist_cs);
		r->t_end = now_ns();
		live_snap_cpu(r->pid, &r->cpu1, &r->nr_cpu1, &r->cap_cpu1);
		return true;
	}
	/* Every 100 ms: a thread that ends keeps a recent value (a read of
	 * a few dozen small /proc files, about 1 ms of CPU a second). */
	if (now_ns() - r->cpu_seen_ns >= 100000000ULL) {
		r->cpu_seen_ns = now_ns();
		live_snap_cpu(r->pid, &r->cpu1, &r->nr_cpu1, &r->cap_cpu1);
	}
	return false;
}

/* Write all of @p to the save file (blocking: a regular file). */
static int write_all(int fd, const u8 *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/*
 * Move the backlog into the pipe as far as it takes it now (the pipe is
 * non-blocking); with @wait, until all is written. What the pipe took
 * goes to the save file too, so it holds exactly what the reader got.
 */
static int push_out(struct perfspy_record *r, bool wait)
{
	struct pollfd pfd = { .fd = r->wfd, .events = POLLOUT };
	int err = 0;

	while (r->out_pos < r->out.len) {
		ssize_t w = write(r->wfd, r->out.p + r->out_pos, r->out.len - r->out_pos);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN) {
			if (!wait)
				break;
			check_end(r);
			poll(&pfd, 1, POLL_MS);
			continue;
		}
		if (w < 0)
			return -errno;
		if (r->save_fd >= 0 &&
		    (err = write_all(r->save_fd, r->out.p + r->out_pos, (size_t)w)))
			return err;
		r->out_pos += (size_t)w;
		r->bytes += (u64)w;
	}
	if (r->out_pos == r->out.len) {
		r->out.len = r->out_pos = 0;
	} else if (r->out_pos >= r->out.len / 2) {
		/* Keep the backlog at the front: it never outgrows the cap. */
		memmove(r->out.p, r->out.p + r->out_pos, r->out.len - r->out_pos);
		r->out.len -= r->out_pos;
		r->out_pos = 0;
	}
	return 0;
}

/*
 * Keeping up (docs/design.md §3.3): on a machine whose CPUs the target
 * keeps busy, a thread at the default priority gets its fair share of a
 * CPU among the target's threads (1/33 of one with 64 busy threads on 2
 * CPUs), so a capture pass waits seconds for a CPU and the ring buffers
 * overflow. The capture thread uses about 1% of a CPU; nice -10 lets it
 * run when it wakes. Only from the default nice 0, and only where the
 * caller may (CAP_SYS_NICE or RLIMIT_NICE): a caller that chose a
 * priority keeps it. Linux's nice is per thread (setpriority(2) with a
 * thread id).
 */
static void raise_priority(struct log_sink *log, const char *what)
{
	id_t tid = (id_t)syscall(SYS_gettid);
	int nice;

	errno = 0;
	nice = getpriority(PRIO_PROCESS, tid);
	if (errno || nice != 0)
		return;
	if (setpriority(PRIO_PROCESS, tid, LIVE_NICE))
		pr_debug(log, "record: %s keeps nice 0: %s", what, strerror(errno));
}

/* ------------------------------------------------------------ attach */

/* COMM (+ FORK for non-leaders) per thread and MMAP2 per executable
 * mapping of an attached process. A thread that exits meanwhile is
 * skipped, as perf does ("some threads may exit just after scan"). */
static int synth_process(struct perfspy_record *r, u32 id_size)
{
	char path[96];
	size_t len;
	char *text;
	int i, err = 0;

	for (i = 0; i < perf_thread_map__nr(r->threads) && !err; i++) {
		pid_t tid = perf_thread_map__pid(r->threads, i);

		snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)r->pid, (int)tid);
		text = live_read_text(path, &len);
		if (!text)
			continue;
		if (len && text[len - 1] == '\n')
			text[len - 1] = '\0';
		if (tid != r->pid)
			err = live_put_fork(&r->out, r->pid, tid, id_size);
		if (!err)
			err = live_put_comm(&r->out, r->pid, tid, text, id_size);
		free(text);
	}
	if (err)
		return err;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)r->pid);
	text = live_read_text(path, &len);
	if (!text)
		return -ESRCH;
	err = live_put_maps(&r->out, r->pid, text, len, id_size);
	free(text);
	return err;
}

/* ------------------------------------------------------------ target */

static void reap_child(struct perfspy_record *r, bool block)
{
	int st;
	pid_t p;

	if (!r->launched || r->reaped)
		return;
	do
		p = waitpid(r->pid, &st, block ? 0 : WNOHANG);
	while (p < 0 && errno == EINTR);
	if (p == r->pid || (p < 0 && errno == ECHILD)) {
		r->reaped = true;
		r->status = p == r->pid ? st : 0;
	}
}

static bool target_gone(struct perfspy_record *r)
{
	struct pollfd pfd;

	if (r->launched) {
		reap_child(r, false);
		return r->reaped;
	}
	if (r->pidfd >= 0) {
		pfd.fd = r->pidfd;
		pfd.events = POLLIN;
		return poll(&pfd, 1, 0) > 0;
	}
	return kill(r->pid, 0) < 0 && errno == ESRCH;
}

/* ------------------------------------------------------------ capture */

/*
 * One pass over every ring buffer into the backlog; a FINISHED_ROUND
 * after it when it found anything (builtin-record.c
 * record__mmap_read_all). A backlog at BACKLOG_MAX leaves the records in
 * the ring buffers: a reader that stays behind then costs samples (LOST
 * records, counted and reported), never memory.
 */
/* --idle: the stream's own event ids (the kernel's are not known: libperf
 * keeps the fds), one per evlist. */
#define ID_CLOCK 1
#define ID_CS 2

/* Write @id as the record's PERF_SAMPLE_IDENTIFIER: first in a sample,
 * last in the sample_id of other records (docs/perf-data-format.md §1.9). */
static void put_id(struct live_buf *b, size_t start, u64 id)
{
	const struct perf_event_header *h = (const void *)(b->p + start);

	if (h->size < sizeof(*h) + 8 || start + h->size > b->len)
		return;
	memcpy(b->p + start + (h->type == PERF_RECORD_SAMPLE ? sizeof(*h) : h->size - 8U),
	       &id, 8);
}

static int drain_evlist(struct perfspy_record *r, struct perf_evlist *evlist, u64 id,
			bool *any)
{
	struct perf_mmap *map;
	union perf_event *ev;
	size_t start;
	int err = 0;

	perf_evlist__for_each_mmap(evlist, map, false) {
		if (r->out.len - r->out_pos >= BACKLOG_MAX)
			break;
		if (perf_mmap__read_init(map) < 0)
			continue; /* -EAGAIN: empty */
		while (r->out.len - r->out_pos < BACKLOG_MAX &&
		       (ev = perf_mmap__read_event(map))) {
			start = r->out.len;
			if (ev->header.type == PERF_RECORD_SAMPLE) {
				r->samples++;
				err = live_put_sample(&r->out, ev, r->attr.sample_type,
						      (u32)__builtin_popcountll(r->attr.sample_regs_user));
			} else {
				if (ev->header.type == PERF_RECORD_LOST) {
					r->lost_records++;
					r->lost += ev->lost.lost;
				}
				err = live_put(&r->out, ev, ev->header.size);
			}
			if (!err && r->idle)
				put_id(&r->out, start, id);
			perf_mmap__consume(map);
			if (err)
				break;
			*any = true;
		}
		perf_mmap__read_done(map);
		if (r->out.len - r->out_pos >= BACKLOG_MAX)
			r->backlog_stops++; /* what is left waits in the ring */
		if (err)
			return err;
	}
	return 0;
}

static int drain(struct perfspy_record *r)
{
	bool any = false;
	u64 t = now_ns();
	int err;

	if (r->pass_ns && t - r->pass_ns > r->gap_max_ns)
		r->gap_max_ns = t - r->pass_ns;
	r->pass_ns = t;
	err = drain_evlist(r, r->evlist, ID_CLOCK, &any);
	if (!err && r->evlist_cs)
		err = drain_evlist(r, r->evlist_cs, ID_CS, &any);
	if (r->out.len - r->out_pos > r->backlog_max)
		r->backlog_max = r->out.len - r->out_pos;
	return err ? err : any ? live_put_round(&r->out) : 0;
}

static void *capture_main(void *arg)
{
	struct perfspy_record *r = arg;
	struct pollfd pfd = { .fd = r->wfd, .events = POLLOUT };
	int err;

	raise_priority(&r->log, "capture thread");
	err = push_out(r, false); /* header, attr, synthesized records */

	while (!err && !check_end(r)) {
		/* With a backlog, wait for the reader, briefly: the ring
		 * buffers are drained every POLL_BACKLOG_MS meanwhile. Without
		 * one, sleep until the watermark (half a buffer) or POLL_MS;
		 * the timeouts bound how late a stop or exit is noticed. */
		if (r->out.len > r->out_pos)
			poll(&pfd, 1, POLL_BACKLOG_MS);
		else
			/* --idle: a busy thread's switch-outs fill a buffer
			 * the clock's poll does not watch; drain often. */
			perf_evlist__poll(r->evlist, r->idle ? POLL_BACKLOG_MS : POLL_MS);
		err = drain(r);
		if (!err)
			err = push_out(r, false);
		if (target_gone(r)) {
			perfspy_record__stop(r);
			check_end(r);
		}
	}
	check_end(r);
	if (!err)
		err = drain(r);
	if (!err)
		err = push_out(r, true);
	if (err)
		pr_debug(&r->log, "record: capture ended: %s", strerror(-err));
	pr_debug(&r->log, "record: capture: longest gap between passes %.1f ms, largest backlog %.1f MiB, %llu ring reads stopped at the backlog cap",
		 (double)r->gap_max_ns / 1e6, (double)r->backlog_max / (1 << 20),
		 (unsigned long long)r->backlog_stops);
	r->err = err;
	/* EOF for the reader. */
	close(r->wfd);
	r->wfd = -1;
	return NULL;
}

/* ------------------------------------------------------------ open */

u64 live_regs_user_mask(const char *machine)
{
	/* x86-64: what `perf evlist -v` shows perf 6.1 asking for. */
	if (!strcmp(machine, "x86_64"))
		return 0xff0fffULL;
	/* aarch64: PERF_REG_ARM64_X0..PC (bits 0-32); never VG (46). */
	if (!strcmp(machine, "aarch64") || !strcmp(machine, "arm64"))
		return (1ULL << 33) - 1;
	return 0;
}

static void set_attr(struct perf_event_attr *a, u32 rate, u32 stack, bool launch)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = PERF_TYPE_SOFTWARE;
	a->config = PERF_COUNT_SW_CPU_CLOCK;
	/* freq: the kernel turns it into a fixed period of 1/rate s for
	 * cpu-clock (kernel/events/core.c perf_swevent_init_hrtimer). */
	a->freq = 1;
	a->sample_freq = rate;
	a->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			 PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_PERIOD | PERF_SAMPLE_CPU |
			 PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
	a->sample_regs_user = live_regs_user_mask(HOST_MACHINE);
	a->sample_stack_user = stack;
	/* The user part of the stack comes from the dump (DWARF), as with
	 * perf record --call-graph dwarf. */
	a->exclude_callchain_user = 1;
	a->disabled = 1;
	a->enable_on_exec = launch;
	a->inherit = 1;
	a->mmap = 1;
	a->mmap2 = 1;
	/* MMAP2 with the file's build id in place of device and inode
	 * (Linux 5.12+; open_events() drops it where the kernel refuses
	 * it), as perf record --buildid-mmap: the session knows which build
	 * of each library ran, and pprof's Mappings carry it. */
	a->build_id = 1;
	/* Data maps too, as perf sets for dwarf: its libunwind finds
	 * .eh_frame_hdr through them when reading a --save file. */
	a->mmap_data = 1;
	a->comm = 1;
	a->comm_exec = 1;
	a->task = 1;
	a->sample_id_all = 1;
	a->watermark = 0; /* wake at half a buffer (ring_buffer.c rb_alloc) */
}

/* --idle: IDENTIFIER for the stream's ids, SWITCH records (in, and out
 * with PERF_RECORD_MISC_SWITCH_OUT_PREEMPT) on the clock event, and a
 * context-switches event sampled at every switch-out with the clock's
 * stack sampling and no side-band records. */
static void set_idle_attrs(struct perf_event_attr *a, struct perf_event_attr *cs)
{
	a->sample_type |= PERF_SAMPLE_IDENTIFIER;
	a->context_switch = 1;
	*cs = *a;
	cs->config = PERF_COUNT_SW_CONTEXT_SWITCHES;
	cs->freq = 0;
	cs->sample_period = 1;
	cs->mmap = cs->mmap2 = cs->mmap_data = 0;
	cs->build_id = 0;
	cs->comm = cs->comm_exec = cs->task = 0;
	cs->context_switch = 0;
}

/* libperf 6.1's perf_evsel__delete frees the evsel without putting the
 * maps propagation gave it (tools/lib/perf/evsel.c); setting the
 * evlist's maps to NULL first has libperf's own propagation put them.
 * delete then frees the evsels. */
static void delete_evlist(struct perfspy_record *r)
{
	if (!r->evlist)
		return;
	perf_evlist__munmap(r->evlist);
	perf_evlist__close(r->evlist);
	perf_evlist__set_maps(r->evlist, NULL, NULL);
	perf_evlist__delete(r->evlist);
	r->evlist = NULL;
	r->evsel = NULL;
	if (r->evlist_cs) {
		perf_evlist__munmap(r->evlist_cs);
		perf_evlist__close(r->evlist_cs);
		perf_evlist__set_maps(r->evlist_cs, NULL, NULL);
		perf_evlist__delete(r->evlist_cs);
		r->evlist_cs = NULL;
	}
}

/* One fd per (CPU, thread): 16 threads on 96 CPUs pass the usual soft
 * limit of 1024 open files. Raise it to the hard limit, as perf does on
 * EMFILE (util/evsel.c, rlimit__increase_nofile). */
static bool raise_nofile(struct perfspy_record *r)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur >= rl.rlim_max)
		return false;
	pr_info(&r->log, "record: raising the open files limit from %llu to %llu",
		(unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_max);
	rl.rlim_cur = rl.rlim_max;
	return !setrlimit(RLIMIT_NOFILE, &rl);
}

/* Open the evlist; without permission for kernel samples, retry user
 * space only (perf record falls back to cpu-clock:u the same way). */
static int open_events(struct perfspy_record *r)
{
	struct perf_evsel *cs;
	int err;

	r->evlist = perf_evlist__new();
	r->evsel = r->evlist ? perf_evsel__new(&r->attr) : NULL;
	if (!r->evsel)
		return -ENOMEM;
	perf_evlist__add(r->evlist, r->evsel);
	perf_evlist__set_maps(r->evlist, r->cpus, r->threads);
	err = perf_evlist__open(r->evlist);
	if (err == -EINVAL && r->attr.build_id) {
		/* A kernel before 5.12 rejects attr.build_id: MMAP2 with
		 * device and inode, as before. */
		struct perf_event_attr *a = perf_evsel__attr(r->evsel);

		a->build_id = 0;
		r->attr = *a;
		err = perf_evlist__open(r->evlist);
		if (!err)
			pr_info(&r->log, "record: no build ids in mmap records (Linux 5.12+ gives them)");
	}
	if (err == -EMFILE && raise_nofile(r))
		err = perf_evlist__open(r->evlist);
	if (err == -EMFILE) {
		struct rlimit rl = { 0 };
		int nt = perf_thread_map__nr(r->threads), nc = perf_cpu_map__nr(r->cpus);

		getrlimit(RLIMIT_NOFILE, &rl);
		pr_warn(&r->log, "record: %d threads x %d CPUs need %d open files (one event each, docs/design.md §3.3), more than the limit of %llu: raise it (ulimit -n)",
			nt, nc, nt * nc * (r->idle ? 2 : 1), (unsigned long long)rl.rlim_cur);
	}
	if ((err == -EACCES || err == -EPERM) && !r->attr.exclude_kernel) {
		struct perf_event_attr *a = perf_evsel__attr(r->evsel);

		a->exclude_kernel = 1;
		a->exclude_hv = 1;
		r->attr = *a;
		err = perf_evlist__open(r->evlist);
		if (!err)
			pr_info(&r->log, "record: kernel frames left out (perf_event_paranoid allows user space only)");
	}
	if (err || !r->idle)
		return err;
	r->attr_cs.exclude_kernel = r->attr.exclude_kernel;
	r->attr_cs.exclude_hv = r->attr.exclude_hv;
	r->evlist_cs = perf_evlist__new();
	cs = r->evlist_cs ? perf_evsel__new(&r->attr_cs) : NULL;
	if (!cs)
		return -ENOMEM;
	perf_evlist__add(r->evlist_cs, cs);
	perf_evlist__set_maps(r->evlist_cs, r->cpus, r->threads);
	return perf_evlist__open(r->evlist_cs);
}

/* Ring buffers: the requested size, or when that is the default, the
 * largest power of 2 down to MIN_PAGES that the locked-memory limit
 * allows (EPERM/ENOMEM past perf_event_mlock_kb without CAP_IPC_LOCK). */
static int map_buffers(struct perfspy_record *r, u32 pages, bool fixed)
{
	for (;;) {
		errno = 0;
		if (!perf_evlist__mmap(r->evlist, (int)pages) &&
		    (!r->evlist_cs || !perf_evlist__mmap(r->evlist_cs, (int)pages))) {
			r->pages = pages;
			return 0;
		}
		perf_evlist__munmap(r->evlist);
		if (fixed || pages <= MIN_PAGES || (errno != EPERM && errno != ENOMEM))
			return errno ? -errno : -ENOMEM;
		pages /= 2;
	}
}

/* DEFAULT_PAGES per CPU, or at high rates enough for BUFFER_MS of one
 * CPU's full-size samples (the kernel writes the whole stack dump into
 * the ring; the capture cuts it afterwards), within BUFFERS_MAX for all
 * CPUs together and at least perf's own default (perf_event_mlock_kb,
 * 128 pages). At 99 Hz that is the default (64 samples: 0.65 s of a
 * CPU); at 6,336 Hz (64 threads' worth of 99 Hz on one CPU,
 * docs/design.md §3.3) 4 MiB would last 10 ms of a CPU, a capture
 * thread that waits longer for a CPU loses samples. */
u32 live_ring_pages(u32 rate, u32 stack, long page, int ncpu)
{
	u64 fit = page > 0 && ncpu > 0 ? BUFFERS_MAX / (u64)page / (u64)ncpu : DEFAULT_PAGES;
	u64 want = page > 0 ? (u64)rate * (stack + 1024ULL) * BUFFER_MS / 1000 / (u64)page : 0;
	u32 pages = DEFAULT_PAGES;

	while (pages < want && pages < fit && pages < (1u << 30))
		pages *= 2;
	while (pages > 128 && pages > fit)
		pages /= 2;
	return pages;
}

static u32 default_pages(struct perfspy_record *r)
{
	return live_ring_pages((u32)r->attr.sample_freq, (u32)r->attr.sample_stack_user,
			       sysconf(_SC_PAGESIZE), perf_cpu_map__nr(r->cpus));
}

static int check_opts(const struct perfspy_record_opts *o)
{
	const char *const *argv = OPTS_GET(o, argv, NULL);
	int pid = OPTS_GET(o, pid, 0);
	u32 stack = OPTS_GET(o, stack_size, 0), pages = OPTS_GET(o, mmap_pages, 0);

	if ((pid > 0) == (argv && argv[0]) || pid < 0)
		return -EINVAL;
	if (stack % 8 || stack > DEFAULT_STACK || (pages & (pages - 1)))
		return -EINVAL;
	if (OPTS_GET(o, save, false) && OPTS_GET(o, save_fd, -1) < 0)
		return -EINVAL;
	return 0;
}

static int setup(struct perfspy_record *r, const struct perfspy_record_opts *o)
{
	const char *const *argv = OPTS_GET(o, argv, NULL);
	u32 rate = OPTS_GET(o, rate, 0), stack = OPTS_GET(o, stack_size, 0);
	u32 pages = OPTS_GET(o, mmap_pages, 0);
	u64 dur = OPTS_GET(o, duration_ms, 0), text, etext;
	u32 id_size;
	size_t synth_at, at;
	pid_t *tids = NULL;
	char **env = NULL;
	int pfd[2], errfd = -1, nr = 0, err, tries;

	if (pipe2(pfd, O_CLOEXEC) < 0)
		return -errno;
	r->rfd = pfd[0];
	r->wfd = pfd[1];
	/* A larger pipe lets the capture thread run ahead of the reader by
	 * more than 64 KiB (one stack dump); 1 MiB is the unprivileged cap
	 * (/proc/sys/fs/pipe-max-size); failure only costs that. */
	fcntl(r->wfd, F_SETPIPE_SZ, 1 << 20);
	/* Non-blocking: a full pipe must not hide the stop or deadline. */
	fcntl(r->wfd, F_SETFL, O_NONBLOCK);
	set_attr(&r->attr, rate ? rate : DEFAULT_RATE, stack ? stack : DEFAULT_STACK,
		 argv != NULL);
	r->idle = OPTS_GET(o, idle, false);
	if (r->idle)
		set_idle_attrs(&r->attr, &r->attr_cs);
	r->cpus = perf_cpu_map__new(NULL);
	if (!r->cpus)
		return -ENOMEM;
	if (argv) {
		env = live_child_env(!OPTS_GET(o, no_perf_map_env, false));
		if (!env)
			return -ENOMEM;
		err = live_fork_child(argv, env, &r->pid, &r->go_fd, &errfd);
		if (err)
			goto out;
		r->launched = true;
		r->threads = perf_thread_map__new_array(1, &r->pid);
		err = r->threads ? open_events(r) : -ENOMEM;
	} else {
		r->pid = OPTS_GET(o, pid, 0);
		/* A thread that exits between the listing and the open fails
		 * it with ESRCH: list again (perf retries the same way). */
		for (tries = 0; tries < 5; tries++) {
			free(tids);
			tids = NULL;
			delete_evlist(r);
			perf_thread_map__put(r->threads);
			r->threads = NULL;
			err = live_list_tids(r->pid, &tids, &nr);
			if (err)
				break;
			r->threads = perf_thread_map__new_array(nr, tids);
			err = r->threads ? open_events(r) : -ENOMEM;
			/* A thread created between the listing and the open
			 * inherited nothing: list again, open again. */
			if (!err && tries < 4 && live_new_threads(r->pid, tids, nr))
				err = -ESRCH;
			if (err != -ESRCH)
				break;
		}
		r->nr_threads = (u32)nr;
		r->pidfd = (int)syscall(SYS_pidfd_open, r->pid, 0);
	}
	if (!err)
		err = map_buffers(r, pages ? pages : default_pages(r), pages != 0);
	if (err)
		goto out;
	id_size = live_id_size(r->attr.sample_type);
	err = live_put_header(&r->out);
	if (!err && r->idle) {
		u64 id_clock = ID_CLOCK, id_cs = ID_CS;

		err = live_put_attr_ids(&r->out, &r->attr, &id_clock, 1);
		if (!err)
			err = live_put_attr_ids(&r->out, &r->attr_cs, &id_cs, 1);
	} else if (!err) {
		err = live_put_attr(&r->out, &r->attr);
	}
	synth_at = r->out.len;
	live_kernel_text(&text, &etext);
	if (!err && text && !r->attr.exclude_kernel)
		err = live_put_kernel_mmap(&r->out, text, etext, id_size);
	if (!err && !argv)
		err = synth_process(r, id_size);
	if (err)
		goto out;
	/* --idle: the synthesized records are the clock event's too. */
	for (at = synth_at; r->idle && at + sizeof(struct perf_event_header) <= r->out.len;
	     at += ((struct perf_event_header *)(r->out.p + at))->size) {
		if (((struct perf_event_header *)(r->out.p + at))->size < 8)
			break;
		put_id(&r->out, at, ID_CLOCK);
	}
	{
		size_t cap0 = 0;

		live_snap_cpu(r->pid, &r->cpu0, &r->nr_cpu0, &cap0);
	}
	r->t_start = now_ns();
	r->cpu_seen_ns = r->t_start;
	r->deadline_ns = dur ? r->t_start + dur * 1000000ULL : 0;
	if (argv) {
		r->nr_threads = 1;
		err = live_release_child(&r->go_fd, errfd);
	} else {
		perf_evlist__enable(r->evlist);
		if (r->evlist_cs)
			perf_evlist__enable(r->evlist_cs);
	}
out:
	if (errfd >= 0)
		close(errfd);
	free(env);
	free(tids);
	return err;
}

int perfspy_record__start(const struct perfspy_record_opts *opts,
			  struct perfspy_record **out)
{
	struct perfspy_record *r;
	sigset_t all, old;
	int err;

	*out = NULL;
	if (!OPTS_VALID(opts, perfspy_record_opts))
		return -PERFSPY_E_OPTS;
	err = check_opts(opts);
	if (err)
		return err;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->rfd = r->wfd = r->go_fd = r->pidfd = -1;
	r->save_fd = OPTS_GET(opts, save, false) ? OPTS_GET(opts, save_fd, -1) : -1;
	r->log.fn = OPTS_GET(opts, log_fn, NULL);
	r->log.ctx = OPTS_GET(opts, log_ctx, NULL);
	r->log.level = OPTS_GET(opts, log_level, 0);
	if (!r->log.level)
		r->log.level = LOG_WARN;
	libperf_init(libperf_quiet);
	err = setup(r, opts);
	if (!err) {
		/* Signals stay with the caller's threads: the capture thread
		 * only polls (its timeout notices a stop). */
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		err = -pthread_create(&r->thr, NULL, capture_main, r);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		r->thr_started = !err;
	}
	if (err) {
		perfspy_record__free(r);
		return err;
	}
	*out = r;
	return 0;
}

int perfspy_record__fd(const struct perfspy_record *r)
{
	return r ? r->rfd : -1;
}

void perfspy_record__stop(struct perfspy_record *r)
{
	if (r)
		__atomic_store_n(&r->stop_req, 1, __ATOMIC_RELEASE);
}

/* A launched command outliving the recording: SIGTERM, then SIGKILL
 * after 2 s, and reap it. */
static void end_child(struct perfspy_record *r)
{
	int i;

	if (!r->launched || r->reaped)
		return;
	if (r->go_fd >= 0) { /* never released: it exits on EOF */
		close(r->go_fd);
		r->go_fd = -1;
		reap_child(r, true);
		return;
	}
	reap_child(r, false);
	if (r->reaped)
		return;
	kill(r->pid, SIGTERM);
	for (i = 0; i < 40 && !r->reaped; i++) {
		usleep(50000);
		reap_child(r, false);
	}
	if (!r->reaped) {
		kill(r->pid, SIGKILL);
		reap_child(r, true);
	}
}

int perfspy_record__finish(struct perfspy_record *r)
{
	if (!r)
		return -EINVAL;
	if (!r->finished) {
		perfspy_record__stop(r);
		if (r->thr_started)
			pthread_join(r->thr, NULL);
		r->thr_started = false;
		end_child(r);
		r->finished = true;
	}
	return r->err;
}

int perfspy_record__stats(const struct perfspy_record *r,
			  struct perfspy_record_stats *st)
{
	struct perfspy_record_stats s = { 0 };
	u64 end;

	if (!r || !st || st->sz < sizeof(size_t))
		return -EINVAL;
	s.sz = st->sz;
	s.pid = r->pid;
	s.rate = (u32)r->attr.sample_freq;
	s.nr_cpus = r->cpus ? (u32)perf_cpu_map__nr(r->cpus) : 0;
	s.mmap_pages = r->pages;
	s.nr_threads = r->nr_threads;
	s.kernel = !r->attr.exclude_kernel;
	/* The counters are the capture thread's: read them after
	 * __finish() for final values. */
	s.samples = r->samples;
	s.lost = r->lost;
	s.lost_records = r->lost_records;
	s.bytes = r->bytes;
	end = r->t_end ? r->t_end : now_ns();
	s.duration_ns = r->t_start && end > r->t_start ? end - r->t_start : 0;
	s.exited = r->launched && r->reaped;
	s.exit_status = r->status;
	memcpy(st, &s, st->sz < sizeof(s) ? st->sz : sizeof(s));
	return 0;
}

int perfspy_record__thread_cpu(const struct perfspy_record *r, int tid,
			       uint64_t *ns)
{
	u64 start = 0;
	size_t i;

	if (!r || !ns)
		return -EINVAL;
	for (i = 0; i < r->nr_cpu0; i++)
		if (r->cpu0[i].tid == tid)
			start = r->cpu0[i].ns;
	for (i = 0; i < r->nr_cpu1; i++) {
		if (r->cpu1[i].tid == tid) {
			*ns = r->cpu1[i].ns > start ? r->cpu1[i].ns - start : 0;
			return 0;
		}
	}
	return -ENOENT;
}

void perfspy_record__free(struct perfspy_record *r)
{
	if (!r)
		return;
	/* A reader that stopped early: closing its end turns the capture
	 * thread's blocked write() into EPIPE (SIGPIPE is blocked there). */
	if (r->rfd >= 0)
		close(r->rfd);
	r->rfd = -1;
	perfspy_record__finish(r);
	delete_evlist(r);
	perf_cpu_map__put(r->cpus);
	perf_thread_map__put(r->threads);
	if (r->wfd >= 0)
		close(r->wfd);
	if (r->go_fd >= 0)
		close(r->go_fd);
	if (r->pidfd >= 0)
		close(r->pidfd);
	live_buf_free(&r->out);
	free(r->cpu0);
	free(r->cpu1);
	free(r);
}
