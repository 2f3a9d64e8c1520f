#!/usr/bin/env bash
# Regenerates testdata/yaml-readings/kubectl-readings.json: how kubectl reads each plain scalar
# of testdata/yaml-readings/scalars.json, as a value and as a mapping key. Needs `kubectl` on
# PATH (no cluster: `kubectl annotate --local` decodes the file exactly as `kubectl apply -f`
# does and prints the object it would send). The tests read the recorded file, never kubectl.
#
#   scripts/kubectl-readings.sh
set -euo pipefail
cd "$(dirname "$0")/.."
command -v kubectl >/dev/null || { echo "kubectl is needed to regenerate the readings" >&2; exit 2; }
python3 - <<'PY'
import json, subprocess, tempfile, os

scalars = json.load(open("testdata/yaml-readings/scalars.json"))
version = json.loads(subprocess.run(["kubectl", "version", "--client", "-o", "json"],
                                    capture_output=True, text=True).stdout)["clientVersion"]["gitVersion"]
head = "apiVersion: example.com/v1\nkind: Probe\nmetadata:\n  name: p\n"

def read(doc):
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(doc)
    try:
        out = subprocess.run(["kubectl", "annotate", "--local", "-f", f.name, "probe=1", "-o", "json"],
                             capture_output=True, text=True)
    finally:
        os.unlink(f.name)
    if out.returncode != 0:
        return None
    return json.loads(out.stdout)

readings = {}
for s in scalars:
    entry = {}
    obj = read(head + "value: " + s + "\n")
    entry["value"] = {"json": obj["value"]} if obj is not None and "value" in obj else (
        {"json": None} if obj is not None else {"error": True})
    if s:
        obj = read(head + "keys:\n  " + s + ": x\n")
        entry["key"] = {"string": next(iter(obj["keys"]))} if obj is not None else {"error": True}
    readings[s] = entry

with open("testdata/yaml-readings/kubectl-readings.json", "w") as f:
    json.dump({"kubectl": version, "readings": readings}, f, indent=1, ensure_ascii=False)
    f.write("\n")
print(f"{len(readings)} scalars read by kubectl {version}")
PY
