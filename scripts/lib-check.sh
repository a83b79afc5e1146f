# Helpers for check scripts that print one line per check and end with "N passed, N failed, N skipped".
# Source it after `set -uo pipefail`; it makes $tmp (removed on exit) and keeps the counts.
# A failing check shows the output of its command, which the helpers leave in $tmp/out.

pass=0 fail=0 skip=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

ok() { echo "PASS: $1"; pass=$((pass + 1)); }
ko() { echo "FAIL: $1"; fail=$((fail + 1)); [ -s "$tmp/out" ] && sed 's/^/    /' "$tmp/out" | head -n 40; }
skipped() { echo "SKIP: $1"; skip=$((skip + 1)); }
# run NAME COMMAND...: passes when COMMAND succeeds.
run() { local name=$1; shift; if "$@" >"$tmp/out" 2>&1; then ok "$name"; else ko "$name"; fi; }
# reject NAME COMMAND...: passes when COMMAND fails (a broken input must be caught).
reject() { local name=$1; shift; if "$@" >"$tmp/out" 2>&1; then ko "$name (the broken input was accepted)"; else ok "$name"; fi; }
# tally COMMAND...: COMMAND prints PASS:/FAIL: lines itself; count them.
tally() {
	local line rc
	"$@" >"$tmp/tally" 2>&1
	rc=$?
	while IFS= read -r line; do
		case $line in
		PASS:*) echo "$line"; pass=$((pass + 1)) ;;
		FAIL:*) echo "$line"; fail=$((fail + 1)) ;;
		*) echo "    $line" ;;
		esac
	done <"$tmp/tally"
	if [ "$rc" -ne 0 ] && ! grep -q '^FAIL:' "$tmp/tally"; then
		: >"$tmp/out"
		ko "$1 ... exited with status $rc"
	fi
}
# finish: the summary line; exits 1 if a check failed.
finish() {
	echo "$pass passed, $fail failed, $skip skipped"
	[ "$fail" -eq 0 ]
	exit
}
