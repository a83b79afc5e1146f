/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Checks of the source itself: no function in exporter/ over 60 lines, no goto-based cleanup,
 * no include out of the bounds of exporter/layers.mk (and that table a closed graph without a
 * cycle), log calls with a constant msg and key=value fields, the map of docs/design.md true to
 * the folders and the table, a sane collector registry, and a section in docs/collectors.md for
 * every collector in it that says whether it is on by default.
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
 * The layers of exporter/: which folder may use which, exporter/layers.mk's table (the one the
 * Makefile links by), a row "USES_FOLDER := FOLDER..." per folder. main is main.c (the folder
 * "" here), fuzz the fuzz targets.
 */
struct layer {
	char name[32];
	char uses[16][32];
	size_t n_uses;
};

static struct layer layers[16];
static size_t n_layers;

/* Reads the table of text into layers[]; returns the rows it read. */
static size_t parse_layers(const char *text)
{
	n_layers = 0;
	for (const char *p = text; *p; p = strchrnul(p, '\n') + (strchr(p, '\n') ? 1 : 0)) {
		struct layer *l = &layers[n_layers];
		const char *eq = strstr(p, " :="), *end = strchrnul(p, '\n'), *w;

		if (strncmp(p, "USES_", 5) || !eq || eq > end)
			continue;
		assert_true(n_layers < ELEMENTSOF(layers));
		*l = (struct layer){ 0 };
		snprintf(l->name, sizeof(l->name), "%.*s", (int)(eq - p - 5), p + 5);
		for (w = eq + 3; w < end; w += strcspn(w, " \t\n")) {
			size_t n;

			w += strspn(w, " \t");
			n = strcspn(w, " \t\n");
			if (n == 0)
				break;
			assert_true(l->n_uses < ELEMENTSOF(l->uses));
			snprintf(l->uses[l->n_uses++], sizeof(l->uses[0]), "%.*s", (int)n, w);
		}
		n_layers++;
	}
	return n_layers;
}

static void load_layers(void)
{
	char *text = read_all(EXPORTER_DIR "/layers.mk");

	if (!text)
		fail_msg("cannot read " EXPORTER_DIR "/layers.mk");
	assert_true(parse_layers(text) > 3);
	free(text);
}

/* The folder below exporter/ of layers[i]: "" for main. */
static const char *layer_dir(size_t i)
{
	return strcmp(layers[i].name, "main") ? layers[i].name : "";
}

/* The row of folder (the first len bytes of a path; "" is main), or -1 when it has none. */
static int layer_find(const char *folder, size_t len)
{
	if (len == 0)
		folder = "main", len = 4;
	for (size_t i = 0; i < n_layers; i++)
		if (strlen(layers[i].name) == len && !strncmp(layers[i].name, folder, len))
			return (int)i;
	return -1;
}

/* Whether layers[i] may use the folder named name (its own, or one of its row). */
static bool layer_uses(size_t i, const char *name)
{
	if (!strcmp(layers[i].name, name))
		return true;
	for (size_t j = 0; j < layers[i].n_uses; j++)
		if (!strcmp(layers[i].uses[j], name))
			return true;
	return false;
}

/* Every source of exporter/, folder by folder; returns the failures check counted. */
static int each_layer(int (*check)(const char *, const char *, FILE *), FILE *report)
{
	int bad = 0;

	load_layers();
	for (size_t i = 0; i < n_layers; i++) {
		const char *name = layer_dir(i);
		char dir[512], prefix[64];

		snprintf(dir, sizeof(dir), "%s%s%.31s", EXPORTER_DIR, *name ? "/" : "", name);
		snprintf(prefix, sizeof(prefix), "%.31s%s", name, *name ? "/" : "");
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

/*
 * Every #include "..." of file names its folder (version.h, made by the build, aside), and that
 * folder is file's own or one its row of the table names.
 */
static int check_includes(const char *file, const char *text, FILE *report)
{
	const char *slash = strrchr(file, '/');
	int own = layer_find(file, slash ? (size_t)(slash - file) : 0), bad = 0;

	for (const char *p = text; (p = strstr(p, "#include \"")); p++) {
		const char *name = p + strlen("#include \""), *end = strchr(name, '"');
		const char *sep = memchr(name, '/', end ? (size_t)(end - name) : 0);
		int to = sep ? layer_find(name, (size_t)(sep - name)) : -1;

		if (!end || (!sep && !strncmp(name, "version.h\"", strlen("version.h\""))))
			continue;
		if (own >= 0 && to >= 0 && strcmp(layers[to].name, "main") &&
		    layer_uses((size_t)own, layers[to].name))
			continue;
		fprintf(report, "  %s: #include \"%.*s\"%s\n", file, (int)(end - name), name,
			to < 0 ? " names no folder of exporter/layers.mk"
			       : " is out of bounds (exporter/layers.mk)");
		bad++;
	}
	return bad;
}

/*
 * The table itself: a row per folder of exporter/ with sources, a folder in every row's list,
 * closed (what a folder may use, it may use through another) and without a cycle.
 */
static int check_table(FILE *report)
{
	int bad = 0;

	for (size_t i = 0; i < n_layers; i++) {
		for (size_t j = 0; j < layers[i].n_uses; j++) {
			int u = layer_find(layers[i].uses[j], strlen(layers[i].uses[j]));

			if (u < 0) {
				fprintf(report, "  %s uses %s, which has no row\n", layers[i].name,
					layers[i].uses[j]);
				bad++;
				continue;
			}
			if (layer_uses((size_t)u, layers[i].name)) {
				fprintf(report, "  %s and %s use each other\n", layers[i].name,
					layers[u].name);
				bad++;
			}
			for (size_t k = 0; k < layers[u].n_uses; k++)
				if (!layer_uses(i, layers[u].uses[k])) {
					fprintf(report, "  %s uses %s, which uses %s: not in %s's row\n",
						layers[i].name, layers[u].name, layers[u].uses[k],
						layers[i].name);
					bad++;
				}
		}
	}
	return bad;
}

/* The folders of exporter/ that hold sources, each with its row. */
static int check_folders(FILE *report)
{
	DIR *d = opendir(EXPORTER_DIR);
	struct dirent *de;
	int bad = 0;

	assert_non_null(d);
	while ((de = readdir(d))) {
		char path[512];
		DIR *sub;
		bool sources = false;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", EXPORTER_DIR, de->d_name);
		sub = opendir(path);
		if (!sub)
			continue;
		for (struct dirent *e; (e = readdir(sub));)
			sources |= is_source(e->d_name);
		closedir(sub);
		if (sources && strcmp(de->d_name, "build") && layer_find(de->d_name, strlen(de->d_name)) < 0) {
			fprintf(report, "  exporter/%s/: no row in exporter/layers.mk\n", de->d_name);
			bad++;
		}
	}
	closedir(d);
	return bad;
}

/* No include out of the bounds of exporter/layers.mk, and the table a closed, acyclic graph. */
static void test_layers(void **state)
{
	char *msg = NULL;
	size_t len = 0;
	FILE *report;
	int bad;

	(void)state;
	check_all(check_includes, "include(s) out of bounds in exporter/");
	report = open_memstream(&msg, &len);
	assert_non_null(report);
	bad = check_table(report) + check_folders(report);
	fclose(report);
	if (bad)
		fail_msg("%d fault(s) of exporter/layers.mk:\n%s", bad, msg);
	free(msg);
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

/* Every module of the folder of layers[i] (a NAME.c or NAME.h) has its entry in map. */
static int modules_in_map(const struct code_map *map, size_t i, FILE *report)
{
	char dir[512], entry[128];
	struct dirent *de;
	DIR *d;
	int bad = 0;

	const char *name = layer_dir(i);

	snprintf(dir, sizeof(dir), "%s%s%.31s", EXPORTER_DIR, *name ? "/" : "", name);
	d = opendir(dir);
	assert_non_null(d);
	while ((de = readdir(d))) {
		if (!is_source(de->d_name))
			continue;
		snprintf(entry, sizeof(entry), "%.31s%s%.*s", name, *name ? "/" : "",
			 (int)strlen(de->d_name) - 2, de->d_name);
		if (!map_has(map, entry)) {
			fprintf(report, "  exporter/%s%s%s: not in the map\n", name, *name ? "/" : "",
				de->d_name);
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

/* The position of folder in the map, or -1. */
static int map_folder(const struct code_map *map, const char *folder)
{
	for (size_t i = 0; i < map->n_folders; i++)
		if (!strcmp(map->folders[i], folder))
			return (int)i;
	return -1;
}

/*
 * The map's folders are the table's (main and fuzz aside), each above every folder it may use:
 * read from the top down, the map never goes back up.
 */
static int folders_in_order(const struct code_map *map, FILE *report)
{
	int bad = 0;

	for (size_t i = 0; i < n_layers; i++) {
		int at = map_folder(map, layers[i].name);

		if (!strcmp(layers[i].name, "main") || !strcmp(layers[i].name, "fuzz"))
			continue;
		if (at < 0) {
			fprintf(report, "  %s/ is not in the map\n", layers[i].name);
			bad++;
			continue;
		}
		for (size_t j = 0; j < layers[i].n_uses; j++)
			if (map_folder(map, layers[i].uses[j]) < at) {
				fprintf(report, "  the map has %s/ above %s/, which uses it\n",
					layers[i].uses[j], layers[i].name);
				bad++;
			}
	}
	for (size_t i = 0; i < map->n_folders; i++)
		if (layer_find(map->folders[i], strlen(map->folders[i])) < 0) {
			fprintf(report, "  the map's %s/ has no row in exporter/layers.mk\n",
				map->folders[i]);
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
	load_layers();
	bad = entries_in_tree(map, report) + folders_in_order(map, report);
	for (size_t i = 0; i < n_layers; i++)
		if (strcmp(layers[i].name, "fuzz"))
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
	assert_int_equal(parse_layers("# a table\nUSES_base :=\nUSES_parse := base\n"
				      "USES_scan := base parse\nUSES_http := base\n"
				      "USES_main := base parse scan http\n"), 5);
	assert_int_equal(layers[2].n_uses, 2);
	assert_int_equal(check_includes("base/x.c", "#include \"scan/registry.h\"\n", null), 1);
	assert_int_equal(check_includes("base/x.c", "#include \"util.h\"\n", null), 1);
	assert_int_equal(check_includes("http/x.c", "#include \"scan/render.h\"\n", null), 1);
	assert_int_equal(check_includes("scan/x.c", "#include \"http/http.h\"\n", null), 1);
	assert_int_equal(check_includes("scan/x.c", "#include \"base/util.h\"\n"
				      "#include \"scan/render.h\"\n#include \"version.h\"\n", null), 0);
	assert_int_equal(check_includes("main.c", "#include \"http/http.h\"\n", null), 0);
	assert_int_equal(check_table(null), 0);
	parse_layers("USES_base :=\nUSES_parse := base\nUSES_scan := parse\n"); /* not closed */
	assert_int_equal(check_table(null), 1);
	parse_layers("USES_base := parse\nUSES_parse := base\n"); /* a cycle */
	assert_int_equal(check_table(null), 2);
	parse_layers("USES_base :=\nUSES_parse := base\nUSES_scan := base parse\n");
	read_map(doc, map);
	assert_int_equal(map->n_entries, 3);
	assert_string_equal(map->entries[0], "main");
	assert_string_equal(map->entries[1], "base/util");
	assert_int_equal(entries_in_tree(map, null), 1); /* base/nosuch */
	assert_int_equal(folders_in_order(map, null), 2); /* parse/ and scan/ missing */
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
	memset(map, 0, sizeof(*map));
	read_map("\n## The map of the exporter\n```\nbase/\nscan/\nparse/\n```\n", map);
	assert_int_equal(folders_in_order(map, null), 2); /* scan/ below what it uses */
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

/* The text after the line "### NAME" of the "## Collectors" part of doc, or NULL. */
static const char *section_of(const char *doc, const char *name)
{
	char heading[128];
	const char *p = strstr(doc, "\n## Collectors\n");
	const char *end;

	if (!p)
		return NULL;
	end = strstr(p + 1, "\n## ");
	snprintf(heading, sizeof(heading), "\n### %s\n", name);
	p = strstr(p, heading);
	return p && (!end || p < end) ? p + strlen(heading) : NULL;
}

/*
 * docs/collectors.md describes every collector in the registry, and its section's first line
 * says the default the registry has: "`--[no-]collector.NAME`, on (off) by default.".
 */
static void test_docs(void **state)
{
	char *doc = read_all(DOCS_DIR "/collectors.md");
	int missing = 0;

	(void)state;
	if (!doc)
		fail_msg("cannot read " DOCS_DIR "/collectors.md");
	for (size_t i = 0; i < registry_count(); i++) {
		const struct collector_def *def = registry_get(i);
		const char *section = section_of(doc, def->name);
		char first[160];

		if (!section) {
			print_error("docs/collectors.md: no section \"### %s\" under \"## Collectors\"\n", def->name);
			missing++;
			continue;
		}
		snprintf(first, sizeof(first), "\n`--[no-]collector.%s`, %s by default.", def->name,
			 def->default_on ? "on" : "off");
		if (strncmp(section, first, strlen(first)) != 0) {
			print_error("docs/collectors.md: the section of %s does not begin \"%s\"\n", def->name,
				    first + 1);
			missing++;
		}
	}
	free(doc);
	if (missing)
		fail_msg("%d collector(s) without a section in docs/collectors.md that says its default", missing);
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
