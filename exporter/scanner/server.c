/* SPDX-License-Identifier: Apache-2.0 */
/*
 * server, the channel's scanner side: one thread per HTTP process reads its asks and hands them
 * to the scheduler; each is answered when the scheduler wakes it (from the scheduler's threads).
 * The memfds of the latest body are made once and passed to every answer of it.
 */
#define _GNU_SOURCE
#include "scanner/server.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "base/log.h"
#include "base/util.h"
#include "scanner/scheduler.h"
#include "wire/channel.h"

struct privsep_server {
	atomic_int refs; /* the owner's, and one per connection */
	struct scheduler *sched;
	atomic_uint_fast64_t restarts;
	pthread_mutex_t lock; /* all below */
	pthread_cond_t ended; /* a reader thread ended */
	unsigned readers;
	struct ps_conn *conns;
	uint64_t cached_seq; /* the body of text_fd and gz_fd; 0: none */
	int text_fd, gz_fd;
};

/* One HTTP process. */
struct ps_conn {
	atomic_int refs; /* the reader thread's, and one per ask pending */
	struct privsep_server *srv;
	int sock;
	pthread_mutex_t send_lock;
	struct ps_conn *next;
};

/* One ask, waiting in the scheduler. */
struct ps_wait {
	struct body_waiter w;
	struct ps_conn *conn;
	uint64_t id;
};

static void server_unref(struct privsep_server *srv)
{
	if (atomic_fetch_sub(&srv->refs, 1) != 1)
		return;
	closep(&srv->text_fd);
	closep(&srv->gz_fd);
	pthread_mutex_destroy(&srv->lock);
	pthread_cond_destroy(&srv->ended);
	free(srv);
}

static void conn_unref(struct ps_conn *conn)
{
	if (atomic_fetch_sub(&conn->refs, 1) != 1)
		return;
	closep(&conn->sock);
	pthread_mutex_destroy(&conn->send_lock);
	server_unref(conn->srv);
	free(conn);
}

/* Under srv->lock: memfds of b, made unless they are b's already. Returns 0 or -errno. */
static int cache_body(struct privsep_server *srv, const struct body *b)
{
	_cleanup_close_ int text = -1, gz = -1;

	if (srv->cached_seq == b->seq)
		return 0;
	text = privsep_memfd("cachestat-body", b->text, b->len);
	if (text < 0)
		return text;
	if (b->gz) {
		gz = privsep_memfd("cachestat-body.gz", b->gz, b->gz_len);
		if (gz < 0)
			return gz;
	}
	closep(&srv->text_fd);
	closep(&srv->gz_fd);
	srv->text_fd = TAKE_FD(text);
	srv->gz_fd = TAKE_FD(gz);
	srv->cached_seq = b->seq;
	return 0;
}

/* Copies of the descriptors of b's memfds into fds; returns how many (0: out of memory). */
static size_t body_fds(struct privsep_server *srv, const struct body *b, int fds[2])
{
	size_t n = 0;

	pthread_mutex_lock(&srv->lock);
	if (cache_body(srv, b) == 0) {
		fds[0] = fcntl(srv->text_fd, F_DUPFD_CLOEXEC, 3);
		fds[1] = srv->gz_fd >= 0 ? fcntl(srv->gz_fd, F_DUPFD_CLOEXEC, 3) : -1;
		n = fds[0] < 0 || (srv->gz_fd >= 0 && fds[1] < 0) ? 0 : fds[1] >= 0 ? 2 : 1;
	}
	pthread_mutex_unlock(&srv->lock);
	return n;
}

/* The answer to pw: the body the scheduler has for it, or none yet. */
static void answer(struct ps_wait *pw)
{
	struct privsep_server *srv = pw->conn->srv;
	struct privsep_answer a = { .magic = PRIVSEP_MAGIC, .type = PRIVSEP_NONE, .id = pw->id };
	struct body *b = NULL;
	int fds[2] = { -1, -1 };
	bool stale = false;
	size_t n_fds = 0;

	a.stuck_total = scheduler_stuck_total(srv->sched);
	a.restarts_total = atomic_load(&srv->restarts);
	if (scheduler_take(srv->sched, &pw->w, &b, &stale) == 0) {
		static struct log_repeat scan_problem;

		/* the same problem comes back with every scan: logged once, then counted */
		if (b->problem && !atomic_exchange(&b->problem_taken, true))
			log_warn_repeat(&scan_problem, "scan problem\tproblem=%s", b->problem);
		n_fds = body_fds(srv, b, fds);
		if (n_fds > 0) {
			a.type = PRIVSEP_BODY;
			a.seq = b->seq;
			a.done_ns = b->done_ns;
			a.text_len = b->len;
			a.gz_len = n_fds == 2 ? b->gz_len : 0;
			a.stale = stale;
		}
		body_unref(b);
	}
	pthread_mutex_lock(&pw->conn->send_lock);
	/* a peer gone is the reader's to see; one that does not read is dropped */
	a.log_repeats_total = log_repeats_suppressed();
	if (privsep_send(pw->conn->sock, &a, sizeof(a), fds, n_fds) == -EAGAIN) {
		log_warn("HTTP process leaves its answers unread; closing its channel");
		shutdown(pw->conn->sock, SHUT_RDWR);
	}
	pthread_mutex_unlock(&pw->conn->send_lock);
	closep(&fds[0]);
	closep(&fds[1]);
}

static void wait_wake(void *userdata)
{
	struct ps_wait *pw = userdata;

	answer(pw);
	conn_unref(pw->conn);
	free(pw);
}

/* Hands an ask to the scheduler; answered at once when it need not wait. */
static void conn_ask(struct ps_conn *conn, const struct privsep_ask *ask)
{
	struct ps_wait *pw = calloc(1, sizeof(*pw));
	int r;

	if (!pw) {
		struct ps_wait none = { .conn = conn, .id = ask->id };

		answer(&none);
		return;
	}
	pw->w = (struct body_waiter){ .wake = wait_wake, .userdata = pw };
	pw->id = ask->id;
	pw->conn = conn;
	atomic_fetch_add(&conn->refs, 1);
	r = scheduler_enqueue(conn->srv->sched, ask->budget_ns, ask->scan, &pw->w);
	if (r != 0)
		wait_wake(pw); /* at once (1), or what there is (-ENOMEM) */
}

/* Under srv->lock: conn out of the list. */
static void conn_unlink(struct privsep_server *srv, struct ps_conn *conn)
{
	for (struct ps_conn **p = &srv->conns; *p; p = &(*p)->next)
		if (*p == conn) {
			*p = conn->next;
			return;
		}
}

static void *conn_reader(void *arg)
{
	struct ps_conn *conn = arg;
	struct privsep_server *srv = conn->srv;

	for (;;) {
		struct privsep_ask ask;
		size_t n_fds = 0;
		int r = privsep_recv(conn->sock, &ask, sizeof(ask), NULL, 0, &n_fds);

		if (r == 0 && !privsep_ask_valid(&ask))
			r = -EBADMSG;
		if (r == 0 && atomic_load(&conn->refs) > PRIVSEP_MAX_PENDING)
			r = -ENOBUFS;
		if (r < 0) {
			if (r == -ENOBUFS)
				log_warn("HTTP process has too many asks pending; closing its channel"
					 "\tpending=%d", PRIVSEP_MAX_PENDING);
			else if (r != -ECONNRESET && r != -ESHUTDOWN)
				log_warn("HTTP process sent a bad message; closing its channel\terr=%s",
					 strerror(-r));
			break;
		}
		conn_ask(conn, &ask);
	}
	shutdown(conn->sock, SHUT_RDWR); /* the peer sees the end */
	pthread_mutex_lock(&srv->lock);
	conn_unlink(srv, conn);
	srv->readers--;
	pthread_cond_broadcast(&srv->ended);
	pthread_mutex_unlock(&srv->lock);
	conn_unref(conn);
	return NULL;
}

int privsep_server_new(struct scheduler *sched, struct privsep_server **ret)
{
	struct privsep_server *srv = calloc(1, sizeof(*srv));

	if (!srv)
		return -ENOMEM;
	atomic_init(&srv->refs, 1);
	srv->sched = sched;
	srv->text_fd = srv->gz_fd = -1;
	pthread_mutex_init(&srv->lock, NULL);
	pthread_cond_init(&srv->ended, NULL);
	*ret = srv;
	return 0;
}

int privsep_server_add(struct privsep_server *srv, int sock)
{
	_cleanup_close_ int fd = sock;
	struct ps_conn *conn = calloc(1, sizeof(*conn));
	pthread_attr_t attr;
	pthread_t t;
	int r;

	if (!conn)
		return -ENOMEM;
	atomic_init(&conn->refs, 1);
	conn->srv = srv;
	conn->sock = TAKE_FD(fd);
	(void)setsockopt(conn->sock, SOL_SOCKET, SO_SNDTIMEO,
			 &(struct timeval){ .tv_sec = PRIVSEP_SEND_TIMEOUT_MS / 1000,
					    .tv_usec = PRIVSEP_SEND_TIMEOUT_MS % 1000 * 1000 },
			 sizeof(struct timeval));
	pthread_mutex_init(&conn->send_lock, NULL);
	atomic_fetch_add(&srv->refs, 1);
	pthread_mutex_lock(&srv->lock);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	r = pthread_create(&t, &attr, conn_reader, conn);
	pthread_attr_destroy(&attr);
	if (r == 0) {
		conn->next = srv->conns;
		srv->conns = conn;
		srv->readers++;
	}
	pthread_mutex_unlock(&srv->lock);
	if (r != 0)
		conn_unref(conn);
	return -r;
}

void privsep_server_set_restarts(struct privsep_server *srv, uint64_t n)
{
	atomic_store(&srv->restarts, n);
}

void privsep_server_free(struct privsep_server *srv)
{
	if (!srv)
		return;
	pthread_mutex_lock(&srv->lock);
	for (struct ps_conn *c = srv->conns; c; c = c->next)
		shutdown(c->sock, SHUT_RDWR);
	while (srv->readers > 0)
		pthread_cond_wait(&srv->ended, &srv->lock);
	pthread_mutex_unlock(&srv->lock);
	server_unref(srv);
}
