/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fstypes: which files sit on a file system the scan must not touch (network and FUSE file
 * systems, by default: a stopped FUSE daemon or a dead NFS server makes every stat, open,
 * cachestat and close of their files wait). The type comes from mountinfo, looked up by mount
 * id (statx's STATX_MNT_ID, which asks nothing of the file system) or by the longest mount
 * point that is a prefix of a configured path, and is matched against a regex, as
 * node_exporter's --collector.filesystem.fs-types-exclude. An overlay is excluded when one of its
 * layers is (overlayfs asks the file system below on every open). Never logs.
 */
#pragma once

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Network file systems and FUSE (and virtiofs, served by a daemon on the host). */
#define FSTYPES_DEFAULT_EXCLUDE                                                              \
	"^(fuse|fuseblk|fuse\\..*|virtiofs|nfs|nfs4|cifs|smb3|smbfs|9p|ceph|glusterfs|lustre|" \
	"afs|ncpfs|coda|davfs|gfs2|ocfs2|orangefs|beegfs|gpfs)$"

struct fstypes_table;

struct fstypes_mount {
	uint64_t mnt_id;
	bool excluded;
	char *point; /* mount point, unescaped; NULL for mounts of other namespaces */
};

struct fstypes {
	regex_t exclude;
	bool active;
	bool rules_shared; /* a scan's copy (fstypes_scan_init()): the regex is its rules' */
	/* per scan: the mounts seen, sorted by mnt_id */
	struct fstypes_mount *mounts;
	size_t n, cap;
	bool loaded_self;
	/* the host's mount table (pid 1's): where container runtimes mount overlays' layers */
	struct fstypes_table *host;
	/* the kernel's internal tmpfs mount (memfd, SysV shm, shared /dev/zero), in no mountinfo */
	uint64_t shm_mnt_id;
	bool shm_known;
};

/*
 * Compiles the exclusion regex (POSIX extended, anchored by the caller as it likes); NULL or
 * "" excludes nothing. Finds the kernel's internal tmpfs mount through a memfd of its own.
 * Returns 0 or -EINVAL.
 */
int fstypes_init(struct fstypes *f, const char *regex);
void fstypes_done(struct fstypes *f);

/*
 * A scan's own copy of rules: the same exclusion (the compiled regex shared, which regexec()
 * allows) and an empty mount cache of its own, so that a scan left behind and the one after it
 * never share one. Freed with fstypes_scan_done(), before rules are.
 */
void fstypes_scan_init(struct fstypes *scan, const struct fstypes *rules);
void fstypes_scan_done(struct fstypes *scan);

/* Forgets the mounts, for the next scan (mounts come and go). */
void fstypes_reset(struct fstypes *f);

/* Whether the name of a file system type is excluded. */
bool fstypes_name_excluded(const struct fstypes *f, const char *fstype);

/*
 * Parses mountinfo and adds its mounts; with_points keeps the mount points (for paths of our
 * own namespace). An overlay is excluded when a layer lies on an excluded mount of this table or
 * of the host's (fstypes_set_host_mountinfo() first), or cannot be placed by its name (relative,
 * ".." in it) or its options not read. Returns 0 or -ENOMEM; malformed lines are passed over.
 */
int fstypes_add_mountinfo(struct fstypes *f, const char *buf, size_t len, bool with_points);

/*
 * Keeps the host's mountinfo (pid 1's), until fstypes_reset(), to place the layers of overlays
 * that container runtimes mounted there. Returns 0 or -ENOMEM.
 */
int fstypes_set_host_mountinfo(struct fstypes *f, const char *buf, size_t len);

/*
 * Whether the mount mnt_id is excluded: 1 yes, 0 no, -ENOENT when it is not known (the caller
 * loads the mountinfo of the process that holds the file and asks again).
 */
int fstypes_mount_excluded(const struct fstypes *f, uint64_t mnt_id);

/* Whether the absolute path lies on an excluded mount of our namespace (its longest mount
 * point prefix). False when nothing is known. */
bool fstypes_path_excluded(const struct fstypes *f, const char *path);

/* The id of the mount of our namespace that the absolute path lies on; UINT64_MAX if unknown. */
uint64_t fstypes_path_mount(const struct fstypes *f, const char *path);
