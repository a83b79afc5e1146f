/* SPDX-License-Identifier: Apache-2.0 */
#include "meminfo.h"

#include <errno.h>
#include <string.h>

/* The value of a line "Key:   N kB" (p after the colon) in bytes; -EINVAL if it is not that. */
static int parse_kb(const char *p, const char *end, uint64_t *ret)
{
	uint64_t v = 0;
	const char *digits;

	while (p < end && *p == ' ')
		p++;
	digits = p;
	while (p < end && *p >= '0' && *p <= '9') {
		if (v > (UINT64_MAX - 9) / 10 / 1024)
			return -EINVAL;
		v = v * 10 + (uint64_t)(*p - '0');
		p++;
	}
	if (p == digits || end - p != 3 || memcmp(p, " kB", 3) != 0)
		return -EINVAL;
	*ret = v * 1024;
	return 0;
}

int meminfo_parse(const char *buf, size_t len, struct meminfo *ret)
{
	struct meminfo m = { 0 };
	bool cached = false, shmem = false;
	const char *p = buf, *end = buf + len;

	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		const char *colon;
		int r = 0;

		if (!eol)
			eol = end;
		colon = memchr(p, ':', (size_t)(eol - p));
		if (colon && colon - p == 6 && memcmp(p, "Cached", 6) == 0) {
			r = parse_kb(colon + 1, eol, &m.cached);
			cached = true;
		} else if (colon && colon - p == 5 && memcmp(p, "Shmem", 5) == 0) {
			r = parse_kb(colon + 1, eol, &m.shmem);
			shmem = true;
		}
		if (r < 0)
			return r;
		p = eol + 1;
	}
	if (!cached || !shmem)
		return -ENOENT;
	*ret = m;
	return 0;
}
