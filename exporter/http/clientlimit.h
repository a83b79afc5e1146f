/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clientlimit: who a client is to the limits (an IPv4 address, or the /64 of an IPv6 one) and
 * a bounded table of the bcrypt budget of each. One client spending its budget on wrong
 * passwords is refused alone; a client that once logged in ("proven") keeps its slot, as no
 * failing client may evict it. Plain data; the caller holds its own lock.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "base/ratelimit.h"

#define CLIENTLIMIT_KEY_LEN 16

/*
 * The client's key: an IPv4 address (also when IPv4-mapped in IPv6), or the /64 of an IPv6
 * one (one host's allocation: a client picking addresses in it is still one client). All
 * zero for no address or another family.
 */
void clientlimit_key(const struct sockaddr *sa, uint8_t ret_key[CLIENTLIMIT_KEY_LEN]);

struct clientlimit_slot {
	uint8_t key[CLIENTLIMIT_KEY_LEN];
	struct ratelimit bucket; /* its last_ns: when the client last asked (LRU) */
	bool used;
	bool proven; /* a login from it succeeded */
};

struct clientlimit {
	struct clientlimit_slot *slots; /* the caller's, n of them */
	size_t n;
	double rate, burst; /* of each client's bucket */
};

/* Empties t over slots (n > 0), each client allowed rate a second after a burst of burst. */
void clientlimit_init(struct clientlimit *t, struct clientlimit_slot *slots, size_t n, double rate,
		      double burst);

/*
 * Takes a token of key's budget at now_ns (monotonic_ns(), never 0); false when it has none
 * left. A client not in the table gets a slot with a full bucket: a free one, else the one
 * unproven client that asked longest ago (its bucket has refilled by then, or it is the
 * flood's), else the proven one that asked longest ago (only when every slot is proven,
 * which takes as many clients knowing a password). *ret_proven: whether key logged in before.
 */
bool clientlimit_take(struct clientlimit *t, const uint8_t key[CLIENTLIMIT_KEY_LEN],
		      uint64_t now_ns, bool *ret_proven);

/* Marks key as having logged in (giving it a slot if it lost its own). */
void clientlimit_prove(struct clientlimit *t, const uint8_t key[CLIENTLIMIT_KEY_LEN]);
