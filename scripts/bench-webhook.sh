#!/usr/bin/env bash
# Load benchmark of the admission webhook (`mansign admission serve`, release build) with
# wrk from a second process on loopback: rps and p50/p99 latency for cache hits (one signed
# PolicyException re-applied, as GitOps re-syncs do) and for fresh verifications (every
# request a different signed object), plus the server's peak RSS (VmHWM). Prints a Markdown
# table for BENCHMARKS.md.
#
#   scripts/bench-webhook.sh [SECONDS] [CONNECTIONS]
#
# Needs wrk (Debian: apt-get install -y wrk) and the openssl command (only to make the
# benchmark's throwaway server certificate; mansign itself uses rustls).
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_RUN=${1:-10}
CONNECTIONS=${2:-8}
THREADS=2
# shellcheck source=scripts/bench-lib.sh
. scripts/bench-lib.sh
webhook_bench_setup bench-webhook.sh

# Distinct signed objects: enough that the fresh run never sends one twice.
FRESH=${FRESH_OBJECTS:-20000}
mkdir -p "$WORK/in"
python3 - "$WORK/in" "$FRESH" <<'PY'
import sys
out, n = sys.argv[1], int(sys.argv[2])
# At most 1000 documents a file (mansign's Limits::max_documents).
for i in range(n):
    with open(f"{out}/exceptions-{i // 1000:03}.yaml", "a") as f:
        f.write(f"""---
apiVersion: kyverno.io/v2
kind: PolicyException
metadata:
  name: exception-{i}
  namespace: team-{i % 50}
spec:
  exceptions:
  - policyName: disallow-host-path
    ruleNames: [host-path]
  match:
    any:
    - resources:
        kinds: [Pod]
        names: ["job-{i}-*"]
""")
PY
COSIGN_PASSWORD=bench "$MANSIGN" sign -f "$WORK/in/" -o "$WORK/signed/" \
  --key "$WORK/release.key" >/dev/null 2>&1 || { echo "signing the benchmark objects failed" >&2; exit 1; }

# AdmissionReview bodies, one per line: hits.jsonl (one object), fresh.jsonl (all).
python3 - "$WORK" <<'PY'
import json, sys
from pathlib import Path
work = Path(sys.argv[1])
try:
    import yaml
except ImportError:
    sys.exit("python3 yaml (PyYAML) is needed to build the review bodies")
loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
docs = [d for f in sorted((work / "signed").glob("*.yaml"))
        for d in yaml.load_all(f.read_text(), Loader=loader) if d]
def review(i, obj):
    return json.dumps({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": f"bench-{i}",
            "kind": {"group": "kyverno.io", "version": "v2", "kind": "PolicyException"},
            "resource": {"group": "kyverno.io", "version": "v2", "resource": "policyexceptions"},
            "name": obj["metadata"]["name"], "namespace": obj["metadata"]["namespace"],
            "operation": "CREATE",
            "userInfo": {"username": "bench", "groups": ["system:authenticated"]},
            "object": obj, "oldObject": None, "dryRun": False,
        },
    }, separators=(",", ":"))
(work / "hits.jsonl").write_text(review(0, docs[0]) + "\n")
(work / "fresh.jsonl").write_text("".join(review(i, d) + "\n" for i, d in enumerate(docs)))
PY

webhook_bench_serve "$WORK/decisions.log"

run() { # name bodies-file -> one JSON line
  wrk -t"$THREADS" -c"$CONNECTIONS" -d"${SECONDS_PER_RUN}s" --timeout 10s \
    -s scripts/bench-webhook.lua "$URL" -- "$1" "$THREADS" 2>"$WORK/wrk.err" | tail -n 1
}

LOAD=$(cut -d' ' -f1-3 /proc/loadavg)
# Warm up (connections, the one cached acceptance), then measure.
wrk -t1 -c4 -d2s -s scripts/bench-webhook.lua "$URL" -- "$WORK/hits.jsonl" 1 >/dev/null 2>&1
h0=$(metric "$HITS"); m0=$(metric "$MISSES")
hits_json=$(run "$WORK/hits.jsonl")
h1=$(metric "$HITS"); m1=$(metric "$MISSES")
RSS_HITS=$(awk '/VmHWM/ { print $2 " " $3 }' "/proc/$SERVER_PID/status")
fresh_json=$(run "$WORK/fresh.jsonl")
h2=$(metric "$HITS"); m2=$(metric "$MISSES")
RSS=$(awk '/VmHWM/ { print $2 " " $3 }' "/proc/$SERVER_PID/status")

row() { # label json hits misses
  python3 - "$1" "$2" "$3" "$4" <<'PY'
import json, sys
label, j, hits, misses = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], sys.argv[4]
errors = sum(j["errors"].values())
print(f"| {label} | {j['requests']} | {j['rps']} | {j['p50_ms']:.2f} ms | {j['p99_ms']:.2f} ms | "
      f"{j['max_ms']:.1f} ms | {errors} | {hits} / {misses} |")
PY
}
echo "| run (${SECONDS_PER_RUN} s, $CONNECTIONS connections, $(nproc) cores, load before: $LOAD) | requests | rps | p50 | p99 | max | errors | cache hits / misses |"
echo "|---|---|---|---|---|---|---|---|"
row "cache hits (one signed object)" "$hits_json" "$((h1 - h0))" "$((m1 - m0))"
row "fresh verifications (distinct signed objects)" "$fresh_json" "$((h2 - h1))" "$((m2 - m1))"
echo
echo "Server peak RSS (VmHWM): $RSS_HITS after the cache-hit run, $RSS at the end; $(nproc) cores, $(date -u +%Y-%m-%d)."
if [ -s "$WORK/wrk.err" ]; then echo "wrk stderr (first lines):"; head -5 "$WORK/wrk.err"; fi
