/* SPDX-License-Identifier: Apache-2.0 */
#define _GNU_SOURCE
#include "wire/body.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "base/util.h"

static void body_free(struct body *b)
{
	if (b->release) {
		b->release(b);
		return;
	}
	free(b->text);
	free(b->gz);
	free(b->problem);
	free(b);
}

struct body *body_ref(struct body *b)
{
	if (b)
		atomic_fetch_add(&b->refs, 1);
	return b;
}

void body_unref(struct body *b)
{
	if (b && atomic_fetch_sub(&b->refs, 1) == 1)
		body_free(b);
}

/* Deflates text into z's output: a new buffer of what it wrote. Ends z. */
static int deflate_all(z_stream *z, const char *text, size_t len, int flush, size_t extra,
		       unsigned char **ret, size_t *ret_len)
{
	_cleanup_free_ unsigned char *out = NULL;
	size_t cap = deflateBound(z, len) + 16 + extra; /* + a sync flush's empty block */
	int r;

	out = malloc(cap);
	if (!out) {
		deflateEnd(z);
		return -ENOMEM;
	}
	z->next_in = (unsigned char *)(uintptr_t)text;
	z->avail_in = (uInt)len;
	z->next_out = out;
	z->avail_out = (uInt)cap;
	r = deflate(z, flush);
	deflateEnd(z);
	if (flush == Z_FINISH ? r != Z_STREAM_END : (r != Z_OK || z->avail_in || !z->avail_out))
		return -EIO;
	*ret_len = cap - z->avail_out;
	*ret = TAKE_PTR(out);
	return 0;
}

int body_gzip_start(const char *text, size_t len, unsigned char **ret, size_t *ret_len)
{
	z_stream z = { 0 };

	/* the gzip wrapper writes the header; the sync flush leaves the member open */
	if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	return deflate_all(&z, text, len, Z_SYNC_FLUSH, 0, ret, ret_len);
}

int body_gzip_end(uint32_t head_crc, size_t head_len, const char *text, size_t len,
		  unsigned char **ret, size_t *ret_len)
{
	z_stream z = { 0 };
	uint32_t crc, total;
	unsigned char *out;
	size_t n;
	int r;

	/*
	 * Raw deflate: its blocks continue the member's, the last one final. A compressor of its
	 * own that looks back no further than the text it is given, so the smallest window and
	 * memory level do: this runs at every scrape, and the defaults' 268 KB of state, allocated,
	 * cleared and freed each time, cost page faults and TLB shootdowns under load.
	 */
	if (deflateInit2(&z, 6, Z_DEFLATED, -9, 1, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	r = deflate_all(&z, text, len, Z_FINISH, 8, &out, &n);
	if (r < 0)
		return r;
	crc = (uint32_t)crc32_combine(head_crc, crc32(0, (const Bytef *)text, (uInt)len), (z_off_t)len);
	total = (uint32_t)(head_len + len); /* ISIZE: the length modulo 2^32 */
	for (int i = 0; i < 4; i++) {
		out[n + (size_t)i] = (unsigned char)(crc >> (8 * i));
		out[n + 4 + (size_t)i] = (unsigned char)(total >> (8 * i));
	}
	*ret = out;
	*ret_len = n + 8;
	return 0;
}
