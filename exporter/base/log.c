/* SPDX-License-Identifier: Apache-2.0 */
#define _GNU_SOURCE
#include "base/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static enum log_level min_level = LOG_LEVEL_INFO;

static const char *const level_names[] = { "debug", "info", "warn", "error" };

int log_set_level(const char *name)
{
	for (int i = 0; i <= LOG_LEVEL_ERROR; i++)
		if (strcmp(name, level_names[i]) == 0) {
			min_level = (enum log_level)i;
			return 0;
		}
	return -EINVAL;
}

bool log_enabled(enum log_level level)
{
	return level >= min_level;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	char line[4096], ts[40];
	char *msg = NULL;
	struct timespec now;
	struct tm tm;
	size_t n = 0;
	va_list ap;
	int saved = errno;

	if (level < min_level)
		return;
	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	va_end(ap);
	errno = saved;

	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);

	n = (size_t)snprintf(line, sizeof(line), "ts=%s.%03ldZ level=%s msg=\"", ts,
			     now.tv_nsec / 1000000, level_names[level]);
	/* quote the message: one event stays one line */
	for (const char *p = msg ? msg : "(out of memory)"; *p && n < sizeof(line) - 8; p++) {
		if (*p == '"' || *p == '\\') {
			line[n++] = '\\';
			line[n++] = *p;
		} else if (*p == '\n') {
			line[n++] = '\\';
			line[n++] = 'n';
		} else if ((unsigned char)*p < 0x20) {
			line[n++] = ' ';
		} else {
			line[n++] = *p;
		}
	}
	line[n++] = '"';
	line[n++] = '\n';
	fwrite(line, 1, n, stderr);
	free(msg);
}
