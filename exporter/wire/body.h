/* SPDX-License-Identifier: Apache-2.0 */
/*
 * body: the shared body of a scrape. Each snapshot is rendered once (text, and the start of
 * its gzip member) into a reference-counted, immutable body that every scrape of it serves,
 * in this process or, mapped, in the HTTP process (wire/channel.h); a waiter is a scrape
 * waiting for one. The scheduler (scanner/scheduler.c) makes bodies; the HTTP process and the
 * channel only pass them on, so they depend on this module, not on the scheduler. Never logs.
 */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One snapshot, rendered. Immutable once published; drop with body_unref(). */
struct body {
	atomic_int refs;
	uint64_t seq;      /* the scan's number, from 1 */
	uint64_t done_ns;  /* CLOCK_MONOTONIC when the scan ended */
	char *text;        /* text format 0.0.4 */
	size_t len;
	unsigned char *gz; /* the start of one gzip member (body_gzip_start()); NULL when
			    * compression failed */
	size_t gz_len;
	uint32_t crc;      /* CRC-32 of text, for the member's trailer */
	char *problem;     /* the scan's first problem, or NULL */
	atomic_bool problem_taken;
	bool cut;          /* cut at the scheduler's max_bytes (render_text_limited()) */
	/* frees text, gz and the body itself when not malloc'd (a body mapped from another
	 * process: wire/channel.h); NULL: free() */
	void (*release)(struct body *b);
};

struct body *body_ref(struct body *b);
void body_unref(struct body *b);

/*
 * The start of one gzip member (RFC 1952) holding text: the header and text deflated up to a
 * sync flush (byte-aligned, no final block). A scrape ends the same member with its own text
 * (body_gzip_end()): one member, not two, because curl --compressed decodes the first member
 * of a stream only. Returns 0, -ENOMEM or -EIO.
 */
int body_gzip_start(const char *text, size_t len, unsigned char **ret, size_t *ret_len);

/*
 * The end of a member begun by body_gzip_start() over head_len bytes whose CRC-32 is head_crc:
 * text deflated with the final block, then the CRC-32 and length of the whole. Returns 0,
 * -ENOMEM or -EIO.
 */
int body_gzip_end(uint32_t head_crc, size_t head_len, const char *text, size_t len,
		  unsigned char **ret, size_t *ret_len);

/*
 * A scrape that waits without holding a thread. The caller sets wake and userdata; wake is
 * called once, from another thread and without the scheduler's lock, when the scan waited
 * for ends or the budget runs out.
 */
struct body_waiter {
	void (*wake)(void *userdata);
	void *userdata;
	/* the scheduler's */
	uint64_t target, deadline;
	struct body_waiter *next;
	void *source_data; /* a source other than the scheduler (wire/channel.h): its answer */
};
