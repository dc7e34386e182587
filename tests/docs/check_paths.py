#!/usr/bin/env python3
"""Every path that README.md and docs/*.md name must exist in the source tree.

usage: check_paths.py SOURCE_DIR

A path is a word that starts with one of the tree's top-level folders (src/,
include/, tests/, bench/, jobs/, scripts/, docs/, tools/, examples/, cmake/, .ci/)
and is made of path characters. Placeholders (<...>, CAPITALS after the folder),
globs (*) and a trailing `#anchor` are allowed: a glob must match something, a
placeholder's fixed part must exist. Prints every missing path with its file and
line; exits 1 if there is any.
"""
import glob
import os
import re
import sys

ROOTS = ("src/", "include/", "tests/", "bench/", "jobs/", "scripts/", "docs/", "tools/",
         "examples/", "cmake/", ".ci/")
WORD = re.compile(r"(?<![\w./-])((?:%s)[\w./*<>{},+-]*)" % "|".join(re.escape(r) for r in ROOTS))


def candidates(text):
    for m in WORD.finditer(text):
        p = m.group(1).rstrip(".,;:)")
        yield p


def exists(src, path):
    path = path.split("#", 1)[0]
    if "{" in path:  # a{b,c} lists: check each
        head, rest = path.split("{", 1)
        inner, tail = rest.split("}", 1)
        return all(exists(src, head + alt + tail) for alt in inner.split(","))
    # A placeholder: keep the part before it.
    cut = re.search(r"<|\b[A-Z][A-Z_]{2,}\b", path)
    if cut:
        path = path[:cut.start()].rsplit("/", 1)[0] + "/"
    full = os.path.join(src, path)
    if "*" in path:
        return bool(glob.glob(full))
    return os.path.exists(full)


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    src = argv[1]
    docs = [os.path.join(src, "README.md")] + sorted(glob.glob(os.path.join(src, "docs", "*.md")))
    missing, seen = [], 0
    for doc in docs:
        with open(doc, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                for p in candidates(line):
                    seen += 1
                    if not exists(src, p):
                        missing.append(f"{os.path.relpath(doc, src)}:{n}: {p}")
    for m in missing:
        print(f"missing: {m}", file=sys.stderr)
    if seen == 0:
        print("no paths found in the docs: the checker is broken", file=sys.stderr)
        return 1
    print(f"{seen} path mentions in {len(docs)} documents, {len(missing)} missing")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
