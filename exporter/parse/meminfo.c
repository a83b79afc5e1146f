/* SPDX-License-Identifier: Apache-2.0 */
#include "parse/meminfo.h"

#include <errno.h>
#include <string.h>

#include "base/textscan.h"

/* The words of a line after "Key:" as "N kB", in bytes; -EINVAL if it is not that. */
static int parse_kb(struct span *rest, uint64_t *ret)
{
	struct span num, unit, extra;
	uint64_t v;
	int r;

	if (!span_next_word(rest, &num) || !span_next_word(rest, &unit) || !span_is(&unit, "kB") ||
	    span_next_word(rest, &extra))
		return -EINVAL;
	r = span_parse_u64(num.p, num.end, &v);
	if (r < 0)
		return r;
	if (v > UINT64_MAX / 1024)
		return -ERANGE;
	*ret = v * 1024;
	return 0;
}

int meminfo_parse(const char *buf, size_t len, struct meminfo *ret)
{
	struct meminfo m = { 0 };
	bool cached = false, shmem = false;
	const char *pos = buf, *end = buf + len;
	struct span line, key;

	while (span_next_line(&pos, end, &line)) {
		int r = 0;

		if (!span_next_word(&line, &key))
			continue;
		if (span_is(&key, "Cached:")) {
			r = parse_kb(&line, &m.cached);
			cached = true;
		} else if (span_is(&key, "Shmem:")) {
			r = parse_kb(&line, &m.shmem);
			shmem = true;
		}
		if (r < 0)
			return r;
	}
	if (!cached || !shmem)
		return -ENOENT;
	*ret = m;
	return 0;
}
