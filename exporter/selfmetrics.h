/* SPDX-License-Identifier: Apache-2.0 */
/*
 * selfmetrics: the series about the exporter itself that change with every scrape, rendered
 * per scrape and appended after the shared body of the snapshot: process_* (as every
 * Prometheus client library exports them, from /proc/self), the HTTP handler's counters and
 * the age of the snapshot served. The /proc files are opened once, by the process they
 * describe, before its system call filter forbids opening files; each scrape reads them again.
 */
#pragma once

#include <stdint.h>
#include <stdio.h>

/* The status codes counted in cachestat_http_requests_total{code}; others count as "other". */
#define SELFMETRICS_CODES { 200, 400, 401, 404, 405, 500, 503 }
#define SELFMETRICS_N_CODES 8 /* the codes above and "other" */

struct selfmetrics {
	uint64_t requests[SELFMETRICS_N_CODES]; /* index from selfmetrics_code_index() */
	unsigned in_flight;
	double snapshot_age_seconds;
	uint64_t scans_stuck_total;
	uint64_t http_restarts_total; /* the HTTP process restarted by the scanner process */
};

/* /proc/stat, /proc/self/stat and /proc/self/fd of the process that opened them; -1: none. */
struct selfmetrics_proc {
	int stat, self_stat, self_fd;
};

/* Index of code in selfmetrics.requests. */
unsigned selfmetrics_code_index(unsigned code);

/* Opens the files of procfs ("/proc") that describe the calling process. Returns 0 or -errno. */
int selfmetrics_proc_open(const char *procfs, struct selfmetrics_proc *ret);
void selfmetrics_proc_close(struct selfmetrics_proc *p);

/* Writes the families; the process_* ones from p (left out where it has no file). Returns 0 or -EIO. */
int selfmetrics_render(FILE *out, const struct selfmetrics *m, const struct selfmetrics_proc *p);
