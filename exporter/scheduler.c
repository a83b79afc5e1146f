/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "scheduler.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "util.h"

struct scheduler {
	struct collector *c;
	const struct render_meta *meta;
	pthread_mutex_t lock;
	pthread_cond_t done; /* on CLOCK_MONOTONIC */
	/* all under lock */
	uint64_t next_seq;       /* number of the next scan */
	uint64_t running;        /* number of the scan scrapes wait for, 0: none */
	uint64_t running_start_ns;
	uint64_t done_seq;       /* highest number of a scan that ended */
	unsigned scanners;       /* scanner threads alive: the running one and a stuck one */
	bool stuck_alive;        /* a scan left behind has not ended yet */
	uint64_t stuck_total;
	struct sched_body *latest;
	bool closing;            /* scheduler_free() ran: the last scanner frees */
};

struct scan_job {
	struct scheduler *s;
	uint64_t seq;
};

static void body_free(struct sched_body *b)
{
	free(b->text);
	free(b->gz);
	free(b->problem);
	free(b);
}

struct sched_body *sched_body_ref(struct sched_body *b)
{
	if (b)
		atomic_fetch_add(&b->refs, 1);
	return b;
}

void sched_body_unref(struct sched_body *b)
{
	if (b && atomic_fetch_sub(&b->refs, 1) == 1)
		body_free(b);
}

uint64_t scheduler_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

int sched_gzip(const char *text, size_t len, unsigned char **ret, size_t *ret_len)
{
	z_stream z = { 0 };
	_cleanup_free_ unsigned char *out = NULL;
	size_t cap;
	int r;

	if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	cap = deflateBound(&z, len);
	out = malloc(cap);
	if (!out) {
		deflateEnd(&z);
		return -ENOMEM;
	}
	z.next_in = (unsigned char *)(uintptr_t)text;
	z.avail_in = (uInt)len;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	r = deflate(&z, Z_FINISH);
	deflateEnd(&z);
	if (r != Z_STREAM_END)
		return -EIO;
	*ret_len = cap - z.avail_out;
	*ret = TAKE_PTR(out);
	return 0;
}

/* The snapshot rendered once, text and gzip. NULL when out of memory. */
static struct sched_body *body_render(struct snapshot *snap, const struct render_meta *meta,
				      uint64_t seq)
{
	_cleanup_fclose_ FILE *f = NULL;
	struct sched_body *b = calloc(1, sizeof(*b));
	int r;

	if (!b)
		return NULL;
	atomic_init(&b->refs, 1);
	b->seq = seq;
	f = open_memstream(&b->text, &b->len);
	if (!f) {
		body_free(b);
		return NULL;
	}
	r = render_text(f, snap, meta);
	if (fclose(TAKE_PTR(f)) != 0 || r < 0) {
		body_free(b);
		return NULL;
	}
	if (sched_gzip(b->text, b->len, &b->gz, &b->gz_len) < 0)
		b->gz = NULL; /* served uncompressed */
	b->problem = TAKE_PTR(snap->problem);
	b->done_ns = scheduler_now_ns();
	return b;
}

static void scheduler_destroy(struct scheduler *s)
{
	sched_body_unref(s->latest);
	collector_free(s->c);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->done);
	free(s);
}

static void *scanner(void *arg)
{
	struct scan_job *j = arg;
	struct scheduler *s = j->s;
	struct sched_body *b = NULL, *old = NULL;
	struct snapshot *snap = NULL;
	bool last;

	if (collector_scan(s->c, &snap) == 0) {
		b = body_render(snap, s->meta, j->seq);
		snapshot_unref(snap);
	}
	pthread_mutex_lock(&s->lock);
	if (b && (!s->latest || s->latest->seq < j->seq)) {
		old = s->latest;
		s->latest = TAKE_PTR(b);
	}
	if (j->seq > s->done_seq)
		s->done_seq = j->seq;
	if (s->running == j->seq)
		s->running = 0;
	else
		s->stuck_alive = false; /* it was left behind */
	s->scanners--;
	last = s->closing && s->scanners == 0;
	pthread_cond_broadcast(&s->done);
	pthread_mutex_unlock(&s->lock);
	sched_body_unref(old);
	sched_body_unref(b); /* one older than the latest: a stuck scan that came back late */
	free(j);
	if (last)
		scheduler_destroy(s);
	return NULL;
}

/* Under lock: leaves the running scan behind when it is stuck and none is left behind yet. */
static void check_stuck(struct scheduler *s, uint64_t now)
{
	double limit;

	if (!s->running || s->stuck_alive)
		return;
	limit = collector_max_scan_seconds(s->c) + SCHEDULER_STUCK_MARGIN_SECONDS;
	if ((double)(now - s->running_start_ns) / 1e9 <= limit)
		return;
	s->running = 0;
	s->stuck_alive = true;
	s->stuck_total++;
}

/* Under lock: a scan in a new detached thread, when none runs. Returns 0 or -errno. */
static int start_scan(struct scheduler *s, uint64_t now)
{
	struct scan_job *j;
	pthread_attr_t attr;
	pthread_t t;
	int r;

	if (s->running || s->scanners >= 2)
		return 0;
	j = malloc(sizeof(*j));
	if (!j)
		return -ENOMEM;
	*j = (struct scan_job){ .s = s, .seq = s->next_seq };
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	r = pthread_create(&t, &attr, scanner, j);
	pthread_attr_destroy(&attr);
	if (r != 0) {
		free(j);
		return -r;
	}
	s->running = s->next_seq++;
	s->running_start_ns = now;
	s->scanners++;
	return 0;
}

int scheduler_new(struct collector *c, const struct render_meta *meta, struct scheduler **ret)
{
	struct scheduler *s = calloc(1, sizeof(*s));
	pthread_condattr_t ca;

	if (!s)
		return -ENOMEM;
	s->c = c;
	s->meta = meta;
	s->next_seq = 1;
	pthread_mutex_init(&s->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->done, &ca);
	pthread_condattr_destroy(&ca);
	*ret = s;
	return 0;
}

/* Under lock: waits until scan target ended or deadline passed; false on the deadline. */
static bool wait_for(struct scheduler *s, uint64_t target, uint64_t deadline)
{
	struct timespec ts = { .tv_sec = (time_t)(deadline / 1000000000ULL),
			       .tv_nsec = (long)(deadline % 1000000000ULL) };

	while (s->done_seq < target)
		if (pthread_cond_timedwait(&s->done, &s->lock, &ts) == ETIMEDOUT)
			return s->done_seq >= target;
	return true;
}

int scheduler_get(struct scheduler *s, uint64_t budget_ns, bool scan, struct sched_body **ret,
		  bool *ret_stale)
{
	uint64_t now = scheduler_now_ns(), target;
	struct sched_body *b;
	bool in_time = true;
	int r = 0;

	pthread_mutex_lock(&s->lock);
	check_stuck(s, now);
	if (scan) {
		r = start_scan(s, now);
		target = s->running ? s->running : s->next_seq; /* none: only a stuck one ends */
		if (r == 0)
			in_time = wait_for(s, target, now + budget_ns);
		if (!in_time)
			check_stuck(s, scheduler_now_ns());
	} else {
		target = 0;
	}
	b = sched_body_ref(s->latest);
	pthread_mutex_unlock(&s->lock);
	if (!b)
		return r < 0 ? r : scan && in_time ? -ENOMEM : -ENODATA;
	*ret_stale = b->seq < target;
	*ret = b;
	return 0;
}

uint64_t scheduler_stuck_total(struct scheduler *s)
{
	uint64_t n;

	pthread_mutex_lock(&s->lock);
	n = s->stuck_total;
	pthread_mutex_unlock(&s->lock);
	return n;
}

void scheduler_free(struct scheduler *s)
{
	bool now;

	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	s->closing = true;
	now = s->scanners == 0;
	pthread_mutex_unlock(&s->lock);
	if (now)
		scheduler_destroy(s);
}
