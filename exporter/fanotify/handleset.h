/* SPDX-License-Identifier: Apache-2.0 */
/*
 * handleset: the files each cgroup opened recently, as file handles (no descriptor is held, so a
 * deleted file is not kept alive), bounded and ordered by the time of their last open. A key is
 * (cgroup, file system id, handle); opening a file again moves it to the front. Over the cap of
 * its cgroup, or over the global cap, the least recently opened entry goes (of that cgroup, or
 * of all) and is counted; an entry older than the window is expired. Each entry also counts its
 * opens in the caller's current period (handleset_new_period()), which the listener's silencing
 * rule reads. Plain data, not thread safe (the caller locks), no system calls, never logs.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The largest handle kept (the kernel's MAX_HANDLE_SZ). */
#define HANDLESET_HANDLE_MAX 128

struct handleset_limits {
	size_t max_entries;    /* over all cgroups */
	size_t max_per_cgroup;
	uint64_t window_ns;    /* an entry expires this long after its last open */
};

/* What the opener could do with the file, recorded when the open was seen. */
struct handleset_creds {
	uint32_t fsuid;
	uint32_t fsgid;
	bool cap_fowner;
	bool cap_dac_override;
};

/* A handle as fanotify reports it: the file system's id and struct file_handle's fields. */
struct handleset_key {
	uint64_t fsid;
	int32_t type;
	uint32_t len; /* at most HANDLESET_HANDLE_MAX */
	const unsigned char *bytes;
};

/* A copy of one entry, for use outside the caller's lock. */
struct handleset_item {
	uint64_t fsid;
	int32_t type;
	uint32_t len;
	unsigned char bytes[HANDLESET_HANDLE_MAX];
	struct handleset_creds creds;
	uint64_t last_open_ns;
};

struct handleset_stats {
	size_t entries;
	size_t cgroups;
	uint64_t dropped_cgroup_cap; /* least recently opened of a cgroup over its cap */
	uint64_t dropped_global_cap; /* least recently opened of all, over the global cap */
	uint64_t expired;            /* older than the window */
};

struct handleset;

/* Returns 0, -EINVAL for a limit of 0, -ENOMEM. */
int handleset_new(const struct handleset_limits *lim, struct handleset **ret);
void handleset_free(struct handleset *hs);

/*
 * An open of the file key by a process of cgroup (its label, e.g. "/system.slice/a.service") at
 * now_ns: a new entry, or the entry moved to the front with these creds. Drops what the caps
 * require. *ret_period_opens (may be NULL): the entry's opens in the current period, this one
 * included (1 for a new entry; saturates at UINT16_MAX). Returns 0, -EINVAL (a handle too long),
 * -ENOMEM.
 */
int handleset_note(struct handleset *hs, const char *cgroup, const struct handleset_key *key,
		   const struct handleset_creds *creds, uint64_t now_ns, unsigned *ret_period_opens);

/* Starts a new period: every entry's count of opens in the period starts again from 0. O(1). */
void handleset_new_period(struct handleset *hs);

/* Drops the entries whose last open is older than the window at now_ns; returns how many. */
size_t handleset_expire(struct handleset *hs, uint64_t now_ns);

/*
 * The entries of cgroup not older than the window at now_ns, most recently opened first, into
 * a new array (caller frees; NULL with 0 entries). Returns 0 or -ENOMEM.
 */
int handleset_cgroup_items(const struct handleset *hs, const char *cgroup, uint64_t now_ns,
			   struct handleset_item **ret, size_t *ret_n);

void handleset_get_stats(const struct handleset *hs, struct handleset_stats *ret);
