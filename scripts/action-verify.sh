#!/usr/bin/env bash
# `command: verify` of action.yml: `mansign verify --output json` over the action's inputs
# (INPUT_* variables), then, from that JSON (stable, docs/cli.md):
#   - one log line and, for each failed document, one ::error file=...:: annotation;
#   - a job summary ($GITHUB_STEP_SUMMARY): a Markdown table of documents, verdicts, signers
#     and reasons (manifest text is escaped: it is untrusted input);
#   - outputs files (files read, one per line), documents (number verified),
#     signer-identity (the certificate subjects that verified, one per line);
#   - exit 1 when any document failed, 2 when mansign could not verify at all.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=scripts/action-lib.sh
. "$here/action-lib.sh"

MAX_SUMMARY_ROWS=${MAX_SUMMARY_ROWS:-500}

: "${MANSIGN:?MANSIGN (path of the mansign binary) is not set}"
command -v jq >/dev/null 2>&1 || die 2 "command verify needs jq on the runner (GitHub-hosted runners have it)"
read_lines "${INPUT_FILES:-}"
[ "${#LINES[@]}" -gt 0 ] || die 2 "input files is empty: name the manifests to verify"
remove_input=${INPUT_REMOVE_INPUT:-false}
check_bool remove-input "$remove_input"
[ "$remove_input" = false ] || die 2 "input remove-input does not apply to command 'verify'"
refuse_inputs verify "output=${INPUT_OUTPUT:-}" "expires=${INPUT_EXPIRES:-}"

args=(verify --output json)
for f in "${LINES[@]}"; do args+=(-f "$f"); done
if [ -n "${INPUT_POLICY:-}" ]; then args+=(--policy "$INPUT_POLICY"); fi
if [ -n "${INPUT_CERTIFICATE_IDENTITY:-}" ]; then args+=(--certificate-identity "$INPUT_CERTIFICATE_IDENTITY"); fi
if [ -n "${INPUT_CERTIFICATE_IDENTITY_REGEXP:-}" ]; then args+=(--certificate-identity-regexp "$INPUT_CERTIFICATE_IDENTITY_REGEXP"); fi
if [ -n "${INPUT_CERTIFICATE_OIDC_ISSUER:-}" ]; then args+=(--certificate-oidc-issuer "$INPUT_CERTIFICATE_OIDC_ISSUER"); fi
if [ -n "${INPUT_CERTIFICATE_OIDC_ISSUER_REGEXP:-}" ]; then args+=(--certificate-oidc-issuer-regexp "$INPUT_CERTIFICATE_OIDC_ISSUER_REGEXP"); fi
if [ -n "${INPUT_IGNORE_PROFILE:-}" ]; then args+=(--ignore-profile "$INPUT_IGNORE_PROFILE"); fi
if [ -n "${INPUT_TRUSTED_ROOT:-}" ]; then args+=(--trusted-root "$INPUT_TRUSTED_ROOT"); fi
if [ -z "${INPUT_POLICY:-}" ] &&
  [ -z "${INPUT_CERTIFICATE_OIDC_ISSUER:-}${INPUT_CERTIFICATE_OIDC_ISSUER_REGEXP:-}" ]; then
  die 2 "command verify needs input policy, or certificate-oidc-issuer(-regexp) with certificate-identity(-regexp)"
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0
"$MANSIGN" "${args[@]}" >"$work/verdict.json" 2>"$work/stderr" || status=$?
cat "$work/stderr" >&2
if [ "$status" -ne 0 ] && [ "$status" -ne 1 ]; then
  die "$status" "mansign verify could not verify (exit $status): $(head -n1 "$work/stderr")"
fi
jq -c -L "$here" 'include "action-verify"; rows' "$work/verdict.json" >"$work/rows" ||
  die 2 "mansign verify printed no verdict JSON (exit $status)"

total=$(grep -c '^' "$work/rows" || true)
verified=$(jq -s '[.[] | select(.verified)] | length' "$work/rows")
failed=$((total - verified))

# One line per document, fields separated by US (\x1f, not whitespace: empty fields stay).
jq -r '[.source, (.document | tostring), .object, (.verified | tostring), (.signers | join("; ")), (.reason | .[0:1000])]
  | map(gsub("[\u001f\r\n]"; " ")) | join("\u001f")' "$work/rows" >"$work/fields"

# The log and the annotations.
while IFS=$'\x1f' read -r source document object ok signers reason; do
  if [ "$ok" = true ]; then
    echo "$source: document $document: $object: verified ($signers)"
  else
    echo "$source: document $document: $object: FAILED [$reason]"
    echo "::error file=$(escape_property "$source"),title=mansign verify::$(escape_data "document $document: $object: $reason")"
  fi
done <"$work/fields"
echo "$verified of $total document(s) verified"

set_output files "$(jq -r '.source' "$work/rows" | awk '!seen[$0]++')"
set_output documents "$verified"
set_output signer-identity "$(jq -r '.identities[]' "$work/rows" | awk '!seen[$0]++')"

# The job summary: the status line, then one row per document (bounded: the runner caps a
# step summary at 1 MiB).
if [ "$failed" -eq 0 ]; then
  headline="✅ **$verified of $total document(s) verified**"
else
  headline="❌ **$failed of $total document(s) failed verification**"
fi
summary "### mansign verify" "" "$headline" "" \
  "| file | document | object | verdict | signer | reason |" \
  "|---|---|---|---|---|---|"
n=0
while IFS=$'\x1f' read -r source document object ok signers reason; do
  n=$((n + 1))
  if [ "$n" -gt "$MAX_SUMMARY_ROWS" ]; then
    summary "" "… $((total - MAX_SUMMARY_ROWS)) more document(s): see the step log."
    break
  fi
  if [ "$ok" = true ]; then verdict="✅ verified"; else verdict="❌ FAILED"; fi
  summary "| $(md "$source") | $document | $(md "$object") | $verdict | $(md "$signers") | $(md "$reason") |"
done <"$work/fields"

[ "$failed" -eq 0 ] || exit 1
