/* SPDX-License-Identifier: MIT */
#include "scheduler.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

struct scheduler {
	struct collector *c;
	pthread_mutex_t lock;
	pthread_cond_t done;
	bool scanning;            /* under lock */
	unsigned long generation; /* scans finished; under lock */
	struct snapshot *latest;  /* under lock */
};

int scheduler_new(struct collector *c, struct scheduler **ret)
{
	struct scheduler *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->c = c;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->done, NULL);
	*ret = s;
	return 0;
}

int scheduler_snapshot(struct scheduler *s, struct snapshot **ret, bool *ret_fresh)
{
	struct snapshot *snap = NULL;

	pthread_mutex_lock(&s->lock);
	if (s->scanning) {
		unsigned long gen = s->generation;

		while (s->generation == gen)
			pthread_cond_wait(&s->done, &s->lock);
		snap = snapshot_ref(s->latest);
		pthread_mutex_unlock(&s->lock);
		if (!snap)
			return -ENOMEM;
		*ret = snap;
		*ret_fresh = false;
		return 0;
	}
	s->scanning = true;
	pthread_mutex_unlock(&s->lock);

	if (collector_scan(s->c, &snap) < 0)
		snap = NULL;

	pthread_mutex_lock(&s->lock);
	snapshot_unref(s->latest);
	s->latest = snap;
	snapshot_ref(snap);
	s->scanning = false;
	s->generation++;
	pthread_cond_broadcast(&s->done);
	pthread_mutex_unlock(&s->lock);
	if (!snap)
		return -ENOMEM;
	*ret = snap;
	*ret_fresh = true;
	return 0;
}

void scheduler_free(struct scheduler *s)
{
	if (!s)
		return;
	snapshot_unref(s->latest);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->done);
	free(s);
}
