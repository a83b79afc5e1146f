/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The identity collector over a fake cgroup tree: one cachestat_cgroup_info series per cgroup,
 * with the labels its path gives and no others, none from below a directory root does not own
 * (the oracle: chown), but rootless podman's; the same labels in the JSON output.
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

#include "fixture.h"
#define ID64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define POD "kubepods.slice/kubepods-burstable.slice/" \
	    "kubepods-burstable-pod1a2b3c4d_0000_4000_8000_00000000abcd.slice"
/* Delegated to uid 1000: a runtime's name made there is not believed; rootless podman is. */
#define DELEGATED "delegated/docker-" ID64 ".scope"
#define ROOTLESS "user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" ID64 ".scope"

static char root[] = "/tmp/cse-identity-XXXXXX";

static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(root))
		return -1;
	fixture_sh("mkdir -p %s/system.slice/nginx.service %s/" POD
		   "/cri-containerd-" ID64 ".scope %s/" DELEGATED " %s/" ROOTLESS
		   " && chown -R 1000 %s/delegated %s/user.slice/user-1000.slice/user@1000.service",
		   root, root, root, root, root, root);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return tree_remove(root);
}

static void test_text(void **state)
{
	char *t = scan_one(root, "identity", false, NULL);

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
	/* below a cgroup root does not own: no runtime's names, but rootless podman's */
	assert_non_null(strstr(t, "cachestat_cgroup_info{cgroup=\"/" DELEGATED "\"} 1\n"));
	assert_non_null(strstr(t, "cachestat_cgroup_info{cgroup=\"/" ROOTLESS "\","
				  "systemd_slice=\"user-1000.slice\",systemd_unit=\"user@1000.service\","
				  "container_runtime=\"podman\",container_id=\"" ID64 "\","
				  "rootless_uid=\"1000\"} 1\n"));
	/*
	 * one series per cgroup: /, system.slice, nginx.service, 3 kubepods levels, the scope,
	 * delegated and its scope, the 5 levels of the rootless container
	 */
	size_t n = 0;
	for (const char *p = t; (p = strstr(p, "\ncachestat_cgroup_info{")); p++)
		n++;
	assert_int_equal(n, 14);
	assert_null(strstr(t, "collector=\"identity\"")); /* reads nothing: no success/duration */
	free(t);
}

static void test_json(void **state)
{
	char *t = scan_one(root, "identity", true, NULL);

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
