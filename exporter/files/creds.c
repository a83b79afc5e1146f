/* SPDX-License-Identifier: Apache-2.0 */
#define _GNU_SOURCE
#include "files/creds.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/util.h"

#define CREDS_CAP_DAC_OVERRIDE 1
#define CREDS_CAP_FOWNER 3

/* The value of "Key:" at the start of a line of buf, or NULL. */
static const char *field(const char *buf, size_t len, const char *key)
{
	size_t k = strlen(key);

	for (const char *p = buf; p && p < buf + len;) {
		const char *nl = memchr(p, '\n', (size_t)(buf + len - p));

		if ((size_t)(buf + len - p) > k && memcmp(p, key, k) == 0)
			return p + k;
		p = nl ? nl + 1 : NULL;
	}
	return NULL;
}

/* The "real effective saved fs" ids of a Uid: or Gid: line. */
static int parse_ids(const char *p, unsigned long ret[4])
{
	char *end;

	if (!p)
		return -EINVAL;
	for (int i = 0; i < 4; i++) {
		errno = 0;
		ret[i] = strtoul(p, &end, 10);
		if (errno || end == p || ret[i] > UINT32_MAX)
			return -EINVAL;
		p = end;
	}
	return 0;
}

/* Whether the real id differs from the effective or the fs one (a setuid or setfsuid process). */
static bool ids_borrowed(const unsigned long ids[4])
{
	return ids[0] != ids[1] || ids[0] != ids[3];
}

static int parse_groups(const char *p, gid_t **ret, size_t *ret_n)
{
	gid_t *g = NULL;
	size_t n = 0;

	while (p && *p != '\n' && *p) {
		unsigned long v;
		char *end;
		gid_t *t;

		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '\n' || !*p)
			break;
		errno = 0;
		v = strtoul(p, &end, 10);
		if (errno || end == p || v > UINT32_MAX) {
			free(g);
			return -EINVAL;
		}
		t = realloc(g, (n + 1) * sizeof(*g));
		if (!t) {
			free(g);
			return -ENOMEM;
		}
		g = t;
		g[n++] = (gid_t)v;
		p = end;
	}
	*ret = g;
	*ret_n = n;
	return 0;
}

int creds_parse_status(const char *buf, size_t len, struct creds *ret)
{
	const char *cap = field(buf, len, "CapEff:");
	unsigned long uid[4], gid[4];
	unsigned long long caps;
	gid_t *groups;
	size_t n_groups;
	char *end;
	int r;

	if (parse_ids(field(buf, len, "Uid:"), uid) < 0 ||
	    parse_ids(field(buf, len, "Gid:"), gid) < 0 || !cap)
		return -EINVAL;
	errno = 0;
	caps = strtoull(cap, &end, 16);
	if (errno || end == cap)
		return -EINVAL;
	r = parse_groups(field(buf, len, "Groups:"), &groups, &n_groups);
	if (r < 0)
		return r;
	*ret = (struct creds){
		.fsuid = (uid_t)uid[3],
		.fsgid = (gid_t)gid[3],
		.ruid = (uid_t)uid[0],
		.groups = groups,
		.n_groups = n_groups,
		.cap_fowner = caps & (1ULL << CREDS_CAP_FOWNER),
		.cap_dac_override = caps & (1ULL << CREDS_CAP_DAC_OVERRIDE),
	};
	if (ids_borrowed(uid) || ids_borrowed(gid))
		creds_as_real(ret, (uid_t)uid[0], (gid_t)gid[0]);
	return 0;
}

void creds_as_real(struct creds *c, uid_t ruid, gid_t rgid)
{
	c->fsuid = ruid;
	c->fsgid = rgid;
	c->cap_fowner = c->cap_dac_override = false;
}

void creds_done(struct creds *c)
{
	free(c->groups);
	*c = (struct creds){ 0 };
}

static bool in_group(const struct creds *c, gid_t gid)
{
	if (c->fsgid == gid)
		return true;
	for (size_t i = 0; i < c->n_groups; i++)
		if (c->groups[i] == gid)
			return true;
	return false;
}

/*
 * inode_owner_or_capable() || file_permission(MAY_WRITE) == 0, from the mode bits: the owner
 * class, else the group class, else others (POSIX ACLs are not read; see the README).
 */
static bool owner_or_writer(const struct creds *c, const struct stat *st)
{
	if (c->fsuid == st->st_uid || c->cap_fowner || c->cap_dac_override)
		return true;
	if (in_group(c, st->st_gid))
		return st->st_mode & S_IWGRP;
	return st->st_mode & S_IWOTH;
}

bool creds_may_cachestat(const struct creds *c, int open_flags, const struct stat *st)
{
	if (open_flags & O_PATH)
		return false;
	if ((open_flags & O_ACCMODE) == O_WRONLY || (open_flags & O_ACCMODE) == O_RDWR)
		return true; /* FMODE_WRITE */
	return owner_or_writer(c, st);
}

bool creds_may_cachestat_any_mode(const struct creds *c, const struct stat *st)
{
	return owner_or_writer(c, st); /* all a read-only descriptor needs */
}

bool creds_may_cachestat_mapping(const struct creds *c, const char *perms, const struct stat *st)
{
	if (strlen(perms) >= 4 && perms[1] == 'w' && perms[3] == 's')
		return true;
	return owner_or_writer(c, st);
}

int creds_read(int piddir, const char *self_userns, struct creds *ret)
{
	_cleanup_free_ char *buf = NULL;
	struct stat st;
	char ns[64];
	ssize_t n;
	size_t len;
	int r;

	r = read_file_at(piddir, "status", &buf, &len);
	if (r < 0)
		return r;
	r = creds_parse_status(buf, len, ret);
	if (r < 0)
		return r;
	/*
	 * procfs gives /proc/PID to the euid of a dumpable process and to root otherwise (read at
	 * each stat of it, task_dump_owner()): another owner than the real uid is a process made
	 * non-dumpable by a change of credentials, such as an exec that gained capabilities.
	 */
	if (fstat(piddir, &st) < 0) {
		r = -errno;
		creds_done(ret);
		return r;
	}
	if (st.st_uid != ret->ruid)
		creds_as_real(ret, ret->ruid, ret->fsgid);
	n = readlinkat(piddir, "ns/user", ns, sizeof(ns) - 1);
	if (n <= 0 || (size_t)n != strlen(self_userns) || memcmp(ns, self_userns, (size_t)n))
		ret->cap_fowner = ret->cap_dac_override = false;
	return 0;
}
