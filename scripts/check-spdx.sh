#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Every source file names its license in an SPDX line, the right one for its part:
#  - the kernel patches (kernel/patches/, each file a patch creates) and the kernel test programs
#    (kernel/tests/*.c): GPL-2.0 (GPL-2.0, -only or -or-later, as the kernel writes them, and
#    WITH Linux-syscall-note for uapi headers);
#  - everything else: Apache-2.0.
# A source file is a tracked *.c, *.h, *.sh, *.py, *.js, Makefile, debian/rules, or a file that
# starts with "#!"; its SPDX line is within its first three lines. The check runs first on a
# scratch tree with known mistakes, which it must find.
# One line per check; the last line is "N passed, N failed, N skipped".
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=tests/lib/tap.sh
. "$top/tests/lib/tap.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

gpl='GPL-2\.0(-only|-or-later)?( WITH Linux-syscall-note)?'

# The license expression of the SPDX line in the first three lines of stdin, or nothing.
spdx_of() {
	head -n 3 | sed -n 's/.*SPDX-License-Identifier: *\(.*\)$/\1/p' | sed -e 's# *\*/ *$##' -e 's/ *$//' | head -n 1
}

is_source() {
	case $1 in
	*.c | *.h | *.sh | *.py | *.js | Makefile | */Makefile | debian/rules) return 0 ;;
	esac
	[ "$(head -c 2 "$1" 2>/dev/null)" = '#!' ]
}

# scan DIR: prints "FILE: PROBLEM" for every source file of the git tree DIR whose SPDX line is
# missing or wrong for its part.
scan() {
	local f want got new
	(
		cd "$1" || exit 1
		git ls-files | while IFS= read -r f; do
			[ -f "$f" ] && [ ! -L "$f" ] || continue
			case $f in
			kernel/patches/*.patch)
				# Each file the patch creates: its first added lines.
				awk '/^diff --git /{name=$4; sub(/^b\//, "", name); fresh=0; n=0; next}
					/^new file mode/{fresh=1; next}
					fresh && /^\+/ && !/^\+\+\+ / && n < 3 {n++; print name "\t" substr($0, 2)}' "$f" >"$work/added"
				cut -f 1 "$work/added" | uniq | while IFS= read -r new; do
					case $new in
					*.c | *.h | *.sh | *.py | Makefile | */Makefile | Kconfig | */Kconfig) ;;
					*) continue ;; # data, such as a kselftest's settings
					esac
					got=$(awk -F'\t' -v n="$new" '$1 == n {print $2}' "$work/added" | spdx_of)
					[[ $got =~ ^$gpl$ ]] || echo "$f: $new: '${got:-no SPDX line}', want GPL-2.0"
				done
				continue
				;;
			kernel/tests/*.c) want=gpl ;;
			*) want=apache ;;
			esac
			is_source "$f" || continue
			got=$(spdx_of <"$f")
			if [ "$want" = gpl ]; then
				[[ $got =~ ^$gpl$ ]] || echo "$f: '${got:-no SPDX line}', want GPL-2.0"
			else
				[ "$got" = Apache-2.0 ] || echo "$f: '${got:-no SPDX line}', want Apache-2.0"
			fi
		done
	)
}

# --- the check finds the mistakes of a scratch tree --------------------------------------------
fx=$work/tree
mkdir -p "$fx/exporter" "$fx/kernel/tests" "$fx/kernel/patches" "$fx/scripts"
printf '/* SPDX-License-Identifier: Apache-2.0 */\nint a;\n' >"$fx/exporter/good.c"
printf '/* SPDX-License-Identifier: MIT */\nint b;\n' >"$fx/exporter/mit.c"
printf 'int c;\n' >"$fx/exporter/none.h"
printf '#!/bin/sh\n# SPDX-License-Identifier: Apache-2.0\ntrue\n' >"$fx/scripts/good.sh"
printf '#!/bin/sh\ntrue\n' >"$fx/scripts/none"
printf '// SPDX-License-Identifier: GPL-2.0\nint d;\n' >"$fx/kernel/tests/good.c"
printf '// SPDX-License-Identifier: Apache-2.0\nint e;\n' >"$fx/kernel/tests/apache.c"
printf 'not a source file\n' >"$fx/exporter/notes.txt"
cat >"$fx/kernel/patches/0001-x.patch" <<'EOF'
diff --git a/mm/good.c b/mm/good.c
new file mode 100644
--- /dev/null
+++ b/mm/good.c
@@ -0,0 +1,2 @@
+// SPDX-License-Identifier: GPL-2.0-or-later
+int f;
diff --git a/mm/bad.c b/mm/bad.c
new file mode 100644
--- /dev/null
+++ b/mm/bad.c
@@ -0,0 +1,1 @@
+int g;
diff --git a/mm/old.c b/mm/old.c
--- a/mm/old.c
+++ b/mm/old.c
@@ -1,1 +1,2 @@
 int h;
+int i;
EOF
git -C "$fx" init -q && git -C "$fx" add -A
scan "$fx" | sed 's/:.*//' | sort -u >"$work/found"
printf '%s\n' exporter/mit.c exporter/none.h kernel/patches/0001-x.patch kernel/tests/apache.c scripts/none |
	sort >"$work/want"
diff "$work/want" "$work/found" >"$work/diff"
check "a scratch tree: the wrong and missing SPDX lines are found, and only they" test ! -s "$work/diff"
sed 's/^/    /' "$work/diff"
check "a scratch tree: a patch's new file without an SPDX line is found (mm/bad.c)" \
	grep -q '0001-x.patch: mm/bad.c:' <(scan "$fx")

# --- the repository ---------------------------------------------------------------------------
scan "$top" >"$work/bad"
n=$(wc -l <"$work/bad")
eq "every source file has the SPDX line of its part" "$n files wrong" "0 files wrong"
head -n 40 "$work/bad" | sed 's/^/    /'
finish
