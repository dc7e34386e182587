#!/usr/bin/env python3
"""docs/design.md's map names every file of the source folders.

usage: check_map.py SOURCE_DIR [--drop NAME]

The map is the first fenced block under "## The map" in docs/design.md. A line that
starts in column 0 with a folder (`src/runtime/`) opens that folder's section; the
names in it (`engine.{hpp,cpp}`, `models/two_level.cpp`, `lib/python.sh`; braces
expand) are paths under the folder. Every file under include/, src/, tools/, bench/,
helpers/, scripts/ and jobs/ must be named in the section of a folder that holds it. Prints
each file that is not, and exits 1 if any (or if no file was checked, so that the
check cannot pass vacuously). --drop NAME removes every mention of NAME from the
map first: the test that shows a missing file is caught.
"""
import os
import re
import sys

ROOTS = ("include", "src", "tools", "bench", "helpers", "scripts", "jobs")
FOLDER = re.compile(r"^([\w.+-]+(?:/[\w.+-]+)*/)(?:\s|$)")
PART = r"(?:[\w./+-]|\{[^{}\s]*\})*"
BRACED = re.compile(PART + r"\{[^{}\s]*\}" + PART)
SPLIT = re.compile(r"[\s,;:()`]+")


def expand(word):
    m = re.search(r"\{([^{}]*)\}", word)
    if not m:
        return [word]
    out = []
    for alt in m.group(1).split(","):
        out += expand(word[:m.start()] + alt + word[m.end():])
    return out


def the_map(text):
    at = text.index("## The map")
    start = text.index("```\n", at) + 4
    return text[start:text.index("```", start)]


def sections(block):
    named, folder = {}, None
    for line in block.splitlines():
        m = FOLDER.match(line)
        if m:
            folder = m.group(1)
            line = line[m.end():]
        elif line[:1] not in (" ", "") or folder is None:
            continue
        words = []
        for b in BRACED.findall(line):
            words += expand(b.rstrip("."))
            line = line.replace(b, " ")
        words += SPLIT.split(line)
        named.setdefault(folder, set()).update(w.rstrip(".") for w in words if w)
    return named


def files(src):
    for root in ROOTS:
        for d, dirs, names in os.walk(os.path.join(src, root)):
            dirs[:] = [x for x in dirs if not x.startswith(".") and x != "__pycache__"]
            for n in names:
                if not n.startswith("."):
                    yield os.path.relpath(os.path.join(d, n), src).replace(os.sep, "/")


def main(argv):
    if len(argv) not in (2, 4) or (len(argv) == 4 and argv[2] != "--drop"):
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    src = argv[1]
    with open(os.path.join(src, "docs", "design.md"), encoding="utf-8") as f:
        block = the_map(f.read())
    if len(argv) == 4:
        block = re.sub(r"(?<![\w.])" + re.escape(argv[3]) + r"(?![\w])", "", block)
    named = sections(block)
    missing, checked = [], 0
    for path in sorted(files(src)):
        checked += 1
        if not any(path.startswith(f) and path[len(f):] in names for f, names in named.items()):
            missing.append(path)
    for path in missing:
        print(f"docs/design.md, \"The map\": {path} is not named")
    if checked == 0:
        print("check_map: no files found under " + ", ".join(ROOTS))
        return 1
    print(f"check_map: {checked - len(missing)} of {checked} files named in the map")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
