/* SPDX-License-Identifier: Apache-2.0 */
/*
 * skip: why a file was not counted, as every source of files/ says it and the snapshot counts
 * it (cachestat_files_skipped_total{reason}).
 */
#pragma once

/* Why a file was not counted: cachestat_files_skipped_total{reason}. */
enum skip_reason {
	SKIP_EPERM,       /* open or cachestat refused */
	SKIP_VANISHED,    /* gone between finding and opening it */
	SKIP_NOT_REGULAR, /* socket, pipe, device, directory entry that is a symlink... */
	SKIP_LIMIT,       /* over max_files_per_scan or max_files_per_cgroup, or no descriptor
			     left (RLIMIT_NOFILE) */
	SKIP_NOT_FOUND,   /* a configured path that does not exist */
	SKIP_UNSUPPORTED, /* cachestat says EOPNOTSUPP (hugetlbfs) */
	SKIP_ERROR,       /* any other error */
	SKIP_OVERLAY_UNRESOLVED, /* on overlayfs, and its real (upper or lower) file not found
				    for sure: its pages are there, not on the overlay inode */
	SKIP_NO_ACCESS,   /* the process holding it could not have asked cachestat about it */
	SKIP_FS_TYPE,     /* on a file system --collector.cachestat.fs-types-exclude names */
	SKIP_MOUNT_STUCK, /* on a mount a scan is stuck on (quarantine.h) */
	SKIP_PROCESS_CAP, /* once per process and scan: its descriptors or maps lines passed the
			     limits.max_descriptors_per_process or max_mappings_per_process cap, and
			     the rest of them was not read */
	SKIP_MOUNT_CAPPED, /* its mount namespace's table or its overlay over a cap (fstypes.h) */
	SKIP_PAGE_CAP,    /* the mincore method: over its pages per file or per scan */
	_SKIP_MAX,
};

const char *skip_reason_name(enum skip_reason r);
