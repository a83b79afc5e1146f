/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The handover between the scanner and the HTTP process: message framing (a short, a long
 * message, descriptors where none belong: refused, and those descriptors closed), the sealed
 * memfds (the kernel refuses a write; a file that is not sealed, or not of the announced size,
 * is refused), and a server and a client over a real socketpair, against the scheduler's own
 * body and zlib.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <zlib.h>

#include "fixture.h"
#include "parse/config.h"
#include "http/client.h"
#include "wire/channel.h"
#include "scanner/scheduler.h"
#include "scanner/server.h"
#include "scan/registry.h"

static char cgroot[] = "/tmp/cse-privsep-XXXXXX";
static const struct render_meta meta = { .version = "t", .revision = "t" };

static void pair(int sp[2])
{
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp), 0);
}

/* Descriptors open in this process (the oracle for "closed"), from /proc/self/fd. */
static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	assert_non_null(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static const struct privsep_ask good_ask = { .magic = PRIVSEP_MAGIC, .type = PRIVSEP_ASK,
					     .id = 7, .budget_ns = 1000, .scan = 1 };

static void test_framing(void **state)
{
	struct privsep_ask a;
	char big[sizeof(a) + 8] = { 0 };
	size_t n = 99;
	int sp[2];

	(void)state;
	pair(sp);
	assert_int_equal(privsep_send(sp[0], &good_ask, sizeof(good_ask), NULL, 0), 0);
	assert_int_equal(privsep_recv(sp[1], &a, sizeof(a), NULL, 0, &n), 0);
	assert_int_equal(n, 0);
	assert_true(privsep_ask_valid(&a));
	assert_int_equal(a.id, 7);
	/* truncated: half an ask */
	assert_int_equal(privsep_send(sp[0], &good_ask, sizeof(good_ask) / 2, NULL, 0), 0);
	assert_int_equal(privsep_recv(sp[1], &a, sizeof(a), NULL, 0, &n), -EBADMSG);
	/* oversized: an ask and more */
	memcpy(big, &good_ask, sizeof(good_ask));
	assert_int_equal(privsep_send(sp[0], big, sizeof(big), NULL, 0), 0);
	assert_int_equal(privsep_recv(sp[1], &a, sizeof(a), NULL, 0, &n), -EMSGSIZE);
	/* the end of the stream */
	close(sp[0]);
	assert_int_equal(privsep_recv(sp[1], &a, sizeof(a), NULL, 0, &n), -ECONNRESET);
	close(sp[1]);
}

static void test_fds_refused_are_closed(void **state)
{
	struct privsep_ask a;
	int sp[2], fds[2], before;
	size_t n = 0;

	(void)state;
	pair(sp);
	fds[0] = open("/dev/null", O_RDONLY | O_CLOEXEC);
	fds[1] = open("/dev/null", O_RDONLY | O_CLOEXEC);
	assert_true(fds[0] >= 0 && fds[1] >= 0);
	assert_int_equal(privsep_send(sp[0], &good_ask, sizeof(good_ask), fds, 2), 0);
	close(fds[0]);
	close(fds[1]);
	before = open_fds(); /* the two in flight are not installed yet */
	assert_int_equal(privsep_recv(sp[1], &a, sizeof(a), NULL, 0, &n), -EBADMSG);
	assert_int_equal(open_fds(), before);
	/* three descriptors are more than any message carries */
	assert_int_equal(privsep_send(sp[0], &good_ask, sizeof(good_ask), fds, 3), -EINVAL);
	close(sp[0]);
	close(sp[1]);
}

static void test_validity(void **state)
{
	struct privsep_answer b = { .magic = PRIVSEP_MAGIC, .type = PRIVSEP_BODY, .id = 1,
				    .seq = 1, .text_len = 10, .gz_len = 5 };
	struct privsep_answer none = { .magic = PRIVSEP_MAGIC, .type = PRIVSEP_NONE, .id = 1 };
	struct privsep_ask a = good_ask;

	(void)state;
	assert_true(privsep_answer_valid(&b, 2));
	assert_false(privsep_answer_valid(&b, 1));
	b.gz_len = 0;
	assert_true(privsep_answer_valid(&b, 1));
	b.text_len = PRIVSEP_MAX_BODY + 1;
	assert_false(privsep_answer_valid(&b, 1));
	assert_true(privsep_answer_valid(&none, 0));
	assert_false(privsep_answer_valid(&none, 1));
	none.magic ^= 1;
	assert_false(privsep_answer_valid(&none, 0));
	a.type = PRIVSEP_BODY;
	assert_false(privsep_ask_valid(&a));
	a = good_ask;
	a.budget_ns = PRIVSEP_MAX_BUDGET_NS + 1;
	assert_false(privsep_ask_valid(&a));
}

static void test_memfd(void **state)
{
	const void *p = NULL;
	int fd, plain;

	(void)state;
	fd = privsep_memfd("t", "hello", 5);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "x", 1), -1); /* the kernel refuses: sealed */
	assert_int_equal(errno, EPERM);
	assert_int_equal(ftruncate(fd, 1), -1);
	assert_int_equal(privsep_map(fd, 4, &p), -EBADMSG);
	assert_int_equal(privsep_map(fd, 5, &p), 0);
	assert_memory_equal(p, "hello", 5);
	munmap((void *)(uintptr_t)p, 5);
	close(fd);
	/* a memfd without the seals, and a file that cannot be sealed */
	fd = memfd_create("t", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	assert_int_equal(write(fd, "hello", 5), 5);
	assert_int_equal(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
	assert_int_equal(privsep_map(fd, 5, &p), -EPERM);
	close(fd);
	plain = open("/dev/null", O_RDONLY | O_CLOEXEC);
	assert_int_equal(privsep_map(plain, 0, &p), -EPERM);
	close(plain);
	fd = privsep_memfd("t", "", 0);
	assert_int_equal(privsep_map(fd, 0, &p), 0);
	assert_null(p);
	close(fd);
}

/* A waiter that a thread sleeps on. */
struct waiting {
	struct body_waiter w;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool woken;
};

static void waiting_wake(void *userdata)
{
	struct waiting *x = userdata;

	pthread_mutex_lock(&x->lock);
	x->woken = true;
	pthread_cond_signal(&x->cond);
	pthread_mutex_unlock(&x->lock);
}

/* One ask through c: the body, or NULL (*ret_r says why). */
static struct body *ask(struct privsep_client *c, bool scan, bool *ret_stale, int *ret_r)
{
	struct waiting x = { .w = { .wake = waiting_wake } };
	struct body *b = NULL;
	int r;

	x.w.userdata = &x;
	pthread_mutex_init(&x.lock, NULL);
	pthread_cond_init(&x.cond, NULL);
	r = privsep_client_enqueue(c, 5000000000ULL, scan, &x.w);
	assert_true(r >= 0);
	pthread_mutex_lock(&x.lock);
	while (r == 0 && !x.woken)
		pthread_cond_wait(&x.cond, &x.lock);
	pthread_mutex_unlock(&x.lock);
	*ret_r = privsep_client_take(c, &x.w, &b, ret_stale);
	pthread_mutex_destroy(&x.lock);
	pthread_cond_destroy(&x.cond);
	return b;
}

static struct scheduler *make_scheduler(void)
{
	struct collector_options co = { .cgroupfs = cgroot, .procfs = "/proc",
					.enable = { true, true, true } };
	struct pagecache pc = { .abi = PAGECACHE_ABI_NONE };
	struct scan_engine *c = NULL;
	struct scheduler *sched = NULL;

	assert_int_equal(scan_engine_new(&co, &pc, config_new_default(), &c), 0);
	assert_int_equal(scheduler_new(c, &meta, &sched), 0);
	return sched;
}

static atomic_int lost_error;
static void on_lost(void *userdata, int error)
{
	(void)userdata;
	atomic_store(&lost_error, error);
}

static void test_server_client(void **state)
{
	struct scheduler *sched = make_scheduler();
	struct privsep_server *srv = NULL;
	struct privsep_client *c = NULL;
	struct body *b, *local = NULL, *again;
	unsigned char plain[1 << 16];
	uLongf plain_len = sizeof(plain);
	bool stale = true;
	uint64_t stuck, restarts;
	int sp[2], r;

	(void)state;
	pair(sp);
	assert_int_equal(privsep_server_new(sched, &srv), 0);
	assert_int_equal(privsep_server_add(srv, sp[0]), 0);
	assert_int_equal(privsep_client_new(sp[1], on_lost, NULL, &c), 0);
	privsep_server_set_restarts(srv, 3);
	b = ask(c, true, &stale, &r);
	assert_int_equal(r, 0);
	assert_false(stale);
	/* the scheduler's own body of that scan, byte for byte */
	assert_int_equal(scheduler_get(sched, 0, false, &local, &stale), 0);
	assert_int_equal(local->seq, b->seq);
	assert_int_equal(b->len, local->len);
	assert_memory_equal(b->text, local->text, b->len);
	assert_non_null(strstr(b->text, "cachestat_build_info"));
	/* the gzip member, ended as a scrape ends it, decodes to the text; zlib checks the
	 * trailer's CRC-32 (of the mapped text) and length */
	assert_non_null(b->gz);
	{
		unsigned char *end = NULL, *all;
		size_t end_len = 0;
		z_stream z = { 0 };

		assert_int_equal(body_gzip_end(b->crc, b->len, "", 0, &end, &end_len), 0);
		all = malloc(b->gz_len + end_len);
		assert_non_null(all);
		memcpy(all, b->gz, b->gz_len);
		memcpy(all + b->gz_len, end, end_len);
		z = (z_stream){ .next_in = all, .avail_in = (uInt)(b->gz_len + end_len),
				.next_out = plain, .avail_out = (uInt)plain_len };
		assert_int_equal(inflateInit2(&z, 16 + 15), Z_OK);
		assert_int_equal(inflate(&z, Z_FINISH), Z_STREAM_END);
		assert_int_equal(z.total_out, b->len);
		assert_int_equal(z.avail_in, 0);
		inflateEnd(&z);
		free(all);
		free(end);
	}
	assert_memory_equal(plain, b->text, b->len);
	privsep_client_counters(c, &stuck, &restarts);
	assert_int_equal(restarts, 3);
	assert_int_equal(stuck, 0);
	/* HEAD: the same scan, the same mapping */
	again = ask(c, false, &stale, &r);
	assert_int_equal(r, 0);
	assert_ptr_equal(again, b);
	body_unref(again);
	body_unref(local);
	body_unref(b);
	privsep_client_free(c);
	privsep_server_free(srv);
	scheduler_free(sched);
	assert_int_equal(atomic_load(&lost_error), 0);
}

/* A client whose peer is the test: the answers it gets are written by hand. */
static struct privsep_client *raw_client(int *ret_peer)
{
	struct privsep_client *c = NULL;
	int sp[2];

	pair(sp);
	atomic_store(&lost_error, 0);
	assert_int_equal(privsep_client_new(sp[1], on_lost, NULL, &c), 0);
	*ret_peer = sp[0];
	return c;
}

struct bad_answer {
	int peer;
	struct privsep_answer a;
	size_t len;
	int fd; /* -1: none */
};

/* Answers the one ask that comes with b's message. */
static void *answer_badly(void *arg)
{
	struct bad_answer *b = arg;
	struct privsep_ask a;
	size_t n;

	assert_int_equal(privsep_recv(b->peer, &a, sizeof(a), NULL, 0, &n), 0);
	b->a.id = a.id;
	privsep_send(b->peer, &b->a, b->len, &b->fd, b->fd >= 0 ? 1 : 0);
	return NULL;
}

static void expect_lost(struct bad_answer *bad, int error)
{
	struct privsep_client *c = raw_client(&bad->peer);
	bool stale = false;
	pthread_t t;
	int r;

	assert_int_equal(pthread_create(&t, NULL, answer_badly, bad), 0);
	assert_null(ask(c, true, &stale, &r)); /* woken, with nothing to serve */
	assert_int_equal(r, -ENODATA);
	pthread_join(t, NULL);
	for (int i = 0; i < 2000 && atomic_load(&lost_error) == 0; i++)
		usleep(1000); /* the receiving thread calls lost after it woke the waiter */
	privsep_client_free(c);
	assert_int_equal(atomic_load(&lost_error), error);
	close(bad->peer);
	if (bad->fd >= 0)
		close(bad->fd);
}

static void test_client_refuses(void **state)
{
	struct privsep_answer body = { .magic = PRIVSEP_MAGIC, .type = PRIVSEP_BODY, .seq = 1,
				       .text_len = 5 };
	struct bad_answer bad = { .a = body, .len = sizeof(body) - 4, .fd = -1 };

	(void)state;
	expect_lost(&bad, -EBADMSG); /* truncated */
	bad = (struct bad_answer){ .a = body, .len = sizeof(body), .fd = -1 };
	expect_lost(&bad, -EBADMSG); /* a body without its descriptor */
	bad.fd = memfd_create("t", MFD_CLOEXEC);
	assert_int_equal(write(bad.fd, "hello", 5), 5);
	expect_lost(&bad, -EPERM); /* a memfd that is not sealed */
	bad.fd = privsep_memfd("t", "hello!", 6);
	expect_lost(&bad, -EBADMSG); /* not of the size announced */
}

static void test_server_drops_bad_client(void **state)
{
	struct scheduler *sched = make_scheduler();
	struct privsep_server *srv = NULL;
	char buf[64];
	int sp[2];

	(void)state;
	pair(sp);
	assert_int_equal(privsep_server_new(sched, &srv), 0);
	assert_int_equal(privsep_server_add(srv, sp[0]), 0);
	assert_int_equal(privsep_send(sp[1], &good_ask, sizeof(good_ask) - 1, NULL, 0), 0);
	assert_int_equal(recv(sp[1], buf, sizeof(buf), 0), 0); /* the end of the stream */
	close(sp[1]);
	privsep_server_free(srv);
	scheduler_free(sched);
}

/* A client that asks and never reads its answers is dropped once an answer waits too long. */
static void test_server_drops_deaf_client(void **state)
{
	struct scheduler *sched = make_scheduler();
	struct privsep_server *srv = NULL;
	struct privsep_ask head = good_ask;
	char buf[256];
	ssize_t n;
	int sp[2];

	(void)state;
	head.scan = 0; /* answered at once, from the reader thread */
	pair(sp);
	assert_int_equal(privsep_server_new(sched, &srv), 0);
	assert_int_equal(privsep_server_add(srv, sp[0]), 0);
	/* until an ask waits 0.5 s: the server no longer reads, stuck sending an answer */
	assert_int_equal(setsockopt(sp[1], SOL_SOCKET, SO_SNDTIMEO,
				    &(struct timeval){ .tv_usec = 500000 }, sizeof(struct timeval)), 0);
	for (int i = 0; i < 100000; i++)
		if (send(sp[1], &head, sizeof(head), MSG_NOSIGNAL) < 0)
			break;
	assert_int_equal(errno, EAGAIN);
	usleep((PRIVSEP_SEND_TIMEOUT_MS + 1000) * 1000);
	assert_int_equal(setsockopt(sp[1], SOL_SOCKET, SO_RCVTIMEO,
				    &(struct timeval){ .tv_sec = 5 }, sizeof(struct timeval)), 0);
	do {
		struct msghdr mh = { .msg_iov = &(struct iovec){ buf, sizeof(buf) }, .msg_iovlen = 1 };
		char cbuf[CMSG_SPACE(sizeof(int) * 2)];

		mh.msg_control = cbuf;
		mh.msg_controllen = sizeof(cbuf);
		n = recvmsg(sp[1], &mh, MSG_CMSG_CLOEXEC);
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); n > 0 && c; c = CMSG_NXTHDR(&mh, c))
			for (size_t k = 0; k < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); k++)
				close(((int *)(void *)CMSG_DATA(c))[k]);
	} while (n > 0);
	assert_int_equal(n < 0 ? errno : 0, 0); /* the end of the stream, not the receive timeout */
	assert_int_equal(n, 0);
	close(sp[1]);
	privsep_server_free(srv);
	scheduler_free(sched);
}

/* A cachestat held until the test opens scan_gate (10 s at most): the scan a flood of asks waits on. */
static sem_t scan_gate;

/* fixture.h's fake cachestat, for any file: nothing cached, once scan_gate opens. */
static long gated(int fd, struct pagecache_cachestat *cs)
{
	struct timespec until;

	(void)fd;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 10;
	while (sem_timedwait(&scan_gate, &until) < 0 && errno == EINTR)
		;
	*cs = (struct pagecache_cachestat){ 0 };
	return 0;
}

/* A scheduler whose scans cachestat one configured file (this test's cgroup root's), slowly. */
static struct scheduler *make_slow_scheduler(void)
{
	struct collector_options co = { .cgroupfs = cgroot, .procfs = "/proc" };
	struct pagecache pc = { .abi = PAGECACHE_ABI_MAINLINE, .sys = fake_cachestat };
	struct scan_engine *c = NULL;
	struct scheduler *sched = NULL;
	struct config *cfg = NULL;
	char *json = NULL, *err = NULL, data[64];

	co.enable[registry_find("cachestat")] = true;
	fake.answer = gated;
	tree_cgroups(cgroot, "."); /* the root cgroup, no process */
	tree_write(cgroot, "data", "x\n");
	snprintf(data, sizeof(data), "%s/data", cgroot);
	assert_true(asprintf(&json, "{ \"cgroups\": [ { \"match\": \"/\", \"paths\": [\"%s\"] } ] }",
			     data) > 0);
	if (config_parse(json, strlen(json), "t", &cfg, &err) < 0)
		fail_msg("config: %s", err);
	free(json);
	assert_int_equal(scan_engine_new(&co, &pc, cfg, &c), 0);
	assert_int_equal(scheduler_new(c, &meta, &sched), 0);
	return sched;
}

/*
 * A client that piles up asks while a scan runs is dropped at PRIVSEP_MAX_PENDING asks, at
 * once, before any answer: not once the scan ends and its answers go unread (the deaf client).
 */
static void test_server_drops_flooding_client(void **state)
{
	struct scheduler *sched = make_slow_scheduler();
	struct privsep_server *srv = NULL;
	struct privsep_ask ask = good_ask;
	uint64_t t0;
	char buf[256];
	int sp[2], sent = 0, answers = 0;
	ssize_t n;

	(void)state;
	sem_init(&scan_gate, 0, 0);
	ask.budget_ns = 60000000000ULL; /* they all wait for the scan */
	pair(sp);
	assert_int_equal(privsep_server_new(sched, &srv), 0);
	assert_int_equal(privsep_server_add(srv, sp[0]), 0);
	t0 = scheduler_now_ns();
	assert_int_equal(setsockopt(sp[1], SOL_SOCKET, SO_SNDTIMEO,
				    &(struct timeval){ .tv_sec = 5 }, sizeof(struct timeval)), 0);
	while (sent < 2 * PRIVSEP_MAX_PENDING && send(sp[1], &ask, sizeof(ask), MSG_NOSIGNAL) > 0)
		sent++;
	assert_true(sent > PRIVSEP_MAX_PENDING);
	assert_true(sent < 2 * PRIVSEP_MAX_PENDING);
	assert_int_equal(setsockopt(sp[1], SOL_SOCKET, SO_RCVTIMEO,
				    &(struct timeval){ .tv_sec = 10 }, sizeof(struct timeval)), 0);
	while ((n = recv(sp[1], buf, sizeof(buf), 0)) > 0)
		answers++;
	assert_int_equal(n, 0); /* the end of the stream, not the receive timeout */
	assert_int_equal(answers, 0); /* dropped for the asks pending, not for answers unread */
	assert_true((double)(scheduler_now_ns() - t0) / 1e9 < 8);
	close(sp[1]);
	privsep_server_free(srv);
	scheduler_free(sched);
	sem_post(&scan_gate); /* the scan ends; its thread frees the scheduler: let it finish here */
	sleep(1);
	snprintf(buf, sizeof(buf), "%s/data", cgroot);
	assert_int_equal(unlink(buf), 0);
	snprintf(buf, sizeof(buf), "%s/cgroup.procs", cgroot);
	assert_int_equal(unlink(buf), 0);
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
		cmocka_unit_test(test_framing),
		cmocka_unit_test(test_fds_refused_are_closed),
		cmocka_unit_test(test_validity),
		cmocka_unit_test(test_memfd),
		cmocka_unit_test(test_server_client),
		cmocka_unit_test(test_client_refuses),
		cmocka_unit_test(test_server_drops_bad_client),
		cmocka_unit_test(test_server_drops_deaf_client),
		cmocka_unit_test(test_server_drops_flooding_client),
	};

	return cmocka_run_group_tests_name("privsep", tests, setup, teardown);
}
