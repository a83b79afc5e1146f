/* SPDX-License-Identifier: Apache-2.0 */
#define _GNU_SOURCE
#include "http/http.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <malloc.h>
#include <math.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <linux/sockios.h>
#include <linux/tcp.h> /* tcp_info with tcpi_bytes_received */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "base/expfmt.h"
#include "http/clientlimit.h"
#include "http/selfmetrics.h"
#include "base/util.h"
#include "http/webconfig.h"

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

/*
 * Connections per client: an IPv4 address, or the /64 of an IPv6 address (one host's
 * allocation: a client picking addresses in it must not get a limit per address).
 */
struct ip_slot {
	uint8_t key[16];
	unsigned count; /* 0: free */
};

/* What a connection holds: the web state it started with, and its client's slot key. */
struct conn_ctx {
	struct web_state *st;
	uint8_t key[16];
	bool counted;
};

struct http_server {
	struct MHD_Daemon **daemons;
	size_t n_daemons;
	char *telemetry_path;
	char *landing;
	struct http_options opts;  /* as given to http_listen() */
	struct http_source src;    /* set by http_serve() */
	bool serving;
	int *listen_fds;           /* bound, not yet handed to a daemon: -1 once handed */
	size_t n_listen_fds;
	struct selfmetrics_proc proc; /* this process's /proc files, opened by http_serve() */
	unsigned max_requests;
	atomic_uint in_flight;
	struct selfmetrics_shared *shared; /* mapped by the scanner, shared with every HTTP process */
	atomic_bool ready; /* a scan has ended: /-/ready answers 200 from then on */

	unsigned per_ip_limit;
	pthread_mutex_t ip_lock;
	struct ip_slot *ip_slots; /* under ip_lock */
	size_t n_ip_slots;

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
 * A client certificate must be for client authentication, as Go's ExtKeyUsageClientAuth: the
 * chain is checked for the purpose (a certificate without the extension is for any purpose).
 */
static gnutls_typed_vdata_st client_purpose = {
	.type = GNUTLS_DT_KEY_PURPOSE_OID,
	.data = (unsigned char *)(uintptr_t)GNUTLS_KP_TLS_WWW_CLIENT,
};

/*
 * VerifyClientCertIfGiven: a client may come without a certificate, but one it sends must
 * verify against the CA, for client auth. (gnutls_session_set_verify_cert() would refuse the
 * client without.)
 */
static int verify_if_given(gnutls_session_t session)
{
	unsigned n = 0, status = 0;

	if (!gnutls_certificate_get_peers(session, &n) || n == 0)
		return 0;
	if (gnutls_certificate_verify_peers(session, &client_purpose, 1, &status) < 0 || status != 0)
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
			where = "TLS priorities";
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

/*
 * At most once per HTTP_WEB_CONFIG_CHECK_NS, and by one thread at a time: when the web config
 * or a file it names changed, load it. A bad file keeps the running config and is logged once
 * per change; so is a change that would switch TLS on or off, which needs a restart (the
 * listeners are made for one or the other).
 */
static bool reload_if_changed(struct http_server *s)
{
	struct file_id now[4], seen[4], loaded[4];
	struct web_state *st = NULL, *old;
	size_t n_now, n_seen, n_loaded = 0;
	_cleanup_free_ char *err = NULL;
	bool changed = false;
	int r;

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
		return false;

	/* What failed is not tried again until it changes: keep the ids of this check. */
	r = web_load(s->web_config_file, &st, loaded, &n_loaded, &err);
	if (r == 0 && (st->wc && st->wc->tls) != s->tls) {
		log_warn("switching TLS on or off needs a restart; keeping the running web config"
			 "\tfile=%s\ttls=%s", s->web_config_file, s->tls ? "off" : "on");
		state_put(st);
		st = NULL;
	} else if (r < 0) {
		log_warn("web config reload failed, keeping the running config\terr=%s",
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
		log_info("web config reloaded\tfile=%s\ttls=%s\tbasic_auth_users=%zu",
			 s->web_config_file, s->tls ? "true" : "false", st->wc ? st->wc->n_users : 0);
	}
	return st != NULL;
}

static void maybe_reload(struct http_server *s)
{
	uint64_t t = monotonic_ns();
	bool expect = false;

	if (!s->web_config_file || s->opts.web_config_watched_elsewhere ||
	    t < atomic_load(&s->next_check_ns))
		return;
	if (!atomic_compare_exchange_strong(&s->reloading, &expect, true))
		return;
	atomic_store(&s->next_check_ns, t + HTTP_WEB_CONFIG_CHECK_NS);
	reload_if_changed(s);
	atomic_store(&s->reloading, false);
}

/* ---- connections per client ---- */

/* Under ip_lock: the slot of key, or a free one for it; NULL when the table is full. */
static struct ip_slot *ip_slot_of(struct http_server *s, const uint8_t key[16], bool add)
{
	struct ip_slot *free_slot = NULL;

	for (size_t i = 0; i < s->n_ip_slots; i++) {
		struct ip_slot *e = &s->ip_slots[i];

		if (e->count > 0 && memcmp(e->key, key, 16) == 0)
			return e;
		if (e->count == 0 && !free_slot)
			free_slot = e;
	}
	if (!add || !free_slot)
		return NULL;
	memcpy(free_slot->key, key, 16);
	return free_slot;
}

/*
 * Before libmicrohttpd takes a connection: refuse a client that already holds per_ip_limit
 * of them. Counted when the connection starts, so a few accepted at the same moment by
 * different threads may pass the limit by one each.
 */
static enum MHD_Result accept_policy(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
	struct http_server *s = cls;
	struct ip_slot *e;
	uint8_t key[16];
	bool ok;

	(void)addrlen;
	if (s->per_ip_limit == 0)
		return MHD_YES;
	clientlimit_key(addr, key);
	pthread_mutex_lock(&s->ip_lock);
	e = ip_slot_of(s, key, false);
	ok = !e || e->count < s->per_ip_limit;
	pthread_mutex_unlock(&s->ip_lock);
	return ok ? MHD_YES : MHD_NO;
}

static void conn_count(struct http_server *s, struct conn_ctx *ctx, struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci;
	struct ip_slot *e;

	if (s->per_ip_limit == 0)
		return;
	ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	clientlimit_key(ci ? ci->client_addr : NULL, ctx->key);
	pthread_mutex_lock(&s->ip_lock);
	e = ip_slot_of(s, ctx->key, true);
	if (e) {
		e->count++;
		ctx->counted = true;
	}
	pthread_mutex_unlock(&s->ip_lock);
}

static void conn_uncount(struct http_server *s, struct conn_ctx *ctx)
{
	struct ip_slot *e;

	if (!ctx->counted)
		return;
	pthread_mutex_lock(&s->ip_lock);
	e = ip_slot_of(s, ctx->key, false);
	if (e)
		e->count--;
	pthread_mutex_unlock(&s->ip_lock);
}

/* What a client that speaks plain HTTP to the TLS listener reads, as Go's servers answer it. */
static const char plain_http_reply[] =
	"HTTP/1.0 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\n"
	"Connection: close\r\n\r\nClient sent an HTTP request to an HTTPS server.\n";

/* Whether buf starts as an HTTP/1 request line does: a method in capitals, then a space. */
static bool looks_like_http(const char *buf, size_t n)
{
	size_t i = 0;

	while (i < n && i < 8 && buf[i] >= 'A' && buf[i] <= 'Z')
		i++;
	return i >= 3 && i < n && buf[i] == ' ';
}

/*
 * Whether the n bytes just read from a TCP socket are the first of its stream: everything it
 * received, less what is still queued, is what was read. A read in the middle of a TLS record
 * may hold any bytes, a request line included; this one cannot be mistaken.
 */
static bool read_from_start(int fd, size_t n)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);
	int queued = 0;

	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) < 0 ||
	    len < offsetof(struct tcp_info, tcpi_bytes_received) + sizeof(ti.tcpi_bytes_received) ||
	    ioctl(fd, SIOCINQ, &queued) < 0 || queued < 0)
		return false;
	return ti.tcpi_bytes_received == (uint64_t)queued + n;
}

/*
 * The TLS session's reads: as gnutls's own (recv on the descriptor), except that a plain HTTP
 * request at the start of the stream gets a 400 saying so, in clear, instead of a handshake
 * that fails without a word. The request is read off first, so that closing does not reset
 * the connection under the answer.
 */
static ssize_t tls_pull(gnutls_transport_ptr_t ptr, void *buf, size_t size)
{
	int fd = (int)(intptr_t)ptr;
	ssize_t n = recv(fd, buf, size, 0);
	char rest[4096];

	if (n <= 0 || !looks_like_http(buf, (size_t)n) || !read_from_start(fd, (size_t)n))
		return n;
	for (int i = 0; i < 4 && recv(fd, rest, sizeof(rest), MSG_DONTWAIT) > 0; i++)
		;
	if (send(fd, plain_http_reply, sizeof(plain_http_reply) - 1, MSG_DONTWAIT | MSG_NOSIGNAL) > 0)
		shutdown(fd, SHUT_WR);
	errno = ECONNRESET;
	return -1;
}

/* A TLS session gets the state's credentials, versions and client certificate policy. */
static void tls_setup(struct MHD_Connection *conn, const struct web_state *st)
{
	const union MHD_ConnectionInfo *ci;
	gnutls_session_t session;

	ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
	if (!ci || !ci->tls_session)
		return; /* keeps the credentials of the start */
	session = (gnutls_session_t)ci->tls_session;
	gnutls_transport_set_pull_function(session, tls_pull);
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
		/* the handshake fails without a certificate the CA signed for client auth */
		gnutls_certificate_server_set_request(session, GNUTLS_CERT_REQUIRE);
		gnutls_session_set_verify_cert2(session, &client_purpose, 1, 0);
		break;
	}
}

/*
 * A connection starts (before any TLS handshake): it is counted for its client, and takes the
 * current web state, so that a reloaded certificate is used from the next connection on.
 */
static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
			  enum MHD_ConnectionNotificationCode code)
{
	struct http_server *s = cls;
	struct conn_ctx *ctx = *socket_context;

	if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
		if (ctx) {
			conn_uncount(s, ctx);
			state_put(ctx->st);
			free(ctx);
		}
		*socket_context = NULL;
		return;
	}
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return; /* handle() takes the state per request then */
	conn_count(s, ctx, conn);
	maybe_reload(s);
	ctx->st = state_get(s);
	*socket_context = ctx;
	if (ctx->st->cred)
		tls_setup(conn, ctx->st);
}

/*
 * Percent-decoding of the path and arguments, as libmicrohttpd's own, except that "%00" stays
 * as it is: a NUL would cut the string, and "/metrics%00" would be "/metrics".
 */
static size_t unescape(void *cls, struct MHD_Connection *conn, char *str)
{
	char *w = str;

	(void)cls;
	(void)conn;
	for (const char *r = str; *r; r++) {
		unsigned v;

		if (r[0] == '%' && isxdigit((unsigned char)r[1]) && isxdigit((unsigned char)r[2]) &&
		    sscanf(r + 1, "%2x", &v) == 1 && v != 0) {
			*w++ = (char)v;
			r += 2;
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
	return (size_t)(w - str);
}

/* ---- requests ---- */

static enum MHD_Result queue(struct http_server *s, struct MHD_Connection *conn, unsigned status,
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
	atomic_fetch_add(&s->shared->requests[selfmetrics_code_index(status)], 1);
	return r;
}

static enum MHD_Result reply(struct http_server *s, struct MHD_Connection *conn, unsigned status,
			     const char *type, char *body, size_t len,
			     enum MHD_ResponseMemoryMode mode, const struct web_state *st)
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
	if (status == MHD_HTTP_SERVICE_UNAVAILABLE || status == MHD_HTTP_TOO_MANY_REQUESTS)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, "1");
	return queue(s, conn, status, resp, st);
}

static enum MHD_Result text(struct http_server *s, struct MHD_Connection *conn, unsigned status,
			    const char *msg, const struct web_state *st)
{
	return reply(s, conn, status, "text/plain; charset=utf-8", (char *)(uintptr_t)msg,
		     strlen(msg), MHD_RESPMEM_PERSISTENT, st);
}

static void datum_freep(gnutls_datum_t *d)
{
	if (d->data) {
		explicit_bzero(d->data, d->size);
		gnutls_free(d->data);
	}
}

static void secret_freep(char **p)
{
	if (*p) {
		explicit_bzero(*p, strlen(*p));
		free(*p);
	}
}

/*
 * The login of an Authorization header: the scheme name in any case (RFC 7617), then base64
 * of "user:password". A user or password holding a NUL is refused: it would be cut there.
 */
static enum webconfig_login basic_login(const char *header, struct webconfig *wc,
				       const uint8_t client[CLIENTLIMIT_KEY_LEN])
{
	_cleanup_(datum_freep) gnutls_datum_t dec = { NULL, 0 };
	_cleanup_(secret_freep) char *user = NULL;
	gnutls_datum_t b64;
	const char *colon;

	if (!header || strncasecmp(header, "Basic", 5) != 0 || (header[5] != ' ' && header[5] != '\t'))
		return WEBCONFIG_LOGIN_REFUSED;
	header += 5;
	header += strspn(header, " \t");
	b64 = (gnutls_datum_t){ (unsigned char *)(uintptr_t)header, (unsigned)strlen(header) };
	if (b64.size == 0 || gnutls_base64_decode2(&b64, &dec) < 0)
		return WEBCONFIG_LOGIN_REFUSED;
	if (memchr(dec.data, '\0', dec.size))
		return WEBCONFIG_LOGIN_REFUSED;
	colon = memchr(dec.data, ':', dec.size);
	if (!colon)
		return WEBCONFIG_LOGIN_REFUSED;
	user = strndup((const char *)dec.data, dec.size); /* "user:password" */
	if (!user)
		return WEBCONFIG_LOGIN_REFUSED;
	user[colon - (const char *)dec.data] = '\0';
	return webconfig_login(wc, user, user + (colon - (const char *)dec.data) + 1, client);
}

/* Whether the request carries a login the web config accepts (OK when it asks for none). */
static enum webconfig_login authorized(struct MHD_Connection *conn, struct web_state *st)
{
	const union MHD_ConnectionInfo *ci;
	uint8_t client[CLIENTLIMIT_KEY_LEN];

	if (!webconfig_has_auth(st->wc))
		return WEBCONFIG_LOGIN_OK;
	ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	clientlimit_key(ci ? ci->client_addr : NULL, client);
	return basic_login(MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
							MHD_HTTP_HEADER_AUTHORIZATION),
			   st->wc, client);
}

/* How long this scrape may wait for a scan: Prometheus' timeout less a margin, or a default. */
static uint64_t scrape_budget_ns(struct MHD_Connection *conn)
{
	const char *v = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
						    "X-Prometheus-Scrape-Timeout-Seconds");
	double t = HTTP_DEFAULT_SCRAPE_TIMEOUT;
	char *end;

	if (v) {
		double x;

		errno = 0;
		x = strtod(v, &end);
		if (errno == 0 && end != v && *end == '\0' && x > 0 && x <= 3600)
			t = x;
	}
	t = t > 2 * HTTP_SCRAPE_TIMEOUT_MARGIN ? t - HTTP_SCRAPE_TIMEOUT_MARGIN : t / 2;
	return (uint64_t)(t * 1e9);
}

/* Whether Accept-Encoding allows gzip: "gzip" or "*" listed, and not with q=0. */
static bool accepts_gzip(struct MHD_Connection *conn)
{
	const char *v = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
						    MHD_HTTP_HEADER_ACCEPT_ENCODING);
	bool gzip = false, star = false, gzip_seen = false;

	while (v && *v) {
		size_t n, len = strcspn(v, ",");
		const char *q;
		bool zero;

		v += strspn(v, " \t");
		len = strcspn(v, ",");
		n = strcspn(v, ";, \t");
		q = memmem(v, len, "q=", 2);
		zero = q && strtod(q + 2, NULL) == 0;
		if (n == 4 && strncasecmp(v, "gzip", 4) == 0) {
			gzip_seen = true;
			gzip = !zero;
		} else if (n == 1 && v[0] == '*') {
			star = !zero;
		}
		v += len;
		v += *v == ',';
	}
	return gzip_seen ? gzip : star;
}

/* What a scrape's response holds until it is sent: the shared body and its own tail. */
struct scrape_reply {
	struct body *body;
	void *tail;
};

static void scrape_reply_free(void *cls)
{
	struct scrape_reply *r = cls;

	body_unref(r->body);
	free(r->tail);
	free(r);
}

/* The self metrics of this scrape as text, or as the end of b's gzip member when gz. Returns 0
 * or -errno. */
static int self_tail(struct http_server *s, const struct body *b, bool gz, void **ret,
		     size_t *ret_len)
{
	struct selfmetrics m = {
		.in_flight = atomic_load(&s->in_flight),
		.snapshot_age_seconds = b ? (double)(monotonic_ns() - b->done_ns) / 1e9 : NAN,
	};
	_cleanup_free_ char *text = NULL;
	_cleanup_fclose_ FILE *f = NULL;
	size_t len = 0;
	int r;

	s->src.counters(s->src.impl, &m.scans_stuck_total, &m.http_restarts_total);
	/* this process's own repeats, and the scanner process's when it is another one */
	m.log_repeats_total = log_repeats_suppressed() +
			      (s->src.log_repeats ? s->src.log_repeats(s->src.impl) : 0);
	for (unsigned i = 0; i < SELFMETRICS_N_CODES; i++)
		m.requests[i] = atomic_load(&s->shared->requests[i]);
	for (unsigned i = 0; i < SELFMETRICS_N_LOGIN_REASONS; i++)
		m.logins_refused[i] = atomic_load(&s->shared->logins_refused[i]);
	f = open_memstream(&text, &len);
	if (!f)
		return -ENOMEM;
	r = selfmetrics_render(f, &m, &s->proc, s->shared);
	if (fclose(TAKE_PTR(f)) != 0 || r < 0)
		return -ENOMEM;
	if (gz) /* the end of the body's gzip member */
		return body_gzip_end(b->crc, b->len, text, len, (unsigned char **)ret, ret_len);
	*ret = TAKE_PTR(text);
	*ret_len = len;
	return 0;
}

/* 200 with the body of b (may be NULL for HEAD before the first scan) and the self metrics. */
static enum MHD_Result scrape_ok(struct http_server *s, struct MHD_Connection *conn,
				 struct body *b, const struct web_state *st)
{
	_cleanup_free_ struct scrape_reply *rep = calloc(1, sizeof(*rep));
	bool gz = b && b->gz && accepts_gzip(conn);
	struct MHD_IoVec iov[2];
	struct MHD_Response *resp;
	size_t tail_len = 0;

	if (!rep || self_tail(s, b, gz, &rep->tail, &tail_len) < 0) {
		body_unref(b);
		return text(s, conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "500 out of memory\n", st);
	}
	rep->body = b;
	iov[0] = (struct MHD_IoVec){ b ? (gz ? (void *)b->gz : b->text) : "",
				     b ? (gz ? b->gz_len : b->len) : 0 };
	iov[1] = (struct MHD_IoVec){ rep->tail, tail_len };
	resp = MHD_create_response_from_iovec(iov, 2, scrape_reply_free, rep);
	if (!resp) {
		scrape_reply_free(TAKE_PTR(rep));
		return MHD_NO;
	}
	TAKE_PTR(rep);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, RENDER_TEXT_CONTENT_TYPE);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_VARY, MHD_HTTP_HEADER_ACCEPT_ENCODING);
	if (gz)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
	return queue(s, conn, MHD_HTTP_OK, resp, st);
}

/*
 * One request. A scrape that waits for a scan is suspended (it holds no thread) and resumed
 * by its source's wake; libmicrohttpd then calls handle() again for it.
 */
struct request {
	struct http_server *s;
	struct MHD_Connection *conn;
	pthread_mutex_t lock; /* enqueue and suspend, against wake */
	struct body_waiter w;
	bool counted; /* in in_flight until request_completed() */
	bool waiting; /* suspended for a scan; the body is to be taken */
	bool readiness; /* /-/ready: answers whether a scan has ended, not with the body */
};

static void request_wake(void *userdata)
{
	struct request *req = userdata;
	struct MHD_Connection *conn;

	/*
	 * The lock is held from the enqueue to the suspend: taking it makes sure the connection
	 * is suspended. Once resumed the request may end and be freed at once: req is not
	 * touched after that.
	 */
	pthread_mutex_lock(&req->lock);
	conn = req->conn;
	pthread_mutex_unlock(&req->lock);
	MHD_resume_connection(conn);
}

/* The answer once the source has a body for the request (or none). */
static enum MHD_Result scrape_answer(struct http_server *s, struct request *req, bool head,
				     const struct web_state *st)
{
	struct body *b = NULL;
	bool stale = false;
	int r;

	/* a scan's problem is logged by the scanner (scanner/server.c), which sees it first */
	r = s->src.take(s->src.impl, &req->w, &b, &stale);
	if (r == 0)
		atomic_store(&s->ready, true);
	if (req->readiness) {
		body_unref(b);
		return r == 0 ? text(s, req->conn, MHD_HTTP_OK, "cachestat_exporter is ready.\n", st)
			      : text(s, req->conn, MHD_HTTP_SERVICE_UNAVAILABLE,
				     "503 not ready: the first scan has not ended yet\n", st);
	}
	if (r == 0 && stale)
		log_debug("scrape: the scan did not end in time\tage_seconds=%.1f",
			  (double)(monotonic_ns() - b->done_ns) / 1e9);
	if (r < 0 && !head)
		return text(s, req->conn, MHD_HTTP_SERVICE_UNAVAILABLE,
			    "503 the first scan has not ended yet\n", st);
	return scrape_ok(s, req->conn, b, st);
}

/*
 * A scrape: the body of a scan that ends within the scrape's budget, else the last complete
 * one (its age says so). HEAD serves the latest as it is and starts no scan.
 */
static enum MHD_Result scrape(struct http_server *s, struct request *req, bool head,
			      const struct web_state *st)
{
	unsigned busy;
	int r;

	if (req->waiting) {
		req->waiting = false;
		return scrape_answer(s, req, head, st);
	}
	busy = atomic_fetch_add(&s->in_flight, 1);
	req->counted = true; /* until its body is sent */
	if (s->max_requests && busy >= s->max_requests)
		return text(s, req->conn, MHD_HTTP_SERVICE_UNAVAILABLE,
			    "503 too many scrapes at once (--web.max-requests)\n", st);
	req->w = (struct body_waiter){ .wake = request_wake, .userdata = req };
	pthread_mutex_lock(&req->lock);
	r = s->src.enqueue(s->src.impl, req->readiness ? HTTP_READY_BUDGET_NS : scrape_budget_ns(req->conn),
			   !head || req->readiness, &req->w);
	if (r == 0) {
		req->waiting = true;
		MHD_suspend_connection(req->conn);
	}
	pthread_mutex_unlock(&req->lock);
	if (r == 0)
		return MHD_YES;
	if (r < 0) {
		log_error("scan failed\terr=%s", strerror(-r));
		return text(s, req->conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "500 scan failed\n", st);
	}
	return scrape_answer(s, req, head, st);
}

static void request_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
			      enum MHD_RequestTerminationCode toe)
{
	struct http_server *s = cls;
	struct request *req = *req_cls;

	(void)conn;
	(void)toe;
	if (!req)
		return;
	if (req->waiting) {
		/* woken, but the client left before its answer: what the source holds for it goes */
		struct body *b = NULL;
		bool stale;

		if (s->src.take(s->src.impl, &req->w, &b, &stale) == 0)
			body_unref(b);
	}
	if (req->counted)
		atomic_fetch_sub(&s->in_flight, 1);
	pthread_mutex_destroy(&req->lock);
	free(req);
	*req_cls = NULL;
}

/* The one warning of logins answered 429, written again only when the reason changes. */
static struct log_repeat login_limited;

static enum MHD_Result route(struct http_server *s, struct request *req, const char *url,
			     const char *method, struct web_state *st)
{
	struct MHD_Connection *conn = req->conn;
	bool head = strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;

	if (req->waiting) /* resumed: authorized before it waited */
		return scrape(s, req, head, st);
	/* The probes' paths answer without basic auth: they tell nothing but up and ready, and a
	 * kubelet's httpGet probe sends no password (it counts 401 as a failure). */
	if (strcmp(url, "/-/healthy") == 0 || strcmp(url, "/-/ready") == 0) {
		if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && !head)
			return text(s, conn, MHD_HTTP_METHOD_NOT_ALLOWED, "405 method not allowed\n",
				    st);
		if (strcmp(url, "/-/healthy") == 0)
			return text(s, conn, MHD_HTTP_OK, "cachestat_exporter is healthy.\n", st);
		if (atomic_load(&s->ready))
			return text(s, conn, MHD_HTTP_OK, "cachestat_exporter is ready.\n", st);
		/* not ready yet: a scan is started (or the one in progress waited for) briefly */
		req->readiness = true;
		return scrape(s, req, head, st);
	}

	switch (authorized(conn, st)) {
	case WEBCONFIG_LOGIN_REFUSED:
		atomic_fetch_add(&s->shared->logins_refused[SELFMETRICS_LOGIN_WRONG], 1);
		return text(s, conn, MHD_HTTP_UNAUTHORIZED, "401 unauthorized\n", st);
	case WEBCONFIG_LOGIN_BUSY_CLIENT:
		atomic_fetch_add(&s->shared->logins_refused[SELFMETRICS_LOGIN_CLIENT_RATE], 1);
		log_warn_repeat(&login_limited, "logins answered 429: a client is over its bcrypt "
				"rate\treason=client_rate");
		return text(s, conn, MHD_HTTP_TOO_MANY_REQUESTS,
			    "429 too many logins to check from this address; try again\n", st);
	case WEBCONFIG_LOGIN_BUSY_ALL:
		atomic_fetch_add(&s->shared->logins_refused[SELFMETRICS_LOGIN_NEW_CLIENTS_RATE], 1);
		log_warn_repeat(&login_limited, "logins answered 429: the clients that never logged "
				"in are over their bcrypt rate\treason=new_clients_rate");
		return text(s, conn, MHD_HTTP_TOO_MANY_REQUESTS,
			    "429 too many logins to check; try again\n", st);
	case WEBCONFIG_LOGIN_OK:
		break;
	}
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && !head)
		return text(s, conn, MHD_HTTP_METHOD_NOT_ALLOWED, "405 method not allowed\n", st);
	if (strcmp(url, s->telemetry_path) == 0)
		return scrape(s, req, head, st);
	if (strcmp(url, "/") == 0)
		return reply(s, conn, MHD_HTTP_OK, "text/html; charset=utf-8", s->landing,
			     strlen(s->landing), MHD_RESPMEM_PERSISTENT, st);
	return text(s, conn, MHD_HTTP_NOT_FOUND, "404 page not found\n", st);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
			      const char *method, const char *version, const char *upload_data,
			      size_t *upload_data_size, void **req_cls)
{
	struct http_server *s = cls;
	struct request *req = *req_cls;
	struct web_state *st;
	enum MHD_Result r;

	(void)version;
	(void)upload_data;
	if (!req) {
		/* headers only so far; answer once the request is complete */
		req = calloc(1, sizeof(*req));
		if (!req)
			return MHD_NO;
		*req = (struct request){ .s = s, .conn = conn };
		pthread_mutex_init(&req->lock, NULL);
		*req_cls = req;
		return MHD_YES;
	}
	if (*upload_data_size != 0) {
		*upload_data_size = 0; /* no body is wanted: drop it */
		return MHD_YES;
	}
	maybe_reload(s); /* a kept-alive connection sees a changed login too */
	st = state_get(s);
	r = route(s, req, url, method, st);
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
	log_debug("libmicrohttpd\terr=%s", msg);
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

/*
 * Threads for a listener: HTTP_THREAD_POOL_SIZE, fewer under a small descriptor limit (each
 * takes an epoll and an eventfd descriptor; a sixteenth of them at most goes to that).
 */
static unsigned pool_size(void)
{
	struct rlimit rl;
	rlim_t n;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return HTTP_THREAD_POOL_SIZE;
	n = rl.rlim_cur / 32;
	return n < 1 ? 1 : n > HTTP_THREAD_POOL_SIZE ? HTTP_THREAD_POOL_SIZE : (unsigned)n;
}

static struct MHD_Daemon *start_one(struct http_server *s, const struct http_options *o,
				    int fd, const struct web_state *st)
{
	/*
	 * epoll with a pool of threads: a connection costs a descriptor and its memory, not a
	 * thread, so that hundreds of slow clients cannot take every thread. The threads wait in
	 * epoll_wait() without a timeout: the inter-thread channel of MHD_ALLOW_SUSPEND_RESUME
	 * lets MHD_stop_daemon() and a resumed scrape wake them.
	 */
	unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
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
	return MHD_start_daemon(flags, 0, accept_policy, s, handle, s,
				MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
				MHD_OPTION_LISTEN_SOCKET, fd,
				MHD_OPTION_THREAD_POOL_SIZE, pool_size(),
				MHD_OPTION_CONNECTION_LIMIT, o->connection_limit,
				MHD_OPTION_CONNECTION_TIMEOUT, o->connection_timeout,
				MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HTTP_CONNECTION_MEMORY_LIMIT,
				MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
				MHD_OPTION_NOTIFY_COMPLETED, request_completed, s,
				MHD_OPTION_UNESCAPE_CALLBACK, unescape, NULL,
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

static void http_stopp(struct http_server **s)
{
	http_stop(*s);
}

/*
 * Per process, once: glibc's malloc arenas capped. Each thread that allocates would get an
 * arena of its own, up to 8 per core, each keeping its peak.
 */
static void process_limits(void)
{
	mallopt(M_ARENA_MAX, HTTP_MALLOC_ARENAS);
}

/* The server without its listeners; ip slots for every connection it may hold. */
static int server_new(const struct http_options *opts, struct http_server **ret)
{
	_cleanup_(http_stopp) struct http_server *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	pthread_mutex_init(&s->lock, NULL);
	pthread_mutex_init(&s->ip_lock, NULL);
	s->opts = *opts;
	selfmetrics_proc_init(&s->proc);
	if (selfmetrics_shared_new(&s->shared) < 0) {
		s->shared = NULL;
		return -ENOMEM;
	}
	s->max_requests = opts->max_requests;
	s->per_ip_limit = opts->per_ip_limit;
	s->n_ip_slots = (size_t)opts->connection_limit * (opts->n_listen_addresses + 1);
	s->ip_slots = calloc(s->n_ip_slots, sizeof(*s->ip_slots));
	s->telemetry_path = strdup(opts->telemetry_path);
	s->daemons = calloc(opts->n_listen_addresses + 1, sizeof(*s->daemons));
	s->listen_fds = calloc(opts->n_listen_addresses + 1, sizeof(*s->listen_fds));
	if (!s->ip_slots || !s->telemetry_path || !s->daemons || !s->listen_fds)
		return -ENOMEM;
	if (asprintf(&s->landing,
		     "<html>\n<head><title>cachestat exporter</title></head>\n<body>\n"
		     "<h1>cachestat exporter</h1>\n"
		     "<p>Page cache of the files of each cgroup, from cachestat(2).</p>\n"
		     "<p><a href=\"%s\">Metrics</a></p>\n</body>\n</html>\n",
		     opts->telemetry_path) < 0) {
		s->landing = NULL;
		return -ENOMEM;
	}
	*ret = TAKE_PTR(s);
	return 0;
}

/* The web config (or none) into s->state. Returns 0 or -errno with *ret_error. */
static int server_web_config(struct http_server *s, const char *file, char **ret_error)
{
	struct webconfig *wc;
	int r;

	if (file) {
		s->web_config_file = strdup(file);
		if (!s->web_config_file)
			return -ENOMEM;
		r = web_load(s->web_config_file, &s->state, s->ids, &s->n_ids, ret_error);
		atomic_store(&s->next_check_ns, monotonic_ns() + HTTP_WEB_CONFIG_CHECK_NS);
	} else {
		r = state_new(NULL, &s->state, ret_error);
	}
	if (r < 0)
		return r;
	wc = s->state->wc;
	s->tls = wc && wc->tls;
	if (webconfig_has_auth(wc) && !s->tls)
		log_warn("basic auth without TLS sends passwords in clear text\tfile=%s", file);
	return 0;
}

int http_listen(const struct http_options *opts, struct http_server **ret, char **ret_error)
{
	_cleanup_(http_stopp) struct http_server *s = NULL;
	int r;

	*ret_error = NULL;
	if (opts->telemetry_path[0] != '/' || strcmp(opts->telemetry_path, "/") == 0 ||
	    strpbrk(opts->telemetry_path, "\"<>&%"))
		return fail(ret_error, "--web.telemetry-path must start with / and not be / itself");
	if (opts->connection_limit == 0)
		return fail(ret_error, "the connection limit must be at least 1");
	process_limits();
	r = server_new(opts, &s);
	if (r < 0)
		return r;
	r = server_web_config(s, opts->web_config_file, ret_error);
	if (r < 0)
		return r;
	for (size_t i = 0; i < opts->n_listen_addresses; i++) {
		r = listen_on(opts->listen_addresses[i], ret_error);
		if (r < 0)
			return r;
		s->listen_fds[s->n_listen_fds++] = r;
	}
	*ret = TAKE_PTR(s);
	return 0;
}

int http_serve(struct http_server *s, const struct http_source *src, char **ret_error)
{
	int r;

	*ret_error = NULL;
	s->src = *src;
	s->serving = true;
	r = selfmetrics_proc_open("/proc", &s->proc);
	if (r < 0)
		return fail(ret_error, "cannot open this process's /proc files: %s", strerror(-r));
	if (s->opts.after_bind) {
		r = s->opts.after_bind(s->opts.after_bind_userdata);
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < s->n_listen_fds; i++) {
		struct MHD_Daemon *d = start_one(s, &s->opts, s->listen_fds[i], s->state);

		if (!d)
			return fail(ret_error, "cannot serve on \"%s\"%s", s->opts.listen_addresses[i],
				    s->tls ? " with TLS" : "");
		s->listen_fds[i] = -1; /* the daemon owns it now */
		s->daemons[s->n_daemons++] = d;
	}
	return 0;
}

size_t http_listen_fds(const struct http_server *s, const int **ret)
{
	*ret = s->listen_fds;
	return s->n_listen_fds;
}

bool http_web_config_check(struct http_server *s)
{
	return s->web_config_file && !s->serving && reload_if_changed(s);
}

struct selfmetrics_shared *http_shared(struct http_server *s)
{
	return s->shared;
}

bool http_tls(const struct http_server *s)
{
	return s->tls;
}

bool http_basic_auth(struct http_server *s)
{
	struct web_state *st = state_get(s);
	bool on = webconfig_has_auth(st->wc);

	state_put(st);
	return on;
}

void http_quiesce(struct http_server *s, uint64_t timeout_ns)
{
	uint64_t end = monotonic_ns() + timeout_ns;

	for (size_t i = 0; i < s->n_daemons; i++) {
		MHD_socket fd = MHD_quiesce_daemon(s->daemons[i]);

		if (fd != MHD_INVALID_SOCKET)
			close(fd);
	}
	while (atomic_load(&s->in_flight) > 0 && monotonic_ns() < end) {
		struct timespec ts = { 0, 20 * 1000 * 1000 };

		nanosleep(&ts, NULL);
	}
}

void http_stop(struct http_server *s)
{
	if (!s)
		return;
	if (s->src.wake_all)
		s->src.wake_all(s->src.impl); /* no scrape may stay suspended */
	for (size_t i = 0; i < s->n_daemons; i++)
		MHD_stop_daemon(s->daemons[i]);
	for (size_t i = 0; i < s->n_listen_fds; i++)
		closep(&s->listen_fds[i]);
	selfmetrics_proc_close(&s->proc);
	selfmetrics_shared_free(s->shared);
	state_put(s->state);
	pthread_mutex_destroy(&s->lock);
	pthread_mutex_destroy(&s->ip_lock);
	free(s->ip_slots);
	free(s->web_config_file);
	free(s->daemons);
	free(s->listen_fds);
	free(s->telemetry_path);
	free(s->landing);
	free(s);
}
