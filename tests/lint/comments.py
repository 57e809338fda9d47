#!/usr/bin/env python3
"""comments.py ROOT: fails (exit 1, one line per offence) when a comment in a C or CUDA
source under src/ or include/ reads like a lab notebook: a date (2026-11-30, 2026-11), a
"was:" (a history of what the code used to do) or an issue number ("issue 7", "issue #2").
A comment says why the code is as it is now; measurements go to bench/RESULTS.md with their
date and machine, history to git. Only comments are read: string literals (help texts,
log lines) and code are skipped. Before checking ROOT the script checks itself on
snippets that it must pass and must report."""

import os
import re
import sys

import lint_main

SOURCE_EXT = (".c", ".h", ".cu", ".cuh")
BAD = [
    ("a date", re.compile(r"\b20\d\d-(0[1-9]|1[0-2])\b")),
    ('"was:"', re.compile(r"\bwas:", re.I)),
    ("an issue number", re.compile(r"\bissues? #?\d+", re.I)),
]


def comments(text):
    """(line, text) of every comment, // and /* */, skipping string and char literals."""
    out, i, n, line = [], 0, len(text), 1
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append((line, text[i:j]))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            for k, part in enumerate(text[i:j].split("\n")):
                out.append((line + k, part))
            line += text.count("\n", i, j)
            i = j
        else:
            i += 1
    return out


def offences(text):
    return [(ln, what, part.strip()) for ln, part in comments(text)
            for what, rx in BAD if rx.search(part)]


def check(root):
    bad = []
    for top in ("src", "include"):
        for d, dirs, files in os.walk(os.path.join(root, top)):
            dirs.sort()
            for f in sorted(files):
                if f.endswith(SOURCE_EXT):
                    path = os.path.join(d, f)
                    with open(path, encoding="utf-8", errors="replace") as fh:
                        for ln, what, part in offences(fh.read()):
                            bad.append(f"{os.path.relpath(path, root)}:{ln}: {what} in a "
                                       f"comment: {part[:100]}")
    return bad


def self_test():
    clean = ('/* why: the head is padded to a multiple of 8 rows */\n'
             'const char *s = "built 2026-11-30, was: x, issue 7"; // a string, not a comment\n'
             "int a = 2026-11; /* arithmetic is code */\n")
    planted = ["/* 17 us with a strided loop: H200, 2026-11-30 */\n",
               "int x; // was: one warp per row\n",
               "/* a contract\n * (model doc section 6, issue 7 item 3). */\n",
               '/* "quoted" */ char c = \'"\'; /* tried 2026-12 */\n']
    ok = offences(clean) == [] and all(len(offences(p)) == 1 for p in planted)
    if not ok:
        print("comments.py self-test failed:", offences(clean), [offences(p) for p in planted])
    return ok


if __name__ == "__main__":
    sys.exit(lint_main.run("comments", check, self_test, "dated measurement(s), history or issue number(s)"))
