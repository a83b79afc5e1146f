/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cgstat: parsers of a cgroup v2's memory.events (flat keyed: "key value" per line) and
 * memory.pressure (PSI: "some|full avg10=.. avg60=.. avg300=.. total=USEC"). They take a
 * buffer, so tests and fuzzers feed them strings; they allocate nothing. Depend on nothing else.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum cgstat_event {
	CGSTAT_EVENT_LOW,
	CGSTAT_EVENT_HIGH,
	CGSTAT_EVENT_MAX,
	CGSTAT_EVENT_OOM,
	CGSTAT_EVENT_OOM_KILL,
	_CGSTAT_EVENT_MAX,
};

/* The counters of memory.events the exporter uses; a key the kernel did not print is absent. */
struct cgstat_events {
	uint64_t value[_CGSTAT_EVENT_MAX];
	unsigned present; /* bit (1u << event) */
};

/* The key of memory.events: "low", "high", "max", "oom", "oom_kill"; NULL out of range. */
const char *cgstat_event_name(enum cgstat_event e);

/*
 * Parses memory.events. Unknown keys (oom_group_kill, sock_throttled, ...) are ignored.
 * Returns 0, or -EINVAL for a line that is not "key value" with a decimal value, or a key twice.
 */
int cgstat_parse_events(const char *buf, size_t len, struct cgstat_events *ret);

enum cgstat_psi_kind {
	CGSTAT_PSI_SOME, /* some task stalled on memory */
	CGSTAT_PSI_FULL, /* every non-idle task stalled at once */
	_CGSTAT_PSI_MAX,
};

/* The total= of each line of a PSI file, in microseconds. */
struct cgstat_psi {
	uint64_t total_us[_CGSTAT_PSI_MAX];
	unsigned present; /* bit (1u << kind) */
};

/*
 * Parses a PSI file (memory.pressure). Only total= is taken (the averages are the kernel's
 * own smoothing; rate() of the total is what Prometheus needs). A line of another kind is
 * ignored. Returns 0, or -EINVAL for a some/full line without one decimal total=, or twice.
 */
int cgstat_parse_psi(const char *buf, size_t len, struct cgstat_psi *ret);
