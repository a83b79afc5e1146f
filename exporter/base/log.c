/* SPDX-License-Identifier: Apache-2.0 */
/* log: promslog's lines (time, level, source, msg, then the fields) in logfmt or JSON. */
#define _GNU_SOURCE
#include "base/log.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/utf8.h"
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

/*
 * A logfmt value is quoted when it is empty or holds a space, '=', '"', a backslash or a
 * control byte (what put_value escapes must be inside quotes to read back).
 */
static bool logfmt_needs_quotes(const char *v, size_t n)
{
	if (n == 0)
		return true;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)v[i];

		if (c == ' ' || c == '=' || c == '"' || c == '\\' || c < 0x20 || c == 0x7f)
			return true;
	}
	return false;
}

/* v[0..n) as a logfmt value or a JSON string, escaped so that an event stays one line. */
static void put_value(FILE *f, const char *v, size_t n, bool number)
{
	bool quote = !number && (format == LOG_FORMAT_JSON || logfmt_needs_quotes(v, n));

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
		else if (c < 0x20 || c == 0x7f)
			fprintf(f, format == LOG_FORMAT_JSON ? "\\u%04x" : "\\x%02x", c);
		else
			fputc(c, f);
	}
	if (quote)
		fputc('"', f);
}

static void put_field(FILE *f, bool first, const char *key, const char *v, bool number)
{
	if (format == LOG_FORMAT_JSON) {
		fputs(first ? "{" : ",", f);
		put_value(f, key, strlen(key), false);
		fputc(':', f);
	} else {
		if (!first)
			fputc(' ', f);
		fputs(key, f);
		fputc('=', f);
	}
	put_value(f, v, strlen(v), number);
}

/* Fields of one event past its message; more segments than this are dropped, counted. */
#define LOG_MAX_FIELDS 24

struct log_field {
	char key[32];
	char *value;  /* valid UTF-8 (utf8_sanitize) */
	bool number;  /* one numeric conversion whose text is a JSON number */
};

struct log_event {
	char *msg;
	struct log_field fields[LOG_MAX_FIELDS];
	size_t n_fields;
};

static void log_event_done(struct log_event *ev)
{
	free(ev->msg);
	for (size_t i = 0; i < ev->n_fields; i++)
		free(ev->fields[i].value);
}

/* One printf conversion: what it reads from the arguments. */
struct conversion {
	bool star_width, star_precision;
	int longs;  /* 'l's */
	char size;  /* 'z', 'j', 't', 'L' or 0 */
	char conv;  /* its letter */
};

/*
 * Parses the conversion at p (just after its '%'). Returns the character after it, or NULL for
 * one printf does not know (the compiler's format check makes that a caller's mistake).
 */
static const char *parse_conversion(const char *p, struct conversion *c)
{
	*c = (struct conversion){ 0 };
	p += strspn(p, "-+ #0'");
	if (*p == '*') {
		c->star_width = true;
		p++;
	}
	p += strspn(p, "0123456789");
	if (*p == '.') {
		if (*++p == '*') {
			c->star_precision = true;
			p++;
		}
		p += strspn(p, "0123456789");
	}
	for (; *p == 'l' || *p == 'h'; p++)
		c->longs += *p == 'l';
	if (*p && strchr("zjtL", *p))
		c->size = *p++;
	c->conv = *p;
	if (!*p || !strchr("diuxXocfFeEgGaAsp%m", *p))
		return NULL;
	return p + 1;
}

/* Steps ap past the arguments of c, with the sizes of its length modifiers. */
static void skip_conversion(const struct conversion *c, va_list *ap)
{
	if (c->star_width)
		(void)va_arg(*ap, int);
	if (c->star_precision)
		(void)va_arg(*ap, int);
	if (strchr("diuxXo", c->conv)) {
		if (c->size == 'z')
			(void)va_arg(*ap, size_t);
		else if (c->size == 'j')
			(void)va_arg(*ap, intmax_t);
		else if (c->size == 't')
			(void)va_arg(*ap, ptrdiff_t);
		else if (c->longs >= 2)
			(void)va_arg(*ap, long long);
		else if (c->longs == 1)
			(void)va_arg(*ap, long);
		else
			(void)va_arg(*ap, int); /* int, and char and short promoted */
	} else if (c->conv == 'c') {
		(void)va_arg(*ap, int);
	} else if (strchr("fFeEgGaA", c->conv)) {
		if (c->size == 'L')
			(void)va_arg(*ap, long double);
		else
			(void)va_arg(*ap, double);
	} else if (c->conv == 's' || c->conv == 'p') {
		(void)va_arg(*ap, void *);
	} /* '%' and glibc's 'm' read nothing */
}

/* Steps ap past every argument of fmt. Returns 0, or -EINVAL at an unknown conversion. */
static int skip_arguments(const char *fmt, va_list *ap)
{
	struct conversion c;

	for (const char *p = strchr(fmt, '%'); p; p = strchr(p, '%')) {
		p = parse_conversion(p + 1, &c);
		if (!p)
			return -EINVAL;
		skip_conversion(&c, ap);
	}
	return 0;
}

/* Whether s is a number as JSON writes one (no '+', no padding, no inf or nan). */
static bool json_number(const char *s)
{
	if (*s == '-')
		s++;
	if (*s == '0')
		s++;
	else if (*s >= '1' && *s <= '9')
		s += strspn(s, "0123456789");
	else
		return false;
	if (*s == '.') {
		s++;
		if (!(*s >= '0' && *s <= '9'))
			return false;
		s += strspn(s, "0123456789");
	}
	if (*s == 'e' || *s == 'E') {
		s += s[1] == '+' || s[1] == '-' ? 2 : 1;
		if (!(*s >= '0' && *s <= '9'))
			return false;
		s += strspn(s, "0123456789");
	}
	return *s == '\0';
}

/* Whether fmt is exactly one numeric conversion ("%d", "%.1f", "%" PRIu64). */
static bool one_numeric_conversion(const char *fmt)
{
	struct conversion c;
	const char *end;

	if (fmt[0] != '%')
		return false;
	end = parse_conversion(fmt + 1, &c);
	return end && *end == '\0' && strchr("diufFeEgG", c.conv);
}

/* A key as the call site wrote it: letters, digits, '_', '.', '-'; no conversion. */
static bool literal_key(const char *k, size_t n)
{
	if (n == 0 || n >= sizeof(((struct log_field *)NULL)->key))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!(k[i] == '_' || k[i] == '.' || k[i] == '-' || (k[i] >= '0' && k[i] <= '9') ||
		      ((k[i] | 0x20) >= 'a' && (k[i] | 0x20) <= 'z')))
			return false;
	return true;
}

/*
 * fmt formatted with the arguments at *ap, which are then stepped past, as valid UTF-8. The
 * format is a piece of the call site's, which the compiler checked against its arguments.
 */
static char *format_piece(const char *fmt, va_list *ap)
{
	_cleanup_free_ char *raw = NULL;
	va_list copy;
	int r;

	va_copy(copy, *ap);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	r = vasprintf(&raw, fmt, copy);
#pragma GCC diagnostic pop
	va_end(copy);
	if (r < 0 || skip_arguments(fmt, ap) < 0)
		return NULL;
	return utf8_sanitize(raw);
}

/*
 * One segment "key=value format" of the call site's format, formatted with its own arguments:
 * the key is the format's literal text, never the arguments', so that a value holding a tab
 * and "level=ERROR" stays one value. A segment that does not start with a literal key is kept
 * whole under "!BADKEY" (slog's mark), not lost.
 */
static int add_field(struct log_event *ev, const char *seg, va_list *ap)
{
	const char *eq = strchr(seg, '=');
	struct log_field *f = &ev->fields[ev->n_fields];
	const char *vfmt = seg;

	if (eq && literal_key(seg, (size_t)(eq - seg))) {
		memcpy(f->key, seg, (size_t)(eq - seg));
		f->key[eq - seg] = '\0';
		vfmt = eq + 1;
	} else {
		snprintf(f->key, sizeof(f->key), "!BADKEY");
	}
	f->value = format_piece(vfmt, ap);
	if (!f->value)
		return -ENOMEM;
	f->number = vfmt != seg && one_numeric_conversion(vfmt) && json_number(f->value);
	ev->n_fields++;
	return 0;
}

/*
 * The event of a call: fmt split at its own tabs, the message first, then one field per
 * segment, each formatted with its own arguments. Returns 0 or -ENOMEM (-EINVAL for a
 * conversion printf does not know), the event then freed by log_event_done() either way.
 */
static int log_event_build(struct log_event *ev, const char *fmt, va_list ap)
{
	va_list walk;
	int r = 0;

	*ev = (struct log_event){ 0 };
	va_copy(walk, ap);
	for (const char *p = fmt; r == 0 && p;) {
		const char *tab = strchr(p, '\t');
		_cleanup_free_ char *seg = tab ? strndup(p, (size_t)(tab - p)) : strdup(p);

		if (!seg)
			r = -ENOMEM;
		else if (p == fmt)
			r = (ev->msg = format_piece(seg, &walk)) ? 0 : -ENOMEM;
		else if (ev->n_fields < LOG_MAX_FIELDS)
			r = add_field(ev, seg, &walk);
		else
			r = skip_arguments(seg, &walk);
		p = tab ? tab + 1 : NULL;
	}
	va_end(walk);
	return r;
}

/* The event's text, to tell a repeat: each part with its length, so that none reads as two. */
static char *log_event_text(const struct log_event *ev)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	fprintf(f, "%zu:%s", strlen(ev->msg), ev->msg);
	for (size_t i = 0; i < ev->n_fields; i++)
		fprintf(f, "|%s=%zu:%s", ev->fields[i].key, strlen(ev->fields[i].value),
			ev->fields[i].value);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* One event, written with one fwrite so that lines of two threads never interleave. */
static void log_write(enum log_level level, const char *file, int line,
		      const struct log_event *ev, uint64_t repeated)
{
	_cleanup_free_ char *buf = NULL;
	const char *base = strrchr(file, '/');
	char ts[40], source[128], rep[24];
	struct timespec now;
	size_t len = 0;
	struct tm tm;
	FILE *f;

	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(ts + strlen(ts), sizeof(ts) - strlen(ts), ".%03ldZ", now.tv_nsec / 1000000);
	snprintf(source, sizeof(source), "%s:%d", base ? base + 1 : file, line);

	f = open_memstream(&buf, &len);
	if (!f)
		return;
	put_field(f, true, "time", ts, false);
	put_field(f, false, "level", level_names[level], false);
	put_field(f, false, "source", source, false);
	put_field(f, false, "msg", ev && ev->msg ? ev->msg : "(out of memory)", false);
	for (size_t i = 0; ev && i < ev->n_fields; i++)
		put_field(f, false, ev->fields[i].key, ev->fields[i].value, ev->fields[i].number);
	if (repeated) {
		snprintf(rep, sizeof(rep), "%" PRIu64, repeated);
		put_field(f, false, "previous_repeated", rep, true);
	}
	fputs(format == LOG_FORMAT_JSON ? "}\n" : "\n", f);
	if (fclose(f) != 0)
		return;
	fwrite(buf, 1, len, stream ? stream : stderr);
	fflush(stream ? stream : stderr);
}

/* repeat_suppressed: whether the event's text is the one SLOT last logged (then counted, not written); else
 * SLOT remembers it and *repeated says how many times the one before it was suppressed. An event whose text
 * cannot be made is never suppressed. */
static bool repeat_suppressed(struct log_repeat *slot, const struct log_event *ev, uint64_t *repeated)
{
	_cleanup_free_ char *text = log_event_text(ev);

	*repeated = 0;
	if (!text)
		return false;
	pthread_mutex_lock(&repeat_lock);
	if (slot->last && strcmp(slot->last, text) == 0) {
		slot->repeats++;
		atomic_fetch_add(&repeats_suppressed, 1);
		pthread_mutex_unlock(&repeat_lock);
		return true;
	}
	*repeated = slot->repeats;
	free(slot->last);
	slot->last = strdup(text);
	slot->repeats = 0;
	pthread_mutex_unlock(&repeat_lock);
	return false;
}

/* log_vemit: formats and writes one event, unless SLOT (may be NULL) says it repeats the last. What could be
 * formatted is written; "(out of memory)" stands for a lost message. */
static void log_vemit(struct log_repeat *slot, enum log_level level, const char *file, int line,
		      const char *fmt, va_list ap)
{
	struct log_event ev;
	uint64_t repeated = 0;
	int saved = errno;

	if (log_event_build(&ev, fmt, ap) < 0 && slot) {
		log_write(level, file, line, NULL, 0);
	} else if (!slot || !repeat_suppressed(slot, &ev, &repeated)) {
		log_write(level, file, line, &ev, repeated);
	}
	log_event_done(&ev);
	errno = saved;
}

void log_msg_at(enum log_level level, const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	if (level < min_level)
		return;
	va_start(ap, fmt);
	log_vemit(NULL, level, file, line, fmt, ap);
	va_end(ap);
}

void log_fields_at(enum log_level level, const char *file, int line, const char *msg,
		   const char *const *kv, size_t n)
{
	struct log_event ev = { 0 };
	int saved = errno;

	if (level < min_level)
		return;
	ev.msg = utf8_sanitize(msg);
	for (size_t i = 0; i < n && ev.n_fields < LOG_MAX_FIELDS; i++) {
		struct log_field *f = &ev.fields[ev.n_fields];
		const char *k = kv[2 * i];

		snprintf(f->key, sizeof(f->key), "%s", literal_key(k, strlen(k)) ? k : "!BADKEY");
		f->value = utf8_sanitize(kv[2 * i + 1]);
		if (!f->value)
			break;
		ev.n_fields++;
	}
	log_write(level, file, line, &ev, 0);
	log_event_done(&ev);
	errno = saved;
}

void log_repeat_at(struct log_repeat *slot, enum log_level level, const char *file, int line,
		   const char *fmt, ...)
{
	va_list ap;

	if (level < min_level)
		return;
	va_start(ap, fmt);
	log_vemit(slot, level, file, line, fmt, ap);
	va_end(ap);
}
