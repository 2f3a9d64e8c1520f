#!/usr/bin/env bash
# Cache churn of the admission webhook (issue 26): `mansign admission serve` (release build)
# with a key policy for PolicyExceptions receives AdmissionReviews for 20,000 distinct
# signed objects, then for 200,000 more (each object validly signed, each sent once), and
# then a GitOps re-sync: the same 5,000 objects re-applied round after round. Printed as
# Markdown tables:
#
# * the server's RSS (VmRSS, and the peak VmHWM) after each phase, next to the verification
#   cache's bounds (src/verify/cache.rs: 16,384 entries, 8 MiB of signed documents) and its
#   entry count (`mansign_verification_cache_entries`);
# * the hit path's p50/p99 (wrk, a hot set of 100 objects re-sent for SECONDS) before the
#   churn, after 20,000 and after 200,000 objects;
# * the cache's hit ratio in each re-sync round, from `mansign_verification_cache_lookups_total`.
#
#   scripts/bench-churn.sh [SECONDS] [CONNECTIONS]
#
# Needs wrk (installed as scripts/bench-webhook.sh installs it) and the openssl command (the
# throwaway server certificate). Objects are signed with a cosign key (`sign --key`) in
# batches of 10,000; the review bodies (about 2 KiB each) are written to a temporary
# directory and deleted at the end. PHASES="20000 200000", RESYNC=5000 and ROUNDS=5 change
# the sizes.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_RUN=${1:-10}
CONNECTIONS=${2:-8}
read -r -a PHASES <<<"${PHASES:-20000 200000}"
RESYNC=${RESYNC:-5000}
ROUNDS=${ROUNDS:-5}
HOT=100
# shellcheck source=scripts/bench-lib.sh
. scripts/bench-lib.sh
webhook_bench_setup bench-churn.sh

# Distinct objects: the hot set and the re-sync set, then one set per phase. JSON streams
# of at most 1,000 objects a file (Limits::max_documents), signed into JSON streams.
python3 - "$WORK" "$HOT" "$RESYNC" "${PHASES[@]}" <<'PY'
import json, os, sys
work, sizes = sys.argv[1], [int(x) for x in sys.argv[2:]]
names = ["hot", "resync"] + [f"phase{i}" for i in range(len(sizes) - 2)]
serial = 0
for name, n in zip(names, sizes):
    for start in range(0, n, 10000):  # one signing run per 10,000 objects
        chunk = os.path.join(work, "in", f"{name}-{start // 10000:03}")
        os.makedirs(chunk)
        for f0 in range(start, min(n, start + 10000), 1000):
            with open(os.path.join(chunk, f"objects-{f0 // 1000:03}.json"), "w") as f:
                for i in range(f0, min(n, f0 + 1000, start + 10000)):
                    serial += 1
                    json.dump({
                        "apiVersion": "kyverno.io/v2", "kind": "PolicyException",
                        "metadata": {"name": f"{name}-{i}", "namespace": f"team-{i % 50}"},
                        "spec": {"exceptions": [{"policyName": "disallow-host-path",
                                                 "ruleNames": ["host-path"]}],
                                 "match": {"any": [{"resources": {"kinds": ["Pod"],
                                                                  "names": [f"job-{serial}-*"]}}]}},
                    }, f)
                    f.write("\n")
PY
for chunk in "$WORK"/in/*/; do
  COSIGN_PASSWORD=bench "$MANSIGN" sign -f "$chunk" -o "$WORK/signed/$(basename "$chunk")/" \
    --key "$WORK/release.key" >/dev/null 2>&1 || { echo "signing $chunk failed" >&2; exit 1; }
  rm -rf "$chunk"
done

# AdmissionReview bodies, one per line: hot.jsonl, resync.jsonl, phase<i>.jsonl.
python3 - "$WORK" <<'PY'
import json, sys
from pathlib import Path
work = Path(sys.argv[1])
decoder = json.JSONDecoder()
def objects(text):
    i = 0
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i == len(text):
            return
        obj, i = decoder.raw_decode(text, i)
        yield obj
outs = {}
for f in sorted((work / "signed").glob("*/*.json")):
    name = f.parent.name.rsplit("-", 1)[0]
    if name not in outs:
        outs[name] = open(work / f"{name}.jsonl", "w")
    out = outs[name]
    for obj in objects(f.read_text()):
        out.write(json.dumps({
            "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {
                "uid": f"churn-{obj['metadata']['name']}",
                "kind": {"group": "kyverno.io", "version": "v2", "kind": "PolicyException"},
                "resource": {"group": "kyverno.io", "version": "v2", "resource": "policyexceptions"},
                "name": obj["metadata"]["name"], "namespace": obj["metadata"]["namespace"],
                "operation": "CREATE",
                "userInfo": {"username": "bench", "groups": ["system:authenticated"]},
                "object": obj, "oldObject": None, "dryRun": False,
            },
        }, separators=(",", ":")) + "\n")
for out in outs.values():
    out.close()
PY
rm -rf "$WORK/signed"

webhook_bench_serve /dev/null
ENTRIES='mansign_verification_cache_entries'
rss() { awk '/^VmRSS/ { r = $2 } /^VmHWM/ { h = $2 } END { printf "%.1f MiB (peak %.1f MiB)", r / 1024, h / 1024 }' "/proc/$SERVER_PID/status"; }
load() { cut -d' ' -f1 /proc/loadavg; }
thousands() { python3 -c "print(f'{int(\"$1\" or 0):,}')"; }

# Sends every body of a file once, on 4 connections; prints "<requests> <denied or failed> <seconds>".
send() {
  python3 - "$URL" "$WORK/tls.crt" "$1" <<'PY'
import http.client, json, ssl, sys, threading, time
url, ca, path = sys.argv[1:4]
host, port = url.rsplit("/", 1)[1].split(":")
bodies = open(path, "rb").read().splitlines()
ctx = ssl.create_default_context(cafile=ca)
bad, reconnects, lock = [0], [0], threading.Lock()
failed = []
def worker(k, n):
    try:
        send_slice(k, n)
    except Exception as e:
        failed.append(e)
        raise
def send_slice(k, n):
    conn = http.client.HTTPSConnection(host, int(port), context=ctx, timeout=30)
    for body in bodies[k::n]:
        for attempt in range(3):
            try:
                conn.request("POST", "/validate", body, {"Content-Type": "application/json"})
                resp = conn.getresponse()
                answer = resp.read()
                break
            except (OSError, http.client.HTTPException):
                # A connection the server (or a loaded machine) dropped: a new one, the
                # same review again; counted, and a third failure ends the run.
                if attempt == 2:
                    raise
                with lock:
                    reconnects[0] += 1
                conn.close()
                conn = http.client.HTTPSConnection(host, int(port), context=ctx, timeout=30)
        if resp.status != 200 or not json.loads(answer)["response"]["allowed"]:
            with lock:
                bad[0] += 1
    conn.close()
t = time.perf_counter()
threads = [threading.Thread(target=worker, args=(k, 4)) for k in range(4)]
for th in threads: th.start()
for th in threads: th.join()
if failed:
    sys.exit(f"{path}: a sending thread failed")
if reconnects[0]:
    print(f"{path}: {reconnects[0]} connection(s) dropped and reopened", file=sys.stderr)
print(len(bodies), bad[0], f"{time.perf_counter() - t:.1f}")
PY
}
# The hit path: the hot set sent once (so it is in the cache), then wrk re-sends it.
hit_path() {
  send "$WORK/hot.jsonl" >/dev/null
  local h0 m0 h1 m1 json
  h0=$(metric "$HITS"); m0=$(metric "$MISSES")
  json=$(wrk -t2 -c"$CONNECTIONS" -d"${SECONDS_PER_RUN}s" --timeout 10s \
    -s scripts/bench-webhook.lua "$URL" -- "$WORK/hot.jsonl" 2 2>>"$WORK/wrk.err" | tail -n 1)
  h1=$(metric "$HITS"); m1=$(metric "$MISSES")
  python3 - "$1" "$json" "$((h1 - h0))" "$((m1 - m0))" "$(load)" <<'PY'
import json, sys
label, j, hits, misses, load = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
errors = sum(j["errors"].values())
print(f"| {label} | {j['requests']:,} | {j['rps']:,.0f} | {j['p50_ms']:.2f} ms | {j['p99_ms']:.2f} ms "
      f"| {j['max_ms']:.1f} ms | {errors} | {int(hits):,} / {int(misses):,} | {load} |")
PY
}

LOAD_BEFORE=$(load)
rss_rows=("| server started | – | – | $(thousands "$(metric "$ENTRIES")") | $(rss) | $(load) |")
hit_rows=("$(hit_path "before the churn")")
rss_rows+=("| hot set ($HOT objects) and ${SECONDS_PER_RUN} s of hits | – | – | $(thousands "$(metric "$ENTRIES")") | $(rss) | $(load) |")
for i in "${!PHASES[@]}"; do
  n=${PHASES[$i]}
  read -r sent bad secs < <(send "$WORK/phase$i.jsonl")
  [ "$bad" -eq 0 ] || { echo "bench-churn.sh: $bad of $sent reviews were not allowed" >&2; exit 1; }
  rss_rows+=("| $(thousands "$n") distinct signed objects, each sent once | ${secs} s | $(python3 -c "print(f'{$sent / $secs:,.0f}')") | $(thousands "$(metric "$ENTRIES")") | $(rss) | $(load) |")
  hit_rows+=("$(hit_path "after $(thousands "$n") distinct objects")")
done

# GitOps re-sync: the same RESYNC objects, ROUNDS times, in the same order.
resync_rows=()
for round in $(seq "$ROUNDS"); do
  h0=$(metric "$HITS"); m0=$(metric "$MISSES")
  read -r sent bad secs < <(send "$WORK/resync.jsonl")
  [ "$bad" -eq 0 ] || { echo "bench-churn.sh: $bad of $sent re-sync reviews were not allowed" >&2; exit 1; }
  h1=$(metric "$HITS"); m1=$(metric "$MISSES")
  resync_rows+=("| $round | $(thousands "$sent") | $(thousands $((h1 - h0))) | $(thousands $((m1 - m0))) | $(python3 -c "print(f'{100 * ($h1 - $h0) / max(1, $h1 - $h0 + $m1 - $m0):.1f} %')") | ${secs} s | $(load) |")
done
rss_rows+=("| after $ROUNDS re-sync rounds of $(thousands "$RESYNC") objects | – | – | $(thousands "$(metric "$ENTRIES")") | $(rss) | $(load) |")

COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
echo "Webhook churn: $(nproc) cores, $(date -u '+%F %H:%M') UTC, mansign at $COMMIT, load before: $LOAD_BEFORE."
echo "Verification cache bounds (src/verify/cache.rs): 16,384 entries, 8 MiB of signed documents; FIFO eviction."
echo
echo "| phase | time | reviews/s (python client, 4 connections) | cache entries | server RSS | load |"
echo "|---|---:|---:|---:|---|---|"
printf '%s\n' "${rss_rows[@]}"
echo
echo "| hit path ($HOT hot objects, wrk ${SECONDS_PER_RUN} s, $CONNECTIONS connections) | requests | rps | p50 | p99 | max | errors | cache hits / misses | load |"
echo "|---|---:|---:|---:|---:|---:|---:|---|---|"
printf '%s\n' "${hit_rows[@]}"
echo
echo "| GitOps re-sync round ($(thousands "$RESYNC") objects, same order) | reviews | cache hits | misses | hit ratio | time | load |"
echo "|---|---:|---:|---:|---:|---:|---|"
printf '%s\n' "${resync_rows[@]}"
if [ -s "$WORK/wrk.err" ]; then echo; echo "wrk stderr (first lines):"; head -5 "$WORK/wrk.err"; fi
