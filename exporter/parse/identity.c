/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The shapes below are the names systemd, the container runtimes and the kubelet give the
 * cgroups they make. Each is a pattern on one path component, "prefix<part>suffix", and a
 * sequence is spelled through a context: a shape may require what the component before it left
 * (cgroupfs drivers spell a pod as kubepods/burstable/pod<uid>/<id>, one name per level).
 * Every shape is tried on every component of the trusted part of the path (identity.h); the
 * variable parts are checked strictly (exact lengths, lowercase hex, systemd's unit name
 * characters), so that a name that only looks like a container gives no label at all rather
 * than a wrong one.
 */
#define _GNU_SOURCE
#include "parse/identity.h"

#include <errno.h>
#include <string.h>

#include "base/util.h"

/* What the variable part between prefix and suffix must be, and which label it fills. */
enum part {
	PART_NONE,        /* nothing: the component is prefix + suffix exactly */
	PART_UNIT,        /* a unit name before its suffix: systemd_unit */
	PART_SLICE,       /* the same for a slice: systemd_slice */
	PART_ID,          /* a container id, 64 lowercase hex digits: container_id */
	PART_UID,         /* a pod UID as the API prints it (with '-'): pod_uid */
	PART_UID_SYSTEMD, /* the same with '_' for '-', as slice names need it: pod_uid */
};

/* What a component leaves for the next one, for the cgroupfs sequences. */
enum {
	CTX_DOCKER = 1u << 0,   /* "docker" */
	CTX_KUBEPODS = 1u << 1, /* "kubepods" */
	CTX_KUBE_QOS = 1u << 2, /* "kubepods/burstable", "kubepods/besteffort" */
	CTX_KUBE_POD = 1u << 3, /* ".../pod<uid>" */
	CTX_KUBEPODS_SD = 1u << 4, /* "kubepods.slice" (systemd driver) */
	CTX_KUBE_QOS_SD = 1u << 5, /* "kubepods-burstable.slice", "kubepods-besteffort.slice" */
};

struct shape {
	const char *prefix;
	enum part part;
	const char *suffix;
	unsigned after;  /* CTX_* the component before must have left; 0: any */
	unsigned then;   /* CTX_* this component leaves */
	bool slice_tail; /* the prefix may follow "<parent slices>-" (the kubelet's --cgroup-root) */
	bool top;        /* only at the top: the first component, or below slices only */
	enum identity_runtime runtime;
	enum identity_qos qos;
};

#define DOCKER IDENTITY_RUNTIME_DOCKER
#define PODMAN IDENTITY_RUNTIME_PODMAN
#define CONTAINERD IDENTITY_RUNTIME_CONTAINERD
#define CRIO IDENTITY_RUNTIME_CRIO
#define GUARANTEED IDENTITY_QOS_GUARANTEED
#define BURSTABLE IDENTITY_QOS_BURSTABLE
#define BESTEFFORT IDENTITY_QOS_BESTEFFORT

/* "prefix<part>suffix", then what the shape requires and gives. */
#define SHAPE(pfx, prt, sfx, ...) { .prefix = pfx, .part = prt, .suffix = sfx, __VA_ARGS__ }

/* The table of shapes; docs/exporter-reference.md ("Cgroup identity") shows it with examples. */
static const struct shape shapes[] = {
	/* systemd: every unit type that owns a cgroup */
	SHAPE("", PART_SLICE, ".slice"),
	SHAPE("", PART_UNIT, ".service"),
	SHAPE("", PART_UNIT, ".scope"),
	SHAPE("", PART_UNIT, ".socket"),
	SHAPE("", PART_UNIT, ".mount"),
	SHAPE("", PART_UNIT, ".swap"),
	/* container scopes of the systemd cgroup driver */
	SHAPE("docker-", PART_ID, ".scope", .runtime = DOCKER),
	SHAPE("libpod-", PART_ID, ".scope", .runtime = PODMAN),
	SHAPE("libpod-conmon-", PART_ID, ".scope", .runtime = PODMAN),
	SHAPE("cri-containerd-", PART_ID, ".scope", .runtime = CONTAINERD),
	SHAPE("crio-", PART_ID, ".scope", .runtime = CRIO),
	SHAPE("crio-conmon-", PART_ID, ".scope", .runtime = CRIO),
	/*
	 * Kubernetes, systemd driver: a slice's name spells its whole path, and each is in the
	 * one its name extends: kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice
	 */
	SHAPE("kubepods", PART_NONE, ".slice", .slice_tail = true, .top = true, .then = CTX_KUBEPODS_SD),
	SHAPE("kubepods-burstable", PART_NONE, ".slice", .slice_tail = true, .after = CTX_KUBEPODS_SD,
	      .then = CTX_KUBE_QOS_SD, .qos = BURSTABLE),
	SHAPE("kubepods-besteffort", PART_NONE, ".slice", .slice_tail = true, .after = CTX_KUBEPODS_SD,
	      .then = CTX_KUBE_QOS_SD, .qos = BESTEFFORT),
	SHAPE("kubepods-pod", PART_UID_SYSTEMD, ".slice", .slice_tail = true, .after = CTX_KUBEPODS_SD,
	      .qos = GUARANTEED),
	SHAPE("kubepods-burstable-pod", PART_UID_SYSTEMD, ".slice", .slice_tail = true,
	      .after = CTX_KUBE_QOS_SD, .qos = BURSTABLE),
	SHAPE("kubepods-besteffort-pod", PART_UID_SYSTEMD, ".slice", .slice_tail = true,
	      .after = CTX_KUBE_QOS_SD, .qos = BESTEFFORT),
	/* Kubernetes, cgroupfs driver: kubepods[/burstable|/besteffort]/pod<uid>/<container> */
	SHAPE("kubepods", PART_NONE, "", .top = true, .then = CTX_KUBEPODS),
	SHAPE("burstable", PART_NONE, "", .after = CTX_KUBEPODS, .then = CTX_KUBE_QOS, .qos = BURSTABLE),
	SHAPE("besteffort", PART_NONE, "", .after = CTX_KUBEPODS, .then = CTX_KUBE_QOS, .qos = BESTEFFORT),
	SHAPE("pod", PART_UID, "", .after = CTX_KUBEPODS, .then = CTX_KUBE_POD, .qos = GUARANTEED),
	SHAPE("pod", PART_UID, "", .after = CTX_KUBE_QOS, .then = CTX_KUBE_POD),
	SHAPE("", PART_ID, "", .after = CTX_KUBE_POD, .runtime = CONTAINERD),
	SHAPE("crio-", PART_ID, "", .after = CTX_KUBE_POD, .runtime = CRIO),
	SHAPE("crio-conmon-", PART_ID, "", .after = CTX_KUBE_POD, .runtime = CRIO),
	/* Docker, cgroupfs driver: docker/<id> */
	SHAPE("docker", PART_NONE, "", .top = true, .then = CTX_DOCKER),
	SHAPE("", PART_ID, "", .after = CTX_DOCKER, .runtime = DOCKER),
};

/* Rootless podman's container scopes, below user@UID.service: the only shapes parsed there. */
static const struct shape rootless_shapes[] = {
	SHAPE("libpod-", PART_ID, ".scope", .runtime = PODMAN),
	SHAPE("libpod-conmon-", PART_ID, ".scope", .runtime = PODMAN),
};

static bool is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/* systemd's unit name characters (unit_name_is_valid()), '@' apart. */
static bool is_unit_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == ':' || c == '-' || c == '_' || c == '.' || c == '\\';
}

/* The part of a unit name before its type suffix: "name" or "template@instance". */
static bool unit_prefix_valid(const char *p, size_t n)
{
	const char *at = memchr(p, '@', n);

	if (n == 0)
		return false;
	if (at && (at == p || at == p + n - 1 || memchr(at + 1, '@', n - (size_t)(at - p) - 1)))
		return false; /* no template without instance, one '@' */
	for (size_t i = 0; i < n; i++)
		if (p[i] != '@' && !is_unit_char(p[i]))
			return false;
	return true;
}

/* n lowercase hex digits. */
static bool hex_run(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!is_hex(p[i]))
			return false;
	return true;
}

static bool id_valid(const char *p, size_t n)
{
	return n == IDENTITY_CONTAINER_ID_LEN && hex_run(p, n);
}

/*
 * A pod UID: 8-4-4-4-12 lowercase hex digits with sep between the groups, or 32 hex digits
 * without (a static pod's UID is the hash of its manifest).
 */
static bool uid_valid(const char *p, size_t n, char sep)
{
	if (n == 32)
		return hex_run(p, n);
	if (n != 36)
		return false;
	for (size_t i = 0; i < n; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;

		if (dash ? p[i] != sep : !is_hex(p[i]))
			return false;
	}
	return true;
}

static bool part_valid(enum part part, const char *p, size_t n)
{
	switch (part) {
	case PART_NONE:
		return n == 0;
	case PART_UNIT:
	case PART_SLICE:
		return unit_prefix_valid(p, n);
	case PART_ID:
		return id_valid(p, n);
	case PART_UID:
		return uid_valid(p, n, '-');
	case PART_UID_SYSTEMD:
		return uid_valid(p, n, '_');
	}
	return false;
}

/* Whether c[off..n) is "prefix<part>suffix"; *ret_part is where the part starts. */
static bool match_at(const struct shape *sh, const char *c, size_t n, size_t off,
		     const char **ret_part)
{
	size_t lp = strlen(sh->prefix), ls = strlen(sh->suffix);

	if (n - off < lp + ls)
		return false;
	if (memcmp(c + off, sh->prefix, lp) != 0 || memcmp(c + n - ls, sh->suffix, ls) != 0)
		return false;
	if (!part_valid(sh->part, c + off + lp, n - off - lp - ls))
		return false;
	*ret_part = c + off + lp;
	return true;
}

/*
 * Matches the component c (n bytes) against sh; with slice_tail also after each "-" whose
 * head is made of unit name characters. *ret_part and *ret_len give the variable part.
 */
static bool shape_match(const struct shape *sh, const char *c, size_t n, const char **ret_part,
			size_t *ret_len)
{
	size_t trail = strlen(sh->suffix);

	if (n < trail || memcmp(c + n - trail, sh->suffix, trail) != 0)
		return false; /* the cheap test first: most shapes end differently */
	for (size_t off = 0; off < n; off++) {
		if (off > 0 && (!sh->slice_tail || off < 2 || c[off - 1] != '-'))
			continue;
		if (off > 0 && !unit_prefix_valid(c, off - 1))
			continue; /* the head must be a slice name of its own */
		if (match_at(sh, c, n, off, ret_part)) {
			*ret_len = n - (size_t)(*ret_part - c) - trail;
			return true;
		}
		if (!sh->slice_tail)
			break;
	}
	return false;
}

static void copy_label(char *dst, size_t size, const char *src, size_t n, bool dashes)
{
	if (n >= size)
		return; /* cannot happen: parts are checked for length */
	for (size_t i = 0; i < n; i++)
		dst[i] = dashes && src[i] == '_' ? '-' : src[i];
	dst[n] = '\0';
}

/* Tries one shape on the component c; returns the context it leaves (0 when none). */
static unsigned shape_apply(const struct shape *sh, const char *c, size_t n, unsigned ctx,
			    struct identity *id)
{
	const char *part;
	size_t len;

	if (sh->after && !(sh->after & ctx))
		return 0;
	if (!shape_match(sh, c, n, &part, &len))
		return 0;
	switch (sh->part) {
	case PART_UNIT:
		copy_label(id->systemd_unit, sizeof(id->systemd_unit), c, n, false);
		break;
	case PART_SLICE:
		copy_label(id->systemd_slice, sizeof(id->systemd_slice), c, n, false);
		break;
	case PART_ID:
		copy_label(id->container_id, sizeof(id->container_id), part, len, false);
		break;
	case PART_UID:
	case PART_UID_SYSTEMD:
		copy_label(id->pod_uid, sizeof(id->pod_uid), part, len, true);
		break;
	case PART_NONE:
		break;
	}
	if (sh->runtime != IDENTITY_RUNTIME_NONE)
		id->runtime = sh->runtime;
	if (sh->qos != IDENTITY_QOS_NONE)
		id->pod_qos = sh->qos;
	return sh->then;
}

/*
 * The uid of "user@UID.service" in "user-UID.slice" (systemd's user manager, the delegation
 * point of a user's cgroups), into uid; false for any other component.
 */
static bool user_manager(const char *c, size_t n, const char *parent, size_t parent_n,
			 char uid[IDENTITY_UID_MAX])
{
	size_t digits = n > 13 ? n - 13 : 0; /* "user@" ".service" */

	if (digits == 0 || digits >= IDENTITY_UID_MAX || memcmp(c, "user@", 5) != 0 ||
	    memcmp(c + 5 + digits, ".service", 8) != 0 || parent_n != digits + 11 ||
	    memcmp(parent, "user-", 5) != 0 || memcmp(parent + 5, c + 5, digits) != 0 ||
	    memcmp(parent + 5 + digits, ".slice", 6) != 0)
		return false;
	for (size_t i = 0; i < digits; i++)
		if (c[5 + i] < '0' || c[5 + i] > '9')
			return false;
	copy_label(uid, IDENTITY_UID_MAX, c + 5, digits, false);
	return true;
}

static bool is_slice(const char *c, size_t n)
{
	return n > 6 && memcmp(c + n - 6, ".slice", 6) == 0;
}

/* Where parsing is in a path. */
struct walk {
	size_t index;        /* of the component */
	const char *parent;  /* the component before, parent_n bytes; NULL at the top */
	size_t parent_n;
	unsigned ctx;        /* what the component before left */
	bool under_slices;   /* every component before was a slice */
	bool sealed;         /* a container's cgroup is above: its contents are the container's */
	char user_uid[IDENTITY_UID_MAX]; /* below user@UID.service: that uid */
};

/*
 * Whether sh may apply to the component c here: a .top shape only at the top, or below slices
 * the way systemd nests them ("P-name.slice" in "P.slice", the kubelet's --cgroup-root).
 */
static bool shape_here(const struct shape *sh, const struct walk *w, const char *c, size_t n)
{
	size_t stem = w->parent_n - 6; /* the parent's name without ".slice" */

	if (!sh->top || w->index == 0)
		return true;
	return sh->slice_tail && w->under_slices && w->parent && w->parent_n > 6 && n > stem + 1 &&
	       memcmp(c, w->parent, stem) == 0 && c[stem] == '-';
}

/* One component of the trusted part: the whole table. */
static void parse_trusted(struct walk *w, const char *c, size_t n, struct identity *id)
{
	unsigned next = 0;

	for (size_t i = 0; i < ELEMENTSOF(shapes); i++) {
		if (!shape_here(&shapes[i], w, c, n))
			continue;
		next |= shape_apply(&shapes[i], c, n, w->ctx, id);
	}
	w->ctx = next;
	w->sealed = id->container_id[0] != '\0'; /* a container's cgroup: below is its own */
}

/* One component below user@UID.service: rootless podman's scopes only. */
static void parse_rootless(struct walk *w, const char *c, size_t n, struct identity *id)
{
	for (size_t i = 0; i < ELEMENTSOF(rootless_shapes); i++) {
		shape_apply(&rootless_shapes[i], c, n, 0, id);
		if (id->container_id[0]) {
			copy_label(id->rootless_uid, sizeof(id->rootless_uid), w->user_uid,
				   strlen(w->user_uid), false);
			w->sealed = true;
			return;
		}
	}
}

void identity_parse(const char *path, size_t delegated_at, struct identity *ret)
{
	struct identity id = { 0 };
	struct walk w = { .under_slices = true };
	const char *p = path;

	if (*p == '/')
		p++;
	for (;; w.index++) {
		const char *end = strchrnul(p, '/');
		size_t n = (size_t)(end - p);

		/* every name of the table fits a unit name; a longer one is nobody's */
		if (n > 0 && n < IDENTITY_UNIT_MAX && !w.sealed && w.index <= delegated_at)
			parse_trusted(&w, p, n, &id);
		else
			w.ctx = 0; /* a sequence is unbroken, or not one */
		if (n > 0 && n < IDENTITY_UNIT_MAX && !w.sealed && w.index > delegated_at &&
		    w.user_uid[0])
			parse_rootless(&w, p, n, &id);
		if (w.index == delegated_at && w.parent)
			user_manager(p, n, w.parent, w.parent_n, w.user_uid);
		w.under_slices = w.under_slices && is_slice(p, n);
		if (*end == '\0')
			break;
		w.parent = p;
		w.parent_n = n;
		p = end + 1;
	}
	*ret = id;
}

const char *identity_runtime_name(enum identity_runtime r)
{
	static const char *const names[_IDENTITY_RUNTIME_MAX] = {
		[IDENTITY_RUNTIME_DOCKER] = "docker",
		[IDENTITY_RUNTIME_PODMAN] = "podman",
		[IDENTITY_RUNTIME_CONTAINERD] = "containerd",
		[IDENTITY_RUNTIME_CRIO] = "crio",
	};

	return (unsigned)r < _IDENTITY_RUNTIME_MAX ? names[r] : NULL;
}

const char *identity_qos_name(enum identity_qos q)
{
	static const char *const names[_IDENTITY_QOS_MAX] = {
		[IDENTITY_QOS_GUARANTEED] = "guaranteed",
		[IDENTITY_QOS_BURSTABLE] = "burstable",
		[IDENTITY_QOS_BESTEFFORT] = "besteffort",
	};

	return (unsigned)q < _IDENTITY_QOS_MAX ? names[q] : NULL;
}

int identity_foreach_label(const struct identity *id, identity_label_fn fn, void *userdata)
{
	const struct {
		const char *name;
		const char *value;
	} labels[] = {
		{ "systemd_slice", id->systemd_slice },
		{ "systemd_unit", id->systemd_unit },
		{ "container_runtime", identity_runtime_name(id->runtime) },
		{ "container_id", id->container_id },
		{ "pod_uid", id->pod_uid },
		{ "pod_qos", identity_qos_name(id->pod_qos) },
		{ "rootless_uid", id->rootless_uid },
	};

	for (size_t i = 0; i < ELEMENTSOF(labels); i++) {
		int r;

		if (!labels[i].value || !labels[i].value[0])
			continue;
		r = fn(labels[i].name, labels[i].value, userdata);
		if (r < 0)
			return r;
	}
	return 0;
}

struct text {
	char *buf;
	size_t size;
	size_t len;
};

static int text_put(struct text *t, const char *s, size_t n)
{
	if (t->size - t->len <= n)
		return -ENOSPC; /* keep room for the NUL */
	memcpy(t->buf + t->len, s, n);
	t->len += n;
	t->buf[t->len] = '\0';
	return 0;
}

/* One `,name="value"` pair, the value escaped as the text format wants. */
static int text_label(const char *name, const char *value, void *userdata)
{
	struct text *t = userdata;
	int r;

	r = text_put(t, ",", 1);
	if (r == 0)
		r = text_put(t, name, strlen(name));
	if (r == 0)
		r = text_put(t, "=\"", 2);
	for (const char *p = value; r == 0 && *p; p++) {
		if (*p == '\\' || *p == '"')
			r = text_put(t, "\\", 1);
		if (r == 0)
			r = *p == '\n' ? text_put(t, "\\n", 2) : text_put(t, p, 1);
	}
	if (r == 0)
		r = text_put(t, "\"", 1);
	return r;
}

int identity_labels(const struct identity *id, char *buf, size_t size)
{
	struct text t = { .buf = buf, .size = size };
	int r;

	if (size == 0)
		return -ENOSPC;
	buf[0] = '\0';
	r = identity_foreach_label(id, text_label, &t);
	if (r < 0) {
		buf[0] = '\0';
		return r;
	}
	return (int)t.len;
}
