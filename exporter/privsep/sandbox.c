/* SPDX-License-Identifier: Apache-2.0 */
#define _GNU_SOURCE
#include "privsep/sandbox.h"

#include <cap-ng.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <grp.h>
#include <linux/bpf.h>
#include <linux/capability.h>
#include <pwd.h>
#include <seccomp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/util.h"

#ifndef CAP_CHECKPOINT_RESTORE
#define CAP_CHECKPOINT_RESTORE 40
#endif

const struct sandbox_cap sandbox_caps[] = {
	{ CAP_SYS_PTRACE, "cap_sys_ptrace" },
	{ CAP_DAC_READ_SEARCH, "cap_dac_read_search" },
	{ CAP_FOWNER, "cap_fowner" },
	{ CAP_CHECKPOINT_RESTORE, "cap_checkpoint_restore" },
};
const unsigned sandbox_n_caps = ELEMENTSOF(sandbox_caps);

__attribute__((format(printf, 3, 4))) static int fail(char **ret_error, int r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(ret_error, fmt, ap) < 0)
		*ret_error = NULL;
	va_end(ap);
	return r;
}

/* uid and gid of user, by name or number. */
static int lookup_user(const char *user, uid_t *ret_uid, gid_t *ret_gid)
{
	struct passwd pw, *res = NULL;
	char buf[4096];
	char *end;
	unsigned long n;
	int e;

	e = getpwnam_r(user, &pw, buf, sizeof(buf), &res);
	if (e == 0 && res) {
		*ret_uid = res->pw_uid;
		*ret_gid = res->pw_gid;
		return 0;
	}
	if (strcmp(user, "nobody") == 0) {
		/* a minimal container image may have no passwd file: nobody's usual ids */
		*ret_uid = 65534;
		*ret_gid = 65534;
		return 0;
	}
	errno = 0;
	n = strtoul(user, &end, 10);
	if (errno || end == user || *end || n == 0 || n >= (unsigned long)(uid_t)-1)
		return e ? -e : -ESRCH;
	*ret_uid = (uid_t)n;
	*ret_gid = (gid_t)n;
	return 0;
}

const char *sandbox_default_user(void)
{
	struct passwd pw, *res = NULL;
	char buf[4096];

	if (getpwnam_r(PRIVS_DEFAULT_USER, &pw, buf, sizeof(buf), &res) == 0 && res)
		return PRIVS_DEFAULT_USER;
	return PRIVS_FALLBACK_USER;
}

/* The capabilities of sandbox_caps[] that the process has (kept) and lacks (missing). */
static int read_kept(struct sandbox_result *res, char **ret_error)
{
	if (capng_get_caps_process() < 0)
		return fail(ret_error, -EIO, "cannot read the process' capabilities");
	for (unsigned i = 0; i < sandbox_n_caps; i++) {
		if (capng_have_capability(CAPNG_PERMITTED, (unsigned)sandbox_caps[i].cap))
			res->kept |= 1u << i;
		else
			res->missing |= 1u << i;
	}
	return 0;
}

/* libcap-ng's pending set: exactly the kept capabilities, effective, permitted and bounding. */
static void select_kept(const struct sandbox_result *res)
{
	capng_clear(CAPNG_SELECT_ALL);
	for (unsigned i = 0; i < sandbox_n_caps; i++)
		if (res->kept & (1u << i))
			capng_update(CAPNG_ADD, CAPNG_EFFECTIVE | CAPNG_PERMITTED | CAPNG_BOUNDING_SET,
				     (unsigned)sandbox_caps[i].cap);
}

/* Staying the same user: applies the kept set (the bounding set too where CAP_SETPCAP allows). */
static int apply_kept(const struct sandbox_result *res, char **ret_error)
{
	capng_select_t what = CAPNG_SELECT_CAPS;
	int r;

	if (capng_get_caps_process() < 0)
		return fail(ret_error, -EIO, "cannot read the process' capabilities");
	/* The bounding set can only shrink with CAP_SETPCAP; without it, leave it. */
	if (capng_have_capability(CAPNG_EFFECTIVE, CAP_SETPCAP))
		what = CAPNG_SELECT_BOTH;
	select_kept(res);
	r = capng_apply(what);
	if (r < 0)
		return fail(ret_error, -EPERM, "cannot drop capabilities: capng_apply: %d", r);
	/* Ambient capabilities only matter across execve, which the daemon never does. */
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	return 0;
}

/* Checks what the kernel now says, rather than trusting the calls. */
static int verify_drop(const struct sandbox_result *res, uid_t uid, char **ret_error)
{
	if (capng_get_caps_process() < 0)
		return fail(ret_error, -EIO, "cannot read the process' capabilities");
	for (unsigned c = 0; c <= CAP_LAST_CAP; c++) {
		bool want = false;

		for (unsigned i = 0; i < sandbox_n_caps; i++)
			if ((res->kept & (1u << i)) && (unsigned)sandbox_caps[i].cap == c)
				want = true;
		if (!want && capng_have_capability(CAPNG_PERMITTED, c))
			return fail(ret_error, -EPERM, "capability %d is still permitted after the drop",
				    (int)c);
	}
	if (res->changed_user && (setuid(0) == 0 || getuid() != uid || geteuid() != uid))
		return fail(ret_error, -EPERM, "the uid change did not hold");
	return 0;
}

int sandbox_drop(const char *user, struct sandbox_result *ret, char **ret_error)
{
	struct sandbox_result res = { 0 };
	bool root = geteuid() == 0;
	uid_t uid = 0;
	gid_t gid = 0;
	int r;

	*ret_error = NULL;
	r = read_kept(&res, ret_error);
	if (r < 0)
		return r;
	/*
	 * Root without CAP_SETUID and CAP_SETGID (a container given only the capabilities above)
	 * cannot change its uid: it stays root with the reduced set.
	 */
	if (root && user && !(capng_have_capability(CAPNG_PERMITTED, CAP_SETUID) &&
			      capng_have_capability(CAPNG_PERMITTED, CAP_SETGID))) {
		res.stayed_root = true;
		user = NULL;
	}
	if (root && user) {
		r = lookup_user(user, &uid, &gid);
		if (r < 0)
			return fail(ret_error, r, "no user \"%s\" to run as: %s", user, strerror(-r));
	}
	if (root && user && uid != 0) {
		/*
		 * setgid, drop supplementary groups, setuid keeping the kept set, clear bounding. The
		 * bounding set shrinks only with CAP_SETPCAP, which a container given CAP_SETUID and
		 * CAP_SETGID to leave root lacks: there it stays (it only bounds an execve).
		 */
		capng_flags_t flags = CAPNG_DROP_SUPP_GRP;

		if (capng_have_capability(CAPNG_EFFECTIVE, CAP_SETPCAP))
			flags |= CAPNG_CLEAR_BOUNDING;
		select_kept(&res);
		r = capng_change_id((int)uid, (int)gid, flags);
		if (r < 0)
			return fail(ret_error, -EPERM, "cannot become %s (uid %u): capng_change_id: %d",
				    user, (unsigned)uid, r);
		res.changed_user = true;
		res.user = user;
	} else {
		r = apply_kept(&res, ret_error);
		if (r < 0)
			return r;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return fail(ret_error, -errno, "PR_SET_NO_NEW_PRIVS: %m");
	r = verify_drop(&res, uid, ret_error);
	if (r < 0)
		return r;
	*ret = res;
	return 0;
}

/* Whether the kernel reports no capability in any set but the bounding one. */
static bool holds_none(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d) < 0)
		return false;
	for (unsigned i = 0; i < 2; i++)
		if (d[i].effective || d[i].permitted || d[i].inheritable)
			return false;
	for (unsigned c = 0; c < 64; c++)
		if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, c, 0, 0) == 1)
			return false;
	return true;
}

int sandbox_drop_all(char **ret_error)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2] = { { 0 } };

	*ret_error = NULL;
	/* the bounding set shrinks only with CAP_SETPCAP: first, while it may still count */
	for (unsigned c = 0; c < 64; c++)
		if (prctl(PR_CAPBSET_READ, c, 0, 0, 0) == 1)
			(void)prctl(PR_CAPBSET_DROP, c, 0, 0, 0);
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return fail(ret_error, -errno, "clearing the ambient capabilities: %m");
	if (syscall(SYS_capset, &h, d) < 0)
		return fail(ret_error, -errno, "dropping every capability: capset: %m");
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return fail(ret_error, -errno, "PR_SET_NO_NEW_PRIVS: %m");
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		return fail(ret_error, -errno, "PR_SET_DUMPABLE: %m");
	if (!holds_none())
		return fail(ret_error, -EPERM, "a capability is still held after dropping them all");
	return 0;
}

/*
 * What the HTTP process calls once it serves: memory, its threads, signals to itself, the
 * sockets it was handed and its channel to the scanner (accept, TLS records, memfds received
 * and mapped read-only), reading again the /proc files it opened before, time and randomness.
 * No open, no exec, no new process, no new socket, no ptrace, no process_vm_*, no pidfd_*,
 * no signal to another process (kill, and fcntl's F_SETOWN: see fcntl_cmds). No newfstatat:
 * a filter sees its path as a pointer, not as text, so "only an empty path" cannot be checked;
 * the process's own fstat() calls are the plain fstat system call (wire/channel.c,
 * http/selfmetrics.c), and a library's fstat() fails with EPERM. The scanner's filter allows
 * all of these too (scanner_syscalls adds what only it calls): the HTTP process inherits that
 * filter and stacks its own.
 */
static const char *const http_syscalls[] = {
	"brk", "mmap", "munmap", "mprotect", "mremap", "madvise",
	"exit", "exit_group", "set_robust_list", "get_robust_list", "rseq", "futex",
	"set_tid_address", "sched_yield", "sched_getaffinity", "gettid", "getpid", "getppid",
	"membarrier",
	"rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "rt_sigtimedwait", "sigaltstack",
	"restart_syscall",
	"read", "pread64", "readv", "write", "writev", "close", "fstat", "lseek", "getdents64",
	"accept", "accept4", "recvfrom", "recvmsg", "sendto", "sendmsg", "shutdown", "setsockopt",
	"getsockopt", "getsockname", "getpeername",
	"poll", "ppoll", "select", "pselect6", "epoll_create1", "epoll_ctl", "epoll_wait",
	"epoll_pwait", "epoll_pwait2", "eventfd2", "pipe2", "nanosleep", "clock_nanosleep",
	"clock_gettime", "clock_getres", "gettimeofday", "time", "getrandom", "getuid", "geteuid",
	"getgid", "getegid", "getresuid", "getresgid", "uname", "sysinfo", "getrusage",
};

/*
 * What the scanner calls once it runs, http_syscalls and these: memory, threads (scans, the timer, a reader per HTTP
 * process), signals, the scan (cgroup and proc files, directory walks, overlay xattrs read,
 * cachestat, or mmap and mincore), starting an HTTP process and talking to it, time. The calls
 * of libmicrohttpd and TLS stay allowed: the HTTP process inherits this filter and stacks its
 * own, and a call passes only when both allow it. No exec, no new sockets but an AF_UNIX pair, no ptrace, no mounts, no
 * chmod/chown/utimes/setxattr (which CAP_FOWNER would allow). Calls with arguments worth
 * restricting (open flags, clone flags, prctl) are added below.
 *
 * What it cannot stop: with CAP_SYS_PTRACE, a subverted daemon could still reopen another
 * process's files through /proc/PID/fd and read its memory through /proc/PID/mem (read-only
 * opens); the filter narrows what it can do with them (no new files, no exec, no new
 * sockets), not what it can see. pidfd_getfd is refused: the scan does not duplicate
 * descriptors (closing a duplicate runs the flush of FUSE and NFS). newfstatat, stat and lstat
 * pass with any path (the scan stats names in directories it walks): the filter cannot tell an
 * empty path from another, and the scanner may read those paths anyway.
 */
static const char *const scanner_syscalls[] = {
	/* threads: beyond the HTTP process's (http_syscalls) */
	"futex_waitv", "tgkill",
	/* descriptors and files; opening is read-only, see below */
	"close_range", "newfstatat", "stat", "lstat", "statx", "getdents", "readlink",
	"readlinkat", "dup", "dup3", "fadvise64", "access", "faccessat", "faccessat2",
	"fstatfs", "statfs", "getcwd", "inotify_init1", "inotify_add_watch", "inotify_rm_watch",
	/* the fanotify collector's ignore marks on its own group (a new group needs fanotify_init) */
	"fanotify_mark",
	/* identity and limits */
	"getgroups", "getrlimit", "prlimit64", "capget",
	/* the mincore method (files/mincore.h): a file mapped PROT_READ and MAP_SHARED (mmap, in
	 * http_syscalls; opened read-only, so never writable), mincore on it, munmap */
	"mincore",
	/* overlayfs: the trusted.overlay.* xattrs of metacopy and redirect files (read only) */
	"getxattr", "fgetxattr", "lgetxattr",
	/* the HTTP process: started again when it dies (a fork), its channel, its bodies, and
	 * what it drops in the child before its own filter (which only narrows this one) */
	"wait4", "waitid", "kill", "memfd_create", "capset", "seccomp",
};

/* prctl options: thread names, and what the HTTP process sets up after its fork. */
static const int allowed_prctls[] = {
	PR_SET_NAME, PR_GET_NAME, PR_CAPBSET_READ, PR_CAPBSET_DROP, PR_CAP_AMBIENT,
	PR_SET_NO_NEW_PRIVS, PR_GET_NO_NEW_PRIVS, PR_SET_DUMPABLE, PR_SET_PDEATHSIG,
	PR_SET_SECCOMP, PR_GET_SECCOMP,
};

/* Flags that would let an open create, truncate or write (O_TMPFILE needs write access). */
#define PRIVS_OPEN_WRITE_FLAGS (O_ACCMODE | O_CREAT | O_TRUNC)
/* Flags that would make a thread's clone leave the daemon's namespaces. */
#define PRIVS_CLONE_NS_FLAGS                                                             \
	(CLONE_NEWNS | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWUTS |      \
	 CLONE_NEWIPC | CLONE_NEWCGROUP)

/*
 * fcntl commands of the daemon and its libraries (strace -f -e trace=fcntl of the hardening
 * suites, TLS and basic auth included): descriptor flags (glibc's fdopendir, libmicrohttpd's
 * sockets), duplicates, the memfd seals of the channel. Not F_SETOWN, F_SETOWN_EX, F_SETSIG,
 * F_SETLEASE or F_NOTIFY: each makes the kernel send a signal chosen by the caller, to a
 * process the caller names (F_SETOWN) where the uid check allows, bypassing the filter on kill.
 */
static const unsigned fcntl_cmds[] = {
	F_GETFD, F_SETFD, F_GETFL, F_DUPFD_CLOEXEC, F_GET_SEALS, F_ADD_SEALS,
};

/* fcntl (and fcntl64 where it exists): fcntl_cmds, and F_SETFL without O_ASYNC (SIGIO). */
static int add_fcntl(scmp_filter_ctx ctx)
{
	static const char *const names[] = { "fcntl", "fcntl64" };
	int r;

	for (size_t i = 0; i < ELEMENTSOF(names); i++) {
		int nr = seccomp_syscall_resolve_name(names[i]);

		if (nr == __NR_SCMP_ERROR)
			continue; /* not on this architecture */
		for (size_t c = 0; c < ELEMENTSOF(fcntl_cmds); c++) {
			r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 1,
					     SCMP_A1(SCMP_CMP_EQ, fcntl_cmds[c]));
			if (r < 0)
				return r;
		}
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 2, SCMP_A1(SCMP_CMP_EQ, F_SETFL),
				     SCMP_A2(SCMP_CMP_MASKED_EQ, O_ASYNC, 0));
		if (r < 0)
			return r;
	}
	return 0;
}

/* Every call of names, allowed whatever its arguments. */
static int add_list(scmp_filter_ctx ctx, const char *const *names, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int nr = seccomp_syscall_resolve_name(names[i]);
		int r;

		if (nr == __NR_SCMP_ERROR)
			continue; /* not on this architecture */
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0);
		if (r < 0 && r != -EEXIST)
			return r;
	}
	return 0;
}

/* ioctl: isatty() and non-blocking sockets only; prctl: the options of prctls. */
static int add_ioctl_prctl(scmp_filter_ctx ctx, const int *prctls, size_t n)
{
	static const unsigned long ioctls[] = { TCGETS, FIONBIO, FIONREAD };
	int r;

	for (size_t i = 0; i < n; i++) {
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(prctl), 1,
				     SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)prctls[i]));
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < ELEMENTSOF(ioctls); i++) {
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1,
				     SCMP_A1(SCMP_CMP_EQ, ioctls[i]));
		if (r < 0)
			return r;
	}
	return 0;
}

/* bpf(2) on a map already open only: lookup, next key, delete. */
static int add_bpf_map_calls(scmp_filter_ctx ctx)
{
	static const int cmds[] = { BPF_MAP_LOOKUP_ELEM, BPF_MAP_GET_NEXT_KEY, BPF_MAP_DELETE_ELEM };

	for (size_t i = 0; i < ELEMENTSOF(cmds); i++) {
		int r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(bpf), 1,
					 SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)cmds[i]));

		if (r < 0)
			return r;
	}
	return 0;
}

static int add_rules(scmp_filter_ctx ctx)
{
	int r;

	r = add_list(ctx, http_syscalls, ELEMENTSOF(http_syscalls));
	if (r == 0)
		r = add_list(ctx, scanner_syscalls, ELEMENTSOF(scanner_syscalls));
	if (r == 0)
		r = add_fcntl(ctx);
	if (r < 0)
		return r;
	/* a channel to a new HTTP process: a socketpair of AF_UNIX only */
	r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socketpair), 1,
			     SCMP_A0(SCMP_CMP_EQ, AF_UNIX));
	if (r < 0)
		return r;
	/* cachestat: libseccomp may not know its name yet */
	r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, PRIVS_NR_CACHESTAT, 0);
	if (r < 0)
		return r;
	/* open and openat: read-only, nothing created */
	r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(openat), 1,
			     SCMP_A2(SCMP_CMP_MASKED_EQ, PRIVS_OPEN_WRITE_FLAGS, O_RDONLY));
	if (r < 0)
		return r;
	r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(open), 1,
			     SCMP_A1(SCMP_CMP_MASKED_EQ, PRIVS_OPEN_WRITE_FLAGS, O_RDONLY));
	if (r < 0)
		return r;
	/* the fanotify collector's recent files, by handle: read-only too */
	r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(open_by_handle_at), 1,
			     SCMP_A2(SCMP_CMP_MASKED_EQ, PRIVS_OPEN_WRITE_FLAGS, O_RDONLY));
	if (r < 0)
		return r;
	/* the activity collector's map (activity/loader.h): read an entry, walk the keys, delete
	 * one; loading or attaching a program is refused (done before the filter) */
	r = add_bpf_map_calls(ctx);
	if (r < 0)
		return r;
	/* openat2 and clone3 pass their flags in memory, out of the filter's reach: ENOSYS makes
	 * callers (glibc's pthread_create among them) fall back to openat and clone */
	r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(openat2), 0);
	if (r < 0)
		return r;
	r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
	if (r < 0)
		return r;
	r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(clone), 1,
			     SCMP_A0(SCMP_CMP_MASKED_EQ, PRIVS_CLONE_NS_FLAGS, 0));
	if (r < 0)
		return r;
	/* a scan thread's own copy of the descriptor table (scheduler.c), and nothing else */
	r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(unshare), 1,
			     SCMP_A0(SCMP_CMP_EQ, CLONE_FILES));
	if (r < 0)
		return r;
	return add_ioctl_prctl(ctx, allowed_prctls, ELEMENTSOF(allowed_prctls));
}

/* Builds a filter with add and loads it on every thread. Returns 0 or -errno with *ret_error. */
static int load_filter(int (*add)(scmp_filter_ctx ctx), const char *what, char **ret_error)
{
	scmp_filter_ctx ctx;
	int r;

	*ret_error = NULL;
	ctx = seccomp_init(SCMP_ACT_ERRNO(EPERM));
	if (!ctx)
		return fail(ret_error, -ENOMEM, "seccomp_init failed");
	r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1);
	if (r == 0)
		r = add(ctx);
	if (r == 0)
		r = seccomp_load(ctx);
	seccomp_release(ctx);
	if (r < 0)
		return fail(ret_error, r, "cannot install the %s seccomp filter: %s", what, strerror(-r));
	return 0;
}

int sandbox_seccomp(char **ret_error)
{
	return load_filter(add_rules, "scanner's", ret_error);
}


static int add_http_rules(scmp_filter_ctx ctx)
{
	static const int prctls[] = { PR_SET_NAME, PR_GET_NAME };
	int r;

	r = add_list(ctx, http_syscalls, ELEMENTSOF(http_syscalls));
	if (r == 0)
		r = add_fcntl(ctx);
	/* threads only: a clone without CLONE_THREAD would be a new process */
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(clone), 1,
				     SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD | PRIVS_CLONE_NS_FLAGS,
					     CLONE_THREAD));
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
	/* signals to its own threads only (raise, abort): never to the scanner */
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(tgkill), 1,
				     SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)getpid()));
	/* its own limits, read only: prlimit64(0, resource, NULL, old) */
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(prlimit64), 2,
				     SCMP_A0(SCMP_CMP_EQ, 0), SCMP_A2(SCMP_CMP_EQ, 0));
	if (r == 0)
		r = add_ioctl_prctl(ctx, prctls, ELEMENTSOF(prctls));
	return r;
}

int sandbox_seccomp_http(char **ret_error)
{
	return load_filter(add_http_rules, "HTTP process's", ret_error);
}
