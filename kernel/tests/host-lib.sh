# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Shared by kernel/scripts/{test,ab-numa,bench}.sh (sourced, not run).

TESTS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
KERNEL_DIR=$(cd "$TESTS_DIR/.." && pwd)
BUILD_ROOT=${BUILD_ROOT:-/var/tmp/cachestat_exporter}
export BUILD_ROOT
LOG_DIR=$BUILD_ROOT/kernel-tests/logs
mkdir -p "$LOG_DIR"

# Splats that fail a run. BUG/WARNING cover KASAN ("BUG: KASAN: ...") and lockdep
# ("WARNING: possible circular locking dependency detected"); keep in step with run-in-guest.sh.
SPLAT_RE='BUG:|WARNING:|KASAN:|UBSAN:|Oops|Kernel panic|kernel BUG|general protection fault'
SPLAT_RE="$SPLAT_RE|possible .*locking|inconsistent lock state|suspicious RCU usage"
SPLAT_RE="$SPLAT_RE|sleeping function called from invalid context|blocked for more than"

hlog() { printf '%s %s: %s\n' "$(date +%H:%M:%S)" "${0##*/}" "$*" >&2; }

# The bzImage of a variant; build.sh logs to stderr and prints the path last.
kernel_image() {
	"$KERNEL_DIR/scripts/build.sh" "$1" | tail -n 1
}

test_artifacts() {
	"$TESTS_DIR/build.sh" | tail -n 1
}

# The console log between two markers, without carriage returns.
log_section() {
	tr -d '\r' <"$1" | awk -v from="$2" -v to="$3" \
		'index($0, to) == 1 { on = 0 } on { print } index($0, from) == 1 { on = 1 }'
}

# Prints one line per TAP result of a guest run, prefixed with LABEL, then checks the kernel log
# for splats. Sets RES_PASS, RES_FAIL, RES_SKIP. MINIMA ("suite=N ...", optional) is the least
# number of results each suite must report: a program that stopped early, or never ran, fails
# the run even if everything it printed passed. So does a guest whose runner did not print its
# exit line with status 0.
parse_run() {
	local label=$1 log=$2 qemu_rc=$3 minima=${4:-} line status desc splats exit_line m suite want
	local -A count=()
	RES_PASS=0 RES_FAIL=0 RES_SKIP=0
	while IFS= read -r line; do
		case $line in
		"ok "*|"not ok "*)
			desc=$(echo "$line" | sed -E 's/^(not )?ok [0-9]+ //')
			suite=${desc%%:*}
			count[$suite]=$(( ${count[$suite]:-0} + 1 ))
			if [[ $line == "not ok"* ]]; then
				status=FAIL RES_FAIL=$((RES_FAIL + 1))
			elif [[ $desc == *"# SKIP"* ]]; then
				status=SKIP RES_SKIP=$((RES_SKIP + 1)) desc=${desc%% # SKIP*}
			else
				status=PASS RES_PASS=$((RES_PASS + 1))
			fi
			printf '%-4s %s %s\n' "$status" "$label" "$desc"
			;;
		esac
	done < <(log_section "$log" "=== cachestat-tests begin" "=== cachestat-tests exit")

	for m in $minima; do
		suite=${m%%=*} want=${m#*=}
		if [ "${count[$suite]:-0}" -lt "$want" ]; then
			RES_FAIL=$((RES_FAIL + 1))
			printf 'FAIL %s suite %s reported %s results, want at least %s\n' \
				"$label" "$suite" "${count[$suite]:-0}" "$want"
		fi
	done

	exit_line=$(tr -d '\r' <"$log" | grep -a '^=== cachestat-tests exit ' | tail -n 1)
	if [ "$exit_line" != "=== cachestat-tests exit 0" ]; then
		RES_FAIL=$((RES_FAIL + 1))
		printf 'FAIL %s guest runner exited with status 0 (got: %s)\n' "$label" \
			"${exit_line:-no exit line}"
	fi

	if [ "$qemu_rc" -ne 0 ] || ! tr -d '\r' <"$log" | grep -q '^=== dmesg end'; then
		RES_FAIL=$((RES_FAIL + 1))
		printf 'FAIL %s guest finished (qemu status %s); console tail:\n' "$label" "$qemu_rc"
		tr -d '\r' <"$log" | tail -n 30 | sed 's/^/     | /'
		return
	fi
	splats=$( { log_section "$log" "=== dmesg begin" "=== dmesg end"
		tr -d '\r' <"$log" | sed -n '/^=== dmesg end/,$p'; } | grep -E "$SPLAT_RE" || true)
	if [ -n "$splats" ]; then
		RES_FAIL=$((RES_FAIL + 1))
		printf 'FAIL %s kernel log at the end of the run has no splat:\n' "$label"
		echo "$splats" | head -n 40 | sed 's/^/     | /'
	else
		RES_PASS=$((RES_PASS + 1))
		printf 'PASS %s kernel log at the end of the run has no splat\n' "$label"
	fi
}
