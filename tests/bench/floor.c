/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The floor for the exporter benchmark: the least any tool can do to learn the page cache
 * state of a list of files, i.e. open + cachestat + close per file, nothing else; with
 * --mincore, the floor of the mincore method: open + mmap + mincore + munmap + close, in
 * windows of 1 GiB as the exporter maps them.
 * Usage: floor [--mincore] LISTFILE  (one path per line). Prints "files seconds cached_bytes".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

struct cs {
	uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted;
};

struct range {
	uint64_t off, len;
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Resident pages of fd by mmap + mincore + munmap, a window at a time; vec holds a window. */
static uint64_t mincore_pages(int fd, uint64_t size, uint64_t ps, unsigned char *vec, uint64_t window)
{
	uint64_t pages = (size + ps - 1) / ps, count = 0;

	for (uint64_t done = 0; done < pages; done += window) {
		uint64_t n = pages - done < window ? pages - done : window;
		void *p = mmap(NULL, n * ps, PROT_READ, MAP_SHARED, fd, (off_t)(done * ps));

		if (p == MAP_FAILED)
			return count;
		if (mincore(p, n * ps, vec) == 0)
			for (uint64_t i = 0; i < n; i++)
				count += vec[i] & 1;
		munmap(p, n * ps);
	}
	return count;
}

int main(int argc, char **argv)
{
	static struct range whole = { 0, 0 };
	char *buf = NULL, **paths = NULL;
	size_t len = 0, n = 0, cap = 0;
	uint64_t cached = 0;
	const uint64_t ps = (uint64_t)sysconf(_SC_PAGESIZE), window = (1ULL << 30) / ps;
	unsigned char *vec = NULL;
	int seed, fd, use_mincore = 0;
	double t0, t1;
	struct stat st;
	struct cs c;
	FILE *f;

	if (argc == 3 && strcmp(argv[1], "--mincore") == 0) {
		use_mincore = 1;
		argv++, argc--;
		vec = malloc(window);
		if (!vec)
			return 1;
	}
	if (argc != 2) {
		fprintf(stderr, "usage: floor [--mincore] LISTFILE\n");
		return 2;
	}
	f = fopen(argv[1], "re");
	if (!f || getdelim(&buf, &len, '\0', f) < 0) {
		perror(argv[1]);
		return 1;
	}
	fclose(f);
	for (char *save = NULL, *p = strtok_r(buf, "\n", &save); p; p = strtok_r(NULL, "\n", &save)) {
		if (n == cap) {
			cap = cap ? cap * 2 : 1024;
			paths = realloc(paths, cap * sizeof(*paths));
			if (!paths)
				return 1;
		}
		paths[n++] = p;
	}

	/* the ABI, as the exporter finds it: the seed form works on a seed kernel only */
	fd = open(paths[0], O_RDONLY);
	seed = syscall(451, fd, 0L, 0UL, sizeof(c), &c) == 0;
	close(fd);

	t0 = now();
	for (size_t i = 0; use_mincore && i < n; i++) {
		fd = open(paths[i], O_RDONLY);
		if (fd < 0)
			continue;
		/* the size the exporter has from the fstat of its admission */
		if (fstat(fd, &st) == 0)
			cached += mincore_pages(fd, (uint64_t)st.st_size, ps, vec, window);
		close(fd);
	}
	for (size_t i = 0; !use_mincore && i < n; i++) {
		fd = open(paths[i], O_RDONLY);
		if (fd < 0)
			continue;
		if ((seed ? syscall(451, fd, 0L, 0UL, sizeof(c), &c)
			  : syscall(451, fd, &whole, &c, 0)) == 0)
			cached += c.nr_cache;
		close(fd);
	}
	t1 = now();
	printf("%zu %.6f %llu\n", n, t1 - t0, (unsigned long long)cached * (unsigned long long)sysconf(_SC_PAGESIZE));
	return 0;
}
