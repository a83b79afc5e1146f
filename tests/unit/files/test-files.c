/* SPDX-License-Identifier: Apache-2.0 */
/*
 * File discovery on a real temporary tree and on this very process: dedupe by (dev, ino),
 * symlinks and FIFOs in a walk, globs, deleted-but-open files, the budget.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/syscall.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cap-ng.h>
#include <cmocka.h>

#include "files/files.h"
#include "fixture.h"

struct seen {
	int n;
	char names[64][3000]; /* a path of ten 250-byte names fits */
};

static int record(struct files_ctx *ctx, const struct files_entry *e)
{
	struct seen *s = ctx->userdata;
	char *name = files_entry_name(ctx, e);

	assert_true(S_ISREG(e->st->st_mode));
	assert_non_null(name);
	if (s->n < 64)
		snprintf(s->names[s->n++], sizeof(s->names[0]), "%s", name);
	free(name);
	return 0;
}

static bool saw(const struct seen *s, const char *suffix)
{
	size_t k = strlen(suffix);

	for (int i = 0; i < s->n; i++) {
		size_t n = strlen(s->names[i]);

		if (n >= k && strcmp(s->names[i] + n - k, suffix) == 0)
			return true;
	}
	return false;
}

static char dir[] = "/tmp/cse-files-XXXXXX";

static void put(const char *rel, size_t size)
{
	char p[256];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	f = fopen(p, "we");
	assert_non_null(f);
	for (size_t i = 0; i < size; i++)
		fputc('x', f);
	fclose(f);
}

static int setup(void **state)
{
	char p[256], q[256];

	(void)state;
	if (!mkdtemp(dir))
		return -1;
	snprintf(p, sizeof(p), "%s/sub", dir);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/sub/deeper", dir);
	mkdir(p, 0755);
	put("a.log", 100);
	put("b.log", 200);
	put("sub/c.dat", 300);
	put("sub/deeper/d.dat", 400);
	/* a hard link: the same inode twice */
	snprintf(p, sizeof(p), "%s/a.log", dir);
	snprintf(q, sizeof(q), "%s/sub/hardlink-to-a", dir);
	if (link(p, q) < 0)
		return -1;
	/* a symlink to a file outside: never followed in a walk */
	snprintf(q, sizeof(q), "%s/sub/symlink", dir);
	if (symlink("/etc/passwd", q) < 0)
		return -1;
	/* a FIFO: opening it for reading without O_NONBLOCK would hang */
	snprintf(q, sizeof(q), "%s/sub/fifo", dir);
	if (mkfifo(q, 0600) < 0)
		return -1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return tree_remove(dir);
}

static void ctx_init(struct files_ctx *ctx, struct seen *s)
{
	memset(s, 0, sizeof(*s));
	*ctx = (struct files_ctx){
		.procfs_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC),
		.visit = record,
		.userdata = s,
		.budget = 1000,
	};
	assert_true(ctx->procfs_fd >= 0);
}

static void ctx_done(struct files_ctx *ctx)
{
	close(ctx->procfs_fd);
	fileset_done(&ctx->seen);
}

static void test_walk_dedupe(void **state)
{
	struct files_ctx ctx;
	struct seen s;

	(void)state;
	ctx_init(&ctx, &s);
	assert_int_equal(files_scan_path(&ctx, dir), 0);
	/* a.log and its hard link count once; the symlink and the FIFO not at all */
	assert_int_equal(s.n, 4);
	assert_true(saw(&s, "/b.log"));
	assert_true(saw(&s, "/sub/c.dat"));
	assert_true(saw(&s, "/sub/deeper/d.dat"));
	assert_true(saw(&s, "/a.log") || saw(&s, "/sub/hardlink-to-a"));
	assert_false(saw(&s, "passwd"));
	assert_int_equal(ctx.skipped[SKIP_NOT_REGULAR], 2);
	/* four opens: on the usual file systems the hard link is known by d_ino, not opened */
	assert_true(ctx.budget == 1000 - 4 || ctx.budget == 1000 - 5);

	/* the same directory again (the config naming it twice): nothing new */
	assert_int_equal(files_scan_path(&ctx, dir), 0);
	assert_int_equal(s.n, 4);

	/* another cgroup: the caller clears the set and sees them again */
	fileset_clear(&ctx.seen);
	s.n = 0;
	assert_int_equal(files_scan_path(&ctx, dir), 0);
	assert_int_equal(s.n, 4);
	ctx_done(&ctx);
}

static void test_glob_and_missing(void **state)
{
	struct files_ctx ctx;
	struct seen s;
	char pat[300];

	(void)state;
	ctx_init(&ctx, &s);
	snprintf(pat, sizeof(pat), "%s/*.log", dir);
	assert_int_equal(files_scan_path(&ctx, pat), 0);
	assert_int_equal(s.n, 2);
	assert_true(saw(&s, "/a.log"));
	assert_true(saw(&s, "/b.log"));

	snprintf(pat, sizeof(pat), "%s/none/*.x", dir);
	assert_int_equal(files_scan_path(&ctx, pat), 0); /* a glob that matches nothing: fine */
	snprintf(pat, sizeof(pat), "%s/missing.file", dir);
	assert_int_equal(files_scan_path(&ctx, pat), 0);
	assert_int_equal(ctx.skipped[SKIP_NOT_FOUND], 1);
	assert_int_equal(s.n, 2);
	ctx_done(&ctx);
}

/* A symlink that a glob matches is not followed: it could lead anywhere. */
static void test_glob_symlink(void **state)
{
	struct files_ctx ctx;
	struct seen s;
	char pat[300];

	(void)state;
	ctx_init(&ctx, &s);
	snprintf(pat, sizeof(pat), "%s/sub/*", dir);
	assert_int_equal(files_scan_path(&ctx, pat), 0);
	assert_false(saw(&s, "/sub/symlink"));
	assert_true(saw(&s, "/sub/c.dat"));
	assert_true(saw(&s, "/sub/deeper/d.dat"));
	assert_int_equal(s.n, 3); /* c.dat, d.dat, hardlink-to-a */
	assert_int_equal(ctx.skipped[SKIP_NOT_REGULAR], 2); /* the symlink and the FIFO */
	ctx_done(&ctx);
}

/* Over the budget, files are counted as skipped for the limit and not opened. */
static void test_budget(void **state)
{
	struct files_ctx ctx;
	struct seen s;

	(void)state;
	ctx_init(&ctx, &s);
	ctx.budget = 2;
	assert_int_equal(files_scan_path(&ctx, dir), 0);
	assert_int_equal(s.n, 2);
	assert_int_equal(ctx.budget, 0);
	/* five entries, two admitted; the hard link is passed over unopened if its twin was seen */
	assert_true(ctx.skipped[SKIP_LIMIT] == 3 || ctx.skipped[SKIP_LIMIT] == 2);
	ctx_done(&ctx);
}

static void test_deadline(void **state)
{
	struct files_ctx ctx;
	struct seen s;

	(void)state;
	ctx_init(&ctx, &s);
	ctx.deadline_ns = 1; /* long past */
	assert_int_equal(files_scan_path(&ctx, dir), 0);
	assert_int_equal(s.n, 0);
	assert_true(ctx.timed_out);
	ctx_done(&ctx);
}

/* A visitor that puts the scan's deadline in the past at its first file. */
static int expire(struct files_ctx *ctx, const struct files_entry *e)
{
	ctx->deadline_ns = 1;
	return record(ctx, e);
}

/* A deadline passed during a walk stops it within the files between two looks at the clock. */
static void test_deadline_during_walk(void **state)
{
	struct files_ctx ctx;
	struct seen s;
	char d[300], name[64];

	(void)state;
	snprintf(d, sizeof(d), "%s/many", dir);
	assert_int_equal(mkdir(d, 0755), 0);
	for (int i = 0; i < 50; i++) {
		snprintf(name, sizeof(name), "many/f%02d", i);
		put(name, 10);
	}
	ctx_init(&ctx, &s);
	ctx.visit = expire;
	ctx.deadline_ns = files_now_ns() + 3600ULL * 1000000000ULL;
	assert_int_equal(files_scan_path(&ctx, d), 0);
	assert_true(ctx.timed_out);
	assert_true(s.n >= 1 && s.n <= 16);
	ctx_done(&ctx);
}

/* This process: a file it holds open, one it deleted, and its mapped binary. */
static void test_scan_own_pid(void **state)
{
	struct files_ctx ctx;
	struct seen s;
	char p[300];
	int fd_open, fd_deleted;

	(void)state;
	snprintf(p, sizeof(p), "%s/b.log", dir);
	fd_open = open(p, O_RDONLY | O_CLOEXEC);
	assert_true(fd_open >= 0);
	put("gone.tmp", 50);
	snprintf(p, sizeof(p), "%s/gone.tmp", dir);
	fd_deleted = open(p, O_RDONLY | O_CLOEXEC);
	assert_true(fd_deleted >= 0);
	assert_int_equal(unlink(p), 0);

	ctx_init(&ctx, &s);
	assert_int_equal(files_scan_pid(&ctx, getpid()), 0);
	assert_true(saw(&s, "/b.log"));
	assert_true(saw(&s, "/gone.tmp (deleted)"));
	assert_true(saw(&s, "/test-files")); /* the executable, from its mapping */
	assert_true(ctx.skipped[SKIP_NOT_REGULAR] > 0); /* at least /proc's directory fd */

	/* a process that does not exist is not an error */
	assert_int_equal(files_scan_pid(&ctx, 0x3ffffff0), 0);
	ctx_done(&ctx);
	close(fd_open);
	close(fd_deleted);
}

/*
 * Descriptors of a FIFO and of a character device the process holds are counted as
 * not_regular and never opened: inotify sees no open of either while the scan runs.
 */
static void test_special_files_never_opened(void **state)
{
	struct files_ctx ctx;
	struct seen s;
	char fifo[300], null[300], ev[4096];
	int in, fd_fifo, fd_null;
	ssize_t n;

	(void)state;
	snprintf(fifo, sizeof(fifo), "%s/held.fifo", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	/* a node of its own for the null device: anyone may open /dev/null meanwhile */
	snprintf(null, sizeof(null), "%s/held.null", dir);
	fd_null = -1;
	if (mknod(null, S_IFCHR | 0600, makedev(1, 3)) == 0)
		fd_null = open(null, O_RDONLY | O_CLOEXEC);
	if (fd_null < 0) { /* without CAP_MKNOD, or on a nodev mount */
		unlink(null);
		snprintf(null, sizeof(null), "/dev/null");
		fd_null = open(null, O_RDONLY | O_CLOEXEC);
	}
	fd_fifo = open(fifo, O_RDWR | O_NONBLOCK | O_CLOEXEC); /* a FIFO held by its own reader */
	assert_true(fd_fifo >= 0 && fd_null >= 0);
	in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	assert_true(in >= 0);
	assert_true(inotify_add_watch(in, fifo, IN_OPEN) >= 0);
	assert_true(inotify_add_watch(in, null, IN_OPEN) >= 0);

	ctx_init(&ctx, &s);
	assert_int_equal(files_scan_pid(&ctx, getpid()), 0);
	n = read(in, ev, sizeof(ev));
	assert_true(n < 0 && errno == EAGAIN); /* no IN_OPEN event: nothing was opened */
	assert_true(ctx.skipped[SKIP_NOT_REGULAR] >= 2); /* and /proc's directory */
	ctx_done(&ctx);
	close(in);
	close(fd_fifo);
	close(fd_null);
	unlink(fifo);
	if (strcmp(null, "/dev/null") != 0)
		unlink(null);
}

/*
 * The permission rule against what an unprivileged process holds, its descriptors opened as root
 * before it became nobody: root's file read-only (not reported: it could not ask), root's file
 * open for writing (reported: FMODE_WRITE, known from fdinfo only), a file anyone may write and
 * its own file read-only or write-only (reported, whatever the descriptor), its own file by
 * O_PATH alone (not reported: O_PATH gives nothing, even to the owner). Needs root to make the
 * nobody process.
 */
static void test_holder_rule(void **state)
{
	static const char *const names[] = { "h-rootro", "h-rootw", "h-worldw", "h-own",
					     "h-ownpath", "h-ownw" };
	static const int modes[] = { O_RDONLY, O_WRONLY, O_RDONLY, O_RDONLY, O_PATH, O_WRONLY };
	int sync_fd[2], fds[6], status, r;
	struct files_ctx ctx;
	struct seen s;
	char p[300], c;
	pid_t pid, parent;

	(void)state;
	if (geteuid() != 0) {
		print_message("skipped: making a nobody process needs root\n");
		skip();
	}
	for (size_t i = 0; i < 6; i++) {
		put(names[i], 100);
		snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
		assert_int_equal(chmod(p, i == 2 ? 0666 : 0644), 0);
		if (i >= 3)
			assert_int_equal(chown(p, 65534, 65534), 0);
		fds[i] = open(p, modes[i] | O_CLOEXEC);
		assert_true(fds[i] >= 0);
	}
	assert_int_equal(pipe2(sync_fd, O_CLOEXEC), 0);
	parent = getpid();
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* nobody, no groups, no capabilities; the descriptors stay */
		if (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 ||
		    setresuid(65534, 65534, 65534) < 0)
			_exit(1);
		/* after the setresuid, which clears it: dies with a test that crashed */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
			_exit(3);
		if (write(sync_fd[1], "r", 1) != 1)
			_exit(2);
		for (;;)
			pause();
	}
	for (size_t i = 0; i < 6; i++)
		close(fds[i]);
	close(sync_fd[1]);
	assert_int_equal(read(sync_fd[0], &c, 1), 1);
	close(sync_fd[0]);

	ctx_init(&ctx, &s);
	/* the holder is gone before anything is asserted: a failure must not leave it paused */
	r = files_scan_pid(&ctx, pid);
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(r, 0);
	assert_false(saw(&s, "/h-rootro"));
	assert_true(saw(&s, "/h-rootw"));
	assert_true(saw(&s, "/h-worldw"));
	assert_true(saw(&s, "/h-own"));
	assert_false(saw(&s, "/h-ownpath"));
	assert_true(saw(&s, "/h-ownw"));
	/* root's file read-only and the O_PATH one; its binary and libraries are root's too */
	assert_true(ctx.skipped[SKIP_NO_ACCESS] >= 2);
	ctx_done(&ctx);
}

/* Root holding a file by O_PATH alone: not reported either, whatever root could open. */
static void test_root_opath(void **state)
{
	struct files_ctx ctx;
	struct seen s;
	char p[300];
	int fd;

	(void)state;
	put("r-path", 100);
	snprintf(p, sizeof(p), "%s/r-path", dir);
	fd = open(p, O_PATH | O_CLOEXEC);
	assert_true(fd >= 0);
	ctx_init(&ctx, &s);
	assert_int_equal(files_scan_pid(&ctx, getpid()), 0);
	assert_false(saw(&s, "/r-path"));
	assert_true(saw(&s, "/test-files")); /* the scan did see the process's files */
	ctx_done(&ctx);
	close(fd);
}

/* A visitor that asks cachestat as the collector does, and notes how big.dat came each time. */
struct asked {
	struct pagecache pc;
	int n_big;
	uint64_t big_cached[4]; /* its nr_cache */
	bool big_fd[4];         /* opened */
	bool big_call[4];       /* asked of the kernel */
};

static int ask(struct files_ctx *ctx, const struct files_entry *e)
{
	struct asked *a = ctx->userdata;
	struct pagecache_cachestat cs;
	char *name = files_entry_name(ctx, e);
	int calls = fake_calls();

	assert_non_null(name);
	assert_int_equal(files_cachestat(ctx, &a->pc, e, &cs), 0);
	if (strstr(name, "/big.dat") && a->n_big < 4) {
		a->big_cached[a->n_big] = cs.nr_cache;
		a->big_fd[a->n_big] = e->fd >= 0;
		a->big_call[a->n_big++] = fake_calls() > calls;
	}
	free(name);
	return 0;
}

/* Resident pages of a file by mincore(2): the oracle for cachestat's nr_cache. */
static uint64_t resident_pages(const char *path, size_t size)
{
	long ps = sysconf(_SC_PAGESIZE);
	size_t pages = (size + (size_t)ps - 1) / (size_t)ps;
	unsigned char vec[1024];
	uint64_t n = 0;
	void *m;
	int fd;

	assert_true(pages <= sizeof(vec));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	m = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	assert_true(m != MAP_FAILED);
	assert_int_equal(mincore(m, size, vec), 0);
	for (size_t i = 0; i < pages; i++)
		n += vec[i] & 1;
	munmap(m, size);
	close(fd);
	return n;
}

/*
 * A large file counted in three cgroups (by a walk, the walk again, a descriptor held): the
 * kernel is asked about it once, and every cgroup gets the numbers mincore gives. The held
 * descriptor's file is not even reopened: inotify counts two opens, the two walks'.
 */
static void test_large_file_asked_once(void **state)
{
	size_t big = 2 << 20;
	struct files_ctx ctx;
	struct asked a = { 0 };
	char d[300], p[320], ev[4096];
	int in, held, opens = 0, calls;
	uint64_t want;
	ssize_t n;

	(void)state;
	if (pagecache_probe_default(&a.pc) < 0 || a.pc.abi == PAGECACHE_ABI_NONE) {
		print_message("skipped: no cachestat(2) in this kernel\n");
		skip();
	}
	fake.kernel = FAKE_REAL; /* the running kernel's cachestat(2), counted */
	a.pc.sys = fake_cachestat;
	snprintf(d, sizeof(d), "%s/bigdir", dir);
	assert_int_equal(mkdir(d, 0755), 0);
	put("bigdir/big.dat", big);
	put("bigdir/small.dat", 100);
	snprintf(p, sizeof(p), "%s/big.dat", d);
	want = resident_pages(p, big);
	assert_true(want > 0);
	held = open(p, O_RDONLY | O_CLOEXEC);
	assert_true(held >= 0);
	in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	assert_true(in >= 0);
	assert_true(inotify_add_watch(in, d, IN_OPEN) >= 0);

	ctx = (struct files_ctx){ .procfs_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC),
				    .visit = ask, .userdata = &a, .budget = 1000 };
	assert_true(ctx.procfs_fd >= 0);
	assert_int_equal(files_scan_path(&ctx, d), 0);
	/* the next cgroup: the set is cleared, not the answers */
	files_cgroup_begin(&ctx, 1000, 1);
	calls = fake_calls();
	assert_int_equal(files_scan_path(&ctx, d), 0);
	assert_int_equal(fake_calls() - calls, 1); /* small.dat, asked again */
	files_cgroup_begin(&ctx, 1000, 1);
	assert_int_equal(files_scan_pid(&ctx, getpid()), 0);
	assert_int_equal(a.n_big, 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(a.big_cached[i], want);
		assert_int_equal(a.big_call[i], i == 0);
		assert_int_equal(a.big_fd[i], i < 2);
	}
	while ((n = read(in, ev, sizeof(ev))) > 0) {
		for (char *q = ev; q < ev + n;) {
			const struct inotify_event *iev = (const struct inotify_event *)q;

			opens += iev->len > 0 && strcmp(iev->name, "big.dat") == 0;
			q += sizeof(*iev) + iev->len;
		}
	}
	assert_int_equal(opens, 2);
	files_ctx_done(&ctx);
	close(ctx.procfs_fd);
	close(in);
	close(held);
}

/* Only EPERM says map_files is closed; an unreadable file or a gone process is counted. */
/*
 * A cgroup's share of the scan time: up to the deadline less a reserve for each cgroup after
 * it, never less than an equal share of what is left; the budget counts every descriptor.
 */
static void test_cgroup_share(void **state)
{
	struct files_ctx ctx = { .procfs_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC) };
	uint64_t now = files_now_ns(), s = 1000000000ULL;

	(void)state;
	assert_true(ctx.procfs_fd >= 0);
	ctx.deadline_ns = now + 10 * s;
	ctx.reserve_ns = s;
	files_cgroup_begin(&ctx, 5, 3); /* 2 after it: 2 s kept, 8 s for it */
	assert_true(ctx.slice_deadline_ns >= now + 8 * s - s / 10 && ctx.slice_deadline_ns <= now + 8 * s);
	files_cgroup_begin(&ctx, 5, 21); /* 20 s to keep of 10: an equal share, 0.48 s */
	assert_true(ctx.slice_deadline_ns >= now + 10 * s / 21 - s / 10 &&
		    ctx.slice_deadline_ns <= now + 10 * s / 21 + s / 10);
	assert_int_equal(ctx.budget, 5);
	assert_false(files_stopped(&ctx));
	ctx.slice_deadline_ns = 1; /* passed */
	assert_int_equal(files_scan_pid(&ctx, getpid()), 0);
	assert_true(files_stopped(&ctx));
	assert_false(ctx.timed_out);
	files_cgroup_begin(&ctx, 5, 1);
	assert_false(files_stopped(&ctx));
	files_ctx_done(&ctx);
	close(ctx.procfs_fd);
}

static void test_map_files_closed(void **state)
{
	(void)state;
	assert_true(files_map_files_closed(EPERM));
	assert_false(files_map_files_closed(EACCES));
	assert_false(files_map_files_closed(ENOENT));
	assert_false(files_map_files_closed(ESRCH));
	assert_false(files_map_files_closed(0));
}

#ifndef CAP_CHECKPOINT_RESTORE
#define CAP_CHECKPOINT_RESTORE 40
#endif

/*
 * The scan of a child's own pid without CAP_SYS_ADMIN and CAP_CHECKPOINT_RESTORE: map_files
 * can be listed but its links not followed, so the mappings come from maps. Exit status 0 when
 * a file mapped and no longer open (the child's copy of a.log) was counted and nothing skipped
 * for eperm; the step that went wrong otherwise.
 */
static int child_scan_without_checkpoint_restore(void)
{
	struct files_ctx ctx;
	struct seen s;
	char p[300];
	void *map;
	int fd;

	snprintf(p, sizeof(p), "%s/a.log", dir);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 2;
	map = mmap(NULL, 100, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return 3;
	capng_get_caps_process();
	capng_update(CAPNG_DROP, CAPNG_EFFECTIVE | CAPNG_PERMITTED, CAP_SYS_ADMIN);
	capng_update(CAPNG_DROP, CAPNG_EFFECTIVE | CAPNG_PERMITTED, CAP_CHECKPOINT_RESTORE);
	if (capng_apply(CAPNG_SELECT_CAPS) < 0)
		return 4;
	memset(&s, 0, sizeof(s));
	ctx = (struct files_ctx){
		.procfs_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC),
		.visit = record,
		.userdata = &s,
		.budget = 1000,
	};
	if (ctx.procfs_fd < 0)
		return 5;
	if (files_scan_pid(&ctx, getpid()) != 0)
		return 6;
	if (!ctx.map_files_closed)
		return 7;
	if (!saw(&s, "/a.log"))
		return 8;
	if (ctx.skipped[SKIP_EPERM] != 0)
		return 9;
	/* a second process (here the same one) goes to maps straight away */
	fileset_clear(&ctx.seen);
	s.n = 0;
	if (files_scan_pid(&ctx, getpid()) != 0 || !saw(&s, "/a.log"))
		return 10;
	return 0;
}

static void test_map_files_fallback(void **state)
{
	int status;
	pid_t pid;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(child_scan_without_checkpoint_restore());
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/*
 * A stand-in for /proc/PID below dir/fakeproc/PID, for what a real process cannot be made to
 * show on demand: a status of uid 1000 whose own user namespace is ours, no descriptor, the
 * given maps and cgroup, and map_files/1000-2000 a link to map_target.
 */
static void fake_pid(const char *pid, const char *maps, const char *cgroup, const char *map_target)
{
	static const char status[] = "Uid:\t1000\t1000\t1000\t1000\n"
				     "Gid:\t1000\t1000\t1000\t1000\nGroups:\t\nCapEff:\t0\n";
	const char *const files[][2] = { { "status", status }, { "maps", maps }, { "cgroup", cgroup } };
	char p[300], ns[64];
	ssize_t n;
	FILE *f;

	snprintf(p, sizeof(p), "%s/fakeproc", dir);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/fakeproc/%s", dir, pid);
	assert_int_equal(mkdir(p, 0755), 0);
	for (const char *sub = "fd\0map_files\0ns\0"; *sub; sub += strlen(sub) + 1) {
		snprintf(p, sizeof(p), "%s/fakeproc/%s/%s", dir, pid, sub);
		assert_int_equal(mkdir(p, 0755), 0);
	}
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(p, sizeof(p), "%s/fakeproc/%s/%s", dir, pid, files[i][0]);
		f = fopen(p, "we");
		assert_non_null(f);
		fputs(files[i][1], f);
		fclose(f);
	}
	n = readlink("/proc/self/ns/user", ns, sizeof(ns) - 1);
	assert_true(n > 0);
	ns[n] = '\0';
	snprintf(p, sizeof(p), "%s/fakeproc/%s/ns/user", dir, pid);
	assert_int_equal(symlink(ns, p), 0);
	snprintf(p, sizeof(p), "%s/fakeproc/%s/map_files/1000-2000", dir, pid);
	assert_int_equal(symlink(map_target, p), 0);
}

/* A files context over dir/fakeproc instead of /proc. */
static void ctx_init_fake(struct files_ctx *ctx, struct seen *s)
{
	char p[300];

	ctx_init(ctx, s);
	close(ctx->procfs_fd);
	snprintf(p, sizeof(p), "%s/fakeproc", dir);
	ctx->procfs_fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(ctx->procfs_fd >= 0);
}

/*
 * A mapping swapped between the read of maps and the open of map_files: maps says the user's
 * own file (shared writable), with the inode number of root's file on another device; the
 * address then maps root's file. The object opened is not the one judged: skipped. The same
 * line with root's own device is admitted (a shared writable mapping implies a writer).
 */
static void test_mapping_swapped(void **state)
{
	char p[300], line[600], victim[300];
	struct files_ctx ctx;
	struct stat st;
	struct seen s;

	(void)state;
	put("map-victim", 100);
	snprintf(victim, sizeof(victim), "%s/map-victim", dir);
	assert_int_equal(stat(victim, &st), 0);
	snprintf(line, sizeof(line), "1000-2000 rw-s 00000000 %x:%x %llu %s/own-tmpfs-file\n",
		 major(st.st_dev) + 1, minor(st.st_dev), (unsigned long long)st.st_ino, dir);
	fake_pid("4001", line, "0::/\n", victim);
	snprintf(line, sizeof(line), "1000-2000 rw-s 00000000 %x:%x %llu %s\n", major(st.st_dev),
		 minor(st.st_dev), (unsigned long long)st.st_ino, victim);
	fake_pid("4002", line, "0::/\n", victim);

	ctx_init_fake(&ctx, &s);
	assert_int_equal(files_scan_pid(&ctx, 4001), 0);
	assert_false(saw(&s, "/map-victim"));
	assert_int_equal(ctx.skipped[SKIP_VANISHED], 1);
	fileset_clear(&ctx.seen);
	assert_int_equal(files_scan_pid(&ctx, 4002), 0);
	assert_true(saw(&s, "/map-victim"));
	ctx_done(&ctx);
	snprintf(p, sizeof(p), "%s/fakeproc", dir);
	assert_int_equal(tree_remove(p), 0);
}

/*
 * A recycled pid: cgroup.procs of the scanned cgroup listed it, and by the time /proc/PID is
 * opened it is a process of another cgroup (here a stand-in whose cgroup file says so). Its
 * files are not the cgroup's: skipped, counted as vanished. The same process in the scanned
 * cgroup (v2, or the v1 memory hierarchy's line) is scanned.
 */
static void test_recycled_pid(void **state)
{
	static const struct {
		const char *pid, *cgroup;
		bool v1, counted;
	} cases[] = {
		{ "4101", "0::/tenant/other\n", false, false },
		{ "4102", "0::/tenant/scanned/child\n", false, false },
		{ "4103", "0::/tenant/scanned\n", false, true },
		{ "4104", "5:memory:/tenant/other\n0::/tenant/scanned\n", true, false },
		{ "4105", "5:cpu:/tenant/other\n4:memory:/tenant/scanned\n0::/\n", true, true },
	};
	char p[300], line[600], file[300];
	struct files_ctx ctx;
	struct stat st;
	struct seen s;

	(void)state;
	put("recycled-own", 100);
	snprintf(file, sizeof(file), "%s/recycled-own", dir);
	assert_int_equal(stat(file, &st), 0);
	/* a shared writable mapping: admitted whoever owns the file */
	snprintf(line, sizeof(line), "1000-2000 rw-s 00000000 %x:%x %llu %s\n", major(st.st_dev),
		 minor(st.st_dev), (unsigned long long)st.st_ino, file);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		fake_pid(cases[i].pid, line, cases[i].cgroup, file);

	ctx_init_fake(&ctx, &s);
	ctx.cgroup = "/tenant/scanned";
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t vanished = ctx.skipped[SKIP_VANISHED];

		fileset_clear(&ctx.seen);
		s.n = 0;
		ctx.cgroup_memory_v1 = cases[i].v1;
		assert_int_equal(files_scan_pid(&ctx, atoi(cases[i].pid)), 0);
		assert_int_equal(saw(&s, "/recycled-own"), cases[i].counted);
		assert_int_equal(ctx.skipped[SKIP_VANISHED] - vanished, cases[i].counted ? 0 : 1);
	}
	/* no cgroup to compare with (configured paths, a tree not on a cgroup file system) */
	ctx.cgroup = NULL;
	fileset_clear(&ctx.seen);
	s.n = 0;
	assert_int_equal(files_scan_pid(&ctx, 4101), 0);
	assert_true(saw(&s, "/recycled-own"));
	ctx_done(&ctx);
	snprintf(p, sizeof(p), "%s/fakeproc", dir);
	assert_int_equal(tree_remove(p), 0);
}

/*
 * A process holding more descriptors than max_fds_per_process: the scan reads that many of
 * them and stops (one process_cap skip), so its cost is the cap's, not the process's. The
 * oracle is the budget: what it charged, against the descriptors the child holds.
 */
static void test_descriptor_cap(void **state)
{
	int ready[2], fd, status;
	struct files_ctx ctx;
	struct seen s;
	char p[300];
	pid_t pid;

	(void)state;
	assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
	snprintf(p, sizeof(p), "%s/a.log", dir);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		fd = open(p, O_RDONLY);
		for (int i = 0; i < 500; i++)
			if (dup(fd) < 0)
				_exit(1);
		if (write(ready[1], "x", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(ready[1]);
	assert_int_equal(read(ready[0], p, 1), 1);
	close(ready[0]);

	ctx_init(&ctx, &s);
	ctx.budget = 100000;
	ctx.max_maps_per_process = 0;
	assert_int_equal(files_scan_pid(&ctx, pid), 0);
	assert_true(100000 - ctx.budget > 500); /* no cap: every descriptor charged */
	assert_int_equal(ctx.skipped[SKIP_PROCESS_CAP], 0);
	assert_false(ctx.fds_capped);
	ctx_done(&ctx);

	ctx_init(&ctx, &s);
	ctx.budget = 100000;
	ctx.max_fds_per_process = 100;
	ctx.max_maps_per_process = 1000;
	assert_int_equal(files_scan_pid(&ctx, pid), 0);
	assert_true(100000 - ctx.budget <= 100 + 1000);
	assert_true(100000 - ctx.budget < 500);
	assert_int_equal(ctx.skipped[SKIP_PROCESS_CAP], 1);
	assert_true(ctx.fds_capped);
	assert_true(saw(&s, "/a.log")); /* what it did read still counts */
	ctx_done(&ctx);
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, &status, 0), pid);
}

/* A file named mapped-late below ten directories of 250 bytes' names: its path into buf. */
static void long_path(char *buf, size_t size)
{
	char name[251];
	int used;

	memset(name, 'd', 250);
	name[250] = '\0';
	used = snprintf(buf, size, "%s", dir);
	for (int i = 0; i < 10; i++) {
		used += snprintf(buf + used, size - (size_t)used, "/%s", name);
		assert_true(mkdir(buf, 0755) == 0 || errno == EEXIST);
	}
	snprintf(buf + used, size - (size_t)used, "/mapped-late");
	fclose(fopen(buf, "we"));
}

/* A stand-in's maps of pad lines (an anonymous mapping each), then a line mapping file. */
static void fake_maps(const char *pid, size_t pad_lines, size_t pad_bytes, const char *file)
{
	char p[300], *pad = malloc(pad_bytes + 1), line[3200];
	struct stat st;
	FILE *f;

	assert_non_null(pad);
	memset(pad, 'p', pad_bytes);
	pad[pad_bytes] = '\0';
	assert_int_equal(stat(file, &st), 0);
	snprintf(line, sizeof(line), "1000-2000 rw-s 00000000 %x:%x %llu %s\n", major(st.st_dev),
		 minor(st.st_dev), (unsigned long long)st.st_ino, file);
	fake_pid(pid, "", "0::/\n", file);
	snprintf(p, sizeof(p), "%s/fakeproc/%s/maps", dir, pid);
	f = fopen(p, "we");
	assert_non_null(f);
	for (size_t i = 0; i < pad_lines; i++)
		fprintf(f, "%zx-%zx r--p 00000000 00:00 0 %s\n", 0x10000 + i * 0x2000,
			0x11000 + i * 0x2000, pad);
	fputs(line, f);
	fclose(f);
	free(pad);
}

/*
 * maps is read a line at a time, at most max_maps_per_process lines: a file mapped on the
 * line past the cap is not reached (one process_cap skip); at the cap it is. A maps file of
 * 20 MiB (more than any whole-file read of the exporter takes) and a line longer than any
 * path are read through, and the mapping after them found.
 */
static void test_mapping_cap_and_long_maps(void **state)
{
	char p[300], file[300], deep[3000];
	struct files_ctx ctx;
	struct seen s;

	(void)state;
	put("mapped-late", 100);
	snprintf(file, sizeof(file), "%s/mapped-late", dir);
	fake_maps("4201", 9, 10, file);
	fake_maps("4202", 5000, 4096, file); /* 20 MiB of lines of a path's length */
	fake_maps("4203", 1, 70000, file);   /* a line no path makes */
	long_path(deep, sizeof(deep));
	fake_maps("4204", 1, 10, deep);       /* a file whose path is 2,500 bytes long */

	ctx_init_fake(&ctx, &s);
	ctx.max_maps_per_process = 9;
	assert_int_equal(files_scan_pid(&ctx, 4201), 0);
	assert_false(saw(&s, "/mapped-late"));
	assert_int_equal(ctx.skipped[SKIP_PROCESS_CAP], 1);
	assert_true(ctx.maps_capped);

	fileset_clear(&ctx.seen);
	ctx.max_maps_per_process = 10;
	assert_int_equal(files_scan_pid(&ctx, 4201), 0);
	assert_true(saw(&s, "/mapped-late"));

	for (const char *pid = "4202\0" "4203\0" "4204\0"; *pid; pid += strlen(pid) + 1) {
		fileset_clear(&ctx.seen);
		s.n = 0;
		ctx.max_maps_per_process = 0;
		assert_int_equal(files_scan_pid(&ctx, atoi(pid)), 0);
		assert_true(saw(&s, "/mapped-late"));
	}
	assert_int_equal(ctx.skipped[SKIP_PROCESS_CAP], 1);
	ctx_done(&ctx);
	snprintf(p, sizeof(p), "%s/fakeproc", dir);
	assert_int_equal(tree_remove(p), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_walk_dedupe),
		cmocka_unit_test(test_glob_and_missing),
		cmocka_unit_test(test_glob_symlink),
		cmocka_unit_test(test_budget),
		cmocka_unit_test(test_deadline),
		cmocka_unit_test(test_deadline_during_walk),
		cmocka_unit_test(test_scan_own_pid),
		cmocka_unit_test(test_special_files_never_opened),
		cmocka_unit_test(test_holder_rule),
		cmocka_unit_test(test_root_opath),
		cmocka_unit_test(test_large_file_asked_once),
		cmocka_unit_test(test_map_files_closed),
		cmocka_unit_test(test_cgroup_share),
		cmocka_unit_test(test_map_files_fallback),
		cmocka_unit_test(test_mapping_swapped),
		cmocka_unit_test(test_recycled_pid),
		cmocka_unit_test(test_descriptor_cap),
		cmocka_unit_test(test_mapping_cap_and_long_maps),
	};

	return cmocka_run_group_tests_name("files", tests, setup, teardown);
}
