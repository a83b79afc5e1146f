/* SPDX-License-Identifier: Apache-2.0 */
/*
 * creds: /proc/PID/status parsed from strings, and the cachestat permission rule against a
 * table of cases worked out from the kernel's can_do_cachestat() (FMODE_WRITE, owner or
 * CAP_FOWNER, MAY_WRITE by the mode or CAP_DAC_OVERRIDE) and can_do_mincore().
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "files/creds.h"

static const char status_nobody[] = "Name:\tpython3\nUmask:\t0022\nState:\tS (sleeping)\n"
				    "Uid:\t65534\t65534\t65534\t65534\n"
				    "Gid:\t65534\t65534\t65534\t65534\nFDSize:\t64\n"
				    "Groups:\t4 27 \n"
				    "CapInh:\t0000000000000000\nCapPrm:\t0000000000000000\n"
				    "CapEff:\t0000000000000000\n";

static void test_parse(void **state)
{
	static const char root[] = "Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nGroups:\t\n"
				   "CapEff:\t000001ffffffffff\n";
	struct creds c;

	(void)state;
	assert_int_equal(creds_parse_status(status_nobody, strlen(status_nobody), &c), 0);
	assert_int_equal(c.fsuid, 65534);
	assert_int_equal(c.fsgid, 65534);
	assert_int_equal(c.n_groups, 2);
	assert_int_equal(c.groups[0], 4);
	assert_int_equal(c.groups[1], 27);
	assert_false(c.cap_fowner);
	assert_false(c.cap_dac_override);
	creds_done(&c);
	assert_int_equal(creds_parse_status(root, strlen(root), &c), 0);
	assert_int_equal(c.fsuid, 0);
	assert_int_equal(c.fsgid, 0);
	assert_int_equal(c.n_groups, 0);
	assert_true(c.cap_fowner);
	assert_true(c.cap_dac_override);
	creds_done(&c);
	assert_int_equal(creds_parse_status("Uid:\t1\t2\n", 10, &c), -EINVAL);
	assert_int_equal(creds_parse_status("Gid:\t1 1 1 1\nCapEff:\t0\n", 22, &c), -EINVAL);
}

/*
 * A process whose ids are not all its user's (setuid, setgid, setfsuid) is judged as its real
 * user without capabilities: it may hold what its user chose (`exec 5<f; exec passwd`).
 */
static void test_borrowed_ids(void **state)
{
	static const char *const cases[] = {
		/* passwd run by 1000: root's effective, saved and fs uid */
		"Uid:\t1000\t0\t0\t0\nGid:\t1000\t1000\t1000\t1000\nGroups:\t\n"
		"CapEff:\t000001ffffffffff\n",
		/* a daemon of uid 0 acting for 1000 through setfsuid() alone */
		"Uid:\t1000\t1000\t1000\t0\nGid:\t1000\t1000\t1000\t1000\nGroups:\t\n"
		"CapEff:\t000001ffffffffff\n",
		/* a setgid program */
		"Uid:\t1000\t1000\t1000\t1000\nGid:\t1000\t42\t42\t42\nGroups:\t\n"
		"CapEff:\t0000000000000000\n",
	};
	struct creds c;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(creds_parse_status(cases[i], strlen(cases[i]), &c), 0);
		assert_int_equal(c.fsuid, 1000);
		assert_int_equal(c.fsgid, 1000);
		assert_false(c.cap_fowner);
		assert_false(c.cap_dac_override);
		creds_done(&c);
	}
}

/*
 * creds_read() of a /proc/PID stand-in: a directory not owned by the status's real uid is the
 * owner procfs gives a process that is not dumpable (root), which is then judged as its real
 * user without capabilities; owned by it, the status is taken as it is.
 */
static void test_not_dumpable(void **state)
{
	static const char status[] = "Uid:\t1000\t1000\t1000\t1000\n"
				     "Gid:\t1000\t1000\t1000\t1000\nGroups:\t\n"
				     "CapEff:\t000001ffffffffff\n";
	char dir[] = "/tmp/cse-creds-XXXXXX", path[64], ns[64];
	int dirfd, fd;
	struct creds c;
	ssize_t n;

	(void)state;
	if (geteuid() != 0) {
		print_message("skipped: changing a directory's owner needs root\n");
		skip();
	}
	n = readlink("/proc/self/ns/user", ns, sizeof(ns) - 1);
	assert_true(n > 0);
	ns[n] = '\0';
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/status", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, status, strlen(status)), (ssize_t)strlen(status));
	close(fd);
	snprintf(path, sizeof(path), "%s/ns", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/ns/user", dir);
	assert_int_equal(symlink(ns, path), 0);
	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dirfd >= 0);

	/* owned by root: not dumpable */
	assert_int_equal(creds_read(dirfd, ns, &c), 0);
	assert_int_equal(c.fsuid, 1000);
	assert_false(c.cap_fowner);
	assert_false(c.cap_dac_override);
	creds_done(&c);
	/* owned by its real uid: as the status says */
	assert_int_equal(fchown(dirfd, 1000, 1000), 0);
	assert_int_equal(creds_read(dirfd, ns, &c), 0);
	assert_int_equal(c.fsuid, 1000);
	assert_true(c.cap_fowner);
	assert_true(c.cap_dac_override);
	creds_done(&c);

	close(dirfd);
	snprintf(path, sizeof(path), "%s/ns/user", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/ns", dir);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/status", dir);
	unlink(path);
	rmdir(dir);
}

static struct stat file(uid_t uid, gid_t gid, mode_t mode)
{
	return (struct stat){ .st_uid = uid, .st_gid = gid, .st_mode = S_IFREG | mode };
}

static void test_rule(void **state)
{
	struct creds c;
	struct stat root644 = file(0, 0, 0644), root600 = file(0, 0, 0600),
		    own400 = file(65534, 0, 0400), root666 = file(0, 0, 0666),
		    grp664 = file(0, 27, 0664), grp646 = file(0, 27, 0646);

	(void)state;
	assert_int_equal(creds_parse_status(status_nobody, strlen(status_nobody), &c), 0);
	/* O_PATH gives nothing, whatever the file */
	assert_false(creds_may_cachestat(&c, O_PATH, &root666));
	assert_false(creds_may_cachestat(&c, O_PATH | O_RDWR, &own400));
	/* reading is not enough; writing, owning, or write permission is */
	assert_false(creds_may_cachestat(&c, O_RDONLY, &root644));
	assert_true(creds_may_cachestat(&c, O_WRONLY, &root600));
	assert_true(creds_may_cachestat(&c, O_RDWR | O_APPEND, &root644));
	assert_true(creds_may_cachestat(&c, O_RDONLY, &own400));
	assert_true(creds_may_cachestat(&c, O_RDONLY, &root666));
	/* a member of the group gets the group's bits, not the others' */
	assert_true(creds_may_cachestat(&c, O_RDONLY, &grp664));
	assert_false(creds_may_cachestat(&c, O_RDONLY, &grp646));
	/* mappings: shared writable, or mincore's owner-or-writer */
	assert_true(creds_may_cachestat_mapping(&c, "rw-s", &root600));
	assert_false(creds_may_cachestat_mapping(&c, "rw-p", &root644));
	assert_false(creds_may_cachestat_mapping(&c, "r--s", &root644));
	assert_true(creds_may_cachestat_mapping(&c, "r-xp", &own400));
	/* the credentials alone: owner or writer by the mode, whatever the descriptor */
	assert_true(creds_may_cachestat_any_mode(&c, &own400));
	assert_true(creds_may_cachestat_any_mode(&c, &root666));
	assert_true(creds_may_cachestat_any_mode(&c, &grp664));
	assert_false(creds_may_cachestat_any_mode(&c, &root644));
	assert_false(creds_may_cachestat_any_mode(&c, &grp646));
	/* capabilities */
	c.cap_fowner = true;
	assert_true(creds_may_cachestat(&c, O_RDONLY, &root600));
	assert_true(creds_may_cachestat_any_mode(&c, &root600));
	assert_false(creds_may_cachestat(&c, O_PATH, &root600));
	c.cap_fowner = false;
	c.cap_dac_override = true;
	assert_true(creds_may_cachestat_mapping(&c, "r--p", &root600));
	creds_done(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_borrowed_ids),
		cmocka_unit_test(test_not_dumpable),
		cmocka_unit_test(test_rule),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
