#!/usr/bin/env bash
# `command: sign` of action.yml: turns the action's inputs (INPUT_* variables) into one
# `mansign sign` invocation. The identity token comes from the runner
# (ACTIONS_ID_TOKEN_REQUEST_URL/TOKEN, audience input oidc-audience), never from an input.
#
# Outputs: files (written files, one per line), documents (number signed), signed (the same
# number; kept from the first version of the action), signer-identity (the certificate's
# subject). They are read from `mansign sign -v`'s log lines
#   signed <input> -> <output> (<n> document(s))
#   certificate for <subject> from issuer <issuer>, valid until <time>
#   signed <n> document(s) in <f> file(s) with <s> signature(s) -> ...
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=scripts/action-lib.sh
. "$here/action-lib.sh"

: "${MANSIGN:?MANSIGN (path of the mansign binary) is not set}"
read_lines "${INPUT_FILES:-}"
[ "${#LINES[@]}" -gt 0 ] || die 2 "input files is empty: name the manifests to sign"
[ -n "${INPUT_OUTPUT:-}" ] || die 2 "input output is required for command sign (a file, or a directory ending in /)"
[ "$INPUT_OUTPUT" != "-" ] || die 2 "input output: '-' (stdout) is not supported by the action; name a file or directory"
refuse_inputs sign \
  "certificate-identity=${INPUT_CERTIFICATE_IDENTITY:-}" \
  "certificate-identity-regexp=${INPUT_CERTIFICATE_IDENTITY_REGEXP:-}" \
  "certificate-oidc-issuer=${INPUT_CERTIFICATE_OIDC_ISSUER:-}" \
  "certificate-oidc-issuer-regexp=${INPUT_CERTIFICATE_OIDC_ISSUER_REGEXP:-}" \
  "policy=${INPUT_POLICY:-}" \
  "ignore-profile=${INPUT_IGNORE_PROFILE:-}"
check_bool remove-input "${INPUT_REMOVE_INPUT:-false}"

args=(sign)
for f in "${LINES[@]}"; do args+=(-f "$f"); done
args+=(-o "$INPUT_OUTPUT" --scope "${INPUT_SCOPE:-document}")
if [ "${INPUT_REMOVE_INPUT:-false}" = true ]; then args+=(--remove-input); fi
if [ -n "${INPUT_EXPIRES:-}" ]; then args+=(--expires "$INPUT_EXPIRES"); fi
if [ -n "${INPUT_OIDC_AUDIENCE:-}" ]; then args+=(--oidc-audience "$INPUT_OIDC_AUDIENCE"); fi
if [ -n "${INPUT_FULCIO_URL:-}" ]; then args+=(--fulcio-url "$INPUT_FULCIO_URL"); fi
if [ -n "${INPUT_REKOR_URL:-}" ]; then args+=(--rekor-url "$INPUT_REKOR_URL"); fi
if [ -n "${INPUT_TRUSTED_ROOT:-}" ]; then args+=(--trusted-root "$INPUT_TRUSTED_ROOT"); fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
"$MANSIGN" "${args[@]}" -v 2>"$log" || status=$?
cat "$log" >&2
if [ "$status" -ne 0 ]; then
  die "$status" "mansign sign failed (exit $status, see the log above); nothing was written"
fi

files=$(sed -n 's/^signed .* -> \(.*\) ([0-9]* document(s))$/\1/p' "$log")
documents=$(sed -n 's/^signed \([0-9]*\) document(s) in .*/\1/p' "$log" | tail -n1)
identity=$(sed -n 's/^certificate for \(.*\) from issuer \(.*\), valid until .*/\1/p' "$log" | tail -n1)
issuer=$(sed -n 's/^certificate for \(.*\) from issuer \(.*\), valid until .*/\2/p' "$log" | tail -n1)
indexes=$(sed -n 's/^Rekor log indexes: //p' "$log" | tail -n1)
set_output files "$files"
set_output documents "${documents:-0}"
set_output signed "${documents:-0}"
set_output signer-identity "$identity"

summary "### mansign sign" "" \
  "Signed **${documents:-0}** document(s) as $(md "$identity") (issuer $(md "$issuer")); Rekor log indexes: $(md "${indexes:-none}")." "" \
  "| written file |" "|---|"
while IFS= read -r f; do
  if [ -n "$f" ]; then summary "| $(md "$f") |"; fi
done <<<"$files"
