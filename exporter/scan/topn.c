/* SPDX-License-Identifier: Apache-2.0 */
#define _GNU_SOURCE
#include "scan/topn.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"

int topn_init(struct topn *t, size_t cap)
{
	*t = (struct topn){ .cap = cap };
	if (cap == 0)
		return 0;
	t->heap = calloc(cap, sizeof(*t->heap));
	return t->heap ? 0 : -ENOMEM;
}

/* Negative when a ranks below b (leaves the heap first). */
static int rank_cmp(const struct snap_file *a, const struct snap_file *b)
{
	uint64_t ka = topn_key(&a->c), kb = topn_key(&b->c);

	if (ka != kb)
		return ka < kb ? -1 : 1;
	/* equal keys: the larger (dev, ino) ranks lower */
	if (a->dev != b->dev)
		return a->dev > b->dev ? -1 : 1;
	if (a->ino != b->ino)
		return a->ino > b->ino ? -1 : 1;
	/* the same file in two cgroups (node-wide): the later cgroup ranks lower */
	if (a->cgroup != b->cgroup)
		return a->cgroup > b->cgroup ? -1 : 1;
	return 0;
}

static void swap(struct snap_file *a, struct snap_file *b)
{
	struct snap_file t = *a;

	*a = *b;
	*b = t;
}

static void sift_down(struct topn *t, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;

		if (l < t->n && rank_cmp(&t->heap[l], &t->heap[m]) < 0)
			m = l;
		if (r < t->n && rank_cmp(&t->heap[r], &t->heap[m]) < 0)
			m = r;
		if (m == i)
			return;
		swap(&t->heap[i], &t->heap[m]);
		i = m;
	}
}

static void sift_up(struct topn *t, size_t i)
{
	while (i > 0) {
		size_t p = (i - 1) / 2;

		if (rank_cmp(&t->heap[i], &t->heap[p]) >= 0)
			return;
		swap(&t->heap[i], &t->heap[p]);
		i = p;
	}
}

bool topn_wants(const struct topn *t, const struct snap_file *f)
{
	if (t->cap == 0)
		return false;
	if (t->n < t->cap)
		return true;
	return rank_cmp(f, &t->heap[0]) > 0;
}

int topn_offer(struct topn *t, struct snap_file *f)
{
	if (!f->path || !topn_wants(t, f)) {
		snap_file_done(f);
		return 0;
	}
	if (t->n < t->cap) {
		t->heap[t->n] = *f;
		sift_up(t, t->n++);
		return 1;
	}
	snap_file_done(&t->heap[0]);
	t->heap[0] = *f;
	sift_down(t, 0);
	return 1;
}

/* Presentation order: the most cached first, equal keys by path. */
static int best_first(const void *a, const void *b)
{
	const struct snap_file *x = a, *y = b;
	uint64_t kx = topn_key(&x->c), ky = topn_key(&y->c);

	if (kx != ky)
		return kx > ky ? -1 : 1;
	return strcmp(x->path, y->path);
}

/* By cgroup and path; equal ones best first, so that the best keeps the plain name. */
static int by_path(const void *a, const void *b)
{
	const struct snap_file *const *x = a, *const *y = b;
	int r;

	if ((*x)->cgroup != (*y)->cgroup)
		return (*x)->cgroup < (*y)->cgroup ? -1 : 1;
	r = strcmp((*x)->path, (*y)->path);

	return r ? r : -rank_cmp(*x, *y);
}

/*
 * Appends the text \#2, \#3... to the repeats of a path: utf8_sanitize() never puts "#" after
 * a backslash, so the result cannot be the name of another file.
 */
static int make_unique(struct snap_file *files, size_t n)
{
	struct snap_file **order;
	int r = 0;

	if (n < 2)
		return 0;
	order = calloc(n, sizeof(*order));
	if (!order)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		order[i] = &files[i];
	qsort(order, n, sizeof(*order), by_path);
	for (size_t i = 0; i < n && r == 0;) {
		size_t j = i + 1;

		while (j < n && order[j]->cgroup == order[i]->cgroup &&
		       strcmp(order[j]->path, order[i]->path) == 0)
			j++;
		for (size_t k = i + 1; k < j; k++) {
			char *p;

			if (asprintf(&p, "%s\\#%zu", order[i]->path, k - i + 1) < 0) {
				r = -ENOMEM;
				break;
			}
			free(order[k]->path);
			order[k]->path = p;
		}
		i = j;
	}
	free(order);
	return r;
}

int topn_take(struct topn *t, struct snap_file **ret, size_t *ret_n)
{
	struct snap_file *files;
	size_t n = t->n;
	int r;

	*ret = NULL;
	*ret_n = 0;
	if (n == 0)
		return 0;
	files = calloc(n, sizeof(*files));
	if (!files) {
		for (size_t i = 0; i < n; i++)
			snap_file_done(&t->heap[i]);
		t->n = 0;
		return -ENOMEM;
	}
	memcpy(files, t->heap, n * sizeof(*files));
	memset(t->heap, 0, n * sizeof(*files));
	t->n = 0;
	/* sanitized (one-to-one): only equal names, like two deleted files, repeat */
	r = 0;
	for (size_t i = 0; i < n && r == 0; i++) {
		char *clean = utf8_sanitize(files[i].path);

		if (!clean) {
			r = -ENOMEM;
			break;
		}
		free(files[i].path);
		files[i].path = clean;
	}
	if (r == 0)
		r = make_unique(files, n);
	if (r == 0)
		qsort(files, n, sizeof(*files), best_first);
	if (r < 0) {
		for (size_t i = 0; i < n; i++)
			snap_file_done(&files[i]);
		free(files);
		return r;
	}
	*ret = files;
	*ret_n = n;
	return 0;
}

void topn_done(struct topn *t)
{
	for (size_t i = 0; i < t->n; i++)
		snap_file_done(&t->heap[i]);
	free(t->heap);
	*t = (struct topn){ 0 };
}
