# cachestat_exporter: one entry point for building, testing and demonstrating every part.
# Large build outputs (kernel trees, guest images) are cached under BUILD_ROOT, outside the repository.

BUILD_ROOT ?= /var/tmp/cachestat_exporter
export BUILD_ROOT

SUITES = \
	unit='$(MAKE) -s -C exporter test-unit' \
	integration='tests/integration/run.sh' \
	hardening='tests/integration/hardening.sh' \
	dashboards='dashboards/check.sh' \
	deploy='deploy/check.sh' \
	kernel='kernel/scripts/test.sh' \
	e2e='tests/e2e/run.sh'

.PHONY: all exporter deps test kernel kernel-test kernel-bench kernel-ab kernel-series bench-exporter demo fuzz loadtest clean

all: exporter

exporter:
	$(MAKE) -C exporter

deps:
	scripts/install-deps.sh

test: deps
	scripts/run-suites.sh $(SUITES)

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

demo: deps exporter
	tests/e2e/demo.sh

fuzz: deps
	$(MAKE) -C exporter fuzz

loadtest: deps exporter
	tests/load/run.sh

clean:
	$(MAKE) -C exporter clean
