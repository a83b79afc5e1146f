/* SPDX-License-Identifier: Apache-2.0 */
/*
 * overlay: finds the real file behind a file on overlayfs. cachestat(2) on an overlayfs file
 * asks the overlay inode, whose mapping is empty: the page cache is on the upper or lower inode
 * that overlayfs passes reads to. Given the descriptor the exporter holds and the path the
 * process sees, this finds that inode through the mount's layers, the way overlayfs' own
 * lookup goes (whiteouts, opaque and redirected directories, metacopy and data-only layers),
 * checks that it is the same file and not a namesake, and opens it. Never logs.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

/*
 * Whether a mount's lookups read an overlay xattr: overlayfs follows a redirect or a metacopy
 * xattr only where the mount enables it, and an unprivileged user can set user.overlay.* on its
 * own files at any time. Following one the kernel ignores would measure a file the process cannot
 * read (a page-cache oracle), so UNKNOWN is treated as NO wherever following could matter.
 */
enum overlay_follow { OVERLAY_FOLLOW_UNKNOWN, OVERLAY_FOLLOW_NO, OVERLAY_FOLLOW_YES };

/* The layers of an overlayfs mount, as its super options in mountinfo name them. */
struct overlay_layers {
	char *upper;  /* NULL for a read-only overlay */
	char **lower; /* top first: the layers that path lookups go through */
	size_t n_lower;
	char **data; /* data-only layers ("::" or datadir+): reached by a metacopy redirect only */
	size_t n_data;
	bool userxattr; /* the overlay's xattrs are user.overlay.*, not trusted.overlay.* */
	enum overlay_follow redirect; /* redirect_dir=: on and follow follow, nofollow and off do not */
	enum overlay_follow metacopy; /* metacopy= */
};

/*
 * Reads the layers from an overlay's super options as mountinfo prints them (still escaped):
 * "lowerdir=" (":"-separated, "::" before the data-only ones, "\" escaping ":" and ","),
 * "lowerdir+=" and "datadir+=" (one layer each, literal), "upperdir=". Returns 0, -EINVAL
 * (no lower layer, a bad escape, an empty layer), -ENOMEM. ret is untouched on failure.
 */
int overlay_parse_layers(const char *super_options, struct overlay_layers *ret);

/*
 * What the kernel follows on the mount whose layers are l, given its options and the overlay
 * module's defaults for the options mountinfo does not show (the kernel prints redirect_dir= and
 * metacopy= only where they differ from the defaults): redirect_dir_def, redirect_always_follow
 * and metacopy_def are the module parameters (OVERLAY_FOLLOW_UNKNOWN where unreadable). userxattr
 * mounts never follow either (the kernel forces redirect_dir=nofollow and metacopy=off), and
 * metacopy needs redirects followed.
 */
void overlay_layers_policy(struct overlay_layers *l, enum overlay_follow redirect_dir_def,
			   enum overlay_follow redirect_always_follow, enum overlay_follow metacopy_def);
void overlay_layers_done(struct overlay_layers *l);

/* The layer roots a lookup goes through, open (O_PATH directories). */
struct overlay_stack {
	const int *fds; /* the upper layer (when there is one), the lowers top first, then data-only */
	const dev_t *dev; /* the device of each (NULL: overlay_lookup() fstat()s them) */
	size_t n_merge; /* upper + lowers: path lookups go through these */
	size_t n;       /* all of them */
	bool upper;     /* fds[0] is the upper layer */
	bool userxattr;
	enum overlay_follow redirect; /* OVERLAY_FOLLOW_YES: directories' redirects are followed */
	enum overlay_follow metacopy; /* OVERLAY_FOLLOW_YES: metacopy files' data is looked up below */
};

/*
 * Finds the real file of relpath (relative to the overlay's root, "a/b/file") in the layers,
 * the file that overlayfs reads the data of, and checks it against ovl, the overlay file's
 * fstat (see overlay.c: size, mtime, mode, blocks, inode number). On success returns 0 and
 * the real file open O_RDONLY|O_NONBLOCK|O_NOCTTY|O_CLOEXEC with its fstat. Returns -EXDEV when
 * the file cannot be found for sure, -ENOMEM.
 */
int overlay_lookup(const struct overlay_stack *s, const char *relpath, const struct stat *ovl,
		   int *ret_fd, struct stat *ret_st);

/* Whether fd (whose fstat is st) is a file on overlayfs. Costs a syscall only for anonymous devices. */
bool overlay_is_overlay(int fd, const struct stat *st);

/*
 * The overlay mounts a scan met, their layers open, so that the files of a mount share one
 * lookup of its mountinfo entry and one open of its layers, and the files of a directory one
 * step into it in each layer. Bounded: at most 8 mounts and 256 descriptors at once (the least
 * recently used mount is closed first), no mount of more than max_layers layers. A scan's own
 * (not shared between threads), freed at its end: a layer directory held open would keep its
 * file system busy.
 */
struct overlay_cache;

int overlay_cache_new(size_t max_layers, struct overlay_cache **ret);
void overlay_cache_free(struct overlay_cache *c);

/*
 * The real file behind fd, a file on overlayfs as process pid sees it at path (what
 * /proc/PID/fd/N or /proc/PID/map_files/... reads; pid 0: the exporter's own view, path as
 * it opened it). The mount comes from /proc/PID/mountinfo (the process's mount
 * namespace), the layers are opened through /proc/PID/root (an overlay mounted inside a
 * container), else through our own root, else /proc/1/root (a container's root file system,
 * whose layers the runtime named in the host's namespace); both are kept in c for the scan, by
 * mount namespace and mount (its unique id where the kernel has one: a mount id is given again
 * once its mount is gone, so an entry keyed by it is read again after a second). procfs_fd is
 * the procfs to read.
 *
 * Returns 0 with the real file open (O_RDONLY|O_NONBLOCK|O_NOCTTY|O_CLOEXEC) and its fstat in
 * ret_fd and ret_st: its (dev, ino) is the file's identity for deduplication (a copied-up
 * file is its upper inode; a lower file shared by two overlays is one inode). Errors:
 * -EXDEV: the real file could not be found for sure (cachestat_files_skipped_total
 *         {reason="overlay_unresolved"}; never count it as a zero),
 * -E2BIG: the overlay has more than max_layers layers (mount_capped),
 * -EMEDIUMTYPE: fd's mount is no overlay (the caller took it for one by its device alone),
 * -ESRCH: the process is gone (vanished),
 * -ENOMEM.
 */
int overlay_resolve(struct overlay_cache *c, int procfs_fd, pid_t pid, const char *path, int fd,
		    int *ret_fd, struct stat *ret_st);

/* statx(2)'s mount id that is never reused (Linux 6.8), where the headers lack it. */
#ifndef STATX_MNT_ID_UNIQUE
#define STATX_MNT_ID_UNIQUE 0x00004000U
#endif

/*
 * What overlay_resolve_at() needs of a statx: the checks' fields and the mount (its unique id
 * where the kernel has one, else its id).
 */
extern const unsigned int overlay_statx_mask;

struct statx;

/*
 * overlay_resolve() for a file found by name in dirfd (whose fstat is dir), a directory of our
 * own view on the overlay, at path: from stx, the name's statx (overlay_statx_mask), with no
 * descriptor of the file itself. Opening an overlay file has overlayfs open its real file too,
 * the open the resolver makes anyway.
 */
int overlay_resolve_at(struct overlay_cache *c, int procfs_fd, int dirfd, const struct stat *dir,
		       const char *path, const struct statx *stx, int *ret_fd, struct stat *ret_st);
