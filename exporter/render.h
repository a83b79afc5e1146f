/* SPDX-License-Identifier: MIT */
/*
 * render: a snapshot as Prometheus text exposition format 0.0.4, or as JSON. Knows the metric
 * names (the contract of docs/metrics.md), not where the numbers come from. Never reads /proc
 * or /sys.
 */
#pragma once

#include <stdio.h>

#include "snapshot.h"

struct render_meta {
	const char *version;
	const char *revision;
};

#define RENDER_TEXT_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* Returns 0, or -EIO when out fails. */
int render_text(FILE *out, const struct snapshot *s, const struct render_meta *meta);
int render_json(FILE *out, const struct snapshot *s, const struct render_meta *meta);

/* s as valid UTF-8, invalid bytes as "\\xNN" (see utf8_sanitize()). Caller frees. */
char *render_utf8_sanitize(const char *s);

/* Writes a label value escaped for the text format: \ " and newline, after sanitizing. */
int render_label_value(FILE *out, const char *s);
