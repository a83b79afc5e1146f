/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Dropping privileges and the seccomp allow-list, each in a fresh child (both are one-way).
 * Needs root for the drop; skipped, with the reason, otherwise.
 */
#define _GNU_SOURCE
#include <cap-ng.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cmocka.h>

#include "privsep/sandbox.h"

/* Runs fn in a child; its exit status is 0 on success, else the number of the failed check. */
static int in_child(int (*fn)(void))
{
	int status;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0)
		_exit(fn());
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (WIFSIGNALED(status))
		return 1000 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

static void *thread_caps(void *arg)
{
	/* a thread started after the drop sees the same, reduced, set */
	*(int *)arg = capng_get_caps_process() == 0 &&
		      capng_have_capability(CAPNG_EFFECTIVE, CAP_SYS_PTRACE) &&
		      !capng_have_capability(CAPNG_EFFECTIVE, CAP_SYS_ADMIN);
	return NULL;
}

static int child_drop(void)
{
	struct sandbox_result res;
	char *err = NULL;
	pthread_t t;
	int ok = 0;

	if (sandbox_drop("nobody", &res, &err) != 0) {
		fprintf(stderr, "sandbox_drop: %s\n", err ? err : "?");
		return 2;
	}
	if (!res.changed_user || getuid() == 0 || geteuid() == 0 || getgid() == 0)
		return 3;
	if (capng_get_caps_process() < 0)
		return 4;
	if (!capng_have_capability(CAPNG_EFFECTIVE, CAP_SYS_PTRACE) ||
	    !capng_have_capability(CAPNG_EFFECTIVE, CAP_DAC_READ_SEARCH) ||
	    !capng_have_capability(CAPNG_EFFECTIVE, CAP_FOWNER))
		return 5;
	if (capng_have_capability(CAPNG_PERMITTED, CAP_SYS_ADMIN) ||
	    capng_have_capability(CAPNG_PERMITTED, CAP_DAC_OVERRIDE) ||
	    capng_have_capability(CAPNG_PERMITTED, CAP_SETUID) ||
	    capng_have_capability(CAPNG_PERMITTED, CAP_NET_BIND_SERVICE) ||
	    capng_have_capability(CAPNG_BOUNDING_SET, CAP_SYS_ADMIN))
		return 6;
	if (setuid(0) == 0)
		return 7;
	if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1)
		return 8;
	/* CAP_DAC_READ_SEARCH: a root-only file still reads; it does not write */
	if (access("/etc/shadow", F_OK) == 0) {
		int fd = open("/etc/shadow", O_RDONLY);

		if (fd < 0)
			return 9;
		close(fd);
		if (open("/etc/shadow", O_WRONLY) >= 0 || errno != EACCES)
			return 10;
	}
	if (pthread_create(&t, NULL, thread_caps, &ok) != 0 || pthread_join(t, NULL) != 0 || !ok)
		return 11;
	return 0;
}

static void test_drop(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip(); /* the drop from root to nobody needs root */
	assert_int_equal(in_child(child_drop), 0);
}

static int child_drop_keep_uid(void)
{
	struct sandbox_result res;
	char *err = NULL;

	if (sandbox_drop(NULL, &res, &err) != 0)
		return 2;
	if (res.changed_user || getuid() != 0)
		return 3;
	if (capng_get_caps_process() < 0 ||
	    capng_have_capability(CAPNG_PERMITTED, CAP_SYS_ADMIN) ||
	    !capng_have_capability(CAPNG_EFFECTIVE, CAP_FOWNER))
		return 4;
	return 0;
}

static void test_drop_keep_uid(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip();
	assert_int_equal(in_child(child_drop_keep_uid), 0);
}

/* Root given only a few capabilities (a container's): it cannot become nobody, and stays. */
static int child_root_without_setuid(void)
{
	struct sandbox_result res;
	char *err = NULL;

	capng_clear(CAPNG_SELECT_BOTH);
	capng_updatev(CAPNG_ADD, CAPNG_EFFECTIVE | CAPNG_PERMITTED | CAPNG_BOUNDING_SET,
		      CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH, CAP_FOWNER, -1);
	if (capng_apply(CAPNG_SELECT_BOTH) < 0)
		return 2;
	if (sandbox_drop("nobody", &res, &err) != 0) {
		fprintf(stderr, "sandbox_drop: %s\n", err ? err : "?");
		return 3;
	}
	if (res.changed_user || !res.stayed_root || getuid() != 0)
		return 4;
	if (capng_get_caps_process() < 0 || !capng_have_capability(CAPNG_EFFECTIVE, CAP_FOWNER) ||
	    capng_have_capability(CAPNG_PERMITTED, CAP_SETUID))
		return 5;
	return 0;
}

static void test_root_without_setuid(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip();
	assert_int_equal(in_child(child_root_without_setuid), 0);
}

/* Root given the four and CAP_SETUID/CAP_SETGID but not CAP_SETPCAP (the DaemonSet): it leaves root. */
static int child_root_without_setpcap(void)
{
	struct sandbox_result res;
	char *err = NULL;

	capng_clear(CAPNG_SELECT_BOTH);
	capng_updatev(CAPNG_ADD, CAPNG_EFFECTIVE | CAPNG_PERMITTED | CAPNG_BOUNDING_SET,
		      CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH, CAP_FOWNER, CAP_SETUID, CAP_SETGID, -1);
	if (capng_apply(CAPNG_SELECT_BOTH) < 0)
		return 2;
	if (sandbox_drop("nobody", &res, &err) != 0) {
		fprintf(stderr, "sandbox_drop: %s\n", err ? err : "?");
		return 3;
	}
	if (!res.changed_user || res.stayed_root || getuid() == 0 || geteuid() == 0)
		return 4;
	if (capng_get_caps_process() < 0 || !capng_have_capability(CAPNG_EFFECTIVE, CAP_FOWNER) ||
	    capng_have_capability(CAPNG_PERMITTED, CAP_SETUID))
		return 5;
	return 0;
}

static void test_root_without_setpcap(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip();
	assert_int_equal(in_child(child_root_without_setpcap), 0);
}

static int child_unknown_user(void)
{
	struct sandbox_result res;
	char *err = NULL;
	int r = sandbox_drop("no-such-user-here", &res, &err);

	if (r >= 0 || !err || !strstr(err, "no-such-user-here"))
		return 2;
	free(err);
	return 0;
}

static void test_unknown_user(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip();
	assert_int_equal(in_child(child_unknown_user), 0);
}

static void *thread_socket(void *arg)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	*(int *)arg = fd < 0 && errno == EPERM;
	return NULL;
}

static int child_seccomp(void)
{
	char *err = NULL;
	char path[] = "/tmp/test-privs.XXXXXX";
	int fd, ok = 0;
	pthread_t t;
	long r;

	fd = mkstemp(path); /* made before the filter: the filter must not let it be written */
	if (fd < 0)
		return 2;
	close(fd);
	if (sandbox_seccomp(&err) != 0) {
		fprintf(stderr, "sandbox_seccomp: %s\n", err ? err : "?");
		return 3;
	}
	/* allowed: read-only opens, directories, threads, time, cachestat */
	fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 4;
	close(fd);
	fd = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return 5;
	close(fd);
	if (pthread_create(&t, NULL, thread_socket, &ok) != 0 || pthread_join(t, NULL) != 0)
		return 6;
	if (!ok)
		return 7; /* the thread could make a socket */
	r = syscall(PRIVS_NR_CACHESTAT, -1, NULL, NULL, 0);
	if (r == 0 || errno == EPERM)
		return 8;
	/* the scan's way to another process's open files: O_PATH, statx, reopen read-only */
	fd = open("/proc/self/fd/0", O_PATH | O_CLOEXEC);
	if (fd < 0)
		return 19;
	{
		struct statx sx;

		if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_MNT_ID, &sx) < 0)
			return 20;
	}
	close(fd);
	/* duplicating another process's descriptors is not the scan's business */
	if (syscall(SYS_pidfd_getfd, -1, 0, 0) >= 0 || errno != EPERM)
		return 21;
	/* refused: writing opens, new sockets, exec, chmod, namespaces, ptrace */
	if (open(path, O_WRONLY) >= 0 || errno != EPERM)
		return 9;
	if (open(path, O_RDONLY | O_TRUNC) >= 0 || errno != EPERM)
		return 10;
	if (openat(AT_FDCWD, "/tmp/test-privs-new", O_RDONLY | O_CREAT, 0600) >= 0 || errno != EPERM)
		return 11;
	if (socket(AF_UNIX, SOCK_STREAM, 0) >= 0 || errno != EPERM)
		return 12;
	if (chmod(path, 0777) == 0 || errno != EPERM)
		return 13;
	if (unshare(CLONE_NEWUSER) == 0 || errno != EPERM)
		return 14;
	if (syscall(SYS_clone3, NULL, 0) >= 0 || errno != ENOSYS)
		return 15;
	if (execl("/bin/true", "true", (char *)NULL) == 0 || errno != EPERM)
		return 16;
	if (syscall(SYS_ptrace, 0, 0, 0, 0) == 0 || errno != EPERM)
		return 17;
	if (unlink(path) == 0 || errno != EPERM)
		return 18;
	/* allowed: the overlay xattrs (read), and the fanotify collector's marks (EBADF here) */
	{
		char v[8];

		if (getxattr("/tmp", "trusted.overlay.metacopy", v, sizeof(v)) < 0 && errno == EPERM)
			return 22;
		if (syscall(SYS_fanotify_mark, -1, 0, 0, AT_FDCWD, "/") < 0 && errno == EPERM)
			return 23;
	}
	return 0;
}

/* The HTTP process: nothing held, not dumpable. */
static int child_drop_all(void)
{
	char *err = NULL;

	if (sandbox_drop_all(&err) != 0) {
		fprintf(stderr, "sandbox_drop_all: %s\n", err ? err : "?");
		return 2;
	}
	if (capng_get_caps_process() != 0 || capng_have_capabilities(CAPNG_SELECT_CAPS) != CAPNG_NONE)
		return 3;
	if (prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) != 0)
		return 4;
	if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1)
		return 5;
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, CAP_SYS_PTRACE, 0, 0) != 0)
		return 6;
	return 0;
}

static void test_drop_all(void **state)
{
	(void)state;
	assert_int_equal(in_child(child_drop_all), 0);
}

/*
 * fcntl under a filter: the commands that would make the kernel signal a process of the
 * caller's choice are refused; those the daemon uses pass. 0, or the number of the failed check.
 */
static int fcntl_checks(void)
{
	int p[2], fd, fl;

	if (pipe2(p, O_CLOEXEC) < 0)
		return 30;
	/* refused: the owner and signal of SIGIO, O_ASYNC, leases and dnotify */
	if (fcntl(p[0], F_SETOWN, getppid()) != -1 || errno != EPERM)
		return 31;
	{
		struct f_owner_ex o = { F_OWNER_PID, getppid() };

		if (fcntl(p[0], F_SETOWN_EX, &o) != -1 || errno != EPERM)
			return 32;
	}
	if (fcntl(p[0], F_SETSIG, SIGSTOP) != -1 || errno != EPERM)
		return 33;
	if (fcntl(p[0], F_SETFL, O_ASYNC) != -1 || errno != EPERM)
		return 34;
	if (fcntl(p[0], F_SETFL, O_ASYNC | O_NONBLOCK) != -1 || errno != EPERM)
		return 35;
	if (fcntl(p[0], F_GETFL) & O_ASYNC)
		return 36;
	if (fcntl(p[0], F_SETLEASE, F_RDLCK) != -1 || errno != EPERM)
		return 37;
	if (fcntl(p[0], F_NOTIFY, DN_MODIFY) != -1 || errno != EPERM)
		return 38;
	/* a command number with bits above the int the kernel reads is not F_GETFL */
	if (syscall(SYS_fcntl, p[0], (1UL << 32) | F_SETOWN, getppid()) != -1 || errno != EPERM)
		return 39;
	/* allowed: descriptor flags, O_NONBLOCK, duplicates */
	fl = fcntl(p[0], F_GETFL);
	if (fl < 0 || fcntl(p[0], F_SETFL, fl | O_NONBLOCK) != 0 ||
	    !(fcntl(p[0], F_GETFL) & O_NONBLOCK))
		return 40;
	if (fcntl(p[0], F_SETFD, 0) != 0 || fcntl(p[0], F_GETFD) != 0 ||
	    fcntl(p[0], F_SETFD, FD_CLOEXEC) != 0 || fcntl(p[0], F_GETFD) != FD_CLOEXEC)
		return 41;
	fd = fcntl(p[0], F_DUPFD_CLOEXEC, 3);
	if (fd < 3 || fcntl(fd, F_GETFD) != FD_CLOEXEC)
		return 42;
	close(fd);
	/* the channel's seals: EINVAL on a pipe, not EPERM */
	if (fcntl(p[0], F_GET_SEALS) != -1 || errno != EINVAL)
		return 43;
	close(p[0]);
	close(p[1]);
	return 0;
}

static void *thread_nothing(void *arg)
{
	return arg;
}

/* What the HTTP process's filter lets through, and what it refuses, on top of the scanner's. */
static int child_seccomp_http(void)
{
	struct rlimit rl;
	char *err = NULL, buf[4];
	int p[2], fd;
	pthread_t t;

	if (pipe2(p, O_CLOEXEC) < 0 || sandbox_seccomp(&err) != 0 || sandbox_seccomp_http(&err) != 0) {
		fprintf(stderr, "filters: %s\n", err ? err : "?");
		return 2;
	}
	/* allowed: threads, its descriptors, its own limits read, signals to itself */
	if (pthread_create(&t, NULL, thread_nothing, NULL) != 0 || pthread_join(t, NULL) != 0)
		return 3;
	if (write(p[1], "ok", 2) != 2 || read(p[0], buf, 2) != 2)
		return 4;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return 5;
	if (syscall(SYS_tgkill, getpid(), gettid(), 0) != 0)
		return 6;
	/* refused: any open, a new process, signals and limits of another, ptrace, its memory */
	fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	if (fd >= 0 || errno != EPERM)
		return 7;
	if (fork() >= 0 || errno != EPERM)
		return 8;
	if (kill(getppid(), 0) == 0 || errno != EPERM)
		return 9;
	if (syscall(SYS_tgkill, getppid(), getppid(), 0) == 0 || errno != EPERM)
		return 10;
	if (prlimit(getppid(), RLIMIT_NOFILE, NULL, &rl) == 0 || errno != EPERM)
		return 11;
	if (setrlimit(RLIMIT_NOFILE, &rl) == 0 || errno != EPERM)
		return 12;
	{
		struct iovec local = { buf, 1 }, remote = { buf, 1 };

		if (process_vm_readv(getppid(), &local, 1, &remote, 1, 0) >= 0 || errno != EPERM)
			return 13;
	}
	if (syscall(SYS_pidfd_open, getppid(), 0) >= 0 || errno != EPERM)
		return 14;
	if (syscall(SYS_ptrace, 0, 0, 0, 0) == 0 || errno != EPERM)
		return 15;
	if (socket(AF_UNIX, SOCK_STREAM, 0) >= 0 || errno != EPERM)
		return 16;
	/* fstat as the process makes it passes; newfstatat, whose path it cannot see, does not */
	{
		struct stat st;

		if (syscall(SYS_fstat, p[0], &st) != 0 || !S_ISFIFO(st.st_mode))
			return 17;
		if (syscall(SYS_newfstatat, AT_FDCWD, "/etc/passwd", &st, AT_EMPTY_PATH) == 0 ||
		    errno != EPERM)
			return 18;
	}
	return fcntl_checks();
}

static int child_fcntl_scanner(void)
{
	char *err = NULL;

	if (sandbox_seccomp(&err) != 0)
		return 2;
	return fcntl_checks();
}

static int child_fcntl_http(void)
{
	char *err = NULL;

	if (sandbox_seccomp_http(&err) != 0)
		return 2;
	return fcntl_checks();
}

/* Each filter on its own: the HTTP process has both, and either must refuse. */
static void test_seccomp_fcntl(void **state)
{
	(void)state;
	assert_int_equal(in_child(child_fcntl_scanner), 0);
	assert_int_equal(in_child(child_fcntl_http), 0);
}

static void test_seccomp_http(void **state)
{
	(void)state;
	assert_int_equal(in_child(child_seccomp_http), 0);
}

static void test_seccomp(void **state)
{
	char cmd[] = "rm -f /tmp/test-privs.??????";

	(void)state;
	assert_int_equal(in_child(child_seccomp), 0);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_drop),
		cmocka_unit_test(test_drop_keep_uid),
		cmocka_unit_test(test_root_without_setuid),
		cmocka_unit_test(test_root_without_setpcap),
		cmocka_unit_test(test_unknown_user),
		cmocka_unit_test(test_seccomp),
		cmocka_unit_test(test_drop_all),
		cmocka_unit_test(test_seccomp_http),
		cmocka_unit_test(test_seccomp_fcntl),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
