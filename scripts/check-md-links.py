#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Relative links of Markdown files that lead nowhere.

Reads each FILE given (Markdown, paths relative to ROOT) and prints one line per relative link
whose target file does not exist, or whose #anchor is not a heading (or an explicit
<a name/id>) of its target: "FILE:LINE: TARGET: REASON". Exits 1 if it printed any. Its last
line, on stderr, counts the relative links it checked: "checked N relative links in M files".
Links to other schemes (http:, mailto:, ...) are not checked; links inside code spans and
fenced code blocks are not links. Anchors are made from headings as GitHub makes them: lower
case, punctuation dropped, spaces to hyphens, a repeated heading numbered -1, -2, ...

Usage: check-md-links.py ROOT FILE...
"""
import os
import re
import sys
import urllib.parse

FENCE = re.compile(r"^ {0,3}(```|~~~)")
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
# [text](target "title"), ![alt](target): the target up to a space or the closing parenthesis
INLINE = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
REFDEF = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
CODESPAN = re.compile(r"(`+).*?\1")
EXPLICIT = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def slug(text):
    """The anchor GitHub gives a heading's text."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link: its text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def lines_outside_fences(path):
    """(line number, line) of a Markdown file, code fences left out."""
    fenced = None
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            m = FENCE.match(line)
            if m:
                if fenced is None:
                    fenced = m.group(1)
                elif m.group(1) == fenced:
                    fenced = None
                continue
            if fenced is None:
                yield n, line.rstrip("\n")


_anchors = {}


def anchors(path):
    """The anchors a Markdown file defines (its headings' and explicit ones)."""
    if path not in _anchors:
        found, seen = set(), {}
        for _, line in lines_outside_fences(path):
            found.update(EXPLICIT.findall(line))
            m = HEADING.match(line)
            if not m:
                continue
            s = slug(m.group(2))
            k = seen.get(s, 0)
            seen[s] = k + 1
            found.add(s if k == 0 else "%s-%d" % (s, k))
        _anchors[path] = found
    return _anchors[path]


def links(path):
    """(line number, target) of every link of a Markdown file."""
    for n, line in lines_outside_fences(path):
        m = REFDEF.match(line)
        if m:
            yield n, m.group(1)
            continue
        for target in INLINE.findall(CODESPAN.sub("", line)):
            yield n, target


checked = 0


def check(root, name):
    """The problems of one file's links, as printable lines."""
    global checked
    path = os.path.join(root, name)
    problems = []
    for n, target in links(path):
        if not target or SCHEME.match(target):
            continue
        checked += 1
        file_part, _, anchor = target.partition("#")
        file_part = urllib.parse.unquote(file_part)
        if file_part:
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part))
            if not os.path.realpath(dest).startswith(os.path.realpath(root) + os.sep) and \
                    os.path.realpath(dest) != os.path.realpath(root):
                problems.append("%s:%d: %s: points out of the repository" % (name, n, target))
                continue
            if not os.path.exists(dest):
                problems.append("%s:%d: %s: no such file" % (name, n, target))
                continue
        else:
            dest = path
        if anchor and dest.endswith(".md") and os.path.isfile(dest):
            if urllib.parse.unquote(anchor) not in anchors(dest):
                problems.append("%s:%d: %s: no heading with that anchor in %s" %
                                (name, n, target, os.path.relpath(dest, root)))
    return problems


def main(argv):
    if len(argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    global checked
    checked = 0
    root = argv[1]
    problems = [p for name in argv[2:] for p in check(root, name)]
    for p in problems:
        print(p)
    sys.stderr.write("checked %d relative links in %d files\n" % (checked, len(argv) - 2))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
