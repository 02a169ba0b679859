// SPDX-License-Identifier: GPL-2.0
/*
 * Helpers shared by the SVG, speedscope and report writers (see
 * write.h): a buffered sink with escaping, and an id map. Escaping is
 * where untrusted bytes (symbol names, file names, thread names set by
 * the profiled program) meet a markup language, so every byte is checked:
 * the output must stay well-formed XML or JSON whatever the input holds.
 */
#include "write.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>

/* ---- output ---- */

int wout_init(struct wout *w, FILE *out)
{
	memset(w, 0, sizeof(*w));
	w->out = out;
	w->cap = 256 * 1024;
	w->buf = malloc(w->cap);
	return w->buf ? 0 : -ENOMEM;
}

/*
 * The writing thread. Copying a large output into the page cache is
 * work of its own: on the deep-stack bench file (114 MB of folded
 * stacks) the write() calls were 17% of the converting thread's samples,
 * most of it ext4 reserving delayed blocks page by page, while the
 * formatting of the next lines waited. Past its first 4 MB the sink
 * hands full buffers to a thread and fills the next, WOUT_BUFS in a
 * ring (docs/design.md §6.11). Only the thread touches the FILE until
 * wout_finish() joins it, so the bytes reach it in order and the caller
 * finds it as a synchronous sink leaves it.
 *
 * Both sides poll the ring for a while before they sleep: a hand-over
 * comes every few tens of us, and waking a sleeping thread costs about as
 * much on this project's paravirtual machines (with a condition variable
 * alone, 3,700 context switches in eight writes of that file and no time
 * saved).
 */
#define WOUT_BUFS 4
/* Full buffers written before the thread starts: below 4 MB its buffers'
 * first touches and its start cost more than it saves (the build bench
 * file's 2.6 MB came out 7% slower with it). */
#define WOUT_SYNC 16
#define WOUT_SPINS 4000 /* polls before sleeping: about 200 us */

struct wout_pipe {
	pthread_t th;
	pthread_mutex_t lock;
	pthread_cond_t cv; /* for a side that sleeps */
	FILE *out;
	char *bufs[WOUT_BUFS];
	size_t lens[WOUT_BUFS];
	u64 head, tail; /* written up to, handed up to (counts; atomic) */
	bool done;      /* atomic */
	int err;        /* the first write error (atomic): later ones dropped */
	int sleepers;   /* under lock */
};

static u64 ld(const u64 *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

/* Polls, then sleeps on the condition variable, until @ready(@p). */
static void pipe_wait(struct wout_pipe *p, bool (*ready)(struct wout_pipe *))
{
	int i;

	for (i = 0; i < WOUT_SPINS; i++) {
		if (ready(p))
			return;
		cpu_relax();
	}
	pthread_mutex_lock(&p->lock);
	p->sleepers++;
	while (!ready(p))
		pthread_cond_wait(&p->cv, &p->lock);
	p->sleepers--;
	pthread_mutex_unlock(&p->lock);
}

/* After a change the other side may sleep on: wake it. */
static void pipe_wake(struct wout_pipe *p)
{
	pthread_mutex_lock(&p->lock);
	if (p->sleepers)
		pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->lock);
}

static bool has_work(struct wout_pipe *p)
{
	return ld(&p->head) != ld(&p->tail) || __atomic_load_n(&p->done, __ATOMIC_ACQUIRE);
}

static bool has_room(struct wout_pipe *p)
{
	return ld(&p->tail) - ld(&p->head) < WOUT_BUFS;
}

static void *pipe_main(void *arg)
{
	struct wout_pipe *p = arg;
	unsigned i;
	u64 h;

	for (;;) {
		pipe_wait(p, has_work);
		h = ld(&p->head);
		if (h == ld(&p->tail))
			break; /* done, and nothing left */
		i = (unsigned)(h % WOUT_BUFS);
		if (!__atomic_load_n(&p->err, __ATOMIC_RELAXED) &&
		    fwrite(p->bufs[i], 1, p->lens[i], p->out) != p->lens[i])
			__atomic_store_n(&p->err, -EIO, __ATOMIC_RELAXED);
		__atomic_store_n(&p->head, h + 1, __ATOMIC_RELEASE);
		pipe_wake(p);
	}
	return NULL;
}

static void pipe_free(struct wout_pipe *p)
{
	unsigned i;

	for (i = 0; i < WOUT_BUFS; i++)
		free(p->bufs[i]);
	free(p);
}

/* The thread, with w->buf as the first buffer of its ring; false when
 * there is none to be had (then the sink writes on its own, as before). */
static bool pipe_start(struct wout *w)
{
	struct wout_pipe *p = calloc(1, sizeof(*p));
	unsigned i;

	if (!p)
		return false;
	for (i = 1; i < WOUT_BUFS; i++)
		if (!(p->bufs[i] = malloc(w->cap)))
			goto fail;
	p->out = w->out;
	if (pthread_mutex_init(&p->lock, NULL))
		goto fail;
	if (pthread_cond_init(&p->cv, NULL)) {
		pthread_mutex_destroy(&p->lock);
		goto fail;
	}
	if (pthread_create(&p->th, NULL, pipe_main, p)) {
		pthread_cond_destroy(&p->cv);
		pthread_mutex_destroy(&p->lock);
		goto fail;
	}
	p->bufs[0] = w->buf;
	w->pipe = p;
	return true;
fail:
	pipe_free(p);
	return false;
}

/* Hand w->buf (w->len bytes) to the thread. */
static void pipe_hand(struct wout *w)
{
	struct wout_pipe *p = w->pipe;
	u64 t = ld(&p->tail);

	p->lens[t % WOUT_BUFS] = w->len;
	__atomic_store_n(&p->tail, t + 1, __ATOMIC_RELEASE);
	pipe_wake(p);
}

static void wout_flush(struct wout *w)
{
	struct wout_pipe *p;

	if (!w->len || w->err) {
		w->len = 0;
		return;
	}
	/* On one CPU the thread would only take turns with this one, and
	 * each side's polling would spin while the other cannot run. */
	if (!w->pipe && !w->no_pipe && w->len == w->cap && ++w->flushes > WOUT_SYNC)
		w->no_pipe = online_cpus() < 2 || !pipe_start(w);
	if ((p = w->pipe)) {
		pipe_hand(w);
		pipe_wait(p, has_room);
		w->buf = p->bufs[ld(&p->tail) % WOUT_BUFS];
		/* Only to stop formatting early: wout_finish() reads it for
		 * good after the join. */
		if (__atomic_load_n(&p->err, __ATOMIC_RELAXED))
			w->err = -EIO;
	} else if (fwrite(w->buf, 1, w->len, w->out) != w->len) {
		w->err = -EIO;
	}
	w->len = 0;
}

int wout_finish(struct wout *w)
{
	struct wout_pipe *p = w->pipe;

	if (p) {
		if (w->len && !w->err)
			pipe_hand(w);
		__atomic_store_n(&p->done, true, __ATOMIC_RELEASE);
		pipe_wake(p);
		pthread_join(p->th, NULL);
		if (p->err)
			w->err = p->err;
		pthread_cond_destroy(&p->cv);
		pthread_mutex_destroy(&p->lock);
		pipe_free(p); /* w->buf is one of its buffers */
		w->pipe = NULL;
	} else {
		wout_flush(w);
		free(w->buf);
	}
	w->len = 0;
	if (!w->err && ferror(w->out))
		w->err = -EIO;
	w->buf = NULL;
	return w->err;
}

void wout_put(struct wout *w, const char *s, size_t n)
{
	while (n && !w->err) {
		size_t k = w->cap - w->len < n ? w->cap - w->len : n;

		memcpy(w->buf + w->len, s, k);
		w->len += k;
		s += k;
		n -= k;
		if (w->len == w->cap)
			wout_flush(w);
	}
}

void wout_str(struct wout *w, const char *s)
{
	wout_put(w, s, strlen(s));
}

void wout_fmt(struct wout *w, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		w->err = -EIO;
	else
		wout_put(w, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

void wout_u64(struct wout *w, u64 v)
{
	char buf[20];

	wout_put(w, buf, (size_t)(fmt_u64(buf, v) - buf));
}

void wout_fixed(struct wout *w, u64 v, u64 div, unsigned digits)
{
	static const u64 pow10[] = { 1, 10, 100, 1000, 10000, 100000, 1000000 };
	unsigned __int128 x;
	u64 scale, r;
	char frac[8];
	unsigned i;

	if (digits > 6)
		digits = 6;
	scale = pow10[digits];
	x = ((unsigned __int128)v * scale * 2 + div) / ((unsigned __int128)div * 2);
	wout_u64(w, (u64)(x / scale));
	if (!digits)
		return;
	r = (u64)(x % scale);
	frac[0] = '.';
	for (i = digits; i > 0; i--, r /= 10)
		frac[i] = (char)('0' + r % 10);
	wout_put(w, frac, digits + 1);
}

/* ---- UTF-8 ---- */

size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned c = s[0], need, cp, i;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		need = 1, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		need = 2, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		need = 3, cp = c & 0x07;
	else
		return 0;
	if (n < need + 1)
		return 0;
	for (i = 1; i <= need; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	/* Overlong forms, UTF-16 surrogates and values past U+10FFFF are
	 * malformed (RFC 3629 §3). */
	if ((need == 2 && cp < 0x800) || (need == 3 && cp < 0x10000) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return need + 1;
}

size_t utf8_prefix(const char *s, size_t n, size_t chars)
{
	size_t i = 0, k;

	while (i < n && chars) {
		k = utf8_len((const unsigned char *)s + i, n - i);
		i += k ? k : 1;
		chars--;
	}
	return i;
}

#define REPLACEMENT "\xef\xbf\xbd" /* U+FFFD */

void wout_xml(struct wout *w, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, run = 0, k;

	while (i < n) {
		const char *rep = NULL;

		k = utf8_len(u + i, n - i);
		if (k == 1) {
			switch (u[i]) {
			case '&': rep = "&amp;"; break;
			case '<': rep = "&lt;"; break;
			case '>': rep = "&gt;"; break;
			case '"': rep = "&quot;"; break;
			case '\'': rep = "&apos;"; break;
			default:
				if (u[i] < 0x20 && u[i] != '\t')
					rep = REPLACEMENT;
			}
		} else if (!k || (k == 3 && u[i] == 0xef && u[i + 1] == 0xbf &&
				  u[i + 2] >= 0xbe)) { /* U+FFFE, U+FFFF */
			rep = REPLACEMENT;
		}
		if (!k)
			k = 1;
		if (rep) {
			wout_put(w, s + run, i - run);
			wout_str(w, rep);
			run = i + k;
		}
		i += k;
	}
	wout_put(w, s + run, n - run);
}

void wout_json(struct wout *w, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, run = 0, k;
	char esc[8];

	while (i < n) {
		const char *rep = NULL;

		k = utf8_len(u + i, n - i);
		if (!k) {
			rep = "\\ufffd";
			k = 1;
		} else if (k == 1 && (u[i] == '"' || u[i] == '\\')) {
			rep = u[i] == '"' ? "\\\"" : "\\\\";
		} else if (k == 1 && u[i] < 0x20) {
			snprintf(esc, sizeof(esc), "\\u%04x", u[i]);
			rep = esc;
		}
		if (rep) {
			wout_put(w, s + run, i - run);
			wout_str(w, rep);
			run = i + k;
		}
		i += k;
	}
	wout_put(w, s + run, n - run);
}
