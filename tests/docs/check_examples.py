#!/usr/bin/env python3
"""README's code blocks that say where they come from are what the tests compile.

usage: check_examples.py SOURCE_DIR

A fenced code block in README.md right after a line `<!-- example: PATH -->` must
appear in PATH (built and run by the tests): its non-empty lines, stripped of
indentation, in order, as consecutive non-empty lines of PATH. Prints each block
that does not, with its line; exits 1 if any. Exits 1 too if no block is marked,
so that the check cannot pass vacuously.
"""
import os
import re
import sys

MARK = re.compile(r"^<!-- example: (\S+) -->\s*$")


def lines_of(text):
    return [ln.strip() for ln in text.splitlines() if ln.strip()]


def main(src):
    with open(os.path.join(src, "README.md"), encoding="utf-8") as f:
        readme = f.read().splitlines()
    failures, checked = [], 0
    i = 0
    while i < len(readme):
        m = MARK.match(readme[i])
        if not m:
            i += 1
            continue
        start = i + 1
        if start >= len(readme) or not readme[start].startswith("```"):
            failures.append(f"README.md:{i + 1}: the example mark is not followed by a code block")
            i += 1
            continue
        end = start + 1
        while end < len(readme) and not readme[end].startswith("```"):
            end += 1
        block = lines_of("\n".join(readme[start + 1:end]))
        path = os.path.join(src, m.group(1))
        try:
            with open(path, encoding="utf-8") as f:
                source = lines_of(f.read())
        except OSError as e:
            failures.append(f"README.md:{i + 1}: {m.group(1)}: {e.strerror}")
            i = end + 1
            continue
        n = len(block)
        if not any(source[k:k + n] == block for k in range(len(source) - n + 1)):
            failures.append(f"README.md:{start + 1}: the block differs from {m.group(1)}")
        checked += 1
        i = end + 1
    if checked == 0:
        failures.append("README.md: no code block is marked <!-- example: PATH -->")
    for f in failures:
        print(f, file=sys.stderr)
    if not failures:
        print(f"check_examples: {checked} README block(s) match their compiled sources")
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
