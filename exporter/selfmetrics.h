/* SPDX-License-Identifier: Apache-2.0 */
/*
 * selfmetrics: the series about the exporter itself that change with every scrape, rendered
 * per scrape and appended after the shared body of the snapshot: process_* (as every
 * Prometheus client library exports them, from /proc/self), the HTTP handler's counters and
 * the age of the snapshot served.
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
};

/* Index of code in selfmetrics.requests. */
unsigned selfmetrics_code_index(unsigned code);

/* Writes the families. procfs: where /proc is ("/proc"). Returns 0 or -EIO. */
int selfmetrics_render(FILE *out, const struct selfmetrics *m, const char *procfs);
