#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make mutate: applies each mutation of scripts/mutations.txt, one at a time, to a scratch copy of
# exporter/, tests/, scripts/, dashboards/, deploy/ and docs/, runs the tests that cover it and expects them to fail.
# A mutation the tests do not catch (it survives) is a failure: a test is missing. So is a
# mutation whose original text is not in the file exactly once: the list must not rot silently.
#
# Usage: scripts/mutate.sh [--check-list] [LIST] (default scripts/mutations.txt). MUTATE_ONLY=REGEX runs the
# mutations whose name matches. One line per mutation, then a table (mutation, module, the
# test that caught it) and "N passed, N failed, N skipped".
#
# --check-list applies nothing to the tree and runs no test: it checks, in about a minute, that each entry still
# applies (its original text is in its file once and differs from its replacement), that a mutation of the
# daemon's C still compiles (a copy of its file, at -O0 with the warnings as errors: a mutation that no longer
# builds tests nothing) and that the tests it names exist (a unit test's source under tests/unit, the files an
# sh: command names). make test runs that; the mutations themselves, builds and test runs of about forty minutes,
# are make mutate's.
#
# List format, blocks separated by blank lines ('#' lines are comments):
#   name: a short name          module: collect
#   file: exporter/scan/engine.c    (relative to the repository's top)
#   from: the exact original text (one line)
#   to: its replacement
#   tests: test-collect-exact test-collect   (unit test binaries, then at most one sh:COMMAND run from
#          the top: the rest of the line, spaces and all, so that it can name the one check that applies)
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
check_list=false
if [ "${1:-}" = --check-list ]; then
	check_list=true
	shift
fi
list=${1:-$top/scripts/mutations.txt}
# shellcheck source=tests/lib/tap.sh
. "$top/tests/lib/tap.sh"

# apply FILE FROM TO: replaces the one occurrence of FROM, byte for byte; exit 3 when not found, 4 when ambiguous.
# Perl's, not python's: --check-list applies every C entry to a copy, and a python start each would be most of
# its time.
apply() {
	perl -0777 -e '
		my ($path, $from, $to) = @ARGV;
		open(my $in, "<", $path) or exit 5;
		my $text = <$in> // "";
		close $in;
		my $n = () = $text =~ /\Q$from\E/g;
		exit($n ? 4 : 3) if $n != 1;
		$text =~ s/\Q$from\E/$to/;
		open(my $out, ">", $path) or exit 5;
		print $out $text;
		close $out or exit 5;' "$@"
}

# check_entry NAME MODULE FILE FROM TO TESTS: the entry applies, and the tests it names exist (grep counts the
# occurrences as apply does: byte for byte, not overlapping).
check_entry() {
	local name=$1 module=$2 file=$3 from=$4 to=$5 tests=$6 t word missing=()
	if [ ! -e "$top/$file" ]; then
		missing+=("the file $file")
	elif [ "$(LC_ALL=C grep -oF -- "$from" "$top/$file" | wc -l)" -ne 1 ]; then
		missing+=("its original text once in $file")
	fi
	[ "$from" != "$to" ] || missing+=("a replacement that differs from the original")
	# (the BPF program is clang's, for another target: make mutate builds it)
	if [ ${#missing[@]} -eq 0 ] && [[ $file == exporter/*.c && $file != exporter/activity/program.c ]] &&
		! compiles "$file" "$from" "$to"; then
		missing+=("a mutated text that compiles ($(grep -m1 'error' "$check_dir/cc.log"))")
	fi
	for t in ${tests%%sh:*}; do
		[[ " ${unit_sources[*]} " == *" $t.c "* ]] || missing+=("the unit test $t")
	done
	if [[ $tests == *sh:* ]]; then
		# Every word that names a path of the repository (a '/' in it) must match a file.
		for word in ${tests#*sh:}; do
			[[ $word == */* ]] || continue
			compgen -G "$top/$word" >/dev/null || missing+=("$word")
		done
	fi
	if [ ${#missing[@]} -eq 0 ]; then
		pass "$module: $name: applies, and its tests exist"
	else
		fail "$module: $name: missing $(printf '%s; ' "${missing[@]}")"
	fi
}
# compiles FILE FROM TO: a copy of the daemon's source FILE with the mutation compiles, its own directory
# searched first for its quoted includes as for the original.
compiles() {
	cp "$top/$1" "$check_dir/mutated.c" && apply "$check_dir/mutated.c" "$2" "$3" &&
		(cd "$top/exporter" && $check_cc -iquote "$top/$(dirname "$1")" -c -o /dev/null "$check_dir/mutated.c") \
			>"$check_dir/cc.log" 2>&1
}
# The unit tests' sources, for check_entry; the compiler of compiles().
if $check_list; then
	mapfile -t unit_sources < <(find "$top/tests/unit" -name 'test-*.c' -printf '%f\n')
	check_cc=$(make -s -C "$top/exporter" print-check-cc) || {
		fail "the exporter's compile command (make -C exporter print-check-cc)"
		finish
	}
	check_dir=$(mktemp -d "${TMPDIR:-/tmp}/cse-mutate-check.XXXXXX")
	trap 'rm -rf "$check_dir"' EXIT
fi

unit() { # unit TEST...: builds and runs the unit test binaries; fails on the first that fails
	local t
	make -s -C "$scratch/exporter" "${@/#/build/asan/}" >"$scratch/build.log" 2>&1 || {
		echo "build failed"
		return 1
	}
	for t in "$@"; do
		# from tests/unit, as tests/unit/run.sh runs them (the golden files are relative)
		(cd "$scratch/tests/unit" && ASAN_OPTIONS=detect_leaks=1 timeout 120 "$scratch/exporter/build/asan/$t") \
			>"$scratch/test.log" 2>&1 ||
			{ echo "$t"; return 1; }
	done
	return 0
}
# run FILE TEST...: the tests in order; prints the one that failed (caught the mutation). Before a command, a
# mutation of exporter/ is built into the daemon's binary: a command that runs the binary it finds would
# otherwise test the unmutated one, and the mutation would survive without a test having seen it.
run() {
	local file=$1 t
	shift
	for t in "$@"; do
		case $t in
		# stdin is the list being read: a command that reads it (ssh does) would eat the entries after its own
		sh:*)
			if [[ $file == exporter/* ]] && ! make -s -C "$scratch/exporter" cachestat_exporter >"$scratch/build.log" 2>&1; then
				echo "build failed"
				return 1
			fi
			(cd "$scratch" && bash -c "${t#sh:}") </dev/null >"$scratch/test.log" 2>&1 || { echo "$t"; return 1; } ;;
		*) unit "$t" || return 1 ;;
		esac
	done
	return 0
}

# prepare: the tests of the list (of the entries MUTATE_ONLY selects) built in the tree (where they stay for the
# next run), a scratch copy of the tree, and the baseline: every one of those tests passes on the code as it is.
# Not for --check-list.
# selected_tests: the tests lines of the entries MUTATE_ONLY selects (every entry's without it).
selected_tests() {
	awk -v re="${MUTATE_ONLY:-}" '/^name: / { keep = re == "" || substr($0, 7) ~ re }
		/^tests: / && keep { sub(/^tests: */, ""); print }' "$list"
}

prepare() {
	mapfile -t all_tests < <(selected_tests | sed 's/sh:.*//' | tr ' ' '\n' | grep . | sort -u)
	mapfile -t all_sh < <(selected_tests | grep -o 'sh:.*' | sort -u)
	make -s -C "$top/exporter" "${all_tests[@]/#/build/asan/}" >/dev/null || {
		fail "the unit tests of the list build"
		finish
	}
	scratch=$(mktemp -d "${TMPDIR:-/tmp}/cse-mutate.XXXXXX")
	trap 'rm -rf "$scratch"' EXIT
	# The whole tree but .git (the checks read README.md, the Makefile, .shellcheckrc); the copy keeps
	# the mtimes, and so the unit tests already built under exporter/build.
	find "$top" -mindepth 1 -maxdepth 1 ! -name .git -exec cp -a {} "$scratch/" \;
	rm -f "$scratch/exporter/cachestat_exporter"

	# The baseline: every test of the list passes on the code as it is.
	if ! why=$(run exporter/ "${all_tests[@]}" "${all_sh[@]}"); then
		fail "baseline: the tests pass on the unmutated code (failed: $why)"
		sed 's/^/    /' "$scratch/build.log" "$scratch/test.log" | tail -n 20
		finish
	fi
	echo "baseline: ${#all_tests[@]} unit test binaries and ${#all_sh[@]} commands pass unmutated"
}
$check_list || prepare

table=()

mutate_one() { # name module file from to tests
	local name=$1 module=$2 file=$3 from=$4 to=$5 tests=$6 rc caught
	local src=$scratch/$file bak=$scratch/.orig units=${6%%sh:*} items
	if [ -n "${MUTATE_ONLY:-}" ] && ! [[ $name =~ $MUTATE_ONLY ]]; then
		return
	fi
	if [ ! -e "$src" ]; then
		fail "$module: $name: no file $file"
		table+=("$(printf '%-52s %-10s %s' "$name" "$module" "ROT: no file")")
		return
	fi
	cp -p "$src" "$bak"
	keep_build "$file" "$units"
	apply "$src" "$from" "$to"
	rc=$?
	if [ "$rc" -ne 0 ]; then
		fail "$module: $name: the original text is $([ "$rc" -eq 3 ] && echo "not found" || echo "not unique") in $file"
		table+=("$(printf '%-52s %-10s %s' "$name" "$module" "ROT: text not found once")")
		return
	fi
	read -r -a items <<<"$units"
	[[ $tests == *sh:* ]] && items+=("sh:${tests#*sh:}")
	if caught=$(run "$file" "${items[@]}"); then
		fail "$module: $name: SURVIVED ($tests all pass)"
		table+=("$(printf '%-52s %-10s %s' "$name" "$module" "SURVIVED")")
	elif [ "$caught" = "build failed" ]; then
		fail "$module: $name: the mutated code does not build (a mutation must compile)"
		sed 's/^/    /' "$scratch/build.log" | head -n 5
		table+=("$(printf '%-52s %-10s %s' "$name" "$module" "DOES NOT BUILD")")
	else
		pass "$module: $name: caught by $caught"
		table+=("$(printf '%-52s %-10s %s' "$name" "$module" "$caught")")
	fi
	# The original back, with its mtime and its built objects: the next mutation starts from the
	# baseline and recompiles only what it changes.
	cp -p "$bak" "$src"
	restore_build
}

# keep_build FILE TESTS: keeps the object of FILE, and the test binaries and their objects, to put back
# afterwards (a mutated test source recompiles its object, which must not outlive the mutation). The object's
# path below build/asan is the source's below exporter/ (files/files.o); a test's is tests/test-NAME.o.
keep_build() {
	local asan=$scratch/exporter/build/asan t o
	rm -rf "$scratch/.keep"
	mkdir "$scratch/.keep"
	o=${1#exporter/}
	o=${o%.c}.o
	# shellcheck disable=SC2086 # $2 is a list of names
	for t in "$o" $2 ${2:+$(printf 'tests/%s.o ' $2)}; do
		[ -e "$asan/$t" ] && (cd "$asan" && cp -p --parents "$t" "$scratch/.keep/")
	done
	# the daemon's object of FILE, which a command's build (run) compiles from the mutated text
	daemon_object=''
	[[ $1 == exporter/*.c ]] && daemon_object=$scratch/exporter/build/$o
	return 0
}
restore_build() {
	cp -pR "$scratch/.keep/." "$scratch/exporter/build/asan/" 2>/dev/null
	# The original text is back with its old mtime, older than an object built from the mutation: the
	# daemon's object goes, so that the next build compiles the original (and its library and the binary follow).
	[ -z "$daemon_object" ] || rm -f "$daemon_object"
	return 0
}

name='' module='' file='' from='' to='' tests=''
flush() {
	if [ -n "$name$file$from" ]; then
		if [ -z "$name" ] || [ -z "$module" ] || [ -z "$file" ] || [ -z "$from" ] || [ -z "$tests" ]; then
			fail "list: an incomplete entry (name '$name', file '$file')"
		else
			if $check_list; then
				check_entry "$name" "$module" "$file" "$from" "$to" "$tests"
			else
				mutate_one "$name" "$module" "$file" "$from" "$to" "$tests"
			fi
		fi
	fi
	name='' module='' file='' from='' to='' tests=''
}
while IFS= read -r line || [ -n "$line" ]; do
	case $line in
	'#'*) continue ;;
	'') flush ;;
	name:*) name=${line#name: } ;;
	module:*) module=${line#module: } ;;
	file:*) file=${line#file: } ;;
	from:*) from=${line#from: } ;;
	to:*) to=${line#to: } ;;
	to) to='' ;;
	tests:*) tests=${line#tests: } ;;
	*) fail "list: cannot read the line '$line'" ;;
	esac
done <"$list"
flush

if ! $check_list; then
	echo
	printf '%-52s %-10s %s\n' mutation module "caught by"
	printf '%s\n' "${table[@]}"
fi
finish
