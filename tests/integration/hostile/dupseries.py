# SPDX-License-Identifier: Apache-2.0
# Prints every series (name and label set) that occurs more than once in a text exposition,
# one per line, and exits 1 if there is any. Labels are compared as the text format defines
# them (escapes read back), so two spellings of one value count as one.
import re, sys

def parse_labels(s):
    out, i = [], 0
    while i < len(s):
        m = re.match(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)="', s[i:])
        if not m:
            break
        i += m.end()
        v = []
        while s[i] != '"':
            if s[i] == "\\":
                v.append({"\\": "\\", '"': '"', "n": "\n"}[s[i + 1]])
                i += 2
            else:
                v.append(s[i])
                i += 1
        out.append((m.group(1), "".join(v)))
        i += 1
        if i < len(s) and s[i] == ",":
            i += 1
    return tuple(sorted(out))

seen, dups = set(), []
for line in open(sys.argv[1], encoding="utf-8"):
    if line.startswith("#") or not line.strip():
        continue
    m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? ", line)
    key = (m.group(1), parse_labels(m.group(3) or ""))
    if key in seen:
        dups.append(line.rstrip("\n"))
    seen.add(key)
for d in dups:
    print(d)
sys.exit(1 if dups else 0)
