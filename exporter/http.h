/* SPDX-License-Identifier: MIT */
/*
 * http: serves the landing page and the telemetry path over libmicrohttpd. It never scans:
 * it asks the metrics callback for a body. Everything about how it listens is in
 * struct http_options, the one place where TLS, basic auth and request limits plug in.
 */
#pragma once

#include <stddef.h>

struct http_options {
	const char *const *listen_addresses; /* "host:port", "[v6]:port" or ":port" */
	size_t n_listen_addresses;
	const char *telemetry_path;
	/* exporter-toolkit web config (TLS, basic auth); not supported yet, must be NULL */
	const char *web_config_file;
	unsigned connection_limit;   /* concurrent connections per listener */
	unsigned connection_timeout; /* seconds of idle before a connection is closed */
};

#define HTTP_DEFAULT_CONNECTION_LIMIT 64
#define HTTP_DEFAULT_CONNECTION_TIMEOUT 30

/*
 * Produces the body of a scrape (text format); *ret_body is malloc()ed and freed by http.
 * Returns 0 or -errno (answered with 500).
 */
typedef int (*http_metrics_fn)(void *userdata, char **ret_body, size_t *ret_len);

struct http_server;

/*
 * Starts one listener per address, each with its own threads. Returns 0, or -errno with a
 * message in *ret_error (caller frees) naming the address that failed.
 */
int http_start(const struct http_options *opts, http_metrics_fn metrics, void *userdata,
	       struct http_server **ret, char **ret_error);

void http_stop(struct http_server *s);

/* Splits "host:port", "[v6]:port" or ":port". Returns 0, or -EINVAL. Caller frees *ret_host. */
int http_parse_listen_address(const char *addr, char **ret_host, unsigned *ret_port);
