/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Runs the exporter's cachestat ABI probe (exporter/pagecache.c) where it is built statically
 * into a busybox initramfs, so that it can be tried on the patched (seed ABI) kernel too.
 * Prints "abi=NAME" and, for a file of 100 pages it writes, "cached=BYTES dirty=BYTES".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/pagecache.h"

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "/tmp/abiprobe.data";
	struct pagecache_cachestat cs;
	struct pagecache pc;
	char page[4096];
	int fd, r;

	r = pagecache_probe_default(&pc);
	printf("abi=%s probe=%d\n", pagecache_abi_name(pc.abi), r);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		perror(path);
		return 1;
	}
	memset(page, 'x', sizeof(page));
	for (int i = 0; i < 100; i++)
		if (write(fd, page, sizeof(page)) != (ssize_t)sizeof(page)) {
			perror("write");
			return 1;
		}
	r = pagecache_stat(&pc, fd, &cs);
	if (r < 0) {
		printf("cachestat=%s\n", strerror(-r));
		return 1;
	}
	printf("cached=%llu dirty=%llu\n", (unsigned long long)cs.nr_cache * 4096,
	       (unsigned long long)cs.nr_dirty * 4096);
	close(fd);
	return 0;
}
