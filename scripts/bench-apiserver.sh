#!/usr/bin/env bash
# bench-apiserver.sh [N] -- the webhook's latency as the API server sees it: N (default 1000)
# signed PolicyExceptions applied with `kubectl apply` through a real kube-apiserver
# (scripts/cluster.sh) calling the real `mansign admission serve` registered with deploy/'s
# ValidatingWebhookConfiguration (URL client config on loopback, its caBundle). Prints the
# API server's own metric apiserver_admission_webhook_admission_duration_seconds (p50/p99,
# interpolated within its buckets as PromQL's histogram_quantile does, and the raw buckets)
# next to the webhook's mansign_admission_request_duration_seconds.
#
# MANSIGN: the binary (default target/release/mansign, else target/debug/mansign).
# A measurement, not a test: nothing here asserts a time.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
N=${1:-1000}
[[ "$N" =~ ^[0-9]+$ ]] && [ "$N" -ge 1 ] || {
  echo "usage: $0 [N]" >&2
  exit 2
}
MANSIGN=${MANSIGN:-}
if [ -z "$MANSIGN" ]; then
  for candidate in "$ROOT/target/release/mansign" "$ROOT/target/debug/mansign"; do
    if [ -x "$candidate" ]; then
      MANSIGN=$candidate
      break
    fi
  done
fi
[ -n "$MANSIGN" ] && [ -x "$MANSIGN" ] || {
  echo "bench-apiserver.sh: no mansign binary (cargo build --release, or set MANSIGN)" >&2
  exit 1
}
command -v jq >/dev/null 2>&1 || {
  echo "bench-apiserver.sh: jq is needed" >&2
  exit 1
}

WORK=$(mktemp -d)
WEBHOOK_PID=
cleanup() {
  if [ -n "$WEBHOOK_PID" ]; then kill "$WEBHOOK_PID" 2>/dev/null || true; fi
  bash "$ROOT/scripts/cluster.sh" stop "$WORK/cluster" || true
  rm -rf "$WORK"
}
trap cleanup EXIT

tools=$(bash "$ROOT/scripts/cluster.sh" build)
KUBECTL=$(sed -n 's/^kubectl=//p' <<<"$tools")
bash "$ROOT/scripts/cluster.sh" start "$WORK/cluster" >/dev/null
export KUBECONFIG=$WORK/cluster/kubeconfig
k() { "$KUBECTL" "$@"; }

k create -f "$ROOT/testdata/cluster/kyverno-crds/" >/dev/null
k wait --for=condition=Established --timeout=60s crd/policyexceptions.kyverno.io >/dev/null
k create namespace bench >/dev/null

# Key, policy (deploy/'s, keyed to the bench key), serving certificate: the cluster's own
# CA and 127.0.0.1 certificate serve the webhook too.
(cd "$WORK" && COSIGN_PASSWORD='' "$MANSIGN" generate-key-pair --output-key-prefix release >/dev/null 2>&1)
cat >"$WORK/policy.yaml" <<EOF
apiVersion: mansign.dev/v1alpha1
kind: ManifestPolicy
metadata:
  name: signed-policy-exceptions
spec:
  match:
    kinds: [kyverno.io/*/PolicyException]
  ignoreProfile: kubernetes
  attestors:
  - entries:
    - keys:
        path: $WORK/release.pub
EOF
"$MANSIGN" admission serve --listen 127.0.0.1:0 --policy "$WORK/policy.yaml" \
  --tls-cert "$WORK/cluster/pki/apiserver.crt" --tls-key "$WORK/cluster/pki/apiserver.key" \
  >"$WORK/decisions.log" 2>"$WORK/webhook.log" &
WEBHOOK_PID=$!
port=
for _ in $(seq 300); do
  port=$(sed -n 's/.*"event":"listening".*"address":"127\.0\.0\.1:\([0-9]*\)".*/\1/p' "$WORK/webhook.log" | head -n1)
  [ -n "$port" ] && break
  sleep 0.05
done
[ -n "$port" ] || {
  echo "bench-apiserver.sh: the webhook did not start:" >&2
  cat "$WORK/webhook.log" >&2
  exit 1
}
ca=$(base64 -w0 <"$WORK/cluster/pki/ca.crt")
k create --dry-run=client -o json -f "$ROOT/deploy/base/validatingwebhookconfiguration.yaml" |
  jq --arg url "https://127.0.0.1:$port/validate" --arg ca "$ca" \
    '.webhooks[].clientConfig = {url: $url, caBundle: $ca}' |
  k apply -f - >/dev/null

# N signed exceptions, one signature per document.
for i in $(seq "$N"); do
  cat <<EOF
---
apiVersion: kyverno.io/v2
kind: PolicyException
metadata:
  name: bench-$i
  namespace: bench
spec:
  exceptions:
  - policyName: disallow-host-path
    ruleNames: [host-path]
  match:
    any:
    - resources:
        kinds: [Pod]
        names: [nightly-backup-$i-*]
EOF
done >"$WORK/unsigned.yaml"
COSIGN_PASSWORD='' "$MANSIGN" sign -f "$WORK/unsigned.yaml" --key "$WORK/release.key" -o "$WORK/signed.yaml" 2>/dev/null

# Wait until the API server calls the webhook (an unsigned one is denied).
for _ in $(seq 120); do
  if ! k create --dry-run=server -f - >/dev/null 2>&1 <<EOF; then break; fi
apiVersion: kyverno.io/v2
kind: PolicyException
metadata: {name: probe, namespace: bench}
spec:
  exceptions: [{policyName: p, ruleNames: [r]}]
  match: {any: [{resources: {kinds: [Pod]}}]}
EOF
  sleep 0.25
done

start=$(date +%s.%N)
k apply -f "$WORK/signed.yaml" >/dev/null
end=$(date +%s.%N)
admitted=$(k get policyexceptions.kyverno.io -n bench --no-headers | wc -l)

quantiles() { # METRIC_TEXT NAME SELECTOR -> "p50 p99 count" from cumulative buckets
  awk -v name="$2" -v sel="$3" '
    index($0, name "_bucket{") == 1 && index($0, sel) {
      match($0, /le="[^"]*"/); le = substr($0, RSTART + 4, RLENGTH - 5)
      n++; les[n] = (le == "+Inf") ? 1e308 : le + 0; cnt[n] = $NF + 0
    }
    END {
      if (n == 0) { print "- - 0"; exit }
      total = cnt[n]; out = ""
      split("0.5 0.99", qs, " ")
      for (j = 1; j <= 2; j++) {
        rank = qs[j] * total; prev_le = 0; prev_c = 0; v = "-"
        for (i = 1; i <= n; i++) {
          if (cnt[i] >= rank) {
            if (les[i] == 1e308) { v = ">" prev_le } else if (cnt[i] == prev_c) { v = les[i] }
            else { v = prev_le + (les[i] - prev_le) * (rank - prev_c) / (cnt[i] - prev_c) }
            break
          }
          prev_le = les[i]; prev_c = cnt[i]
        }
        out = out v " "
      }
      print out total
    }' <<<"$1"
}
api_metrics=$(k get --raw /metrics)
hook_metrics=$(curl -s --cacert "$WORK/cluster/pki/ca.crt" "https://127.0.0.1:$port/metrics")
api_sel='name="policyexceptions.mansign.dev",operation="CREATE",rejected="false"'
read -r a50 a99 acount < <(quantiles "$api_metrics" apiserver_admission_webhook_admission_duration_seconds "$api_sel")
read -r m50 m99 mcount < <(quantiles "$hook_metrics" mansign_admission_request_duration_seconds '')

mean() { # METRIC_TEXT NAME SELECTOR -> mean in ms (_sum / _count of the selected series)
  awk -v name="$2" -v sel="$3" '
    index($0, name "_sum") == 1 && index($0, sel) { s = $NF + 0 }
    index($0, name "_count") == 1 && index($0, sel) { c = $NF + 0 }
    END { if (c > 0) printf "%.2f", 1000 * s / c; else print "-" }' <<<"$1"
}
a_mean=$(mean "$api_metrics" apiserver_admission_webhook_admission_duration_seconds "$api_sel")
m_mean=$(mean "$hook_metrics" mansign_admission_request_duration_seconds '')

echo "bench-apiserver.sh: $N signed PolicyExceptions, one kubectl apply; $admitted admitted"
awk -v s="$start" -v e="$end" -v n="$N" 'BEGIN { printf "  kubectl apply wall time: %.1f s (%.1f ms per object, kubectl and API server included)\n", e - s, 1000 * (e - s) / n }'
echo "  apiserver_admission_webhook_admission_duration_seconds (API server, CREATE admitted, $acount calls): p50 ${a50} s, p99 ${a99} s, mean ${a_mean} ms"
echo "  mansign_admission_request_duration_seconds (webhook, $mcount requests incl. probes): p50 ${m50} s, p99 ${m99} s, mean ${m_mean} ms"
echo "  webhook buckets (le=count):"
grep '^mansign_admission_request_duration_seconds_bucket{' <<<"$hook_metrics" |
  sed -n 's/.*le="\([^"]*\)".* \([0-9]*\)$/    \1=\2/p'
echo "  load: $(uptime)"
echo "  API server buckets (le=count):"
grep '^apiserver_admission_webhook_admission_duration_seconds_bucket{' <<<"$api_metrics" |
  grep 'name="policyexceptions.mansign.dev",operation="CREATE",rejected="false"' |
  sed -n 's/.*le="\([^"]*\)".* \([0-9]*\)$/    \1=\2/p'
echo "  (kube-apiserver $("$KUBECTL" version -o json | jq -r .serverVersion.gitVersion), mansign $MANSIGN, $(nproc) CPUs)"
