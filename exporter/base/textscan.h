/* SPDX-License-Identifier: Apache-2.0 */
/*
 * textscan: the pieces every parser of kernel text files here needs (memory.stat, numa_stat,
 * memory.events, memory.pressure): lines of a buffer, blank-separated words of a line, and a
 * strict decimal number. Pure: no allocation, no I/O.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A run of bytes of the buffer: a line, then the words of it. */
struct span {
	const char *p;
	const char *end;
};

/* The next line of [*pos, end), without its newline; false when none is left. */
bool span_next_line(const char **pos, const char *end, struct span *ret);
/* The next word of the line (blanks: space and tab), consumed from it; false at its end. */
bool span_next_word(struct span *line, struct span *ret);
/* Whether the span is exactly s. */
bool span_is(const struct span *w, const char *s);
/* [p, end) as a decimal number: digits only, no sign; -EINVAL, or -ERANGE past UINT64_MAX. */
int span_parse_u64(const char *p, const char *end, uint64_t *ret);
