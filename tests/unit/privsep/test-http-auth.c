/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HTTP server's basic auth path, end to end over a socket: a web config with one bcrypt user
 * (hashed here by libcrypt, not by the code under test); 401 with the realm without a login, with
 * a wrong password, an unknown user, an empty or a one-letter-off password; 200 with the right
 * one, again from the login cache, and the cache never lets a wrong password through. The
 * probes' paths, /-/healthy and /-/ready, answer without a login while everything else wants it.
 * bcrypt's budget is per client address, and its refusals are counted.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <crypt.h>
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

#include "scan/engine.h"
#include "http/http.h"
#include "scanner/scheduler.h"
#include "privsep/served.h"
#include "http/webconfig.h"

static char cgroot[] = "/tmp/cse-auth-cg-XXXXXX";
static const struct render_meta meta = { .version = "t", .revision = "t" };

/* A scheduler over an empty cgroup tree: a body with cachestat_build_info. */
static struct scheduler *make_scheduler(void)
{
	struct collector_options co = { .cgroupfs = cgroot, .procfs = "/proc" };
	struct pagecache pc = { .abi = PAGECACHE_ABI_NONE };
	struct scan_engine *c = NULL;
	struct scheduler *sched = NULL;

	assert_non_null(mkdtemp(cgroot));
	assert_int_equal(scan_engine_new(&co, &pc, config_new_default(), &c), 0);
	assert_int_equal(scheduler_new(c, &meta, &sched), 0);
	return sched;
}

/*
 * GET path on 127.0.0.1:port from 127.0.0.FROM with the Authorization header auth (or none);
 * the response (its first 64 KiB).
 */
static char *get_from(unsigned from, unsigned port, const char *path, const char *auth)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	struct sockaddr_in src = { .sin_family = AF_INET };
	static char buf[65536];
	char req[512];
	size_t n = 0;
	ssize_t r;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	src.sin_addr.s_addr = htonl(INADDR_LOOPBACK - 1 + from);
	assert_int_equal(bind(fd, (struct sockaddr *)&src, sizeof(src)), 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: x\r\n%s%s%s\r\n", path,
		 auth ? "Authorization: Basic " : "", auth ? auth : "", auth ? "\r\n" : "");
	assert_int_equal(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	while ((r = read(fd, buf + n, sizeof(buf) - 1 - n)) > 0)
		n += (size_t)r;
	buf[n] = '\0';
	close(fd);
	return buf;
}

static char *get(unsigned port, const char *path, const char *auth)
{
	return get_from(1, port, path, auth);
}

static char web_yml[] = "/tmp/cse-auth-XXXXXX";

/* A web config with alice's password "s3cret", bcrypt-hashed by libcrypt. */
static void write_web_config(void)
{
	struct crypt_data cd = { 0 };
	char salt[CRYPT_GENSALT_OUTPUT_SIZE];
	const char *hash;
	FILE *f;
	int fd;

	assert_non_null(crypt_gensalt_rn("$2b$", 5, NULL, 0, salt, sizeof(salt)));
	hash = crypt_r("s3cret", salt, &cd);
	assert_non_null(hash);
	assert_int_equal(strlen(hash), 60);
	fd = mkstemp(web_yml);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	fprintf(f, "basic_auth_users:\n  alice: '%s'\n", hash);
	fclose(f);
}

static void test_basic_auth(void **state)
{
	struct http_options o = {
		.telemetry_path = "/metrics",
		.connection_limit = 4,
		.connection_timeout = 5,
		.web_config_file = web_yml,
	};
	struct served sv;
	unsigned port;
	struct scheduler *sched = make_scheduler();
	char *resp;

	(void)state;
	webconfig_set_bcrypt_rate(1e6, 1e6, 1e6, 1e6); /* the limits are the next test's */
	write_web_config();
	served_start(&o, sched, 39651, &sv);
	port = sv.port;

	resp = get(port, "/metrics", NULL);
	assert_non_null(strstr(resp, " 401 "));
	assert_non_null(strstr(resp, "WWW-Authenticate: Basic realm=\"cachestat_exporter\""));
	assert_null(strstr(resp, "cachestat_build_info"));
	assert_non_null(strstr(get(port, "/metrics", "YWxpY2U6d3Jvbmc="), " 401 "));     /* alice:wrong */
	assert_non_null(strstr(get(port, "/metrics", "bWFsbG9yeTpzM2NyZXQ="), " 401 ")); /* mallory:s3cret */
	assert_non_null(strstr(get(port, "/metrics", "YWxpY2U6"), " 401 "));             /* alice: */
	assert_non_null(strstr(get(port, "/metrics", "YWxpY2U6czNjcmU="), " 401 "));     /* alice:s3cre */
	assert_non_null(strstr(get(port, "/", NULL), " 401 "));

	resp = get(port, "/metrics", "YWxpY2U6czNjcmV0"); /* alice:s3cret */
	assert_non_null(strstr(resp, " 200 "));
	assert_non_null(strstr(resp, "\ncachestat_build_info{"));
	/* from the login cache now: the right password passes, others still do not */
	assert_non_null(strstr(get(port, "/metrics", "YWxpY2U6czNjcmV0"), " 200 "));
	assert_non_null(strstr(get(port, "/metrics", "YWxpY2U6czNjcmV0WA=="), " 401 ")); /* alice:s3cretX */
	assert_non_null(strstr(get(port, "/metrics", "YWxpY2U6d3Jvbmc="), " 401 "));

	/* the probes: no login needed, and a wrong one does not matter; their neighbours want it */
	resp = get(port, "/-/healthy", NULL);
	assert_non_null(strstr(resp, " 200 "));
	assert_non_null(strstr(resp, "\r\n\r\ncachestat_exporter is healthy.\n"));
	assert_non_null(strstr(get(port, "/-/ready", NULL), " 200 ")); /* a scan has ended above */
	assert_non_null(strstr(get(port, "/-/ready", "YWxpY2U6d3Jvbmc="), " 200 "));
	assert_non_null(strstr(get(port, "/-/", NULL), " 401 "));
	assert_non_null(strstr(get(port, "/-/healthyX", NULL), " 401 "));
	assert_non_null(strstr(get(port, "/-/ready/", NULL), " 401 "));
	served_stop(&sv);
	scheduler_free(sched);
	rmdir(cgroot);
	unlink(web_yml);
}

/*
 * The bcrypt budget is per client: 127.0.0.2 guessing gets 401 three times, then 429, while
 * 127.0.0.1 logs in; once the right login is remembered, it answers 127.0.0.2 as well, its
 * budget spent or not. The refusals are counted by reason.
 */
static void test_login_limits(void **state)
{
	struct http_options o = {
		.telemetry_path = "/metrics",
		.connection_limit = 8,
		.connection_timeout = 5,
		.web_config_file = web_yml,
	};
	struct served sv;
	unsigned port;
	struct scheduler *sched;
	char *resp;

	(void)state;
	strcpy(cgroot, "/tmp/cse-auth-cg-XXXXXX");
	strcpy(web_yml, "/tmp/cse-auth-XXXXXX");
	sched = make_scheduler();
	write_web_config();
	/* a thousandth of a run a second: the buckets do not refill while the test runs */
	webconfig_set_bcrypt_rate(0.001, WEBCONFIG_BCRYPT_BURST, 0.001, 3);
	served_start(&o, sched, 39851, &sv);
	port = sv.port;
	assert_non_null(strstr(get_from(2, port, "/metrics", "YWxpY2U6d3Jvbmc="), " 401 ")); /* alice:wrong */
	assert_non_null(strstr(get_from(2, port, "/metrics", "YWxpY2U6czNjcmU="), " 401 ")); /* alice:s3cre */
	assert_non_null(strstr(get_from(2, port, "/metrics", "YWxpY2U6"), " 401 "));         /* alice: */
	resp = get_from(2, port, "/metrics", "YWxpY2U6eA=="); /* alice:x */
	assert_non_null(strstr(resp, " 429 "));
	assert_non_null(strstr(resp, "Retry-After: 1"));
	assert_non_null(strstr(get_from(2, port, "/metrics", "YWxpY2U6czNjcmV0"), " 429 "));
	/* another address has its budget: the right login gets in and is remembered */
	assert_non_null(strstr(get_from(1, port, "/metrics", "YWxpY2U6czNjcmV0"), " 200 "));
	resp = get_from(2, port, "/metrics", "YWxpY2U6czNjcmV0");
	assert_non_null(strstr(resp, " 200 "));
	assert_non_null(strstr(resp, "\ncachestat_http_logins_refused_total{reason=\"wrong\"} 3\n"));
	assert_non_null(strstr(resp, "\ncachestat_http_logins_refused_total{reason=\"client_rate\"} 2\n"));
	assert_non_null(strstr(resp, "\ncachestat_http_logins_refused_total{reason=\"new_clients_rate\"} 0\n"));
	served_stop(&sv);
	scheduler_free(sched);
	rmdir(cgroot);
	unlink(web_yml);
	webconfig_set_bcrypt_rate(WEBCONFIG_BCRYPT_PER_SECOND, WEBCONFIG_BCRYPT_BURST,
				  WEBCONFIG_BCRYPT_CLIENT_PER_SECOND, WEBCONFIG_BCRYPT_CLIENT_BURST);
}

/* /-/ready before any scrape: it starts the first scan itself, and answers 200 once it ended. */
static void test_ready_starts_first_scan(void **state)
{
	struct http_options o = {
		.telemetry_path = "/metrics",
		.connection_limit = 4,
		.connection_timeout = 5,
		.web_config_file = web_yml,
	};
	struct served sv;
	unsigned port;
	struct scheduler *sched;
	struct body *b = NULL;
	bool stale = false;

	(void)state;
	strcpy(cgroot, "/tmp/cse-auth-cg-XXXXXX");
	strcpy(web_yml, "/tmp/cse-auth-XXXXXX");
	sched = make_scheduler();
	write_web_config();
	served_start(&o, sched, 39751, &sv);
	port = sv.port;
	/* no scrape yet: /-/healthy says so and starts no scan (the scheduler still has no body:
	 * a HEAD scrape, which starts none, gets the self metrics alone) */
	assert_non_null(strstr(get(port, "/-/healthy", NULL), "\r\n\r\ncachestat_exporter is healthy.\n"));
	assert_int_equal(scheduler_get(sched, 0, false, &b, &stale), -ENODATA);
	/* the readiness probe's own scan gives it one */
	assert_non_null(strstr(get(port, "/-/ready", NULL), "\r\n\r\ncachestat_exporter is ready.\n"));
	assert_int_equal(scheduler_get(sched, 0, false, &b, &stale), 0);
	body_unref(b);
	assert_non_null(strstr(get(port, "/metrics", NULL), " 401 "));
	served_stop(&sv);
	scheduler_free(sched);
	rmdir(cgroot);
	unlink(web_yml);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_basic_auth),
		cmocka_unit_test(test_ready_starts_first_scan),
		cmocka_unit_test(test_login_limits),
	};

	return cmocka_run_group_tests_name("http-auth", tests, NULL, NULL);
}
