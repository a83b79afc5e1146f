#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The test harness tested: its parsers get broken output (no TAP, exit 127, output cut short,
# too few results, a skip without a reason, no summary line) and must report a failure; good
# output must pass. Covers tests/e2e/lib.sh's kernel_results, scripts/run-suites.sh,
# tests/unit/run.sh, tests/lib/tap.sh, scripts/lib-check.sh's tally, scripts/mutate.sh's --check-list and
# scripts/prebuild.sh's timing line.
# Ends with "N passed, N failed, N skipped".
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
fix=$top/tests/lib/fixtures
# shellcheck source=tests/lib/tap.sh
. "$top/tests/lib/tap.sh"
# shellcheck source=tests/e2e/lib.sh
. "$top/tests/e2e/lib.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The cases say themselves whether they run under CI; this run's own CI=true must not leak in.
unset CI

# ---- the kernel suite's parser (e2e case 7) ----
results() { kernel_results "$fix/kernel-$1.log" "$2" >"$work/$1.out"; }
count() { grep -c "^$1" "$work/$2.out"; }
results good 0
eq "kernel log, good: every program passes" "$(count 'ok - ' good)" 6
eq "kernel log, good: no failure" "$(count 'not ok - ' good)" 0
eq "kernel log, good: the skipped result is counted" "$(count 'skip - ' good)" 1
check "kernel log, good: each program has its counts" grep -q '^ok - kernel seed: 5 passed, 0 failed, 1 skipped (exit 0)$' "$work/good.out"
for broken in "exit127 127 no TAP, runner not found (exit 127)" "truncated 1 output cut after the first program" \
	"few 0 the seed program with 2 of its 6 results" "prog127 1 one program exited 127 with no result"; do
	read -r name status what <<<"$broken"
	results "$name" "$status"
	check "kernel log, $what: fails" grep -q '^not ok - ' "$work/$name.out"
done
check "kernel log, too few results: the seed program is the one that fails" \
	grep -q '^not ok - kernel seed: .*2 results, want at least 6' "$work/few.out"
results noexit 0
check "kernel log, one program without its exit line: that program fails" \
	grep -q '^not ok - kernel numa: no exit status' "$work/noexit.out"
results good 1
check "kernel log, good but the runner exited 1: fails" grep -q '^not ok - kernel suite: exit 1' "$work/good.out"
kernel_results "$fix/kernel-good.log" 0 "seed=6 kselftest mainline m32 numa bench=3 dmesg" >"$work/nobench.out"
check "kernel log, a program asked for but not in the log (bench): fails" \
	grep -q '^not ok - kernel bench: no exit status' "$work/nobench.out"
kernel_results "$fix/kernel-good.log" 0 "seed=7 kselftest mainline m32 numa dmesg" >"$work/min7.out"
check "kernel log, a minimum from PROGRAMS (seed=7 against 6 results): fails" \
	grep -q '^not ok - kernel seed: 6 results, want at least 7' "$work/min7.out"

# ---- run-suites.sh ----
suites() { SUITE_LOG_DIR=$work/logs "$top/scripts/run-suites.sh" "$@" >"$work/suites.out" 2>&1; }
suites good='echo "ok - a"; echo "1 passed, 0 failed, 0 skipped"'
eq "run-suites: a good suite passes" "$?" 0
suites nosum='echo "ok - a"'
eq "run-suites: exit 0 without a summary line fails" "$?" 1
suites gone='exit 127'
eq "run-suites: exit 127 fails" "$?" 1
suites liar='echo "1 passed, 0 failed, 0 skipped"; exit 2'
eq "run-suites: exit 2 with a clean summary fails" "$?" 1
suites sk='echo "skip - a (no tool)"; echo "0 passed, 0 failed, 1 skipped"'
eq "run-suites: a skip passes outside CI" "$?" 0
check "run-suites: the skip and its reason are in the table" grep -q '^  sk: a (no tool) \[unexpected\]$' "$work/suites.out"
CI=true suites sk='echo "skip - a (no tool)"; echo "0 passed, 0 failed, 1 skipped"'
eq "run-suites: under CI an unexpected skip fails" "$?" 1
CI=true suites sk='echo "0 passed, 0 failed, 1 skipped"'
eq "run-suites: under CI a skip without a line fails" "$?" 1
printf 'sk ^a \\(no tool\\)$\n' >"$work/allow"
CI=true SKIP_ALLOWLIST=$work/allow suites sk='echo "skip - a (no tool)"; echo "0 passed, 0 failed, 1 skipped"'
eq "run-suites: under CI an allowed skip passes" "$?" 0
# The background build spins while one suite sleeps, then another suite spins: CPU is counted per suite, and
# for the background build apart. A spin ends after 1.5 s of its own CPU, not of the clock: on a loaded machine
# (make test's background build, at the same low priority as this one's) it takes longer, but uses as much.
spin='python3 -c "import time
while time.process_time() < 1.5: pass"'
PREBUILD="$spin; echo 'prebuild: x ready in 1 s'" suites idle='sleep 1.5; echo "1 passed, 0 failed, 0 skipped"' \
	busy="$spin; echo '1 passed, 0 failed'"
eq "run-suites: a background build that succeeds passes" "$?" 0
check "run-suites: the run waits for the background build and shows its line" grep -q '^  prebuild: x ready in 1 s$' "$work/suites.out"
check "run-suites: each suite's time, CPU and the machine's load are in the table" \
	grep -qE '^idle .*\(exit 0, [0-9]+:[0-9]{2}, CPU [0-9]+ s, machine [0-9]+% busy\)$' "$work/suites.out"
check "run-suites: a sleeping suite beside a busy background build has no CPU" grep -qE '^idle .*, CPU 0 s,' "$work/suites.out"
check "run-suites: a spinning suite has its CPU" grep -qE '^busy .*, CPU [12] s,' "$work/suites.out"
check "run-suites: the background build has its own CPU" grep -qE '^prebuild +CPU [12] s$' "$work/suites.out"
PREBUILD='exit 3' suites good='echo "ok - a"; echo "1 passed, 0 failed, 0 skipped"'
eq "run-suites: a background build that fails fails the run" "$?" 1
SUITE=two,one suites one='echo "1 passed, 0 failed"' bad='exit 1' two='echo "2 passed, 0 failed"'
eq "run-suites: SUITE=two,one runs those two and not the failing third" "$?" 0
check "run-suites: SUITE's suites in the list's order, the others not run" \
	bash -c "grep -o '^=== suite [a-z]*' '$work/suites.out' | tr '\n' ' ' | grep -qx '=== suite one === suite two '"
# A +suite runs beside the one after it: each makes its file, then waits (20 s at most) for the other's; run one after
# the other, the first to wait gives up and fails.
cat >"$work/meet.sh" <<'MEET'
touch "$1"
for _ in $(seq 200); do [ -e "$2" ] && break; sleep 0.1; done
if [ -e "$2" ]; then echo "1 passed, 0 failed"; else echo "not ok - $2 never came"; echo "0 passed, 1 failed"; fi
MEET
suites +lane="bash $work/meet.sh $work/lane $work/fore" fore="bash $work/meet.sh $work/fore $work/lane"
eq "run-suites: a +suite runs beside the suite after it" "$?" 0
check "run-suites: a +suite's output comes after the list's, and its row in the table" bash -c \
	"grep -o '^=== suite [a-z]*' '$work/suites.out' | tr '\n' ' ' | grep -qx '=== suite fore === suite lane ' &&
	grep -qE '^lane +1 passed' '$work/suites.out'"
suites +bad='echo "0 passed, 1 failed"' good='echo "1 passed, 0 failed"'
eq "run-suites: a +suite that fails fails the run" "$?" 1
SUITE=lane suites +lane='echo "1 passed, 0 failed"' bad='exit 1'
eq "run-suites: SUITE names a +suite without its +" "$?" 0
SUITE=nope suites one='echo "1 passed, 0 failed"'
eq "run-suites: a SUITE name the list lacks is an error" "$?" 2
check "run-suites: the error names the suites there are" grep -q "no suite named 'nope'; the suites: one" "$work/suites.out"

# ---- scripts/prebuild.sh's line per artifact: its time and the CPU of its build ----
eval "$(sed -n '/^children_cpu()/,/^}/p;/^timed()/,/^}/p' "$top/scripts/prebuild.sh")"
timed spinner sh -c "$spin; true" >"$work/timed.out"
check "prebuild: an artifact's line has its time and CPU" \
	grep -qE '^prebuild: spinner ready in [0-9]+ s \(CPU [12] s\)$' "$work/timed.out"

# ---- tests/unit/run.sh ----
unit() { "$top/tests/unit/run.sh" "$@" >"$work/unit.out" 2>&1; }
fake() { # fake NAME OUTPUT EXIT: a test binary that prints OUTPUT and exits EXIT
	printf '#!/bin/sh\nprintf "%%s\\n" "%s"\nexit %s\n' "$2" "$3" >"$work/$1"
	chmod +x "$work/$1"
}
fake okbin '[==========] 2 test(s) run.
[  PASSED  ] 2 test(s).' 0
unit "$work/okbin"
eq "unit runner: a good binary passes" "$?" 0
unit "$work/missing"
eq "unit runner: a binary that is not there (exit 127) fails" "$?" 1
fake crash 'AddressSanitizer: heap-use-after-free' 1
unit "$work/crash"
eq "unit runner: a sanitizer report without a cmocka summary fails" "$?" 1
fake short '[==========] 3 test(s) run.
[  PASSED  ] 2 test(s).' 0
unit "$work/short"
eq "unit runner: counts that do not add up fail" "$?" 1
fake skips '[ RUN      ] test_a
skip: needs root
[  SKIPPED ] test_a
[==========] 2 test(s) run.
[  PASSED  ] 1 test(s).
[  SKIPPED ] 1 test(s), listed below:
[  SKIPPED ] test_a' 0
unit "$work/skips"
eq "unit runner: cmocka skips are counted" "$(tail -n 1 "$work/unit.out")" "1 passed, 0 failed, 1 skipped"
check "unit runner: a skip is shown once, with its reason" \
	test "$(grep -c '^skip - skips: test_a (needs root)$' "$work/unit.out")" = 1

# ---- tests/lib/tap.sh ----
lib() { bash -c '. "$1"; shift; eval "$1"' lib "$top/tests/lib/tap.sh" "$@" >"$work/lib.out" 2>&1; }
lib 'skip "a thing"; finish'
eq "tap.sh: a skip without a reason fails" "$?" 1
CI=true lib 'skip_suite "no cgroup v2"'
eq "tap.sh: a suite skipping itself whole under CI fails" "$?" 1
CI='' lib 'skip_suite "no cgroup v2"'
eq "tap.sh: a suite skipping itself whole outside CI is a skip" "$(tail -n 1 "$work/lib.out")" "0 passed, 0 failed, 1 skipped"
lib 'eq x 1 2; pass y; finish'
eq "tap.sh: eq does not end the script" "$(tail -n 1 "$work/lib.out")" "1 passed, 1 failed, 0 skipped"
bash -c '. "$1"; trap finish EXIT; fail x; true' tl "$top/tests/lib/tap.sh" >/dev/null 2>&1
eq "tap.sh: finish in an EXIT trap after a failure exits 1" "$?" 1

# ---- scripts/lib-check.sh's tally ----
tally_of() { bash -c '. "$1"; tally bash -c "$2"; finish' tl "$top/scripts/lib-check.sh" "$1" >"$work/tally.out" 2>&1; }
tally_of 'echo PASS: a; echo "ok - b"'
eq "tally: results in both dialects are counted" "$(tail -n 1 "$work/tally.out")" "2 passed, 0 failed, 0 skipped"
tally_of 'exit 0'
eq "tally: a command that prints no result fails" "$?" 1
tally_of 'echo PASS: a; exit 127'
eq "tally: a command that exits 127 fails" "$?" 1

# ---- scripts/mutate.sh --check-list ----
# entry FILE FROM TO TESTS: a one-entry mutation list, checked (not run).
entry() {
	printf 'name: n\nmodule: m\nfile: %s\nfrom: %s\nto: %s\ntests: %s\n' "$@" >"$work/mutations"
	"$top/scripts/mutate.sh" --check-list "$work/mutations" >"$work/mutate.out" 2>&1
}
# list FROM TESTS: an entry on scripts/mutate.sh itself.
list() { entry scripts/mutate.sh "$1" x "$2"; }
list 'check_list=false' 'test-log sh:scripts/check-harness.sh tests/lib/*.sh'
eq "mutate --check-list: an entry that applies, with tests that exist, passes" "$?" 0
list 'a text that is nowhere' 'test-log'
eq "mutate --check-list: an original text no longer in its file fails" "$?" 1
list 'local' 'test-log'
eq "mutate --check-list: an original text in its file more than once fails" "$?" 1
list 'check_list=false' 'test-log test-gone'
eq "mutate --check-list: a unit test that does not exist fails" "$?" 1
list 'check_list=false' 'sh:scripts/gone.sh'
eq "mutate --check-list: an sh: command naming a file that does not exist fails" "$?" 1
# c_entry TO: a mutation of the daemon's C, which must still compile.
c_entry() { entry exporter/base/utf8.c 'if (c < 0x80)' "$1" test-utf8; }
c_entry 'if (c <= 0x80)'
eq "mutate --check-list: a mutation of the daemon's C that compiles passes" "$?" 0
c_entry 'if (c < 0x80 && no_such_name)'
eq "mutate --check-list: a mutation of the daemon's C that no longer compiles (a name undeclared) fails" "$?" 1

# A mutation of exporter/ is built into the daemon before a command runs it: a command that runs the binary it
# finds (tests/integration/mincore.sh does) sees the mutated code, not the binary built before.
printf 'name: n\nmodule: m\nfile: exporter/main.c\nfrom: %s\nto: %s\ntests: %s\n' \
	'scan once, print to stdout and exit' 'scan once, print to stdout and go' \
	"sh:exporter/cachestat_exporter --help | grep -q 'print to stdout and exit'" >"$work/mutations"
make -s -C "$top/exporter" cachestat_exporter >/dev/null 2>&1
# A second entry, on another file, runs the same command: its binary must have the first's original text back, so
# that the command passes and its (harmless) mutation survives; a binary keeping the first's mutation fails it.
printf '\nname: n2\nmodule: m\nfile: exporter/base/log.c\nfrom: %s\nto: %s\ntests: %s\n' \
	"/* slog's level names, which promslog keeps; the flag takes them in lower case. */" '/* slog level names */' \
	"sh:exporter/cachestat_exporter --help | grep -q 'print to stdout and exit'" >>"$work/mutations"
make -s -C "$top/exporter" cachestat_exporter >/dev/null 2>&1
MUTATE_ONLY='' "$top/scripts/mutate.sh" "$work/mutations" >"$work/mutate.out" 2>&1
eq "mutate: a command sees the mutated binary (the mutation is caught)" \
	"$(grep -c '^ok - m: n: caught' "$work/mutate.out")" 1
eq "mutate: the next entry's binary has the first's original text back (its mutation survives)" \
	"$(grep -c '^not ok - m: n2: SURVIVED' "$work/mutate.out")" 1

finish
