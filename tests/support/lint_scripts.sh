#!/usr/bin/env bash
# Static checks of every shell script of the project: bash -n and shellcheck on the
# scripts under jobs/, scripts/, bench/, tools/, tests/ and .ci/. Usage: lint_scripts.sh SOURCE_DIR
set -euo pipefail

src=$(cd -- "${1:?usage: lint_scripts.sh SOURCE_DIR}" && pwd -P)
command -v shellcheck >/dev/null ||
  { echo "FAIL: shellcheck is not installed (Debian package shellcheck; scripts/setup installs it)" >&2; exit 1; }

# A shell script: *.sh or *.sbatch, or a file whose first line runs bash or sh.
scripts=()
while IFS= read -r -d '' f; do
  case "$f" in
    *.sh | *.sbatch) scripts+=("$f") ;;
    *)
      first=$(head -n 1 -- "$f")
      [[ "$first" =~ ^#!.*[/\ ](ba)?sh([[:space:]]|$) ]] && scripts+=("$f")
      ;;
  esac
done < <(find "$src/jobs" "$src/scripts" "$src/bench" "$src/tools" "$src/tests" "$src/.ci" -type f \
  ! -name '*.json' ! -name '*.png' -print0 | sort -z)
((${#scripts[@]} > 0)) || { echo "FAIL: no scripts found under $src/jobs" >&2; exit 1; }

rc=0
for f in "${scripts[@]}"; do
  bash -n -- "$f" || { echo "FAIL: bash -n $f" >&2; rc=1; }
done
# -x follows 'source' (paths given by source-path/source directives in the scripts).
shellcheck -x -- "${scripts[@]}" || { echo "FAIL: shellcheck" >&2; rc=1; }
((rc == 0)) && printf 'ok: bash -n and shellcheck on %d scripts:\n' "${#scripts[@]}" &&
  printf '  %s\n' "${scripts[@]#"$src"/}"
exit "$rc"
