#!/usr/bin/env bash
# Benchmark: keyless signing of N files (default 100) against the loopback Sigstore stack,
# in one invocation (one token, one Fulcio certificate, concurrent Rekor uploads) versus
# one invocation per file. Prints a Markdown table for BENCHMARKS.md.
#
#   scripts/bench.sh [N]
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-100}

bash scripts/sigstore-stack/install.sh >/dev/null
cargo build --locked --release --quiet
MANSIGN="$PWD/target/release/mansign"

WORK=$(mktemp -d)
STATE="$WORK/stack"
cleanup() { bash scripts/sigstore-stack/stop.sh "$STATE" >/dev/null 2>&1 || true; rm -rf "$WORK"; }
trap cleanup EXIT
bash scripts/sigstore-stack/start.sh "$STATE" >/dev/null
# shellcheck disable=SC1091
. "$STATE/env"
unset SIGSTORE_ID_TOKEN ACTIONS_ID_TOKEN_REQUEST_URL ACTIONS_ID_TOKEN_REQUEST_TOKEN

mkdir -p "$WORK/in"
for i in $(seq -w 1 "$N"); do
  cat > "$WORK/in/exception-$i.yaml" <<YAML
apiVersion: kyverno.io/v2
kind: PolicyException
metadata:
  name: exception-$i
  namespace: team-$i
spec:
  exceptions:
  - policyName: disallow-host-path
    ruleNames: [host-path]
  match:
    any:
    - resources:
        kinds: [Pod]
        names: ["job-$i-*"]
YAML
done

common=(--fulcio-url "$SIGSTORE_FULCIO_URL" --rekor-url "$SIGSTORE_REKOR_URL"
        --identity-token "@$SIGSTORE_ID_TOKEN_FILE" --trusted-root "$SIGSTORE_TRUSTED_ROOT")
now_ms() { date +%s%3N; }
stat() { curl -s "$SIGSTORE_STATS_FULCIO_URL" | python3 -c "import json,sys; d=json.load(sys.stdin); print(d['$1'])"; }

curl -s -X POST "${SIGSTORE_STATS_FULCIO_URL}/reset" >/dev/null
t0=$(now_ms)
"$MANSIGN" sign -f "$WORK/in/" -o "$WORK/batch/" "${common[@]}" 2>/dev/null
t1=$(now_ms)
batch_ms=$((t1 - t0)); batch_certs=$(stat fulcio_signing_cert_requests); batch_entries=$(stat rekor_entries_created)

curl -s -X POST "${SIGSTORE_STATS_FULCIO_URL}/reset" >/dev/null
mkdir -p "$WORK/single"
t0=$(now_ms)
for f in "$WORK"/in/*.yaml; do
  "$MANSIGN" sign -f "$f" -o "$WORK/single/$(basename "$f")" "${common[@]}" 2>/dev/null
done
t1=$(now_ms)
single_ms=$((t1 - t0)); single_certs=$(stat fulcio_signing_cert_requests); single_entries=$(stat rekor_entries_created)

"$MANSIGN" verify -f "$WORK/batch/" --trusted-root "$SIGSTORE_TRUSTED_ROOT" \
  --certificate-identity "$SIGSTORE_IDENTITY" --certificate-oidc-issuer "$SIGSTORE_OIDC_ISSUER" >/dev/null
t0=$(now_ms)
"$MANSIGN" verify -f "$WORK/batch/" --trusted-root "$SIGSTORE_TRUSTED_ROOT" \
  --certificate-identity "$SIGSTORE_IDENTITY" --certificate-oidc-issuer "$SIGSTORE_OIDC_ISSUER" >/dev/null
t1=$(now_ms)
verify_ms=$((t1 - t0))

cat <<TABLE
| run ($N files, $(nproc) cores) | wall time | Fulcio certificates | Rekor entries |
|---|---|---|---|
| one invocation: \`sign -f in/ -o out/\` | ${batch_ms} ms | ${batch_certs} | ${batch_entries} |
| $N invocations, one file each | ${single_ms} ms | ${single_certs} | ${single_entries} |
| verify all $N signed files (one invocation, offline) | ${verify_ms} ms | – | – |
TABLE

# The manifest reader's resource bounds (hostile inputs of issue 7): a second table.
echo
bash scripts/bounds.sh

# The admission webhook under load (wrk on loopback): a third table.
echo
bash scripts/bench-webhook.sh
