/* SPDX-License-Identifier: Apache-2.0 */
/* skip: the names of the reasons a file was not counted, the values of the reason label. */
#include "files/skip.h"

#include <stddef.h>

static const char *const skip_names[_SKIP_MAX] = {
	[SKIP_EPERM] = "eperm",
	[SKIP_VANISHED] = "vanished",
	[SKIP_NOT_REGULAR] = "not_regular",
	[SKIP_LIMIT] = "limit",
	[SKIP_NOT_FOUND] = "not_found",
	[SKIP_UNSUPPORTED] = "unsupported",
	[SKIP_ERROR] = "error",
	[SKIP_OVERLAY_UNRESOLVED] = "overlay_unresolved",
	[SKIP_NO_ACCESS] = "no_access",
	[SKIP_FS_TYPE] = "fs_type",
	[SKIP_MOUNT_STUCK] = "mount_stuck",
	[SKIP_PROCESS_CAP] = "process_cap",
	[SKIP_MOUNT_CAPPED] = "mount_capped",
	[SKIP_PAGE_CAP] = "page_cap",
};

const char *skip_reason_name(enum skip_reason r)
{
	return r < _SKIP_MAX ? skip_names[r] : NULL;
}
