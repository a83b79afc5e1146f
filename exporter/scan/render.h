/* SPDX-License-Identifier: Apache-2.0 */
/*
 * render: a snapshot as Prometheus text exposition format 0.0.4, or as JSON. Writes the
 * exporter's own families and, through each collector's render hooks (collector.h), theirs: the
 * helpers below are all a collector uses to write, so that escaping and the format live here.
 * Metric names are the contract of docs/metrics.md. Never reads /proc or /sys.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "base/expfmt.h"
#include "scan/snapshot.h"

struct render_meta {
	const char *version;
	const char *revision;
};

/* Returns 0, or -EIO when out fails. */
int render_text(FILE *out, const struct snapshot *s, const struct render_meta *meta);

/*
 * A body's bytes at most (--web.max-body-bytes): the default stays far below the unit's
 * MemoryMax of 256 MiB with the daemon's copies of a body (the text while it grows, its gzip,
 * the sealed memfd the HTTP process maps, the one before it still served). The least leaves
 * room for the exporter's own families, written after the cut.
 */
#define RENDER_DEFAULT_MAX_BYTES (16u << 20)
#define RENDER_MIN_MAX_BYTES (64u << 10)

/*
 * render_text() in max_bytes at most: the collectors' lines past max_bytes less the room of
 * the exporter's own families are left out, whole lines and every line after the first left
 * out, so that what is sent stays valid; *ret_cut says whether any was.
 * cachestat_scrape_body_truncated_total is cut_before, plus one when this body was cut.
 */
int render_text_limited(FILE *out, const struct snapshot *s, const struct render_meta *meta,
			size_t max_bytes, uint64_t cut_before, bool *ret_cut);
int render_json(FILE *out, const struct snapshot *s, const struct render_meta *meta);
/*
 * render_json() in max_bytes at most, as render_text_limited(): whole cgroups past max_bytes
 * less the room of what follows them are left out, so that the body stays valid JSON;
 * "body_truncated_total" is cut_before, plus one when this body was cut (*ret_cut).
 */
int render_json_limited(FILE *out, const struct snapshot *s, const struct render_meta *meta,
			size_t max_bytes, uint64_t cut_before, bool *ret_cut);

/* s as valid UTF-8, invalid bytes as "\\xNN" (see utf8_sanitize()). Caller frees. */
char *render_utf8_sanitize(const char *s);

/* Writes a label value escaped for the text format: \ " and newline, after sanitizing. */
int render_label_value(FILE *out, const char *s);

/*
 * One sample in pieces: render_sample_open() writes `name{cgroup="..."`, render_sample_label()
 * `,key="value"` (escaped), render_sample_close() `} value` and the newline.
 */
void render_sample_open(FILE *out, const char *name, const struct snap_cgroup *cg);
void render_sample_label(FILE *out, const char *key, const char *value);
/* The same for a value utf8_sanitize() already made (topn's paths): sanitizing twice would
 * double its backslashes again. */
void render_sample_label_clean(FILE *out, const char *key, const char *clean);
void render_sample_close(FILE *out, uint64_t value);
/* name value: a node-level sample, without labels */
void render_sample(FILE *out, const char *name, uint64_t value);
/* The same for a count of microseconds, written in seconds with every digit (no rounding). */
void render_sample_close_micros(FILE *out, uint64_t us);
/* name{cgroup="..."} value */
void render_cgroup_sample(FILE *out, const char *name, const struct snap_cgroup *cg, uint64_t value);

/* JSON values: a string made valid UTF-8; an unsigned number (a double beyond INT64_MAX). */
json_t *render_json_str(const char *s);
json_t *render_json_u64(uint64_t v);
/* Adds the five *_bytes keys of c to o; returns o. */
json_t *render_json_counts(const struct snap_counts *c, json_t *o);
