/* SPDX-License-Identifier: Apache-2.0 */
#include "base/textscan.h"

#include <errno.h>
#include <string.h>

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

bool span_next_line(const char **pos, const char *end, struct span *ret)
{
	const char *nl;

	if (*pos >= end)
		return false;
	nl = memchr(*pos, '\n', (size_t)(end - *pos));
	*ret = (struct span){ *pos, nl ? nl : end };
	*pos = nl ? nl + 1 : end;
	return true;
}

bool span_next_word(struct span *line, struct span *ret)
{
	while (line->p < line->end && is_blank(*line->p))
		line->p++;
	if (line->p == line->end)
		return false;
	ret->p = line->p;
	while (line->p < line->end && !is_blank(*line->p))
		line->p++;
	ret->end = line->p;
	return true;
}

bool span_is(const struct span *w, const char *s)
{
	size_t n = strlen(s);

	return (size_t)(w->end - w->p) == n && memcmp(w->p, s, n) == 0;
}

int span_parse_u64(const char *p, const char *end, uint64_t *ret)
{
	uint64_t v = 0;

	if (p == end)
		return -EINVAL;
	for (; p < end; p++) {
		unsigned d;

		if (*p < '0' || *p > '9')
			return -EINVAL;
		d = (unsigned)(*p - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	*ret = v;
	return 0;
}
