/* SPDX-License-Identifier: Apache-2.0 */
/*
 * files_scan_handle(): a file known by its handle (the fanotify collector's recent files), on a
 * real temporary tree. A regular file is visited with its path, once; a directory is not; a
 * deleted file is vanished; the opener's credentials decide, by owner and mode.
 * open_by_handle_at(2) needs CAP_DAC_READ_SEARCH: without it every test skips, saying so.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cap-ng.h>
#include <cmocka.h>

#include "files/files.h"

static char dir[] = "/tmp/cse-fh-XXXXXX";

struct visits {
	int n;
	char name[512];
};

static int record(struct files_ctx *ctx, const struct files_entry *e)
{
	struct visits *v = ctx->userdata;
	char *name = files_entry_name(ctx, e);

	assert_true(S_ISREG(e->st->st_mode));
	assert_non_null(name);
	v->n++;
	snprintf(v->name, sizeof(v->name), "%s", name);
	free(name);
	return 0;
}

/* The handle of path, in buf (room for MAX_HANDLE_SZ). */
static struct file_handle *handle_of(const char *path, void *buf)
{
	struct file_handle *fh = buf;
	int mnt;

	fh->handle_bytes = MAX_HANDLE_SZ;
	assert_int_equal(name_to_handle_at(AT_FDCWD, path, fh, &mnt, 0), 0);
	return fh;
}

static int setup(void **state)
{
	char p[600];
	int fd;

	(void)state;
	if (!mkdtemp(dir))
		return -1;
	snprintf(p, sizeof(p), "%s/a.bin", dir);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, "0123456789", 10) != 10)
		return -1;
	close(fd);
	snprintf(p, sizeof(p), "%s/sub", dir);
	return mkdir(p, 0755);
}

static int teardown(void **state)
{
	char cmd[600];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static bool can_open_handles(void)
{
	if (capng_get_caps_process() == 0 && capng_have_capability(CAPNG_EFFECTIVE, CAP_DAC_READ_SEARCH))
		return true;
	printf("skip: open_by_handle_at needs CAP_DAC_READ_SEARCH\n");
	return false;
}

static void ctx_init(struct files_ctx *ctx, struct visits *v)
{
	*ctx = (struct files_ctx){ .visit = record, .userdata = v, .budget = 100 };
	ctx->procfs_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(ctx->procfs_fd >= 0);
}

static void ctx_done(struct files_ctx *ctx)
{
	close(ctx->procfs_fd);
	files_ctx_done(ctx);
}

static const struct creds owner = { .fsuid = 0, .fsgid = 0 };

static void test_regular_once(void **state)
{
	char buf[sizeof(struct file_handle) + MAX_HANDLE_SZ], p[600];
	struct visits v = { 0 };
	struct files_ctx ctx;
	int mfd;

	(void)state;
	if (!can_open_handles())
		skip();
	snprintf(p, sizeof(p), "%s/a.bin", dir);
	ctx_init(&ctx, &v);
	mfd = open(dir, O_RDONLY | O_DIRECTORY);
	assert_int_equal(files_scan_handle(&ctx, mfd, handle_of(p, buf), &owner), 0);
	assert_int_equal(files_scan_handle(&ctx, mfd, handle_of(p, buf), &owner), 0); /* deduplicated */
	assert_int_equal(v.n, 1);
	assert_string_equal(v.name, p);
	snprintf(p, sizeof(p), "%s/sub", dir);
	assert_int_equal(files_scan_handle(&ctx, mfd, handle_of(p, buf), &owner), 0);
	assert_int_equal(v.n, 1);
	assert_int_equal(ctx.skipped[SKIP_NOT_REGULAR], 1);
	close(mfd);
	ctx_done(&ctx);
}

/* Neither owner nor writer, and no capability: the opener could not have asked cachestat. */
static void test_creds(void **state)
{
	char buf[sizeof(struct file_handle) + MAX_HANDLE_SZ], p[600];
	const struct creds stranger = { .fsuid = 4242, .fsgid = 4242 };
	const struct creds fowner = { .fsuid = 4242, .fsgid = 4242, .cap_fowner = true };
	struct visits v = { 0 };
	struct files_ctx ctx;
	int mfd;

	(void)state;
	if (!can_open_handles())
		skip();
	snprintf(p, sizeof(p), "%s/a.bin", dir);
	assert_int_equal(chown(p, 0, 0), getuid() == 0 ? 0 : -1);
	ctx_init(&ctx, &v);
	mfd = open(dir, O_RDONLY | O_DIRECTORY);
	assert_int_equal(files_scan_handle(&ctx, mfd, handle_of(p, buf), &stranger), 0);
	assert_int_equal(v.n, 0);
	assert_int_equal(ctx.skipped[SKIP_NO_ACCESS], 1);
	assert_int_equal(files_scan_handle(&ctx, mfd, handle_of(p, buf), &fowner), 0);
	assert_int_equal(v.n, 1);
	/* counted already: a stranger's open of it is not asked about, so not refused either */
	assert_int_equal(files_scan_handle(&ctx, mfd, handle_of(p, buf), &stranger), 0);
	assert_int_equal(v.n, 1);
	assert_int_equal(ctx.skipped[SKIP_NO_ACCESS], 1);
	close(mfd);
	ctx_done(&ctx);
}

/* A file deleted since its open: the handle is stale, the file vanished. */
static void test_deleted(void **state)
{
	char buf[sizeof(struct file_handle) + MAX_HANDLE_SZ], p[600];
	struct visits v = { 0 };
	struct files_ctx ctx;
	struct file_handle *fh;
	int mfd, fd;

	(void)state;
	if (!can_open_handles())
		skip();
	snprintf(p, sizeof(p), "%s/gone.bin", dir);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	close(fd);
	fh = handle_of(p, buf);
	assert_int_equal(unlink(p), 0);
	ctx_init(&ctx, &v);
	mfd = open(dir, O_RDONLY | O_DIRECTORY);
	assert_int_equal(files_scan_handle(&ctx, mfd, fh, &owner), 0);
	assert_int_equal(v.n, 0);
	assert_int_equal(ctx.skipped[SKIP_VANISHED], 1);
	close(mfd);
	ctx_done(&ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_regular_once),
		cmocka_unit_test(test_creds),
		cmocka_unit_test(test_deleted),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
