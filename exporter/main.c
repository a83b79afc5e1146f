/* SPDX-License-Identifier: MIT */
/*
 * cachestat_exporter: flags, config, signals and the wiring of collect, render and http.
 * The daemon never exits on a runtime error; only bad flags or a bad config at start do.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroups.h"
#include "collect.h"
#include "config.h"
#include "http.h"
#include "log.h"
#include "pagecache.h"
#include "privs.h"
#include "render.h"
#include "scheduler.h"
#include "util.h"
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
	const char *procfs;
	bool enable[_COLLECTOR_MAX];
	bool once;
	enum format format;
	unsigned max_requests;
	unsigned max_connections;
	unsigned max_connections_per_ip;
	unsigned connection_timeout;
	const char *user;
	bool drop_privileges;
	bool seccomp;
	double scan_min_interval;
};

static const struct render_meta meta = { .version = CACHESTAT_VERSION,
					 .revision = CACHESTAT_REVISION };

static void usage(FILE *f)
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
		"  --scan.min-interval=SECONDS  scrapes get the latest snapshot at once, and one\n"
		"                             older than this starts a scan for the next ones\n"
		"                             (default 0: every scrape waits for a scan)\n"
		"  --path.cgroupfs=DIR        cgroup v2 mount to walk (default " DEFAULT_CGROUPFS ",\n"
		"                             or where cgroup v2 is mounted on a hybrid host)\n"
		"  --path.procfs=DIR          procfs mount (default /proc)\n"
		"  --[no-]collector.cachestat page cache of the files of each cgroup (default on)\n"
		"  --[no-]collector.memstat   memory.stat and memory.numa_stat counters (default on)\n"
		"  --[no-]collector.perfile   top files per cgroup (default on)\n"
		"  --once                     scan once, print to stdout and exit\n"
		"  --format=text|json         output of --once (default text)\n"
		"  --log.level=LEVEL          debug, info, warn or error (default info)\n"
		"  --security.user=USER       started as root, run as USER once listening\n"
		"                             (default nobody), keeping only the capabilities\n"
		"                             the scan needs\n"
		"  --no-security.drop-privileges  keep every privilege (not recommended)\n"
		"  --security.seccomp         refuse every system call the daemon does not make\n"
		"  --version                  print the version and exit\n"
		"  -h, --help                 this help\n"
		"\n"
		"SIGHUP reloads the config file; a bad file keeps the running config.\n",
		HTTP_DEFAULT_MAX_REQUESTS, HTTP_DEFAULT_CONNECTION_LIMIT, HTTP_DEFAULT_PER_IP_LIMIT,
		HTTP_DEFAULT_CONNECTION_TIMEOUT);
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
	OPT_VERSION,
	OPT_MAX_REQUESTS,
	OPT_MAX_CONNECTIONS,
	OPT_MAX_CONNECTIONS_PER_IP,
	OPT_CONNECTION_TIMEOUT,
	OPT_USER,
	OPT_NO_DROP,
	OPT_SECCOMP,
	OPT_SCAN_MIN_INTERVAL,
	OPT_COLLECTOR_ON = 512,  /* + collector id */
	OPT_COLLECTOR_OFF = 768, /* + collector id */
};

/* A decimal count of at least min for flag; prints why not and returns -EINVAL. */
static int parse_count(const char *flag, const char *s, unsigned min, unsigned *ret)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v < min || v > 1000000) {
		fprintf(stderr, "%s: want a whole number from %u to 1000000, not \"%s\"\n", flag, min, s);
		return -EINVAL;
	}
	*ret = (unsigned)v;
	return 0;
}

/* Returns 0, 1 when the program should exit with success (help, version), -EINVAL. */
static int parse_args(int argc, char **argv, struct args *a)
{
	static const struct option opts[] = {
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
		{ "config.file", required_argument, NULL, OPT_CONFIG },
		{ "scan.min-interval", required_argument, NULL, OPT_SCAN_MIN_INTERVAL },
		{ "path.cgroupfs", required_argument, NULL, OPT_CGROUPFS },
		{ "path.procfs", required_argument, NULL, OPT_PROCFS },
		{ "collector.cachestat", no_argument, NULL, OPT_COLLECTOR_ON + COLLECTOR_CACHESTAT },
		{ "collector.memstat", no_argument, NULL, OPT_COLLECTOR_ON + COLLECTOR_MEMSTAT },
		{ "collector.perfile", no_argument, NULL, OPT_COLLECTOR_ON + COLLECTOR_PERFILE },
		{ "no-collector.cachestat", no_argument, NULL, OPT_COLLECTOR_OFF + COLLECTOR_CACHESTAT },
		{ "no-collector.memstat", no_argument, NULL, OPT_COLLECTOR_OFF + COLLECTOR_MEMSTAT },
		{ "no-collector.perfile", no_argument, NULL, OPT_COLLECTOR_OFF + COLLECTOR_PERFILE },
		{ "once", no_argument, NULL, OPT_ONCE },
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "log.level", required_argument, NULL, OPT_LOG_LEVEL },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	bool format_given = false;
	int c;

	a->listen = calloc((size_t)argc + 1, sizeof(*a->listen));
	if (!a->listen)
		return -ENOMEM;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case OPT_LISTEN:
			a->listen[a->n_listen++] = optarg;
			break;
		case OPT_TELEMETRY:
			a->telemetry_path = optarg;
			break;
		case OPT_WEB_CONFIG:
			a->web_config_file = optarg;
			break;
		case OPT_CONFIG:
			a->config_file = optarg;
			break;
		case OPT_MAX_REQUESTS:
			if (parse_count("--web.max-requests", optarg, 0, &a->max_requests) < 0)
				return -EINVAL;
			break;
		case OPT_MAX_CONNECTIONS:
			if (parse_count("--web.max-connections", optarg, 1, &a->max_connections) < 0)
				return -EINVAL;
			break;
		case OPT_MAX_CONNECTIONS_PER_IP:
			if (parse_count("--web.max-connections-per-ip", optarg, 0,
					&a->max_connections_per_ip) < 0)
				return -EINVAL;
			break;
		case OPT_CONNECTION_TIMEOUT:
			if (parse_count("--web.connection-timeout", optarg, 1, &a->connection_timeout) < 0)
				return -EINVAL;
			break;
		case OPT_USER:
			a->user = optarg;
			break;
		case OPT_NO_DROP:
			a->drop_privileges = false;
			break;
		case OPT_SECCOMP:
			a->seccomp = true;
			break;
		case OPT_SCAN_MIN_INTERVAL: {
			char *end;

			errno = 0;
			a->scan_min_interval = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(a->scan_min_interval >= 0) ||
			    a->scan_min_interval > 3600) {
				fprintf(stderr, "--scan.min-interval: want seconds from 0 to 3600\n");
				return -EINVAL;
			}
			break;
		}
		case OPT_CGROUPFS:
			a->cgroupfs = optarg;
			a->cgroupfs_given = true;
			break;
		case OPT_PROCFS:
			a->procfs = optarg;
			break;
		case OPT_ONCE:
			a->once = true;
			break;
		case OPT_FORMAT:
			format_given = true;
			if (strcmp(optarg, "text") == 0)
				a->format = FORMAT_TEXT;
			else if (strcmp(optarg, "json") == 0)
				a->format = FORMAT_JSON;
			else {
				fprintf(stderr, "--format: want text or json, not \"%s\"\n", optarg);
				return -EINVAL;
			}
			break;
		case OPT_LOG_LEVEL:
			if (log_set_level(optarg) < 0) {
				fprintf(stderr, "--log.level: want debug, info, warn or error\n");
				return -EINVAL;
			}
			break;
		case OPT_VERSION:
			printf("cachestat_exporter version %s (revision %s)\n", meta.version,
			       meta.revision);
			return 1;
		case 'h':
			usage(stdout);
			return 1;
		default:
			if (c >= OPT_COLLECTOR_OFF && c < OPT_COLLECTOR_OFF + _COLLECTOR_MAX)
				a->enable[c - OPT_COLLECTOR_OFF] = false;
			else if (c >= OPT_COLLECTOR_ON && c < OPT_COLLECTOR_ON + _COLLECTOR_MAX)
				a->enable[c - OPT_COLLECTOR_ON] = true;
			else {
				usage(stderr);
				return -EINVAL;
			}
		}
	}
	if (optind < argc) {
		fprintf(stderr, "unexpected argument \"%s\"; see --help\n", argv[optind]);
		return -EINVAL;
	}
	if (format_given && !a->once) {
		fprintf(stderr, "--format applies to --once only\n");
		return -EINVAL;
	}
	if (a->n_listen == 0)
		a->listen[a->n_listen++] = DEFAULT_LISTEN;
	return 0;
}

/*
 * On a hybrid host /sys/fs/cgroup is a tmpfs of v1 hierarchies and cgroup v2 lives elsewhere
 * (often /sys/fs/cgroup/unified): when the flag was not given, ask libcgroup where.
 */
static char *resolve_cgroupfs(const struct args *a)
{
	_cleanup_close_ int fd = -1;
	char *found = NULL;

	fd = open(a->cgroupfs, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0 && cgroups_is_v2(fd))
		return strdup(a->cgroupfs);
	if (a->cgroupfs_given) {
		log_warn("%s is not a cgroup v2 mount; walking it anyway", a->cgroupfs);
		return strdup(a->cgroupfs);
	}
	if (cgroups_find_v2_mount(&found) == 0) {
		log_info("%s is not cgroup v2; using the cgroup v2 mount at %s", a->cgroupfs, found);
		return found;
	}
	log_warn("no cgroup v2 mount found; walking %s", a->cgroupfs);
	return strdup(a->cgroupfs);
}

/*
 * Once the sockets are bound and before any thread starts: drop to the capabilities the scan
 * needs (and to --security.user when root), then the optional seccomp filter.
 */
static int after_bind(void *userdata)
{
	const struct args *a = userdata;
	struct privs_result res;
	_cleanup_free_ char *err = NULL;
	char kept[128] = "", missing[128] = "";
	int r;

	if (a->drop_privileges) {
		r = privs_drop(a->user, &res, &err);
		if (r < 0) {
			log_error("dropping privileges: %s", err ? err : strerror(-r));
			return r;
		}
		for (unsigned i = 0; i < privs_n_caps; i++) {
			char *list = res.kept & (1u << i) ? kept : missing;

			if (!(res.kept & (1u << i)) && !(res.missing & (1u << i)))
				continue;
			snprintf(list + strlen(list), sizeof(kept) - strlen(list), "%s%s",
				 list[0] ? "," : "", privs_caps[i].name);
		}
		log_info("privileges dropped%s%s; capabilities kept: %s", res.changed_user ? ", running as " : "",
			 res.changed_user ? a->user : "", kept[0] ? kept : "none");
		if (missing[0])
			log_info("capabilities not held (some files may be skipped): %s", missing);
		if (res.stayed_root)
			log_info("running as root: without CAP_SETUID and CAP_SETGID the uid cannot "
				 "change to %s", a->user);
	} else {
		log_warn("--no-security.drop-privileges: keeping every privilege");
	}
	if (a->seccomp) {
		r = privs_seccomp(&err);
		if (r < 0) {
			log_error("%s", err ? err : strerror(-r));
			return r;
		}
		log_info("seccomp filter installed");
	}
	return 0;
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
	return r;
}

/*
 * One scan to stdout. Returns 0, -errno when no report could be printed, or -EAGAIN after
 * printing one in which a collector failed: a person or a script running it by hand should
 * not have to read the success series to learn that.
 */
static int run_once(struct collector *c, enum format format)
{
	struct snapshot *snap = NULL;
	bool failed = false;
	int r;

	r = collector_scan(c, &snap);
	if (r < 0) {
		log_error("scan failed: %s", strerror(-r));
		return r;
	}
	if (snap->problem)
		log_warn("scan: %s", snap->problem);
	for (int i = 0; i < _COLLECTOR_MAX; i++)
		failed |= snap->collectors[i].reported && !snap->collectors[i].success;
	r = format == FORMAT_JSON ? render_json(stdout, snap, &meta)
				  : render_text(stdout, snap, &meta);
	snapshot_unref(snap);
	if (fflush(stdout) != 0 && r == 0)
		r = -EIO;
	if (r == 0 && failed) {
		log_error("a collector failed; the report above is incomplete");
		r = -EAGAIN;
	}
	return r;
}

/* The main thread waits for signals; the HTTP threads never see them. */
static void serve(struct collector *c, const struct args *a)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	for (;;) {
		int sig = sigwaitinfo(&set, NULL);

		if (sig < 0)
			continue; /* EINTR */
		if (sig == SIGHUP) {
			_cleanup_free_ char *err = NULL;
			struct config *cfg;

			if (!a->config_file) {
				log_info("SIGHUP: no --config.file to reload");
				continue;
			}
			if (load_config(a->config_file, &cfg, &err) < 0) {
				log_warn("config reload failed, keeping the running config: %s",
					 err ? err : "out of memory");
				continue;
			}
			collector_set_config(c, cfg);
			log_info("config reloaded from %s", a->config_file);
			continue;
		}
		log_info("received %s, shutting down", sig == SIGINT ? "SIGINT" : "SIGTERM");
		return;
	}
}

int main(int argc, char **argv)
{
	struct args a = {
		.telemetry_path = "/metrics",
		.cgroupfs = DEFAULT_CGROUPFS,
		.procfs = "/proc",
		.enable = { true, true, true },
		.max_requests = HTTP_DEFAULT_MAX_REQUESTS,
		.max_connections = HTTP_DEFAULT_CONNECTION_LIMIT,
		.max_connections_per_ip = HTTP_DEFAULT_PER_IP_LIMIT,
		.connection_timeout = HTTP_DEFAULT_CONNECTION_TIMEOUT,
		.user = "nobody",
		.drop_privileges = true,
	};
	struct http_options ho;
	struct collector_options co;
	struct collector *c = NULL;
	struct scheduler *sched = NULL;
	struct http_server *srv = NULL;
	struct config *cfg = NULL;
	struct pagecache pc;
	_cleanup_free_ char *cgroupfs = NULL;
	_cleanup_free_ char *err = NULL;
	sigset_t set;
	int r;

	r = parse_args(argc, argv, &a);
	if (r != 0) {
		free(a.listen);
		return r > 0 ? EXIT_SUCCESS : EXIT_FAILURE;
	}

	/* Block the signals before any thread starts, so that only sigwaitinfo() sees them. */
	sigemptyset(&set);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (load_config(a.config_file, &cfg, &err) < 0) {
		log_error("bad config: %s", err ? err : "out of memory");
		goto fail;
	}

	r = pagecache_probe_default(&pc);
	if (r < 0)
		log_warn("cachestat probe failed (%s); assuming no cachestat", strerror(-r));
	if (pc.abi == PAGECACHE_ABI_NONE && a.enable[COLLECTOR_CACHESTAT])
		log_warn("this kernel has no cachestat(2): serving memory.stat metrics only");
	else
		log_info("cachestat ABI: %s", pagecache_abi_name(pc.abi));

	cgroupfs = resolve_cgroupfs(&a);
	if (!cgroupfs)
		goto fail;
	co = (struct collector_options){ .cgroupfs = cgroupfs, .procfs = a.procfs };
	memcpy(co.enable, a.enable, sizeof(co.enable));
	r = collector_new(&co, &pc, TAKE_PTR(cfg), &c);
	if (r < 0) {
		log_error("cannot set up the collector: %s", strerror(-r));
		goto fail;
	}

	if (a.once) {
		r = run_once(c, a.format);
		collector_free(c);
		free(a.listen);
		return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
	}

	ho = (struct http_options){
		.listen_addresses = a.listen,
		.n_listen_addresses = a.n_listen,
		.telemetry_path = a.telemetry_path,
		.web_config_file = a.web_config_file,
		.connection_limit = a.max_connections,
		.connection_timeout = a.connection_timeout,
		.per_ip_limit = a.max_connections_per_ip,
		.max_requests = a.max_requests,
		.after_bind = after_bind,
		.after_bind_userdata = &a,
	};
	r = scheduler_new(c, &meta, &sched); /* takes c */
	if (r < 0) {
		log_error("cannot set up the scheduler: %s", strerror(-r));
		goto fail;
	}
	scheduler_set_min_interval(sched, a.scan_min_interval);
	r = http_start(&ho, sched, &srv, &err);
	if (r < 0) {
		log_error("%s", err ? err : strerror(-r));
		goto fail;
	}
	log_info("cachestat_exporter %s (revision %s) walking %s", meta.version, meta.revision,
		 cgroupfs);
	for (size_t i = 0; i < a.n_listen; i++)
		log_info("listening on %s, metrics at %s", a.listen[i], a.telemetry_path);
	serve(c, &a);
	http_stop(srv);
	scheduler_free(sched);
	free(a.listen);
	return EXIT_SUCCESS;

fail:
	config_free(cfg);
	if (sched)
		scheduler_free(sched);
	else
		collector_free(c);
	free(a.listen);
	return EXIT_FAILURE;
}
