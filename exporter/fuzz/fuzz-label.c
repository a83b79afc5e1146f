/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: label value escaping. Whatever the bytes of a path, the escaped value must
 * be valid UTF-8 with no raw newline or unescaped quote, and must read back (per the text
 * format's escapes) as the sanitized path, which reads back as the path itself.
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "scan/render.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool valid_utf8(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n;) {
		unsigned char c = p[i];
		size_t len;
		uint32_t cp;

		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf)
			len = 2, cp = c & 0x1f;
		else if (c >= 0xe0 && c <= 0xef)
			len = 3, cp = c & 0x0f;
		else if (c >= 0xf0 && c <= 0xf4)
			len = 4, cp = c & 0x07;
		else
			return false;
		if (n - i < len)
			return false;
		for (size_t k = 1; k < len; k++) {
			if ((p[i + k] & 0xc0) != 0x80)
				return false;
			cp = (cp << 6) | (p[i + k] & 0x3f);
		}
		if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10ffff ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += len;
	}
	return true;
}

/*
 * Undoes utf8_sanitize() (\\ is a backslash, \xNN a byte): the name must come back, or, for
 * a cut one, its start.
 */
static bool reads_back(const char *clean, const char *name)
{
	size_t n = 0;

	for (const char *p = clean; *p; p++) {
		unsigned v;

		if (*p != '\\') {
			if (name[n++] != *p)
				return false;
			continue;
		}
		if (p[1] == '\\') {
			if (name[n++] != '\\')
				return false;
			p++;
			continue;
		}
		if (p[1] == '~') /* cut: the name goes on, and 32 hex digits of its SHA-256 end it */
			return name[n] != '\0' && strlen(p + 2) == 32 && strspn(p + 2, "0123456789abcdef") == 32;
		if (p[1] != 'x' || sscanf(p + 2, "%2x", &v) != 1 || (unsigned char)name[n++] != v)
			return false;
		p += 3;
	}
	return name[n] == '\0';
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s, *clean, *out = NULL, *back;
	size_t out_len = 0, n = 0;
	FILE *f;

	s = strndup((const char *)data, size); /* a path is a C string: up to the first NUL */
	if (!s)
		return 0;
	clean = render_utf8_sanitize(s);
	f = open_memstream(&out, &out_len);
	if (!clean || !f || render_label_value(f, s) != 0 || fclose(f) != 0)
		abort();
	if (!valid_utf8((const unsigned char *)clean, strlen(clean)) ||
	    !valid_utf8((const unsigned char *)out, out_len) || memchr(out, '\n', out_len) ||
	    strlen(out) != out_len)
		abort();
	if (strlen(clean) > UTF8_SANITIZE_MAX)
		abort(); /* bounded */
	if (valid_utf8((const unsigned char *)s, strlen(s)) && !strchr(s, '\\') &&
	    strlen(s) <= UTF8_SANITIZE_MAX && strcmp(s, clean) != 0)
		abort(); /* valid UTF-8 is left alone, but for its backslashes */
	if (!reads_back(clean, s))
		abort(); /* one-to-one: distinct names never give one label */
	back = malloc(out_len + 1);
	if (!back)
		abort();
	for (size_t i = 0; i < out_len; i++) {
		if (out[i] == '"')
			abort(); /* would end the label value */
		if (out[i] != '\\') {
			back[n++] = out[i];
			continue;
		}
		if (++i == out_len)
			abort(); /* dangling backslash */
		if (out[i] == 'n')
			back[n++] = '\n';
		else if (out[i] == '\\' || out[i] == '"')
			back[n++] = out[i];
		else
			abort(); /* an escape the text format does not know */
	}
	back[n] = '\0';
	if (strcmp(back, clean) != 0)
		abort();
	free(back);
	free(out);
	free(clean);
	free(s);
	return 0;
}
