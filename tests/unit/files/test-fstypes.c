/* SPDX-License-Identifier: Apache-2.0 */
/* fstypes: mountinfo parsed from strings, the default exclusion, lookups by id and by path. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "files/fstypes.h"

/* A memfd's mount is in no mountinfo, yet known: tmpfs, not excluded by default. */
static void test_memfd(void **state)
{
	struct fstypes f;
	struct statx sx;
	int fd = memfd_create("t", MFD_CLOEXEC);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &sx), 0);
	close(fd);
	assert_int_equal(fstypes_init(&f, FSTYPES_DEFAULT_EXCLUDE), 0);
	assert_int_equal(fstypes_mount_excluded(&f, sx.stx_mnt_id), 0);
	fstypes_done(&f);
	assert_int_equal(fstypes_init(&f, "^tmpfs$"), 0);
	assert_int_equal(fstypes_mount_excluded(&f, sx.stx_mnt_id), 1);
	fstypes_done(&f);
}

static const char mountinfo[] =
	"21 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
	"22 21 0:20 / /proc rw,nosuid - proc proc rw\n"
	"30 21 0:40 / /srv/nfs rw shared:5 master:2 - nfs4 srv:/export rw,vers=4.2\n"
	"31 21 0:41 / /home/u/fuse\\040dir rw - fuse.bindfs /src rw,user_id=0\n"
	"32 31 8:2 / /home/u/fuse\\040dir/local rw - ext4 /dev/sda2 rw\n"
	"33 21 0:42 / /mnt/sshfs rw - fuse.sshfs u@h: rw\n"
	"34 21 0:43 / /mnt/cifs rw - cifs //h/s rw\n"
	"35 21 0:44 / /mnt/9p rw - 9p hostshare rw\n"
	"36 21 0:45 / /mnt/ceph rw - ceph 1.2.3.4:/ rw\n"
	"37 21 0:46 / /mnt/tmp rw - tmpfs tmpfs rw\n"
	"garbage line\n";

static void test_default(void **state)
{
	struct fstypes f;

	(void)state;
	assert_int_equal(fstypes_init(&f, FSTYPES_DEFAULT_EXCLUDE), 0);
	assert_int_equal(fstypes_add_mountinfo(&f, mountinfo, strlen(mountinfo), true), 0);
	assert_int_equal(fstypes_mount_excluded(&f, 21), 0);
	assert_int_equal(fstypes_mount_excluded(&f, 30), 1);
	assert_int_equal(fstypes_mount_excluded(&f, 31), 1);
	assert_int_equal(fstypes_mount_excluded(&f, 33), 1);
	assert_int_equal(fstypes_mount_excluded(&f, 34), 1);
	assert_int_equal(fstypes_mount_excluded(&f, 35), 1);
	assert_int_equal(fstypes_mount_excluded(&f, 36), 1);
	assert_int_equal(fstypes_mount_excluded(&f, 37), 0);
	assert_int_equal(fstypes_mount_excluded(&f, 99), -ENOENT);
	assert_int_equal(fstypes_mount_excluded(&f, 25), -ENOENT); /* between two ids */
	assert_false(fstypes_name_excluded(&f, "ext4"));
	assert_false(fstypes_name_excluded(&f, "fusectl")); /* a prefix is not the name */
	assert_true(fstypes_name_excluded(&f, "fuseblk"));
	/* by path: the longest mount point above it, its escapes undone */
	assert_false(fstypes_path_excluded(&f, "/var/lib/db"));
	assert_true(fstypes_path_excluded(&f, "/srv/nfs"));
	assert_true(fstypes_path_excluded(&f, "/srv/nfs/logs/*.log"));
	assert_false(fstypes_path_excluded(&f, "/srv/nfsother"));
	assert_true(fstypes_path_excluded(&f, "/home/u/fuse dir/a"));
	assert_false(fstypes_path_excluded(&f, "/home/u/fuse dir/local/a"));
	fstypes_reset(&f);
	assert_int_equal(fstypes_mount_excluded(&f, 30), -ENOENT);
	fstypes_done(&f);
}

static void test_custom_and_none(void **state)
{
	struct fstypes f;

	(void)state;
	assert_int_equal(fstypes_init(&f, "^tmpfs$"), 0);
	assert_int_equal(fstypes_add_mountinfo(&f, mountinfo, strlen(mountinfo), false), 0);
	assert_int_equal(fstypes_mount_excluded(&f, 37), 1);
	assert_int_equal(fstypes_mount_excluded(&f, 30), 0);
	assert_false(fstypes_path_excluded(&f, "/mnt/tmp/x")); /* no points kept */
	fstypes_done(&f);
	assert_int_equal(fstypes_init(&f, ""), 0);
	assert_false(fstypes_name_excluded(&f, "nfs"));
	fstypes_done(&f);
	assert_int_equal(fstypes_init(&f, "(unclosed"), -EINVAL);
}

/*
 * An overlay is excluded when a layer lies on an excluded mount, placed in its own table or in
 * the host's, or cannot be placed by its name.
 */
static const char overlays[] =
	"21 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
	"31 21 0:41 / /home/u/fuse\\040dir rw - fuse.bindfs /src rw,user_id=1000\n"
	"40 21 0:50 / /m/clean rw - overlay overlay rw,lowerdir=/srv/l1:/srv/l2,upperdir=/srv/u,workdir=/srv/w\n"
	"41 21 0:51 / /m/fuse rw - overlay overlay rw,lowerdir=/srv/l1:/home/u/fuse\\040dir/l,userxattr\n"
	"42 21 0:52 / /m/upper rw - overlay overlay rw,lowerdir=/srv/l1,upperdir=/home/u/fuse\\040dir/u,workdir=/home/u/fuse\\040dir/w\n"
	"43 21 0:53 / /m/rel rw - overlay overlay rw,lowerdir=top:fuse/l,userxattr\n"
	"44 21 0:54 / /m/dotdot rw - overlay overlay rw,lowerdir=/srv/../home/u/fuse\\040dir/l\n"
	"45 21 0:55 / /m/data rw - overlay overlay rw,lowerdir=/srv/l1::/home/u/fuse\\040dir/d\n"
	"46 21 0:56 / /m/nested rw - overlay overlay rw,lowerdir=/m/fuse/x:/srv/l3\n"
	"47 21 0:57 / /m/nested-clean rw - overlay overlay rw,lowerdir=/m/clean/x\n"
	"48 21 0:58 / /m/noopt rw - overlay overlay rw\n";

/* A container's table: its root overlay names layers of the host's namespace. */
static const char container[] =
	"900 800 0:90 / / rw - overlay overlay rw,lowerdir=/var/lib/c/l/A:/var/lib/c/l/B,upperdir=/var/lib/c/u,workdir=/var/lib/c/w\n"
	"901 900 0:91 / /proc rw - proc proc rw\n";
static const char host_fuse[] =
	"21 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
	"60 21 0:60 / /var/lib/c/l rw - fuse.sshfs u@h: rw\n";
static const char host_clean[] = "21 1 8:1 / / rw - ext4 /dev/sda1 rw\n";

static void test_overlay_layers(void **state)
{
	struct fstypes f;

	(void)state;
	assert_int_equal(fstypes_init(&f, FSTYPES_DEFAULT_EXCLUDE), 0);
	assert_int_equal(fstypes_add_mountinfo(&f, overlays, strlen(overlays), false), 0);
	assert_int_equal(fstypes_mount_excluded(&f, 40), 0); /* every layer on ext4 */
	assert_int_equal(fstypes_mount_excluded(&f, 41), 1); /* a lower layer on FUSE */
	assert_int_equal(fstypes_mount_excluded(&f, 42), 1); /* the upper layer on FUSE */
	assert_int_equal(fstypes_mount_excluded(&f, 43), 1); /* relative: cannot be placed */
	assert_int_equal(fstypes_mount_excluded(&f, 44), 1); /* "..": cannot be placed by name */
	assert_int_equal(fstypes_mount_excluded(&f, 45), 1); /* a data-only layer on FUSE */
	assert_int_equal(fstypes_mount_excluded(&f, 46), 1); /* on an overlay that is on FUSE */
	assert_int_equal(fstypes_mount_excluded(&f, 47), 0); /* on an overlay that is not */
	assert_int_equal(fstypes_mount_excluded(&f, 48), 1); /* no layers to check */
	fstypes_done(&f);

	/* without exclusions, nothing is */
	assert_int_equal(fstypes_init(&f, ""), 0);
	assert_int_equal(fstypes_add_mountinfo(&f, overlays, strlen(overlays), false), 0);
	assert_int_equal(fstypes_mount_excluded(&f, 43), 0);
	fstypes_done(&f);
}

static void test_overlay_host_layers(void **state)
{
	struct fstypes f;

	(void)state;
	assert_int_equal(fstypes_init(&f, FSTYPES_DEFAULT_EXCLUDE), 0);
	assert_int_equal(fstypes_set_host_mountinfo(&f, host_fuse, strlen(host_fuse)), 0);
	assert_int_equal(fstypes_add_mountinfo(&f, container, strlen(container), false), 0);
	assert_int_equal(fstypes_mount_excluded(&f, 900), 1);
	assert_int_equal(fstypes_mount_excluded(&f, 901), 0);
	fstypes_reset(&f);
	assert_int_equal(fstypes_set_host_mountinfo(&f, host_clean, strlen(host_clean)), 0);
	assert_int_equal(fstypes_add_mountinfo(&f, container, strlen(container), false), 0);
	assert_int_equal(fstypes_mount_excluded(&f, 900), 0);
	fstypes_done(&f);
}

/*
 * The index: stacked mounts (the later on top), prefixes that are not components, a point
 * sorted between others, the overlay not placed on itself; in any order of lines.
 */
static const char placed[] =
	"50 1 0:50 / / rw - ext4 /dev/sda1 rw\n"
	"51 50 0:51 / /a rw - fuse.x x rw\n"
	"52 50 0:52 / /a rw - ext4 /dev/sdb rw\n"  /* on top of 51: /a/... is on ext4 */
	"53 50 0:53 / /b rw - fuse.x x rw\n"
	"54 50 0:54 / /b/c rw - tmpfs t rw\n"
	"55 50 0:55 / /b-c rw - ext4 e rw\n"
	"56 50 0:56 / /ov1 ro - overlay overlay ro,lowerdir=/a/l:/b/c/l\n" /* 52, 54: fine */
	"57 50 0:57 / /ov2 ro - overlay overlay ro,lowerdir=/b-c/l:/b/x\n"  /* 53 under /b/x */
	"58 50 0:58 / /ov3 ro - overlay overlay ro,lowerdir=/b/c:/bb/l\n"   /* /bb: on / */
	"59 50 0:59 / /ov4 ro - overlay overlay ro,lowerdir=/ov4/l\n";     /* not on itself */

static void test_index_place(void **state)
{
	struct fstypes f;

	(void)state;
	assert_int_equal(fstypes_init(&f, FSTYPES_DEFAULT_EXCLUDE), 0);
	assert_int_equal(fstypes_add_mountinfo(&f, placed, strlen(placed), true), 0);
	assert_int_equal(fstypes_mount_excluded(&f, 56), 0);
	assert_int_equal(fstypes_mount_excluded(&f, 57), 1);
	assert_int_equal(fstypes_mount_excluded(&f, 58), 0);
	assert_int_equal(fstypes_mount_excluded(&f, 59), 0);
	assert_int_equal(fstypes_path_mount(&f, "/a/x/y"), 52);
	assert_int_equal(fstypes_path_mount(&f, "/a"), 52);
	assert_int_equal(fstypes_path_mount(&f, "/b/c/"), 54);
	assert_int_equal(fstypes_path_mount(&f, "/b/cc"), 53);
	assert_int_equal(fstypes_path_mount(&f, "/b-c/d"), 55);
	assert_int_equal(fstypes_path_mount(&f, "/bb"), 50);
	assert_int_equal(fstypes_path_mount(&f, "/"), 50);
	assert_true(fstypes_path_excluded(&f, "/b/x"));
	assert_false(fstypes_path_excluded(&f, "/b/c/x"));
	fstypes_done(&f);
}

/* A table of n overlays of 10 layers each, on a tmpfs at /t. */
static char *bomb(size_t n, size_t *ret_len)
{
	size_t cap = 128 + n * 200, len = 0;
	char *buf = malloc(cap);

	assert_non_null(buf);
	len += (size_t)snprintf(buf + len, cap - len, "10 1 0:10 / / rw - ext4 r rw\n"
						       "11 10 0:11 / /t rw - tmpfs t rw\n");
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(buf + len, cap - len,
					"%zu 11 0:99 / /t/m%zu ro - overlay overlay ro,lowerdir=/t/l0:"
					"/t/l1:/t/l2:/t/l3:/t/l4:/t/l5:/t/l6:/t/l7:/t/l8:/t/l9\n",
					100 + i, i);
	*ret_len = len;
	return buf;
}

/*
 * Judged lazily: an overlay over the layer cap costs nothing until a file on it is asked
 * about, and then only it is capped; a table over the mount or byte cap is not judged.
 */
static void test_caps(void **state)
{
	struct fstypes f;
	size_t len;
	char *buf = bomb(100, &len);

	(void)state;
	assert_int_equal(fstypes_init(&f, FSTYPES_DEFAULT_EXCLUDE), 0);
	fstypes_set_limits(&f, &(struct fstypes_limits){ .max_layers = 9 });
	assert_int_equal(fstypes_add_mountinfo(&f, buf, len, false), 0);
	assert_int_equal(f.capped[FSTYPES_CAP_LAYERS], 0);
	assert_int_equal(fstypes_mount_excluded(&f, 11), 0);
	assert_int_equal(f.capped[FSTYPES_CAP_LAYERS], 0);
	assert_int_equal(fstypes_mount_excluded(&f, 150), -E2BIG);
	assert_int_equal(fstypes_mount_excluded(&f, 150), -E2BIG);
	assert_int_equal(f.capped[FSTYPES_CAP_LAYERS], 1);
	fstypes_reset(&f);
	fstypes_set_limits(&f, &(struct fstypes_limits){ .max_layers = 10 });
	assert_int_equal(fstypes_add_mountinfo(&f, buf, len, false), 0);
	assert_int_equal(fstypes_mount_excluded(&f, 150), 0);
	assert_int_equal(f.capped[FSTYPES_CAP_LAYERS], 1); /* counts for the scan: not reset */;

	/* 102 lines: a cap of 102 is not bitten, 101 is */
	fstypes_reset(&f);
	fstypes_set_limits(&f, &(struct fstypes_limits){ .max_mounts = 102 });
	assert_int_equal(fstypes_add_mountinfo_ns(&f, buf, len, 7, false), 0);
	assert_int_equal(fstypes_has_ns(&f, 7), 1);
	assert_int_equal(fstypes_mount_excluded(&f, 150), 0);
	assert_int_equal(f.capped[FSTYPES_CAP_MOUNTS], 0);
	fstypes_reset(&f);
	fstypes_set_limits(&f, &(struct fstypes_limits){ .max_mounts = 101 });
	assert_int_equal(fstypes_add_mountinfo_ns(&f, buf, len, 7, false), 0);
	assert_int_equal(f.capped[FSTYPES_CAP_MOUNTS], 1);
	assert_int_equal(fstypes_has_ns(&f, 7), -E2BIG);
	assert_int_equal(fstypes_has_ns(&f, 8), 0);
	assert_int_equal(fstypes_mount_excluded(&f, 11), -E2BIG);
	assert_int_equal(fstypes_mount_excluded(&f, 150), -E2BIG);

	/* bytes: a buffer of exactly the cap is whole; one byte more is cut */
	fstypes_reset(&f);
	fstypes_set_limits(&f, &(struct fstypes_limits){ .max_bytes = len });
	assert_int_equal(fstypes_add_mountinfo_ns(&f, buf, len, 7, false), 0);
	assert_int_equal(fstypes_has_ns(&f, 7), 1);
	fstypes_reset(&f);
	fstypes_set_limits(&f, &(struct fstypes_limits){ .max_bytes = len - 1 });
	assert_int_equal(fstypes_add_mountinfo_ns(&f, buf, len, 7, false), 0);
	assert_int_equal(fstypes_has_ns(&f, 7), -E2BIG);
	assert_int_equal(f.capped[FSTYPES_CAP_BYTES], 1);
	assert_int_equal(fstypes_mount_excluded(&f, 110), -E2BIG);
	fstypes_done(&f);
	free(buf);
}

/* The deadline is checked while parsing lines and while placing layers. */
static void test_deadline(void **state)
{
	struct fstypes f;
	size_t len;
	char *buf = bomb(1000, &len);

	(void)state;
	assert_int_equal(fstypes_init(&f, FSTYPES_DEFAULT_EXCLUDE), 0);
	f.deadline_ns = 1; /* long past */
	assert_int_equal(fstypes_add_mountinfo_ns(&f, buf, len, 7, false), -ETIME);
	assert_true(f.timed_out);
	assert_int_equal(fstypes_has_ns(&f, 7), 0);
	fstypes_reset(&f);
	f.deadline_ns = 0;
	assert_int_equal(fstypes_add_mountinfo(&f, buf, len, false), 0);
	f.deadline_ns = 1;
	assert_int_equal(fstypes_mount_excluded(&f, 500), -ETIME);
	assert_true(f.timed_out);
	assert_int_equal(fstypes_mount_excluded(&f, 11), 0); /* no layer: no loop to stop */
	fstypes_done(&f);
	free(buf);
}

/*
 * The index at scale: 20,000 overlays of 10 layers, every one asked about, in well under a
 * second of CPU (the linear placing took minutes; CPU time: the machine may be loaded).
 */
static void test_index_scale(void **state)
{
	struct fstypes f;
	struct timespec a, b;
	size_t len;
	char *buf = bomb(20000, &len);

	(void)state;
	assert_int_equal(fstypes_init(&f, FSTYPES_DEFAULT_EXCLUDE), 0);
	fstypes_set_limits(&f, &(struct fstypes_limits){ .max_mounts = 30000, .max_bytes = len });
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
	assert_int_equal(fstypes_add_mountinfo(&f, buf, len, false), 0);
	for (size_t i = 0; i < 20000; i++)
		assert_int_equal(fstypes_mount_excluded(&f, 100 + i), 0);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
	assert_true((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 < 5000);
	fstypes_done(&f);
	free(buf);
}

/*
 * Tables are kept across scans by namespace while its text is the same: a scan after reuses
 * the table (and counts its cap again); a changed text (a mount added) is parsed anew.
 */
static void test_cache_across_scans(void **state)
{
	static const char before[] = "60 1 0:60 / / rw - ext4 r rw\n"
				     "61 60 0:61 / /d rw - ext4 d rw\n";
	static const char after[] = "60 1 0:60 / / rw - ext4 r rw\n"
				    "61 60 0:61 / /d rw - ext4 d rw\n"
				    "62 61 0:62 / /d rw - nfs4 s:/ rw\n";
	struct fstypes rules, scan;
	const struct fstypes_table *kept;

	(void)state;
	assert_int_equal(fstypes_init(&rules, FSTYPES_DEFAULT_EXCLUDE), 0);
	fstypes_scan_init(&scan, &rules);
	assert_int_equal(fstypes_add_mountinfo_ns(&scan, before, strlen(before), 9, true), 0);
	kept = scan.tables[0];
	assert_int_equal(fstypes_path_mount(&scan, "/d/x"), 61);
	fstypes_scan_done(&scan);

	fstypes_scan_init(&scan, &rules);
	assert_int_equal(fstypes_add_mountinfo_ns(&scan, before, strlen(before), 9, true), 0);
	assert_ptr_equal(scan.tables[0], kept);
	assert_int_equal(fstypes_path_mount(&scan, "/d/x"), 61);
	fstypes_scan_done(&scan);

	fstypes_scan_init(&scan, &rules);
	assert_int_equal(fstypes_add_mountinfo_ns(&scan, after, strlen(after), 9, true), 0);
	assert_int_equal(fstypes_path_mount(&scan, "/d/x"), 62);
	assert_true(fstypes_path_excluded(&scan, "/d/x"));
	fstypes_scan_done(&scan);

	/* a capped table kept: each scan that reads it counts the cap */
	fstypes_set_limits(&rules, &(struct fstypes_limits){ .max_mounts = 2 });
	for (int i = 0; i < 2; i++) {
		fstypes_scan_init(&scan, &rules);
		assert_int_equal(fstypes_add_mountinfo_ns(&scan, after, strlen(after), 9, false), 0);
		assert_int_equal(scan.capped[FSTYPES_CAP_MOUNTS], 1);
		assert_int_equal(fstypes_mount_excluded(&scan, 61), -E2BIG);
		fstypes_scan_done(&scan);
	}
	fstypes_done(&rules);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_default),
		cmocka_unit_test(test_custom_and_none),
		cmocka_unit_test(test_memfd),
		cmocka_unit_test(test_overlay_layers),
		cmocka_unit_test(test_overlay_host_layers),
		cmocka_unit_test(test_index_place),
		cmocka_unit_test(test_caps),
		cmocka_unit_test(test_deadline),
		cmocka_unit_test(test_index_scale),
		cmocka_unit_test(test_cache_across_scans),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
