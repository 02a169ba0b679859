// SPDX-License-Identifier: GPL-2.0
/*
 * Benchmark workload: four named threads with varied, deep stacks, built
 * with frame pointers so that `perf record -g` sees whole callchains.  Each
 * unit of work runs below 8-55 "middleware" frames (layer_a/b/c, in a
 * pseudo-random order), as in framework-heavy programs; the deep stacks also
 * make the recording reach its size sooner.
 *   bw-parser  recursive-descent evaluation of random expressions
 *   bw-tree    malloc'd binary trees: build, recursive walk, free
 *   bw-fib     naive recursive fib, mixed with memcpy
 *   bw-sort    qsort with a comparator, and read(2) from /dev/zero (kernel)
 * Usage: workload MAX_SECONDS [FILE BYTES]
 *   stops after MAX_SECONDS, or as soon as FILE has reached BYTES bytes
 *   (the perf.data being written: bench/run.sh records until 50 MB+).
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static volatile uint64_t sink;
static volatile double end_time;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint32_t lcg(uint32_t *s)
{
	*s = *s * 1664525u + 1013904223u;
	return *s >> 8;
}

/* ---- parser: expr := term (('+'|'-') term)* ; term := factor ('*' factor)*
 *      factor := digit | '(' expr ')' */
struct src {
	const char *p;
};

static NOINLINE long parse_expr(struct src *s);

static NOINLINE long parse_factor(struct src *s)
{
	volatile int frame = 0;

	(void)frame;
	if (*s->p == '(') {
		s->p++;
		long v = parse_expr(s);
		if (*s->p == ')')
			s->p++;
		return v;
	}
	return *s->p ? *s->p++ - '0' : 0;
}

static NOINLINE long parse_term(struct src *s)
{
	long v = parse_factor(s);

	while (*s->p == '*') {
		s->p++;
		v *= parse_factor(s);
	}
	return v;
}

static NOINLINE long parse_expr(struct src *s)
{
	long v = parse_term(s);

	while (*s->p == '+' || *s->p == '-') {
		char op = *s->p++;
		long w = parse_term(s);
		v = op == '+' ? v + w : v - w;
	}
	return v;
}

static NOINLINE void gen_expr(char **o, char *lim, int depth, uint32_t *seed)
{
	int n = 1 + lcg(seed) % 3;

	for (int i = 0; i < n && *o < lim - 8; i++) {
		if (i)
			*(*o)++ = "+-*"[lcg(seed) % 3];
		if (depth > 0 && lcg(seed) % 4 != 0) {
			*(*o)++ = '(';
			gen_expr(o, lim - 1, depth - 1, seed);
			*(*o)++ = ')';
		} else {
			*(*o)++ = '0' + lcg(seed) % 10;
		}
	}
}

static NOINLINE void parser_unit(uint32_t *seed)
{
	static __thread char buf[1 << 16];

	for (int k = 0; k < 20; k++) {
		char *o = buf;
		struct src s;

		gen_expr(&o, buf + sizeof(buf), 4 + lcg(seed) % 10, seed);
		*o = 0;
		s.p = buf;
		sink += parse_expr(&s);
	}
}

/* ---- tree */
struct node {
	struct node *l, *r;
	uint64_t v;
};

static NOINLINE struct node *tree_build(int depth, uint32_t *seed)
{
	struct node *n = malloc(sizeof(*n));

	if (!n)
		abort();
	n->v = lcg(seed);
	n->l = depth > 0 && lcg(seed) % 8 ? tree_build(depth - 1, seed) : NULL;
	n->r = depth > 0 && lcg(seed) % 8 ? tree_build(depth - 1, seed) : NULL;
	return n;
}

static NOINLINE uint64_t tree_walk(const struct node *n)
{
	volatile int frame = 0;

	(void)frame;
	if (!n)
		return 0;
	return n->v ^ (tree_walk(n->l) + 3 * tree_walk(n->r));
}

static NOINLINE void tree_free(struct node *n)
{
	if (!n)
		return;
	tree_free(n->l);
	tree_free(n->r);
	free(n);
}

static NOINLINE void tree_unit(uint32_t *seed)
{
	struct node *t = tree_build(6 + lcg(seed) % 8, seed);

	for (int i = 0; i < 4; i++)
		sink += tree_walk(t);
	tree_free(t);
}

/* ---- fib */
static NOINLINE uint64_t fib(int n)
{
	volatile int frame = 0;

	(void)frame;
	return n < 2 ? (uint64_t)n : fib(n - 1) + fib(n - 2);
}

static NOINLINE void copy_blocks(char *dst, const char *src, size_t n)
{
	for (int i = 0; i < 64; i++)
		memcpy(dst, src, n);
	sink += dst[n / 2];
}

static NOINLINE void fib_unit(uint32_t *seed)
{
	static char a[1 << 18], b[1 << 18];

	sink += fib(14 + lcg(seed) % 10);
	copy_blocks(a, b, sizeof(a));
}

/* ---- sort */
static NOINLINE int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static NOINLINE void sort_round(uint32_t *v, size_t n, uint32_t *seed)
{
	for (size_t i = 0; i < n; i++)
		v[i] = lcg(seed);
	qsort(v, n, sizeof(*v), cmp_u32);
	sink += v[n / 2];
}

static NOINLINE void read_zero(int fd, int n)
{
	static __thread char buf[1 << 16];

	for (int i = 0; i < n; i++)
		if (read(fd, buf, sizeof(buf)) < 0)
			sink++;
}

static NOINLINE void sort_unit(uint32_t *seed)
{
	static __thread uint32_t v[1 << 13];
	static __thread int fd = -1;

	if (fd < 0)
		fd = open("/dev/zero", O_RDONLY);
	sort_round(v, 512 + lcg(seed) % ((1 << 13) - 512), seed);
	if (fd >= 0)
		read_zero(fd, 4);
}

/* ---- middleware: 40-109 frames of layer_a/b/c, then the unit of work.
 * The order of the layers follows one of 48 routes, so stacks repeat as in
 * real programs instead of being all distinct. */
typedef void unit_fn(uint32_t *seed);

struct route {
	unit_fn *fn;
	uint32_t *seed;		/* the unit's random state */
	uint32_t step;		/* the route's own sequence */
};

static NOINLINE void layer_a(int depth, struct route *r);
static NOINLINE void layer_b(int depth, struct route *r);
static NOINLINE void layer_c(int depth, struct route *r);

static void next_layer(int depth, struct route *r)
{
	if (depth <= 0) {
		r->fn(r->seed);
		return;
	}
	switch (lcg(&r->step) % 8) {
	case 0:
		layer_b(depth - 1, r);
		break;
	case 1:
		layer_c(depth - 1, r);
		break;
	default:
		layer_a(depth - 1, r);
		break;
	}
}

#define LAYER(name)						\
	static NOINLINE void name(int depth, struct route *r)	\
	{							\
		next_layer(depth, r);				\
		sink++;						\
	}
LAYER(layer_a)
LAYER(layer_b)
LAYER(layer_c)

struct job {
	const char *name;
	unit_fn *unit;
	uint32_t seed;
};

static NOINLINE void *thread_main(void *arg)
{
	const struct job *job = arg;
	uint32_t seed = job->seed;

	pthread_setname_np(pthread_self(), job->name);
	while (now_s() < end_time) {
		uint32_t k = lcg(&seed) % 48;
		struct route r = { job->unit, &seed, k * 2654435761u };

		layer_a(40 + (k * 37) % 70, &r);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	static const struct job jobs[] = {
		{ "bw-parser", parser_unit, 1 },
		{ "bw-tree", tree_unit, 2 },
		{ "bw-fib", fib_unit, 3 },
		{ "bw-sort", sort_unit, 4 },
	};
	pthread_t t[4];
	off_t stop_size = argc > 3 ? atoll(argv[3]) : 0;
	struct stat st;

	end_time = now_s() + (argc > 1 ? atof(argv[1]) : 10);
	for (int i = 0; i < 4; i++)
		if (pthread_create(&t[i], NULL, thread_main, (void *)&jobs[i]))
			return 1;
	/* Poll the size of the file being recorded; stop the threads at once
	 * when it is big enough. */
	while (stop_size > 0 && now_s() < end_time) {
		if (stat(argv[2], &st) == 0 && st.st_size >= stop_size)
			end_time = 0;
		usleep(200000);
	}
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	printf("%llu\n", (unsigned long long)sink);
	return 0;
}
