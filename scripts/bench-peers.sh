#!/usr/bin/env bash
# mansign side by side with the real peers (issue 40, item 1), as a Markdown table for
# BENCHMARKS.md: kubectl-sigstore (the version Kyverno v1.19.0 pins) and the Kyverno v1.19.0
# CLI (`kubectl-kyverno apply` of a `validate.manifests` policy), the binaries the peer tests
# run (scripts/peers.sh, from the Go tools cache), against a release build of mansign.
#
# For each size (default 1, 100 and 1,000 PolicyExceptions in a directory), with a cosign
# key pair and keylessly on the loopback Sigstore stack (the environment the peer tests give
# the peers: SIGSTORE_ROOT_FILE, SIGSTORE_REKOR_PUBLIC_KEY, the stack's Rekor URL, a dead
# proxy for anything else):
#
#   sign, key       mansign sign -f dir/ -o out/ --key          | kubectl-sigstore sign, per file
#   sign, keyless   mansign sign on the stack                   | (kubectl-sigstore signs keylessly
#                                                                  only on the public instance)
#   verify, key     mansign verify -f dir/ --key                | kubectl-sigstore verify, per file
#                   mansign verify --policy kyverno-policy.yaml | kubectl-kyverno apply --resource dir/
#   verify, keyless the same with the stack's identity          | the same, keyless entries
#
# kubectl-sigstore verifies one file per process (given a directory it exits 0 without
# verifying: docs/compatibility.md), so its rows run it once per file, as a user must. Every
# command is checked to verify (or sign) every file before it is timed. Each cell is the
# median of RUNS runs (11 for one file, 3 for 100, 1 for more) of: wall time, CPU (user +
# system of the whole process tree) and peak RSS (the largest process of the tree), with
# the 1-minute load average when the row was taken. Ratios are peer ÷ mansign; the target
# (issue 40) is at least 20× less CPU than each peer on every row.
#
#   scripts/bench-peers.sh [SIZE...]       (MANSIGN=path skips the release build)
set -euo pipefail
cd "$(dirname "$0")/.."
SIZES=("$@")
[ "${#SIZES[@]}" -gt 0 ] || SIZES=(1 100 1000)

bash scripts/sigstore-stack/install.sh >/dev/null
# shellcheck source=scripts/bench-lib.sh
. scripts/bench-lib.sh
bench_mansign
KS="" KYVERNO=""
while IFS='=' read -r name path; do
  case $name in
    kubectl-sigstore) KS=$path ;;
    kubectl-kyverno) KYVERNO=$path ;;
  esac
done < <(bash scripts/peers.sh)
[ -x "$KS" ] && [ -x "$KYVERNO" ] || { echo "bench-peers.sh: scripts/peers.sh named no kubectl-sigstore or kubectl-kyverno" >&2; exit 1; }

bench_stack_start
load() { uptime | sed 's/.*load average: //; s/,.*//'; }

# The peers' environment: HOME of their own, no ambient Sigstore settings, the stack's trust
# material as PEM files, and a dead proxy for any request that is not to loopback.
mkdir -p "$WORK/home"
python3 - "$SIGSTORE_TRUSTED_ROOT" "$WORK" <<'PY'
import base64, json, sys, textwrap
root, work = json.load(open(sys.argv[1])), sys.argv[2]
def pem(label, raw):
    body = "\n".join(textwrap.wrap(base64.b64encode(base64.b64decode(raw)).decode(), 64))
    return f"-----BEGIN {label}-----\n{body}\n-----END {label}-----\n"
with open(f"{work}/fulcio-roots.pem", "w") as f:
    for ca in root["certificateAuthorities"]:
        for c in ca["certChain"]["certificates"]:
            f.write(pem("CERTIFICATE", c["rawBytes"]))
for log, name in (("tlogs", "rekor.pub"), ("ctlogs", "ctlog.pub")):
    with open(f"{work}/{name}", "w") as f:
        f.write(pem("PUBLIC KEY", root[log][0]["publicKey"]["rawBytes"]))
PY
peer_env=(env -u SIGSTORE_ID_TOKEN -u SIGSTORE_TRUSTED_ROOT -u TUF_ROOT -u KUBECONFIG
          -u ACTIONS_ID_TOKEN_REQUEST_URL -u ACTIONS_ID_TOKEN_REQUEST_TOKEN -u GITHUB_ACTIONS
          HOME="$WORK/home" COSIGN_PASSWORD=bench
          SIGSTORE_ROOT_FILE="$WORK/fulcio-roots.pem" SIGSTORE_REKOR_PUBLIC_KEY="$WORK/rekor.pub"
          REKOR_SERVER="$SIGSTORE_REKOR_URL" HTTPS_PROXY=http://127.0.0.1:9
          HTTP_PROXY=http://127.0.0.1:9 "NO_PROXY=127.0.0.1,localhost")

(cd "$WORK" && COSIGN_PASSWORD=bench "$MANSIGN" generate-key-pair >/dev/null 2>&1)
KEY="$WORK/cosign.key" PUB="$WORK/cosign.pub"
export COSIGN_PASSWORD=bench
keyless=(--fulcio-url "$SIGSTORE_FULCIO_URL" --rekor-url "$SIGSTORE_REKOR_URL"
         --identity-token "@$SIGSTORE_ID_TOKEN_FILE" --trusted-root "$SIGSTORE_TRUSTED_ROOT")
identity=(--trusted-root "$SIGSTORE_TRUSTED_ROOT" --certificate-identity "$SIGSTORE_IDENTITY"
          --certificate-oidc-issuer "$SIGSTORE_OIDC_ISSUER")

indent() { sed "s/^/$(printf '%*s' "$1" '')/" "$2"; }
kyverno_policy() { # kyverno_policy NAME ENTRY_FILE: a validate.manifests rule for PolicyExceptions
  cat <<YAML
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: $1
spec:
  admission: true
  background: false
  rules:
  - name: signed-exceptions
    match:
      any:
      - resources:
          kinds:
          - PolicyException
    validate:
      failureAction: Enforce
      manifests:
        dryRun:
          enable: false
        attestors:
        - entries:
$(cat "$2")
YAML
}
{
  echo "          - keys:"
  echo "              publicKeys: |-"
  indent 16 "$PUB"
  echo "              signatureAlgorithm: sha256"
} >"$WORK/key-entry"
kyverno_policy key-signed "$WORK/key-entry" >"$WORK/kyverno-key.yaml"
{
  echo "          - keyless:"
  echo "              subject: $SIGSTORE_IDENTITY"
  echo "              issuer: $SIGSTORE_OIDC_ISSUER"
  echo "              roots: |-"
  indent 16 "$WORK/fulcio-roots.pem"
  echo "              rekor:"
  echo "                url: $SIGSTORE_REKOR_URL"
  echo "                pubkey: |-"
  indent 18 "$WORK/rekor.pub"
  echo "              ctlog:"
  echo "                pubkey: |-"
  indent 18 "$WORK/ctlog.pub"
} >"$WORK/keyless-entry"
kyverno_policy keyless-signed "$WORK/keyless-entry" >"$WORK/kyverno-keyless.yaml"

# each_file DIR CMD...: CMD FILE for every file of DIR, one process each, stopping at the
# first failure (what a kubectl-sigstore user runs for a directory).
cat >"$WORK/each-file" <<'SH'
#!/usr/bin/env bash
set -euo pipefail
dir=$1
shift
for f in "$dir"/*.yaml; do "$@" "$f" >/dev/null 2>&1 || { echo "failed on $f: $*" >&2; exit 1; }; done
SH
# ks-sign IN_DIR OUT_DIR: kubectl-sigstore key signing of every file (no log upload: mansign's
# key signing uploads nothing either; the pinned peer swaps the two flags, docs/compatibility.md)
cat >"$WORK/ks-sign" <<SH
#!/usr/bin/env bash
set -euo pipefail
mkdir -p "\$2"
for f in "\$1"/*.yaml; do
  ${peer_env[*]@Q} "$KS" sign -f "\$f" -k "$KEY" -o "\$2/\$(basename "\$f")" --no-tlog-upload --force >/dev/null 2>&1 ||
    { echo "kubectl-sigstore sign failed on \$f" >&2; exit 1; }
done
SH
chmod +x "$WORK/each-file" "$WORK/ks-sign"

# measure RUNS CMD...: "wall_ms cpu_ms rss_mib" medians of RUNS runs; a run that fails
# stops the benchmark (a failed run is not a timing).
measure() {
  python3 - "$@" <<'PY'
import os, statistics, subprocess, sys, time
runs, cmd = int(sys.argv[1]), sys.argv[2:]
walls, cpus, rsss = [], [], []
for _ in range(runs):
    t = time.perf_counter()
    child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    wall = (time.perf_counter() - t) * 1000
    err = child.stderr.read().decode(errors="replace")
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"measure: {' '.join(cmd)} failed:\n{err[-2000:]}")
    walls.append(wall)
    cpus.append((usage.ru_utime + usage.ru_stime) * 1000)
    rsss.append(usage.ru_maxrss / 1024)
print(f"{statistics.median(walls):.0f} {statistics.median(cpus):.0f} {statistics.median(rsss):.0f}")
PY
}
runs_for() { if [ "$1" -le 1 ]; then echo 11; elif [ "$1" -le 100 ]; then echo 3; else echo 1; fi; }

# passes_all POLICY DIR N: kubectl-kyverno apply must pass every resource (no fail, error or skip)
kyverno_passes_all() {
  local out
  out=$("${peer_env[@]}" "$KYVERNO" apply "$1" --resource "$2" 2>&1) || true
  printf '%s\n' "$out" | grep -q "pass: $3, fail: 0, warn: 0, error: 0, skip: 0" ||
    { echo "bench-peers.sh: kubectl-kyverno apply $1 did not pass all $3 of $2:" >&2; printf '%s\n' "$out" | tail -20 >&2; exit 1; }
}

rows=()
row() { # row WORK N MANSIGN_CMD_LABEL PEER_LABEL "m_wall m_cpu m_rss" "p_wall p_cpu p_rss" LOAD
  rows+=("$1|$2|$3|$4|$5|$6|$7")
}

for n in "${SIZES[@]}"; do
  runs=$(runs_for "$n")
  in="$WORK/in-$n"
  bench_exceptions "$in" "$n"

  # signing, key: mansign once for the directory, kubectl-sigstore once per file
  l=$(load)
  m=$(measure "$runs" "$MANSIGN" sign -f "$in/" -o "$WORK/key-$n/" --key "$KEY")
  p=$(measure "$runs" "$WORK/ks-sign" "$in" "$WORK/ks-key-$n")
  row "sign, key" "$n" "mansign sign -f dir/ --key" "kubectl-sigstore sign, per file" "$m" "$p" "$l"

  # signing, keyless on the stack (mansign only; kubectl-sigstore signs keylessly only on the
  # public instance: peers_kubectl_sigstore::kubectl_sigstore_keyless_signing_goes_to_the_public_instance_only)
  l=$(load)
  m=$(measure "$runs" "$MANSIGN" sign -f "$in/" -o "$WORK/kl-$n/" "${keyless[@]}")
  row "sign, keyless" "$n" "mansign sign -f dir/, keyless" "– (public instance only)" "$m" "" "$l"

  # verify, key
  "$MANSIGN" verify -f "$WORK/key-$n/" --key "$PUB" >/dev/null
  "$MANSIGN" verify -f "$WORK/ks-key-$n/" --key "$PUB" >/dev/null
  "$WORK/each-file" "$WORK/key-$n" "${peer_env[@]}" "$KS" verify -k "$PUB" -f
  l=$(load)
  m=$(measure "$runs" "$MANSIGN" verify -f "$WORK/key-$n/" --key "$PUB")
  p=$(measure "$runs" "$WORK/each-file" "$WORK/key-$n" "${peer_env[@]}" "$KS" verify -k "$PUB" -f)
  row "verify, key" "$n" "mansign verify -f dir/ --key" "kubectl-sigstore verify, per file" "$m" "$p" "$l"
  kyverno_passes_all "$WORK/kyverno-key.yaml" "$WORK/key-$n/" "$n"
  "$MANSIGN" verify --policy "$WORK/kyverno-key.yaml" -f "$WORK/key-$n/" >/dev/null
  l=$(load)
  m=$(measure "$runs" "$MANSIGN" verify --policy "$WORK/kyverno-key.yaml" -f "$WORK/key-$n/")
  p=$(measure "$runs" "${peer_env[@]}" "$KYVERNO" apply "$WORK/kyverno-key.yaml" --resource "$WORK/key-$n/")
  row "verify, key policy" "$n" "mansign verify --policy (Kyverno's policy)" "kubectl-kyverno apply" "$m" "$p" "$l"

  # verify, keyless
  "$MANSIGN" verify -f "$WORK/kl-$n/" "${identity[@]}" >/dev/null
  ks_keyless=("$WORK/each-file" "$WORK/kl-$n" "${peer_env[@]}" "$KS" verify --rekor-url "$SIGSTORE_REKOR_URL"
              --oidc-issuer "$SIGSTORE_OIDC_ISSUER" -f)
  "${ks_keyless[@]}"
  l=$(load)
  m=$(measure "$runs" "$MANSIGN" verify -f "$WORK/kl-$n/" "${identity[@]}")
  p=$(measure "$runs" "${ks_keyless[@]}")
  row "verify, keyless" "$n" "mansign verify -f dir/, identity" "kubectl-sigstore verify, per file" "$m" "$p" "$l"
  kyverno_passes_all "$WORK/kyverno-keyless.yaml" "$WORK/kl-$n/" "$n"
  mk=("$MANSIGN" verify --policy "$WORK/kyverno-keyless.yaml" --trusted-root "$SIGSTORE_TRUSTED_ROOT" -f "$WORK/kl-$n/")
  "${mk[@]}" >/dev/null
  l=$(load)
  m=$(measure "$runs" "${mk[@]}")
  p=$(measure "$runs" "${peer_env[@]}" "$KYVERNO" apply "$WORK/kyverno-keyless.yaml" --resource "$WORK/kl-$n/")
  row "verify, keyless policy" "$n" "mansign verify --policy (Kyverno's policy)" "kubectl-kyverno apply" "$m" "$p" "$l"
done

echo "Machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB; $(date -u +%F); mansign $("$MANSIGN" --version | awk '{print $2}'); peers from scripts/peers.sh (kubectl-sigstore $(basename "$(dirname "$(dirname "$KS")")"))."
echo "Medians of 11 runs (1 file), 3 (100 files), 1 (more); CPU is user + system of the whole process tree; RSS the largest process."
echo
python3 - "${rows[@]}" <<'PY'
import sys
print("| work | files | mansign | wall | CPU | peak RSS | peer | wall | CPU | peak RSS | wall ratio | CPU ratio | ≥ 20× less CPU | load |")
print("|---|---:|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---|---:|")
def ms(x):
    x = float(x)
    return f"{x / 1000:.2f} s" if x >= 10000 else f"{x:.0f} ms"
for r in sys.argv[1:]:
    work, n, mlabel, plabel, m, p, load = r.split("|")
    mw, mc, mr = m.split()
    if p:
        pw, pc, pr = p.split()
        wr, cr = float(pw) / float(mw), float(pc) / max(float(mc), 1)
        verdict = "met" if cr >= 20 else "**missed**"
        peer = f"| {plabel} | {ms(pw)} | {ms(pc)} | {pr} MiB | {wr:.0f}× | {cr:.0f}× | {verdict} "
    else:
        peer = f"| {plabel} | | | | | | "
    print(f"| {work} | {int(n):,} | {mlabel} | {ms(mw)} | {ms(mc)} | {mr} MiB {peer}| {load} |")
PY
