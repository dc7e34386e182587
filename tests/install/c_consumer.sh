#!/usr/bin/env bash
# c_consumer.sh PREFIX LIBDIR SOURCE OUTDIR RANKS MPICC MPIEXEC
# Compiles SOURCE with the MPI C compiler against the tally installed under PREFIX
# (once with explicit flags, once through pkg-config when available) and runs it
# under MPIEXEC; the launcher's settings come from the environment (cmake/TallyMPI.cmake).
set -euo pipefail
prefix=$1 libdir=$2 source=$3 out=$4 ranks=$5 mpicc=$6 mpiexec=$7
mkdir -p "$out"
"$mpicc" -std=c11 -Wall -Wextra -pedantic -Werror "$source" -o "$out/c_exclusion" \
  -I"$prefix/include" -L"$prefix/$libdir" -Wl,-rpath,"$prefix/$libdir" -ltally
if command -v pkg-config >/dev/null; then
  # shellcheck disable=SC2046  # pkg-config output is a list of flags
  "$mpicc" -std=c11 -Wall -Wextra -pedantic -Werror "$source" -o "$out/c_exclusion_pc" \
    $(PKG_CONFIG_PATH="$prefix/$libdir/pkgconfig" pkg-config --cflags --libs tally)
  "$mpiexec" -n "$ranks" "$out/c_exclusion_pc"
fi
"$mpiexec" -n "$ranks" "$out/c_exclusion"
