/* SPDX-License-Identifier: Apache-2.0 */
#define _GNU_SOURCE
#include "collectors/perfile.h"

#include <errno.h>
#include <stdlib.h>

#include "files/files.h"
#include "scan/collector.h"
#include "scan/render.h"
#include "scan/topn.h"
#include "base/util.h"

struct perfile_scan {
	size_t cachestat; /* registry index of the collector whose files these are */
	struct topn top;
};

/* Takes part when cachestat does and the config asks for per-file series. */
static int scan_begin(struct collect_scan *scan, size_t idx, void **ret_state)
{
	_cleanup_free_ struct perfile_scan *ps = NULL;
	size_t cachestat;
	int r;

	(void)idx;
	if (!scan_active(scan, "cachestat", &cachestat) || scan->cfg->per_file_top == 0)
		return 0;
	ps = calloc(1, sizeof(*ps));
	if (!ps)
		return -ENOMEM;
	ps->cachestat = cachestat;
	r = topn_init(&ps->top, scan->cfg->per_file_top);
	if (r < 0)
		return r;
	*ret_state = TAKE_PTR(ps);
	return 1;
}

static void file_counted(void *state, const struct collect_file *f)
{
	struct perfile_scan *ps = state;
	struct snap_file file = *f->file;

	/* the path costs a readlink: only for a file that enters */
	if (topn_wants(&ps->top, &file)) {
		file.path = files_entry_name(f->fc, f->e);
		topn_offer(&ps->top, &file);
	}
}

static void free_cgroup(void *data)
{
	struct perfile_cgroup *p = data;

	for (size_t j = 0; j < p->n_top; j++)
		snap_file_done(&p->top[j]);
	free(p->top);
	free(p);
}

/* The files kept go with cachestat's numbers: where those were left out, so are these. */
static int cgroup_done(struct collect_scan *scan, size_t idx, void *state, struct snap_cgroup *cg)
{
	struct perfile_scan *ps = state;
	struct perfile_cgroup *p;

	if (!cg->data[ps->cachestat]) {
		topn_done(&ps->top);
		return topn_init(&ps->top, scan->cfg->per_file_top);
	}
	p = cg->data[idx] = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	return topn_take(&ps->top, &p->top, &p->n_top);
}

static void scan_end(struct collect_scan *scan, void *state)
{
	struct perfile_scan *ps = state;

	(void)scan;
	topn_done(&ps->top);
	free(ps);
}

static const struct {
	const char *name;
	const char *help;
	int field; /* enum snap_count, or -1 for the size */
} families[] = {
	{ "cachestat_file_cached_bytes", "Page cache of the file (top files per cgroup).", SNAP_CACHED },
	{ "cachestat_file_dirty_bytes", "Dirty page cache of the file.", SNAP_DIRTY },
	{ "cachestat_file_writeback_bytes", "Page cache of the file under writeback.", SNAP_WRITEBACK },
	{ "cachestat_file_evicted_bytes", "Evicted pages of the file whose shadow entries remain.",
	  SNAP_EVICTED },
	{ "cachestat_file_recently_evicted_bytes",
	  "Evicted pages of the file that would count as workingset refaults.", SNAP_RECENTLY_EVICTED },
	{ "cachestat_file_size_bytes", "Size of the file.", -1 },
};

static void render_samples(FILE *out, const struct snap_cgroup *cg, const struct perfile_cgroup *p,
			   size_t f)
{
	for (size_t j = 0; j < p->n_top; j++) {
		const struct snap_file *file = &p->top[j];

		render_sample_open(out, families[f].name, cg);
		render_sample_label_clean(out, "path", file->path); /* sanitized by topn */
		render_sample_close(out, families[f].field < 0
						 ? file->size
						 : snap_counts_get(&file->c, (enum snap_count)families[f].field));
	}
}

static void perfile_text(FILE *out, const struct snapshot *s, size_t idx)
{
	bool any = false;

	for (size_t i = 0; i < s->n_cgroups; i++) {
		const struct perfile_cgroup *p = s->cgroups[i].data[idx];

		any |= p && p->n_top > 0;
	}
	if (!any)
		return;
	for (size_t f = 0; f < ELEMENTSOF(families); f++) {
		render_family(out, families[f].name, "gauge", families[f].help);
		for (size_t i = 0; i < s->n_cgroups; i++)
			if (s->cgroups[i].data[idx])
				render_samples(out, &s->cgroups[i], s->cgroups[i].data[idx], f);
	}
}

static void perfile_json(json_t *o, const struct snap_cgroup *cg, size_t idx)
{
	const struct perfile_cgroup *p = cg->data[idx];
	json_t *a;

	if (!p)
		return;
	a = json_array();
	for (size_t j = 0; a && j < p->n_top; j++) {
		json_t *f = json_object();

		if (f) {
			json_object_set_new(f, "path", json_string(p->top[j].path)); /* sanitized by topn */
			json_object_set_new(f, "size_bytes", render_json_u64(p->top[j].size));
			render_json_counts(&p->top[j].c, f);
		}
		json_array_append_new(a, f);
	}
	json_object_set_new(o, "top_files", a);
}

static const struct collector_def perfile_collector = {
	.name = "perfile",
	.help = "top files per cgroup",
	.default_on = true,
	.reported = false, /* its time and success are cachestat's */
	.scan_begin = scan_begin,
	.cgroup_done = cgroup_done,
	.file_counted = file_counted,
	.scan_end = scan_end,
	.free_cgroup = free_cgroup,
	.render_text = perfile_text,
	.render_json = perfile_json,
};
REGISTER_COLLECTOR(perfile_collector);
