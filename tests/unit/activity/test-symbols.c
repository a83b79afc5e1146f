/* SPDX-License-Identifier: Apache-2.0 */
/*
 * symbols: /proc/kallsyms's lines made into the list the attach points are chosen from.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "activity/attach.h"
#include "activity/symbols.h"

static void test_kallsyms(void **state)
{
	/* text symbols (t, T) kept, with a module's; data (D, d, b) and malformed lines dropped */
	char text[] = "ffffffff81000000 T _stext\n"
		      "ffffffff81234560 t folio_account_dirtied\n"
		      "ffffffff81234570 D filemap_add_folio\n"
		      "ffffffff81234580 T folio_mark_accessed\n"
		      "ffffffffc0001000 t mark_buffer_dirty\t[somemod]\n"
		      "garbage\n"
		      "ffffffff8123 T\n"
		      "0000000000000000 T filemap_add_folio";
	const char *n[_ACTIVITY_EVENT_MAX];
	size_t len;

	(void)state;
	len = activity_kallsyms_names(text, strlen(text));
	assert_int_equal(len, strlen("_stext\nfolio_account_dirtied\nfolio_mark_accessed\n"
				     "mark_buffer_dirty\nfilemap_add_folio\n"));
	assert_memory_equal(text, "_stext\nfolio_account_dirtied\nfolio_mark_accessed\n"
			    "mark_buffer_dirty\nfilemap_add_folio\n", len);
	assert_int_equal(activity_choose(text, len, n), 0);
	assert_string_equal(n[ACTIVITY_DIRTIED], "folio_account_dirtied");
	assert_string_equal(n[ACTIVITY_ADDED], "filemap_add_folio");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kallsyms),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
