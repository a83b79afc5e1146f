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
struct fstypes_cache;

/* The tables kept between scans: at most so many namespaces and so many bytes of mountinfo. */
#define FSTYPES_CACHE_MAX_TABLES 64
#define FSTYPES_CACHE_MAX_BYTES (16u << 20)

/* Defaults of the caps on one mount namespace's table and on one overlay (fstypes_limits). */
#define FSTYPES_DEFAULT_MAX_MOUNTS 10000
#define FSTYPES_DEFAULT_MAX_MOUNTINFO_BYTES (8u << 20)
#define FSTYPES_DEFAULT_MAX_LAYERS 128

/* The caps: cachestat_scan_mounts_capped_total{cap}. */
enum fstypes_cap {
	FSTYPES_CAP_MOUNTS, /* mountinfo entries of one namespace */
	FSTYPES_CAP_BYTES,  /* mountinfo bytes of one namespace */
	FSTYPES_CAP_LAYERS, /* layers of one overlay */
	_FSTYPES_CAP_MAX,
};

/*
 * What a tenant's mount namespace may cost a scan: a table past max_mounts entries or
 * max_bytes bytes is not judged (its mounts' files are skipped as mount_capped), nor an overlay
 * of more than max_layers layers. 0 takes the default.
 */
struct fstypes_limits {
	size_t max_mounts;
	size_t max_bytes;
	size_t max_layers;
};

/* A mount judged this scan, in an open-addressing table by mnt_id. */
struct fstypes_judged {
	uint64_t mnt_id; /* UINT64_MAX: a free slot */
	int verdict;     /* as fstypes_mount_excluded() returns it */
};

struct fstypes {
	regex_t exclude;
	bool active;
	bool rules_shared; /* a scan's copy (fstypes_scan_init()): the regex is its rules' */
	/* the rules': parsed tables by namespace, kept across scans while their text is the same */
	struct fstypes_cache *cache;
	struct fstypes_limits lim;
	/* per scan: the verdicts given, the tables read (host, ours, then the holders') */
	struct fstypes_judged *judged;
	size_t n_judged, cap_judged;
	struct fstypes_table **tables;
	size_t n_tables;
	bool loaded_self;
	/* the host's mount table (pid 1's): where container runtimes mount overlays' layers */
	struct fstypes_table *host;
	struct fstypes_table *self; /* our namespace's, for configured paths */
	uint64_t deadline_ns;       /* CLOCK_MONOTONIC; 0: none. Checked in every loop over lines */
	bool timed_out;             /* the deadline passed inside a table or an overlay */
	uint64_t capped[_FSTYPES_CAP_MAX]; /* per scan: tables and overlays a cap bit on */
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

/* Sets the caps (0s: the defaults), for this and the scans' copies made after. */
void fstypes_set_limits(struct fstypes *f, const struct fstypes_limits *lim);
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
 * Adds a mount table (ns_ino: its namespace's inode, 0 if unknown), indexed by mount id and by
 * mount point and judged lazily, mount by mount as fstypes_mount_excluded() asks: an overlay is
 * excluded when a layer lies on an excluded mount of this table or of the host's
 * (fstypes_set_host_mountinfo() first), or cannot be placed by its name (relative, ".." in it)
 * or its options not read. with_points: our own namespace's, for fstypes_path_*(). A buffer
 * longer than max_bytes (only so much is read) or of more than max_mounts lines marks the table
 * capped. A table is kept across scans (the rules' cache, shared by their scans' copies) for
 * its namespace ns_ino while that namespace's mountinfo is the same text. Returns 0, -ETIME
 * past the deadline, or -ENOMEM; malformed lines are passed over.
 */
int fstypes_add_mountinfo_ns(struct fstypes *f, const char *buf, size_t len, uint64_t ns_ino,
			     bool with_points);
int fstypes_add_mountinfo(struct fstypes *f, const char *buf, size_t len, bool with_points);

/* Whether this scan read the table of the namespace ns_ino; 1 yes (-E2BIG: capped), 0 no. */
int fstypes_has_ns(const struct fstypes *f, uint64_t ns_ino);

/*
 * Keeps the host's mountinfo (pid 1's), until fstypes_reset(), to place the layers of overlays
 * that container runtimes mounted there. Returns 0 or -ENOMEM.
 */
int fstypes_set_host_mountinfo(struct fstypes *f, const char *buf, size_t len);
int fstypes_set_host_mountinfo_ns(struct fstypes *f, const char *buf, size_t len,
				  uint64_t ns_ino);

/*
 * Whether the mount mnt_id is excluded: 1 yes, 0 no, -ENOENT when it is not known (the caller
 * loads the mountinfo of the process that holds the file and asks again), -E2BIG when its table
 * or its overlay is over a cap, -ETIME when the deadline passed while judging it. The verdict
 * is kept for the scan.
 */
int fstypes_mount_excluded(struct fstypes *f, uint64_t mnt_id);

/* Whether the absolute path lies on an excluded mount of our namespace (its longest mount
 * point prefix). False when nothing is known. */
bool fstypes_path_excluded(struct fstypes *f, const char *path);

/* The id of the mount of our namespace that the absolute path lies on; UINT64_MAX if unknown. */
uint64_t fstypes_path_mount(const struct fstypes *f, const char *path);
