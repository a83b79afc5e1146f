/* SPDX-License-Identifier: MIT */
/*
 * cgroups: the cgroup v2 tree below --path.cgroupfs and the processes of each cgroup.
 * Never logs; returns -errno.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Deeper trees are cut here; systemd's own limit on nesting is far below. */
#define CGROUPS_MAX_DEPTH 64

/*
 * Called for every cgroup, parents before children; dirfd is the cgroup's directory (valid
 * during the call only), label its path below the root ("/" for the root). A negative return
 * stops the walk and is passed on.
 */
typedef int (*cgroups_visit_fn)(int dirfd, const char *label, void *userdata);

/*
 * Walks the tree below root_fd. A cgroup removed during the walk is passed over. Returns 0,
 * the visitor's negative return, or -errno for the root itself.
 */
int cgroups_walk(int root_fd, cgroups_visit_fn visit, void *userdata);

/*
 * Parses cgroup.procs: one pid per line. A pid may appear twice (the kernel lists a process
 * again when it migrates during the read); duplicates are dropped. Returns 0 or -EINVAL/-ENOMEM.
 */
int cgroups_parse_procs(const char *buf, size_t len, pid_t **ret_pids, size_t *ret_n);

/* Reads and parses cgroup.procs of the cgroup at dirfd. */
int cgroups_read_procs(int dirfd, pid_t **ret_pids, size_t *ret_n);

/* Whether fd is on a cgroup2 file system. */
bool cgroups_is_v2(int fd);

/* Where the cgroup v2 hierarchy is mounted, as libcgroup finds it; caller frees. -ENOENT if none. */
int cgroups_find_v2_mount(char **ret_path);
