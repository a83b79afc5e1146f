/* SPDX-License-Identifier: Apache-2.0 */
#define _GNU_SOURCE
#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <gnutls/gnutls.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>

#include "log.h"
#include "render.h"
#include "util.h"
#include "webconfig.h"

#define HTTP_REALM "cachestat_exporter"

/*
 * What the web config makes of the server: the parsed file and, with TLS, GnuTLS credentials
 * and priorities built from it. Refcounted: every connection holds the state it started with
 * (GnuTLS keeps a pointer to the credentials for the session's life), so that a reload never
 * frees what a running handshake uses.
 */
struct web_state {
	atomic_int refs;
	struct webconfig *wc; /* NULL without --web.config.file */
	gnutls_certificate_credentials_t cred;
	gnutls_priority_t prio;
};

/* What identifies a file's version: a rename over it, a rewrite or a touch changes this. */
struct file_id {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime, ctime;
	int err;
};

struct http_server {
	struct MHD_Daemon **daemons;
	size_t n_daemons;
	char *telemetry_path;
	char *landing;
	http_metrics_fn metrics;
	void *userdata;
	unsigned max_requests;
	atomic_uint in_flight;

	char *web_config_file;
	bool tls;
	pthread_mutex_t lock; /* state, ids, n_ids */
	struct web_state *state;
	struct file_id ids[4]; /* the config, then its cert, key and CA files */
	size_t n_ids;
	atomic_uint_fast64_t next_check_ns;
	atomic_bool reloading;
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

/* ---- web config state ---- */

static void state_put(struct web_state *st)
{
	if (!st || atomic_fetch_sub(&st->refs, 1) != 1)
		return;
	if (st->prio)
		gnutls_priority_deinit(st->prio);
	if (st->cred)
		gnutls_certificate_free_credentials(st->cred);
	webconfig_free(st->wc);
	free(st);
}

static struct web_state *state_get(struct http_server *s)
{
	struct web_state *st;

	pthread_mutex_lock(&s->lock);
	st = s->state;
	atomic_fetch_add(&st->refs, 1);
	pthread_mutex_unlock(&s->lock);
	return st;
}

/*
 * VerifyClientCertIfGiven: a client may come without a certificate, but one it sends must
 * verify against the CA. (gnutls_session_set_verify_cert() would refuse the client without.)
 */
static int verify_if_given(gnutls_session_t session)
{
	unsigned n = 0, status = 0;

	if (!gnutls_certificate_get_peers(session, &n) || n == 0)
		return 0;
	if (gnutls_certificate_verify_peers2(session, &status) < 0 || status != 0)
		return GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR;
	return 0;
}

/* Takes ownership of wc (NULL for none). Returns 0, or -EINVAL with *ret_error. */
static int state_new(struct webconfig *wc, struct web_state **ret, char **ret_error)
{
	struct web_state *st = calloc(1, sizeof(*st));
	const char *where = NULL;
	int e = 0;

	if (!st) {
		webconfig_free(wc);
		return -ENOMEM;
	}
	atomic_init(&st->refs, 1);
	st->wc = wc;
	if (wc && wc->tls) {
		gnutls_datum_t cert = { (unsigned char *)wc->cert.data, (unsigned)wc->cert.len };
		gnutls_datum_t key = { (unsigned char *)wc->key.data, (unsigned)wc->key.len };

		e = gnutls_certificate_allocate_credentials(&st->cred);
		where = "credentials";
		if (e >= 0) {
			e = gnutls_certificate_set_x509_key_mem(st->cred, &cert, &key,
								GNUTLS_X509_FMT_PEM);
			where = "certificate and key";
		}
		if (e >= 0 && wc->client_ca.data) {
			gnutls_datum_t ca = { (unsigned char *)wc->client_ca.data,
					      (unsigned)wc->client_ca.len };

			e = gnutls_certificate_set_x509_trust_mem(st->cred, &ca, GNUTLS_X509_FMT_PEM);
			where = "client CA";
			if (wc->client_auth == WEBCONFIG_VERIFY_CLIENT_CERT_IF_GIVEN)
				gnutls_certificate_set_verify_function(st->cred, verify_if_given);
		}
		if (e >= 0) {
			e = gnutls_priority_init(&st->prio, webconfig_tls_priorities(wc), NULL);
			where = "TLS versions";
		}
	}
	if (e < 0) {
		if (asprintf(ret_error, "TLS %s: %s", where, gnutls_strerror(e)) < 0)
			*ret_error = NULL;
		state_put(st);
		return -EINVAL;
	}
	*ret = st;
	return 0;
}

static void file_id_of(const char *path, struct file_id *ret)
{
	struct stat st;

	*ret = (struct file_id){ 0 };
	if (stat(path, &st) < 0) {
		ret->err = errno;
		return;
	}
	*ret = (struct file_id){ .dev = st.st_dev, .ino = st.st_ino, .size = st.st_size,
				 .mtime = st.st_mtim, .ctime = st.st_ctim };
}

static bool file_id_equal(const struct file_id *a, const struct file_id *b)
{
	return a->err == b->err && a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	       a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec &&
	       a->ctime.tv_sec == b->ctime.tv_sec && a->ctime.tv_nsec == b->ctime.tv_nsec;
}

/* The ids of the config (into ids[0], unless config is NULL) and of the files wc names. */
static size_t collect_ids(const char *config, const struct webconfig *wc, struct file_id ids[4])
{
	const char *files[4] = { NULL };
	size_t n = 1;

	if (config)
		file_id_of(config, &ids[0]);
	if (wc)
		webconfig_files(wc, files);
	for (size_t i = 0; i < 3 && files[i]; i++)
		file_id_of(files[i], &ids[n++]);
	return n;
}

/*
 * Loads the web config into a new state, and the ids of what it read into ids (the config's
 * taken before reading it: a change while it is read is seen at the next check). Returns 0,
 * or -errno with *ret_error.
 */
static int web_load(const char *path, struct web_state **ret, struct file_id ids[4],
		    size_t *ret_n_ids, char **ret_error)
{
	struct webconfig *wc = NULL;
	int r;

	*ret_error = NULL;
	*ret_n_ids = collect_ids(path, NULL, ids);
	r = webconfig_load(path, &wc, ret_error);
	if (r < 0)
		return r;
	*ret_n_ids = collect_ids(NULL, wc, ids);
	return state_new(wc, ret, ret_error);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/*
 * At most once per HTTP_WEB_CONFIG_CHECK_NS, and by one thread at a time: when the web config
 * or a file it names changed, load it. A bad file keeps the running config and is logged once
 * per change; so is a change that would switch TLS on or off, which needs a restart (the
 * listeners are made for one or the other).
 */
static void maybe_reload(struct http_server *s)
{
	struct file_id now[4], seen[4], loaded[4];
	struct web_state *st = NULL, *old;
	size_t n_now, n_seen, n_loaded = 0;
	_cleanup_free_ char *err = NULL;
	uint64_t t = mono_ns();
	bool changed = false, expect = false;
	int r;

	if (!s->web_config_file || t < atomic_load(&s->next_check_ns))
		return;
	if (!atomic_compare_exchange_strong(&s->reloading, &expect, true))
		return;
	atomic_store(&s->next_check_ns, t + HTTP_WEB_CONFIG_CHECK_NS);

	pthread_mutex_lock(&s->lock);
	n_seen = s->n_ids;
	memcpy(seen, s->ids, sizeof(seen));
	pthread_mutex_unlock(&s->lock);
	/* the paths of the running config; a new config may name others, seen after loading */
	{
		struct web_state *cur = state_get(s);

		n_now = collect_ids(s->web_config_file, cur->wc, now);
		state_put(cur);
	}
	changed = n_now != n_seen;
	for (size_t i = 0; i < n_now && !changed; i++)
		changed = !file_id_equal(&now[i], &seen[i]);
	if (!changed)
		goto out;

	/* What failed is not tried again until it changes: keep the ids of this check. */
	r = web_load(s->web_config_file, &st, loaded, &n_loaded, &err);
	if (r == 0 && (st->wc && st->wc->tls) != s->tls) {
		log_warn("web config %s: switching TLS %s needs a restart; keeping the running config",
			 s->web_config_file, s->tls ? "off" : "on");
		state_put(st);
		st = NULL;
	} else if (r < 0) {
		log_warn("web config reload failed, keeping the running config: %s",
			 err ? err : strerror(-r));
	}
	pthread_mutex_lock(&s->lock);
	if (st) {
		memcpy(s->ids, loaded, sizeof(s->ids));
		s->n_ids = n_loaded;
	} else {
		memcpy(s->ids, now, sizeof(s->ids));
		s->n_ids = n_now;
	}
	old = st ? s->state : NULL;
	if (st)
		s->state = st;
	pthread_mutex_unlock(&s->lock);
	if (st) {
		state_put(old);
		log_info("web config reloaded from %s (%s, %zu basic auth users)", s->web_config_file,
			 s->tls ? "TLS" : "plain HTTP", st->wc ? st->wc->n_users : 0);
	}
out:
	atomic_store(&s->reloading, false);
}

/*
 * A connection starts (before any TLS handshake): it takes the current web state, and a TLS
 * session gets that state's credentials, versions and client certificate policy, so that a
 * reloaded certificate is used from the next connection on.
 */
static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
			  enum MHD_ConnectionNotificationCode code)
{
	struct http_server *s = cls;
	const union MHD_ConnectionInfo *ci;
	struct web_state *st;
	gnutls_session_t session;

	if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
		state_put(*socket_context);
		*socket_context = NULL;
		return;
	}
	maybe_reload(s);
	st = state_get(s);
	*socket_context = st;
	if (!st->cred)
		return;
	ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
	if (!ci || !ci->tls_session)
		return; /* keeps the credentials of the start */
	session = (gnutls_session_t)ci->tls_session;
	gnutls_credentials_set(session, GNUTLS_CRD_CERTIFICATE, st->cred);
	gnutls_priority_set(session, st->prio);
	switch (st->wc->client_auth) {
	case WEBCONFIG_NO_CLIENT_CERT:
		gnutls_certificate_server_set_request(session, GNUTLS_CERT_IGNORE);
		break;
	case WEBCONFIG_REQUEST_CLIENT_CERT:
		gnutls_certificate_server_set_request(session, GNUTLS_CERT_REQUEST);
		break;
	case WEBCONFIG_REQUIRE_ANY_CLIENT_CERT:
		gnutls_certificate_server_set_request(session, GNUTLS_CERT_REQUIRE);
		break;
	case WEBCONFIG_VERIFY_CLIENT_CERT_IF_GIVEN:
		/* verified by verify_if_given(), on the credentials */
		gnutls_certificate_server_set_request(session, GNUTLS_CERT_REQUEST);
		break;
	case WEBCONFIG_REQUIRE_AND_VERIFY_CLIENT_CERT:
		/* the handshake fails without a certificate the CA signed */
		gnutls_certificate_server_set_request(session, GNUTLS_CERT_REQUIRE);
		gnutls_session_set_verify_cert(session, NULL, 0);
		break;
	}
}

/* ---- requests ---- */

static enum MHD_Result queue(struct MHD_Connection *conn, unsigned status,
			     struct MHD_Response *resp, const struct web_state *st)
{
	enum MHD_Result r;

	if (st && st->wc)
		for (size_t i = 0; i < st->wc->n_headers; i++)
			MHD_add_response_header(resp, st->wc->headers[i].name,
						st->wc->headers[i].value);
	if (status == MHD_HTTP_UNAUTHORIZED)
		r = MHD_queue_basic_auth_fail_response(conn, HTTP_REALM, resp);
	else
		r = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	return r;
}

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned status, const char *type,
			     char *body, size_t len, enum MHD_ResponseMemoryMode mode,
			     const struct web_state *st)
{
	struct MHD_Response *resp;

	resp = MHD_create_response_from_buffer(len, body, mode);
	if (!resp) {
		if (mode == MHD_RESPMEM_MUST_FREE)
			free(body);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	if (status == MHD_HTTP_SERVICE_UNAVAILABLE)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, "1");
	return queue(conn, status, resp, st);
}

static enum MHD_Result text(struct MHD_Connection *conn, unsigned status, const char *msg,
			    const struct web_state *st)
{
	return reply(conn, status, "text/plain; charset=utf-8", (char *)(uintptr_t)msg,
		     strlen(msg), MHD_RESPMEM_PERSISTENT, st);
}

/* Whether the request carries a login the web config accepts (true when it asks for none). */
static bool authorized(struct MHD_Connection *conn, struct web_state *st)
{
	char *user, *pass = NULL;
	bool ok;

	if (!webconfig_has_auth(st->wc))
		return true;
	user = MHD_basic_auth_get_username_password(conn, &pass);
	ok = user && pass && webconfig_check_login(st->wc, user, pass);
	if (pass) {
		explicit_bzero(pass, strlen(pass));
		MHD_free(pass);
	}
	if (user)
		MHD_free(user);
	return ok;
}

static enum MHD_Result scrape(struct http_server *s, struct MHD_Connection *conn,
			      const struct web_state *st)
{
	char *body = NULL;
	size_t len = 0;
	unsigned busy;
	int r;

	busy = atomic_fetch_add(&s->in_flight, 1);
	if (s->max_requests && busy >= s->max_requests) {
		atomic_fetch_sub(&s->in_flight, 1);
		return text(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
			    "503 too many scrapes at once (--web.max-requests)\n", st);
	}
	r = s->metrics(s->userdata, &body, &len);
	atomic_fetch_sub(&s->in_flight, 1);
	if (r < 0) {
		char msg[128];

		free(body);
		snprintf(msg, sizeof(msg), "500 scan failed: %s\n", strerror(-r));
		return reply(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "text/plain; charset=utf-8", msg,
			     strlen(msg), MHD_RESPMEM_MUST_COPY, st);
	}
	return reply(conn, MHD_HTTP_OK, RENDER_TEXT_CONTENT_TYPE, body, len, MHD_RESPMEM_MUST_FREE,
		     st);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
			      const char *method, const char *version, const char *upload_data,
			      size_t *upload_data_size, void **req_cls)
{
	struct http_server *s = cls;
	static char first_call;
	struct web_state *st;
	enum MHD_Result r;

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
	maybe_reload(s); /* a kept-alive connection sees a changed login too */
	st = state_get(s);
	if (!authorized(conn, st))
		r = text(conn, MHD_HTTP_UNAUTHORIZED, "401 unauthorized\n", st);
	else if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 &&
		 strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
		r = text(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "405 method not allowed\n", st);
	else if (strcmp(url, s->telemetry_path) == 0)
		r = scrape(s, conn, st);
	else if (strcmp(url, "/") == 0)
		r = reply(conn, MHD_HTTP_OK, "text/html; charset=utf-8", s->landing,
			  strlen(s->landing), MHD_RESPMEM_PERSISTENT, st);
	else
		r = text(conn, MHD_HTTP_NOT_FOUND, "404 page not found\n", st);
	state_put(st);
	return r;
}

/* libmicrohttpd's own messages (TLS handshakes that failed, limits hit): debug level. */
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	_cleanup_free_ char *msg = NULL;

	(void)cls;
	if (vasprintf(&msg, fmt, ap) < 0)
		return;
	msg[strcspn(msg, "\n")] = '\0';
	log_debug("http: %s", msg);
}

/* ---- listening ---- */

/* A bound, listening TCP socket for sa; dual_stack for [::] taking IPv4 too. */
static int bind_socket(const struct sockaddr *sa, socklen_t len, bool dual_stack)
{
	_cleanup_close_ int fd = -1;
	int one = 1, v6only = !dual_stack;

	fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0)
		return -errno;
	if (sa->sa_family == AF_INET6 &&
	    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof(v6only)) < 0)
		return -errno;
	if (bind(fd, sa, len) < 0 || listen(fd, SOMAXCONN) < 0)
		return -errno;
	return TAKE_FD(fd);
}

/* Binds addr ("host:port", "[v6]:port", ":port"). Returns the socket, or -errno with a message. */
static int listen_on(const char *addr, char **ret_error)
{
	_cleanup_free_ char *host = NULL;
	unsigned port;
	int fd, r;

	r = http_parse_listen_address(addr, &host, &port);
	if (r < 0) {
		if (asprintf(ret_error, "invalid listen address \"%s\" (want host:port, [v6]:port or :port)", addr) < 0)
			*ret_error = NULL;
		return r;
	}
	if (host[0] == '\0') {
		/* all interfaces, IPv6 and IPv4 together where the host has IPv6 */
		struct sockaddr_in6 s6 = { .sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port),
					   .sin6_addr = IN6ADDR_ANY_INIT };
		struct sockaddr_in s4 = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
					  .sin_addr.s_addr = htonl(INADDR_ANY) };

		fd = bind_socket((struct sockaddr *)&s6, sizeof(s6), true);
		if (fd == -EAFNOSUPPORT || fd == -EADDRNOTAVAIL)
			fd = bind_socket((struct sockaddr *)&s4, sizeof(s4), false);
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
		fd = bind_socket(res->ai_addr, res->ai_addrlen, false);
		freeaddrinfo(res);
	}
	if (fd < 0 && asprintf(ret_error, "cannot listen on \"%s\": %s", addr, strerror(-fd)) < 0)
		*ret_error = NULL;
	return fd;
}

static struct MHD_Daemon *start_one(struct http_server *s, const struct http_options *o,
				    int fd, const struct web_state *st)
{
	/* poll(), not select(): a descriptor past FD_SETSIZE must not drop a connection */
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
			 MHD_USE_POLL | MHD_USE_ERROR_LOG;
	struct MHD_OptionItem tls[5] = { { MHD_OPTION_END, 0, NULL } };
	const struct webconfig *wc = st->wc;

	if (wc && wc->tls) {
		flags |= MHD_USE_TLS;
		tls[0] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_CERT, 0, wc->cert.data };
		tls[1] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_KEY, 0, wc->key.data };
		tls[2] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_PRIORITIES, 0,
						  (void *)(uintptr_t)webconfig_tls_priorities(wc) };
		if (wc->client_ca.data)
			tls[3] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_TRUST, 0,
							  wc->client_ca.data };
	}
	return MHD_start_daemon(flags, 0, NULL, NULL, handle, s,
				MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
				MHD_OPTION_LISTEN_SOCKET, fd,
				MHD_OPTION_CONNECTION_LIMIT, o->connection_limit,
				MHD_OPTION_CONNECTION_TIMEOUT, o->connection_timeout,
				MHD_OPTION_PER_IP_CONNECTION_LIMIT, o->per_ip_limit,
				MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HTTP_CONNECTION_MEMORY_LIMIT,
				MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
				MHD_OPTION_ARRAY, tls, MHD_OPTION_END);
}

__attribute__((format(printf, 2, 3))) static int fail(char **ret_error, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(ret_error, fmt, ap) < 0)
		*ret_error = NULL;
	va_end(ap);
	return -EINVAL;
}

int http_start(const struct http_options *opts, http_metrics_fn metrics, void *userdata,
	       struct http_server **ret, char **ret_error)
{
	struct http_server *s;
	struct webconfig *wc;
	int *fds = NULL;
	size_t n_fds = 0;
	int r;

	*ret_error = NULL;
	if (opts->telemetry_path[0] != '/' || strcmp(opts->telemetry_path, "/") == 0 ||
	    strpbrk(opts->telemetry_path, "\"<>&"))
		return fail(ret_error, "--web.telemetry-path must start with / and not be / itself");
	if (opts->connection_limit == 0)
		return fail(ret_error, "the connection limit must be at least 1");
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	pthread_mutex_init(&s->lock, NULL);
	s->metrics = metrics;
	s->userdata = userdata;
	s->max_requests = opts->max_requests;
	s->telemetry_path = strdup(opts->telemetry_path);
	s->daemons = calloc(opts->n_listen_addresses + 1, sizeof(*s->daemons));
	fds = calloc(opts->n_listen_addresses + 1, sizeof(*fds));
	if (!s->telemetry_path || !s->daemons || !fds ||
	    asprintf(&s->landing,
		     "<html>\n<head><title>cachestat exporter</title></head>\n<body>\n"
		     "<h1>cachestat exporter</h1>\n"
		     "<p>Page cache of the files of each cgroup, from cachestat(2).</p>\n"
		     "<p><a href=\"%s\">Metrics</a></p>\n</body>\n</html>\n",
		     opts->telemetry_path) < 0) {
		s->landing = NULL;
		r = -ENOMEM;
		goto fail;
	}

	if (opts->web_config_file) {
		s->web_config_file = strdup(opts->web_config_file);
		if (!s->web_config_file) {
			r = -ENOMEM;
			goto fail;
		}
		r = web_load(s->web_config_file, &s->state, s->ids, &s->n_ids, ret_error);
		if (r < 0)
			goto fail;
		atomic_store(&s->next_check_ns, mono_ns() + HTTP_WEB_CONFIG_CHECK_NS);
	} else {
		r = state_new(NULL, &s->state, ret_error);
		if (r < 0)
			goto fail;
	}
	wc = s->state->wc;
	s->tls = wc && wc->tls;
	if (webconfig_has_auth(wc) && !s->tls)
		log_warn("web config %s: basic auth without TLS sends passwords in clear text",
			 opts->web_config_file);

	for (size_t i = 0; i < opts->n_listen_addresses; i++) {
		r = listen_on(opts->listen_addresses[i], ret_error);
		if (r < 0)
			goto fail;
		fds[n_fds++] = r;
	}
	if (opts->after_bind) {
		r = opts->after_bind(opts->after_bind_userdata);
		if (r < 0)
			goto fail;
	}
	for (size_t i = 0; i < n_fds; i++) {
		struct MHD_Daemon *d = start_one(s, opts, fds[i], s->state);

		if (!d) {
			r = errno ? -errno : -EIO;
			fail(ret_error, "cannot serve on \"%s\"%s", opts->listen_addresses[i],
			     s->tls ? " with TLS" : "");
			goto fail;
		}
		fds[i] = -1; /* the daemon owns it now */
		s->daemons[s->n_daemons++] = d;
	}
	free(fds);
	*ret = s;
	return 0;

fail:
	for (size_t i = 0; i < n_fds; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	free(fds);
	http_stop(s);
	return r;
}

void http_stop(struct http_server *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n_daemons; i++)
		MHD_stop_daemon(s->daemons[i]);
	state_put(s->state);
	pthread_mutex_destroy(&s->lock);
	free(s->web_config_file);
	free(s->daemons);
	free(s->telemetry_path);
	free(s->landing);
	free(s);
}
