#!/usr/bin/env bash
# Shared set-up of the webhook benchmarks (scripts/bench-webhook.sh, scripts/bench-churn.sh),
# sourced by them. webhook_bench_setup NAME: wrk (installed from the Debian package when
# missing) and openssl present; MANSIGN set (a release build unless given); WORK a temporary
# directory removed at exit, with the server (SERVER_PID) stopped; in WORK a throwaway TLS
# certificate for 127.0.0.1, a cosign key pair `release` (password `bench`) and policy.yaml,
# a ManifestPolicy requiring that key on PolicyExceptions.

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
  # MANSIGN=path/to/mansign skips the release build (to try the script out).
  if [ -z "${MANSIGN:-}" ]; then
    cargo build --locked --release --quiet
    MANSIGN="$PWD/target/release/mansign"
  fi
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
