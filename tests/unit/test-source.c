/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Checks of the source itself: no function in exporter/ over 60 lines, no goto-based cleanup,
 * no include pointing up the layers, a sane collector registry, and a section in
 * docs/collectors.md for every collector in it.
 * EXPORTER_DIR and DOCS_DIR come from the Makefile.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "scan/registry.h"
#include "base/util.h"

#define MAX_FUNCTION_LINES 60

static char *read_all(const char *path)
{
	FILE *f = fopen(path, "re");
	char *buf = NULL;
	size_t len = 0;
	FILE *m;
	int ch;

	if (!f)
		return NULL;
	m = open_memstream(&buf, &len);
	assert_non_null(m);
	while ((ch = fgetc(f)) != EOF)
		fputc(ch, m);
	fclose(m);
	fclose(f);
	return buf;
}

/* The name of the function whose signature starts at line (the identifier before '('). */
static void function_name(const char *line, char *out, size_t size)
{
	const char *paren = strchr(line, '('), *start;

	snprintf(out, size, "?");
	if (!paren)
		return;
	while (paren > line && paren[-1] == ' ')
		paren--;
	start = paren;
	while (start > line && (isalnum((unsigned char)start[-1]) || start[-1] == '_'))
		start--;
	if (start < paren)
		snprintf(out, size, "%.*s", (int)(paren - start), start);
}

/*
 * Functions in the kernel style of this code: the body opens with "{" alone at column 0 and
 * closes with "}" at column 0. A function's length is the lines from its "{" to its "}".
 * Appends "file:function (N lines)" to report for each one over the limit that is not listed.
 */
static int check_lengths(const char *file, const char *text, FILE *report)
{
	const char *sig = NULL, *open = NULL, *prev = NULL;
	int line = 0, open_line = 0, bad = 0;

	for (const char *p = text; *p; p = strchrnul(p, '\n') + (strchr(p, '\n') ? 1 : 0)) {
		line++;
		if (p[0] == '{' && (p[1] == '\n' || p[1] == '\0')) {
			open = p;
			open_line = line;
			sig = prev;
		} else if (p[0] == '}' && open) {
			char name[128], key[256];
			int n = line - open_line + 1;

			function_name(sig ? sig : "", name, sizeof(name));
			snprintf(key, sizeof(key), "%s:%s", file, name);
			if (n > MAX_FUNCTION_LINES) {
				fprintf(report, "  %s (%d lines, from line %d)\n", key, n, open_line);
				bad++;
			}
			open = NULL;
		}
		/* the first line of a signature: not indented, not a comment or a brace */
		if (*p && *p != '\t' && *p != ' ' && *p != '\n' && *p != '{' && *p != '}' &&
		    *p != '/' && *p != '*' && *p != '#')
			prev = p;
	}
	return bad;
}

static bool is_source(const char *name)
{
	size_t n = strlen(name);

	return n > 2 && name[n - 2] == '.' && (name[n - 1] == 'c' || name[n - 1] == 'h');
}

/* Runs check on every .c and .h file of dir; returns the failures it counted. */
static int each_source(const char *dir, const char *prefix,
		       int (*check)(const char *file, const char *text, FILE *report), FILE *report)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int bad = 0;

	if (!d)
		fail_msg("cannot open %s", dir);
	while ((de = readdir(d))) {
		char path[1024], file[512];
		char *text;

		if (!is_source(de->d_name))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		snprintf(file, sizeof(file), "%s%s", prefix, de->d_name);
		text = read_all(path);
		assert_non_null(text);
		bad += check(file, text, report);
		free(text);
	}
	closedir(d);
	return bad;
}

/*
 * The layers of exporter/, lowest first: a file may include from its own folder and the folders
 * before it, never from one after it. main.c (the top folder) and fuzz/ stand above them all.
 */
static const char *const layers[] = {
	"base", "parse", "files", "fanotify", "scan", "collectors", "serve", "privsep", "", "fuzz",
};
#define N_LAYERS (sizeof(layers) / sizeof(layers[0]))

/* Every source of exporter/, folder by folder; returns the failures check counted. */
static int each_layer(int (*check)(const char *, const char *, FILE *), FILE *report)
{
	int bad = 0;

	for (size_t i = 0; i < N_LAYERS; i++) {
		char dir[512], prefix[64];

		snprintf(dir, sizeof(dir), "%s%s%s", EXPORTER_DIR, *layers[i] ? "/" : "", layers[i]);
		snprintf(prefix, sizeof(prefix), "%s%s", layers[i], *layers[i] ? "/" : "");
		bad += each_source(dir, prefix, check, report);
	}
	return bad;
}

static void check_all(int (*check)(const char *, const char *, FILE *), const char *what)
{
	char *msg = NULL;
	size_t len = 0;
	FILE *report = open_memstream(&msg, &len);
	int bad;

	assert_non_null(report);
	bad = each_layer(check, report);
	fclose(report);
	if (bad)
		fail_msg("%d %s:\n%s", bad, what, msg);
	free(msg);
}

static void test_function_length(void **state)
{
	(void)state;
	check_all(check_lengths, "function(s) over 60 lines in exporter/");
}

static int check_goto(const char *file, const char *text, FILE *report)
{
	const char *p = text;
	int bad = 0;

	while ((p = strstr(p, "goto "))) {
		if (p > text && (isalnum((unsigned char)p[-1]) || p[-1] == '_')) {
			p++;
			continue;
		}
		fprintf(report, "  %s: \"%.*s\"\n", file, (int)(strchrnul(p, '\n') - p), p);
		bad++;
		p++;
	}
	return bad;
}

/* One cleanup idiom: _cleanup_ and TAKE_PTR/TAKE_FD (util.h), no goto labels. */
static void test_no_goto(void **state)
{
	(void)state;
	check_all(check_goto, "goto(s) in exporter/ (use _cleanup_ and TAKE_PTR)");
}

/* The rank of folder (the first len bytes of a path) in layers[], or -1 when it is not a layer. */
static int layer_rank(const char *folder, size_t len)
{
	for (size_t i = 0; i < N_LAYERS; i++)
		if (strlen(layers[i]) == len && !strncmp(layers[i], folder, len))
			return (int)i;
	return -1;
}

/*
 * Every #include "..." of file names its folder (version.h, made by the build, aside), and that
 * folder is file's own or a lower one.
 */
static int check_includes(const char *file, const char *text, FILE *report)
{
	const char *slash = strrchr(file, '/');
	int own = layer_rank(file, slash ? (size_t)(slash - file) : 0), bad = 0;

	for (const char *p = text; (p = strstr(p, "#include \"")); p++) {
		const char *name = p + strlen("#include \""), *end = strchr(name, '"');
		const char *sep = memchr(name, '/', end ? (size_t)(end - name) : 0);
		int rank = sep ? layer_rank(name, (size_t)(sep - name)) : -1;

		if (!end || (!sep && !strncmp(name, "version.h\"", strlen("version.h\""))))
			continue;
		if (rank >= 0 && rank <= own)
			continue;
		fprintf(report, "  %s: #include \"%.*s\"%s\n", file, (int)(end - name), name,
			rank < 0 ? " names no folder of the layers" : " points up the layers");
		bad++;
	}
	return bad;
}

/* A lower folder never includes a higher one (the order of layers[]). */
static void test_layers(void **state)
{
	(void)state;
	check_all(check_includes, "include(s) against the layers in exporter/");
}

static void test_registry(void **state)
{
	size_t n = registry_count();

	(void)state;
	assert_true(n >= 3);
	assert_int_equal(registry_linked(), n); /* more than COLLECTORS_MAX would be cut */
	for (size_t i = 0; i < n; i++) {
		const struct collector_def *def = registry_get(i);

		assert_non_null(def->name);
		assert_true(def->name[0] && strlen(def->name) < 48);
		assert_int_equal(strspn(def->name, "abcdefghijklmnopqrstuvwxyz0123456789_"),
				 strlen(def->name));
		assert_true(def->help && def->help[0]);
		assert_non_null(def->free_cgroup);
		assert_int_equal(registry_find(def->name), (int)i);
		if (i > 0)
			assert_true(strcmp(registry_get(i - 1)->name, def->name) < 0);
	}
	assert_int_equal(registry_find("no such collector"), -ENOENT);
	assert_null(registry_get(n));
}

/* Whether the "## Collectors" part of doc has a line "### NAME". */
static bool has_section(const char *doc, const char *name)
{
	char heading[128];
	const char *p = strstr(doc, "\n## Collectors\n");
	const char *end;

	if (!p)
		return false;
	end = strstr(p + 1, "\n## ");
	snprintf(heading, sizeof(heading), "\n### %s\n", name);
	p = strstr(p, heading);
	return p && (!end || p < end);
}

/* docs/collectors.md describes every collector in the registry. */
static void test_docs(void **state)
{
	char *doc = read_all(DOCS_DIR "/collectors.md");
	int missing = 0;

	(void)state;
	if (!doc)
		fail_msg("cannot read " DOCS_DIR "/collectors.md");
	for (size_t i = 0; i < registry_count(); i++) {
		if (has_section(doc, registry_get(i)->name))
			continue;
		print_error("docs/collectors.md: no section \"### %s\" under \"## Collectors\"\n",
			    registry_get(i)->name);
		missing++;
	}
	free(doc);
	if (missing)
		fail_msg("%d collector(s) without a section in docs/collectors.md", missing);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_function_length),
		cmocka_unit_test(test_no_goto),
		cmocka_unit_test(test_layers),
		cmocka_unit_test(test_registry),
		cmocka_unit_test(test_docs),
	};

	return cmocka_run_group_tests_name("source", tests, NULL, NULL);
}
