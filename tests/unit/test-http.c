/* SPDX-License-Identifier: Apache-2.0 */
/* Listen addresses as node_exporter takes them, and a real request against the server. */
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

#include "http.h"

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

static int body(void *userdata, char **ret_body, size_t *ret_len)
{
	(*(int *)userdata)++;
	*ret_body = strdup("x_metric 1\n");
	*ret_len = strlen(*ret_body);
	return 0;
}

/* Asks for path on 127.0.0.1:port and returns the whole response. */
static char *get(unsigned port, const char *method, const char *path)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	static char buf[8192];
	size_t n = 0;
	ssize_t r;
	char req[256];
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	snprintf(req, sizeof(req), "%s %s HTTP/1.0\r\nHost: x\r\n\r\n", method, path);
	assert_int_equal(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	while ((r = read(fd, buf + n, sizeof(buf) - 1 - n)) > 0)
		n += (size_t)r;
	buf[n] = '\0';
	close(fd);
	return buf;
}

static void test_serve(void **state)
{
	const char *addrs[1];
	struct http_options o = {
		.listen_addresses = addrs,
		.n_listen_addresses = 1,
		.telemetry_path = "/m",
		.connection_limit = 4,
		.connection_timeout = 5,
	};
	struct http_server *s = NULL;
	char *err = NULL, addr[32];
	unsigned port;
	int calls = 0, r = -1;
	char *resp;

	(void)state;
	/* find a free port in a range unlikely to be used */
	for (port = 39451; port < 39551 && r < 0; port++) {
		snprintf(addr, sizeof(addr), "127.0.0.1:%u", port);
		addrs[0] = addr;
		free(err);
		err = NULL;
		r = http_start(&o, body, &calls, &s, &err);
	}
	port--;
	assert_int_equal(r, 0);
	resp = get(port, "GET", "/m");
	assert_non_null(strstr(resp, "200 OK"));
	assert_non_null(strstr(resp, "text/plain; version=0.0.4"));
	assert_non_null(strstr(resp, "\r\n\r\nx_metric 1\n"));
	assert_int_equal(calls, 1);
	resp = get(port, "GET", "/");
	assert_non_null(strstr(resp, "<a href=\"/m\">"));
	assert_non_null(strstr(get(port, "GET", "/nope"), "404"));
	assert_non_null(strstr(get(port, "DELETE", "/m"), "405"));
	assert_int_equal(calls, 1);
	http_stop(s);

	/* not a valid address: a message naming it */
	addrs[0] = "nonsense";
	assert_int_equal(http_start(&o, body, &calls, &s, &err), -EINVAL);
	assert_non_null(strstr(err, "nonsense"));
	free(err);
	/* a web config that cannot be read: refuse rather than serve in clear text */
	addrs[0] = addr;
	o.web_config_file = "/nonexistent/web.yml";
	assert_int_equal(http_start(&o, body, &calls, &s, &err), -ENOENT);
	assert_non_null(strstr(err, "/nonexistent/web.yml"));
	free(err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_listen_addresses),
		cmocka_unit_test(test_serve),
	};

	return cmocka_run_group_tests_name("http", tests, NULL, NULL);
}
