/* SPDX-License-Identifier: Apache-2.0 */
#define _GNU_SOURCE
#include "serve/selfmetrics.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/util.h"
#include "scan/render.h"

static const unsigned codes[] = SELFMETRICS_CODES;
static const char *const login_reasons[] = SELFMETRICS_LOGIN_REASONS;

unsigned selfmetrics_code_index(unsigned code)
{
	for (unsigned i = 0; i < ELEMENTSOF(codes); i++)
		if (codes[i] == code)
			return i;
	return (unsigned)ELEMENTSOF(codes);
}

struct proc_stat {
	double cpu_seconds, start_time;
	uint64_t vsize, rss_bytes;
};

int selfmetrics_proc_open(const char *procfs, struct selfmetrics_proc *p)
{
	_cleanup_close_ int dir = -1, stat = -1, self_stat = -1, self_fd = -1;

	dir = open(procfs, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return -errno;
	stat = openat(dir, "stat", O_RDONLY | O_CLOEXEC);
	self_stat = openat(dir, "self/stat", O_RDONLY | O_CLOEXEC);
	self_fd = openat(dir, "self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (stat < 0 || self_stat < 0 || self_fd < 0)
		return -errno;
	p->stat = TAKE_FD(stat);
	p->self_stat = TAKE_FD(self_stat);
	p->self_fd = TAKE_FD(self_fd);
	return 0;
}

void selfmetrics_proc_init(struct selfmetrics_proc *p)
{
	*p = (struct selfmetrics_proc){ .stat = -1, .self_stat = -1, .self_fd = -1 };
	pthread_mutex_init(&p->lock, NULL);
}

void selfmetrics_proc_close(struct selfmetrics_proc *p)
{
	closep(&p->stat);
	closep(&p->self_stat);
	closep(&p->self_fd);
	free(p->text);
	p->text = NULL;
	p->len = 0;
}

/* The whole of a proc file, read again from its start (proc files are made at each read). */
static int read_again(int fd, char **ret)
{
	_cleanup_free_ char *buf = NULL;
	size_t cap = 4096, len = 0;

	if (fd < 0)
		return -EBADF;
	for (;;) {
		char *nb = realloc(buf, cap + 1);
		ssize_t n;

		if (!nb)
			return -ENOMEM;
		buf = nb;
		n = pread(fd, buf + len, cap - len, (off_t)len);
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		len += (size_t)n;
		if (len == cap)
			cap *= 2;
	}
	buf[len] = '\0';
	*ret = TAKE_PTR(buf);
	return 0;
}

/* Boot time (btime of /proc/stat), in seconds since the epoch. */
static int boot_time(int stat_fd, double *ret)
{
	_cleanup_free_ char *buf = NULL;
	const char *p;
	int r;

	r = read_again(stat_fd, &buf);
	if (r < 0)
		return r;
	p = strstr(buf, "\nbtime ");
	if (!p)
		return -EINVAL;
	*ret = strtod(p + 7, NULL);
	return 0;
}

/* utime, stime, starttime, vsize and rss of /proc/self/stat (proc(5)). */
static int read_self_stat(const struct selfmetrics_proc *pf, struct proc_stat *ret)
{
	_cleanup_free_ char *buf = NULL;
	unsigned long long utime, stime, start, vsize, rss;
	double ticks = (double)sysconf(_SC_CLK_TCK), btime;
	const char *p;
	int r;

	r = read_again(pf->self_stat, &buf);
	if (r < 0)
		return r;
	p = strrchr(buf, ')'); /* the command name may hold spaces and parentheses */
	if (!p || ticks <= 0)
		return -EINVAL;
	/* after ")": state(3) ... utime(14) stime(15) ... starttime(22) vsize(23) rss(24) */
	if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d "
			  "%*d %*d %llu %llu %llu", &utime, &stime, &start, &vsize, &rss) != 5)
		return -EINVAL;
	r = boot_time(pf->stat, &btime);
	if (r < 0)
		return r;
	*ret = (struct proc_stat){
		.cpu_seconds = (double)(utime + stime) / ticks,
		.start_time = btime + (double)start / ticks,
		.vsize = vsize,
		.rss_bytes = rss * (uint64_t)sysconf(_SC_PAGESIZE),
	};
	return 0;
}

/*
 * Entries of /proc/self/fd, less the copy of its descriptor that lists them. getdents64 rather
 * than fdopendir(), whose fstat() is a newfstatat that the HTTP process's filter refuses.
 */
static int open_fds(int self_fd, uint64_t *ret)
{
	_cleanup_close_ int fd = -1;
	char buf[4096] __attribute__((aligned(8)));
	uint64_t n = 0;
	long got;

	fd = self_fd < 0 ? -1 : fcntl(self_fd, F_DUPFD_CLOEXEC, 3);
	if (fd < 0)
		return -EBADF;
	if (lseek(fd, 0, SEEK_SET) < 0) /* the copy shares the offset of the last listing */
		return -errno;
	while ((got = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0)
		for (long off = 0; off < got;) {
			const struct dirent64 *e = (const struct dirent64 *)(buf + off);

			if (e->d_name[0] != '.')
				n++;
			off += e->d_reclen;
		}
	if (got < 0)
		return -errno;
	*ret = n > 0 ? n - 1 : 0;
	return 0;
}

/* Where a file cannot be read, its series are left out, as client libraries do. */
static void process_families(FILE *out, const struct selfmetrics_proc *pf)
{
	struct proc_stat st;
	struct rlimit rl;
	uint64_t fds = 0;

	if (read_self_stat(pf, &st) == 0) {
		render_family(out, "process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.");
		fprintf(out, "process_cpu_seconds_total %.2f\n", st.cpu_seconds);
		render_family(out, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
		fprintf(out, "process_resident_memory_bytes %" PRIu64 "\n", st.rss_bytes);
		render_family(out, "process_start_time_seconds", "gauge", "Start time of the process since unix epoch in seconds.");
		fprintf(out, "process_start_time_seconds %.2f\n", st.start_time);
		render_family(out, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.");
		fprintf(out, "process_virtual_memory_bytes %" PRIu64 "\n", st.vsize);
	}
	if (open_fds(pf->self_fd, &fds) == 0) {
		render_family(out, "process_open_fds", "gauge", "Number of open file descriptors.");
		fprintf(out, "process_open_fds %" PRIu64 "\n", fds);
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		render_family(out, "process_max_fds", "gauge", "Maximum number of open file descriptors.");
		if (rl.rlim_cur == RLIM_INFINITY)
			fprintf(out, "process_max_fds +Inf\n");
		else
			fprintf(out, "process_max_fds %llu\n", (unsigned long long)rl.rlim_cur);
	}
}

/* process_families() as rendered in the last TTL, rendered again once it is older. */
static void process_families_cached(FILE *out, struct selfmetrics_proc *p)
{
	uint64_t now = monotonic_ns();

	pthread_mutex_lock(&p->lock);
	if (!p->text || now - p->rendered_ns >= SELFMETRICS_PROCESS_TTL_NS) {
		char *text = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&text, &len);

		if (f) {
			process_families(f, p);
			if (fclose(f) == 0) {
				free(p->text);
				p->text = text;
				p->len = len;
				p->rendered_ns = now;
			} else {
				free(text);
			}
		}
	}
	if (p->text)
		fwrite(p->text, 1, p->len, out);
	else
		process_families(out, p); /* out of memory for the copy: straight to out */
	pthread_mutex_unlock(&p->lock);
}

int selfmetrics_render(FILE *out, const struct selfmetrics *m, struct selfmetrics_proc *p)
{
	process_families_cached(out, p);
	render_family(out, "cachestat_http_requests_total", "counter",
	       "HTTP requests answered by the exporter, by status code.");
	for (unsigned i = 0; i < SELFMETRICS_N_CODES; i++) {
		if (i < ELEMENTSOF(codes))
			fprintf(out, "cachestat_http_requests_total{code=\"%u\"} %" PRIu64 "\n", codes[i],
				m->requests[i]);
		else
			fprintf(out, "cachestat_http_requests_total{code=\"other\"} %" PRIu64 "\n",
				m->requests[i]);
	}
	render_family(out, "cachestat_http_logins_refused_total", "counter",
	       "Basic auth logins refused, by reason: wrong (401), or a bcrypt rate limit (429) of the client (client_rate) or of the clients that never logged in (new_clients_rate).");
	for (unsigned i = 0; i < SELFMETRICS_N_LOGIN_REASONS; i++)
		fprintf(out, "cachestat_http_logins_refused_total{reason=\"%s\"} %" PRIu64 "\n",
			login_reasons[i], m->logins_refused[i]);
	render_family(out, "cachestat_http_requests_in_flight", "gauge",
	       "Scrapes in progress, until their body is sent, this one included.");
	fprintf(out, "cachestat_http_requests_in_flight %u\n", m->in_flight);
	render_family(out, "cachestat_snapshot_age_seconds", "gauge",
	       "Time since the scan of the snapshot served ended: above the scrape's own wait, the scan in progress did not end in time and an older snapshot is served.");
	fprintf(out, "cachestat_snapshot_age_seconds %.3f\n", m->snapshot_age_seconds);
	render_family(out, "cachestat_scans_stuck_total", "counter",
	       "Scans left behind because they ran past limits.max_scan_seconds (a hung file system).");
	fprintf(out, "cachestat_scans_stuck_total %" PRIu64 "\n", m->scans_stuck_total);
	render_family(out, "cachestat_http_restarts_total", "counter",
	       "Times the HTTP process died and the scanner process started it again.");
	fprintf(out, "cachestat_http_restarts_total %" PRIu64 "\n", m->http_restarts_total);
	render_family(out, "cachestat_log_repeats_suppressed_total", "counter",
	       "Warnings not logged because they repeated the one logged before from the same place (the same scan problem, scan after scan).");
	fprintf(out, "cachestat_log_repeats_suppressed_total %" PRIu64 "\n", m->log_repeats_total);
	return ferror(out) ? -EIO : 0;
}
