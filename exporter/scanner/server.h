/* SPDX-License-Identifier: Apache-2.0 */
/*
 * server: the channel's scanner side (wire/channel.h). Each HTTP process's asks are answered
 * from the scheduler, in a thread of its own.
 */
#pragma once

#include <stdint.h>

struct scheduler;
struct privsep_server;

/* Answers from sched (not owned; it must outlive the server). Returns 0 or -ENOMEM. */
int privsep_server_new(struct scheduler *sched, struct privsep_server **ret);

/*
 * Serves the HTTP process at the other end of sock (taken, also on failure) in a thread of its
 * own, until that process closes it or sends a bad message. Returns 0 or -errno.
 */
int privsep_server_add(struct privsep_server *srv, int sock);

/* The count that every answer carries from now on (cachestat_http_restarts_total). */
void privsep_server_set_restarts(struct privsep_server *srv, uint64_t n);

/* Ends the threads (their peers get the end of the stream) and frees. */
void privsep_server_free(struct privsep_server *srv);
