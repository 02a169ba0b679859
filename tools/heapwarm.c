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
 */
#include "cli.h"

#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
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
static struct {
	pthread_t th;
	bool running;
	bool stop; /* (atomic) */
} hw;

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
		if (brk <= done) {
			struct timespec ts = { 0, nap };

			/* 0.1 ms after growth, up to 2 ms while the heap
			 * stays put: a steady conversion grows it rarely,
			 * and each wake-up costs a context switch. */
			nanosleep(&ts, NULL);
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

/* At exit: the thread stops before anything is torn down. */
static void heapwarm_stop(void)
{
	if (!hw.running)
		return;
	__atomic_store_n(&hw.stop, true, __ATOMIC_RELAXED);
	pthread_join(hw.th, NULL);
	hw.running = false;
}
#endif

void cli_heapwarm_start(void)
{
#ifndef HEAPWARM_OFF
	long pg = sysconf(_SC_PAGESIZE);
	const char *e = getenv("PERFSPY_HEAPWARM");

	/* One CPU has no spare time to warm with; PERFSPY_HEAPWARM=0
	 * turns it off (to measure it). */
	if (hw.running || pg <= 0 || sysconf(_SC_NPROCESSORS_ONLN) < 2 ||
	    (e && !strcmp(e, "0")))
		return;
	if (!mallopt(M_TRIM_THRESHOLD, INT32_MAX) ||
	    !mallopt(M_MMAP_THRESHOLD, 32 << 20) ||
	    !mallopt(M_TOP_PAD, 1 << 20))
		return;
	if (pthread_create(&hw.th, NULL, heapwarm_main, NULL))
		return;
	hw.running = true;
	atexit(heapwarm_stop);
#endif
}
