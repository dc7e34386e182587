#!/usr/bin/env bash
# abi.sh check LIBTALLY      compare LIBTALLY's ABI with the baseline for its SONAME
# abi.sh baseline LIBTALLY   write that baseline (tests/abi/<SONAME>.abi)
#
# The baseline is libabigail's abidw dump of the library (DWARF: the build needs
# -g, as RelWithDebInfo and Debug have). check fails on any change abidiff reports
# except added functions and what compatible.supp accepts, and when no baseline
# exists for the library's SONAME. An incompatible change therefore lands only
# with a new major version (TALLY_VERSION_MAJOR in tally/version.h, hence a new
# SONAME) and that SONAME's baseline, in the same commit.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mode=${1:?usage: abi.sh check|baseline LIBTALLY}
lib=${2:?usage: abi.sh check|baseline LIBTALLY}
for tool in abidw abidiff objdump; do
  command -v "$tool" >/dev/null || { echo "FAIL: $tool not found (Debian: abigail-tools, binutils)" >&2; exit 1; }
done
lib=$(readlink -f "$lib")
soname=$(objdump -p "$lib" | awk '$1 == "SONAME" { print $2 }')
[[ -n "$soname" ]] || { echo "FAIL: $lib has no SONAME" >&2; exit 1; }
baseline=$here/$soname.abi
dump() {
  abidw --no-corpus-path --no-comp-dir-path --no-show-locs --drop-undefined-syms --type-id-style hash \
    --headers-dir "$here/../../include/tally" --drop-private-types --suppressions "$here/dump.supp" "$lib"
}
case $mode in
  baseline)
    dump >"$baseline"
    echo "wrote $baseline ($(grep -c '<elf-symbol' "$baseline") symbols)"
    ;;
  check)
    if [[ ! -f "$baseline" ]]; then
      echo "FAIL: no ABI baseline for $soname ($baseline). A new SONAME commits its baseline:" >&2
      echo "  tests/abi/abi.sh baseline $lib" >&2
      exit 1
    fi
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    dump >"$tmp/current.abi"
    rc=0
    abidiff --no-added-syms --suppressions "$here/compatible.supp" "$baseline" "$tmp/current.abi" >"$tmp/report" || rc=$?
    if ((rc != 0)); then
      cat "$tmp/report" >&2
      echo "FAIL: $lib's ABI differs from $baseline (abidiff exit $rc$( ((rc & 8)) && echo ': incompatible')). An" >&2
      echo "incompatible change needs a new major version (tally/version.h, hence a new SONAME) and" >&2
      echo "its baseline in the same commit; a compatible one the accepted kinds of compatible.supp." >&2
      exit 1
    fi
    echo "ok: $soname matches its baseline ($(grep -c '<elf-symbol' "$baseline") symbols; added functions allowed)"
    ;;
  *)
    echo "usage: abi.sh check|baseline LIBTALLY" >&2
    exit 2
    ;;
esac
