/* SPDX-License-Identifier: MIT */
/*
 * Why most of this reads cgroupfs directly rather than through libcgroup (2.0 in bookworm):
 * libcgroup resolves a cgroup by name against the hierarchies it found in /proc/mounts at
 * cgroup_init(), so it cannot walk the tree that --path.cgroupfs names when that is not such a
 * mount (a host hierarchy bind-mounted into a container, a test tree). Its walk
 * (cgroup_walk_tree_*) hands back absolute path strings from fts(3); here each directory is
 * opened relative to its parent's fd, so a cgroup removed mid-walk costs one ENOENT, symlinks are
 * never followed, and memory.stat and cgroup.procs are read through the same fd.
 * libcgroup does serve to find where cgroup v2 is mounted (its "cgroup" pseudo-controller),
 * which on a hybrid host is not /sys/fs/cgroup.
 */
#define _GNU_SOURCE
#include "cgroups.h"

#include <errno.h>
#include <fcntl.h>
#include <libcgroup.h>
#include <linux/magic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include "util.h"

static int walk_dir(int dirfd, char *label, size_t len, size_t cap, unsigned depth,
		    cgroups_visit_fn visit, void *userdata)
{
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *de;
	int r, fd;

	r = visit(dirfd, label, userdata);
	if (r < 0)
		return r;
	if (depth >= CGROUPS_MAX_DEPTH)
		return 0;

	fd = dup(dirfd);
	if (fd < 0)
		return 0;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return 0;
	}
	/* a dup shares the offset with dirfd, which may have been read before */
	rewinddir(d);
	while ((de = readdir(d))) {
		_cleanup_close_ int child = -1;
		size_t n = strlen(de->d_name);

		if (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN)
			continue;
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		/* room for "/" + name + NUL */
		if (len + 1 + n + 1 > cap)
			continue;
		child = openat(dirfd, de->d_name,
			       O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
		if (child < 0)
			continue; /* removed meanwhile, or not a directory */
		if (len == 1) { /* the root's label is "/" */
			memcpy(label + 1, de->d_name, n + 1);
			r = walk_dir(child, label, 1 + n, cap, depth + 1, visit, userdata);
		} else {
			label[len] = '/';
			memcpy(label + len + 1, de->d_name, n + 1);
			r = walk_dir(child, label, len + 1 + n, cap, depth + 1, visit, userdata);
		}
		label[len] = '\0';
		if (len == 1)
			label[1] = '\0';
		if (r < 0)
			return r;
	}
	return 0;
}

int cgroups_walk(int root_fd, cgroups_visit_fn visit, void *userdata)
{
	/* Labels are bounded by PATH_MAX like any path below the mount. */
	_cleanup_free_ char *label = malloc(4096);
	struct stat st;

	if (!label)
		return -ENOMEM;
	if (fstat(root_fd, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	strcpy(label, "/");
	return walk_dir(root_fd, label, 1, 4096, 0, visit, userdata);
}

static int pid_cmp(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

int cgroups_parse_procs(const char *buf, size_t len, pid_t **ret_pids, size_t *ret_n)
{
	_cleanup_free_ pid_t *pids = NULL;
	size_t n = 0, cap = 0, out;
	const char *p = buf, *end = buf + len;

	while (p < end) {
		uint64_t v = 0;
		const char *start = p;

		if (*p == '\n') {
			p++;
			continue;
		}
		while (p < end && *p >= '0' && *p <= '9') {
			v = v * 10 + (uint64_t)(*p - '0');
			if (v > INT32_MAX)
				return -EINVAL;
			p++;
		}
		if (p == start || (p < end && *p != '\n') || v == 0)
			return -EINVAL;
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			pid_t *t = realloc(pids, ncap * sizeof(*t));

			if (!t)
				return -ENOMEM;
			pids = t;
			cap = ncap;
		}
		pids[n++] = (pid_t)v;
	}
	if (n > 1)
		qsort(pids, n, sizeof(*pids), pid_cmp);
	out = 0;
	for (size_t i = 0; i < n; i++)
		if (out == 0 || pids[out - 1] != pids[i])
			pids[out++] = pids[i];
	*ret_pids = TAKE_PTR(pids);
	*ret_n = out;
	return 0;
}

int cgroups_read_procs(int dirfd, pid_t **ret_pids, size_t *ret_n)
{
	_cleanup_free_ char *buf = NULL;
	size_t len;
	int r;

	r = read_file_at(dirfd, "cgroup.procs", &buf, &len);
	if (r < 0)
		return r;
	return cgroups_parse_procs(buf, len, ret_pids, ret_n);
}

bool cgroups_is_v2(int fd)
{
	struct statfs sfs;

	return fstatfs(fd, &sfs) == 0 && sfs.f_type == CGROUP2_SUPER_MAGIC;
}

int cgroups_find_v2_mount(char **ret_path)
{
	struct cgroup_file_info info;
	void *handle = NULL;
	int base_level, r;
	char *path;
	size_t n;

	if (cgroup_init() != 0)
		return -ENOENT;
	/* "cgroup" is libcgroup's name for the v2 hierarchy itself; depth 1 stops at the root. */
	r = cgroup_walk_tree_begin("cgroup", "/", 1, &handle, &info, &base_level);
	if (r != 0 || !info.full_path) {
		if (handle)
			cgroup_walk_tree_end(&handle);
		return -ENOENT;
	}
	path = strdup(info.full_path);
	cgroup_walk_tree_end(&handle);
	if (!path)
		return -ENOMEM;
	n = strlen(path);
	while (n > 1 && path[n - 1] == '/')
		path[--n] = '\0';
	*ret_path = path;
	return 0;
}
