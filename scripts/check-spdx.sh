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
# scan DIR: one line per tracked source file of the git tree DIR whose SPDX line is wrong or missing,
# "FILE: 'GOT', want LICENSE" ("FILE: NEW: ..." for a file a kernel patch adds). The SPDX line is the
# first of a file's first three lines that has "SPDX-License-Identifier:"; a source file is a C, shell,
# Python or JavaScript file, a Makefile, debian/rules or any file that starts with "#!". One process for
# the whole tree: a few processes per file cost 20 s of a loaded machine.
scan() {
	git -C "$1" ls-files -z | python3 -c '
import os, re, sys
top, gpl = sys.argv[1], re.compile("(" + sys.argv[2] + ")$")
def spdx_of(lines):
    for line in lines[:3]:
        m = re.match(r".*SPDX-License-Identifier: *(.*)$", line)
        if m:
            return re.sub(r" *$", "", re.sub(r" *\*/ *$", "", m.group(1)))
    return ""
def wrong(got, want):
    return not gpl.match(got) if want == "gpl" else got != "Apache-2.0"
for f in sys.stdin.buffer.read().decode("utf-8", "surrogateescape").split("\0"):
    path = os.path.join(top, f)
    if not f or os.path.islink(path) or not os.path.isfile(path):
        continue
    with open(path, "rb") as fh:
        data = fh.read()
    text = data.decode("utf-8", "surrogateescape")
    if re.fullmatch(r"kernel/patches/.*\.patch", f):
        added, name, fresh = {}, None, False
        for line in text.split("\n"):
            if line.startswith("diff --git "):
                parts = line.split(" ")
                name = re.sub(r"^b/", "", parts[3]) if len(parts) > 3 else ""
                fresh = False
            elif line.startswith("new file mode"):
                fresh = True
            elif fresh and line.startswith("+") and not line.startswith("+++ "):
                lines = added.setdefault(name, [])
                if len(lines) < 3:
                    lines.append(line[1:])
        for new, lines in added.items():
            if not re.fullmatch(r".*\.(c|h|sh|py)|(.*/)?(Makefile|Kconfig)", new):
                continue  # data, such as the settings file of a kselftest
            got = spdx_of(lines)
            if wrong(got, "gpl"):
                print("%s: %s: %r, want GPL-2.0" % (f, new, got or "no SPDX line"))
        continue
    want = "gpl" if re.fullmatch(r"kernel/tests/[^/]*\.c", f) else "apache"
    if not (re.fullmatch(r".*\.(c|h|sh|py|js)|(.*/)?Makefile|debian/rules", f) or data.startswith(b"#!")):
        continue
    got = spdx_of(text.split("\n", 3))
    if wrong(got, want):
        print("%s: %r, want %s" % (f, got or "no SPDX line", "GPL-2.0" if want == "gpl" else "Apache-2.0"))
' "$1" "$gpl"
}

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
scan "$fx" >"$work/scratch"
sed 's/:.*//' "$work/scratch" | sort -u >"$work/found"
printf '%s\n' exporter/mit.c exporter/none.h kernel/patches/0001-x.patch kernel/tests/apache.c scripts/none |
	sort >"$work/want"
diff "$work/want" "$work/found" >"$work/diff"
check "a scratch tree: the wrong and missing SPDX lines are found, and only they" test ! -s "$work/diff"
sed 's/^/    /' "$work/diff"
check "a scratch tree: a patch's new file without an SPDX line is found (mm/bad.c)" \
	grep -q '0001-x.patch: mm/bad.c:' "$work/scratch"

# --- the repository ---------------------------------------------------------------------------
scan "$top" >"$work/bad"
n=$(wc -l <"$work/bad")
eq "every source file has the SPDX line of its part" "$n files wrong" "0 files wrong"
head -n 40 "$work/bad" | sed 's/^/    /'
finish
