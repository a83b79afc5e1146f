/* SPDX-License-Identifier: Apache-2.0 */
#define _GNU_SOURCE
#include "files/admit.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "files/fileset.h"
#include "files/overlay.h"
#include "files/source.h"

int files_stat_opath(int fd, struct stat *st, uint64_t *ret_mnt_id)
{
	struct statx sx;

	if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC,
		  STATX_TYPE | STATX_MODE | STATX_UID | STATX_GID | STATX_INO | STATX_SIZE |
			  STATX_MNT_ID,
		  &sx) < 0)
		return -errno;
	*st = (struct stat){
		.st_dev = makedev(sx.stx_dev_major, sx.stx_dev_minor),
		.st_ino = sx.stx_ino,
		.st_mode = sx.stx_mode,
		.st_uid = sx.stx_uid,
		.st_gid = sx.stx_gid,
		.st_size = (off_t)sx.stx_size,
		.st_blksize = (blksize_t)sx.stx_blksize, /* always filled: the mincore method reads it */
	};
	*ret_mnt_id = (sx.stx_mask & STATX_MNT_ID) ? sx.stx_mnt_id : UINT64_MAX;
	return 0;
}

int files_claim(struct files_ctx *ctx, const struct stat *st, const struct stat *claimed)
{
	if (!claimed)
		return fileset_add(&ctx->seen, (uint64_t)st->st_dev, (uint64_t)st->st_ino);
	if (st->st_dev != claimed->st_dev || st->st_ino != claimed->st_ino) {
		files_skip(ctx, SKIP_VANISHED);
		return 0;
	}
	return 1;
}

/*
 * Whether pfd (st) is the object the source saw (a->want): the object whose permission the
 * source judged. A mapping's address can be given another file between the read of maps and
 * the open of map_files, one with the same inode number on another device, so the device is
 * compared too, but on overlayfs reached through map_files, where maps may print the device
 * of the layer's file (kernels before backing files) and the inode number alone is left. The
 * device is compared after the exclusion step: telling overlayfs costs a statfs(), which must
 * not be asked of an excluded (network, FUSE) file system.
 */
static bool admit_same_object(const struct files_admission *a, const struct stat *st)
{
	if ((uint64_t)st->st_ino != (uint64_t)a->want->st_ino)
		return false;
	if (st->st_dev == a->want->st_dev)
		return true;
	return !a->want_dev && overlay_is_overlay(a->pfd, st);
}

/* Steps 1 to 3: 1 with the stat and mount id of a/pfd when it may go on, else 0, skip counted. */
static int admit_file(struct files_ctx *ctx, const struct files_admission *a, struct stat *st,
		      uint64_t *mnt_id)
{
	enum skip_reason why;

	if (a->pfd < 0) {
		errno = -a->pfd; /* for the skip hook */
		files_skip(ctx, files_skip_reason_of(-a->pfd));
		return 0;
	}
	if (files_stat_opath(a->pfd, st, mnt_id) < 0) {
		files_skip(ctx, files_skip_reason_of(errno));
		return 0;
	}
	if (!S_ISREG(st->st_mode)) { /* a socket, pipe or device: never reopened */
		files_skip(ctx, SKIP_NOT_REGULAR);
		return 0;
	}
	why = files_mount_skip(ctx, a->piddir, *mnt_id);
	if (why != _SKIP_MAX) {
		files_skip(ctx, why);
		return 0;
	}
	if (a->want && !admit_same_object(a, st)) {
		files_skip(ctx, SKIP_VANISHED);
		return 0;
	}
	return 1;
}

/* Step 4: 1 when the cgroup counts the file now, 0 when not (skip counted), -ENOMEM. */
static int admit_claim(struct files_ctx *ctx, const struct files_admission *a,
		       const struct stat *st, uint64_t mnt_id)
{
	int r;

	if (a->claimed)
		return files_claim(ctx, st, a->claimed);
	/* counted already: nothing more is asked of the process */
	if (fileset_contains(&ctx->seen, (uint64_t)st->st_dev, (uint64_t)st->st_ino))
		return 0;
	if (a->may && !a->may(ctx, st, mnt_id, a->may_arg))
		return 0;
	r = fileset_add(&ctx->seen, (uint64_t)st->st_dev, (uint64_t)st->st_ino);
	if (r <= 0 || !a->want)
		return r;
	r = fileset_add(&ctx->seen, (uint64_t)a->want->st_dev, (uint64_t)a->want->st_ino);
	return r < 0 ? r : 1;
}

int files_admit(struct files_ctx *ctx, const struct files_admission *a)
{
	uint64_t mnt_id;
	struct stat st;
	int r;

	if (!admit_file(ctx, a, &st, &mnt_id))
		return 0;
	r = admit_claim(ctx, a, &st, mnt_id);
	if (r <= 0)
		return r;
	return files_visit_watched(ctx, mnt_id, a->pfd, &st, a->path, a->proc_link);
}
