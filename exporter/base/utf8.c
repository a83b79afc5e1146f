/* SPDX-License-Identifier: Apache-2.0 */
#include "base/utf8.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at p (at most n bytes), or 0 if there is none. */
static size_t utf8_seq_len(const unsigned char *p, size_t n)
{
	unsigned char c = p[0];
	size_t len;
	uint32_t cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[i] & 0x3f);
	}
	/* overlong forms, surrogates, beyond U+10FFFF */
	if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10ffff ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

/* SHA-256 (FIPS 180-4) of n bytes: only to name what a cut label left out. */
static const uint32_t sha256_k[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
	0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
	0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
	0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
	0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
	0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
	0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
	0xc67178f2,
};

static uint32_t ror(uint32_t x, unsigned n)
{
	return (x >> n) | (x << (32 - n));
}

static void sha256_block(uint32_t h[8], const unsigned char b[64])
{
	uint32_t w[64], v[8];

	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)b[4 * i] << 24 | (uint32_t)b[4 * i + 1] << 16 |
		       (uint32_t)b[4 * i + 2] << 8 | b[4 * i + 3];
	for (int i = 16; i < 64; i++)
		w[i] = w[i - 16] + (ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3)) +
		       w[i - 7] + (ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10));
	memcpy(v, h, sizeof(v));
	for (int i = 0; i < 64; i++) {
		uint32_t t1 = v[7] + (ror(v[4], 6) ^ ror(v[4], 11) ^ ror(v[4], 25)) +
			      ((v[4] & v[5]) ^ (~v[4] & v[6])) + sha256_k[i] + w[i];
		uint32_t t2 = (ror(v[0], 2) ^ ror(v[0], 13) ^ ror(v[0], 22)) +
			      ((v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]));

		memmove(v + 1, v, 7 * sizeof(v[0]));
		v[4] += t1;
		v[0] = t1 + t2;
	}
	for (int i = 0; i < 8; i++)
		h[i] += v[i];
}

static void sha256(const void *data, size_t n, unsigned char out[32])
{
	uint32_t h[8] = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
			  0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 };
	const unsigned char *p = data;
	unsigned char last[128] = { 0 };
	size_t rest = n % 64, tail = rest < 56 ? 64 : 128;
	uint64_t bits = (uint64_t)n * 8;

	for (size_t i = 0; i + 64 <= n; i += 64)
		sha256_block(h, p + i);
	memcpy(last, p + n - rest, rest);
	last[rest] = 0x80;
	for (int i = 0; i < 8; i++)
		last[tail - 1 - (size_t)i] = (unsigned char)(bits >> (8 * i));
	sha256_block(h, last);
	if (tail == 128)
		sha256_block(h, last + 64);
	for (int i = 0; i < 32; i++)
		out[i] = (unsigned char)(h[i / 4] >> (24 - 8 * (i % 4)));
}

/* The marker and digits that end a cut result. */
#define CUT_SUFFIX_LEN (2 + 32)

/* Ends r after its first keep bytes with the marker and the digest of the whole of s. */
static void cut_here(char *r, size_t keep, const char *s, size_t n)
{
	unsigned char digest[32];

	sha256(s, n, digest);
	r[keep++] = '\\';
	r[keep++] = '~';
	for (int i = 0; i < 16; i++)
		keep += (size_t)snprintf(r + keep, 3, "%02x", digest[i]);
	r[keep] = '\0';
}

char *utf8_sanitize(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s), out = 0, keep = 0;
	char *r = malloc(UTF8_SANITIZE_MAX + 1);

	if (!r)
		return NULL;
	for (size_t i = 0; i < n;) {
		size_t l = utf8_seq_len(p + i, n - i), w = p[i] == '\\' ? 2 : l == 0 ? 4 : l;

		if (out + w > UTF8_SANITIZE_MAX) {
			cut_here(r, keep, s, n);
			return r;
		}
		if (p[i] == '\\') {
			/* a backslash of the name: doubled, so that it never reads as an escape */
			r[out++] = '\\';
			r[out++] = '\\';
			i++;
		} else if (l == 0) {
			snprintf(r + out, 5, "\\x%02x", p[i]);
			out += 4;
			i++;
		} else {
			memcpy(r + out, p + i, l);
			out += l;
			i += l;
		}
		/* the last whole character or escape that leaves room for the suffix */
		if (out <= UTF8_SANITIZE_MAX - CUT_SUFFIX_LEN)
			keep = out;
	}
	r[out] = '\0';
	return r;
}


void utf8_write_label(FILE *out, const char *s)
{
	for (const char *p = s; *p; p++) {
		switch (*p) {
		case '\\':
			fputs("\\\\", out);
			break;
		case '"':
			fputs("\\\"", out);
			break;
		case '\n':
			fputs("\\n", out);
			break;
		default:
			fputc(*p, out);
		}
	}
}
