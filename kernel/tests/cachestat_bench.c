// SPDX-License-Identifier: GPL-2.0
/*
 * cachestat() against mmap() + mincore() on the same ranges.
 *
 * Usage: cachestat_bench SCRATCH_DIR [MINCORE_SPARSE_GB...]
 *
 * (a) A 2 TB sparse file (the seed's cover letter: 0.009 s against 37.5 s).
 *     cachestat() walks all of it. mincore() looks up every page; it is timed
 *     over the first MINCORE_SPARSE_GB of the file (default: 16, 128 and
 *     2048, i.e. all of it). Without 2048 the 2 TB figure is extrapolated
 *     linearly from the largest size measured.
 * (b) A fully cached 1 GiB file.
 *
 * Usage: cachestat_bench --flush SCRATCH_DIR [CALLS]
 *
 * (c) The cost of many small calls from an unprivileged user (uid 65534 on a
 *     one-page file of its own), once on a quiet system and once while
 *     another process keeps adding and dropping page cache, which keeps the
 *     memcg stats due for a flush. Without a rate limit on the flush, every
 *     call of the busy run pays for one.
 *
 * Output: "# ..." commentary and one "bench: KEY VALUE" line per figure.
 */
#define _GNU_SOURCE
#include <errno.h>
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
#define SPARSE_BYTES (2ULL << 40)
#define CACHED_BYTES (1ULL << 30)
#define MINCORE_CHUNK (1ULL << 30)

/* The seed ABI of cachestat(); host headers may predate it. */
struct cs_stat {
	uint64_t nr_cache;
	uint64_t nr_dirty;
	uint64_t nr_writeback;
	uint64_t nr_evicted;
	uint64_t nr_recently_evicted;
};

static size_t page_size;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Best of RUNS calls over [0, len); returns seconds, ret_cached the count. */
static double time_cachestat(int fd, uint64_t len, int runs, uint64_t *ret_cached)
{
	double best = 1e9, t;
	struct cs_stat cs;
	int i;

	for (i = 0; i < runs; i++) {
		t = now();
		if (syscall(CACHESTAT_NR, fd, 0L, (size_t)len, sizeof(cs), &cs)) {
			perror("cachestat");
			exit(1);
		}
		t = now() - t;
		if (t < best)
			best = t;
	}
	*ret_cached = cs.nr_cache;
	return best;
}

/* mmap + mincore over [0, len) in 1 GiB steps, as a tool without cachestat does. */
static double time_mincore(int fd, uint64_t len, int runs, uint64_t *ret_resident)
{
	static unsigned char vec[MINCORE_CHUNK / 4096];
	double best = 1e9, t;
	uint64_t off, resident = 0, chunk, i;
	char *map;
	int run;

	for (run = 0; run < runs; run++) {
		t = now();
		map = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
		if (map == MAP_FAILED) {
			perror("mmap");
			exit(1);
		}
		resident = 0;
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
		t = now() - t;
		if (t < best)
			best = t;
	}
	*ret_resident = resident;
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
	if (ftruncate(fd, SPARSE_BYTES)) {
		perror("ftruncate 2 TB");
		exit(1);
	}
	t_cs = time_cachestat(fd, 0, 5, &cached);
	printf("# sparse 2 TB: cachestat %.9f s (%llu pages cached)\n", t_cs,
	       (unsigned long long)cached);
	printf("bench: sparse_2tb_cachestat_s %.9f\n", t_cs);

	for (i = 0; i < n; i++) {
		len = strtoull(gbs[i], NULL, 10) << 30;
		if (!len || len > SPARSE_BYTES)
			continue;
		time_cachestat(fd, len, 5, &cached);
		t_mc = time_mincore(fd, len, 1, &resident);
		printf("# sparse %s GB: mincore %.3f s (%llu pages resident)\n",
		       gbs[i], t_mc, (unsigned long long)resident);
		printf("bench: sparse_%sgb_mincore_s %.3f\n", gbs[i], t_mc);
		if (len == SPARSE_BYTES)
			t_full = t_mc;
		per_gb = t_mc / (len >> 30);
	}
	if (t_full) {
		printf("bench: sparse_2tb_mincore_s %.3f\n", t_full);
		printf("bench: sparse_2tb_ratio %.0f\n", t_full / t_cs);
	} else if (per_gb) {
		t_full = per_gb * 2048;
		printf("bench: sparse_2tb_mincore_extrapolated_s %.1f\n", t_full);
		printf("bench: sparse_2tb_ratio_extrapolated %.0f\n", t_full / t_cs);
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
	for (off = 0; off < CACHED_BYTES; off += sizeof(buf)) {
		if (write(fd, buf, sizeof(buf)) != sizeof(buf)) {
			perror("write");
			exit(1);
		}
	}
	fsync(fd);
	t_cs = time_cachestat(fd, 0, 5, &cached);
	t_mc = time_mincore(fd, CACHED_BYTES, 5, &resident);
	printf("# cached 1 GiB: cachestat %.6f s (%llu pages), mincore %.6f s (%llu pages)\n",
	       t_cs, (unsigned long long)cached, t_mc, (unsigned long long)resident);
	if (cached != CACHED_BYTES / page_size)
		printf("# warning: only %llu of %llu pages cached\n",
		       (unsigned long long)cached,
		       (unsigned long long)(CACHED_BYTES / page_size));
	printf("bench: cached_1gib_cachestat_s %.6f\n", t_cs);
	printf("bench: cached_1gib_mincore_s %.6f\n", t_mc);
	printf("bench: cached_1gib_ratio %.1f\n", t_mc / t_cs);
	close(fd);
}

/* Keeps page cache coming and going: memcg stat updates on every page. */
static pid_t start_churn(const char *dir)
{
	static char buf[256 << 10];
	pid_t pid;
	int fd;

	fd = open_scratch(dir, "bench-churn");
	pid = fork();
	if (pid < 0) {
		perror("fork");
		exit(1);
	}
	if (pid > 0) {
		close(fd);
		return pid;
	}
	/* The same uid as the caller, who must be able to kill it */
	if (setgroups(0, NULL) || setgid(65534) || setuid(65534))
		_exit(1);
	memset(buf, 0x17, sizeof(buf));
	for (;;) {
		if (pwrite(fd, buf, sizeof(buf), 0) != sizeof(buf) || ftruncate(fd, 0))
			_exit(1);
	}
}

/* Mean seconds per call of CALLS cachestat() calls on fd. */
static double time_small_calls(int fd, long calls)
{
	struct cs_stat cs;
	double t = now();
	long i;

	for (i = 0; i < calls; i++) {
		if (syscall(CACHESTAT_NR, fd, 0L, (size_t)page_size, sizeof(cs), &cs)) {
			perror("cachestat");
			exit(1);
		}
	}
	return (now() - t) / calls;
}

static void bench_flush(const char *dir, long calls)
{
	double quiet, busy;
	pid_t churn;
	int fd, status;

	fd = open_scratch(dir, "bench-small");
	if (write(fd, "x", 1) != 1 || fchown(fd, 65534, 65534)) {
		perror("bench-small");
		exit(1);
	}
	churn = start_churn(dir);
	if (setgroups(0, NULL) || setgid(65534) || setuid(65534)) {
		perror("drop to uid 65534");
		exit(1);
	}
	/* The churn runs on the other CPU: time with it, stop it, time without. */
	usleep(200000);
	busy = time_small_calls(fd, calls);
	kill(churn, SIGKILL);
	waitpid(churn, &status, 0);
	usleep(200000);
	quiet = time_small_calls(fd, calls);
	printf("# %ld calls as uid 65534 on a 1-page file: %.0f ns/call quiet, %.0f ns/call "
	       "beside page cache churn\n", calls, quiet * 1e9, busy * 1e9);
	printf("bench: small_call_quiet_ns %.0f\n", quiet * 1e9);
	printf("bench: small_call_churn_ns %.0f\n", busy * 1e9);
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
	if (argc < 2) {
		fprintf(stderr, "usage: %s SCRATCH_DIR [MINCORE_SPARSE_GB...]\n", argv[0]);
		return 2;
	}
	page_size = sysconf(_SC_PAGESIZE);
	setvbuf(stdout, NULL, _IOLBF, 0);
	bench_sparse(argv[1], argc - 2, argv + 2);
	bench_cached(argv[1]);
	return 0;
}
