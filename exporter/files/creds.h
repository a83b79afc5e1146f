/* SPDX-License-Identifier: Apache-2.0 */
/*
 * creds: whether a process could have learnt the page cache state of a file itself, decided
 * from what it holds (its descriptor's open mode, or its mapping) and its credentials against
 * the file's owner and mode. This is the kernel's rule for cachestat(2) (and mincore(2)'s for
 * mappings): the file is open for writing, or the caller owns it (or has CAP_FOWNER), or may
 * write it (mode bits, or CAP_DAC_OVERRIDE). Reading it is not enough. No dependencies beyond
 * libc and util's file reading; never logs.
 *
 * A process whose credentials are not its user's own is judged as its real user without
 * capabilities: one whose real uid or gid differs from the effective or fs one (a setuid or
 * setgid program, setfsuid), or that is not dumpable (an exec that gained capabilities). Such
 * a process holds descriptors its user chose (inherited ones, `exec 5<file; exec passwd`), and
 * nothing tells them from those it opened itself; what its user may ask about stays counted.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

struct creds {
	uid_t fsuid; /* file access is checked against the fs ids */
	gid_t fsgid;
	uid_t ruid; /* the real uid, which the non-dumpable check compares /proc/PID's owner with */
	gid_t *groups; /* supplementary groups */
	size_t n_groups;
	bool cap_fowner;       /* effective, and honoured only in our user namespace */
	bool cap_dac_override;
};

/*
 * Parses /proc/PID/status (Uid:, Gid:, Groups:, CapEff:). Returns 0, -EINVAL when a line is
 * missing or malformed, -ENOMEM. Capabilities are recorded as given, and the fs ids, unless
 * the real ones differ from the effective or fs ones: then the real ids without capabilities.
 * The caller clears the capabilities for a process of another user namespace.
 */
int creds_parse_status(const char *buf, size_t len, struct creds *ret);

/* Judges c as the real user ruid, group rgid, without capabilities. */
void creds_as_real(struct creds *c, uid_t ruid, gid_t rgid);

void creds_done(struct creds *c);
/*
 * The credentials of the process whose /proc directory is piddir, from its status, and judged
 * as its real user when piddir's owner says it is not dumpable. Its capabilities count only when its ns/user link reads self_userns (ours): in another user
 * namespace they apply to files of that namespace's ids alone, which is not worth modelling;
 * leaving them out reports less, never more. Returns 0 or -errno.
 */
int creds_read(int piddir, const char *self_userns, struct creds *ret);

/*
 * Through a descriptor opened with open_flags (as fcntl(F_GETFL) or fdinfo's "flags:" give
 * them): false for O_PATH, which cachestat refuses (EBADF).
 */
bool creds_may_cachestat(const struct creds *c, int open_flags, const struct stat *st);

/*
 * Whether the process's credentials alone let it ask about the file through any descriptor it
 * holds but an O_PATH one (owner, CAP_FOWNER, CAP_DAC_OVERRIDE, or write permission): then
 * creds_may_cachestat() needs of the open mode only whether it is O_PATH, and the scan need
 * not read the descriptor's flags from fdinfo.
 */
bool creds_may_cachestat_any_mode(const struct creds *c, const struct stat *st);

/*
 * Through a mapping with the permissions maps prints ("rw-s"): a shared writable mapping was
 * made from a descriptor open for writing; any other is judged as mincore(2) judges it.
 */
bool creds_may_cachestat_mapping(const struct creds *c, const char *perms, const struct stat *st);
