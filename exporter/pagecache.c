/* SPDX-License-Identifier: Apache-2.0 */
#define _GNU_SOURCE
#include "pagecache.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util.h"

const char *pagecache_abi_name(enum pagecache_abi abi)
{
	switch (abi) {
	case PAGECACHE_ABI_SEED:
		return "seed";
	case PAGECACHE_ABI_MAINLINE:
		return "mainline";
	case PAGECACHE_ABI_NONE:
	default:
		return "none";
	}
}

static long call_seed(pagecache_syscall_fn sys, int fd, struct pagecache_cachestat *cs)
{
	return sys(PAGECACHE_NR_CACHESTAT, (unsigned long)(unsigned int)fd, 0L, 0UL,
		   (unsigned long)sizeof(*cs), cs);
}

static long call_mainline(pagecache_syscall_fn sys, int fd, struct pagecache_cachestat *cs)
{
	struct pagecache_range range = { .off = 0, .len = 0 };

	return sys(PAGECACHE_NR_CACHESTAT, (unsigned long)(unsigned int)fd, &range, cs, 0U);
}

int pagecache_probe(pagecache_syscall_fn sys, int probe_fd, struct pagecache *ret)
{
	struct pagecache_cachestat cs;
	int err;

	if (!sys)
		sys = syscall;
	*ret = (struct pagecache){ .abi = PAGECACHE_ABI_NONE, .sys = sys };

	/*
	 * The seed form first: a mainline-form call on a seed kernel returns 0 and writes
	 * nothing, so the order of the two calls is what keeps them from being mixed up.
	 */
	memset(&cs, 0, sizeof(cs));
	if (call_seed(sys, probe_fd, &cs) == 0) {
		ret->abi = PAGECACHE_ABI_SEED;
		return 0;
	}
	err = errno;
	if (err == ENOSYS)
		return 0;
	if (err != EFAULT && err != EINVAL)
		return -err;

	memset(&cs, 0, sizeof(cs));
	if (call_mainline(sys, probe_fd, &cs) == 0) {
		ret->abi = PAGECACHE_ABI_MAINLINE;
		return 0;
	}
	return -errno;
}

int pagecache_probe_default(struct pagecache *ret)
{
	_cleanup_close_ int fd = -1;

	fd = memfd_create("cachestat-probe", MFD_CLOEXEC);
	if (fd < 0)
		fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		*ret = (struct pagecache){ .abi = PAGECACHE_ABI_NONE, .sys = syscall };
		return -errno;
	}
	return pagecache_probe(NULL, fd, ret);
}

int pagecache_stat(const struct pagecache *pc, int fd, struct pagecache_cachestat *ret)
{
	struct pagecache_cachestat cs = { 0 };
	long r;

	switch (pc->abi) {
	case PAGECACHE_ABI_SEED:
		r = call_seed(pc->sys, fd, &cs);
		break;
	case PAGECACHE_ABI_MAINLINE:
		r = call_mainline(pc->sys, fd, &cs);
		break;
	case PAGECACHE_ABI_NONE:
	default:
		return -ENOSYS;
	}
	if (r < 0)
		return -errno;
	*ret = cs;
	return 0;
}
