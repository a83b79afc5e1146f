/* SPDX-License-Identifier: Apache-2.0 */
/*
 * loader: the activity program in the kernel: loaded from the skeleton built with the exporter
 * (bpftool gen skeleton), its kprobes attached to the functions attach.h chose, its map read and
 * pruned. The program stays attached while the loader's descriptors are open: activity_stop(),
 * or the exit of the last process holding them, detaches it.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "activity/idmap.h"
#include "activity/program.h"

struct activity;

/* Whether this build carries the program (make ACTIVITY=yes, or auto with clang and bpftool). */
bool activity_built(void);

/*
 * Loads the program and attaches each event with a name in names (NULL: not counted). Needs
 * CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN). Returns 0, -EOPNOTSUPP when not built in, or the
 * -errno of the step that failed, with the step in *ret_error (free()); whatever was attached
 * by then is detached again.
 */
int activity_start(const char *const names[_ACTIVITY_EVENT_MAX], struct activity **ret,
		   char **ret_error);
/* Every entry of the map, summed over the CPUs, into m (unsorted), and the dropped events. */
int activity_read(struct activity *a, struct activity_idmap *m);
/* Removes id's entry (a cgroup that is gone): 0, or -errno (-ENOENT: none). */
int activity_forget(struct activity *a, uint64_t id);
/* Detaches and unloads. NULL is fine. */
void activity_stop(struct activity *a);
