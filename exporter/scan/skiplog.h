/* SPDX-License-Identifier: Apache-2.0 */
/*
 * skiplog: one debug line per file the scan skips (which process holds it, why it was skipped),
 * rate limited by a token bucket per reason, so that a host with thousands of refused files
 * does not flood the log and its sockets and pipes (not_regular) do not crowd out its EPERMs. The module writes nothing itself: the daemon installs a sink (main.c logs at debug);
 * without one, skiplog_enabled() is false and the scan spends nothing on it.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/ratelimit.h"
#include "scan/snapshot.h"

struct skiplog_event {
	pid_t pid;           /* the process whose file it is; 0 for a configured path */
	const char *comm;    /* its /proc/PID/comm, NULL when unknown */
	const char *cgroup;
	const char *file;    /* the file or proc link, NULL when unknown */
	enum skip_reason reason;
	int err;             /* errno of the refused call, 0 where none applies */
	const char *call;    /* the refused call, NULL when unknown */
	bool summary;        /* no file: the lines of this reason suppressed at the end of a scan */
};

typedef void (*skiplog_sink_fn)(const struct skiplog_event *ev, uint64_t suppressed);

/* Installs the sink (NULL: none); each reason's bucket lets SKIPLOG_BURST lines through, then SKIPLOG_RATE/s. */
#define SKIPLOG_BURST 20
#define SKIPLOG_RATE 5.0
void skiplog_set_sink(skiplog_sink_fn sink);
bool skiplog_enabled(void);

/* Hands ev to the sink if the bucket allows; else counts it as suppressed. Thread-safe. */
void skiplog_note(const struct skiplog_event *ev);

/* At the end of a scan: per reason, the lines suppressed since its last one (a summary event). */
void skiplog_flush(void);

/* How many names of files skipped as no_access skiplog_note() keeps (the first ones). */
#define SKIPLOG_NO_ACCESS_NAMES 3

/* The first files skipped as no_access, comma-separated, into buf ("" when none). */
void skiplog_no_access_names(char *buf, size_t len);
