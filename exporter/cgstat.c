/* SPDX-License-Identifier: Apache-2.0 */
#include "cgstat.h"

#include <errno.h>
#include <string.h>

static const char *const event_names[_CGSTAT_EVENT_MAX] = {
	[CGSTAT_EVENT_LOW] = "low",
	[CGSTAT_EVENT_HIGH] = "high",
	[CGSTAT_EVENT_MAX] = "max",
	[CGSTAT_EVENT_OOM] = "oom",
	[CGSTAT_EVENT_OOM_KILL] = "oom_kill",
};

static const char *const psi_names[_CGSTAT_PSI_MAX] = {
	[CGSTAT_PSI_SOME] = "some",
	[CGSTAT_PSI_FULL] = "full",
};

const char *cgstat_event_name(enum cgstat_event e)
{
	return e < _CGSTAT_EVENT_MAX ? event_names[e] : NULL;
}

/* A run of bytes of the buffer: a line, then the words of it. */
struct span {
	const char *p;
	const char *end;
};

static bool next_line(const char **pos, const char *end, struct span *ret)
{
	const char *nl;

	if (*pos >= end)
		return false;
	nl = memchr(*pos, '\n', (size_t)(end - *pos));
	*ret = (struct span){ *pos, nl ? nl : end };
	*pos = nl ? nl + 1 : end;
	return true;
}

/* Next word of the line, words separated by blanks; false at its end. */
static bool next_word(struct span *line, struct span *ret)
{
	while (line->p < line->end && (*line->p == ' ' || *line->p == '\t'))
		line->p++;
	if (line->p == line->end)
		return false;
	ret->p = line->p;
	while (line->p < line->end && *line->p != ' ' && *line->p != '\t')
		line->p++;
	ret->end = line->p;
	return true;
}

static bool span_is(const struct span *w, const char *s)
{
	size_t n = strlen(s);

	return (size_t)(w->end - w->p) == n && memcmp(w->p, s, n) == 0;
}

/* Strict decimal: digits only, no sign, no overflow. */
static int parse_u64(const char *p, const char *end, uint64_t *ret)
{
	uint64_t v = 0;

	if (p == end)
		return -EINVAL;
	for (; p < end; p++) {
		unsigned d = (unsigned)(unsigned char)*p - '0';

		if (d > 9 || v > (UINT64_MAX - d) / 10)
			return -EINVAL;
		v = v * 10 + d;
	}
	*ret = v;
	return 0;
}

int cgstat_parse_events(const char *buf, size_t len, struct cgstat_events *ret)
{
	struct cgstat_events ev = { 0 };
	const char *pos = buf, *end = buf + len;
	struct span line, key, val, extra;

	while (next_line(&pos, end, &line)) {
		uint64_t v;

		if (!next_word(&line, &key))
			continue; /* empty line */
		if (!next_word(&line, &val) || next_word(&line, &extra) ||
		    parse_u64(val.p, val.end, &v) < 0)
			return -EINVAL;
		for (unsigned e = 0; e < _CGSTAT_EVENT_MAX; e++) {
			if (!span_is(&key, event_names[e]))
				continue;
			if (ev.present & (1u << e))
				return -EINVAL;
			ev.value[e] = v;
			ev.present |= 1u << e;
		}
	}
	*ret = ev;
	return 0;
}

/* The total= word of a PSI line, after its kind. */
static int psi_line_total(struct span *line, uint64_t *ret)
{
	struct span w;
	bool found = false;

	while (next_word(line, &w)) {
		if (w.end - w.p < 6 || memcmp(w.p, "total=", 6) != 0)
			continue; /* avg10=, avg60=, avg300= */
		if (found || parse_u64(w.p + 6, w.end, ret) < 0)
			return -EINVAL;
		found = true;
	}
	return found ? 0 : -EINVAL;
}

int cgstat_parse_psi(const char *buf, size_t len, struct cgstat_psi *ret)
{
	struct cgstat_psi psi = { 0 };
	const char *pos = buf, *end = buf + len;
	struct span line, kind;

	while (next_line(&pos, end, &line)) {
		if (!next_word(&line, &kind))
			continue;
		for (unsigned k = 0; k < _CGSTAT_PSI_MAX; k++) {
			if (!span_is(&kind, psi_names[k]))
				continue;
			if ((psi.present & (1u << k)) || psi_line_total(&line, &psi.total_us[k]) < 0)
				return -EINVAL;
			psi.present |= 1u << k;
		}
	}
	*ret = psi;
	return 0;
}
