// SPDX-License-Identifier: GPL-2.0
/*
 * cachestat() against mmap() + mincore() on the same ranges.
 *
 * Usage: cachestat_bench SCRATCH_DIR [MINCORE_SPARSE_GB...]
 *        cachestat_bench --small SCRATCH_DIR
 *
 * (a) A 2 TB sparse file (the seed's cover letter: 0.009 s against 37.5 s).
 *     cachestat() walks all of it. mincore() looks up every page; it is timed
 *     over the first MINCORE_SPARSE_GB of the file (default: 16, 128 and
 *     2048, i.e. all of it). Without 2048 the 2 TB figure is extrapolated
 *     linearly from the largest size measured.
 * (b) A fully cached 1 GiB file.
 *
 * --small runs both at a smoke test's size, in a second under TCG and in a
 * guest of 2 x 512 MiB: a 1 GiB sparse file, mincore() over all of it, and a
 * 64 MiB cached file. Its figures mean nothing; that it prints them is the test.
 *
 * Usage: cachestat_bench --flush SCRATCH_DIR [CALLS]
 *
 * (c) The cost of many small calls from an unprivileged user (uid 65534 on a
 *     one-page file of its own): quiet, beside one process adding and dropping
 *     page cache in the caller's memcg, and beside 128 such processes in as
 *     many memcgs, which keeps the memcg stats due for a flush and makes each
 *     flush walk every memcg with updates. Without a rate limit on the flush,
 *     a call that finds the stats due pays for one: mean, p99 and worst.
 *
 * Output: "# ..." commentary and one "bench: KEY VALUE" line per figure.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <grp.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CACHESTAT_NR 451
#define MINCORE_CHUNK (1ULL << 30)
#define MAX_CALLS 200000
#define CHURN_MEMCGS 128
#define MIN_RUN_S 0.05

/* The seed ABI of cachestat(); host headers may predate it. */
struct cs_stat {
	uint64_t nr_cache;
	uint64_t nr_dirty;
	uint64_t nr_writeback;
	uint64_t nr_evicted;
	uint64_t nr_recently_evicted;
};

static size_t page_size;

/* The two files' sizes, and the names the "bench:" keys give them. */
static uint64_t sparse_bytes = 2ULL << 40, cached_bytes = 1ULL << 30;
static const char *sparse_tag = "2tb", *cached_tag = "1gib";

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * Seconds per call over [0, len), the best of RUNS runs; ret_cached the count. A run repeats the
 * call for at least MIN_RUN_S: a guest's clock may tick in jiffies (TCG under load falls back
 * to them), where one fast call times as 0 s and its ratio as inf.
 */
static double time_cachestat(int fd, uint64_t len, int runs, uint64_t *ret_cached)
{
	double best = 1e9, t0, t;
	struct cs_stat cs;
	long calls;
	int i;

	for (i = 0; i < runs; i++) {
		calls = 0;
		t0 = now();
		do {
			if (syscall(CACHESTAT_NR, fd, 0L, (size_t)len, sizeof(cs), &cs)) {
				perror("cachestat");
				exit(1);
			}
			calls++;
			t = now() - t0;
		} while (t < MIN_RUN_S);
		t /= calls;
		if (t < best)
			best = t;
	}
	*ret_cached = cs.nr_cache;
	return best;
}

/* mmap + mincore over [0, len) in 1 GiB steps, as a tool without cachestat does: the pages resident. */
static uint64_t mincore_once(int fd, uint64_t len)
{
	static unsigned char vec[MINCORE_CHUNK / 4096];
	uint64_t off, resident = 0, chunk, i;
	char *map;

	map = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	for (off = 0; off < len; off += chunk) {
		chunk = len - off < MINCORE_CHUNK ? len - off : MINCORE_CHUNK;
		if (mincore(map + off, chunk, vec)) {
			perror("mincore");
			exit(1);
		}
		for (i = 0; i < chunk / page_size; i++)
			resident += vec[i] & 1;
	}
	munmap(map, len);
	return resident;
}

/* Seconds per mincore_once(), the best of RUNS runs of at least MIN_RUN_S each, as above. */
static double time_mincore(int fd, uint64_t len, int runs, uint64_t *ret_resident)
{
	double best = 1e9, t0, t;
	long calls;
	int run;

	for (run = 0; run < runs; run++) {
		calls = 0;
		t0 = now();
		do {
			*ret_resident = mincore_once(fd, len);
			calls++;
			t = now() - t0;
		} while (t < MIN_RUN_S);
		t /= calls;
		if (t < best)
			best = t;
	}
	return best;
}

static int open_scratch(const char *dir, const char *name)
{
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0644);
	if (fd < 0) {
		perror(path);
		exit(1);
	}
	unlink(path);
	return fd;
}

static void bench_sparse(const char *dir, int argc, char **argv)
{
	static const char *default_gb[] = { "16", "128", "2048" };
	const char **gbs = default_gb;
	int n = 3, i, fd;
	double t_cs, t_mc, t_full = 0, per_gb = 0;
	uint64_t cached, resident, len;

	if (argc > 0) {
		gbs = (const char **)argv;
		n = argc;
	}
	fd = open_scratch(dir, "bench-sparse");
	if (ftruncate(fd, sparse_bytes)) {
		perror("ftruncate the sparse file");
		exit(1);
	}
	t_cs = time_cachestat(fd, 0, 5, &cached);
	printf("# sparse %s: cachestat %.9f s (%llu pages cached)\n", sparse_tag, t_cs,
	       (unsigned long long)cached);
	printf("bench: sparse_%s_cachestat_s %.9f\n", sparse_tag, t_cs);

	for (i = 0; i < n; i++) {
		len = strtoull(gbs[i], NULL, 10) << 30;
		if (!len || len > sparse_bytes)
			continue;
		time_cachestat(fd, len, 5, &cached);
		t_mc = time_mincore(fd, len, 1, &resident);
		printf("# sparse %s GB: mincore %.3f s (%llu pages resident)\n",
		       gbs[i], t_mc, (unsigned long long)resident);
		printf("bench: sparse_%sgb_mincore_s %.3f\n", gbs[i], t_mc);
		if (len == sparse_bytes)
			t_full = t_mc;
		per_gb = t_mc / (len >> 30);
	}
	if (t_full) {
		printf("bench: sparse_%s_mincore_s %.3f\n", sparse_tag, t_full);
		printf("bench: sparse_%s_ratio %.0f\n", sparse_tag, t_full / t_cs);
	} else if (per_gb) {
		t_full = per_gb * (sparse_bytes >> 30);
		printf("bench: sparse_%s_mincore_extrapolated_s %.1f\n", sparse_tag, t_full);
		printf("bench: sparse_%s_ratio_extrapolated %.0f\n", sparse_tag, t_full / t_cs);
	}
	close(fd);
}

static void bench_cached(const char *dir)
{
	static char buf[1 << 20];
	uint64_t cached, resident, off;
	double t_cs, t_mc;
	int fd;

	fd = open_scratch(dir, "bench-cached");
	memset(buf, 0x42, sizeof(buf));
	for (off = 0; off < cached_bytes; off += sizeof(buf)) {
		if (write(fd, buf, sizeof(buf)) != sizeof(buf)) {
			perror("write");
			exit(1);
		}
	}
	fsync(fd);
	t_cs = time_cachestat(fd, 0, 5, &cached);
	t_mc = time_mincore(fd, cached_bytes, 5, &resident);
	printf("# cached %s: cachestat %.6f s (%llu pages), mincore %.6f s (%llu pages)\n",
	       cached_tag, t_cs, (unsigned long long)cached, t_mc, (unsigned long long)resident);
	if (cached != cached_bytes / page_size)
		printf("# warning: only %llu of %llu pages cached\n",
		       (unsigned long long)cached,
		       (unsigned long long)(cached_bytes / page_size));
	printf("bench: cached_%s_cachestat_s %.6f\n", cached_tag, t_cs);
	printf("bench: cached_%s_mincore_s %.6f\n", cached_tag, t_mc);
	printf("bench: cached_%s_ratio %.1f\n", cached_tag, t_mc / t_cs);
	close(fd);
}

/* A child that keeps adding and dropping page cache: memcg stat updates on every page. */
static void churn_loop(int fd, size_t bytes)
{
	static char buf[256 << 10];

	memset(buf, 0x17, bytes);
	for (;;) {
		if (pwrite(fd, buf, bytes, 0) != (ssize_t)bytes || ftruncate(fd, 0))
			_exit(1);
	}
}

static void write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY);

	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
		perror(path);
		exit(1);
	}
	close(fd);
}

/* A group of churning children, held back until started. */
struct churn {
	pid_t pids[128];
	int n, go;	/* go: the write end of the pipe the children wait on */
};

/* In the child: into a new memory cgroup NAME (unless NULL), down to uid 65534, then wait. */
static void churn_child(const char *name, int fd, size_t bytes, int go_read)
{
	char path[PATH_MAX], c;

	if (name) {
		snprintf(path, sizeof(path), "/sys/fs/cgroup/%s", name);
		if (mkdir(path, 0755) && errno != EEXIST)
			_exit(1);
		strncat(path, "/cgroup.procs", sizeof(path) - strlen(path) - 1);
		write_file(path, "0");
	}
	/* The same uid as the caller, who must be able to kill it */
	if (setgroups(0, NULL) || setgid(65534) || setuid(65534))
		_exit(1);
	if (read(go_read, &c, 1) < 0)
		_exit(1);
	churn_loop(fd, bytes);
}

/*
 * Forks N churning children, each on a file of its own of BYTES, each in a new memory cgroup
 * when IN_MEMCGS (else in the caller's); they start when churn_start() is called.
 */
static void churn_fork(struct churn *c, const char *dir, int n, bool in_memcgs, size_t bytes)
{
	char name[64];
	int i, go[2];

	if (pipe(go)) {
		perror("pipe");
		exit(1);
	}
	if (in_memcgs)
		write_file("/sys/fs/cgroup/cgroup.subtree_control", "+memory");
	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "bench-churn-%s-%d", in_memcgs ? "cg" : "own", i);
		int fd = open_scratch(dir, name);
		pid_t pid = fork();

		if (pid < 0) {
			perror("fork");
			exit(1);
		}
		if (pid == 0) {
			close(go[1]);
			churn_child(in_memcgs ? name : NULL, fd, bytes, go[0]);
		}
		c->pids[i] = pid;
		close(fd);
	}
	close(go[0]);
	c->n = n;
	c->go = go[1];
}

static void churn_start(struct churn *c)
{
	close(c->go);	/* the children's read() returns 0 */
	usleep(300000);
}

static void churn_stop(struct churn *c)
{
	int i, status;

	for (i = 0; i < c->n; i++)
		kill(c->pids[i], SIGKILL);
	for (i = 0; i < c->n; i++)
		waitpid(c->pids[i], &status, 0);
	usleep(200000);
}

struct call_times {
	double mean, p99, max;
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * The CPU time of each of CALLS cachestat() calls on fd: mean, 99th percentile and worst.
 * CPU time, not wall time: beside 128 busy processes the caller waits for a CPU far longer
 * than it runs, while a flush it pays for runs on its own time.
 */
static struct call_times time_small_calls(int fd, long calls)
{
	static double t[MAX_CALLS];
	struct call_times r = { 0 };
	struct cs_stat cs;
	long i, n = calls < MAX_CALLS ? calls : MAX_CALLS;

	for (i = 0; i < n; i++) {
		double t0 = cpu_now();

		if (syscall(CACHESTAT_NR, fd, 0L, (size_t)page_size, sizeof(cs), &cs)) {
			perror("cachestat");
			exit(1);
		}
		t[i] = cpu_now() - t0;
		r.mean += t[i] / n;
	}
	qsort(t, n, sizeof(t[0]), cmp_double);
	r.p99 = t[n * 99 / 100];
	r.max = t[n - 1];
	return r;
}

static void print_calls(const char *key, const char *what, struct call_times c)
{
	printf("# %s: CPU %.0f ns/call mean, %.0f p99, %.0f worst\n", what, c.mean * 1e9, c.p99 * 1e9,
	       c.max * 1e9);
	printf("bench: %s_ns %.0f\n", key, c.mean * 1e9);
	printf("bench: %s_p99_ns %.0f\n", key, c.p99 * 1e9);
	printf("bench: %s_max_ns %.0f\n", key, c.max * 1e9);
}

/*
 * Small calls as uid 65534 on a one-page file of its own: quiet, beside one process churning
 * page cache in the caller's cgroup, and beside CHURN_MEMCGS processes churning in as many
 * memcgs (a flush then walks every memcg with updates, on every CPU, interrupts off).
 */
static void bench_flush(const char *dir, long calls)
{
	static struct churn one, many;
	struct call_times quiet, t_one, t_many;
	int fd;

	fd = open_scratch(dir, "bench-small");
	if (write(fd, "x", 1) != 1 || fchown(fd, 65534, 65534)) {
		perror("bench-small");
		exit(1);
	}
	churn_fork(&one, dir, 1, false, 256 << 10);
	churn_fork(&many, dir, CHURN_MEMCGS, true, 16 << 10);
	if (setgroups(0, NULL) || setgid(65534) || setuid(65534)) {
		perror("drop to uid 65534");
		exit(1);
	}
	quiet = time_small_calls(fd, calls);
	churn_start(&one);
	t_one = time_small_calls(fd, calls);
	churn_stop(&one);
	churn_start(&many);
	t_many = time_small_calls(fd, calls);
	churn_stop(&many);
	printf("# %ld calls each as uid 65534 on a 1-page file\n", calls);
	print_calls("small_call_quiet", "quiet", quiet);
	print_calls("small_call_churn", "beside page cache churn in one memcg", t_one);
	print_calls("small_call_memcgs", "beside page cache churn in 128 memcgs", t_many);
	close(fd);
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "--flush")) {
		page_size = sysconf(_SC_PAGESIZE);
		setvbuf(stdout, NULL, _IOLBF, 0);
		bench_flush(argv[2], argc > 3 ? atol(argv[3]) : 20000);
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "--small")) {
		static char *whole[] = { "1" };

		page_size = sysconf(_SC_PAGESIZE);
		setvbuf(stdout, NULL, _IOLBF, 0);
		sparse_bytes = 1ULL << 30;
		sparse_tag = "1gib";
		cached_bytes = 64ULL << 20;
		cached_tag = "64mib";
		bench_sparse(argv[2], 1, whole);
		bench_cached(argv[2]);
		return 0;
	}
	if (argc < 2) {
		fprintf(stderr, "usage: %s SCRATCH_DIR [MINCORE_SPARSE_GB...]\n"
			"       %s --small SCRATCH_DIR\n", argv[0], argv[0]);
		return 2;
	}
	page_size = sysconf(_SC_PAGESIZE);
	setvbuf(stdout, NULL, _IOLBF, 0);
	bench_sparse(argv[1], argc - 2, argv + 2);
	bench_cached(argv[1]);
	return 0;
}
