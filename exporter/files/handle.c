/* SPDX-License-Identifier: Apache-2.0 */
/*
 * handle: a file known by a handle (fanotify's, fanotify/handleset.h), opened O_PATH through the
 * mount descriptor the handle is of and admitted as a file a process opened (admit.h), by the
 * rule for a path it opened: there is no descriptor to tell its open mode.
 */
#define _GNU_SOURCE
#include "files/files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>

#include "base/util.h"
#include "files/admit.h"
#include "files/source.h"

/* The permission step: owner, write permission or the capabilities (creds_may_cachestat()). */
static int handle_may_cachestat(struct files_ctx *ctx, const struct stat *st, uint64_t mnt_id,
				const void *creds)
{
	(void)mnt_id;
	if (!creds_may_cachestat(creds, O_RDONLY, st)) {
		files_skip(ctx, SKIP_NO_ACCESS);
		return 0;
	}
	return 1;
}

int files_scan_handle(struct files_ctx *ctx, int mount_fd, struct file_handle *fh,
		      const struct creds *creds)
{
	_cleanup_close_ int pfd = -1;
	char link[32];
	struct files_admission a = {
		.piddir = -1,
		.may = handle_may_cachestat,
		.may_arg = creds,
		.proc_link = link,
	};

	ctx->pid = 0;
	if (!files_charge(ctx))
		return 0;
	pfd = open_by_handle_at(mount_fd, fh, O_PATH | O_CLOEXEC);
	a.pfd = pfd >= 0 ? pfd : -errno;
	snprintf(link, sizeof(link), "thread-self/fd/%d", pfd);
	return files_admit(ctx, &a);
}
