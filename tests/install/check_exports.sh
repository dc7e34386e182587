#!/usr/bin/env bash
# check_exports.sh LIBTALLY
# Every dynamic symbol that LIBTALLY defines must belong to the documented API: a
# C function tally_* of tally/tally.h (static inline wrappers excepted), or a member of tally::mutex, tally::lock_request,
# tally::payload_view or tally::error, or tally::describe. Prints what it found.
set -euo pipefail
lib=${1:?usage: check_exports.sh LIBTALLY}
[[ -f "$lib" ]] || { echo "FAIL: $lib does not exist" >&2; exit 1; }
# Each carries a version node of runtime/exports.map (name@@TALLY_1.0); the name is
# checked without it.
mapfile -t versioned < <(nm -D --defined-only "$lib" | awk '$2 != "A" { print $3 }')
for s in "${versioned[@]}"; do
  [[ "$s" == *@@TALLY_* || "$s" == *@TALLY_* ]] || { echo "FAIL: $lib exports '$s' without a version node" >&2; exit 1; }
done
mapfile -t symbols < <(printf '%s\n' "${versioned[@]}" | sed 's/@.*//' | c++filt | sort -u)
((${#symbols[@]} > 0)) || { echo "FAIL: $lib exports nothing" >&2; exit 1; }
allowed='^(tally_[a-z_]+|tally::(mutex|payload_view|lock_request|error)::.*|tally::describe\(tally::errc\)|(typeinfo|typeinfo name|vtable) for tally::error)$'
bad=0
for s in "${symbols[@]}"; do
  if [[ ! "$s" =~ $allowed ]]; then
    echo "FAIL: $lib exports '$s', which is not part of the documented API" >&2
    bad=1
  fi
done
# The C API is all there. (Looked up in a table, not through `printf | grep -q`:
# under pipefail grep's early exit can fail the writer.)
declare -A exported=()
for s in "${symbols[@]}"; do exported[$s]=1; done
for fn in tally_get_version tally_options_init_sized tally_mutex_create tally_mutex_create_payload tally_mutex_lock \
  tally_mutex_trylock tally_mutex_timedlock tally_mutex_unlock tally_mutex_poll tally_mutex_payload \
  tally_mutex_get_stats_sized tally_mutex_rank tally_mutex_size tally_mutex_free tally_strerror \
  tally_last_error tally_mutex_ilock tally_request_test tally_request_wait tally_request_cancel \
  tally_request_get_mpi tally_request_free; do
  [[ -n "${exported[$fn]:-}" ]] || { echo "FAIL: $lib lacks $fn" >&2; bad=1; }
done
((bad == 0)) || exit 1
printf 'ok: %s exports %d symbols, all of the documented API:\n' "$lib" "${#symbols[@]}"
printf '  %s\n' "${symbols[@]}"
