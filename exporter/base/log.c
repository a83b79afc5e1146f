/* SPDX-License-Identifier: Apache-2.0 */
/* log: promslog's lines (time, level, source, msg, then the fields) in logfmt or JSON. */
#define _GNU_SOURCE
#include "base/log.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/util.h"

enum log_format {
	LOG_FORMAT_LOGFMT,
	LOG_FORMAT_JSON,
};

static enum log_level min_level = LOG_LEVEL_INFO;
static enum log_format format = LOG_FORMAT_LOGFMT;
static FILE *stream;
static atomic_uint_fast64_t repeats_suppressed;
static pthread_mutex_t repeat_lock = PTHREAD_MUTEX_INITIALIZER;

/* slog's level names, which promslog keeps; the flag takes them in lower case. */
static const char *const level_flags[] = { "debug", "info", "warn", "error" };
static const char *const level_names[] = { "DEBUG", "INFO", "WARN", "ERROR" };

int log_set_level(const char *name)
{
	for (int i = 0; i <= LOG_LEVEL_ERROR; i++)
		if (strcmp(name, level_flags[i]) == 0) {
			min_level = (enum log_level)i;
			return 0;
		}
	return -EINVAL;
}

int log_set_format(const char *name)
{
	if (strcmp(name, "logfmt") == 0)
		format = LOG_FORMAT_LOGFMT;
	else if (strcmp(name, "json") == 0)
		format = LOG_FORMAT_JSON;
	else
		return -EINVAL;
	return 0;
}

void log_set_stream(FILE *f)
{
	stream = f;
}

bool log_enabled(enum log_level level)
{
	return level >= min_level;
}

uint64_t log_repeats_suppressed(void)
{
	return atomic_load(&repeats_suppressed);
}

/* A logfmt value is quoted when it is empty or holds a space, '=', '"' or a control byte. */
static bool logfmt_needs_quotes(const char *v, size_t n)
{
	if (n == 0)
		return true;
	for (size_t i = 0; i < n; i++)
		if (v[i] == ' ' || v[i] == '=' || v[i] == '"' || (unsigned char)v[i] < 0x20)
			return true;
	return false;
}

/* v[0..n) as a logfmt value or a JSON string, escaped so that an event stays one line. */
static void put_value(FILE *f, const char *v, size_t n)
{
	bool quote = format == LOG_FORMAT_JSON || logfmt_needs_quotes(v, n);

	if (quote)
		fputc('"', f);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)v[i];

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", f);
		else if (c == '\t')
			fputs("\\t", f);
		else if (c < 0x20)
			fprintf(f, format == LOG_FORMAT_JSON ? "\\u%04x" : "\\x%02x", c);
		else
			fputc(c, f);
	}
	if (quote)
		fputc('"', f);
}

static void put_field(FILE *f, bool first, const char *key, size_t key_len, const char *v,
		      size_t n)
{
	if (format == LOG_FORMAT_JSON) {
		fputs(first ? "{" : ",", f);
		put_value(f, key, key_len);
		fputc(':', f);
	} else {
		if (!first)
			fputc(' ', f);
		fwrite(key, 1, key_len, f);
		fputc('=', f);
	}
	put_value(f, v, n);
}

/*
 * The fields after the message: "\tkey=value" each. A part without '=' (or with an empty key)
 * is kept as a value of the key "field", not lost.
 */
static void put_fields(FILE *f, const char *p)
{
	while (*p == '\t') {
		const char *part = ++p, *end = part + strcspn(part, "\t");
		const char *eq = memchr(part, '=', (size_t)(end - part));

		if (eq && eq > part)
			put_field(f, false, part, (size_t)(eq - part), eq + 1, (size_t)(end - eq - 1));
		else
			put_field(f, false, "field", 5, part, (size_t)(end - part));
		p = end;
	}
}

/* One event, written with one fwrite so that lines of two threads never interleave. */
static void log_write(enum log_level level, const char *file, int line, const char *text,
		      uint64_t repeated)
{
	_cleanup_free_ char *buf = NULL;
	const char *base = strrchr(file, '/');
	char ts[40], source[128], rep[24];
	struct timespec now;
	size_t len = 0, msg_len;
	struct tm tm;
	FILE *f;

	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(ts + strlen(ts), sizeof(ts) - strlen(ts), ".%03ldZ", now.tv_nsec / 1000000);
	snprintf(source, sizeof(source), "%s:%d", base ? base + 1 : file, line);
	msg_len = strcspn(text, "\t");

	f = open_memstream(&buf, &len);
	if (!f)
		return;
	put_field(f, true, "time", 4, ts, strlen(ts));
	put_field(f, false, "level", 5, level_names[level], strlen(level_names[level]));
	put_field(f, false, "source", 6, source, strlen(source));
	put_field(f, false, "msg", 3, text, msg_len);
	put_fields(f, text + msg_len);
	if (repeated) {
		snprintf(rep, sizeof(rep), "%" PRIu64, repeated);
		put_field(f, false, "previous_repeated", 17, rep, strlen(rep));
	}
	fputs(format == LOG_FORMAT_JSON ? "}\n" : "\n", f);
	if (fclose(f) != 0)
		return;
	fwrite(buf, 1, len, stream ? stream : stderr);
	fflush(stream ? stream : stderr);
}

void log_msg_at(enum log_level level, const char *file, int line, const char *fmt, ...)
{
	_cleanup_free_ char *text = NULL;
	int saved = errno;
	va_list ap;

	if (level < min_level)
		return;
	va_start(ap, fmt);
	if (vasprintf(&text, fmt, ap) < 0)
		text = NULL;
	va_end(ap);
	log_write(level, file, line, text ? text : "(out of memory)", 0);
	errno = saved;
}

void log_repeat_at(struct log_repeat *slot, enum log_level level, const char *file, int line,
		   const char *fmt, ...)
{
	_cleanup_free_ char *text = NULL;
	uint64_t repeated;
	int saved = errno;
	va_list ap;

	if (level < min_level)
		return;
	va_start(ap, fmt);
	if (vasprintf(&text, fmt, ap) < 0)
		text = NULL;
	va_end(ap);
	if (!text) {
		log_write(level, file, line, "(out of memory)", 0);
		errno = saved;
		return;
	}
	pthread_mutex_lock(&repeat_lock);
	if (slot->last && strcmp(slot->last, text) == 0) {
		slot->repeats++;
		atomic_fetch_add(&repeats_suppressed, 1);
		pthread_mutex_unlock(&repeat_lock);
		errno = saved;
		return;
	}
	repeated = slot->repeats;
	free(slot->last);
	slot->last = strdup(text);
	slot->repeats = 0;
	pthread_mutex_unlock(&repeat_lock);
	log_write(level, file, line, text, repeated);
	errno = saved;
}
