/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http: serves the landing page and the telemetry path over libmicrohttpd. It never scans:
 * it asks the scheduler for the shared body of a snapshot and appends the self metrics.
 * Everything about how it listens is in struct http_options: TLS and basic auth (the web
 * config), request and connection limits. GET and HEAD only (405 otherwise), 404 for any
 * other path, 401 without the right login (429 while logins are rate-limited), 503 past
 * max_requests or before a first scan ended in a scrape's time.
 */
#pragma once

#include <stddef.h>

#include "scheduler.h"

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
	 * dropped there); a negative return stops http_start with that error. May be NULL. */
	int (*after_bind)(void *userdata);
	void *after_bind_userdata;
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
/* Taken off the scrape's timeout, for the answer to reach it in time. */
#define HTTP_SCRAPE_TIMEOUT_MARGIN 0.5
/* glibc malloc arenas (M_ARENA_MAX). */
#define HTTP_MALLOC_ARENAS 2
/* The web config and its files are looked at for changes at most this often. */
#define HTTP_WEB_CONFIG_CHECK_NS 1000000000ULL

struct http_server;

/*
 * Starts one listener per address, each with its own threads. Returns 0, or -errno with a
 * message in *ret_error (caller frees) naming the address that failed.
 */
int http_start(const struct http_options *opts, struct scheduler *sched,
	       struct http_server **ret, char **ret_error);

void http_stop(struct http_server *s);

/* Splits "host:port", "[v6]:port" or ":port". Returns 0, or -EINVAL. Caller frees *ret_host. */
int http_parse_listen_address(const char *addr, char **ret_host, unsigned *ret_port);
