/* SPDX-License-Identifier: Apache-2.0 */
#define _GNU_SOURCE
#include "scanner/scheduler.h"

#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "base/log.h"
#include "base/util.h"
#include "files/quarantine.h"
#include "scan/skiplog.h"

struct scheduler {
	struct scan_engine *c;
	const struct render_meta *meta;
	pthread_mutex_t lock;
	pthread_cond_t timer; /* on CLOCK_MONOTONIC: the timer thread's */
	/* all under lock */
	uint64_t next_seq;       /* number of the next scan */
	uint64_t running;        /* number of the scan scrapes wait for, 0: none */
	uint64_t running_start_ns;
	uint64_t done_seq;       /* highest number of a scan that ended */
	unsigned scanners;       /* scanner threads alive: the running one and those left behind */
	bool timer_alive;
	pthread_t timer_thread;  /* joined by scheduler_free(): it never waits on a file system */
	struct body_waiter *waiters;
	unsigned stuck_alive;    /* scans left behind that have not ended yet */
	uint64_t stuck_total;
	uint64_t min_interval_ns; /* a body younger than this is served without a scan */
	size_t max_body_bytes;
	bool body_cut;           /* the last body was cut: logged when that changes */
	struct body *latest;
	bool closing;            /* scheduler_free() ran: the last thread out frees */
};

struct scan_job {
	struct scheduler *s;
	uint64_t seq;
};

uint64_t scheduler_now_ns(void)
{
	return monotonic_ns();
}

static void scheduler_destroy(struct scheduler *s)
{
	body_unref(s->latest);
	scan_engine_free(s->c);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->timer);
	free(s);
}

/* Under lock: takes the waiters that may go (their scan ended, or their deadline passed). */
static struct body_waiter *take_ready(struct scheduler *s, uint64_t now, bool all)
{
	struct body_waiter *ready = NULL, **p = &s->waiters;

	while (*p) {
		struct body_waiter *w = *p;

		if (all || w->target <= s->done_seq || w->deadline <= now) {
			*p = w->next;
			w->next = ready;
			ready = w;
		} else {
			p = &w->next;
		}
	}
	return ready;
}

static void wake_list(struct body_waiter *w)
{
	while (w) {
		struct body_waiter *next = w->next;

		w->wake(w->userdata); /* may free w */
		w = next;
	}
}

/* Under lock: whether the scheduler's last thread has ended after scheduler_free(). */
static bool last_out(const struct scheduler *s)
{
	return s->closing && s->scanners == 0 && !s->timer_alive;
}

struct private_scan {
	struct scan_engine *c;
	struct snapshot *snap;
	int r;
};

/*
 * The scan, in a thread of its own with a descriptor table of its own (a copy): a process's
 * threads share one, which makes every call on a descriptor take and drop a reference and
 * lseek take the file's position lock. That was 5% of a scan's CPU, paid on the 4 calls per
 * file. What the scan opens it closes; a descriptor it leaked would go with the thread.
 * Without unshare (a container's seccomp profile), the scan runs on the shared table.
 */
static void *scan_private(void *arg)
{
	struct private_scan *p = arg;

	(void)unshare(CLONE_FILES);
	p->r = scan_engine_run(p->c, &p->snap);
	return NULL;
}

/* scan_engine_run() in scan_private(), or here if no thread can be made. */
static int scan_unshared(struct scan_engine *c, struct snapshot **ret)
{
	struct private_scan p = { .c = c, .r = -EIO };
	pthread_t t;

	if (pthread_create(&t, NULL, scan_private, &p) != 0)
		return scan_engine_run(c, ret);
	pthread_join(t, NULL);
	if (p.r == 0)
		*ret = p.snap;
	return p.r;
}

void scheduler_log_cap_note(const struct snap_cap_note *n)
{
	if (n->node || n->owners_cut)
		log_warn("cgroups left out of the scan at a cap: the owners named lose the cgroups of "
			 "their delegated subtrees past their share\tmax_cgroups=%zu"
			 "\tmax_cgroups_per_owner=%zu\tnode_cap_bit=%s\towners_cut=%zu\towner_uids=%s",
			 n->max_cgroups, n->max_per_owner, n->node ? "true" : "false", n->owners_cut,
			 n->uids);
	if (n->process[SNAP_PROCESS_CAP_FDS] || n->process[SNAP_PROCESS_CAP_MAPS])
		log_warn("a process held more than a scan reads of one process: the rest of its files "
			 "are not counted (cachestat_files_skipped_total{reason=\"process_cap\"})"
			 "\tdescriptors_cap_bit=%s\tmappings_cap_bit=%s",
			 n->process[SNAP_PROCESS_CAP_FDS] ? "true" : "false",
			 n->process[SNAP_PROCESS_CAP_MAPS] ? "true" : "false");
}

void scheduler_log_glob_note(const struct snapshot *snap)
{
	log_warn("a configured glob stopped at its cap: its further matches are left out"
		 "\tmax_glob_entries=%zu\tpattern=%s", snap->glob_max_entries, snap->glob_note);
}

void scheduler_warn_no_access(const struct snapshot *snap)
{
	static atomic_bool warned;
	char names[3 * 260];

	if (snap->skipped[SKIP_NO_ACCESS] == 0 || atomic_exchange(&warned, true))
		return;
	skiplog_no_access_names(names, sizeof(names));
	log_warn("files skipped: without the privileges to read them, their cached bytes count as 0;"
		 " run as root (the daemon keeps only CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH and drops"
		 " to --security.user) or as the systemd unit does\tcount=%" PRIu64 "\tfirst=%s",
		 snap->skipped[SKIP_NO_ACCESS], names[0] ? names : "-");
}

void scheduler_log_mounts_capped(const struct snapshot *s)
{
	static const char *const caps[SNAP_MOUNT_CAPS] = { "mounts", "bytes", "layers" };

	for (int i = 0; i < SNAP_MOUNT_CAPS; i++)
		if (s->mounts_cap_new & (1u << i))
			log_warn("a mount namespace's table or an overlay over a cap: the files on its "
				 "mounts are skipped as mount_capped, the rest of the node is scanned"
				 "\tcap=%s\tlimit=%zu", caps[i], s->mounts_cap_limits[i]);
}

/* The quarantines of stuck mounts (files/quarantine.h) begun and ended since the last scan. */
void scheduler_log_quarantines(void)
{
	struct quarantine_event ev[QUARANTINE_EVENTS];
	uint64_t lost;
	size_t n = quarantine_events_take(ev, QUARANTINE_EVENTS, &lost);

	for (size_t i = 0; i < n; i++) {
		if (ev[i].answered)
			log_info("mount answers again; its files are measured again"
				 "\tmount_id=%" PRIu64 "\tstuck_seconds=%.1f",
				 ev[i].mnt_id, (double)ev[i].stuck_ns / 1e9);
		else
			log_warn("mount has not answered a call; its files are skipped until it does"
				 "\tmount_id=%" PRIu64 "\tstuck_seconds=%.1f\treason=mount_stuck",
				 ev[i].mnt_id, (double)ev[i].stuck_ns / 1e9);
	}
	if (lost)
		log_warn("more mounts began or ended a quarantine than are logged\tnot_logged=%" PRIu64,
			 lost);
}

void scheduler_log_scan_notes(const struct snapshot *snap)
{
	/* each says a change of which caps bite, or a first time: once, not every scan */
	if (snap->cap_note)
		scheduler_log_cap_note(snap->cap_note);
	if (snap->glob_note)
		scheduler_log_glob_note(snap);
	scheduler_warn_no_access(snap);
	scheduler_log_mounts_capped(snap);
	scheduler_log_quarantines();
}

/* Bodies cut at max_bytes since start: every body is rendered here. */
static _Atomic uint64_t bodies_cut;

/*
 * The snapshot rendered once in max_bytes at most (render_text_limited(); the bodies cut are
 * counted here, for all), text and gzip, its problem taken. NULL when out of memory.
 */
static struct body *sched_body_render(struct snapshot *snap, const struct render_meta *meta,
				      size_t max_bytes, uint64_t seq)
{
	_cleanup_fclose_ FILE *f = NULL;
	bool cut = false;
	struct body *b = calloc(1, sizeof(*b));
	int r;

	if (!b)
		return NULL;
	atomic_init(&b->refs, 1);
	b->seq = seq;
	f = open_memstream(&b->text, &b->len);
	if (!f) {
		body_unref(b);
		return NULL;
	}
	r = render_text_limited(f, snap, meta, max_bytes, atomic_load(&bodies_cut), &cut);
	if (r == 0 && cut)
		atomic_fetch_add(&bodies_cut, 1);
	b->cut = cut;
	if (fclose(TAKE_PTR(f)) != 0 || r < 0) {
		body_unref(b);
		return NULL;
	}
	if (body_gzip_start(b->text, b->len, &b->gz, &b->gz_len) < 0)
		b->gz = NULL; /* served uncompressed */
	b->crc = (uint32_t)crc32(0, (const Bytef *)b->text, (uInt)b->len);
	b->problem = TAKE_PTR(snap->problem);
	b->done_ns = monotonic_ns();
	return b;
}

static void *scanner(void *arg)
{
	struct scan_job *j = arg;
	struct scheduler *s = j->s;
	struct body *b = NULL, *old = NULL;
	struct body_waiter *ready;
	struct snapshot *snap = NULL;
	size_t max_body;
	bool last;

	if (scan_unshared(s->c, &snap) == 0) {
		scheduler_log_scan_notes(snap);
		pthread_mutex_lock(&s->lock);
		max_body = s->max_body_bytes;
		pthread_mutex_unlock(&s->lock);
		b = sched_body_render(snap, s->meta, max_body, j->seq);
		snapshot_unref(snap);
	}
	pthread_mutex_lock(&s->lock);
	if (b && b->cut != s->body_cut) {
		s->body_cut = b->cut;
		if (b->cut)
			log_warn("body cut at --web.max-body-bytes; the series past it are left out"
				 "\tmax_body_bytes=%zu", max_body);
		else
			log_info("bodies no longer cut at --web.max-body-bytes");
	}
	if (b && (!s->latest || s->latest->seq < j->seq)) {
		old = s->latest;
		s->latest = TAKE_PTR(b);
	}
	if (j->seq > s->done_seq)
		s->done_seq = j->seq;
	if (s->running == j->seq)
		s->running = 0;
	else
		s->stuck_alive--; /* it was left behind */
	ready = take_ready(s, scheduler_now_ns(), false);
	pthread_cond_signal(&s->timer);
	pthread_mutex_unlock(&s->lock);
	body_unref(old);
	body_unref(b); /* one older than the latest: a stuck scan that came back late */
	free(j);
	wake_list(ready);
	/*
	 * Counted out only now: the woken take their bodies from s, which scheduler_free() in
	 * another thread would otherwise destroy under them, taking this thread for gone.
	 */
	pthread_mutex_lock(&s->lock);
	s->scanners--;
	last = last_out(s);
	pthread_mutex_unlock(&s->lock);
	if (last)
		scheduler_destroy(s);
	return NULL;
}

/* Under lock: leaves the running scan behind when it is stuck, up to SCHEDULER_MAX_LEFT_BEHIND. */
static void check_stuck(struct scheduler *s, uint64_t now)
{
	double limit;

	if (!s->running || s->stuck_alive >= SCHEDULER_MAX_LEFT_BEHIND)
		return;
	limit = scan_engine_max_scan_seconds(s->c) + SCHEDULER_STUCK_MARGIN_SECONDS;
	if ((double)(now - s->running_start_ns) / 1e9 <= limit)
		return;
	s->running = 0;
	s->stuck_alive++;
	s->stuck_total++;
}

/* Under lock: a scan in a new detached thread, when none runs. Returns 0 or -errno. */
static int start_scan(struct scheduler *s, uint64_t now)
{
	struct scan_job *j;
	pthread_attr_t attr;
	pthread_t t;
	int r;

	if (s->running || s->scanners > SCHEDULER_MAX_LEFT_BEHIND)
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

int scheduler_new(struct scan_engine *c, const struct render_meta *meta, struct scheduler **ret)
{
	struct scheduler *s = calloc(1, sizeof(*s));
	pthread_condattr_t ca;

	if (!s)
		return -ENOMEM;
	s->c = c;
	s->meta = meta;
	s->next_seq = 1;
	s->max_body_bytes = RENDER_DEFAULT_MAX_BYTES;
	pthread_mutex_init(&s->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->timer, &ca);
	pthread_condattr_destroy(&ca);
	*ret = s;
	return 0;
}

/* Wakes the waiters whose deadline passes; ends when scheduler_free() asks. */
static void *timer(void *arg)
{
	struct scheduler *s = arg;

	pthread_mutex_lock(&s->lock);
	while (!s->closing) {
		uint64_t next = UINT64_MAX, now = scheduler_now_ns();
		struct body_waiter *ready = take_ready(s, now, false);

		if (ready) {
			pthread_mutex_unlock(&s->lock);
			wake_list(ready);
			pthread_mutex_lock(&s->lock);
			continue;
		}
		for (struct body_waiter *w = s->waiters; w; w = w->next)
			if (w->deadline < next)
				next = w->deadline;
		if (next == UINT64_MAX) {
			pthread_cond_wait(&s->timer, &s->lock);
		} else {
			struct timespec ts = { .tv_sec = (time_t)(next / 1000000000ULL),
					       .tv_nsec = (long)(next % 1000000000ULL) };

			pthread_cond_timedwait(&s->timer, &s->lock, &ts);
		}
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/* Under lock: the timer thread, when there is none. Returns 0 or -errno. */
static int start_timer(struct scheduler *s)
{
	int r;

	if (s->timer_alive)
		return 0;
	r = pthread_create(&s->timer_thread, NULL, timer, s);
	if (r != 0)
		return -r;
	s->timer_alive = true;
	return 0;
}

int scheduler_enqueue(struct scheduler *s, uint64_t budget_ns, bool scan, struct body_waiter *w)
{
	uint64_t now = scheduler_now_ns();
	int r = 0;

	w->target = 0;
	pthread_mutex_lock(&s->lock);
	check_stuck(s, now);
	/*
	 * A snapshot younger than the interval is served at once, to every scraper alike; an
	 * older one makes the scrape wait for the scan it starts (or joins), up to its budget, so
	 * that a single Prometheus gets fresh data and a pair still shares one scan.
	 */
	if (scan && s->latest && s->min_interval_ns && now - s->latest->done_ns < s->min_interval_ns)
		scan = false;
	if (scan) {
		/* without a thread for the scan or the timer, serve what there is at once */
		if (start_scan(s, now) == 0 && start_timer(s) == 0) {
			w->target = s->running ? s->running : s->next_seq; /* none: a stuck one's */
			w->deadline = now + budget_ns;
		}
	}
	if (w->target > s->done_seq) {
		w->next = s->waiters;
		s->waiters = w;
		pthread_cond_signal(&s->timer);
	} else {
		r = 1;
	}
	pthread_mutex_unlock(&s->lock);
	return r;
}

int scheduler_take(struct scheduler *s, const struct body_waiter *w, struct body **ret,
		   bool *ret_stale)
{
	struct body *b;

	pthread_mutex_lock(&s->lock);
	b = body_ref(s->latest);
	pthread_mutex_unlock(&s->lock);
	if (!b)
		return -ENODATA;
	*ret_stale = b->seq < w->target;
	*ret = b;
	return 0;
}

/* A waiter of scheduler_get(): its thread sleeps on a condition variable. */
struct sync_wait {
	struct body_waiter w;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool woken;
};

static void sync_wake(void *userdata)
{
	struct sync_wait *sw = userdata;

	pthread_mutex_lock(&sw->lock);
	sw->woken = true;
	pthread_cond_signal(&sw->cond);
	pthread_mutex_unlock(&sw->lock);
}

int scheduler_get(struct scheduler *s, uint64_t budget_ns, bool scan, struct body **ret,
		  bool *ret_stale)
{
	struct sync_wait sw = { .w = { .wake = sync_wake } };
	int r;

	sw.w.userdata = &sw;
	pthread_mutex_init(&sw.lock, NULL);
	pthread_cond_init(&sw.cond, NULL);
	r = scheduler_enqueue(s, budget_ns, scan, &sw.w);
	pthread_mutex_lock(&sw.lock);
	while (r == 0 && !sw.woken)
		pthread_cond_wait(&sw.cond, &sw.lock);
	pthread_mutex_unlock(&sw.lock);
	pthread_mutex_destroy(&sw.lock);
	pthread_cond_destroy(&sw.cond);
	if (r < 0)
		return r;
	return scheduler_take(s, &sw.w, ret, ret_stale);
}

void scheduler_wake_all(struct scheduler *s)
{
	struct body_waiter *ready;

	pthread_mutex_lock(&s->lock);
	ready = take_ready(s, 0, true);
	pthread_mutex_unlock(&s->lock);
	wake_list(ready);
}

void scheduler_set_min_interval(struct scheduler *s, double seconds)
{
	pthread_mutex_lock(&s->lock);
	s->min_interval_ns = (uint64_t)(seconds * 1e9);
	pthread_mutex_unlock(&s->lock);
}

void scheduler_set_max_body_bytes(struct scheduler *s, size_t bytes)
{
	pthread_mutex_lock(&s->lock);
	s->max_body_bytes = bytes;
	pthread_mutex_unlock(&s->lock);
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
	bool now, timer_alive;

	if (!s)
		return;
	scheduler_wake_all(s);
	pthread_mutex_lock(&s->lock);
	s->closing = true;
	timer_alive = s->timer_alive;
	pthread_cond_signal(&s->timer);
	pthread_mutex_unlock(&s->lock);
	if (timer_alive)
		pthread_join(s->timer_thread, NULL);
	pthread_mutex_lock(&s->lock);
	s->timer_alive = false;
	now = last_out(s);
	pthread_mutex_unlock(&s->lock);
	if (now)
		scheduler_destroy(s);
}
