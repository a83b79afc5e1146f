/* SPDX-License-Identifier: Apache-2.0 */
#define _GNU_SOURCE
#include "privsep/supervise.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "privsep/sandbox.h"
#include "http/client.h"
#include "http/selfmetrics.h"
#include "base/util.h"

/* Retired HTTP processes not yet reaped, at most. */
#define SUPERVISE_MAX_RETIRED 4
#define NS_PER_S 1000000000ULL
/* A process that dies this soon after its start makes the next start wait longer. */
#define SUPERVISE_QUICK_DEATH_NS (10 * NS_PER_S)
#define SUPERVISE_MAX_DELAY_NS (60 * NS_PER_S)
/*
 * At stop, an HTTP process answers the scrapes it holds for this long at most (a scrape waits
 * for its scan HTTP_DEFAULT_SCRAPE_TIMEOUT seconds at most, without its own timeout), and gets
 * SIGKILL a second later: under systemd's TimeoutStopSec (90 s by default).
 */
#define SUPERVISE_DRAIN_NS ((uint64_t)(HTTP_DEFAULT_SCRAPE_TIMEOUT * 1e9))
#define SUPERVISE_STOP_NS (SUPERVISE_DRAIN_NS + NS_PER_S)

struct supervisor {
	struct supervise_options o;
	pid_t pid;              /* the serving HTTP process, 0: none (a start is due) */
	uint64_t started_ns;    /* its start */
	uint64_t next_start_ns; /* when pid is 0: not before this */
	uint64_t delay_ns;      /* the last wait before a start */
	uint64_t restarts;
	pid_t retired[SUPERVISE_MAX_RETIRED];
	struct selfmetrics_proc self; /* this process's /proc files: the scanner's process_* */
};

/* Closes every descriptor but 0-2, keep[] (at most 16): what the scan had open stays behind. */
static void close_all_but(const int *keep, size_t n)
{
	int sorted[16];
	unsigned lo = 3;

	n = n < ELEMENTSOF(sorted) ? n : ELEMENTSOF(sorted);
	memcpy(sorted, keep, n * sizeof(int));
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && sorted[j - 1] > sorted[j]; j--) {
			int t = sorted[j];

			sorted[j] = sorted[j - 1];
			sorted[j - 1] = t;
		}
	for (size_t i = 0; i < n; i++) {
		if (sorted[i] < (int)lo)
			continue;
		if ((unsigned)sorted[i] > lo)
			close_range(lo, (unsigned)sorted[i] - 1, 0);
		lo = (unsigned)sorted[i] + 1;
	}
	close_range(lo, ~0u, 0);
}

static void scanner_lost(void *userdata, int error)
{
	(void)userdata;
	log_error("scanner process gone; the HTTP process exits, serving nothing stale\terr=%s",
		  strerror(-error));
	_exit(EXIT_FAILURE);
}

/*
 * The HTTP process's signals: each lets it answer the scrapes it holds first (bounded), then
 * SIGTERM/SIGINT stop it, and so does the retire signal (a new web config).
 */
static void http_process_wait(struct http_server *http)
{
	sigset_t set;
	int sig;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SUPERVISE_RETIRE_SIGNAL);
	do
		sig = sigwaitinfo(&set, NULL);
	while (sig < 0);
	http_quiesce(http, SUPERVISE_DRAIN_NS);
}

/* After the fork: the HTTP process, from its channel sock. Returns its exit status. */
static int http_process(struct supervisor *sv, pid_t parent, int sock)
{
	struct privsep_client *client = NULL;
	struct http_source src;
	_cleanup_free_ char *err = NULL;
	const int *lfds;
	size_t n = http_listen_fds(sv->o.http, &lfds);
	int keep[16], r;

	keep[0] = sock;
	memcpy(keep + 1, lfds, (n < 15 ? n : 15) * sizeof(int));
	close_all_but(keep, n + 1);
	if (prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0) < 0 || getppid() != parent)
		return EXIT_FAILURE; /* the scanner is gone already */
	r = sv->o.drop_privileges ? sandbox_drop_all(&err) : 0;
	if (r < 0) {
		log_error("HTTP process cannot drop its capabilities\terr=%s",
			  err ? err : strerror(-r));
		return EXIT_FAILURE;
	}
	r = privsep_client_new(sock, scanner_lost, NULL, &client);
	if (r < 0) {
		log_error("HTTP process cannot reach the scanner\terr=%s", strerror(-r));
		return EXIT_FAILURE;
	}
	src = privsep_client_source(client);
	r = http_serve(sv->o.http, &src, &err);
	if (r < 0) {
		log_error("HTTP process cannot serve\terr=%s", err ? err : strerror(-r));
		return EXIT_FAILURE;
	}
	log_debug("HTTP process serving\tpid=%d", (int)getpid());
	http_process_wait(sv->o.http);
	http_stop(sv->o.http);
	privsep_client_free(client);
	return EXIT_SUCCESS;
}

/* Forks an HTTP process with a channel to the privsep server. Returns 0 or -errno. */
static int spawn(struct supervisor *sv)
{
	pid_t parent = getpid(), pid;
	int sp[2];
	int r;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
		return -errno;
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		r = -errno;
		close(sp[0]);
		close(sp[1]);
		return r;
	}
	if (pid == 0) {
		close(sp[0]);
		_exit(http_process(sv, parent, sp[1]));
	}
	close(sp[1]);
	r = privsep_server_add(sv->o.ps, sp[0]);
	if (r < 0) {
		kill(pid, SIGKILL); /* reaped as a death, and started again */
		return r;
	}
	sv->pid = pid;
	sv->started_ns = monotonic_ns();
	return 0;
}

int supervise_start(const struct supervise_options *o, struct supervisor **ret)
{
	struct supervisor *sv = calloc(1, sizeof(*sv));
	int r;

	if (!sv)
		return -ENOMEM;
	sv->o = *o;
	selfmetrics_proc_init(&sv->self);
	r = selfmetrics_proc_open("/proc", &sv->self);
	if (r < 0)
		log_warn("cannot open the scanner's /proc files; process_* describe the HTTP process"
			 "\terr=%s", strerror(-r));
	else
		selfmetrics_shared_sample(http_shared(o->http), &sv->self);
	r = spawn(sv);
	if (r < 0) {
		selfmetrics_proc_close(&sv->self);
		free(sv);
		return r;
	}
	*ret = sv;
	return 0;
}

/* The serving HTTP process died: a start is due, later when it keeps dying young. */
static void serving_died(struct supervisor *sv, int status)
{
	uint64_t now = monotonic_ns();

	if (WIFSIGNALED(status))
		log_error("HTTP process killed; starting a new one\tpid=%d\tsignal=SIG%s",
			  (int)sv->pid, sigabbrev_np(WTERMSIG(status)) ?: "?");
	else
		log_error("HTTP process exited; starting a new one\tpid=%d\tstatus=%d", (int)sv->pid,
			  WEXITSTATUS(status));
	if (now - sv->started_ns < SUPERVISE_QUICK_DEATH_NS && sv->restarts > 0)
		sv->delay_ns = sv->delay_ns ? sv->delay_ns * 2 : NS_PER_S;
	else
		sv->delay_ns = 0;
	if (sv->delay_ns > SUPERVISE_MAX_DELAY_NS)
		sv->delay_ns = SUPERVISE_MAX_DELAY_NS;
	sv->pid = 0;
	sv->next_start_ns = now + sv->delay_ns;
}

/* Reaps every HTTP process that ended. */
static void reap(struct supervisor *sv)
{
	int status;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		if (pid == sv->pid) {
			serving_died(sv, status);
			continue;
		}
		for (size_t i = 0; i < SUPERVISE_MAX_RETIRED; i++)
			if (sv->retired[i] == pid)
				sv->retired[i] = 0;
	}
}

/* A new HTTP process on the web config just loaded; the old one retires. */
static void replace(struct supervisor *sv)
{
	pid_t old = sv->pid;
	size_t slot = 0;
	int r = spawn(sv);

	if (r < 0) {
		log_warn("cannot start an HTTP process on the new web config; keeping the running one"
			 "\terr=%s", strerror(-r));
		return;
	}
	if (old <= 0)
		return;
	while (slot < SUPERVISE_MAX_RETIRED - 1 && sv->retired[slot] > 0)
		slot++;
	if (sv->retired[slot] > 0)
		kill(sv->retired[slot], SIGKILL); /* retiring too slowly: its scrapes are cut */
	sv->retired[slot] = old;
	kill(old, SUPERVISE_RETIRE_SIGNAL);
	log_info("HTTP process serves the new web config\tpid=%d\tretiring_pid=%d\ttls=%s"
		 "\tbasic_auth=%s", (int)sv->pid, (int)old, http_tls(sv->o.http) ? "on" : "off",
		 http_basic_auth(sv->o.http) ? "on" : "off");
}

/* Once a second or after a signal: reaping, a due start, the web config. */
static void tick(struct supervisor *sv)
{
	reap(sv);
	if (sv->self.self_stat >= 0)
		selfmetrics_shared_sample(http_shared(sv->o.http), &sv->self);
	if (sv->pid == 0 && monotonic_ns() >= sv->next_start_ns) {
		int r = spawn(sv);

		if (r < 0) {
			log_error("cannot start the HTTP process; trying again\terr=%s", strerror(-r));
			sv->next_start_ns = monotonic_ns() + NS_PER_S;
			return;
		}
		privsep_server_set_restarts(sv->o.ps, ++sv->restarts);
	}
	if (http_web_config_check(sv->o.http))
		replace(sv);
}

void supervise_signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGHUP);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGCHLD);
}

void supervise_run(struct supervisor *sv)
{
	sigset_t set;

	supervise_signals(&set);
	for (;;) {
		struct timespec ts = { 1, 0 };
		int sig = sigtimedwait(&set, NULL, &ts);

		if (sig == SIGINT || sig == SIGTERM) {
			log_info("shutting down\tsignal=%s", sig == SIGINT ? "SIGINT" : "SIGTERM");
			return;
		}
		if (sig == SIGHUP && sv->o.on_hup)
			sv->o.on_hup(sv->o.userdata);
		tick(sv);
	}
}

/* Whether an HTTP process is left to reap. */
static bool any_alive(const struct supervisor *sv)
{
	if (sv->pid > 0)
		return true;
	for (size_t i = 0; i < SUPERVISE_MAX_RETIRED; i++)
		if (sv->retired[i] > 0)
			return true;
	return false;
}

/* Sends sig to every HTTP process alive. */
static void signal_all(const struct supervisor *sv, int sig)
{
	if (sv->pid > 0)
		kill(sv->pid, sig);
	for (size_t i = 0; i < SUPERVISE_MAX_RETIRED; i++)
		if (sv->retired[i] > 0)
			kill(sv->retired[i], sig);
}

void supervise_stop(struct supervisor *sv)
{
	uint64_t end = monotonic_ns() + SUPERVISE_STOP_NS;

	if (!sv)
		return;
	signal_all(sv, SIGTERM);
	while (any_alive(sv)) {
		struct timespec ts = { 0, 20 * 1000 * 1000 };
		int status;
		pid_t pid = waitpid(-1, &status, WNOHANG);

		if (pid > 0) {
			if (pid == sv->pid)
				sv->pid = 0;
			for (size_t i = 0; i < SUPERVISE_MAX_RETIRED; i++)
				if (sv->retired[i] == pid)
					sv->retired[i] = 0;
			continue;
		}
		if (pid < 0 && errno == ECHILD)
			break;
		if (monotonic_ns() > end) {
			signal_all(sv, SIGKILL);
			end = UINT64_MAX;
		}
		nanosleep(&ts, NULL);
	}
	selfmetrics_proc_close(&sv->self);
	free(sv);
}
