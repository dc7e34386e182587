#!/usr/bin/env bash
# down_and_check.sh EMU-CLUSTER-COMMAND...
# Tears the emulated cluster down, then fails if any of its namespaces, processes
# or its bridge are left.
set -euo pipefail
"$@" down
left=$(ip netns list | grep -c '^tally-tallyci-' || true)
if ((left > 0)); then
  echo "FAIL: namespaces left after teardown:" >&2
  ip netns list >&2
  exit 1
fi
if ip link show tlybr-tallyci >/dev/null 2>&1; then
  echo "FAIL: the bridge tlybr-tallyci is left after teardown" >&2
  exit 1
fi
echo "ok: no namespace, process or bridge of the test cluster left"
