// SPDX-License-Identifier: GPL-2.0
/*
 * perf.data image builder for unit tests (see recbuild.h). Tests abort
 * on allocation failure: this is test code, not the library.
 */
#include "recbuild.h"

#include "perfspy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void rb_put(struct rb *b, const void *p, size_t n)
{
	if (!n)
		return;
	if (b->len + n > b->cap) {
		b->cap = (b->len + n) * 2 + 64;
		b->p = realloc(b->p, b->cap);
		if (!b->p)
			abort();
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
}

void rb_u64(struct rb *b, uint64_t v) { rb_put(b, &v, 8); }
void rb_u32(struct rb *b, uint32_t v) { rb_put(b, &v, 4); }

void rb_free(struct rb *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

void rb_default_attr(struct perf_event_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->type = PERF_TYPE_SOFTWARE;
	a->config = PERF_COUNT_SW_CPU_CLOCK;
	a->size = sizeof(*a);
	a->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			 PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_PERIOD;
	a->sample_id_all = 1;
	a->freq = 1;
	a->sample_freq = 999;
}

static void hdr(struct rb *b, uint32_t type, uint16_t misc, size_t size)
{
	struct perf_event_header h = { type, misc, (uint16_t)size };

	rb_put(b, &h, sizeof(h));
}

/* sample_id trailer for rb_default_attr: {pid, tid}, time. */
static void sid(struct rb *b, uint32_t pid, uint32_t tid, uint64_t time)
{
	rb_u32(b, pid);
	rb_u32(b, tid);
	rb_u64(b, time);
}

static void padded_str(struct rb *b, const char *s, size_t padded)
{
	char buf[4096] = { 0 };

	strncpy(buf, s, sizeof(buf) - 1);
	rb_put(b, buf, padded);
}

static size_t pad8(size_t n) { return (n + 7) & ~(size_t)7; }

void rb_comm(struct rb *b, uint32_t pid, uint32_t tid, const char *comm,
	     int exec, uint64_t time)
{
	size_t sl = pad8(strlen(comm) + 1);

	hdr(b, PERF_RECORD_COMM, exec ? (1 << 13) : 0, 8 + 8 + sl + 16);
	rb_u32(b, pid);
	rb_u32(b, tid);
	padded_str(b, comm, sl);
	sid(b, pid, tid, time);
}

void rb_mmap2(struct rb *b, uint32_t pid, uint64_t start, uint64_t len,
	      uint64_t pgoff, const char *file, uint64_t time)
{
	size_t sl = pad8(strlen(file) + 1);
	unsigned char zero[24] = { 0 };

	hdr(b, PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER, 72 + sl + 16);
	rb_u32(b, pid);
	rb_u32(b, pid);
	rb_u64(b, start);
	rb_u64(b, len);
	rb_u64(b, pgoff);
	rb_put(b, zero, 24);		/* maj, min, ino, ino_generation */
	rb_u32(b, 5);			/* PROT_READ | PROT_EXEC */
	rb_u32(b, 2);			/* MAP_PRIVATE */
	padded_str(b, file, sl);
	sid(b, pid, pid, time);
}

void rb_fork(struct rb *b, uint32_t pid, uint32_t ppid, uint32_t tid,
	     uint32_t ptid, uint64_t time)
{
	hdr(b, PERF_RECORD_FORK, 0, 32 + 16);
	rb_u32(b, pid);
	rb_u32(b, ppid);
	rb_u32(b, tid);
	rb_u32(b, ptid);
	rb_u64(b, time);
	sid(b, pid, tid, time);
}

void rb_sample(struct rb *b, uint32_t pid, uint32_t tid, uint64_t time,
	       const uint64_t *chain, unsigned nr, uint64_t period)
{
	uint64_t ip = 0;
	unsigned i;

	/* The sample ip is the first callchain entry that is no context
	 * marker (markers are >= (u64)-4095). */
	for (i = 0; i < nr; i++) {
		if (chain[i] < (uint64_t)-4095) {
			ip = chain[i];
			break;
		}
	}
	hdr(b, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER, 8 + 8 + 8 + 8 + 8 + 8 + 8 * nr);
	rb_u64(b, ip);
	rb_u32(b, pid);
	rb_u32(b, tid);
	rb_u64(b, time);
	rb_u64(b, period);
	rb_u64(b, nr);
	rb_put(b, chain, 8 * nr);
}

void rb_round(struct rb *b)
{
	hdr(b, 68, 0, 8);
}

void rb_raw(struct rb *b, uint32_t type, uint16_t misc, const void *payload,
	    size_t len)
{
	hdr(b, type, misc, 8 + len);
	rb_put(b, payload, len);
}

void rb_file(struct rb *out, const struct perf_event_attr *attr,
	     size_t attr_size, const struct rb *data, const char *hostname)
{
	size_t ids_off = 104, attrs_off = ids_off + 8;
	size_t data_off = attrs_off + attr_size, feat_off, payload_off;
	size_t hl = pad8(strlen(hostname) + 1);
	unsigned char abuf[512] = { 0 };
	uint64_t bits[4] = { 1ULL << 3 /* HOSTNAME */, 0, 0, 0 };

	out->len = 0;
	rb_u64(out, 0x32454c4946524550ULL);	/* "PERFILE2" */
	rb_u64(out, 104);
	rb_u64(out, attr_size);
	rb_u64(out, attrs_off);
	rb_u64(out, attr_size);
	rb_u64(out, data_off);
	rb_u64(out, data->len);
	rb_u64(out, 0);
	rb_u64(out, 0);
	rb_put(out, bits, sizeof(bits));
	rb_u64(out, 42);			/* the one sample id */
	memcpy(abuf, attr, sizeof(*attr) < attr_size - 16 ? sizeof(*attr) : attr_size - 16);
	rb_put(out, abuf, attr_size - 16);
	rb_u64(out, ids_off);
	rb_u64(out, 8);
	rb_put(out, data->p, data->len);
	feat_off = out->len;
	payload_off = feat_off + 16;
	rb_u64(out, payload_off);
	rb_u64(out, 4 + hl);
	rb_u32(out, (uint32_t)hl);
	padded_str(out, hostname, hl);
}

void rb_pipe(struct rb *out, const struct perf_event_attr *attr,
	     const struct rb *data)
{
	out->len = 0;
	rb_u64(out, 0x32454c4946524550ULL);
	rb_u64(out, 16);
	hdr(out, 64, 0, 8 + sizeof(*attr) + 8);
	rb_put(out, attr, sizeof(*attr));
	rb_u64(out, 42);
	rb_put(out, data->p, data->len);
}

void rb_sample_ev(struct rb *b, uint64_t id, uint16_t misc, uint32_t pid,
		  uint32_t tid, uint64_t time, uint64_t ip, const uint64_t *chain,
		  unsigned nr, const uint64_t (*br)[2], unsigned nbr)
{
	size_t size = 8 + 8 * 6 + 8 * nr + (br ? 8 + 24 * (size_t)nbr : 0);
	unsigned i;

	/* perf_event.h's order: IDENTIFIER, IP, TID, TIME, PERIOD,
	 * CALLCHAIN, BRANCH_STACK. */
	hdr(b, PERF_RECORD_SAMPLE, misc, size);
	rb_u64(b, id);
	rb_u64(b, ip);
	rb_u32(b, pid);
	rb_u32(b, tid);
	rb_u64(b, time);
	rb_u64(b, 1);
	rb_u64(b, nr);
	rb_put(b, chain, 8 * nr);
	if (!br)
		return;
	rb_u64(b, nbr);
	for (i = 0; i < nbr; i++) {
		rb_u64(b, br[i][0]);
		rb_u64(b, br[i][1]);
		rb_u64(b, 0);
	}
}

void rb_kernel_mmap(struct rb *b, uint64_t start, uint64_t len, uint64_t text)
{
	const char *name = "[kernel.kallsyms]_text";
	size_t sl = pad8(strlen(name) + 1);

	hdr(b, PERF_RECORD_MMAP, PERF_RECORD_MISC_KERNEL, 8 + 8 + 24 + sl);
	rb_u32(b, (uint32_t)-1);
	rb_u32(b, 0);
	rb_u64(b, start);
	rb_u64(b, len);
	rb_u64(b, text);
	padded_str(b, name, sl);
}

/* A perf string: u32 length, then that many NUL-padded bytes (perf pads
 * to 64; the reader takes any length). */
static void feat_str(struct rb *b, const char *s)
{
	size_t l = pad8(strlen(s) + 1);

	rb_u32(b, (uint32_t)l);
	padded_str(b, s, l);
}

void rb_file_events(struct rb *out, const struct perf_event_attr *attrs,
		    const char *const *names, unsigned n, const struct rb *data,
		    const char *os_release, const unsigned char *kernel_bid)
{
	const size_t asz = sizeof(struct perf_event_attr);
	size_t ids_off = 104, attrs_off = ids_off + 8 * n, data_off, idx_off;
	struct rb feat[4] = { { 0 } };
	uint64_t bits[4] = { 0 };
	unsigned i, nf = 0;
	size_t off;

	data_off = attrs_off + n * (asz + 16);
	out->len = 0;
	rb_u64(out, 0x32454c4946524550ULL);
	rb_u64(out, 104);
	rb_u64(out, asz + 16);
	rb_u64(out, attrs_off);
	rb_u64(out, n * (asz + 16));
	rb_u64(out, data_off);
	rb_u64(out, data->len);
	rb_u64(out, 0);
	rb_u64(out, 0);
	/* Features in bit order: BUILD_ID 2, HOSTNAME 3, OSRELEASE 4,
	 * EVENT_DESC 12. */
	if (kernel_bid) {
		unsigned char id[24] = { 0 };
		const char *kn = "[kernel.kallsyms]";
		size_t sl = pad8(strlen(kn) + 1);

		bits[0] |= 1ULL << 2;
		memcpy(id, kernel_bid, 20);
		hdr(&feat[nf], 67 /* HEADER_BUILD_ID */, PERF_RECORD_MISC_KERNEL,
		    8 + 4 + 24 + sl);
		rb_u32(&feat[nf], (uint32_t)-1);
		rb_put(&feat[nf], id, 24);
		padded_str(&feat[nf], kn, sl);
		nf++;
	}
	bits[0] |= 1ULL << 3;
	feat_str(&feat[nf++], "rb");
	if (os_release) {
		bits[0] |= 1ULL << 4;
		feat_str(&feat[nf++], os_release);
	}
	bits[0] |= 1ULL << 12;
	rb_u32(&feat[nf], n);
	rb_u32(&feat[nf], (uint32_t)asz);
	for (i = 0; i < n; i++) {
		rb_put(&feat[nf], &attrs[i], asz);
		rb_u32(&feat[nf], 1);
		feat_str(&feat[nf], names[i]);
		rb_u64(&feat[nf], i + 1);
	}
	nf++;
	rb_put(out, bits, sizeof(bits));
	for (i = 0; i < n; i++)
		rb_u64(out, i + 1);
	for (i = 0; i < n; i++) {
		rb_put(out, &attrs[i], asz);
		rb_u64(out, ids_off + 8 * i);
		rb_u64(out, 8);
	}
	rb_put(out, data->p, data->len);
	idx_off = out->len;
	off = idx_off + 16 * nf;
	for (i = 0; i < nf; i++) {
		rb_u64(out, off);
		rb_u64(out, feat[i].len);
		off += feat[i].len;
	}
	for (i = 0; i < nf; i++) {
		rb_put(out, feat[i].p, feat[i].len);
		rb_free(&feat[i]);
	}
}

int rb_convert(const struct rb *img, struct perfspy_stats *st, char **out)
{
	PERFSPY_OPTS(perfspy_open_opts, oo, .kallsyms = "",
		     .perf_map_dir = "/nonexistent-perfspy-test");
	struct perfspy_session *s = NULL;
	struct perfspy_folder *f = NULL;
	size_t len = 0;
	FILE *mf;
	int err;

	*out = NULL;
	err = perfspy_session__open_mem(img->p, img->len, &oo, &s);
	if (err)
		return err;
	if (perfspy_folder__new(&f))
		abort();
	err = perfspy_session__convert(s, NULL, f);
	perfspy_session__stats(s, st);
	if (!err) {
		mf = open_memstream(out, &len);
		if (!mf)
			abort();
		perfspy_folder__write(f, mf, NULL);
		fclose(mf);
	}
	perfspy_folder__free(f);
	perfspy_session__close(s);
	return err;
}
