/* SPDX-License-Identifier: MIT */
/* utf8: file names are bytes; label values and JSON strings must be UTF-8. No dependencies. */
#pragma once

/*
 * s as valid UTF-8: every byte that is not part of a valid UTF-8 sequence (stray continuation
 * bytes, overlong forms, surrogates, code points past U+10FFFF, truncated sequences) becomes
 * the four characters "\\xNN". Caller frees; NULL on ENOMEM.
 */
char *utf8_sanitize(const char *s);
