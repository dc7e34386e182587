#!/usr/bin/env bash
# check_format.sh SOURCE_DIR [--catches]: every tracked C and C++ file of the tree is
# formatted as .clang-format says (clang-format 14, Debian's clang-format-14). With
# --catches, proves instead that the check fails on a badly formatted file.
set -euo pipefail
src=$(cd -- "${1:?usage: check_format.sh SOURCE_DIR [--catches]}" && pwd -P)
fmt=$(command -v clang-format-14) ||
  { echo "FAIL: clang-format is not installed (Debian package clang-format-14; scripts/setup installs it)" >&2; exit 1; }

if [[ "${2:-}" == --catches ]]; then
  # A badly formatted source read as if it were under src/: the check must refuse it.
  if printf 'int  f( int x ){return x;}\n' |
    "$fmt" --dry-run --Werror --assume-filename="$src/src/core/probe.cpp" 2>/dev/null; then
    echo "FAIL: a badly formatted file passed the format check" >&2
    exit 1
  fi
  echo "ok: the format check refuses a badly formatted file"
  exit 0
fi

# The tracked files where there is a git checkout, else every such file of the tree.
if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
  mapfile -t files < <(git -C "$src" ls-files '*.c' '*.h' '*.cpp' '*.hpp')
else
  mapfile -t files < <(cd "$src" && find . -path ./build\* -prune -o -type f \
    \( -name '*.c' -o -name '*.h' -o -name '*.cpp' -o -name '*.hpp' \) -print | sed 's|^\./||' | sort)
fi
((${#files[@]} > 0)) || { echo "FAIL: no C or C++ files found under $src" >&2; exit 1; }
(cd "$src" && "$fmt" --dry-run --Werror -- "${files[@]}")
echo "ok: ${#files[@]} files formatted as .clang-format says ($("$fmt" --version))"
