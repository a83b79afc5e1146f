// SPDX-License-Identifier: Apache-2.0
/*
 * holder: one workload process of a Kubernetes-shaped node for make bench-cardinality.
 *
 *   holder [-s READY_FILE] [-m FILE]... [-t DIR -r SECONDS] [-n MEMFD_NAME] FILE...
 *
 * Holds every FILE open (read once, so that its pages are cached), maps each -m FILE, and keeps
 * what a real node's processes keep besides: a memfd (-n, 256 KiB written) and a temporary file
 * opened and unlinked in DIR (-t, 256 KiB written, so " (deleted)"). With -r the temporary file
 * is replaced by one of a new random name every SECONDS, as a process that buffers uploads or
 * spills to disk does: the one source of file-name churn on a steady node. With -s it appends a
 * line to READY_FILE once all that is done (and closes it), so that a caller can wait for a
 * node's processes, however slow the machine. Runs until killed.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static char buf[1 << 16];

static void read_all(int fd)
{
	while (read(fd, buf, sizeof(buf)) > 0)
		;
}

static void write_some(int fd, size_t bytes)
{
	memset(buf, 'x', sizeof(buf));
	for (size_t done = 0; done < bytes; done += sizeof(buf))
		if (write(fd, buf, sizeof(buf)) < 0)
			return;
}

/* A new temporary file in dir, unlinked at once; the previous one closed. */
static int replace_tmp(const char *dir, int old)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/spill-XXXXXX", dir);
	fd = mkstemp(path);
	if (fd < 0) {
		perror(path);
		return old;
	}
	unlink(path);
	write_some(fd, 256 << 10);
	if (old >= 0)
		close(old);
	return fd;
}

int main(int argc, char **argv)
{
	const char *tmpdir = NULL, *memfd_name = NULL, *ready = NULL;
	unsigned rotate = 0;
	int opt, tmp = -1;

	while ((opt = getopt(argc, argv, "m:t:r:n:s:")) != -1) {
		switch (opt) {
		case 'm': {
			int fd = open(optarg, O_RDONLY | O_CLOEXEC);
			struct stat st;

			if (fd < 0 || fstat(fd, &st) < 0 || st.st_size == 0 ||
			    mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0) == MAP_FAILED) {
				perror(optarg);
				return 1;
			}
			read_all(fd);
			close(fd); /* the mapping alone keeps it */
			break;
		}
		case 't':
			tmpdir = optarg;
			break;
		case 'r':
			rotate = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'n':
			memfd_name = optarg;
			break;
		case 's':
			ready = optarg;
			break;
		default:
			fprintf(stderr, "usage: holder [-s FILE] [-m FILE]... [-t DIR -r SECONDS] [-n NAME] FILE...\n");
			return 2;
		}
	}
	for (int i = optind; i < argc; i++) {
		int fd = open(argv[i], O_RDONLY | O_CLOEXEC);

		if (fd < 0) {
			perror(argv[i]);
			return 1;
		}
		read_all(fd);
	}
	if (memfd_name) {
		int fd = memfd_create(memfd_name, MFD_CLOEXEC);

		if (fd >= 0)
			write_some(fd, 256 << 10);
	}
	if (tmpdir)
		tmp = replace_tmp(tmpdir, -1);
	if (ready) {
		int fd = open(ready, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);

		if (fd < 0 || dprintf(fd, "%d\n", (int)getpid()) < 0) {
			perror(ready);
			return 1;
		}
		close(fd);
	}
	for (;;) {
		if (tmpdir && rotate) {
			sleep(rotate);
			tmp = replace_tmp(tmpdir, tmp);
		} else {
			pause();
		}
	}
}
