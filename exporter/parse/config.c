/* SPDX-License-Identifier: Apache-2.0 */
#define _GNU_SOURCE
#include "parse/config.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

struct config *config_new_default(void)
{
	struct config *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->per_file_top = CONFIG_DEFAULT_PER_FILE_TOP;
	c->max_files_per_scan = CONFIG_DEFAULT_MAX_FILES_PER_SCAN;
	c->max_files_per_cgroup = CONFIG_DEFAULT_MAX_FILES_PER_CGROUP;
	c->max_descriptors_per_process = CONFIG_DEFAULT_MAX_DESCRIPTORS_PER_PROCESS;
	c->max_mappings_per_process = CONFIG_DEFAULT_MAX_MAPPINGS_PER_PROCESS;
	c->max_scan_seconds = CONFIG_DEFAULT_MAX_SCAN_SECONDS;
	return c;
}

void config_free(struct config *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n_cgroups; i++) {
		free(c->cgroups[i].match);
		for (size_t j = 0; j < c->cgroups[i].n_paths; j++)
			free(c->cgroups[i].paths[j]);
		free(c->cgroups[i].paths);
	}
	free(c->cgroups);
	free(c);
}

int config_path_is_glob(const char *path)
{
	return strpbrk(path, "*?[") != NULL;
}

/* Sets *ret_error to "SOURCE: " + the formatted text. Always returns -EINVAL. */
__attribute__((format(printf, 3, 4))) static int fail(char **ret_error, const char *source,
						      const char *fmt, ...)
{
	_cleanup_free_ char *msg = NULL;
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	va_end(ap);
	if (!msg || asprintf(ret_error, "%s: %s", source, msg) < 0)
		*ret_error = NULL;
	return -EINVAL;
}

/* Rejects any key of obj that is not in allowed (NULL-terminated). */
static int check_keys(json_t *obj, const char *const *allowed, const char *where,
		      const char *source, char **ret_error)
{
	const char *key;
	json_t *v;

	json_object_foreach(obj, key, v) {
		bool ok = false;

		for (size_t i = 0; allowed[i]; i++)
			if (strcmp(key, allowed[i]) == 0)
				ok = true;
		if (!ok)
			return fail(ret_error, source, "unknown key \"%s\" in %s", key, where);
	}
	return 0;
}

static int parse_count(json_t *v, const char *name, uint64_t min, uint64_t max, uint64_t *ret,
		       const char *source, char **ret_error)
{
	json_int_t i;

	if (!json_is_integer(v))
		return fail(ret_error, source, "%s: must be an integer", name);
	i = json_integer_value(v);
	if (i < 0 || (uint64_t)i < min || (uint64_t)i > max)
		return fail(ret_error, source, "%s: must be between %llu and %llu", name,
			    (unsigned long long)min, (unsigned long long)max);
	*ret = (uint64_t)i;
	return 0;
}

static int parse_limits(json_t *lim, struct config *c, const char *source, char **ret_error)
{
	static const char *const keys[] = { "max_files_per_scan", "max_files_per_cgroup",
					    "max_descriptors_per_process",
					    "max_mappings_per_process", "max_scan_seconds", NULL };
	static const struct {
		const char *key, *name;
		size_t offset;
	} counts[] = {
		{ "max_files_per_scan", "limits.max_files_per_scan",
		  offsetof(struct config, max_files_per_scan) },
		{ "max_files_per_cgroup", "limits.max_files_per_cgroup",
		  offsetof(struct config, max_files_per_cgroup) },
		{ "max_descriptors_per_process", "limits.max_descriptors_per_process",
		  offsetof(struct config, max_descriptors_per_process) },
		{ "max_mappings_per_process", "limits.max_mappings_per_process",
		  offsetof(struct config, max_mappings_per_process) },
	};
	json_t *v;
	int r;

	if (!json_is_object(lim))
		return fail(ret_error, source, "limits: must be an object");
	r = check_keys(lim, keys, "limits", source, ret_error);
	if (r < 0)
		return r;
	for (size_t i = 0; i < ELEMENTSOF(counts); i++) {
		v = json_object_get(lim, counts[i].key);
		if (!v)
			continue;
		r = parse_count(v, counts[i].name, 1, UINT32_MAX,
				(uint64_t *)((char *)c + counts[i].offset), source, ret_error);
		if (r < 0)
			return r;
	}
	v = json_object_get(lim, "max_scan_seconds");
	if (v) {
		if (!json_is_number(v) || json_number_value(v) <= 0 || json_number_value(v) > 3600)
			return fail(ret_error, source,
				    "limits.max_scan_seconds: must be a number above 0 and at most 3600");
		c->max_scan_seconds = json_number_value(v);
	}
	return 0;
}

/* The non-empty components of a path: 3 for "/a//b/c/". */
static size_t path_components(const char *path)
{
	size_t n = 0;

	for (const char *c = path; *c; c++)
		n += *c != '/' && (c == path || c[-1] == '/');
	return n;
}

static int parse_cgroup(json_t *e, size_t idx, struct config_cgroup *ret, const char *source,
			char **ret_error)
{
	static const char *const keys[] = { "match", "paths", NULL };
	char where[64];
	json_t *m, *paths, *p;
	size_t j;
	int r;

	snprintf(where, sizeof(where), "cgroups[%zu]", idx);
	if (!json_is_object(e))
		return fail(ret_error, source, "%s: must be an object", where);
	r = check_keys(e, keys, where, source, ret_error);
	if (r < 0)
		return r;
	m = json_object_get(e, "match");
	if (!json_is_string(m) || json_string_length(m) == 0)
		return fail(ret_error, source, "%s.match: required, a non-empty string", where);
	ret->match = strdup(json_string_value(m));
	if (!ret->match)
		return -ENOMEM;

	paths = json_object_get(e, "paths");
	if (!paths)
		return 0;
	if (!json_is_array(paths))
		return fail(ret_error, source, "%s.paths: must be an array of strings", where);
	ret->paths = calloc(json_array_size(paths) + 1, sizeof(char *));
	if (!ret->paths)
		return -ENOMEM;
	json_array_foreach(paths, j, p) {
		if (!json_is_string(p) || json_string_value(p)[0] != '/')
			return fail(ret_error, source, "%s.paths[%zu]: must be an absolute path",
				    where, j);
		if (strlen(json_string_value(p)) != json_string_length(p))
			return fail(ret_error, source, "%s.paths[%zu]: contains a NUL byte", where,
				    j);
		if (json_string_length(p) >= PATH_MAX)
			return fail(ret_error, source, "%s.paths[%zu]: longer than %d bytes", where,
				    j, PATH_MAX - 1);
		if (config_path_is_glob(json_string_value(p)) &&
		    path_components(json_string_value(p)) > CONFIG_MAX_GLOB_COMPONENTS)
			return fail(ret_error, source, "%s.paths[%zu]: a glob of more than %d components",
				    where, j, CONFIG_MAX_GLOB_COMPONENTS);
		ret->paths[j] = strdup(json_string_value(p));
		if (!ret->paths[j])
			return -ENOMEM;
		ret->n_paths = j + 1;
	}
	return 0;
}

/* The "cgroups" array into c. */
static int parse_cgroups(json_t *v, struct config *c, const char *source, char **ret_error)
{
	json_t *e;
	size_t i;
	int r;

	if (!json_is_array(v))
		return fail(ret_error, source, "cgroups: must be an array");
	c->cgroups = calloc(json_array_size(v) + 1, sizeof(*c->cgroups));
	if (!c->cgroups)
		return -ENOMEM;
	json_array_foreach(v, i, e) {
		c->n_cgroups = i + 1;
		r = parse_cgroup(e, i, &c->cgroups[i], source, ret_error);
		if (r < 0)
			return r;
	}
	return 0;
}

int config_parse(const char *buf, size_t len, const char *source, struct config **ret,
		 char **ret_error)
{
	static const char *const keys[] = { "cgroups", "per_file_top", "limits", NULL };
	_cleanup_(json_decrefp) json_t *root = NULL;
	_cleanup_(config_freep) struct config *c = NULL;
	json_error_t jerr;
	json_t *v;
	int r;

	*ret_error = NULL;
	root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		if (asprintf(ret_error, "%s:%d:%d: %s", source, jerr.line, jerr.column, jerr.text) < 0)
			*ret_error = NULL;
		return -EINVAL;
	}
	if (!json_is_object(root))
		return fail(ret_error, source, "the top level must be an object");
	r = check_keys(root, keys, "the top level", source, ret_error);
	if (r < 0)
		return r;

	c = config_new_default();
	if (!c)
		return -ENOMEM;

	v = json_object_get(root, "per_file_top");
	if (v) {
		uint64_t n;

		r = parse_count(v, "per_file_top", 0, CONFIG_MAX_PER_FILE_TOP, &n, source,
				ret_error);
		if (r < 0)
			return r;
		c->per_file_top = (unsigned)n;
	}
	v = json_object_get(root, "limits");
	if (v) {
		r = parse_limits(v, c, source, ret_error);
		if (r < 0)
			return r;
	}
	v = json_object_get(root, "cgroups");
	if (v) {
		r = parse_cgroups(v, c, source, ret_error);
		if (r < 0)
			return r;
	}
	*ret = TAKE_PTR(c);
	return 0;
}

int config_load(const char *path, struct config **ret, char **ret_error)
{
	_cleanup_free_ char *buf = NULL;
	size_t len;
	int r;

	*ret_error = NULL;
	r = read_file_at(AT_FDCWD, path, &buf, &len);
	if (r < 0) {
		if (asprintf(ret_error, "%s: %s", path, strerror(-r)) < 0)
			*ret_error = NULL;
		return r;
	}
	return config_parse(buf, len, path, ret, ret_error);
}
