/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mountinfo: a parser of /proc/PID/mountinfo (proc(5)). It takes a buffer, so tests feed it
 * strings; it allocates only the strings of the entry it returns. Depends on nothing else.
 *
 *   36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
 *   (1)(2)(3)  (4)   (5)   (6)        (7)    (8)(9)  (10)      (11)
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct mountinfo {
	int mount_id;
	int parent_id;
	unsigned major, minor;
	char *root;        /* the directory of the file system mounted here ("/" mostly) */
	char *mount_point; /* relative to the root of the process whose file it is */
	char *fstype;
	char *source;
	/*
	 * Options as the kernel prints them, still escaped: a comma inside a value is "\054", so
	 * that splitting on "," comes before unescaping. mountinfo_next_option() does both.
	 */
	char *mount_options;
	char *super_options;
};

/*
 * Parses one line (without its newline; len bytes, need not be NUL-terminated). root,
 * mount_point, fstype and source are unescaped ("\040" is a space). Returns 0, -EINVAL for a
 * malformed line, -ENOMEM. ret is untouched on failure; mountinfo_done() frees it.
 */
int mountinfo_parse_line(const char *line, size_t len, struct mountinfo *ret);

/*
 * The next well-formed line of a whole mountinfo buffer [*pos, end), parsed; *pos is advanced
 * past it. A malformed line is passed over, and so is one that finds no memory: that mount is
 * then unknown, which its users treat as excluded. Returns 1 with ret to mountinfo_done(), 0 at
 * the end.
 */
int mountinfo_next(const char **pos, const char *end, struct mountinfo *ret);

/*
 * Finds the line of mount_id in a whole mountinfo buffer and parses it. Returns 0, -ENOENT when
 * no line has that id, -EINVAL when that line is malformed, -ENOMEM.
 */
int mountinfo_find(const char *buf, size_t len, int mount_id, struct mountinfo *ret);

void mountinfo_done(struct mountinfo *m);

/*
 * Iterates over a comma-separated option list as printed (mount_options, super_options): the
 * next option's key and value (NULL for a flag), unescaped, in storage the caller frees with
 * free(*ret_key) (the value lives in the same allocation). *cursor starts at the list and is
 * advanced. Returns 1 for an option, 0 at the end, -EINVAL for a bad escape, -ENOMEM.
 */
int mountinfo_next_option(const char **cursor, char **ret_key, const char **ret_value);

/*
 * Unescapes the kernel's octal escapes ("\ooo", as mangle() in fs/proc_namespace.c and
 * seq_escape() write them) of s[0..len) into a new string. Returns it, or NULL with errno
 * EINVAL (a backslash not followed by three octal digits, or "\000") or ENOMEM.
 */
char *mountinfo_unescape(const char *s, size_t len);
