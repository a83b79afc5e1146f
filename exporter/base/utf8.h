/* SPDX-License-Identifier: Apache-2.0 */
/* utf8: file names are bytes; label values and JSON strings must be UTF-8. No dependencies. */
#pragma once

/* The bytes of a utf8_sanitize() result at most: labels cost what a tenant's names cost. */
#define UTF8_SANITIZE_MAX 1024

/*
 * s as valid UTF-8, one-to-one: every byte that is not part of a valid UTF-8 sequence (stray
 * continuation bytes, overlong forms, surrogates, code points past U+10FFFF, truncated
 * sequences) becomes the four characters "\\xNN", and a backslash of s becomes two, so that
 * distinct names never read the same (a name holding the text "\\xff" and one holding the
 * byte 0xff). A backslash in the result is always followed by another, by "xNN", or, once,
 * by "~": callers may use any other character after one to mark text of their own.
 * A result longer than UTF8_SANITIZE_MAX bytes is cut after a whole character or escape and
 * ends in "\\~" and 32 hex digits, the first 128 bits of the SHA-256 of the whole of s: two
 * cut results are equal only when the names are (up to a SHA-256 collision), and a result
 * that was not cut never holds "\\~". Caller frees; NULL on ENOMEM.
 */
char *utf8_sanitize(const char *s);

#include <stdio.h>

/*
 * Writes s, valid UTF-8 already (a utf8_sanitize() result), as a label value of the text
 * format: backslash, double quote and newline escaped.
 */
void utf8_write_label(FILE *out, const char *s);
