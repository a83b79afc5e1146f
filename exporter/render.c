/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "render.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"
#include "util.h"

char *render_utf8_sanitize(const char *s)
{
	return utf8_sanitize(s);
}

int render_label_value(FILE *out, const char *s)
{
	_cleanup_free_ char *clean = utf8_sanitize(s);

	if (!clean)
		return -ENOMEM;
	utf8_write_label(out, clean);
	return 0;
}

/* The shortest form that reads back as the same double (%.17g at most). */
static void put_double(FILE *out, double v)
{
	char buf[32];

	for (int prec = 15; prec <= 17; prec++) {
		snprintf(buf, sizeof(buf), "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	fputs(buf, out);
}

static void family(FILE *out, const char *name, const char *type, const char *help)
{
	fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* The per-cgroup families filled from cachestat, in the order of the contract. */
enum cg_field {
	CG_CACHED,
	CG_DIRTY,
	CG_WRITEBACK,
	CG_EVICTED,
	CG_RECENTLY_EVICTED,
	CG_FILES,
	CG_FILES_SIZE,
	_CG_MAX,
};

static const struct {
	const char *name;
	const char *help;
} cg_families[_CG_MAX] = {
	[CG_CACHED] = { "cachestat_cgroup_cached_bytes",
			"Page cache held by the files of the cgroup (deduplicated by inode)." },
	[CG_DIRTY] = { "cachestat_cgroup_dirty_bytes",
		       "Dirty page cache of the files of the cgroup." },
	[CG_WRITEBACK] = { "cachestat_cgroup_writeback_bytes",
			   "Page cache under writeback of the files of the cgroup." },
	[CG_EVICTED] = { "cachestat_cgroup_evicted_bytes",
			 "Evicted pages of the files of the cgroup whose shadow entries remain." },
	[CG_RECENTLY_EVICTED] = { "cachestat_cgroup_recently_evicted_bytes",
				  "Evicted pages of the files of the cgroup that would count as refaults of the workingset." },
	[CG_FILES] = { "cachestat_cgroup_files", "Files scanned for the cgroup." },
	[CG_FILES_SIZE] = { "cachestat_cgroup_files_size_bytes",
			    "Sum of the sizes of the files scanned for the cgroup." },
};

static uint64_t counts_field(const struct snap_counts *c, enum cg_field f)
{
	switch (f) {
	case CG_CACHED:
		return c->cached;
	case CG_DIRTY:
		return c->dirty;
	case CG_WRITEBACK:
		return c->writeback;
	case CG_EVICTED:
		return c->evicted;
	case CG_RECENTLY_EVICTED:
		return c->recently_evicted;
	default:
		return 0;
	}
}

static uint64_t cgroup_field(const struct snap_cgroup *cg, enum cg_field f)
{
	if (f == CG_FILES)
		return cg->files;
	if (f == CG_FILES_SIZE)
		return cg->files_size;
	return counts_field(&cg->c, f);
}

static const struct {
	enum memstat_key key;
	const char *name;
	const char *type;
	const char *help;
} ms_families[] = {
	{ MEMSTAT_WORKINGSET_REFAULT_FILE, "cachestat_cgroup_workingset_refault_file_total", "counter",
	  "memory.stat workingset_refault_file: refaults of evicted file pages." },
	{ MEMSTAT_WORKINGSET_REFAULT_ANON, "cachestat_cgroup_workingset_refault_anon_total", "counter",
	  "memory.stat workingset_refault_anon: refaults of evicted anonymous pages." },
	{ MEMSTAT_WORKINGSET_ACTIVATE_FILE, "cachestat_cgroup_workingset_activate_file_total", "counter",
	  "memory.stat workingset_activate_file: refaulted file pages activated at once." },
	{ MEMSTAT_WORKINGSET_RESTORE_FILE, "cachestat_cgroup_workingset_restore_file_total", "counter",
	  "memory.stat workingset_restore_file: refaulted file pages that were workingset when evicted." },
	{ MEMSTAT_FILE, "cachestat_cgroup_memory_file_bytes", "gauge",
	  "memory.stat file: page cache charged to the cgroup." },
};

static void cgroup_labels(FILE *out, const struct snap_cgroup *cg)
{
	fputs("{cgroup=\"", out);
	render_label_value(out, cg->name);
	fputs("\"", out);
}

static void render_cachestat(FILE *out, const struct snapshot *s)
{
	bool any = false;

	for (size_t i = 0; i < s->n_cgroups; i++)
		any |= s->cgroups[i].scanned;
	if (!any)
		return;
	for (int f = 0; f < _CG_MAX; f++) {
		family(out, cg_families[f].name, "gauge", cg_families[f].help);
		for (size_t i = 0; i < s->n_cgroups; i++) {
			const struct snap_cgroup *cg = &s->cgroups[i];

			if (!cg->scanned)
				continue;
			fputs(cg_families[f].name, out);
			cgroup_labels(out, cg);
			fprintf(out, "} %" PRIu64 "\n", cgroup_field(cg, (enum cg_field)f));
		}
	}
}

static void render_memstat(FILE *out, const struct snapshot *s)
{
	const char *node_name = "cachestat_cgroup_node_workingset_refault_file_total";
	bool any_node = false;

	for (size_t k = 0; k < ELEMENTSOF(ms_families); k++) {
		bool head = false;

		for (size_t i = 0; i < s->n_cgroups; i++) {
			const struct snap_cgroup *cg = &s->cgroups[i];

			if (!cg->has_memstat || !memstat_has(&cg->memstat, ms_families[k].key))
				continue;
			if (!head) {
				family(out, ms_families[k].name, ms_families[k].type,
				       ms_families[k].help);
				head = true;
			}
			fputs(ms_families[k].name, out);
			cgroup_labels(out, cg);
			fprintf(out, "} %" PRIu64 "\n", cg->memstat.value[ms_families[k].key]);
		}
	}
	for (size_t i = 0; i < s->n_cgroups; i++)
		any_node |= s->cgroups[i].numa.n_nodes > 0;
	if (!any_node)
		return;
	family(out, node_name, "counter",
	       "memory.numa_stat workingset_refault_file: refaults of evicted file pages, per NUMA node.");
	for (size_t i = 0; i < s->n_cgroups; i++) {
		const struct snap_cgroup *cg = &s->cgroups[i];

		for (size_t j = 0; j < cg->numa.n_nodes; j++) {
			fputs(node_name, out);
			cgroup_labels(out, cg);
			fprintf(out, ",node=\"%u\"} %" PRIu64 "\n", cg->numa.nodes[j].node,
				cg->numa.nodes[j].workingset_refault_file);
		}
	}
}

static void render_perfile(FILE *out, const struct snapshot *s)
{
	static const struct {
		const char *name;
		const char *help;
		int field; /* enum cg_field, or -1 for the size */
	} fams[] = {
		{ "cachestat_file_cached_bytes", "Page cache of the file (top files per cgroup).", CG_CACHED },
		{ "cachestat_file_dirty_bytes", "Dirty page cache of the file.", CG_DIRTY },
		{ "cachestat_file_writeback_bytes", "Page cache of the file under writeback.", CG_WRITEBACK },
		{ "cachestat_file_evicted_bytes", "Evicted pages of the file whose shadow entries remain.", CG_EVICTED },
		{ "cachestat_file_recently_evicted_bytes", "Evicted pages of the file that would count as workingset refaults.", CG_RECENTLY_EVICTED },
		{ "cachestat_file_size_bytes", "Size of the file.", -1 },
	};
	bool any = false;

	if (!s->collectors[COLLECTOR_PERFILE].enabled)
		return;
	for (size_t i = 0; i < s->n_cgroups; i++)
		any |= s->cgroups[i].n_top > 0;
	if (!any)
		return;
	for (size_t f = 0; f < ELEMENTSOF(fams); f++) {
		family(out, fams[f].name, "gauge", fams[f].help);
		for (size_t i = 0; i < s->n_cgroups; i++) {
			const struct snap_cgroup *cg = &s->cgroups[i];

			for (size_t j = 0; j < cg->n_top; j++) {
				const struct snap_file *file = &cg->top[j];
				uint64_t v = fams[f].field < 0
						     ? file->size
						     : counts_field(&file->c, (enum cg_field)fams[f].field);

				fputs(fams[f].name, out);
				cgroup_labels(out, cg);
				fputs(",path=\"", out);
				utf8_write_label(out, file->path); /* sanitized by topn */
				fprintf(out, "\"} %" PRIu64 "\n", v);
			}
		}
	}
}

int render_text(FILE *out, const struct snapshot *s, const struct render_meta *meta)
{
	family(out, "cachestat_build_info", "gauge",
	       "A metric with a constant '1' value labeled by version and revision of cachestat_exporter.");
	fputs("cachestat_build_info{version=\"", out);
	render_label_value(out, meta->version);
	fputs("\",revision=\"", out);
	render_label_value(out, meta->revision);
	fputs("\"} 1\n", out);

	family(out, "cachestat_syscall_info", "gauge",
	       "The cachestat ABI of the running kernel: seed, mainline or none.");
	fprintf(out, "cachestat_syscall_info{abi=\"%s\"} 1\n", pagecache_abi_name(s->abi));

	render_cachestat(out, s);
	render_memstat(out, s);
	render_perfile(out, s);

	family(out, "cachestat_files_skipped_total", "counter",
	       "Files not counted, by reason, since the exporter started.");
	for (int r = 0; r < _SKIP_MAX; r++)
		fprintf(out, "cachestat_files_skipped_total{reason=\"%s\"} %" PRIu64 "\n",
			skip_reason_name((enum skip_reason)r), s->skipped[r]);

	family(out, "cachestat_scrape_collector_duration_seconds", "gauge",
	       "Time a collector took in the last scan.");
	for (int c = 0; c < _COLLECTOR_MAX; c++) {
		if (!s->collectors[c].reported)
			continue;
		fprintf(out, "cachestat_scrape_collector_duration_seconds{collector=\"%s\"} ",
			collector_name((enum collector_id)c));
		put_double(out, s->collectors[c].seconds);
		fputc('\n', out);
	}
	family(out, "cachestat_scrape_collector_success", "gauge",
	       "Whether a collector succeeded in the last scan.");
	for (int c = 0; c < _COLLECTOR_MAX; c++) {
		if (!s->collectors[c].reported)
			continue;
		fprintf(out, "cachestat_scrape_collector_success{collector=\"%s\"} %d\n",
			collector_name((enum collector_id)c), s->collectors[c].success ? 1 : 0);
	}
	return ferror(out) ? -EIO : 0;
}

/* ---- JSON ---- */

static json_t *json_str(const char *s)
{
	_cleanup_free_ char *clean = utf8_sanitize(s);

	return clean ? json_string(clean) : NULL;
}

/* JSON integers are 64-bit signed in jansson; beyond that only a double can carry it. */
static json_t *json_u64(uint64_t v)
{
	if (v > (uint64_t)INT64_MAX)
		return json_real((double)v);
	return json_integer((json_int_t)v);
}

static json_t *json_counts(const struct snap_counts *c, json_t *o)
{
	if (!o)
		return NULL;
	json_object_set_new(o, "cached_bytes", json_u64(c->cached));
	json_object_set_new(o, "dirty_bytes", json_u64(c->dirty));
	json_object_set_new(o, "writeback_bytes", json_u64(c->writeback));
	json_object_set_new(o, "evicted_bytes", json_u64(c->evicted));
	json_object_set_new(o, "recently_evicted_bytes", json_u64(c->recently_evicted));
	return o;
}

static json_t *json_cgroup(const struct snapshot *s, const struct snap_cgroup *cg)
{
	json_t *o = json_object();

	if (!o)
		return NULL;
	json_object_set_new(o, "cgroup", json_str(cg->name));
	if (cg->scanned) {
		json_counts(&cg->c, o);
		json_object_set_new(o, "files", json_u64(cg->files));
		json_object_set_new(o, "files_size_bytes", json_u64(cg->files_size));
	}
	if (cg->has_memstat) {
		json_t *m = json_object();

		for (size_t k = 0; m && k < ELEMENTSOF(ms_families); k++)
			if (memstat_has(&cg->memstat, ms_families[k].key))
				json_object_set_new(m, ms_families[k].name + strlen("cachestat_cgroup_"),
						    json_u64(cg->memstat.value[ms_families[k].key]));
		json_object_set_new(o, "memory_stat", m);
	}
	if (cg->numa.n_nodes > 0) {
		json_t *a = json_array();

		for (size_t j = 0; a && j < cg->numa.n_nodes; j++)
			json_array_append_new(
				a, json_pack("{s:I,s:I}", "node", (json_int_t)cg->numa.nodes[j].node,
					     "workingset_refault_file_total",
					     (json_int_t)cg->numa.nodes[j].workingset_refault_file));
		json_object_set_new(o, "numa", a);
	}
	if (s->collectors[COLLECTOR_PERFILE].enabled && cg->scanned) {
		json_t *a = json_array();

		for (size_t j = 0; a && j < cg->n_top; j++) {
			json_t *f = json_object();

			if (f) {
				json_object_set_new(f, "path", json_string(cg->top[j].path));
				json_object_set_new(f, "size_bytes", json_u64(cg->top[j].size));
				json_counts(&cg->top[j].c, f);
			}
			json_array_append_new(a, f);
		}
		json_object_set_new(o, "top_files", a);
	}
	return o;
}

int render_json(FILE *out, const struct snapshot *s, const struct render_meta *meta)
{
	_cleanup_(json_decrefp) json_t *root = json_object();
	json_t *cgroups, *skipped, *collectors;

	if (!root)
		return -ENOMEM;
	json_object_set_new(root, "version", json_str(meta->version));
	json_object_set_new(root, "revision", json_str(meta->revision));
	json_object_set_new(root, "abi", json_string(pagecache_abi_name(s->abi)));
	cgroups = json_array();
	for (size_t i = 0; cgroups && i < s->n_cgroups; i++)
		json_array_append_new(cgroups, json_cgroup(s, &s->cgroups[i]));
	json_object_set_new(root, "cgroups", cgroups);
	skipped = json_object();
	for (int r = 0; skipped && r < _SKIP_MAX; r++)
		json_object_set_new(skipped, skip_reason_name((enum skip_reason)r),
				    json_u64(s->skipped[r]));
	json_object_set_new(root, "files_skipped_total", skipped);
	collectors = json_object();
	for (int c = 0; collectors && c < _COLLECTOR_MAX; c++) {
		if (!s->collectors[c].reported)
			continue;
		json_object_set_new(collectors, collector_name((enum collector_id)c),
				    json_pack("{s:f,s:b}", "duration_seconds", s->collectors[c].seconds,
					      "success", s->collectors[c].success));
	}
	json_object_set_new(root, "collectors", collectors);
	if (json_dumpf(root, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER) < 0)
		return -EIO;
	fputc('\n', out);
	return ferror(out) ? -EIO : 0;
}
