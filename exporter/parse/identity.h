/* SPDX-License-Identifier: Apache-2.0 */
/*
 * identity: who a cgroup belongs to, read from its path alone (systemd unit and slice,
 * container runtime and id, Kubernetes pod UID and QoS class, a rootless container's user).
 * Pure: a string and where its delegated part begins in, a struct out, no I/O, no allocation.
 * The labels of cachestat_cgroup_info come from here.
 *
 * Trust: a name is believed only where its owner could not have chosen it. A cgroup can be made
 * only by who may write its parent, so the names down to the first cgroup not owned by root (a
 * delegation point: systemd's user@UID.service, a runtime's container cgroup handed to the
 * container) were chosen by root; below it, by whoever it was delegated to, who could copy any
 * container id or pod UID. Nothing below a delegation point is parsed, but for rootless podman
 * below user@UID.service (labelled with that uid). Nothing below a container's cgroup is parsed
 * either (a container with write access to its cgroup could make such names as root), and
 * Kubernetes' shapes count only in the kubelet's tree from the top of the hierarchy.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* systemd's UNIT_NAME_MAX: the longest unit name plus its NUL. */
#define IDENTITY_UNIT_MAX 256
#define IDENTITY_CONTAINER_ID_LEN 64
#define IDENTITY_POD_UID_MAX 37 /* 8-4-4-4-12 hex digits and a NUL */
#define IDENTITY_UID_MAX 11     /* a uid_t in decimal and a NUL */

/* identity_parse()'s delegated_at for a path with no delegation point. */
#define IDENTITY_NO_DELEGATION SIZE_MAX

/* Room for every label identity_labels() can write, escaped, and the NUL. */
#define IDENTITY_LABELS_MAX 1536

enum identity_runtime {
	IDENTITY_RUNTIME_NONE,
	IDENTITY_RUNTIME_DOCKER,
	IDENTITY_RUNTIME_PODMAN,
	IDENTITY_RUNTIME_CONTAINERD,
	IDENTITY_RUNTIME_CRIO,
	_IDENTITY_RUNTIME_MAX,
};

enum identity_qos {
	IDENTITY_QOS_NONE,
	IDENTITY_QOS_GUARANTEED,
	IDENTITY_QOS_BURSTABLE,
	IDENTITY_QOS_BESTEFFORT,
	_IDENTITY_QOS_MAX,
};

/* What a path says; an empty string or a _NONE value is a label that does not apply. */
struct identity {
	char systemd_slice[IDENTITY_UNIT_MAX]; /* the innermost slice */
	char systemd_unit[IDENTITY_UNIT_MAX];  /* the innermost service, scope, socket, mount, swap */
	enum identity_runtime runtime;
	char container_id[IDENTITY_CONTAINER_ID_LEN + 1]; /* 64 lowercase hex digits */
	char pod_uid[IDENTITY_POD_UID_MAX];               /* as the API prints it, with dashes */
	enum identity_qos pod_qos;
	char rootless_uid[IDENTITY_UID_MAX]; /* a rootless container's user, from user@UID.service */
};

/*
 * Parses a cgroup path ("/system.slice/nginx.service", the cgroup label) component by
 * component against a table of shapes (see identity.c and docs/exporter-reference.md). The
 * innermost match of each label wins; what no shape recognises leaves the labels of its parents
 * alone.
 * delegated_at is the index (from 0, the first component) of the first component whose cgroup
 * is not owned by root, IDENTITY_NO_DELEGATION for none: components after it are not parsed
 * (above). Never fails: a path nothing recognises gives an empty identity.
 */
void identity_parse(const char *path, size_t delegated_at, struct identity *ret);

/* "docker", "podman", "containerd", "crio"; NULL for NONE. */
const char *identity_runtime_name(enum identity_runtime r);
/* "guaranteed", "burstable", "besteffort"; NULL for NONE. */
const char *identity_qos_name(enum identity_qos q);

/*
 * Called for each label that applies, in the contract's order (systemd_slice, systemd_unit,
 * container_runtime, container_id, pod_uid, pod_qos, rootless_uid), with the raw value. A
 * negative return stops and is passed on.
 */
typedef int (*identity_label_fn)(const char *name, const char *value, void *userdata);
int identity_foreach_label(const struct identity *id, identity_label_fn fn, void *userdata);

/*
 * Writes the labels that apply as text-format pairs, each with a leading comma
 * (`,systemd_slice="system.slice",systemd_unit="nginx.service"`), escaped, so that they follow
 * a `cgroup="..."` label directly. Returns the length written (0 when none applies), or
 * -ENOSPC when size is too small (IDENTITY_LABELS_MAX always suffices).
 */
int identity_labels(const struct identity *id, char *buf, size_t size);
