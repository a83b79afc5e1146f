/* SPDX-License-Identifier: Apache-2.0 */
/*
 * channel: the handover of rendered snapshots from the scanner process (which keeps the
 * capabilities the scan needs) to the HTTP process (which holds none and parses everything a
 * client sends). One SOCK_SEQPACKET socketpair per HTTP process: the HTTP side asks for "a
 * snapshot no older than this scrape may wait, or the latest as it is (HEAD)", the scanner
 * side answers from its scheduler with the body as sealed memfds (F_SEAL_WRITE, SHRINK and
 * GROW: the content cannot change nor the file shrink under the reader's mapping), passed
 * with SCM_RIGHTS: the text and, when compression worked, the open start of its gzip member
 * (scheduler.h: each scrape ends it). The HTTP side maps them read-only; a body is shared
 * memory, rendered and gzipped once per scan.
 *
 * Every message has one fixed size; anything else (shorter, longer, a wrong magic or type,
 * descriptors where none belong, a body over PRIVSEP_MAX_BODY, a memfd that is not sealed or
 * not of the announced size) is refused: the scanner drops an HTTP process that sends one,
 * the HTTP process gives up on a scanner that does.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire/body.h"

#define PRIVSEP_MAGIC 0x31505343u /* "CSP1" */
/* A body larger than this is refused (5,000 cgroups render about 2 MB). */
#define PRIVSEP_MAX_BODY (1ULL << 30)
/* Descriptors an answer carries at most: the text and its gzip member. */
#define PRIVSEP_MAX_FDS 2
/*
 * An HTTP process with this many asks pending, or that leaves an answer unread this long, is
 * dropped (its channel closed: it exits, and is started again): neither a bug nor an attacker
 * in it may grow the scanner's memory or hold a scanner thread in a send.
 */
#define PRIVSEP_MAX_PENDING 65536
#define PRIVSEP_SEND_TIMEOUT_MS 2000
/* A scrape may wait at most this long (its X-Prometheus-Scrape-Timeout-Seconds). */
#define PRIVSEP_MAX_BUDGET_NS (3600ULL * 1000000000ULL)

enum privsep_type {
	PRIVSEP_ASK = 1,  /* HTTP -> scanner */
	PRIVSEP_BODY = 2, /* scanner -> HTTP, one or two descriptors */
	PRIVSEP_NONE = 3, /* scanner -> HTTP: no scan has ended yet */
};

struct privsep_ask {
	uint32_t magic, type;
	uint64_t id;
	uint64_t budget_ns;
	uint32_t scan; /* 0: the latest as it is, no scan started (HEAD) */
	uint32_t pad;
};

struct privsep_answer {
	uint32_t magic, type;
	uint64_t id;
	uint64_t seq, done_ns; /* the body's scan number and end (CLOCK_MONOTONIC) */
	uint64_t text_len, gz_len; /* gz_len 0: no gzip member, one descriptor */
	uint64_t stuck_total;      /* cachestat_scans_stuck_total */
	uint64_t restarts_total;   /* cachestat_http_restarts_total */
	uint64_t log_repeats_total; /* the scanner's share of cachestat_log_repeats_suppressed_total */
	uint32_t stale;            /* the budget ran out first: an older body */
	uint32_t pad;
};

/*
 * Sends one message and n_fds descriptors (not closed). Returns 0, -EPIPE when the peer is
 * gone, or -errno.
 */
int privsep_send(int sock, const void *msg, size_t len, const int *fds, size_t n_fds);

/*
 * Receives one message of exactly len bytes and at most max_fds descriptors (close-on-exec).
 * Returns 0 with *ret_n_fds set, -ECONNRESET at the end of the stream, -EMSGSIZE for a longer
 * message, -EBADMSG for a shorter one or one with more descriptors (every descriptor received
 * with a refused message is closed), or -errno.
 */
int privsep_recv(int sock, void *msg, size_t len, int *fds, size_t max_fds, size_t *ret_n_fds);

/* Whether an ask is well formed. */
bool privsep_ask_valid(const struct privsep_ask *a);
/* Whether an answer is well formed and came with n_fds descriptors. */
bool privsep_answer_valid(const struct privsep_answer *a, size_t n_fds);

/* A sealed memfd holding data. Returns the descriptor or -errno. */
int privsep_memfd(const char *name, const void *data, size_t len);

/*
 * Maps a body's memfd read-only, after checking its seals and that its size is len (at most
 * PRIVSEP_MAX_BODY). *ret is NULL for len 0. Returns 0, -EPERM (not sealed), -EBADMSG (another
 * size) or -errno.
 */
int privsep_map(int fd, size_t len, const void **ret);
