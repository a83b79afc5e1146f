/* SPDX-License-Identifier: Apache-2.0 */
/*
 * loader: the activity program's skeleton loaded, attached by function name, read and pruned
 * (loader.h). Without the program built in (no clang or bpftool at build time), every call
 * says so with -EOPNOTSUPP.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "activity/loader.h"
#include "activity/build.h" /* generated: ACTIVITY_BPF */
#include "base/util.h"

#if ACTIVITY_BPF
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

/* bpftool's generated code casts its embedded object's const away */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wcast-qual"
#include "activity/activity.skel.h"
#pragma GCC diagnostic pop

struct activity {
	struct activity_bpf *skel;
	int ncpus;
};

bool activity_built(void)
{
	return true;
}

static int fail(char **ret_error, int r, const char *step, const char *name)
{
	if (asprintf(ret_error, "%s%s%s: %s", step, name ? " " : "", name ? name : "",
		     strerror(-r)) < 0)
		*ret_error = NULL;
	return r;
}

static struct bpf_program *program_of(struct activity_bpf *skel, enum activity_event e)
{
	switch (e) {
	case ACTIVITY_ACCESSED:
		return skel->progs.activity_accessed;
	case ACTIVITY_ADDED:
		return skel->progs.activity_added;
	case ACTIVITY_DIRTIED:
		return skel->progs.activity_dirtied;
	default:
		return skel->progs.activity_buffer_dirtied;
	}
}

static struct bpf_link **link_of(struct activity_bpf *skel, enum activity_event e)
{
	switch (e) {
	case ACTIVITY_ACCESSED:
		return &skel->links.activity_accessed;
	case ACTIVITY_ADDED:
		return &skel->links.activity_added;
	case ACTIVITY_DIRTIED:
		return &skel->links.activity_dirtied;
	default:
		return &skel->links.activity_buffer_dirtied;
	}
}

/* Loads the programs of the events that have a name, and no other. */
static int load(const char *const names[_ACTIVITY_EVENT_MAX], struct activity *a, char **ret_error)
{
	int r;

	a->ncpus = libbpf_num_possible_cpus();
	if (a->ncpus <= 0)
		return fail(ret_error, a->ncpus < 0 ? a->ncpus : -EINVAL, "counting the possible CPUs", NULL);
	a->skel = activity_bpf__open();
	if (!a->skel)
		return fail(ret_error, -errno, "opening the program", NULL);
	for (unsigned e = 0; e < _ACTIVITY_EVENT_MAX; e++)
		if (!names[e])
			bpf_program__set_autoload(program_of(a->skel, e), false);
	r = activity_bpf__load(a->skel);
	if (r < 0)
		return fail(ret_error, r, "loading the program", NULL);
	return 0;
}

int activity_start(const char *const names[_ACTIVITY_EVENT_MAX], struct activity **ret,
		   char **ret_error)
{
	struct activity *a = calloc(1, sizeof(*a));
	int r;

	*ret_error = NULL;
	if (!a)
		return -ENOMEM;
	libbpf_set_print(NULL); /* library code never logs: the caller says what failed */
	r = load(names, a, ret_error);
	for (unsigned e = 0; r == 0 && e < _ACTIVITY_EVENT_MAX; e++) {
		struct bpf_link *l;

		if (!names[e])
			continue;
		l = bpf_program__attach_kprobe(program_of(a->skel, e), false, names[e]);
		if (!l)
			r = fail(ret_error, -errno, "attaching a kprobe to", names[e]);
		else
			*link_of(a->skel, e) = l;
	}
	if (r < 0) {
		activity_stop(a);
		return r;
	}
	*ret = a;
	return 0;
}

int activity_read(struct activity *a, struct activity_idmap *m)
{
	_cleanup_free_ struct activity_counts *percpu = calloc((size_t)a->ncpus, sizeof(*percpu));
	_cleanup_free_ uint64_t *dropped = calloc((size_t)a->ncpus, sizeof(*dropped));
	int fd = bpf_map__fd(a->skel->maps.counts);
	uint64_t key, next;
	uint32_t zero = 0;
	bool first = true;
	int r = 0;

	if (!percpu || !dropped)
		return -ENOMEM;
	/* at most the map's bound: an id deleted meanwhile restarts the walk, which this caps */
	for (size_t n = 0; n < 2 * ACTIVITY_MAX_CGROUPS; n++) {
		struct activity_counts sum = { 0 };

		r = bpf_map_get_next_key(fd, first ? NULL : &key, &next);
		if (r < 0)
			break;
		first = false;
		key = next;
		if (bpf_map_lookup_elem(fd, &key, percpu) < 0)
			continue; /* deleted meanwhile */
		for (int c = 0; c < a->ncpus; c++)
			for (unsigned e = 0; e < _ACTIVITY_EVENT_MAX; e++)
				sum.events[e] += percpu[c].events[e];
		if (activity_idmap_add(m, key, &sum) < 0)
			return -ENOMEM;
	}
	if (r < 0 && r != -ENOENT)
		return r;
	m->dropped = 0;
	if (bpf_map_lookup_elem(bpf_map__fd(a->skel->maps.dropped), &zero, dropped) == 0)
		for (int c = 0; c < a->ncpus; c++)
			m->dropped += dropped[c];
	return 0;
}

int activity_forget(struct activity *a, uint64_t id)
{
	return bpf_map_delete_elem(bpf_map__fd(a->skel->maps.counts), &id) < 0 ? -errno : 0;
}

void activity_stop(struct activity *a)
{
	if (!a)
		return;
	activity_bpf__destroy(a->skel); /* detaches every link, closes the maps */
	free(a);
}

#else /* !ACTIVITY_BPF */

bool activity_built(void)
{
	return false;
}

int activity_start(const char *const names[_ACTIVITY_EVENT_MAX], struct activity **ret,
		   char **ret_error)
{
	(void)names;
	(void)ret;
	*ret_error = strdup("this build has no BPF program (built without clang and bpftool)");
	return -EOPNOTSUPP;
}

int activity_read(struct activity *a, struct activity_idmap *m)
{
	(void)a;
	(void)m;
	return -EOPNOTSUPP;
}

int activity_forget(struct activity *a, uint64_t id)
{
	(void)a;
	(void)id;
	return -EOPNOTSUPP;
}

void activity_stop(struct activity *a)
{
	(void)a;
}

#endif
