/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Hostile process for tests/integration/hardening-files.sh: holds O_PATH descriptors to a regular
 * file, a character device node and a FIFO, and swaps descriptors 100-103 among them as fast as
 * it can, so that a scanner that checks a /proc/PID/fd link and then opens it again opens the
 * device or the FIFO. With "rdonly" after them, the regular file is held open read-only instead
 * (a file the process may ask cachestat about if it owns it, so that a scanner gets past its
 * permission check to the open). Runs until killed. Usage: racer REGULAR DEVICE FIFO [rdonly]
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int src[3];

	if (argc != 4 && argc != 5)
		return 2;
	/* the sources sit above 103: a scanner reaches 100-103 first, in the middle of the race */
	for (int i = 0; i < 3; i++) {
		int fd = open(argv[i + 1], (i == 0 && argc == 5 ? O_RDONLY : O_PATH) | O_CLOEXEC);

		if (fd < 0 || dup2(fd, 200 + i) < 0) {
			perror(argv[i + 1]);
			return 1;
		}
		close(fd);
		src[i] = 200 + i;
	}
	puts("ready");
	fflush(stdout);
	for (unsigned k = 0;; k++)
		for (int fd = 100; fd < 104; fd++)
			if (dup2(src[(k + (unsigned)fd) % 3], fd) < 0)
				return 1;
}
