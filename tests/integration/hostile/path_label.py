# SPDX-License-Identifier: Apache-2.0
# The path label the exposition must carry for the file name NAME, worked out apart from the
# exporter: a backslash doubled, a byte that is not UTF-8 as the text \xNN, then the text
# format's escapes. Usage: path_label.py NAME
import sys
name, out, i = sys.argv[1].encode("utf-8", "surrogateescape"), "", 0
while i < len(name):
    if name[i] == 0x5c:
        out, i = out + "\\\\", i + 1
        continue
    for n in (1, 2, 3, 4):
        try:
            out, i = out + name[i:i + n].decode("utf-8"), i + n
            break
        except UnicodeDecodeError:
            pass
    else:
        out, i = out + "\\x%02x" % name[i], i + 1
print(out.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n"))
