/* SPDX-License-Identifier: Apache-2.0 */
/*
 * symbols: the functions of the running kernel that kprobes can be attached to, as the list
 * activity_choose() (attach.h) reads: one name a line, a module's followed by " [MODULE]".
 */
#pragma once

#include <stddef.h>

/*
 * Rewrites /proc/kallsyms's text in buf ("ADDRESS TYPE NAME", a module's with "\t[MODULE]")
 * in place as the list activity_choose() reads: the name of each function (type t or T), one a
 * line. Returns the new length.
 */
size_t activity_kallsyms_names(char *buf, size_t len);

/*
 * The functions kprobes can be attached to: available_filter_functions from tracefs
 * (/sys/kernel/tracing, else the one below debugfs), or, where neither can be read (a kernel
 * built without function tracing, no tracefs mounted, or root's alone), the functions of
 * /proc/kallsyms. 0 with the
 * list in *ret_buf (free()) and *ret_len, and its source's name in *ret_source; or -errno.
 */
int activity_read_functions(char **ret_buf, size_t *ret_len, const char **ret_source);
