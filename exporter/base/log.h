/* SPDX-License-Identifier: Apache-2.0 */
/*
 * log: one logfmt line per event on stderr, node_exporter style:
 *   ts=2026-01-02T03:04:05.678Z level=info msg="Listening on" ...
 * Only the daemon's outer layers (main, http) log; library modules return errors.
 */
#pragma once

#include <stdbool.h>

enum log_level {
	LOG_LEVEL_DEBUG,
	LOG_LEVEL_INFO,
	LOG_LEVEL_WARN,
	LOG_LEVEL_ERROR,
};

/* Returns 0, or -EINVAL for a name that is not debug, info, warn or error. */
int log_set_level(const char *name);
/* Whether a line of this level is written. */
bool log_enabled(enum log_level level);

__attribute__((format(printf, 2, 3))) void log_msg(enum log_level level, const char *fmt, ...);

#define log_debug(...) log_msg(LOG_LEVEL_DEBUG, __VA_ARGS__)
#define log_info(...) log_msg(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_LEVEL_WARN, __VA_ARGS__)
#define log_error(...) log_msg(LOG_LEVEL_ERROR, __VA_ARGS__)
