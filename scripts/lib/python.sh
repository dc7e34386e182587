# shellcheck shell=bash
# scripts/lib/python.sh — tally_python: prints the python3 to run tally's Python
# tools with: $TALLY_PYTHON if set, else the first python3 on PATH that has
# matplotlib (bench/report's plots need it; a pyenv or virtualenv python3 often
# lacks Debian's python3-matplotlib), else the first python3. Sourced, never run.
tally_python() {
  if [[ -n "${TALLY_PYTHON:-}" ]]; then
    printf '%s\n' "$TALLY_PYTHON"
    return
  fi
  local p first=''
  while IFS= read -r p; do
    [[ -n "$first" ]] || first=$p
    if "$p" -c 'import matplotlib' 2>/dev/null; then
      printf '%s\n' "$p"
      return
    fi
  done < <(type -ap python3)
  printf '%s\n' "${first:-python3}"
}
