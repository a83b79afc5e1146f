/* SPDX-License-Identifier: Apache-2.0 */
#include "parse/mempressure.h"

#include <errno.h>
#include <string.h>

#include "base/textscan.h"

static const char *const event_names[_MEMPRESSURE_EVENT_MAX] = {
	[MEMPRESSURE_EVENT_LOW] = "low",
	[MEMPRESSURE_EVENT_HIGH] = "high",
	[MEMPRESSURE_EVENT_MAX] = "max",
	[MEMPRESSURE_EVENT_OOM] = "oom",
	[MEMPRESSURE_EVENT_OOM_KILL] = "oom_kill",
};

static const char *const psi_names[_MEMPRESSURE_PSI_MAX] = {
	[MEMPRESSURE_PSI_SOME] = "some",
	[MEMPRESSURE_PSI_FULL] = "full",
};

const char *mempressure_event_name(enum mempressure_event e)
{
	return e < _MEMPRESSURE_EVENT_MAX ? event_names[e] : NULL;
}

int mempressure_parse_events(const char *buf, size_t len, struct mempressure_events *ret)
{
	struct mempressure_events ev = { 0 };
	const char *pos = buf, *end = buf + len;
	struct span line, key, val, extra;

	while (span_next_line(&pos, end, &line)) {
		uint64_t v;

		if (!span_next_word(&line, &key))
			continue; /* empty line */
		if (!span_next_word(&line, &val) || span_next_word(&line, &extra) ||
		    span_parse_u64(val.p, val.end, &v) < 0)
			return -EINVAL;
		for (unsigned e = 0; e < _MEMPRESSURE_EVENT_MAX; e++) {
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

	while (span_next_word(line, &w)) {
		if (w.end - w.p < 6 || memcmp(w.p, "total=", 6) != 0)
			continue; /* avg10=, avg60=, avg300= */
		if (found || span_parse_u64(w.p + 6, w.end, ret) < 0)
			return -EINVAL;
		found = true;
	}
	return found ? 0 : -EINVAL;
}

int mempressure_parse_psi(const char *buf, size_t len, struct mempressure_psi *ret)
{
	struct mempressure_psi psi = { 0 };
	const char *pos = buf, *end = buf + len;
	struct span line, kind;

	while (span_next_line(&pos, end, &line)) {
		if (!span_next_word(&line, &kind))
			continue;
		for (unsigned k = 0; k < _MEMPRESSURE_PSI_MAX; k++) {
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
