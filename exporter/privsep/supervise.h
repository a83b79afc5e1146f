/* SPDX-License-Identifier: Apache-2.0 */
/*
 * supervise: the process model of the daemon. The process started (the scanner) keeps the
 * capabilities the scan needs and forks the HTTP process, which speaks to clients with none;
 * each HTTP process gets a socketpair to the scanner (wire/channel.h). The scanner:
 *  - starts a new HTTP process when one dies (at once, then after 1 s, doubling up to 60 s
 *    while it keeps dying within 10 s of a start), counted in cachestat_http_restarts_total;
 *  - watches the web config (at most once a second) and, when it changed and loads, starts an
 *    HTTP process on it and retires the old one (it stops accepting and answers the scrapes it
 *    holds, at most HTTP_DEFAULT_SCRAPE_TIMEOUT seconds): the HTTP process never opens a file
 *    once it serves;
 *  - on SIGTERM or SIGINT stops every HTTP process and reaps it before it returns.
 * An HTTP process whose scanner is gone (its channel ends) exits at once, and so does one
 * whose parent dies (PR_SET_PDEATHSIG): it never serves a snapshot that no scan will replace.
 * The listening sockets are bound once, by the scanner, before its privileges are dropped;
 * it keeps them only to hand them to the next HTTP process and never accepts on them.
 */
#pragma once

#include <signal.h>
#include <stdbool.h>

#include "http/http.h"
#include "scanner/server.h"

struct supervise_options {
	struct http_server *http;   /* listening (http_listen()), not serving */
	struct privsep_server *ps;  /* answers the HTTP processes */
	bool drop_privileges;       /* the HTTP process drops every capability */
	void (*on_hup)(void *userdata); /* SIGHUP, in the scanner's main thread */
	void *userdata;
};

struct supervisor;

/* Starts the first HTTP process. Returns 0 or -errno (nothing started). */
int supervise_start(const struct supervise_options *o, struct supervisor **ret);

/* Runs until SIGTERM or SIGINT (which must be blocked, with SIGHUP, SIGCHLD and SIGUSR1). */
void supervise_run(struct supervisor *sv);

/* Stops every HTTP process, reaps it, and frees. */
void supervise_stop(struct supervisor *sv);

/* The signals supervise_run() waits for: SIGHUP, SIGINT, SIGTERM, SIGCHLD. */
void supervise_signals(sigset_t *set);

/* The signal that asks an HTTP process to retire (stop accepting, answer, exit). */
#define SUPERVISE_RETIRE_SIGNAL SIGUSR1
