/* SPDX-License-Identifier: Apache-2.0 */
#define _GNU_SOURCE
#include "http/selfmetrics.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/util.h"
#include "base/expfmt.h"

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

/* A process's figures; a field it could not read is UINT64_MAX (left out). */
struct proc_figures {
	uint64_t cpu_us, rss_bytes, vsize_bytes, start_us, open_fds, max_fds;
	bool max_unlimited;
};

static void read_figures(const struct selfmetrics_proc *pf, struct proc_figures *ret)
{
	struct proc_stat st;
	struct rlimit rl;
	uint64_t fds = 0;

	*ret = (struct proc_figures){ UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX,
				      UINT64_MAX, false };
	if (read_self_stat(pf, &st) == 0) {
		ret->cpu_us = (uint64_t)(st.cpu_seconds * 1e6 + 0.5);
		ret->rss_bytes = st.rss_bytes;
		ret->vsize_bytes = st.vsize;
		ret->start_us = (uint64_t)(st.start_time * 1e6 + 0.5);
	}
	if (open_fds(pf->self_fd, &fds) == 0)
		ret->open_fds = fds;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		ret->max_unlimited = rl.rlim_cur == RLIM_INFINITY;
		ret->max_fds = ret->max_unlimited ? 0 : (uint64_t)rl.rlim_cur;
	}
}

/* The process families of f under prefix ("process_" or "cachestat_http_process_"); where a
 * file could not be read, its series are left out, as client libraries do. */
static void render_figures(FILE *out, const char *prefix, const char *whose,
			   const struct proc_figures *f)
{
	static const struct {
		const char *name, *type, *help;
		size_t off;
		bool micros;
	} fams[] = {
		{ "cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds",
		  offsetof(struct proc_figures, cpu_us), true },
		{ "resident_memory_bytes", "gauge", "Resident memory size in bytes",
		  offsetof(struct proc_figures, rss_bytes), false },
		{ "start_time_seconds", "gauge", "Start time of the process since unix epoch in seconds",
		  offsetof(struct proc_figures, start_us), true },
		{ "virtual_memory_bytes", "gauge", "Virtual memory size in bytes",
		  offsetof(struct proc_figures, vsize_bytes), false },
		{ "open_fds", "gauge", "Number of open file descriptors",
		  offsetof(struct proc_figures, open_fds), false },
	};

	for (size_t i = 0; i < ELEMENTSOF(fams); i++) {
		uint64_t v;

		memcpy(&v, (const char *)f + fams[i].off, sizeof(v));
		if (v == UINT64_MAX)
			continue;
		fprintf(out, "# HELP %s%s %s%s.\n# TYPE %s%s %s\n", prefix, fams[i].name, fams[i].help,
			whose, prefix, fams[i].name, fams[i].type);
		if (fams[i].micros)
			fprintf(out, "%s%s %" PRIu64 ".%06" PRIu64 "\n", prefix, fams[i].name,
				v / 1000000, v % 1000000);
		else
			fprintf(out, "%s%s %" PRIu64 "\n", prefix, fams[i].name, v);
	}
	if (f->max_fds == UINT64_MAX)
		return;
	fprintf(out, "# HELP %smax_fds Maximum number of open file descriptors%s.\n"
		     "# TYPE %smax_fds gauge\n", prefix, whose, prefix);
	if (f->max_unlimited)
		fprintf(out, "%smax_fds +Inf\n", prefix);
	else
		fprintf(out, "%smax_fds %" PRIu64 "\n", prefix, f->max_fds);
}

/* The figures the scanner sampled into sh, or false when it never did. */
static bool shared_figures(const struct selfmetrics_shared *sh, struct proc_figures *ret)
{
	uint64_t max;

	if (!sh || !atomic_load(&sh->sampled))
		return false;
	max = atomic_load(&sh->max_fds);
	*ret = (struct proc_figures){
		.cpu_us = atomic_load(&sh->cpu_us),
		.rss_bytes = atomic_load(&sh->rss_bytes),
		.vsize_bytes = atomic_load(&sh->vsize_bytes),
		.start_us = atomic_load(&sh->start_us),
		.open_fds = atomic_load(&sh->open_fds),
		.max_fds = max == UINT64_MAX - 1 ? 0 : max,
		.max_unlimited = max == UINT64_MAX - 1,
	};
	return true;
}

void selfmetrics_shared_sample(struct selfmetrics_shared *sh, const struct selfmetrics_proc *p)
{
	struct proc_figures f;

	read_figures(p, &f);
	atomic_store(&sh->cpu_us, f.cpu_us);
	atomic_store(&sh->rss_bytes, f.rss_bytes);
	atomic_store(&sh->vsize_bytes, f.vsize_bytes);
	atomic_store(&sh->start_us, f.start_us);
	atomic_store(&sh->open_fds, f.open_fds);
	atomic_store(&sh->max_fds, f.max_unlimited ? UINT64_MAX - 1 : f.max_fds);
	atomic_store(&sh->sampled, 1);
}

static uint64_t realtime_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

void selfmetrics_shared_config_loaded(struct selfmetrics_shared *sh, bool ok)
{
	atomic_store(&sh->reload_ok, ok ? 1 : 0);
	if (ok)
		atomic_store(&sh->reload_success_us, realtime_us());
}

int selfmetrics_shared_new(struct selfmetrics_shared **ret)
{
	void *m = mmap(NULL, sizeof(struct selfmetrics_shared), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (m == MAP_FAILED)
		return -errno;
	*ret = m; /* zeroed: counters at 0, never sampled */
	selfmetrics_shared_config_loaded(*ret, true);
	return 0;
}

void selfmetrics_shared_free(struct selfmetrics_shared *sh)
{
	if (sh)
		munmap(sh, sizeof(*sh));
}

/* p's families under prefix, read again at most once a TTL. */
static void process_families_cached(FILE *out, struct selfmetrics_proc *p, const char *prefix,
				    const char *whose)
{
	struct proc_figures fig;

	uint64_t now = monotonic_ns();

	pthread_mutex_lock(&p->lock);
	if (!p->text || now - p->rendered_ns >= SELFMETRICS_PROCESS_TTL_NS) {
		char *text = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&text, &len);

		if (f) {
			read_figures(p, &fig);
			render_figures(f, prefix, whose, &fig);
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
	else { /* out of memory for the copy: straight to out */
		read_figures(p, &fig);
		render_figures(out, prefix, whose, &fig);
	}
	pthread_mutex_unlock(&p->lock);
}

/* node_exporter's (and Prometheus's) pair, for --config.file. */
static void render_reload(FILE *out, const struct selfmetrics_shared *sh)
{
	uint64_t us = atomic_load(&sh->reload_success_us);

	render_family(out, "cachestat_config_last_reload_successful", "gauge",
		      "Whether the last load of --config.file (at start or on SIGHUP) succeeded.");
	fprintf(out, "cachestat_config_last_reload_successful %" PRIu64 "\n",
		atomic_load(&sh->reload_ok));
	render_family(out, "cachestat_config_last_reload_success_timestamp_seconds", "gauge",
		      "Timestamp of the last successful load of --config.file.");
	fprintf(out, "cachestat_config_last_reload_success_timestamp_seconds %" PRIu64 ".%06" PRIu64
		     "\n", us / 1000000, us % 1000000);
}

int selfmetrics_render(FILE *out, const struct selfmetrics *m, struct selfmetrics_proc *p,
		       const struct selfmetrics_shared *sh)
{
	struct proc_figures scanner;

	if (shared_figures(sh, &scanner)) {
		render_figures(out, "process_", " (the scanner process, the daemon's main one)",
			       &scanner);
		process_families_cached(out, p, "cachestat_http_process_", " (the HTTP process)");
	} else {
		process_families_cached(out, p, "process_", "");
	}
	if (sh)
		render_reload(out, sh);
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
