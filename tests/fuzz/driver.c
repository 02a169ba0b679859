// SPDX-License-Identifier: GPL-2.0
/*
 * Regression driver: replays every file of a fuzz target's corpus
 * directory (tests/fuzz/corpus/<target>/, every crasher found is kept
 * there) through the target under gcc, as part of the unit tests
 * (zstd's libregression plays the same role). FUZZ_TARGET names the
 * directory; arguments override it.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t len = 0, cap = 0, n;

	if (!f)
		return -1;
	for (;;) {
		if (len == cap) {
			uint8_t *nb = realloc(buf, cap ? cap * 2 : 65536);

			if (!nb) {
				free(buf);
				fclose(f);
				return -1;
			}
			buf = nb;
			cap = cap ? cap * 2 : 65536;
		}
		n = fread(buf + len, 1, cap - len, f);
		len += n;
		if (!n)
			break;
	}
	fclose(f);
	LLVMFuzzerTestOneInput(buf, len);
	free(buf);
	return 0;
}

static int replay_dir(const char *dir, int *count)
{
	struct dirent **ents;
	char path[4096];
	int n, i, bad = 0;

	n = scandir(dir, &ents, NULL, alphasort);
	if (n < 0) {
		fprintf(stderr, "%s: no corpus\n", dir);
		return 1;
	}
	for (i = 0; i < n; i++) {
		if (ents[i]->d_name[0] != '.') {
			snprintf(path, sizeof(path), "%s/%s", dir, ents[i]->d_name);
			if (replay(path))
				bad++;
			else
				(*count)++;
		}
		free(ents[i]);
	}
	free(ents);
	return bad;
}

int main(int argc, char **argv)
{
	int count = 0, bad = 0, i;

	if (argc > 1) {
		for (i = 1; i < argc; i++)
			bad += replay_dir(argv[i], &count);
	} else {
		bad = replay_dir("tests/fuzz/corpus/" FUZZ_TARGET, &count);
	}
	fprintf(stderr, "fuzz regression %s: %d inputs replayed, %d unreadable\n",
		FUZZ_TARGET, count, bad);
	return bad ? 1 : 0;
}
