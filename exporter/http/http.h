/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http: serves the landing page, the telemetry path, and /-/healthy and /-/ready (without
 * basic auth: a kubelet's probe has no password) over libmicrohttpd. It never scans:
 * it asks its source (struct http_source: privsep's client in the daemon) for the shared body
 * of a snapshot and appends the self metrics.
 * Everything about how it listens is in struct http_options: TLS and basic auth (the web
 * config), request and connection limits. GET and HEAD only (405 otherwise), 404 for any
 * other path, 401 without the right login (429 while logins are rate-limited), 503 past
 * max_requests or before a first scan ended in a scrape's time.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire/body.h"

/*
 * Where the scrapes' bodies come from: the scanner process, through the channel's client
 * (http/client.h: privsep_client_source()). The calls mean what the scheduler's
 * scheduler_enqueue(), scheduler_take() and scheduler_wake_all() mean.
 */
struct http_source {
	int (*enqueue)(void *impl, uint64_t budget_ns, bool scan, struct body_waiter *w);
	int (*take)(void *impl, const struct body_waiter *w, struct body **ret,
		    bool *ret_stale);
	void (*wake_all)(void *impl);
	/* cachestat_scans_stuck_total and cachestat_http_restarts_total */
	void (*counters)(void *impl, uint64_t *ret_stuck, uint64_t *ret_restarts);
	/* log lines another process (the scanner's) suppressed as repeats; NULL: none */
	uint64_t (*log_repeats)(void *impl);
	void *impl;
};

struct http_options {
	const char *const *listen_addresses; /* "host:port", "[v6]:port" or ":port" */
	size_t n_listen_addresses;
	const char *telemetry_path;
	/* exporter-toolkit web config (TLS, basic auth), re-read when it or a file it names
	 * changes; NULL serves plain HTTP without auth */
	const char *web_config_file;
	unsigned connection_limit;   /* concurrent connections per listener */
	unsigned connection_timeout; /* seconds of idle before a connection is closed */
	unsigned per_ip_limit;       /* concurrent connections from one IPv4 address or IPv6 /64;
				      * 0: no limit */
	unsigned max_requests;       /* scrapes answered at once, beyond: 503; 0: no limit */
	/* Called once every socket is bound and before any thread starts (privileges are
	 * dropped there); a negative return stops http_serve with that error.
	 * May be NULL. */
	int (*after_bind)(void *userdata);
	void *after_bind_userdata;
	/* The web config is watched by another process, which restarts this one when it
	 * changes (http_web_config_check()): this one never reads files once it serves. */
	bool web_config_watched_elsewhere;
};

#define HTTP_DEFAULT_CONNECTION_LIMIT 1024
#define HTTP_DEFAULT_CONNECTION_TIMEOUT 10
#define HTTP_DEFAULT_PER_IP_LIMIT 16
#define HTTP_DEFAULT_MAX_REQUESTS 40
/* Memory for one connection's request line and headers: beyond it, 431 (or 414). */
#define HTTP_CONNECTION_MEMORY_LIMIT (16 * 1024)
/* Threads serving each listener (epoll): a scrape waiting for a scan holds one. */
#define HTTP_THREAD_POOL_SIZE 8
/* A scrape without X-Prometheus-Scrape-Timeout-Seconds waits as if it said this. */
#define HTTP_DEFAULT_SCRAPE_TIMEOUT 10.0
/* How long /-/ready, before the first scan ended, waits for the scan it starts (the kubelet's
 * probe times out after 1 s by default). */
#define HTTP_READY_BUDGET_NS 500000000ULL
/* Taken off the scrape's timeout, for the answer to reach it in time. */
#define HTTP_SCRAPE_TIMEOUT_MARGIN 0.5
/* glibc malloc arenas (M_ARENA_MAX). */
#define HTTP_MALLOC_ARENAS 2
/* The web config and its files are looked at for changes at most this often. */
#define HTTP_WEB_CONFIG_CHECK_NS 1000000000ULL

struct http_server;

/*
 * A server starts in two steps, the scanner binding and the HTTP process serving: http_listen()
 * checks the options, loads the web config and binds every address, one listener per address
 * (no thread starts); http_serve() opens what the self metrics read in /proc, calls
 * opts->after_bind and starts the listeners' threads, answering from src (copied). Both return
 * 0, or -errno with a message in *ret_error (caller frees) naming the address that failed. opts
 * must outlive the server.
 */
int http_listen(const struct http_options *opts, struct http_server **ret, char **ret_error);
int http_serve(struct http_server *s, const struct http_source *src, char **ret_error);

/* The listening sockets of a server that does not serve yet. Returns how many. */
size_t http_listen_fds(const struct http_server *s, const int **ret);

/*
 * For a server that does not serve: loads the web config again when it or a file it names
 * changed since the last call. Returns true when it did (the next http_serve() uses it); a bad
 * file, or one that switches TLS on or off, is logged once per change and kept out.
 */
bool http_web_config_check(struct http_server *s);

/*
 * Stops accepting connections and waits, at most timeout_ns, for the scrapes in progress to
 * be answered. The listening sockets are closed.
 */
void http_quiesce(struct http_server *s, uint64_t timeout_ns);

void http_stop(struct http_server *s);

/*
 * The page of counters every HTTP process of s shares with the scanner (selfmetrics.h): mapped
 * by http_listen(), before the fork.
 */
struct selfmetrics_shared *http_shared(struct http_server *s);
/* Whether the web config loaded last turns TLS on, and basic auth (for the start log). */
bool http_tls(const struct http_server *s);
bool http_basic_auth(struct http_server *s);

/* Splits "host:port", "[v6]:port" or ":port". Returns 0, or -EINVAL. Caller frees *ret_host. */
int http_parse_listen_address(const char *addr, char **ret_host, unsigned *ret_port);
