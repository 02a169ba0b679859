// SPDX-License-Identifier: GPL-2.0
/*
 * perfspy combine: many nodes' or runs' outputs (pprof, folded stacks,
 * py-spy captures, perf.data) summed into one profile. Each input is
 * read into a folder of its own and added to the result, under a root
 * frame `[KEY=NAME]` with --label-root KEY (the pprof writer turns it
 * into the label KEY=NAME), so totals are conserved exactly.
 *
 * For pprof output the inputs' libraries are kept too (struct libs): a
 * pprof input's Mappings, a perf.data input's DSOs, each with its path
 * and build id, and the program with the most samples first, as pprof
 * takes mapping[0] for the main binary (profile.proto, Profile.mapping).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static void combine_usage(FILE *f)
{
	fprintf(f,
		"usage: perfspy combine [options] -o OUT INPUT...\n"
		"\n"
		"Sum the profiles of many nodes or runs into one: each INPUT is pprof\n"
		"(gzipped, as `perfspy convert --format pprof` writes it), folded stacks\n"
		"(py-spy raw, `perfspy convert` output) or perf.data, told apart by\n"
		"content. Same stacks add up; the total is the sum of the inputs' totals.\n"
		"Inputs should count the same unit (all samples, or all nanoseconds).\n"
		"pprof output keeps what pprof and perf.data inputs tell of the code:\n"
		"each library's path and build id (a library two inputs disagree on keeps\n"
		"its name alone), inlined frames, the program with the most samples first\n"
		"(pprof's main binary), and the inputs' durations added up.\n"
		"\n"
		"  -i, --input FILE      one more INPUT (repeatable; taken before the others)\n"
		"  -o, --output FILE     where to write; '-' is standard output [default: -]\n"
		"      --format FMT      raw, flamegraph, speedscope or pprof [default: pprof\n"
		"                        when OUT ends in .pb.gz or .pprof, else raw]\n"
		"      --label-root KEY  add a root frame `[KEY=NAME]` per input, NAME its\n"
		"                        file name without directory and .pb.gz/.pprof/\n"
		"                        .folded/.txt/.data; pprof output makes it the\n"
		"                        label KEY=NAME (go tool pprof -tagfocus KEY=NAME)\n"
		"      --title TEXT      title of the SVG / name of the speedscope file\n"
		"  -q, --quiet           only errors on stderr\n"
		"  -h, --help            this help\n");
}

enum { O_FORMAT = 256, O_LABEL_ROOT, O_TITLE };

static const struct option combine_opts[] = {
	{ "input", required_argument, NULL, 'i' },
	{ "output", required_argument, NULL, 'o' },
	{ "format", required_argument, NULL, O_FORMAT },
	{ "label-root", required_argument, NULL, O_LABEL_ROOT },
	{ "title", required_argument, NULL, O_TITLE },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static bool ends_with(const char *s, const char *suf)
{
	size_t n = strlen(s), k = strlen(suf);

	return n >= k && !strcmp(s + n - k, suf);
}

/* `[KEY=NAME]` for input @path, in a new string (NULL on ENOMEM). */
static char *root_frame(const char *key, const char *path)
{
	static const char *const sufs[] = { ".pb.gz", ".pprof", ".folded", ".txt",
					    ".data", ".gz" };
	const char *base = strrchr(path, '/');
	size_t n, i, k;
	char *s;

	base = base ? base + 1 : path;
	n = strlen(base);
	for (i = 0; i < sizeof(sufs) / sizeof(sufs[0]); i++) {
		k = strlen(sufs[i]);
		if (n > k && !strcmp(base + n - k, sufs[i])) {
			n -= k;
			break;
		}
	}
	if (asprintf(&s, "[%s=%.*s]", key, (int)n, base) < 0)
		return NULL;
	return s;
}

/* Gzip magic (RFC 1952 §2.3.1): pprof files are gzipped protobuf. */
static bool is_gzip(const char *path)
{
	unsigned char m[2];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	bool yes;

	if (fd < 0)
		return false;
	yes = read(fd, m, 2) == 2 && m[0] == 0x1f && m[1] == 0x8b;
	close(fd);
	return yes;
}

/*
 * The libraries the inputs' frames came from, by the name frames show
 * (the path's last component). Frames carry that name alone, so a name
 * met with two paths, or with two build ids (two builds on two nodes),
 * keeps neither (->clash): its Mapping is then the bare name, which is
 * all that the frames tell. A bare name or a missing build id is no
 * clash, just less to go on.
 */
struct lib {
	char *path, *bid; /* bid "" when none is known */
	bool clash;
};

/* What the inputs said of a frame's code: the library of a frame that
 * names its source file (`f (a.c:10)`, whose text does not tell it), and
 * whether it was an inlined callee (pprof Lines of its caller's
 * Location). */
#define LIB_NONE (-1)
#define LIB_CLASH (-2)
struct frame_ent {
	char *text; /* NULL: a free slot */
	size_t len;
	uint64_t hash;
	int lib; /* index into libs.v, LIB_NONE or LIB_CLASH */
	bool inlined;
};

struct libs {
	struct lib *v;
	size_t n;
	struct held_key *progs; /* each input's main binary (name ours) and its samples */
	size_t nr_progs;
	struct frame_ent *fr;
	size_t nr_fr, cap_fr; /* cap_fr a power of two */
	char *first; /* this pprof input's first Mapping, until its samples are known */
	/* The inputs' durations added up, as `go tool pprof` merges them;
	 * none as soon as one input has none (folded stacks). */
	uint64_t duration_ns;
	bool no_duration;
};

static const char *last_part(const char *path)
{
	const char *s = strrchr(path, '/');

	return s && s[1] ? s + 1 : path;
}

static int set_str(char **dst, const char *src)
{
	char *c = strdup(src);

	if (!c)
		return -ENOMEM;
	free(*dst);
	*dst = c;
	return 0;
}

/* The entry of library @path (build id @bid, "" or NULL for none), made
 * or merged; its index, LIB_NONE for no library ("", "?"), or -ENOMEM. */
static int libs_add(struct libs *l, const char *path, const char *bid)
{
	const char *name = last_part(path);
	bool bare = !strchr(path, '/');
	struct lib *e, *v;
	size_t i;

	if (!*path || !strcmp(path, "?"))
		return LIB_NONE;
	if (!bid)
		bid = "";
	for (i = 0; i < l->n; i++) {
		e = &l->v[i];
		if (strcmp(last_part(e->path), name))
			continue;
		if (e->clash || (bare && !*bid))
			return (int)i;
		if (!strchr(e->path, '/') && !*e->bid) {
			/* A bare name before: the path says more. */
			if (set_str(&e->path, path) || set_str(&e->bid, bid))
				return -ENOMEM;
		} else if (strcmp(e->path, path) && !bare) {
			e->clash = true;
		} else if (*bid && *e->bid && strcmp(e->bid, bid)) {
			e->clash = true;
		} else if (*bid && !*e->bid && set_str(&e->bid, bid)) {
			return -ENOMEM;
		}
		return (int)i;
	}
	if (l->n >= INT32_MAX)
		return -ENOMEM;
	v = realloc(l->v, (l->n + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	l->v = v;
	e = &v[l->n];
	e->path = strdup(path);
	e->bid = strdup(bid);
	e->clash = false;
	if (!e->path || !e->bid) {
		free(e->path);
		free(e->bid);
		return -ENOMEM;
	}
	return (int)l->n++;
}

/* @path was the main binary of an input of @samples samples. */
static int progs_add(struct libs *l, const char *path, uint64_t samples)
{
	struct held_key *v;
	size_t i;

	/* The kernel and the like are no program ("[kernel.kallsyms]"). */
	if (!path || !*path || !strcmp(path, "?") || path[0] == '[')
		return 0;
	for (i = 0; i < l->nr_progs; i++)
		if (!strcmp(l->progs[i].name, path)) {
			l->progs[i].n += samples;
			return 0;
		}
	v = realloc(l->progs, (l->nr_progs + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	l->progs = v;
	v[l->nr_progs] = (struct held_key){ .name = strdup(path), .n = samples };
	if (!v[l->nr_progs].name)
		return -ENOMEM;
	l->nr_progs++;
	return 0;
}

/* FNV-1a: the frame table's keys are short texts. */
static uint64_t text_hash(const char *s, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;
	size_t i;

	for (i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
	return h;
}

static struct frame_ent *frame_slot(const struct libs *l, const char *s, size_t len,
				    uint64_t h)
{
	size_t i = (size_t)h & (l->cap_fr - 1);

	for (;; i = (i + 1) & (l->cap_fr - 1)) {
		struct frame_ent *e = &l->fr[i];

		if (!e->text || (e->hash == h && e->len == len && !memcmp(e->text, s, len)))
			return e;
	}
}

static const struct frame_ent *frame_find(const struct libs *l, const char *s, size_t len)
{
	const struct frame_ent *e;

	if (!l->cap_fr)
		return NULL;
	e = frame_slot(l, s, len, text_hash(s, len));
	return e->text ? e : NULL;
}

/* What an input says of frame @s: its library @lib (LIB_NONE: it does
 * not say) and whether it was inlined. */
static int frame_note(struct libs *l, const char *s, size_t len, int lib, bool inlined)
{
	uint64_t h = text_hash(s, len);
	struct frame_ent *e;

	if (2 * (l->nr_fr + 1) > l->cap_fr) {
		size_t cap = l->cap_fr ? 2 * l->cap_fr : 1024, i;
		struct frame_ent *old = l->fr, *n = calloc(cap, sizeof(*n));

		if (!n)
			return -ENOMEM;
		l->fr = n;
		l->cap_fr = cap;
		for (i = 0; old && i < cap / 2; i++)
			if (old[i].text)
				*frame_slot(l, old[i].text, old[i].len, old[i].hash) = old[i];
		free(old);
	}
	e = frame_slot(l, s, len, h);
	if (!e->text) {
		if (!(e->text = malloc(len ? len : 1)))
			return -ENOMEM;
		memcpy(e->text, s, len);
		e->len = len;
		e->hash = h;
		e->lib = lib;
		e->inlined = inlined;
		l->nr_fr++;
		return 0;
	}
	/* One text from two libraries (`main (main.c:10)` of two programs)
	 * has no Mapping; inlined at some call site is inlined. */
	if (lib != LIB_NONE && e->lib != lib && e->lib != LIB_CLASH)
		e->lib = e->lib == LIB_NONE ? lib : LIB_CLASH;
	e->inlined |= inlined;
	return 0;
}

/* perfspy_write_opts.frame_lib and .frame_inlined from the table. */
static const char *combine_frame_lib(void *ctx, const char *frame, size_t len)
{
	const struct libs *l = ctx;
	const struct frame_ent *e = frame_find(l, frame, len);

	return e && e->lib >= 0 ? last_part(l->v[e->lib].path) : NULL;
}

static bool combine_frame_inlined(void *ctx, const char *frame, size_t len)
{
	const struct frame_ent *e = frame_find(ctx, frame, len);

	return e && e->inlined;
}

static void libs_free(struct libs *l)
{
	size_t i;

	for (i = 0; i < l->n; i++) {
		free(l->v[i].path);
		free(l->v[i].bid);
	}
	for (i = 0; i < l->nr_progs; i++)
		free((char *)l->progs[i].name);
	for (i = 0; i < l->cap_fr; i++)
		free(l->fr[i].text);
	free(l->v);
	free(l->progs);
	free(l->fr);
	free(l->first);
}

static void add_duration(struct libs *l, uint64_t ns)
{
	if (!ns || l->duration_ns > UINT64_MAX - ns)
		l->no_duration = true;
	else
		l->duration_ns += ns;
}

/* perfspy_read_opts.pprof_frame: a pprof input's main binary, then each
 * frame of each Location with its Mapping. */
static int pprof_frame(void *ctx, const char *frame, size_t len, bool inlined,
		       const char *filename, const char *build_id)
{
	struct libs *l = ctx;
	int lib;

	if (!frame)
		return set_str(&l->first, filename);
	lib = libs_add(l, filename, build_id);
	/* A Location's Mapping is its outermost function's library (as
	 * write_pprof.c sets it): an inlined callee's text (a header's
	 * inline function) may be shared by libraries. */
	if (lib >= 0 && inlined)
		lib = LIB_NONE;
	return lib < LIB_CLASH ? lib : frame_note(l, frame, len, lib, inlined);
}

/* A perf.data input's DSOs, program and frames, from its session. */
static int session_libs(struct libs *l, struct perfspy_session *s,
			const struct perfspy_folder *f)
{
	PERFSPY_OPTS(perfspy_write_opts, w);
	const char *text;
	uint32_t idx;
	size_t i, len;
	int err = 0, lib;

	cli_pprof_opts(s, 0, 0, NULL, &w);
	for (i = 0; err >= 0 && i < w.nr_dsos; i++)
		err = libs_add(l, w.dso_paths[i], w.dso_build_ids[i]);
	if (err >= 0)
		err = progs_add(l, w.main_binary, perfspy_folder__total(f));
	add_duration(l, w.duration_ns);
	cli_pprof_opts_free(&w);
	for (idx = 0; err >= 0 && (text = perfspy_folder__frame(f, idx, &len)); idx++) {
		const char *name = perfspy_session__frame_lib(s, text, len);

		lib = name ? libs_add(l, name, NULL) : LIB_NONE;
		err = lib < LIB_CLASH ? lib :
		      frame_note(l, text, len, lib, perfspy_session__frame_inlined(s, text, len));
	}
	return err < 0 ? err : 0;
}

static int load_one(const char *path, const struct cli_common *common,
		    struct perfspy_folder *f, struct libs *l)
{
	PERFSPY_OPTS(perfspy_read_opts, ro, .log_fn = cli_log,
		     .log_level = common->quiet ? PERFSPY_LOG_ERROR : PERFSPY_LOG_WARN,
		     .pprof_frame = l ? pprof_frame : NULL, .pprof_frame_ctx = l);
	PERFSPY_OPTS(perfspy_convert_opts, co);
	PERFSPY_OPTS(perfspy_read_stats, st);
	struct perfspy_session *s = NULL;
	int err, rc;

	if (strcmp(path, "-") && is_gzip(path)) {
		err = perfspy_folder__read_pprof(f, path, NULL, 0, &ro, &st);
		if (!err && l && l->first)
			err = progs_add(l, l->first, perfspy_folder__total(f));
		if (!err && l)
			add_duration(l, st.duration_ns);
		if (l) {
			free(l->first);
			l->first = NULL;
		}
		if (err) {
			cli_fail(path, err, NULL);
			return -1;
		}
		return 0;
	}
	rc = cli_load_input(path, common, &co, f, &s);
	if (!rc && !s && l)
		l->no_duration = true; /* folded stacks: no time span */
	if (!rc && s && l && (err = session_libs(l, s, f))) {
		cli_fail(path, err, NULL);
		rc = -1;
	}
	perfspy_session__close(s);
	return rc;
}

int cmd_combine(int argc, char **argv)
{
	PERFSPY_OPTS(perfspy_write_opts, wo, .format = -1);
	struct cli_common common = { 0 };
	const char *out = "-", *key = NULL, *in[64];
	size_t nr_in = 0;
	struct perfspy_folder *all = NULL, *one = NULL;
	struct libs libs = { 0 };
	const char **paths = NULL, **bids = NULL;
	int c, i, err, ret = 1;

	while ((c = getopt_long(argc, argv, ":i:o:qh", combine_opts, NULL)) != -1) {
		switch (c) {
		case 'o': out = optarg; break;
		case O_FORMAT:
			wo.format = !strcmp(optarg, "raw") ? PERFSPY_FORMAT_RAW :
				    !strcmp(optarg, "flamegraph") ? PERFSPY_FORMAT_FLAMEGRAPH :
				    !strcmp(optarg, "speedscope") ? PERFSPY_FORMAT_SPEEDSCOPE :
				    !strcmp(optarg, "pprof") ? PERFSPY_FORMAT_PPROF : -2;
			if (wo.format == -2) {
				cli_err("--format: expected raw, flamegraph, speedscope or pprof, got '%s'",
					optarg);
				return 2;
			}
			break;
		case O_LABEL_ROOT:
			if (!*optarg || strpbrk(optarg, "=[];\n ")) {
				cli_err("--label-root: '%s' is not a label key (no '=', brackets, ';' or spaces)",
					optarg);
				return 2;
			}
			key = optarg;
			break;
		case O_TITLE: wo.title = optarg; break;
		case 'q': common.quiet = true; break;
		case 'h': combine_usage(stdout); return 0;
		case 'i':
			if (nr_in < sizeof(in) / sizeof(in[0])) {
				in[nr_in++] = optarg;
				break;
			}
			cli_err("combine: more than %zu -i inputs: give the rest as INPUT...",
				sizeof(in) / sizeof(in[0]));
			return 2;
		default: return cli_usage_error("combine", c, argv);
		}
	}
	if (optind >= argc && !nr_in) {
		cli_err("combine: no input (usage: perfspy combine -o OUT INPUT...; see 'perfspy combine --help')");
		return 2;
	}
	if (wo.format == -1)
		wo.format = ends_with(out, ".pb.gz") || ends_with(out, ".pprof") ?
				    PERFSPY_FORMAT_PPROF : PERFSPY_FORMAT_RAW;
	cli_install_signals();
	err = perfspy_folder__new(&all);
	/* -i inputs first, then the positional ones, in the order given. */
	for (i = -(int)nr_in; !err && i < argc - optind; i++) {
		const char *path = i < 0 ? in[nr_in + i] : argv[optind + i];
		char *root = NULL;

		err = perfspy_folder__new(&one);
		if (err)
			break;
		if (load_one(path, &common, one,
			     wo.format == PERFSPY_FORMAT_PPROF ? &libs : NULL))
			goto out;
		if (key && !(root = root_frame(key, path))) {
			err = -ENOMEM;
			break;
		}
		err = perfspy_folder__add_folder(all, one, root);
		free(root);
		perfspy_folder__free(one);
		one = NULL;
	}
	if (err)
		goto fail;
	if (libs.n) {
		size_t k, n = 0;

		paths = calloc(libs.n, sizeof(*paths));
		bids = calloc(libs.n, sizeof(*bids));
		if (!paths || !bids) {
			err = -ENOMEM;
			goto fail;
		}
		for (k = 0; k < libs.n; k++)
			if (!libs.v[k].clash) {
				paths[n] = libs.v[k].path;
				bids[n++] = *libs.v[k].bid ? libs.v[k].bid : NULL;
			}
		wo.dso_paths = paths;
		wo.dso_build_ids = bids;
		wo.nr_dsos = n;
	}
	/* The program with the most samples; ties go to the first path
	 * in byte order, as convert's main binary. */
	wo.main_binary = cli_top_name(libs.progs, libs.nr_progs);
	if (!libs.no_duration)
		wo.duration_ns = libs.duration_ns;
	if (libs.nr_fr) {
		wo.frame_lib = combine_frame_lib;
		wo.frame_lib_ctx = &libs;
		wo.frame_inlined = combine_frame_inlined;
		wo.frame_inlined_ctx = &libs;
	}
	if (cli_write_folder(out, "combine", all, &wo))
		goto out;
	ret = 0;
	goto out;
fail:
	cli_fail("combine", err, NULL);
out:
	free(paths);
	free(bids);
	libs_free(&libs);
	perfspy_folder__free(one);
	perfspy_folder__free(all);
	return ret;
}
