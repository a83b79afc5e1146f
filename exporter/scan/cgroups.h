/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cgroups: the cgroup tree below --path.cgroupfs (cgroup v2, or the v1 memory hierarchy on a
 * hybrid host) and the processes of each cgroup. Never logs; returns -errno.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Deeper trees are cut here; systemd's own limit on nesting is far below. */
#define CGROUPS_MAX_DEPTH 64

/* What a visitor may return besides 0 (go on) and -errno (stop the walk, passed on). */
enum {
	CGROUPS_WALK_PRUNE = 1,      /* do not go below this cgroup */
	CGROUPS_WALK_PRUNE_REST = 2, /* nor below it, nor to its siblings not reached yet: the
				      * rest of its parent's directory is not read (a cap that bit
				      * costs one more directory entry, not the whole directory) */
};

/*
 * Called for every cgroup, depth first: parents before children, and each cgroup's whole subtree
 * before its next sibling (the subtree collector relies on it); dirfd is the cgroup's directory (valid
 * during the call only), label its path below the root ("/" for the root). Returns 0, a
 * CGROUPS_WALK_* value, or -errno, which stops the walk and is passed on.
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

/*
 * The path /proc/PID/cgroup gives (proccgroup.h) for the directory path (absolute, no link in
 * it) on mount mount_id of a mountinfo buffer: the mount's root in the hierarchy, then path
 * below its mount point. Both are relative to the reader's cgroup namespace, as mountinfo and
 * /proc/PID/cgroup print them. Returns 0 with a string the caller frees, -ENOMEDIUM when the
 * mount is not a cgroup file system, -ENOENT when mount_id is not in buf, -EINVAL, -ENOMEM.
 */
int cgroups_ns_path_of(const char *mountinfo, size_t len, int mount_id, const char *path,
		       char **ret);

/* cgroups_ns_path_of() for the directory root, with procfs_fd's self/mountinfo. -errno. */
int cgroups_ns_path(int procfs_fd, const char *root, char **ret);

/*
 * The /proc/PID/cgroup path of the cgroup labelled label ("/" or "/a/b") in a tree whose root
 * has the path root_path (cgroups_ns_path()). Returns a string the caller frees, or NULL.
 */
char *cgroups_label_path(const char *root_path, const char *label);

/* Whether fd is on a cgroup2 file system. */
bool cgroups_is_v2(int fd);

/* Where the cgroup v2 hierarchy is mounted, as libcgroup finds it; caller frees. -ENOENT if none. */
int cgroups_find_v2_mount(char **ret_path);

/* Whether cgroup.controllers (buf) lists controller. */
bool cgroups_controllers_has(const char *buf, size_t len, const char *controller);

enum cgroups_layout {
	CGROUPS_V2,        /* a cgroup v2 tree (or a directory walked as one) */
	CGROUPS_V1_MEMORY, /* the cgroup v1 memory hierarchy: memory.stat in v1's names */
};

/* The tree a scan walks; the cgroup label is the path below it. */
struct cgroups_root {
	char *path;
	enum cgroups_layout layout;
	char *note;     /* how the tree was chosen, for the caller to log; NULL: as asked.
			 * A reason, then its fields after tabs ("\tpath_cgroupfs=..."). */
	bool note_warn; /* the note is a warning: the tree may not be what was meant */
};

/*
 * Chooses the tree to walk from path (--path.cgroupfs; given: the flag was given):
 *  - a cgroup v2 mount with the memory controller, or the v1 memory hierarchy: itself;
 *  - given, a cgroup v2 or v1 tree without memory: itself, as asked;
 *  - a directory of hierarchies (/sys/fs/cgroup on a hybrid or v1 host; the host's, mounted
 *    into a container): the memory hierarchy in it ("memory") when the memory controller is
 *    not on its cgroup v2 tree ("unified"), else that cgroup v2 tree;
 *  - not given and nothing found that way: where libcgroup finds the memory controller and
 *    cgroup v2 mounted, the same way; then path as it is.
 * Returns 0 or -ENOMEM; the caller frees with cgroups_root_done().
 */
int cgroups_resolve_root(const char *path, bool given, struct cgroups_root *ret);
void cgroups_root_done(struct cgroups_root *root);
