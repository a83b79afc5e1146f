/* SPDX-License-Identifier: Apache-2.0 */
/*
 * selfmetrics: the series about the exporter itself that change with every scrape, rendered
 * per scrape and appended after the shared body of the snapshot: process_* (as every
 * Prometheus client library exports them, from /proc/self), the HTTP handler's counters and
 * the age of the snapshot served. The /proc files are opened once, by the process they
 * describe, before its system call filter forbids opening files; each scrape reads them again.
 */
#pragma once

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* The status codes counted in cachestat_http_requests_total{code}; others count as "other". */
#define SELFMETRICS_CODES { 200, 400, 401, 404, 405, 500, 503 }
#define SELFMETRICS_N_CODES 8 /* the codes above and "other" */

/* The reasons of cachestat_http_logins_refused_total{reason}, in SELFMETRICS_LOGIN_REASONS' order. */
enum selfmetrics_login_reason {
	SELFMETRICS_LOGIN_WRONG,            /* 401: no login, or a wrong one */
	SELFMETRICS_LOGIN_CLIENT_RATE,      /* 429: the client's bcrypt budget spent */
	SELFMETRICS_LOGIN_NEW_CLIENTS_RATE, /* 429: the budget of clients never logged in spent */
	SELFMETRICS_N_LOGIN_REASONS,
};
#define SELFMETRICS_LOGIN_REASONS { "wrong", "client_rate", "new_clients_rate" }

struct selfmetrics {
	uint64_t requests[SELFMETRICS_N_CODES]; /* index from selfmetrics_code_index() */
	uint64_t logins_refused[SELFMETRICS_N_LOGIN_REASONS];
	unsigned in_flight;
	double snapshot_age_seconds;
	uint64_t scans_stuck_total;
	uint64_t http_restarts_total; /* the HTTP process restarted by the scanner process */
	uint64_t log_repeats_total;   /* log lines suppressed as repeats, both processes */
};

/*
 * /proc/stat, /proc/self/stat and /proc/self/fd of the process that opened them (-1: none),
 * and the process_* families rendered from them at most once a second (SELFMETRICS_PROCESS_TTL_NS):
 * a scrape that read /proc/stat and listed /proc/self/fd each time made those reads most of the
 * HTTP process's CPU under 200 concurrent scrapers, its threads queueing on the directory's lock.
 */
struct selfmetrics_proc {
	int stat, self_stat, self_fd;
	pthread_mutex_t lock; /* of what follows */
	uint64_t rendered_ns; /* CLOCK_MONOTONIC of text */
	char *text;
	size_t len;
};

#define SELFMETRICS_PROCESS_TTL_NS 1000000000ULL

/*
 * What outlives one HTTP process, in a page the scanner maps shared before it forks them: the
 * request counters (a restart or a web-config reload does not reset them), the config file's
 * last reload, and the scanner's own process figures, which it samples itself once a second
 * (an HTTP process cannot list the scanner's /proc/PID/fd: that needs ptrace rights over it).
 * The scanner only writes here, never acts on what it reads: an HTTP process may write anything.
 */
struct selfmetrics_shared {
	atomic_uint_fast64_t requests[SELFMETRICS_N_CODES];
	atomic_uint_fast64_t logins_refused[SELFMETRICS_N_LOGIN_REASONS];
	atomic_uint_fast64_t reload_ok;          /* the last load of the config file worked */
	atomic_uint_fast64_t reload_success_us;  /* the last that worked, µs since the epoch */
	/* the scanner process as last sampled; sampled 0: never, the HTTP process reports itself */
	atomic_uint_fast64_t sampled, cpu_us, rss_bytes, vsize_bytes, start_us;
	atomic_uint_fast64_t open_fds, max_fds; /* UINT64_MAX: unknown, max_fds: unlimited */
};

/* A zeroed shared page, the config counted as loaded now. Returns 0 or -errno. */
int selfmetrics_shared_new(struct selfmetrics_shared **ret);
void selfmetrics_shared_free(struct selfmetrics_shared *sh);
/* The calling process's figures from p (opened by it) into sh, as the scanner's. */
void selfmetrics_shared_sample(struct selfmetrics_shared *sh, const struct selfmetrics_proc *p);
/* A load of the config file ended: ok, or failed and the running config kept. */
void selfmetrics_shared_config_loaded(struct selfmetrics_shared *sh, bool ok);

/* Index of code in selfmetrics.requests. */
unsigned selfmetrics_code_index(unsigned code);

/* No files yet, nothing rendered; before any other call. */
void selfmetrics_proc_init(struct selfmetrics_proc *p);
/*
 * Opens the files of procfs ("/proc") that describe the calling process, into p (initialised).
 * Returns 0 or -errno.
 */
int selfmetrics_proc_open(const char *procfs, struct selfmetrics_proc *p);
/* Closes them and forgets what was rendered; p can be opened again. */
void selfmetrics_proc_close(struct selfmetrics_proc *p);

/*
 * Writes the families. process_* are the scanner's from sh once it sampled them (the daemon's
 * main process, as node_exporter's one process reports itself), and p's (left out where it
 * has no file, rendered at most once a second) are then cachestat_http_process_*; without a
 * sample (sh NULL or never sampled), p's are process_*. The config reload families come from
 * sh (left out when NULL). Safe from several threads. Returns 0 or -EIO.
 */
int selfmetrics_render(FILE *out, const struct selfmetrics *m, struct selfmetrics_proc *p,
		       const struct selfmetrics_shared *sh);
