/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scheduler: when scans run, who shares them, and what a scrape gets when a scan does not
 * end in time. Scans run in scanner threads of their own; each finished snapshot is rendered
 * once (text, and gzip of it) into a shared, reference-counted body that every scrape of it
 * serves. A scrape waits for a fresh body at most its budget, then gets the last complete one
 * and is told how old it is. A scan that runs far past limits.max_scan_seconds (a hung file
 * system: the scan checks its clock only between files) is left behind, not joined, and
 * counted; at most one is left behind at a time, so at most two scanner threads exist. A
 * timer thread wakes the scrapes whose budget ran out. Never logs.
 */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "scan/engine.h"
#include "scan/render.h"

/* A scan this long past max_scan_seconds is stuck. */
#define SCHEDULER_STUCK_MARGIN_SECONDS 2.0

/* One snapshot, rendered. Immutable once published; drop with sched_body_unref(). */
struct sched_body {
	atomic_int refs;
	uint64_t seq;      /* the scan's number, from 1 */
	uint64_t done_ns;  /* CLOCK_MONOTONIC when the scan ended */
	char *text;        /* text format 0.0.4 */
	size_t len;
	unsigned char *gz; /* the start of one gzip member (sched_gzip_start()); NULL when
			    * compression failed */
	size_t gz_len;
	uint32_t crc;      /* CRC-32 of text, for the member's trailer */
	char *problem;     /* the scan's first problem, or NULL */
	atomic_bool problem_taken;
	/* frees text, gz and the body itself when not malloc'd (a body mapped from another
	 * process: privsep/channel.h); NULL: free() */
	void (*release)(struct sched_body *b);
};

struct sched_body *sched_body_ref(struct sched_body *b);
void sched_body_unref(struct sched_body *b);

/*
 * The start of one gzip member (RFC 1952) holding text: the header and text deflated up to a
 * sync flush (byte-aligned, no final block). A scrape ends the same member with its own text
 * (sched_gzip_end()): one member, not two, because curl --compressed decodes the first member
 * of a stream only. Returns 0, -ENOMEM or -EIO.
 */
int sched_gzip_start(const char *text, size_t len, unsigned char **ret, size_t *ret_len);

/*
 * The end of a member begun by sched_gzip_start() over head_len bytes whose CRC-32 is head_crc:
 * text deflated with the final block, then the CRC-32 and length of the whole. Returns 0,
 * -ENOMEM or -EIO.
 */
int sched_gzip_end(uint32_t head_crc, size_t head_len, const char *text, size_t len,
		   unsigned char **ret, size_t *ret_len);

struct scheduler;

/*
 * Takes ownership of c (freed with the scheduler, or by its last scanner thread when one is
 * stuck at that time). meta must outlive the scheduler. Returns 0 or -ENOMEM (c not taken).
 * No thread starts here: scanner threads are started by the scrapes that need them, so that
 * they run with the privileges of the serving threads.
 */
int scheduler_new(struct scan_engine *c, const struct render_meta *meta, struct scheduler **ret);

/*
 * A scrape that waits without holding a thread. The caller sets wake and userdata; wake is
 * called once, from another thread and without the scheduler's lock, when the scan waited
 * for ends or the budget runs out.
 */
struct sched_waiter {
	void (*wake)(void *userdata);
	void *userdata;
	/* the scheduler's */
	uint64_t target, deadline;
	struct sched_waiter *next;
	void *source_data; /* a source other than the scheduler (privsep/channel.h): its answer */
};

/*
 * Asks for the body of the scan in progress or of one this call starts (scan false: the
 * latest as it is, no scan started). Returns 1 when scheduler_take() may be called at once,
 * 0 when w waits (scheduler_take() once w->wake has been called), or -ENOMEM.
 */
int scheduler_enqueue(struct scheduler *s, uint64_t budget_ns, bool scan, struct sched_waiter *w);

/*
 * The body for w: the one it waited for, or the last complete one (*ret_stale set: the budget
 * ran out first). Returns 0, or -ENODATA when no scan has ended yet.
 */
int scheduler_take(struct scheduler *s, const struct sched_waiter *w, struct sched_body **ret,
		   bool *ret_stale);

/* scheduler_enqueue() and scheduler_take() in one call that blocks the calling thread. */
int scheduler_get(struct scheduler *s, uint64_t budget_ns, bool scan, struct sched_body **ret,
		  bool *ret_stale);

/* Wakes every waiter now (before the server stops: none may stay suspended). */
void scheduler_wake_all(struct scheduler *s);

/*
 * With seconds > 0, a scrape gets the latest body at once, once there is one, and starts a
 * scan in the background when that body is older than seconds: bodies are at most seconds
 * plus a scan old. 0, the default: every scrape waits for a scan.
 */
void scheduler_set_min_interval(struct scheduler *s, double seconds);

/* Scans left behind since start (cachestat_scans_stuck_total). */
uint64_t scheduler_stuck_total(struct scheduler *s);

void scheduler_free(struct scheduler *s);

static inline void scheduler_freep(struct scheduler **s)
{
	scheduler_free(*s);
}

uint64_t scheduler_now_ns(void);
