// SPDX-License-Identifier: Apache-2.0
/*
 * openloop: open() and close() in a loop over the files named on the command line, round robin,
 * as the fanotify benchmark's load. Prints the loop's wall time in nanoseconds per open.
 *   openloop COUNT FILE...            COUNT opens as fast as they go
 *   openloop -r RATE SECONDS FILE...  RATE opens per second for SECONDS (paced per millisecond)
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int open_close(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		perror(path);
		return -1;
	}
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	double rate = 0, seconds = 0, t0, t;
	long count, done = 0;
	int first = 2;

	if (argc > 4 && strcmp(argv[1], "-r") == 0) {
		rate = atof(argv[2]);
		seconds = atof(argv[3]);
		first = 4;
		count = (long)(rate * seconds);
	} else if (argc > 2) {
		count = atol(argv[1]);
	} else {
		fprintf(stderr, "usage: openloop COUNT FILE... | openloop -r RATE SECONDS FILE...\n");
		return 2;
	}
	t0 = now();
	while (done < count) {
		if (open_close(argv[first + done % (argc - first)]) < 0)
			return 1;
		done++;
		/* paced: never ahead of the rate, checked each 1/1000 of a second's worth */
		if (rate > 0 && done % (long)(rate / 1000 + 1) == 0)
			while ((t = now() - t0) < (double)done / rate)
				usleep(200);
	}
	printf("%.1f\n", (now() - t0) * 1e9 / (double)count);
	return 0;
}
