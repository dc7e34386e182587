#!/usr/bin/env bash
# c_consumer.sh PREFIX LIBDIR SOURCE OUTDIR RANKS MPICC MPIEXEC
# Compiles SOURCE against the tally installed under PREFIX three ways and runs each
# under MPIEXEC (the launcher's settings come from the environment,
# cmake/TallyMPI.cmake): the MPI C compiler with explicit flags; the MPI C compiler
# with `pkg-config --cflags --libs tally`; plain `cc` with pkg-config alone, which
# must bring MPI's own flags (tally.pc requires the MPI's module). tally.pc sets no
# RUNPATH: the pkg-config builds find libtally through LD_LIBRARY_PATH.
set -euo pipefail
prefix=$1 libdir=$2 source=$3 out=$4 ranks=$5 mpicc=$6 mpiexec=$7
# The test's RMA window helper (helpers/rma_window.h in the source tree), not part of tally.
support=$(cd "$(dirname "$source")/../.." && pwd)
mkdir -p "$out"
"$mpicc" -std=c11 -Wall -Wextra -pedantic -Werror -I"$support" "$source" -o "$out/c_exclusion" \
  -I"$prefix/include" -L"$prefix/$libdir" -Wl,-rpath,"$prefix/$libdir" -ltally
"$mpiexec" -n "$ranks" "$out/c_exclusion"

export PKG_CONFIG_PATH="$prefix/$libdir/pkgconfig"
pc_flags=$(pkg-config --cflags --libs tally)
if grep -Eq 'R(UN)?PATH' <<<"$(readelf -d "$prefix/$libdir/libtally.so" 2>/dev/null)"; then
  echo "c_consumer: the installed libtally.so carries an RPATH/RUNPATH" >&2
  exit 1
fi
# shellcheck disable=SC2086  # pkg-config output is a list of flags
"$mpicc" -std=c11 -Wall -Wextra -pedantic -Werror -I"$support" "$source" -o "$out/c_exclusion_pc" $pc_flags
# shellcheck disable=SC2086
cc -std=c11 -Wall -Wextra -pedantic -Werror -I"$support" "$source" -o "$out/c_exclusion_cc" $pc_flags
for exe in c_exclusion_pc c_exclusion_cc; do
  LD_LIBRARY_PATH="$prefix/$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    "$mpiexec" -n "$ranks" "$out/$exe"
done
echo "c_consumer: explicit flags, mpicc + pkg-config and cc + pkg-config all ran at $ranks ranks"
