/* SPDX-License-Identifier: Apache-2.0 */
/*
 * client: the channel's HTTP side (wire/channel.h), the HTTP process's source of bodies. A
 * thread receives the scanner's answers and wakes the scrapes that wait for them.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "http/http.h"
#include "wire/body.h"

struct privsep_client;

/*
 * Asks the scanner at the other end of sock (taken, also on failure); a thread receives the
 * answers. lost is called once, from that thread, when the scanner is gone or sent a bad
 * message (after every waiter was woken). Returns 0 or -errno.
 */
int privsep_client_new(int sock, void (*lost)(void *userdata, int error), void *userdata,
		       struct privsep_client **ret);

/* As scheduler_enqueue() and scheduler_take(), answered by the scanner's scheduler. */
int privsep_client_enqueue(struct privsep_client *c, uint64_t budget_ns, bool scan,
			   struct body_waiter *w);
int privsep_client_take(struct privsep_client *c, const struct body_waiter *w,
			struct body **ret, bool *ret_stale);
void privsep_client_wake_all(struct privsep_client *c);
/* The scanner's counters, as of its last answer. */
void privsep_client_counters(struct privsep_client *c, uint64_t *ret_stuck, uint64_t *ret_restarts);
/* The scanner process's log lines suppressed as repeats, as of its last answer. */
uint64_t privsep_client_log_repeats(struct privsep_client *c);

/* The calls above as the HTTP server's source of bodies (http_serve()), impl being c. */
struct http_source privsep_client_source(struct privsep_client *c);

/* Stops the receiving thread and frees; every waiter must have been taken. */
void privsep_client_free(struct privsep_client *c);
