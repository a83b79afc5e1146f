/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fanotify: sees the files that processes open, as they open them, and remembers them per cgroup
 * in a handleset (handles, no descriptors). A notification-class fanotify group reporting file
 * handles (FAN_REPORT_FID) marks whole file systems (FAN_MARK_FILESYSTEM) for FAN_OPEN; a thread
 * reads the events, maps each event's pid to its cgroup at once (/proc/PID/cgroup) with the
 * credentials it opened with (/proc/PID/status), and notes the handle. A file system without
 * file handles cannot be marked in this mode at all (a mount mark needs them too): it is
 * counted as unsupported and its files are found only while held open. Queue overflows, events
 * of processes already gone and handles too long are counted, never fatal. Never logs.
 *
 * Silencing: every event costs the opener in its open() (the kernel allocates, encodes and queues
 * it), so a file a cgroup opens a second time within the current period gets an ignore mark on
 * its inode (evictable: it does not keep the inode, so a deleted or evicted file still goes) and
 * makes no event until the next refresh, when all the ignore marks go at once (struct
 * fanotify_silence has the rule). A file opened over and over then costs two events a period,
 * not one per open; its last open, or its first by another cgroup, is known to within a period.
 *
 * fanotify_init() and fanotify_mark() need CAP_SYS_ADMIN: fanotify_listener_new() runs before
 * the daemon drops its privileges, and nothing later needs it (reading events does not; opening
 * a handle needs CAP_DAC_READ_SEARCH, which the scan keeps anyway). The thread starts later
 * (fanotify_listener_start()), after the drop, so that it inherits the reduced set; the kernel
 * queues the events meanwhile.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fanotify/handleset.h"

struct fanotify_options {
	const char *procfs;
	bool memory_v1;       /* the cgroup label is the v1 memory hierarchy's path */
	const char *fs_types_exclude; /* regex; NULL: fstypes' default */
	/* mount points whose file systems to mark (comma separated); NULL: every local one */
	const char *filesystems;
	struct handleset_limits limits;
	uint64_t refresh_ns;  /* the silencing period; 0: no silencing */
	size_t max_silenced;  /* ignore marks at most per period */
};

/*
 * The silencing rule, plain data (no system calls, the listener's lock around it): which open
 * earns its file an ignore mark, when they all go, how many there may be.
 */
struct fanotify_silence {
	uint64_t refresh_ns;      /* 0: off */
	size_t max_files;
	uint64_t period_start_ns; /* the last refresh */
	size_t files;             /* ignore marks placed in this period */
	bool full;                /* the kernel's mark limit was hit: none more in this period */
	bool refused;             /* the kernel has no evictable ignore marks (before 5.19): off */
	uint64_t errors;          /* marks that could not be placed (a file gone is no error) */
	uint64_t refreshes;
};

void fanotify_silence_init(struct fanotify_silence *s, uint64_t refresh_ns, size_t max_files,
			   uint64_t now_ns);
/*
 * Whether an open, the period_opens-th of its (cgroup, file) in this period
 * (handleset_note()), earns its file an ignore mark: the second does, while there is room. A
 * file opened once a period is never marked (a mark would cost more than the event it saves);
 * the later opens of a marked file make no event, and those queued before the mark took
 * effect do not mark it again.
 */
bool fanotify_silence_wanted(const struct fanotify_silence *s, unsigned period_opens);
/* What placing a mark gave: 0, or the -errno of open_by_handle_at() or fanotify_mark(). */
void fanotify_silence_placed(struct fanotify_silence *s, int r);
/* Whether the period is over at now_ns (never when off), and the ms until then for poll(). */
bool fanotify_silence_due(const struct fanotify_silence *s, uint64_t now_ns);
int fanotify_silence_timeout_ms(const struct fanotify_silence *s, uint64_t now_ns);
/* Every ignore mark went at now_ns: a new period. */
void fanotify_silence_refreshed(struct fanotify_silence *s, uint64_t now_ns);

struct fanotify_stats {
	uint64_t events;      /* open events read */
	uint64_t overflows;   /* FAN_Q_OVERFLOW: events the kernel dropped */
	uint64_t pid_gone;    /* events whose process exited before it could be looked up */
	uint64_t unattributed; /* no cgroup or credentials could be read, or no usable handle */
	unsigned marked;      /* file systems marked */
	unsigned unsupported; /* file systems that could not be marked (no file handles, ...) */
	struct handleset_stats set;
	bool silence_on;      /* silencing is on, and the kernel takes the marks */
	bool silence_refused; /* the kernel refused evictable ignore marks */
	size_t silenced;      /* ignore marks placed in this period */
	uint64_t silence_errors;
	uint64_t silence_refreshes;
};

struct fanotify_listener;

/*
 * The group and its marks, no thread yet. Returns 0, -EPERM without CAP_SYS_ADMIN, -ENOSYS or
 * -EINVAL on a kernel without fanotify or FAN_REPORT_FID (before 5.1), -ENOENT when no file
 * system could be marked, -ENOMEM. *ret_error says which (caller frees; may be NULL).
 */
int fanotify_listener_new(const struct fanotify_options *o, struct fanotify_listener **ret,
			  char **ret_error);

/* Starts the thread that reads the events, once; later calls do nothing. 0 or -errno. */
int fanotify_listener_start(struct fanotify_listener *l);

/* The recent files of a cgroup (handleset_cgroup_items()), under the listener's lock. */
int fanotify_listener_items(struct fanotify_listener *l, const char *cgroup, uint64_t now_ns,
			    struct handleset_item **ret, size_t *ret_n);

/*
 * A descriptor (read-only, a directory) of the root of a marked file system with id fsid, to open
 * its handles through; the caller closes it. Opened on demand, so that no descriptor pins a
 * mount between scans. -ENOENT for a file system not marked, -ESTALE when its mount point is no
 * longer that file system, -errno.
 */
int fanotify_listener_mount_fd(const struct fanotify_listener *l, uint64_t fsid);

/* Drops the expired entries and reports the counters. */
void fanotify_listener_stats(struct fanotify_listener *l, uint64_t now_ns, struct fanotify_stats *ret);

/* Stops the thread and closes the group. */
void fanotify_listener_free(struct fanotify_listener *l);

/*
 * The cgroup path of a /proc/PID/cgroup buffer: the cgroup v2 line ("0::/a/b"), or with
 * memory_v1 the line of the v1 hierarchy that has the memory controller. Returns a pointer into
 * buf (NUL-terminated in place) or NULL.
 */
char *fanotify_cgroup_of(char *buf, bool memory_v1);
