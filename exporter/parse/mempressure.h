/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mempressure: parsers of a cgroup v2's memory.events (flat keyed: "key value" per line) and
 * memory.pressure (PSI: "some|full avg10=.. avg60=.. avg300=.. total=USEC"). They take a
 * buffer, so tests and fuzzers feed them strings; they allocate nothing. Depend on nothing else.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum mempressure_event {
	MEMPRESSURE_EVENT_LOW,
	MEMPRESSURE_EVENT_HIGH,
	MEMPRESSURE_EVENT_MAX,
	MEMPRESSURE_EVENT_OOM,
	MEMPRESSURE_EVENT_OOM_KILL,
	_MEMPRESSURE_EVENT_MAX,
};

/* The counters of memory.events the exporter uses; a key the kernel did not print is absent. */
struct mempressure_events {
	uint64_t value[_MEMPRESSURE_EVENT_MAX];
	unsigned present; /* bit (1u << event) */
};

/* The key of memory.events: "low", "high", "max", "oom", "oom_kill"; NULL out of range. */
const char *mempressure_event_name(enum mempressure_event e);

/*
 * Parses memory.events. Unknown keys (oom_group_kill, sock_throttled, ...) are ignored.
 * Returns 0, or -EINVAL for a line that is not "key value" with a decimal value, or a key twice.
 */
int mempressure_parse_events(const char *buf, size_t len, struct mempressure_events *ret);

enum mempressure_psi_kind {
	MEMPRESSURE_PSI_SOME, /* some task stalled on memory */
	MEMPRESSURE_PSI_FULL, /* every non-idle task stalled at once */
	_MEMPRESSURE_PSI_MAX,
};

/* The total= of each line of a PSI file, in microseconds. */
struct mempressure_psi {
	uint64_t total_us[_MEMPRESSURE_PSI_MAX];
	unsigned present; /* bit (1u << kind) */
};

/*
 * Parses a PSI file (memory.pressure). Only total= is taken (the averages are the kernel's
 * own smoothing; rate() of the total is what Prometheus needs). A line of another kind is
 * ignored. Returns 0, or -EINVAL for a some/full line without one decimal total=, or twice.
 */
int mempressure_parse_psi(const char *buf, size_t len, struct mempressure_psi *ret);
