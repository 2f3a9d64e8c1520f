#!/usr/bin/env bash
# Resource bounds of the manifest reader: builds release, generates each hostile (and a few
# legitimate) inputs of issue 7 in a temporary directory, and runs
# `mansign verify -f FILE --key K` on each under /usr/bin/time -v. Prints a Markdown table
# (exit code, elapsed time, peak RSS, first line of the verdict) for BENCHMARKS.md.
# Target: every input up to the 32 MiB file limit is refused or verified within 1 s and
# 256 MiB on the project's 2-core machine.
#
#   scripts/bounds.sh
set -euo pipefail
cd "$(dirname "$0")/.."
command -v /usr/bin/time >/dev/null || { echo "needs /usr/bin/time (Debian package: time)" >&2; exit 2; }

cargo build --locked --release --quiet
MANSIGN="$PWD/target/release/mansign"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
COSIGN_PASSWORD= "$MANSIGN" generate-key-pair --output-key-prefix "$WORK/k" </dev/null >/dev/null 2>&1

python3 - "$WORK" <<'PY'
import json, os, sys
work = sys.argv[1]
MiB = 1024 * 1024
head = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {}\n"

def write(name, text):
    with open(os.path.join(work, name), "w") as f:
        f.write(text)

# A 1,000,000-character key above 4,000 children (a complex key: a plain implicit key may
# not exceed 1024 characters), as YAML and as JSON.
children = "".join(f"    c{i}: v\n" for i in range(4000))
write("01-key-1m-4000-children.yaml",
      head.format("big-key") + "data:\n  ? " + "k" * 1_000_000 + "\n  :\n" + children)
write("02-key-1m-4000-children.json", json.dumps({
    "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big-key"},
    "data": {"k" * 1_000_000: {f"c{i}": "v" for i in range(4000)}}}))
# Flow nesting.
for n, name in [(100_000, "03-flow-nesting-100k"), (500_000, "04-flow-nesting-500k")]:
    write(name + ".yaml", "[" * n + "1" + "]" * n)
write("05-flow-nesting-100k-json.json", "{\"a\":" + "[" * 100_000 + "]" * 100_000 + "}")
# Flat flow sequences: 29.6 MiB in one document, and 2.9 MiB (under the document limit).
def flat(size):
    body = "1, " * ((size - 40) // 3)
    return head.format("flat") + "data: [" + body + "1]\n"
write("06-flat-flow-29.6MiB.yaml", flat(int(29.6 * MiB)))
write("07-flat-flow-2.9MiB.yaml", flat(int(2.9 * MiB)))
# 32 MiB of many documents: dense key/values, and Deployment-like objects.
def dense(i):
    return head.format(f"cm-{i}") + "data:\n" + "".join(f"  k{j}: v{j}\n" for j in range(2400))
docs, size, i = [], 0, 0
while size < 32 * MiB - 40_000:
    d = dense(i); docs.append(d); size += len(d) + 4; i += 1
write("08-32MiB-{}-dense-documents.yaml".format(len(docs)), "---\n".join(docs))
def deployment(i):
    return f"""apiVersion: apps/v1
kind: Deployment
metadata:
  name: app-{i}
  namespace: team-{i % 50}
  labels: {{app: app-{i}, tier: backend, owner: team-{i % 50}}}
  annotations:
    description: "{'Deployment of a service that does things. ' * 20}"
spec:
  replicas: 3
  selector:
    matchLabels: {{app: app-{i}}}
  template:
    metadata:
      labels: {{app: app-{i}, tier: backend}}
    spec:
      containers:
""" + "".join(f"""      - name: c{c}
        image: registry.example.com/team/app-{i}-{c}:1.2.{c}
        args: ["--port=8080", "--log-level=info", "--config=/etc/app/config.yaml"]
        ports:
        - {{containerPort: 8080, name: http}}
        env:
""" + "".join(f"        - {{name: VAR_{e}, value: \"value-{e}-{'x' * 40}\"}}\n" for e in range(12)) + f"""        resources:
          requests: {{cpu: 100m, memory: 128Mi}}
          limits: {{cpu: \"1\", memory: 512Mi}}
        readinessProbe:
          httpGet: {{path: /healthz, port: 8080}}
""" for c in range(4))
docs, size, i = [], 0, 0
while True:
    d = deployment(i)
    if size + len(d) + 4 > 32 * MiB or len(docs) == 1000:
        break
    docs.append(d); size += len(d) + 4; i += 1
write("09-{}-deployments.yaml".format(len(docs)), "---\n".join(docs))
# One document of 3 MiB + 1 byte.
def sized(total):
    prefix = head.format("sized") + "data:\n  blob: "
    return prefix + "x" * (total - len(prefix) - 1) + "\n"
write("10-document-3MiB+1.yaml", sized(3 * MiB + 1))
write("11-document-3MiB.yaml", sized(3 * MiB))
# Billion laughs.
bomb = head.format("lol") + "data:\n  a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n"
for n in range(1, 12):
    bomb += f"  a{n}: &a{n} [" + ", ".join([f"*a{n-1}"] * 10) + "]\n"
write("12-alias-bomb.yaml", bomb)
# A legitimate 500 KiB Grafana dashboard (pretty-printed JSON) in a literal block.
panels = [{"id": p, "type": "timeseries", "title": f"Panel {p} [rate]",
           "targets": [{"expr": f"sum(rate(http_requests_total{{job=\"app-{p}\"}}[5m])) by (code)"}],
           "gridPos": {"h": 8, "w": 12, "x": 0, "y": p * 8}} for p in range(1700)]
dash = json.dumps({"title": "Big", "panels": panels}, indent=2)
write("13-grafana-500KiB-literal-block.yaml", head.format("dashboards") + "data:\n  big.json: |\n"
      + "".join("    " + line + "\n" for line in dash.splitlines()))
# The shapes that cost the most memory per node: one-entry maps and one-item lists.
write("14-one-entry-maps.yaml", "---\n".join(["kind: X\nitems:\n" + "- a: 1\n" * 80000] * 13))
write("15-one-item-lists.yaml", "---\n".join(["kind: X\nitems:\n" + "- [a]\n" * 120000] * 13))
PY

printf '| input | size | exit | elapsed | peak RSS | verdict |\n|---|---:|---:|---:|---:|---|\n'
for f in "$WORK"/[0-9]*; do
  name=$(basename "$f")
  size=$(python3 -c "import os,sys; s=os.path.getsize(sys.argv[1]); print(f'{s/1048576:.2f} MiB')" "$f")
  set +e
  /usr/bin/time -v -o "$WORK/time" "$MANSIGN" verify -f "$f" --key "$WORK/k.pub" >"$WORK/out" 2>&1
  code=$?
  set -e
  elapsed=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$WORK/time")
  rss=$(awk -F': ' '/Maximum resident set size/ {printf "%.0f MiB", $2/1024}' "$WORK/time")
  verdict=$(head -c 300 "$WORK/out" | head -n 1 | sed "s|$WORK/||; s/|/\\\\|/g" | cut -c1-150)
  printf '| %s | %s | %s | %s | %s | %s |\n' "$name" "$size" "$code" "$elapsed" "$rss" "$verdict"
done
