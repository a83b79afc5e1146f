// SPDX-License-Identifier: GPL-2.0
/*
 * Proof for "workingset: fix confusion around eviction vs refault container":
 * a refault is accounted to the lruvec of the node the new page lands on,
 * not to the node the old page was evicted from.
 *
 * Usage: numa_refault SCRATCH_DIR        (root, cgroup2 mounted, >= 2 nodes)
 *
 * A cgroup confined to node 0 reads a file, half of it is reclaimed with
 * memory.reclaim (the cgroup keeps the rest, so the shadow entries survive),
 * the cgroup is moved to node 1 and reads the file again. The refaults must
 * show up on node 1 in the cgroup's memory.numa_stat and in
 * /sys/devices/system/node/node1/vmstat, and not on node 0. Without the fix
 * they are all charged to node 0.
 *
 * Prints TAP.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define CACHESTAT_NR 451
#define FILE_MB 64
#define NR_CHECKS 7

/* The seed ABI of cachestat(); host headers may predate it. */
struct cs_stat {
	uint64_t nr_cache;
	uint64_t nr_dirty;
	uint64_t nr_writeback;
	uint64_t nr_evicted;
	uint64_t nr_recently_evicted;
};

struct node_counts {
	long long memcg[2];	/* memory.numa_stat workingset_refault_file */
	long long node[2];	/* nodeN/vmstat workingset_refault_file */
	long long file[2];	/* memory.numa_stat file, bytes */
};

static int tap_num;
static int tap_failed;

static void tap(bool ok, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void tap(bool ok, const char *fmt, ...)
{
	va_list ap;

	printf("%s %d ", ok ? "ok" : "not ok", ++tap_num);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	if (!ok)
		tap_failed++;
}

static int write_str(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, val, strlen(val));
	n = n < 0 ? -errno : 0;
	close(fd);
	return (int)n;
}

static int read_str(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	while (n > 0 && buf[n - 1] == '\n')
		buf[--n] = '\0';
	return 0;
}

/* "key N0=a N1=b" line of memory.numa_stat. */
static int numa_stat(const char *cg, const char *key, long long ret[2])
{
	char path[PATH_MAX], line[512];
	size_t klen = strlen(key);
	FILE *f;
	int found = -ENOENT;

	snprintf(path, sizeof(path), "%s/memory.numa_stat", cg);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, key, klen) || line[klen] != ' ')
			continue;
		if (sscanf(line + klen, " N0=%lld N1=%lld", &ret[0], &ret[1]) == 2)
			found = 0;
		break;
	}
	fclose(f);
	return found;
}

static long long node_vmstat(int node, const char *key)
{
	char path[PATH_MAX], name[128];
	long long val, found = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/vmstat", node);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fscanf(f, "%127s %lld", name, &val) == 2) {
		if (!strcmp(name, key)) {
			found = val;
			break;
		}
	}
	fclose(f);
	return found;
}

static int snapshot(const char *cg, struct node_counts *c)
{
	int i;

	if (numa_stat(cg, "workingset_refault_file", c->memcg) ||
	    numa_stat(cg, "file", c->file))
		return -1;
	for (i = 0; i < 2; i++) {
		c->node[i] = node_vmstat(i, "workingset_refault_file");
		if (c->node[i] < 0)
			return -1;
	}
	return 0;
}

static int cachestat(int fd, struct cs_stat *cs)
{
	memset(cs, 0, sizeof(*cs));
	return syscall(CACHESTAT_NR, fd, 0L, 0UL, sizeof(*cs), cs) ? -errno : 0;
}

/* Reads the whole file from a child that first joins the cgroup. */
static int read_in_cgroup(const char *cg, const char *file)
{
	char path[PATH_MAX + 64], pid[32], buf[1 << 16];
	int status, fd;
	pid_t child;

	fflush(stdout);
	child = fork();
	if (child < 0)
		return -errno;
	if (child == 0) {
		snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
		snprintf(pid, sizeof(pid), "%d", getpid());
		if (write_str(path, pid))
			_exit(2);
		fd = open(file, O_RDONLY);
		if (fd < 0)
			_exit(3);
		while (read(fd, buf, sizeof(buf)) > 0)
			;
		_exit(0);
	}
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		return -ECHILD;
	return 0;
}

static int create_file(const char *file)
{
	static char buf[1 << 20];
	int fd, i;

	fd = open(file, O_CREAT | O_TRUNC | O_WRONLY, 0644);
	if (fd < 0)
		return -errno;
	memset(buf, 0x3c, sizeof(buf));
	for (i = 0; i < FILE_MB; i++) {
		if (write(fd, buf, sizeof(buf)) != sizeof(buf)) {
			close(fd);
			return -EIO;
		}
	}
	/* Clean, then dropped without shadow entries: the first read is cold. */
	fsync(fd);
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	close(fd);
	return 0;
}

static int move_cgroup(const char *cg, int node)
{
	char path[PATH_MAX + 64], cpus[64], val[16];
	int ret;

	snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/cpulist", node);
	if (read_str(path, cpus, sizeof(cpus)) || !cpus[0])
		return -ENOENT;
	snprintf(path, sizeof(path), "%s/cpuset.cpus", cg);
	ret = write_str(path, cpus);
	if (ret)
		return ret;
	snprintf(path, sizeof(path), "%s/cpuset.mems", cg);
	snprintf(val, sizeof(val), "%d", node);
	return write_str(path, val);
}

static void print_counts(const char *when, const struct node_counts *c)
{
	printf("# %-14s memcg refault N0=%lld N1=%lld  node refault node0=%lld node1=%lld  memcg file N0=%lld N1=%lld kB\n",
	       when, c->memcg[0], c->memcg[1], c->node[0], c->node[1],
	       c->file[0] >> 10, c->file[1] >> 10);
}

/* MGLRU's refault path in 6.1 drops refaults from another node: use the classic LRU. */
static char lru_gen_saved[32];

static void lru_gen_off(void)
{
	const char *path = "/sys/kernel/mm/lru_gen/enabled";

	if (read_str(path, lru_gen_saved, sizeof(lru_gen_saved)) ||
	    !strcmp(lru_gen_saved, "0x0000")) {
		lru_gen_saved[0] = '\0';
		return;
	}
	if (write_str(path, "n"))
		lru_gen_saved[0] = '\0';
	else
		printf("# lru_gen was %s, switched off for the test\n", lru_gen_saved);
}

static void lru_gen_restore(void)
{
	if (lru_gen_saved[0])
		write_str("/sys/kernel/mm/lru_gen/enabled", lru_gen_saved);
}

static int find_cgroup2(char *buf, size_t len)
{
	char dev[256], dir[PATH_MAX], type[64];
	int ret = -ENOENT;
	FILE *f = fopen("/proc/self/mounts", "r");

	if (!f)
		return -errno;
	while (fscanf(f, "%255s %4095s %63s %*[^\n]", dev, dir, type) == 3) {
		if (!strcmp(type, "cgroup2")) {
			snprintf(buf, len, "%s", dir);
			ret = 0;
			break;
		}
	}
	fclose(f);
	return ret;
}

static int run(const char *cg, const char *file)
{
	struct node_counts before, after;
	long long pages = FILE_MB * (1LL << 20) / sysconf(_SC_PAGESIZE);
	long long evicted, d_memcg[2], d_node[2];
	char path[PATH_MAX + 64], val[32];
	struct cs_stat cs;
	int fd, ret;

	if (move_cgroup(cg, 0)) {
		printf("Bail out! cannot confine %s to node 0\n", cg);
		return 1;
	}
	ret = create_file(file);
	if (ret) {
		printf("Bail out! cannot create %s: %s\n", file, strerror(-ret));
		return 1;
	}
	if (read_in_cgroup(cg, file)) {
		printf("Bail out! reading in the cgroup failed\n");
		return 1;
	}
	/* memcg stats are flushed every 2 s, node stats every second. */
	sleep(3);
	if (snapshot(cg, &before)) {
		printf("Bail out! cannot read memory.numa_stat or node vmstat\n");
		return 1;
	}
	print_counts("after read", &before);
	tap(before.file[0] >= pages * sysconf(_SC_PAGESIZE) * 9 / 10,
	    "the file's pages were read into node 0 (%lld of %lld kB)",
	    before.file[0] >> 10, FILE_MB * 1024LL);

	snprintf(path, sizeof(path), "%s/memory.reclaim", cg);
	snprintf(val, sizeof(val), "%dM", FILE_MB / 2);
	ret = write_str(path, val);
	if (ret && ret != -EAGAIN)
		printf("# memory.reclaim: %s\n", strerror(-ret));
	fd = open(file, O_RDONLY);
	if (fd < 0 || cachestat(fd, &cs)) {
		printf("Bail out! cachestat on %s failed\n", file);
		return 1;
	}
	close(fd);
	evicted = (long long)cs.nr_evicted;
	printf("# after reclaim: cached %llu evicted %llu recently evicted %llu pages\n",
	       (unsigned long long)cs.nr_cache, (unsigned long long)cs.nr_evicted,
	       (unsigned long long)cs.nr_recently_evicted);
	tap(evicted >= pages / 4 && cs.nr_cache > 0,
	    "partial reclaim left shadow entries (%lld of %lld pages evicted)",
	    evicted, pages);

	if (move_cgroup(cg, 1)) {
		printf("Bail out! cannot move %s to node 1\n", cg);
		return 1;
	}
	sleep(3);
	if (snapshot(cg, &before))
		return 1;
	print_counts("before refault", &before);
	if (read_in_cgroup(cg, file)) {
		printf("Bail out! re-reading in the cgroup failed\n");
		return 1;
	}
	sleep(3);
	if (snapshot(cg, &after))
		return 1;
	print_counts("after refault", &after);

	d_memcg[0] = after.memcg[0] - before.memcg[0];
	d_memcg[1] = after.memcg[1] - before.memcg[1];
	d_node[0] = after.node[0] - before.node[0];
	d_node[1] = after.node[1] - before.node[1];
	printf("# refaults: memcg N0 +%lld N1 +%lld, node0 +%lld node1 +%lld (evicted %lld)\n",
	       d_memcg[0], d_memcg[1], d_node[0], d_node[1], evicted);

	tap(after.file[1] - before.file[1] >= evicted * sysconf(_SC_PAGESIZE) / 2,
	    "the refaulting pages landed on node 1");
	tap(evicted > 0 && d_memcg[1] >= evicted / 2,
	    "memory.numa_stat workingset_refault_file N1 rose (+%lld)", d_memcg[1]);
	tap(d_memcg[0] <= evicted / 10,
	    "memory.numa_stat workingset_refault_file N0 did not take the refaults (+%lld)",
	    d_memcg[0]);
	tap(evicted > 0 && d_node[1] >= evicted / 2,
	    "node1/vmstat workingset_refault_file rose (+%lld)", d_node[1]);
	tap(d_node[0] <= evicted / 10,
	    "node0/vmstat workingset_refault_file did not take the refaults (+%lld)",
	    d_node[0]);
	return 0;
}

int main(int argc, char **argv)
{
	char root[PATH_MAX], cg[PATH_MAX + 32], file[PATH_MAX], path[PATH_MAX + 64];
	struct stat st;
	int ret;

	if (argc != 2) {
		fprintf(stderr, "usage: %s SCRATCH_DIR\n", argv[0]);
		return 2;
	}
	printf("TAP version 13\n");
	if (stat("/sys/devices/system/node/node1", &st)) {
		printf("1..0 # SKIP needs two NUMA nodes\n");
		return 0;
	}
	if (find_cgroup2(root, sizeof(root))) {
		printf("1..0 # SKIP cgroup2 is not mounted\n");
		return 0;
	}
	printf("1..%d\n", NR_CHECKS);
	snprintf(path, sizeof(path), "%s/cgroup.subtree_control", root);
	write_str(path, "+cpuset");
	write_str(path, "+memory");
	snprintf(cg, sizeof(cg), "%s/numa-refault-%d", root, getpid());
	snprintf(file, sizeof(file), "%s/numa-refault.data", argv[1]);
	if (mkdir(cg, 0755)) {
		printf("Bail out! mkdir %s: %s\n", cg, strerror(errno));
		return 1;
	}
	lru_gen_off();
	ret = run(cg, file);
	lru_gen_restore();
	rmdir(cg);
	unlink(file);
	printf("# %d of %d failed\n", tap_failed, tap_num);
	return ret || tap_failed || tap_num != NR_CHECKS;
}
