/* SPDX-License-Identifier: Apache-2.0 */
#include "scan/skiplog.h"

#include <pthread.h>

#include "base/util.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static skiplog_sink_fn sink; /* under lock */
static struct ratelimit buckets[_SKIP_MAX]; /* under lock */

void skiplog_set_sink(skiplog_sink_fn fn)
{
	pthread_mutex_lock(&lock);
	sink = fn;
	for (size_t i = 0; i < _SKIP_MAX; i++)
		buckets[i] = (struct ratelimit){ .rate = SKIPLOG_RATE, .burst = SKIPLOG_BURST };
	pthread_mutex_unlock(&lock);
}

bool skiplog_enabled(void)
{
	bool on;

	pthread_mutex_lock(&lock);
	on = sink != NULL;
	pthread_mutex_unlock(&lock);
	return on;
}

void skiplog_note(const struct skiplog_event *ev)
{
	uint64_t now = monotonic_ns() + 1, suppressed;

	pthread_mutex_lock(&lock);
	/* under the lock: lines of concurrent scans stay whole and in order of the bucket */
	if (sink && ev->reason < _SKIP_MAX && ratelimit_take(&buckets[ev->reason], now, &suppressed))
		sink(ev, suppressed);
	pthread_mutex_unlock(&lock);
}

void skiplog_flush(void)
{
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < _SKIP_MAX; i++) {
		if (sink && buckets[i].suppressed > 0)
			sink(&(const struct skiplog_event){ .reason = (enum skip_reason)i, .summary = true },
			     buckets[i].suppressed);
		buckets[i].suppressed = 0;
	}
	pthread_mutex_unlock(&lock);
}
