/* SPDX-License-Identifier: Apache-2.0 */
/*
 * quarantine: the mounts that a scan is stuck on. A call on a file may wait on its file system
 * for ever (a stopped FUSE daemon below an overlay, a dead network server, a suspended device):
 * the scheduler then leaves that scan behind and starts another, which would get stuck on the
 * same mount. So a scan says which mount it enters before such calls (the open, cachestat and
 * close of a file, the walk of a configured path) and when it is out; a mount that another
 * thread has been inside for longer than QUARANTINE_AFTER_NS is quarantined: the scans skip its
 * files (skipped{reason="mount_stuck"}) until the stuck call returns, which lifts it. Each
 * quarantine's start and end is an event the caller takes (quarantine_events_take()) and logs.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * A call that has waited this long is stuck for the scans beside it. Two scans run at once only
 * when one was left behind, after max_scan_seconds: a slow call of a healthy mount is rarely
 * seen here, and costs those files one scan.
 */
#define QUARANTINE_AFTER_NS 1000000000ull

/* Mount ids in mountinfo are small positive numbers; this one is none (statx did not say). */
#define QUARANTINE_NO_MOUNT UINT64_MAX

/*
 * The calling thread enters mount mnt_id, for the calls on one file or the walk of one configured
 * path. Returns what quarantine_leave() restores: the mount it was in (a file met on a walk is
 * entered inside the walk), or QUARANTINE_NO_MOUNT. Without a free place to record it (more stuck
 * threads than places), nothing is recorded. Cheap: a few atomic operations, no lock.
 */
uint64_t quarantine_enter(uint64_t mnt_id);
/* The calling thread is out of the mount it entered, back in outer; a quarantine it caused ends. */
void quarantine_leave(uint64_t outer);

/* Whether mnt_id is quarantined: another thread has been inside it too long. Records the start. */
bool quarantine_holds(uint64_t mnt_id);

/* A quarantine that began (answered false) or ended (answered true), once each. */
struct quarantine_event {
	uint64_t mnt_id;
	uint64_t stuck_ns; /* how long the stuck call had waited by then */
	bool answered;
};
/* Events kept for the caller; more between two takes are counted, not kept. */
#define QUARANTINE_EVENTS 32

/*
 * Moves the oldest events, at most max, into ret and returns how many; *ret_lost: how many did not
 * fit since the last take. Thread safe.
 */
size_t quarantine_events_take(struct quarantine_event *ret, size_t max, uint64_t *ret_lost);
