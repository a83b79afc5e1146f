/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The fanotify collector: the files a cgroup opened within the window and no longer holds open
 * (fanotify.h), counted with the files it holds. They go into cachestat's per-cgroup sums, each
 * inode once (a file both held and recently opened counts as held), and are offered to the
 * collectors with a file_counted hook (perfile, subtree) like cachestat's own; its own families
 * say how much of a cgroup's numbers comes from the recent set alone, and how the listener fares.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scan/engine.h"
#include "collectors/cachestat.h"
#include "fanotify/fanotify.h"
#include "files/files.h"
#include "scan/registry.h"
#include "scan/render.h"
#include "base/util.h"

/* snap_cgroup.data of "fanotify". */
struct fanotify_cgroup {
	bool has_recent;      /* the recent set was counted in (cachestat has numbers here) */
	uint64_t recent_files; /* counted only because they were opened recently */
	uint64_t recent_cached;
	bool has_stats;       /* the listener's counters ride on the first cgroup of the scan */
	struct fanotify_stats stats;
};

static struct fanotify_options options = {
	.limits = { .max_entries = 100000, .max_per_cgroup = 10000, .window_ns = 300000000000ULL },
};
/* --collector.fanotify.refresh; negative: not given (30 s, or a tenth of a shorter window) */
static double refresh_seconds = -1;
static struct fanotify_listener *listener;
static char *setup_error;
static uint64_t overflows_seen;
static bool refusal_reported;

struct mount_fd {
	uint64_t fsid;
	int fd; /* -errno when it could not be opened */
};

struct fanotify_scan {
	struct collect_scan *scan;
	size_t idx;
	size_t cachestat;
	bool broken;
	int error;     /* of a file_counted hook (-ENOMEM), for the next scan_cgroup */
	bool offering; /* our own files are being offered: not held ones */
	bool stats_done;
	const struct snap_cgroup *held_cg;
	struct fileset held; /* (dev, ino) that cachestat counted in held_cg */
	struct files_ctx files;
	struct snap_cgroup *cur;
	struct cachestat_cgroup *sum;
	struct fanotify_cgroup *mine;
	struct mount_fd *mounts;
	size_t n_mounts;
	struct file_handle *fh; /* room for the largest handle */
};

static int parse_u64(const char *flag, const char *arg, uint64_t max, uint64_t *ret)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(arg, &end, 10);
	if (errno || end == arg || *end || arg[0] == '-' || v == 0 || v > max) {
		fprintf(stderr, "--%s: want a whole number from 1 to %llu, not \"%s\"\n", flag,
			(unsigned long long)max, arg);
		return -EINVAL;
	}
	*ret = v;
	return 0;
}

/*
 * A refresh not shorter than the window is refused when the flags are read, whichever of the
 * two comes first: a file silenced for a whole window would expire between two events.
 */
static int check_refresh_window(void)
{
	if (refresh_seconds <= 0 || (uint64_t)(refresh_seconds * 1e9) < options.limits.window_ns)
		return 0;
	fprintf(stderr, "--collector.fanotify.refresh=%g must be shorter than --collector.fanotify.window (%g s)\n",
		refresh_seconds, (double)options.limits.window_ns / 1e9);
	return -EINVAL;
}

static int parse_window(const char *arg)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (errno || end == arg || *end || !(v >= 1) || v > 604800) {
		fprintf(stderr, "--collector.fanotify.window: want seconds from 1 to 604800, not \"%s\"\n", arg);
		return -EINVAL;
	}
	options.limits.window_ns = (uint64_t)(v * 1e9);
	return check_refresh_window();
}

static int parse_refresh(const char *arg)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (errno || end == arg || *end || !(v == 0 || (v >= 0.1 && v <= 3600))) {
		fprintf(stderr, "--collector.fanotify.refresh: want 0 (no silencing) or seconds from 0.1 to 3600, not \"%s\"\n",
			arg);
		return -EINVAL;
	}
	refresh_seconds = v;
	return check_refresh_window();
}

static int parse_max_files(const char *arg)
{
	uint64_t v;
	int r = parse_u64("collector.fanotify.max-files", arg, 10000000, &v);

	if (r == 0)
		options.limits.max_entries = (size_t)v;
	return r;
}

static int parse_max_per_cgroup(const char *arg)
{
	uint64_t v;
	int r = parse_u64("collector.fanotify.max-files-per-cgroup", arg, 10000000, &v);

	if (r == 0)
		options.limits.max_per_cgroup = (size_t)v;
	return r;
}

static int parse_filesystems(const char *arg)
{
	options.filesystems = arg[0] ? arg : NULL;
	return 0;
}

static const struct collector_flag flags[] = {
	{ "collector.fanotify.window", "SECONDS", "a file counts this long after its last open (default 300)",
	  parse_window },
	{ "collector.fanotify.max-files", "N", "recent files kept over all cgroups (default 100000)",
	  parse_max_files },
	{ "collector.fanotify.max-files-per-cgroup", "N", "recent files kept per cgroup (default 10000)",
	  parse_max_per_cgroup },
	{ "collector.fanotify.filesystems", "MOUNTPOINT[,...]",
	  "file systems to watch (default: every local one not excluded by fs-types-exclude)",
	  parse_filesystems },
	{ "collector.fanotify.refresh", "SECONDS",
	  "files opened twice in a period make no event until the next refresh; 0: off (default 30, or a tenth of a shorter window)",
	  parse_refresh },
};

/*
 * The silencing period: the flag's, under the window (a file opened all the time makes an
 * event once a period, and must not expire in between); by default 30 s, or a tenth of a
 * window shorter than 300 s. 0 or -EINVAL, with why in *ret_error.
 */
static int refresh_ns(uint64_t window_ns, uint64_t *ret, char **ret_error)
{
	uint64_t v;

	if (refresh_seconds < 0) {
		*ret = window_ns / 10 < 30000000000ULL ? window_ns / 10 : 30000000000ULL;
		return 0;
	}
	v = (uint64_t)(refresh_seconds * 1e9);
	if (v >= window_ns) {
		if (asprintf(ret_error, "--collector.fanotify.refresh (%g s) must be shorter than --collector.fanotify.window (%g s)",
			     refresh_seconds, (double)window_ns / 1e9) < 0)
			*ret_error = NULL;
		return -EINVAL;
	}
	*ret = v;
	return 0;
}

/*
 * Before the privileges go: the fanotify group and its marks (CAP_SYS_ADMIN). One per process:
 * a second collector (the tests make several) shares the first one's.
 */
static int setup(const struct collector_options *opts)
{
	struct fanotify_options o = options;
	int r;

	if (listener || setup_error)
		return 0;
	o.procfs = opts->procfs;
	o.memory_v1 = opts->memory_v1;
	o.fs_types_exclude = opts->fs_types_exclude;
	o.max_silenced = o.limits.max_entries;
	r = refresh_ns(o.limits.window_ns, &o.refresh_ns, &setup_error);
	if (r == 0)
		r = fanotify_listener_new(&o, &listener, &setup_error);
	if (r == -ENOMEM)
		return r;
	if (r < 0 && !setup_error)
		setup_error = strdup(strerror(-r));
	return 0;
}

/* The listener's state as a problem of the scan: why it is not running, or that it lost events. */
static bool listener_ready(struct collect_scan *scan, struct fanotify_stats *stats)
{
	int r;

	if (!listener) {
		scan_problem(scan, "fanotify: %s", setup_error ? setup_error : "not set up");
		return false;
	}
	r = fanotify_listener_start(listener);
	if (r < 0) {
		scan_problem(scan, "fanotify: starting the listener: %s", strerror(-r));
		return false;
	}
	fanotify_listener_stats(listener, files_now_ns(), stats);
	if (stats->overflows > overflows_seen)
		scan_problem(scan, "fanotify: the event queue overflowed %llu times since the last scan; opens then were not seen",
			     (unsigned long long)(stats->overflows - overflows_seen));
	overflows_seen = stats->overflows;
	if (stats->silence_refused && !refusal_reported && !scan->snap->problem) {
		scan_problem(scan, "fanotify: the kernel refuses evictable ignore marks (Linux 5.19 and later have them) or their flush: files are not silenced, every open makes an event");
		refusal_reported = true; /* once: cachestat_fanotify_silence_enabled says it since */
	}
	return true;
}

/* files' visitor: a recent file not held now, asked about and added to both sums. */
static int visit_recent(struct files_ctx *fc, const struct files_entry *e)
{
	struct fanotify_scan *fs = fc->userdata;
	struct pagecache_cachestat st;
	struct snap_file file;
	int r;

	if (fs->held_cg == fs->cur &&
	    fileset_contains(&fs->held, (uint64_t)e->st->st_dev, (uint64_t)e->st->st_ino))
		return 0; /* held open: counted by cachestat already */
	r = files_cachestat(fc, fs->scan->pc, e, &st);
	if (r < 0) {
		fc->skipped[cachestat_skip_reason(r)]++;
		return 0;
	}
	file = cachestat_file_record(e, &st, (uint64_t)fs->scan->page_size);
	cachestat_sum_add(fs->sum, &file);
	fs->mine->recent_files++;
	fs->mine->recent_cached += file.c.cached;
	fs->offering = true;
	scan_file_counted(fs->scan, &(struct collect_file){ .cg = fs->cur, .file = &file, .fc = fc, .e = e });
	fs->offering = false;
	return 0;
}

/* cachestat's files: the ones a cgroup holds, which the recent set must not count again. */
static void file_counted(void *state, const struct collect_file *f)
{
	struct fanotify_scan *fs = state;

	if (fs->offering)
		return;
	if (fs->held_cg != f->cg) {
		fileset_clear(&fs->held);
		fs->held_cg = f->cg;
	}
	if (fileset_add(&fs->held, f->file->dev, f->file->ino) < 0)
		fs->error = -ENOMEM; /* the scan_cgroup after it ends the scan */
}

/* The mount descriptor of a file system for this scan, opened at its first use. */
static int mount_fd(struct fanotify_scan *fs, uint64_t fsid)
{
	struct mount_fd *a;

	for (size_t i = 0; i < fs->n_mounts; i++)
		if (fs->mounts[i].fsid == fsid)
			return fs->mounts[i].fd;
	a = realloc(fs->mounts, (fs->n_mounts + 1) * sizeof(*a));
	if (!a)
		return -ENOMEM;
	fs->mounts = a;
	a[fs->n_mounts] = (struct mount_fd){ .fsid = fsid, .fd = fanotify_listener_mount_fd(listener, fsid) };
	return a[fs->n_mounts++].fd;
}

static int scan_begin(struct collect_scan *scan, size_t idx, void **ret_state)
{
	_cleanup_free_ struct fanotify_scan *fs = NULL;
	struct fanotify_stats stats = { 0 };
	size_t cachestat;

	if (!scan_active(scan, "cachestat", &cachestat))
		return 0; /* nothing to add the recent files to */
	fs = calloc(1, sizeof(*fs));
	if (!fs)
		return -ENOMEM;
	*fs = (struct fanotify_scan){ .scan = scan, .idx = idx, .cachestat = cachestat };
	fs->files = (struct files_ctx){
		.visit = visit_recent,
		.userdata = fs,
		.fstypes = scan->fstypes,
		.deadline_ns = files_now_ns() + (uint64_t)(scan->cfg->max_scan_seconds * 1e9),
		.reserve_ns = (uint64_t)(scan->cfg->max_scan_seconds * 1e9) / (2 * (scan->n_cgroups + 1)),
		.page_size = (uint64_t)scan->page_size,
		.mincore_pages_left = &scan->mincore_pages_left,
	};
	fs->mine = calloc(1, sizeof(*fs->mine)); /* the counters, for the first cgroup */
	fs->fh = malloc(sizeof(*fs->fh) + HANDLESET_HANDLE_MAX);
	if (!fs->mine || !fs->fh) {
		free(fs->mine);
		free(fs->fh);
		return -ENOMEM;
	}
	fs->files.procfs_fd = open(scan->procfs, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (!listener_ready(scan, &stats) || fs->files.procfs_fd < 0) {
		fs->broken = true;
		scan_fail(scan, idx);
	}
	fs->mine->has_stats = !fs->broken;
	fs->mine->stats = stats;
	*ret_state = TAKE_PTR(fs);
	return 1;
}

/* The recent files of cg, through their handles; cachestat's sum for cg is fs->sum. */
static int scan_recent(struct fanotify_scan *fs, struct snap_cgroup *cg)
{
	struct collect_scan *scan = fs->scan;
	_cleanup_free_ struct handleset_item *items = NULL;
	size_t n = 0;
	int r;

	r = fanotify_listener_items(listener, cg->name, files_now_ns(), &items, &n);
	if (r < 0)
		return r;
	files_cgroup_begin(&fs->files, scan->cfg->max_files_per_cgroup,
			   scan->n_cgroups >= scan->snap->n_cgroups
				   ? scan->n_cgroups - scan->snap->n_cgroups + 1 : 1);
	if (fs->held_cg != cg) { /* cachestat offered no file of cg: it holds none */
		fileset_clear(&fs->held);
		fs->held_cg = cg;
	}
	for (size_t i = 0; i < n && !files_stopped(&fs->files); i++) {
		const struct handleset_item *it = &items[i];
		struct creds c = { .fsuid = it->creds.fsuid, .fsgid = it->creds.fsgid,
				   .cap_fowner = it->creds.cap_fowner,
				   .cap_dac_override = it->creds.cap_dac_override };
		int mfd = mount_fd(fs, it->fsid);

		if (mfd == -ENOMEM)
			return mfd;
		if (mfd < 0) { /* its file system was unmounted, or another is mounted there */
			fs->files.skipped[mfd == -ENOENT || mfd == -ESTALE ? SKIP_VANISHED : SKIP_ERROR]++;
			continue;
		}
		fs->fh->handle_bytes = it->len;
		fs->fh->handle_type = it->type;
		memcpy(fs->fh->f_handle, it->bytes, it->len);
		r = files_scan_handle(&fs->files, mfd, fs->fh, &c);
		if (r < 0)
			return r;
	}
	return 0;
}

/* The data slot of cg: the counters on the first cgroup of the scan, a new one on the others. */
static struct fanotify_cgroup *slot(struct fanotify_scan *fs, struct snap_cgroup *cg)
{
	if (!fs->stats_done) {
		fs->stats_done = true;
		cg->data[fs->idx] = fs->mine;
		return fs->mine;
	}
	return cg->data[fs->idx] = calloc(1, sizeof(struct fanotify_cgroup));
}

static int scan_cgroup(struct collect_scan *scan, size_t idx, void *state, int dirfd,
		       struct snap_cgroup *cg)
{
	struct fanotify_scan *fs = state;
	int r;

	(void)idx, (void)dirfd;
	if (fs->error < 0)
		return fs->error;
	fs->cur = cg;
	fs->sum = cg->data[fs->cachestat];
	if (fs->broken && !fs->stats_done) {
		/* failed in scan_begin: no counters and no recent files for any cgroup */
		fs->stats_done = true;
		free(fs->mine);
		fs->mine = NULL;
		return 0;
	}
	if (fs->stats_done && (fs->broken || !fs->sum))
		return 0;
	fs->mine = slot(fs, cg);
	if (!fs->mine)
		return -ENOMEM;
	if (fs->broken || !fs->sum)
		return 0; /* no cachestat numbers here (cut, or gone): none of ours either */
	fs->mine->has_recent = true;
	r = scan_recent(fs, cg);
	if (r == -ENOMEM)
		return r;
	if (r < 0 || fs->files.timed_out || fs->files.slice_out) {
		/* cut short: cachestat's sums would be short of the recent files; left out, as it does */
		registry_get(fs->cachestat)->free_cgroup(cg->data[fs->cachestat]);
		cg->data[fs->cachestat] = NULL;
		fs->mine->has_recent = false;
		if (fs->files.timed_out)
			scan_problem(scan, "fanotify: scan cut at limits.max_scan_seconds in %s", cg->name);
	}
	return r == -ENOMEM ? r : 0;
}

static void scan_end(struct collect_scan *scan, void *state)
{
	struct fanotify_scan *fs = state;

	for (int i = 0; i < _SKIP_MAX; i++)
		scan->snap->skipped[i] += fs->files.skipped[i];
	for (size_t i = 0; i < fs->n_mounts; i++)
		closep(&fs->mounts[i].fd);
	free(fs->mounts);
	if (!fs->stats_done)
		free(fs->mine);
	free(fs->fh);
	closep(&fs->files.procfs_fd);
	files_ctx_done(&fs->files);
	fileset_done(&fs->held);
	free(fs);
}

/* The per-cgroup families: how much of cachestat's numbers the recent set alone brought. */
static const struct {
	const char *name;
	const char *help;
} cgroup_families[] = {
	{ "cachestat_cgroup_recent_only_files",
	  "Files counted for the cgroup only because it opened them within the window (not held open now)." },
	{ "cachestat_cgroup_recent_only_cached_bytes",
	  "Page cache of the files counted for the cgroup only because it opened them within the window." },
};

/* The listener's own families, without labels. */
static const struct {
	const char *name;
	const char *type;
	const char *help;
} self_families[] = {
	{ "cachestat_fanotify_events_total", "counter", "File open events read from fanotify." },
	{ "cachestat_fanotify_queue_overflows_total", "counter",
	  "Times the fanotify event queue overflowed: opens in that time were not seen." },
	{ "cachestat_fanotify_events_pid_gone_total", "counter",
	  "Open events whose process exited before its cgroup could be read." },
	{ "cachestat_fanotify_events_unattributed_total", "counter",
	  "Open events not recorded for another reason (no cgroup, no credentials, no usable handle)." },
	{ "cachestat_fanotify_dropped_cgroup_cap_total", "counter",
	  "Recent files forgotten early: their cgroup was over --collector.fanotify.max-files-per-cgroup." },
	{ "cachestat_fanotify_dropped_global_cap_total", "counter",
	  "Recent files forgotten early: the set was over --collector.fanotify.max-files." },
	{ "cachestat_fanotify_expired_total", "counter",
	  "Recent files forgotten at the end of the window after their last open." },
	{ "cachestat_fanotify_recent_files", "gauge", "Entries in the recent set (cgroup, file)." },
	{ "cachestat_fanotify_filesystems_marked", "gauge", "File systems watched for opens." },
	{ "cachestat_fanotify_filesystems_unsupported", "gauge",
	  "Wanted file systems that could not be watched (no file handles, or no file system id)." },
	{ "cachestat_fanotify_silence_enabled", "gauge",
	  "1 while files opened twice in a period are silenced; 0 with --collector.fanotify.refresh=0 or when the kernel refuses evictable ignore marks." },
	{ "cachestat_fanotify_silenced_files", "gauge",
	  "Files whose opens make no event until the next refresh (ignore marks placed since the last one)." },
	{ "cachestat_fanotify_silence_errors_total", "counter",
	  "Ignore marks that could not be placed (refused by the kernel, or the file could not be opened): those files' opens keep making events." },
	{ "cachestat_fanotify_silence_refreshes_total", "counter",
	  "Times every ignore mark was dropped (each --collector.fanotify.refresh), so that each file's next open is seen again." },
};

static uint64_t self_value(const struct fanotify_stats *s, size_t f)
{
	const uint64_t v[] = { s->events, s->overflows, s->pid_gone, s->unattributed,
			       s->set.dropped_cgroup_cap, s->set.dropped_global_cap, s->set.expired,
			       s->set.entries, s->marked, s->unsupported, s->silence_on, s->silenced,
			       s->silence_errors, s->silence_refreshes };

	return f < ELEMENTSOF(v) ? v[f] : 0;
}

static void fanotify_text(FILE *out, const struct snapshot *s, size_t idx)
{
	const struct fanotify_cgroup *stats = NULL;
	bool any = false;

	for (size_t i = 0; i < s->n_cgroups; i++) {
		const struct fanotify_cgroup *d = s->cgroups[i].data[idx];

		any |= d && d->has_recent;
		if (d && d->has_stats)
			stats = d;
	}
	for (size_t f = 0; any && f < ELEMENTSOF(cgroup_families); f++) {
		render_family(out, cgroup_families[f].name, "gauge", cgroup_families[f].help);
		for (size_t i = 0; i < s->n_cgroups; i++) {
			const struct fanotify_cgroup *d = s->cgroups[i].data[idx];

			if (d && d->has_recent)
				render_cgroup_sample(out, cgroup_families[f].name, &s->cgroups[i],
						     f == 0 ? d->recent_files : d->recent_cached);
		}
	}
	for (size_t f = 0; stats && f < ELEMENTSOF(self_families); f++) {
		render_family(out, self_families[f].name, self_families[f].type, self_families[f].help);
		render_sample(out, self_families[f].name, self_value(&stats->stats, f));
	}
}

static void fanotify_json(json_t *o, const struct snap_cgroup *cg, size_t idx)
{
	const struct fanotify_cgroup *d = cg->data[idx];

	if (!d || !d->has_recent)
		return;
	json_object_set_new(o, "recent_only_files", render_json_u64(d->recent_files));
	json_object_set_new(o, "recent_only_cached_bytes", render_json_u64(d->recent_cached));
}

static const struct collector_def fanotify_collector = {
	.name = "fanotify",
	.help = "files each cgroup opened within a window and holds no more (fanotify)",
	.default_on = false,
	.reported = true,
	.flags = flags,
	.n_flags = ELEMENTSOF(flags),
	.setup = setup,
	.unavailable = cachestat_unavailable,
	.scan_begin = scan_begin,
	.scan_cgroup = scan_cgroup,
	.file_counted = file_counted,
	.scan_end = scan_end,
	.free_cgroup = free,
	.render_text = fanotify_text,
	.render_json = fanotify_json,
};
REGISTER_COLLECTOR(fanotify_collector);
