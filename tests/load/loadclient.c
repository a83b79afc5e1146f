/* SPDX-License-Identifier: Apache-2.0 */
/*
 * loadclient: N concurrent HTTP/1.1 keep-alive clients scraping one URL on loopback for a
 * given time. Prints requests served, errors, latency percentiles and bytes, as key=value.
 *
 *   loadclient HOST PORT PATH CLIENTS SECONDS
 *
 * An error is anything but a complete "200 OK" response whose body ends with a newline and
 * holds "cachestat_build_info": a refused or reset connection, a timeout (10 s without a
 * byte), another status, a short body. With LOAD_GZIP=1 in the environment it asks for gzip,
 * as Prometheus does; a gzip body must then be Content-Length bytes that start with the gzip
 * magic (decoding is left to the unit and integration tests: it would cost this client more
 * CPU than the server). Exit status 0 when there was no error.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define IO_TIMEOUT_MS 10000

struct client {
	pthread_t thread;
	unsigned id;
	uint64_t *lat_us; /* one per completed request */
	size_t n_lat, cap_lat;
	uint64_t errors, reconnects, bytes;
	char first_error[160];
};

static struct sockaddr_in addr;
static const char *path;
static uint64_t deadline_ns;
static atomic_bool stop;
static bool gzip_wanted;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int connect_one(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	if (fd < 0)
		return -errno;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	return fd;
}

static int wait_fd(int fd, short ev)
{
	struct pollfd p = { .fd = fd, .events = ev };
	int r = poll(&p, 1, IO_TIMEOUT_MS);

	if (r == 0)
		return -ETIMEDOUT;
	return r < 0 ? -errno : 0;
}

static int send_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * One request on fd. Returns 0 when the response was complete and right, 1 when the server
 * closed a kept-alive connection before answering (retry on a new one), or -errno / -EPROTO.
 */
static int request(struct client *c, int fd, char **buf, size_t *cap, bool *ret_close,
		   char *why, size_t whylen)
{
	char req[512];
	size_t len = 0, hdr_end = 0, body_len = 0;
	bool have_hdr = false, gzip = false;
	int r;

	snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: */*\r\n%s\r\n", path,
		 gzip_wanted ? "Accept-Encoding: gzip\r\n" : "");
	r = send_all(fd, req, strlen(req));
	if (r < 0)
		return len == 0 ? 1 : r;
	for (;;) {
		ssize_t n;

		if (have_hdr && len >= hdr_end + body_len)
			break;
		if (len + 65536 > *cap) {
			char *t = realloc(*buf, *cap * 2);

			if (!t)
				return -ENOMEM;
			*buf = t;
			*cap *= 2;
		}
		r = wait_fd(fd, POLLIN);
		if (r < 0) {
			snprintf(why, whylen, "waiting for the response: %s", strerror(-r));
			return r;
		}
		n = recv(fd, *buf + len, *cap - len - 1, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (len == 0 && errno == ECONNRESET)
				return 1;
			snprintf(why, whylen, "recv: %s", strerror(errno));
			return -errno;
		}
		if (n == 0) {
			if (len == 0)
				return 1;
			snprintf(why, whylen, "connection closed after %zu bytes", len);
			return -EPROTO;
		}
		len += (size_t)n;
		(*buf)[len] = '\0';
		if (!have_hdr) {
			char *e = strstr(*buf, "\r\n\r\n"), *cl;

			if (!e)
				continue;
			hdr_end = (size_t)(e - *buf) + 4;
			have_hdr = true;
			if (strncmp(*buf, "HTTP/1.1 200 ", 13) != 0) {
				snprintf(why, whylen, "status: %.40s", *buf);
				*ret_close = true;
				return -EPROTO;
			}
			cl = strcasestr(*buf, "\r\nContent-Length:");
			if (!cl || cl > e) {
				snprintf(why, whylen, "no Content-Length");
				return -EPROTO;
			}
			body_len = strtoull(cl + 17, NULL, 10);
			gzip = gzip_wanted && strcasestr(*buf, "\r\nContent-Encoding: gzip") != NULL;
			*ret_close = strcasestr(*buf, "\r\nConnection: close") != NULL;
		}
	}
	c->bytes += len;
	if (gzip && body_len >= 18 && (unsigned char)(*buf)[hdr_end] == 0x1f &&
	    (unsigned char)(*buf)[hdr_end + 1] == 0x8b)
		return 0;
	if (body_len == 0 || (*buf)[hdr_end + body_len - 1] != '\n' ||
	    !memmem(*buf + hdr_end, body_len, "cachestat_build_info", 20)) {
		snprintf(why, whylen, "body of %zu bytes is not a full exposition", body_len);
		return -EPROTO;
	}
	return 0;
}

static void add_latency(struct client *c, uint64_t us)
{
	if (c->n_lat == c->cap_lat) {
		size_t ncap = c->cap_lat ? c->cap_lat * 2 : 1024;
		uint64_t *t = realloc(c->lat_us, ncap * sizeof(*t));

		if (!t)
			return;
		c->lat_us = t;
		c->cap_lat = ncap;
	}
	c->lat_us[c->n_lat++] = us;
}

static void error(struct client *c, const char *why)
{
	if (c->errors++ == 0)
		snprintf(c->first_error, sizeof(c->first_error), "%s", why);
}

static void *run(void *arg)
{
	struct client *c = arg;
	size_t cap = 1 << 20;
	char *buf = malloc(cap);
	int fd = -1;

	if (!buf) {
		error(c, "malloc");
		return NULL;
	}
	while (!atomic_load(&stop) && now_ns() < deadline_ns) {
		char why[128] = "";
		bool must_close = false;
		uint64_t t0;
		int r, tries;

		for (tries = 0; tries < 2; tries++) {
			if (fd < 0) {
				fd = connect_one();
				if (fd < 0) {
					snprintf(why, sizeof(why), "connect: %s", strerror(-fd));
					break;
				}
				if (tries == 0 && c->n_lat)
					c->reconnects++;
			}
			t0 = now_ns();
			r = request(c, fd, &buf, &cap, &must_close, why, sizeof(why));
			if (r == 1) { /* the server closed an idle kept-alive connection: reconnect */
				close(fd);
				fd = -1;
				snprintf(why, sizeof(why), "closed before any response, twice");
				continue;
			}
			break;
		}
		if (fd < 0 || r != 0) {
			error(c, why);
			if (fd >= 0)
				close(fd);
			fd = -1;
			usleep(10000);
			continue;
		}
		add_latency(c, (now_ns() - t0) / 1000);
		if (must_close) {
			close(fd);
			fd = -1;
		}
	}
	if (fd >= 0)
		close(fd);
	free(buf);
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	unsigned n_clients;
	double seconds;
	struct client *cs;
	uint64_t total = 0, errors = 0, reconnects = 0, bytes = 0, *all;
	size_t k = 0;
	const char *first_error = NULL;
	uint64_t t_start;

	if (argc != 6) {
		fprintf(stderr, "usage: loadclient HOST PORT PATH CLIENTS SECONDS\n");
		return 2;
	}
	gzip_wanted = getenv("LOAD_GZIP") && strcmp(getenv("LOAD_GZIP"), "1") == 0;
	addr.sin_family = AF_INET;
	addr.sin_port = htons((uint16_t)atoi(argv[2]));
	if (inet_pton(AF_INET, argv[1], &addr.sin_addr) != 1 ||
	    (ntohl(addr.sin_addr.s_addr) >> 24) != 127) {
		fprintf(stderr, "loadclient: loopback IPv4 addresses only\n");
		return 2;
	}
	path = argv[3];
	n_clients = (unsigned)atoi(argv[4]);
	seconds = atof(argv[5]);
	if (n_clients == 0 || n_clients > 10000 || seconds <= 0 || seconds > 3600) {
		fprintf(stderr, "loadclient: 1..10000 clients, 0..3600 s\n");
		return 2;
	}
	cs = calloc(n_clients, sizeof(*cs));
	if (!cs)
		return 1;
	t_start = now_ns();
	deadline_ns = t_start + (uint64_t)(seconds * 1e9);
	for (unsigned i = 0; i < n_clients; i++) {
		cs[i].id = i;
		if (pthread_create(&cs[i].thread, NULL, run, &cs[i]) != 0) {
			fprintf(stderr, "loadclient: cannot start client %u\n", i);
			atomic_store(&stop, true);
			n_clients = i;
			break;
		}
	}
	for (unsigned i = 0; i < n_clients; i++)
		pthread_join(cs[i].thread, NULL);
	for (unsigned i = 0; i < n_clients; i++) {
		total += cs[i].n_lat;
		errors += cs[i].errors;
		reconnects += cs[i].reconnects;
		bytes += cs[i].bytes;
		if (cs[i].errors && !first_error)
			first_error = cs[i].first_error;
	}
	all = malloc((total ? total : 1) * sizeof(*all));
	if (!all)
		return 1;
	for (unsigned i = 0; i < n_clients; i++) {
		memcpy(all + k, cs[i].lat_us, cs[i].n_lat * sizeof(*all));
		k += cs[i].n_lat;
	}
	qsort(all, total, sizeof(*all), cmp_u64);
#define PCT(p) (total ? all[(size_t)((double)(total - 1) * (p))] / 1000.0 : 0.0)
	printf("clients=%u seconds=%.1f requests=%" PRIu64 " errors=%" PRIu64
	       " rps=%.1f p50_ms=%.2f p90_ms=%.2f p99_ms=%.2f max_ms=%.2f reconnects=%" PRIu64
	       " mib_received=%.1f\n",
	       n_clients, (double)(now_ns() - t_start) / 1e9, total, errors,
	       (double)total / ((double)(now_ns() - t_start) / 1e9), PCT(0.50), PCT(0.90), PCT(0.99),
	       PCT(1.0), reconnects, (double)bytes / 1048576.0);
	if (first_error)
		printf("first_error=\"%s\"\n", first_error);
	return errors ? 1 : 0;
}
