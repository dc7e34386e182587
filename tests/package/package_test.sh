#!/usr/bin/env bash
# package_test.sh BUILD_DIR SOURCE_DIR RANKS
# The Debian packages as a site installs them: cpack builds them from BUILD_DIR,
# lintian must report no error, apt-get installs them into the system (as root or
# with sudo), and
# C, C++ and Fortran consumers are built against /usr with no prefix settings
# (pkg-config and find_package alone) and run at RANKS ranks; the tools answer.
# The packages are removed again on every exit. Refuses to run where libtally1,
# libtally-dev or tally-tools is already installed: it would replace them.
set -euo pipefail
build=$(cd "${1:?usage: package_test.sh BUILD_DIR SOURCE_DIR RANKS}" && pwd)
src=$(cd "${2:?usage: package_test.sh BUILD_DIR SOURCE_DIR RANKS}" && pwd)
ranks=${3:?usage: package_test.sh BUILD_DIR SOURCE_DIR RANKS}
packages=(libtally1 libtally-dev tally-tools)
fail() { echo "FAIL: $*" >&2; exit 1; }

sudo=()  # as scripts/setup: root, or sudo for the commands that change the system
if ((EUID != 0)); then
  command -v sudo >/dev/null || fail "installing packages needs root or sudo (apt-get install)"
  sudo=(sudo)
fi
# (No `cmd | grep -q` under pipefail: grep's early exit can fail the writer.)
installed() { [[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" == *"install ok installed"* ]]; }
for p in "${packages[@]}"; do
  if installed "$p"; then fail "$p is installed already; this test installs and removes its own build of it"; fi
done

tmp=$(mktemp -d)
cleanup() {
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get purge -y -q "${packages[@]}" >"$tmp/purge.log" 2>&1 ||
    { cat "$tmp/purge.log" >&2; echo "FAIL: apt-get purge ${packages[*]}" >&2; }
  rm -rf "$tmp"
}
trap cleanup EXIT

echo "== cpack"
cpack -G DEB --config "$build/CPackConfig.cmake" -B "$tmp/debs" >"$tmp/cpack.log" 2>&1 ||
  { cat "$tmp/cpack.log" >&2; fail "cpack -G DEB"; }
debs=()
for p in "${packages[@]}"; do
  f=$(find "$tmp/debs" -maxdepth 1 -name "${p}_*.deb" -print -quit)
  [[ -n "$f" ]] || fail "cpack made no $p package"
  debs+=("$f")
done

echo "== lintian"
lintian --tag-display-limit 0 "${debs[@]}" >"$tmp/lintian.log" 2>&1 || true
grep -v "running with root privileges" "$tmp/lintian.log" || true
if grep -q "^E: " "$tmp/lintian.log"; then fail "lintian reports errors"; fi

echo "== apt-get install"
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${debs[@]}" >"$tmp/install.log" 2>&1 ||
  { cat "$tmp/install.log" >&2; fail "apt-get install"; }
for p in "${packages[@]}"; do
  installed "$p" || fail "$p is not installed"
done
[[ -f /usr/include/tally/tally.h && -e /usr/lib/libtally.so.1 ]] || fail "the files are not under /usr"
[[ "$(ldconfig -p)" == *"libtally.so.1 "* ]] || fail "the loader's cache lacks libtally.so.1 (ldconfig trigger)"

# Nothing below names a prefix: the compilers, pkg-config and CMake find tally in /usr.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
run() { mpiexec -n "$ranks" "$@"; }

echo "== C: mpicc with pkg-config"
# shellcheck disable=SC2046  # pkg-config's flags are words
mpicc -std=c11 -O2 -I"$src" "$src/tests/capi/c_exclusion.c" -o "$tmp/c_exclusion" $(pkg-config --cflags --libs tally)
run "$tmp/c_exclusion" | tee "$tmp/c.out"
grep -q "c_exclusion: ok" "$tmp/c.out" || fail "the C consumer"

echo "== C++ and Fortran: find_package(tally)"
for consumer in consumer consumer_fortran; do
  cmake -S "$src/tests/install/$consumer" -B "$tmp/$consumer" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    "-DEXAMPLE=$src/examples/fortran_counter.f90" >"$tmp/$consumer.log" 2>&1 ||
    { cat "$tmp/$consumer.log" >&2; fail "configuring $consumer against the installed package"; }
  grep -q "^tally_DIR:PATH=/usr/lib/cmake/tally$" "$tmp/$consumer/CMakeCache.txt" ||
    fail "$consumer found tally elsewhere than /usr/lib/cmake/tally"
  cmake --build "$tmp/$consumer" >>"$tmp/$consumer.log" 2>&1 || { cat "$tmp/$consumer.log" >&2; fail "building $consumer"; }
done
run "$tmp/consumer/consumer" | tee "$tmp/cxx.out"
grep -q "consumer: ok" "$tmp/cxx.out" || fail "the C++ consumer"
run "$tmp/consumer_fortran/fortran_counter" | tee "$tmp/f.out"
grep -q "fortran_counter: ok" "$tmp/f.out" || fail "the Fortran consumer"

echo "== tools"
tally-sim --help >/dev/null || fail "tally-sim --help"
tally-trace --help >/dev/null || fail "tally-trace --help"
tally_bench --help >/dev/null 2>&1 || fail "tally_bench --help"
[[ -x /usr/share/tally/bench/run-local ]] || fail "bench/run-local is not installed"
echo "package_test: ok: ${packages[*]} installed, consumers built and run at $ranks ranks"
