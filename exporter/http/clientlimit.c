/* SPDX-License-Identifier: Apache-2.0 */
/* clientlimit: per-client keys and the bounded table of their bcrypt budgets. */
#include "http/clientlimit.h"

#include <netinet/in.h>
#include <string.h>

void clientlimit_key(const struct sockaddr *sa, uint8_t ret_key[CLIENTLIMIT_KEY_LEN])
{
	memset(ret_key, 0, CLIENTLIMIT_KEY_LEN);
	if (sa && sa->sa_family == AF_INET) {
		memcpy(ret_key + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	} else if (sa && sa->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;

		if (IN6_IS_ADDR_V4MAPPED(a))
			memcpy(ret_key + 12, &a->s6_addr[12], 4);
		else
			memcpy(ret_key, a->s6_addr, 8);
	}
}

void clientlimit_init(struct clientlimit *t, struct clientlimit_slot *slots, size_t n, double rate,
		      double burst)
{
	memset(slots, 0, n * sizeof(*slots));
	*t = (struct clientlimit){ .slots = slots, .n = n, .rate = rate, .burst = burst };
}

/* a asked before b (a never-used bucket first). */
static bool asked_before(const struct clientlimit_slot *a, const struct clientlimit_slot *b)
{
	return a->bucket.last_ns < b->bucket.last_ns;
}

/*
 * key's slot, or one claimed for it: a free slot, else the unproven client that asked longest
 * ago, else the proven one. A failing client never evicts a proven one while another is left.
 */
static struct clientlimit_slot *slot_of(struct clientlimit *t, const uint8_t *key)
{
	struct clientlimit_slot *free_slot = NULL, *old_unproven = NULL, *old_proven = NULL, *e;

	for (size_t i = 0; i < t->n; i++) {
		e = &t->slots[i];
		if (!e->used) {
			free_slot = free_slot ? free_slot : e;
			continue;
		}
		if (memcmp(e->key, key, CLIENTLIMIT_KEY_LEN) == 0)
			return e;
		if (!e->proven && (!old_unproven || asked_before(e, old_unproven)))
			old_unproven = e;
		if (e->proven && (!old_proven || asked_before(e, old_proven)))
			old_proven = e;
	}
	e = free_slot ? free_slot : old_unproven ? old_unproven : old_proven;
	*e = (struct clientlimit_slot){
		.bucket = { .rate = t->rate, .burst = t->burst },
		.used = true,
	};
	memcpy(e->key, key, CLIENTLIMIT_KEY_LEN);
	return e;
}

bool clientlimit_take(struct clientlimit *t, const uint8_t key[CLIENTLIMIT_KEY_LEN],
		      uint64_t now_ns, bool *ret_proven)
{
	struct clientlimit_slot *e = slot_of(t, key);
	uint64_t suppressed;

	*ret_proven = e->proven;
	return ratelimit_take(&e->bucket, now_ns, &suppressed);
}

void clientlimit_prove(struct clientlimit *t, const uint8_t key[CLIENTLIMIT_KEY_LEN])
{
	slot_of(t, key)->proven = true;
}
