/* SPDX-License-Identifier: Apache-2.0 */
#define _GNU_SOURCE
#include "fanotify/fanotify.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include "files/creds.h"
#include "files/fstypes.h"
#include "parse/mountinfo.h"
#include "parse/proccgroup.h"
#include "base/util.h"

/* File systems with no files worth a mark: kernel interfaces, and device nodes. */
static const char *const pseudo_fs[] = {
	"proc", "sysfs", "cgroup", "cgroup2", "devpts", "devtmpfs", "mqueue", "debugfs",
	"tracefs", "securityfs", "pstore", "bpf", "configfs", "fusectl", "autofs", "binfmt_misc",
	"nsfs", "efivarfs", "rpc_pipefs", "hugetlbfs", "selinuxfs",
};

/*
 * Who opened recently: a pid's cgroup is looked up once a second at most, which spares a busy
 * process most of the reads and attributes the last events of one that just exited (pids are
 * reused far more slowly than that). Its credentials are read at every event.
 */
#define PID_CACHE_SLOTS 256
#define PID_CACHE_NS 1000000000ULL
/* How long after its lookup a process that has exited keeps its events (pids are reused slowly). */
#define PID_GONE_NS 10000000000ULL

struct pid_slot {
	pid_t pid;
	uint64_t at_ns;
	char *cgroup;
	struct handleset_creds creds;
};

struct marked_fs {
	uint64_t fsid;
	char *point;
};

struct fanotify_listener {
	int fd;
	int stop[2]; /* a pipe: written to stop the thread */
	int procfs_fd;
	bool memory_v1;
	pid_t self;
	char self_userns[64];
	struct marked_fs *fs;
	size_t n_fs;
	unsigned unsupported;
	int mark_error; /* of the first mark refused */

	pthread_t thread;
	bool started;
	pthread_mutex_t lock; /* the set and the counters */
	struct handleset *set;
	uint64_t events, overflows, pid_gone, unattributed;

	struct fanotify_silence silence; /* under the lock too: the thread changes it, scans read it */

	struct pid_slot pids[PID_CACHE_SLOTS]; /* the thread's own */
	/* the thread's own: by index of fs[], the root of each file system to open handles through,
	 * open only while the events of one read() are handled (none pins a mount longer) */
	int *mount_fds;
};

/* r, with "what: error" in *ret_error. */
static int fail(char **ret_error, int r, const char *what)
{
	if (ret_error && asprintf(ret_error, "%s: %s", what, strerror(-r)) < 0)
		*ret_error = NULL;
	return r;
}

void fanotify_silence_init(struct fanotify_silence *s, uint64_t refresh_ns, size_t max_files,
			   uint64_t now)
{
	*s = (struct fanotify_silence){ .refresh_ns = refresh_ns, .max_files = max_files,
					.period_start_ns = now };
}

bool fanotify_silence_wanted(const struct fanotify_silence *s, unsigned period_opens)
{
	return s->refresh_ns > 0 && !s->refused && !s->full && s->files < s->max_files &&
	       period_opens == 2;
}

void fanotify_silence_placed(struct fanotify_silence *s, int r)
{
	if (r == 0) {
		s->files++;
		return;
	}
	if (r == -ESTALE)
		return; /* deleted since its open: nothing to silence */
	s->errors++;
	if (r == -EINVAL || r == -ENOSYS)
		s->refused = true;
	else if (r == -ENOSPC)
		s->full = true;
}

bool fanotify_silence_due(const struct fanotify_silence *s, uint64_t now)
{
	return s->refresh_ns > 0 && now >= s->period_start_ns &&
	       now - s->period_start_ns >= s->refresh_ns;
}

int fanotify_silence_timeout_ms(const struct fanotify_silence *s, uint64_t now)
{
	uint64_t left;

	if (s->refresh_ns == 0)
		return -1;
	if (fanotify_silence_due(s, now))
		return 0;
	left = s->period_start_ns + s->refresh_ns - now;
	return left / 1000000 >= INT_MAX ? INT_MAX : (int)((left + 999999) / 1000000);
}

void fanotify_silence_refreshed(struct fanotify_silence *s, uint64_t now)
{
	s->period_start_ns = now;
	s->files = 0;
	s->full = false;
	s->refreshes++;
}

char *fanotify_cgroup_of(char *buf, bool memory_v1)
{
	char *path = proccgroup_path(buf, memory_v1);

	/* "/.." leads out of our cgroup namespace: a path we cannot name (a container's view) */
	return path && strncmp(path, "/..", 3) != 0 ? path : NULL;
}

static bool pseudo(const char *fstype)
{
	for (size_t i = 0; i < ELEMENTSOF(pseudo_fs); i++)
		if (strcmp(fstype, pseudo_fs[i]) == 0)
			return true;
	return false;
}

/* Whether mount point p is one of the comma-separated list (NULL: every one is). */
static bool wanted(const char *list, const char *p)
{
	size_t n = strlen(p);

	if (!list)
		return true;
	for (const char *s = list; *s;) {
		size_t len = strcspn(s, ",");

		if (len == n && memcmp(s, p, n) == 0)
			return true;
		s += len + (s[len] == ',');
	}
	return false;
}

/* Whether the file system with fsid is marked already. */
static bool fs_marked(const struct fanotify_listener *l, uint64_t fsid)
{
	for (size_t i = 0; i < l->n_fs; i++)
		if (l->fs[i].fsid == fsid)
			return true;
	return false;
}

/* Marks the file system mounted at point for FAN_OPEN. 1 when new, 0 when marked already. */
static int mark_one(struct fanotify_listener *l, const char *point)
{
	struct marked_fs *a;
	struct statfs sfs;
	uint64_t fsid;

	if (statfs(point, &sfs) < 0)
		return -errno;
	memcpy(&fsid, &sfs.f_fsid, sizeof(fsid));
	if (fs_marked(l, fsid))
		return 0;
	if (fanotify_mark(l->fd, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, FAN_OPEN, AT_FDCWD, point) < 0)
		return -errno;
	a = realloc(l->fs, (l->n_fs + 1) * sizeof(*a));
	if (!a)
		return -ENOMEM;
	l->fs = a;
	a[l->n_fs].fsid = fsid;
	a[l->n_fs].point = strdup(point);
	if (!a[l->n_fs].point)
		return -ENOMEM;
	l->n_fs++;
	return 1;
}

/* One line of mountinfo: marked if it is wanted, local and has file handles. */
static int consider_mount(struct fanotify_listener *l, const struct fstypes *ft, const char *list,
			  const struct mountinfo *m)
{
	int r;

	/* a bind mount of a subdirectory: its file system is marked through its root mount */
	if (!list && strcmp(m->root, "/") != 0)
		return 0;
	if (pseudo(m->fstype) || fstypes_name_excluded(ft, m->fstype) || !wanted(list, m->mount_point))
		return 0;
	r = mark_one(l, m->mount_point);
	if (r == -ENOMEM)
		return r;
	if (r < 0) {
		l->unsupported++; /* EOPNOTSUPP, ENODEV or EXDEV: no file handles, or no fsid */
		if (!l->mark_error)
			l->mark_error = r;
	}
	return 0;
}

/* Marks the file systems of our mountinfo that are wanted. */
static int mark_filesystems(struct fanotify_listener *l, const struct fanotify_options *o)
{
	_cleanup_free_ char *buf = NULL;
	struct mountinfo m;
	struct fstypes ft;
	const char *pos;
	size_t len;
	int r;

	r = read_file_at(l->procfs_fd, "self/mountinfo", &buf, &len);
	if (r < 0)
		return r;
	r = fstypes_init(&ft, o->fs_types_exclude ? o->fs_types_exclude : FSTYPES_DEFAULT_EXCLUDE);
	if (r < 0)
		return r;
	for (pos = buf; r >= 0 && mountinfo_next(&pos, buf + len, &m) > 0;) {
		r = consider_mount(l, &ft, o->filesystems, &m);
		mountinfo_done(&m);
	}
	fstypes_done(&ft);
	if (r < 0 || l->n_fs > 0)
		return r;
	return l->mark_error == -EPERM ? -EPERM : -ENOENT;
}

static void listener_close(struct fanotify_listener *l)
{
	closep(&l->fd);
	closep(&l->stop[0]);
	closep(&l->stop[1]);
	for (size_t i = 0; i < l->n_fs; i++)
		free(l->fs[i].point);
	for (size_t i = 0; i < PID_CACHE_SLOTS; i++)
		free(l->pids[i].cgroup);
	for (size_t i = 0; l->mount_fds && i < l->n_fs; i++)
		closep(&l->mount_fds[i]);
	free(l->mount_fds);
	free(l->fs);
	closep(&l->procfs_fd);
	handleset_free(l->set);
	pthread_mutex_destroy(&l->lock);
	free(l);
}

/*
 * /proc/PID/cgroup is written relative to the reader's cgroup namespace: a container's private
 * one (containerd's default on cgroup v2) makes every other process's path "/../...". The cgroup
 * namespace of procfs's PID 1 (the node's, with hostPID) names them as the walked tree does.
 * setns() changes the calling thread, and the threads it starts later inherit it: called at
 * start, before any thread. Best effort (CAP_SYS_ADMIN, which setup has); the same namespace
 * already on a host.
 */
static void join_init_cgroupns(int procfs_fd)
{
	_cleanup_close_ int fd = openat(procfs_fd, "1/ns/cgroup", O_RDONLY | O_CLOEXEC);

	if (fd >= 0)
		(void)setns(fd, CLONE_NEWCGROUP);
}

int fanotify_listener_new(const struct fanotify_options *o, struct fanotify_listener **ret,
			  char **ret_error)
{
	struct fanotify_listener *l = calloc(1, sizeof(*l));
	int r;

	if (ret_error)
		*ret_error = NULL;
	if (!l)
		return -ENOMEM;
	l->fd = l->stop[0] = l->stop[1] = l->procfs_fd = -1;
	pthread_mutex_init(&l->lock, NULL);
	l->memory_v1 = o->memory_v1;
	l->self = getpid();
	l->procfs_fd = open(o->procfs, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	r = l->procfs_fd < 0 ? fail(ret_error, -errno, o->procfs)
			     : handleset_new(&o->limits, &l->set);
	if (r == 0 && pipe2(l->stop, O_CLOEXEC | O_NONBLOCK) < 0)
		r = -errno;
	if (r == 0)
		join_init_cgroupns(l->procfs_fd);
	/*
	 * FAN_UNLIMITED_MARKS (CAP_SYS_ADMIN, as for the file system marks): the ignore marks are
	 * bounded by o->max_silenced and do not use up the per-user mark limit that root's other
	 * fanotify users share (fs.fanotify.max_user_marks).
	 */
	if (r == 0) {
		l->fd = fanotify_init(FAN_CLASS_NOTIF | FAN_REPORT_FID | FAN_UNLIMITED_MARKS |
					      FAN_CLOEXEC | FAN_NONBLOCK,
				      O_RDONLY | O_LARGEFILE);
		r = l->fd < 0 ? fail(ret_error, -errno, "fanotify_init") : 0;
	}
	if (r == 0) {
		r = mark_filesystems(l, o);
		if (r == -ENOENT && ret_error)
			*ret_error = strdup("no file system could be marked (none wanted, or none has file handles)");
		else if (r == -EPERM)
			fail(ret_error, r, "marking file systems (CAP_SYS_ADMIN is needed)");
		else if (r < 0 && r != -ENOMEM)
			fail(ret_error, r, "marking file systems");
	}
	if (r == 0) {
		l->mount_fds = malloc(l->n_fs * sizeof(*l->mount_fds));
		r = l->mount_fds ? 0 : -ENOMEM;
		for (size_t i = 0; r == 0 && i < l->n_fs; i++)
			l->mount_fds[i] = -1;
		fanotify_silence_init(&l->silence, o->refresh_ns, o->max_silenced, monotonic_ns());
	}
	if (r < 0) {
		listener_close(l);
		return r;
	}
	*ret = l;
	return 0;
}

/*
 * The credentials of a process from its status; capabilities count only in our own user
 * namespace (an unreadable ns link counts as another: less, never more). Supplementary groups
 * are not kept: a file writable only through one of them is refused, never wrongly allowed.
 */
static int read_creds(struct fanotify_listener *l, int piddir, struct handleset_creds *ret)
{
	struct creds c;
	int r;

	if (!l->self_userns[0]) {
		ssize_t n = readlink("/proc/self/ns/user", l->self_userns, sizeof(l->self_userns) - 1);

		l->self_userns[n > 0 ? n : 0] = '\0';
	}
	r = creds_read(piddir, l->self_userns, &c);
	if (r < 0)
		return r;
	*ret = (struct handleset_creds){ .fsuid = c.fsuid, .fsgid = c.fsgid,
					 .cap_fowner = c.cap_fowner,
					 .cap_dac_override = c.cap_dac_override };
	creds_done(&c);
	return 0;
}

/* The cgroup (cached for a second) and credentials (read now) of pid. -ESRCH when it is gone. */
static int lookup_pid(struct fanotify_listener *l, pid_t pid, uint64_t now,
		      const struct pid_slot **ret)
{
	struct pid_slot *s = &l->pids[(unsigned)pid % PID_CACHE_SLOTS];
	struct handleset_creds creds;
	_cleanup_free_ char *buf = NULL;
	_cleanup_close_ int piddir = -1;
	char name[16], *cg;
	size_t len;
	int r;

	snprintf(name, sizeof(name), "%d", (int)pid);
	piddir = openat(l->procfs_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (piddir < 0 && errno == ENOENT && s->cgroup && s->pid == pid && now - s->at_ns < PID_GONE_NS) {
		*ret = s; /* exited since it was looked up: its last opens are still its own */
		return 0;
	}
	if (piddir < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	/*
	 * The credentials are read again at every event, never cached: a process that opens a file
	 * as root and then drops to a user (sshd's session children, cron, login) must not have its
	 * later opens judged as root's.
	 */
	r = read_creds(l, piddir, &creds);
	if (r < 0)
		return r == -ENOENT ? -ESRCH : r;
	if (s->cgroup && s->pid == pid && now - s->at_ns < PID_CACHE_NS) {
		s->creds = creds; /* this event's, not those of the lookup */
		*ret = s;
		return 0;
	}
	r = read_file_at(piddir, "cgroup", &buf, &len);
	if (r < 0)
		return r == -ENOENT ? -ESRCH : r;
	cg = fanotify_cgroup_of(buf, l->memory_v1);
	if (!cg)
		return -ENOENT;
	free(s->cgroup);
	s->cgroup = strdup(cg);
	if (!s->cgroup)
		return -ENOMEM;
	s->pid = pid;
	s->at_ns = now;
	s->creds = creds;
	*ret = s;
	return 0;
}

/*
 * Drops every ignore mark of the group, so that each file's next open is seen again: without
 * FAN_MARK_MOUNT or FAN_MARK_FILESYSTEM, FAN_MARK_FLUSH flushes the inode marks alone (6.1 and
 * mainline alike), and the file system marks stay. A flush refused would leave files silent for
 * good: silencing then stops.
 */
static void silence_refresh(struct fanotify_listener *l, uint64_t now)
{
	int r = fanotify_mark(l->fd, FAN_MARK_FLUSH, 0, AT_FDCWD, NULL) < 0 ? -errno : 0;

	pthread_mutex_lock(&l->lock);
	handleset_new_period(l->set);
	fanotify_silence_refreshed(&l->silence, now);
	if (r < 0) {
		l->silence.refused = true;
		l->silence.errors++;
	}
	pthread_mutex_unlock(&l->lock);
}

/* The root of the marked file system fsid, opened at its first use in this read; -errno. */
static int silence_mount_fd(struct fanotify_listener *l, uint64_t fsid)
{
	for (size_t i = 0; i < l->n_fs; i++) {
		if (l->fs[i].fsid != fsid)
			continue;
		if (l->mount_fds[i] < 0)
			l->mount_fds[i] = fanotify_listener_mount_fd(l, fsid);
		return l->mount_fds[i];
	}
	return -ENOENT;
}

static void silence_close_mounts(struct fanotify_listener *l)
{
	for (size_t i = 0; i < l->n_fs; i++) {
		closep(&l->mount_fds[i]);
		l->mount_fds[i] = -1;
	}
}

/*
 * An ignore mark for FAN_OPEN on the inode of key. Evictable (5.19): it does not pin the inode,
 * so a deleted or evicted file goes, mark and all. It survives writes
 * (FAN_MARK_IGNORED_SURV_MODIFY): writes are no opens, and a mark that a write clears would
 * have the kernel take an interest in every write to the file. Opened O_PATH by handle, which
 * makes no event, and named through /proc/thread-self/fd, as fanotify_mark() takes no O_PATH
 * descriptor (thread-self: the listener may have been started by a scan, whose thread has a
 * descriptor table of its own). Returns 0, -ESTALE (the file is gone), -EBADF (it could not be opened otherwise)
 * or fanotify_mark()'s -errno (EINVAL: no evictable marks before 5.19).
 */
static int silence_file(struct fanotify_listener *l, const struct handleset_key *k)
{
	struct {
		struct file_handle fh;
		unsigned char bytes[HANDLESET_HANDLE_MAX];
	} h;
	_cleanup_close_ int fd = -1;
	int mfd = silence_mount_fd(l, k->fsid);
	char path[64];

	if (mfd < 0)
		return mfd == -ENOENT || mfd == -ESTALE ? -ESTALE : -EBADF;
	h.fh.handle_bytes = k->len; /* at most HANDLESET_HANDLE_MAX: handleset_note() took it */
	h.fh.handle_type = k->type;
	memcpy(h.fh.f_handle, k->bytes, k->len);
	fd = open_by_handle_at(mfd, &h.fh, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return errno == ESTALE || errno == ENOENT ? -ESTALE : -EBADF;
	snprintf(path, sizeof(path), "/proc/thread-self/fd/%d", fd);
	if (fanotify_mark(l->fd, FAN_MARK_ADD | FAN_MARK_IGNORED_MASK | FAN_MARK_IGNORED_SURV_MODIFY |
				  FAN_MARK_EVICTABLE, FAN_OPEN, AT_FDCWD, path) < 0)
		return -errno;
	return 0;
}

/*
 * The file handle of an event (its first FID record), as a key of the set. Records are only
 * 4-byte aligned (the metadata's 8-byte fields are copied out, never read in place).
 */
static bool event_key(const char *ev, const struct fanotify_event_metadata *m,
		      struct handleset_key *ret)
{
	const char *p = ev + m->metadata_len, *end = ev + m->event_len;

	while (p + sizeof(struct fanotify_event_info_header) <= end) {
		const struct fanotify_event_info_header *h = (const void *)p;
		const struct fanotify_event_info_fid *fid = (const void *)p;
		const struct file_handle *fh;

		if (h->len < sizeof(*h) || p + h->len > end)
			return false;
		if (h->info_type == FAN_EVENT_INFO_TYPE_FID &&
		    h->len >= sizeof(*fid) + sizeof(struct file_handle)) {
			fh = (const void *)fid->handle;
			if (sizeof(*fid) + sizeof(*fh) + fh->handle_bytes > h->len)
				return false;
			memcpy(&ret->fsid, &fid->fsid, sizeof(ret->fsid));
			ret->type = fh->handle_type;
			ret->len = fh->handle_bytes;
			ret->bytes = fh->f_handle;
			return true;
		}
		p += h->len;
	}
	return false;
}

/* One event (ev, its metadata m): noted under the cgroup of its process. */
static void handle_event(struct fanotify_listener *l, const char *ev,
			 const struct fanotify_event_metadata *m, uint64_t now)
{
	const struct pid_slot *s = NULL;
	struct handleset_key k;
	unsigned opens = 0;
	bool silence;
	int r;

	if (m->mask & FAN_Q_OVERFLOW) {
		pthread_mutex_lock(&l->lock);
		l->overflows++;
		pthread_mutex_unlock(&l->lock);
		return;
	}
	if (m->pid == l->self)
		return; /* the scan's own opens */
	r = event_key(ev, m, &k) ? lookup_pid(l, m->pid, now, &s) : -EINVAL;
	pthread_mutex_lock(&l->lock);
	l->events++;
	if (r == 0 && s)
		r = handleset_note(l->set, s->cgroup, &k, &s->creds, now, &opens);
	if (r == -ESRCH)
		l->pid_gone++;
	else if (r < 0)
		l->unattributed++;
	silence = r == 0 && fanotify_silence_wanted(&l->silence, opens);
	pthread_mutex_unlock(&l->lock);
	if (!silence)
		return;
	r = silence_file(l, &k);
	pthread_mutex_lock(&l->lock);
	fanotify_silence_placed(&l->silence, r);
	pthread_mutex_unlock(&l->lock);
}

/* Reads what is queued; false when the group is broken. */
static bool read_events(struct fanotify_listener *l)
{
	char buf[65536] __attribute__((aligned(8)));
	struct fanotify_event_metadata m;
	uint64_t now;
	ssize_t n;

	for (;;) {
		n = read(l->fd, buf, sizeof(buf));
		if (n < 0)
			return errno == EAGAIN || errno == EINTR;
		now = monotonic_ns();
		for (size_t off = 0; off + sizeof(m) <= (size_t)n; off += m.event_len) {
			memcpy(&m, buf + off, sizeof(m));
			if (m.vers != FANOTIFY_METADATA_VERSION || m.event_len < sizeof(m) ||
			    off + m.event_len > (size_t)n)
				return false;
			handle_event(l, buf + off, &m, now);
			if (m.fd >= 0)
				close(m.fd); /* none with FAN_REPORT_FID; a safeguard */
		}
	}
}

static void *listen_thread(void *userdata)
{
	struct fanotify_listener *l = userdata;
	struct pollfd p[2] = { { .fd = l->fd, .events = POLLIN }, { .fd = l->stop[0], .events = POLLIN } };

	for (;;) {
		uint64_t now = monotonic_ns();
		bool ok = true;

		/* only this thread changes the silence state: no lock to read it here */
		if (poll(p, 2, fanotify_silence_timeout_ms(&l->silence, now)) < 0 && errno != EINTR)
			break;
		if (p[1].revents)
			break;
		if (p[0].revents) {
			ok = read_events(l);
			silence_close_mounts(l);
		}
		if (!ok)
			break;
		now = monotonic_ns();
		if (fanotify_silence_due(&l->silence, now))
			silence_refresh(l, now);
	}
	return NULL;
}

int fanotify_listener_start(struct fanotify_listener *l)
{
	int r;

	if (l->started)
		return 0;
	r = pthread_create(&l->thread, NULL, listen_thread, l);
	if (r != 0)
		return -r;
	l->started = true;
	return 0;
}

int fanotify_listener_items(struct fanotify_listener *l, const char *cgroup, uint64_t now,
			    struct handleset_item **ret, size_t *ret_n)
{
	int r;

	pthread_mutex_lock(&l->lock);
	r = handleset_cgroup_items(l->set, cgroup, now, ret, ret_n);
	pthread_mutex_unlock(&l->lock);
	return r;
}

int fanotify_listener_mount_fd(const struct fanotify_listener *l, uint64_t fsid)
{
	_cleanup_close_ int fd = -1;
	struct statfs sfs;
	uint64_t now_fsid;

	for (size_t i = 0; i < l->n_fs; i++) {
		if (l->fs[i].fsid != fsid)
			continue;
		/* not O_PATH: open_by_handle_at() wants a descriptor it can fdget() */
		fd = open(l->fs[i].point, O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		if (fstatfs(fd, &sfs) < 0)
			return -errno;
		memcpy(&now_fsid, &sfs.f_fsid, sizeof(now_fsid));
		return now_fsid == fsid ? TAKE_FD(fd) : -ESTALE;
	}
	return -ENOENT;
}

void fanotify_listener_stats(struct fanotify_listener *l, uint64_t now, struct fanotify_stats *ret)
{
	pthread_mutex_lock(&l->lock);
	handleset_expire(l->set, now);
	*ret = (struct fanotify_stats){ .events = l->events, .overflows = l->overflows,
					.pid_gone = l->pid_gone, .unattributed = l->unattributed,
					.marked = (unsigned)l->n_fs, .unsupported = l->unsupported,
					.silence_on = l->silence.refresh_ns > 0 && !l->silence.refused,
					.silence_refused = l->silence.refused,
					.silenced = l->silence.files,
					.silence_errors = l->silence.errors,
					.silence_refreshes = l->silence.refreshes };
	handleset_get_stats(l->set, &ret->set);
	pthread_mutex_unlock(&l->lock);
}

void fanotify_listener_free(struct fanotify_listener *l)
{
	if (!l)
		return;
	if (l->started) {
		(void)!write(l->stop[1], "x", 1);
		pthread_join(l->thread, NULL);
	}
	listener_close(l);
}
