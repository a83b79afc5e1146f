/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sandbox: gives up what the daemon does not need once its sockets are bound, before any thread
 * starts (capabilities and seccomp filters are per thread; threads created later inherit them).
 *
 * Kept, when the process has them:
 *   CAP_SYS_PTRACE         /proc/PID/fd, fd links and /proc/PID/maps of other users' processes
 *                          pass the ptrace access check (PTRACE_MODE_READ_FSCREDS) only with it.
 *   CAP_DAC_READ_SEARCH    open any file read-only and walk any directory: the files behind
 *                          those links, the config's paths, and the web config on reload.
 *   CAP_FOWNER             cachestat(2) answers EPERM unless the caller could write the file or
 *                          owns it (inode_owner_or_capable(): CAP_FOWNER).
 *   CAP_CHECKPOINT_RESTORE /proc/PID/map_files (reaches mappings of deleted files); without it
 *                          the exporter reads /proc/PID/maps instead.
 * Everything else goes, from the effective, permitted, inheritable, ambient and bounding sets.
 * Started as root, the process also becomes an unprivileged user (keeping the set above), so
 * that files owned by root are not writable through plain ownership. no_new_privs is set.
 *
 * That is the scanner process. The HTTP process (forked from it) drops every capability with
 * sandbox_drop_all() and installs the stricter sandbox_seccomp_http() filter on top.
 * Library code: never logs; the caller reports.
 */
#pragma once

#include <stdbool.h>

struct sandbox_result {
	bool changed_user;   /* setuid/setgid to the given user was done */
	bool stayed_root;    /* root without CAP_SETUID/CAP_SETGID: the uid could not change */
	const char *user;    /* the user switched to, when changed_user */
	unsigned kept;       /* bit i: sandbox_caps[i] kept */
	unsigned missing;    /* bit i: sandbox_caps[i] wanted but not held at start */
};

struct sandbox_cap {
	int cap;
	const char *name;
};

extern const struct sandbox_cap sandbox_caps[];
extern const unsigned sandbox_n_caps;

/* The user a root start switches to without --security.user: the Debian package's system user
 * when the system has it, else nobody. */
#define PRIVS_DEFAULT_USER "cachestat-exporter"
#define PRIVS_FALLBACK_USER "nobody"

/* PRIVS_DEFAULT_USER when the system has such a user, else PRIVS_FALLBACK_USER. */
const char *sandbox_default_user(void);

/*
 * Drops to the capabilities above. user (e.g. "nobody"; if the system has no such name, uid
 * and gid 65534) is switched to when the process runs as root and may change its uid; NULL
 * keeps the uid. Returns 0, or -errno with *ret_error (caller frees).
 */
int sandbox_drop(const char *user, struct sandbox_result *ret, char **ret_error);

/*
 * For the HTTP process: every capability goes (effective, permitted, inheritable, ambient; the
 * bounding set too where CAP_SETPCAP allows), no_new_privs, and not dumpable (no core file
 * with the TLS key, no ptrace by a process of the same user). Checks what the kernel then
 * says. Returns 0, or -errno with *ret_error.
 */
int sandbox_drop_all(char **ret_error);

/*
 * Installs the seccomp allow-list: system calls the running daemon makes (HTTP, TLS, the
 * scan, cachestat) pass; any other fails with EPERM. Applied to every thread (TSYNC).
 * Returns 0, or -errno with *ret_error.
 */
int sandbox_seccomp(char **ret_error);

/*
 * The HTTP process's allow-list, stacked on the scanner's: its sockets, memory, threads (no
 * new process), time and randomness; no open, no ptrace, no signal to another process (no
 * kill, no fcntl F_SETOWN/F_SETSIG/O_ASYNC), no newfstatat (its path is out of a filter's
 * reach), no process_vm_* or pidfd_getfd. Returns 0, or -errno with *ret_error.
 */
int sandbox_seccomp_http(char **ret_error);

/* The number of the cachestat system call on this architecture (x86_64: 451). */
#define PRIVS_NR_CACHESTAT 451
