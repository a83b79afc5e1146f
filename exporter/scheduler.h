/* SPDX-License-Identifier: MIT */
/*
 * scheduler: when scans run and who shares them. Concurrent callers share the scan in
 * progress: the ones that arrive while it runs wait for it and get the same snapshot.
 */
#pragma once

#include <stdbool.h>

#include "collect.h"
#include "snapshot.h"

struct scheduler;

/* Scans with c (not owned). Returns 0 or -ENOMEM. */
int scheduler_new(struct collector *c, struct scheduler **ret);

/*
 * A fresh snapshot: from a scan this call starts, or from the one in progress. *ret_fresh says
 * whether this caller ran the scan (and should log its problem). Returns 0 or -ENOMEM.
 * The caller drops the snapshot with snapshot_unref().
 */
int scheduler_snapshot(struct scheduler *s, struct snapshot **ret, bool *ret_fresh);

void scheduler_free(struct scheduler *s);
