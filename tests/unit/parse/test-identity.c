/* SPDX-License-Identifier: Apache-2.0 */
/* The cgroup path parser: one test per shape of its table, then hostile names. */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "parse/identity.h"

/* The expectations below name only the labels that apply; the rest are zero. */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#define ID64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define ID64B "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
#define UID "5d3a3f2e-8b1c-4e0a-9f6d-2c7b1a0e9d84"
#define UID_ "5d3a3f2e_8b1c_4e0a_9f6d_2c7b1a0e9d84"

/* What a path must give; NULL or NONE for a label that must be absent. */
struct want {
	const char *slice;
	const char *unit;
	enum identity_runtime runtime;
	const char *id;
	const char *uid;
	enum identity_qos qos;
};

static void check_str(const char *what, const char *path, const char *got, const char *want)
{
	if (strcmp(got, want ? want : "") != 0)
		fail_msg("%s: %s is \"%s\", want \"%s\"", path, what, got, want ? want : "");
}

static void expect(const char *path, struct want w)
{
	struct identity id;

	memset(&id, 0x5a, sizeof(id)); /* the parser must fill every field */
	identity_parse(path, IDENTITY_NO_DELEGATION, &id);
	check_str("systemd_slice", path, id.systemd_slice, w.slice);
	check_str("systemd_unit", path, id.systemd_unit, w.unit);
	check_str("container_id", path, id.container_id, w.id);
	check_str("pod_uid", path, id.pod_uid, w.uid);
	if (id.runtime != w.runtime)
		fail_msg("%s: runtime %d, want %d", path, id.runtime, w.runtime);
	if (id.pod_qos != w.qos)
		fail_msg("%s: qos %d, want %d", path, id.pod_qos, w.qos);
}

/* A path that must give no label at all. */
static void expect_nothing(const char *path)
{
	expect(path, (struct want){ 0 });
}

static void test_root_and_plain(void **state)
{
	(void)state;
	expect_nothing("/");
	expect_nothing("");
	expect_nothing("/cse-it-123/b");
}

static void test_systemd_service(void **state)
{
	(void)state;
	expect("/system.slice/nginx.service", (struct want){ "system.slice", "nginx.service" });
	/* unit names escape '-' as \x2d; the value keeps the backslash */
	expect("/system.slice/system-systemd\\x2dfsck.slice/systemd-fsck@dev-disk-by\\x2duuid-1.service",
	       (struct want){ "system-systemd\\x2dfsck.slice",
			      "systemd-fsck@dev-disk-by\\x2duuid-1.service" });
}

static void test_systemd_other_units(void **state)
{
	(void)state;
	expect("/system.slice/ssh.socket", (struct want){ "system.slice", "ssh.socket" });
	expect("/system.slice/var-lib.mount", (struct want){ "system.slice", "var-lib.mount" });
	expect("/system.slice/dev-sda2.swap", (struct want){ "system.slice", "dev-sda2.swap" });
	expect("/init.scope", (struct want){ NULL, "init.scope" });
	/* a delegated subtree below a service keeps the service */
	expect("/system.slice/docker.service/sub/group", (struct want){ "system.slice", "docker.service" });
}

static void test_systemd_session_scope(void **state)
{
	(void)state;
	expect("/user.slice/user-1000.slice/session-3.scope",
	       (struct want){ "user-1000.slice", "session-3.scope" });
	expect("/user.slice", (struct want){ "user.slice" });
}

static void test_systemd_user_manager(void **state)
{
	(void)state;
	expect("/user.slice/user-1000.slice/user@1000.service",
	       (struct want){ "user-1000.slice", "user@1000.service" });
	expect("/user.slice/user-1000.slice/user@1000.service/app.slice/app-gnome-firefox-42.scope",
	       (struct want){ "app.slice", "app-gnome-firefox-42.scope" });
	expect("/user.slice/user-1000.slice/user@1000.service/app.slice/foo.service/x",
	       (struct want){ "app.slice", "foo.service" });
}

static void test_docker_scope(void **state)
{
	(void)state;
	expect("/system.slice/docker-" ID64 ".scope",
	       (struct want){ "system.slice", "docker-" ID64 ".scope", IDENTITY_RUNTIME_DOCKER, ID64 });
}

static void test_docker_cgroupfs(void **state)
{
	(void)state;
	expect("/docker/" ID64, (struct want){ .runtime = IDENTITY_RUNTIME_DOCKER, .id = ID64 });
	expect("/docker", (struct want){ 0 });
	/*
	 * docker in docker: the outer container. What is below a container's cgroup is the
	 * container's to name (it may write its cgroup): it could copy any id there.
	 */
	expect("/docker/" ID64 "/docker/" ID64B,
	       (struct want){ .runtime = IDENTITY_RUNTIME_DOCKER, .id = ID64 });
}

static void test_podman_scope(void **state)
{
	(void)state;
	expect("/machine.slice/libpod-" ID64 ".scope",
	       (struct want){ "machine.slice", "libpod-" ID64 ".scope", IDENTITY_RUNTIME_PODMAN, ID64 });
	/* crun's nested cgroup, where the processes are */
	expect("/machine.slice/libpod-" ID64 ".scope/container",
	       (struct want){ "machine.slice", "libpod-" ID64 ".scope", IDENTITY_RUNTIME_PODMAN, ID64 });
	/* rootless, below the user's manager */
	expect("/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" ID64 ".scope/container",
	       (struct want){ "user.slice", "libpod-" ID64 ".scope", IDENTITY_RUNTIME_PODMAN, ID64 });
}

static void test_podman_conmon(void **state)
{
	(void)state;
	expect("/machine.slice/libpod-conmon-" ID64 ".scope",
	       (struct want){ "machine.slice", "libpod-conmon-" ID64 ".scope", IDENTITY_RUNTIME_PODMAN,
			      ID64 });
}

static void test_containerd_scope(void **state)
{
	(void)state;
	expect("/system.slice/cri-containerd-" ID64 ".scope",
	       (struct want){ "system.slice", "cri-containerd-" ID64 ".scope",
			      IDENTITY_RUNTIME_CONTAINERD, ID64 });
}

static void test_crio_scope(void **state)
{
	(void)state;
	expect("/system.slice/crio-" ID64 ".scope",
	       (struct want){ "system.slice", "crio-" ID64 ".scope", IDENTITY_RUNTIME_CRIO, ID64 });
	expect("/system.slice/crio-conmon-" ID64 ".scope",
	       (struct want){ "system.slice", "crio-conmon-" ID64 ".scope", IDENTITY_RUNTIME_CRIO, ID64 });
}

static void test_kube_systemd_burstable(void **state)
{
	(void)state;
	expect("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_
	       ".slice/cri-containerd-" ID64 ".scope",
	       (struct want){ "kubepods-burstable-pod" UID_ ".slice", "cri-containerd-" ID64 ".scope",
			      IDENTITY_RUNTIME_CONTAINERD, ID64, UID, IDENTITY_QOS_BURSTABLE });
	/* the pod's own cgroup, and the QoS tier */
	expect("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_ ".slice",
	       (struct want){ "kubepods-burstable-pod" UID_ ".slice", .uid = UID,
			      .qos = IDENTITY_QOS_BURSTABLE });
	expect("/kubepods.slice/kubepods-burstable.slice",
	       (struct want){ "kubepods-burstable.slice", .qos = IDENTITY_QOS_BURSTABLE });
	expect("/kubepods.slice", (struct want){ "kubepods.slice" });
}

static void test_kube_systemd_besteffort(void **state)
{
	(void)state;
	expect("/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_
	       ".slice/crio-" ID64 ".scope",
	       (struct want){ "kubepods-besteffort-pod" UID_ ".slice", "crio-" ID64 ".scope",
			      IDENTITY_RUNTIME_CRIO, ID64, UID, IDENTITY_QOS_BESTEFFORT });
	expect("/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_
	       ".slice/crio-conmon-" ID64 ".scope",
	       (struct want){ "kubepods-besteffort-pod" UID_ ".slice", "crio-conmon-" ID64 ".scope",
			      IDENTITY_RUNTIME_CRIO, ID64, UID, IDENTITY_QOS_BESTEFFORT });
}

static void test_kube_systemd_guaranteed(void **state)
{
	(void)state;
	expect("/kubepods.slice/kubepods-pod" UID_ ".slice/cri-containerd-" ID64 ".scope",
	       (struct want){ "kubepods-pod" UID_ ".slice", "cri-containerd-" ID64 ".scope",
			      IDENTITY_RUNTIME_CONTAINERD, ID64, UID, IDENTITY_QOS_GUARANTEED });
}

static void test_kube_systemd_cgroup_root(void **state)
{
	(void)state;
	/* kubelet --cgroup-root=/kubelet.slice (kind): every slice name gains the prefix */
	expect("/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-burstable.slice/"
	       "kubelet-kubepods-burstable-pod" UID_ ".slice/cri-containerd-" ID64 ".scope",
	       (struct want){ "kubelet-kubepods-burstable-pod" UID_ ".slice",
			      "cri-containerd-" ID64 ".scope", IDENTITY_RUNTIME_CONTAINERD, ID64, UID,
			      IDENTITY_QOS_BURSTABLE });
}

static void test_kube_static_pod_uid(void **state)
{
	(void)state;
	/* a static pod's UID is a 32-digit hash, no dashes */
	expect("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"
	       "0123456789abcdef0123456789abcdef.slice",
	       (struct want){ "kubepods-burstable-pod0123456789abcdef0123456789abcdef.slice",
			      .uid = "0123456789abcdef0123456789abcdef", .qos = IDENTITY_QOS_BURSTABLE });
}

static void test_kube_cgroupfs_burstable(void **state)
{
	(void)state;
	expect("/kubepods/burstable/pod" UID "/" ID64,
	       (struct want){ .runtime = IDENTITY_RUNTIME_CONTAINERD, .id = ID64, .uid = UID,
			      .qos = IDENTITY_QOS_BURSTABLE });
	expect("/kubepods/burstable/pod" UID, (struct want){ .uid = UID, .qos = IDENTITY_QOS_BURSTABLE });
	expect("/kubepods/burstable", (struct want){ .qos = IDENTITY_QOS_BURSTABLE });
}

static void test_kube_cgroupfs_besteffort(void **state)
{
	(void)state;
	expect("/kubepods/besteffort/pod" UID "/" ID64,
	       (struct want){ .runtime = IDENTITY_RUNTIME_CONTAINERD, .id = ID64, .uid = UID,
			      .qos = IDENTITY_QOS_BESTEFFORT });
}

static void test_kube_cgroupfs_guaranteed(void **state)
{
	(void)state;
	expect("/kubepods/pod" UID "/" ID64,
	       (struct want){ .runtime = IDENTITY_RUNTIME_CONTAINERD, .id = ID64, .uid = UID,
			      .qos = IDENTITY_QOS_GUARANTEED });
}

static void test_kube_cgroupfs_crio(void **state)
{
	(void)state;
	expect("/kubepods/burstable/pod" UID "/crio-" ID64,
	       (struct want){ .runtime = IDENTITY_RUNTIME_CRIO, .id = ID64, .uid = UID,
			      .qos = IDENTITY_QOS_BURSTABLE });
	expect("/kubepods/pod" UID "/crio-conmon-" ID64,
	       (struct want){ .runtime = IDENTITY_RUNTIME_CRIO, .id = ID64, .uid = UID,
			      .qos = IDENTITY_QOS_GUARANTEED });
}

/* Ids that are not 64 lowercase hex digits are nobody's. */
static void test_hostile_ids(void **state)
{
	(void)state;
	/* 63 and 65 digits */
	expect("/system.slice/docker-" ID64 "0.scope",
	       (struct want){ "system.slice", "docker-" ID64 "0.scope" });
	expect("/system.slice/docker-" "123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" ".scope",
	       (struct want){ "system.slice",
			      "docker-123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope" });
	/* uppercase, a non-hex letter */
	expect("/docker/0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef", (struct want){ 0 });
	expect("/docker/g123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", (struct want){ 0 });
	expect_nothing("/docker/" ID64 "0");
	/* a bare id anywhere else is not a container */
	expect_nothing("/" ID64);
	expect_nothing("/other/" ID64);
	/* the scope suffix where the cgroupfs shape has none, and the reverse */
	expect("/docker/" ID64 ".scope/x/y.txt", (struct want){ NULL, ID64 ".scope" });
	expect("/kubepods/pod" UID "/" ID64 ".scope",
	       (struct want){ NULL, ID64 ".scope", .uid = UID, .qos = IDENTITY_QOS_GUARANTEED });
}

static void test_hostile_sequences(void **state)
{
	(void)state;
	/* the context is the component just before, not any earlier one */
	expect_nothing("/docker/x/" ID64);
	expect_nothing("/docker//" ID64);
	expect_nothing("/docker/../" ID64);
	expect_nothing("/docker/./" ID64);
	expect_nothing("/burstable/pod" UID "/" ID64);
	expect_nothing("/pod" UID "/" ID64);
	expect("/kubepods/x/pod" UID, (struct want){ 0 });
	expect_nothing("/kubepods/guaranteed/pod" UID);
}

static void test_hostile_uids(void **state)
{
	(void)state;
	/* the separators of the other driver, a short group, uppercase */
	expect("/kubepods.slice/kubepods-pod" UID ".slice", (struct want){ "kubepods-pod" UID ".slice" });
	expect_nothing("/kubepods/pod" UID_);
	expect_nothing("/kubepods/pod5d3a3f2e-8b1c-4e0a-9f6d-2c7b1a0e9d8");
	expect_nothing("/kubepods/pod5D3A3F2E-8B1C-4E0A-9F6D-2C7B1A0E9D84");
	expect_nothing("/kubepods/pod5d3a3f2e-8b1c-4e0a-9f6d-2c7b1a0e9d84-");
	expect_nothing("/kubepods/pod5d3a3f2e8-b1c-4e0a-9f6d-2c7b1a0e9d84");
	/* a slice tail whose head is no slice name */
	expect_nothing("/x y-kubepods-pod" UID_ ".slice");
	expect("/-kubepods-pod" UID_ ".slice", (struct want){ "-kubepods-pod" UID_ ".slice" });
}

static void test_hostile_unit_names(void **state)
{
	char longname[600], slice[216];

	(void)state;
	expect_nothing("/.service");
	expect_nothing("/..");
	expect_nothing("/a b.service");
	expect_nothing("/x\"y.service");
	expect_nothing("/x\ny.service");
	expect_nothing("/\xc3\xa9t\xc3\xa9.service");
	expect_nothing("/@x.service");
	expect_nothing("/x@.service");
	expect_nothing("/a@b@c.service");
	expect_nothing("/nginx.servic");
	expect_nothing("/nginx.timer");
	/* 255 characters are a unit, 256 are not */
	memset(longname, 'a', sizeof(longname));
	memcpy(longname + 247, ".service", 9);
	expect(longname, (struct want){ NULL, longname });
	longname[0] = '/';
	memset(longname + 1, 'a', 248);
	memcpy(longname + 249, ".service", 9);
	expect_nothing(longname);
	/*
	 * a pod slice under a long head (--cgroup-root), in its kubepods slice: a match up to 255
	 * characters, nothing past them
	 */
	longname[0] = '/';
	memset(longname + 1, 'a', 200);
	strcpy(longname + 201, "-kubepods.slice/");
	memset(longname + 217, 'a', 200);
	strcpy(longname + 417, "-kubepods-pod" UID_ ".slice");
	expect(longname, (struct want){ longname + 217, .uid = UID, .qos = IDENTITY_QOS_GUARANTEED });
	/* the pod slice alone: not in the kubelet's tree */
	expect(longname + 216, (struct want){ longname + 217 });
	memset(longname + 1, 'a', 200);
	strcpy(longname + 201, "-kubepods.slice/");
	memset(longname + 217, 'a', 250);
	strcpy(longname + 467, "-kubepods-pod" UID_ ".slice");
	memcpy(slice, longname + 1, 215);
	slice[215] = '\0';
	expect(longname, (struct want){ slice });
}

/* expect() below a delegation point at index at; and the rootless uid. */
static void expect_at(const char *path, size_t at, struct want w, const char *rootless_uid)
{
	struct identity id;

	identity_parse(path, at, &id);
	check_str("systemd_slice", path, id.systemd_slice, w.slice);
	check_str("systemd_unit", path, id.systemd_unit, w.unit);
	check_str("container_id", path, id.container_id, w.id);
	check_str("pod_uid", path, id.pod_uid, w.uid);
	check_str("rootless_uid", path, id.rootless_uid, rootless_uid);
	if (id.runtime != w.runtime)
		fail_msg("%s: runtime %d, want %d", path, id.runtime, w.runtime);
	if (id.pod_qos != w.qos)
		fail_msg("%s: qos %d, want %d", path, id.pod_qos, w.qos);
}

/* Nothing below a delegation point is believed, but rootless podman below user@UID.service. */
static void test_delegation(void **state)
{
	(void)state;
	/* a user's delegated service copies a pod's and a container's names */
	expect_at("/system.slice/ci.service/kubepods-besteffort-pod" UID_ ".slice", 1,
		  (struct want){ "system.slice", "ci.service" }, NULL);
	expect_at("/user.slice/user-1000.slice/user@1000.service/app.slice/docker-" ID64 ".scope", 2,
		  (struct want){ "user-1000.slice", "user@1000.service" }, NULL);
	/* the delegation point's own name was chosen by root (a runtime's, userns-remapped) */
	expect_at("/system.slice/docker-" ID64 ".scope", 1,
		  (struct want){ "system.slice", "docker-" ID64 ".scope", IDENTITY_RUNTIME_DOCKER, ID64 },
		  NULL);
	/* rootless podman: its container, with the user's uid */
	expect_at("/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" ID64 ".scope", 2,
		  (struct want){ "user-1000.slice", "user@1000.service", IDENTITY_RUNTIME_PODMAN, ID64 },
		  "1000");
	expect_at("/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" ID64
		  ".scope/container", 2,
		  (struct want){ "user-1000.slice", "user@1000.service", IDENTITY_RUNTIME_PODMAN, ID64 },
		  "1000");
	/* not below its user's manager: nothing */
	expect_at("/user.slice/user-1001.slice/user@1000.service/libpod-" ID64 ".scope", 2,
		  (struct want){ "user-1001.slice", "user@1000.service" }, NULL);
	expect_at("/system.slice/x.service/libpod-" ID64 ".scope", 1,
		  (struct want){ "system.slice", "x.service" }, NULL);
	/* below a rootless container, its own names are not believed either */
	expect_at("/user.slice/user-1000.slice/user@1000.service/libpod-" ID64 ".scope/libpod-" ID64B
		  ".scope", 2,
		  (struct want){ "user-1000.slice", "user@1000.service", IDENTITY_RUNTIME_PODMAN, ID64 },
		  "1000");
}

/* Kubernetes only in the kubelet's tree from the top; nothing below a container's cgroup. */
static void test_structure(void **state)
{
	(void)state;
	expect("/system.slice/kubepods.slice/kubepods-pod" UID_ ".slice",
	       (struct want){ "kubepods-pod" UID_ ".slice" });
	expect("/kubepods-besteffort-pod" UID_ ".slice",
	       (struct want){ "kubepods-besteffort-pod" UID_ ".slice" });
	expect("/kubepods.slice/kubepods-besteffort-pod" UID_ ".slice",
	       (struct want){ "kubepods-besteffort-pod" UID_ ".slice" });
	expect_nothing("/foo/kubepods/pod" UID "/" ID64);
	expect_nothing("/foo/docker/" ID64);
	/* a container's cgroup seals what is below it */
	expect("/system.slice/docker-" ID64 ".scope/kubepods.slice/kubepods-pod" UID_
	       ".slice/cri-containerd-" ID64B ".scope",
	       (struct want){ "system.slice", "docker-" ID64 ".scope", IDENTITY_RUNTIME_DOCKER, ID64 });
	expect("/kubepods/besteffort/pod" UID "/" ID64 "/kubepods/pod" UID "/" ID64B,
	       (struct want){ .runtime = IDENTITY_RUNTIME_CONTAINERD, .id = ID64, .uid = UID,
			      .qos = IDENTITY_QOS_BESTEFFORT });
}

static int count_label(const char *name, const char *value, void *userdata)
{
	(void)name;
	(void)value;
	(*(int *)userdata)++;
	return 0;
}

static void test_labels_text(void **state)
{
	struct identity id;
	char buf[IDENTITY_LABELS_MAX];
	int n = 0, r;

	(void)state;
	identity_parse("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_
		       ".slice/cri-containerd-" ID64 ".scope",
		       IDENTITY_NO_DELEGATION, &id);
	r = identity_labels(&id, buf, sizeof(buf));
	assert_int_equal(r, strlen(buf));
	assert_string_equal(buf, ",systemd_slice=\"kubepods-burstable-pod" UID_ ".slice\""
				 ",systemd_unit=\"cri-containerd-" ID64 ".scope\""
				 ",container_runtime=\"containerd\",container_id=\"" ID64 "\""
				 ",pod_uid=\"" UID "\",pod_qos=\"burstable\"");
	assert_int_equal(identity_foreach_label(&id, count_label, &n), 0);
	assert_int_equal(n, 6);

	identity_parse("/", IDENTITY_NO_DELEGATION, &id);
	assert_int_equal(identity_labels(&id, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "");

	/* a backslash of systemd's escaping is escaped for the text format */
	identity_parse("/system.slice/a\\x2db.service", IDENTITY_NO_DELEGATION, &id);
	r = identity_labels(&id, buf, sizeof(buf));
	assert_int_equal(r, strlen(buf));
	assert_string_equal(buf, ",systemd_slice=\"system.slice\",systemd_unit=\"a\\\\x2db.service\"");
	assert_int_equal(identity_labels(&id, buf, 20), -ENOSPC);
	assert_string_equal(buf, "");
}

/* The longest identity, every character escaped, fits IDENTITY_LABELS_MAX. */
static void test_labels_worst_case(void **state)
{
	struct identity id = { .runtime = IDENTITY_RUNTIME_CONTAINERD,
			       .pod_qos = IDENTITY_QOS_BESTEFFORT };
	char buf[IDENTITY_LABELS_MAX];

	(void)state;
	memset(id.systemd_slice, '\\', sizeof(id.systemd_slice) - 1);
	memset(id.systemd_unit, '\\', sizeof(id.systemd_unit) - 1);
	memset(id.container_id, 'f', sizeof(id.container_id) - 1);
	memset(id.pod_uid, 'f', sizeof(id.pod_uid) - 1);
	assert_true(identity_labels(&id, buf, sizeof(buf)) > 1000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_root_and_plain),
		cmocka_unit_test(test_systemd_service),
		cmocka_unit_test(test_systemd_other_units),
		cmocka_unit_test(test_systemd_session_scope),
		cmocka_unit_test(test_systemd_user_manager),
		cmocka_unit_test(test_docker_scope),
		cmocka_unit_test(test_docker_cgroupfs),
		cmocka_unit_test(test_podman_scope),
		cmocka_unit_test(test_podman_conmon),
		cmocka_unit_test(test_containerd_scope),
		cmocka_unit_test(test_crio_scope),
		cmocka_unit_test(test_kube_systemd_burstable),
		cmocka_unit_test(test_kube_systemd_besteffort),
		cmocka_unit_test(test_kube_systemd_guaranteed),
		cmocka_unit_test(test_kube_systemd_cgroup_root),
		cmocka_unit_test(test_kube_static_pod_uid),
		cmocka_unit_test(test_kube_cgroupfs_burstable),
		cmocka_unit_test(test_kube_cgroupfs_besteffort),
		cmocka_unit_test(test_kube_cgroupfs_guaranteed),
		cmocka_unit_test(test_kube_cgroupfs_crio),
		cmocka_unit_test(test_hostile_ids),
		cmocka_unit_test(test_hostile_sequences),
		cmocka_unit_test(test_delegation),
		cmocka_unit_test(test_structure),
		cmocka_unit_test(test_hostile_uids),
		cmocka_unit_test(test_hostile_unit_names),
		cmocka_unit_test(test_labels_text),
		cmocka_unit_test(test_labels_worst_case),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
