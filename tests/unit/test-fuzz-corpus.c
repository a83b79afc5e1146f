/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Every input in exporter/fuzz/corpus/TARGET/ (seeds, and the inputs of crashes once fixed) run
 * once through its fuzz target, here under ASan and UBSan with gcc: a fixed crash stays fixed.
 * The targets are compiled in with their entry point renamed (see the Makefile).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#ifndef FUZZ_CORPUS_DIR
#error "FUZZ_CORPUS_DIR must name exporter/fuzz/corpus"
#endif

int fuzz_webconfig_one(const uint8_t *data, size_t size);
int fuzz_config_one(const uint8_t *data, size_t size);
int fuzz_memstat_one(const uint8_t *data, size_t size);
int fuzz_label_one(const uint8_t *data, size_t size);
int fuzz_identity_one(const uint8_t *data, size_t size);
int fuzz_mountinfo_one(const uint8_t *data, size_t size);
int fuzz_mempressure_one(const uint8_t *data, size_t size);
int fuzz_proccgroup_one(const uint8_t *data, size_t size);

static size_t run_dir(const char *target, int (*one)(const uint8_t *, size_t))
{
	char dir[4096];
	struct dirent *de;
	size_t n = 0;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/%s", FUZZ_CORPUS_DIR, target);
	d = opendir(dir);
	if (!d)
		fail_msg("no corpus at %s", dir);
	while ((de = readdir(d))) {
		char path[8192];
		uint8_t *buf;
		long len;
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		f = fopen(path, "rb");
		assert_non_null(f);
		assert_int_equal(fseek(f, 0, SEEK_END), 0);
		len = ftell(f);
		rewind(f);
		buf = malloc((size_t)len + 1);
		assert_non_null(buf);
		assert_int_equal(fread(buf, 1, (size_t)len, f), (size_t)len);
		fclose(f);
		/* an exact-size copy, so that ASan sees any read past the end */
		one(buf, (size_t)len);
		free(buf);
		n++;
	}
	closedir(d);
	return n;
}

static void test_webconfig(void **state)
{
	(void)state;
	assert_true(run_dir("webconfig", fuzz_webconfig_one) > 0);
}

static void test_config(void **state)
{
	(void)state;
	assert_true(run_dir("config", fuzz_config_one) > 0);
}

static void test_memstat(void **state)
{
	(void)state;
	assert_true(run_dir("memstat", fuzz_memstat_one) > 0);
}

static void test_label(void **state)
{
	(void)state;
	assert_true(run_dir("label", fuzz_label_one) > 0);
}

static void test_identity(void **state)
{
	(void)state;
	assert_true(run_dir("identity", fuzz_identity_one) > 0);
}

static void test_mountinfo(void **state)
{
	(void)state;
	assert_true(run_dir("mountinfo", fuzz_mountinfo_one) > 0);
}

static void test_mempressure(void **state)
{
	(void)state;
	assert_true(run_dir("mempressure", fuzz_mempressure_one) > 0);
}

static void test_proccgroup(void **state)
{
	(void)state;
	assert_true(run_dir("proccgroup", fuzz_proccgroup_one) > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_webconfig),
		cmocka_unit_test(test_mempressure),
		cmocka_unit_test(test_config),
		cmocka_unit_test(test_memstat),
		cmocka_unit_test(test_label),
		cmocka_unit_test(test_identity),
		cmocka_unit_test(test_mountinfo),
		cmocka_unit_test(test_proccgroup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
