/* SPDX-License-Identifier: Apache-2.0 */
/*
 * attach: which kernel function each event of program.h is counted at. The names changed with
 * the folio conversion (6.1 has both families; later kernels only the folio names), and a
 * static function may be inlined away: the choice is made at start from the functions the
 * running kernel can probe, the tracing file system's available_filter_functions, or the
 * functions of /proc/kallsyms on a kernel without function tracing.
 */
#pragma once

#include <stddef.h>

#include "activity/program.h"

/* The event's name in the series and the start log: "accessed", "added", "dirtied", "buffer_dirtied". */
const char *activity_event_name(enum activity_event e);

/*
 * The first candidate of each event that buf (available_filter_functions: "NAME" or
 * "NAME [MODULE]" a line) lists, in ret_names; NULL for an event with none. 0 when every
 * event but the optional buffer_dirtied has one, else -ENOENT (ret_names filled all the same).
 */
int activity_choose(const char *buf, size_t len, const char *ret_names[_ACTIVITY_EVENT_MAX]);
