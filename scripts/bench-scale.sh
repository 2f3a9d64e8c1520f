#!/usr/bin/env bash
# Scale benchmark (issue 26): for each N, N small manifests (ConfigMaps and Deployments, one
# per file) are signed keylessly in one batch on the loopback Sigstore stack
# (`sign -f in/ -o out/`: one identity token, one Fulcio certificate, N Rekor entries) and
# verified (`verify -f out/`, offline, every core). Wall time and peak RSS of each process
# are printed as a Markdown table, with the 1-minute load average, and plotted against N
# (log x) into docs/bench-scale.svg by scripts/bench-scale-plot.py.
#
#   scripts/bench-scale.sh [N ...]        (default: 1000 10000 100000)
#
# MANSIGN=path/to/mansign skips the release build. Each N's files are deleted before the
# next N (100,000 signed files take about 400 MiB); the run refuses to start an N without
# about 8 KiB of free disk per file.
set -euo pipefail
cd "$(dirname "$0")/.."
SIZES=("$@")
[ ${#SIZES[@]} -gt 0 ] || SIZES=(1000 10000 100000)

bash scripts/sigstore-stack/install.sh >/dev/null
# shellcheck source=scripts/bench-lib.sh
. scripts/bench-lib.sh
bench_mansign
bench_stack_start

sign_flags=(--fulcio-url "$SIGSTORE_FULCIO_URL" --rekor-url "$SIGSTORE_REKOR_URL"
            --identity-token "@$SIGSTORE_ID_TOKEN_FILE" --trusted-root "$SIGSTORE_TRUSTED_ROOT")
identity=(--trusted-root "$SIGSTORE_TRUSTED_ROOT" --certificate-identity "$SIGSTORE_IDENTITY"
          --certificate-oidc-issuer "$SIGSTORE_OIDC_ISSUER")
load() { cut -d' ' -f1 /proc/loadavg; }

# Runs a command (output discarded, a failure ends the benchmark) and prints
# "<wall seconds> <peak RSS KiB>": /usr/bin/time when present, else the rusage of the child.
measure() {
  python3 - "$@" <<'PY'
import os, resource, shutil, subprocess, sys, tempfile, time
cmd = sys.argv[1:]
gnu_time = shutil.which("time", path="/usr/bin")
with tempfile.NamedTemporaryFile("r") as out:
    if gnu_time:
        cmd = [gnu_time, "-o", out.name, "-f", "%M"] + cmd
    t = time.perf_counter()
    done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - t
    if done.returncode != 0:
        sys.exit(f"{' '.join(sys.argv[1:4])}... failed ({done.returncode}): "
                 + done.stderr.decode(errors="replace")[-2000:])
    rss = int(out.read().split()[-1]) if gnu_time else \
        resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(f"{wall:.3f} {rss}")
PY
}

# N files, one object each: ConfigMaps and Deployments alternating, 100 per directory.
generate() {
  python3 - "$1" "$2" <<'PY'
import os, sys
out, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    d = os.path.join(out, f"team-{i // 100:04}")
    if i % 100 == 0:
        os.makedirs(d, exist_ok=True)
    if i % 2:
        text = f"""apiVersion: apps/v1
kind: Deployment
metadata:
  name: app-{i}
  namespace: team-{i // 100}
  labels: {{app: app-{i}}}
spec:
  replicas: 2
  selector:
    matchLabels: {{app: app-{i}}}
  template:
    metadata:
      labels: {{app: app-{i}}}
    spec:
      containers:
      - name: app
        image: registry.example/app:{i}
        ports:
        - containerPort: 8080
"""
    else:
        text = f"""apiVersion: v1
kind: ConfigMap
metadata:
  name: config-{i}
  namespace: team-{i // 100}
data:
  setting: "value-{i}"
  replicas: "{i % 7}"
"""
    with open(os.path.join(d, f"object-{i:06}.yaml"), "w") as f:
        f.write(text)
PY
}

RESULTS="$WORK/results.jsonl"
: >"$RESULTS"
for n in "${SIZES[@]}"; do
  free_kib=$(df -Pk "$WORK" | awk 'NR == 2 { print $4 }')
  if [ "$free_kib" -lt $(( n * 8 + 1048576 )) ]; then
    echo "bench-scale.sh: $n files need about $(( n * 8 / 1024 )) MiB of disk; $(( free_kib / 1024 )) MiB free" >&2
    exit 1
  fi
  rm -rf "$WORK/in" "$WORK/out"
  generate "$WORK/in" "$n"
  sign_load=$(load)
  read -r sign_s sign_kib < <(measure "$MANSIGN" sign -f "$WORK/in/" -o "$WORK/out/" "${sign_flags[@]}")
  signed=$(find "$WORK/out" -name '*.yaml' | wc -l)
  [ "$signed" -eq "$n" ] || { echo "bench-scale.sh: $signed signed files for $n inputs" >&2; exit 1; }
  bytes=$(du -sk "$WORK/out" | cut -f1)
  verify_load=$(load)
  read -r verify_s verify_kib < <(measure "$MANSIGN" verify -f "$WORK/out/" "${identity[@]}")
  printf '{"n": %d, "sign_s": %s, "sign_kib": %d, "sign_load": "%s", "verify_s": %s, "verify_kib": %d, "verify_load": "%s", "signed_kib": %d}\n' \
    "$n" "$sign_s" "$sign_kib" "$sign_load" "$verify_s" "$verify_kib" "$verify_load" "$bytes" >>"$RESULTS"
  rm -rf "$WORK/in" "$WORK/out"
done

COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
echo "Scale: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB; $(date -u '+%F %H:%M') UTC; mansign $("$MANSIGN" --version | awk '{print $2}') at $COMMIT; 1-minute load next to each figure."
echo
python3 - "$RESULTS" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print("| files | signed size | `sign -f in/ -o out/` (keyless, 1 certificate) | peak RSS | per file | load "
      "| `verify -f out/` | peak RSS | per file | load |")
print("|---:|---:|---:|---:|---:|---|---:|---:|---:|---|")
for r in rows:
    n = r["n"]
    print(f"| {n:,} | {r['signed_kib'] / 1024:,.0f} MiB | {r['sign_s']:,.2f} s | {r['sign_kib'] / 1024:,.1f} MiB "
          f"| {r['sign_s'] / n * 1e6:,.0f} µs | {r['sign_load']} | {r['verify_s']:,.2f} s "
          f"| {r['verify_kib'] / 1024:,.1f} MiB | {r['verify_s'] / n * 1e6:,.0f} µs | {r['verify_load']} |")
PY
python3 scripts/bench-scale-plot.py "$RESULTS" docs/bench-scale.svg \
  "$(date -u +%F), $COMMIT, $(nproc) cores"
echo
echo "Plot: docs/bench-scale.svg"
