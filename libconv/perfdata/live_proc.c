// SPDX-License-Identifier: GPL-2.0
/*
 * What the live capture (live.c) reads from /proc and how it launches a
 * command (live.h): thread lists, thread names and maps' text, kernel
 * text bounds, on-CPU times (schedstat), and the fork/exec handshake
 * perf's evlist__prepare_workload uses (the child waits on one pipe for
 * the events to be open, and reports an exec failure on a second,
 * close-on-exec one). No perf_event calls here.
 */
#include "live.h"

#include <dirent.h>
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <libelf.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

char *live_read_text(const char *path, size_t *len)
{
	size_t cap = 0;
	char *buf = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	*len = 0;
	if (fd < 0)
		return NULL;
	for (;;) {
		ssize_t n;

		if (ensure_mem((void **)&buf, &cap, 1, *len + 65536 + 1)) {
			free(buf);
			buf = NULL;
			break;
		}
		n = read(fd, buf + *len, cap - *len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		*len += (size_t)n;
	}
	close(fd);
	if (buf)
		buf[*len] = '\0';
	return buf;
}

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

/* Thread ids of @pid, sorted; -ESRCH if the process is gone. */
int live_list_tids(pid_t pid, pid_t **out, int *nr)
{
	char path[64];
	struct dirent *de;
	pid_t *v = NULL;
	size_t cap = 0;
	int n = 0, err = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return errno == ENOENT ? -ESRCH : -errno;
	while ((de = readdir(d))) {
		long t = strtol(de->d_name, NULL, 10);

		if (t <= 0)
			continue;
		if ((err = ensure_mem((void **)&v, &cap, sizeof(*v), (size_t)n + 1)))
			break;
		v[n++] = (pid_t)t;
	}
	closedir(d);
	if (!err && !n)
		err = -ESRCH;
	if (!err)
		xqsort(v, (size_t)n, sizeof(*v), cmp_pid);
	if (err) {
		free(v);
		return err;
	}
	*out = v;
	*nr = n;
	return 0;
}

/* Whether @pid has a thread not among the @nr sorted @tids. */
bool live_new_threads(pid_t pid, const pid_t *tids, int nr)
{
	pid_t *now;
	int n, i, j = 0;
	bool found = false;

	if (live_list_tids(pid, &now, &n))
		return false;
	for (i = 0; i < n && !found; i++) {
		while (j < nr && tids[j] < now[i])
			j++;
		found = j == nr || tids[j] != now[i];
	}
	free(now);
	return found;
}

/* _text and _etext from /proc/kallsyms; 0 when hidden (kptr_restrict). */
void live_kernel_text(u64 *text, u64 *etext)
{
	char line[512], name[256];
	unsigned long long a;
	char type;
	FILE *f = fopen("/proc/kallsyms", "re");

	*text = *etext = 0;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f) && (!*text || !*etext)) {
		if (sscanf(line, "%llx %c %255s", &a, &type, name) != 3)
			continue;
		if (!strcmp(name, "_text"))
			*text = a;
		else if (!strcmp(name, "_etext"))
			*etext = a;
	}
	fclose(f);
}

static int read_schedstat(pid_t pid, pid_t tid, u64 *ns)
{
	char path[64], buf[128];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", (int)pid, (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	/* "run_ns wait_ns timeslices": time spent on a CPU (proc(5)). */
	*ns = strtoull(buf, NULL, 10);
	return 0;
}

/*
 * Note the on-CPU time of every thread of the target in @arr (tids kept
 * sorted; a thread seen before keeps its entry, updated), for rates per
 * CPU second. A thread gone meanwhile keeps its last value. Best effort:
 * on any error the snapshot is just less complete.
 */
void live_snap_cpu(pid_t pid, struct live_cpu **arr, size_t *nr, size_t *cap)
{
	pid_t *tids;
	int n, i;
	size_t j;
	u64 ns = 0;

	if (live_list_tids(pid, &tids, &n))
		return;
	for (i = 0; i < n; i++) {
		if (read_schedstat(pid, tids[i], &ns))
			continue;
		for (j = 0; j < *nr && (*arr)[j].tid != tids[i]; j++)
			;
		if (j == *nr) {
			if (ensure_mem((void **)arr, cap, sizeof(**arr), *nr + 1))
				break;
			(*arr)[(*nr)++].tid = tids[i];
		}
		(*arr)[j].ns = ns;
	}
	free(tids);
}

/* environ plus PYTHONPERFSUPPORT=1 unless already set (CPython 3.12+
 * then writes /tmp/perf-PID.map: docs/cpython-perf.md). */
char **live_child_env(bool add)
{
	extern char **environ;
	size_t n = 0, i;
	bool has = false;
	char **env;

	for (; environ && environ[n]; n++)
		has |= !strncmp(environ[n], "PYTHONPERFSUPPORT=", 18);
	env = calloc(n + 2, sizeof(*env));
	if (!env)
		return NULL;
	for (i = 0; i < n; i++)
		env[i] = environ[i];
	if (add && !has)
		env[n] = (char *)"PYTHONPERFSUPPORT=1";
	return env;
}

/* Fork a child that waits on @go (EOF: _exit without exec) and then
 * execs @argv, reporting an exec failure's errno on @errfd. Only
 * async-signal-safe calls in the child (fork(2) in a threaded caller). */
int live_fork_child(const char *const *argv, char **env, pid_t *child,
		    int *go_fd, int *errfd)
{
	int go[2], ep[2];
	pid_t pid;
	char c;

	if (pipe2(go, O_CLOEXEC) < 0)
		return -errno;
	if (pipe2(ep, O_CLOEXEC) < 0) {
		int err = -errno;

		close(go[0]);
		close(go[1]);
		return err;
	}
	pid = fork();
	if (pid < 0) {
		int err = -errno;

		close(go[0]);
		close(go[1]);
		close(ep[0]);
		close(ep[1]);
		return err;
	}
	if (pid == 0) {
		ssize_t n;
		int e;

		close(go[1]);
		close(ep[0]);
		do
			n = read(go[0], &c, 1);
		while (n < 0 && errno == EINTR);
		if (n != 1 || c != 'g')
			_exit(127);
		execvpe(argv[0], (char *const *)argv, env);
		e = errno;
		if (write(ep[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(go[0]);
	close(ep[1]);
	*child = pid;
	*go_fd = go[1];
	*errfd = ep[0];
	return 0;
}

/* Let the child exec; -errno if the exec failed. */
int live_release_child(int *go_fd, int errfd)
{
	char c = 'g';
	ssize_t n;
	int e = 0;

	if (write(*go_fd, &c, 1) != 1)
		return -errno;
	close(*go_fd);
	*go_fd = -1;
	do
		n = read(errfd, &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	return n == (ssize_t)sizeof(e) ? -e : 0;
}

/* The build id of the regular file @path if it is the mapped one (the
 * device and inode of its maps line), else 0. */
static size_t file_build_id(const char *path, u32 maj, u32 min, u64 ino,
			    u8 out[LIVE_BUILD_ID_MAX])
{
	struct stat st;
	const void *id;
	ssize_t n = 0;
	Elf *elf;
	char magic[4];
	int fd;

	/* stat() first: a maps line may name a device (a GPU's /dev/nvidia0
	 * is mapped by every CUDA process), which is never opened. */
	if (stat(path, &st) || !S_ISREG(st.st_mode))
		return 0;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (u64)st.st_ino != ino ||
	    major(st.st_dev) != maj || minor(st.st_dev) != min ||
	    pread(fd, magic, 4, 0) != 4 || memcmp(magic, ELFMAG, SELFMAG)) {
		close(fd);
		return 0;
	}
	/* libelf reads the note from the program headers (PT_NOTE) or the
	 * section headers, whichever the file has. */
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf) {
		n = dwelf_elf_gnu_build_id(elf, &id);
		if (n > 0 && n <= LIVE_BUILD_ID_MAX)
			memcpy(out, id, (size_t)n);
		else
			n = 0;
		elf_end(elf);
	}
	close(fd);
	return (size_t)n;
}

size_t live_map_build_id(pid_t pid, u64 start, u64 end, const char *path,
			 u32 maj, u32 min, u64 ino, u8 out[LIVE_BUILD_ID_MAX])
{
	char p[4096 + 64];
	size_t n = 0, len = strlen(path);

	if (path[0] != '/' || !ino)
		return 0;
	/* The mapped file itself, whatever became of its name (deleted,
	 * replaced by an upgrade): opening it takes CAP_CHECKPOINT_RESTORE
	 * or CAP_SYS_ADMIN (fs/proc/base.c proc_map_files_get_link). */
	snprintf(p, sizeof(p), "/proc/%d/map_files/%llx-%llx", (int)pid,
		 (unsigned long long)start, (unsigned long long)end);
	n = file_build_id(p, maj, min, ino, out);
	/* Else by name, as the process sees it (its mount namespace, a
	 * container's root), then as we do; the inode check above keeps a
	 * file replaced since it was mapped from lending its id. */
	if (!n && len < 4096) {
		snprintf(p, sizeof(p), "/proc/%d/root%s", (int)pid, path);
		n = file_build_id(p, maj, min, ino, out);
	}
	if (!n)
		n = file_build_id(path, maj, min, ino, out);
	return n;
}
