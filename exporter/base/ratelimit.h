/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ratelimit: the token bucket of every rate limit of the daemon (the skipped-file log lines,
 * the bcrypt runs of logins). Plain data and one function; the caller holds its own lock.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

/* A token bucket: up to burst at once, then rate a second. */
struct ratelimit {
	double rate;          /* tokens per second */
	double burst;         /* most tokens held */
	double tokens;
	uint64_t last_ns;     /* of the last refill; 0: never (the bucket starts full) */
	uint64_t suppressed;  /* takes refused since the last one let through */
};

/*
 * Whether a token may be taken at now_ns (monotonic_ns(), never 0). On true, *ret_suppressed
 * is the number of takes refused since the previous one that went through, and the count
 * starts again.
 */
bool ratelimit_take(struct ratelimit *rl, uint64_t now_ns, uint64_t *ret_suppressed);
