/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Listen addresses as node_exporter takes them, and real requests against the server: paths,
 * the self metrics, gzip, basic auth. The server gets its bodies as in the daemon, from a
 * scheduler through the privsep channel (served.h).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <crypt.h>
#include <gnutls/gnutls.h>
#include <zlib.h>

#include "http/http.h"
#include "scanner/scheduler.h"
#include "privsep/served.h"
#include "scan/registry.h"

static void expect_addr(const char *in, const char *host, unsigned port)
{
	char *h = NULL;
	unsigned p = 0;

	assert_int_equal(http_parse_listen_address(in, &h, &p), 0);
	assert_string_equal(h, host);
	assert_int_equal(p, port);
	free(h);
}

static void test_listen_addresses(void **state)
{
	static const char *const bad[] = { "9451", "localhost", ":0", ":65536", ":x", "::1:9451",
					   "[::1]9451", "[::1", "host:" };
	char *h = NULL;
	unsigned p;

	(void)state;
	expect_addr(":9451", "", 9451);
	expect_addr("127.0.0.1:19451", "127.0.0.1", 19451);
	expect_addr("[::1]:80", "::1", 80);
	expect_addr("localhost:1", "localhost", 1);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(http_parse_listen_address(bad[i], &h, &p), -EINVAL);
}

/* Asks for path on 127.0.0.1:port with extra header lines; returns the response, *ret_len. */
static char *request(unsigned port, const char *method, const char *path, const char *headers,
		     size_t *ret_len)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	static char buf[1 << 20];
	size_t n = 0;
	ssize_t r;
	char req[1024];
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	snprintf(req, sizeof(req), "%s %s HTTP/1.0\r\nHost: x\r\n%s\r\n", method, path, headers);
	assert_int_equal(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	while ((r = read(fd, buf + n, sizeof(buf) - 1 - n)) > 0)
		n += (size_t)r;
	buf[n] = '\0';
	close(fd);
	if (ret_len)
		*ret_len = n;
	return buf;
}

static char *get(unsigned port, const char *method, const char *path)
{
	return request(port, method, path, "", NULL);
}

static char cgroot[] = "/tmp/cse-http-XXXXXX";
static const struct render_meta meta = { .version = "t", .revision = "t" };

/* A scheduler over an empty cgroup tree, cachestat absent: a body with build_info. */
static struct scheduler *make_scheduler(void)
{
	struct collector_options co = { .cgroupfs = cgroot, .procfs = "/proc" };
	struct pagecache pc = { .abi = PAGECACHE_ABI_NONE };
	struct scan_engine *c = NULL;
	struct scheduler *sched = NULL;

	co.enable[registry_find("cachestat")] = co.enable[registry_find("events")] = true;
	co.enable[registry_find("identity")] = true;

	assert_int_equal(scan_engine_new(&co, &pc, config_new_default(), &c), 0);
	assert_int_equal(scheduler_new(c, &meta, &sched), 0);
	return sched;
}

static void test_serve(void **state)
{
	const char *addrs[1];
	struct http_options o = {
		.telemetry_path = "/m",
		.connection_limit = 4,
		.connection_timeout = 5,
	};
	struct scheduler *sched = make_scheduler();
	struct http_server *s = NULL;
	struct served sv;
	char *err = NULL;
	unsigned port;
	char *resp;

	(void)state;
	served_start(&o, sched, 39451, &sv);
	port = sv.port;
	/* HEAD starts no scan: before any, a body of self metrics alone */
	resp = get(port, "HEAD", "/m");
	assert_non_null(strstr(resp, "200 OK"));
	resp = get(port, "GET", "/m");
	assert_non_null(strstr(resp, "200 OK"));
	assert_non_null(strstr(resp, "text/plain; version=0.0.4"));
	assert_non_null(strstr(resp, "\ncachestat_build_info{"));
	assert_non_null(strstr(resp, "\nprocess_open_fds "));
	assert_non_null(strstr(resp, "\ncachestat_http_requests_total{code=\"200\"} 1\n"));
	assert_non_null(strstr(resp, "\ncachestat_http_requests_in_flight 1\n"));
	resp = get(port, "GET", "/");
	assert_non_null(strstr(resp, "<a href=\"/m\">"));
	assert_non_null(strstr(get(port, "GET", "/nope"), "404"));
	assert_non_null(strstr(get(port, "GET", "/m%00"), "404"));
	assert_non_null(strstr(get(port, "GET", "/m%00x"), "404"));
	assert_non_null(strstr(get(port, "GET", "/%6d"), "200 OK")); /* "/m" escaped */
	assert_non_null(strstr(get(port, "DELETE", "/m"), "405"));
	served_stop(&sv);

	/* not a valid address: a message naming it */
	addrs[0] = "nonsense";
	o.listen_addresses = addrs;
	assert_int_equal(http_listen(&o, &s, &err), -EINVAL);
	assert_non_null(strstr(err, "nonsense"));
	free(err);
	/* a web config that cannot be read: refuse rather than serve in clear text */
	o.web_config_file = "/nonexistent/web.yml";
	assert_int_equal(http_listen(&o, &s, &err), -ENOENT);
	assert_non_null(strstr(err, "/nonexistent/web.yml"));
	free(err);
	scheduler_free(sched);
}

/* gzip when Accept-Encoding allows it, one body for both, and identity otherwise. */
static void test_gzip(void **state)
{
	struct http_options o = { .telemetry_path = "/m", .connection_limit = 8,
				  .connection_timeout = 5 };
	struct scheduler *sched = make_scheduler();
	struct served sv;
	unsigned port;
	size_t len;
	char *resp, *body;
	unsigned char out[65536];
	z_stream z = { 0 };

	(void)state;
	served_start(&o, sched, 39451, &sv);
	port = sv.port;
	resp = request(port, "GET", "/m", "Accept-Encoding: deflate, GZip;q=0.5\r\n", &len);
	assert_non_null(strstr(resp, "Content-Encoding: gzip"));
	body = strstr(resp, "\r\n\r\n") + 4;
	/* one gzip member (the snapshot's, ended by the scrape's own series), nothing after it:
	 * curl --compressed reads the first member only */
	assert_int_equal(inflateInit2(&z, 15 + 16), Z_OK);
	z.next_in = (unsigned char *)body;
	z.avail_in = (uInt)(len - (size_t)(body - resp));
	z.next_out = out;
	z.avail_out = sizeof(out) - 1;
	assert_int_equal(inflate(&z, Z_FINISH), Z_STREAM_END);
	assert_int_equal(z.avail_in, 0);
	inflateEnd(&z);
	out[sizeof(out) - 1 - z.avail_out] = '\0';
	assert_non_null(strstr((char *)out, "cachestat_build_info{"));
	assert_non_null(strstr((char *)out, "\ncachestat_scans_stuck_total 0\n"));
	resp = request(port, "GET", "/m", "Accept-Encoding: gzip;q=0, identity\r\n", NULL);
	assert_null(strstr(resp, "Content-Encoding"));
	assert_non_null(strstr(resp, "cachestat_build_info{"));
	resp = request(port, "GET", "/m", "Accept-Encoding: *\r\n", NULL);
	assert_non_null(strstr(resp, "Content-Encoding: gzip"));
	served_stop(&sv);
	scheduler_free(sched);
}

/* "Authorization: <scheme> base64(user:password)" */
static char *auth_header(const char *scheme, const char *login, size_t len)
{
	static char h[512];
	gnutls_datum_t in = { (unsigned char *)(uintptr_t)login, (unsigned)len }, out;

	assert_int_equal(gnutls_base64_encode2(&in, &out), 0);
	snprintf(h, sizeof(h), "Authorization: %s %.*s\r\n", scheme, (int)out.size, out.data);
	gnutls_free(out.data);
	return h;
}

/* Basic auth: scheme name in any case, a NUL in the password never matches its prefix. */
static void test_basic_auth(void **state)
{
	char dir[] = "/tmp/cse-http-web-XXXXXX", path[128], salt[64];
	struct http_options o = { .telemetry_path = "/m", .connection_limit = 8,
				  .connection_timeout = 5, .web_config_file = path };
	struct scheduler *sched = make_scheduler();
	struct served sv;
	struct crypt_data cd = { 0 };
	unsigned port;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/web.yml", dir);
	assert_non_null(crypt_gensalt_rn("$2b$", 4, NULL, 0, salt, sizeof(salt)));
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "basic_auth_users:\n  alice: '%s'\n", crypt_r("pass", salt, &cd));
	fclose(f);
	served_start(&o, sched, 39451, &sv);
	port = sv.port;
	assert_non_null(strstr(request(port, "GET", "/m", "", NULL), "401"));
	assert_non_null(strstr(request(port, "GET", "/m", auth_header("Basic", "alice:pass", 10), NULL), "200 OK"));
	assert_non_null(strstr(request(port, "GET", "/m", auth_header("basic", "alice:pass", 10), NULL), "200 OK"));
	assert_non_null(strstr(request(port, "GET", "/m", auth_header("BASIC", "alice:pass", 10), NULL), "200 OK"));
	assert_non_null(strstr(request(port, "GET", "/m", auth_header("Basicx", "alice:pass", 10), NULL), "401"));
	assert_non_null(strstr(request(port, "GET", "/m", auth_header("Basic", "alice:pass\0x", 12), NULL), "401"));
	assert_non_null(strstr(request(port, "GET", "/m", auth_header("Basic", "alice\0:pass", 11), NULL), "401"));
	assert_non_null(strstr(request(port, "GET", "/m", auth_header("Basic", "alice:pas", 9), NULL), "401"));
	served_stop(&sv);
	scheduler_free(sched);
	unlink(path);
	rmdir(dir);
}

static int setup(void **state)
{
	(void)state;
	return mkdtemp(cgroot) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	return rmdir(cgroot);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_listen_addresses),
		cmocka_unit_test(test_serve),
		cmocka_unit_test(test_gzip),
		cmocka_unit_test(test_basic_auth),
	};

	return cmocka_run_group_tests_name("http", tests, setup, teardown);
}
