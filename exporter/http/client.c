/* SPDX-License-Identifier: Apache-2.0 */
/*
 * client, the channel's HTTP side: asks go out from the serving threads, a thread of its own
 * receives the answers, maps their memfds read-only and wakes the waiter of each. Answers of the
 * same scan share one mapping. Never logs: the lost callback is told why the channel ended.
 */
#define _GNU_SOURCE
#include "http/client.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include "base/util.h"
#include "http/http.h"
#include "wire/channel.h"

/* One ask sent, not answered yet; then its answer, until taken. */
struct ps_pending {
	uint64_t id;
	struct body_waiter *w;
	struct body *body; /* NULL: none */
	bool stale;
	struct ps_pending *next;
};

struct privsep_client {
	int sock;
	pthread_t thread;
	void (*lost)(void *userdata, int error);
	void *userdata;
	atomic_bool stopping;
	atomic_uint_fast64_t stuck, restarts, log_repeats;
	pthread_mutex_t lock; /* all below, and the sends */
	struct ps_pending *pending;
	uint64_t next_id;
	struct body *latest; /* the last body mapped */
	bool gone;                 /* the scanner is: asks are answered with latest at once */
};

static void mapped_release(struct body *b)
{
	if (b->len)
		munmap(b->text, b->len);
	if (b->gz)
		munmap(b->gz, b->gz_len);
	free(b->problem);
	free(b);
}

/* A body of the answer's memfds (closed here in every case). Returns 0 or -errno. */
static int map_body(const struct privsep_answer *a, int fds[2], struct body **ret)
{
	struct body *b = calloc(1, sizeof(*b));
	const void *text = NULL, *gz = NULL;
	int r;

	r = b ? privsep_map(fds[0], a->text_len, &text) : -ENOMEM;
	if (r == 0 && a->gz_len) {
		r = privsep_map(fds[1], a->gz_len, &gz);
		if (r < 0 && text)
			munmap((void *)(uintptr_t)text, a->text_len);
	}
	closep(&fds[0]);
	if (a->gz_len)
		closep(&fds[1]);
	if (r < 0) {
		free(b);
		return r;
	}
	atomic_init(&b->refs, 1);
	b->seq = a->seq;
	b->done_ns = a->done_ns;
	b->text = text ? (char *)(uintptr_t)text : NULL;
	b->len = a->text_len;
	b->gz = (unsigned char *)(uintptr_t)gz;
	b->gz_len = a->gz_len;
	b->crc = (uint32_t)crc32(0, (const Bytef *)b->text, (uInt)b->len); /* once per scan */
	b->release = mapped_release;
	*ret = b;
	return 0;
}

/* The body of an answer: the mapping of its scan when there is one, else a new one. */
static int answer_body(struct privsep_client *c, const struct privsep_answer *a, int fds[2],
		       struct body **ret)
{
	struct body *b = NULL, *old;
	int r;

	pthread_mutex_lock(&c->lock);
	if (c->latest && c->latest->seq == a->seq)
		b = body_ref(c->latest);
	pthread_mutex_unlock(&c->lock);
	if (b) {
		closep(&fds[0]);
		if (a->gz_len)
			closep(&fds[1]);
		*ret = b;
		return 0;
	}
	r = map_body(a, fds, &b);
	if (r < 0)
		return r;
	pthread_mutex_lock(&c->lock);
	old = c->latest;
	c->latest = body_ref(b);
	pthread_mutex_unlock(&c->lock);
	body_unref(old);
	*ret = b;
	return 0;
}

/* Under lock: the pending ask of id out of the list, or NULL. */
static struct ps_pending *pending_take(struct privsep_client *c, uint64_t id)
{
	for (struct ps_pending **p = &c->pending; *p; p = &(*p)->next)
		if ((*p)->id == id) {
			struct ps_pending *found = *p;

			*p = found->next;
			return found;
		}
	return NULL;
}

/* One answer: its waiter woken with the body. Returns 0 or -errno (the channel is bad). */
static int client_answer(struct privsep_client *c, const struct privsep_answer *a, int fds[2])
{
	struct body *b = NULL;
	struct ps_pending *p;
	int r;

	if (a->type == PRIVSEP_BODY) {
		r = answer_body(c, a, fds, &b);
		if (r < 0)
			return r;
	}
	atomic_store(&c->stuck, a->stuck_total);
	atomic_store(&c->restarts, a->restarts_total);
	atomic_store(&c->log_repeats, a->log_repeats_total);
	pthread_mutex_lock(&c->lock);
	p = pending_take(c, a->id);
	if (p) {
		p->body = b;
		p->stale = a->stale;
	}
	pthread_mutex_unlock(&c->lock);
	if (!p) {
		body_unref(b); /* its waiter was woken already (privsep_client_wake_all) */
		return 0;
	}
	p->w->wake(p->w->userdata);
	return 0;
}

/* Wakes every pending ask with the latest body, stale; with gone, later asks get it at once. */
static void wake_pending(struct privsep_client *c, bool gone)
{
	struct ps_pending *list;

	pthread_mutex_lock(&c->lock);
	list = TAKE_PTR(c->pending);
	c->gone |= gone;
	for (struct ps_pending *p = list; p; p = p->next) {
		p->body = body_ref(c->latest);
		p->stale = true;
	}
	pthread_mutex_unlock(&c->lock);
	while (list) {
		struct ps_pending *next = list->next;

		list->w->wake(list->w->userdata);
		list = next;
	}
}

static void *client_reader(void *arg)
{
	struct privsep_client *c = arg;
	int r;

	for (;;) {
		struct privsep_answer a;
		int fds[PRIVSEP_MAX_FDS] = { -1, -1 };
		size_t n = 0;

		r = privsep_recv(c->sock, &a, sizeof(a), fds, PRIVSEP_MAX_FDS, &n);
		if (r == 0 && !privsep_answer_valid(&a, n)) {
			for (size_t i = 0; i < n; i++)
				closep(&fds[i]);
			r = -EBADMSG;
		}
		if (r == 0)
			r = client_answer(c, &a, fds);
		if (r < 0)
			break;
	}
	wake_pending(c, true);
	if (!atomic_load(&c->stopping) && c->lost)
		c->lost(c->userdata, r);
	return NULL;
}

int privsep_client_new(int sock, void (*lost)(void *userdata, int error), void *userdata,
		       struct privsep_client **ret)
{
	_cleanup_close_ int fd = sock;
	struct privsep_client *c = calloc(1, sizeof(*c));
	int r;

	if (!c)
		return -ENOMEM;
	c->sock = TAKE_FD(fd);
	c->lost = lost;
	c->userdata = userdata;
	pthread_mutex_init(&c->lock, NULL);
	r = pthread_create(&c->thread, NULL, client_reader, c);
	if (r != 0) {
		close(c->sock);
		pthread_mutex_destroy(&c->lock);
		free(c);
		return -r;
	}
	*ret = c;
	return 0;
}

int privsep_client_enqueue(struct privsep_client *c, uint64_t budget_ns, bool scan,
			   struct body_waiter *w)
{
	struct ps_pending *p = calloc(1, sizeof(*p));
	struct privsep_ask a = { .magic = PRIVSEP_MAGIC, .type = PRIVSEP_ASK, .scan = scan };
	int r = -ENOTCONN;

	if (!p)
		return -ENOMEM;
	w->source_data = p;
	a.budget_ns = budget_ns < PRIVSEP_MAX_BUDGET_NS ? budget_ns : PRIVSEP_MAX_BUDGET_NS;
	pthread_mutex_lock(&c->lock);
	if (!c->gone) {
		a.id = p->id = ++c->next_id;
		p->w = w;
		r = privsep_send(c->sock, &a, sizeof(a), NULL, 0);
	}
	if (r == 0) {
		p->next = c->pending;
		c->pending = p;
	} else {
		p->body = body_ref(c->latest); /* no scanner: what there is, at once */
		p->stale = true;
	}
	pthread_mutex_unlock(&c->lock);
	return r == 0 ? 0 : 1;
}

int privsep_client_take(struct privsep_client *c, const struct body_waiter *w,
			struct body **ret, bool *ret_stale)
{
	struct ps_pending *p = w->source_data;
	struct body *b;
	bool stale;

	(void)c;
	if (!p)
		return -ENODATA;
	b = p->body;
	stale = p->stale;
	free(p);
	if (!b)
		return -ENODATA;
	*ret = b;
	*ret_stale = stale;
	return 0;
}

void privsep_client_wake_all(struct privsep_client *c)
{
	wake_pending(c, false);
}

uint64_t privsep_client_log_repeats(struct privsep_client *c)
{
	return atomic_load(&c->log_repeats);
}

void privsep_client_counters(struct privsep_client *c, uint64_t *ret_stuck, uint64_t *ret_restarts)
{
	*ret_stuck = atomic_load(&c->stuck);
	*ret_restarts = atomic_load(&c->restarts);
}

/* The calls of struct http_source, each the client's own with impl as the client. */
static int source_enqueue(void *impl, uint64_t budget_ns, bool scan, struct body_waiter *w)
{
	return privsep_client_enqueue(impl, budget_ns, scan, w);
}

static int source_take(void *impl, const struct body_waiter *w, struct body **ret,
		       bool *ret_stale)
{
	return privsep_client_take(impl, w, ret, ret_stale);
}

static void source_wake_all(void *impl)
{
	privsep_client_wake_all(impl);
}

static void source_counters(void *impl, uint64_t *ret_stuck, uint64_t *ret_restarts)
{
	privsep_client_counters(impl, ret_stuck, ret_restarts);
}

static uint64_t source_log_repeats(void *impl)
{
	return privsep_client_log_repeats(impl);
}

struct http_source privsep_client_source(struct privsep_client *c)
{
	return (struct http_source){ .enqueue = source_enqueue, .take = source_take,
				     .wake_all = source_wake_all, .counters = source_counters,
				     .log_repeats = source_log_repeats, .impl = c };
}

void privsep_client_free(struct privsep_client *c)
{
	if (!c)
		return;
	atomic_store(&c->stopping, true);
	shutdown(c->sock, SHUT_RDWR);
	pthread_join(c->thread, NULL);
	close(c->sock);
	body_unref(c->latest);
	pthread_mutex_destroy(&c->lock);
	free(c);
}
