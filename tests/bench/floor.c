/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The floor for the exporter benchmark: the least any tool can do to learn the page cache
 * state of a list of files, i.e. open + cachestat + close per file, nothing else.
 * Usage: floor LISTFILE  (one path per line). Prints "files seconds cached_bytes".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

int main(int argc, char **argv)
{
	static struct range whole = { 0, 0 };
	char *buf = NULL, **paths = NULL;
	size_t len = 0, n = 0, cap = 0;
	uint64_t cached = 0;
	int seed, fd;
	double t0, t1;
	struct cs c;
	FILE *f;

	if (argc != 2) {
		fprintf(stderr, "usage: floor LISTFILE\n");
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
	for (size_t i = 0; i < n; i++) {
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
