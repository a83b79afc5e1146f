/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scheduler: when scans run, who shares them, and what a scrape gets when a scan does not
 * end in time. Scans run in scanner threads of their own; each finished snapshot is rendered
 * once (text, and gzip of it) into a shared, reference-counted body that every scrape of it
 * serves. A scrape waits for a fresh body at most its budget, then gets the last complete one
 * and is told how old it is. A scan that runs far past limits.max_scan_seconds (a hung file
 * system: the scan checks its clock only between files) is left behind, not joined, and
 * counted; at most one is left behind at a time, so at most two scanner threads exist. A
 * timer thread wakes the scrapes whose budget ran out. It logs what a scan left out (the caps
 * that bit, the files it could not read), once per scan, for the daemon it runs in.
 */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "scan/engine.h"
#include "scan/render.h"
#include "wire/body.h"

/* A scan this long past max_scan_seconds is stuck. */
#define SCHEDULER_STUCK_MARGIN_SECONDS 2.0

/*
 * Scans left behind at once, each stuck on a mount of its own: the scans after them skip those
 * mounts (quarantine.h). Past this many, the running scan is waited for (a thread and its
 * descriptors each, the cost of a host whose file systems all hang).
 */
#define SCHEDULER_MAX_LEFT_BEHIND 4

struct scheduler;

/*
 * Takes ownership of c (freed with the scheduler, or by its last scanner thread when one is
 * stuck at that time). meta must outlive the scheduler. Returns 0 or -ENOMEM (c not taken).
 * No thread starts here: scanner threads are started by the scrapes that need them, so that
 * they run with the privileges of the serving threads.
 */
int scheduler_new(struct scan_engine *c, const struct render_meta *meta, struct scheduler **ret);

/*
 * Asks for the body of the scan in progress or of one this call starts (scan false: the
 * latest as it is, no scan started). Returns 1 when scheduler_take() may be called at once,
 * 0 when w waits (scheduler_take() once w->wake has been called), or -ENOMEM.
 */
int scheduler_enqueue(struct scheduler *s, uint64_t budget_ns, bool scan, struct body_waiter *w);

/*
 * The body for w: the one it waited for, or the last complete one (*ret_stale set: the budget
 * ran out first). Returns 0, or -ENODATA when no scan has ended yet.
 */
int scheduler_take(struct scheduler *s, const struct body_waiter *w, struct body **ret,
		   bool *ret_stale);

/* scheduler_enqueue() and scheduler_take() in one call that blocks the calling thread. */
int scheduler_get(struct scheduler *s, uint64_t budget_ns, bool scan, struct body **ret,
		  bool *ret_stale);

/* Wakes every waiter now (before the server stops: none may stay suspended). */
void scheduler_wake_all(struct scheduler *s);

/*
 * With seconds > 0, a scrape gets the latest body at once, once there is one, and starts a
 * scan in the background when that body is older than seconds: bodies are at most seconds
 * plus a scan old. 0, the default: every scrape waits for a scan.
 */
void scheduler_set_min_interval(struct scheduler *s, double seconds);

/* Logs which cgroup caps bit (snapshot.cap_note, set only when that changed): once, not per scan. */
void scheduler_log_cap_note(const struct snap_cap_note *n);

/* Logs that the glob cap started to cut a pattern (snapshot.glob_note, set only then). */
void scheduler_log_glob_note(const struct snapshot *snap);
/* Once per process: the files a scan skipped for want of privileges, and what to run instead. */
void scheduler_warn_no_access(const struct snapshot *snap);
/* Logs each mount cap (fstypes.h) that began to bite with this scan, once. */
void scheduler_log_mounts_capped(const struct snapshot *s);
/* The quarantines of stuck mounts begun and ended since the last call (files/quarantine.h). */
void scheduler_log_quarantines(void);
/* All of the above that a scan's snapshot asks for: what the daemon and --once log after a scan. */
void scheduler_log_scan_notes(const struct snapshot *snap);

/* A body's bytes at most (RENDER_DEFAULT_MAX_BYTES until set). */
void scheduler_set_max_body_bytes(struct scheduler *s, size_t bytes);

/* Scans left behind since start (cachestat_scans_stuck_total). */
uint64_t scheduler_stuck_total(struct scheduler *s);

void scheduler_free(struct scheduler *s);

static inline void scheduler_freep(struct scheduler **s)
{
	scheduler_free(*s);
}

uint64_t scheduler_now_ns(void);
