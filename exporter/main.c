/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cachestat_exporter: flags, config, signals and the wiring of the scan engine, render and http.
 * The daemon never exits on a runtime error; only bad flags or a bad config at start do.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <regex.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "scan/cgroups.h"
#include "scan/engine.h"
#include "parse/config.h"
#include "http/http.h"
#include "base/log.h"
#include "scan/skiplog.h"
#include "base/pagecache.h"
#include "privsep/sandbox.h"
#include "scanner/server.h"
#include "scan/registry.h"
#include "scanner/scheduler.h"
#include "http/selfmetrics.h"
#include "privsep/supervise.h"
#include "scan/render.h"
#include "base/util.h"
#include "version.h"

#define DEFAULT_LISTEN ":9451"
#define DEFAULT_CGROUPFS "/sys/fs/cgroup"

enum format { FORMAT_TEXT, FORMAT_JSON };

struct args {
	const char **listen;
	size_t n_listen;
	const char *telemetry_path;
	const char *web_config_file;
	const char *config_file;
	const char *cgroupfs;
	bool cgroupfs_given;
	char *cgroupfs_resolved; /* the mount walked: cgroupfs, or where cgroup v2 is */
	const char *procfs;
	const char *fs_types_exclude; /* NULL: the default */
	double scan_min_interval;     /* 0: every scrape waits for a scan */
	unsigned max_cgroups;           /* per scan */
	unsigned max_cgroups_per_owner; /* per owner of delegated subtrees */
	unsigned max_mounts;            /* mountinfo entries per mount namespace */
	unsigned max_mountinfo_bytes;   /* mountinfo bytes per mount namespace */
	unsigned max_overlay_layers;    /* layers per overlay */
	unsigned max_body_bytes;        /* of a rendered body */
	bool enable[COLLECTORS_MAX]; /* by registry index */
	bool once;
	enum format format;
	bool format_given;
	unsigned max_requests;
	unsigned max_connections;
	unsigned max_connections_per_ip;
	unsigned connection_timeout;
	const char *user;
	bool drop_privileges;
	bool seccomp;
	enum pagecache_method method;
	uint64_t mincore_max_pages_per_file;
	uint64_t mincore_max_pages_per_scan;
};

static const struct render_meta meta = { .version = CACHESTAT_VERSION,
					 .revision = CACHESTAT_REVISION };

static void args_init(struct args *a)
{
	*a = (struct args){
		.telemetry_path = "/metrics",
		.cgroupfs = DEFAULT_CGROUPFS,
		.procfs = "/proc",
		.max_requests = HTTP_DEFAULT_MAX_REQUESTS,
		.max_connections = HTTP_DEFAULT_CONNECTION_LIMIT,
		.max_connections_per_ip = HTTP_DEFAULT_PER_IP_LIMIT,
		.connection_timeout = HTTP_DEFAULT_CONNECTION_TIMEOUT,
		.max_cgroups = SCAN_DEFAULT_MAX_CGROUPS,
		.max_cgroups_per_owner = SCAN_DEFAULT_MAX_CGROUPS_PER_OWNER,
		.max_mounts = FSTYPES_DEFAULT_MAX_MOUNTS,
		.max_mountinfo_bytes = FSTYPES_DEFAULT_MAX_MOUNTINFO_BYTES,
		.max_overlay_layers = FSTYPES_DEFAULT_MAX_LAYERS,
		.max_body_bytes = RENDER_DEFAULT_MAX_BYTES,
		.user = NULL, /* sandbox_default_user() */
		.drop_privileges = true,
		.seccomp = true,
		.method = PAGECACHE_METHOD_AUTO,
		.mincore_max_pages_per_file = PAGECACHE_MINCORE_DEFAULT_MAX_PAGES_PER_FILE,
		.mincore_max_pages_per_scan = PAGECACHE_MINCORE_DEFAULT_MAX_PAGES_PER_SCAN,
	};
	for (size_t i = 0; i < registry_count(); i++)
		a->enable[i] = registry_get(i)->default_on;
}

static void args_done(struct args *a)
{
	free(a->listen);
	free(a->cgroupfs_resolved);
}

static void usage_head(FILE *f)
{
	fprintf(f,
		"usage: cachestat_exporter [FLAGS]\n"
		"\n"
		"Exports the page cache state of the files of each cgroup (cachestat(2)) and the\n"
		"refault counters of memory.stat for Prometheus.\n"
		"\n"
		"  --web.listen-address=ADDR  address to listen on, repeatable (default " DEFAULT_LISTEN ")\n"
		"  --web.telemetry-path=PATH  path of the metrics (default /metrics)\n"
		"  --web.config.file=FILE     TLS and basic auth (exporter-toolkit's YAML), re-read\n"
		"                             when it or a certificate changes\n"
		"  --web.max-requests=N       scrapes answered at once, more get 503; 0: no limit\n"
		"                             (default %u)\n"
		"  --web.max-connections=N    open connections per listen address (default %u)\n"
		"  --web.max-connections-per-ip=N  of those, from one client address; 0: no limit\n"
		"                             (default %u)\n"
		"  --web.connection-timeout=SECONDS  idle time before a connection is closed\n"
		"                             (default %u)\n"
		"  --config.file=FILE         JSON config: paths per cgroup, per-file top N, limits\n"
		"  --scan.min-interval=SECONDS  scrapes get a snapshot younger than this at once;\n"
		"                             past it a scrape waits for the scan it starts\n"
		"                             (default 0: every scrape waits for a scan)\n"
		"  --scan.max-cgroups=N       cgroups a scan visits at most; root's own first, the\n"
		"                             rest shared among the owners of delegated subtrees\n"
		"                             (default %u)\n"
		"  --scan.max-cgroups-per-owner=N  of those, below the directories one non-root\n"
		"                             user owns (default %u)\n"
		"  --scan.max-mounts=N        mountinfo entries judged per mount namespace; past\n"
		"                             it that namespace's files are skipped (default %u)\n"
		"  --scan.max-mountinfo-bytes=N  mountinfo bytes read per mount namespace; past it\n"
		"                             the same (default %u)\n"
		"  --scan.max-overlay-layers=N  layers of one overlay judged; past it the overlay's\n"
		"                             files are skipped (default %u)\n"
		"  --web.max-body-bytes=N     size of a rendered body (text, or --once's JSON); the\n"
		"                             series past it are left out (default %u)\n"
		"  --path.cgroupfs=DIR        cgroup tree to walk (default " DEFAULT_CGROUPFS "; on a\n"
		"                             hybrid host the v1 memory hierarchy found there)\n"
		"  --path.procfs=DIR          procfs mount (default /proc)\n"
		"  --collector.cachestat.fs-types-exclude=REGEX  file system types never touched\n"
		"                             (default: network file systems and FUSE)\n"
		"  --cachestat.method=auto|cachestat|mincore  how the files' page cache is measured:\n"
		"                             cachestat(2), or mmap(2) and mincore(2) (cached bytes\n"
		"                             only); auto takes mincore where the kernel has no\n"
		"                             cachestat (default auto)\n"
		"  --cachestat.mincore.max-pages-per-file=N  a larger file (in pages of its size,\n"
		"                             holes included) is skipped as page_cap (default %" PRIu64 ")\n"
		"  --cachestat.mincore.max-pages-per-scan=N  pages the mincore method walks per\n"
		"                             scan; files past it are skipped as page_cap\n"
		"                             (default %" PRIu64 ")\n",
		HTTP_DEFAULT_MAX_REQUESTS, HTTP_DEFAULT_CONNECTION_LIMIT, HTTP_DEFAULT_PER_IP_LIMIT,
		HTTP_DEFAULT_CONNECTION_TIMEOUT, SCAN_DEFAULT_MAX_CGROUPS,
		SCAN_DEFAULT_MAX_CGROUPS_PER_OWNER, FSTYPES_DEFAULT_MAX_MOUNTS,
		FSTYPES_DEFAULT_MAX_MOUNTINFO_BYTES, FSTYPES_DEFAULT_MAX_LAYERS, RENDER_DEFAULT_MAX_BYTES,
		PAGECACHE_MINCORE_DEFAULT_MAX_PAGES_PER_FILE, PAGECACHE_MINCORE_DEFAULT_MAX_PAGES_PER_SCAN);
}

/* One line per registered collector, from the registry. */
static void usage_collectors(FILE *f)
{
	for (size_t i = 0; i < registry_count(); i++) {
		const struct collector_def *def = registry_get(i);
		char flag[80];

		snprintf(flag, sizeof(flag), "--[no-]collector.%s", def->name);
		fprintf(f, "  %-26s%s%s (default %s)\n", flag, strlen(flag) > 26 ? "\n  " : " ",
			def->help, def->default_on ? "on" : "off");
		registry_print_flags(f, def);
	}
}

static void usage_tail(FILE *f)
{
	fputs("  --once                     scan once, print to stdout and exit\n"
	      "  --format=text|json         output of --once (default text)\n"
	      "  --log.level=LEVEL          debug, info, warn or error (default info)\n"
	      "  --log.format=FORMAT        logfmt or json (default logfmt)\n"
	      "  --security.user=USER       started as root, run as USER once listening\n"
	      "                             (default cachestat-exporter where that user exists,\n"
	      "                             else nobody), keeping only the capabilities the scan\n"
	      "                             needs; the HTTP process keeps none\n"
	      "  --no-security.drop-privileges  keep every privilege (not recommended)\n"
	      "  --[no-]security.seccomp    refuse every system call the scanner and the HTTP\n"
	      "                             process do not make (default on)\n"
	      "  --version                  print the version and exit\n"
	      "  -h, --help                 this help\n"
	      "\n"
	      "SIGHUP reloads the config file; a bad file keeps the running config.\n",
	      f);
}

static void usage(FILE *f)
{
	usage_head(f);
	usage_collectors(f);
	usage_tail(f);
}

enum {
	OPT_LISTEN = 256,
	OPT_TELEMETRY,
	OPT_WEB_CONFIG,
	OPT_CONFIG,
	OPT_CGROUPFS,
	OPT_PROCFS,
	OPT_ONCE,
	OPT_FORMAT,
	OPT_LOG_LEVEL,
	OPT_LOG_FORMAT,
	OPT_VERSION,
	OPT_MAX_REQUESTS,
	OPT_MAX_CONNECTIONS,
	OPT_MAX_CONNECTIONS_PER_IP,
	OPT_CONNECTION_TIMEOUT,
	OPT_USER,
	OPT_NO_DROP,
	OPT_SECCOMP,
	OPT_NO_SECCOMP,
	OPT_FS_TYPES_EXCLUDE,
	OPT_SCAN_MIN_INTERVAL,
	OPT_MAX_CGROUPS,
	OPT_MAX_CGROUPS_PER_OWNER,
	OPT_MAX_MOUNTS,
	OPT_MAX_MOUNTINFO_BYTES,
	OPT_MAX_OVERLAY_LAYERS,
	OPT_MAX_BODY_BYTES,
	OPT_METHOD,
	OPT_MINCORE_PAGES_FILE,
	OPT_MINCORE_PAGES_SCAN,
	OPT_COLLECTOR_ON = 512,  /* + registry index */
	OPT_COLLECTOR_OFF = 768, /* + registry index */
	OPT_COLLECTOR_FLAG = 1024, /* + registry_flag() index */
};

static const struct option fixed_options[] = {
	{ "web.listen-address", required_argument, NULL, OPT_LISTEN },
	{ "web.telemetry-path", required_argument, NULL, OPT_TELEMETRY },
	{ "web.config.file", required_argument, NULL, OPT_WEB_CONFIG },
	{ "web.max-requests", required_argument, NULL, OPT_MAX_REQUESTS },
	{ "web.max-connections", required_argument, NULL, OPT_MAX_CONNECTIONS },
	{ "web.max-connections-per-ip", required_argument, NULL, OPT_MAX_CONNECTIONS_PER_IP },
	{ "web.connection-timeout", required_argument, NULL, OPT_CONNECTION_TIMEOUT },
	{ "security.user", required_argument, NULL, OPT_USER },
	{ "no-security.drop-privileges", no_argument, NULL, OPT_NO_DROP },
	{ "security.seccomp", no_argument, NULL, OPT_SECCOMP },
	{ "no-security.seccomp", no_argument, NULL, OPT_NO_SECCOMP },
	{ "config.file", required_argument, NULL, OPT_CONFIG },
	{ "scan.min-interval", required_argument, NULL, OPT_SCAN_MIN_INTERVAL },
	{ "scan.max-cgroups", required_argument, NULL, OPT_MAX_CGROUPS },
	{ "scan.max-cgroups-per-owner", required_argument, NULL, OPT_MAX_CGROUPS_PER_OWNER },
	{ "scan.max-mounts", required_argument, NULL, OPT_MAX_MOUNTS },
	{ "scan.max-mountinfo-bytes", required_argument, NULL, OPT_MAX_MOUNTINFO_BYTES },
	{ "scan.max-overlay-layers", required_argument, NULL, OPT_MAX_OVERLAY_LAYERS },
	{ "web.max-body-bytes", required_argument, NULL, OPT_MAX_BODY_BYTES },
	{ "path.cgroupfs", required_argument, NULL, OPT_CGROUPFS },
	{ "path.procfs", required_argument, NULL, OPT_PROCFS },
	{ "collector.cachestat.fs-types-exclude", required_argument, NULL, OPT_FS_TYPES_EXCLUDE },
	{ "cachestat.method", required_argument, NULL, OPT_METHOD },
	{ "cachestat.mincore.max-pages-per-file", required_argument, NULL, OPT_MINCORE_PAGES_FILE },
	{ "cachestat.mincore.max-pages-per-scan", required_argument, NULL, OPT_MINCORE_PAGES_SCAN },
	{ "once", no_argument, NULL, OPT_ONCE },
	{ "format", required_argument, NULL, OPT_FORMAT },
	{ "log.level", required_argument, NULL, OPT_LOG_LEVEL },
	{ "log.format", required_argument, NULL, OPT_LOG_FORMAT },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ "help", no_argument, NULL, 'h' },
};

/* The fixed flags, then --collector.NAME and --no-collector.NAME of every collector. */
static const struct option *flag_table(void)
{
	static struct option opts[ELEMENTSOF(fixed_options) + 2 * COLLECTORS_MAX + REGISTRY_FLAGS_MAX + 1];
	static char names[2 * COLLECTORS_MAX][96];
	size_t n = ELEMENTSOF(fixed_options);

	memcpy(opts, fixed_options, sizeof(fixed_options));
	for (size_t i = 0; i < registry_count(); i++) {
		snprintf(names[2 * i], sizeof(names[0]), "collector.%s", registry_get(i)->name);
		snprintf(names[2 * i + 1], sizeof(names[0]), "no-collector.%s", registry_get(i)->name);
		opts[n++] = (struct option){ names[2 * i], no_argument, NULL, OPT_COLLECTOR_ON + (int)i };
		opts[n++] = (struct option){ names[2 * i + 1], no_argument, NULL,
					     OPT_COLLECTOR_OFF + (int)i };
	}
	for (size_t i = 0; i < registry_flag_count(); i++)
		opts[n++] = (struct option){ registry_flag(i)->name, required_argument, NULL,
					     OPT_COLLECTOR_FLAG + (int)i };
	opts[n] = (struct option){ 0 };
	return opts;
}

/* A decimal count from min to max for flag; prints why not and returns -EINVAL. */
static int parse_count_max(const char *flag, const char *s, unsigned min, unsigned max,
			   unsigned *ret)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v < min || v > max) {
		fprintf(stderr, "%s: want a whole number from %u to %u, not \"%s\"\n", flag, min, max, s);
		return -EINVAL;
	}
	*ret = (unsigned)v;
	return 0;
}

/* A decimal count from min to 1000000 for flag. */
static int parse_count(const char *flag, const char *s, unsigned min, unsigned *ret)
{
	return parse_count_max(flag, s, min, 1000000, ret);
}

/* A count of pages from 1 to 2^40 (4 PiB at 4 KiB) for flag; prints why not, -EINVAL. */
static int parse_pages(const char *flag, const char *s, uint64_t *ret)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v < 1 || v > (1ULL << 40)) {
		fprintf(stderr, "%s: want a number of pages from 1 to %llu, not \"%s\"\n", flag,
			1ULL << 40, s);
		return -EINVAL;
	}
	*ret = v;
	return 0;
}

/* --cachestat.method and the mincore method's caps; -ENOENT when c is another flag. */
static int parse_method_flag(int c, const char *arg, struct args *a)
{
	switch (c) {
	case OPT_METHOD:
		if (pagecache_method_parse(arg, &a->method) < 0) {
			fprintf(stderr, "--cachestat.method: want auto, cachestat or mincore, not \"%s\"\n",
				arg);
			return -EINVAL;
		}
		return 0;
	case OPT_MINCORE_PAGES_FILE:
		return parse_pages("--cachestat.mincore.max-pages-per-file", arg,
				   &a->mincore_max_pages_per_file);
	case OPT_MINCORE_PAGES_SCAN:
		return parse_pages("--cachestat.mincore.max-pages-per-scan", arg,
				   &a->mincore_max_pages_per_scan);
	default:
		return -ENOENT;
	}
}

/* Seconds from 0 to max for flag; prints why not and returns -EINVAL. */
static int parse_seconds(const char *flag, const char *s, double max, double *ret)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= 0) || v > max) {
		fprintf(stderr, "%s: want seconds from 0 to %g, not \"%s\"\n", flag, max, s);
		return -EINVAL;
	}
	*ret = v;
	return 0;
}

/* The --web.* and --scan.* limits; -ENOENT when c is another flag. */
static int parse_limit_flag(int c, const char *arg, struct args *a)
{
	switch (c) {
	case OPT_MAX_REQUESTS:
		return parse_count("--web.max-requests", arg, 0, &a->max_requests);
	case OPT_MAX_CONNECTIONS:
		return parse_count("--web.max-connections", arg, 1, &a->max_connections);
	case OPT_MAX_CONNECTIONS_PER_IP:
		return parse_count("--web.max-connections-per-ip", arg, 0, &a->max_connections_per_ip);
	case OPT_CONNECTION_TIMEOUT:
		return parse_count("--web.connection-timeout", arg, 1, &a->connection_timeout);
	case OPT_SCAN_MIN_INTERVAL:
		return parse_seconds("--scan.min-interval", arg, 3600, &a->scan_min_interval);
	case OPT_MAX_CGROUPS:
		return parse_count("--scan.max-cgroups", arg, 1, &a->max_cgroups);
	case OPT_MAX_CGROUPS_PER_OWNER:
		return parse_count("--scan.max-cgroups-per-owner", arg, 1, &a->max_cgroups_per_owner);
	case OPT_MAX_MOUNTS:
		return parse_count("--scan.max-mounts", arg, 1, &a->max_mounts);
	case OPT_MAX_MOUNTINFO_BYTES:
		/* at most 1 GiB: a table is read into memory whole */
		return parse_count_max("--scan.max-mountinfo-bytes", arg, 4096, 1u << 30,
				       &a->max_mountinfo_bytes);
	case OPT_MAX_OVERLAY_LAYERS:
		return parse_count_max("--scan.max-overlay-layers", arg, 1, 4096, &a->max_overlay_layers);
	case OPT_MAX_BODY_BYTES:
		/* room for the exporter's own families; at most 1 GiB */
		return parse_count_max("--web.max-body-bytes", arg, RENDER_MIN_MAX_BYTES, 1u << 30,
				       &a->max_body_bytes);
	default:
		return -ENOENT;
	}
}

/* --[no-]collector.NAME; -ENOENT when c is another flag. */
static int parse_collector_flag(int c, struct args *a)
{
	size_t n = registry_count();

	if (c >= OPT_COLLECTOR_OFF && c < OPT_COLLECTOR_OFF + (int)n)
		a->enable[c - OPT_COLLECTOR_OFF] = false;
	else if (c >= OPT_COLLECTOR_ON && c < OPT_COLLECTOR_ON + (int)n)
		a->enable[c - OPT_COLLECTOR_ON] = true;
	else
		return -ENOENT;
	return 0;
}

static int parse_format(const char *arg, struct args *a)
{
	a->format_given = true;
	if (strcmp(arg, "text") == 0)
		a->format = FORMAT_TEXT;
	else if (strcmp(arg, "json") == 0)
		a->format = FORMAT_JSON;
	else {
		fprintf(stderr, "--format: want text or json, not \"%s\"\n", arg);
		return -EINVAL;
	}
	return 0;
}

/* Flags that set a string or a switch; -ENOENT when c is another flag. */
static int parse_plain_flag(int c, const char *arg, struct args *a)
{
	switch (c) {
	case OPT_LISTEN:
		a->listen[a->n_listen++] = arg;
		return 0;
	case OPT_TELEMETRY:
		a->telemetry_path = arg;
		return 0;
	case OPT_WEB_CONFIG:
		a->web_config_file = arg;
		return 0;
	case OPT_CONFIG:
		a->config_file = arg;
		return 0;
	case OPT_USER:
		a->user = arg;
		return 0;
	case OPT_NO_DROP:
		a->drop_privileges = false;
		return 0;
	case OPT_SECCOMP:
		a->seccomp = true;
		return 0;
	case OPT_NO_SECCOMP:
		a->seccomp = false;
		return 0;
	case OPT_CGROUPFS:
		a->cgroupfs = arg;
		a->cgroupfs_given = true;
		return 0;
	case OPT_PROCFS:
		a->procfs = arg;
		return 0;
	case OPT_FS_TYPES_EXCLUDE:
		a->fs_types_exclude = arg;
		return 0;
	case OPT_ONCE:
		a->once = true;
		return 0;
	default:
		return -ENOENT;
	}
}

/*
 * The version, which cachestat(2) forms the running kernel serves (the probe's answer), and
 * the method --cachestat.method (as given before --version, else auto) would measure with.
 */
static void print_version(const struct args *a)
{
	struct pagecache pc;
	int r = pagecache_probe_default(&pc);
	enum pagecache_abi used = pagecache_select(a->method, pc.abi, r);

	printf("cachestat_exporter version %s (revision %s)\n", meta.version, meta.revision);
	if (r < 0)
		printf("kernel cachestat: none (probe failed: %s)\n", strerror(-r));
	else
		printf("kernel cachestat: %s\n", pagecache_abi_name(pc.abi));
	printf("page cache method: %s\n",
	       used == PAGECACHE_ABI_MINCORE ? "mincore" : used == PAGECACHE_ABI_NONE ? "none" : "cachestat");
}

/* One flag. Returns 0, 1 when the program should exit with success (help, version), -EINVAL. */
static int parse_flag(int c, const char *arg, struct args *a)
{
	int r;

	switch (c) {
	case OPT_FORMAT:
		return parse_format(arg, a);
	case OPT_LOG_LEVEL:
		if (log_set_level(arg) < 0) {
			fprintf(stderr, "--log.level: want debug, info, warn or error\n");
			return -EINVAL;
		}
		return 0;
	case OPT_LOG_FORMAT:
		if (log_set_format(arg) < 0) {
			fprintf(stderr, "--log.format: want logfmt or json\n");
			return -EINVAL;
		}
		return 0;
	case OPT_VERSION:
		print_version(a);
		return 1;
	case 'h':
		usage(stdout);
		return 1;
	}
	r = parse_plain_flag(c, arg, a);
	if (r == -ENOENT)
		r = parse_limit_flag(c, arg, a);
	if (r == -ENOENT)
		r = parse_method_flag(c, arg, a);
	if (r == -ENOENT)
		r = parse_collector_flag(c, a);
	if (r == -ENOENT && c >= OPT_COLLECTOR_FLAG && registry_flag((size_t)(c - OPT_COLLECTOR_FLAG)))
		r = registry_flag((size_t)(c - OPT_COLLECTOR_FLAG))->parse(arg);
	if (r == -ENOENT) {
		fprintf(stderr, "unknown flag; see --help\n");
		return -EINVAL;
	}
	return r;
}

/* --collector.cachestat.fs-types-exclude compiles, as the collectors will compile it. */
static int check_fs_types_exclude(const char *regex)
{
	char why[128];
	regex_t re;
	int r;

	if (!regex || !*regex)
		return 0;
	r = regcomp(&re, regex, REG_EXTENDED | REG_NOSUB);
	if (r == 0) {
		regfree(&re);
		return 0;
	}
	regerror(r, &re, why, sizeof(why));
	fprintf(stderr, "--collector.cachestat.fs-types-exclude: \"%s\" is not an extended regular expression: %s\n",
		regex, why);
	return -EINVAL;
}

/*
 * A --path.cgroupfs that names a directory must be a cgroup tree (its cgroup.procs there): a
 * wrong path would serve an empty scrape that looks like an idle node.
 */
static int check_cgroupfs(const struct args *a)
{
	char procs[PATH_MAX];
	struct stat st;

	if (!a->cgroupfs_given || a->cgroupfs[0] != '/')
		return 0; /* a keyword (memory_hierarchy) or the default, chosen at start */
	if (stat(a->cgroupfs, &st) < 0) {
		fprintf(stderr, "--path.cgroupfs=%s: %s; the cgroup mount is usually /sys/fs/cgroup (see /proc/mounts)\n",
			a->cgroupfs, strerror(errno));
		return -EINVAL;
	}
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", a->cgroupfs);
	if (!S_ISDIR(st.st_mode) || access(procs, F_OK) < 0) {
		fprintf(stderr, "--path.cgroupfs=%s: not a cgroup directory (no cgroup.procs in it); the cgroup mount is usually /sys/fs/cgroup (see /proc/mounts)\n",
			a->cgroupfs);
		return -EINVAL;
	}
	return 0;
}

/* What no single flag can tell. */
static int check_args(int argc, char **argv, struct args *a)
{
	if (optind < argc) {
		fprintf(stderr, "unexpected argument \"%s\"; see --help\n", argv[optind]);
		return -EINVAL;
	}
	if (a->format_given && !a->once) {
		fprintf(stderr, "--format applies to --once only\n");
		return -EINVAL;
	}
	if (a->n_listen == 0)
		a->listen[a->n_listen++] = DEFAULT_LISTEN;
	if (check_fs_types_exclude(a->fs_types_exclude) < 0 || check_cgroupfs(a) < 0)
		return -EINVAL;
	return 0;
}

/* Returns 0, 1 when the program should exit with success (help, version), -EINVAL, -ENOMEM. */
static int parse_args(int argc, char **argv, struct args *a)
{
	const struct option *opts = flag_table();
	int c, r;

	a->listen = calloc((size_t)argc + 1, sizeof(*a->listen));
	if (!a->listen)
		return -ENOMEM;
	opterr = 0; /* one line of ours: getopt's and the whole usage would flood a journal */
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		if (c == '?' || c == ':') {
			fprintf(stderr, "%s: %s; see --help\n", argv[optind - 1],
				c == ':' ? "this flag needs a value" : "unknown flag");
			return -EINVAL;
		}
		r = parse_flag(c, optarg, a);
		if (r != 0)
			return r;
	}
	return check_args(argc, argv, a);
}

/* Logs what sandbox_drop() kept and what it could not. */
static void log_privs(const struct args *a, const struct sandbox_result *res)
{
	char kept[128] = "", missing[128] = "";

	for (unsigned i = 0; i < sandbox_n_caps; i++) {
		char *list = res->kept & (1u << i) ? kept : missing;

		if (!(res->kept & (1u << i)) && !(res->missing & (1u << i)))
			continue;
		snprintf(list + strlen(list), sizeof(kept) - strlen(list), "%s%s",
			 list[0] ? "," : "", sandbox_caps[i].name);
	}
	if (res->changed_user)
		log_info("privileges dropped\tprocess=scanner\tcapabilities_kept=%s\tuser=%s",
			 kept[0] ? kept : "none", res->user);
	else
		log_info("privileges dropped\tprocess=scanner\tcapabilities_kept=%s",
			 kept[0] ? kept : "none");
	if (missing[0])
		log_info("capabilities not held; some files may be skipped\tcapabilities_missing=%s",
			 missing);
	if (res->stayed_root)
		log_info("running as root: without CAP_SETUID and CAP_SETGID the uid cannot change"
			 "\tuser=%s", a->user ? a->user : sandbox_default_user());
}

/*
 * Once the sockets are bound and before any thread starts: drop to the capabilities the scan
 * needs (and to --security.user when root), then the scanner's seccomp filter.
 */
static int after_bind(const struct args *a)
{
	struct sandbox_result res;
	_cleanup_free_ char *err = NULL;
	int r;

	if (a->drop_privileges) {
		r = sandbox_drop(a->user ? a->user : sandbox_default_user(), &res, &err);
		if (r < 0) {
			log_error("cannot drop privileges\terr=%s", err ? err : strerror(-r));
			return r;
		}
		log_privs(a, &res);
	} else {
		log_warn("--no-security.drop-privileges: keeping every privilege");
	}
	if (a->seccomp) {
		r = sandbox_seccomp(&err);
		if (r < 0) {
			log_error("cannot install the seccomp filter\tprocess=scanner\terr=%s",
				  err ? err : strerror(-r));
			return r;
		}
		log_info("seccomp filter installed\tprocess=scanner");
	}
	return 0;
}

/* In the HTTP process, its capabilities gone, before its threads start: its own filter. */
static int http_process_filter(void *userdata)
{
	const struct args *a = userdata;
	_cleanup_free_ char *err = NULL;
	int r;

	if (!a->seccomp)
		return 0;
	r = sandbox_seccomp_http(&err);
	if (r < 0)
		log_error("cannot install the seccomp filter\tprocess=http\terr=%s",
			  err ? err : strerror(-r));
	return r;
}

/*
 * Mistakes that leave a config entry doing nothing, at load: a match that no cgroup label can
 * meet (every label starts with "/"), a path that is not there (a glob may match nothing yet).
 * Warnings, not errors: a path may appear later, and the rest of the config works.
 */
static void warn_config(const struct config *cfg, const char *file)
{
	struct stat st;

	for (size_t i = 0; i < cfg->n_cgroups; i++) {
		const struct config_cgroup *g = &cfg->cgroups[i];

		/* FNM_PATHNAME: only a literal "/" meets a label's first "/" */
		if (g->match[0] != '/')
			log_warn("config: this match cannot meet any cgroup: labels start with \"/\""
				 "\tfile=%s\tkey=cgroups[%zu].match\tmatch=%s\tdid_you_mean=/%s",
				 file, i, g->match, g->match);
		for (size_t j = 0; j < g->n_paths; j++)
			if (!config_path_is_glob(g->paths[j]) && stat(g->paths[j], &st) < 0)
				log_warn("config: a path that cannot be read counts nothing"
					 "\tfile=%s\tkey=cgroups[%zu].paths[%zu]\tpath=%s\terr=%s",
					 file, i, j, g->paths[j], strerror(errno));
	}
}

/* Loads the config (the defaults without a path); *ret_error says why not (caller frees). */
static int load_config(const char *path, struct config **ret, char **ret_error)
{
	int r;

	*ret_error = NULL;
	if (!path) {
		*ret = config_new_default();
		return *ret ? 0 : -ENOMEM;
	}
	r = config_load(path, ret, ret_error);
	if (r < 0 && !*ret_error && asprintf(ret_error, "%s: %s", path, strerror(-r)) < 0)
		*ret_error = NULL;
	if (r == 0)
		warn_config(*ret, path);
	return r;
}

/*
 * One scan to stdout. Returns 0, -errno when no report could be printed, or -EAGAIN after
 * printing one in which a collector failed: a person or a script running it by hand should
 * not have to read the success series to learn that.
 */
static int run_once(struct scan_engine *c, enum format format, size_t max_bytes)
{
	_cleanup_(snapshot_unrefp) struct snapshot *snap = NULL;
	bool failed = false, cut = false;
	int r;

	r = scan_engine_run(c, &snap);
	if (r < 0) {
		log_error("scan failed\terr=%s", strerror(-r));
		return r;
	}
	if (snap->problem)
		log_warn("scan problem\tproblem=%s", snap->problem);
	scheduler_log_scan_notes(snap);
	for (size_t i = 0; i < registry_count(); i++)
		failed |= snap->collectors[i].reported && !snap->collectors[i].success;
	r = format == FORMAT_JSON ? render_json_limited(stdout, snap, &meta, max_bytes, 0, &cut)
				  : render_text_limited(stdout, snap, &meta, max_bytes, 0, &cut);
	if (cut)
		log_warn("body cut at --web.max-body-bytes; the series past it are left out"
			 "\tmax_body_bytes=%zu", max_bytes);
	if (fflush(stdout) != 0 && r == 0)
		r = -EIO;
	if (r == 0 && failed) {
		log_error("a collector failed; the report above is incomplete");
		r = -EAGAIN;
	}
	return r;
}

/* SIGHUP: the config file again; a bad one keeps the running config. Counted in sh. */
static void reload_config(struct scan_engine *c, const struct args *a,
			  struct selfmetrics_shared *sh)
{
	_cleanup_free_ char *err = NULL;
	struct config *cfg;

	if (!a->config_file) {
		log_info("SIGHUP: no --config.file to reload");
		return;
	}
	if (load_config(a->config_file, &cfg, &err) < 0) {
		log_warn("config reload failed, keeping the running config\tfile=%s\terr=%s",
			 a->config_file, err ? err : "out of memory");
		selfmetrics_shared_config_loaded(sh, false);
		return;
	}
	scan_engine_set_config(c, cfg);
	selfmetrics_shared_config_loaded(sh, true);
	log_info("config reloaded\tfile=%s", a->config_file);
}

/*
 * Blocks the signals before any thread starts, so that only the main thread's sigwaitinfo()
 * sees them, in the scanner and in the HTTP process.
 */
static void block_signals(void)
{
	sigset_t set;

	supervise_signals(&set);
	sigaddset(&set, SUPERVISE_RETIRE_SIGNAL);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
}

/* Whether this process was started under a seccomp filter (a container runtime's, systemd's). */
static bool started_under_seccomp(void)
{
	_cleanup_free_ char *buf = NULL;
	const char *p;
	size_t len;

	if (read_file_at(AT_FDCWD, "/proc/self/status", &buf, &len) < 0)
		return false;
	p = strstr(buf, "\nSeccomp:");
	return p && strtol(p + strlen("\nSeccomp:"), NULL, 10) > 0;
}

/* Which cachestat(2) the kernel has and which method measures the files, said in the log. */
static void probe_cachestat(const struct args *a, struct pagecache *ret)
{
	int cachestat = registry_find("cachestat");
	enum pagecache_abi probed;
	int r;

	r = pagecache_probe_default(ret);
	if (r < 0)
		log_warn("cachestat probe failed; assuming no cachestat\terr=%s", strerror(-r));
	probed = ret->abi;
	ret->abi = pagecache_select(a->method, probed, r);
	ret->mincore_max_pages_per_file = a->mincore_max_pages_per_file;
	ret->mincore_max_pages_per_scan = a->mincore_max_pages_per_scan;
	if (ret->abi == PAGECACHE_ABI_MINCORE) {
		log_info("page cache measured with mincore(2): cached bytes only\tcachestat=%s"
			 "\tmethod=%s\tmax_pages_per_file=%" PRIu64 "\tmax_pages_per_scan=%" PRIu64,
			 pagecache_abi_name(probed),
			 a->method == PAGECACHE_METHOD_MINCORE ? "mincore" : "auto",
			 a->mincore_max_pages_per_file, a->mincore_max_pages_per_scan);
		return;
	}
	if (ret->abi == PAGECACHE_ABI_NONE && cachestat >= 0 && a->enable[cachestat] &&
	    started_under_seccomp())
		log_warn("no cachestat(2): the kernel lacks it, or the seccomp filter this process was "
			 "started under (a container runtime's or systemd's) refuses it; serving "
			 "memory.stat metrics only");
	else if (ret->abi == PAGECACHE_ABI_NONE && cachestat >= 0 && a->enable[cachestat])
		log_warn("this kernel has no cachestat(2): serving memory.stat metrics only");
	else
		log_info("cachestat probed\tabi=%s", pagecache_abi_name(ret->abi));
}

/* Which cgroup tree to walk (v2, or the v1 memory hierarchy on a hybrid host), into *co. */
static int resolve_cgroup_root(struct args *a, struct collector_options *co)
{
	struct cgroups_root root;

	if (cgroups_resolve_root(a->cgroupfs, a->cgroupfs_given, &root) < 0)
		return -ENOMEM;
	if (root.note)
		log_msg(root.note_warn ? LOG_LEVEL_WARN : LOG_LEVEL_INFO,
			"cgroup tree chosen\tcgroupfs=%s\treason=%s", root.path, root.note);
	a->cgroupfs_resolved = TAKE_PTR(root.path);
	*co = (struct collector_options){ .cgroupfs = a->cgroupfs_resolved, .procfs = a->procfs,
					  .memory_v1 = root.layout == CGROUPS_V1_MEMORY,
					  .fs_types_exclude = a->fs_types_exclude,
					  .keep_listings = !a->once,
					  .max_cgroups = a->max_cgroups,
					  .max_cgroups_per_owner = a->max_cgroups_per_owner,
					  .mounts = { .max_mounts = a->max_mounts,
						      .max_bytes = a->max_mountinfo_bytes,
						      .max_layers = a->max_overlay_layers } };
	cgroups_root_done(&root);
	return 0;
}

/*
 * --log.level=debug: a line per skipped file, rate limited by skiplog. The errno's name says
 * which refusal it was (EACCES: a permission check on the file or /proc/PID; EPERM: ptrace
 * access or cachestat(2) itself).
 */
static void log_skip(const struct skiplog_event *ev, uint64_t suppressed)
{
	if (!log_enabled(LOG_LEVEL_DEBUG))
		return;
	if (ev->summary) {
		log_debug("more files skipped than logged in this scan\treason=%s\tsuppressed=%" PRIu64,
			  skip_reason_name(ev->reason), suppressed);
		return;
	}
	/* comm, cgroup and file are a tenant's: values of fixed keys, never fields of their own */
	log_debug("file skipped\treason=%s\terrno=%s\terr=%s\tcall=%s\tpid=%d\tcomm=%s\tcgroup=%s"
		  "\tfile=%s\tsuppressed=%" PRIu64,
		  skip_reason_name(ev->reason), ev->err > 0 ? strerrorname_np(ev->err) ?: "?" : "-",
		  ev->err > 0 ? strerror(ev->err) : "-", ev->call ? ev->call : "-", (int)ev->pid,
		  ev->comm ? ev->comm : "-", ev->cgroup ? ev->cgroup : "-", ev->file ? ev->file : "-",
		  suppressed);
}

/*
 * What a scrape will carry, said once at start, so that whoever budgets a
 * fleet's series reads it in the log rather than in the first scrape.
 */
/* Collectors whose describe() the start line carries (there are fewer). */
#define LOG_BUDGET_FIELDS 16

static void log_budget(const struct args *a, const struct config *cfg)
{
	char names[512] = "", what[LOG_BUDGET_FIELDS][384], interval[32];
	const char *fields[2 * (LOG_BUDGET_FIELDS + 2)];
	size_t used = 0, n = 2;

	for (size_t i = 0; i < registry_count(); i++) {
		const struct collector_def *def = registry_get(i);

		if (!a->enable[i])
			continue;
		if (used < sizeof(names))
			used += (size_t)snprintf(names + used, sizeof(names) - used, "%s%s",
						 used ? "," : "", def->name);
		if (!def->describe || n / 2 > LOG_BUDGET_FIELDS)
			continue;
		def->describe(cfg, what[n / 2 - 1], sizeof(what[0]));
		fields[n] = def->name; /* the collector's name is the key: the code's, not an input */
		fields[n + 1] = what[n / 2 - 1];
		n += 2;
	}
	fields[0] = "collectors";
	fields[1] = names;
	/* scan_min_interval_seconds: scrapes within it of a scan share its snapshot (0: none do) */
	snprintf(interval, sizeof(interval), "%g", a->scan_min_interval);
	fields[n] = "scan_min_interval_seconds";
	fields[n + 1] = interval;
	log_fields(LOG_LEVEL_INFO, "will send", fields, n / 2 + 1);
}

/*
 * The collectors that are on but have nothing they can measure on this host, and why, said
 * once at start: their series will be absent, which the log should not leave to a guess.
 */
static void log_unavailable(const struct args *a, struct scan_engine *c)
{
	const char *fields[2 * COLLECTORS_MAX];
	size_t n = 0;

	for (size_t i = 0; i < registry_count(); i++) {
		const char *why = a->enable[i] ? scan_engine_unavailable(c, i) : NULL;

		if (!why)
			continue;
		fields[n++] = registry_get(i)->name; /* the key is the code's, not an input */
		fields[n++] = why;
	}
	if (n > 0)
		log_fields(LOG_LEVEL_INFO,
			   "collectors with nothing to measure on this host: no series, no success",
			   fields, n / 2);
}

/* The config, the cachestat probe and the cgroup mount, into a collector. Logs why not. */
static int make_collector(struct args *a, struct scan_engine **ret)
{
	_cleanup_(config_freep) struct config *cfg = NULL;
	const struct config *cfg_view;
	_cleanup_free_ char *err = NULL;
	struct collector_options co;
	struct pagecache pc;
	int r;

	r = load_config(a->config_file, &cfg, &err);
	if (r < 0) {
		log_error("bad config\tfile=%s\terr=%s", a->config_file ? a->config_file : "-",
			  err ? err : "out of memory");
		return r;
	}
	probe_cachestat(a, &pc);
	r = resolve_cgroup_root(a, &co);
	if (r < 0)
		return r;
	memcpy(co.enable, a->enable, sizeof(co.enable));
	skiplog_set_sink(log_skip); /* the first no_access names, for the warning, at any level */
	cfg_view = cfg; /* the engine's from here on; nothing replaces it before the log below */
	r = scan_engine_new(&co, &pc, TAKE_PTR(cfg), ret);
	if (r < 0) {
		log_error("cannot set up the collector\terr=%s", strerror(-r));
		return r;
	}
	log_budget(a, cfg_view); /* after the collectors' setup: what the activity one attached */
	log_unavailable(a, *ret);
	return 0;
}

struct daemon_ctx {
	struct scan_engine *c;
	const struct args *a;
	struct http_server *srv;
};

static void on_hup(void *userdata)
{
	const struct daemon_ctx *d = userdata;

	reload_config(d->c, d->a, http_shared(d->srv));
}

/* The HTTP processes, until SIGINT or SIGTERM: after the scanner dropped its privileges. */
static int supervise(struct http_server *srv, struct scheduler *sched, struct daemon_ctx *d)
{
	struct privsep_server *ps = NULL;
	struct supervisor *sv = NULL;
	struct supervise_options so;
	int r;

	r = after_bind(d->a);
	if (r < 0)
		return r;
	r = privsep_server_new(sched, &ps);
	if (r < 0)
		return r;
	so = (struct supervise_options){ .http = srv, .ps = ps, .drop_privileges = d->a->drop_privileges,
					 .on_hup = on_hup, .userdata = d };
	r = supervise_start(&so, &sv);
	if (r < 0) {
		log_error("cannot start the HTTP process\terr=%s", strerror(-r));
		privsep_server_free(ps);
		return r;
	}
	log_info("Starting cachestat_exporter\tversion=%s\trevision=%s\tcgroupfs=%s", meta.version,
		 meta.revision, d->a->cgroupfs_resolved);
	for (size_t i = 0; i < d->a->n_listen; i++)
		log_info("Listening on\taddress=%s\ttelemetry_path=%s\ttls=%s\tbasic_auth=%s",
			 d->a->listen[i], d->a->telemetry_path, http_tls(srv) ? "on" : "off",
			 http_basic_auth(srv) ? "on" : "off");
	supervise_run(sv);
	supervise_stop(sv);
	privsep_server_free(ps);
	return 0;
}

/*
 * Serves until SIGINT or SIGTERM. Takes *cp (the scheduler owns the collector). Returns 0, or
 * -errno when the server could not start.
 */
static int run_daemon(struct scan_engine **cp, struct args *a)
{
	_cleanup_(scheduler_freep) struct scheduler *sched = NULL;
	_cleanup_free_ char *err = NULL;
	struct http_server *srv = NULL;
	struct daemon_ctx d = { .c = *cp, .a = a };
	struct http_options ho = {
		.listen_addresses = a->listen,
		.n_listen_addresses = a->n_listen,
		.telemetry_path = a->telemetry_path,
		.web_config_file = a->web_config_file,
		.connection_limit = a->max_connections,
		.connection_timeout = a->connection_timeout,
		.per_ip_limit = a->max_connections_per_ip,
		.max_requests = a->max_requests,
		.after_bind = http_process_filter,
		.after_bind_userdata = a,
		.web_config_watched_elsewhere = true,
	};
	int r;

	r = scheduler_new(*cp, &meta, &sched);
	if (r < 0) {
		log_error("cannot set up the scheduler\terr=%s", strerror(-r));
		return r;
	}
	*cp = NULL;
	scheduler_set_min_interval(sched, a->scan_min_interval);
	scheduler_set_max_body_bytes(sched, a->max_body_bytes);
	r = http_listen(&ho, &srv, &err);
	if (r < 0) {
		log_error("cannot start the HTTP server\terr=%s", err ? err : strerror(-r));
		return r;
	}
	d.srv = srv;
	r = supervise(srv, sched, &d);
	http_stop(srv);
	return r;
}

int main(int argc, char **argv)
{
	_cleanup_(args_done) struct args a = { 0 };
	_cleanup_(scan_engine_freep) struct scan_engine *c = NULL;
	int r;

	args_init(&a);
	r = parse_args(argc, argv, &a);
	if (r != 0)
		return r > 0 ? EXIT_SUCCESS : EXIT_FAILURE;
	block_signals();
	if (make_collector(&a, &c) < 0)
		return EXIT_FAILURE;
	r = a.once ? run_once(c, a.format, a.max_body_bytes) : run_daemon(&c, &a);
	return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
