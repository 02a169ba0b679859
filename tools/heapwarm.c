// SPDX-License-Identifier: GPL-2.0
/*
 * The heap warmer of the batch commands (convert, report, merge, info;
 * docs/design.md §6.5).
 *
 * On this project's machines (paravirtual VMs with shadow page tables)
 * the first touch of a new page costs 7-14 us against 0.2 us for a page
 * touched before, by any thread of the process: a system-wide
 * conversion's hash tables, stack pools and inflated debug sections
 * came to 20,000 first touches, a third of its time. While one thread
 * converts, the heap warmer reads one byte of each page the heap has
 * grown to but the allocator has not handed out yet, so the converting
 * thread finds them warm.
 *
 * It relies on glibc's malloc in one way that mallopt() makes hold:
 * - blocks up to 32 MB come from the main heap (M_MMAP_THRESHOLD), so
 *   the tables that double live where the warmer looks;
 * - the heap is grown 1 MB ahead of need (M_TOP_PAD), which is what the
 *   warmer warms and all it adds to peak RSS;
 * - the heap never shrinks (M_TRIM_THRESHOLD at its maximum), so every
 *   page below the break stays mapped: the warmer never reads a page
 *   the allocator gave back. The commands are short-lived and free
 *   little before exit, so nothing is kept that would have been given
 *   back for long.
 * The reads race with nothing the program depends on: they read pages
 * above every allocated block, whose contents nobody reads before
 * writing them. Under a sanitizer (its own allocator, or TSan's race
 * reports) the warmer is not started.
 *
 * Once the heap has grown by 48 MB, the warmer grows it by one
 * large block and gives that range to transparent huge pages
 * (heap_thp_reserve(), docs/design.md §6.7): there a first touch maps
 * 2 MB at once, 0.3-0.7 us per 4 KB against 14-19 us for a 4 KB fault.
 * It warms nothing in that range, and goes on above it as before.
 */
#include "cli.h"
#include "cpus.h"

#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define HEAPWARM_OFF 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
	__has_feature(memory_sanitizer)
#define HEAPWARM_OFF 1
#endif
#endif

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#ifndef HEAPWARM_OFF
/* The heap range given to huge pages: virtual space, and commit charge
 * where overcommit is strict; memory only as it is touched. Halved down
 * to HEAP_THP_MIN while malloc() refuses it. */
#define HEAP_THP_RESERVE ((size_t)512 << 20)
#define HEAP_THP_MIN ((size_t)32 << 20)
/* The heap's growth before huge pages: a small conversion's heap (about
 * 24 MB for bench-memory's repeated recording) stays on warmed 4 KB
 * pages, where the unused part of its 2 MB pages would add to its peak
 * RSS (issue 16: never above perf report's, and flat in input size).
 * At 24 MB the 10 GB file crossed the line near its end in some runs
 * and peaked at 35-39 MB instead of 31. PERFSPY_THP_AFTER=MB sets it
 * (to measure it, and for tests). */
#define HEAP_THP_AFTER_MB 48
/* glibc's M_MMAP_MAX default (DEFAULT_MMAP_MAX, malloc/malloc.c). */
#define GLIBC_MMAP_MAX 65536

/* The PMD huge page size, or 0 where transparent huge pages are off
 * ("[never]") or unknown (no sysfs: then no madvise either). Both
 * "[always]" and "[madvise]" honour MADV_HUGEPAGE (the kernel's
 * admin-guide/mm/transhuge.rst). */
static size_t thp_size(void)
{
	char buf[128];
	unsigned long sz = 0;
	size_t n;
	FILE *f;

	f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "re");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	if (!strchr(buf, '[') || strstr(buf, "[never]"))
		return 0;
	f = fopen("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", "re");
	if (!f)
		return 0;
	if (fscanf(f, "%lu", &sz) != 1)
		sz = 0;
	fclose(f);
	/* A power of two above the page size, or nothing. */
	if (sz <= (unsigned long)sysconf(_SC_PAGESIZE) || (sz & (sz - 1)))
		return 0;
	return sz;
}

/*
 * Grow the heap by one block, mark the whole huge pages inside it (of
 * @hp bytes, thp_size()) MADV_HUGEPAGE and free it: the block joins the
 * top chunk, which malloc() carves every later block from, so the
 * heap's first HEAP_THP_RESERVE bytes fault in 2 MB pages. One block,
 * with mmap() off for it (M_MMAP_MAX 0), because malloc() writes a
 * header at a block's start: a page touched before the madvise() keeps
 * its 2 MB range on 4 KB pages, so a row of smaller blocks would leave
 * one such range at each header. The top chunk is never trimmed (M_TRIM_THRESHOLD
 * is at its maximum, set before this runs), so the range stays ours.
 * Nothing is unmapped: a failed step leaves the heap as it would have
 * grown anyway.
 */
static void heap_thp_reserve(size_t hp)
{
	uintptr_t lo, hi;
	char *p = NULL;
	size_t want;

	if (!mallopt(M_MMAP_MAX, 0))
		return;
	for (want = HEAP_THP_RESERVE; want >= HEAP_THP_MIN && !(p = malloc(want)); want /= 2)
		;
	mallopt(M_MMAP_MAX, GLIBC_MMAP_MAX);
	if (!p)
		return;
	lo = ((uintptr_t)p + hp - 1) & ~(uintptr_t)(hp - 1);
	hi = ((uintptr_t)p + want) & ~(uintptr_t)(hp - 1);
	if (hi > lo)
		madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
	free(p);
}

static struct {
	pthread_t th;
	bool running;
	bool stop; /* (atomic; set under lock) */
	pthread_mutex_t lock;
	pthread_cond_t wake; /* heapwarm_stop() to the thread's nap */
	size_t hp; /* heap_thp_reserve(hp) once the heap grew @after; 0 done */
	uintptr_t base; /* the break when the commands started */
	uintptr_t after; /* (atomic: cli_heapwarm_big() sets it to 0) */
	bool after_set;	 /* by PERFSPY_THP_AFTER */
} hw;

/*
 * Sleep @ns, or until heapwarm_stop(): the exit joins this thread, and
 * a nanosleep() there held every conversion's exit up to 2 ms (1.0 ms
 * on average, docs/design.md §6.24).
 */
static void nap_for(long ns)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_nsec += ns;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&hw.lock);
	while (!hw.stop && pthread_cond_timedwait(&hw.wake, &hw.lock, &ts) == 0)
		;
	pthread_mutex_unlock(&hw.lock);
}

static void *heapwarm_main(void *arg)
{
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE), done = 0, brk;
	unsigned char acc = 0;
	long nap = 100 * 1000;

	(void)arg;
	while (!__atomic_load_n(&hw.stop, __ATOMIC_RELAXED)) {
		brk = (uintptr_t)sbrk(0) & ~(pg - 1);
		if (!done)
			done = brk;
		if (hw.hp && brk - hw.base >= __atomic_load_n(&hw.after, __ATOMIC_RELAXED)) {
			/* From this thread: M_ARENA_MAX 1 makes its
			 * malloc() the main heap's. */
			heap_thp_reserve(hw.hp);
			hw.hp = 0;
			brk = (uintptr_t)sbrk(0) & ~(pg - 1);
			if (done < brk)
				done = brk;
			continue;
		}
		if (brk <= done) {
			/* 0.1 ms after growth, up to 2 ms while the heap
			 * stays put: a steady conversion grows it rarely,
			 * and each wake-up costs a context switch. */
			nap_for(nap);
			if (nap < 2000 * 1000)
				nap *= 2;
			continue;
		}
		nap = 100 * 1000;
		/* One call puts the pages in the page tables (1 us a page
		 * instead of a 7 us fault); the reads fill what a fault
		 * would (the shadow entries). The first page may hold
		 * the allocator's top-chunk header: read only, as every
		 * page here. */
		madvise((void *)done, brk - done, MADV_POPULATE_WRITE);
		for (; done < brk; done += pg)
			acc ^= *(const volatile unsigned char *)done;
	}
	__asm__ volatile("" : : "r"(acc));
	return NULL;
}

/* The nap's lock and condition, on CLOCK_MONOTONIC; false if none. */
static bool wake_init(void)
{
	pthread_condattr_t ca;
	bool ok;

	if (pthread_condattr_init(&ca))
		return false;
	ok = !pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) &&
	     !pthread_cond_init(&hw.wake, &ca);
	pthread_condattr_destroy(&ca);
	if (ok && pthread_mutex_init(&hw.lock, NULL)) {
		pthread_cond_destroy(&hw.wake);
		ok = false;
	}
	return ok;
}

/* PERFSPY_HEAPWARM=0 or PERFSPY_THP=0: that part off (to measure it). */
static bool env_off(const char *name)
{
	const char *e = getenv(name);

	return e && !strcmp(e, "0");
}

/* At exit: the thread stops before anything is torn down. */
static void heapwarm_stop(void)
{
	if (!hw.running)
		return;
	pthread_mutex_lock(&hw.lock);
	__atomic_store_n(&hw.stop, true, __ATOMIC_RELAXED);
	pthread_cond_signal(&hw.wake);
	pthread_mutex_unlock(&hw.lock);
	pthread_join(hw.th, NULL);
	hw.running = false;
}
#endif

void cli_heapwarm_big(void)
{
#ifndef HEAPWARM_OFF
	/* Read by the thread; hw.hp is its own. Huge pages already
	 * reserved (or none to be had) leave nothing to do. */
	if (hw.running && !hw.after_set)
		__atomic_store_n(&hw.after, 0, __ATOMIC_RELAXED);
#endif
}

void cli_heapwarm_start(void)
{
#ifndef HEAPWARM_OFF
	static bool started;
	const char *after = getenv("PERFSPY_THP_AFTER");
	unsigned long mb = HEAP_THP_AFTER_MB;
	char *end;
	long pg = sysconf(_SC_PAGESIZE);
	bool warm = !env_off("PERFSPY_HEAPWARM"), thp = !env_off("PERFSPY_THP");
	size_t hp;

	if (started || pg <= 0 || (!warm && !thp))
		return;
	started = true;
	hp = thp ? thp_size() : 0; /* 0: nothing to reserve for */
	if (!mallopt(M_TRIM_THRESHOLD, INT32_MAX) ||
	    !mallopt(M_MMAP_THRESHOLD, 32 << 20) ||
	    !mallopt(M_TOP_PAD, 1 << 20))
		return;
	hw.base = (uintptr_t)sbrk(0);
	if (after && *after) {
		mb = strtoul(after, &end, 10);
		if (*end || mb > 1 << 20)
			mb = HEAP_THP_AFTER_MB;
		else
			hw.after_set = true;
	}
	hw.after = (uintptr_t)mb << 20;
	/* With the warmer, huge pages come when the heap has grown
	 * hw.after, reserved from the warmer's thread: one malloc
	 * arena (M_ARENA_MAX 1) makes that the main heap, and puts the
	 * -j N workers' tables there too. Without it (one CPU), they come
	 * now: they pay on any number of CPUs. */
	if (warm && cli_cpus() >= 2) {
		if (hp && mallopt(M_ARENA_MAX, 1))
			hw.hp = hp;
		else if (hp)
			heap_thp_reserve(hp);
	} else {
		if (hp)
			heap_thp_reserve(hp);
		return;
	}
	if (!wake_init())
		return;
	if (pthread_create(&hw.th, NULL, heapwarm_main, NULL)) {
		pthread_cond_destroy(&hw.wake);
		pthread_mutex_destroy(&hw.lock);
		return;
	}
	hw.running = true;
	atexit(heapwarm_stop);
#endif
}
