/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An HTTP server wired as the daemon wires it, in one test process: the scheduler answers a
 * privsep server, which answers a privsep client over a real SOCK_SEQPACKET socketpair, and
 * the client is the server's source of bodies (privsep_client_source()). Only the fork is
 * missing. Included by test files only (each test is one program), so the helpers are static.
 */
#pragma once

#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "http/client.h"
#include "http/http.h"
#include "scanner/scheduler.h"
#include "scanner/server.h"

struct served {
	struct privsep_server *ps;
	struct privsep_client *client;
	struct http_server *http;
	unsigned port;
};

/* The error the client's channel ended with, 0 while it holds. */
static atomic_int served_lost_error;

static inline void served_lost(void *userdata, int error)
{
	(void)userdata;
	atomic_store(&served_lost_error, error);
}

/* The scanner's side and the HTTP side of the channel, the bodies coming from sched. */
static inline void served_channel(struct scheduler *sched, struct served *ret)
{
	int sp[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp), 0);
	assert_int_equal(privsep_server_new(sched, &ret->ps), 0);
	assert_int_equal(privsep_server_add(ret->ps, sp[0]), 0);
	assert_int_equal(privsep_client_new(sp[1], served_lost, NULL, &ret->client), 0);
}

/*
 * Listens with o on the first free port of 127.0.0.1 from first (up to 100 above it) and
 * serves bodies from sched through the channel. Sets o's listen addresses (kept in static
 * storage); the port in ret->port.
 */
static inline void served_start(struct http_options *o, struct scheduler *sched, unsigned first,
				struct served *ret)
{
	static char addr[32];
	static const char *addrs[1];
	struct http_source src;
	char *err = NULL;
	int r = -1;

	*ret = (struct served){ 0 };
	o->listen_addresses = addrs;
	o->n_listen_addresses = 1;
	for (ret->port = first; ret->port < first + 100 && r < 0; ret->port++) {
		snprintf(addr, sizeof(addr), "127.0.0.1:%u", ret->port);
		addrs[0] = addr;
		free(err);
		err = NULL;
		r = http_listen(o, &ret->http, &err);
	}
	ret->port--;
	if (r < 0)
		fail_msg("http_listen: %s", err ? err : strerror(-r));
	served_channel(sched, ret);
	src = privsep_client_source(ret->client);
	r = http_serve(ret->http, &src, &err);
	if (r < 0)
		fail_msg("http_serve: %s", err ? err : strerror(-r));
}

/* Stops in the daemon's order: the HTTP side, its client, then the scanner's server. */
static inline void served_stop(struct served *s)
{
	http_stop(s->http);
	privsep_client_free(s->client);
	privsep_server_free(s->ps);
	assert_int_equal(atomic_load(&served_lost_error), 0);
}
