/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "render.h"
#include "util.h"

struct http_server {
	struct MHD_Daemon **daemons;
	size_t n_daemons;
	char *telemetry_path;
	char *landing;
	http_metrics_fn metrics;
	void *userdata;
};

int http_parse_listen_address(const char *addr, char **ret_host, unsigned *ret_port)
{
	const char *colon, *host = addr;
	size_t host_len;
	char *end;
	unsigned long port;

	if (addr[0] == '[') {
		const char *close = strchr(addr, ']');

		if (!close || close[1] != ':')
			return -EINVAL;
		host = addr + 1;
		host_len = (size_t)(close - host);
		colon = close + 1;
	} else {
		colon = strrchr(addr, ':');
		if (!colon)
			return -EINVAL;
		host_len = (size_t)(colon - addr);
		if (memchr(addr, ':', host_len))
			return -EINVAL; /* a bare IPv6 address needs brackets */
	}
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (errno || end == colon + 1 || *end || port == 0 || port > 65535)
		return -EINVAL;
	*ret_host = strndup(host, host_len);
	if (!*ret_host)
		return -ENOMEM;
	*ret_port = (unsigned)port;
	return 0;
}

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned status, const char *type,
			     char *body, size_t len, enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *resp;
	enum MHD_Result r;

	resp = MHD_create_response_from_buffer(len, body, mode);
	if (!resp) {
		if (mode == MHD_RESPMEM_MUST_FREE)
			free(body);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	r = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	return r;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
			      const char *method, const char *version, const char *upload_data,
			      size_t *upload_data_size, void **req_cls)
{
	struct http_server *s = cls;
	static char not_found[] = "404 page not found\n";
	static char bad_method[] = "405 method not allowed\n";
	static char first_call;

	(void)version;
	(void)upload_data;
	if (*req_cls == NULL) {
		/* headers only so far; answer once the request is complete */
		*req_cls = &first_call;
		return MHD_YES;
	}
	if (*upload_data_size != 0) {
		*upload_data_size = 0; /* no body is wanted: drop it */
		return MHD_YES;
	}
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
		return reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain; charset=utf-8",
			     bad_method, sizeof(bad_method) - 1, MHD_RESPMEM_PERSISTENT);

	if (strcmp(url, s->telemetry_path) == 0) {
		char *body = NULL;
		size_t len = 0;
		int r = s->metrics(s->userdata, &body, &len);

		if (r < 0) {
			char msg[128];

			free(body);
			snprintf(msg, sizeof(msg), "500 scan failed: %s\n", strerror(-r));
			return reply(conn, MHD_HTTP_INTERNAL_SERVER_ERROR,
				     "text/plain; charset=utf-8", msg, strlen(msg),
				     MHD_RESPMEM_MUST_COPY);
		}
		return reply(conn, MHD_HTTP_OK, RENDER_TEXT_CONTENT_TYPE, body, len,
			     MHD_RESPMEM_MUST_FREE);
	}
	if (strcmp(url, "/") == 0)
		return reply(conn, MHD_HTTP_OK, "text/html; charset=utf-8", s->landing,
			     strlen(s->landing), MHD_RESPMEM_PERSISTENT);
	return reply(conn, MHD_HTTP_NOT_FOUND, "text/plain; charset=utf-8", not_found,
		     sizeof(not_found) - 1, MHD_RESPMEM_PERSISTENT);
}

static struct MHD_Daemon *start_one(struct http_server *s, const struct http_options *o,
				    const struct sockaddr *sa, unsigned port, unsigned flags)
{
	unsigned base = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION;

	return MHD_start_daemon(base | flags, (uint16_t)port, NULL, NULL, handle, s,
				MHD_OPTION_CONNECTION_LIMIT, o->connection_limit,
				MHD_OPTION_CONNECTION_TIMEOUT, o->connection_timeout,
				sa ? MHD_OPTION_SOCK_ADDR : MHD_OPTION_END, sa, MHD_OPTION_END);
}

static int listen_on(struct http_server *s, const struct http_options *o, const char *addr,
		     char **ret_error)
{
	_cleanup_free_ char *host = NULL;
	struct MHD_Daemon *d = NULL;
	unsigned port;
	int r;

	r = http_parse_listen_address(addr, &host, &port);
	if (r < 0) {
		if (asprintf(ret_error, "invalid listen address \"%s\" (want host:port, [v6]:port or :port)", addr) < 0)
			*ret_error = NULL;
		return r;
	}
	if (host[0] == '\0') {
		/* all interfaces, IPv6 and IPv4 together where the host has IPv6 */
		d = start_one(s, o, NULL, port, MHD_USE_DUAL_STACK);
		if (!d)
			d = start_one(s, o, NULL, port, 0);
	} else {
		struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV };
		struct addrinfo *res = NULL;
		char portstr[8];
		int g;

		snprintf(portstr, sizeof(portstr), "%u", port);
		g = getaddrinfo(host, portstr, &hints, &res);
		if (g != 0) {
			if (asprintf(ret_error, "listen address \"%s\": %s", addr, gai_strerror(g)) < 0)
				*ret_error = NULL;
			return -EINVAL;
		}
		d = start_one(s, o, res->ai_addr, port,
			      res->ai_family == AF_INET6 ? MHD_USE_IPv6 : 0);
		freeaddrinfo(res);
	}
	if (!d) {
		r = errno ? -errno : -EADDRINUSE;
		if (asprintf(ret_error, "cannot listen on \"%s\": %s", addr, strerror(-r)) < 0)
			*ret_error = NULL;
		return r;
	}
	s->daemons[s->n_daemons++] = d;
	return 0;
}

int http_start(const struct http_options *opts, http_metrics_fn metrics, void *userdata,
	       struct http_server **ret, char **ret_error)
{
	struct http_server *s;
	int r;

	*ret_error = NULL;
	if (opts->web_config_file) {
		if (asprintf(ret_error, "--web.config.file: TLS and basic auth are not supported yet") < 0)
			*ret_error = NULL;
		return -EOPNOTSUPP;
	}
	if (opts->telemetry_path[0] != '/' || strcmp(opts->telemetry_path, "/") == 0 ||
	    strpbrk(opts->telemetry_path, "\"<>&")) {
		if (asprintf(ret_error, "--web.telemetry-path must start with / and not be / itself") < 0)
			*ret_error = NULL;
		return -EINVAL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->metrics = metrics;
	s->userdata = userdata;
	s->telemetry_path = strdup(opts->telemetry_path);
	s->daemons = calloc(opts->n_listen_addresses + 1, sizeof(*s->daemons));
	if (!s->telemetry_path || !s->daemons ||
	    asprintf(&s->landing,
		     "<html>\n<head><title>cachestat exporter</title></head>\n<body>\n"
		     "<h1>cachestat exporter</h1>\n"
		     "<p>Page cache of the files of each cgroup, from cachestat(2).</p>\n"
		     "<p><a href=\"%s\">Metrics</a></p>\n</body>\n</html>\n",
		     opts->telemetry_path) < 0) {
		s->landing = NULL;
		http_stop(s);
		return -ENOMEM;
	}
	for (size_t i = 0; i < opts->n_listen_addresses; i++) {
		r = listen_on(s, opts, opts->listen_addresses[i], ret_error);
		if (r < 0) {
			http_stop(s);
			return r;
		}
	}
	*ret = s;
	return 0;
}

void http_stop(struct http_server *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n_daemons; i++)
		MHD_stop_daemon(s->daemons[i]);
	free(s->daemons);
	free(s->telemetry_path);
	free(s->landing);
	free(s);
}
