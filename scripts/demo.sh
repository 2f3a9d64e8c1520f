#!/usr/bin/env bash
# The main job end to end, keyless, on a local Sigstore (OIDC issuer, Fulcio, Rekor on
# 127.0.0.1): sign testdata/unsigned/ into signed/ the way CI does, verify the result
# with the signer's identity, then show that tampering, a wrong identity and a wrong
# issuer are all rejected. Works on a fresh machine (installs the stack, builds mansign).
#
# The CI identity is the README quickstart's: the workflow
# https://github.com/acme/policies/.github/workflows/sign.yaml@refs/heads/main, issued by
# https://token.actions.githubusercontent.com (the local OIDC issuer mints a token with
# exactly those claims), so the commands below are the README's commands.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }

IDENTITY=https://github.com/acme/policies/.github/workflows/sign.yaml@refs/heads/main
ISSUER=https://token.actions.githubusercontent.com

step "install the local Sigstore stack (npm + sigstore-python) and build mansign"
if [ ! -x target/debug/mansign ]; then
  # A cold debug build of the binary costs about 320 s of CPU (docs/design.md, "Build
  # cost": measured on the 2-core machine, most of it aws-lc's C library); cargo keeps every
  # core busy, so this machine's share is that over its cores, stretched by whatever else
  # is running (the load average).
  cores=$(nproc 2>/dev/null || echo 2)
  load=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo 0)
  estimate=$(awk -v c="$cores" -v l="$load" 'BEGIN { busy = l / c; if (busy < 0) busy = 0;
    printf "%d", (320 / c) * (1 + busy) / 60 + 1 }')
  echo "The first run builds mansign and its dependencies (about 320 CPU-seconds): on this"
  echo "machine ($cores cores, load $load) about $estimate minutes. cargo shows its progress below;"
  echo "later runs take seconds."
fi
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  apt-get update -qq && apt-get install -y -qq nodejs npm
fi
bash scripts/sigstore-stack/install.sh
# The binary the README's commands use: `export PATH="$PWD/target/debug:$PATH"` afterwards
# runs them without another build (kubectl-mansign is the same binary, for `kubectl mansign`).
cargo build --locked --bin mansign
ln -sf mansign target/debug/kubectl-mansign
MANSIGN="$PWD/target/debug/mansign"

WORK=$(mktemp -d)
STATE="$WORK/stack"
cleanup() { bash scripts/sigstore-stack/stop.sh "$STATE" >/dev/null 2>&1 || true; rm -rf "$WORK"; }
trap cleanup EXIT

step "start the local Sigstore stack"
# The README's command for the stack by hand: it prints the exports to evaluate.
eval "$(bash scripts/sigstore-stack/start.sh --env "$STATE" 2>/dev/null)"
echo "OIDC issuer $SIGSTORE_OIDC_ISSUER, Fulcio $SIGSTORE_FULCIO_URL, Rekor $SIGSTORE_REKOR_URL"
LOCAL_ISSUER=$SIGSTORE_OIDC_ISSUER
echo "CI identity: $IDENTITY (issuer $ISSUER)"
# In GitHub Actions the token comes from the runner; here the local issuer mints one with
# the claims GitHub would put in it.
export SIGSTORE_ID_TOKEN
SIGSTORE_ID_TOKEN=$(bash scripts/sigstore-stack/mint-token.sh "$STATE" \
  "iss=$ISSUER" "sub=$IDENTITY" repository=acme/policies ref=refs/heads/main \
  event_name=push workflow=sign)
unset ACTIONS_ID_TOKEN_REQUEST_URL ACTIONS_ID_TOKEN_REQUEST_TOKEN

step "sign testdata/unsigned/ into signed/ keylessly (one certificate, one Rekor entry per document)"
cp -r testdata/unsigned "$WORK/unsigned"
"$MANSIGN" sign -f "$WORK/unsigned/" -o "$WORK/signed/" --remove-input \
  --trusted-root "$SIGSTORE_TRUSTED_ROOT"
echo "unsigned/ now holds: $(ls -A "$WORK/unsigned" | wc -l) file(s) (--remove-input)"
sed -n '1,12p' "$WORK/signed/policy-exception-backup.yaml" | cut -c1-110

step "stop the stack: verification is offline"
bash scripts/sigstore-stack/stop.sh "$STATE" >/dev/null

verify() {
  "$MANSIGN" verify -f "$1" --trusted-root "$SIGSTORE_TRUSTED_ROOT" \
    --certificate-identity "$2" --certificate-oidc-issuer "$3"
}

step "verify signed/ with the CI identity and issuer"
verify "$WORK/signed/" "$IDENTITY" "$ISSUER"

expect_reject() {
  local what=$1; shift
  step "$what (must be rejected)"
  if "$@"; then
    echo "demo: accepted, this is a bug" >&2
    exit 1
  else
    echo "rejected as expected (exit $?)"
  fi
}

sed 's/"nightly-backup-\*"/"*"/' "$WORK/signed/policy-exception-backup.yaml" > "$WORK/tampered.yaml"
expect_reject "tamper: widen the exception to every pod name" \
  verify "$WORK/tampered.yaml" "$IDENTITY" "$ISSUER"
expect_reject "a workflow of another repository" \
  verify "$WORK/signed/" "https://github.com/evil/repo/.github/workflows/release.yml@refs/heads/main" "$ISSUER"
expect_reject "the right subject from another issuer" \
  verify "$WORK/signed/" "$IDENTITY" "$LOCAL_ISSUER"

step "done"
echo "mansign is built: export PATH=\"$PWD/target/debug:\$PATH\" runs the README's commands without another build."
