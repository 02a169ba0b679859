// SPDX-License-Identifier: GPL-2.0
/*
 * perfspy combine: many nodes' or runs' outputs (pprof, folded stacks,
 * py-spy captures, perf.data) summed into one profile. Each input is
 * read into a folder of its own and added to the result, under a root
 * frame `[KEY=NAME]` with --label-root KEY (the pprof writer turns it
 * into the label KEY=NAME), so totals are conserved exactly.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
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

static int load_one(const char *path, const struct cli_common *common,
		    struct perfspy_folder *f)
{
	PERFSPY_OPTS(perfspy_read_opts, ro, .log_fn = cli_log,
		     .log_level = common->quiet ? PERFSPY_LOG_ERROR : PERFSPY_LOG_WARN);
	PERFSPY_OPTS(perfspy_convert_opts, co);
	struct perfspy_session *s = NULL;
	int err, rc;

	if (strcmp(path, "-") && is_gzip(path)) {
		err = perfspy_folder__read_pprof(f, path, NULL, 0, &ro, NULL);
		if (err) {
			cli_fail(path, err, NULL);
			return -1;
		}
		return 0;
	}
	rc = cli_load_input(path, common, &co, f, &s);
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
		if (load_one(path, &common, one))
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
	if (cli_write_folder(out, "combine", all, &wo))
		goto out;
	ret = 0;
	goto out;
fail:
	cli_fail("combine", err, NULL);
out:
	perfspy_folder__free(one);
	perfspy_folder__free(all);
	return ret;
}
