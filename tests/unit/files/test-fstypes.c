/* SPDX-License-Identifier: Apache-2.0 */
/* fstypes: mountinfo parsed from strings, the default exclusion, lookups by id and by path. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include <sys/mman.h>
#include <sys/stat.h>
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_default),
		cmocka_unit_test(test_custom_and_none),
		cmocka_unit_test(test_memfd),
		cmocka_unit_test(test_overlay_layers),
		cmocka_unit_test(test_overlay_host_layers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
