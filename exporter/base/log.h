/* SPDX-License-Identifier: Apache-2.0 */
/*
 * log: one line per event on stderr, with promslog's fields (the Prometheus exporters' logger)
 * in its two formats:
 *   logfmt  time=2026-01-02T03:04:05.678Z level=INFO source=main.c:735 msg="Listening" address=:9451
 *   json    {"time":"2026-01-02T03:04:05.678Z","level":"INFO","source":"main.c:735","msg":"Listening","address":":9451"}
 * A message carries its key-value fields after tabs in its format:
 * log_info("Listening\taddress=%s", a) writes msg="Listening" and the field address. The format is split at its own
 * tabs and each segment formatted with its own arguments, so that keys come from the call site
 * only: a value holding a tab or "level=ERROR" stays one value. A segment not starting with a
 * literal key ([A-Za-z0-9_.-]+ then '=') is kept whole under the key "!BADKEY". Every value is
 * valid UTF-8 (utf8_sanitize(), as the exposition's label values); a value made of exactly one
 * numeric conversion ("%d", "%.1f", "%" PRIu64) whose text is a JSON number is a JSON number.
 * Only the daemon's outer layers (main, http) log; library modules return errors.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum log_level {
	LOG_LEVEL_DEBUG,
	LOG_LEVEL_INFO,
	LOG_LEVEL_WARN,
	LOG_LEVEL_ERROR,
};

/* Returns 0, or -EINVAL for a name that is not debug, info, warn or error. */
int log_set_level(const char *name);
/* Returns 0, or -EINVAL for a name that is not logfmt or json. */
int log_set_format(const char *name);
/* Where the lines go (stderr by default; a test's memory stream). */
void log_set_stream(FILE *f);
/* Whether a line of this level is written. */
bool log_enabled(enum log_level level);

__attribute__((format(printf, 4, 5))) void log_msg_at(enum log_level level, const char *file,
						      int line, const char *fmt, ...);

#define log_msg(level, ...) log_msg_at(level, __FILE__, __LINE__, __VA_ARGS__)
#define log_debug(...) log_msg_at(LOG_LEVEL_DEBUG, __FILE__, __LINE__, __VA_ARGS__)
#define log_info(...) log_msg_at(LOG_LEVEL_INFO, __FILE__, __LINE__, __VA_ARGS__)
#define log_warn(...) log_msg_at(LOG_LEVEL_WARN, __FILE__, __LINE__, __VA_ARGS__)
#define log_error(...) log_msg_at(LOG_LEVEL_ERROR, __FILE__, __LINE__, __VA_ARGS__)

/*
 * An event whose keys the code chooses at run time (a collector's name): kv holds n key and
 * value pairs, each value a string. A key that is not [A-Za-z0-9_.-]+ is written "!BADKEY".
 */
void log_fields_at(enum log_level level, const char *file, int line, const char *msg,
		   const char *const *kv, size_t n);

#define log_fields(level, msg, kv, n) log_fields_at(level, __FILE__, __LINE__, msg, kv, n)

/*
 * A warning that may come back on every scrape (the same scan problem, scan after scan): a
 * line whose text is the one this slot logged last is not written again but counted
 * (log_repeats_suppressed()); the next different line says how often the one before repeated
 * (field previous_repeated=N). One static slot per call site; safe from any thread.
 */
struct log_repeat {
	char *last;       /* the text last written from this slot */
	uint64_t repeats; /* times it came again since */
};

__attribute__((format(printf, 5, 6))) void log_repeat_at(struct log_repeat *slot,
							 enum log_level level, const char *file,
							 int line, const char *fmt, ...);

#define log_warn_repeat(slot, ...) log_repeat_at(slot, LOG_LEVEL_WARN, __FILE__, __LINE__, __VA_ARGS__)

/* Lines not written since start because they repeated (cachestat_log_repeats_suppressed_total). */
uint64_t log_repeats_suppressed(void);
