/* SPDX-License-Identifier: Apache-2.0 */
#define _GNU_SOURCE
#include "scan/render.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "scan/registry.h"
#include "base/utf8.h"
#include "base/util.h"

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

void render_sample_open(FILE *out, const char *name, const struct snap_cgroup *cg)
{
	fputs(name, out);
	fputs("{cgroup=\"", out);
	render_label_value(out, cg->name);
	fputc('"', out);
}

void render_sample_label_clean(FILE *out, const char *key, const char *clean)
{
	fprintf(out, ",%s=\"", key);
	utf8_write_label(out, clean);
	fputc('"', out);
}

void render_sample_label(FILE *out, const char *key, const char *value)
{
	fprintf(out, ",%s=\"", key);
	render_label_value(out, value);
	fputc('"', out);
}

void render_sample_close(FILE *out, uint64_t value)
{
	fprintf(out, "} %" PRIu64 "\n", value);
}

void render_sample(FILE *out, const char *name, uint64_t value)
{
	fprintf(out, "%s %" PRIu64 "\n", name, value);
}

void render_sample_close_micros(FILE *out, uint64_t us)
{
	fprintf(out, "} %" PRIu64 ".%06" PRIu64 "\n", us / 1000000, us % 1000000);
}

void render_cgroup_sample(FILE *out, const char *name, const struct snap_cgroup *cg, uint64_t value)
{
	render_sample_open(out, name, cg);
	render_sample_close(out, value);
}

static void render_info(FILE *out, const struct snapshot *s, const struct render_meta *meta)
{
	render_family(out, "cachestat_build_info", "gauge",
		      "A metric with a constant '1' value labeled by version and revision of cachestat_exporter.");
	fputs("cachestat_build_info{version=\"", out);
	render_label_value(out, meta->version);
	fputs("\",revision=\"", out);
	render_label_value(out, meta->revision);
	fputs("\"} 1\n", out);

	render_family(out, "cachestat_syscall_info", "gauge",
		      "How the files' page cache is measured: the cachestat ABI of the running kernel (seed, mainline, both), mincore, or none.");
	fprintf(out, "cachestat_syscall_info{abi=\"%s\"} 1\n", pagecache_abi_name(s->abi));
}

static void render_skipped(FILE *out, const struct snapshot *s)
{
	render_family(out, "cachestat_files_skipped_total", "counter",
		      "Files not counted, by reason, since the exporter started.");
	for (int r = 0; r < _SKIP_MAX; r++)
		fprintf(out, "cachestat_files_skipped_total{reason=\"%s\"} %" PRIu64 "\n",
			skip_reason_name((enum skip_reason)r), s->skipped[r]);
}

/*
 * cachestat_collector_unavailable_info: a series per collector on but with nothing it can
 * measure here, which has no success series; no family when there is none.
 */
static void render_unavailable(FILE *out, const struct snapshot *s)
{
	bool head = false;

	for (size_t i = 0; i < registry_count(); i++) {
		if (!s->collectors[i].unavailable)
			continue;
		if (!head)
			render_family(out, "cachestat_collector_unavailable_info", "gauge",
				      "A collector that is on but has nothing it can measure on this host, "
				      "and why (cgroup_v1, no_memory_controller, no_psi, no_cachestat).");
		head = true;
		fprintf(out, "cachestat_collector_unavailable_info{collector=\"%s\",reason=\"%s\"} 1\n",
			registry_get(i)->name, s->collectors[i].unavailable);
	}
}

/* cachestat_scrape_collector_{duration_seconds,success}: one series per reported collector. */
static void render_collectors(FILE *out, const struct snapshot *s)
{
	size_t n = registry_count();

	render_family(out, "cachestat_scrape_collector_duration_seconds", "gauge",
		      "Time a collector took in the last scan.");
	for (size_t i = 0; i < n; i++) {
		if (!s->collectors[i].reported)
			continue;
		fprintf(out, "cachestat_scrape_collector_duration_seconds{collector=\"%s\"} ",
			registry_get(i)->name);
		put_double(out, s->collectors[i].seconds);
		fputc('\n', out);
	}
	render_family(out, "cachestat_scrape_collector_success", "gauge",
		      "Whether a collector succeeded in the last scan.");
	for (size_t i = 0; i < n; i++) {
		if (!s->collectors[i].reported)
			continue;
		fprintf(out, "cachestat_scrape_collector_success{collector=\"%s\"} %d\n",
			registry_get(i)->name, s->collectors[i].success ? 1 : 0);
	}
	render_unavailable(out, s);
}

static void render_capped(FILE *out, const struct snapshot *s, uint64_t cut)
{
	static const char *const mount_caps[SNAP_MOUNT_CAPS] = { "mounts", "bytes", "layers" };
	static const char *const caps[_SNAP_CAP_MAX] = { [SNAP_CAP_NODE] = "node",
							  [SNAP_CAP_OWNER] = "owner" };

	render_family(out, "cachestat_scan_cgroups_capped_total", "counter",
		      "Scans that left cgroups out at a cap (node: --scan.max-cgroups, owner: "
		      "--scan.max-cgroups-per-owner), since the exporter started.");
	for (int c = 0; c < _SNAP_CAP_MAX; c++)
		fprintf(out, "cachestat_scan_cgroups_capped_total{cap=\"%s\"} %" PRIu64 "\n", caps[c],
			s->capped[c]);
	render_family(out, "cachestat_scan_globs_capped_total", "counter",
		      "Scans in which a configured glob stopped at --collector.cachestat.max-glob-entries "
		      "names read (its further matches left out), since the exporter started.");
	render_sample(out, "cachestat_scan_globs_capped_total", s->globs_capped);
	render_family(out, "cachestat_scan_mounts_capped_total", "counter",
		      "Mount tables and overlays a cap left unjudged, their files skipped as "
		      "mount_capped (mounts: --scan.max-mounts, bytes: --scan.max-mountinfo-bytes, "
		      "layers: --scan.max-overlay-layers), since the exporter started.");
	for (int c = 0; c < SNAP_MOUNT_CAPS; c++)
		fprintf(out, "cachestat_scan_mounts_capped_total{cap=\"%s\"} %" PRIu64 "\n",
			mount_caps[c], s->mounts_capped[c]);
	render_family(out, "cachestat_scrape_body_truncated_total", "counter",
		      "Bodies cut at --web.max-body-bytes (the series past it left out), since the "
		      "exporter started.");
	render_sample(out, "cachestat_scrape_body_truncated_total", cut);
}

/* The room kept for the families written after the cut: theirs are a few KB. */
#define RENDER_TAIL_BYTES (32u << 10)

/* A stream that passes whole lines on to out while they fit in budget, then none. */
struct capped_writer {
	FILE *out;
	size_t budget, written;
	bool full;
	char *line;
	size_t len, size;
};

static bool line_append(struct capped_writer *w, const char *p, size_t n)
{
	if (w->written + w->len + n > w->budget)
		return false;
	if (w->len + n > w->size) {
		size_t size = w->size ? w->size : 256;
		char *t;

		while (size < w->len + n)
			size *= 2;
		t = realloc(w->line, size);
		if (!t)
			return false;
		w->line = t;
		w->size = size;
	}
	memcpy(w->line + w->len, p, n);
	w->len += n;
	return true;
}

static ssize_t capped_write(void *cookie, const char *buf, size_t size)
{
	struct capped_writer *w = cookie;
	size_t i = 0;

	while (i < size && !w->full) {
		const char *nl = memchr(buf + i, '\n', size - i);
		size_t n = nl ? (size_t)(nl - (buf + i)) + 1 : size - i;

		if (!line_append(w, buf + i, n)) {
			w->full = true;
			break;
		}
		if (nl) {
			fwrite(w->line, 1, w->len, w->out);
			w->written += w->len;
			w->len = 0;
		}
		i += n;
	}
	return (ssize_t)size; /* what is left out is not an error */
}

int render_text_limited(FILE *out, const struct snapshot *s, const struct render_meta *meta,
			size_t max_bytes, uint64_t cut_before, bool *ret_cut)
{
	struct capped_writer w = { .out = out };
	cookie_io_functions_t io = { .write = capped_write };
	FILE *f;

	w.budget = max_bytes > RENDER_TAIL_BYTES ? max_bytes - RENDER_TAIL_BYTES : 0;
	f = fopencookie(&w, "w", io);
	if (!f)
		return -ENOMEM;
	render_info(f, s, meta);
	for (size_t i = 0; i < registry_count(); i++)
		if (registry_get(i)->render_text)
			registry_get(i)->render_text(f, s, i);
	fclose(f);
	free(w.line);
	w.full |= w.len > 0; /* a line without its end */
	render_skipped(out, s);
	render_collectors(out, s);
	render_capped(out, s, cut_before + w.full);
	*ret_cut = w.full;
	return ferror(out) ? -EIO : 0;
}

int render_text(FILE *out, const struct snapshot *s, const struct render_meta *meta)
{
	bool cut;

	return render_text_limited(out, s, meta, SIZE_MAX, 0, &cut);
}

/* ---- JSON ---- */

json_t *render_json_str(const char *s)
{
	_cleanup_free_ char *clean = utf8_sanitize(s);

	return clean ? json_string(clean) : NULL;
}

/* JSON integers are 64-bit signed in jansson; beyond that only a double can carry it. */
json_t *render_json_u64(uint64_t v)
{
	if (v > (uint64_t)INT64_MAX)
		return json_real((double)v);
	return json_integer((json_int_t)v);
}

/*
 * The ABI of the snapshot render_json() is at, for render_json_counts(), which the collectors'
 * render_json hooks call without the snapshot; per thread, as scrapes render at once.
 */
static __thread enum pagecache_abi json_abi = PAGECACHE_ABI_MAINLINE;

json_t *render_json_counts(const struct snap_counts *c, json_t *o)
{
	static const char *const keys[_SNAP_COUNT_MAX] = {
		[SNAP_CACHED] = "cached_bytes",
		[SNAP_DIRTY] = "dirty_bytes",
		[SNAP_WRITEBACK] = "writeback_bytes",
		[SNAP_EVICTED] = "evicted_bytes",
		[SNAP_RECENTLY_EVICTED] = "recently_evicted_bytes",
	};

	if (!o)
		return NULL;
	for (unsigned f = 0; f < _SNAP_COUNT_MAX; f++)
		if (pagecache_measures(json_abi, f)) /* a count not measured is left out, not 0 */
			json_object_set_new(o, keys[f], render_json_u64(snap_counts_get(c, (enum snap_count)f)));
	return o;
}

static json_t *json_cgroup(const struct snap_cgroup *cg)
{
	json_t *o = json_object();

	if (!o)
		return NULL;
	json_object_set_new(o, "cgroup", render_json_str(cg->name));
	for (size_t i = 0; i < registry_count(); i++)
		if (registry_get(i)->render_json)
			registry_get(i)->render_json(o, cg, i);
	return o;
}

static json_t *json_skipped(const struct snapshot *s)
{
	json_t *skipped = json_object();

	for (int r = 0; skipped && r < _SKIP_MAX; r++)
		json_object_set_new(skipped, skip_reason_name((enum skip_reason)r),
				    render_json_u64(s->skipped[r]));
	return skipped;
}

static json_t *json_collectors(const struct snapshot *s)
{
	json_t *collectors = json_object();

	for (size_t i = 0; collectors && i < registry_count(); i++) {
		if (s->collectors[i].unavailable)
			json_object_set_new(collectors, registry_get(i)->name,
					    json_pack("{s:s}", "unavailable", s->collectors[i].unavailable));
		if (!s->collectors[i].reported)
			continue;
		json_object_set_new(collectors, registry_get(i)->name,
				    json_pack("{s:f,s:b}", "duration_seconds", s->collectors[i].seconds,
					      "success", s->collectors[i].success));
	}
	return collectors;
}

/*
 * What cg's object adds to the body: its text as json_dumpf() writes it two levels deep (each
 * line indented by four more spaces) and the ",\n" before the next. 0 when out of memory.
 */
static size_t json_cgroup_bytes(const json_t *cg)
{
	_cleanup_free_ char *text = json_dumps(cg, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	size_t n = 0, lines = 1;

	if (!text)
		return 0;
	for (const char *p = text; *p; p++, n++)
		lines += *p == '\n';
	return n + 4 * lines + 2;
}

int render_json_limited(FILE *out, const struct snapshot *s, const struct render_meta *meta,
			size_t max_bytes, uint64_t cut_before, bool *ret_cut)
{
	_cleanup_(json_decrefp) json_t *root = json_object();
	size_t budget, used = 0;
	json_t *cgroups;
	bool cut = false;

	if (!root)
		return -ENOMEM;
	/* as the text's: the keys after the cgroups (skips, collectors, the cut) fit in the tail */
	budget = max_bytes > RENDER_TAIL_BYTES ? max_bytes - RENDER_TAIL_BYTES : 0;
	json_object_set_new(root, "version", render_json_str(meta->version));
	json_object_set_new(root, "revision", render_json_str(meta->revision));
	json_object_set_new(root, "abi", json_string(pagecache_abi_name(s->abi)));
	json_abi = s->abi;
	cgroups = json_array();
	/* whole cgroups while they fit: the body stays valid JSON, and its tree stays that small */
	for (size_t i = 0; cgroups && i < s->n_cgroups; i++) {
		json_t *cg = json_cgroup(&s->cgroups[i]);
		size_t n = cg && max_bytes != SIZE_MAX ? json_cgroup_bytes(cg) : 0;

		if (used + n > budget) {
			json_decref(cg);
			cut = true;
			break;
		}
		used += n;
		json_array_append_new(cgroups, cg);
	}
	json_object_set_new(root, "cgroups", cgroups);
	json_object_set_new(root, "files_skipped_total", json_skipped(s));
	json_object_set_new(root, "collectors", json_collectors(s));
	json_object_set_new(root, "body_truncated_total", render_json_u64(cut_before + cut));
	*ret_cut = cut;
	if (json_dumpf(root, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER) < 0)
		return -EIO;
	fputc('\n', out);
	return ferror(out) ? -EIO : 0;
}

int render_json(FILE *out, const struct snapshot *s, const struct render_meta *meta)
{
	bool cut;

	return render_json_limited(out, s, meta, SIZE_MAX, 0, &cut);
}
