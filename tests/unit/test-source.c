/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Checks of the source itself: no function in exporter/ over 60 lines, no goto-based cleanup,
 * no include pointing up the layers, log calls with a constant msg and key=value fields, the
 * map of docs/design.md true to the folders, a sane collector registry, and a section in
 * docs/collectors.md for every collector in it.
 * EXPORTER_DIR and DOCS_DIR come from the Makefile.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
	"base", "parse", "files", "fanotify", "scan", "collectors", "wire", "scanner", "http",
	"privsep", "", "fuzz",
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

/* The logging calls (base/log.h) and which of their arguments is the format. */
static const struct {
	const char *name;
	int format_arg;
} log_calls[] = {
	{ "log_debug", 0 }, { "log_info", 0 },	{ "log_warn", 0 },
	{ "log_error", 0 }, { "log_msg", 1 },	{ "log_warn_repeat", 1 },
};

/* Past the argument that starts at p (to its ',' or ')' at depth 0, string literals skipped). */
static const char *skip_argument(const char *p)
{
	int depth = 0;

	for (; *p; p++) {
		if (*p == '"' || *p == '\'') {
			char q = *p;

			for (p++; *p && *p != q; p++)
				if (*p == '\\' && p[1])
					p++;
		} else if (*p == '(') {
			depth++;
		} else if ((*p == ')' && depth-- == 0) || (*p == ',' && depth == 0)) {
			return p;
		}
	}
	return p;
}

/* The adjacent string literals at p, joined as written (escapes kept), into out. */
static bool read_literals(const char *p, char *out, size_t size)
{
	size_t n = 0;
	bool any = false;

	for (;;) {
		p += strspn(p, " \t\n");
		if (*p != '"')
			break;
		any = true;
		for (p++; *p && *p != '"'; p++) {
			if (*p == '\\' && p[1] && n + 1 < size)
				out[n++] = *p++;
			if (n + 1 < size)
				out[n++] = *p;
		}
		if (*p)
			p++;
	}
	out[n] = '\0';
	return any;
}

/*
 * Why the format fmt (as written in the source) is no log line of the house style, or NULL:
 * the message (before the first "\t") is a constant sentence, no directive in it, and each
 * field after a "\t" starts with a lower_snake key and '='.
 */
static const char *log_format_problem(const char *fmt)
{
	const char *tab = strstr(fmt, "\\t");
	size_t msg_len = tab ? (size_t)(tab - fmt) : strlen(fmt);

	if (msg_len == 0)
		return "an empty message";
	for (size_t i = 0; i < msg_len; i++)
		if (fmt[i] == '%' && fmt[i + 1] != '%')
			return "a directive in the message (details go in fields after \\t)";
		else if (fmt[i] == '%')
			i++;
	for (const char *f = tab; f; f = strstr(f, "\\t")) {
		size_t key;

		f += 2;
		key = strspn(f, "abcdefghijklmnopqrstuvwxyz0123456789_");
		if (key == 0 || f[key] != '=' || !islower((unsigned char)f[0]))
			return "a field without a lower_snake key and '='";
	}
	return NULL;
}

/* Every log call of file passes a literal format that log_format_problem() accepts. */
static int check_log_calls(const char *file, const char *text, FILE *report)
{
	int bad = 0;

	for (size_t c = 0; c < sizeof(log_calls) / sizeof(log_calls[0]); c++) {
		size_t len = strlen(log_calls[c].name);

		for (const char *p = text; (p = strstr(p, log_calls[c].name)); p += len) {
			const char *line = p, *arg = p + len + 1, *why;
			char fmt[1024];
			int lineno = 1;

			if (arg[-1] != '(' ||
			    (p > text && (isalnum((unsigned char)p[-1]) || p[-1] == '_')))
				continue;
			while (line > text && line[-1] != '\n')
				line--;
			if (!strncmp(line + strspn(line, " \t"), "#define", 7))
				continue;
			for (int i = 0; i < log_calls[c].format_arg && *arg; i++) {
				arg = skip_argument(arg);
				arg += *arg == ',';
			}
			why = read_literals(arg, fmt, sizeof(fmt))
				      ? log_format_problem(fmt)
				      : "a format that is no string literal";
			if (!why)
				continue;
			for (const char *q = text; q < p; q++)
				lineno += *q == '\n';
			fprintf(report, "  %s:%d: %s: \"%s\"\n", file, lineno, why, fmt);
			bad++;
		}
	}
	return bad;
}

/* Log lines are promslog's: a constant msg, the details as key=value fields (base/log.h). */
static void test_log_calls(void **state)
{
	(void)state;
	check_all(check_log_calls, "log call(s) with details in msg in exporter/");
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

/* The map of docs/design.md: "folder/module" per entry ("main" at the top), the folders. */
struct code_map {
	char entries[160][128];
	size_t n_entries;
	char folders[16][32];
	size_t n_folders;
};

/*
 * Reads the fenced block under "## The map of the exporter": a line "NAME/ ..." at column 0
 * opens a folder, "NAME ..." at column 0 is a module of the top, "  NAME ..." (two spaces) a
 * module of the folder last opened; deeper lines go on describing.
 */
static void read_map(const char *doc, struct code_map *map)
{
	const char *p = strstr(doc, "\n## The map of the exporter\n"), *end;
	char folder[32] = "", word[64];

	assert_non_null(p);
	p = strstr(p, "\n```\n");
	assert_non_null(p);
	p += strlen("\n```\n");
	end = strstr(p, "\n```");
	assert_non_null(end);
	for (; p < end; p = strchrnul(p, '\n') + 1) {
		bool top = islower((unsigned char)p[0]);
		bool sub = !strncmp(p, "  ", 2) && islower((unsigned char)p[2]);
		size_t n;

		if (!top && !sub)
			continue;
		n = strcspn(p + (sub ? 2 : 0), " \n");
		snprintf(word, sizeof(word), "%.*s", (int)n, p + (sub ? 2 : 0));
		if (top && word[n - 1] == '/') {
			snprintf(folder, sizeof(folder), "%.*s", (int)n - 1, word);
			assert_true(map->n_folders < ELEMENTSOF(map->folders));
			snprintf(map->folders[map->n_folders++], sizeof(map->folders[0]), "%s", folder);
			continue;
		}
		assert_true(map->n_entries < ELEMENTSOF(map->entries));
		snprintf(map->entries[map->n_entries++], sizeof(map->entries[0]), "%s%s%s",
			 top ? "" : folder, top ? "" : "/", word);
	}
}

static bool map_has(const struct code_map *map, const char *entry)
{
	for (size_t i = 0; i < map->n_entries; i++)
		if (!strcmp(map->entries[i], entry))
			return true;
	return false;
}

/* Every module of the folder layers[i] (a NAME.c or NAME.h) has its entry in map. */
static int modules_in_map(const struct code_map *map, size_t i, FILE *report)
{
	char dir[512], entry[128];
	struct dirent *de;
	DIR *d;
	int bad = 0;

	snprintf(dir, sizeof(dir), "%s%s%s", EXPORTER_DIR, *layers[i] ? "/" : "", layers[i]);
	d = opendir(dir);
	assert_non_null(d);
	while ((de = readdir(d))) {
		if (!is_source(de->d_name))
			continue;
		snprintf(entry, sizeof(entry), "%s%s%.*s", layers[i], *layers[i] ? "/" : "",
			 (int)strlen(de->d_name) - 2, de->d_name);
		if (!map_has(map, entry)) {
			fprintf(report, "  exporter/%s%s%s: not in the map\n", layers[i],
				*layers[i] ? "/" : "", de->d_name);
			bad++;
		}
	}
	closedir(d);
	return bad;
}

/* Every entry of map names a module that is there. */
static int entries_in_tree(const struct code_map *map, FILE *report)
{
	int bad = 0;

	for (size_t i = 0; i < map->n_entries; i++) {
		char c[512], h[512];

		snprintf(c, sizeof(c), "%s/%s.c", EXPORTER_DIR, map->entries[i]);
		snprintf(h, sizeof(h), "%s/%s.h", EXPORTER_DIR, map->entries[i]);
		if (access(c, F_OK) && access(h, F_OK)) {
			fprintf(report, "  %s: in the map, no such module in exporter/\n",
				map->entries[i]);
			bad++;
		}
	}
	return bad;
}

/* The map's folders, from the top down, are layers[] from the top down (main and fuzz aside). */
static int folders_in_order(const struct code_map *map, FILE *report)
{
	size_t j = 0;
	int bad = 0;

	for (size_t i = N_LAYERS; i-- > 0;) {
		if (!*layers[i] || !strcmp(layers[i], "fuzz"))
			continue;
		if (j >= map->n_folders || strcmp(map->folders[j], layers[i])) {
			fprintf(report, "  the map's folder %zu is %s, the layers' is %s/\n", j + 1,
				j < map->n_folders ? map->folders[j] : "missing", layers[i]);
			bad++;
		}
		j++;
	}
	if (j != map->n_folders) {
		fprintf(report, "  the map has %zu folders, the layers %zu\n", map->n_folders, j);
		bad++;
	}
	return bad;
}

/* docs/design.md's map of the code and exporter/'s folders name the same modules. */
static void test_map(void **state)
{
	char *doc = read_all(DOCS_DIR "/design.md"), *msg = NULL;
	struct code_map *map = calloc(1, sizeof(*map));
	size_t len = 0;
	FILE *report = open_memstream(&msg, &len);
	int bad;

	(void)state;
	assert_non_null(doc);
	assert_non_null(map);
	assert_non_null(report);
	read_map(doc, map);
	bad = entries_in_tree(map, report) + folders_in_order(map, report);
	for (size_t i = 0; i < N_LAYERS; i++)
		if (strcmp(layers[i], "fuzz"))
			bad += modules_in_map(map, i, report);
	fclose(report);
	if (bad)
		fail_msg("%d disagreement(s) of docs/design.md's map with exporter/:\n%s", bad, msg);
	free(msg);
	free(map);
	free(doc);
}

/* The two checks above fail where they should: on texts made to break them. */
static void test_checks_can_fail(void **state)
{
	static const char doc[] = "\n## The map of the exporter\n\n```\nmain   top\n"
				  "base/  lowest\n  util   helpers\n         more of it\n"
				  "  nosuch none\n```\n";
	struct code_map *map = calloc(1, sizeof(*map));
	FILE *null = fopen("/dev/null", "we");

	(void)state;
	assert_non_null(map);
	assert_non_null(null);
	assert_int_equal(check_includes("base/x.c", "#include \"scan/registry.h\"\n", null), 1);
	assert_int_equal(check_includes("base/x.c", "#include \"util.h\"\n", null), 1);
	assert_int_equal(check_includes("scan/x.c", "#include \"base/util.h\"\n"
				      "#include \"scan/render.h\"\n#include \"version.h\"\n", null), 0);
	read_map(doc, map);
	assert_int_equal(map->n_entries, 3);
	assert_string_equal(map->entries[0], "main");
	assert_string_equal(map->entries[1], "base/util");
	assert_int_equal(entries_in_tree(map, null), 1); /* base/nosuch */
	assert_true(folders_in_order(map, null) > 0);     /* base/ alone */
	assert_true(modules_in_map(map, 1, null) > 0);    /* parse/ has none in it */
	assert_int_equal(check_log_calls("x.c", "log_info(\"scan failed: %s\", e);", null), 1);
	assert_int_equal(check_log_calls("x.c", "log_msg(LOG_LEVEL_WARN, \"%s\", note);", null), 1);
	assert_int_equal(check_log_calls("x.c", "log_error(err);", null), 1);
	assert_int_equal(check_log_calls("x.c", "log_warn(\"a\\tKey=%d\", 1);", null), 1);
	assert_int_equal(check_log_calls("x.c", "log_warn(\"a\\t%s\", s);", null), 1);
	assert_int_equal(check_log_calls("x.c", "log_warn_repeat(&slot, \"up %d%%\", 1);", null), 1);
	assert_int_equal(check_log_calls("x.c", "log_info(\"Listening on\\taddress=%s\", a);\n"
				       "log_msg(f(a, b), \"scan \"\n\t\"problem\\tproblem=%s\", p);\n"
				       "log_warn_repeat(&slot, \"100%% done\\tn=%d\", 1);\n"
				       "#define log_info(...) log_msg_at(__VA_ARGS__)\n", null), 0);
	fclose(null);
	free(map);
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
		cmocka_unit_test(test_log_calls),
		cmocka_unit_test(test_map),
		cmocka_unit_test(test_checks_can_fail),
		cmocka_unit_test(test_registry),
		cmocka_unit_test(test_docs),
	};

	return cmocka_run_group_tests_name("source", tests, NULL, NULL);
}
