# SPDX-License-Identifier: Apache-2.0
# Hostile renamer (runs as an unprivileged user): in DIR, moves r and p to the name f and back,
# forever, so that the name f is a regular file one moment and a FIFO the next.
# Usage: flip_names.py DIR
import os, sys
os.chdir(sys.argv[1])
while True:
    for n in ("r", "p"):
        os.rename(n, "f")
        os.rename("f", n)
