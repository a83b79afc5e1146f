/* SPDX-License-Identifier: Apache-2.0 */
#include "scan/skiplog.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "base/util.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static skiplog_sink_fn sink; /* under lock */
static struct ratelimit buckets[_SKIP_MAX]; /* under lock */
/* the first files skipped for want of privileges, for the warning that says what to run */
static char no_access[SKIPLOG_NO_ACCESS_NAMES][256]; /* under lock */
static size_t n_no_access;                          /* under lock */

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

/* Under lock: ev's file, or for a process whose files cannot be listed its /proc directory
 * and name, unless the last one kept is the same. */
static void no_access_add(const struct skiplog_event *ev)
{
	char *slot = no_access[n_no_access];

	if (ev->file)
		snprintf(slot, sizeof(no_access[0]), "%s", ev->file);
	else if (ev->pid > 0)
		snprintf(slot, sizeof(no_access[0]), "/proc/%d (%s)", (int)ev->pid,
			 ev->comm ? ev->comm : "?");
	else
		return;
	if (n_no_access == 0 || strcmp(slot, no_access[n_no_access - 1]) != 0)
		n_no_access++;
}

void skiplog_note(const struct skiplog_event *ev)
{
	uint64_t now = monotonic_ns() + 1, suppressed;

	pthread_mutex_lock(&lock);
	if (ev->reason == SKIP_NO_ACCESS && !ev->summary && n_no_access < SKIPLOG_NO_ACCESS_NAMES)
		no_access_add(ev);
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

void skiplog_no_access_names(char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < n_no_access && used < len; i++) {
		int w = snprintf(buf + used, len - used, "%s%s", i ? "," : "", no_access[i]);

		if (w < 0)
			break;
		used += (size_t)w;
	}
	pthread_mutex_unlock(&lock);
}
