#!/usr/bin/env bash
# The `sign` step of action.yml: turns the action's inputs (INPUT_* variables) into one
# `mansign sign` invocation. The identity token comes from the runner
# (ACTIONS_ID_TOKEN_REQUEST_URL/TOKEN), never from an input.
set -euo pipefail

: "${MANSIGN:?MANSIGN (path of the mansign binary) is not set}"
: "${INPUT_FILES:?input 'files' is required}"
: "${INPUT_OUTPUT:?input 'output' is required}"

args=(sign)
while IFS= read -r line; do
  line="${line#"${line%%[![:space:]]*}"}"   # trim leading space
  line="${line%"${line##*[![:space:]]}"}"   # trim trailing space
  [ -n "$line" ] && args+=(-f "$line")
done <<< "$INPUT_FILES"
args+=(-o "$INPUT_OUTPUT" --scope "${INPUT_SCOPE:-document}")
case "${INPUT_REMOVE_INPUT:-false}" in
  true) args+=(--remove-input) ;;
  false) ;;
  *) echo "::error::input remove-input must be true or false, not '$INPUT_REMOVE_INPUT'" >&2; exit 2 ;;
esac
[ -n "${INPUT_EXPIRES:-}" ] && args+=(--expires "$INPUT_EXPIRES")
[ -n "${INPUT_FULCIO_URL:-}" ] && args+=(--fulcio-url "$INPUT_FULCIO_URL")
[ -n "${INPUT_REKOR_URL:-}" ] && args+=(--rekor-url "$INPUT_REKOR_URL")
[ -n "${INPUT_TRUSTED_ROOT:-}" ] && args+=(--trusted-root "$INPUT_TRUSTED_ROOT")

log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
"$MANSIGN" "${args[@]}" -v 2>"$log" || status=$?
cat "$log" >&2
if [ "$status" -ne 0 ]; then
  echo "::error::mansign sign failed (exit $status, see the log above)" >&2
  exit "$status"
fi
signed=$(sed -n 's/^signed \([0-9]*\) document(s).*/\1/p' "$log" | tail -1)
echo "signed=${signed:-0}" >> "${GITHUB_OUTPUT:-/dev/null}"
