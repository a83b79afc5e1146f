/* SPDX-License-Identifier: Apache-2.0 */
/*
 * utf8_sanitize() and the label escaping after it are one-to-one: a property test on random
 * byte strings (an alphabet heavy in backslashes, "x", hex digits, invalid and multi-byte
 * bytes), each read back through an independent decoder (the text format's escapes, then the
 * sanitizer's) to the bytes it came from. Distinct names therefore give distinct labels.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "scan/render.h"
#include "base/utf8.h"

/* Reads a label value back as the text format defines it: \\, \" and \n. */
static char *unescape_label(const char *s)
{
	char *r = malloc(strlen(s) + 1), *o = r;

	assert_non_null(r);
	for (; *s; s++) {
		if (*s != '\\') {
			*o++ = *s;
			continue;
		}
		s++;
		assert_true(*s == '\\' || *s == '"' || *s == 'n');
		*o++ = *s == 'n' ? '\n' : *s;
	}
	*o = '\0';
	return r;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	fail_msg("not a lower-case hex digit: %c", c);
	return 0;
}

/* Undoes utf8_sanitize(): \\ is a backslash, \xNN a byte; any other backslash is an error. */
static char *unsanitize(const char *s)
{
	char *r = malloc(strlen(s) + 1), *o = r;

	assert_non_null(r);
	for (; *s; s++) {
		if (*s != '\\') {
			*o++ = *s;
			continue;
		}
		if (s[1] == '\\') {
			*o++ = '\\';
			s++;
			continue;
		}
		assert_true(s[1] == 'x' && s[2] && s[3]);
		*o++ = (char)(hexval(s[2]) * 16 + hexval(s[3]));
		s += 3;
	}
	*o = '\0';
	return r;
}

static char *label(const char *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(render_label_value(f, s), 0);
	fclose(f);
	return buf;
}

static void test_sanitize_one_to_one(void **state)
{
	static const char alphabet[] = { '\\', 'x', 'f', 'F', '0', 'a', '"', '\n', '/',
					  (char)0xff, (char)0xc3, (char)0xa9, (char)0x80 };
	unsigned seed = 20261203;

	(void)state;
	for (int i = 0; i < 200000; i++) {
		char in[17], *lab, *clean, *back;
		size_t n = (size_t)(rand_r(&seed) % 16);

		for (size_t k = 0; k < n; k++)
			in[k] = alphabet[rand_r(&seed) % sizeof(alphabet)];
		in[n] = '\0';
		lab = label(in);
		clean = unescape_label(lab);
		back = unsanitize(clean);
		if (strcmp(back, in) != 0)
			fail_msg("case %d: label \"%s\" does not read back to its name", i, lab);
		free(back);
		free(clean);
		free(lab);
	}
}

/* The two cgroups of the report: a byte 0xff and the text \xff. */
static void test_sanitize_byte_and_its_spelling(void **state)
{
	char *a = label("/c\xff"), *b = label("/c\\xff");

	(void)state;
	assert_string_equal(a, "/c\\\\xff");
	assert_string_equal(b, "/c\\\\\\\\xff");
	free(a);
	free(b);
}

/* sanitized s, checked against the expected text; frees it */
static void expect_sanitized(const char *s, const char *want)
{
	char *got = utf8_sanitize(s);

	assert_non_null(got);
	assert_string_equal(got, want);
	free(got);
}

/*
 * Past UTF8_SANITIZE_MAX: cut after a whole character or escape, "\\~" and 128 bits of the
 * SHA-256 of the whole raw name (the digits from Python's hashlib). Up to it: unchanged.
 */
static void test_sanitize_cut(void **state)
{
	char a[2001], ff[301], want[UTF8_SANITIZE_MAX + 1];
	char *got;

	(void)state;
	memset(a, 'a', 2000);
	a[2000] = '\0';
	memset(ff, 0xff, 300);
	ff[300] = '\0';

	/* 990 'a', then the marker and the digest: 1024 bytes */
	memset(want, 'a', 990);
	strcpy(want + 990, "\\~c4a700f85b7e9e5cdbdc51170409ee2a");
	expect_sanitized(a, want);
	/* differing only past the cut: another digest */
	a[1999] = 'b';
	strcpy(want + 990, "\\~5b1d45e1514c17355ef19c37f36f59a3");
	expect_sanitized(a, want);
	/* four characters a byte: 247 whole escapes (988 bytes), never half of one */
	got = utf8_sanitize(ff);
	assert_non_null(got);
	assert_int_equal(strlen(got), 247 * 4 + 34);
	assert_string_equal(got + 247 * 4, "\\~5263250339d3961c91f0bb1150e95ff8");
	assert_memory_equal(got, "\\xff\\xff", 8);
	free(got);
	/* exactly the most: unchanged */
	a[UTF8_SANITIZE_MAX] = '\0';
	a[UTF8_SANITIZE_MAX - 1] = 'a';
	expect_sanitized(a, a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sanitize_one_to_one),
		cmocka_unit_test(test_sanitize_byte_and_its_spelling),
		cmocka_unit_test(test_sanitize_cut),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
