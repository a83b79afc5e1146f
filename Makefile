# SPDX-License-Identifier: Apache-2.0
# cachestat_exporter: one entry point for building, testing and demonstrating every part.
# Large build outputs (kernel trees, guest images) are cached under BUILD_ROOT, outside the repository.

BUILD_ROOT ?= /var/tmp/cachestat_exporter
export BUILD_ROOT

# Suites that need no kernel and no guest image run first, while scripts/prebuild.sh builds the guest image (and
# installs the stock kernels into copies of it) and the release kernel side by side, in the background at the
# lowest CPU priority (cold, the kernel is the longest part of a run). A suite that needs one waits for it through
# the build script's lock: integration's seed-ABI probe boots the release kernel (built here, so that the probe never
# has to skip), and e2e boots it in the guest image, with the kernel's own tests in the same boot (case 7). The
# stock-kernel guests (+: beside the suites after them) run beside e2e, whose TCG guest keeps one core of two busy.
# The debug kernel (KASAN, lockdep) is make kernel-test's: its build alone (1,034 s of CPU cold, nine minutes of
# both cores) would take make test past its 35-minute budget.
# The mutation runs (make mutate, about forty minutes of builds and test runs) check the tests rather than the code
# and are not part of make test; the mutations suite checks that every entry of their list still applies and that
# each mutation of the daemon's C still compiles.
SUITES = \
	shell='scripts/check-shell.sh' \
	harness='scripts/check-harness.sh' \
	kernel-checks='kernel/scripts/test.sh --checks' \
	docs='scripts/check-docs.sh' \
	unit='$(MAKE) -s -C exporter test-unit' \
	mutations='scripts/mutate.sh --check-list' \
	overlay='tests/integration/overlay.sh' \
	fanotify='tests/integration/fanotify.sh' \
	arm64='tests/integration/cross-arm64.sh' \
	hard-http='tests/integration/hardening-http.sh' \
	hard-auth='tests/integration/hardening-auth.sh' \
	hard-tls='tests/integration/hardening-tls.sh' \
	hard-privsep='tests/integration/hardening-privsep.sh' \
	hard-files='tests/integration/hardening-files.sh' \
	hard-mounts='tests/integration/hardening-mounts.sh' \
	hard-limits='tests/integration/hardening-limits.sh' \
	hard-cgroups='tests/integration/hardening-cgroups.sh' \
	hard-paths='tests/integration/hardening-paths.sh' \
	hard-mountbomb='tests/integration/hardening-mountbomb.sh' \
	operator-errors='tests/integration/operator-errors.sh' \
	operable='tests/integration/operable.sh' \
	mincore='tests/integration/mincore.sh' \
	hapair='tests/integration/hapair.sh' \
	bench-smoke='tests/bench/smoke.sh' \
	dashboards='dashboards/check.sh' \
	deploy='deploy/check.sh' \
	package='scripts/check-package.sh' \
	spdx='scripts/check-spdx.sh' \
	integration='kernel/scripts/build.sh release >/dev/null; tests/integration/run.sh' \
	+e2e-stock-bookworm='E2E_STOCK=bookworm tests/e2e/stock.sh' \
	+e2e-stock-mainline='E2E_STOCK=mainline tests/e2e/stock.sh' \
	e2e='tests/e2e/run.sh'

.PHONY: all exporter deps deb deb-build-test deb-install-test image test mutate kernel kernel-test kernel-bench kernel-ab kernel-series e2e-stock bench-exporter bench-fanotify bench-hostile bench-hostile-guest bench-cardinality bench-cardinality-guest bench-activity-guest bench-fleet demo fuzz loadtest clean

all: exporter

# What each target installs (scripts/install-deps.sh): the lists it needs and no more; make test
# (deps) every list of the tree.
DEPS_BUILD = exporter/deps-build.txt
DEPS_DEB = $(DEPS_BUILD) scripts/deps-deb.txt
DEPS_IMAGE = $(DEPS_DEB) scripts/deps-image.txt
DEPS_DEMO = $(DEPS_BUILD) kernel/deps.txt tests/e2e/deps.txt

exporter:
	scripts/install-deps.sh $(DEPS_BUILD)
	$(MAKE) -C exporter

deps:
	scripts/install-deps.sh

# make test SUITE=NAME[,NAME...]: only those suites, with the same packages; each builds what it needs
# through the same build scripts (no background build beside it).
test: deps
	PREBUILD=$(if $(SUITE),,scripts/prebuild.sh) SUITE='$(SUITE)' scripts/run-suites.sh $(SUITES)

# The Debian package of the working tree, lintian-checked, under $(BUILD_ROOT)/deb.
deb:
	scripts/install-deps.sh $(DEPS_DEB)
	scripts/build-deb.sh

# make deb in a bare bookworm chroot that has only what make deb installs (cached under
# $(BUILD_ROOT)/chroot): its lists are all the package needs.
deb-build-test:
	scripts/install-deps.sh $(DEPS_DEB) scripts/deps.txt
	scripts/check-deb-build.sh

# That package installed, reinstalled and purged in a bare bookworm chroot (debootstrap).
deb-install-test:
	scripts/install-deps.sh $(DEPS_DEB) scripts/deps.txt
	scripts/check-deb-install.sh

# An OCI image from scratch, out of that package and its libraries' Debian packages (buildah).
image:
	scripts/install-deps.sh $(DEPS_IMAGE)
	scripts/build-image.sh

# Each mutation of scripts/mutations.txt, one at a time, must make a test fail.
mutate: deps
	scripts/mutate.sh

kernel: deps
	kernel/scripts/build.sh release
	kernel/scripts/build.sh debug

kernel-test: deps
	kernel/scripts/test.sh

kernel-bench: deps
	kernel/scripts/bench.sh

kernel-ab: deps
	kernel/scripts/ab-numa.sh

kernel-series:
	kernel/scripts/series.sh

bench-exporter: deps exporter
	tests/bench/bench-exporter.sh

bench-fanotify: deps exporter
	tests/bench/fanotify.sh

# One scan's CPU, peak RSS and bytes against what a tenant controls (cgroups, root's and
# delegated; the length of their names; the descriptors of one process): linear below each
# cap, flat above it. Then the mount side (tests/bench/hostile-overlays.sh) when it is there.
bench-hostile: deps exporter
	tests/bench/hostile.sh

# The descriptor rows of bench-hostile (up to 1,000,000 held by one process) in the e2e guest, as root
# there: a host without CAP_SYS_RESOURCE cannot raise RLIMIT_NOFILE that far.
bench-hostile-guest: deps exporter
	tests/bench/hostile-guest.sh

# Series per family, per cgroup and in all, and their churn, of two 110-pod nodes (both kubelet
# cgroup drivers) as real cgroups, with the DaemonSet's flags and config.
bench-cardinality: deps exporter
	nice -n 10 tests/bench/cardinality.sh

# The same two nodes in the e2e guest (the patched kernel, cgroup v2 with the memory controller, two
# NUMA nodes), and the series the recording rules make of them in a private Prometheus.
bench-cardinality-guest: deps exporter
	tests/bench/cardinality-guest.sh

# The activity collector's counts against a cold read, a warm read and a write, and its cost (a cached-read
# loop with it off and on, the ratio), in the e2e guest on our kernel and on the stock mainline one.
bench-activity-guest: deps exporter
	tests/bench/activity-guest.sh

# 50 exporters over those nodes behind Debian's Prometheus (every rule file loaded) writing to
# victoria-metrics, 10 minutes: head series, memory, samples/s, rule and dashboard query times.
bench-fleet: deps exporter
	nice -n 10 tests/bench/fleet.sh

# Every e2e case on each stock Debian kernel (tests/e2e/stock.sh): bookworm's own, and bookworm-backports' mainline.
e2e-stock: deps
	rc=0; for k in bookworm mainline; do E2E_STOCK=$$k E2E_CASES=all E2E_OCI= tests/e2e/stock.sh || rc=1; done; exit $$rc

demo: exporter
	scripts/install-deps.sh $(DEPS_DEMO)
	tests/e2e/demo.sh

fuzz: deps
	$(MAKE) -C exporter fuzz

loadtest: deps exporter
	tests/load/run.sh

clean:
	$(MAKE) -C exporter clean
