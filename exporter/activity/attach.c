/* SPDX-License-Identifier: Apache-2.0 */
/*
 * attach: the kernel functions the activity program is attached to, chosen from those the
 * running kernel can probe (attach.h). The candidates are BCC's cachestat's: the folio names
 * first, the page names of older kernels next.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "activity/attach.h"
#include "base/util.h"

static const char *const event_names[_ACTIVITY_EVENT_MAX] = {
	[ACTIVITY_ACCESSED] = "accessed",
	[ACTIVITY_ADDED] = "added",
	[ACTIVITY_DIRTIED] = "dirtied",
	[ACTIVITY_BUFFER_DIRTIED] = "buffer_dirtied",
};

/*
 * Best first. folio_account_dirtied is static: where the compiler inlined it (it is not in the
 * list), __folio_mark_dirty, its only caller, counts the same dirtyings.
 */
static const char *const candidates[_ACTIVITY_EVENT_MAX][4] = {
	[ACTIVITY_ACCESSED] = { "folio_mark_accessed", "mark_page_accessed" },
	[ACTIVITY_ADDED] = { "filemap_add_folio", "add_to_page_cache_lru" },
	[ACTIVITY_DIRTIED] = { "folio_account_dirtied", "account_page_dirtied", "__folio_mark_dirty" },
	[ACTIVITY_BUFFER_DIRTIED] = { "mark_buffer_dirty" },
};

const char *activity_event_name(enum activity_event e)
{
	return (unsigned)e < _ACTIVITY_EVENT_MAX ? event_names[e] : "unknown";
}

/* Whether buf has a line whose first word is name. */
static bool lists(const char *buf, size_t len, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = buf, *end = buf + len; p < end;) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		size_t line = eol ? (size_t)(eol - p) : (size_t)(end - p);

		if (line >= n && !memcmp(p, name, n) && (line == n || p[n] == ' ' || p[n] == '\t'))
			return true;
		p += line + 1;
	}
	return false;
}

int activity_choose(const char *buf, size_t len, const char *ret_names[_ACTIVITY_EVENT_MAX])
{
	int r = 0;

	for (unsigned e = 0; e < _ACTIVITY_EVENT_MAX; e++) {
		ret_names[e] = NULL;
		for (size_t i = 0; i < ELEMENTSOF(candidates[e]) && candidates[e][i]; i++)
			if (lists(buf, len, candidates[e][i])) {
				ret_names[e] = candidates[e][i];
				break;
			}
		if (!ret_names[e] && e != ACTIVITY_BUFFER_DIRTIED)
			r = -ENOENT;
	}
	return r;
}
