#!/usr/bin/env bash
# The main job end to end: sign the manifests in testdata/unsigned/ and verify them,
# then show that a tampered copy is rejected. Works on a fresh machine (builds mansign).
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }

step "build mansign"
cargo build --locked --quiet
MANSIGN="$PWD/target/debug/mansign"

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export COSIGN_PASSWORD=demo-password

step "generate a cosign key pair"
(cd "$WORK" && "$MANSIGN" generate-key-pair)

step "sign testdata/unsigned/ into signed/ (one signature per document)"
"$MANSIGN" sign -f testdata/unsigned/ -o "$WORK/signed/" --key "$WORK/cosign.key"
sed -n '1,20p' "$WORK/signed/policy-exception-backup.yaml"

step "verify signed/"
"$MANSIGN" verify -f "$WORK/signed/" --key "$WORK/cosign.pub"

step "tamper: widen the exception to every pod name, then verify again (must fail)"
sed 's/"nightly-backup-\*"/"*"/' "$WORK/signed/policy-exception-backup.yaml" > "$WORK/tampered.yaml"
if "$MANSIGN" verify -f "$WORK/tampered.yaml" --key "$WORK/cosign.pub"; then
  echo "demo: tampered manifest verified: this is a bug" >&2
  exit 1
else
  echo "rejected as expected (exit $?)"
fi
step "done"
