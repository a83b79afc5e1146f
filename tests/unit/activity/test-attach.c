/* SPDX-License-Identifier: Apache-2.0 */
/*
 * attach: the attach points chosen from fake available_filter_functions, the lists of kernels
 * written out by hand: 6.1 (both families, folio_account_dirtied inlined away), a later one
 * (folio names only), an older one (page names only), one with the functions in a module's
 * form or with a suffix the compiler added, and one without an event's functions at all.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <string.h>

#include <cmocka.h>

#include "activity/attach.h"

static int choose(const char *text, const char *names[_ACTIVITY_EVENT_MAX])
{
	return activity_choose(text, strlen(text), names);
}

static void test_linux_6_1(void **state)
{
	const char *n[_ACTIVITY_EVENT_MAX];

	(void)state;
	assert_int_equal(choose("mark_page_accessed\nfolio_mark_accessed\nadd_to_page_cache_lru\n"
				"filemap_add_folio\n__folio_mark_dirty\nmark_buffer_dirty\n", n), 0);
	assert_string_equal(n[ACTIVITY_ACCESSED], "folio_mark_accessed");
	assert_string_equal(n[ACTIVITY_ADDED], "filemap_add_folio");
	assert_string_equal(n[ACTIVITY_DIRTIED], "__folio_mark_dirty");
	assert_string_equal(n[ACTIVITY_BUFFER_DIRTIED], "mark_buffer_dirty");
}

static void test_folio_names_first(void **state)
{
	const char *n[_ACTIVITY_EVENT_MAX];

	(void)state;
	assert_int_equal(choose("__folio_mark_dirty\nfolio_account_dirtied\nfilemap_add_folio\n"
				"folio_mark_accessed", n), 0); /* no newline at the end */
	assert_string_equal(n[ACTIVITY_ACCESSED], "folio_mark_accessed");
	assert_string_equal(n[ACTIVITY_DIRTIED], "folio_account_dirtied");
	assert_null(n[ACTIVITY_BUFFER_DIRTIED]); /* optional: no buffer heads */
}

static void test_page_names(void **state)
{
	const char *n[_ACTIVITY_EVENT_MAX];

	(void)state;
	assert_int_equal(choose("mark_page_accessed\nadd_to_page_cache_lru\naccount_page_dirtied\n"
				"mark_buffer_dirty\n", n), 0);
	assert_string_equal(n[ACTIVITY_ACCESSED], "mark_page_accessed");
	assert_string_equal(n[ACTIVITY_ADDED], "add_to_page_cache_lru");
	assert_string_equal(n[ACTIVITY_DIRTIED], "account_page_dirtied");
}

static void test_whole_names_only(void **state)
{
	const char *n[_ACTIVITY_EVENT_MAX];

	(void)state;
	/* a module's function has " [module]" after its name; a suffixed copy is another function */
	assert_int_equal(choose("folio_mark_accessed [somemod]\nfilemap_add_folio.cold\n"
				"xfilemap_add_folio\nfolio_account_dirtied\n", n), -ENOENT);
	assert_string_equal(n[ACTIVITY_ACCESSED], "folio_mark_accessed");
	assert_null(n[ACTIVITY_ADDED]);
	assert_string_equal(n[ACTIVITY_DIRTIED], "folio_account_dirtied");
}

static void test_nothing(void **state)
{
	const char *n[_ACTIVITY_EVENT_MAX];

	(void)state;
	assert_int_equal(choose("", n), -ENOENT);
	for (unsigned e = 0; e < _ACTIVITY_EVENT_MAX; e++)
		assert_null(n[e]);
	assert_string_equal(activity_event_name(ACTIVITY_BUFFER_DIRTIED), "buffer_dirtied");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_linux_6_1),
		cmocka_unit_test(test_folio_names_first),
		cmocka_unit_test(test_page_names),
		cmocka_unit_test(test_whole_names_only),
		cmocka_unit_test(test_nothing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
