/* SPDX-License-Identifier: Apache-2.0 */
#define _GNU_SOURCE
#include "base/pagecache.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/util.h"

const char *pagecache_abi_name(enum pagecache_abi abi)
{
	switch (abi) {
	case PAGECACHE_ABI_SEED:
		return "seed";
	case PAGECACHE_ABI_MAINLINE:
		return "mainline";
	case PAGECACHE_ABI_BOTH:
		return "both";
	case PAGECACHE_ABI_MINCORE:
		return "mincore";
	case PAGECACHE_ABI_NONE:
	default:
		return "none";
	}
}

int pagecache_method_parse(const char *s, enum pagecache_method *ret)
{
	if (strcmp(s, "auto") == 0)
		*ret = PAGECACHE_METHOD_AUTO;
	else if (strcmp(s, "cachestat") == 0)
		*ret = PAGECACHE_METHOD_CACHESTAT;
	else if (strcmp(s, "mincore") == 0)
		*ret = PAGECACHE_METHOD_MINCORE;
	else
		return -EINVAL;
	return 0;
}

bool pagecache_measures(enum pagecache_abi abi, unsigned f)
{
	return abi != PAGECACHE_ABI_MINCORE || f == 0;
}

enum pagecache_abi pagecache_select(enum pagecache_method method, enum pagecache_abi abi,
				    int probe_err)
{
	switch (method) {
	case PAGECACHE_METHOD_MINCORE:
		return PAGECACHE_ABI_MINCORE;
	case PAGECACHE_METHOD_AUTO:
		if (abi == PAGECACHE_ABI_NONE && probe_err == 0)
			return PAGECACHE_ABI_MINCORE;
		return abi;
	case PAGECACHE_METHOD_CACHESTAT:
	default:
		return abi;
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

/*
 * A mainline-form call that really wrote the struct: on a seed-only kernel the same call is a
 * seed-form call with cstat_size 0, which succeeds and writes nothing. Returns 1 if it wrote,
 * 0 if it did not, -errno if it failed.
 */
static int mainline_form_writes(pagecache_syscall_fn sys, int fd)
{
	struct pagecache_cachestat cs;

	/* No page count is ever UINT64_MAX: any real answer replaces this pattern. */
	memset(&cs, 0xff, sizeof(cs));
	if (call_mainline(sys, fd, &cs) < 0)
		return -errno;
	return cs.nr_cache != UINT64_MAX;
}

int pagecache_probe(pagecache_syscall_fn sys, int probe_fd, struct pagecache *ret)
{
	struct pagecache_cachestat cs;
	bool seed;
	int r;

	if (!sys)
		sys = syscall;
	*ret = (struct pagecache){ .abi = PAGECACHE_ABI_NONE, .sys = sys };

	/* The seed form first: it is the one that fails cleanly on the other kernels. */
	memset(&cs, 0, sizeof(cs));
	seed = call_seed(sys, probe_fd, &cs) == 0;
	if (!seed) {
		r = errno;
		if (r == ENOSYS)
			return 0;
		if (r != EFAULT && r != EINVAL)
			return -r;
	}

	r = mainline_form_writes(sys, probe_fd);
	if (seed) {
		/* A seed kernel may refuse the pointer-sized off of the second call. */
		ret->abi = r > 0 ? PAGECACHE_ABI_BOTH : PAGECACHE_ABI_SEED;
		return 0;
	}
	if (r < 0)
		return r;
	if (r == 0)
		return -EIO; /* refuses the seed form, yet writes nothing in mainline's */
	ret->abi = PAGECACHE_ABI_MAINLINE;
	return 0;
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
	case PAGECACHE_ABI_BOTH:
		r = call_mainline(pc->sys, fd, &cs);
		break;
	case PAGECACHE_ABI_NONE:
	case PAGECACHE_ABI_MINCORE: /* files/mincore.h measures */
	default:
		return -ENOSYS;
	}
	if (r < 0)
		return -errno;
	*ret = cs;
	return 0;
}
