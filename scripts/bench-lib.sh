#!/usr/bin/env bash
# Shared pieces of the benchmark scripts, sourced by them from the repository root.
#
# bench_exceptions DIR N: the PolicyExceptions the benchmarks sign and verify.
#
# bench_stack_start (scripts/bench.sh, scripts/bench-scale.sh, scripts/bench-peers.sh): WORK a temporary directory,
# the loopback Sigstore stack started in WORK/stack (STATE) and its environment read; both
# stopped and removed at exit.
#
# webhook_bench_setup NAME (scripts/bench-webhook.sh, scripts/bench-churn.sh): wrk (installed from the Debian package when
# missing) and openssl present; MANSIGN set (a release build unless given); WORK a temporary
# directory removed at exit, with the server (SERVER_PID) stopped; in WORK a throwaway TLS
# certificate for 127.0.0.1, a cosign key pair `release` (password `bench`) and policy.yaml,
# a ManifestPolicy requiring that key on PolicyExceptions.

# bench_mansign: MANSIGN set to the binary to measure: the release build (built now) unless
# MANSIGN=path/to/mansign is given (to try a script out, or to measure another build).
bench_mansign() {
  if [ -z "${MANSIGN:-}" ]; then
    cargo build --locked --release --quiet
    MANSIGN="$PWD/target/release/mansign"
  fi
}

# bench_exceptions DIR N: N PolicyExceptions, one file each, in DIR (the benchmarks' input).
bench_exceptions() {
  mkdir -p "$1"
  local i
  for i in $(seq -w 1 "$2"); do
    cat >"$1/exception-$i.yaml" <<YAML
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
}

bench_stack_cleanup() {
  bash scripts/sigstore-stack/stop.sh "$STATE" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}

bench_stack_start() {
  WORK=$(mktemp -d)
  STATE="$WORK/stack"
  trap bench_stack_cleanup EXIT
  bash scripts/sigstore-stack/start.sh "$STATE" >/dev/null
  # shellcheck disable=SC1091
  . "$STATE/env"
  unset SIGSTORE_ID_TOKEN ACTIONS_ID_TOKEN_REQUEST_URL ACTIONS_ID_TOKEN_REQUEST_TOKEN
}

webhook_bench_cleanup() {
  [ -n "${SERVER_PID:-}" ] && kill "$SERVER_PID" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$WORK"
}

webhook_bench_setup() {
  local name=$1
  if ! command -v wrk >/dev/null; then
    echo "$name: installing wrk (Debian package)" >&2
    { apt-get update -qq && apt-get install -y -qq wrk >/dev/null; } || { echo "wrk is missing and could not be installed: apt-get install -y wrk" >&2; exit 2; }
  fi
  command -v openssl >/dev/null || { echo "openssl (the command) is missing" >&2; exit 2; }
  bench_mansign
  WORK=$(mktemp -d)
  SERVER_PID=
  trap webhook_bench_cleanup EXIT
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
    -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
    -keyout "$WORK/tls.key" -out "$WORK/tls.crt" 2>/dev/null
  (cd "$WORK" && COSIGN_PASSWORD=bench "$MANSIGN" generate-key-pair --output-key-prefix release >/dev/null 2>&1)
  cat > "$WORK/policy.yaml" <<YAML
apiVersion: mansign.dev/v1alpha1
kind: ManifestPolicy
metadata:
  name: exceptions
spec:
  match:
    kinds: [PolicyException]
  attestors:
  - entries:
    - keys:
        path: release.pub
YAML
}

# webhook_bench_serve DECISIONS: `mansign admission serve` on a free loopback port with
# WORK's policy and certificate, decisions written to DECISIONS, events to WORK/events.log;
# returns once it listens. Sets SERVER_PID and URL, and defines `metric NAME` (a value read
# from /metrics) with the cache counters' names in HITS and MISSES.
webhook_bench_serve() {
  "$MANSIGN" admission serve --policy "$WORK/policy.yaml" --tls-cert "$WORK/tls.crt" \
    --tls-key "$WORK/tls.key" --listen 127.0.0.1:0 --deadline 8s \
    >"$1" 2>"$WORK/events.log" &
  SERVER_PID=$!
  for _ in $(seq 100); do
    grep -q '"listening"' "$WORK/events.log" 2>/dev/null && break
    sleep 0.1
  done
  local port
  port=$(python3 -c "import json,sys; [print(json.loads(l)['address'].rsplit(':',1)[1]) for l in open(sys.argv[1]) if '\"listening\"' in l]" "$WORK/events.log")
  URL="https://127.0.0.1:$port"
  # shellcheck disable=SC2034 # read by the scripts that source this file
  HITS='mansign_verification_cache_lookups_total{result="hit"}'
  # shellcheck disable=SC2034
  MISSES='mansign_verification_cache_lookups_total{result="miss"}'
}

metric() { curl -sk "$URL/metrics" | awk -v s="$1" '$1 == s { print $2 }'; }
