/* SPDX-License-Identifier: Apache-2.0 */
#define _GNU_SOURCE
#include "collectors/perfile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "files/files.h"
#include "scan/collector.h"
#include "scan/render.h"
#include "scan/topn.h"
#include "base/util.h"

/*
 * The budget, from the --collector.perfile.* flags. By default a node sends the files with the
 * most page cache of the node, not of each cgroup: a per-cgroup top N costs N series a cgroup
 * per family, which on a node of 110 pods is most of what it sends.
 */
static struct {
	unsigned node_top;   /* files of the node, each with its cgroup's label */
	unsigned cgroup_top; /* files of each cgroup; the config's per_file_top, where set, wins */
	unsigned families;   /* a bit per entry of families[] */
	bool keep_unlinked;  /* memfds and deleted files named in a series of their own */
} budget = { .node_top = 20, .families = (1u << 0) | (1u << 4) };

struct perfile_scan {
	size_t idx;        /* this collector's registry index */
	size_t cachestat;  /* registry index of the collector whose files these are */
	unsigned cgroup_top;
	struct topn cgroup; /* the cgroup in progress: its best max(cgroup_top, node_top) */
	struct topn node;   /* the node's best node_top, over the cgroups done */
};

static unsigned cgroup_top(const struct config *cfg)
{
	return cfg->per_file_top != CONFIG_PER_FILE_TOP_UNSET ? cfg->per_file_top : budget.cgroup_top;
}

static size_t staging_cap(const struct perfile_scan *ps)
{
	return ps->cgroup_top > budget.node_top ? ps->cgroup_top : budget.node_top;
}

/* Takes part when cachestat does and the budget has room for a file. */
static int scan_begin(struct collect_scan *scan, size_t idx, void **ret_state)
{
	_cleanup_free_ struct perfile_scan *ps = NULL;
	size_t cachestat;
	int r;

	if (!scan_active(scan, "cachestat", &cachestat))
		return 0;
	if (cgroup_top(scan->cfg) == 0 && budget.node_top == 0)
		return 0;
	ps = calloc(1, sizeof(*ps));
	if (!ps)
		return -ENOMEM;
	ps->idx = idx;
	ps->cachestat = cachestat;
	ps->cgroup_top = cgroup_top(scan->cfg);
	r = topn_init(&ps->cgroup, staging_cap(ps));
	if (r == 0)
		r = topn_init(&ps->node, budget.node_top);
	if (r < 0) {
		topn_done(&ps->cgroup);
		return r;
	}
	*ret_state = TAKE_PTR(ps);
	return 1;
}

/*
 * A memfd or a file deleted since it was opened: its name is made anew by every process that
 * makes one (a spill file, a JIT's code), so as a label it is a new series each time.
 */
static bool unlinked(const char *path)
{
	static const char deleted[] = " (deleted)";
	size_t n = strlen(path);

	return strncmp(path, "/memfd:", 7) == 0 ||
	       (n >= sizeof(deleted) - 1 && strcmp(path + n - (sizeof(deleted) - 1), deleted) == 0);
}

static void file_counted(void *state, const struct collect_file *f)
{
	struct perfile_scan *ps = state;
	struct snap_file file = *f->file;

	/* the path costs a readlink: only for a file that enters */
	if (!topn_wants(&ps->cgroup, &file))
		return;
	file.path = files_entry_name(f->fc, f->e);
	if (file.path && !budget.keep_unlinked && unlinked(file.path)) {
		free(file.path);
		return;
	}
	topn_offer(&ps->cgroup, &file);
}

static void free_cgroup(void *data)
{
	struct perfile_cgroup *p = data;

	for (size_t j = 0; j < p->n_top; j++)
		snap_file_done(&p->top[j]);
	free(p->top);
	free(p);
}

/* Copies of the cgroup's candidates (its index in the snapshot: at) to the node's top. */
static int offer_to_node(struct perfile_scan *ps, size_t at)
{
	for (size_t j = 0; j < ps->cgroup.n; j++) {
		struct snap_file f = ps->cgroup.heap[j];

		f.cgroup = at;
		if (!topn_wants(&ps->node, &f))
			continue;
		f.path = strdup(f.path);
		if (!f.path)
			return -ENOMEM;
		topn_offer(&ps->node, &f);
	}
	return 0;
}

/* The files kept go with cachestat's numbers: where those were left out, so are these. */
static int cgroup_done(struct collect_scan *scan, size_t idx, void *state, struct snap_cgroup *cg)
{
	struct perfile_scan *ps = state;
	struct perfile_cgroup *p;
	int r;

	if (!cg->data[ps->cachestat]) {
		topn_done(&ps->cgroup);
		return topn_init(&ps->cgroup, staging_cap(ps));
	}
	p = cg->data[idx] = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	r = offer_to_node(ps, (size_t)(cg - scan->snap->cgroups));
	if (r == 0)
		r = topn_take(&ps->cgroup, &p->top, &p->n_top);
	if (r < 0)
		return r;
	/* best first: the cgroup's own top is a prefix */
	while (p->n_top > ps->cgroup_top)
		snap_file_done(&p->top[--p->n_top]);
	return 0;
}

static int by_cgroup_best_first(const void *a, const void *b)
{
	const struct snap_file *x = a, *y = b;
	uint64_t kx = topn_key(&x->c), ky = topn_key(&y->c);

	if (x->cgroup != y->cgroup)
		return x->cgroup < y->cgroup ? -1 : 1;
	if (kx != ky)
		return kx > ky ? -1 : 1;
	return strcmp(x->path, y->path);
}

/*
 * The node's top into the cgroups' lists. A cgroup's files in it are the best of that cgroup,
 * as its own top is: the longer of the two holds the other.
 */
static int node_top_to_cgroups(struct perfile_scan *ps, struct snapshot *snap)
{
	_cleanup_free_ struct snap_file *files = NULL;
	size_t n, i = 0;
	int r;

	r = topn_take(&ps->node, &files, &n);
	if (r < 0 || n == 0)
		return r;
	qsort(files, n, sizeof(*files), by_cgroup_best_first);
	while (i < n) {
		struct perfile_cgroup *p = snap->cgroups[files[i].cgroup].data[ps->idx];
		size_t j = i;

		while (j < n && files[j].cgroup == files[i].cgroup)
			j++;
		if (p && j - i > p->n_top) {
			struct snap_file *top = calloc(j - i, sizeof(*top));

			if (!top)
				r = -ENOMEM;
			for (size_t k = 0; top && k < p->n_top; k++)
				snap_file_done(&p->top[k]);
			if (top) {
				free(p->top);
				memcpy(top, &files[i], (j - i) * sizeof(*top));
				memset(&files[i], 0, (j - i) * sizeof(*top));
				p->top = top;
				p->n_top = j - i;
			}
		}
		for (size_t k = i; k < j; k++)
			snap_file_done(&files[k]);
		i = j;
	}
	return r;
}

static void scan_end(struct collect_scan *scan, void *state)
{
	struct perfile_scan *ps = state;

	if (node_top_to_cgroups(ps, scan->snap) < 0)
		scan_fail(scan, ps->cachestat);
	topn_done(&ps->cgroup);
	topn_done(&ps->node);
	free(ps);
}

static const struct {
	const char *name;
	const char *help;
	int field; /* enum snap_count, or -1 for the size */
} families[] = {
	{ "cachestat_file_cached_bytes", "Page cache of the file (top files of the node or of each cgroup).", SNAP_CACHED },
	{ "cachestat_file_dirty_bytes", "Dirty page cache of the file.", SNAP_DIRTY },
	{ "cachestat_file_writeback_bytes", "Page cache of the file under writeback.", SNAP_WRITEBACK },
	{ "cachestat_file_evicted_bytes", "Evicted pages of the file whose shadow entries remain.",
	  SNAP_EVICTED },
	{ "cachestat_file_recently_evicted_bytes",
	  "Evicted pages of the file that would count as workingset refaults.", SNAP_RECENTLY_EVICTED },
	{ "cachestat_file_size_bytes", "Size of the file.", -1 },
};

/* families[f]'s name without the prefix: "cached_bytes"; the flag names it without "_bytes". */
static const char *family_word(size_t f)
{
	return families[f].name + strlen("cachestat_file_");
}

static int parse_families(const char *arg)
{
	_cleanup_free_ char *copy = strdup(arg);
	unsigned set = 0;
	char *save = NULL;

	if (!copy)
		return -ENOMEM;
	for (char *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		size_t f = 0;

		while (f < ELEMENTSOF(families) && strncmp(family_word(f), w, strlen(w)) != 0)
			f++;
		if (f == ELEMENTSOF(families) || strlen(family_word(f)) != strlen(w) + strlen("_bytes")) {
			fprintf(stderr, "--collector.perfile.families: \"%s\" is none of cached, dirty, "
					"writeback, evicted, recently_evicted, size\n", w);
			return -EINVAL;
		}
		set |= 1u << f;
	}
	if (!set) {
		fprintf(stderr, "--collector.perfile.families: name one at least "
				"(--no-collector.perfile sends none)\n");
		return -EINVAL;
	}
	budget.families = set;
	return 0;
}

static int parse_top(const char *flag, const char *arg, unsigned *ret)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(arg, &end, 10);
	if (errno || end == arg || *end || arg[0] == '-' || v > CONFIG_MAX_PER_FILE_TOP) {
		fprintf(stderr, "--%s: want a whole number from 0 to %u, not \"%s\"\n", flag,
			CONFIG_MAX_PER_FILE_TOP, arg);
		return -EINVAL;
	}
	*ret = (unsigned)v;
	return 0;
}

static int parse_node_top(const char *arg)
{
	return parse_top("collector.perfile.node-top", arg, &budget.node_top);
}

static int parse_cgroup_top(const char *arg)
{
	return parse_top("collector.perfile.cgroup-top", arg, &budget.cgroup_top);
}

static int parse_unlinked(const char *arg)
{
	if (strcmp(arg, "skip") != 0 && strcmp(arg, "keep") != 0) {
		fprintf(stderr, "--collector.perfile.unlinked: want skip or keep, not \"%s\"\n", arg);
		return -EINVAL;
	}
	budget.keep_unlinked = strcmp(arg, "keep") == 0;
	return 0;
}

static const struct collector_flag flags[] = {
	{ "collector.perfile.node-top", "N",
	  "per-file series for the N files of the node with the most cached + recently evicted bytes, "
	  "each with its cgroup label; 0: none (default 20)",
	  parse_node_top },
	{ "collector.perfile.cgroup-top", "N",
	  "per-file series for the N top files of every cgroup; the config's per_file_top wins (default 0)",
	  parse_cgroup_top },
	{ "collector.perfile.families", "NAME[,...]",
	  "per-file families among cached, dirty, writeback, evicted, recently_evicted, size "
	  "(default cached,recently_evicted)",
	  parse_families },
	{ "collector.perfile.unlinked", "skip|keep",
	  "whether memfds and deleted files, whose names churn, get per-file series; their pages count "
	  "in their cgroup's all the same (default skip)",
	  parse_unlinked },
};

static void describe(const struct config *cfg, char *buf, size_t size)
{
	size_t used;

	used = (size_t)snprintf(buf, size, "top %u files of the node, top %u of each cgroup, families",
				budget.node_top, cgroup_top(cfg));
	for (size_t f = 0, n = 0; f < ELEMENTSOF(families) && used < size; f++)
		if (budget.families & (1u << f))
			used += (size_t)snprintf(buf + used, size - used, "%s%.*s", n++ ? "," : " ",
						 (int)(strlen(family_word(f)) - strlen("_bytes")),
						 family_word(f));
	if (used < size)
		snprintf(buf + used, size - used, ", memfds and deleted files %s",
			 budget.keep_unlinked ? "named" : "not named");
}

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
		if (!(budget.families & (1u << f)))
			continue;
		if (families[f].field >= 0 && !pagecache_measures(s->abi, (unsigned)families[f].field))
			continue; /* not measured (the mincore method): no series rather than zeros */
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
	.help = "top files of the node (and of each cgroup, if asked)",
	.default_on = true,
	.reported = false, /* its time and success are cachestat's */
	.flags = flags,
	.n_flags = ELEMENTSOF(flags),
	.describe = describe,
	.scan_begin = scan_begin,
	.cgroup_done = cgroup_done,
	.file_counted = file_counted,
	.scan_end = scan_end,
	.free_cgroup = free_cgroup,
	.render_text = perfile_text,
	.render_json = perfile_json,
};
REGISTER_COLLECTOR(perfile_collector);
