#!/usr/bin/env bash
# The three admission routes of issue 37 side by side, as BENCHMARKS.md's table: mansign's
# webhook, Kyverno `validate.manifests` (v1.19) and Kyverno's ValidatingPolicy asking
# mansign (examples/kyverno/mansign-validatingpolicy.yaml), on the real kube-apiserver, the
# real Kyverno admission controller and the real `mansign admission serve`, with the test
# harness of tests/it/kyverno_in_the_loop.rs (its ignored test `three_routes_benchmark`),
# `mansign admission serve` the release build (MANSIGN_WEBHOOK_BIN).
# Each figure is measured where the issue asks: the API server's own time for the route's
# webhook (apiserver_admission_webhook_admission_duration_seconds), the request's total time
# (curl's time_total of the CREATE), and each process's CPU per admission; fresh objects and
# the same objects again. The machine load is printed with the table.
#
#   scripts/bench-routes.sh [N]     N writes a pass (default 30)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-30}
[[ "$N" =~ ^[0-9]+$ ]] && [ "$N" -gt 0 ] || { echo "bench-routes.sh: N must be a positive number" >&2; exit 2; }
bash scripts/sigstore-stack/install.sh >/dev/null
# The webhook server runs as released (the harness's own processes are the test build).
cargo build --locked --release --quiet --bin mansign
export MANSIGN_WEBHOOK_BIN=$PWD/target/release/mansign
echo "load before: $(uptime)" >&2
mkdir -p target
log=target/bench-routes.log table=target/bench-routes.md
rm -f "$table"
# The harness's progress (and a failure's reason) goes to the log; the test writes the table.
if ! MANSIGN_BENCH_ROUTES_N=$N MANSIGN_BENCH_ROUTES_OUT=$PWD/$table cargo test --locked --test it -- \
  --ignored --exact kyverno_in_the_loop::three_routes_benchmark --nocapture --test-threads=1 >"$log" 2>&1 ||
  [ ! -s "$table" ]; then
  tail -n 40 "$log" >&2
  echo "bench-routes.sh: the benchmark failed; its log is $log" >&2
  exit 1
fi
cat "$table"
echo "load after: $(uptime)" >&2
echo "commit: $(git rev-parse --short HEAD), $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores" >&2
