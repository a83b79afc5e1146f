/* SPDX-License-Identifier: Apache-2.0 */
#include "parse/mountinfo.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

/* The byte of the octal escape "\ooo" at s (len bytes left), or -1 when it is not one. */
static int octal_escape(const char *s, size_t len)
{
	unsigned v = 0;

	if (len < 4)
		return -1;
	for (size_t k = 1; k <= 3; k++) {
		if (s[k] < '0' || s[k] > '7')
			return -1;
		v = v * 8 + (unsigned)(s[k] - '0');
	}
	if (v == 0 || v > 0xff) /* a NUL would cut the string short */
		return -1;
	return (int)v;
}

char *mountinfo_unescape(const char *s, size_t len)
{
	_cleanup_free_ char *out = malloc(len + 1);
	char *o = out;

	if (!out) {
		errno = ENOMEM;
		return NULL;
	}
	for (size_t i = 0; i < len; i++) {
		int v;

		if (s[i] != '\\') {
			*o++ = s[i];
			continue;
		}
		v = octal_escape(s + i, len - i);
		if (v < 0) {
			errno = EINVAL;
			return NULL;
		}
		*o++ = (char)v;
		i += 3;
	}
	*o = '\0';
	return TAKE_PTR(out);
}

/* A cursor over one line, and the field it yields. */
struct span {
	const char *p;
	const char *end;
};

/* The next space-separated field; mountinfo separates fields by exactly one space. */
static bool next_field(struct span *line, struct span *ret)
{
	const char *sp;

	if (!line->p)
		return false;
	sp = memchr(line->p, ' ', (size_t)(line->end - line->p));
	ret->p = line->p;
	ret->end = sp ? sp : line->end;
	line->p = sp ? sp + 1 : NULL;
	return true;
}

static bool parse_uint(const struct span *f, char sep, unsigned *ret, const char **ret_next)
{
	unsigned long v = 0;
	const char *p = f->p;

	if (p == f->end || *p < '0' || *p > '9')
		return false;
	for (; p < f->end && *p >= '0' && *p <= '9'; p++) {
		v = v * 10 + (unsigned long)(*p - '0');
		if (v > INT_MAX)
			return false;
	}
	if (sep ? (p == f->end || *p != sep) : p != f->end)
		return false;
	*ret = (unsigned)v;
	if (ret_next)
		*ret_next = p + 1;
	return true;
}

static char *span_unescape(const struct span *f)
{
	return mountinfo_unescape(f->p, (size_t)(f->end - f->p));
}

static char *span_dup(const struct span *f)
{
	return strndup(f->p, (size_t)(f->end - f->p));
}

/* Fields 1-3: ids and "major:minor". */
static int parse_ids(struct span *line, struct mountinfo *m)
{
	struct span f;
	unsigned id, parent;
	const char *next;

	if (!next_field(line, &f) || !parse_uint(&f, 0, &id, NULL))
		return -EINVAL;
	if (!next_field(line, &f) || !parse_uint(&f, 0, &parent, NULL))
		return -EINVAL;
	if (!next_field(line, &f) || !parse_uint(&f, ':', &m->major, &next))
		return -EINVAL;
	f.p = next;
	if (!parse_uint(&f, 0, &m->minor, NULL))
		return -EINVAL;
	m->mount_id = (int)id;
	m->parent_id = (int)parent;
	return 0;
}

/* Stores a field in *ret, unescaped or as printed. */
static int take(struct span *line, bool unescape, char **ret)
{
	struct span f;

	if (!next_field(line, &f) || f.p == f.end)
		return -EINVAL;
	*ret = unescape ? span_unescape(&f) : span_dup(&f);
	if (!*ret)
		return errno == ENOMEM ? -ENOMEM : -EINVAL;
	return 0;
}

void mountinfo_done(struct mountinfo *m)
{
	free(m->root);
	free(m->mount_point);
	free(m->fstype);
	free(m->source);
	free(m->mount_options);
	free(m->super_options);
	*m = (struct mountinfo){ 0 };
}

int mountinfo_parse_line(const char *line, size_t len, struct mountinfo *ret)
{
	struct mountinfo m = { 0 };
	struct span l = { line, line + len }, f;
	int r;

	if (memchr(line, '\n', len) || memchr(line, '\0', len))
		return -EINVAL;
	r = parse_ids(&l, &m);
	if (r == 0)
		r = take(&l, true, &m.root);
	if (r == 0)
		r = take(&l, true, &m.mount_point);
	if (r == 0)
		r = take(&l, false, &m.mount_options);
	/* optional fields ("shared:1", "master:2", ...), up to the separator "-" */
	while (r == 0) {
		if (!next_field(&l, &f) || f.p == f.end)
			r = -EINVAL;
		else if (f.end - f.p == 1 && *f.p == '-')
			break;
	}
	if (r == 0)
		r = take(&l, true, &m.fstype);
	if (r == 0)
		r = take(&l, true, &m.source);
	if (r == 0)
		r = take(&l, false, &m.super_options);
	if (r == 0 && l.p) /* a field too many */
		r = -EINVAL;
	if (r < 0) {
		mountinfo_done(&m);
		return r;
	}
	*ret = m;
	return 0;
}

int mountinfo_next(const char **pos, const char *end, struct mountinfo *ret)
{
	while (*pos < end) {
		const char *line = *pos, *nl = memchr(line, '\n', (size_t)(end - line));
		const char *eol = nl ? nl : end;

		*pos = nl ? nl + 1 : end;
		if (mountinfo_parse_line(line, (size_t)(eol - line), ret) == 0)
			return 1;
	}
	return 0;
}

int mountinfo_find(const char *buf, size_t len, int mount_id, struct mountinfo *ret)
{
	const char *p = buf, *end = buf + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;
		struct span l = { p, eol }, f;
		unsigned id;

		/* only the line asked for is parsed (a container host has thousands of mounts) */
		if (next_field(&l, &f) && parse_uint(&f, 0, &id, NULL) && (int)id == mount_id)
			return mountinfo_parse_line(p, (size_t)(eol - p), ret);
		p = eol + 1;
	}
	return -ENOENT;
}

int mountinfo_next_option(const char **cursor, char **ret_key, const char **ret_value)
{
	const char *p = *cursor, *comma, *eq;
	char *opt;
	size_t n;

	if (!p || !*p)
		return 0;
	comma = strchr(p, ',');
	n = comma ? (size_t)(comma - p) : strlen(p);
	eq = memchr(p, '=', n);
	/* key and value unescaped apart: an escaped "=" (\075) belongs to the value */
	opt = mountinfo_unescape(p, eq ? (size_t)(eq - p) : n);
	if (!opt)
		return errno == ENOMEM ? -ENOMEM : -EINVAL;
	if (eq) {
		_cleanup_free_ char *key = opt, *value = NULL;
		size_t klen = strlen(key);

		value = mountinfo_unescape(eq + 1, n - (size_t)(eq + 1 - p));
		if (!value)
			return errno == ENOMEM ? -ENOMEM : -EINVAL;
		opt = malloc(klen + 1 + strlen(value) + 1);
		if (!opt)
			return -ENOMEM;
		memcpy(opt, key, klen + 1);
		strcpy(opt + klen + 1, value);
		*ret_value = opt + klen + 1;
	} else {
		*ret_value = NULL;
	}
	*ret_key = opt;
	*cursor = comma ? comma + 1 : p + n;
	return 1;
}
