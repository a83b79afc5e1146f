/* SPDX-License-Identifier: Apache-2.0 */
/*
 * program: the BPF program of the activity collector, built with clang -target bpf only (never
 * with the exporter's compiler). One kprobe per event of program.h, attached by the exporter
 * to the function the running kernel has (attach.h); each counts the event in the current
 * task's cgroup (bpf_get_current_cgroup_id(), the only thing read from the kernel: no kernel
 * structure, no BTF). The map is a per-CPU hash of bounded size: no atomics, no lock, and an
 * event whose cgroup finds no room is counted in dropped.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "activity/program.h"

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, ACTIVITY_MAX_CGROUPS);
	__type(key, __u64);
	__type(value, struct activity_counts);
} counts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} dropped SEC(".maps");

static __always_inline void count(enum activity_event e)
{
	__u64 id = bpf_get_current_cgroup_id();
	struct activity_counts *c = bpf_map_lookup_elem(&counts, &id);
	struct activity_counts zero = {};
	__u32 key = 0;
	__u64 *d;

	if (!c) {
		/* -EEXIST: another CPU added it meanwhile; -E2BIG: the map is full */
		bpf_map_update_elem(&counts, &id, &zero, BPF_NOEXIST);
		c = bpf_map_lookup_elem(&counts, &id);
	}
	if (c) {
		c->events[e]++;
		return;
	}
	d = bpf_map_lookup_elem(&dropped, &key);
	if (d)
		(*d)++;
}

SEC("kprobe")
int activity_accessed(void *ctx)
{
	count(ACTIVITY_ACCESSED);
	return 0;
}

SEC("kprobe")
int activity_added(void *ctx)
{
	count(ACTIVITY_ADDED);
	return 0;
}

SEC("kprobe")
int activity_dirtied(void *ctx)
{
	count(ACTIVITY_DIRTIED);
	return 0;
}

SEC("kprobe")
int activity_buffer_dirtied(void *ctx)
{
	count(ACTIVITY_BUFFER_DIRTIED);
	return 0;
}

/* It calls no helper the kernel keeps for GPL programs, so it keeps the project's licence. */
char LICENSE[] SEC("license") = "Apache-2.0";
