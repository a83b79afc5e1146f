/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The identity collector over a fake cgroup tree: one cachestat_cgroup_info series per cgroup,
 * with the labels its path gives and no others; the same labels in the JSON output.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "collect.h"
#include "registry.h"
#include "render.h"

#define ID64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define POD "kubepods.slice/kubepods-burstable.slice/" \
	    "kubepods-burstable-pod1a2b3c4d_0000_4000_8000_00000000abcd.slice"

static char root[] = "/tmp/cse-identity-XXXXXX";

static int setup(void **state)
{
	char cmd[512];

	(void)state;
	if (!mkdtemp(root))
		return -1;
	snprintf(cmd, sizeof(cmd), "mkdir -p %s/system.slice/nginx.service %s/" POD
		 "/cri-containerd-" ID64 ".scope",
		 root, root);
	return system(cmd) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	return system(cmd) == 0 ? 0 : -1;
}

/* One scan with the identity collector alone, rendered in the format asked. */
static char *scan_render(bool json)
{
	struct collector_options o = { .cgroupfs = root, .procfs = "/proc" };
	struct pagecache pc = { .abi = PAGECACHE_ABI_NONE };
	const struct render_meta meta = { "1", "r" };
	struct collector *c = NULL;
	struct snapshot *s = NULL;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int idx = registry_find("identity");

	assert_true(idx >= 0);
	o.enable[idx] = true;
	assert_int_equal(collector_new(&o, &pc, config_new_default(), &c), 0);
	assert_int_equal(collector_scan(c, &s), 0);
	assert_false(s->collectors[idx].reported); /* reads nothing: no success/duration */
	f = open_memstream(&buf, &len);
	assert_non_null(f);
	assert_int_equal((json ? render_json : render_text)(f, s, &meta), 0);
	fclose(f);
	snapshot_unref(s);
	collector_free(c);
	return buf;
}

static void test_text(void **state)
{
	char *t = scan_render(false);

	(void)state;
	assert_non_null(strstr(t, "# TYPE cachestat_cgroup_info gauge\n"
				  "cachestat_cgroup_info{cgroup=\"/\"} 1\n"));
	assert_non_null(strstr(t, "cachestat_cgroup_info{cgroup=\"/" POD "/cri-containerd-" ID64
				  ".scope\",systemd_slice=\"kubepods-burstable-pod1a2b3c4d_0000_4000_"
				  "8000_00000000abcd.slice\",systemd_unit=\"cri-containerd-" ID64
				  ".scope\",container_runtime=\"containerd\",container_id=\"" ID64
				  "\",pod_uid=\"1a2b3c4d-0000-4000-8000-00000000abcd\","
				  "pod_qos=\"burstable\"} 1\n"));
	assert_non_null(strstr(t, "cachestat_cgroup_info{cgroup=\"/system.slice/nginx.service\","
				  "systemd_slice=\"system.slice\",systemd_unit=\"nginx.service\"} 1\n"));
	/* one series per cgroup: /, system.slice, nginx.service, 3 kubepods levels, the scope */
	size_t n = 0;
	for (const char *p = t; (p = strstr(p, "\ncachestat_cgroup_info{")); p++)
		n++;
	assert_int_equal(n, 7);
	free(t);
}

static void test_json(void **state)
{
	char *t = scan_render(true);

	(void)state;
	assert_non_null(strstr(t, "\"cgroup\": \"/system.slice/nginx.service\",\n"
				  "      \"identity\": {\n"
				  "        \"systemd_slice\": \"system.slice\",\n"
				  "        \"systemd_unit\": \"nginx.service\"\n"
				  "      }\n"));
	/* the root cgroup: no label applies, no identity object */
	assert_non_null(strstr(t, "\"cgroup\": \"/\"\n    }"));
	free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_text),
		cmocka_unit_test(test_json),
	};

	return cmocka_run_group_tests_name("identity collector", tests, setup, teardown);
}
