/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Why most of this reads cgroupfs directly rather than through libcgroup (2.0 in bookworm):
 * libcgroup resolves a cgroup by name against the hierarchies it found in /proc/mounts at
 * cgroup_init(), so it cannot walk the tree that --path.cgroupfs names when that is not such a
 * mount (a host hierarchy bind-mounted into a container, a test tree). Its walk
 * (cgroup_walk_tree_*) hands back absolute path strings from fts(3); here each directory is
 * opened relative to its parent's fd, so a cgroup removed mid-walk costs one ENOENT, symlinks are
 * never followed, and memory.stat and cgroup.procs are read through the same fd.
 * libcgroup does serve to find where cgroup v2 and the memory controller are mounted when
 * --path.cgroupfs does not say (its "cgroup" pseudo-controller is the v2 hierarchy).
 */
#define _GNU_SOURCE
#include "scan/cgroups.h"

#include <errno.h>
#include <fcntl.h>
#include <libcgroup.h>
#include <linux/magic.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "base/util.h"
#include "parse/mountinfo.h"

static int walk_dir(int dirfd, char *label, size_t len, size_t cap, unsigned depth,
		    cgroups_visit_fn visit, void *userdata)
{
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *de;
	int r, fd;

	r = visit(dirfd, label, userdata);
	if (r != 0)
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
		if (r == CGROUPS_WALK_PRUNE_REST)
			break;
	}
	return 0;
}

int cgroups_walk(int root_fd, cgroups_visit_fn visit, void *userdata)
{
	/* Labels are bounded by PATH_MAX like any path below the mount. */
	_cleanup_free_ char *label = malloc(4096);
	struct stat st;
	int r;

	if (!label)
		return -ENOMEM;
	if (fstat(root_fd, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	strcpy(label, "/");
	r = walk_dir(root_fd, label, 1, 4096, 0, visit, userdata);
	return r < 0 ? r : 0;
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

int cgroups_ns_path_of(const char *mountinfo, size_t len, int mount_id, const char *path,
		       char **ret)
{
	struct mountinfo m;
	const char *root;
	size_t k;
	int r;

	r = mountinfo_find(mountinfo, len, mount_id, &m);
	if (r < 0)
		return r;
	k = strcmp(m.mount_point, "/") == 0 ? 0 : strlen(m.mount_point);
	if (strcmp(m.fstype, "cgroup2") != 0 && strcmp(m.fstype, "cgroup") != 0)
		r = -ENOMEDIUM;
	else if (m.root[0] != '/' || strncmp(path, m.mount_point, k) != 0 ||
		 (path[k] != '/' && path[k] != '\0'))
		r = -EINVAL;
	if (r == 0) {
		root = strcmp(m.root, "/") == 0 ? "" : m.root;
		if (asprintf(ret, "%s%s", root, path + k) < 0)
			r = -ENOMEM;
		else if (!**ret) {
			free(*ret);
			*ret = strdup("/");
			r = *ret ? 0 : -ENOMEM;
		}
	}
	mountinfo_done(&m);
	return r;
}

int cgroups_ns_path(int procfs_fd, const char *root, char **ret)
{
	_cleanup_free_ char *real = NULL, *buf = NULL;
	struct statx sx;
	size_t len;
	int r;

	real = realpath(root, NULL);
	if (!real)
		return -errno;
	if (statx(AT_FDCWD, real, AT_STATX_DONT_SYNC, STATX_MNT_ID, &sx) < 0)
		return -errno;
	if (!(sx.stx_mask & STATX_MNT_ID))
		return -EOPNOTSUPP;
	r = read_file_at(procfs_fd, "self/mountinfo", &buf, &len);
	if (r < 0)
		return r;
	return cgroups_ns_path_of(buf, len, (int)sx.stx_mnt_id, real, ret);
}

char *cgroups_label_path(const char *root_path, const char *label)
{
	char *p;

	if (strcmp(label, "/") == 0)
		return strdup(root_path);
	if (strcmp(root_path, "/") == 0)
		return strdup(label);
	return asprintf(&p, "%s%s", root_path, label) < 0 ? NULL : p;
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

bool cgroups_controllers_has(const char *buf, size_t len, const char *controller)
{
	const char *p = buf, *end = buf + len;
	size_t n = strlen(controller);

	while (p < end) {
		const char *w;

		while (p < end && (*p == ' ' || *p == '\t' || *p == '\n'))
			p++;
		w = p;
		while (p < end && *p != ' ' && *p != '\t' && *p != '\n')
			p++;
		if ((size_t)(p - w) == n && memcmp(w, controller, n) == 0)
			return true;
	}
	return false;
}

/* What a directory is, for choosing the tree. */
enum kind {
	KIND_MISSING,   /* cannot be opened */
	KIND_OTHER,     /* no cgroup file system: a tmpfs of hierarchies, a test tree */
	KIND_V1,        /* a v1 hierarchy of other controllers */
	KIND_V1_MEMORY, /* the v1 memory hierarchy */
	KIND_V2,        /* cgroup v2 without the memory controller */
	KIND_V2_MEMORY, /* cgroup v2 with it */
};

static enum kind kind_of(const char *path)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *buf = NULL;
	struct statfs sfs;
	size_t len;

	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fstatfs(fd, &sfs) < 0)
		return KIND_MISSING;
	if (sfs.f_type == CGROUP_SUPER_MAGIC)
		return faccessat(fd, "memory.stat", F_OK, 0) == 0 ? KIND_V1_MEMORY : KIND_V1;
	if (sfs.f_type != CGROUP2_SUPER_MAGIC)
		return KIND_OTHER;
	/* a controller is on v2 when it is not bound to a v1 hierarchy: the root lists it */
	if (read_file_at(fd, "cgroup.controllers", &buf, &len) == 0 &&
	    cgroups_controllers_has(buf, len, "memory"))
		return KIND_V2_MEMORY;
	return KIND_V2;
}

/* The candidate trees: a cgroup v2 tree and the v1 memory hierarchy. */
struct found {
	char *v2;
	bool v2_memory;
	char *memory;
};

/* Keeps path (takes it) as the v2 tree or the memory hierarchy if it is one and none is yet. */
static void found_offer(struct found *f, char *path)
{
	enum kind k = path ? kind_of(path) : KIND_MISSING;

	if (!f->v2 && (k == KIND_V2 || k == KIND_V2_MEMORY)) {
		f->v2 = path;
		f->v2_memory = k == KIND_V2_MEMORY;
	} else if (!f->memory && k == KIND_V1_MEMORY) {
		f->memory = path;
	} else {
		free(path);
	}
}

/* The hierarchies a directory like /sys/fs/cgroup holds, under their usual names. */
static void found_in(struct found *f, const char *base)
{
	char *p;

	if (asprintf(&p, "%s/unified", base) >= 0)
		found_offer(f, p);
	if (asprintf(&p, "%s/memory", base) >= 0)
		found_offer(f, p);
}

/* Where libcgroup, reading this process's mount table, finds them. */
static void found_mounted(struct found *f)
{
	char *p = NULL;

	if (!f->v2 && cgroups_find_v2_mount(&p) == 0)
		found_offer(f, p);
	p = NULL;
	if (!f->memory && cgroup_init() == 0 && cgroup_get_subsys_mount_point("memory", &p) == 0)
		found_offer(f, p);
}

__attribute__((format(printf, 5, 6))) static int root_set(struct cgroups_root *ret, const char *path,
							   enum cgroups_layout layout, bool warn,
							   const char *fmt, ...)
{
	struct cgroups_root root = { .layout = layout, .note_warn = warn };
	va_list ap;
	int r = 0;

	root.path = strdup(path);
	if (fmt) {
		va_start(ap, fmt);
		r = vasprintf(&root.note, fmt, ap);
		va_end(ap);
	}
	if (!root.path || r < 0) {
		free(root.path);
		return -ENOMEM;
	}
	*ret = root;
	return 0;
}

/* path is no cgroup tree with the memory controller: pick among what is around it. */
static int choose(const char *path, struct found *f, struct cgroups_root *ret)
{
	if (f->v2 && f->v2_memory)
		return root_set(ret, f->v2, CGROUPS_V2, false,
				"--path.cgroupfs is not cgroup v2; walking the cgroup v2 mount"
				"\tpath_cgroupfs=%s", path);
	if (f->memory)
		return root_set(ret, f->memory, CGROUPS_V1_MEMORY, false,
				"the memory controller is not on cgroup v2; walking the cgroup v1 memory "
				"hierarchy for the cgroups, their processes and memory.stat"
				"\tpath_cgroupfs=%s\tcgroup_v2=%s", path, f->v2 ? f->v2 : "none");
	if (f->v2)
		return root_set(ret, f->v2, CGROUPS_V2, false,
				"the memory controller is neither on cgroup v2 nor on v1: walking the "
				"cgroup v2 tree, without memory.stat series"
				"\tpath_cgroupfs=%s", path);
	return root_set(ret, path, CGROUPS_V2, true,
			"no cgroup v2 mount nor cgroup v1 memory hierarchy found; walking "
			"--path.cgroupfs as it is"
			"\tpath_cgroupfs=%s", path);
}

int cgroups_resolve_root(const char *path, bool given, struct cgroups_root *ret)
{
	enum kind k = kind_of(path);
	struct found f = { 0 };
	int r;

	if (k == KIND_V2_MEMORY || k == KIND_V1_MEMORY)
		return root_set(ret, path, k == KIND_V1_MEMORY ? CGROUPS_V1_MEMORY : CGROUPS_V2, false,
				NULL);
	if (given && k == KIND_V2) {
		found_mounted(&f);
		r = f.memory ? root_set(ret, path, CGROUPS_V2, false,
					"the memory controller is not on this tree: no memory.stat series; "
					"--path.cgroupfs=memory_hierarchy walks the tree that has it"
					"\tpath_cgroupfs=%s\tmemory_hierarchy=%s", path, f.memory)
			     : root_set(ret, path, CGROUPS_V2, false, NULL);
	} else if (given && (k == KIND_V1 || k == KIND_MISSING)) {
		r = root_set(ret, path, CGROUPS_V2, false, NULL);
	} else {
		if (k == KIND_V2)
			found_offer(&f, strdup(path));
		found_in(&f, path);
		if (!given)
			found_mounted(&f);
		r = given && !f.v2 && !f.memory
			    ? root_set(ret, path, CGROUPS_V2, true,
				       "--path.cgroupfs holds no cgroup hierarchy; walking it anyway"
				       "\tpath_cgroupfs=%s", path)
			    : choose(path, &f, ret);
	}
	free(f.v2);
	free(f.memory);
	return r;
}

void cgroups_root_done(struct cgroups_root *root)
{
	free(root->path);
	free(root->note);
	*root = (struct cgroups_root){ 0 };
}
