/* SPDX-License-Identifier: Apache-2.0 */
#include "base/utf8.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at p (at most n bytes), or 0 if there is none. */
static size_t utf8_seq_len(const unsigned char *p, size_t n)
{
	unsigned char c = p[0];
	size_t len;
	uint32_t cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[i] & 0x3f);
	}
	/* overlong forms, surrogates, beyond U+10FFFF */
	if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10ffff ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

char *utf8_sanitize(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s), out = 0;
	char *r = malloc(n * 4 + 1);

	if (!r)
		return NULL;
	for (size_t i = 0; i < n;) {
		size_t l = utf8_seq_len(p + i, n - i);

		if (p[i] == '\\') {
			/* a backslash of the name: doubled, so that it never reads as an escape */
			r[out++] = '\\';
			r[out++] = '\\';
			i++;
			continue;
		}
		if (l == 0) {
			snprintf(r + out, 5, "\\x%02x", p[i]);
			out += 4;
			i++;
			continue;
		}
		memcpy(r + out, p + i, l);
		out += l;
		i += l;
	}
	r[out] = '\0';
	return r;
}


void utf8_write_label(FILE *out, const char *s)
{
	for (const char *p = s; *p; p++) {
		switch (*p) {
		case '\\':
			fputs("\\\\", out);
			break;
		case '"':
			fputs("\\\"", out);
			break;
		case '\n':
			fputs("\\n", out);
			break;
		default:
			fputc(*p, out);
		}
	}
}
