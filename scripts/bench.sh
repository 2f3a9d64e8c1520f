#!/usr/bin/env bash
# End-to-end benchmarks (release build, loopback Sigstore stack), as Markdown tables for
# BENCHMARKS.md, each figure with the machine load (`uptime`) it was taken under:
#
# 1. keyless signing of N files (default 1000): one invocation (one token, one Fulcio
#    certificate, concurrent Rekor uploads) versus one invocation per file (timed on the
#    first 100 files; the ratio is per file);
# 2. `verify -f dir/` of the N batch-signed files (one certificate) on every core and on one
#    core (`taskset -c 0`), and of the 100 files signed one per invocation (one certificate
#    each) on one core;
# 3. whole process: `mansign verify` of one keyless manifest, `mansign --version`;
# 4. side by side with sigstore-python (the stack's venv) and sigstore-js (installed into
#    target/bench-peers/ with npm on first use) verifying the *same* production bundle
#    (sigstore-conformance happy-path v0.3, offline, the same trusted root): whole process,
#    and in-process per verification (mansign's from `cargo bench --bench verify`);
# 5. the targets of issue 26 as ratios to the ECDSA floor measured in the same run
#    (`cargo bench --bench verify`: one P-256 check, one P-384 check), each next to its
#    target, with the start of a minimal Rust binary built with the same release profile
#    (scripts/bench-minimal/);
# 6. side by side with the real peers, kubectl-sigstore and `kubectl-kyverno apply`, signing
#    and verifying 1, 100 and 1,000 files with a key and keylessly (scripts/bench-peers.sh);
# 7. the same verifications counted in instructions by callgrind, whatever the load
#    (scripts/bench-instructions.sh).
#
#   scripts/bench.sh [N] [--ratios-only]   (--ratios-only: tables 1 to 5 and 7, without the
#                                          bounds, the webhook and the peers, minutes not an hour)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-1000}
RATIOS_ONLY=0
[ "${2:-}" != --ratios-only ] || RATIOS_ONLY=1
SINGLE=$(( N < 100 ? N : 100 ))
ROOT_DIR=$PWD

bash scripts/sigstore-stack/install.sh >/dev/null
cargo build --locked --release --quiet
MANSIGN="$PWD/target/release/mansign"
cargo build --release --quiet --manifest-path scripts/bench-minimal/Cargo.toml \
  --target-dir target/bench-minimal
MINIMAL="$PWD/target/bench-minimal/release/bench-minimal"
PY="$PWD/scripts/sigstore-stack/.venv/bin/python"
PEERS="$PWD/target/bench-peers"
if [ ! -d "$PEERS/node_modules/sigstore" ]; then
  npm install --silent --prefix "$PEERS" sigstore@5.0.1 >/dev/null
fi

# shellcheck source=scripts/bench-lib.sh
. scripts/bench-lib.sh
bench_stack_start

load() { uptime | sed 's/.*load average: //; s/,.*//'; }
# median wall time in ms of RUNS runs of a command (output discarded)
median_ms() {
  local runs=$1
  shift
  python3 - "$runs" "$@" <<'PY'
import statistics, subprocess, sys, time
runs, cmd = int(sys.argv[1]), sys.argv[2:]
times = []
for _ in range(runs):
    t = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    times.append((time.perf_counter() - t) * 1000)
print(f"{statistics.median(times):.1f}")
PY
}

bench_exceptions "$WORK/in" "$N"

common=(--fulcio-url "$SIGSTORE_FULCIO_URL" --rekor-url "$SIGSTORE_REKOR_URL"
        --identity-token "@$SIGSTORE_ID_TOKEN_FILE" --trusted-root "$SIGSTORE_TRUSTED_ROOT")
identity=(--trusted-root "$SIGSTORE_TRUSTED_ROOT" --certificate-identity "$SIGSTORE_IDENTITY"
          --certificate-oidc-issuer "$SIGSTORE_OIDC_ISSUER")
now_ms() { date +%s%3N; }
stat() { curl -s "$SIGSTORE_STATS_FULCIO_URL" | python3 -c "import json,sys; d=json.load(sys.stdin); print(d['$1'])"; }

# 1. signing
curl -s -X POST "${SIGSTORE_STATS_FULCIO_URL}/reset" >/dev/null
sign_load=$(load)
t0=$(now_ms)
"$MANSIGN" sign -f "$WORK/in/" -o "$WORK/batch/" "${common[@]}" 2>/dev/null
t1=$(now_ms)
batch_ms=$((t1 - t0)); batch_certs=$(stat fulcio_signing_cert_requests); batch_entries=$(stat rekor_entries_created)

curl -s -X POST "${SIGSTORE_STATS_FULCIO_URL}/reset" >/dev/null
mkdir -p "$WORK/single"
t0=$(now_ms)
for f in $(find "$WORK/in" -name '*.yaml' | sort | sed -n "1,${SINGLE}p"); do
  "$MANSIGN" sign -f "$f" -o "$WORK/single/$(basename "$f")" "${common[@]}" 2>/dev/null
done
t1=$(now_ms)
single_ms=$((t1 - t0)); single_certs=$(stat fulcio_signing_cert_requests)
ratio=$(python3 -c "print(f'{($single_ms / $SINGLE * $N) / $batch_ms:.1f}')")

# 2. verify -f dir/ (every file must verify: a failed run is not a timing)
"$MANSIGN" verify -f "$WORK/batch/" "${identity[@]}" >/dev/null
"$MANSIGN" verify -f "$WORK/single/" "${identity[@]}" >/dev/null
v_all_load=$(load); v_all=$(median_ms 7 "$MANSIGN" verify -f "$WORK/batch/" "${identity[@]}")
v_one_load=$(load); v_one=$(median_ms 7 taskset -c 0 "$MANSIGN" verify -f "$WORK/batch/" "${identity[@]}")
v_own_load=$(load); v_own=$(median_ms 7 taskset -c 0 "$MANSIGN" verify -f "$WORK/single/" "${identity[@]}")
per_one=$(python3 -c "print(f'{$v_one * 1000 / $N:.0f}')")
per_own=$(python3 -c "print(f'{$v_own * 1000 / $SINGLE:.0f}')")

# 3. whole process, one manifest
first=$(find "$WORK/batch" -name '*.yaml' | sort | sed -n 1p)
p_load=$(load)
p_verify=$(median_ms 31 "$MANSIGN" verify -f "$first" "${identity[@]}")
p_version=$(median_ms 31 "$MANSIGN" --version)
p_minimal=$(median_ms 31 "$MINIMAL")

# 4. peers on the same production bundle, offline, the same trusted root
CASE="$ROOT_DIR/testdata/sigstore-conformance/bundle-verify/happy-path-v0.3"
BUNDLE="$CASE/bundle.sigstore.json"
ARTIFACT="$ROOT_DIR/testdata/sigstore-conformance/bundle-verify/a.txt"
PROD_ROOT="$ROOT_DIR/testdata/sigstore-trust-roots/production/trusted_root.json"
BEACON="https://github.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/.github/workflows/extremely-dangerous-oidc-beacon.yml@refs/heads/main"
GHA="https://token.actions.githubusercontent.com"
cat > "$WORK/peer.py" <<'PY'
import sys, time
from sigstore.models import Bundle, TrustedRoot
from sigstore.verify import Verifier, policy
bundle_path, artifact_path, root_path, identity, issuer, runs = sys.argv[1:7]
verifier = Verifier(trusted_root=TrustedRoot.from_file(root_path))
bundle = Bundle.from_json(open(bundle_path, "rb").read())
artifact = open(artifact_path, "rb").read()
who = policy.Identity(identity=identity, issuer=issuer)
verifier.verify_artifact(artifact, bundle, who)
runs = int(runs)
if runs:
    t = time.perf_counter()
    for _ in range(runs):
        verifier.verify_artifact(artifact, bundle, who)
    print(f"{(time.perf_counter() - t) / runs * 1e6:.0f}")
PY
cat > "$WORK/peer.js" <<'JS'
const fs = require("fs");
const { bundleFromJSON } = require("@sigstore/bundle");
const { TrustedRoot } = require("@sigstore/protobuf-specs");
const { Verifier, toSignedEntity, toTrustMaterial } = require("@sigstore/verify");
const [bundlePath, artifactPath, rootPath, identity, issuer, runs] = process.argv.slice(2);
const root = TrustedRoot.fromJSON(JSON.parse(fs.readFileSync(rootPath)));
const verifier = new Verifier(toTrustMaterial(root));
const bundle = bundleFromJSON(JSON.parse(fs.readFileSync(bundlePath)));
const artifact = fs.readFileSync(artifactPath);
const policy = { subjectAlternativeName: identity, extensions: { issuer } };
verifier.verify(toSignedEntity(bundle, artifact), policy);
const n = Number(runs);
if (n) {
  const t = process.hrtime.bigint();
  for (let i = 0; i < n; i++) verifier.verify(toSignedEntity(bundle, artifact), policy);
  console.log(Math.round(Number(process.hrtime.bigint() - t) / n / 1000));
}
JS
export NODE_PATH="$PEERS/node_modules"
m_cmd=("$MANSIGN" verify-bundle --bundle "$BUNDLE" --certificate-identity "$BEACON"
       --certificate-oidc-issuer "$GHA" --trusted-root "$PROD_ROOT" "$ARTIFACT")
py_cmd=("$PY" "$WORK/peer.py" "$BUNDLE" "$ARTIFACT" "$PROD_ROOT" "$BEACON" "$GHA" 0)
js_cmd=(node "$WORK/peer.js" "$BUNDLE" "$ARTIFACT" "$PROD_ROOT" "$BEACON" "$GHA" 0)
# each must verify before it is timed
"${m_cmd[@]}" >/dev/null; "${py_cmd[@]}"; "${js_cmd[@]}"
py_cli=("$ROOT_DIR/scripts/sigstore-stack/.venv/bin/sigstore" verify identity --offline
        --bundle "$BUNDLE" --cert-identity "$BEACON" --cert-oidc-issuer "$GHA" "$ARTIFACT")
if "${py_cli[@]}" >/dev/null 2>&1; then py_cli_ok=1; else py_cli_ok=0; fi
w_load=$(load)
w_m=$(median_ms 21 "${m_cmd[@]}")
w_py=$(median_ms 7 "${py_cmd[@]}")
w_js=$(median_ms 7 "${js_cmd[@]}")
w_pycli=n/a
[ "$py_cli_ok" = 1 ] && w_pycli=$(median_ms 7 "${py_cli[@]}")
i_load=$(load)
i_py=$("$PY" "$WORK/peer.py" "$BUNDLE" "$ARTIFACT" "$PROD_ROOT" "$BEACON" "$GHA" 200)
i_js=$(node "$WORK/peer.js" "$BUNDLE" "$ARTIFACT" "$PROD_ROOT" "$BEACON" "$GHA" 100)
# sigstore-python's own ECDSA (OpenSSL through `cryptography`): what its figure is made of.
py_ecdsa=$("$PY" - <<'PY'
import time
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
out = []
for curve, digest in ((ec.SECP256R1(), hashes.SHA256()), (ec.SECP384R1(), hashes.SHA384())):
    key = ec.generate_private_key(curve)
    sig = key.sign(b"m" * 64, ec.ECDSA(digest))
    pub = key.public_key()
    runs = []
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(200):
            pub.verify(sig, b"m" * 64, ec.ECDSA(digest))
        runs.append((time.perf_counter() - t) / 200 * 1e6)
    out.append(f"{sorted(runs)[2]:.1f}")
print(" ".join(out))
PY
)
read -r py_p256 py_p384 <<<"$py_ecdsa"
# In process (criterion, one thread): the ECDSA floor and the paths it bounds, in one run.
# Each figure is criterion's median point estimate (target/criterion/<id>/new/estimates.json)
# of a benchmark measured by this run; one that benches/verify.rs lacks is "not measured".
BENCHES='keyless/cached_certificate|keyless/fresh_certificate|key/p256_signature_only|floor/p384_signature_only|bundle/production_v0.3'
c_load=$(load)
touch "$WORK/criterion-start"
cargo bench --locked --quiet --bench verify -- --noplot "$BENCHES" >"$WORK/criterion.log" 2>&1 ||
  { echo "cargo bench --bench verify failed:" >&2; tail -20 "$WORK/criterion.log" >&2; exit 1; }
python3 - "$ROOT_DIR/target/criterion" "$WORK/criterion-start" >"$WORK/criterion.env" <<'PY'
import json, os, sys
from pathlib import Path
root, since = Path(sys.argv[1]), os.path.getmtime(sys.argv[2])
names = {"keyless/cached_certificate": "c_cached", "keyless/fresh_certificate": "c_fresh",
         "key/p256_signature_only": "c_p256", "floor/p384_signature_only": "c_p384",
         "bundle/production_v0.3": "c_bundle"}
found = {}
for meta in root.glob("**/new/benchmark.json"):
    if meta.stat().st_mtime < since:
        continue  # left by an earlier run: not measured now
    full_id = json.loads(meta.read_text()).get("full_id")
    if full_id in names:
        est = json.loads((meta.parent / "estimates.json").read_text())
        found[names[full_id]] = est["median"]["point_estimate"] / 1000  # ns -> µs
for var in names.values():
    print(f"{var}={found[var]:.2f}" if var in found else f"{var}=")
PY
c_cached='' c_fresh='' c_p256='' c_p384='' c_bundle=''
# shellcheck disable=SC1091
. "$WORK/criterion.env"
[ -n "$c_bundle" ] || { echo "bundle/production_v0.3 was not measured" >&2; exit 1; }
i_m=$(python3 -c "print(f'{$c_bundle:.0f}')")
r() { python3 -c "print(f'{$1 / $2:.1f}')"; }

cat <<TABLE
Machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB; $(date -u +%F); mansign $("$MANSIGN" --version | awk '{print $2}'),
sigstore-python $("$PY" -c 'import sigstore; print(sigstore.__version__)'), sigstore-js $(node -p "require('$PEERS/node_modules/sigstore/package.json').version"), node $(node --version).
Load average (1 min) next to each figure.

| workload | result | load |
|---|---|---|
| keyless signing, $N files, one invocation | ${batch_ms} ms ($batch_certs certificate, $batch_entries Rekor entries) | $sign_load |
| keyless signing, one invocation per file ($SINGLE files) | ${single_ms} ms ($single_certs certificates) | $sign_load |
| batch vs one invocation per file, per file | ${ratio}× | |
| \`verify -f dir/\`, $N batch-signed manifests (one certificate), all cores | ${v_all} ms wall | $v_all_load |
| the same on one core (\`taskset -c 0\`) | ${v_one} ms: ${per_one} µs per manifest | $v_one_load |
| \`verify -f dir/\`, $SINGLE manifests with a certificate each, one core | ${v_own} ms: ${per_own} µs per manifest | $v_own_load |
| \`mansign verify\` of one keyless manifest, whole process | ${p_verify} ms | $p_load |
| \`mansign --version\`, whole process | ${p_version} ms | $p_load |

| production bundle (happy-path v0.3), offline | mansign | sigstore-python | sigstore-js | load |
|---|---|---|---|---|
| whole process (median) | ${w_m} ms | ${w_py} ms (script), ${w_pycli} ms (CLI) | ${w_js} ms | $w_load |
| in-process, per verification | ${i_m} µs | ${i_py} µs ($(r "$i_py" "$i_m")×) | ${i_js} µs ($(r "$i_js" "$i_m")×) | $i_load |
| ECDSA verify, in process (each side's library) | P-256 ${c_p256} µs, P-384 ${c_p384} µs (aws-lc) | P-256 ${py_p256} µs, P-384 ${py_p384} µs (OpenSSL, \`cryptography\`) | | $i_load |
| whole process, ratio to mansign | 1 | $(r "$w_py" "$w_m")× | $(r "$w_js" "$w_m")× | |
TABLE

# 5. The targets of issue 26: ratios to the ECDSA floor of this run, each next to its target.
echo
python3 - "$(nproc)" "$N" "$c_p256" "$c_p384" "$c_cached" "$c_fresh" "$v_all" "$p_verify" \
  "$p_version" "$p_minimal" "$i_m" "$i_py" "$c_load" "$v_all_load" "$p_load" "$i_load" <<'PY'
import sys
a = sys.argv[1:]
# (the ECDSA figures of both sides are in the table above)
def num(s):
    return float(s) if s.strip() else None
cores, n = int(a[0]), int(a[1])
p256, p384, cached, fresh = (num(x) for x in a[2:6])
v_all, p_verify, p_version, p_minimal, i_m, i_py = (float(x) for x in a[6:12])
c_load, v_load, p_load, i_load = a[12:16]

def us(x):
    return "not measured" if x is None else (f"{x:,.0f} µs" if x >= 100 else f"{x:.1f} µs")
def ms(x):
    return f"{x:,.1f} ms"
def row(workload, measured, floor, ratio, target, limit, load, at_most=True):
    if ratio is None:
        verdict, shown = "not measured", "–"
    else:
        verdict = "met" if (ratio <= limit if at_most else ratio >= limit) else "**missed**"
        shown = f"{ratio:.2f}×"
    print(f"| {workload} | {measured} | {floor} | {shown} | {target} | {verdict} | {load} |")

print("| workload | measured | floor (measured this run) | ratio | target | | load (1 min) |")
print("|---|---|---|---|---|---|---|")
f_cached = None if p256 is None else 2 * p256
row("keyless manifest, certificate already vouched for, in process", us(cached),
    f"2 × P-256 = {us(f_cached)}", None if None in (cached, f_cached) else cached / f_cached,
    "≤ 1.25 × floor", 1.25, c_load)
if p256 is None or p384 is None:
    f_fresh = None
    f_text = "4 × P-256 + 1 × P-384 (floor P-384: not measured)"
else:
    f_fresh = 4 * p256 + p384
    f_text = f"4 × P-256 + 1 × P-384 = 4 × {us(p256)} + {us(p384)} = {us(f_fresh)}"
row("keyless manifest, fresh certificate, in process", us(fresh), f_text,
    None if None in (fresh, f_fresh) else fresh / f_fresh, "≤ 1.25 × floor", 1.25, c_load)
f_batch = None if p256 is None else n * 2 * p256 / cores / 1000
row(f"{n:,} batch-signed files, `verify -f dir/`, {cores} cores, whole process", ms(v_all),
    f"{n:,} × 2 × P-256 / {cores} cores = "
    + ("not measured" if f_batch is None else ms(f_batch)),
    None if f_batch is None else v_all / f_batch, "≤ 1.5 × floor", 1.5, v_load)
row("one keyless manifest, whole process: start (`mansign --version`)", ms(p_version),
    f"minimal Rust binary, same release profile: {ms(p_minimal)}", p_version / p_minimal,
    "≤ 2 × minimal binary", 2.0, p_load)
added = p_verify - p_version
row("one keyless manifest, whole process: what `verify` adds to the start",
    f"{ms(p_verify)} − {ms(p_version)} = {ms(added)}",
    f"fresh keyless in process: {us(fresh)}",
    None if fresh is None else added * 1000 / fresh, "≤ 1.3 × fresh in process", 1.3, p_load)
# Issue 40's target for one file: the whole process within twice the start plus the fresh
# in-process verification.
bound = None if fresh is None else 2 * p_version + fresh / 1000
row("one keyless manifest, whole process (issue 40)", ms(p_verify),
    "2 × start + fresh in process = "
    + ("not measured" if bound is None else f"2 × {ms(p_version)} + {us(fresh)} = {ms(bound)}"),
    None if bound is None else p_verify / bound, "≤ 1 × that", 1.0, p_load)
# The most this ratio can be while mansign does the checks a fresh bundle needs: sigstore-
# python's figure over mansign's fresh floor.
ceiling = "–" if f_fresh is None else \
    f"at mansign's fresh floor ({us(f_fresh)}) it would be {i_py / f_fresh:.2f}×"
row("production bundle (happy-path v0.3), in process: sigstore-python ÷ mansign",
    f"mansign {us(i_m)}, sigstore-python {us(i_py)}", ceiling, i_py / i_m, "≥ 4×", 4.0,
    i_load, at_most=False)
PY

if [ "$RATIOS_ONLY" = 1 ]; then
  echo
  MANSIGN="$MANSIGN" bash scripts/bench-instructions.sh "$N"
  exit 0
fi

# The manifest reader's resource bounds (hostile inputs of issue 7): a second table.
echo
bash scripts/bounds.sh

# The admission webhook under load (wrk on loopback): a third table.
echo
bash scripts/bench-webhook.sh

# mansign beside kubectl-sigstore and the Kyverno CLI (issue 40): a fourth table.
echo
MANSIGN="$MANSIGN" bash scripts/bench-peers.sh

# The same work in instructions (callgrind), which load does not change (issue 40): a fifth table.
echo
MANSIGN="$MANSIGN" bash scripts/bench-instructions.sh "$N"
